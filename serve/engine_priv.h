/* engine_priv.h: the engine's state, private to serve/ (and to the tests
 * that check it by hand): requests, tenants with their queues and the
 * staging area, the ledger, and the mechanisms the policy context's calls
 * carry out. */
#ifndef EMA_ENGINE_PRIV_H
#define EMA_ENGINE_PRIV_H

#include "engine.h"
#include "gpuset.h"
#include "ledger.h"
#include "work.h"

enum ema_req_state {
	EMA_REQ_FUTURE = 0,   /* not arrived yet */
	EMA_REQ_WAITING,      /* queued, no KV */
	EMA_REQ_RUNNING,      /* admitted, KV in pages */
	EMA_REQ_SWAPPED,      /* KV in host memory (or moving there/back) */
	EMA_REQ_DONE,
	EMA_REQ_DROPPED       /* rejected at arrival: needs more KV than it can ever get */
};

/* (struct ema_kv_page, where one KV page of a request lives: ledger.h) */

struct ema_request {
	/* what policies read (policy.h): view.tenant, view.pages_on[] */
	struct ema_request_view view;
	int32_t id;
	int8_t state;
	int8_t pinned;        /* pages moving: not scheduled, not a victim */
	int64_t arrival_ns;
	int64_t first_token_ns;  /* -1 until the first token */
	int64_t finish_ns;       /* -1 until done */
	int32_t prompt_tokens;
	int32_t output_tokens;
	int32_t generated;    /* output tokens produced */
	int32_t computed;     /* tokens whose KV is in the cache */
	int32_t preemptions;
	int32_t n_pages;
	int32_t cap_pages;
	struct ema_kv_page *pages;
	int32_t n_remote;     /* pages on a GPU other than the tenant's */
	struct ema_gpuset on_mask; /* g in it: view.pages_on[g] > 0 (batch_add visits only those) */
	int64_t admit_seq;    /* admission order: the newest is preempted first */
	int64_t recomputed_tokens;
	int32_t pending_xfers;/* transfers in flight for this request */
	int8_t free_on_unpin; /* finished while its pages moved: free after */
	int8_t in_iter;       /* in the batch its tenant is building or running */
	/* Its n_pages pages are all KV pages of its tenant's GPU held by
	 * count (ema_ledger_alloc_counted), with no records in pages[]
	 * until something needs their numbers (req_number). */
	int8_t counted;
	/* Taken back by lenders (a reclaim preempted or demoted it) at
	 * least serving.reclaim_backoff times: it runs on its own GPU's pages
	 * only from then on (engine.c, "reclaim backoff"). */
	int8_t own_only;
	int32_t reclaimed;    /* times a reclaim preempted or demoted it */
	/* Tokens its pages hold (whole blocks), computed for cap_tok_pages
	 * pages: growing is a comparison until the next page is due. */
	int32_t cap_tok_pages;
	int64_t cap_tok;
};

/* Per-tenant counters that end up in summary.csv. */
struct ema_tenant {
	int index;
	int gpu;
	const struct ema_tenant_cfg *cfg;
	/* All requests, arrival order: a mapping of n_reqs slots whose
	 * memory is touched only as they arrive (ema_req_init, from spec)
	 * and, with a record sink (ema_engine_stream_records), given back to
	 * the system once a prefix of them is final and handed over, so that
	 * the engine's memory follows the requests in flight, not the
	 * trace's length. */
	struct ema_request *reqs;
	size_t reqs_bytes;            /* the mapping's length */
	const struct ema_request_spec *spec; /* the workload's (outlives the engine's run) */
	int32_t n_reqs;
	int32_t handed;               /* records handed to the sink: 0 .. handed - 1 */
	int32_t released;             /* state freed: 0 .. released - 1 (done or dropped) */
	int32_t released_done, released_dropped;
	uintptr_t advised;            /* the mapping's pages below this are given back */
	int32_t max_batch;            /* serving.max_batch + 1 */
	int32_t queue_cap;            /* running and swapped hold that many, the batch + max_batch */
	int32_t next_arrival;
	int32_t n_done;
	/* requests 0 .. final_n - 1 are done or dropped: nothing of them
	 * that a record reports changes any more (final_pub: the same, an
	 * atomic for other threads, ema_engine_requests_final) */
	int32_t final_n, final_pub;
	int64_t tokens_seen;          /* stats.generated_tokens at its last iteration's end */
	/* queues hold request indices */
	int32_t *waiting; int32_t waiting_head, waiting_n, waiting_cap; /* ring */
	int32_t *running; int32_t running_n;
	int32_t *swapped; int32_t swapped_n;
	bool busy;                    /* an iteration is in flight */
	bool kick_pending;            /* a schedule timer is armed */
	int64_t reclaim_wait_since;   /* >= 0 while waiting for reclaimed pages */
	/* the last run time a step's end (or any try to start) left a request
	 * queued that its GPU could hold (queue_need), or -1: what
	 * ema_policy_queue_waited_ns reports (ema's queue guard held its
	 * lending by it until the planner; no shipped policy reads it now) */
	int64_t queue_left_ns;
	int32_t kv_capacity_pages;    /* KV pages of its own GPU */
	int32_t max_request_pages;    /* most KV one request can ever hold (policy) */
	int32_t max_admit_pages;      /* ... and be admitted with, its prompt's (policy) */
	/* the staging area (an engine mechanism the policy sizes) */
	int32_t *staging; int32_t staging_pages, cap_staging;
	int32_t local_reserve;        /* own free pages kept for staging: borrow before using them */
	int64_t last_account_ns;
	int32_t kv_pages;             /* KV pages held, all GPUs */
	int32_t xfers_in_flight;      /* transfers of its requests in flight */
	int32_t *iter_batch; int32_t iter_n;     /* requests of the iteration in flight */
	int32_t *iter_chunk;                     /* tokens each computes (0 = decode) */
	/* The iteration's work, summed as requests join the batch (in batch
	 * order, so that its doubles are those of a walk over the batch). */
	struct ema_work_sum iter_work;
	uint64_t iter_kv_local;                  /* KV read from its own GPU */
	struct ema_gpuset iter_rem_mask;         /* peers it reads KV from or writes KV to */
	uint64_t iter_rem_bytes[EMA_MAX_GPUS];   /* KV read from each peer */
	uint64_t iter_rem_write[EMA_MAX_GPUS];   /* new tokens' KV written into each peer */
	int64_t iter_rem_tokens[EMA_MAX_GPUS];   /* new tokens of the requests holding pages there */
	int32_t iter_rem_pages[EMA_MAX_GPUS];
	int32_t *local_buf; int32_t *remote_buf[EMA_MAX_GPUS]; int32_t page_buf_cap;
	/* Decode leaping (engine.c, "leaps"): the platform runs leap_k
	 * iterations of this batch as one event; leap_end[j] is the end of
	 * the j-th (leap_end[0] its start). */
	bool leaping;
	/* its leap began with requests waiting, on the policy's promise that
	 * borrowable stays 0 (ema_leap_range.waiting_ok) */
	bool leap_waiting;
	int32_t leap_k;
	int64_t *leap_end; int32_t cap_leap;  /* (shared with the platform while it leaps) */
	/* the free pages of its GPU the plan counted on after each step's
	 * end (leap_pf[0]: at the start): what pages others take or give
	 * back mid-leap must leave room for (check_leaps) */
	int32_t *leap_pf;
	/* leap_pf[j .. leap_k - 1]'s least and greatest values, and least of
	 * those at or above the staging reserve the plan saw (leap_reserve;
	 * INT32_MAX for none), so that check_leaps tests the rest of a leap
	 * in O(1) (leap_pages_hold): three arrays of LEAP_MAX + 1 */
	int32_t *leap_pf_min, *leap_pf_max, *leap_pf_res;
	int32_t leap_reserve;
	bool leap_sfx;                           /* those three are this leap's */
	struct ema_leap_range leap_range;       /* the policy's, at the start */
	void *leap_scratch; int32_t cap_scratch;     /* planning a leap */
	struct leap_buckets *leap_buckets;          /* ... its steps' events */
	void *leap_ev[2]; int32_t leap_n_ev[2], cap_leap_ev[2]; /* what its steps do */
	/* the policy's leap_ok asked for plan_iteration at each step */
	bool leap_plan;
	/* each planned step's figures (struct ema_leap_step), for the
	 * platform's leap_times and the policy's plans */
	void *leap_work;
	/* the steps of the leap played back so far (leap_settle: every step
	 * that ended before another tenant's event), and where their
	 * finishes and growths stand in leap_ev */
	int32_t leap_played, leap_xf, leap_xg;
	struct ema_tenant_stats stats;
};

struct ema_engine {
	const struct ema_config *cfg;
	struct ema_platform *platform;
	const struct ema_policy_ops *policy;
	void *policy_state;
	const void *own_knobs;        /* the policy's own knobs, or NULL */
	struct ema_policy_ctx ctx;    /* what its hooks see */
	bool policy_ready;            /* init was called: fini is due */
	struct ema_request **victims; int cap_victims; /* borrowers_on's array */
	struct ema_ledger ledger;
	uint64_t page_bytes;
	uint64_t kv_bytes_per_token;
	uint64_t block_bytes;
	int64_t tokens_per_page;      /* when a page holds whole blocks; else 0 */
	uint64_t weight_bytes;
	uint64_t attention_exchange_per_token; /* remote attention: bytes a new token exchanges with a lender */
	struct ema_work_model work;   /* the cost model's constants */
	int32_t weight_pages;
	int n_tenants;
	struct ema_tenant tenants[EMA_MAX_TENANTS];
	int64_t admit_counter;
	int64_t xfers_in_flight;      /* transfers started, not yet done */
	struct xfer_ctx *xfers;       /* those not yet freed (engine.c's list) */
	int32_t host_free[EMA_MAX_GPUS];  /* host pages left for swap/demotion */
	int32_t *host_stack[EMA_MAX_GPUS];/* free host slots per tenant GPU */
	int32_t host_capacity;
	bool page_lists;              /* fill page numbers in iterations (hw needs them) */
	bool counted_pages;           /* requests hold home pages by count (not with page_lists) */
	/* results */
	struct ema_reclaim_record *reclaims; int32_t n_reclaims, cap_reclaims;
	/* Memory over time, on a grid of timeline_period_s, recorded only
	 * where a GPU's figures change (plus the grid point before each
	 * change, so that lines drawn through the rows stay flat across
	 * idle gaps): cost grows with work, not with simulated time. */
	struct ema_timeline_sample *timeline; int32_t n_timeline, cap_timeline;
	double timeline_period_s;
	int64_t timeline_next_k;      /* next grid point not yet looked at */
	int64_t timeline_last_k[EMA_MAX_GPUS];   /* grid point of each GPU's last row, -1: none */
	struct ema_timeline_sample timeline_last[EMA_MAX_GPUS];
	int64_t end_ns;
	int64_t total_requests;
	int64_t done_requests;
	int error;                    /* first error from a callback */
	struct ema_error err;
	struct ema_error op_err;      /* what the platform said of a failed op */
	ema_progress_fn progress_fn;  /* called after every iteration, or NULL */
	ema_record_fn record_fn;      /* final records go there, then their state is freed */
	void *record_arg;
	ema_timeline_fn timeline_fn;  /* timeline samples go there as they are recorded */
	void *timeline_arg;
	void *progress_arg;
	/* Decode leaping: on unless switched off or impossible (a policy
	 * hook that could see other tenants, a platform without leaps). */
	bool leap_on;
	/* an oversize request (whole KV more than its GPU's) has started:
	 * from then on a try to start looks for one to give way
	 * (engine.c, oversize_make_way); never under static */
	bool oversize_started;
	/* leapt steps' plans through the policy's plan_leap, where it has one
	 * (ema_engine_set_plan_leap) */
	bool plan_leap_on;
	/* reclaims that put a request on its own GPU's pages (INT32_MAX: never) */
	int32_t reclaim_backoff;
	int32_t *page_scratch; int32_t cap_page_scratch; /* pages taken or given at once */
	int n_leaping;                /* tenants in a leap */
	int n_leap_waiting;           /* ... of them with leap_waiting */
	uint64_t leap_lend_ops;       /* the ledger's lend_ops at the last check_leaps */
	/* the ledger's operation count and the leaps begun at the last
	 * check_leaps that asked leap_holds, which reads only the ledger */
	uint64_t leap_check_ops, leap_check_leaps;
	uint64_t leaps, leap_steps;   /* made so far, and the steps they ran */
	uint64_t remote_steps;        /* iterations started that read remote KV (none leap) */
	int64_t unstall_at;           /* a stalled run's kick is due then; -1: none (unstall) */
	/* the livelock watch (iteration_end): when a token was last made,
	 * and the preemptions since, the last of them */
	int64_t last_token_ns, preempts_since_token;
	const struct ema_request *last_preempted;
	bool replay;                  /* a leap's iterations are being played back: */
	int64_t vnow;                 /* ... the time it is for them */
};

/* ema_engine_new and ema_engine_free in place, for tests that keep an
 * engine on the stack. */
int ema_engine_create(struct ema_engine *e, const struct ema_config *cfg,
		      const struct ema_policy_ops *policy, struct ema_platform *platform,
		      const struct ema_workload *workloads, struct ema_error *err);

void ema_engine_destroy(struct ema_engine *e);

/* Pages needed to hold the KV of `tokens` tokens (whole blocks). */
int32_t ema_engine_pages_for_tokens(const struct ema_engine *e, int64_t tokens);

/* --- mechanisms (policies reach them through policies/policy.h) --- */

/* Preempts request r of its tenant by recomputation: its pages are freed
 * now and it goes back to the front of the waiting queue. */
void ema_engine_preempt_recompute(struct ema_engine *e, struct ema_request *r);
/* Preempts by swapping its KV to host memory; false when host memory is
 * full or the request is pinned (then the caller recomputes). */
bool ema_engine_preempt_swap(struct ema_engine *e, struct ema_request *r);
/* The same on behalf of a lender's reclaim (counted as a demotion). */
bool ema_engine_demote(struct ema_engine *e, struct ema_request *r);
/* Moves the pages request r holds on `lender` back to its tenant's GPU
 * (which must have that many free pages); asynchronous: the request is
 * pinned until the data has arrived. Returns the pages moved. */
int32_t ema_engine_move_home(struct ema_engine *e, struct ema_request *r, int lender);
/* The pooled bound's reclaim: borrowers' pages on `gpu` move at once,
 * with no transfer, to free pages elsewhere, newest request first, whole
 * requests; with no room left, the newest borrower is preempted, even in
 * a step; until `need` are freed. Returns the pages freed. */
int32_t ema_engine_pool_reclaim(struct ema_engine *e, int gpu, int32_t need);
/* Records a reclaim (for the latency figures). */
void ema_engine_record_reclaim(struct ema_engine *e, int gpu, int32_t pages,
			       int64_t start_ns, int64_t latency_ns);
int64_t ema_engine_now(struct ema_engine *e);

#endif
