/* lending.c: shared lending arithmetic and reclaim mechanics for the
 * borrowing policies (see lending.h for a worked example). */
#include "lending.h"

#include <math.h>
#include <string.h>

int32_t ema_lending_kv_capacity(const struct ema_policy_ctx *c, int gpu)
{
	int t = c->ledger->gpu[gpu].home_tenant;

	if (t >= 0)
		return c->kv_capacity_pages[t];
	return c->ledger->gpu[gpu].capacity;
}

int32_t ema_lending_reserve_pages(const struct ema_policy_ctx *c, int gpu)
{
	if (c->ledger->gpu[gpu].home_tenant < 0)
		return 0;
	return (int32_t)ceil(c->knobs->lender_reserve * ema_lending_kv_capacity(c, gpu));
}

int32_t ema_lending_lendable(const struct ema_policy_ctx *c, int gpu)
{
	const struct ema_policy_cfg *pc = c->knobs;
	int32_t cap = ema_lending_kv_capacity(c, gpu);
	bool has_tenant = c->ledger->gpu[gpu].home_tenant >= 0;
	int32_t reserve = ema_lending_reserve_pages(c, gpu);
	int32_t floor_pages = has_tenant ? (int32_t)ceil(pc->lender_floor * cap) : 0;
	int32_t by_free = ema_ledger_free_pages(c->ledger, gpu) - reserve;
	int32_t by_floor = cap - floor_pages - ema_ledger_lent_pages(c->ledger, gpu);
	int32_t n = by_free < by_floor ? by_free : by_floor;

	/* A tenant that borrows needs all it has: lending while borrowing
	 * made two overloaded tenants trade pages and preempt each other
	 * without end (found on 8 GPUs). */
	if (has_tenant && ema_ledger_borrowed_pages(c->ledger, c->ledger->gpu[gpu].home_tenant) > 0)
		return 0;
	return n > 0 ? n : 0;
}

int32_t ema_lending_max_lendable(const struct ema_policy_ctx *c, int gpu)
{
	const struct ema_policy_cfg *pc = c->knobs;
	int32_t cap = ema_lending_kv_capacity(c, gpu);
	int32_t keep = 0;

	if (c->ledger->gpu[gpu].home_tenant >= 0) {
		int32_t reserve = (int32_t)ceil(pc->lender_reserve * cap);
		int32_t floor_pages = (int32_t)ceil(pc->lender_floor * cap);

		keep = reserve > floor_pages ? reserve : floor_pages;
	}
	return cap > keep ? cap - keep : 0;
}

int ema_lending_best_lender(const struct ema_policy_ctx *c, int tenant)
{
	int home = c->tenant_gpu[tenant];
	int best = -1;
	int32_t best_n = 0;

	for (int g = 0; g < c->ledger->n_gpus; g++) {
		int32_t n;

		if (g == home)
			continue;
		n = ema_lending_lendable(c, g);
		if (n > best_n) {
			best = g;
			best_n = n;
		}
	}
	return best;
}

int32_t ema_lending_total_lendable(const struct ema_policy_ctx *c, int tenant)
{
	int home = c->tenant_gpu[tenant];
	int32_t n = 0;

	for (int g = 0; g < c->ledger->n_gpus; g++)
		if (g != home)
			n += ema_lending_lendable(c, g);
	return n;
}

int32_t ema_lending_reclaim(const struct ema_policy_ctx *c, int gpu, int32_t need, enum ema_reclaim_mode mode)
{
	struct ema_request *const *victims;
	int32_t freed = 0, moving = 0;
	int n = ema_policy_borrowers_on(c, gpu, &victims);

	for (int i = 0; i < n && freed + moving < need; i++) {
		struct ema_request *r = victims[i];
		int32_t k = ema_request_pages_on(r, gpu);
		int home = c->tenant_gpu[ema_request_tenant(r)];
		bool room = ema_ledger_free_pages(c->ledger, home) >= k;

		if ((mode == EMA_RECLAIM_MOVE || mode == EMA_RECLAIM_AUTO) && room) {
			moving += ema_policy_move_home(c, r, gpu);
			continue;
		}
		if (mode == EMA_RECLAIM_MOVE)
			continue;
		if (mode == EMA_RECLAIM_HOST && ema_policy_demote(c, r)) {
			/* its pages leave when the swap-out completes */
			moving += k;
			continue;
		}
		ema_policy_preempt_recompute(c, r);
		freed += k;
	}
	return freed;
}

int32_t ema_lending_reserve(const struct ema_policy_ctx *c, int gpu)
{
	/* ema_lending_lendable's reserve: by_free = free - reserve <= 0 */
	if (c->ledger->gpu[gpu].home_tenant < 0)
		return 0;
	return (int32_t)ceil(c->knobs->lender_reserve * ema_lending_kv_capacity(c, gpu));
}
