/* figures.c: `ema figures DIR...`, the paper's figures from sweep folders
 * (and a capacity search's folder): throughput and per-user throughput,
 * % of ideal, TTFT and TPOT p50/p99, the lenders' slowdown against load,
 * reclaim latency CDFs, a memory timeline and the capacity under an SLO.
 * The data are gathered here, from the points' files by column name, into
 * one small table per figure; gnuplot scripts with one shared style
 * (plots/style.gp) draw them as PDF and PNG, and render.sh redraws them
 * after an edit. Every figure names the scenario as run (its name and
 * what the command's --set changed) and how many seeds each value stands
 * for; each tenant has its own panel, borrowers first, then lenders;
 * values over three seeds or more are geometric means with their 95%
 * interval on the log scale, which stays above zero, and below three
 * seeds (where t(0.975, 1) = 12.7 would make the interval fill the axis)
 * the seeds themselves are drawn. The values of a swept policy knob
 * (policy.*) share one plot, a line per value, rather than one set of
 * figures each. */
#include "sweep.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ema_build.h"
#include "outdir.h"
#include "plot_data.h"
#include "plots.h"
#include "readfile.h"

/* The lines of a figure: a policy, or a policy at one value of the swept
 * policy knobs (its "variant"). */
#define FIG_MAX_SERIES 24
/* Below this many seeds a value is drawn as its seeds, not an interval. */
#define FIG_MIN_SEEDS_CI 3

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
	long point, base;       /* base: the point with every variant key at its first value */
	int set, seed, var;
	double x;
	char policy[EMA_NAME_MAX], tenant[EMA_NAME_MAX];
	double v[FM_N];
};

struct series {
	int p;                  /* index into fig.policies */
	int var;                /* the variant, -1: every variant (they do not differ) */
	char name[EMA_NAME_MAX + 192];
};

struct fig {
	const struct ema_sweep *s;
	const char *out;
	bool quiet;
	int lk;                 /* the load key */
	bool variant[EMA_SWEEP_MAX_KEYS]; /* swept policy knobs: lines, not figure sets */
	int nvar;               /* variants: product of the variant keys' values */
	struct frow *rows;
	size_t n, cap;
	char policies[EMA_MAX_POLICIES][EMA_NAME_MAX];
	int np;
	struct series series[FIG_MAX_SERIES];
	int ns;
	char tenants[EMA_MAX_TENANTS][EMA_NAME_MAX];
	int nt, role[EMA_MAX_TENANTS]; /* bit 1 borrowed, bit 2 lent */
	char xlab[512];
	char label[1024];       /* the scenario as run (ema_plots_scenario_label) */
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

/* A value for the tables: NaN as gnuplot and a reader spell it. */
static const char *gnum(double v, char buf[32])
{
	if (isnan(v))
		return "NaN";
	snprintf(buf, 32, "%.6g", v);
	return buf;
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

/* Whether key k makes figure sets: not the load, the seed or a variant. */
static bool set_key(const struct fig *g, int k)
{
	return k != g->lk && k != g->s->seed_key && !g->variant[k];
}

/* The combination of the keys that make figure sets. */
static int set_of(const struct fig *g, const int *idx)
{
	int set = 0;

	for (int k = 0; k < g->s->n_keys; k++)
		if (set_key(g, k))
			set = set * g->s->keys[k].n + idx[k];
	return set;
}

/* The combination of the variant keys' values. */
static int var_of(const struct fig *g, const int *idx)
{
	int var = 0;

	for (int k = 0; k < g->s->n_keys; k++)
		if (g->variant[k])
			var = var * g->s->keys[k].n + idx[k];
	return var;
}

/* The point of idx with every variant key at its first value. */
static long base_of(const struct fig *g, const int *idx)
{
	long pt = 0;

	for (int k = 0; k < g->s->n_keys; k++)
		pt = pt * g->s->keys[k].n + (g->variant[k] ? 0 : idx[k]);
	return pt;
}

/* A knob's short name: policy.ema.tpot_budget -> tpot_budget. */
static const char *knob_name(const char *key)
{
	const char *dot = strrchr(key, '.');

	return dot != NULL ? dot + 1 : key;
}

/* "tpot_budget=0.05" (several: joined by '/'), for variant var. */
static void variant_label(const struct fig *g, int var, char *out, size_t n)
{
	int idx[EMA_SWEEP_MAX_KEYS] = { 0 }, rem = var;

	out[0] = '\0';
	for (int k = g->s->n_keys - 1; k >= 0; k--)
		if (g->variant[k]) {
			idx[k] = rem % g->s->keys[k].n;
			rem /= g->s->keys[k].n;
		}
	for (int k = 0; k < g->s->n_keys; k++)
		if (g->variant[k])
			snprintf(out + strlen(out), n - strlen(out), "%s%s=%s", out[0] ? "/" : "",
				 knob_name(g->s->keys[k].name), g->s->keys[k].values[idx[k]]);
	/* a series name is one word of the scripts' lists and a CSV field */
	for (char *c = out; *c; c++)
		if ((unsigned char)*c <= ' ' || *c == ',' || *c == '"' || *c == '\'' ||
		    *c == '\\' || *c == '`')
			*c = '_';
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

/* The set, variant and base point of every row, from its point. */
static void classify(struct fig *g)
{
	g->nvar = 1;
	for (int k = 0; k < g->s->n_keys; k++)
		if (g->variant[k])
			g->nvar *= g->s->keys[k].n;
	for (size_t r = 0; r < g->n; r++) {
		int idx[EMA_SWEEP_MAX_KEYS];

		ema_sweep_point_idx(g->s, g->rows[r].point, idx);
		g->rows[r].set = set_of(g, idx);
		g->rows[r].var = var_of(g, idx);
		g->rows[r].base = base_of(g, idx);
	}
}

static bool same_values(const struct frow *a, const struct frow *b)
{
	for (int m = 0; m < FM_N; m++)
		if (!(a->v[m] == b->v[m] || (isnan(a->v[m]) && isnan(b->v[m]))))
			return false;
	return true;
}

/* Whether policy p's figures differ between the variants: each of its rows
 * against the row of the same tenant at the first variant (a knob of
 * another policy leaves static's and ideal's figures as they were: they
 * are then drawn once). first[pt]: the first row of point pt, or -1. */
static bool policy_varies(const struct fig *g, int p, const long *first)
{
	for (size_t r = 0; r < g->n; r++) {
		const struct frow *w = &g->rows[r];
		bool found = false;

		if (w->var == 0 || strcmp(w->policy, g->policies[p]) != 0)
			continue;
		if (first[w->base] < 0)
			return true;
		for (size_t q = (size_t)first[w->base]; q < g->n && g->rows[q].point == w->base; q++)
			if (!strcmp(g->rows[q].policy, w->policy) && !strcmp(g->rows[q].tenant, w->tenant)) {
				if (!same_values(&g->rows[q], w))
					return true;
				found = true;
				break;
			}
		if (!found)
			return true;
	}
	return false;
}

/* The lines of every figure: a policy, or with swept policy knobs a
 * policy at each of their values where that changes its figures. More
 * than FIG_MAX_SERIES lines: the knobs make figure sets instead (a note
 * says so). */
static int build_series(struct fig *g, struct ema_error *err)
{
	long *first = malloc((size_t)g->s->n_points * sizeof *first);

	if (first == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	for (;;) {
		bool fits = true;

		classify(g);
		for (long pt = 0; pt < g->s->n_points; pt++)
			first[pt] = -1;
		for (size_t r = g->n; r-- > 0;)
			first[g->rows[r].point] = (long)r;
		g->ns = 0;
		for (int p = 0; p < g->np && fits; p++) {
			int nv = g->nvar > 1 && policy_varies(g, p, first) ? g->nvar : 1;

			for (int v = 0; v < nv && fits; v++) {
				struct series *se = &g->series[g->ns];
				char lab[192], pol[EMA_NAME_MAX];

				if (g->ns == FIG_MAX_SERIES) {
					fits = false;
					break;
				}
				se->p = p;
				se->var = nv > 1 ? v : -1;
				/* a copy: se->name and the policy's name are in one object */
				memcpy(pol, g->policies[p], sizeof pol);
				pol[sizeof pol - 1] = '\0';
				if (nv > 1) {
					variant_label(g, v, lab, sizeof lab);
					snprintf(se->name, sizeof se->name, "%s:%s", pol, lab);
				} else {
					snprintf(se->name, sizeof se->name, "%s", pol);
				}
				g->ns++;
			}
		}
		if (fits)
			break;
		if (!g->quiet)
			fprintf(stderr, "ema: figures: the swept policy knobs give more than %d lines; "
				"each of their values gets its own figures\n", FIG_MAX_SERIES);
		memset(g->variant, 0, sizeof g->variant);
	}
	free(first);
	return EMA_OK;
}

/* Whether row w is drawn on series se: its policy, at se's variant (at the
 * first one when the variants do not differ, so that a seed counts once). */
static bool in_series(const struct fig *g, const struct series *se, const struct frow *w)
{
	return !strcmp(w->policy, g->policies[se->p]) && w->var == (se->var < 0 ? 0 : se->var);
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

/* Text for a gnuplot double-quoted string: a quote or a backslash would end
 * it or escape what follows, so they become '_'. */
static void gp_text(char *s)
{
	for (; *s; s++)
		if (*s == '"' || *s == '\\' || (unsigned char)*s < ' ')
			*s = '_';
}

static void set_label(const struct fig *g, int set, char *title, size_t tn, char *suffix, size_t sn)
{
	const struct ema_sweep *s = g->s;
	int rem = set;
	int idx[EMA_SWEEP_MAX_KEYS] = {0};

	title[0] = suffix[0] = '\0';
	for (int k = s->n_keys - 1; k >= 0; k--)
		if (set_key(g, k)) {
			idx[k] = rem % s->keys[k].n;
			rem /= s->keys[k].n;
		}
	for (int k = 0; k < s->n_keys; k++) {
		const char *v;

		if (!set_key(g, k))
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
	gp_text(title);
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

/* For a title: the swept policy knobs and whether they made lines of
 * their own ("" without any), so that a knob whose values changed nothing
 * is still said to have been swept. */
static void variant_note(const struct fig *g, char *out, size_t n)
{
	bool lines = false;

	out[0] = '\0';
	if (g->nvar <= 1)
		return;
	for (int i = 0; i < g->ns; i++)
		lines = lines || g->series[i].var >= 0;
	for (int k = 0; k < g->s->n_keys; k++) {
		if (!g->variant[k])
			continue;
		snprintf(out + strlen(out), n - strlen(out), "; %s=", g->s->keys[k].name);
		for (int v = 0; v < g->s->keys[k].n; v++)
			snprintf(out + strlen(out), n - strlen(out), "%s%s", v ? "," : "",
				 g->s->keys[k].values[v]);
	}
	snprintf(out + strlen(out), n - strlen(out), "%s",
		 lines ? " (a line per value where it changes a policy)" :
			 " (the same figures at every value)");
	gp_text(out);
}

/* The names of the series (all, or those of policies other than except). */
static void series_text(const struct fig *g, char *buf, size_t n, const char *except)
{
	buf[0] = '\0';
	for (int i = 0; i < g->ns; i++)
		if (except == NULL || strcmp(g->policies[g->series[i].p], except))
			snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", buf[0] ? " " : "",
				 g->series[i].name);
}

/* What a figure's values stand for, from the fewest (nmin) and the most
 * (nmax) seeds behind one of them; mark: what draws a value ("line"). */
static void seeds_text(int nmin, int nmax, const char *mark, char *out, size_t n)
{
	char range[32];

	if (nmin == nmax)
		snprintf(range, sizeof range, "%d", nmin);
	else
		snprintf(range, sizeof range, "%d-%d", nmin, nmax);
	if (nmax <= 1)
		snprintf(out, n, "one seed per value (n = 1)");
	else if (nmin >= FIG_MIN_SEEDS_CI)
		snprintf(out, n, "geometric mean over n = %s seeds, 95%% interval", range);
	else if (nmax < FIG_MIN_SEEDS_CI)
		snprintf(out, n, "n = %s seeds: each seed a dot, the %s their geometric mean "
			 "(no interval below %d seeds)", range, mark, FIG_MIN_SEEDS_CI);
	else
		snprintf(out, n, "n = %s seeds: geometric mean, 95%% interval where n >= %d, each "
			 "seed a dot where fewer", range, FIG_MIN_SEEDS_CI);
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
	{ "throughput", "Throughput against load",
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
	char stitle[512], suffix[256], name[320], pols[2048], tl[1024] = "", rl[1024] = "", ml[256] = "";
	char *buf = NULL, *sbuf = NULL;
	size_t len = 0, slen = 0;
	int order[EMA_MAX_TENANTS], nt, nm = lf->metrics[1] >= 0 ? 2 : 1, rows = 0, srows = 0, rc;
	int nmin = 0, nmax = 0;
	double xs[EMA_SWEEP_MAX_VALUES];
	int nx = 0;
	FILE *f, *sf;

	set_label(g, set, stitle, sizeof stitle, suffix, sizeof suffix);
	snprintf(name, sizeof name, "%s%s", lf->name, suffix);
	nt = panel_order(g, order, lf->lenders_only);
	if (nt == 0)
		return EMA_OK;
	for (int v = 0; v < g->s->keys[g->lk].n; v++)
		xs[nx++] = strtod(g->s->keys[g->lk].values[v], NULL);
	qsort(xs, (size_t)nx, sizeof xs[0], cmp_double);
	f = open_memstream(&buf, &len);
	sf = open_memstream(&sbuf, &slen);
	if (f == NULL || sf == NULL) {
		if (f != NULL)
			fclose(f);
		free(buf);
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	}
	/* the values, and beside them the seeds of a value with too few seeds
	 * for an interval, in the same columns (n: the seeds of the value) */
	fputs("tenant,role,policy,metric,x,n,y,lo,hi\n", f);
	fputs("tenant,role,policy,metric,x,n,y,lo,hi\n", sf);
	for (int ti = 0; ti < nt; ti++)
		for (int si = 0; si < g->ns; si++) {
			const struct series *se = &g->series[si];

			if (lf->except && !strcmp(g->policies[se->p], lf->except))
				continue;
			for (int m = 0; m < nm; m++)
				for (int xi = 0; xi < nx; xi++) {
					double vals[512];
					int n = 0, used;
					struct ema_sweep_stat st;
					double y, lo, hi;
					char lob[32], hib[32];

					if (xi > 0 && xs[xi] == xs[xi - 1])
						continue;
					for (size_t r = 0; r < g->n && n < 512; r++) {
						const struct frow *w = &g->rows[r];

						if (w->set == set && w->x == xs[xi] && in_series(g, se, w) &&
						    !strcmp(w->tenant, g->tenants[order[ti]]))
							vals[n++] = w->v[lf->metrics[m]];
					}
					used = ema_sweep_stat(vals, n, &st);
					if (used == 0)
						continue;
					y = !isnan(st.gmean) ? st.gmean : st.mean;
					if (lf->logy && !(y > 0))
						continue;
					lo = used >= FIG_MIN_SEEDS_CI ? st.lo : NAN;
					hi = used >= FIG_MIN_SEEDS_CI ? st.hi : NAN;
					fprintf(f, "%s,%s,%s,%s,%.6g,%d,%.6g,%s,%s\n",
						g->tenants[order[ti]], role_name(g->role[order[ti]]), se->name,
						fm_name[lf->metrics[m]], xs[xi], used, y, gnum(lo, lob),
						gnum(hi, hib));
					rows++;
					nmin = rows == 1 || used < nmin ? used : nmin;
					nmax = used > nmax ? used : nmax;
					if (used > 1 && used < FIG_MIN_SEEDS_CI)
						for (int i = 0; i < n; i++) {
							if (isnan(vals[i]) || (lf->logy && !(vals[i] > 0)))
								continue;
							fprintf(sf, "%s,%s,%s,%s,%.6g,%d,%.6g,NaN,NaN\n",
								g->tenants[order[ti]],
								role_name(g->role[order[ti]]), se->name,
								fm_name[lf->metrics[m]], xs[xi], used, vals[i]);
							srows++;
						}
				}
		}
	fclose(f);
	fclose(sf);
	if (rows == 0) {
		free(buf);
		free(sbuf);
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
		if (rc == EMA_OK && srows > 0) {
			snprintf(path, sizeof path, "%s/%s.seeds.csv", g->out, name);
			rc = write_text(path, sbuf, slen, err);
		}
		free(buf);
		free(sbuf);
		if (rc != EMA_OK)
			return rc;
	}
	series_text(g, pols, sizeof pols, lf->except);
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
		char vars[16384], ref[32], title[3072], seeds[256], sfile[400], vnote[1024];

		if (isnan(lf->ref))
			snprintf(ref, sizeof ref, "NaN");
		else
			snprintf(ref, sizeof ref, "%g", lf->ref);
		seeds_text(nmin, nmax, "line", seeds, sizeof seeds);
		/* three lines: what, the scenario as run, what a value stands for */
		variant_note(g, vnote, sizeof vnote);
		snprintf(title, sizeof title, "%s%s%s\\nscenario %s\\n%s", lf->title, stitle, vnote,
			 g->label, seeds);
		snprintf(sfile, sizeof sfile, "%s.seeds.csv", name);
		snprintf(vars, sizeof vars,
			 "# %s.spec.gp: what load.gp draws for %s.pdf|png (written by ema figures)\n"
			 "datafile = \"%s.csv\"\nseedsfile = \"%s\"\npolicies = \"%s\"\n"
			 "tenants = \"%s\"\nroles = \"%s\"\n"
			 "metrics = \"%s\"\narray coltitle[%d]\ncoltitle[1] = \"%s\"\n%s%s%s"
			 "ylab = \"%s\"\nxlab = \"%s\"\nlogy = %d\nref = %s\njitter = %g\n"
			 "hasci = %d\nfigtitle = \"%s\"\n",
			 name, name, name, srows > 0 ? sfile : "", pols, tl, rl, ml, nm, lf->coltitle[0],
			 nm > 1 ? "coltitle[2] = \"" : "", nm > 1 ? lf->coltitle[1] : "", nm > 1 ? "\"\n" : "",
			 lf->ylab, g->xlab, lf->logy ? 1 : 0, ref, nx > 1 ? 0.006 * (xs[nx - 1] - xs[0]) : 0.0,
			 nmax >= FIG_MIN_SEEDS_CI, title);
		rc = spec(g, name, vars, err);
	}
	if (rc == EMA_OK)
		rc = draw(g, "load.gp", name, err);
	return rc;
}

/* The series that row w is drawn on, or NULL (a point of another variant
 * of a policy whose variants do not differ: drawn once, from the first). */
static const struct series *series_of(const struct fig *g, const struct frow *w)
{
	for (int i = 0; i < g->ns; i++)
		if (in_series(g, &g->series[i], w))
			return &g->series[i];
	return NULL;
}

/* Reclaim latency CDFs of the lenders' GPUs, at the highest load. */
static int reclaim_figure(struct fig *g, int set, struct ema_error *err)
{
	char stitle[512], suffix[256], name[320], pols[2048], tl[1024] = "";
	char *buf = NULL;
	size_t len = 0;
	double xmax = -INFINITY;
	unsigned long long seeds = 0;
	int order[EMA_MAX_TENANTS], nt = panel_order(g, order, true), rows = 0, nseeds = 0, rc;
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
				const struct series *se;

				if (o->point == w->point && !strcmp(o->policy, fl[0]) &&
				    o->v[FM_GPU] == num(fl[2])) {
					se = series_of(g, o);
					if (se != NULL) {
						fprintf(f, "%s,%s,%s\n", o->tenant, se->name, fl[4]);
						rows++;
						if (w->seed < 64 && !(seeds & (1ULL << w->seed))) {
							seeds |= 1ULL << w->seed;
							nseeds++;
						}
					}
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
		char path[EMA_PATH_MAX + 128], vars[16384], vnote[1024];

		snprintf(path, sizeof path, "%s/%s.csv", g->out, name);
		rc = write_text(path, buf, len, err);
		free(buf);
		if (rc != EMA_OK)
			return rc;
		variant_note(g, vnote, sizeof vnote);
		series_text(g, pols, sizeof pols, NULL);
		for (int ti = 0; ti < nt; ti++)
			snprintf(tl + strlen(tl), sizeof tl - strlen(tl), "%s%s", ti ? " " : "",
				 g->tenants[order[ti]]);
		snprintf(vars, sizeof vars,
			 "# %s.spec.gp: what cdf.gp draws (written by ema figures)\n"
			 "datafile = \"%s.csv\"\npolicies = \"%s\"\ntenants = \"%s\"\nfloor = 0.001\n"
			 "xlab = \"reclaim latency (ms, log scale; 0 ms drawn at 0.001)\"\n"
			 "figtitle = \"Reclaim latency CDFs at %s = %g%s%s\\nscenario %s\\n"
			 "the reclaims of n = %d seed%s pooled\"\n",
			 name, name, pols, tl, g->xlab, xmax, stitle, vnote, g->label, nseeds,
			 nseeds == 1 ? "" : "s");
		rc = spec(g, name, vars, err);
	}
	if (rc == EMA_OK)
		rc = draw(g, "cdf.gp", name, err);
	return rc;
}

/* The memory timeline of the point at the highest load, first seed (and
 * first value of the swept policy knobs). */
static int memory_figure(struct fig *g, int set, struct ema_error *err)
{
	char stitle[512], suffix[256], name[320], pols[1024], map[2048] = "", in[EMA_PATH_MAX + 64];
	char out[EMA_PATH_MAX + 128], pname[32], scen[4096], var[192] = "", seedtxt[160];
	const char *extra[4];
	long best = -1;
	double xmax = -INFINITY;
	int rc, seed = 0;

	set_label(g, set, stitle, sizeof stitle, suffix, sizeof suffix);
	snprintf(name, sizeof name, "memory%s", suffix);
	for (size_t r = 0; r < g->n; r++) {
		const struct frow *w = &g->rows[r];

		if (w->set == set && w->var == 0 &&
		    (w->x > xmax || (w->x == xmax && w->point < best))) {
			xmax = w->x;
			best = w->point;
			seed = w->seed;
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
	if (g->nvar > 1) {
		variant_label(g, 0, var, sizeof var);
		strcat(var, ", ");
	}
	if (g->s->seed_key >= 0)
		snprintf(seedtxt, sizeof seedtxt, "seed %s", g->s->keys[g->s->seed_key].values[seed]);
	else
		snprintf(seedtxt, sizeof seedtxt, "the scenario's seed");
	/* the title's second line (memory.gp: "scenario " SCENARIO): one run */
	snprintf(scen, sizeof scen, "%s%s; %s: %s = %g, %s%s, one run (n = 1)", g->label, stitle,
		 pname, g->xlab, xmax, var, seedtxt);
	for (char *c = scen; *c; c++)
		if (*c == '\'' || *c == '"' || *c == '\\' || *c == '`')
			*c = '_';
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

/* The per-seed capacities of capacity_seeds.csv (group,policy,y: the rate
 * met), for the groups whose search ran on fewer than FIG_MIN_SEEDS_CI
 * seeds; rows counted in *rows. */
static int capacity_seeds(const char *cdir, FILE *out, int *rows, struct ema_error *err)
{
	char path[EMA_PATH_MAX + 64], *text = NULL, *line, *next;
	size_t len;
	int cp = -1, cm = -1, first = 1;
	bool seedcol[64] = { false };
	int rc;

	*rows = 0;
	snprintf(path, sizeof path, "%s/capacity_seeds.csv", cdir);
	rc = ema_read_file(path, "capacity_seeds.csv", 0, &text, &len, err);
	if (rc != EMA_OK)
		return rc;
	fputs("group,policy,y\n", out);
	for (line = text; line && *line; line = next) {
		char *fl[64], grp[256] = "";
		int nf;
		double y;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		nf = split(line, fl, 64);
		if (first) {
			for (int i = 0; i < nf; i++) {
				if (!strcmp(fl[i], "policy"))
					cp = i;
				if (!strncmp(fl[i], "met", 3) && cm < 0)
					cm = i;
				seedcol[i] = !strcmp(fl[i], "seed");
			}
			first = 0;
			if (cp < 0 || cm < 0)
				break;
			continue;
		}
		if (nf <= cm)
			continue;
		/* the group as capacity.csv names it: the keys but the seed */
		for (int i = 0; i < cp; i++)
			if (!seedcol[i])
				snprintf(grp + strlen(grp), sizeof grp - strlen(grp), "%s%s",
					 grp[0] ? ";" : "", fl[i]);
		if (grp[0] == '\0')
			snprintf(grp, sizeof grp, "all");
		for (char *c = grp; *c; c++)
			if (*c == ' ')
				*c = ';';
		y = num(fl[cm]);
		if (isnan(y))
			continue;
		fprintf(out, "%s,%s,%.6g\n", grp, fl[cp], y);
		(*rows)++;
	}
	free(text);
	return EMA_OK;
}

static int capacity_figure(struct fig *g, const char *cdir, const char *label,
			   struct ema_error *err)
{
	char path[EMA_PATH_MAX + 64], *text = NULL, *line, *next, *buf = NULL, *sbuf = NULL;
	char pols[1024] = "", groups[2048] = "", key[256] = "", slo[512] = "", col[64] = "", vars[16384];
	char seeds[256];
	size_t len, blen = 0, slen = 0;
	int cp = -1, cy = -1, cg = -1, clo = -1, chi = -1, ck = -1, cs = -1, cseeds = -1, first = 1, rows = 0;
	int nmin = 0, nmax = 0, srows = 0;
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
	fputs("group,policy,n,y,lo,hi\n", f);
	for (line = text; line && *line; line = next) {
		char *fl[64], grp[256] = "";
		int nf, n;

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
		n = cseeds >= 0 && cseeds < nf ? atoi(fl[cseeds]) : 1;
		{
			double y = num(fl[cy]), lo = clo >= 0 ? num(fl[clo]) : NAN, hi = chi >= 0 ? num(fl[chi]) : NAN;

			if (isnan(y) && cseeds >= 0)
				y = num(fl[cy - 2]); /* the mean, when a 0 left no geometric mean */
			if (isnan(y))
				continue;
			/* below three seeds no interval: the seeds are drawn */
			if (n < FIG_MIN_SEEDS_CI || isnan(lo) || isnan(hi))
				lo = hi = NAN;
			char lob[32], hib[32];

			fprintf(f, "%s,%s,%d,%.6g,%s,%s\n", grp, fl[cp], n, y, gnum(lo, lob), gnum(hi, hib));
			nmin = rows == 0 || n < nmin ? n : nmin;
			nmax = n > nmax ? n : nmax;
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
	if (nmax > 1 && nmin < FIG_MIN_SEEDS_CI) {
		FILE *sf = open_memstream(&sbuf, &slen);

		if (sf == NULL)
			return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
		rc = capacity_seeds(cdir, sf, &srows, err);
		fclose(sf);
		if (rc == EMA_OK && srows > 0) {
			snprintf(path, sizeof path, "%s/capacity.seeds.csv", g->out);
			rc = write_text(path, sbuf, slen, err);
		}
		free(sbuf);
		if (rc != EMA_OK)
			return rc;
	}
	seeds_text(nmin, nmax, "bar", seeds, sizeof seeds);
	gp_text(slo);
	gp_text(groups);
	{
		const char *unit = ema_config_key_unit(key);
		const char *last = strrchr(key, '.') ? strrchr(key, '.') + 1 : key;
		char who[EMA_NAME_MAX + 4] = "";

		/* tenants.N.workload.rate_rps: the tenant's name */
		if (!strncmp(key, "tenants.", 8) && g->s != NULL && g->nt > atoi(key + 8))
			snprintf(who, sizeof who, "%s ", g->tenants[atoi(key + 8)]);
		snprintf(vars, sizeof vars,
			 "# capacity.spec.gp: what capacity.gp draws (written by ema figures)\n"
			 "datafile = \"capacity.csv\"\nseedsfile = \"%s\"\nhasci = %d\n"
			 "policies = \"%s\"\ngroups = \"%s\"\n"
			 "ylab = \"largest %s%s meeting the SLO (%s)\"\n"
			 "figtitle = \"Capacity under the SLO (%s, every request completed)\\n"
			 "scenario %s\\n%s\"\n",
			 srows > 0 ? "capacity.seeds.csv" : "", nmax >= FIG_MIN_SEEDS_CI, pols, groups,
			 who, last,
			 unit && unit[0] ? unit : col, slo, label, seeds);
	}
	rc = spec(g, "capacity", vars, err);
	if (rc == EMA_OK)
		rc = draw(g, "capacity.gp", "capacity", err);
	return rc;
}

/* The scenario as run of a capacity search's folder: capacity.json's
 * scenario and command when it has them, else the name in one of its
 * probes' config.json (the --set are then unknown: *name_only). */
static void capacity_label(const char *cdir, char *out, size_t n, bool *name_only)
{
	static const char *const skip[] = { "policies", NULL };
	char path[EMA_PATH_MAX + 64], *text = NULL;
	size_t len;
	cJSON *j = NULL;
	const cJSON *sc, *cmd;

	snprintf(out, n, "(unknown)");
	*name_only = true;
	snprintf(path, sizeof path, "%s/capacity.json", cdir);
	if (ema_read_file(path, "capacity.json", 0, &text, &len, NULL) == EMA_OK)
		j = cJSON_ParseWithLength(text, len);
	free(text);
	sc = cJSON_GetObjectItemCaseSensitive(j, "scenario");
	cmd = cJSON_GetObjectItemCaseSensitive(j, "command");
	if (cJSON_IsString(sc)) {
		ema_plots_scenario_label(sc->valuestring, cJSON_IsString(cmd) ? cmd->valuestring : NULL,
					 skip, out, n);
		*name_only = !cJSON_IsString(cmd);
	} else {
		/* older folders: a probe's name */
		DIR *d;
		struct dirent *e;

		snprintf(path, sizeof path, "%s/probes", cdir);
		d = opendir(path);
		while (d != NULL && (e = readdir(d)) != NULL) {
			cJSON *c;
			const cJSON *nm;

			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof path, "%s/probes/%s/config.json", cdir, e->d_name);
			if (ema_read_file(path, "config.json", 0, &text, &len, NULL) != EMA_OK)
				continue;
			c = cJSON_ParseWithLength(text, len);
			free(text);
			nm = cJSON_GetObjectItemCaseSensitive(c, "name");
			if (cJSON_IsString(nm)) {
				ema_plots_scenario_label(nm->valuestring, NULL, skip, out, n);
				snprintf(out + strlen(out), n - strlen(out), " (--set not recorded)");
				cJSON_Delete(c);
				break;
			}
			cJSON_Delete(c);
		}
		if (d != NULL)
			closedir(d);
	}
	cJSON_Delete(j);
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

/* src/'s signal cleanup, for the figures' temporary files and gnuplot */
static const struct ema_plots_cleanup figures_cleanup = {
	ema_cleanup_add, ema_cleanup_drop, ema_cleanup_add_child, ema_cleanup_drop_child,
};

/* The load: a numeric key besides the seed, a rate first; -1 when none. */
static int load_key(const struct ema_sweep *s)
{
	for (int pass = 0; pass < 2; pass++)
		for (int k = 0; k < s->n_keys; k++) {
			bool numeric = k != s->seed_key && s->keys[k].n > 1;

			for (int v = 0; v < s->keys[k].n && numeric; v++) {
				char *end;

				strtod(s->keys[k].values[v], &end);
				numeric = end != s->keys[k].values[v] && *end == '\0';
			}
			if (numeric && (pass == 1 || strstr(s->keys[k].name, "rate") != NULL))
				return k;
		}
	return -1;
}

int ema_figures_draw(const char *sweep_dir, const char *cap_dir, const char *out, bool quiet,
		     int *drawn, struct ema_error *err)
{
	static const char *const skip[] = { "policies", NULL };
	struct fig *g = calloc(1, sizeof *g);
	struct ema_sweep *s = calloc(1, sizeof *s);
	char cap_label[1024] = "";
	bool cap_name_only = true, made = false;
	int rc = EMA_OK, n_sets = 1;

	if (g == NULL || s == NULL) {
		free(g);
		free(s);
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	}
	ema_plots_set_cleanup(&figures_cleanup);
	g->out = out;
	g->quiet = quiet;
	g->lk = -1;
	if (mkdir(out, 0777) == 0)
		made = true;
	else if (errno != EEXIST)
		rc = ema_error_set(err, EMA_ERR_INPUT, "%s: cannot create: %s", out, strerror(errno));
	if (rc == EMA_OK && sweep_dir != NULL) {
		rc = ema_sweep_read_manifest(s, sweep_dir, err);
		g->s = s;
	}
	if (rc == EMA_OK && sweep_dir != NULL)
		ema_plots_scenario_label(s->scenario, s->command, skip, g->label, sizeof g->label);
	if (rc == EMA_OK && cap_dir != NULL)
		capacity_label(cap_dir, cap_label, sizeof cap_label, &cap_name_only);
	/* one set of figures is read as one experiment: say when it is not (by
	 * name alone when the capacity folder does not record its --set) */
	if (rc == EMA_OK && sweep_dir != NULL && cap_dir != NULL &&
	    (cap_name_only ? strncmp(g->label, cap_label, strcspn(g->label, " ")) != 0 ||
			     strcspn(g->label, " ") != strcspn(cap_label, " ")
			   : strcmp(g->label, cap_label) != 0))
		fprintf(stderr, "ema: figures: warning: %s and %s ran different scenarios (%s; %s): "
			"their figures are drawn together but are not of one experiment\n",
			sweep_dir, cap_dir, g->label, cap_label);
	if (rc == EMA_OK && sweep_dir != NULL) {
		g->lk = load_key(s);
		if (g->lk < 0)
			fprintf(stderr, "ema: figures: %s: no load figure: the sweep has no numeric key "
				"besides the seed (it varies %s%s), and the figures are drawn against "
				"one; add one, as --vary tenants.0.workload.rate_rps=4,8,12\n",
				sweep_dir, s->keys[0].name, s->n_keys > 1 ? ", ..." : "");
		/* a swept policy knob: a line per value in the same plots */
		for (int k = 0; k < s->n_keys; k++)
			g->variant[k] = k != g->lk && k != s->seed_key && s->keys[k].n > 1 &&
					strncmp(s->keys[k].name, "policy.", 7) == 0;
	}
	if (rc == EMA_OK && g->lk >= 0) {
		for (long pt = 0; pt < s->n_points && rc == EMA_OK; pt++) {
			bool done;

			rc = ema_sweep_point_done(s, pt, &done, err);
			if (rc == EMA_OK && done)
				rc = read_point(g, pt, err);
		}
		if (rc == EMA_OK)
			rc = build_series(g, err);
		for (int k = 0; k < s->n_keys; k++)
			if (set_key(g, k))
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
		rc = capacity_figure(g, cap_dir, cap_label, err);
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
	/* nothing to draw: no empty folder left behind (rmdir fails on any other) */
	if (made && g->render[0] == '\0')
		rmdir(out);
	ema_plots_set_cleanup(NULL);
	ema_sweep_free(s);
	free(s);
	free(g->rows);
	free(g);
	return rc;
}
