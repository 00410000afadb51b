/* pooled_tpot.c: the pooled bound (pooled.c) at a borrower TPOT budget. A
 * tenant borrows from the pool, read as local, only while its step stays
 * within 1 + policy.pooled_tpot.tpot_budget of its local-only step (ema's
 * T0: the weights and a full GPU's KV read from HBM). pooled grows a
 * borrower's batch until its TPOT is 1.6-4 x static's on the scenario
 * kinds, which no policy keeping ema's guarantee (b) may do; at the same
 * budget as ema's, `ema / pooled_tpot` is what ema's mechanism leaves of
 * what its own guarantee allows (doc/policies.md, "The bounds"). The
 * budget is checked on bytes, not on the step measured: with compute-
 * bound steps the bound's TPOT may pass it, which makes the bound higher,
 * never lower. */
#include <stddef.h>

#include "pool.h"

static const struct ema_pool_knobs pooled_tpot_defaults = { 0.10 };

static const struct ema_config_key pooled_tpot_keys[] = {
	{ "tpot_budget", EMA_CFG_DBL, offsetof(struct ema_pool_knobs, tpot_budget), 0, 0, 0, 10, 0,
	  NULL, NULL, NULL, "share of the local-only step",
	  "pooled_tpot: a tenant borrows from the pool only while its step, all its KV read "
	  "as local, stays within 1 + this of its local-only step (the weights and a full "
	  "GPU's KV from HBM); set it to policy.ema.tpot_budget to bound ema at its own "
	  "guarantee." },
	EMA_KNOB_END
};

const struct ema_policy_ops ema_policy_pooled_tpot = {
	.name = "pooled_tpot",
	.summary = "pooled within a borrower TPOT budget (policy.pooled_tpot.tpot_budget): the bound at ema's guarantee (b)",
	.knobs = pooled_tpot_keys,
	.knobs_size = sizeof(struct ema_pool_knobs),
	.knob_defaults = &pooled_tpot_defaults,
	.borrowable = ema_pool_borrowable,
	.max_request_pages = ema_pool_max_request_pages,
	.choose_lender = ema_pool_choose_lender,
	.reclaim = ema_pool_reclaim,
	.plan_iteration = ema_pool_plan,
	.leap_ok = ema_pool_leap_ok,
	.leap_holds = ema_pool_leap_holds,
};
