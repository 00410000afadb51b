/* seed.c: derivation of independent stream seeds from one run seed, so
 * that arrivals, lengths and policies each draw from their own stream and
 * a change in one never shifts the numbers another sees. */
#include "workload.h"

#include <stddef.h>
#include <stdint.h>

#define SPLITMIX_GAMMA 0x9e3779b97f4a7c15ULL

/* One splitmix64 step (Steele, Lea, Flood 2014): a bijection with good
 * avalanche, so nearby inputs (seed 1, 2, 3; tenant 0, 1) give unrelated
 * outputs. */
static uint64_t splitmix64(uint64_t z)
{
	z += SPLITMIX_GAMMA;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* FNV-1a, 64 bits: stable across platforms and builds, unlike a pointer
 * or a libc hash. */
static uint64_t fnv1a64(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	if (s == NULL)
		return h;
	for (; *s != '\0'; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

uint64_t ema_seed_derive(uint64_t run_seed, int index, const char *stream)
{
	uint64_t x;

	x = splitmix64(run_seed);
	x = splitmix64(x ^ (uint64_t)(int64_t)index);
	x = splitmix64(x ^ fnv1a64(stream));
	/* 0 means "derive me" in configs and "default seed" in GSL. */
	return x != 0 ? x : SPLITMIX_GAMMA;
}
