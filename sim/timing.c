/* timing.c: the simulator's iteration time model. A step is bounded by
 * the larger of its compute time and its memory time (roofline), plus a
 * fixed overhead; remote KV read in place overlaps the local reads. The
 * equations are base/step_cost.c's, which the policies plan with; see
 * doc/model.md "Cost model" for the sources of each figure. */
#include "timing.h"

#include <math.h>
#include <stdio.h>

#include "simtime.h"
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

void ema_timing_explain(const struct ema_hw_profile *hw, const struct ema_iteration *it,
			const struct ema_timing *c, double f_mem, double f_comp, char *buf,
			size_t size)
{
	double local = c->memory_ns * f_mem;
	double mem = ema_timing_memory_ns(hw, c, f_mem);
	double comp = c->compute_ns * f_comp;
	double bytes = (double)it->weight_bytes + (double)it->kv_local_bytes + (double)it->act_bytes;
	char t[32];

	ema_time_text(t, sizeof t, c->overhead_ns + fmax(comp, mem));
	if (it->prefetch_depth > 0)
		for (int i = 0; i < it->n_remote; i++)
			bytes += (double)it->remote[i].bytes; /* staged: read from HBM */
	if (!(comp <= mem) && comp >= c->overhead_ns) {
		if (f_comp >= 2)
			snprintf(buf, size, "a step of %s, compute-bound and slowed %.3g times by "
				 "transfers (hardware.interference_compute x their GB/s / link_gbps)",
				 t, f_comp);
		else
			snprintf(buf, size, "a step of %s, compute-bound: %.3g FLOPs at "
				 "hardware.peak_tflops x hardware.flops_efficiency = %.3g TFLOP/s",
				 t, it->flops, hw->peak_tflops * hw->flops_efficiency);
	} else if (mem >= c->overhead_ns && c->remote_inplace_ns > 0 &&
		   hw->inplace_overlap_efficiency > 0 && hw->inplace_overlap_efficiency < 0.5) {
		/* reads in place beside the local ones, at a poor overlap */
		snprintf(buf, size, "a step of %s, memory-bound with remote KV read in place: "
			 "max(local reads, links) / hardware.inplace_overlap_efficiency = %.3g", t,
			 hw->inplace_overlap_efficiency);
	} else if (mem >= c->overhead_ns) {
		if (!(local >= c->remote_inplace_ns))
			snprintf(buf, size, "a step of %s, bound by its remote KV read in place over "
				 "the links (hardware.remote_read_gbps = %.3g GB/s, link_gbps = %.3g GB/s)",
				 t, hw->remote_read_gbps, hw->link_gbps);
		else if (f_mem >= 2)
			snprintf(buf, size, "a step of %s, memory-bound and slowed %.3g times by "
				 "transfers through its HBM (hardware.interference_lender and "
				 "interference_borrower x their GB/s / hbm_read_gbps = %.3g GB/s)",
				 t, f_mem, hw->hbm_read_gbps);
		else
			snprintf(buf, size, "a step of %s, memory-bound: %.3g GB at "
				 "hardware.hbm_read_gbps x hardware.hbm_efficiency = %.3g GB/s",
				 t, bytes / 1e9, hw->hbm_read_gbps * hw->hbm_efficiency);
	} else {
		snprintf(buf, size, "a step of %s, most of it hardware.iter_overhead_us", t);
	}
}

double ema_timing_link_ns(const struct ema_hw_profile *hw, uint64_t bytes)
{
	return hw->link_gbps > 0 ? (double)bytes / hw->link_gbps : 0.0;
}
