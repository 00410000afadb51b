/* test_eventq.c: the event heap orders by (time, push order), grows from
 * nothing, and agrees with a sorted reference under random operations. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ema_error.h"
#include "eventq.h"
#include "sim.h"
#include "test_main.h"

static void noop(void *arg, int64_t now)
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

struct ref {
	int64_t t;
	uint64_t k;
};

static int ref_cmp(const void *a, const void *b)
{
	const struct ref *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->k < y->k ? -1 : x->k > y->k;
}

/* Random pushes and pops against a sorted array: every pop must return
 * the reference's minimum, ties in push order. */
static void test_random_vs_reference(void)
{
	struct ema_eventq q;
	struct ema_event ev;
	struct ref *ref = malloc(20000 * sizeof *ref);
	size_t nref = 0;
	uint64_t key = 0;
	unsigned s = 12345;

	CU_ASSERT_PTR_NOT_NULL_FATAL(ref);
	CU_ASSERT_EQUAL_FATAL(ema_eventq_init(&q, 0), EMA_OK);
	for (int op = 0; op < 20000; op++) {
		s = s * 1103515245u + 12345u;
		if (nref == 0 || (s >> 16) % 3 != 0) {
			int64_t t = (int64_t)((s >> 8) % 50);

			ref[nref].t = t;
			ref[nref].k = key;
			nref++;
			CU_ASSERT_EQUAL_FATAL(ema_eventq_push(&q, t, noop, (void *)(uintptr_t)key), EMA_OK);
			key++;
		} else {
			qsort(ref, nref, sizeof *ref, ref_cmp);
			CU_ASSERT_EQUAL_FATAL(ema_eventq_peek_time(&q), ref[0].t);
			CU_ASSERT_EQUAL_FATAL(ema_eventq_pop(&q, &ev), 0);
			CU_ASSERT_EQUAL_FATAL(ev.time_ns, ref[0].t);
			CU_ASSERT_EQUAL_FATAL((uintptr_t)ev.arg, ref[0].k);
			memmove(ref, ref + 1, (nref - 1) * sizeof *ref);
			nref--;
		}
		CU_ASSERT_EQUAL_FATAL(ema_eventq_size(&q), nref);
	}
	qsort(ref, nref, sizeof *ref, ref_cmp);
	for (size_t i = 0; i < nref; i++) {
		CU_ASSERT_EQUAL_FATAL(ema_eventq_pop(&q, &ev), 0);
		CU_ASSERT_EQUAL_FATAL((uintptr_t)ev.arg, ref[i].k);
	}
	CU_ASSERT_EQUAL(ema_eventq_pop(&q, &ev), 1);
	ema_eventq_destroy(&q);
	free(ref);
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

static void test_bench_runs(void)
{
	double r = -1;

	/* no timing assertion: only that it runs and reports something */
	CU_ASSERT_EQUAL(ema_eventq_bench(1000, 100000, &r), EMA_OK);
	CU_ASSERT(r > 0);
	CU_ASSERT_EQUAL(ema_eventq_bench(0, 1000, &r), EMA_OK);
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{ "hand-ordered pushes pop by time then push order", test_hand_order },
		{ "1000 ties fire in push order", test_ties_fifo },
		{ "random operations match a sorted reference", test_random_vs_reference },
		{ "sequence numbers survive pops", test_seq_across_pops },
		{ "benchmark runs", test_bench_runs },
		{ NULL, NULL }
	};

	return ema_test_run("eventq", cases);
}
