/* lending.h: the lending rules that the borrowing policies share: how much
 * a lender may lend (its floor and reserve), which lender to pick, and the
 * reclaim mechanics by mode. Kept in one place so that remote_direct and
 * ema differ only in what they decide, not in how they count.
 *
 * Worked example, 2 GPUs (h200x2 capped at 24 GiB = 12288 pages of 2 MiB,
 * llama-3-8b: 16.1 GB of weights = 7659 pages, so 4629 KV pages = 9.04
 * GiB per GPU), floor 0.25, reserve 0.05: GPU 1 can lend
 * min(free - 232, 3471 - lent) pages; if its tenant holds 1000 pages, GPU 0
 * may borrow up to 3397 of them (ema's planner stops it at 924, its lender
 * cap in place under the default `auto`: doc/model.md, "ema's planner",
 * pinned by tests/test_planner.c). When
 * GPU 1's free pages fall under the headroom (0.05 x 4629 = 232), ema
 * reclaims the difference ahead of need: newest borrowed requests first,
 * moved back to GPU 0 if it has room, else preempted (recomputed).
 *
 * 8 GPUs behind a switch, tenants 0 and 1 overloaded, 2..7 light: a
 * borrower takes each page from the lender with the most lendable pages,
 * so borrowed memory spreads across the six light GPUs and no single
 * lender's port carries all prefetch traffic. */
#ifndef EMA_LENDING_H
#define EMA_LENDING_H

#include "policy.h"

/* Pages GPU g keeps free for its own tenant's bursts (lender_reserve of
 * its KV; none without a tenant). */
int32_t ema_lending_reserve_pages(const struct ema_policy_ctx *c, int gpu);
/* Pages GPU g can still lend under the floor and reserve. */
int32_t ema_lending_lendable(const struct ema_policy_ctx *c, int gpu);
/* Pages GPU g could lend were its own tenant idle (its KV capacity less
 * the larger of floor and reserve): the most a borrower can ever get. */
int32_t ema_lending_max_lendable(const struct ema_policy_ctx *c, int gpu);
/* The GPU with the most lendable pages other than the tenant's, or -1. */
int ema_lending_best_lender(const struct ema_policy_ctx *c, int tenant);
/* Sum of lendable pages over every GPU but the tenant's. */
int32_t ema_lending_total_lendable(const struct ema_policy_ctx *c, int tenant);
/* Frees at least `need` pages of `gpu` by reclaiming from borrowers,
 * newest requests first, in mode "auto" (move home if the borrower has
 * room, else recompute), "move", "host" or "drop". Returns the pages freed
 * at once; moves complete later. */
int32_t ema_lending_reclaim(const struct ema_policy_ctx *c, int gpu, int32_t need, enum ema_reclaim_mode mode);
/* The free pages GPU g keeps for its own tenant (lender_reserve of its
 * KV capacity, 0 without a tenant): with no more free, it lends nothing
 * (ema_lending_lendable is 0) whatever else holds. */
int32_t ema_lending_reserve(const struct ema_policy_ctx *c, int gpu);
/* KV capacity (pages) of the GPU's own tenant, or of the whole GPU. */
int32_t ema_lending_kv_capacity(const struct ema_policy_ctx *c, int gpu);

#endif
