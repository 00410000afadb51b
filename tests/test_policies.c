/* test_policies.c: the elastic policies: the ledger invariant under long
 * random sequences of borrow, prefetch, reclaim and free across several
 * GPUs; a reclaim frees exactly the pages it promised; the lending rules
 * (floor, reserve, no lending while borrowing) by hand; the borrowing cap;
 * ema's planner: its budgets per lender and path, by hand on 4 GPUs;
 * and the adversarial case where a lender's demand spikes while a
 * borrower holds all it may borrow. Built again as
 * tests/test_policies_traces (EMA_TEST_TRACES, tests/test_main.h) for the
 * cases on the public traces, which that program skips without. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "experiment.h"
#include "lending.h"
#include "policy.h"
#include "test_main.h"

#include "mock_platform.h"

static uint64_t xs = 7;
static uint32_t rnd(uint32_t n)
{
	xs ^= xs << 13; xs ^= xs >> 7; xs ^= xs << 17;
	return (uint32_t)(xs % n);
}

/* ---- invariants under random operation sequences ---------------------- */

struct checker {
	struct ema_engine *e;
	int64_t period;
	int checks, failures;
};

static void check_tick(void *arg, int64_t now)
{
	struct checker *c = arg;
	struct ema_error err = {0};
	struct ema_engine *e = c->e;

	c->checks++;
	if (ema_ledger_check(&e->ledger, &err) != EMA_OK) {
		if (c->failures++ == 0)
			fprintf(stderr, "\n  at %lld ns: %s\n", (long long)now, err.msg);
	}
	/* per GPU: weights + used + free + lent = capacity */
	for (int g = 0; g < e->ledger.n_gpus; g++)
		if (e->ledger.gpu[g].count[EMA_PAGE_WEIGHTS] + ema_ledger_used_pages(&e->ledger, g) +
		    ema_ledger_free_pages(&e->ledger, g) + ema_ledger_lent_pages(&e->ledger, g) !=
		    e->ledger.gpu[g].capacity)
			c->failures++;
	/* a request's mask of GPUs names those it holds pages on */
	for (int t = 0; t < e->n_tenants; t++)
		for (int32_t k = 0; k < e->tenants[t].n_reqs; k++) {
			const struct ema_request *r = &e->tenants[t].reqs[k];

			for (int g = 0; g < e->ledger.n_gpus; g++)
				if (ema_gpuset_test(&r->on_mask, g) != (r->view.pages_on[g] > 0))
					c->failures++;
		}
	/* a tenant's pages on each GPU add up to what the ledger lends it,
	 * once its transfers have landed (a swap-in holds its destination
	 * pages before the request's page list names them) */
	for (int t = 0; t < e->n_tenants; t++)
		for (int g = 0; g < e->ledger.n_gpus; g++) {
			int32_t held = 0;

			if (g == e->tenants[t].gpu || e->tenants[t].xfers_in_flight > 0)
				continue;
			for (int32_t k = 0; k < e->tenants[t].n_reqs; k++)
				held += e->tenants[t].reqs[k].view.pages_on[g];
			if (held != e->ledger.borrowed[t][g])
				c->failures++;
		}
	if (e->done_requests < e->total_requests)
		e->platform->ops->timer(e->platform, now + c->period, check_tick, c, NULL);
}

static void random_workload(struct ema_request_spec *r, int n, int64_t gap, int max_p, int max_o)
{
	int64_t t = 0;

	for (int i = 0; i < n; i++) {
		t += rnd((uint32_t)gap);
		r[i].arrival_ns = t;
		r[i].prompt_tokens = 1 + (int)rnd((uint32_t)max_p);
		r[i].output_tokens = 1 + (int)rnd((uint32_t)max_o);
	}
}

static void test_random_sequences(void)
{
	static struct ema_request_spec r0[300], r1[300], r2[60];
	const enum ema_reclaim_mode modes[] = {EMA_RECLAIM_AUTO, EMA_RECLAIM_MOVE, EMA_RECLAIM_HOST, EMA_RECLAIM_DROP};

	for (int round = 0; round < 8; round++) {
		struct ema_workload w[3] = {{r0, 300, 300}, {r1, 300, 300}, {r2, 60, 60}};
		const char *policy = round % 2 ? "remote_direct" : "ema";
		struct ema_config cfg;
		struct ema_engine e;
		struct ema_error err = {0};
		struct mock *m;
		struct checker c = {0};

		random_workload(r0, 300, 8000, 500, 150);
		random_workload(r1, 300, 9000, 500, 150);
		random_workload(r2, 60, 40000, 200, 50);
		/* 4 GPUs, 3 tenants: GPU 3 only lends */
		tiny_config(&cfg, 4, (489 + 60) * 4.0 / 1024);
		cfg.n_tenants = 3;
		cfg.policy.lender_floor = 0.1;
		cfg.policy.lender_reserve = 0.05;
		/* a tight TPOT budget, then a loose one */
		CU_ASSERT_FATAL(set_own_knob(&cfg, "ema", "tpot_budget", round < 4 ? 0.1 : 1.0));
		CU_ASSERT_FATAL(set_own_knob(&cfg, "ema", "prefetch_depth", 1 + round % 2));
		CU_ASSERT_FATAL(set_own_knob(&cfg, "ema", "headroom", 0.1));
		cfg.serving.layer_groups = 4;
		cfg.policy.reclaim_mode = modes[round % 4];
		m = mock_new(&cfg);
		CU_ASSERT_EQUAL_FATAL(ema_engine_create(&e, &cfg, ema_policy_find(policy), &m->base, w, &err), EMA_OK);
		c.e = &e;
		c.period = 3000;
		CU_ASSERT_EQUAL(m->base.ops->timer(&m->base, 0, check_tick, &c, NULL), EMA_OK);
		CU_ASSERT_EQUAL(ema_engine_run(&e, &err), EMA_OK);
		CU_ASSERT(c.checks > 100);
		CU_ASSERT_EQUAL(c.failures, 0);
		for (int t = 0; t < 3; t++) {
			CU_ASSERT_EQUAL(e.tenants[t].n_done, e.tenants[t].n_reqs);
			CU_ASSERT_EQUAL(ema_ledger_borrowed_pages(&e.ledger, t), 0);
		}
		/* something was borrowed and something reclaimed */
		CU_ASSERT(e.tenants[0].stats.borrowed_peak_pages + e.tenants[1].stats.borrowed_peak_pages > 0);
		for (int g = 0; g < 4; g++)
			CU_ASSERT_EQUAL(ema_ledger_lent_pages(&e.ledger, g), 0);
		CU_ASSERT_EQUAL(e.host_free[0], e.host_capacity);
		e.platform = NULL;
		mock_destroy(&m->base);
		ema_engine_destroy(&e);
	}
}

/* ---- a reclaim frees exactly what it promised ------------------------ */

static void test_reclaim_move_exact(void)
{
	static struct ema_request_spec r0[40];
	struct ema_request_spec r1[1] = {{0, 1, 1}};
	struct ema_workload w[2] = {{r0, 40, 40}, {r1, 1, 1}};
	struct ema_config cfg;
	struct ema_engine e;
	struct ema_error err = {0};
	struct mock *m;
	struct ema_request *victim = NULL, *other = NULL;
	int32_t k, lent0, n_rec;
	int64_t horizon;

	for (int i = 0; i < 40; i++) {
		r0[i].arrival_ns = i * 10;
		r0[i].prompt_tokens = 300;
		r0[i].output_tokens = 400;
	}
	tiny_config(&cfg, 2, (489 + 80) * 4.0 / 1024);
	cfg.policy.lender_floor = 0;
	cfg.policy.lender_reserve = 0;
	CU_ASSERT_FATAL(set_own_knob(&cfg, "ema", "headroom", 0));
	/* the mechanics of a reclaim, not the planner's budgets */
	CU_ASSERT_FATAL(set_own_knob(&cfg, "ema", "tpot_budget", 10));
	CU_ASSERT_FATAL(set_own_knob(&cfg, "ema", "lender_budget", 1));
	/* run up to a horizon: tenant 0 has filled its GPU and borrowed */
	cfg.horizon_s = 0.001;
	m = mock_new(&cfg);
	CU_ASSERT_EQUAL_FATAL(ema_engine_create(&e, &cfg, ema_policy_find("ema"), &m->base, w, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(ema_engine_run(&e, &err), EMA_OK);
	horizon = 1000000;
	while (ema_ledger_lent_pages(&e.ledger, 1) == 0 && horizon < 1000000000) {
		horizon += 1000000;
		CU_ASSERT_EQUAL_FATAL(m->base.ops->run(&m->base, horizon, &err), EMA_OK);
	}
	CU_ASSERT_FATAL(ema_ledger_lent_pages(&e.ledger, 1) > 0);
	/* a running request with pages on GPU 1, and a local-only one to
	 * preempt so that the borrower's GPU has room to take pages home */
	for (int32_t i = e.tenants[0].running_n - 1; i >= 0; i--) {
		struct ema_request *r = &e.tenants[0].reqs[e.tenants[0].running[i]];

		if (victim == NULL && r->view.pages_on[1] > 0 && !r->pinned)
			victim = r;
	}
	for (int32_t i = 0; i < e.tenants[0].running_n; i++) {
		struct ema_request *r = &e.tenants[0].reqs[e.tenants[0].running[i]];

		if (other == NULL && r != victim && r->n_remote == 0 && r->n_pages >= victim->view.pages_on[1])
			other = r;
	}
	CU_ASSERT_PTR_NOT_NULL_FATAL(victim);
	CU_ASSERT_PTR_NOT_NULL_FATAL(other);
	ema_engine_preempt_recompute(&e, other);
	k = victim->view.pages_on[1];
	lent0 = ema_ledger_lent_pages(&e.ledger, 1);
	n_rec = e.n_reclaims;
	CU_ASSERT_EQUAL(ema_engine_move_home(&e, victim, 1), k);
	CU_ASSERT_EQUAL(victim->pinned, 1);
	/* nothing is freed before the data has arrived */
	CU_ASSERT_EQUAL(ema_ledger_lent_pages(&e.ledger, 1), lent0);
	/* continue past the transfer (1 us in the mock), with nothing else
	 * able to change GPU 1's lent pages: tenant 0 stays busy or waits */
	CU_ASSERT_EQUAL(m->base.ops->run(&m->base, m->now + 1000, &err), EMA_OK);
	CU_ASSERT_EQUAL(victim->view.pages_on[1], 0);
	CU_ASSERT_EQUAL(victim->pinned, 0);
	CU_ASSERT_EQUAL_FATAL(e.n_reclaims, n_rec + 1);
	CU_ASSERT_EQUAL(e.reclaims[n_rec].pages, k);
	CU_ASSERT_EQUAL(e.reclaims[n_rec].lender_gpu, 1);
	CU_ASSERT_EQUAL(e.reclaims[n_rec].latency_ns, 1000);
	CU_ASSERT(ema_ledger_lent_pages(&e.ledger, 1) <= lent0 - k);
	CU_ASSERT_EQUAL(ema_ledger_check(&e.ledger, NULL), EMA_OK);
	e.platform = NULL;
	mock_destroy(&m->base);
	ema_engine_destroy(&e);
}

/* ---- lending rules by hand ------------------------------------------- */

static void test_lending_rules(void)
{
	struct ema_request_spec r0[1] = {{0, 1, 1}}, r1[1] = {{0, 1, 1}};
	struct ema_workload w[2] = {{r0, 1, 1}, {r1, 1, 1}};
	struct ema_config cfg;
	struct ema_engine e;
	struct ema_error err = {0};
	struct mock *m;
	int32_t p;

	/* 100 KV pages per GPU after 489 weight pages */
	tiny_config(&cfg, 2, (489 + 100) * 4.0 / 1024);
	cfg.policy.lender_floor = 0.25;
	cfg.policy.lender_reserve = 0.05;
	m = mock_new(&cfg);
	CU_ASSERT_EQUAL_FATAL(ema_engine_create(&e, &cfg, ema_policy_find("ema"), &m->base, w, &err), EMA_OK);
	CU_ASSERT_EQUAL(e.tenants[1].kv_capacity_pages, 100);
	/* idle lender: min(free 100 - reserve 5, 100 - floor 25 - lent 0) = 75 */
	CU_ASSERT_EQUAL(ema_lending_lendable(&e.ctx, 1), 75);
	CU_ASSERT_EQUAL(ema_lending_best_lender(&e.ctx, 0), 1);
	/* its tenant uses 80 pages: min(20 - 5, 75) = 15 */
	for (int i = 0; i < 80; i++)
		ema_ledger_alloc(&e.ledger, 1, 1, EMA_PAGE_KV);
	CU_ASSERT_EQUAL(ema_lending_lendable(&e.ctx, 1), 15);
	/* it lends 10: min(10 - 5, 75 - 10) = 5 */
	for (int i = 0; i < 10; i++)
		ema_ledger_alloc(&e.ledger, 1, 0, EMA_PAGE_KV);
	CU_ASSERT_EQUAL(ema_lending_lendable(&e.ctx, 1), 5);
	CU_ASSERT_EQUAL(ema_lending_total_lendable(&e.ctx, 0), 5);
	/* a tenant that borrows lends nothing: tenant 1 borrows one page */
	p = ema_ledger_alloc(&e.ledger, 0, 1, EMA_PAGE_KV);
	CU_ASSERT(p >= 0);
	CU_ASSERT_EQUAL(ema_lending_lendable(&e.ctx, 1), 0);
	CU_ASSERT_EQUAL(ema_lending_best_lender(&e.ctx, 0), -1);
	e.platform = NULL;
	mock_destroy(&m->base);
	ema_engine_destroy(&e);
}

/* ema lends a GPU's free pages only down to reserve + headroom, so the
 * lender's own growth by its reserve is absorbed before it reclaims (free
 * < headroom). 2 GPUs of 100 KV pages, reserve 5%, headroom 5%, the
 * lender's tenant holding 80: the lending rules allow 20 - 5 = 15, ema
 * 20 - 5 - 5 = 10 (its budget on the lender, 58 pages, does not bind); the lender
 * is left 10 free, and grows by 5 before 4 < 5 sets off a reclaim. With
 * headroom 0 ema takes what the lending rules allow. */
static void test_headroom_band(void)
{
	const struct ema_policy_ops *ema = ema_policy_find("ema");
	struct ema_request_spec r0[1] = {{0, 1, 1}}, r1[1] = {{0, 1, 1}};
	struct ema_workload w[2] = {{r0, 1, 1}, {r1, 1, 1}};

	for (int pass = 0; pass < 2; pass++) {
		double headroom = pass == 0 ? 0.05 : 0;
		int32_t want = pass == 0 ? 10 : 15, n = 0;
		struct ema_config cfg;
		struct ema_engine e;
		struct ema_error err = {0};
		struct mock *m;

		tiny_config(&cfg, 2, (489 + 100) * 4.0 / 1024);
		cfg.policy.lender_floor = 0.25;
		cfg.policy.lender_reserve = 0.05;
		CU_ASSERT_FATAL(set_own_knob(&cfg, "ema", "headroom", headroom));
		m = mock_new(&cfg);
		CU_ASSERT_EQUAL_FATAL(ema_engine_create(&e, &cfg, ema, &m->base, w, &err), EMA_OK);
		for (int i = 0; i < 80; i++)
			ema_ledger_alloc(&e.ledger, 1, 1, EMA_PAGE_KV);
		CU_ASSERT_EQUAL(ema_lending_lendable(&e.ctx, 1), 15);
		CU_ASSERT_EQUAL(ema->borrowable(&e.ctx, e.policy_state, 0), want);
		while (ema->choose_lender(&e.ctx, e.policy_state, 0) == 1 && n < 100) {
			CU_ASSERT_FATAL(ema_ledger_alloc(&e.ledger, 1, 0, EMA_PAGE_KV) >= 0);
			n++;
		}
		CU_ASSERT_EQUAL(n, want);
		CU_ASSERT_EQUAL(ema_ledger_free_pages(&e.ledger, 1), 20 - want);
		CU_ASSERT_EQUAL(ema->borrowable(&e.ctx, e.policy_state, 0), 0);
		/* what one request could hold: its GPU's 100 and its budget on
		 * GPU 1, the most that serves more tokens in place: reads that
		 * fill the local step, 100 GB/s x T0 (2.4096 MB / 1000 GB/s =
		 * 2,409.6 ns) = 240,960 bytes, 58 pages of 4 KiB (the floor
		 * would allow 75) */
		CU_ASSERT_EQUAL(ema->max_request_pages(&e.ctx, e.policy_state, 0), 100 + 58);
		/* (serving.oversize=drop: the engine holds a request to its GPU's) */
		CU_ASSERT_EQUAL(e.tenants[0].max_request_pages, 100);
		e.platform = NULL;
		mock_destroy(&m->base);
		ema_engine_destroy(&e);
	}
}

/* ---- experiments on the simulator (h200x2) ---------------------------- */

/* the scenarios' files: in the program's temporary folder
 * (tests/test_main.h), removed with it at exit */
static char tmpdir[4200];

static const char *write_file(const char *name, const char *text)
{
	static char path[4400];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
	return path;
}

static const struct ema_tenant_result *row(const struct ema_experiment *x, const char *policy,
					   const char *tenant)
{
	for (int i = 0; i < x->n_runs; i++)
		for (int t = 0; t < x->cfg.n_tenants; t++)
			if (strcmp(x->runs[i].results[t].policy, policy) == 0 &&
			    strcmp(x->runs[i].results[t].tenant, tenant) == 0)
				return &x->runs[i].results[t];
	return NULL;
}

/* An overloaded borrower takes all the lender's budget allows from GPU 1
 * (its TPOT budget off); at 40 s the lender
 * gets a burst of 36 requests that fit its own memory (no preemption
 * under static) but not beside the borrower's pages: 36 x 1800 tokens x
 * 128 KiB = 4050 pages of the 4629, 1280 of them lent. (30 requests, 3375
 * pages, came within 26 pages of what the lender had left, and since ema
 * stops lending at reserve + headroom it no longer needed a reclaim.)
 * Under ema it must take its pages back fast enough to do as well as
 * under static: 5% on throughput and the paired p50s (each request
 * against itself: the unpaired TTFT p50 of these 36 requests moves with
 * which lands in the middle: 1.053 x static's, 1.006 paired), 15% on
 * p99s. */
static void test_adversarial_lender(void)
{
	char spike[4096] = "arrived_at,num_prefill_tokens,num_decode_tokens\n0.000,16,2\n";
	char cfgtext[16384];
	struct ema_experiment *x = calloc(1, sizeof *x);
	struct ema_error err = {0};
	const struct ema_tenant_result *st, *em, *b;
	const char *trace;

	for (int i = 0; i < 36; i++)
		snprintf(spike + strlen(spike), sizeof spike - strlen(spike), "%.3f,1500,300\n", 40 + i * 0.033);
	trace = write_file("spike.csv", spike);
	snprintf(cfgtext, sizeof cfgtext,
		 "{\"name\": \"adversarial\", \"hardware\": \"h200x2\", \"model\": \"llama-3-8b\",\n"
		 " \"gpu_mem_cap_gib\": 24, \"policies\": [\"static\", \"ema\"],\n"
		 " \"policy\": {\"ema\": {\"tpot_budget\": 10}}, \"tenants\": [\n"
		 "  {\"name\": \"borrower\", \"gpu\": 0, \"workload\": {\"source\": \"synthetic\", \"rate_rps\": 16,\n"
		 "   \"duration_s\": 80, \"prompt\": {\"kind\": \"lognormal\", \"mean\": 1024, \"cv\": 1, \"max\": 8192},\n"
		 "   \"output\": {\"kind\": \"lognormal\", \"mean\": 256, \"cv\": 1, \"max\": 2048}}},\n"
		 "  {\"name\": \"lender\", \"gpu\": 1, \"workload\": {\"source\": \"trace\", \"format\": \"vidur\",\n"
		 "   \"trace\": \"%s\"}}]}\n", trace);
	CU_ASSERT_EQUAL_FATAL(ema_config_load(&x->cfg, write_file("adv.json", cfgtext), NULL, 0, &err), EMA_OK);
	x->quiet = true;
	CU_ASSERT_EQUAL_FATAL(ema_experiment_run(x, &err), EMA_OK);
	st = row(x, "static", "lender");
	em = row(x, "ema", "lender");
	b = row(x, "ema", "borrower");
	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	CU_ASSERT_PTR_NOT_NULL_FATAL(em);
	CU_ASSERT_EQUAL(st->preemptions, 0);
	/* the borrower held pages of the lender when the burst came, and
	 * the lender took them back */
	CU_ASSERT(b->borrowed_peak_gib > 1.0);
	CU_ASSERT(em->lent_peak_gib > 1.0);
	CU_ASSERT(em->reclaims > 0);
	CU_ASSERT(em->reclaim_ms[1] < 5.0);
	CU_ASSERT_EQUAL(em->completed, st->completed);
	CU_ASSERT_STRING_EQUAL(em->guarantee, "ok");
	CU_ASSERT(em->vs_static_throughput >= 0.95);
	CU_ASSERT(em->vs_static_ttft_paired <= 1.05);
	CU_ASSERT(em->vs_static_tpot_paired <= 1.05);
	CU_ASSERT(em->vs_static_ttft_p99 <= 1.15);
	CU_ASSERT(em->vs_static_tpot_p99 <= 1.15);
	printf("\n  lender under ema vs static: throughput %.3f, TTFT p50 %.3f (paired %.3f) p99 %.3f, TPOT p50 %.3f (paired %.3f) p99 %.3f; "
	       "%lld reclaims, p99 %.3f ms\n", em->vs_static_throughput, em->vs_static_ttft_p50, em->vs_static_ttft_paired,
	       em->vs_static_ttft_p99, em->vs_static_tpot_p50, em->vs_static_tpot_paired, em->vs_static_tpot_p99,
	       (long long)em->reclaims, em->reclaim_ms[1]);
	ema_experiment_free(x);
	free(x);
}

/* Found by random scenarios: a request swapped back in to exactly its own
 * pages could not grow by its next token, went straight out again, and
 * so on, with nothing computed: t1 here (h200x2 at 18 GiB, pages of 1 MiB,
 * half a llama-3-8b block, 64 tokens a step, no watermark, per-page swap
 * copies) looped from 40.5 s on under host_swap and finished 80 of its
 * 507 requests by the horizon. A swap-in asks room for the request's
 * whole sequence now, as admission does: every request finishes, well
 * before the horizon. */
static void test_swap_in_room(void)
{
	static const char cfgtext[] =
		"{\"seed\": 936, \"hardware\": \"h200x2\", \"model\": \"llama-3-8b\",\n"
		" \"gpu_mem_cap_gib\": 18, \"page_mib\": 1, \"horizon_s\": 300,\n"
		" \"policies\": [\"host_swap\"], \"policy\": {\"copy_method\": \"per_page\"},\n"
		" \"serving\": {\"max_batch_tokens\": 64, \"max_batch\": 16, \"watermark\": 0},\n"
		" \"tenants\": [\n"
		"  {\"name\": \"t0\", \"gpu\": 0, \"workload\": {\"source\": \"synthetic\",\n"
		"   \"rate_rps\": 2, \"duration_s\": 40,\n"
		"   \"prompt\": {\"kind\": \"lognormal\", \"mean\": 256, \"cv\": 1, \"max\": 8192},\n"
		"   \"output\": {\"kind\": \"lognormal\", \"mean\": 64, \"cv\": 1, \"max\": 2048}}},\n"
		"  {\"name\": \"t1\", \"gpu\": 1, \"workload\": {\"source\": \"synthetic\",\n"
		"   \"rate_rps\": 12, \"duration_s\": 40,\n"
		"   \"prompt\": {\"kind\": \"lognormal\", \"mean\": 3000, \"cv\": 1, \"max\": 8192},\n"
		"   \"output\": {\"kind\": \"lognormal\", \"mean\": 64, \"cv\": 1, \"max\": 2048}}}]}\n";
	struct ema_experiment *x = calloc(1, sizeof *x);
	struct ema_error err = {0};
	const struct ema_tenant_result *t1;

	CU_ASSERT_EQUAL_FATAL(ema_config_load(&x->cfg, write_file("swap.json", cfgtext), NULL, 0, &err),
			      EMA_OK);
	x->quiet = true;
	CU_ASSERT_EQUAL_FATAL(ema_experiment_run(x, &err), EMA_OK);
	t1 = row(x, "host_swap", "t1");
	CU_ASSERT_PTR_NOT_NULL_FATAL(t1);
	CU_ASSERT_EQUAL(t1->requests, 507);
	CU_ASSERT_EQUAL(t1->completed, t1->requests);
	CU_ASSERT(t1->swaps > 0);
	CU_ASSERT(x->runs[0].engine->end_ns < (int64_t)200e9);
	ema_experiment_free(x);
	free(x);
}

/* Runs `cfgtext` and checks that every request finished or was dropped. */
static void all_requests_end(const char *name, const char *cfgtext)
{
	struct ema_experiment *x = calloc(1, sizeof *x);
	struct ema_error err = {0};
	int rc;

	CU_ASSERT_EQUAL_FATAL(ema_config_load(&x->cfg, write_file(name, cfgtext), NULL, 0, &err),
			      EMA_OK);
	x->quiet = true;
	rc = ema_experiment_run(x, &err);
	CU_ASSERT_EQUAL(rc, EMA_OK);
	if (rc != EMA_OK)
		fprintf(stderr, "\n%s: %s\n", name, err.msg);
	for (int i = 0; rc == EMA_OK && i < x->n_runs; i++)
		for (int t = 0; t < x->cfg.n_tenants; t++)
			CU_ASSERT_EQUAL(x->runs[i].results[t].completed + x->runs[i].results[t].dropped,
					x->runs[i].results[t].requests);
	ema_experiment_free(x);
	free(x);
}

/* Runs that stopped with "no progress possible" although they could go
 * on (random scenarios found them): every request ends now.
 * - remote_direct, h200x2 at 30 GiB, opt-13b, 1 MiB pages: t0 waited for
 *   pages it had lent when t1, kicked after it in the same pass,
 *   preempted the request that held them; nothing kicked t0 again. The
 *   engine kicks every tenant once more before it calls a run stalled.
 * - ema staged on a100x4_40gb: t1 preempted its one request that
 *   borrowed, between steps, and kept its staging area (530 pages), which
 *   only after_iteration gives back; its next request needed them. ema's
 *   stalled hook gives it back.
 * - ema on a100x4_40gb: t3's next request needed 16 pages more than its
 *   GPU, and the lender guard of the ema before the planner refused
 *   every peer for the reads of the last 10 s, which decay with time
 *   alone; nothing was left to happen. Its stalled hook named the
 *   nanosecond the guard relented; the planner's forgets the
 *   corrections that no step can renew (ema_stalled). */
static void test_stalls_resolved(void)
{
	static const char kick_order[] =
		"{\"seed\": 204, \"hardware\": \"h200x2\", \"model\": \"opt-13b\", \"gpu_mem_cap_gib\": 30, "
		"\"policies\": [\"remote_direct\"], \"page_mib\": 1, \"horizon_s\": 0, "
		"\"serving\": {\"chunked_prefill\": true, \"max_batch_tokens\": 128, \"max_batch\": 256, "
		"\"watermark\": 0.01, \"block_tokens\": 8}, \"policy\": {"
		"\"lender_reserve\": 0, \"lender_floor\": 0.1, "
		"\"reclaim_mode\": \"move\", \"host_gib\": 0.5, \"copy_method\": \"per_page\", "
		"\"ema\": {\"headroom\": 0.2, \"prefetch_depth\": 0, \"remote_path\": \"auto\", "
		"\"tpot_budget\": 0.08, \"lender_budget\": 0.035}}, "
		"\"tenants\": [{\"name\": \"t0\", \"gpu\": 0, \"workload\": {\"source\": \"synthetic\", "
		"\"arrival\": \"poisson\", \"rate_rps\": 40, \"duration_s\": 40, "
		"\"prompt\": {\"kind\": \"lognormal\", \"mean\": 3000, \"cv\": 1.0, \"min\": 1, "
		"\"max\": 8192}, \"output\": {\"kind\": \"lognormal\", \"mean\": 64, \"cv\": 1.0, \"min\": 1, "
		"\"max\": 2048}}}, {\"name\": \"t1\", \"gpu\": 1, \"workload\": {\"source\": \"synthetic\", "
		"\"arrival\": \"gamma\", \"rate_rps\": 6, \"duration_s\": 40, "
		"\"prompt\": {\"kind\": \"lognormal\", \"mean\": 3000, \"cv\": 1.0, \"min\": 1, "
		"\"max\": 8192}, \"output\": {\"kind\": \"lognormal\", \"mean\": 256, \"cv\": 1.0, \"min\": 1, "
		"\"max\": 2048}}}]}";
	static const char staging[] =
		"{\"seed\": 580, \"hardware\": \"a100x4_40gb\", \"model\": \"opt-13b\", "
		"\"gpu_mem_cap_gib\": 30, \"policies\": [\"ema\"], \"page_mib\": 1, \"horizon_s\": 0, "
		"\"serving\": {\"chunked_prefill\": true, \"max_batch_tokens\": 128, \"max_batch\": 16, "
		"\"watermark\": 0.01, \"block_tokens\": 8}, \"policy\": {"
		"\"lender_reserve\": 0, \"lender_floor\": 0.1, "
		"\"reclaim_mode\": \"host\", \"host_gib\": 1, \"copy_method\": \"per_page\", "
		"\"ema\": {\"headroom\": 0.2, \"prefetch_depth\": 2, \"remote_path\": \"staged\", "
		"\"tpot_budget\": 10, \"lender_budget\": 0.035}}, "
		"\"tenants\": [{\"name\": \"t0\", \"gpu\": 0, \"workload\": {\"source\": \"synthetic\", "
		"\"arrival\": \"poisson\", \"rate_rps\": 2, \"duration_s\": 40, "
		"\"prompt\": {\"kind\": \"lognormal\", \"mean\": 1024, \"cv\": 1.0, \"min\": 1, "
		"\"max\": 8192}, \"output\": {\"kind\": \"lognormal\", \"mean\": 256, \"cv\": 1.0, \"min\": 1, "
		"\"max\": 2048}}}, {\"name\": \"t1\", \"gpu\": 1, \"workload\": {\"source\": \"synthetic\", "
		"\"arrival\": \"gamma\", \"rate_rps\": 20, \"duration_s\": 40, "
		"\"prompt\": {\"kind\": \"lognormal\", \"mean\": 3000, \"cv\": 1.0, \"min\": 1, "
		"\"max\": 8192}, \"output\": {\"kind\": \"lognormal\", \"mean\": 256, \"cv\": 1.0, \"min\": 1, "
		"\"max\": 2048}}}]}";
	static const char guard[] =
		"{\"seed\": 806, \"hardware\": \"a100x4_40gb\", \"model\": \"opt-13b\", "
		"\"gpu_mem_cap_gib\": 30, \"policies\": [\"ema\"], \"page_mib\": 4, \"horizon_s\": 0, "
		"\"serving\": {\"chunked_prefill\": true, \"max_batch_tokens\": 512, \"max_batch\": 256, "
		"\"watermark\": 0, \"block_tokens\": 32}, \"policy\": {"
		"\"lender_reserve\": 0.05, \"lender_floor\": 0.25, "
		"\"reclaim_mode\": \"drop\", \"host_gib\": 1, \"copy_method\": \"batch\", "
		"\"ema\": {\"headroom\": 0.2, \"prefetch_depth\": 2, \"remote_path\": \"auto\", "
		"\"tpot_budget\": 0.3, \"lender_budget\": 0.035}}, "
		"\"tenants\": [{\"name\": \"t0\", \"gpu\": 0, \"workload\": {\"source\": \"synthetic\", "
		"\"arrival\": \"poisson\", \"rate_rps\": 2, \"duration_s\": 40, "
		"\"prompt\": {\"kind\": \"lognormal\", \"mean\": 256, \"cv\": 1.0, \"min\": 1, \"max\": 8192}, "
		"\"output\": {\"kind\": \"lognormal\", \"mean\": 64, \"cv\": 1.0, \"min\": 1, "
		"\"max\": 2048}}}, {\"name\": \"t1\", \"gpu\": 1, \"workload\": {\"source\": \"synthetic\", "
		"\"arrival\": \"gamma\", \"rate_rps\": 6, \"duration_s\": 40, "
		"\"prompt\": {\"kind\": \"lognormal\", \"mean\": 1024, \"cv\": 1.0, \"min\": 1, "
		"\"max\": 8192}, \"output\": {\"kind\": \"lognormal\", \"mean\": 64, \"cv\": 1.0, \"min\": 1, "
		"\"max\": 2048}}}, {\"name\": \"t2\", \"gpu\": 2, \"workload\": {\"source\": \"synthetic\", "
		"\"arrival\": \"poisson\", \"rate_rps\": 40, \"duration_s\": 20, "
		"\"prompt\": {\"kind\": \"lognormal\", \"mean\": 1024, \"cv\": 1.0, \"min\": 1, "
		"\"max\": 8192}, \"output\": {\"kind\": \"lognormal\", \"mean\": 256, \"cv\": 1.0, \"min\": 1, "
		"\"max\": 2048}}}, {\"name\": \"t3\", \"gpu\": 3, \"workload\": {\"source\": \"synthetic\", "
		"\"arrival\": \"poisson\", \"rate_rps\": 40, \"duration_s\": 20, "
		"\"prompt\": {\"kind\": \"lognormal\", \"mean\": 3000, \"cv\": 1.0, \"min\": 1, "
		"\"max\": 8192}, \"output\": {\"kind\": \"lognormal\", \"mean\": 256, \"cv\": 1.0, \"min\": 1, "
		"\"max\": 2048}}}]}";

	all_requests_end("kick_order.json", kick_order);
	all_requests_end("staging.json", staging);
	all_requests_end("guard.json", guard);
}

/* A livelock random scenarios found: four overloaded tenants on
 * a100x4_40gb at 30 GiB, llama-2-13b, prompts up to 8192 tokens (more KV
 * than a GPU has), reclaims that drop: each of three tenants borrows for
 * its largest request, and a lender dropping it to take its pages back
 * throws away its prefill, round and round, with simulated time running
 * on and no token made (static, on the same requests, finishes). The
 * seed is one of many that livelock (seed 407, the first found, no
 * longer does since in-place reads end with their steps: the livelock
 * needs the right timing, not a phantom load). */
static const char livelock_cfg[] =
		"{\"seed\": 401, \"hardware\": \"a100x4_40gb\", \"model\": \"llama-2-13b\", "
		"\"gpu_mem_cap_gib\": 30, \"policies\": [\"static\", \"remote_direct\"], \"page_mib\": 8, "
		"\"horizon_s\": 0, \"serving\": {\"chunked_prefill\": true, \"max_batch_tokens\": 8192, "
		"\"max_batch\": 256, \"watermark\": 0.1, \"block_tokens\": 8, \"oversize\": \"wait\"}, "
		"\"policy\": {\"lender_reserve\": 0, \"lender_floor\": 0.1, "
		"\"reclaim_mode\": \"drop\", \"host_gib\": 64, \"copy_method\": \"batch\", "
		"\"ema\": {\"headroom\": 0.05, \"prefetch_depth\": 2, \"remote_path\": \"auto\", "
		"\"tpot_budget\": 0.3, \"lender_budget\": 0.035}}, "
		"\"tenants\": [{\"name\": \"t0\", \"gpu\": 0, \"workload\": {\"source\": \"synthetic\", "
		"\"arrival\": \"gamma\", \"rate_rps\": 20, \"duration_s\": 20, "
		"\"prompt\": {\"kind\": \"lognormal\", \"mean\": 3000, \"cv\": 1.0, \"min\": 1, "
		"\"max\": 8192}, \"output\": {\"kind\": \"lognormal\", \"mean\": 64, \"cv\": 1.0, \"min\": 1, "
		"\"max\": 2048}}}, {\"name\": \"t1\", \"gpu\": 1, \"workload\": {\"source\": \"synthetic\", "
		"\"arrival\": \"poisson\", \"rate_rps\": 6, \"duration_s\": 20, "
		"\"prompt\": {\"kind\": \"lognormal\", \"mean\": 3000, \"cv\": 1.0, \"min\": 1, "
		"\"max\": 8192}, \"output\": {\"kind\": \"lognormal\", \"mean\": 64, \"cv\": 1.0, \"min\": 1, "
		"\"max\": 2048}}}, {\"name\": \"t2\", \"gpu\": 2, \"workload\": {\"source\": \"synthetic\", "
		"\"arrival\": \"poisson\", \"rate_rps\": 40, \"duration_s\": 20, "
		"\"prompt\": {\"kind\": \"lognormal\", \"mean\": 1024, \"cv\": 1.0, \"min\": 1, "
		"\"max\": 8192}, \"output\": {\"kind\": \"lognormal\", \"mean\": 256, \"cv\": 1.0, \"min\": 1, "
		"\"max\": 2048}}}, {\"name\": \"t3\", \"gpu\": 3, \"workload\": {\"source\": \"synthetic\", "
		"\"arrival\": \"poisson\", \"rate_rps\": 6, \"duration_s\": 40, "
		"\"prompt\": {\"kind\": \"lognormal\", \"mean\": 3000, \"cv\": 1.0, \"min\": 1, "
		"\"max\": 8192}, \"output\": {\"kind\": \"lognormal\", \"mean\": 64, \"cv\": 1.0, \"min\": 1, "
		"\"max\": 2048}}}]}";

/* The same livelock made of swaps alone: two overloaded tenants under
 * remote_direct, reclaims to host. A request swapped in onto lent pages
 * is swapped out by the lender's next growth before it runs a step, and
 * no iteration ends to notice: the check runs at every transfer's end
 * too. (Found by random scenarios: it ran for ever, 600 s of run time in
 * about 7 s without the check at transfers; the horizon, past the
 * check's 600 s, makes a regression fail here rather than hang.) */
static const char livelock_swaps_cfg[] =
		"{\"seed\": 446, \"hardware\": \"h200x2\", \"model\": \"llama-2-7b\", \"horizon_s\": 1000, "
		"\"gpu_mem_cap_gib\": 18, \"policies\": [\"remote_direct\"], \"page_mib\": 1, "
		"\"serving\": {\"chunked_prefill\": false, \"max_batch_tokens\": 512, "
		"\"max_batch\": 64, \"watermark\": 0, \"block_tokens\": 8}, "
		"\"policy\": {\"lender_reserve\": 0.05, \"lender_floor\": 0.1, "
		"\"reclaim_mode\": \"host\", \"host_gib\": 64, \"copy_method\": \"batch\", "
		"\"ema\": {\"headroom\": 0.05, \"prefetch_depth\": 2, \"remote_path\": \"staged\"}}, "
		"\"tenants\": [{\"name\": \"t0\", \"gpu\": 0, \"workload\": {\"source\": \"synthetic\", "
		"\"arrival\": \"poisson\", \"rate_rps\": 12, \"duration_s\": 20, "
		"\"prompt\": {\"kind\": \"lognormal\", \"mean\": 3000, \"cv\": 1.0, \"min\": 1, "
		"\"max\": 8192}, \"output\": {\"kind\": \"lognormal\", \"mean\": 64, \"cv\": 1.0, "
		"\"min\": 1, \"max\": 2048}}}, {\"name\": \"t1\", \"gpu\": 1, \"workload\": "
		"{\"source\": \"synthetic\", \"arrival\": \"gamma\", \"rate_rps\": 20, "
		"\"duration_s\": 20, \"prompt\": {\"kind\": \"lognormal\", \"mean\": 1024, "
		"\"cv\": 1.0, \"min\": 1, \"max\": 8192}, \"output\": {\"kind\": \"lognormal\", "
		"\"mean\": 64, \"cv\": 1.0, \"min\": 1, \"max\": 2048}}}]}";

/* Runs `cfgtext` with the reclaim backoff switched off
 * (serving.reclaim_backoff=0): the run stops with the livelock error,
 * which names the request, where it used to run for ever. */
static void livelock_reported(const char *name, const char *cfgtext, const char *names)
{
	struct ema_experiment *x = calloc(1, sizeof *x);
	struct ema_error err = {0};
	const char *off[] = { "serving.reclaim_backoff=0" };
	int rc;

	CU_ASSERT_EQUAL_FATAL(ema_config_load(&x->cfg, write_file(name, cfgtext), off, 1, &err),
			      EMA_OK);
	x->quiet = true;
	rc = ema_experiment_run(x, &err);
	CU_ASSERT_EQUAL(rc, EMA_ERR_INTERNAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "livelock"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "no token for 600 s"));
	if (names != NULL)
		CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, names));
	unlink(write_file(name, ""));
	ema_experiment_free(x);
	free(x);
}

/* Runs `cfgtext` with the reclaim backoff switched off: it completes,
 * every request of every policy finished or dropped. */
static void completes_without_backoff(const char *name, const char *cfgtext)
{
	struct ema_experiment *x = calloc(1, sizeof *x);
	struct ema_error err = {0};
	const char *off[] = { "serving.reclaim_backoff=0" };
	int rc;

	CU_ASSERT_EQUAL_FATAL(ema_config_load(&x->cfg, write_file(name, cfgtext), off, 1, &err),
			      EMA_OK);
	x->quiet = true;
	x->silent = true;
	rc = ema_experiment_run(x, &err);
	CU_ASSERT_EQUAL(rc, EMA_OK);
	if (rc != EMA_OK)
		fprintf(stderr, "\n  %s\n", err.msg);
	for (int i = 0; rc == EMA_OK && i < x->n_runs; i++)
		for (int t = 0; t < x->cfg.n_tenants; t++)
			CU_ASSERT_EQUAL(x->runs[i].results[t].completed + x->runs[i].results[t].dropped,
					x->runs[i].results[t].requests);
	unlink(write_file(name, ""));
	ema_experiment_free(x);
	free(x);
}

static void test_livelock_reported(void)
{
	livelock_reported("livelock.json", livelock_cfg, "8192 prompt");
}

/* The first livelock needs requests larger than a GPU, which borrowing
 * alone admits: under serving.oversize=drop (the default; the scenario
 * sets wait) it does not happen, even with the reclaim backoff off, and
 * remote_direct drops at arrival what static drops. */
static void test_livelock_oversize_drop(void)
{
	const char *sets[] = { "serving.reclaim_backoff=0", "serving.oversize=drop" };
	struct ema_experiment *x = calloc(1, sizeof *x);
	struct ema_error err = {0};
	int rc;

	CU_ASSERT_EQUAL_FATAL(ema_config_load(&x->cfg, write_file("livelock_drop.json", livelock_cfg),
					      sets, 2, &err), EMA_OK);
	x->quiet = true;
	rc = ema_experiment_run(x, &err);
	CU_ASSERT_EQUAL(rc, EMA_OK);
	if (rc != EMA_OK)
		fprintf(stderr, "\n  %s\n", err.msg);
	for (int t = 0; rc == EMA_OK && t < x->cfg.n_tenants; t++) {
		const struct ema_tenant_result *st = &x->runs[0].results[t];
		const struct ema_tenant_result *rd = &x->runs[1].results[t];

		CU_ASSERT_EQUAL(rd->completed + rd->dropped, rd->requests);
		CU_ASSERT_EQUAL(rd->dropped, st->dropped);
		CU_ASSERT_EQUAL(rd->reclaim_backoffs, 0);
	}
	unlink(write_file("livelock_drop.json", ""));
	ema_experiment_free(x);
	free(x);
}

static void test_livelock_swaps_reported(void)
{
	livelock_reported("livelock_swaps.json", livelock_swaps_cfg, NULL);
}

/* Runs `cfgtext` (or the scenario in `file`) with the reclaim backoff
 * as built: every request of every policy ends (completed or dropped),
 * the lending policy `lender` (run index) put some request on its own
 * GPU's pages (-1: no policy did), and at least `min_dropped` of its requests were dropped
 * for a KV larger than their GPU's, each counted among those dropped
 * when preempted. */
static void livelock_ended(const char *name, const char *cfgtext, const char *file, int lender,
			   int64_t min_dropped)
{
	struct ema_experiment *x = calloc(1, sizeof *x);
	struct ema_error err = {0};
	int64_t backoffs = 0, dropped = 0;
	int rc;

	CU_ASSERT_EQUAL_FATAL(ema_config_load(&x->cfg, file != NULL ? file : write_file(name, cfgtext),
					      NULL, 0, &err), EMA_OK);
	x->quiet = true;
	rc = ema_experiment_run(x, &err);
	CU_ASSERT_EQUAL(rc, EMA_OK);
	if (rc != EMA_OK)
		fprintf(stderr, "\n%s: %s\n", name, err.msg);
	for (int i = 0; rc == EMA_OK && i < x->n_runs; i++)
		for (int t = 0; t < x->cfg.n_tenants; t++) {
			const struct ema_tenant_result *r = &x->runs[i].results[t];

			CU_ASSERT_EQUAL(r->completed + r->dropped, r->requests);
			CU_ASSERT(r->dropped_backoff <= r->dropped_recomputed);
			CU_ASSERT(r->dropped_recomputed <= r->dropped);
			CU_ASSERT(r->dropped_backoff <= r->reclaim_backoffs);
			CU_ASSERT_EQUAL(r->reclaim_backoff_after, 64); /* the default */
			if (i == lender) {
				backoffs += r->reclaim_backoffs;
				dropped += r->dropped_backoff;
				/* whole KV larger than the GPU's: that is why */
				if (r->dropped_backoff > 0)
					CU_ASSERT(r->dropped_backoff_max_pages > r->kv_capacity_pages);
			} else {
				/* static takes nothing back */
				CU_ASSERT_EQUAL(r->reclaim_backoffs, 0);
			}
		}
	CU_ASSERT(rc != EMA_OK || lender < 0 || backoffs > 0);
	CU_ASSERT(rc != EMA_OK || dropped >= min_dropped);
	if (file == NULL)
		unlink(write_file(name, ""));
	ema_experiment_free(x);
	free(x);
}

/* The reclaim backoff ends both: a request the lenders took back 64
 * times runs on its own GPU's pages, as under static, and those whose
 * KV their GPU can never hold (8192-token prompts here) are dropped. */
static void test_livelock_backoff(void)
{
	livelock_ended("livelock.json", livelock_cfg, NULL, 1, 1);
	livelock_ended("livelock_swaps.json", livelock_swaps_cfg, NULL, 0, 0);
}

/* A livelock of ema itself on a moderate load, found by the outside
 * random scenarios (seed 71, case 52): a100x4_40gb unpartitioned,
 * opt-13b (about 10 GB of KV a GPU), reclaims that drop, three tenants
 * replaying the Azure code trace at half and twice its rate beside a
 * synthetic one: every GPU has a queue. Without the backoff, and with
 * ema lending what its lenders' queues were about to take (as the ema of
 * then did, before its planner left a lender's queue its pages), it stops at t = 4,344 s, a 7,436-token
 * request taken back 3,064 times (t = 1,072 s and a 1,513-token
 * request 4,520 times until the batched copy's per-piece cost was
 * charged: the borrowers borrow less); static and the others finish. In
 * cfgtext (size bytes). (tests/test_policies_traces: the public traces.) */
static void livelock_ema_cfg(char *cfgtext, size_t size)
{
	const char *dir = ema_test_shared_traces();

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	snprintf(cfgtext, size,
		 "{\"seed\": 204, \"hardware\": \"a100x4_40gb\", \"model\": \"opt-13b\", "
		 "\"gpu_mem_cap_gib\": 0, \"policies\": [\"static\", \"ema\"], \"page_mib\": 4, "
		 "\"horizon_s\": 0, \"serving\": {\"chunked_prefill\": false, \"max_batch_tokens\": 512, "
		 "\"max_batch\": 16, \"watermark\": 0.01, \"block_tokens\": 32}, "
		 "\"policy\": {\"lender_reserve\": 0, \"lender_floor\": 0.1, "
		 "\"reclaim_mode\": \"drop\", \"host_gib\": 64, \"copy_method\": \"batch\", "
		 "\"ema\": {\"headroom\": 0, \"prefetch_depth\": 1, \"remote_path\": \"staged\", "
		 "\"tpot_budget\": 10, \"lender_budget\": 0.035}}, "
		 "\"tenants\": ["
		 "{\"name\": \"t0\", \"gpu\": 0, \"workload\": {\"source\": \"trace\", "
		 "\"trace\": \"%s/AzureLLMInferenceTrace_code.csv\", \"format\": \"azure\", "
		 "\"duration_s\": 60, \"start_s\": 300, \"rate_scale\": 0.5}}, "
		 "{\"name\": \"t1\", \"gpu\": 1, \"workload\": {\"source\": \"trace\", "
		 "\"trace\": \"%s/AzureLLMInferenceTrace_code.csv\", \"format\": \"azure\", "
		 "\"duration_s\": 60, \"start_s\": 0, \"rate_scale\": 0.5}}, "
		 "{\"name\": \"t2\", \"gpu\": 2, \"workload\": {\"source\": \"trace\", "
		 "\"trace\": \"%s/AzureLLMInferenceTrace_code.csv\", \"format\": \"azure\", "
		 "\"duration_s\": 60, \"start_s\": 0, \"rate_scale\": 2}}, "
		 "{\"name\": \"t3\", \"gpu\": 3, \"workload\": {\"source\": \"synthetic\", "
		 "\"arrival\": \"gamma\", \"rate_rps\": 6, \"duration_s\": 20, "
		 "\"prompt\": {\"kind\": \"lognormal\", \"mean\": 1024, \"cv\": 1.0, \"min\": 1, "
		 "\"max\": 8192}, \"output\": {\"kind\": \"lognormal\", \"mean\": 64, \"cv\": 1.0, "
		 "\"min\": 1, \"max\": 2048}}}]}", dir, dir, dir);
}

static void test_livelock_backoff_ema(void)
{
	char cfgtext[16384];

	livelock_ema_cfg(cfgtext, sizeof cfgtext);
	/* since lenders wait for the steps that read their pages (2026-12-04)
	 * it is no livelock, and since ema's planner leaves a lender's own
	 * queue its pages no request is taken back 64 times: every run ends,
	 * no backoff needed, and it completes without the backoff too */
	livelock_ended("livelock_ema.json", cfgtext, NULL, -1, 0);
	completes_without_backoff("livelock_ema.json", cfgtext);
}

/* The same without a trace: h200x2 at 18 GiB, both tenants at 20 req/s
 * of 1024-token prompts, so that both queues wait all run long. ema's
 * planner lends only what a lender's own queue does not need
 * (ema_policy_queue_need), so with every GPU overloaded it lends next to
 * nothing and serves as static does. (The ema of before 2026-12-04,
 * without its queue guard, lent what the other queue was about to take:
 * 663 reclaims, 1.8-2.2 x static's preemptions, TPOT p50 +3.5-4.6%.) */
static const char queue_guard_cfg[] =
	"{\"seed\": 3, \"hardware\": \"h200x2\", \"model\": \"llama-2-7b\", "
	"\"gpu_mem_cap_gib\": 18, \"policies\": [\"static\", \"ema\"], \"tenants\": ["
	"{\"name\": \"t0\", \"gpu\": 0, \"workload\": {\"source\": \"synthetic\", "
	"\"arrival\": \"poisson\", \"rate_rps\": 20, \"duration_s\": 30, \"prompt\": "
	"{\"kind\": \"lognormal\", \"mean\": 1024, \"cv\": 1.0, \"min\": 1, \"max\": 8192}, "
	"\"output\": {\"kind\": \"lognormal\", \"mean\": 256, \"cv\": 1.0, \"min\": 1, "
	"\"max\": 2048}}}, "
	"{\"name\": \"t1\", \"gpu\": 1, \"workload\": {\"source\": \"synthetic\", "
	"\"arrival\": \"poisson\", \"rate_rps\": 20, \"duration_s\": 30, \"prompt\": "
	"{\"kind\": \"lognormal\", \"mean\": 1024, \"cv\": 1.0, \"min\": 1, \"max\": 8192}, "
	"\"output\": {\"kind\": \"lognormal\", \"mean\": 256, \"cv\": 1.0, \"min\": 1, "
	"\"max\": 2048}}}]}";

static void test_queue_guard_overload(void)
{
	struct ema_experiment *x = calloc(1, sizeof *x);
	struct ema_error err = {0};
	int64_t reclaims = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	CU_ASSERT_EQUAL_FATAL(ema_config_load(&x->cfg, write_file("queue_guard_overload.json",
								   queue_guard_cfg),
					      NULL, 0, &err), EMA_OK);
	x->quiet = true;
	CU_ASSERT_EQUAL_FATAL(ema_experiment_run(x, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(x->n_runs, 2); /* static, ema */
	for (int t = 0; t < x->cfg.n_tenants; t++) {
		const struct ema_tenant_result *st = &x->runs[0].results[t];
		const struct ema_tenant_result *em = &x->runs[1].results[t];

		CU_ASSERT_EQUAL(em->completed, st->completed);
		reclaims += em->reclaims;
		CU_ASSERT(em->throughput_tok_s >= 0.99 * st->throughput_tok_s);
		CU_ASSERT(em->tpot_ms[0] <= 1.01 * st->tpot_ms[0]);
		CU_ASSERT(em->ttft_ms[0] <= 1.01 * st->ttft_ms[0]);
		CU_ASSERT(em->preemptions <= st->preemptions * 11 / 10 + 5);
	}
	CU_ASSERT(reclaims <= 20);
	unlink(write_file("queue_guard_overload.json", ""));
	ema_experiment_free(x);
	free(x);
}

/* A swapped-out request that can never come back (random scenarios,
 * seed 81, wide round 39): staged ema with reclaims to host on
 * a100x4_40gb at 34 GiB, opt-13b, the Mooncake trace at 4x beside three
 * synthetic tenants. A 23,479-token request admitted while its tenant's
 * link budgets were grown by what it borrowed was demoted to host; with
 * nothing borrowed any more it needed 36,750 pages and the tenant could
 * get 36,733, nothing else was left to run, and the run stopped with "no
 * progress possible". It is dropped now and counted, and the run ends
 * the same stepping and leaping (test_leap's rounds). (As found: ema
 * without its queue guard, which keeps this one from borrowing so, and
 * staged with `per_page` copies that ema planned at the link's rate.
 * Since it plans at the rate of their 64 KiB pieces, it borrows little
 * that way; the gather kernel at link_share 1.113, the budgets of 0.85 x
 * the link's 100 GB/s the request was admitted with, and seed 12 bring it
 * back. tests/test_engine.c pins the drop on a case by hand.) */
static void test_stuck_swapped_dropped(void)
{
	const char *dir = ema_test_shared_traces();
	char cfgtext[8192];
	struct ema_experiment *x;
	struct ema_error err = {0};
	int64_t swapped = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	snprintf(cfgtext, sizeof cfgtext,
		 "{\"seed\": 12, \"hardware\": \"a100x4_40gb\", \"model\": \"opt-13b\", "
		 "\"gpu_mem_cap_gib\": 34, \"policies\": [\"ema\"], \"page_mib\": 0.5, "
		 "\"horizon_s\": 0, \"serving\": {\"oversize\": \"wait\", \"chunked_prefill\": true, \"max_batch_tokens\": 8192, "
		 "\"max_batch\": 16, \"watermark\": 0.01, \"block_tokens\": 32}, "
		 "\"policy\": {\"lender_reserve\": 0.05, \"lender_floor\": 0.1, "
		 "\"reclaim_mode\": \"host\", \"host_gib\": 64, \"copy_method\": \"gather\", "
		 "\"ema\": {\"headroom\": 0.05, \"prefetch_depth\": 1, \"remote_path\": \"staged\", "
		 "\"tpot_budget\": 0.08, \"lender_budget\": 1}}, "
		 "\"tenants\": ["
		 "{\"name\": \"t0\", \"gpu\": 0, \"workload\": {\"source\": \"synthetic\", "
		 "\"arrival\": \"gamma\", \"rate_rps\": 6, \"duration_s\": 20, \"prompt\": "
		 "{\"kind\": \"lognormal\", \"mean\": 3000, \"cv\": 1.0, \"min\": 1, \"max\": 8192}, "
		 "\"output\": {\"kind\": \"lognormal\", \"mean\": 256, \"cv\": 1.0, \"min\": 1, "
		 "\"max\": 2048}}}, "
		 "{\"name\": \"t1\", \"gpu\": 1, \"workload\": {\"source\": \"synthetic\", "
		 "\"arrival\": \"gamma\", \"rate_rps\": 40, \"duration_s\": 20, \"prompt\": "
		 "{\"kind\": \"lognormal\", \"mean\": 3000, \"cv\": 1.0, \"min\": 1, \"max\": 8192}, "
		 "\"output\": {\"kind\": \"lognormal\", \"mean\": 256, \"cv\": 1.0, \"min\": 1, "
		 "\"max\": 2048}}}, "
		 "{\"name\": \"t2\", \"gpu\": 2, \"workload\": {\"source\": \"synthetic\", "
		 "\"arrival\": \"gamma\", \"rate_rps\": 12, \"duration_s\": 40, \"prompt\": "
		 "{\"kind\": \"lognormal\", \"mean\": 256, \"cv\": 1.0, \"min\": 1, \"max\": 8192}, "
		 "\"output\": {\"kind\": \"lognormal\", \"mean\": 64, \"cv\": 1.0, \"min\": 1, "
		 "\"max\": 2048}}}, "
		 "{\"name\": \"t3\", \"gpu\": 3, \"workload\": {\"source\": \"trace\", "
		 "\"trace\": \"%s/mooncake_synthetic_trace.jsonl\", \"format\": \"auto\", "
		 "\"duration_s\": 60, \"start_s\": 0, \"rate_scale\": 4}}]}", dir);
	x = calloc(1, sizeof *x);
	CU_ASSERT_EQUAL_FATAL(ema_config_load(&x->cfg, write_file("stuck_swapped.json", cfgtext), NULL,
					      0, &err), EMA_OK);
	x->quiet = true;
	if (ema_experiment_run(x, &err) != EMA_OK) {
		fprintf(stderr, "\nstuck_swapped.json: %s\n", err.msg);
		CU_FAIL_FATAL("the run failed");
	}
	for (int t = 0; t < x->cfg.n_tenants; t++) {
		const struct ema_tenant_result *r = &x->runs[0].results[t];

		CU_ASSERT_EQUAL(r->completed + r->dropped, r->requests);
		CU_ASSERT(r->dropped_swapped + r->dropped_backoff <= r->dropped_recomputed);
		swapped += r->dropped_swapped;
		if (r->dropped_swapped > 0)
			CU_ASSERT_EQUAL(r->dropped_swapped_max_pages, 36750);
	}
	/* (the one request stuck swapped out until the honest-model charges
	 * of 2026-12-04; since, this scenario no longer reaches that state,
	 * and what it checks is that every request ends: the drop itself is
	 * pinned by hand in tests/test_engine.c) */
	CU_ASSERT(swapped <= 1);
	unlink(write_file("stuck_swapped.json", ""));
	ema_experiment_free(x);
	free(x);
}

/* ---- admission at the edges of what fits ---------------------------- */

/* One request of `prompt` tokens (one output token, so it holds exactly
 * ceil(prompt / 16) pages of llama-3-8b on the default machine) on the
 * default scenario, the lender with one small request: every policy
 * finishes, within a horizon that a spinning engine would hit, with the
 * request completed or dropped as its policy's limit says. */
static void run_edge(int prompt, int32_t *limits)
{
	char p_set[160], h_set[] = "horizon_s=36000";
	const char *sets[] = {
		p_set, "tenants.0.workload.output={\"kind\":\"fixed\",\"mean\":1}",
		"tenants.0.workload.max_requests=1", "tenants.1.workload.max_requests=1", h_set,
		"policies=static,ideal,host_swap,remote_direct,ema,pooled,ideal_kv",
		"serving.oversize=wait", /* (the lending policies' own limits) */
		"gpu_mem_cap_gib=24",
	};
	struct ema_experiment *x = calloc(1, sizeof *x);
	struct ema_error err = {0};

	snprintf(p_set, sizeof p_set,
		 "tenants.0.workload.prompt={\"kind\":\"fixed\",\"mean\":%d,\"max\":1000000}", prompt);
	CU_ASSERT_EQUAL_FATAL(ema_config_load(&x->cfg, NULL, sets, 8, &err), EMA_OK);
	x->quiet = true;
	CU_ASSERT_EQUAL_FATAL(ema_experiment_run(x, &err), EMA_OK);
	for (int i = 0; i < x->n_runs; i++) {
		const struct ema_engine *e = x->runs[i].engine;
		const struct ema_tenant_result *r = &x->runs[i].results[0];
		int32_t need = (prompt + 15) / 16;

		if (limits != NULL)
			limits[i] = e->tenants[0].max_request_pages;
		CU_ASSERT(e->end_ns < 36000000000000LL);
		CU_ASSERT_EQUAL(e->done_requests, e->total_requests);
		if (need > e->tenants[0].max_request_pages) {
			CU_ASSERT_EQUAL(r->dropped, 1);
			CU_ASSERT_EQUAL(r->completed, 0);
		} else {
			CU_ASSERT_EQUAL(r->dropped, 0);
			CU_ASSERT_EQUAL(r->completed, 1);
		}
	}
	ema_experiment_free(x);
	free(x);
}

/* Oversize requests (serving.oversize), by hand on 2 GPUs of 100 KV
 * pages (16 tokens a page), remote_direct with floor 80% and reserve 5%:
 * an idle lender lends min(100 - 5, 100 - 80) = 20, so one request of t0
 * may hold 120 pages. t0's r0 at 0.1 ms, 1,700 prompt tokens and 200 out (107
 * pages to start, 119 at its end: more than its GPU's 100, which static
 * drops), then r1, 320 tokens (20 pages, a 0.65 ms prefill on the
 * mock), at 1 ms, during r0's prefill (3.8 ms). `busy`: t1's request
 * (90 pages, 97 at its end) holds 90 of its GPU's pages when r0 arrives
 * (lendable 5: r0 cannot start); else t1's one
 * token is done at once, r0 starts alone with 7 borrowed pages, and 13
 * are left to lend: too few for r1, which only r0's 100 would let on.
 *  - drop: r0 dropped at arrival; r1 runs at its arrival.
 *  - yield, busy: r0 waits alone, and is dropped at the front when r1
 *    joins the queue (dropped_yielded); r1 runs at its arrival.
 *  - yield, idle: r1 cannot start beside r0 and would with its pages, so
 *    at the end of r0's prefill r0 is preempted and dropped, and r1 runs.
 *  - wait: r1 waits for r0 to finish either way. */
static void oversize_case(enum ema_oversize_mode mode, bool busy)
{
	struct ema_request_spec r0[2] = {{100000, 1700, 200}, {1000000, 320, 2}};
	struct ema_request_spec r1[1] = {{0, busy ? 90 * 16 - 1 : 1, busy ? 100 : 1}};
	struct ema_workload w[2] = {{r0, 2, 2}, {r1, 1, 1}};
	struct ema_config cfg;
	struct ema_engine e;
	struct ema_error err = {0};
	struct mock *m;
	const struct ema_request *big, *small;
	int rc;

	tiny_config(&cfg, 2, (489 + 100) * 4.0 / 1024);
	cfg.policy.lender_floor = 0.8;
	cfg.policy.lender_reserve = 0.05;
	cfg.serving.oversize = mode;
	m = mock_new(&cfg);
	CU_ASSERT_EQUAL_FATAL(ema_engine_create(&e, &cfg, ema_policy_find("remote_direct"), &m->base,
						w, &err), EMA_OK);
	CU_ASSERT_EQUAL(e.tenants[0].kv_capacity_pages, 100);
	CU_ASSERT_EQUAL(e.tenants[0].max_request_pages, mode == EMA_OVERSIZE_DROP ? 100 : 120);
	rc = ema_engine_run(&e, &err);
	CU_ASSERT_EQUAL(rc, EMA_OK);
	if (rc != EMA_OK)
		fprintf(stderr, "\n  %s\n", err.msg);
	big = &e.tenants[0].reqs[0];
	small = &e.tenants[0].reqs[1];
	CU_ASSERT_EQUAL(small->state, EMA_REQ_DONE);
	CU_ASSERT_EQUAL(e.tenants[1].reqs[0].state, EMA_REQ_DONE);
	switch (mode) {
	case EMA_OVERSIZE_DROP:
		CU_ASSERT_EQUAL(big->state, EMA_REQ_DROPPED);
		CU_ASSERT_EQUAL(e.tenants[0].stats.dropped, 1);
		CU_ASSERT_EQUAL(e.tenants[0].stats.dropped_yielded, 0);
		CU_ASSERT_EQUAL(big->first_token_ns, -1);
		/* r1's prefill at its arrival */
		CU_ASSERT(small->first_token_ns - small->arrival_ns < 1000000);
		break;
	case EMA_OVERSIZE_YIELD:
		CU_ASSERT_EQUAL(big->state, EMA_REQ_DROPPED);
		CU_ASSERT_EQUAL(e.tenants[0].stats.dropped, 1);
		CU_ASSERT_EQUAL(e.tenants[0].stats.dropped_yielded, 1);
		CU_ASSERT_EQUAL(e.tenants[0].stats.dropped_yielded_max_pages, 119);
		CU_ASSERT_EQUAL(e.tenants[0].stats.dropped_recomputed, 0);
		/* busy: it never ran; idle: it ran its prefill */
		CU_ASSERT_EQUAL(big->preemptions, busy ? 0 : 1);
		CU_ASSERT_EQUAL(big->first_token_ns >= 0, !busy);
		if (busy) {
			CU_ASSERT(small->first_token_ns - small->arrival_ns < 1000000);
		} else {
			CU_ASSERT(small->first_token_ns > big->first_token_ns &&
				  small->first_token_ns - big->first_token_ns < 1000000);
		}
		break;
	case EMA_OVERSIZE_WAIT:
		CU_ASSERT_EQUAL(big->state, EMA_REQ_DONE);
		CU_ASSERT_EQUAL(e.tenants[0].stats.dropped, 0);
		CU_ASSERT(small->first_token_ns > big->finish_ns);
		break;
	}
	e.platform = NULL;
	mock_destroy(&m->base);
	ema_engine_destroy(&e);
}

static void test_oversize(void)
{
	for (int busy = 0; busy < 2; busy++) {
		oversize_case(EMA_OVERSIZE_DROP, busy);
		oversize_case(EMA_OVERSIZE_YIELD, busy);
		oversize_case(EMA_OVERSIZE_WAIT, busy);
	}
}

/* h200x2 at 24 GiB: local capacity 4629 pages, watermark 47: prompts needing 4581 .. 4630
 * pages under every policy (the band that hung static, host_swap and ema
 * alone), and the same band below ema's own limit, 4629 + 924 = 5553
 * pages (its budget on the idle lender, bound by the lender budget:
 * tests/test_planner.c's 924 by hand). pooled can
 * hold both GPUs' KV, 2 x 4629 pages. */
static void test_admission_edges(void)
{
	int32_t limits[EMA_MAX_POLICIES] = {0};

	run_edge(16, limits);
	CU_ASSERT_EQUAL(limits[0], 4629);  /* static */
	CU_ASSERT_EQUAL(limits[2], 4629);  /* host_swap */
	CU_ASSERT_EQUAL(limits[4], 4629 + 924);  /* ema: its budget on GPU 1 */
	CU_ASSERT(limits[3] > limits[4]);  /* remote_direct: no cap */
	CU_ASSERT_EQUAL(limits[5], 2 * 4629);  /* pooled: the server's KV */
	CU_ASSERT_EQUAL(limits[6], 4629 + 4629); /* ideal_kv: twice the KV */
	for (int pages = 4629 - 48; pages <= 4629 + 1; pages++)
		run_edge(pages * 16, NULL);
	for (int pages = limits[4] - 48; pages <= limits[4] + 1; pages++)
		run_edge(pages * 16 - 7, NULL);
}

/* The Mooncake trace at 24 GiB: prompts from a few tokens to beyond the
 * GPU's KV capacity replay to completion under every policy; what cannot
 * fit is dropped and counted, the rest completes. */
static void test_trace_beyond_capacity(void)
{
	const char *dir = ema_test_shared_traces();
	char t_set[4300];
	const char *sets[] = {t_set, "tenants.1.workload.duration_s=30"};
	struct ema_experiment *x;
	struct ema_error err = {0};

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	snprintf(t_set, sizeof t_set,
		 "tenants.0.workload={\"source\":\"trace\",\"trace\":\"%s/mooncake_synthetic_trace.jsonl\","
		 "\"duration_s\":0}", dir);
	x = calloc(1, sizeof *x);
	CU_ASSERT_EQUAL_FATAL(ema_config_load(&x->cfg, NULL, sets, 2, &err), EMA_OK);
	x->quiet = true;
	CU_ASSERT_EQUAL_FATAL(ema_experiment_run(x, &err), EMA_OK);
	for (int i = 0; i < x->n_runs; i++) {
		const struct ema_tenant_result *r = &x->runs[i].results[0];

		CU_ASSERT_EQUAL(r->completed + r->dropped, r->requests);
		CU_ASSERT(r->requests > 3000);
		if (strcmp(r->policy, "static") == 0)
			CU_ASSERT(r->dropped > 0);
		if (strcmp(r->policy, "ideal") == 0)
			CU_ASSERT(r->dropped < x->runs[0].results[0].dropped);
	}
	ema_experiment_free(x);
	free(x);
}

/* ---- fini: once per init, on the state init saw ------------------------ */

struct hook_counts {
	int inits, finis;
	void *init_state, *fini_state;
	int fail_init;
};
static struct hook_counts hooks;

static int counting_init(const struct ema_policy_ctx *c, void *state, struct ema_error *err)
{
	hooks.inits++;
	hooks.init_state = state;
	return hooks.fail_init ? ema_error_set(err, EMA_ERR_INPUT, "init refused") : EMA_OK;
}

static void counting_fini(const struct ema_policy_ctx *c, void *state)
{
	hooks.finis++;
	hooks.fini_state = state;
}

static void test_fini_hook(void)
{
	static const struct ema_policy_ops counting = {
		.name = "counting", .summary = "counts its init and fini",
		.state_size = 16, .init = counting_init, .fini = counting_fini,
	};
	struct ema_request_spec r[1] = {spec(0, 16, 2)};
	struct ema_workload w = {r, 1, 1};
	struct ema_config cfg;
	struct ema_engine e;
	struct ema_error err = {0};
	struct mock *m;

	tiny_config(&cfg, 1, (489 + 20) * 4.0 / 1024);
	m = mock_new(&cfg);
	memset(&hooks, 0, sizeof hooks);
	CU_ASSERT_EQUAL_FATAL(ema_engine_create(&e, &cfg, &counting, &m->base, &w, &err), EMA_OK);
	CU_ASSERT_EQUAL(ema_engine_run(&e, &err), EMA_OK);
	CU_ASSERT_EQUAL(hooks.finis, 0);
	ema_engine_destroy(&e);
	CU_ASSERT_EQUAL(hooks.inits, 1);
	CU_ASSERT_EQUAL(hooks.finis, 1);
	CU_ASSERT_PTR_NOT_NULL(hooks.fini_state);
	CU_ASSERT_PTR_EQUAL(hooks.fini_state, hooks.init_state);
	/* destroying twice frees nothing twice */
	ema_engine_destroy(&e);
	CU_ASSERT_EQUAL(hooks.finis, 1);

	/* an init that fails still gets its fini (from create's cleanup) */
	memset(&hooks, 0, sizeof hooks);
	hooks.fail_init = 1;
	CU_ASSERT_EQUAL(ema_engine_create(&e, &cfg, &counting, &m->base, &w, &err), EMA_ERR_INPUT);
	CU_ASSERT_EQUAL(hooks.inits, 1);
	CU_ASSERT_EQUAL(hooks.finis, 1);
	e.platform = NULL;
	mock_destroy(&m->base);
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{"random borrow/prefetch/reclaim/free keep the invariants", test_random_sequences},
		{"a reclaim frees exactly what it promised", test_reclaim_move_exact},
		{"lending floor, reserve, no lending while borrowing", test_lending_rules},
		{"ema lends down to reserve + headroom, not to the reclaim line", test_headroom_band},
		{"a swap-in leaves room for the next token", test_swap_in_room},
		{"stalled runs go on where they can", test_stalls_resolved},
		{"without the reclaim backoff, a livelock is reported, not run for ever",
		 test_livelock_reported},
		{"without the reclaim backoff, a livelock of swaps alone is reported too",
		 test_livelock_swaps_reported},
		{"the reclaim backoff ends both livelocks", test_livelock_backoff},
		{"oversize requests: dropped, yielding, or waiting, by hand", test_oversize},
		{"with oversize requests dropped, the first livelock does not happen",
		 test_livelock_oversize_drop},
		{"every GPU overloaded, no trace: ema serves as static does",
		 test_queue_guard_overload},
		{"adversarial: lender spike vs a borrower at its cap", test_adversarial_lender},
		{"admission at the edges of what fits, every policy", test_admission_edges},
		{"fini runs once per init, on the same state", test_fini_hook},
		{NULL, NULL},
	};
	/* tests/test_policies_traces: the cases on the public traces */
	static const struct ema_test_case trace_cases[] = {
		{"the reclaim backoff ends ema's livelock on the Azure code trace",
		 test_livelock_backoff_ema},
		{"a swapped request that can never come back is dropped, not stalled",
		 test_stuck_swapped_dropped},
		{"a trace beyond the GPU's capacity replays to the end", test_trace_beyond_capacity},
		{NULL, NULL},
	};

	if (ema_test_scratch() == NULL)
		return 99;
	snprintf(tmpdir, sizeof tmpdir, "%s", ema_test_scratch());
	/* as the program does: the policies' own knobs are keys */
	if (ema_engine_register_policies(ema_policy_table) != EMA_OK)
		return 99;
	return ema_test_main("policies", cases, trace_cases);
}
