/* test_hw_attn.c: remote attention on a GPU (hw/hw_attn.cu and
 * hw/hw_attn_iter.c): the kernels against the CPU reference on small
 * cases (head dimensions 64, 128 and 256, 1 to 8 query heads per KV head,
 * part-full pages, empty sequences, split-K), the merge of parts, the
 * flags the kernels raise, the check kernel; then steps through the
 * platform with a lender (GPU 1, or a second stream of GPU 0 with one
 * GPU), with both ways of waiting, checked outputs, a page and a partial
 * corrupted on purpose, and each error. EMA_TEST_HW_ATTN_SOAK=N adds N
 * random steps checked in full (the integrity run of
 * tools/h200-attention.sh). Skips (77) without a GPU or a CUDA build. */
#include "ema_build.h"
#include "test_main.h"

#ifdef EMA_HAVE_CUDA

#include "hw.h"
#include "hw_attn.h"
#include "hw_attn_kernels.h"
#include "hw_cuda.h"
#include "hw_kernels.h"
#include "platform.h"
#include "config.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024ull * 1024ull)

static int g_gpus;

#define CUDA_OK(x) CU_ASSERT_EQUAL_FATAL((int)(x), 0)

/* ---- the kernels against the CPU reference ------------------------ */

struct kcase {
	int layers, heads, kv_heads, head_dim;
	uint64_t page_bytes;
	int n_seqs;
	int splits;
};

static struct ema_model kmodel(const struct kcase *c)
{
	struct ema_model m;

	memset(&m, 0, sizeof m);
	m.layers = c->layers;
	m.heads = c->heads;
	m.kv_heads = c->kv_heads;
	m.head_dim = c->head_dim;
	m.bytes_per_param = 2;
	m.tensor_parallel = 1;
	return m;
}

/* Runs one case: pages of a pool on GPU 0 (one filled with bytes of
 * its own, not a tag), sequences of uneven lengths (one empty), every
 * layer; the kernel's outputs over all pages, and the merge of two parts
 * of them, against ema_hwa_reference. */
static void run_kernel_case(const struct kcase *c)
{
	enum { NP = 23 };
	struct ema_model m = kmodel(c);
	struct ema_hwa_geom g;
	struct ema_error err = { 0, "" };
	int S = c->n_seqs, Hq, D, valid;
	int32_t first[8], pages[NP], firstA[8], firstB[8], pagesA[NP], pagesB[NP], nA = 0, nB = 0;
	uint64_t tags[NP];
	char *pool = NULL;
	unsigned char *raw = NULL;
	uint16_t *q = NULL, *hq = NULL;
	float *o = NULL, *lse = NULL, *oA = NULL, *lA = NULL, *oB = NULL, *lB = NULL, *out = NULL;
	float *scratch = NULL, *ho, *hl, *hout;
	uint32_t *counters = NULL, *flag = NULL, *qcounter = NULL, hflag = 0;
	cudaStream_t s;
	double worst = 0;

	CU_ASSERT_EQUAL_FATAL(ema_hwa_geom_init(&g, &m, c->page_bytes, &err), 0);
	Hq = g.kv_heads * g.group;
	D = g.head_dim;
	valid = g.page_tokens > 1 ? g.page_tokens - 1 : 1;  /* part-full pages */
	CUDA_OK(cudaSetDevice(0));
	CUDA_OK(cudaStreamCreate(&s));
	CUDA_OK(cudaMalloc((void **)&pool, NP * c->page_bytes));
	raw = malloc(c->page_bytes);
	CU_ASSERT_PTR_NOT_NULL_FATAL(raw);
	for (int i = 0; i < NP; i++) {
		tags[i] = 0x1000u + (uint64_t)i * 7919u;
		if (i == 5) {
			/* bytes that are no tag's pattern (every exponent, NaN
			 * and Inf patterns included before the mask) */
			for (uint64_t b = 0; b < c->page_bytes; b++)
				raw[b] = (unsigned char)(b * 37 + (b >> 8));
			CUDA_OK(cudaMemcpy(pool + (uint64_t)i * c->page_bytes, raw, c->page_bytes,
					   cudaMemcpyHostToDevice));
			tags[i] = 0;
		} else {
			CUDA_OK(ema_hwk_fill_one(pool + (uint64_t)i * c->page_bytes, c->page_bytes,
						 tags[i], s));
		}
	}
	/* pages in a scattered order; sequence 1 empty; the others uneven */
	for (int i = 0; i < NP; i++)
		pages[i] = (int32_t)((i * 11) % NP);
	first[0] = 0;
	for (int sq = 0; sq < S; sq++)
		first[sq + 1] = sq == 1 ? first[sq] : first[sq] + (sq == S - 1 ? NP - first[sq] :
									     1 + 2 * sq % 5);
	CU_ASSERT_EQUAL_FATAL(first[S], NP);
	/* two parts: each sequence's first pages in A, the rest in B */
	firstA[0] = firstB[0] = 0;
	for (int sq = 0; sq < S; sq++) {
		int n = first[sq + 1] - first[sq], na = n / 3;

		for (int i = 0; i < n; i++) {
			if (i < na)
				pagesA[nA++] = pages[first[sq] + i];
			else
				pagesB[nB++] = pages[first[sq] + i];
		}
		firstA[sq + 1] = nA;
		firstB[sq + 1] = nB;
	}
	{
		size_t qn = (size_t)S * Hq * D, on = qn * sizeof(float), ln = (size_t)S * Hq * sizeof(float);
		int32_t *d_tab;

		CUDA_OK(cudaMalloc((void **)&q, qn * 2));
		CUDA_OK(cudaMalloc((void **)&o, on));
		CUDA_OK(cudaMalloc((void **)&lse, ln));
		CUDA_OK(cudaMalloc((void **)&oA, on));
		CUDA_OK(cudaMalloc((void **)&lA, ln));
		CUDA_OK(cudaMalloc((void **)&oB, on));
		CUDA_OK(cudaMalloc((void **)&lB, ln));
		CUDA_OK(cudaMalloc((void **)&out, on));
		CUDA_OK(cudaMalloc((void **)&scratch,
				   ema_hwa_scratch_bytes(&g, S, c->splits) + 16));
		CUDA_OK(cudaMalloc((void **)&counters, ema_hwa_counter_bytes(&g, S)));
		CUDA_OK(cudaMemset(counters, 0, ema_hwa_counter_bytes(&g, S)));
		CUDA_OK(cudaMalloc((void **)&flag, 4));
		CUDA_OK(cudaMemset(flag, 0, 4));
		CUDA_OK(cudaMalloc((void **)&qcounter, 4));
		CUDA_OK(cudaMemset(qcounter, 0, 4));
		CUDA_OK(cudaMalloc((void **)&d_tab, 3 * (8 + NP) * sizeof(int32_t)));
		CUDA_OK(cudaMemcpy(d_tab, first, (size_t)(S + 1) * 4, cudaMemcpyHostToDevice));
		CUDA_OK(cudaMemcpy(d_tab + 8, pages, NP * 4, cudaMemcpyHostToDevice));
		CUDA_OK(cudaMemcpy(d_tab + 8 + NP, firstA, (size_t)(S + 1) * 4, cudaMemcpyHostToDevice));
		CUDA_OK(cudaMemcpy(d_tab + 16 + NP, pagesA, (size_t)(nA ? nA : 1) * 4,
				   cudaMemcpyHostToDevice));
		CUDA_OK(cudaMemcpy(d_tab + 16 + 2 * NP, firstB, (size_t)(S + 1) * 4,
				   cudaMemcpyHostToDevice));
		CUDA_OK(cudaMemcpy(d_tab + 24 + 2 * NP, pagesB, (size_t)nB * 4, cudaMemcpyHostToDevice));
		ho = malloc(on);
		hl = malloc(ln);
		hout = malloc(on);
		hq = malloc(qn * 2);
		CU_ASSERT_PTR_NOT_NULL_FATAL(ho);
		CU_ASSERT_PTR_NOT_NULL_FATAL(hl);
		CU_ASSERT_PTR_NOT_NULL_FATAL(hout);
		CU_ASSERT_PTR_NOT_NULL_FATAL(hq);
		for (int layer = 0; layer < g.layers; layer++) {
			struct ema_hwa_query_args qa;
			struct ema_hwa_attend_args aa;
			struct ema_hwa_combine_args ca;

			memset(&qa, 0, sizeof qa);
			qa.seed = 99;
			qa.layer = layer;
			qa.n_seqs = S;
			qa.heads = Hq;
			qa.head_dim = D;
			qa.n_dst = 1;
			qa.dst[0] = q;
			/* the flag of the queries, as a lender would wait for */
			qa.n_flag = 1;
			qa.flag[0] = flag;
			qa.flag_value[0] = 100 + (uint32_t)layer;
			qa.counter = qcounter;
			CUDA_OK(ema_hwa_queries(&qa, s));
			memset(&aa, 0, sizeof aa);
			aa.g = g;
			aa.layer = layer;
			aa.n_seqs = S;
			aa.valid = valid;
			aa.splits = c->splits;
			aa.pool = pool;
			aa.seq_first = d_tab;
			aa.pages = d_tab + 8;
			aa.q = q;
			aa.o = o;
			aa.lse = lse;
			aa.scratch = scratch;
			aa.counters = counters;
			CUDA_OK(ema_hwa_attend(&aa, s));
			CUDA_OK(cudaStreamSynchronize(s));
			CUDA_OK(cudaMemcpy(&hflag, flag, 4, cudaMemcpyDeviceToHost));
			CU_ASSERT_EQUAL(hflag, 100 + (uint32_t)layer);
			/* the same over two parts, merged; the second raises a flag */
			aa.seq_first = d_tab + 8 + NP;
			aa.pages = d_tab + 16 + NP;
			aa.o = oA;
			aa.lse = lA;
			CUDA_OK(ema_hwa_attend(&aa, s));
			aa.seq_first = d_tab + 16 + 2 * NP;
			aa.pages = d_tab + 24 + 2 * NP;
			aa.o = oB;
			aa.lse = lB;
			aa.flag = flag;
			aa.flag_value = 1000 + (uint32_t)layer;
			CUDA_OK(ema_hwa_attend(&aa, s));
			memset(&ca, 0, sizeof ca);
			ca.n_parts = 2;
			ca.layer = layer;
			ca.n_seqs = S;
			ca.heads = Hq;
			ca.head_dim = D;
			ca.o[0] = oA;
			ca.lse[0] = lA;
			ca.o[1] = oB;
			ca.lse[1] = lB;
			ca.out = out;
			CUDA_OK(ema_hwa_combine(&ca, s));
			CUDA_OK(cudaStreamSynchronize(s));
			CUDA_OK(cudaMemcpy(&hflag, flag, 4, cudaMemcpyDeviceToHost));
			CU_ASSERT_EQUAL(hflag, 1000 + (uint32_t)layer);
			CUDA_OK(cudaMemcpy(ho, o, on, cudaMemcpyDeviceToHost));
			CUDA_OK(cudaMemcpy(hl, lse, ln, cudaMemcpyDeviceToHost));
			CUDA_OK(cudaMemcpy(hout, out, on, cudaMemcpyDeviceToHost));
			CUDA_OK(cudaMemcpy(hq, q, qn * 2, cudaMemcpyDeviceToHost));
			for (int sq = 0; sq < S; sq++) {
				struct ema_hwa_page_src src[NP];
				int n = first[sq + 1] - first[sq];

				for (int i = 0; i < n; i++) {
					int32_t pg = pages[first[sq] + i];

					src[i].tag = tags[pg];
					src[i].mem = tags[pg] == 0 ? raw : NULL;
					src[i].valid = valid;
				}
				for (int h = 0; h < Hq; h++) {
					float qf[EMA_HWA_MAX_HEAD_DIM], ref[EMA_HWA_MAX_HEAD_DIM], rl;
					size_t at = ((size_t)sq * Hq + h) * D;
					double e1, e2;

					for (int d = 0; d < D; d++) {
						qf[d] = ema_hwa_query(99, layer, sq, h, d);
						CU_ASSERT_EQUAL(ema_hwa_half(hq[at + d]), qf[d]);
					}
					ema_hwa_reference(&g, layer, h, qf, n, src, ref, &rl);
					CU_ASSERT(ema_hwa_close(ho + at, ref, D, &e1));
					CU_ASSERT(ema_hwa_close(hout + at, ref, D, &e2));
					if (n == 0) {
						CU_ASSERT(isinf(hl[(size_t)sq * Hq + h]));
					} else {
						CU_ASSERT_DOUBLE_EQUAL(hl[(size_t)sq * Hq + h], rl,
								       1e-4 * (1 + fabs(rl)));
					}
					if (e1 > worst)
						worst = e1;
					if (e2 > worst)
						worst = e2;
				}
			}
		}
		/* the counters are left zeroed for the next launch */
		{
			size_t nc = ema_hwa_counter_bytes(&g, S) / 4;
			uint32_t *hc = malloc(nc * 4);

			CU_ASSERT_PTR_NOT_NULL_FATAL(hc);
			CUDA_OK(cudaMemcpy(hc, counters, nc * 4, cudaMemcpyDeviceToHost));
			for (size_t i = 0; i < nc; i++)
				CU_ASSERT_EQUAL(hc[i], 0);
			free(hc);
		}
		printf("\n  D %d, %d heads / %d KV, %d tokens a page, %d splits: worst error %.2e",
		       D, Hq, g.kv_heads, valid, c->splits, worst);
		free(ho);
		free(hl);
		free(hout);
		free(hq);
		cudaFree(d_tab);
	}
	cudaFree(pool);
	cudaFree(q);
	cudaFree(o);
	cudaFree(lse);
	cudaFree(oA);
	cudaFree(lA);
	cudaFree(oB);
	cudaFree(lB);
	cudaFree(out);
	cudaFree(scratch);
	cudaFree(counters);
	cudaFree(flag);
	cudaFree(qcounter);
	cudaStreamDestroy(s);
	free(raw);
}

static void test_kernels(void)
{
	static const struct kcase cases[] = {
		/* 2 layers, 2 KV heads of 4, dimension 128: 32 tokens in 64 KiB */
		{ 2, 8, 2, 128, 64 * 1024, 5, 1 },
		{ 2, 8, 2, 128, 64 * 1024, 5, 3 },
		/* one query head per KV head, dimension 64 */
		{ 3, 3, 3, 64, 32 * 1024, 4, 1 },
		{ 3, 3, 3, 64, 32 * 1024, 4, 4 },
		/* 8 per KV head, dimension 256 */
		{ 1, 8, 1, 256, 32 * 1024, 6, 2 },
		/* 2 per KV head, one token a page */
		{ 2, 4, 2, 128, 4 * 1024, 3, 1 },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		run_kernel_case(&cases[i]);
}

/* The check kernel finds nothing in outputs it computes itself, and one
 * changed element where it was changed. */
static void test_check_kernel(void)
{
	struct ema_model m;
	struct ema_hwa_geom g;
	struct ema_hwa_check_entry en[3];
	struct ema_hwa_check_args ck;
	int32_t samples[4 * 2] = { 1, 0, /* layers */ 0, 0, /* sequences */ 0, 3, 0, 3 };
	float kept[2][8][128];
	uint32_t *res, hres[4];
	char *dev;
	cudaStream_t s;

	/* 2 layers, 2 KV heads of 4 query heads: 2 KiB a token, 16 in 32 KiB */
	memset(&m, 0, sizeof m);
	m.layers = 2;
	m.heads = 8;
	m.kv_heads = 2;
	m.head_dim = 128;
	CU_ASSERT_EQUAL_FATAL(ema_hwa_geom_init(&g, &m, 32 * 1024, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(g.page_tokens, 16);
	/* one sequence of three tagged pages, 16, 16 and 9 tokens, at layers 1 and 0 */
	for (int i = 0; i < 3; i++) {
		en[i].addr = 0;
		en[i].tag = 0xabc0u + (uint64_t)i;
		en[i].valid = i == 2 ? 9 : 16;
		en[i].tok_first = 16 * i;
	}
	for (int k = 0; k < 2; k++)
		for (int h = 0; h < 8; h++) {
			struct ema_hwa_page_src src[3];
			float qf[128], rl;

			for (int i = 0; i < 3; i++) {
				src[i].mem = NULL;
				src[i].tag = en[i].tag;
				src[i].valid = en[i].valid;
			}
			for (int d = 0; d < 128; d++)
				qf[d] = ema_hwa_query(5, samples[k], 0, h, d);
			ema_hwa_reference(&g, samples[k], h, qf, 3, src, kept[k][h], &rl);
		}
	CUDA_OK(cudaSetDevice(0));
	CUDA_OK(cudaStreamCreate(&s));
	CUDA_OK(cudaMalloc((void **)&dev, 4096 + sizeof kept));
	CUDA_OK(cudaMalloc((void **)&res, 16));
	CUDA_OK(cudaMemcpy(dev, samples, sizeof samples, cudaMemcpyHostToDevice));
	CUDA_OK(cudaMemcpy(dev + 64, en, sizeof en, cudaMemcpyHostToDevice));
	memset(&ck, 0, sizeof ck);
	ck.g = g;
	ck.seed = 5;
	ck.n_samples = 2;
	ck.sample_layer = (const int32_t *)(void *)dev;
	ck.sample_seq = ck.sample_layer + 2;
	ck.sample_entry = ck.sample_layer + 4;
	ck.entries = (const struct ema_hwa_check_entry *)(void *)(dev + 64);
	ck.kept = (const float *)(void *)(dev + 4096);
	ck.res = res;
	for (int round = 0; round < 2; round++) {
		CUDA_OK(cudaMemcpy(dev + 4096, kept, sizeof kept, cudaMemcpyHostToDevice));
		CUDA_OK(ema_hwa_check_reset(res, s));
		CUDA_OK(ema_hwa_check(&ck, s));
		CUDA_OK(cudaStreamSynchronize(s));
		CUDA_OK(cudaMemcpy(hres, res, 16, cudaMemcpyDeviceToHost));
		if (round == 0) {
			CU_ASSERT_EQUAL(hres[0], 0);
			/* sample 1 (layer 0), head 6, element 17 changed */
			kept[1][6][17] += 0.01f;
		} else {
			uint64_t first;

			memcpy(&first, hres + 2, 8);
			CU_ASSERT_EQUAL(hres[0], 1);
			CU_ASSERT_EQUAL(first >> 32, 1 * 8 + 6);
		}
	}
	cudaFree(dev);
	cudaFree(res);
	cudaStreamDestroy(s);
}

/* ---- steps through the platform ----------------------------------- */

static struct ema_config *mk_cfg(void)
{
	struct ema_config *cfg = calloc(1, sizeof *cfg);

	snprintf(cfg->name, sizeof cfg->name, "test-hw-attn");
	cfg->hw.n_gpus = g_gpus >= 2 ? 2 : 1;
	cfg->n_tenants = g_gpus >= 2 ? 2 : 1;
	if (g_gpus >= 2)
		cfg->tenants[1].gpu = 1;
	return cfg;
}

static struct ema_platform *mk(struct ema_config *cfg, uint64_t pb, uint64_t pages, bool verify,
			       struct ema_error *err)
{
	struct ema_platform_params pp;
	struct ema_platform_opts opts = { .verify = verify };
	uint64_t pool[EMA_MAX_GPUS] = { pages, pages };
	struct ema_platform *p = NULL;

	ema_hw_params_for_pools(&pp, cfg, pb, pool);
	if (ema_hw_platform_create(&p, &pp, &opts, err) != 0)
		return NULL;
	return p;
}

struct done {
	int n;
	struct ema_iteration_result r;
};

static void it_done(void *arg, const struct ema_iteration_result *r)
{
	struct done *d = arg;

	d->n++;
	d->r = *r;
}

static int lender(void)
{
	return g_gpus >= 2 ? 1 : 0;
}

/* A decode step of 8 sequences: 256 MiB of weights, 64 local pages, 40
 * pages on the lender computed there (16-token pages of the default
 * shape: 32 layers, 32 query heads over 8 KV heads). */
static void step(struct ema_iteration *it, int32_t *local, int32_t *remote)
{
	memset(it, 0, sizeof *it);
	it->gpu = 0;
	it->n_seqs = 8;
	it->decode_tokens = 8;
	it->weight_bytes = 256 * MIB;
	it->n_local_pages = 64;
	it->local_pages = local;
	it->kv_local_bytes = 64 * 2 * MIB;
	it->layer_groups = 8;
	it->model_layers = 32;
	it->n_remote = 1;
	it->remote[0].gpu = lender();
	it->remote[0].n_pages = 40;
	it->remote[0].pages = remote;
	it->remote[0].bytes = 40 * 2 * MIB;
	it->remote[0].compute = true;
	it->remote[0].exchange_bytes = 8ull * 32 * 32 * (128 * 6 + 4);
}

static int run_step(struct ema_platform *p, struct ema_iteration *it, struct done *d,
		    struct ema_error *err)
{
	int rc;

	memset(d, 0, sizeof *d);
	rc = p->ops->iteration(p, it, it_done, d, err);
	if (rc != 0)
		return rc;
	rc = p->ops->run(p, 0, err);
	CU_ASSERT_EQUAL(d->n, 1);
	return rc;
}

static void fill_pages(int32_t *local, int32_t *remote, uint64_t *ltags, uint64_t *rtags)
{
	for (int i = 0; i < 64; i++) {
		local[i] = 10 + i;
		ltags[i] = 0x10ca1000u + (uint64_t)i;
	}
	for (int i = 0; i < 40; i++) {
		remote[i] = 200 + 3 * i;  /* on the lender; beyond the local ones */
		rtags[i] = 0x7e3d0000u + (uint64_t)i;
	}
}

static void test_platform_steps(void)
{
	struct ema_config *cfg = mk_cfg();
	struct ema_error err = { 0, "" };
	int32_t local[64], remote[40];
	uint64_t ltags[64], rtags[40], checked, bad;
	struct ema_iteration it;
	struct done d;

	fill_pages(local, remote, ltags, rtags);
	for (int verify = 0; verify < 2; verify++) {
		struct ema_platform *p = mk(cfg, 2 * MIB, 512, verify, &err);

		if (p == NULL)
			fprintf(stderr, "create: %s\n", err.msg);
		CU_ASSERT_PTR_NOT_NULL_FATAL(p);
		CU_ASSERT_EQUAL(p->ops->tag_pages(p, 0, 64, local, ltags, NULL), 0);
		CU_ASSERT_EQUAL(p->ops->tag_pages(p, lender(), 40, remote, rtags, NULL), 0);
		for (int flag = 0; flag < 2; flag++) {
			double ms;

			CU_ASSERT_EQUAL(ema_hw_set_attention_sync(p, flag, &err), 0);
			step(&it, local, remote);
			for (int rep = 0; rep < 3; rep++) {
				int rc = run_step(p, &it, &d, &err);

				if (rc != 0)
					fprintf(stderr, "step: %s (%s)\n", err.msg, ema_hw_last_error(p));
				CU_ASSERT_EQUAL(rc, 0);
			}
			ms = (double)(d.r.end_ns - d.r.start_ns) / 1e6;
			printf("\n  %s, %s: a step of 32 layers in %.3f ms, %llu bytes exchanged",
			       verify ? "verify" : "sampled", flag ? "flag" : "event", ms,
			       (unsigned long long)d.r.remote_bytes);
			/* queries (2 bytes) out and partials (4 + 4 per head) back,
			 * 8 sequences x 32 heads x 32 layers; none with one GPU */
			CU_ASSERT_EQUAL(d.r.remote_bytes,
					g_gpus >= 2 ? 32ull * 8 * 32 * (128 * 6 + 4) : 0);
		}
		ema_hw_attention_integrity(p, &checked, &bad);
		/* 6 steps: 4 pairs x 32 heads each, or every pair (32 layers x
		 * 8 sequences) x 32 heads */
		CU_ASSERT_EQUAL(checked, verify ? 6ull * 32 * 8 * 32 : 6ull * 4 * 32);
		CU_ASSERT_EQUAL(bad, 0);
		if (g_gpus >= 2) {
			const struct ema_link_stats *ls = p->ops->link_stats(p);

			CU_ASSERT_EQUAL(ls->bytes[1][2], 6ull * 32 * 8 * 32 * 128 * 2);
			CU_ASSERT_EQUAL(ls->bytes[2][1], 6ull * 32 * 8 * 32 * (128 * 4 + 4));
		}
		p->ops->destroy(p);
	}
	free(cfg);
}

/* With in-place reads of another lender in the same step (one GPU: pages
 * of GPU 0 read "in place"), and no local pages at all. */
static void test_platform_mixed(void)
{
	struct ema_config *cfg = mk_cfg();
	struct ema_error err = { 0, "" };
	int32_t local[64], remote[40], other[30];
	uint64_t ltags[64], rtags[40], otags[30], checked, bad;
	struct ema_iteration it;
	struct done d;
	struct ema_platform *p = mk(cfg, 2 * MIB, 512, true, &err);

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	fill_pages(local, remote, ltags, rtags);
	for (int i = 0; i < 30; i++) {
		other[i] = 400 + i;
		otags[i] = 0x0e4e0000u + (uint64_t)i;
	}
	CU_ASSERT_EQUAL(p->ops->tag_pages(p, 0, 64, local, ltags, NULL), 0);
	CU_ASSERT_EQUAL(p->ops->tag_pages(p, lender(), 40, remote, rtags, NULL), 0);
	CU_ASSERT_EQUAL(p->ops->tag_pages(p, 0, 30, other, otags, NULL), 0);
	step(&it, local, remote);
	it.n_remote = 2;
	it.remote[1].gpu = 0;
	it.remote[1].n_pages = 30;
	it.remote[1].pages = other;
	it.remote[1].bytes = 30 * 2 * MIB;
	CU_ASSERT_EQUAL(run_step(p, &it, &d, &err), 0);
	/* no local pages: the lender's partials alone */
	it.n_local_pages = 0;
	it.kv_local_bytes = 0;
	it.n_remote = 1;
	CU_ASSERT_EQUAL(run_step(p, &it, &d, &err), 0);
	/* a prefill-sized step (the GEMM path) with part-full pages */
	step(&it, local, remote);
	it.flops = 4e12;
	it.remote[0].bytes = 40 * 2 * MIB - 40 * 200000;
	CU_ASSERT_EQUAL(run_step(p, &it, &d, &err), 0);
	ema_hw_attention_integrity(p, &checked, &bad);
	CU_ASSERT(checked > 0);
	CU_ASSERT_EQUAL(bad, 0);
	p->ops->destroy(p);
	free(cfg);
}

/* A page of the lender with other content than the engine gave it: the
 * attention check stops the run (a page the page check does not sample:
 * the attention's own check catches it), and a partial corrupted by the
 * fault hook does too; after both the steps are clean again. */
static void test_corruption_detected(void)
{
	struct ema_config *cfg = mk_cfg();
	struct ema_error err = { 0, "" };
	int32_t local[64], remote[40];
	uint64_t ltags[64], rtags[40], checked, bad;
	struct ema_iteration it;
	struct done d;
	struct ema_platform *p = mk(cfg, 2 * MIB, 512, false, &err);

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	fill_pages(local, remote, ltags, rtags);
	CU_ASSERT_EQUAL(p->ops->tag_pages(p, 0, 64, local, ltags, NULL), 0);
	CU_ASSERT_EQUAL(p->ops->tag_pages(p, lender(), 40, remote, rtags, NULL), 0);
	step(&it, local, remote);
	CU_ASSERT_EQUAL(run_step(p, &it, &d, &err), 0);
	/* the sampled sequences of 8 are 1, 3, 5, 7; sequence 1 has remote
	 * pages 5..9; the page check samples every 3rd of 40 (0, 3, 6, 9,
	 * ...): page 7 is seen by the attention check alone */
	CU_ASSERT_EQUAL(ema_hw_fill_page(p, lender(), remote[7], 0xbad), 0);
	err.msg[0] = '\0';
	CU_ASSERT_EQUAL(run_step(p, &it, &d, &err), EMA_ERR_CORRUPT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "attention outputs"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "sequence 1"));
	printf("\n  a wrong page: %s", err.msg);
	/* page 6 is also seen by the page check, which names it */
	CU_ASSERT_EQUAL(ema_hw_fill_page(p, lender(), remote[7], rtags[7]), 0);
	CU_ASSERT_EQUAL(ema_hw_fill_page(p, lender(), remote[6], 0xbad), 0);
	err.msg[0] = '\0';
	CU_ASSERT_EQUAL(run_step(p, &it, &d, &err), EMA_ERR_CORRUPT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "read them in place"));
	CU_ASSERT_EQUAL(ema_hw_fill_page(p, lender(), remote[6], rtags[6]), 0);
	CU_ASSERT_EQUAL(run_step(p, &it, &d, &err), 0);
	/* a wrong partial, with each way of waiting */
	for (int flag = 0; flag < 2; flag++) {
		CU_ASSERT_EQUAL(ema_hw_set_attention_sync(p, flag, &err), 0);
		ema_hw_attention_fault(p);
		err.msg[0] = '\0';
		CU_ASSERT_EQUAL(run_step(p, &it, &d, &err), EMA_ERR_CORRUPT);
		CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "layer 4, sequence 1, head 0"));
		printf("\n  a wrong partial (%s): %s", flag ? "flag" : "event", err.msg);
		CU_ASSERT_EQUAL(run_step(p, &it, &d, &err), 0);
	}
	/* each wrong page made every head of its sampled pairs wrong (up to
	 * 32 each), each wrong partial one output */
	ema_hw_attention_integrity(p, &checked, &bad);
	CU_ASSERT(bad >= 4 && bad <= 2 * 32 + 2);
	p->ops->destroy(p);
	free(cfg);
}

static void test_errors(void)
{
	struct ema_config *cfg = mk_cfg();
	struct ema_error err = { 0, "" };
	int32_t local[64], remote[40], staging[8];
	uint64_t ltags[64], rtags[40];
	struct ema_iteration it;
	struct ema_platform *p;

	fill_pages(local, remote, ltags, rtags);
	for (int i = 0; i < 8; i++)
		staging[i] = 480 + i;
	/* a bad EMA_HW_ATTN_SYNC: create says so */
	setenv("EMA_HW_ATTN_SYNC", "semaphore", 1);
	CU_ASSERT_PTR_NULL(mk(cfg, 2 * MIB, 512, false, &err));
	CU_ASSERT_EQUAL(err.code, EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "EMA_HW_ATTN_SYNC: expected event or flag"));
	setenv("EMA_HW_ATTN_SYNC", "flag", 1);
	p = mk(cfg, 2 * MIB, 512, false, &err);
	unsetenv("EMA_HW_ATTN_SYNC");
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	/* staged copies of one lender beside the attention of another */
	step(&it, local, remote);
	it.n_remote = 2;
	it.remote[1].gpu = 0;
	it.remote[1].n_pages = 4;
	it.remote[1].pages = local + 60;
	it.remote[1].bytes = 4 * 2 * MIB;
	it.prefetch_depth = 1;
	it.staging_pages = staging;
	it.n_staging_pages = 8;
	CU_ASSERT_EQUAL(p->ops->iteration(p, &it, it_done, NULL, &err), EMA_ERR_UNSUPPORTED);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "both stages remote KV and computes"));
	/* one lender twice */
	step(&it, local, remote);
	it.n_remote = 2;
	it.remote[1] = it.remote[0];
	CU_ASSERT_EQUAL(p->ops->iteration(p, &it, it_done, NULL, &err), EMA_ERR_INTERNAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "given twice"));
	p->ops->destroy(p);
	/* pages that hold no token of the model */
	p = mk(cfg, 64 * 1024, 512, false, &err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	step(&it, local, remote);
	it.kv_local_bytes = 64 * 64 * 1024;
	it.remote[0].bytes = 40 * 64 * 1024;
	CU_ASSERT_EQUAL(p->ops->iteration(p, &it, it_done, NULL, &err), EMA_ERR_UNSUPPORTED);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "holds 0 tokens"));
	p->ops->destroy(p);
	free(cfg);
}

/* EMA_TEST_HW_ATTN_SOAK=N: N random steps, every output and page
 * checked, random sequences, pages, bytes, GPUs and way of waiting;
 * the run's figures on stdout. */
static void test_soak(void)
{
	const char *env = getenv("EMA_TEST_HW_ATTN_SOAK");
	long n = env != NULL ? strtol(env, NULL, 10) : 0;
	struct ema_config *cfg = mk_cfg();
	struct ema_error err = { 0, "" };
	struct ema_platform *p;
	int32_t *all = malloc(1024 * sizeof *all);
	uint64_t *tags = malloc(1024 * sizeof *tags), x = 2026, checked, bad;
	double total_ms = 0;
	int failed = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(all);
	CU_ASSERT_PTR_NOT_NULL_FATAL(tags);
	p = mk(cfg, 2 * MIB, 1024, true, &err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	for (int i = 0; i < 1024; i++) {
		all[i] = i;
		tags[i] = 0x50a40000u + (uint64_t)i;
	}
	CU_ASSERT_EQUAL(p->ops->tag_pages(p, 0, 1024, all, tags, NULL), 0);
	if (g_gpus >= 2)
		CU_ASSERT_EQUAL(p->ops->tag_pages(p, 1, 1024, all, tags, NULL), 0);
	for (long i = 0; i < n; i++) {
		struct ema_iteration it;
		struct done d;
		int32_t local[256], remote[512];
		int nl, nr, rc;

		x = x * 6364136223846793005ull + 1442695040888963407ull;
		nl = (int)((x >> 33) % 200);
		nr = 1 + (int)((x >> 45) % 300);
		/* pages 0..511 local, 512..1023 lent (on GPU 1 with two) */
		for (int k = 0; k < nl; k++)
			local[k] = (int32_t)(((uint64_t)k * 7 + (x >> 20)) % 512);
		for (int k = 0; k < nr; k++)
			remote[k] = 512 + (int32_t)(((uint64_t)k * 13 + (x >> 24)) % 512);
		memset(&it, 0, sizeof it);
		it.gpu = 0;
		it.n_seqs = 1 + (int)((x >> 12) % 96);
		it.decode_tokens = it.n_seqs;
		it.weight_bytes = (uint64_t)(64 + (x >> 50) % 256) * MIB;
		it.n_local_pages = nl;
		it.local_pages = local;
		it.kv_local_bytes = (uint64_t)nl * 2 * MIB - (uint64_t)nl * ((x >> 8) % 100000);
		it.model_layers = 32;
		it.n_remote = 1;
		it.remote[0].gpu = lender();
		it.remote[0].n_pages = nr;
		it.remote[0].pages = remote;
		it.remote[0].bytes = (uint64_t)nr * 2 * MIB - (uint64_t)nr * ((x >> 16) % 1000000);
		it.remote[0].compute = true;
		ema_hw_set_attention_sync(p, (x >> 40) & 1, NULL);
		rc = run_step(p, &it, &d, &err);
		if (rc != 0) {
			fprintf(stderr, "soak step %ld: %s\n", i, err.msg);
			failed++;
			break;
		}
		total_ms += (double)(d.r.end_ns - d.r.start_ns) / 1e6;
	}
	ema_hw_attention_integrity(p, &checked, &bad);
	printf("\n  soak: %ld steps (%.1f ms on the GPUs), %llu attention outputs checked, "
	       "%llu wrong, %d failed", n, total_ms, (unsigned long long)checked,
	       (unsigned long long)bad, failed);
	CU_ASSERT_EQUAL(failed, 0);
	CU_ASSERT_EQUAL(bad, 0);
	p->ops->destroy(p);
	free(all);
	free(tags);
	free(cfg);
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{ "kernels against the CPU reference", test_kernels },
		{ "the check kernel", test_check_kernel },
		{ "steps with remote attention, both ways of waiting", test_platform_steps },
		{ "steps mixed with in-place reads, no local pages, GEMM", test_platform_mixed },
		{ "a wrong page and a wrong partial stop the run", test_corruption_detected },
		{ "errors", test_errors },
		{ NULL, NULL },
		{ NULL, NULL }
	};
	static struct ema_test_case with_soak[8];
	struct ema_error err = { 0, "" };
	int n = ema_hw_gpu_count(&err);

	if (n < 0) {
		printf("test_hw_attn: skipped: %s\n", err.msg);
		return 77;
	}
	if (n < 1) {
		printf("test_hw_attn: skipped: no GPU\n");
		return 77;
	}
	g_gpus = n;
	printf("test_hw_attn: %d GPU(s); the lender is %s\n", n,
	       n >= 2 ? "GPU 1" : "a second stream of GPU 0");
	if (getenv("EMA_TEST_HW_ATTN_SOAK") != NULL) {
		memcpy(with_soak, cases, sizeof cases);
		with_soak[6].name = "soak (EMA_TEST_HW_ATTN_SOAK steps, every output checked)";
		with_soak[6].fn = test_soak;
		return ema_test_run("hw remote attention", with_soak);
	}
	return ema_test_run("hw remote attention", cases);
}

#else

#include <stdio.h>

int main(void)
{
	printf("test_hw_attn: skipped: built without CUDA\n");
	return 77;
}

#endif
