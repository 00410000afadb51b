/* host_swap.c: local memory only, like static, but a preempted request's
 * KV is swapped to host memory over PCIe (as vLLM's swap mode) instead of
 * being recomputed; it comes back before new requests are admitted. When
 * host memory (policy.host_gib per GPU) is full it falls back to
 * recomputation. */
#include "policy.h"

static enum ema_preempt_mode host_swap_preempt_mode(const struct ema_policy_ctx *c, void *state,
						    const struct ema_request *r)
{
	return EMA_PREEMPT_SWAP;
}

/* Its one decision (swap, for any request) reads nothing, and swaps of
 * other tenants cross only their own GPUs and host memory: any leap. */
static bool host_swap_leap_ok(const struct ema_policy_ctx *c, void *state, int tenant,
			      struct ema_leap_range *r)
{
	return true;
}

const struct ema_policy_ops ema_policy_host_swap = {
	.name = "host_swap",
	.summary = "local memory only; preemption swaps KV to host memory over PCIe",
	.preempt_mode = host_swap_preempt_mode,
	.leap_ok = host_swap_leap_ok,
};
