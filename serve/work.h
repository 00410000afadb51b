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

/* The model's constants of the cost model, computed once: the serving
 * model adds requests with ema_work_add, whose arithmetic is that of the
 * functions above operation for operation, so that sums built request by
 * request come out the same to the last bit. */
struct ema_work_model {
	double linear_per_token;   /* 2 x parameters / tensor_parallel */
	double attention_per_pos;  /* 4 x layers x heads x head_dim / tensor_parallel */
	double act_per_token;      /* activation bytes per token */
	uint64_t kv_per_token;
	uint64_t act_one;          /* activation bytes of one token, as ema_work_add rounds them */
};

void ema_work_model_init(struct ema_work_model *w, const struct ema_model *m);

/* The part of an iteration's work that requests add up. */
struct ema_work_sum {
	int n_seqs;
	int64_t prefill_tokens;
	int64_t decode_tokens;
	double flops;
	double attention_flops;
	uint64_t act_bytes;
};

/* One decode token at context ctx_before: the attention FLOPs, and the
 * term ema_work_add adds to the FLOPs (the same doubles: with one token,
 * n x ctx + n (n + 1) / 2 is ctx + 1 exactly). */
static inline double ema_work_decode_attn(const struct ema_work_model *w, int64_t ctx_before)
{
	return w->attention_per_pos * ((double)ctx_before + 1.0);
}

/* ema_work_add_request into a sum, with the constants of w. */
static inline void ema_work_add(struct ema_work_sum *s, const struct ema_work_model *w,
				int64_t ctx_before, int64_t chunk, uint64_t *kv_read_bytes)
{
	int64_t tokens = chunk > 0 ? chunk : 1;
	double n, attn;

	if (chunk <= 0) {
		/* a decode token, most calls: n = 1 makes the general terms
		 * ctx + 1 and 1 x linear exactly, the activations act_one */
		attn = ema_work_decode_attn(w, ctx_before);
		s->n_seqs++;
		s->decode_tokens += 1;
		s->flops += w->linear_per_token + attn;
		s->attention_flops += attn;
		s->act_bytes += w->act_one;
		*kv_read_bytes = (uint64_t)ctx_before * w->kv_per_token;
		return;
	}
	n = (double)tokens;
	attn = w->attention_per_pos * (n * (double)ctx_before + n * (n + 1.0) / 2.0);
	s->n_seqs++;
	if (chunk > 0)
		s->prefill_tokens += chunk;
	else
		s->decode_tokens += 1;
	s->flops += w->linear_per_token * (double)tokens + attn;
	s->attention_flops += attn;
	s->act_bytes += (uint64_t)(w->act_per_token * (double)tokens);
	*kv_read_bytes = (uint64_t)ctx_before * w->kv_per_token;
}

/* Adds one request's share of work to an iteration: a prefill chunk of
 * `chunk` tokens after `ctx_before` computed ones, or (chunk == 0) one
 * decode token at context `ctx_before`. KV bytes read are returned in
 * *kv_read_bytes for the caller to split into local and remote. */
void ema_work_add_request(struct ema_iteration *it, const struct ema_model *m,
			  int64_t ctx_before, int64_t chunk, uint64_t *kv_read_bytes);

#endif
