/* pooled.c: the bound of every borrowing policy, "the server's memory as
 * one pool at no cost". Each GPU keeps its own weights; a tenant whose
 * GPU is full takes any other GPU's free page (the freest first), and
 * (beyond the lender's reserve) reads it as if it were local: the platform charges its bytes as local
 * HBM reads, with no link time and no interference on the lender
 * (ema_iteration.remote_as_local; the simulator alone offers it). A
 * lender's own demand comes first and costs it nothing: a reclaim moves
 * the borrower's pages elsewhere in the pool at once and with no
 * transfer, and preempts the borrower (recompute) only where the whole
 * pool is full. So a lender is never worse than under static, and no
 * policy that moves bytes over links or waits for them can do better
 * than this on the same requests: `ema / pooled` is how much of what
 * borrowing can buy a policy gets (doc/policies.md, "The bounds").
 *
 * pooled_tpot.c is the same pool at a borrower TPOT budget: the hooks
 * below serve both, through pool.h, each tenant held to ema_pool_cap. */
#include <math.h>

#include "base/step_cost.h"
#include "pool.h"

/* The most pages `tenant` may hold in the pool: unlimited for pooled; for
 * pooled_tpot the bytes that lengthen its local-only step T0 by
 * tpot_budget x T0 when read at the local HBM rate (pool.h). */
int64_t ema_pool_cap(const struct ema_policy_ctx *c, int tenant)
{
	const struct ema_pool_knobs *k = c->own_knobs;
	double kv, t0, per_byte;

	if (k == NULL)
		return INT32_MAX;
	kv = (double)c->kv_capacity_pages[tenant] * (double)c->page_bytes;
	t0 = ema_step_cost_local_ns(c->hw, ema_model_weight_bytes(c->model), (uint64_t)kv, 0, 0);
	per_byte = ema_cost_hbm_ns(c->hw, 1.0);
	if (!(per_byte > 0))
		return INT32_MAX;
	return (int64_t)floor(k->tpot_budget * t0 / per_byte / (double)c->page_bytes);
}

/* Pages GPU g gives the pool now: its free pages less its tenant's
 * reserve (policy.lender_reserve, as the real policies keep), unless its
 * own tenant borrows (then it needs all it has, as lending.c says for
 * the real policies: two overloaded tenants lending to each other would
 * trade pages and preempt each other without end). No floor: every
 * free page beyond the reserve is the pool's. The reserve is slack for
 * the lender's bursts that makes the bound higher, not lower: without
 * it a lender's every growth into a full pool preempts a borrower's
 * request, whose recomputation the borrower pays (default scenario, t0
 * at 24 req/s and t1 at 3: 303 preemptions and 1.079 x static's steady
 * throughput without, 188 and 1.121 with). */
static int32_t pooled_lendable(const struct ema_policy_ctx *c, int g)
{
	int home = c->ledger->gpu[g].home_tenant;

	int32_t n;

	if (home >= 0 && ema_ledger_borrowed_pages(c->ledger, home) > 0)
		return 0;
	n = ema_ledger_free_pages(c->ledger, g) - ema_lending_reserve(c, g);
	return n > 0 ? n : 0;
}

int32_t ema_pool_borrowable(const struct ema_policy_ctx *c, void *state, int tenant)
{
	int64_t n = 0, left = ema_pool_cap(c, tenant) - ema_ledger_borrowed_pages(c->ledger, tenant);

	for (int g = 0; g < c->n_gpus; g++)
		if (g != c->tenant_gpu[tenant])
			n += pooled_lendable(c, g);
	if (n > left)
		n = left > 0 ? left : 0;
	return n < INT32_MAX ? (int32_t)n : INT32_MAX;
}

int32_t ema_pool_max_request_pages(const struct ema_policy_ctx *c, void *state, int tenant)
{
	int64_t n = 0, cap = ema_pool_cap(c, tenant);

	for (int g = 0; g < c->n_gpus; g++)
		if (g != c->tenant_gpu[tenant])
			n += ema_lending_kv_capacity(c, g);
	if (n > cap)
		n = cap;
	n += c->kv_capacity_pages[tenant];
	return n < INT32_MAX ? (int32_t)n : INT32_MAX;
}

/* The GPU with the most pages to give (the lowest of equals). */
int ema_pool_choose_lender(const struct ema_policy_ctx *c, void *state, int tenant)
{
	int best = -1;
	int32_t best_n = 0;

	if (ema_pool_borrowable(c, state, tenant) <= 0)
		return -1; /* (pooled_tpot: the tenant is at its cap) */
	for (int g = 0; g < c->n_gpus; g++) {
		int32_t n;

		if (g == c->tenant_gpu[tenant])
			continue;
		n = pooled_lendable(c, g);
		if (n > best_n) {
			best = g;
			best_n = n;
		}
	}
	return best;
}

/* The lender's demand first, at no cost to it and without waiting:
 * borrowers' pages moved elsewhere in the pool, or, with no room left in
 * it, the newest borrower preempted (ema_policy_pool_reclaim). */
int32_t ema_pool_reclaim(const struct ema_policy_ctx *c, void *state, int gpu, int32_t need)
{
	return ema_policy_pool_reclaim(c, gpu, need);
}

void ema_pool_plan(const struct ema_policy_ctx *c, void *state, struct ema_iteration *it)
{
	it->prefetch_depth = 0;
	it->n_staging_pages = 0;
	it->staging_pages = NULL;
	it->remote_as_local = true;
}

/* Leaps, as remote_direct's (remote_direct.c): what the others decide
 * reads a leaping GPU only through the pages it can give, all its free
 * pages here. They must not grow mid-leap while another tenant waits for
 * memory (no event would tell it); with nobody waiting, every other
 * tenant's decision comes at an event of its own, which sees the ledger
 * as stepping would (and this hook is asked again). */
bool ema_pool_leap_holds(const struct ema_policy_ctx *c, void *state, int tenant,
			 struct ema_leap_range *r)
{
	bool others_wait = r->others_wait;

	for (int u = 0; u < c->n_tenants && !others_wait; u++)
		if (u != tenant && ema_policy_queue_need(c, u) > 0)
			others_wait = true;
	if (others_wait)
		r->free_max = 0;
	if (r->waiting) {
		if (ema_pool_borrowable(c, state, tenant) > 0)
			return false;
		r->waiting_ok = true;
	}
	return true;
}

bool ema_pool_leap_ok(const struct ema_policy_ctx *c, void *state, int tenant,
		      struct ema_leap_range *r)
{
	if (ema_ledger_lent_pages(c->ledger, c->tenant_gpu[tenant]) > 0)
		return false;
	return ema_pool_leap_holds(c, state, tenant, r);
}

const struct ema_policy_ops ema_policy_pooled = {
	.name = "pooled",
	.summary = "the server's free KV memory as one pool at no cost, lenders first (bound of borrowing)",
	.borrowable = ema_pool_borrowable,
	.max_request_pages = ema_pool_max_request_pages,
	.choose_lender = ema_pool_choose_lender,
	.reclaim = ema_pool_reclaim,
	.plan_iteration = ema_pool_plan,
	.leap_ok = ema_pool_leap_ok,
	.leap_holds = ema_pool_leap_holds,
};
