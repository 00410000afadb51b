/* sweep_merge.c: a sweep folder's tables, built from its complete points
 * only (the folder may be half run, or filled by shards on a cluster):
 * DIR/sweep.csv, every point's summary rows with the swept values first,
 * and with seeds DIR/sweep_stats.csv, the statistics over seeds per
 * combination of the other keys, policy and tenant. The points' files
 * are read back from disk, not from memory, so that the result is the
 * same bytes however the points were run (one process, a pool, shards,
 * resumed after a kill). Summary columns are found by name: later
 * versions of ema append columns. */
#include "sweep.h"

#include <errno.h>
#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ema_build.h"
#include "outdir.h"
#include "plots.h"
#include "readfile.h"

/* ---- statistics over seeds ------------------------------------------------------ */

int ema_sweep_stat(const double *v, int n, struct ema_sweep_stat *st)
{
	double sum = 0, sq = 0, lsum = 0, lsq = 0, lmean, t;
	bool positive = true, nonneg = true;
	int m = 0;

	st->mean = st->sd = st->gmean = st->lo = st->hi = NAN;
	for (int i = 0; i < n; i++)
		if (!isnan(v[i])) {
			sum += v[i];
			m++;
			positive = positive && v[i] > 0;
			nonneg = nonneg && v[i] >= 0;
		}
	if (m == 0)
		return 0;
	st->mean = sum / m;
	if (positive) {
		for (int i = 0; i < n; i++)
			if (!isnan(v[i]))
				lsum += log(v[i]);
		lmean = lsum / m;
		st->gmean = exp(lmean);
	}
	if (m < 2)
		return m;
	for (int i = 0; i < n; i++)
		if (!isnan(v[i])) {
			sq += (v[i] - st->mean) * (v[i] - st->mean);
			if (positive)
				lsq += (log(v[i]) - lmean) * (log(v[i]) - lmean);
		}
	st->sd = sqrt(sq / (m - 1));
	t = gsl_cdf_tdist_Pinv(0.975, m - 1);
	if (positive) {
		double half = t * sqrt(lsq / (m - 1)) / sqrt((double)m);

		st->lo = exp(lmean - half);
		st->hi = exp(lmean + half);
	} else {
		double half = t * st->sd / sqrt((double)m);

		st->lo = st->mean - half;
		st->hi = st->mean + half;
		if (nonneg && st->lo < 0)
			st->lo = 0;
	}
	return m;
}

/* The metrics sweep_stats.csv summarises, when summary.csv has them. */
static const char *const stat_names[] = {
	"throughput_tok_s", "req_s", "ttft_p50_ms", "ttft_p90_ms", "ttft_p99_ms", "tpot_p50_ms",
	"tpot_p90_ms", "tpot_p99_ms", "e2e_p50_ms", "e2e_p99_ms", "vs_static_throughput",
	"vs_static_ttft_p50", "vs_static_tpot_p50", "vs_static_ttft_p99", "vs_static_tpot_p99",
	"vs_ideal_throughput", "vs_static_ttft_paired_p50", "vs_static_tpot_paired_p50",
	"generated_tok_s", "vs_static_generated_tok_s", "vs_pooled_steady_tok_s",
	"vs_pooled_generated_tok_s", "vs_ideal_kv_steady_tok_s",
};
#define N_STATS (sizeof stat_names / sizeof stat_names[0])

/* ---- reading the points ------------------------------------------------------------ */

/* One (point, policy, tenant) row, for the statistics. */
struct merge_row {
	long combo;          /* the point with the seed key's value left out */
	long point;
	char *policy, *tenant;  /* into the point's text, kept */
	double v[N_STATS];
};

struct merge {
	const struct ema_sweep *s;
	char *header;        /* summary.csv's header line of the first point */
	int col[N_STATS];    /* of each metric in it, -1: absent */
	int col_policy, col_tenant;
	struct merge_row *rows;
	size_t n_rows, cap_rows;
	char **texts;        /* each point's summary.csv, kept for the rows' names */
	size_t n_texts;
	FILE *csv;           /* sweep.csv being written */
};

static void put_value(FILE *f, const char *v)
{
	fprintf(f, strchr(v, ',') != NULL ? "\"%s\"," : "%s,", v);
}

/* Field i of a line (fields separated by commas, no quoting: summary.csv
 * writes names and numbers only), as a pointer and a length. */
static const char *field(const char *line, int i, size_t *len)
{
	for (; i > 0; i--) {
		line = strchr(line, ',');
		if (line == NULL)
			return NULL;
		line++;
	}
	*len = strcspn(line, ",");
	return line;
}

static int header_columns(struct merge *m, const char *path, struct ema_error *err)
{
	m->col_policy = m->col_tenant = -1;
	for (size_t k = 0; k < N_STATS; k++)
		m->col[k] = -1;
	for (int i = 0;; i++) {
		size_t len;
		const char *f = field(m->header, i, &len);

		if (f == NULL)
			break;
		if (len == 6 && strncmp(f, "policy", 6) == 0)
			m->col_policy = i;
		if (len == 6 && strncmp(f, "tenant", 6) == 0)
			m->col_tenant = i;
		for (size_t k = 0; k < N_STATS; k++)
			if (strlen(stat_names[k]) == len && strncmp(f, stat_names[k], len) == 0)
				m->col[k] = i;
	}
	if (m->col_policy < 0 || m->col_tenant < 0)
		return ema_error_at(err, path, 1, "expected a header with policy and tenant columns");
	return EMA_OK;
}

static int count_fields(const char *line)
{
	int n = 1;

	for (; *line; line++)
		n += *line == ',';
	return n;
}

/* A summary row: as many fields as the header, and each metric the
 * statistics read empty (not measured) or a decimal number. Anything
 * else fails the merge at its line rather than turning into a hole in
 * sweep_stats.csv. */
static int check_row(const struct merge *m, const char *line, const char *path, long lineno,
		     struct ema_error *err)
{
	int n = count_fields(line), want = count_fields(m->header);

	if (n != want)
		return ema_error_at(err, path, lineno, "expected %d fields, as the header has, got %d "
				    "(a row cut short or joined to another?)", want, n);
	for (size_t k = 0; k < N_STATS; k++) {
		size_t len;
		const char *f = m->col[k] >= 0 ? field(line, m->col[k], &len) : NULL;
		char buf[64], *end;

		if (f == NULL || len == 0)
			continue;
		if (len < sizeof buf && strspn(f, "0123456789.eE+-") >= len) {
			memcpy(buf, f, len);
			buf[len] = '\0';
			(void)strtod(buf, &end);
			if (end == buf + len)
				continue;
		}
		return ema_error_at(err, path, lineno, "expected a number or nothing in column %s, "
				    "got '%.*s'", stat_names[k], len > 40 ? 40 : (int)len, f);
	}
	return EMA_OK;
}

static int add_row(struct merge *m, long pt, char *line, const int *idx)
{
	const struct ema_sweep *s = m->s;
	struct merge_row *w;
	size_t len;
	char *p;

	if (m->n_rows == m->cap_rows) {
		size_t cap = m->cap_rows ? 2 * m->cap_rows : 256;
		struct merge_row *r = realloc(m->rows, cap * sizeof *r);

		if (r == NULL)
			return EMA_ERR_NOMEM;
		m->rows = r;
		m->cap_rows = cap;
	}
	w = &m->rows[m->n_rows];
	w->point = pt;
	w->combo = 0;
	for (int k = 0; k < s->n_keys; k++)
		if (k != s->seed_key)
			w->combo = w->combo * s->keys[k].n + idx[k];
	for (size_t k = 0; k < N_STATS; k++) {
		const char *f = m->col[k] >= 0 ? field(line, m->col[k], &len) : NULL;
		char *end;

		w->v[k] = NAN;
		if (f != NULL && len > 0) {
			double v = strtod(f, &end);

			if (end == f + len)
				w->v[k] = v;
		}
	}
	/* the names are cut in place: the line was copied to sweep.csv */
	p = (char *)field(line, m->col_policy, &len);
	w->policy = p;
	if (p == NULL)
		return EMA_ERR_INPUT;
	p = (char *)field(line, m->col_tenant, &len);
	w->tenant = p;
	if (p == NULL)
		return EMA_ERR_INPUT;
	w->tenant[strcspn(w->tenant, ",")] = '\0';
	w->policy[strcspn(w->policy, ",")] = '\0';
	m->n_rows++;
	return EMA_OK;
}

/* Reads a complete point's summary.csv: its rows go to sweep.csv, prefixed
 * with the swept values and the point, and are kept for the statistics. */
static int merge_point(struct merge *m, long pt, struct ema_error *err)
{
	const struct ema_sweep *s = m->s;
	char name[32], path[EMA_PATH_MAX + 64];
	char *text = NULL, *line, *next;
	size_t len;
	int idx[EMA_SWEEP_MAX_KEYS], rc, lineno = 0;

	ema_sweep_point_name(pt, name);
	snprintf(path, sizeof path, "%s/%s/summary.csv", s->dir, name);
	rc = ema_read_file(path, "a point's summary.csv", 0, &text, &len, err);
	if (rc != EMA_OK)
		return rc;
	if (m->n_texts % 64 == 0) {
		char **t = realloc(m->texts, (m->n_texts + 64) * sizeof *t);

		if (t == NULL) {
			free(text);
			return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
		}
		m->texts = t;
	}
	m->texts[m->n_texts++] = text;
	ema_sweep_point_idx(s, pt, idx);
	for (line = text; line != NULL && *line != '\0'; line = next) {
		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		lineno++;
		if (lineno == 1) {
			if (m->header == NULL) {
				m->header = line;
				rc = header_columns(m, path, err);
				if (rc != EMA_OK)
					return rc;
				for (int k = 0; k < s->n_keys; k++)
					fprintf(m->csv, "%s,", s->keys[k].name);
				fprintf(m->csv, "point,%s\n", line);
			} else if (strcmp(line, m->header) != 0) {
				return ema_error_at(err, path, 1, "expected the columns of the other "
						    "points' summary.csv (a point written by another "
						    "version of ema?)");
			}
			continue;
		}
		if (*line == '\0')
			continue;
		rc = check_row(m, line, path, lineno, err);
		if (rc != EMA_OK)
			return rc;
		for (int k = 0; k < s->n_keys; k++)
			put_value(m->csv, s->keys[k].values[idx[k]]);
		fprintf(m->csv, "%ld,%s\n", pt, line);
		rc = add_row(m, pt, line, idx);
		if (rc == EMA_ERR_NOMEM)
			return ema_error_set(err, rc, "out of memory");
		if (rc != EMA_OK)
			return ema_error_at(err, path, lineno, "expected a policy and a tenant");
	}
	if (lineno == 0)
		return ema_error_at(err, path, 1, "expected a header line, found an empty file");
	return EMA_OK;
}

/* ---- sweep_stats.csv ---------------------------------------------------------------- */

/* Groups of rows that differ only in the seed, in order of first
 * appearance; found through a hash table, since a sweep of thousands of
 * points has hundreds of thousands of rows. */
struct group_table {
	long *slot;     /* index of a group's first row, or -1 */
	size_t n;
};

static uint64_t row_key(const struct merge_row *r)
{
	uint64_t h = 1469598103934665603ull ^ (uint64_t)r->combo;

	for (const char *p = r->policy; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	h = (h ^ 0x1f) * 1099511628211ull;
	for (const char *p = r->tenant; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	return h;
}

static bool same_group(const struct merge_row *a, const struct merge_row *b)
{
	return a->combo == b->combo && strcmp(a->policy, b->policy) == 0 &&
	       strcmp(a->tenant, b->tenant) == 0;
}

static int write_stats(struct merge *m, FILE *f)
{
	const struct ema_sweep *s = m->s;
	struct group_table gt;
	long *first, *next;
	double *vals;
	int rc = EMA_OK;

	gt.n = 2;
	while (gt.n < 2 * m->n_rows)
		gt.n *= 2;
	gt.slot = malloc(gt.n * sizeof *gt.slot);
	first = malloc((m->n_rows + 1) * sizeof *first);
	next = malloc((m->n_rows + 1) * sizeof *next);
	vals = malloc((m->n_rows + 1) * sizeof *vals);
	if (gt.slot == NULL || first == NULL || next == NULL || vals == NULL) {
		rc = EMA_ERR_NOMEM;
		goto out;
	}
	for (size_t i = 0; i < gt.n; i++)
		gt.slot[i] = -1;
	/* chain each row behind the previous one of its group */
	for (size_t i = 0; i < m->n_rows; i++) {
		size_t h = (size_t)row_key(&m->rows[i]) & (gt.n - 1);
		long *tail = NULL;

		next[i] = -1;
		first[i] = (long)i;
		while (gt.slot[h] >= 0 && !same_group(&m->rows[gt.slot[h]], &m->rows[i]))
			h = (h + 1) & (gt.n - 1);
		if (gt.slot[h] < 0) {
			gt.slot[h] = (long)i;
			continue;
		}
		first[i] = gt.slot[h];
		for (long j = gt.slot[h]; j >= 0; j = next[j])
			tail = &next[j];
		*tail = (long)i;
	}
	for (int k = 0; k < s->n_keys; k++)
		if (k != s->seed_key)
			fprintf(f, "%s,", s->keys[k].name);
	fputs("policy,tenant,seeds", f);
	for (size_t k = 0; k < N_STATS; k++)
		if (m->col[k] >= 0)
			fprintf(f, ",%s_mean,%s_sd,%s_gmean,%s_ci95_low,%s_ci95_high", stat_names[k],
				stat_names[k], stat_names[k], stat_names[k], stat_names[k]);
	fputc('\n', f);
	for (size_t i = 0; i < m->n_rows; i++) {
		const struct merge_row *a = &m->rows[i];
		int idx[EMA_SWEEP_MAX_KEYS], seeds = 0;

		if (first[i] != (long)i)
			continue;
		ema_sweep_point_idx(s, a->point, idx);
		for (int k = 0; k < s->n_keys; k++)
			if (k != s->seed_key)
				put_value(f, s->keys[k].values[idx[k]]);
		for (long j = (long)i; j >= 0; j = next[j])
			seeds++;
		fprintf(f, "%s,%s,%d", a->policy, a->tenant, seeds);
		for (size_t k = 0; k < N_STATS; k++) {
			struct ema_sweep_stat st;
			const double *x[5] = { &st.mean, &st.sd, &st.gmean, &st.lo, &st.hi };
			int n = 0;

			if (m->col[k] < 0)
				continue;
			for (long j = (long)i; j >= 0; j = next[j])
				vals[n++] = m->rows[j].v[k];
			ema_sweep_stat(vals, n, &st);
			for (int q = 0; q < 5; q++) {
				if (isnan(*x[q]) || isinf(*x[q]))
					fputc(',', f);
				else
					fprintf(f, ",%.6g", *x[q]);
			}
		}
		fputc('\n', f);
	}
	if (ferror(f))
		rc = EMA_ERR_IO;
out:
	free(gt.slot);
	free(first);
	free(next);
	free(vals);
	return rc;
}

/* ---- the merge ---------------------------------------------------------------------- */

/* Writes one file of the sweep folder whole: DIR/NAME.tmp-HOST-PID, renamed
 * over DIR/NAME when complete. */
static int write_whole(const struct ema_sweep *s, const char *name,
		       int (*fn)(struct merge *m, FILE *f), struct merge *m, const char *data,
		       size_t len, struct ema_error *err)
{
	char path[EMA_PATH_MAX + 64];
	struct ema_outfile of;
	FILE *f;
	int rc;

	snprintf(path, sizeof path, "%s/%s", s->dir, name);
	rc = ema_outfile_reserve(&of, "sweep", path, err);
	if (rc != EMA_OK)
		return rc;
	f = ema_outfile_open(&of, err);
	if (f == NULL)
		return err->code ? err->code : EMA_ERR_IO;
	if (fn != NULL) {
		rc = fn(m, f);
		if (rc == EMA_ERR_NOMEM) {
			ema_outfile_abort(&of);
			return ema_error_set(err, rc, "out of memory");
		}
	} else {
		fwrite(data, 1, len, f);
	}
	return ema_outfile_commit(&of, err);
}

int ema_sweep_merge(const struct ema_sweep *s, bool plots, bool quiet, long *missing,
		    struct ema_error *err)
{
	struct merge m;
	char *buf = NULL;
	size_t len = 0;
	long n_missing = 0;
	int rc = EMA_OK;

	memset(&m, 0, sizeof m);
	m.s = s;
	m.csv = open_memstream(&buf, &len);
	if (m.csv == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	for (long pt = 0; pt < s->n_points && rc == EMA_OK; pt++) {
		bool done;

		rc = ema_sweep_point_done(s, pt, &done, err);
		if (rc == EMA_OK && done)
			rc = merge_point(&m, pt, err);
		else if (rc == EMA_OK)
			n_missing++;
	}
	if (fclose(m.csv) != 0 && rc == EMA_OK)
		rc = ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	if (rc == EMA_OK && n_missing == s->n_points)
		rc = ema_error_set(err, EMA_ERR_IO, "%s: no point is complete yet: nothing to merge",
				   s->dir);
	if (rc == EMA_OK)
		rc = write_whole(s, "sweep.csv", NULL, NULL, buf, len, err);
	if (rc == EMA_OK && s->seed_key >= 0)
		rc = write_whole(s, "sweep_stats.csv", write_stats, &m, NULL, 0, err);
	/* the figures, from the points (ema figures DIR) */
	if (rc == EMA_OK && plots) {
		char fdir[EMA_PATH_MAX + 16];
		int drawn = 0;

		snprintf(fdir, sizeof fdir, "%s/figures", s->dir);
		rc = ema_figures_draw(s->dir, NULL, fdir, quiet, &drawn, err);
		if (rc == EMA_OK && drawn == 0 && EMA_GNUPLOT[0] == '\0' && !quiet)
			fprintf(stderr, "ema: gnuplot not found: figures skipped (tables and scripts are "
				"in %s)\n", fdir);
	}
	if (rc == EMA_OK && n_missing > 0) {
		long shown = 0, *list = malloc((size_t)n_missing * sizeof *list), n_list = 0;
		char how[3 * EMA_PATH_MAX + 1024];

		fprintf(stderr, "ema: sweep %s: %ld of %ld points missing (not run yet, failed or "
			"killed); the tables hold the others:\n", s->dir, n_missing, s->n_points);
		for (long pt = 0; pt < s->n_points; pt++) {
			char name[32], sets[EMA_SWEEP_MAX_KEYS][512], p[EMA_PATH_MAX + 64];
			struct stat st;

			ema_sweep_point_name(pt, name);
			snprintf(p, sizeof p, "%s/%s", s->dir, name);
			if (lstat(p, &st) == 0)
				continue;
			if (list != NULL && n_list < n_missing)
				list[n_list++] = pt;
			if (shown == 20)
				continue;
			ema_sweep_point_sets(s, pt, sets);
			fprintf(stderr, "ema:   %s:", name);
			for (int k = 0; k < s->n_keys; k++)
				fprintf(stderr, " %s", sets[k]);
			fputc('\n', stderr);
			shown++;
		}
		if (n_missing > shown)
			fprintf(stderr, "ema:   ... and %ld more\n", n_missing - shown);
		if (list != NULL) {
			ema_sweep_how_to_finish(s, list, n_list, how, sizeof how);
			fprintf(stderr, "ema: to finish: %s\n", how);
		}
		free(list);
	}
	if (missing != NULL)
		*missing = n_missing;
	for (size_t i = 0; i < m.n_texts; i++)
		free(m.texts[i]);
	free(m.texts);
	free(m.rows);
	free(buf);
	return rc;
}
