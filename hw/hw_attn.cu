/* hw_attn.cu: the device code of remote attention (hw_attn_kernels.h):
 * the queries of a layer, split-K paged decode attention over a part's
 * pages (fp16 K and V, fp32 accumulation, grouped-query heads sharing each
 * load), the borrower's merge of the parts, and the check of kept outputs
 * against a reference built from the pages' tags. What a page holds and
 * how partials merge are hw_attn.h's, shared with the CPU reference. */
#include "hw_attn_kernels.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define HWA_THREADS 128
#define HWA_WARPS (HWA_THREADS / 32)
#define HWA_FULL 0xffffffffu
#define HWA_LN2 0.69314718055994531f
#define HWA_LOG2E 1.4426950408889634f

/* 16 bytes of a page (8 fp16 elements) as floats, read as hw_attn.h
 * says: bit 14 of each element cleared. */
__device__ __forceinline__ void hwa_decode8(uint4 r, float *f)
{
	const uint32_t w[4] = { r.x, r.y, r.z, r.w };

#pragma unroll
	for (int i = 0; i < 4; i++) {
		f[2 * i] = __half2float(__ushort_as_half((unsigned short)(w[i] & EMA_HWA_HALF_MASK)));
		f[2 * i + 1] = __half2float(
			__ushort_as_half((unsigned short)((w[i] >> 16) & EMA_HWA_HALF_MASK)));
	}
}

/* Merges the running state (m, l, acc) of another set of tokens into
 * this one; m in log2 units, acc not yet divided by l. */
__device__ __forceinline__ void hwa_merge_state(float &m, float &l, float *acc, float mo, float lo,
						const float *ao)
{
	const float top = fmaxf(m, mo);
	float c1, c2;

	if (top == -INFINITY)
		return;
	c1 = m == -INFINITY ? 0.0f : exp2f(m - top);
	c2 = mo == -INFINITY ? 0.0f : exp2f(mo - top);
	l = l * c1 + lo * c2;
#pragma unroll
	for (int i = 0; i < 8; i++)
		acc[i] = acc[i] * c1 + ao[i] * c2;
	m = top;
}

/* One token for the lanes of a sub-warp: its scores for the G heads
 * (reduced over the LPT lanes that hold its head_dim), then the online
 * softmax update. All lanes of the warp call it (the shuffles need
 * them); act says whether the sub-warp had a token. */
template <int LPT, int G>
__device__ __forceinline__ void hwa_token(const float (&q)[G][8], float (&acc)[G][8], float (&m)[G],
					  float (&l)[G], uint4 kr, uint4 vr, bool act)
{
	float k[8], v[8], sc[G];

	hwa_decode8(kr, k);
	hwa_decode8(vr, v);
#pragma unroll
	for (int g = 0; g < G; g++) {
		float x = 0.0f;

#pragma unroll
		for (int i = 0; i < 8; i++)
			x = fmaf(q[g][i], k[i], x);
		sc[g] = x;
	}
#pragma unroll
	for (int off = LPT / 2; off >= 1; off >>= 1)
#pragma unroll
		for (int g = 0; g < G; g++)
			sc[g] += __shfl_xor_sync(HWA_FULL, sc[g], off);
	if (!act)
		return;
#pragma unroll
	for (int g = 0; g < G; g++) {
		const float top = fmaxf(m[g], sc[g]);
		const float c = exp2f(m[g] - top);
		const float p = exp2f(sc[g] - top);

		l[g] = l[g] * c + p;
#pragma unroll
		for (int i = 0; i < 8; i++)
			acc[g][i] = fmaf(p, v[i], acc[g][i] * c);
		m[g] = top;
	}
}

/* Address of token j of a block's chunk (pages from c0 on, `valid` tokens
 * each) for this lane: K at the result, V one run further. */
__device__ __forceinline__ const char *hwa_token_addr(const struct ema_hwa_attend_args &a, int c0,
						      int j, uint64_t lane_off, int D)
{
	const int pi = c0 + j / a.valid, t = j % a.valid;

	return a.pool + (uint64_t)a.pages[pi] * a.g.page_bytes + lane_off + (uint64_t)t * D * 2;
}

/* Block = (sequence s, KV head h, split). Sub-warps of LPT lanes take one
 * token each (8 dims, 16 bytes, per lane), two tokens in flight per
 * sub-warp; the G query heads of h share every load. The block's state is
 * merged over sub-warps (shuffles) and warps (shared memory); with
 * splits > 1 the last block of (s, h) to finish merges the splits. */
template <int LPT, int G>
__global__ void __launch_bounds__(HWA_THREADS)
hwa_attend_kernel(const struct ema_hwa_attend_args a)
{
	constexpr int D = LPT * 8;
	constexpr int SPW = 32 / LPT;           /* tokens per warp at a time */
	constexpr int NSW = HWA_WARPS * SPW;    /* tokens per block at a time */
	__shared__ float sm_m[HWA_WARPS][G], sm_l[HWA_WARPS][G];
	__shared__ float sm_acc[HWA_WARPS][G][D];
	__shared__ int sm_last;
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int sub = lane / LPT, li = lane % LPT;
	const int H = a.g.kv_heads, Hq = H * G, splits = a.splits;
	const int split = (int)(blockIdx.x % (unsigned)splits);
	const int row = (int)(blockIdx.x / (unsigned)splits);
	const int s = row / H, h = row % H;
	const int p0 = a.seq_first[s], np = a.seq_first[s + 1] - p0;
	const int c0 = p0 + (int)((long long)np * split / splits);
	const int c1 = p0 + (int)((long long)np * (split + 1) / splits);
	const int ntok = (c1 - c0) * a.valid;
	const uint64_t run = (uint64_t)a.g.page_tokens * D * 2;
	const uint64_t lane_off = ((uint64_t)a.layer * (uint64_t)H + (uint64_t)h) * 2 * run +
				  (uint64_t)li * 16;
	const float scale = HWA_LOG2E / sqrtf((float)D);
	float q[G][8], acc[G][8], m[G], l[G];

#pragma unroll
	for (int g = 0; g < G; g++) {
		float f[8];

		hwa_decode8(*(const uint4 *)(a.q + ((size_t)(s * Hq + h * G + g) * D + li * 8)), f);
#pragma unroll
		for (int i = 0; i < 8; i++) {
			q[g][i] = f[i] * scale;
			acc[g][i] = 0.0f;
		}
		m[g] = -INFINITY;
		l[g] = 0.0f;
	}
	/* warp-uniform trip count: every lane reaches the shuffles */
	for (int b0 = warp * SPW; b0 < ntok; b0 += 2 * NSW) {
		const int j0 = b0 + sub, j1 = b0 + NSW + sub;
		const bool a0 = j0 < ntok, a1 = j1 < ntok;
		uint4 k0 = make_uint4(0, 0, 0, 0), v0 = k0, k1 = k0, v1 = k0;

		if (a0) {
			const char *p = hwa_token_addr(a, c0, j0, lane_off, D);

			k0 = __ldcs((const uint4 *)p);
			v0 = __ldcs((const uint4 *)(p + run));
		}
		if (a1) {
			const char *p = hwa_token_addr(a, c0, j1, lane_off, D);

			k1 = __ldcs((const uint4 *)p);
			v1 = __ldcs((const uint4 *)(p + run));
		}
		hwa_token<LPT, G>(q, acc, m, l, k0, v0, a0);
		hwa_token<LPT, G>(q, acc, m, l, k1, v1, a1);
	}
	/* sub-warps of a warp: lanes with the same dims, off apart */
#pragma unroll
	for (int off = LPT; off < 32; off <<= 1)
#pragma unroll
		for (int g = 0; g < G; g++) {
			const float mo = __shfl_xor_sync(HWA_FULL, m[g], off);
			const float lo = __shfl_xor_sync(HWA_FULL, l[g], off);
			float ao[8];

#pragma unroll
			for (int i = 0; i < 8; i++)
				ao[i] = __shfl_xor_sync(HWA_FULL, acc[g][i], off);
			hwa_merge_state(m[g], l[g], acc[g], mo, lo, ao);
		}
	if (sub == 0)
#pragma unroll
		for (int g = 0; g < G; g++) {
			if (li == 0) {
				sm_m[warp][g] = m[g];
				sm_l[warp][g] = l[g];
			}
#pragma unroll
			for (int i = 0; i < 8; i++)
				sm_acc[warp][g][li * 8 + i] = acc[g][i];
		}
	__syncthreads();
	if (warp == 0 && sub == 0) {
		for (int w = 1; w < HWA_WARPS; w++)
#pragma unroll
			for (int g = 0; g < G; g++)
				hwa_merge_state(m[g], l[g], acc[g], sm_m[w][g], sm_l[w][g],
						&sm_acc[w][g][li * 8]);
#pragma unroll
		for (int g = 0; g < G; g++) {
			const size_t hr = (size_t)s * Hq + (size_t)h * G + g;
			const float inv = l[g] > 0.0f ? 1.0f / l[g] : 0.0f;
			/* log2 units until the final write */
			const float lse2 = l[g] > 0.0f ? m[g] + log2f(l[g]) : -INFINITY;
			float *o;

#pragma unroll
			for (int i = 0; i < 8; i++)
				acc[g][i] *= inv;
			if (splits == 1) {
				o = a.o + hr * D + li * 8;
				if (li == 0) {
					a.lse[hr] = lse2 * HWA_LN2;
					if (a.fault == s + 1 && h == 0 && g == 0)
						acc[g][0] += 0.5f;  /* tests: a wrong partial */
				}
			} else {
				const size_t at = hr * (size_t)splits + (size_t)split;

				o = a.scratch + at * D + li * 8;
				if (li == 0)
					a.scratch[(size_t)a.n_seqs * Hq * splits * D + at] = lse2;
			}
			*(float4 *)o = make_float4(acc[g][0], acc[g][1], acc[g][2], acc[g][3]);
			*(float4 *)(o + 4) = make_float4(acc[g][4], acc[g][5], acc[g][6], acc[g][7]);
		}
	}
	if (splits > 1) {
		/* the last block of (s, h) merges the splits' partials */
		__threadfence();
		__syncthreads();
		if (threadIdx.x == 0) {
			const unsigned prev = atomicAdd(&a.counters[row], 1u);

			sm_last = prev == (unsigned)splits - 1;
			if (sm_last)
				a.counters[row] = 0;
		}
		__syncthreads();
		if (!sm_last)
			return;
		__threadfence();
		if (warp == 0 && sub == 0) {
			const float *so = a.scratch, *sl = a.scratch + (size_t)a.n_seqs * Hq * splits * D;

			for (int g = 0; g < G; g++) {
				const size_t hr = (size_t)s * Hq + (size_t)h * G + g;
				const size_t at = hr * (size_t)splits;
				float top = -INFINITY, wsum = 0.0f, o8[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };
				float *o = a.o + hr * D + li * 8;

				for (int j = 0; j < splits; j++)
					top = fmaxf(top, __ldcg(sl + at + j));
				for (int j = 0; top != -INFINITY && j < splits; j++) {
					const float lj = __ldcg(sl + at + j);
					const float4 x = __ldcg((const float4 *)(so + (at + j) * D + li * 8));
					const float4 y = __ldcg((const float4 *)(so + (at + j) * D + li * 8 + 4));
					float w;

					if (lj == -INFINITY)
						continue;
					w = exp2f(lj - top);
					wsum += w;
					o8[0] += w * x.x;
					o8[1] += w * x.y;
					o8[2] += w * x.z;
					o8[3] += w * x.w;
					o8[4] += w * y.x;
					o8[5] += w * y.y;
					o8[6] += w * y.z;
					o8[7] += w * y.w;
				}
				if (li == 0 && a.fault == s + 1 && h == 0 && g == 0)
					o8[0] += 0.5f * wsum;  /* tests: a wrong partial */
				{
					const float inv = wsum > 0.0f ? 1.0f / wsum : 0.0f;

					*(float4 *)o = make_float4(o8[0] * inv, o8[1] * inv, o8[2] * inv,
								   o8[3] * inv);
					*(float4 *)(o + 4) = make_float4(o8[4] * inv, o8[5] * inv,
									 o8[6] * inv, o8[7] * inv);
				}
				if (li == 0)
					a.lse[hr] = wsum > 0.0f ? (top + log2f(wsum)) * HWA_LN2 : -INFINITY;
			}
		}
	}
	if (a.flag != NULL) {
		/* every (s, h) written: the last of them raises the flag, after
		 * a system-wide fence, so the waiter sees the partials first */
		__threadfence_system();
		__syncthreads();
		if (threadIdx.x == 0) {
			const unsigned total = (unsigned)(a.n_seqs * H);
			const unsigned prev = atomicAdd(&a.counters[total], 1u);

			if (prev == total - 1) {
				a.counters[total] = 0;
				__threadfence_system();
				*(volatile uint32_t *)a.flag = a.flag_value;
			}
		}
	}
}

/* Eight consecutive query elements per thread, stored to every
 * destination as one 16-byte write. */
__global__ void hwa_query_kernel(const struct ema_hwa_query_args a)
{
	const int per_row = a.head_dim / 8;
	const uint64_t total = (uint64_t)a.n_seqs * (uint64_t)a.heads * (uint64_t)per_row;

	for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < total;
	     i += (uint64_t)gridDim.x * blockDim.x) {
		const int c = (int)(i % (uint64_t)per_row);
		const uint64_t r = i / (uint64_t)per_row;
		const int hq = (int)(r % (uint64_t)a.heads), s = (int)(r / (uint64_t)a.heads);
		uint32_t w[4];
		uint4 v;

#pragma unroll
		for (int j = 0; j < 4; j++) {
			const unsigned short lo = __half_as_ushort(
				__float2half_rn(ema_hwa_query(a.seed, a.layer, s, hq, c * 8 + 2 * j)));
			const unsigned short hi = __half_as_ushort(
				__float2half_rn(ema_hwa_query(a.seed, a.layer, s, hq, c * 8 + 2 * j + 1)));

			w[j] = (uint32_t)lo | ((uint32_t)hi << 16);
		}
		v = make_uint4(w[0], w[1], w[2], w[3]);
		for (int d = 0; d < a.n_dst; d++)
			*(uint4 *)(a.dst[d] + i * 8) = v;
	}
	if (a.n_flag > 0) {
		__threadfence_system();
		__syncthreads();
		if (threadIdx.x == 0) {
			const unsigned prev = atomicAdd(a.counter, 1u);

			if (prev == gridDim.x - 1) {
				*a.counter = 0;
				__threadfence_system();
				for (int f = 0; f < a.n_flag; f++)
					*(volatile uint32_t *)a.flag[f] = a.flag_value[f];
			}
		}
	}
}

/* One warp per (sequence, head): lane d-th of each 32 dims. */
__global__ void hwa_combine_kernel(const struct ema_hwa_combine_args a)
{
	const int wid = (int)((blockIdx.x * (uint64_t)blockDim.x + threadIdx.x) >> 5);
	const int lane = threadIdx.x & 31, D = a.head_dim, nd = D / 32;
	const int rows = a.n_seqs * a.heads;
	float top = -INFINITY, wsum = 0.0f, o[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };
	int s, hq, k;

	if (wid >= rows)
		return;
	s = wid / a.heads;
	hq = wid % a.heads;
	for (int p = 0; p < a.n_parts; p++)
		top = fmaxf(top, a.lse[p][wid]);
	for (int p = 0; top != -INFINITY && p < a.n_parts; p++) {
		const float lp = a.lse[p][wid];
		float w;

		if (lp == -INFINITY)
			continue;
		w = expf(lp - top);
		wsum += w;
#pragma unroll
		for (int i = 0; i < 8; i++)
			if (i < nd)
				o[i] += w * a.o[p][(size_t)wid * D + lane + 32 * i];
	}
	k = a.kept_row != NULL ? a.kept_row[(size_t)a.layer * a.n_seqs + s] : -1;
#pragma unroll
	for (int i = 0; i < 8; i++)
		if (i < nd) {
			const float v = wsum > 0.0f ? o[i] / wsum : 0.0f;

			a.out[(size_t)wid * D + lane + 32 * i] = v;
			if (k >= 0)
				a.kept[((size_t)k * a.heads + hq) * D + lane + 32 * i] = v;
		}
}

/* Block = (sample k, KV head h), its 4 warps over the sample's tokens,
 * all query heads of h at once, lanes over dims; the reference of each
 * head, merged over the warps, is compared with the kept output. */
__global__ void __launch_bounds__(HWA_THREADS)
hwa_check_kernel(const struct ema_hwa_check_args a)
{
	__shared__ float sm_m[HWA_WARPS][EMA_HWA_MAX_GROUP], sm_l[HWA_WARPS][EMA_HWA_MAX_GROUP];
	__shared__ float sm_acc[HWA_WARPS][EMA_HWA_MAX_GROUP][EMA_HWA_MAX_HEAD_DIM];
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int H = a.g.kv_heads, G = a.g.group, D = a.g.head_dim, Hq = H * G, nd = D / 32;
	const int k = (int)(blockIdx.x / (unsigned)H), h = (int)(blockIdx.x % (unsigned)H);
	const int layer = a.sample_layer[k], seq = a.sample_seq[k];
	const int e0 = a.sample_entry[2 * k], e1 = a.sample_entry[2 * k + 1];
	const int ntok = e1 > e0 ? a.entries[e1 - 1].tok_first + a.entries[e1 - 1].valid : 0;
	const float scale = 1.0f / sqrtf((float)D);
	float q[EMA_HWA_MAX_GROUP][8], acc[EMA_HWA_MAX_GROUP][8], m[EMA_HWA_MAX_GROUP],
		l[EMA_HWA_MAX_GROUP];
	int e = e0;

#pragma unroll
	for (int g = 0; g < EMA_HWA_MAX_GROUP; g++) {
#pragma unroll
		for (int i = 0; i < 8; i++) {
			q[g][i] = g < G && i < nd ? ema_hwa_query(a.seed, layer, seq, h * G + g,
								  lane + 32 * i) : 0.0f;
			acc[g][i] = 0.0f;
		}
		m[g] = -INFINITY;
		l[g] = 0.0f;
	}
	for (int j = warp; j < ntok; j += HWA_WARPS) {
		const struct ema_hwa_check_entry *en;
		float kk[8], vv[8];
		int t;

		while (e + 1 < e1 && a.entries[e + 1].tok_first <= j)
			e++;
		en = &a.entries[e];
		t = j - en->tok_first;
#pragma unroll
		for (int i = 0; i < 8; i++) {
			kk[i] = vv[i] = 0.0f;
			if (i < nd) {
				const uint64_t ok = ema_hwa_offset(&a.g, layer, h, 0, t, lane + 32 * i);
				const uint64_t ov = ema_hwa_offset(&a.g, layer, h, 1, t, lane + 32 * i);
				uint16_t bk, bv;

				if (en->tag != 0) {
					bk = ema_hwa_tag_bits(en->tag, ok);
					bv = ema_hwa_tag_bits(en->tag, ov);
				} else {
					bk = *(const uint16_t *)(uintptr_t)(en->addr + ok) & EMA_HWA_HALF_MASK;
					bv = *(const uint16_t *)(uintptr_t)(en->addr + ov) & EMA_HWA_HALF_MASK;
				}
				kk[i] = __half2float(__ushort_as_half(bk));
				vv[i] = __half2float(__ushort_as_half(bv));
			}
		}
#pragma unroll
		for (int g = 0; g < EMA_HWA_MAX_GROUP; g++) {
			float sc = 0.0f, top, c, p;

			if (g >= G)
				break;
#pragma unroll
			for (int i = 0; i < 8; i++)
				sc = fmaf(q[g][i], kk[i], sc);
			for (int off = 16; off >= 1; off >>= 1)
				sc += __shfl_xor_sync(HWA_FULL, sc, off);
			sc *= scale;
			top = fmaxf(m[g], sc);
			c = expf(m[g] - top);
			p = expf(sc - top);
			l[g] = l[g] * c + p;
#pragma unroll
			for (int i = 0; i < 8; i++)
				acc[g][i] = fmaf(p, vv[i], acc[g][i] * c);
			m[g] = top;
		}
	}
#pragma unroll
	for (int g = 0; g < EMA_HWA_MAX_GROUP; g++) {
		if (g >= G)
			break;
		if (lane == 0) {
			sm_m[warp][g] = m[g];
			sm_l[warp][g] = l[g];
		}
#pragma unroll
		for (int i = 0; i < 8; i++)
			if (i < nd)
				sm_acc[warp][g][lane + 32 * i] = acc[g][i];
	}
	__syncthreads();
	if (warp != 0)
		return;
	for (int g = 0; g < G; g++) {
		const float *kept = a.kept + ((size_t)k * Hq + (size_t)h * G + g) * D;
		float top = -INFINITY, wsum = 0.0f, err = 0.0f, big = 0.0f;
		bool nan = false;
		float o[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };

		for (int w = 0; w < HWA_WARPS; w++)
			top = fmaxf(top, sm_m[w][g]);
		for (int w = 0; top != -INFINITY && w < HWA_WARPS; w++) {
			float c;

			if (sm_m[w][g] == -INFINITY)
				continue;
			c = expf(sm_m[w][g] - top);
			wsum += sm_l[w][g] * c;
#pragma unroll
			for (int i = 0; i < 8; i++)
				if (i < nd)
					o[i] += sm_acc[w][g][lane + 32 * i] * c;
		}
#pragma unroll
		for (int i = 0; i < 8; i++)
			if (i < nd) {
				const float ref = wsum > 0.0f ? o[i] / wsum : 0.0f;
				const float d = fabsf(kept[lane + 32 * i] - ref);

				nan |= isnan(d);
				err = fmaxf(err, d);
				big = fmaxf(big, fabsf(ref));
			}
		for (int off = 16; off >= 1; off >>= 1) {
			err = fmaxf(err, __shfl_xor_sync(HWA_FULL, err, off));
			big = fmaxf(big, __shfl_xor_sync(HWA_FULL, big, off));
		}
		nan = __any_sync(HWA_FULL, nan);
		if (lane == 0 && (nan || !(err <= (float)EMA_HWA_TOL * big + (float)EMA_HWA_TOL_ABS))) {
			const unsigned long long idx = (unsigned long long)k * Hq + h * G + g;

			atomicAdd(a.res, 1u);
			atomicMin((unsigned long long *)(a.res + 2),
				  (idx << 32) | __float_as_uint(nan ? __int_as_float(0x7fc00000) : err));
		}
	}
}

extern "C" uint64_t ema_hwa_scratch_bytes(const struct ema_hwa_geom *g, int n_seqs, int splits)
{
	uint64_t rows = (uint64_t)n_seqs * (uint64_t)g->kv_heads * (uint64_t)g->group;

	return splits > 1 ? rows * (uint64_t)splits * ((uint64_t)g->head_dim + 1) * 4 : 0;
}

extern "C" uint64_t ema_hwa_counter_bytes(const struct ema_hwa_geom *g, int n_seqs)
{
	return ((uint64_t)n_seqs * (uint64_t)g->kv_heads + 1) * 4;
}

template <int LPT>
static void hwa_launch_attend(const struct ema_hwa_attend_args *a, unsigned grid, cudaStream_t s)
{
	switch (a->g.group) {
	case 1: hwa_attend_kernel<LPT, 1><<<grid, HWA_THREADS, 0, s>>>(*a); break;
	case 2: hwa_attend_kernel<LPT, 2><<<grid, HWA_THREADS, 0, s>>>(*a); break;
	case 4: hwa_attend_kernel<LPT, 4><<<grid, HWA_THREADS, 0, s>>>(*a); break;
	default: hwa_attend_kernel<LPT, 8><<<grid, HWA_THREADS, 0, s>>>(*a); break;
	}
}

extern "C" int ema_hwa_attend(const struct ema_hwa_attend_args *a, cudaStream_t s)
{
	uint64_t grid;

	if (a == NULL || a->n_seqs < 1 || a->splits < 1 || a->splits > EMA_HWA_MAX_SPLITS ||
	    a->valid < 0 || a->valid > a->g.page_tokens || a->g.kv_heads < 1 ||
	    (a->g.group != 1 && a->g.group != 2 && a->g.group != 4 && a->g.group != 8) ||
	    a->layer < 0 || a->layer >= a->g.layers || a->o == NULL || a->lse == NULL ||
	    (a->splits > 1 && (a->scratch == NULL || a->counters == NULL)) ||
	    (a->flag != NULL && a->counters == NULL))
		return (int)cudaErrorInvalidValue;
	grid = (uint64_t)a->n_seqs * (uint64_t)a->g.kv_heads * (uint64_t)a->splits;
	if (grid > 0x7fffffffu)
		return (int)cudaErrorInvalidValue;
	switch (a->g.head_dim) {
	case 64: hwa_launch_attend<8>(a, (unsigned)grid, s); break;
	case 128: hwa_launch_attend<16>(a, (unsigned)grid, s); break;
	case 256: hwa_launch_attend<32>(a, (unsigned)grid, s); break;
	default: return (int)cudaErrorInvalidValue;
	}
	return (int)cudaGetLastError();
}

extern "C" int ema_hwa_queries(const struct ema_hwa_query_args *a, cudaStream_t s)
{
	uint64_t total, blocks;

	if (a == NULL || a->n_seqs < 1 || a->heads < 1 || a->head_dim % 8 != 0 ||
	    a->n_dst < 1 || a->n_dst > EMA_HWA_MAX_PARTS || a->n_flag < 0 ||
	    a->n_flag > EMA_HWA_MAX_PARTS || (a->n_flag > 0 && a->counter == NULL))
		return (int)cudaErrorInvalidValue;
	total = (uint64_t)a->n_seqs * (uint64_t)a->heads * (uint64_t)(a->head_dim / 8);
	blocks = (total + 255) / 256;
	if (blocks > 1024)
		blocks = 1024;
	hwa_query_kernel<<<(unsigned)blocks, 256, 0, s>>>(*a);
	return (int)cudaGetLastError();
}

extern "C" int ema_hwa_combine(const struct ema_hwa_combine_args *a, cudaStream_t s)
{
	uint64_t warps;

	if (a == NULL || a->n_parts < 1 || a->n_parts > EMA_HWA_MAX_PARTS || a->n_seqs < 1 ||
	    a->heads < 1 || a->head_dim % 32 != 0 || a->head_dim > EMA_HWA_MAX_HEAD_DIM ||
	    a->out == NULL || (a->kept_row != NULL && a->kept == NULL))
		return (int)cudaErrorInvalidValue;
	warps = (uint64_t)a->n_seqs * (uint64_t)a->heads;
	hwa_combine_kernel<<<(unsigned)((warps + 3) / 4), 128, 0, s>>>(*a);
	return (int)cudaGetLastError();
}

extern "C" int ema_hwa_check_reset(uint32_t *res, cudaStream_t s)
{
	cudaError_t e = cudaMemsetAsync(res, 0, 8, s);

	if (e == cudaSuccess)
		e = cudaMemsetAsync(res + 2, 0xff, 8, s);
	return (int)e;
}

extern "C" int ema_hwa_check(const struct ema_hwa_check_args *a, cudaStream_t s)
{
	if (a == NULL || a->n_samples < 0 || a->g.group > EMA_HWA_MAX_GROUP ||
	    a->g.head_dim % 32 != 0 || a->g.head_dim > EMA_HWA_MAX_HEAD_DIM || a->res == NULL)
		return (int)cudaErrorInvalidValue;
	if (a->n_samples == 0)
		return 0;
	hwa_check_kernel<<<(unsigned)a->n_samples * (unsigned)a->g.kv_heads, HWA_THREADS, 0, s>>>(*a);
	return (int)cudaGetLastError();
}
