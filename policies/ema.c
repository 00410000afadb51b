/* ema.c: the EMA design. A tenant whose GPU is full borrows pages from
 * peers, up to what the link can hide (or policy.max_remote_share of its
 * KV); before attention reads remote KV, a sliding window of
 * policy.prefetch_depth layer groups is copied into a local staging area
 * (charged to the borrower's memory: (depth + 1) x remote bytes / layer
 * groups, for the duration of each iteration), so that
 * remote memory performs like local memory while the link keeps up.
 * Lenders stay whole: after every iteration each lender with lent pages
 * keeps policy.headroom of its KV free by reclaiming ahead of need
 * ("pre-preemption"), and a lender that still runs out reclaims at once. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lending.h"

struct ema_state {
	int32_t max_borrow[EMA_MAX_TENANTS]; /* computed once: capacities do not change */
	int32_t max_lent[EMA_MAX_GPUS];      /* per lender, from lender_max_slowdown */
	/* staging pages held during each tenant's iteration in flight */
	int32_t *staging[EMA_MAX_TENANTS];
	int32_t n_staging[EMA_MAX_TENANTS];
	int32_t cap_staging[EMA_MAX_TENANTS];
};

/* Share of the link the auto cap plans to use: prefetches must finish
 * within an iteration with some slack for reclaim traffic and jitter. */
#define EMA_LINK_SAFETY 0.85

/* Remote KV is re-read at every decode step, so it is hidden only while
 * copying it takes no longer than the step that reads it:
 *     R / link <= (W + L + R) / hbm   =>   R <= (W + L) / (hbm/link - 1)
 * with W the weights, L the local KV and hbm, link the effective rates.
 * Worked example, h200x2 capped at 24 GiB, llama-3-8b: W = 16.1 GB,
 * L = 4629 pages = 9.7 GB, hbm = 4357 x 0.7 = 3050 GB/s, link =
 * min(gather 372, link 402) = 372 GB/s: R <= 0.85 x 25.8 GB / 7.2 = 3.0 GB
 * = 1452 pages of 2 MiB, a third of the local KV. On 4 x A100 (direct
 * links to 3 peers) the link term is 3 x min(gather, link). With
 * max_remote_share > 0 the cap is that share of the tenant's KV instead. */
static int32_t max_borrow_compute(struct ema_engine *e, int tenant)
{
	const struct ema_hw_profile *hw = &e->cfg->hw;
	double s = e->cfg->policy.max_remote_share;
	double hbm, link, local, cap;

	if (strcmp(e->cfg->policy.borrow_rule, "throughput") == 0) {
		/* A memory-bound step takes about (W + L + R (1 + k)) / hbm and
		 * serves a batch in proportion to L + R (k: the borrower's own
		 * interference per staged byte, relative to the effective HBM
		 * rate), so tokens per second grow with R only when W >= k L. */
		double w = (double)ema_model_weight_bytes(&e->cfg->model);
		double l = (double)e->tenants[tenant].kv_capacity_pages * (double)e->page_bytes;
		double k = hw->interference_borrower * hw->hbm_efficiency;

		if (w < k * l)
			return 0;
	}

	if (s >= 1.0)
		return INT32_MAX / 2;
	if (s > 0)
		/* remote <= s x (local + remote)  <=>  remote <= s/(1-s) x local */
		return (int32_t)floor(s / (1.0 - s) * e->tenants[tenant].kv_capacity_pages);
	hbm = hw->hbm_read_gbps * hw->hbm_efficiency;
	/* one copy stream per link, at most at the gather kernel's rate; a
	 * direct topology has a link to each peer, a switch one port */
	link = hw->gather_gbps > 0 && hw->gather_gbps < hw->link_gbps ? hw->gather_gbps
								       : hw->link_gbps;
	if (strcmp(hw->topology, "switch") != 0)
		link *= hw->n_gpus - 1;
	/* what a pull keeps while the borrower computes (calibrated) */
	if (hw->pull_share_under_load > 0 && hw->pull_share_under_load < 1)
		link *= hw->pull_share_under_load;
	if (link <= 0 || hbm <= link)
		return INT32_MAX / 2;
	local = (double)ema_model_weight_bytes(&e->cfg->model) +
		(double)e->tenants[tenant].kv_capacity_pages * (double)e->page_bytes;
	cap = EMA_LINK_SAFETY * local / (hbm / link - 1.0);
	return (int32_t)floor(cap / (double)e->page_bytes);
}

static int32_t max_borrow(struct ema_engine *e, int tenant)
{
	return ((struct ema_state *)e->policy_state)->max_borrow[tenant];
}

/* Pages a lender may have out so that borrowers pulling them every step
 * slow its memory-bound work by at most s: the pull rate is about the
 * lent bytes per borrower step, (W + L) / (hbm x efficiency), and costs
 * the lender interference_lender x rate / hbm, so
 *     lent <= s x (W + L) x efficiency / interference_lender.
 * (The borrower's W + L stands in for its step; tenants share a model.) */
static int32_t max_lent_compute(struct ema_engine *e, int gpu)
{
	const struct ema_hw_profile *hw = &e->cfg->hw;
	double s = e->cfg->policy.lender_max_slowdown;
	double local, cap;

	if (s <= 0 || hw->interference_lender <= 0)
		return INT32_MAX / 2;
	local = (double)ema_model_weight_bytes(&e->cfg->model) +
		(double)ema_lending_kv_capacity(e, gpu) * (double)e->page_bytes;
	cap = s * local * hw->hbm_efficiency / hw->interference_lender;
	return (int32_t)floor(cap / (double)e->page_bytes);
}

static int ema_init(struct ema_engine *e, void *state, struct ema_error *err)
{
	struct ema_state *st = state;

	for (int t = 0; t < e->n_tenants; t++)
		st->max_borrow[t] = max_borrow_compute(e, t);
	for (int g = 0; g < e->ledger.n_gpus; g++)
		st->max_lent[g] = max_lent_compute(e, g);
	return EMA_OK;
}

/* The staging arrays grow in ema_plan() and live as long as the engine;
 * their pages are the ledger's, which the engine tears down itself. */
static void ema_fini(struct ema_engine *e, void *state)
{
	struct ema_state *st = state;

	for (int t = 0; t < EMA_MAX_TENANTS; t++) {
		free(st->staging[t]);
		st->staging[t] = NULL;
		st->n_staging[t] = st->cap_staging[t] = 0;
	}
}

/* What GPU g may still lend under the lending rules and the slowdown cap. */
static int32_t lendable(struct ema_engine *e, const struct ema_state *st, int g)
{
	int32_t n = ema_lending_lendable(e, g);
	int32_t left = st->max_lent[g] - ema_ledger_lent_pages(&e->ledger, g);

	if (left < n)
		n = left;
	return n > 0 ? n : 0;
}

/* Staging pages that `borrowed` remote pages need for the window: the
 * group being computed reads its slot while `depth` more are filled, so
 * depth + 1 group slots (found on the H200s: with `depth` slots the copy
 * of the next group waits for the current one and nothing overlaps). */
static int32_t staging_for(struct ema_engine *e, int32_t borrowed)
{
	int groups = e->cfg->serving.layer_groups > 0 ? e->cfg->serving.layer_groups : 1;
	int slots = e->cfg->policy.prefetch_depth + 1;

	if (slots > groups)
		slots = groups;
	/* one page more per slot, as ema_plan() asks for */
	return (int32_t)(((int64_t)borrowed * slots + groups - 1) / groups) + slots;
}

/* Own free pages to keep for the staging area: what all we may borrow
 * needs, less the staging pages already held. */
static void update_reserve(struct ema_engine *e, struct ema_state *st, int tenant)
{
	int32_t r = staging_for(e, max_borrow(e, tenant)) - st->n_staging[tenant];

	e->tenants[tenant].local_reserve = r > 0 ? r : 0;
}

static int32_t ema_borrowable(struct ema_engine *e, void *state, int tenant)
{
	int32_t left = max_borrow(e, tenant) - ema_ledger_borrowed_pages(&e->ledger, tenant);
	int32_t avail = 0;

	for (int g = 0; g < e->ledger.n_gpus; g++)
		if (g != e->tenants[tenant].gpu)
			avail += lendable(e, state, g);

	if (left < 0)
		left = 0;
	return left < avail ? left : avail;
}

static int ema_choose_lender(struct ema_engine *e, void *state, int tenant)
{
	struct ema_tenant *t = &e->tenants[tenant];
	int32_t borrowed = ema_ledger_borrowed_pages(&e->ledger, tenant);

	if (borrowed + 1 > max_borrow(e, tenant))
		return -1;
	/* Keep our own pages free for the staging area of all we may
	 * borrow, from the first borrowed page on: a reserve that grew with
	 * each page was always a few pages short, and a ring short of
	 * depth + 1 slots overlaps nothing. */
	update_reserve(e, state, tenant);
	{
		int best = -1;
		int32_t best_n = 0;

		for (int g = 0; g < e->ledger.n_gpus; g++) {
			int32_t n = g == t->gpu ? 0 : lendable(e, state, g);

			if (n > best_n) {
				best = g;
				best_n = n;
			}
		}
		return best;
	}
}

static int32_t ema_reclaim(struct ema_engine *e, void *state, int gpu, int32_t need)
{
	int32_t headroom = (int32_t)ceil(e->cfg->policy.headroom * ema_lending_kv_capacity(e, gpu));

	return ema_lending_reclaim(e, gpu, need + headroom, e->cfg->policy.reclaim_mode);
}

static void ema_plan(struct ema_engine *e, void *state, struct ema_iteration *it)
{
	struct ema_state *st = state;
	int tn = it->tenant;
	uint64_t remote = 0;
	int32_t want, got = 0;
	int groups = e->cfg->serving.layer_groups > 0 ? e->cfg->serving.layer_groups : 1;
	int depth = e->cfg->policy.prefetch_depth < groups ? e->cfg->policy.prefetch_depth : groups;

	for (int i = 0; i < it->n_remote; i++)
		remote += it->remote[i].bytes;
	it->layer_groups = groups;
	/* the prefetch copies use the configured method (gather kernel by
	 * default; "batch" keeps them on the copy engines, off the SMs) */
	it->method = strcmp(e->cfg->policy.copy_method, "batch") == 0 ? EMA_COPY_BATCH :
		     strcmp(e->cfg->policy.copy_method, "per_page") == 0 ? EMA_COPY_PER_PAGE :
		     EMA_COPY_GATHER;
	it->staging_pages = NULL;
	it->n_staging_pages = 0;
	if (remote == 0 || depth <= 0) {
		it->prefetch_depth = remote == 0 ? depth : 0;
		return;
	}
	/* depth + 1 slots of one group each, see staging_for() */
	/* plus one page per slot: a group's share of each page is rounded,
	 * and a ring a few bytes short of depth + 1 slots holds only depth
	 * of them (on the H200s that serialised every copy with its read) */
	want = (int32_t)(((remote * (uint64_t)(depth + 1 < groups ? depth + 1 : groups)) /
			  (uint64_t)groups + e->page_bytes - 1) / e->page_bytes) +
	       (depth + 1 < groups ? depth + 1 : groups);
	if (want > st->cap_staging[tn]) {
		int32_t *n = realloc(st->staging[tn], (size_t)want * 2 * sizeof *n);

		if (n != NULL) {
			st->staging[tn] = n;
			st->cap_staging[tn] = want * 2;
		}
	}
	/* The staging pages stay with the tenant from one iteration to the
	 * next while it borrows (allocating and freeing hundreds of pages
	 * per iteration cost a tenth of the simulation's time). */
	got = st->n_staging[tn];
	while (got < want && got < st->cap_staging[tn]) {
		int32_t p = ema_ledger_alloc(&e->ledger, it->gpu, tn, EMA_PAGE_STAGING);

		if (p < 0)
			break;
		st->staging[tn][got++] = p;
	}
	st->n_staging[tn] = got;
	update_reserve(e, st, tn);
	/* A staging area short of depth + 1 slots (the tenant used its
	 * reserve for KV) still stages, with less lookahead: the platforms
	 * size the window from the pages given (a single slot means each
	 * group's copy waits for the previous group's reads). With no page
	 * at all the remote KV is read in place. */
	it->prefetch_depth = got > 0 ? depth : 0;
	it->staging_pages = got > 0 ? st->staging[tn] : NULL;
	it->n_staging_pages = got;
	e->tenants[tn].staging_pages = got;
}

static void ema_after_iteration(struct ema_engine *e, void *state, int tenant)
{
	struct ema_state *st = state;
	const struct ema_policy_cfg *pc = &e->cfg->policy;

	if (ema_ledger_borrowed_pages(&e->ledger, tenant) == 0) {
		/* nothing borrowed any more: the staging area goes back */
		for (int32_t i = 0; i < st->n_staging[tenant]; i++)
			ema_ledger_free(&e->ledger, e->tenants[tenant].gpu, st->staging[tenant][i]);
		st->n_staging[tenant] = 0;
		e->tenants[tenant].staging_pages = 0;
		e->tenants[tenant].local_reserve = 0;
	}
	/* Pre-preemption: every lender keeps its headroom free. */
	for (int g = 0; g < e->ledger.n_gpus; g++) {
		int32_t headroom, free_pages;

		if (ema_ledger_lent_pages(&e->ledger, g) == 0 || e->ledger.gpu[g].home_tenant < 0)
			continue;
		headroom = (int32_t)ceil(pc->headroom * ema_lending_kv_capacity(e, g));
		free_pages = ema_ledger_free_pages(&e->ledger, g);
		if (free_pages < headroom) {
			int64_t now = ema_engine_now(e);
			int32_t freed = ema_lending_reclaim(e, g, headroom - free_pages, pc->reclaim_mode);

			if (freed > 0)
				ema_engine_record_reclaim(e, g, freed, now, 0);
		}
	}
}

const struct ema_policy_ops ema_policy_ema = {
	.name = "ema",
	.summary = "borrow peer memory, prefetch remote KV by layer group, reclaim ahead with headroom",
	.state_size = sizeof(struct ema_state),
	.init = ema_init,
	.fini = ema_fini,
	.borrowable = ema_borrowable,
	.choose_lender = ema_choose_lender,
	.reclaim = ema_reclaim,
	.plan_iteration = ema_plan,
	.after_iteration = ema_after_iteration,
};
