/* pool.h: the pooled bound's hooks (pooled.c), shared with its variant at
 * a borrower TPOT budget (pooled_tpot.c): one pool, two limits. */
#ifndef EMA_POOL_H
#define EMA_POOL_H

#include "lending.h"

/* pooled_tpot's own knobs (policy.pooled_tpot.KEY); pooled has none. */
struct ema_pool_knobs {
	double tpot_budget; /* a borrower's step within 1 + this of its local-only step */
};

/* The most pages `tenant` may hold in the pool: unlimited (INT32_MAX)
 * without knobs (pooled); with them (pooled_tpot), the bytes that
 * lengthen its local-only step T0 by tpot_budget x T0 read at the local
 * HBM rate. */
int64_t ema_pool_cap(const struct ema_policy_ctx *c, int tenant);

int32_t ema_pool_borrowable(const struct ema_policy_ctx *c, void *state, int tenant);
int32_t ema_pool_max_request_pages(const struct ema_policy_ctx *c, void *state, int tenant);
int ema_pool_choose_lender(const struct ema_policy_ctx *c, void *state, int tenant);
int32_t ema_pool_reclaim(const struct ema_policy_ctx *c, void *state, int gpu, int32_t need);
void ema_pool_plan(const struct ema_policy_ctx *c, void *state, struct ema_iteration *it);
bool ema_pool_leap_holds(const struct ema_policy_ctx *c, void *state, int tenant,
			 struct ema_leap_range *r);
bool ema_pool_leap_ok(const struct ema_policy_ctx *c, void *state, int tenant,
		      struct ema_leap_range *r);

#endif
