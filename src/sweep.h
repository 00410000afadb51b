/* sweep.h: what the parts of `ema sweep` share: the plan of a sweep (its
 * keys, its points and the hash of each point's effective configuration),
 * the sweep folder's manifest (sweep.json) that lets a sweep be resumed,
 * sharded over a cluster and merged, and the statistics over seeds. The
 * command is in sweep.c, the merge in sweep_merge.c. */
#ifndef EMA_SWEEP_H
#define EMA_SWEEP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

#include "cli.h"
#include "ema_error.h"
#include "sha256.h"

#define EMA_SWEEP_MAX_KEYS EMA_CLI_MAX_VARY
#define EMA_SWEEP_MAX_VALUES 64
#define EMA_SWEEP_MAX_POINTS 4096
#define EMA_SWEEP_VALUE_MAX 128

struct ema_sweep_key {
	char name[256];
	int n;
	char values[EMA_SWEEP_MAX_VALUES][EMA_SWEEP_VALUE_MAX];
};

/* A sweep: the cartesian product of its keys' values, point 0 first, the
 * last key varying fastest. */
struct ema_sweep {
	int n_keys;
	struct ema_sweep_key keys[EMA_SWEEP_MAX_KEYS];
	long n_points;
	int seed_key;                   /* the key "seed" with 2+ values, or -1 */
	char (*hash)[EMA_SHA256_HEX];   /* per point: sha256 of its config.json */
	char id[EMA_SHA256_HEX];        /* sha256 of the keys and the point hashes */
	char scenario[64];              /* the scenario's name (of point 0) */
	char dir[EMA_PATH_MAX];         /* the sweep folder */
	char command[4096];             /* the command that made it */
	bool exists;                    /* the folder is on disk (not: --dry-run) */
};

/* What the points of one invocation share: the sweep, the scenario and
 * the command's own --set and --seed (the point's values follow them). */
struct ema_sweep_run {
	struct ema_sweep *s;
	const char *config;
	const char *sets[EMA_CLI_MAX_SETS + EMA_SWEEP_MAX_KEYS];
	int n_sets;
	bool plots;                     /* the sweep's figures (DIR/figures/) */
	bool point_plots;               /* each point's plots/ (--point-plots) */
};

/* ---- claims of points (sweep_claim.c) ---- */

/* The owner of a claim refreshes it this often; a claim not refreshed for
 * EMA_CLAIM_STALE_S is taken to be a dead owner's (another machine's
 * process cannot be asked whether it lives). */
#define EMA_CLAIM_BEAT_S 60
#define EMA_CLAIM_STALE_S 600

enum ema_claim_result {
	EMA_CLAIM_OURS,   /* this process runs the point */
	EMA_CLAIM_DONE,   /* the point is complete */
	EMA_CLAIM_TAKEN   /* a live process runs it */
};

/* A claim held: DIR/point-NNN.claim ("HOST PID TIME"), refreshed by a
 * thread until released. */
struct ema_claim {
	char path[EMA_PATH_MAX + 64];
	int slot;
	bool held, beating, stop;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
};

struct ema_claim_owner {
	char host[64];
	long pid;
	double age_s;   /* since the claim was last refreshed */
	bool stale;     /* its owner is gone (here), or silent too long */
};

/* Claims point pt (O_EXCL), taking over a stale claim (with a note on
 * stderr). *res says whether the point is this process's to run, complete,
 * or taken by a live process (then *owner, when not NULL, says which). */
int ema_sweep_claim(const struct ema_sweep *s, long pt, struct ema_claim *c,
		    enum ema_claim_result *res, struct ema_claim_owner *owner,
		    struct ema_error *err);
/* Stops the refreshing and removes the claim. */
void ema_sweep_claim_release(struct ema_claim *c);
/* The claim of point pt as it is now: *held false when there is none. */
int ema_sweep_claim_read(const struct ema_sweep *s, long pt, bool *held,
			 struct ema_claim_owner *o);
/* "process PID on HOST, 12 s ago" for messages. */
void ema_claim_owner_text(const struct ema_claim_owner *o, char *buf, size_t n);

/* What became of a point a process set out to run. */
enum ema_point_outcome {
	EMA_POINT_RAN,      /* run and written now */
	EMA_POINT_DONE,     /* found complete */
	EMA_POINT_TAKEN     /* being run by another process */
};
/* A worker's exit status for DONE and TAKEN (0: RAN; 1 and 2: failed). */
#define EMA_POINT_EXIT_DONE 76
#define EMA_POINT_EXIT_TAKEN 75

/* Claims point pt and, when it is this process's, runs it and writes
 * DIR/point-NNN/, whole or not at all. *out says what became of it. */
int ema_sweep_run_point(struct ema_sweep_run *r, long pt, enum ema_point_outcome *out,
			struct ema_error *err);

/* The shard of this process: --shard I/N, else from SLURM_ARRAY_TASK_ID,
 * SLURM_ARRAY_TASK_COUNT, SLURM_ARRAY_TASK_MIN (and _STEP) when set, else
 * 0/1. *from says where it came from ("" for --shard or none). */
int ema_sweep_shard(const char *opt, long *i, long *n, char *from, size_t from_len,
		    struct ema_error *err);

/* --sbatch FILE: runs a trial of the sweep's first and last incomplete
 * points (they stay, complete) and writes FILE, the Slurm array job of
 * the sweep's shards and its merge job (sweep_slurm.c). */
int ema_sweep_sbatch(struct ema_sweep_run *r, const struct ema_cli_args *a,
		     struct ema_error *err);

/* --max-rate KEY --slo M=V,...: the capacity search of capacity.c, over
 * the combinations of r->s's keys (none: one), with up to jobs workers. */
int ema_capacity_exec(struct ema_sweep_run *r, const struct ema_cli_args *a, int jobs,
		      struct ema_error *err);

/* The figures of a sweep folder (NULL: none) and of a capacity search's
 * folder (NULL: none) into out (made when missing): tables, gnuplot
 * specs, PDF and PNG, render.sh (figures.c). A sweep without a numeric
 * key besides the seed draws no load figure and says why on stderr.
 * *drawn: the figures drawn (0 without gnuplot). */
int ema_figures_draw(const char *sweep_dir, const char *cap_dir, const char *out, bool quiet,
		     int *drawn, struct ema_error *err);

/* The value index of every key at point pt. */
void ema_sweep_point_idx(const struct ema_sweep *s, long pt, int *idx);
/* "KEY=VALUE" of every key at point pt, into sets[k] (512 bytes each). */
void ema_sweep_point_sets(const struct ema_sweep *s, long pt, char sets[][512]);
/* The name of point pt's folder: "point-NNN". */
void ema_sweep_point_name(long pt, char name[32]);
/* Parses "KEY=V1,V2,..." into k. EMA_ERR_INPUT with the reason. */
int ema_sweep_parse_vary(const char *arg, struct ema_sweep_key *k, struct ema_error *err);
/* Sets s->n_points and s->seed_key from the keys, allocates s->hash.
 * EMA_ERR_INPUT past EMA_SWEEP_MAX_POINTS. */
int ema_sweep_layout(struct ema_sweep *s, struct ema_error *err);
/* Computes s->id from the keys and the point hashes. */
void ema_sweep_compute_id(struct ema_sweep *s);
void ema_sweep_free(struct ema_sweep *s);

/* sweep.json, the manifest of a sweep folder: program, version, scenario,
 * command, keys and values, and every point's hash. Written once, when
 * the folder is made; read by a resumed sweep, a shard and the merge. */
int ema_sweep_write_manifest(const struct ema_sweep *s, FILE *f);
/* Reads DIR/sweep.json into s (keys, points, hashes, scenario, command;
 * s->dir = dir). EMA_ERR_INPUT "DIR: not a sweep folder ..." when it is
 * missing, "DIR/sweep.json: ..." when it cannot be read. */
int ema_sweep_read_manifest(struct ema_sweep *s, const char *dir, struct ema_error *err);

/* Whether point pt is complete: DIR/point-NNN exists (a point appears by
 * one rename, so it is whole). A complete point whose config.sha256 does
 * not hold the sweep's hash of that point is EMA_ERR_INPUT: the folder
 * mixes configurations. */
int ema_sweep_point_done(const struct ema_sweep *s, long pt, bool *done, struct ema_error *err);

/* Builds DIR/sweep.csv (every complete point's summary rows, the swept
 * values first), with seeds DIR/sweep_stats.csv, and with plots the
 * figures, from whatever points are complete; each file replaced whole.
 * The missing points are listed on stderr (their count in *missing).
 * Summary columns are read by name. */
int ema_sweep_merge(const struct ema_sweep *s, bool plots, bool quiet, long *missing,
		    struct ema_error *err);

/* The sentence that says how to run the missing points list[0..n-1]:
 * with the array's record (DIR/slurm/sbatch.json, written by --sbatch),
 * "sbatch --array=I,J SCRIPT" for the tasks that hold them. */
void ema_sweep_how_to_finish(const struct ema_sweep *s, const long *list, long n, char *buf,
			     size_t len);

/* Statistics over n values (repetitions over seeds): the mean and sample
 * standard deviation; and, for a metric whose values are all > 0, the
 * geometric mean with the 95% t interval on the log scale,
 * exp(mean(ln x) +- t(0.975, n-1) sd(ln x) / sqrt(n)), which stays above
 * zero as the metric does. With a value <= 0 (a zero count) the interval
 * is the t interval of the mean cut at 0 when every value is >= 0, and the
 * geometric mean is NAN. n < 2: sd and the interval are NAN. NAN values
 * are left out. Returns the number of values used. */
struct ema_sweep_stat {
	double mean, sd, gmean, lo, hi;
};
int ema_sweep_stat(const double *v, int n, struct ema_sweep_stat *st);

#endif
