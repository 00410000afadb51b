/* static.c: static partitioning, the baseline of the published system:
 * each tenant uses only its own GPU's memory; out of memory, vLLM's
 * default: preempt the newest request and recompute it later. Every hook
 * is NULL: the engine's defaults are exactly this policy. */
#include "policy.h"

const struct ema_policy_ops ema_policy_static = {
	.name = "static",
	.summary = "each tenant uses only its own GPU's memory; preemption recomputes",
};
