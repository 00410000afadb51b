/* ideal_kv.c: the bound "a server whose GPUs have factor x the KV memory"
 * (policy.ideal_factor, default 2): each GPU keeps its weights and
 * multiplies what they leave, so the KV grows by the factor exactly.
 * `ideal` multiplies the whole GPU, weights included, which grows the
 * KV of a GPU half full of weights by 3x or more; this is the reading of
 * "twice the memory" that compares with a KV-cache result. Nothing is
 * borrowed or moved. */
#include "policy.h"

static double ideal_kv_factor(const struct ema_policy_cfg *knobs)
{
	return knobs->ideal_factor;
}

/* Static on larger pools: no decision reads the ledger, nothing is lent. */
static bool ideal_kv_leap_ok(const struct ema_policy_ctx *c, void *state, int tenant,
			     struct ema_leap_range *r)
{
	return true;
}

const struct ema_policy_ops ema_policy_ideal_kv = {
	.name = "ideal_kv",
	.summary = "every GPU has policy.ideal_factor x its KV memory, weights unchanged (bound)",
	.kv_memory_factor = ideal_kv_factor,
	.leap_ok = ideal_kv_leap_ok,
};
