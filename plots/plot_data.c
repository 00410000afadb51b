/* plot_data.c: the data files memory.gp and latency_cdf.gp draw, prepared
 * in C from timeline.csv and requests.csv: gnuplot's interpreter went over
 * the whole CSV once per curve and panel (a minute and a half for an hour
 * of trace replay under five policies), where these files hold one block
 * per curve, cut down to what a figure can show (plot_data.h). */
#include "plot_data.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sortd.h"

#define PD_MAX_FIELDS 64

/* ---- the cuts ---------------------------------------------------------- */

size_t ema_plots_cut_timeline(const struct ema_plots_point *pts, size_t n, int ny, double t0,
			      double t1, size_t buckets, size_t *keep)
{
	double span = t1 - t0;
	size_t nk = 0, i = 0;

	if (ny > EMA_PLOTS_STACK)
		ny = EMA_PLOTS_STACK;
	if (n <= 2 * buckets || buckets == 0 || !(span > 0)) {
		for (size_t k = 0; k < n; k++)
			keep[k] = k;
		return n;
	}
	while (i < n) {
		/* the column of row i, and the rows after it in the same one */
		double rel = (pts[i].t - t0) / span * (double)buckets;
		size_t b = rel <= 0 ? 0 : rel >= (double)buckets ? buckets - 1 : (size_t)rel;
		size_t lo[EMA_PLOTS_STACK], hi[EMA_PLOTS_STACK], j = i + 1, mark[2 + 2 * EMA_PLOTS_STACK];
		int nm = 0;

		for (int c = 0; c < ny; c++)
			lo[c] = hi[c] = i;
		for (; j < n; j++) {
			double rj = (pts[j].t - t0) / span * (double)buckets;
			size_t bj = rj <= 0 ? 0 : rj >= (double)buckets ? buckets - 1 : (size_t)rj;

			if (bj != b)
				break;
			for (int c = 0; c < ny; c++) {
				if (pts[j].y[c] < pts[lo[c]].y[c])
					lo[c] = j;
				if (pts[j].y[c] > pts[hi[c]].y[c])
					hi[c] = j;
			}
		}
		/* the column's rows i..j-1: its first, last and extremes, in
		 * time order, each once */
		mark[nm++] = i;
		mark[nm++] = j - 1;
		for (int c = 0; c < ny; c++) {
			mark[nm++] = lo[c];
			mark[nm++] = hi[c];
		}
		for (int a = 1; a < nm; a++)
			for (int b2 = a; b2 > 0 && mark[b2 - 1] > mark[b2]; b2--) {
				size_t tmp = mark[b2];

				mark[b2] = mark[b2 - 1];
				mark[b2 - 1] = tmp;
			}
		for (int a = 0; a < nm; a++)
			if (a == 0 || mark[a] != mark[a - 1])
				keep[nk++] = mark[a];
		i = j;
	}
	return nk;
}

size_t ema_plots_drop_flat(const struct ema_plots_point *pts, int ny, size_t *keep, size_t nk)
{
	size_t out = 0;

	for (size_t i = 0; i < nk; i++) {
		bool flat = out > 0 && i + 1 < nk;

		for (int c = 0; c < ny && flat; c++)
			flat = pts[keep[i]].y[c] == pts[keep[out - 1]].y[c] &&
			       pts[keep[i]].y[c] == pts[keep[i + 1]].y[c];
		if (!flat)
			keep[out++] = keep[i];
	}
	return out;
}

size_t ema_plots_cut_cdf(const double *v, size_t n, size_t denom, size_t max_points, double *x,
			 double *frac)
{
	size_t step, last = 0, nk = 0;

	if (n == 0)
		return 0;
	if (max_points == 0)
		max_points = 1;
	step = (n + max_points - 1) / max_points;
	for (size_t i = 0; i < n; i++) {
		size_t count = i + 1;

		if (i + 1 < n && v[i + 1] == v[i])
			continue; /* not the end of its run of equal values */
		if (nk > 0 && i + 1 < n && count - last < step)
			continue;
		x[nk] = v[i];
		frac[nk] = (double)count / (double)denom;
		nk++;
		last = count;
	}
	return nk;
}

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

/* Opens path and finds each of names[0..n) in its header, into col[];
 * *maxcol is the last of them. */
static int pd_open(struct pd_csv *c, const char *path, const char *const *names, int n,
		   int *col, int *maxcol, struct ema_error *err)
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
	*maxcol = 0;
	for (int k = 0; k < n; k++) {
		col[k] = -1;
		for (int i = 0; i < c->n; i++)
			if (strcmp(c->field[i], names[k]) == 0)
				col[k] = i;
		if (col[k] < 0)
			return ema_error_at(err, path, 1, "expected a column '%s' in the header",
					    names[k]);
		if (col[k] > *maxcol)
			*maxcol = col[k];
	}
	return EMA_OK;
}

/* The next non-empty row: 1, or 0 at the end, or a negative status. */
static int pd_next(struct pd_csv *c, int maxcol, struct ema_error *err)
{
	while (getline(&c->line, &c->cap, c->f) >= 0) {
		c->lineno++;
		pd_split(c);
		if (c->n == 1 && c->field[0][0] == '\0')
			continue;
		if (c->n <= maxcol)
			return ema_error_at(err, c->path, c->lineno,
					    "expected at least %d fields, found %d", maxcol + 1, c->n);
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

/* A number of field i (NaN when empty). */
static int pd_number(struct pd_csv *c, int i, const char *name, double *v, struct ema_error *err)
{
	char *end;
	const char *s = c->field[i];

	if (s[0] == '\0') {
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

/* ---- names: policies, GPUs, tenants ------------------------------------ */

/* A list of names in order; `fixed` ones (the policies the caller gave)
 * take no new name, and a row of another is skipped. */
struct pd_names {
	char **v;
	size_t n, cap;
	bool fixed;
};

static void pd_names_free(struct pd_names *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof *l);
}

static int pd_names_push(struct pd_names *l, const char *s, size_t len)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 8;
		char **v = realloc(l->v, cap * sizeof *v);

		if (v == NULL)
			return EMA_ERR_NOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n] = malloc(len + 1);
	if (l->v[l->n] == NULL)
		return EMA_ERR_NOMEM;
	memcpy(l->v[l->n], s, len);
	l->v[l->n][len] = '\0';
	l->n++;
	return EMA_OK;
}

/* The policies given as "a b c"; none given leaves the list open. */
static int pd_names_given(struct pd_names *l, const char *words)
{
	memset(l, 0, sizeof *l);
	if (words == NULL || words[0] == '\0')
		return EMA_OK;
	l->fixed = true;
	while (*words != '\0') {
		size_t len = strcspn(words, " ");

		if (len > 0 && pd_names_push(l, words, len) != EMA_OK)
			return EMA_ERR_NOMEM;
		words += len;
		while (*words == ' ')
			words++;
	}
	return EMA_OK;
}

/* A name travels through gnuplot's word(), so it holds no blank or quote. */
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

/* The place of name in l, added when new and the list is open: >= 0,
 * PD_SKIP for a name a fixed list has not, or a negative status. */
#define PD_SKIP (-1000)
static long pd_names_find(struct pd_names *l, const char *name, struct pd_csv *c,
			  const char *column, struct ema_error *err)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i], name) == 0)
			return (long)i;
	if (l->fixed)
		return PD_SKIP;
	if (!pd_word_ok(name))
		return ema_error_at(err, c->path, c->lineno,
				    "expected a name without blanks or quotes in column %s, found '%s'",
				    column, name);
	if (pd_names_push(l, name, strlen(name)) != EMA_OK)
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	return (long)l->n - 1;
}

/* ---- output ----------------------------------------------------------- */

/* An output written as OUT.tmp, registered for removal on an interrupt,
 * and renamed over OUT when complete. */
struct pd_out {
	FILE *f;
	char tmp[4096 + 8];
	int slot;
};

static FILE *pd_create(struct pd_out *o, const char *out, struct ema_error *err)
{
	o->f = NULL;
	o->slot = -1;
	if ((size_t)snprintf(o->tmp, sizeof o->tmp, "%s.tmp", out) >= sizeof o->tmp) {
		ema_error_set(err, EMA_ERR_IO, "%s: path too long", out);
		return NULL;
	}
	o->slot = ema_plots_tmp_add(o->tmp);
	o->f = fopen(o->tmp, "w");
	if (o->f == NULL) {
		ema_error_set(err, EMA_ERR_IO, "%s: cannot create: %s", o->tmp, strerror(errno));
		ema_plots_tmp_drop(o->slot);
		o->slot = -1;
	}
	return o->f;
}

/* Flushes, closes and renames. The reason of a failed write is errno at
 * the failure; a write that failed inside fprintf (a full disk, a file
 * size limit) fails again, with its errno, when the buffer is flushed. */
static int pd_finish(struct pd_out *o, const char *out, struct ema_error *err)
{
	bool bad = ferror(o->f) != 0;
	int e = 0;

	errno = 0;
	if (fflush(o->f) != 0)
		e = errno;
	if (fclose(o->f) != 0 && e == 0)
		e = errno;
	o->f = NULL;
	if (e == 0 && bad)
		e = EIO;
	if (e == 0 && rename(o->tmp, out) != 0)
		e = errno;
	if (e != 0) {
		unlink(o->tmp);
		ema_plots_tmp_drop(o->slot);
		return ema_error_set(err, EMA_ERR_IO, "%s: cannot write: %s", out, strerror(e));
	}
	ema_plots_tmp_drop(o->slot);
	return EMA_OK;
}

/* ---- memory over time -------------------------------------------------- */

struct pd_mrow {
	uint32_t p, g;
	struct ema_plots_point pt;
};

int ema_plots_memory_data(const char *timeline_csv, const char *out, const char *policies,
			  struct ema_error *err)
{
	static const char *const names[] = {
		"policy", "time_s", "gpu", "weights_gib", "kv_used_gib", "staging_gib",
		"lent_gib", "free_gib", "borrowed_gib"
	};
	enum { C_POLICY, C_TIME, C_GPU, C_PART, NCOL = 9 };
	int col[NCOL], maxcol, rc;
	struct pd_names pols, gpus = { 0 };
	struct pd_mrow *rows = NULL, *grouped = NULL;
	struct ema_plots_point *pts = NULL;
	size_t n = 0, cap = 0, *start = NULL, *keep = NULL, cells;
	double t0 = INFINITY, t1 = -INFINITY;
	struct pd_csv c;
	FILE *f = NULL;
	struct pd_out po;

	memset(&c, 0, sizeof c);
	if (pd_names_given(&pols, policies) != EMA_OK) {
		rc = ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
		goto out;
	}
	rc = pd_open(&c, timeline_csv, names, NCOL, col, &maxcol, err);
	if (rc != EMA_OK)
		goto out;
	while ((rc = pd_next(&c, maxcol, err)) == 1) {
		struct pd_mrow r;
		double part[EMA_PLOTS_STACK];
		long p = pd_names_find(&pols, c.field[col[C_POLICY]], &c, "policy", err), g;

		if (p == PD_SKIP)
			continue;
		if (p < 0) {
			rc = (int)p;
			goto out;
		}
		g = pd_names_find(&gpus, c.field[col[C_GPU]], &c, "gpu", err);
		if (g < 0) {
			rc = (int)g;
			goto out;
		}
		rc = pd_number(&c, col[C_TIME], names[C_TIME], &r.pt.t, err);
		for (int k = 0; k < EMA_PLOTS_STACK && rc == EMA_OK; k++)
			rc = pd_number(&c, col[C_PART + k], names[C_PART + k], &part[k], err);
		if (rc != EMA_OK)
			goto out;
		/* the stack as memory.gp draws it: weights, KV in use, staging,
		 * lent, free (up to the capacity), then borrowed above it */
		r.pt.y[0] = part[0];
		for (int k = 1; k < EMA_PLOTS_STACK; k++)
			r.pt.y[k] = r.pt.y[k - 1] + part[k];
		r.p = (uint32_t)p;
		r.g = (uint32_t)g;
		t0 = fmin(t0, r.pt.t);
		t1 = fmax(t1, r.pt.t);
		if (n == cap) {
			size_t ncap = cap ? 2 * cap : 1024;
			struct pd_mrow *nr = realloc(rows, ncap * sizeof *nr);

			if (nr == NULL) {
				rc = ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
				goto out;
			}
			rows = nr;
			cap = ncap;
		}
		rows[n++] = r;
	}
	if (rc < 0)
		goto out;
	/* the rows of each (policy, GPU) together, in file order (a stable
	 * counting sort), for the cut of each series */
	cells = pols.n * gpus.n;
	start = calloc(cells + 1, sizeof *start);
	grouped = malloc((n ? n : 1) * sizeof *grouped);
	pts = malloc((n ? n : 1) * sizeof *pts);
	keep = malloc((n ? n : 1) * sizeof *keep);
	if (start == NULL || grouped == NULL || pts == NULL || keep == NULL) {
		rc = ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		start[rows[i].p * gpus.n + rows[i].g + 1]++;
	for (size_t k = 0; k < cells; k++)
		start[k + 1] += start[k];
	{
		size_t *fill = calloc(cells ? cells : 1, sizeof *fill);

		if (fill == NULL) {
			rc = ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
			goto out;
		}
		for (size_t i = 0; i < n; i++) {
			size_t k = rows[i].p * gpus.n + rows[i].g;

			grouped[start[k] + fill[k]++] = rows[i];
		}
		free(fill);
	}
	f = pd_create(&po, out, err);
	if (f == NULL) {
		rc = EMA_ERR_IO;
		goto out;
	}
	fprintf(f, "# memory.dat: written by ema from timeline.csv for memory.gp, each curve's\n"
		   "# rows cut to what %d pixel columns show (the CSV keeps every row). Per\n"
		   "# (policy, GPU), policies in run order, GPUs as in the CSV, %d blocks: the\n"
		   "# areas of weights, KV in use, staging, lent, free and borrowed, then the\n"
		   "# capacity line; rows time_s, lower, upper (GiB), policy, gpu.\n",
		EMA_PLOTS_TIME_BUCKETS, EMA_PLOTS_MEMORY_CURVES);
	for (size_t p = 0; p < pols.n; p++)
		for (size_t g = 0; g < gpus.n; g++) {
			size_t k = p * gpus.n + g, m = start[k + 1] - start[k];

			for (int cv = 0; cv < EMA_PLOTS_MEMORY_CURVES; cv++) {
				/* the area's bounds (the line: the capacity, twice) */
				int lo = cv < EMA_PLOTS_STACK ? cv - 1 : EMA_PLOTS_STACK - 2;
				int hi = cv < EMA_PLOTS_STACK ? cv : EMA_PLOTS_STACK - 2;
				bool any = cv == EMA_PLOTS_STACK;
				size_t nk;

				fprintf(f, "%s# %s, GPU %s, curve %d\n", k + (size_t)cv > 0 ? "\n\n" : "",
					pols.v[p], gpus.v[g], cv + 1);
				for (size_t i = 0; i < m; i++) {
					const struct ema_plots_point *r = &grouped[start[k] + i].pt;

					pts[i].t = r->t;
					pts[i].y[0] = lo < 0 ? 0 : r->y[lo];
					pts[i].y[1] = r->y[hi];
					any = any || pts[i].y[1] != pts[i].y[0];
				}
				if (m == 0) {
					fprintf(f, "NaN NaN NaN %s %s\n", pols.v[p], gpus.v[g]);
					continue;
				}
				if (!any) {
					/* nothing to fill: one point of it, which draws
					 * nothing (a row of NaN would make gnuplot warn) */
					fprintf(f, "%.10g %.10g %.10g %s %s\n", pts[0].t, pts[0].y[0],
						pts[0].y[1], pols.v[p], gpus.v[g]);
					continue;
				}
				nk = ema_plots_cut_timeline(pts, m, 2, t0, t1, EMA_PLOTS_TIME_BUCKETS,
							    keep);
				nk = ema_plots_drop_flat(pts, 2, keep, nk);
				for (size_t i = 0; i < nk; i++)
					fprintf(f, "%.10g %.10g %.10g %s %s\n", pts[keep[i]].t,
						pts[keep[i]].y[0], pts[keep[i]].y[1], pols.v[p],
						gpus.v[g]);
			}
		}
	rc = pd_finish(&po, out, err);
out:
	pd_close(&c);
	pd_names_free(&pols);
	pd_names_free(&gpus);
	free(rows);
	free(grouped);
	free(pts);
	free(keep);
	free(start);
	return rc;
}

/* ---- latency CDFs --------------------------------------------------------- */

struct pd_rrow {
	uint32_t t, p;
	double v[2];     /* ttft_ms, tpot_ms (NaN: none) */
};

static int pd_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void pd_write_cdf(FILE *f, double *v, size_t n, size_t denom, double *x, double *fr,
			 const char *policy, const char *tenant)
{
	size_t nk;

	if (n == 0) {
		fprintf(f, "NaN NaN %s %s\n", policy, tenant);
		return;
	}
	if (ema_sort_doubles(v, n) != 0)
		qsort(v, n, sizeof *v, pd_cmp);
	nk = ema_plots_cut_cdf(v, n, denom, EMA_PLOTS_CDF_POINTS, x, fr);
	for (size_t i = 0; i < nk; i++)
		fprintf(f, "%.10g %.10g %s %s\n", x[i], fr[i], policy, tenant);
}

int ema_plots_cdf_data(const char *requests_csv, const char *out, const char *policies,
		       struct ema_error *err)
{
	static const char *const names[] = { "policy", "tenant", "ttft_ms", "tpot_ms" };
	int col[4], maxcol, rc;
	struct pd_names pols, tens = { 0 };
	struct pd_rrow *rows = NULL;
	size_t n = 0, cap = 0, *count = NULL, *start = NULL, cells;
	double *vals = NULL, *x = NULL, *fr = NULL;
	struct pd_csv c;
	FILE *f = NULL;
	struct pd_out po;

	memset(&c, 0, sizeof c);
	if (pd_names_given(&pols, policies) != EMA_OK) {
		rc = ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
		goto out;
	}
	rc = pd_open(&c, requests_csv, names, 4, col, &maxcol, err);
	if (rc != EMA_OK)
		goto out;
	while ((rc = pd_next(&c, maxcol, err)) == 1) {
		struct pd_rrow r;
		long p = pd_names_find(&pols, c.field[col[0]], &c, "policy", err), t;

		if (p == PD_SKIP)
			continue;
		if (p < 0) {
			rc = (int)p;
			goto out;
		}
		t = pd_names_find(&tens, c.field[col[1]], &c, "tenant", err);
		if (t < 0) {
			rc = (int)t;
			goto out;
		}
		rc = pd_number(&c, col[2], names[2], &r.v[0], err);
		if (rc == EMA_OK)
			rc = pd_number(&c, col[3], names[3], &r.v[1], err);
		if (rc != EMA_OK)
			goto out;
		r.p = (uint32_t)p;
		r.t = (uint32_t)t;
		if (n == cap) {
			size_t ncap = cap ? 2 * cap : 1024;
			struct pd_rrow *nr = realloc(rows, ncap * sizeof *nr);

			if (nr == NULL) {
				rc = ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
				goto out;
			}
			rows = nr;
			cap = ncap;
		}
		rows[n++] = r;
	}
	if (rc < 0)
		goto out;
	/* per (tenant, policy): its requests (the TTFT denominator), and its
	 * values of each metric together: TTFT of cell k at [start[2k] ..),
	 * TPOT at [start[2k + 1] ..) */
	cells = tens.n * pols.n;
	count = calloc(cells ? cells : 1, sizeof *count);
	start = calloc(2 * cells + 1, sizeof *start);
	vals = malloc((n > 0 ? 2 * n : 1) * sizeof *vals);
	x = malloc((n ? n : 1) * sizeof *x);
	fr = malloc((n ? n : 1) * sizeof *fr);
	if (count == NULL || start == NULL || vals == NULL || x == NULL || fr == NULL) {
		rc = ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		size_t k = rows[i].t * pols.n + rows[i].p;

		count[k]++;
		for (int m = 0; m < 2; m++)
			if (rows[i].v[m] > 0) /* not NaN, and a log axis can show it */
				start[2 * k + m + 1]++;
	}
	for (size_t k = 0; k < 2 * cells; k++)
		start[k + 1] += start[k];
	{
		size_t *fill = calloc(cells > 0 ? 2 * cells : 1, sizeof *fill);

		if (fill == NULL) {
			rc = ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
			goto out;
		}
		for (size_t i = 0; i < n; i++) {
			size_t k = rows[i].t * pols.n + rows[i].p;

			for (int m = 0; m < 2; m++)
				if (rows[i].v[m] > 0)
					vals[start[2 * k + m] + fill[2 * k + m]++] = rows[i].v[m];
		}
		free(fill);
	}
	f = pd_create(&po, out, err);
	if (f == NULL) {
		rc = EMA_ERR_IO;
		goto out;
	}
	fprintf(f, "# latency_cdf.dat: written by ema from requests.csv for latency_cdf.gp.\n"
		   "# Two blocks per (tenant, policy), tenants as in the CSV, policies in run\n"
		   "# order: the TTFT CDF (fractions of all the requests), then the TPOT CDF\n"
		   "# (of those with a TPOT): value_ms, fraction, policy, tenant; a point kept\n"
		   "# where the curve rose by 1/%d of its height (the CSV keeps every row).\n",
		EMA_PLOTS_CDF_POINTS);
	for (size_t t = 0; t < tens.n; t++)
		for (size_t p = 0; p < pols.n; p++) {
			size_t k = t * pols.n + p;

			for (int m = 0; m < 2; m++) {
				size_t a = start[2 * k + m], b = start[2 * k + m + 1];

				fprintf(f, "%s# %s, %s, %s\n", k + (size_t)m > 0 ? "\n\n" : "",
					tens.v[t], pols.v[p], m == 0 ? "TTFT" : "TPOT");
				pd_write_cdf(f, vals + a, b - a, m == 0 ? count[k] : b - a, x, fr,
					     pols.v[p], tens.v[t]);
			}
		}
	rc = pd_finish(&po, out, err);
out:
	pd_close(&c);
	pd_names_free(&pols);
	pd_names_free(&tens);
	free(rows);
	free(count);
	free(start);
	free(vals);
	free(x);
	free(fr);
	return rc;
}
