/* work.h: the work of one batch iteration (FLOPs, activation and KV bytes)
 * from the model's shapes, accounted by the serving model into the
 * iteration it hands to a platform. Equations and sources are in the
 * model documentation ("Cost model"). */
#ifndef EMA_WORK_H
#define EMA_WORK_H

#include <stdint.h>

#include "hardware.h"
#include "platform.h"

/* FLOPs of the linear layers for `tokens` tokens: 2 x parameters per token. */
double ema_work_linear_flops(const struct ema_model *m, int64_t tokens);

/* Attention FLOPs of `new_tokens` tokens appended after `ctx_before` tokens:
 * QK^T and AV cost 4 x layers x heads x head_dim per (token, context
 * position), and token i sees ctx_before + i + 1 positions. */
double ema_work_attention_flops(const struct ema_model *m, int64_t ctx_before,
				int64_t new_tokens);

/* Activation bytes written and read for `tokens` tokens (all layers). */
uint64_t ema_work_act_bytes(const struct ema_model *m, int64_t tokens);

/* Adds one request's share of work to an iteration: a prefill chunk of
 * `chunk` tokens after `ctx_before` computed ones, or (chunk == 0) one
 * decode token at context `ctx_before`. KV bytes read are returned in
 * *kv_read_bytes for the caller to split into local and remote. */
void ema_work_add_request(struct ema_iteration *it, const struct ema_model *m,
			  int64_t ctx_before, int64_t chunk, uint64_t *kv_read_bytes);

#endif
