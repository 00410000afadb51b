/* lending.c: shared lending arithmetic and reclaim mechanics for the
 * borrowing policies (see lending.h for a worked example). */
#include "lending.h"

#include <math.h>
#include <string.h>

int32_t ema_lending_kv_capacity(struct ema_engine *e, int gpu)
{
	int t = e->ledger.gpu[gpu].home_tenant;

	if (t >= 0)
		return e->tenants[t].kv_capacity_pages;
	return e->ledger.gpu[gpu].capacity;
}

int32_t ema_lending_lendable(struct ema_engine *e, int gpu)
{
	const struct ema_policy_cfg *pc = &e->cfg->policy;
	int32_t cap = ema_lending_kv_capacity(e, gpu);
	bool has_tenant = e->ledger.gpu[gpu].home_tenant >= 0;
	int32_t reserve = has_tenant ? (int32_t)ceil(pc->lender_reserve * cap) : 0;
	int32_t floor_pages = has_tenant ? (int32_t)ceil(pc->lender_floor * cap) : 0;
	int32_t by_free = ema_ledger_free_pages(&e->ledger, gpu) - reserve;
	int32_t by_floor = cap - floor_pages - ema_ledger_lent_pages(&e->ledger, gpu);
	int32_t n = by_free < by_floor ? by_free : by_floor;

	/* A tenant that borrows needs all it has: lending while borrowing
	 * made two overloaded tenants trade pages and preempt each other
	 * without end (found on 8 GPUs). */
	if (has_tenant && ema_ledger_borrowed_pages(&e->ledger, e->ledger.gpu[gpu].home_tenant) > 0)
		return 0;
	return n > 0 ? n : 0;
}

int32_t ema_lending_max_lendable(struct ema_engine *e, int gpu)
{
	const struct ema_policy_cfg *pc = &e->cfg->policy;
	int32_t cap = ema_lending_kv_capacity(e, gpu);
	int32_t keep = 0;

	if (e->ledger.gpu[gpu].home_tenant >= 0) {
		int32_t reserve = (int32_t)ceil(pc->lender_reserve * cap);
		int32_t floor_pages = (int32_t)ceil(pc->lender_floor * cap);

		keep = reserve > floor_pages ? reserve : floor_pages;
	}
	return cap > keep ? cap - keep : 0;
}

int ema_lending_best_lender(struct ema_engine *e, int tenant)
{
	int home = e->tenants[tenant].gpu;
	int best = -1;
	int32_t best_n = 0;

	for (int g = 0; g < e->ledger.n_gpus; g++) {
		int32_t n;

		if (g == home)
			continue;
		n = ema_lending_lendable(e, g);
		if (n > best_n) {
			best = g;
			best_n = n;
		}
	}
	return best;
}

int32_t ema_lending_total_lendable(struct ema_engine *e, int tenant)
{
	int home = e->tenants[tenant].gpu;
	int32_t n = 0;

	for (int g = 0; g < e->ledger.n_gpus; g++)
		if (g != home)
			n += ema_lending_lendable(e, g);
	return n;
}

int32_t ema_lending_reclaim(struct ema_engine *e, int gpu, int32_t need, enum ema_reclaim_mode mode)
{
	struct ema_request *victims[512];
	int32_t freed = 0, moving = 0;
	int n = ema_engine_borrowers_on(e, gpu, victims, 512);

	for (int i = 0; i < n && freed + moving < need; i++) {
		struct ema_request *r = victims[i];
		int32_t k = ema_engine_request_pages_on(r, gpu);
		int home = e->tenants[r->tenant].gpu;
		bool room = ema_ledger_free_pages(&e->ledger, home) >= k;

		if ((mode == EMA_RECLAIM_MOVE || mode == EMA_RECLAIM_AUTO) && room) {
			moving += ema_engine_move_home(e, r, gpu);
			continue;
		}
		if (mode == EMA_RECLAIM_MOVE)
			continue;
		if (mode == EMA_RECLAIM_HOST && ema_engine_demote(e, r)) {
			/* its pages leave when the swap-out completes */
			moving += k;
			continue;
		}
		ema_engine_preempt_recompute(e, r);
		freed += k;
	}
	return freed;
}
