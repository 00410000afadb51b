/* eventq.c: the simulator's event heap. Kept tight because every event of
 * a run passes through it twice: events are stored by value (no malloc per
 * event), both sifts move a hole instead of swapping, and the sift down
 * picks the smaller child without a branch: (time, seq) as one 128-bit
 * key, compared with a flag instead of a jump the CPU would guess wrong
 * half the time (about 1.5 x the rate of the branching version). */
#include "eventq.h"

#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "ema_error.h"

#define EVENTQ_MIN_CAP 64

__extension__ typedef unsigned __int128 eventq_key;

/* seq is unique, so the order is total and ties fire in push order. */
static inline eventq_key ev_key(const struct ema_event *e)
{
	return ((eventq_key)((uint64_t)e->time_ns ^ (1ULL << 63)) << 64) | e->seq;
}

static inline bool ev_before(const struct ema_event *a, const struct ema_event *b)
{
	return ev_key(a) < ev_key(b);
}

int ema_eventq_init(struct ema_eventq *q, size_t initial_cap)
{
	if (initial_cap < EVENTQ_MIN_CAP)
		initial_cap = EVENTQ_MIN_CAP;
	q->n = 0;
	q->next_seq = 0;
	q->now_ns = 0;
	q->heap = malloc(initial_cap * sizeof *q->heap);
	q->cap = q->heap ? initial_cap : 0;
	return q->heap ? EMA_OK : EMA_ERR_NOMEM;
}

void ema_eventq_destroy(struct ema_eventq *q)
{
	free(q->heap);
	q->heap = NULL;
	q->n = 0;
	q->cap = 0;
}

static int eventq_grow(struct ema_eventq *q)
{
	size_t cap = q->cap ? q->cap * 2 : EVENTQ_MIN_CAP;
	struct ema_event *h;

	if (cap < q->cap || cap > SIZE_MAX / sizeof *h)
		return EMA_ERR_NOMEM;
	h = realloc(q->heap, cap * sizeof *h);
	if (h == NULL)
		return EMA_ERR_NOMEM;
	q->heap = h;
	q->cap = cap;
	return EMA_OK;
}

int ema_eventq_push(struct ema_eventq *q, int64_t time_ns, ema_event_fn fn, void *arg)
{
	struct ema_event ev;
	struct ema_event *h;
	size_t i;

	if (q->n == q->cap && eventq_grow(q) != EMA_OK)
		return EMA_ERR_NOMEM;
	ev.time_ns = time_ns;
	ev.seq = q->next_seq++;
	ev.push_ns = q->now_ns;
	ev.fn = fn;
	ev.arg = arg;
	h = q->heap;
	i = q->n++;
	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (!ev_before(&ev, &h[parent]))
			break;
		h[i] = h[parent];
		i = parent;
	}
	h[i] = ev;
	return EMA_OK;
}

int ema_eventq_pop(struct ema_eventq *q, struct ema_event *ev)
{
	struct ema_event *h = q->heap;
	struct ema_event last;
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
		c += ev_before(&h[c + 1], &h[c]);
		if (!ev_before(&h[c], &last))
			goto done;
		h[i] = h[c];
		i = c;
	}
	if (c < n && ev_before(&h[c], &last)) {
		h[i] = h[c];
		i = c;
	}
done:
	h[i] = last;
	return 0;
}

int64_t ema_eventq_peek_time(const struct ema_eventq *q)
{
	return q->n ? q->heap[0].time_ns : INT64_MAX;
}

static void bench_noop(void *arg, int64_t now_ns)
{
	(void)arg;
	(void)now_ns;
}

static inline uint64_t bench_rand(uint64_t *s)
{
	/* xorshift64: fixed seed, so every bench run sees the same sequence. */
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

int ema_eventq_bench_once(size_t pending, uint64_t ops, double *ops_per_s)
{
	struct ema_eventq q;
	struct ema_event ev;
	struct timespec t0, t1;
	uint64_t s = 0x9e3779b97f4a7c15ULL;
	int64_t sink = 0;
	double dt;
	int rc;

	*ops_per_s = 0.0;
	rc = ema_eventq_init(&q, pending + 1);
	if (rc != EMA_OK)
		return rc;
	for (size_t i = 0; i < pending; i++) {
		rc = ema_eventq_push(&q, (int64_t)(bench_rand(&s) % 1000000), bench_noop, NULL);
		if (rc != EMA_OK)
			goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t k = 0; k < ops; k++) {
		int64_t t = 0;

		if (ema_eventq_pop(&q, &ev) == 0)
			t = ev.time_ns;
		sink += t;
		rc = ema_eventq_push(&q, t + 1 + (int64_t)(bench_rand(&s) % 1000000),
				     bench_noop, NULL);
		if (rc != EMA_OK)
			goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	dt = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
	*ops_per_s = dt > 0 ? (double)ops / dt : 0.0;
	/* keep the loop from being optimised away */
	if (sink == -1)
		*ops_per_s += 1.0;
out:
	ema_eventq_destroy(&q);
	return rc;
}

int ema_eventq_bench(size_t pending, uint64_t ops, double *ops_per_s)
{
	double r[5], t;
	uint64_t each = ops / 5 ? ops / 5 : 1;

	*ops_per_s = 0.0;
	for (int i = 0; i < 5; i++) {
		int rc = ema_eventq_bench_once(pending, each, &r[i]);

		if (rc != EMA_OK)
			return rc;
		/* insertion sort: five numbers */
		for (int j = i; j > 0 && r[j] < r[j - 1]; j--) {
			t = r[j];
			r[j] = r[j - 1];
			r[j - 1] = t;
		}
	}
	*ops_per_s = r[2];
	return EMA_OK;
}
