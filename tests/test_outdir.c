/* test_outdir.c: tests of src/outdir.c, the output folders: the checks
 * made before a run (missing parent, a file as parent, a name taken, a
 * name being written by a live process), the reservation and its rename,
 * leftovers of dead processes removed with a note, removal on SIGINT,
 * SIGTERM and SIGHUP (in a child process that dies of the signal), and
 * the reason of a failed write (/dev/full), the files of a run folder and
 * the line that lists them, and single output files replaced whole.
 * Every test works in its own temporary folder. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "outdir.h"
#include "test_main.h"

static char top[4096];  /* the test's temporary folder, the cwd meanwhile */
static char prev_cwd[4096];

static void enter_tmp(void)
{
	const char *t = getenv("TMPDIR");

	snprintf(top, sizeof top, "%s/ema-outdir.XXXXXX", t ? t : "/tmp");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(top));
	CU_ASSERT_PTR_NOT_NULL_FATAL(getcwd(prev_cwd, sizeof prev_cwd));
	CU_ASSERT_EQUAL_FATAL(chdir(top), 0);
}

static void leave_tmp(void)
{
	CU_ASSERT_EQUAL(chdir(prev_cwd), 0);
	ema_remove_tree(top);
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static void touch(const char *path)
{
	FILE *f = fopen(path, "w");

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs("x\n", f);
	fclose(f);
}

/* The number of entries of a folder (without . and ..). */
static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	while ((e = readdir(d)) != NULL)
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

/* A PID that no process has: a child that exited and was reaped. */
static long dead_pid(void)
{
	pid_t pid = fork();

	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0)
		_exit(0);
	CU_ASSERT_EQUAL(waitpid(pid, NULL, 0), pid);
	return (long)pid;
}

/* stderr of a stretch of code, into buf. */
static int saved_stderr = -1;
static FILE *captured;

static void capture_begin(void)
{
	fflush(stderr);
	captured = tmpfile();
	CU_ASSERT_PTR_NOT_NULL_FATAL(captured);
	saved_stderr = dup(STDERR_FILENO);
	dup2(fileno(captured), STDERR_FILENO);
}

static void capture_end(char *buf, size_t n)
{
	size_t len;

	fflush(stderr);
	dup2(saved_stderr, STDERR_FILENO);
	close(saved_stderr);
	rewind(captured);
	len = fread(buf, 1, n - 1, captured);
	buf[len] = '\0';
	fclose(captured);
}

/* ---- names ---- */

static void test_tmp_names(void)
{
	CU_ASSERT(ema_out_is_tmp_name("run.tmp-1234"));
	CU_ASSERT(ema_out_is_tmp_name("point-003.tmp-7"));
	CU_ASSERT(ema_out_is_tmp_name("a.tmp-1.tmp-2"));
	CU_ASSERT(!ema_out_is_tmp_name("run"));
	CU_ASSERT(!ema_out_is_tmp_name("run.tmp-"));
	CU_ASSERT(!ema_out_is_tmp_name("run.tmp-12x"));
	CU_ASSERT(!ema_out_is_tmp_name(".tmp-12"));
	CU_ASSERT(!ema_out_is_tmp_name("run.tmp-1.csv"));
	CU_ASSERT(!ema_out_is_tmp_name("point-003"));
	/* HOST-PID: machines that share a sweep folder have their own PIDs */
	CU_ASSERT(ema_out_is_tmp_name("run.tmp-node-07-1234"));
	CU_ASSERT(ema_out_is_tmp_name("point-003.tmp-vm-7"));
	CU_ASSERT(!ema_out_is_tmp_name("run.tmp--12"));
	CU_ASSERT(!ema_out_is_tmp_name("run.tmp-node-"));
	CU_ASSERT(!ema_out_is_tmp_name("run.tmp-node-012"));
	CU_ASSERT(!ema_out_is_tmp_name("run.tmp-no de-12"));
}

/* The host name as names and run.json give it. */
static void test_host_name(void)
{
	const char *h = ema_host_name();

	CU_ASSERT(h[0] != '\0');
	CU_ASSERT(strlen(h) < 64);
	CU_ASSERT_EQUAL(strspn(h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"),
			strlen(h));
	CU_ASSERT_PTR_EQUAL(ema_host_name(), h);
}

/* ---- checks before a run ---- */

static void test_parent_checks(void)
{
	struct ema_error err = {0};
	struct ema_outdir od;

	enter_tmp();
	CU_ASSERT_EQUAL(ema_out_check_parent("--out", "new", &err), EMA_OK);
	CU_ASSERT_EQUAL(ema_out_check_parent("--out", "nosuch/new", &err), EMA_ERR_INPUT);
	CU_ASSERT_STRING_EQUAL(err.msg, "--out nosuch/new: parent folder nosuch does not exist");
	touch("afile");
	CU_ASSERT_EQUAL(ema_out_check_parent("--out", "afile/new", &err), EMA_ERR_INPUT);
	CU_ASSERT_STRING_EQUAL(err.msg, "--out afile/new: parent afile is not a folder");
	CU_ASSERT_EQUAL(ema_out_check_parent("--out", "afile/deeper/new", &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "afile/deeper"));
	CU_ASSERT_EQUAL(ema_out_check_parent("--out", "", &err), EMA_ERR_INPUT);
	/* a reservation fails the same way and makes nothing */
	CU_ASSERT_EQUAL(ema_outdir_reserve(&od, "--out", "nosuch/new", NULL, &err), EMA_ERR_INPUT);
	CU_ASSERT_STRING_EQUAL(err.msg, "--out nosuch/new: parent folder nosuch does not exist");
	CU_ASSERT_EQUAL(ema_outdir_reserve(&od, "--out", "afile/new", NULL, &err), EMA_ERR_INPUT);
	CU_ASSERT_EQUAL(entries("."), 1);
	/* a name taken, and a name that looks like an unfinished folder */
	CU_ASSERT_EQUAL(mkdir("taken", 0777), 0);
	CU_ASSERT_EQUAL(ema_outdir_reserve(&od, "--out", "taken", NULL, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "taken: already exists"));
	CU_ASSERT_EQUAL(ema_outdir_reserve(&od, "--out", "x.tmp-5", NULL, &err), EMA_ERR_INPUT);
	CU_ASSERT_EQUAL(entries("."), 2);
	leave_tmp();
}

/* ---- reservation, rename, abort ---- */

static void test_reserve_commit(void)
{
	struct ema_error err = {0};
	struct ema_outdir od, sub;
	char want[sizeof od.tmp + 64];

	enter_tmp();
	CU_ASSERT_EQUAL_FATAL(ema_outdir_reserve(&od, "--out", "res/", NULL, &err), EMA_OK);
	/* the trailing slash is not part of the name */
	CU_ASSERT_STRING_EQUAL(od.path, "res");
	snprintf(want, sizeof want, "res.tmp-%s-%ld", ema_host_name(), (long)getpid());
	CU_ASSERT_STRING_EQUAL(od.tmp, want);
	CU_ASSERT(exists(want));
	CU_ASSERT(!exists("res"));
	/* a second run with the same --out sees the reservation */
	{
		struct ema_outdir again;
		pid_t child = fork();
		int status;

		CU_ASSERT_FATAL(child >= 0);
		if (child == 0) {
			int rc = ema_outdir_reserve(&again, "--out", "res", NULL, &err);

			_exit(rc == EMA_ERR_INPUT && strstr(err.msg, "being written by process") ? 0 : 1);
		}
		CU_ASSERT_EQUAL(waitpid(child, &status, 0), child);
		CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	/* a folder inside: named as it will be in messages */
	CU_ASSERT_EQUAL_FATAL(ema_outdir_reserve_sub(&sub, &od, "point-000", &err), EMA_OK);
	CU_ASSERT_STRING_EQUAL(sub.shown, "res/point-000");
	touch("x"); /* the file of a point, moved in by hand */
	snprintf(want, sizeof want, "%s/summary.csv", sub.tmp);
	CU_ASSERT_EQUAL(rename("x", want), 0);
	CU_ASSERT_EQUAL(ema_outdir_commit(&sub, &err), EMA_OK);
	CU_ASSERT_EQUAL(ema_outdir_commit(&od, &err), EMA_OK);
	CU_ASSERT(exists("res/point-000/summary.csv"));
	CU_ASSERT_EQUAL(entries("."), 1);
	CU_ASSERT_EQUAL(entries("res"), 1);

	/* abort removes everything written */
	CU_ASSERT_EQUAL_FATAL(ema_outdir_reserve(&od, "--out", "gone", NULL, &err), EMA_OK);
	snprintf(want, sizeof want, "%s/plots", od.tmp);
	CU_ASSERT_EQUAL(mkdir(want, 0777), 0);
	snprintf(want, sizeof want, "%s/plots/a.gp", od.tmp);
	touch(want);
	ema_outdir_abort(&od);
	CU_ASSERT_EQUAL(entries("."), 1);

	/* the name taken meanwhile by someone else (an empty folder, which
	 * rename(2) would replace): the results go beside it */
	CU_ASSERT_EQUAL_FATAL(ema_outdir_reserve(&od, "--out", "late", NULL, &err), EMA_OK);
	CU_ASSERT_EQUAL(mkdir("late", 0777), 0);
	capture_begin();
	CU_ASSERT_EQUAL(ema_outdir_commit(&od, &err), EMA_OK);
	{
		char msg[512];

		capture_end(msg, sizeof msg);
		CU_ASSERT_PTR_NOT_NULL(strstr(msg, "results written to late-2 instead"));
	}
	CU_ASSERT_STRING_EQUAL(od.path, "late-2");
	CU_ASSERT(exists("late-2"));
	CU_ASSERT_EQUAL(entries("late"), 0);
	leave_tmp();
}

/* runs/NAME, then runs/NAME-2; runs/ made for a failed run goes again */
static void test_default_names(void)
{
	struct ema_error err = {0};
	struct ema_outdir od;
	char live[64];
	pid_t child;

	enter_tmp();
	CU_ASSERT_EQUAL_FATAL(ema_outdir_reserve(&od, "--out", NULL, "sc", &err), EMA_OK);
	CU_ASSERT_STRING_EQUAL(od.path, "runs/sc");
	ema_outdir_abort(&od);
	CU_ASSERT(!exists("runs"));
	CU_ASSERT_EQUAL_FATAL(ema_outdir_reserve(&od, "--out", NULL, "sc", &err), EMA_OK);
	CU_ASSERT_EQUAL(ema_outdir_commit(&od, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(ema_outdir_reserve(&od, "--out", NULL, "sc", &err), EMA_OK);
	CU_ASSERT_STRING_EQUAL(od.path, "runs/sc-2");
	CU_ASSERT_EQUAL(ema_outdir_commit(&od, &err), EMA_OK);
	/* a name being written by a live process is skipped, not waited for */
	child = fork();
	CU_ASSERT_FATAL(child >= 0);
	if (child == 0) {
		pause();
		_exit(0);
	}
	snprintf(live, sizeof live, "runs/sc-3.tmp-%ld", (long)child);
	CU_ASSERT_EQUAL(mkdir(live, 0777), 0);
	CU_ASSERT_EQUAL_FATAL(ema_outdir_reserve(&od, "--out", NULL, "sc", &err), EMA_OK);
	CU_ASSERT_STRING_EQUAL(od.path, "runs/sc-4");
	CU_ASSERT(exists(live));
	ema_outdir_abort(&od);
	CU_ASSERT(exists("runs/sc"));
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	leave_tmp();
}

/* ---- leftovers of killed processes ---- */

static void test_leftovers(void)
{
	struct ema_error err = {0};
	struct ema_outdir od;
	char name[64], path[128], msg[1024], want[160];
	long dead = dead_pid();

	enter_tmp();
	touch("outside");
	snprintf(name, sizeof name, "sw.tmp-%ld", dead);
	CU_ASSERT_EQUAL(mkdir(name, 0777), 0);
	snprintf(path, sizeof path, "%s/point-000", name);
	CU_ASSERT_EQUAL(mkdir(path, 0777), 0);
	snprintf(path, sizeof path, "%s/point-000/summary.csv", name);
	touch(path);
	snprintf(path, sizeof path, "%s/point-001.tmp-%ld", name, dead);
	CU_ASSERT_EQUAL(mkdir(path, 0777), 0);
	/* a link in the leftover is removed, never followed */
	snprintf(path, sizeof path, "%s/link", name);
	CU_ASSERT_EQUAL(symlink("../outside", path), 0);
	/* not a leftover of "sw": another name, another PID form */
	CU_ASSERT_EQUAL(mkdir("sw2.tmp-1", 0777), 0);
	CU_ASSERT_EQUAL(mkdir("sw.tmp-01", 0777), 0);

	capture_begin();
	CU_ASSERT_EQUAL_FATAL(ema_outdir_reserve(&od, "--out", "sw", NULL, &err), EMA_OK);
	capture_end(msg, sizeof msg);
	snprintf(want, sizeof want, "ema: removing leftover %s from a run that was killed\n", name);
	CU_ASSERT_STRING_EQUAL(msg, want);
	CU_ASSERT(!exists(name));
	CU_ASSERT(exists("outside"));
	CU_ASSERT(exists("sw2.tmp-1"));
	CU_ASSERT(exists("sw.tmp-01"));
	ema_outdir_abort(&od);
	/* the same for a file (validate.csv.tmp-PID) */
	snprintf(name, sizeof name, "v.csv.tmp-%ld", dead);
	touch(name);
	capture_begin();
	CU_ASSERT_EQUAL(ema_out_clean_leftovers("v.csv", NULL, &err), EMA_OK);
	capture_end(msg, sizeof msg);
	CU_ASSERT(!exists(name));
	CU_ASSERT_PTR_NOT_NULL(strstr(msg, name));
	leave_tmp();
}

/* ---- signals ---- */

/* In a child: reserves "sig" and a point inside, writes files in both,
 * then raises sig. Returns the child's wait status. */
static int die_of(int sig, bool ignored)
{
	pid_t child;
	int status = 0;

	fflush(NULL);
	child = fork();
	CU_ASSERT_FATAL(child >= 0);
	if (child == 0) {
		struct ema_error err = {0};
		struct ema_outdir od, sub;
		char path[4200];

		/* as from an interactive shell (make may run us with SIGINT
		 * ignored) */
		signal(sig, ignored ? SIG_IGN : SIG_DFL);
		if (ema_outdir_reserve(&od, "--out", "sig", NULL, &err) != EMA_OK ||
		    ema_outdir_reserve_sub(&sub, &od, "point-000", &err) != EMA_OK)
			_exit(3);
		snprintf(path, sizeof path, "%s/plots", sub.tmp);
		mkdir(path, 0777);
		snprintf(path, sizeof path, "%s/plots/memory.gp", sub.tmp);
		touch(path);
		snprintf(path, sizeof path, "%s/sweep.csv", od.tmp);
		touch(path);
		/* a freshly opened file in it, as when writing */
		snprintf(path, sizeof path, "%s/requests.csv", sub.tmp);
		if (open(path, O_WRONLY | O_CREAT, 0666) < 0)
			_exit(4);
		raise(sig);
		/* an ignored signal: still here, the folder too */
		_exit(exists(od.tmp) ? 0 : 5);
	}
	CU_ASSERT_EQUAL(waitpid(child, &status, 0), child);
	return status;
}

static void test_signals(void)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};

	enter_tmp();
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		char msg[1024];
		int status;

		capture_begin();
		status = die_of(sigs[i], false);
		capture_end(msg, sizeof msg);
		/* died of that very signal (the shell's 128 + sig) ... */
		CU_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == sigs[i]);
		/* ... and left nothing */
		CU_ASSERT_EQUAL(entries("."), 0);
		CU_ASSERT_PTR_NOT_NULL(strstr(msg, "unfinished output was removed"));
	}
	/* nohup: an ignored SIGHUP stays ignored, and the run goes on */
	{
		int status = die_of(SIGHUP, true);

		CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		CU_ASSERT_EQUAL(entries("."), 1);
	}
	leave_tmp();
}

/* ---- parts of a folder that stays (sweep points) ---- */

static void test_reserve_part(void)
{
	struct ema_error err = {0};
	struct ema_outdir od;
	char name[128], msg[1024], want[1024];
	long dead;

	enter_tmp();
	CU_ASSERT_EQUAL_FATAL(mkdir("sw", 0777), 0);
	CU_ASSERT_EQUAL_FATAL(ema_outdir_reserve_part(&od, "sw", "point-000", false, &err), EMA_OK);
	snprintf(want, sizeof want, "sw/point-000.tmp-%s-%ld", ema_host_name(), (long)getpid());
	CU_ASSERT_STRING_EQUAL(od.tmp, want);
	CU_ASSERT_STRING_EQUAL(od.path, "sw/point-000");
	CU_ASSERT(exists(want));
	CU_ASSERT(!exists("sw/point-000"));
	CU_ASSERT_EQUAL(ema_outdir_commit(&od, &err), EMA_OK);
	CU_ASSERT(exists("sw/point-000"));
	CU_ASSERT(!exists(want));
	/* a complete point is never reserved again */
	CU_ASSERT_EQUAL(ema_outdir_reserve_part(&od, "sw", "point-000", false, &err), EMA_ERR_INPUT);
	CU_ASSERT_STRING_EQUAL(err.msg, "sw/point-000: already exists");
	/* taken while it was written: the commit fails, never point-001-2 */
	CU_ASSERT_EQUAL_FATAL(ema_outdir_reserve_part(&od, "sw", "point-001", false, &err), EMA_OK);
	CU_ASSERT_EQUAL(mkdir("sw/point-001", 0777), 0);
	CU_ASSERT_EQUAL(ema_outdir_commit(&od, &err), EMA_ERR_IO);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "sw/point-001: appeared while this process wrote it"));
	CU_ASSERT(!exists("sw/point-001-2"));
	CU_ASSERT(!exists(od.tmp));
	/* a leftover of a dead process is removed with a note; a live
	 * writer (this process's parent) is refused */
	dead = dead_pid();
	snprintf(name, sizeof name, "sw/point-002.tmp-%ld", dead);
	CU_ASSERT_EQUAL(mkdir(name, 0777), 0);
	capture_begin();
	CU_ASSERT_EQUAL(ema_outdir_reserve_part(&od, "sw", "point-002", false, &err), EMA_OK);
	capture_end(msg, sizeof msg);
	snprintf(want, sizeof want, "ema: removing leftover %s from a run that was killed\n", name);
	CU_ASSERT_STRING_EQUAL(msg, want);
	CU_ASSERT(!exists(name));
	ema_outdir_abort(&od);
	CU_ASSERT(!exists(od.tmp));
	snprintf(name, sizeof name, "sw/point-003.tmp-%ld", (long)getppid());
	CU_ASSERT_EQUAL(mkdir(name, 0777), 0);
	CU_ASSERT_EQUAL(ema_outdir_reserve_part(&od, "sw", "point-003", false, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "is being written by process"));
	/* another machine's writer cannot be asked: live, named with its host,
	 * even with the PID of a dead process of this machine */
	snprintf(name, sizeof name, "sw/point-004.tmp-othernode-%ld", dead);
	CU_ASSERT_EQUAL(mkdir(name, 0777), 0);
	CU_ASSERT_EQUAL(ema_outdir_reserve_part(&od, "sw", "point-004", false, &err), EMA_ERR_INPUT);
	snprintf(want, sizeof want, "is being written by process %ld on othernode", dead);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, want));
	CU_ASSERT(exists(name));
	/* ... unless the caller holds the point's claim: then every other
	 * writer has lost it, and its leftover goes */
	capture_begin();
	CU_ASSERT_EQUAL(ema_outdir_reserve_part(&od, "sw", "point-004", true, &err), EMA_OK);
	capture_end(msg, sizeof msg);
	CU_ASSERT(!exists(name));
	CU_ASSERT_PTR_NOT_NULL(strstr(msg, "removing leftover"));
	ema_outdir_abort(&od);
	/* this machine's dead writer under the HOST-PID form goes as the old form did */
	snprintf(name, sizeof name, "sw/point-005.tmp-%s-%ld", ema_host_name(), dead);
	CU_ASSERT_EQUAL(mkdir(name, 0777), 0);
	capture_begin();
	CU_ASSERT_EQUAL(ema_outdir_reserve_part(&od, "sw", "point-005", false, &err), EMA_OK);
	capture_end(msg, sizeof msg);
	CU_ASSERT(!exists(name));
	ema_outdir_abort(&od);
	leave_tmp();
}

/* A parent with a worker registered: a signal to the parent reaches the
 * worker, which removes its own unfinished point, and both die of it. */
static void test_signal_to_workers(void)
{
	int status, pfd[2];
	pid_t parent;
	char c;

	enter_tmp();
	CU_ASSERT_EQUAL_FATAL(mkdir("sw", 0777), 0);
	CU_ASSERT_EQUAL_FATAL(pipe(pfd), 0);
	fflush(NULL);
	parent = fork();
	CU_ASSERT_FATAL(parent >= 0);
	if (parent == 0) {
		struct ema_error err = {0};
		pid_t worker;

		close(pfd[0]);
		signal(SIGTERM, SIG_DFL);
		worker = fork();
		if (worker == 0) {
			struct ema_outdir od;

			ema_cleanup_forked();
			if (ema_outdir_reserve_part(&od, "sw", "point-000", false, &err) != EMA_OK)
				_exit(3);
			if (write(pfd[1], "w", 1) != 1)
				_exit(4);
			for (;;)
				pause();
		}
		ema_cleanup_add_child(worker);
		/* registered: tell the test, then wait for the signal */
		if (write(pfd[1], "p", 1) != 1)
			_exit(5);
		for (;;)
			pause();
	}
	close(pfd[1]);
	/* the worker has reserved its point, the parent registered it */
	CU_ASSERT_EQUAL(read(pfd[0], &c, 1), 1);
	CU_ASSERT_EQUAL(read(pfd[0], &c, 1), 1);
	close(pfd[0]);
	{
		char msg[1024];

		capture_begin();
		CU_ASSERT_EQUAL(kill(parent, SIGTERM), 0);
		CU_ASSERT_EQUAL(waitpid(parent, &status, 0), parent);
		/* the worker is the parent's child, reparented now: wait for
		 * its folder to go (at most 5 s) */
		for (int i = 0; i < 500 && entries("sw") > 0; i++) {
			struct timespec ts = { 0, 10000000 };

			nanosleep(&ts, NULL);
		}
		capture_end(msg, sizeof msg);
	}
	CU_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	CU_ASSERT_EQUAL(entries("sw"), 0);
	leave_tmp();
}

/* ---- the reason of a failed write ---- */

static void test_full_disk(void)
{
	struct ema_error err = {0};
	FILE *f = fopen("/dev/full", "w");

	if (f == NULL) {
		fprintf(stderr, "note: no /dev/full, test skipped\n");
		return;
	}
	/* buffered: the failure shows when the buffer is written, at close */
	fputs("policy,tenant\n", f);
	errno = 0;
	CU_ASSERT_EQUAL(ema_file_close(f, EMA_OK, "out/summary.csv", &err), EMA_ERR_IO);
	CU_ASSERT_STRING_EQUAL(err.msg, "out/summary.csv: write failed: No space left on device");
	/* a file that was fine closes fine */
	f = tmpfile();
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs("x\n", f);
	CU_ASSERT_EQUAL(ema_file_close(f, EMA_OK, "t", &err), EMA_OK);
}

/* A writer that writes the file's name, and fails (a full disk) at
 * fail_at. */
static int fail_at = -1;

static int name_writer(const void *ctx, enum ema_run_file file, FILE *f)
{
	CU_ASSERT_STRING_EQUAL((const char *)ctx, "ctx");
	fputs(ema_run_file_names[file], f);
	if ((int)file == fail_at) {
		errno = ENOSPC;
		return EMA_ERR_IO;
	}
	return EMA_OK;
}

static char *read_text(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "r");
	size_t got;

	buf[0] = '\0';
	if (f == NULL)
		return buf;
	got = fread(buf, 1, n - 1, f);
	buf[got] = '\0';
	fclose(f);
	return buf;
}

/* Every file of the list written by its writer into the reserved folder,
 * named in the results line in the list's order; a failing writer stops
 * the folder at that file and says which. */
static void test_run_files(void)
{
	struct ema_error err = {0};
	struct ema_outdir od;
	char path[8192], text[256], *line = NULL;
	size_t len = 0;
	FILE *m;

	enter_tmp();
	fail_at = -1;
	CU_ASSERT_EQUAL_FATAL(ema_outdir_reserve(&od, "--out", "r", NULL, &err), EMA_OK);
	CU_ASSERT_EQUAL(ema_outdir_write_files(&od, name_writer, "ctx", &err), EMA_OK);
	CU_ASSERT_EQUAL(ema_outdir_commit(&od, &err), EMA_OK);
	CU_ASSERT_EQUAL(entries("r"), EMA_RUN_FILES);
	for (int i = 0; i < EMA_RUN_FILES; i++) {
		snprintf(path, sizeof path, "r/%s", ema_run_file_names[i]);
		CU_ASSERT_STRING_EQUAL(read_text(path, text, sizeof text), ema_run_file_names[i]);
	}
	m = open_memstream(&line, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	ema_outdir_print_contents(&od, true, m);
	ema_outdir_print_contents(&od, false, m);
	fclose(m);
	CU_ASSERT_STRING_EQUAL(line,
		"results: r/ (summary.csv, requests.csv, timeline.csv, links.csv, transfers.csv, "
		"reclaims.csv, config.json, run.json, plots/)\n"
		"results: r/ (summary.csv, requests.csv, timeline.csv, links.csv, transfers.csv, "
		"reclaims.csv, config.json, run.json)\n");
	free(line);

	fail_at = EMA_RUN_TIMELINE;
	CU_ASSERT_EQUAL_FATAL(ema_outdir_reserve(&od, "--out", "bad", NULL, &err), EMA_OK);
	CU_ASSERT_EQUAL(ema_outdir_write_files(&od, name_writer, "ctx", &err), EMA_ERR_IO);
	CU_ASSERT_STRING_EQUAL(err.msg, "bad/timeline.csv: write failed: No space left on device");
	snprintf(path, sizeof path, "%s/links.csv", od.tmp);
	CU_ASSERT(!exists(path));
	ema_outdir_abort(&od);
	CU_ASSERT_EQUAL(entries("."), 1);
	fail_at = -1;
	leave_tmp();
}

/* One file: checked before the work, replaced whole when complete, the
 * old one untouched when the work fails or the write does. */
static void test_outfile(void)
{
	struct ema_error err = {0};
	struct ema_outfile of;
	char text[64], left[64];
	long dead = dead_pid();
	FILE *f;

	enter_tmp();
	CU_ASSERT_EQUAL(ema_outfile_reserve(&of, "--csv", "nosuch/v.csv", &err), EMA_ERR_INPUT);
	CU_ASSERT_STRING_EQUAL(err.msg, "--csv nosuch/v.csv: parent folder nosuch does not exist");
	CU_ASSERT_EQUAL(mkdir("dir", 0777), 0);
	CU_ASSERT_EQUAL(ema_outfile_reserve(&of, "--csv", "dir", &err), EMA_ERR_INPUT);
	CU_ASSERT_STRING_EQUAL(err.msg, "--csv dir: is a folder, expected a file");
	CU_ASSERT_EQUAL(rmdir("dir"), 0);

	/* a leftover of a killed process goes; the old file is replaced */
	touch("v.csv");
	snprintf(left, sizeof left, "v.csv.tmp-%ld", dead);
	touch(left);
	CU_ASSERT_EQUAL_FATAL(ema_outfile_reserve(&of, "--csv", "v.csv", &err), EMA_OK);
	CU_ASSERT(!exists(left));
	f = ema_outfile_open(&of, &err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT(exists(of.tmp));
	fputs("new\n", f);
	CU_ASSERT_STRING_EQUAL(read_text("v.csv", text, sizeof text), "x\n");
	CU_ASSERT_EQUAL(ema_outfile_commit(&of, &err), EMA_OK);
	CU_ASSERT_STRING_EQUAL(read_text("v.csv", text, sizeof text), "new\n");
	CU_ASSERT_EQUAL(entries("."), 1);

	/* the work failed: nothing changes */
	CU_ASSERT_EQUAL_FATAL(ema_outfile_reserve(&of, "--csv", "v.csv", &err), EMA_OK);
	f = ema_outfile_open(&of, &err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs("half", f);
	ema_outfile_abort(&of);
	CU_ASSERT_STRING_EQUAL(read_text("v.csv", text, sizeof text), "new\n");
	CU_ASSERT_EQUAL(entries("."), 1);

	/* the write failed (the temporary file on a full disk): says why */
	if (access("/dev/full", W_OK) == 0) {
		CU_ASSERT_EQUAL_FATAL(ema_outfile_reserve(&of, "--csv", "v.csv", &err), EMA_OK);
		CU_ASSERT_EQUAL_FATAL(symlink("/dev/full", of.tmp), 0);
		f = ema_outfile_open(&of, &err);
		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		fputs("lost\n", f);
		CU_ASSERT_EQUAL(ema_outfile_commit(&of, &err), EMA_ERR_IO);
		CU_ASSERT_STRING_EQUAL(err.msg, "v.csv: write failed: No space left on device");
		CU_ASSERT_STRING_EQUAL(read_text("v.csv", text, sizeof text), "new\n");
		CU_ASSERT_EQUAL(entries("."), 1);
	}
	leave_tmp();
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{"NAME.tmp-PID names", test_tmp_names},
		{"host names in temporary names and run.json", test_host_name},
		{"missing or non-folder parent, name taken", test_parent_checks},
		{"reserve, folder inside, rename, abort, name taken meanwhile", test_reserve_commit},
		{"default names runs/NAME, -2, a live one skipped", test_default_names},
		{"leftovers of dead processes removed with a note", test_leftovers},
		{"SIGINT, SIGTERM, SIGHUP remove the folder and kill", test_signals},
		{"a part of a folder that stays: exact name, leftovers, live writer", test_reserve_part},
		{"a signal reaches the workers, which remove their points", test_signal_to_workers},
		{"a full disk says why", test_full_disk},
		{"the files of a run folder and the line that lists them", test_run_files},
		{"one file replaced whole, or not at all", test_outfile},
		{NULL, NULL},
	};

	return ema_test_run("outdir", cases);
}
