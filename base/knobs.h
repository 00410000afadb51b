/* knobs.h: the serving model's knobs and the knobs of the shipped
 * policies, as plain structs. config/ parses them (scenario keys
 * `serving.*` and `policy.*`); the engine, the policies and the platforms
 * read them without depending on the configuration layer. */
#ifndef EMA_KNOBS_H
#define EMA_KNOBS_H

#include <stdbool.h>
#include <stddef.h>

#include "ema_limits.h"

/* Each choice below has its names, in enum order, NULL-terminated, in the
 * list beside it: the configuration parses and writes them from there. */

/* How a prefetch or a move copies pages (the platforms implement each). */
enum ema_copy_method {
	EMA_COPY_GATHER = 0,   /* "gather": SM kernel pulling scattered pages */
	EMA_COPY_BATCH,        /* "batch": cudaMemcpyBatchAsync-like, one call, many pages */
	EMA_COPY_PER_PAGE      /* "per_page": one cudaMemcpyPeerAsync per page */
};
extern const char *const ema_copy_method_names[];

/* What a lender's reclaim does with a borrower's request (lending.c). */
enum ema_reclaim_mode {
	EMA_RECLAIM_AUTO = 0,  /* "auto": move home if the borrower has room, else recompute */
	EMA_RECLAIM_MOVE,      /* "move": only move home */
	EMA_RECLAIM_HOST,      /* "host": demote to host memory, else recompute */
	EMA_RECLAIM_DROP       /* "drop": recompute */
};
extern const char *const ema_reclaim_mode_names[];

/* How ema reads a lender's pages (policies/ema.c, policy.ema.remote_path). */
enum ema_remote_path {
	EMA_PATH_INPLACE = 0,  /* "inplace": a share of the SMs reads it over the link, beside the local reads */
	EMA_PATH_STAGED,       /* "staged": copied into local staging pages by layer group, then read */
	EMA_PATH_AUTO,         /* "auto": per lender, the path whose budget allows the most */
	EMA_PATH_COMPUTE       /* "compute": the lender computes the attention over them (remote attention) */
};
extern const char *const ema_remote_path_names[];

/* What a lending policy does with a request whose whole KV is more than
 * its own GPU's, which static drops at arrival (serve/engine.c,
 * "Oversize requests"). */
enum ema_oversize_mode {
	EMA_OVERSIZE_DROP = 0, /* "drop": dropped at arrival, as under static */
	EMA_OVERSIZE_YIELD,    /* "yield": runs only while no request of its tenant waits behind it */
	EMA_OVERSIZE_WAIT      /* "wait": waits for borrowed pages like any other, the queue behind it too */
};
extern const char *const ema_oversize_mode_names[];

/* vLLM-like continuous batching knobs (serve/). */
struct ema_serving_cfg {
	int block_tokens;
	int max_batch;                /* running requests */
	int max_batch_tokens;         /* tokens per iteration */
	bool chunked_prefill;
	double watermark;             /* share of KV pages kept free at admission */
	int layer_groups;             /* granularity of prefetch pipelining */
	/* reclaims that take one request back before it runs on its own
	 * GPU's pages only (serve/engine.c, the reclaim backoff); 0: never */
	int reclaim_backoff;
	enum ema_oversize_mode oversize;
};

/* Knobs of the elastic policies (issue 3). Each policy reads the ones it
 * needs; policies/POLICY.c documents which. */
struct ema_policy_cfg {
	double ideal_factor;          /* ideal: capacity multiplier */
	double lender_floor;          /* share of a lender's KV pages it never lends */
	double lender_reserve;        /* share of a lender's KV pages kept free for its bursts */
	enum ema_reclaim_mode reclaim_mode;
	double host_gib;              /* host memory for swap/demotion per GPU */
	enum ema_copy_method copy_method;
	/* The own knobs of policies that declare a table of them
	 * (policies/policy.h), one block each, keys policy.NAME.KEY. */
	/* aligned for any field (a block of 256 bytes keeps each one so) */
	_Alignas(max_align_t) unsigned char own[EMA_MAX_KNOB_TABLES][EMA_KNOB_TABLE_BYTES];
};

#endif
