/* test_leap.c: decode leaping changes nothing. Every scenario here runs
 * twice, stepping one iteration at a time (EMA_LEAP=0) and leaping, and
 * every file of the two run folders must be the same byte for byte
 * (run.json but its wall-clock fields): the embedded default scenario and
 * every published one, and each shared trace (Azure conversation and code,
 * Mooncake, ShareGPT lengths) replayed with and without memory pressure,
 * under every policy, and 8 tenants on h200x8 replaying the same trace in
 * lock-step (their iterations end at the same nanoseconds). The leaping
 * runs must have leapt where the policy allows it, so that no comparison
 * passes because nothing leapt. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "experiment.h"
#include "lending.h"
#include "mock_platform.h"
#include "outdir.h"
#include "policy.h"
#include "test_main.h"

static char top[4096];
static int serial;
/* the leaps of each policy in the last leaping run */
static uint64_t run_leaps[EMA_MAX_POLICIES];
static char run_policy[EMA_MAX_POLICIES][EMA_NAME_MAX];
static int n_run_policies;

static const char *const files[] = {
	"config.json", "summary.csv", "requests.csv", "timeline.csv", "links.csv",
	"transfers.csv", "run.json",
};

/* A file's text; run.json's wall-clock figures blanked. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (buf != NULL && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	if (buf == NULL)
		return NULL;
	buf[n] = '\0';
	*len = (size_t)n;
	/* the wall clock is not the simulation's: "12.345" -> "0", so that
	 * runs of different lengths (9.9 s against 10.1 s under ASan)
	 * compare equal */
	if (strstr(path, "run.json") != NULL)
		for (char *p = strstr(buf, "\"wall_s\": "); p != NULL; p = strstr(p + 1, "\"wall_s\": ")) {
			char *q = p + 10, *e = q;

			while ((*e >= '0' && *e <= '9') || *e == '.')
				e++;
			if (e > q) {
				*q = '0';
				memmove(q + 1, e, (size_t)(buf + *len - e) + 1);
				*len -= (size_t)(e - q - 1);
			}
		}
	return buf;
}

/* Runs the scenario (file, or the embedded one) with leaping on or off
 * and writes its folder; returns the folder, and the leaps made. */
static int run_once(const char *config, const char *const *sets, int n, bool leap,
		    char *dir, size_t size, uint64_t *leaps)
{
	struct ema_experiment *x = calloc(1, sizeof *x);
	struct ema_error err = { 0 };
	struct ema_outdir od;
	int rc;

	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	setenv("EMA_LEAP", leap ? "1" : "0", 1);
	rc = ema_config_load(&x->cfg, config, sets, n, &err);
	if (rc == EMA_OK) {
		x->quiet = true;
		rc = ema_experiment_run(x, &err);
	}
	*leaps = 0;
	if (leap)
		n_run_policies = 0;
	for (int i = 0; rc == EMA_OK && i < x->n_runs; i++) {
		uint64_t made = ema_engine_leaps(x->runs[i].engine, NULL);

		*leaps += made;
		if (leap && i < EMA_MAX_POLICIES) {
			run_leaps[i] = made;
			memcpy(run_policy[i], x->runs[i].policy, sizeof run_policy[i]);
			n_run_policies = i + 1;
		}
	}
	snprintf(dir, size, "%s/run-%d", top, serial++);
	if (rc == EMA_OK)
		rc = ema_outdir_reserve(&od, "--out", dir, NULL, &err);
	if (rc == EMA_OK)
		rc = ema_experiment_write(x, &od, false, &err);
	if (rc != EMA_OK)
		fprintf(stderr, "\n%s: %s\n", config ? config : "default", err.msg);
	ema_experiment_free(x);
	free(x);
	unsetenv("EMA_LEAP");
	return rc;
}

/* Stepping and leaping: the same files. Returns the leaps made. */
static uint64_t same_both_ways(const char *config, const char *const *sets, int n)
{
	char a[4200], b[4200];
	uint64_t la, lb;

	CU_ASSERT_EQUAL_FATAL(run_once(config, sets, n, false, a, sizeof a, &la), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(run_once(config, sets, n, true, b, sizeof b, &lb), EMA_OK);
	CU_ASSERT_EQUAL(la, 0);
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		char pa[4400], pb[4400];
		size_t na = 0, nb = 0;
		char *ta, *tb;

		snprintf(pa, sizeof pa, "%s/%s", a, files[i]);
		snprintf(pb, sizeof pb, "%s/%s", b, files[i]);
		ta = slurp(pa, &na);
		tb = slurp(pb, &nb);
		CU_ASSERT_PTR_NOT_NULL(ta);
		CU_ASSERT_PTR_NOT_NULL(tb);
		if (ta != NULL && tb != NULL && (na != nb || memcmp(ta, tb, na) != 0)) {
			CU_FAIL("stepping and leaping wrote different files");
			fprintf(stderr, "\n%s: %s differs (%s, %s)\n", config ? config : "default",
				files[i], pa, pb);
		}
		free(ta);
		free(tb);
	}
	if (getenv("EMA_KEEP_LEAP") == NULL) {
		ema_remove_tree(a);
		ema_remove_tree(b);
	}
	return lb;
}

/* The leaps of `policy` in the last leaping run, or -1 if it did not run. */
static long long leaps_of(const char *policy)
{
	for (int i = 0; i < n_run_policies; i++)
		if (strcmp(run_policy[i], policy) == 0)
			return (long long)run_leaps[i];
	return -1;
}

/* A policy without leap_ok never leaps (the engine steps it). */
static void no_leaps_without_hook(void)
{
	for (int i = 0; i < n_run_policies; i++)
		if (ema_policy_find(run_policy[i])->leap_ok == NULL && run_leaps[i] != 0) {
			CU_FAIL("a policy without leap_ok leapt");
			fprintf(stderr, "\n%s leapt %llu times\n", run_policy[i],
				(unsigned long long)run_leaps[i]);
		}
}

static void test_default(void)
{
	/* its tenant 0 overloads its GPU: preemptions, borrowing, swaps */
	CU_ASSERT(same_both_ways(NULL, NULL, 0) > 0);
	/* each policy with leap_ok leaps here, remote_direct too (where a
	 * GPU lends nothing and its free pages are within its reserve) */
	CU_ASSERT(leaps_of("static") > 0);
	CU_ASSERT(leaps_of("ideal") > 0);
	CU_ASSERT(leaps_of("host_swap") > 0);
	CU_ASSERT(leaps_of("remote_direct") > 0);
	/* ema too, with its guards on (the defaults): where no GPU with a
	 * tenant lends, its leapt steps are noted at the leap's end */
	CU_ASSERT(leaps_of("ema") > 0);
	no_leaps_without_hook();
	{
		static const char *const roomy[] = { "gpu_mem_cap_gib=0" };

		CU_ASSERT(same_both_ways(NULL, roomy, 1) > 0);
	}
}

static void test_published(void)
{
	char dir[4096];
	DIR *d;
	struct dirent *de;
	int n = 0;

	snprintf(dir, sizeof dir, "%s/scenarios/published", ema_test_srcdir());
	d = opendir(dir);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	while ((de = readdir(d)) != NULL) {
		char path[4400];
		size_t len = strlen(de->d_name);

		if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		same_both_ways(path, NULL, 0);
		n++;
	}
	closedir(d);
	CU_ASSERT(n >= 1);
}

/* Tenant 0 replays a shared trace (a window of it), tenant 1 keeps its
 * synthetic stream; on the default 24 GiB GPUs (pressure) and whole ones. */
static void trace_case(const char *file, const char *workload)
{
	const char *dirp = ema_test_shared_traces();
	char w[4600];
	const char *sets[3];

	if (dirp == NULL) {
		fprintf(stderr, "\n(skipped: ../shared/traces not found)\n");
		return;
	}
	snprintf(w, sizeof w, "tenants.0.workload={\"trace\": \"%s/%s\", %s}", dirp, file, workload);
	sets[0] = w;
	CU_ASSERT(same_both_ways(NULL, sets, 1) > 0);
	sets[1] = "gpu_mem_cap_gib=0";
	CU_ASSERT(same_both_ways(NULL, sets, 2) > 0);
}

static void test_azure_conv(void)
{
	trace_case("AzureLLMInferenceTrace_conv.csv",
		   "\"source\": \"trace\", \"format\": \"azure\", \"duration_s\": 600, \"rate_scale\": 2");
}

static void test_azure_code(void)
{
	trace_case("AzureLLMInferenceTrace_code.csv",
		   "\"source\": \"trace\", \"format\": \"azure\", \"duration_s\": 900");
}

static void test_mooncake(void)
{
	trace_case("mooncake_synthetic_trace.jsonl",
		   "\"source\": \"trace\", \"duration_s\": 600");
}

static void test_sharegpt(void)
{
	trace_case("sharegpt_8k_filtered_stats_llama2_tokenizer.csv",
		   "\"source\": \"lengths\", \"rate_rps\": 3, \"duration_s\": 300");
}

/* 8 tenants on h200x8, each replaying the same window of the Azure
 * conversation trace (ema bench's replay): their iterations end at the
 * same nanoseconds, so leaps and events tie all the time. With and
 * without pressure (20 GiB GPUs, two tenants 4x faster). */
static void test_lockstep(void)
{
	const char *dirp = ema_test_shared_traces();
	char t[8][4600];
	const char *sets[12];
	int n = 0;

	if (dirp == NULL) {
		fprintf(stderr, "\n(skipped: ../shared/traces not found)\n");
		return;
	}
	sets[n++] = "hardware=h200x8";
	sets[n++] = "gpu_mem_cap_gib=0";
	sets[n++] = "policies=static,host_swap,ema";
	for (int i = 0; i < 8; i++) {
		snprintf(t[i], sizeof t[i],
			 "tenants.%d={\"name\": \"t%d\", \"gpu\": %d, \"workload\": {\"source\": "
			 "\"trace\", \"trace\": \"%s/AzureLLMInferenceTrace_conv.csv\", \"format\": "
			 "\"azure\", \"duration_s\": 400, \"rate_scale\": %d}}", i, i, i, dirp,
			 i < 2 ? 4 : 1);
		sets[n++] = t[i];
	}
	CU_ASSERT(same_both_ways(NULL, sets, n) > 0);
	sets[1] = "gpu_mem_cap_gib=20";
	CU_ASSERT(same_both_ways(NULL, sets, n) > 0);
}

/* remote_direct's leap_ok by hand, 3 GPUs of 100 KV pages, reserve 5%
 * (5 pages), floor 25%: a leap of tenant 1 may take its GPU's free pages
 * anywhere in [0, 5], where nothing tenant 0 is told (borrowable,
 * choose_lender) changes; at 6 free pages it would; a GPU that lends
 * does not leap. */
static void test_remote_direct_range(void)
{
	struct ema_request_spec r0[1] = {{0, 1, 1}}, r1[1] = {{0, 1, 1}}, r2[1] = {{0, 1, 1}};
	struct ema_workload w[3] = {{r0, 1, 1}, {r1, 1, 1}, {r2, 1, 1}};
	const struct ema_policy_ops *rd = ema_policy_find("remote_direct");
	struct ema_leap_range range = { 0, INT32_MAX, false, false };
	struct ema_config cfg;
	struct ema_engine e;
	struct ema_error err = {0};
	struct mock *m;
	int32_t held[100], borrowable0;
	int n_held = 0, p;

	tiny_config(&cfg, 3, (489 + 100) * 4.0 / 1024);
	cfg.policy.lender_floor = 0.25;
	cfg.policy.lender_reserve = 0.05;
	m = mock_new(&cfg);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rd);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rd->leap_ok);
	CU_ASSERT_EQUAL_FATAL(ema_engine_create(&e, &cfg, rd, &m->base, w, &err), EMA_OK);
	CU_ASSERT_EQUAL(e.tenants[1].kv_capacity_pages, 100);
	/* GPU 2's tenant holds 60 pages: it can lend min(40 - 5, 75) = 35 */
	for (int i = 0; i < 60; i++)
		ema_ledger_alloc(&e.ledger, 2, 2, EMA_PAGE_KV);
	/* tenant 1 holds 100 - 0 pages, then gives them back one by one */
	while (n_held < 100)
		held[n_held++] = ema_ledger_alloc(&e.ledger, 1, 1, EMA_PAGE_KV);
	CU_ASSERT_TRUE(rd->leap_ok(&e.ctx, e.policy_state, 1, &range));
	CU_ASSERT_EQUAL(range.free_min, 0);
	CU_ASSERT_EQUAL(range.free_max, 5);
	borrowable0 = rd->borrowable(&e.ctx, e.policy_state, 0);
	CU_ASSERT_EQUAL(borrowable0, 35);
	for (int32_t free = 0; free <= range.free_max; free++) {
		CU_ASSERT_EQUAL(ema_ledger_free_pages(&e.ledger, 1), free);
		CU_ASSERT_EQUAL(rd->borrowable(&e.ctx, e.policy_state, 0), borrowable0);
		CU_ASSERT_EQUAL(rd->choose_lender(&e.ctx, e.policy_state, 0), 2);
		ema_ledger_free(&e.ledger, 1, held[--n_held]);
	}
	/* 6 free: GPU 1 could lend one page, and tenant 0 would see it */
	CU_ASSERT_EQUAL(rd->borrowable(&e.ctx, e.policy_state, 0), borrowable0 + 1);
	/* a GPU that lends: no leap (its pages are read in place) */
	p = ema_ledger_alloc(&e.ledger, 1, 0, EMA_PAGE_KV);
	CU_ASSERT(p >= 0);
	range.free_max = INT32_MAX;
	CU_ASSERT_FALSE(rd->leap_ok(&e.ctx, e.policy_state, 1, &range));
	e.platform = NULL;
	mock_destroy(&m->base);
	ema_engine_destroy(&e);
}

/* ema's leap_ok by hand, the same 3 GPUs, reserve and headroom 5%
 * (band_keep 10 pages): a leap of tenant 1 may take its GPU's free
 * pages anywhere in [0, 10], where what tenant 0 is told stays the same;
 * at 11 free pages GPU 1 could lend. With its guards on (the defaults)
 * ema asks for each leapt step's plan and for no lending GPU; a tenant
 * that read remote KV does not leap (the lender guard reads its sums). */
static void test_ema_range(void)
{
	struct ema_request_spec r0[1] = {{0, 1, 1}}, r1[1] = {{0, 1, 1}}, r2[1] = {{0, 1, 1}};
	struct ema_workload w[3] = {{r0, 1, 1}, {r1, 1, 1}, {r2, 1, 1}};
	const struct ema_policy_ops *ema = ema_policy_find("ema");
	struct ema_leap_range range = { 0, INT32_MAX, false, false };
	struct ema_iteration it;
	struct ema_config cfg;
	struct ema_engine e;
	struct ema_error err = {0};
	struct mock *m;
	int32_t held[100], borrowable0;
	int n_held = 0;

	tiny_config(&cfg, 3, (489 + 100) * 4.0 / 1024);
	cfg.policy.lender_floor = 0.25;
	cfg.policy.lender_reserve = 0.05;
	cfg.policy.headroom = 0.05;
	m = mock_new(&cfg);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ema);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ema->leap_ok);
	CU_ASSERT_EQUAL_FATAL(ema_engine_create(&e, &cfg, ema, &m->base, w, &err), EMA_OK);
	for (int i = 0; i < 60; i++)
		ema_ledger_alloc(&e.ledger, 2, 2, EMA_PAGE_KV);
	while (n_held < 100)
		held[n_held++] = ema_ledger_alloc(&e.ledger, 1, 1, EMA_PAGE_KV);
	CU_ASSERT_TRUE(ema->leap_ok(&e.ctx, e.policy_state, 1, &range));
	CU_ASSERT_EQUAL(range.free_min, 0);
	CU_ASSERT_EQUAL(range.free_max, 10);
	CU_ASSERT_TRUE(range.plan_each);
	CU_ASSERT_TRUE(range.none_lent);
	borrowable0 = ema->borrowable(&e.ctx, e.policy_state, 0);
	/* GPU 2 lends down to its band: 40 free - 10 */
	CU_ASSERT_EQUAL(borrowable0, 30);
	for (int32_t free = 0; free <= range.free_max; free++) {
		CU_ASSERT_EQUAL(ema_ledger_free_pages(&e.ledger, 1), free);
		CU_ASSERT_EQUAL(ema->borrowable(&e.ctx, e.policy_state, 0), borrowable0);
		CU_ASSERT_EQUAL(ema->choose_lender(&e.ctx, e.policy_state, 0), 2);
		ema_ledger_free(&e.ledger, 1, held[--n_held]);
	}
	CU_ASSERT_EQUAL(ema->borrowable(&e.ctx, e.policy_state, 0), borrowable0 + 1);
	/* tenant 1 reads a page of GPU 2 in one step, then borrows nothing */
	memset(&it, 0, sizeof it);
	it.tenant = 1;
	it.gpu = 1;
	it.n_seqs = 1;
	it.decode_tokens = 1;
	it.n_remote = 1;
	it.remote[0].gpu = 2;
	it.remote[0].n_pages = 1;
	it.remote[0].bytes = (uint64_t)e.page_bytes;
	ema->plan_iteration(&e.ctx, e.policy_state, &it);
	ema->after_iteration(&e.ctx, e.policy_state, 1);
	CU_ASSERT_EQUAL(ema_policy_staging_held(&e.ctx, 1), 0);
	range.free_max = INT32_MAX;
	CU_ASSERT_FALSE(ema->leap_ok(&e.ctx, e.policy_state, 1, &range));
	e.platform = NULL;
	mock_destroy(&m->base);
	ema_engine_destroy(&e);
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{ "default scenario, with and without pressure", test_default },
		{ "published scenarios", test_published },
		{ "Azure conversation trace", test_azure_conv },
		{ "Azure code trace", test_azure_code },
		{ "Mooncake trace", test_mooncake },
		{ "ShareGPT lengths", test_sharegpt },
		{ "8 tenants in lock-step", test_lockstep },
		{ "remote_direct's leap range by hand", test_remote_direct_range },
		{ "ema's leap range by hand", test_ema_range },
		{ NULL, NULL }
	};
	const char *t = getenv("TMPDIR");
	int rc;

	snprintf(top, sizeof top, "%s/ema-leap.XXXXXX", t ? t : "/tmp");
	if (mkdtemp(top) == NULL)
		return 99;
	rc = ema_test_run("leap", cases);
	if (getenv("EMA_KEEP_LEAP") == NULL)
		ema_remove_tree(top);
	return rc;
}
