/* hw_split.h: how the hw backend's decode read kernel splits its grid
 * between local pages and each lender's pages read in place. Plain C, no
 * CUDA, so the rule is unit-tested on machines without a GPU. */
#ifndef EMA_HW_SPLIT_H
#define EMA_HW_SPLIT_H

#include <stdint.h>

/* At most this many blocks per SM read one lender's pages in place: 132
 * blocks (one per SM) already drew 357 GB/s of the 368 GB/s that 1056
 * drew from the peer, and every block given to a link is taken from the
 * local reads (H200 pair, 2026-12-01, doc/reference-figures.md). */
#define EMA_HWK_REMOTE_BLOCKS_PER_SM 1
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
 * lender each. A lender's share of the blocks follows its share of the
 * summed time, at least 1 and at most EMA_HWK_REMOTE_BLOCKS_PER_SM x sms
 * blocks; part 0 keeps the rest and at least half the grid. A part with
 * no time gets one block (it has no chunks to read). Fills n and
 * block_first; returns the grid, or 0 when the arguments cannot be split
 * (n out of range, grid < n, a negative or non-finite time). */
uint32_t ema_hwk_split_blocks(struct ema_hwk_parts *parts, int n, const double *time_ns,
			      uint32_t grid, uint32_t sms);

#endif
