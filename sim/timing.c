/* timing.c: the simulator's iteration time model. A step is bounded by
 * the larger of its compute time and its memory time (roofline), plus a
 * fixed overhead; see doc/model.md "Cost model" for the sources of each
 * figure. */
#include "timing.h"

#include <math.h>

void ema_timing_iteration(const struct ema_hw_profile *hw, const struct ema_model *m,
			const struct ema_iteration *it, struct ema_timing *out)
{
	double flops_per_ns = hw->peak_tflops * 1e3 * hw->flops_efficiency;
	double hbm_bytes_per_ns = hw->hbm_read_gbps * hw->hbm_efficiency;
	double remote_bytes_per_ns = hw->remote_read_gbps * hw->hbm_efficiency;
	double local = (double)it->weight_bytes + (double)it->kv_local_bytes +
		       (double)it->act_bytes;
	double remote = 0.0;
	double mem;

	(void)m;
	for (int i = 0; i < it->n_remote; i++)
		remote += (double)it->remote[i].bytes;
	out->overhead_ns = hw->iter_overhead_us * 1e3;
	out->compute_ns = flops_per_ns > 0 ? it->flops / flops_per_ns : 0.0;
	if (it->prefetch_depth > 0) {
		/* Staged KV is read from local HBM like any other KV. */
		out->memory_ns = (local + remote) / hbm_bytes_per_ns;
		out->remote_inplace_ns = 0.0;
	} else {
		out->memory_ns = local / hbm_bytes_per_ns;
		out->remote_inplace_ns = remote > 0 ? remote / remote_bytes_per_ns : 0.0;
	}
	mem = out->memory_ns + out->remote_inplace_ns;
	out->total_ns = out->overhead_ns + fmax(out->compute_ns, mem);
	out->memory_bound_share = (mem + out->compute_ns) > 0 ?
		(mem >= out->compute_ns ? 1.0 : mem / out->compute_ns) : 0.0;
}

double ema_timing_link_ns(const struct ema_hw_profile *hw, uint64_t bytes)
{
	return hw->link_gbps > 0 ? (double)bytes / hw->link_gbps : 0.0;
}
