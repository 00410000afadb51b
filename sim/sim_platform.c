/* sim_platform.c: base/platform.h in simulated time. Timers and iteration
 * phases are events in one heap; transfers are flows in the fluid link
 * model, represented in the heap by a single "next flow phase change"
 * event that a generation counter invalidates whenever the flows change.
 *
 * Iterations take the timing model's time (sim/timing.c), slowed by the
 * HBM traffic of transfers through their GPU as it is when the iteration
 * starts (an approximation: a transfer that starts or ends mid-iteration
 * does not change it):
 *   memory-bound time  x (1 + interference_lender x out / hbm_read_gbps
 *                          + interference_borrower x in / hbm_read_gbps)
 *   compute-bound time x (1 + interference_compute x (in + out) / link_gbps)
 * where out and in are the GB/s leaving and entering the GPU's HBM (in
 * includes the iteration's own prefetch, spread over its busy time, each
 * lender at most at its own link's rate; in-place reads enter no HBM); the
 * busy time is the larger of the two. In place, only the local reads slow
 * down: max(memory x f, link) / inplace_overlap_efficiency (timing.h).
 * Iterations do not slow transfers.
 *
 * Remote KV with prefetch_depth d > 0 is pipelined over G = layer_groups
 * groups. The fixed per-iteration overhead (scheduling, launches) comes
 * first; then group g computes for (busy time) / G, once group g - 1 is
 * done and group g's remote KV has arrived. Group g's KV (1/G of each
 * lender's bytes) is a flow started when group g - d starts computing, so
 * d groups are staged ahead of the one computing; groups g < d start at
 * the iteration start and overlap the overhead. stall_ns sums the time
 * compute waited. Worked example (the test's): overhead 20 us, 4 groups of
 * 10 us, depth 1, each group's KV 15 us away: group 0 runs 20-30 us (its KV
 * came at 15), group 1's KV starts at 20 and lands at 35, so group 1 runs
 * 35-45, group 2 50-60, group 3 65-75: end 75 us, stall 15 us.
 *
 * With prefetch_depth == 0 (remote_direct, ema in place) the cost model
 * charges the in-place read overlapped with the local reads, and each
 * lender's bytes also occupy the link as an SM flow (no copy engine, into
 * the SMs rather than HBM) capped to spread them over the iteration, so
 * they take their share from other transfers; the iteration's time is
 * set when it starts, at the links' rates then, and where contention
 * slows the flow it ends with the flow's last byte instead (iter_done_event;
 * the wait counted in ema_link_stats.spread_wait_ns). The same holds for
 * the flows of the prefetch's fast path below.
 *
 * Link statistics count a transfer's bytes when it starts; remote KV of
 * iterations counts as EMA_XFER_PREFETCH.
 *
 * Leaps (the leap op): k iterations of one GPU back to back are one entry
 * beside the heap instead of k events, with every iteration's end time
 * known. The run loop dispatches them in the order the k events would
 * have had: among events of the same time, the one pushed earlier first
 * (an iteration's event is pushed when the previous one ends; the first
 * when the leap was made, at sequence number seq0), so every event keeps
 * its push time. An iteration of a leap that would end at the very time
 * another event is dispatched becomes the leap's end (the leap is cut
 * there), so that anything that happens at that time happens to a real
 * callback, in its place. A leap's iterations are timed at the rates of
 * the transfers through its GPU when it was made; an event that changes
 * those rates (a borrower's reads from a lender start or end) leaves the
 * iterations already begun as they are and has the later ones timed
 * again, lazily: before each dispatch, only as far as the heap's next
 * event, since no rate changes before it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timing.h"
#include "eventq.h"
#include "simtime.h"
#include "step_cost.h"
#include "flownet.h"
#include "platform.h"
#include "sim.h"
#include "gpuset.h"

enum tag_kind { TAG_XFER = 1, TAG_GROUP, TAG_INPLACE, TAG_SPEC };

#define TAG(kind, gpu, idx) (((uint64_t)(kind) << 56) | ((uint64_t)(gpu) << 40) | \
			     (uint64_t)(idx))
#define TAG_KIND(t) ((int)((t) >> 56))
#define TAG_GPU(t) ((int)(((t) >> 40) & 0xffff))
#define TAG_IDX(t) ((int64_t)((t) & 0xffffffffffULL))

struct sim;

struct xfer {
	ema_transfer_fn fn;
	void *arg;
	int next_free;
};

/* A flow event's ticket: stale once the generation moved on. */
struct flow_tok {
	struct sim *p;
	uint64_t gen;
	struct flow_tok *next;
};

#define TOK_CHUNK 64
struct tok_chunk {
	struct tok_chunk *next;
	struct flow_tok tok[TOK_CHUNK];
};

struct lender {
	int gpu;
	uint64_t bytes;
	int n_pages;
};

struct iter_slot {
	struct sim *p;
	int gpu;
	bool busy;
	ema_iteration_fn fn;
	void *arg;
	struct ema_iteration_result res;
	/* pipeline of a prefetching iteration */
	int groups, depth;
	int64_t busy_ns;
	int next_group;       /* group computing or next to compute */
	bool in_overhead, computing, waiting;
	int64_t wait_since;
	int *pending;         /* flows still in flight per group */
	int cap_pending;
	int n_remote;
	struct lender remote[EMA_MAX_GPUS];
	enum ema_copy_method method;
	/* Cross-iteration prefetch: while its last `depth` groups compute,
	 * an iteration already fetches the first `depth` groups of the next
	 * one, assuming the same remote KV (decode batches change little).
	 * spec_gen tells these flows from those of an earlier speculation. */
	uint32_t spec_gen;
	int spec_groups;      /* next iteration's groups 0.. fetched or in flight */
	int *spec_inflight;   /* per group, flows of the current speculation */
	bool spec_adopted;    /* the running iteration counts them in pending */
	/* ... those of its first spec_adopted_n groups only: an iteration
	 * whose window is shallower than the last one's speculation starts
	 * the later groups' flows afresh, and their speculated ones are
	 * wasted (they just finish) */
	int spec_adopted_n;
	uint64_t spec_bytes[EMA_MAX_GPUS]; /* per group, by lender GPU */
	bool streaming;       /* the last iteration prefetched on the fast path */
	/* the flows of its KV spread over the iteration (in place, or the
	 * prefetch's fast path), ended with it (iter_done_event) */
	uint64_t spread_id[3 * EMA_MAX_GPUS];
	int n_spread;
	/* of those, the flows still in flight, and whether the step's own
	 * time has passed (it then ends with the last of them, since when) */
	int spread_left;
	bool spread_wait;
	int64_t spread_wait_since;
	/* remote attention: the GB/s of its lenders' HBM this step's
	 * attention takes while it runs (given back when it ends) */
	double attn_gbps[EMA_MAX_GPUS];
	bool attn_any;
	/* why its end was scheduled past the limit of time (iter_late) */
	char late[EMA_ERROR_MSG_MAX / 2 + 256];
};

/* A leap of iterations on one GPU (see the top of the file). */
struct leap {
	bool active;
	int m;                /* iterations until its end: k, or fewer once cut */
	int cur;              /* first iteration that ends at or after the last dispatch */
	uint64_t seq0;        /* where its first iteration's event stood among pushes */
	int64_t *end;         /* end[0]: start of the first; end[j]: end of the j-th (the caller's) */
	int valid;            /* end[0 .. valid] timed at the rates they start at; valid <= m */
	/* timing its steps again (ema_leap_retime): step j is tmpl (its
	 * fields before remote[]) with steps[j]'s figures */
	const struct ema_leap_step *steps;
	struct ema_iteration tmpl;
	int64_t stop_ns, limit_ns;
	double out_gbps, in_gbps; /* the GPU's transfer rates its steps after the first were timed at */
	double attn_gbps;         /* ... and the remote attention it ran for borrowers */
	ema_iteration_fn fn;
	void *arg;
};

struct sim {
	struct ema_platform base;
	int log_run;                     /* EMA_ITER_LOG's run number */
	struct ema_platform_params params;
	const struct ema_hw_profile *hw;
	struct ema_eventq q;
	struct ema_flownet *net;
	int64_t now;
	uint64_t n_events;
	bool stopped, stale;
	int fail;
	struct ema_error err;  /* first failure inside an event */
	struct ema_error last; /* last failed op */
	struct ema_link_stats stats;
	struct xfer *xfers;
	int n_xfers, cap_xfers, free_xfer;
	uint64_t flow_gen;
	uint64_t rates_gen;   /* the flownet's generation leaps_check_rates last saw */
	int64_t flow_ev_time;
	struct flow_tok *free_toks;
	struct tok_chunk *chunks;
	struct iter_slot iters[EMA_MAX_GPUS];
	struct leap leaps[EMA_MAX_GPUS];
	int n_leaps;          /* active ones */
	struct ema_gpuset leap_gpus; /* their GPUs: the run loop visits only them */
	/* iteration_total's interference factors are exactly 1 when no flow
	 * crosses the GPU (they are not with infinite coefficients) */
	bool plain_without_flows;
	/* the flownet's HBM rates by GPU (ema_flownet_hbm_out_array) */
	const double *net_hbm_out, *net_hbm_in;
	/* Remote attention each GPU runs for borrowers now, GB/s of its HBM
	 * (the sum over the borrowers' steps in flight): its own steps that
	 * start meanwhile take attention_lender_ms_per_gb longer per GB per
	 * second (attn_factor). attn_gen counts its changes, for leaps. */
	double attn_load[EMA_MAX_GPUS];
	uint64_t attn_gen, attn_gen_seen;
};

static struct sim *to_sim(struct ema_platform *pl)
{
	return (struct sim *)pl;
}

static int op_fail(struct sim *p, int rc)
{
	if (p->err.code != rc || p->err.msg[0] == '\0')
		ema_error_set(&p->err, rc, "sim: %s", ema_status_str(rc));
	p->last = p->err;
	return rc;
}

/* A failure inside an event handler stops the run, which reports it. */
static void event_fail(struct sim *p, int rc)
{
	if (p->fail == 0) {
		p->fail = rc;
		p->last = p->err;
	}
	p->stopped = true;
}

static struct flow_tok *tok_get(struct sim *p)
{
	struct flow_tok *t = p->free_toks;

	if (t == NULL) {
		struct tok_chunk *c = malloc(sizeof *c);

		if (c == NULL)
			return NULL;
		c->next = p->chunks;
		p->chunks = c;
		for (int i = TOK_CHUNK - 1; i >= 0; i--) {
			c->tok[i].next = p->free_toks;
			p->free_toks = &c->tok[i];
		}
		t = p->free_toks;
	}
	p->free_toks = t->next;
	return t;
}

static void tok_put(struct sim *p, struct flow_tok *t)
{
	t->next = p->free_toks;
	p->free_toks = t;
}

static void flow_event(void *arg, int64_t now);

/* Keeps exactly one live event at the flownet's next phase change. */
static int resched(struct sim *p)
{
	int64_t t = ema_flownet_next_event_time(p->net);
	struct flow_tok *tok;

	if (t == p->flow_ev_time)
		return EMA_OK;
	p->flow_gen++;
	p->flow_ev_time = t;
	if (t == INT64_MAX)
		return EMA_OK;
	tok = tok_get(p);
	if (tok == NULL)
		return ema_error_set(&p->err, EMA_ERR_NOMEM, "sim: out of memory");
	tok->p = p;
	tok->gen = p->flow_gen;
	if (ema_eventq_push(&p->q, t, flow_event, tok) != EMA_OK) {
		tok_put(p, tok);
		return ema_error_set(&p->err, EMA_ERR_NOMEM, "sim: out of memory");
	}
	return EMA_OK;
}

static void count_bytes(struct sim *p, int src, int dst, uint64_t bytes,
			enum ema_transfer_purpose purpose)
{
	p->stats.bytes[src + 1][dst + 1] += bytes;
	p->stats.bytes_by_purpose[purpose] += bytes;
}

/* ---- iterations ------------------------------------------------------ */

static void iter_finish(struct iter_slot *s, int64_t now)
{
	struct ema_iteration_result r = s->res;

	if (s->attn_any) {
		struct sim *p = s->p;

		for (int g = 0; g < p->hw->n_gpus; g++)
			if (s->attn_gbps[g] > 0) {
				p->attn_load[g] -= s->attn_gbps[g];
				if (p->attn_load[g] < 1e-9)
					p->attn_load[g] = 0; /* (no residue of rounding) */
				s->attn_gbps[g] = 0;
			}
		s->attn_any = false;
		p->attn_gen++;
	}
	r.end_ns = now;
	s->busy = false;
	s->fn(s->arg, &r);
}

/* What a GPU's own step takes longer for the remote attention it runs
 * for borrowers meanwhile (its time shares the GPU): 1 + GB/s read for
 * them x the seconds each GB costs it. */
static inline double attn_factor(const struct sim *p, int g)
{
	return p->attn_load[g] > 0 ? 1 + p->attn_load[g] * ema_cost_attention_lender_s_per_gb(p->hw)
				   : 1.0;
}

/* The end of an iteration's own time, whose remote KV was spread over it
 * (in place, or the prefetch's fast path): its time was set when it
 * began, at the links' rates then, with those bytes read by its end.
 * Where contention slowed their flows since, the step waits for the last
 * of them (on_flow_done ends it), as a real step waits for its reads:
 * until 2026-12-04 the bytes left were cut instead, and the step ended on
 * time with its KV unread (at most a trace on the shipped scenarios, but
 * 40% of a step's remote bytes where many borrowers share a port). The
 * wait counts as stall time, and in ema_link_stats.spread_wait_ns. */
static void iter_done_event(void *arg, int64_t now)
{
	struct iter_slot *s = arg;

	if (s->spread_left > 0) {
		s->spread_wait = true;
		s->spread_wait_since = now;
		return;
	}
	s->n_spread = 0;
	iter_finish(s, now);
}

/* busy_ns x (g + 1) / groups - busy_ns x g / groups, without forming
 * the products (busy_ns may be near the limit of time, groups 1024):
 * with busy_ns = q x groups + r, each quotient is q x (g or g + 1) plus
 * r's share, so their difference is exactly this. */
static int64_t group_ns(const struct iter_slot *s, int g)
{
	int64_t q = s->busy_ns / s->groups, r = s->busy_ns % s->groups;

	return q + r * (g + 1) / s->groups - r * g / s->groups;
}

/* A prefetch flow: the method's cost, at the share of its rate a pull
 * keeps while the borrower's iteration reads its HBM (measured by
 * `ema calibrate`: the copy and the iteration compete for HBM, and the
 * gather kernel also for SMs). */
static int start_prefetch_flow(struct iter_slot *s, int src, uint64_t bytes, int pages,
			       uint64_t tag, int64_t now)
{
	struct sim *p = s->p;
	double share = p->hw->pull_share_under_load;
	struct ema_flow_params fp;
	int rc;

	rc = ema_flownet_params(p->net, src, s->gpu, bytes, pages, s->method, &fp, &p->err);
	if (rc != EMA_OK)
		return rc;
	if (share > 0 && share < 1)
		fp.cap_gbps = (fp.cap_gbps > 0 ? fp.cap_gbps : p->hw->link_gbps) * share;
	return ema_flownet_start_params(p->net, now, &fp, tag, NULL, &p->err);
}

static int start_group_flows(struct iter_slot *s, int g, int64_t now)
{
	struct sim *p = s->p;
	int G = s->groups;

	for (int i = 0; i < s->n_remote; i++) {
		const struct lender *l = &s->remote[i];
		uint64_t b = l->bytes / (uint64_t)G;
		int rc;

		if (g == G - 1)
			b = l->bytes - b * (uint64_t)(G - 1);
		if (b == 0)
			continue;
		/* group g's slice of every remote page, a piece each (the
		 * layers of a page's tokens lie together, and the hw backend
		 * copies one piece per page and group): the copy engines pay
		 * their per-page cost n_pages times a group */
		rc = start_prefetch_flow(s, l->gpu, b, l->n_pages > 0 ? l->n_pages : 1,
					 TAG(TAG_GROUP, s->gpu, g), now);
		if (rc != EMA_OK)
			return rc;
		s->pending[g]++;
		count_bytes(p, l->gpu, s->gpu, b, EMA_XFER_PREFETCH);
	}
	return EMA_OK;
}

/* Fetches group j of the next iteration ahead of time (see iter_slot). */
static int start_spec_flows(struct iter_slot *s, int j, int64_t now)
{
	struct sim *p = s->p;
	int G = s->groups;

	if (j == 0) {
		/* a new speculation: flows of an older one no longer count */
		s->spec_gen++;
		s->spec_groups = 0;
		s->spec_adopted = false;
		memset(s->spec_bytes, 0, sizeof s->spec_bytes);
		memset(s->spec_inflight, 0, (size_t)s->cap_pending * sizeof *s->spec_inflight);
	}
	for (int i = 0; i < s->n_remote; i++) {
		const struct lender *l = &s->remote[i];
		uint64_t b = l->bytes / (uint64_t)G;
		int pages = l->n_pages > 0 ? l->n_pages : 1; /* a slice of each, as above */
		int rc;

		if (b == 0)
			continue;
		rc = start_prefetch_flow(s, l->gpu, b, pages,
					 TAG(TAG_SPEC, s->gpu, ((uint64_t)(s->spec_gen & 0xffffff) << 16) | (uint64_t)j),
					 now);
		if (rc != EMA_OK)
			return rc;
		s->spec_inflight[j]++;
		s->spec_bytes[l->gpu] = b;
		count_bytes(p, l->gpu, s->gpu, b, EMA_XFER_PREFETCH);
	}
	if (j + 1 > s->spec_groups)
		s->spec_groups = j + 1;
	return EMA_OK;
}

/* The first groups of a new iteration: taken over from the speculation
 * where there was one (only bytes beyond what was speculated still move),
 * else fetched now. */
static int first_group_flows(struct iter_slot *s, int g, int64_t now)
{
	struct sim *p = s->p;
	int G = s->groups;

	if (g >= s->spec_groups)
		return start_group_flows(s, g, now);
	s->pending[g] = s->spec_inflight[g];
	for (int i = 0; i < s->n_remote; i++) {
		const struct lender *l = &s->remote[i];
		uint64_t b = l->bytes / (uint64_t)G;
		uint64_t have = s->spec_bytes[l->gpu];
		int rc;

		if (b <= have)
			continue;
		rc = start_prefetch_flow(s, l->gpu, b - have, 1, TAG(TAG_GROUP, s->gpu, g), now);
		if (rc != EMA_OK)
			return rc;
		s->pending[g]++;
		count_bytes(p, l->gpu, s->gpu, b - have, EMA_XFER_PREFETCH);
	}
	return EMA_OK;
}

static void group_done_event(void *arg, int64_t now);

/* Starts the next group if its KV is here; otherwise compute waits. */
static int try_compute(struct iter_slot *s, int64_t now)
{
	struct sim *p = s->p;
	int g = s->next_group;
	int rc;

	if (s->in_overhead || s->computing || g >= s->groups)
		return EMA_OK;
	if (s->pending[g] > 0) {
		if (!s->waiting) {
			s->waiting = true;
			s->wait_since = now;
		}
		return EMA_OK;
	}
	if (s->waiting) {
		s->res.stall_ns += now - s->wait_since;
		s->waiting = false;
	}
	s->computing = true;
	if (s->depth == 0) {
		/* no lookahead: the next group's copy starts when this one ends */
	} else if (g + s->depth < s->groups) {
		rc = start_group_flows(s, g + s->depth, now);
		if (rc != EMA_OK)
			return rc;
	} else if (s->groups >= 2 * s->depth && g + s->depth - s->groups < s->depth) {
		/* only when the first groups have all been computed, so that
		 * no flow of this iteration belongs to the old speculation */
		rc = start_spec_flows(s, g + s->depth - s->groups, now);
		if (rc != EMA_OK)
			return rc;
	}
	if (ema_eventq_push(&p->q, ema_time_after(now, group_ns(s, g)), group_done_event, s) !=
	    EMA_OK)
		return ema_error_set(&p->err, EMA_ERR_NOMEM, "sim: out of memory");
	return EMA_OK;
}

static void group_done_event(void *arg, int64_t now)
{
	struct iter_slot *s = arg;
	int rc;

	s->computing = false;
	s->next_group++;
	if (s->next_group >= s->groups) {
		iter_done_event(s, now); /* (it waits for its writes to lenders) */
		return;
	}
	rc = EMA_OK;
	if (s->depth == 0)
		rc = start_group_flows(s, s->next_group, now);
	if (rc == EMA_OK)
		rc = try_compute(s, now);
	if (rc == EMA_OK)
		rc = resched(s->p);
	if (rc != EMA_OK)
		event_fail(s->p, rc);
}

static void overhead_done_event(void *arg, int64_t now)
{
	struct iter_slot *s = arg;
	int rc;

	s->in_overhead = false;
	rc = try_compute(s, now);
	if (rc == EMA_OK)
		rc = resched(s->p);
	if (rc != EMA_OK)
		event_fail(s->p, rc);
}

/* One flow of a step's remote KV spread over span_ns (capped at its
 * bytes over the span), which the step waits for (iter_done_event). */
static int start_spread_flow(struct sim *p, struct iter_slot *s, int src, int dst, uint64_t bytes,
			     int64_t span_ns, bool to_sm)
{
	struct ema_flow_params fp = {
		.src = src, .dst = dst, .bytes = bytes, .latency_ns = 0,
		.cap_gbps = (double)bytes / (double)span_ns,
		.copy_engine = false, .to_sm = to_sm,
	};
	int rc = ema_flownet_start_params(p->net, p->now, &fp, TAG(TAG_INPLACE, s->gpu, 0),
					  &s->spread_id[s->n_spread], &p->err);

	if (rc != EMA_OK)
		return rc;
	s->n_spread++;
	s->spread_left++;
	count_bytes(p, src, dst, bytes, EMA_XFER_PREFETCH);
	return EMA_OK;
}

/* The flows of a step's remote KV spread over span_ns: its reads from
 * each lender (reads; in place into the SMs, not written to HBM, or a
 * prefetch's fast path into HBM), and always its writes into each lender
 * (the new tokens' KV, into the lender's HBM). */
static int start_spread_flows(struct sim *p, const struct ema_iteration *it, int64_t span_ns,
			      bool in_place, bool reads)
{
	struct iter_slot *s = &p->iters[it->gpu];

	s->n_spread = 0;
	s->spread_left = 0;
	s->spread_wait = false;
	for (int i = 0; i < it->n_remote && span_ns > 0; i++) {
		int rc = EMA_OK;

		if (reads && it->remote[i].bytes > 0)
			rc = start_spread_flow(p, s, it->remote[i].gpu, it->gpu, it->remote[i].bytes,
					       span_ns, in_place);
		if (rc == EMA_OK && it->remote[i].write_bytes > 0)
			rc = start_spread_flow(p, s, it->gpu, it->remote[i].gpu,
					       it->remote[i].write_bytes, span_ns, false);
		if (rc != EMA_OK)
			return rc;
	}
	return EMA_OK;
}

/* A step's remote attention (ema_remote_read.compute), as
 * sim_iteration split it off: its time on the lenders (ns, from the cost
 * model with each lender busy or not as it is now), and per lender the
 * bytes its attention reads and the queries and partials exchanged. */
struct attn_part {
	double ns;
	int n;
	int gpu[EMA_MAX_GPUS];
	uint64_t bytes[EMA_MAX_GPUS];
	uint64_t exchange[EMA_MAX_GPUS];
};

/* The lenders' side of a step's remote attention, over span_ns: each
 * lender's HBM serves bytes / span GB/s of attention for it meanwhile
 * (its own steps slow by attn_factor), and the partials cross the link
 * back as a flow the step waits for. */
static int start_attention(struct sim *p, struct iter_slot *s, const struct attn_part *ap,
			   int64_t span_ns)
{
	if (ap == NULL || ap->n == 0 || span_ns <= 0)
		return EMA_OK;
	for (int i = 0; i < ap->n; i++) {
		int g = ap->gpu[i];
		double a = (double)ap->bytes[i] / (double)span_ns;

		if (a > 0) {
			p->attn_load[g] += a;
			s->attn_gbps[g] += a;
			s->attn_any = true;
		}
		if (ap->exchange[i] > 0) {
			int rc = start_spread_flow(p, s, g, s->gpu, ap->exchange[i], span_ns, false);

			if (rc != EMA_OK)
				return rc;
		}
	}
	p->attn_gen++;
	return EMA_OK;
}

/* GB/s one lender's prefetch can get now: the copy method's rate, less
 * what other flows already take out of the lender and into the borrower
 * (both counted over all their links: conservative on direct links). */
static double prefetch_rate(const struct sim *p, const struct ema_iteration *it, int lender,
			    double in_others)
{
	const struct ema_hw_profile *hw = p->hw;
	double rate = it->method == EMA_COPY_GATHER && hw->gather_gbps > 0 &&
		      hw->gather_gbps < hw->link_gbps ? hw->gather_gbps : hw->link_gbps;
	double lender_left = hw->link_gbps - ema_flownet_hbm_out_gbps(p->net, lender);
	double ingress = hw->topology == EMA_TOPO_SWITCH ? hw->link_gbps
							     : hw->link_gbps * (hw->n_gpus - 1);
	double ingress_left = (ingress - in_others) / (it->n_remote > 0 ? it->n_remote : 1);

	if (hw->pull_share_under_load > 0 && hw->pull_share_under_load < 1)
		rate *= hw->pull_share_under_load;
	rate = fmin(rate, fmin(lender_left, ingress_left));
	return rate > 1e-9 ? rate : 1e-9;
}

/* Whether every lender's share of one group arrives within one group's
 * compute time (then the pipeline hides the whole prefetch). Only for
 * the gather method, whose cost is a launch plus a rate. */
static bool prefetch_hidden(const struct sim *p, const struct ema_iteration *it,
			    int64_t busy_ns, double in_others)
{
	int G = it->layer_groups > 0 ? it->layer_groups : 1;
	double group_ns = (double)busy_ns / G;

	if (it->method != EMA_COPY_GATHER || busy_ns <= 0)
		return false;
	for (int i = 0; i < it->n_remote; i++) {
		double t = (double)(it->remote[i].bytes / (uint64_t)G) /
			   prefetch_rate(p, it, it->remote[i].gpu, in_others) +
			   EMA_FLOWNET_KERNEL_LAUNCH_NS;

		if (t > group_ns)
			return false;
	}
	return true;
}

/* The iteration's time if it starts now: the cost model's, slowed by the
 * transfers through its GPU as they are now (see the top of the file).
 * *in_others: GB/s entering its HBM for other flows. */
static double iteration_total(struct sim *p, const struct ema_iteration *it, uint64_t remote,
			      struct ema_timing *c, double *in_others, bool *compute_wins)
{
	const struct ema_hw_profile *hw = p->hw;
	double out, in, f_mem, f_comp, f_att, busy, mem;

	ema_timing_iteration(hw, p->params.model, it, c);
	out = ema_flownet_hbm_out_gbps(p->net, it->gpu);
	in = ema_flownet_hbm_in_gbps(p->net, it->gpu);
	*in_others = in;
	if (it->prefetch_depth > 0 && remote > 0) {
		/* The iteration's own prefetch writes into its HBM while it
		 * computes (measured: a borrower's memory-bound kernel is 17-26%
		 * slower during its own pull): spread over the busy time, each
		 * lender at most at its own link's copy rate (several lenders
		 * of a direct topology deliver at once). */
		double bytes[EMA_MAX_GPUS] = {0};

		for (int i = 0; i < it->n_remote; i++)
			bytes[it->remote[i].gpu] += (double)it->remote[i].bytes;
		in += ema_cost_stage_in_gbps(hw, it->method, ema_cost_staged_slice_bytes(it), bytes,
					     hw->n_gpus,
					     fmax(c->compute_ns, c->memory_ns));
	}
	f_mem = 1 + (hw->interference_lender * out + hw->interference_borrower * in) /
		hw->hbm_read_gbps;
	f_comp = 1 + hw->interference_compute * (in + out) / hw->link_gbps;
	f_att = attn_factor(p, it->gpu);
	if (f_mem == 1 && f_comp == 1 && f_att == 1) {
		if (compute_wins != NULL)
			*compute_wins = c->compute_ns > ema_timing_memory_ns(hw, c, 1.0);
		return c->total_ns; /* exactly the cost model's time */
	}
	/* in place, only the local reads slow down: the remote ones ride the
	 * links beside them */
	mem = ema_timing_memory_ns(hw, c, f_mem);
	if (compute_wins != NULL)
		*compute_wins = c->compute_ns * f_comp > mem;
	busy = fmax(c->compute_ns * f_comp, mem) * f_att;
	return c->overhead_ns + busy;
}

static int sim_iteration_start(struct sim *p, const struct ema_iteration *it,
			       ema_iteration_fn fn, void *arg, const struct attn_part *ap);

/* EMA_ITER_LOG=FILE: one CSV line per iteration started, for diagnosis
 * (doc/model.md, "The targets of issue 11, simulated", measures the
 * borrower's step and prefill share and the lenders' slowdown with it).
 * Every platform of the process appends to the same file; `run` counts
 * the platforms created, i.e. the policies of an `ema run` in order. Leaped
 * iterations are not started one by one: EMA_LEAP=0 logs them all. Off
 * (and the outputs unchanged) when the variable is unset. */
static FILE *iter_log;
static int iter_log_runs;

static void iter_log_line(const struct sim *p, const struct ema_iteration *it,
			  const struct ema_timing *c, double total, uint64_t remote)
{
	if (iter_log == NULL)
		return;
	fprintf(iter_log, "%d,%.6f,%d,%d,%d,%lld,%lld,%llu,%llu,%d,%.1f,%.1f,%.1f,%.1f,%.1f,%.2f,%.2f\n",
		p->log_run, (double)p->now / 1e9, it->gpu, it->tenant, it->n_seqs,
		(long long)it->prefill_tokens, (long long)it->decode_tokens,
		(unsigned long long)it->kv_local_bytes, (unsigned long long)remote,
		it->prefetch_depth, c->total_ns, total, c->compute_ns, c->memory_ns,
		c->remote_inplace_ns, ema_flownet_hbm_out_gbps(p->net, it->gpu),
		ema_flownet_hbm_in_gbps(p->net, it->gpu));
}

/* The pooled bound's step (ema_iteration.remote_as_local): its remote
 * KV folded into the local reads, nothing on the links. */
static void fold_remote(struct ema_iteration *one, const struct ema_iteration *it)
{
	*one = *it;
	for (int i = 0; i < it->n_remote; i++)
		one->kv_local_bytes += it->remote[i].bytes + it->remote[i].write_bytes;
	one->n_remote = 0;
	one->prefetch_depth = 0;
	one->n_staging_pages = 0;
	one->staging_pages = NULL;
	one->window_depth = 0;
}

/* A step with remote attention: *view is it without the attention's
 * reads (a lender's entry stays, with no read, where the step also
 * writes its new tokens' KV there), *ap the attention, costed with each
 * lender busy with a step of its own, or not, as it is now. False: none. */
static bool split_attention(const struct sim *p, const struct ema_iteration *it,
			    struct ema_iteration *view, struct attn_part *ap)
{
	struct ema_iteration full;
	int k = 0;

	memset(ap, 0, sizeof *ap);
	for (int i = 0; i < it->n_remote; i++)
		if (it->remote[i].compute)
			ap->n++;
	if (ap->n == 0)
		return false;
	full = *it;
	*view = *it;
	ap->n = 0;
	for (int i = 0; i < it->n_remote; i++) {
		const struct ema_remote_read *rr = &it->remote[i];
		int g = rr->gpu;

		if (!rr->compute) {
			view->remote[k++] = *rr;
			continue;
		}
		full.remote[i].lender_busy = g >= 0 && g < p->hw->n_gpus &&
					     (p->iters[g].busy || p->leaps[g].active);
		if (ap->n < EMA_MAX_GPUS) {
			ap->gpu[ap->n] = g;
			ap->bytes[ap->n] = rr->bytes;
			ap->exchange[ap->n] = rr->exchange_bytes;
			ap->n++;
		}
		if (rr->write_bytes > 0) {
			view->remote[k] = *rr;
			view->remote[k].compute = false;
			view->remote[k].bytes = 0;
			view->remote[k].n_pages = 0;
			view->remote[k].exchange_bytes = 0;
			k++;
		}
	}
	view->n_remote = k;
	ap->ns = ema_cost_attention_ns(p->hw, &full);
	return true;
}

static int sim_iteration(struct ema_platform *pl, const struct ema_iteration *it,
			 ema_iteration_fn fn, void *arg, struct ema_error *err)
{
	struct sim *p = to_sim(pl);
	struct ema_iteration folded, view;
	struct attn_part ap;
	bool attn = false;
	int rc;

	if (it != NULL && it->remote_as_local && it->n_remote > 0) {
		fold_remote(&folded, it);
		it = &folded;
	} else if (it != NULL && it->n_remote > 0 && split_attention(p, it, &view, &ap)) {
		it = &view;
		attn = true;
	}
	rc = sim_iteration_start(p, it, fn, arg, attn ? &ap : NULL);

	if (rc != EMA_OK && err != NULL)
		*err = p->last;
	return rc;
}

/* A duration of the cost model in the clock's ns: rounded to the
 * nearest, EMA_TIME_PAST past simulated time's limit (simtime.h). */
static inline int64_t round_ns(double x)
{
	return ema_time_ns(x);
}

/* Why an iteration's end was scheduled past the limit: its slot's words,
 * said if the run gets there (sim_run). stall_ns > 0: the wait for its
 * first layer group's remote KV is what passes it. */
static void iter_late(struct sim *p, struct iter_slot *s, const struct ema_iteration *it,
		      const struct ema_timing *c, double stall_ns)
{
	const struct ema_hw_profile *hw = p->hw;
	double out = ema_flownet_hbm_out_gbps(p->net, it->gpu);
	double in = ema_flownet_hbm_in_gbps(p->net, it->gpu);
	double f_mem = 1 + (hw->interference_lender * out + hw->interference_borrower * in) /
		       hw->hbm_read_gbps;
	double f_comp = 1 + hw->interference_compute * (in + out) / hw->link_gbps;
	char why[EMA_ERROR_MSG_MAX / 2], t[32], w[32];

	if (stall_ns > 0)
		snprintf(why, sizeof why, "a wait of %s for its first layer group's remote KV "
			 "(hardware.link_gbps = %.3g GB/s, gather_gbps = %.3g GB/s, "
			 "pull_share_under_load = %g, and the transfers already on the links)",
			 ema_time_text(w, sizeof w, stall_ns), hw->link_gbps, hw->gather_gbps,
			 hw->pull_share_under_load);
	else
		ema_timing_explain(hw, it, c, f_mem, f_comp, why, sizeof why);
	snprintf(s->late, sizeof s->late, "GPU %d's step (%d request%s) at t = %s would end past it: "
		 "%s", it->gpu, it->n_seqs, it->n_seqs == 1 ? "" : "s",
		 ema_time_text(t, sizeof t, (double)p->now), why);
}

static int sim_iteration_start(struct sim *p, const struct ema_iteration *it,
			       ema_iteration_fn fn, void *arg, const struct attn_part *ap)
{
	const struct ema_hw_profile *hw = p->hw;
	struct iter_slot *s;
	struct ema_timing c;
	double in_others, total;
	int depth_eff;
	uint64_t remote = 0;
	int64_t over_ns, total_ns;
	int rc;

	if (it == NULL || fn == NULL)
		return op_fail(p, ema_error_set(&p->err, EMA_ERR_INTERNAL,
						"sim: iteration without work or callback"));
	if (it->gpu < 0 || it->gpu >= hw->n_gpus)
		return op_fail(p, ema_error_set(&p->err, EMA_ERR_INTERNAL,
						"sim: iteration on GPU %d, expected 0..%d",
						it->gpu, hw->n_gpus - 1));
	s = &p->iters[it->gpu];
	if (s->busy)
		return op_fail(p, ema_error_set(&p->err, EMA_ERR_INTERNAL,
						"sim: GPU %d already runs an iteration", it->gpu));
	if (it->n_remote < 0 || it->n_remote > EMA_MAX_GPUS || it->prefetch_depth < 0)
		return op_fail(p, ema_error_set(&p->err, EMA_ERR_INTERNAL,
						"sim: iteration with %d lenders, prefetch depth %d",
						it->n_remote, it->prefetch_depth));
	for (int i = 0; i < it->n_remote; i++) {
		int g = it->remote[i].gpu;

		if (g < 0 || g >= hw->n_gpus || g == it->gpu)
			return op_fail(p, ema_error_set(&p->err, EMA_ERR_INTERNAL,
							"sim: remote KV on GPU %d for an iteration on GPU %d",
							g, it->gpu));
		remote += it->remote[i].bytes;
	}
	total = iteration_total(p, it, remote, &c, &in_others, NULL);
	/* remote attention runs on the lenders beside the step's own work:
	 * the step waits for the last layer's partials */
	if (ap != NULL && c.overhead_ns + ap->ns > total)
		total = c.overhead_ns + ap->ns;
	iter_log_line(p, it, &c, total, remote);
	total_ns = round_ns(total);
	over_ns = round_ns(c.overhead_ns);
	if (over_ns > total_ns)
		over_ns = total_ns;
	if (ema_time_after(p->now, total_ns) > EMA_TIME_MAX_NS)
		iter_late(p, s, it, &c, 0);

	memset(&s->res, 0, sizeof s->res);
	s->res.start_ns = p->now;
	s->res.remote_bytes = remote;
	s->fn = fn;
	s->arg = arg;
	s->busy = true;
	if (it->prefetch_depth == 0 || remote == 0) {
		/* a speculation in flight is wasted: its flows just finish */
		s->streaming = false;
		s->spec_groups = 0;
		s->spec_adopted = false;
		s->spec_gen++;
		rc = start_spread_flows(p, it, total_ns, true, true);
		if (rc == EMA_OK)
			rc = start_attention(p, s, ap, total_ns - over_ns);
		if (rc != EMA_OK)
			goto fail;
		if (ema_eventq_push(&p->q, ema_time_after(p->now, total_ns), iter_done_event, s) !=
		    EMA_OK) {
			rc = ema_error_set(&p->err, EMA_ERR_NOMEM, "sim: out of memory");
			goto fail;
		}
		rc = resched(p);
		if (rc != EMA_OK)
			goto fail;
		return EMA_OK;
	}

	/* The window is the core's (ema_iteration_window_depth): 0 means each
	 * group's copy waits for the previous group's compute. */
	depth_eff = it->window_depth;
	if (depth_eff > 0 && prefetch_hidden(p, it, total_ns - over_ns, in_others)) {
		/* Fast path: every group's KV arrives within a group's compute
		 * at the rate the links have left, so the pipeline hides it all
		 * and needs no event per group. The bytes still cross the link,
		 * as one flow per lender spread over the iteration. Only the
		 * first group of a pipeline that was not already running is
		 * exposed (beyond the overhead). */
		int G = it->layer_groups > 0 ? it->layer_groups : 1;
		int64_t stall = 0;

		if (!s->streaming) {
			double first = 0;

			for (int i = 0; i < it->n_remote; i++) {
				double t = (double)(it->remote[i].bytes / (uint64_t)G) /
					   prefetch_rate(p, it, it->remote[i].gpu, in_others) +
					   EMA_FLOWNET_KERNEL_LAUNCH_NS;
				first = fmax(first, t);
			}
			stall = round_ns(fmax(0, first - (double)over_ns));
			if (ema_time_after(p->now, ema_time_after(total_ns, stall)) >
			    EMA_TIME_MAX_NS && total_ns <= EMA_TIME_MAX_NS - p->now)
				iter_late(p, s, it, &c, first - (double)over_ns);
		}
		rc = start_spread_flows(p, it, ema_time_after(total_ns - over_ns, stall), false, true);
		if (rc == EMA_OK)
			rc = start_attention(p, s, ap, total_ns - over_ns);
		if (rc != EMA_OK)
			goto fail;
		s->res.stall_ns = stall;
		s->streaming = true;
		s->spec_groups = 0;
		s->spec_adopted = false;
		s->spec_gen++;
		if (ema_eventq_push(&p->q, ema_time_after(p->now, ema_time_after(total_ns, stall)),
				    iter_done_event, s) != EMA_OK) {
			rc = ema_error_set(&p->err, EMA_ERR_NOMEM, "sim: out of memory");
			goto fail;
		}
		rc = resched(p);
		if (rc != EMA_OK)
			goto fail;
		return EMA_OK;
	}
	/* its writes into lenders, spread over its time as an in-place
	 * step's are; its last group waits for them */
	rc = start_spread_flows(p, it, total_ns, false, false);
	if (rc == EMA_OK)
		rc = start_attention(p, s, ap, total_ns - over_ns);
	if (rc != EMA_OK)
		goto fail;
	s->streaming = false;
	s->groups = it->layer_groups > 0 ? it->layer_groups : 1;
	s->depth = depth_eff; /* 0: staged without lookahead */
	s->busy_ns = total_ns - over_ns;
	s->next_group = 0;
	s->computing = false;
	s->waiting = false;
	s->in_overhead = over_ns > 0;
	s->method = it->method;
	s->n_remote = 0;
	for (int i = 0; i < it->n_remote; i++) {
		s->remote[s->n_remote].gpu = it->remote[i].gpu;
		s->remote[s->n_remote].bytes = it->remote[i].bytes;
		s->remote[s->n_remote].n_pages = it->remote[i].n_pages;
		s->n_remote++;
	}
	if (s->groups > s->cap_pending) {
		int *np = realloc(s->pending, (size_t)s->groups * sizeof *np);
		int *ns;

		if (np == NULL) {
			rc = ema_error_set(&p->err, EMA_ERR_NOMEM, "sim: out of memory");
			goto fail;
		}
		s->pending = np;
		ns = realloc(s->spec_inflight, (size_t)s->groups * sizeof *ns);
		if (ns == NULL) {
			rc = ema_error_set(&p->err, EMA_ERR_NOMEM, "sim: out of memory");
			goto fail;
		}
		if (s->groups > s->cap_pending)
			memset(ns + s->cap_pending, 0,
			       (size_t)(s->groups - s->cap_pending) * sizeof *ns);
		s->spec_inflight = ns;
		s->cap_pending = s->groups;
	}
	memset(s->pending, 0, (size_t)s->groups * sizeof *s->pending);
	s->spec_adopted_n = 0;
	for (int g = 0; g < (s->depth > 0 ? s->depth : 1) && g < s->groups; g++) {
		rc = first_group_flows(s, g, p->now);
		if (rc != EMA_OK)
			goto fail;
		if (g < s->spec_groups)
			s->spec_adopted_n = g + 1;
	}
	/* flows of the speculation now count for this iteration */
	s->spec_adopted = s->spec_groups > 0;
	s->spec_groups = 0;
	if (s->in_overhead) {
		if (ema_eventq_push(&p->q, ema_time_after(p->now, over_ns), overhead_done_event, s) !=
		    EMA_OK) {
			rc = ema_error_set(&p->err, EMA_ERR_NOMEM, "sim: out of memory");
			goto fail;
		}
	} else {
		rc = try_compute(s, p->now);
		if (rc != EMA_OK)
			goto fail;
	}
	rc = resched(p);
	if (rc != EMA_OK)
		goto fail;
	return EMA_OK;
fail:
	/* Flows already started finish harmlessly; the slot is freed. */
	s->busy = false;
	return op_fail(p, rc);
}

/* ---- transfers and flow completions ---------------------------------- */

static void on_flow_done(void *arg, uint64_t id, uint64_t tag, int64_t now)
{
	struct sim *p = arg;
	int kind = TAG_KIND(tag);

	(void)id;
	if (kind == TAG_XFER) {
		int idx = (int)TAG_IDX(tag);
		struct xfer x = p->xfers[idx];

		p->xfers[idx].fn = NULL;
		p->xfers[idx].next_free = p->free_xfer;
		p->free_xfer = idx;
		x.fn(x.arg, now);
	} else if (kind == TAG_GROUP) {
		struct iter_slot *s = &p->iters[TAG_GPU(tag)];
		int g = (int)TAG_IDX(tag);
		int rc;

		if (!s->busy || g >= s->groups || s->pending[g] <= 0) {
			ema_error_set(&p->err, EMA_ERR_INTERNAL,
				      "sim: prefetch flow of group %d of GPU %d has no iteration",
				      g, TAG_GPU(tag));
			event_fail(p, EMA_ERR_INTERNAL);
			return;
		}
		s->pending[g]--;
		if (g == s->next_group && s->pending[g] == 0) {
			rc = try_compute(s, now);
			if (rc != EMA_OK)
				event_fail(p, rc);
		}
	}
	else if (kind == TAG_SPEC) {
		struct iter_slot *s = &p->iters[TAG_GPU(tag)];
		uint64_t idx = (uint64_t)TAG_IDX(tag);
		int j = (int)(idx & 0xffff);
		uint32_t gen = (uint32_t)(idx >> 16);

		/* a speculation replaced by a newer one, or never adopted */
		if (gen != (s->spec_gen & 0xffffff) || j >= s->cap_pending)
			return;
		if (s->spec_inflight[j] > 0)
			s->spec_inflight[j]--;
		if (s->spec_adopted && s->busy && j < s->spec_adopted_n && j < s->groups &&
		    s->pending[j] > 0) {
			s->pending[j]--;
			if (j == s->next_group && s->pending[j] == 0) {
				int rc = try_compute(s, now);

				if (rc != EMA_OK)
					event_fail(p, rc);
			}
		}
	}
	else if (kind == TAG_INPLACE) {
		/* a step's spread KV: the step ends with the last of it once
		 * its own time has passed (iter_done_event) */
		struct iter_slot *s = &p->iters[TAG_GPU(tag)];

		if (!s->busy || s->spread_left <= 0) {
			ema_error_set(&p->err, EMA_ERR_INTERNAL,
				      "sim: a step's remote KV flow on GPU %d has no step", TAG_GPU(tag));
			event_fail(p, EMA_ERR_INTERNAL);
			return;
		}
		if (--s->spread_left == 0 && s->spread_wait) {
			int64_t waited = now - s->spread_wait_since;

			s->spread_wait = false;
			s->n_spread = 0;
			s->res.stall_ns += waited;
			p->stats.spread_wait_ns += (uint64_t)waited;
			iter_finish(s, now);
		}
	}
}

static void flow_event(void *arg, int64_t now)
{
	struct flow_tok *tok = arg;
	struct sim *p = tok->p;
	bool live = tok->gen == p->flow_gen;
	int rc;

	tok_put(p, tok);
	if (!live) {
		p->stale = true;
		return;
	}
	p->flow_ev_time = INT64_MIN; /* consumed: the next resched pushes anew */
	rc = ema_flownet_advance(p->net, now, on_flow_done, p, &p->err);
	if (rc == EMA_OK)
		rc = resched(p);
	if (rc != EMA_OK)
		event_fail(p, rc);
}

static int sim_transfer_start(struct sim *p, const struct ema_transfer *t,
			      ema_transfer_fn fn, void *arg);

static int sim_transfer(struct ema_platform *pl, const struct ema_transfer *t,
			ema_transfer_fn fn, void *arg, struct ema_error *err)
{
	struct sim *p = to_sim(pl);
	int rc = sim_transfer_start(p, t, fn, arg);

	if (rc != EMA_OK && err != NULL)
		*err = p->last;
	return rc;
}

static int sim_transfer_start(struct sim *p, const struct ema_transfer *t,
			      ema_transfer_fn fn, void *arg)
{
	int idx, rc;

	if (t == NULL || fn == NULL)
		return op_fail(p, ema_error_set(&p->err, EMA_ERR_INTERNAL,
						"sim: transfer without pages or callback"));
	if ((unsigned)t->purpose >= EMA_XFER_PURPOSES)
		return op_fail(p, ema_error_set(&p->err, EMA_ERR_INTERNAL,
						"sim: transfer purpose %d unknown", (int)t->purpose));
	if (p->free_xfer < 0) {
		if (p->n_xfers == p->cap_xfers) {
			int cap = p->cap_xfers ? 2 * p->cap_xfers : 64;
			struct xfer *nx = realloc(p->xfers, (size_t)cap * sizeof *nx);

			if (nx == NULL)
				return op_fail(p, ema_error_set(&p->err, EMA_ERR_NOMEM,
								"sim: out of memory"));
			p->xfers = nx;
			p->cap_xfers = cap;
		}
		idx = p->n_xfers++;
	} else {
		idx = p->free_xfer;
		p->free_xfer = p->xfers[idx].next_free;
	}
	rc = ema_flownet_start(p->net, p->now, t->src_gpu, t->dst_gpu, t->bytes,
			       t->n_pages, t->method, TAG(TAG_XFER, 0, idx), NULL, &p->err);
	if (rc != EMA_OK) {
		p->xfers[idx].next_free = p->free_xfer;
		p->free_xfer = idx;
		return op_fail(p, rc);
	}
	p->xfers[idx].fn = fn;
	p->xfers[idx].arg = arg;
	count_bytes(p, t->src_gpu, t->dst_gpu, t->bytes, t->purpose);
	rc = resched(p);
	return rc == EMA_OK ? EMA_OK : op_fail(p, rc);
}

/* ---- leaps ---------------------------------------------------------- */

/* fmax(a, b) (the larger; the other where one is NaN), in line: a call
 * into libm per step of a leap was a visible share of a replay. */
static inline double max_time(double a, double b)
{
	if (isnan(a))
		return b;
	if (isnan(b))
		return a;
	return a > b ? a : b;
}


/* The time of `it`, a step with nothing remote on a GPU not busy,
 * started now: iteration_total's, at the rates of the transfers through
 * its GPU now. EMA_ERR_UNSUPPORTED where its FLOPs are an upper bound
 * (it->flops_bound) under which compute could decide the time. */
static int local_step_ns(struct sim *p, const struct ema_iteration *it, int64_t *ns)
{
	double total;

	if (p->plain_without_flows && ema_flownet_flows_at(p->net, it->gpu) == 0 &&
	    p->attn_load[it->gpu] == 0) {
		double compute, local;

		/* No flow through the GPU: iteration_total's factors are 1, and
		 * without remote KV (staged or not) ema_timing_iteration's time
		 * is overhead + max(compute, local HBM), computed here in line:
		 * this runs for every step of every leap. With FLOPs known only
		 * from above, the time is memory's where their bound's compute
		 * time does not exceed it (compute time grows with FLOPs). */
		local = ema_cost_local_ns(p->hw, it);
		if (ema_cost_surely_memory_bound(p->hw, it->flops, local)) {
			/* compute < local: max_time's answer, whatever FLOPs up
			 * to a bound stand for */
			total = p->hw->iter_overhead_us * 1e3 + local;
		} else {
			ema_cost_local_parts(p->hw, it, &compute, &local);
			if (it->flops_bound && compute > local)
				return EMA_ERR_UNSUPPORTED;
			total = p->hw->iter_overhead_us * 1e3 + max_time(compute, local);
		}
	} else {
		const struct ema_hw_profile *hw = p->hw;
		const int g = it->gpu;
		double out = g >= 0 && g < hw->n_gpus ? p->net_hbm_out[g] : 0.0;
		double in = g >= 0 && g < hw->n_gpus ? p->net_hbm_in[g] : 0.0;
		double compute, local, f_mem, f_comp, f_att, busy;
		bool compute_wins;

		/* iteration_total(p, it, 0, ...) in line, the same doubles: with
		 * nothing remote ema_timing_iteration's parts are the overhead
		 * and ema_cost_local_parts' times (the in-place term of no link
		 * time is the local one), and no prefetch of its own enters the
		 * GPU. Every step of a lender's leap is timed here (lenders
		 * always have flows through them). With FLOPs from above,
		 * memory's time is the answer wherever the bound's compute time
		 * (which only grows with FLOPs) does not exceed it. */
		ema_cost_local_parts(hw, it, &compute, &local);
		f_mem = 1 + (hw->interference_lender * out + hw->interference_borrower * in) /
			hw->hbm_read_gbps;
		f_comp = 1 + hw->interference_compute * (in + out) / hw->link_gbps;
		f_att = g >= 0 && g < hw->n_gpus ? attn_factor(p, g) : 1.0;
		if (f_mem == 1 && f_comp == 1) {
			compute_wins = compute > local;
			busy = max_time(compute, local);
		} else {
			double mem = local * f_mem;

			compute_wins = compute * f_comp > mem;
			busy = max_time(compute * f_comp, mem);
		}
		if (f_att != 1)
			busy *= f_att;
		if (it->flops_bound && compute_wins)
			return EMA_ERR_UNSUPPORTED;
		total = hw->iter_overhead_us * 1e3 + busy;
	}
	/* a step past the limit of time is stepped, whose end says why */
	if (!ema_time_ns_ok(total))
		return EMA_ERR_UNSUPPORTED;
	*ns = round_ns(total);
	return EMA_OK;
}

static int sim_iteration_time(struct ema_platform *pl, const struct ema_iteration *it,
			      int64_t *ns, struct ema_error *err)
{
	struct sim *p = to_sim(pl);

	/* Without remote KV, an iteration's time is the cost model's, slowed
	 * by the transfers through its GPU now (iteration_total): a leap
	 * times its steps again where those change. */
	if (it == NULL || it->gpu < 0 || it->gpu >= p->hw->n_gpus || it->n_remote != 0 ||
	    p->iters[it->gpu].busy) {
		if (err != NULL)
			ema_error_set(err, EMA_ERR_UNSUPPORTED, "sim: no iteration time ahead here");
		return EMA_ERR_UNSUPPORTED;
	}
	if (local_step_ns(p, it, ns) != EMA_OK) {
		if (err != NULL)
			ema_error_set(err, EMA_ERR_UNSUPPORTED,
				      "sim: this step's time needs its exact FLOPs");
		return EMA_ERR_UNSUPPORTED;
	}
	return EMA_OK;
}

/* step j's figures into the template of a leap's steps */
static inline void leap_step_fill(struct ema_iteration *one, const struct ema_leap_step *s)
{
	one->n_seqs = s->n_seqs;
	one->prefill_tokens = 0;
	one->decode_tokens = s->n_seqs;
	one->act_bytes = s->act_bytes;
	one->kv_local_bytes = s->kv_local_bytes;
	one->flops = s->flops;
	one->attention_flops = s->attention_flops;
	one->flops_bound = s->flops_bound;
}

/* sim_iteration_time of each step, the same doubles: the checks once,
 * and without flows or remote attention through the GPU the time in
 * line, as local_step_ns (a leap's steps are memory-bound
 * decodes nearly always). */
static int sim_leap_times(struct ema_platform *pl, const struct ema_iteration *it, int n,
			  const struct ema_leap_step *steps, int64_t *ns)
{
	struct sim *p = to_sim(pl);
	struct ema_iteration one;
	int i;

	if (n <= 0 || it == NULL || it->gpu < 0 || it->gpu >= p->hw->n_gpus || it->n_remote != 0 ||
	    p->iters[it->gpu].busy)
		return 0;
	if (p->plain_without_flows && ema_flownet_flows_at(p->net, it->gpu) == 0 &&
	    p->attn_load[it->gpu] == 0) {
		const struct ema_hw_profile *hw = p->hw;
		const double overhead = hw->iter_overhead_us * 1e3;
		/* ema_cost_local_ns_of's and ema_cost_surely_memory_bound's
		 * figures, the same doubles, read once (the stores to ns[] could
		 * otherwise change them, for all the compiler knows) */
		const double rate = hw->hbm_read_gbps * hw->hbm_efficiency;
		const double flops_per_ns = hw->peak_tflops * 1e3 * hw->flops_efficiency;
		const double weights = (double)it->weight_bytes;

		for (i = 0; i < n; i++) {
			const struct ema_leap_step *s = &steps[i];
			double compute, local, total;

			local = rate > 0 ? (weights + (double)s->kv_local_bytes + (double)s->act_bytes) / rate
					 : 0.0;
			if (flops_per_ns > 0 && s->flops >= 0 &&
			    s->flops <= local * flops_per_ns * (1.0 - 0x1p-40)) {
				total = overhead + local;
			} else {
				one = *it;
				one.act_bytes = s->act_bytes;
				one.kv_local_bytes = s->kv_local_bytes;
				one.flops = s->flops;
				ema_cost_local_parts(hw, &one, &compute, &local);
				if (s->flops_bound && compute > local)
					break;
				total = overhead + max_time(compute, local);
			}
			if (!ema_time_ns_ok(total))
				break; /* (as local_step_ns) */
			ns[i] = round_ns(total);
		}
		return i;
	}
	one = *it;
	for (i = 0; i < n; i++) {
		leap_step_fill(&one, &steps[i]);
		if (local_step_ns(p, &one, &ns[i]) != EMA_OK)
			break;
	}
	return i;
}

static int sim_leap(struct ema_platform *pl, int gpu, int k, int64_t *end,
		    const struct ema_leap_retime *rt, ema_iteration_fn fn, void *arg,
		    struct ema_error *err)
{
	struct sim *p = to_sim(pl);
	struct leap *l;

	if (gpu < 0 || gpu >= p->hw->n_gpus || k < 2 || fn == NULL || rt == NULL || rt->it == NULL ||
	    rt->it->gpu != gpu || rt->it->n_remote != 0 || end[0] != p->now ||
	    p->iters[gpu].busy || p->leaps[gpu].active) {
		ema_error_set(&p->err, EMA_ERR_INTERNAL, "sim: leap of %d iterations on GPU %d refused",
			      k, gpu);
		op_fail(p, EMA_ERR_INTERNAL);
		if (err != NULL)
			*err = p->last;
		return EMA_ERR_INTERNAL;
	}
	for (int j = 1; j <= k; j++)
		if (end[j] <= end[j - 1]) {
			ema_error_set(&p->err, EMA_ERR_INTERNAL,
				      "sim: leap iteration %d of GPU %d does not end after it starts", j, gpu);
			op_fail(p, EMA_ERR_INTERNAL);
			if (err != NULL)
				*err = p->last;
			return EMA_ERR_INTERNAL;
		}
	l = &p->leaps[gpu];
	l->end = end;
	end[k + 1] = INT64_MAX;
	l->m = k;
	l->valid = k;
	l->cur = 1;
	l->steps = rt->steps;
	memcpy(&l->tmpl, rt->it, offsetof(struct ema_iteration, remote));
	l->stop_ns = rt->stop_ns;
	l->limit_ns = rt->limit_ns;
	l->out_gbps = ema_flownet_hbm_out_gbps(p->net, gpu);
	l->in_gbps = ema_flownet_hbm_in_gbps(p->net, gpu);
	l->attn_gbps = p->attn_load[gpu];
	/* its first iteration's event would have been pushed now */
	l->seq0 = ema_eventq_take_seq(&p->q);
	l->fn = fn;
	l->arg = arg;
	l->active = true;
	p->n_leaps++;
	ema_gpuset_set(&p->leap_gpus, gpu);
	p->iters[gpu].busy = true;
	return EMA_OK;
}

/* After an event: a leap whose GPU's transfer rates it changed keeps the
 * times of its iterations begun by now (each was timed when it began, as
 * stepping times them) and times the later ones again, once the clock
 * gets there (leap_extend), at the rates they will start at. */
static void leaps_check_rates(struct sim *p)
{
	uint64_t gen = ema_flownet_generation(p->net);
	/* (over the set as it was, as the mask's copy did) */
	const struct ema_gpuset leaping = p->leap_gpus;

	/* (the flownet counts every change of its rates, attn_gen every
	 * change of the remote attention the GPUs run) */
	if (gen == p->rates_gen && p->attn_gen == p->attn_gen_seen)
		return;
	p->rates_gen = gen;
	p->attn_gen_seen = p->attn_gen;
	EMA_GPUSET_FOREACH(g, &leaping) {
		struct leap *l = &p->leaps[g];
		double out = ema_flownet_hbm_out_gbps(p->net, g), in = ema_flownet_hbm_in_gbps(p->net, g);
		double attn = p->attn_load[g];
		int j;

		if (out == l->out_gbps && in == l->in_gbps && attn == l->attn_gbps)
			continue;
		l->out_gbps = out;
		l->in_gbps = in;
		l->attn_gbps = attn;
		/* the iteration in progress (none begins now: one ending now
		 * was made the leap's end before this dispatch) */
		j = l->cur;
		while (j < l->valid && l->end[j] < p->now)
			j++;
		if (j < l->valid) {
			l->valid = j;
			l->end[j + 1] = INT64_MAX;
		}
	}
}

/* The iterations of l that begin before `until` timed, at the rates now
 * (no event comes before `until` to change them): each as
 * sim_iteration_time would time it when it begins, and the leap ends
 * where the engine's plan would have ended it (ema_leap_retime). */
static void leap_extend(struct sim *p, struct leap *l, int64_t until)
{
	while (l->valid < l->m && l->end[l->valid] < until) {
		int j = l->valid + 1;
		int64_t ns;

		leap_step_fill(&l->tmpl, &l->steps[j]);
		if (local_step_ns(p, &l->tmpl, &ns) != EMA_OK || ns <= 0 ||
		    l->end[j - 1] + ns > l->limit_ns) {
			l->m = j - 1; /* end[j] stays INT64_MAX */
			return;
		}
		l->end[j] = l->end[j - 1] + ns;
		l->valid = j;
		if (l->end[j] >= l->stop_ns)
			l->m = j;
		else if (j < l->m)
			l->end[j + 1] = INT64_MAX;
	}
}

/* The first iteration of l that ends at or after t. */
static int leap_at(struct leap *l, int64_t t)
{
	while (l->cur < l->m && l->end[l->cur] < t)
		l->cur++;
	return l->cur;
}

static int sim_leap_cut(struct ema_platform *pl, int gpu)
{
	struct sim *p = to_sim(pl);
	struct leap *l = &p->leaps[gpu];

	if (!l->active)
		return 0;
	/* An iteration ending right now was made the end before this
	 * dispatch (see the run loop), so at or after now is after it. */
	l->m = leap_at(l, p->now);
	return l->m;
}

/* Whether heap event ev comes before iteration j of leap l, which ends at
 * the same time: the event of iteration j would have been pushed at
 * end[j - 1]. *bad is set when the order cannot be told (never, if the
 * run loop cut every leap where an event was dispatched). */
static bool event_before_leap(const struct ema_event *ev, const struct leap *l, int j, bool *bad)
{
	int64_t push = l->end[j - 1];

	if (ev->push_ns != push)
		return ev->push_ns < push;
	if (j == 1)
		return ev->seq < l->seq0;
	*bad = true;
	return true;
}

/* Whether iteration ja of leap a comes before iteration jb of leap b,
 * both ending at the same time: by their push times, and at the same
 * push time by the iterations that pushed them. */
static bool leap_before_leap(const struct leap *a, int ja, const struct leap *b, int jb, bool *bad)
{
	/* Tenants in lock-step (the same trace on the same GPUs) make leaps
	 * whose steps end at the same times: the walk below would go back
	 * to their first steps at every tie. Same ends all along, compared at
	 * once: the order is that of their first events. */
	if (ja == jb && a->end[0] == b->end[0] &&
	    memcmp(a->end, b->end, (size_t)ja * sizeof *a->end) == 0)
		return a->seq0 < b->seq0;
	for (;;) {
		int64_t pa = a->end[ja - 1], pb = b->end[jb - 1];

		if (pa != pb)
			return pa < pb;
		if (ja == 1 && jb == 1)
			return a->seq0 < b->seq0;
		if (ja == 1 || jb == 1) {
			*bad = true;
			return ja == 1;
		}
		ja--;
		jb--;
	}
}

/* The end of a leap: its iterations' own bookkeeping, as iteration()
 * does for each one without remote KV, and the caller's callback. */
static void leap_dispatch(struct sim *p, int gpu)
{
	struct leap *l = &p->leaps[gpu];
	struct iter_slot *s = &p->iters[gpu];
	struct ema_iteration_result r;

	p->now = l->end[l->m];
	p->q.now_ns = p->now;
	l->active = false;
	p->n_leaps--;
	ema_gpuset_clear(&p->leap_gpus, gpu);
	s->streaming = false;
	s->spec_groups = 0;
	s->spec_adopted = false;
	s->spec_gen += (uint32_t)l->m;
	p->n_events += (uint64_t)l->m;
	memset(&s->res, 0, sizeof s->res);
	s->res.start_ns = l->end[l->m - 1];
	s->fn = l->fn;
	s->arg = l->arg;
	r = s->res;
	r.end_ns = p->now;
	s->busy = false;
	l->fn(l->arg, &r);
}

/* ---- clock, timers, run --------------------------------------------- */

static int64_t sim_now(struct ema_platform *pl)
{
	return to_sim(pl)->now;
}

static int sim_timer(struct ema_platform *pl, int64_t at_ns, ema_timer_fn fn, void *arg,
		     struct ema_error *err)
{
	struct sim *p = to_sim(pl);
	int rc = EMA_OK;

	if (fn == NULL || at_ns < p->now)
		rc = op_fail(p, ema_error_set(&p->err, EMA_ERR_INTERNAL,
					      "sim: timer at %lld ns, before now (%lld ns) or without callback",
					      (long long)at_ns, (long long)p->now));
	/* (past the limit of time: never reached, or said where it would be) */
	else if (ema_eventq_push(&p->q, at_ns > EMA_TIME_MAX_NS ? EMA_TIME_PAST : at_ns, fn, arg) !=
		 EMA_OK)
		rc = op_fail(p, ema_error_set(&p->err, EMA_ERR_NOMEM, "sim: out of memory"));
	if (rc != EMA_OK && err != NULL)
		*err = p->last;
	return rc;
}

/* The next thing to dispatch while leaps are active: the heap's earliest
 * event (*gpu = -1) or a leap's end (*gpu), in the order of the events
 * the leaps stand for. A leap with an iteration ending at that time is
 * cut there first, and goes first where its event would have. Returns
 * the time, INT64_MAX when nothing is left. */
static int64_t next_with_leaps(struct sim *p, int *gpu, bool *bad)
{
	for (;;) {
		const struct ema_event *ev = ema_eventq_peek(&p->q);
		int best = -1;
		int64_t t = ev != NULL ? ev->time_ns : INT64_MAX;
		bool again = false;
		/* (over the set as it was, as the mask's copy did) */
		struct ema_gpuset leaping = p->leap_gpus;

		EMA_GPUSET_FOREACH(g, &leaping) {
			struct leap *l = &p->leaps[g];
			int64_t te;

			/* timed up to the heap's next event: a leap not timed to
			 * its end ends after it */
			if (l->valid < l->m) {
				leap_extend(p, l, t);
				if (l->valid < l->m)
					continue;
			}
			te = l->end[l->m];
			if (te < t || (te == t && (best >= 0 ?
				leap_before_leap(l, l->m, &p->leaps[best], p->leaps[best].m, bad) :
				!event_before_leap(ev, l, l->m, bad)))) {
				best = g;
				t = te;
			}
		}
		if (t == INT64_MAX)
			return t;
		/* iterations of other leaps ending at t become their ends */
		leaping = p->leap_gpus;
		EMA_GPUSET_FOREACH(g, &leaping) {
			struct leap *l = &p->leaps[g];
			int j;

			if (g == best)
				continue;
			j = leap_at(l, t);
			if (j >= l->m || l->end[j] != t)
				continue;
			l->m = j;
			if (best >= 0 ? leap_before_leap(l, j, &p->leaps[best], p->leaps[best].m, bad) :
					!event_before_leap(ev, l, j, bad))
				again = true;
		}
		if (!again) {
			*gpu = best;
			return t;
		}
	}
}

/* The next event lies past the limit of simulated time (simtime.h) and
 * the run would get there: a flow's event that a change of rates left
 * stale is dropped (true: go on); anything else stops the run with what
 * it was. */
static bool sim_past_limit(struct sim *p)
{
	const struct ema_event *ev = ema_eventq_peek(&p->q);
	char what[EMA_ERROR_MSG_MAX / 2 + 256], t[32];

	if (ev != NULL && ev->fn == flow_event &&
	    ((const struct flow_tok *)ev->arg)->gen != p->flow_gen) {
		struct ema_event e;

		ema_eventq_pop(&p->q, &e);
		tok_put(p, e.arg);
		return true;
	}
	if (ev != NULL && (ev->fn == iter_done_event || ev->fn == group_done_event ||
			   ev->fn == overhead_done_event))
		snprintf(what, sizeof what, "%s", ((const struct iter_slot *)ev->arg)->late);
	else if (ev != NULL && ev->fn == flow_event)
		ema_flownet_describe_late(p->net, what, sizeof what);
	else
		snprintf(what, sizeof what, "a timer the serving engine or the policy set past it, "
			 "at t = %s", ema_time_text(t, sizeof t, (double)p->now));
	ema_time_error(&p->err, "%s; expected a faster hardware profile, or a horizon_s", what);
	event_fail(p, EMA_ERR_INPUT);
	return false;
}

static int sim_run(struct ema_platform *pl, int64_t horizon_ns, struct ema_error *err)
{
	struct sim *p = to_sim(pl);
	struct ema_event ev;

	p->stopped = false;
	while (!p->stopped) {
		int64_t t;
		int gpu = -1;

		if (p->n_leaps > 0) {
			bool bad = false;

			t = next_with_leaps(p, &gpu, &bad);
			if (bad) {
				ema_error_set(&p->err, EMA_ERR_INTERNAL,
					      "sim: the order of a leap among events at %lld ns is unknown",
					      (long long)t);
				event_fail(p, EMA_ERR_INTERNAL);
				break;
			}
		} else {
			t = ema_eventq_peek_time(&p->q);
		}
		if (t == INT64_MAX)
			break;
		if (horizon_ns > 0 && t > horizon_ns) {
			if (horizon_ns > p->now)
				p->now = horizon_ns;
			break;
		}
		if (t > EMA_TIME_MAX_NS && gpu < 0) {
			if (sim_past_limit(p))
				continue;
			break;
		}
		if (gpu >= 0) {
			leap_dispatch(p, gpu);
		} else {
			ema_eventq_pop(&p->q, &ev);
			p->now = ev.time_ns;
			p->q.now_ns = p->now;
			p->stale = false;
			ev.fn(ev.arg, ev.time_ns);
			if (!p->stale)
				p->n_events++;
		}
		if (p->n_leaps > 0)
			leaps_check_rates(p);
	}
	if (p->fail != 0) {
		int rc = p->fail;

		if (err != NULL)
			*err = p->err;
		p->fail = 0;
		return rc;
	}
	return EMA_OK;
}

static void sim_stop(struct ema_platform *pl)
{
	to_sim(pl)->stopped = true;
}

static uint64_t sim_events(struct ema_platform *pl)
{
	return to_sim(pl)->n_events;
}

static const struct ema_link_stats *sim_link_stats(struct ema_platform *pl)
{
	return &to_sim(pl)->stats;
}

static void sim_destroy(struct ema_platform *pl)
{
	struct sim *p = to_sim(pl);

	if (p == NULL)
		return;
	ema_eventq_destroy(&p->q);
	ema_flownet_destroy(p->net);
	while (p->chunks != NULL) {
		struct tok_chunk *c = p->chunks;

		p->chunks = c->next;
		free(c);
	}
	for (int g = 0; g < EMA_MAX_GPUS; g++) {
		free(p->iters[g].pending);
		free(p->iters[g].spec_inflight);
	}
	free(p->xfers);
	free(p);
}

static const struct ema_platform_ops sim_ops = {
	.name = "sim",
	.inplace_beside_local = true,
	.remote_attention = true,
	.attention_beside_staged = true,
	.now = sim_now,
	.timer = sim_timer,
	.iteration = sim_iteration,
	.transfer = sim_transfer,
	.run = sim_run,
	.stop = sim_stop,
	.events = sim_events,
	.link_stats = sim_link_stats,
	.destroy = sim_destroy,
	.iteration_time = sim_iteration_time,
	.leap_times = sim_leap_times,
	.leap = sim_leap,
	.leap_cut = sim_leap_cut,
};

const char *ema_sim_platform_last_error(struct ema_platform *pl)
{
	return to_sim(pl)->last.msg;
}

int ema_sim_platform_create(struct ema_platform **out, const struct ema_platform_params *params,
			    const struct ema_platform_opts *opts, struct ema_error *err)
{
	struct sim *p;
	int rc;

	*out = NULL;
	p = calloc(1, sizeof *p);
	if (p == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "sim: out of memory");
	p->base.ops = &sim_ops;
	if (iter_log == NULL && getenv("EMA_ITER_LOG") != NULL && *getenv("EMA_ITER_LOG") != '\0') {
		iter_log = fopen(getenv("EMA_ITER_LOG"), "w");
		if (iter_log == NULL)
			fprintf(stderr, "ema: EMA_ITER_LOG=%s: cannot write it; no iteration log\n",
				getenv("EMA_ITER_LOG"));
		else
			fputs("run,time_s,gpu,tenant,n_seqs,prefill_tokens,decode_tokens,kv_local_bytes,"
			      "remote_bytes,prefetch_depth,cost_ns,total_ns,compute_ns,memory_ns,"
			      "remote_inplace_ns,hbm_out_gbps,hbm_in_gbps\n", iter_log);
	}
	p->log_run = ++iter_log_runs;
	p->params = *params;
	p->base.params = &p->params;
	p->hw = params->hw;
	p->free_xfer = -1;
	{
		const struct ema_hw_profile *hw = params->hw;
		double f_mem = 1 + (hw->interference_lender * 0.0 + hw->interference_borrower * 0.0) /
			       hw->hbm_read_gbps;
		double f_comp = 1 + hw->interference_compute * (0.0 + 0.0) / hw->link_gbps;

		p->plain_without_flows = f_mem == 1 && f_comp == 1;
	}
	p->flow_ev_time = INT64_MAX;
	for (int g = 0; g < EMA_MAX_GPUS; g++) {
		p->iters[g].p = p;
		p->iters[g].gpu = g;
	}
	rc = ema_flownet_create(&p->net, params->hw, err);
	if (rc != EMA_OK)
		goto fail;
	p->net_hbm_out = ema_flownet_hbm_out_array(p->net);
	p->net_hbm_in = ema_flownet_hbm_in_array(p->net);
	if (ema_eventq_init(&p->q, 1024) != EMA_OK) {
		rc = ema_error_set(err, EMA_ERR_NOMEM, "sim: out of memory");
		goto fail;
	}
	*out = &p->base;
	return EMA_OK;
fail:
	sim_destroy(&p->base);
	return rc;
}
