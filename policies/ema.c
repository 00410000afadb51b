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
 * min(gather 372, link 402) x pull_share_under_load 0.938 = 349 GB/s:
 * R <= 0.85 x 25.8 GB / 7.73 = 2.83 GB = 1350 pages of 2 MiB, 29% of the
 * local KV (tests/test_model.c). On 4 x A100 (direct
 * links to 3 peers) the link term is 3 x min(gather, link). With
 * max_remote_share > 0 the cap is that share of the tenant's KV instead. */
static int32_t max_borrow_compute(const struct ema_policy_ctx *c, int tenant)
{
	const struct ema_hw_profile *hw = c->hw;
	double s = c->knobs->max_remote_share;
	double hbm, link, local, cap;

	if (c->knobs->borrow_rule == EMA_BORROW_THROUGHPUT) {
		/* A memory-bound step takes about (W + L + R (1 + k)) / hbm and
		 * serves a batch in proportion to L + R (k: the borrower's own
		 * interference per staged byte, relative to the effective HBM
		 * rate), so tokens per second grow with R only when W >= k L. */
		double w = (double)ema_model_weight_bytes(c->model);
		double l = (double)c->kv_capacity_pages[tenant] * (double)c->page_bytes;
		double k = hw->interference_borrower * hw->hbm_efficiency;

		if (w < k * l)
			return 0;
	}

	if (s >= 1.0)
		return INT32_MAX / 2;
	if (s > 0)
		/* remote <= s x (local + remote)  <=>  remote <= s/(1-s) x local */
		return (int32_t)floor(s / (1.0 - s) * c->kv_capacity_pages[tenant]);
	hbm = hw->hbm_read_gbps * hw->hbm_efficiency;
	/* one copy stream per link, at most at the gather kernel's rate; a
	 * direct topology has a link to each peer, a switch one port */
	link = hw->gather_gbps > 0 && hw->gather_gbps < hw->link_gbps ? hw->gather_gbps
								       : hw->link_gbps;
	if (hw->topology != EMA_TOPO_SWITCH)
		link *= hw->n_gpus - 1;
	/* what a pull keeps while the borrower computes (calibrated) */
	if (hw->pull_share_under_load > 0 && hw->pull_share_under_load < 1)
		link *= hw->pull_share_under_load;
	if (link <= 0 || hbm <= link)
		return INT32_MAX / 2;
	local = (double)ema_model_weight_bytes(c->model) +
		(double)c->kv_capacity_pages[tenant] * (double)c->page_bytes;
	cap = EMA_LINK_SAFETY * local / (hbm / link - 1.0);
	return (int32_t)floor(cap / (double)c->page_bytes);
}

static int32_t max_borrow(const struct ema_state *st, int tenant)
{
	return st->max_borrow[tenant];
}

/* Pages a lender may have out so that borrowers pulling them every step
 * slow its memory-bound work by at most s: the pull rate is about the
 * lent bytes per borrower step, (W + L) / (hbm x efficiency), and costs
 * the lender interference_lender x rate / hbm, so
 *     lent <= s x (W + L) x efficiency / interference_lender.
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
	cap = s * local * hw->hbm_efficiency / hw->interference_lender;
	return (int32_t)floor(cap / (double)c->page_bytes);
}

static int ema_init(const struct ema_policy_ctx *c, void *state, struct ema_error *err)
{
	struct ema_state *st = state;

	for (int t = 0; t < c->n_tenants; t++)
		st->max_borrow[t] = max_borrow_compute(c, t);
	for (int g = 0; g < c->n_gpus; g++)
		st->max_lent[g] = max_lent_compute(c, g);
	return EMA_OK;
}

/* What GPU g may still lend under the lending rules and the slowdown cap. */
static int32_t lendable(const struct ema_policy_ctx *c, const struct ema_state *st, int g)
{
	int32_t n = ema_lending_lendable(c, g);
	int32_t left = st->max_lent[g] - ema_ledger_lent_pages(c->ledger, g);

	if (left < n)
		n = left;
	return n > 0 ? n : 0;
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

/* Own free pages to keep for the staging area: what all we may borrow
 * needs, less the staging pages already held. */
static void update_reserve(const struct ema_policy_ctx *c, struct ema_state *st, int tenant)
{
	int32_t r = staging_for(c, max_borrow(st, tenant)) - ema_policy_staging_held(c, tenant);

	ema_policy_staging_reserve(c, tenant, r > 0 ? r : 0);
}

static int32_t ema_borrowable(const struct ema_policy_ctx *c, void *state, int tenant)
{
	int32_t left = max_borrow(state, tenant) - ema_ledger_borrowed_pages(c->ledger, tenant);
	int32_t avail = 0;

	for (int g = 0; g < c->n_gpus; g++)
		if (g != c->tenant_gpu[tenant])
			avail += lendable(c, state, g);

	if (left < 0)
		left = 0;
	return left < avail ? left : avail;
}

/* Its own KV capacity plus what it may borrow from idle peers, within
 * the borrowing cap and each lender's slowdown cap. */
static int32_t ema_max_request_pages(const struct ema_policy_ctx *c, void *state, int tenant)
{
	const struct ema_state *st = state;
	int64_t lendable = 0;

	for (int g = 0; g < c->n_gpus; g++) {
		int32_t n = ema_lending_max_lendable(c, g);

		if (g == c->tenant_gpu[tenant])
			continue;
		lendable += n < st->max_lent[g] ? n : st->max_lent[g];
	}
	if (lendable > max_borrow(st, tenant))
		lendable = max_borrow(st, tenant);
	return (int32_t)(c->kv_capacity_pages[tenant] + lendable);
}

static int ema_choose_lender(const struct ema_policy_ctx *c, void *state, int tenant)
{
	int32_t borrowed = ema_ledger_borrowed_pages(c->ledger, tenant);

	if (borrowed + 1 > max_borrow(state, tenant))
		return -1;
	/* Keep our own pages free for the staging area of all we may
	 * borrow, from the first borrowed page on: a reserve that grew with
	 * each page was always a few pages short, and a ring short of
	 * depth + 1 slots overlaps nothing. */
	update_reserve(c, state, tenant);
	{
		int best = -1;
		int32_t best_n = 0;

		for (int g = 0; g < c->n_gpus; g++) {
			int32_t n = g == c->tenant_gpu[tenant] ? 0 : lendable(c, state, g);

			if (n > best_n) {
				best = g;
				best_n = n;
			}
		}
		return best;
	}
}

static int32_t ema_reclaim(const struct ema_policy_ctx *c, void *state, int gpu, int32_t need)
{
	int32_t headroom = (int32_t)ceil(c->knobs->headroom * ema_lending_kv_capacity(c, gpu));

	return ema_lending_reclaim(c, gpu, need + headroom, c->knobs->reclaim_mode);
}

static void ema_plan(const struct ema_policy_ctx *c, void *state, struct ema_iteration *it)
{
	struct ema_state *st = state;
	int tn = it->tenant;
	uint64_t remote = 0;
	int32_t want, got = 0;
	int groups = c->layer_groups > 0 ? c->layer_groups : 1;
	int depth = c->knobs->prefetch_depth < groups ? c->knobs->prefetch_depth : groups;

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
	update_reserve(c, st, tn);
	/* A staging area short of depth + 1 slots (the tenant used its
	 * reserve for KV) still stages, with less lookahead: the platforms
	 * size the window from the pages given (a single slot means each
	 * group's copy waits for the previous group's reads). With no page
	 * at all the remote KV is read in place. */
	it->prefetch_depth = got > 0 ? depth : 0;
	it->staging_pages = got > 0 ? ema_policy_staging_pages(c, tn) : NULL;
	it->n_staging_pages = got;
}

static void ema_after_iteration(const struct ema_policy_ctx *c, void *state, int tenant)
{
	const struct ema_policy_cfg *pc = c->knobs;

	if (ema_ledger_borrowed_pages(c->ledger, tenant) == 0) {
		/* nothing borrowed any more: the staging area goes back */
		ema_policy_staging_release(c, tenant);
		ema_policy_staging_reserve(c, tenant, 0);
	}
	/* Pre-preemption: every lender keeps its headroom free. */
	for (int g = 0; g < c->n_gpus; g++) {
		int32_t headroom, free_pages;

		if (ema_ledger_lent_pages(c->ledger, g) == 0 || c->ledger->gpu[g].home_tenant < 0)
			continue;
		headroom = (int32_t)ceil(pc->headroom * ema_lending_kv_capacity(c, g));
		free_pages = ema_ledger_free_pages(c->ledger, g);
		if (free_pages < headroom) {
			int64_t now = ema_policy_now(c);
			int32_t freed = ema_lending_reclaim(c, g, headroom - free_pages, pc->reclaim_mode);

			if (freed > 0)
				ema_policy_record_reclaim(c, g, freed, now, 0);
		}
	}
}

const struct ema_policy_ops ema_policy_ema = {
	.name = "ema",
	.summary = "borrow peer memory, prefetch remote KV by layer group, reclaim ahead with headroom",
	.state_size = sizeof(struct ema_state),
	.init = ema_init,
	.borrowable = ema_borrowable,
	.max_request_pages = ema_max_request_pages,
	.choose_lender = ema_choose_lender,
	.reclaim = ema_reclaim,
	.plan_iteration = ema_plan,
	.after_iteration = ema_after_iteration,
};
