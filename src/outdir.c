/* outdir.c: the output folders of the commands, made safe against user
 * mistakes and interruptions: the --out name is checked and reserved
 * (NAME.tmp-HOST-PID created) before a simulation that may take hours, the
 * folder is renamed only when complete, a signal removes the unfinished
 * folder, and the leftover of a killed process (kill -9, a crash, a power
 * cut) is removed by the next run aimed at the same name.
 *
 * Why the signal handler itself removes the folder: the simulation loop
 * (serve/engine.c) runs for as long as the replay lasts and has no point
 * where it could look at a flag, so "set a flag, clean up later" would not
 * stop a run at all. The handler therefore deletes the registered folders
 * on the spot and re-raises the signal. It uses system calls only
 * (openat, getdents64, unlinkat, close, lseek, sigaction, sigprocmask,
 * raise, write), all async-signal-safe; opendir/readdir or nftw allocate
 * and are not. The folders are registered with an open descriptor of
 * their parent, so the handler needs no path building and no chdir
 * matters. Since the handler never returns to the interrupted code, it
 * does not matter what that code was doing to the folder. */
#define _GNU_SOURCE /* renameat2 and RENAME_NOREPLACE */
#include "outdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* ---- removing a tree with system calls only ----------------------------- */

/* Our trees are a sweep folder, its points and their plots/: 4 levels. */
#define REMOVE_MAX_DEPTH 16

struct outdir_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* Removes NAME in the folder dirfd: a file or a symbolic link is
 * unlinked, a folder emptied first (never following links). Returns 0 when
 * NAME is gone. Entries removed while the folder is being read may make
 * getdents64 skip others, so the folder is read again until a pass finds
 * nothing to remove. */
static int remove_at(int dirfd, const char *name, int depth)
{
	int fd, removed;

	if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	/* a folder: Linux says EISDIR, POSIX allows EPERM */
	if ((errno != EISDIR && errno != EPERM) || depth >= REMOVE_MAX_DEPTH)
		return -1;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
#ifdef SYS_getdents64
	do {
		_Alignas(8) char buf[2048];
		long n;

		removed = 0;
		if (lseek(fd, 0, SEEK_SET) < 0)
			break;
		while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0)
			for (long off = 0; off < n;) {
				const struct outdir_dirent64 *d = (const void *)(buf + off);

				off += d->d_reclen;
				if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
					continue;
				if (remove_at(fd, d->d_name, depth + 1) == 0)
					removed++;
			}
	} while (removed > 0);
#else
	/* without getdents64 only an empty folder goes */
	(void)removed;
#endif
	close(fd);
	return unlinkat(dirfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : -1;
}

void ema_remove_tree(const char *path)
{
	remove_at(AT_FDCWD, path, 0);
}

/* ---- removal on SIGINT, SIGTERM, SIGHUP, SIGPIPE ------------------------ */

#define CLEANUP_SLOTS 8
#define CLEANUP_NSIGS 4

/* SIGPIPE: `ema run | head` ends ema when head exits, as any filter;
 * without it here the half-written DIR.tmp-HOST-PID stayed behind. */
static const int cleanup_sigs[CLEANUP_NSIGS] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};

/* Written by the main flow with the signals blocked, read by the handler. */
static struct {
	int dirfd;
	char name[NAME_MAX + 1];
} cleanup_slot[CLEANUP_SLOTS];
static volatile sig_atomic_t cleanup_used[CLEANUP_SLOTS];
/* Worker processes (a sweep's points) that the signal is passed on to, so
 * that each removes its own unfinished point before it dies. */
#define CLEANUP_CHILDREN 256
static volatile pid_t cleanup_child[CLEANUP_CHILDREN];
static int cleanup_count; /* registered folders and children */
static pid_t cleanup_owner;
static struct sigaction cleanup_prev[CLEANUP_NSIGS];
static bool cleanup_caught[CLEANUP_NSIGS];

static void cleanup_on_signal(int sig)
{
	sigset_t set;
	int k = 0;

	/* a child between fork and exec (gnuplot) inherits the handler: only
	 * the process that made the folders removes them */
	if (getpid() == cleanup_owner) {
		bool any = false;

		for (int i = 0; i < CLEANUP_SLOTS; i++)
			if (cleanup_used[i]) {
				remove_at(cleanup_slot[i].dirfd, cleanup_slot[i].name, 0);
				any = true;
			}
		if (any) {
			static const char msg[] = "ema: interrupted: the unfinished output was removed\n";

			if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0) {
				/* nothing to do about it in a handler */
			}
		}
		for (int i = 0; i < CLEANUP_CHILDREN; i++)
			if (cleanup_child[i] > 0)
				kill(cleanup_child[i], sig);
	}
	while (k < CLEANUP_NSIGS - 1 && cleanup_sigs[k] != sig)
		k++;
	/* die of the signal as if there were no handler: exit status 128+sig
	 * in the shell, and a parent sees WIFSIGNALED */
	sigaction(sig, &cleanup_prev[k], NULL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
}

static void cleanup_block(sigset_t *old)
{
	sigset_t set;

	sigemptyset(&set);
	for (int k = 0; k < CLEANUP_NSIGS; k++)
		sigaddset(&set, cleanup_sigs[k]);
	sigprocmask(SIG_BLOCK, &set, old);
}

static void cleanup_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = cleanup_on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (int k = 0; k < CLEANUP_NSIGS; k++)
		sigaddset(&sa.sa_mask, cleanup_sigs[k]);
	cleanup_owner = getpid();
	for (int k = 0; k < CLEANUP_NSIGS; k++) {
		cleanup_caught[k] = false;
		if (sigaction(cleanup_sigs[k], NULL, &cleanup_prev[k]) != 0)
			continue;
		/* an ignored signal stays ignored: nohup, or SIGINT of a
		 * background job, which a Ctrl-C in the terminal must not stop */
		if (!(cleanup_prev[k].sa_flags & SA_SIGINFO) &&
		    cleanup_prev[k].sa_handler == SIG_IGN)
			continue;
		cleanup_caught[k] = sigaction(cleanup_sigs[k], &sa, NULL) == 0;
	}
}

static void cleanup_uninstall(void)
{
	for (int k = 0; k < CLEANUP_NSIGS; k++)
		if (cleanup_caught[k]) {
			sigaction(cleanup_sigs[k], &cleanup_prev[k], NULL);
			cleanup_caught[k] = false;
		}
}

/* Splits path into its parent folder and its last component (trailing
 * slashes already removed). */
static void split_path(const char *path, char *parent, size_t plen, const char **base)
{
	const char *slash = strrchr(path, '/');

	if (slash == NULL) {
		snprintf(parent, plen, ".");
		*base = path;
	} else if (slash == path) {
		snprintf(parent, plen, "/");
		*base = slash + 1;
	} else {
		snprintf(parent, plen, "%.*s", (int)(slash - path), path);
		*base = slash + 1;
	}
}

int ema_cleanup_add(const char *path)
{
	char parent[EMA_PATH_MAX + 32];
	const char *base;
	sigset_t old;
	int fd, slot = -1;

	split_path(path, parent, sizeof parent, &base);
	if (strlen(base) > NAME_MAX)
		return -1;
	fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	cleanup_block(&old);
	for (int i = 0; i < CLEANUP_SLOTS && slot < 0; i++)
		if (!cleanup_used[i])
			slot = i;
	if (slot >= 0) {
		cleanup_slot[slot].dirfd = fd;
		snprintf(cleanup_slot[slot].name, sizeof cleanup_slot[slot].name, "%s", base);
		cleanup_used[slot] = 1;
		if (cleanup_count++ == 0)
			cleanup_install();
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (slot < 0)
		close(fd);
	return slot;
}

void ema_cleanup_drop(int slot)
{
	sigset_t old;

	if (slot < 0 || slot >= CLEANUP_SLOTS)
		return;
	cleanup_block(&old);
	if (cleanup_used[slot]) {
		cleanup_used[slot] = 0;
		close(cleanup_slot[slot].dirfd);
		if (--cleanup_count == 0)
			cleanup_uninstall();
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
}

int ema_cleanup_add_child(pid_t pid)
{
	sigset_t old;
	int slot = -1;

	cleanup_block(&old);
	for (int i = 0; i < CLEANUP_CHILDREN && slot < 0; i++)
		if (cleanup_child[i] <= 0)
			slot = i;
	if (slot >= 0) {
		cleanup_child[slot] = pid;
		if (cleanup_count++ == 0)
			cleanup_install();
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	return slot;
}

void ema_cleanup_drop_child(pid_t pid)
{
	sigset_t old;

	cleanup_block(&old);
	for (int i = 0; i < CLEANUP_CHILDREN; i++)
		if (cleanup_child[i] == pid && pid > 0) {
			cleanup_child[i] = 0;
			if (--cleanup_count == 0)
				cleanup_uninstall();
		}
	sigprocmask(SIG_SETMASK, &old, NULL);
}

void ema_cleanup_forked(void)
{
	sigset_t old;

	/* the parent's folders and workers are the parent's: forget them
	 * without removing anything, and keep the parent's handler from
	 * acting here (a signal now kills this process as it would have
	 * without ema's handler) */
	cleanup_block(&old);
	for (int i = 0; i < CLEANUP_SLOTS; i++)
		if (cleanup_used[i]) {
			cleanup_used[i] = 0;
			close(cleanup_slot[i].dirfd);
		}
	for (int i = 0; i < CLEANUP_CHILDREN; i++)
		cleanup_child[i] = 0;
	if (cleanup_count > 0)
		cleanup_uninstall();
	cleanup_count = 0;
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/* ---- names ---------------------------------------------------------------- */

const char *ema_host_name(void)
{
	static char host[64];

	if (host[0] == '\0') {
		char buf[256] = "";
		size_t k = 0;

		if (gethostname(buf, sizeof buf - 1) != 0)
			buf[0] = '\0';
		buf[sizeof buf - 1] = '\0';
		/* the short name, in the characters a file name and a message
		 * take as they are */
		for (const char *p = buf; *p && *p != '.' && k + 1 < sizeof host; p++)
			host[k++] = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
				    (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' ? *p : '_';
		host[k] = '\0';
		if (k == 0)
			snprintf(host, sizeof host, "localhost");
	}
	return host;
}

/* A PID as ema writes it: decimal, no leading zero, a valid pid_t; -1
 * otherwise. */
static long pid_of(const char *p)
{
	char *end;
	long pid;

	if (*p < '1' || *p > '9')
		return -1;
	errno = 0;
	pid = strtol(p, &end, 10);
	if (*end != '\0' || errno != 0 || pid > INT_MAX)
		return -1;
	return pid;
}

/* Parses what follows ".tmp-": "HOST-PID" (since several machines write
 * into one sweep folder on a shared file system, and their PIDs collide)
 * or "PID" (written by an older ema: this machine). */
static bool parse_writer(const char *rest, struct ema_out_writer *w)
{
	const char *dash = strrchr(rest, '-');
	size_t n;

	memset(w, 0, sizeof *w);
	if (strlen(rest) >= sizeof w->tail)
		return false;
	memcpy(w->tail, rest, strlen(rest) + 1);
	if (dash == NULL) {
		w->pid = pid_of(rest);
		return w->pid > 0;
	}
	n = (size_t)(dash - rest);
	if (n == 0 || n >= sizeof w->host)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((rest[i] >= 'a' && rest[i] <= 'z') || (rest[i] >= 'A' && rest[i] <= 'Z') ||
		      (rest[i] >= '0' && rest[i] <= '9') || rest[i] == '-' || rest[i] == '_'))
			return false;
	memcpy(w->host, rest, n);
	w->host[n] = '\0';
	w->pid = pid_of(dash + 1);
	return w->pid > 0;
}

/* The writer of a leftover name BASE.tmp-[HOST-]PID; false when name is
 * not one. */
static bool leftover_writer(const char *name, const char *base, struct ema_out_writer *w)
{
	size_t n = strlen(base);

	if (strncmp(name, base, n) != 0 || strncmp(name + n, ".tmp-", 5) != 0)
		return false;
	return parse_writer(name + n + 5, w);
}

bool ema_out_is_tmp_name(const char *name)
{
	const char *last = NULL;
	struct ema_out_writer w;

	for (const char *p = strstr(name, ".tmp-"); p != NULL; p = strstr(p + 1, ".tmp-"))
		last = p;
	if (last == NULL || last == name)
		return false;
	return parse_writer(last + 5, &w);
}

/* path without trailing slashes ("/" stays). */
static int normalise(char *buf, size_t n, const char *opt, const char *path,
		     struct ema_error *err)
{
	size_t len = strlen(path);

	if (len == 0)
		return ema_error_set(err, EMA_ERR_INPUT, "%s: expected a name, not an empty one", opt);
	if (len >= n)
		return ema_error_set(err, EMA_ERR_INPUT, "%s %.60s...: longer than %zu characters",
				     opt, path, n - 1);
	memcpy(buf, path, len + 1);
	while (len > 1 && buf[len - 1] == '/')
		buf[--len] = '\0';
	return EMA_OK;
}

/* mkdir and the like failing: the user's doing (exit 2) or the system's. */
static int errno_code(int e)
{
	return e == EACCES || e == EPERM || e == EROFS || e == ENOENT || e == ENOTDIR ||
	       e == EEXIST || e == ENAMETOOLONG || e == ELOOP ? EMA_ERR_INPUT : EMA_ERR_IO;
}

/* Whether a process writes: it exists (EPERM: another user's) and is not
 * a zombie. A worker killed with its sweep stays a zombie until it is
 * reaped, and kill(pid, 0) still finds it; it writes nothing any more. */
bool ema_pid_alive(pid_t pid)
{
	char path[64], buf[512];
	const char *paren;
	ssize_t n;
	int fd;

	if (kill(pid, 0) != 0 && errno != EPERM)
		return false;
	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true; /* no /proc: trust kill */
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	/* "PID (NAME) STATE ...": NAME may hold parentheses, the last one ends it */
	paren = strrchr(buf, ')');
	return paren == NULL || paren[1] != ' ' || (paren[2] != 'Z' && paren[2] != 'X');
}

/* ---- checks ----------------------------------------------------------------- */

int ema_out_check_parent(const char *opt, const char *path, struct ema_error *err)
{
	char norm[EMA_PATH_MAX], parent[EMA_PATH_MAX];
	const char *base;
	struct stat st;
	int rc = normalise(norm, sizeof norm, opt, path, err);

	if (rc != EMA_OK)
		return rc;
	split_path(norm, parent, sizeof parent, &base);
	if (stat(parent, &st) != 0) {
		if (errno == ENOENT)
			return ema_error_set(err, EMA_ERR_INPUT, "%s %s: parent folder %s does not exist",
					     opt, path, parent);
		return ema_error_set(err, errno_code(errno), "%s %s: parent folder %s: %s",
				     opt, path, parent, strerror(errno));
	}
	if (!S_ISDIR(st.st_mode))
		return ema_error_set(err, EMA_ERR_INPUT, "%s %s: parent %s is not a folder",
				     opt, path, parent);
	if (access(parent, W_OK | X_OK) != 0)
		return ema_error_set(err, errno_code(errno), "%s %s: cannot write in folder %s: %s",
				     opt, path, parent, strerror(errno));
	return EMA_OK;
}

/* Whether the writer of a leftover may still be writing it: a live
 * process here, or any process on another machine, which this one cannot
 * ask (the caller that owns the name, a sweep point it has claimed,
 * removes those too). */
static bool writer_may_live(const struct ema_out_writer *w)
{
	bool here = w->host[0] == '\0' || strcmp(w->host, ema_host_name()) == 0;

	/* our own PID on an existing name: a process of an earlier container
	 * or boot, never this one (it has not made it yet) */
	if (here)
		return w->pid != (long)getpid() && ema_pid_alive((pid_t)w->pid);
	return true;
}

static int clean_leftovers(const char *path, bool all, struct ema_out_writer *live,
			   struct ema_error *err)
{
	char parent[EMA_PATH_MAX + 32], full[2 * EMA_PATH_MAX + 300];
	const char *base;
	struct dirent *ent;
	DIR *d;

	if (live != NULL)
		memset(live, 0, sizeof *live);
	split_path(path, parent, sizeof parent, &base);
	d = opendir(parent);
	if (d == NULL)
		return ema_error_set(err, errno_code(errno), "%s: cannot read: %s", parent,
				     strerror(errno));
	while ((ent = readdir(d)) != NULL) {
		struct ema_out_writer w;

		if (!leftover_writer(ent->d_name, base, &w))
			continue;
		if (!all && writer_may_live(&w)) {
			if (live != NULL)
				*live = w;
			continue;
		}
		if (strcmp(parent, ".") == 0)
			snprintf(full, sizeof full, "%s", ent->d_name);
		else if (strcmp(parent, "/") == 0)
			snprintf(full, sizeof full, "/%s", ent->d_name);
		else
			snprintf(full, sizeof full, "%s/%s", parent, ent->d_name);
		fprintf(stderr, "ema: removing leftover %s from a run that was killed\n", full);
		if (remove_at(AT_FDCWD, full, 0) != 0)
			fprintf(stderr, "ema: could not remove all of %s: %s\n", full, strerror(errno));
	}
	closedir(d);
	return EMA_OK;
}

int ema_out_clean_leftovers(const char *path, struct ema_out_writer *live,
			    struct ema_error *err)
{
	return clean_leftovers(path, false, live, err);
}

void ema_out_writer_text(const struct ema_out_writer *w, char *buf, size_t n)
{
	if (w->host[0] == '\0' || strcmp(w->host, ema_host_name()) == 0)
		snprintf(buf, n, "process %ld", w->pid);
	else
		snprintf(buf, n, "process %ld on %s (remove it if that process is gone)", w->pid,
			 w->host);
}

/* ---- reserving, committing ------------------------------------------------- */

static int make_tmp(struct ema_outdir *od, const char *opt, struct ema_error *err)
{
	int n = snprintf(od->tmp, sizeof od->tmp, "%s.tmp-%s-%ld", od->path, ema_host_name(),
			 (long)getpid());

	if (n < 0 || (size_t)n >= sizeof od->tmp)
		return ema_error_set(err, EMA_ERR_INPUT, "%s %s: name too long", opt, od->shown);
	if (mkdir(od->tmp, 0777) != 0)
		return ema_error_set(err, errno_code(errno), "%s %s: cannot create %s: %s", opt,
				     od->shown, od->tmp, strerror(errno));
	return EMA_OK;
}

/* make_tmp and its registration for removal at once, the signals held
 * between them: a SIGTERM that came after the mkdir but before the
 * handler knew the folder (a sweep's worker is told to go at any moment)
 * would leave it behind. A signal held here is handled once the folder
 * is registered, and removes it. */
static int make_tmp_registered(struct ema_outdir *od, const char *opt, struct ema_error *err)
{
	sigset_t old;
	int rc;

	cleanup_block(&old);
	rc = make_tmp(od, opt, err);
	if (rc == EMA_OK)
		od->slot = ema_cleanup_add(od->tmp);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return rc;
}

int ema_outdir_reserve(struct ema_outdir *od, const char *opt, const char *out,
		       const char *default_name, struct ema_error *err)
{
	char parent[EMA_PATH_MAX];
	const char *base, *what = out != NULL ? opt : "output folder";
	struct stat st;
	struct ema_out_writer live;
	char who[160];
	int rc;

	memset(od, 0, sizeof *od);
	od->slot = -1;
	if (out != NULL) {
		rc = normalise(od->path, sizeof od->path, opt, out, err);
		if (rc != EMA_OK)
			return rc;
		split_path(od->path, parent, sizeof parent, &base);
		if (ema_out_is_tmp_name(base))
			return ema_error_set(err, EMA_ERR_INPUT,
					     "%s %s: names ending in .tmp-NUMBER are kept for unfinished "
					     "folders; choose another", opt, out);
		rc = ema_out_check_parent(opt, od->path, err);
		if (rc == EMA_OK)
			rc = ema_out_clean_leftovers(od->path, &live, err);
		if (rc != EMA_OK)
			return rc;
		if (lstat(od->path, &st) == 0)
			return ema_error_set(err, EMA_ERR_INPUT,
					     "%s %s: already exists (choose another; nothing was run)",
					     opt, out);
		if (live.pid != 0) {
			ema_out_writer_text(&live, who, sizeof who);
			return ema_error_set(err, EMA_ERR_INPUT,
					     "%s %s: %s.tmp-%s is being written by %s (another run "
					     "with this %s?); choose another", opt, out, od->path,
					     live.tail, who, opt);
		}
	} else {
		/* runs/NAME, or runs/NAME-2, -3 ... : never overwrite a run,
		 * never take a name another ema is writing */
		if (mkdir("runs", 0777) == 0)
			od->made_parent = true;
		else if (errno != EEXIST)
			return ema_error_set(err, errno_code(errno), "runs: cannot create: %s",
					     strerror(errno));
		snprintf(od->path, sizeof od->path, "runs/%s", default_name);
		rc = ema_out_check_parent(what, od->path, err);
		for (int k = 2; rc == EMA_OK; k++) {
			rc = ema_out_clean_leftovers(od->path, &live, err);
			if (rc != EMA_OK || (lstat(od->path, &st) != 0 && live.pid == 0))
				break;
			if (k == 100000) {
				rc = ema_error_set(err, EMA_ERR_INPUT,
						   "runs/%s: every name up to -%d is taken", default_name, k);
				break;
			}
			snprintf(od->path, sizeof od->path, "runs/%s-%d", default_name, k);
		}
		if (rc != EMA_OK) {
			if (od->made_parent)
				rmdir("runs");
			return rc;
		}
	}
	snprintf(od->shown, sizeof od->shown, "%s", od->path);
	rc = make_tmp_registered(od, what, err);
	if (rc != EMA_OK && od->made_parent)
		rmdir("runs");
	return rc;
}

int ema_outdir_reserve_sub(struct ema_outdir *od, const struct ema_outdir *parent,
			   const char *name, struct ema_error *err)
{
	int n1, n2;

	memset(od, 0, sizeof *od);
	od->slot = -1;
	n1 = snprintf(od->path, sizeof od->path, "%s/%s", parent->tmp, name);
	n2 = snprintf(od->shown, sizeof od->shown, "%s/%s", parent->shown, name);
	if (n1 < 0 || (size_t)n1 >= sizeof od->path || n2 < 0 || (size_t)n2 >= sizeof od->shown)
		return ema_error_set(err, EMA_ERR_INPUT, "%s/%s: name too long", parent->shown, name);
	return make_tmp(od, "--out", err);
}

int ema_outdir_reserve_part(struct ema_outdir *od, const char *dir, const char *name,
			    bool claimed, struct ema_error *err)
{
	struct stat st;
	struct ema_out_writer live;
	char who[160];
	int n, rc;

	memset(od, 0, sizeof *od);
	od->slot = -1;
	od->exact = true;
	n = snprintf(od->path, sizeof od->path, "%s/%s", dir, name);
	if (n < 0 || (size_t)n >= sizeof od->path)
		return ema_error_set(err, EMA_ERR_INPUT, "%s/%s: name too long", dir, name);
	snprintf(od->shown, sizeof od->shown, "%s", od->path);
	/* a writer killed a moment ago (kill -9 of a whole sweep) may still be
	 * dying: give it 2 s before calling it another live writer. Whoever
	 * holds the name's claim owns it: any other writer lost it (it died,
	 * here or on another machine) */
	for (int i = 0; i < 20; i++) {
		struct timespec ts = { 0, 100000000 };

		rc = clean_leftovers(od->path, claimed, &live, err);
		if (rc != EMA_OK)
			return rc;
		if (live.pid == 0)
			break;
		nanosleep(&ts, NULL);
	}
	if (lstat(od->path, &st) == 0)
		return ema_error_set(err, EMA_ERR_INPUT, "%s: already exists", od->shown);
	if (live.pid != 0) {
		ema_out_writer_text(&live, who, sizeof who);
		return ema_error_set(err, EMA_ERR_INPUT,
				     "%s: %s.tmp-%s is being written by %s (another ema on the same "
				     "folder?)", od->shown, od->path, live.tail, who);
	}
	return make_tmp_registered(od, "output", err);
}

/* rename that fails with EEXIST rather than replace an empty folder
 * (plain rename(2) replaces one). */
static int rename_noreplace(const char *from, const char *to)
{
	struct stat st;

#ifdef RENAME_NOREPLACE
	if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -1;
	/* a file system without the flag: check, then rename */
#endif
	if (lstat(to, &st) == 0) {
		errno = EEXIST;
		return -1;
	}
	return rename(from, to);
}

int ema_outdir_commit(struct ema_outdir *od, struct ema_error *err)
{
	char alt[EMA_PATH_MAX];
	int rc = rename_noreplace(od->tmp, od->path);

	/* a part of a folder that stays keeps its name or fails: a sweep
	 * point under another name would not be found */
	if (rc != 0 && od->exact) {
		int e = errno;

		ema_outdir_abort(od);
		if (e == EEXIST || e == ENOTEMPTY)
			return ema_error_set(err, EMA_ERR_IO, "%s: appeared while this process wrote "
					     "it (another ema on the same folder?)", od->shown);
		return ema_error_set(err, EMA_ERR_IO, "%s: cannot rename %s to it: %s", od->shown,
				     od->tmp, strerror(e));
	}

	/* taken during the run by something that is not ema (another ema
	 * would have seen the reservation): keep the results nearby */
	for (int k = 2; rc != 0 && (errno == EEXIST || errno == ENOTEMPTY) && k < 1000; k++) {
		int n = snprintf(alt, sizeof alt, "%s-%d", od->path, k);

		if (n < 0 || (size_t)n >= sizeof alt)
			break;
		rc = rename_noreplace(od->tmp, alt);
		if (rc == 0) {
			fprintf(stderr, "ema: %s appeared during the run; results written to %s-%d instead\n",
				od->shown, od->shown, k);
			snprintf(od->path, sizeof od->path, "%s", alt);
			snprintf(alt, sizeof alt, "%s", od->shown);
			snprintf(od->shown, sizeof od->shown, "%.*s-%d",
				 (int)(sizeof od->shown - 16), alt, k);
		}
	}
	if (rc != 0) {
		int e = errno;

		ema_outdir_abort(od);
		return ema_error_set(err, EMA_ERR_IO, "%s: cannot rename %s to it: %s", od->shown,
				     od->tmp, strerror(e));
	}
	ema_cleanup_drop(od->slot);
	od->slot = -1;
	return EMA_OK;
}

void ema_outdir_abort(struct ema_outdir *od)
{
	if (od->tmp[0] != '\0')
		ema_remove_tree(od->tmp);
	ema_cleanup_drop(od->slot);
	od->slot = -1;
	if (od->made_parent)
		rmdir("runs"); /* only when empty */
	od->made_parent = false;
}

/* ---- files ------------------------------------------------------------------ */

const char *const ema_run_file_names[EMA_RUN_FILES] = {
	[EMA_RUN_SUMMARY] = "summary.csv",
	[EMA_RUN_REQUESTS] = "requests.csv",
	[EMA_RUN_TIMELINE] = "timeline.csv",
	[EMA_RUN_LINKS] = "links.csv",
	[EMA_RUN_TRANSFERS] = "transfers.csv",
	[EMA_RUN_RECLAIMS] = "reclaims.csv",
	[EMA_RUN_CONFIG] = "config.json",
	[EMA_RUN_JSON] = "run.json",
};

/* The folder is reserved and renamed whole, so its files are written
 * straight into od->tmp; messages name them as they will be once
 * complete (od->shown) and give the reason of a failure. */
/* One file of the run folder, written and closed. */
static int write_one_file(const struct ema_outdir *od,
			  int (*write)(const void *ctx, enum ema_run_file file, FILE *f),
			  const void *ctx, int i, struct ema_error *err)
{
	char path[sizeof od->tmp + 64], shown[sizeof od->shown + 64];
	FILE *f;
	int rc;

	snprintf(path, sizeof path, "%s/%s", od->tmp, ema_run_file_names[i]);
	snprintf(shown, sizeof shown, "%s/%s", od->shown, ema_run_file_names[i]);
	f = fopen(path, "w");
	if (f == NULL)
		return ema_error_set(err, EMA_ERR_IO, "%s: cannot write: %s", shown, strerror(errno));
	errno = 0;
	rc = write(ctx, (enum ema_run_file)i, f);
	return ema_file_close(f, rc, shown, err);
}

struct file_job {
	const struct ema_outdir *od;
	int (*write)(const void *ctx, enum ema_run_file file, FILE *f);
	const void *ctx;
	int index;
	int rc;
	struct ema_error err;
};

static void *file_job_run(void *arg)
{
	struct file_job *j = arg;

	j->rc = write_one_file(j->od, j->write, j->ctx, j->index, &j->err);
	return NULL;
}

int ema_outdir_write_files(const struct ema_outdir *od,
			   int (*write)(const void *ctx, enum ema_run_file file, FILE *f),
			   const void *ctx, struct ema_error *err)
{
	/* requests.csv, a row per request and policy (most of the bytes),
	 * in a thread of its own beside the other files: the same bytes,
	 * written in about the time of that file alone on a machine with two
	 * cores. write only reads ctx. The thread takes none of the signals
	 * that remove an unfinished folder (the main thread does), and where
	 * no thread can be made the file is written in turn. */
	struct file_job job = { od, write, ctx, EMA_RUN_REQUESTS, EMA_OK, { 0 } };
	pthread_t th;
	sigset_t all, old;
	bool threaded;
	int rc = EMA_OK, failed = EMA_RUN_FILES;

	sigemptyset(&all);
	sigaddset(&all, SIGINT);
	sigaddset(&all, SIGTERM);
	sigaddset(&all, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	threaded = pthread_create(&th, NULL, file_job_run, &job) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	for (int i = 0; i < EMA_RUN_FILES && rc == EMA_OK; i++) {
		if (threaded && i == job.index)
			continue;
		rc = write_one_file(od, write, ctx, i, err);
		if (rc != EMA_OK)
			failed = i;
	}
	if (threaded) {
		pthread_join(th, NULL);
		/* the first failure in file order, as writing them in turn reports */
		if (job.rc != EMA_OK && job.index < failed) {
			rc = job.rc;
			*err = job.err;
		}
	}
	return rc;
}

void ema_outdir_print_contents(const struct ema_outdir *od, bool plots, FILE *out)
{
	fprintf(out, "results: %s/ (", od->path);
	for (int i = 0; i < EMA_RUN_FILES; i++)
		fprintf(out, "%s%s", i ? ", " : "", ema_run_file_names[i]);
	fprintf(out, "%s)\n", plots ? ", plots/" : "");
}

int ema_outfile_reserve(struct ema_outfile *of, const char *opt, const char *path,
			struct ema_error *err)
{
	struct stat st;
	int rc;

	memset(of, 0, sizeof *of);
	of->slot = -1;
	of->opt = opt;
	rc = ema_out_check_parent(opt, path, err);
	if (rc != EMA_OK)
		return rc;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return ema_error_set(err, EMA_ERR_INPUT, "%s %s: is a folder, expected a file", opt,
				     path);
	if (snprintf(of->path, sizeof of->path, "%s", path) >= (int)sizeof of->path ||
	    snprintf(of->tmp, sizeof of->tmp, "%s.tmp-%s-%ld", path, ema_host_name(),
		     (long)getpid()) >=
	    (int)sizeof of->tmp)
		return ema_error_set(err, EMA_ERR_INPUT, "%s %s: name too long", opt, path);
	return ema_out_clean_leftovers(path, NULL, err);
}

FILE *ema_outfile_open(struct ema_outfile *of, struct ema_error *err)
{
	of->slot = ema_cleanup_add(of->tmp);
	of->f = fopen(of->tmp, "w");
	if (of->f == NULL) {
		ema_error_set(err, EMA_ERR_IO, "%s: cannot write: %s", of->path, strerror(errno));
		ema_cleanup_drop(of->slot);
		of->slot = -1;
		return NULL;
	}
	errno = 0;
	return of->f;
}

int ema_outfile_commit(struct ema_outfile *of, struct ema_error *err)
{
	int rc;

	if (of->f == NULL)
		return ema_error_set(err, EMA_ERR_INTERNAL, "%s: committed unopened", of->path);
	/* a writer's failure shows as ferror, which ema_file_close reports
	 * with its reason (errno of the failed write, e.g. a full disk) */
	rc = ema_file_close(of->f, EMA_OK, of->path, err);
	of->f = NULL;
	if (rc == EMA_OK && rename(of->tmp, of->path) != 0)
		rc = ema_error_set(err, EMA_ERR_IO, "%s: cannot rename %s to it: %s", of->path,
				   of->tmp, strerror(errno));
	if (rc != EMA_OK)
		unlink(of->tmp);
	ema_cleanup_drop(of->slot);
	of->slot = -1;
	return rc;
}

void ema_outfile_abort(struct ema_outfile *of)
{
	if (of->f != NULL) {
		fclose(of->f);
		of->f = NULL;
		unlink(of->tmp);
	}
	ema_cleanup_drop(of->slot);
	of->slot = -1;
}

int ema_file_close(FILE *f, int rc, const char *shown, struct ema_error *err)
{
	int e = errno;
	bool bad = rc != EMA_OK || ferror(f);

	/* stdio writes when its buffer fills: a full disk shows at fflush
	 * or fclose as often as in the writer */
	if (!bad && fflush(f) != 0) {
		bad = true;
		e = errno;
	}
	if (fclose(f) != 0 && !bad) {
		bad = true;
		e = errno;
	}
	if (!bad)
		return EMA_OK;
	return ema_error_set(err, rc != EMA_OK ? rc : EMA_ERR_IO, "%s: write failed: %s", shown,
			     e != 0 ? strerror(e) : "i/o error");
}
