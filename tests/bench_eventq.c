/* bench_eventq.c: old against new event queue on the same machine, in the
 * same process, interleaved (old, new, old, new, ...) so that the load of a
 * shared machine falls on both alike. "old" is a frozen copy of the binary
 * heap that base/eventq.c held before issue 12 (40-byte events, hole-based
 * sifts, branchless child pick); "new" is base/eventq.c as built. Both run
 * the loop of ema_eventq_bench(): `pending` events held, then pop one and
 * push one a pseudo-random delay later, fixed seed. Prints the median of
 * the repetitions of each, their ratio and the load average.
 *     tests/bench_eventq [PENDING [PAIRS [REPS]]]     (default 1000 20000000 5)
 * Built by `make check`, run by `make bench-eventq` (niced). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ema_error.h"
#include "eventq.h"

/* ---- the frozen copy: do not tune, it is the yardstick ---- */

struct old_event {
	int64_t time_ns;
	uint64_t seq;
	int64_t push_ns;
	ema_event_fn fn;
	void *arg;
};

struct old_q {
	struct old_event *heap;
	size_t n, cap;
	uint64_t next_seq;
	int64_t now_ns;
};

__extension__ typedef unsigned __int128 old_key;

static inline old_key old_ev_key(const struct old_event *e)
{
	return ((old_key)((uint64_t)e->time_ns ^ (1ULL << 63)) << 64) | e->seq;
}

static inline int old_before(const struct old_event *a, const struct old_event *b)
{
	return old_ev_key(a) < old_ev_key(b);
}

static int old_push(struct old_q *q, int64_t time_ns, ema_event_fn fn, void *arg)
{
	struct old_event ev;
	struct old_event *h;
	size_t i;

	if (q->n == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 64;

		h = realloc(q->heap, cap * sizeof *h);
		if (h == NULL)
			return EMA_ERR_NOMEM;
		q->heap = h;
		q->cap = cap;
	}
	ev.time_ns = time_ns;
	ev.seq = q->next_seq++;
	ev.push_ns = q->now_ns;
	ev.fn = fn;
	ev.arg = arg;
	h = q->heap;
	i = q->n++;
	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (!old_before(&ev, &h[parent]))
			break;
		h[i] = h[parent];
		i = parent;
	}
	h[i] = ev;
	return EMA_OK;
}

static int old_pop(struct old_q *q, struct old_event *ev)
{
	struct old_event *h = q->heap;
	struct old_event last;
	size_t n, i, c;

	if (q->n == 0)
		return 1;
	*ev = h[0];
	n = --q->n;
	if (n == 0)
		return 0;
	last = h[n];
	i = 0;
	while ((c = 2 * i + 1) + 1 < n) {
		c += old_before(&h[c + 1], &h[c]);
		if (!old_before(&h[c], &last))
			goto done;
		h[i] = h[c];
		i = c;
	}
	if (c < n && old_before(&h[c], &last)) {
		h[i] = h[c];
		i = c;
	}
done:
	h[i] = last;
	return 0;
}

/* ---- the shared loop ---- */

static void noop(void *arg, int64_t now_ns)
{
	(void)arg;
	(void)now_ns;
}

static inline uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static double seconds(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + 1e-9 * (double)(b->tv_nsec - a->tv_nsec);
}

/* Pairs per second of the frozen copy; the same loop as ema_eventq_bench. */
static double old_bench(size_t pending, uint64_t pairs)
{
	struct old_q q = { NULL, 0, 0, 0, 0 };
	struct old_event ev;
	struct timespec t0, t1;
	uint64_t s = 0x9e3779b97f4a7c15ULL;
	int64_t sink = 0;
	double r;

	q.heap = malloc((pending + 1) * sizeof *q.heap);
	if (q.heap == NULL)
		return 0.0;
	q.cap = pending + 1;
	for (size_t i = 0; i < pending; i++)
		if (old_push(&q, (int64_t)(xorshift(&s) % 1000000), noop, NULL) != EMA_OK)
			goto fail;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t k = 0; k < pairs; k++) {
		int64_t t = 0;

		if (old_pop(&q, &ev) == 0)
			t = ev.time_ns;
		sink += t;
		if (old_push(&q, t + 1 + (int64_t)(xorshift(&s) % 1000000), noop, NULL) != EMA_OK)
			goto fail;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	r = (double)pairs / seconds(&t0, &t1);
	free(q.heap);
	return sink == -1 ? r + 1 : r;
fail:
	free(q.heap);
	return 0.0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	size_t pending = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000;
	uint64_t pairs = argc > 2 ? strtoull(argv[2], NULL, 10) : 20000000;
	int reps = argc > 3 ? atoi(argv[3]) : 5;
	double old_r[64], new_r[64], load[3] = { -1, -1, -1 };
	FILE *f;

	if (reps < 1 || reps > 64 || pairs == 0) {
		fprintf(stderr, "usage: %s [PENDING [PAIRS [REPS<=64]]]\n", argv[0]);
		return 2;
	}
	for (int i = 0; i < reps; i++) {
		old_r[i] = old_bench(pending, pairs);
		if (ema_eventq_bench_once(pending, pairs, &new_r[i]) != EMA_OK) {
			fprintf(stderr, "bench_eventq: out of memory\n");
			return 1;
		}
		printf("rep %d: old %6.2f  new %6.2f M pairs/s\n", i + 1, old_r[i] / 1e6, new_r[i] / 1e6);
	}
	qsort(old_r, (size_t)reps, sizeof *old_r, cmp_double);
	qsort(new_r, (size_t)reps, sizeof *new_r, cmp_double);
	f = fopen("/proc/loadavg", "r");
	if (f != NULL) {
		if (fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
			load[0] = -1;
		fclose(f);
	}
	printf("%zu pending, %llu pop+push pairs, median of %d: old %.2f, new %.2f M pairs/s, "
	       "new/old %.2f; load average %.2f %.2f %.2f\n",
	       pending, (unsigned long long)pairs, reps, old_r[reps / 2] / 1e6, new_r[reps / 2] / 1e6,
	       new_r[reps / 2] / old_r[reps / 2], load[0], load[1], load[2]);
	return 0;
}
