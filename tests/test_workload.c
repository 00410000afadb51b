/* test_workload.c: unit tests of traces/: every trace format on small
 * hand-checked fixtures (LF, CRLF, BOM, no final newline), every input
 * error with its "file:line:" message, the generators' statistics and
 * determinism, trace windows; and, built again as
 * tests/test_workload_traces (EMA_TEST_TRACES, tests/test_main.h), replay
 * of the public traces, which that program skips without. */
#include "test_main.h"
#include "workload.h"

#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void write_temp(const char *data, size_t n, char *path, size_t pn);

struct expect {
	int64_t t;
	int32_t p, o;
};

static void fixture(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/tests/data/traces/%s", ema_test_srcdir(), name);
}

static void check_reqs(const struct ema_workload *w, const struct expect *e,
		       size_t n)
{
	CU_ASSERT_EQUAL_FATAL(w->n, n);
	for (size_t i = 0; i < n; i++) {
		CU_ASSERT_EQUAL(w->reqs[i].arrival_ns, e[i].t);
		CU_ASSERT_EQUAL(w->reqs[i].prompt_tokens, e[i].p);
		CU_ASSERT_EQUAL(w->reqs[i].output_tokens, e[i].o);
		if (w->reqs[i].arrival_ns != e[i].t)
			fprintf(stderr, "row %zu: got %lld ns, want %lld\n", i,
				(long long)w->reqs[i].arrival_ns, (long long)e[i].t);
	}
}

static void read_fixture(const char *name, enum ema_trace_format fmt,
			 const struct expect *e, size_t n)
{
	struct ema_workload w;
	struct ema_error err = { 0 };
	char path[4096];
	int rc;

	fixture(path, sizeof path, name);
	rc = ema_trace_read(path, fmt, &w, &err);
	if (rc)
		fprintf(stderr, "%s\n", err.msg);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	check_reqs(&w, e, n);
	ema_workload_free(&w);
	/* AUTO must find the same format */
	rc = ema_trace_read(path, EMA_TRACE_AUTO, &w, &err);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	check_reqs(&w, e, n);
	ema_workload_free(&w);
}

static const struct expect azure_2023[] = {
	{ 0, 374, 44 },
	{ 4314579000LL, 396, 109 },
	{ 4314579000LL, 879, 1 },        /* 0 generated tokens clamps to 1 */
	{ 13319410100LL, 1, 16 },        /* 0 context tokens clamps to 1 */
	{ 2653319410000LL, 91, 16 },
};

static const struct expect azure_2024[] = {
	{ 0, 10, 20 },
	{ 500000000LL, 11, 21 },
	{ 1123456789LL, 12, 22 },
	{ 86401100000000LL, 13, 23 },    /* across 29 Feb 2024 */
	{ 26524800999999999LL, 14, 24 },
	{ 26524801000000000LL, 15, 25 }, /* across the new year */
};

static const struct expect vidur[] = {
	{ 0, 100, 10 }, { 500000000LL, 200, 20 }, { 1234567891LL, 300, 30 },
	{ 2000000000LL, 400, 40 }, { 15000000000LL, 500, 50 },
};

static const struct expect burstgpt[] = {
	{ 5000000000LL, 472, 18 },       /* the failed row at 45 s is skipped */
	{ 118000000000LL, 417, 276 },
	{ 118250000000LL, 1, 5 },
};

static const struct expect mooncake[] = {
	{ 0, 40160, 6 }, { 0, 512, 4 }, { 1500000000LL, 1024, 1 },
	{ 2000500000LL, 7, 300 },
};

static const struct expect lengths[] = {
	{ 0, 74, 918 }, { 0, 290, 905 }, { 0, 1402, 711 }, { 0, 2497, 918 },
	{ 0, 5, 3 },
};

static void test_azure_2023(void)
{
	read_fixture("azure_2023.csv", EMA_TRACE_AZURE, azure_2023, 5);
}

static void test_azure_2024(void)
{
	read_fixture("azure_2024.csv", EMA_TRACE_AZURE, azure_2024, 6);
}

/* A UTC offset moves the instant: 01:00+01:00 is 00:00 UTC. */
static void test_utc_offset(void)
{
	static const char text[] = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
		"2024-01-01 01:00:00+01:00,1,2\n"
		"2023-12-31T23:30:00.25-00:30,3,4\n"
		"2024-01-01 00:00:01Z,5,6\n";
	static const struct expect e[] = {
		{ 0, 1, 2 }, { 250000000LL, 3, 4 }, { 1000000000LL, 5, 6 }
	};
	struct ema_workload w;
	struct ema_error err = { 0 };
	char path[4096];

	write_temp(text, sizeof text - 1, path, sizeof path);
	CU_ASSERT_EQUAL_FATAL(ema_trace_read(path, EMA_TRACE_AUTO, &w, &err), 0);
	check_reqs(&w, e, 3);
	ema_workload_free(&w);
	unlink(path);
}

static void test_vidur(void)
{
	read_fixture("vidur.csv", EMA_TRACE_VIDUR, vidur, 5);
}

static void test_burstgpt(void)
{
	read_fixture("burstgpt.csv", EMA_TRACE_BURSTGPT, burstgpt, 3);
}

static void test_mooncake(void)
{
	read_fixture("mooncake.jsonl", EMA_TRACE_MOONCAKE, mooncake, 4);
}

static void test_lengths(void)
{
	read_fixture("lengths.csv", EMA_TRACE_LENGTHS, lengths, 5);
}

/* Writes bytes to a fresh temporary file; path receives its name. */
static void write_temp(const char *data, size_t n, char *path, size_t pn)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	snprintf(path, pn, "%s/ema_test_wl_XXXXXX", dir ? dir : "/tmp");
	fd = mkstemp(path);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(write(fd, data, n) == (ssize_t)n);
	close(fd);
}

static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *b = malloc(1 << 16);

	CU_ASSERT_FATAL(f != NULL && b != NULL);
	*n = fread(b, 1, 1 << 16, f);
	fclose(f);
	return b;
}

/* Every fixture rewritten with LF or CRLF, with or without a final
 * newline and a BOM, must read to the same requests. */
static void test_line_endings(void)
{
	static const char *const names[] = {
		"azure_2023.csv", "azure_2024.csv", "vidur.csv", "burstgpt.csv",
		"mooncake.jsonl", "lengths.csv", NULL
	};

	for (int k = 0; names[k] != NULL; k++) {
		struct ema_workload ref, w;
		struct ema_error err = { 0 };
		char path[4096], tmp[4096];
		size_t n, m;
		char *src, *dst;

		fixture(path, sizeof path, names[k]);
		CU_ASSERT_EQUAL_FATAL(ema_trace_read(path, EMA_TRACE_AUTO, &ref, &err), 0);
		src = slurp(path, &n);
		dst = malloc(2 * n + 8);
		for (int v = 0; v < 8; v++) {
			bool crlf = v & 1, final = v & 2, bom = v & 4;
			size_t i = 0;

			m = 0;
			if (n >= 3 && memcmp(src, "\xEF\xBB\xBF", 3) == 0)
				i = 3;
			if (bom) {
				memcpy(dst, "\xEF\xBB\xBF", 3);
				m = 3;
			}
			for (; i < n; i++) {
				if (src[i] == '\r')
					continue;
				if (src[i] == '\n' && crlf)
					dst[m++] = '\r';
				dst[m++] = src[i];
			}
			while (m > 0 && (dst[m - 1] == '\n' || dst[m - 1] == '\r'))
				m--;
			if (final) {
				if (crlf)
					dst[m++] = '\r';
				dst[m++] = '\n';
			}
			write_temp(dst, m, tmp, sizeof tmp);
			CU_ASSERT_EQUAL(ema_trace_read(tmp, EMA_TRACE_AUTO, &w, &err), 0);
			CU_ASSERT_EQUAL(w.n, ref.n);
			if (w.n == ref.n)
				CU_ASSERT(memcmp(w.reqs, ref.reqs, w.n * sizeof *w.reqs) == 0);
			ema_workload_free(&w);
			unlink(tmp);
		}
		free(src);
		free(dst);
		ema_workload_free(&ref);
	}
}

struct bad_case {
	enum ema_trace_format fmt;
	const char *text;
	const char *want;  /* expected right after "path" when it starts with ':',
			    * else anywhere after it */
};

#define AZ "TIMESTAMP,ContextTokens,GeneratedTokens\r\n"
#define AZ1 AZ "2023-11-16 18:15:46.6805900,374,44\r\n"
#define MC1 "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 6}\n"

static const struct bad_case bad_cases[] = {
	{ EMA_TRACE_AUTO, "hello,world\n1,2\n", ":1: unknown trace format: expected a header" },
	{ EMA_TRACE_AZURE, "TIMESTAMP,Context,Generated\n2023-11-16 18:15:46,1,1\n",
	  ":1: expected header TIMESTAMP,ContextTokens,GeneratedTokens" },
	{ EMA_TRACE_AZURE, "num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n1,2,3,0.5\n",
	  ":1: expected header TIMESTAMP,ContextTokens,GeneratedTokens" },
	{ EMA_TRACE_AZURE, AZ "2023-11-16 18:15:46.6805900,374\r\n",
	  ":2: expected 3 fields (TIMESTAMP,ContextTokens,GeneratedTokens), got 2" },
	{ EMA_TRACE_AZURE, AZ1 "2023-11-16 18:15:47,1,2,3\r\n", ":3: expected 3 fields" },
	{ EMA_TRACE_AZURE, AZ "2023-11-16 18:15:46.6805900,abc,44\r\n",
	  ":2: expected a whole number of tokens in column ContextTokens, got 'abc'" },
	{ EMA_TRACE_AZURE, AZ "2023-11-16 18:15:46.6805900,,44\r\n",
	  ":2: expected a whole number of tokens in column ContextTokens, got ''" },
	{ EMA_TRACE_AZURE, AZ "2023-11-16 18:15:46.6805900,12x,44\r\n",
	  ":2: expected a whole number of tokens in column ContextTokens, got '12x'" },
	{ EMA_TRACE_AZURE, AZ "2023-11-16 18:15:46.6805900,374,-4\r\n",
	  ":2: expected a token count >= 0 in column GeneratedTokens, got '-4'" },
	{ EMA_TRACE_AZURE, AZ "2023-11-16 18:15:46.6805900,20000000,4\r\n",
	  ":2: token count '20000000' in column ContextTokens is absurd (more than 10000000)" },
	{ EMA_TRACE_AZURE, AZ "2023-11-16 18:15:46.6805900,1,99999999999999999999999\r\n",
	  ":2: token count '99999999999999999999999' in column GeneratedTokens is absurd" },
	{ EMA_TRACE_AZURE, AZ "2023-13-16 18:15:46,1,1\r\n",
	  ":2: bad timestamp '2023-13-16 18:15:46': month out of range 1..12" },
	{ EMA_TRACE_AZURE, AZ "2023-02-29 00:00:00,1,1\r\n",
	  ":2: bad timestamp '2023-02-29 00:00:00': day out of range for the month" },
	{ EMA_TRACE_AZURE, AZ "2023-11-16 24:00:00,1,1\r\n", "time of day out of range" },
	{ EMA_TRACE_AZURE, AZ "1969-12-31 23:59:59,1,1\r\n", "year out of range" },
	{ EMA_TRACE_AZURE, AZ "2023-11-16 18:15,1,1\r\n",
	  ":2: bad timestamp '2023-11-16 18:15': expected YYYY-MM-DD HH:MM:SS" },
	{ EMA_TRACE_AZURE, AZ "2023/11/16 18:15:46,1,1\r\n", "expected YYYY-MM-DD HH:MM:SS" },
	{ EMA_TRACE_AZURE, AZ "2023-11-16 18:15:46.1234567891,1,1\r\n",
	  "more than 9 fraction digits" },
	{ EMA_TRACE_AZURE, AZ "2023-11-16 18:15:46.,1,1\r\n", "expected digits after the decimal point" },
	{ EMA_TRACE_AZURE, AZ "2023-11-16 18:15:46.5+0000,1,1\r\n", "expected a UTC offset +HH:MM" },
	{ EMA_TRACE_AZURE, AZ "2023-11-16 18:15:46.5 UTC,1,1\r\n", "unexpected text after the time" },
	{ EMA_TRACE_AZURE, AZ1 "2023-11-16 18:15:45.6805900,1,1\r\n",
	  ":3: timestamp goes backwards (-1.000000000 s < previous 0.000000000 s)" },
	/* empty: line 1 lacks the header; a header alone: line 2 lacks a row */
	{ EMA_TRACE_AZURE, AZ, ":2: expected at least one request after the header" },
	{ EMA_TRACE_AUTO, AZ "\r\n  \r\n", ":2: expected at least one request after the header" },
	{ EMA_TRACE_AUTO, "", ":1: expected the header line TIMESTAMP,ContextTokens,GeneratedTokens (azure), " },
	{ EMA_TRACE_AUTO, "\xEF\xBB\xBF\r\n", ":1: expected the header line " },
	{ EMA_TRACE_AUTO, " \n\n", "or a JSON object per line (mooncake); the file is empty" },
	{ EMA_TRACE_VIDUR, "",
	  ":1: expected the header line arrived_at,num_prefill_tokens,num_decode_tokens; the file is empty" },
	{ EMA_TRACE_MOONCAKE, "\n\n", ":1: expected a JSON object per line; the file is empty" },
	/* Azure dates 37 years apart: beyond the 1e9 s every time keeps to */
	{ EMA_TRACE_AZURE, AZ "2023-01-01 00:00:00,1,1\r\n2023-01-02 00:00:00,1,1\r\n2060-01-01 00:00:00,1,1\r\n",
	  ":4: timestamp is 1167609600 s after the first row; expected less than 1e9 s" },
	{ EMA_TRACE_VIDUR, "arrived_at,num_prefill_tokens,num_decode_tokens\nx,1,1\n",
	  ":2: expected a time in seconds in column arrived_at, got 'x'" },
	{ EMA_TRACE_VIDUR, "arrived_at,num_prefill_tokens,num_decode_tokens\n1.2.3,1,1\n",
	  ":2: expected a time in seconds in column arrived_at" },
	{ EMA_TRACE_VIDUR, "arrived_at,num_prefill_tokens,num_decode_tokens\n-1,1,1\n",
	  ":2: time '-1' in column arrived_at out of range" },
	{ EMA_TRACE_VIDUR, "arrived_at,num_prefill_tokens,num_decode_tokens\n1e300,1,1\n",
	  ":2: time '1e300' in column arrived_at out of range" },
	{ EMA_TRACE_VIDUR, "arrived_at,num_prefill_tokens,num_decode_tokens\n2,1,1\n1,1,1\n",
	  ":3: timestamp goes backwards (1.000000000 s < previous 2.000000000 s)" },
	{ EMA_TRACE_VIDUR, "arrived_at,num_prefill_tokens,num_decode_tokens\n1,1,1.5\n",
	  ":2: expected a whole number of tokens in column num_decode_tokens, got '1.5'" },
	{ EMA_TRACE_BURSTGPT,
	  "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,ChatGPT,472,0,472,API log\n6,GPT-4,1,0,1,API log\n",
	  ":2: expected at least one request after the header (2 rows with 0 response tokens, failed requests, were left out)" },
	{ EMA_TRACE_BURSTGPT,
	  "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,ChatGPT,472,18,490\n",
	  ":2: expected 6 fields" },
	{ EMA_TRACE_BURSTGPT,
	  "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,ChatGPT,472,18,490,x\n4,ChatGPT,1,0,1,x\n",
	  ":3: timestamp goes backwards" },
	{ EMA_TRACE_MOONCAKE, "{\"timestamp\": 0, \"input_length\": 5\n",
	  ":1:" },
	{ EMA_TRACE_MOONCAKE, "{\"timestamp\": 0, \"input_length\": 5\n",
	  "expected a JSON object {" },
	{ EMA_TRACE_MOONCAKE, MC1 "{\"timestamp\": 1, \"input_length\": 5}\n",
	  ":2: missing key \"output_length\"" },
	{ EMA_TRACE_MOONCAKE, MC1 "{\"timestamp\": 1, \"input_length\": \"5\", \"output_length\": 6}\n",
	  ":2: expected a number >= 0 for \"input_length\"" },
	{ EMA_TRACE_MOONCAKE, MC1 "{\"timestamp\": -1, \"input_length\": 5, \"output_length\": 6}\n",
	  ":2: expected a number >= 0 for \"timestamp\"" },
	{ EMA_TRACE_MOONCAKE, MC1 "{\"timestamp\": 1, \"input_length\": 2e7, \"output_length\": 6}\n",
	  ":2: \"input_length\" = 20000000 is absurd (more than 10000000)" },
	{ EMA_TRACE_MOONCAKE, MC1 "{\"timestamp\": 1, \"input_length\": 1.5, \"output_length\": 6}\n",
	  ":2: expected whole numbers of tokens" },
	{ EMA_TRACE_MOONCAKE, MC1 "{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 6} x\n",
	  ":2:57: unexpected text after the JSON object" },
	{ EMA_TRACE_MOONCAKE, MC1 "[1, 2]\n", ":2: expected a JSON object per line" },
	/* cJSON would take the first of a repeated key */
	{ EMA_TRACE_MOONCAKE, MC1 "{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 6, "
	  "\"timestamp\": 9}\n", ":2: key \"timestamp\" given twice" },
	/* what JSON forbids and cJSON lets through, at its column */
	{ EMA_TRACE_MOONCAKE, MC1 "{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 6, "
	  "\"id\": \"a\tb\"}\n", ":2:65: a raw control character inside a string" },
	{ EMA_TRACE_MOONCAKE, MC1 "{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 6, "
	  "\"id\": \"\xff\"}\n", ":2:64: a byte that is not UTF-8" },
	{ EMA_TRACE_MOONCAKE, MC1 "{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 6, "
	  "\"id\": \"a\\u0000b\"}\n", ":2:65: \\u0000 (a NUL character) inside a string" },
	/* strtod reads 0x1e3 as 483 s, inf and nan as well: decimal only */
	{ EMA_TRACE_VIDUR, "arrived_at,num_prefill_tokens,num_decode_tokens\n0x1e3,1,1\n",
	  ":2: expected a time in seconds in column arrived_at, got '0x1e3'" },
	{ EMA_TRACE_VIDUR, "arrived_at,num_prefill_tokens,num_decode_tokens\n0X1E3,1,1\n",
	  ":2: expected a time in seconds in column arrived_at, got '0X1E3'" },
	{ EMA_TRACE_VIDUR, "arrived_at,num_prefill_tokens,num_decode_tokens\n1e,1,1\n",
	  ":2: expected a time in seconds in column arrived_at, got '1e'" },
	{ EMA_TRACE_VIDUR, "arrived_at,num_prefill_tokens,num_decode_tokens\ne5,1,1\n",
	  ":2: expected a time in seconds in column arrived_at, got 'e5'" },
	{ EMA_TRACE_BURSTGPT, "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
	  "0x1p3,ChatGPT,1,1,2,Conversation log\n",
	  ":2: expected a time in seconds in column Timestamp, got '0x1p3'" },
	{ EMA_TRACE_AUTO, "{\"timestamp\": 5, \"input_length\": 5, \"output_length\": 6}\n" MC1,
	  ":2: timestamp goes backwards (0.000000000 s < previous 0.005000000 s)" },
	{ EMA_TRACE_AUTO, MC1 "{\"timestamp\": 1,, }\n", ":2:1" },
	{ EMA_TRACE_AUTO, MC1 "{\"timestamp\": 1,, }\n", "expected a JSON object {" },
	{ EMA_TRACE_LENGTHS, "num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n1,2,3\n",
	  ":2: expected 4 fields" },
	{ EMA_TRACE_AUTO, NULL, NULL }
};

static void check_bad(enum ema_trace_format fmt, const char *text,
		      const char *want)
{
	struct ema_workload w;
	struct ema_error err = { 0 };
	char path[4096], full[8192];
	bool ok;
	int rc;

	write_temp(text, strlen(text), path, sizeof path);
	rc = ema_trace_read(path, fmt, &w, &err);
	snprintf(full, sizeof full, "%s%s", path, want);
	ok = want[0] == ':' ? strstr(err.msg, full) == err.msg :
		strncmp(err.msg, path, strlen(path)) == 0 &&
		strstr(err.msg + strlen(path), want) != NULL;
	CU_ASSERT_EQUAL(rc, EMA_ERR_INPUT);
	CU_ASSERT_EQUAL(err.code, EMA_ERR_INPUT);
	CU_ASSERT(ok);
	if (!ok)
		fprintf(stderr, "\n  got:  %s\n  want: %s...\n", err.msg, full);
	CU_ASSERT(w.reqs == NULL && w.n == 0);
	unlink(path);
}

static void test_read_errors(void)
{
	for (const struct bad_case *c = bad_cases; c->text != NULL; c++)
		check_bad(c->fmt, c->text, c->want);
}

/* The line number counts every line, CRLF or not: a bad row 17. */
static void test_error_line_17(void)
{
	char text[4096];
	size_t m = 0;

	m += (size_t)snprintf(text + m, sizeof text - m, AZ);
	for (int i = 0; i < 15; i++)
		m += (size_t)snprintf(text + m, sizeof text - m,
				      "2023-11-16 18:15:%02d.5000000,1,1\r\n", 10 + i);
	snprintf(text + m, sizeof text - m, "2023-11-16 18:15:20.2500000,1,1");
	check_bad(EMA_TRACE_AZURE, text,
		  ":17: timestamp goes backwards (9.750000000 s < previous 14.000000000 s)");
}

static void test_missing_file(void)
{
	struct ema_workload w;
	struct ema_error err = { 0 };
	int rc;

	rc = ema_trace_read("/nonexistent/trace.csv", EMA_TRACE_AUTO, &w, &err);
	CU_ASSERT_EQUAL(rc, EMA_ERR_INPUT);
	CU_ASSERT_STRING_EQUAL(err.msg,
			       "/nonexistent/trace.csv: cannot open: No such file or directory");
	CU_ASSERT(w.reqs == NULL && w.n == 0);
}

/* A folder or an unreadable file is the user's mistake like a missing
 * file: EMA_ERR_INPUT (exit 2), not an I/O fault (exit 1). */
static void test_unreadable_paths(void)
{
	struct ema_workload w;
	struct ema_error err = { 0 };
	char dir[4096], want[4200], path[4096];
	const char *t = getenv("TMPDIR");

	snprintf(dir, sizeof dir, "%s/ema_test_wl_dir_XXXXXX", t ? t : "/tmp");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	CU_ASSERT_EQUAL(ema_trace_read(dir, EMA_TRACE_AUTO, &w, &err), EMA_ERR_INPUT);
	snprintf(want, sizeof want, "%s: expected a trace file, got a folder", dir);
	CU_ASSERT_STRING_EQUAL(err.msg, want);
	CU_ASSERT(w.reqs == NULL && w.n == 0);
	rmdir(dir);
	/* root reads anything: the permission case means nothing then */
	if (geteuid() != 0) {
		write_temp(AZ1, strlen(AZ1), path, sizeof path);
		CU_ASSERT_EQUAL(chmod(path, 0), 0);
		CU_ASSERT_EQUAL(ema_trace_read(path, EMA_TRACE_AUTO, &w, &err), EMA_ERR_INPUT);
		snprintf(want, sizeof want, "%s: cannot open: Permission denied", path);
		CU_ASSERT_STRING_EQUAL(err.msg, want);
		unlink(path);
	}
}

/* A trace of endless bytes (/dev/zero, a FIFO fed by `yes`) is read up
 * to EMA_TRACE_MAX_GIB (default 4 GiB), then refused as bad input, as a
 * config file past its limit is. */
static void test_size_limit(void)
{
	struct ema_workload w;
	struct ema_error err = { 0 };
	const char *old = getenv("EMA_TRACE_MAX_GIB");
	char saved[64] = "", text[8192], path[4096];
	size_t max = 0, m = 0;

	if (old != NULL)
		snprintf(saved, sizeof saved, "%s", old);
	unsetenv("EMA_TRACE_MAX_GIB");
	CU_ASSERT_EQUAL(ema_trace_max_bytes(&max, &err), EMA_OK);
	CU_ASSERT_EQUAL(max, (size_t)4 << 30);
	CU_ASSERT_EQUAL(setenv("EMA_TRACE_MAX_GIB", "0.000001", 1), 0);
	CU_ASSERT_EQUAL(ema_trace_max_bytes(&max, &err), EMA_OK);
	CU_ASSERT_EQUAL(max, 1073);
	if (access("/dev/zero", R_OK) == 0) {
		CU_ASSERT_EQUAL(ema_trace_read("/dev/zero", EMA_TRACE_AUTO, &w, &err), EMA_ERR_INPUT);
		CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "/dev/zero: more than 0 MiB: expected a trace "
						      "file of at most that (an endless stream"));
		CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "EMA_TRACE_MAX_GIB=N raises the limit"));
		CU_ASSERT(w.reqs == NULL && w.n == 0);
	}
	/* a file of its own just past the limit, and one just under it */
	m += (size_t)snprintf(text, sizeof text, "arrived_at,num_prefill_tokens,num_decode_tokens\n");
	while (m < 1100)
		m += (size_t)snprintf(text + m, sizeof text - m, "1,1,1\n");
	write_temp(text, m, path, sizeof path);
	CU_ASSERT_EQUAL(ema_trace_read(path, EMA_TRACE_AUTO, &w, &err), EMA_ERR_INPUT);
	CU_ASSERT_EQUAL(setenv("EMA_TRACE_MAX_GIB", "0.00001", 1), 0);
	CU_ASSERT_EQUAL(ema_trace_read(path, EMA_TRACE_AUTO, &w, &err), EMA_OK);
	ema_workload_free(&w);
	unlink(path);
	for (const char *const *bad = (const char *const[]){ "0", "-1", "x", "0x10", "inf", "nan",
							     "1e3", "2000000", NULL }; *bad; bad++) {
		CU_ASSERT_EQUAL(setenv("EMA_TRACE_MAX_GIB", *bad, 1), 0);
		CU_ASSERT_EQUAL(ema_trace_max_bytes(&max, &err), EMA_ERR_INPUT);
		CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "EMA_TRACE_MAX_GIB="));
	}
	if (saved[0] != '\0')
		setenv("EMA_TRACE_MAX_GIB", saved, 1);
	else
		unsetenv("EMA_TRACE_MAX_GIB");
}

static void test_format_names(void)
{
	static const char *const names[] = {
		"auto", "azure", "vidur", "burstgpt", "mooncake", "lengths"
	};

	for (int i = 0; i < 6; i++) {
		CU_ASSERT_EQUAL(ema_trace_format_parse(names[i]), i);
		CU_ASSERT_STRING_EQUAL(ema_trace_format_name((enum ema_trace_format)i), names[i]);
	}
	CU_ASSERT_EQUAL(ema_trace_format_parse("Azure"), -1);
	CU_ASSERT_EQUAL(ema_trace_format_parse(""), -1);
	CU_ASSERT_EQUAL(ema_trace_format_parse(NULL), -1);
	CU_ASSERT_STRING_EQUAL(ema_trace_format_name((enum ema_trace_format)42), "unknown");
}

static void test_seed_derive(void)
{
	uint64_t a = ema_seed_derive(1, 0, "arrivals");

	CU_ASSERT_EQUAL(a, ema_seed_derive(1, 0, "arrivals"));
	CU_ASSERT_NOT_EQUAL(a, ema_seed_derive(2, 0, "arrivals"));
	CU_ASSERT_NOT_EQUAL(a, ema_seed_derive(1, 1, "arrivals"));
	CU_ASSERT_NOT_EQUAL(a, ema_seed_derive(1, 0, "lengths"));
	CU_ASSERT_NOT_EQUAL(ema_seed_derive(0, 0, ""), ema_seed_derive(0, -1, ""));
	CU_ASSERT_EQUAL(ema_seed_derive(3, 2, NULL), ema_seed_derive(3, 2, ""));
	for (uint64_t s = 0; s < 2000; s++)
		for (int i = -2; i < 3; i++) {
			CU_ASSERT_NOT_EQUAL(ema_seed_derive(s, i, "x"), 0);
			/* distinct streams of one tenant */
			CU_ASSERT_NOT_EQUAL(ema_seed_derive(s, i, "x"),
					    ema_seed_derive(s, i, "y"));
		}
}

static struct ema_workload_cfg synth_cfg(void)
{
	struct ema_workload_cfg c;

	memset(&c, 0, sizeof c);
	c.source = EMA_WL_SYNTHETIC;
	c.arrival = EMA_ARR_POISSON;
	c.rate_rps = 10;
	c.rate_scale = 1;
	c.prompt.kind = EMA_LEN_FIXED;
	c.prompt.mean = 100;
	c.output.kind = EMA_LEN_FIXED;
	c.output.mean = 10;
	return c;
}

static void build_ok(const struct ema_workload_cfg *c, uint64_t seed,
		     struct ema_workload *w)
{
	struct ema_error err = { 0 };
	int rc = ema_workload_build(c, seed, w, &err);

	if (rc)
		fprintf(stderr, "%s\n", err.msg);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	for (size_t i = 0; i < w->n; i++) {
		CU_ASSERT(w->reqs[i].prompt_tokens >= 1);
		CU_ASSERT(w->reqs[i].output_tokens >= 1);
		if (i > 0)
			CU_ASSERT(w->reqs[i].arrival_ns >= w->reqs[i - 1].arrival_ns);
	}
}

/* Mean and CV of the gaps between arrivals, the first measured from 0. */
static void gap_stats(const struct ema_workload *w, double *mean, double *cv)
{
	double s = 0, s2 = 0, prev = 0;

	for (size_t i = 0; i < w->n; i++) {
		double g = (double)(w->reqs[i].arrival_ns) / 1e9 - prev;

		prev = (double)w->reqs[i].arrival_ns / 1e9;
		s += g;
		s2 += g * g;
	}
	*mean = s / (double)w->n;
	*cv = sqrt(s2 / (double)w->n - *mean * *mean) / *mean;
}

static void len_stats(const struct ema_workload *w, bool prompt, double *mean,
		      double *cv)
{
	double s = 0, s2 = 0;

	for (size_t i = 0; i < w->n; i++) {
		double v = prompt ? w->reqs[i].prompt_tokens : w->reqs[i].output_tokens;

		s += v;
		s2 += v * v;
	}
	*mean = s / (double)w->n;
	*cv = sqrt(s2 / (double)w->n - *mean * *mean) / *mean;
}

static void test_poisson(void)
{
	struct ema_workload_cfg c = synth_cfg();
	struct ema_workload w;
	double mean, cv;

	/* 10 rps over 10,000 s: N ~ Poisson(1e5), sd 316 */
	c.duration_s = 10000;
	build_ok(&c, 42, &w);
	CU_ASSERT(fabs((double)w.n - 1e5) < 5 * 316);
	CU_ASSERT(w.reqs[w.n - 1].arrival_ns < 10000000000000LL);
	gap_stats(&w, &mean, &cv);
	CU_ASSERT(fabs(mean - 0.1) < 0.002);
	CU_ASSERT(fabs(cv - 1) < 0.02);
	CU_ASSERT_EQUAL(w.reqs[0].prompt_tokens, 100);
	CU_ASSERT_EQUAL(w.reqs[w.n - 1].output_tokens, 10);
	ema_workload_free(&w);

	/* max_requests first */
	c.max_requests = 50;
	build_ok(&c, 42, &w);
	CU_ASSERT_EQUAL(w.n, 50);
	ema_workload_free(&w);
	/* max_requests alone */
	c.duration_s = 0;
	c.max_requests = 1234;
	build_ok(&c, 7, &w);
	CU_ASSERT_EQUAL(w.n, 1234);
	ema_workload_free(&w);
	/* duration first */
	c.duration_s = 1;
	c.max_requests = 100000;
	build_ok(&c, 7, &w);
	CU_ASSERT(w.n < 60);
	CU_ASSERT(w.n == 0 || w.reqs[w.n - 1].arrival_ns < 1000000000LL);
	ema_workload_free(&w);
}

static void test_gamma(void)
{
	struct ema_workload_cfg c = synth_cfg();
	struct ema_workload w;
	double mean, cv;

	c.arrival = EMA_ARR_GAMMA;
	c.rate_rps = 5;
	c.cv = 3;
	c.max_requests = 200000;
	build_ok(&c, 9, &w);
	CU_ASSERT_EQUAL(w.n, 200000);
	gap_stats(&w, &mean, &cv);
	CU_ASSERT(fabs(mean / 0.2 - 1) < 0.05);
	CU_ASSERT(fabs(cv / 3 - 1) < 0.1);
	ema_workload_free(&w);

	c.cv = 0.25;
	build_ok(&c, 9, &w);
	gap_stats(&w, &mean, &cv);
	CU_ASSERT(fabs(mean / 0.2 - 1) < 0.01);
	CU_ASSERT(fabs(cv / 0.25 - 1) < 0.03);
	ema_workload_free(&w);
}

static void test_lengths_gen(void)
{
	struct ema_workload_cfg c = synth_cfg();
	struct ema_workload w;
	double mean, cv;
	bool seen[8] = { false };

	c.max_requests = 100000;
	c.prompt.kind = EMA_LEN_LOGNORMAL;
	c.prompt.mean = 1000;
	c.prompt.cv = 0.5;
	c.output.kind = EMA_LEN_UNIFORM;
	c.output.min = 3;
	c.output.max = 10;
	build_ok(&c, 5, &w);
	len_stats(&w, true, &mean, &cv);
	CU_ASSERT(fabs(mean / 1000 - 1) < 0.02);
	CU_ASSERT(fabs(cv / 0.5 - 1) < 0.05);
	len_stats(&w, false, &mean, &cv);
	CU_ASSERT(fabs(mean - 6.5) < 0.05);
	for (size_t i = 0; i < w.n; i++) {
		int o = w.reqs[i].output_tokens;

		CU_ASSERT(o >= 3 && o <= 10);
		if (o >= 3 && o <= 10)
			seen[o - 3] = true;
	}
	for (int k = 0; k < 8; k++)
		CU_ASSERT(seen[k]);
	ema_workload_free(&w);

	/* the clamp of a lognormal */
	c.prompt.min = 900;
	c.prompt.max = 1100;
	build_ok(&c, 5, &w);
	for (size_t i = 0; i < w.n; i++)
		CU_ASSERT(w.reqs[i].prompt_tokens >= 900 && w.reqs[i].prompt_tokens <= 1100);
	ema_workload_free(&w);

	/* cv 0 is the fixed length; fixed is rounded */
	c.prompt.min = c.prompt.max = 0;
	c.prompt.cv = 0;
	c.output.kind = EMA_LEN_FIXED;
	c.output.mean = 2.6;
	build_ok(&c, 5, &w);
	CU_ASSERT_EQUAL(w.reqs[17].prompt_tokens, 1000);
	CU_ASSERT_EQUAL(w.reqs[17].output_tokens, 3);
	ema_workload_free(&w);
}

static void test_determinism(void)
{
	struct ema_workload_cfg c = synth_cfg();
	struct ema_workload a, b;

	c.duration_s = 500;
	c.arrival = EMA_ARR_GAMMA;
	c.cv = 2;
	c.prompt.kind = EMA_LEN_LOGNORMAL;
	c.prompt.mean = 500;
	c.prompt.cv = 1;
	c.output.kind = EMA_LEN_LOGNORMAL;
	c.output.mean = 200;
	c.output.cv = 1;
	build_ok(&c, 1234, &a);
	build_ok(&c, 1234, &b);
	CU_ASSERT_EQUAL_FATAL(a.n, b.n);
	CU_ASSERT(memcmp(a.reqs, b.reqs, a.n * sizeof *a.reqs) == 0);
	ema_workload_free(&b);

	/* another seed, other requests */
	build_ok(&c, 1235, &b);
	CU_ASSERT(a.n != b.n || memcmp(a.reqs, b.reqs, a.n * sizeof *a.reqs) != 0);
	ema_workload_free(&b);

	/* other output lengths: same arrivals and same prompts */
	c.output.kind = EMA_LEN_UNIFORM;
	c.output.min = 1;
	c.output.max = 50;
	build_ok(&c, 1234, &b);
	CU_ASSERT_EQUAL_FATAL(a.n, b.n);
	for (size_t i = 0; i < a.n; i++) {
		CU_ASSERT_EQUAL(a.reqs[i].arrival_ns, b.reqs[i].arrival_ns);
		CU_ASSERT_EQUAL(a.reqs[i].prompt_tokens, b.reqs[i].prompt_tokens);
	}
	ema_workload_free(&b);

	/* other prompt lengths: same arrivals */
	c.prompt.kind = EMA_LEN_FIXED;
	build_ok(&c, 1234, &b);
	CU_ASSERT_EQUAL_FATAL(a.n, b.n);
	for (size_t i = 0; i < a.n; i++)
		CU_ASSERT_EQUAL(a.reqs[i].arrival_ns, b.reqs[i].arrival_ns);
	ema_workload_free(&b);
	ema_workload_free(&a);
}

static bool is_row(int32_t p, int32_t o)
{
	for (size_t k = 0; k < 5; k++)
		if (lengths[k].p == p && lengths[k].o == o)
			return true;
	return false;
}

static void test_empirical(void)
{
	struct ema_workload_cfg c = synth_cfg();
	struct ema_workload w, w2;
	int hits[5] = { 0 };

	fixture(c.trace, sizeof c.trace, "lengths.csv");
	c.max_requests = 5000;
	c.source = EMA_WL_LENGTHS;
	build_ok(&c, 77, &w);
	CU_ASSERT_EQUAL(w.n, 5000);
	for (size_t i = 0; i < w.n; i++) {
		CU_ASSERT(is_row(w.reqs[i].prompt_tokens, w.reqs[i].output_tokens));
		for (int k = 0; k < 5; k++)
			if (lengths[k].p == w.reqs[i].prompt_tokens)
				hits[k]++;
	}
	for (int k = 0; k < 5; k++)
		CU_ASSERT(hits[k] > 800 && hits[k] < 1200);

	/* the same through length kinds "empirical": same pairs */
	c.source = EMA_WL_SYNTHETIC;
	c.prompt.kind = EMA_LEN_EMPIRICAL;
	c.output.kind = EMA_LEN_EMPIRICAL;
	build_ok(&c, 77, &w2);
	CU_ASSERT_EQUAL_FATAL(w.n, w2.n);
	CU_ASSERT(memcmp(w.reqs, w2.reqs, w.n * sizeof *w.reqs) == 0);
	ema_workload_free(&w2);

	/* empirical prompts, fixed outputs */
	c.output.kind = EMA_LEN_FIXED;
	build_ok(&c, 77, &w2);
	for (size_t i = 0; i < w.n; i++) {
		CU_ASSERT_EQUAL(w.reqs[i].prompt_tokens, w2.reqs[i].prompt_tokens);
		CU_ASSERT_EQUAL(w2.reqs[i].output_tokens, 10);
	}
	ema_workload_free(&w2);
	ema_workload_free(&w);
}

static void test_window(void)
{
	struct ema_workload_cfg c = synth_cfg();
	struct ema_workload w;
	struct ema_error err = { 0 };
	char want[8192];

	c.source = EMA_WL_TRACE;
	fixture(c.trace, sizeof c.trace, "vidur.csv");
	build_ok(&c, 0, &w);
	check_reqs(&w, vidur, 5);
	ema_workload_free(&w);

	c.start_s = 0.5;
	c.duration_s = 1;
	build_ok(&c, 0, &w);
	{
		const struct expect e[] = { { 0, 200, 20 }, { 734567891LL, 300, 30 } };

		check_reqs(&w, e, 2);
	}
	ema_workload_free(&w);

	c.rate_scale = 2;
	build_ok(&c, 0, &w);
	{
		const struct expect e[] = { { 0, 200, 20 }, { 367283946LL, 300, 30 } };

		check_reqs(&w, e, 2);
	}
	ema_workload_free(&w);

	/* to the end, capped */
	c.duration_s = 0;
	c.rate_scale = 0.5;
	c.max_requests = 3;
	build_ok(&c, 0, &w);
	{
		const struct expect e[] = {
			{ 0, 200, 20 }, { 1469135782LL, 300, 30 }, { 3000000000LL, 400, 40 }
		};

		check_reqs(&w, e, 3);
	}
	ema_workload_free(&w);

	/* Azure: windows count from the first row */
	c.max_requests = 0;
	c.rate_scale = 1;
	c.start_s = 4.314579;
	c.duration_s = 9.0048311;   /* ends exactly at row 4: excluded */
	fixture(c.trace, sizeof c.trace, "azure_2023.csv");
	build_ok(&c, 0, &w);
	{
		const struct expect e[] = { { 0, 396, 109 }, { 0, 879, 1 } };

		check_reqs(&w, e, 2);
	}
	ema_workload_free(&w);

	c.start_s = 100;
	c.duration_s = 1;
	CU_ASSERT_EQUAL(ema_workload_build(&c, 0, &w, &err), EMA_ERR_INPUT);
	snprintf(want, sizeof want, "%s: no requests in window [100 s, 101 s)", c.trace);
	CU_ASSERT_STRING_EQUAL(err.msg, want);
	CU_ASSERT(w.reqs == NULL && w.n == 0);
	c.start_s = 3000;
	c.duration_s = 0;
	CU_ASSERT_EQUAL(ema_workload_build(&c, 0, &w, &err), EMA_ERR_INPUT);
	snprintf(want, sizeof want, "%s: no requests in window [3000 s, end)", c.trace);
	CU_ASSERT_STRING_EQUAL(err.msg, want);
}

/* A replay names the rows a window end or max_requests left out, for the
 * warning that a replay was cut. */
static void test_cut_counts(void)
{
	struct ema_workload_cfg c = synth_cfg();
	struct ema_workload w;
	struct ema_workload_cut cut;
	struct ema_error err = { 0 };
	char note[8192], want[8192];

	c.source = EMA_WL_TRACE;
	fixture(c.trace, sizeof c.trace, "vidur.csv");   /* 0, .5, 1.23, 2, 15 s */
	CU_ASSERT_EQUAL_FATAL(ema_workload_build_cut(&c, 0, &w, &cut, &err), 0);
	CU_ASSERT_EQUAL(cut.by_duration, 0);
	CU_ASSERT_EQUAL(cut.by_max_requests, 0);
	CU_ASSERT_FALSE(ema_workload_cut_note(&w, &cut, &c, note, sizeof note));
	CU_ASSERT_STRING_EQUAL(note, "");
	ema_workload_free(&w);
	c.start_s = 0.5;
	c.duration_s = 1;       /* keeps .5 and 1.23; 2 and 15 come after */
	CU_ASSERT_EQUAL_FATAL(ema_workload_build_cut(&c, 0, &w, &cut, &err), 0);
	CU_ASSERT_EQUAL(w.n, 2);
	CU_ASSERT_EQUAL(cut.by_duration, 2);
	CU_ASSERT_EQUAL(cut.by_max_requests, 0);
	CU_ASSERT_TRUE(ema_workload_cut_note(&w, &cut, &c, note, sizeof note));
	snprintf(want, sizeof want,
		 "the trace replay of %s keeps 2 requests; 2 rows after start_s + duration_s = 1.5 s were left out by duration_s = 1 (0 replays to the end)",
		 c.trace);
	CU_ASSERT_STRING_EQUAL(note, want);
	ema_workload_free(&w);
	c.duration_s = 0;
	c.max_requests = 3;     /* .5, 1.23, 2 of the 4 from .5 on */
	CU_ASSERT_EQUAL_FATAL(ema_workload_build_cut(&c, 0, &w, &cut, &err), 0);
	CU_ASSERT_EQUAL(w.n, 3);
	CU_ASSERT_EQUAL(cut.by_duration, 0);
	CU_ASSERT_EQUAL(cut.by_max_requests, 1);
	CU_ASSERT_TRUE(ema_workload_cut_note(&w, &cut, &c, note, sizeof note));
	snprintf(want, sizeof want,
		 "the trace replay of %s keeps 3 requests; 1 row was left out by max_requests = 3 (0 = no cap)",
		 c.trace);
	CU_ASSERT_STRING_EQUAL(note, want);
	ema_workload_free(&w);
	/* both at once */
	c.start_s = 0;
	c.duration_s = 14;
	c.max_requests = 2;     /* 0, .5, 1.23, 2 in the window; 15 after it */
	CU_ASSERT_EQUAL_FATAL(ema_workload_build_cut(&c, 0, &w, &cut, &err), 0);
	CU_ASSERT_TRUE(ema_workload_cut_note(&w, &cut, &c, note, sizeof note));
	CU_ASSERT_PTR_NOT_NULL(strstr(note, "keeps 2 requests; 1 row after start_s + duration_s = 14 s was left out by duration_s = 14 (0 replays to the end); 2 rows were left out by max_requests = 2"));
	ema_workload_free(&w);
}

/* Tenants replaying one file share one read of it (a cache): each gets
 * the rows its own read would give, cut and scaled by its own window,
 * rate_scale and cap; a second file is read on its own; a failed read
 * leaves nothing behind that a later build would see. */
static void test_shared_reads(void)
{
	static const struct expect win[] = { { 0, 200, 20 }, { 734567891LL, 300, 30 } };
	static const struct expect fast[] = {
		{ 0, 100, 10 }, { 250000000LL, 200, 20 }, { 617283946LL, 300, 30 },
		{ 1000000000LL, 400, 40 }, { 7500000000LL, 500, 50 },
	};
	struct ema_workload_cfg a = synth_cfg(), b, c, bad;
	struct ema_workload wa, wb, wc;
	struct ema_workload_cut cut;
	struct ema_trace_cache *cache = ema_trace_cache_new();
	struct ema_error err = { 0 };
	char want[8192];

	CU_ASSERT_PTR_NOT_NULL_FATAL(cache);
	a.source = EMA_WL_TRACE;
	fixture(a.trace, sizeof a.trace, "vidur.csv");   /* 0, .5, 1.234567891, 2, 15 s */
	b = a;
	c = a;
	bad = a;
	a.start_s = 0.5;
	a.duration_s = 1;
	b.rate_scale = 2;
	fixture(c.trace, sizeof c.trace, "azure_2023.csv");
	fixture(bad.trace, sizeof bad.trace, "no_such_trace.csv");
	/* a failed read first: the same error as without the cache */
	CU_ASSERT_EQUAL(ema_workload_build_shared(&bad, 0, &wa, &cut, cache, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "no_such_trace.csv"));
	CU_ASSERT_EQUAL_FATAL(ema_workload_build_shared(&a, 0, &wa, &cut, cache, &err), 0);
	check_reqs(&wa, win, 2);
	CU_ASSERT_EQUAL(cut.by_duration, 2);
	CU_ASSERT_EQUAL_FATAL(ema_workload_build_shared(&b, 0, &wb, &cut, cache, &err), 0);
	check_reqs(&wb, fast, 5);
	CU_ASSERT_EQUAL(cut.by_duration, 0);
	/* another file: its own rows, the same as an uncached build's */
	CU_ASSERT_EQUAL_FATAL(ema_workload_build_shared(&c, 0, &wc, &cut, cache, &err), 0);
	check_reqs(&wc, azure_2023, 5);
	ema_workload_free(&wc);
	/* a window with nothing in it, from the cached rows */
	a.start_s = 3000;
	a.duration_s = 0;
	CU_ASSERT_EQUAL(ema_workload_build_shared(&a, 0, &wc, &cut, cache, &err), EMA_ERR_INPUT);
	snprintf(want, sizeof want, "%s: no requests in window [3000 s, end)", a.trace);
	CU_ASSERT_STRING_EQUAL(err.msg, want);
	/* and the rows of the first build were the caller's own */
	wa.reqs[0].prompt_tokens = 7;
	CU_ASSERT_EQUAL_FATAL(ema_workload_build_shared(&b, 0, &wc, &cut, cache, &err), 0);
	check_reqs(&wc, fast, 5);
	ema_workload_free(&wa);
	ema_workload_free(&wb);
	ema_workload_free(&wc);
	ema_trace_cache_free(cache);
}

/* A replay opens its trace once: through a FIFO (as from <(...)), with
 * format auto, it reads every row instead of hanging on a second open or
 * finding the pipe already drained. */
static void test_fifo_trace(void)
{
	static const char text[] = "arrived_at,num_prefill_tokens,num_decode_tokens\n"
		"0,100,10\n1.5,200,20\n";
	static const struct expect e[] = { { 0, 100, 10 }, { 1500000000LL, 200, 20 } };
	struct ema_workload_cfg c = synth_cfg();
	struct ema_workload w;
	char dir[512];
	const char *t = getenv("TMPDIR");
	pid_t pid;
	int status;

	snprintf(dir, sizeof dir, "%.400s/ema_test_fifo_XXXXXX", t ? t : "/tmp");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	c.source = EMA_WL_TRACE;
	snprintf(c.trace, sizeof c.trace, "%s/trace", dir);
	CU_ASSERT_EQUAL_FATAL(mkfifo(c.trace, 0600), 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		/* the writer: one open, like the shell behind <(...) */
		FILE *f = fopen(c.trace, "w");

		if (f == NULL)
			_exit(1);
		fputs(text, f);
		_exit(fclose(f) == 0 ? 0 : 1);
	}
	/* a second open would block for ever: fail the test instead */
	alarm(20);
	build_ok(&c, 0, &w);
	alarm(0);
	check_reqs(&w, e, 2);
	ema_workload_free(&w);
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	unlink(c.trace);
	rmdir(dir);
}

/* A lengths-only file replayed as a trace has no times: refused at its
 * header, pointing to source "lengths", whether the format is auto or
 * named. */
static void test_lengths_as_trace(void)
{
	struct ema_workload_cfg c = synth_cfg();
	struct ema_workload w;
	struct ema_error err = { 0 };
	char want[8192];

	c.source = EMA_WL_TRACE;
	fixture(c.trace, sizeof c.trace, "lengths.csv");
	snprintf(want, sizeof want,
		 "%s:1: a lengths-only file has no arrival times; expected \"source\": \"lengths\"",
		 c.trace);
	for (int k = 0; k < 2; k++) {
		c.format = k ? EMA_TRACE_LENGTHS : EMA_TRACE_AUTO;
		CU_ASSERT_EQUAL(ema_workload_build(&c, 0, &w, &err), EMA_ERR_INPUT);
		CU_ASSERT(strstr(err.msg, want) == err.msg);
		CU_ASSERT(w.reqs == NULL && w.n == 0);
	}
	/* the same file as source "lengths" is fine */
	c.source = EMA_WL_LENGTHS;
	c.format = EMA_TRACE_AUTO;
	c.max_requests = 4;
	build_ok(&c, 0, &w);
	CU_ASSERT_EQUAL(w.n, 4);
	ema_workload_free(&w);
}

/* Slowing a trace down (rate_scale < 1) must not carry an arrival past
 * the int64_t ns range: the row that would is an error at its line. */
static void test_scale_overflow(void)
{
	static const char text[] = "arrived_at,num_prefill_tokens,num_decode_tokens\n"
		"10,1,1\n11,1,1\n\n400000010,1,1\n";
	struct ema_workload_cfg c = synth_cfg();
	struct ema_workload w;
	struct ema_error err = { 0 };
	char want[8192];

	c.source = EMA_WL_TRACE;
	write_temp(text, sizeof text - 1, c.trace, sizeof c.trace);
	/* 4e8 s / 0.5 = 8e8 s: inside the 1e9 s limit */
	c.rate_scale = 0.5;
	build_ok(&c, 0, &w);
	CU_ASSERT_EQUAL(w.reqs[2].arrival_ns, 800000000000000000LL);
	ema_workload_free(&w);
	/* 4e8 s / 0.25 = 1.6e9 s: line 5 (a blank line 4 still counts) */
	c.rate_scale = 0.25;
	CU_ASSERT_EQUAL(ema_workload_build(&c, 0, &w, &err), EMA_ERR_INPUT);
	snprintf(want, sizeof want,
		 "%s:5: this row comes 400000000 s after the window's first, which rate_scale = 0.25 stretches to 1.6e+09 s: past the limit of 1e9 s",
		 c.trace);
	CU_ASSERT(strstr(err.msg, want) == err.msg);
	if (strstr(err.msg, want) != err.msg)
		fprintf(stderr, "\n  got:  %s\n  want: %s...\n", err.msg, want);
	CU_ASSERT(w.reqs == NULL && w.n == 0);
	/* the same scale at the smallest accepted rate_scale, and the same
	 * row cut by max_requests: nothing to overflow */
	c.rate_scale = 1e-300;
	CU_ASSERT_EQUAL(ema_workload_build(&c, 0, &w, &err), EMA_ERR_INPUT);
	CU_ASSERT(strstr(err.msg, ":3: this row comes 1 s after") != NULL);
	c.rate_scale = 0.25;
	c.max_requests = 2;
	build_ok(&c, 0, &w);
	CU_ASSERT_EQUAL(w.n, 2);
	CU_ASSERT_EQUAL(w.reqs[1].arrival_ns, 4000000000LL);
	ema_workload_free(&w);
	unlink(c.trace);
}

struct cfg_case {
	void (*edit)(struct ema_workload_cfg *c);
	const char *want;
};

static void e_no_stop(struct ema_workload_cfg *c) { (void)c; }
static void e_rate0(struct ema_workload_cfg *c) { c->max_requests = 5; c->rate_rps = 0; }
static void e_gamma_cv(struct ema_workload_cfg *c) { c->max_requests = 5; c->arrival = EMA_ARR_GAMMA; }
static void e_arrival(struct ema_workload_cfg *c) { c->max_requests = 5; c->arrival = (enum ema_arrival_kind)9; }
static void e_too_many(struct ema_workload_cfg *c) { c->duration_s = 1e9; c->rate_rps = 1e3; }
static void e_neg_dur(struct ema_workload_cfg *c) { c->duration_s = -1; }
static void e_fixed0(struct ema_workload_cfg *c) { c->max_requests = 5; c->prompt.mean = 0; }
static void e_uniform(struct ema_workload_cfg *c)
{
	c->max_requests = 5;
	c->output.kind = EMA_LEN_UNIFORM;
	c->output.min = 5;
}
static void e_minmax(struct ema_workload_cfg *c)
{
	c->max_requests = 5;
	c->prompt.min = 10;
	c->prompt.max = 5;
}
static void e_logn_cv(struct ema_workload_cfg *c)
{
	c->max_requests = 5;
	c->prompt.kind = EMA_LEN_LOGNORMAL;
	c->prompt.cv = -1;
}
static void e_logn_mean(struct ema_workload_cfg *c)
{
	c->max_requests = 5;
	c->output.kind = EMA_LEN_LOGNORMAL;
	c->output.mean = 0;
}
static void e_len_kind(struct ema_workload_cfg *c)
{
	c->max_requests = 5;
	c->output.kind = (enum ema_length_kind)7;
}
static void e_emp_nofile(struct ema_workload_cfg *c)
{
	c->max_requests = 5;
	c->prompt.kind = EMA_LEN_EMPIRICAL;
}
static void e_emp_missing(struct ema_workload_cfg *c)
{
	c->max_requests = 5;
	c->source = EMA_WL_LENGTHS;
	snprintf(c->trace, sizeof c->trace, "/nonexistent/lengths.csv");
}
static void e_trace_nofile(struct ema_workload_cfg *c) { c->source = EMA_WL_TRACE; }
static void e_scale0(struct ema_workload_cfg *c)
{
	c->source = EMA_WL_TRACE;
	snprintf(c->trace, sizeof c->trace, "x.csv");
	c->rate_scale = 0;
}
static void e_start(struct ema_workload_cfg *c)
{
	c->source = EMA_WL_TRACE;
	snprintf(c->trace, sizeof c->trace, "x.csv");
	c->start_s = -1;
}
static void e_source(struct ema_workload_cfg *c) { c->source = (enum ema_workload_source)5; }
/* 1e-9 requests/s and no duration: the first arrival is ~1e9 s away */
static void e_tiny_rate(struct ema_workload_cfg *c) { c->max_requests = 5; c->rate_rps = 1e-12; }

static const struct cfg_case cfg_cases[] = {
	{ e_no_stop, "workload: synthetic arrivals need duration_s or max_requests" },
	{ e_rate0, "workload: rate_rps must be > 0, got 0" },
	{ e_gamma_cv, "workload: gamma arrivals need cv in (0, 100], got 0" },
	{ e_arrival, "workload: unknown arrival kind 9" },
	{ e_too_many, "workload: 1e+12 requests asked for" },
	{ e_neg_dur, "workload: duration_s and max_requests must be >= 0" },
	{ e_fixed0, "workload: prompt.mean must be in (0, 10000000] tokens for fixed lengths, got 0" },
	{ e_uniform, "workload: uniform output lengths need output.max >= 1" },
	{ e_minmax, "workload: prompt.min = 10 is above prompt.max = 5" },
	{ e_logn_cv, "workload: prompt.cv must be in [0, 100] for lognormal lengths, got -1" },
	{ e_logn_mean, "workload: output.mean must be in (0, 10000000] tokens for lognormal lengths" },
	{ e_len_kind, "workload: unknown output length kind 7" },
	{ e_emp_nofile, "workload: empirical lengths need a file (workload.trace)" },
	{ e_emp_missing, "/nonexistent/lengths.csv: cannot open: " },
	{ e_trace_nofile, "workload: a trace source needs a file (workload.trace)" },
	{ e_scale0, "workload: rate_scale must be > 0, got 0" },
	{ e_start, "workload: start_s and duration_s must be in [0, 1e9) s" },
	{ e_source, "workload: unknown source 5" },
	{ e_tiny_rate, "workload: request 1 would arrive at " },
	{ NULL, NULL }
};

static void test_build_errors(void)
{
	for (const struct cfg_case *k = cfg_cases; k->edit != NULL; k++) {
		struct ema_workload_cfg c = synth_cfg();
		struct ema_workload w;
		struct ema_error err = { 0 };

		k->edit(&c);
		CU_ASSERT_EQUAL(ema_workload_build(&c, 1, &w, &err), EMA_ERR_INPUT);
		CU_ASSERT(strstr(err.msg, k->want) == err.msg);
		if (strstr(err.msg, k->want) != err.msg)
			fprintf(stderr, "\n  got:  %s\n  want: %s...\n", err.msg, k->want);
		CU_ASSERT(w.reqs == NULL && w.n == 0);
	}
}

/* A public trace (tests/test_workload_traces, which runs only with them). */
static void shared_path(char *buf, size_t n, const char *name)
{
	const char *dir = ema_test_shared_traces();

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	snprintf(buf, n, "%s/%s", dir, name);
}

static void replay(const char *name, size_t rows, double prompt_mean,
		   double output_mean, int64_t last_ns)
{
	struct ema_workload w;
	struct ema_error err = { 0 };
	char path[4600];
	double pm, om, cv;
	int rc;

	shared_path(path, sizeof path, name);
	rc = ema_trace_read(path, EMA_TRACE_AUTO, &w, &err);
	if (rc)
		fprintf(stderr, "%s\n", err.msg);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	CU_ASSERT_EQUAL(w.n, rows);
	len_stats(&w, true, &pm, &cv);
	len_stats(&w, false, &om, &cv);
	CU_ASSERT(fabs(pm / prompt_mean - 1) < 0.01);
	CU_ASSERT(fabs(om / output_mean - 1) < 0.02);
	if (fabs(pm / prompt_mean - 1) >= 0.01 || fabs(om / output_mean - 1) >= 0.02)
		fprintf(stderr, "%s: prompt mean %g output mean %g\n", name, pm, om);
	CU_ASSERT_EQUAL(w.reqs[0].arrival_ns, 0);
	for (size_t i = 1; i < w.n; i++)
		CU_ASSERT(w.reqs[i].arrival_ns >= w.reqs[i - 1].arrival_ns);
	if (last_ns > 0)
		CU_ASSERT_EQUAL(w.reqs[w.n - 1].arrival_ns, last_ns);
	ema_workload_free(&w);
}

static void test_real_azure(void)
{
	struct ema_workload w;
	struct ema_workload_cfg c = synth_cfg();
	struct ema_error err = { 0 };
	char path[4600];

	/* last rows: 19:14:08.4025270 and 19:14:19.9280160 */
	shared_path(path, sizeof path, "AzureLLMInferenceTrace_conv.csv");
	replay("AzureLLMInferenceTrace_conv.csv", 19366, 1155, 211, 3501721937000LL);
	replay("AzureLLMInferenceTrace_code.csv", 8819, 2048, 28, 3435948056000LL);
	CU_ASSERT_EQUAL_FATAL(ema_trace_read(path, EMA_TRACE_AZURE, &w, &err), 0);
	CU_ASSERT_EQUAL(w.reqs[1].arrival_ns, 4314579000LL);  /* 18:15:50.9951690 */
	CU_ASSERT_EQUAL(w.reqs[1].prompt_tokens, 396);
	ema_workload_free(&w);

	/* a 10-minute window of the hour, twice as fast */
	c.source = EMA_WL_TRACE;
	CU_ASSERT_FATAL(strlen(path) < sizeof c.trace);
	memcpy(c.trace, path, strlen(path) + 1);
	c.start_s = 600;
	c.duration_s = 600;
	c.rate_scale = 2;
	build_ok(&c, 0, &w);
	CU_ASSERT(w.n > 1000 && w.n < 19366);
	CU_ASSERT_EQUAL(w.reqs[0].arrival_ns, 0);
	CU_ASSERT(w.reqs[w.n - 1].arrival_ns < 300000000000LL);
	ema_workload_free(&w);
}

static void test_real_mooncake(void)
{
	/* means computed independently (Python's json module) */
	replay("mooncake_synthetic_trace.jsonl", 3993, 15325.48, 149.12, 1022025000000LL);
}

static void test_real_sharegpt(void)
{
	struct ema_workload w;
	struct ema_workload_cfg c = synth_cfg();
	char path[4600];
	double pm, om, cv;

	shared_path(path, sizeof path, "sharegpt_8k_filtered_stats_llama2_tokenizer.csv");
	replay("sharegpt_8k_filtered_stats_llama2_tokenizer.csv", 30731, 2340, 439, 0);
	c.source = EMA_WL_LENGTHS;
	CU_ASSERT_FATAL(strlen(path) < sizeof c.trace);
	memcpy(c.trace, path, strlen(path) + 1);
	c.max_requests = 50000;
	build_ok(&c, 3, &w);
	len_stats(&w, true, &pm, &cv);
	len_stats(&w, false, &om, &cv);
	CU_ASSERT(fabs(pm / 2340 - 1) < 0.03);
	CU_ASSERT(fabs(om / 439 - 1) < 0.03);
	ema_workload_free(&w);
}

static const struct ema_test_case cases[] = {
	{ "format names", test_format_names },
	{ "seed derivation", test_seed_derive },
	{ "azure 2023 (CRLF, no final newline)", test_azure_2023 },
	{ "azure 2024 (BOM, +00:00, 0..9 digits)", test_azure_2024 },
	{ "utc offsets", test_utc_offset },
	{ "vidur", test_vidur },
	{ "burstgpt (failed rows skipped)", test_burstgpt },
	{ "mooncake jsonl", test_mooncake },
	{ "length-only csv", test_lengths },
	{ "line endings, BOM, final newline", test_line_endings },
	{ "read errors with file:line", test_read_errors },
	{ "error on line 17", test_error_line_17 },
	{ "missing file", test_missing_file },
	{ "folder or unreadable file", test_unreadable_paths },
	{ "endless or too large: EMA_TRACE_MAX_GIB", test_size_limit },
	{ "poisson arrivals", test_poisson },
	{ "gamma arrivals", test_gamma },
	{ "generated lengths", test_lengths_gen },
	{ "determinism and separate streams", test_determinism },
	{ "empirical lengths", test_empirical },
	{ "trace window, scale, cap", test_window },
	{ "configuration errors", test_build_errors },
	{ "rows cut by the window and the cap", test_cut_counts },
	{ "trace through a FIFO", test_fifo_trace },
	{ "one read of a trace for several tenants", test_shared_reads },
	{ "lengths file as a trace", test_lengths_as_trace },
	{ "rate_scale overflow", test_scale_overflow },
	{ NULL, NULL }
};

/* tests/test_workload_traces: the public traces */
static const struct ema_test_case trace_cases[] = {
	{ "real azure traces", test_real_azure },
	{ "real mooncake trace", test_real_mooncake },
	{ "real sharegpt lengths", test_real_sharegpt },
	{ NULL, NULL }
};

int main(void)
{
	gsl_set_error_handler_off();
	return ema_test_main("workload", cases, trace_cases);
}
