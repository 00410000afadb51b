/* policy.h: the pluggable policy interface. A policy is a const struct of
 * hooks, one file per policy, registered in policies/policy_table.c. The
 * engine (serve/engine.c) owns the mechanisms (ledger updates, transfers,
 * preemption) and asks the policy at each decision point; a NULL hook means
 * "the static-partitioning default". The engine allocates state_size bytes
 * of zeroed state for the policy and passes it to every hook.
 *
 * Worked example, a policy that borrows from the GPU with the most free
 * pages and otherwise behaves like static:
 *
 *     static int greedy_choose_lender(struct ema_engine *e, void *state, int tenant)
 *     {
 *             int best = -1;
 *             for (int g = 0; g < e->ledger.n_gpus; g++)
 *                     if (g != e->tenants[tenant].gpu &&
 *                         (best < 0 || ema_ledger_free_pages(&e->ledger, g) >
 *                                      ema_ledger_free_pages(&e->ledger, best)))
 *                             best = g;
 *             return best >= 0 && ema_ledger_free_pages(&e->ledger, best) > 0 ? best : -1;
 *     }
 *     const struct ema_policy_ops ema_policy_greedy = {
 *             .name = "greedy", .summary = "borrow from the freest GPU",
 *             .choose_lender = greedy_choose_lender,
 *     };
 *
 * and one line in policy_table.c. */
#ifndef EMA_POLICY_H
#define EMA_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "engine.h"
#include "platform.h"

enum ema_preempt_mode { EMA_PREEMPT_RECOMPUTE = 0, EMA_PREEMPT_SWAP };

struct ema_policy_ops {
	const char *name;     /* snake_case, as named in configs */
	const char *summary;  /* one line for `ema list policies` */
	size_t state_size;

	/* double memory_factor(const struct ema_config *cfg)
	 * Multiplier of every GPU's memory for this policy (ideal: 2x).
	 * NULL: 1. */
	double (*memory_factor)(const struct ema_config *cfg);

	/* int init(struct ema_engine *e, void *state, struct ema_error *err)
	 * Called once after the engine is built. NULL: nothing. */
	int (*init)(struct ema_engine *e, void *state, struct ema_error *err);

	/* void fini(struct ema_engine *e, void *state)
	 * Frees what the hooks allocated in the state (the state itself is
	 * the engine's). Called once by ema_engine_destroy, before the state
	 * is freed, for every engine whose init was called, even one whose
	 * init failed: the state may be partly set (it starts zeroed). Not
	 * called for policies without state (state_size 0). NULL: nothing. */
	void (*fini)(struct ema_engine *e, void *state);

	/* int32_t borrowable(struct ema_engine *e, void *state, int tenant)
	 * Pages `tenant` could still borrow right now; the engine uses it to
	 * decide whether a waiting request can be admitted. NULL: 0. */
	int32_t (*borrowable)(struct ema_engine *e, void *state, int tenant);

	/* int choose_lender(struct ema_engine *e, void *state, int tenant)
	 * Tenant's own GPU is full: the GPU to borrow one page from, or -1.
	 * Must respect the lender's floor and reserve. NULL: never borrow. */
	int (*choose_lender)(struct ema_engine *e, void *state, int tenant);

	/* enum ema_preempt_mode preempt_mode(struct ema_engine *e, void *state,
	 *                                    const struct ema_request *r)
	 * How to preempt r when its tenant runs out of memory. NULL: recompute. */
	enum ema_preempt_mode (*preempt_mode)(struct ema_engine *e, void *state,
					      const struct ema_request *r);

	/* int32_t reclaim(struct ema_engine *e, void *state, int gpu, int32_t need)
	 * The tenant of `gpu` needs `need` of its pages and the GPU has none
	 * free but has lent some. Returns the pages freed at once (>= 0); pages
	 * whose data is still moving are not counted: the engine waits for the
	 * transfer and asks again. NULL: lenders never get pages back (only
	 * valid for policies that never lend). */
	int32_t (*reclaim)(struct ema_engine *e, void *state, int gpu, int32_t need);

	/* void plan_iteration(struct ema_engine *e, void *state, struct ema_iteration *it)
	 * The engine filled the batch's work and remote reads; the policy
	 * sets it->prefetch_depth, it->layer_groups and it->method. NULL:
	 * remote KV is read in place (prefetch_depth 0). */
	void (*plan_iteration)(struct ema_engine *e, void *state, struct ema_iteration *it);

	/* void after_iteration(struct ema_engine *e, void *state, int tenant)
	 * After each iteration of `tenant`: maintenance such as reclaiming
	 * ahead of need (pre-preemption). NULL: nothing. */
	void (*after_iteration)(struct ema_engine *e, void *state, int tenant);
};

/* The registry: every policy, in `ema list policies` order. */
extern const struct ema_policy_ops *const ema_policy_table[];
const struct ema_policy_ops *ema_policy_find(const char *name);

#endif
