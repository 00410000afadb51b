/* ideal.c: the upper bound "a server with factor x the memory" (default
 * 2x): every GPU's memory is multiplied, nothing is borrowed or moved. */
#include "policy.h"

static double ideal_memory_factor(const struct ema_policy_cfg *knobs)
{
	return knobs->ideal_factor;
}

/* Static on larger GPUs: no decision reads the ledger, nothing is lent. */
static bool ideal_leap_ok(const struct ema_policy_ctx *c, void *state, int tenant,
			  struct ema_leap_range *r)
{
	return true;
}

const struct ema_policy_ops ema_policy_ideal = {
	.name = "ideal",
	.summary = "every GPU has policy.ideal_factor x its memory (upper bound)",
	.memory_factor = ideal_memory_factor,
	.leap_ok = ideal_leap_ok,
};
