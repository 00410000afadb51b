/* test_experiment.c: end-to-end tests of src/experiment.c through its
 * public API: the determinism oracle (the same scenario twice, and with its
 * policies in reverse order, gives byte-identical summary rows), the
 * quantile definition on hand-computed cases, a one-request scenario whose
 * summary is checked against that request's own timestamps, and the
 * comparison columns (static against itself, the lender guarantee), and
 * the run folder as written: its files, and the reason of a failed
 * write. */
#include <errno.h>
#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "experiment.h"
#include "rows.h"
#include "test_main.h"

/* Short enough that each test runs in well under a second, long enough
 * that the borrowing policies do borrow (tenant 0 overloads its GPU). */
#define SHORT_T0 "tenants.0.workload.duration_s=10"
#define SHORT_T1 "tenants.1.workload.duration_s=10"

/* Column numbers (0-based) in summary.csv, checked against the header by
 * test_summary_shape so that a reordered header fails there, not here. */
enum { COL_POLICY = 0, COL_TENANT = 1, COL_COMPLETED = 4, COL_DROPPED = 5, COL_THROUGHPUT = 6 };

/* Loads the embedded default scenario with overrides and runs it quietly.
 * Returns NULL (after a CUnit failure) when loading or running fails. */
static struct ema_experiment *run_default_keeping(const char *const *sets, int n, bool keep);

static struct ema_experiment *run_default(const char *const *sets, int n)
{
	return run_default_keeping(sets, n, false);
}

/* run_default; with `keep` the engines keep every request's record, for a
 * test that reads them after the run (rows_beside: no record sink). */
static struct ema_experiment *run_default_keeping(const char *const *sets, int n, bool keep)
{
	struct ema_experiment *x = calloc(1, sizeof *x);
	struct ema_error err = {0};
	int rc;

	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	rc = ema_config_load(&x->cfg, NULL, sets, n, &err);
	if (rc != EMA_OK)
		fprintf(stderr, "config: %s\n", err.msg);
	CU_ASSERT_EQUAL(rc, EMA_OK);
	if (rc != EMA_OK) {
		free(x);
		return NULL;
	}
	x->quiet = true;
	x->rows_beside = keep;
	rc = ema_experiment_run(x, &err);
	if (rc != EMA_OK)
		fprintf(stderr, "run: %s\n", err.msg);
	CU_ASSERT_EQUAL(rc, EMA_OK);
	if (rc != EMA_OK) {
		ema_experiment_free(x);
		free(x);
		return NULL;
	}
	return x;
}

static void drop(struct ema_experiment *x)
{
	if (x != NULL) {
		ema_experiment_free(x);
		free(x);
	}
}

/* summary.csv of x as a malloc'd string. */
static char *summary_text(const struct ema_experiment *x)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(ema_experiment_write_summary_csv(x, f), EMA_OK);
	fclose(f);
	return buf;
}

/* The rows of a summary whose first field is policy, concatenated in
 * their order, as a malloc'd string. */
static char *rows_of(const char *csv, const char *policy)
{
	size_t plen = strlen(policy), cap = strlen(csv) + 1, len = 0;
	char *out = calloc(1, cap);
	const char *line = strchr(csv, '\n'); /* skip the header */

	CU_ASSERT_PTR_NOT_NULL_FATAL(out);
	while (line != NULL && *++line != '\0') {
		const char *end = strchr(line, '\n');
		size_t n = end ? (size_t)(end - line) + 1 : strlen(line);

		if (strncmp(line, policy, plen) == 0 && line[plen] == ',') {
			memcpy(out + len, line, n);
			len += n;
		}
		line = end;
	}
	return out;
}

/* Field k (0-based) of a CSV line, copied into buf. */
static const char *field(const char *line, int k, char *buf, size_t n)
{
	size_t i = 0;

	for (int c = 0; c < k && *line && *line != '\n'; line++)
		if (*line == ',')
			c++;
	while (line[i] && line[i] != ',' && line[i] != '\n' && i + 1 < n) {
		buf[i] = line[i];
		i++;
	}
	buf[i] = '\0';
	return buf;
}

/* 0-based number of the column named `name` in the header line of csv,
 * or -1. */
static int column_of(const char *csv, const char *name)
{
	size_t n = strlen(name);
	int k = 0;

	for (const char *c = csv; *c && *c != '\n'; k++) {
		if (strncmp(c, name, n) == 0 && (c[n] == ',' || c[n] == '\n' || c[n] == '\0'))
			return k;
		while (*c && *c != ',' && *c != '\n')
			c++;
		if (*c == ',')
			c++;
	}
	return -1;
}

static int count_fields(const char *line)
{
	int n = 1;

	for (; *line && *line != '\n'; line++)
		if (*line == ',')
			n++;
	return n;
}

/* ---- determinism oracle ---- */

static void test_same_run_twice(void)
{
	static const char *const sets[] = {SHORT_T0, SHORT_T1};
	struct ema_experiment *a = run_default(sets, 2), *b;
	char *sa, *sb;

	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	b = run_default(sets, 2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	sa = summary_text(a);
	sb = summary_text(b);
	CU_ASSERT_STRING_EQUAL(sa, sb);
	/* one header and one row per (policy, tenant) */
	{
		int lines = 0;

		for (const char *c = sa; *c; c++)
			lines += *c == '\n';
		CU_ASSERT_EQUAL(lines, 1 + a->cfg.n_policies * a->cfg.n_tenants);
	}
	free(sa);
	free(sb);
	drop(a);
	drop(b);
}

/* Each policy runs on the same requests from its own fresh engine, so the
 * order in which the policies are listed must not change any of them. */
static void test_policy_order(void)
{
	static const char *const fwd[] = {SHORT_T0, SHORT_T1};
	static const char *const rev[] = {
		SHORT_T0, SHORT_T1, "policies=ema,remote_direct,host_swap,ideal,ideal_kv,pooled,static",
	};
	struct ema_experiment *a = run_default(fwd, 2), *b;
	char *sa, *sb;

	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	b = run_default(rev, 3);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	CU_ASSERT_EQUAL_FATAL(a->cfg.n_policies, 7);
	CU_ASSERT_EQUAL_FATAL(b->cfg.n_policies, 7);
	CU_ASSERT_STRING_EQUAL(b->cfg.policies[0], a->cfg.policies[6]);
	sa = summary_text(a);
	sb = summary_text(b);
	for (int i = 0; i < a->cfg.n_policies; i++) {
		char *ra = rows_of(sa, a->cfg.policies[i]);
		char *rb = rows_of(sb, a->cfg.policies[i]);

		CU_ASSERT(ra[0] != '\0');
		CU_ASSERT_STRING_EQUAL(ra, rb);
		if (strcmp(ra, rb) != 0)
			fprintf(stderr, "policy %s depends on the order:\n%s---\n%s",
				a->cfg.policies[i], ra, rb);
		free(ra);
		free(rb);
	}
	free(sa);
	free(sb);
	drop(a);
	drop(b);
}

/* A different seed must give other requests (else the seed is ignored). */
static void test_seed_matters(void)
{
	static const char *const s1[] = {SHORT_T0, SHORT_T1, "policies=static"};
	static const char *const s2[] = {SHORT_T0, SHORT_T1, "policies=static", "seed=2"};
	struct ema_experiment *a = run_default(s1, 3), *b;
	char *sa, *sb;

	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	b = run_default(s2, 4);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	sa = summary_text(a);
	sb = summary_text(b);
	CU_ASSERT(strcmp(sa, sb) != 0);
	free(sa);
	free(sb);
	drop(a);
	drop(b);
}

/* ---- summary columns ---- */

static void test_summary_shape(void)
{
	static const char *const sets[] = {SHORT_T0, SHORT_T1};
	static const char head[] =
		"policy,tenant,gpu,requests,completed,dropped,throughput_tok_s,req_s,"
		"ttft_p50_ms,ttft_p90_ms,ttft_p99_ms,tpot_p50_ms,tpot_p90_ms,tpot_p99_ms,"
		"e2e_p50_ms,e2e_p99_ms,preemptions,kv_peak_gib";
	struct ema_experiment *x = run_default(sets, 2);
	char *s;
	int cols;

	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	s = summary_text(x);
	CU_ASSERT_EQUAL(strncmp(s, head, sizeof head - 1), 0);
	cols = count_fields(s);
	for (const char *line = strchr(s, '\n'); line && line[1]; line = strchr(line + 1, '\n'))
		CU_ASSERT_EQUAL(count_fields(line + 1), cols);
	free(s);
	drop(x);
}

/* vs_static_*_paired of run i's tenant ti, recomputed: each request's
 * TTFT and TPOT over its own under static (run 0 of the default scenario),
 * sorted, the middle one (or the mean of the middle two). */
static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double middle(double *v, size_t n)
{
	if (n == 0)
		return NAN;
	qsort(v, n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void paired_by_hand(const struct ema_experiment *x, int i, int ti,
			   const struct ema_tenant_result *r)
{
	const struct ema_engine *a = x->runs[i].engine, *s = x->runs[0].engine;
	int32_t n = ema_engine_n_requests(a, ti);
	double *vt = calloc((size_t)n + 1, sizeof *vt), *vp = calloc((size_t)n + 1, sizeof *vp);
	size_t nt = 0, np = 0;

	CU_ASSERT_STRING_EQUAL_FATAL(x->runs[0].policy, "static");
	CU_ASSERT_FATAL(vt != NULL && vp != NULL);
	for (int32_t k = 0; k < n; k++) {
		struct ema_request_record ra, rs;

		ema_engine_request(a, ti, k, &ra);
		ema_engine_request(s, ti, k, &rs);
		CU_ASSERT_EQUAL(ra.arrival_ns, rs.arrival_ns); /* the same requests */
		if (ra.finish_ns < 0 || rs.finish_ns < 0)
			continue;
		vt[nt++] = (double)(ra.first_token_ns - ra.arrival_ns) /
			   (double)(rs.first_token_ns - rs.arrival_ns);
		if (ra.output_tokens > 1)
			vp[np++] = (double)(ra.finish_ns - ra.first_token_ns) /
				   (double)(rs.finish_ns - rs.first_token_ns);
	}
	CU_ASSERT(nt > 0 && np > 0);
	CU_ASSERT_DOUBLE_EQUAL(r->vs_static_ttft_paired, middle(vt, nt), 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(r->vs_static_tpot_paired, middle(vp, np), 1e-12);
	free(vt);
	free(vp);
}

/* Static compared with itself is exactly 1; only a tenant whose GPU lent
 * pages gets a guarantee verdict. */
static void test_comparisons(void)
{
	static const char *const sets[] = {SHORT_T0, SHORT_T1};
	struct ema_experiment *x = run_default_keeping(sets, 2, true); /* (paired_by_hand) */
	int lenders = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	for (int i = 0; i < x->n_runs; i++)
		for (int ti = 0; ti < x->cfg.n_tenants; ti++) {
			const struct ema_tenant_result *r = &x->runs[i].results[ti];

			if (strcmp(r->policy, "static") == 0) {
				CU_ASSERT(r->vs_static_throughput == 1.0);
				CU_ASSERT(r->vs_static_ttft_p50 == 1.0);
				CU_ASSERT(r->vs_static_tpot_p99 == 1.0);
				CU_ASSERT(r->vs_static_ttft_paired == 1.0);
				CU_ASSERT(r->vs_static_tpot_paired == 1.0);
				CU_ASSERT(r->vs_static_generated == 1.0);
			} else {
				/* the median of each request's ratio, from the
				 * requests one by one */
				paired_by_hand(x, i, ti, r);
			}
			if (strcmp(r->policy, "ideal") == 0)
				CU_ASSERT(r->vs_ideal_throughput == 1.0);
			CU_ASSERT_PTR_NOT_NULL_FATAL(r->guarantee);
			if (r->lent_peak_gib > 0) {
				lenders++;
				CU_ASSERT(strcmp(r->guarantee, "ok") == 0 ||
					  strcmp(r->guarantee, "violated") == 0);
			} else {
				CU_ASSERT_STRING_EQUAL(r->guarantee, "-");
			}
			CU_ASSERT_EQUAL(r->completed, r->requests);
			/* no horizon: every token generated finished with its
			 * request, over the same span */
			CU_ASSERT(r->generated_tok_s == r->throughput_tok_s);
		}
	/* the default scenario exists to show lending: t1 lends to t0 */
	CU_ASSERT(lenders > 0);
	/* and the CSV says the same: static rows carry 1 and "-" */
	{
		char *s = summary_text(x), *rows = rows_of(s, "static");
		char buf[64];
		int c_thr = column_of(s, "vs_static_throughput");
		int c_steady = column_of(s, "vs_static_steady_tok_s");
		int c_g = column_of(s, "lender_guarantee");
		int c_gen = column_of(s, "vs_static_generated_tok_s");

		CU_ASSERT_FATAL(c_thr >= 0 && c_steady >= 0 && c_g >= 0 && c_gen >= 0);
		for (const char *line = rows; *line; line = strchr(line, '\n') + 1) {
			CU_ASSERT_STRING_EQUAL(field(line, c_thr, buf, sizeof buf), "1");
			CU_ASSERT_STRING_EQUAL(field(line, c_steady, buf, sizeof buf), "1");
			CU_ASSERT_STRING_EQUAL(field(line, c_g, buf, sizeof buf), "-");
			CU_ASSERT_STRING_EQUAL(field(line, c_gen, buf, sizeof buf), "1");
		}
		free(rows);
		free(s);
	}
	drop(x);
}

/* ---- quantiles: GSL's definition, interpolating between order
 * statistics at position (n - 1) q ---- */

static void test_quantile(void)
{
	double one[] = {7};
	double odd[] = {5, 1, 4, 2, 3};
	double even[] = {40, 10, 30, 20};

	CU_ASSERT(isnan(ema_quantile(one, 0, 0.5)));
	CU_ASSERT_DOUBLE_EQUAL(ema_quantile(one, 1, 0.0), 7, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(ema_quantile(one, 1, 0.5), 7, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(ema_quantile(one, 1, 1.0), 7, 1e-12);
	/* odd: 1 2 3 4 5 */
	CU_ASSERT_DOUBLE_EQUAL(ema_quantile(odd, 5, 0.0), 1, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(ema_quantile(odd, 5, 1.0), 5, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(ema_quantile(odd, 5, 0.5), 3, 1e-12);
	/* 4 x 0.9 = 3.6: 4 + 0.6 (5 - 4) */
	CU_ASSERT_DOUBLE_EQUAL(ema_quantile(odd, 5, 0.9), 4.6, 1e-12);
	/* sorted in place, as documented */
	for (int i = 0; i < 5; i++)
		CU_ASSERT_DOUBLE_EQUAL(odd[i], i + 1, 0);
	/* even: 10 20 30 40; the median lies between the middle two */
	CU_ASSERT_DOUBLE_EQUAL(ema_quantile(even, 4, 0.0), 10, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(ema_quantile(even, 4, 1.0), 40, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(ema_quantile(even, 4, 0.5), 25, 1e-12);
	/* 3 x 0.9 = 2.7: 30 + 0.7 (40 - 30) */
	CU_ASSERT_DOUBLE_EQUAL(ema_quantile(even, 4, 0.9), 37, 1e-12);
	/* 3 x 0.99 = 2.97 */
	CU_ASSERT_DOUBLE_EQUAL(ema_quantile(even, 4, 0.99), 39.7, 1e-12);
	/* ties */
	{
		double t[] = {2, 2, 2, 9};

		CU_ASSERT_DOUBLE_EQUAL(ema_quantile(t, 4, 0.5), 2, 1e-12);
	}
}

/* ema_quantiles (a selection per quantile) gives ema_quantile's doubles
 * (a sort), bit for bit: random arrays of 1 to 300 values and one of
 * 19,366, with many ties or none, for ascending sets of quantiles, equal
 * ones, the ends, and a set out of order (which falls back on sorting). */
static void test_quantiles_select(void)
{
	static const double sets[][4] = {
		{ 0.5, 0.9, 0.99, -1 }, { 0.5, 0.99, -1, -1 }, { 0.5, -1, -1, -1 },
		{ 0.0, 1.0, -1, -1 }, { 0.9, 0.9, 0.99, -1 }, { 0.99, 0.5, 0.9, -1 },
		{ 0.25, 0.5, 0.75, 1.0 },
	};
	static double a[20000], b[20000];
	uint64_t x = 88172645463325252ULL;
	int bad = 0;

	for (int round = 0; round < 400; round++) {
		size_t n = round == 399 ? 19366 : 1 + (size_t)round % 300;

		for (size_t i = 0; i < n; i++) {
			x ^= x << 13; x ^= x >> 7; x ^= x << 17;
			a[i] = round % 3 == 0 ? (double)(x % 7) : (double)(x % 1000000007ULL) * 1e-6;
		}
		for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++) {
			double got[4], want[4];
			int k = 0;

			while (k < 4 && sets[s][k] >= 0)
				k++;
			memcpy(b, a, n * sizeof *a);
			ema_quantiles(b, n, sets[s], k, got);
			for (int i = 0; i < k; i++) {
				memcpy(b, a, n * sizeof *a);
				want[i] = ema_quantile(b, n, sets[s][i]);
				bad += memcmp(&got[i], &want[i], sizeof got[i]) != 0;
			}
		}
	}
	CU_ASSERT_EQUAL(bad, 0);
	{
		double none[1], q = 0.5, out = 0;

		ema_quantiles(none, 0, &q, 1, &out);
		CU_ASSERT(isnan(out));
	}
}

/* ---- steady state, per-user throughput and SLOs by hand ---- */

#define S_NS 1000000000LL

/* Five requests of one tenant (times in s): A arrives at 0, first token
 * at 1, done at 3 with 11 tokens (TTFT 1000 ms, TPOT 200 ms, 11/3 tok/s);
 * B 2 / 2.5 / 6, 8 tokens (500 ms, 500 ms, 2 tok/s); C 5 / 5.1 / 9, one
 * token (100 ms, no TPOT, 0.25 tok/s); D 8 / 9 / 12, 31 tokens (1000 ms,
 * 100 ms, 7.75 tok/s); E arrives at 10 and is dropped. */
static const struct ema_request_record five[] = {
	{ 0, 0, 1 * S_NS, 3 * S_NS, 10, 11, 0, false, 11 },
	{ 1, 2 * S_NS, 2500000000LL, 6 * S_NS, 10, 8, 0, false, 8 },
	{ 2, 5 * S_NS, 5100000000LL, 9 * S_NS, 10, 1, 0, false, 1 },
	{ 3, 8 * S_NS, 9 * S_NS, 12 * S_NS, 10, 31, 0, false, 31 },
	{ 4, 10 * S_NS, -1, -1, 10, 5, 0, true, 0 },
};

static void test_metrics_by_hand(void)
{
	struct ema_metrics_cfg automatic = { -1, 0 }, fixed = { 0, 12 }, late = { 20, 0 };
	struct ema_slo_cfg none = { 0, 0 }, both = { 600, 300 }, tpot = { 0, 300 };
	struct ema_metrics m;

	/* the window: last arrival 10 s, warm-up 10% of it */
	CU_ASSERT_EQUAL(ema_metrics_compute(five, 5, &automatic, &none, &m), EMA_OK);
	CU_ASSERT_DOUBLE_EQUAL(m.window_start_s, 1, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(m.window_end_s, 10, 1e-12);
	/* A, B and C finish inside [1, 10]: 11 + 8 + 1 tokens over 9 s;
	 * D finishes in the drain, after the last arrival */
	CU_ASSERT_DOUBLE_EQUAL(m.steady_tok_s, 20.0 / 9, 1e-12);
	/* per user: 11/3, 2, 0.25, 7.75; the median lies between 2 and 11/3 */
	CU_ASSERT_DOUBLE_EQUAL(m.user_tok_s_mean, (11.0 / 3 + 2 + 0.25 + 7.75) / 4, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(m.user_tok_s_p50, (2 + 11.0 / 3) / 2, 1e-12);
	/* no target: nothing to attain */
	CU_ASSERT(isnan(m.slo_attainment));
	CU_ASSERT(isnan(m.goodput_req_s));

	/* TTFT <= 600 ms and TPOT <= 300 ms: A (1000 ms) and D (1000 ms)
	 * miss the TTFT, B (500 ms) the TPOT; C meets both, inside the window */
	CU_ASSERT_EQUAL(ema_metrics_compute(five, 5, &automatic, &both, &m), EMA_OK);
	CU_ASSERT_DOUBLE_EQUAL(m.slo_attainment, 1.0 / 4, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(m.goodput_req_s, 1.0 / 9, 1e-12);
	/* TPOT alone: B misses; A, C, D meet it, A and C inside the window */
	CU_ASSERT_EQUAL(ema_metrics_compute(five, 5, &automatic, &tpot, &m), EMA_OK);
	CU_ASSERT_DOUBLE_EQUAL(m.slo_attainment, 3.0 / 4, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(m.goodput_req_s, 2.0 / 9, 1e-12);

	/* a window given: [0, 12] holds all four finishes (bounds included) */
	CU_ASSERT_EQUAL(ema_metrics_compute(five, 5, &fixed, &none, &m), EMA_OK);
	CU_ASSERT_DOUBLE_EQUAL(m.window_start_s, 0, 0);
	CU_ASSERT_DOUBLE_EQUAL(m.steady_tok_s, 51.0 / 12, 1e-12);
	/* per-user figures do not depend on the window */
	CU_ASSERT_DOUBLE_EQUAL(m.user_tok_s_p50, (2 + 11.0 / 3) / 2, 1e-12);

	/* a warm-up past the last arrival leaves no window */
	CU_ASSERT_EQUAL(ema_metrics_compute(five, 5, &late, &both, &m), EMA_OK);
	CU_ASSERT(isnan(m.steady_tok_s));
	CU_ASSERT(isnan(m.window_start_s));
	CU_ASSERT(isnan(m.goodput_req_s));
	CU_ASSERT_DOUBLE_EQUAL(m.slo_attainment, 1.0 / 4, 1e-12);

	/* only the dropped request: a window, no finished request */
	CU_ASSERT_EQUAL(ema_metrics_compute(five + 4, 1, &automatic, &both, &m), EMA_OK);
	CU_ASSERT_DOUBLE_EQUAL(m.steady_tok_s, 0, 0);
	CU_ASSERT_DOUBLE_EQUAL(m.goodput_req_s, 0, 0);
	CU_ASSERT(isnan(m.user_tok_s_mean));
	CU_ASSERT(isnan(m.slo_attainment));
	/* no request at all */
	CU_ASSERT_EQUAL(ema_metrics_compute(five, 0, &automatic, &both, &m), EMA_OK);
	CU_ASSERT(isnan(m.steady_tok_s));
	CU_ASSERT(isnan(m.user_tok_s_p50));
}

/* ---- one request by hand ---- */

/* One tenant, one request of fixed lengths: every figure of its summary
 * row follows from the request's three timestamps. */
static void test_one_request(void)
{
	static const char *const sets[] = {
		"tenants.0.workload.prompt.kind=fixed",
		"tenants.0.workload.prompt.mean=100",
		"tenants.0.workload.output.kind=fixed",
		"tenants.0.workload.output.mean=10",
		"tenants.0.workload.max_requests=1",
	};
	char path[4096];
	struct ema_experiment *x = calloc(1, sizeof *x);
	struct ema_error err = {0};
	const struct ema_tenant_result *r;
	struct ema_request_record rec;
	const struct ema_request_record *q;
	double ttft, e2e, tpot;
	int rc;

	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	snprintf(path, sizeof path, "%s/tests/data/cli/one_request.json", ema_test_srcdir());
	rc = ema_config_load(&x->cfg, path, sets, 5, &err);
	if (rc != EMA_OK)
		fprintf(stderr, "config: %s\n", err.msg);
	CU_ASSERT_EQUAL_FATAL(rc, EMA_OK);
	CU_ASSERT_EQUAL_FATAL(x->cfg.n_tenants, 1);
	x->quiet = true;
	rc = ema_experiment_run(x, &err);
	if (rc != EMA_OK)
		fprintf(stderr, "run: %s\n", err.msg);
	CU_ASSERT_EQUAL_FATAL(rc, EMA_OK);
	CU_ASSERT_EQUAL_FATAL(x->n_runs, 1);
	CU_ASSERT_EQUAL_FATAL(ema_engine_n_requests(x->runs[0].engine, 0), 1);

	ema_engine_request(x->runs[0].engine, 0, 0, &rec);
	q = &rec;
	r = &x->runs[0].results[0];
	CU_ASSERT_EQUAL(q->prompt_tokens, 100);
	CU_ASSERT_EQUAL(q->output_tokens, 10);
	CU_ASSERT(q->arrival_ns >= 0);
	CU_ASSERT(q->first_token_ns > q->arrival_ns);
	CU_ASSERT(q->finish_ns > q->first_token_ns);
	CU_ASSERT_STRING_EQUAL(r->tenant, "solo");
	CU_ASSERT_EQUAL(r->requests, 1);
	CU_ASSERT_EQUAL(r->completed, 1);
	CU_ASSERT_EQUAL(r->preemptions, 0);

	ttft = (double)(q->first_token_ns - q->arrival_ns) * 1e-6;
	e2e = (double)(q->finish_ns - q->arrival_ns) * 1e-6;
	tpot = (double)(q->finish_ns - q->first_token_ns) * 1e-6 / 9;
	/* with one value, every quantile is that value */
	for (int k = 0; k < 3; k++) {
		CU_ASSERT_DOUBLE_EQUAL(r->ttft_ms[k], ttft, 1e-9);
		CU_ASSERT_DOUBLE_EQUAL(r->tpot_ms[k], tpot, 1e-9);
	}
	CU_ASSERT_DOUBLE_EQUAL(r->e2e_ms[0], e2e, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(r->e2e_ms[1], e2e, 1e-9);
	/* TTFT = e2e - (output - 1) x TPOT */
	CU_ASSERT_DOUBLE_EQUAL(r->ttft_ms[0], r->e2e_ms[0] - 9 * r->tpot_ms[0], 1e-6);
	/* throughput = output tokens over the span from arrival to finish */
	CU_ASSERT_DOUBLE_EQUAL(r->throughput_tok_s,
			       10.0 / ((double)(q->finish_ns - q->arrival_ns) * 1e-9), 1e-6);
	CU_ASSERT_DOUBLE_EQUAL(r->req_s, 1.0 / ((double)(q->finish_ns - q->arrival_ns) * 1e-9),
			       1e-9);
	/* per-user throughput: its 10 tokens over its end-to-end time */
	CU_ASSERT_DOUBLE_EQUAL(r->metrics.user_tok_s_mean, 10.0 / (e2e * 1e-3), 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(r->metrics.user_tok_s_p50, 10.0 / (e2e * 1e-3), 1e-9);
	/* its finish lies after its arrival, the window's end: no steady
	 * tokens (or no window at all when it arrived at 0) */
	CU_ASSERT(isnan(r->metrics.steady_tok_s) || r->metrics.steady_tok_s == 0);
	/* alone on its GPU: nothing borrowed, lent, or stalled on */
	CU_ASSERT_DOUBLE_EQUAL(r->borrowed_peak_gib, 0, 0);
	CU_ASSERT_DOUBLE_EQUAL(r->remote_share, 0, 0);
	CU_ASSERT_STRING_EQUAL(r->guarantee, "-");
	/* 110 tokens of llama-3-8b KV (128 KiB each) fit in 14 MiB: at most
	 * 7 pages of 2 MiB, at least one */
	CU_ASSERT(r->kv_peak_gib > 0);
	CU_ASSERT(r->kv_peak_gib <= 7 * 2.0 / 1024 + 1e-12);

	/* and the CSV row carries the same numbers */
	{
		char *s = summary_text(x), buf[64];
		const char *row = strchr(s, '\n') + 1;

		CU_ASSERT_STRING_EQUAL(field(row, COL_POLICY, buf, sizeof buf), "static");
		CU_ASSERT_STRING_EQUAL(field(row, COL_TENANT, buf, sizeof buf), "solo");
		CU_ASSERT_STRING_EQUAL(field(row, COL_COMPLETED, buf, sizeof buf), "1");
		CU_ASSERT_STRING_EQUAL(field(row, COL_DROPPED, buf, sizeof buf), "0");
		CU_ASSERT_DOUBLE_EQUAL(atof(field(row, COL_THROUGHPUT, buf, sizeof buf)),
				       r->throughput_tok_s, r->throughput_tok_s * 1e-5);
		free(s);
	}
	drop(x);
}

/* generated_tok_s: one request of 100 + 10 tokens alone. Without a
 * horizon it generates its 10 tokens and the figure is throughput_tok_s,
 * to the bit. Cut by a horizon H a third and two thirds of the way
 * through its decode, it is unfinished (no throughput at all), has
 * generated what its steps produced by H, 1 + (H - first token) / TPOT
 * within one step (its steps slow as its context grows, by well under a
 * step over nine), more at the later cut, and the figure is those tokens
 * over H - arrival. */
static struct ema_experiment *one_request_run(double horizon_s)
{
	char path[4096], hs[64];
	const char *sets[] = {
		"tenants.0.workload.prompt.kind=fixed", "tenants.0.workload.prompt.mean=100",
		"tenants.0.workload.output.kind=fixed", "tenants.0.workload.output.mean=10",
		"tenants.0.workload.max_requests=1",    hs,
	};
	struct ema_experiment *x = calloc(1, sizeof *x);
	struct ema_error err = {0};

	if (x == NULL)
		return NULL;
	snprintf(hs, sizeof hs, "horizon_s=%.9f", horizon_s);
	snprintf(path, sizeof path, "%s/tests/data/cli/one_request.json", ema_test_srcdir());
	if (ema_config_load(&x->cfg, path, sets, 6, &err) != EMA_OK ||
	    (x->quiet = true, ema_experiment_run(x, &err)) != EMA_OK) {
		fprintf(stderr, "one request, horizon %g s: %s\n", horizon_s, err.msg);
		drop(x);
		return NULL;
	}
	return x;
}

static void test_generated_tokens(void)
{
	struct ema_experiment *x = one_request_run(0);
	struct ema_request_record q, c;
	int32_t last = 0;
	double tpot_ns;

	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	ema_engine_request(x->runs[0].engine, 0, 0, &q);
	CU_ASSERT_EQUAL(q.generated_tokens, 10);
	CU_ASSERT(x->runs[0].results[0].generated_tok_s == x->runs[0].results[0].throughput_tok_s);
	CU_ASSERT(x->runs[0].results[0].vs_static_generated == 1.0);
	drop(x);
	CU_ASSERT_FATAL(q.first_token_ns > q.arrival_ns && q.finish_ns > q.first_token_ns);
	tpot_ns = (double)(q.finish_ns - q.first_token_ns) / 9;
	for (int k = 1; k <= 2; k++) {
		int64_t h = q.first_token_ns + (q.finish_ns - q.first_token_ns) * k / 3;
		const struct ema_tenant_result *r;
		int64_t h_ns;

		x = one_request_run((double)h * 1e-9);
		CU_ASSERT_PTR_NOT_NULL_FATAL(x);
		h_ns = llround(x->cfg.horizon_s * 1e9);
		r = &x->runs[0].results[0];
		ema_engine_request(x->runs[0].engine, 0, 0, &c);
		CU_ASSERT_EQUAL(c.arrival_ns, q.arrival_ns);
		CU_ASSERT_EQUAL(c.first_token_ns, q.first_token_ns);
		CU_ASSERT(c.finish_ns < 0);
		CU_ASSERT_EQUAL(r->completed, 0);
		CU_ASSERT(c.generated_tokens >= 1 && c.generated_tokens <= 9);
		CU_ASSERT(fabs(c.generated_tokens - (1 + (double)(h_ns - q.first_token_ns) / tpot_ns)) <= 1);
		CU_ASSERT(c.generated_tokens > last);
		last = c.generated_tokens;
		CU_ASSERT_DOUBLE_EQUAL(r->generated_tok_s,
				       c.generated_tokens / ((double)(h_ns - q.arrival_ns) * 1e-9),
				       1e-9 * r->generated_tok_s);
		CU_ASSERT(isnan(r->throughput_tok_s) || r->throughput_tok_s == 0);
		drop(x);
	}
}

/* ---- writing ---- */

/* A full disk: the error names the file and says why, whether the writer
 * sees it (unbuffered) or only the close does (buffered). */
static void test_write_full_disk(void)
{
	static const char *const sets[] = {SHORT_T0, SHORT_T1, "policies=static"};
	struct ema_experiment *x;
	struct ema_error err = {0};
	FILE *f;
	int rc;

	f = fopen("/dev/full", "w");
	if (f == NULL) {
		fprintf(stderr, "note: no /dev/full, test skipped\n");
		return;
	}
	x = run_default(sets, 3);
	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	errno = 0;
	rc = ema_experiment_write_summary_csv(x, f);
	rc = ema_file_close(f, rc, "out/summary.csv", &err);
	CU_ASSERT_EQUAL(rc, EMA_ERR_IO);
	CU_ASSERT_STRING_EQUAL(err.msg, "out/summary.csv: write failed: No space left on device");

	f = fopen("/dev/full", "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	setvbuf(f, NULL, _IONBF, 0);
	memset(&err, 0, sizeof err);
	errno = 0;
	rc = ema_experiment_write_summary_csv(x, f);
	CU_ASSERT_EQUAL(rc, EMA_ERR_IO);
	rc = ema_file_close(f, rc, "out/summary.csv", &err);
	CU_ASSERT_EQUAL(rc, EMA_ERR_IO);
	CU_ASSERT_STRING_EQUAL(err.msg, "out/summary.csv: write failed: No space left on device");
	drop(x);
}

/* Written into the reserved folder and renamed: the files are there,
 * summary.csv is the summary, nothing temporary is left. */
static void test_write_folder(void)
{
	static const char *const sets[] = {SHORT_T0, SHORT_T1, "policies=static,ema"};
	static const char *const files[] = {
		"config.json", "summary.csv", "requests.csv", "timeline.csv", "links.csv",
		"transfers.csv", "run.json",
	};
	struct ema_experiment *x = run_default(sets, 3);
	struct ema_error err = {0};
	struct ema_outdir od;
	char top[4096], path[4200], tmp[sizeof od.tmp];
	const char *t = getenv("TMPDIR");
	struct stat st;

	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	snprintf(top, sizeof top, "%s/ema-experiment.XXXXXX", t ? t : "/tmp");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(top));
	snprintf(path, sizeof path, "%s/run", top);
	CU_ASSERT_EQUAL_FATAL(ema_outdir_reserve(&od, "--out", path, NULL, &err), EMA_OK);
	snprintf(tmp, sizeof tmp, "%s", od.tmp);
	CU_ASSERT_EQUAL(ema_experiment_write(x, &od, false, &err), EMA_OK);
	CU_ASSERT(stat(tmp, &st) != 0);
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		snprintf(path, sizeof path, "%s/run/%s", top, files[i]);
		CU_ASSERT(stat(path, &st) == 0 && st.st_size > 0);
	}
	{
		char *want = summary_text(x), got[65536];
		size_t n;
		FILE *f;

		snprintf(path, sizeof path, "%s/run/summary.csv", top);
		f = fopen(path, "r");
		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		n = fread(got, 1, sizeof got - 1, f);
		got[n] = '\0';
		fclose(f);
		CU_ASSERT_STRING_EQUAL(got, want);
		free(want);
	}
	ema_remove_tree(top);
	CU_ASSERT(stat(top, &st) != 0);
	drop(x);
}

/* requests.csv's rows formatted as the requests finished (by a thread
 * beside the run, rows.c) are those formatted after the run, and those
 * of a run over the cap of rows kept in memory (formatted after it):
 * two policies, two tenants, and a horizon that leaves requests
 * unfinished (their rows come at the end, with what they had). */
static void test_rows_as_they_finish(void)
{
	static const char *const sets[] = {SHORT_T0, SHORT_T1, "policies=static,ema",
					   "horizon_s=6"};
	char *text[3] = { NULL, NULL, NULL };
	char top[4096];
	const char *t = getenv("TMPDIR");

	snprintf(top, sizeof top, "%s/ema-rows.XXXXXX", t ? t : "/tmp");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(top));
	/* 0: beside the run; 1: after it; 2: beside it, but over the cap of
	 * rows kept in memory, so after it */
	for (int after = 0; after < 3; after++) {
		struct ema_experiment *x = calloc(1, sizeof *x);
		struct ema_error err = {0};
		struct ema_outdir od;
		char path[4200];
		FILE *f;
		long n;

		CU_ASSERT_PTR_NOT_NULL_FATAL(x);
		CU_ASSERT_EQUAL_FATAL(ema_config_load(&x->cfg, NULL, sets, 4, &err), EMA_OK);
		x->quiet = true;
		x->rows_after = after == 1;
		x->rows_beside = after != 1;
		x->rows_max = after == 2 ? 10 : 0;
		CU_ASSERT_EQUAL_FATAL(ema_experiment_run(x, &err), EMA_OK);
		/* the thread formatted every row, or none */
		for (int i = 0; i < x->n_runs; i++)
			CU_ASSERT_EQUAL(ema_rows_ready(&x->runs[i].rows), after == 0);
		snprintf(path, sizeof path, "%s/run%d", top, after);
		CU_ASSERT_EQUAL_FATAL(ema_outdir_reserve(&od, "--out", path, NULL, &err), EMA_OK);
		CU_ASSERT_EQUAL_FATAL(ema_experiment_write(x, &od, false, &err), EMA_OK);
		snprintf(path, sizeof path, "%s/run%d/requests.csv", top, after);
		f = fopen(path, "rb");
		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		fseek(f, 0, SEEK_END);
		n = ftell(f);
		rewind(f);
		text[after] = calloc(1, (size_t)n + 1);
		CU_ASSERT_PTR_NOT_NULL_FATAL(text[after]);
		CU_ASSERT_EQUAL(fread(text[after], 1, (size_t)n, f), (size_t)n);
		fclose(f);
		drop(x);
	}
	CU_ASSERT_STRING_EQUAL(text[0], text[1]);
	CU_ASSERT_STRING_EQUAL(text[0], text[2]);
	/* some requests were cut off by the horizon: rows without a finish */
	CU_ASSERT_PTR_NOT_NULL(strstr(text[0], ",,,0\n"));
	CU_ASSERT(strlen(text[0]) > 1000);
	free(text[0]);
	free(text[1]);
	free(text[2]);
	ema_remove_tree(top);
}

/* A requests.csv row is the text of its printf format, for names that
 * fit the buffer's room (in place) and names that do not (field by
 * field), unfinished and dropped requests, and times past 10^15 ns. */
static void test_row_text(void)
{
	static const struct ema_request_record recs[] = {
		{0, 0, 9430647, 216949894, 374, 44, 0, false, 44},
		{7, 4314579000, 4324566178, 4875223817, 396, 1, 2, false, 1},
		{8, 5000000, -1, -1, 1200, 30, 0, true, 0},
		{9, 5000000, 6000001, -1, 1200, 30, 1, false, 3},
		{2147483647, 1000000000000001LL, 1000000000000002LL, 9000000000000000000LL,
		 2147483647, 2147483647, 2147483647, false, 2147483647},
	};
	char *big = malloc(EMA_CSVOUT_BUF + 1);
	char *got = NULL, *want = malloc(8 * EMA_CSVOUT_BUF);
	size_t gn = 0, wn = 0;
	FILE *f = open_memstream(&got, &gn);
	struct ema_csvout *o = malloc(sizeof *o);

	CU_ASSERT_FATAL(big != NULL && want != NULL && f != NULL && o != NULL);
	memset(big, 'x', EMA_CSVOUT_BUF);
	big[EMA_CSVOUT_BUF] = '\0';
	ema_csvout_init(o, f);
	for (int k = 0; k < 2; k++)
		for (size_t i = 0; i < sizeof recs / sizeof recs[0]; i++) {
			const struct ema_request_record *r = &recs[i];
			const char *tenant = k ? big : "t0";
			char ttft[64] = "", tpot[64] = "", e2e[64] = "", first[64] = "", fin[64] = "";

			ema_rows_format(o, "static", tenant, r);
			if (r->first_token_ns >= 0) {
				snprintf(first, sizeof first, "%.6f", (double)r->first_token_ns * 1e-6);
				snprintf(ttft, sizeof ttft, "%.6f",
					 (double)(r->first_token_ns - r->arrival_ns) * 1e-6);
			}
			if (r->finish_ns >= 0) {
				snprintf(fin, sizeof fin, "%.6f", (double)r->finish_ns * 1e-6);
				snprintf(e2e, sizeof e2e, "%.6f", (double)(r->finish_ns - r->arrival_ns) * 1e-6);
				if (r->output_tokens > 1)
					snprintf(tpot, sizeof tpot, "%.6f",
						 (double)(r->finish_ns - r->first_token_ns) * 1e-6 /
						 (r->output_tokens - 1));
			}
			wn += (size_t)snprintf(want + wn, 8 * EMA_CSVOUT_BUF - wn,
					       "static,%s,%d,%.6f,%s,%s,%d,%d,%d,%s,%s,%s,%d\n", tenant,
					       r->id, (double)r->arrival_ns * 1e-6, first, fin,
					       r->prompt_tokens, r->output_tokens, r->preemptions, ttft,
					       tpot, e2e, r->dropped ? 1 : 0);
		}
	CU_ASSERT_EQUAL(ema_csvout_flush(o), 0);
	fclose(f);
	CU_ASSERT_EQUAL(gn, wn);
	CU_ASSERT(gn == wn && memcmp(got, want, wn) == 0);
	free(got);
	free(want);
	free(big);
	free(o);
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{"same scenario twice is byte-identical", test_same_run_twice},
		{"policy order does not matter", test_policy_order},
		{"another seed gives other requests", test_seed_matters},
		{"summary.csv header and row widths", test_summary_shape},
		{"static vs itself is 1, guarantee only for lenders", test_comparisons},
		{"quantiles by hand", test_quantile},
		{"quantiles by selection are the sort's", test_quantiles_select},
		{"steady state, per-user throughput and SLOs by hand", test_metrics_by_hand},
		{"one request by hand", test_one_request},
		{"tokens generated, with and without a horizon", test_generated_tokens},
		{"a full disk: the file and the reason", test_write_full_disk},
		{"the run folder as written", test_write_folder},
		{"requests.csv's rows as they finish are those after the run", test_rows_as_they_finish},
		{"a requests.csv row is its printf format's text", test_row_text},
		{NULL, NULL},
	};

	gsl_set_error_handler_off();
	return ema_test_run("experiment", cases);
}
