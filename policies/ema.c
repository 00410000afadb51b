/* ema.c: the EMA design. A tenant whose GPU is full borrows pages from
 * peers, per lender up to what that lender's link can carry during one
 * of its steps (or policy.max_remote_share of its KV), from the lender
 * whose link has the most budget left, so that borrowed bytes spread over
 * the links. Its iterations read remote KV by policy.remote_path: in
 * place, a share of the SMs reading each link beside the local reads
 * (NVLink adds bandwidth beside HBM: the step costs about what the local
 * reads cost while each link keeps up), or staged, a sliding window of
 * policy.prefetch_depth layer groups copied into a local staging area
 * sized to what is borrowed now, or per iteration whichever the cost
 * model (base/step_cost.h) predicts faster. Lenders stay whole: after
 * every iteration each lender with lent pages keeps policy.headroom of
 * its KV free by reclaiming ahead of need ("pre-preemption"), and a
 * lender that still runs out reclaims at once. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lending.h"

/* The TPOT budget's default slack (policy.ema.tpot_slack). */
#define TPOT_SLACK_DEFAULT 0.08
/* The lender guard's default (policy.ema.lender_slowdown): the guard holds
 * the lender's mean slowdown near it, and a lender's TPOT p50 lands about
 * 0.5-1 point above (h200x2 at 28 GiB, 8 seeds: 0.04 gives TPOT p50
 * 1.047-1.048, too close to the 5% of issue 11; 0.035 gives 1.040-1.043). */
#define LENDER_SLOWDOWN_DEFAULT 0.035
/* The queue guard's hold (policy.ema.queue_hold_s): a lender whose queue
 * waited lends nothing for new requests until it has been empty this
 * long. On the README's validation scenario with both tenants at 14
 * req/s, t1's queue empties between bursts for well under a second, and
 * pages lent then came back by reclaims when the next burst came (0.99 x
 * static's throughput for the borrower, TPOT p50 +3.4%); 0.5 s left
 * TPOT +2.1%, 1 s gives static's throughput and +1.1%. */
#define QUEUE_HOLD_DEFAULT_S 1.0

/* ema's own knobs, policy.ema.KEY (doc/policies.md, "ema's guards"). */
struct ema_knobs {
	double link_share;   /* share of a link's step the per-link budget plans to use */
	double tpot_slack;   /* borrow while the predicted TPOT stays within 1 + this of local-only; 0 = no guard */
	double lender_slowdown; /* lend while the reads a lender serves slow it by less than this; 0 = no guard */
	bool queue_guard;    /* a GPU whose tenant queues requests it will start itself lends less */
	double queue_hold_s; /* ... and none for new requests until its queue has been empty this long */
};

static const struct ema_knobs ema_knob_defaults = { 0.85, TPOT_SLACK_DEFAULT, LENDER_SLOWDOWN_DEFAULT,
						   true, QUEUE_HOLD_DEFAULT_S };

/* EMA_KNOB_DBL with a unit, for the key reference (doc/keys.md). */
#define EMA_OWN_DBL(field, lo, hi, unit, text) \
	{ #field, EMA_CFG_DBL, offsetof(struct ema_knobs, field), 0, 0, lo, hi, 0, NULL, NULL, NULL, \
	  unit, text }

static const struct ema_config_key ema_knob_keys[] = {
	EMA_OWN_DBL(link_share, 0.05, 4, "share of a link's step",
		    "ema: share of what a link carries during one step that the per-link "
		    "budget lends through it, R_g <= link_share x rate x step (doc/model.md, "
		    "\"ema's per-link budget\"); above 1 the steps become link-bound."),
	EMA_OWN_DBL(tpot_slack, 0, 10, "share of the local-only TPOT",
		    "ema: TPOT budget. A tenant admits requests on borrowed pages only while "
		    "the cost model's decode step and its measured prefill share predict a "
		    "TPOT within 1 + tpot_slack of its local-only TPOT (doc/model.md, "
		    "\"ema's TPOT budget\"); 0 = no budget."),
	EMA_OWN_DBL(lender_slowdown, 0, 1, "share, 0 = no guard",
		    "ema: lender guard. A GPU lends no pages for new requests while the reads of its "
		    "pages by borrowers over the last 10 s predict, at interference_lender, a "
		    "slowdown of its memory-bound work of this share or more (doc/model.md, "
		    "\"ema's lender guard\")."),
	{ "queue_guard", EMA_CFG_BOOL, offsetof(struct ema_knobs, queue_guard), 0, 0, 0, 0, 0,
	  NULL, NULL, NULL, "",
	  "ema: queue guard. A GPU whose own tenant has a request queued that the GPU "
	  "will start by itself lends no pages for new requests, and no page at all "
	  "while that request's pages are not free (doc/policies.md, \"ema's guards\"); "
	  "false lends them, to be reclaimed when the request starts."},
	EMA_OWN_DBL(queue_hold_s, 0, 3600, "s",
		    "ema: the queue guard's hold. A GPU whose own tenant left a request queued "
		    "at a step's end lends no pages for new requests until this long after the "
		    "last such step (doc/policies.md, \"ema's guards\"); 0 = no hold, and no "
		    "hold without queue_guard."),
	EMA_KNOB_END
};

/* Entries of ema_state's decay memo, 2^bits. */
#define EMA_DECAY_MEMO_BITS 10
#define EMA_DECAY_MEMO (1 << EMA_DECAY_MEMO_BITS)

struct ema_state {
	/* policy.max_remote_share's cap per tenant (INT32_MAX / 2: none, the
	 * link budgets rule); computed once: capacities do not change */
	int32_t max_borrow[EMA_MAX_TENANTS];
	int32_t max_lent[EMA_MAX_GPUS];      /* per lender, from lender_max_slowdown */
	int32_t headroom[EMA_MAX_GPUS];      /* headroom_pages(), per GPU */
	int32_t band_keep[EMA_MAX_GPUS];     /* reserve + headroom: what lendable() keeps free */
	/* the most GPU g may have lent: its KV capacity less the lending
	 * floor (ema_lending_lendable's by_floor), or max_lent if less */
	int32_t lent_limit[EMA_MAX_GPUS];
	int32_t max_request[EMA_MAX_TENANTS]; /* what one request could ever hold */
	int32_t max_admit[EMA_MAX_TENANTS];   /* ... and be admitted with (staged: less) */
	bool never[EMA_MAX_TENANTS];         /* borrow_rule=throughput: borrowing does not pay */
	bool staged_last[EMA_MAX_TENANTS];   /* the tenant's last iteration was staged */
	/* TPOT budget: the tenant's predicted busy time and the part of it in
	 * prefills, each prefill scaled to local-only throughput, both decayed
	 * over EMA_TPOT_WINDOW_NS of run time (ema_note_iteration) */
	double busy_ns[EMA_MAX_TENANTS];
	double prefill_ns[EMA_MAX_TENANTS];
	int64_t noted_ns[EMA_MAX_TENANTS];
	bool noted[EMA_MAX_TENANTS];
	/* lender guard: bytes each tenant read from each GPU and the run
	 * time they were read over, decayed like the above */
	double read_bytes[EMA_MAX_TENANTS][EMA_MAX_GPUS];
	double read_ns[EMA_MAX_TENANTS];
	/* The link budget in pages of each tenant's links, for the link_share
	 * and (staged: the budget grows with it) the borrowed total it was
	 * computed for: the hooks ask for it per lender at every admission
	 * tried and every page borrowed, and in place it never changes. */
	struct ema_link_memo {
		bool valid;
		double share;
		int32_t total;
		int32_t pages;
	} link_memo[EMA_MAX_TENANTS];
	/* The lender guard's predicted slowdown of every GPU, as of run time
	 * slow_ns and note number slow_notes (notes counts note_iteration's
	 * calls): borrowable asks for each lender, at every admission tried,
	 * and each asked for the decay of every borrower's rates. */
	uint64_t notes, slow_notes;
	int64_t slow_ns;
	bool slow_valid;
	double slow[EMA_MAX_GPUS];
	/* The TPOT budget's predicted full-GPU steps (full_step_ns) of each
	 * tenant: with nothing borrowed, and for the last two sets of
	 * borrowed pages asked about (what is held, for a prefill's note,
	 * and that plus the next page, for an admission) */
	bool step0_valid[EMA_MAX_TENANTS];
	double step0_ns[EMA_MAX_TENANTS];
	struct ema_step_memo {
		bool valid;
		int32_t remote[EMA_MAX_GPUS];
		double ns;
	} step_memo[EMA_MAX_TENANTS][2];
	int step_memo_next[EMA_MAX_TENANTS]; /* the slot to replace */
	struct ema_iteration full_it[EMA_MAX_TENANTS]; /* full_step_compute's */
	bool full_it_ready[EMA_MAX_TENANTS];
	/* whether the tenant ever read a remote byte (read_bytes[t] not all
	 * 0), and whether ema last asked the engine for staging reserve:
	 * what lets a step of a tenant that never borrowed skip the lender
	 * guard's decay and the staging area's release */
	bool read_any[EMA_MAX_TENANTS];
	bool reserve_set[EMA_MAX_TENANTS];
	/* bit g of read_mask[t]: t read from GPU g (read_bytes[t][g] may be
	 * more than 0; every other entry is exactly 0); bit t of readers:
	 * read_any[t]. The decay and the lender guard visit those alone, in
	 * the order of the loops over every GPU and tenant (0 bytes decay to
	 * 0 bytes and add nothing). */
	uint32_t read_mask[EMA_MAX_TENANTS];
	uint32_t readers;
	/* lender_bound_compute's upper bounds of the guard's figures, as of run time
	 * bound_ns and note number bound_notes, like slow[] */
	bool bound_valid;
	int64_t bound_ns;
	uint64_t bound_notes;
	double bound[EMA_MAX_GPUS];
	/* exp(-d / EMA_TPOT_WINDOW_NS) by run time d (ns), remembered
	 * (decay_of): every step's note and every borrower in the lender
	 * guard pay for one, and the gaps between a tenant's steps repeat
	 * (ema8p.json: 6 in 10 found here); a pure function of d, so what is
	 * remembered is what exp returns */
	struct ema_decay_memo {
		bool valid;
		int64_t d;
		double v;
	} decay_memo[EMA_DECAY_MEMO];
	/* Whether some GPU with a tenant and lent pages has fewer free pages
	 * than its headroom (lender_short), as of the ledger's operation
	 * count short_ops: after_iteration asks at every step, and
	 * leap_holds for every leaping tenant after every event, mostly of a
	 * ledger no page operation changed since (only the ledger's
	 * operations change free and lent pages, and each one counts) */
	bool short_valid, short_any;
	uint64_t short_ops;
};

/* The TPOT budget's memory of the tenant's prefill share: about the last
 * 10 s of run time, a few dozen prefill iterations of an overloaded
 * tenant (shorter follows the bursts and lets the estimate jump; longer
 * keeps the start, all prefills, in it long after the GPU filled). */
#define EMA_TPOT_WINDOW_NS 10e9

/* exp(-d / EMA_TPOT_WINDOW_NS), the decay over d ns of run time, from
 * the state's memo (direct-mapped by a multiplicative hash of d). */
static __attribute__((noinline)) double decay_miss(struct ema_decay_memo *m, int64_t d)
{
	m->valid = true;
	m->d = d;
	m->v = exp(-(double)d / EMA_TPOT_WINDOW_NS);
	return m->v;
}

/* (in line: a call clobbers every floating-point register, and its
 * callers keep their sums in them) */
static inline double decay_of(struct ema_state *st, int64_t d)
{
	struct ema_decay_memo *m =
		&st->decay_memo[((uint64_t)d * 0x9E3779B97F4A7C15ull) >> (64 - EMA_DECAY_MEMO_BITS)];

	if (__builtin_expect(!m->valid || m->d != d, 0))
		return decay_miss(m, d);
	return m->v;
}

static const struct ema_knobs *own(const struct ema_policy_ctx *c)
{
	return c->own_knobs != NULL ? c->own_knobs : &ema_knob_defaults;
}

/* Whether borrowing is ruled by the per-link budgets (link_share: slack
 * for reclaim traffic, steps that read less than a full GPU, and jitter;
 * 0.85 by default) rather than max_remote_share. */
static bool link_budgets(const struct ema_policy_ctx *c)
{
	return !(c->knobs->max_remote_share > 0);
}

static bool path_staged(const struct ema_policy_ctx *c)
{
	return c->knobs->remote_path == EMA_PATH_STAGED && c->knobs->prefetch_depth > 0;
}

/* Bytes of one piece of the staging copies: a layer group's slice of a
 * page (ema_cost_staged_slice_bytes, for full pages). */
static double staged_slice(const struct ema_policy_ctx *c)
{
	return (double)c->page_bytes / (c->layer_groups > 0 ? c->layer_groups : 1);
}

/* Remote bytes one link may carry for `tenant` during one of its steps:
 *     R_g <= link_share x link rate x step time
 * The step is that of a full GPU (weights W + its KV capacity L: a tenant
 * borrows only when its GPU is full), from the cost model. In place the
 * remote reads overlap the local ones, so the step is the local time and
 * the rate remote_read_gbps; staged, the step also reads the staged bytes
 * (all `total` pages borrowed) from HBM, and the rate is the copy's.
 * Worked example, h200x2 capped at 24 GiB, llama-3-8b, in place:
 * W + L = 16.06 + 9.71 GB = 25.77 GB at 4357 x 0.70 GB/s = 8.45 ms,
 * x 373.9 GB/s x 0.85 = 2.69 GB = 1280 pages of 2 MiB (tests/test_model.c). */
static double link_bytes(const struct ema_policy_ctx *c, int tenant, int32_t total)
{
	const struct ema_hw_profile *hw = c->hw;
	bool staged = path_staged(c);
	double local = (double)ema_model_weight_bytes(c->model) +
		       (double)c->kv_capacity_pages[tenant] * (double)c->page_bytes;

	if (staged)
		local += (double)total * (double)c->page_bytes;
	return own(c)->link_share * ema_cost_link_gbps(hw, staged, c->knobs->copy_method, staged_slice(c)) *
	       ema_cost_hbm_ns(hw, local);
}

/* link_bytes() in whole pages, at most INT32_MAX / 2, remembered. */
static int32_t link_pages(const struct ema_policy_ctx *c, struct ema_state *st, int tenant,
			  int32_t total)
{
	struct ema_link_memo *m = &st->link_memo[tenant];
	double share = own(c)->link_share;
	int32_t key = path_staged(c) ? total : 0;
	double pages;

	if (m->valid && m->share == share && m->total == key)
		return m->pages;
	pages = floor(link_bytes(c, tenant, total) / (double)c->page_bytes);
	*m = (struct ema_link_memo){ true, share, key,
				     pages < INT32_MAX / 2 ? (int32_t)pages : INT32_MAX / 2 };
	return m->pages;
}

/* Pages `tenant` may still borrow from GPU g under its link budget of b
 * pages (link_pages), given what it holds on each GPU (from[], total in
 * all) and what g has lent to every borrower (lent_g): a `direct` link
 * carries only this tenant's pages of g; behind a switch, the tenant's
 * ingress port carries all it borrowed, and g's egress port all g lent.
 * May be negative. */
static int32_t budget_of(const struct ema_policy_ctx *c, int32_t b, int g, const int32_t *from,
			 int32_t total, int32_t lent_g)
{
	if (c->hw->topology != EMA_TOPO_SWITCH)
		return b - from[g];
	return b - total < b - lent_g ? b - total : b - lent_g;
}

static int32_t budget_left(const struct ema_policy_ctx *c, struct ema_state *st, int tenant,
			   int g, const int32_t *from, int32_t total, int32_t lent_g)
{
	return budget_of(c, link_pages(c, st, tenant, total), g, from, total, lent_g);
}

/* Pages a lender may have out so that borrowers pulling them every step
 * slow its memory-bound work by at most s: the pull rate is about the
 * lent bytes per borrower step, (W + L) / (hbm x efficiency), i.e.
 * lent x hbm x efficiency / (W + L), and costs the lender
 * interference_lender x rate / hbm, so
 *     lent <= s x (W + L) / (efficiency x interference_lender).
 * (Until issue 11 the efficiency multiplied instead of dividing: a cap
 * efficiency^2 = 0.49 times too tight.)
 * (The borrower's W + L stands in for its step; tenants share a model.) */
static int32_t max_lent_compute(const struct ema_policy_ctx *c, int gpu)
{
	const struct ema_hw_profile *hw = c->hw;
	double s = c->knobs->lender_max_slowdown;
	double local, cap;

	if (s <= 0 || hw->interference_lender <= 0)
		return INT32_MAX / 2;
	local = (double)ema_model_weight_bytes(c->model) +
		(double)ema_lending_kv_capacity(c, gpu) * (double)c->page_bytes;
	cap = floor(s * local / (hw->hbm_efficiency * hw->interference_lender) /
		    (double)c->page_bytes);
	/* (a tiny efficiency or interference makes it no cap, not a wrapped int) */
	return cap < INT32_MAX / 2 ? (int32_t)cap : INT32_MAX / 2;
}

/* With max_remote_share s in (0, 1): remote <= s x (local + remote), i.e.
 * remote <= s/(1-s) x local; s = 1: no cap; 0: the link budgets. */
static int32_t share_cap(const struct ema_policy_ctx *c, int tenant)
{
	double s = c->knobs->max_remote_share;

	double cap;

	if (s <= 0 || s >= 1.0)
		return INT32_MAX / 2;
	/* (s a hair below 1 makes it no cap, not a wrapped int) */
	cap = floor(s / (1.0 - s) * c->kv_capacity_pages[tenant]);
	return cap < INT32_MAX / 2 ? (int32_t)cap : INT32_MAX / 2;
}

/* ---- the TPOT budget ----------------------------------------------------
 *
 * A borrower's TPOT is its decode step over the share of its time not
 * spent in other requests' prefills (prefill iterations run between
 * decodes, serving.chunked_prefill false): TPOT = s / (1 - p). Borrowing
 * R bytes on top of its L bytes of KV changes both: the step to s(R) (the
 * cost model of a full GPU: in place max(local, link) / overlap
 * efficiency; staged, with the staged bytes and their writes), and, since
 * a KV-bound batch grows with the KV, the throughput by g / sigma, where
 * g = (L + R) / L and sigma = s(R) / s(0), and with it the prefill share,
 * p(R) = p0 x g / sigma. Against its local-only TPOT:
 *
 *     TPOT(R) / TPOT(0) = sigma (1 - p0) / (1 - p0 g / sigma)
 *
 * p0 is measured: the tenant's prefill share of its predicted busy time
 * over the last EMA_TPOT_WINDOW_NS, each prefill scaled by sigma / g of
 * the moment to what it would be at local-only throughput. The tenant
 * borrows while the ratio stays within 1 + tpot_slack. Worked example
 * (a100x4 llama-2-13b, measured there): p0 = 0.145, sigma = 1.019 in
 * place: g <= (sigma / p0) (1 - sigma (1 - p0) / (1 + slack)) = 1.36 at
 * slack 0.08, i.e. R <= 0.36 L, where the link budgets allow 0.46 L. */

/* Predicted step of `tenant`'s GPU full of its own KV (weights + KV
 * capacity, memory-bound), with remote[g] pages more on GPU g, on the
 * path ema would take (plan_staged's choice). */
static double full_step_compute(const struct ema_policy_ctx *c, struct ema_state *s, int tenant,
				const int32_t *remote)
{
	/* the tenant's full GPU, set up once (clearing the iteration, mostly
	 * its 16 remote entries, cost more than the costing); only the
	 * remote reads change, and ema_step_cost reads the first n_remote */
	struct ema_iteration *it = &s->full_it[tenant];
	struct ema_step_cost in, st;

	if (!s->full_it_ready[tenant]) {
		memset(it, 0, sizeof *it);
		it->tenant = tenant;
		it->gpu = c->tenant_gpu[tenant];
		it->weight_bytes = ema_model_weight_bytes(c->model);
		it->kv_local_bytes = (uint64_t)c->kv_capacity_pages[tenant] * c->page_bytes;
		it->method = c->knobs->copy_method;
		s->full_it_ready[tenant] = true;
	}
	it->n_remote = 0;
	for (int g = 0; remote != NULL && g < c->n_gpus; g++)
		if (remote[g] > 0 && it->n_remote < EMA_MAX_GPUS) {
			it->remote[it->n_remote].gpu = g;
			it->remote[it->n_remote].n_pages = remote[g];
			it->remote[it->n_remote].bytes = (uint64_t)remote[g] * c->page_bytes;
			it->n_remote++;
		}
	ema_step_cost(c->hw, it, false, &in);
	if (it->n_remote == 0 || c->knobs->prefetch_depth <= 0 ||
	    c->knobs->remote_path == EMA_PATH_INPLACE)
		return in.total_ns;
	/* (the smaller of the two: in place wherever the staged total's
	 * floor already reaches it, as in plan_staged) */
	if (c->knobs->remote_path != EMA_PATH_STAGED && c->inplace_beside_local &&
	    ema_step_cost_staged_floor_ns(c->hw, it) >= in.total_ns)
		return in.total_ns;
	ema_step_cost(c->hw, it, true, &st);
	if (c->knobs->remote_path == EMA_PATH_STAGED || !c->inplace_beside_local)
		return st.total_ns;
	return st.total_ns < in.total_ns ? st.total_ns : in.total_ns;
}

/* full_step_compute, remembered: it depends on the hardware, the model
 * and the shared knobs, fixed for the run, and on remote[] (NULL:
 * nothing borrowed). */
static double full_step_ns(const struct ema_policy_ctx *c, struct ema_state *st, int tenant,
			   const int32_t *remote)
{
	struct ema_step_memo *m = st->step_memo[tenant];
	size_t key = (size_t)c->n_gpus * sizeof *remote;
	int k;

	if (remote == NULL) {
		if (!st->step0_valid[tenant]) {
			st->step0_ns[tenant] = full_step_compute(c, st, tenant, NULL);
			st->step0_valid[tenant] = true;
		}
		return st->step0_ns[tenant];
	}
	for (k = 0; k < 2; k++)
		if (m[k].valid && memcmp(m[k].remote, remote, key) == 0)
			return m[k].ns;
	k = st->step_memo_next[tenant];
	st->step_memo_next[tenant] = 1 - k;
	m[k].valid = true;
	memcpy(m[k].remote, remote, key);
	m[k].ns = full_step_compute(c, st, tenant, remote);
	return m[k].ns;
}

/* sigma = s(R) / s(0) for remote[] pages borrowed. */
static double step_ratio(const struct ema_policy_ctx *c, struct ema_state *st, int tenant,
			 const int32_t *remote)
{
	double s0 = full_step_ns(c, st, tenant, NULL);

	return s0 > 0 ? full_step_ns(c, st, tenant, remote) / s0 : 1.0;
}

/* The measured prefill share at local-only throughput, p0. */
static double prefill_share0(const struct ema_state *st, int tenant)
{
	return st->busy_ns[tenant] > 0 ? st->prefill_ns[tenant] / st->busy_ns[tenant] : 0.0;
}

/* Whether the TPOT budget rules for `tenant` now: a slack is set and the
 * tenant runs something (an idle tenant's budget is waived, as the
 * serving watermark is, so that a request that needs to borrow is never
 * stuck behind a prefill share no iteration updates). */
static bool tpot_budget_on(const struct ema_policy_ctx *c, int tenant)
{
	return own(c)->tpot_slack > 0 && ema_ledger_used_pages(c->ledger, c->tenant_gpu[tenant]) > 0;
}

/* Pages the TPOT budget still allows, for admission: the largest g with
 * the ratio within 1 + slack at sigma of what is held plus a page from
 * GPU g1 (sigma is constant in place within the link budgets; staged it
 * grows, and choose_lender checks each page). */
static int32_t tpot_pages_left(const struct ema_policy_ctx *c, struct ema_state *st, int tenant,
			       int g1)
{
	int32_t remote[EMA_MAX_GPUS];
	double p0 = prefill_share0(st, tenant), sigma, gmax, slack = own(c)->tpot_slack;
	int32_t total = ema_ledger_borrowed_pages(c->ledger, tenant);

	if (!tpot_budget_on(c, tenant) || p0 <= 0)
		return INT32_MAX / 2;
	memcpy(remote, c->ledger->borrowed[tenant], sizeof remote);
	if (g1 >= 0)
		remote[g1]++;
	sigma = step_ratio(c, st, tenant, remote);
	gmax = sigma / p0 * (1.0 - sigma * (1.0 - p0) / (1.0 + slack));
	if (gmax <= 1.0)
		return 0;
	gmax = floor((gmax - 1.0) * c->kv_capacity_pages[tenant]);
	if (gmax > INT32_MAX / 2)
		return INT32_MAX / 2;
	return (int32_t)gmax > total ? (int32_t)gmax - total : 0;
}

/* An upper bound of tpot_pages_left(c, st, tenant, g1) for every lender
 * g1, without the costing of a full step: ema_borrowable_below's test for
 * a queue the TPOT budget holds back (ema8p.json: 94% of the borrowers'
 * admissions fail on it, at ~1,900 instructions each). With the ratio
 * h(sigma) = sigma / p0 x (1 - sigma (1 - p0) / (1 + slack)), a parabola
 * whose top is at sigma* = (1 + slack) / (2 (1 - p0)), and sigma at least
 * sigma_lo, gmax is at most h(max(sigma_lo, sigma*)). sigma_lo: the full
 * step s(R) with R >= total + 1 pages is at least o + L / eta in place
 * (a positive link time: max(L, link) / eta) and at least the staged
 * floor o + hbm(W + KV + R) staged, and s(0) = o + L; relative margins of
 * 1e-9 cover the roundings (some 1e-15). INT32_MAX / 2 where it cannot
 * tell, as tpot_pages_left where the budget does not rule. */
static int32_t tpot_pages_bound(const struct ema_policy_ctx *c, struct ema_state *st, int tenant)
{
	const struct ema_hw_profile *hw = c->hw;
	double p0 = prefill_share0(st, tenant), slack = own(c)->tpot_slack;
	int32_t total = ema_ledger_borrowed_pages(c->ledger, tenant);
	double s0, lo = 1.0, top, sm, h, pages;

	if (!tpot_budget_on(c, tenant) || p0 <= 0)
		return INT32_MAX / 2;
	if (!(p0 < 1) || !isfinite(slack))
		return INT32_MAX / 2; /* (p0 >= 1: h grows without bound) */
	s0 = full_step_ns(c, st, tenant, NULL);
	if (s0 > 0) {
		double o = hw->iter_overhead_us * 1e3;
		double w = (double)ema_model_weight_bytes(c->model) +
			   (double)c->kv_capacity_pages[tenant] * (double)c->page_bytes;
		double eta = hw->inplace_overlap_efficiency > 0 && hw->inplace_overlap_efficiency < 1 ?
			     hw->inplace_overlap_efficiency : 1.0;
		double local_ns = ema_cost_hbm_ns(hw, w);
		double in = ema_cost_link_gbps(hw, false, c->knobs->copy_method, 0.0) > 0 ?
			    o + local_ns / eta : o + local_ns;
		double staged = o + ema_cost_hbm_ns(hw, w + (double)(total + 1) * (double)c->page_bytes);

		if (!(hw->interference_borrower >= 0) || !(hw->hbm_read_gbps > 0) ||
		    !(hw->hbm_read_gbps * hw->hbm_efficiency > 0))
			return INT32_MAX / 2; /* no staged floor to rely on */
		lo = (in < staged ? in : staged) / s0;
	}
	lo *= 1.0 - 1e-9;
	top = (1.0 + slack) / (2.0 * (1.0 - p0));
	sm = lo > top ? lo : top;
	h = sm / p0 * (1.0 - sm * (1.0 - p0) / (1.0 + slack));
	h = h * (1.0 + 1e-9) + 1e-9;
	if (!isfinite(h) || !isfinite(lo))
		return INT32_MAX / 2;
	if (h <= 1.0)
		return 0;
	pages = floor((h - 1.0) * c->kv_capacity_pages[tenant]) + 1.0 - (double)total;
	if (!(pages < INT32_MAX / 2))
		return INT32_MAX / 2;
	return pages > 0 ? (int32_t)pages : 0;
}

/* Every iteration of `tenant` (plan_iteration), for the guards. TPOT
 * budget: its predicted time joins the decayed busy time, and a
 * prefill's, scaled by sigma / g of the moment, the prefill time (a mixed
 * iteration of chunked prefill by its share of prefill tokens). Lender
 * guard: the remote bytes it reads from each GPU join that GPU's decayed
 * bytes, and the run time since its last iteration the decayed time they
 * were read over (the bytes of one iteration land one iteration late: a
 * few ms in a window of 10 s). */
/* One step noted at `now`: total its predicted time, x its prefill time
 * as the TPOT budget counts it, remote[0 .. n_remote - 1] its remote
 * reads (note_iteration and ema_plan_leap). */
static inline void note_step(const struct ema_policy_ctx *c, struct ema_state *st, int t,
			     int64_t now, double total, double x,
			     const struct ema_remote_read *remote, int n_remote)
{
	double decay = 0, dt = 0;

	if (st->noted[t]) {
		dt = (double)(now - st->noted_ns[t]);
		decay = decay_of(st, now - st->noted_ns[t]);
	}
	if (own(c)->tpot_slack > 0) {
		st->busy_ns[t] = st->busy_ns[t] * decay + total;
		st->prefill_ns[t] = st->prefill_ns[t] * decay + x;
	}
	if (own(c)->lender_slowdown > 0) {
		/* (0 bytes decay to 0 bytes) */
		for (uint32_t m = st->read_mask[t]; m != 0; m &= m - 1)
			st->read_bytes[t][__builtin_ctz(m)] *= decay;
		for (int i = 0; i < n_remote; i++)
			if (remote[i].gpu >= 0 && remote[i].gpu < c->n_gpus) {
				st->read_bytes[t][remote[i].gpu] += (double)remote[i].bytes;
				st->read_mask[t] |= 1u << remote[i].gpu;
				st->readers |= 1u << t;
				st->read_any[t] = true;
			}
		st->read_ns[t] = st->read_ns[t] * decay + dt;
	}
	st->noted_ns[t] = now;
	st->noted[t] = true;
	st->notes++;
}

static void note_iteration(const struct ema_policy_ctx *c, struct ema_state *st,
			   const struct ema_iteration *it, const double *inplace_ns)
{
	int t = it->tenant;
	double total = 0, x = 0;

	if ((own(c)->tpot_slack <= 0 && own(c)->lender_slowdown <= 0) || t < 0 || t >= c->n_tenants)
		return;
	if (own(c)->tpot_slack > 0) {
		/* the in-place cost, from ema_plan when it has it */
		total = inplace_ns != NULL ? *inplace_ns : ema_step_cost_inplace_ns(c->hw, it);
		if (it->prefill_tokens > 0) {
			double g = 1.0 + (double)ema_ledger_borrowed_pages(c->ledger, t) /
					 (c->kv_capacity_pages[t] > 0 ? c->kv_capacity_pages[t] : 1);
			double share = (double)it->prefill_tokens /
				       (double)(it->prefill_tokens + it->decode_tokens);
			const int32_t *held = ema_ledger_borrowed_pages(c->ledger, t) > 0 ?
					      c->ledger->borrowed[t] : NULL;

			x = total * share * step_ratio(c, st, t, held) / g;
		}
	}
	note_step(c, st, t, ema_policy_now(c), total, x, it->remote, it->n_remote);
}

/* plan_leap: ema_plan of n leapt steps of it->tenant, in order. Each is
 * a batch of decodes with nothing remote, for which ema_plan sets what it
 * set for the first step and notes the step (note_iteration, at its start,
 * its in-place cost, no prefill time): the notes alone. They read no
 * ledger (no prefill share is scaled), as plan_leap must. */
static void ema_plan_leap(const struct ema_policy_ctx *c, void *state,
			  const struct ema_iteration *it, int n, const struct ema_leap_step *steps,
			  const int64_t *start_ns)
{
	struct ema_state *st = state;
	int t = it->tenant;
	const bool tpot = own(c)->tpot_slack > 0, guard = own(c)->lender_slowdown > 0;
	struct ema_local_cost k;

	if ((!tpot && !guard) || t < 0 || t >= c->n_tenants || n <= 0)
		return;
	/* note_step's sums in registers (through memory each step waited
	 * for the last one's stores), the same operations in the same order;
	 * bytes read before the leap (read_mask: a tenant that ever borrowed)
	 * still decay, each GPU's on its own */
	ema_local_cost_init(&k, c->hw);
	{
		double busy = st->busy_ns[t], prefill = st->prefill_ns[t], read = st->read_ns[t];
		double bytes[EMA_MAX_GPUS];
		const uint32_t rm = guard ? st->read_mask[t] : 0;
		int64_t noted_ns = st->noted_ns[t];
		bool noted = st->noted[t];

		for (uint32_t m = rm; m != 0; m &= m - 1)
			bytes[__builtin_ctz(m)] = st->read_bytes[t][__builtin_ctz(m)];
		for (int i = 0; i < n; i++) {
			int64_t now = start_ns[i];
			double decay = 0, dt = 0;

			if (noted) {
				dt = (double)(now - noted_ns);
				decay = decay_of(st, now - noted_ns);
			}
			if (tpot) {
				double total = ema_local_cost_ns(&k, it->weight_bytes, steps[i].kv_local_bytes,
								 steps[i].act_bytes, steps[i].flops);

				busy = busy * decay + total;
				prefill = prefill * decay + 0.0;
			}
			if (guard) {
				for (uint32_t m = rm; m != 0; m &= m - 1)
					bytes[__builtin_ctz(m)] *= decay;
				read = read * decay + dt;
			}
			noted_ns = now;
			noted = true;
		}
		for (uint32_t m = rm; m != 0; m &= m - 1)
			st->read_bytes[t][__builtin_ctz(m)] = bytes[__builtin_ctz(m)];
		st->busy_ns[t] = busy;
		st->prefill_ns[t] = prefill;
		st->read_ns[t] = read;
		st->noted_ns[t] = noted_ns;
		st->noted[t] = true;
		st->notes += (uint64_t)n;
	}
}

/* ---- the lender guard -------------------------------------------------
 *
 * Every byte a borrower reads from a lender's pages, in place or staged,
 * comes out of the lender's HBM at every step, and slows the lender's
 * memory-bound work by interference_lender x (GB/s read) / hbm_read_gbps
 * (sim/sim_platform.c charges exactly that). The guard measures the rate
 * each GPU serves: over all borrowers, their decayed bytes from it over
 * their decayed run time, to now; a GPU whose predicted slowdown reaches
 * lender_slowdown lends no pages for new requests (lendable(): running
 * ones still grow, and what it has out stays: a reclaim preempts or moves
 * whole requests; the rate falls as they finish).
 * Worked example (h200x2 at 28 GiB, measured): the borrower reads its
 * 2.68 GB of borrowed KV at every 9.9 ms step and spends 17% of its time in
 * prefills, 225 GB/s: 0.952 x 225 / 4357 = 4.9%, against the lender's
 * TPOT p50 measured +5.4% without the guard. */
static __attribute__((noinline)) void lender_slowdown_compute(const struct ema_policy_ctx *c,
								struct ema_state *st, int64_t now)
{
	double gbps[EMA_MAX_GPUS];

	for (int h = 0; h < c->n_gpus; h++)
		gbps[h] = 0;
	/* every GPU at once, each summed over the borrowers in order as one
	 * at a time would be; a borrower's decay is the same for each */
	for (uint32_t ts = st->readers; ts != 0; ts &= ts - 1) {
		int t = __builtin_ctz(ts);
		double gap = 0, decay = 0, span = 0;
		bool some = false;

		if (!st->noted[t])
			continue;
		for (uint32_t hs = st->read_mask[t]; hs != 0; hs &= hs - 1) {
			int h = __builtin_ctz(hs);

			if (st->read_bytes[t][h] <= 0)
				continue;
			if (!some) {
				gap = (double)(now - st->noted_ns[t]);
				decay = decay_of(st, now - st->noted_ns[t]);
				/* at least 1 ms: the first iterations have no time behind them */
				span = st->read_ns[t] * decay + gap;
				some = true;
			}
			gbps[h] += st->read_bytes[t][h] * decay / (span > 1e6 ? span : 1e6);
		}
	}
	for (int h = 0; h < c->n_gpus; h++)
		st->slow[h] = c->hw->hbm_read_gbps > 0 ?
			      c->hw->interference_lender * gbps[h] / c->hw->hbm_read_gbps : 0.0;
	st->slow_ns = now;
	st->slow_notes = st->notes;
	st->slow_valid = true;
}

/* lender_slowdown_compute's figure for GPU g, remembered for the instant
 * and the note count (the computation kept out of line: the hooks ask
 * for each lender, and most find it remembered). */
static double lender_slowdown_now(const struct ema_policy_ctx *c, struct ema_state *st, int g)
{
	int64_t now = ema_policy_now(c);

	if (!st->slow_valid || st->slow_ns != now || st->slow_notes != st->notes)
		lender_slowdown_compute(c, st, now);
	return st->slow[g];
}

/* An upper bound of lender_slowdown_compute's figure of every GPU, with
 * no exp: with d = exp(-gap / W) in (0, 1] and R, gap >= 0, a borrower's
 * term B d / max(R d + gap, 1 ms) is at most B / max(R + gap, 1 ms)
 * (R d + gap >= d (R + gap); below 1 ms, d (R + gap) <= R d + gap < 1 ms).
 * +inf where it cannot tell (a gap or R < 0; an interference or HBM rate
 * outside the usual). Rounding moves either figure by some 1e-15 of
 * itself; lender_guard_refuses leaves 1e-9. */
static __attribute__((noinline)) void lender_bound_compute(const struct ema_policy_ctx *c,
							     struct ema_state *st, int64_t now)
{
	double sum[EMA_MAX_GPUS], scale;
	bool usable = c->hw->hbm_read_gbps > 0 && c->hw->interference_lender >= 0;

	for (int h = 0; h < c->n_gpus; h++)
		sum[h] = 0;
	for (uint32_t ts = st->readers; usable && ts != 0; ts &= ts - 1) {
		int t = __builtin_ctz(ts);
		double gap = (double)(now - st->noted_ns[t]), span, inv;

		if (!st->noted[t])
			continue;
		if (!(gap >= 0) || !(st->read_ns[t] >= 0)) {
			usable = false;
			break;
		}
		span = st->read_ns[t] + gap;
		inv = 1.0 / (span > 1e6 ? span : 1e6);
		for (uint32_t hs = st->read_mask[t]; hs != 0; hs &= hs - 1) {
			int h = __builtin_ctz(hs);

			if (st->read_bytes[t][h] > 0)
				sum[h] += st->read_bytes[t][h] * inv;
		}
	}
	/* (interference / rate once: a bound, the rounding within its 1e-9) */
	scale = usable ? c->hw->interference_lender / c->hw->hbm_read_gbps : INFINITY;
	for (int h = 0; h < c->n_gpus; h++)
		st->bound[h] = usable ? sum[h] * scale : INFINITY;
	st->bound_ns = now;
	st->bound_notes = st->notes;
	st->bound_valid = true;
}

/* Whether the lender guard stops GPU g lending for new requests: its
 * figure at lender_slowdown or more. Most lenders serve far less
 * (ema8p.json: all of them under half of it at every admission), which
 * the bound shows without the exact figure's exp and divisions; near it,
 * or where the exact figure is remembered, the exact figure decides. */
static bool lender_guard_refuses(const struct ema_policy_ctx *c, struct ema_state *st, int g)
{
	double limit = own(c)->lender_slowdown;
	int64_t now = ema_policy_now(c);

	if (st->slow_valid && st->slow_ns == now && st->slow_notes == st->notes)
		return st->slow[g] >= limit;
	if (!st->bound_valid || st->bound_ns != now || st->bound_notes != st->notes)
		lender_bound_compute(c, st, now);
	if (st->bound[g] * (1 + 1e-9) < limit)
		return false;
	return lender_slowdown_now(c, st, g) >= limit;
}

/* The lender to take `tenant`'s next page from, given what it holds
 * (from[], total), what each GPU may still lend (avail[]) and has lent
 * (lent[]): among GPUs with a page to lend and, under link budgets, a
 * page of budget left, the one whose link has the most budget left (ties:
 * the most lendable, then the lowest index). -1: none. */
struct ema_pick {
	int best;
	int32_t best_b, best_n;
};

/* pick_by_budget's rule for one more GPU g, in increasing g, with budget
 * b and n > 0 pages to lend (the caller skips the home GPU and, under
 * link budgets, b < 1): the hooks that have both at hand pick as they
 * compute them. */
static inline void pick_consider(struct ema_pick *p, int g, int32_t b, int32_t n)
{
	if (p->best < 0 || b > p->best_b || (b == p->best_b && n > p->best_n)) {
		p->best = g;
		p->best_b = b;
		p->best_n = n;
	}
}

static int pick_by_budget(const struct ema_policy_ctx *c, int tenant, const int32_t *avail,
			  const int32_t *budget)
{
	struct ema_pick p = { -1, 0, 0 };
	int home = c->tenant_gpu[tenant], n_gpus = c->n_gpus;
	bool lb = link_budgets(c);

	for (int g = 0; g < n_gpus; g++) {
		if (g == home || avail[g] <= 0)
			continue;
		if (lb && budget[g] < 1)
			continue;
		pick_consider(&p, g, budget[g], avail[g]);
	}
	return p.best;
}

static int pick_lender(const struct ema_policy_ctx *c, struct ema_state *st, int tenant,
		       const int32_t *from, int32_t total, const int32_t *avail, const int32_t *lent)
{
	int32_t budget[EMA_MAX_GPUS] = {0}, b = link_pages(c, st, tenant, total);

	for (int g = 0; g < c->n_gpus; g++)
		if (g != c->tenant_gpu[tenant] && avail[g] > 0)
			budget[g] = budget_of(c, b, g, from, total, lent[g]);
	return pick_by_budget(c, tenant, avail, budget);
}

/* Pages of GPU g's KV that ema keeps free beyond the lending rules'
 * reserve: its headroom (none on a GPU without a tenant, which never
 * reclaims). The borrower takes a lender's free pages down to reserve +
 * headroom, so the lender's own growth by up to its reserve is absorbed
 * before after_iteration reclaims (free < headroom). With the reserve
 * alone, the default reserve and headroom (both 5%) left no band at all:
 * the lender's next page set off a reclaim that preempted a whole borrowed
 * request (hundreds of pages) to free one, the borrower took the freed
 * pages again at once, and so on (a100x4 llama-2-13b, seed 1: 14 reclaims
 * of 115-279 pages from one lender within 7 s, and 37 preemptions of the
 * borrower against static's 20; with the band, 2 and 19). */
static int32_t headroom_pages(const struct ema_policy_ctx *c, int g)
{
	if (c->ledger->gpu[g].home_tenant < 0)
		return 0;
	return (int32_t)ceil(c->knobs->headroom * ema_lending_kv_capacity(c, g));
}

/* The queue guard: GPU g's own tenant has a request queued that the GPU
 * will start by itself (it fits the GPU, and the tenant runs or waits
 * for a reclaim), so pages lent now would be reclaimed when it starts:
 * under load on every GPU, lending what a queue is about to take turned
 * into reclaims, recomputations and worse TTFT than static for everyone
 * (8 x h200 at 20 GiB, every tenant at 4x the Azure conversation trace:
 * ~1,100 reclaims a tenant, throughput 1.5% under static's). No page
 * for a new request then, nor, while its pages are not free, for a
 * running one (which static would not have had either). Under
 * reclaim_mode=drop no page for a running one at all: the reclaim that
 * takes such a page back recomputes the request, which refusing it now
 * does with less work lost, where the other modes may move the request
 * home or to host later instead (every GPU overloaded, reclaims
 * dropping: vs-static seeds 200302 and 200020 lost 7-17% of static's
 * throughput to hundreds of reclaims; refused, none. Refusing it under
 * `auto` too cost the validation grid's borrower up to 3%.) */
static inline bool queue_waits(const struct ema_policy_ctx *c, int g, int home, bool admit)
{
	int32_t need = ema_policy_queue_need(c, home);

	if (need <= 0 || need > c->kv_capacity_pages[home])
		return false;
	return admit || c->knobs->reclaim_mode == EMA_RECLAIM_DROP ||
	       need >= ema_ledger_free_pages(c->ledger, g);
}

/* The run time until which the queue guard's hold keeps GPU g (whose
 * tenant is `home`) from lending for new requests, or -1 if it does not
 * now: a queue that waited at a step's end is often one that empties for
 * a moment between bursts, and pages lent in that moment came back by
 * reclaims with the next burst (QUEUE_HOLD_DEFAULT_S). */
static inline int64_t queue_hold_until(const struct ema_policy_ctx *c, int home)
{
	double hold = own(c)->queue_hold_s;
	int64_t last, until;

	if (!(hold > 0))
		return -1;
	last = ema_policy_queue_waited_ns(c, home);
	if (last < 0)
		return -1;
	until = last + (int64_t)llround(hold * 1e9);
	return until > ema_policy_now(c) ? until : -1;
}

/* The queue guard as lendable() applies it: the queue now, and for new
 * requests its hold. */
static inline bool queue_guard_refuses(const struct ema_policy_ctx *c, int g, int home, bool admit)
{
	return queue_waits(c, g, home, admit) || (admit && queue_hold_until(c, home) >= 0);
}

/* What GPU g may still lend under the lending rules, the headroom band,
 * the slowdown cap and the queue guard, and for an admission (`admit`) the lender guard:
 * like the TPOT budget it stops new requests on borrowed pages, not the
 * next page of a running one (refused, that request is preempted and
 * recomputed: on h200x2 the borrower then preempted 158 times against
 * static's 83). */
static inline __attribute__((always_inline)) int32_t lendable(const struct ema_policy_ctx *c,
							   struct ema_state *st, int g, bool admit)
{
	/* min(ema_lending_lendable, max_lent - lent, free - band_keep) from
	 * what init computed: lendable's by_free = free - reserve is never
	 * below the band's free - reserve - headroom (headroom >= 0), and a
	 * negative term gives 0 either way; the hooks ask per lender at every
	 * admission and page */
	const struct ema_ledger *l = c->ledger;
	int home = l->gpu[g].home_tenant;
	int32_t n = st->lent_limit[g] - ema_ledger_lent_pages(l, g);
	int32_t band = ema_ledger_free_pages(l, g) - st->band_keep[g];

	/* a tenant that borrows lends nothing (ema_lending_lendable) */
	if (home >= 0 && ema_ledger_borrowed_pages(l, home) > 0)
		return 0;
	if (band < n)
		n = band;
	if (n > 0 && home >= 0 && own(c)->queue_guard && queue_guard_refuses(c, g, home, admit))
		n = 0;
	if (admit && n > 0 && own(c)->lender_slowdown > 0 && c->ledger->gpu[g].home_tenant >= 0 &&
	    lender_guard_refuses(c, st, g))
		n = 0;
	return n > 0 ? n : 0;
}

/* The most `tenant` could borrow were every peer idle: lenders handing
 * out what they may ever lend, one page at a time to the lender
 * pick_lender chooses, as at run time, until no link has budget left. */
static int32_t max_borrow_total(const struct ema_policy_ctx *c, struct ema_state *st, int tenant)
{
	int32_t from[EMA_MAX_GPUS] = {0}, avail[EMA_MAX_GPUS] = {0}, lent[EMA_MAX_GPUS] = {0};
	int32_t total = 0, cap = st->max_borrow[tenant];

	for (int g = 0; g < c->n_gpus; g++) {
		int32_t n = ema_lending_max_lendable(c, g);
		int32_t band = ema_lending_kv_capacity(c, g) - st->band_keep[g];

		if (band < n)
			n = band > 0 ? band : 0;
		if (g != c->tenant_gpu[tenant])
			avail[g] = n < st->max_lent[g] ? n : st->max_lent[g];
	}
	if (!link_budgets(c)) {
		int64_t sum = 0;

		for (int g = 0; g < c->n_gpus; g++)
			sum += avail[g];
		return sum < cap ? (int32_t)sum : cap;
	}
	while (total < cap) {
		int g = pick_lender(c, st, tenant, from, total, avail, lent);

		if (g < 0)
			break;
		/* the whole budget of that link at once: pages are taken one
		 * by one at run time, but a link's budget only shrinks with
		 * its own pages (staged, it grows with every page: retried) */
		{
			int32_t b = budget_left(c, st, tenant, g, from, total, lent[g]);
			int32_t n = b < avail[g] ? b : avail[g];

			if (c->hw->topology == EMA_TOPO_SWITCH || path_staged(c))
				n = 1;
			if (n > cap - total)
				n = cap - total;
			from[g] += n;
			lent[g] += n;
			avail[g] -= n;
			total += n;
		}
	}
	return total;
}

/* Whether the staged budgets could grow, over all lenders, by a page or
 * more for each page borrowed (a link fast against HBM and many lenders:
 * link_share x the staged rate / the HBM rate, per page, times the
 * lenders): ema_borrowable is then not largest at nothing borrowed, and
 * admit_borrow_total would not bound it. Behind a switch the borrower's
 * ingress port caps the sum at its one budget less all it borrowed, which
 * grows by the slope less one per page: the lenders' count does not
 * enter. (With the count, an a100x8 tenant alone was bounded by what it
 * could reach only by borrowing first: a prompt between the two waited
 * at an idle GPU for ever, "no progress possible".) */
static bool budgets_outgrow(const struct ema_policy_ctx *c)
{
	const struct ema_hw_profile *hw = c->hw;
	double hbm = hw->hbm_read_gbps * hw->hbm_efficiency;
	double slope = hbm > 0 ? own(c)->link_share *
				 ema_cost_link_gbps(hw, true, c->knobs->copy_method, staged_slice(c)) / hbm : INFINITY;
	int links = c->hw->topology == EMA_TOPO_SWITCH ? 1 : c->n_gpus - 1;

	return !(slope * links < 1);
}

/* What `tenant` can be admitted with beyond its own GPU: ema_borrowable
 * of a tenant that holds nothing (no TPOT budget, no prefill yet), every
 * peer idle: each lender what it may ever lend, within its link budget at
 * nothing borrowed, and behind a switch the ingress port's, at most the
 * borrowing cap. The budgets do not grow here, where max_borrow_total
 * grows them with every page on the staged path: a borrowable that is
 * largest at nothing borrowed (each budget grows more slowly than the
 * pages borrowed) caps every admission at this. */
static int32_t admit_borrow_total(const struct ema_policy_ctx *c, struct ema_state *st,
				  int tenant)
{
	int32_t b = link_pages(c, st, tenant, 0), zero[EMA_MAX_GPUS] = {0};
	int64_t sum = 0;
	bool lb = link_budgets(c);

	for (int g = 0; g < c->n_gpus; g++) {
		int32_t n = ema_lending_max_lendable(c, g);
		int32_t band = ema_lending_kv_capacity(c, g) - st->band_keep[g];

		if (g == c->tenant_gpu[tenant])
			continue;
		if (band < n)
			n = band > 0 ? band : 0;
		if (st->max_lent[g] < n)
			n = st->max_lent[g];
		if (lb) {
			int32_t bg = budget_of(c, b, g, zero, 0, 0);

			if (bg < n)
				n = bg > 0 ? bg : 0;
		}
		sum += n;
	}
	if (lb && c->hw->topology == EMA_TOPO_SWITCH && sum > b)
		sum = b > 0 ? b : 0;
	return sum < st->max_borrow[tenant] ? (int32_t)sum : st->max_borrow[tenant];
}

/* borrow_rule=throughput: does borrowing raise tokens per second? A
 * memory-bound step serves a batch in proportion to its KV. Staged, it
 * takes about (W + L + R (1 + k)) / hbm (k: the borrower's own
 * interference per staged byte, relative to the effective HBM rate), so
 * borrowing pays only when W >= k L. In place within the link budget it
 * takes (W + L) / inplace_overlap_efficiency and serves L + R: it pays
 * when efficiency x (L + R) > L, R the most it can borrow. */
static bool borrowing_pays(const struct ema_policy_ctx *c, struct ema_state *st, int tenant)
{
	const struct ema_hw_profile *hw = c->hw;
	double w = (double)ema_model_weight_bytes(c->model);
	double l = (double)c->kv_capacity_pages[tenant] * (double)c->page_bytes;
	double eta = hw->inplace_overlap_efficiency > 0 && hw->inplace_overlap_efficiency < 1 ?
		     hw->inplace_overlap_efficiency : 1.0;

	if (path_staged(c))
		return w >= hw->interference_borrower * hw->hbm_efficiency * l;
	return eta * (l + (double)max_borrow_total(c, st, tenant) * (double)c->page_bytes) > l;
}

static int ema_init(const struct ema_policy_ctx *c, void *state, struct ema_error *err)
{
	struct ema_state *st = state;

	(void)err;
	/* what depends only on capacities and the shared knobs, fixed for
	 * the run: the hooks ask for it per GPU at every page and step */
	for (int g = 0; g < c->n_gpus; g++) {
		st->max_lent[g] = max_lent_compute(c, g);
		st->headroom[g] = headroom_pages(c, g);
		st->band_keep[g] = ema_lending_reserve_pages(c, g) + st->headroom[g];
		{
			int32_t cap = ema_lending_kv_capacity(c, g);
			int32_t floor_pages = c->ledger->gpu[g].home_tenant >= 0 ?
					      (int32_t)ceil(c->knobs->lender_floor * cap) : 0;

			st->lent_limit[g] = cap - floor_pages < st->max_lent[g] ?
					    cap - floor_pages : st->max_lent[g];
		}
	}
	for (int t = 0; t < c->n_tenants; t++) {
		st->max_borrow[t] = share_cap(c, t);
		st->never[t] = c->knobs->borrow_rule == EMA_BORROW_THROUGHPUT &&
			       !borrowing_pays(c, st, t);
		st->max_request[t] = st->never[t] ? 0 : max_borrow_total(c, st, t);
		/* (the same where the budgets do not grow: in place) */
		st->max_admit[t] = st->never[t] ? 0 :
				   path_staged(c) && link_budgets(c) && !budgets_outgrow(c) ?
				   admit_borrow_total(c, st, t) : st->max_request[t];
		if (st->max_admit[t] > st->max_request[t])
			st->max_admit[t] = st->max_request[t];
	}
	return EMA_OK;
}

/* Staging pages that `borrowed` remote pages need for the window: the
 * group being computed reads its slot while `depth` more are filled, so
 * depth + 1 group slots (found on the H200s: with `depth` slots the copy
 * of the next group waits for the current one and nothing overlaps). */
static int32_t staging_for(const struct ema_policy_ctx *c, int32_t borrowed)
{
	int groups = c->layer_groups > 0 ? c->layer_groups : 1;
	int slots = c->knobs->prefetch_depth + 1;

	if (slots > groups)
		slots = groups;
	/* one page more per slot, as ema_plan() asks for */
	return (int32_t)(((int64_t)borrowed * slots + groups - 1) / groups) + slots;
}

/* Whether the tenant's next iterations will stage: always on the staged
 * path, and on auto when its last one did. */
static bool will_stage(const struct ema_policy_ctx *c, const struct ema_state *st, int tenant)
{
	if (c->knobs->prefetch_depth <= 0)
		return false;
	return c->knobs->remote_path == EMA_PATH_STAGED ||
	       (c->knobs->remote_path == EMA_PATH_AUTO && st->staged_last[tenant]);
}

/* The engine's staging reserve of `tenant`, with a note of whether it
 * is set (the engine sets it only when asked). */
static void set_reserve(const struct ema_policy_ctx *c, struct ema_state *st, int tenant,
			int32_t reserve)
{
	ema_policy_staging_reserve(c, tenant, reserve);
	st->reserve_set[tenant] = reserve > 0;
}

/* Own free pages to keep for the staging area: what is borrowed now,
 * plus `more` pages about to be, needs, less the staging pages already
 * held; none while remote KV is read in place. (Before issue 11 the
 * reserve was that of the whole cap from the first borrowed page,
 * costing local KV before anything was gained.) */
static void update_reserve(const struct ema_policy_ctx *c, struct ema_state *st, int tenant,
			   int32_t more)
{
	int32_t r = 0;

	if (will_stage(c, st, tenant))
		r = staging_for(c, ema_ledger_borrowed_pages(c->ledger, tenant) + more) -
		    ema_policy_staging_held(c, tenant);
	set_reserve(c, st, tenant, r > 0 ? r : 0);
}

static int32_t ema_borrowable(const struct ema_policy_ctx *c, void *state, int tenant)
{
	struct ema_state *st = state;
	int32_t left = st->max_borrow[tenant] - ema_ledger_borrowed_pages(c->ledger, tenant);
	int32_t avail_g[EMA_MAX_GPUS] = {0}, budget[EMA_MAX_GPUS] = {0};
	const int32_t *from = c->ledger->borrowed[tenant];
	int32_t total = ema_ledger_borrowed_pages(c->ledger, tenant);
	int32_t b;
	int64_t avail = 0;
	/* in locals: the calls below could change them as far as the
	 * compiler knows */
	bool lb = link_budgets(c);
	int home = c->tenant_gpu[tenant], n_gpus = c->n_gpus;
	struct ema_pick pick = { -1, 0, 0 };

	/* The engine asks at every admission it tries (every step of a
	 * tenant with a queue): what is computed once here serves the link
	 * budgets and the TPOT budget's choice of lender alike. */
	if (st->never[tenant] || left <= 0)
		return 0;
	b = link_pages(c, st, tenant, total);
	for (int g = 0; g < n_gpus; g++) {
		int32_t n;

		if (g == home)
			continue;
		budget[g] = budget_of(c, b, g, from, total, ema_ledger_lent_pages(c->ledger, g));
		/* a link without budget adds nothing and is no one's pick */
		if (lb && budget[g] < 1)
			continue;
		n = avail_g[g] = lendable(c, st, g, true);
		if (n > 0)
			pick_consider(&pick, g, budget[g], n);
		if (lb)
			n = n < budget[g] ? n : budget[g];
		if (n > 0)
			avail += n;
	}
	/* (a budget that measured no prefill yet allows anything, at most
	 * INT32_MAX / 2 as left is: no lender to pick for it) */
	if (tpot_budget_on(c, tenant) && avail > 0 && prefill_share0(st, tenant) > 0) {
		/* pick_by_budget(c, tenant, avail_g, budget), picked above */
		int32_t t_left = tpot_pages_left(c, st, tenant, pick.best);

		avail = avail < t_left ? avail : t_left;
	}
	if (lb && c->hw->topology == EMA_TOPO_SWITCH) {
		/* the ingress port is shared by every lender: a GPU that lent
		 * nothing is bound by it alone */
		int32_t in = budget_of(c, b, home, from, total, 0);

		avail = avail < in ? avail : in;
	}
	return avail < left ? (int32_t)(avail > 0 ? avail : 0) : left;
}

/* ema_borrowable < want, shown from an upper bound of it: what each peer
 * may lend without the lender guard, the link budgets or the TPOT budget
 * (each of which only lowers it), at most what is left of the tenant's
 * borrowing cap. A queue that waits for memory asks at every step, and
 * its peers are often at their band (a few instructions a GPU here,
 * against ~1,900 in all for ema_borrowable; with the link budgets added
 * the bound cost more than it saved). */
static bool ema_borrowable_below(const struct ema_policy_ctx *c, void *state, int tenant,
				 int32_t want)
{
	struct ema_state *st = state;
	const struct ema_ledger *l = c->ledger;
	int32_t left = st->max_borrow[tenant] - ema_ledger_borrowed_pages(l, tenant);
	int64_t bound = 0;
	int home = c->tenant_gpu[tenant];

	if (st->never[tenant] || left <= 0)
		return want > 0;
	/* the TPOT budget's pages first: it is what holds a borrower's queue
	 * back once its links have room (borrowable: at most that) */
	if (tpot_pages_bound(c, st, tenant) < want)
		return true;
	for (int g = 0; g < c->n_gpus && bound < want; g++) {
		int h = l->gpu[g].home_tenant;
		int32_t n = st->lent_limit[g] - ema_ledger_lent_pages(l, g);
		int32_t band = ema_ledger_free_pages(l, g) - st->band_keep[g];

		/* lendable() without its lender guard: at least lendable() */
		if (g == home || (h >= 0 && ema_ledger_borrowed_pages(l, h) > 0))
			continue;
		if (band < n)
			n = band;
		if (n > 0 && h >= 0 && own(c)->queue_guard && queue_guard_refuses(c, g, h, true))
			continue;
		if (n > 0)
			bound += n;
	}
	if (bound > left)
		bound = left;
	return bound < want;
}

/* Its own KV capacity plus what it may borrow from idle peers, within
 * the link budgets (or the share cap) and each lender's slowdown cap. */
static int32_t ema_max_request_pages(const struct ema_policy_ctx *c, void *state, int tenant)
{
	const struct ema_state *st = state;

	return c->kv_capacity_pages[tenant] + st->max_request[tenant];
}

static int32_t ema_max_admit_pages(const struct ema_policy_ctx *c, void *state, int tenant)
{
	const struct ema_state *st = state;

	return c->kv_capacity_pages[tenant] + st->max_admit[tenant];
}

static int ema_choose_lender(const struct ema_policy_ctx *c, void *state, int tenant)
{
	struct ema_state *st = state;
	int32_t avail[EMA_MAX_GPUS] = {0}, budget[EMA_MAX_GPUS] = {0};
	const int32_t *from = c->ledger->borrowed[tenant];
	int32_t borrowed = ema_ledger_borrowed_pages(c->ledger, tenant), b;
	int best;

	if (st->never[tenant] || borrowed + 1 > st->max_borrow[tenant])
		return -1;
	/* pick_lender's choice, asking what a GPU may lend only of those
	 * with link budget left (a borrower at its budgets asks for page
	 * after page of a growing request) */
	b = link_pages(c, st, tenant, borrowed);
	{
		bool lb = link_budgets(c);
		int home = c->tenant_gpu[tenant], n_gpus = c->n_gpus;
		/* pick_by_budget(c, tenant, avail, budget), as they come */
		struct ema_pick pick = { -1, 0, 0 };

		for (int g = 0; g < n_gpus; g++) {
			if (g == home)
				continue;
			budget[g] = budget_of(c, b, g, from, borrowed,
					      ema_ledger_lent_pages(c->ledger, g));
			if (!lb || budget[g] >= 1)
				avail[g] = lendable(c, st, g, false);
			if (avail[g] > 0)
				pick_consider(&pick, g, budget[g], avail[g]);
		}
		best = pick.best;
	}
	/* staging for what is borrowed now and this page, when staging */
	if (best >= 0)
		update_reserve(c, st, tenant, 1);
	return best;
}

static int32_t ema_reclaim(const struct ema_policy_ctx *c, void *state, int gpu, int32_t need)
{
	int32_t headroom = (int32_t)ceil(c->knobs->headroom * ema_lending_kv_capacity(c, gpu));

	return ema_lending_reclaim(c, gpu, need + headroom, c->knobs->reclaim_mode);
}

/* In place or staged for this iteration: the knob, or on auto the path
 * whose step the cost model predicts shorter (ties: in place, which
 * needs no staging pages), where the platform overlaps in-place reads
 * with local ones. */
static bool plan_staged(const struct ema_policy_ctx *c, const struct ema_iteration *it,
			const double *inplace_ns)
{
	struct ema_step_cost st;
	double in_ns;

	if (c->knobs->prefetch_depth <= 0 || c->knobs->remote_path == EMA_PATH_INPLACE)
		return false;
	if (c->knobs->remote_path == EMA_PATH_STAGED)
		return true;
	/* a platform whose in-place reads do not overlap the local ones
	 * (the hw backend, until its kernel splits the grid) stages */
	if (!c->inplace_beside_local)
		return true;
	in_ns = inplace_ns != NULL ? *inplace_ns : ema_step_cost_inplace_ns(c->hw, it);
	/* staged can only be slower where its floor is (a borrower reading a
	 * few percent of its bytes remotely, in place within the budgets:
	 * most of ema's steps), without its per-lender rates */
	if (ema_step_cost_staged_floor_ns(c->hw, it) >= in_ns)
		return false;
	ema_step_cost(c->hw, it, true, &st);
	return st.total_ns < in_ns;
}

static void ema_plan(const struct ema_policy_ctx *c, void *state, struct ema_iteration *it)
{
	struct ema_state *st = state;
	int tn = it->tenant;
	uint64_t remote = 0;
	int32_t want, got = 0;
	int groups = c->layer_groups > 0 ? c->layer_groups : 1;
	int depth = c->knobs->prefetch_depth < groups ? c->knobs->prefetch_depth : groups;
	double in_ns;
	const double *inplace_ns = NULL;

	/* The in-place cost serves the TPOT budget's note and the choice of
	 * path alike (it reads neither the method nor the staging pages set
	 * below), and every iteration pays for it: computed once. */
	if (own(c)->tpot_slack > 0 && tn >= 0 && tn < c->n_tenants) {
		in_ns = ema_step_cost_inplace_ns(c->hw, it);
		inplace_ns = &in_ns;
	}
	note_iteration(c, st, it, inplace_ns);
	for (int i = 0; i < it->n_remote; i++)
		remote += it->remote[i].bytes;
	it->layer_groups = groups;
	/* the prefetch copies use the configured method (gather kernel by
	 * default; "batch" keeps them on the copy engines, off the SMs) */
	it->method = c->knobs->copy_method;
	it->staging_pages = NULL;
	it->n_staging_pages = 0;
	if (remote == 0 || depth <= 0) {
		it->prefetch_depth = remote == 0 ? depth : 0;
		return;
	}
	st->staged_last[tn] = plan_staged(c, it, inplace_ns);
	if (!st->staged_last[tn]) {
		/* in place: a share of the SMs reads each lender's pages over
		 * its link beside the local reads; no staging pages */
		it->prefetch_depth = 0;
		if (ema_policy_staging_held(c, tn) > 0)
			ema_policy_staging_release(c, tn);
		set_reserve(c, st, tn, 0);
		return;
	}
	/* depth + 1 slots of one group each, see staging_for() */
	/* plus one page per slot: a group's share of each page is rounded,
	 * and a ring a few bytes short of depth + 1 slots holds only depth
	 * of them (on the H200s that serialised every copy with its read) */
	want = (int32_t)(((remote * (uint64_t)(depth + 1 < groups ? depth + 1 : groups)) /
			  (uint64_t)groups + c->page_bytes - 1) / c->page_bytes) +
	       (depth + 1 < groups ? depth + 1 : groups);
	/* The staging pages stay with the tenant from one iteration to the
	 * next while it borrows (allocating and freeing hundreds of pages
	 * per iteration cost a tenth of the simulation's time). */
	got = ema_policy_staging_fill(c, tn, want);
	update_reserve(c, st, tn, 0);
	/* A staging area short of depth + 1 slots (the tenant used its
	 * reserve for KV) still stages, with less lookahead: the platforms
	 * size the window from the pages given (a single slot means each
	 * group's copy waits for the previous group's reads). With no page
	 * at all the remote KV is read in place. */
	it->prefetch_depth = got > 0 ? depth : 0;
	it->staging_pages = got > 0 ? ema_policy_staging_pages(c, tn) : NULL;
	it->n_staging_pages = got;
}

/* Whether a GPU with a tenant and lent pages is under its headroom: the
 * lenders after_iteration reclaims on. */
static bool lender_short_compute(const struct ema_policy_ctx *c, const struct ema_state *st)
{
	const struct ema_ledger *l = c->ledger;

	/* the GPUs with a tenant that lend, in GPU order */
	for (uint32_t m = ema_ledger_lending_home(l); m != 0; m &= m - 1) {
		int g = __builtin_ctz(m);

		if (ema_ledger_free_pages(l, g) < st->headroom[g])
			return true;
	}
	return false;
}

/* lender_short_compute, remembered for the ledger's operation count. */
static bool lender_short(const struct ema_policy_ctx *c, struct ema_state *st)
{
	if (!st->short_valid || st->short_ops != c->ledger->ops) {
		st->short_any = lender_short_compute(c, st);
		st->short_ops = c->ledger->ops;
		st->short_valid = true;
	}
	return st->short_any;
}

static void ema_after_iteration(const struct ema_policy_ctx *c, void *state, int tenant)
{
	const struct ema_policy_cfg *pc = c->knobs;
	struct ema_state *st = state;

	if (ema_ledger_borrowed_pages(c->ledger, tenant) == 0) {
		/* nothing borrowed any more: the staging area goes back (most
		 * steps of most tenants: nothing to give back) */
		if (ema_policy_staging_held(c, tenant) > 0)
			ema_policy_staging_release(c, tenant);
		if (st->reserve_set[tenant])
			set_reserve(c, st, tenant, 0);
	}
	/* Pre-preemption: every lender keeps its headroom free (none is
	 * under it at most steps: nothing to visit). */
	if (!lender_short(c, st))
		return;
	for (int g = 0; g < c->n_gpus; g++) {
		int32_t headroom, free_pages;

		if (ema_ledger_lent_pages(c->ledger, g) == 0 || c->ledger->gpu[g].home_tenant < 0)
			continue;
		headroom = st->headroom[g];
		free_pages = ema_ledger_free_pages(c->ledger, g);
		if (free_pages < headroom) {
			int64_t now = ema_policy_now(c);
			int32_t freed = ema_lending_reclaim(c, g, headroom - free_pages, pc->reclaim_mode);

			if (freed > 0)
				ema_policy_record_reclaim(c, g, freed, now, 0);
		}
	}
}

/* ---- what the hooks read and change between events ----------------------
 *
 * (for decode leaping, policy.h leap_ok: ema_leap_ok below; about 280
 * instructions of plan_iteration and 120 of after_iteration per step,
 * callgrind)
 * - plan_iteration, at each step's start, changes ema's state whenever a
 *   guard is on (the defaults): note_iteration folds the step into t's
 *   decayed sums (busy_ns, prefill_ns, read_bytes[t][], read_ns) with
 *   exp(-(now - noted_ns[t]) / 10 s) and the step's in-place cost
 *   (weight, local KV and activation bytes, FLOPs, remote bytes). These
 *   are floating-point sums in step order: a leap stays byte-identical
 *   only if every step is noted in order, at its own start time, with its
 *   own figures, before a later hook reads them (t's TPOT budget in its
 *   borrowable; the lender guard of every GPU t reads from, in any
 *   tenant's borrowable). leap_ok's "changes no state" therefore holds
 *   only with policy.ema.tpot_slack = lender_slowdown = 0; with the guards
 *   on, ema needs each skipped step's start time and figures handed to it
 *   (or plan_iteration called for each, at its start).
 * - For a batch that reads nothing remote, what it sets in the iteration
 *   is fixed: layer_groups, method = policy.copy_method, prefetch_depth =
 *   min(policy.prefetch_depth, layer_groups), no staging pages; it touches
 *   neither the ledger nor the staging area. With remote reads it picks
 *   the path per step and, staged, fills the staging area.
 * - after_iteration gives t's staging area back when t borrows nothing (a
 *   no-op from the second step on), then reclaims on every GPU with lent
 *   pages whose free pages are under st->headroom: a no-op over a leap of
 *   t if no lender is under its headroom and t's GPU, where it has lent
 *   pages, stays at or above it.
 * - borrowable and choose_lender of t are not called in a leap (nothing
 *   waits; pages come from t's GPU). Other tenants' hooks read t's GPU via
 *   lendable(): ema_lending_lendable (free - reserve, the floor, t's
 *   borrowed total), max_lent - lent, free - band_keep, and the lender
 *   guard (borrowers' sums, t's among them once t read remote KV).
 * - reclaim runs only for a tenant that needs its own pages and lent some. */

/* Decode leaping (doc/policies.md, "Leaping"), from what the note above
 * says the hooks read. The engine plays a leap's steps back before every
 * event of another tenant, so other tenants' hooks see t's GPU (lendable()
 * and all) and t's decayed sums as stepping would:
 * - the steps' notes: the engine hands each leapt step to ema_plan at its
 *   own start, with its own figures (plan_each), as it plays the steps
 *   back, so the decayed sums come out as stepping leaves them before any
 *   other tenant's hook (the lender guard) reads them;
 * - other tenants may borrow from t's GPU mid-leap: their reads cross it
 *   from then on, which the simulator's times of t's later steps follow
 *   (it times them again at the new rates), and their pages come out of
 *   t's free pages, which the engine checks the rest of the plan against
 *   (leap_holds' range);
 * - after_iteration of t does nothing while t holds no staging area and
 *   asked for no reserve (t's own; nothing changes them in a leap) and no
 *   lender with a tenant is under its headroom. Other lenders' free pages
 *   change at events (a leaping lender's are played back before them),
 *   after each of which the engine asks leap_holds: the leap ends at the
 *   step in progress once one is under its headroom, and that step's end
 *   reclaims as stepping's would. A leaping lender's own steps stay at or
 *   above its headroom (range free_min), so none of them would reclaim;
 * - ema_plan sets the same fields at every step of a batch without
 *   remote KV;
 * - with requests of t waiting, borrowable (all that decides their
 *   admission beyond t's own pages) reads the other GPUs: it is 0, the
 *   promise of waiting_ok, while each of them lends nothing for reasons
 *   only a ledger operation changes (lends_nothing), and leap_holds ends
 *   the leap at the step in progress after the event that changes one.
 *   The one change no event shows, pages freed in another tenant's leap,
 *   is kept out by that leap's range (others_wait: free_max = the band).
 * On the bench's 8 whole H200s ema leaps as static does; under pressure
 * every GPU that does not borrow leaps, and where no GPU has a page to
 * lend (every tenant overloaded), the tenants whose queues wait too. */
/* Whether GPU g could lend nothing, whatever the lender guard and the
 * budgets say: lendable()'s structural zeros, which only the ledger's
 * operations change (its home tenant borrows, its lent pages are at its
 * limit, or its free pages within the band it keeps). */
static bool lends_nothing(const struct ema_policy_ctx *c, const struct ema_state *st, int g)
{
	const struct ema_ledger *l = c->ledger;
	int home = l->gpu[g].home_tenant;

	return (home >= 0 && ema_ledger_borrowed_pages(l, home) > 0) ||
	       st->lent_limit[g] - ema_ledger_lent_pages(l, g) <= 0 ||
	       ema_ledger_free_pages(l, g) - st->band_keep[g] <= 0;
}

/* Whether borrowable would answer 0 for `tenant` because nothing can be
 * lent to it (ema_borrowable: no GPU with a page to lend adds to avail,
 * and none is picked for the TPOT budget), or it may borrow no more. */
static bool borrows_nothing(const struct ema_policy_ctx *c, const struct ema_state *st,
			    int tenant)
{
	int home = c->tenant_gpu[tenant];

	if (st->never[tenant] ||
	    st->max_borrow[tenant] - ema_ledger_borrowed_pages(c->ledger, tenant) <= 0)
		return true;
	for (int g = 0; g < c->n_gpus; g++)
		if (g != home && !lends_nothing(c, st, g))
			return false;
	return true;
}

static bool ema_leap_holds(const struct ema_policy_ctx *c, void *state, int tenant,
			   struct ema_leap_range *range)
{
	struct ema_state *st = state;
	int g = c->tenant_gpu[tenant];

	if (lender_short(c, st))
		return false;
	/* a lender's own steps must not take it under its headroom either:
	 * that step's end would reclaim */
	if ((ema_ledger_lending_home(c->ledger) >> g) & 1u)
		range->free_min = st->headroom[g];
	/* A tenant whose queue waits leaps while no GPU could lend it a
	 * page (borrowable 0: its own pages alone admit the front), which
	 * only a ledger operation changes, after which the engine asks
	 * again. Pages freed in others' leaps change it with no event: while
	 * some tenant leaps on that promise, a GPU that lends nothing only
	 * because its free pages are within its band keeps them there. */
	if (range->waiting) {
		if (!borrows_nothing(c, st, tenant))
			return false;
		range->waiting_ok = true;
	}
	if (range->others_wait && st->lent_limit[g] - ema_ledger_lent_pages(c->ledger, g) > 0 &&
	    st->band_keep[g] < range->free_max)
		range->free_max = st->band_keep[g];
	return true;
}

static bool ema_leap_ok(const struct ema_policy_ctx *c, void *state, int tenant,
			struct ema_leap_range *range)
{
	const struct ema_state *st = state;

	if (st->reserve_set[tenant] || ema_policy_staging_held(c, tenant) > 0 ||
	    !ema_leap_holds(c, state, tenant, range))
		return false;
	range->plan_each = own(c)->tpot_slack > 0 || own(c)->lender_slowdown > 0;
	return true;
}

/* The earliest run time, from now, at which the lender guard stops
 * refusing GPU g, or -1 for never within 1e12 ns. Its figure only falls
 * while no step is noted (a borrower's decayed bytes over its decayed run
 * time and the gap since: lender_slowdown_compute), so the first
 * nanosecond it is under the limit is found by bisection, with the
 * figure the guard compares. */
static int64_t guard_lifts_at(const struct ema_policy_ctx *c, struct ema_state *st, int g,
			      int64_t now)
{
	double limit = own(c)->lender_slowdown;
	int64_t lo = now, hi = now + (int64_t)1e12;

	lender_slowdown_compute(c, st, hi);
	if (st->slow[g] >= limit)
		return -1;
	while (hi - lo > 1) {
		int64_t mid = lo + (hi - lo) / 2;

		lender_slowdown_compute(c, st, mid);
		if (st->slow[g] >= limit)
			lo = mid;
		else
			hi = mid;
	}
	st->slow_valid = false; /* (computed for other times than now) */
	return hi;
}

/* Nothing is pending and `tenant` cannot run (policy.h): what only its
 * own steps would change, or time. Its staging area and reserve go back
 * where it borrows nothing (after_iteration gives them back after a
 * step, and a tenant whose borrowing request was preempted, with nothing
 * left running, takes no more steps), and the lender guard, which
 * refuses a GPU while the reads of its pages over the last 10 s were
 * heavy, relents with time alone: the earliest time it stops refusing a
 * GPU that could lend otherwise. */
static int64_t ema_stalled(const struct ema_policy_ctx *c, void *state, int tenant)
{
	struct ema_state *st = state;
	int64_t now = ema_policy_now(c), at = -1;

	if (ema_ledger_borrowed_pages(c->ledger, tenant) == 0 &&
	    (ema_policy_staging_held(c, tenant) > 0 || st->reserve_set[tenant])) {
		ema_policy_staging_release(c, tenant);
		set_reserve(c, st, tenant, 0);
		at = now;
	}
	/* the queue guard's hold ends with time alone, where it is all that
	 * keeps a GPU from lending for new requests */
	if (own(c)->queue_guard && own(c)->queue_hold_s > 0 && !st->never[tenant])
		for (int g = 0; g < c->n_gpus; g++) {
			int home = c->ledger->gpu[g].home_tenant;
			int64_t w;

			if (g == c->tenant_gpu[tenant] || home < 0 ||
			    lendable(c, st, g, false) == 0 || queue_waits(c, g, home, true))
				continue;
			w = queue_hold_until(c, home);
			if (w >= now && (at < 0 || w < at))
				at = w;
		}
	if (own(c)->lender_slowdown > 0 && !st->never[tenant])
		for (int g = 0; g < c->n_gpus; g++) {
			int home = c->ledger->gpu[g].home_tenant;
			int64_t w;

			/* (only the lender guard changes with time: a GPU
			 * whose queue guard refuses waits for its tenant) */
			if (g == c->tenant_gpu[tenant] || home < 0 ||
			    lendable(c, st, g, false) == 0 || lendable(c, st, g, true) > 0 ||
			    (own(c)->queue_guard && queue_guard_refuses(c, g, home, true)))
				continue;
			w = guard_lifts_at(c, st, g, now);
			if (w >= now && (at < 0 || w < at))
				at = w;
		}
	return at;
}

const struct ema_policy_ops ema_policy_ema = {
	.name = "ema",
	.summary = "borrow peer memory within per-link budgets, read remote KV in place or staged, reclaim ahead with headroom",
	.state_size = sizeof(struct ema_state),
	.knobs = ema_knob_keys,
	.knobs_size = sizeof(struct ema_knobs),
	.knob_defaults = &ema_knob_defaults,
	.init = ema_init,
	.borrowable = ema_borrowable,
	.borrowable_below = ema_borrowable_below,
	.max_request_pages = ema_max_request_pages,
	.max_admit_pages = ema_max_admit_pages,
	.choose_lender = ema_choose_lender,
	.reclaim = ema_reclaim,
	.plan_iteration = ema_plan,
	.plan_leap = ema_plan_leap,
	.after_iteration = ema_after_iteration,
	.leap_ok = ema_leap_ok,
	.leap_holds = ema_leap_holds,
	.stalled = ema_stalled,
};
