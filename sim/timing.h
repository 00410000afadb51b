/* timing.h: how long one batch iteration takes on a simulated GPU, from
 * the hardware profile: roofline of compute and memory time plus a fixed
 * overhead, before interference from transfers (sim_platform.c adds it). */
#ifndef EMA_TIMING_H
#define EMA_TIMING_H

#include <stddef.h>
#include <stdint.h>

#include "hardware.h"
#include "platform.h"

/* Time of one iteration split into its parts, in ns, without interference
 * from transfers (the platform adds that). */
struct ema_timing {
	double overhead_ns;      /* fixed per-iteration cost */
	double compute_ns;       /* FLOPs / (peak x efficiency) */
	double memory_ns;        /* local HBM bytes / (HBM x efficiency), staged remote KV included */
	/* remote KV read in place (prefetch_depth 0): the links' time, each
	 * lender's bytes over its own link at remote_read_gbps (a switch:
	 * all through one port); it overlaps memory_ns */
	double remote_inplace_ns;
	double total_ns;         /* overhead + max(compute, ema_timing_memory_ns(.., 1)) */
	double memory_bound_share; /* share of the busy time that is bandwidth-bound, 0..1 */
};

void ema_timing_iteration(const struct ema_hw_profile *hw, const struct ema_model *m,
			const struct ema_iteration *it, struct ema_timing *out);

/* Memory time of the step with its local reads slowed by f_mem (>= 1,
 * interference): max(memory x f_mem, remote_inplace) /
 * inplace_overlap_efficiency when it reads remote KV in place, else
 * memory x f_mem. */
double ema_timing_memory_ns(const struct ema_hw_profile *hw, const struct ema_timing *c,
			    double f_mem);

/* What makes a step of these parts (c, its local reads slowed f_mem
 * times and its compute f_comp times by transfers) take long, naming the
 * keys of the profile that set it: for the message of a step that would
 * take simulated time past its limit (simtime.h). */
void ema_timing_explain(const struct ema_hw_profile *hw, const struct ema_iteration *it,
			const struct ema_timing *c, double f_mem, double f_comp, char *buf,
			size_t size);

/* Seconds to move `bytes` over an idle link at its full rate. */
double ema_timing_link_ns(const struct ema_hw_profile *hw, uint64_t bytes);

#endif
