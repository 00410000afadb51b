/* gpuset.h: a fixed set of GPU numbers, a bit each (EMA_MAX_GPUS bits in
 * 64-bit words), for what a 32-bit mask held until issue 36 (a request's
 * GPUs, the peers a step reads, the lenders with a tenant at home, the
 * GPUs with a leap): the same operations, visited in ascending order as
 * the old `m &= m - 1` / __builtin_ctz loops did, so that every caller
 * keeps its order and its outputs. All inline, no allocation. */
#ifndef EMA_GPUSET_H
#define EMA_GPUSET_H

#include <stdbool.h>
#include <stdint.h>

#include "ema_limits.h"

#define EMA_GPUSET_WORDS ((EMA_MAX_GPUS + 63) / 64)

struct ema_gpuset {
	uint64_t w[EMA_GPUSET_WORDS];
};

static inline void ema_gpuset_zero(struct ema_gpuset *s)
{
	for (int i = 0; i < EMA_GPUSET_WORDS; i++)
		s->w[i] = 0;
}

/* g in [0, EMA_MAX_GPUS): the callers' GPU numbers are checked where
 * they enter (configuration, ledger). */
static inline void ema_gpuset_set(struct ema_gpuset *s, int g)
{
	s->w[g >> 6] |= UINT64_C(1) << (g & 63);
}

static inline void ema_gpuset_clear(struct ema_gpuset *s, int g)
{
	s->w[g >> 6] &= ~(UINT64_C(1) << (g & 63));
}

static inline bool ema_gpuset_test(const struct ema_gpuset *s, int g)
{
	return (s->w[g >> 6] >> (g & 63)) & 1u;
}

static inline bool ema_gpuset_empty(const struct ema_gpuset *s)
{
	uint64_t any = 0;

	for (int i = 0; i < EMA_GPUSET_WORDS; i++)
		any |= s->w[i];
	return any == 0;
}

/* *s |= *o */
static inline void ema_gpuset_or(struct ema_gpuset *s, const struct ema_gpuset *o)
{
	for (int i = 0; i < EMA_GPUSET_WORDS; i++)
		s->w[i] |= o->w[i];
}

static inline int ema_gpuset_count(const struct ema_gpuset *s)
{
	int n = 0;

	for (int i = 0; i < EMA_GPUSET_WORDS; i++)
		n += __builtin_popcountll(s->w[i]);
	return n;
}

/* The smallest member >= from, or -1 where there is none. */
static inline int ema_gpuset_next(const struct ema_gpuset *s, int from)
{
	int i;

	if (from < 0)
		from = 0;
	i = from >> 6;
	if (i >= EMA_GPUSET_WORDS)
		return -1;
	{
		uint64_t m = s->w[i] & (~UINT64_C(0) << (from & 63));

		for (;;) {
			if (m != 0)
				return i * 64 + __builtin_ctzll(m);
			if (++i >= EMA_GPUSET_WORDS)
				return -1;
			m = s->w[i];
		}
	}
}

/* The smallest member, or -1 for the empty set. */
static inline int ema_gpuset_first(const struct ema_gpuset *s)
{
	return ema_gpuset_next(s, 0);
}

/* for (each member g of *s, ascending): g is declared by the macro; the
 * set may lose members already visited during the loop, not gain any it
 * must see. */
#define EMA_GPUSET_FOREACH(g, s) \
	for (int g = ema_gpuset_first(s); g >= 0; g = ema_gpuset_next((s), g + 1))

#endif
