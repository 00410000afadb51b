/* vs_static.c: is ema ever worse than static partitioning? Runs random
 * scenarios (tests/random_scenario.h, the wide rounds of `make
 * fuzz-scenarios`) under static and ema, ema at its default protections
 * (the link budgets, the TPOT budget, the lender guard and the queue
 * guard; the shared lending and reclaim knobs are drawn), and reports,
 * per tenant that completed and dropped as many requests under both, ema's
 * throughput, TTFT p50 and TPOT p50 against static's: each tenant past a
 * line, and the worst of each figure over all, borrowers and lenders
 * apart, and for lenders the paired medians (summary.csv's
 * vs_static_*_paired_p50: each request against itself under static,
 * where a p50 ratio moves with which request lands in the middle). A
 * report, not a test: the lines are the published design's
 * claims (a borrower gains, a lender stays within 5%), and where ema
 * misses them is a finding, not a failure. `make vs-static VS_ROUNDS=N
 * VS_SEED=S`; EMA_VS_SET=KEY=VALUE adds one --set to every run (for
 * example policy.ema.queue_guard=false, to see what the guard changes).
 * A scenario with a tenant past a line is printed as the --set options
 * that replay it with `ema run`, and EMA_VS_SHOW=SEED (`make vs-static
 * VS_SHOW=SEED`) prints those of any seed the report names. Tenants that completed or dropped
 * other counts (ema admits what static drops at arrival, or a horizon
 * cuts one short) are counted apart: their ratios compare different
 * work, so they are judged on what the two runs share, the requests
 * completed and the paired medians (which until 2026-12-03 the report
 * left out, and with them tenants at thousands of times static's TTFT:
 * doc/policies.md, "Oversize requests").
 *
 * EMA_VS_AGAINST=KEY=VALUE (`make vs-static VS_AGAINST=...`) runs ema a
 * second time on each scenario with that --set as well, and pairs the
 * two scenario by scenario: how many scenarios the setting changes, and
 * per tenant the largest loss and gain it brings against static (the
 * first run's ratio less the second's, in points of static's figure),
 * with the tenants past a line under each. That is the question a
 * change of a knob's default asks: what it changes, where, and by how
 * much. */
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
	double a, b; /* with EMA_VS_AGAINST: the two ratios it is the difference of */
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

/* The pairing's extremes: d = a - b, in points of static's figure, the
 * most negative in lo and the most positive in hi (none where no tenant
 * moved that way). */
static void note_pair(struct worst *lo, struct worst *hi, double a, double b, uint32_t seed,
		      const char *tenant)
{
	double d = 100.0 * (a - b);

	if (!isfinite(d))
		return;
	if (d < 0 && (lo->seed == 0 || d < lo->v)) {
		*lo = (struct worst){ d, seed, "", a, b };
		snprintf(lo->tenant, sizeof lo->tenant, "%s", tenant);
	}
	if (d > 0 && (hi->seed == 0 || d > hi->v)) {
		*hi = (struct worst){ d, seed, "", a, b };
		snprintf(hi->tenant, sizeof hi->tenant, "%s", tenant);
	}
}

static void print_pair(const char *what, const struct worst *w)
{
	if (w->seed == 0)
		printf("  %-40s none\n", what);
	else
		printf("  %-40s %+.1f points  (seed %u, %s: %.3f against %.3f x static's)\n", what,
		       w->v, w->seed, w->tenant, w->a, w->b);
}

/* Runs the scenario rs (argv[0 .. n - 1]) into *x; false (with the reason
 * printed) if it did not run with `want` runs. */
static bool run_scenario(struct ema_experiment *x, const char **argv, int n, int want,
			 uint32_t seed)
{
	struct ema_error err = {0};
	int rc = ema_config_load(&x->cfg, NULL, argv, n, &err);

	if (rc == EMA_OK) {
		x->quiet = true;
		x->silent = true;
		rc = ema_experiment_run(x, &err);
	}
	if (rc != EMA_OK || x->n_runs != want) {
		printf("  seed %u: did not run: %s\n", seed, err.msg);
		return false;
	}
	return true;
}

int main(void)
{
	const char *env_rounds = getenv("EMA_VS_ROUNDS"), *env_seed = getenv("EMA_VS_SEED");
	const char *extra = getenv("EMA_VS_SET"), *against = getenv("EMA_VS_AGAINST");
	int rounds = env_rounds != NULL && atoi(env_rounds) > 0 ? atoi(env_rounds) : 20;
	uint32_t seed0 = env_seed != NULL ? (uint32_t)strtoul(env_seed, NULL, 10) : 1;
	const char *traces = ema_test_shared_traces();
	struct worst thr_b = {0}, thr_l = {0}, ttft_b = {0}, ttft_l = {0}, tpot_b = {0},
		     tpot_l = {0}, pttft_b = {0}, pttft_l = {0}, ptpot_b = {0}, ptpot_l = {0};
	int failed = 0, compared = 0, apart = 0, past = 0, lenders = 0, changed = 0;
	int lenders_past = 0, lenders_past_paired = 0, lenders_paired_only = 0;
	/* tenants apart: ema completed more (admitting what static drops) or
	 * fewer; their paired medians still compare the requests both ran */
	struct worst pttft_a = {0}, ptpot_a = {0}, done_a = {0};
	int apart_more = 0, apart_fewer = 0, apart_past = 0;
	/* the pairing (EMA_VS_AGAINST) */
	struct worst thr_lo = {0}, thr_hi = {0}, ttft_lo = {0}, ttft_hi = {0}, tpot_lo = {0},
		     tpot_hi = {0};
	int paired = 0, scen_changed = 0, tenants_changed = 0, past_b = 0;

	if (extra != NULL && extra[0] == '\0')
		extra = NULL;
	if (against != NULL && against[0] == '\0')
		against = NULL;
	if (ema_engine_register_policies(ema_policy_table) != EMA_OK)
		return 99;
	if (getenv("EMA_VS_SHOW") != NULL && getenv("EMA_VS_SHOW")[0] != '\0') {
		/* one scenario's --set options, by the seed the report names */
		struct ema_random_scenario rs;
		uint32_t seed = (uint32_t)strtoul(getenv("EMA_VS_SHOW"), NULL, 10);

		if (!ema_random_scenario(&rs, seed, traces, false))
			return 99;
		for (int k = 0; k < rs.n; k++)
			printf("--set '%s'\n", rs.argv[k]);
		printf("--set 'policies=static,ema'\n");
		if (extra != NULL)
			printf("--set '%s'\n", extra);
		return 0;
	}
	printf("ema against static on %d random scenarios from seed %u%s%s%s\n", rounds, seed0,
	       extra ? " (--set " : "", extra ? extra : "", extra ? ")" : "");
	if (against != NULL)
		printf("paired with ema under --set %s on each (\"B\"; the first run is \"A\")\n",
		       against);
	printf("tenants past a line (throughput < %.2f or TTFT p50 > %.2f x static's; a "
	       "lender: throughput < %.2f or a p50 > %.2f):\n",
	       VS_THROUGHPUT_MIN, VS_TTFT_MAX, VS_LENDER_THROUGHPUT_MIN, VS_LENDER_P50_MAX);
	for (int round = 0; round < rounds; round++) {
		uint32_t seed = seed0 * 100003u + (uint32_t)round;
		struct ema_random_scenario rs;
		struct ema_experiment *x = calloc(1, sizeof *x), *y = NULL;
		int n;
		bool shown = false, ran, ran_b = false, scen_moved = false;

		if (x == NULL || !ema_random_scenario(&rs, seed, traces, false)) {
			free(x);
			return 99;
		}
		n = rs.n;
		rs.argv[n++] = "policies=static,ema";
		if (extra != NULL)
			rs.argv[n++] = extra;
		ran = run_scenario(x, rs.argv, n, 2, seed);
		if (ran && against != NULL) {
			/* ema again, with the setting it is paired against */
			const char *argv_b[40];
			int nb = 0;

			for (int k = 0; k < n; k++)
				argv_b[nb++] = strcmp(rs.argv[k], "policies=static,ema") == 0 ?
						       "policies=ema" : rs.argv[k];
			argv_b[nb++] = against;
			y = calloc(1, sizeof *y);
			if (y == NULL)
				return 99;
			ran_b = run_scenario(y, argv_b, nb, 1, seed);
			ran = ran && ran_b;
			paired += ran_b;
		}
		failed += !ran;
		for (int t = 0; ran && t < x->cfg.n_tenants; t++) {
			const struct ema_tenant_result *st = &x->runs[0].results[t];
			const struct ema_tenant_result *em = &x->runs[1].results[t];
			bool lender = em->lent_peak_gib > 0 && em->borrowed_peak_gib == 0;
			double thr = ratio(em->throughput_tok_s, st->throughput_tok_s);
			double ttft = ratio(em->ttft_ms[0], st->ttft_ms[0]);
			double tpot = ratio(em->tpot_ms[0], st->tpot_ms[0]);

			if (y != NULL) {
				const struct ema_tenant_result *eb = &y->runs[0].results[t];

				if (eb->throughput_tok_s != em->throughput_tok_s ||
				    eb->ttft_ms[0] != em->ttft_ms[0] || eb->tpot_ms[0] != em->tpot_ms[0] ||
				    eb->completed != em->completed || eb->dropped != em->dropped)
					scen_moved = true;
			}
			if (em->completed != st->completed || em->dropped != st->dropped) {
				double done = ratio((double)em->completed, (double)st->completed);

				apart++;
				apart_more += em->completed > st->completed;
				apart_fewer += em->completed < st->completed;
				note_max(&pttft_a, em->vs_static_ttft_paired, seed, em->tenant);
				note_max(&ptpot_a, em->vs_static_tpot_paired, seed, em->tenant);
				note_min(&done_a, done, seed, em->tenant);
				/* the same lines, on what the two counts allow: the
				 * requests both completed, each against itself, and
				 * the requests completed */
				if (done < VS_THROUGHPUT_MIN ||
				    em->vs_static_ttft_paired > VS_TTFT_MAX ||
				    (lender && (em->vs_static_ttft_paired > VS_LENDER_P50_MAX ||
						em->vs_static_tpot_paired > VS_LENDER_P50_MAX))) {
					apart_past++;
					printf("  seed %u, %s (%s%s, apart): completed %lld against "
					       "%lld, dropped %lld against %lld; paired TTFT %.3f, TPOT "
					       "%.3f x static's; %lld reclaims\n",
					       seed, em->tenant, x->cfg.hw.name, lender ? ", lender" : "",
					       (long long)em->completed, (long long)st->completed,
					       (long long)em->dropped, (long long)st->dropped,
					       em->vs_static_ttft_paired, em->vs_static_tpot_paired,
					       (long long)em->reclaims);
					for (int k = 0; k < n && !shown; k++)
						printf("      --set '%s'\n", rs.argv[k]);
					shown = true;
				}
				continue;
			}
			compared++;
			lenders += lender;
			changed += thr != 1.0 || ttft != 1.0 || tpot != 1.0;
			note_min(lender ? &thr_l : &thr_b, thr, seed, em->tenant);
			note_max(lender ? &ttft_l : &ttft_b, ttft, seed, em->tenant);
			note_max(lender ? &tpot_l : &tpot_b, tpot, seed, em->tenant);
			note_max(lender ? &pttft_l : &pttft_b, em->vs_static_ttft_paired, seed,
				 em->tenant);
			note_max(lender ? &ptpot_l : &ptpot_b, em->vs_static_tpot_paired, seed,
				 em->tenant);
			if (y != NULL) {
				/* the pairing: B's ratios, where B completed and dropped
				 * what static did too */
				const struct ema_tenant_result *eb = &y->runs[0].results[t];
				bool lender_b = eb->lent_peak_gib > 0 && eb->borrowed_peak_gib == 0;
				double thr2 = ratio(eb->throughput_tok_s, st->throughput_tok_s);
				double ttft2 = ratio(eb->ttft_ms[0], st->ttft_ms[0]);
				double tpot2 = ratio(eb->tpot_ms[0], st->tpot_ms[0]);

				if (eb->completed == st->completed && eb->dropped == st->dropped) {
					tenants_changed += thr != thr2 || ttft != ttft2 || tpot != tpot2;
					note_pair(&thr_lo, &thr_hi, thr, thr2, seed, em->tenant);
					/* (latencies: a rise is the loss) */
					note_pair(&ttft_lo, &ttft_hi, ttft, ttft2, seed, em->tenant);
					note_pair(&tpot_lo, &tpot_hi, tpot, tpot2, seed, em->tenant);
					past_b += thr2 < VS_THROUGHPUT_MIN || ttft2 > VS_TTFT_MAX ||
						  (lender_b && (thr2 < VS_LENDER_THROUGHPUT_MIN ||
								ttft2 > VS_LENDER_P50_MAX ||
								tpot2 > VS_LENDER_P50_MAX));
				}
			}
			bool by_p50 = thr < VS_THROUGHPUT_MIN || ttft > VS_TTFT_MAX ||
				      (lender && (thr < VS_LENDER_THROUGHPUT_MIN ||
						  ttft > VS_LENDER_P50_MAX || tpot > VS_LENDER_P50_MAX));
			/* a lender past the 5% line on its paired medians */
			bool by_paired = lender && (thr < VS_LENDER_THROUGHPUT_MIN ||
						    em->vs_static_ttft_paired > VS_LENDER_P50_MAX ||
						    em->vs_static_tpot_paired > VS_LENDER_P50_MAX);

			if (by_p50 || by_paired) {
				past += by_p50;
				printf("  seed %u, %s (%s%s): throughput %.3f, TTFT p50 %.3f, TPOT p50 "
				       "%.3f x static's (paired: %.3f, %.3f); %lld reclaims; %lld "
				       "requests%s\n",
				       seed, em->tenant, x->cfg.hw.name, lender ? ", lender" : "", thr,
				       ttft, tpot, em->vs_static_ttft_paired, em->vs_static_tpot_paired,
				       (long long)em->reclaims, (long long)em->completed,
				       by_p50 ? "" : "; past on the paired medians only");
				lenders_past += lender && by_p50;
				lenders_past_paired += by_p50 && by_paired;
				lenders_paired_only += !by_p50 && by_paired;
				/* the scenario, to replay: ema run --set ... for each */
				for (int k = 0; k < n && !shown; k++)
					printf("      --set '%s'\n", rs.argv[k]);
				shown = true;
			}
		}
		scen_changed += scen_moved;
		if (y != NULL) {
			ema_experiment_free(y);
			free(y);
		}
		ema_experiment_free(x);
		free(x);
		if (!isatty(2))
			continue;
		fprintf(stderr, "\r%d/%d scenarios", round + 1, rounds);
	}
	if (isatty(2))
		fprintf(stderr, "\n");
	printf("%d past a line", past);
	if (lenders_past > 0)
		printf("; of the %d lenders, %d also on the paired medians (each request's "
		       "TTFT and TPOT against its own under static)", lenders_past,
		       lenders_past_paired);
	printf("; %d lender%s past 5%% on the paired medians only\n", lenders_paired_only,
	       lenders_paired_only == 1 ? "" : "s");
	printf("%d tenants compared (%d lenders; %d with any figure unlike static's), %d apart "
	       "(completed or dropped other counts), %d scenarios did not run\n",
	       compared, lenders, changed, apart, failed);
	printf("of the %d apart, ema completed more in %d and fewer in %d; %d past a line on "
	       "the requests completed (< %.2f x static's) or the paired medians (TTFT > %.2f; "
	       "a lender's > %.2f)\n",
	       apart, apart_more, apart_fewer, apart_past, VS_THROUGHPUT_MIN, VS_TTFT_MAX,
	       VS_LENDER_P50_MAX);
	printf("worst against static (ema / static):\n");
	print_worst("throughput, lowest, others", &thr_b);
	print_worst("throughput, lowest, lenders", &thr_l);
	print_worst("TTFT p50, highest, others", &ttft_b);
	print_worst("TTFT p50, highest, lenders", &ttft_l);
	print_worst("TPOT p50, highest, others", &tpot_b);
	print_worst("TPOT p50, highest, lenders", &tpot_l);
	print_worst("paired TTFT, highest, others", &pttft_b);
	print_worst("paired TTFT, highest, lenders", &pttft_l);
	print_worst("paired TPOT, highest, others", &ptpot_b);
	print_worst("paired TPOT, highest, lenders", &ptpot_l);
	print_worst("requests completed, lowest, apart", &done_a);
	print_worst("paired TTFT, highest, apart", &pttft_a);
	print_worst("paired TPOT, highest, apart", &ptpot_a);
	if (against != NULL) {
		printf("A against B (--set %s), ema / static under A less under B, in points of "
		       "static's figure:\n", against);
		printf("  %d of %d scenarios changed; %d tenants' figures changed; past a line: "
		       "%d under A, %d under B\n",
		       scen_changed, paired, tenants_changed, past, past_b);
		print_pair("throughput, largest loss under A", &thr_lo);
		print_pair("throughput, largest gain under A", &thr_hi);
		print_pair("TTFT p50, largest fall under A", &ttft_lo);
		print_pair("TTFT p50, largest rise under A", &ttft_hi);
		print_pair("TPOT p50, largest fall under A", &tpot_lo);
		print_pair("TPOT p50, largest rise under A", &tpot_hi);
	}
	return failed > 0 ? 1 : 0;
}
