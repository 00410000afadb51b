/* test_bounds.c: the bounds against which borrowing is judged
 * (policies/pooled.c, ideal.c, ideal_kv.c), by hand: the pools each
 * gives a GPU, `pooled` equal to static where no tenant needs more than
 * its GPU, equal to one GPU holding the summed KV where one tenant uses
 * an idle peer's memory, and its lender equal to static's whatever the
 * borrower does (a lender's demand comes first and costs it nothing);
 * pooled_tpot's cap on a borrower by hand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "engine.h"
#include "experiment.h"
#include "policy.h"
#include "test_main.h"

static struct ema_experiment *run_sets(const char *path, const char *const *sets, int n)
{
	struct ema_experiment *x = calloc(1, sizeof *x);
	struct ema_error err = {0};
	int rc;

	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	rc = ema_config_load(&x->cfg, path, sets, n, &err);
	if (rc != EMA_OK)
		fprintf(stderr, "config: %s\n", err.msg);
	CU_ASSERT_EQUAL_FATAL(rc, EMA_OK);
	x->quiet = true;
	x->silent = true;
	x->rows_beside = true; /* the engine keeps every record: read below */
	rc = ema_experiment_run(x, &err);
	if (rc != EMA_OK)
		fprintf(stderr, "run: %s\n", err.msg);
	CU_ASSERT_EQUAL_FATAL(rc, EMA_OK);
	return x;
}

static void drop(struct ema_experiment *x)
{
	ema_experiment_free(x);
	free(x);
}

static const struct ema_policy_run *run_of(const struct ema_experiment *x, const char *policy)
{
	for (int i = 0; i < x->n_runs; i++)
		if (strcmp(x->runs[i].policy, policy) == 0)
			return &x->runs[i];
	CU_FAIL_FATAL("policy not run");
	return NULL;
}

/* Tenant ta of run a and tenant tb of run b served every request at the
 * same times. Returns the requests compared. */
static int32_t same_requests(const struct ema_policy_run *a, int ta, const struct ema_policy_run *b,
			     int tb)
{
	int32_t n = ema_engine_n_requests(a->engine, ta), diff = 0;

	CU_ASSERT_EQUAL(n, ema_engine_n_requests(b->engine, tb));
	for (int32_t k = 0; k < n; k++) {
		struct ema_request_record ra, rb;

		ema_engine_request(a->engine, ta, k, &ra);
		ema_engine_request(b->engine, tb, k, &rb);
		if (ra.arrival_ns != rb.arrival_ns || ra.first_token_ns != rb.first_token_ns ||
		    ra.finish_ns != rb.finish_ns || ra.dropped != rb.dropped ||
		    ra.preemptions != rb.preemptions) {
			if (diff++ < 3)
				fprintf(stderr, "  request %d: first token %lld / %lld, finish %lld / %lld\n",
					k, (long long)ra.first_token_ns, (long long)rb.first_token_ns,
					(long long)ra.finish_ns, (long long)rb.finish_ns);
		}
	}
	CU_ASSERT_EQUAL(diff, 0);
	return n;
}

/* h200x2 capped at 24 GiB = 12288 pages of 2 MiB,
 * llama-3-8b's weights 7659 of them, 4629 KV pages. ideal doubles the
 * GPU (24576 pages, 16917 of KV: 3.65x), ideal_kv the KV alone (7659 +
 * 2 x 4629 = 16917 pages), pooled and static keep 12288. */
static void test_pools_by_hand(void)
{
	struct ema_config cfg;
	struct ema_error err = {0};
	struct ema_platform_params p;

	static const char *const at24[] = { "gpu_mem_cap_gib=24" };

	CU_ASSERT_EQUAL_FATAL(ema_config_load(&cfg, NULL, at24, 1, &err), EMA_OK);
	CU_ASSERT_EQUAL(ema_engine_platform_params(&p, &cfg, ema_policy_find("static")), EMA_OK);
	CU_ASSERT_EQUAL(p.pool_pages[0], 12288);
	CU_ASSERT_EQUAL(ema_engine_platform_params(&p, &cfg, ema_policy_find("pooled")), EMA_OK);
	CU_ASSERT_EQUAL(p.pool_pages[0], 12288);
	CU_ASSERT_EQUAL(p.pool_pages[1], 12288);
	CU_ASSERT_EQUAL(ema_engine_platform_params(&p, &cfg, ema_policy_find("ideal")), EMA_OK);
	CU_ASSERT_EQUAL(p.pool_pages[0], 24576);
	CU_ASSERT_EQUAL(ema_engine_platform_params(&p, &cfg, ema_policy_find("ideal_kv")), EMA_OK);
	CU_ASSERT_EQUAL(p.pool_pages[0], 7659 + 2 * 4629);
	CU_ASSERT_EQUAL(p.pool_pages[1], 7659 + 2 * 4629);
}

/* A GPU without a tenant is all KV: ideal_kv doubles all of it. */
static void test_ideal_kv_without_tenant(void)
{
	static const char *const sets[] = {
		"tenants=[{\"name\": \"t0\", \"workload\": {\"duration_s\": 1}}]", "gpu_mem_cap_gib=24"
	};
	struct ema_config cfg;
	struct ema_error err = {0};
	struct ema_platform_params p;
	int rc = ema_config_load(&cfg, NULL, sets, 2, &err);

	if (rc != EMA_OK)
		fprintf(stderr, "config: %s\n", err.msg);
	CU_ASSERT_EQUAL_FATAL(rc, EMA_OK);
	CU_ASSERT_EQUAL(ema_engine_platform_params(&p, &cfg, ema_policy_find("ideal_kv")), EMA_OK);
	CU_ASSERT_EQUAL(p.pool_pages[0], 7659 + 2 * 4629);
	CU_ASSERT_EQUAL(p.pool_pages[1], 2 * 12288);
}

/* No tenant needs more than its GPU (t0 at 3 req/s): pooled borrows
 * nothing and serves every request as static does. */
static void test_pooled_is_static_without_need(void)
{
	static const char *const sets[] = {
		"tenants.0.workload.rate_rps=3", "tenants.0.workload.duration_s=60",
		"tenants.1.workload.duration_s=60", "policies=static,pooled",
	};
	struct ema_experiment *x = run_sets(NULL, sets, 4);
	const struct ema_policy_run *s = run_of(x, "static"), *p = run_of(x, "pooled");

	CU_ASSERT_EQUAL(p->results[0].borrowed_peak_gib, 0.0);
	CU_ASSERT(same_requests(s, 0, p, 0) > 100);
	CU_ASSERT(same_requests(s, 1, p, 1) > 30);
	drop(x);
}

/* One tenant on GPU 0 of two, GPU 1 idle with no tenant: under pooled it
 * holds GPU 0's KV and all of GPU 1, read as local, which is what static
 * gets from one GPU of twice the memory (its weights once: 48 GiB less
 * 7659 pages = 4629 + 12288 KV pages). The same requests, the same
 * times, to the nanosecond. */
static void test_pooled_is_one_gpu_with_the_summed_kv(void)
{
	static const char *const pooled_sets[] = {
		"tenants=[{\"name\": \"t0\", \"workload\": {\"rate_rps\": 20, \"duration_s\": 30}}]",
		"policies=pooled", "gpu_mem_cap_gib=24",
	};
	static const char *const one_sets[] = {
		"tenants=[{\"name\": \"t0\", \"workload\": {\"rate_rps\": 20, \"duration_s\": 30}}]",
		"policies=static", "hardware.n_gpus=1", "gpu_mem_cap_gib=48",
	};
	struct ema_experiment *xp = run_sets(NULL, pooled_sets, 3);
	struct ema_experiment *x1 = run_sets(NULL, one_sets, 4);
	const struct ema_policy_run *p = run_of(xp, "pooled"), *s = run_of(x1, "static");

	/* it did use GPU 1: more than GPU 0's 4629 KV pages at its peak */
	CU_ASSERT(p->results[0].borrowed_peak_gib > 1.0);
	CU_ASSERT_EQUAL(s->results[0].kv_capacity_pages, 4629 + 12288);
	CU_ASSERT(same_requests(p, 0, s, 0) > 500);
	drop(xp);
	drop(x1);
}

/* The lender comes first at no cost: t1's requests are served exactly
 * as under static while t0, overloaded, borrows most of GPU 1 and is
 * taken back from whenever t1 grows. */
static void test_pooled_lender_is_static(void)
{
	static const char *const sets[] = {
		"tenants.0.workload.rate_rps=24", "tenants.0.workload.duration_s=120",
		"tenants.1.workload.rate_rps=3", "tenants.1.workload.duration_s=120",
		"policies=static,pooled",
	};
	struct ema_experiment *x = run_sets(NULL, sets, 5);
	const struct ema_policy_run *s = run_of(x, "static"), *p = run_of(x, "pooled");

	CU_ASSERT(p->results[0].borrowed_peak_gib > 2.0);
	CU_ASSERT(p->results[1].lent_peak_gib > 2.0);
	CU_ASSERT(same_requests(s, 1, p, 1) > 60);
	/* and the borrower gains */
	CU_ASSERT(p->results[0].metrics.steady_tok_s > 1.1 * s->results[0].metrics.steady_tok_s);
	drop(x);
}

/* pooled_tpot: the pool at a borrower TPOT budget. h200x2 at 24 GiB,
 * llama-3-8b: T0 = 0.03 ms + (7659 + 4629) x 2 MiB / (4357.44 x 0.70
 * GB/s) = 8.4782 ms; the budget's 10% of it at 3050.2 GB/s is 2.5859 GB,
 * 1233 pages of 2 MiB (2.408 GiB); at 20%, 2466 pages (4.816 GiB). The
 * overloaded t0 borrows up to the cap and no further (pooled takes 5 GiB
 * and more), and the lender is still served as under static. */
static void test_pooled_tpot_caps_the_borrower(void)
{
	static const char *const sets[] = {
		"tenants.0.workload.rate_rps=24", "tenants.0.workload.duration_s=120",
		"tenants.1.workload.rate_rps=3", "tenants.1.workload.duration_s=120",
		"policies=static,pooled,pooled_tpot", "gpu_mem_cap_gib=24",
		"policy.pooled_tpot.tpot_budget=0.2",
	};
	struct ema_experiment *x = run_sets(NULL, sets, 6);
	const struct ema_policy_run *s = run_of(x, "static"), *p = run_of(x, "pooled"),
				    *pt = run_of(x, "pooled_tpot");

	CU_ASSERT_DOUBLE_EQUAL(pt->results[0].borrowed_peak_gib, 1233 * 2 / 1024.0, 1e-9);
	CU_ASSERT(p->results[0].borrowed_peak_gib > 5.0);
	CU_ASSERT(same_requests(s, 1, pt, 1) > 60);
	drop(x);
	x = run_sets(NULL, sets, 7);
	pt = run_of(x, "pooled_tpot");
	CU_ASSERT_DOUBLE_EQUAL(pt->results[0].borrowed_peak_gib, 2466 * 2 / 1024.0, 1e-9);
	drop(x);
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{ "pools by hand: static, pooled, ideal, ideal_kv", test_pools_by_hand },
		{ "ideal_kv: a GPU without a tenant is all KV", test_ideal_kv_without_tenant },
		{ "pooled = static where no tenant needs more than its GPU",
		  test_pooled_is_static_without_need },
		{ "pooled = one GPU with the summed KV", test_pooled_is_one_gpu_with_the_summed_kv },
		{ "pooled: the lender is served as under static", test_pooled_lender_is_static },
		{ "pooled_tpot: the borrower stops at its TPOT budget", test_pooled_tpot_caps_the_borrower },
		{ NULL, NULL }
	};

	if (ema_engine_register_policies(ema_policy_table) != EMA_OK)
		return 99;
	return ema_test_run("bounds", cases);
}
