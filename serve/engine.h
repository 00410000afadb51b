/* engine.h: the serving model. One tenant is one LLM instance on one GPU
 * doing continuous batching as vLLM does (FCFS admission above a watermark,
 * caps on batch size and tokens per iteration, optional chunked prefill,
 * KV in blocks, preemption of the newest request when memory runs out).
 * The engine owns the page ledger and calls the policy at each decision
 * (borrow, reclaim, preempt, prefetch); it runs on any platform
 * (base/platform.h) and never looks at whether time is simulated. This is
 * its interface to the layers above: build, run, read the results; the
 * engine's state is private to serve/ (engine_priv.h). */
#ifndef EMA_ENGINE_H
#define EMA_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "platform.h"
#include "policy.h"
#include "workload.h"

struct ema_engine;

/* Per-tenant counters that end up in summary.csv. */
struct ema_tenant_stats {
	int64_t iterations;
	int64_t preemptions;
	int64_t swaps;
	int64_t recomputed_tokens;
	int64_t generated_tokens;
	int32_t kv_peak_pages;        /* local + borrowed */
	int32_t borrowed_peak_pages;
	double kv_page_ns;            /* integral of KV pages held over time */
	double remote_page_ns;        /* integral of remote KV pages held */
	int64_t stall_ns;             /* prefetch stalls */
	int64_t reclaim_wait_ns;      /* time this tenant (as lender) waited for its pages */
	int64_t busy_ns;              /* time with an iteration in flight */
	uint64_t remote_bytes;        /* KV bytes read from other GPUs */
	int64_t dropped;              /* requests rejected: at arrival, or recomputed */
	int32_t dropped_max_pages;    /* the largest KV (pages) of those at arrival */
	int64_t dropped_recomputed;   /* of dropped: preempted past what can be admitted */
	int32_t dropped_recomputed_max_pages; /* the largest prompt + output so far */
	/* Reclaim backoff (engine.c): requests that reclaims took back
	 * serving.reclaim_backoff times and that ran on their own GPU's pages
	 * from then on; of dropped_recomputed, those dropped because their
	 * whole KV is more than their GPU's, the largest of them (pages). */
	int64_t reclaim_backoffs;
	int64_t dropped_backoff;
	int32_t dropped_backoff_max_pages;
	/* of dropped_recomputed, swapped-out requests that could never come
	 * back (engine.c, drop_stuck_swapped), the most pages one needed */
	int64_t dropped_swapped;
	int32_t dropped_swapped_max_pages;
	/* of dropped, not of dropped_recomputed: requests whose whole KV is
	 * more than their GPU's, dropped at the front of the queue where they
	 * could not start and the request behind them could (engine.c,
	 * oversize_yields), the largest of them (pages) */
	int64_t dropped_yielded;
	int32_t dropped_yielded_max_pages;
};

/* A reclaim: a lender asked for pages back; latency to pages free. */
struct ema_reclaim_record {
	int lender_gpu;
	int32_t pages;
	int64_t start_ns;
	int64_t latency_ns;
};

struct ema_timeline_sample {
	double time_s;
	int gpu;
	int32_t weights, kv_used, staging, free_pages, lent, borrowed;
};

/* One request as the run left it: times in ns from the start, -1 for an
 * event that did not happen. */
struct ema_request_record {
	int32_t id;              /* index in its tenant's stream, arrival order */
	int64_t arrival_ns, first_token_ns, finish_ns;
	int32_t prompt_tokens, output_tokens, preemptions;
	bool dropped;            /* rejected: could never fit, or never be readmitted */
	int32_t generated_tokens; /* output tokens produced by the run's end (each once) */
};

/* Where a run stands, for progress reports. */
struct ema_progress {
	int64_t done_requests, total_requests;
	int64_t now_ns;          /* simulated or real time */
};
/* Called after every iteration while a progress function is set: keep
 * it cheap (it decides itself how often to print). */
typedef void (*ema_progress_fn)(void *arg, const struct ema_progress *p);

/* Where final records go while the engine runs (ema_engine_stream_records):
 * one call per request, each tenant's in id order. Returns EMA_OK or an
 * error code with err set; an error stops the run with it. */
typedef int (*ema_record_fn)(void *arg, int tenant, const struct ema_request_record *r,
			     struct ema_error *err);

/* Builds the engine for one policy over the given workloads (one per
 * tenant, not consumed, read while it runs: they outlive its run) on a platform built from
 * ema_engine_platform_params for the same policy. */
int ema_engine_new(struct ema_engine **out, const struct ema_config *cfg,
		   const struct ema_policy_ops *policy, struct ema_platform *platform,
		   const struct ema_workload *workloads, struct ema_error *err);
void ema_engine_free(struct ema_engine *e);
/* The hw backend needs the page numbers of every iteration (the
 * simulator only their counts): off by default. */
void ema_engine_set_page_lists(struct ema_engine *e, bool on);
/* Decode leaping: while a tenant's decode batch can change only by its
 * own steps and no other tenant can see them, the platform runs its
 * steps as one event; the results are those of stepping, byte for byte
 * (tests/test_leap.c). On by default (EMA_LEAP_DEFAULT, configure
 * --disable-leap), where the policy and the platform allow it; off
 * steps one iteration at a time. */
void ema_engine_set_leap(struct ema_engine *e, bool on);
bool ema_engine_leap(const struct ema_engine *e);
/* A leap's steps' plans (leap_ok's plan_each) through the policy's
 * plan_leap, all at once, where it has one: on by default; off calls
 * plan_iteration step by step, the check that plan_leap changes nothing
 * (EMA_PLAN_LEAP=0 from the command line; tests/test_leap.c). */
void ema_engine_set_plan_leap(struct ema_engine *e, bool on);
/* The reclaim backoff's count (serving.reclaim_backoff; INT32_MAX when
 * it is off): a request that lenders' reclaims took back that many times
 * runs on its own GPU's pages only. */
int32_t ema_engine_reclaim_backoff(const struct ema_engine *e);
/* Leaps made so far and the iterations they ran (a check that leaping
 * happened; no output shows them). */
uint64_t ema_engine_leaps(const struct ema_engine *e, uint64_t *steps);
/* Iterations started that read remote KV (in place or staged): each is an
 * event of its own, since a step that reads remote KV never leaps. */
uint64_t ema_engine_remote_steps(const struct ema_engine *e);
void ema_engine_on_progress(struct ema_engine *e, ema_progress_fn fn, void *arg);
/* Streams the records: each request's record goes to fn once it is final
 * (done or dropped; each tenant's in id order, as its first requests all
 * are), and the rest (in flight or never arrived at a horizon) at the end
 * of a run that succeeds; the request's state is then freed, so that the
 * engine holds only the requests in flight. Set before ema_engine_run;
 * ema_engine_request may not be called afterwards (the records are
 * fn's). */
void ema_engine_stream_records(struct ema_engine *e, ema_record_fn fn, void *arg);
/* Streams the timeline: its samples go to fn in order, some thousands at
 * a time as they are recorded and the rest at the end of a run that
 * succeeds, so that ema_engine_timeline then gives none of them. */
typedef int (*ema_timeline_fn)(void *arg, const struct ema_timeline_sample *s, int32_t n,
			       struct ema_error *err);
void ema_engine_stream_timeline(struct ema_engine *e, ema_timeline_fn fn, void *arg);
/* Tells the configuration which policies exist and their knob tables
 * (the registry, ema_policy_table, or a test's own NULL-terminated list):
 * the program calls it once at start-up, before loading a scenario. */
int ema_engine_register_policies(const struct ema_policy_ops *const *table);
/* Whether a run of `policy` fits the engine's counts: every pool (a
 * GPU's memory times the policy's memory factor, a GPU's share of host
 * memory) holds at most EMA_MAX_POOL_PAGES pages. EMA_ERR_INPUT with a
 * message naming the keys otherwise; ema_engine_new checks it too, and a
 * program checks every policy's before the first one runs. */
int ema_engine_check_limits(const struct ema_config *cfg, const struct ema_policy_ops *policy,
			    struct ema_error *err);
/* The platform a run of `policy` needs (pools of its memory factor),
 * computed here once for every backend; the engine checks that its
 * platform was built from the same. EMA_ERR_INPUT when no page fits or
 * ema_engine_check_limits refuses. */
int ema_engine_platform_params(struct ema_platform_params *p, const struct ema_config *cfg,
			       const struct ema_policy_ops *policy);
/* Runs to completion (or the horizon); results stay in the engine. The
 * platform must outlive the run; results can be read after it is gone. */
int ema_engine_run(struct ema_engine *e, struct ema_error *err);

/* ---- results, after ema_engine_run ---- */
int ema_engine_n_tenants(const struct ema_engine *e);
int ema_engine_tenant_gpu(const struct ema_engine *e, int tenant);
int32_t ema_engine_n_requests(const struct ema_engine *e, int tenant);
/* Request k's record. With a record sink (ema_engine_stream_records) the
 * records handed to it are freed as the run goes: reading one of those
 * aborts, and a caller that reads the engine's records after the run sets
 * no sink (struct ema_experiment's rows_beside). */
void ema_engine_request(const struct ema_engine *e, int tenant, int32_t k,
			struct ema_request_record *out);
/* How many of the tenant's first requests are done or dropped: their
 * records are final. The one call (with ema_engine_request of those
 * requests, ema_engine_n_requests) that another thread may make while
 * the engine runs: rows of them can be written as the run goes. */
int32_t ema_engine_requests_final(const struct ema_engine *e, int tenant);
const struct ema_tenant_stats *ema_engine_tenant_stats(const struct ema_engine *e, int tenant);
/* The KV pages of the tenant's own GPU, and the most one request could hold. */
int32_t ema_engine_kv_capacity(const struct ema_engine *e, int tenant);
int32_t ema_engine_max_request_pages(const struct ema_engine *e, int tenant);
/* ... and the most it can be admitted with (its prompt's KV). */
int32_t ema_engine_max_admit_pages(const struct ema_engine *e, int tenant);
int64_t ema_engine_total_requests(const struct ema_engine *e);
uint64_t ema_engine_page_bytes(const struct ema_engine *e);
/* Simulated or real time of the last event, ns. */
int64_t ema_engine_end_ns(const struct ema_engine *e);
const struct ema_reclaim_record *ema_engine_reclaims(const struct ema_engine *e, int32_t *n);
const struct ema_timeline_sample *ema_engine_timeline(const struct ema_engine *e, int32_t *n);

#endif
