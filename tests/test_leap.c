/* test_leap.c: decode leaping changes nothing. Every scenario here runs
 * twice, stepping one iteration at a time (EMA_LEAP=0) and leaping, and
 * every file of the two run folders must be the same byte for byte
 * (run.json but its wall-clock fields): the embedded default scenario and
 * every published one, and random generated scenarios; and, built again
 * as tests/test_leap_traces (EMA_TEST_TRACES, tests/test_main.h; skipped
 * without the public traces), each public trace (Azure conversation and
 * code, Mooncake, ShareGPT lengths) replayed with and without memory
 * pressure, under every policy, 8 tenants on h200x8 replaying the same
 * trace in lock-step (their iterations end at the same nanoseconds), and
 * the random scenarios that replay a trace. The leaping
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
#include "random_scenario.h"
#include "policy.h"
#include "sim.h"
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

/* A file's text; run.json's wall-clock figures and leap counts blanked. */
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
	if (strstr(path, "run.json") != NULL) {
		/* and the leaps made, which say how the same outputs were reached */
		static const char *const keys[] = { "\"wall_s\": ", "\"leaps\": ", "\"leapt_steps\": " };

		for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
			for (char *p = strstr(buf, keys[k]); p != NULL; p = strstr(p + 1, keys[k])) {
				char *q = p + strlen(keys[k]), *e = q;

				while ((*e >= '0' && *e <= '9') || *e == '.')
					e++;
				if (e > q) {
					*q = '0';
					memmove(q + 1, e, (size_t)(buf + *len - e) + 1);
					*len -= (size_t)(e - q - 1);
				}
			}
	}
	return buf;
}

/* The error of the last run_once, "" when it ran; quiet_errors keeps it
 * off stderr (for runs that may fail as the model documents). */
static char last_error[EMA_ERROR_MSG_MAX];
static bool quiet_errors;

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
	if (rc != EMA_OK && !quiet_errors)
		fprintf(stderr, "\n%s: %s\n", config ? config : "default", err.msg);
	snprintf(last_error, sizeof last_error, "%s", rc != EMA_OK ? err.msg : "");
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
	static const char *const at24[] = { "gpu_mem_cap_gib=24" };

	/* the default scenario (19 GiB): tenant 0 overloads its GPU all the
	 * time; every policy, the bounds too, the same stepping and leaping */
	CU_ASSERT(same_both_ways(NULL, NULL, 0) > 0);
	CU_ASSERT(leaps_of("pooled") > 0);
	CU_ASSERT(leaps_of("ideal_kv") > 0);
	/* at 24 GiB its borrowing comes and goes: each policy with leap_ok
	 * leaps, remote_direct too (where a GPU lends nothing and its free
	 * pages are within its reserve) */
	CU_ASSERT(same_both_ways(NULL, at24, 1) > 0);
	CU_ASSERT(leaps_of("static") > 0);
	CU_ASSERT(leaps_of("ideal") > 0);
	CU_ASSERT(leaps_of("host_swap") > 0);
	CU_ASSERT(leaps_of("remote_direct") > 0);
	/* ema too, with its budgets and feedback on (the defaults): where no
	 * GPU with a tenant lends, its leapt steps are noted at the leap's end */
	CU_ASSERT(leaps_of("ema") > 0);
	no_leaps_without_hook();
	{
		static const char *const roomy[] = { "gpu_mem_cap_gib=0" };

		CU_ASSERT(same_both_ways(NULL, roomy, 1) > 0);
	}
	{
		/* chunked prefills of 100 tokens a step: some chunk leaves a
		 * prompt one token, whose step counts as a decode and can be a
		 * leap's first (its first token then, not at the leap's end) */
		static const char *const chunked[] = {
			"serving.chunked_prefill=true", "serving.max_batch_tokens=100",
			"tenants.0.workload.rate_rps=2",
		};

		CU_ASSERT(same_both_ways(NULL, chunked, 3) > 0);
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

	CU_ASSERT_PTR_NOT_NULL_FATAL(dirp);
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

	CU_ASSERT_PTR_NOT_NULL_FATAL(dirp);
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

/* tiny_config's GPUs with 100 KV pages each (4 KiB pages of 16 tokens),
 * a lending floor of 25%, a reserve and a headroom of 5% each. */
static void lending_config(struct ema_config *cfg, int tenants)
{
	tiny_config(cfg, tenants, (489 + 100) * 4.0 / 1024);
	cfg->policy.lender_floor = 0.25;
	cfg->policy.lender_reserve = 0.05;
	set_own_knob(cfg, "ema", "headroom", 0.05);
}

/* The simulator over cfg (with the link figures it asks of a profile)
 * and an engine of `policy` on it. */
static void sim_engine_new(struct ema_config *cfg, const struct ema_policy_ops *policy,
			   struct ema_workload *w, struct ema_platform **p, struct ema_engine **e)
{
	struct ema_platform_params params;
	struct ema_error err = {0};

	cfg->hw.host_link_gbps = 10;
	cfg->hw.copy_engines = 2;
	cfg->hw.gather_gbps = 60;
	*p = NULL;
	*e = NULL;
	CU_ASSERT_EQUAL_FATAL(ema_engine_platform_params(&params, cfg, policy), EMA_OK);
	if (ema_sim_platform_create(p, &params, NULL, &err) != EMA_OK)
		fprintf(stderr, "\n%s\n", err.msg);
	CU_ASSERT_PTR_NOT_NULL_FATAL(*p);
	CU_ASSERT_EQUAL_FATAL(ema_engine_new(e, cfg, policy, *p, w, &err), EMA_OK);
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
	struct ema_leap_range range = { .free_min = 0, .free_max = INT32_MAX };
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

/* ema's leap_ok and leap_holds by hand, the same 3 GPUs of 100 KV pages,
 * headroom 5% (5 pages): a leap of tenant 1 may take its GPU's free pages
 * anywhere (the engine brings a leap up to date before another tenant's
 * event, so that what tenant 0 is told is what stepping would tell it);
 * with its feedback on (the defaults) ema asks for each leapt step's plan.
 * It leaps, and a leap holds, while no lender with a tenant is under its
 * headroom (its after_iteration would reclaim there); while tenant 1's
 * GPU lends, its own free pages must stay at or above its headroom too
 * (the range). A tenant that read remote KV leaps once it holds none,
 * but not while it keeps pages for staging. */
static void test_ema_range(void)
{
	struct ema_request_spec r0[1] = {{0, 1, 1}}, r1[1] = {{0, 1, 1}}, r2[1] = {{0, 1, 1}};
	struct ema_workload w[3] = {{r0, 1, 1}, {r1, 1, 1}, {r2, 1, 1}};
	const struct ema_policy_ops *ema = ema_policy_find("ema");
	struct ema_leap_range range = { .free_min = 0, .free_max = INT32_MAX };
	struct ema_iteration it;
	struct ema_config cfg;
	struct ema_engine e;
	struct ema_error err = {0};
	struct mock *m;
	int32_t lent_by_1;

	lending_config(&cfg, 3);
	m = mock_new(&cfg);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ema);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ema->leap_ok);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ema->leap_holds);
	CU_ASSERT_EQUAL_FATAL(ema_engine_create(&e, &cfg, ema, &m->base, w, &err), EMA_OK);
	for (int i = 0; i < 60; i++)
		CU_ASSERT(ema_ledger_alloc(&e.ledger, 2, 2, EMA_PAGE_KV) >= 0);
	CU_ASSERT_TRUE(ema->leap_ok(&e.ctx, e.policy_state, 1, &range));
	CU_ASSERT_EQUAL(range.free_min, 0);
	CU_ASSERT_EQUAL(range.free_max, INT32_MAX);
	CU_ASSERT_TRUE(range.plan_each);
	range = (struct ema_leap_range){ .free_min = 0, .free_max = INT32_MAX };
	CU_ASSERT_TRUE(ema->leap_holds(&e.ctx, e.policy_state, 1, &range));
	CU_ASSERT_EQUAL(range.free_min, 0);
	/* tenant 0 borrows a page of GPU 1: tenant 1 leaps above its headroom */
	lent_by_1 = ema_ledger_alloc(&e.ledger, 1, 0, EMA_PAGE_KV);
	range = (struct ema_leap_range){ .free_min = 0, .free_max = INT32_MAX };
	CU_ASSERT_TRUE(ema->leap_holds(&e.ctx, e.policy_state, 1, &range));
	CU_ASSERT_EQUAL(range.free_min, 5);
	CU_ASSERT_EQUAL(range.free_max, INT32_MAX);
	/* ... and starts one while it lends, each leapt step noted as the
	 * engine plays it back (its steps measure its slowdown for its
	 * borrowers: policies/ema.c, ema_leap_ok) */
	range = (struct ema_leap_range){ .free_min = 0, .free_max = INT32_MAX };
	CU_ASSERT_TRUE(ema->leap_ok(&e.ctx, e.policy_state, 1, &range));
	CU_ASSERT_EQUAL(range.free_min, 5);
	CU_ASSERT_TRUE(range.plan_each);
	ema_ledger_free(&e.ledger, 1, lent_by_1);
	range = (struct ema_leap_range){ .free_min = 0, .free_max = INT32_MAX };
	/* GPU 2 lends a page with 39 free, above its headroom: both hold */
	lent_by_1 = ema_ledger_alloc(&e.ledger, 2, 0, EMA_PAGE_KV);
	CU_ASSERT_TRUE(ema->leap_holds(&e.ctx, e.policy_state, 1, &range));
	CU_ASSERT_TRUE(ema->leap_ok(&e.ctx, e.policy_state, 1, &range));
	/* ... and with 5 free, at its headroom; at 4, under it, neither */
	while (ema_ledger_free_pages(&e.ledger, 2) > 5)
		CU_ASSERT(ema_ledger_alloc(&e.ledger, 2, 2, EMA_PAGE_KV) >= 0);
	CU_ASSERT_TRUE(ema->leap_holds(&e.ctx, e.policy_state, 1, &range));
	CU_ASSERT(ema_ledger_alloc(&e.ledger, 2, 2, EMA_PAGE_KV) >= 0);
	CU_ASSERT_FALSE(ema->leap_holds(&e.ctx, e.policy_state, 1, &range));
	CU_ASSERT_FALSE(ema->leap_ok(&e.ctx, e.policy_state, 1, &range));
	/* GPU 2 under its headroom but lending nothing: no reclaim, both hold */
	ema_ledger_free(&e.ledger, 2, lent_by_1);
	CU_ASSERT(ema_ledger_alloc(&e.ledger, 2, 2, EMA_PAGE_KV) >= 0);
	CU_ASSERT_TRUE(ema->leap_holds(&e.ctx, e.policy_state, 1, &range));
	CU_ASSERT_TRUE(ema->leap_ok(&e.ctx, e.policy_state, 1, &range));
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
	/* its sums are noted step by step as the engine plays leaps back, so
	 * a tenant that read remote KV leaps again once it holds none */
	CU_ASSERT_TRUE(ema->leap_ok(&e.ctx, e.policy_state, 1, &range));
	/* pages kept for staging: after_iteration would give them back */
	CU_ASSERT_EQUAL(ema_policy_staging_fill(&e.ctx, 1, 2), 2);
	CU_ASSERT_FALSE(ema->leap_ok(&e.ctx, e.policy_state, 1, &range));
	e.platform = NULL;
	mock_destroy(&m->base);
	ema_engine_destroy(&e);
}

/* Lenders leap while a borrower reads the pages they lend: tenant 0 of
 * four on a100x4_40gb, capped to 30 GiB, borrows from the other three,
 * whose decode steps leap with its reads crossing their GPUs (its steps
 * start and end those reads, so the lenders' steps are timed again at
 * every one); read in place and computed remotely (the lenders' steps
 * then slow with the attention they run). Then on 20 GiB GPUs with no
 * lender reserve and 20% headroom, so that the borrower takes a leaping
 * lender's pages down to where the lender's own next pages would take it
 * under its headroom (the engine must end that leap before). The same
 * files both ways. */
static void test_lenders_leap(void)
{
	static const char *const cases[3][3] = {
		{ "gpu_mem_cap_gib=30", "policy.ema.remote_path=inplace", "policy.ema.headroom=0.05" },
		{ "gpu_mem_cap_gib=30", "policy.ema.remote_path=compute", "policy.ema.headroom=0.05" },
		{ "gpu_mem_cap_gib=20", "policy.lender_reserve=0", "policy.ema.headroom=0.2" },
	};

	for (int c = 0; c < 3; c++) {
		char sets[10][400];
		const char *argv[10];
		int n = 0;

		snprintf(sets[n++], sizeof sets[0], "hardware=a100x4_40gb");
		snprintf(sets[n++], sizeof sets[0], "model=llama-3-8b");
		snprintf(sets[n++], sizeof sets[0], "policies=ema");
		for (int k = 0; k < 3; k++)
			snprintf(sets[n++], sizeof sets[0], "%s", cases[c][k]);
		for (int i = 0; i < 4; i++)
			snprintf(sets[n++], sizeof sets[0],
				 "tenants.%d={\"name\": \"t%d\", \"gpu\": %d, \"workload\": {\"source\": "
				 "\"synthetic\", \"duration_s\": %d, \"arrival\": \"poisson\", "
				 "\"rate_rps\": %d, \"seed\": %d}}", i, i, i, c == 2 ? 30 : 20,
				 i == 0 ? 12 : 3, i + 1);
		for (int k = 0; k < n; k++)
			argv[k] = sets[k];
		CU_ASSERT(same_both_ways(NULL, argv, n) > 0);
		CU_ASSERT(leaps_of("ema") > 0);
	}
}

/* Random scenarios, stepping against leaping: 3 or 4 tenants on h200x8,
 * a100x4 or h100x8, GPUs capped a little above the weights (or not), Poisson
 * or gamma arrivals at random rates (some tenants overloaded, some
 * nearly idle, so that GPUs lend and borrow, leaps start and are cut at
 * other tenants' events), under every policy, and ema with its staged
 * path and its feedback off too, its leapt steps planned through plan_leap
 * or one by one (EMA_PLAN_LEAP=0). Each must write the same files both
 * ways, and the set as a whole must have leapt. */
static void test_random_scenarios(void)
{
	static const char *const hw[] = { "h200x8", "a100x4_40gb", "h100x8" };
	static const char *const models[] = { "llama-3-8b", "llama-2-7b", "llama-2-13b" };
	static const char *const methods[] = { "gather", "batch", "per_page" };
	/* EMA_LEAP_ROUNDS and EMA_LEAP_SEED run more rounds, or others, for
	 * a longer search (EMA_KEEP_LEAP keeps the folders: a failing round's
	 * config.json replays it) */
	const char *env_rounds = getenv("EMA_LEAP_ROUNDS"), *env_seed = getenv("EMA_LEAP_SEED");
	int rounds = env_rounds != NULL && atoi(env_rounds) > 0 ? atoi(env_rounds) : 8;
	unsigned seed = env_seed != NULL ? (unsigned)strtoul(env_seed, NULL, 10) : 2026;
	uint64_t leaps = 0, ema_leaps = 0;

	for (int round = 0; round < rounds; round++) {
		char sets[24][600];
		const char *argv[24];
		int n = 0, tenants, m, h;

		seed = seed * 1103515245u + 12345u;
		tenants = 3 + (int)((seed >> 16) % 2);
		h = (int)((seed >> 8) % 3);
		snprintf(sets[n++], sizeof sets[0], "hardware=%s", hw[h]);
		m = (int)((seed >> 12) % 3);
		snprintf(sets[n++], sizeof sets[0], "model=%s", models[m]);
		/* room for the weights (26 GB for llama-2-13b) and some KV */
		snprintf(sets[n++], sizeof sets[0], "gpu_mem_cap_gib=%d",
			 round % 4 == 3 ? 0 : (m == 2 ? 30 : 16) + (int)((seed >> 4) % (h == 1 ? 9 : 25)));
		snprintf(sets[n++], sizeof sets[0], "seed=%u", 1 + round);
		if (round % 3 == 2)
			snprintf(sets[n++], sizeof sets[0], "policy.ema.remote_path=%s",
				 round % 2 ? "staged" : "compute");
		if (round % 4 == 1)
			snprintf(sets[n++], sizeof sets[0], "policy.ema.feedback_s=0");
		/* the serving knobs: chunked prefills of a random token budget
		 * (some chunk leaves a prompt one token, a decode's step), a
		 * small batch cap, a large watermark */
		if (round % 2 == 0) {
			snprintf(sets[n++], sizeof sets[0], "serving.chunked_prefill=true");
			snprintf(sets[n++], sizeof sets[0], "serving.max_batch_tokens=%u",
				 64 + (seed >> 6) % 960);
		}
		if (round % 3 == 1)
			snprintf(sets[n++], sizeof sets[0], "serving.max_batch=%u", 2 + (seed >> 10) % 30);
		if (round % 4 == 2)
			snprintf(sets[n++], sizeof sets[0], "serving.watermark=0.1");
		/* pages of 1 or 4 MiB, and reclaims that swap to a small host
		 * memory or drop */
		if (round % 4 == 3)
			snprintf(sets[n++], sizeof sets[0], "page_mib=%d", round % 8 == 3 ? 1 : 4);
		if (round % 3 == 2) {
			snprintf(sets[n++], sizeof sets[0], "policy.reclaim_mode=%s",
				 round % 2 ? "host" : "drop");
			snprintf(sets[n++], sizeof sets[0], "policy.host_gib=2");
		}
		/* the copies' method and a deeper prefetch window */
		if (round % 5 == 4)
			snprintf(sets[n++], sizeof sets[0], "policy.copy_method=%s",
				 methods[(seed >> 14) % 3]);
		if (round % 5 == 3)
			snprintf(sets[n++], sizeof sets[0], "policy.ema.prefetch_depth=2");
		for (int i = 0; i < tenants; i++) {
			double rate;

			seed = seed * 1103515245u + 12345u;
			rate = i == 0 ? 6 + (double)((seed >> 8) % 14) : 0.2 + (double)((seed >> 8) % 30) / 10;
			snprintf(sets[n++], sizeof sets[0],
				 "tenants.%d={\"name\": \"t%d\", \"gpu\": %d, \"workload\": {\"source\": "
				 "\"synthetic\", \"duration_s\": %d, \"arrival\": \"%s\", \"rate_rps\": %.1f, "
				 "\"cv\": %.1f, \"seed\": %d}}", i, i, i, 40 + (int)((seed >> 20) % 40),
				 (seed >> 3) % 2 ? "poisson" : "gamma", rate, 0.5 + (double)((seed >> 5) % 3),
				 round * 10 + i);
		}
		for (int k = 0; k < n; k++)
			argv[k] = sets[k];
		/* half the rounds plan ema's leapt steps one by one, between
		 * their pages' events, instead of through its plan_leap */
		if (round % 2 == 1)
			setenv("EMA_PLAN_LEAP", "0", 1);
		leaps += same_both_ways(NULL, argv, n);
		unsetenv("EMA_PLAN_LEAP");
		no_leaps_without_hook();
		if (leaps_of("ema") > 0)
			ema_leaps += (uint64_t)leaps_of("ema");
	}
	CU_ASSERT(leaps > 0);
	CU_ASSERT(ema_leaps > 0);
}

/* Random scenarios over every knob that changes what the engine and the
 * platform do (servers, models, page and block sizes, batch limits,
 * chunked prefills, horizons, ema's and the reclaims' knobs, remote
 * paths and copy methods, traces beside synthetic loads; the embedded
 * scenario's five policies; drawn by tests/random_scenario.h, which
 * `make vs-static` shares): each run stepping and leaping must write
 * the same files, and must run. A run may stop with the livelock the
 * model documents (doc/limitations.md) only if it does so both ways; it
 * is counted, not failed. Every third round (by its seed) puts requests
 * on their own pages after two reclaims (serving.reclaim_backoff=2), so that
 * the reclaim backoff's paths run too, every fourth reads remote KV by
 * remote attention (policy.ema.remote_path=compute), every eighth
 * corrects ema's predictions fast (feedback_s 0.05) and another eighth
 * loosens its TPOT budget (tpot_budget 1), one in
 * six lets oversize requests yield and another wait (serving.oversize), and
 * every fifth steps with the page lists the hardware backend keeps
 * (EMA_PAGE_LISTS=1), which must change nothing either. `make fuzz-scenarios` runs hundreds (with
 * EMA_WIDE_ROUNDS and EMA_WIDE_SEED; EMA_KEEP_LEAP keeps the folders,
 * whose config.json replays a round). A generator like this one, outside
 * the tree, found the bugs doc/limitations.md and the log tell of since
 * leaping came, and a simulated hour that took 58 s for 0.3 s of work. */
static void wide_round(uint32_t seed, int round, const char *traces, int *livelocks, int *ran)
{
	struct ema_random_scenario rs;
	const char **argv = rs.argv;
	char a[4200], b[4200];
	uint64_t la, lb;
	int n, ra, rb;
	char ea[EMA_ERROR_MSG_MAX];
	bool backoff_set = false, lists;

	CU_ASSERT_FATAL(ema_random_scenario(&rs, seed, traces, true));
	/* with the traces, only the scenarios that replay one: the others
	 * are test_leap's, run there */
	if (traces != NULL && rs.replays == 0)
		return;
	(*ran)++;
	n = rs.n;

	/* every third round puts requests on their own pages after two
	 * reclaims (the backoff's paths, which the default of 64 reaches
	 * only in a livelock), chosen by the seed so that the rest of the
	 * scenario is what earlier runs made */
	if (seed % 3 == 0) {
		argv[n++] = "serving.reclaim_backoff=2";
		backoff_set = true;
	}
	/* every fourth reads remote KV by remote attention, where the
	 * lenders' own steps slow with what they compute */
	if (seed % 4 == 2)
		argv[n++] = "policy.ema.remote_path=compute";
	/* two in eight: corrections by measured steps that follow every
	 * step, and a TPOT budget that lets the borrower double its step */
	if (seed % 8 == 0)
		argv[n++] = "policy.ema.feedback_s=0.05";
	if (seed % 8 == 4)
		argv[n++] = "policy.ema.tpot_budget=1";
	/* one in six lets oversize requests yield (started only with no
	 * request behind, given way when the front needs their pages), one
	 * in six wait as they did before serving.oversize (the default
	 * drops them at arrival) */
	if (seed % 6 == 1)
		argv[n++] = "serving.oversize=yield";
	if (seed % 6 == 3)
		argv[n++] = "serving.oversize=wait";
	/* and every fifth steps with the page lists the hardware backend
	 * keeps (EMA_PAGE_LISTS=1): its bookkeeping, checked without GPUs */
	lists = seed % 5 == 1;
	if (lists)
		setenv("EMA_PAGE_LISTS", "1", 1);
	quiet_errors = true;
	ra = run_once(NULL, argv, n, false, a, sizeof a, &la);
	snprintf(ea, sizeof ea, "%s", last_error);
	if (lists)
		unsetenv("EMA_PAGE_LISTS");
	rb = run_once(NULL, argv, n, true, b, sizeof b, &lb);
	quiet_errors = false;
	if (ra != EMA_OK || rb != EMA_OK) {
		bool known = ra == rb && strcmp(ea, last_error) == 0 && strstr(ea, "livelock") != NULL;

		*livelocks += known;
		if (!known) {
			CU_FAIL("a random scenario failed to run");
			fprintf(stderr, "\nwide round %d (seed %u): stepping %d \"%s\", leaping %d \"%s\"\n",
				round, seed, ra, ea, rb, last_error);
			if (lists)
				fprintf(stderr, "  (stepping with EMA_PAGE_LISTS=1)\n");
			for (int k = 0; k < n; k++)
				fprintf(stderr, "  --set '%s'\n", argv[k]);
		}
		return;
	}
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		char pa[4400], pb[4400];
		size_t na = 0, nb = 0;
		char *ta, *tb;

		snprintf(pa, sizeof pa, "%s/%s", a, files[i]);
		snprintf(pb, sizeof pb, "%s/%s", b, files[i]);
		ta = slurp(pa, &na);
		tb = slurp(pb, &nb);
		if (ta == NULL || tb == NULL || na != nb || memcmp(ta, tb, na) != 0) {
			CU_FAIL("stepping and leaping wrote different files");
			fprintf(stderr, "\nwide round %d (seed %u): %s differs (%s, %s)%s%s\n", round,
				seed, files[i], pa, pb,
				backoff_set ? " with serving.reclaim_backoff=2" : "",
				lists ? ", stepping with EMA_PAGE_LISTS=1" : "");
		}
		free(ta);
		free(tb);
	}
	if (getenv("EMA_KEEP_LEAP") == NULL) {
		ema_remove_tree(a);
		ema_remove_tree(b);
	}
}

/* The wide rounds, their replays on the public traces under `traces`
 * or, NULL, synthetic loads in their place (tests/random_scenario.h: the
 * rest of each scenario is the same). */
static void random_wide(const char *traces)
{
	const char *env_rounds = getenv("EMA_WIDE_ROUNDS"), *env_seed = getenv("EMA_WIDE_SEED");
	int rounds = env_rounds != NULL && atoi(env_rounds) > 0 ? atoi(env_rounds) : 6;
	uint32_t seed = env_seed != NULL ? (uint32_t)strtoul(env_seed, NULL, 10) : 7;
	int livelocks = 0, ran = 0;

	for (int round = 0; round < rounds; round++)
		wide_round(seed * 100003u + (uint32_t)round, round, traces, &livelocks, &ran);
	if (rounds > 6 || livelocks > 0)
		fprintf(stderr, "\n%d wide rounds from seed %u (%d run%s), %d stopped by the "
			"documented livelock both ways\n", rounds, seed, ran,
			traces != NULL ? ", those replaying a trace" : "", livelocks);
	CU_ASSERT(ran > 0);
}

/* test_leap: without the traces, whether or not they are there */
static void test_random_wide(void)
{
	random_wide(NULL);
}

/* tests/test_leap_traces: the rounds that replay a trace, on the traces */
static void test_random_wide_traces(void)
{
	const char *traces = ema_test_shared_traces();

	CU_ASSERT_PTR_NOT_NULL_FATAL(traces);
	random_wide(traces);
}

/* What a policy hook called for one tenant sees of the others' GPUs while
 * they leap: a probe policy that leaps wherever the engine can, with the
 * whole range of free pages (it relies on the engine alone), and logs the
 * free pages of every GPU each time borrowable is asked for a tenant.
 * Tenant 0 decodes long requests on GPU 0 (leaping); tenant 1's requests
 * arrive meanwhile, and each admission asks borrowable. Stepping and
 * leaping must log the same, and some calls must have come while tenant
 * 0 leapt: the engine brings a leap up to date before another tenant's
 * event (without that, GPU 0's pages would show as at the leap's start). */
#define PROBE_MAX 4096
struct probe_call {
	int64_t now;
	int tenant;
	int32_t free_pages[2];
};
static struct probe_call probe_log[2][PROBE_MAX];
static int probe_n[2], probe_run, probe_mid_leap;
static const struct ema_engine *probe_engine;

static int32_t probe_borrowable(const struct ema_policy_ctx *c, void *state, int tenant)
{
	struct probe_call *x;

	(void)state;
	if (probe_n[probe_run] == PROBE_MAX)
		return 0;
	x = &probe_log[probe_run][probe_n[probe_run]++];
	x->now = ema_policy_now(c);
	x->tenant = tenant;
	for (int g = 0; g < 2; g++)
		x->free_pages[g] = ema_ledger_free_pages(c->ledger, g);
	if (probe_engine != NULL && probe_engine->tenants[1 - tenant].leaping)
		probe_mid_leap++;
	return 0;
}

static bool probe_leap_ok(const struct ema_policy_ctx *c, void *state, int tenant,
			  struct ema_leap_range *r)
{
	(void)c;
	(void)state;
	(void)tenant;
	(void)r;
	return true;
}

static const struct ema_policy_ops probe_policy = {
	.name = "probe",
	.summary = "logs what borrowable sees; leaps wherever the engine can",
	.borrowable = probe_borrowable,
	.leap_ok = probe_leap_ok,
};

static void probe_once(bool leap, struct ema_workload *w, uint64_t *leaps)
{
	struct ema_config cfg;
	struct ema_platform *p;
	struct ema_engine *e;
	struct ema_error err = {0};

	/* 2 GPUs of 600 KV pages: nothing is ever short */
	tiny_config(&cfg, 2, (489 + 600) * 4.0 / 1024);
	sim_engine_new(&cfg, &probe_policy, w, &p, &e);
	ema_engine_set_leap(e, leap);
	probe_run = leap;
	probe_n[probe_run] = 0;
	probe_engine = e;
	CU_ASSERT_EQUAL(ema_engine_run(e, &err), EMA_OK);
	probe_engine = NULL;
	*leaps = ema_engine_leaps(e, NULL);
	CU_ASSERT_EQUAL(e->tenants[0].n_done, e->tenants[0].n_reqs);
	CU_ASSERT_EQUAL(e->tenants[1].n_done, e->tenants[1].n_reqs);
	ema_engine_free(e);
	p->ops->destroy(p);
}

static void test_hooks_see_leaps_settled(void)
{
	static struct ema_request_spec r0[8], r1[200];
	struct ema_workload w[2] = {{r0, 8, 8}, {r1, 200, 200}};
	uint64_t stepped, leapt;

	/* tenant 0: 8 requests at 0 of 40-token prompts, 300 to 900 tokens
	 * out (a page per 16 tokens: they grow and finish mid-leap) */
	for (int i = 0; i < 8; i++)
		r0[i] = (struct ema_request_spec){ 0, 40, 300 + 80 * i };
	/* tenant 1: one short request every 37 us */
	for (int i = 0; i < 200; i++)
		r1[i] = (struct ema_request_spec){ (int64_t)i * 37000, 20 + i % 50, 2 + i % 5 };
	probe_mid_leap = 0;
	probe_once(false, w, &stepped);
	CU_ASSERT_EQUAL(probe_mid_leap, 0);
	probe_once(true, w, &leapt);
	CU_ASSERT_EQUAL(stepped, 0);
	CU_ASSERT(leapt > 0);
	CU_ASSERT(probe_mid_leap > 10);
	CU_ASSERT(probe_n[0] > 100 && probe_n[0] < PROBE_MAX);
	CU_ASSERT_EQUAL(probe_n[0], probe_n[1]);
	for (int i = 0; i < probe_n[0] && i < probe_n[1]; i++)
		if (memcmp(&probe_log[0][i], &probe_log[1][i], sizeof probe_log[0][i]) != 0) {
			CU_FAIL("a hook saw a leaping tenant's GPU otherwise than stepping shows it");
			fprintf(stderr, "\ncall %d at %lld ns (tenant %d): stepping GPU 0 free %d, "
				"leaping %d\n", i, (long long)probe_log[0][i].now,
				probe_log[0][i].tenant, probe_log[0][i].free_pages[0],
				probe_log[1][i].free_pages[0]);
			break;
		}
}


/* A queue that waits for pages no longer stops a leap (issue 12: a leap
 * ends at "an arrival that could be admitted", not at any). Where the
 * policy has no borrowable, admission asks only the tenant's own free
 * pages, so a leap runs until the step whose end frees enough for the
 * front of the queue (or whose pages run out: a preemption), and arrivals
 * join the queue behind it; ema leaps a waiting tenant where it promises
 * that borrowable stays 0 (no GPU could lend it a page). A probe around
 * the policy's leap_ok notes whether requests waited at each leap begun:
 * some must have, and stepping and leaping must give every request the
 * same first-token and finish times and preemptions. */
static const struct ema_engine *waiting_engine;
static const struct ema_policy_ops *waiting_base;
static int waiting_leaps;         /* leaps begun with requests waiting */
static uint64_t waiting_asked_at; /* the engine's leaps when leap_ok last said yes */
static bool waiting_asked;        /* ... with requests waiting */
static struct ema_policy_ops waiting_policy;

static void waiting_count(void)
{
	if (waiting_asked && waiting_engine->leaps > waiting_asked_at)
		waiting_leaps++;
	waiting_asked = false;
}

static bool waiting_leap_ok(const struct ema_policy_ctx *c, void *state, int tenant,
			    struct ema_leap_range *r)
{
	bool ok = waiting_base->leap_ok(c, state, tenant, r);

	waiting_count();
	waiting_asked = ok && waiting_engine->tenants[tenant].waiting_n > 0 &&
			(waiting_base->borrowable == NULL || r->waiting_ok);
	waiting_asked_at = waiting_engine->leaps;
	return ok;
}

/* Runs `base` wrapped by the probe over `tenants` tenants of 100 KV pages
 * (16 tokens each) with workloads w; copies every request into out
 * (tenant by tenant, n each). */
static void waiting_once(const char *base, int tenants, bool chunked, bool leap,
			 struct ema_workload *w, struct ema_request *out, int n, uint64_t *leaps)
{
	struct ema_config cfg;
	struct ema_platform *p;
	struct ema_engine *e;
	struct ema_error err = {0};

	lending_config(&cfg, tenants);
	cfg.serving.chunked_prefill = chunked;
	cfg.serving.max_batch_tokens = chunked ? 512 : 4096;
	waiting_base = ema_policy_find(base);
	CU_ASSERT_PTR_NOT_NULL_FATAL(waiting_base);
	waiting_policy = *waiting_base;
	waiting_policy.leap_ok = waiting_leap_ok;
	sim_engine_new(&cfg, &waiting_policy, w, &p, &e);
	CU_ASSERT_EQUAL(e->tenants[0].kv_capacity_pages, 100);
	ema_engine_set_leap(e, leap);
	waiting_engine = e;
	waiting_leaps = 0;
	waiting_asked = false;
	CU_ASSERT_EQUAL(ema_engine_run(e, &err), EMA_OK);
	waiting_count();
	*leaps = ema_engine_leaps(e, NULL);
	for (int t = 0; t < tenants; t++) {
		CU_ASSERT_EQUAL(e->tenants[t].n_done, n);
		for (int i = 0; i < n && i < e->tenants[t].n_reqs; i++)
			out[t * n + i] = e->tenants[t].reqs[i];
	}
	waiting_engine = NULL;
	ema_engine_free(e);
	p->ops->destroy(p);
}

/* Stepping and leaping `base` over `tenants` copies of the stream (with
 * chunked prefills, 512 tokens a step: the queue's front is tried after
 * the decodes): the same records; returns the leaps begun with requests
 * waiting. */
static int waiting_both_ways(const char *base, int tenants, bool chunked)
{
	enum { N = 26 };
	static struct ema_request_spec r[4][N];
	static struct ema_request stepped[4 * N], leapt[4 * N];
	struct ema_workload w[4];
	uint64_t l_step, l_leap;
	int preempted = 0, waited;

	/* each tenant: 6 requests at 0 with 448-token prompts (28 pages:
	 * three fit in 100) and 150 to 400 tokens out, then one every 3 ms
	 * (a little later on each GPU, so that they do not tie) */
	for (int t = 0; t < tenants; t++) {
		for (int i = 0; i < N; i++)
			r[t][i] = (struct ema_request_spec){
				i < 6 ? 0 : (int64_t)(i - 5) * 3000000 + t * 1000, 448,
				150 + 50 * ((i + t) % 6) };
		w[t] = (struct ema_workload){ r[t], N, N };
	}
	waiting_once(base, tenants, chunked, false, w, stepped, N, &l_step);
	CU_ASSERT_EQUAL(l_step, 0);
	CU_ASSERT_EQUAL(waiting_leaps, 0);
	waiting_once(base, tenants, chunked, true, w, leapt, N, &l_leap);
	waited = waiting_leaps;
	CU_ASSERT(l_leap > 0);
	for (int i = 0; i < tenants * N; i++) {
		CU_ASSERT_EQUAL(stepped[i].first_token_ns, leapt[i].first_token_ns);
		CU_ASSERT_EQUAL(stepped[i].finish_ns, leapt[i].finish_ns);
		CU_ASSERT_EQUAL(stepped[i].preemptions, leapt[i].preemptions);
		preempted += stepped[i].preemptions;
	}
	/* the GPUs run out of pages at times: leaps end before those steps */
	CU_ASSERT(preempted > 0);
	return waited;
}

static void test_waiting_queue_leaps(void)
{
	for (int chunked = 0; chunked < 2; chunked++) {
		CU_ASSERT(waiting_both_ways("static", 1, chunked) >= 10);
		/* every GPU overloaded: ema's tenants wait with no page to
		 * borrow (each peer within its band), and leap on that promise */
		CU_ASSERT(waiting_both_ways("ema", 3, chunked) >= 10);
		/* (remote_direct borrows whatever a peer frees: fewer) */
		CU_ASSERT(waiting_both_ways("remote_direct", 3, chunked) > 0);
	}
}

/* ema's promise to a waiting tenant, by hand and on random states: 3 GPUs
 * of 100 KV pages, reserve 5% and headroom 5% (a band of 10 free pages
 * lent to no one), floor 25% (at most 75 lent). leap_holds gives
 * waiting_ok only where borrowable answers 0, and while another tenant
 * leaps on it, keeps a GPU that lends nothing only for its band within
 * it. */
static void test_ema_waiting_promise(void)
{
	struct ema_request_spec r0[1] = {{0, 1, 1}}, r1[1] = {{0, 1, 1}}, r2[1] = {{0, 1, 1}};
	struct ema_workload w[3] = {{r0, 1, 1}, {r1, 1, 1}, {r2, 1, 1}};
	const struct ema_policy_ops *ema = ema_policy_find("ema");
	struct ema_leap_range range;
	struct ema_config cfg;
	struct ema_engine e;
	struct ema_error err = {0};
	struct mock *m;
	int32_t held[3][100], lent[200];
	int n_held[3] = {0, 0, 0}, n_lent = 0, promised = 0, refused = 0;
	unsigned seed = 7;

	lending_config(&cfg, 3);
	m = mock_new(&cfg);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ema);
	CU_ASSERT_EQUAL_FATAL(ema_engine_create(&e, &cfg, ema, &m->base, w, &err), EMA_OK);
	/* tenant 0 full, its peers with 11 free pages: each could lend one */
	for (int g = 0; g < 3; g++)
		while (ema_ledger_free_pages(&e.ledger, g) > (g == 0 ? 0 : 11))
			held[g][n_held[g]++] = ema_ledger_alloc(&e.ledger, g, g, EMA_PAGE_KV);
	range = (struct ema_leap_range){ .free_max = INT32_MAX, .waiting = true };
	CU_ASSERT_FALSE(ema->leap_holds(&e.ctx, e.policy_state, 0, &range));
	CU_ASSERT(ema->borrowable(&e.ctx, e.policy_state, 0) > 0);
	/* at 10 free (the band) neither lends: the promise, and borrowable 0 */
	for (int g = 1; g < 3; g++)
		held[g][n_held[g]++] = ema_ledger_alloc(&e.ledger, g, g, EMA_PAGE_KV);
	range = (struct ema_leap_range){ .free_max = INT32_MAX, .waiting = true };
	CU_ASSERT_TRUE(ema->leap_holds(&e.ctx, e.policy_state, 0, &range));
	CU_ASSERT_TRUE(range.waiting_ok);
	CU_ASSERT_EQUAL(range.free_max, INT32_MAX);
	CU_ASSERT_EQUAL(ema->borrowable(&e.ctx, e.policy_state, 0), 0);
	CU_ASSERT_TRUE(ema->leap_ok(&e.ctx, e.policy_state, 0, &range));
	/* GPU 1 leaping while tenant 0 leaps on the promise: at most its band */
	range = (struct ema_leap_range){ .free_max = INT32_MAX, .others_wait = true };
	CU_ASSERT_TRUE(ema->leap_holds(&e.ctx, e.policy_state, 1, &range));
	CU_ASSERT_EQUAL(range.free_max, 10);
	CU_ASSERT_FALSE(range.waiting_ok);
	range = (struct ema_leap_range){ .free_max = INT32_MAX };
	CU_ASSERT_TRUE(ema->leap_holds(&e.ctx, e.policy_state, 1, &range));
	CU_ASSERT_EQUAL(range.free_max, INT32_MAX);
	/* random states: pages held and given back on every GPU, some of
	 * GPU 2's lent to tenant 0; the promise only where borrowable is 0 */
	for (int round = 0; round < 3000; round++) {
		int g, op;

		seed = seed * 1103515245u + 12345u;
		g = (int)((seed >> 16) % 3);
		op = (int)((seed >> 8) % 4);
		if (op == 0 && n_held[g] > 0) {
			ema_ledger_free(&e.ledger, g, held[g][--n_held[g]]);
		} else if (op == 1 && ema_ledger_free_pages(&e.ledger, g) > 0) {
			held[g][n_held[g]++] = ema_ledger_alloc(&e.ledger, g, g, EMA_PAGE_KV);
		} else if (op == 2 && g > 0 && n_lent < 200 && ema_ledger_free_pages(&e.ledger, g) > 0) {
			lent[n_lent++] = (g << 16) | ema_ledger_alloc(&e.ledger, g, 0, EMA_PAGE_KV);
		} else if (op == 3 && n_lent > 0) {
			n_lent--;
			ema_ledger_free(&e.ledger, lent[n_lent] >> 16, lent[n_lent] & 0xffff);
		}
		for (int t = 0; t < 3; t++) {
			bool holds;

			range = (struct ema_leap_range){ .free_max = INT32_MAX, .waiting = true };
			holds = ema->leap_holds(&e.ctx, e.policy_state, t, &range);
			if (holds && range.waiting_ok) {
				promised++;
				if (ema->borrowable(&e.ctx, e.policy_state, t) != 0) {
					CU_FAIL("ema promised a waiting tenant borrowable 0, and it was not");
					round = 3000;
					break;
				}
			} else {
				refused++;
			}
		}
	}
	CU_ASSERT(promised > 100);
	CU_ASSERT(refused > 100);
	e.platform = NULL;
	mock_destroy(&m->base);
	ema_engine_destroy(&e);
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{ "default scenario, with and without pressure", test_default },
		{ "published scenarios", test_published },
		{ "remote_direct's leap range by hand", test_remote_direct_range },
		{ "ema's leap range by hand", test_ema_range },
		{ "hooks see leaping GPUs as stepping does", test_hooks_see_leaps_settled },
		{ "a queue waiting for pages does not stop a leap", test_waiting_queue_leaps },
		{ "ema's promise to a waiting tenant by hand", test_ema_waiting_promise },
		{ "lenders leap while a borrower reads their pages", test_lenders_leap },
		{ "random scenarios, stepping against leaping", test_random_scenarios },
		{ "random scenarios over every knob, stepping against leaping", test_random_wide },
		{ NULL, NULL }
	};
	/* tests/test_leap_traces: the cases on the public traces */
	static const struct ema_test_case trace_cases[] = {
		{ "Azure conversation trace", test_azure_conv },
		{ "Azure code trace", test_azure_code },
		{ "Mooncake trace", test_mooncake },
		{ "ShareGPT lengths", test_sharegpt },
		{ "8 tenants in lock-step", test_lockstep },
		{ "random scenarios over every knob replaying the traces, stepping against leaping",
		  test_random_wide_traces },
		{ NULL, NULL }
	};
	int rc;

	/* (outside the program's temporary folder, which is removed at exit:
	 * EMA_KEEP_LEAP keeps this one) */
	snprintf(top, sizeof top, "%s/ema-leap.XXXXXX", ema_test_tmp());
	if (mkdtemp(top) == NULL)
		return 99;
	/* the policies' own knobs (policy.ema.KEY), as the program has them */
	if (ema_engine_register_policies(ema_policy_table) != EMA_OK)
		return 99;
	rc = ema_test_main("leap", cases, trace_cases);
	if (getenv("EMA_KEEP_LEAP") == NULL)
		ema_remove_tree(top);
	return rc;
}
