/* bigmem.h: large zeroed arrays (a run's requests, the ledger's pages)
 * in memory the kernel may back with 2 MiB pages, because on the virtual
 * machines this runs on a 4 KiB page fault costs microseconds and a
 * replay's first touches of its arrays took thousands of them. */
#ifndef EMA_BIGMEM_H
#define EMA_BIGMEM_H

#include <stddef.h>

/* calloc(n, size), huge-page backed where it is at least a megabyte and
 * the kernel allows it (madvise). NULL on overflow or out of memory. */
void *ema_big_calloc(size_t n, size_t size);
/* Frees what ema_big_calloc returned (NULL: nothing). */
void ema_big_free(void *p);

#endif
