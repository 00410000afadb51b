/* test_hw_split.c: how the in-place decode read splits its grid between
 * local pages and lenders (hw/hw_split.c), by hand-computed cases, the
 * invariants over random inputs, and each argument error. Runs without a
 * GPU: the rule is plain C. */
#include "hw_split.h"
#include "test_main.h"

#include <math.h>
#include <stdlib.h>

static uint32_t blocks(const struct ema_hwk_parts *p, int q)
{
	return p->block_first[q + 1] - p->block_first[q];
}

/* The measured point of doc/reference-figures.md: 4 GiB local at
 * 4509 GB/s (0.952 ms) and 280 MiB over the link at ~360 GB/s (0.815 ms):
 * the cap is 132 / 4 = 33 blocks, and the link must carry its bytes in
 * 0.856 of the local time: ceil(33 x 0.856) = ceil(28.25) = 29. */
static void test_measured_point(void)
{
	struct ema_hwk_parts p;
	double t[2] = { 0.952e6, 0.815e6 };

	CU_ASSERT_EQUAL(ema_hwk_split_blocks(&p, 2, t, 1056, 132), 1056);
	CU_ASSERT_EQUAL(p.n, 2);
	CU_ASSERT_EQUAL(blocks(&p, 1), 29);
	CU_ASSERT_EQUAL(blocks(&p, 0), 1027);
	CU_ASSERT_EQUAL(p.block_first[0], 0);
}

/* A small remote part gets its share of the cap, rounded up: 30% of
 * the local time is ceil(33 x 0.3) = ceil(9.9) = 10 blocks; 1% is 1. */
static void test_proportional(void)
{
	struct ema_hwk_parts p;
	double t[2] = { 100.0, 30.0 };
	double small[2] = { 100.0, 1.0 };

	CU_ASSERT_EQUAL(ema_hwk_split_blocks(&p, 2, t, 1056, 132), 1056);
	CU_ASSERT_EQUAL(blocks(&p, 1), 10);
	CU_ASSERT_EQUAL(blocks(&p, 0), 1046);
	CU_ASSERT_EQUAL(ema_hwk_split_blocks(&p, 2, small, 1056, 132), 1056);
	CU_ASSERT_EQUAL(blocks(&p, 1), 1);
}

/* Link-bound (more time than the local part) or no local work at all:
 * the whole cap. */
static void test_link_bound(void)
{
	struct ema_hwk_parts p;
	double bound[2] = { 1.0, 3.0 };
	double no_local[2] = { 0.0, 3.0 };

	CU_ASSERT_EQUAL(ema_hwk_split_blocks(&p, 2, bound, 1056, 132), 1056);
	CU_ASSERT_EQUAL(blocks(&p, 1), 33);
	CU_ASSERT_EQUAL(ema_hwk_split_blocks(&p, 2, no_local, 1056, 132), 1056);
	CU_ASSERT_EQUAL(blocks(&p, 1), 33);
	CU_ASSERT_EQUAL(blocks(&p, 0), 1023);
}

/* Three lenders on a switch, cap 100 / 4 = 25: one at the local time
 * gets it all, one with no time still one block (its part has no chunks
 * and returns at once), one at a quarter ceil(6.25) = 7. */
static void test_three_lenders(void)
{
	struct ema_hwk_parts p;
	double t[4] = { 1.0, 1.0, 0.0, 0.25 };

	CU_ASSERT_EQUAL(ema_hwk_split_blocks(&p, 4, t, 1000, 100), 1000);
	CU_ASSERT_EQUAL(blocks(&p, 1), 25);
	CU_ASSERT_EQUAL(blocks(&p, 2), 1);
	CU_ASSERT_EQUAL(blocks(&p, 3), 7);
	CU_ASSERT_EQUAL(blocks(&p, 0), 967);
}

/* Many lenders on a small grid: the local part keeps at least half. */
static void test_local_keeps_half(void)
{
	struct ema_hwk_parts p;
	double t[17];

	for (int q = 0; q < 17; q++)
		t[q] = q == 0 ? 1.0 : 10.0;
	CU_ASSERT_EQUAL(ema_hwk_split_blocks(&p, 17, t, 64, 132), 64);
	for (int q = 1; q < 17; q++)
		CU_ASSERT_EQUAL(blocks(&p, q), 2);  /* 64 / 2 / 16 */
	CU_ASSERT_EQUAL(blocks(&p, 0), 32);
	/* a grid barely above the parts: one each, the rest local */
	CU_ASSERT_EQUAL(ema_hwk_split_blocks(&p, 17, t, 17, 132), 17);
	for (int q = 0; q < 17; q++)
		CU_ASSERT_EQUAL(blocks(&p, q), 1);
}

static void test_local_only(void)
{
	struct ema_hwk_parts p;
	double t[1] = { 5.0 };

	CU_ASSERT_EQUAL(ema_hwk_split_blocks(&p, 1, t, 1056, 132), 1056);
	CU_ASSERT_EQUAL(p.n, 1);
	CU_ASSERT_EQUAL(blocks(&p, 0), 1056);
}

static void test_errors(void)
{
	struct ema_hwk_parts p;
	double t[3] = { 1.0, 1.0, 1.0 };
	double bad[2] = { 1.0, -1.0 };
	double nan2[2] = { 1.0, NAN };
	double inf2[2] = { INFINITY, 1.0 };

	CU_ASSERT_EQUAL(ema_hwk_split_blocks(NULL, 2, t, 100, 10), 0);
	CU_ASSERT_EQUAL(ema_hwk_split_blocks(&p, 0, t, 100, 10), 0);
	CU_ASSERT_EQUAL(ema_hwk_split_blocks(&p, EMA_HWK_MAX_PARTS + 1, t, 100, 10), 0);
	CU_ASSERT_EQUAL(ema_hwk_split_blocks(&p, 3, t, 2, 10), 0);   /* grid < parts */
	CU_ASSERT_EQUAL(ema_hwk_split_blocks(&p, 2, NULL, 100, 10), 0);
	CU_ASSERT_EQUAL(ema_hwk_split_blocks(&p, 2, bad, 100, 10), 0);
	CU_ASSERT_EQUAL(ema_hwk_split_blocks(&p, 2, nan2, 100, 10), 0);
	CU_ASSERT_EQUAL(ema_hwk_split_blocks(&p, 2, inf2, 100, 10), 0);
}

/* Random inputs: the parts tile the grid in order, each has a block,
 * lenders stay within their cap, the local part keeps at least half,
 * and a lender with more time never gets fewer blocks. */
static void test_random_invariants(void)
{
	unsigned seed = 12345;

	for (int trial = 0; trial < 20000; trial++) {
		struct ema_hwk_parts p;
		double t[EMA_HWK_MAX_PARTS];
		int n = 1 + (int)(rand_r(&seed) % EMA_HWK_MAX_PARTS);
		uint32_t grid = (uint32_t)n + (uint32_t)(rand_r(&seed) % 4000);
		uint32_t sms = 1 + (uint32_t)(rand_r(&seed) % 200);
		uint32_t cap;

		for (int q = 0; q < n; q++)
			t[q] = rand_r(&seed) % 5 == 0 ? 0.0 : (double)(rand_r(&seed) % 100000) / 7.0;
		cap = sms / EMA_HWK_SMS_PER_REMOTE_BLOCK;
		if (n > 1 && cap > grid / 2 / (uint32_t)(n - 1))
			cap = grid / 2 / (uint32_t)(n - 1);
		if (cap < 1)
			cap = 1;
		CU_ASSERT_EQUAL_FATAL(ema_hwk_split_blocks(&p, n, t, grid, sms), grid);
		CU_ASSERT_EQUAL(p.n, n);
		CU_ASSERT_EQUAL(p.block_first[0], 0);
		CU_ASSERT_EQUAL(p.block_first[n], grid);
		for (int q = 0; q < n; q++)
			CU_ASSERT(blocks(&p, q) >= 1);
		for (int q = 1; q < n; q++) {
			CU_ASSERT(blocks(&p, q) <= cap);
			for (int r = 1; r < n; r++)
				if (t[r] > t[q])
					CU_ASSERT(blocks(&p, r) >= blocks(&p, q));
		}
		if (n > 1 && grid >= 2 * (uint32_t)(n - 1))
			CU_ASSERT(blocks(&p, 0) >= grid - grid / 2);
	}
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{ "the measured H200 point: 1027 local + 29 remote", test_measured_point },
		{ "a small remote share gets its share of the cap", test_proportional },
		{ "link-bound or no local work: the whole cap", test_link_bound },
		{ "three lenders, one idle", test_three_lenders },
		{ "the local part keeps at least half", test_local_keeps_half },
		{ "no lender: the whole grid reads local", test_local_only },
		{ "argument errors", test_errors },
		{ "invariants over random inputs", test_random_invariants },
		{ NULL, NULL }
	};

	return ema_test_run("hw_split", cases);
}
