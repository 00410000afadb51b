/* hw_attn_kernels.h: the C face of hw_attn.cu, the device code of remote
 * attention: the queries of a layer, split-K paged decode attention over
 * one part's pages (the borrower's own, or a lender's for a borrower), the
 * borrower's merge of the parts' partial outputs, and the check of
 * combined outputs against a reference built from the pages' tags. Shared
 * by the hw platform, `ema calibrate`, `ema bench --hw` and the tests.
 * Private to hw/. */
#ifndef EMA_HW_ATTN_KERNELS_H
#define EMA_HW_ATTN_KERNELS_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#include "hw_attn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The queries of one layer, fp16, [n_seqs][heads][head_dim], element d
 * of (sequence s, head h) = ema_hwa_query(seed, layer, s, h, d), written
 * to each of dst (the borrower's buffer and the lenders', over the link).
 * With n_flag > 0, the last block to finish stores flag_value[i] into
 * flag[i] (a word in a lender's memory) once every query is visible
 * there; counter is a zeroed word of the launching GPU that it leaves
 * zeroed. */
struct ema_hwa_query_args {
	uint64_t seed;
	int layer, n_seqs, heads, head_dim;
	int n_dst;
	uint16_t *dst[EMA_HWA_MAX_PARTS];
	int n_flag;
	uint32_t *flag[EMA_HWA_MAX_PARTS];
	uint32_t flag_value[EMA_HWA_MAX_PARTS];
	uint32_t *counter;
};
int ema_hwa_queries(const struct ema_hwa_query_args *a, cudaStream_t s);

/* Attention of one layer over one part: for each sequence s and query
 * head, the normalised output over the part's tokens into o
 * ([n_seqs][heads][head_dim], fp32) and the log-sum-exp into lse
 * ([n_seqs][heads], natural log, -INFINITY without tokens), o and lse in
 * any memory the launching GPU reaches (the borrower's, for a lender).
 * Sequence s has pages [seq_first[s], seq_first[s + 1]) of `pages`, each
 * of pool (base of the launching GPU's pool), `valid` tokens in each.
 * Each (sequence, KV head) takes `splits` blocks over its pages, merged
 * by the last of them through scratch (n_seqs x heads x splits x
 * (head_dim + 1) floats) and counters (n_seqs x kv_heads + 1 zeroed
 * words, left zeroed). flag as for the queries. fault (tests): where it
 * is s + 1, element 0 of (sequence s, head 0)'s output is written 0.5
 * too high. */
struct ema_hwa_attend_args {
	struct ema_hwa_geom g;
	int layer, n_seqs, valid, splits;
	const char *pool;
	const int32_t *seq_first;
	const int32_t *pages;
	const uint16_t *q;
	float *o;
	float *lse;
	float *scratch;
	uint32_t *counters;
	uint32_t *flag;
	uint32_t flag_value;
	int fault;
};
int ema_hwa_attend(const struct ema_hwa_attend_args *a, cudaStream_t s);
/* Bytes of scratch and counters one launch needs. */
uint64_t ema_hwa_scratch_bytes(const struct ema_hwa_geom *g, int n_seqs, int splits);
uint64_t ema_hwa_counter_bytes(const struct ema_hwa_geom *g, int n_seqs);

/* The borrower's merge of one layer: out[s][h] = ema_hwa_merge of the
 * n_parts partials (o[i], lse[i]). Where kept_row[layer x n_seqs + s] =
 * k >= 0, the output of (s, every head) is also copied to kept + k x
 * heads x head_dim, for the check after the step. */
struct ema_hwa_combine_args {
	int n_parts, layer, n_seqs, heads, head_dim;
	const float *o[EMA_HWA_MAX_PARTS];
	const float *lse[EMA_HWA_MAX_PARTS];
	float *out;
	float *kept;
	const int32_t *kept_row;
};
int ema_hwa_combine(const struct ema_hwa_combine_args *a, cudaStream_t s);

/* One page of a sequence as the check sees it: where tag != 0 its
 * content is the tag's pattern, else the bytes at addr (any memory the
 * checking GPU reaches); valid tokens; tok_first: tokens of the
 * sequence's pages before it. */
struct ema_hwa_check_entry {
	uint64_t addr;
	uint64_t tag;
	int32_t valid;
	int32_t tok_first;
};

/* The check of kept outputs: sample k is (layer sample_layer[k],
 * sequence sample_seq[k]), whose pages are entries [sample_entry[2k],
 * sample_entry[2k + 1]); its outputs (heads x head_dim at kept + k x heads
 * x head_dim) are compared with a reference computed in fp32 from the
 * pages and the queries of the seed (ema_hwa_close's tolerance). res[0]
 * counts the (sample, head) pairs that fail; the 64-bit word at res + 2
 * gets the smallest (k x heads + head) << 32 | bits of its error (float)
 * among them. res: zero and all-ones beforehand (ema_hwa_check_reset). */
struct ema_hwa_check_args {
	struct ema_hwa_geom g;
	uint64_t seed;
	int n_samples;
	const int32_t *sample_layer;
	const int32_t *sample_seq;
	const int32_t *sample_entry;
	const struct ema_hwa_check_entry *entries;
	const float *kept;
	uint32_t *res;
};
int ema_hwa_check_reset(uint32_t *res, cudaStream_t s);
int ema_hwa_check(const struct ema_hwa_check_args *a, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
