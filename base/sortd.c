/* sortd.c: an LSD radix sort of doubles over their bit patterns, made
 * order-preserving (negative: all bits flipped; else the sign bit set):
 * eight passes of a byte, each skipped when every key has the same byte. */
#include "sortd.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ema_error.h"

static inline uint64_t key_of(double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof u);
	return (u >> 63) ? ~u : u | (1ULL << 63);
}

static inline double double_of(uint64_t k)
{
	uint64_t u = (k >> 63) ? k & ~(1ULL << 63) : ~k;
	double d;

	memcpy(&d, &u, sizeof d);
	return d;
}

int ema_sort_doubles(double *v, size_t n)
{
	uint64_t *a, *b, *t;
	size_t count[8][256];

	if (n < 2)
		return EMA_OK;
	a = malloc(2 * n * sizeof *a);
	if (a == NULL)
		return EMA_ERR_NOMEM;
	b = a + n;
	memset(count, 0, sizeof count);
	for (size_t i = 0; i < n; i++) {
		uint64_t k = key_of(v[i]);

		a[i] = k;
		for (int p = 0; p < 8; p++)
			count[p][(k >> (8 * p)) & 0xff]++;
	}
	for (int p = 0; p < 8; p++) {
		size_t pos = 0;

		if (count[p][(a[0] >> (8 * p)) & 0xff] == n)
			continue; /* one byte value throughout: nothing moves */
		for (int c = 0; c < 256; c++) {
			size_t m = count[p][c];

			count[p][c] = pos;
			pos += m;
		}
		for (size_t i = 0; i < n; i++)
			b[count[p][(a[i] >> (8 * p)) & 0xff]++] = a[i];
		t = a;
		a = b;
		b = t;
	}
	for (size_t i = 0; i < n; i++)
		v[i] = double_of(a[i]);
	free(a < b ? a : b);
	return EMA_OK;
}
