/* vs_static.c: is ema ever worse than static partitioning? Runs random
 * scenarios (tests/random_scenario.h, the wide rounds of `make
 * fuzz-scenarios`) under static and ema, ema at its default protections
 * (the link budgets, the TPOT budget, the lender guard and the queue
 * guard; the shared lending and reclaim knobs are drawn), and reports,
 * per tenant that completed and dropped as many requests under both, ema's
 * throughput, TTFT p50 and TPOT p50 against static's: each tenant past a
 * line, and the worst of each figure over all, borrowers and lenders
 * apart. A report, not a test: the lines are the published design's
 * claims (a borrower gains, a lender stays within 5%), and where ema
 * misses them is a finding, not a failure. `make vs-static VS_ROUNDS=N
 * VS_SEED=S`; EMA_VS_SET=KEY=VALUE adds one --set to every run (for
 * example policy.ema.queue_guard=false, to see what the guard changes).
 * A scenario with a tenant past a line is printed as the --set options
 * that replay it with `ema run`. Tenants that completed or dropped
 * other counts (ema admits what static drops at arrival, or a horizon
 * cuts one short) are counted apart: their ratios compare different
 * work. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "experiment.h"
#include "policy.h"
#include "random_scenario.h"
#include "test_main.h"

/* The lines a tenant is reported past: any tenant, ema's throughput
 * against static's and its TTFT p50; a lender, the published design's
 * guarantee (summary.csv's lender_guarantee: 5% on throughput and the
 * p50s). */
#define VS_THROUGHPUT_MIN 0.95
#define VS_TTFT_MAX 1.5
#define VS_LENDER_THROUGHPUT_MIN 0.95
#define VS_LENDER_P50_MAX 1.05

struct worst {
	double v;
	uint32_t seed;
	char tenant[EMA_NAME_MAX];
};

static void note_min(struct worst *w, double v, uint32_t seed, const char *tenant)
{
	if (isfinite(v) && (w->seed == 0 || v < w->v)) {
		w->v = v;
		w->seed = seed;
		snprintf(w->tenant, sizeof w->tenant, "%s", tenant);
	}
}

static void note_max(struct worst *w, double v, uint32_t seed, const char *tenant)
{
	if (isfinite(v) && (w->seed == 0 || v > w->v)) {
		w->v = v;
		w->seed = seed;
		snprintf(w->tenant, sizeof w->tenant, "%s", tenant);
	}
}

static double ratio(double a, double b)
{
	return b > 0 && isfinite(a) && isfinite(b) ? a / b : NAN;
}

static void print_worst(const char *what, const struct worst *w)
{
	if (w->seed == 0)
		printf("  %-36s -\n", what);
	else
		printf("  %-36s %.3f  (seed %u, %s)\n", what, w->v, w->seed, w->tenant);
}

int main(void)
{
	const char *env_rounds = getenv("EMA_VS_ROUNDS"), *env_seed = getenv("EMA_VS_SEED");
	const char *extra = getenv("EMA_VS_SET");
	int rounds = env_rounds != NULL && atoi(env_rounds) > 0 ? atoi(env_rounds) : 20;
	uint32_t seed0 = env_seed != NULL ? (uint32_t)strtoul(env_seed, NULL, 10) : 1;
	const char *traces = ema_test_shared_traces();
	struct worst thr_b = {0}, thr_l = {0}, ttft_b = {0}, ttft_l = {0}, tpot_b = {0},
		     tpot_l = {0};
	int failed = 0, compared = 0, apart = 0, past = 0, lenders = 0, changed = 0;

	if (extra != NULL && extra[0] == '\0')
		extra = NULL;
	if (ema_engine_register_policies(ema_policy_table) != EMA_OK)
		return 99;
	printf("ema against static on %d random scenarios from seed %u%s%s%s\n", rounds, seed0,
	       extra ? " (--set " : "", extra ? extra : "", extra ? ")" : "");
	printf("tenants past a line (throughput < %.2f or TTFT p50 > %.2f x static's; a "
	       "lender: throughput < %.2f or a p50 > %.2f):\n",
	       VS_THROUGHPUT_MIN, VS_TTFT_MAX, VS_LENDER_THROUGHPUT_MIN, VS_LENDER_P50_MAX);
	for (int round = 0; round < rounds; round++) {
		uint32_t seed = seed0 * 100003u + (uint32_t)round;
		struct ema_random_scenario rs;
		struct ema_experiment *x = calloc(1, sizeof *x);
		struct ema_error err = {0};
		int n, rc;
		bool shown = false;

		if (x == NULL || !ema_random_scenario(&rs, seed, traces, false)) {
			free(x);
			return 99;
		}
		n = rs.n;
		rs.argv[n++] = "policies=static,ema";
		if (extra != NULL)
			rs.argv[n++] = extra;
		rc = ema_config_load(&x->cfg, NULL, rs.argv, n, &err);
		if (rc == EMA_OK) {
			x->quiet = true;
			rc = ema_experiment_run(x, &err);
		}
		if (rc != EMA_OK || x->n_runs != 2) {
			printf("  seed %u: did not run: %s\n", seed, err.msg);
			failed++;
		}
		for (int t = 0; rc == EMA_OK && x->n_runs == 2 && t < x->cfg.n_tenants; t++) {
			const struct ema_tenant_result *st = &x->runs[0].results[t];
			const struct ema_tenant_result *em = &x->runs[1].results[t];
			bool lender = em->lent_peak_gib > 0 && em->borrowed_peak_gib == 0;
			double thr = ratio(em->throughput_tok_s, st->throughput_tok_s);
			double ttft = ratio(em->ttft_ms[0], st->ttft_ms[0]);
			double tpot = ratio(em->tpot_ms[0], st->tpot_ms[0]);

			if (em->completed != st->completed || em->dropped != st->dropped) {
				apart++;
				continue;
			}
			compared++;
			lenders += lender;
			changed += thr != 1.0 || ttft != 1.0 || tpot != 1.0;
			note_min(lender ? &thr_l : &thr_b, thr, seed, em->tenant);
			note_max(lender ? &ttft_l : &ttft_b, ttft, seed, em->tenant);
			note_max(lender ? &tpot_l : &tpot_b, tpot, seed, em->tenant);
			if (thr < VS_THROUGHPUT_MIN || ttft > VS_TTFT_MAX ||
			    (lender && (thr < VS_LENDER_THROUGHPUT_MIN || ttft > VS_LENDER_P50_MAX ||
					tpot > VS_LENDER_P50_MAX))) {
				past++;
				printf("  seed %u, %s (%s%s): throughput %.3f, TTFT p50 %.3f, TPOT p50 "
				       "%.3f x static's; %lld reclaims\n",
				       seed, em->tenant, x->cfg.hw.name, lender ? ", lender" : "", thr,
				       ttft, tpot, (long long)em->reclaims);
				/* the scenario, to replay: ema run --set ... for each */
				for (int k = 0; k < n && !shown; k++)
					printf("      --set '%s'\n", rs.argv[k]);
				shown = true;
			}
		}
		ema_experiment_free(x);
		free(x);
		if (!isatty(2))
			continue;
		fprintf(stderr, "\r%d/%d scenarios", round + 1, rounds);
	}
	if (isatty(2))
		fprintf(stderr, "\n");
	printf("%d past a line\n", past);
	printf("%d tenants compared (%d lenders; %d with any figure unlike static's), %d apart "
	       "(completed or dropped other counts), %d scenarios did not run\n",
	       compared, lenders, changed, apart, failed);
	printf("worst against static (ema / static):\n");
	print_worst("throughput, lowest, others", &thr_b);
	print_worst("throughput, lowest, lenders", &thr_l);
	print_worst("TTFT p50, highest, others", &ttft_b);
	print_worst("TTFT p50, highest, lenders", &ttft_l);
	print_worst("TPOT p50, highest, others", &tpot_b);
	print_worst("TPOT p50, highest, lenders", &tpot_l);
	return failed > 0 ? 1 : 0;
}
