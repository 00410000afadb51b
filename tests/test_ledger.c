/* test_ledger.c: the page ledger: hand-computed counts, the invariant
 * under long random sequences of alloc/free/borrow across GPUs, and every
 * error path. */
#include <stdlib.h>
#include <string.h>

#include "ledger.h"
#include "test_main.h"

static void test_counts_by_hand(void)
{
	struct ema_ledger l;
	struct ema_error err = {0};
	int32_t cap[2] = {10, 8};
	int tg[2] = {0, 1};

	CU_ASSERT_EQUAL_FATAL(ema_ledger_init(&l, 2, cap, 2 << 20, 2, tg, &err), EMA_OK);
	CU_ASSERT_EQUAL(ema_ledger_reserve_weights(&l, 0, 4, &err), EMA_OK);
	CU_ASSERT_EQUAL(ema_ledger_reserve_weights(&l, 1, 4, &err), EMA_OK);
	CU_ASSERT_EQUAL(ema_ledger_free_pages(&l, 0), 6);
	/* weights take the lowest pages */
	for (int p = 0; p < 4; p++)
		CU_ASSERT_EQUAL(ema_ledger_page(&l, 0, p)->state, EMA_PAGE_WEIGHTS);
	CU_ASSERT_EQUAL(ema_ledger_alloc(&l, 0, 0, EMA_PAGE_KV), 4);
	CU_ASSERT_EQUAL(ema_ledger_alloc(&l, 0, 0, EMA_PAGE_KV), 5);
	/* tenant 1 borrows two pages of GPU 0 */
	CU_ASSERT_EQUAL(ema_ledger_alloc(&l, 0, 1, EMA_PAGE_KV), 6);
	CU_ASSERT_EQUAL(ema_ledger_alloc(&l, 0, 1, EMA_PAGE_KV), 7);
	CU_ASSERT_EQUAL(ema_ledger_used_pages(&l, 0), 2);
	CU_ASSERT_EQUAL(ema_ledger_lent_pages(&l, 0), 2);
	CU_ASSERT_EQUAL(ema_ledger_free_pages(&l, 0), 2);
	CU_ASSERT_EQUAL(ema_ledger_borrowed_pages(&l, 1), 2);
	CU_ASSERT_EQUAL(ema_ledger_borrowed_pages(&l, 0), 0);
	CU_ASSERT_EQUAL(ema_ledger_check(&l, &err), EMA_OK);
	ema_ledger_free(&l, 0, 6);
	CU_ASSERT_EQUAL(ema_ledger_lent_pages(&l, 0), 1);
	CU_ASSERT_EQUAL(ema_ledger_borrowed_pages(&l, 1), 1);
	/* a freed page is handed out next */
	CU_ASSERT_EQUAL(ema_ledger_alloc(&l, 0, 0, EMA_PAGE_STAGING), 6);
	CU_ASSERT_EQUAL(ema_ledger_alloc(&l, 0, 0, EMA_PAGE_KV), 8);
	CU_ASSERT_EQUAL(ema_ledger_alloc(&l, 0, 0, EMA_PAGE_KV), 9);
	CU_ASSERT_EQUAL(ema_ledger_alloc(&l, 0, 0, EMA_PAGE_KV), EMA_ERR_NOSPACE);
	/* weights + used + free + lent = capacity */
	CU_ASSERT_EQUAL(4 + ema_ledger_used_pages(&l, 0) + ema_ledger_free_pages(&l, 0) +
			ema_ledger_lent_pages(&l, 0), 10);
	CU_ASSERT_EQUAL(ema_ledger_check(&l, &err), EMA_OK);
	ema_ledger_destroy(&l);
}

static uint64_t rng_state = 12345;
static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state % n);
}

struct held { int gpu; int32_t page; int holder; };

/* Random alloc/borrow/free across 4 GPUs, 3 tenants (GPU 3 is a pure
 * lender); after each step the counters match a recount, and at the end
 * freeing everything restores every GPU to weights + free = capacity. */
static void test_random_sequences(void)
{
	struct ema_ledger l;
	struct ema_error err = {0};
	int32_t cap[4] = {300, 200, 257, 100};
	int tg[3] = {0, 1, 2};
	struct held *h = malloc(2000 * sizeof *h);
	int n = 0;

	CU_ASSERT_EQUAL_FATAL(ema_ledger_init(&l, 4, cap, 1 << 21, 3, tg, &err), EMA_OK);
	for (int g = 0; g < 3; g++)
		CU_ASSERT_EQUAL(ema_ledger_reserve_weights(&l, g, 17 + g, &err), EMA_OK);
	for (int step = 0; step < 200000; step++) {
		if (n > 0 && (rnd(100) < 45 || n == 2000)) {
			int i = (int)rnd((uint32_t)n);

			ema_ledger_free(&l, h[i].gpu, h[i].page);
			h[i] = h[--n];
		} else {
			int holder = (int)rnd(3);
			int gpu = rnd(4) == 0 ? (int)rnd(4) : holder;
			int32_t p = ema_ledger_alloc(&l, gpu, holder, rnd(8) ? EMA_PAGE_KV : EMA_PAGE_STAGING);

			if (p >= 0) {
				CU_ASSERT(ema_ledger_page(&l, gpu, p)->holder == holder);
				h[n].gpu = gpu;
				h[n].page = p;
				h[n].holder = holder;
				n++;
			} else {
				CU_ASSERT_EQUAL(p, EMA_ERR_NOSPACE);
				CU_ASSERT_EQUAL(ema_ledger_free_pages(&l, gpu), 0);
			}
		}
		if (step % 997 == 0) {
			int rc = ema_ledger_check(&l, &err);

			CU_ASSERT_EQUAL(rc, EMA_OK);
			if (rc != EMA_OK) {
				fprintf(stderr, "%s\n", err.msg);
				break;
			}
			for (int g = 0; g < 4; g++)
				CU_ASSERT_EQUAL(l.gpu[g].count[EMA_PAGE_WEIGHTS] + ema_ledger_used_pages(&l, g) +
						ema_ledger_free_pages(&l, g) + ema_ledger_lent_pages(&l, g),
						cap[g]);
		}
	}
	while (n > 0) {
		n--;
		ema_ledger_free(&l, h[n].gpu, h[n].page);
	}
	CU_ASSERT_EQUAL(ema_ledger_check(&l, &err), EMA_OK);
	for (int g = 0; g < 4; g++) {
		CU_ASSERT_EQUAL(ema_ledger_free_pages(&l, g) + l.gpu[g].count[EMA_PAGE_WEIGHTS], cap[g]);
		CU_ASSERT_EQUAL(ema_ledger_lent_pages(&l, g), 0);
	}
	for (int t = 0; t < 3; t++)
		CU_ASSERT_EQUAL(ema_ledger_borrowed_pages(&l, t), 0);
	free(h);
	ema_ledger_destroy(&l);
}

/* alloc_n and free_n are n single calls: two ledgers, one driven page by
 * page and one by the batch calls, hand out the same pages and end with
 * the same stacks and counts, own pages and lent ones alike. */
static void test_batches(void)
{
	struct ema_ledger a, b;
	struct ema_error err = {0};
	int32_t cap[2] = {64, 64};
	int tg[2] = {0, 1};
	int32_t pa[40], pb[40];

	CU_ASSERT_EQUAL_FATAL(ema_ledger_init(&a, 2, cap, 4096, 2, tg, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(ema_ledger_init(&b, 2, cap, 4096, 2, tg, &err), EMA_OK);
	for (int round = 0; round < 3; round++) {
		int holder = round == 1 ? 1 : 0; /* round 1: tenant 1 borrows on GPU 0 */
		int32_t n = 13 + 7 * round;

		for (int32_t i = 0; i < n; i++)
			pa[i] = ema_ledger_alloc(&a, 0, holder, EMA_PAGE_KV);
		CU_ASSERT_EQUAL(ema_ledger_alloc_n(&b, 0, holder, EMA_PAGE_KV, n, pb), EMA_OK);
		CU_ASSERT(memcmp(pa, pb, (size_t)n * sizeof pa[0]) == 0);
		CU_ASSERT_EQUAL(ema_ledger_lent_pages(&b, 0), ema_ledger_lent_pages(&a, 0));
		CU_ASSERT_EQUAL(ema_ledger_borrowed_pages(&b, 1), ema_ledger_borrowed_pages(&a, 1));
		/* GPU 0 lends (to tenant 1) only in round 1 */
		CU_ASSERT_EQUAL(ema_ledger_lending_home(&a)->w[0], holder == 1 ? 1u : 0u);
		CU_ASSERT_EQUAL(ema_ledger_lending_home(&b)->w[0], holder == 1 ? 1u : 0u);
		/* give back every other one, then the rest */
		for (int32_t i = 0; i < n; i += 2)
			ema_ledger_free(&a, 0, pa[i]);
		for (int32_t i = 1; i < n; i += 2)
			ema_ledger_free(&a, 0, pa[i]);
		{
			int32_t order[40], k = 0;

			for (int32_t i = 0; i < n; i += 2)
				order[k++] = pb[i];
			for (int32_t i = 1; i < n; i += 2)
				order[k++] = pb[i];
			ema_ledger_free_n(&b, 0, order, k);
		}
		CU_ASSERT_EQUAL(ema_ledger_free_pages(&b, 0), ema_ledger_free_pages(&a, 0));
		CU_ASSERT(memcmp(a.gpu[0].free_stack, b.gpu[0].free_stack, 64 * sizeof(int32_t)) == 0);
		CU_ASSERT(memcmp(a.gpu[0].count, b.gpu[0].count, sizeof a.gpu[0].count) == 0);
		CU_ASSERT_EQUAL(ema_ledger_lent_pages(&b, 0), 0);
		CU_ASSERT(ema_gpuset_empty(ema_ledger_lending_home(&a)));
		CU_ASSERT(ema_gpuset_empty(ema_ledger_lending_home(&b)));
		CU_ASSERT_EQUAL(ema_ledger_check(&b, &err), EMA_OK);
	}
	/* more than are free: nothing taken */
	CU_ASSERT_EQUAL(ema_ledger_alloc_n(&b, 1, 1, EMA_PAGE_KV, 65, pb), EMA_ERR_NOSPACE);
	CU_ASSERT_EQUAL(ema_ledger_free_pages(&b, 1), 64);
	ema_ledger_destroy(&a);
	ema_ledger_destroy(&b);
}

/* alloc_home_kv and free_home_kv are alloc_n and free_n of the home
 * tenant's KV, through the engine's page records (struct ema_kv_page):
 * two ledgers, random sizes and orders, the same pages, stacks and counts;
 * a GPU without a tenant, or too few free pages, gives nothing. */
static void test_home_kv(void)
{
	struct ema_kv_page rb[64];
	struct ema_ledger a, b;
	struct ema_error err = {0};
	int32_t cap[3] = {64, 64, 16};
	int tg[2] = {0, 1};
	int32_t pa[64], held = 0;
	unsigned seed = 7;

	CU_ASSERT_EQUAL_FATAL(ema_ledger_init(&a, 3, cap, 4096, 2, tg, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(ema_ledger_init(&b, 3, cap, 4096, 2, tg, &err), EMA_OK);
	for (int round = 0; round < 2000; round++) {
		seed = seed * 1103515245u + 12345u;
		if ((seed >> 16) % 2 == 0 || held == 0) {
			int32_t n = (int32_t)((seed >> 8) % 9);

			if (ema_ledger_free_pages(&a, 1) < n) {
				CU_ASSERT_EQUAL(ema_ledger_alloc_home_kv(&b, 1, n, &rb[held]), EMA_ERR_NOSPACE);
				continue;
			}
			CU_ASSERT_EQUAL(ema_ledger_alloc_n(&a, 1, 1, EMA_PAGE_KV, n, pa + held), EMA_OK);
			CU_ASSERT_EQUAL(ema_ledger_alloc_home_kv(&b, 1, n, &rb[held]),
					EMA_OK);
			for (int32_t i = held; i < held + n; i++) {
				CU_ASSERT_EQUAL(rb[i].page, pa[i]);
				CU_ASSERT_EQUAL(rb[i].gpu, 1);
			}
			held += n;
		} else {
			/* the last k taken go back, the newest first */
			int32_t k = 1 + (int32_t)((seed >> 8) % (uint32_t)held), from = held - k;
			int32_t order[64];

			for (int32_t i = 0; i < k; i++) {
				order[i] = pa[held - 1 - i];
				rb[from + i].page = pa[held - 1 - i];
				rb[from + i].gpu = 1;
			}
			ema_ledger_free_n(&a, 1, order, k);
			ema_ledger_free_home_kv(&b, 1, &rb[from], k);
			held = from;
		}
		CU_ASSERT_EQUAL(ema_ledger_free_pages(&b, 1), ema_ledger_free_pages(&a, 1));
		CU_ASSERT(memcmp(a.gpu[1].free_stack, b.gpu[1].free_stack, 64 * sizeof(int32_t)) == 0);
		CU_ASSERT(memcmp(a.gpu[1].count, b.gpu[1].count, sizeof a.gpu[1].count) == 0);
		CU_ASSERT(memcmp(a.gpu[1].pages, b.gpu[1].pages, 64 * sizeof a.gpu[1].pages[0]) == 0);
	}
	CU_ASSERT_EQUAL(ema_ledger_check(&b, &err), EMA_OK);
	CU_ASSERT_EQUAL(ema_ledger_lent_pages(&b, 1), 0);
	/* GPU 2 has no tenant: no home KV there */
	CU_ASSERT_EQUAL(ema_ledger_alloc_home_kv(&b, 2, 1, &rb[0]), EMA_ERR_NOSPACE);
	CU_ASSERT_EQUAL(ema_ledger_free_pages(&b, 2), 16);
	CU_ASSERT_EQUAL(ema_ledger_alloc_home_kv(&b, 0, -1, &rb[0]), EMA_ERR_NOSPACE);
	ema_ledger_destroy(&a);
	ema_ledger_destroy(&b);
}

/* Pages held by count, by hand: GPU of 8 pages, 2 of weights. */
static void test_counted_by_hand(void)
{
	struct ema_ledger l;
	struct ema_error err = {0};
	struct ema_kv_page kp[4];
	int32_t cap[2] = {8, 8};
	int tg[1] = {0};

	CU_ASSERT_EQUAL_FATAL(ema_ledger_init(&l, 2, cap, 4096, 1, tg, &err), EMA_OK);
	CU_ASSERT_EQUAL(ema_ledger_reserve_weights(&l, 0, 2, &err), EMA_OK);
	/* stack 7 6 5 4 3 2: pages 2, 3, 4 are the next three */
	CU_ASSERT_EQUAL(ema_ledger_alloc_counted(&l, 0, 3), EMA_OK);
	CU_ASSERT_EQUAL(ema_ledger_free_pages(&l, 0), 3);
	CU_ASSERT_EQUAL(ema_ledger_counted_pages(&l, 0), 3);
	CU_ASSERT_EQUAL(ema_ledger_used_pages(&l, 0), 3);
	CU_ASSERT_EQUAL(l.gpu[0].count[EMA_PAGE_KV], 3);
	CU_ASSERT_EQUAL(ema_ledger_check(&l, &err), EMA_OK);
	/* an ordinary page is the next free one, 5 (not 2: held by count) */
	CU_ASSERT_EQUAL(ema_ledger_alloc(&l, 0, 0, EMA_PAGE_STAGING), 5);
	CU_ASSERT_EQUAL(ema_ledger_check(&l, &err), EMA_OK);
	/* numbers for one: the last counted, 3 (2 moved down in place of 5) */
	CU_ASSERT_EQUAL(ema_ledger_number_counted(&l, 0, 1, kp), EMA_OK);
	CU_ASSERT_EQUAL(kp[0].gpu, 0);
	CU_ASSERT_EQUAL(kp[0].page, 3);
	CU_ASSERT_EQUAL(ema_ledger_page(&l, 0, 3)->state, EMA_PAGE_KV);
	CU_ASSERT_EQUAL(ema_ledger_page(&l, 0, 3)->holder, 0);
	CU_ASSERT_EQUAL(ema_ledger_counted_pages(&l, 0), 2);
	CU_ASSERT_EQUAL(ema_ledger_used_pages(&l, 0), 4);
	CU_ASSERT_EQUAL(ema_ledger_check(&l, &err), EMA_OK);
	/* 5 back on top of the free pages; 2 and 4 still held by count */
	ema_ledger_free(&l, 0, 5);
	CU_ASSERT_EQUAL(ema_ledger_free_pages(&l, 0), 3);
	CU_ASSERT_EQUAL(ema_ledger_check(&l, &err), EMA_OK);
	CU_ASSERT_EQUAL(ema_ledger_free_counted(&l, 0, 3), EMA_ERR_NOSPACE);
	CU_ASSERT_EQUAL(ema_ledger_free_counted(&l, 0, 2), EMA_OK);
	CU_ASSERT_EQUAL(ema_ledger_free_pages(&l, 0), 5);
	CU_ASSERT_EQUAL(ema_ledger_check(&l, &err), EMA_OK);
	/* the counted pages just given back are handed out first */
	{
		int32_t a = ema_ledger_alloc(&l, 0, 0, EMA_PAGE_KV);
		int32_t b = ema_ledger_alloc(&l, 0, 0, EMA_PAGE_KV);

		CU_ASSERT((a == 2 && b == 4) || (a == 4 && b == 2));
	}
	/* errors: too many, none to number, no tenant, a negative count */
	CU_ASSERT_EQUAL(ema_ledger_alloc_counted(&l, 0, 4), EMA_ERR_NOSPACE);
	CU_ASSERT_EQUAL(ema_ledger_alloc_counted(&l, 0, -1), EMA_ERR_NOSPACE);
	CU_ASSERT_EQUAL(ema_ledger_number_counted(&l, 0, 1, kp), EMA_ERR_NOSPACE);
	CU_ASSERT_EQUAL(ema_ledger_alloc_counted(&l, 1, 1), EMA_ERR_NOSPACE);
	CU_ASSERT_EQUAL(ema_ledger_free_pages(&l, 0), 3);
	CU_ASSERT_EQUAL(ema_ledger_check(&l, &err), EMA_OK);
	/* a corrupted count is caught */
	l.gpu[0].n_counted = 1;
	CU_ASSERT_EQUAL(ema_ledger_check(&l, &err), EMA_ERR_INTERNAL);
	l.gpu[1].n_counted = 1;
	l.gpu[0].n_counted = 0;
	CU_ASSERT_EQUAL(ema_ledger_check(&l, &err), EMA_ERR_INTERNAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "held by count"));
	ema_ledger_destroy(&l);
}

/* Pages held by count among every other operation, at random on 3 GPUs
 * (GPU 2 a pure lender): after each operation the recount agrees, no
 * page number is held twice, every numbered page reads as its holder's,
 * and at the end everything given back restores every GPU. */
static void test_counted_random(void)
{
	struct ema_ledger l;
	struct ema_error err = {0};
	int32_t cap[3] = {120, 90, 60};
	int tg[2] = {0, 1};
	struct held { int gpu; int32_t page; int holder; } *h = malloc(400 * sizeof *h);
	int32_t counted[2] = {0, 0};
	int n = 0, bad = 0;
	unsigned seed = 11;

	CU_ASSERT_EQUAL_FATAL(ema_ledger_init(&l, 3, cap, 4096, 2, tg, &err), EMA_OK);
	CU_ASSERT_EQUAL(ema_ledger_reserve_weights(&l, 0, 10, &err), EMA_OK);
	CU_ASSERT_EQUAL(ema_ledger_reserve_weights(&l, 1, 7, &err), EMA_OK);
	for (int step = 0; step < 20000; step++) {
		int op, g, t;
		int32_t k;

		seed = seed * 1103515245u + 12345u;
		op = (int)((seed >> 16) % 9);
		t = (int)((seed >> 8) % 2);
		g = t;
		k = 1 + (int32_t)((seed >> 4) % 6);
		if (op == 0 && n + k < 400) {          /* counted pages */
			int32_t free_before = ema_ledger_free_pages(&l, g);
			int rc = ema_ledger_alloc_counted(&l, g, k);

			bad += rc != (free_before >= k ? EMA_OK : EMA_ERR_NOSPACE);
			if (rc == EMA_OK)
				counted[g] += k;
		} else if (op == 1 && counted[g] > 0) { /* some back */
			k = k > counted[g] ? counted[g] : k;
			bad += ema_ledger_free_counted(&l, g, k) != EMA_OK;
			counted[g] -= k;
		} else if (op == 2 && counted[g] > 0 && n + k < 400) { /* numbered */
			struct ema_kv_page kp[6];

			k = k > counted[g] ? counted[g] : k;
			bad += ema_ledger_number_counted(&l, g, k, kp) != EMA_OK;
			for (int32_t i = 0; i < k; i++) {
				h[n].gpu = kp[i].gpu;
				h[n].page = kp[i].page;
				h[n++].holder = t;
			}
			counted[g] -= k;
		} else if ((op == 3 || op == 4) && n + k < 400) { /* ordinary pages */
			int32_t pg[6];
			enum ema_page_state st = (seed >> 20) % 4 ? EMA_PAGE_KV : EMA_PAGE_STAGING;

			if (op == 4) {
				g = (int)((seed >> 12) % 3); /* maybe borrowed */
				if (ema_ledger_alloc_n(&l, g, t, st, k, pg) != EMA_OK)
					k = 0;
			} else {
				for (int32_t i = 0; i < k; i++)
					if ((pg[i] = ema_ledger_alloc(&l, g, t, st)) < 0)
						k = i;
			}
			for (int32_t i = 0; i < k; i++) {
				h[n].gpu = g;
				h[n].page = pg[i];
				h[n++].holder = t;
			}
		} else if (op == 5 && n + k < 400) {   /* home KV with records */
			struct ema_kv_page kp[6];

			if (ema_ledger_alloc_home_kv(&l, g, k, kp) == EMA_OK)
				for (int32_t i = 0; i < k; i++) {
					h[n].gpu = kp[i].gpu;
					h[n].page = kp[i].page;
					h[n++].holder = t;
				}
		} else if (op == 6 && n > 0) {         /* pages of one GPU back at once */
			int32_t pg[6];
			struct ema_kv_page kp[6];
			int m = 0, gpu = h[n - 1].gpu;
			bool home_kv = true;

			/* the newest ones of that GPU, up to k */
			for (int i = n - 1; i >= 0 && m < k; i--)
				if (h[i].gpu == gpu) {
					const struct ema_page *pp = ema_ledger_page(&l, gpu, h[i].page);

					home_kv = home_kv && pp->state == EMA_PAGE_KV &&
						  pp->holder == l.gpu[gpu].home_tenant;
					pg[m] = h[i].page;
					kp[m].gpu = (int16_t)gpu;
					kp[m++].page = h[i].page;
					h[i] = h[--n];
				}
			if (home_kv && (seed >> 24) % 2)
				ema_ledger_free_home_kv(&l, gpu, kp, m);
			else
				ema_ledger_free_n(&l, gpu, pg, m);
		} else if (n > 0) {                    /* an ordinary page back */
			int i = (int)((seed >> 10) % (unsigned)n);

			ema_ledger_free(&l, h[i].gpu, h[i].page);
			h[i] = h[--n];
		}
		if (ema_ledger_check(&l, &err) != EMA_OK) {
			fprintf(stderr, "step %d: %s\n", step, err.msg);
			bad++;
			break;
		}
		for (int i = 0; i < n; i++)
			bad += ema_ledger_page(&l, h[i].gpu, h[i].page)->holder != h[i].holder;
		for (int gg = 0; gg < 2; gg++)
			bad += ema_ledger_counted_pages(&l, gg) != counted[gg];
	}
	CU_ASSERT_EQUAL(bad, 0);
	while (n > 0) {
		n--;
		ema_ledger_free(&l, h[n].gpu, h[n].page);
	}
	for (int g = 0; g < 2; g++)
		CU_ASSERT_EQUAL(ema_ledger_free_counted(&l, g, counted[g]), EMA_OK);
	CU_ASSERT_EQUAL(ema_ledger_check(&l, &err), EMA_OK);
	CU_ASSERT_EQUAL(ema_ledger_free_pages(&l, 0), 110);
	CU_ASSERT_EQUAL(ema_ledger_free_pages(&l, 1), 83);
	CU_ASSERT_EQUAL(ema_ledger_free_pages(&l, 2), 60);
	free(h);
	ema_ledger_destroy(&l);
}

static void test_errors(void)
{
	struct ema_ledger l;
	struct ema_error err = {0};
	int32_t cap[2] = {10, 10};
	int same[2] = {0, 0};
	int tg[2] = {0, 1};

	CU_ASSERT_EQUAL(ema_ledger_init(&l, 0, cap, 4096, 0, tg, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "0 GPUs"));
	CU_ASSERT_EQUAL(ema_ledger_init(&l, 2, cap, 0, 2, tg, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "page size 0"));
	CU_ASSERT_EQUAL(ema_ledger_init(&l, 2, cap, 4096, 3, tg, &err), EMA_ERR_INPUT);
	CU_ASSERT_EQUAL(ema_ledger_init(&l, 2, cap, 4096, 2, same, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "distinct GPU"));
	CU_ASSERT_EQUAL_FATAL(ema_ledger_init(&l, 2, cap, 4096, 2, tg, &err), EMA_OK);
	CU_ASSERT_EQUAL(ema_ledger_reserve_weights(&l, 0, 11, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "do not fit"));
	CU_ASSERT_EQUAL(ema_ledger_alloc(&l, 0, 0, EMA_PAGE_KV), 0);
	CU_ASSERT_EQUAL(ema_ledger_reserve_weights(&l, 0, 2, &err), EMA_ERR_INTERNAL);
	/* a corrupted counter is caught by the check */
	l.gpu[1].lent = 3;
	CU_ASSERT_EQUAL(ema_ledger_check(&l, &err), EMA_ERR_INTERNAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "lent"));
	l.gpu[1].lent = 0;
	l.borrowed[0][1] = 1;
	CU_ASSERT_EQUAL(ema_ledger_check(&l, &err), EMA_ERR_INTERNAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "borrowed"));
	ema_ledger_destroy(&l);
}

/* The GPU set (gpuset.h) against a plain array of flags, over all
 * EMA_MAX_GPUS numbers and both words: members, ascending iteration,
 * first and next past each word's end. */
static void test_gpuset(void)
{
	struct ema_gpuset s, o;
	bool ref[EMA_MAX_GPUS] = { false };
	int seen, want;

	CU_ASSERT(EMA_MAX_GPUS >= 72);
	ema_gpuset_zero(&s);
	CU_ASSERT(ema_gpuset_empty(&s));
	CU_ASSERT_EQUAL(ema_gpuset_first(&s), -1);
	CU_ASSERT_EQUAL(ema_gpuset_count(&s), 0);
	rng_state = 7;
	for (int k = 0; k < 5000; k++) {
		int g = (int)rnd(EMA_MAX_GPUS);

		if (rnd(3) != 0) {
			ema_gpuset_set(&s, g);
			ref[g] = true;
		} else {
			ema_gpuset_clear(&s, g);
			ref[g] = false;
		}
		if (k % 97 != 0)
			continue;
		seen = 0;
		want = 0;
		for (int h = 0; h < EMA_MAX_GPUS; h++) {
			CU_ASSERT_EQUAL(ema_gpuset_test(&s, h), ref[h]);
			want += ref[h];
		}
		{
			int prev = -1;

			EMA_GPUSET_FOREACH(h, &s) {
				CU_ASSERT(h > prev && ref[h]);
				prev = h;
				seen++;
			}
		}
		CU_ASSERT_EQUAL(seen, want);
		CU_ASSERT_EQUAL(ema_gpuset_count(&s), want);
		CU_ASSERT_EQUAL(ema_gpuset_empty(&s), want == 0);
	}
	/* by hand: 0, 63, 64 and 71, the edges of the two words */
	ema_gpuset_zero(&s);
	ema_gpuset_set(&s, 71);
	CU_ASSERT_EQUAL(ema_gpuset_first(&s), 71);
	ema_gpuset_set(&s, 64);
	ema_gpuset_set(&s, 63);
	ema_gpuset_set(&s, 0);
	CU_ASSERT_EQUAL(ema_gpuset_first(&s), 0);
	CU_ASSERT_EQUAL(ema_gpuset_next(&s, 1), 63);
	CU_ASSERT_EQUAL(ema_gpuset_next(&s, 64), 64);
	CU_ASSERT_EQUAL(ema_gpuset_next(&s, 65), 71);
	CU_ASSERT_EQUAL(ema_gpuset_next(&s, 72), -1);
	CU_ASSERT_EQUAL(ema_gpuset_next(&s, 1000), -1);
	CU_ASSERT_EQUAL(s.w[0], (UINT64_C(1) << 63) | 1u);
	CU_ASSERT_EQUAL(s.w[1], (UINT64_C(1) << 7) | 1u);
	ema_gpuset_zero(&o);
	ema_gpuset_set(&o, 5);
	ema_gpuset_or(&s, &o);
	CU_ASSERT_EQUAL(ema_gpuset_count(&s), 5);
	ema_gpuset_clear(&s, 0);
	ema_gpuset_clear(&s, 63);
	ema_gpuset_clear(&s, 5);
	CU_ASSERT_EQUAL(ema_gpuset_first(&s), 64);
	CU_ASSERT_FALSE(ema_gpuset_empty(&s));
}

/* 72 GPUs (a GB200 NVL72): tenants on the last GPUs borrow from the
 * first and from one another; the lenders with a tenant are marked past
 * bit 63 too, and 73 GPUs are refused. */
static void test_72_gpus(void)
{
	struct ema_ledger l;
	struct ema_error err = { 0, "" };
	int32_t cap[EMA_MAX_GPUS];
	int tg[72];
	int32_t p70, p0;

	for (int g = 0; g < 72; g++) {
		cap[g] = 16;
		tg[g] = g;
	}
	CU_ASSERT_EQUAL(ema_ledger_init(&l, 73, cap, 4096, 72, tg, &err), EMA_ERR_INPUT);
	CU_ASSERT_EQUAL_FATAL(ema_ledger_init(&l, 72, cap, 4096, 72, tg, &err), EMA_OK);
	p70 = ema_ledger_alloc(&l, 70, 71, EMA_PAGE_KV);  /* tenant 71 borrows from GPU 70 */
	p0 = ema_ledger_alloc(&l, 0, 71, EMA_PAGE_KV);    /* and from GPU 0 */
	CU_ASSERT(p70 >= 0 && p0 >= 0);
	CU_ASSERT(ema_gpuset_test(ema_ledger_lending_home(&l), 70));
	CU_ASSERT(ema_gpuset_test(ema_ledger_lending_home(&l), 0));
	CU_ASSERT_EQUAL(ema_gpuset_count(ema_ledger_lending_home(&l)), 2);
	CU_ASSERT_EQUAL(ema_ledger_borrowed_pages(&l, 71), 2);
	/* the borrowing tenants: 71 alone */
	CU_ASSERT_EQUAL(ema_gpuset_count(ema_ledger_borrowing(&l)), 1);
	CU_ASSERT_EQUAL(ema_gpuset_first(ema_ledger_borrowing(&l)), 71);
	CU_ASSERT_EQUAL(ema_ledger_check(&l, &err), EMA_OK);
	ema_ledger_free(&l, 70, p70);
	CU_ASSERT_FALSE(ema_gpuset_test(ema_ledger_lending_home(&l), 70));
	CU_ASSERT_EQUAL(ema_gpuset_first(ema_ledger_lending_home(&l)), 0);
	CU_ASSERT(ema_gpuset_test(ema_ledger_borrowing(&l), 71));
	ema_ledger_free(&l, 0, p0);
	CU_ASSERT(ema_gpuset_empty(ema_ledger_lending_home(&l)));
	CU_ASSERT(ema_gpuset_empty(ema_ledger_borrowing(&l)));
	/* a mark out of step with the counts is an internal error */
	ema_gpuset_set(&l.borrowing, 3);
	CU_ASSERT_EQUAL(ema_ledger_check(&l, &err), EMA_ERR_INTERNAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "tenant 3 is marked as a borrower, with 0 pages"));
	ema_gpuset_clear(&l.borrowing, 3);
	CU_ASSERT_EQUAL(ema_ledger_check(&l, &err), EMA_OK);
	ema_ledger_destroy(&l);
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{"counts by hand", test_counts_by_hand},
		{"random sequences keep the invariant", test_random_sequences},
		{"alloc_n and free_n are n single calls", test_batches},
		{"alloc_home_kv and free_home_kv are alloc_n and free_n", test_home_kv},
		{"pages held by count, by hand", test_counted_by_hand},
		{"pages held by count among random operations", test_counted_random},
		{"errors", test_errors},
		{"the GPU set against an array of flags", test_gpuset},
		{"72 GPUs: lenders and borrowers past bit 63", test_72_gpus},
		{NULL, NULL},
	};
	return ema_test_run("ledger", cases);
}
