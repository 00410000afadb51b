/* test_stream.c: the engine's records and timeline streamed to sinks
 * (ema_engine_stream_records, ema_engine_stream_timeline) against the
 * whole-array behaviour they replace: on hand cases and random loads of
 * every policy, the records handed over are those a run that keeps every
 * request gives (each field, id order, each once), the timeline's samples
 * the same rows, and the state of the final prefix is freed as the run
 * goes; a sink's error stops the run with its message. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "work.h"
#include "engine_priv.h"
#include "policy.h"
#include "test_main.h"

#include "mock_platform.h"

/* What the sinks were given. */
struct got {
	struct ema_request_record *rec[EMA_MAX_TENANTS];
	int32_t n[EMA_MAX_TENANTS], cap[EMA_MAX_TENANTS];
	struct ema_timeline_sample *tl;
	int32_t n_tl, cap_tl;
	int out_of_order;
	int64_t fail_after;    /* records, then EMA_ERR_IO; -1: never */
	int64_t tl_fail_after; /* samples, then EMA_ERR_IO; -1: never */
	int32_t most_live;     /* the most requests arrived and not yet freed, any tenant */
	const struct ema_engine *e;
};

static int got_record(void *arg, int tenant, const struct ema_request_record *r,
		      struct ema_error *err)
{
	struct got *g = arg;
	const struct ema_tenant *t = &g->e->tenants[tenant];

	if (g->fail_after >= 0 && g->fail_after-- == 0)
		return ema_error_set(err, EMA_ERR_IO, "requests: the test's sink is full");
	if (r->id != g->n[tenant])
		g->out_of_order++;
	if (t->next_arrival - t->released > g->most_live)
		g->most_live = t->next_arrival - t->released;
	if (g->n[tenant] == g->cap[tenant]) {
		g->cap[tenant] = g->cap[tenant] ? 2 * g->cap[tenant] : 64;
		g->rec[tenant] = realloc(g->rec[tenant], (size_t)g->cap[tenant] * sizeof *r);
	}
	g->rec[tenant][g->n[tenant]++] = *r;
	return EMA_OK;
}

static int got_timeline(void *arg, const struct ema_timeline_sample *s, int32_t n,
			struct ema_error *err)
{
	struct got *g = arg;

	if (g->tl_fail_after >= 0 && (g->tl_fail_after -= n) < 0)
		return ema_error_set(err, EMA_ERR_IO, "timeline: the test's sink is full");
	if (g->n_tl + n > g->cap_tl) {
		while (g->n_tl + n > g->cap_tl)
			g->cap_tl = g->cap_tl ? 2 * g->cap_tl : 1024;
		g->tl = realloc(g->tl, (size_t)g->cap_tl * sizeof *s);
	}
	memcpy(g->tl + g->n_tl, s, (size_t)n * sizeof *s);
	g->n_tl += n;
	return EMA_OK;
}

static void got_free(struct got *g)
{
	for (int i = 0; i < EMA_MAX_TENANTS; i++)
		free(g->rec[i]);
	free(g->tl);
	memset(g, 0, sizeof *g);
}

/* One run; with g, streamed to it. Returns the run's code, its message
 * in err. */
static int run(struct ema_engine *e, const struct ema_config *cfg, const char *policy,
	       const struct ema_workload *w, struct got *g, struct ema_error *err)
{
	struct mock *m = mock_new(cfg);
	int rc = ema_engine_create(e, cfg, ema_policy_find(policy), &m->base, w, err);

	if (rc == EMA_OK && g != NULL) {
		g->e = e;
		ema_engine_stream_records(e, got_record, g);
		ema_engine_stream_timeline(e, got_timeline, g);
	}
	if (rc == EMA_OK)
		rc = ema_engine_run(e, err);
	e->platform = NULL;
	mock_destroy(&m->base);
	return rc;
}

static uint32_t seed = 12345;

static uint32_t rnd(uint32_t n)
{
	seed = seed * 1103515245u + 12345u;
	return (seed >> 8) % n;
}

/* The streamed run of policy over w against the kept one: the same
 * records, field by field, each tenant's in id order, each once; the same
 * timeline, counters and end. */
static void compare_runs(const struct ema_config *cfg, const char *policy,
			 const struct ema_workload *w, int32_t *freed)
{
	struct ema_engine a, b;
	struct ema_error err = {0};
	struct got g = { .fail_after = -1, .tl_fail_after = -1 };
	int32_t n_tl;
	const struct ema_timeline_sample *tl;

	CU_ASSERT_EQUAL_FATAL(run(&a, cfg, policy, w, NULL, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(run(&b, cfg, policy, w, &g, &err), EMA_OK);
	CU_ASSERT_EQUAL(g.out_of_order, 0);
	*freed = 0;
	for (int ti = 0; ti < cfg->n_tenants; ti++) {
		CU_ASSERT_EQUAL(g.n[ti], ema_engine_n_requests(&a, ti));
		for (int32_t k = 0; k < g.n[ti] && k < ema_engine_n_requests(&a, ti); k++) {
			struct ema_request_record r;

			ema_engine_request(&a, ti, k, &r);
			CU_ASSERT_EQUAL(g.rec[ti][k].id, r.id);
			CU_ASSERT_EQUAL(g.rec[ti][k].arrival_ns, r.arrival_ns);
			CU_ASSERT_EQUAL(g.rec[ti][k].first_token_ns, r.first_token_ns);
			CU_ASSERT_EQUAL(g.rec[ti][k].finish_ns, r.finish_ns);
			CU_ASSERT_EQUAL(g.rec[ti][k].prompt_tokens, r.prompt_tokens);
			CU_ASSERT_EQUAL(g.rec[ti][k].output_tokens, r.output_tokens);
			CU_ASSERT_EQUAL(g.rec[ti][k].preemptions, r.preemptions);
			CU_ASSERT_EQUAL(g.rec[ti][k].generated_tokens, r.generated_tokens);
			CU_ASSERT_EQUAL(g.rec[ti][k].dropped, r.dropped);
		}
		CU_ASSERT(memcmp(ema_engine_tenant_stats(&a, ti), ema_engine_tenant_stats(&b, ti),
				 sizeof(struct ema_tenant_stats)) == 0);
		CU_ASSERT_EQUAL(a.tenants[ti].n_done, b.tenants[ti].n_done);
		/* what was freed was final, and counted */
		CU_ASSERT(b.tenants[ti].released <= b.tenants[ti].final_n);
		CU_ASSERT_EQUAL(b.tenants[ti].handed, b.tenants[ti].n_reqs);
		*freed += b.tenants[ti].released;
	}
	CU_ASSERT_EQUAL(ema_engine_end_ns(&a), ema_engine_end_ns(&b));
	CU_ASSERT_EQUAL(a.n_reclaims, b.n_reclaims);
	ema_engine_timeline(&b, &n_tl);
	CU_ASSERT_EQUAL(n_tl, 0); /* (all handed over) */
	tl = ema_engine_timeline(&a, &n_tl);
	CU_ASSERT_EQUAL(g.n_tl, n_tl);
	for (int32_t i = 0; i < g.n_tl && i < n_tl; i++) {
		/* (field by field: the struct has padding) */
		CU_ASSERT_EQUAL(g.tl[i].time_s, tl[i].time_s);
		CU_ASSERT_EQUAL(g.tl[i].gpu, tl[i].gpu);
		CU_ASSERT_EQUAL(g.tl[i].weights, tl[i].weights);
		CU_ASSERT_EQUAL(g.tl[i].kv_used, tl[i].kv_used);
		CU_ASSERT_EQUAL(g.tl[i].staging, tl[i].staging);
		CU_ASSERT_EQUAL(g.tl[i].free_pages, tl[i].free_pages);
		CU_ASSERT_EQUAL(g.tl[i].lent, tl[i].lent);
		CU_ASSERT_EQUAL(g.tl[i].borrowed, tl[i].borrowed);
	}
	ema_engine_destroy(&a);
	ema_engine_destroy(&b);
	got_free(&g);
}

/* Three requests by hand: handed over in id order though the second
 * finishes last (a long output), each once. */
static void test_hand(void)
{
	struct ema_config cfg;
	struct ema_request_spec r[3] = { spec(0, 100, 4), spec(1000, 100, 60), spec(2000, 50, 2) };
	struct ema_workload w = { r, 3, 3 };
	struct ema_engine e;
	struct ema_error err = {0};
	struct got g = { .fail_after = -1, .tl_fail_after = -1 };
	int32_t freed;

	tiny_config(&cfg, 1, (489 + 20) * 4.0 / 1024);
	CU_ASSERT_EQUAL_FATAL(run(&e, &cfg, "static", &w, &g, &err), EMA_OK);
	CU_ASSERT_EQUAL(g.n[0], 3);
	CU_ASSERT_EQUAL(g.out_of_order, 0);
	if (!(g.rec[0][1].finish_ns > g.rec[0][2].finish_ns))
		fprintf(stderr, "finish %lld %lld %lld\n", (long long)g.rec[0][0].finish_ns,
			(long long)g.rec[0][1].finish_ns, (long long)g.rec[0][2].finish_ns);
	CU_ASSERT(g.rec[0][1].finish_ns > g.rec[0][2].finish_ns);
	CU_ASSERT_EQUAL(g.rec[0][1].output_tokens, 60);
	CU_ASSERT(!g.rec[0][1].dropped && !g.rec[0][2].dropped);
	CU_ASSERT_EQUAL(g.rec[0][2].prompt_tokens, 50);
	CU_ASSERT(g.n_tl >= 2);
	ema_engine_destroy(&e);
	got_free(&g);
	compare_runs(&cfg, "static", &w, &freed);
}

/* A horizon: requests still in flight and never arrived are handed over
 * at the end, as a kept run reports them (times -1, lengths from the
 * spec). */
static void test_horizon(void)
{
	struct ema_config cfg;
	struct ema_request_spec r[200];
	struct ema_workload w = { r, 200, 200 };
	int32_t freed;

	for (int i = 0; i < 200; i++)
		r[i] = spec((int64_t)i * 5000000, 50 + i % 300, 1 + i % 90);
	tiny_config(&cfg, 1, (489 + 40) * 4.0 / 1024);
	cfg.horizon_s = 0.4;
	compare_runs(&cfg, "static", &w, &freed);
}

/* Random loads long enough that the final prefix is freed many times
 * (thousands of requests: several 256 KiB releases), every policy, two
 * tenants that borrow from each other. */
static void test_random_every_policy(void)
{
	enum { N0 = 4000, N1 = 1500 };
	struct ema_request_spec *r0 = malloc(N0 * sizeof *r0), *r1 = malloc(N1 * sizeof *r1);
	struct ema_workload w[2] = { { r0, N0, N0 }, { r1, N1, N1 } };

	CU_ASSERT_FATAL(r0 != NULL && r1 != NULL);
	for (int round = 0; round < 2; round++) {
		int64_t t = 0;

		for (int i = 0; i < N0; i++) {
			t += rnd(round ? 40000 : 20000);
			r0[i] = spec(t, 1 + (int)rnd(400), 1 + (int)rnd(120));
		}
		t = 0;
		for (int i = 0; i < N1; i++) {
			t += rnd(60000);
			r1[i] = spec(t, 1 + (int)rnd(200), 1 + (int)rnd(60));
		}
		for (int p = 0; ema_policy_table[p] != NULL; p++) {
			struct ema_config cfg;
			int32_t freed = 0;

			tiny_config(&cfg, 2, (489 + 60) * 4.0 / 1024);
			cfg.policy.lender_floor = 0.1;
			cfg.policy.lender_reserve = 0.05;
			set_own_knob(&cfg, "ema", "headroom", 0.1);
			cfg.serving.layer_groups = 1;
			if (round == 1)
				cfg.horizon_s = (double)t * 0.5e-9;
			compare_runs(&cfg, ema_policy_table[p]->name, w, &freed);
			/* most of the requests were freed as the run went */
			if (round == 0)
				CU_ASSERT(freed > (N0 + N1) / 2);
		}
	}
	free(r0);
	free(r1);
}

/* A sink that fails stops the run with its code and message, records
 * after the failure never handed over; the same for the timeline's. */
static void test_sink_errors(void)
{
	struct ema_config cfg;
	struct ema_request_spec r[300];
	struct ema_workload w = { r, 300, 300 };
	struct ema_engine e;
	struct ema_error err = {0};
	struct got g = { .fail_after = 10, .tl_fail_after = -1 };

	for (int i = 0; i < 300; i++)
		r[i] = spec((int64_t)i * 1000000, 50 + i % 100, 1 + i % 40);
	tiny_config(&cfg, 1, (489 + 40) * 4.0 / 1024);
	CU_ASSERT_EQUAL(run(&e, &cfg, "static", &w, &g, &err), EMA_ERR_IO);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "the test's sink is full"));
	CU_ASSERT_EQUAL(g.n[0], 10);
	ema_engine_destroy(&e);
	got_free(&g);

	g = (struct got){ .fail_after = -1, .tl_fail_after = 0 };
	memset(&err, 0, sizeof err);
	CU_ASSERT_EQUAL(run(&e, &cfg, "static", &w, &g, &err), EMA_ERR_IO);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "timeline: the test's sink is full"));
	ema_engine_destroy(&e);
	got_free(&g);
}

/* The requests in flight bound what is held: a long steady load holds a
 * few hundred slots at most, not its thousands. */
static void test_bounded(void)
{
	enum { N = 20000 };
	struct ema_request_spec *r = malloc(N * sizeof *r);
	struct ema_workload w = { r, N, N };
	struct ema_config cfg;
	struct ema_engine e;
	struct ema_error err = {0};
	struct got g = { .fail_after = -1, .tl_fail_after = -1 };

	CU_ASSERT_FATAL(r != NULL);
	for (int i = 0; i < N; i++)
		r[i] = spec((int64_t)i * 400000, 20 + (int)rnd(100), 1 + (int)rnd(30));
	tiny_config(&cfg, 1, (489 + 60) * 4.0 / 1024);
	CU_ASSERT_EQUAL_FATAL(run(&e, &cfg, "static", &w, &g, &err), EMA_OK);
	CU_ASSERT_EQUAL(g.n[0], N);
	CU_ASSERT(g.most_live < 2000);
	CU_ASSERT(e.tenants[0].released > N - 2000);
	CU_ASSERT(e.tenants[0].queue_cap < 4096);
	ema_engine_destroy(&e);
	got_free(&g);
	free(r);
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{"three requests by hand, in id order", test_hand},
		{"a horizon: the rest handed over at the end", test_horizon},
		{"random loads, every policy: streamed = kept", test_random_every_policy},
		{"a sink's error stops the run", test_sink_errors},
		{"memory follows the requests in flight", test_bounded},
		{NULL, NULL},
	};
	return ema_test_run("stream", cases);
}
