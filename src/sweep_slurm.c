/* sweep_slurm.c: a sweep spread over a Slurm cluster. Each array task
 * runs one shard of the points (every N-th point from its index, found in
 * SLURM_ARRAY_TASK_ID and its siblings) into the shared sweep folder,
 * where points appear whole and complete points are skipped, so a task
 * that is requeued or resubmitted redoes only what is missing; a merge
 * job after the array builds the tables from whatever is complete.
 * `--sbatch FILE` writes those two jobs, with the time and memory per
 * task estimated from a trial of two points. */
#define _GNU_SOURCE /* wait4 */
#include "sweep.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ema_build.h"
#include "ema_commit.h"
#include "json_text.h"
#include "outdir.h"
#include "wallclock.h"

/* Slurm's usual MaxArraySize: an array of more tasks is refused. */
#define EMA_SBATCH_MAX_TASKS 1000

/* ---- shards ------------------------------------------------------------------ */

static int env_long(const char *name, long *v, bool *set, struct ema_error *err)
{
	const char *s = getenv(name);
	char *end;

	*set = s != NULL && *s != '\0';
	if (!*set)
		return EMA_OK;
	errno = 0;
	*v = strtol(s, &end, 10);
	if (end == s || *end != '\0' || errno != 0 || *v < 0)
		return ema_error_set(err, EMA_ERR_INPUT, "%s=%s: expected a number >= 0", name, s);
	return EMA_OK;
}

int ema_sweep_shard(const char *opt, long *i, long *n, char *from, size_t from_len,
		    struct ema_error *err)
{
	long id = 0, count = 0, min = 0, step = 1;
	bool has_id, has_count, has_min, has_step;
	int rc;

	*i = 0;
	*n = 1;
	from[0] = '\0';
	if (opt != NULL) {
		const char *p = opt;
		char *end;

		errno = 0;
		*i = strtol(p, &end, 10);
		if (end == p || *end != '/')
			goto bad;
		p = end + 1;
		*n = strtol(p, &end, 10);
		if (end == p || *end != '\0' || errno != 0 || *n < 1 || *i < 0 || *i >= *n)
			goto bad;
		return EMA_OK;
bad:
		return ema_error_set(err, EMA_ERR_INPUT, "--shard %.100s: expected I/N with 0 <= I < N "
				     "(every N-th point from point I)", opt);
	}
	rc = env_long("SLURM_ARRAY_TASK_ID", &id, &has_id, err);
	if (rc == EMA_OK)
		rc = env_long("SLURM_ARRAY_TASK_COUNT", &count, &has_count, err);
	if (rc == EMA_OK)
		rc = env_long("SLURM_ARRAY_TASK_MIN", &min, &has_min, err);
	if (rc == EMA_OK)
		rc = env_long("SLURM_ARRAY_TASK_STEP", &step, &has_step, err);
	if (rc != EMA_OK || !has_id || !has_count)
		return rc;
	if (!has_step || step < 1)
		step = 1;
	/* --array=0-9 or 1-10 or 0-18:2: the task's rank in its array */
	if (count < 1 || id < min || (id - min) % step != 0 || (id - min) / step >= count)
		return ema_error_set(err, EMA_ERR_INPUT, "SLURM_ARRAY_TASK_ID=%ld with "
				     "SLURM_ARRAY_TASK_COUNT=%ld, SLURM_ARRAY_TASK_MIN=%ld: not a task of "
				     "one array of consecutive tasks; use --shard I/N", id, count, min);
	*i = (id - min) / step;
	*n = count;
	snprintf(from, from_len, "SLURM_ARRAY_TASK_ID=%ld of SLURM_ARRAY_TASK_COUNT=%ld", id, count);
	return EMA_OK;
}

/* ---- the trial ----------------------------------------------------------------- */

/* Runs a point in a worker process: its wall time and peak memory are
 * those of one point of a task. The point stays (it is a real point). */
static int trial_point(struct ema_sweep_run *r, long pt, double *secs, long *kib,
		       struct ema_error *err)
{
	struct rusage ru;
	double t0 = ema_wall_now();
	pid_t pid;
	int status;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return ema_error_set(err, EMA_ERR_IO, "sweep: cannot start the trial: %s",
				     strerror(errno));
	if (pid == 0) {
		struct ema_error e = {0};
		enum ema_point_outcome out;
		int rc;

		ema_cleanup_forked();
		rc = ema_sweep_run_point(r, pt, &out, &e);
		if (rc != EMA_OK)
			fprintf(stderr, "ema: %s\n", e.msg);
		fflush(NULL);
		if (rc == EMA_OK && out != EMA_POINT_RAN)
			_exit(out == EMA_POINT_DONE ? EMA_POINT_EXIT_DONE : EMA_POINT_EXIT_TAKEN);
		_exit(ema_status_exit(rc));
	}
	ema_cleanup_add_child(pid);
	while (wait4(pid, &status, 0, &ru) < 0)
		if (errno != EINTR) {
			ema_cleanup_drop_child(pid);
			return ema_error_set(err, EMA_ERR_INTERNAL, "wait4: %s", strerror(errno));
		}
	ema_cleanup_drop_child(pid);
	*secs = ema_wall_now() - t0;
	*kib = ru.ru_maxrss; /* KiB on Linux */
	/* another process runs it, or has just run it: nothing measured */
	if (WIFEXITED(status) && (WEXITSTATUS(status) == EMA_POINT_EXIT_DONE ||
				  WEXITSTATUS(status) == EMA_POINT_EXIT_TAKEN)) {
		*secs = -1;
		return EMA_OK;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return ema_error_set(err, WIFEXITED(status) && WEXITSTATUS(status) == 2 ?
				     EMA_ERR_INPUT : EMA_ERR_IO, "sweep --sbatch: the trial of point-%03ld "
				     "failed (its message is above); no script was written", pt);
	return EMA_OK;
}

/* ---- the script -------------------------------------------------------------------- */

/* s quoted for sh: 'it'\''s' */
static void put_sh(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputs("'\\''", f);
		else
			fputc(*s, f);
	}
	fputc('\'', f);
}

/* The same into a buffer, for a command inside a command (--wrap). */
static void cat_sh(char *buf, size_t n, const char *s)
{
	size_t len = strlen(buf);

	if (len + 1 < n)
		buf[len++] = '\'';
	for (; *s && len + 5 < n; s++) {
		if (*s == '\'') {
			memcpy(buf + len, "'\\''", 4);
			len += 4;
		} else {
			buf[len++] = *s;
		}
	}
	if (len + 1 < n)
		buf[len++] = '\'';
	buf[len] = '\0';
}

static void put_hms(FILE *f, double secs)
{
	long m = (long)ceil(secs / 60.0);

	if (m < 1)
		m = 1;
	if (m >= 24 * 60)
		fprintf(f, "%ld-%02ld:%02ld:00", m / (24 * 60), m / 60 % 24, m % 60);
	else
		fprintf(f, "%02ld:%02ld:00", m / 60, m % 60);
}

static void self_path(char *buf, size_t n)
{
	ssize_t len = readlink("/proc/self/exe", buf, n - 1);

	if (len <= 0) {
		snprintf(buf, n, "ema");
		return;
	}
	buf[len] = '\0';
}

/* The sweep folder as an absolute path: realpath when it exists, else
 * (--dry-run, before it is made) the current folder joined in front. */
static int absolute_dir(const struct ema_sweep *s, const char *cwd, char *dir, size_t n,
			struct ema_error *err)
{
	if (s->exists) {
		char buf[PATH_MAX];

		if (realpath(s->dir, buf) == NULL)
			return ema_error_set(err, EMA_ERR_IO, "%s: cannot resolve the path: %s", s->dir,
					     strerror(errno));
		if (snprintf(dir, n, "%s", buf) >= (int)n)
			return ema_error_set(err, EMA_ERR_INPUT, "%s: path too long", s->dir);
		return EMA_OK;
	}
	if ((s->dir[0] == '/' ? snprintf(dir, n, "%s", s->dir) :
	     snprintf(dir, n, "%s/%s", cwd, s->dir)) >= (int)n)
		return ema_error_set(err, EMA_ERR_INPUT, "%s: path too long", s->dir);
	return EMA_OK;
}

/* The options every job of the sweep takes (--partition, --account,
 * --sbatch-arg), as words of a command line. */
static void put_site_options(FILE *f, const struct ema_cli_args *a)
{
	if (a->partition != NULL) {
		fputs(" --partition=", f);
		put_sh(f, a->partition);
	}
	if (a->account != NULL) {
		fputs(" --account=", f);
		put_sh(f, a->account);
	}
	for (int i = 0; i < a->n_sbatch_args; i++) {
		fputc(' ', f);
		put_sh(f, a->sbatch_args[i]);
	}
}

/* Runs the trial: the first and the last point not complete yet, since
 * swept values usually grow (the last point is often the slowest). A
 * point that another process runs is not measured. */
static int run_trial(struct ema_sweep_run *r, bool quiet, long *trial, double *secs,
		     long *kib, long *n_trial, bool *all_done, struct ema_error *err)
{
	const struct ema_sweep *s = r->s;
	long cand[2], n_cand = 0;
	int rc;

	*n_trial = 0;
	for (long pt = 0; pt < s->n_points && n_cand == 0; pt++) {
		bool done;

		rc = ema_sweep_point_done(s, pt, &done, err);
		if (rc != EMA_OK)
			return rc;
		if (!done)
			cand[n_cand++] = pt;
	}
	for (long pt = s->n_points - 1; n_cand == 1 && pt > cand[0]; pt--) {
		bool done;

		rc = ema_sweep_point_done(s, pt, &done, err);
		if (rc != EMA_OK)
			return rc;
		if (!done)
			cand[n_cand++] = pt;
	}
	*all_done = n_cand == 0;
	for (long t = 0; t < n_cand; t++) {
		if (!quiet)
			fprintf(stderr, "ema: sweep --sbatch: trial of point-%03ld\n", cand[t]);
		rc = trial_point(r, cand[t], &secs[*n_trial], &kib[*n_trial], err);
		if (rc != EMA_OK)
			return rc;
		if (secs[*n_trial] >= 0)
			trial[(*n_trial)++] = cand[t];
		else if (!quiet)
			fprintf(stderr, "ema: sweep --sbatch: point-%03ld is run by another process; "
				"not measured\n", cand[t]);
	}
	return EMA_OK;
}

/* DIR/slurm/sbatch.json: the array's task count and the script, which
 * `ema sweep status` and `ema sweep merge` read to say which tasks to
 * submit again. */
static int write_record(const char *dir, const char *script, long tasks, long throttle,
			struct ema_error *err)
{
	char path[PATH_MAX + 32], abs_script[PATH_MAX];
	struct ema_outfile of;
	FILE *f;
	int rc;

	if (realpath(script, abs_script) == NULL)
		snprintf(abs_script, sizeof abs_script, "%s", script);
	snprintf(path, sizeof path, "%s/slurm/sbatch.json", dir);
	rc = ema_outfile_reserve(&of, "--sbatch", path, err);
	if (rc != EMA_OK)
		return rc;
	f = ema_outfile_open(&of, err);
	if (f == NULL)
		return err->code ? err->code : EMA_ERR_IO;
	fprintf(f, "{\n  \"program\": \"ema\",\n  \"version\": \"%s\",\n  \"commit\": ",
		PACKAGE_VERSION);
	ema_json_put_string(f, ema_commit);
	fputs(",\n  \"script\": ", f);
	ema_json_put_string(f, abs_script);
	fprintf(f, ",\n  \"tasks\": %ld,\n  \"throttle\": %ld\n}\n", tasks, throttle);
	return ema_outfile_commit(&of, err);
}

int ema_sweep_sbatch(struct ema_sweep_run *r, const struct ema_cli_args *a,
		     struct ema_error *err)
{
	const struct ema_sweep *s = r->s;
	char cwd[PATH_MAX], dir[PATH_MAX], exe[PATH_MAX], logs[PATH_MAX + 16];
	char wrap[3 * PATH_MAX + 64] = "";
	long trial[2], n_trial = 0, tasks, throttle, per_task, kib[2] = {0, 0}, self_kib;
	double secs[2] = {0, 0}, t_max = 0, time_s = 0, mem_mib = 0;
	long k_max = 0;
	int jobs = a->jobs > 0 ? a->jobs : 1;
	bool measure = !a->dry_run && (a->time_limit == NULL || a->mem == NULL), all_done = false;
	const char *scen = s->scenario[0] ? s->scenario : "sweep";
	struct ema_outfile of;
	struct rusage ru;
	FILE *f;
	int rc;

	if (!a->dry_run) {
		rc = ema_outfile_reserve(&of, "--sbatch", a->sbatch, err);
		if (rc != EMA_OK)
			return rc;
	}
	if (getcwd(cwd, sizeof cwd) == NULL)
		return ema_error_set(err, EMA_ERR_IO, "the current folder: %s", strerror(errno));
	rc = absolute_dir(s, cwd, dir, sizeof dir, err);
	if (rc != EMA_OK)
		return rc;
	self_path(exe, sizeof exe);
	/* Slurm writes the tasks' output there and does not make folders */
	snprintf(logs, sizeof logs, "%s/slurm", dir);
	if (!a->dry_run && mkdir(logs, 0777) != 0 && errno != EEXIST)
		return ema_error_set(err, EMA_ERR_IO, "%s: cannot create: %s", logs, strerror(errno));
	if (measure) {
		rc = run_trial(r, a->quiet, trial, secs, kib, &n_trial, &all_done, err);
		if (rc != EMA_OK)
			return rc;
	} else if (!a->dry_run) {
		all_done = true;
		for (long pt = 0; pt < s->n_points && all_done && rc == EMA_OK; pt++)
			rc = ema_sweep_point_done(s, pt, &all_done, err);
		if (rc != EMA_OK)
			return rc;
	}
	if (all_done) {
		printf("sweep --sbatch: all %ld points of %s are complete; nothing to submit "
		       "(tables: ema sweep merge %s)\n", s->n_points, s->dir, s->dir);
		return EMA_OK;
	}
	for (long t = 0; t < n_trial; t++) {
		if (secs[t] > t_max)
			t_max = secs[t];
		if (kib[t] > k_max)
			k_max = kib[t];
	}
	getrusage(RUSAGE_SELF, &ru);
	self_kib = ru.ru_maxrss;
	tasks = a->tasks > 0 ? a->tasks : s->n_points;
	if (tasks > s->n_points)
		tasks = s->n_points;
	if (tasks > EMA_SBATCH_MAX_TASKS) {
		if (a->tasks > 0 && !a->quiet)
			fprintf(stderr, "ema: sweep --sbatch: --tasks %d: at most %d (Slurm's usual "
				"MaxArraySize); %d tasks\n", a->tasks, EMA_SBATCH_MAX_TASKS,
				EMA_SBATCH_MAX_TASKS);
		tasks = EMA_SBATCH_MAX_TASKS;
	}
	throttle = a->throttle > 0 ? a->throttle : 50;
	if (throttle > tasks)
		throttle = tasks;
	per_task = (s->n_points + tasks - 1) / tasks;
	/* twice the slowest trial per round of -j points, and 5 minutes for
	 * the start, the planning and a slow shared file system; memory:
	 * the workers' peaks and the task's own, half again, and 100 MiB */
	if (n_trial > 0) {
		time_s = 2.0 * t_max * (double)((per_task + jobs - 1) / jobs) + 300.0;
		mem_mib = ((double)jobs * (double)k_max + (double)self_kib) / 1024.0 * 1.5 + 100.0;
		mem_mib = 100.0 * ceil(mem_mib / 100.0);
	}

	if (a->dry_run) {
		f = stdout;
	} else {
		f = ema_outfile_open(&of, err);
		if (f == NULL)
			return err->code ? err->code : EMA_ERR_IO;
	}
	fputs("#!/bin/sh\n", f);
	fprintf(f, "# The Slurm jobs of an ema sweep, written by `ema sweep --sbatch` (doc/sweeps.md)\n"
		"# with ema %s, commit %s.\n"
		"#   sh THIS_FILE [SBATCH_OPTION...]  submits the array, then the merge job after it\n"
		"#                                   (the options, e.g. --qos=Q, go to both; --array\n"
		"#                                   only to the array)\n"
		"#   sbatch THIS_FILE                 submits the array alone (then: ema sweep merge DIR)\n"
		"#   sbatch --array=1,3 THIS_FILE     runs tasks 1 and 3 again (ema sweep status DIR\n"
		"#                                   names the tasks that hold missing points)\n"
		"# Sweep %s: %ld points, %ld tasks of at most %ld points (task I: points I,\n"
		"# I + %ld, ...), at most %ld running at once, -j %d per task.\n",
		PACKAGE_VERSION, ema_commit, dir, s->n_points, tasks, per_task, tasks, throttle, jobs);
	if (n_trial > 0) {
		fprintf(f, "# Trial, kept as complete points:");
		for (long t = 0; t < n_trial; t++)
			fprintf(f, " point-%03ld %.2f s %.0f MiB%s", trial[t], secs[t],
				(double)kib[t] / 1024.0, t + 1 < n_trial ? ";" : "");
		fprintf(f, ".\n# Time: 2 x %.2f s x %ld rounds + 5 min; memory: 1.5 x (%d x %.0f + "
			"%.0f MiB) + 100 MiB.\n", t_max, (per_task + jobs - 1) / jobs, jobs,
			(double)k_max / 1024.0, (double)self_kib / 1024.0);
	} else if (a->time_limit == NULL || a->mem == NULL) {
		fprintf(f, "# No trial was run (--dry-run, or no incomplete point to measure): the time\n"
			"# and memory left unset are the partition's defaults.\n");
	}
	fprintf(f, "#SBATCH --job-name=ema-%s\n", scen);
	fprintf(f, "#SBATCH --array=0-%ld%%%ld\n", tasks - 1, throttle);
	fprintf(f, "#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=%d\n", jobs);
	if (a->time_limit != NULL) {
		fprintf(f, "#SBATCH --time=%s\n", a->time_limit);
	} else if (n_trial > 0) {
		fputs("#SBATCH --time=", f);
		put_hms(f, time_s);
		fputc('\n', f);
	}
	if (a->mem != NULL)
		fprintf(f, "#SBATCH --mem=%s\n", a->mem);
	else if (n_trial > 0)
		fprintf(f, "#SBATCH --mem=%.0fM\n", mem_mib);
	if (a->partition != NULL)
		fprintf(f, "#SBATCH --partition=%s\n", a->partition);
	if (a->account != NULL)
		fprintf(f, "#SBATCH --account=%s\n", a->account);
	for (int i = 0; i < a->n_sbatch_args; i++)
		fprintf(f, "#SBATCH %s\n", a->sbatch_args[i]);
	fprintf(f, "#SBATCH --output=%s/slurm/%%A_%%a.out\n", dir);
	fputs("set -eu\n", f);
	fputs("if [ -z \"${SLURM_ARRAY_TASK_ID:-}\" ]; then\n"
	      "\t# not a task: submit the array, and the merge after every task ended\n"
	      "\tmkdir -p ", f);
	put_sh(f, logs);
	fputs("\n\tjid=$(sbatch --parsable \"$@\" \"$0\")\n"
	      "\tjid=${jid%%;*}\n"
	      "\t# the options given here go to the merge job too, but not --array: the\n"
	      "\t# merge is one job, whichever tasks ran\n"
	      "\tskip=\n"
	      "\tfor a do\n"
	      "\t\tshift\n"
	      "\t\tif [ -n \"$skip\" ]; then skip=; continue; fi\n"
	      "\t\tcase $a in\n"
	      "\t\t--array=*|-a?*) continue ;;\n"
	      "\t\t--array|-a) skip=1; continue ;;\n"
	      "\t\tesac\n"
	      "\t\tset -- \"$@\" \"$a\"\n"
	      "\tdone\n", f);
	cat_sh(wrap, sizeof wrap, exe);
	strncat(wrap, r->plots ? " sweep merge " : " sweep merge --no-plots ",
		sizeof wrap - strlen(wrap) - 1);
	cat_sh(wrap, sizeof wrap, dir);
	fprintf(f, "\tmid=$(sbatch --parsable \"$@\" --dependency=afterany:\"$jid\" "
		"--job-name=ema-%s-merge \\\n\t\t--ntasks=1 --time=00:30:00", scen);
	if (a->mem != NULL)
		fprintf(f, " --mem=%s", a->mem);
	else
		fprintf(f, " --mem=%.0fM", mem_mib < 1000 ? 1000 : mem_mib);
	put_site_options(f, a);
	fputs(" --output=", f);
	{
		char out[PATH_MAX + 32];

		snprintf(out, sizeof out, "%s/slurm/merge-%%j.out", dir);
		put_sh(f, out);
	}
	fputs(" \\\n\t\t--chdir=", f);
	put_sh(f, cwd);
	fputs(" --wrap=", f);
	put_sh(f, wrap);
	fputs(")\n", f);
	fprintf(f, "\techo \"submitted array job $jid (%ld tasks) and merge job ${mid%%%%;*} "
		"after it\"\n\texit 0\nfi\n", tasks);
	fputs("cd ", f);
	put_sh(f, cwd);
	fputs("\nexec ", f);
	put_sh(f, exe);
	fputs(" sweep", f);
	if (r->config != NULL) {
		fputs(" --config ", f);
		put_sh(f, r->config);
	}
	for (int i = 0; i < r->n_sets; i++) {
		fputs(" --set ", f);
		put_sh(f, r->sets[i]);
	}
	for (int i = 0; i < a->n_vary; i++) {
		fputs(" --vary ", f);
		put_sh(f, a->vary[i]);
	}
	/* the task count is written here, not taken from Slurm's variables,
	 * so that `sbatch --array=1,3 THIS_FILE` runs shards 1 and 3 of the
	 * same N; progress goes to the task's log */
	fprintf(f, " -j %d%s%s --shard \"$SLURM_ARRAY_TASK_ID/%ld\" --out ", jobs,
		r->plots ? "" : " --no-plots", r->point_plots ? " --point-plots" : "", tasks);
	put_sh(f, dir);
	fputc('\n', f);
	if (a->dry_run) {
		fflush(stdout);
		if (!a->quiet)
			fprintf(stderr, "ema: sweep --sbatch --dry-run: the script above was not "
				"written, nothing was run%s\n", s->exists ? "" : " and no folder made");
		return ferror(stdout) ? ema_error_set(err, EMA_ERR_IO, "stdout: write failed") :
		       EMA_OK;
	}
	rc = ema_outfile_commit(&of, err);
	if (rc != EMA_OK)
		return rc;
	chmod(a->sbatch, 0777 & ~(mode_t)0022);
	rc = write_record(dir, a->sbatch, tasks, throttle, err);
	if (rc != EMA_OK)
		return rc;
	printf("sweep --sbatch: wrote %s: %ld points in %ld array tasks of at most %ld "
	       "(at most %ld at once)", a->sbatch, s->n_points, tasks, per_task, throttle);
	if (a->time_limit != NULL) {
		printf(", --time=%s", a->time_limit);
	} else if (n_trial > 0) {
		fputs(", --time=", stdout);
		put_hms(stdout, time_s);
	}
	if (a->mem != NULL)
		printf(" --mem=%s", a->mem);
	else if (n_trial > 0)
		printf(" --mem=%.0fM", mem_mib);
	if (n_trial > 0)
		printf(" per task from a trial of %ld point%s (slowest %.2f s, %.0f MiB)", n_trial,
		       n_trial > 1 ? "s" : "", t_max, (double)k_max / 1024.0);
	printf("; submit with: sh %s\n", a->sbatch);
	return EMA_OK;
}
