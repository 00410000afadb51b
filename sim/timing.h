/* timing.h: how long one batch iteration takes on a simulated GPU, from
 * the hardware profile: roofline of compute and memory time plus a fixed
 * overhead, before interference from transfers (sim_platform.c adds it). */
#ifndef EMA_TIMING_H
#define EMA_TIMING_H

#include <stdint.h>

#include "hardware.h"
#include "platform.h"

/* Time of one iteration split into its parts, in ns, without interference
 * from transfers (the platform adds that). */
struct ema_timing {
	double overhead_ns;      /* fixed per-iteration cost */
	double compute_ns;       /* FLOPs / (peak x efficiency) */
	double memory_ns;        /* local HBM bytes / (HBM x efficiency), staged remote KV included */
	double remote_inplace_ns;/* remote KV read over the link in place (prefetch_depth 0) */
	double total_ns;         /* overhead + max(compute, memory + remote_inplace) */
	double memory_bound_share; /* share of the busy time that is bandwidth-bound, 0..1 */
};

void ema_timing_iteration(const struct ema_hw_profile *hw, const struct ema_model *m,
			const struct ema_iteration *it, struct ema_timing *out);

/* Seconds to move `bytes` over an idle link at its full rate. */
double ema_timing_link_ns(const struct ema_hw_profile *hw, uint64_t bytes);

#endif
