/* outdir.h: output folders and files of the commands (run folders, sweep
 * folders, validate.csv): checked and reserved before anything is
 * simulated, written under a temporary name NAME.tmp-PID, renamed when
 * complete, removed when the process is interrupted, and leftovers of
 * killed runs cleaned by the next run aimed at the same name. */
#ifndef EMA_OUTDIR_H
#define EMA_OUTDIR_H

#include <stdbool.h>
#include <stdio.h>

#include "config.h"
#include "ema_error.h"

struct ema_outdir {
	char path[EMA_PATH_MAX];      /* the folder's name once complete */
	char shown[EMA_PATH_MAX];     /* how messages name it (a sweep point: SWEEP/point-NNN) */
	char tmp[EMA_PATH_MAX + 32];  /* where it is written: PATH.tmp-PID */
	int slot;                     /* in the list removed on a signal, or -1 */
	bool made_parent;             /* runs/ was created for it: removed again if empty */
};

/* Reserves the output folder of a command before it runs: out (the user's
 * --out, opt names the option in messages) or, when out is NULL,
 * runs/DEFAULT_NAME, runs/DEFAULT_NAME-2, ... (the first name that is free
 * and not being written by a live process). Checks that the parent folder
 * exists, is a folder and is writable, and that the name is free; removes
 * (and says so on stderr) NAME.tmp-PID leftovers of killed processes;
 * creates od->tmp and registers it for removal on SIGINT, SIGTERM and
 * SIGHUP. A user's mistake is EMA_ERR_INPUT (exit 2). */
int ema_outdir_reserve(struct ema_outdir *od, const char *opt, const char *out,
		       const char *default_name, struct ema_error *err);

/* Reserves NAME inside a reserved folder (a sweep's point): only creates
 * PARENT.tmp/NAME.tmp-PID, the parent's registration covering it. */
int ema_outdir_reserve_sub(struct ema_outdir *od, const struct ema_outdir *parent,
			   const char *name, struct ema_error *err);

/* Renames od->tmp to od->path, never over an existing folder. When the
 * name was taken meanwhile (not by ema, which sees the reservation), the
 * results go to PATH-2, -3, ... instead, od->path says which, and a note
 * goes to stderr. On failure the temporary folder is removed. */
int ema_outdir_commit(struct ema_outdir *od, struct ema_error *err);

/* Removes the temporary folder (a failed or refused run) and runs/ if it
 * was created for it and is empty. */
void ema_outdir_abort(struct ema_outdir *od);

/* Checks that a file or folder can be created at path: its parent exists,
 * is a folder and is writable. "OPT PATH: parent folder P does not exist",
 * EMA_ERR_INPUT. */
int ema_out_check_parent(const char *opt, const char *path, struct ema_error *err);

/* Removes leftovers BASE.tmp-PID of dead processes beside path (a note on
 * stderr for each). *live is set to the PID of a live process writing one
 * (0 when none; NULL when not wanted). */
int ema_out_clean_leftovers(const char *path, long *live, struct ema_error *err);

/* Registers path (a temporary file or folder) for removal on SIGINT,
 * SIGTERM and SIGHUP; returns its slot (-1 when the list is full: then it
 * is only not removed on a signal). */
int ema_cleanup_add(const char *path);
/* Unregisters a slot (after the rename, or after removing it). */
void ema_cleanup_drop(int slot);

/* Finishes a file written through stdio by a writer that returned rc
 * (EMA_ERR_IO when it saw ferror): flushes and closes f. Any failure is
 * "SHOWN: write failed: REASON" (REASON from errno, e.g. "No space left on
 * device"), EMA_ERR_IO. Set errno to 0 before the writer runs. */
int ema_file_close(FILE *f, int rc, const char *shown, struct ema_error *err);

/* True for a name NAME.tmp-DIGITS: a folder being written, or left by a
 * killed run; never a result. */
bool ema_out_is_tmp_name(const char *name);

/* Removes a file, or a folder and everything in it, without following
 * symbolic links. */
void ema_remove_tree(const char *path);

#endif
