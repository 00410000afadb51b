/* costmodel.h: how long one batch iteration takes on a GPU, from the
 * hardware profile and the model's shapes. The simulator turns iterations
 * into time with it; policies use it to estimate how much remote KV a
 * prefetch can hide behind one iteration. Equations and sources are in
 * README.md ("Cost model"). */
#ifndef EMA_COSTMODEL_H
#define EMA_COSTMODEL_H

#include <stdint.h>

#include "config.h"
#include "platform.h"

/* Time of one iteration split into its parts, in ns, without interference
 * from transfers (the platform adds that). */
struct ema_cost {
	double overhead_ns;      /* fixed per-iteration cost */
	double compute_ns;       /* FLOPs / (peak x efficiency) */
	double memory_ns;        /* local HBM bytes / (HBM x efficiency), staged remote KV included */
	double remote_inplace_ns;/* remote KV read over the link in place (prefetch_depth 0) */
	double total_ns;         /* overhead + max(compute, memory + remote_inplace) */
	double memory_bound_share; /* share of the busy time that is bandwidth-bound, 0..1 */
};

/* FLOPs of the linear layers for `tokens` tokens: 2 x parameters per token. */
double ema_cost_linear_flops(const struct ema_model *m, int64_t tokens);

/* Attention FLOPs of `new_tokens` tokens appended after `ctx_before` tokens:
 * QK^T and AV cost 4 x layers x heads x head_dim per (token, context
 * position), and token i sees ctx_before + i + 1 positions. */
double ema_cost_attention_flops(const struct ema_model *m, int64_t ctx_before,
				int64_t new_tokens);

/* Activation bytes written and read for `tokens` tokens (all layers). */
uint64_t ema_cost_act_bytes(const struct ema_model *m, int64_t tokens);

/* Adds one request's share of work to an iteration: a prefill chunk of
 * `chunk` tokens after `ctx_before` computed ones, or (chunk == 0) one
 * decode token at context `ctx_before`. KV bytes read are returned in
 * *kv_read_bytes for the caller to split into local and remote. */
void ema_cost_add_request(struct ema_iteration *it, const struct ema_model *m,
			  int64_t ctx_before, int64_t chunk, uint64_t *kv_read_bytes);

void ema_cost_iteration(const struct ema_hw_profile *hw, const struct ema_model *m,
			const struct ema_iteration *it, struct ema_cost *out);

/* Seconds to move `bytes` over an idle link at its full rate. */
double ema_cost_link_ns(const struct ema_hw_profile *hw, uint64_t bytes);

#endif
