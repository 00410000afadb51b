/* outdir.h: output folders and files of the commands (run folders, sweep
 * folders, validate.csv, calibrated profiles): checked and reserved before
 * anything is simulated or measured, written under a temporary name
 * NAME.tmp-HOST-PID, renamed when complete, removed when the process is
 * interrupted, and leftovers of killed runs cleaned by the next run aimed
 * at the same name. The one owner of the default names (runs/NAME-k) and
 * of the list of files a run folder holds. */
#ifndef EMA_OUTDIR_H
#define EMA_OUTDIR_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "config.h"
#include "ema_error.h"

/* Who writes a temporary NAME.tmp-HOST-PID (NAME.tmp-PID from an older
 * ema: this machine): a sweep folder on a shared file system is written
 * by many machines, whose PIDs collide. */
struct ema_out_writer {
	long pid;           /* 0: none */
	char host[64];      /* "" for the older form */
	char tail[96];      /* what follows ".tmp-" */
};

/* This machine's short host name, as temporary names and run.json give
 * it (letters, digits, '-' and '_'; "localhost" when it has none). */
const char *ema_host_name(void);

/* Whether a process of this machine exists and is not a zombie. */
bool ema_pid_alive(pid_t pid);

struct ema_outdir {
	char path[EMA_PATH_MAX];      /* the folder's name once complete */
	char shown[EMA_PATH_MAX];     /* how messages name it (a sweep point: SWEEP/point-NNN) */
	char tmp[EMA_PATH_MAX + 96];  /* where it is written: PATH.tmp-HOST-PID */
	int slot;                     /* in the list removed on a signal, or -1 */
	bool made_parent;             /* runs/ was created for it: removed again if empty */
	bool exact;                   /* commit under path or fail, never PATH-2 */
};

/* Reserves the output folder of a command before it runs: out (the user's
 * --out, opt names the option in messages) or, when out is NULL,
 * runs/DEFAULT_NAME, runs/DEFAULT_NAME-2, ... (the first name that is free
 * and not being written by a live process). Checks that the parent folder
 * exists, is a folder and is writable, and that the name is free; removes
 * (and says so on stderr) NAME.tmp-HOST-PID leftovers of killed processes;
 * creates od->tmp and registers it for removal on SIGINT, SIGTERM and
 * SIGHUP. A user's mistake is EMA_ERR_INPUT (exit 2). */
int ema_outdir_reserve(struct ema_outdir *od, const char *opt, const char *out,
		       const char *default_name, struct ema_error *err);

/* Reserves NAME inside a reserved folder (a sweep's point): only creates
 * PARENT.tmp/NAME.tmp-HOST-PID, the parent's registration covering it. */
int ema_outdir_reserve_sub(struct ema_outdir *od, const struct ema_outdir *parent,
			   const char *name, struct ema_error *err);

/* Reserves DIR/NAME inside a folder that stays (a point of a sweep,
 * DIR/point-NNN): removes leftovers DIR/NAME.tmp-* of dead processes
 * (with a note; with claimed, the caller holds the name's claim, and every
 * leftover goes, another machine's too), refuses (EMA_ERR_INPUT) when
 * DIR/NAME exists or a live process is writing it, creates
 * DIR/NAME.tmp-HOST-PID and registers it for removal on SIGINT, SIGTERM
 * and SIGHUP. Its commit renames it to DIR/NAME or fails: never
 * DIR/NAME-2. */
int ema_outdir_reserve_part(struct ema_outdir *od, const char *dir, const char *name,
			    bool claimed, struct ema_error *err);

/* Renames od->tmp to od->path, never over an existing folder. When the
 * name was taken meanwhile (not by ema, which sees the reservation), the
 * results go to PATH-2, -3, ... instead, od->path says which, and a note
 * goes to stderr. On failure the temporary folder is removed. */
int ema_outdir_commit(struct ema_outdir *od, struct ema_error *err);

/* Removes the temporary folder (a failed or refused run) and runs/ if it
 * was created for it and is empty. */
void ema_outdir_abort(struct ema_outdir *od);

/* The files of a run folder, in the order `ema run` lists them; the
 * writer of each is the experiment's (ema_experiment_write). A run with
 * figures also holds plots/. */
enum ema_run_file {
	EMA_RUN_SUMMARY,
	EMA_RUN_REQUESTS,
	EMA_RUN_TIMELINE,
	EMA_RUN_LINKS,
	EMA_RUN_TRANSFERS,
	EMA_RUN_RECLAIMS,
	EMA_RUN_CONFIG,
	EMA_RUN_JSON,
	EMA_RUN_FILES
};
extern const char *const ema_run_file_names[EMA_RUN_FILES];

/* Writes write(ctx, FILE, f) for every file of the list into od->tmp, in
 * the list's order, stopping at the first failure. A failure to create,
 * to write or to close a file is "SHOWN/NAME: ...", EMA_ERR_IO (a writer
 * returns EMA_ERR_IO when it saw ferror). */
int ema_outdir_write_files(const struct ema_outdir *od,
			   int (*write)(const void *ctx, enum ema_run_file file, FILE *f),
			   const void *ctx, struct ema_error *err);

/* The line that says where a committed run folder is and what it holds:
 * "results: DIR/ (summary.csv, ..., run.json, plots/)". */
void ema_outdir_print_contents(const struct ema_outdir *od, bool plots, FILE *out);

/* One output file written whole or not at all (validate --csv, calibrate
 * --out and --csv, bench --hw --csv): written as PATH.tmp-HOST-PID and renamed
 * over PATH when complete, so an old file stays whole until the new one
 * is; removed on a failure or a signal. */
struct ema_outfile {
	char path[EMA_PATH_MAX];
	char tmp[EMA_PATH_MAX + 96];
	const char *opt;  /* the option that named it, for messages */
	int slot;
	FILE *f;
};

/* Checks, before the work starts, that path can be written: its parent
 * folder exists and is writable, path is not a folder; removes leftovers
 * PATH.tmp-[HOST-]PID of killed processes. Creates nothing. EMA_ERR_INPUT
 * "OPT PATH: ..." when it cannot. */
int ema_outfile_reserve(struct ema_outfile *of, const char *opt, const char *path,
			struct ema_error *err);
/* Creates the temporary file and registers it for removal on a signal;
 * NULL with err set when it cannot. */
FILE *ema_outfile_open(struct ema_outfile *of, struct ema_error *err);
/* Finishes the file once written: flushes and closes it (a failure of
 * the writer shows as ferror: "PATH: write failed: REASON", as
 * ema_file_close) and renames it over of->path; on any failure the
 * temporary file is removed. Set errno to 0 before the writer runs
 * (ema_outfile_open does). */
int ema_outfile_commit(struct ema_outfile *of, struct ema_error *err);
/* Closes and removes the temporary file: the work failed, err already
 * says why. Harmless when nothing was opened. */
void ema_outfile_abort(struct ema_outfile *of);

/* Checks that a file or folder can be created at path: its parent exists,
 * is a folder and is writable. "OPT PATH: parent folder P does not exist",
 * EMA_ERR_INPUT. */
int ema_out_check_parent(const char *opt, const char *path, struct ema_error *err);

/* Removes leftovers BASE.tmp-[HOST-]PID of dead processes of this machine
 * beside path (a note on stderr for each). *live is set to the writer of
 * one that may be being written (live->pid 0 when none; NULL when not
 * wanted): a live process here, or one of another machine, which cannot
 * be asked. */
int ema_out_clean_leftovers(const char *path, struct ema_out_writer *live,
			    struct ema_error *err);
/* "process PID", or "process PID on HOST (remove it if ...)". */
void ema_out_writer_text(const struct ema_out_writer *w, char *buf, size_t n);

/* Registers path (a temporary file or folder) for removal on SIGINT,
 * SIGTERM and SIGHUP; returns its slot (-1 when the list is full: then it
 * is only not removed on a signal). */
int ema_cleanup_add(const char *path);
/* Unregisters a slot (after the rename, or after removing it). */
void ema_cleanup_drop(int slot);
/* Registers a worker process: SIGINT, SIGTERM and SIGHUP received here are
 * passed on to it (it removes its own unfinished output) before this
 * process dies of the signal. Returns -1 when the list is full. */
int ema_cleanup_add_child(pid_t pid);
void ema_cleanup_drop_child(pid_t pid);
/* In a process just forked: forgets the parent's registrations (folders
 * and workers) without removing anything, so that the child's own start
 * afresh and a signal here never removes the parent's folders. */
void ema_cleanup_forked(void);

/* Finishes a file written through stdio by a writer that returned rc
 * (EMA_ERR_IO when it saw ferror): flushes and closes f. Any failure is
 * "SHOWN: write failed: REASON" (REASON from errno, e.g. "No space left on
 * device"), EMA_ERR_IO. Set errno to 0 before the writer runs. */
int ema_file_close(FILE *f, int rc, const char *shown, struct ema_error *err);

/* True for a name NAME.tmp-HOST-DIGITS or NAME.tmp-DIGITS: a folder
 * being written, or left by a killed run; never a result. */
bool ema_out_is_tmp_name(const char *name);

/* Removes a file, or a folder and everything in it, without following
 * symbolic links. */
void ema_remove_tree(const char *path);

#endif
