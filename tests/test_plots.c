/* test_plots.c: the figures of a small hand-written run folder (two
 * policies, two tenants on two GPUs) come out as real PDF and PNG files,
 * the same bytes run after run, titled with the scenario as run; a
 * folder or a gnuplot that cannot work, a full disk and an interrupt give
 * a clear error and leave no partial file. */
#define _GNU_SOURCE /* memmem */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "outdir.h"
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

/* The bytes of a file, malloc'd (NULL when unreadable); *n its size. */
static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long sz;

	*n = 0;
	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (sz = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)sz + 1);
		if (buf != NULL && fread(buf, 1, (size_t)sz, f) == (size_t)sz) {
			buf[sz] = '\0';
			*n = (size_t)sz;
		} else {
			free(buf);
			buf = NULL;
		}
	}
	fclose(f);
	return buf;
}

static int same_bytes(const char *a, const char *b)
{
	size_t na, nb;
	char *x = slurp(a, &na), *y = slurp(b, &nb);
	int same = x != NULL && y != NULL && na == nb && memcmp(x, y, na) == 0;

	free(x);
	free(y);
	return same;
}

/* Two renderings a second apart give the same PDF and PNG bytes: cairo's
 * clock date is replaced by a fixed one (1970, or SOURCE_DATE_EPOCH's). */
static void test_same_bytes(void)
{
	static const char *const fmts[] = { "pdf", "png" };
	char a[64], b[64], pa[4200], pb[4200];
	const char *const *names;
	struct ema_error err = { 0 };
	int n = ema_plots_names(&names);
	size_t len;
	char *pdf;

	CU_ASSERT_FATAL(make_run(a, sizeof a) == 0);
	CU_ASSERT_FATAL(make_run(b, sizeof b) == 0);
	CU_ASSERT_EQUAL_FATAL(ema_plots_render(a, gnuplot, NULL, &err), 0);
	sleep(1); /* cairo dates to the second */
	CU_ASSERT_EQUAL_FATAL(ema_plots_render(b, gnuplot, NULL, &err), 0);
	for (int i = 0; i < n; i++)
		for (int f = 0; f < 2; f++) {
			snprintf(pa, sizeof pa, "%s/plots/%s.%s", a, names[i], fmts[f]);
			snprintf(pb, sizeof pb, "%s/plots/%s.%s", b, names[i], fmts[f]);
			CU_ASSERT(same_bytes(pa, pb));
		}
	snprintf(pa, sizeof pa, "%s/plots/throughput.pdf", a);
	pdf = slurp(pa, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(pdf);
	CU_ASSERT_PTR_NOT_NULL(memmem(pdf, len, "/CreationDate (D:19700101000000Z)", 33));
	free(pdf);
	/* the reproducible-builds convention, when it is set */
	setenv("SOURCE_DATE_EPOCH", "1700000000", 1); /* 2023-11-14 22:13:20 UTC */
	CU_ASSERT_EQUAL(ema_plots_render(b, gnuplot, NULL, &err), 0);
	unsetenv("SOURCE_DATE_EPOCH");
	snprintf(pb, sizeof pb, "%s/plots/throughput.pdf", b);
	pdf = slurp(pb, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(pdf);
	CU_ASSERT_PTR_NOT_NULL(memmem(pdf, len, "/CreationDate (D:20231114221320Z)", 33));
	free(pdf);
	remove_tree(a);
	remove_tree(b);
}

/* The scenario as run, from a command line as run.json keeps it. */
static void test_scenario_label(void)
{
	static const char *const skip[] = { "policies", NULL };
	char out[256], tiny[40];

	CU_ASSERT_EQUAL(ema_plots_scenario_label("default", NULL, skip, out, sizeof out), 0);
	CU_ASSERT_STRING_EQUAL(out, "default");
	CU_ASSERT_EQUAL(ema_plots_scenario_label("default", "ema run -q --out x", skip, out,
						 sizeof out), 0);
	CU_ASSERT_STRING_EQUAL(out, "default");
	/* every spelling of --set and --seed; policies left to the legend */
	CU_ASSERT_EQUAL(ema_plots_scenario_label("default",
		"ema run --set a.b=1 -s c=2 --set=d=3 -se=4 --seed 7 --seed=8 --set policies=static,ema "
		"--vary x=1,2 -o out", skip, out, sizeof out), 6);
	CU_ASSERT_STRING_EQUAL(out, "default + a.b=1, c=2, d=3, e=4, seed=7, seed=8");
	/* quotes and backslashes cannot reach a title or render.sh's quotes */
	ema_plots_scenario_label("it's", "ema run --set name=a\"b\\c`d", NULL, out, sizeof out);
	CU_ASSERT_STRING_EQUAL(out, "it_s + name=a_b_c_d");
	/* too long for the buffer: the count of what was left out */
	ema_plots_scenario_label("default", "ema run --set aaaa=1 --set bbbb=2 --set cccc=3 "
				 "--set dddd=4", NULL, tiny, sizeof tiny);
	CU_ASSERT_STRING_EQUAL(tiny, "default + aaaa=1, bbbb=2 (2 more)");
	CU_ASSERT(strlen(tiny) < sizeof tiny);
	ema_plots_scenario_label(NULL, NULL, NULL, out, sizeof out);
	CU_ASSERT_STRING_EQUAL(out, "(unnamed)");
}

static void write_text_file(const char *dir, const char *name, const char *text)
{
	char path[4200];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "w");
	CU_ASSERT_FATAL(f != NULL);
	fputs(text, f);
	fclose(f);
}

/* A run's titles say what --set changed and the seed, not only the
 * scenario's name. */
static void test_titles(void)
{
	char dir[64], path[4200];
	struct ema_error err = { 0 };

	CU_ASSERT_FATAL(make_run(dir, sizeof dir) == 0);
	write_text_file(dir, "config.json", "{\n  \"name\": \"default\",\n  \"seed\": 3\n}\n");
	write_text_file(dir, "run.json", "{\n  \"program\": \"ema\",\n  \"command\": \"ema run "
			"--set serving.max_batch=128 --set policies=static,elastic_lru --seed 3\"\n}\n");
	CU_ASSERT_EQUAL(ema_plots_render(dir, NULL, NULL, &err), 0);
	snprintf(path, sizeof path, "%s/plots/render.sh", dir);
	CU_ASSERT(file_contains(path,
		"scenario='default + serving.max_batch=128; one run, seed 3'\n"));
	remove_tree(dir);
}

/* A stand-in for gnuplot: a shell script (argv: -d -c SCRIPT ARG1 OUT). */
static void fake_gnuplot(const char *path, const char *body)
{
	FILE *f = fopen(path, "w");

	CU_ASSERT_FATAL(f != NULL);
	fprintf(f, "#!/bin/sh\n%s\n", body);
	fclose(f);
	chmod(path, 0755);
}

/* gnuplot exits 0 when cairo could not write the whole file (a full disk):
 * an incomplete PNG or PDF is an error, and nothing of it is kept. */
static void test_incomplete_output(void)
{
	char dir[64], fake[4200], out[4200], path[4200];
	struct ema_error err = { 0 };
	int rc;

	CU_ASSERT_FATAL(make_run(dir, sizeof dir) == 0);
	snprintf(fake, sizeof fake, "%s/fake-gnuplot", dir);
	/* a PNG signature and nothing after it */
	fake_gnuplot(fake, "printf '\\211PNG\\r\\n\\032\\n' > \"$5\"");
	snprintf(out, sizeof out, "%s/fig", dir);
	rc = ema_plots_draw(dir, fake, "load.gp", "x.spec.gp", out, NULL, &err);
	CU_ASSERT_EQUAL(rc, EMA_ERR_IO);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "incomplete"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "fig.part.pdf"));
	snprintf(path, sizeof path, "%s/fig.part.pdf", dir);
	CU_ASSERT_EQUAL(file_size(path), -1);
	snprintf(path, sizeof path, "%s/fig.pdf", dir);
	CU_ASSERT_EQUAL(file_size(path), -1);
	/* and in a run folder, the format that is cut */
	fake_gnuplot(fake, "case $5 in *.png) printf 'x' > \"$5\" ;; *) printf '%%%%PDF-1.5\\n%%%%EOF\\n' > \"$5\" ;; esac");
	rc = ema_plots_render(dir, fake, NULL, &err);
	CU_ASSERT_EQUAL(rc, EMA_ERR_IO);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "figure throughput (png)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "no end of PNG"));
	snprintf(path, sizeof path, "%s/plots/throughput.part.png", dir);
	CU_ASSERT_EQUAL(file_size(path), -1);
	snprintf(path, sizeof path, "%s/plots/throughput.png", dir);
	CU_ASSERT_EQUAL(file_size(path), -1);
	remove_tree(dir);
}

/* A file size limit stands in for a full disk: the error gives the reason
 * (strerror), for a figure gnuplot draws as for a table ema writes. */
static void test_full_disk(void)
{
	char dir[64], msg[EMA_ERROR_MSG_MAX + 8] = "";
	int pfd[2], status;
	pid_t pid;
	ssize_t n;

	CU_ASSERT_FATAL(make_run(dir, sizeof dir) == 0);
	CU_ASSERT_FATAL(pipe(pfd) == 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		/* 12 KiB: the scripts and tables fit, a figure does not */
		struct rlimit rl = { 12 * 1024, 12 * 1024 };
		struct ema_error err = { 0 };
		int rc;

		signal(SIGXFSZ, SIG_IGN);
		setrlimit(RLIMIT_FSIZE, &rl);
		rc = ema_plots_render(dir, gnuplot, NULL, &err);
		dprintf(pfd[1], "%d %s", rc, err.msg);
		_exit(0);
	}
	close(pfd[1]);
	n = read(pfd[0], msg, sizeof msg - 1);
	close(pfd[0]);
	waitpid(pid, &status, 0);
	msg[n > 0 ? n : 0] = '\0';
	CU_ASSERT(atoi(msg) != 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(msg, "File too large"));
	if (strstr(msg, "File too large") == NULL)
		fprintf(stderr, "\nfull disk: %s\n", msg);
	{
		char path[4200];

		snprintf(path, sizeof path, "%s/plots/throughput.part.pdf", dir);
		CU_ASSERT_EQUAL(file_size(path), -1);
		snprintf(path, sizeof path, "%s/plots/throughput.part.png", dir);
		CU_ASSERT_EQUAL(file_size(path), -1);
	}
	remove_tree(dir);
}

/* An interrupt while gnuplot draws: the handler ema_plots_set_cleanup
 * hands the files to removes NAME.part.EXT, and gnuplot stops too. */
static void test_interrupt(void)
{
	static const struct ema_plots_cleanup cleanup = {
		ema_cleanup_add, ema_cleanup_drop, ema_cleanup_add_child, ema_cleanup_drop_child,
	};
	char dir[64], fake[4200], part[4200], late[4200], out[4200];
	int status;
	pid_t pid;

	CU_ASSERT_FATAL(make_run(dir, sizeof dir) == 0);
	snprintf(fake, sizeof fake, "%s/fake-gnuplot", dir);
	snprintf(late, sizeof late, "%s/late", dir);
	/* writes part of its output, then would go on for 3 s */
	fake_gnuplot(fake, "printf x > \"$5\"; sleep 3; echo late > \"$(dirname \"$5\")/late\"");
	snprintf(out, sizeof out, "%s/fig", dir);
	snprintf(part, sizeof part, "%s/fig.part.pdf", dir);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		struct ema_error err = { 0 };

		ema_plots_set_cleanup(&cleanup);
		ema_plots_draw(dir, fake, "load.gp", "x.spec.gp", out, NULL, &err);
		_exit(0);
	}
	for (int i = 0; i < 500 && file_size(part) < 1; i++)
		usleep(10000);
	CU_ASSERT_FATAL(file_size(part) >= 1);
	kill(pid, SIGINT);
	waitpid(pid, &status, 0);
	CU_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT);
	CU_ASSERT_EQUAL(file_size(part), -1);
	sleep(4);
	CU_ASSERT_EQUAL(file_size(late), -1); /* gnuplot was stopped too */
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
		{ "the same bytes twice", test_same_bytes },
		{ "the scenario as run", test_scenario_label },
		{ "titles", test_titles },
		{ "incomplete output", test_incomplete_output },
		{ "full disk", test_full_disk },
		{ "interrupt", test_interrupt },
		{ NULL, NULL }
	};

	if (ema_plots_find_gnuplot(gnuplot, sizeof gnuplot) != 0) {
		printf("test_plots: skipped: gnuplot not found (set EMA_GNUPLOT or PATH)\n");
		return 77;
	}
	return ema_test_run("plots", cases);
}
