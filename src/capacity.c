/* capacity.c: `ema sweep --max-rate KEY --slo M=V,...`: the capacity of
 * each policy under a service-level objective, as Vidur-Search finds it
 * for its configurations: the largest value of a rate key at which every
 * tenant completes every request and meets every target, found by
 * bisection to a stated resolution, for every combination of the --vary
 * values, with seeds as repetitions (mean and 95% interval over them).
 *
 * Every probe is a run folder named by the hash of its effective
 * configuration (DIR/probes/HASH/, written whole), so a probe is never
 * run twice: a capacity search killed at any moment resumes where it was
 * by running the same command, and a search with another SLO or
 * resolution reuses the probes it shares. The bisection of each (values,
 * policy) runs in a worker process (-j); the results are then read back
 * from the probes on disk, so they do not depend on -j. */
#include "sweep.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ema_build.h"
#include "ema_commit.h"
#include "experiment.h"
#include "json_text.h"
#include "outdir.h"
#include "readfile.h"
#include "wallclock.h"

#define CAP_MAX_SLO 8
#define CAP_MAX_STEPS 60

struct cap_slo {
	char metric[64];
	double max;
};

struct cap {
	struct ema_sweep *s;         /* the --vary combinations (points) */
	struct ema_sweep_run *r;
	char key[256];
	double lo0, hi0;             /* the bracket given, or 0 */
	bool bracket;
	double res;                  /* resolution: absolute, or a fraction */
	bool res_rel;
	struct cap_slo slo[CAP_MAX_SLO];
	int n_slo;
	char dir[EMA_PATH_MAX];
	char unit[32];               /* column suffix: "rps" */
	bool quiet, cache_only;
};

/* One bisection: a combination and a policy. */
struct cap_group {
	long combo;
	char policy[EMA_NAME_MAX];
	double start;                /* KEY's value in the scenario */
	/* results */
	double met, missed;          /* largest rate met, smallest missed (NAN: none) */
	int probes;
	const char *bound;           /* "", "below_range", "above_range" */
};

/* ---- parsing -------------------------------------------------------------------- */

static int parse_number(const char *s, double *v)
{
	char *end;

	errno = 0;
	*v = strtod(s, &end);
	return end != s && *end == '\0' && errno == 0 && isfinite(*v) ? 0 : -1;
}

static int parse_args(struct cap *c, const struct ema_cli_args *a, struct ema_error *err)
{
	const char *eq = strchr(a->max_rate, '=');
	char buf[1024], *tok, *save = NULL;
	const char *unit;

	snprintf(c->key, sizeof c->key, "%.*s", eq ? (int)(eq - a->max_rate) : (int)strlen(a->max_rate),
		 a->max_rate);
	if (c->key[0] == '\0')
		return ema_error_set(err, EMA_ERR_INPUT, "--max-rate %s: expected KEY or KEY=LO,HI",
				     a->max_rate);
	if (eq != NULL) {
		char lo[64], hi[64];
		const char *comma = strchr(eq + 1, ',');

		if (comma == NULL || (size_t)(comma - eq - 1) >= sizeof lo || strlen(comma + 1) >= sizeof hi)
			return ema_error_set(err, EMA_ERR_INPUT, "--max-rate %s: expected KEY=LO,HI",
					     a->max_rate);
		snprintf(lo, sizeof lo, "%.*s", (int)(comma - eq - 1), eq + 1);
		snprintf(hi, sizeof hi, "%s", comma + 1);
		if (parse_number(lo, &c->lo0) || parse_number(hi, &c->hi0) || c->lo0 <= 0 ||
		    c->hi0 <= c->lo0)
			return ema_error_set(err, EMA_ERR_INPUT, "--max-rate %s: expected 0 < LO < HI",
					     a->max_rate);
		c->bracket = true;
	}
	unit = ema_config_key_unit(c->key);
	if (unit != NULL && strcmp(unit, "requests/s") == 0)
		snprintf(c->unit, sizeof c->unit, "rps");
	else if (unit != NULL && strcmp(unit, "factor") == 0)
		snprintf(c->unit, sizeof c->unit, "x");
	else if (unit != NULL)
		for (size_t i = 0, j = 0; unit[i] && j + 1 < sizeof c->unit; i++)
			c->unit[j++] = (unit[i] >= 'a' && unit[i] <= 'z') || (unit[i] >= '0' && unit[i] <= '9') ?
				       unit[i] : '_';
	if (a->slo == NULL)
		return ema_error_set(err, EMA_ERR_INPUT, "--max-rate: expected --slo METRIC=MAX,... "
				     "(ttft_p90_ms=2000,tpot_p99_ms=200)");
	if (strlen(a->slo) >= sizeof buf)
		return ema_error_set(err, EMA_ERR_INPUT, "--slo: too long");
	snprintf(buf, sizeof buf, "%s", a->slo);
	for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		char *e = strchr(tok, '=');
		struct cap_slo *o = &c->slo[c->n_slo];

		if (c->n_slo == CAP_MAX_SLO)
			return ema_error_set(err, EMA_ERR_INPUT, "--slo: at most %d targets", CAP_MAX_SLO);
		if (e == NULL || e == tok || (size_t)(e - tok) >= sizeof o->metric ||
		    parse_number(e + 1, &o->max) || o->max <= 0)
			return ema_error_set(err, EMA_ERR_INPUT, "--slo %s: expected METRIC=MAX with MAX > 0 "
					     "(ttft_p90_ms=2000,tpot_p99_ms=200)", a->slo);
		snprintf(o->metric, sizeof o->metric, "%.*s", (int)(e - tok), tok);
		c->n_slo++;
	}
	c->res = 2;
	c->res_rel = true;
	if (a->resolution != NULL) {
		char r[64];
		size_t n = strlen(a->resolution);

		snprintf(r, sizeof r, "%s", a->resolution);
		c->res_rel = n > 1 && r[n - 1] == '%';
		if (c->res_rel)
			r[n - 1] = '\0';
		if (n >= sizeof r || parse_number(r, &c->res) || c->res <= 0 ||
		    (c->res_rel && c->res >= 100))
			return ema_error_set(err, EMA_ERR_INPUT, "--resolution %s: expected R > 0 (in the "
					     "key's unit) or R%% (0 < R < 100)", a->resolution);
	}
	return EMA_OK;
}

/* The summary columns an SLO can name: those of summary.csv's header. */
static int check_metrics(const struct cap *c, struct ema_error *err)
{
	struct ema_experiment *x = calloc(1, sizeof *x);
	char *buf = NULL;
	size_t len = 0;
	FILE *m;
	int rc = EMA_OK;

	if (x == NULL || (m = open_memstream(&buf, &len)) == NULL) {
		free(x);
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	}
	ema_experiment_write_summary_csv(x, m);
	fclose(m);
	buf[strcspn(buf, "\n")] = '\0';
	for (int i = 0; i < c->n_slo && rc == EMA_OK; i++) {
		char needle[80];

		snprintf(needle, sizeof needle, ",%s,", c->slo[i].metric);
		if (strstr(buf, needle) == NULL || strcmp(c->slo[i].metric, "policy") == 0 ||
		    strcmp(c->slo[i].metric, "tenant") == 0)
			rc = ema_error_set(err, EMA_ERR_INPUT, "--slo %s: not a column of summary.csv "
					   "(ttft_p50_ms, ttft_p90_ms, ttft_p99_ms, tpot_p99_ms, e2e_p99_ms, "
					   "...: doc/outputs.md)", c->slo[i].metric);
	}
	free(buf);
	free(x);
	return rc;
}

/* ---- probes ------------------------------------------------------------------------- */

static void rate_text(double v, char *buf, size_t n)
{
	snprintf(buf, n, "%.6g", v);
}

/* The configuration of a probe: the command's --set, the combination's
 * values, the one policy, the rate. */
static int probe_config(struct cap *c, const struct cap_group *g, double rate,
			struct ema_config *cfg, char hash[EMA_SHA256_HEX], struct ema_error *err)
{
	struct ema_sweep_run *r = c->r;
	char sets[EMA_SWEEP_MAX_KEYS][512], pol[EMA_NAME_MAX + 16], rv[64], kr[320];
	char *buf = NULL;
	size_t len = 0;
	FILE *m;
	int n = r->n_sets, rc;

	ema_sweep_point_sets(c->s, g->combo, sets);
	for (int k = 0; k < c->s->n_keys; k++)
		r->sets[n++] = sets[k];
	snprintf(pol, sizeof pol, "policies=%s", g->policy);
	r->sets[n++] = pol;
	rate_text(rate, rv, sizeof rv);
	snprintf(kr, sizeof kr, "%s=%s", c->key, rv);
	r->sets[n++] = kr;
	rc = ema_config_load(cfg, r->config, r->sets, n, err);
	if (rc != EMA_OK)
		return rc;
	m = open_memstream(&buf, &len);
	if (m == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	rc = ema_config_write_json(cfg, m, err);
	fclose(m);
	if (rc == EMA_OK)
		ema_sha256_of(buf, len, hash);
	free(buf);
	return rc;
}

/* Whether a probe's summary.csv meets the SLO: every tenant completed
 * every request, and every target holds (a metric it could not measure
 * misses). */
static int probe_verdict(const struct cap *c, const char *path, bool *met, struct ema_error *err)
{
	char *text = NULL, *line, *next, *save;
	int col[CAP_MAX_SLO], c_req = -1, c_done = -1, lineno = 0, rc;
	size_t len;

	rc = ema_read_file(path, "a probe's summary.csv", 0, &text, &len, err);
	if (rc != EMA_OK)
		return rc;
	*met = true;
	for (int i = 0; i < c->n_slo; i++)
		col[i] = -1;
	for (line = text; line != NULL && *line; line = next) {
		char *f[256];
		int nf = 0;

		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		lineno++;
		if (*line == '\0')
			continue;
		save = line;
		for (char *p = line; nf < 256; p++) {
			if (*p == ',' || *p == '\0') {
				bool end = *p == '\0';

				*p = '\0';
				f[nf++] = save;
				save = p + 1;
				if (end)
					break;
			}
		}
		if (lineno == 1) {
			for (int i = 0; i < nf; i++) {
				if (strcmp(f[i], "requests") == 0)
					c_req = i;
				if (strcmp(f[i], "completed") == 0)
					c_done = i;
				for (int k = 0; k < c->n_slo; k++)
					if (strcmp(f[i], c->slo[k].metric) == 0)
						col[k] = i;
			}
			if (c_req < 0 || c_done < 0) {
				free(text);
				return ema_error_at(err, path, 1, "expected requests and completed columns");
			}
			continue;
		}
		if (c_req >= nf || c_done >= nf || strcmp(f[c_req], f[c_done]) != 0)
			*met = false;
		for (int k = 0; k < c->n_slo; k++) {
			double v;

			if (col[k] < 0 || col[k] >= nf || parse_number(f[col[k]], &v) || v > c->slo[k].max)
				*met = false;
		}
	}
	free(text);
	return EMA_OK;
}

/* A probe: from DIR/probes/HASH if it ran before, else run and kept. */
static int probe(struct cap *c, struct cap_group *g, double rate, bool *met, struct ema_error *err)
{
	struct ema_experiment *x = calloc(1, sizeof *x);
	char hash[EMA_SHA256_HEX], name[20], pdir[EMA_PATH_MAX + 16], path[EMA_PATH_MAX + 64];
	struct stat st;
	int rc;

	if (x == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	g->probes++;
	rc = probe_config(c, g, rate, &x->cfg, hash, err);
	snprintf(name, sizeof name, "%.16s", hash);
	snprintf(pdir, sizeof pdir, "%s/probes", c->dir);
	snprintf(path, sizeof path, "%s/%s/summary.csv", pdir, name);
	if (rc == EMA_OK && stat(path, &st) != 0) {
		struct ema_outdir od;
		FILE *f;

		if (c->cache_only) {
			rc = ema_error_set(err, EMA_ERR_INTERNAL, "%s: a probe missing after the workers ran",
					   path);
			goto out;
		}
		x->quiet = true;
		snprintf(x->command, sizeof x->command, "ema sweep --max-rate probe: --set policies=%s "
			 "--set %s=%.6g", g->policy, c->key, rate);
		rc = ema_experiment_run(x, err);
		if (rc == EMA_OK)
			rc = ema_outdir_reserve_part(&od, pdir, name, false, err);
		if (rc == EMA_OK) {
			char p2[EMA_PATH_MAX + 160];

			snprintf(p2, sizeof p2, "%s/config.sha256", od.tmp);
			f = fopen(p2, "w");
			if (f == NULL) {
				ema_outdir_abort(&od);
				rc = ema_error_set(err, EMA_ERR_IO, "%s: cannot write: %s", p2, strerror(errno));
			} else {
				fprintf(f, "%s  config.json\n", hash);
				rc = ema_file_close(f, EMA_OK, p2, err);
				if (rc == EMA_OK)
					rc = ema_experiment_write(x, &od, false, err);
				else
					ema_outdir_abort(&od);
			}
		}
	}
	if (rc == EMA_OK)
		rc = probe_verdict(c, path, met, err);
	if (rc == EMA_OK && !c->quiet && !c->cache_only) {
		char sets[EMA_SWEEP_MAX_KEYS][512];

		ema_sweep_point_sets(c->s, g->combo, sets);
		fprintf(stderr, "ema: max-rate: %s", g->policy);
		for (int k = 0; k < c->s->n_keys; k++)
			fprintf(stderr, " %s", sets[k]);
		fprintf(stderr, ": %s=%.6g %s\n", c->key, rate, *met ? "meets the SLO" : "misses it");
	}
out:
	ema_experiment_free(x);
	free(x);
	return rc;
}

/* ---- the bisection -------------------------------------------------------------------- */

static bool close_enough(const struct cap *c, double lo, double hi)
{
	return hi - lo <= (c->res_rel ? c->res / 100.0 * lo : c->res);
}

static int bisect(struct cap *c, struct cap_group *g, struct ema_error *err)
{
	double lo, hi;
	bool met;
	int rc;

	g->probes = 0;
	g->met = g->missed = NAN;
	g->bound = "";
	if (c->bracket) {
		lo = c->lo0;
		hi = c->hi0;
		if ((rc = probe(c, g, lo, &met, err)) != EMA_OK)
			return rc;
		if (!met) {
			g->met = 0;
			g->missed = lo;
			g->bound = "below_range";
			return EMA_OK;
		}
		if ((rc = probe(c, g, hi, &met, err)) != EMA_OK)
			return rc;
		if (met) {
			g->met = hi;
			g->bound = "above_range";
			return EMA_OK;
		}
	} else {
		/* from the scenario's own rate: doubled until missed, or
		 * halved until met */
		double r = g->start;
		int steps = 0;

		if ((rc = probe(c, g, r, &met, err)) != EMA_OK)
			return rc;
		if (met) {
			lo = r;
			for (hi = 2 * r; steps < 20; hi *= 2, steps++) {
				if ((rc = probe(c, g, hi, &met, err)) != EMA_OK)
					return rc;
				if (!met)
					break;
				lo = hi;
			}
			if (met) {
				g->met = lo;
				g->bound = "above_range";
				return EMA_OK;
			}
		} else {
			hi = r;
			for (lo = r / 2; steps < 20; lo /= 2, steps++) {
				if ((rc = probe(c, g, lo, &met, err)) != EMA_OK)
					return rc;
				if (met)
					break;
				hi = lo;
			}
			if (!met) {
				g->met = 0;
				g->missed = hi;
				g->bound = "below_range";
				return EMA_OK;
			}
		}
	}
	for (int i = 0; i < CAP_MAX_STEPS && !close_enough(c, lo, hi); i++) {
		double mid;
		char t[64];

		/* on the grid of the rates written (%.6g), so that a probe's
		 * folder is found again */
		rate_text((lo + hi) / 2, t, sizeof t);
		mid = strtod(t, NULL);
		if (mid <= lo || mid >= hi)
			break;
		if ((rc = probe(c, g, mid, &met, err)) != EMA_OK)
			return rc;
		if (met)
			lo = mid;
		else
			hi = mid;
	}
	g->met = lo;
	g->missed = hi;
	return EMA_OK;
}

/* ---- groups ------------------------------------------------------------------------------ */

/* KEY's value in a configuration, from its JSON (any numeric key). */
static int key_value(const struct cap *c, const struct ema_config *cfg, double *v,
		     struct ema_error *err)
{
	char *buf = NULL, part[256];
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	cJSON *root, *it;
	const char *p = c->key;

	if (m == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	ema_config_write_json(cfg, m, NULL);
	fclose(m);
	root = cJSON_ParseWithLength(buf, len);
	free(buf);
	it = root;
	while (it != NULL && *p) {
		size_t n = strcspn(p, ".");

		snprintf(part, sizeof part, "%.*s", (int)n, p);
		it = cJSON_IsArray(it) ? cJSON_GetArrayItem(it, atoi(part))
				       : cJSON_GetObjectItemCaseSensitive(it, part);
		p += n + (p[n] == '.');
	}
	if (it == NULL || !cJSON_IsNumber(it)) {
		cJSON_Delete(root);
		return ema_error_set(err, EMA_ERR_INPUT, "--max-rate %s: not a numeric key of the "
				     "scenario", c->key);
	}
	*v = it->valuedouble;
	cJSON_Delete(root);
	if (*v <= 0 && !c->bracket)
		return ema_error_set(err, EMA_ERR_INPUT, "--max-rate %s: its value is %g; give the "
				     "range to search: --max-rate %s=LO,HI", c->key, *v, c->key);
	return EMA_OK;
}

static int make_groups(struct cap *c, struct cap_group **out, long *n_out, struct ema_error *err)
{
	struct ema_config *cfg = malloc(sizeof *cfg);
	struct ema_sweep_run *r = c->r;
	char sets[EMA_SWEEP_MAX_KEYS][512], hash[EMA_SHA256_HEX];
	struct cap_group *g = NULL;
	long n = 0;
	int rc = EMA_OK;

	if (cfg == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	for (long pt = 0; pt < c->s->n_points && rc == EMA_OK; pt++) {
		double start = 0;

		ema_sweep_point_sets(c->s, pt, sets);
		for (int k = 0; k < c->s->n_keys; k++)
			r->sets[r->n_sets + k] = sets[k];
		rc = ema_config_load(cfg, r->config, r->sets, r->n_sets + c->s->n_keys, err);
		if (rc == EMA_OK)
			rc = key_value(c, cfg, &start, err);
		if (rc != EMA_OK)
			break;
		{
			struct cap_group *ng = realloc(g, (size_t)(n + cfg->n_policies) * sizeof *g);

			if (ng == NULL) {
				rc = ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
				break;
			}
			g = ng;
		}
		for (int i = 0; i < cfg->n_policies && rc == EMA_OK; i++) {
			struct ema_config *pc = malloc(sizeof *pc);

			memset(&g[n], 0, sizeof g[n]);
			g[n].combo = pt;
			g[n].start = start;
			snprintf(g[n].policy, sizeof g[n].policy, "%s", cfg->policies[i]);
			/* every probe's configuration must load: a bad rate key
			 * fails here, before anything runs */
			if (pc == NULL)
				rc = ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
			else
				rc = probe_config(c, &g[n], c->bracket ? c->lo0 : start, pc, hash, err);
			free(pc);
			n++;
		}
	}
	free(cfg);
	if (rc != EMA_OK) {
		free(g);
		return rc;
	}
	*out = g;
	*n_out = n;
	return EMA_OK;
}

/* ---- output ----------------------------------------------------------------------------------- */

static void put_num(FILE *f, double v)
{
	if (isnan(v) || isinf(v))
		fputc(',', f);
	else
		fprintf(f, ",%.6g", v);
}

static void put_value(FILE *f, const char *v)
{
	fprintf(f, strchr(v, ',') != NULL ? "\"%s\"," : "%s,", v);
}

static int write_csv(const struct cap *c, const char *name, bool per_seed,
		     const struct cap_group *g, long n, struct ema_error *err)
{
	const struct ema_sweep *s = c->s;
	char path[EMA_PATH_MAX + 64], u[40], slo[512] = "";
	struct ema_outfile of;
	bool *done = calloc((size_t)n + 1, sizeof *done);
	double *v = malloc(((size_t)n + 1) * sizeof *v);
	FILE *f;
	int rc;

	if (done == NULL || v == NULL) {
		free(done);
		free(v);
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	}
	snprintf(u, sizeof u, "%s%s", c->unit[0] ? "_" : "", c->unit);
	for (int i = 0; i < c->n_slo; i++)
		snprintf(slo + strlen(slo), sizeof slo - strlen(slo), "%s%s<=%g", i ? " " : "",
			 c->slo[i].metric, c->slo[i].max);
	snprintf(path, sizeof path, "%s/%s", c->dir, name);
	rc = ema_outfile_reserve(&of, "--out", path, err);
	f = rc == EMA_OK ? ema_outfile_open(&of, err) : NULL;
	if (f == NULL) {
		free(done);
		free(v);
		return rc != EMA_OK ? rc : EMA_ERR_IO;
	}
	for (int k = 0; k < s->n_keys; k++)
		if (per_seed || k != s->seed_key)
			fprintf(f, "%s,", s->keys[k].name);
	if (per_seed)
		fprintf(f, "policy,met%s,missed%s,probes,bound,key,slo\n", u, u);
	else
		fprintf(f, "policy,seeds,max_rate%s_mean,max_rate%s_sd,max_rate%s_gmean,"
			"max_rate%s_ci95_low,max_rate%s_ci95_high,max_rate%s_min,max_rate%s_max,"
			"resolution%s,key,slo\n", u, u, u, u, u, u, u, c->res_rel ? "_pct" : u);
	for (long i = 0; i < n; i++) {
		int idx[EMA_SWEEP_MAX_KEYS], seeds = 0;
		double mn = INFINITY, mx = -INFINITY;
		struct ema_sweep_stat st;

		if (done[i])
			continue;
		ema_sweep_point_idx(s, g[i].combo, idx);
		for (int k = 0; k < s->n_keys; k++)
			if (per_seed || k != s->seed_key)
				put_value(f, s->keys[k].values[idx[k]]);
		if (per_seed) {
			fprintf(f, "%s", g[i].policy);
			put_num(f, g[i].met);
			put_num(f, g[i].missed);
			fprintf(f, ",%d,%s,%s,%s\n", g[i].probes, g[i].bound, c->key, slo);
			continue;
		}
		/* the seeds of this combination and policy */
		for (long j = i; j < n; j++) {
			int jdx[EMA_SWEEP_MAX_KEYS];
			bool same = strcmp(g[i].policy, g[j].policy) == 0;

			ema_sweep_point_idx(s, g[j].combo, jdx);
			for (int k = 0; k < s->n_keys && same; k++)
				same = k == s->seed_key || idx[k] == jdx[k];
			if (!same)
				continue;
			done[j] = true;
			v[seeds++] = g[j].met;
			mn = g[j].met < mn ? g[j].met : mn;
			mx = g[j].met > mx ? g[j].met : mx;
		}
		ema_sweep_stat(v, seeds, &st);
		fprintf(f, "%s,%d", g[i].policy, seeds);
		put_num(f, st.mean);
		put_num(f, st.sd);
		put_num(f, st.gmean);
		put_num(f, st.lo);
		put_num(f, st.hi);
		put_num(f, mn);
		put_num(f, mx);
		put_num(f, c->res);
		fprintf(f, ",%s,%s\n", c->key, slo);
	}
	free(done);
	free(v);
	return ema_outfile_commit(&of, err);
}

/* ---- the command ----------------------------------------------------------------------------- */

/* The scenario a search runs on, as capacity.json records it: the
 * effective configuration of the command's --config and --set (not the
 * --vary values, which are the searched combinations), with policies
 * written as "static", since each probe sets its own policy, as it sets
 * the searched key. */
static int scenario_text(struct cap *c, char **text, size_t *len, struct ema_error *err)
{
	struct ema_sweep_run *r = c->r;
	struct ema_config *cfg = malloc(sizeof *cfg);
	FILE *m;
	int rc;

	*text = NULL;
	if (cfg == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	r->sets[r->n_sets] = "policies=static";
	rc = ema_config_load(cfg, r->config, r->sets, r->n_sets + 1, err);
	if (rc == EMA_OK) {
		snprintf(c->s->scenario, sizeof c->s->scenario, "%s", cfg->name);
		m = open_memstream(text, len);
		if (m == NULL) {
			rc = ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
		} else {
			rc = ema_config_write_json(cfg, m, err);
			if (fclose(m) != 0 && rc == EMA_OK)
				rc = ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
		}
	}
	free(cfg);
	return rc;
}

/* Removes the dotted key path (object keys, array indices) from a tree:
 * the searched key's value is where each search starts, not what it is
 * about. */
static void drop_path(cJSON *o, const char *path)
{
	char head[256];
	const char *dot = strchr(path, '.');
	cJSON *next;

	snprintf(head, sizeof head, "%.*s", dot ? (int)(dot - path) : (int)strlen(path), path);
	if (cJSON_IsArray(o)) {
		char *end;
		long i = strtol(head, &end, 10);

		if (*end != '\0' || i < 0)
			return;
		if (dot == NULL) {
			cJSON_DeleteItemFromArray(o, (int)i);
			return;
		}
		next = cJSON_GetArrayItem(o, (int)i);
	} else {
		if (dot == NULL) {
			cJSON_DeleteItemFromObjectCaseSensitive(o, head);
			return;
		}
		next = cJSON_GetObjectItemCaseSensitive(o, head);
	}
	if (next != NULL)
		drop_path(next, dot + 1);
}

/* The first key whose value differs between two trees, for the message:
 * "hardware.name: \"h200x8\" there, \"h200x2\" here". */
static bool first_difference(const cJSON *a, const cJSON *b, char *path, size_t n, char *buf,
			     size_t len)
{
	if (cJSON_Compare(a, b, true))
		return false;
	if (cJSON_IsObject(a) && cJSON_IsObject(b)) {
		for (const cJSON *x = a->child; x != NULL; x = x->next) {
			const cJSON *y = cJSON_GetObjectItemCaseSensitive(b, x->string);
			size_t l = strlen(path);

			if (y == NULL)
				continue;
			snprintf(path + l, n - l, "%s%s", l ? "." : "", x->string);
			if (first_difference(x, y, path, n, buf, len))
				return true;
			path[l] = '\0';
		}
	} else if (cJSON_IsArray(a) && cJSON_IsArray(b) &&
		   cJSON_GetArraySize(a) == cJSON_GetArraySize(b)) {
		int i = 0;

		for (const cJSON *x = a->child; x != NULL; x = x->next, i++) {
			size_t l = strlen(path);

			snprintf(path + l, n - l, "%s%d", l ? "." : "", i);
			if (first_difference(x, cJSON_GetArrayItem(b, i), path, n, buf, len))
				return true;
			path[l] = '\0';
		}
	}
	{
		char *ta = cJSON_PrintUnformatted(a), *tb = cJSON_PrintUnformatted(b);

		snprintf(buf, len, "%s: %.80s there, %.80s here", path[0] ? path : "the whole scenario",
			 ta ? ta : "?", tb ? tb : "?");
		free(ta);
		free(tb);
	}
	return true;
}

/* A folder that holds a search already must hold one of this scenario
 * and key: probes of another (an h200x2 search into the folder of an
 * h200x8 one) would be mixed with this search's, and its capacity.csv
 * replaced by this one's. */
static int check_same_search(const struct cap *c, const char *path, const char *mine,
			     const char *opt, struct ema_error *err)
{
	char *text = NULL, diff[512] = "", where[1024] = "";
	size_t len = 0;
	cJSON *root = NULL, *old_cfg, *new_cfg = NULL;
	const cJSON *key, *cmd;
	int rc = ema_read_file(path, "capacity.json", 64u << 20, &text, &len, err);

	if (rc != EMA_OK)
		return rc;
	root = cJSON_ParseWithLength(text, len);
	free(text);
	if (!cJSON_IsObject(root)) {
		rc = ema_error_set(err, EMA_ERR_INPUT, "%s: not the JSON object ema writes; choose "
				   "another --out (or remove the folder), nothing was run", path);
		goto out;
	}
	old_cfg = cJSON_GetObjectItemCaseSensitive(root, "scenario_config");
	key = cJSON_GetObjectItemCaseSensitive(root, "key");
	cmd = cJSON_GetObjectItemCaseSensitive(root, "command");
	if (!cJSON_IsObject(old_cfg) || !cJSON_IsString(key)) {
		rc = ema_error_set(err, EMA_ERR_INPUT, "%s %s: holds a capacity search made by an "
				   "older ema, which did not record its scenario, so this one cannot "
				   "tell whether its probes are of the same; choose another --out (or "
				   "remove the folder), nothing was run", opt, c->dir);
		goto out;
	}
	if (cJSON_IsString(cmd))
		snprintf(where, sizeof where, " (made by: %.400s)", cmd->valuestring);
	if (strcmp(key->valuestring, c->key) != 0) {
		rc = ema_error_set(err, EMA_ERR_INPUT, "%s %s: holds a capacity search of another key "
				   "(%s there, %s here)%s; choose another --out, nothing was run", opt,
				   c->dir, key->valuestring, c->key, where);
		goto out;
	}
	new_cfg = cJSON_Parse(mine);
	if (new_cfg == NULL) {
		rc = ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
		goto out;
	}
	drop_path(old_cfg, c->key);
	drop_path(new_cfg, c->key);
	{
		char p[512] = "";

		if (first_difference(old_cfg, new_cfg, p, sizeof p, diff, sizeof diff))
			rc = ema_error_set(err, EMA_ERR_INPUT, "%s %s: holds a capacity search of another "
					   "scenario (%s)%s; choose another --out, nothing was run", opt,
					   c->dir, diff, where);
	}
out:
	cJSON_Delete(new_cfg);
	cJSON_Delete(root);
	return rc;
}

static int write_capacity_json(const struct cap *c, const char *path, const char *scen,
			       struct ema_error *err)
{
	FILE *f = fopen(path, "w");
	const char *name = c->s->scenario;

	if (f == NULL)
		return ema_error_set(err, EMA_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
	errno = 0;
	fprintf(f, "{\n  \"program\": \"ema\",\n  \"version\": \"%s\",\n  \"commit\": ",
		PACKAGE_VERSION);
	ema_json_put_string(f, ema_commit);
	fputs(",\n  \"kind\": \"capacity\",\n  \"command\": ", f);
	ema_json_put_string(f, c->s->command);
	fputs(",\n  \"scenario\": ", f);
	ema_json_put_string(f, name[0] ? name : "default");
	fputs(",\n  \"key\": ", f);
	ema_json_put_string(f, c->key);
	fputs(",\n  \"probes\": \"probes/HASH/: one run folder per probe, HASH the sha256 of its "
	      "config.json\",\n  \"scenario_config\": ", f);
	fputs(scen, f);
	fputs("}\n", f);
	return ema_file_close(f, EMA_OK, path, err);
}

static int open_dir(struct cap *c, const char *out, struct ema_error *err)
{
	char path[EMA_PATH_MAX + 64], *scen = NULL;
	const char *opt = out != NULL ? "--out" : "output folder";
	size_t scen_len = 0;
	struct stat st;
	int rc;

	snprintf(c->dir, sizeof c->dir, "%s", out != NULL ? out : "runs/capacity");
	rc = scenario_text(c, &scen, &scen_len, err);
	if (rc != EMA_OK) {
		free(scen);
		return rc;
	}
	if (out == NULL && mkdir("runs", 0777) != 0 && errno != EEXIST) {
		free(scen);
		return ema_error_set(err, EMA_ERR_INPUT, "runs: cannot create: %s", strerror(errno));
	}
	snprintf(path, sizeof path, "%s/capacity.json", c->dir);
	if (stat(c->dir, &st) == 0) {
		if (stat(path, &st) != 0)
			rc = ema_error_set(err, EMA_ERR_INPUT, "%s %s: already exists and is not a "
					   "capacity folder (no capacity.json); choose another, nothing "
					   "was run", opt, c->dir);
		else
			rc = check_same_search(c, path, scen, opt, err);
	} else {
		rc = ema_out_check_parent("--out", c->dir, err);
		if (rc == EMA_OK && mkdir(c->dir, 0777) != 0 && errno != EEXIST)
			rc = ema_error_set(err, EMA_ERR_INPUT, "--out %s: cannot create: %s", c->dir,
					   strerror(errno));
		if (rc == EMA_OK)
			rc = write_capacity_json(c, path, scen, err);
	}
	free(scen);
	if (rc != EMA_OK)
		return rc;
	snprintf(path, sizeof path, "%s/probes", c->dir);
	if (mkdir(path, 0777) != 0 && errno != EEXIST)
		return ema_error_set(err, EMA_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
	return EMA_OK;
}

int ema_capacity_exec(struct ema_sweep_run *r, const struct ema_cli_args *a, int jobs,
		      struct ema_error *err)
{
	struct cap *c = calloc(1, sizeof *c);
	struct cap_group *g = NULL;
	long n = 0;
	int rc;

	if (c == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	c->s = r->s;
	c->r = r;
	c->quiet = a->quiet;
	rc = parse_args(c, a, err);
	for (int k = 0; k < c->s->n_keys && rc == EMA_OK; k++)
		if (strcmp(c->s->keys[k].name, c->key) == 0)
			rc = ema_error_set(err, EMA_ERR_INPUT, "--max-rate %s: the key the search sets "
					   "cannot be varied too", c->key);
	if (rc == EMA_OK)
		rc = check_metrics(c, err);
	if (rc == EMA_OK)
		rc = make_groups(c, &g, &n, err);
	if (rc == EMA_OK)
		rc = open_dir(c, a->out, err);
	if (rc == EMA_OK && !a->quiet)
		fprintf(stderr, "ema: max-rate %s: %ld searches (values x policies), %d at once\n",
			c->dir, n, jobs < n ? jobs : (int)n);
	/* the searches: in workers, which fill the probe folders */
	if (rc == EMA_OK && jobs > 1 && n > 1) {
		long next = 0;
		int running = 0, failed = 0;

		while (next < n || running > 0) {
			int status;
			pid_t pid;

			while (next < n && running < jobs && !failed) {
				fflush(NULL);
				pid = fork();
				if (pid < 0)
					break;
				if (pid == 0) {
					struct ema_error e = {0};
					int wrc;

					ema_cleanup_forked();
					wrc = bisect(c, &g[next], &e);
					if (wrc != EMA_OK)
						fprintf(stderr, "ema: %s\n", e.msg);
					fflush(NULL);
					_exit(ema_status_exit(wrc));
				}
				ema_cleanup_add_child(pid);
				next++;
				running++;
			}
			if (running == 0)
				break;
			pid = waitpid(-1, &status, 0);
			if (pid < 0) {
				if (errno == EINTR)
					continue;
				break;
			}
			ema_cleanup_drop_child(pid);
			running--;
			if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
				failed = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
		}
		if (failed)
			rc = ema_error_set(err, failed == 2 ? EMA_ERR_INPUT : EMA_ERR_IO,
					   "max-rate %s: a search failed (its message is above); the "
					   "probes done are kept, the same command goes on from them", c->dir);
		c->cache_only = true;
	}
	/* the results, from the probes on disk (or run here with -j 1) */
	for (long i = 0; i < n && rc == EMA_OK; i++)
		rc = bisect(c, &g[i], err);
	if (rc == EMA_OK)
		rc = write_csv(c, "capacity_seeds.csv", true, g, n, err);
	if (rc == EMA_OK)
		rc = write_csv(c, "capacity.csv", false, g, n, err);
	if (rc == EMA_OK) {
		long probes = 0;

		for (long i = 0; i < n; i++)
			probes += g[i].probes;
		printf("max-rate: %ld searches, %ld probes, results in %s/ (capacity.csv, "
		       "capacity_seeds.csv, probes/)\n", n, probes, c->dir);
	}
	free(g);
	free(c);
	return rc;
}
