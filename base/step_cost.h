/* step_cost.h: the cost model of one iteration on one GPU, in one place
 * for the simulator (sim/timing.c turns iterations into time with it) and
 * for the policies (ema's planner predicts its steps, sizes its budgets
 * per lender and path and chooses the remote path with it), so that what
 * a policy predicts is what the simulator
 * charges. Equations, figures and their sources: doc/model.md, "Cost
 * model" and "Remote reads". */
#ifndef EMA_STEP_COST_H
#define EMA_STEP_COST_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "hardware.h"
#include "knobs.h"
#include "platform.h"

/* ns to read `bytes` from local HBM: bytes / (hbm_read_gbps x
 * hbm_efficiency). */
double ema_cost_hbm_ns(const struct ema_hw_profile *hw, double bytes);

/* GB/s the copy engines reach on pages of `bytes` copied back to back:
 * the measured cudaMemcpyPeerAsync curve without its fixed-cost-only
 * points (a stream of copies hides the launch latency that an isolated
 * one pays), its first informative rate below them, link_gbps without
 * a curve. */
double ema_cost_copy_stream_gbps(const struct ema_hw_profile *hw, double bytes);

/* ns one page of page_bytes costs in a multi-page copy by the copy
 * engines, over a link of link_gbps (`curve`: the peer curve applies):
 * per_page, the host's call (copy_call_us) and the device's copy
 * overlapping imperfectly, hypot(call, page / stream rate); batch, a
 * host cost per piece serial with its data, batch_page_us + page / link.
 * 0 for the gather kernel, which has no per-page cost. The simulator's
 * flows (sim/flownet.c) and the policies' rates take it from here. */
double ema_cost_copy_page_ns(const struct ema_hw_profile *hw, enum ema_copy_method method,
			     double page_bytes, double link_gbps, bool curve);

/* GB/s one link gives a step's remote KV: in place, a kernel reading
 * peer memory (remote_read_gbps, at most link_gbps); staged, the copy
 * method's rate (the gather kernel's, at most link_gbps; for the copy
 * engines the link's, or less where the per-page cost of pieces of
 * slice_bytes bounds it: ema_cost_copy_page_ns; slice_bytes <= 0 leaves
 * that out) times pull_share_under_load, what a pull keeps while the
 * borrower reads its HBM. */
double ema_cost_link_gbps(const struct ema_hw_profile *hw, bool staged,
			  enum ema_copy_method method, double slice_bytes);

/* Bytes of one piece of a staged step's copies: a layer group's slice of
 * a remote page (every group copies its slice of every remote page, as
 * the hw backend does), the average over the step's remote pages; 0 when
 * it reads nothing remote. */
double ema_cost_staged_slice_bytes(const struct ema_iteration *it);

/* ns the links need for bytes[g] from each GPU g (n entries, index = GPU,
 * the borrower's own 0) at rate_gbps per link: on a `direct` topology
 * every lender has its own link to the borrower, so the slowest link; on
 * a `switch` all of them enter through the borrower's one ingress port,
 * so their sum. */
double ema_cost_link_ns(const struct ema_hw_profile *hw, double rate_gbps,
			const double *bytes, int n);

/* Memory time of a step that reads local HBM for local_ns and remote KV
 * in place for link_ns at once, on split SMs: the two overlap, at the
 * measured efficiency, max(local_ns, link_ns) / inplace_overlap_efficiency
 * (local_ns alone when there is nothing remote). */
double ema_cost_inplace_ns(const struct ema_hw_profile *hw, double local_ns, double link_ns);

/* GB/s a staged step writes into the borrower's HBM: each lender's bytes
 * spread over span_ns, at most at its link's staged rate (pieces of
 * slice_bytes), and on a
 * `switch` at most one ingress port in all. This is what slows the
 * borrower's memory-bound work (interference_borrower). */
double ema_cost_stage_in_gbps(const struct ema_hw_profile *hw, enum ema_copy_method method,
			      double slice_bytes, const double *bytes, int n, double span_ns);

/* Remote attention (policy.ema.remote_path=compute; doc/model.md, "Remote
 * attention"). GB/s the lender's attention kernel reads the borrower's
 * KV at: attention_gbps (or the local decode rate, hbm_read_gbps x
 * hbm_efficiency, where the profile has none), times attention_busy_share
 * (0.5 where none) while the lender runs a step of its own. */
double ema_cost_attention_gbps(const struct ema_hw_profile *hw, bool lender_busy);
/* Seconds each GB a lender reads for a borrower adds to its own step:
 * attention_lender_ms_per_gb / 1e3, or the bytes alone, 1 /
 * (hbm_read_gbps x hbm_efficiency), where the profile has none. */
double ema_cost_attention_lender_s_per_gb(const struct ema_hw_profile *hw);
/* The per-layer round trip, ns: attention_sync_us (5 us where none). */
double ema_cost_attention_sync_ns(const struct ema_hw_profile *hw);
/* ns of a step's remote attention: per layer, the round trip, then the
 * lenders' attention over their share of the layer's pages, each at its
 * own rate, and the exchange of queries and partials over the links:
 * layers x sync + max(max over compute lenders of bytes / rate, the
 * links' time for the exchange). 0 with no compute lender. */
double ema_cost_attention_ns(const struct ema_hw_profile *hw, const struct ema_iteration *it);

/* One iteration's predicted time on a path, without transfers of other
 * GPUs (the simulator adds their interference). */
struct ema_step_cost {
	double overhead_ns;      /* iter_overhead_us */
	double compute_ns;       /* FLOPs / (peak x flops_efficiency) */
	double local_ns;         /* HBM time of weights, local KV, activations; staged KV included when staged */
	double link_ns;          /* the links' time for the remote KV on this path (ema_cost_link_ns), or for its writes into lenders where longer */
	double attention_ns;     /* remote attention on the lenders that compute it (ema_cost_attention_ns); 0 without */
	double memory_ns;        /* in place: ema_cost_inplace_ns; staged: local_ns slowed by its own staging writes */
	double total_ns;         /* overhead + max(compute, memory, remote attention, and when staged the copies' link time) */
};

/* The compute and local HBM times of a step, FLOPs / (peak x
 * flops_efficiency) and local bytes / (hbm_read_gbps x hbm_efficiency):
 * what ema_step_cost computes for them (it calls this), in line because
 * the simulator asks for them at every step of a leap. */
static inline void ema_cost_local_parts(const struct ema_hw_profile *hw,
					const struct ema_iteration *it, double *compute_ns,
					double *local_ns)
{
	double flops_per_ns = hw->peak_tflops * 1e3 * hw->flops_efficiency;
	double rate = hw->hbm_read_gbps * hw->hbm_efficiency;
	double local = (double)it->weight_bytes + (double)it->kv_local_bytes +
		       (double)it->act_bytes;

	*compute_ns = flops_per_ns > 0 ? it->flops / flops_per_ns : 0.0;
	*local_ns = rate > 0 ? local / rate : 0.0;
}

/* ema_cost_local_parts' *local_ns alone, the same double, from the
 * step's weight, local KV and activation bytes. */
static inline double ema_cost_local_ns_of(const struct ema_hw_profile *hw, uint64_t weight_bytes,
					  uint64_t kv_local_bytes, uint64_t act_bytes)
{
	double rate = hw->hbm_read_gbps * hw->hbm_efficiency;
	double local = (double)weight_bytes + (double)kv_local_bytes + (double)act_bytes;
	return rate > 0 ? local / rate : 0.0;
}
static inline double ema_cost_local_ns(const struct ema_hw_profile *hw,
				       const struct ema_iteration *it)
{
	return ema_cost_local_ns_of(hw, it->weight_bytes, it->kv_local_bytes, it->act_bytes);
}

/* Whether ema_cost_local_parts' compute time is surely below local_ns,
 * without its division: FLOPs at most local_ns x rate x (1 - 2^-40),
 * whose two roundings (each under 2^-53 of the value) and the quotient's
 * cannot bring the quotient up to local_ns. Most decode steps are
 * memory-bound by far: the simulator and ema cost every one, leapt or
 * not. */
static inline bool ema_cost_surely_memory_bound(const struct ema_hw_profile *hw, double flops,
						double local_ns)
{
	double flops_per_ns = hw->peak_tflops * 1e3 * hw->flops_efficiency;

	return flops_per_ns > 0 && flops >= 0 && flops <= local_ns * flops_per_ns * (1.0 - 0x1p-40);
}

/* Fills *out for `it` read in place (staged false) or staged, whatever
 * it->prefetch_depth says. The remote bytes are it->remote[]. */
void ema_step_cost(const struct ema_hw_profile *hw, const struct ema_iteration *it, bool staged,
		   struct ema_step_cost *out);

/* A lower bound of ema_step_cost(hw, it, true, &out)'s out.total_ns
 * (never above it, rounding included): the overhead plus the HBM time of
 * the local and remote bytes, summed by the same operations as there
 * (its other terms only raise the total: a slowdown factor of at least 1
 * and maxima). -INFINITY where it cannot tell (a negative interference or
 * a rate that is not positive). For a policy choosing between the paths:
 * in place wins whenever this is at least the in-place total, without
 * the staged cost's per-lender rates. */
double ema_step_cost_staged_floor_ns(const struct ema_hw_profile *hw, const struct ema_iteration *it);

/* ema_step_cost(hw, it, false, &out)'s out.total_ns, the same double: for
 * callers that cost every iteration and need only the in-place total
 * (ema's TPOT budget and choice of path). */
double ema_step_cost_inplace_ns(const struct ema_hw_profile *hw, const struct ema_iteration *it);
/* The larger of two times, a NaN never chosen over a number (the cost
 * model's max everywhere). */
static inline double ema_cost_max(double a, double b)
{
	return a > b || isnan(b) ? a : b;
}

/* The figures of ema_step_cost_local_ns, read from the profile once: for
 * callers that cost many steps in a row (a leap's). */
struct ema_local_cost {
	double overhead_ns;    /* iter_overhead_us x 1e3 */
	double hbm_rate;       /* hbm_read_gbps x hbm_efficiency */
	double flops_per_ns;   /* peak_tflops x 1e3 x flops_efficiency */
};
static inline void ema_local_cost_init(struct ema_local_cost *k, const struct ema_hw_profile *hw)
{
	k->overhead_ns = hw->iter_overhead_us * 1e3;
	k->hbm_rate = hw->hbm_read_gbps * hw->hbm_efficiency;
	k->flops_per_ns = hw->peak_tflops * 1e3 * hw->flops_efficiency;
}
/* ema_step_cost_local_ns with those figures, the same double: local HBM
 * time as ema_cost_local_ns_of, memory's time where the FLOPs surely do
 * not reach it (ema_cost_surely_memory_bound), else the larger. */
static inline double ema_local_cost_ns(const struct ema_local_cost *k, uint64_t weight_bytes,
				       uint64_t kv_local_bytes, uint64_t act_bytes, double flops)
{
	double local = k->hbm_rate > 0 ? ((double)weight_bytes + (double)kv_local_bytes +
					  (double)act_bytes) / k->hbm_rate : 0.0;
	double compute;

	if (k->flops_per_ns > 0 && flops >= 0 && flops <= local * k->flops_per_ns * (1.0 - 0x1p-40))
		return k->overhead_ns + local;
	compute = k->flops_per_ns > 0 ? flops / k->flops_per_ns : 0.0;
	return k->overhead_ns + ema_cost_max(compute, local);
}

/* ema_step_cost_inplace_ns of a step with nothing remote, from its
 * figures (the same double): for a policy that costs a leap's steps. */
double ema_step_cost_local_ns(const struct ema_hw_profile *hw, uint64_t weight_bytes,
			      uint64_t kv_local_bytes, uint64_t act_bytes, double flops);

/* ---- the planner's per-path prediction --------------------------------
 * ema's planner (policies/ema.c) and `ema paths` (src/cmd_paths.c) read
 * the cost model in closed form per path: a borrower whose step reads
 * `local_bytes` (weights and its own KV) from its HBM, memory-bound, and
 * r bytes held on one lender. doc/model.md, "ema's planner", derives it. */
struct ema_path_step {
	double local_bytes;         /* weights + the borrower's own KV */
	double t0_ns;               /* its local-only step: the least any path takes */
	int layers;                 /* the model's layers (remote attention syncs per layer) */
	enum ema_copy_method method; /* the staged path's copies */
	double slice_bytes;         /* a staged copy's piece: page_bytes / layer_groups */
};

/* The step reading r bytes of one lender by `path` (EMA_PATH_INPLACE,
 * _STAGED or _COMPUTE), at least t0_ns: in place, the local and remote
 * reads overlapped at inplace_overlap_efficiency; compute, the lender's
 * attention at its rate (`busy`: the lender runs steps of its own) after a
 * sync per layer; staged, the local reads slowed by the copies' writes
 * (interference_borrower), or the copies' time where longer. Plus the
 * step overhead. */
double ema_cost_path_step_ns(const struct ema_hw_profile *hw, const struct ema_path_step *s,
			     enum ema_remote_path path, bool busy, double r);

/* A lender's slowdown per GB/s it serves a borrower by `path`: the
 * interference of the bytes leaving its HBM over its rate (in place,
 * staged), or the time its attention takes per GB (compute). */
double ema_cost_path_lender_s_per_gb(const struct ema_hw_profile *hw, enum ema_remote_path path);

#endif
