/* policy.h: the pluggable policy interface. A policy is a const struct of
 * hooks, one file per policy, registered in policies/policy_table.c. The
 * engine (serve/) owns the mechanisms (ledger updates, transfers,
 * preemption, the staging area) and asks the policy at each decision
 * point; a NULL hook means "the static-partitioning default" (leap_ok:
 * never leap). The engine
 * allocates state_size bytes of zeroed state for the policy and passes it
 * to every hook, with a context (struct ema_policy_ctx): read-only views of
 * the ledger, the tenants, the hardware, the model and the knobs, and the
 * mechanism calls below (the ema_policy_* wrappers of the engine's table,
 * ctx->mech). A policy sees nothing else of the engine: this header
 * includes only base/, and libema_policies.a links with libema_base.a
 * alone.
 *
 * Worked example, a policy with two knobs of its own that borrows from
 * the GPU with the most free pages, at most `max_pages` pages per tenant,
 * preempts borrowers when a lender needs its pages back, and otherwise
 * behaves like static (tests/example_policy.c is this code, compiled and
 * run by tests/test_example_policy.c):
 *
 *     struct greedy_knobs {
 *             int max_pages;
 *             double spare;
 *     };
 *     static const struct greedy_knobs greedy_defaults = { 1000, 0.1 };
 *     static const struct ema_config_key greedy_keys[] = {
 *             EMA_KNOB_INT(struct greedy_knobs, max_pages, 0, 1e9,
 *                          "pages a tenant may borrow (greedy)"),
 *             EMA_KNOB_DBL(struct greedy_knobs, spare, 0, 1,
 *                          "share of its KV capacity a lender keeps free (greedy)"),
 *             EMA_KNOB_END
 *     };
 *
 *     static int greedy_choose_lender(const struct ema_policy_ctx *c, void *state, int tenant)
 *     {
 *             const struct greedy_knobs *k = c->own_knobs;
 *             int best = -1;
 *
 *             if (ema_ledger_borrowed_pages(c->ledger, tenant) >= k->max_pages)
 *                     return -1;
 *             for (int g = 0; g < c->n_gpus; g++)
 *                     if (g != c->tenant_gpu[tenant] &&
 *                         (best < 0 || ema_ledger_free_pages(c->ledger, g) >
 *                                      ema_ledger_free_pages(c->ledger, best)))
 *                             best = g;
 *             return best >= 0 && ema_ledger_free_pages(c->ledger, best) >
 *                                 k->spare * c->kv_capacity_pages[tenant] ? best : -1;
 *     }
 *
 *     // A lender that needs its pages back preempts the newest borrowers.
 *     static int32_t greedy_reclaim(const struct ema_policy_ctx *c, void *state, int gpu, int32_t need)
 *     {
 *             struct ema_request *const *victims;
 *             int n = ema_policy_borrowers_on(c, gpu, &victims);
 *             int32_t freed = 0;
 *
 *             for (int i = 0; i < n && freed < need; i++) {
 *                     freed += ema_request_pages_on(victims[i], gpu);
 *                     ema_policy_preempt_recompute(c, victims[i]);
 *             }
 *             return freed;
 *     }
 *
 *     const struct ema_policy_ops ema_policy_greedy = {
 *             .name = "greedy",
 *             .summary = "borrow from the freest GPU",
 *             .knobs = greedy_keys,
 *             .knobs_size = sizeof(struct greedy_knobs),
 *             .knob_defaults = &greedy_defaults,
 *             .choose_lender = greedy_choose_lender,
 *             .reclaim = greedy_reclaim,
 *     };
 *
 * and one line in policy_table.c: its knobs are then `policy.greedy.max_pages`
 * and `policy.greedy.spare` in scenarios, `--set` and config.json. */
#ifndef EMA_POLICY_H
#define EMA_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ema_error.h"
#include "ema_limits.h"
#include "hardware.h"
#include "keys.h"
#include "knobs.h"
#include "ledger.h"
#include "platform.h"
#include "step_cost.h"

enum ema_preempt_mode { EMA_PREEMPT_RECOMPUTE = 0, EMA_PREEMPT_SWAP };

/* A request of the engine: policies pass it back to mechanisms and read
 * it through the two calls below. */
struct ema_request;

/* What a policy may read of a request: the engine's struct ema_request
 * begins with it (its first member, so that a pointer to the request is
 * one to its view), kept current by the engine; read through
 * ema_request_tenant and ema_request_pages_on. */
struct ema_request_view {
	int16_t tenant;
	int32_t pages_on[EMA_MAX_GPUS]; /* pages by GPU (host pages not counted) */
};

struct ema_policy_ctx;

/* The mechanisms a policy acts through, carried out by the engine that
 * calls its hooks (serve/engine.c gives its table in ctx->mech; a test can
 * give its own). Each gets the context of the hook that calls it, whose
 * `engine` is the engine's own. Policies call them through the
 * ema_policy_* wrappers below, which say what each does: a policy
 * references no symbol of serve/ (libema_policies.a links with
 * libema_base.a alone; tests/test_policies_alone.c checks it). */
struct ema_policy_mech {
	int64_t (*now)(const struct ema_policy_ctx *c);
	void (*preempt_recompute)(const struct ema_policy_ctx *c, struct ema_request *r);
	bool (*demote)(const struct ema_policy_ctx *c, struct ema_request *r);
	int32_t (*move_home)(const struct ema_policy_ctx *c, struct ema_request *r, int lender);
	int32_t (*pool_reclaim)(const struct ema_policy_ctx *c, int gpu, int32_t need);
	int (*borrowers_on)(const struct ema_policy_ctx *c, int gpu, struct ema_request *const **out);
	int32_t (*queue_need)(const struct ema_policy_ctx *c, int tenant);
	int64_t (*queue_waited_ns)(const struct ema_policy_ctx *c, int tenant);
	void (*record_reclaim)(const struct ema_policy_ctx *c, int gpu, int32_t pages,
			       int64_t start_ns, int64_t latency_ns);
	void (*staging_reserve)(const struct ema_policy_ctx *c, int tenant, int32_t reserve);
	int32_t (*staging_fill)(const struct ema_policy_ctx *c, int tenant, int32_t want);
	void (*staging_release)(const struct ema_policy_ctx *c, int tenant);
	int32_t (*staging_held)(const struct ema_policy_ctx *c, int tenant);
	const int32_t *(*staging_pages)(const struct ema_policy_ctx *c, int tenant);
};

/* What every hook is given. The views are the engine's, current at each
 * call; a policy reads them and changes the world only through the
 * mechanism calls. */
struct ema_policy_ctx {
	const struct ema_ledger *ledger;
	const struct ema_hw_profile *hw;
	const struct ema_model *model;
	const struct ema_policy_cfg *knobs;   /* policy.* keys of the shipped policies */
	const void *own_knobs;                /* this policy's own table (ops.knobs), or NULL */
	int n_tenants;
	int n_gpus;
	int layer_groups;                     /* serving.layer_groups */
	uint64_t page_bytes;
	bool inplace_beside_local;            /* the platform's: in-place reads overlap local ones */
	bool remote_attention;                /* the platform's: a lender can compute a borrower's attention */
	bool attention_beside_staged;         /* the platform's: one step may compute on one lender, stage from another */
	int tenant_gpu[EMA_MAX_TENANTS];
	int32_t kv_capacity_pages[EMA_MAX_TENANTS]; /* KV pages of each tenant's own GPU */
	/* The mechanisms' table and their owner (opaque here): not for
	 * policies, which call the ema_policy_* wrappers below. */
	const struct ema_policy_mech *mech;
	struct ema_engine *engine;
};

/* ---- reading requests ------------------------------------------------- */
static inline int ema_request_tenant(const struct ema_request *r)
{
	return ((const struct ema_request_view *)(const void *)r)->tenant;
}

/* Pages of r on GPU `gpu` (0 .. n_gpus - 1; host pages are not counted). */
static inline int32_t ema_request_pages_on(const struct ema_request *r, int gpu)
{
	return gpu >= 0 && gpu < EMA_MAX_GPUS ?
	       ((const struct ema_request_view *)(const void *)r)->pages_on[gpu] : 0;
}

/* ---- mechanisms (the engine carries them out: ctx->mech) --------------- */
static inline int64_t ema_policy_now(const struct ema_policy_ctx *c)
{
	return c->mech->now(c);
}

/* Preempts r by recomputation: its pages are freed now and it goes back
 * to the front of its tenant's waiting queue. */
static inline void ema_policy_preempt_recompute(const struct ema_policy_ctx *c, struct ema_request *r)
{
	c->mech->preempt_recompute(c, r);
}

/* Moves r's KV to host memory on behalf of a lender's reclaim (counted
 * as a demotion); false when host memory is full or r is pinned. */
static inline bool ema_policy_demote(const struct ema_policy_ctx *c, struct ema_request *r)
{
	return c->mech->demote(c, r);
}

/* Moves the pages r holds on `lender` back to its tenant's GPU (which
 * must have that many free pages); asynchronous: r is pinned until the
 * data has arrived. Returns the pages moved. */
static inline int32_t ema_policy_move_home(const struct ema_policy_ctx *c, struct ema_request *r,
					   int lender)
{
	return c->mech->move_home(c, r, lender);
}

/* For the pooled bound only (policies/pooled.c), not a mechanism a real
 * server has: frees `need` of gpu's lent pages at once and at no cost,
 * moving borrowers' pages to free pages elsewhere (newest request first,
 * whole requests, its own GPU first, then the freest) and, where the rest
 * of the server has no room, preempting the newest borrower (recompute),
 * even one a step in flight reads. Returns the pages freed. */
static inline int32_t ema_policy_pool_reclaim(const struct ema_policy_ctx *c, int gpu, int32_t need)
{
	return c->mech->pool_reclaim(c, gpu, need);
}

/* Requests of other tenants holding pages on `gpu` that can be taken now,
 * newest admission first, in *out (the engine's array, valid until the
 * next call); returns the count. Not listed: requests whose pages move,
 * and requests a step in flight reads (their lender waits for that step:
 * the engine asks the policy to reclaim again when it ends). */
static inline int ema_policy_borrowers_on(const struct ema_policy_ctx *c, int gpu,
					  struct ema_request *const **out)
{
	return c->mech->borrowers_on(c, gpu, out);
}

/* The pages the next request of `tenant` to start asks its GPU for, as
 * the engine asks them: a swapped-out request first (they come back
 * before admissions), else the front of its waiting queue; its whole
 * sequence, plus serving.watermark x its KV capacity unless nothing of
 * the tenant runs. 0: nothing of the tenant waits, or nothing of it
 * runs, moves or waits for a reclaim (its queue then waits for memory
 * only other tenants can free: the engine starts what its own can). */
static inline int32_t ema_policy_queue_need(const struct ema_policy_ctx *c, int tenant)
{
	return c->mech->queue_need(c, tenant);
}

/* The last run time at which a try to start requests of `tenant` (at a
 * step's end, mostly) left one queued whose queue_need its GPU could
 * hold, or -1 for never: a request that arrives during a step and starts
 * at its end is not counted. */
static inline int64_t ema_policy_queue_waited_ns(const struct ema_policy_ctx *c, int tenant)
{
	return c->mech->queue_waited_ns(c, tenant);
}

/* Records a reclaim (for the latency figures). */
static inline void ema_policy_record_reclaim(const struct ema_policy_ctx *c, int gpu, int32_t pages,
					     int64_t start_ns, int64_t latency_ns)
{
	c->mech->record_reclaim(c, gpu, pages, start_ns, latency_ns);
}

/* The staging area, local pages of a tenant that prefetches copy remote
 * KV into. The engine keeps `reserve` own pages free for it when it
 * allocates KV (and dips into them only while the tenant borrows nothing),
 * grows the area on demand and frees it when asked. */
static inline void ema_policy_staging_reserve(const struct ema_policy_ctx *c, int tenant,
					      int32_t reserve)
{
	c->mech->staging_reserve(c, tenant, reserve);
}

/* Grows the tenant's area towards `want` pages (no further than free
 * pages allow); returns the pages it holds. */
static inline int32_t ema_policy_staging_fill(const struct ema_policy_ctx *c, int tenant, int32_t want)
{
	return c->mech->staging_fill(c, tenant, want);
}

static inline void ema_policy_staging_release(const struct ema_policy_ctx *c, int tenant)
{
	c->mech->staging_release(c, tenant);
}

static inline int32_t ema_policy_staging_held(const struct ema_policy_ctx *c, int tenant)
{
	return c->mech->staging_held(c, tenant);
}

/* The pages it holds (any order), for struct ema_iteration. */
static inline const int32_t *ema_policy_staging_pages(const struct ema_policy_ctx *c, int tenant)
{
	return c->mech->staging_pages(c, tenant);
}

/* ---- the hooks ---------------------------------------------------------- */

/* The free pages a tenant's GPU may have while the tenant leaps
 * (leap_ok below): the engine ends a leap before they would leave
 * [free_min, free_max]. */
struct ema_leap_range {
	int32_t free_min;
	int32_t free_max;
	/* (comes false) plan_each: the engine also calls plan_iteration
	 * for every step after the first, at that step's start time, with
	 * its own figures (its FLOPs may be an upper bound, flops_bound set,
	 * only where the step is memory-bound with it), as it plays the
	 * steps back: before any event of another tenant after that start,
	 * and at the leap's end (for a policy that notes every step). */
	bool plan_each;
	/* (in) waiting: requests of the tenant wait for memory. A policy
	 * with borrowable leaps such a tenant only where it sets waiting_ok
	 * (out), its promise that borrowable would answer 0 for the tenant
	 * for as long as leap_holds holds: the engine then admits the front
	 * of the queue from the tenant's own pages alone, as it does for a
	 * policy without borrowable, and ends the leap at the step whose end
	 * frees enough of them. (in) others_wait: another tenant leaps on
	 * such a promise; its pages must not become lendable mid-leap, where
	 * no event would tell the policy (a leap's range keeps it so). */
	bool waiting, waiting_ok, others_wait;
};

struct ema_policy_ops {
	const char *name;     /* snake_case, as named in configs */
	const char *summary;  /* one line for `ema list policies` */
	size_t state_size;

	/* Knobs of the policy's own, beyond struct ema_policy_cfg: a key
	 * table (keys.h) over a struct of knobs_size bytes whose defaults
	 * are knob_defaults. Parsed under `policy.`, written to config.json
	 * after the shared knobs, given to hooks as ctx->own_knobs. NULL:
	 * none. */
	const struct ema_config_key *knobs;
	size_t knobs_size;
	const void *knob_defaults;

	/* double memory_factor(const struct ema_policy_cfg *knobs)
	 * Multiplier of every GPU's memory for this policy (ideal: 2x).
	 * NULL: 1. */
	double (*memory_factor)(const struct ema_policy_cfg *knobs);

	/* double kv_memory_factor(const struct ema_policy_cfg *knobs)
	 * Multiplier of every GPU's KV memory, what its tenant's weights
	 * leave (ideal_kv: 2x the KV, the weights as they are), applied
	 * after memory_factor. NULL: 1. */
	double (*kv_memory_factor)(const struct ema_policy_cfg *knobs);

	/* int init(const struct ema_policy_ctx *c, void *state, struct ema_error *err)
	 * Called once after the engine is built. NULL: nothing. */
	int (*init)(const struct ema_policy_ctx *c, void *state, struct ema_error *err);

	/* void fini(const struct ema_policy_ctx *c, void *state)
	 * Frees what the hooks allocated in the state (the state itself is
	 * the engine's). Called once when the engine goes, for every engine
	 * whose init was called (or that has no init), even one whose init
	 * failed: the state may be partly set (it starts zeroed). NULL:
	 * nothing. */
	void (*fini)(const struct ema_policy_ctx *c, void *state);

	/* int32_t borrowable(const struct ema_policy_ctx *c, void *state, int tenant)
	 * Pages `tenant` could still borrow right now; the engine uses it to
	 * decide whether a waiting request can be admitted. NULL: 0. */
	int32_t (*borrowable)(const struct ema_policy_ctx *c, void *state, int tenant);

	/* bool borrowable_below(const struct ema_policy_ctx *c, void *state, int tenant,
	 *                       int32_t want)
	 * Optional, a shortcut: true only if borrowable() would now return
	 * fewer than `want` pages (false where unsure). Where the engine only
	 * compares borrowable() with a threshold (an admission, a swap-in) it
	 * then asks borrowable() only if the tenant's own pages fall short,
	 * and this first, so that a tenant whose queue waits for memory at
	 * every step does not cost a whole borrowable() each time. Having it
	 * promises that neither it nor borrowable() changes any state (a
	 * memo aside) and that borrowable() is never negative. NULL:
	 * borrowable() is asked at every such decision. */
	bool (*borrowable_below)(const struct ema_policy_ctx *c, void *state, int tenant,
				 int32_t want);

	/* int32_t max_request_pages(const struct ema_policy_ctx *c, void *state, int tenant)
	 * The most KV pages one request of `tenant` can ever hold under this
	 * policy: its GPU's KV capacity plus what it could borrow were every
	 * peer idle. Called once after init; a request whose whole KV
	 * (prompt + output) needs more is dropped at arrival, with a reason,
	 * rather than waiting for memory that never comes. NULL: the
	 * tenant's KV capacity. */
	int32_t (*max_request_pages)(const struct ema_policy_ctx *c, void *state, int tenant);

	/* int32_t max_admit_pages(const struct ema_policy_ctx *c, void *state, int tenant)
	 * Optional: the most KV pages a request of `tenant` can be admitted
	 * with (the pages of its prompt), the tenant holding nothing else and
	 * every peer idle, where that is less than max_request_pages (what a
	 * request can grow to once running), for a policy whose budgets grow
	 * with what is borrowed while admission asks borrowable at what is
	 * borrowed now (ema's staged link budgets did, before its planner; no
	 * shipped policy sets this hook now). A request whose prompt needs
	 * more is dropped at arrival, counted as one that needs more than
	 * max_request_pages, rather than waiting at the front of its queue
	 * for ever. Called once after init. NULL: max_request_pages. */
	int32_t (*max_admit_pages)(const struct ema_policy_ctx *c, void *state, int tenant);

	/* int choose_lender(const struct ema_policy_ctx *c, void *state, int tenant)
	 * Tenant's own GPU is full: the GPU to borrow one page from, or -1.
	 * Must respect the lender's floor and reserve. NULL: never borrow. */
	int (*choose_lender)(const struct ema_policy_ctx *c, void *state, int tenant);

	/* enum ema_preempt_mode preempt_mode(const struct ema_policy_ctx *c, void *state,
	 *                                    const struct ema_request *r)
	 * How to preempt r when its tenant runs out of memory. NULL: recompute. */
	enum ema_preempt_mode (*preempt_mode)(const struct ema_policy_ctx *c, void *state,
					      const struct ema_request *r);

	/* int32_t reclaim(const struct ema_policy_ctx *c, void *state, int gpu, int32_t need)
	 * The tenant of `gpu` needs `need` of its pages and the GPU has none
	 * free but has lent some. Returns the pages freed at once (>= 0); pages
	 * whose data is still moving are not counted: the engine waits for the
	 * transfer and asks again. NULL: lenders never get pages back (only
	 * valid for policies that never lend). */
	int32_t (*reclaim)(const struct ema_policy_ctx *c, void *state, int gpu, int32_t need);

	/* void plan_iteration(const struct ema_policy_ctx *c, void *state, struct ema_iteration *it)
	 * The engine filled the batch's work and remote reads; the policy
	 * sets it->prefetch_depth, it->layer_groups, it->method and the
	 * staging pages. NULL: remote KV is read in place (prefetch_depth 0). */
	void (*plan_iteration)(const struct ema_policy_ctx *c, void *state, struct ema_iteration *it);

	/* void plan_leap(const struct ema_policy_ctx *c, void *state,
	 *                const struct ema_iteration *it, int n,
	 *                const struct ema_leap_step *steps, const int64_t *start_ns)
	 * Optional, for leap_ok's plan_each: plan_iteration of n leapt steps
	 * of it->tenant at once, in order, step i being `it` (nothing remote,
	 * its tenant, GPU and weights) with steps[i]'s figures, starting at
	 * start_ns[i]. The engine hands over the steps it plays back in one
	 * call, after their pages have come and gone: the hook may read
	 * nothing that a step changes (the ledger, the requests), only the
	 * steps and its own state, and sets nothing in `it`. NULL: the engine
	 * calls plan_iteration for each step, at its start. */
	void (*plan_leap)(const struct ema_policy_ctx *c, void *state, const struct ema_iteration *it,
			  int n, const struct ema_leap_step *steps, const int64_t *start_ns);

	/* void after_iteration(const struct ema_policy_ctx *c, void *state, int tenant)
	 * After each iteration of `tenant`: maintenance such as reclaiming
	 * ahead of need (pre-preemption). NULL: nothing. */
	void (*after_iteration)(const struct ema_policy_ctx *c, void *state, int tenant);

	/* bool leap_ok(const struct ema_policy_ctx *c, void *state, int tenant,
	 *              struct ema_leap_range *r)
	 * Decode leaping (doc/policies.md, "Leaping"). When `tenant`'s batch
	 * only decodes, from its own GPU's free pages, with nothing of it
	 * borrowed, moving or waiting (or with requests waiting that its own
	 * pages cannot admit before the leap's last step, where admission
	 * asks only them: a policy without borrowable, or one that sets
	 * r->waiting_ok), the engine may run its next steps as one event. Before every event of another tenant (an arrival, an
	 * iteration's or a transfer's end) it plays back the steps that ended
	 * before it (pages taken, pages of finished requests given back, with
	 * r->plan_each the steps' plans), so that every hook sees the ledger
	 * as stepping would show it; the leap's running requests keep their
	 * counters of its start until it ends (they hold no remote pages, so
	 * ema_policy_borrowers_on never lists them). The engine asks this
	 * before each leap; true promises that nothing the policy decides
	 * during the leap would differ had the engine stepped:
	 *  - nothing it decides for the tenant would differ while the
	 *    free pages of the tenant's GPU stay in [r->free_min,
	 *    r->free_max] (r comes as [0, INT32_MAX]): the engine ends the
	 *    leap before the tenant's own steps, or the pages other tenants
	 *    take from that GPU or give back, would leave the range (which
	 *    leap_holds may change as the server does). Transfers through
	 *    the GPU (others' reads of pages it lends) may start and end:
	 *    the platform times the steps at their rates, as stepping;
	 *  - for the tenant's steps after the first, plan_iteration would
	 *    set what it set for the first and change no state (or, with
	 *    r->plan_each, is called for each as above), and after_iteration
	 *    (for the tenant) after every step but the last would do nothing
	 *    (or leap_holds says when it would): the engine calls neither of
	 *    them there otherwise.
	 * false: no leap now. NULL: the policy never leaps (the engine steps
	 * every iteration; the outputs are the same, only slower). */
	bool (*leap_ok)(const struct ema_policy_ctx *c, void *state, int tenant,
			struct ema_leap_range *r);

	/* bool leap_holds(const struct ema_policy_ctx *c, void *state, int tenant,
	 *                 struct ema_leap_range *r)
	 * Asked after every event while `tenant` leaps, the ledger then as
	 * stepping would show it: false ends the leap at the step in
	 * progress, whose end is then a real iteration end (after_iteration
	 * called, the next step planned as stepping would). For leap_ok's
	 * promises that hold only while the rest of the server stays as it is
	 * (ema: while no lender is under its headroom, where after_iteration
	 * would reclaim). True comes with the range of free pages of the
	 * tenant's GPU it allows from now on (r comes as [0, INT32_MAX]): the
	 * engine ends the leap at the step in progress where its plan, moved
	 * by the pages others took or gave back, would leave it. It must be
	 * true when leap_ok is, and read nothing that changes in a leap but
	 * the ledger. NULL: the leap holds, in leap_ok's range. */
	bool (*leap_holds)(const struct ema_policy_ctx *c, void *state, int tenant,
			   struct ema_leap_range *r);

	/* int64_t stalled(const struct ema_policy_ctx *c, void *state, int tenant)
	 * Nothing is pending (no iteration, transfer or arrival) and
	 * `tenant` still has requests it cannot run: no event will ever ask
	 * the policy again. It may give back what it holds for the tenant
	 * that nothing running needs (through the mechanism calls), and
	 * returns the earliest run time (ns, >= now) at which its answers for
	 * the tenant could differ with time alone (a decayed figure), or now
	 * where what it gave back may already let the tenant on, or -1 for
	 * neither. The engine kicks every tenant at the earliest time it is
	 * given, and stops with "no progress possible" where there is none
	 * or a kick changes nothing. Never called in a run that goes on by
	 * itself, so it changes no run that finishes without it. NULL:
	 * -1. */
	int64_t (*stalled)(const struct ema_policy_ctx *c, void *state, int tenant);
};

/* The registry: every policy, in `ema list policies` order. */
extern const struct ema_policy_ops *const ema_policy_table[];
const struct ema_policy_ops *ema_policy_find(const char *name);
/* Their names, NULL-terminated (for the configuration's checks). */
const char *const *ema_policy_names(void);

#endif
