/* static.c: static partitioning, the baseline of the published system:
 * each tenant uses only its own GPU's memory; out of memory, vLLM's
 * default: preempt the newest request and recompute it later. Every
 * decision hook is NULL: the engine's defaults are exactly this policy. */
#include "policy.h"

/* No decision of static reads the ledger, and it lends nothing: any
 * leap, with any free pages. */
static bool static_leap_ok(const struct ema_policy_ctx *c, void *state, int tenant,
			   struct ema_leap_range *r)
{
	return true;
}

const struct ema_policy_ops ema_policy_static = {
	.name = "static",
	.summary = "each tenant uses only its own GPU's memory; preemption recomputes",
	.leap_ok = static_leap_ok,
};
