/* test_hw_attn_ref.c: the plain-C part of remote attention on the hw
 * backend (hw/hw_attn.c), without a GPU: the page geometry and its
 * errors, what a page holds, the queries, the split-K merge, the CPU
 * reference on hand-computed pages, the tolerance against a wrong page,
 * and how a step's pages become sequences, blocks and checked samples. */
#include "ema_error.h"
#include "hardware.h"
#include "hw_attn.h"
#include "test_main.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024ull * 1024ull)

static struct ema_model model(int layers, int heads, int kv_heads, int head_dim)
{
	struct ema_model m;

	memset(&m, 0, sizeof m);
	m.layers = layers;
	m.heads = heads;
	m.kv_heads = kv_heads;
	m.head_dim = head_dim;
	m.bytes_per_param = 2;
	m.tensor_parallel = 1;
	return m;
}

static void test_geometry(void)
{
	struct ema_hwa_geom g;
	struct ema_error err = { 0, "" };
	struct ema_model m = model(32, 32, 32, 128);  /* llama-2-7b */

	/* no model: 32 layers x 8 KV heads x 128 x 4 bytes = 128 KiB a token */
	CU_ASSERT_EQUAL(ema_hwa_geom_init(&g, NULL, 2 * MIB, &err), 0);
	CU_ASSERT_EQUAL(g.layers, 32);
	CU_ASSERT_EQUAL(g.kv_heads, 8);
	CU_ASSERT_EQUAL(g.group, 4);
	CU_ASSERT_EQUAL(g.head_dim, 128);
	CU_ASSERT_EQUAL(g.token_bytes, 131072);
	CU_ASSERT_EQUAL(g.page_tokens, 16);
	/* llama-2-7b: 512 KiB a token, 4 in 2 MiB */
	CU_ASSERT_EQUAL(ema_hwa_geom_init(&g, &m, 2 * MIB, &err), 0);
	CU_ASSERT_EQUAL(g.group, 1);
	CU_ASSERT_EQUAL(g.page_tokens, 4);
	/* two GPUs of tensor parallelism: half the KV heads each */
	m.tensor_parallel = 2;
	CU_ASSERT_EQUAL(ema_hwa_geom_init(&g, &m, 2 * MIB, &err), 0);
	CU_ASSERT_EQUAL(g.kv_heads, 16);
	CU_ASSERT_EQUAL(g.page_tokens, 8);
	m.tensor_parallel = 1;
	/* errors, each named */
	CU_ASSERT_EQUAL(ema_hwa_geom_init(&g, &m, 256 * 1024, &err), EMA_ERR_UNSUPPORTED);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "holds 0 tokens of 524288 bytes"));
	m = model(32, 24, 8, 128);
	CU_ASSERT_EQUAL(ema_hwa_geom_init(&g, &m, 2 * MIB, &err), EMA_ERR_UNSUPPORTED);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "3 query heads per KV head"));
	m = model(32, 30, 8, 128);
	CU_ASSERT_EQUAL(ema_hwa_geom_init(&g, &m, 2 * MIB, &err), EMA_ERR_UNSUPPORTED);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "30 heads are not a multiple of 8"));
	m = model(32, 32, 8, 80);
	CU_ASSERT_EQUAL(ema_hwa_geom_init(&g, &m, 2 * MIB, &err), EMA_ERR_UNSUPPORTED);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "head_dim 80"));
	m = model(300, 32, 8, 64);
	CU_ASSERT_EQUAL(ema_hwa_geom_init(&g, &m, 64 * MIB, &err), EMA_ERR_UNSUPPORTED);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "300 layers"));
	m = model(32, 32, 8, 128);
	m.tensor_parallel = 3;
	CU_ASSERT_EQUAL(ema_hwa_geom_init(&g, &m, 2 * MIB, &err), EMA_ERR_UNSUPPORTED);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "8 KV heads do not split over 3 GPUs"));
}

/* ((((1 x 8 + 2) x 2 + 1) x 16 + 3) x 128 + 5) x 2 = 86794 */
static void test_offset(void)
{
	struct ema_hwa_geom g;

	CU_ASSERT_EQUAL_FATAL(ema_hwa_geom_init(&g, NULL, 2 * MIB, NULL), 0);
	CU_ASSERT_EQUAL(ema_hwa_offset(&g, 1, 2, 1, 3, 5), 86794);
	CU_ASSERT_EQUAL(ema_hwa_offset(&g, 0, 0, 0, 0, 0), 0);
	/* the last element of the last layer's V fits in the page */
	CU_ASSERT(ema_hwa_offset(&g, 31, 7, 1, 15, 127) + 2 <= g.page_bytes);
}

static void test_half_and_content(void)
{
	struct ema_hwa_geom g;

	CU_ASSERT_EQUAL(ema_hwa_half(0x3C00), 1.0f);
	CU_ASSERT_EQUAL(ema_hwa_half(0xBC00), -1.0f);
	CU_ASSERT_EQUAL(ema_hwa_half(0x3555), 0.333251953125f);
	CU_ASSERT_EQUAL(ema_hwa_half(0x7BFF), 65504.0f);
	CU_ASSERT_EQUAL(ema_hwa_half(0x0001), ldexpf(1.0f, -24));
	CU_ASSERT_EQUAL(ema_hwa_half(0x83FF), -ldexpf(1023.0f, -24));
	CU_ASSERT_EQUAL(ema_hwa_half(0x0000), 0.0f);
	CU_ASSERT(isinf(ema_hwa_half(0x7C00)));
	CU_ASSERT_EQUAL_FATAL(ema_hwa_geom_init(&g, NULL, 2 * MIB, NULL), 0);
	/* a page's elements are its tag's pattern, 16 bits at a time, with
	 * bit 14 cleared: finite, below 2 in magnitude */
	for (uint64_t off = 0; off < 4096; off += 2) {
		uint16_t b = ema_hwa_tag_bits(77, off);
		uint64_t w = ema_hwk_pattern(77, off / 8);

		CU_ASSERT_EQUAL(b, (uint16_t)(w >> (16 * ((off / 2) % 4))) & 0xBFFF);
		CU_ASSERT(fabsf(ema_hwa_half(b)) < 2.0f);
	}
	CU_ASSERT_NOT_EQUAL(ema_hwa_tag_bits(77, 0), ema_hwa_tag_bits(78, 0));
}

/* k / 1024 in [-1, 1), exact in fp16, the same for the same arguments. */
static void test_queries(void)
{
	double sum = 0;
	int n = 0, differ = 0;

	for (int l = 0; l < 4; l++)
		for (int s = 0; s < 8; s++)
			for (int d = 0; d < 128; d++) {
				float q = ema_hwa_query(42, l, s, 3, d);

				CU_ASSERT(q >= -1.0f && q < 1.0f);
				CU_ASSERT_EQUAL(q * 1024.0f, floorf(q * 1024.0f));
				CU_ASSERT_EQUAL(q, ema_hwa_query(42, l, s, 3, d));
				differ += q != ema_hwa_query(43, l, s, 3, d);
				sum += q;
				n++;
			}
	/* another seed gives other queries; they centre on 0 */
	CU_ASSERT(differ > n * 9 / 10);
	CU_ASSERT(fabs(sum / n) < 0.05);
}

/* Part 1: o (1, 0), lse 0; part 2: o (0, 1), lse log 3: weights 1 : 3,
 * out (0.25, 0.75), lse log 4. An empty part changes nothing. */
static void test_merge(void)
{
	const float o1[2] = { 1, 0 }, o2[2] = { 0, 1 }, o3[2] = { 5, 5 };
	const float *o[3] = { o1, o2, o3 };
	float lse[3] = { 0.0f, logf(3.0f), -INFINITY }, out[2], ol;

	ema_hwa_merge(3, lse, o, 2, out, &ol);
	CU_ASSERT_DOUBLE_EQUAL(out[0], 0.25, 1e-7);
	CU_ASSERT_DOUBLE_EQUAL(out[1], 0.75, 1e-7);
	CU_ASSERT_DOUBLE_EQUAL(ol, log(4.0), 1e-6);
	CU_ASSERT_DOUBLE_EQUAL(ema_hwa_lse_add(lse[0], lse[1]), log(4.0), 1e-6);
	CU_ASSERT_EQUAL(ema_hwa_lse_add(-INFINITY, 2.5f), 2.5f);
	CU_ASSERT_EQUAL(ema_hwa_lse_add(2.5f, -INFINITY), 2.5f);
	/* nothing at all: zeros, -inf */
	lse[0] = lse[1] = -INFINITY;
	ema_hwa_merge(3, lse, o, 2, out, &ol);
	CU_ASSERT_EQUAL(out[0], 0.0f);
	CU_ASSERT_EQUAL(out[1], 0.0f);
	CU_ASSERT(isinf(ol) && ol < 0);
	/* a partial with huge log-sum-exps does not overflow */
	lse[0] = 1000.0f;
	lse[1] = 1000.0f + logf(3.0f);
	ema_hwa_merge(2, lse, o, 2, out, &ol);
	CU_ASSERT_DOUBLE_EQUAL(out[1], 0.75, 1e-4); /* 1000 + log 3 in float */
	CU_ASSERT_DOUBLE_EQUAL(ol, 1000.0 + log(4.0), 1e-3);
}

static void put_half(unsigned char *page, uint64_t off, uint16_t bits)
{
	page[off] = (unsigned char)(bits & 0xff);
	page[off + 1] = (unsigned char)(bits >> 8);
}

/* One layer, one head of dimension 64, two tokens a page of 512 bytes.
 * q = e0 + e1 + e2. K: token 0 has k0 = 1; token 1 has k0 = k2 = 1 and
 * k1 stored as 0x4000 (2.0), which reads as 0 (bit 14 cleared): scores
 * 1/8 and 2/8 (over sqrt(64)). V: token 0 all ones, token 1 zeros. So
 * out = e^(1/8) / (e^(1/8) + e^(1/4)) in every dimension, lse =
 * log(e^(1/8) + e^(1/4)). */
static void test_reference_by_hand(void)
{
	struct ema_model m = model(1, 1, 1, 64);
	struct ema_hwa_geom g;
	unsigned char page[512];
	struct ema_hwa_page_src src = { page, 0, 2 };
	float q[64] = { 1.0f, 1.0f, 1.0f }, out[64], lse;
	double want = exp(0.125) / (exp(0.125) + exp(0.25));

	memset(page, 0, sizeof page);
	CU_ASSERT_EQUAL_FATAL(ema_hwa_geom_init(&g, &m, 512, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(g.page_tokens, 2);
	put_half(page, ema_hwa_offset(&g, 0, 0, 0, 0, 0), 0x3C00);
	put_half(page, ema_hwa_offset(&g, 0, 0, 0, 1, 0), 0x3C00);
	put_half(page, ema_hwa_offset(&g, 0, 0, 0, 1, 1), 0x4000);
	put_half(page, ema_hwa_offset(&g, 0, 0, 0, 1, 2), 0x3C00);
	for (int d = 0; d < 64; d++)
		put_half(page, ema_hwa_offset(&g, 0, 0, 1, 0, d), 0x3C00);
	ema_hwa_reference(&g, 0, 0, q, 1, &src, out, &lse);
	for (int d = 0; d < 64; d++)
		CU_ASSERT_DOUBLE_EQUAL(out[d], want, 1e-6);
	CU_ASSERT_DOUBLE_EQUAL(lse, log(exp(0.125) + exp(0.25)), 1e-6);
	/* one valid token: a softmax of one, out = V of token 0, lse = 1/8 */
	src.valid = 1;
	ema_hwa_reference(&g, 0, 0, q, 1, &src, out, &lse);
	CU_ASSERT_DOUBLE_EQUAL(out[0], 1.0, 1e-7);
	CU_ASSERT_DOUBLE_EQUAL(lse, 0.125, 1e-7);
	/* no tokens */
	src.valid = 0;
	ema_hwa_reference(&g, 0, 0, q, 1, &src, out, &lse);
	CU_ASSERT_EQUAL(out[5], 0.0f);
	CU_ASSERT(isinf(lse) && lse < 0);
}

/* A page given by its tag reads as that tag's pattern would in memory. */
static void test_reference_tag_is_memory(void)
{
	struct ema_model m = model(2, 4, 2, 64);
	struct ema_hwa_geom g;
	unsigned char page[4096];
	struct ema_hwa_page_src by_mem = { page, 0, 3 }, by_tag = { NULL, 0xfeed, 3 };
	float q[64], a[64], b[64], la, lb;

	CU_ASSERT_EQUAL_FATAL(ema_hwa_geom_init(&g, &m, sizeof page, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(g.page_tokens, 4);
	for (uint64_t w = 0; w < sizeof page / 8; w++) {
		uint64_t v = ema_hwk_pattern(0xfeed, w);

		for (int i = 0; i < 8; i++)
			page[8 * w + (uint64_t)i] = (unsigned char)(v >> (8 * i));
	}
	for (int d = 0; d < 64; d++)
		q[d] = ema_hwa_query(1, 1, 0, 3, d);
	ema_hwa_reference(&g, 1, 3, q, 1, &by_mem, a, &la);
	ema_hwa_reference(&g, 1, 3, q, 1, &by_tag, b, &lb);
	CU_ASSERT_EQUAL(memcmp(a, b, sizeof a), 0);
	CU_ASSERT_EQUAL(la, lb);
}

/* The reference over all pages equals the merge of references over any
 * split of them (what split-K relies on), far inside the tolerance; a
 * page with another tag moves the output far outside it. */
static void test_reference_split_and_wrong_page(void)
{
	enum { N = 48 };
	struct ema_hwa_geom g;
	struct ema_hwa_page_src pg[N];
	float q[128], all[128], a[128], b[128], c[128], lse_all, la, lb, lc, ml[3], out[128], ol;
	const float *parts[3] = { a, b, c };
	double err;

	CU_ASSERT_EQUAL_FATAL(ema_hwa_geom_init(&g, NULL, 2 * MIB, NULL), 0);
	for (int i = 0; i < N; i++) {
		pg[i].mem = NULL;
		pg[i].tag = 0x5eed0000u + (uint64_t)i;
		pg[i].valid = i == N - 1 ? 5 : 16;  /* a part-full last page */
	}
	for (int head = 0; head < 8; head += 3) {
		for (int d = 0; d < 128; d++)
			q[d] = ema_hwa_query(9, 7, 2, head, d);
		ema_hwa_reference(&g, 7, head, q, N, pg, all, &lse_all);
		ema_hwa_reference(&g, 7, head, q, 10, pg, a, &la);
		ema_hwa_reference(&g, 7, head, q, 30, pg + 10, b, &lb);
		ema_hwa_reference(&g, 7, head, q, N - 40, pg + 40, c, &lc);
		ml[0] = la;
		ml[1] = lb;
		ml[2] = lc;
		ema_hwa_merge(3, ml, parts, 128, out, &ol);
		CU_ASSERT(ema_hwa_close(out, all, 128, &err));
		CU_ASSERT(err < 1e-6);
		CU_ASSERT_DOUBLE_EQUAL(ol, lse_all, 1e-5);
		/* page 20 with another tag: above the tolerance by far */
		pg[20].tag = 12345;
		ema_hwa_reference(&g, 7, head, q, N, pg, out, &ol);
		pg[20].tag = 0x5eed0000u + 20;
		CU_ASSERT_FALSE(ema_hwa_close(out, all, 128, &err));
		CU_ASSERT(err > 10 * EMA_HWA_TOL * 0.01);
	}
}

static void test_close(void)
{
	float ref[4] = { 1.0f, -0.5f, 0.0f, 0.25f }, out[4];
	double err;

	memcpy(out, ref, sizeof out);
	CU_ASSERT(ema_hwa_close(out, ref, 4, &err));
	CU_ASSERT_EQUAL(err, 0.0);
	out[1] = -0.5f + 0.9e-3f;  /* within 1e-3 x max |ref| = 1e-3 */
	CU_ASSERT(ema_hwa_close(out, ref, 4, &err));
	out[1] = -0.5f + 1.1e-3f;
	CU_ASSERT_FALSE(ema_hwa_close(out, ref, 4, &err));
	CU_ASSERT_DOUBLE_EQUAL(err, 1.1e-3, 1e-7);
	out[1] = ref[1];
	out[3] = NAN;
	CU_ASSERT_FALSE(ema_hwa_close(out, ref, 4, &err));
	CU_ASSERT(isnan(err));
	/* all zeros: the absolute floor */
	memset(ref, 0, sizeof ref);
	memset(out, 0, sizeof out);
	out[2] = 0.5e-6f;
	CU_ASSERT(ema_hwa_close(out, ref, 4, NULL));
	out[2] = 2e-6f;
	CU_ASSERT_FALSE(ema_hwa_close(out, ref, 4, NULL));
}

static void test_plan(void)
{
	struct ema_hwa_geom g;
	int32_t first[4], layer[64], seq[64];

	CU_ASSERT_EQUAL_FATAL(ema_hwa_geom_init(&g, NULL, 2 * MIB, NULL), 0);
	/* sequences: the batch, no more than the most pages of a lender */
	CU_ASSERT_EQUAL(ema_hwa_seqs(64, 10), 10);
	CU_ASSERT_EQUAL(ema_hwa_seqs(64, 1000), 64);
	CU_ASSERT_EQUAL(ema_hwa_seqs(0, 10), 1);
	CU_ASSERT_EQUAL(ema_hwa_seqs(10000, 100000), EMA_HWA_MAX_SEQS);
	/* 10 pages over 3 sequences: 3, 3, 4 */
	ema_hwa_assign(10, 3, first);
	CU_ASSERT_EQUAL(first[0], 0);
	CU_ASSERT_EQUAL(first[1], 3);
	CU_ASSERT_EQUAL(first[2], 6);
	CU_ASSERT_EQUAL(first[3], 10);
	/* 2 pages over 3: one sequence has none there */
	ema_hwa_assign(2, 3, first);
	CU_ASSERT_EQUAL(first[1], 0);
	CU_ASSERT_EQUAL(first[2], 1);
	CU_ASSERT_EQUAL(first[3], 2);
	/* tokens a page: 2 MiB pages of 128 KiB tokens */
	CU_ASSERT_EQUAL(ema_hwa_valid(&g, 10 * 2 * MIB, 10), 16);
	CU_ASSERT_EQUAL(ema_hwa_valid(&g, 10 * 131072 * 5 + 10, 10), 6);  /* rounded up */
	CU_ASSERT_EQUAL(ema_hwa_valid(&g, 10 * 131072 * 5, 10), 5);
	CU_ASSERT_EQUAL(ema_hwa_valid(&g, 10, 10), 1);
	CU_ASSERT_EQUAL(ema_hwa_valid(&g, 0, 10), 0);
	CU_ASSERT_EQUAL(ema_hwa_valid(&g, 100 * MIB, 0), 0);
	CU_ASSERT_EQUAL(ema_hwa_valid(&g, 100 * MIB, 1), 16);  /* at most a page */
	/* splits: 4 blocks a SM over the launch, within the pages and the cap */
	CU_ASSERT_EQUAL(ema_hwa_splits(1, 8, 100, 132), 32);    /* 66, capped */
	CU_ASSERT_EQUAL(ema_hwa_splits(1, 8, 20, 132), 20);     /* the pages */
	CU_ASSERT_EQUAL(ema_hwa_splits(64, 8, 100, 132), 2);    /* ceil(528 / 512) */
	CU_ASSERT_EQUAL(ema_hwa_splits(128, 8, 100, 132), 1);
	CU_ASSERT_EQUAL(ema_hwa_splits(4, 8, 0, 132), 1);
	/* samples: every pair, layer-major */
	CU_ASSERT_EQUAL(ema_hwa_samples(3, 2, true, layer, seq, 64), 6);
	CU_ASSERT_EQUAL(layer[3], 1);
	CU_ASSERT_EQUAL(seq[3], 1);
	/* room for 4 of 6: pairs 0, 1, 3, 4 (i x 6 / 4) */
	CU_ASSERT_EQUAL(ema_hwa_samples(3, 2, true, layer, seq, 4), 4);
	CU_ASSERT_EQUAL(layer[2], 1);
	CU_ASSERT_EQUAL(seq[2], 1);
	CU_ASSERT_EQUAL(layer[3], 2);
	CU_ASSERT_EQUAL(seq[3], 0);
	/* four, in the middle of each quarter: layers 4, 12, 20, 28 of 32,
	 * sequences 8, 24, 40, 56 of 64 */
	CU_ASSERT_EQUAL(ema_hwa_samples(32, 64, false, layer, seq, 64), EMA_HWA_SAMPLES);
	CU_ASSERT_EQUAL(layer[0], 4);
	CU_ASSERT_EQUAL(layer[3], 28);
	CU_ASSERT_EQUAL(seq[1], 24);
	CU_ASSERT_EQUAL(seq[2], 40);
	/* fewer pairs than samples: each once */
	CU_ASSERT_EQUAL(ema_hwa_samples(1, 2, false, layer, seq, 64), 2);
	CU_ASSERT_EQUAL(layer[1], 0);
	CU_ASSERT_EQUAL(seq[0], 0);
	CU_ASSERT_EQUAL(seq[1], 1);
	CU_ASSERT_EQUAL(ema_hwa_samples(0, 2, false, layer, seq, 64), 0);
	/* 2 x 2: the spread repeats (0, 0) and (1, 1); each is kept once, or
	 * a kept output would be claimed by two samples */
	CU_ASSERT_EQUAL(ema_hwa_samples(2, 2, false, layer, seq, 64), 2);
	CU_ASSERT_EQUAL(layer[0], 0);
	CU_ASSERT_EQUAL(seq[0], 0);
	CU_ASSERT_EQUAL(layer[1], 1);
	CU_ASSERT_EQUAL(seq[1], 1);
	/* distinct pairs over many shapes */
	for (int L = 1; L < 7; L++)
		for (int S = 1; S < 7; S++) {
			int n = ema_hwa_samples(L, S, false, layer, seq, 64);

			CU_ASSERT(n >= 1 && n <= EMA_HWA_SAMPLES && n <= L * S);
			for (int i = 0; i < n; i++) {
				CU_ASSERT(layer[i] >= 0 && layer[i] < L && seq[i] >= 0 && seq[i] < S);
				for (int j = 0; j < i; j++)
					CU_ASSERT(layer[i] != layer[j] || seq[i] != seq[j]);
			}
		}
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{ "page geometry and its errors", test_geometry },
		{ "offset of an element", test_offset },
		{ "fp16 and what a page holds", test_half_and_content },
		{ "queries from the seed", test_queries },
		{ "split-K merge", test_merge },
		{ "reference on pages built by hand", test_reference_by_hand },
		{ "reference: a tag reads as its pattern in memory", test_reference_tag_is_memory },
		{ "reference: split equals whole, a wrong page shows", test_reference_split_and_wrong_page },
		{ "tolerance", test_close },
		{ "pages into sequences, blocks and samples", test_plan },
		{ NULL, NULL }
	};

	return ema_test_run("hw remote attention (CPU)", cases);
}
