/* hw_util.c: the CUDA helpers that the platform, calibrate and bench share:
 * counting GPUs, loading cuBLAS at run time and finding the driver's VMM
 * calls without linking libcuda, so that ema starts on any machine. */
#include "hw_cuda.h"
#include "hw_kernels.h"
#include "hw.h"

#include "config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int ema_hw_gpu_count(struct ema_error *err)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);

	if (e != cudaSuccess)
		return ema_error_set(err, EMA_ERR_UNSUPPORTED,
				     "no usable GPU: cudaGetDeviceCount: %s",
				     cudaGetErrorString(e));
	return n;
}

uint64_t ema_hw_tag_word(uint64_t tag, uint64_t w)
{
	return ema_hwk_pattern(tag, w);
}

bool ema_hw_blas_load(struct ema_hw_blas *b, char *why, size_t len)
{
	/* cuBLAS 13 first; the unversioned name where only a dev link exists */
	static const char *const names[] = { "libcublas.so.13", "libcublas.so" };
	union {
		void *p;
		ema_hw_blas_create_fn create;
		ema_hw_blas_destroy_fn destroy;
		ema_hw_blas_stream_fn set_stream;
		ema_hw_blas_gemm_fn gemm;
	} u;

	memset(b, 0, sizeof *b);
	for (size_t i = 0; i < sizeof names / sizeof names[0] && b->lib == NULL; i++)
		b->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (b->lib == NULL) {
		snprintf(why, len, "cannot load libcublas.so.13: %s", dlerror());
		return false;
	}
	/* a union, not a cast, because ISO C forbids object-to-function casts */
	u.p = dlsym(b->lib, "cublasCreate_v2");
	b->create = u.create;
	u.p = dlsym(b->lib, "cublasDestroy_v2");
	b->destroy = u.destroy;
	u.p = dlsym(b->lib, "cublasSetStream_v2");
	b->set_stream = u.set_stream;
	u.p = dlsym(b->lib, "cublasGemmEx");
	b->gemm = u.gemm;
	if (b->create == NULL || b->destroy == NULL || b->set_stream == NULL ||
	    b->gemm == NULL) {
		snprintf(why, len, "libcublas lacks cublasGemmEx or its companions");
		dlclose(b->lib);
		memset(b, 0, sizeof *b);
		return false;
	}
	return true;
}

void ema_hw_blas_unload(struct ema_hw_blas *b)
{
	if (b->lib != NULL)
		dlclose(b->lib);
	memset(b, 0, sizeof *b);
}

int ema_hw_gemm(const struct ema_hw_blas *b, cublasHandle_t h, int cols,
		const void *a, const void *bm, void *c, cudaStream_t s)
{
	const float alpha = 1.0f, beta = 0.0f;
	const int d = EMA_HW_GEMM_DIM;

	if (b != NULL && b->gemm != NULL && h != NULL) {
		cublasStatus_t st = b->gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, d, cols, d,
					    &alpha, a, CUDA_R_16BF, d, bm, CUDA_R_16BF,
					    d, &beta, c, CUDA_R_16BF, d,
					    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
		return st == CUBLAS_STATUS_SUCCESS ? 0 : (int)cudaErrorUnknown;
	}
	return ema_hwk_gemm_fallback(d, cols, d, a, bm, c, s);
}

int ema_hw_vmm_load(struct ema_hw_vmm *v, struct ema_error *err)
{
	static const char *const names[] = {
		"cuMemCreate", "cuMemRelease", "cuMemMap", "cuMemUnmap",
		"cuMemSetAccess", "cuMemAddressReserve", "cuMemAddressFree",
		"cuMemGetAllocationGranularity"
	};
	void *fn[8];

	for (int i = 0; i < 8; i++) {
		enum cudaDriverEntryPointQueryResult q;
		cudaError_t e = cudaGetDriverEntryPointByVersion(names[i], &fn[i], 12000,
								 cudaEnableDefault, &q);
		if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || fn[i] == NULL)
			return ema_error_set(err, EMA_ERR_UNSUPPORTED,
					     "driver call %s not found (%s)", names[i],
					     cudaGetErrorString(e));
	}
	/* the driver hands back untyped pointers to functions */
	memcpy(&v->create, &fn[0], sizeof fn[0]);
	memcpy(&v->release, &fn[1], sizeof fn[1]);
	memcpy(&v->map, &fn[2], sizeof fn[2]);
	memcpy(&v->unmap, &fn[3], sizeof fn[3]);
	memcpy(&v->set_access, &fn[4], sizeof fn[4]);
	memcpy(&v->reserve, &fn[5], sizeof fn[5]);
	memcpy(&v->address_free, &fn[6], sizeof fn[6]);
	memcpy(&v->granularity, &fn[7], sizeof fn[7]);
	return 0;
}

PFN_cuStreamWaitValue32_v11070 ema_hw_wait_value_load(void)
{
	enum cudaDriverEntryPointQueryResult q;
	PFN_cuStreamWaitValue32_v11070 f = NULL;
	void *fn = NULL;
	cudaError_t e = cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", &fn, 12000,
							   cudaEnableDefault, &q);

	if (e == cudaSuccess && q == cudaDriverEntryPointSuccess && fn != NULL)
		memcpy(&f, &fn, sizeof fn);  /* an untyped pointer to a function */
	else
		cudaGetLastError();
	return f;
}

void ema_hw_params_for_pools(struct ema_platform_params *p, const struct ema_config *cfg,
			     uint64_t page_bytes, const uint64_t *pool)
{
	memset(p, 0, sizeof *p);
	p->n_gpus = cfg->hw.n_gpus;
	p->page_bytes = page_bytes;
	for (int g = 0; g < cfg->hw.n_gpus && g < EMA_MAX_GPUS; g++) {
		p->pool_pages[g] = pool[g];
		if (pool[g] > 0)
			p->gpus_used = g + 1;
	}
	for (int t = 0; t < cfg->n_tenants; t++)
		if (cfg->tenants[t].gpu + 1 > p->gpus_used)
			p->gpus_used = cfg->tenants[t].gpu + 1;
	p->host_pages_per_gpu = (uint64_t)(cfg->policy.host_gib * 1073741824.0 / (double)page_bytes);
	p->hw = &cfg->hw;
	p->model = &cfg->model;
}
