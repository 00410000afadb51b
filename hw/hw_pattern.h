/* hw_pattern.h: the content of a tagged page, word by word, shared by the
 * device kernels and the host checks (and by builds without CUDA). */
#ifndef EMA_HW_PATTERN_H
#define EMA_HW_PATTERN_H

#include <stdint.h>

/* Word w of a page tagged tag: splitmix64 of both, so that a page moved to
 * the wrong place, a stale page and a torn copy all read differently. */
#ifdef __CUDACC__
__host__ __device__
#endif
static inline uint64_t ema_hwk_pattern(uint64_t tag, uint64_t w)
{
	uint64_t z = tag * 0x9E3779B97F4A7C15ull + w + 0x632BE59BD9B4E019ull;

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

#endif
