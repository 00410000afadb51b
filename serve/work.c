/* work.c: what one batch iteration computes and reads (FLOPs, activation
 * and KV bytes), from the model's shapes; how long that takes is the
 * platform's business (sim/timing.c models it, the GPUs just do it). */
#include "work.h"

#include <math.h>

double ema_work_linear_flops(const struct ema_model *m, int64_t tokens)
{
	double params = m->params_b * 1e9 / (m->tensor_parallel > 0 ? m->tensor_parallel : 1);

	return 2.0 * params * (double)tokens;
}

double ema_work_attention_flops(const struct ema_model *m, int64_t ctx_before,
				int64_t new_tokens)
{
	int tp = m->tensor_parallel > 0 ? m->tensor_parallel : 1;
	double per_pos = 4.0 * m->layers * (double)m->heads * m->head_dim / tp;
	double n = (double)new_tokens;
	/* sum over i = 1..n of (ctx_before + i) */
	double positions = n * (double)ctx_before + n * (n + 1.0) / 2.0;

	return per_pos * positions;
}

uint64_t ema_work_act_bytes(const struct ema_model *m, int64_t tokens)
{
	int tp = m->tensor_parallel > 0 ? m->tensor_parallel : 1;
	/* Per layer, the residual stream is written and read a few times
	 * (attention in/out, FFN in/out): 4 x hidden, plus the FFN's
	 * intermediate (2 x ffn, sharded by TP). Small next to weights for
	 * decode; it matters only for long prefill chunks. */
	double per_token = (double)m->layers * m->bytes_per_param *
			   (4.0 * m->hidden + 2.0 * m->ffn / tp);

	return (uint64_t)(per_token * (double)tokens);
}

void ema_work_model_init(struct ema_work_model *w, const struct ema_model *m)
{
	int tp = m->tensor_parallel > 0 ? m->tensor_parallel : 1;
	double params = m->params_b * 1e9 / tp;

	/* the same expressions, in the same order, as the functions above */
	w->linear_per_token = 2.0 * params;
	w->attention_per_pos = 4.0 * m->layers * (double)m->heads * m->head_dim / tp;
	w->act_per_token = (double)m->layers * m->bytes_per_param *
			   (4.0 * m->hidden + 2.0 * m->ffn / tp);
	w->kv_per_token = ema_model_kv_bytes_per_token(m);
	w->act_one = (uint64_t)(w->act_per_token * 1.0);
}

void ema_work_add_request(struct ema_iteration *it, const struct ema_model *m,
			  int64_t ctx_before, int64_t chunk, uint64_t *kv_read_bytes)
{
	struct ema_work_model w;
	struct ema_work_sum sum = { 0 };

	/* each sum starts at 0: adding it adds the same doubles */
	ema_work_model_init(&w, m);
	ema_work_add(&sum, &w, ctx_before, chunk, kv_read_bytes);
	it->n_seqs += sum.n_seqs;
	it->prefill_tokens += sum.prefill_tokens;
	it->decode_tokens += sum.decode_tokens;
	it->flops += sum.flops;
	it->attention_flops += sum.attention_flops;
	it->act_bytes += sum.act_bytes;
}
