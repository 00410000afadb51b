/* hw_split.h: how the hw backend's decode read kernel splits its grid
 * between local pages and each lender's pages read in place. Plain C, no
 * CUDA, so the rule is unit-tested on machines without a GPU. */
#ifndef EMA_HW_SPLIT_H
#define EMA_HW_SPLIT_H

#include <stdint.h>

/* A lender's part has at most one block per this many SMs. Blocks that
 * read over a link hold their SM's load slots for the link's latency and
 * slow the local blocks beside them: on an H200 reading 16-32 MiB of
 * pinned host memory beside 4 GiB of HBM, 33 remote blocks cost 1-2% over
 * the local time, 66 4-14%, 132 25-52% (ema bench --hw, 2026-12-01),
 * while the link's rate barely grew with them. */
#define EMA_HWK_SMS_PER_REMOTE_BLOCK 4
/* Parts of a split read: the local pages and one per lender. */
#define EMA_HWK_MAX_PARTS 17

/* A split grid: part q owns blocks [block_first[q], block_first[q + 1])
 * and chunks [chunk_first[q], chunk_first[q + 1]) of one descriptor list;
 * the grid is block_first[n]. Every part has at least one block. */
struct ema_hwk_parts {
	int n;
	uint32_t block_first[EMA_HWK_MAX_PARTS + 1];
	uint64_t chunk_first[EMA_HWK_MAX_PARTS + 1];
};

/* Splits `grid` blocks between n parts (1 <= n <= EMA_HWK_MAX_PARTS)
 * that take time_ns[q] alone: part 0 the local reads, the others one
 * lender each. A lender gets enough of its cap (sms /
 * EMA_HWK_SMS_PER_REMOTE_BLOCK blocks, which carry the link's rate) to
 * carry its bytes within the local time: cap x time_ns[q] / time_ns[0],
 * rounded up, at least 1, at most the cap (link-bound, or no local
 * time). Part 0 keeps the rest and at least half the grid. Fills n and
 * block_first; returns the grid, or 0 when the arguments cannot be split
 * (n out of range, grid < n, a negative or non-finite time). */
uint32_t ema_hwk_split_blocks(struct ema_hwk_parts *parts, int n, const double *time_ns,
			      uint32_t grid, uint32_t sms);

#endif
