/* platform.h: the one small interface under the serving model and the
 * policy core. It offers a clock, timers, iterations (GPU work of a batch)
 * and transfers (pages moved between GPUs or to the host). sim/ implements
 * it in simulated time with a cost model and a fluid link model; hw/
 * implements it on real GPUs in real time. Nothing above this header knows
 * which one runs. */
#ifndef EMA_PLATFORM_H
#define EMA_PLATFORM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ema_limits.h"
#include "hardware.h"
#include "ema_error.h"
#include "knobs.h"

#define EMA_HOST (-1) /* "gpu" index of host memory in transfers */

struct ema_platform;

/* Why pages move; platforms count bytes per purpose and link. */
enum ema_transfer_purpose {
	EMA_XFER_PREFETCH = 0, /* remote KV staged before use */
	EMA_XFER_RECLAIM,      /* lent pages moved back to their borrower */
	EMA_XFER_DEMOTE,       /* a borrower's request demoted to host memory by a reclaim */
	EMA_XFER_SWAP_OUT,     /* preempted request's KV to host */
	EMA_XFER_SWAP_IN,      /* and back */
	EMA_XFER_PURPOSES
};


/* A set of pages moved from one place to another in one operation.
 * Page numbers index the GPU's pool (page * page_bytes is the offset) or,
 * for EMA_HOST, the host pool (policy.host_gib per GPU, one numbering for
 * all: GPU g's tenant uses slots [g x slots per GPU, (g + 1) x ...)). Arrays are owned by the caller and
 * valid only during the call. */
struct ema_transfer {
	int src_gpu;                /* EMA_HOST for host memory */
	int dst_gpu;
	int n_pages;
	const int32_t *src_pages;
	const int32_t *dst_pages;
	uint64_t bytes;             /* usually n_pages * page_bytes */
	enum ema_transfer_purpose purpose;
	enum ema_copy_method method;
	/* integrity: content tag of each page, for the hw backend to check
	 * after the move; may be NULL. */
	const uint64_t *tags;
};

/* Remote KV of one iteration, on one lender: what it reads, and what it
 * writes there (its new tokens' K and V, where their pages are the
 * lender's: a prompt admitted onto borrowed pages, a decode token on a
 * borrowed page), which crosses the link the other way into the lender's
 * HBM. */
struct ema_remote_read {
	int gpu;                    /* lender holding the pages */
	int n_pages;
	const int32_t *pages;       /* pages on the lender */
	uint64_t bytes;             /* read */
	uint64_t write_bytes;       /* written */
	/* Remote attention (policy.ema.remote_path=compute): the lender runs
	 * the attention over these pages, layer by layer, and sends back
	 * partial outputs and log-sum-exps that the borrower combines with
	 * its own; bytes are then read by the lender from its own HBM, and
	 * only exchange_bytes cross the link (the engine fills them: the
	 * queries out and the partials back, for the batch's new tokens
	 * whose requests hold pages there). lender_busy: the lender runs a
	 * step of its own meanwhile (the kernel then keeps
	 * attention_busy_share of its rate): the policy's guess when it
	 * plans, the simulator's knowledge when it charges. */
	bool compute;
	bool lender_busy;
	uint64_t exchange_bytes;
};

/* The GPU work of one batch of one tenant: what a real step would compute
 * and read. The sim turns it into time with sim/timing.c; the hw backend
 * launches kernels that read these bytes and do these FLOPs. */
struct ema_iteration {
	int tenant;
	int gpu;
	int n_seqs;                 /* requests in the batch */
	int64_t prefill_tokens;
	int64_t decode_tokens;
	double flops;               /* linear layers + attention */
	double attention_flops;     /* the part quadratic in context */
	uint64_t weight_bytes;
	uint64_t kv_local_bytes;    /* KV read from local pages, and its new tokens' KV written there */
	uint64_t act_bytes;         /* activations written and read */
	int n_local_pages;
	const int32_t *local_pages; /* KV pages read locally (hw reads them) */
	/* Remote KV: with prefetch_depth > 0 it is staged into local memory
	 * layer group by group, depth groups ahead; with prefetch_depth == 0
	 * attention reads it in place over the link (remote_direct). */
	int layer_groups;
	int model_layers;           /* the model's layers (remote attention syncs once per layer) */
	int prefetch_depth;
	/* The pooled bound (policies/pooled.c): the remote KV costs what the
	 * same bytes cost read from local HBM (no link time, no lender HBM,
	 * no interference), as in a server whose memory is one pool. A
	 * simulator-only idealisation: the hw backend refuses it. */
	bool remote_as_local;
	int n_remote;
	struct ema_remote_read remote[EMA_MAX_GPUS];
	enum ema_copy_method method;
	/* Local pages the policy set aside for staging (any order, not
	 * necessarily contiguous), or NULL. */
	const int32_t *staging_pages;
	int n_staging_pages;
	/* Layer groups the copies may run ahead of the reads, decided by the
	 * core (ema_iteration_window_depth) from the staging pages given: a
	 * ring of n_staging_pages holds window_depth + 1 group slots; 0 means
	 * each group's copy waits for the previous group's reads. Platforms
	 * take it as it is. */
	int window_depth;
	/* For iteration_time only (never given to iteration()): flops is an
	 * upper bound of the FLOPs, not their sum, and attention_flops is
	 * not set. The platform answers only where the time is the same for
	 * all FLOPs up to that bound (a memory-bound step), else with
	 * EMA_ERR_UNSUPPORTED, and the caller sums them. */
	bool flops_bound;
};

/* A leapt step's figures (ema_platform_ops.leap_times): those of an
 * ema_iteration that change from one step of a leap to the next. */
struct ema_leap_step {
	int32_t n_seqs;          /* decodes, one token each */
	bool flops_bound;        /* flops is an upper bound (see above) */
	uint64_t act_bytes, kv_local_bytes;
	double flops, attention_flops;
};

/* How the platform times a leap's steps again when the transfers
 * through its GPU change (ema_platform_ops.leap). */
struct ema_leap_retime {
	const struct ema_iteration *it;      /* the first step's iteration */
	const struct ema_leap_step *steps;   /* steps[j]: step j's figures, j = 2 .. k */
	int64_t stop_ns;                     /* a step ending at or after it is the last */
	int64_t limit_ns;                    /* no step ends after it */
};

/* *it emptied: every field 0 or NULL but remote[], of which only the
 * first n_remote (now 0) count. Cheaper than clearing the whole struct
 * (remote[] is most of it), which the engine would do at every step. */
static inline void ema_iteration_clear(struct ema_iteration *it)
{
	memset(it, 0, offsetof(struct ema_iteration, remote));
	it->method = (enum ema_copy_method)0;
	it->staging_pages = NULL;
	it->n_staging_pages = 0;
	it->window_depth = 0;
	it->flops_bound = false;
}

/* The window depth for it->prefetch_depth and the staging pages given:
 * the ring holds ring / (one group's staged bytes) slots, where a group's
 * share of each page is cut on 16-byte boundaries (as the hw backend
 * copies it), and copies run at most slots - 1 groups ahead. With no
 * staging pages, the depth asked for. */
int ema_iteration_window_depth(const struct ema_iteration *it, uint64_t page_bytes);
/* Bytes [*off, *off + *len) of a page's n staged bytes that layer group
 * g of l copies: cut on 16-byte boundaries, the last group to the end. */
void ema_iteration_group_slice(uint64_t n, int g, int l, uint64_t *off, uint64_t *len);
/* Staged bytes per page of a remote read: its bytes over its pages,
 * at most a page, on 16 bytes (at least 16). */
uint64_t ema_iteration_staged_per_page(const struct ema_remote_read *rr, uint64_t page_bytes);

struct ema_iteration_result {
	int64_t start_ns;
	int64_t end_ns;
	int64_t stall_ns;           /* time compute waited for prefetched data */
	uint64_t remote_bytes;      /* bytes that crossed the link for it */
};

typedef void (*ema_timer_fn)(void *arg, int64_t now_ns);
typedef void (*ema_iteration_fn)(void *arg, const struct ema_iteration_result *r);
typedef void (*ema_transfer_fn)(void *arg, int64_t now_ns);

/* Per-link totals a platform keeps for the summary. */
struct ema_link_stats {
	uint64_t bytes[EMA_MAX_GPUS + 1][EMA_MAX_GPUS + 1]; /* [src+1][dst+1], host at 0 */
	uint64_t bytes_by_purpose[EMA_XFER_PURPOSES];
	/* Time steps waited past their own, all steps summed, for remote KV
	 * spread over them (in place, or the fast path of a prefetch) that
	 * contention had slowed: a step's time is set when it starts, at the
	 * links' rates then, and ends with its last byte (the simulator's; 0
	 * on hardware, whose steps just take what they take). */
	uint64_t spread_wait_ns;
};

struct ema_platform_ops {
	const char *name;                /* the backend's name ("sim", "hw") */
	/* In-place remote reads run on their own share of the SMs beside the
	 * local reads, so that the link adds bandwidth (what the cost model
	 * of base/step_cost.h assumes); false: they serialise with the local
	 * reads, and policies choosing by the model should stage instead. */
	bool inplace_beside_local;
	/* It runs remote attention (ema_remote_read.compute): a lender
	 * computes the attention over the pages it lent. false: policies
	 * must not ask for it. */
	bool remote_attention;
	/* A step may mix remote attention on one lender with staged
	 * copies from another. false: policies choosing by themselves
	 * (remote_path auto) leave the staged path out where they may
	 * compute. */
	bool attention_beside_staged;
	/* Current time in ns since the run began (simulated or real). */
	int64_t (*now)(struct ema_platform *p);
	/* Every op that can fail returns a status and fills err (which may
	 * be NULL) with what went wrong, in the backend's words. */
	/* Calls fn(arg, t) once, at time at_ns (>= now). */
	int (*timer)(struct ema_platform *p, int64_t at_ns, ema_timer_fn fn, void *arg,
		     struct ema_error *err);
	/* Starts one iteration on it->gpu; fn is called when it completes.
	 * One iteration per GPU at a time. */
	int (*iteration)(struct ema_platform *p, const struct ema_iteration *it,
			 ema_iteration_fn fn, void *arg, struct ema_error *err);
	/* Starts a transfer; fn is called when the bytes have arrived. */
	int (*transfer)(struct ema_platform *p, const struct ema_transfer *t,
			ema_transfer_fn fn, void *arg, struct ema_error *err);
	/* Dispatches completions in time order until nothing is pending, the
	 * horizon (0 = none) passes, or ema_platform_stop is called. */
	int (*run)(struct ema_platform *p, int64_t horizon_ns, struct ema_error *err);
	void (*stop)(struct ema_platform *p);
	/* Events (sim) or completions (hw) dispatched so far. */
	uint64_t (*events)(struct ema_platform *p);
	const struct ema_link_stats *(*link_stats)(struct ema_platform *p);
	/* Optional (NULL: nothing to do). The KV in these pages is now the
	 * content named by tags; a backend that checks data integrity writes
	 * it so that later moves of the pages can be verified. */
	int (*tag_pages)(struct ema_platform *p, int gpu, int n, const int32_t *pages,
			 const uint64_t *tags, struct ema_error *err);
	void (*destroy)(struct ema_platform *p);
	/* Optional (NULL: the core steps one iteration at a time): decode
	 * leaping, k iterations of one batch run as one event. A simulator
	 * offers it; its results must be those of k calls of iteration(),
	 * each made when the previous one ended.
	 * iteration_time: how long `it` would take if started now on its
	 * GPU, at the rates of the transfers through that GPU now, or
	 * EMA_ERR_UNSUPPORTED where the platform cannot tell without running
	 * it (remote KV) or without the exact FLOPs (it->flops_bound).
	 * leap: runs k >= 2 iterations on gpu back to back, the j-th ending
	 * at end[j] (end[0] = now; from iteration_time); fn is called once,
	 * at the end of the last, with its result (start end[k-1]). Where
	 * the transfers through the GPU change mid-leap, the iterations that
	 * start after the change take the new rates, as they would have
	 * stepping: the platform times them again from rt (step j is rt->it
	 * with rt->steps[j]'s figures, j >= 2) and writes their ends into
	 * end[], which stays shared with the caller until fn is called (it
	 * holds k + 2 entries). end[j] is final once the platform's clock
	 * has passed end[j - 1]; the entry after the last one timed is
	 * INT64_MAX. A step timed again that ends at or after rt->stop_ns
	 * becomes the last, and one that would end after rt->limit_ns, that
	 * takes no time, or whose time needs exact FLOPs ends the leap
	 * before it; so a leap may end before its k-th iteration.
	 * leap_times: iteration_time of n steps that would follow one
	 * another on it->gpu, step i being `it` with steps[i]'s figures (a
	 * batch of steps[i].n_seqs decodes): ns[i] its time. Returns how
	 * many steps from the first were timed: it stops at the first that
	 * iteration_time would refuse (so that the caller sums its FLOPs).
	 * One call for a leap's steps instead of one per step, which this
	 * makes cheap enough to cost every step of every leap.
	 * leap_cut: the leap on gpu now ends with its first iteration that
	 * ends after the event being dispatched (at or after now, in event
	 * order); returns how many iterations it has. */
	int (*iteration_time)(struct ema_platform *p, const struct ema_iteration *it,
			      int64_t *ns, struct ema_error *err);
	int (*leap_times)(struct ema_platform *p, const struct ema_iteration *it, int n,
			  const struct ema_leap_step *steps, int64_t *ns);
	int (*leap)(struct ema_platform *p, int gpu, int k, int64_t *end,
		    const struct ema_leap_retime *rt, ema_iteration_fn fn, void *arg,
		    struct ema_error *err);
	int (*leap_cut)(struct ema_platform *p, int gpu);
};

struct ema_platform {
	const struct ema_platform_ops *ops;
	const struct ema_platform_params *params; /* what it was built for */
};

/* What a platform is built for, computed once by the core from the
 * scenario and the policy (ema_engine_platform_params in serve/), the
 * same for every backend. */
struct ema_platform_params {
	int n_gpus;                          /* GPUs of the server (the profile's) */
	int gpus_used;                       /* 0 .. gpus_used - 1 hold a tenant or a pool */
	uint64_t page_bytes;
	uint64_t pool_pages[EMA_MAX_GPUS];   /* each GPU's pool: memory x the policy's factor */
	uint64_t host_pages_per_gpu;         /* host memory for swap and demotion, per GPU used */
	const struct ema_hw_profile *hw;
	const struct ema_model *model;
};

/* Options of a run that only some backends act on. */
struct ema_platform_opts {
	bool verify;                         /* hw: check every word of moved pages */
};

/* What one policy's run on a backend leaves for the backend to report
 * (struct ema_platform_backend's run_json and print), gathered by the core
 * before the platform is destroyed. */
struct ema_platform_report {
	const char *policy;
	bool verify;                          /* the run's opts.verify (--verify) */
	/* decode leaps the core made and the steps they ran (0 where the
	 * platform offers no leap op) */
	uint64_t leaps, leapt_steps;
	const struct ema_link_stats *links;   /* its link_stats (zero without) */
	uint64_t pages_checked, pages_corrupted; /* its integrity op's (0 without) */
};

/* A backend: what `--backend NAME` looks up in the program's table
 * (src/backends.c), and everything the core needs to know of it: the
 * core asks these fields and ops, never the backend's name. A backend is
 * a folder implementing the ops above plus this entry, and one line in
 * the table (doc/design.md, "Adding a backend"). */
struct ema_platform_backend {
	const char *name;                     /* --backend NAME */
	const char *summary;                  /* its line of `ema list backends` */
	/* Builds a platform for params. Returns EMA_ERR_UNSUPPORTED, with the
	 * reason, where the backend cannot run here (no CUDA build, no GPU). */
	int (*create)(struct ema_platform **out, const struct ema_platform_params *params,
		      const struct ema_platform_opts *opts, struct ema_error *err);
	/* The engine gives every iteration the numbers of the pages it reads
	 * and writes (local_pages, remote[].pages, the staging pages): a
	 * backend that moves real data needs them; one that only charges
	 * time does without, and the engine then keeps a request's own pages
	 * by count (faster; the same outputs). */
	bool page_lists;
	/* It acts on opts->verify (`--verify`: every word of every moved page
	 * checked); `ema run --verify` on a backend without it is refused. */
	bool verify;
	/* Optional (NULL: nothing said): what this machine offers of it, for
	 * `ema list backends` ("2 GPUs", "unavailable (why)"), into buf. */
	void (*here)(char *buf, size_t size);
	/* Optional (NULL: 0 and 0): after a run, before the platform is
	 * destroyed, the pages its integrity checks covered and those found
	 * corrupted (struct ema_platform_report). */
	void (*integrity)(struct ema_platform *p, uint64_t *checked, uint64_t *corrupted);
	/* Optional (NULL: none): its own fields of a policy's entry of
	 * run.json, written to f as `, "key": value` pairs (valid JSON: a
	 * string through ema_json_put_string). */
	void (*run_json)(FILE *f, const struct ema_platform_report *r);
	/* Optional (NULL: none): its lines under the summary table that
	 * `ema run` prints, called once per policy, in run order. */
	void (*print)(FILE *f, const struct ema_platform_report *r);
	/* Optional: its own figures for `ema bench --backend NAME`, printed
	 * on stdout and, unless csv is NULL, written there as CSV (header
	 * included). NULL: it has none (`ema bench` on the default backend
	 * measures the core itself). */
	int (*bench)(bool quick, FILE *csv, struct ema_error *err);
};

#endif
