/* experiment.c: runs a scenario under each policy on the same requests,
 * turns engine state into per-tenant figures, and writes the run folder
 * all at once (temporary folder renamed when complete). */
#include "experiment.h"
#include "wallclock.h"
#include "csvout.h"
#include "sortd.h"
#include "backends.h"

#include <errno.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include "ema_build.h"
#include "ema_commit.h"
#include "json_text.h"
#include "outdir.h"
#include "plots.h"
#include "policy.h"

#define GIB (1073741824.0)

/* Progress on stderr, one line a second of wall time; the engine calls
 * this after every iteration only when it was asked to (not --quiet). */
static void print_progress(void *arg, const struct ema_progress *p)
{
	struct progress *pr = arg;
	double w = ema_wall_now();

	if (w < pr->wall_start + 1.0 + (double)pr->lines)
		return;
	pr->lines++;
	fprintf(stderr, "ema: %s: %lld/%lld requests done, t=%.1f s simulated/real, %.1f s wall\n",
		pr->label, (long long)p->done_requests, (long long)p->total_requests,
		(double)p->now_ns * 1e-9, w - pr->wall_start);
}

double ema_quantile(double *v, size_t n, double q)
{
	size_t i = 1;

	if (n == 0)
		return NAN;
	/* callers ask for several quantiles of one array: sort it once */
	while (i < n && v[i - 1] <= v[i])
		i++;
	if (i < n && ema_sort_doubles(v, n) != EMA_OK)
		gsl_sort(v, 1, n);
	return gsl_stats_quantile_from_sorted_data(v, 1, n, q);
}

static inline void swap_d(double *a, double *b)
{
	double t = *a;

	*a = *b;
	*b = t;
}

/* Reorders v[lo, hi) so that v[k] holds what a sort would put there, no
 * larger value before it and no smaller one after (quickselect, Hoare's
 * partition around a median of three; finite values). */
static void select_nth(double *v, size_t lo, size_t hi, size_t k)
{
	while (hi - lo > 16) {
		size_t mid = lo + (hi - lo) / 2, i = lo - 1, j = hi;
		double pivot;

		/* v[lo] <= v[mid] <= v[hi - 1]: the scans below stop in range */
		if (v[mid] < v[lo])
			swap_d(&v[mid], &v[lo]);
		if (v[hi - 1] < v[lo])
			swap_d(&v[hi - 1], &v[lo]);
		if (v[hi - 1] < v[mid])
			swap_d(&v[hi - 1], &v[mid]);
		pivot = v[mid];
		for (;;) {
			do
				i++;
			while (v[i] < pivot);
			do
				j--;
			while (v[j] > pivot);
			if (i >= j)
				break;
			swap_d(&v[i], &v[j]);
		}
		/* v[lo, j] <= pivot <= v[j + 1, hi) */
		if (k <= j)
			hi = j + 1;
		else
			lo = j + 1;
	}
	for (size_t i = lo + 1; i < hi; i++)
		for (size_t j = i; j > lo && v[j] < v[j - 1]; j--)
			swap_d(&v[j], &v[j - 1]);
}

void ema_quantiles(double *v, size_t n, const double *q, int k, double *out)
{
	size_t lo = 0, prev = SIZE_MAX;

	for (int i = 0; i < k; i++) {
		size_t lhs;

		if (n == 0) {
			out[i] = NAN;
			continue;
		}
		/* the order statistics GSL's quantile reads, at its index */
		lhs = (size_t)(int)(q[i] * (double)(n - 1));
		if (lhs != prev) {
			if (lhs < lo || lhs >= n) {
				/* not ascending: sort it all (the slow way, right) */
				out[i] = ema_quantile(v, n, q[i]);
				lo = 0;
				prev = SIZE_MAX;
				continue;
			}
			select_nth(v, lo, n, lhs);
			if (lhs + 1 < n) {
				/* the next order statistic: the least of the rest */
				size_t m = lhs + 1;

				for (size_t j = lhs + 2; j < n; j++)
					if (v[j] < v[m])
						m = j;
				swap_d(&v[lhs + 1], &v[m]);
			}
			prev = lhs;
			lo = lhs + 1;
		}
		out[i] = gsl_stats_quantile_from_sorted_data(v, 1, n, q[i]);
	}
}

/* ---- request records, from memory, the engine or a temporary file ---- */

/* A walk over one tenant's records in id order, as many times as asked
 * (rec_rewind): an array, the engine's (records kept), or the file the
 * engine streamed them to (ema_policy_run.recs). bad: a read failed. */
struct rec_src {
	const struct ema_request_record *arr;
	const struct ema_engine *e;
	FILE *f;
	int ti;
	size_t k, n;
	bool bad;
};

static void rec_rewind(struct rec_src *s)
{
	s->k = 0;
	if (s->f != NULL && fseek(s->f, 0, SEEK_SET) != 0)
		s->bad = true;
}

static bool rec_next(struct rec_src *s, struct ema_request_record *r)
{
	if (s->k >= s->n || s->bad)
		return false;
	if (s->arr != NULL) {
		*r = s->arr[s->k];
	} else if (s->f != NULL) {
		if (fread(r, sizeof *r, 1, s->f) != 1) {
			s->bad = true;
			return false;
		}
	} else {
		ema_engine_request(s->e, s->ti, (int32_t)s->k, r);
	}
	s->k++;
	return true;
}

static void rec_src_run(struct rec_src *s, const struct ema_policy_run *run, int ti)
{
	memset(s, 0, sizeof *s);
	s->e = run->engine;
	s->f = run->recs[ti];
	s->ti = ti;
	s->n = (size_t)ema_engine_n_requests(run->engine, ti);
	rec_rewind(s);
}

#define SPILL_BUF (1 << 16)

/* An unlinked file in $TMPDIR (else /tmp): gone with the process, however
 * it ends, so that a failed run leaves nothing behind. */
static FILE *spill_open(char **buf, struct ema_error *err)
{
	const char *dir = getenv("TMPDIR");
	char path[EMA_PATH_MAX + 32];
	int fd;
	FILE *f;

	if (dir == NULL || dir[0] == '\0')
		dir = "/tmp";
	if (snprintf(path, sizeof path, "%s/ema-records-XXXXXX", dir) >= (int)sizeof path) {
		ema_error_set(err, EMA_ERR_IO, "requests: temporary folder %s: path too long", dir);
		return NULL;
	}
	fd = mkstemp(path);
	if (fd < 0) {
		ema_error_set(err, EMA_ERR_IO, "requests: cannot make a temporary file in %s: %s",
			      dir, strerror(errno));
		return NULL;
	}
	unlink(path);
	f = fdopen(fd, "w+b");
	if (f == NULL) {
		close(fd);
		ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
		return NULL;
	}
	/* (64 KiB at a time: the records are written once and read back a
	 * few times; in system calls of 4 KiB the system time doubled.
	 * glibc takes a size only with a buffer of the caller's) */
	*buf = malloc(SPILL_BUF);
	if (*buf != NULL)
		setvbuf(f, *buf, _IOFBF, SPILL_BUF);
	return f;
}

/* The engine's sink (ema_record_fn): a final record to its tenant's file. */
static int record_sink(void *arg, int ti, const struct ema_request_record *r,
		       struct ema_error *err)
{
	struct ema_policy_run *run = arg;

	if (fwrite(r, sizeof *r, 1, run->recs[ti]) != 1)
		return ema_error_set(err, EMA_ERR_IO, "requests: cannot write a temporary file: %s",
				     strerror(errno));
	return EMA_OK;
}

static int metrics_from(struct rec_src *src, size_t n, const struct ema_metrics_cfg *mc,
			const struct ema_slo_cfg *slo, struct ema_metrics *m);

int ema_metrics_compute(const struct ema_request_record *r, size_t n,
			const struct ema_metrics_cfg *mc, const struct ema_slo_cfg *slo,
			struct ema_metrics *m)
{
	static const struct ema_request_record none;
	struct rec_src src = { .arr = r != NULL ? r : &none, .n = r != NULL ? n : 0 };

	return metrics_from(&src, n, mc, slo, m);
}

/* The engine's timeline sink (ema_timeline_fn): samples to the run's
 * file, the lent peaks (lent_peaks) taken on the way. */
static int timeline_sink(void *arg, const struct ema_timeline_sample *s, int32_t n,
			 struct ema_error *err)
{
	struct ema_policy_run *run = arg;

	for (int32_t i = 0; i < n; i++)
		if (s[i].gpu >= 0 && s[i].gpu < EMA_MAX_GPUS && s[i].lent > run->lent_peak[s[i].gpu])
			run->lent_peak[s[i].gpu] = s[i].lent;
	if (n > 0 && fwrite(s, sizeof *s, (size_t)n, run->timeline) != (size_t)n)
		return ema_error_set(err, EMA_ERR_IO, "timeline: cannot write a temporary file: %s",
				     strerror(errno));
	return EMA_OK;
}

/* ema_metrics_compute over a walk of n records (two passes: the window's
 * end is the last arrival). */
static int metrics_from(struct rec_src *src, size_t n, const struct ema_metrics_cfg *mc,
			const struct ema_slo_cfg *slo, struct ema_metrics *m)
{
	struct ema_request_record rec;
	double *user = malloc((n + 1) * sizeof *user);
	bool slo_set = slo->ttft_ms > 0 || slo->tpot_ms > 0;
	int64_t last_arrival = -1, start_ns, end_ns;
	double steady_tokens = 0, good_in_window = 0, met = 0, span;
	size_t nu = 0;

	m->window_start_s = m->window_end_s = m->steady_tok_s = NAN;
	m->user_tok_s_mean = m->user_tok_s_p50 = NAN;
	m->slo_attainment = m->goodput_req_s = NAN;
	if (user == NULL)
		return EMA_ERR_NOMEM;
	rec_rewind(src);
	while (rec_next(src, &rec))
		if (rec.arrival_ns > last_arrival)
			last_arrival = rec.arrival_ns;
	/* ns, as the records are: the bounds in s are rounded once here */
	end_ns = mc->window_end_s > 0 ? (int64_t)llround(mc->window_end_s * 1e9) : last_arrival;
	start_ns = mc->warmup_s >= 0 ? (int64_t)llround(mc->warmup_s * 1e9)
				     : (int64_t)llround(0.1 * (double)end_ns);
	rec_rewind(src);
	while (rec_next(src, &rec)) {
		const struct ema_request_record *q = &rec;
		bool ok = true, in_window;

		if (q->finish_ns < 0)
			continue;
		if (q->finish_ns > q->arrival_ns)
			user[nu++] = (double)q->output_tokens /
				     ((double)(q->finish_ns - q->arrival_ns) * 1e-9);
		if (slo->ttft_ms > 0 &&
		    (double)(q->first_token_ns - q->arrival_ns) * 1e-6 > slo->ttft_ms)
			ok = false;
		/* one output token has no TPOT: nothing to miss */
		if (slo->tpot_ms > 0 && q->output_tokens > 1 &&
		    (double)(q->finish_ns - q->first_token_ns) * 1e-6 /
		    (double)(q->output_tokens - 1) > slo->tpot_ms)
			ok = false;
		met += ok;
		in_window = q->finish_ns >= start_ns && q->finish_ns <= end_ns;
		if (in_window) {
			steady_tokens += q->output_tokens;
			good_in_window += ok;
		}
	}
	if (end_ns > start_ns && last_arrival >= 0) {
		span = (double)(end_ns - start_ns) * 1e-9;
		m->window_start_s = (double)start_ns * 1e-9;
		m->window_end_s = (double)end_ns * 1e-9;
		m->steady_tok_s = steady_tokens / span;
		if (slo_set)
			m->goodput_req_s = good_in_window / span;
	}
	if (nu > 0) {
		double sum = 0;

		for (size_t i = 0; i < nu; i++)
			sum += user[i];
		m->user_tok_s_mean = sum / (double)nu;
		static const double half = 0.5;

		ema_quantiles(user, nu, &half, 1, &m->user_tok_s_p50);
	}
	{
		size_t done = 0;

		rec_rewind(src);
		while (rec_next(src, &rec))
			done += rec.finish_ns >= 0;
		if (slo_set && done > 0)
			m->slo_attainment = met / (double)done;
	}
	free(user);
	return src->bad ? EMA_ERR_IO : EMA_OK;
}

static int tenant_result(struct ema_policy_run *run, int ti, const struct ema_config *cfg)
{
	const struct ema_engine *e = run->engine;
	const struct ema_tenant_stats *st = ema_engine_tenant_stats(e, ti);
	struct ema_tenant_result *res = &run->results[ti];
	int gpu = ema_engine_tenant_gpu(e, ti);
	size_t n = (size_t)ema_engine_n_requests(e, ti);
	int32_t n_reclaims;
	const struct ema_reclaim_record *reclaims = ema_engine_reclaims(e, &n_reclaims);
	double *ttft = malloc((n + 1) * sizeof *ttft);
	double *tpot = ttft, *e2e = ttft; /* (one array, filled in turn) */
	double *rec = malloc(((size_t)n_reclaims + 1) * sizeof *rec);
	struct rec_src src;
	struct ema_request_record rr;
	size_t nt = 0, np = 0, ne = 0, nr = 0;
	int64_t tokens = 0, generated = 0, first_arrival = -1, last_finish = -1;
	double page_gib = (double)ema_engine_page_bytes(e) / GIB;

	memset(res, 0, sizeof *res);
	/* Names are copied whole between fields of one size: snprintf's
	 * "%s" from another member of the same experiment made GCC 12
	 * (-Wrestrict, at -O1 with sanitizers) fear an overlap it could not
	 * rule out, and a whole-field copy needs no string scan anyway. */
	_Static_assert(sizeof res->policy == sizeof run->policy, "policy name sizes");
	_Static_assert(sizeof res->tenant == sizeof cfg->tenants[ti].name, "tenant name sizes");
	memcpy(res->policy, run->policy, sizeof res->policy);
	memcpy(res->tenant, cfg->tenants[ti].name, sizeof res->tenant);
	res->gpu = gpu;
	res->requests = (int64_t)n;
	res->dropped = st->dropped;
	res->dropped_max_pages = st->dropped_max_pages;
	res->dropped_recomputed = st->dropped_recomputed;
	res->dropped_recomputed_max_pages = st->dropped_recomputed_max_pages;
	res->reclaim_backoffs = st->reclaim_backoffs;
	res->reclaim_backoff_after = ema_engine_reclaim_backoff(e);
	res->dropped_backoff = st->dropped_backoff;
	res->dropped_backoff_max_pages = st->dropped_backoff_max_pages;
	res->dropped_swapped = st->dropped_swapped;
	res->dropped_swapped_max_pages = st->dropped_swapped_max_pages;
	res->dropped_yielded = st->dropped_yielded;
	res->dropped_yielded_max_pages = st->dropped_yielded_max_pages;
	res->kv_capacity_pages = ema_engine_kv_capacity(e, ti);
	res->max_request_pages = ema_engine_max_request_pages(e, ti);
	res->max_admit_pages = ema_engine_max_admit_pages(e, ti);
	res->vs_static_steady = res->vs_ideal_steady = NAN;
	res->vs_pooled_throughput = res->vs_pooled_steady = res->vs_pooled_generated = NAN;
	res->vs_ideal_kv_steady = NAN;
	res->vs_static_ttft_paired = res->vs_static_tpot_paired = NAN;
	res->generated_tok_s = res->vs_static_generated = NAN;
	if (!ttft || !rec) {
		free(ttft); free(rec);
		ema_metrics_compute(NULL, 0, &cfg->metrics, &cfg->slo, &res->metrics);
		return EMA_ERR_NOMEM;
	}
	rec_src_run(&src, run, ti);
	while (rec_next(&src, &rr)) {
		const struct ema_request_record *r = &rr;

		if (first_arrival < 0 || r->arrival_ns < first_arrival)
			first_arrival = r->arrival_ns;
		if (!r->dropped)
			generated += r->generated_tokens < r->output_tokens ? r->generated_tokens
									   : r->output_tokens;
		if (r->finish_ns < 0)
			continue;
		res->completed++;
		tokens += r->output_tokens;
		if (r->finish_ns > last_finish)
			last_finish = r->finish_ns;
		ttft[nt++] = (double)(r->first_token_ns - r->arrival_ns) * 1e-6;
	}
	if (last_finish > first_arrival && first_arrival >= 0) {
		double span = (double)(last_finish - first_arrival) * 1e-9;

		res->throughput_tok_s = (double)tokens / span;
		res->req_s = (double)res->completed / span;
	}
	{
		int64_t end = cfg->horizon_s > 0 ? (int64_t)llround(cfg->horizon_s * 1e9) : last_finish;

		if (end > first_arrival && first_arrival >= 0)
			res->generated_tok_s = (double)generated / ((double)(end - first_arrival) * 1e-9);
	}
	{
		/* three order statistics each, not three sorts */
		static const double q3[3] = { 0.50, 0.90, 0.99 }, q2[2] = { 0.50, 0.99 };

		/* one array at a time, the records walked again for each:
		 * 8 bytes a request of one tenant held, not 24 */
		ema_quantiles(ttft, nt, q3, 3, res->ttft_ms);
		rec_rewind(&src);
		while (rec_next(&src, &rr))
			if (rr.finish_ns >= 0 && rr.output_tokens > 1)
				tpot[np++] = (double)(rr.finish_ns - rr.first_token_ns) * 1e-6 /
					     (double)(rr.output_tokens - 1);
		ema_quantiles(tpot, np, q3, 3, res->tpot_ms);
		rec_rewind(&src);
		while (rec_next(&src, &rr))
			if (rr.finish_ns >= 0)
				e2e[ne++] = (double)(rr.finish_ns - rr.arrival_ns) * 1e-6;
		ema_quantiles(e2e, ne, q2, 2, res->e2e_ms);
	}
	res->preemptions = st->preemptions;
	res->swaps = st->swaps;
	res->recomputed_tokens = st->recomputed_tokens;
	res->kv_peak_gib = st->kv_peak_pages * page_gib;
	res->borrowed_peak_gib = st->borrowed_peak_pages * page_gib;
	res->remote_share = st->kv_page_ns > 0 ? st->remote_page_ns / st->kv_page_ns : 0.0;
	res->stall_ms = (double)st->stall_ns * 1e-6;
	res->reclaim_wait_ms = (double)st->reclaim_wait_ns * 1e-6;
	res->remote_gib = (double)st->remote_bytes / GIB;
	res->lent_peak_gib = run->lent_peak[gpu] * page_gib;
	for (int32_t i = 0; i < n_reclaims; i++)
		if (reclaims[i].lender_gpu == gpu)
			rec[nr++] = (double)reclaims[i].latency_ns * 1e-6;
	res->reclaims = (int64_t)nr;
	res->reclaim_ms[0] = ema_quantile(rec, nr, 0.50);
	res->reclaim_ms[1] = ema_quantile(rec, nr, 0.99);
	res->reclaim_ms[2] = nr ? rec[nr - 1] : NAN;
	res->vs_static_throughput = res->vs_static_ttft_p50 = res->vs_static_tpot_p50 = NAN;
	res->vs_static_ttft_p99 = res->vs_static_tpot_p99 = res->vs_ideal_throughput = NAN;
	res->guarantee = "-";
	free(ttft); free(rec);
	if (src.bad)
		return EMA_ERR_IO;
	return metrics_from(&src, n, &cfg->metrics, &cfg->slo, &res->metrics);
}

/* tenant_result for every other tenant from `first`: what a helper thread
 * computes beside the calling one (each tenant's result is its own, from
 * the engine's records, which nothing changes after the run). */
struct results_job {
	struct ema_policy_run *run;
	const struct ema_config *cfg;
	int first;
	int rc;
};

static void *results_half(void *arg)
{
	struct results_job *j = arg;

	for (int ti = j->first; ti < j->cfg->n_tenants; ti += 2) {
		int rc = tenant_result(j->run, ti, j->cfg);

		if (j->rc == EMA_OK)
			j->rc = rc;
	}
	return NULL;
}

/* Every tenant's result, the odd ones in a thread of their own where
 * there are several (the walks over a replay's records are memory-bound:
 * two cores halve them); the same results either way. */
static int tenant_results(struct ema_policy_run *run, const struct ema_config *cfg)
{
	struct results_job odd = { run, cfg, 1, EMA_OK }, even = { run, cfg, 0, EMA_OK };
	pthread_t th;
	bool threaded = false;

	if (cfg->n_tenants >= 2) {
		sigset_t all, old;

		sigemptyset(&all);
		sigaddset(&all, SIGINT);
		sigaddset(&all, SIGTERM);
		sigaddset(&all, SIGHUP);
		pthread_sigmask(SIG_BLOCK, &all, &old);
		threaded = pthread_create(&th, NULL, results_half, &odd) == 0;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	if (threaded) {
		results_half(&even);
		pthread_join(th, NULL);
	} else {
		odd.first = 0;
		results_half(&odd);
	}
	return even.rc != EMA_OK ? even.rc : odd.rc;
}

/* Comparisons against static and ideal on the same tenant. A lender
 * (a tenant whose GPU lent pages) violates the guarantee when it does
 * worse than under static by more than 5% in throughput or p50 latency,
 * or 15% in p99 latency. */
/* The paired medians of run a's tenant ti against static's run s
 * (ema_tenant_result's vs_static_*_paired). */
static int paired_medians(const struct ema_policy_run *pa, const struct ema_policy_run *ps,
			  int ti, double *ttft, double *tpot)
{
	static const double half = 0.5;
	const struct ema_engine *a = pa->engine, *s = ps->engine;
	int32_t n = ema_engine_n_requests(a, ti);
	struct rec_src sa, ss;
	double *vt, *vp;
	size_t nt = 0, np = 0;

	*ttft = *tpot = NAN;
	if (n <= 0 || ema_engine_n_requests(s, ti) != n)
		return EMA_OK;
	vt = malloc((size_t)n * sizeof *vt);
	vp = malloc((size_t)n * sizeof *vp);
	if (vt == NULL || vp == NULL) {
		free(vt);
		free(vp);
		return EMA_ERR_NOMEM;
	}
	rec_src_run(&sa, pa, ti);
	rec_src_run(&ss, ps, ti);
	for (int32_t i = 0; i < n; i++) {
		struct ema_request_record ra, rs;

		if (!rec_next(&sa, &ra) || !rec_next(&ss, &rs))
			break;
		if (ra.finish_ns < 0 || rs.finish_ns < 0 || rs.first_token_ns <= rs.arrival_ns)
			continue;
		vt[nt++] = (double)(ra.first_token_ns - ra.arrival_ns) /
			   (double)(rs.first_token_ns - rs.arrival_ns);
		if (ra.output_tokens > 1 && rs.finish_ns > rs.first_token_ns)
			vp[np++] = (double)(ra.finish_ns - ra.first_token_ns) /
				   (double)(rs.finish_ns - rs.first_token_ns);
	}
	ema_quantiles(vt, nt, &half, 1, ttft);
	ema_quantiles(vp, np, &half, 1, tpot);
	free(vt);
	free(vp);
	return sa.bad || ss.bad ? EMA_ERR_IO : EMA_OK;
}

static int compare(struct ema_experiment *x)
{
	int rc = EMA_OK;

	const struct ema_policy_run *st = NULL, *id = NULL, *po = NULL, *ik = NULL;

	for (int i = 0; i < x->n_runs; i++) {
		if (strcmp(x->runs[i].policy, "static") == 0)
			st = &x->runs[i];
		if (strcmp(x->runs[i].policy, "ideal") == 0)
			id = &x->runs[i];
		if (strcmp(x->runs[i].policy, "pooled") == 0)
			po = &x->runs[i];
		if (strcmp(x->runs[i].policy, "ideal_kv") == 0)
			ik = &x->runs[i];
	}
	for (int i = 0; i < x->n_runs; i++)
		for (int ti = 0; ti < x->cfg.n_tenants; ti++) {
			struct ema_tenant_result *r = &x->runs[i].results[ti];

			if (st != NULL) {
				const struct ema_tenant_result *s = &st->results[ti];

				r->vs_static_throughput = r->throughput_tok_s / s->throughput_tok_s;
				r->vs_static_ttft_p50 = r->ttft_ms[0] / s->ttft_ms[0];
				r->vs_static_tpot_p50 = r->tpot_ms[0] / s->tpot_ms[0];
				r->vs_static_ttft_p99 = r->ttft_ms[2] / s->ttft_ms[2];
				r->vs_static_tpot_p99 = r->tpot_ms[2] / s->tpot_ms[2];
				r->vs_static_steady = r->metrics.steady_tok_s /
						      s->metrics.steady_tok_s;
				r->vs_static_generated = r->generated_tok_s / s->generated_tok_s;
				if (&x->runs[i] == st) {
					/* (each request against itself; not walked: a
					 * static-only run pays nothing for the columns) */
					r->vs_static_ttft_paired = isnan(r->ttft_ms[0]) ? NAN : 1.0;
					r->vs_static_tpot_paired = isnan(r->tpot_ms[0]) ? NAN : 1.0;
				} else {
					int prc = paired_medians(&x->runs[i], st, ti,
								 &r->vs_static_ttft_paired,
								 &r->vs_static_tpot_paired);

					if (rc == EMA_OK)
						rc = prc;
				}
				/* Judged only for pure lenders: a tenant that also
				 * borrowed is measured against static with its own
				 * borrowing mixed in ("both"). */
				if (r->lent_peak_gib > 0 && r->borrowed_peak_gib > 0) {
					r->guarantee = "both";
				} else if (r->lent_peak_gib > 0) {
					/* (throughput as the tokens generated: the same
					 * without a horizon, and with one not moved by
					 * which long request finished before it; the
					 * p50s paired, each request against itself, where
					 * the runs share their requests: an unpaired p50
					 * of a few dozen requests moves with which one
					 * lands in the middle) */
					double ttft50 = isnan(r->vs_static_ttft_paired) ?
							r->vs_static_ttft_p50 : r->vs_static_ttft_paired;
					double tpot50 = isnan(r->vs_static_tpot_paired) ?
							r->vs_static_tpot_p50 : r->vs_static_tpot_paired;
					bool bad = r->vs_static_generated < 0.95 ||
						   ttft50 > 1.05 || tpot50 > 1.05 ||
						   r->vs_static_ttft_p99 > 1.15 ||
						   r->vs_static_tpot_p99 > 1.15;
					r->guarantee = bad ? "violated" : "ok";
				}
			}
			if (id != NULL) {
				r->vs_ideal_throughput = r->throughput_tok_s /
							 id->results[ti].throughput_tok_s;
				r->vs_ideal_steady = r->metrics.steady_tok_s /
						     id->results[ti].metrics.steady_tok_s;
			}
			if (po != NULL) {
				const struct ema_tenant_result *b = &po->results[ti];

				r->vs_pooled_throughput = r->throughput_tok_s / b->throughput_tok_s;
				r->vs_pooled_steady = r->metrics.steady_tok_s / b->metrics.steady_tok_s;
				r->vs_pooled_generated = r->generated_tok_s / b->generated_tok_s;
			}
			if (ik != NULL)
				r->vs_ideal_kv_steady = r->metrics.steady_tok_s /
							ik->results[ti].metrics.steady_tok_s;
		}
	return rc;
}

/* Lent pages peak per GPU, from the timeline samples. */
static void lent_peaks(struct ema_policy_run *run)
{
	int32_t n;
	const struct ema_timeline_sample *tl = ema_engine_timeline(run->engine, &n);

	if (run->timeline != NULL)
		return; /* (taken by timeline_sink as the samples went) */
	memset(run->lent_peak, 0, sizeof run->lent_peak);
	for (int32_t i = 0; i < n; i++)
		if (tl[i].lent > run->lent_peak[tl[i].gpu])
			run->lent_peak[tl[i].gpu] = tl[i].lent;
}

static int build_workload(struct ema_experiment *x, int ti, struct ema_trace_cache *cache,
			  struct ema_error *err)
{
	const struct ema_config *cfg = &x->cfg;
	const struct ema_workload_cfg *wc = &cfg->tenants[ti].workload;
	struct ema_workload_cut cut;
	uint64_t seed = wc->seed ? wc->seed : ema_seed_derive(cfg->seed, ti, "workload");
	int rc;

	rc = ema_workload_build_shared(wc, seed, &x->workloads[ti], &cut, cache, err);
	if (rc == EMA_ERR_INPUT && strncmp(err->msg, "workload: ", 10) == 0) {
		/* a generator's check: say which tenant of which file */
		char msg[EMA_ERROR_MSG_MAX];

		snprintf(msg, sizeof msg, "%s", err->msg + 10);
		if (cfg->workload_line[ti] > 0)
			return ema_error_set(err, EMA_ERR_INPUT,
					     "%s:%ld: tenants.%d.workload: %s",
					     cfg->source_file, cfg->workload_line[ti],
					     ti, msg);
		return ema_error_set(err, EMA_ERR_INPUT, "%s: tenants.%d.workload: %s",
				     cfg->source_file, ti, msg);
	}
	if (rc != EMA_OK)
		return rc;
	{
		/* not progress: shown with --quiet too */
		char note[EMA_ERROR_MSG_MAX + EMA_PATH_MAX];

		if (!x->silent && ema_workload_cut_note(&x->workloads[ti], &cut, wc, note, sizeof note))
			fprintf(stderr, "ema: warning: tenants.%d.workload: %s\n", ti, note);
	}
	return EMA_OK;
}

/* Every tenant's requests. Tenants replaying the same trace file share
 * one read of it (the bench's 8 tenants parsed the one file 8 times). */
static int build_workloads(struct ema_experiment *x, struct ema_error *err)
{
	const struct ema_config *cfg = &x->cfg;
	struct ema_trace_cache *cache = ema_trace_cache_new();
	int rc = EMA_OK;

	if (cache == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	for (int ti = 0; ti < cfg->n_tenants && rc == EMA_OK; ti++) {
		struct ema_workload *w = &x->workloads[ti];

		rc = build_workload(x, ti, cache, err);
		/* the same requests as an earlier tenant's (a trace replayed
		 * alike): held once, the memory of a long replay's arrivals
		 * (16 bytes a request) not multiplied by its tenants */
		for (int j = 0; j < ti && rc == EMA_OK; j++) {
			const struct ema_workload *o = &x->workloads[j];

			if (x->workload_of[j] == 0 && o->n == w->n && w->n > 0 &&
			    memcmp(o->reqs, w->reqs, w->n * sizeof *w->reqs) == 0) {
				ema_workload_free(w);
				*w = *o;
				x->workload_of[ti] = j + 1;
				break;
			}
		}
	}
	ema_trace_cache_free(cache);
	return rc;
}

/* The backend of x: its own, else the default (the simulator). */
static const struct ema_platform_backend *experiment_backend(const struct ema_experiment *x)
{
	return x->backend != NULL ? x->backend : ema_backend_default();
}

/* What a policy's run leaves for its backend to report. */
static void run_report(const struct ema_experiment *x, const struct ema_policy_run *run,
		       struct ema_platform_report *r)
{
	memset(r, 0, sizeof *r);
	r->policy = run->policy;
	r->verify = x->verify;
	r->leaps = run->leaps;
	r->leapt_steps = run->leapt_steps;
	r->links = &run->links;
	r->pages_checked = run->pages_checked;
	r->pages_corrupted = run->pages_corrupted;
}

int ema_experiment_run(struct ema_experiment *x, struct ema_error *err)
{
	const struct ema_config *cfg = &x->cfg;
	const struct ema_platform_backend *be = experiment_backend(x);
	double t0 = ema_wall_now();
	int rc;

	for (int i = 0; i < cfg->n_policies; i++)
		if (ema_policy_find(cfg->policies[i]) == NULL)
			return ema_error_set(err, EMA_ERR_INPUT,
					     "%s: unknown policy \"%s\" (see `ema list policies`)",
					     cfg->source_file, cfg->policies[i]);
	/* every policy's pools, before the first one runs */
	for (int i = 0; i < cfg->n_policies; i++) {
		rc = ema_engine_check_limits(cfg, ema_policy_find(cfg->policies[i]), err);
		if (rc != EMA_OK)
			return rc;
	}
	rc = build_workloads(x, err);
	if (rc != EMA_OK)
		return rc;
	for (int i = 0; i < cfg->n_policies; i++) {
		struct ema_policy_run *run = &x->runs[i];
		struct ema_platform *p = NULL;
		double w0 = ema_wall_now();

		memset(run, 0, sizeof *run);
		/* a whole-field copy, as in tenant_result() */
		_Static_assert(sizeof run->policy == sizeof cfg->policies[i], "policy name sizes");
		memcpy(run->policy, cfg->policies[i], sizeof run->policy);
		x->n_runs = i + 1;
		{
			/* one computation of the pools for the platform and the
			 * engine */
			struct ema_platform_opts opts = { .verify = x->verify };

			rc = ema_engine_platform_params(&run->params, cfg,
							ema_policy_find(cfg->policies[i]));
			if (rc != EMA_OK)
				return ema_error_set(err, rc, "%s: page_mib %g gives no page",
						     cfg->source_file, cfg->page_mib);
			rc = be->create(&p, &run->params, &opts, err);
		}
		if (rc != EMA_OK)
			return rc;
		rc = ema_engine_new(&run->engine, cfg, ema_policy_find(cfg->policies[i]), p,
				    x->workloads, err);
		if (rc != EMA_OK) {
			p->ops->destroy(p);
			return rc;
		}
		/* (EMA_PAGE_LISTS=1: page lists on a backend that does without
		 * them, the simulator: the same outputs, the bookkeeping of the
		 * hardware backend's runs checked without GPUs) */
		ema_engine_set_page_lists(run->engine, be->page_lists ||
						       (getenv("EMA_PAGE_LISTS") != NULL &&
							strcmp(getenv("EMA_PAGE_LISTS"), "1") == 0));
		/* EMA_LEAP=0 steps one iteration at a time (same outputs, slower):
		 * the check that leaping changes nothing, from the command line */
		if (getenv("EMA_LEAP") != NULL)
			ema_engine_set_leap(run->engine, strcmp(getenv("EMA_LEAP"), "0") != 0);
		/* EMA_PLAN_LEAP=0: a leap's steps planned one by one (the same) */
		if (getenv("EMA_PLAN_LEAP") != NULL)
			ema_engine_set_plan_leap(run->engine, strcmp(getenv("EMA_PLAN_LEAP"), "0") != 0);
		if (!x->quiet) {
			struct progress *pr = &x->progress;

			pr->label = run->policy;
			pr->wall_start = ema_wall_now();
			pr->lines = 0;
			ema_engine_on_progress(run->engine, print_progress, pr);
			fprintf(stderr, "ema: running %s on %s (%s, %d tenants, %lld requests)\n",
				run->policy, p->ops->name, cfg->hw.name, cfg->n_tenants,
				(long long)ema_engine_total_requests(run->engine));
		}
		if (!x->rows_beside) {
			/* the records go to temporary files as they are final
			 * (the engine frees their requests), read back for the
			 * results and requests.csv: memory follows the requests
			 * in flight, not the trace's length */
			for (int ti = 0; ti < cfg->n_tenants; ti++)
				if ((run->recs[ti] = spill_open(&run->spill_buf[ti], err)) == NULL) {
					ema_engine_free(run->engine);
					run->engine = NULL;
					p->ops->destroy(p);
					return err->code;
				}
			ema_engine_stream_records(run->engine, record_sink, run);
			if ((run->timeline = spill_open(&run->spill_buf[EMA_MAX_TENANTS],
							err)) == NULL) {
				ema_engine_free(run->engine);
				run->engine = NULL;
				p->ops->destroy(p);
				return err->code;
			}
			ema_engine_stream_timeline(run->engine, timeline_sink, run);
		} else {
			/* requests.csv's rows are formatted as the requests finish,
			 * by a thread of their own (or after the run, where there is
			 * none): the file's bytes are the same either way */
			const char *names[EMA_MAX_TENANTS];

			for (int ti = 0; ti < cfg->n_tenants; ti++)
				names[ti] = cfg->tenants[ti].name;
			ema_rows_start(&run->rows, run->engine, run->policy, names, cfg->n_tenants,
				       x->rows_max);
		}
		rc = ema_engine_run(run->engine, err);
		ema_rows_finish(&run->rows);
		if (rc == EMA_OK) {
			run->events = p->ops->events(p);
			run->leaps = ema_engine_leaps(run->engine, &run->leapt_steps);
			run->remote_steps = ema_engine_remote_steps(run->engine);
			if (p->ops->link_stats(p) != NULL)
				run->links = *p->ops->link_stats(p);
		}
		if (be->integrity != NULL)
			be->integrity(p, &run->pages_checked, &run->pages_corrupted);
		p->ops->destroy(p);
		if (rc != EMA_OK)
			return rc;
		run->wall_s = ema_wall_now() - w0;
		lent_peaks(run);
		rc = tenant_results(run, cfg);
		if (rc != EMA_OK)
			return ema_error_set(err, rc, "requests: cannot read back the records of %s's "
					     "run (a temporary file)", run->policy);
		for (int ti = 0; !x->silent && ti < cfg->n_tenants; ti++) {
			const struct ema_tenant_result *r = &run->results[ti];

			/* said even with --quiet: a result short of requests
			 * must not look like a complete one */
			int64_t at_arrival = r->dropped - r->dropped_recomputed - r->dropped_yielded;

			if (at_arrival > 0 && r->max_admit_pages < r->max_request_pages)
				fprintf(stderr, "ema: %s: %s: %lld of %lld requests dropped at arrival: "
					"the KV of each (up to %d pages of %g MiB) exceeds the %d pages "
					"one request can ever hold, or its prompt's the %d pages one can "
					"be admitted with, under %s\n", run->policy, r->tenant,
					(long long)at_arrival, (long long)r->requests,
					r->dropped_max_pages, cfg->page_mib, r->max_request_pages,
					r->max_admit_pages, run->policy);
			else if (at_arrival > 0)
				fprintf(stderr, "ema: %s: %s: %lld of %lld requests dropped at arrival: "
					"their KV (up to %d pages of %g MiB) exceeds the %d pages one "
					"request can ever hold under %s\n", run->policy, r->tenant,
					(long long)at_arrival, (long long)r->requests,
					r->dropped_max_pages, cfg->page_mib, r->max_request_pages,
					run->policy);
			if (r->dropped_recomputed > r->dropped_backoff + r->dropped_swapped)
				fprintf(stderr, "ema: %s: %s: %lld of %lld requests dropped when preempted: "
					"the KV of their prompt and the tokens they had generated (up to "
					"%d pages of %g MiB) exceeds the %d pages one request can be "
					"admitted with under %s\n", run->policy, r->tenant,
					(long long)(r->dropped_recomputed - r->dropped_backoff -
						    r->dropped_swapped),
					(long long)r->requests, r->dropped_recomputed_max_pages,
					cfg->page_mib, r->max_admit_pages, run->policy);
			if (r->dropped_yielded > 0)
				fprintf(stderr, "ema: %s: %s: %lld of %lld requests dropped at the front of "
					"the queue: their KV (up to %d pages of %g MiB) is more than the "
					"GPU's %d, and they could not start where the request behind "
					"them could (oversize requests yield)\n",
					run->policy, r->tenant, (long long)r->dropped_yielded,
					(long long)r->requests, r->dropped_yielded_max_pages, cfg->page_mib,
					r->kv_capacity_pages);
			if (r->dropped_swapped > 0)
				fprintf(stderr, "ema: %s: %s: %lld of %lld requests dropped when swapped out: "
					"with nothing else left to run, their KV (up to %d pages of %g MiB) "
					"needed more pages than the tenant could get back under %s\n",
					run->policy, r->tenant, (long long)r->dropped_swapped,
					(long long)r->requests, r->dropped_swapped_max_pages, cfg->page_mib,
					run->policy);
			/* the lenders took pages back from the same request round
			 * and round (doc/limitations.md, "reclaim backoff") */
			if (r->reclaim_backoffs > 0 && r->dropped_backoff > 0)
				fprintf(stderr, "ema: %s: %s: %lld of %lld requests taken back by reclaims "
					"%d times ran on their own GPU's pages from then on (reclaim "
					"backoff); %lld of them dropped when preempted, their KV (up to "
					"%d pages of %g MiB) more than the GPU's %d\n", run->policy,
					r->tenant, (long long)r->reclaim_backoffs, (long long)r->requests,
					r->reclaim_backoff_after, (long long)r->dropped_backoff,
					r->dropped_backoff_max_pages, cfg->page_mib, r->kv_capacity_pages);
			else if (r->reclaim_backoffs > 0)
				fprintf(stderr, "ema: %s: %s: %lld of %lld requests taken back by reclaims "
					"%d times ran on their own GPU's pages from then on (reclaim "
					"backoff)\n", run->policy, r->tenant,
					(long long)r->reclaim_backoffs, (long long)r->requests,
					r->reclaim_backoff_after);
		}
	}
	rc = compare(x);
	if (rc != EMA_OK)
		return ema_error_set(err, rc, "requests: cannot read back the records of the runs "
				     "(temporary files)");
	x->wall_s = ema_wall_now() - t0;
	return EMA_OK;
}

void ema_experiment_free(struct ema_experiment *x)
{
	for (int i = 0; i < x->n_runs; i++) {
		ema_rows_free(&x->runs[i].rows); /* (its thread reads the engine) */
		for (int ti = 0; ti < EMA_MAX_TENANTS; ti++)
			if (x->runs[i].recs[ti] != NULL) {
				fclose(x->runs[i].recs[ti]);
				x->runs[i].recs[ti] = NULL;
			}
		if (x->runs[i].timeline != NULL) {
			fclose(x->runs[i].timeline);
			x->runs[i].timeline = NULL;
		}
		for (int k = 0; k <= EMA_MAX_TENANTS; k++) {
			free(x->runs[i].spill_buf[k]); /* (after fclose: the files' buffers) */
			x->runs[i].spill_buf[k] = NULL;
		}
		ema_engine_free(x->runs[i].engine);
		x->runs[i].engine = NULL;
	}
	for (int ti = 0; ti < EMA_MAX_TENANTS; ti++) {
		if (x->workload_of[ti] != 0)
			memset(&x->workloads[ti], 0, sizeof x->workloads[ti]); /* (another's) */
		else
			ema_workload_free(&x->workloads[ti]);
		x->workload_of[ti] = 0;
	}
	x->n_runs = 0;
}

/* ---- writing ------------------------------------------------------------ */

static void put_num(FILE *f, double v)
{
	if (isnan(v) || isinf(v))
		fputs("", f);
	else
		fprintf(f, "%.6g", v);
}

int ema_experiment_write_summary_csv(const struct ema_experiment *x, FILE *f)
{
	fputs("policy,tenant,gpu,requests,completed,dropped,throughput_tok_s,req_s,"
	      "ttft_p50_ms,ttft_p90_ms,ttft_p99_ms,tpot_p50_ms,tpot_p90_ms,tpot_p99_ms,"
	      "e2e_p50_ms,e2e_p99_ms,preemptions,kv_peak_gib,"
	      "swaps,recomputed_tokens,borrowed_peak_gib,remote_share,remote_read_gib,stall_ms,"
	      "lent_peak_gib,reclaim_wait_ms,reclaims,reclaim_p50_ms,reclaim_p99_ms,reclaim_max_ms,"
	      "vs_static_throughput,vs_static_ttft_p50,vs_static_tpot_p50,"
	      "vs_static_ttft_p99,vs_static_tpot_p99,vs_ideal_throughput,lender_guarantee,"
	      "steady_tok_s,window_start_s,window_end_s,user_tok_s_mean,user_tok_s_p50,"
	      "slo_attainment,goodput_req_s,vs_static_steady_tok_s,vs_ideal_steady_tok_s,"
	      "dropped_recomputed,vs_static_ttft_paired_p50,vs_static_tpot_paired_p50,"
	      "generated_tok_s,vs_static_generated_tok_s,vs_pooled_throughput,"
	      "vs_pooled_steady_tok_s,vs_pooled_generated_tok_s,vs_ideal_kv_steady_tok_s\n", f);
	for (int i = 0; i < x->n_runs; i++)
		for (int ti = 0; ti < x->cfg.n_tenants; ti++) {
			const struct ema_tenant_result *r = &x->runs[i].results[ti];
			const double nums[] = {
				r->throughput_tok_s, r->req_s, r->ttft_ms[0], r->ttft_ms[1], r->ttft_ms[2],
				r->tpot_ms[0], r->tpot_ms[1], r->tpot_ms[2], r->e2e_ms[0], r->e2e_ms[1],
			};

			fprintf(f, "%s,%s,%d,%lld,%lld,%lld", r->policy, r->tenant, r->gpu,
				(long long)r->requests, (long long)r->completed, (long long)r->dropped);
			for (size_t k = 0; k < sizeof nums / sizeof nums[0]; k++) {
				fputc(',', f);
				put_num(f, nums[k]);
			}
			fprintf(f, ",%lld,", (long long)r->preemptions);
			put_num(f, r->kv_peak_gib);
			fprintf(f, ",%lld,%lld,", (long long)r->swaps, (long long)r->recomputed_tokens);
			{
				const double more[] = {
					r->borrowed_peak_gib, r->remote_share, r->remote_gib, r->stall_ms,
					r->lent_peak_gib, r->reclaim_wait_ms,
				};
				for (size_t k = 0; k < sizeof more / sizeof more[0]; k++) {
					if (k)
						fputc(',', f);
					put_num(f, more[k]);
				}
			}
			fprintf(f, ",%lld", (long long)r->reclaims);
			{
				const double cmp[] = {
					r->reclaim_ms[0], r->reclaim_ms[1], r->reclaim_ms[2],
					r->vs_static_throughput, r->vs_static_ttft_p50, r->vs_static_tpot_p50,
					r->vs_static_ttft_p99, r->vs_static_tpot_p99, r->vs_ideal_throughput,
				};
				for (size_t k = 0; k < sizeof cmp / sizeof cmp[0]; k++) {
					fputc(',', f);
					put_num(f, cmp[k]);
				}
			}
			fprintf(f, ",%s", r->guarantee);
			{
				const struct ema_metrics *m = &r->metrics;
				const double reg[] = {
					m->steady_tok_s, m->window_start_s, m->window_end_s,
					m->user_tok_s_mean, m->user_tok_s_p50, m->slo_attainment,
					m->goodput_req_s, r->vs_static_steady, r->vs_ideal_steady,
				};
				for (size_t k = 0; k < sizeof reg / sizeof reg[0]; k++) {
					fputc(',', f);
					put_num(f, reg[k]);
				}
			}
			/* (appended, so that readers by position of the columns
			 * before them are not broken) */
			fprintf(f, ",%lld,", (long long)r->dropped_recomputed);
			put_num(f, r->vs_static_ttft_paired);
			fputc(',', f);
			put_num(f, r->vs_static_tpot_paired);
			fputc(',', f);
			put_num(f, r->generated_tok_s);
			fputc(',', f);
			put_num(f, r->vs_static_generated);
			{
				const double bounds[] = {
					r->vs_pooled_throughput, r->vs_pooled_steady,
					r->vs_pooled_generated, r->vs_ideal_kv_steady,
				};
				for (size_t k = 0; k < sizeof bounds / sizeof bounds[0]; k++) {
					fputc(',', f);
					put_num(f, bounds[k]);
				}
			}
			fputc('\n', f);
		}
	return ferror(f) ? EMA_ERR_IO : EMA_OK;
}

/* requests.csv and timeline.csv are the large files (a row per request
 * and policy): written through csvout, whose numbers are printf's text.
 * requests.csv's rows are ready in memory when every run formatted them
 * as it went (rows.c); else they are formatted here, the same bytes. */
static int write_requests_csv(const struct ema_experiment *x, FILE *f)
{
	static const char header[] = "policy,tenant,request,arrival_ms,first_token_ms,finish_ms,"
				     "prompt_tokens,output_tokens,preemptions,ttft_ms,tpot_ms,e2e_ms,"
				     "dropped\n";
	struct ema_csvout *o;
	bool ready = true;
	int rc;

	for (int i = 0; i < x->n_runs; i++)
		ready = ready && ema_rows_ready(&x->runs[i].rows);
	if (ready) {
		if (fputs(header, f) == EOF)
			return EMA_ERR_IO;
		for (int i = 0; i < x->n_runs; i++)
			if (ema_rows_write(&x->runs[i].rows, f) != EMA_OK)
				return EMA_ERR_IO;
		return ferror(f) ? EMA_ERR_IO : EMA_OK;
	}
	o = malloc(sizeof *o);
	if (o == NULL)
		return EMA_ERR_NOMEM;
	ema_csvout_init(o, f);
	ema_csvout_str(o, header);
	for (int i = 0; i < x->n_runs; i++) {
		const struct ema_engine *e = x->runs[i].engine;

		for (int ti = 0; ti < ema_engine_n_tenants(e); ti++) {
			struct rec_src src;
			struct ema_request_record r;

			rec_src_run(&src, &x->runs[i], ti);
			while (rec_next(&src, &r))
				ema_rows_format(o, x->runs[i].policy, x->cfg.tenants[ti].name, &r);
			if (src.bad) {
				free(o);
				return EMA_ERR_IO;
			}
		}
	}
	rc = ema_csvout_flush(o);
	free(o);
	return rc != EMA_OK || ferror(f) ? EMA_ERR_IO : EMA_OK;
}

static int write_timeline_csv(const struct ema_experiment *x, FILE *f)
{
	struct ema_csvout *o = malloc(sizeof *o);
	int rc;

	if (o == NULL)
		return EMA_ERR_NOMEM;
	ema_csvout_init(o, f);
	ema_csvout_str(o, "policy,time_s,gpu,weights_gib,kv_used_gib,staging_gib,free_gib,lent_gib,borrowed_gib\n");
	for (int i = 0; i < x->n_runs; i++) {
		const struct ema_engine *e = x->runs[i].engine;
		double pg = (double)ema_engine_page_bytes(e) / GIB;
		int32_t n;
		const struct ema_timeline_sample *tl = ema_engine_timeline(e, &n);
		FILE *spill = x->runs[i].timeline;
		struct ema_timeline_sample one;

		if (spill != NULL && fseek(spill, 0, SEEK_SET) != 0) {
			free(o);
			return EMA_ERR_IO;
		}
		/* the streamed samples (a file), then those left in the engine */
		for (int32_t k = 0; spill != NULL || k < n; k++) {
			const struct ema_timeline_sample *s = &one;

			if (spill != NULL) {
				if (fread(&one, sizeof one, 1, spill) != 1) {
					if (ferror(spill)) {
						free(o);
						return EMA_ERR_IO;
					}
					spill = NULL;
					k = -1;
					continue;
				}
			} else {
				s = &tl[k];
			}
			const double gib[] = {
				s->weights * pg, s->kv_used * pg, s->staging * pg,
				s->free_pages * pg, s->lent * pg, s->borrowed * pg,
			};

			ema_csvout_str(o, x->runs[i].policy);
			ema_csvout_char(o, ',');
			ema_csvout_fixed(o, s->time_s, 3);
			ema_csvout_char(o, ',');
			ema_csvout_int(o, s->gpu);
			for (int c = 0; c < 6; c++) {
				ema_csvout_char(o, ',');
				ema_csvout_fixed(o, gib[c], 4);
			}
			ema_csvout_char(o, '\n');
		}
	}
	rc = ema_csvout_flush(o);
	free(o);
	return rc != EMA_OK || ferror(f) ? EMA_ERR_IO : EMA_OK;
}

static const char *const purpose_names[EMA_XFER_PURPOSES] = {
	"prefetch", "reclaim", "demote", "swap_out", "swap_in",
};

static int write_links_csv(const struct ema_experiment *x, FILE *f)
{
	int n = x->cfg.hw.n_gpus;

	fputs("policy,src,dst,bytes,gib\n", f);
	for (int i = 0; i < x->n_runs; i++) {
		const struct ema_link_stats *l = &x->runs[i].links;

		for (int s = -1; s < n; s++)
			for (int d = -1; d < n; d++) {
				uint64_t b = l->bytes[s + 1][d + 1];

				if (b == 0)
					continue;
				char src[16] = "host", dst[16] = "host";

				if (s >= 0)
					snprintf(src, sizeof src, "gpu%d", s);
				if (d >= 0)
					snprintf(dst, sizeof dst, "gpu%d", d);
				fprintf(f, "%s,%s,%s,%llu,%.4f\n", x->runs[i].policy, src, dst,
					(unsigned long long)b, (double)b / GIB);
			}
	}
	return ferror(f) ? EMA_ERR_IO : EMA_OK;
}

static int write_transfers_csv(const struct ema_experiment *x, FILE *f)
{
	fputs("policy,purpose,bytes,gib\n", f);
	for (int i = 0; i < x->n_runs; i++)
		for (int p = 0; p < EMA_XFER_PURPOSES; p++) {
			uint64_t b = x->runs[i].links.bytes_by_purpose[p];

			fprintf(f, "%s,%s,%llu,%.4f\n", x->runs[i].policy, purpose_names[p],
				(unsigned long long)b, (double)b / GIB);
		}
	return ferror(f) ? EMA_ERR_IO : EMA_OK;
}

/* Every reclaim record: the latencies behind summary.csv's reclaim_p50_ms
 * and _p99_ms, for their distribution (the reclaim CDFs of ema figures). */
static int write_reclaims_csv(const struct ema_experiment *x, FILE *f)
{
	fputs("policy,time_s,gpu,pages,latency_ms\n", f);
	for (int i = 0; i < x->n_runs; i++) {
		int32_t n;
		const struct ema_reclaim_record *r = ema_engine_reclaims(x->runs[i].engine, &n);

		for (int32_t k = 0; k < n; k++)
			fprintf(f, "%s,%.6f,%d,%d,%.6f\n", x->runs[i].policy, (double)r[k].start_ns * 1e-9,
				r[k].lender_gpu, r[k].pages, (double)r[k].latency_ns * 1e-6);
	}
	return ferror(f) ? EMA_ERR_IO : EMA_OK;
}

static int write_run_json(const struct ema_experiment *x, FILE *f)
{
	static const char *const slurm_vars[][2] = {
		{ "SLURM_JOB_ID", "job_id" },
		{ "SLURM_ARRAY_JOB_ID", "array_job_id" },
		{ "SLURM_ARRAY_TASK_ID", "array_task_id" },
	};
	const char *job = getenv("SLURM_JOB_ID");
	const struct ema_platform_backend *be = experiment_backend(x);

	fprintf(f, "{\n  \"program\": \"ema\",\n  \"version\": \"%s\",\n  \"commit\": ",
		PACKAGE_VERSION);
	ema_json_put_string(f, ema_commit);
	fputs(",\n  \"command\": ", f);
	ema_json_put_string(f, x->command);
	/* where it ran: a point of a sweep spread over a cluster names its
	 * node and its Slurm job, to find the task's log */
	fputs(",\n  \"host\": ", f);
	ema_json_put_string(f, ema_host_name());
	if (job != NULL && *job != '\0') {
		bool first = true;

		fputs(",\n  \"slurm\": {", f);
		for (size_t i = 0; i < sizeof slurm_vars / sizeof slurm_vars[0]; i++) {
			const char *v = getenv(slurm_vars[i][0]);

			if (v == NULL || *v == '\0')
				continue;
			fprintf(f, "%s\"%s\": ", first ? "" : ", ", slurm_vars[i][1]);
			ema_json_put_string(f, v);
			first = false;
		}
		fputc('}', f);
	}
	fputs(",\n  \"backend\": ", f);
	ema_json_put_string(f, be->name);
	fprintf(f, ",\n  \"seed\": %llu,\n", (unsigned long long)x->cfg.seed);
	fprintf(f, "  \"wall_s\": %.3f,\n  \"policies\": [\n", x->wall_s);
	for (int i = 0; i < x->n_runs; i++) {
		long long backoffs = 0;

		for (int t = 0; t < x->cfg.n_tenants; t++)
			backoffs += x->runs[i].results[t].reclaim_backoffs;
		fprintf(f, "    {\"policy\": \"%s\", \"events\": %llu, \"wall_s\": %.3f, \"end_s\": %.6f, "
			"\"remote_steps\": %llu, \"reclaim_backoffs\": %lld",
			x->runs[i].policy, (unsigned long long)x->runs[i].events, x->runs[i].wall_s,
			(double)ema_engine_end_ns(x->runs[i].engine) * 1e-9,
			(unsigned long long)x->runs[i].remote_steps, backoffs);
		/* the backend's own fields (the simulator's leaps and link
		 * waits, the GPUs' integrity checks) */
		if (be->run_json != NULL) {
			struct ema_platform_report r;

			run_report(x, &x->runs[i], &r);
			be->run_json(f, &r);
		}
		fprintf(f, "}%s\n", i + 1 < x->n_runs ? "," : "");
	}
	fputs("  ]\n}\n", f);
	return ferror(f) ? EMA_ERR_IO : EMA_OK;
}

static int write_config(const struct ema_experiment *x, FILE *f)
{
	return ema_config_write_json(&x->cfg, f, NULL);
}

/* The writer of each file of the run folder (outdir.h owns the list). */
static int write_run_file(const void *ctx, enum ema_run_file file, FILE *f)
{
	const struct ema_experiment *x = ctx;

	switch (file) {
	case EMA_RUN_SUMMARY:
		return ema_experiment_write_summary_csv(x, f);
	case EMA_RUN_REQUESTS:
		return write_requests_csv(x, f);
	case EMA_RUN_TIMELINE:
		return write_timeline_csv(x, f);
	case EMA_RUN_LINKS:
		return write_links_csv(x, f);
	case EMA_RUN_TRANSFERS:
		return write_transfers_csv(x, f);
	case EMA_RUN_RECLAIMS:
		return write_reclaims_csv(x, f);
	case EMA_RUN_CONFIG:
		return write_config(x, f);
	case EMA_RUN_JSON:
		return write_run_json(x, f);
	case EMA_RUN_FILES:
		break;
	}
	return EMA_ERR_INTERNAL;
}

int ema_experiment_write(struct ema_experiment *x, struct ema_outdir *od, bool plots,
			 struct ema_error *err)
{
	const char *tmp = od->tmp;
	int rc;

	if ((rc = ema_outdir_write_files(od, write_run_file, x, err)) != EMA_OK)
		goto fail;
	if (plots) {
		int rendered = 0;

		rc = ema_plots_render(tmp, EMA_GNUPLOT, &rendered, err);
		if (rc != EMA_OK)
			goto fail;
		if (rendered == 0 && !x->quiet)
			fprintf(stderr, "ema: gnuplot not found: figures skipped (scripts are in %s/plots)\n",
				od->shown);
	}
	return ema_outdir_commit(od, err);
fail:
	ema_outdir_abort(od);
	return rc;
}

void ema_experiment_print(const struct ema_experiment *x, FILE *out)
{
	const struct ema_platform_backend *be = experiment_backend(x);

	fprintf(out, "%-14s %-8s %4s %9s %7s %11s %10s %10s %10s %10s %7s %8s %8s %9s\n",
		"policy", "tenant", "gpu", "completed", "dropped", "tok/s", "ttft_p50", "ttft_p99",
		"tpot_p50", "tpot_p99", "preempt", "remote", "vs_stat", "lender");
	for (int i = 0; i < x->n_runs; i++)
		for (int ti = 0; ti < x->cfg.n_tenants; ti++) {
			const struct ema_tenant_result *r = &x->runs[i].results[ti];

			char v[5][16];
			const double val[5] = {r->ttft_ms[0], r->ttft_ms[2], r->tpot_ms[0], r->tpot_ms[2],
					       r->vs_static_throughput};

			/* a tenant without finished requests has no latencies */
			for (int k = 0; k < 5; k++) {
				if (isnan(val[k]) || isinf(val[k]))
					snprintf(v[k], sizeof v[k], "-");
				else if (k == 4)
					snprintf(v[k], sizeof v[k], "%.3f", val[k]);
				else
					snprintf(v[k], sizeof v[k], k < 2 ? "%.1fms" : "%.2fms", val[k]);
			}
			fprintf(out, "%-14s %-8s %4d %4lld/%-4lld %7lld %11.1f %10s %10s %10s %10s %7lld %7.1f%% %8s %9s\n",
				r->policy, r->tenant, r->gpu, (long long)r->completed,
				(long long)r->requests, (long long)r->dropped, r->throughput_tok_s, v[0], v[1], v[2], v[3],
				(long long)r->preemptions, 100.0 * r->remote_share, v[4], r->guarantee);
		}
	for (int i = 0; be->print != NULL && i < x->n_runs; i++) {
		struct ema_platform_report r;

		run_report(x, &x->runs[i], &r);
		be->print(out, &r);
	}
}
