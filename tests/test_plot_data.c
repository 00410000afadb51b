/* test_plot_data.c: the data files the figures draw (plots/plot_data.h),
 * prepared from small hand-written CSV files whose curves and stacks are
 * computed by hand, and from long ones that must come out cut to what a
 * figure can show while keeping their extremes; bad CSV files give a
 * located error. No gnuplot needed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plot_data.h"
#include "test_main.h"

static char dir[64];

static void path_of(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", dir, name);
}

static void write_text(const char *name, const char *text)
{
	char path[128];
	FILE *f;

	path_of(path, sizeof path, name);
	f = fopen(path, "w");
	CU_ASSERT_FATAL(f != NULL);
	fputs(text, f);
	fclose(f);
}

/* The rows of a prepared file: blocks (split at blank lines), each row's
 * numbers and trailing words. */
struct row {
	int block;
	double v[8];
	int nv;
	char word[2][32];
};

static int read_rows(const char *name, struct row *rows, int max, int *blocks)
{
	char path[128], line[512];
	FILE *f;
	int n = 0, block = 0, blank = 0;

	path_of(path, sizeof path, name);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL) {
		char *tok, *save = NULL;
		struct row r;

		if (line[0] == '#')
			continue;
		if (line[0] == '\n') {
			blank++;
			continue;
		}
		if (blank > 0) {
			/* two blank lines separate blocks */
			if (blank == 2)
				block++;
			blank = 0;
		}
		memset(&r, 0, sizeof r);
		r.block = block;
		for (tok = strtok_r(line, " \n", &save); tok != NULL; tok = strtok_r(NULL, " \n", &save)) {
			char *end;
			double v = strtod(tok, &end);

			if (*end == '\0' && r.nv < 8 && r.word[0][0] == '\0')
				r.v[r.nv++] = v;
			else if (r.word[0][0] == '\0')
				snprintf(r.word[0], sizeof r.word[0], "%s", tok);
			else
				snprintf(r.word[1], sizeof r.word[1], "%s", tok);
		}
		if (n < max)
			rows[n] = r;
		n++;
	}
	fclose(f);
	*blocks = block + 1;
	return n;
}

static const char *const two[] = { "a", "b" };

/* TTFT counts every request of the policy, TPOT only those with one; equal
 * values make one step; rows of other policies are left out. */
static void test_cdf_by_hand(void)
{
	char in[128], out[128];
	struct ema_error err = { 0 };
	struct row rows[16];
	int n, blocks;

	write_text("requests.csv",
		   "policy,tenant,ttft_ms,tpot_ms\n"
		   "a,t0,10,1.5\n"
		   "a,t0,20,\n"
		   "c,t0,1,1\n"
		   "a,t0,,0\n"
		   "a,t0,20,3\r\n");
	path_of(in, sizeof in, "requests.csv");
	path_of(out, sizeof out, "cdf.dat");
	CU_ASSERT_EQUAL_FATAL(ema_plots_cdf_data(in, out, two, 2, &err), EMA_OK);
	n = read_rows("cdf.dat", rows, 16, &blocks);
	CU_ASSERT_EQUAL_FATAL(n, 6);
	CU_ASSERT_EQUAL(blocks, 4);
	/* a, TTFT: 10 ms for 1 of 4 requests, 20 ms for 3 of 4 */
	CU_ASSERT_EQUAL(rows[0].block, 0);
	CU_ASSERT_DOUBLE_EQUAL(rows[0].v[0], 10, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(rows[0].v[1], 0.25, 1e-12);
	CU_ASSERT_STRING_EQUAL(rows[0].word[0], "a");
	CU_ASSERT_DOUBLE_EQUAL(rows[1].v[0], 20, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(rows[1].v[1], 0.75, 1e-12);
	/* a, TPOT: 1.5 and 3 ms, each half of the two requests with one */
	CU_ASSERT_EQUAL(rows[2].block, 1);
	CU_ASSERT_DOUBLE_EQUAL(rows[2].v[0], 1.5, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(rows[2].v[1], 0.5, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(rows[3].v[0], 3, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(rows[3].v[1], 1.0, 1e-12);
	/* b has no request: one NaN row per curve keeps the block numbers */
	CU_ASSERT_EQUAL(rows[4].block, 2);
	CU_ASSERT(isnan(rows[4].v[0]));
	CU_ASSERT_STRING_EQUAL(rows[4].word[0], "b");
	CU_ASSERT_EQUAL(rows[5].block, 3);
	CU_ASSERT(isnan(rows[5].v[1]));
}

/* 100,000 distinct TTFTs: at most EMA_PLOTS_CDF_POINTS + 1 points, rising,
 * no step taller than 1/EMA_PLOTS_CDF_POINTS (and one request), and the
 * smallest and largest values kept. */
static void test_cdf_cut(void)
{
	enum { N = 100000 };
	char in[128], out[128];
	struct ema_error err = { 0 };
	static struct row rows[N];
	int n, blocks, ttft = 0;
	FILE *f;

	path_of(in, sizeof in, "requests.csv");
	f = fopen(in, "w");
	CU_ASSERT_FATAL(f != NULL);
	fputs("policy,ttft_ms,tpot_ms\n", f);
	/* a scrambled order: the CSV is in request order, not sorted */
	for (int i = 0; i < N; i++)
		fprintf(f, "a,%d.5,\n", (int)(((long)i * 7919) % N) + 1);
	fclose(f);
	path_of(out, sizeof out, "cdf.dat");
	CU_ASSERT_EQUAL_FATAL(ema_plots_cdf_data(in, out, two, 1, &err), EMA_OK);
	n = read_rows("cdf.dat", rows, N, &blocks);
	CU_ASSERT_EQUAL(blocks, 2);
	for (int i = 0; i < n && rows[i].block == 0; i++)
		ttft++;
	CU_ASSERT(ttft > EMA_PLOTS_CDF_POINTS / 2);
	CU_ASSERT(ttft <= EMA_PLOTS_CDF_POINTS + 1);
	CU_ASSERT_DOUBLE_EQUAL(rows[0].v[0], 1.5, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(rows[0].v[1], 1.0 / N, 1e-15);
	CU_ASSERT_DOUBLE_EQUAL(rows[ttft - 1].v[0], N + 0.5, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(rows[ttft - 1].v[1], 1.0, 1e-12);
	for (int i = 1; i < ttft; i++) {
		CU_ASSERT(rows[i].v[0] > rows[i - 1].v[0]);
		CU_ASSERT(rows[i].v[1] > rows[i - 1].v[1]);
		CU_ASSERT(rows[i].v[1] - rows[i - 1].v[1] <= 1.0 / EMA_PLOTS_CDF_POINTS + 1.0 / N + 1e-12);
	}
	/* no TPOT at all: one NaN row */
	CU_ASSERT_EQUAL(n, ttft + 1);
	CU_ASSERT(isnan(rows[ttft].v[0]));
}

/* The stack's running sums, blocks per (policy, GPU) with GPUs in order of
 * first appearance, a NaN row for a pair without rows. */
static void test_memory_by_hand(void)
{
	char in[128], out[128], gpus[64];
	struct ema_error err = { 0 };
	struct row rows[16];
	int n, blocks;

	write_text("timeline.csv",
		   "policy,time_s,gpu,weights_gib,kv_used_gib,staging_gib,free_gib,lent_gib,borrowed_gib,x\n"
		   "a,0.0,1,1,2,0.5,3,0.25,1,9\n"
		   "a,0.0,0,4,0,0,6,0,0,9\n"
		   "a,0.5,1,1,2.5,0.5,2.5,0.25,0,9\n"
		   "b,0.0,1,1,0,0,5,0,0,9\n");
	path_of(in, sizeof in, "timeline.csv");
	path_of(out, sizeof out, "memory.dat");
	CU_ASSERT_EQUAL_FATAL(ema_plots_memory_data(in, out, two, 2, gpus, sizeof gpus, &err),
			      EMA_OK);
	CU_ASSERT_STRING_EQUAL(gpus, "1 0");
	n = read_rows("memory.dat", rows, 16, &blocks);
	CU_ASSERT_EQUAL_FATAL(n, 5);
	CU_ASSERT_EQUAL(blocks, 4);
	/* (a, GPU 1) at 0 s: weights 1, +KV 2, +staging 0.5, +lent 0.25,
	 * +free 3, +borrowed 1 */
	CU_ASSERT_EQUAL(rows[0].block, 0);
	CU_ASSERT_EQUAL(rows[0].nv, 7);
	CU_ASSERT_DOUBLE_EQUAL(rows[0].v[0], 0.0, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(rows[0].v[1], 1.0, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(rows[0].v[2], 3.0, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(rows[0].v[3], 3.5, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(rows[0].v[4], 3.75, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(rows[0].v[5], 6.75, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(rows[0].v[6], 7.75, 1e-12);
	CU_ASSERT_STRING_EQUAL(rows[0].word[0], "a");
	CU_ASSERT_STRING_EQUAL(rows[0].word[1], "1");
	CU_ASSERT_EQUAL(rows[1].block, 0);
	CU_ASSERT_DOUBLE_EQUAL(rows[1].v[0], 0.5, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(rows[1].v[6], 6.75, 1e-12);
	/* (a, GPU 0) */
	CU_ASSERT_EQUAL(rows[2].block, 1);
	CU_ASSERT_DOUBLE_EQUAL(rows[2].v[5], 10.0, 1e-12);
	CU_ASSERT_STRING_EQUAL(rows[2].word[1], "0");
	/* (b, GPU 1), then (b, GPU 0) without rows */
	CU_ASSERT_EQUAL(rows[3].block, 2);
	CU_ASSERT_DOUBLE_EQUAL(rows[3].v[5], 6.0, 1e-12);
	CU_ASSERT_EQUAL(rows[4].block, 3);
	CU_ASSERT(isnan(rows[4].v[0]));
	CU_ASSERT_STRING_EQUAL(rows[4].word[0], "b");
	CU_ASSERT_STRING_EQUAL(rows[4].word[1], "0");
}

/* 20,000 rows of one GPU: at most two rows per time bucket, the first and
 * last times kept, and a one-row spike and dip kept exactly. */
static void test_memory_cut(void)
{
	enum { N = 20000 };
	char in[128], out[128], gpus[64];
	struct ema_error err = { 0 };
	static struct row rows[N];
	double top = 0, bottom = 1e9;
	int n, blocks;
	FILE *f;

	path_of(in, sizeof in, "timeline.csv");
	f = fopen(in, "w");
	CU_ASSERT_FATAL(f != NULL);
	fputs("policy,time_s,gpu,weights_gib,kv_used_gib,staging_gib,free_gib,lent_gib,borrowed_gib\n", f);
	for (int i = 0; i < N; i++) {
		double kv = i == 12345 ? 50 : (i == 777 ? 0 : 10 + (i % 7));

		fprintf(f, "a,%.1f,0,5,%g,0,%g,0,0\n", 0.5 * i, kv, 100 - kv);
	}
	fclose(f);
	path_of(out, sizeof out, "memory.dat");
	CU_ASSERT_EQUAL_FATAL(ema_plots_memory_data(in, out, two, 1, gpus, sizeof gpus, &err),
			      EMA_OK);
	n = read_rows("memory.dat", rows, N, &blocks);
	CU_ASSERT_EQUAL(blocks, 1);
	CU_ASSERT(n <= 2 * EMA_PLOTS_TIME_BUCKETS);
	CU_ASSERT(n >= EMA_PLOTS_TIME_BUCKETS);
	CU_ASSERT_DOUBLE_EQUAL(rows[0].v[0], 0.0, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(rows[n - 1].v[0], 0.5 * (N - 1), 1e-9);
	for (int i = 0; i < n; i++) {
		if (i > 0)
			CU_ASSERT(rows[i].v[0] >= rows[i - 1].v[0]);
		top = fmax(top, rows[i].v[2]);
		bottom = fmin(bottom, rows[i].v[2]);
		/* capacity stays where it is: weights + KV + free */
		CU_ASSERT_DOUBLE_EQUAL(rows[i].v[5], 105, 1e-9);
	}
	CU_ASSERT_DOUBLE_EQUAL(top, 55, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(bottom, 5, 1e-12);
}

static void test_errors(void)
{
	char in[128], out[128], gpus[8];
	struct ema_error err = { 0 };

	path_of(in, sizeof in, "bad.csv");
	path_of(out, sizeof out, "bad.dat");
	write_text("bad.csv", "policy,ttft_ms\na,1\n");
	CU_ASSERT_EQUAL(ema_plots_cdf_data(in, out, two, 2, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "bad.csv:1: expected a column 'tpot_ms'"));
	write_text("bad.csv", "policy,ttft_ms,tpot_ms\na,1,2\na,fast,2\n");
	CU_ASSERT_EQUAL(ema_plots_cdf_data(in, out, two, 2, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "bad.csv:3: expected a number in column ttft_ms, found 'fast'"));
	write_text("bad.csv", "policy,ttft_ms,tpot_ms\na,1\n");
	CU_ASSERT_EQUAL(ema_plots_cdf_data(in, out, two, 2, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "bad.csv:2: expected at least 3 fields, found 2"));
	write_text("bad.csv", "");
	CU_ASSERT_EQUAL(ema_plots_cdf_data(in, out, two, 2, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "bad.csv:1: expected a header line"));
	CU_ASSERT_EQUAL(access(out, F_OK), -1);

	write_text("bad.csv", "policy,time_s,gpu,weights_gib,kv_used_gib,staging_gib,free_gib,lent_gib,borrowed_gib\n"
		   "c,0,0,1,1,1,1,1,1\n");
	/* no row of the run's policies: no block (memory.gp says so) */
	CU_ASSERT_EQUAL(ema_plots_memory_data(in, out, two, 2, gpus, sizeof gpus, &err), EMA_OK);
	{
		struct row r[2];
		int blocks;

		CU_ASSERT_EQUAL(read_rows("bad.dat", r, 2, &blocks), 0);
		CU_ASSERT_STRING_EQUAL(gpus, "");
		unlink(out);
	}
	write_text("bad.csv", "policy,time_s,gpu,weights_gib,kv_used_gib,staging_gib,free_gib,lent_gib,borrowed_gib\n"
		   "a,0,g 0,1,1,1,1,1,1\n");
	CU_ASSERT_EQUAL(ema_plots_memory_data(in, out, two, 2, gpus, sizeof gpus, &err),
			EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "bad.csv:2: expected a GPU number in column gpu, found 'g 0'"));
	path_of(in, sizeof in, "missing.csv");
	CU_ASSERT_EQUAL(ema_plots_memory_data(in, out, two, 2, gpus, sizeof gpus, &err),
			EMA_ERR_IO);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "missing.csv: cannot open"));
	CU_ASSERT_EQUAL(access(out, F_OK), -1);
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{ "CDF points by hand", test_cdf_by_hand },
		{ "CDF of 100,000 requests cut to the figure", test_cdf_cut },
		{ "memory stack by hand", test_memory_by_hand },
		{ "memory of 20,000 rows cut to the figure", test_memory_cut },
		{ "bad CSV files", test_errors },
		{ NULL, NULL }
	};
	int rc;

	snprintf(dir, sizeof dir, "/tmp/ema_test_plot_data.XXXXXX");
	if (mkdtemp(dir) == NULL)
		return 99;
	rc = ema_test_run("plot_data", cases);
	{
		static const char *const files[] = {
			"requests.csv", "cdf.dat", "timeline.csv", "memory.dat", "bad.csv", "bad.dat", NULL
		};
		char path[128];

		for (int i = 0; files[i] != NULL; i++) {
			path_of(path, sizeof path, files[i]);
			unlink(path);
		}
		rmdir(dir);
	}
	return rc;
}
