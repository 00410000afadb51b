/* sweep.c: `ema sweep --vary KEY=V1,V2,... [--vary ...] [--config FILE]
 * [--set KEY=VALUE ...] [--out DIR] [--no-plots] [--quiet]`. Every point of
 * the cartesian product of the --vary lists runs like `ema run` with those
 * values added as --set overrides (so every error is the same as
 * `ema run`'s), in DIR/point-NNN/, and DIR/sweep.csv gathers the summary
 * rows of all points with one leading column per swept key. Swept seeds
 * are repetitions: DIR/sweep_stats.csv then gives, per combination of the
 * other keys and per (policy, tenant), the mean, standard deviation and
 * 95% confidence interval of the main metrics over the seeds. Like a run,
 * the folder appears complete or not at all. */
#include <errno.h>
#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "ema_build.h"
#include "experiment.h"
#include "plots.h"

#define SWEEP_MAX_KEYS EMA_CLI_MAX_VARY
#define SWEEP_MAX_VALUES 64
#define SWEEP_MAX_SETS EMA_CLI_MAX_SETS
#define SWEEP_MAX_POINTS 4096

struct sweep_key {
	char name[256];
	int n;
	char values[SWEEP_MAX_VALUES][128];
};

/* The metrics sweep_stats.csv summarises over seeds. */
#define SWEEP_N_STATS 5
static const char *const stat_names[SWEEP_N_STATS] = {
	"throughput_tok_s", "ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p99_ms",
};

/* One (point, policy, tenant) row kept for the statistics. */
struct sweep_row {
	int idx[SWEEP_MAX_KEYS];
	char policy[EMA_NAME_MAX];
	char tenant[EMA_NAME_MAX];
	double v[SWEEP_N_STATS];
	bool done;
};

struct sweep_rows {
	struct sweep_row *r;
	size_t n, cap;
};

static int keep_rows(struct sweep_rows *rows, const struct ema_experiment *x, const int *idx,
		     int n_keys)
{
	for (int i = 0; i < x->n_runs; i++)
		for (int t = 0; t < x->cfg.n_tenants; t++) {
			const struct ema_tenant_result *res = &x->runs[i].results[t];
			struct sweep_row *w;

			if (rows->n == rows->cap) {
				size_t cap = rows->cap ? 2 * rows->cap : 64;
				struct sweep_row *r = realloc(rows->r, cap * sizeof *r);

				if (r == NULL)
					return EMA_ERR_NOMEM;
				rows->r = r;
				rows->cap = cap;
			}
			w = &rows->r[rows->n++];
			memset(w, 0, sizeof *w);
			memcpy(w->idx, idx, (size_t)n_keys * sizeof *idx);
			snprintf(w->policy, sizeof w->policy, "%s", res->policy);
			snprintf(w->tenant, sizeof w->tenant, "%s", res->tenant);
			w->v[0] = res->throughput_tok_s;
			w->v[1] = res->ttft_ms[0];
			w->v[2] = res->ttft_ms[2];
			w->v[3] = res->tpot_ms[0];
			w->v[4] = res->tpot_ms[2];
		}
	return EMA_OK;
}

static void put_stat(FILE *f, double v)
{
	if (isnan(v) || isinf(v))
		fputs(",", f);
	else
		fprintf(f, ",%.6g", v);
}

/* Writes sweep_stats.csv: rows that differ only in the seed key form one
 * group. The interval is mean +- t(0.975, n - 1) x sd / sqrt(n), with the
 * sample standard deviation; a metric a seed could not measure (no
 * request finished) is left out of that metric's n. */
static int write_stats(FILE *f, struct sweep_rows *rows, const struct sweep_key *keys,
		       int n_keys, int seed_key)
{
	for (int k = 0; k < n_keys; k++)
		if (k != seed_key)
			fprintf(f, "%s,", keys[k].name);
	fputs("policy,tenant,seeds", f);
	for (int m = 0; m < SWEEP_N_STATS; m++)
		fprintf(f, ",%s_mean,%s_sd,%s_ci95_low,%s_ci95_high", stat_names[m],
			stat_names[m], stat_names[m], stat_names[m]);
	fputc('\n', f);
	for (size_t i = 0; i < rows->n; i++) {
		const struct sweep_row *a = &rows->r[i];
		int seeds = 0;

		if (a->done)
			continue;
		for (int k = 0; k < n_keys; k++) {
			const char *v = keys[k].values[a->idx[k]];

			if (k == seed_key)
				continue;
			fprintf(f, strchr(v, ',') != NULL ? "\"%s\"," : "%s,", v);
		}
		fprintf(f, "%s,%s", a->policy, a->tenant);
		for (size_t j = i; j < rows->n; j++) {
			struct sweep_row *b = &rows->r[j];
			bool same = strcmp(a->policy, b->policy) == 0 &&
				    strcmp(a->tenant, b->tenant) == 0;

			for (int k = 0; k < n_keys && same; k++)
				same = k == seed_key || a->idx[k] == b->idx[k];
			if (same) {
				b->done = true;
				seeds++;
			}
		}
		fprintf(f, ",%d", seeds);
		for (int m = 0; m < SWEEP_N_STATS; m++) {
			double sum = 0, sq = 0, mean, sd = NAN, half = NAN;
			int n = 0;

			for (size_t j = i; j < rows->n; j++) {
				const struct sweep_row *b = &rows->r[j];
				bool same = strcmp(a->policy, b->policy) == 0 &&
					    strcmp(a->tenant, b->tenant) == 0;

				for (int k = 0; k < n_keys && same; k++)
					same = k == seed_key || a->idx[k] == b->idx[k];
				if (same && !isnan(b->v[m])) {
					sum += b->v[m];
					n++;
				}
			}
			mean = n > 0 ? sum / n : NAN;
			for (size_t j = i; j < rows->n && n > 1; j++) {
				const struct sweep_row *b = &rows->r[j];
				bool same = strcmp(a->policy, b->policy) == 0 &&
					    strcmp(a->tenant, b->tenant) == 0;

				for (int k = 0; k < n_keys && same; k++)
					same = k == seed_key || a->idx[k] == b->idx[k];
				if (same && !isnan(b->v[m]))
					sq += (b->v[m] - mean) * (b->v[m] - mean);
			}
			if (n > 1) {
				sd = sqrt(sq / (n - 1));
				half = gsl_cdf_tdist_Pinv(0.975, n - 1) * sd / sqrt((double)n);
			}
			put_stat(f, mean);
			put_stat(f, sd);
			put_stat(f, mean - half);
			put_stat(f, mean + half);
		}
		fputc('\n', f);
	}
	return ferror(f) ? EMA_ERR_IO : EMA_OK;
}

static int parse_vary(const char *arg, struct sweep_key *k, struct ema_error *err)
{
	const char *eq = strchr(arg, '=');
	const char *p;

	if (eq == NULL || eq == arg || eq[1] == '\0')
		return ema_error_set(err, EMA_ERR_INPUT, "--vary %s: expected KEY=V1,V2,...", arg);
	snprintf(k->name, sizeof k->name, "%.*s", (int)(eq - arg), arg);
	k->n = 0;
	for (p = eq + 1; *p != '\0';) {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);

		if (len == 0 || len >= sizeof k->values[0])
			return ema_error_set(err, EMA_ERR_INPUT,
					     "--vary %s: expected non-empty values of at most %zu characters",
					     arg, sizeof k->values[0] - 1);
		if (k->n == SWEEP_MAX_VALUES)
			return ema_error_set(err, EMA_ERR_INPUT, "--vary %s: at most %d values",
					     arg, SWEEP_MAX_VALUES);
		snprintf(k->values[k->n++], sizeof k->values[0], "%.*s", (int)len, p);
		p += len + (c ? 1 : 0);
	}
	for (const char *q = k->name; *q; q++)
		if (*q == ',' || *q == '"' || *q == '\n')
			return ema_error_set(err, EMA_ERR_INPUT,
					     "--vary %s: a key cannot hold commas or quotes", arg);
	return EMA_OK;
}

/* Appends a point's summary rows to the sweep CSV, each prefixed with the
 * point's values (and the header once, prefixed with the keys). A value
 * with a comma is quoted. */
static int append_summary(FILE *out, const struct ema_experiment *x, bool header,
			  const struct sweep_key *keys, int n_keys, const int *idx, long point)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	char *line, *save = NULL;
	bool first = true;

	if (m == NULL)
		return EMA_ERR_NOMEM;
	ema_experiment_write_summary_csv(x, m);
	fclose(m);
	for (line = strtok_r(buf, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		if (first) {
			first = false;
			if (header) {
				for (int k = 0; k < n_keys; k++)
					fprintf(out, "%s,", keys[k].name);
				fprintf(out, "point,%s\n", line);
			}
			continue;
		}
		for (int k = 0; k < n_keys; k++) {
			const char *v = keys[k].values[idx[k]];

			if (strchr(v, ',') != NULL)
				fprintf(out, "\"%s\",", v);
			else
				fprintf(out, "%s,", v);
		}
		fprintf(out, "%ld,%s\n", point, line);
	}
	free(buf);
	return ferror(out) ? EMA_ERR_IO : EMA_OK;
}

static int sweep_exec(const struct ema_cli_args *a, struct ema_error *err)
{
	static struct sweep_key keys[SWEEP_MAX_KEYS];
	const char *config = a->config, *out = a->out;
	const char *sets[SWEEP_MAX_SETS + SWEEP_MAX_KEYS];
	static char point_sets[SWEEP_MAX_KEYS][512];
	int n_keys = 0, n_sets = 0, idx[SWEEP_MAX_KEYS] = {0};
	bool plots = a->plots, quiet = a->quiet;
	long points = 1;
	char path[EMA_PATH_MAX + 128], shown[EMA_PATH_MAX + 128];
	FILE *csv = NULL;
	struct ema_outdir od;
	struct sweep_rows rows = { NULL, 0, 0 };
	int rc = EMA_OK, seed_key = -1;

	for (int i = 0; i < a->n_vary; i++) {
		rc = parse_vary(a->vary[i], &keys[n_keys++], err);
		if (rc != EMA_OK)
			return rc;
	}
	for (int i = 0; i < a->n_sets; i++)
		sets[n_sets++] = a->sets[i];
	if (n_keys == 0)
		return ema_error_set(err, EMA_ERR_INPUT, "sweep: expected at least one --vary KEY=V1,V2,...");
	for (int k = 0; k < n_keys; k++)
		if (strcmp(keys[k].name, "seed") == 0 && keys[k].n >= 2)
			seed_key = k;
	for (int k = 0; k < n_keys; k++) {
		points *= keys[k].n;
		if (points > SWEEP_MAX_POINTS)
			return ema_error_set(err, EMA_ERR_INPUT, "sweep: more than %d points",
					     SWEEP_MAX_POINTS);
	}
	/* Every point's configuration is checked before anything runs, so a
	 * bad value fails at once with the --set it came from. */
	for (long pt = 0; pt < points; pt++) {
		struct ema_config *cfg = malloc(sizeof *cfg);
		long r = pt;

		if (cfg == NULL)
			return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
		for (int k = n_keys - 1; k >= 0; k--) {
			idx[k] = (int)(r % keys[k].n);
			r /= keys[k].n;
			snprintf(point_sets[k], sizeof point_sets[k], "%s=%s", keys[k].name,
				 keys[k].values[idx[k]]);
			sets[n_sets + k] = point_sets[k];
		}
		rc = ema_config_load(cfg, config, sets, n_sets + n_keys, err);
		free(cfg);
		if (rc != EMA_OK)
			return rc;
	}
	/* Reserved before the first point runs. The points are written
	 * inside od.tmp, so one registration removes them all on a signal,
	 * and a sweep killed outright leaves one OUT.tmp-PID, which the
	 * next sweep with the same --out removes. */
	rc = ema_outdir_reserve(&od, "--out", out, "sweep", err);
	if (rc != EMA_OK)
		return rc;
	snprintf(path, sizeof path, "%s/sweep.csv", od.tmp);
	snprintf(shown, sizeof shown, "%s/sweep.csv", od.shown);
	csv = fopen(path, "w");
	if (csv == NULL) {
		rc = ema_error_set(err, EMA_ERR_IO, "%s: cannot write: %s", shown, strerror(errno));
		goto fail;
	}
	for (long pt = 0; pt < points && rc == EMA_OK; pt++) {
		struct ema_experiment *x = calloc(1, sizeof *x);
		long r = pt;
		size_t clen = 0;

		if (x == NULL) {
			rc = ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
			break;
		}
		for (int k = n_keys - 1; k >= 0; k--) {
			idx[k] = (int)(r % keys[k].n);
			r /= keys[k].n;
			snprintf(point_sets[k], sizeof point_sets[k], "%s=%s", keys[k].name,
				 keys[k].values[idx[k]]);
			sets[n_sets + k] = point_sets[k];
		}
		if (!quiet) {
			fprintf(stderr, "ema: sweep point %ld/%ld:", pt + 1, points);
			for (int k = 0; k < n_keys; k++)
				fprintf(stderr, " %s", point_sets[k]);
			fputc('\n', stderr);
		}
		x->quiet = true;
		clen += (size_t)snprintf(x->command, sizeof x->command, "ema sweep point %ld:", pt);
		for (int k = 0; k < n_keys && clen < sizeof x->command; k++)
			clen += (size_t)snprintf(x->command + clen, sizeof x->command - clen,
						 " --set %s", point_sets[k]);
		rc = ema_config_load(&x->cfg, config, sets, n_sets + n_keys, err);
		if (rc == EMA_OK)
			rc = ema_experiment_run(x, err);
		if (rc == EMA_OK) {
			struct ema_outdir pod;
			char name[32];

			snprintf(name, sizeof name, "point-%03ld", pt);
			rc = ema_outdir_reserve_sub(&pod, &od, name, err);
			if (rc == EMA_OK)
				rc = ema_experiment_write(x, &pod, plots, err);
		}
		if (rc == EMA_OK) {
			errno = 0;
			rc = append_summary(csv, x, pt == 0, keys, n_keys, idx, pt);
			if (rc != EMA_OK) {
				/* say why: a full disk shows here first */
				rc = ema_file_close(csv, rc, shown, err);
				csv = NULL;
			}
		}
		if (rc == EMA_OK && seed_key >= 0 && keep_rows(&rows, x, idx, n_keys) != EMA_OK)
			rc = ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
		ema_experiment_free(x);
		free(x);
	}
	if (rc == EMA_OK) {
		rc = ema_file_close(csv, EMA_OK, shown, err);
		csv = NULL;
	}
	if (rc != EMA_OK)
		goto fail;
	if (seed_key >= 0) {
		snprintf(path, sizeof path, "%s/sweep_stats.csv", od.tmp);
		snprintf(shown, sizeof shown, "%s/sweep_stats.csv", od.shown);
		csv = fopen(path, "w");
		if (csv == NULL) {
			rc = ema_error_set(err, EMA_ERR_IO, "%s: cannot write: %s", shown,
					   strerror(errno));
			goto fail;
		}
		errno = 0;
		rc = write_stats(csv, &rows, keys, n_keys, seed_key);
		rc = ema_file_close(csv, rc, shown, err);
		csv = NULL;
		if (rc != EMA_OK)
			goto fail;
	}
	/* load curves against the swept value: one numeric key besides the
	 * seed (with seeds, means and their intervals from sweep_stats.csv) */
	if (plots && n_keys - (seed_key >= 0) == 1) {
		int x = seed_key == 0 ? 1 : 0;
		bool numeric = true;

		for (int v = 0; v < keys[x].n && numeric; v++) {
			char *end;

			strtod(keys[x].values[v], &end);
			numeric = *end == '\0';
		}
		if (numeric) {
			int rendered = 0;

			rc = ema_plots_render_sweep(od.tmp, EMA_GNUPLOT, keys[x].name, seed_key >= 0,
						    &rendered, err);
			if (rc != EMA_OK)
				goto fail;
		}
	}
	rc = ema_outdir_commit(&od, err);
	if (rc != EMA_OK) {
		free(rows.r);
		return rc;
	}
	printf("sweep: %ld points, results in %s/ (sweep.csv%s, point-NNN/)\n", points, od.path,
	       seed_key >= 0 ? ", sweep_stats.csv" : "");
	free(rows.r);
	return EMA_OK;
fail:
	if (csv != NULL)
		fclose(csv);
	free(rows.r);
	ema_outdir_abort(&od);
	return rc;
}

static const struct ema_cli_optuse sweep_options[] = {
	{ EMA_OPT_VARY, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_CONFIG, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_SET, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_SEED, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_OUT, "the sweep folder to create, as for ema run (one run folder per point "
	  "inside); default runs/sweep, runs/sweep-2, ...", NULL, EMA_VALUE_NONE },
	{ EMA_OPT_NO_PLOTS, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_QUIET, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_HELP, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_NONE, NULL, NULL, EMA_VALUE_NONE },
};

static const char *const sweep_examples[] = {
	"ema sweep --vary tenants.0.workload.rate_rps=8,10,12,14 "
	"--vary policy.borrow_rule=always,throughput --set policies=static,ideal,ema",
	"ema sweep --vary seed=1,2,3,4,5 --vary tenants.0.workload.rate_rps=10,14 "
	"--set policies=static,ema",
	NULL,
};

const struct ema_cli_cmd ema_cmd_sweep = {
	.name = "sweep",
	.summary = "run a scenario over every combination of --vary KEY=V1,V2,...",
	.usage = "--vary KEY=V1,V2,... [--vary ...] [-c FILE] [-s KEY=VALUE]... [--seed N] "
		 "[-o DIR] [--no-plots] [-q]",
	.options = sweep_options,
	.description =
		"Every point of the cartesian product of the --vary lists runs like 'ema run' with "
		"those values as extra --set overrides (after the others), into DIR/point-NNN/, a "
		"full run folder each; DIR/sweep.csv holds every point's summary rows with one "
		"leading column per swept key and a point column. Seeds swept with --vary "
		"seed=1,2,... are repetitions: DIR/sweep_stats.csv then gives, per combination of "
		"the other keys and per policy and tenant, the mean, standard deviation and 95% "
		"confidence interval of throughput and TTFT/TPOT p50/p99. With one numeric key "
		"besides the seed, and plots on, it draws the load curves "
		"DIR/sweep_METRIC.pdf and .png.\nEvery point's configuration is checked before "
		"anything runs; the folder appears complete or not at all.",
	.examples = sweep_examples,
	.fn = sweep_exec,
};
