/* test_plots.c: the figures of a small hand-written run folder (two
 * policies, two tenants on two GPUs) come out as real PDF and PNG files,
 * and a folder or a gnuplot that cannot work gives a clear error. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plots.h"
#include "test_main.h"

static char gnuplot[4096];

/* A fresh copy of tests/data/plots in /tmp, because rendering writes into
 * the run folder and the source tree may be read-only (distcheck). */
static int copy_file(const char *from, const char *to)
{
	char buf[8192];
	size_t n;
	FILE *in = fopen(from, "rb"), *out;

	if (in == NULL)
		return -1;
	out = fopen(to, "wb");
	if (out == NULL) {
		fclose(in);
		return -1;
	}
	while ((n = fread(buf, 1, sizeof buf, in)) > 0)
		fwrite(buf, 1, n, out);
	fclose(in);
	return fclose(out);
}

static int make_run(char *dir, size_t size)
{
	static const char *const files[] = {
		"summary.csv", "requests.csv", "timeline.csv", NULL
	};

	snprintf(dir, size, "%s/ema_test_plots.XXXXXX", ema_test_tmp());
	if (mkdtemp(dir) == NULL)
		return -1;
	for (int i = 0; files[i] != NULL; i++) {
		char from[4096], to[4200];

		snprintf(from, sizeof from, "%s/tests/data/plots/%s",
			 ema_test_srcdir(), files[i]);
		snprintf(to, sizeof to, "%s/%s", dir, files[i]);
		if (copy_file(from, to) != 0)
			return -1;
	}
	return 0;
}

static void remove_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		char path[4400];
		struct stat st;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
			remove_tree(path);
		else
			unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

static long file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static int starts_with(const char *path, const void *magic, size_t n)
{
	unsigned char buf[16];
	FILE *f = fopen(path, "rb");
	size_t got;

	if (f == NULL)
		return 0;
	got = fread(buf, 1, n, f);
	fclose(f);
	return got == n && memcmp(buf, magic, n) == 0;
}

static int file_contains(const char *path, const char *needle)
{
	static char buf[65536];
	FILE *f = fopen(path, "r");
	size_t n;

	if (f == NULL)
		return 0;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strstr(buf, needle) != NULL;
}

static void test_names(void)
{
	const char *const *names = NULL;
	int n = ema_plots_names(&names);

	CU_ASSERT_EQUAL(n, 3);
	CU_ASSERT_PTR_NOT_NULL_FATAL(names);
	CU_ASSERT_STRING_EQUAL(names[0], "throughput");
	CU_ASSERT_STRING_EQUAL(names[1], "latency_cdf");
	CU_ASSERT_STRING_EQUAL(names[2], "memory");
	CU_ASSERT_PTR_NULL(names[3]);
	CU_ASSERT_EQUAL(ema_plots_names(NULL), 3);
}

/* Every figure in both formats, with the right magic bytes and more than a
 * blank page's worth of bytes. */
static void test_render(void)
{
	static const unsigned char png_magic[8] = {
		0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'
	};
	char dir[4096], path[4200];
	const char *const *names;
	struct ema_error err = { 0 };
	int rendered = -1, rc, n;

	CU_ASSERT_FATAL(make_run(dir, sizeof dir) == 0);
	rc = ema_plots_render(dir, gnuplot, &rendered, &err);
	if (rc != 0)
		fprintf(stderr, "\nema_plots_render: %s\n", err.msg);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	n = ema_plots_names(&names);
	CU_ASSERT_EQUAL(rendered, n);
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof path, "%s/plots/%s.pdf", dir, names[i]);
		CU_ASSERT(starts_with(path, "%PDF-", 5));
		CU_ASSERT(file_size(path) > 4000);
		snprintf(path, sizeof path, "%s/plots/%s.png", dir, names[i]);
		CU_ASSERT(starts_with(path, png_magic, sizeof png_magic));
		CU_ASSERT(file_size(path) > 8000);
		snprintf(path, sizeof path, "%s/plots/%s.gp", dir, names[i]);
		CU_ASSERT(file_contains(path, "gnuplot -d -c"));
		/* No half-written outputs left behind. */
		snprintf(path, sizeof path, "%s/plots/%s.part.png", dir, names[i]);
		CU_ASSERT_EQUAL(file_size(path), -1);
	}
	snprintf(path, sizeof path, "%s/plots/render.sh", dir);
	CU_ASSERT(access(path, X_OK) == 0);
	/* Policies in order of first appearance in summary.csv. */
	CU_ASSERT(file_contains(path, "policies='static elastic_lru'"));
	/* the figures of the long CSV files draw the data ema prepared */
	CU_ASSERT(file_contains(path, "latency_cdf.gp latency_cdf.dat"));
	CU_ASSERT(file_contains(path, "memory.gp memory.dat"));
	CU_ASSERT(file_contains(path, "throughput.gp ../summary.csv"));
	snprintf(path, sizeof path, "%s/plots/memory.dat", dir);
	CU_ASSERT(file_contains(path, "static 0\n"));
	CU_ASSERT(file_contains(path, "elastic_lru 1\n"));
	snprintf(path, sizeof path, "%s/plots/latency_cdf.dat", dir);
	CU_ASSERT(file_contains(path, " static chat\n"));
	/* both formats' logs end up in gnuplot.log, none left beside it */
	snprintf(path, sizeof path, "%s/plots/gnuplot.memory.png.log", dir);
	CU_ASSERT_EQUAL(file_size(path), -1);
	snprintf(path, sizeof path, "%s/plots/gnuplot.log", dir);
	CU_ASSERT(file_contains(path, "== memory.png"));
	CU_ASSERT(file_contains(path, "== latency_cdf.pdf"));
	if (getenv("EMA_KEEP_PLOTS") != NULL)
		fprintf(stderr, "\nfigures kept in %s/plots\n", dir);
	else
		remove_tree(dir);
}

/* Without gnuplot the scripts are still written, for rendering later. */
static void test_skip(void)
{
	char dir[4096], path[4200];
	struct ema_error err = { 0 };
	int rendered = -1;

	CU_ASSERT_FATAL(make_run(dir, sizeof dir) == 0);
	CU_ASSERT_EQUAL(ema_plots_render(dir, NULL, &rendered, &err), 0);
	CU_ASSERT_EQUAL(rendered, 0);
	CU_ASSERT_EQUAL(ema_plots_render(dir, "", &rendered, &err), 0);
	CU_ASSERT_EQUAL(rendered, 0);
	snprintf(path, sizeof path, "%s/plots/memory.gp", dir);
	CU_ASSERT(file_size(path) > 100);
	snprintf(path, sizeof path, "%s/plots/render.sh", dir);
	CU_ASSERT(file_size(path) > 100);
	/* and the data they draw */
	snprintf(path, sizeof path, "%s/plots/memory.dat", dir);
	CU_ASSERT(file_size(path) > 100);
	snprintf(path, sizeof path, "%s/plots/latency_cdf.dat", dir);
	CU_ASSERT(file_size(path) > 100);
	snprintf(path, sizeof path, "%s/plots/memory.pdf", dir);
	CU_ASSERT_EQUAL(file_size(path), -1);
	remove_tree(dir);
}

static void test_missing_summary(void)
{
	char dir[4096], path[4200];
	struct ema_error err = { 0 };
	int rendered = -1, rc;

	CU_ASSERT_FATAL(make_run(dir, sizeof dir) == 0);
	snprintf(path, sizeof path, "%s/summary.csv", dir);
	unlink(path);
	rc = ema_plots_render(dir, gnuplot, &rendered, &err);
	CU_ASSERT_EQUAL(rc, EMA_ERR_IO);
	CU_ASSERT_EQUAL(err.code, EMA_ERR_IO);
	CU_ASSERT_EQUAL(rendered, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, path));
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "cannot open"));
	/* Nothing is written for a folder that is not a run. */
	snprintf(path, sizeof path, "%s/plots", dir);
	CU_ASSERT_EQUAL(file_size(path), -1);
	remove_tree(dir);
}

static void test_missing_timeline(void)
{
	char dir[4096], path[4200];
	struct ema_error err = { 0 };

	CU_ASSERT_FATAL(make_run(dir, sizeof dir) == 0);
	snprintf(path, sizeof path, "%s/timeline.csv", dir);
	unlink(path);
	CU_ASSERT_EQUAL(ema_plots_render(dir, gnuplot, NULL, &err), EMA_ERR_IO);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "timeline.csv"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "figure memory"));
	remove_tree(dir);
}

static void test_bad_gnuplot(void)
{
	char dir[4096], path[4200];
	struct ema_error err = { 0 };
	int rendered = -1;

	CU_ASSERT_FATAL(make_run(dir, sizeof dir) == 0);
	CU_ASSERT_EQUAL(ema_plots_render(dir, "/nonexistent/bin/gnuplot",
					 &rendered, &err), EMA_ERR_IO);
	CU_ASSERT_EQUAL(err.code, EMA_ERR_IO);
	CU_ASSERT_EQUAL(rendered, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "cannot run gnuplot '/nonexistent/bin/gnuplot'"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "figure throughput"));
	snprintf(path, sizeof path, "%s/plots/throughput.pdf", dir);
	CU_ASSERT_EQUAL(file_size(path), -1);

	/* A program that runs but fails: the figure and the log are named. */
	CU_ASSERT_EQUAL(ema_plots_render(dir, "/bin/false", &rendered, &err),
			EMA_ERR_IO);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "figure throughput (pdf)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "exited with status 1"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "gnuplot.log"));
	remove_tree(dir);
}

/* gnuplot itself rejecting the data: a summary without the throughput
 * column makes the script fail, and gnuplot's complaint reaches err. */
static void test_gnuplot_fails(void)
{
	char dir[4096], path[4200];
	struct ema_error err = { 0 };
	FILE *f;

	CU_ASSERT_FATAL(make_run(dir, sizeof dir) == 0);
	snprintf(path, sizeof path, "%s/summary.csv", dir);
	f = fopen(path, "w");
	CU_ASSERT_FATAL(f != NULL);
	fputs("policy,tenant,gpu\nstatic,chat,0\n", f);
	fclose(f);
	CU_ASSERT_EQUAL(ema_plots_render(dir, gnuplot, NULL, &err), EMA_ERR_IO);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "figure throughput (pdf)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "see "));
	remove_tree(dir);
}

static void write_summary(const char *dir, const char *text)
{
	char path[4200];
	FILE *f;

	snprintf(path, sizeof path, "%s/summary.csv", dir);
	f = fopen(path, "w");
	CU_ASSERT_FATAL(f != NULL);
	fputs(text, f);
	fclose(f);
}

static void test_bad_summary(void)
{
	char dir[4096];
	struct ema_error err = { 0 };

	CU_ASSERT_FATAL(make_run(dir, sizeof dir) == 0);

	write_summary(dir, "");
	CU_ASSERT_EQUAL(ema_plots_render(dir, NULL, NULL, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "summary.csv:1: expected a header line"));

	write_summary(dir, "tenant,gpu\nchat,0\n");
	CU_ASSERT_EQUAL(ema_plots_render(dir, NULL, NULL, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "summary.csv:1: expected a header line with a 'policy' column"));

	write_summary(dir, "tenant,policy\r\nchat,static\r\ncode\r\n");
	CU_ASSERT_EQUAL(ema_plots_render(dir, NULL, NULL, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "summary.csv:3: expected a policy name in field 2"));

	write_summary(dir, "policy,tenant\nstatic,chat\nmy policy,chat\n");
	CU_ASSERT_EQUAL(ema_plots_render(dir, NULL, NULL, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "summary.csv:3: expected a policy name without blanks"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "'my policy'"));

	write_summary(dir, "policy,tenant\n,chat\n");
	CU_ASSERT_EQUAL(ema_plots_render(dir, NULL, NULL, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "summary.csv:2:"));

	write_summary(dir, "policy,tenant\n");
	CU_ASSERT_EQUAL(ema_plots_render(dir, NULL, NULL, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "summary.csv:2: expected at least one row"));

	/* Policy order is first appearance, duplicates folded, CRLF accepted. */
	write_summary(dir, "tenant,policy,x\r\na,b2,1\r\nb,a1,2\r\nc,b2,3\r\n");
	CU_ASSERT_EQUAL(ema_plots_render(dir, NULL, NULL, &err), 0);
	{
		char path[4200];
		snprintf(path, sizeof path, "%s/plots/render.sh", dir);
		CU_ASSERT(file_contains(path, "policies='b2 a1'\n"));
	}

	CU_ASSERT_EQUAL(ema_plots_render("", NULL, NULL, &err), EMA_ERR_INPUT);
	CU_ASSERT_EQUAL(ema_plots_render(NULL, NULL, NULL, &err), EMA_ERR_INPUT);
	remove_tree(dir);
}

static void test_find_gnuplot(void)
{
	char buf[4096];
	const char *old = getenv("EMA_GNUPLOT");
	char *saved = old ? strdup(old) : NULL;

	setenv("EMA_GNUPLOT", "/nonexistent/gnuplot", 1);
	CU_ASSERT_EQUAL(ema_plots_find_gnuplot(buf, sizeof buf), EMA_ERR_UNSUPPORTED);
	CU_ASSERT_STRING_EQUAL(buf, "");
	setenv("EMA_GNUPLOT", gnuplot, 1);
	CU_ASSERT_EQUAL(ema_plots_find_gnuplot(buf, sizeof buf), 0);
	CU_ASSERT_STRING_EQUAL(buf, gnuplot);
	CU_ASSERT_EQUAL(ema_plots_find_gnuplot(buf, 0), EMA_ERR_UNSUPPORTED);
	if (saved != NULL)
		setenv("EMA_GNUPLOT", saved, 1);
	else
		unsetenv("EMA_GNUPLOT");
	free(saved);
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{ "figure names", test_names },
		{ "render two policies, two GPUs", test_render },
		{ "no gnuplot: scripts only", test_skip },
		{ "missing summary.csv", test_missing_summary },
		{ "missing timeline.csv", test_missing_timeline },
		{ "bad gnuplot path", test_bad_gnuplot },
		{ "gnuplot rejects the data", test_gnuplot_fails },
		{ "malformed summary.csv", test_bad_summary },
		{ "finding gnuplot", test_find_gnuplot },
		{ NULL, NULL }
	};

	if (ema_plots_find_gnuplot(gnuplot, sizeof gnuplot) != 0) {
		printf("test_plots: skipped: gnuplot not found (set EMA_GNUPLOT or PATH)\n");
		return 77;
	}
	return ema_test_run("plots", cases);
}
