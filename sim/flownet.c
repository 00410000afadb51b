/* flownet.c: the fluid transfer model behind the simulated platform.
 *
 * Rates are max-min fair (progressive filling): all moving flows rise
 * together; a resource whose remaining capacity divided by its unfrozen
 * flows is the smallest, or a flow whose own cap is reached, freezes those
 * flows at that level; repeat until every flow is frozen. With a handful
 * of resources per GPU and tens of flows this is cheap, and it is redone
 * only when a flow starts moving or ends.
 *
 * Most of the time every moving flow has a cap and the caps fit every
 * resource; then each flow simply moves at its cap. That test is kept
 * incrementally, since a simulation asks it once per flow event: each
 * resource keeps its capacity less the caps of its moving flows,
 * subtracted in start order exactly as a full pass would, so that the
 * doubles (and the outputs) are those of a full recomputation. A flow
 * appended at the end of the order updates its resources in place; a
 * flow leaving or starting to move in the middle of the order has its
 * resources summed again from scratch. ema_flownet_selfcheck compares
 * the state with a full recomputation.
 *
 * Per-transfer costs (h = copy_call_us, f = copy_fixed_us, b =
 * batch_page_us, L = the path's link rate, s = bytes per page, c(s) =
 * the measured cudaMemcpyPeerAsync curve, clamped to its end points):
 *
 *  - single copy (n_pages <= 1, copy engine): alone it takes
 *    T1(s) = max(f, s / c(s)) over a peer link (f + s / L without a curve
 *    or to and from the host). The part above s / L is latency; the data
 *    then moves at the fair share. H200x2: 4 MiB 167, 16 MiB 318, 64 MiB
 *    369, 256 MiB 390, 1 GiB 395 GB/s and 15.9 us at <= 1 MiB, exactly.
 *  - per-page calls (EMA_COPY_PER_PAGE): the host issues one call per page
 *    (h each) while the device copies the previous one (s / c'(s), c' the
 *    curve without its fixed-cost-only points, see
 *    ema_cost_copy_stream_gbps); the
 *    two overlap imperfectly, so one page costs hypot(h, s / c'(s)), a
 *    smooth maximum. 16 KiB: 6.30 us/page = 2.60 GB/s; 64 KiB: 10.4; 2 MiB: 149;
 *    16 MiB: 316 (measured 2.6 / 10 / 150 / 317; 256 KiB reads 40 against
 *    31 measured). The flow's cap is s / that, after a latency that makes
 *    a one-page transfer cost T1(s).
 *  - batched copy (EMA_COPY_BATCH): one call (latency f), then per page a
 *    host cost b serial with the page's data: cap s / (b + s / L).
 *    16 KiB 30.3, 64 KiB 98.4, 256 KiB 225, 2 MiB 361 GB/s (30/94/218/357).
 *  - gather kernel (EMA_COPY_GATHER): launch latency, then capped at
 *    gather_gbps; it uses SMs, not copy engines.
 *  - a GPU's copy to itself moves over its own HBM only: no link, capped
 *    at hbm_read_gbps / 2 (it reads and writes every byte).
 * The fluid caps are exact for a transfer alone; under contention they
 * are an approximation (the host-issue share of per-page and batched
 * copies does not shrink when the data phase slows). */
#include "flownet.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simtime.h"
#include "step_cost.h"

enum flow_state { FLOW_QUEUED, FLOW_LATENCY, FLOW_DATA };

struct flow {
	uint64_t id;          /* start order, also the tie-break */
	uint64_t tag;
	int src, dst;
	int res[2];
	int n_res;
	int engine_gpu;       /* GPU whose copy engine it holds, -1 none */
	enum flow_state state;
	int64_t latency_ns;
	int64_t lat_end;
	int64_t last;         /* time `remaining` refers to */
	double remaining;     /* bytes */
	double cap;           /* bytes/ns, INFINITY for none */
	double rate;          /* bytes/ns */
	int64_t fin;          /* flow_finish, while fin_ok */
	bool to_sm;           /* lands in the destination's SMs, not its HBM */
	bool fin_ok;          /* cleared when remaining, last or rate change */
	bool frozen;          /* scratch for the water-filling */
	bool fresh;           /* frozen in the current round */
};

/* Whether a resource's caps overflow it, as the full pass tests it. */
static inline bool over(double left, double cap)
{
	return left < -1e-9 * cap;
}

struct ema_flownet {
	struct ema_hw_profile hw;
	int n;                /* GPUs */
	bool is_switch;
	int n_res;
	double *res_cap;      /* bytes/ns */
	double *res_left;     /* scratch */
	int *res_count;       /* scratch */
	/* The incremental fit test (see the top of the file): res_cap less
	 * the caps of the moving flows in start order, whether that is below
	 * the tolerance, how many are, the resources to sum again, and the
	 * moving flows without a cap. */
	double *res_fit;
	bool *res_over;
	int n_over;
	bool *res_dirty;
	int *dirty;
	int n_dirty;
	int n_uncapped;
	int *flows_at;        /* unfinished flows from or to each GPU */
	int64_t next_ev;      /* cached ema_flownet_next_event_time */
	bool next_ok;
	struct flow *flows;   /* unfinished flows in start order */
	int n_flows, cap_flows;
	/* recompute_full's rounds: the unfrozen flows (indices into flows)
	 * and the resources with some, each in index order */
	int *live, n_live, cap_live;
	int *act, n_act;
	int *res_start, *res_flows, *sat;
	int *heap, *heap_pos, n_heap;
	double *share;
	struct done_flow { uint64_t id, tag; } *done; /* completed in one step */
	int n_done, cap_done;
	int *engines_busy;
	double *hbm_out, *hbm_in;
	int64_t now;
	uint64_t next_id;
	uint64_t generation;
	bool in_advance;
};

/* Resource layout: host links first, then the GPU-to-GPU ones. */
static inline int res_host_up(const struct ema_flownet *net, int g) { (void)net; return g; }
static inline int res_host_down(const struct ema_flownet *net, int g) { return net->n + g; }
static inline int res_pair(const struct ema_flownet *net, int s, int d)
{
	return 2 * net->n + s * net->n + d;
}
static inline int res_egress(const struct ema_flownet *net, int g) { return 2 * net->n + g; }
static inline int res_ingress(const struct ema_flownet *net, int g) { return 3 * net->n + g; }

static const char *hw_name(const struct ema_hw_profile *hw)
{
	return hw->name[0] ? hw->name : "hardware profile";
}

int ema_flownet_create(struct ema_flownet **out, const struct ema_hw_profile *hw,
		       struct ema_error *err)
{
	struct ema_flownet *net;
	const char *nm = hw_name(hw);
	int n = hw->n_gpus;

	*out = NULL;
	if (n < 1 || n > EMA_MAX_GPUS)
		return ema_error_at(err, nm, 0, "n_gpus must be 1..%d, got %d",
				    EMA_MAX_GPUS, n);
	if (!(hw->link_gbps > 0))
		return ema_error_at(err, nm, 0, "link_gbps must be > 0, got %g", hw->link_gbps);
	if (!(hw->host_link_gbps > 0))
		return ema_error_at(err, nm, 0, "host_link_gbps must be > 0, got %g",
				    hw->host_link_gbps);
	if (!(hw->hbm_read_gbps > 0))
		return ema_error_at(err, nm, 0, "hbm_read_gbps must be > 0, got %g",
				    hw->hbm_read_gbps);
	if (hw->copy_engines < 1)
		return ema_error_at(err, nm, 0, "copy_engines must be >= 1, got %d",
				    hw->copy_engines);
	if (hw->copy_fixed_us < 0 || hw->copy_call_us < 0 || hw->batch_page_us < 0 ||
	    hw->gather_gbps < 0)
		return ema_error_at(err, nm, 0,
				    "copy_fixed_us, copy_call_us, batch_page_us and gather_gbps must be >= 0");
	if (hw->n_copy_curve < 0 || hw->n_copy_curve > EMA_CURVE_MAX)
		return ema_error_at(err, nm, 0, "copy_curve must have 0..%d points, got %d",
				    EMA_CURVE_MAX, hw->n_copy_curve);
	for (int i = 0; i < hw->n_copy_curve; i++) {
		if (!(hw->copy_curve[i].bytes > 0) || !(hw->copy_curve[i].gbps > 0) ||
		    (i > 0 && !(hw->copy_curve[i].bytes > hw->copy_curve[i - 1].bytes)))
			return ema_error_at(err, nm, 0,
					    "copy_curve point %d: expected bytes > 0 increasing and gbps > 0",
					    i);
	}
	if (hw->topology != EMA_TOPO_DIRECT && hw->topology != EMA_TOPO_SWITCH)
		return ema_error_at(err, nm, 0,
				    "topology must be \"direct\" or \"switch\", got %d",
				    (int)hw->topology);
	net = calloc(1, sizeof *net);
	if (net == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "flownet: out of memory");
	net->hw = *hw;
	net->n = n;
	net->is_switch = hw->topology == EMA_TOPO_SWITCH;
	net->n_res = net->is_switch ? 4 * n : 2 * n + n * n;
	net->res_cap = calloc((size_t)net->n_res, sizeof *net->res_cap);
	net->res_left = calloc((size_t)net->n_res, sizeof *net->res_left);
	net->res_count = calloc((size_t)net->n_res, sizeof *net->res_count);
	net->res_fit = calloc((size_t)net->n_res, sizeof *net->res_fit);
	net->res_over = calloc((size_t)net->n_res, sizeof *net->res_over);
	net->res_dirty = calloc((size_t)net->n_res, sizeof *net->res_dirty);
	net->dirty = calloc((size_t)net->n_res, sizeof *net->dirty);
	net->flows_at = calloc((size_t)n, sizeof *net->flows_at);
	net->engines_busy = calloc((size_t)n, sizeof *net->engines_busy);
	net->hbm_out = calloc((size_t)n, sizeof *net->hbm_out);
	net->hbm_in = calloc((size_t)n, sizeof *net->hbm_in);
	if (!net->res_cap || !net->res_left || !net->res_count || !net->engines_busy ||
	    !net->hbm_out || !net->hbm_in || !net->res_fit || !net->res_over ||
	    !net->res_dirty || !net->dirty || !net->flows_at) {
		ema_flownet_destroy(net);
		return ema_error_set(err, EMA_ERR_NOMEM, "flownet: out of memory");
	}
	for (int g = 0; g < n; g++) {
		net->res_cap[res_host_up(net, g)] = hw->host_link_gbps;
		net->res_cap[res_host_down(net, g)] = hw->host_link_gbps;
	}
	for (int r = 2 * n; r < net->n_res; r++)
		net->res_cap[r] = hw->link_gbps;
	memcpy(net->res_fit, net->res_cap, (size_t)net->n_res * sizeof *net->res_fit);
	net->next_ev = INT64_MAX;
	net->next_ok = true;
	*out = net;
	return EMA_OK;
}

void ema_flownet_destroy(struct ema_flownet *net)
{
	if (net == NULL)
		return;
	free(net->res_cap);
	free(net->res_left);
	free(net->res_count);
	free(net->res_fit);
	free(net->res_over);
	free(net->res_dirty);
	free(net->dirty);
	free(net->flows_at);
	free(net->engines_busy);
	free(net->hbm_out);
	free(net->hbm_in);
	free(net->flows);
	free(net->live);
	free(net->act);
	free(net->res_start);
	free(net->res_flows);
	free(net->sat);
	free(net->heap);
	free(net->heap_pos);
	free(net->share);
	free(net->done);
	free(net);
}

/* The measured curve, clamped outside its points so that the model does
 * not depend on how ema_curve_gbps extrapolates. */
static double copy_curve(const struct ema_hw_profile *hw, double s)
{
	const struct ema_curve_point *c = hw->copy_curve;
	int n = hw->n_copy_curve;

	if (s <= c[0].bytes)
		return c[0].gbps;
	if (s >= c[n - 1].bytes)
		return c[n - 1].gbps;
	return ema_curve_gbps(c, n, s);
}

int ema_flownet_params(const struct ema_flownet *net, int src, int dst,
		       uint64_t bytes, int n_pages, enum ema_copy_method method,
		       struct ema_flow_params *out, struct ema_error *err)
{
	const struct ema_hw_profile *hw = &net->hw;
	bool host = src == EMA_HOST || dst == EMA_HOST;
	bool local = src == dst;
	bool curve = !host && !local && hw->n_copy_curve > 0;
	double link, s, t1, step;
	double fixed = hw->copy_fixed_us * 1e3;

	if (src < EMA_HOST || src >= net->n || dst < EMA_HOST || dst >= net->n ||
	    (src == EMA_HOST && dst == EMA_HOST))
		return ema_error_set(err, EMA_ERR_INPUT,
				     "flownet: transfer %d -> %d: expected GPUs 0..%d or host (-1), not both host",
				     src, dst, net->n - 1);
	if (method != EMA_COPY_GATHER && method != EMA_COPY_BATCH &&
	    method != EMA_COPY_PER_PAGE)
		return ema_error_set(err, EMA_ERR_INPUT, "flownet: unknown copy method %d",
				     (int)method);
	memset(out, 0, sizeof *out);
	out->src = src;
	out->dst = dst;
	out->bytes = bytes;
	link = host ? hw->host_link_gbps : local ? hw->hbm_read_gbps / 2 : hw->link_gbps;
	if (local)
		out->cap_gbps = link;
	s = n_pages > 1 ? (double)bytes / n_pages : (double)bytes;
	if (method == EMA_COPY_GATHER) {
		out->latency_ns = EMA_FLOWNET_KERNEL_LAUNCH_NS;
		if (hw->gather_gbps > 0 && (out->cap_gbps <= 0 || hw->gather_gbps < out->cap_gbps))
			out->cap_gbps = hw->gather_gbps;
		return EMA_OK;
	}
	out->copy_engine = true;
	t1 = curve ? fmax(fixed, s / copy_curve(hw, s)) : fixed + s / link;
	/* (a latency past the limit of simulated time saturates to
	 * EMA_TIME_PAST: its flow ends there, and ema_flownet_describe_late
	 * says why if the run gets there) */
	if (n_pages <= 1) {
		out->latency_ns = ema_time_ns(fmax(0.0, t1 - s / link));
		return EMA_OK;
	}
	/* (the policies' staged rates take the same per-page cost) */
	step = ema_cost_copy_page_ns(hw, method, s, link, curve);
	out->latency_ns = ema_time_ns(method == EMA_COPY_PER_PAGE ? fmax(0.0, t1 - step) : fixed);
	if (step > 0 && (out->cap_gbps <= 0 || s / step < out->cap_gbps))
		out->cap_gbps = s / step;
	return EMA_OK;
}

static int64_t flow_finish(const struct flow *f)
{
	double t;

	if (f->remaining <= 0)
		return f->last;
	if (!(f->rate > 0))
		return INT64_MAX;
	/* The small slack absorbs rounding left by earlier partial updates,
	 * so a rate that did not change keeps its completion time. */
	t = ceil(f->remaining / f->rate - 1e-6);
	if (t < 0)
		t = 0;
	/* past the limit of simulated time (a NaN too): never reached where
	 * a horizon comes first, else the run stops there and says why */
	if (!(t <= (double)(EMA_TIME_MAX_NS - f->last)))
		return EMA_TIME_PAST;
	return f->last + (int64_t)t;
}

/* flow_finish, kept between the step that moved the flow on and the
 * scan for the next event (a division per flow each time otherwise). */
static inline int64_t finish_at(struct flow *f)
{
	if (!f->fin_ok) {
		f->fin = flow_finish(f);
		f->fin_ok = true;
	}
	return f->fin;
}

static int64_t scan_next_event(struct ema_flownet *net)
{
	int64_t best = INT64_MAX;

	for (int i = 0; i < net->n_flows; i++) {
		struct flow *f = &net->flows[i];
		int64_t t = INT64_MAX;

		if (f->state == FLOW_LATENCY)
			t = f->lat_end;
		else if (f->state == FLOW_DATA)
			t = finish_at(f);
		if (t < best)
			best = t;
	}
	return best;
}

/* The scan is cached: the platform asks again after each advance and
 * start, usually with nothing moved in between. */
int64_t ema_flownet_next_event_time(struct ema_flownet *net)
{
	if (!net->next_ok) {
		net->next_ev = scan_next_event(net);
		net->next_ok = true;
	}
	return net->next_ev;
}

/* Moves every data flow's bytes on to time t at its current rate. Every
 * moving flow's `last` is the net's time (flows start moving at it and
 * each call brings them all there), so nothing moves unless t is later. */
static void progress(struct ema_flownet *net, int64_t t)
{
	if (t <= net->now)
		return;
	for (int i = 0; i < net->n_flows; i++) {
		struct flow *f = &net->flows[i];

		if (f->state != FLOW_DATA || t <= f->last)
			continue;
		f->remaining -= f->rate * (double)(t - f->last);
		if (f->remaining < 0)
			f->remaining = 0;
		f->last = t;
		/* its completion time now, in the same pass: the scan for the
		 * next event almost always follows, and the rate rarely changes
		 * in between */
		f->fin = flow_finish(f);
		f->fin_ok = true;
		net->next_ok = false;
	}
	if (t > net->now)
		net->now = t;
}

/* Every moving flow's rate in its GPUs' HBM traffic, in start order. */
static void sum_hbm(struct ema_flownet *net)
{
	for (int g = 0; g < net->n; g++)
		net->hbm_out[g] = net->hbm_in[g] = 0;
	for (int i = 0; i < net->n_flows; i++) {
		const struct flow *f = &net->flows[i];

		if (f->state != FLOW_DATA)
			continue;
		if (f->src >= 0)
			net->hbm_out[f->src] += f->rate;
		if (f->dst >= 0 && !f->to_sm)
			net->hbm_in[f->dst] += f->rate;
	}
}

/* The lists of the rounds below: the unfrozen flows by increasing cap
 * (live), the resources that count some (act, by index), and each
 * resource's unfrozen flows (res_flows[res_start[r] .. res_start[r + 1])).
 * Returns -1 where they cannot be had (out of memory: the rounds then go
 * over everything, as before). */
static const struct flow *sort_flows;

static int by_cap(const void *a, const void *b)
{
	double x = sort_flows[*(const int *)a].cap, y = sort_flows[*(const int *)b].cap;

	return x < y ? -1 : x > y ? 1 : (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

static int prepare_rounds(struct ema_flownet *net)
{
	if (net->act == NULL) {
		net->act = malloc((size_t)net->n_res * sizeof *net->act);
		net->res_start = malloc((size_t)(net->n_res + 1) * sizeof *net->res_start);
		net->sat = malloc((size_t)net->n_res * sizeof *net->sat);
		net->heap = malloc((size_t)net->n_res * sizeof *net->heap);
		net->heap_pos = malloc((size_t)net->n_res * sizeof *net->heap_pos);
		net->share = malloc((size_t)net->n_res * sizeof *net->share);
		if (net->act == NULL || net->res_start == NULL || net->sat == NULL ||
		    net->heap == NULL || net->heap_pos == NULL || net->share == NULL)
			return -1;
	}
	if (net->cap_live < net->n_flows) {
		int *l = realloc(net->live, (size_t)net->cap_flows * sizeof *l);

		if (l == NULL)
			return -1;
		net->live = l;
		l = realloc(net->res_flows, 2 * (size_t)net->cap_flows * sizeof *l);
		if (l == NULL)
			return -1;
		net->res_flows = l;
		net->cap_live = net->cap_flows;
	}
	net->n_live = 0;
	for (int i = 0; i < net->n_flows; i++)
		if (!net->flows[i].frozen)
			net->live[net->n_live++] = i;
	sort_flows = net->flows;
	qsort(net->live, (size_t)net->n_live, sizeof *net->live, by_cap);
	net->n_act = 0;
	net->res_start[0] = 0;
	for (int r = 0; r < net->n_res; r++) {
		if (net->res_count[r] > 0)
			net->act[net->n_act++] = r;
		net->res_start[r + 1] = net->res_start[r] + net->res_count[r];
	}
	for (int r = 0; r < net->n_res; r++)
		net->sat[r] = net->res_start[r]; /* (the fill position, for now) */
	for (int i = 0; i < net->n_flows; i++) {
		const struct flow *f = &net->flows[i];

		if (f->frozen)
			continue;
		for (int k = 0; k < f->n_res; k++)
			net->res_flows[net->sat[f->res[k]]++] = i;
	}
	return 0;
}

/* The rounds over every flow and resource (prepare_rounds' fallback). */
static void recompute_rounds_plain(struct ema_flownet *net, int unfrozen)
{
	while (unfrozen > 0) {
		double level = INFINITY;

		for (int r = 0; r < net->n_res; r++)
			if (net->res_count[r] > 0)
				level = fmin(level, net->res_left[r] / net->res_count[r]);
		for (int i = 0; i < net->n_flows; i++)
			if (!net->flows[i].frozen)
				level = fmin(level, net->flows[i].cap);
		if (!isfinite(level))
			level = 0; /* unreachable: every flow has a resource or a cap */
		/* Freeze, in one pass against the shares before this round, every
		 * flow at its cap or on a resource saturated at this level. */
		for (int i = 0; i < net->n_flows; i++) {
			struct flow *f = &net->flows[i];
			bool freeze = f->cap <= level * (1 + 1e-12);

			if (f->frozen)
				continue;
			for (int k = 0; k < f->n_res && !freeze; k++) {
				int r = f->res[k];

				freeze = net->res_left[r] / net->res_count[r] <= level * (1 + 1e-12);
			}
			f->frozen = freeze;
			f->fresh = freeze;
			if (freeze)
				f->rate = level;
		}
		for (int i = 0; i < net->n_flows; i++) {
			struct flow *f = &net->flows[i];

			if (!f->fresh)
				continue;
			f->fresh = false;
			unfrozen--;
			for (int k = 0; k < f->n_res; k++) {
				int r = f->res[k];

				net->res_left[r] -= level;
				if (net->res_left[r] < 0)
					net->res_left[r] = 0;
				net->res_count[r]--;
			}
		}
	}
}

/* recompute_full's resources that still count unfrozen flows, a binary
 * min-heap on their share res_left / res_count (share[r]; heap_pos[r]
 * its place, -1 off the heap): the smallest share is the heap's top, the
 * very value a minimum over them all gives. */
static inline bool heap_less(const struct ema_flownet *net, int a, int b)
{
	double x = net->share[a], y = net->share[b];

	return x < y || (x == y && a < b);
}

static inline void heap_place(struct ema_flownet *net, int i, int r)
{
	net->heap[i] = r;
	net->heap_pos[r] = i;
}

static void heap_up(struct ema_flownet *net, int i)
{
	int r = net->heap[i];

	while (i > 0) {
		int up = (i - 1) / 2;

		if (!heap_less(net, r, net->heap[up]))
			break;
		heap_place(net, i, net->heap[up]);
		i = up;
	}
	heap_place(net, i, r);
}

static void heap_down(struct ema_flownet *net, int i)
{
	int r = net->heap[i];

	for (;;) {
		int c = 2 * i + 1;

		if (c >= net->n_heap)
			break;
		if (c + 1 < net->n_heap && heap_less(net, net->heap[c + 1], net->heap[c]))
			c++;
		if (!heap_less(net, net->heap[c], r))
			break;
		heap_place(net, i, net->heap[c]);
		i = c;
	}
	heap_place(net, i, r);
}

static void heap_remove_at(struct ema_flownet *net, int i)
{
	int r = net->heap[i], last = net->heap[--net->n_heap];

	net->heap_pos[r] = -1;
	if (i < net->n_heap) {
		heap_place(net, i, last);
		heap_up(net, i);
		heap_down(net, net->heap_pos[last]);
	}
}

static int heap_pop(struct ema_flownet *net)
{
	int r = net->heap[0];

	heap_remove_at(net, 0);
	return r;
}

/* Resource r lost a flow: its new share, or off the heap with none. */
static void heap_update(struct ema_flownet *net, int r)
{
	int i = net->heap_pos[r];

	if (net->res_count[r] <= 0) {
		heap_remove_at(net, i);
		return;
	}
	net->share[r] = net->res_left[r] / net->res_count[r];
	heap_up(net, i);
	heap_down(net, net->heap_pos[r]);
}

static void heap_build(struct ema_flownet *net)
{
	net->n_heap = 0;
	for (int r = 0; r < net->n_res; r++) {
		net->heap_pos[r] = -1;
		if (net->res_count[r] > 0) {
			net->share[r] = net->res_left[r] / net->res_count[r];
			net->heap[net->n_heap] = r;
			net->heap_pos[r] = net->n_heap++;
			heap_up(net, net->n_heap - 1);
		}
	}
}

/* A flow frozen in this round of recompute_full: its resources lose
 * `level` and it stops counting there. 1 the first time, 0 after. */
static inline int settle(struct ema_flownet *net, struct flow *f, double level)
{
	if (!f->fresh)
		return 0;
	f->fresh = false;
	for (int k = 0; k < f->n_res; k++) {
		int r = f->res[k];

		net->res_left[r] -= level;
		if (net->res_left[r] < 0)
			net->res_left[r] = 0;
		net->res_count[r]--;
		if (net->heap_pos[r] >= 0)
			heap_update(net, r);
	}
	return 1;
}

/* The full max-min pass over every flow: what the incremental update
 * must reproduce bit for bit (ema_flownet_selfcheck), and its fallback
 * when the caps do not fit. */
static void recompute_full(struct ema_flownet *net)
{
	int unfrozen = 0;

	for (int r = 0; r < net->n_res; r++) {
		net->res_left[r] = net->res_cap[r];
		net->res_count[r] = 0;
	}
	for (int i = 0; i < net->n_flows; i++) {
		struct flow *f = &net->flows[i];

		f->rate = 0;
		f->fin_ok = false;
		f->frozen = f->state != FLOW_DATA;
		if (f->frozen)
			continue;
		unfrozen++;
		for (int k = 0; k < f->n_res; k++)
			net->res_count[f->res[k]]++;
	}
	/* Common case first: when every flow has a cap and the caps fit every
	 * resource they cross, max-min fairness gives each flow its cap. One
	 * pass instead of a round per level (prefetch flows spread over an
	 * iteration are capped and usually fit). */
	if (unfrozen > 0) {
		bool fits = true;

		for (int i = 0; i < net->n_flows && fits; i++) {
			const struct flow *f = &net->flows[i];

			if (f->frozen)
				continue;
			if (!isfinite(f->cap)) {
				fits = false;
				break;
			}
			for (int k = 0; k < f->n_res; k++)
				net->res_left[f->res[k]] -= f->cap;
		}
		for (int r = 0; r < net->n_res && fits; r++)
			if (net->res_left[r] < -1e-9 * net->res_cap[r])
				fits = false;
		if (fits) {
			for (int i = 0; i < net->n_flows; i++)
				if (!net->flows[i].frozen)
					net->flows[i].rate = net->flows[i].cap;
			unfrozen = 0;
		} else {
			for (int r = 0; r < net->n_res; r++)
				net->res_left[r] = net->res_cap[r];
		}
	}
	/* The rounds visit only the unfrozen flows and the resources that
	 * still count some (a 72-GPU switch has 288 resources, most idle),
	 * each list in its order of the full arrays, so that every minimum
	 * and every subtraction is the one a pass over everything makes. */
	if (unfrozen > 0 && prepare_rounds(net) != 0) {
		recompute_rounds_plain(net, unfrozen);
		sum_hbm(net);
		return;
	}
	{
		int next = 0; /* the first of live not yet frozen by its cap */

		if (unfrozen > 0)
			heap_build(net);
		while (unfrozen > 0) {
			double level = INFINITY, thresh;
			int n_sat = 0, n_fresh = 0;

			if (net->n_heap > 0)
				level = net->share[net->heap[0]];
			while (next < net->n_live && net->flows[net->live[next]].frozen)
				next++;
			if (next < net->n_live) {
				double x = net->flows[net->live[next]].cap;

				level = x < level ? x : level;
			}
			if (!isfinite(level))
				level = 0; /* unreachable: every flow has a resource or a cap */
			thresh = level * (1 + 1e-12);
			/* Freeze, against the shares before this round, every flow
			 * at its cap (a prefix of live) or on a resource saturated at
			 * this level (all its unfrozen flows: taken off the heap) */
			while (net->n_heap > 0 && net->share[net->heap[0]] <= thresh)
				net->sat[n_sat++] = heap_pop(net);
			for (int j = next; j < net->n_live; j++) {
				struct flow *f = &net->flows[net->live[j]];

				if (!(f->cap <= thresh))
					break;
				if (!f->frozen) {
					f->frozen = true;
					f->fresh = true;
					f->rate = level;
				}
			}
			for (int j = 0; j < n_sat; j++) {
				int r = net->sat[j];

				for (int q = net->res_start[r]; q < net->res_start[r + 1]; q++) {
					struct flow *f = &net->flows[net->res_flows[q]];

					if (!f->frozen) {
						f->frozen = true;
						f->fresh = true;
						f->rate = level;
					}
				}
			}
			/* each resource loses `level` once per flow frozen on it, in
			 * any order (the same subtraction each time); the heap takes
			 * the new shares of those it still holds */
			for (int j = next; j < net->n_live; j++) {
				struct flow *f = &net->flows[net->live[j]];

				if (!(f->cap <= thresh))
					break;
				n_fresh += settle(net, f, level);
			}
			for (int j = 0; j < n_sat; j++) {
				int r = net->sat[j];

				for (int q = net->res_start[r]; q < net->res_start[r + 1]; q++)
					n_fresh += settle(net, &net->flows[net->res_flows[q]], level);
			}
			unfrozen -= n_fresh;
		}
	}
	sum_hbm(net);
}

/* A flow's rate in its GPUs' HBM traffic, added after the flows before
 * it in start order. */
static inline void add_hbm(struct ema_flownet *net, const struct flow *f)
{
	if (f->src >= 0)
		net->hbm_out[f->src] += f->rate;
	if (f->dst >= 0 && !f->to_sm)
		net->hbm_in[f->dst] += f->rate;
}

static void mark_dirty(struct ema_flownet *net, const struct flow *f)
{
	for (int k = 0; k < f->n_res; k++) {
		int r = f->res[k];

		if (!net->res_dirty[r]) {
			net->res_dirty[r] = true;
			net->dirty[net->n_dirty++] = r;
		}
	}
}

static void set_over(struct ema_flownet *net, int r)
{
	bool o = over(net->res_fit[r], net->res_cap[r]);

	if (o != net->res_over[r]) {
		net->res_over[r] = o;
		net->n_over += o ? 1 : -1;
	}
}

/* Sums the marked resources again in start order. */
static void refit_dirty(struct ema_flownet *net)
{
	if (net->n_dirty == 0)
		return;
	for (int j = 0; j < net->n_dirty; j++)
		net->res_fit[net->dirty[j]] = net->res_cap[net->dirty[j]];
	for (int i = 0; i < net->n_flows; i++) {
		const struct flow *f = &net->flows[i];

		if (f->state != FLOW_DATA)
			continue;
		for (int k = 0; k < f->n_res; k++)
			if (net->res_dirty[f->res[k]])
				net->res_fit[f->res[k]] -= f->cap;
	}
	for (int j = 0; j < net->n_dirty; j++) {
		net->res_dirty[net->dirty[j]] = false;
		set_over(net, net->dirty[j]);
	}
	net->n_dirty = 0;
}

/* The moving flows changed: appended (the one flow that started moving,
 * last in start order, and nothing else changed) or some resources were
 * marked dirty. Leaves the rates and HBM sums of recompute_full. */
static void update_rates(struct ema_flownet *net, struct flow *appended)
{
	net->generation++;
	if (appended != NULL) {
		for (int k = 0; k < appended->n_res; k++) {
			net->res_fit[appended->res[k]] -= appended->cap;
			set_over(net, appended->res[k]);
		}
	}
	refit_dirty(net);
	if (net->n_uncapped > 0 || net->n_over > 0) {
		recompute_full(net);
		return;
	}
	/* An appended flow only adds caps: the caps fitted before it too, so
	 * every other flow is at its cap already. */
	if (appended != NULL) {
		appended->rate = appended->cap;
		add_hbm(net, appended);
		return;
	}
	/* sum_hbm, in the same pass that sets the rates */
	for (int g = 0; g < net->n; g++)
		net->hbm_out[g] = net->hbm_in[g] = 0;
	for (int i = 0; i < net->n_flows; i++) {
		struct flow *f = &net->flows[i];

		if (f->state != FLOW_DATA)
			continue;
		if (f->rate != f->cap) {
			f->rate = f->cap;
			f->fin_ok = false;
		}
		add_hbm(net, f);
	}
}

/* A flow starts moving data: its caps join the fit test. */
static void data_enter(struct ema_flownet *net, const struct flow *f)
{
	if (!isfinite(f->cap))
		net->n_uncapped++;
}

/* A flow that got its engine (or needs none) begins its latency phase. */
static void flow_begin(struct ema_flownet *net, struct flow *f, int64_t now)
{
	f->lat_end = ema_time_after(now, f->latency_ns);
	f->last = now;
	f->fin_ok = false;
	f->state = f->latency_ns > 0 ? FLOW_LATENCY : FLOW_DATA;
	if (f->state == FLOW_DATA)
		data_enter(net, f);
}

int ema_flownet_start_params(struct ema_flownet *net, int64_t now_ns,
			     const struct ema_flow_params *p, uint64_t tag,
			     uint64_t *id, struct ema_error *err)
{
	struct flow *f;
	int s = p->src, d = p->dst;

	if (s < EMA_HOST || s >= net->n || d < EMA_HOST || d >= net->n ||
	    (s == EMA_HOST && d == EMA_HOST))
		return ema_error_set(err, EMA_ERR_INPUT,
				     "flownet: transfer %d -> %d: expected GPUs 0..%d or host (-1), not both host",
				     s, d, net->n - 1);
	if (now_ns < net->now)
		return ema_error_set(err, EMA_ERR_INTERNAL,
				     "flownet: start at %lld ns, before the net's time %lld ns",
				     (long long)now_ns, (long long)net->now);
	if (p->latency_ns < 0)
		return ema_error_set(err, EMA_ERR_INPUT, "flownet: negative latency %lld ns",
				     (long long)p->latency_ns);
	if (s == d && !(p->cap_gbps > 0))
		return ema_error_set(err, EMA_ERR_INPUT,
				     "flownet: a copy within GPU %d needs a rate cap", s);
	if (net->n_flows == net->cap_flows) {
		int cap = net->cap_flows ? 2 * net->cap_flows : 16;
		struct flow *nf = realloc(net->flows, (size_t)cap * sizeof *nf);

		if (nf == NULL)
			return ema_error_set(err, EMA_ERR_NOMEM, "flownet: out of memory");
		net->flows = nf;
		net->cap_flows = cap;
	}
	progress(net, now_ns);
	f = &net->flows[net->n_flows++];
	/* Every member set one by one: a memset (or a compound literal,
	 * which gcc clears the same way) was most of a start. */
	f->id = net->next_id++;
	f->tag = tag;
	f->src = s;
	f->dst = d;
	f->res[0] = f->res[1] = -1;
	f->n_res = 0;
	f->engine_gpu = -1;
	f->state = FLOW_QUEUED;
	f->latency_ns = p->latency_ns;
	f->lat_end = 0;
	f->last = 0;
	f->remaining = (double)p->bytes;
	f->cap = p->cap_gbps > 0 ? p->cap_gbps : INFINITY;
	f->rate = 0;
	f->to_sm = p->to_sm;
	f->fin = 0;
	f->fin_ok = false;
	f->frozen = false;
	f->fresh = false;
	if (s == EMA_HOST) {
		f->res[f->n_res++] = res_host_down(net, d);
	} else if (d == EMA_HOST) {
		f->res[f->n_res++] = res_host_up(net, s);
	} else if (s != d) {
		if (net->is_switch) {
			f->res[f->n_res++] = res_egress(net, s);
			f->res[f->n_res++] = res_ingress(net, d);
		} else {
			f->res[f->n_res++] = res_pair(net, s, d);
		}
	}
	if (p->copy_engine) {
		/* The destination pulls; a host transfer uses its GPU's engine. */
		f->engine_gpu = d != EMA_HOST ? d : s;
		if (net->engines_busy[f->engine_gpu] >= net->hw.copy_engines) {
			f->state = FLOW_QUEUED;
			f->last = now_ns;
		} else {
			net->engines_busy[f->engine_gpu]++;
			flow_begin(net, f, now_ns);
		}
	} else {
		flow_begin(net, f, now_ns);
	}
	if (s >= 0)
		net->flows_at[s]++;
	if (d >= 0 && d != s)
		net->flows_at[d]++;
	net->next_ok = false;
	if (id)
		*id = f->id;
	/* A flow still in its latency or queue leaves the moving set, and so
	 * every rate, as it was. */
	if (f->state == FLOW_DATA)
		update_rates(net, f);
	else
		net->generation++;
	return EMA_OK;
}

int ema_flownet_start(struct ema_flownet *net, int64_t now_ns, int src, int dst,
		      uint64_t bytes, int n_pages, enum ema_copy_method method,
		      uint64_t tag, uint64_t *id, struct ema_error *err)
{
	struct ema_flow_params p;
	int rc = ema_flownet_params(net, src, dst, bytes, n_pages, method, &p, err);

	if (rc != EMA_OK)
		return rc;
	return ema_flownet_start_params(net, now_ns, &p, tag, id, err);
}

/* Handles every phase change due at t; the finished flows go to net->done. */
static int step_at(struct ema_flownet *net, int64_t t, struct ema_error *err)
{
	int w = 0;

	progress(net, t);
	net->n_done = 0;
	for (int i = 0; i < net->n_flows; i++) {
		struct flow *f = &net->flows[i];
		bool finished = false;

		if (f->state == FLOW_LATENCY && f->lat_end <= t) {
			f->state = FLOW_DATA;
			f->last = t;
			f->fin_ok = false;
			data_enter(net, f);
			mark_dirty(net, f);
		}
		if (f->state == FLOW_DATA && finish_at(f) <= t)
			finished = true;
		if (!finished) {
			if (w != i)
				net->flows[w] = *f;
			w++;
			continue;
		}
		if (net->n_done == net->cap_done) {
			int cap = net->cap_done ? 2 * net->cap_done : 16;
			struct done_flow *nd = realloc(net->done, (size_t)cap * sizeof *nd);

			if (nd == NULL)
				return ema_error_set(err, EMA_ERR_NOMEM, "flownet: out of memory");
			net->done = nd;
			net->cap_done = cap;
		}
		net->done[net->n_done].id = f->id;
		net->done[net->n_done++].tag = f->tag;
		if (f->engine_gpu >= 0)
			net->engines_busy[f->engine_gpu]--;
		if (!isfinite(f->cap))
			net->n_uncapped--;
		mark_dirty(net, f);
		if (f->src >= 0)
			net->flows_at[f->src]--;
		if (f->dst >= 0 && f->dst != f->src)
			net->flows_at[f->dst]--;
	}
	net->n_flows = w;
	net->next_ok = false;
	/* Freed engines go to the oldest queued flows of their GPU. */
	for (int i = 0; i < net->n_flows; i++) {
		struct flow *f = &net->flows[i];

		if (f->state == FLOW_QUEUED &&
		    net->engines_busy[f->engine_gpu] < net->hw.copy_engines) {
			net->engines_busy[f->engine_gpu]++;
			flow_begin(net, f, t);
			if (f->state == FLOW_DATA)
				mark_dirty(net, f);
		}
	}
	update_rates(net, NULL);
	return EMA_OK;
}

/* Each flow leaves as step_at lets a finished one leave (its engine,
 * its resources, its GPUs' counts), the order of the rest kept, and a
 * freed engine goes to the oldest queued flow of its GPU; the rates are
 * summed again once for all of them (an iteration ends several flows at
 * once, one per lender). */
int ema_flownet_cancel(struct ema_flownet *net, int64_t now_ns, const uint64_t *ids, int n_ids,
		       double *left_bytes, struct ema_error *err)
{
	int w = 0, n_gone = 0;
	bool moving = false, freed = false;

	if (left_bytes != NULL)
		*left_bytes = 0;
	if (net->in_advance)
		return ema_error_set(err, EMA_ERR_INTERNAL,
				     "flownet: cancel called from a completion callback");
	if (now_ns < net->now)
		return ema_error_set(err, EMA_ERR_INTERNAL,
				     "flownet: cancel at %lld ns, before the net's time %lld ns",
				     (long long)now_ns, (long long)net->now);
	if (n_ids <= 0)
		return 0;
	progress(net, now_ns);
	for (int i = 0; i < net->n_flows; i++) {
		struct flow *f = &net->flows[i];
		bool gone = false;

		for (int k = 0; k < n_ids && !gone; k++)
			gone = ids[k] == f->id;
		if (!gone) {
			if (w != i)
				net->flows[w] = *f;
			w++;
			continue;
		}
		n_gone++;
		if (left_bytes != NULL)
			*left_bytes += f->remaining;
		if (f->state != FLOW_QUEUED && f->engine_gpu >= 0) {
			net->engines_busy[f->engine_gpu]--;
			freed = true;
		}
		if (f->state == FLOW_DATA) {
			if (!isfinite(f->cap))
				net->n_uncapped--;
			mark_dirty(net, f);
			moving = true;
		}
		if (f->src >= 0)
			net->flows_at[f->src]--;
		if (f->dst >= 0 && f->dst != f->src)
			net->flows_at[f->dst]--;
	}
	if (n_gone == 0)
		return 0;
	net->n_flows = w;
	net->next_ok = false;
	for (int i = 0; freed && i < net->n_flows; i++) {
		struct flow *q = &net->flows[i];

		if (q->state == FLOW_QUEUED &&
		    net->engines_busy[q->engine_gpu] < net->hw.copy_engines) {
			net->engines_busy[q->engine_gpu]++;
			flow_begin(net, q, now_ns);
			if (q->state == FLOW_DATA) {
				mark_dirty(net, q);
				moving = true;
			}
		}
	}
	if (moving)
		update_rates(net, NULL);
	else
		net->generation++;
	return n_gone;
}

int ema_flownet_advance(struct ema_flownet *net, int64_t now_ns,
			ema_flownet_done_fn fn, void *arg, struct ema_error *err)
{
	int rc = EMA_OK;

	if (net->in_advance)
		return ema_error_set(err, EMA_ERR_INTERNAL,
				     "flownet: advance called from a completion callback");
	if (now_ns < net->now)
		return ema_error_set(err, EMA_ERR_INTERNAL,
				     "flownet: advance to %lld ns, before the net's time %lld ns",
				     (long long)now_ns, (long long)net->now);
	net->in_advance = true;
	for (;;) {
		int64_t t = ema_flownet_next_event_time(net);
		int n_done;

		if (t > now_ns)
			break;
		rc = step_at(net, t, err);
		if (rc != EMA_OK)
			break;
		/* Callbacks may start flows, which touches net->flows but not
		 * net->done; a second finished batch waits for the next loop. */
		n_done = net->n_done;
		for (int i = 0; i < n_done && fn != NULL; i++)
			fn(arg, net->done[i].id, net->done[i].tag, t);
	}
	if (rc == EMA_OK)
		progress(net, now_ns);
	net->in_advance = false;
	return rc;
}

double ema_flownet_rate_gbps(const struct ema_flownet *net, uint64_t id)
{
	for (int i = 0; i < net->n_flows; i++)
		if (net->flows[i].id == id)
			return net->flows[i].state == FLOW_DATA ? net->flows[i].rate : 0.0;
	return -1.0;
}

double ema_flownet_hbm_out_gbps(const struct ema_flownet *net, int gpu)
{
	return gpu >= 0 && gpu < net->n ? net->hbm_out[gpu] : 0.0;
}

double ema_flownet_hbm_in_gbps(const struct ema_flownet *net, int gpu)
{
	return gpu >= 0 && gpu < net->n ? net->hbm_in[gpu] : 0.0;
}

const double *ema_flownet_hbm_out_array(const struct ema_flownet *net)
{
	return net->hbm_out;
}

const double *ema_flownet_hbm_in_array(const struct ema_flownet *net)
{
	return net->hbm_in;
}

int ema_flownet_active(const struct ema_flownet *net)
{
	return net->n_flows;
}

int ema_flownet_flows_at(const struct ema_flownet *net, int gpu)
{
	int n = 0;

	if (gpu >= 0 && gpu < net->n)
		return net->flows_at[gpu];

	for (int i = 0; i < net->n_flows; i++)
		n += net->flows[i].src == gpu || net->flows[i].dst == gpu;
	return n;
}

int ema_flownet_queued(const struct ema_flownet *net)
{
	int q = 0;

	for (int i = 0; i < net->n_flows; i++)
		q += net->flows[i].state == FLOW_QUEUED;
	return q;
}

void ema_flownet_describe_late(const struct ema_flownet *net, char *buf, size_t size)
{
	const struct ema_hw_profile *hw = &net->hw;

	for (int i = 0; i < net->n_flows; i++) {
		const struct flow *f = &net->flows[i];
		char src[16], dst[16], t[32];
		const char *key;

		if (!((f->state == FLOW_LATENCY && f->lat_end > EMA_TIME_MAX_NS) ||
		      (f->state == FLOW_DATA && flow_finish(f) > EMA_TIME_MAX_NS)))
			continue;
		if (f->src == EMA_HOST)
			snprintf(src, sizeof src, "host");
		else
			snprintf(src, sizeof src, "GPU %d", f->src);
		if (f->dst == EMA_HOST)
			snprintf(dst, sizeof dst, "host");
		else
			snprintf(dst, sizeof dst, "GPU %d", f->dst);
		key = f->src == EMA_HOST || f->dst == EMA_HOST ? "hardware.host_link_gbps" :
		      f->src == f->dst ? "hardware.hbm_read_gbps" : "hardware.link_gbps";
		if (f->state == FLOW_LATENCY)
			snprintf(buf, size, "a transfer from %s to %s would wait %s before "
				 "its data moves (hardware.copy_fixed_us, copy_call_us, batch_page_us, "
				 "and the copy rates of copy_curve and %s)", src, dst,
				 ema_time_text(t, sizeof t, (double)f->latency_ns), key);
		else
			snprintf(buf, size, "a transfer from %s to %s has %.3g bytes left to move at "
				 "%.3g GB/s (%s = %.3g GB/s; a copy's own rate: gather_gbps, copy_curve, "
				 "copy_call_us, batch_page_us, pull_share_under_load)", src, dst,
				 f->remaining, f->rate, key,
				 f->src == EMA_HOST || f->dst == EMA_HOST ? hw->host_link_gbps :
				 f->src == f->dst ? hw->hbm_read_gbps : hw->link_gbps);
		return;
	}
	snprintf(buf, size, "a transfer would end past it");
}

uint64_t ema_flownet_generation(const struct ema_flownet *net)
{
	return net->generation;
}

/* Bitwise, so that -0 against 0 or a last-bit difference counts. */
static bool same_double(double a, double b)
{
	return memcmp(&a, &b, sizeof a) == 0;
}

int ema_flownet_selfcheck(struct ema_flownet *net)
{
	double out[EMA_MAX_GPUS], in[EMA_MAX_GPUS];
	double *rate;
	int bad = 0, n_over = 0, n_uncapped = 0;

	if (net->n_dirty != 0)
		bad++;
	for (int r = 0; r < net->n_res; r++) {
		double left = net->res_cap[r];

		for (int i = 0; i < net->n_flows; i++) {
			const struct flow *f = &net->flows[i];

			for (int k = 0; k < f->n_res && f->state == FLOW_DATA; k++)
				if (f->res[k] == r)
					left -= f->cap;
		}
		bad += !same_double(left, net->res_fit[r]);
		bad += over(left, net->res_cap[r]) != net->res_over[r];
		n_over += net->res_over[r];
	}
	bad += n_over != net->n_over;
	for (int i = 0; i < net->n_flows; i++)
		n_uncapped += net->flows[i].state == FLOW_DATA && !isfinite(net->flows[i].cap);
	bad += n_uncapped != net->n_uncapped;
	for (int g = 0; g < net->n; g++) {
		int c = 0;

		for (int i = 0; i < net->n_flows; i++)
			c += net->flows[i].src == g || net->flows[i].dst == g;
		bad += c != net->flows_at[g];
	}
	for (int i = 0; i < net->n_flows; i++) {
		const struct flow *f = &net->flows[i];

		bad += f->state == FLOW_DATA && f->fin_ok && f->fin != flow_finish(f);
		bad += f->state == FLOW_DATA && f->last != net->now;
	}
	if (net->next_ok)
		bad += scan_next_event(net) != net->next_ev;

	/* The rates and HBM sums against a full pass, put back afterwards. */
	rate = malloc(((size_t)net->n_flows + 1) * sizeof *rate);
	if (rate == NULL)
		return -1;
	for (int i = 0; i < net->n_flows; i++)
		rate[i] = net->flows[i].rate;
	memcpy(out, net->hbm_out, (size_t)net->n * sizeof *out);
	memcpy(in, net->hbm_in, (size_t)net->n * sizeof *in);
	recompute_full(net);
	for (int i = 0; i < net->n_flows; i++) {
		bad += !same_double(rate[i], net->flows[i].rate);
		net->flows[i].rate = rate[i];
	}
	for (int g = 0; g < net->n; g++) {
		bad += !same_double(out[g], net->hbm_out[g]) + !same_double(in[g], net->hbm_in[g]);
		net->hbm_out[g] = out[g];
		net->hbm_in[g] = in[g];
	}
	free(rate);
	return bad;
}
