/* plot_data.c: the data files memory.gp and latency_cdf.gp draw, prepared
 * in C from timeline.csv and requests.csv: gnuplot's interpreter went over
 * the whole CSV once per curve and panel (minutes for an hour of trace
 * replay), where these files hold one block per curve, cut down to what a
 * figure can show (plot_data.h). */
#include "plot_data.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PD_MAX_FIELDS 64
#define PD_STACK 6

/* ---- reading a CSV file by column names ------------------------------ */

struct pd_csv {
	const char *path;
	FILE *f;
	char *line;
	size_t cap;
	long lineno;
	int n;                       /* fields of the current line */
	char *field[PD_MAX_FIELDS];
};

static void pd_split(struct pd_csv *c)
{
	char *p = c->line;
	size_t len = strlen(p);

	while (len > 0 && (p[len - 1] == '\n' || p[len - 1] == '\r'))
		p[--len] = '\0';
	c->n = 0;
	for (;;) {
		char *comma = strchr(p, ',');

		if (c->n < PD_MAX_FIELDS)
			c->field[c->n++] = p;
		if (comma == NULL)
			break;
		*comma = '\0';
		p = comma + 1;
	}
}

/* Opens path and finds each of names[0..n) in its header, into col[]. */
static int pd_open(struct pd_csv *c, const char *path, const char *const *names, int n,
		   int *col, struct ema_error *err)
{
	memset(c, 0, sizeof *c);
	c->path = path;
	c->f = fopen(path, "r");
	if (c->f == NULL)
		return ema_error_set(err, EMA_ERR_IO, "%s: cannot open (%s)", path, strerror(errno));
	if (getline(&c->line, &c->cap, c->f) < 0)
		return ema_error_at(err, path, 1, "expected a header line, found an empty file");
	c->lineno = 1;
	pd_split(c);
	for (int k = 0; k < n; k++) {
		col[k] = -1;
		for (int i = 0; i < c->n; i++)
			if (strcmp(c->field[i], names[k]) == 0)
				col[k] = i;
		if (col[k] < 0)
			return ema_error_at(err, path, 1, "expected a column '%s' in the header",
					    names[k]);
	}
	return EMA_OK;
}

/* The next non-empty row: 1, or 0 at the end, or a negative status. */
static int pd_next(struct pd_csv *c, int need, struct ema_error *err)
{
	while (getline(&c->line, &c->cap, c->f) >= 0) {
		c->lineno++;
		pd_split(c);
		if (c->n == 1 && c->field[0][0] == '\0')
			continue;
		if (c->n <= need)
			return ema_error_at(err, c->path, c->lineno,
					    "expected at least %d fields, found %d", need + 1, c->n);
		return 1;
	}
	if (ferror(c->f))
		return ema_error_set(err, EMA_ERR_IO, "%s: read error: %s", c->path, strerror(errno));
	return 0;
}

static void pd_close(struct pd_csv *c)
{
	if (c->f != NULL)
		fclose(c->f);
	free(c->line);
	memset(c, 0, sizeof *c);
}

/* A number of field i; *empty says the field was empty (no value). */
static int pd_number(struct pd_csv *c, int i, const char *name, double *v, bool *empty,
		     struct ema_error *err)
{
	char *end;
	const char *s = c->field[i];

	*empty = s[0] == '\0';
	if (*empty) {
		*v = NAN;
		return EMA_OK;
	}
	errno = 0;
	*v = strtod(s, &end);
	if (end == s || *end != '\0' || errno == ERANGE)
		return ema_error_at(err, c->path, c->lineno,
				    "expected a number in column %s, found '%s'", name, s);
	return EMA_OK;
}

static int pd_policy(const char *const *policies, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(policies[i], name) == 0)
			return (int)i;
	return -1;
}

/* ---- output ----------------------------------------------------------- */

static FILE *pd_create(const char *out, struct ema_error *err)
{
	FILE *f = fopen(out, "w");

	if (f == NULL)
		ema_error_set(err, EMA_ERR_IO, "%s: cannot create: %s", out, strerror(errno));
	return f;
}

static int pd_finish(FILE *f, const char *out, struct ema_error *err)
{
	bool bad = ferror(f) != 0;

	if (fclose(f) != 0 || bad) {
		remove(out);
		return ema_error_set(err, EMA_ERR_IO, "%s: write error", out);
	}
	return EMA_OK;
}

/* ---- memory over time -------------------------------------------------- */

struct pd_mrow {
	double t;
	double s[PD_STACK];
};

struct pd_series {
	struct pd_mrow *rows;
	size_t n, cap;
};

static int pd_series_push(struct pd_series *s, const struct pd_mrow *r)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		struct pd_mrow *n = realloc(s->rows, cap * sizeof *n);

		if (n == NULL)
			return EMA_ERR_NOMEM;
		s->rows = n;
		s->cap = cap;
	}
	s->rows[s->n++] = *r;
	return EMA_OK;
}

static void pd_write_mrow(FILE *f, const struct pd_mrow *r, const char *policy,
			  const char *gpu)
{
	fprintf(f, "%.10g", r->t);
	for (int k = 0; k < PD_STACK; k++)
		fprintf(f, " %.10g", r->s[k]);
	fprintf(f, " %s %s\n", policy, gpu);
}

/* One series, whole or as its per-bucket envelope. */
static void pd_write_series(FILE *f, const struct pd_series *s, const char *policy,
			    const char *gpu)
{
	double t0, span;
	size_t i = 0;

	if (s->n == 0) {
		fprintf(f, "NaN NaN NaN NaN NaN NaN NaN %s %s\n", policy, gpu);
		return;
	}
	if (s->n <= 2 * EMA_PLOTS_TIME_BUCKETS) {
		for (size_t k = 0; k < s->n; k++)
			pd_write_mrow(f, &s->rows[k], policy, gpu);
		return;
	}
	t0 = s->rows[0].t;
	span = s->rows[s->n - 1].t - t0;
	while (i < s->n) {
		long b = (long)((s->rows[i].t - t0) / span * EMA_PLOTS_TIME_BUCKETS);
		struct pd_mrow lo = s->rows[i], hi = s->rows[i];
		size_t j = i + 1;

		if (b >= EMA_PLOTS_TIME_BUCKETS)
			b = EMA_PLOTS_TIME_BUCKETS - 1;
		for (; j < s->n; j++) {
			long bj = (long)((s->rows[j].t - t0) / span * EMA_PLOTS_TIME_BUCKETS);

			if (bj >= EMA_PLOTS_TIME_BUCKETS)
				bj = EMA_PLOTS_TIME_BUCKETS - 1;
			if (bj != b)
				break;
			for (int k = 0; k < PD_STACK; k++) {
				lo.s[k] = fmin(lo.s[k], s->rows[j].s[k]);
				hi.s[k] = fmax(hi.s[k], s->rows[j].s[k]);
			}
		}
		/* the envelope from the bucket's first to its last time */
		pd_write_mrow(f, &lo, policy, gpu);
		if (j - i > 1) {
			hi.t = s->rows[j - 1].t;
			pd_write_mrow(f, &hi, policy, gpu);
		}
		i = j;
	}
}

/* A GPU's name travels through gnuplot's word(), as a policy's does. */
static bool pd_word_ok(const char *s)
{
	if (*s == '\0')
		return false;
	for (; *s != '\0'; s++)
		if ((unsigned char)*s <= ' ' || *s == '\'' || *s == '"' || *s == '\\' ||
		    *s == '`' || (unsigned char)*s == 0x7f)
			return false;
	return true;
}

int ema_plots_memory_data(const char *timeline_csv, const char *out,
			  const char *const *policies, size_t n_policies, char *gpus,
			  size_t size, struct ema_error *err)
{
	static const char *const names[] = {
		"policy", "time_s", "gpu", "weights_gib", "kv_used_gib", "staging_gib",
		"lent_gib", "free_gib", "borrowed_gib"
	};
	enum { C_POLICY, C_TIME, C_GPU, C_PART };
	int col[9], maxcol = 0, rc;
	char (*gpu_names)[32] = NULL;
	size_t n_gpus = 0, cap_gpus = 0, len = 0;
	struct pd_series *series = NULL; /* [policy * cap_gpus + gpu], regrown with the GPUs */
	struct pd_csv c;
	FILE *f = NULL;

	rc = pd_open(&c, timeline_csv, names, 9, col, err);
	if (rc != EMA_OK)
		goto out;
	for (int k = 0; k < 9; k++)
		if (col[k] > maxcol)
			maxcol = col[k];
	while ((rc = pd_next(&c, maxcol, err)) == 1) {
		struct pd_mrow r;
		double part[PD_STACK];
		bool empty;
		int p = pd_policy(policies, n_policies, c.field[col[C_POLICY]]);
		size_t g;

		if (p < 0)
			continue;
		rc = pd_number(&c, col[C_TIME], names[C_TIME], &r.t, &empty, err);
		for (int k = 0; k < PD_STACK && rc == EMA_OK; k++)
			rc = pd_number(&c, col[C_PART + k], names[C_PART + k], &part[k], &empty, err);
		if (rc != EMA_OK)
			goto out;
		/* the stack as memory.gp draws it: weights, KV in use, staging,
		 * lent, free (= capacity), then borrowed above it */
		r.s[0] = part[0];
		r.s[1] = r.s[0] + part[1];
		r.s[2] = r.s[1] + part[2];
		r.s[3] = r.s[2] + part[3];
		r.s[4] = r.s[3] + part[4];
		r.s[5] = r.s[4] + part[5];
		for (g = 0; g < n_gpus; g++)
			if (strcmp(gpu_names[g], c.field[col[C_GPU]]) == 0)
				break;
		if (g == n_gpus) {
			if (!pd_word_ok(c.field[col[C_GPU]]) ||
			    strlen(c.field[col[C_GPU]]) >= sizeof gpu_names[0]) {
				rc = ema_error_at(err, c.path, c.lineno,
						  "expected a GPU number in column gpu, found '%s'",
						  c.field[col[C_GPU]]);
				goto out;
			}
			if (n_gpus == cap_gpus) {
				size_t ncap = cap_gpus ? 2 * cap_gpus : 16;
				char (*nn)[32] = realloc(gpu_names, ncap * sizeof *nn);
				struct pd_series *ns = calloc(n_policies * ncap, sizeof *ns);

				if (nn == NULL || ns == NULL) {
					free(ns);
					if (nn != NULL)
						gpu_names = nn;
					rc = ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
					goto out;
				}
				gpu_names = nn;
				for (size_t pi = 0; pi < n_policies; pi++)
					for (size_t gi = 0; gi < n_gpus; gi++)
						ns[pi * ncap + gi] = series[pi * cap_gpus + gi];
				free(series);
				series = ns;
				cap_gpus = ncap;
			}
			snprintf(gpu_names[n_gpus++], sizeof gpu_names[0], "%s", c.field[col[C_GPU]]);
		}
		if (pd_series_push(&series[(size_t)p * cap_gpus + g], &r) != EMA_OK) {
			rc = ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
			goto out;
		}
	}
	if (rc < 0)
		goto out;
	/* no rows of the run's policies: a file without blocks, about which
	 * memory.gp says "no data rows" */
	gpus[0] = '\0';
	for (size_t g = 0; g < n_gpus; g++) {
		size_t k = strlen(gpu_names[g]) + (g > 0);

		if (len + k + 1 > size) {
			rc = ema_error_set(err, EMA_ERR_INPUT, "%s: too many GPUs for a figure",
					   timeline_csv);
			goto out;
		}
		snprintf(gpus + len, size - len, "%s%s", g > 0 ? " " : "", gpu_names[g]);
		len += k;
	}
	f = pd_create(out, err);
	if (f == NULL) {
		rc = EMA_ERR_IO;
		goto out;
	}
	fprintf(f, "# memory.dat: written by ema from timeline.csv for memory.gp (CSV rows cut\n"
		   "# to what a panel can show). One block per (policy, GPU), policies in run\n"
		   "# order, GPUs as in the CSV: time_s, then the stack's running sums\n"
		   "# (GiB): weights, +KV in use, +staging, +lent, +free, +borrowed; policy; gpu.\n");
	for (size_t p = 0; p < n_policies; p++)
		for (size_t g = 0; g < n_gpus; g++) {
			fprintf(f, "%s# %s, GPU %s\n", p + g > 0 ? "\n\n" : "", policies[p],
				gpu_names[g]);
			pd_write_series(f, &series[p * cap_gpus + g], policies[p], gpu_names[g]);
		}
	rc = pd_finish(f, out, err);
out:
	pd_close(&c);
	if (series != NULL)
		for (size_t i = 0; i < n_policies * cap_gpus; i++)
			free(series[i].rows);
	free(series);
	free(gpu_names);
	return rc;
}

/* ---- latency CDFs --------------------------------------------------------- */

struct pd_values {
	double *v;
	size_t n, cap;
};

static int pd_values_push(struct pd_values *s, double v)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 1024;
		double *n = realloc(s->v, cap * sizeof *n);

		if (n == NULL)
			return EMA_ERR_NOMEM;
		s->v = n;
		s->cap = cap;
	}
	s->v[s->n++] = v;
	return EMA_OK;
}

static int pd_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The CDF of s over `denom` requests: a point where each run of equal
 * values ends, kept when the curve rose by 1/EMA_PLOTS_CDF_POINTS of its
 * height since the last point kept, and always the last one. */
static void pd_write_cdf(FILE *f, struct pd_values *s, size_t denom, const char *policy)
{
	double step, last = -1.0;

	if (s->n == 0 || denom == 0) {
		fprintf(f, "NaN NaN %s\n", policy);
		return;
	}
	qsort(s->v, s->n, sizeof *s->v, pd_cmp);
	step = (double)s->n / (double)denom / EMA_PLOTS_CDF_POINTS;
	for (size_t i = 0; i < s->n; i++) {
		double frac = (double)(i + 1) / (double)denom;

		if (i + 1 < s->n && s->v[i + 1] == s->v[i])
			continue;
		if (i + 1 < s->n && last >= 0 && frac - last < step)
			continue;
		fprintf(f, "%.10g %.10g %s\n", s->v[i], frac, policy);
		last = frac;
	}
}

int ema_plots_cdf_data(const char *requests_csv, const char *out,
		       const char *const *policies, size_t n_policies, struct ema_error *err)
{
	static const char *const names[] = { "policy", "ttft_ms", "tpot_ms" };
	int col[3], maxcol = 0, rc;
	struct pd_values *vals = calloc(2 * (n_policies ? n_policies : 1), sizeof *vals);
	size_t *rows = calloc(n_policies ? n_policies : 1, sizeof *rows);
	struct pd_csv c;
	FILE *f;

	memset(&c, 0, sizeof c);
	if (vals == NULL || rows == NULL) {
		rc = ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
		goto out;
	}
	rc = pd_open(&c, requests_csv, names, 3, col, err);
	if (rc != EMA_OK)
		goto out;
	for (int k = 0; k < 3; k++)
		if (col[k] > maxcol)
			maxcol = col[k];
	while ((rc = pd_next(&c, maxcol, err)) == 1) {
		int p = pd_policy(policies, n_policies, c.field[col[0]]);

		if (p < 0)
			continue;
		rows[p]++;
		for (int m = 0; m < 2; m++) {
			double v;
			bool empty;

			rc = pd_number(&c, col[1 + m], names[1 + m], &v, &empty, err);
			if (rc != EMA_OK)
				goto out;
			if (!empty && v > 0 && pd_values_push(&vals[2 * p + m], v) != EMA_OK) {
				rc = ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
				goto out;
			}
		}
	}
	if (rc < 0)
		goto out;
	f = pd_create(out, err);
	if (f == NULL) {
		rc = EMA_ERR_IO;
		goto out;
	}
	fprintf(f, "# latency_cdf.dat: written by ema from requests.csv for latency_cdf.gp.\n"
		   "# Two blocks per policy, in run order: the TTFT CDF (fractions of all\n"
		   "# the policy's requests), then the TPOT CDF (of those with a TPOT):\n"
		   "# value_ms, fraction, policy; at most %d points a curve.\n",
		EMA_PLOTS_CDF_POINTS + 1);
	for (size_t p = 0; p < n_policies; p++) {
		fprintf(f, "%s# %s, TTFT\n", p > 0 ? "\n\n" : "", policies[p]);
		pd_write_cdf(f, &vals[2 * p], rows[p], policies[p]);
		fprintf(f, "\n\n# %s, TPOT\n", policies[p]);
		pd_write_cdf(f, &vals[2 * p + 1], vals[2 * p + 1].n, policies[p]);
	}
	rc = pd_finish(f, out, err);
out:
	pd_close(&c);
	if (vals != NULL)
		for (size_t i = 0; i < 2 * n_policies; i++)
			free(vals[i].v);
	free(vals);
	free(rows);
	return rc;
}
