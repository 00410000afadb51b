/* test_eventq.c: the event heap orders by (time, push order), grows from
 * nothing, agrees with a sorted reference under random operations (ties,
 * extreme times, growth, a pop's deferred refill), and leaves the queue
 * as it was when an allocation fails. malloc, realloc and free are
 * wrapped at link time (-Wl,--wrap, base/local.mk) so that a test can make
 * the k-th allocation fail and count what is still allocated. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ema_error.h"
#include "eventq.h"
#include "test_main.h"

void *__real_malloc(size_t size);
void *__real_realloc(void *p, size_t size);
void __real_free(void *p);
void *__wrap_malloc(size_t size);
void *__wrap_realloc(void *p, size_t size);
void __wrap_free(void *p);

static long alloc_fail_in = -1; /* allocations until the one that fails; -1: none */
static long alloc_live;         /* blocks from malloc/realloc(NULL) not yet freed */

static bool alloc_fails_now(void)
{
	if (alloc_fail_in < 0)
		return false;
	return alloc_fail_in-- == 0;
}

void *__wrap_malloc(size_t size)
{
	void *p = alloc_fails_now() ? NULL : __real_malloc(size);

	alloc_live += p != NULL;
	return p;
}

void *__wrap_realloc(void *p, size_t size)
{
	void *r = alloc_fails_now() ? NULL : __real_realloc(p, size);

	alloc_live += p == NULL && r != NULL;
	return r;
}

void __wrap_free(void *p)
{
	alloc_live -= p != NULL;
	__real_free(p);
}

static void noop(void *arg, int64_t now)
{
	(void)arg;
	(void)now;
}

static void other(void *arg, int64_t now)
{
	(void)arg;
	(void)now;
}

static void test_hand_order(void)
{
	struct ema_eventq q;
	struct ema_event ev;
	int64_t times[] = { 50, 10, 30, 10, 20 };
	int64_t want_t[] = { 10, 10, 20, 30, 50 };
	uintptr_t want_arg[] = { 1, 3, 4, 2, 0 };

	CU_ASSERT_EQUAL_FATAL(ema_eventq_init(&q, 0), EMA_OK);
	CU_ASSERT_EQUAL(ema_eventq_peek_time(&q), INT64_MAX);
	CU_ASSERT_PTR_NULL(ema_eventq_peek(&q));
	CU_ASSERT_EQUAL(ema_eventq_pop(&q, &ev), 1);
	for (uintptr_t i = 0; i < 5; i++)
		CU_ASSERT_EQUAL(ema_eventq_push(&q, times[i], noop, (void *)i), EMA_OK);
	CU_ASSERT_EQUAL(ema_eventq_size(&q), 5);
	CU_ASSERT_EQUAL(ema_eventq_peek_time(&q), 10);
	for (int i = 0; i < 5; i++) {
		CU_ASSERT_EQUAL_FATAL(ema_eventq_pop(&q, &ev), 0);
		CU_ASSERT_EQUAL(ev.time_ns, want_t[i]);
		CU_ASSERT_EQUAL((uintptr_t)ev.arg, want_arg[i]);
		CU_ASSERT_PTR_EQUAL(ev.fn, noop);
	}
	CU_ASSERT_EQUAL(ema_eventq_pop(&q, &ev), 1);
	CU_ASSERT_EQUAL(ema_eventq_size(&q), 0);
	ema_eventq_destroy(&q);
}

static void test_ties_fifo(void)
{
	struct ema_eventq q;
	struct ema_event ev;

	CU_ASSERT_EQUAL_FATAL(ema_eventq_init(&q, 1), EMA_OK);
	for (uintptr_t i = 0; i < 1000; i++)
		CU_ASSERT_EQUAL(ema_eventq_push(&q, 7, noop, (void *)i), EMA_OK);
	for (uintptr_t i = 0; i < 1000; i++) {
		CU_ASSERT_EQUAL_FATAL(ema_eventq_pop(&q, &ev), 0);
		CU_ASSERT_EQUAL((uintptr_t)ev.arg, i);
	}
	ema_eventq_destroy(&q);
}

/* The extremes of time next to the queue's own filler (INT64_MAX past
 * the last event): 8 events, so the root's children are full and one
 * grandchild group is part events, part filler. */
static void test_extreme_times(void)
{
	struct ema_eventq q;
	struct ema_event ev;
	int64_t times[] = { INT64_MAX, 3, INT64_MAX, INT64_MIN, INT64_MAX, 3, -1, INT64_MAX };
	uintptr_t want[] = { 3, 6, 1, 5, 0, 2, 4, 7 };

	CU_ASSERT_EQUAL_FATAL(ema_eventq_init(&q, 0), EMA_OK);
	for (uintptr_t i = 0; i < 8; i++)
		CU_ASSERT_EQUAL(ema_eventq_push(&q, times[i], noop, (void *)i), EMA_OK);
	for (int i = 0; i < 8; i++) {
		CU_ASSERT_EQUAL_FATAL(ema_eventq_pop(&q, &ev), 0);
		CU_ASSERT_EQUAL((uintptr_t)ev.arg, want[i]);
		CU_ASSERT_EQUAL(ev.time_ns, times[want[i]]);
	}
	CU_ASSERT_EQUAL(ema_eventq_pop(&q, &ev), 1);
	CU_ASSERT_EQUAL(ema_eventq_peek_time(&q), INT64_MAX);
	ema_eventq_destroy(&q);
}

/* A push right after a pop takes the popped event's place: earlier than
 * everything it is next; at the time of the next pending one it comes
 * after it (pushed later); a peek in between changes nothing. */
static void test_pop_then_push(void)
{
	struct ema_eventq q;
	struct ema_event ev;
	const struct ema_event *top;

	CU_ASSERT_EQUAL_FATAL(ema_eventq_init(&q, 0), EMA_OK);
	ema_eventq_push(&q, 10, noop, (void *)1);
	ema_eventq_push(&q, 20, noop, (void *)2);
	ema_eventq_push(&q, 30, noop, (void *)3);
	CU_ASSERT_EQUAL(ema_eventq_pop(&q, &ev), 0);
	CU_ASSERT_EQUAL((uintptr_t)ev.arg, 1);
	CU_ASSERT_EQUAL(ema_eventq_size(&q), 2);
	CU_ASSERT_EQUAL(ema_eventq_push(&q, 5, other, (void *)4), EMA_OK);
	CU_ASSERT_EQUAL(ema_eventq_size(&q), 3);
	top = ema_eventq_peek(&q);
	CU_ASSERT_PTR_NOT_NULL_FATAL(top);
	CU_ASSERT_EQUAL(top->time_ns, 5);
	CU_ASSERT_EQUAL(top->seq, 3);
	CU_ASSERT_PTR_EQUAL(top->fn, other);
	CU_ASSERT_EQUAL(ema_eventq_pop(&q, &ev), 0);
	CU_ASSERT_EQUAL((uintptr_t)ev.arg, 4);
	CU_ASSERT_EQUAL(ema_eventq_push(&q, 20, noop, (void *)5), EMA_OK);
	CU_ASSERT_EQUAL(ema_eventq_pop(&q, &ev), 0);
	CU_ASSERT_EQUAL((uintptr_t)ev.arg, 2);
	/* a peek settles the popped place before the push */
	CU_ASSERT_EQUAL(ema_eventq_peek_time(&q), 20);
	CU_ASSERT_EQUAL(ema_eventq_size(&q), 2);
	CU_ASSERT_EQUAL(ema_eventq_push(&q, 20, noop, (void *)6), EMA_OK);
	CU_ASSERT_EQUAL(ema_eventq_pop(&q, &ev), 0);
	CU_ASSERT_EQUAL((uintptr_t)ev.arg, 5);
	CU_ASSERT_EQUAL(ema_eventq_pop(&q, &ev), 0);
	CU_ASSERT_EQUAL((uintptr_t)ev.arg, 6);
	CU_ASSERT_EQUAL(ema_eventq_pop(&q, &ev), 0);
	CU_ASSERT_EQUAL((uintptr_t)ev.arg, 3);
	/* popping the last one empties it, with or without a push between */
	CU_ASSERT_EQUAL(ema_eventq_pop(&q, &ev), 1);
	CU_ASSERT_EQUAL(ema_eventq_size(&q), 0);
	CU_ASSERT_EQUAL(ema_eventq_push(&q, 1, noop, (void *)7), EMA_OK);
	CU_ASSERT_EQUAL(ema_eventq_pop(&q, &ev), 0);
	CU_ASSERT_EQUAL(ema_eventq_push(&q, 2, noop, (void *)8), EMA_OK);
	CU_ASSERT_EQUAL(ema_eventq_pop(&q, &ev), 0);
	CU_ASSERT_EQUAL((uintptr_t)ev.arg, 8);
	CU_ASSERT_EQUAL(ema_eventq_pop(&q, &ev), 1);
	ema_eventq_destroy(&q);
}

/* A pending event of the reference: what was pushed and what the queue
 * must give back for it. */
struct ref {
	int64_t t;
	uint64_t seq;
	int64_t push_ns;
	uintptr_t arg;
};

static bool ref_before(const struct ref *a, const struct ref *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static uint64_t rnd(uint64_t *s)
{
	/* splitmix64: fixed seeds, the same operations every run */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

enum times { T_NARROW, T_TIES, T_WIDE, T_FUTURE };

/* A time of the given spread: 0..49, 0..3 (most events tie), the whole
 * int64 range with its ends often, or a delay after now (the simulator's
 * pattern). */
static int64_t rnd_time(uint64_t *s, enum times kind, int64_t now)
{
	uint64_t r = rnd(s);

	switch (kind) {
	case T_NARROW:
		return (int64_t)(r % 50);
	case T_TIES:
		return (int64_t)(r % 4);
	case T_WIDE:
		switch (r % 8) {
		case 0: return INT64_MAX;
		case 1: return INT64_MIN;
		case 2: return INT64_MAX - 1;
		case 3: return (int64_t)(r >> 60) - 8;
		default: return (int64_t)rnd(s);
		}
	case T_FUTURE:
		return now + (int64_t)(r % 1000000);
	}
	return 0;
}

/* Random operations against a sorted array: every pop, peek and size
 * must match the reference, ties in push order, a take_seq counting as a
 * push; pop_in_8 of 8 operations pop (after a pop, the next one pushes
 * with probability 1/2 so that a pop's place is refilled by a push as
 * often as by a peek or pop). Returns the largest size reached. */
static size_t run_random(uint64_t seed, enum times kind, int pop_in_8, int ops, size_t init_cap)
{
	struct ema_eventq q;
	struct ema_event ev;
	struct ref *ref = malloc((size_t)ops * sizeof *ref);
	size_t nref = 0, most = 0;
	uint64_t s = seed, seq = 0;
	uintptr_t arg = 0;
	int64_t now = 0;
	bool popped = false;

	CU_ASSERT_PTR_NOT_NULL_FATAL(ref);
	CU_ASSERT_EQUAL_FATAL(ema_eventq_init(&q, init_cap), EMA_OK);
	for (int op = 0; op < ops; op++) {
		uint64_t r = rnd(&s);
		bool push = nref == 0 || (popped ? r % 2 == 0 : (int)(r % 8) >= pop_in_8);

		popped = false;
		if (r % 97 == 0) {
			CU_ASSERT_EQUAL_FATAL(ema_eventq_take_seq(&q), seq);
			seq++;
		} else if (r % 89 == 0) {
			const struct ema_event *top = ema_eventq_peek(&q);

			if (nref == 0) {
				CU_ASSERT_PTR_NULL_FATAL(top);
			} else {
				CU_ASSERT_PTR_NOT_NULL_FATAL(top);
				CU_ASSERT_EQUAL_FATAL(top->seq, ref[0].seq);
				CU_ASSERT_EQUAL_FATAL((uintptr_t)top->arg, ref[0].arg);
			}
		} else if (push) {
			struct ref e;
			size_t at = nref;

			e.t = rnd_time(&s, kind, now);
			e.seq = seq++;
			e.push_ns = now + (int64_t)(r % 3);
			e.arg = arg++;
			q.now_ns = e.push_ns;
			CU_ASSERT_EQUAL_FATAL(ema_eventq_push(&q, e.t, e.arg % 2 ? other : noop,
							      (void *)e.arg), EMA_OK);
			while (at > 0 && ref_before(&e, &ref[at - 1]))
				at--;
			memmove(ref + at + 1, ref + at, (nref - at) * sizeof *ref);
			ref[at] = e;
			nref++;
		} else {
			CU_ASSERT_EQUAL_FATAL(ema_eventq_peek_time(&q), ref[0].t);
			CU_ASSERT_EQUAL_FATAL(ema_eventq_pop(&q, &ev), 0);
			CU_ASSERT_EQUAL_FATAL(ev.time_ns, ref[0].t);
			CU_ASSERT_EQUAL_FATAL(ev.seq, ref[0].seq);
			CU_ASSERT_EQUAL_FATAL(ev.push_ns, ref[0].push_ns);
			CU_ASSERT_EQUAL_FATAL((uintptr_t)ev.arg, ref[0].arg);
			CU_ASSERT_PTR_EQUAL_FATAL(ev.fn, ref[0].arg % 2 ? other : noop);
			if (kind == T_FUTURE)
				now = ev.time_ns;
			memmove(ref, ref + 1, (nref - 1) * sizeof *ref);
			nref--;
			popped = true;
		}
		CU_ASSERT_EQUAL_FATAL(ema_eventq_size(&q), nref);
		if (nref > most)
			most = nref;
	}
	for (size_t i = 0; i < nref; i++) {
		CU_ASSERT_EQUAL_FATAL(ema_eventq_pop(&q, &ev), 0);
		CU_ASSERT_EQUAL_FATAL(ev.seq, ref[i].seq);
		CU_ASSERT_EQUAL_FATAL(ev.time_ns, ref[i].t);
	}
	CU_ASSERT_EQUAL(ema_eventq_pop(&q, &ev), 1);
	CU_ASSERT_EQUAL(ema_eventq_size(&q), 0);
	ema_eventq_destroy(&q);
	free(ref);
	return most;
}

static void test_random_vs_reference(void)
{
	/* mostly pushes: grows from 64 to thousands (past 256: grown at
	 * least twice) */
	CU_ASSERT(run_random(12345, T_NARROW, 3, 20000, 0) > 256);
	CU_ASSERT(run_random(2, T_TIES, 3, 20000, 0) > 256);
	CU_ASSERT(run_random(3, T_WIDE, 3, 20000, 0) > 256);
	/* balanced: stays small, the partly filled groups near the bottom */
	for (uint64_t seed = 10; seed < 20; seed++) {
		run_random(seed, T_NARROW, 4, 4000, 0);
		run_random(seed, T_TIES, 4, 4000, 0);
		run_random(seed, T_WIDE, 4, 4000, 0);
	}
	/* the simulator's pattern, after growing past a small start */
	CU_ASSERT(run_random(4, T_FUTURE, 3, 30000, 1) > 256);
	run_random(5, T_FUTURE, 4, 30000, 200);
}

/* Sequence numbers keep counting across pops, so an event pushed later at
 * an equal time still fires after older ones. */
static void test_seq_across_pops(void)
{
	struct ema_eventq q;
	struct ema_event ev;

	CU_ASSERT_EQUAL_FATAL(ema_eventq_init(&q, 4), EMA_OK);
	ema_eventq_push(&q, 5, noop, (void *)1);
	ema_eventq_push(&q, 5, noop, (void *)2);
	ema_eventq_pop(&q, &ev);
	CU_ASSERT_EQUAL((uintptr_t)ev.arg, 1);
	ema_eventq_push(&q, 5, noop, (void *)3);
	ema_eventq_pop(&q, &ev);
	CU_ASSERT_EQUAL((uintptr_t)ev.arg, 2);
	CU_ASSERT(ev.seq == 1);
	ema_eventq_pop(&q, &ev);
	CU_ASSERT_EQUAL((uintptr_t)ev.arg, 3);
	ema_eventq_destroy(&q);
}

/* A destroyed queue is empty and takes pushes again, growing from
 * nothing. */
static void test_reuse_after_destroy(void)
{
	struct ema_eventq q;
	struct ema_event ev;
	long live = alloc_live;

	CU_ASSERT_EQUAL_FATAL(ema_eventq_init(&q, 0), EMA_OK);
	ema_eventq_push(&q, 1, noop, NULL);
	ema_eventq_destroy(&q);
	CU_ASSERT_EQUAL(ema_eventq_size(&q), 0);
	CU_ASSERT_EQUAL(ema_eventq_pop(&q, &ev), 1);
	for (uintptr_t i = 0; i < 100; i++)
		CU_ASSERT_EQUAL_FATAL(ema_eventq_push(&q, (int64_t)(100 - i), noop, (void *)i), EMA_OK);
	for (uintptr_t i = 0; i < 100; i++) {
		CU_ASSERT_EQUAL_FATAL(ema_eventq_pop(&q, &ev), 0);
		CU_ASSERT_EQUAL((uintptr_t)ev.arg, 99 - i);
	}
	ema_eventq_destroy(&q);
	CU_ASSERT_EQUAL(alloc_live, live);
}

static void test_init_fails(void)
{
	struct ema_eventq q;
	long live = alloc_live;

	/* too large to ask for */
	CU_ASSERT_EQUAL(ema_eventq_init(&q, SIZE_MAX), EMA_ERR_NOMEM);
	CU_ASSERT_EQUAL(ema_eventq_size(&q), 0);
	ema_eventq_destroy(&q);
	/* the first and the second of its two allocations failing */
	for (long k = 0; k < 2; k++) {
		alloc_fail_in = k;
		CU_ASSERT_EQUAL(ema_eventq_init(&q, 100), EMA_ERR_NOMEM);
		CU_ASSERT_EQUAL(alloc_fail_in, -1);
		CU_ASSERT_EQUAL(alloc_live, live);
		CU_ASSERT_EQUAL(ema_eventq_size(&q), 0);
		ema_eventq_destroy(&q);
	}
	alloc_fail_in = -1;
}

/* A push that needs more room and cannot get it fails and leaves every
 * event in place; the next push that can grow does. */
static void test_grow_fails(void)
{
	struct ema_eventq q;
	struct ema_event ev;
	long live = alloc_live;
	size_t cap;

	for (long k = 0; k < 2; k++) {
		CU_ASSERT_EQUAL_FATAL(ema_eventq_init(&q, 0), EMA_OK);
		for (uintptr_t i = 0; i < 64; i++)
			CU_ASSERT_EQUAL_FATAL(ema_eventq_push(&q, (int64_t)(i * 7 % 64), noop, (void *)i),
					      EMA_OK);
		cap = q.cap;
		alloc_fail_in = k;
		CU_ASSERT_EQUAL(ema_eventq_push(&q, -5, noop, (void *)99), EMA_ERR_NOMEM);
		CU_ASSERT_EQUAL(alloc_fail_in, -1);
		CU_ASSERT_EQUAL(q.cap, cap);
		CU_ASSERT_EQUAL(ema_eventq_size(&q), 64);
		CU_ASSERT_EQUAL(ema_eventq_peek_time(&q), 0);
		/* a pop makes room: the push fills the popped place, no growth */
		alloc_fail_in = 0;
		CU_ASSERT_EQUAL(ema_eventq_pop(&q, &ev), 0);
		CU_ASSERT_EQUAL(ev.time_ns, 0);
		CU_ASSERT_EQUAL(ema_eventq_push(&q, 0, noop, (void *)64), EMA_OK);
		CU_ASSERT_EQUAL(alloc_fail_in, 0);
		alloc_fail_in = -1;
		CU_ASSERT_EQUAL(ema_eventq_push(&q, 0, noop, (void *)65), EMA_OK);
		CU_ASSERT(q.cap > cap);
		CU_ASSERT_EQUAL(ema_eventq_size(&q), 65);
		/* times 0, 0, 1 .. 63: the two pushed at 0 in push order */
		CU_ASSERT_EQUAL(ema_eventq_pop(&q, &ev), 0);
		CU_ASSERT_EQUAL((uintptr_t)ev.arg, 64);
		CU_ASSERT_EQUAL(ema_eventq_pop(&q, &ev), 0);
		CU_ASSERT_EQUAL((uintptr_t)ev.arg, 65);
		for (int64_t t = 1; t < 64; t++) {
			CU_ASSERT_EQUAL_FATAL(ema_eventq_pop(&q, &ev), 0);
			CU_ASSERT_EQUAL(ev.time_ns, t);
			CU_ASSERT_EQUAL((uintptr_t)ev.arg, (uintptr_t)(t * 55 % 64));
		}
		CU_ASSERT_EQUAL(ema_eventq_pop(&q, &ev), 1);
		ema_eventq_destroy(&q);
		CU_ASSERT_EQUAL(alloc_live, live);
	}
}

/* A queue as large as a size_t allows refuses to grow without asking the
 * allocator (its counters set by hand: no such memory exists). */
static void test_grow_at_limit(void)
{
	struct ema_eventq q;
	size_t n, cap;

	CU_ASSERT_EQUAL_FATAL(ema_eventq_init(&q, 0), EMA_OK);
	n = q.n;
	cap = q.cap;
	q.n = q.cap = SIZE_MAX / 2;
	alloc_fail_in = 0;
	CU_ASSERT_EQUAL(ema_eventq_push(&q, 1, noop, NULL), EMA_ERR_NOMEM);
	CU_ASSERT_EQUAL(alloc_fail_in, 0);
	alloc_fail_in = -1;
	CU_ASSERT_EQUAL(q.cap, SIZE_MAX / 2);
	q.n = n;
	q.cap = cap;
	ema_eventq_destroy(&q);
}

static void test_bench_runs(void)
{
	double r = -1;

	/* no timing assertion: only that it runs and reports something */
	CU_ASSERT_EQUAL(ema_eventq_bench(1000, 100000, &r), EMA_OK);
	CU_ASSERT(r > 0);
	CU_ASSERT_EQUAL(ema_eventq_bench(0, 1000, &r), EMA_OK);
	CU_ASSERT_EQUAL(ema_eventq_bench(10, 3, &r), EMA_OK);
}

static void test_bench_fails(void)
{
	double r = -1;

	alloc_fail_in = 0;
	CU_ASSERT_EQUAL(ema_eventq_bench_once(1000, 1000, &r), EMA_ERR_NOMEM);
	CU_ASSERT_EQUAL(r, 0.0);
	r = -1;
	/* the third of the five runs */
	alloc_fail_in = 4;
	CU_ASSERT_EQUAL(ema_eventq_bench(1000, 1000, &r), EMA_ERR_NOMEM);
	CU_ASSERT_EQUAL(alloc_fail_in, -1);
	CU_ASSERT_EQUAL(r, 0.0);
	alloc_fail_in = -1;
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{ "hand-ordered pushes pop by time then push order", test_hand_order },
		{ "1000 ties fire in push order", test_ties_fifo },
		{ "INT64_MIN and INT64_MAX beside the filler", test_extreme_times },
		{ "a push after a pop takes its place in order", test_pop_then_push },
		{ "random operations match a sorted reference", test_random_vs_reference },
		{ "sequence numbers survive pops", test_seq_across_pops },
		{ "a destroyed queue grows again from nothing", test_reuse_after_destroy },
		{ "init fails cleanly when allocation fails", test_init_fails },
		{ "a push that cannot grow leaves the queue intact", test_grow_fails },
		{ "no growth past what a size_t can hold", test_grow_at_limit },
		{ "benchmark runs", test_bench_runs },
		{ "benchmark reports allocation failure", test_bench_fails },
		{ NULL, NULL }
	};

	return ema_test_run("eventq", cases);
}
