/* costmodel.c: the iteration time model. A step is bounded by the larger
 * of its compute time and its memory time (roofline), plus a fixed
 * overhead; see README.md "Cost model" for the sources of each figure. */
#include "costmodel.h"

#include <math.h>

double ema_cost_linear_flops(const struct ema_model *m, int64_t tokens)
{
	double params = m->params_b * 1e9 / (m->tensor_parallel > 0 ? m->tensor_parallel : 1);

	return 2.0 * params * (double)tokens;
}

double ema_cost_attention_flops(const struct ema_model *m, int64_t ctx_before,
				int64_t new_tokens)
{
	int tp = m->tensor_parallel > 0 ? m->tensor_parallel : 1;
	double per_pos = 4.0 * m->layers * (double)m->heads * m->head_dim / tp;
	double n = (double)new_tokens;
	/* sum over i = 1..n of (ctx_before + i) */
	double positions = n * (double)ctx_before + n * (n + 1.0) / 2.0;

	return per_pos * positions;
}

uint64_t ema_cost_act_bytes(const struct ema_model *m, int64_t tokens)
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

void ema_cost_add_request(struct ema_iteration *it, const struct ema_model *m,
			  int64_t ctx_before, int64_t chunk, uint64_t *kv_read_bytes)
{
	int64_t tokens = chunk > 0 ? chunk : 1;
	double attn = ema_cost_attention_flops(m, ctx_before, tokens);

	it->n_seqs++;
	if (chunk > 0)
		it->prefill_tokens += chunk;
	else
		it->decode_tokens += 1;
	it->flops += ema_cost_linear_flops(m, tokens) + attn;
	it->attention_flops += attn;
	it->act_bytes += ema_cost_act_bytes(m, tokens);
	/* Attention reads the KV of every earlier position once per step. */
	*kv_read_bytes = (uint64_t)ctx_before * ema_model_kv_bytes_per_token(m);
}

void ema_cost_iteration(const struct ema_hw_profile *hw, const struct ema_model *m,
			const struct ema_iteration *it, struct ema_cost *out)
{
	double flops_per_ns = hw->peak_tflops * 1e3 * hw->flops_efficiency;
	double hbm_bytes_per_ns = hw->hbm_read_gbps * hw->hbm_efficiency;
	double remote_bytes_per_ns = hw->remote_read_gbps * hw->hbm_efficiency;
	double local = (double)it->weight_bytes + (double)it->kv_local_bytes +
		       (double)it->act_bytes;
	double remote = 0.0;
	double mem;

	(void)m;
	for (int i = 0; i < it->n_remote; i++)
		remote += (double)it->remote[i].bytes;
	out->overhead_ns = hw->iter_overhead_us * 1e3;
	out->compute_ns = flops_per_ns > 0 ? it->flops / flops_per_ns : 0.0;
	if (it->prefetch_depth > 0) {
		/* Staged KV is read from local HBM like any other KV. */
		out->memory_ns = (local + remote) / hbm_bytes_per_ns;
		out->remote_inplace_ns = 0.0;
	} else {
		out->memory_ns = local / hbm_bytes_per_ns;
		out->remote_inplace_ns = remote > 0 ? remote / remote_bytes_per_ns : 0.0;
	}
	mem = out->memory_ns + out->remote_inplace_ns;
	out->total_ns = out->overhead_ns + fmax(out->compute_ns, mem);
	out->memory_bound_share = (mem + out->compute_ns) > 0 ?
		(mem >= out->compute_ns ? 1.0 : mem / out->compute_ns) : 0.0;
}

double ema_cost_link_ns(const struct ema_hw_profile *hw, uint64_t bytes)
{
	return hw->link_gbps > 0 ? (double)bytes / hw->link_gbps : 0.0;
}
