/* hw_cuda.h: what the CUDA parts of hw/ share: error-checking macros that
 * record the failing call with file:line, the driver's virtual-memory calls
 * reached through cudaGetDriverEntryPointByVersion (ema never links
 * libcuda), cuBLAS reached through dlopen (no static cuBLAS exists), and a
 * monotonic clock. Private to hw/. */
#ifndef EMA_HW_CUDA_H
#define EMA_HW_CUDA_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <cublas_api.h>

#include "ema_error.h"

/* Returns EMA_ERR_DEVICE from the enclosing function when expr fails. */
#define EMA_HW_TRY(err, expr)                                               \
	do {                                                                \
		cudaError_t e_ = (expr);                                    \
		if (e_ != cudaSuccess)                                      \
			return ema_error_set((err), EMA_ERR_DEVICE,         \
					     "%s:%d: %s: %s", __FILE__,     \
					     __LINE__, #expr,               \
					     cudaGetErrorString(e_));       \
	} while (0)

/* Sets rc and jumps to label when expr fails (for functions that free
 * resources through one exit label). */
#define EMA_HW_TRY_GOTO(err, rc, label, expr)                               \
	do {                                                                \
		cudaError_t e_ = (expr);                                    \
		if (e_ != cudaSuccess) {                                    \
			(rc) = ema_error_set((err), EMA_ERR_DEVICE,         \
					     "%s:%d: %s: %s", __FILE__,     \
					     __LINE__, #expr,               \
					     cudaGetErrorString(e_));       \
			goto label;                                         \
		}                                                           \
	} while (0)

static inline int64_t ema_hw_clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* cuBLAS, loaded at run time: only the four calls the GEMM needs. */
typedef cublasStatus_t (*ema_hw_blas_create_fn)(cublasHandle_t *h);
typedef cublasStatus_t (*ema_hw_blas_destroy_fn)(cublasHandle_t h);
typedef cublasStatus_t (*ema_hw_blas_stream_fn)(cublasHandle_t h, cudaStream_t s);
typedef cublasStatus_t (*ema_hw_blas_gemm_fn)(
	cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
	int k, const void *alpha, const void *a, cudaDataType at, int lda,
	const void *b, cudaDataType bt, int ldb, const void *beta, void *c,
	cudaDataType ct, int ldc, cublasComputeType_t ctype, cublasGemmAlgo_t algo);

struct ema_hw_blas {
	void *lib;
	ema_hw_blas_create_fn create;
	ema_hw_blas_destroy_fn destroy;
	ema_hw_blas_stream_fn set_stream;
	ema_hw_blas_gemm_fn gemm;
};

/* Loads libcublas.so.13; on failure fills why and returns false (callers
 * then use ema_hwk_gemm_fallback). */
bool ema_hw_blas_load(struct ema_hw_blas *b, char *why, size_t len);
void ema_hw_blas_unload(struct ema_hw_blas *b);

/* The GEMM every prefill step and the calibration run: C = A B with
 * A = EMA_HW_GEMM_DIM x EMA_HW_GEMM_DIM (weights-like), B and C with cols
 * columns, bf16 in and out, fp32 accumulation. cols <= EMA_HW_GEMM_COLS. */
#define EMA_HW_GEMM_DIM 4096
#define EMA_HW_GEMM_COLS 8192
int ema_hw_gemm(const struct ema_hw_blas *b, cublasHandle_t h, int cols,
		const void *a, const void *bm, void *c, cudaStream_t s);

/* Driver calls of CUDA's virtual memory management. */
struct ema_hw_vmm {
	PFN_cuMemCreate_v10020 create;
	PFN_cuMemRelease_v10020 release;
	PFN_cuMemMap_v10020 map;
	PFN_cuMemUnmap_v10020 unmap;
	PFN_cuMemSetAccess_v10020 set_access;
	PFN_cuMemAddressReserve_v10020 reserve;
	PFN_cuMemAddressFree_v10020 address_free;
	PFN_cuMemGetAllocationGranularity_v10020 granularity;
};

int ema_hw_vmm_load(struct ema_hw_vmm *v, struct ema_error *err);

/* The driver's wait of a stream on a 32-bit word (cuStreamWaitValue32,
 * its CUDA 11.7 form), for remote attention's flags; NULL where the
 * driver has none. */
PFN_cuStreamWaitValue32_v11070 ema_hw_wait_value_load(void);

struct ema_config;
struct ema_platform_params;
/* Parameters for a platform of the bench and calibrate runs, which build
 * their own pools rather than a policy's: pool[g] pages per GPU of
 * cfg->hw, host memory policy.host_gib per GPU. */
void ema_hw_params_for_pools(struct ema_platform_params *p, const struct ema_config *cfg,
			     uint64_t page_bytes, const uint64_t *pool);

#endif
