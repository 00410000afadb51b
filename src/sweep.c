/* sweep.c: `ema sweep --vary KEY=V1,V2,... [--vary ...]`: every point of
 * the cartesian product of the --vary lists runs like `ema run` with those
 * values added as --set overrides (so every error is the same as
 * `ema run`'s), into DIR/point-NNN/, and DIR/sweep.csv gathers the summary
 * rows of all points with one leading column per swept key.
 *
 * A sweep of thousands of points outlives processes, so the sweep folder
 * is not written whole like a run folder: it is made once, with its
 * manifest (sweep.json: the keys and the hash of every point's effective
 * configuration), and each point appears in it by one rename when
 * complete. Running the same command again skips the complete points and
 * redoes the others; a command whose points would have another
 * configuration is refused rather than mixed with the old points. The
 * folder's sweep.csv and sweep_stats.csv are built from the complete
 * points (sweep_merge.c). */
#define _GNU_SOURCE /* sched_getaffinity */
#include "sweep.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <cjson/cJSON.h>

#include "ema_build.h"
#include "ema_commit.h"
#include "experiment.h"
#include "json_text.h"
#include "outdir.h"
#include "readfile.h"
#include "wallclock.h"

/* ---- the plan ---------------------------------------------------------------- */

void ema_sweep_point_idx(const struct ema_sweep *s, long pt, int *idx)
{
	for (int k = s->n_keys - 1; k >= 0; k--) {
		idx[k] = (int)(pt % s->keys[k].n);
		pt /= s->keys[k].n;
	}
}

void ema_sweep_point_sets(const struct ema_sweep *s, long pt, char sets[][512])
{
	int idx[EMA_SWEEP_MAX_KEYS];

	ema_sweep_point_idx(s, pt, idx);
	for (int k = 0; k < s->n_keys; k++)
		snprintf(sets[k], 512, "%s=%s", s->keys[k].name, s->keys[k].values[idx[k]]);
}

void ema_sweep_point_name(long pt, char name[32])
{
	snprintf(name, 32, "point-%03ld", pt);
}

int ema_sweep_parse_vary(const char *arg, struct ema_sweep_key *k, struct ema_error *err)
{
	const char *eq = strchr(arg, '=');
	const char *p;

	if (eq == NULL || eq == arg || eq[1] == '\0')
		return ema_error_set(err, EMA_ERR_INPUT, "--vary %s: expected KEY=V1,V2,...", arg);
	if ((size_t)(eq - arg) >= sizeof k->name)
		return ema_error_set(err, EMA_ERR_INPUT, "--vary %.60s...: a key of at most %zu characters",
				     arg, sizeof k->name - 1);
	snprintf(k->name, sizeof k->name, "%.*s", (int)(eq - arg), arg);
	k->n = 0;
	for (p = eq + 1; *p != '\0';) {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);

		if (len == 0 || len >= sizeof k->values[0])
			return ema_error_set(err, EMA_ERR_INPUT,
					     "--vary %s: expected non-empty values of at most %zu characters",
					     arg, sizeof k->values[0] - 1);
		if (k->n == EMA_SWEEP_MAX_VALUES)
			return ema_error_set(err, EMA_ERR_INPUT, "--vary %s: at most %d values",
					     arg, EMA_SWEEP_MAX_VALUES);
		snprintf(k->values[k->n++], sizeof k->values[0], "%.*s", (int)len, p);
		p += len + (c ? 1 : 0);
	}
	for (const char *q = k->name; *q; q++)
		if (*q == ',' || *q == '"' || *q == '\n')
			return ema_error_set(err, EMA_ERR_INPUT,
					     "--vary %s: a key cannot hold commas or quotes", arg);
	/* keys and values travel in sweep.csv (quoted when they hold a comma),
	 * sweep.json and messages: a quote, a backslash or a control
	 * character (a carriage return ends a CSV row too) could not */
	if (!ema_text_is_clean(arg))
		return ema_error_set(err, EMA_ERR_INPUT, "--vary %s: expected text in UTF-8 without "
				     "control characters (line breaks, tabs, escapes)", arg);
	for (int v = 0; v < k->n; v++)
		for (const char *q = k->values[v]; *q; q++)
			if (*q == '"' || *q == '\\')
				return ema_error_set(err, EMA_ERR_INPUT,
						     "--vary %s: a value cannot hold quotes or "
						     "backslashes", arg);
	return EMA_OK;
}

int ema_sweep_layout(struct ema_sweep *s, struct ema_error *err)
{
	s->n_points = 1;
	s->seed_key = -1;
	for (int k = 0; k < s->n_keys; k++) {
		if (strcmp(s->keys[k].name, "seed") == 0 && s->keys[k].n >= 2)
			s->seed_key = k;
		for (int j = 0; j < k; j++)
			if (strcmp(s->keys[j].name, s->keys[k].name) == 0)
				return ema_error_set(err, EMA_ERR_INPUT, "--vary %s: the key is "
						     "varied twice", s->keys[k].name);
		s->n_points *= s->keys[k].n;
		if (s->n_points > EMA_SWEEP_MAX_POINTS)
			return ema_error_set(err, EMA_ERR_INPUT, "sweep: more than %d points",
					     EMA_SWEEP_MAX_POINTS);
	}
	free(s->hash);
	s->hash = calloc((size_t)s->n_points, sizeof *s->hash);
	if (s->hash == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	return EMA_OK;
}

void ema_sweep_compute_id(struct ema_sweep *s)
{
	struct ema_sha256 h;

	ema_sha256_init(&h);
	for (int k = 0; k < s->n_keys; k++) {
		ema_sha256_update(&h, s->keys[k].name, strlen(s->keys[k].name) + 1);
		for (int v = 0; v < s->keys[k].n; v++)
			ema_sha256_update(&h, s->keys[k].values[v], strlen(s->keys[k].values[v]) + 1);
	}
	for (long pt = 0; pt < s->n_points; pt++)
		ema_sha256_update(&h, s->hash[pt], EMA_SHA256_HEX - 1);
	ema_sha256_hex(&h, s->id);
}

void ema_sweep_free(struct ema_sweep *s)
{
	free(s->hash);
	s->hash = NULL;
}

/* ---- the manifest -------------------------------------------------------------- */

int ema_sweep_write_manifest(const struct ema_sweep *s, FILE *f)
{
	char sets[EMA_SWEEP_MAX_KEYS][512];

	fprintf(f, "{\n  \"program\": \"ema\",\n  \"version\": \"%s\",\n  \"commit\": ",
		PACKAGE_VERSION);
	ema_json_put_string(f, ema_commit);
	fputs(",\n  \"scenario\": ", f);
	ema_json_put_string(f, s->scenario);
	fputs(",\n  \"command\": ", f);
	ema_json_put_string(f, s->command);
	fprintf(f, ",\n  \"id\": \"%s\",\n  \"keys\": [\n", s->id);
	for (int k = 0; k < s->n_keys; k++) {
		fputs("    {\"name\": ", f);
		ema_json_put_string(f, s->keys[k].name);
		fputs(", \"values\": [", f);
		for (int v = 0; v < s->keys[k].n; v++) {
			if (v > 0)
				fputs(", ", f);
			ema_json_put_string(f, s->keys[k].values[v]);
		}
		fprintf(f, "]}%s\n", k + 1 < s->n_keys ? "," : "");
	}
	fputs("  ],\n  \"points\": [\n", f);
	for (long pt = 0; pt < s->n_points; pt++) {
		ema_sweep_point_sets(s, pt, sets);
		fprintf(f, "    {\"point\": %ld, \"sha256\": \"%s\", \"set\": [", pt, s->hash[pt]);
		for (int k = 0; k < s->n_keys; k++) {
			if (k > 0)
				fputs(", ", f);
			ema_json_put_string(f, sets[k]);
		}
		fprintf(f, "]}%s\n", pt + 1 < s->n_points ? "," : "");
	}
	fputs("  ]\n}\n", f);
	return ferror(f) ? EMA_ERR_IO : EMA_OK;
}

static const char *json_str(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

int ema_sweep_read_manifest(struct ema_sweep *s, const char *dir, struct ema_error *err)
{
	char path[EMA_PATH_MAX + 32];
	char *text = NULL;
	size_t len = 0;
	struct stat st;
	cJSON *root = NULL;
	const cJSON *keys, *points, *it;
	const char *v;
	int rc;

	snprintf(path, sizeof path, "%s/sweep.json", dir);
	if (stat(dir, &st) != 0)
		return ema_error_set(err, EMA_ERR_INPUT, "%s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return ema_error_set(err, EMA_ERR_INPUT, "%s: not a folder, expected a sweep folder", dir);
	if (stat(path, &st) != 0)
		return ema_error_set(err, EMA_ERR_INPUT,
				     "%s: not a sweep folder (no sweep.json: made by an older ema, or "
				     "by something else)", dir);
	rc = ema_read_file(path, "a sweep manifest", 0, &text, &len, err);
	if (rc != EMA_OK)
		return rc;
	root = cJSON_ParseWithLength(text, len);
	free(text);
	rc = ema_error_set(err, EMA_ERR_INPUT, "%s: expected the manifest ema writes "
			   "(program, keys, points)", path);
	if (root == NULL || !cJSON_IsObject(root))
		goto out;
	v = json_str(root, "program");
	keys = cJSON_GetObjectItemCaseSensitive(root, "keys");
	points = cJSON_GetObjectItemCaseSensitive(root, "points");
	if (v == NULL || strcmp(v, "ema") != 0 || !cJSON_IsArray(keys) || !cJSON_IsArray(points))
		goto out;
	s->n_keys = 0;
	cJSON_ArrayForEach(it, keys) {
		const cJSON *vals = cJSON_GetObjectItemCaseSensitive(it, "values"), *x;
		struct ema_sweep_key *k = &s->keys[s->n_keys];

		v = json_str(it, "name");
		if (s->n_keys == EMA_SWEEP_MAX_KEYS || v == NULL || strlen(v) >= sizeof k->name ||
		    !cJSON_IsArray(vals))
			goto out;
		snprintf(k->name, sizeof k->name, "%s", v);
		k->n = 0;
		cJSON_ArrayForEach(x, vals) {
			if (!cJSON_IsString(x) || k->n == EMA_SWEEP_MAX_VALUES ||
			    strlen(x->valuestring) >= sizeof k->values[0])
				goto out;
			snprintf(k->values[k->n++], sizeof k->values[0], "%s", x->valuestring);
		}
		if (k->n == 0)
			goto out;
		s->n_keys++;
	}
	if (s->n_keys == 0 || ema_sweep_layout(s, err) != EMA_OK)
		goto out;
	if (cJSON_GetArraySize(points) != s->n_points)
		goto out;
	{
		long pt = 0;

		cJSON_ArrayForEach(it, points) {
			v = json_str(it, "sha256");
			if (v == NULL || strlen(v) != EMA_SHA256_HEX - 1)
				goto out;
			snprintf(s->hash[pt++], EMA_SHA256_HEX, "%s", v);
		}
	}
	v = json_str(root, "scenario");
	snprintf(s->scenario, sizeof s->scenario, "%s", v ? v : "");
	v = json_str(root, "command");
	snprintf(s->command, sizeof s->command, "%s", v ? v : "");
	snprintf(s->dir, sizeof s->dir, "%s", dir);
	ema_sweep_compute_id(s);
	rc = EMA_OK;
out:
	cJSON_Delete(root);
	return rc;
}

int ema_sweep_point_done(const struct ema_sweep *s, long pt, bool *done, struct ema_error *err)
{
	char name[32], path[EMA_PATH_MAX + 64], hash[EMA_SHA256_HEX] = "";
	struct stat st;
	FILE *f;

	ema_sweep_point_name(pt, name);
	snprintf(path, sizeof path, "%s/%s", s->dir, name);
	*done = false;
	if (lstat(path, &st) != 0)
		return EMA_OK;
	if (!S_ISDIR(st.st_mode))
		return ema_error_set(err, EMA_ERR_INPUT, "%s: not a point folder (a file?); remove it",
				     path);
	snprintf(path, sizeof path, "%s/%s/config.sha256", s->dir, name);
	f = fopen(path, "r");
	if (f != NULL) {
		if (fscanf(f, "%64s", hash) != 1)
			hash[0] = '\0';
		fclose(f);
	}
	if (strcmp(hash, s->hash[pt]) != 0)
		return ema_error_set(err, EMA_ERR_INPUT,
				     "%s/%s: made from another configuration than this sweep's point "
				     "%ld (config.sha256 %s, expected %.12s...): the folder mixes "
				     "sweeps; remove that point to redo it", s->dir, name,
				     pt, hash[0] ? hash : "missing", s->hash[pt]);
	*done = true;
	return EMA_OK;
}

/* ---- running a point --------------------------------------------------------- */


/* The effective configuration's hash: that of the config.json a run of
 * it writes. */
static int config_hash(const struct ema_config *cfg, char hex[EMA_SHA256_HEX],
		       struct ema_error *err)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	int rc;

	if (m == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	rc = ema_config_write_json(cfg, m, err);
	if (fclose(m) != 0 && rc == EMA_OK)
		rc = ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	if (rc == EMA_OK)
		ema_sha256_of(buf, len, hex);
	free(buf);
	return rc;
}

/* Loads every point's configuration, so that a bad value fails at once
 * with the --set it came from, before anything runs, and hashes it. */
static int plan_points(struct ema_sweep_run *r, struct ema_error *err)
{
	struct ema_sweep *s = r->s;
	struct ema_config *cfg = malloc(sizeof *cfg);
	char sets[EMA_SWEEP_MAX_KEYS][512];
	int rc = EMA_OK;

	if (cfg == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	for (long pt = 0; pt < s->n_points && rc == EMA_OK; pt++) {
		ema_sweep_point_sets(s, pt, sets);
		for (int k = 0; k < s->n_keys; k++)
			r->sets[r->n_sets + k] = sets[k];
		rc = ema_config_load(cfg, r->config, r->sets, r->n_sets + s->n_keys, err);
		if (rc == EMA_OK)
			rc = config_hash(cfg, s->hash[pt], err);
		if (rc == EMA_OK && pt == 0)
			snprintf(s->scenario, sizeof s->scenario, "%s", cfg->name);
	}
	free(cfg);
	if (rc == EMA_OK)
		ema_sweep_compute_id(s);
	return rc;
}

/* Whether DIR/point-NNN, found where this process meant to write it, is
 * the same point (written meanwhile by a process that took over the claim
 * at the same moment): then this process's copy is dropped, the same
 * bytes. */
static bool appeared_whole(const struct ema_sweep *s, long pt)
{
	struct ema_error e = {0};
	bool done = false;

	return ema_sweep_point_done(s, pt, &done, &e) == EMA_OK && done;
}

/* Claims point pt, and when it is this process's, runs it and writes
 * DIR/point-NNN/ (through DIR/point-NNN.tmp-HOST-PID, renamed when
 * complete, so that a kill at any moment leaves no partial point). The
 * simulation runs before the folder is made: a point killed while
 * simulating leaves nothing but its claim, which the next process takes
 * over. */
int ema_sweep_run_point(struct ema_sweep_run *r, long pt, enum ema_point_outcome *out,
			struct ema_error *err)
{
	struct ema_sweep *s = r->s;
	char sets[EMA_SWEEP_MAX_KEYS][512], name[32], hash[EMA_SHA256_HEX];
	char path[EMA_PATH_MAX + 160];
	struct ema_experiment *x;
	enum ema_claim_result claim_res;
	struct ema_claim claim;
	struct ema_outdir pod;
	size_t clen = 0;
	FILE *f;
	int rc;

	*out = EMA_POINT_TAKEN;
	rc = ema_sweep_claim(s, pt, &claim, &claim_res, NULL, err);
	if (rc != EMA_OK)
		return rc;
	if (claim_res != EMA_CLAIM_OURS) {
		*out = claim_res == EMA_CLAIM_DONE ? EMA_POINT_DONE : EMA_POINT_TAKEN;
		return EMA_OK;
	}
	x = calloc(1, sizeof *x);
	if (x == NULL) {
		ema_sweep_claim_release(&claim);
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	}
	ema_sweep_point_sets(s, pt, sets);
	ema_sweep_point_name(pt, name);
	for (int k = 0; k < s->n_keys; k++)
		r->sets[r->n_sets + k] = sets[k];
	x->quiet = true;
	clen += (size_t)snprintf(x->command, sizeof x->command, "ema sweep point %ld:", pt);
	for (int k = 0; k < s->n_keys && clen < sizeof x->command; k++)
		clen += (size_t)snprintf(x->command + clen, sizeof x->command - clen, " --set %s",
					 sets[k]);
	rc = ema_config_load(&x->cfg, r->config, r->sets, r->n_sets + s->n_keys, err);
	if (rc == EMA_OK)
		rc = config_hash(&x->cfg, hash, err);
	if (rc == EMA_OK && strcmp(hash, s->hash[pt]) != 0)
		rc = ema_error_set(err, EMA_ERR_INPUT, "%s/%s: its configuration changed while the "
				   "sweep ran (a file it reads was edited?)", s->dir, name);
	if (rc == EMA_OK)
		rc = ema_experiment_run(x, err);
	if (rc == EMA_OK) {
		rc = ema_outdir_reserve_part(&pod, s->dir, name, true, err);
		if (rc != EMA_OK && appeared_whole(s, pt)) {
			*out = EMA_POINT_DONE;
			goto out;
		}
	}
	if (rc == EMA_OK) {
		/* the hash first: a point without it is never complete */
		snprintf(path, sizeof path, "%s/config.sha256", pod.tmp);
		f = fopen(path, "w");
		if (f == NULL) {
			rc = ema_error_set(err, EMA_ERR_IO, "%s/config.sha256: cannot write: %s",
					   pod.shown, strerror(errno));
		} else {
			errno = 0;
			fprintf(f, "%s  config.json\n", hash);
			snprintf(path, sizeof path, "%s/config.sha256", pod.shown);
			rc = ema_file_close(f, EMA_OK, path, err);
		}
		if (rc == EMA_OK)
			rc = ema_experiment_write(x, &pod, r->point_plots, err);
		else
			ema_outdir_abort(&pod);
		if (rc == EMA_OK)
			*out = EMA_POINT_RAN;
		else if (appeared_whole(s, pt))
			*out = EMA_POINT_DONE, rc = EMA_OK;
	}
out:
	ema_sweep_claim_release(&claim);
	ema_experiment_free(x);
	free(x);
	return rc;
}

/* ---- the pool -------------------------------------------------------------------- */

/* The cores this process may run on (a Slurm task's or a container's
 * share, not the machine's). */
static int default_jobs(void)
{
	long n;
#ifdef CPU_COUNT
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
		return CPU_COUNT(&set);
#endif
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)(n < 1024 ? n : 1024) : 1;
}

static void progress(const struct ema_sweep *s, long pt, long done, long n, int running,
		     double secs)
{
	char sets[EMA_SWEEP_MAX_KEYS][512];

	ema_sweep_point_sets(s, pt, sets);
	fprintf(stderr, "ema: sweep: %ld/%ld done, point-%03ld (%.1f s", done, n, pt, secs);
	if (running > 0)
		fprintf(stderr, ", %d running", running);
	fputs("):", stderr);
	for (int k = 0; k < s->n_keys; k++)
		fprintf(stderr, " %s", sets[k]);
	fputc('\n', stderr);
}

/* A worker: one point, in a process of its own, which dies with the
 * sweep (a parent killed with kill -9 takes its workers along, instead of
 * leaving them to write into a folder that the next run will use). Its
 * exit status says what became of the point. */
static _Noreturn void worker(struct ema_sweep_run *r, long pt, pid_t parent)
{
	struct ema_error err = {0};
	enum ema_point_outcome out;
	int rc;

	ema_cleanup_forked();
#ifdef PR_SET_PDEATHSIG
	/* SIGTERM, not SIGKILL: the worker removes its unfinished point */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
#endif
	if (getppid() != parent)
		_exit(1);
	rc = ema_sweep_run_point(r, pt, &out, &err);
	if (rc != EMA_OK)
		fprintf(stderr, "ema: %s\n", err.msg[0] ? err.msg : ema_status_str(rc));
	fflush(NULL);
	if (rc == EMA_OK && out != EMA_POINT_RAN)
		_exit(out == EMA_POINT_DONE ? EMA_POINT_EXIT_DONE : EMA_POINT_EXIT_TAKEN);
	_exit(ema_status_exit(rc));
}

/* What run_points did: the points run now, and those another process is
 * running (taken[0..n_taken-1], point order). */
struct run_result {
	long ran;
	long *taken;
	long n_taken;
};

static void note_outcome(const struct ema_sweep *s, struct run_result *res, long pt,
			 enum ema_point_outcome out, bool quiet)
{
	if (out == EMA_POINT_RAN) {
		res->ran++;
	} else if (out == EMA_POINT_TAKEN) {
		res->taken[res->n_taken++] = pt;
		if (!quiet) {
			struct ema_claim_owner o;
			char who[200] = "another process";
			bool held;

			ema_sweep_claim_read(s, pt, &held, &o);
			if (held)
				ema_claim_owner_text(&o, who, sizeof who);
			fprintf(stderr, "ema: sweep: point-%03ld is being run by %s; going on\n", pt,
				who);
		}
	}
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

/* Runs the points todo[0..n-1]: in this process with one job, else in up
 * to `jobs` worker processes at once. A point another process has claimed
 * is left to it (res->taken). The first failure stops new points from
 * starting; the running ones finish (their points are whole). res->taken
 * holds n points. */
static int run_points(struct ema_sweep_run *r, const long *todo, long n, int jobs, bool quiet,
		      struct run_result *res, struct ema_error *err)
{
	struct { pid_t pid; long pt; double t0; } *w;
	const struct ema_sweep *s = r->s;
	pid_t parent = getpid();
	int running = 0, rc = EMA_OK;
	long next = 0;

	res->ran = res->n_taken = 0;
	if (jobs <= 1 || n <= 1) {
		for (long i = 0; i < n && rc == EMA_OK; i++) {
			double t0 = ema_wall_now();
			enum ema_point_outcome out;

			rc = ema_sweep_run_point(r, todo[i], &out, err);
			if (rc == EMA_OK) {
				note_outcome(s, res, todo[i], out, quiet);
				if (!quiet && out == EMA_POINT_RAN)
					progress(s, todo[i], res->ran, n, 0, ema_wall_now() - t0);
			}
		}
		return rc;
	}
	w = calloc((size_t)jobs, sizeof *w);
	if (w == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	while (running > 0 || (next < n && rc == EMA_OK)) {
		int status, i;
		pid_t pid;

		while (rc == EMA_OK && next < n && running < jobs) {
			fflush(NULL); /* or the workers would write it again */
			pid = fork();
			if (pid < 0) {
				rc = ema_error_set(err, EMA_ERR_IO, "sweep: cannot start a worker "
						   "process: %s", strerror(errno));
				break;
			}
			if (pid == 0)
				worker(r, todo[next], parent);
			ema_cleanup_add_child(pid);
			w[running].pid = pid;
			w[running].pt = todo[next++];
			w[running].t0 = ema_wall_now();
			running++;
		}
		if (running == 0)
			break;
		pid = waitpid(-1, &status, 0);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			rc = ema_error_set(err, EMA_ERR_INTERNAL, "sweep: waitpid: %s", strerror(errno));
			break;
		}
		for (i = 0; i < running && w[i].pid != pid; i++)
			;
		if (i == running)
			continue; /* not a worker */
		ema_cleanup_drop_child(pid);
		{
			long pt = w[i].pt;
			double t0 = w[i].t0;
			int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;

			w[i] = w[--running];
			if (code == 0 || code == EMA_POINT_EXIT_DONE || code == EMA_POINT_EXIT_TAKEN) {
				note_outcome(s, res, pt, code == 0 ? EMA_POINT_RAN : code ==
					     EMA_POINT_EXIT_DONE ? EMA_POINT_DONE : EMA_POINT_TAKEN,
					     quiet);
				if (!quiet && code == 0)
					progress(s, pt, res->ran, n, running, ema_wall_now() - t0);
			} else if (rc == EMA_OK) {
				char why[64];

				if (WIFSIGNALED(status))
					snprintf(why, sizeof why, "killed by signal %d", WTERMSIG(status));
				else
					snprintf(why, sizeof why, "exit status %d", WEXITSTATUS(status));
				rc = ema_error_set(err, code == 2 ? EMA_ERR_INPUT : EMA_ERR_IO,
						   "sweep %s: point-%03ld failed (%s%s); no new point was "
						   "started", s->dir, pt, why,
						   WIFEXITED(status) ? ", its message is above" : "");
			}
		}
	}
	free(w);
	qsort(res->taken, (size_t)res->n_taken, sizeof *res->taken, cmp_long);
	return rc;
}

/* The points of list[0..n-1] that a live process still holds: left in
 * list (its new length returned), the others (complete, or claimed by
 * nobody or by the dead) moved to retry[0..*n_retry-1]. */
static long still_taken(const struct ema_sweep *s, long *list, long n, long *retry,
			long *n_retry)
{
	long k = 0;

	*n_retry = 0;
	for (long i = 0; i < n; i++) {
		struct ema_claim_owner o;
		bool held;

		ema_sweep_claim_read(s, list[i], &held, &o);
		if (held && !o.stale)
			list[k++] = list[i];
		else
			retry[(*n_retry)++] = list[i];
	}
	return k;
}

/* ---- the sweep folder ---------------------------------------------------------- */

static bool same_keys(const struct ema_sweep *a, const struct ema_sweep *b)
{
	if (a->n_keys != b->n_keys)
		return false;
	for (int k = 0; k < a->n_keys; k++) {
		if (strcmp(a->keys[k].name, b->keys[k].name) != 0 || a->keys[k].n != b->keys[k].n)
			return false;
		for (int v = 0; v < a->keys[k].n; v++)
			if (strcmp(a->keys[k].values[v], b->keys[k].values[v]) != 0)
				return false;
	}
	return true;
}

/* The folder exists: it must be this very sweep. */
static int check_existing(const struct ema_sweep *s, const char *opt, struct ema_error *err)
{
	struct ema_sweep *old = calloc(1, sizeof *old);
	char sets[EMA_SWEEP_MAX_KEYS][512], list[1024] = "";
	int rc;

	if (old == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	rc = ema_sweep_read_manifest(old, s->dir, err);
	if (rc != EMA_OK) {
		char why[EMA_ERROR_MSG_MAX];

		snprintf(why, sizeof why, "%s", err->msg);
		rc = ema_error_set(err, rc, "%s %s: already exists and cannot be resumed (%s); choose "
				   "another, nothing was run", opt, s->dir, why);
	} else if (!same_keys(s, old)) {
		for (int k = 0; k < old->n_keys; k++) {
			size_t l = strlen(list);

			snprintf(list + l, sizeof list - l, "%s--vary %s=%s%s", k ? " " : "",
				 old->keys[k].name, old->keys[k].values[0],
				 old->keys[k].n > 1 ? ",..." : "");
		}
		rc = ema_error_set(err, EMA_ERR_INPUT, "%s %s: holds another sweep (%s); choose another "
				   "--out, nothing was run", opt, s->dir, list);
	} else {
		for (long pt = 0; pt < s->n_points; pt++)
			if (strcmp(s->hash[pt], old->hash[pt]) != 0) {
				size_t l = 0;

				ema_sweep_point_sets(s, pt, sets);
				for (int k = 0; k < s->n_keys; k++)
					l += (size_t)snprintf(list + l, sizeof list - l, " --set %s",
							      sets[k]);
				rc = ema_error_set(err, EMA_ERR_INPUT,
						   "%s %s: the sweep's configuration changed since the folder "
						   "was made (point %ld,%s, now hashes to %.12s..., was "
						   "%.12s...: the scenario, a --set or a default differs); "
						   "nothing was run: use another --out, or remove %s to start "
						   "again", opt, s->dir, pt, list, s->hash[pt], old->hash[pt],
						   s->dir);
				break;
			}
	}
	ema_sweep_free(old);
	free(old);
	return rc;
}

/* Makes the sweep folder with its manifest, or finds the same sweep there.
 * The folder appears by one rename with sweep.json inside, so that shards
 * starting together agree on one folder and none sees it half made. */
static int open_folder(struct ema_sweep *s, const char *out, bool dry_run,
		       struct ema_error *err)
{
	const char *opt = out != NULL ? "--out" : "output folder";
	bool made_runs = false;
	int rc = EMA_OK;

	if (out != NULL) {
		size_t n = strlen(out);

		if (n == 0)
			return ema_error_set(err, EMA_ERR_INPUT, "--out: expected a name, not an empty one");
		if (n >= sizeof s->dir - 64)
			return ema_error_set(err, EMA_ERR_INPUT, "--out %.60s...: too long", out);
		snprintf(s->dir, sizeof s->dir, "%s", out);
		while (n > 1 && s->dir[n - 1] == '/')
			s->dir[--n] = '\0';
	} else {
		/* named after the sweep, so that the same command finds its
		 * folder again and another sweep gets its own */
		snprintf(s->dir, sizeof s->dir, "runs/sweep-%.8s", s->id);
		if (dry_run)
			;
		else if (mkdir("runs", 0777) == 0)
			made_runs = true;
		else if (errno != EEXIST)
			return ema_error_set(err, EMA_ERR_INPUT, "runs: cannot create: %s",
					     strerror(errno));
	}
	for (int attempt = 0;; attempt++) {
		struct ema_outdir od;
		struct stat st;
		struct ema_out_writer live;
		char path[EMA_PATH_MAX + 160], who[160];
		FILE *f;

		if (lstat(s->dir, &st) == 0) {
			s->exists = true;
			return check_existing(s, opt, err);
		}
		rc = ema_out_check_parent(opt, s->dir, err);
		if (dry_run && out == NULL && rc != EMA_OK && access("runs", F_OK) != 0)
			return EMA_OK; /* runs/ would be made */
		if (dry_run)
			return rc; /* --dry-run writes nothing */
		if (rc == EMA_OK)
			rc = ema_out_clean_leftovers(s->dir, &live, err);
		if (rc != EMA_OK)
			break;
		if (live.pid != 0) {
			/* another shard making it right now: a moment */
			if (attempt < 100) {
				struct timespec ts = { 0, 100000000 };

				nanosleep(&ts, NULL);
				continue;
			}
			ema_out_writer_text(&live, who, sizeof who);
			rc = ema_error_set(err, EMA_ERR_INPUT, "%s %s: %s.tmp-%s is being written by "
					   "%s; choose another", opt, s->dir, s->dir, live.tail, who);
			break;
		}
		rc = ema_outdir_reserve(&od, opt, s->dir, NULL, err);
		if (rc != EMA_OK) {
			if (lstat(s->dir, &st) == 0 && attempt < 100)
				continue;
			break;
		}
		snprintf(path, sizeof path, "%s/sweep.json", od.tmp);
		f = fopen(path, "w");
		if (f == NULL) {
			rc = ema_error_set(err, EMA_ERR_IO, "%s/sweep.json: cannot write: %s", s->dir,
					   strerror(errno));
			ema_outdir_abort(&od);
			break;
		}
		errno = 0;
		rc = ema_sweep_write_manifest(s, f);
		snprintf(path, sizeof path, "%s/sweep.json", s->dir);
		rc = ema_file_close(f, rc, path, err);
		if (rc != EMA_OK) {
			ema_outdir_abort(&od);
			break;
		}
		od.exact = true;
		rc = ema_outdir_commit(&od, err);
		if (rc == EMA_OK) {
			s->exists = true;
			return EMA_OK;
		}
		if (lstat(s->dir, &st) == 0 && attempt < 100)
			continue; /* another shard won: check its manifest */
		break;
	}
	if (made_runs)
		rmdir("runs");
	return rc;
}

/* ---- the command ----------------------------------------------------------------- */

/* "1,3,5-7": the --array= indices of the tasks (of `tasks`, task I holding
 * points I, I + tasks, ...) that hold the points of list[0..n-1]. */
static void array_indices(const long *list, long n, long tasks, char *buf, size_t len)
{
	bool *want = calloc((size_t)tasks, sizeof *want);
	size_t k = 0;

	buf[0] = '\0';
	if (want == NULL)
		return;
	for (long i = 0; i < n; i++)
		want[list[i] % tasks] = true;
	for (long t = 0; t < tasks && k + 24 < len; t++) {
		long e = t;

		if (!want[t])
			continue;
		while (e + 1 < tasks && want[e + 1])
			e++;
		k += (size_t)snprintf(buf + k, len - k, "%s%ld", k ? "," : "", t);
		if (e > t)
			k += (size_t)snprintf(buf + k, len - k, "%s%ld", e > t + 1 ? "-" : ",", e);
		t = e;
	}
	free(want);
}

/* DIR/slurm/sbatch.json, written by --sbatch: the array's task count and
 * the script, to say which tasks hold the missing points. */
static bool read_sbatch_record(const char *dir, long *tasks, char *script, size_t n)
{
	char path[EMA_PATH_MAX + 32], *text = NULL;
	size_t len = 0;
	const cJSON *t, *sc;
	cJSON *root;
	bool ok;

	snprintf(path, sizeof path, "%s/slurm/sbatch.json", dir);
	if (access(path, R_OK) != 0 || ema_read_file(path, "sbatch.json", 1u << 20, &text, &len,
						     NULL) != EMA_OK)
		return false;
	root = cJSON_ParseWithLength(text, len);
	free(text);
	t = cJSON_GetObjectItemCaseSensitive(root, "tasks");
	sc = cJSON_GetObjectItemCaseSensitive(root, "script");
	ok = cJSON_IsNumber(t) && t->valuedouble >= 1 && t->valuedouble <= 100000 &&
	     cJSON_IsString(sc);
	if (ok) {
		*tasks = (long)t->valuedouble;
		snprintf(script, n, "%s", sc->valuestring);
	}
	cJSON_Delete(root);
	return ok;
}

void ema_sweep_how_to_finish(const struct ema_sweep *s, const long *list, long n, char *buf,
			     size_t len)
{
	char script[EMA_PATH_MAX], idx[512];
	long tasks;

	if (read_sbatch_record(s->dir, &tasks, script, sizeof script)) {
		array_indices(list, n, tasks, idx, sizeof idx);
		snprintf(buf, len, "resubmit the tasks that hold them: sbatch --array=%s %s "
			 "(then: ema sweep merge %s), or run the sweep's own command", idx, script,
			 s->dir);
	} else {
		snprintf(buf, len, "the sweep's own command runs them (and only them)");
	}
}

/* Lists points (at most 20) with their values on stderr. */
static void list_points(const struct ema_sweep *s, const long *list, long n)
{
	for (long i = 0; i < n && i < 20; i++) {
		char sets[EMA_SWEEP_MAX_KEYS][512];

		ema_sweep_point_sets(s, list[i], sets);
		fprintf(stderr, "ema:   point-%03ld:", list[i]);
		for (int k = 0; k < s->n_keys; k++)
			fprintf(stderr, " %s", sets[k]);
		fputc('\n', stderr);
	}
	if (n > 20)
		fprintf(stderr, "ema:   ... and %ld more\n", n - 20);
}

/* The points not complete: missing[0..*n_missing-1] (none running them,
 * or only a dead or silent owner's claim), and running[0..*n_running-1]
 * (a live process's claim). Arrays of s->n_points. */
static int incomplete_points(const struct ema_sweep *s, long *missing, long *n_missing,
			     long *running, long *n_running, struct ema_error *err)
{
	*n_missing = *n_running = 0;
	for (long pt = 0; pt < s->n_points; pt++) {
		struct ema_claim_owner o;
		bool done, held;
		int rc = ema_sweep_point_done(s, pt, &done, err);

		if (rc != EMA_OK)
			return rc;
		if (done)
			continue;
		ema_sweep_claim_read(s, pt, &held, &o);
		if (held && !o.stale)
			running[(*n_running)++] = pt;
		else
			missing[(*n_missing)++] = pt;
	}
	return EMA_OK;
}

static int read_folder_arg(const struct ema_cli_args *a, const char *what, struct ema_sweep **out,
			   struct ema_error *err)
{
	struct ema_sweep *s;
	int rc;

	if (a->n_args != 2)
		return ema_error_set(err, EMA_ERR_INPUT, "ema sweep %s: expected the sweep folder: "
				     "ema sweep %s DIR (see 'ema help sweep')", what, what);
	if (a->n_vary > 0 || a->n_sets > 0 || a->config != NULL || a->out != NULL ||
	    a->sbatch != NULL || a->shard != NULL || a->max_rate != NULL)
		return ema_error_set(err, EMA_ERR_INPUT, "ema sweep %s: takes the folder only; its "
				     "keys and configuration are in DIR/sweep.json (see 'ema help "
				     "sweep')", what);
	s = calloc(1, sizeof *s);
	if (s == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	rc = ema_sweep_read_manifest(s, a->args[1], err);
	if (rc != EMA_OK) {
		ema_sweep_free(s);
		free(s);
		return rc;
	}
	*out = s;
	return EMA_OK;
}

/* `ema sweep merge DIR`: the tables from the complete points; a missing
 * point fails the merge (exit 1, the tables of the others written), so
 * that a merge job after an array says when the sweep is not whole. */
static int sweep_merge_exec(const struct ema_cli_args *a, struct ema_error *err)
{
	struct ema_sweep *s = NULL;
	long missing = 0;
	int rc = read_folder_arg(a, "merge", &s, err);

	if (rc != EMA_OK)
		return rc;
	rc = ema_sweep_merge(s, a->plots, a->quiet, &missing, err);
	if (rc == EMA_OK)
		printf("sweep merge: %ld of %ld points, results in %s/ (sweep.csv%s)\n",
		       s->n_points - missing, s->n_points, s->dir,
		       s->seed_key >= 0 ? ", sweep_stats.csv" : "");
	if (rc == EMA_OK && missing > 0)
		rc = ema_error_set(err, EMA_ERR_IO, "sweep merge %s: %ld of %ld points missing "
				   "(listed above): the sweep is not complete", s->dir, missing,
				   s->n_points);
	ema_sweep_free(s);
	free(s);
	return rc;
}

/* `ema sweep status DIR`: what is complete, what runs where, what is
 * missing and which array tasks to submit again. */
static int sweep_status_exec(const struct ema_cli_args *a, struct ema_error *err)
{
	struct ema_sweep *s = NULL;
	long *missing = NULL, *running = NULL, n_missing = 0, n_running = 0;
	char how[3 * EMA_PATH_MAX + 1024];
	int rc = read_folder_arg(a, "status", &s, err);

	if (rc != EMA_OK)
		return rc;
	missing = malloc((size_t)s->n_points * sizeof *missing);
	running = malloc((size_t)s->n_points * sizeof *running);
	if (missing == NULL || running == NULL)
		rc = ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	if (rc == EMA_OK)
		rc = incomplete_points(s, missing, &n_missing, running, &n_running, err);
	if (rc == EMA_OK) {
		printf("sweep %s: %ld points: %ld complete, %ld running, %ld missing\n", s->dir,
		       s->n_points, s->n_points - n_missing - n_running, n_running, n_missing);
		for (long i = 0; i < n_running; i++) {
			struct ema_claim_owner o;
			char who[200] = "";
			bool held;

			ema_sweep_claim_read(s, running[i], &held, &o);
			ema_claim_owner_text(&o, who, sizeof who);
			printf("running: point-%03ld (%s)\n", running[i], who);
		}
		if (n_missing > 0) {
			char sets[EMA_SWEEP_MAX_KEYS][512];

			for (long i = 0; i < n_missing; i++) {
				ema_sweep_point_sets(s, missing[i], sets);
				printf("missing: point-%03ld:", missing[i]);
				for (int k = 0; k < s->n_keys; k++)
					printf(" %s", sets[k]);
				putchar('\n');
			}
			ema_sweep_how_to_finish(s, missing, n_missing, how, sizeof how);
			printf("to finish: %s\n", how);
		}
	}
	free(missing);
	free(running);
	ema_sweep_free(s);
	free(s);
	return rc;
}

static void utc_now(char *buf, size_t n)
{
	time_t t = time(NULL);
	struct tm tm;

	if (gmtime_r(&t, &tm) == NULL || strftime(buf, n, "%Y-%m-%d %H:%M:%SZ", &tm) == 0)
		snprintf(buf, n, "?");
}

/* The --sbatch options are the script's. */
static int check_sbatch_options(const struct ema_cli_args *a, struct ema_error *err)
{
	const char *given = a->partition ? "--partition" : a->account ? "--account" :
			    a->time_limit ? "--time" : a->mem ? "--mem" :
			    a->n_sbatch_args ? "--sbatch-arg" : a->dry_run ? "--dry-run" :
			    a->tasks > 0 ? "--tasks" : a->throttle > 0 ? "--throttle" : NULL;

	if (given != NULL && a->sbatch == NULL)
		return ema_error_set(err, EMA_ERR_INPUT, "sweep: %s goes with --sbatch FILE", given);
	return EMA_OK;
}

/* Waits until the points list[0..n-1], which other processes run, are
 * complete, running those whose owner has gone (this process's sweep is
 * whole when it merges). */
static int wait_for_others(struct ema_sweep_run *r, long *list, long n, int jobs, bool quiet,
			   struct run_result *res, long *ran, struct ema_error *err)
{
	const struct ema_sweep *s = r->s;
	long *retry = malloc((size_t)(n > 0 ? n : 1) * sizeof *retry);
	bool said = false;
	int rc = EMA_OK;

	if (retry == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	while (n > 0 && rc == EMA_OK) {
		long n_retry;

		n = still_taken(s, list, n, retry, &n_retry);
		if (n_retry > 0) {
			rc = run_points(r, retry, n_retry, jobs, quiet, res, err);
			*ran += res->ran;
			for (long i = 0; i < res->n_taken; i++)
				list[n++] = res->taken[i];
			continue;
		}
		if (!said && !quiet) {
			fprintf(stderr, "ema: sweep %s: waiting for %ld point%s that other processes "
				"run:\n", s->dir, n, n > 1 ? "s" : "");
			list_points(s, list, n);
			said = true;
		}
		sleep(1);
	}
	free(retry);
	return rc;
}

static int sweep_exec(const struct ema_cli_args *a, struct ema_error *err)
{
	struct ema_sweep *s;
	struct ema_sweep_run *r;
	struct run_result res = { 0, NULL, 0 };
	long done = 0, missing = 0, ran = 0, shard_i = 0, shard_n = 1;
	char shard_from[128] = "";
	int rc = EMA_OK;

	if (a->n_args > 0) {
		if (strcmp(a->args[0], "merge") == 0)
			return sweep_merge_exec(a, err);
		if (strcmp(a->args[0], "status") == 0)
			return sweep_status_exec(a, err);
		return ema_error_set(err, EMA_ERR_INPUT, "ema sweep: unexpected argument %.200s; "
				     "expected merge DIR or status DIR (see 'ema help sweep')",
				     a->args[0]);
	}
	if (a->n_vary == 0 && a->max_rate == NULL)
		return ema_error_set(err, EMA_ERR_INPUT, "sweep: expected at least one --vary KEY=V1,V2,...");
	if ((a->slo != NULL || a->resolution != NULL) && a->max_rate == NULL)
		return ema_error_set(err, EMA_ERR_INPUT, "sweep: --slo and --resolution go with "
				     "--max-rate KEY");
	if (a->max_rate != NULL && (a->shard != NULL || a->sbatch != NULL))
		return ema_error_set(err, EMA_ERR_INPUT, "sweep: --max-rate runs on one machine (-j N); "
				     "it takes no --shard or --sbatch");
	if (!a->plots && a->point_plots)
		return ema_error_set(err, EMA_ERR_INPUT, "sweep: --no-plots and --point-plots: the "
				     "one turns every figure off, the other the points' on; choose one");
	rc = check_sbatch_options(a, err);
	if (rc != EMA_OK)
		return rc;
	if (a->sbatch != NULL && a->shard != NULL)
		return ema_error_set(err, EMA_ERR_INPUT, "sweep: --sbatch writes the jobs of every "
				     "shard; it takes no --shard");
	if (a->sbatch == NULL) {
		long si, sn;
		char from[128];

		/* a bad --shard (or SLURM_ARRAY_TASK_*) fails before anything runs */
		rc = ema_sweep_shard(a->shard, &si, &sn, from, sizeof from, err);
		if (rc != EMA_OK)
			return rc;
	}
	s = calloc(1, sizeof *s);
	r = calloc(1, sizeof *r);
	if (s == NULL || r == NULL) {
		free(s);
		free(r);
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	}
	r->s = s;
	r->config = a->config;
	r->plots = a->plots;
	/* a point's own figures cost more than the point: off unless asked */
	r->point_plots = a->point_plots;
	for (int i = 0; i < a->n_sets; i++)
		r->sets[r->n_sets++] = a->sets[i];
	snprintf(s->command, sizeof s->command, "%s", a->command);
	for (int i = 0; i < a->n_vary && rc == EMA_OK; i++)
		rc = ema_sweep_parse_vary(a->vary[i], &s->keys[s->n_keys++], err);
	if (rc == EMA_OK)
		rc = ema_sweep_layout(s, err);
	if (rc == EMA_OK && a->max_rate != NULL) {
		rc = ema_capacity_exec(r, a, a->jobs > 0 ? a->jobs : default_jobs(), err);
		ema_sweep_free(s);
		free(s);
		free(r);
		return rc;
	}
	if (rc == EMA_OK)
		rc = plan_points(r, err);
	if (rc == EMA_OK && a->sbatch != NULL && !a->dry_run) {
		/* the script's path is checked before the folder is made */
		struct ema_outfile of;

		rc = ema_outfile_reserve(&of, "--sbatch", a->sbatch, err);
	}
	if (rc == EMA_OK)
		rc = open_folder(s, a->out, a->dry_run, err);
	for (long pt = 0; pt < s->n_points && rc == EMA_OK && s->exists; pt++) {
		bool d = false;

		rc = ema_sweep_point_done(s, pt, &d, err);
		done += d;
	}
	if (rc == EMA_OK && a->sbatch != NULL) {
		if (!a->quiet)
			fprintf(stderr, "ema: sweep %s: %ld points, %ld complete%s\n", s->dir,
				s->n_points, done, s->exists ? "" : " (the folder is not made yet)");
		rc = ema_sweep_sbatch(r, a, err);
		ema_sweep_free(s);
		free(s);
		free(r);
		return rc;
	}
	if (rc == EMA_OK)
		rc = ema_sweep_shard(a->shard, &shard_i, &shard_n, shard_from, sizeof shard_from, err);
	if (rc == EMA_OK) {
		long *todo = malloc((size_t)s->n_points * sizeof *todo), n = 0, mine = 0;
		int jobs = a->jobs > 0 ? a->jobs : default_jobs();
		double t0 = ema_wall_now();
		char when[32];
		const char *job = getenv("SLURM_JOB_ID");

		res.taken = malloc((size_t)s->n_points * sizeof *res.taken);
		for (long pt = shard_i; pt < s->n_points && todo != NULL && rc == EMA_OK;
		     pt += shard_n) {
			bool d = false;

			rc = ema_sweep_point_done(s, pt, &d, err);
			if (!d)
				todo[n++] = pt;
			mine++;
		}
		if (todo == NULL || res.taken == NULL)
			rc = ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
		if (jobs > n)
			jobs = n > 0 ? (int)n : 1;
		utc_now(when, sizeof when);
		if (rc == EMA_OK && !a->quiet) {
			if (shard_n > 1)
				fprintf(stderr, "ema: sweep %s: shard %ld/%ld%s%s%s: %ld of the %ld "
					"points, %ld complete, %ld to run", s->dir, shard_i, shard_n,
					shard_from[0] ? " (" : "", shard_from, shard_from[0] ? ")" : "",
					mine, s->n_points, mine - n, n);
			else
				fprintf(stderr, "ema: sweep %s: %ld points, %ld complete, %ld to run",
					s->dir, s->n_points, done, n);
			if (n > 0)
				fprintf(stderr, " in %d process%s", jobs, jobs > 1 ? "es" : "");
			fputc('\n', stderr);
			/* a task's log (Slurm's --output) says where and when it ran */
			if (shard_n > 1 || (job != NULL && *job != '\0'))
				fprintf(stderr, "ema: sweep %s: on %s%s%s, from %s\n", s->dir,
					ema_host_name(), job != NULL && *job ? ", Slurm job " : "",
					job != NULL && *job ? job : "", when);
		}
		if (rc == EMA_OK)
			rc = run_points(r, todo, n, jobs, a->quiet, &res, err);
		ran = res.ran;
		/* points another process held: they may have finished, or their
		 * owner died meanwhile */
		if (rc == EMA_OK && res.n_taken > 0) {
			long n_taken = res.n_taken, *taken = todo;

			memcpy(taken, res.taken, (size_t)n_taken * sizeof *taken);
			if (shard_n == 1) {
				rc = wait_for_others(r, taken, n_taken, jobs, a->quiet, &res, &ran, err);
			} else {
				long n_retry;

				n_taken = still_taken(s, taken, n_taken, res.taken, &n_retry);
				if (n_retry > 0) {
					long before = ran;
					long *again = malloc((size_t)n_retry * sizeof *again);

					if (again == NULL) {
						rc = ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
					} else {
						memcpy(again, res.taken, (size_t)n_retry * sizeof *again);
						rc = run_points(r, again, n_retry, jobs, a->quiet, &res, err);
						ran = before + res.ran;
						for (long i = 0; i < res.n_taken; i++)
							taken[n_taken++] = res.taken[i];
						free(again);
					}
				}
				if (rc == EMA_OK && n_taken > 0 && !a->quiet) {
					fprintf(stderr, "ema: sweep %s: %ld point%s left to the processes "
						"that run them:\n", s->dir, n_taken, n_taken > 1 ? "s" : "");
					list_points(s, taken, n_taken);
				}
			}
		}
		if (rc == EMA_OK && !a->quiet && (shard_n > 1 || (job != NULL && *job != '\0'))) {
			utc_now(when, sizeof when);
			fprintf(stderr, "ema: sweep %s: done on %s at %s (%.0f s), %ld point%s run "
				"here\n", s->dir, ema_host_name(), when, ema_wall_now() - t0, ran,
				ran == 1 ? "" : "s");
		}
		free(todo);
	}
	/* a shard leaves the tables to the merge job: shards ending together
	 * would write them at once, perhaps from different machines */
	if (rc == EMA_OK && shard_n > 1)
		printf("sweep: shard %ld/%ld: %ld points run now, results in %s/ (point-NNN/; "
		       "tables once every shard is done: ema sweep merge %s)\n", shard_i, shard_n,
		       ran, s->dir, s->dir);
	if (rc == EMA_OK && shard_n == 1)
		rc = ema_sweep_merge(s, a->plots, a->quiet, &missing, err);
	if (rc == EMA_OK && shard_n == 1 && missing > 0)
		rc = ema_error_set(err, EMA_ERR_IO, "sweep %s: %ld points missing (listed above)",
				   s->dir, missing);
	if (rc == EMA_OK && shard_n == 1)
		printf("sweep: %ld points (%ld run now), results in %s/ (sweep.csv%s, point-NNN/)\n",
		       s->n_points, ran, s->dir, s->seed_key >= 0 ? ", sweep_stats.csv" : "");
	if (rc != EMA_OK && done + ran > 0 && s->dir[0] != '\0' && rc != EMA_ERR_INPUT)
		fprintf(stderr, "ema: sweep %s: the complete points are kept; the same command "
			"runs the others\n", s->dir);
	free(res.taken);
	ema_sweep_free(s);
	free(s);
	free(r);
	return rc;
}

static const struct ema_cli_optuse sweep_options[] = {
	{ EMA_OPT_VARY, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_CONFIG, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_SET, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_SEED, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_OUT, "the sweep folder: made when missing (its parent must exist), resumed when "
	  "it holds the same sweep, refused (exit 2) when it holds another; default "
	  "runs/sweep-ID, ID from the sweep's configuration", NULL, EMA_VALUE_NONE },
	{ EMA_OPT_JOBS, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_SHARD, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_SBATCH, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_TASKS, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_THROTTLE, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_PARTITION, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_ACCOUNT, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_TIME, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_MEM, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_SBATCH_ARG, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_DRY_RUN, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_MAX_RATE, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_SLO, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_RESOLUTION, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_NO_PLOTS, "the tables only: no figures (DIR/figures/), no point's plots/", NULL,
	  EMA_VALUE_NONE },
	{ EMA_OPT_POINT_PLOTS, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_QUIET, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_HELP, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_NONE, NULL, NULL, EMA_VALUE_NONE },
};

static const char *const sweep_examples[] = {
	"ema sweep --vary tenants.0.workload.rate_rps=8,10,12,14 "
	"--vary policy.ema.remote_path=inplace,compute --set policies=static,pooled,ema",
	"ema sweep --vary seed=1,2,3,4,5 --vary tenants.0.workload.rate_rps=10,14 "
	"--set policies=static,ema -o runs/load",
	"ema sweep --vary seed=1,2,3 --vary tenants.0.workload.rate_rps=6,8,10,12 -o /scratch/load "
	"--sbatch load.sh && sh load.sh --partition=cpu",
	"ema sweep merge runs/load",
	"ema sweep status /scratch/load",
	"ema sweep --max-rate tenants.0.workload.rate_rps --slo ttft_p90_ms=2000,tpot_p99_ms=200 "
	"--vary seed=1,2,3 --set policies=static,ema -o runs/cap",
	NULL,
};

const struct ema_cli_cmd ema_cmd_sweep = {
	.name = "sweep",
	.summary = "run a scenario over every combination of --vary KEY=V1,V2,...",
	.usage = "--vary KEY=V1,V2,... [--vary ...] [-c FILE] [-s KEY=VALUE]... [--seed N] "
		 "[-o DIR] [-j N] [--shard I/N | --sbatch FILE] [--tasks N] [--throttle M] "
		 "[--dry-run] [--partition P] [--account A] [--time LIMIT] [--mem SIZE] "
		 "[--sbatch-arg OPTION]... [--no-plots | --point-plots] [-q] | --max-rate KEY[=LO,HI] "
		 "--slo METRIC=MAX,... [--resolution R] [--vary ...] [-j N] [-o DIR] | "
		 "merge DIR [--no-plots] [-q] | status DIR",
	.options = sweep_options,
	.max_args = 2,
	.description =
		"Every point of the cartesian product of the --vary lists runs like 'ema run' with "
		"those values as extra --set overrides (after the others), into DIR/point-NNN/, a "
		"full run folder each; DIR/sweep.csv holds every point's summary rows with one "
		"leading column per swept key and a point column. Seeds swept with --vary "
		"seed=1,2,... are repetitions: DIR/sweep_stats.csv then gives, per combination of "
		"the other keys and per policy and tenant, the mean, standard deviation, geometric "
		"mean and 95% interval (on the log scale: it stays above zero) of the main "
		"metrics. Unless --no-plots, it draws the figures of 'ema figures DIR' into "
		"DIR/figures/ (with a numeric key besides the seed: the load curves, as PDF and "
		"PNG); a point's own plots/ only with --point-plots.\n"
		"The points run in up to -j N processes at once (default: the number of cores), "
		"each a fork of this one; the results are the same bytes whatever N is. Progress "
		"goes to stderr, a line per point.\n"
		"Every point's configuration is checked before anything runs. DIR/sweep.json holds "
		"the keys and the hash of every point's effective configuration; each point "
		"appears whole (written as point-NNN.tmp-HOST-PID, renamed when complete) with its "
		"hash in point-NNN/config.sha256. Running the same command again skips the "
		"complete points and runs the others; a sweep whose configuration changed is "
		"refused (exit 2) rather than mixed with the old points. Several processes may run "
		"one sweep folder at once (on several machines too): a process claims a point "
		"before it runs it (point-NNN.claim) and goes on to the next when another holds it; "
		"the claim of a process gone (dead here, or silent for 10 minutes) is taken over.\n"
		"A shard, --shard I/N, runs every N-th point from point I and leaves the tables to "
		"'ema sweep merge'; in a Slurm array task it is taken from SLURM_ARRAY_TASK_ID, "
		"SLURM_ARRAY_TASK_COUNT and SLURM_ARRAY_TASK_MIN. --sbatch FILE runs the first and "
		"last points as a trial and writes FILE, an array job of --tasks shards "
		"(--array=0-(N-1)%M) with the time and memory per task estimated from the trial "
		"(or given: --time and --mem, then no trial runs), each task running shard "
		"$SLURM_ARRAY_TASK_ID/N, and a merge job that runs after every task: 'sh FILE' "
		"submits both, 'sbatch --array=1,3 FILE' runs tasks 1 and 3 again; --dry-run prints "
		"FILE instead and runs nothing (doc/sweeps.md).\n"
		"'ema sweep merge DIR' builds sweep.csv, sweep_stats.csv and the figures from the "
		"points that are complete; when some are missing it names them and fails (exit "
		"1). 'ema sweep status DIR' lists the points complete, running (and where) and "
		"missing, and the array tasks to submit again.\n"
		"A capacity search, --max-rate KEY --slo ttft_p90_ms=2000,tpot_p99_ms=200, finds "
		"per policy and combination of the --vary values the largest value of KEY at which "
		"every tenant completes every request within the targets, by bisection to "
		"--resolution; seeds are repetitions. It writes DIR/capacity.csv (mean, 95% "
		"interval, min and max over seeds, units in the column names), "
		"DIR/capacity_seeds.csv and DIR/probes/HASH/, one run folder per probe named by "
		"its configuration's hash, so that the same command resumes (default DIR "
		"runs/capacity).",
	.examples = sweep_examples,
	.fn = sweep_exec,
};
