/* generate.c: a tenant's request stream from its configuration: a trace
 * window (shifted to start at 0 and sped up by rate_scale) or generated
 * arrivals (Poisson or gamma) with generated or empirical lengths. Every
 * random draw comes from a GSL stream seeded from the tenant's seed and a
 * stream name, so changing how lengths are drawn never moves an arrival. */
#include "workload.h"
#include "workload_priv.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Gamma shapes below 1/cv^2 = 1e-4 underflow to runs of zero gaps. */
#define MAX_ARRIVAL_CV 100.0
#define MAX_LENGTH_CV 100.0

/* mt19937 keeps only the low 32 bits of its seed and treats 0 as "use the
 * default seed", so the 64-bit stream seed is folded and kept nonzero. */
static gsl_rng *stream_rng(uint64_t seed, const char *name)
{
	uint64_t x = ema_seed_derive(seed, 0, name);
	unsigned long s = (unsigned long)((x ^ (x >> 32)) & 0xffffffffUL);
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);

	if (r != NULL)
		gsl_rng_set(r, s != 0 ? s : 1);
	return r;
}

static int check_lengths(const char *side, const struct ema_length_cfg *lc,
			 bool from_file, struct ema_error *err)
{
	if (lc->min < 0 || lc->max < 0 || lc->max > EMA_WORKLOAD_MAX_TOKENS)
		return ema_error_set(err, EMA_ERR_INPUT,
				     "workload: %s.min and %s.max must be in 0..%ld, got %d and %d",
				     side, side, EMA_WORKLOAD_MAX_TOKENS, lc->min, lc->max);
	if (lc->max > 0 && lc->min > lc->max)
		return ema_error_set(err, EMA_ERR_INPUT,
				     "workload: %s.min = %d is above %s.max = %d",
				     side, lc->min, side, lc->max);
	if (from_file)
		return 0;
	switch (lc->kind) {
	case EMA_LEN_FIXED:
		/* the key's range, (0, max]: a mean below 1 is clamped to one
		 * token, as a lognormal one of cv 0 is */
		if (!(lc->mean > 0 && lc->mean <= EMA_WORKLOAD_MAX_TOKENS))
			return ema_error_set(err, EMA_ERR_INPUT,
					     "workload: %s.mean must be in (0, %ld] tokens for fixed lengths, got %g",
					     side, EMA_WORKLOAD_MAX_TOKENS, lc->mean);
		return 0;
	case EMA_LEN_UNIFORM:
		if (lc->max < 1)
			return ema_error_set(err, EMA_ERR_INPUT,
					     "workload: uniform %s lengths need %s.max >= 1 (and %s.min <= %s.max)",
					     side, side, side, side);
		return 0;
	case EMA_LEN_LOGNORMAL:
		if (!(lc->mean > 0 && lc->mean <= EMA_WORKLOAD_MAX_TOKENS))
			return ema_error_set(err, EMA_ERR_INPUT,
					     "workload: %s.mean must be in (0, %ld] tokens for lognormal lengths, got %g",
					     side, EMA_WORKLOAD_MAX_TOKENS, lc->mean);
		if (!(lc->cv >= 0 && lc->cv <= MAX_LENGTH_CV))
			return ema_error_set(err, EMA_ERR_INPUT,
					     "workload: %s.cv must be in [0, %g] for lognormal lengths, got %g",
					     side, MAX_LENGTH_CV, lc->cv);
		return 0;
	case EMA_LEN_EMPIRICAL:
		return 0;
	}
	return ema_error_set(err, EMA_ERR_INPUT,
			     "workload: unknown %s length kind %d", side, (int)lc->kind);
}

/* One length. Clamped to [max(1, min), max] (max 0 = no upper bound but
 * the absurd-token cap), in double before rounding so that a far lognormal
 * tail cannot overflow the conversion. */
static int32_t draw_length(const struct ema_length_cfg *lc, bool from_file,
			   gsl_rng *r, int32_t file_value)
{
	double lo = lc->min > 1 ? lc->min : 1;
	double hi = lc->max > 0 ? lc->max : (double)EMA_WORKLOAD_MAX_TOKENS;
	double v;

	if (from_file || lc->kind == EMA_LEN_EMPIRICAL) {
		v = file_value;
	} else if (lc->kind == EMA_LEN_UNIFORM) {
		int lo_i = lc->min;

		v = lo_i + (double)gsl_rng_uniform_int(r, (unsigned long)(lc->max - lo_i) + 1);
	} else if (lc->kind == EMA_LEN_LOGNORMAL && lc->cv > 0) {
		/* mean and CV of the lognormal itself, not of its log */
		double s2 = log1p(lc->cv * lc->cv);
		double mu = log(lc->mean) - s2 / 2;

		v = gsl_ran_lognormal(r, mu, sqrt(s2));
	} else {
		v = lc->mean;            /* fixed, or lognormal with cv 0 */
	}
	if (!(v >= lo))
		v = lo;
	if (v > hi)
		v = hi;
	return (int32_t)llround(v);
}

/* A trace file as read, kept for the next tenant that replays it. */
struct ema_trace_file {
	char path[EMA_PATH_MAX];
	enum ema_trace_format format;
	struct ema_workload rows;
	uint32_t *lines;
};

struct ema_trace_cache {
	int n, cap;
	struct ema_trace_file *files;
};

struct ema_trace_cache *ema_trace_cache_new(void)
{
	return calloc(1, sizeof(struct ema_trace_cache));
}

void ema_trace_cache_free(struct ema_trace_cache *c)
{
	if (c == NULL)
		return;
	for (int i = 0; i < c->n; i++) {
		ema_workload_free(&c->files[i].rows);
		free(c->files[i].lines);
	}
	free(c->files);
	free(c);
}

/* The rows of cfg's trace and the file line of each, into out and *lines
 * (the caller's to free): read from the file, or copied from the cache
 * when an earlier tenant read the same path in the same format (the copy
 * is what a second read would give: one file, read once, so a FIFO works
 * for every tenant too). */
static int read_trace(const struct ema_workload_cfg *cfg, struct ema_trace_cache *cache,
		      struct ema_workload *out, uint32_t **lines, struct ema_error *err)
{
	struct ema_trace_file *f = NULL;
	int rc;

	if (cache == NULL)
		return ema_trace_read_ex(cfg->trace, cfg->format, true, out, lines, err);
	for (int i = 0; i < cache->n && f == NULL; i++)
		if (cache->files[i].format == cfg->format &&
		    strcmp(cache->files[i].path, cfg->trace) == 0)
			f = &cache->files[i];
	if (f == NULL) {
		if (cache->n == cache->cap) {
			int cap = cache->cap ? 2 * cache->cap : 4;
			struct ema_trace_file *n = realloc(cache->files, (size_t)cap * sizeof *n);

			if (n == NULL)
				return ema_error_set(err, EMA_ERR_NOMEM, "workload: out of memory");
			cache->files = n;
			cache->cap = cap;
		}
		f = &cache->files[cache->n];
		memset(f, 0, sizeof *f);
		rc = ema_trace_read_ex(cfg->trace, cfg->format, true, &f->rows, &f->lines, err);
		if (rc)
			return rc;
		snprintf(f->path, sizeof f->path, "%s", cfg->trace);
		f->format = cfg->format;
		cache->n++;
	}
	memset(out, 0, sizeof *out);
	*lines = malloc((f->rows.n ? f->rows.n : 1) * sizeof **lines);
	if (*lines == NULL || ema_workload_reserve(out, f->rows.n, err) != 0) {
		free(*lines);
		*lines = NULL;
		ema_workload_free(out);
		return ema_error_set(err, EMA_ERR_NOMEM, "workload: out of memory");
	}
	memcpy(out->reqs, f->rows.reqs, f->rows.n * sizeof *out->reqs);
	memcpy(*lines, f->lines, f->rows.n * sizeof **lines);
	out->n = f->rows.n;
	return 0;
}

static int build_trace(const struct ema_workload_cfg *cfg, struct ema_trace_cache *cache,
		       struct ema_workload *out, struct ema_workload_cut *cut,
		       struct ema_error *err)
{
	int64_t start_ns, end_ns, base;
	uint32_t *lines = NULL;
	size_t j = 0, cut_duration = 0;
	int rc;

	if (cfg->trace[0] == '\0')
		return ema_error_set(err, EMA_ERR_INPUT,
				     "workload: a trace source needs a file (workload.trace)");
	if (!(cfg->start_s >= 0 && cfg->start_s < 1e9) ||
	    !(cfg->duration_s >= 0 && cfg->duration_s < 1e9))
		return ema_error_set(err, EMA_ERR_INPUT,
				     "workload: start_s and duration_s must be in [0, 1e9) s, got %g and %g",
				     cfg->start_s, cfg->duration_s);
	if (!(cfg->rate_scale > 0 && isfinite(cfg->rate_scale)))
		return ema_error_set(err, EMA_ERR_INPUT,
				     "workload: rate_scale must be > 0, got %g", cfg->rate_scale);
	if (cfg->max_requests < 0)
		return ema_error_set(err, EMA_ERR_INPUT,
				     "workload: max_requests must be >= 0, got %d", cfg->max_requests);
	/* one read: a FIFO or <(...) cannot be opened twice, so the format
	 * (and whether it has times at all) is decided from the same bytes */
	rc = read_trace(cfg, cache, out, &lines, err);
	if (rc)
		return rc;
	start_ns = llround(cfg->start_s * 1e9);
	end_ns = cfg->duration_s > 0 ?
		llround((cfg->start_s + cfg->duration_s) * 1e9) : INT64_MAX;
	for (size_t i = 0; i < out->n; i++) {
		if (out->reqs[i].arrival_ns >= end_ns) {
			cut_duration++;
		} else if (out->reqs[i].arrival_ns >= start_ns) {
			lines[j] = lines[i];
			out->reqs[j++] = out->reqs[i];
		}
	}
	if (j == 0) {
		ema_workload_free(out);
		free(lines);
		if (cfg->duration_s > 0)
			return ema_error_at(err, cfg->trace, 0,
					    "no requests in window [%g s, %g s)",
					    cfg->start_s, cfg->start_s + cfg->duration_s);
		return ema_error_at(err, cfg->trace, 0,
				    "no requests in window [%g s, end)", cfg->start_s);
	}
	out->n = j;
	/* the cap first: a row it drops cannot make the scaling overflow */
	if (cfg->max_requests > 0 && out->n > (size_t)cfg->max_requests) {
		cut->by_max_requests = out->n - (size_t)cfg->max_requests;
		out->n = (size_t)cfg->max_requests;
	}
	cut->by_duration = cut_duration;
	base = out->reqs[0].arrival_ns;
	for (size_t i = 0; i < out->n; i++) {
		int64_t a = out->reqs[i].arrival_ns - base;

		/* skip the division at 1 so replay stays exact to the ns; below
		 * 1 it stretches time, and a long trace slowed down far enough
		 * leaves the range of int64_t ns (llround is then undefined) */
		if (cfg->rate_scale != 1.0) {
			double scaled = (double)a / cfg->rate_scale;

			if (!(scaled <= (double)EMA_WORKLOAD_MAX_ARRIVAL_NS)) {
				rc = ema_error_at(err, cfg->trace, (long)lines[i],
						  "this row comes %.9g s after the window's first, which rate_scale = %g stretches to %.3g s: past the limit of 1e9 s (about 31 years); expected a larger rate_scale or a shorter window",
						  (double)a / 1e9, cfg->rate_scale, scaled / 1e9);
				ema_workload_free(out);
				free(lines);
				return rc;
			}
			a = llround(scaled);
		}
		out->reqs[i].arrival_ns = a;
	}
	free(lines);
	return 0;
}

/* 8756 as "8,756": counts in warnings are read by people. */
static void fmt_count(char *buf, size_t size, size_t v)
{
	char digits[32];
	size_t n, k = 0;

	n = (size_t)snprintf(digits, sizeof digits, "%zu", v);
	for (size_t i = 0; i < n && k + 2 < size; i++) {
		if (i > 0 && (n - i) % 3 == 0)
			buf[k++] = ',';
		buf[k++] = digits[i];
	}
	buf[k] = '\0';
}

bool ema_workload_cut_note(const struct ema_workload *w,
			   const struct ema_workload_cut *cut,
			   const struct ema_workload_cfg *cfg, char *buf,
			   size_t size)
{
	char kept[32], dur[32], max[32];
	int n;

	if (size > 0)
		buf[0] = '\0';
	if (cut->by_duration == 0 && cut->by_max_requests == 0)
		return false;
	fmt_count(kept, sizeof kept, w->n);
	fmt_count(dur, sizeof dur, cut->by_duration);
	fmt_count(max, sizeof max, cut->by_max_requests);
	n = snprintf(buf, size, "the trace replay of %s keeps %s requests;", cfg->trace, kept);
	if (cut->by_duration > 0 && n >= 0 && (size_t)n < size)
		n += snprintf(buf + n, size - (size_t)n,
			      " %s %s after start_s + duration_s = %g s %s left out by duration_s = %g (0 replays to the end)%s",
			      dur, cut->by_duration == 1 ? "row" : "rows",
			      cfg->start_s + cfg->duration_s,
			      cut->by_duration == 1 ? "was" : "were", cfg->duration_s,
			      cut->by_max_requests > 0 ? ";" : "");
	if (cut->by_max_requests > 0 && n >= 0 && (size_t)n < size)
		snprintf(buf + n, size - (size_t)n,
			 " %s %s left out by max_requests = %d (0 = no cap)",
			 max, cut->by_max_requests == 1 ? "row was" : "rows were",
			 cfg->max_requests);
	return true;
}

static int check_arrivals(const struct ema_workload_cfg *cfg,
			  struct ema_error *err)
{
	if (!(cfg->rate_rps > 0 && isfinite(cfg->rate_rps)))
		return ema_error_set(err, EMA_ERR_INPUT,
				     "workload: rate_rps must be > 0, got %g", cfg->rate_rps);
	if (cfg->arrival != EMA_ARR_POISSON && cfg->arrival != EMA_ARR_GAMMA)
		return ema_error_set(err, EMA_ERR_INPUT,
				     "workload: unknown arrival kind %d", (int)cfg->arrival);
	if (cfg->arrival == EMA_ARR_GAMMA &&
	    !(cfg->cv > 0 && cfg->cv <= MAX_ARRIVAL_CV))
		return ema_error_set(err, EMA_ERR_INPUT,
				     "workload: gamma arrivals need cv in (0, %g], got %g",
				     MAX_ARRIVAL_CV, cfg->cv);
	if (!(cfg->duration_s >= 0 && isfinite(cfg->duration_s)) || cfg->max_requests < 0)
		return ema_error_set(err, EMA_ERR_INPUT,
				     "workload: duration_s and max_requests must be >= 0, got %g and %d",
				     cfg->duration_s, cfg->max_requests);
	if (cfg->duration_s == 0 && cfg->max_requests == 0)
		return ema_error_set(err, EMA_ERR_INPUT,
				     "workload: synthetic arrivals need duration_s or max_requests");
	if (cfg->max_requests > EMA_WORKLOAD_MAX_REQUESTS ||
	    (cfg->max_requests == 0 &&
	     cfg->rate_rps * cfg->duration_s > EMA_WORKLOAD_MAX_REQUESTS))
		return ema_error_set(err, EMA_ERR_INPUT,
				     "workload: %g requests asked for (rate_rps x duration_s or max_requests); the limit is %ld",
				     cfg->max_requests > 0 ? (double)cfg->max_requests :
				     cfg->rate_rps * cfg->duration_s,
				     EMA_WORKLOAD_MAX_REQUESTS);
	return 0;
}

/* Arrivals of a renewal process from t = 0: the first request comes one
 * gap after the start, as in a Poisson process observed from time 0. */
static int gen_arrivals(const struct ema_workload_cfg *cfg, gsl_rng *r,
			struct ema_workload *out, struct ema_error *err)
{
	double t = 0, k = 0, scale = 0;
	int rc;

	if (cfg->arrival == EMA_ARR_GAMMA) {
		k = 1.0 / (cfg->cv * cfg->cv);
		scale = 1.0 / (cfg->rate_rps * k);   /* mean gap k*scale = 1/rate */
	}
	for (;;) {
		if (cfg->max_requests > 0 && out->n >= (size_t)cfg->max_requests)
			break;
		if (cfg->arrival == EMA_ARR_GAMMA)
			t += gsl_ran_gamma(r, k, scale);
		else
			t += gsl_ran_exponential(r, 1.0 / cfg->rate_rps);
		if (cfg->duration_s > 0 && t >= cfg->duration_s)
			break;
		/* without duration_s, a tiny rate_rps can carry t past what
		 * int64_t ns hold (llround would then be undefined) */
		if (!(t * 1e9 < (double)EMA_WORKLOAD_MAX_ARRIVAL_NS))
			return ema_error_set(err, EMA_ERR_INPUT,
					     "workload: request %zu would arrive at %.3g s, past the limit of 1e9 s (about 31 years); expected a larger rate_rps or a duration_s",
					     out->n + 1, t);
		if (out->n >= (size_t)EMA_WORKLOAD_MAX_REQUESTS)
			return ema_error_set(err, EMA_ERR_INPUT,
					     "workload: more than %ld requests generated; lower rate_rps or duration_s",
					     EMA_WORKLOAD_MAX_REQUESTS);
		rc = ema_workload_reserve(out, out->n + 1, err);
		if (rc)
			return rc;
		out->reqs[out->n].arrival_ns = llround(t * 1e9);
		out->reqs[out->n].prompt_tokens = 1;
		out->reqs[out->n].output_tokens = 1;
		out->n++;
	}
	return 0;
}

static int build_generated(const struct ema_workload_cfg *cfg, uint64_t seed,
			   struct ema_workload *out, struct ema_error *err)
{
	bool lengths_file = cfg->source == EMA_WL_LENGTHS;
	bool need_rows = lengths_file || cfg->prompt.kind == EMA_LEN_EMPIRICAL ||
			 cfg->output.kind == EMA_LEN_EMPIRICAL;
	struct ema_workload rows = { 0 };
	gsl_rng *r_arr = NULL, *r_prompt = NULL, *r_output = NULL, *r_rows = NULL;
	int rc;

	rc = check_arrivals(cfg, err);
	if (rc == 0)
		rc = check_lengths("prompt", &cfg->prompt, lengths_file, err);
	if (rc == 0)
		rc = check_lengths("output", &cfg->output, lengths_file, err);
	if (rc)
		return rc;
	if (need_rows) {
		if (cfg->trace[0] == '\0')
			return ema_error_set(err, EMA_ERR_INPUT,
					     "workload: empirical lengths need a file (workload.trace)");
		rc = ema_trace_read(cfg->trace, cfg->format, &rows, err);
		if (rc)
			return rc;
	}
	r_arr = stream_rng(seed, "arrivals");
	r_prompt = stream_rng(seed, "prompt_tokens");
	r_output = stream_rng(seed, "output_tokens");
	r_rows = stream_rng(seed, "length_rows");
	if (r_arr == NULL || r_prompt == NULL || r_output == NULL || r_rows == NULL) {
		rc = ema_error_set(err, EMA_ERR_NOMEM, "workload: out of memory for a random stream");
		goto out;
	}
	rc = gen_arrivals(cfg, r_arr, out, err);
	if (rc)
		goto out;
	for (size_t i = 0; i < out->n; i++) {
		struct ema_request_spec *q = &out->reqs[i];
		const struct ema_request_spec *row = NULL;

		/* one row per request: a prompt and its output stay paired */
		if (need_rows)
			row = &rows.reqs[gsl_rng_uniform_int(r_rows, (unsigned long)rows.n)];
		q->prompt_tokens = draw_length(&cfg->prompt, lengths_file, r_prompt,
					       row ? row->prompt_tokens : 1);
		q->output_tokens = draw_length(&cfg->output, lengths_file, r_output,
					       row ? row->output_tokens : 1);
	}
out:
	gsl_rng_free(r_arr);
	gsl_rng_free(r_prompt);
	gsl_rng_free(r_output);
	gsl_rng_free(r_rows);
	ema_workload_free(&rows);
	if (rc)
		ema_workload_free(out);
	return rc;
}

int ema_workload_build(const struct ema_workload_cfg *cfg, uint64_t seed,
		       struct ema_workload *out, struct ema_error *err)
{
	return ema_workload_build_cut(cfg, seed, out, NULL, err);
}

int ema_workload_build_cut(const struct ema_workload_cfg *cfg, uint64_t seed,
			   struct ema_workload *out, struct ema_workload_cut *cut,
			   struct ema_error *err)
{
	return ema_workload_build_shared(cfg, seed, out, cut, NULL, err);
}

int ema_workload_build_shared(const struct ema_workload_cfg *cfg, uint64_t seed,
			      struct ema_workload *out, struct ema_workload_cut *cut,
			      struct ema_trace_cache *cache, struct ema_error *err)
{
	struct ema_workload_cut none;

	if (cfg == NULL || out == NULL)
		return ema_error_set(err, EMA_ERR_INTERNAL,
				     "ema_workload_build: NULL argument");
	memset(out, 0, sizeof *out);
	if (cut == NULL)
		cut = &none;
	memset(cut, 0, sizeof *cut);
	switch (cfg->source) {
	case EMA_WL_TRACE:
		return build_trace(cfg, cache, out, cut, err);
	case EMA_WL_SYNTHETIC:
	case EMA_WL_LENGTHS:
		return build_generated(cfg, seed, out, err);
	}
	return ema_error_set(err, EMA_ERR_INPUT,
			     "workload: unknown source %d", (int)cfg->source);
}
