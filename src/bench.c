/* bench.c: `ema bench`, the speed figures of issue 12's targets. The event
 * queue is timed in this process; every trace replay runs as a child
 * `ema run --no-plots --quiet` process, so that its figures are what a user
 * waits for (whole process: configuration, trace reading, simulation,
 * writing the run folder) beside the simulation alone (run.json's wall_s),
 * with the child's CPU time and peak memory (wait4's rusage). Each replay
 * runs several times and the median is shown, because the machine is
 * shared: the load average is printed with the figures. */
#define _GNU_SOURCE
#include "bench.h"
#include "wallclock.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "eventq.h"
#include "hw.h"
#include "workload.h"

#define BENCH_TRACE "../shared/traces/AzureLLMInferenceTrace_conv.csv"
#define BENCH_MAX_RUNS 99

/* What one child run took. */
struct bench_fig {
	double whole_s;      /* fork to exit */
	double sim_s;        /* run.json wall_s: workloads and simulation */
	double cpu_s;        /* user + system */
	double rss_mib;      /* peak resident memory */
	int64_t requests;    /* rows of requests.csv over policies */
	uint64_t events;
};

struct bench {
	char exe[PATH_MAX];
	char dir[PATH_MAX];  /* temporary folder: scenarios and run folders */
	char trace[PATH_MAX];/* absolute */
	int runs;
	int serial;
};

/* ---- the trace and the scenarios --------------------------------------- */

/* The running program: the replays run it again. */
static bool self_exe(char *buf, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);

	if (n <= 0)
		return false;
	buf[n] = '\0';
	return true;
}

/* The folder of the running program, for the default trace path. */
static bool exe_dir(char *buf, size_t size)
{
	char *slash;

	if (!self_exe(buf, size))
		return false;
	slash = strrchr(buf, '/');
	if (slash == NULL)
		return false;
	*slash = '\0';
	return true;
}

/* The trace as an absolute path: a scenario written elsewhere resolves a
 * relative one against its own folder. Without --trace, the shared trace
 * is looked for from the current folder, then from the program's. */
static int find_trace(struct bench *b, const char *given, bool *found, struct ema_error *err)
{
	char cand[PATH_MAX];

	*found = false;
	if (given != NULL) {
		if (realpath(given, b->trace) == NULL || access(b->trace, R_OK) != 0)
			return ema_error_set(err, EMA_ERR_INPUT, "bench: cannot open trace %s: %s",
					     given, strerror(errno));
		*found = true;
		return EMA_OK;
	}
	if (realpath(BENCH_TRACE, b->trace) != NULL && access(b->trace, R_OK) == 0) {
		*found = true;
		return EMA_OK;
	}
	if (exe_dir(cand, sizeof cand) &&
	    strlen(cand) + sizeof "/" BENCH_TRACE < sizeof cand) {
		strcat(cand, "/" BENCH_TRACE);
		if (realpath(cand, b->trace) != NULL && access(b->trace, R_OK) == 0)
			*found = true;
	}
	return EMA_OK;
}

/* A scenario of `tenants` tenants, each on its own GPU replaying `trace`.
 * Under pressure the GPUs are capped at 20 GiB (4 GiB of KV) and two
 * tenants get the trace 4x faster, so that ema borrows and reclaims. */
static int write_scenario(const struct bench *b, const char *name, const char *hardware,
			  const char *model, const char *policy, int tenants, bool pressure,
			  const char *trace, const char *format, char *path, size_t size,
			  struct ema_error *err)
{
	FILE *f;

	if (snprintf(path, size, "%s/%s.json", b->dir, name) >= (int)size)
		return ema_error_set(err, EMA_ERR_IO, "bench: temporary path too long");
	f = fopen(path, "w");
	if (f == NULL)
		return ema_error_set(err, EMA_ERR_IO, "bench: cannot write %s: %s", path,
				     strerror(errno));
	fprintf(f, "{\"name\": \"%s\", \"hardware\": \"%s\", \"model\": \"%s\",\n"
		   " \"gpu_mem_cap_gib\": %d, \"policies\": [\"%s\"], \"tenants\": [\n",
		name, hardware, model, pressure ? 20 : 0, policy);
	for (int i = 0; i < tenants; i++)
		fprintf(f, "  {\"name\": \"t%d\", \"gpu\": %d, \"workload\": {\"source\": \"trace\", "
			   "\"trace\": \"%s\", \"format\": \"%s\", \"rate_scale\": %d}}%s\n",
			i, i, trace, format, pressure && i < 2 ? 4 : 1, i + 1 < tenants ? "," : "");
	fputs("]}\n", f);
	if (fclose(f) != 0)
		return ema_error_set(err, EMA_ERR_IO, "bench: cannot write %s", path);
	return EMA_OK;
}

/* The trace `copies` times over, one after the other (a gap of the mean
 * inter-arrival time between copies), in the Vidur format, whose seconds
 * are read to the nanosecond: the memory figures grow with requests. */
static int write_repeated(const struct bench *b, int copies, char *path, size_t size,
			  struct ema_error *err)
{
	struct ema_workload w = {0};
	int64_t period;
	FILE *f;
	int rc;

	rc = ema_trace_read(b->trace, EMA_TRACE_AUTO, &w, err);
	if (rc != EMA_OK)
		return rc;
	if (snprintf(path, size, "%s/trace-x%d.csv", b->dir, copies) >= (int)size) {
		ema_workload_free(&w);
		return ema_error_set(err, EMA_ERR_IO, "bench: temporary path too long");
	}
	f = fopen(path, "w");
	if (f == NULL) {
		ema_workload_free(&w);
		return ema_error_set(err, EMA_ERR_IO, "bench: cannot write %s: %s", path,
				     strerror(errno));
	}
	period = w.reqs[w.n - 1].arrival_ns + (w.n > 1 ? w.reqs[w.n - 1].arrival_ns /
					       (int64_t)(w.n - 1) : 1000000000);
	fputs("arrived_at,num_prefill_tokens,num_decode_tokens\n", f);
	for (int c = 0; c < copies; c++)
		for (size_t i = 0; i < w.n; i++) {
			int64_t t = w.reqs[i].arrival_ns + (int64_t)c * period;

			fprintf(f, "%lld.%09lld,%d,%d\n", (long long)(t / 1000000000),
				(long long)(t % 1000000000), w.reqs[i].prompt_tokens,
				w.reqs[i].output_tokens);
		}
	ema_workload_free(&w);
	if (fclose(f) != 0)
		return ema_error_set(err, EMA_ERR_IO, "bench: cannot write %s", path);
	return EMA_OK;
}

/* ---- child runs ---------------------------------------------------------- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void rm_tree(const char *path)
{
	nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)n + 1)) != NULL) {
		if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		} else {
			buf[n] = '\0';
		}
	}
	fclose(f);
	return buf;
}

/* run.json: the simulation's wall time and the events of every policy. */
static int read_run_json(const char *dir, struct bench_fig *fig, struct ema_error *err)
{
	char path[PATH_MAX + 16];
	char *text;
	cJSON *root, *pols, *p;

	if (snprintf(path, sizeof path, "%s/run.json", dir) >= (int)sizeof path)
		return ema_error_set(err, EMA_ERR_IO, "bench: temporary path too long");
	text = slurp(path);
	root = text ? cJSON_Parse(text) : NULL;
	free(text);
	if (root == NULL || !cJSON_IsNumber(cJSON_GetObjectItem(root, "wall_s"))) {
		cJSON_Delete(root);
		return ema_error_set(err, EMA_ERR_INTERNAL, "bench: %s unreadable", path);
	}
	fig->sim_s = cJSON_GetObjectItem(root, "wall_s")->valuedouble;
	fig->events = 0;
	pols = cJSON_GetObjectItem(root, "policies");
	cJSON_ArrayForEach(p, pols) {
		cJSON *ev = cJSON_GetObjectItem(p, "events");

		if (cJSON_IsNumber(ev))
			fig->events += (uint64_t)ev->valuedouble;
	}
	cJSON_Delete(root);
	return EMA_OK;
}

static int64_t count_rows(const char *dir)
{
	char path[PATH_MAX + 16];
	char buf[1 << 16];
	int64_t lines = 0;
	size_t n;
	FILE *f;

	if (snprintf(path, sizeof path, "%s/requests.csv", dir) >= (int)sizeof path)
		return -1;
	f = fopen(path, "rb");
	if (f == NULL)
		return -1;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		for (size_t i = 0; i < n; i++)
			lines += buf[i] == '\n';
	fclose(f);
	return lines - 1;
}

/* One `ema run` of the scenario in a child process. */
static int child_run(struct bench *b, const char *config, struct bench_fig *fig,
		     struct ema_error *err)
{
	char out[PATH_MAX + 32];
	struct rusage ru;
	double t0, t1;
	int status;
	pid_t pid;
	int rc;

	if (snprintf(out, sizeof out, "%s/run-%d", b->dir, b->serial++) >= (int)sizeof out)
		return ema_error_set(err, EMA_ERR_IO, "bench: temporary path too long");
	fflush(stdout);
	fflush(stderr);
	t0 = ema_wall_now();
	pid = fork();
	if (pid < 0)
		return ema_error_set(err, EMA_ERR_IO, "bench: cannot start a process: %s",
				     strerror(errno));
	if (pid == 0) {
		char *argv[] = { (char *)"ema", (char *)"run", (char *)"--config", (char *)config,
				 (char *)"--out", out, (char *)"--quiet", (char *)"--no-plots", NULL };

		if (freopen("/dev/null", "w", stdout) == NULL)
			_exit(127);
		execv(b->exe, argv);
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) != pid)
		return ema_error_set(err, EMA_ERR_IO, "bench: lost the child process: %s",
				     strerror(errno));
	t1 = ema_wall_now();
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		rm_tree(out);
		return ema_error_set(err, EMA_ERR_INTERNAL,
				     "bench: `%s run --config %s` failed (status %d)", b->exe, config,
				     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	}
	fig->whole_s = t1 - t0;
	fig->cpu_s = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
		     (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
	fig->rss_mib = (double)ru.ru_maxrss / 1024.0;
	rc = read_run_json(out, fig, err);
	fig->requests = count_rows(out);
	rm_tree(out);
	return rc;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_dbl);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* b->runs child runs; each figure is the median over them. */
static int measure(struct bench *b, const char *config, int runs, struct bench_fig *med,
		   struct ema_error *err)
{
	double whole[BENCH_MAX_RUNS], sim[BENCH_MAX_RUNS], cpu[BENCH_MAX_RUNS], rss[BENCH_MAX_RUNS];
	struct bench_fig f = {0};

	for (int i = 0; i < runs; i++) {
		int rc = child_run(b, config, &f, err);

		if (rc != EMA_OK)
			return rc;
		whole[i] = f.whole_s;
		sim[i] = f.sim_s;
		cpu[i] = f.cpu_s;
		rss[i] = f.rss_mib;
	}
	*med = f;
	med->whole_s = median(whole, runs);
	med->sim_s = median(sim, runs);
	med->cpu_s = median(cpu, runs);
	med->rss_mib = median(rss, runs);
	return EMA_OK;
}

static const char *verdict(bool met)
{
	return met ? "met" : "NOT met";
}

static void print_fig(const char *label, const struct bench_fig *f)
{
	printf("%-44s %7.3f s whole  %7.3f s sim  %7.3f s CPU  %6.1f MiB   (%lld requests, %llu events)\n",
	       label, f->whole_s, f->sim_s, f->cpu_s, f->rss_mib, (long long)f->requests,
	       (unsigned long long)f->events);
}

static void print_load(void)
{
	double load[3];

	if (getloadavg(load, 3) == 3)
		printf("load average %.2f %.2f %.2f on %ld CPUs\n", load[0], load[1], load[2],
		       sysconf(_SC_NPROCESSORS_ONLN));
}

/* ---- the figures --------------------------------------------------------- */

static int replays(struct bench *b, bool quick, struct ema_error *err)
{
	char path[PATH_MAX], rep[PATH_MAX];
	struct bench_fig st, em, stp, emp, one, x4, x16;
	const int copies[] = { 4, 16 };
	struct bench_fig *xs[] = { &x4, &x16 };
	int rc;

	printf("trace %s; medians of %d runs of `ema run --no-plots --quiet`\n", b->trace, b->runs);
	rc = write_scenario(b, "static8", "h200x8", "llama-3-8b", "static", 8, false, b->trace,
			    "azure", path, sizeof path, err);
	if (rc == EMA_OK)
		rc = measure(b, path, b->runs, &st, err);
	if (rc != EMA_OK)
		return rc;
	print_fig("8 tenants x trace, h200x8, static", &st);
	rc = write_scenario(b, "ema8", "h200x8", "llama-3-8b", "ema", 8, false, b->trace, "azure",
			    path, sizeof path, err);
	if (rc == EMA_OK)
		rc = measure(b, path, b->runs, &em, err);
	if (rc != EMA_OK)
		return rc;
	print_fig("8 tenants x trace, h200x8, ema", &em);
	rc = write_scenario(b, "static8p", "h200x8", "llama-3-8b", "static", 8, true, b->trace,
			    "azure", path, sizeof path, err);
	if (rc == EMA_OK)
		rc = measure(b, path, b->runs, &stp, err);
	if (rc != EMA_OK)
		return rc;
	print_fig("same, 20 GiB GPUs, 2 tenants 4x, static", &stp);
	rc = write_scenario(b, "ema8p", "h200x8", "llama-3-8b", "ema", 8, true, b->trace, "azure",
			    path, sizeof path, err);
	if (rc == EMA_OK)
		rc = measure(b, path, b->runs, &emp, err);
	if (rc != EMA_OK)
		return rc;
	print_fig("same, 20 GiB GPUs, 2 tenants 4x, ema", &emp);
	rc = write_scenario(b, "one", "h100x8", "llama-2-7b", "static", 1, false, b->trace, "azure",
			    path, sizeof path, err);
	if (rc == EMA_OK)
		rc = measure(b, path, b->runs, &one, err);
	if (rc != EMA_OK)
		return rc;
	print_fig("1 tenant, h100x8, llama-2-7b, static", &one);
	for (int k = 0; k < (quick ? 1 : 2); k++) {
		char name[32], label[64];

		snprintf(name, sizeof name, "static8x%d", copies[k]);
		rc = write_repeated(b, copies[k], rep, sizeof rep, err);
		if (rc == EMA_OK)
			rc = write_scenario(b, name, "h200x8", "llama-3-8b", "static", 8, false, rep,
					    "vidur", path, sizeof path, err);
		if (rc == EMA_OK)
			rc = measure(b, path, 1, xs[k], err);
		unlink(rep);
		if (rc != EMA_OK)
			return rc;
		snprintf(label, sizeof label, "8 tenants, static, trace %dx over (1 run)", copies[k]);
		print_fig(label, xs[k]);
	}

	printf("\ntargets:\n");
	printf("  8 tenants, static, whole process:     %7.3f s    (<= 0.5 s: %s)\n", st.whole_s,
	       verdict(st.whole_s <= 0.5));
	printf("  ema / static, simulation time:        %7.2f      (<= 1.3: %s)\n",
	       em.sim_s / st.sim_s, verdict(em.sim_s <= 1.3 * st.sim_s));
	printf("  ema / static under pressure:          %7.2f      (<= 1.3: %s)\n",
	       emp.sim_s / stp.sim_s, verdict(emp.sim_s <= 1.3 * stp.sim_s));
	printf("  1 tenant, h100x8, whole process:      %7.3f s    (<= 0.1 s: %s)\n", one.whole_s,
	       verdict(one.whole_s <= 0.1));
	printf("  peak memory, 8 tenants:               %7.1f MiB  (<= 200 MiB: %s)\n", st.rss_mib,
	       verdict(st.rss_mib <= 200));
	for (int k = 0; k < (quick ? 1 : 2); k++) {
		double grow = xs[k]->rss_mib / st.rss_mib;

		printf("  peak memory, trace %2dx:               %7.1f MiB  (%.2f x the 1x figure for "
		       "%.2f x the requests: %s)\n", copies[k], xs[k]->rss_mib, grow,
		       (double)xs[k]->requests / (double)st.requests,
		       verdict(grow <= (double)xs[k]->requests / (double)st.requests));
	}
	return EMA_OK;
}

static int parse_runs(const char *s, int *out, struct ema_error *err)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || end == s || v < 1 || v > BENCH_MAX_RUNS)
		return ema_error_set(err, EMA_ERR_INPUT,
				     "bench: --runs expects a whole number 1..%d, not '%s'",
				     BENCH_MAX_RUNS, s);
	*out = (int)v;
	return EMA_OK;
}

int ema_bench_main(int argc, char **argv, struct ema_error *err)
{
	struct bench b;
	const char *given = NULL;
	bool quick = false, runs_set = false, found;
	double rate;
	int rc;

	memset(&b, 0, sizeof b);
	b.runs = 3;
	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--hw") == 0) {
			argv[i] = (char *)"bench";
			return ema_hw_bench_main(argc - i, argv + i) == 0 ? EMA_OK :
			       ema_error_set(err, EMA_ERR_UNSUPPORTED, "bench --hw failed");
		} else if (strcmp(argv[i], "--quick") == 0) {
			quick = true;
		} else if (strcmp(argv[i], "--trace") == 0 && i + 1 < argc) {
			given = argv[++i];
		} else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
			rc = parse_runs(argv[++i], &b.runs, err);
			if (rc != EMA_OK)
				return rc;
			runs_set = true;
		} else {
			return ema_error_set(err, EMA_ERR_INPUT,
					     "bench: expected --quick, --runs N, --trace FILE or --hw, not %s",
					     argv[i]);
		}
	}
	if (quick && !runs_set)
		b.runs = 1;
	rc = find_trace(&b, given, &found, err);
	if (rc != EMA_OK)
		return rc;
	print_load();
	rc = ema_eventq_bench(1000, quick ? 2000000 : 20000000, &rate);
	if (rc != EMA_OK)
		return ema_error_set(err, rc, "bench: event queue failed");
	printf("event queue, 1,000 pending: %.2f M push+pop/s   (>= 15 M: %s)\n", rate / 1e6,
	       verdict(rate >= 15e6));
	if (!found) {
		printf("trace replays skipped: %s not found from here or from the program's folder "
		       "(--trace FILE)\n", BENCH_TRACE);
		return EMA_OK;
	}
	if (!self_exe(b.exe, sizeof b.exe))
		return ema_error_set(err, EMA_ERR_IO, "bench: cannot find the program itself");
	{
		const char *tmp = getenv("TMPDIR");

		if (snprintf(b.dir, sizeof b.dir, "%s/ema-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp") >=
		    (int)sizeof b.dir || mkdtemp(b.dir) == NULL)
			return ema_error_set(err, EMA_ERR_IO, "bench: cannot create a temporary folder: %s",
					     strerror(errno));
	}
	rc = replays(&b, quick, err);
	rm_tree(b.dir);
	print_load();
	return rc;
}
