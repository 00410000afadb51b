/* eventq.c: the simulator's event heap. Kept tight because every event of
 * a run passes through it twice:
 * - 4-ary, so a sift down walks half the levels of a binary heap; the
 *   times lie apart from what the events carry, 8 bytes each, the four
 *   children of a node in one 32-byte half of a cache line;
 * - the slots past the last event hold INT64_MAX, so a sift down compares
 *   four children without asking how many there are;
 * - the smallest of four is picked by comparisons whose results select
 *   (conditional moves of times and of pointers) instead of jumps the CPU
 *   would guess wrong half the time;
 * - the order is (time, seq), seq unique, but seq is read only where the
 *   smallest time is not unique among those compared: a jump that is
 *   rarely taken; a push's seq is the largest yet, so a tie never lifts it;
 * - both sifts move a hole instead of swapping;
 * - a pop leaves the root empty and the next push fills it with one sift
 *   down (the simulator's pattern: an event's callback pushes the next).
 * The order is total, so the events come out in the same order whatever
 * the heap's shape: ties fire in push order, as in the binary heap before.
 * 8-ary was slower here: the eight times do not fit in registers. */
#include "eventq.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ema_error.h"

#define EVENTQ_MIN_CAP 64
#define EVENTQ_LINE 64
#define EVENTQ_ARITY 4
/* slots after the last event that a sift down may read */
#define EVENTQ_PAD EVENTQ_ARITY
/* time[0] stands this many slots into a 64-byte line, so that the
 * children of a node, time[4i+1..4i+4], never straddle two lines */
#define EVENTQ_SKEW (EVENTQ_ARITY - 1)

/* The most events a queue holds: both arrays' sizes, padding and
 * alignment included, fit in a size_t (the items are the larger). */
#define EVENTQ_MAX_CAP ((SIZE_MAX - EVENTQ_LINE) / sizeof(struct ema_eventq_item) - \
			EVENTQ_PAD - EVENTQ_SKEW)

#define EVENTQ_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Times for cap events on lines of their own, the padding INT64_MAX;
 * *mem receives what to free. */
static int64_t *alloc_times(size_t cap, void **mem)
{
	int64_t *t;
	uintptr_t a;

	*mem = malloc((cap + EVENTQ_PAD + EVENTQ_SKEW) * sizeof *t + EVENTQ_LINE);
	if (*mem == NULL)
		return NULL;
	a = ((uintptr_t)*mem + EVENTQ_LINE - 1) & ~(uintptr_t)(EVENTQ_LINE - 1);
	t = (int64_t *)a + EVENTQ_SKEW;
	for (size_t i = 0; i < cap + EVENTQ_PAD; i++)
		t[i] = INT64_MAX;
	return t;
}

int ema_eventq_init(struct ema_eventq *q, size_t initial_cap)
{
	memset(q, 0, sizeof *q);
	if (initial_cap < EVENTQ_MIN_CAP)
		initial_cap = EVENTQ_MIN_CAP;
	if (initial_cap > EVENTQ_MAX_CAP)
		return EMA_ERR_NOMEM;
	q->item = malloc(initial_cap * sizeof *q->item);
	if (q->item == NULL)
		return EMA_ERR_NOMEM;
	q->time = alloc_times(initial_cap, &q->time_mem);
	if (q->time == NULL) {
		free(q->item);
		q->item = NULL;
		return EMA_ERR_NOMEM;
	}
	q->cap = initial_cap;
	return EMA_OK;
}

void ema_eventq_destroy(struct ema_eventq *q)
{
	free(q->time_mem);
	free(q->item);
	q->time_mem = NULL;
	q->time = NULL;
	q->item = NULL;
	q->n = 0;
	q->cap = 0;
	q->hole = false;
}

/* Doubles the room; on failure the queue is unchanged (a larger item
 * array is harmless). */
static int eventq_grow(struct ema_eventq *q)
{
	size_t cap = q->cap ? q->cap * 2 : EVENTQ_MIN_CAP;
	struct ema_eventq_item *it;
	int64_t *t;
	void *mem;

	if (q->cap > EVENTQ_MAX_CAP / 2)
		return EMA_ERR_NOMEM;
	it = realloc(q->item, cap * sizeof *it);
	if (it == NULL)
		return EMA_ERR_NOMEM;
	q->item = it;
	t = alloc_times(cap, &mem);
	if (t == NULL)
		return EMA_ERR_NOMEM;
	if (q->n > 0)
		memcpy(t, q->time, q->n * sizeof *t);
	free(q->time_mem);
	q->time_mem = mem;
	q->time = t;
	q->cap = cap;
	return EMA_OK;
}

static inline bool before(int64_t ta, uint64_t sa, int64_t tb, uint64_t sb)
{
	return ta < tb || (ta == tb && sa < sb);
}

/* The first of the children c.. (those below n) in (time, seq) order: the
 * way when times tie. */
static size_t exact_min(const struct ema_eventq *q, size_t c, size_t n)
{
	size_t end = c + EVENTQ_ARITY < n ? c + EVENTQ_ARITY : n, m = c;

	for (size_t j = c + 1; j < end; j++)
		if (before(q->time[j], q->item[j].seq, q->time[m], q->item[m].seq))
			m = j;
	return m;
}

/* Sinks the hole at i, among the first n slots, to where an event of
 * time tk and sequence sk belongs, and returns that slot (the caller
 * writes the event there: a struct passed by value went through the stack
 * in pieces and was read back whole, which stalls the load). */
static inline __attribute__((always_inline)) size_t sift_down(struct ema_eventq *q, size_t i,
							      size_t n, int64_t tk, uint64_t sk)
{
	int64_t *time = q->time;
	struct ema_eventq_item *item = q->item;

	for (;;) {
		size_t c = EVENTQ_ARITY * i + 1, m;
		const int64_t *ch = &time[c], *p0, *p2;
		int64_t t0, t1, t2, t3;
		bool e01, e23, tie, lt;

		if (c >= n)
			break;
		/* pairs, then their winners; the first of equals wins, so
		 * another child of the smallest time lost where it met an
		 * equal on the winner's way: only then does seq decide */
		t0 = ch[0], t1 = ch[1], t2 = ch[2], t3 = ch[3];
		lt = t1 < t0;
		e01 = t1 == t0;
		t0 = lt ? t1 : t0;
		p0 = lt ? ch + 1 : ch;
		lt = t3 < t2;
		e23 = t3 == t2;
		t2 = lt ? t3 : t2;
		p2 = lt ? ch + 3 : ch + 2;
		lt = t2 < t0;
		tie = (t2 == t0) | (e23 & lt) | (e01 & !lt);
		t0 = lt ? t2 : t0;
		p0 = lt ? p2 : p0;
		if (EVENTQ_UNLIKELY(tie || t0 == tk)) {
			m = exact_min(q, c, n);
			if (!before(time[m], item[m].seq, tk, sk))
				break;
			t0 = time[m];
		} else {
			if (!(t0 < tk))
				break;
			m = (size_t)(p0 - time);
		}
		time[i] = t0;
		item[i] = item[m];
		i = m;
	}
	time[i] = tk;
	return i;
}

/* Fills the hole a pop left at the root with the last event. */
static void settle(struct ema_eventq *q)
{
	size_t n = --q->n, i;
	int64_t t;

	q->hole = false;
	if (n == 0) {
		q->time[0] = INT64_MAX;
		return;
	}
	t = q->time[n];
	q->time[n] = INT64_MAX;
	/* the sift stays below n: item[n] is still there to copy */
	i = sift_down(q, 0, n, t, q->item[n].seq);
	q->item[i] = q->item[n];
}

/* Lifts the hole at i to where an event of time tk belongs and returns
 * that slot. The event is the last pushed, its seq the largest yet, so
 * an equal time keeps it below. */
static inline size_t sift_up(struct ema_eventq *q, size_t i, int64_t tk)
{
	int64_t *time = q->time;

	while (i > 0) {
		size_t parent = (i - 1) / EVENTQ_ARITY;

		if (!(tk < time[parent]))
			break;
		time[i] = time[parent];
		q->item[i] = q->item[parent];
		i = parent;
	}
	time[i] = tk;
	return i;
}

int ema_eventq_push(struct ema_eventq *q, int64_t time_ns, ema_event_fn fn, void *arg)
{
	struct ema_eventq_item *it;
	uint64_t seq;
	size_t i;

	if (q->hole) {
		/* in place of the popped root: one sift down, no sift up */
		q->hole = false;
		seq = q->next_seq++;
		i = sift_down(q, 0, q->n, time_ns, seq);
	} else {
		if (q->n == q->cap && eventq_grow(q) != EMA_OK)
			return EMA_ERR_NOMEM;
		seq = q->next_seq++;
		i = sift_up(q, q->n++, time_ns);
	}
	it = &q->item[i];
	it->seq = seq;
	it->push_ns = q->now_ns;
	it->fn = fn;
	it->arg = arg;
	return EMA_OK;
}

static inline void top_event(const struct ema_eventq *q, struct ema_event *ev)
{
	ev->time_ns = q->time[0];
	ev->seq = q->item[0].seq;
	ev->push_ns = q->item[0].push_ns;
	ev->fn = q->item[0].fn;
	ev->arg = q->item[0].arg;
}

int ema_eventq_pop(struct ema_eventq *q, struct ema_event *ev)
{
	if (q->hole)
		settle(q);
	if (q->n == 0)
		return 1;
	top_event(q, ev);
	q->hole = true;
	return 0;
}

int64_t ema_eventq_peek_time(struct ema_eventq *q)
{
	if (q->hole)
		settle(q);
	return q->n ? q->time[0] : INT64_MAX;
}

const struct ema_event *ema_eventq_peek(struct ema_eventq *q)
{
	if (q->hole)
		settle(q);
	if (q->n == 0)
		return NULL;
	top_event(q, &q->top);
	return &q->top;
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
