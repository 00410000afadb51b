/* hw_attn.c: the plain-C part of remote attention on the hw backend
 * (hw_attn.h): the page geometry, the split-K merge, how pages become
 * sequences, and the CPU reference. Built with or without CUDA. */
#include "hw_attn.h"

#include "ema_error.h"
#include "hardware.h"

#include <string.h>

int ema_hwa_geom_init(struct ema_hwa_geom *g, const struct ema_model *m, uint64_t page_bytes,
		      struct ema_error *err)
{
	int tp = m != NULL && m->tensor_parallel > 1 ? m->tensor_parallel : 1;
	int layers = m != NULL && m->layers > 0 ? m->layers : 32;
	int heads = m != NULL && m->heads > 0 ? m->heads : 32;
	int kv_heads = m != NULL && m->kv_heads > 0 ? m->kv_heads : (m != NULL && m->heads > 0 ? heads : 8);
	int head_dim = m != NULL && m->head_dim > 0 ? m->head_dim : 128;
	int group;

	memset(g, 0, sizeof *g);
	if (heads % kv_heads != 0 || heads < kv_heads)
		return ema_error_set(err, EMA_ERR_UNSUPPORTED,
				     "remote attention: %d heads are not a multiple of %d KV heads",
				     heads, kv_heads);
	group = heads / kv_heads;
	if (group != 1 && group != 2 && group != 4 && group != 8)
		return ema_error_set(err, EMA_ERR_UNSUPPORTED,
				     "remote attention: %d query heads per KV head; the kernel "
				     "takes 1, 2, 4 or 8", group);
	if (head_dim != 64 && head_dim != 128 && head_dim != 256)
		return ema_error_set(err, EMA_ERR_UNSUPPORTED,
				     "remote attention: head_dim %d; the kernel takes 64, 128 "
				     "or 256", head_dim);
	if (layers > EMA_HWA_MAX_LAYERS)
		return ema_error_set(err, EMA_ERR_UNSUPPORTED,
				     "remote attention: %d layers, at most %d", layers,
				     EMA_HWA_MAX_LAYERS);
	if (kv_heads % tp != 0)
		return ema_error_set(err, EMA_ERR_UNSUPPORTED,
				     "remote attention: %d KV heads do not split over %d GPUs",
				     kv_heads, tp);
	kv_heads /= tp;
	g->layers = layers;
	g->kv_heads = kv_heads;
	g->group = group;
	g->head_dim = head_dim;
	g->page_bytes = page_bytes;
	/* K and V in fp16 */
	g->token_bytes = (uint64_t)layers * (uint64_t)kv_heads * (uint64_t)head_dim * 4;
	if (page_bytes / g->token_bytes < 1 || page_bytes / g->token_bytes > (1u << 20))
		return ema_error_set(err, EMA_ERR_UNSUPPORTED,
				     "remote attention: a page of %llu bytes holds %llu tokens "
				     "of %llu bytes (%d layers x %d KV heads x %d x K and V in "
				     "fp16); it must hold 1 to 2^20",
				     (unsigned long long)page_bytes,
				     (unsigned long long)(page_bytes / g->token_bytes),
				     (unsigned long long)g->token_bytes, layers, kv_heads, head_dim);
	g->page_tokens = (int)(page_bytes / g->token_bytes);
	return 0;
}

void ema_hwa_merge(int n, const float *lse, const float *const *o, int head_dim, float *out,
		   float *out_lse)
{
	float top = -INFINITY;
	double sum = 0;

	for (int i = 0; i < n; i++)
		if (lse[i] > top)
			top = lse[i];
	for (int d = 0; d < head_dim; d++)
		out[d] = 0.0f;
	if (top == -INFINITY) {
		*out_lse = -INFINITY;
		return;
	}
	for (int i = 0; i < n; i++) {
		double w;

		if (lse[i] == -INFINITY)
			continue;
		w = exp((double)lse[i] - (double)top);
		sum += w;
		for (int d = 0; d < head_dim; d++)
			out[d] += (float)(w * (double)o[i][d]);
	}
	for (int d = 0; d < head_dim; d++)
		out[d] = (float)((double)out[d] / sum);
	*out_lse = (float)((double)top + log(sum));
}

int ema_hwa_seqs(int n_seqs, int most_pages)
{
	int s = n_seqs;

	if (s > EMA_HWA_MAX_SEQS)
		s = EMA_HWA_MAX_SEQS;
	if (s > most_pages)
		s = most_pages;
	return s < 1 ? 1 : s;
}

void ema_hwa_assign(int n_pages, int n, int32_t *first)
{
	for (int s = 0; s <= n; s++)
		first[s] = (int32_t)((int64_t)n_pages * s / n);
}

int ema_hwa_valid(const struct ema_hwa_geom *g, uint64_t bytes, int n_pages)
{
	uint64_t per, t;

	if (n_pages <= 0 || bytes == 0)
		return 0;
	per = bytes / (uint64_t)n_pages;
	t = (per + g->token_bytes - 1) / g->token_bytes;
	if (t < 1)
		t = 1;
	return t > (uint64_t)g->page_tokens ? g->page_tokens : (int)t;
}

int ema_hwa_splits(int n_seqs, int kv_heads, int most_pages, int sms)
{
	int64_t rows = (int64_t)(n_seqs > 0 ? n_seqs : 1) * (kv_heads > 0 ? kv_heads : 1);
	int64_t want = 4 * (int64_t)(sms > 0 ? sms : 1);
	int64_t s = (want + rows - 1) / rows;

	if (s > most_pages)
		s = most_pages;
	if (s > EMA_HWA_MAX_SPLITS)
		s = EMA_HWA_MAX_SPLITS;
	return s < 1 ? 1 : (int)s;
}

int ema_hwa_samples(int layers, int n_seqs, bool all, int32_t *layer, int32_t *seq, int cap)
{
	int64_t pairs = (int64_t)layers * n_seqs;
	int n = 0;

	if (layers <= 0 || n_seqs <= 0 || cap <= 0)
		return 0;
	if (all) {
		int64_t k = pairs < cap ? pairs : cap;

		for (int64_t i = 0; i < k; i++, n++) {
			int64_t at = i * pairs / k;

			layer[n] = (int32_t)(at / n_seqs);
			seq[n] = (int32_t)(at % n_seqs);
		}
		return n;
	}
	/* pair i of k: layer (2i + 1) x layers / 2k, sequence (2i + 1) x
	 * n_seqs / 2k: the middle of each k-th, so that two steps of one
	 * batch check the same pairs and none sits on an edge */
	{
		int k = pairs < EMA_HWA_SAMPLES ? (int)pairs : EMA_HWA_SAMPLES;

		for (int i = 0; i < k && n < cap; i++) {
			int32_t l = (int32_t)((int64_t)(2 * i + 1) * layers / (2 * k));
			int32_t s = (int32_t)((int64_t)(2 * i + 1) * n_seqs / (2 * k));
			bool dup = false;

			/* few layers or sequences can repeat a pair: once each */
			for (int j = 0; j < n; j++)
				dup |= layer[j] == l && seq[j] == s;
			if (dup)
				continue;
			layer[n] = l;
			seq[n] = s;
			n++;
		}
	}
	return n;
}

static float ref_elem(const struct ema_hwa_page_src *pg, uint64_t off)
{
	uint16_t bits;

	if (pg->mem != NULL) {
		const unsigned char *b = (const unsigned char *)pg->mem + off;

		bits = (uint16_t)(b[0] | (b[1] << 8));  /* little-endian, as the GPU */
		bits &= EMA_HWA_HALF_MASK;
	} else {
		bits = ema_hwa_tag_bits(pg->tag, off);
	}
	return ema_hwa_half(bits);
}

void ema_hwa_reference(const struct ema_hwa_geom *g, int layer, int head, const float *q,
		       int n_pages, const struct ema_hwa_page_src *pages, float *out, float *lse)
{
	int h = head / g->group, D = g->head_dim;
	double top = -INFINITY, sum = 0, acc[EMA_HWA_MAX_HEAD_DIM];
	double scale = 1.0 / sqrt((double)D);

	for (int d = 0; d < D; d++)
		acc[d] = 0;
	/* two passes: the largest score first, so that no exp overflows */
	for (int i = 0; i < n_pages; i++)
		for (int t = 0; t < pages[i].valid; t++) {
			double s = 0;

			for (int d = 0; d < D; d++)
				s += (double)q[d] *
				     (double)ref_elem(&pages[i], ema_hwa_offset(g, layer, h, 0, t, d));
			s *= scale;
			if (s > top)
				top = s;
		}
	for (int i = 0; i < n_pages; i++)
		for (int t = 0; t < pages[i].valid; t++) {
			double s = 0, w;

			for (int d = 0; d < D; d++)
				s += (double)q[d] *
				     (double)ref_elem(&pages[i], ema_hwa_offset(g, layer, h, 0, t, d));
			w = exp(s * scale - top);
			sum += w;
			for (int d = 0; d < D; d++)
				acc[d] += w * (double)ref_elem(&pages[i],
							       ema_hwa_offset(g, layer, h, 1, t, d));
		}
	if (sum <= 0) {
		for (int d = 0; d < D; d++)
			out[d] = 0.0f;
		*lse = -INFINITY;
		return;
	}
	for (int d = 0; d < D; d++)
		out[d] = (float)(acc[d] / sum);
	*lse = (float)(top + log(sum));
}

bool ema_hwa_close(const float *out, const float *ref, int n, double *err)
{
	double e = 0, big = 0;
	bool nan = false;

	for (int i = 0; i < n; i++) {
		double d = fabs((double)out[i] - (double)ref[i]);

		if (isnan(d))
			nan = true;
		else if (d > e)
			e = d;
		if (fabs((double)ref[i]) > big)
			big = fabs((double)ref[i]);
	}
	if (nan)
		e = NAN;
	if (err != NULL)
		*err = e;
	return !nan && e <= EMA_HWA_TOL * big + EMA_HWA_TOL_ABS;
}
