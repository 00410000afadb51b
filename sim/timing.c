/* timing.c: the simulator's iteration time model. A step is bounded by
 * the larger of its compute time and its memory time (roofline), plus a
 * fixed overhead; remote KV read in place overlaps the local reads. The
 * equations are base/step_cost.c's, which the policies plan with; see
 * doc/model.md "Cost model" for the sources of each figure. */
#include "timing.h"

#include <math.h>

#include "step_cost.h"

void ema_timing_iteration(const struct ema_hw_profile *hw, const struct ema_model *m,
			const struct ema_iteration *it, struct ema_timing *out)
{
	/* Staged KV is read from local HBM like any other KV (the platform
	 * adds the slowdown of writing it there: sim_platform.c). */
	bool staged = it->prefetch_depth > 0;
	struct ema_step_cost sc;
	double mem;

	(void)m;
	if (it->n_remote == 0) {
		/* All KV local, staged or not (ema stages, and plans a depth for
		 * steps without remote KV too): the parts used here are the
		 * compute and HBM times, which the cost model's general path
		 * (clearing and walking per-GPU bytes, and the staging writes'
		 * rate, unused here) computes as these same doubles. */
		out->overhead_ns = hw->iter_overhead_us * 1e3;
		ema_cost_local_parts(hw, it, &out->compute_ns, &out->memory_ns);
		out->remote_inplace_ns = 0.0;
	} else {
		ema_step_cost(hw, it, staged, &sc);
		out->overhead_ns = sc.overhead_ns;
		out->compute_ns = sc.compute_ns;
		out->memory_ns = sc.local_ns;
		out->remote_inplace_ns = staged ? 0.0 : sc.link_ns;
	}
	mem = ema_timing_memory_ns(hw, out, 1.0);
	out->total_ns = out->overhead_ns + fmax(out->compute_ns, mem);
	out->memory_bound_share = (mem + out->compute_ns) > 0 ?
		(mem >= out->compute_ns ? 1.0 : mem / out->compute_ns) : 0.0;
}

double ema_timing_memory_ns(const struct ema_hw_profile *hw, const struct ema_timing *c,
			    double f_mem)
{
	return ema_cost_inplace_ns(hw, c->memory_ns * f_mem, c->remote_inplace_ns);
}

double ema_timing_link_ns(const struct ema_hw_profile *hw, uint64_t bytes)
{
	return hw->link_gbps > 0 ? (double)bytes / hw->link_gbps : 0.0;
}
