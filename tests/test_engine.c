/* test_engine.c: the serving model on hand-computed cases, over a minimal
 * platform whose iterations take exactly the cost model's time (rounded to
 * the ns) and whose transfers take a fixed time: one request alone, chunked
 * prefill, preemption, FCFS order, determinism, and no page left behind. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "timing.h"
#include "work.h"
#include "engine_priv.h"
#include "eventq.h"
#include "policy.h"
#include "test_main.h"

#include "mock_platform.h"

/* page_lists: every page with its number in every iteration, as the
 * hardware backend asks (and so none held by count). */
static int run_engine_lists(struct ema_engine *e, const struct ema_config *cfg,
			    const char *policy, struct ema_workload *w, bool page_lists)
{
	struct ema_error err = {0};
	struct mock *m = mock_new(cfg);
	int rc = ema_engine_create(e, cfg, ema_policy_find(policy), &m->base, w, &err);

	if (rc == EMA_OK) {
		ema_engine_set_page_lists(e, page_lists);
		rc = ema_engine_run(e, &err);
	}
	if (rc != EMA_OK)
		fprintf(stderr, "engine: %s\n", err.msg);
	e->platform = NULL;
	mock_destroy(&m->base);
	return rc;
}

static int run_engine(struct ema_engine *e, const struct ema_config *cfg, const char *policy,
		      struct ema_workload *w)
{
	return run_engine_lists(e, cfg, policy, w, false);
}

/* prefill 100 tokens: 2e8 linear + 256 x 5050 attention = 201,292,800
 * FLOP -> 201,292.8 ns (compute-bound; memory is 2,051,200 B and the 100
 * tokens' KV written, 25,600 B -> 2,077 ns). Decode at context c:
 * memory-bound, (2e6 + 256 c read + 256 written + 512) B -> 2000.768 +
 * 0.256 c ns. */
static void test_one_request_by_hand(void)
{
	struct ema_config cfg;
	struct ema_engine e;
	struct ema_request_spec r[1] = {spec(0, 100, 4)};
	struct ema_workload w = {r, 1, 1};
	int64_t decode_total = 0;

	tiny_config(&cfg, 1, 64);
	CU_ASSERT_EQUAL_FATAL(run_engine(&e, &cfg, "static", &w), EMA_OK);
	CU_ASSERT_EQUAL(e.tenants[0].reqs[0].first_token_ns, 201293);
	for (int c = 100; c < 103; c++)
		decode_total += llround(2000.768 + 0.256 * c);
	CU_ASSERT_EQUAL(decode_total, 2026 + 2027 + 2027);
	CU_ASSERT_EQUAL(e.tenants[0].reqs[0].finish_ns, 201293 + decode_total);
	CU_ASSERT_EQUAL(e.tenants[0].stats.iterations, 4);
	CU_ASSERT_EQUAL(e.tenants[0].stats.preemptions, 0);
	/* every KV page is back */
	CU_ASSERT_EQUAL(ema_ledger_free_pages(&e.ledger, 0) + e.weight_pages, e.ledger.gpu[0].capacity);
	CU_ASSERT_EQUAL(ema_ledger_check(&e.ledger, NULL), EMA_OK);
	ema_engine_destroy(&e);
}

/* Chunked prefill splits a 1000-token prompt into 4 chunks of <= 256. */
static void test_chunked_prefill(void)
{
	struct ema_config cfg;
	struct ema_engine e;
	struct ema_request_spec r[1] = {spec(0, 1000, 2)};
	struct ema_workload w = {r, 1, 1};
	int64_t expect = 0;

	tiny_config(&cfg, 1, 64);
	cfg.serving.chunked_prefill = true;
	cfg.serving.max_batch_tokens = 256;
	CU_ASSERT_EQUAL_FATAL(run_engine(&e, &cfg, "static", &w), EMA_OK);
	for (int done = 0; done < 1000; done += 256) {
		int chunk = 1000 - done < 256 ? 1000 - done : 256;
		double fl = 2e6 * chunk + 256.0 * (chunk * (double)done + chunk * (chunk + 1.0) / 2);
		double mem = (2e6 + 256.0 * done + 512.0 * chunk) / 1000;

		expect += llround(fmax(fl / 1000, mem));
	}
	CU_ASSERT_EQUAL(e.tenants[0].reqs[0].first_token_ns, expect);
	CU_ASSERT_EQUAL(e.tenants[0].stats.iterations, 5);
	ema_engine_destroy(&e);
}

/* Two long requests whose KV cannot both fit: the newer is preempted,
 * recomputed, and both still finish; pages all come back. */
static void test_preemption(void)
{
	struct ema_config cfg;
	struct ema_engine e;
	struct ema_request_spec r[2] = {spec(0, 64, 200), spec(0, 64, 200)};
	struct ema_workload w = {r, 2, 2};

	/* 2e6 B of weights = 489 pages of 4 KiB; 20 KV pages = 320 tokens */
	tiny_config(&cfg, 1, (489 + 20) * 4.0 / 1024);
	CU_ASSERT_EQUAL_FATAL(run_engine(&e, &cfg, "static", &w), EMA_OK);
	CU_ASSERT_EQUAL(e.tenants[0].kv_capacity_pages, 20);
	CU_ASSERT(e.tenants[0].stats.preemptions >= 1);
	CU_ASSERT(e.tenants[0].stats.recomputed_tokens > 0);
	CU_ASSERT(e.tenants[0].reqs[1].preemptions >= 1);
	CU_ASSERT_EQUAL(e.tenants[0].reqs[0].preemptions, 0);
	CU_ASSERT(e.tenants[0].reqs[0].finish_ns > 0);
	CU_ASSERT(e.tenants[0].reqs[1].finish_ns > e.tenants[0].reqs[0].finish_ns);
	CU_ASSERT(e.tenants[0].stats.kv_peak_pages <= 20);
	CU_ASSERT_EQUAL(ema_ledger_free_pages(&e.ledger, 0), 20);
	ema_engine_destroy(&e);
}

/* host_swap swaps the victim instead: no recomputed tokens. */
static void test_swap_preemption(void)
{
	struct ema_config cfg;
	struct ema_engine e;
	struct ema_request_spec r[2] = {spec(0, 64, 200), spec(0, 64, 200)};
	struct ema_workload w = {r, 2, 2};

	tiny_config(&cfg, 1, (489 + 20) * 4.0 / 1024);
	CU_ASSERT_EQUAL_FATAL(run_engine(&e, &cfg, "host_swap", &w), EMA_OK);
	CU_ASSERT(e.tenants[0].stats.swaps >= 1);
	CU_ASSERT_EQUAL(e.tenants[0].stats.recomputed_tokens, 0);
	CU_ASSERT(e.tenants[0].reqs[1].finish_ns > 0);
	CU_ASSERT_EQUAL(ema_ledger_free_pages(&e.ledger, 0), 20);
	CU_ASSERT_EQUAL(e.host_free[0], e.host_capacity);
	ema_engine_destroy(&e);
}

/* A policy that swaps like host_swap but lets one request hold twice its
 * GPU, as staged ema does where its link budgets grow with what it has
 * borrowed (and shrink again once it gives the pages back). */
static enum ema_preempt_mode swap_always(const struct ema_policy_ctx *c, void *state,
					 const struct ema_request *r)
{
	(void)c;
	(void)state;
	(void)r;
	return EMA_PREEMPT_SWAP;
}

static int32_t twice_the_gpu(const struct ema_policy_ctx *c, void *state, int tenant)
{
	(void)state;
	return 2 * c->kv_capacity_pages[tenant];
}

static const struct ema_policy_ops swap_twice = {
	.name = "swap_twice",
	.summary = "test: host_swap, a request may hold twice its GPU",
	.preempt_mode = swap_always,
	.max_request_pages = twice_the_gpu,
};

static int32_t half_the_gpu(const struct ema_policy_ctx *c, void *state, int tenant)
{
	(void)state;
	return c->kv_capacity_pages[tenant] / 2;
}

static const struct ema_policy_ops admit_half = {
	.name = "admit_half",
	.summary = "test: static, a request may grow to twice its GPU, admitted with half",
	.max_request_pages = twice_the_gpu,
	.max_admit_pages = half_the_gpu,
};

/* A request admitted within the bound and recomputed once it has
 * generated past it is dropped then, not left at the front of its queue
 * for ever (engine.c, ema_engine_preempt_recompute). 20 KV pages of 16
 * tokens, admitted with at most 10, a request of 64 prompt + 400 output
 * tokens (29 pages, within the 40 it may grow to): its 321st token needs
 * a 21st page, it is its own victim, recomputed, and its 321 tokens (21
 * pages) are more than any admission takes: dropped_recomputed, 21
 * pages, where the run used to stop with "no progress possible"; the
 * request behind it runs. */
static void test_recomputed_past_admission(void)
{
	struct ema_config cfg;
	struct ema_engine e;
	struct ema_error err = {0};
	struct ema_request_spec r[2] = {spec(0, 64, 400), spec(1000000, 64, 8)};
	struct ema_workload w = {r, 2, 2};
	struct ema_request_record rec;
	struct mock *m;
	int rc;

	tiny_config(&cfg, 1, (489 + 20) * 4.0 / 1024);
	cfg.serving.oversize = EMA_OVERSIZE_WAIT;
	m = mock_new(&cfg);
	rc = ema_engine_create(&e, &cfg, &admit_half, &m->base, &w, &err);
	if (rc == EMA_OK)
		rc = ema_engine_run(&e, &err);
	if (rc != EMA_OK)
		fprintf(stderr, "engine: %s\n", err.msg);
	CU_ASSERT_EQUAL_FATAL(rc, EMA_OK);
	CU_ASSERT_EQUAL(e.tenants[0].max_request_pages, 40);
	CU_ASSERT_EQUAL(e.tenants[0].max_admit_pages, 10);
	CU_ASSERT_EQUAL(e.tenants[0].stats.dropped, 1);
	CU_ASSERT_EQUAL(e.tenants[0].stats.dropped_recomputed, 1);
	CU_ASSERT_EQUAL(e.tenants[0].stats.dropped_backoff, 0);
	CU_ASSERT_EQUAL(e.tenants[0].stats.dropped_recomputed_max_pages, 21);
	ema_engine_request(&e, 0, 0, &rec);
	CU_ASSERT(rec.dropped);
	CU_ASSERT_EQUAL(rec.preemptions, 1);
	CU_ASSERT(rec.finish_ns < 0);
	CU_ASSERT(e.tenants[0].reqs[1].finish_ns > 0);
	CU_ASSERT_EQUAL(ema_ledger_free_pages(&e.ledger, 0), 20);
	e.platform = NULL;
	mock_destroy(&m->base);
	ema_engine_destroy(&e);
}

/* The last resort of a stalled run (engine.c, drop_stuck_swapped), by
 * hand. 20 KV pages of 16 tokens, serving.oversize=wait; a request of 64
 * prompt + 400 output tokens (29 pages, within the 40 the policy allows)
 * starts on 4 pages and decodes until its 321st token needs a 21st page.
 * Alone, it is its own victim and is swapped to host; swapped requests
 * come back before admissions, and it never fits again: nothing runs and
 * nothing is pending. It is dropped (dropped_swapped, 21 pages) where the
 * run used to stop with "no progress possible", and the request behind
 * it, arriving meanwhile, runs. */
static void test_stuck_swapped_dropped(void)
{
	struct ema_config cfg;
	struct ema_engine e;
	struct ema_error err = {0};
	struct ema_request_spec r[2] = {spec(0, 64, 400), spec(1000000, 64, 8)};
	struct ema_workload w = {r, 2, 2};
	struct mock *m;
	int rc;

	tiny_config(&cfg, 1, (489 + 20) * 4.0 / 1024);
	cfg.serving.oversize = EMA_OVERSIZE_WAIT;
	m = mock_new(&cfg);
	rc = ema_engine_create(&e, &cfg, &swap_twice, &m->base, &w, &err);
	if (rc == EMA_OK)
		rc = ema_engine_run(&e, &err);
	if (rc != EMA_OK)
		fprintf(stderr, "engine: %s\n", err.msg);
	CU_ASSERT_EQUAL_FATAL(rc, EMA_OK);
	CU_ASSERT_EQUAL(e.tenants[0].kv_capacity_pages, 20);
	CU_ASSERT_EQUAL(e.tenants[0].max_request_pages, 40);
	CU_ASSERT_EQUAL(e.tenants[0].stats.swaps, 1);
	CU_ASSERT_EQUAL(e.tenants[0].reqs[0].state, EMA_REQ_DROPPED);
	CU_ASSERT_EQUAL(e.tenants[0].stats.dropped, 1);
	CU_ASSERT_EQUAL(e.tenants[0].stats.dropped_swapped, 1);
	CU_ASSERT_EQUAL(e.tenants[0].stats.dropped_recomputed, 1);
	CU_ASSERT_EQUAL(e.tenants[0].stats.dropped_swapped_max_pages, 21);
	CU_ASSERT(e.tenants[0].reqs[1].finish_ns > 0);
	CU_ASSERT_EQUAL(ema_ledger_free_pages(&e.ledger, 0), 20);
	CU_ASSERT_EQUAL(e.host_free[0], e.host_capacity);
	e.platform = NULL;
	mock_destroy(&m->base);
	ema_engine_destroy(&e);
}

/* Requests of equal size arriving in order finish in order (FCFS). */
static void test_fcfs(void)
{
	struct ema_config cfg;
	struct ema_engine e;
	struct ema_request_spec r[6];
	struct ema_workload w = {r, 6, 6};

	for (int i = 0; i < 6; i++)
		r[i] = spec(i * 1000, 200, 30);
	tiny_config(&cfg, 1, (489 + 40) * 4.0 / 1024);
	CU_ASSERT_EQUAL_FATAL(run_engine(&e, &cfg, "static", &w), EMA_OK);
	for (int i = 1; i < 6; i++)
		CU_ASSERT(e.tenants[0].reqs[i].first_token_ns >= e.tenants[0].reqs[i - 1].first_token_ns);
	ema_engine_destroy(&e);
}

static uint64_t xs = 99;
static uint32_t rnd(uint32_t n)
{
	xs ^= xs << 13; xs ^= xs >> 7; xs ^= xs << 17;
	return (uint32_t)(xs % n);
}

/* Random loads on 2 tenants under every policy: every request finishes,
 * every page comes back, the ledger invariant holds, and two runs give
 * the same times (determinism). */
static void test_random_all_policies(void)
{
	struct ema_request_spec r0[120], r1[40];
	struct ema_workload w[2] = {{r0, 120, 120}, {r1, 40, 40}};
	int64_t t = 0;

	for (int i = 0; i < 120; i++) {
		t += rnd(20000);
		r0[i] = spec(t, 1 + (int)rnd(400), 1 + (int)rnd(120));
	}
	t = 0;
	for (int i = 0; i < 40; i++) {
		t += rnd(60000);
		r1[i] = spec(t, 1 + (int)rnd(200), 1 + (int)rnd(60));
	}
	for (int p = 0; ema_policy_table[p] != NULL; p++) {
		struct ema_config cfg;
		struct ema_engine a, b;
		const char *name = ema_policy_table[p]->name;

		tiny_config(&cfg, 2, (489 + 60) * 4.0 / 1024);
		cfg.policy.lender_floor = 0.1;
		cfg.policy.lender_reserve = 0.05;
		set_own_knob(&cfg, "ema", "headroom", 0.1);
		cfg.serving.layer_groups = 1;
		/* b keeps every page's number (no page held by count): page
		 * numbers change nothing a run reports */
		CU_ASSERT_EQUAL_FATAL(run_engine(&a, &cfg, name, w), EMA_OK);
		CU_ASSERT_EQUAL_FATAL(run_engine_lists(&b, &cfg, name, w, true), EMA_OK);
		for (int ti = 0; ti < 2; ti++) {
			const struct ema_tenant *ta = &a.tenants[ti], *tb = &b.tenants[ti];

			CU_ASSERT_EQUAL(ta->n_done, ta->n_reqs);
			for (int32_t k = 0; k < ta->n_reqs; k++) {
				CU_ASSERT(ta->reqs[k].finish_ns >= ta->reqs[k].arrival_ns);
				CU_ASSERT_EQUAL(ta->reqs[k].finish_ns, tb->reqs[k].finish_ns);
				CU_ASSERT_EQUAL(ta->reqs[k].first_token_ns, tb->reqs[k].first_token_ns);
				CU_ASSERT_EQUAL(ta->reqs[k].preemptions, tb->reqs[k].preemptions);
			}
			CU_ASSERT_EQUAL(ta->stats.swaps, tb->stats.swaps);
			CU_ASSERT_EQUAL(ta->stats.borrowed_peak_pages, tb->stats.borrowed_peak_pages);
			CU_ASSERT_EQUAL(ta->stats.remote_bytes, tb->stats.remote_bytes);
			CU_ASSERT_EQUAL(ema_ledger_borrowed_pages(&a.ledger, ti), 0);
		}
		CU_ASSERT_EQUAL(a.n_reclaims, b.n_reclaims);
		CU_ASSERT_EQUAL(ema_ledger_counted_pages(&b.ledger, 0), 0);
		CU_ASSERT_EQUAL(ema_ledger_check(&b.ledger, NULL), EMA_OK);
		for (int g = 0; g < 2; g++)
			CU_ASSERT_EQUAL(ema_ledger_free_pages(&a.ledger, g) + a.weight_pages,
					a.ledger.gpu[g].capacity);
		CU_ASSERT_EQUAL(ema_ledger_check(&a.ledger, NULL), EMA_OK);
		if (strcmp(name, "ema") == 0 || strcmp(name, "remote_direct") == 0)
			CU_ASSERT(a.tenants[0].stats.borrowed_peak_pages > 0);
		ema_engine_destroy(&a);
		ema_engine_destroy(&b);
	}
}

/* A request holds its pages on its own GPU by count until something needs
 * their numbers (host_swap's swap-outs: test_swap_preemption's case),
 * the ledger's invariant holding at every point in between (probes on
 * the platform's queue every 50 us), and every page comes back; a run
 * with every page numbered (page lists) gives the same times. */
struct count_probe {
	struct ema_engine *e;
	struct mock *m;
	int32_t most_counted;
	int bad;
};

static void probe_counted(void *arg, int64_t now)
{
	struct count_probe *pr = arg;

	if (ema_ledger_counted_pages(&pr->e->ledger, 0) > pr->most_counted)
		pr->most_counted = ema_ledger_counted_pages(&pr->e->ledger, 0);
	pr->bad += ema_ledger_check(&pr->e->ledger, NULL) != EMA_OK;
	if (now < 20000000)
		ema_eventq_push(&pr->m->q, now + 50000, probe_counted, pr);
}

static void test_counted_pages(void)
{
	struct ema_request_spec r[2] = {spec(0, 64, 200), spec(0, 64, 200)};
	struct ema_workload w = {r, 2, 2};
	struct ema_config cfg;
	struct ema_engine e, lists;
	struct ema_error err = {0};
	struct count_probe pr = {0};
	struct mock *m;

	tiny_config(&cfg, 1, (489 + 20) * 4.0 / 1024);
	m = mock_new(&cfg);
	CU_ASSERT_EQUAL_FATAL(ema_engine_create(&e, &cfg, ema_policy_find("host_swap"), &m->base, &w,
						&err), EMA_OK);
	CU_ASSERT(e.counted_pages);
	pr.e = &e;
	pr.m = m;
	ema_eventq_push(&m->q, 1, probe_counted, &pr);
	CU_ASSERT_EQUAL_FATAL(ema_engine_run(&e, &err), EMA_OK);
	CU_ASSERT(e.tenants[0].stats.swaps >= 1);
	CU_ASSERT(pr.most_counted > 0);
	CU_ASSERT_EQUAL(pr.bad, 0);
	CU_ASSERT_EQUAL(ema_ledger_counted_pages(&e.ledger, 0), 0);
	CU_ASSERT_EQUAL(ema_ledger_free_pages(&e.ledger, 0), 20);
	CU_ASSERT_EQUAL(ema_ledger_check(&e.ledger, NULL), EMA_OK);
	e.platform = NULL;
	mock_destroy(&m->base);
	CU_ASSERT_EQUAL_FATAL(run_engine_lists(&lists, &cfg, "host_swap", &w, true), EMA_OK);
	CU_ASSERT_FALSE(lists.counted_pages);
	for (int k = 0; k < 2; k++)
		CU_ASSERT_EQUAL(e.tenants[0].reqs[k].finish_ns, lists.tenants[0].reqs[k].finish_ns);
	CU_ASSERT_EQUAL(e.tenants[0].stats.swaps, lists.tenants[0].stats.swaps);
	ema_engine_destroy(&e);
	ema_engine_destroy(&lists);
}

/* A request whose whole KV exceeds what it can ever hold is dropped at
 * arrival and counted; the next one runs. 20 KV pages of 16 tokens: a
 * 5000-token prompt needs 313. */
static void test_oversized_request(void)
{
	struct ema_config cfg;
	struct ema_engine e;
	struct ema_request_spec r[2] = {spec(0, 5000, 2), spec(10, 10, 2)};
	struct ema_workload w = {r, 2, 2};

	tiny_config(&cfg, 1, (489 + 20) * 4.0 / 1024);
	CU_ASSERT_EQUAL_FATAL(run_engine(&e, &cfg, "static", &w), EMA_OK);
	CU_ASSERT_EQUAL(e.tenants[0].reqs[0].state, EMA_REQ_DROPPED);
	CU_ASSERT_EQUAL(e.tenants[0].reqs[0].finish_ns, -1);
	CU_ASSERT_EQUAL(e.tenants[0].stats.dropped, 1);
	CU_ASSERT_EQUAL(e.tenants[0].stats.dropped_max_pages, 313);
	CU_ASSERT(e.tenants[0].reqs[1].finish_ns > 0);
	ema_engine_destroy(&e);
}

/* The watermark band: 20 KV pages, watermark 0.1 (2 pages). A request
 * alone needing 18 .. 20 pages (more than capacity - watermark) used to
 * wait for ever; now everything up to 20 pages runs and 21 is dropped,
 * under every policy (whose own limit is max_request_pages). Prompt
 * p x 16 tokens and 1 output token hold exactly p pages; with 33 output
 * tokens the last decode step holds p + 2. */
static void test_watermark_band(void)
{
	for (int pol = 0; ema_policy_table[pol] != NULL; pol++)
		for (int out = 1; out <= 33; out += 32)
			for (int pages = 16; pages <= 22; pages++) {
				struct ema_config cfg;
				struct ema_engine e;
				struct ema_request_spec r[1] = {spec(0, pages * 16 - (out - 1), out)};
				struct ema_workload w = {r, 1, 1};
				const char *name = ema_policy_table[pol]->name;
				int32_t limit;

				tiny_config(&cfg, 1, (489 + 20) * 4.0 / 1024);
				cfg.serving.watermark = 0.1;
				CU_ASSERT_EQUAL_FATAL(run_engine(&e, &cfg, name, &w), EMA_OK);
				limit = e.tenants[0].max_request_pages;
				if (strcmp(name, "ideal") != 0 && strcmp(name, "ideal_kv") != 0)
					CU_ASSERT_EQUAL(limit, 20); /* one GPU: nothing to borrow */
				if (pages <= limit) {
					CU_ASSERT(e.tenants[0].reqs[0].finish_ns > 0);
					CU_ASSERT_EQUAL(e.tenants[0].stats.dropped, 0);
				} else {
					CU_ASSERT_EQUAL(e.tenants[0].reqs[0].state, EMA_REQ_DROPPED);
					CU_ASSERT_EQUAL(e.tenants[0].stats.dropped, 1);
				}
				CU_ASSERT_EQUAL(e.tenants[0].n_done, 1);
				CU_ASSERT_EQUAL(ema_ledger_free_pages(&e.ledger, 0) + e.weight_pages,
						e.ledger.gpu[0].capacity);
				ema_engine_destroy(&e);
			}
}

/* A policy that promises more than it can give: the 5000-token request is
 * not dropped, can never be admitted, and nothing pending can change
 * that. The run stops with an internal error naming the tenant and the
 * request instead of spinning. */
static int32_t liar_max_request_pages(const struct ema_policy_ctx *c, void *state, int tenant)
{
	return INT32_MAX;
}

static void test_no_progress_guard(void)
{
	static const struct ema_policy_ops liar = {
		.name = "liar", .summary = "claims every request fits",
		.max_request_pages = liar_max_request_pages,
	};
	struct ema_config cfg;
	struct ema_engine e;
	struct ema_request_spec r[2] = {spec(0, 10, 2), spec(10, 5000, 2)};
	struct ema_workload w = {r, 2, 2};
	struct ema_error err = {0};
	struct mock *m;
	int rc;

	tiny_config(&cfg, 1, (489 + 20) * 4.0 / 1024);
	cfg.serving.oversize = EMA_OVERSIZE_WAIT; /* (drop would drop it at arrival) */
	m = mock_new(&cfg);
	CU_ASSERT_EQUAL_FATAL(ema_engine_create(&e, &cfg, &liar, &m->base, &w, &err), EMA_OK);
	rc = ema_engine_run(&e, &err);
	CU_ASSERT_EQUAL(rc, EMA_ERR_INTERNAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "no progress possible"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "tenant t0, request 1 waiting"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "needs 313 pages"));
	CU_ASSERT(e.tenants[0].reqs[0].finish_ns > 0);
	e.platform = NULL;
	mock_destroy(&m->base);
	ema_engine_destroy(&e);
}

/* A platform that loses an event (as a clock that wrapped around lost
 * iterations, issue 32): its run ends with an iteration still in
 * flight and nothing left to dispatch. The run must not end as if whole
 * (6 of 10 requests completed, none dropped, exit 0): the end-of-run
 * accounting says which tenant's requests are neither done nor dropped. */
static int lossy_run(struct ema_platform *p, int64_t horizon, struct ema_error *err)
{
	struct mock *m = (struct mock *)p;
	struct ema_event ev;

	(void)horizon;
	(void)err;
	while (ema_eventq_pop(&m->q, &ev) == 0) {
		m->now = ev.time_ns;
		if (++m->events == 6)
			break; /* the rest is lost */
		ev.fn(ev.arg, ev.time_ns);
	}
	while (ema_eventq_pop(&m->q, &ev) == 0)
		;
	return EMA_OK;
}

static void test_accounts_at_the_end(void)
{
	struct ema_config cfg;
	struct ema_engine e;
	struct ema_request_spec r[3] = {spec(0, 10, 4), spec(10, 10, 4), spec(20, 10, 4)};
	struct ema_workload w = {r, 3, 3};
	struct ema_error err = {0};
	struct ema_platform_ops lossy = mock_ops;
	struct mock *m;
	int rc;

	tiny_config(&cfg, 1, 64);
	lossy.run = lossy_run;
	m = mock_new(&cfg);
	m->base.ops = &lossy;
	CU_ASSERT_EQUAL_FATAL(ema_engine_create(&e, &cfg, ema_policy_find("static"), &m->base, &w,
						&err), EMA_OK);
	rc = ema_engine_run(&e, &err);
	CU_ASSERT_EQUAL(rc, EMA_ERR_INTERNAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "tenant t0 ends the run"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "completed, 0 dropped and"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "in a run without a horizon"));
	e.platform = NULL;
	mock_destroy(&m->base);
	ema_engine_destroy(&e);
}

/* A model whose KV of one request is more pages than int32_t counts:
 * pages_for_tokens saturates above every pool (it wrapped to negative
 * counts before), and the request is dropped at arrival as one that
 * never fits. */
static void test_pages_saturate(void)
{
	struct ema_config cfg;
	struct ema_engine e;
	struct ema_request_spec r[2] = {spec(0, 1000000, 4), spec(10, 1, 1)};
	struct ema_workload w = {r, 2, 2};

	tiny_config(&cfg, 1, 64);
	cfg.model.layers = 1024;
	cfg.model.heads = 1024;
	cfg.model.kv_heads = 1024;
	cfg.model.head_dim = 4096;
	cfg.model.bytes_per_param = 8;
	cfg.serving.block_tokens = 4096;
	CU_ASSERT_EQUAL_FATAL(run_engine(&e, &cfg, "static", &w), EMA_OK);
	/* 64 GiB a token (2 x 1024 x 1024 x 4096 x 8 bytes), 2^48 bytes a
	 * block of 4096 tokens, 2^36 pages of 4 KiB a block */
	CU_ASSERT_EQUAL(e.kv_bytes_per_token, (uint64_t)1 << 36);
	CU_ASSERT_EQUAL(ema_engine_pages_for_tokens(&e, 1), (int32_t)1 << 29);
	CU_ASSERT_EQUAL(ema_engine_pages_for_tokens(&e, 1000000), (int32_t)1 << 29);
	CU_ASSERT_EQUAL(ema_engine_pages_for_tokens(&e, 0), 0);
	CU_ASSERT_EQUAL(e.tenants[0].stats.dropped, 2);
	ema_engine_destroy(&e);
}

/* The timeline records a GPU only where its figures change, on the 0.5 s
 * grid, plus the grid point before a change: two requests 100 s apart
 * cost a handful of rows, not 200 per GPU. */
static void test_timeline_changes_only(void)
{
	struct ema_config cfg;
	struct ema_engine e;
	struct ema_request_spec r[2] = {spec(0, 100, 4), spec(100000000000LL, 100, 4)};
	struct ema_workload w = {r, 2, 2};

	tiny_config(&cfg, 1, (489 + 20) * 4.0 / 1024);
	CU_ASSERT_EQUAL_FATAL(run_engine(&e, &cfg, "static", &w), EMA_OK);
	/* t = 0: empty (requests hold pages only between grid points);
	 * nothing changes at any grid point after; the last row closes the
	 * line at the first grid point after the end (100.5 s) */
	CU_ASSERT(e.n_timeline >= 2);
	CU_ASSERT(e.n_timeline <= 6);
	CU_ASSERT_DOUBLE_EQUAL(e.timeline[0].time_s, 0.0, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(e.timeline[e.n_timeline - 1].time_s, 100.5, 1e-12);
	for (int32_t i = 1; i < e.n_timeline; i++)
		CU_ASSERT(e.timeline[i].time_s >= e.timeline[i - 1].time_s);
	ema_engine_destroy(&e);
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{"one request by hand", test_one_request_by_hand},
		{"chunked prefill", test_chunked_prefill},
		{"preemption recomputes the newest", test_preemption},
		{"host_swap swaps instead", test_swap_preemption},
		{"a swapped request that can never come back is dropped", test_stuck_swapped_dropped},
		{"a request recomputed past what admission takes is dropped", test_recomputed_past_admission},
		{"FCFS order", test_fcfs},
		{"random loads, every policy", test_random_all_policies},
		{"pages held by count, numbered when needed", test_counted_pages},
		{"oversized request dropped at arrival", test_oversized_request},
		{"watermark band: every request runs or is dropped", test_watermark_band},
		{"no progress possible: an error, not a spin", test_no_progress_guard},
		{"timeline: rows only where memory changes", test_timeline_changes_only},
		{"a run that lost an event ends in an error, not whole", test_accounts_at_the_end},
		{"pages of a request past int32_t saturate above every pool", test_pages_saturate},
		{NULL, NULL},
	};
	return ema_test_run("engine", cases);
}
