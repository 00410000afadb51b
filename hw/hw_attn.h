/* hw_attn.h: remote attention on the hw backend (policy.ema.remote_path=compute),
 * the part that is plain C: the layout of K and V in a pool page, what a
 * page holds (its tag's pattern read as fp16), the queries, the split-K
 * merge of partial outputs, how an iteration's pages become sequences, and
 * a CPU reference of the attention with the tolerance the GPU results are
 * held to. The inline functions are shared with the device code
 * (hw_attn.cu), so that both compute the same values; the rest is tested
 * on machines without a GPU (tests/test_hw_attn_ref.c). */
#ifndef EMA_HW_ATTN_H
#define EMA_HW_ATTN_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hw_pattern.h"

#ifdef __CUDACC__
#define EMA_HWA_FN __host__ __device__ static inline
#else
#define EMA_HWA_FN static inline
#endif

/* Query heads per KV head (grouped-query attention) the kernel takes: 1,
 * 2, 4 or 8; head dimensions: 64, 128 or 256. */
#define EMA_HWA_MAX_GROUP 8
#define EMA_HWA_MAX_HEAD_DIM 256
/* Layers (one synchronisation each) and parts (the borrower's local pages
 * and one part per lender) of one step. */
#define EMA_HWA_MAX_LAYERS 256
#define EMA_HWA_MAX_PARTS 17
/* Sequences of one step: the batch, at most this many. */
#define EMA_HWA_MAX_SEQS 4096
/* Blocks of one sequence and KV head at most (the split of split-K). */
#define EMA_HWA_MAX_SPLITS 32
/* Checked (layer, sequence) pairs of a step without --verify; with it,
 * every pair whose kept outputs fit in EMA_HWA_VERIFY_BYTES. */
#define EMA_HWA_SAMPLES 4
#define EMA_HWA_VERIFY_BYTES (256ll << 20)
/* A combined output o passes against its reference r when
 * max_i |o_i - r_i| <= EMA_HWA_TOL x max_i |r_i| + EMA_HWA_TOL_ABS:
 * relative 1e-3 for fp16 K, V and queries with fp32 accumulation (the
 * sums of the GPU and of the reference differ in order and in exp's last
 * bits, about 1e-6 relative on the sizes tested), with an absolute floor
 * for outputs near zero. A page with other content moves a sequence's
 * output by about its share of the tokens, far above that. */
#define EMA_HWA_TOL 1e-3
#define EMA_HWA_TOL_ABS 1e-6

/* Where K and V sit in a page. A page holds page_tokens tokens of every
 * layer of the model, fp16, each layer and KV head in one block of K then
 * one of V, tokens then dimensions:
 *   byte of K (kv = 0) or V (kv = 1) of (layer l, KV head h, token t, dim d)
 *     = ((((l x kv_heads + h) x 2 + kv) x page_tokens + t) x head_dim + d) x 2
 * so that a block reads one (page, layer, head) as two runs of
 * page_tokens x head_dim x 2 bytes. The rest of the page is unused. */
struct ema_hwa_geom {
	int layers;
	int kv_heads;          /* per GPU (tensor parallelism divides them) */
	int group;             /* query heads per KV head */
	int head_dim;
	int page_tokens;       /* tokens of every layer a page holds */
	uint64_t page_bytes;
	uint64_t token_bytes;  /* one token's K and V over all layers and KV heads */
};

struct ema_model;
struct ema_error;

/* The geometry of model m in pages of page_bytes. Where m leaves a shape
 * at 0 (the synthetic steps of bench and calibrate), the shape of an
 * 8-billion-parameter model: 32 layers, 8 KV heads of 4 query heads, head
 * dimension 128 (16 tokens in a 2 MiB page). EMA_ERR_UNSUPPORTED, with
 * the reason, where the kernel cannot run the shape or a page holds no
 * token. */
int ema_hwa_geom_init(struct ema_hwa_geom *g, const struct ema_model *m, uint64_t page_bytes,
		      struct ema_error *err);

EMA_HWA_FN uint64_t ema_hwa_offset(const struct ema_hwa_geom *g, int layer, int head, int kv,
				   int token, int dim)
{
	return ((((uint64_t)layer * (uint64_t)g->kv_heads + (uint64_t)head) * 2 + (uint64_t)kv) *
			(uint64_t)g->page_tokens + (uint64_t)token) * (uint64_t)g->head_dim * 2 +
	       (uint64_t)dim * 2;
}

/* The bits of the fp16 element at byte off of a page as stored: bit 14
 * (the top bit of the exponent) is cleared when read, so that whatever a
 * page holds, its tag's pattern or anything else, is a finite value of
 * magnitude below 2. The same mask read as bf16 gives the same bound. */
#define EMA_HWA_HALF_MASK 0xBFFFu

/* The element at byte off of a page tagged tag, as the kernels read it. */
EMA_HWA_FN uint16_t ema_hwa_tag_bits(uint64_t tag, uint64_t off)
{
	uint64_t w = ema_hwk_pattern(tag, off >> 3);

	return (uint16_t)((w >> (16 * ((off >> 1) & 3))) & EMA_HWA_HALF_MASK);
}

/* fp16 bits to float, exactly. */
EMA_HWA_FN float ema_hwa_half(uint16_t h)
{
	uint32_t sign = (uint32_t)(h >> 15), e = (h >> 10) & 31u, m = h & 1023u;
	float v;

	if (e == 0)
		v = (float)m * 5.9604644775390625e-8f;  /* subnormal: m x 2^-24 */
	else if (e == 31)
		v = m == 0 ? INFINITY : NAN;
	else {
		union { uint32_t u; float f; } x;

		x.u = ((e + 112u) << 23) | (m << 13);
		v = x.f;
	}
	return sign ? -v : v;
}

/* Query element d of query head `head`, sequence seq, layer `layer` of a
 * step seeded by seed: k / 1024 for an integer k in [-1024, 1023], so
 * exact in fp16; drawn from the tag pattern, so the GPU and a check find
 * the same queries from the seed alone. */
EMA_HWA_FN float ema_hwa_query(uint64_t seed, int layer, int seq, int head, int d)
{
	uint64_t row = ema_hwk_pattern(seed, ((uint64_t)(uint32_t)layer << 32) | (uint32_t)seq);
	uint64_t r = ema_hwk_pattern(row, ((uint64_t)(uint32_t)head << 16) | (uint32_t)d);

	return (float)((int)(r & 2047u) - 1024) * (1.0f / 1024.0f);
}

/* log(exp(a) + exp(b)), -INFINITY standing for an empty part. */
EMA_HWA_FN float ema_hwa_lse_add(float a, float b)
{
	float m;

	if (a == -INFINITY)
		return b;
	if (b == -INFINITY)
		return a;
	m = a > b ? a : b;
	return m + logf(expf(a - m) + expf(b - m));
}

/* Flash-decoding's split-K reduction, one (sequence, head): part i has
 * the normalised output o[i] (head_dim values, sum of softmax weights x
 * V over its tokens divided by their sum) and the log-sum-exp lse[i] of
 * its scores (natural log; -INFINITY: no tokens). The union's output is
 * sum_i exp(lse[i] - L) o[i] / sum_i exp(lse[i] - L), L = max lse, and
 * its log-sum-exp L + log sum_i exp(lse[i] - L). With no tokens at all:
 * zeros and -INFINITY. */
void ema_hwa_merge(int n, const float *lse, const float *const *o, int head_dim, float *out,
		   float *out_lse);

/* How a step's pages become sequences (the platform knows pages and
 * bytes, not requests): the batch's n_seqs sequences, at most
 * EMA_HWA_MAX_SEQS and at most as many as the most pages any lender
 * computes over (most_pages), at least 1. */
int ema_hwa_seqs(int n_seqs, int most_pages);
/* Sequence s of n takes pages [first[s], first[s + 1]) of a part's n_pages
 * (first has n + 1 entries): contiguous shares, as even as they come. */
void ema_hwa_assign(int n_pages, int n, int32_t *first);
/* Tokens in each of a part's pages: its bytes over its pages, over one
 * token's bytes, rounded up, at most page_tokens; 0 without bytes. */
int ema_hwa_valid(const struct ema_hwa_geom *g, uint64_t bytes, int n_pages);
/* Blocks per (sequence, KV head): enough for about 4 blocks per SM over
 * the launch (n_seqs x kv_heads x splits), no more than the pages of the
 * longest sequence (most_pages) nor EMA_HWA_MAX_SPLITS, at least 1. */
int ema_hwa_splits(int n_seqs, int kv_heads, int most_pages, int sms);
/* The (layer, sequence) pairs a step checks: with all, every one (layers
 * x n_seqs, layer-major), or cap of them spread evenly over that order
 * where they are more; else EMA_HWA_SAMPLES spread over both, each pair
 * once (fewer where few layers or sequences repeat one). Writes layer[i],
 * seq[i]; returns the count. cap: room in the arrays. */
int ema_hwa_samples(int layers, int n_seqs, bool all, int32_t *layer, int32_t *seq, int cap);

/* One page of a sequence, for the references: its bytes (mem, host
 * memory holding the page) or, where mem is NULL, its tag's pattern. */
struct ema_hwa_page_src {
	const void *mem;
	uint64_t tag;
	int valid;             /* tokens */
};

/* Attention of one query head over a sequence's pages at one layer, in
 * double: q[head_dim] (the query, unscaled), scores q.k / sqrt(head_dim),
 * out[head_dim] the normalised output, *lse the log-sum-exp; zeros and
 * -INFINITY without tokens. */
void ema_hwa_reference(const struct ema_hwa_geom *g, int layer, int head, const float *q,
		       int n_pages, const struct ema_hwa_page_src *pages, float *out, float *lse);

/* Whether out is within the tolerance of ref (EMA_HWA_TOL); *err gets
 * max |out - ref| (NaN anywhere fails). */
bool ema_hwa_close(const float *out, const float *ref, int n, double *err);

#endif
