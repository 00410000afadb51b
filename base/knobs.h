/* knobs.h: the serving model's knobs and the knobs of the shipped
 * policies, as plain structs. config/ parses them (scenario keys
 * `serving.*` and `policy.*`); the engine, the policies and the platforms
 * read them without depending on the configuration layer. */
#ifndef EMA_KNOBS_H
#define EMA_KNOBS_H

#include <stdbool.h>

#include "ema_limits.h"

/* vLLM-like continuous batching knobs (serve/). */
struct ema_serving_cfg {
	int block_tokens;
	int max_batch;                /* running requests */
	int max_batch_tokens;         /* tokens per iteration */
	bool chunked_prefill;
	double watermark;             /* share of KV pages kept free at admission */
	int layer_groups;             /* granularity of prefetch pipelining */
};

/* Knobs of the elastic policies (issue 3). Each policy reads the ones it
 * needs; policies/POLICY.c documents which. */
struct ema_policy_cfg {
	double ideal_factor;          /* ideal: capacity multiplier */
	double lender_floor;          /* share of a lender's KV pages it never lends */
	double lender_reserve;        /* share of a lender's KV pages kept free for its bursts */
	double max_remote_share;      /* cap of a borrower's KV held remotely */
	int prefetch_depth;           /* layer groups fetched ahead */
	double headroom;              /* share of a lender's KV pages kept free by reclaiming ahead */
	char reclaim_mode[EMA_NAME_MAX]; /* "auto", "move", "host", "drop" */
	double host_gib;              /* host memory for swap/demotion per GPU */
	char copy_method[EMA_NAME_MAX];  /* "gather", "batch", "per_page" */
	char borrow_rule[EMA_NAME_MAX];  /* ema: "always", or "throughput" (only where it pays) */
	double lender_max_slowdown;   /* ema: cap on a lender's HBM slowdown from pulls (0 = none) */
};

#endif
