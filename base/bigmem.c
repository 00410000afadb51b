/* bigmem.c: large zeroed arrays, huge-page backed where possible
 * (bigmem.h). A block of a megabyte or more is its own mapping, aligned
 * to 2 MiB and rounded up to a multiple of it, with MADV_HUGEPAGE (where
 * transparent huge pages are "madvise" or "always"; otherwise the advice
 * is ignored and the block is ordinary memory); a smaller one comes from
 * aligned_alloc. Either way a 64-byte header before the array says which,
 * and the array is 64-byte aligned. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, madvise */
#define _ISOC11_SOURCE  /* aligned_alloc */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bigmem.h"

#define BIG_MIN ((size_t)1 << 20)
#define HUGE_PAGE ((size_t)2 << 20)
#define HDR 64

struct big_hdr {
	size_t map_len;   /* the mapping's length; 0: from calloc */
	void *base;       /* what to free or unmap */
};

_Static_assert(sizeof(struct big_hdr) <= HDR, "the header fits before the array");

void *ema_big_calloc(size_t n, size_t size)
{
	size_t bytes, total, len, map;
	char *raw, *aligned;
	struct big_hdr *h;

	if (size != 0 && n > (SIZE_MAX - HDR - 2 * HUGE_PAGE) / size)
		return NULL;
	bytes = n * size;
	total = bytes + HDR;
	if (bytes < BIG_MIN) {
		total = (total + HDR - 1) & ~(size_t)(HDR - 1);
		raw = aligned_alloc(HDR, total);
		if (raw == NULL)
			return NULL;
		memset(raw, 0, total);
		h = (struct big_hdr *)raw;
		h->map_len = 0;
		h->base = raw;
		return raw + HDR;
	}
	len = (total + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
	map = len + HUGE_PAGE;
	raw = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	/* keep the 2 MiB-aligned part: a huge page needs an aligned range */
	aligned = (char *)(((uintptr_t)raw + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
	if (aligned > raw)
		munmap(raw, (size_t)(aligned - raw));
	if (raw + map > aligned + len)
		munmap(aligned + len, (size_t)(raw + map - (aligned + len)));
#ifdef MADV_HUGEPAGE
	(void)madvise(aligned, len, MADV_HUGEPAGE); /* advice: ignored where refused */
#endif
	h = (struct big_hdr *)aligned;
	h->map_len = len;
	h->base = aligned;
	return aligned + HDR;
}

void ema_big_free(void *p)
{
	struct big_hdr *h;

	if (p == NULL)
		return;
	h = (struct big_hdr *)((char *)p - HDR);
	if (h->map_len == 0)
		free(h->base);
	else
		munmap(h->base, h->map_len);
}
