/* sweep_claim.c: which process runs a point. Several processes may work
 * on one sweep folder at once: a sweep submitted twice, a requeued Slurm
 * task beside its first run, two `ema sweep` on one --out. Before it
 * simulates a point, a process claims it by creating DIR/point-NNN.claim
 * (written whole, then linked into place: atomic, on NFS too), holding
 * its host and PID; a process
 * that finds a point claimed goes on to the next one. The claim goes when
 * the point is complete (or the process is interrupted).
 *
 * A claim whose owner died (kill -9, a lost node) would block its point
 * for ever, so a claim is stale, and is taken over, when its owner is a
 * process of this machine that no longer exists, or when it was not
 * refreshed for EMA_CLAIM_STALE_S: the owner touches it every
 * EMA_CLAIM_BEAT_S from a thread of its own, and another machine's
 * process can be known dead only by its silence. */
#define _GNU_SOURCE
#include "sweep.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "outdir.h"

static void claim_path(const struct ema_sweep *s, long pt, char *buf, size_t n)
{
	char name[32];

	ema_sweep_point_name(pt, name);
	snprintf(buf, n, "%s/%s.claim", s->dir, name);
}

/* The owner of the claim at path, and whether it is stale; false when
 * there is none (or it went while being read). */
static bool read_owner(const char *path, struct ema_claim_owner *o, ino_t *ino)
{
	struct stat st;
	char buf[160] = "";
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool here;

	memset(o, 0, sizeof *o);
	if (fd < 0)
		return false;
	if (fstat(fd, &st) != 0) {
		close(fd);
		return false;
	}
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	*ino = st.st_ino;
	o->age_s = difftime(time(NULL), st.st_mtime);
	if (sscanf(buf, "%63s %ld", o->host, &o->pid) != 2) {
		/* being written this very moment, or not ema's: its age decides */
		snprintf(o->host, sizeof o->host, "?");
		o->pid = 0;
	}
	here = strcmp(o->host, ema_host_name()) == 0;
	o->stale = o->age_s > EMA_CLAIM_STALE_S ||
		   (here && (o->pid == (long)getpid() || !ema_pid_alive((pid_t)o->pid)));
	return true;
}

int ema_sweep_claim_read(const struct ema_sweep *s, long pt, bool *held,
			 struct ema_claim_owner *o)
{
	char path[EMA_PATH_MAX + 64];
	ino_t ino;

	claim_path(s, pt, path, sizeof path);
	*held = read_owner(path, o, &ino);
	return EMA_OK;
}

void ema_claim_owner_text(const struct ema_claim_owner *o, char *buf, size_t n)
{
	if (strcmp(o->host, ema_host_name()) == 0)
		snprintf(buf, n, "process %ld, %.0f s ago%s", o->pid, o->age_s,
			 o->stale ? ", gone" : "");
	else
		snprintf(buf, n, "process %ld on %s, %.0f s ago%s", o->pid, o->host, o->age_s,
			 o->stale ? ", silent: taken to be gone" : "");
}

/* ---- the heartbeat --------------------------------------------------------------- */

static void *beat(void *arg)
{
	struct ema_claim *c = arg;
	struct timespec until;

	pthread_mutex_lock(&c->mu);
	while (!c->stop) {
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += EMA_CLAIM_BEAT_S;
		if (pthread_cond_timedwait(&c->cv, &c->mu, &until) == ETIMEDOUT && !c->stop)
			utimensat(AT_FDCWD, c->path, NULL, 0);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

static void start_beat(struct ema_claim *c)
{
	sigset_t all, old;

	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	c->stop = false;
	/* the signals that remove an unfinished point go to the main thread */
	sigemptyset(&all);
	sigaddset(&all, SIGINT);
	sigaddset(&all, SIGTERM);
	sigaddset(&all, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	c->beating = pthread_create(&c->thread, NULL, beat, c) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* ---- claiming ---------------------------------------------------------------------- */

/* Creates the claim, registered for removal on a signal at once (the
 * signals held between the two, as a point's folder is). The claim is
 * written whole under a name of this process's, then linked to its own
 * name (link fails with EEXIST where another holds it, atomically, on
 * NFS too): a claim is never seen empty. (Created with O_EXCL and then
 * written, a kill -9 between the two left an empty claim with no owner
 * to judge, and a resumed sweep waited EMA_CLAIM_STALE_S for it.) 1:
 * made, 0: taken (EEXIST), -1: errno says why. */
static int create(struct ema_claim *c)
{
	char text[128], tmp[sizeof c->path + 96];
	sigset_t set, old;
	int fd, n, ok = 1;

	n = snprintf(text, sizeof text, "%s %ld %lld\n", ema_host_name(), (long)getpid(),
		     (long long)time(NULL));
	snprintf(tmp, sizeof tmp, "%s.new-%s-%ld", c->path, ema_host_name(), (long)getpid());
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, &old);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0) {
		ok = -1;
	} else {
		if (write(fd, text, (size_t)n) != n)
			ok = -1;
		if (close(fd) != 0)
			ok = -1;
		if (ok > 0 && link(tmp, c->path) != 0)
			ok = errno == EEXIST ? 0 : -1;
		if (ok > 0)
			c->slot = ema_cleanup_add(c->path);
		{
			int e = errno;

			unlink(tmp);
			errno = e;
		}
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	return ok;
}

/* Takes a stale claim away. Another process may judge the same claim
 * stale at the same moment: only one rename of it succeeds, and a
 * process that finds it renamed a claim newer than the one it judged
 * (the other's fresh one) puts it back. True when the stale one is gone. */
static bool remove_stale(const char *path, ino_t judged)
{
	char aside[EMA_PATH_MAX + 160];
	struct stat st;
	bool same;

	snprintf(aside, sizeof aside, "%s.stale-%s-%ld", path, ema_host_name(), (long)getpid());
	if (rename(path, aside) != 0)
		return errno == ENOENT;
	same = stat(aside, &st) == 0 && st.st_ino == judged;
	if (!same && link(aside, path) != 0) {
		/* a third claim appeared meanwhile: the one put aside was
		 * someone's fresh claim, which now has a twin; that process
		 * finds its point complete or completes it, and the commit of
		 * a point tolerates the twin (ema_sweep_run_point) */
	}
	unlink(aside);
	return same;
}

int ema_sweep_claim(const struct ema_sweep *s, long pt, struct ema_claim *c,
		    enum ema_claim_result *res, struct ema_claim_owner *owner,
		    struct ema_error *err)
{
	memset(c, 0, sizeof *c);
	c->slot = -1;
	claim_path(s, pt, c->path, sizeof c->path);
	for (int attempt = 0; attempt < 20; attempt++) {
		struct ema_claim_owner o;
		bool done;
		ino_t ino = 0;
		int made, rc;

		rc = ema_sweep_point_done(s, pt, &done, err);
		if (rc != EMA_OK)
			return rc;
		if (done) {
			*res = EMA_CLAIM_DONE;
			return EMA_OK;
		}
		made = create(c);
		if (made < 0)
			return ema_error_set(err, EMA_ERR_IO, "%s: cannot create: %s", c->path,
					     strerror(errno));
		if (made > 0) {
			/* completed by another between the look and the claim */
			rc = ema_sweep_point_done(s, pt, &done, err);
			if (rc != EMA_OK || done) {
				c->held = true;
				ema_sweep_claim_release(c);
				*res = EMA_CLAIM_DONE;
				return rc;
			}
			c->held = true;
			start_beat(c);
			*res = EMA_CLAIM_OURS;
			return EMA_OK;
		}
		if (!read_owner(c->path, &o, &ino))
			continue; /* released meanwhile */
		if (!o.stale) {
			if (owner != NULL)
				*owner = o;
			*res = EMA_CLAIM_TAKEN;
			return EMA_OK;
		}
		if (remove_stale(c->path, ino)) {
			char who[200], name[32];

			ema_claim_owner_text(&o, who, sizeof who);
			ema_sweep_point_name(pt, name);
			fprintf(stderr, "ema: %s/%s: taking over from %s\n", s->dir, name, who);
		}
	}
	return ema_error_set(err, EMA_ERR_IO, "%s: could not be claimed after 20 tries (claims "
			     "appearing and going all the time?)", c->path);
}

void ema_sweep_claim_release(struct ema_claim *c)
{
	if (c->beating) {
		pthread_mutex_lock(&c->mu);
		c->stop = true;
		pthread_cond_signal(&c->cv);
		pthread_mutex_unlock(&c->mu);
		pthread_join(c->thread, NULL);
		pthread_cond_destroy(&c->cv);
		pthread_mutex_destroy(&c->mu);
		c->beating = false;
	}
	if (c->held)
		unlink(c->path);
	c->held = false;
	ema_cleanup_drop(c->slot);
	c->slot = -1;
}
