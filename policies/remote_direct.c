/* remote_direct.c: the baseline without prefetch: a tenant whose GPU is
 * full borrows pages from peers (within their floor and reserve) and its
 * attention reads them in place over the link, at about 1/12 of local HBM
 * bandwidth on the H200x2. Lenders take pages back only when they run out
 * (policy.reclaim_mode), with no headroom kept ahead of need. */
#include "lending.h"

static int32_t remote_direct_borrowable(const struct ema_policy_ctx *c, void *state, int tenant)
{
	return ema_lending_total_lendable(c, tenant);
}

static int32_t remote_direct_max_request_pages(const struct ema_policy_ctx *c, void *state, int tenant)
{
	int64_t n = c->kv_capacity_pages[tenant];

	for (int g = 0; g < c->n_gpus; g++)
		if (g != c->tenant_gpu[tenant])
			n += ema_lending_max_lendable(c, g);
	return n < INT32_MAX ? (int32_t)n : INT32_MAX;
}

static int remote_direct_choose_lender(const struct ema_policy_ctx *c, void *state, int tenant)
{
	return ema_lending_best_lender(c, tenant);
}

static int32_t remote_direct_reclaim(const struct ema_policy_ctx *c, void *state, int gpu, int32_t need)
{
	return ema_lending_reclaim(c, gpu, need, c->knobs->reclaim_mode);
}

static void remote_direct_plan(const struct ema_policy_ctx *c, void *state, struct ema_iteration *it)
{
	it->prefetch_depth = 0;
	it->n_staging_pages = 0;
	it->staging_pages = NULL;
}

/* A leap of `tenant` changes its GPU's free pages only. remote_direct's
 * decisions for the others read them only through what the GPU can lend
 * (borrowable, choose_lender; reclaim picks among borrowers, which the
 * tenant is not in a leap): nothing while its free pages are at most its
 * reserve. And a GPU that lends nothing has none of its pages read in
 * place or moved: no transfer crosses it. Its plan_iteration is the same
 * for every step. */
/* With requests of the tenant waiting, borrowable (what else decides
 * their admission) is 0 while no other GPU can lend, which only the
 * ledger's operations change (leap_holds is then asked again); a leaping
 * GPU never can (free_max), so pages freed in others' leaps change
 * nothing. */
static bool remote_direct_leap_holds(const struct ema_policy_ctx *c, void *state, int tenant,
				     struct ema_leap_range *r)
{
	r->free_max = ema_lending_reserve(c, c->tenant_gpu[tenant]);
	if (r->waiting) {
		if (ema_lending_total_lendable(c, tenant) > 0)
			return false;
		r->waiting_ok = true;
	}
	return true;
}

static bool remote_direct_leap_ok(const struct ema_policy_ctx *c, void *state, int tenant,
				  struct ema_leap_range *r)
{
	int gpu = c->tenant_gpu[tenant];

	if (ema_ledger_lent_pages(c->ledger, gpu) > 0)
		return false;
	return remote_direct_leap_holds(c, state, tenant, r);
}

const struct ema_policy_ops ema_policy_remote_direct = {
	.name = "remote_direct",
	.summary = "borrow peer memory, read remote KV in place (no prefetch), reclaim on demand",
	.borrowable = remote_direct_borrowable,
	.max_request_pages = remote_direct_max_request_pages,
	.choose_lender = remote_direct_choose_lender,
	.reclaim = remote_direct_reclaim,
	.plan_iteration = remote_direct_plan,
	.leap_ok = remote_direct_leap_ok,
	.leap_holds = remote_direct_leap_holds,
};
