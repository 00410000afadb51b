/* trace_read.c: readers of the request trace formats (Azure 2023/2024,
 * Vidur, BurstGPT, Mooncake JSONL, length-only CSV) into one array of
 * request specs, in a single pass over the file held in memory, so that a
 * 20,000-row trace loads in milliseconds and bad rows fail with
 * "path:line: what was expected". */
#include "workload.h"
#include "workload_priv.h"
#include "json_text.h"
#include "readfile.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_FIELDS 8

/* Seconds and milliseconds in files are bounded so that nanoseconds stay
 * far inside int64_t (about 292 years). */
#define MAX_SECONDS 1e9

const char *const ema_trace_format_names[] = {
	[EMA_TRACE_AUTO] = "auto",
	[EMA_TRACE_AZURE] = "azure",
	[EMA_TRACE_VIDUR] = "vidur",
	[EMA_TRACE_BURSTGPT] = "burstgpt",
	[EMA_TRACE_MOONCAKE] = "mooncake",
	[EMA_TRACE_LENGTHS] = "lengths",
	NULL
};
const char *const ema_workload_source_names[] = { "synthetic", "trace", "lengths", NULL };
const char *const ema_arrival_kind_names[] = { "poisson", "gamma", NULL };
const char *const ema_length_kind_names[] = { "fixed", "uniform", "lognormal", "empirical", NULL };
#define N_FORMATS ((int)(sizeof ema_trace_format_names / sizeof ema_trace_format_names[0]) - 1)

int ema_trace_format_parse(const char *name)
{
	if (name == NULL)
		return -1;
	for (int i = 0; i < N_FORMATS; i++)
		if (strcmp(name, ema_trace_format_names[i]) == 0)
			return i;
	return -1;
}

const char *ema_trace_format_name(enum ema_trace_format fmt)
{
	if ((int)fmt < 0 || (int)fmt >= N_FORMATS)
		return "unknown";
	return ema_trace_format_names[fmt];
}

void ema_workload_free(struct ema_workload *w)
{
	if (w == NULL)
		return;
	free(w->reqs);
	w->reqs = NULL;
	w->n = 0;
	w->cap = 0;
}

int ema_workload_reserve(struct ema_workload *w, size_t need,
			 struct ema_error *err)
{
	struct ema_request_spec *r;
	size_t cap;

	if (need <= w->cap)
		return 0;
	cap = w->cap < 1024 ? 1024 : w->cap;
	while (cap < need)
		cap *= 2;
	r = realloc(w->reqs, cap * sizeof *r);
	if (r == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM,
				     "workload: out of memory for %zu requests", cap);
	w->reqs = r;
	w->cap = cap;
	return 0;
}

/* How the columns of a CSV format map to a request. */
enum time_kind { TIME_NONE, TIME_DATETIME, TIME_SECONDS };

struct csv_format {
	const char *header;
	int n_fields;
	enum time_kind time;
	int time_col, prompt_col, output_col;
	bool skip_zero_output;       /* BurstGPT: 0 response tokens = failed request */
	const char *col[MAX_FIELDS];
};

static const struct csv_format csv_formats[] = {
	[EMA_TRACE_AZURE] = {
		"TIMESTAMP,ContextTokens,GeneratedTokens", 3, TIME_DATETIME,
		0, 1, 2, false,
		{ "TIMESTAMP", "ContextTokens", "GeneratedTokens" } },
	[EMA_TRACE_VIDUR] = {
		"arrived_at,num_prefill_tokens,num_decode_tokens", 3, TIME_SECONDS,
		0, 1, 2, false,
		{ "arrived_at", "num_prefill_tokens", "num_decode_tokens" } },
	[EMA_TRACE_BURSTGPT] = {
		"Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type",
		6, TIME_SECONDS, 0, 2, 3, true,
		{ "Timestamp", "Model", "Request tokens", "Response tokens",
		  "Total tokens", "Log Type" } },
	[EMA_TRACE_LENGTHS] = {
		"num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio",
		4, TIME_NONE, -1, 0, 1, false,
		{ "num_prefill_tokens", "num_decode_tokens", "num_total_tokens",
		  "pd_ratio" } },
};

struct field {
	const char *s;
	size_t n;
};

struct reader {
	const char *path;
	long line;
	struct ema_workload *w;
	struct ema_error *err;
	bool have_prev;
	bool relative;               /* Azure: times count from the first row */
	int64_t origin_ns;           /* Azure: first row's absolute time */
	int64_t prev_ns;
	bool need_times;             /* a replay: a lengths-only file is refused */
	uint32_t **lines;            /* NULL, or where each request's line goes */
	size_t lines_cap;
	size_t skipped;              /* BurstGPT failed rows left out */
};

int ema_trace_max_bytes(size_t *max, struct ema_error *err)
{
	const char *v = getenv("EMA_TRACE_MAX_GIB");
	char *end;
	double gib;

	*max = (size_t)EMA_TRACE_MAX_GIB_DEFAULT << 30;
	if (v == NULL || *v == '\0')
		return EMA_OK;
	errno = 0;
	gib = strtod(v, &end);
	/* decimal only: no hex, inf or nan from strtod */
	if (end == v || *end != '\0' || errno != 0 || !(gib > 0) || gib > 1048576 ||
	    strspn(v, "0123456789.") != strlen(v))
		return ema_error_set(err, EMA_ERR_INPUT, "EMA_TRACE_MAX_GIB=%s: expected the "
				     "largest trace file to read, in GiB (a number > 0, at most "
				     "1048576; default %d)", v, EMA_TRACE_MAX_GIB_DEFAULT);
	*max = (size_t)(gib * 1073741824.0);
	if (*max < 1)
		*max = 1;
	return EMA_OK;
}

/* The whole file in one buffer (base/readfile.c): one read, then pointer
 * walking, which is what makes the single pass cheap. At most
 * EMA_TRACE_MAX_GIB: a trace of endless bytes (/dev/zero, a FIFO fed by
 * `yes`) fails there instead of when the memory is gone. */
static int read_all(const char *path, char **buf, size_t *len,
		    struct ema_error *err)
{
	size_t max;
	int rc = ema_trace_max_bytes(&max, err);

	if (rc != EMA_OK)
		return rc;
	return ema_read_file_limit(path, "a trace file", max,
				   "EMA_TRACE_MAX_GIB=N raises the limit to N GiB", buf, len, err);
}

/* Next line of [*p, end): LF or CRLF, the last one possibly unterminated. */
static bool next_line(const char **p, const char *end, struct field *line)
{
	const char *s = *p, *nl;

	if (s >= end)
		return false;
	nl = memchr(s, '\n', (size_t)(end - s));
	if (nl == NULL)
		nl = end;
	line->s = s;
	line->n = (size_t)(nl - s);
	if (line->n > 0 && s[line->n - 1] == '\r')
		line->n--;
	*p = nl < end ? nl + 1 : end;
	return true;
}

static bool line_is_blank(const struct field *l)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->s[i] != ' ' && l->s[i] != '\t')
			return false;
	return true;
}

static bool line_equals(const struct field *l, const char *s)
{
	size_t n = strlen(s);

	return l->n == n && memcmp(l->s, s, n) == 0;
}

/* Splits on commas (none of these formats quotes its fields); returns the
 * number of fields, which may exceed max (the extra ones are not stored). */
static int split_csv(const struct field *l, struct field *f, int max)
{
	const char *s = l->s, *end = l->s + l->n, *c;
	int k = 0;

	for (;;) {
		c = memchr(s, ',', (size_t)(end - s));
		if (c == NULL)
			c = end;
		if (k < max) {
			f[k].s = s;
			f[k].n = (size_t)(c - s);
		}
		k++;
		if (c == end)
			return k;
		s = c + 1;
	}
}

static void trim(struct field *f)
{
	while (f->n > 0 && (f->s[0] == ' ' || f->s[0] == '\t')) {
		f->s++;
		f->n--;
	}
	while (f->n > 0 && (f->s[f->n - 1] == ' ' || f->s[f->n - 1] == '\t'))
		f->n--;
}

/* Shows a field in a message without flooding it. */
static int shown(const struct field *f)
{
	return f->n > 40 ? 40 : (int)f->n;
}

/* A whole token count: digits, optionally followed by ".0..." because
 * pandas writes integer columns with NaNs as floats. */
static int parse_tokens(struct reader *r, struct field f, const char *col,
			long *out)
{
	size_t i = 0;
	long v = 0;
	bool neg = false;

	trim(&f);
	if (i < f.n && (f.s[i] == '-' || f.s[i] == '+'))
		neg = f.s[i++] == '-';
	if (i >= f.n || f.s[i] < '0' || f.s[i] > '9')
		goto bad;
	for (; i < f.n && f.s[i] >= '0' && f.s[i] <= '9'; i++)
		if (v <= EMA_WORKLOAD_MAX_TOKENS)
			v = v * 10 + (f.s[i] - '0');
	if (i < f.n && f.s[i] == '.')
		for (i++; i < f.n && f.s[i] == '0'; i++)
			;
	if (i != f.n)
		goto bad;
	if (neg && v != 0)
		return ema_error_at(r->err, r->path, r->line,
				    "expected a token count >= 0 in column %s, got '%.*s'",
				    col, shown(&f), f.s);
	if (v > EMA_WORKLOAD_MAX_TOKENS)
		return ema_error_at(r->err, r->path, r->line,
				    "token count '%.*s' in column %s is absurd (more than %ld)",
				    shown(&f), f.s, col, EMA_WORKLOAD_MAX_TOKENS);
	*out = v;
	return 0;
bad:
	return ema_error_at(r->err, r->path, r->line,
			    "expected a whole number of tokens in column %s, got '%.*s'",
			    col, shown(&f), f.s);
}

/* Seconds as written by Vidur or BurstGPT, to the nanosecond: the decimal
 * digits are read exactly, and only an exponent falls back to strtod. */
static int parse_seconds(struct reader *r, struct field f, const char *col,
			 int64_t *out)
{
	char tmp[64];
	int64_t sec = 0, frac = 0;
	size_t i = 0;
	int digits = 0, nd = 0;
	double d;
	char *endp;

	trim(&f);
	if (f.n == 0 || f.n >= sizeof tmp)
		goto bad;
	if (memchr(f.s, 'e', f.n) != NULL || memchr(f.s, 'E', f.n) != NULL) {
		/* an exponent, and nothing strtod would take besides a decimal
		 * number: no hex (0x1e3 is 483 to strtod), inf or nan */
		size_t k = f.s[0] == '+' || f.s[0] == '-' ? 1 : 0, digits_seen = 0;

		for (; k < f.n && ((f.s[k] >= '0' && f.s[k] <= '9') || f.s[k] == '.'); k++)
			digits_seen += f.s[k] != '.';
		if (digits_seen == 0 || k == f.n || (f.s[k] != 'e' && f.s[k] != 'E'))
			goto bad;
		k++;
		if (k < f.n && (f.s[k] == '+' || f.s[k] == '-'))
			k++;
		if (k == f.n || strspn(f.s + k, "0123456789") < f.n - k)
			goto bad;
		memcpy(tmp, f.s, f.n);
		tmp[f.n] = '\0';
		errno = 0;
		d = strtod(tmp, &endp);
		if (*endp != '\0' || errno != 0 || !isfinite(d))
			goto bad;
		if (d < 0 || d >= MAX_SECONDS)
			goto range;
		*out = llround(d * 1e9);
		return 0;
	}
	if (f.s[0] == '-')
		goto range;
	if (f.s[0] == '+')
		i++;
	for (; i < f.n && f.s[i] >= '0' && f.s[i] <= '9'; i++, digits++) {
		sec = sec * 10 + (f.s[i] - '0');
		if (sec >= (int64_t)MAX_SECONDS)
			goto range;
	}
	if (i < f.n && f.s[i] == '.') {
		for (i++; i < f.n && f.s[i] >= '0' && f.s[i] <= '9'; i++, digits++, nd++) {
			if (nd < 9)
				frac = frac * 10 + (f.s[i] - '0');
			else if (nd == 9 && f.s[i] >= '5')
				frac++;           /* round the tenth digit half up */
		}
		for (int k = nd; k < 9; k++)
			frac *= 10;
	}
	if (i != f.n || digits == 0)
		goto bad;
	*out = sec * 1000000000LL + frac;
	return 0;
bad:
	return ema_error_at(r->err, r->path, r->line,
			    "expected a time in seconds in column %s, got '%.*s'",
			    col, shown(&f), f.s);
range:
	return ema_error_at(r->err, r->path, r->line,
			    "time '%.*s' in column %s out of range (expected 0 <= seconds < 1e9)",
			    shown(&f), f.s, col);
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's
 * days_from_civil): exact and free of time zones, unlike mktime. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era;
	int64_t yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m)
{
	static const int dm[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return m == 2 && leap ? 29 : dm[m - 1];
}

static inline bool take_digits(const char *s, size_t n, size_t *i, int count, int *v)
{
	*v = 0;
	if (*i + (size_t)count > n)
		return false;
	for (int k = 0; k < count; k++, (*i)++) {
		if (s[*i] < '0' || s[*i] > '9')
			return false;
		*v = *v * 10 + (s[*i] - '0');
	}
	return true;
}

/* One separator out of `any` (e.g. "T " for the date-time separator). */
static inline bool take_char(const char *s, size_t n, size_t *i, const char *any)
{
	if (*i >= n || s[*i] == '\0')
		return false;
	/* (a set of one or two: no strchr call, five times a line) */
	for (; *any != '\0'; any++)
		if (*any == s[*i]) {
			(*i)++;
			return true;
		}
	return false;
}

/* "YYYY-MM-DD HH:MM:SS[.f{1,9}][Z|+HH:MM|-HH:MM]" to ns since the Unix
 * epoch. Returns NULL or what was wrong. The fraction is read as an
 * integer so the 7-digit Azure stamps stay exact (a double of the seconds
 * since 1970 would keep only about 0.2 us). */
static const char *parse_datetime(const char *s, size_t n, int64_t *out)
{
	size_t i = 0;
	int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0, nd = 0;
	int64_t frac = 0, t;

	if (!take_digits(s, n, &i, 4, &y) || !take_char(s, n, &i, "-") ||
	    !take_digits(s, n, &i, 2, &mo) || !take_char(s, n, &i, "-") ||
	    !take_digits(s, n, &i, 2, &d) || !take_char(s, n, &i, " T") ||
	    !take_digits(s, n, &i, 2, &h) || !take_char(s, n, &i, ":") ||
	    !take_digits(s, n, &i, 2, &mi) || !take_char(s, n, &i, ":") ||
	    !take_digits(s, n, &i, 2, &sec))
		return "expected YYYY-MM-DD HH:MM:SS[.fffffffff][+00:00]";
	if (i < n && s[i] == '.') {
		for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++, nd++) {
			if (nd >= 9)
				return "more than 9 fraction digits (finer than a nanosecond)";
			frac = frac * 10 + (s[i] - '0');
		}
		if (nd == 0)
			return "expected digits after the decimal point";
		for (int k = nd; k < 9; k++)
			frac *= 10;
	}
	if (i < n && (s[i] == 'Z' || s[i] == 'z')) {
		i++;
	} else if (i < n && (s[i] == '+' || s[i] == '-')) {
		sign = s[i++] == '-' ? -1 : 1;
		if (!take_digits(s, n, &i, 2, &oh) || !take_char(s, n, &i, ":") ||
		    !take_digits(s, n, &i, 2, &om) || oh > 23 || om > 59)
			return "expected a UTC offset +HH:MM";
	}
	if (i != n)
		return "unexpected text after the time";
	if (y < 1970 || y > 2200)
		return "year out of range 1970..2200";
	if (mo < 1 || mo > 12)
		return "month out of range 1..12";
	if (d < 1 || d > days_in_month(y, mo))
		return "day out of range for the month";
	if (h > 23 || mi > 59 || sec > 59)
		return "time of day out of range";
	t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
	/* local = UTC + offset, so UTC = local - offset */
	t -= sign * (oh * 3600 + om * 60);
	*out = t * 1000000000LL + frac;
	return NULL;
}

/* A row's time against the previous one, then the row itself. Token
 * counts of 0 are real (a request cut off before its first token, an
 * empty prompt after templating), but the serving model needs at least
 * one token of prefill and one decode step, so both clamp to 1. */
static int add_row(struct reader *r, int64_t t_ns, long prompt, long output)
{
	struct ema_request_spec *q;
	int rc;

	if (r->have_prev && t_ns < r->prev_ns)
		return ema_error_at(r->err, r->path, r->line,
				    "timestamp goes backwards (%.9f s < previous %.9f s)",
				    (double)(t_ns - r->origin_ns) / 1e9,
				    (double)(r->prev_ns - r->origin_ns) / 1e9);
	if (!r->have_prev && r->relative)
		r->origin_ns = t_ns;
	/* Azure dates may lie up to 230 years apart, which fits in int64_t
	 * ns but not in the 1e9 s every other time is held to */
	if (r->relative && t_ns - r->origin_ns >= EMA_WORKLOAD_MAX_ARRIVAL_NS)
		return ema_error_at(r->err, r->path, r->line,
				    "timestamp is %.0f s after the first row; expected less than 1e9 s (about 31 years)",
				    (double)(t_ns - r->origin_ns) / 1e9);
	r->have_prev = true;
	r->prev_ns = t_ns;
	rc = ema_workload_reserve(r->w, r->w->n + 1, r->err);
	if (rc)
		return rc;
	if (r->lines != NULL && r->lines_cap < r->w->cap) {
		uint32_t *nl = realloc(*r->lines, r->w->cap * sizeof *nl);

		if (nl == NULL)
			return ema_error_set(r->err, EMA_ERR_NOMEM,
					     "workload: out of memory for %zu line numbers",
					     r->w->cap);
		*r->lines = nl;
		r->lines_cap = r->w->cap;
	}
	if (r->lines != NULL)
		(*r->lines)[r->w->n] = r->line > (long)UINT32_MAX ? UINT32_MAX :
				       (uint32_t)r->line;
	q = &r->w->reqs[r->w->n++];
	q->arrival_ns = t_ns;
	q->prompt_tokens = (int32_t)(prompt < 1 ? 1 : prompt);
	q->output_tokens = (int32_t)(output < 1 ? 1 : output);
	return 0;
}

static int csv_row(struct reader *r, const struct csv_format *cf,
		   const struct field *l, bool *skipped)
{
	struct field f[MAX_FIELDS];
	int64_t t = 0;
	long prompt, output;
	const char *why;
	int k, rc;

	k = split_csv(l, f, MAX_FIELDS);
	if (k != cf->n_fields)
		return ema_error_at(r->err, r->path, r->line,
				    "expected %d fields (%s), got %d",
				    cf->n_fields, cf->header, k);
	if (cf->time == TIME_DATETIME) {
		struct field tf = f[cf->time_col];

		trim(&tf);
		why = parse_datetime(tf.s, tf.n, &t);
		if (why != NULL)
			return ema_error_at(r->err, r->path, r->line,
					    "bad timestamp '%.*s': %s",
					    shown(&tf), tf.s, why);
	} else if (cf->time == TIME_SECONDS) {
		rc = parse_seconds(r, f[cf->time_col], cf->col[cf->time_col], &t);
		if (rc)
			return rc;
	}
	rc = parse_tokens(r, f[cf->prompt_col], cf->col[cf->prompt_col], &prompt);
	if (rc)
		return rc;
	rc = parse_tokens(r, f[cf->output_col], cf->col[cf->output_col], &output);
	if (rc)
		return rc;
	if (cf->skip_zero_output && output == 0) {
		/* a failed request never reached the server's batch; its time
		 * still has to be in order */
		if (r->have_prev && t < r->prev_ns)
			return ema_error_at(r->err, r->path, r->line,
					    "timestamp goes backwards (%.9f s < previous %.9f s)",
					    (double)(t - r->origin_ns) / 1e9,
					    (double)(r->prev_ns - r->origin_ns) / 1e9);
		*skipped = true;
		r->skipped++;
		return 0;
	}
	return add_row(r, t, prompt, output);
}

/* Mooncake token counts are JSON numbers; valueint is an int and
 * saturates, so the double is checked instead. */
static int json_count(struct reader *r, const cJSON *o, const char *key,
		      double max, double *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (v == NULL)
		return ema_error_at(r->err, r->path, r->line,
				    "missing key \"%s\"", key);
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0)
		return ema_error_at(r->err, r->path, r->line,
				    "expected a number >= 0 for \"%s\"", key);
	if (v->valuedouble > max)
		return ema_error_at(r->err, r->path, r->line,
				    "\"%s\" = %.17g is absurd (more than %.17g)",
				    key, v->valuedouble, max);
	*out = v->valuedouble;
	return 0;
}

static int json_row(struct reader *r, const struct field *l)
{
	const char *endp = NULL;
	cJSON *o;
	double ts, in, outp;
	int rc;

	{
		/* what cJSON would let through: a raw control character or an
		 * escaped NUL inside a string, bytes that are not UTF-8 */
		size_t off;
		const char *why = ema_json_check_text(l->s, l->n, &off);

		if (why != NULL)
			return ema_error_set(r->err, EMA_ERR_INPUT, "%s:%ld:%ld: %s", r->path,
					     r->line, (long)off + 1, why);
	}
	o = cJSON_ParseWithLengthOpts(l->s, l->n, &endp, 0);
	if (o == NULL) {
		long col = endp != NULL && endp >= l->s ? (long)(endp - l->s) + 1 : 1;

		return ema_error_set(r->err, EMA_ERR_INPUT,
				     "%s:%ld:%ld: expected a JSON object {\"timestamp\": ms, \"input_length\": n, \"output_length\": n}",
				     r->path, r->line, col);
	}
	if (endp != NULL) {
		const char *q = endp, *lend = l->s + l->n;

		while (q < lend && (*q == ' ' || *q == '\t'))
			q++;
		if (q < lend) {
			rc = ema_error_set(r->err, EMA_ERR_INPUT,
					   "%s:%ld:%ld: unexpected text after the JSON object",
					   r->path, r->line, (long)(q - l->s) + 1);
			goto out;
		}
	}
	if (!cJSON_IsObject(o)) {
		rc = ema_error_at(r->err, r->path, r->line,
				  "expected a JSON object per line");
		goto out;
	}
	/* cJSON keeps both of a repeated key and finds the first: which
	 * value was meant cannot be known */
	for (const cJSON *a = o->child; a != NULL; a = a->next)
		for (const cJSON *b = a->next; b != NULL; b = b->next)
			if (a->string != NULL && b->string != NULL && strcmp(a->string, b->string) == 0) {
				rc = ema_error_at(r->err, r->path, r->line,
						  "key \"%s\" given twice", a->string);
				goto out;
			}
	rc = json_count(r, o, "timestamp", MAX_SECONDS * 1e3, &ts);
	if (rc == 0)
		rc = json_count(r, o, "input_length", EMA_WORKLOAD_MAX_TOKENS, &in);
	if (rc == 0)
		rc = json_count(r, o, "output_length", EMA_WORKLOAD_MAX_TOKENS, &outp);
	if (rc == 0 && (in != floor(in) || outp != floor(outp)))
		rc = ema_error_at(r->err, r->path, r->line,
				  "expected whole numbers of tokens for \"input_length\" and \"output_length\"");
	if (rc == 0)
		rc = add_row(r, llround(ts * 1e6), (long)in, (long)outp);
out:
	cJSON_Delete(o);
	return rc;
}

static enum ema_trace_format detect(const struct field *first)
{
	size_t i = 0;

	while (i < first->n && (first->s[i] == ' ' || first->s[i] == '\t'))
		i++;
	if (i < first->n && first->s[i] == '{')
		return EMA_TRACE_MOONCAKE;
	for (int f = EMA_TRACE_AZURE; f < N_FORMATS; f++)
		if (f != EMA_TRACE_MOONCAKE && line_equals(first, csv_formats[f].header))
			return (enum ema_trace_format)f;
	return EMA_TRACE_AUTO;
}

static bool all_blank(const char *p, const char *end)
{
	for (; p < end; p++)
		if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
			return false;
	return true;
}

static int parse(struct reader *r, const char *buf, size_t len,
		 enum ema_trace_format fmt)
{
	const char *p = buf, *end = buf + len;
	struct field l;
	bool skipped;
	int rc;

	if (len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
		p += 3;
	r->line = 1;
	/* nothing but blanks: the header (or first record) is what line 1
	 * lacks */
	if (all_blank(p, end)) {
		if (fmt == EMA_TRACE_AUTO)
			return ema_error_at(r->err, r->path, 1,
					    "expected the header line %s (azure), %s (vidur), %s (burstgpt) or %s (lengths), or a JSON object per line (mooncake); the file is empty",
					    csv_formats[EMA_TRACE_AZURE].header,
					    csv_formats[EMA_TRACE_VIDUR].header,
					    csv_formats[EMA_TRACE_BURSTGPT].header,
					    csv_formats[EMA_TRACE_LENGTHS].header);
		if (fmt == EMA_TRACE_MOONCAKE)
			return ema_error_at(r->err, r->path, 1,
					    "expected a JSON object per line; the file is empty");
		return ema_error_at(r->err, r->path, 1,
				    "expected the header line %s; the file is empty",
				    csv_formats[fmt].header);
	}
	next_line(&p, end, &l);
	if (fmt == EMA_TRACE_AUTO) {
		fmt = detect(&l);
		if (fmt == EMA_TRACE_AUTO)
			return ema_error_at(r->err, r->path, 1,
					    "unknown trace format: expected a header %s (azure), %s (vidur), %s (burstgpt), %s (lengths), or a JSON object per line (mooncake)",
					    csv_formats[EMA_TRACE_AZURE].header,
					    csv_formats[EMA_TRACE_VIDUR].header,
					    csv_formats[EMA_TRACE_BURSTGPT].header,
					    csv_formats[EMA_TRACE_LENGTHS].header);
	}
	if (fmt == EMA_TRACE_LENGTHS && r->need_times)
		return ema_error_at(r->err, r->path, 1,
				    "a lengths-only file has no arrival times; expected \"source\": \"lengths\" (arrivals generated at rate_rps, lengths from this file) instead of \"trace\"");
	r->relative = fmt == EMA_TRACE_AZURE;
	if (fmt == EMA_TRACE_MOONCAKE) {
		do {
			if (line_is_blank(&l))
				continue;
			rc = json_row(r, &l);
			if (rc)
				return rc;
		} while (r->line++, next_line(&p, end, &l));
	} else {
		const struct csv_format *cf = &csv_formats[fmt];

		if (!line_equals(&l, cf->header))
			return ema_error_at(r->err, r->path, 1,
					    "expected header %s", cf->header);
		while (r->line++, next_line(&p, end, &l)) {
			if (line_is_blank(&l))
				continue;
			skipped = false;
			rc = csv_row(r, cf, &l, &skipped);
			if (rc)
				return rc;
		}
	}
	/* only a CSV header gets here without a request (a blank mooncake
	 * file is empty): the first row belongs on line 2 */
	if (r->w->n == 0 && r->skipped > 0)
		return ema_error_at(r->err, r->path, 2,
				    "expected at least one request after the header (%zu rows with 0 response tokens, failed requests, were left out)",
				    r->skipped);
	if (r->w->n == 0)
		return ema_error_at(r->err, r->path, 2,
				    "expected at least one request after the header");
	/* Azure stamps are wall-clock dates: the run starts at the first. */
	if (fmt == EMA_TRACE_AZURE)
		for (size_t i = 0; i < r->w->n; i++)
			r->w->reqs[i].arrival_ns -= r->origin_ns;
	return 0;
}

int ema_trace_read_ex(const char *path, enum ema_trace_format fmt,
		      bool need_times, struct ema_workload *out,
		      uint32_t **lines, struct ema_error *err)
{
	struct reader r = { 0 };
	char *buf = NULL;
	size_t len = 0;
	int rc;

	if (out == NULL || path == NULL)
		return ema_error_set(err, EMA_ERR_INTERNAL,
				     "ema_trace_read: NULL argument");
	memset(out, 0, sizeof *out);
	if (lines != NULL)
		*lines = NULL;
	if ((int)fmt < 0 || (int)fmt >= N_FORMATS)
		return ema_error_at(err, path, 0, "unknown trace format %d", (int)fmt);
	rc = read_all(path, &buf, &len, err);
	if (rc)
		return rc;
	r.path = path;
	r.w = out;
	r.err = err;
	r.need_times = need_times;
	r.lines = lines;
	rc = parse(&r, buf, len, fmt);
	free(buf);
	if (rc) {
		ema_workload_free(out);
		if (lines != NULL) {
			free(*lines);
			*lines = NULL;
		}
	}
	return rc;
}

int ema_trace_read(const char *path, enum ema_trace_format fmt,
		   struct ema_workload *out, struct ema_error *err)
{
	return ema_trace_read_ex(path, fmt, false, out, NULL, err);
}
