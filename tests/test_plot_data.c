/* test_plot_data.c: the data the memory and latency figures draw
 * (plots/plot_data.c): which rows of a long timeline a figure keeps (each
 * pixel column's first, last, minimum and maximum; a short series
 * whole), which points of a CDF, and the .dat files written from small
 * hand-written CSV files, with every error a user's file can cause. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plot_data.h"
#include "test_main.h"

static char dir[4096];

static void path_of(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", dir, name);
}

static void write_file(const char *name, const char *text)
{
	char path[4400];
	FILE *f;

	path_of(path, sizeof path, name);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	fclose(f);
}

/* The file without its comment lines, in a static buffer. */
static const char *data_of(const char *name)
{
	static char buf[1 << 16];
	char path[4400], line[512];
	size_t len = 0;
	FILE *f;

	buf[0] = '\0';
	path_of(path, sizeof path, name);
	f = fopen(path, "r");
	if (f == NULL)
		return "(missing)";
	while (fgets(line, sizeof line, f) != NULL)
		if (line[0] != '#' && len + strlen(line) < sizeof buf) {
			memcpy(buf + len, line, strlen(line) + 1);
			len += strlen(line);
		}
	fclose(f);
	return buf;
}

static struct ema_plots_point pts[32];
static size_t keep[32];

static void set_series(size_t n, const double *t, const double *y0, const double *y1)
{
	memset(pts, 0, sizeof pts);
	for (size_t i = 0; i < n; i++) {
		pts[i].t = t[i];
		pts[i].y[0] = y0[i];
		pts[i].y[1] = y1 != NULL ? y1[i] : 0;
	}
}

static void assert_keep(size_t got, const size_t *want, size_t n)
{
	CU_ASSERT_EQUAL_FATAL(got, n);
	for (size_t i = 0; i < n; i++)
		CU_ASSERT_EQUAL(keep[i], want[i]);
}

/* At most 2 x buckets rows: every one, whatever the values. */
static void test_short_series(void)
{
	const double t[] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	const double y[] = { 5, 9, 1, 5, 5, 7, 0, 5 };
	const size_t all[] = { 0, 1, 2, 3, 4, 5, 6, 7 };

	set_series(8, t, y, NULL);
	assert_keep(ema_plots_cut_timeline(pts, 8, 1, 0, 7, 4, keep), all, 8);
	/* a zero-width axis or no columns: nothing to cut by */
	assert_keep(ema_plots_cut_timeline(pts, 8, 1, 3, 3, 1, keep), all, 8);
	assert_keep(ema_plots_cut_timeline(pts, 8, 1, 0, 7, 0, keep), all, 8);
	CU_ASSERT_EQUAL(ema_plots_cut_timeline(pts, 0, 1, 0, 7, 4, keep), 0);
}

/* 20 rows at t = 0..19 over [0, 19] in 2 columns: t <= 9 is column 0
 * (9 / 19 x 2 = 0.95), t >= 10 column 1. Per column its first and last
 * row and the first row of each curve's minimum and maximum. */
static void test_min_max_per_column(void)
{
	double t[20], y0[20], y1[20];
	const size_t one[] = { 0, 3, 7, 9, 10, 12, 15, 19 };
	const size_t two[] = { 0, 3, 5, 7, 9, 10, 12, 15, 17, 19 };

	for (int i = 0; i < 20; i++) {
		t[i] = i;
		y0[i] = 5;
		y1[i] = 2;
	}
	y0[3] = 1;   /* column 0's minimum, first of two */
	y0[8] = 1;
	y0[7] = 9;   /* column 0's maximum */
	y0[12] = 0;  /* column 1's minimum */
	y0[15] = 8;  /* column 1's maximum */
	y1[5] = 3;   /* the second curve's maximum in column 0 (minimum: row 0) */
	y1[17] = 1;  /* its minimum in column 1 (maximum: row 10) */
	set_series(20, t, y0, y1);
	assert_keep(ema_plots_cut_timeline(pts, 20, 1, 0, 19, 2, keep), one, 8);
	assert_keep(ema_plots_cut_timeline(pts, 20, 2, 0, 19, 2, keep), two, 10);
}

/* Columns without rows give nothing; a flat column keeps its first and
 * last row; the axis is the figure's, wider than the series. */
static void test_columns_and_axis(void)
{
	double t[20], y[20];
	const size_t gap[] = { 0, 9, 10, 19 };
	const size_t inner[] = { 0, 4, 9 };

	for (int i = 0; i < 20; i++) {
		t[i] = i < 10 ? i : 90 + i; /* 0..9, then 100..109 */
		y[i] = 1;
	}
	set_series(20, t, y, NULL);
	/* [0, 109] in 4 columns of 27.25 s: 0..9 in the first, 100..109 in
	 * the last (109 is the axis' end, kept in the last column) */
	assert_keep(ema_plots_cut_timeline(pts, 20, 1, 0, 109, 4, keep), gap, 4);

	for (int i = 0; i < 10; i++) {
		t[i] = 5 + i;
		y[i] = i == 4 ? 7 : 2;
	}
	set_series(10, t, y, NULL);
	/* all ten rows in column 0 of [0, 100]: first, maximum, last */
	assert_keep(ema_plots_cut_timeline(pts, 10, 1, 0, 100, 2, keep), inner, 3);
}

/* A row equal to the rows kept before and after it adds nothing to the
 * line; the ends stay. */
static void test_drop_flat(void)
{
	const double t[] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	const double y[] = { 1, 1, 1, 2, 2, 2, 2, 1 };
	const double z[] = { 0, 0, 0, 0, 3, 0, 0, 0 };
	const size_t one[] = { 0, 2, 3, 6, 7 };
	const size_t two[] = { 0, 2, 3, 4, 5, 6, 7 };
	const size_t ends[] = { 0, 7 };
	const size_t flat[] = { 0, 7 };

	set_series(8, t, y, NULL);
	for (size_t i = 0; i < 8; i++)
		keep[i] = i;
	assert_keep(ema_plots_drop_flat(pts, 1, keep, 8), one, 5);
	/* a second curve that moves keeps its rows */
	set_series(8, t, y, z);
	for (size_t i = 0; i < 8; i++)
		keep[i] = i;
	assert_keep(ema_plots_drop_flat(pts, 2, keep, 8), two, 7);
	/* on kept rows only: 0 and 7 of a cut, whatever lies between */
	keep[0] = 0;
	keep[1] = 7;
	assert_keep(ema_plots_drop_flat(pts, 2, keep, 2), ends, 2);
	for (size_t i = 0; i < 8; i++) {
		pts[i].y[0] = 4;
		keep[i] = i;
	}
	assert_keep(ema_plots_drop_flat(pts, 1, keep, 8), flat, 2);
	CU_ASSERT_EQUAL(ema_plots_drop_flat(pts, 1, keep, 0), 0);
}

static double cx[32], cf[32];

static void assert_cdf(size_t got, const double *x, const double *f, size_t n)
{
	CU_ASSERT_EQUAL_FATAL(got, n);
	for (size_t i = 0; i < n; i++) {
		CU_ASSERT_DOUBLE_EQUAL(cx[i], x[i], 1e-12);
		CU_ASSERT_DOUBLE_EQUAL(cf[i], f[i], 1e-12);
	}
}

static void test_cdf_points(void)
{
	const double v1[] = { 1, 2, 3, 4 };
	const double v2[] = { 1, 1, 2, 3, 3, 3 };
	const double v4[] = { 1, 2, 2, 2, 2, 2, 3 };
	double v3[10];

	/* few values: every one, fractions over the denominator */
	assert_cdf(ema_plots_cut_cdf(v1, 4, 4, 1000, cx, cf), (const double[]){ 1, 2, 3, 4 },
		   (const double[]){ 0.25, 0.5, 0.75, 1 }, 4);
	/* equal values are one step, at the end of their run; two of the 8
	 * requests never got one: the curve tops out at 6/8 */
	assert_cdf(ema_plots_cut_cdf(v2, 6, 8, 1000, cx, cf), (const double[]){ 1, 2, 3 },
		   (const double[]){ 2.0 / 8, 3.0 / 8, 6.0 / 8 }, 3);
	/* 10 values, 3 points: a point where the count grew by ceil(10/3) = 4
	 * since the last kept (1, 5, 9), and the last one */
	for (int i = 0; i < 10; i++)
		v3[i] = i + 1;
	assert_cdf(ema_plots_cut_cdf(v3, 10, 10, 3, cx, cf), (const double[]){ 1, 5, 9, 10 },
		   (const double[]){ 0.1, 0.5, 0.9, 1.0 }, 4);
	/* a run of equal values crosses the step: its end is the point */
	assert_cdf(ema_plots_cut_cdf(v4, 7, 7, 2, cx, cf), (const double[]){ 1, 2, 3 },
		   (const double[]){ 1.0 / 7, 6.0 / 7, 1.0 }, 3);
	CU_ASSERT_EQUAL(ema_plots_cut_cdf(v1, 0, 4, 1000, cx, cf), 0);
}

static const char timeline[] =
	"policy,time_s,gpu,weights_gib,kv_used_gib,staging_gib,free_gib,lent_gib,borrowed_gib,x\n"
	"static,0.0,0,10,1,0,5,0,0,7\n"
	"static,0.0,1,10,0,0,6,0,0,7\n"
	"static,0.5,0,10,2,0,4,0,0,7\n"
	"\n"
	"ema,0.0,0,10,1,0,4,1,0,7\n";

/* Seven blocks per (policy, GPU): weights, KV, staging, lent, free and
 * borrowed as "lower upper", the capacity line; an area of no height is
 * its first row alone; a (policy, GPU) without rows is NaN. */
static void test_memory_data(void)
{
	const char *want =
		/* static, GPU 0: stacks 10 11 11 11 16 16, then 10 12 12 12 16 16 */
		"0 0 10 static 0\n0.5 0 10 static 0\n\n\n"
		"0 10 11 static 0\n0.5 10 12 static 0\n\n\n"
		"0 11 11 static 0\n\n\n"
		"0 11 11 static 0\n\n\n"
		"0 11 16 static 0\n0.5 12 16 static 0\n\n\n"
		"0 16 16 static 0\n\n\n"
		"0 16 16 static 0\n0.5 16 16 static 0\n\n\n"
		/* static, GPU 1: 10 10 10 10 16 16 */
		"0 0 10 static 1\n\n\n"
		"0 10 10 static 1\n\n\n"
		"0 10 10 static 1\n\n\n"
		"0 10 10 static 1\n\n\n"
		"0 10 16 static 1\n\n\n"
		"0 16 16 static 1\n\n\n"
		"0 16 16 static 1\n\n\n"
		/* ema, GPU 0: weights 10, KV 1, staging 0, lent 1, free 4 */
		"0 0 10 ema 0\n\n\n"
		"0 10 11 ema 0\n\n\n"
		"0 11 11 ema 0\n\n\n"
		"0 11 12 ema 0\n\n\n"
		"0 12 16 ema 0\n\n\n"
		"0 16 16 ema 0\n\n\n"
		"0 16 16 ema 0\n\n\n"
		"NaN NaN NaN ema 1\n\n\nNaN NaN NaN ema 1\n\n\nNaN NaN NaN ema 1\n\n\n"
		"NaN NaN NaN ema 1\n\n\nNaN NaN NaN ema 1\n\n\nNaN NaN NaN ema 1\n\n\n"
		"NaN NaN NaN ema 1\n";
	struct ema_error err = { 0 };
	char in[4400], out[4400];

	write_file("timeline.csv", timeline);
	path_of(in, sizeof in, "timeline.csv");
	path_of(out, sizeof out, "memory.dat");
	CU_ASSERT_EQUAL_FATAL(ema_plots_memory_data(in, out, "static ema", &err), EMA_OK);
	CU_ASSERT_STRING_EQUAL(data_of("memory.dat"), want);
	/* without a list, the policies as they come: the same file */
	CU_ASSERT_EQUAL_FATAL(ema_plots_memory_data(in, out, NULL, &err), EMA_OK);
	CU_ASSERT_STRING_EQUAL(data_of("memory.dat"), want);
	/* one policy: the rows of the others are skipped, GPUs too */
	CU_ASSERT_EQUAL_FATAL(ema_plots_memory_data(in, out, "ema", &err), EMA_OK);
	CU_ASSERT_STRING_EQUAL(data_of("memory.dat"),
			       "0 0 10 ema 0\n\n\n0 10 11 ema 0\n\n\n0 11 11 ema 0\n\n\n"
			       "0 11 12 ema 0\n\n\n0 12 16 ema 0\n\n\n0 16 16 ema 0\n\n\n"
			       "0 16 16 ema 0\n");
}

/* A long series in the file is cut: 4,000 rows at t = 0..3999 over 500
 * columns of 8 s keep at most 4 rows a column (first, last, the KV's
 * minimum and maximum: the weights below it are flat), the first and the
 * last row among them. */
static void test_memory_data_cut(void)
{
	struct ema_error err = { 0 };
	char in[4400], out[4400], path[4400], line[256], first[256] = "", last[256] = "";
	size_t rows = 0, len = 0;
	char *text = malloc(400000);
	int block = 0, blank = 0;
	FILE *f;

	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	len += (size_t)sprintf(text + len, "policy,time_s,gpu,weights_gib,kv_used_gib,staging_gib,"
			       "free_gib,lent_gib,borrowed_gib\n");
	for (int i = 0; i < 4000; i++)
		len += (size_t)sprintf(text + len, "static,%d,0,10,%d,0,%d,0,0\n", i, i % 7,
				       10 - i % 7);
	write_file("long.csv", text);
	free(text);
	path_of(in, sizeof in, "long.csv");
	path_of(out, sizeof out, "long.dat");
	CU_ASSERT_EQUAL_FATAL(ema_plots_memory_data(in, out, "static", &err), EMA_OK);
	path_of(path, sizeof path, "long.dat");
	f = fopen(path, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	while (fgets(line, sizeof line, f) != NULL) {
		if (line[0] == '#')
			continue;
		if (line[0] == '\n') {
			if (++blank == 2)
				block++;
			continue;
		}
		blank = 0;
		if (block == 1) { /* the KV area */
			if (rows++ == 0)
				snprintf(first, sizeof first, "%s", line);
			snprintf(last, sizeof last, "%s", line);
		}
	}
	fclose(f);
	CU_ASSERT(rows >= 2 * EMA_PLOTS_TIME_BUCKETS && rows <= 4 * EMA_PLOTS_TIME_BUCKETS);
	CU_ASSERT_STRING_EQUAL(first, "0 10 10 static 0\n");
	CU_ASSERT_STRING_EQUAL(last, "3999 10 12 static 0\n"); /* 3999 % 7 = 2 */
}

static const char requests[] =
	"request,policy,tenant,ttft_ms,tpot_ms,e2e_ms\n"
	"0,static,a,10,2,1\n"
	"1,static,a,20,,1\n"
	"2,static,a,,,\n"
	"3,static,b,5,1,1\n"
	"4,ema,a,15,3,1\n"
	"5,static,b,0,0,1\n";

/* Two blocks per (tenant, policy): TTFT over all the requests, TPOT over
 * those with one; empty and non-positive values left out. */
static void test_cdf_data(void)
{
	const char *want =
		"10 0.3333333333 static a\n20 0.6666666667 static a\n\n\n"
		"2 1 static a\n\n\n"
		"15 1 ema a\n\n\n"
		"3 1 ema a\n\n\n"
		"5 0.5 static b\n\n\n"
		"1 1 static b\n\n\n"
		"NaN NaN ema b\n\n\n"
		"NaN NaN ema b\n";
	struct ema_error err = { 0 };
	char in[4400], out[4400];

	write_file("requests.csv", requests);
	path_of(in, sizeof in, "requests.csv");
	path_of(out, sizeof out, "latency_cdf.dat");
	CU_ASSERT_EQUAL_FATAL(ema_plots_cdf_data(in, out, "static ema", &err), EMA_OK);
	CU_ASSERT_STRING_EQUAL(data_of("latency_cdf.dat"), want);
	CU_ASSERT_EQUAL_FATAL(ema_plots_cdf_data(in, out, "", &err), EMA_OK);
	CU_ASSERT_STRING_EQUAL(data_of("latency_cdf.dat"), want);
	/* a policy the file lacks: empty curves */
	CU_ASSERT_EQUAL_FATAL(ema_plots_cdf_data(in, out, "ideal", &err), EMA_OK);
	CU_ASSERT_STRING_EQUAL(data_of("latency_cdf.dat"), "");
}

/* expect_error CALL CODE TEXT: the call fails with CODE and says TEXT. */
#define EXPECT_ERROR(call, code, text)                                        \
	do {                                                                  \
		struct ema_error e_ = { 0 };                                  \
		struct ema_error *err = &e_;                                  \
		CU_ASSERT_EQUAL(call, code);                                  \
		if (strstr(e_.msg, text) == NULL)                             \
			fprintf(stderr, "\nwanted '%s' in '%s'\n", text, e_.msg); \
		CU_ASSERT_PTR_NOT_NULL(strstr(e_.msg, text));                 \
	} while (0)

static void test_errors(void)
{
	char in[4400], out[4400], nodir[4400];

	path_of(in, sizeof in, "bad.csv");
	path_of(out, sizeof out, "bad.dat");
	path_of(nodir, sizeof nodir, "no/such/folder.dat");

	write_file("bad.csv", "");
	EXPECT_ERROR(ema_plots_memory_data(in, out, NULL, err), EMA_ERR_INPUT,
		     "bad.csv:1: expected a header line");
	write_file("bad.csv", "policy,time_s,gpu,weights_gib,kv_used_gib\nstatic,0,0,1,1\n");
	EXPECT_ERROR(ema_plots_memory_data(in, out, NULL, err), EMA_ERR_INPUT,
		     "bad.csv:1: expected a column 'staging_gib' in the header");
	write_file("bad.csv", "policy,time_s,gpu,weights_gib,kv_used_gib,staging_gib,free_gib,"
			      "lent_gib,borrowed_gib\nstatic,0,0,1,1,0,1,0,0\nstatic,0.5,0,1,x,0,1,0,0\n");
	EXPECT_ERROR(ema_plots_memory_data(in, out, NULL, err), EMA_ERR_INPUT,
		     "bad.csv:3: expected a number in column kv_used_gib, found 'x'");
	write_file("bad.csv", "policy,time_s,gpu,weights_gib,kv_used_gib,staging_gib,free_gib,"
			      "lent_gib,borrowed_gib\nstatic,0,0\n");
	EXPECT_ERROR(ema_plots_memory_data(in, out, NULL, err), EMA_ERR_INPUT,
		     "bad.csv:2: expected at least 9 fields, found 3");
	write_file("bad.csv", "policy,time_s,gpu,weights_gib,kv_used_gib,staging_gib,free_gib,"
			      "lent_gib,borrowed_gib\nmy policy,0,0,1,1,0,1,0,0\n");
	EXPECT_ERROR(ema_plots_memory_data(in, out, NULL, err), EMA_ERR_INPUT,
		     "bad.csv:2: expected a name without blanks or quotes in column policy, "
		     "found 'my policy'");
	write_file("bad.csv", "policy,time_s,gpu,weights_gib,kv_used_gib,staging_gib,free_gib,"
			      "lent_gib,borrowed_gib\nstatic,0,'0,1,1,0,1,0,0\n");
	EXPECT_ERROR(ema_plots_memory_data(in, out, NULL, err), EMA_ERR_INPUT,
		     "bad.csv:2: expected a name without blanks or quotes in column gpu");
	write_file("bad.csv", timeline);
	EXPECT_ERROR(ema_plots_memory_data(in, nodir, NULL, err), EMA_ERR_IO, "cannot create");
	CU_ASSERT(access(nodir, F_OK) != 0);

	write_file("bad.csv", "policy,tenant,ttft_ms\nstatic,a,1\n");
	EXPECT_ERROR(ema_plots_cdf_data(in, out, NULL, err), EMA_ERR_INPUT,
		     "bad.csv:1: expected a column 'tpot_ms' in the header");
	write_file("bad.csv", "policy,tenant,ttft_ms,tpot_ms\nstatic,a,1,2\nstatic,a,1ms,2\n");
	EXPECT_ERROR(ema_plots_cdf_data(in, out, NULL, err), EMA_ERR_INPUT,
		     "bad.csv:3: expected a number in column ttft_ms, found '1ms'");
	write_file("bad.csv", "policy,tenant,ttft_ms,tpot_ms\nstatic,my tenant,1,2\n");
	EXPECT_ERROR(ema_plots_cdf_data(in, out, NULL, err), EMA_ERR_INPUT,
		     "bad.csv:2: expected a name without blanks or quotes in column tenant");
	write_file("bad.csv", requests);
	EXPECT_ERROR(ema_plots_cdf_data(in, nodir, NULL, err), EMA_ERR_IO, "cannot create");

	path_of(in, sizeof in, "missing.csv");
	EXPECT_ERROR(ema_plots_memory_data(in, out, NULL, err), EMA_ERR_IO, "missing.csv: cannot open");
	EXPECT_ERROR(ema_plots_cdf_data(in, out, NULL, err), EMA_ERR_IO, "missing.csv: cannot open");
}

/* A full disk (here a file size limit) while writing a .dat file: the
 * error gives the reason, and neither the file nor its temporary is left. */
static void test_write_fails(void)
{
	char in[4400], out[4400], tmp[4500], msg[600] = "";
	int pfd[2], status;
	ssize_t n;
	pid_t pid;

	path_of(in, sizeof in, "long.csv");   /* written by test_memory_data_cut */
	path_of(out, sizeof out, "full.dat");
	snprintf(tmp, sizeof tmp, "%s.tmp", out);
	CU_ASSERT_FATAL(pipe(pfd) == 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = { 4096, 4096 };
		struct ema_error err = { 0 };
		int rc;

		signal(SIGXFSZ, SIG_IGN);
		setrlimit(RLIMIT_FSIZE, &rl);
		rc = ema_plots_memory_data(in, out, "static", &err);
		dprintf(pfd[1], "%d %s", rc, err.msg);
		_exit(0);
	}
	close(pfd[1]);
	n = read(pfd[0], msg, sizeof msg - 1);
	close(pfd[0]);
	waitpid(pid, &status, 0);
	msg[n > 0 ? n : 0] = '\0';
	CU_ASSERT_EQUAL(atoi(msg), EMA_ERR_IO);
	if (strstr(msg, "full.dat: cannot write: File too large") == NULL)
		fprintf(stderr, "\nwrite error: %s\n", msg);
	CU_ASSERT_PTR_NOT_NULL(strstr(msg, "full.dat: cannot write: File too large"));
	CU_ASSERT(access(out, F_OK) != 0);
	CU_ASSERT(access(tmp, F_OK) != 0);
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{ "a short series is kept whole", test_short_series },
		{ "first, last, minimum and maximum per column", test_min_max_per_column },
		{ "empty and flat columns, the figure's axis", test_columns_and_axis },
		{ "rows on a flat line left out", test_drop_flat },
		{ "CDF points", test_cdf_points },
		{ "memory.dat from timeline.csv", test_memory_data },
		{ "memory.dat of a long series", test_memory_data_cut },
		{ "latency_cdf.dat from requests.csv", test_cdf_data },
		{ "bad input files", test_errors },
		{ "a write that fails", test_write_fails },
		{ NULL, NULL }
	};

	/* the files of the cases: in the program's temporary folder,
	 * removed with it at exit */
	if (ema_test_scratch() == NULL)
		return 99;
	snprintf(dir, sizeof dir, "%s", ema_test_scratch());
	return ema_test_run("plot_data", cases);
}
