/* hw_kernels.cu: the device code of the hardware backend. Reads that keep
 * HBM busy like a decode step, the SM gather kernel that pulls scattered
 * pages (local, peer or host) in one launch, the fill and check kernels of
 * the integrity tags, and a slow fallback GEMM for when cuBLAS is absent. */
#include "hw_kernels.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#define HWK_THREADS 256

uint64_t ema_hwk_prefix(struct ema_hwk_seg *segs, int n)
{
	uint64_t total = 0;

	for (int i = 0; i < n; i++) {
		segs[i].first_chunk = total;
		total += (segs[i].bytes + EMA_HWK_CHUNK - 1) / EMA_HWK_CHUNK;
	}
	return total;
}

/* Largest i with first_chunk <= w: segments of zero bytes own no chunk,
 * so they are skipped naturally. */
__device__ __forceinline__ int hwk_find(const struct ema_hwk_seg *s, int n,
					uint64_t w)
{
	int lo = 0, hi = n - 1;

	while (lo < hi) {
		int mid = (lo + hi + 1) >> 1;
		if (s[mid].first_chunk <= w)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

static int hwk_grid(int grid, uint64_t chunks, int per_sm)
{
	int dev = 0, sms = 132;

	if (grid <= 0) {
		if (cudaGetDevice(&dev) == cudaSuccess)
			cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
		grid = sms * per_sm;
	}
	if ((uint64_t)grid > chunks)
		grid = (int)chunks;
	return grid < 1 ? 1 : grid;
}

/* Reads chunk w of the segments into the block's fold. */
__device__ __forceinline__ uint32_t hwk_read_chunk(const struct ema_hwk_seg *segs, int n,
						   uint64_t w, uint32_t acc)
{
	const unsigned bd = blockDim.x;
	int i = hwk_find(segs, n, w);
	uint64_t off = (w - segs[i].first_chunk) * EMA_HWK_CHUNK;
	uint64_t len = segs[i].bytes - off;
	const char *p = (const char *)segs[i].src + off;
	uint64_t nv = 0;

	if (len > EMA_HWK_CHUNK)
		len = EMA_HWK_CHUNK;
	if (((uintptr_t)p & 15) == 0) {
		const uint4 *v = (const uint4 *)p;
		uint64_t j = threadIdx.x;

		nv = len / 16;
		/* four loads in flight per thread before any use */
		for (; j + 3 * bd < nv; j += 4 * bd) {
			uint4 a = __ldcs(v + j);
			uint4 b = __ldcs(v + j + bd);
			uint4 c = __ldcs(v + j + 2 * bd);
			uint4 d = __ldcs(v + j + 3 * bd);
			acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^
			       c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
		}
		for (; j < nv; j += bd) {
			uint4 a = __ldcs(v + j);
			acc ^= a.x ^ a.y ^ a.z ^ a.w;
		}
	}
	for (uint64_t t = nv * 16 + threadIdx.x; t < len; t += bd)
		acc ^= (uint32_t)(unsigned char)p[t];
	return acc;
}

__global__ void __launch_bounds__(HWK_THREADS)
hwk_read_kernel(const struct ema_hwk_seg *segs, int n, uint64_t chunks,
		uint64_t *sink)
{
	uint32_t acc = 0;

	for (uint64_t w = blockIdx.x; w < chunks; w += gridDim.x)
		acc = hwk_read_chunk(segs, n, w, acc);
	/* never true for real data patterns in practice; keeps the loads */
	if (acc == 0x9E3779B9u && sink != NULL)
		*sink = acc;
}

/* The split grid: part q's blocks [block_first[q], block_first[q + 1])
 * stride over its chunks [chunk_first[q], chunk_first[q + 1]) only, so
 * each lender's pages are read by a few blocks of their own over its link
 * while the rest of the grid reads local HBM, all at once. */
__global__ void __launch_bounds__(HWK_THREADS)
hwk_read_split_kernel(const struct ema_hwk_seg *segs, int n, struct ema_hwk_parts parts,
		      uint64_t *sink)
{
	uint32_t acc = 0;
	/* counted from the end of the grid, so that the lenders' parts (the
	 * last) have the lowest block indices and start first, should the
	 * grid not fit on the GPU at once: latency-bound link reads must run
	 * beside the local ones, not after them */
	unsigned b = gridDim.x - 1 - blockIdx.x;
	int q = 0;

	while (q + 1 < parts.n && b >= parts.block_first[q + 1])
		q++;
	{
		unsigned nb = parts.block_first[q + 1] - parts.block_first[q];
		uint64_t end = parts.chunk_first[q + 1];

		for (uint64_t w = parts.chunk_first[q] + (b - parts.block_first[q]); w < end;
		     w += nb)
			acc = hwk_read_chunk(segs, n, w, acc);
	}
	if (acc == 0x9E3779B9u && sink != NULL)
		*sink = acc;
}

/* Copies len bytes (at most one chunk) with the block: 16-byte loads, four
 * in flight per thread, when both ends are aligned; bytes otherwise. */
__device__ __forceinline__ void hwk_copy_chunk(const char *s, char *d, uint64_t len)
{
	const unsigned bd = blockDim.x;
	uint64_t nv = 0;

	if ((((uintptr_t)s | (uintptr_t)d) & 15) == 0) {
		const uint4 *vs = (const uint4 *)s;
		uint4 *vd = (uint4 *)d;
		uint64_t j = threadIdx.x;

		nv = len / 16;
		for (; j + 3 * bd < nv; j += 4 * bd) {
			uint4 a = __ldcs(vs + j);
			uint4 b = __ldcs(vs + j + bd);
			uint4 c = __ldcs(vs + j + 2 * bd);
			uint4 e = __ldcs(vs + j + 3 * bd);
			vd[j] = a;
			vd[j + bd] = b;
			vd[j + 2 * bd] = c;
			vd[j + 3 * bd] = e;
		}
		for (; j < nv; j += bd)
			vd[j] = __ldcs(vs + j);
	}
	for (uint64_t t = nv * 16 + threadIdx.x; t < len; t += bd)
		d[t] = s[t];
}

__global__ void __launch_bounds__(HWK_THREADS)
hwk_gather_kernel(const struct ema_hwk_seg *segs, int n, uint64_t chunks)
{
	for (uint64_t w = blockIdx.x; w < chunks; w += gridDim.x) {
		int i = hwk_find(segs, n, w);
		uint64_t off = (w - segs[i].first_chunk) * EMA_HWK_CHUNK;
		uint64_t len = segs[i].bytes - off;

		if (len > EMA_HWK_CHUNK)
			len = EMA_HWK_CHUNK;
		hwk_copy_chunk((const char *)segs[i].src + off, (char *)segs[i].dst + off, len);
	}
}

/* Whole pages between two pools: page i's chunk c is found by division,
 * not by searching descriptors, and a page costs 8 bytes of upload. */
__global__ void __launch_bounds__(HWK_THREADS)
hwk_page_gather_kernel(const int32_t *pairs, const char *src_base, char *dst_base,
		       uint64_t page_bytes, uint64_t per_page, uint64_t chunks)
{
	for (uint64_t w = blockIdx.x; w < chunks; w += gridDim.x) {
		uint64_t i = w / per_page;
		uint64_t off = (w - i * per_page) * EMA_HWK_CHUNK;
		uint64_t len = page_bytes - off;

		if (len > EMA_HWK_CHUNK)
			len = EMA_HWK_CHUNK;
		hwk_copy_chunk(src_base + (uint64_t)pairs[2 * i] * page_bytes + off,
			       dst_base + (uint64_t)pairs[2 * i + 1] * page_bytes + off, len);
	}
}

__global__ void __launch_bounds__(HWK_THREADS)
hwk_fill_kernel(const struct ema_hwk_seg *segs, int n, uint64_t chunks)
{
	for (uint64_t w = blockIdx.x; w < chunks; w += gridDim.x) {
		int i = hwk_find(segs, n, w);
		uint64_t off = (w - segs[i].first_chunk) * EMA_HWK_CHUNK;
		uint64_t len = segs[i].bytes - off;
		uint64_t *d = (uint64_t *)(segs[i].dst + off);

		if (len > EMA_HWK_CHUNK)
			len = EMA_HWK_CHUNK;
		for (uint64_t j = threadIdx.x; j < len / 8; j += blockDim.x)
			d[j] = ema_hwk_pattern(segs[i].src, off / 8 + j);
	}
}

__global__ void hwk_fill_one_kernel(uint64_t *d, uint64_t words, uint64_t tag)
{
	for (uint64_t j = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; j < words;
	     j += (uint64_t)gridDim.x * blockDim.x)
		d[j] = ema_hwk_pattern(tag, j);
}

__global__ void __launch_bounds__(HWK_THREADS)
hwk_check_full_kernel(const struct ema_hwk_seg *segs, int n, uint64_t chunks,
		      uint32_t *bad)
{
	for (uint64_t w = blockIdx.x; w < chunks; w += gridDim.x) {
		int i = hwk_find(segs, n, w);
		uint64_t off = (w - segs[i].first_chunk) * EMA_HWK_CHUNK;
		uint64_t len = segs[i].bytes - off;
		const uint64_t *d = (const uint64_t *)(segs[i].dst + off);
		int wrong = 0;

		if (len > EMA_HWK_CHUNK)
			len = EMA_HWK_CHUNK;
		for (uint64_t j = threadIdx.x; j < len / 8; j += blockDim.x)
			wrong |= d[j] != ema_hwk_pattern(segs[i].src, off / 8 + j);
		if (wrong)
			bad[i] = 1;
	}
}

/* One warp per page, 32 words spread from the first to the last word. */
__global__ void hwk_check_sample_kernel(const struct ema_hwk_seg *segs, int n,
					uint32_t *bad)
{
	int page = (int)((blockIdx.x * (uint64_t)blockDim.x + threadIdx.x) / 32);
	int lane = threadIdx.x & 31;
	uint64_t words, w;
	const uint64_t *d;

	if (page >= n)
		return;
	words = segs[page].bytes / 8;
	if (words == 0)
		return;
	w = (words - 1) * (uint64_t)lane / 31;
	d = (const uint64_t *)segs[page].dst;
	if (d[w] != ema_hwk_pattern(segs[page].src, w))
		bad[page] = 1;
}

__global__ void hwk_fill_bf16_kernel(__nv_bfloat16 *p, uint64_t n, uint32_t seed)
{
	for (uint64_t j = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; j < n;
	     j += (uint64_t)gridDim.x * blockDim.x) {
		uint64_t h = ema_hwk_pattern(seed, j);
		p[j] = __float2bfloat16(((float)(h % 17) - 8.0f) / 16.0f);
	}
}

/* 32x32 tiles, each thread four outputs: simple and correct, not fast. */
__global__ void hwk_gemm_kernel(int m, int n, int k, const __nv_bfloat16 *a,
				const __nv_bfloat16 *b, __nv_bfloat16 *c)
{
	__shared__ float as[32][33];
	__shared__ float bs[32][33];
	int tx = threadIdx.x, ty = threadIdx.y;
	int row = blockIdx.x * 32 + tx;
	int col0 = blockIdx.y * 32;
	float acc[4] = { 0.0f, 0.0f, 0.0f, 0.0f };

	for (int t = 0; t < k; t += 32) {
		for (int r = 0; r < 4; r++) {
			int kk = t + ty + 8 * r;
			int col = col0 + ty + 8 * r;

			as[tx][ty + 8 * r] = (row < m && kk < k) ?
				__bfloat162float(a[row + (size_t)kk * m]) : 0.0f;
			bs[tx][ty + 8 * r] = (t + tx < k && col < n) ?
				__bfloat162float(b[(t + tx) + (size_t)col * k]) : 0.0f;
		}
		__syncthreads();
		for (int kk = 0; kk < 32; kk++) {
			float av = as[tx][kk];
			for (int r = 0; r < 4; r++)
				acc[r] += av * bs[kk][ty + 8 * r];
		}
		__syncthreads();
	}
	for (int r = 0; r < 4; r++) {
		int col = col0 + ty + 8 * r;
		if (row < m && col < n)
			c[row + (size_t)col * m] = __float2bfloat16(acc[r]);
	}
}

extern "C" int ema_hwk_gather(const struct ema_hwk_seg *d_segs, int n,
			      uint64_t chunks, int grid, cudaStream_t s)
{
	if (n <= 0 || chunks == 0)
		return 0;
	hwk_gather_kernel<<<hwk_grid(grid, chunks, 2), HWK_THREADS, 0, s>>>(d_segs, n, chunks);
	return (int)cudaGetLastError();
}

extern "C" int ema_hwk_gather_pages(const int32_t *d_pairs, int n, const void *src_base,
				    void *dst_base, uint64_t page_bytes, int grid,
				    cudaStream_t s)
{
	uint64_t per = (page_bytes + EMA_HWK_CHUNK - 1) / EMA_HWK_CHUNK;
	uint64_t chunks = per * (uint64_t)(n > 0 ? n : 0);

	if (chunks == 0)
		return 0;
	hwk_page_gather_kernel<<<hwk_grid(grid, chunks, 2), HWK_THREADS, 0, s>>>(
		d_pairs, (const char *)src_base, (char *)dst_base, page_bytes, per, chunks);
	return (int)cudaGetLastError();
}

extern "C" int ema_hwk_read(const struct ema_hwk_seg *d_segs, int n, uint64_t chunks,
			    int grid, uint64_t *d_sink, cudaStream_t s)
{
	if (n <= 0 || chunks == 0)
		return 0;
	hwk_read_kernel<<<hwk_grid(grid, chunks, 8), HWK_THREADS, 0, s>>>(d_segs, n, chunks, d_sink);
	return (int)cudaGetLastError();
}

extern "C" int ema_hwk_read_split(const struct ema_hwk_seg *d_segs, int n,
				  const struct ema_hwk_parts *parts, uint64_t *d_sink,
				  cudaStream_t s)
{
	unsigned grid;

	if (n <= 0 || parts == NULL || parts->n < 1 || parts->n > EMA_HWK_MAX_PARTS)
		return n <= 0 ? 0 : (int)cudaErrorInvalidValue;
	grid = parts->block_first[parts->n];
	if (grid == 0 || parts->chunk_first[parts->n] == 0)
		return 0;
	for (int q = 0; q < parts->n; q++)
		if (parts->block_first[q + 1] <= parts->block_first[q] ||
		    parts->chunk_first[q + 1] < parts->chunk_first[q])
			return (int)cudaErrorInvalidValue;
	hwk_read_split_kernel<<<grid, HWK_THREADS, 0, s>>>(d_segs, n, *parts, d_sink);
	return (int)cudaGetLastError();
}

extern "C" int ema_hwk_fill(const struct ema_hwk_seg *d_segs, int n, uint64_t chunks,
			    cudaStream_t s)
{
	if (n <= 0 || chunks == 0)
		return 0;
	hwk_fill_kernel<<<hwk_grid(0, chunks, 8), HWK_THREADS, 0, s>>>(d_segs, n, chunks);
	return (int)cudaGetLastError();
}

extern "C" int ema_hwk_fill_one(void *page, uint64_t bytes, uint64_t tag,
				cudaStream_t s)
{
	uint64_t words = bytes / 8;
	uint64_t blocks = (words + HWK_THREADS - 1) / HWK_THREADS;

	if (words == 0)
		return 0;
	if (blocks > 1024)
		blocks = 1024;
	hwk_fill_one_kernel<<<(unsigned)blocks, HWK_THREADS, 0, s>>>((uint64_t *)page, words, tag);
	return (int)cudaGetLastError();
}

extern "C" int ema_hwk_check(const struct ema_hwk_seg *d_segs, int n, uint64_t chunks,
			     int full, uint32_t *d_bad, cudaStream_t s)
{
	if (n <= 0)
		return 0;
	if (full) {
		if (chunks == 0)
			return 0;
		hwk_check_full_kernel<<<hwk_grid(0, chunks, 8), HWK_THREADS, 0, s>>>(
			d_segs, n, chunks, d_bad);
	} else {
		unsigned blocks = (unsigned)(((uint64_t)n * 32 + HWK_THREADS - 1) / HWK_THREADS);
		hwk_check_sample_kernel<<<blocks, HWK_THREADS, 0, s>>>(d_segs, n, d_bad);
	}
	return (int)cudaGetLastError();
}

extern "C" int ema_hwk_fill_bf16(void *p, uint64_t n, uint32_t seed, cudaStream_t s)
{
	if (n == 0)
		return 0;
	hwk_fill_bf16_kernel<<<1024, HWK_THREADS, 0, s>>>((__nv_bfloat16 *)p, n, seed);
	return (int)cudaGetLastError();
}

extern "C" int ema_hwk_gemm_fallback(int m, int n, int k, const void *a, const void *b,
				     void *c, cudaStream_t s)
{
	dim3 block(32, 8);
	dim3 grid((unsigned)((m + 31) / 32), (unsigned)((n + 31) / 32));

	if (m <= 0 || n <= 0 || k <= 0)
		return 0;
	hwk_gemm_kernel<<<grid, block, 0, s>>>(m, n, k, (const __nv_bfloat16 *)a,
					       (const __nv_bfloat16 *)b, (__nv_bfloat16 *)c);
	return (int)cudaGetLastError();
}
