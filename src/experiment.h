/* experiment.h: one experiment = one scenario run under each of its
 * policies on exactly the same requests, on the simulator or on GPUs, with
 * the results gathered per (policy, tenant) and written as one folder. */
#ifndef EMA_EXPERIMENT_H
#define EMA_EXPERIMENT_H

#include <stdbool.h>
#include <stdio.h>

#include "config.h"
#include "engine.h"
#include "rows.h"
#include "outdir.h"
#include "workload.h"

enum ema_backend { EMA_BACKEND_SIM = 0, EMA_BACKEND_HW };

/* Figures that tell an unsaturated policy (throughput = offered load)
 * from a saturated one (throughput = capacity), from one tenant's request
 * records (doc/outputs.md, summary.csv). NAN where they cannot be
 * computed. */
struct ema_metrics {
	double window_start_s, window_end_s; /* the steady-state window, run time */
	/* output tokens of the requests finishing inside the window, over
	 * its length */
	double steady_tok_s;
	/* per request: output tokens / (finish - arrival), over completed
	 * requests */
	double user_tok_s_mean, user_tok_s_p50;
	/* share of completed requests meeting every SLO target set */
	double slo_attainment;
	/* requests finishing inside the window that meet every target, per
	 * second of the window */
	double goodput_req_s;
};

/* Computes m from n request records of one tenant (dropped and
 * unfinished ones included: they count for the window's end, not in the
 * figures). The window is [warmup_s, window_end_s] of run time, with
 * window_end_s 0 = the last arrival and warmup_s -1 = 10% of the end.
 * With no SLO target set, slo_attainment and goodput_req_s are NAN.
 * Returns EMA_ERR_NOMEM when scratch memory is short (m then all NAN). */
int ema_metrics_compute(const struct ema_request_record *r, size_t n,
			const struct ema_metrics_cfg *mc, const struct ema_slo_cfg *slo,
			struct ema_metrics *m);

/* Per (policy, tenant) figures: the rows of summary.csv. */
struct ema_tenant_result {
	char policy[EMA_NAME_MAX];
	char tenant[EMA_NAME_MAX];
	int gpu;
	int64_t requests, completed;
	int64_t dropped;        /* rejected: at arrival, or recomputed past admission */
	int32_t dropped_max_pages, max_request_pages, max_admit_pages;
	int64_t dropped_recomputed;        /* of dropped: preempted, never readmitted */
	int32_t dropped_recomputed_max_pages;
	int64_t reclaim_backoffs;          /* requests put on their own GPU's pages */
	int32_t reclaim_backoff_after;     /* ... after that many reclaims */
	int64_t dropped_backoff;           /* of dropped_recomputed: for that */
	int32_t dropped_backoff_max_pages;
	int64_t dropped_swapped;           /* of dropped_recomputed: swapped out for good */
	int32_t dropped_swapped_max_pages;
	int64_t dropped_yielded;           /* of dropped, not recomputed: oversize, yielded its turn */
	int32_t dropped_yielded_max_pages;
	int32_t kv_capacity_pages;
	double throughput_tok_s, req_s;
	double ttft_ms[3];      /* p50 p90 p99 */
	double tpot_ms[3];
	double e2e_ms[2];       /* p50 p99 */
	int64_t preemptions, swaps, recomputed_tokens;
	double kv_peak_gib, borrowed_peak_gib;
	double remote_share;    /* time-averaged share of KV held remotely */
	double stall_ms;        /* prefetch stall, total */
	double reclaim_wait_ms; /* as a lender, waiting for its pages */
	int64_t reclaims;       /* reclaims of this tenant's GPU */
	double reclaim_ms[3];   /* p50 p99 max */
	double lent_peak_gib;
	double remote_gib;      /* KV bytes read from peers */
	/* against the same tenant under static and ideal (NAN if not run) */
	double vs_static_throughput, vs_static_ttft_p50, vs_static_tpot_p50;
	double vs_static_ttft_p99, vs_static_tpot_p99;
	double vs_ideal_throughput;
	const char *guarantee;  /* "ok", "violated", "both" (lent and borrowed), "-" */
	/* Regime-separating figures (ema_metrics_compute); appended to
	 * summary.csv after the columns above. */
	struct ema_metrics metrics;
	double vs_static_steady, vs_ideal_steady; /* steady_tok_s ratios */
	/* Paired against static: the median, over the requests completed
	 * under both, of each request's TTFT (TPOT: of those with two output
	 * tokens or more) over its own under static. The policies replay the
	 * same requests at the same times, so this compares like with like
	 * where the ratio of two p50s can move by which request lands in the
	 * middle (a lender of 44 requests: TTFT p50 1.087 x static's, half
	 * its requests' own ratios within 0.98-1.04, median 1.000). NAN
	 * without static or without such requests. */
	double vs_static_ttft_paired, vs_static_tpot_paired;
};

struct ema_policy_run {
	char policy[EMA_NAME_MAX];
	struct ema_platform_params params; /* what its platform was built for */
	struct ema_engine *engine;     /* its results, until ema_experiment_free */
	struct ema_link_stats links;
	/* hw backend: pages whose content was checked after a move, and
	 * those found corrupted (a corruption also fails the run) */
	uint64_t pages_checked, pages_corrupted;
	uint64_t events;
	/* sim: decode leaps made and the iterations they ran (run.json; the
	 * outputs are those of stepping, these say how much was leapt) */
	uint64_t leaps, leapt_steps;
	uint64_t remote_steps;        /* iterations that read remote KV */
	double wall_s;
	struct ema_tenant_result results[EMA_MAX_TENANTS];
	int32_t lent_peak[EMA_MAX_GPUS];
	struct ema_rows rows;          /* requests.csv's rows, formatted as the run went */
};

/* Where the progress lines of the policy being run stand. */
struct progress {
	const char *label;
	double wall_start;
	int64_t lines;
};

struct ema_experiment {
	struct ema_config cfg;
	struct progress progress;
	enum ema_backend backend;
	bool verify;
	bool quiet;
	/* no notes on stderr either (a trace replay cut short, requests
	 * dropped, link contention): for a caller that runs many scenarios
	 * and reports what it needs from the results (tests/vs_static.c) */
	bool silent;
	/* requests.csv's rows are formatted beside each run (rows.h) where
	 * the machine has cores to spare (EMA_ROWS_MIN_CPUS online), else
	 * after the runs; rows_after and rows_beside force one way (the
	 * tests compare the two); rows_max: beside them only for runs of at
	 * most this many requests (0: EMA_ROWS_MAX) */
	bool rows_after, rows_beside;
	int64_t rows_max;
	int n_runs;
	struct ema_policy_run runs[EMA_MAX_POLICIES];
	struct ema_workload workloads[EMA_MAX_TENANTS];
	double wall_s;
	char command[4096];
};

/* Builds workloads and runs every policy of cfg. Progress on stderr unless
 * quiet. */
int ema_experiment_run(struct ema_experiment *x, struct ema_error *err);
void ema_experiment_free(struct ema_experiment *x);

/* Writes the run folder (config.json, run.json, summary.csv,
 * requests.csv, timeline.csv, links.csv, plots/) into od->tmp, reserved
 * by ema_outdir_reserve before the run, and renames it to od->path; on a
 * failure the folder is removed (ema_outdir_abort). */
int ema_experiment_write(struct ema_experiment *x, struct ema_outdir *od, bool plots,
			 struct ema_error *err);
/* The summary table for the terminal. */
void ema_experiment_print(const struct ema_experiment *x, FILE *out);
int ema_experiment_write_summary_csv(const struct ema_experiment *x, FILE *f);

/* Quantile q (0..1) of n values (sorted in place); NAN when n == 0. */
double ema_quantile(double *v, size_t n, double q);
/* ema_quantile for each of q[0..k) (ascending, else the values are
 * sorted as ema_quantile does) into out[], the same doubles, with v
 * reordered only as far as they need: a selection per quantile instead
 * of a sort (finite values). */
void ema_quantiles(double *v, size_t n, const double *q, int k, double *out);

#endif
