/* step_cost.c: the cost model of one iteration (step_cost.h), shared by
 * the simulator and the policies. */
#include "step_cost.h"

#include <math.h>

/* fmax and fmin in line: the library's are calls, and the simulator and
 * ema cost every iteration with several. Each returns what the library's
 * does, the larger (smaller) or the operand that is not NaN; of two equal
 * operands either, the same value (only a zero's sign could differ, and
 * the totals add the overhead, a zero's sign then lost). */
static inline double cost_max(double a, double b)
{
	return ema_cost_max(a, b);
}

static inline double cost_min(double a, double b)
{
	return a < b || isnan(b) ? a : b;
}

double ema_cost_hbm_ns(const struct ema_hw_profile *hw, double bytes)
{
	double rate = hw->hbm_read_gbps * hw->hbm_efficiency;

	return rate > 0 ? bytes / rate : 0.0;
}

double ema_cost_copy_stream_gbps(const struct ema_hw_profile *hw, double bytes)
{
	const struct ema_curve_point *c = hw->copy_curve;
	int n = hw->n_copy_curve;
	double floor_ns = hw->copy_fixed_us * 1e3 * 1.001;
	int k = 0;

	while (k < n && c[k].bytes / c[k].gbps <= floor_ns)
		k++;
	if (k == n)
		return hw->link_gbps;
	if (bytes <= c[k].bytes)
		return c[k].gbps;
	if (bytes >= c[n - 1].bytes)
		return c[n - 1].gbps;
	return ema_curve_gbps(c + k, n - k, bytes);
}

double ema_cost_copy_page_ns(const struct ema_hw_profile *hw, enum ema_copy_method method,
			     double page_bytes, double link_gbps, bool curve)
{
	double dev;

	if (method == EMA_COPY_PER_PAGE) {
		dev = curve ? page_bytes / ema_cost_copy_stream_gbps(hw, page_bytes) :
		      page_bytes / link_gbps;
		return hypot(hw->copy_call_us * 1e3, dev);
	}
	if (method == EMA_COPY_BATCH)
		return hw->batch_page_us * 1e3 + page_bytes / link_gbps;
	return 0.0;
}

double ema_cost_link_gbps(const struct ema_hw_profile *hw, bool staged,
			  enum ema_copy_method method, double slice_bytes)
{
	double rate;

	if (!staged) {
		/* the peak of a streaming kernel over the link, derated as local
		 * HBM reads are (hbm_efficiency): until 2026-12-04 local reads
		 * were charged at 70% of their peak and remote ones at 100%,
		 * which flattered every in-place byte */
		double eff = ema_hw_remote_read_efficiency(hw);

		rate = hw->remote_read_gbps > 0 && hw->remote_read_gbps < hw->link_gbps ?
		       hw->remote_read_gbps : hw->link_gbps;
		return eff > 0 && eff < 1 ? rate * eff : rate;
	}
	rate = method == EMA_COPY_GATHER && hw->gather_gbps > 0 && hw->gather_gbps < hw->link_gbps ?
	       hw->gather_gbps : hw->link_gbps;
	if (method != EMA_COPY_GATHER && slice_bytes > 0 && hw->link_gbps > 0) {
		/* the copy engines pay per call (per_page) or per piece
		 * (batch): slices of small pages move far below the link's
		 * rate (sim/flownet.c's caps, which it charges the same way) */
		double step = ema_cost_copy_page_ns(hw, method, slice_bytes, hw->link_gbps,
						    hw->n_copy_curve > 0);

		if (step > 0 && slice_bytes / step < rate)
			rate = slice_bytes / step;
	}
	if (hw->pull_share_under_load > 0 && hw->pull_share_under_load < 1)
		rate *= hw->pull_share_under_load;
	return rate;
}

double ema_cost_staged_slice_bytes(const struct ema_iteration *it)
{
	double bytes = 0, pages = 0;
	int groups = it->layer_groups > 0 ? it->layer_groups : 1;

	for (int i = 0; i < it->n_remote; i++) {
		if (it->remote[i].compute)
			continue; /* read by the lender, not copied */
		bytes += (double)it->remote[i].bytes;
		pages += it->remote[i].n_pages;
	}
	return pages > 0 ? bytes / pages / groups : 0.0;
}

double ema_cost_attention_gbps(const struct ema_hw_profile *hw, bool lender_busy)
{
	double rate = hw->attention_gbps > 0 ? hw->attention_gbps :
		      hw->hbm_read_gbps * hw->hbm_efficiency;
	double share = hw->attention_busy_share > 0 ? hw->attention_busy_share : 0.5;

	return lender_busy ? rate * share : rate;
}

double ema_cost_attention_lender_s_per_gb(const struct ema_hw_profile *hw)
{
	double rate = hw->hbm_read_gbps * hw->hbm_efficiency;

	if (hw->attention_lender_ms_per_gb > 0)
		return hw->attention_lender_ms_per_gb * 1e-3;
	return rate > 0 ? 1.0 / rate : 0.0;
}

double ema_cost_attention_sync_ns(const struct ema_hw_profile *hw)
{
	return (hw->attention_sync_us > 0 ? hw->attention_sync_us : 5.0) * 1e3;
}

double ema_cost_attention_ns(const struct ema_hw_profile *hw, const struct ema_iteration *it)
{
	double exchange[EMA_MAX_GPUS] = {0};
	double slowest = 0;
	int n = 0, layers = it->model_layers > 0 ? it->model_layers : 1;

	for (int i = 0; i < it->n_remote; i++) {
		const struct ema_remote_read *rr = &it->remote[i];
		double rate, t;

		if (!rr->compute || rr->gpu < 0 || rr->gpu >= EMA_MAX_GPUS)
			continue;
		rate = ema_cost_attention_gbps(hw, rr->lender_busy);
		t = rate > 0 ? (double)rr->bytes / rate : 0.0;
		slowest = cost_max(slowest, t);
		exchange[rr->gpu] += (double)rr->exchange_bytes;
		if (rr->gpu >= n)
			n = rr->gpu + 1;
	}
	if (n == 0)
		return 0.0;
	/* each layer waits for its round trip; the lenders' reads and the
	 * exchange of the layers overlap one another */
	return layers * ema_cost_attention_sync_ns(hw) +
	       cost_max(slowest, ema_cost_link_ns(hw, hw->link_gbps, exchange, n));
}

double ema_cost_link_ns(const struct ema_hw_profile *hw, double rate_gbps,
			const double *bytes, int n)
{
	double sum = 0, slowest = 0;

	if (rate_gbps <= 0)
		return 0.0;
	for (int g = 0; g < n; g++) {
		sum += bytes[g];
		if (bytes[g] > slowest)
			slowest = bytes[g];
	}
	return (hw->topology == EMA_TOPO_SWITCH ? sum : slowest) / rate_gbps;
}

double ema_cost_inplace_ns(const struct ema_hw_profile *hw, double local_ns, double link_ns)
{
	double eta = hw->inplace_overlap_efficiency > 0 && hw->inplace_overlap_efficiency < 1 ?
		     hw->inplace_overlap_efficiency : 1.0;

	if (link_ns <= 0)
		return local_ns;
	return cost_max(local_ns, link_ns) / eta;
}

double ema_cost_stage_in_gbps(const struct ema_hw_profile *hw, enum ema_copy_method method,
			      double slice_bytes, const double *bytes, int n, double span_ns)
{
	double per_link = ema_cost_link_gbps(hw, true, method, slice_bytes);
	double in = 0;

	if (span_ns <= 0)
		return 0.0;
	/* each lender over its own link (the defect of issue 11: one link's
	 * rate for all of them undercounted the borrower's HBM writes) */
	for (int g = 0; g < n; g++)
		in += cost_min(bytes[g] / span_ns, per_link);
	if (hw->topology == EMA_TOPO_SWITCH)
		in = cost_min(in, per_link);
	return in;
}

void ema_step_cost(const struct ema_hw_profile *hw, const struct ema_iteration *it, bool staged,
		   struct ema_step_cost *out)
{
	double flops_per_ns = hw->peak_tflops * 1e3 * hw->flops_efficiency;
	double local = (double)it->weight_bytes + (double)it->kv_local_bytes +
		       (double)it->act_bytes;
	double bytes[EMA_MAX_GPUS], writes[EMA_MAX_GPUS];
	double remote = 0, slice = 0, write_ns;
	/* GPUs past the last one read add nothing to the links' sums and
	 * maxima (0 bytes: exactly 0 GB/s), so bytes[] and the loops below
	 * stop there: most iterations read nothing remote, and the simulator
	 * and ema each cost every iteration */
	int n = 0;

	if (it->n_remote == 0 && !staged) {
		/* All KV local (most steps, and every step of a leap): no link
		 * time, which the general path below computes as 0 from zeros
		 * after clearing and walking the per-GPU bytes. */
		out->overhead_ns = hw->iter_overhead_us * 1e3;
		ema_cost_local_parts(hw, it, &out->compute_ns, &out->local_ns);
		out->link_ns = 0.0;
		out->attention_ns = 0.0;
		out->memory_ns = out->local_ns;
		out->total_ns = out->overhead_ns + cost_max(out->compute_ns, out->memory_ns);
		return;
	}
	for (int i = 0; i < it->n_remote; i++)
		if (it->remote[i].gpu >= n && it->remote[i].gpu < EMA_MAX_GPUS)
			n = it->remote[i].gpu + 1;
	for (int g = 0; g < n; g++)
		bytes[g] = writes[g] = 0;
	for (int i = 0; i < it->n_remote; i++) {
		int g = it->remote[i].gpu;

		if (g >= 0 && g < EMA_MAX_GPUS) {
			writes[g] += (double)it->remote[i].write_bytes;
			if (it->remote[i].compute)
				continue; /* the lender reads them (attention_ns) */
			bytes[g] += (double)it->remote[i].bytes;
			remote += (double)it->remote[i].bytes;
		}
	}
	out->attention_ns = ema_cost_attention_ns(hw, it);
	/* the new tokens' KV written into lenders' pages crosses the links
	 * the other way (each direction has its own rate), stored by SMs
	 * as in-place reads are loaded */
	write_ns = ema_cost_link_ns(hw, ema_cost_link_gbps(hw, false, it->method, 0), writes, n);
	out->overhead_ns = hw->iter_overhead_us * 1e3;
	out->compute_ns = flops_per_ns > 0 ? it->flops / flops_per_ns : 0.0;
	if (staged)
		slice = ema_cost_staged_slice_bytes(it);
	out->link_ns = cost_max(ema_cost_link_ns(hw, ema_cost_link_gbps(hw, staged, it->method, slice),
						 bytes, n), write_ns);
	if (!staged) {
		out->local_ns = ema_cost_hbm_ns(hw, local);
		out->memory_ns = ema_cost_inplace_ns(hw, out->local_ns, out->link_ns);
		out->total_ns = out->overhead_ns +
				cost_max(cost_max(out->compute_ns, out->memory_ns), out->attention_ns);
		return;
	}
	/* staged KV is written into local HBM and read from there: the
	 * borrower's memory-bound work slows with the rate it is written */
	out->local_ns = ema_cost_hbm_ns(hw, local + remote);
	{
		double in = ema_cost_stage_in_gbps(hw, it->method, slice, bytes, n,
						   cost_max(out->compute_ns, out->local_ns));

		out->memory_ns = out->local_ns *
				 (1 + hw->interference_borrower * in / hw->hbm_read_gbps);
	}
	out->total_ns = out->overhead_ns +
			cost_max(cost_max(cost_max(out->compute_ns, out->memory_ns), out->link_ns),
				 out->attention_ns);
}

double ema_step_cost_staged_floor_ns(const struct ema_hw_profile *hw, const struct ema_iteration *it)
{
	double local = (double)it->weight_bytes + (double)it->kv_local_bytes +
		       (double)it->act_bytes;
	double remote = 0;

	/* ema_step_cost's staged memory time is local_ns x (1 + k x in /
	 * hbm_read_gbps) with in >= 0: at least local_ns where k >= 0 and the
	 * rate is positive (a product with a factor >= 1 rounds to no less);
	 * its total adds the overhead to a maximum of that and more, and a
	 * rounded sum does not fall when a term grows */
	if (!(hw->interference_borrower >= 0) || !isfinite(hw->interference_borrower) ||
	    !(hw->hbm_read_gbps > 0) || !isfinite(hw->hbm_read_gbps) ||
	    !(hw->hbm_read_gbps * hw->hbm_efficiency > 0))
		return -INFINITY;
	for (int i = 0; i < it->n_remote; i++) {
		int g = it->remote[i].gpu;

		if (g >= 0 && g < EMA_MAX_GPUS && !it->remote[i].compute)
			remote += (double)it->remote[i].bytes;
	}
	return hw->iter_overhead_us * 1e3 + ema_cost_hbm_ns(hw, local + remote);
}

double ema_step_cost_local_ns(const struct ema_hw_profile *hw, uint64_t weight_bytes,
			      uint64_t kv_local_bytes, uint64_t act_bytes, double flops)
{
	struct ema_local_cost k;

	ema_local_cost_init(&k, hw);
	return ema_local_cost_ns(&k, weight_bytes, kv_local_bytes, act_bytes, flops);
}

double ema_step_cost_inplace_ns(const struct ema_hw_profile *hw, const struct ema_iteration *it)
{
	struct ema_step_cost sc;

	/* nothing remote (most iterations): ema_step_cost's shortcut, without
	 * the fields no one asked for */
	if (it->n_remote == 0)
		return ema_step_cost_local_ns(hw, it->weight_bytes, it->kv_local_bytes,
					      it->act_bytes, it->flops);
	ema_step_cost(hw, it, false, &sc);
	return sc.total_ns;
}

double ema_cost_path_step_ns(const struct ema_hw_profile *hw, const struct ema_path_step *s,
			     enum ema_remote_path path, bool busy, double r)
{
	double hbm = hw->hbm_read_gbps * hw->hbm_efficiency, avail = 0;

	if (r <= 0 || hbm <= 0)
		return s->t0_ns;
	switch (path) {
	case EMA_PATH_INPLACE: {
		double eta = hw->inplace_overlap_efficiency > 0 && hw->inplace_overlap_efficiency < 1 ?
			     hw->inplace_overlap_efficiency : 1.0;
		double link = ema_cost_link_gbps(hw, false, EMA_COPY_GATHER, 0);

		avail = fmax(s->local_bytes / (hbm * eta), link > 0 ? r / (link * eta) : INFINITY);
		break;
	}
	case EMA_PATH_COMPUTE: {
		double att = ema_cost_attention_gbps(hw, busy);

		avail = s->layers * ema_cost_attention_sync_ns(hw) + (att > 0 ? r / att : INFINITY);
		break;
	}
	case EMA_PATH_STAGED: {
		double a = (s->local_bytes + r) / hbm;
		double copy = ema_cost_link_gbps(hw, true, s->method, s->slice_bytes);

		/* the root of t = a (1 + ib r / (t hbm_read)): the local
		 * reads slowed by the copies written over the same t */
		avail = 0.5 * (a + sqrt(a * a + 4 * a * hw->interference_borrower * r / hw->hbm_read_gbps));
		avail = fmax(avail, copy > 0 ? r / copy : INFINITY);
		break;
	}
	case EMA_PATH_AUTO:
		return NAN;
	}
	return fmax(s->t0_ns, avail + hw->iter_overhead_us * 1e3);
}

double ema_cost_path_lender_s_per_gb(const struct ema_hw_profile *hw, enum ema_remote_path path)
{
	if (path == EMA_PATH_COMPUTE)
		return ema_cost_attention_lender_s_per_gb(hw);
	return hw->hbm_read_gbps > 0 ? hw->interference_lender / hw->hbm_read_gbps : 0;
}
