/* cmd_paths.c: `ema paths`, the map of which remote path wins where. For
 * the scenario's hardware and model, a borrower whose GPU is full (its
 * local-only step T0) holding r bytes on one lender: the step the cost
 * model predicts by each path (in place, staged, remote attention), the
 * lender's slowdown, and the path ema's planner reads those bytes by,
 * against r, with the lender idle and busy. With a decision log
 * (EMA_DECISION_LOG of a run) the simulator's steps go on the figure as
 * points. doc/model.md, "Which path wins where", shows the figure. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "engine.h"
#include "outdir.h"
#include "plots.h"
#include "policy.h"
#include "step_cost.h"

#define PATHS_GRID 64          /* points of r from 0 to one lender's KV */
#define PATHS_POINTS_MAX 20000 /* simulator points drawn (every k-th past it) */

static const enum ema_remote_path paths_order[3] = { EMA_PATH_INPLACE, EMA_PATH_STAGED,
						      EMA_PATH_COMPUTE };
static const char *const paths_label[3] = { "inplace", "staged", "compute" };

/* What the map is drawn from: the scenario's borrower, ema's budgets. */
struct paths_setup {
	const struct ema_hw_profile *hw;
	struct ema_path_step step;
	double kv_bytes;       /* one GPU's KV: the borrower's own, and the most one lender holds */
	double lender_budget;  /* policy.ema.lender_budget */
	double tpot_budget;    /* policy.ema.tpot_budget */
};

/* A double of ema's own knobs by name, from its key table (the values
 * the scenario sets, else the defaults). */
static double ema_knob(const struct ema_config *cfg, const char *name, double fallback)
{
	const struct ema_policy_ops *ema = ema_policy_find("ema");
	const unsigned char *blob;

	if (ema == NULL || ema->knobs == NULL)
		return fallback;
	blob = ema_config_policy_knobs(cfg, "ema");
	if (blob == NULL)
		blob = ema->knob_defaults;
	for (const struct ema_config_key *k = ema->knobs; k->key != NULL; k++)
		if (strcmp(k->key, name) == 0 && k->type == EMA_CFG_DBL) {
			double v;

			memcpy(&v, blob + k->off, sizeof v);
			return v;
		}
	return fallback;
}

static int setup_of(struct paths_setup *s, const struct ema_config *cfg, struct ema_error *err)
{
	struct ema_platform_params p;
	uint64_t weights = ema_model_weight_bytes(&cfg->model);
	uint64_t page, weight_pages;
	int layer_groups = cfg->serving.layer_groups > 0 ? cfg->serving.layer_groups : 1;
	int rc = ema_engine_platform_params(&p, cfg, ema_policy_find("static"));

	if (rc != EMA_OK)
		return ema_error_set(err, rc, "paths: the scenario's GPUs cannot be sized");
	page = p.page_bytes;
	weight_pages = (weights + page - 1) / page;
	if (p.pool_pages[0] <= weight_pages)
		return ema_error_set(err, EMA_ERR_INPUT,
				     "paths: %s's weights fill GPU 0 (%s): no KV to lend or borrow",
				     cfg->model_name, cfg->hw.name);
	s->hw = &cfg->hw;
	s->kv_bytes = (double)(p.pool_pages[0] - weight_pages) * (double)page;
	s->step.local_bytes = (double)weights + s->kv_bytes;
	s->step.t0_ns = ema_step_cost_local_ns(&cfg->hw, weights, (uint64_t)s->kv_bytes, 0, 0);
	s->step.layers = cfg->model.layers;
	s->step.method = cfg->policy.copy_method;
	s->step.slice_bytes = (double)page / layer_groups;
	s->lender_budget = ema_knob(cfg, "lender_budget", 0.05);
	s->tpot_budget = ema_knob(cfg, "tpot_budget", 0.10);
	return EMA_OK;
}

/* The path ema's planner reads r bytes by (policies/ema.c, read_path,
 * with no other load and no correction): the smallest max(step /
 * (1 + tpot_budget) T0, slowdown / lender_budget), ties to the shorter
 * step. Returns its index in paths_order; step and slow are per path. */
static int chosen(const struct paths_setup *s, const double *step, const double *slow)
{
	int best = -1;
	double best_score = INFINITY, best_t = INFINITY;
	double tmax = s->step.t0_ns * (1 + s->tpot_budget);

	for (int i = 0; i < 3; i++) {
		double score = fmax(step[i] / tmax, s->lender_budget > 0 ? slow[i] / s->lender_budget :
							  (slow[i] > 0 ? INFINITY : 0));

		if (score < 1.0)
			score = 1.0;
		if (best < 0 || score < best_score || (score == best_score && step[i] < best_t)) {
			best = i;
			best_score = score;
			best_t = step[i];
		}
	}
	return best;
}

/* One row of the map: each path's step and lender slowdown at r. */
static void map_at(const struct paths_setup *s, bool busy, double r, double *step, double *slow)
{
	for (int i = 0; i < 3; i++) {
		step[i] = ema_cost_path_step_ns(s->hw, &s->step, paths_order[i], busy, r);
		/* the slowdown ema budgets: the lender's cost per GB/s
		 * times the rate the borrower's local-only step reads r at */
		slow[i] = ema_cost_path_lender_s_per_gb(s->hw, paths_order[i]) * r / s->step.t0_ns;
	}
}

/* The map as a tidy table, a block of rows per lender state and path
 * (in that order, r rising: a line per path in gnuplot). */
static int write_map(const struct paths_setup *s, FILE *f)
{
	fputs("lender,remote_gb,remote_share,path,step_ms,step_vs_t0,lender_slowdown,"
	      "within_tpot_budget,within_lender_budget,chosen\n", f);
	for (int b = 0; b < 2; b++)
		for (int i = 0; i < 3; i++)
			for (int k = 0; k <= PATHS_GRID; k++) {
				double r = s->kv_bytes * k / PATHS_GRID, step[3], slow[3];
				int c;

				map_at(s, b == 1, r, step, slow);
				c = chosen(s, step, slow);
				fprintf(f, "%s,%.6f,%.6f,%s,%.6f,%.6f,%.6f,%d,%d,%d\n",
					b ? "busy" : "idle", r * 1e-9, r / (r + s->kv_bytes),
					paths_label[i], step[i] * 1e-6, step[i] / s->step.t0_ns,
					slow[i], step[i] <= s->step.t0_ns * (1 + s->tpot_budget),
					slow[i] <= s->lender_budget, i == c);
			}
	return ferror(f) ? -1 : 0;
}

/* The ranges of r each path is chosen over, on one line per lender
 * state, and how far the chosen path stays within both budgets. */
static void print_summary(const struct paths_setup *s, const struct ema_config *cfg)
{
	printf("paths: %s, %s, %.0f MiB pages: T0 %.3f ms (weights %.2f GB + KV %.2f GB, "
	       "memory-bound); budgets: lender %.0f%%, TPOT %.0f%% (policy.ema)\n",
	       cfg->hw.name, cfg->model_name, cfg->page_mib, s->step.t0_ns * 1e-6,
	       (s->step.local_bytes - s->kv_bytes) * 1e-9, s->kv_bytes * 1e-9,
	       s->lender_budget * 100, s->tpot_budget * 100);
	for (int b = 0; b < 2; b++) {
		int prev = -1;
		double from = 0, within = 0;

		printf("  lender %s:", b ? "busy" : "idle");
		for (int k = 1; k <= 4 * PATHS_GRID; k++) {
			double r = s->kv_bytes * k / (4 * PATHS_GRID), step[3], slow[3];
			int c;

			map_at(s, b == 1, r, step, slow);
			c = chosen(s, step, slow);
			if (step[c] <= s->step.t0_ns * (1 + s->tpot_budget) && slow[c] <= s->lender_budget)
				within = r;
			if (c != prev) {
				if (prev >= 0)
					printf(" %s %.2f-%.2f GB,", paths_label[prev], from * 1e-9, r * 1e-9);
				from = prev >= 0 ? r : 0;
				prev = c;
			}
		}
		printf(" %s %.2f-%.2f GB; within both budgets up to %.2f GB\n", paths_label[prev],
		       from * 1e-9, s->kv_bytes * 1e-9, within * 1e-9);
	}
}

/* Copies the borrower steps of a decision log (policies/ema.c's
 * EMA_DECISION_LOG) as points: path, GB read, measured step / T0. Every
 * header line starts a run; columns are found by name. */
static int write_points(const char *log, FILE *out, struct ema_error *err)
{
	FILE *f = fopen(log, "r");
	char line[4096];
	long lineno = 0, rows = 0, every = 1;
	int c_path = -1, c_bytes = -1, c_local = -1, c_meas = -1;
	int rc = EMA_OK;

	if (f == NULL)
		return ema_error_set(err, EMA_ERR_INPUT, "%s: %s", log, strerror(errno));
	/* first pass: how many rows, to keep every k-th past the limit */
	while (fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, "time_s,", 7) != 0)
			rows++;
	while (rows / every > PATHS_POINTS_MAX)
		every++;
	rewind(f);
	rows = 0;
	fputs("path,remote_gb,measured_vs_t0\n", out);
	while (fgets(line, sizeof line, f) != NULL) {
		char *field[16], *p = line;
		int n = 0;
		size_t len = strlen(line);

		lineno++;
		if (len == sizeof line - 1 && line[len - 1] != '\n') {
			rc = ema_error_set(err, EMA_ERR_INPUT, "%s:%ld: a line of at most %zu bytes "
					   "expected", log, lineno, sizeof line - 2);
			break;
		}
		line[strcspn(line, "\r\n")] = '\0';
		while (n < 16) {
			field[n++] = p;
			p = strchr(p, ',');
			if (p == NULL)
				break;
			*p++ = '\0';
		}
		if (strcmp(field[0], "time_s") == 0) {
			c_path = c_bytes = c_local = c_meas = -1;
			for (int i = 0; i < n; i++) {
				if (strcmp(field[i], "path") == 0)
					c_path = i;
				else if (strcmp(field[i], "bytes") == 0)
					c_bytes = i;
				else if (strcmp(field[i], "local_only_ms") == 0)
					c_local = i;
				else if (strcmp(field[i], "measured_ms") == 0)
					c_meas = i;
			}
			if (c_path < 0 || c_bytes < 0 || c_local < 0 || c_meas < 0) {
				rc = ema_error_set(err, EMA_ERR_INPUT, "%s:%ld: a decision log header "
						   "with path, bytes, local_only_ms and measured_ms "
						   "expected", log, lineno);
				break;
			}
			continue;
		}
		if (c_path < 0) {
			rc = ema_error_set(err, EMA_ERR_INPUT, "%s:%ld: the decision log's header "
					   "(time_s,...) expected first", log, lineno);
			break;
		}
		if (n <= c_path || n <= c_bytes || n <= c_local || n <= c_meas) {
			rc = ema_error_set(err, EMA_ERR_INPUT, "%s:%ld: %d fields, at least %d expected",
					   log, lineno, n,
					   1 + (c_meas > c_local ? (c_meas > c_bytes ? c_meas : c_bytes) :
						(c_local > c_bytes ? c_local : c_bytes)));
			break;
		}
		{
			char *end1, *end2, *end3;
			double bytes = strtod(field[c_bytes], &end1);
			double local = strtod(field[c_local], &end2);
			double meas = strtod(field[c_meas], &end3);
			bool known = false;

			if (*end1 != '\0' || *end2 != '\0' || *end3 != '\0' || !(bytes >= 0) ||
			    !(local > 0) || !(meas >= 0) || !isfinite(bytes) || !isfinite(meas)) {
				rc = ema_error_set(err, EMA_ERR_INPUT, "%s:%ld: numbers expected in bytes "
						   "(>= 0), local_only_ms (> 0) and measured_ms (>= 0)",
						   log, lineno);
				break;
			}
			for (int i = 0; i < 3; i++)
				known |= strcmp(field[c_path], paths_label[i]) == 0;
			if (bytes <= 0 || !known)
				continue; /* a prefill writing borrowed pages reads none */
			if (rows++ % every == 0)
				fprintf(out, "%s,%.6f,%.6f\n", field[c_path], bytes * 1e-9, meas / local);
		}
	}
	if (rc == EMA_OK && ferror(f))
		rc = ema_error_set(err, EMA_ERR_IO, "%s: read error", log);
	fclose(f);
	return rc;
}

static int write_file(const char *dir, const char *name, FILE **f, struct ema_error *err)
{
	char path[EMA_PATH_MAX + 128];

	snprintf(path, sizeof path, "%s/%s", dir, name);
	*f = fopen(path, "w");
	if (*f == NULL)
		return ema_error_set(err, EMA_ERR_IO, "%s: %s", path, strerror(errno));
	return EMA_OK;
}

static int paths_exec(const struct ema_cli_args *a, struct ema_error *err)
{
	struct ema_config *cfg = calloc(1, sizeof *cfg);
	struct paths_setup s;
	struct ema_outdir od;
	bool reserved = false;
	const char *log = a->n_args > 0 ? a->args[0] : NULL;
	FILE *f = NULL;
	int rc;

	if (cfg == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	rc = ema_config_load(cfg, a->config, a->sets, a->n_sets, err);
	if (rc == EMA_OK)
		rc = setup_of(&s, cfg, err);
	if (rc == EMA_OK && log != NULL) {
		/* checked before the folder is made: bad input writes nothing */
		FILE *null = fopen("/dev/null", "w");

		rc = null == NULL ? ema_error_set(err, EMA_ERR_IO, "/dev/null: %s", strerror(errno)) :
				    write_points(log, null, err);
		if (null != NULL)
			fclose(null);
	}
	if (rc == EMA_OK && a->out != NULL) {
		rc = ema_outdir_reserve(&od, "--out", a->out, "paths", err);
		reserved = rc == EMA_OK;
	}
	if (rc == EMA_OK)
		print_summary(&s, cfg);
	if (rc != EMA_OK || a->out == NULL)
		goto done;
	rc = write_file(od.tmp, "paths.csv", &f, err);
	if (rc == EMA_OK)
		rc = ema_file_close(f, write_map(&s, f) == 0 ? EMA_OK : EMA_ERR_IO, "paths.csv", err);
	if (rc == EMA_OK && log != NULL && (rc = write_file(od.tmp, "points.csv", &f, err)) == EMA_OK) {
		rc = write_points(log, f, err);
		rc = ema_file_close(f, rc, "points.csv", err);
	}
	if (rc == EMA_OK && (rc = write_file(od.tmp, "config.json", &f, err)) == EMA_OK) {
		rc = ema_config_write_json(cfg, f, err);
		rc = ema_file_close(f, rc, "config.json", err);
	}
	if (rc == EMA_OK && (rc = write_file(od.tmp, "paths_spec.gp", &f, err)) == EMA_OK) {
		char title[512];

		snprintf(title, sizeof title,
			 "Remote paths: %s, %s, T0 %.2f ms; budgets lender %.0f%%, TPOT %.0f%%",
			 cfg->hw.name, cfg->model_name, s.step.t0_ns * 1e-6, s.lender_budget * 100,
			 s.tpot_budget * 100);
		for (char *q = title; *q != '\0'; q++)
			if (*q == '"' || *q == '\\' || (unsigned char)*q < 0x20)
				*q = '_';
		fprintf(f, "datafile = \"paths.csv\"\npointsfile = \"%s\"\nfigtitle = \"%s\"\n"
			   "tpot_line = %.6f\nlender_line = %.6f\n",
			log != NULL ? "points.csv" : "", title, 1 + s.tpot_budget, s.lender_budget);
		rc = ema_file_close(f, EMA_OK, "paths_spec.gp", err);
	}
	if (rc == EMA_OK && EMA_GNUPLOT[0] != '\0') {
		char spec[EMA_PATH_MAX + 128], out[EMA_PATH_MAX + 128];

		snprintf(spec, sizeof spec, "%s/paths_spec.gp", od.tmp);
		snprintf(out, sizeof out, "%s/paths", od.tmp);
		rc = ema_plots_draw(od.tmp, EMA_GNUPLOT, "paths.gp", spec, out, NULL, err);
	}
	if (rc == EMA_OK)
		rc = ema_outdir_commit(&od, err);
	if (rc == EMA_OK) {
		reserved = false;
		printf("paths: %s/ (paths.csv%s, config.json%s)\n", od.path,
		       log != NULL ? ", points.csv" : "",
		       EMA_GNUPLOT[0] != '\0' ? ", paths.pdf, paths.png, paths.gp" :
						", paths.gp: gnuplot not found, no figure drawn");
	}
done:
	if (reserved)
		ema_outdir_abort(&od);
	free(cfg);
	return rc;
}

static const struct ema_cli_optuse paths_options[] = {
	{ EMA_OPT_CONFIG, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_SET, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_OUT, "the folder to write paths.csv, the figure and config.json to (it must "
	  "not exist); without it only the summary is printed", NULL, EMA_VALUE_NONE },
	{ EMA_OPT_HELP, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_NONE, NULL, NULL, EMA_VALUE_NONE },
};

static const char *const paths_examples[] = {
	"ema paths                                  # the default scenario's GPUs and model",
	"ema paths --set hardware=a100x8_80gb --set model=opt-30b -o runs/paths-a100",
	"EMA_DECISION_LOG=d.csv ema run -o r && ema paths d.csv -o runs/p  # steps too",
	NULL,
};

const struct ema_cli_cmd ema_cmd_paths = {
	.name = "paths",
	.summary = "map where each remote path (in place, staged, compute) wins",
	.usage = "[-c FILE] [-s KEY=VALUE]... [DECISION_LOG] [-o DIR]",
	.options = paths_options,
	.max_args = 1,
	.description =
		"For the scenario's hardware and model, a borrower whose GPU is full (its "
		"local-only step T0, memory-bound) holding r bytes on one lender, from none to a "
		"whole GPU's KV: the step the cost model predicts by each path (in place, staged, "
		"remote attention) against T0, the lender's slowdown, and the path ema's planner "
		"reads the bytes by (the smallest max(step / the TPOT budget's step, slowdown / "
		"the lender budget), as policies/ema.c's read_path with no other load), the lender "
		"idle and busy (running steps of its own). Prints the ranges of r each path is "
		"chosen over. With -o DIR: paths.csv, config.json and the figure paths.pdf and "
		"paths.png (gnuplot). With DECISION_LOG, a run's EMA_DECISION_LOG file: its "
		"borrower steps as points (measured step / T0 against the bytes read), at most "
		"20000 of them.",
	.examples = paths_examples,
	.fn = paths_exec,
};
