/* figures.c: `ema figures DIR...`, the paper's figures from sweep folders
 * (and a capacity search's folder): throughput and per-user throughput,
 * % of ideal, TTFT and TPOT p50/p99, the lenders' slowdown against load,
 * reclaim latency CDFs, a memory timeline and the capacity under an SLO.
 * The data are gathered here, from the points' files by column name, into
 * one small table per figure; gnuplot scripts with one shared style
 * (plots/style.gp) draw them as PDF and PNG, and render.sh redraws them
 * after an edit. Every figure names its scenario; each tenant has its own
 * panel, borrowers first, then lenders; values over seeds are geometric
 * means with their 95% interval on the log scale, which stays above zero. */
#include "sweep.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ema_build.h"
#include "outdir.h"
#include "plot_data.h"
#include "plots.h"
#include "readfile.h"

/* The metrics of the load figures, by summary.csv column: steady-state
 * throughput (steady_tok_s, the window of issue 11's metrics), per-user
 * throughput (user_tok_s_p50; computed from requests.csv for run folders
 * older than that column), % of ideal on the steady state. */
enum {
	FM_TPUT, FM_USER, FM_IDEAL, FM_TTFT50, FM_TTFT99, FM_TPOT50, FM_TPOT99, FM_STTFT99,
	FM_STPOT99, FM_PTTFT, FM_PTPOT, FM_BORROWED, FM_LENT, FM_GPU, FM_N
};
static const char *const fm_col[FM_N] = {
	"steady_tok_s", "user_tok_s_p50", "vs_ideal_steady_tok_s", "ttft_p50_ms", "ttft_p99_ms",
	"tpot_p50_ms", "tpot_p99_ms", "vs_static_ttft_p99", "vs_static_tpot_p99",
	"vs_static_ttft_paired_p50", "vs_static_tpot_paired_p50",
	"borrowed_peak_gib", "lent_peak_gib", "gpu",
};
static const char *const fm_name[FM_N] = {
	"steady_tok_s", "user_tok_s_p50", "pct_of_ideal", "ttft_p50_ms", "ttft_p99_ms",
	"tpot_p50_ms", "tpot_p99_ms", "vs_static_ttft_p99", "vs_static_tpot_p99",
	"vs_static_ttft_paired_p50", "vs_static_tpot_paired_p50", "", "", "",
};

struct frow {
	long point;
	int set, seed;
	double x;
	char policy[EMA_NAME_MAX], tenant[EMA_NAME_MAX];
	double v[FM_N];
};

struct fig {
	const struct ema_sweep *s;
	const char *out;
	bool quiet;
	int lk;                 /* the load key */
	struct frow *rows;
	size_t n, cap;
	char policies[EMA_MAX_POLICIES][EMA_NAME_MAX];
	int np;
	char tenants[EMA_MAX_TENANTS][EMA_NAME_MAX];
	int nt, role[EMA_MAX_TENANTS]; /* bit 1 borrowed, bit 2 lent */
	char xlab[512];
	int drawn;
	char render[16384];     /* render.sh's lines */
};

/* ---- reading ------------------------------------------------------------------ */

static int split(char *line, char **f, int max)
{
	int n = 0;

	f[n++] = line;
	for (char *p = line; *p && n < max; p++)
		if (*p == ',') {
			*p = '\0';
			f[n++] = p + 1;
		}
	return n;
}

static double num(const char *s)
{
	char *end;
	double v;

	if (s == NULL || *s == '\0')
		return NAN;
	v = strtod(s, &end);
	return *end == '\0' || *end == '\r' ? v : NAN;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Per (policy, tenant) of a point: the median of a request's output
 * tokens over its end-to-end time, over its completed requests. */
static double user_p50(const char *dir, const char *policy, const char *tenant)
{
	char path[EMA_PATH_MAX + 64], *text = NULL, *line, *next;
	int cp = -1, ct = -1, co = -1, ce = -1, first = 1;
	double *v = NULL, r = NAN;
	size_t len, n = 0, cap = 0;

	snprintf(path, sizeof path, "%s/requests.csv", dir);
	if (ema_read_file(path, "requests.csv", 0, &text, &len, NULL) != EMA_OK)
		return NAN;
	for (line = text; line && *line; line = next) {
		char *f[32];
		int nf;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		nf = split(line, f, 32);
		if (first) {
			for (int i = 0; i < nf; i++) {
				if (!strcmp(f[i], "policy")) cp = i;
				if (!strcmp(f[i], "tenant")) ct = i;
				if (!strcmp(f[i], "output_tokens")) co = i;
				if (!strcmp(f[i], "e2e_ms")) ce = i;
			}
			first = 0;
			if (cp < 0 || ct < 0 || co < 0 || ce < 0)
				break;
			continue;
		}
		if (nf <= cp || nf <= ct || nf <= co || nf <= ce || strcmp(f[cp], policy) ||
		    strcmp(f[ct], tenant))
			continue;
		{
			double e = num(f[ce]), o = num(f[co]);

			if (!(e > 0) || isnan(o))
				continue;
			if (n == cap) {
				double *w = realloc(v, (cap = cap ? 2 * cap : 256) * sizeof *v);

				if (w == NULL)
					break;
				v = w;
			}
			v[n++] = o / (e / 1000.0);
		}
	}
	if (n > 0) {
		qsort(v, n, sizeof *v, cmp_double);
		r = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	}
	free(v);
	free(text);
	return r;
}

static int add_policy(struct fig *g, const char *p)
{
	for (int i = 0; i < g->np; i++)
		if (!strcmp(g->policies[i], p))
			return i;
	if (g->np == EMA_MAX_POLICIES)
		return -1;
	snprintf(g->policies[g->np], EMA_NAME_MAX, "%s", p);
	return g->np++;
}

static int add_tenant(struct fig *g, const char *t)
{
	for (int i = 0; i < g->nt; i++)
		if (!strcmp(g->tenants[i], t))
			return i;
	if (g->nt == EMA_MAX_TENANTS)
		return -1;
	snprintf(g->tenants[g->nt], EMA_NAME_MAX, "%s", t);
	g->role[g->nt] = 0;
	return g->nt++;
}

/* The combination of the keys other than the load and the seed. */
static int set_of(const struct fig *g, const int *idx)
{
	int set = 0;

	for (int k = 0; k < g->s->n_keys; k++)
		if (k != g->lk && k != g->s->seed_key)
			set = set * g->s->keys[k].n + idx[k];
	return set;
}

static int read_point(struct fig *g, long pt, struct ema_error *err)
{
	const struct ema_sweep *s = g->s;
	char name[32], dir[EMA_PATH_MAX + 40], path[EMA_PATH_MAX + 64], *text = NULL, *line, *next;
	int idx[EMA_SWEEP_MAX_KEYS], col[FM_N], cp = -1, ct = -1, first = 1, rc;
	size_t len;

	ema_sweep_point_name(pt, name);
	snprintf(dir, sizeof dir, "%s/%s", s->dir, name);
	snprintf(path, sizeof path, "%s/summary.csv", dir);
	rc = ema_read_file(path, "a point's summary.csv", 0, &text, &len, err);
	if (rc != EMA_OK)
		return rc;
	ema_sweep_point_idx(s, pt, idx);
	for (line = text; line && *line; line = next) {
		char *f[256];
		int nf;
		struct frow *w;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		nf = split(line, f, 256);
		if (first) {
			for (int m = 0; m < FM_N; m++)
				col[m] = -1;
			for (int i = 0; i < nf; i++) {
				if (!strcmp(f[i], "policy")) cp = i;
				if (!strcmp(f[i], "tenant")) ct = i;
				for (int m = 0; m < FM_N; m++)
					if (fm_col[m] && !strcmp(f[i], fm_col[m]))
						col[m] = i;
			}
			first = 0;
			if (cp < 0 || ct < 0) {
				free(text);
				return ema_error_at(err, path, 1, "expected policy and tenant columns");
			}
			continue;
		}
		if (nf <= cp || nf <= ct)
			continue;
		if (g->n == g->cap) {
			struct frow *r = realloc(g->rows, (g->cap = g->cap ? 2 * g->cap : 256) * sizeof *r);

			if (r == NULL) {
				free(text);
				return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
			}
			g->rows = r;
		}
		w = &g->rows[g->n++];
		memset(w, 0, sizeof *w);
		w->point = pt;
		w->set = set_of(g, idx);
		w->seed = s->seed_key >= 0 ? idx[s->seed_key] : 0;
		w->x = g->lk >= 0 ? strtod(s->keys[g->lk].values[idx[g->lk]], NULL) : 0;
		snprintf(w->policy, sizeof w->policy, "%s", f[cp]);
		snprintf(w->tenant, sizeof w->tenant, "%s", f[ct]);
		for (int m = 0; m < FM_N; m++)
			w->v[m] = col[m] >= 0 && col[m] < nf ? num(f[col[m]]) : NAN;
		w->v[FM_IDEAL] *= 100.0; /* % of ideal */
		if (isnan(w->v[FM_USER]))
			w->v[FM_USER] = user_p50(dir, w->policy, w->tenant);
		add_policy(g, w->policy);
		{
			int t = add_tenant(g, w->tenant);

			if (t >= 0 && w->v[FM_BORROWED] > 0)
				g->role[t] |= 1;
			if (t >= 0 && w->v[FM_LENT] > 0)
				g->role[t] |= 2;
		}
	}
	free(text);
	return EMA_OK;
}

/* ---- writing a figure ---------------------------------------------------------- */

static const char *role_name(int r)
{
	return r == 1 ? "borrower" : r == 2 ? "lender" : r == 3 ? "borrower and lender" : "neither";
}

/* The tenants in panel order: borrowers, both, lenders, neither. */
static int panel_order(const struct fig *g, int *order, bool lenders_only)
{
	static const int rank[4] = { 3, 0, 2, 1 };
	int n = 0;

	for (int r = 0; r < 4; r++)
		for (int t = 0; t < g->nt; t++)
			if (rank[g->role[t] & 3] == r && (!lenders_only || (g->role[t] & 2)))
				order[n++] = t;
	return n;
}

static int write_text(const char *path, const char *data, size_t len, struct ema_error *err)
{
	struct ema_outfile of;
	FILE *f;
	int rc = ema_outfile_reserve(&of, "figures", path, err);

	if (rc != EMA_OK)
		return rc;
	f = ema_outfile_open(&of, err);
	if (f == NULL)
		return EMA_ERR_IO;
	fwrite(data, 1, len, f);
	return ema_outfile_commit(&of, err);
}

static void set_label(const struct fig *g, int set, char *title, size_t tn, char *suffix, size_t sn)
{
	const struct ema_sweep *s = g->s;
	int rem = set;
	int idx[EMA_SWEEP_MAX_KEYS] = {0};

	title[0] = suffix[0] = '\0';
	for (int k = s->n_keys - 1; k >= 0; k--)
		if (k != g->lk && k != s->seed_key) {
			idx[k] = rem % s->keys[k].n;
			rem /= s->keys[k].n;
		}
	for (int k = 0; k < s->n_keys; k++) {
		const char *v;

		if (k == g->lk || k == s->seed_key)
			continue;
		v = s->keys[k].values[idx[k]];
		snprintf(title + strlen(title), tn - strlen(title), ", %s=%s", s->keys[k].name, v);
		snprintf(suffix + strlen(suffix), sn - strlen(suffix), "_");
		for (const char *c = v; *c && strlen(suffix) + 2 < sn; c++) {
			size_t l = strlen(suffix);

			suffix[l] = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
				    (*c >= '0' && *c <= '9') || *c == '.' || *c == '-' ? *c : '_';
			suffix[l + 1] = '\0';
		}
	}
}

/* Draws SCRIPT from DIR/NAME.spec.gp to DIR/NAME.pdf|png, and keeps the
 * command for render.sh. */
static int draw(struct fig *g, const char *script, const char *name, struct ema_error *err)
{
	char spec[EMA_PATH_MAX + 128], out[EMA_PATH_MAX + 128];
	int rc;

	snprintf(spec, sizeof spec, "%s/%s.spec.gp", g->out, name);
	snprintf(out, sizeof out, "%s/%s", g->out, name);
	rc = ema_plots_draw(g->out, EMA_GNUPLOT, script, spec, out, NULL, err);
	if (rc == EMA_OK) {
		snprintf(g->render + strlen(g->render), sizeof g->render - strlen(g->render),
			 "\t\"$gp\" -d -c %s %s.spec.gp %s.$fmt\n", script, name, name);
		if (EMA_GNUPLOT[0] != '\0')
			g->drawn++;
	}
	return rc;
}

/* Writes a spec file; ``vars`` is gnuplot text. */
static int spec(struct fig *g, const char *name, const char *vars, struct ema_error *err)
{
	char path[EMA_PATH_MAX + 128];

	snprintf(path, sizeof path, "%s/%s.spec.gp", g->out, name);
	return write_text(path, vars, strlen(vars), err);
}

static void policies_text(const struct fig *g, char *buf, size_t n, const char *except)
{
	buf[0] = '\0';
	for (int p = 0; p < g->np; p++)
		if (except == NULL || strcmp(g->policies[p], except))
			snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", buf[0] ? " " : "", g->policies[p]);
}

struct load_fig {
	const char *name, *title, *ylab;
	int metrics[2];
	const char *coltitle[2];
	bool logy, lenders_only;
	double ref;
	const char *except;  /* a policy left out (the reference itself) */
};

static const struct load_fig load_figs[] = {
	{ "throughput", "Throughput against load (geometric mean over seeds, 95% interval)",
	  "throughput (tokens/s)", { FM_TPUT, FM_USER },
	  { "steady-state output throughput (tokens/s)",
	    "per-user throughput, median request (tokens/s)" },
	  false, false, NAN, NULL },
	{ "pct_of_ideal", "Steady-state throughput as % of ideal (2x memory) against load",
	  "% of ideal (%)", { FM_IDEAL, -1 }, { "steady-state throughput / ideal's (%)", NULL },
	  false, false, 100, "ideal" },
	{ "ttft", "Time to first token against load", "TTFT (ms, log scale)",
	  { FM_TTFT50, FM_TTFT99 }, { "TTFT p50 (ms)", "TTFT p99 (ms)" }, true, false, NAN, NULL },
	{ "tpot", "Time per output token against load", "TPOT (ms, log scale)",
	  { FM_TPOT50, FM_TPOT99 }, { "TPOT p50 (ms)", "TPOT p99 (ms)" }, true, false, NAN, NULL },
	{ "lender_slowdown", "Lenders' slowdown against load (ratio to static; 1.15: the guarantee)",
	  "slowdown (x static, ratio)", { FM_STTFT99, FM_STPOT99 },
	  { "TTFT p99 / static's (ratio)", "TPOT p99 / static's (ratio)" }, false, true, 1.15,
	  "static" },
	/* each request against itself: what the p50 ratios of a lender with
	 * a few dozen requests blur (summary.csv's paired medians) */
	{ "lender_paired",
	  "Lenders, each request against itself under static (median ratio; 1.05: the guarantee)",
	  "slowdown (x static, ratio)", { FM_PTTFT, FM_PTPOT },
	  { "TTFT, request by request, median (ratio)",
	    "TPOT, request by request, median (ratio)" },
	  false, true, 1.05, "static" },
};

static int load_figure(struct fig *g, const struct load_fig *lf, int set, struct ema_error *err)
{
	char stitle[512], suffix[256], name[320], pols[1024], tl[1024] = "", rl[1024] = "", ml[256] = "";
	char *buf = NULL;
	size_t len = 0;
	int order[EMA_MAX_TENANTS], nt, nm = lf->metrics[1] >= 0 ? 2 : 1, rows = 0, rc;
	double xs[EMA_SWEEP_MAX_VALUES];
	int nx = 0;
	FILE *f;

	set_label(g, set, stitle, sizeof stitle, suffix, sizeof suffix);
	snprintf(name, sizeof name, "%s%s", lf->name, suffix);
	nt = panel_order(g, order, lf->lenders_only);
	if (nt == 0)
		return EMA_OK;
	for (int v = 0; v < g->s->keys[g->lk].n; v++)
		xs[nx++] = strtod(g->s->keys[g->lk].values[v], NULL);
	qsort(xs, (size_t)nx, sizeof xs[0], cmp_double);
	f = open_memstream(&buf, &len);
	if (f == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	fputs("tenant,role,policy,metric,x,y,lo,hi\n", f);
	for (int ti = 0; ti < nt; ti++)
		for (int p = 0; p < g->np; p++) {
			if (lf->except && !strcmp(g->policies[p], lf->except))
				continue;
			for (int m = 0; m < nm; m++)
				for (int xi = 0; xi < nx; xi++) {
					double vals[512];
					int n = 0;
					struct ema_sweep_stat st;
					double y, lo, hi;

					if (xi > 0 && xs[xi] == xs[xi - 1])
						continue;
					for (size_t r = 0; r < g->n && n < 512; r++) {
						const struct frow *w = &g->rows[r];

						if (w->set == set && w->x == xs[xi] &&
						    !strcmp(w->policy, g->policies[p]) &&
						    !strcmp(w->tenant, g->tenants[order[ti]]))
							vals[n++] = w->v[lf->metrics[m]];
					}
					if (ema_sweep_stat(vals, n, &st) == 0)
						continue;
					y = !isnan(st.gmean) ? st.gmean : st.mean;
					lo = isnan(st.lo) ? y : st.lo;
					hi = isnan(st.hi) ? y : st.hi;
					if (lf->logy && !(y > 0))
						continue;
					fprintf(f, "%s,%s,%s,%s,%.6g,%.6g,%.6g,%.6g\n", g->tenants[order[ti]],
						role_name(g->role[order[ti]]), g->policies[p],
						fm_name[lf->metrics[m]], xs[xi], y, lo, hi);
					rows++;
				}
		}
	fclose(f);
	if (rows == 0) {
		free(buf);
		if (!g->quiet)
			fprintf(stderr,
				"ema: figures: %s: no value to draw (no %s in the points, or "
				"points older than their summary.csv's %s column)\n",
				name, lf->except ? lf->except : "finished request",
				fm_col[lf->metrics[0]]);
		return EMA_OK;
	}
	{
		char path[EMA_PATH_MAX + 128];

		snprintf(path, sizeof path, "%s/%s.csv", g->out, name);
		rc = write_text(path, buf, len, err);
		free(buf);
		if (rc != EMA_OK)
			return rc;
	}
	policies_text(g, pols, sizeof pols, lf->except);
	for (int ti = 0; ti < nt; ti++) {
		const char *rn = role_name(g->role[order[ti]]);

		snprintf(tl + strlen(tl), sizeof tl - strlen(tl), "%s%s", ti ? " " : "", g->tenants[order[ti]]);
		/* a word each: "borrower and lender" travels as one */
		snprintf(rl + strlen(rl), sizeof rl - strlen(rl), "%s", ti ? " " : "");
		for (const char *c = rn; *c; c++)
			snprintf(rl + strlen(rl), sizeof rl - strlen(rl), "%c", *c == ' ' ? '-' : *c);
	}
	for (int m = 0; m < nm; m++)
		snprintf(ml + strlen(ml), sizeof ml - strlen(ml), "%s%s", m ? " " : "", fm_name[lf->metrics[m]]);
	{
		char vars[8192], ref[32];

		if (isnan(lf->ref))
			snprintf(ref, sizeof ref, "NaN");
		else
			snprintf(ref, sizeof ref, "%g", lf->ref);
		snprintf(vars, sizeof vars,
			 "# %s.spec.gp: what load.gp draws for %s.pdf|png (written by ema figures)\n"
			 "datafile = \"%s.csv\"\npolicies = \"%s\"\ntenants = \"%s\"\nroles = \"%s\"\n"
			 "metrics = \"%s\"\narray coltitle[%d]\ncoltitle[1] = \"%s\"\n%s%s%s"
			 "ylab = \"%s\"\nxlab = \"%s\"\nlogy = %d\nref = %s\njitter = %g\n"
			 "figtitle = \"%s, scenario %s%s\"\n",
			 name, name, name, pols, tl, rl, ml, nm, lf->coltitle[0],
			 nm > 1 ? "coltitle[2] = \"" : "", nm > 1 ? lf->coltitle[1] : "", nm > 1 ? "\"\n" : "",
			 lf->ylab, g->xlab, lf->logy ? 1 : 0, ref, nx > 1 ? 0.006 * (xs[nx - 1] - xs[0]) : 0.0,
			 lf->title, g->s->scenario, stitle);
		rc = spec(g, name, vars, err);
	}
	if (rc == EMA_OK)
		rc = draw(g, "load.gp", name, err);
	return rc;
}

/* Reclaim latency CDFs of the lenders' GPUs, at the highest load. */
static int reclaim_figure(struct fig *g, int set, struct ema_error *err)
{
	char stitle[512], suffix[256], name[320], pols[1024], tl[1024] = "";
	char *buf = NULL;
	size_t len = 0;
	double xmax = -INFINITY;
	int order[EMA_MAX_TENANTS], nt = panel_order(g, order, true), rows = 0, rc;
	FILE *f;

	if (nt == 0)
		return EMA_OK;
	set_label(g, set, stitle, sizeof stitle, suffix, sizeof suffix);
	snprintf(name, sizeof name, "reclaim_cdf%s", suffix);
	for (size_t r = 0; r < g->n; r++)
		if (g->rows[r].set == set && g->rows[r].x > xmax)
			xmax = g->rows[r].x;
	f = open_memstream(&buf, &len);
	if (f == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	fputs("tenant,policy,latency_ms\n", f);
	/* each point at that load once: its reclaims, named by the tenant at
	 * home on the lender's GPU */
	for (size_t r = 0; r < g->n; r++) {
		const struct frow *w = &g->rows[r];
		char pname[32], path[EMA_PATH_MAX + 64], *text = NULL, *line, *next;
		size_t tl2;
		bool seen = false;

		if (w->set != set || w->x != xmax)
			continue;
		for (size_t q = 0; q < r && !seen; q++)
			seen = g->rows[q].point == w->point;
		if (seen)
			continue;
		ema_sweep_point_name(w->point, pname);
		snprintf(path, sizeof path, "%s/%s/reclaims.csv", g->s->dir, pname);
		if (ema_read_file(path, "reclaims.csv", 0, &text, &tl2, NULL) != EMA_OK)
			continue;
		for (line = strchr(text, '\n'); line && *++line; line = next) {
			char *fl[8];
			int nf;

			next = strchr(line, '\n');
			if (next)
				*next = '\0';
			nf = split(line, fl, 8);
			if (nf < 5)
				break;
			/* the tenant whose home is that GPU, under that policy */
			for (size_t q = 0; q < g->n; q++) {
				const struct frow *o = &g->rows[q];

				if (o->point == w->point && !strcmp(o->policy, fl[0]) &&
				    o->v[FM_GPU] == num(fl[2])) {
					fprintf(f, "%s,%s,%s\n", o->tenant, fl[0], fl[4]);
					rows++;
					break;
				}
			}
			if (next == NULL)
				break;
		}
		free(text);
	}
	fclose(f);
	if (rows == 0) {
		free(buf);
		if (!g->quiet)
			fprintf(stderr, "ema: figures: %s: no reclaim in the points at the highest load\n",
				name);
		return EMA_OK;
	}
	{
		char path[EMA_PATH_MAX + 128], vars[8192];

		snprintf(path, sizeof path, "%s/%s.csv", g->out, name);
		rc = write_text(path, buf, len, err);
		free(buf);
		if (rc != EMA_OK)
			return rc;
		policies_text(g, pols, sizeof pols, NULL);
		for (int ti = 0; ti < nt; ti++)
			snprintf(tl + strlen(tl), sizeof tl - strlen(tl), "%s%s", ti ? " " : "",
				 g->tenants[order[ti]]);
		snprintf(vars, sizeof vars,
			 "# %s.spec.gp: what cdf.gp draws (written by ema figures)\n"
			 "datafile = \"%s.csv\"\npolicies = \"%s\"\ntenants = \"%s\"\nfloor = 0.001\n"
			 "xlab = \"reclaim latency (ms, log scale; 0 ms drawn at 0.001)\"\n"
			 "figtitle = \"Reclaim latency CDFs at %s = %g (seeds pooled), scenario %s%s\"\n",
			 name, name, pols, tl, g->xlab, xmax, g->s->scenario, stitle);
		rc = spec(g, name, vars, err);
	}
	if (rc == EMA_OK)
		rc = draw(g, "cdf.gp", name, err);
	return rc;
}

/* The memory timeline of the point at the highest load, first seed. */
static int memory_figure(struct fig *g, int set, struct ema_error *err)
{
	char stitle[512], suffix[256], name[320], pols[1024], map[2048] = "", in[EMA_PATH_MAX + 64];
	char out[EMA_PATH_MAX + 128], pname[32], scen[1024];
	const char *extra[4];
	long best = -1;
	double xmax = -INFINITY;
	int rc;

	set_label(g, set, stitle, sizeof stitle, suffix, sizeof suffix);
	snprintf(name, sizeof name, "memory%s", suffix);
	for (size_t r = 0; r < g->n; r++) {
		const struct frow *w = &g->rows[r];

		if (w->set == set && (w->x > xmax || (w->x == xmax && w->point < best))) {
			xmax = w->x;
			best = w->point;
		}
	}
	if (best < 0)
		return EMA_OK;
	for (size_t r = 0; r < g->n; r++) {
		const struct frow *w = &g->rows[r];
		char pair[200];

		if (w->point != best || isnan(w->v[FM_GPU]))
			continue;
		snprintf(pair, sizeof pair, "%.0f:%s", w->v[FM_GPU], w->tenant);
		if (strstr(map, pair) == NULL)
			snprintf(map + strlen(map), sizeof map - strlen(map), "%s%s", map[0] ? " " : "", pair);
	}
	policies_text(g, pols, sizeof pols, NULL);
	ema_sweep_point_name(best, pname);
	/* what memory.gp draws, beside the figure (the folder redraws on its
	 * own): the point's timeline cut to what a panel shows */
	{
		char csv[EMA_PATH_MAX + 64];

		snprintf(csv, sizeof csv, "%s/%s/timeline.csv", g->s->dir, pname);
		snprintf(in, sizeof in, "%s/%s.dat", g->out, name);
		rc = ema_plots_memory_data(csv, in, pols, err);
		if (rc != EMA_OK)
			return rc;
	}
	snprintf(out, sizeof out, "%s/%s", g->out, name);
	snprintf(scen, sizeof scen, "%s (%s: %s = %g)", g->s->scenario, pname, g->xlab, xmax);
	extra[0] = pols;
	extra[1] = scen;
	extra[2] = map;
	extra[3] = NULL;
	rc = ema_plots_draw(g->out, EMA_GNUPLOT, "memory.gp", in, out, extra, err);
	if (rc == EMA_OK) {
		snprintf(g->render + strlen(g->render), sizeof g->render - strlen(g->render),
			 "\t\"$gp\" -d -c memory.gp %s.dat %s.$fmt '%s' '%s' '%s'\n", name, name, pols,
			 scen, map);
		if (EMA_GNUPLOT[0] != '\0')
			g->drawn++;
	}
	return rc;
}

/* ---- capacity ------------------------------------------------------------------------ */

static int capacity_figure(struct fig *g, const char *cdir, struct ema_error *err)
{
	char path[EMA_PATH_MAX + 64], *text = NULL, *line, *next, *buf = NULL;
	char pols[1024] = "", groups[2048] = "", key[256] = "", slo[512] = "", col[64] = "", vars[8192];
	const char *scen = g->s != NULL ? g->s->scenario : "";
	size_t len, blen = 0;
	int cp = -1, cy = -1, cg = -1, clo = -1, chi = -1, ck = -1, cs = -1, cseeds = -1, first = 1, rows = 0;
	int rc;
	FILE *f;

	snprintf(path, sizeof path, "%s/capacity.csv", cdir);
	rc = ema_read_file(path, "capacity.csv", 0, &text, &len, err);
	if (rc != EMA_OK)
		return rc;
	f = open_memstream(&buf, &blen);
	if (f == NULL) {
		free(text);
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	}
	fputs("group,policy,y,lo,hi\n", f);
	for (line = text; line && *line; line = next) {
		char *fl[64], grp[256] = "";
		int nf;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		nf = split(line, fl, 64);
		if (first) {
			for (int i = 0; i < nf; i++) {
				size_t l = strlen(fl[i]);

				if (!strcmp(fl[i], "policy")) cp = i;
				if (!strcmp(fl[i], "seeds")) cseeds = i;
				if (!strcmp(fl[i], "key")) ck = i;
				if (!strcmp(fl[i], "slo")) cs = i;
				if (!strncmp(fl[i], "max_rate", 8) && l > 6 && !strcmp(fl[i] + l - 6, "_gmean")) {
					cy = i;
					snprintf(col, sizeof col, "%.*s", (int)(l - 6), fl[i]);
				}
				if (!strncmp(fl[i], "max_rate", 8) && l > 9 && !strcmp(fl[i] + l - 9, "_ci95_low"))
					clo = i;
				if (!strncmp(fl[i], "max_rate", 8) && l > 10 && !strcmp(fl[i] + l - 10, "_ci95_high"))
					chi = i;
			}
			cg = cp; /* the columns before policy are the other keys */
			first = 0;
			if (cp < 0 || cy < 0)
				break;
			continue;
		}
		if (nf <= cy || nf <= cp)
			continue;
		for (int i = 0; i < cg; i++)
			snprintf(grp + strlen(grp), sizeof grp - strlen(grp), "%s%s", i ? "," : "", fl[i]);
		if (grp[0] == '\0')
			snprintf(grp, sizeof grp, "all");
		for (char *c = grp; *c; c++)
			if (*c == ' ' || *c == ',')
				*c = ';';
		{
			double y = num(fl[cy]), lo = clo >= 0 ? num(fl[clo]) : NAN, hi = chi >= 0 ? num(fl[chi]) : NAN;

			if (isnan(y) && cseeds >= 0)
				y = num(fl[cy - 2]); /* the mean, when a 0 left no geometric mean */
			if (isnan(y))
				continue;
			fprintf(f, "%s,%s,%.6g,%.6g,%.6g\n", grp, fl[cp], y, isnan(lo) ? y : lo, isnan(hi) ? y : hi);
			rows++;
		}
		if (strstr(pols, fl[cp]) == NULL)
			snprintf(pols + strlen(pols), sizeof pols - strlen(pols), "%s%s", pols[0] ? " " : "", fl[cp]);
		if (strstr(groups, grp) == NULL)
			snprintf(groups + strlen(groups), sizeof groups - strlen(groups), "%s%s", groups[0] ? " " : "", grp);
		if (ck >= 0 && ck < nf)
			snprintf(key, sizeof key, "%s", fl[ck]);
		if (cs >= 0 && cs < nf)
			snprintf(slo, sizeof slo, "%s", fl[cs]);
	}
	fclose(f);
	free(text);
	if (rows == 0) {
		free(buf);
		return ema_error_at(err, path, 1, "expected the columns ema writes (policy, "
				    "max_rate_*_gmean)");
	}
	snprintf(path, sizeof path, "%s/capacity.csv", g->out);
	rc = write_text(path, buf, blen, err);
	free(buf);
	if (rc != EMA_OK)
		return rc;
	{
		const char *unit = ema_config_key_unit(key);
		const char *last = strrchr(key, '.') ? strrchr(key, '.') + 1 : key;
		char who[EMA_NAME_MAX + 4] = "";

		/* tenants.N.workload.rate_rps: the tenant's name */
		if (!strncmp(key, "tenants.", 8) && g->s != NULL && g->nt > atoi(key + 8))
			snprintf(who, sizeof who, "%s ", g->tenants[atoi(key + 8)]);
		snprintf(vars, sizeof vars,
			 "# capacity.spec.gp: what capacity.gp draws (written by ema figures)\n"
			 "datafile = \"capacity.csv\"\npolicies = \"%s\"\ngroups = \"%s\"\n"
			 "ylab = \"largest %s%s meeting the SLO (%s)\"\n"
			 "figtitle = \"Capacity under the SLO%s%s\\n(%s, every request completed; geometric "
			 "mean over seeds, 95%% interval)\"\n",
			 pols, groups, who, last, unit && unit[0] ? unit : col, scen[0] ? ", scenario " : "",
			 scen, slo);
	}
	rc = spec(g, "capacity", vars, err);
	if (rc == EMA_OK)
		rc = draw(g, "capacity.gp", "capacity", err);
	return rc;
}

/* ---- the command ------------------------------------------------------------------------ */

static void make_xlab(struct fig *g)
{
	const char *key = g->s->keys[g->lk].name, *unit = ema_config_key_unit(key);
	const char *rest = key;
	char who[EMA_NAME_MAX + 8] = "";

	/* tenants.N.KEY: the tenant's name, not its index */
	if (strncmp(key, "tenants.", 8) == 0) {
		char *end;
		long i = strtol(key + 8, &end, 10);

		if (end != key + 8 && *end == '.' && i >= 0 && i < g->nt) {
			snprintf(who, sizeof who, "%s ", g->tenants[i]);
			rest = end + 1;
		}
	}
	snprintf(g->xlab, sizeof g->xlab, "%s%s (%s)", who, rest, unit && unit[0] ? unit : "value");
}

int ema_figures_draw(const char *sweep_dir, const char *cap_dir, const char *out, bool quiet,
		     int *drawn, struct ema_error *err)
{
	struct fig *g = calloc(1, sizeof *g);
	struct ema_sweep *s = calloc(1, sizeof *s);
	int rc = EMA_OK, n_sets = 1;

	if (g == NULL || s == NULL) {
		free(g);
		free(s);
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	}
	g->out = out;
	g->quiet = quiet;
	g->lk = -1;
	if (mkdir(out, 0777) != 0 && errno != EEXIST)
		rc = ema_error_set(err, EMA_ERR_INPUT, "%s: cannot create: %s", out, strerror(errno));
	if (rc == EMA_OK && sweep_dir != NULL) {
		rc = ema_sweep_read_manifest(s, sweep_dir, err);
		g->s = s;
	}
	if (rc == EMA_OK && sweep_dir != NULL) {
		/* the load: a numeric key besides the seed, a rate first */
		for (int pass = 0; pass < 2 && g->lk < 0; pass++)
			for (int k = 0; k < s->n_keys && g->lk < 0; k++) {
				bool numeric = k != s->seed_key;

				for (int v = 0; v < s->keys[k].n && numeric; v++) {
					char *end;

					strtod(s->keys[k].values[v], &end);
					numeric = *end == '\0';
				}
				if (numeric && (pass == 1 || strstr(s->keys[k].name, "rate") != NULL))
					g->lk = k;
			}
		if (g->lk < 0)
			fprintf(stderr, "ema: figures: %s sweeps no numeric key besides the seed (%s%s): "
				"the load figures need one, as --vary tenants.0.workload.rate_rps=4,8,12\n",
				sweep_dir, s->keys[0].name, s->n_keys > 1 ? ", ..." : "");
	}
	if (rc == EMA_OK && g->lk >= 0) {
		for (long pt = 0; pt < s->n_points && rc == EMA_OK; pt++) {
			bool done;

			rc = ema_sweep_point_done(s, pt, &done, err);
			if (rc == EMA_OK && done)
				rc = read_point(g, pt, err);
		}
		for (int k = 0; k < s->n_keys; k++)
			if (k != g->lk && k != s->seed_key)
				n_sets *= s->keys[k].n;
		make_xlab(g);
		for (int set = 0; set < n_sets && rc == EMA_OK; set++) {
			for (size_t f = 0; f < sizeof load_figs / sizeof load_figs[0] && rc == EMA_OK; f++)
				rc = load_figure(g, &load_figs[f], set, err);
			if (rc == EMA_OK)
				rc = reclaim_figure(g, set, err);
			if (rc == EMA_OK)
				rc = memory_figure(g, set, err);
		}
	}
	if (rc == EMA_OK && cap_dir != NULL)
		rc = capacity_figure(g, cap_dir, err);
	if (rc == EMA_OK && g->render[0] != '\0') {
		char path[EMA_PATH_MAX + 64], text[17000];

		snprintf(path, sizeof path, "%s/render.sh", out);
		snprintf(text, sizeof text,
			 "#!/bin/sh\n# render.sh: redraws these figures from the tables beside it; edit a\n"
			 "# .gp script or style.gp (every figure's colours) and run it again.\n"
			 "# Written by ema figures. Usage: sh render.sh [GNUPLOT]\n"
			 "set -eu\ncd \"$(dirname \"$0\")\"\ngp=${1:-${EMA_GNUPLOT:-gnuplot}}\n"
			 "for fmt in pdf png; do\n%sdone\n", g->render);
		rc = write_text(path, text, strlen(text), err);
	}
	if (drawn != NULL)
		*drawn = g->drawn;
	ema_sweep_free(s);
	free(s);
	free(g->rows);
	free(g);
	return rc;
}
