/* hw_kernels.h: the C face of the device code in hw_kernels.cu (HBM read,
 * page gather, fill and check kernels, and a fallback GEMM), shared by the
 * hw platform, `ema calibrate` and `ema bench --hw`. Private to hw/. */
#ifndef EMA_HW_KERNELS_H
#define EMA_HW_KERNELS_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#include "hw_pattern.h"
#include "hw_split.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kernels cut their work into chunks of this many bytes; a block takes one
 * chunk at a time, so one launch balances pages of any size. */
#define EMA_HWK_CHUNK (64u * 1024u)

/* Blocks per SM of the hw backend's launches, shared with `ema calibrate`
 * so that it measures what the backend runs. A prefetch gather keeps 2
 * per SM (a quarter of the SMs alone copied too slowly, 2026-11-30); the
 * read kernel of an iteration takes 8, or 4 when a prefetch runs beside
 * it, since two kernels share SMs only where their blocks fit together
 * (registers, not threads, limit a block's neighbours). */
#define EMA_HWK_PREFETCH_BLOCKS_PER_SM 2
#define EMA_HWK_READ_BLOCKS_PER_SM 8
#define EMA_HWK_STAGED_READ_BLOCKS_PER_SM 4

/* One contiguous piece of work. first_chunk is the prefix sum of the
 * chunks of the segments before it within one launch (filled by
 * ema_hwk_prefix), so a block finds its segment by binary search. For fill
 * and check, src holds the page's tag instead of an address. */
struct ema_hwk_seg {
	uint64_t src;
	uint64_t dst;
	uint64_t bytes;
	uint64_t first_chunk;
};

/* Fills first_chunk of segs[0..n) and returns the chunk total. */
uint64_t ema_hwk_prefix(struct ema_hwk_seg *segs, int n);

/* All launchers return a cudaError_t as int (0 = success). grid = 0 picks
 * a grid that fills the device. */

/* Copies segs[i].bytes from src to dst (any addresses the device can reach:
 * local, peer or mapped host memory). */
int ema_hwk_gather(const struct ema_hwk_seg *d_segs, int n, uint64_t chunks,
		   int grid, cudaStream_t s);
/* Copies n whole pages of page_bytes between two pools: page
 * d_pairs[2i] of src_base to page d_pairs[2i+1] of dst_base. */
int ema_hwk_gather_pages(const int32_t *d_pairs, int n, const void *src_base,
			 void *dst_base, uint64_t page_bytes, int grid, cudaStream_t s);
/* Reads every byte of the segments (src) and folds them into *d_sink only
 * when the fold is impossible, so the reads cannot be optimised away. */
int ema_hwk_read(const struct ema_hwk_seg *d_segs, int n, uint64_t chunks,
		 int grid, uint64_t *d_sink, cudaStream_t s);
/* Reads like ema_hwk_read, each part of the split grid by its own
 * blocks at the same time (in-place remote reads beside the local ones). */
int ema_hwk_read_split(const struct ema_hwk_seg *d_segs, int n,
		       const struct ema_hwk_parts *parts, uint64_t *d_sink, cudaStream_t s);
/* Writes the pattern of tag (segs[i].src) over each page (segs[i].dst). */
int ema_hwk_fill(const struct ema_hwk_seg *d_segs, int n, uint64_t chunks,
		 cudaStream_t s);
/* Simple fill of one page, without descriptors. */
int ema_hwk_fill_one(void *page, uint64_t bytes, uint64_t tag, cudaStream_t s);
/* Checks each page against its tag; sets d_bad[i] = 1 when page i differs.
 * full: every word (chunks from ema_hwk_prefix); otherwise 32 words spread
 * over each page (chunks ignored). d_bad must be zeroed by the caller. */
int ema_hwk_check(const struct ema_hwk_seg *d_segs, int n, uint64_t chunks,
		  int full, uint32_t *d_bad, cudaStream_t s);
/* Fills n bf16 values with a small non-zero pattern (GEMM operands). */
int ema_hwk_fill_bf16(void *p, uint64_t n, uint32_t seed, cudaStream_t s);
/* C[m x n] = A[m x k] * B[k x n], column-major bf16 with fp32
 * accumulation: the slow fallback when cuBLAS cannot be loaded. */
int ema_hwk_gemm_fallback(int m, int n, int k, const void *a, const void *b,
			  void *c, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
