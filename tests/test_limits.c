/* test_limits.c: extreme but valid input gets a right answer or a clear
 * error, never a hang or a wrong one (issue 32, section 2):
 *   - the checked conversion of durations to the clock's ns (simtime.h);
 *   - every numeric key of doc/keys.md, read from the document itself, at
 *     both ends of the range it states: the value is accepted there and
 *     refused just outside (so the document and the checks agree), and a
 *     run with it either ends with every request completed or dropped and
 *     sane times, or is refused for a reason this file lists, in a message
 *     that names the key;
 *   - the commands of the issue, and a seeded random walk over extreme
 *     values of the hardware and model keys, under the same rule;
 *   - the end-of-run accounting refuses a run whose requests are neither
 *     completed nor dropped.
 * An alarm turns a hang into a failure. */
#include <gsl/gsl_errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "engine.h"
#include "experiment.h"
#include "policy.h"
#include "simtime.h"
#include "test_main.h"

/* ---- the conversion ----------------------------------------------------- */

static void test_time_conversion(void)
{
	CU_ASSERT_EQUAL(ema_time_ns(0.0), 0);
	CU_ASSERT_EQUAL(ema_time_ns(-0.0), 0);
	CU_ASSERT_EQUAL(ema_time_ns(0.49), 0);
	CU_ASSERT_EQUAL(ema_time_ns(0.5), 1);
	CU_ASSERT_EQUAL(ema_time_ns(2.5), 3);
	CU_ASSERT_EQUAL(ema_time_ns(1234567.4999), 1234567);
	CU_ASSERT_EQUAL(ema_time_ns(0x1p62), EMA_TIME_MAX_NS);
	/* past the limit, not a number, negative: saturated, never wrapped */
	CU_ASSERT_EQUAL(ema_time_ns(nextafter(0x1p62, INFINITY)), EMA_TIME_PAST);
	CU_ASSERT_EQUAL(ema_time_ns(1.6e19), EMA_TIME_PAST);
	CU_ASSERT_EQUAL(ema_time_ns(INFINITY), EMA_TIME_PAST);
	CU_ASSERT_EQUAL(ema_time_ns(NAN), EMA_TIME_PAST);
	CU_ASSERT_EQUAL(ema_time_ns(-1.0), EMA_TIME_PAST);
	CU_ASSERT(ema_time_ns_ok(0x1p62));
	CU_ASSERT(!ema_time_ns_ok(1e300));
	CU_ASSERT(!ema_time_ns_ok(NAN));
	/* sums stay inside int64_t */
	CU_ASSERT_EQUAL(ema_time_after(5, 7), 12);
	CU_ASSERT_EQUAL(ema_time_after(EMA_TIME_MAX_NS - 1, 1), EMA_TIME_MAX_NS);
	CU_ASSERT_EQUAL(ema_time_after(EMA_TIME_MAX_NS - 1, 2), EMA_TIME_PAST);
	CU_ASSERT_EQUAL(ema_time_after(EMA_TIME_MAX_NS, EMA_TIME_PAST), EMA_TIME_PAST);
	CU_ASSERT_EQUAL(ema_time_after(EMA_TIME_PAST, 0), EMA_TIME_PAST);
	CU_ASSERT_EQUAL(ema_time_after(3, -1), EMA_TIME_PAST);
	{
		struct ema_error err = { 0 };
		char t[32];

		CU_ASSERT_EQUAL(ema_time_error(&err, "x"), EMA_ERR_INPUT);
		CU_ASSERT_EQUAL(ema_status_exit(err.code), 2);
		CU_ASSERT_STRING_EQUAL(err.msg, "simulated time would pass 146 years (2^62 ns, the "
				       "limit of its clock): x");
		CU_ASSERT_STRING_EQUAL(ema_time_text(t, sizeof t, 1.01e8), "0.101 s");
		CU_ASSERT_STRING_EQUAL(ema_time_text(t, sizeof t, 2 * 86400e9), "2 days");
		CU_ASSERT_STRING_EQUAL(ema_time_text(t, sizeof t, (double)EMA_TIME_MAX_NS),
				       "146 years");
	}
}

/* ---- running a scenario -------------------------------------------------- */

/* A run's verdict: loaded and ran (rc EMA_OK, results checked), or its
 * status and message. */
struct outcome {
	int rc;
	char msg[EMA_ERROR_MSG_MAX];
};

/* Every policy's results: each tenant's requests completed or dropped
 * (or in flight where a horizon cut the run), and every time of every
 * request in order and within the clock's limit. */
static bool results_sane(const struct ema_experiment *x, char *why, size_t size)
{
	for (int i = 0; i < x->n_runs; i++) {
		const struct ema_policy_run *run = &x->runs[i];
		int64_t horizon = x->cfg.horizon_s > 0 ? (int64_t)(x->cfg.horizon_s * 1e9) : 0;

		for (int ti = 0; ti < x->cfg.n_tenants; ti++) {
			const struct ema_tenant_result *r = &run->results[ti];
			int32_t n = ema_engine_n_requests(run->engine, ti);

			if (r->requests != n || r->completed + r->dropped > r->requests ||
			    (horizon == 0 && r->completed + r->dropped != r->requests)) {
				snprintf(why, size, "%s %s: %lld completed + %lld dropped of %lld",
					 run->policy, r->tenant, (long long)r->completed,
					 (long long)r->dropped, (long long)r->requests);
				return false;
			}
			for (int q = 0; q < 3; q++)
				if (r->ttft_ms[q] < 0 || isinf(r->ttft_ms[q]) || r->tpot_ms[q] < 0 ||
				    isinf(r->tpot_ms[q])) {
					snprintf(why, size, "%s %s: TTFT %g ms, TPOT %g ms", run->policy,
						 r->tenant, r->ttft_ms[q], r->tpot_ms[q]);
					return false;
				}
			for (int32_t k = 0; k < n; k++) {
				struct ema_request_record rec;

				ema_engine_request(run->engine, ti, k, &rec);
				if (rec.dropped || rec.finish_ns < 0)
					continue;
				if (rec.arrival_ns < 0 || rec.first_token_ns < rec.arrival_ns ||
				    rec.finish_ns < rec.first_token_ns ||
				    rec.finish_ns > EMA_TIME_MAX_NS ||
				    (horizon > 0 && rec.finish_ns > horizon)) {
					snprintf(why, size, "%s %s request %d: arrival %lld, first token "
						 "%lld, finish %lld ns", run->policy, r->tenant, rec.id,
						 (long long)rec.arrival_ns, (long long)rec.first_token_ns,
						 (long long)rec.finish_ns);
					return false;
				}
			}
		}
	}
	return true;
}

/* The default scenario cut to a few short requests per tenant, so that
 * every policy runs in milliseconds whatever one key says. */
static const char *const small_sets[] = {
	"tenants.0.workload.max_requests=4", "tenants.1.workload.max_requests=4",
	"tenants.0.workload.output.max=48", "tenants.1.workload.output.max=48",
	"tenants.0.workload.rate_rps=40", "tenants.1.workload.rate_rps=40",
};
#define N_SMALL ((int)(sizeof small_sets / sizeof small_sets[0]))

/* Loads the default scenario with small_sets and then sets[0..n) and runs
 * it; results that are not sane fail the test here. */
static struct outcome run_sets(const char *const *sets, int n)
{
	const char *all[N_SMALL + 12];
	struct ema_experiment *x = calloc(1, sizeof *x);
	struct ema_error err = { 0 };
	struct outcome o = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	CU_ASSERT_FATAL(n <= 12);
	memcpy(all, small_sets, sizeof small_sets);
	memcpy(all + N_SMALL, sets, (size_t)n * sizeof *sets);
	o.rc = ema_config_load(&x->cfg, NULL, all, N_SMALL + n, &err);
	if (o.rc == EMA_OK) {
		x->quiet = true;
		x->silent = true;
		x->rows_beside = true; /* the engine keeps every record: read below */
		o.rc = ema_experiment_run(x, &err);
		if (o.rc == EMA_OK) {
			char why[512];

			if (!results_sane(x, why, sizeof why)) {
				fprintf(stderr, "with");
				for (int i = 0; i < n; i++)
					fprintf(stderr, " --set %s", sets[i]);
				fprintf(stderr, ": %s\n", why);
				CU_FAIL("a run ended with requests unaccounted for or insane times");
			}
		}
	}
	snprintf(o.msg, sizeof o.msg, "%s", o.rc == EMA_OK ? "" : err.msg);
	ema_experiment_free(x);
	free(x);
	return o;
}

static struct outcome run1(const char *set)
{
	return run_sets(&set, 1);
}

/* ---- the keys of doc/keys.md at the ends of their ranges ---------------- */

/* What a key's range cell says: [lo, hi] or (lo, hi], an integer's, a
 * power of two's. */
struct range {
	double lo, hi;
	bool lo_open, integer, pow2, minus_one;
};

/* One number of a range cell: "1e7", "0.0625", "-1", "2^53", "2^31-1";
 * it ends at "..", "," or "]". */
static bool parse_num(const char *s, const char **end, double *out)
{
	char tok[64], *e;
	size_t n = 0;

	while (s[n] != '\0' && s[n] != ',' && s[n] != ']' && strncmp(s + n, "..", 2) != 0 &&
	       n + 1 < sizeof tok)
		n++;
	snprintf(tok, sizeof tok, "%.*s", (int)n, s);
	*end = s + n;
	if (strncmp(tok, "2^", 2) == 0) {
		long p = strtol(tok + 2, &e, 10);

		*out = ldexp(1.0, (int)p);
		if (strcmp(e, "-1") == 0) {
			*out -= 1;
			e += 2;
		}
	} else {
		*out = strtod(tok, &e);
	}
	return n > 0 && *e == '\0';
}

/* "1..1e7", "[0, 0.5]", "(0, 1e6]", "power of two in [0.0625, 1024]",
 * "-1 or [0, 1e9]";
 * false for anything else (strings' bytes, lists' items). */
static bool parse_range(const char *cell, struct range *r)
{
	const char *p = cell, *e;

	memset(r, 0, sizeof *r);
	if (strncmp(p, "-1 or ", 6) == 0) {
		r->minus_one = true;
		p += 6;
	}
	if (strncmp(p, "power of two in ", 16) == 0) {
		r->pow2 = true;
		p += 16;
	}
	if (*p == '[' || *p == '(') {
		r->lo_open = *p == '(';
		if (!parse_num(p + 1, &e, &r->lo) || strncmp(e, ", ", 2) != 0 ||
		    !parse_num(e + 2, &e, &r->hi) || strcmp(e, "]") != 0)
			return false;
		return true;
	}
	r->integer = true;
	if (!parse_num(p, &e, &r->lo) || strncmp(e, "..", 2) != 0 || !parse_num(e + 2, &e, &r->hi))
		return false;
	return *e == '\0';
}

/* A refusal of a value inside a key's range that the checks mean to
 * make, with the default scenario around it: a cross-field check or a
 * limit, which the key's text or doc/limitations.md names. `end` is
 * '<' for the low end, '>' for the high one; the message must hold
 * `says`. */
struct refusal {
	const char *path;
	char end;
	const char *says;
};

static const struct refusal expected_refusals[] = {
	/* no request to generate */
	{ "tenants.0.workload.rate_rps", '<', "rate_rps > 0" },
	/* past the generators' 10,000,000 requests */
	{ "tenants.0.workload.max_requests", '>', "exceeds the limit" },
	/* min above max (prompt.max 8192, output.max 48 here) */
	{ "tenants.0.workload.prompt.min", '>', "min <= max" },
	{ "tenants.0.workload.output.min", '>', "min <= max" },
	/* two tenants, two GPUs */
	{ "tenants.0.gpu", '>', "outside hardware" },
	{ "hardware.n_gpus", '<', "outside hardware" },
	/* a cap above the GPU's memory */
	{ "gpu_mem_cap_gib", '>', "expected at most" },
	/* the weights do not fit */
	{ "hardware.gpu_mem_gib", '<', "expected at most the" },
	{ "model.params_b", '>', "of weights per GPU" },
	{ "model.bytes_per_param", '>', "of weights per GPU" },
	/* the shortest step would pass the limit of simulated time */
	{ "hardware.hbm_read_gbps", '<', "past the limit of simulated time" },
	{ "hardware.hbm_efficiency", '<', "past the limit of simulated time" },
	{ "hardware.peak_tflops", '<', "past the limit of simulated time" },
	{ "hardware.flops_efficiency", '<', "past the limit of simulated time" },
	/* gather_gbps at most twice link_gbps */
	{ "hardware.link_gbps", '<', "twice link_gbps" },
	{ "hardware.gather_gbps", '>', "twice link_gbps" },
	/* kv_heads divides heads, tensor_parallel divides kv_heads */
	{ "model.kv_heads", '>', "divisor of heads" },
	{ "model.heads", '<', "divisor of heads" },
	{ "model.tensor_parallel", '>', "divisor of kv_heads" },
	{ NULL, 0, NULL },
};

static const struct refusal *find_refusal(const char *path, char end)
{
	for (const struct refusal *r = expected_refusals; r->path != NULL; r++)
		if (strcmp(r->path, path) == 0 && r->end == end)
			return r;
	return NULL;
}

static void fmt_value(char *buf, size_t size, double v, bool integer)
{
	if (integer)
		snprintf(buf, size, "%.0f", v);
	else
		snprintf(buf, size, "%.17g", v);
}

struct key_counts {
	int keys, runs, refused;
};

/* One end of one key: inside it runs or is an expected refusal; just
 * outside it is refused at the configuration, naming the key. */
static void check_end(const char *path, const struct range *r, char end, struct key_counts *kc)
{
	double in = end == '<' ? r->lo : r->hi, out;
	char set[600], val[64];
	const struct refusal *want = find_refusal(path, end);
	struct outcome o;

	if (end == '<' && r->lo_open)
		in = nextafter(r->lo, INFINITY);
	if (r->pow2)
		out = end == '<' ? r->lo / 2 : r->hi * 2;
	else if (end == '<')
		out = r->lo_open ? r->lo : r->integer ? r->lo - 1 : nextafter(r->lo, -INFINITY);
	else
		out = r->integer ? fmax(r->hi + 1, nextafter(r->hi, INFINITY)) :
		      nextafter(r->hi, INFINITY);
	fmt_value(val, sizeof val, in, r->integer);
	snprintf(set, sizeof set, "%s=%s", path, val);
	o = run1(set);
	kc->runs++;
	if (want == NULL && o.rc != EMA_OK) {
		fprintf(stderr, "--set %s: refused inside its documented range: %s\n", set, o.msg);
		CU_FAIL("a value inside its documented range was refused");
	} else if (want != NULL && (o.rc != EMA_ERR_INPUT || strstr(o.msg, want->says) == NULL ||
				    strstr(o.msg, path) == NULL)) {
		fprintf(stderr, "--set %s: expected a refusal saying \"%s\", got %d \"%s\"\n", set,
			want->says, o.rc, o.msg);
		CU_FAIL("an expected refusal did not come, or not naming the key");
	} else if (want != NULL) {
		kc->refused++;
	}
	fmt_value(val, sizeof val, out, r->integer);
	snprintf(set, sizeof set, "%s=%s", path, val);
	o = run1(set);
	kc->runs++;
	if (o.rc != EMA_ERR_INPUT || strstr(o.msg, path) == NULL) {
		fprintf(stderr, "--set %s: outside its documented range, got %d \"%s\"\n", set, o.rc,
			o.msg);
		CU_FAIL("a value outside its documented range was not refused naming the key");
	}
	/* "-1 or [lo, hi]": -1 runs, and what lies between or below is out */
	if (end == '<' && r->minus_one) {
		static const double around[] = { -1, -1.5, -0.5 };

		for (int i = 0; i < 3; i++) {
			fmt_value(val, sizeof val, around[i], r->integer);
			snprintf(set, sizeof set, "%s=%s", path, val);
			o = run1(set);
			kc->runs++;
			if ((i == 0) != (o.rc == EMA_OK) ||
			    (i > 0 && strstr(o.msg, path) == NULL)) {
				fprintf(stderr, "--set %s: got %d \"%s\"\n", set, o.rc, o.msg);
				CU_FAIL("-1 or [lo, hi] is not what the checks take");
			}
		}
	}
}

static void test_documented_ranges(void)
{
	char file[4096], line[8192];
	const char *prefix = NULL;
	struct key_counts kc = { 0 };
	FILE *f;

	snprintf(file, sizeof file, "%s/doc/keys.md", ema_test_srcdir());
	f = fopen(file, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	while (fgets(line, sizeof line, f) != NULL) {
		char key[256], type[256], cell[256], path[600];
		const char *p;
		struct range r;
		size_t n;

		if (strncmp(line, "## ", 3) == 0) {
			prefix = strncmp(line, "## Scenario", 11) == 0 ? "" :
				 strncmp(line, "## Hardware profile", 19) == 0 ? "hardware." :
				 strncmp(line, "## Model", 8) == 0 ? "model." : NULL;
			continue;
		}
		if (prefix == NULL || strncmp(line, "| `", 3) != 0)
			continue;
		/* | `key` | type | range | ... */
		p = line + 3;
		n = strcspn(p, "`");
		snprintf(key, sizeof key, "%.*s", (int)n, p);
		p = strchr(p + n, '|');
		CU_ASSERT_PTR_NOT_NULL_FATAL(p);
		p += 2;
		n = strcspn(p, "|");
		snprintf(type, sizeof type, "%.*s", (int)(n - 1), p);
		p += n + 2;
		n = strcspn(p, "|");
		snprintf(cell, sizeof cell, "%.*s", n > 0 ? (int)(n - 1) : 0, p);
		if (strcmp(type, "number") != 0 && strcmp(type, "integer") != 0)
			continue;
		if (!parse_range(cell, &r))
			fprintf(stderr, "%s: range \"%s\" not understood\n", key, cell);
		CU_ASSERT_FATAL(parse_range(cell, &r));
		/* tenants[i] is tenants.0 in a --set path */
		{
			char *b = strstr(key, "[i]");

			if (b != NULL) {
				memmove(b + 2, b + 3, strlen(b + 3) + 1);
				b[0] = '.';
				b[1] = '0';
			}
		}
		snprintf(path, sizeof path, "%s%s", prefix, key);
		kc.keys++;
		check_end(path, &r, '<', &kc);
		check_end(path, &r, '>', &kc);
	}
	fclose(f);
	/* the scenario's, the profile's and the model's numeric keys */
	CU_ASSERT(kc.keys >= 70);
	/* the length keys' ends under every kind of length, whose generators
	 * check them again (a fixed mean of 0.5 was refused there) */
	{
		static const char *const kinds[] = { "fixed", "uniform", "lognormal" };
		static const char *const ends[] = {
			"tenants.0.workload.prompt.mean=4.9406564584124654e-324",
			"tenants.0.workload.prompt.mean=10000000",
			"tenants.0.workload.prompt.max=10000000",
			"tenants.0.workload.output.min=48",
		};

		for (int k = 0; k < 3; k++)
			for (int i = 0; i < 4; i++) {
				char kind[64];
				const char *s[2] = { kind, ends[i] };
				struct outcome o;

				snprintf(kind, sizeof kind, "tenants.0.workload.prompt.kind=%s", kinds[k]);
				if (i == 3)
					snprintf(kind, sizeof kind, "tenants.0.workload.output.kind=%s",
						 kinds[k]);
				o = run_sets(s, 2);
				if (o.rc != EMA_OK)
					fprintf(stderr, "--set %s --set %s: %s\n", kind, ends[i], o.msg);
				CU_ASSERT_EQUAL(o.rc, EMA_OK);
			}
	}
	/* every expected refusal came */
	{
		int n = 0;

		for (const struct refusal *r = expected_refusals; r->path != NULL; r++)
			n++;
		CU_ASSERT_EQUAL(kc.refused, n);
	}
	printf("\n%d keys, %d runs, %d refusals as expected\n", kc.keys, kc.runs, kc.refused);
}

/* ---- the commands of the issue ------------------------------------------- */

static void expect_refused(const char *const *sets, int n, const char *key, const char *says)
{
	struct outcome o = run_sets(sets, n);

	CU_ASSERT_EQUAL(o.rc, EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(o.msg, key));
	CU_ASSERT_PTR_NOT_NULL(strstr(o.msg, says));
	if (o.rc != EMA_ERR_INPUT || strstr(o.msg, key) == NULL || strstr(o.msg, says) == NULL)
		fprintf(stderr, "expected a refusal naming %s and \"%s\", got %d: %s\n", key, says,
			o.rc, o.msg);
}

/* small_sets undone: the default scenario's requests */
#define FULL_LOAD "tenants.0.workload.max_requests=0", "tenants.1.workload.max_requests=0", \
	"tenants.0.workload.output.max=2048", "tenants.1.workload.output.max=2048", \
	"tenants.0.workload.rate_rps=14", "tenants.1.workload.rate_rps=1"

static void test_issue_commands(void)
{
	/* ran forever in try_leap: now the clock's limit, reached in the run
	 * (the default scenario's requests, as the issue ran them) */
	{
		const char *s[] = { FULL_LOAD, "hardware.hbm_read_gbps=1e-6", "policies=static" };

		expect_refused(s, (int)(sizeof s / sizeof s[0]), "hardware.hbm_read_gbps", "simulated time would pass 146 years");
	}
	{
		const char *s[] = { FULL_LOAD, "hardware.peak_tflops=1e-9", "policies=static" };

		expect_refused(s, (int)(sizeof s / sizeof s[0]), "hardware.peak_tflops", "simulated time would pass 146 years");
	}
	{
		const char *s[] = { FULL_LOAD, "hardware.flops_efficiency=1e-12", "policies=static" };

		expect_refused(s, (int)(sizeof s / sizeof s[0]), "hardware.flops_efficiency", "simulated time would pass 146 years");
	}
	/* finished requests in 0 ms, or lost some: refused before the run */
	{
		const char *s[] = { "hardware.hbm_read_gbps=1e-9", "policies=static" };

		expect_refused(s, (int)(sizeof s / sizeof s[0]), "hardware.hbm_read_gbps", "past the limit of simulated time");
	}
	{
		const char *s[] = { "hardware.hbm_read_gbps=1e-300", "policies=static" };

		expect_refused(s, (int)(sizeof s / sizeof s[0]), "hardware.hbm_read_gbps", "past the limit of simulated time");
	}
	/* an internal leap error */
	{
		const char *s[] = { FULL_LOAD, "hardware.hbm_efficiency=1e-12", "policies=static" };

		expect_refused(s, (int)(sizeof s / sizeof s[0]), "hardware.hbm_efficiency", "simulated time would pass 146 years");
	}
	/* -2147483648 pages */
	{
		const char *s[] = { "gpu_mem_cap_gib=0", "hardware.gpu_mem_gib=100000",
				    "policy.ideal_factor=64" };

		expect_refused(s, (int)(sizeof s / sizeof s[0]), "policy.ideal_factor", "more than the 67108864 (2^26)");
		expect_refused(s, (int)(sizeof s / sizeof s[0]), "hardware.gpu_mem_gib", "more than the 67108864 (2^26)");
	}
	{
		const char *s[] = { "page_mib=0.0625", "policy.host_gib=4096",
				    "policies=static,host_swap" };
		struct outcome o = run_sets(s, 3);

		/* 2^26 pages of host memory exactly: the limit is inclusive */
		CU_ASSERT_EQUAL(o.rc, EMA_OK);
	}
	/* ema's budgets of figures that make them unbounded: no cap, not a
	 * wrapped int (undefined behaviour, which the sanitizer build's
	 * float-cast-overflow reports) */
	{
		const char *s[] = { "policy.ema.tpot_budget=10",
				    "policy.ema.lender_budget=1", "hardware.interference_lender=1e-300",
				    "policies=static,ema" };
		struct outcome o = run_sets(s, 4);

		CU_ASSERT_EQUAL(o.rc, EMA_OK);
		if (o.rc != EMA_OK)
			fprintf(stderr, "%s\n", o.msg);
	}
	/* with a horizon, a slow profile is a right answer: requests in
	 * flight at the horizon, none lost (results_sane) */
	{
		const char *s[] = { "hardware.hbm_read_gbps=1e-6", "horizon_s=1e9",
				    "policies=static,ema" };
		struct outcome o = run_sets(s, 3);

		CU_ASSERT_EQUAL(o.rc, EMA_OK);
		if (o.rc != EMA_OK)
			fprintf(stderr, "%s\n", o.msg);
	}
	/* the other end: steps of 0 ns (a model of a few bytes on the
	 * fastest profile, no overhead) end, and account for every request */
	{
		const char *s[] = { "model.params_b=1e-12", "hardware.iter_overhead_us=0",
				    "hardware.hbm_read_gbps=1e6", "hardware.peak_tflops=1e6",
				    "hardware.link_gbps=1e6", "hardware.copy_fixed_us=0" };
		struct outcome o = run_sets(s, 6);

		CU_ASSERT_EQUAL(o.rc, EMA_OK);
		if (o.rc != EMA_OK)
			fprintf(stderr, "%s\n", o.msg);
	}
}

/* ---- a random walk over extreme values ------------------------------------ */

static uint64_t rng_next(uint64_t *s)
{
	/* splitmix64: a fixed sequence for a fixed seed */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Keys of the hardware profile and the model whose extremes move times
 * and counts, with the ends of their documented ranges. */
static const struct {
	const char *path;
	double lo, hi;
	bool integer;
} random_keys[] = {
	{ "hardware.gpu_mem_gib", 1, 1e5, false },
	{ "hardware.hbm_read_gbps", 1e-300, 1e6, false },
	{ "hardware.hbm_efficiency", 1e-300, 1, false },
	{ "hardware.peak_tflops", 1e-300, 1e6, false },
	{ "hardware.flops_efficiency", 1e-300, 1, false },
	{ "hardware.iter_overhead_us", 0, 1e6, false },
	{ "hardware.link_gbps", 1e-300, 1e6, false },
	{ "hardware.host_link_gbps", 1e-300, 1e6, false },
	{ "hardware.gather_gbps", 1e-300, 1e6, false },
	{ "hardware.remote_read_gbps", 1e-300, 1e6, false },
	{ "hardware.copy_engines", 1, 64, true },
	{ "hardware.copy_fixed_us", 0, 1e6, false },
	{ "hardware.copy_call_us", 0, 1e6, false },
	{ "hardware.batch_page_us", 0, 1e6, false },
	{ "hardware.interference_lender", 0, 100, false },
	{ "hardware.interference_borrower", 0, 100, false },
	{ "hardware.interference_compute", 0, 1, false },
	{ "hardware.pull_share_under_load", 1e-300, 1, false },
	{ "hardware.inplace_overlap_efficiency", 1e-300, 1, false },
	{ "model.layers", 1, 1024, true },
	{ "model.head_dim", 1, 4096, true },
	{ "model.hidden", 1, 1 << 20, true },
	{ "model.ffn", 1, 1 << 22, true },
	{ "model.params_b", 1e-12, 1e5, false },
	{ "model.bytes_per_param", 1, 8, true },
	{ "gpu_mem_cap_gib", 0, 1e5, false },
	{ "page_mib", 0.0625, 1024, false },
	{ "policy.ideal_factor", 1, 64, false },
	{ "policy.host_gib", 0, 4096, false },
	{ "policy.ema.prefetch_depth", 0, 1024, true },
	{ "serving.block_tokens", 1, 4096, true },
	{ "serving.max_batch", 1, 65536, true },
	{ "serving.max_batch_tokens", 1, 1 << 20, true },
	{ "serving.layer_groups", 1, 1024, true },
	{ "serving.watermark", 0, 0.5, false },
	{ "tenants.0.workload.prompt.max", 1, 1e7, true },
	{ "tenants.0.workload.prompt.mean", 1, 1e7, false },
	{ "policy.ema.lender_budget", 0, 1, false },
	{ "policy.ema.tpot_budget", 0, 10, false },
	{ "policy.ema.feedback_s", 0, 3600, false },
	{ "policy.ema.headroom", 0, 1, false },
};
#define N_RANDOM_KEYS ((int)(sizeof random_keys / sizeof random_keys[0]))

/* Choices that change which code the figures go through. */
static const char *const random_choices[] = {
	"policy.copy_method=batch", "policy.copy_method=per_page", "policy.ema.remote_path=inplace",
	"policy.ema.remote_path=staged", "serving.chunked_prefill=true", "serving.oversize=yield",
	"serving.oversize=wait", "policy.reclaim_mode=host", "policy.ema.remote_path=compute",
	"hardware.topology=switch", "hardware=h200x8", "model=llama-2-70b",
};
#define N_RANDOM_CHOICES ((int)(sizeof random_choices / sizeof random_choices[0]))

/* An extreme value of key k: an end, a tiny or huge power of ten, or a
 * log-uniform draw, within its range. */
static double extreme(int k, uint64_t *s)
{
	static const double tiny[] = { 1e-300, 1e-12, 1e-9, 1e-6, 1e-3 };
	double lo = random_keys[k].lo, hi = random_keys[k].hi, v;
	uint64_t u = rng_next(s);

	switch (u % 5) {
	case 0: v = lo; break;
	case 1: v = hi; break;
	case 2: v = tiny[(u >> 8) % 5]; break;
	case 3: v = hi / (double)(1 + (u >> 8) % 1000); break;
	default: {
		double a = lo > 0 ? log(lo) : log(1e-3), b = log(hi);

		v = exp(a + (b - a) * (double)(u >> 11) / 0x1p53);
	}
	}
	if (strcmp(random_keys[k].path, "page_mib") == 0)
		v = ldexp(1.0, -4 + (int)((u >> 20) % 15)); /* a power of two */
	if (random_keys[k].integer)
		v = round(v);
	return fmin(fmax(v, lo), hi);
}

/* EMA_LIMITS_RUNS=N EMA_LIMITS_SEED=S: a longer walk, or another one
 * (the default is what `make check` runs). */
static void test_random_extremes(void)
{
	const char *env_runs = getenv("EMA_LIMITS_RUNS"), *env_seed = getenv("EMA_LIMITS_SEED");
	uint64_t s = env_seed != NULL ? strtoull(env_seed, NULL, 10) : 20261130;
	int runs = env_runs != NULL ? atoi(env_runs) : 120;
	int ok = 0, refused = 0;

	for (int run = 0; run < runs; run++) {
		char sets[5][128];
		const char *p[6];
		int n = 1 + (int)(rng_next(&s) % 3), keys[3], m;
		struct outcome o;
		bool named = false;

		for (int i = 0; i < n; i++) {
			int k = (int)(rng_next(&s) % N_RANDOM_KEYS);
			char val[64];

			keys[i] = k;
			fmt_value(val, sizeof val, extreme(k, &s), random_keys[k].integer);
			snprintf(sets[i], sizeof sets[i], "%s=%s", random_keys[k].path, val);
			p[i] = sets[i];
		}
		m = n;
		if (rng_next(&s) % 4 == 0) {
			snprintf(sets[m], sizeof sets[m], "horizon_s=%d", 1 + (int)(rng_next(&s) % 1000));
			p[m] = sets[m];
			m++;
		}
		/* a choice before the figures, which --set applies in order (a
		 * hardware or model name would replace them) */
		if (rng_next(&s) % 3 == 0) {
			memmove(p + 1, p, (size_t)m * sizeof *p);
			p[0] = random_choices[rng_next(&s) % N_RANDOM_CHOICES];
			m++;
		}
		o = run_sets(p, m);
		if (o.rc == EMA_OK) {
			ok++;
			continue;
		}
		/* refused: for what was set, and saying which key */
		for (int i = 0; i < n && i < 3; i++) {
			const char *last = strrchr(random_keys[keys[i]].path, '.');

			last = last ? last + 1 : random_keys[keys[i]].path;
			if (strstr(o.msg, last) != NULL)
				named = true;
		}
		if (m > n && strchr(p[0], '=') != NULL && strncmp(p[0], "horizon_s", 9) != 0) {
			char key[64];

			snprintf(key, sizeof key, "%.*s", (int)(strchr(p[0], '=') - p[0]), p[0]);
			if (strstr(o.msg, key) != NULL)
				named = true;
		}
		if (o.rc != EMA_ERR_INPUT || !named) {
			fprintf(stderr, "random run %d with", run);
			for (int i = 0; i < m; i++)
				fprintf(stderr, " --set %s", p[i]);
			fprintf(stderr, ": %d %s\n", o.rc, o.msg);
			CU_FAIL("an extreme run failed other than by a refusal naming a key it set");
		} else {
			refused++;
		}
	}
	printf("\n%d runs ended, %d refused naming a key\n", ok, refused);
	/* both kinds happen: the walk reaches the limits and passes them */
	CU_ASSERT(ok > runs / 12);
	CU_ASSERT(refused > runs / 12);
}

static void on_alarm(int sig)
{
	(void)sig;
	/* a hang is a failure, not a test harness that waits forever */
	static const char msg[] = "test_limits: still running after 600 s: a hang\n";

	if (write(2, msg, sizeof msg - 1) < 0) {
		/* nothing more to say */
	}
	_exit(1);
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{ "durations to the clock's ns, checked", test_time_conversion },
		{ "the commands of issue 32", test_issue_commands },
		{ "every documented range, at both ends", test_documented_ranges },
		{ "a random walk over extreme values", test_random_extremes },
		{ NULL, NULL },
	};

	signal(SIGALRM, on_alarm);
	alarm(600);
	gsl_set_error_handler_off();
	if (ema_engine_register_policies(ema_policy_table) != EMA_OK)
		return 99;
	return ema_test_run("limits", cases);
}
