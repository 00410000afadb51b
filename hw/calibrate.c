/* calibrate.c: the measurements of `ema calibrate`: the GPUs of this
 * machine with the backend's own kernels and copy paths (CUDA events,
 * median of N after warm-up), printed against the H200x2 reference of
 * doc/reference-figures.md, turned into a hardware profile that the simulator can
 * then use, and the raw measurements as tidy CSV rows. src/cmd_calibrate.c
 * parses the command line and writes the files. */
#include "hw.h"
#include "hw_cuda.h"
#include "hw_kernels.h"
#include "hw_attn_kernels.h"
#include "step_cost.h"

#include "config.h"

#include <gsl/gsl_fit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CAL_GIB (1024.0 * 1024.0 * 1024.0)
#define CAL_MIB (1024ull * 1024ull)
#define CAL_BUF (2048ull * CAL_MIB)     /* device buffer per GPU */
#define CAL_HOST (256ull * CAL_MIB)     /* pinned host buffer */
#define CAL_MAX_REPS 64
#define CAL_MAX_SEGS 65536

enum cal_kind {
	CAL_MEMCPY, CAL_PER_PAGE, CAL_BATCH, CAL_GATHER, CAL_READ, CAL_GEMM, CAL_GEMM8K
};

/* One operation to time: what cal_issue launches on stream s. */
struct cal_op {
	enum cal_kind kind;
	int dev;                    /* device whose stream and events time it */
	cudaStream_t s;
	void *dst;
	const void *src;
	size_t bytes;
	int n;                      /* pages, segments or GEMM columns */
	int repeat;
	void **dsts;
	const void **srcs;
	size_t *sizes;
	struct ema_hwk_seg *dsegs;  /* on dev */
	uint64_t chunks;
	int read_blocks_per_sm;     /* CAL_READ: 0 = EMA_HWK_READ_BLOCKS_PER_SM */
};

struct cal {
	FILE *csv;
	bool quick;
	int reps;
	int n_gpus;
	struct cudaDeviceProp prop;
	char *buf[2];
	char *host;
	cudaStream_t s[2], bg[2];
	cudaEvent_t e0[2], e1[2];
	uint64_t *sink[2];
	struct ema_hwk_seg *hseg;
	struct ema_hwk_seg *dseg[2];
	void *ga, *gb, *gc;
	struct ema_hw_blas blas;
	bool have_blas;
	cublasHandle_t blas_h;
	/* scratch arrays for per-page and batch copies */
	void **dsts;
	const void **srcs;
	size_t *sizes;
};

/* The reference figures of doc/reference-figures.md (H200x2, 2026-11-30). */
struct cal_row {
	const char *what;
	const char *unit;
	double ref;                 /* 0: no reference */
	double got;
};

static int cal_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double cal_median(double *v, int n)
{
	if (n <= 0)
		return 0.0;
	qsort(v, (size_t)n, sizeof *v, cal_cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int cal_issue(struct cal *c, const struct cal_op *o)
{
	int reps = o->repeat > 0 ? o->repeat : 1;

	for (int r = 0; r < reps; r++) {
		cudaError_t e = cudaSuccess;

		switch (o->kind) {
		case CAL_MEMCPY:
			e = cudaMemcpyAsync(o->dst, o->src, o->bytes, cudaMemcpyDefault, o->s);
			break;
		case CAL_PER_PAGE:
			for (int i = 0; i < o->n && e == cudaSuccess; i++)
				e = cudaMemcpyAsync(o->dsts[i], o->srcs[i], o->sizes[i],
						    cudaMemcpyDefault, o->s);
			break;
		case CAL_BATCH: {
			struct cudaMemcpyAttributes attr;
			size_t idx = 0;

			memset(&attr, 0, sizeof attr);
			attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
			attr.srcLocHint.type = cudaMemLocationTypeDevice;
			attr.dstLocHint.type = cudaMemLocationTypeDevice;
			e = cudaMemcpyBatchAsync((void *const *)o->dsts,
						 (const void *const *)o->srcs, o->sizes,
						 (size_t)o->n, &attr, &idx, 1, o->s);
			break;
		}
		case CAL_GATHER:
			e = (cudaError_t)ema_hwk_gather(o->dsegs, o->n, o->chunks,
							EMA_HWK_PREFETCH_BLOCKS_PER_SM *
							c->prop.multiProcessorCount, o->s);
			break;
		case CAL_READ:
			e = (cudaError_t)ema_hwk_read(o->dsegs, o->n, o->chunks,
						      (o->read_blocks_per_sm > 0 ?
						       o->read_blocks_per_sm :
						       EMA_HWK_READ_BLOCKS_PER_SM) *
						      c->prop.multiProcessorCount,
						      c->sink[o->dev], o->s);
			break;
		case CAL_GEMM:
			for (int left = o->n; left > 0 && e == cudaSuccess; left -= EMA_HW_GEMM_COLS) {
				int cols = left > EMA_HW_GEMM_COLS ? EMA_HW_GEMM_COLS : left;

				e = (cudaError_t)ema_hw_gemm(c->have_blas ? &c->blas : NULL,
							     c->blas_h, cols, c->ga, c->gb,
							     c->gc, o->s);
			}
			break;
		case CAL_GEMM8K: {
			const float alpha = 1.0f, beta = 0.0f;

			if (c->have_blas)
				e = c->blas.gemm(c->blas_h, CUBLAS_OP_N, CUBLAS_OP_N, 8192, 8192,
						 8192, &alpha, c->ga, CUDA_R_16BF, 8192, c->gb,
						 CUDA_R_16BF, 8192, &beta, c->gc, CUDA_R_16BF,
						 8192, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) ==
				    CUBLAS_STATUS_SUCCESS ? cudaSuccess : cudaErrorUnknown;
			else
				e = (cudaError_t)ema_hwk_gemm_fallback(8192, 8192, 8192, c->ga,
								       c->gb, c->gc, o->s);
			break;
		}
		}
		if (e != cudaSuccess)
			return (int)e;
	}
	return 0;
}

static void cal_csv(struct cal *c, const char *test, const char *variant, int src,
		    int dst, uint64_t bytes, uint64_t page, int rep, double us)
{
	if (c->csv == NULL)
		return;
	fprintf(c->csv, "%s,%s,%d,%d,%llu,%llu,%d,%.3f,%.3f\n", test, variant, src, dst,
		(unsigned long long)bytes, (unsigned long long)page, rep, us,
		us > 0 ? (double)bytes / (us * 1e3) : 0.0);
}

/* Times o with events on its device: warm-up, then reps runs; returns the
 * median in us and writes each run to the CSV. */
static int cal_time(struct cal *c, const struct cal_op *o, int reps, const char *test,
		    const char *variant, int src, int dst, uint64_t bytes, uint64_t page,
		    double *med_us, struct ema_error *err)
{
	double t[CAL_MAX_REPS];
	int d = o->dev;

	if (reps > CAL_MAX_REPS)
		reps = CAL_MAX_REPS;
	EMA_HW_TRY(err, cudaSetDevice(d));
	for (int r = -2; r < reps; r++) {
		float ms = 0.0f;
		int e;

		EMA_HW_TRY(err, cudaEventRecord(c->e0[d], o->s));
		e = cal_issue(c, o);
		if (e != 0)
			return ema_error_set(err, EMA_ERR_DEVICE, "%s/%s: %s", test, variant,
					     cudaGetErrorString((cudaError_t)e));
		EMA_HW_TRY(err, cudaEventRecord(c->e1[d], o->s));
		EMA_HW_TRY(err, cudaEventSynchronize(c->e1[d]));
		EMA_HW_TRY(err, cudaEventElapsedTime(&ms, c->e0[d], c->e1[d]));
		if (r >= 0) {
			t[r] = ms * 1e3;
			cal_csv(c, test, variant, src, dst, bytes, page, r, t[r]);
		}
	}
	*med_us = cal_median(t, reps);
	return 0;
}

/* Host-clock timing for calls that are synchronous by nature. */
static double cal_host_us(int64_t t0)
{
	return (double)(ema_hw_clock_ns() - t0) / 1e3;
}

static int cal_setup(struct cal *c, struct ema_error *err)
{
	char why[256];

	EMA_HW_TRY(err, cudaGetDeviceProperties(&c->prop, 0));
	for (int d = 0; d < c->n_gpus && d < 2; d++) {
		EMA_HW_TRY(err, cudaSetDevice(d));
		EMA_HW_TRY(err, cudaMalloc((void **)&c->buf[d], CAL_BUF));
		EMA_HW_TRY(err, cudaMemset(c->buf[d], 0x5a + d, CAL_BUF));
		EMA_HW_TRY(err, cudaStreamCreateWithFlags(&c->s[d], cudaStreamNonBlocking));
		EMA_HW_TRY(err, cudaStreamCreateWithFlags(&c->bg[d], cudaStreamNonBlocking));
		EMA_HW_TRY(err, cudaEventCreate(&c->e0[d]));
		EMA_HW_TRY(err, cudaEventCreate(&c->e1[d]));
		EMA_HW_TRY(err, cudaMalloc((void **)&c->sink[d], 64));
		EMA_HW_TRY(err, cudaMalloc((void **)&c->dseg[d], CAL_MAX_SEGS * sizeof *c->dseg[d]));
	}
	for (int i = 0; i < c->n_gpus && i < 2; i++)
		for (int j = 0; j < c->n_gpus && j < 2; j++) {
			cudaError_t e;

			if (i == j)
				continue;
			EMA_HW_TRY(err, cudaSetDevice(i));
			e = cudaDeviceEnablePeerAccess(j, 0);
			if (e == cudaErrorPeerAccessAlreadyEnabled)
				cudaGetLastError();
			else
				EMA_HW_TRY(err, e);
		}
	EMA_HW_TRY(err, cudaSetDevice(0));
	EMA_HW_TRY(err, cudaMallocHost((void **)&c->host, CAL_HOST));
	memset(c->host, 0x33, CAL_HOST);
	EMA_HW_TRY(err, cudaMallocHost((void **)&c->hseg, CAL_MAX_SEGS * sizeof *c->hseg));
	EMA_HW_TRY(err, cudaMalloc(&c->ga, 8192ull * 8192 * 2));
	EMA_HW_TRY(err, cudaMalloc(&c->gb, 8192ull * 8192 * 2));
	EMA_HW_TRY(err, cudaMalloc(&c->gc, 8192ull * 8192 * 2));
	EMA_HW_TRY(err, (cudaError_t)ema_hwk_fill_bf16(c->ga, 8192ull * 8192, 1, c->s[0]));
	EMA_HW_TRY(err, (cudaError_t)ema_hwk_fill_bf16(c->gb, 8192ull * 8192, 2, c->s[0]));
	c->have_blas = ema_hw_blas_load(&c->blas, why, sizeof why);
	if (c->have_blas) {
		if (c->blas.create(&c->blas_h) != CUBLAS_STATUS_SUCCESS ||
		    c->blas.set_stream(c->blas_h, c->s[0]) != CUBLAS_STATUS_SUCCESS)
			return ema_error_set(err, EMA_ERR_DEVICE, "cuBLAS handle could not be made");
	} else {
		fprintf(stderr, "calibrate: %s; GEMMs use the slow fallback kernel\n", why);
	}
	c->dsts = calloc(CAL_MAX_SEGS, sizeof *c->dsts);
	c->srcs = calloc(CAL_MAX_SEGS, sizeof *c->srcs);
	c->sizes = calloc(CAL_MAX_SEGS, sizeof *c->sizes);
	if (c->dsts == NULL || c->srcs == NULL || c->sizes == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	EMA_HW_TRY(err, cudaDeviceSynchronize());
	return 0;
}

static void cal_teardown(struct cal *c)
{
	for (int d = 0; d < 2; d++) {
		if (c->buf[d] == NULL)
			continue;
		cudaSetDevice(d);
		cudaDeviceSynchronize();
		cudaFree(c->buf[d]);
		cudaFree(c->sink[d]);
		cudaFree(c->dseg[d]);
		cudaStreamDestroy(c->s[d]);
		cudaStreamDestroy(c->bg[d]);
		cudaEventDestroy(c->e0[d]);
		cudaEventDestroy(c->e1[d]);
	}
	cudaSetDevice(0);
	if (c->have_blas) {
		c->blas.destroy(c->blas_h);
		ema_hw_blas_unload(&c->blas);
	}
	cudaFreeHost(c->host);
	cudaFreeHost(c->hseg);
	cudaFree(c->ga);
	cudaFree(c->gb);
	cudaFree(c->gc);
	free(c->dsts);
	free(c->srcs);
	free(c->sizes);
}

/* Uploads n segments to device d's descriptor buffer. */
static int cal_upload(struct cal *c, int d, int n, uint64_t *chunks, struct ema_error *err)
{
	*chunks = ema_hwk_prefix(c->hseg, n);
	EMA_HW_TRY(err, cudaSetDevice(d));
	EMA_HW_TRY(err, cudaMemcpy(c->dseg[d], c->hseg, (size_t)n * sizeof *c->hseg,
				   cudaMemcpyHostToDevice));
	return 0;
}

/* A read op of total bytes over base[0, span), in pieces of piece bytes. */
static int cal_read_op(struct cal *c, struct cal_op *o, int d, const char *base,
		       uint64_t span, uint64_t total, uint64_t piece, struct ema_error *err)
{
	int n = 0;
	uint64_t at = 0;
	int rc;

	for (uint64_t done = 0; done < total && n < CAL_MAX_SEGS; done += piece, n++) {
		if (at + piece > span)
			at = 0;
		c->hseg[n].src = (uint64_t)(uintptr_t)(base + at);
		c->hseg[n].dst = 0;
		c->hseg[n].bytes = piece;
		/* scattered: stride past the piece so blocks are not adjacent */
		at += piece * 2 <= span ? piece * 2 : piece;
	}
	memset(o, 0, sizeof *o);
	rc = cal_upload(c, d, n, &o->chunks, err);
	if (rc != 0)
		return rc;
	o->kind = CAL_READ;
	o->dev = d;
	o->s = c->s[d];
	o->dsegs = c->dseg[d];
	o->n = n;
	o->repeat = 1;
	return 0;
}

struct cal_result {
	double copy_gbps[3][16];    /* peer 0->1, peer 1->0, local */
	double copy_us[3][16];
	uint64_t sizes[16];
	int n_sizes;
	double fixed_us, fit_gbps;
	double bidir_gbps;
	double page_gbps[3][5];     /* per_page, batch, gather by page size */
	double page_call_us[3][5];
	double hbm_gbps, scattered_gbps[4], remote_gbps;
	double h2d_gbps, d2h_gbps;
	double lender_ce, lender_sm, borrower, gemm_slow;
	double borrower_sm;         /* gather pull beside staged-grid reads */
	double staged_slow;         /* whole staged decode steps against local ones */
	double staged_in_gbps;      /* ... at this prefetch rate */
	/* whole decode steps with CAL_SHARES remote shares, in place and
	 * staged, against the same bytes all local (cal_remote_steps) */
	int n_shares;
	int share_pages[8];
	double all_local_us, inplace_us[8], staged_us[8];
	double pull_slow_ce, pull_slow_sm; /* a pull slowed by its GPU's own reads */
	double malloc_us[3], free_us[3];
	double vmm_us[5];
	double decode_gbps, decode_fixed_us;
	double gemm8k_tflops, prefill_tflops, prefill_fixed_us;
	/* remote attention (cal_attention): the lender's kernel alone and
	 * beside its own decode, that decode alone and beside it, the
	 * round trip of one layer by each way of waiting */
	bool attn_done;
	int attn_lender;
	double attn_alone_gbps, attn_busy_gbps, attn_share;
	double attn_decode_alone_us, attn_decode_with_us, attn_with_us, attn_gb_during;
	double attn_ms_per_gb;
	bool attn_outlasted;        /* the attention ended after the decode */
	double sync_event_us, sync_flag_us, sync_one_stream_us;
};

static const uint64_t cal_pages[5] = {
	16 * 1024, 64 * 1024, 256 * 1024, 2 * CAL_MIB, 16 * CAL_MIB
};

static int cal_copies(struct cal *c, struct cal_result *res, struct ema_error *err)
{
	static const uint64_t all[] = {
		4096, 16384, 65536, 262144, 1 << 20, 4 << 20, 16 << 20, 64 << 20,
		256 << 20, 1024 << 20
	};
	static const uint64_t quick[] = { 4096, 65536, 1 << 20, 16 << 20, 256 << 20, 1024 << 20 };
	const uint64_t *sz = c->quick ? quick : all;
	int n = c->quick ? 6 : 10;
	struct cal_op o;
	double x[16], y[16], w[16], c0, c1, cov00, cov01, cov11, chisq;
	int rc;

	res->n_sizes = n;
	for (int i = 0; i < n; i++) {
		uint64_t b = sz[i];
		int reps = b >= (256u << 20) ? (c->quick ? 5 : 10) : c->reps;

		res->sizes[i] = b;
		memset(&o, 0, sizeof o);
		o.kind = CAL_MEMCPY;
		o.bytes = b;
		if (c->n_gpus >= 2) {
			/* peer copies issued by the destination, as pulls */
			o.dev = 1;
			o.s = c->s[1];
			o.dst = c->buf[1];
			o.src = c->buf[0] + CAL_BUF / 2;
			rc = cal_time(c, &o, reps, "copy", "peer", 0, 1, b, 0, &res->copy_us[0][i], err);
			if (rc != 0)
				return rc;
			o.dev = 0;
			o.s = c->s[0];
			o.dst = c->buf[0];
			o.src = c->buf[1] + CAL_BUF / 2;
			rc = cal_time(c, &o, reps, "copy", "peer", 1, 0, b, 0, &res->copy_us[1][i], err);
			if (rc != 0)
				return rc;
		}
		o.dev = 0;
		o.s = c->s[0];
		o.dst = c->buf[0];
		o.src = c->buf[0] + CAL_BUF / 2;
		rc = cal_time(c, &o, reps, "copy", "local", 0, 0, b, 0, &res->copy_us[2][i], err);
		if (rc != 0)
			return rc;
		for (int k = 0; k < 3; k++)
			res->copy_gbps[k][i] = res->copy_us[k][i] > 0 ?
				(double)b / (res->copy_us[k][i] * 1e3) : 0.0;
	}
	/* time = fixed + bytes / bandwidth, weighted by 1/t^2 so that small
	 * copies (which carry the fixed cost) count as much as large ones */
	if (c->n_gpus >= 2) {
		for (int i = 0; i < n; i++) {
			x[i] = (double)sz[i];
			y[i] = res->copy_us[0][i];
			w[i] = 1.0 / (y[i] * y[i]);
		}
		gsl_fit_wlinear(x, 1, w, 1, y, 1, (size_t)n, &c0, &c1, &cov00, &cov01, &cov11,
				&chisq);
		res->fixed_us = c0;
		res->fit_gbps = c1 > 0 ? 1.0 / (c1 * 1e3) : 0.0;
	}

	/* pinned host link, 256 MiB each way */
	memset(&o, 0, sizeof o);
	o.kind = CAL_MEMCPY;
	o.dev = 0;
	o.s = c->s[0];
	o.bytes = CAL_HOST;
	o.dst = c->buf[0];
	o.src = c->host;
	rc = cal_time(c, &o, c->quick ? 5 : 10, "host", "h2d", EMA_HOST, 0, CAL_HOST, 0,
		      &y[0], err);
	if (rc != 0)
		return rc;
	res->h2d_gbps = (double)CAL_HOST / (y[0] * 1e3);
	o.dst = c->host;
	o.src = c->buf[0];
	rc = cal_time(c, &o, c->quick ? 5 : 10, "host", "d2h", 0, EMA_HOST, CAL_HOST, 0,
		      &y[0], err);
	if (rc != 0)
		return rc;
	res->d2h_gbps = (double)CAL_HOST / (y[0] * 1e3);

	/* bidirectional: 1 GiB each way at once, timed on GPU 0 */
	if (c->n_gpus >= 2) {
		double t[CAL_MAX_REPS];
		int reps = c->quick ? 3 : 8;

		for (int r = -1; r < reps; r++) {
			float ms;

			EMA_HW_TRY(err, cudaSetDevice(0));
			EMA_HW_TRY(err, cudaEventRecord(c->e0[0], c->s[0]));
			EMA_HW_TRY(err, cudaSetDevice(1));
			EMA_HW_TRY(err, cudaStreamWaitEvent(c->s[1], c->e0[0], 0));
			EMA_HW_TRY(err, cudaMemcpyAsync(c->buf[1], c->buf[0] + CAL_BUF / 2,
							CAL_BUF / 2, cudaMemcpyDefault, c->s[1]));
			EMA_HW_TRY(err, cudaEventRecord(c->e1[1], c->s[1]));
			EMA_HW_TRY(err, cudaSetDevice(0));
			EMA_HW_TRY(err, cudaMemcpyAsync(c->buf[0], c->buf[1] + CAL_BUF / 2,
							CAL_BUF / 2, cudaMemcpyDefault, c->s[0]));
			EMA_HW_TRY(err, cudaStreamWaitEvent(c->s[0], c->e1[1], 0));
			EMA_HW_TRY(err, cudaEventRecord(c->e1[0], c->s[0]));
			EMA_HW_TRY(err, cudaEventSynchronize(c->e1[0]));
			EMA_HW_TRY(err, cudaEventElapsedTime(&ms, c->e0[0], c->e1[0]));
			if (r >= 0) {
				t[r] = ms * 1e3;
				cal_csv(c, "bidir", "peer", 0, 1, CAL_BUF, 0, r, t[r]);
			}
		}
		res->bidir_gbps = (double)CAL_BUF / (cal_median(t, reps) * 1e3);
	}
	return 0;
}

/* Scattered pages pulled from GPU 1 into GPU 0 by each method. */
static int cal_page_methods(struct cal *c, struct cal_result *res, struct ema_error *err)
{
	static const char *const names[3] = { "per_page", "batch", "gather" };
	uint64_t total = c->quick ? 256 * CAL_MIB : 1024 * CAL_MIB;
	int rc;

	if (c->n_gpus < 2)
		return 0;
	for (int pi = 0; pi < 5; pi++) {
		uint64_t pb = cal_pages[pi];
		int n = (int)(total / pb);
		int slots = (int)((CAL_BUF / 2) / pb);
		struct cal_op o;
		uint64_t chunks;

		if (n > 8192)
			n = 8192;
		/* pages scattered over the buffers: a fixed permutation-like
		 * stride so runs are never contiguous */
		for (int i = 0; i < n; i++) {
			int si = (int)(((int64_t)i * 7919 + 13) % slots);
			int di = (int)(((int64_t)i * 104729 + 7) % slots);

			if (slots < 2 * n) {
				si = (2 * i) % slots;
				di = (2 * i + 1) % slots;
			}
			c->srcs[i] = c->buf[1] + (uint64_t)si * pb;
			c->dsts[i] = c->buf[0] + (uint64_t)di * pb;
			c->sizes[i] = pb;
			c->hseg[i].src = (uint64_t)(uintptr_t)c->srcs[i];
			c->hseg[i].dst = (uint64_t)(uintptr_t)c->dsts[i];
			c->hseg[i].bytes = pb;
		}
		rc = cal_upload(c, 0, n, &chunks, err);
		if (rc != 0)
			return rc;
		for (int m = 0; m < 3; m++) {
			double us;

			memset(&o, 0, sizeof o);
			o.kind = m == 0 ? CAL_PER_PAGE : m == 1 ? CAL_BATCH : CAL_GATHER;
			o.dev = 0;
			o.s = c->s[0];
			o.n = n;
			o.dsts = c->dsts;
			o.srcs = c->srcs;
			o.sizes = c->sizes;
			o.dsegs = c->dseg[0];
			o.chunks = chunks;
			rc = cal_time(c, &o, c->quick ? 3 : 8, "pages", names[m], 1, 0,
				      (uint64_t)n * pb, pb, &us, err);
			if (rc != 0)
				return rc;
			res->page_gbps[m][pi] = (double)n * (double)pb / (us * 1e3);
			res->page_call_us[m][pi] = us / n;
		}
	}
	return 0;
}

static int cal_reads(struct cal *c, struct cal_result *res, struct ema_error *err)
{
	static const uint64_t pieces[4] = { 16 * 1024, 64 * 1024, 256 * 1024, 2 * CAL_MIB };
	struct cal_op o;
	double us;
	int rc;

	rc = cal_read_op(c, &o, 0, c->buf[0], CAL_BUF, 1024 * CAL_MIB, 1024 * CAL_MIB, err);
	if (rc == 0)
		rc = cal_time(c, &o, c->reps, "read", "local", 0, 0, 1024 * CAL_MIB, 0, &us, err);
	if (rc != 0)
		return rc;
	res->hbm_gbps = 1024.0 * CAL_MIB / (us * 1e3);
	for (int i = 0; i < 4; i++) {
		rc = cal_read_op(c, &o, 0, c->buf[0], CAL_BUF, 1024 * CAL_MIB, pieces[i], err);
		if (rc == 0)
			rc = cal_time(c, &o, c->reps, "read", "scattered", 0, 0, 1024 * CAL_MIB,
				      pieces[i], &us, err);
		if (rc != 0)
			return rc;
		res->scattered_gbps[i] = 1024.0 * CAL_MIB / (us * 1e3);
	}
	if (c->n_gpus >= 2) {
		rc = cal_read_op(c, &o, 0, c->buf[1], CAL_BUF, 1024 * CAL_MIB, 1024 * CAL_MIB, err);
		if (rc == 0)
			rc = cal_time(c, &o, c->quick ? 3 : 8, "read", "remote", 1, 0,
				      1024 * CAL_MIB, 0, &us, err);
		if (rc != 0)
			return rc;
		res->remote_gbps = 1024.0 * CAL_MIB / (us * 1e3);
	}
	return 0;
}

/* Times `alone` by itself and target while bg runs on another stream;
 * returns the slowdown (with / alone - 1). bg is issued first, enough
 * times to outlast the target. alone is target itself unless the work
 * changes shape when it has company (see the staged borrower). */
static int cal_interfere_vs(struct cal *c, const struct cal_op *alone_op,
			    const struct cal_op *target, const struct cal_op *bg, double bg_us,
			    const char *variant, double *slow, struct ema_error *err)
{
	double alone, with[CAL_MAX_REPS];
	int reps = c->quick ? 3 : 7, rc, n_bg;

	rc = cal_time(c, alone_op, reps, "interference", "alone", alone_op->dev, alone_op->dev,
		      0, 0, &alone, err);
	if (rc != 0)
		return rc;
	n_bg = (int)ceil(1.5 * alone / (bg_us > 1 ? bg_us : 1)) + 1;
	for (int r = 0; r < reps; r++) {
		float ms;

		EMA_HW_TRY(err, cudaSetDevice(bg->dev));
		for (int k = 0; k < n_bg; k++)
			if (cal_issue(c, bg) != 0)
				return ema_error_set(err, EMA_ERR_DEVICE, "interference load failed");
		EMA_HW_TRY(err, cudaSetDevice(target->dev));
		EMA_HW_TRY(err, cudaEventRecord(c->e0[target->dev], target->s));
		if (cal_issue(c, target) != 0)
			return ema_error_set(err, EMA_ERR_DEVICE, "interference target failed");
		EMA_HW_TRY(err, cudaEventRecord(c->e1[target->dev], target->s));
		EMA_HW_TRY(err, cudaEventSynchronize(c->e1[target->dev]));
		EMA_HW_TRY(err, cudaEventElapsedTime(&ms, c->e0[target->dev], c->e1[target->dev]));
		with[r] = ms * 1e3;
		cal_csv(c, "interference", variant, bg->dev, target->dev, 0, 0, r, with[r]);
		EMA_HW_TRY(err, cudaSetDevice(bg->dev));
		EMA_HW_TRY(err, cudaStreamSynchronize(bg->s));
	}
	*slow = cal_median(with, reps) / alone - 1.0;
	return 0;
}

static int cal_interfere(struct cal *c, const struct cal_op *target, const struct cal_op *bg,
			 double bg_us, const char *variant, double *slow, struct ema_error *err)
{
	return cal_interfere_vs(c, target, target, bg, bg_us, variant, slow, err);
}

static int cal_interference(struct cal *c, struct cal_result *res, struct ema_error *err)
{
	struct cal_op t, bg;
	double bg_us = 1024.0 * CAL_MIB / (395.0 * 1e3);
	uint64_t chunks;
	int rc;

	if (c->n_gpus < 2)
		return 0;
	/* lender: GPU 1 reads its first GiB 40 times while GPU 0 pulls the
	 * second GiB of GPU 1 with the copy engine, then with the gather kernel */
	rc = cal_read_op(c, &t, 1, c->buf[1], CAL_BUF / 2, 1024 * CAL_MIB, 1024 * CAL_MIB, err);
	if (rc != 0)
		return rc;
	t.repeat = 40;
	memset(&bg, 0, sizeof bg);
	bg.kind = CAL_MEMCPY;
	bg.dev = 0;
	bg.s = c->bg[0];
	bg.dst = c->buf[0] + CAL_BUF / 2;
	bg.src = c->buf[1] + CAL_BUF / 2;
	bg.bytes = CAL_BUF / 2;
	rc = cal_interfere(c, &t, &bg, bg_us, "lender_copy_engine", &res->lender_ce, err);
	if (rc != 0)
		return rc;
	c->hseg[0].src = (uint64_t)(uintptr_t)(c->buf[1] + CAL_BUF / 2);
	c->hseg[0].dst = (uint64_t)(uintptr_t)(c->buf[0] + CAL_BUF / 2);
	c->hseg[0].bytes = CAL_BUF / 2;
	/* descriptor 1 of GPU 0's buffer: the read op of the borrower uses 0 */
	chunks = ema_hwk_prefix(c->hseg, 1);
	EMA_HW_TRY(err, cudaSetDevice(0));
	EMA_HW_TRY(err, cudaMemcpy(c->dseg[0] + 1, c->hseg, sizeof *c->hseg,
				   cudaMemcpyHostToDevice));
	bg.kind = CAL_GATHER;
	bg.dsegs = c->dseg[0] + 1;
	bg.n = 1;
	bg.chunks = chunks;
	rc = cal_interfere(c, &t, &bg, bg_us, "lender_gather", &res->lender_sm, err);
	if (rc != 0)
		return rc;
	/* borrower: GPU 0 reads its first GiB while pulling into its second */
	rc = cal_read_op(c, &t, 0, c->buf[0], CAL_BUF / 2, 1024 * CAL_MIB, 1024 * CAL_MIB, err);
	if (rc != 0)
		return rc;
	t.repeat = 40;
	bg.kind = CAL_MEMCPY;
	rc = cal_interfere(c, &t, &bg, bg_us, "borrower_copy_engine", &res->borrower, err);
	if (rc != 0)
		return rc;
	/* the borrower as the hw backend stages: the gather kernel pulls
	 * while the reads run on the SMs it leaves (the staged read grid),
	 * against reads alone on the whole GPU, the pull at full rate the
	 * whole time (an upper bound: the model's factor comes from whole
	 * staged steps, cal_staged_steps) */
	{
		struct cal_op staged = t;

		staged.read_blocks_per_sm = EMA_HWK_STAGED_READ_BLOCKS_PER_SM;
		bg.kind = CAL_GATHER;
		rc = cal_interfere_vs(c, &t, &staged, &bg, bg_us, "borrower_gather_staged",
				      &res->borrower_sm, err);
		bg.kind = CAL_MEMCPY;
		if (rc != 0)
			return rc;
	}
	/* compute-bound: GEMMs on GPU 0 during the pull */
	memset(&t, 0, sizeof t);
	t.kind = CAL_GEMM;
	t.dev = 0;
	t.s = c->s[0];
	t.n = 8 * EMA_HW_GEMM_COLS;
	t.repeat = 1;
	rc = cal_interfere(c, &t, &bg, bg_us, "gemm_copy_engine", &res->gemm_slow, err);
	if (rc != 0)
		return rc;
	/* the pull itself while its GPU reads its own HBM, as a prefetch
	 * overlaps the iteration that will use it: by the copy engine, then
	 * by the gather kernel (which also competes for SMs) */
	{
		struct cal_op rd, pull = bg;
		double rd_us = 4.0 * 1024.0 * CAL_MIB / (4000.0 * 1e3);

		rc = cal_read_op(c, &rd, 0, c->buf[0], CAL_BUF / 2, 1024 * CAL_MIB,
				 1024 * CAL_MIB, err);
		if (rc != 0)
			return rc;
		rd.repeat = 4;
		pull.kind = CAL_MEMCPY;
		rc = cal_interfere(c, &pull, &rd, rd_us, "pull_copy_engine_under_reads",
				   &res->pull_slow_ce, err);
		if (rc != 0)
			return rc;
		pull.kind = CAL_GATHER;
		return cal_interfere(c, &pull, &rd, rd_us, "pull_gather_under_reads",
				     &res->pull_slow_sm, err);
	}
}

static int cal_alloc(struct cal *c, struct cal_result *res, struct ema_error *err)
{
	static const uint64_t sz[3] = { 2 * CAL_MIB, 64 * CAL_MIB, 1024 * CAL_MIB };
	int reps = c->quick ? 5 : 11;

	EMA_HW_TRY(err, cudaSetDevice(0));
	for (int i = 0; i < 3; i++) {
		double m[CAL_MAX_REPS], f[CAL_MAX_REPS];

		for (int r = 0; r < reps; r++) {
			void *ptr = NULL;
			int64_t t0 = ema_hw_clock_ns();

			EMA_HW_TRY(err, cudaMalloc(&ptr, sz[i]));
			m[r] = cal_host_us(t0);
			t0 = ema_hw_clock_ns();
			EMA_HW_TRY(err, cudaFree(ptr));
			f[r] = cal_host_us(t0);
			cal_csv(c, "alloc", "cudaMalloc", 0, 0, sz[i], 0, r, m[r]);
			cal_csv(c, "alloc", "cudaFree", 0, 0, sz[i], 0, r, f[r]);
		}
		res->malloc_us[i] = cal_median(m, reps);
		res->free_us[i] = cal_median(f, reps);
	}
	return 0;
}

/* VMM: memory created on GPU 1 and mapped for both GPUs, per 2 MiB page. */
static int cal_vmm(struct cal *c, struct cal_result *res, struct ema_error *err)
{
	static const char *const phase[5] = { "cuMemCreate", "cuMemMap", "cuMemSetAccess",
					      "cuMemUnmap", "cuMemRelease" };
	struct ema_hw_vmm v;
	CUmemAllocationProp prop;
	CUmemAccessDesc acc[2];
	CUmemGenericAllocationHandle h[64];
	CUdeviceptr va = 0;
	size_t gran = 0, page;
	int k = c->quick ? 16 : 64, rc, owner = c->n_gpus >= 2 ? 1 : 0;
	double t[5];

	rc = ema_hw_vmm_load(&v, err);
	if (rc != 0)
		return rc;
	EMA_HW_TRY(err, cudaSetDevice(0));
	EMA_HW_TRY(err, cudaFree(NULL));
	memset(&prop, 0, sizeof prop);
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = owner;
	if (v.granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) != CUDA_SUCCESS)
		return ema_error_set(err, EMA_ERR_DEVICE, "cuMemGetAllocationGranularity failed");
	page = gran > 2 * CAL_MIB ? gran : 2 * CAL_MIB;
	if (v.reserve(&va, (size_t)k * page, 0, 0, 0) != CUDA_SUCCESS)
		return ema_error_set(err, EMA_ERR_DEVICE, "cuMemAddressReserve failed");
	memset(acc, 0, sizeof acc);
	for (int d = 0; d < 2; d++) {
		acc[d].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		acc[d].location.id = d;
		acc[d].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	}
	for (int ph = 0; ph < 5; ph++) {
		int64_t t0 = ema_hw_clock_ns();

		for (int i = 0; i < k; i++) {
			CUresult r = CUDA_SUCCESS;
			CUdeviceptr at = va + (CUdeviceptr)i * page;

			switch (ph) {
			case 0: r = v.create(&h[i], page, &prop, 0); break;
			case 1: r = v.map(at, page, 0, h[i], 0); break;
			case 2: r = v.set_access(at, page, acc, c->n_gpus >= 2 ? 2 : 1); break;
			case 3: r = v.unmap(at, page); break;
			default: r = v.release(h[i]); break;
			}
			if (r != CUDA_SUCCESS) {
				v.address_free(va, (size_t)k * page);
				return ema_error_set(err, EMA_ERR_DEVICE, "%s failed (%d)",
						     phase[ph], (int)r);
			}
		}
		t[ph] = cal_host_us(t0) / k;
		res->vmm_us[ph] = t[ph];
		cal_csv(c, "vmm", phase[ph], owner, 0, page, page, 0, t[ph]);
	}
	v.address_free(va, (size_t)k * page);
	return 0;
}

/* A chain of decode steps on GPU 0 through the hw platform, each started
 * from the previous one's callback, as the serving model does. */
struct cal_chain {
	struct ema_platform *p;
	struct ema_iteration it;
	int left, n;
	double us[64];
	int rc;
};

static void cal_chain_done(void *arg, const struct ema_iteration_result *r)
{
	struct cal_chain *ch = arg;

	if (ch->n < 64)
		ch->us[ch->n++] = (double)(r->end_ns - r->start_ns) / 1e3;
	if (--ch->left > 0 && ch->rc == 0)
		ch->rc = ch->p->ops->iteration(ch->p, &ch->it, cal_chain_done, ch, NULL);
}

/* Remote KV as the serving model reads it: whole decode steps through the
 * hw platform (the pipeline `ema run --backend hw` runs), 4 GiB of weights
 * and 672 KV pages of 2 MiB, with 48, 96, 160 and 280 of the pages (1.8%
 * to 10.4% of the bytes, the last beyond what the link carries during the
 * step) on the peer, read two ways: in place by a share of the grid
 * (prefetch depth 0) and staged (8 layer groups, one ahead, gather
 * copies), against the same bytes all local. cal_fit_remote fits the cost
 * model's in-place overlap efficiency and staged interference to them.
 * The pages on the lender are scattered (every other page). */
static const int cal_share_pages[] = { 48, 96, 160, 280 };
#define CAL_KV_PAGES 672

static int cal_remote_steps(struct cal *c, struct cal_result *res, struct ema_error *err)
{
	const uint64_t pb = 2 * CAL_MIB;
	const int n_staging = 64, warm = 8, runs = 40;
	const int n_sh = (int)(sizeof cal_share_pages / sizeof cal_share_pages[0]);
	uint64_t pool[EMA_MAX_GPUS] = { 2048, 1024 };
	struct ema_config *cfg = calloc(1, sizeof *cfg);
	int32_t *local = malloc(CAL_KV_PAGES * sizeof *local);
	int32_t remote[CAL_KV_PAGES], staging[64];
	struct ema_platform *p = NULL;
	int rc = 0;

	if (cfg == NULL || local == NULL) {
		free(cfg);
		free(local);
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	}
	snprintf(cfg->name, sizeof cfg->name, "calibrate-remote");
	cfg->hw.n_gpus = 2;
	cfg->n_tenants = 2;
	cfg->tenants[1].gpu = 1;
	for (int i = 0; i < CAL_KV_PAGES; i++)
		local[i] = i;
	for (int i = 0; i < 280; i++)
		remote[i] = 2 * i;      /* scattered on the lender */
	for (int i = 0; i < n_staging; i++)
		staging[i] = 1024 + i;
	{
		struct ema_platform_params pp;

		ema_hw_params_for_pools(&pp, cfg, pb, pool);
		rc = ema_hw_platform_create(&p, &pp, NULL, err);
	}
	/* v = 0: all local; then for each share, in place and staged */
	for (int v = 0; v < 1 + 2 * n_sh && rc == 0; v++) {
		int sh = v == 0 ? -1 : (v - 1) / 2;
		bool staged = v > 0 && (v - 1) % 2 == 1;
		int n_r = sh < 0 ? 0 : cal_share_pages[sh];
		struct cal_chain ch;
		char variant[64];
		double med;

		memset(&ch, 0, sizeof ch);
		ch.p = p;
		ch.left = warm + runs;
		ch.it.gpu = 0;
		ch.it.n_seqs = 64;
		ch.it.decode_tokens = 64;
		ch.it.weight_bytes = 4096 * CAL_MIB;
		ch.it.local_pages = local;
		ch.it.layer_groups = 8;
		ch.it.method = EMA_COPY_GATHER;
		ch.it.n_local_pages = CAL_KV_PAGES - n_r;
		ch.it.kv_local_bytes = (uint64_t)(CAL_KV_PAGES - n_r) * pb;
		if (n_r > 0) {
			ch.it.n_remote = 1;
			ch.it.remote[0].gpu = 1;
			ch.it.remote[0].n_pages = n_r;
			ch.it.remote[0].pages = remote;
			ch.it.remote[0].bytes = (uint64_t)n_r * pb;
		}
		if (staged) {
			ch.it.prefetch_depth = 1;
			ch.it.staging_pages = staging;
			ch.it.n_staging_pages = n_staging;
		}
		ch.it.window_depth = ema_iteration_window_depth(&ch.it, pb);
		rc = p->ops->iteration(p, &ch.it, cal_chain_done, &ch, NULL);
		if (rc == 0)
			rc = p->ops->run(p, 0, err);
		if (rc == 0 && ch.rc != 0)
			rc = ch.rc;
		if (rc != 0) {
			rc = ema_error_set(err, rc, "remote decode steps: %s", ema_hw_last_error(p));
			break;
		}
		med = cal_median(ch.us + warm, runs);
		if (sh < 0)
			res->all_local_us = med;
		else if (staged)
			res->staged_us[sh] = med;
		else
			res->inplace_us[sh] = med;
		snprintf(variant, sizeof variant, "%s_%dof%d",
			 sh < 0 ? "decode_all_local" : staged ? "decode_staged" : "decode_inplace",
			 n_r, CAL_KV_PAGES);
		for (int r = warm; r < ch.n; r++)
			cal_csv(c, "step", variant, n_r > 0 ? 1 : 0, 0,
				(uint64_t)CAL_KV_PAGES * pb + 4096 * CAL_MIB, pb, r - warm, ch.us[r]);
	}
	if (p != NULL)
		p->ops->destroy(p);
	free(cfg);
	free(local);
	if (rc != 0)
		return rc;
	res->n_shares = n_sh;
	for (int i = 0; i < n_sh; i++)
		res->share_pages[i] = cal_share_pages[i];
	/* the single point of earlier profiles (160 pages, 6% of the bytes) */
	res->staged_slow = res->staged_us[2] / res->all_local_us - 1.0;
	res->staged_in_gbps = 160.0 * (double)pb / (res->staged_us[2] * 1e3);
	return 0;
}

/* The iteration cal_remote_steps ran for share i, as the cost model sees
 * it (no page lists). */
static void cal_share_iteration(int n_r, bool staged, struct ema_iteration *it)
{
	const uint64_t pb = 2 * CAL_MIB;

	memset(it, 0, sizeof *it);
	it->n_seqs = 64;
	it->decode_tokens = 64;
	it->weight_bytes = 4096 * CAL_MIB;
	it->layer_groups = 8;
	it->method = EMA_COPY_GATHER;
	it->kv_local_bytes = (uint64_t)(CAL_KV_PAGES - n_r) * pb;
	it->n_remote = n_r > 0;
	it->remote[0].gpu = 1;
	it->remote[0].bytes = (uint64_t)n_r * pb;
	it->prefetch_depth = staged ? 1 : 0;
}

/* Fits the two remote-read figures of the cost model (base/step_cost.c)
 * to the steps of cal_remote_steps, least squares over the shares:
 * in place, memory time = max(local HBM, link) / eta; staged, memory time
 * = local x (1 + k x stage-in rate / HBM), over the points that are not
 * link-bound. err_inplace/err_staged get the fitted model's relative
 * error per share. */
static void cal_fit_remote(const struct cal_result *r, struct ema_hw_profile *hw,
			   double *err_inplace, double *err_staged)
{
	double smm = 0, smy = 0, sxx = 0, sxy = 0;
	struct ema_step_cost sc;
	struct ema_iteration it;

	if (r->n_shares <= 0)
		return;
	hw->inplace_overlap_efficiency = 1.0;
	hw->interference_borrower = 0.0;
	for (int i = 0; i < r->n_shares; i++) {
		double y;

		cal_share_iteration(r->share_pages[i], false, &it);
		ema_step_cost(hw, &it, false, &sc);
		y = r->inplace_us[i] * 1e3 - sc.overhead_ns;
		smm += sc.memory_ns * sc.memory_ns;
		smy += sc.memory_ns * y;
		cal_share_iteration(r->share_pages[i], true, &it);
		ema_step_cost(hw, &it, true, &sc);
		y = r->staged_us[i] * 1e3 - sc.overhead_ns;
		if (sc.link_ns < y) {
			double in = ema_cost_stage_in_gbps(hw, it.method,
							  ema_cost_staged_slice_bytes(&it),
							  (const double[EMA_MAX_GPUS]){ 0, (double)it.remote[0].bytes },
							  EMA_MAX_GPUS, fmax(sc.compute_ns, sc.local_ns));
			double x = sc.local_ns * in / hw->hbm_read_gbps;

			sxx += x * x;
			sxy += x * (y - sc.local_ns);
		}
	}
	/* eta above 1 would mean in-place reads faster than the local bytes
	 * alone; the model takes 1 as its bound */
	hw->inplace_overlap_efficiency = smy > 0 ? fmin(1.0, smm / smy) : 1.0;
	hw->interference_borrower = sxx > 0 ? fmax(0.0, sxy / sxx) : 0.0;
	for (int i = 0; i < r->n_shares; i++) {
		cal_share_iteration(r->share_pages[i], false, &it);
		ema_step_cost(hw, &it, false, &sc);
		err_inplace[i] = sc.total_ns / (r->inplace_us[i] * 1e3) - 1.0;
		cal_share_iteration(r->share_pages[i], true, &it);
		ema_step_cost(hw, &it, true, &sc);
		err_staged[i] = sc.total_ns / (r->staged_us[i] * 1e3) - 1.0;
	}
}

/* The table of cal_remote_steps against the fitted model. */
static void cal_print_remote(const struct cal_result *r, const struct ema_hw_profile *hw,
			     const double *err_inplace, const double *err_staged)
{
	if (r->n_shares <= 0)
		return;
	printf("\nremote KV in decode steps (4 GiB weights + %d pages of 2 MiB; all local "
	       "%.3f ms)\n", CAL_KV_PAGES, r->all_local_us / 1e3);
	printf("%-12s %8s %12s %10s %12s %10s\n", "remote pages", "share %", "in place ms",
	       "model err", "staged ms", "model err");
	for (int i = 0; i < r->n_shares; i++)
		printf("%-12d %8.1f %12.3f %+9.1f%% %12.3f %+9.1f%%\n", r->share_pages[i],
		       100.0 * r->share_pages[i] * 2.0 / (CAL_KV_PAGES * 2.0 + 4096.0),
		       r->inplace_us[i] / 1e3, 100 * err_inplace[i], r->staged_us[i] / 1e3,
		       100 * err_staged[i]);
	printf("fitted: inplace_overlap_efficiency %.3f, interference_borrower %.3f\n",
	       hw->inplace_overlap_efficiency, hw->interference_borrower);
}

/* The backend's own steps: decode = HBM reads of weights and KV pages,
 * prefill = the GEMM; fitted as fixed + size / rate. */
static int cal_steps(struct cal *c, struct cal_result *res, struct ema_error *err)
{
	static const uint64_t bytes[4] = { 64 * CAL_MIB, 256 * CAL_MIB, 1024 * CAL_MIB,
					   4096 * CAL_MIB };
	static const int cols[4] = { 256, 1024, 8192, 32768 };
	double x[4], y[4], c0, c1, cov00, cov01, cov11, chisq;
	struct cal_op o;
	double us;
	int rc;

	for (int i = 0; i < 4; i++) {
		/* weights-like: contiguous; pieces of 1 GiB wrap the buffer */
		uint64_t piece = bytes[i] < 1024 * CAL_MIB ? bytes[i] : 1024 * CAL_MIB;

		rc = cal_read_op(c, &o, 0, c->buf[0], CAL_BUF, bytes[i], piece, err);
		if (rc == 0)
			rc = cal_time(c, &o, c->reps, "step", "decode", 0, 0, bytes[i], 0, &us, err);
		if (rc != 0)
			return rc;
		x[i] = (double)bytes[i];
		y[i] = us;
	}
	gsl_fit_linear(x, 1, y, 1, 4, &c0, &c1, &cov00, &cov01, &cov11, &chisq);
	res->decode_fixed_us = c0;
	res->decode_gbps = c1 > 0 ? 1.0 / (c1 * 1e3) : 0.0;
	memset(&o, 0, sizeof o);
	o.kind = CAL_GEMM;
	o.dev = 0;
	o.s = c->s[0];
	o.repeat = 1;
	for (int i = 0; i < 4; i++) {
		double fl = 2.0 * EMA_HW_GEMM_DIM * (double)EMA_HW_GEMM_DIM * cols[i];

		o.n = cols[i];
		rc = cal_time(c, &o, c->reps, "step", "prefill_gemm", 0, 0, (uint64_t)fl, 0,
			      &us, err);
		if (rc != 0)
			return rc;
		x[i] = fl;
		y[i] = us;
	}
	gsl_fit_linear(x, 1, y, 1, 4, &c0, &c1, &cov00, &cov01, &cov11, &chisq);
	res->prefill_fixed_us = c0;
	res->prefill_tflops = c1 > 0 ? 1.0 / (c1 * 1e6) : 0.0;
	o.kind = CAL_GEMM8K;
	rc = cal_time(c, &o, c->quick ? 5 : 10, "gemm", "8192^3", 0, 0,
		      (uint64_t)(2.0 * 8192.0 * 8192.0 * 8192.0), 0, &us, err);
	if (rc != 0)
		return rc;
	res->gemm8k_tflops = 2.0 * 8192.0 * 8192.0 * 8192.0 / (us * 1e6);
	return 0;
}

/* Remote attention (doc/hardware.md, "Remote attention"), on the
 * lender: GPU 1 with two GPUs, else GPU 0 (a second stream); the
 * borrower is GPU 0. The kernel is hw_attn.cu's, the shape the default
 * one (32 layers, 8 KV heads of 4 query heads, dimension 128, 16 tokens
 * in a 2 MiB page); 32 sequences of 64 scattered pages, 4 GiB of KV,
 * every layer once per pass, partials written into the borrower's
 * memory.
 *   alone: passes by themselves: attention_gbps;
 *   beside its own decode: the lender's decode (the backend's read
 *     kernel, 128 per-layer launches over 16 GiB) and one pass started
 *     together behind a gate: the pass's rate against alone is
 *     attention_busy_share, and the decode's extra time per GB the pass
 *     read meanwhile is attention_lender_ms_per_gb;
 *   one layer's round trip: queries on the borrower, a wait, the
 *     lender's kernel, a wait, the merge, 64 layers in a
 *     row, by event, by flag, and all on one stream (no handoff); the
 *     lender's part is one sequence of 64 one-token pages:
 *     attention_sync_us. */
#define CAL_ATTN_PAGES 2048
#define CAL_ATTN_SEQS 32
#define CAL_DECODE_LAUNCHES 128
#define CAL_SYNC_LAYERS 64

struct cal_attn_bufs {
	struct ema_hwa_geom g;
	char *pool, *dec;
	int32_t *tab;
	uint16_t *q;
	float *o, *scr, *out;
	uint32_t *cnt, *q_cnt, *q_flag, *p_flag;
	struct ema_hwk_seg *dseg;
	uint64_t dec_chunks;
	cudaStream_t sa, sd, sg, sb;
	cudaEvent_t e0, e1, ed, eb0, eb1, evq, evp;
	int splits;
};

static int cal_attn_pass(const struct cal_attn_bufs *a, int n_seqs, int valid, int first_layer,
			 int layers, int splits, cudaStream_t s, uint32_t *flag, uint32_t value)
{
	for (int u = 0; u < layers; u++) {
		struct ema_hwa_attend_args aa;
		int e;

		memset(&aa, 0, sizeof aa);
		aa.g = a->g;
		aa.layer = (first_layer + u) % a->g.layers;
		aa.n_seqs = n_seqs;
		aa.valid = valid;
		aa.splits = splits;
		aa.pool = a->pool;
		aa.seq_first = a->tab;
		aa.pages = a->tab + CAL_ATTN_SEQS + 1;
		aa.q = a->q;
		aa.o = a->o;
		aa.lse = a->o + (size_t)CAL_ATTN_SEQS * 32 * 128;
		aa.scratch = a->scr;
		aa.counters = a->cnt;
		aa.flag = flag;
		aa.flag_value = value;
		e = ema_hwa_attend(&aa, s);
		if (e != 0)
			return e;
	}
	return 0;
}

static int cal_decode(const struct cal_attn_bufs *a, int sms, cudaStream_t s)
{
	for (int i = 0; i < CAL_DECODE_LAUNCHES; i++) {
		int e = ema_hwk_read(a->dseg + i % 16, 1, a->dec_chunks,
				     EMA_HWK_READ_BLOCKS_PER_SM * sms, NULL, s);

		if (e != 0)
			return e;
	}
	return 0;
}

static double cal_ms(cudaEvent_t a, cudaEvent_t b)
{
	float ms = 0;

	cudaEventElapsedTime(&ms, a, b);
	return ms;
}

/* The round trip of CAL_SYNC_LAYERS layers of one token: mode 0 events,
 * 1 flags, 2 one stream. Returns us per layer in *us. */
static int cal_sync_round(struct cal_attn_bufs *a, PFN_cuStreamWaitValue32_v11070 wait, int lend,
			  int mode, uint32_t *qv, uint32_t *pv, double *us, struct ema_error *err)
{
	EMA_HW_TRY(err, cudaSetDevice(0));
	EMA_HW_TRY(err, cudaEventRecord(a->eb0, a->sb));
	for (int u = 0; u < CAL_SYNC_LAYERS; u++) {
		struct ema_hwa_query_args qa;
		struct ema_hwa_combine_args ca;
		cudaStream_t ls = mode == 2 ? a->sb : a->sa;

		memset(&qa, 0, sizeof qa);
		qa.seed = 1;
		qa.layer = u % a->g.layers;
		qa.n_seqs = 1;
		qa.heads = a->g.kv_heads * a->g.group;
		qa.head_dim = a->g.head_dim;
		qa.n_dst = 1;
		qa.dst[0] = a->q;
		qa.counter = a->q_cnt;
		if (mode == 1) {
			qa.n_flag = 1;
			qa.flag[0] = a->q_flag;
			qa.flag_value[0] = ++*qv;
		}
		EMA_HW_TRY(err, cudaSetDevice(0));
		EMA_HW_TRY(err, (cudaError_t)ema_hwa_queries(&qa, a->sb));
		if (mode == 0)
			EMA_HW_TRY(err, cudaEventRecord(a->evq, a->sb));
		EMA_HW_TRY(err, cudaSetDevice(mode == 2 ? 0 : lend));
		if (mode == 0)
			EMA_HW_TRY(err, cudaStreamWaitEvent(ls, a->evq, 0));
		else if (mode == 1 &&
			 wait(ls, (CUdeviceptr)(uintptr_t)a->q_flag, *qv, CU_STREAM_WAIT_VALUE_GEQ) !=
			 CUDA_SUCCESS)
			return ema_error_set(err, EMA_ERR_DEVICE, "cuStreamWaitValue32 failed");
		EMA_HW_TRY(err, (cudaError_t)cal_attn_pass(a, 1, 1, u, 1, 1, ls,
							   mode == 1 ? a->p_flag : NULL,
							   mode == 1 ? ++*pv : 0));
		if (mode == 0)
			EMA_HW_TRY(err, cudaEventRecord(a->evp, ls));
		EMA_HW_TRY(err, cudaSetDevice(0));
		if (mode == 0)
			EMA_HW_TRY(err, cudaStreamWaitEvent(a->sb, a->evp, 0));
		else if (mode == 1 &&
			 wait(a->sb, (CUdeviceptr)(uintptr_t)a->p_flag, *pv, CU_STREAM_WAIT_VALUE_GEQ) !=
			 CUDA_SUCCESS)
			return ema_error_set(err, EMA_ERR_DEVICE, "cuStreamWaitValue32 failed");
		memset(&ca, 0, sizeof ca);
		ca.n_parts = 1;
		ca.layer = u % a->g.layers;
		ca.n_seqs = 1;
		ca.heads = qa.heads;
		ca.head_dim = a->g.head_dim;
		ca.o[0] = a->o;
		ca.lse[0] = a->o + (size_t)CAL_ATTN_SEQS * 32 * 128;
		ca.out = a->out;
		EMA_HW_TRY(err, (cudaError_t)ema_hwa_combine(&ca, a->sb));
	}
	EMA_HW_TRY(err, cudaEventRecord(a->eb1, a->sb));
	EMA_HW_TRY(err, cudaEventSynchronize(a->eb1));
	*us = cal_ms(a->eb0, a->eb1) * 1e3 / CAL_SYNC_LAYERS;
	return 0;
}

static int cal_attention(struct cal *c, struct cal_result *res, struct ema_error *err)
{
	const int lend = c->n_gpus >= 2 ? 1 : 0, reps = c->quick ? 3 : 7;
	const uint64_t pb = 2 * CAL_MIB, dec_bytes = 2048 * CAL_MIB;
	const uint64_t kv = (uint64_t)CAL_ATTN_PAGES * pb;
	PFN_cuStreamWaitValue32_v11070 wait = ema_hw_wait_value_load();
	struct cal_attn_bufs a;
	int32_t h_tab[CAL_ATTN_SEQS + 1 + CAL_ATTN_PAGES];
	struct ema_hwk_seg h_seg[16];
	double t_alone[CAL_MAX_REPS], t_dec[CAL_MAX_REPS], t_dw[CAL_MAX_REPS], t_aw[CAL_MAX_REPS];
	double s_ev[CAL_MAX_REPS], s_fl[CAL_MAX_REPS], s_one[CAL_MAX_REPS];
	uint32_t qv = 0, pv = 0;
	int sms = c->prop.multiProcessorCount, rc = 0;

	memset(&a, 0, sizeof a);
	rc = ema_hwa_geom_init(&a.g, NULL, pb, err);
	if (rc != 0)
		return rc;
	a.splits = ema_hwa_splits(CAL_ATTN_SEQS, a.g.kv_heads, CAL_ATTN_PAGES / CAL_ATTN_SEQS, sms);
	/* 32 sequences of 64 pages, scattered over the pool */
	for (int s = 0; s <= CAL_ATTN_SEQS; s++)
		h_tab[s] = s * (CAL_ATTN_PAGES / CAL_ATTN_SEQS);
	for (int i = 0; i < CAL_ATTN_PAGES; i++)
		h_tab[CAL_ATTN_SEQS + 1 + i] = (int32_t)(((int64_t)i * 1031) % CAL_ATTN_PAGES);
	res->attn_lender = lend;
	EMA_HW_TRY_GOTO(err, rc, out, cudaSetDevice(lend));
	EMA_HW_TRY_GOTO(err, rc, out, cudaMalloc((void **)&a.pool, kv));
	EMA_HW_TRY_GOTO(err, rc, out, cudaMemset(a.pool, 0x35, kv));
	EMA_HW_TRY_GOTO(err, rc, out, cudaMalloc((void **)&a.dec, dec_bytes));
	EMA_HW_TRY_GOTO(err, rc, out, cudaMemset(a.dec, 0x11, dec_bytes));
	EMA_HW_TRY_GOTO(err, rc, out, cudaMalloc((void **)&a.tab, sizeof h_tab));
	EMA_HW_TRY_GOTO(err, rc, out, cudaMemcpy(a.tab, h_tab, sizeof h_tab, cudaMemcpyHostToDevice));
	EMA_HW_TRY_GOTO(err, rc, out, cudaMalloc((void **)&a.q, (size_t)CAL_ATTN_SEQS * 32 * 128 * 2));
	EMA_HW_TRY_GOTO(err, rc, out, cudaMemset(a.q, 0, (size_t)CAL_ATTN_SEQS * 32 * 128 * 2));
	EMA_HW_TRY_GOTO(err, rc, out, cudaMalloc((void **)&a.scr,
						 ema_hwa_scratch_bytes(&a.g, CAL_ATTN_SEQS, a.splits) + 16));
	EMA_HW_TRY_GOTO(err, rc, out, cudaMalloc((void **)&a.cnt,
						 ema_hwa_counter_bytes(&a.g, CAL_ATTN_SEQS)));
	EMA_HW_TRY_GOTO(err, rc, out, cudaMemset(a.cnt, 0, ema_hwa_counter_bytes(&a.g, CAL_ATTN_SEQS)));
	EMA_HW_TRY_GOTO(err, rc, out, cudaMalloc((void **)&a.q_flag, 4));
	EMA_HW_TRY_GOTO(err, rc, out, cudaMemset(a.q_flag, 0, 4));
	for (int i = 0; i < 16; i++) {
		h_seg[i].src = (uint64_t)(uintptr_t)(a.dec + (uint64_t)i * (dec_bytes / 16));
		h_seg[i].dst = 0;
		h_seg[i].bytes = dec_bytes / 16;
		h_seg[i].first_chunk = 0;
	}
	a.dec_chunks = (dec_bytes / 16 + EMA_HWK_CHUNK - 1) / EMA_HWK_CHUNK;
	EMA_HW_TRY_GOTO(err, rc, out, cudaMalloc((void **)&a.dseg, sizeof h_seg));
	EMA_HW_TRY_GOTO(err, rc, out, cudaMemcpy(a.dseg, h_seg, sizeof h_seg, cudaMemcpyHostToDevice));
	EMA_HW_TRY_GOTO(err, rc, out, cudaStreamCreateWithFlags(&a.sa, cudaStreamNonBlocking));
	EMA_HW_TRY_GOTO(err, rc, out, cudaStreamCreateWithFlags(&a.sd, cudaStreamNonBlocking));
	EMA_HW_TRY_GOTO(err, rc, out, cudaStreamCreateWithFlags(&a.sg, cudaStreamNonBlocking));
	EMA_HW_TRY_GOTO(err, rc, out, cudaEventCreate(&a.e0));
	EMA_HW_TRY_GOTO(err, rc, out, cudaEventCreate(&a.e1));
	EMA_HW_TRY_GOTO(err, rc, out, cudaEventCreate(&a.ed));
	EMA_HW_TRY_GOTO(err, rc, out, cudaEventCreateWithFlags(&a.evp, cudaEventDisableTiming));
	/* the borrower's side: partials, outputs, its stream and flags */
	EMA_HW_TRY_GOTO(err, rc, out, cudaSetDevice(0));
	EMA_HW_TRY_GOTO(err, rc, out, cudaMalloc((void **)&a.o, (size_t)CAL_ATTN_SEQS * 32 * 129 * 4));
	EMA_HW_TRY_GOTO(err, rc, out, cudaMalloc((void **)&a.out, (size_t)CAL_ATTN_SEQS * 32 * 128 * 4));
	EMA_HW_TRY_GOTO(err, rc, out, cudaMalloc((void **)&a.q_cnt, 4));
	EMA_HW_TRY_GOTO(err, rc, out, cudaMemset(a.q_cnt, 0, 4));
	EMA_HW_TRY_GOTO(err, rc, out, cudaMalloc((void **)&a.p_flag, 4));
	EMA_HW_TRY_GOTO(err, rc, out, cudaMemset(a.p_flag, 0, 4));
	EMA_HW_TRY_GOTO(err, rc, out, cudaStreamCreateWithFlags(&a.sb, cudaStreamNonBlocking));
	EMA_HW_TRY_GOTO(err, rc, out, cudaEventCreate(&a.eb0));
	EMA_HW_TRY_GOTO(err, rc, out, cudaEventCreate(&a.eb1));
	EMA_HW_TRY_GOTO(err, rc, out, cudaEventCreateWithFlags(&a.evq, cudaEventDisableTiming));
	EMA_HW_TRY_GOTO(err, rc, out, cudaDeviceSynchronize());

	EMA_HW_TRY_GOTO(err, rc, out, cudaSetDevice(lend));
	for (int r = -1; r < reps; r++) {
		/* the attention alone: one pass of 32 layers over 4 GiB */
		EMA_HW_TRY_GOTO(err, rc, out, cudaEventRecord(a.e0, a.sa));
		EMA_HW_TRY_GOTO(err, rc, out, (cudaError_t)cal_attn_pass(&a, CAL_ATTN_SEQS, 16, 0, 32,
									 a.splits, a.sa, NULL, 0));
		EMA_HW_TRY_GOTO(err, rc, out, cudaEventRecord(a.e1, a.sa));
		EMA_HW_TRY_GOTO(err, rc, out, cudaEventSynchronize(a.e1));
		if (r >= 0)
			t_alone[r] = cal_ms(a.e0, a.e1) * 1e3;
		/* the decode alone */
		EMA_HW_TRY_GOTO(err, rc, out, cudaEventRecord(a.e0, a.sd));
		EMA_HW_TRY_GOTO(err, rc, out, (cudaError_t)cal_decode(&a, sms, a.sd));
		EMA_HW_TRY_GOTO(err, rc, out, cudaEventRecord(a.ed, a.sd));
		EMA_HW_TRY_GOTO(err, rc, out, cudaEventSynchronize(a.ed));
		if (r >= 0) {
			t_dec[r] = cal_ms(a.e0, a.ed) * 1e3;
			cal_csv(c, "attention", "alone", lend, 0, kv, pb, r, t_alone[r]);
			cal_csv(c, "attention", "decode_alone", lend, lend,
				CAL_DECODE_LAUNCHES * (dec_bytes / 16), 0, r, t_dec[r]);
		}
		/* together, behind a gate (a 4 GiB read on a third stream), so
		 * that the host's launches are all queued before either starts */
		for (int i = 0; i < 32; i++)
			EMA_HW_TRY_GOTO(err, rc, out, (cudaError_t)ema_hwk_read(
						a.dseg + i % 16, 1, a.dec_chunks,
						EMA_HWK_READ_BLOCKS_PER_SM * sms, NULL, a.sg));
		EMA_HW_TRY_GOTO(err, rc, out, cudaEventRecord(a.e0, a.sg));
		EMA_HW_TRY_GOTO(err, rc, out, cudaStreamWaitEvent(a.sd, a.e0, 0));
		EMA_HW_TRY_GOTO(err, rc, out, cudaStreamWaitEvent(a.sa, a.e0, 0));
		EMA_HW_TRY_GOTO(err, rc, out, (cudaError_t)cal_decode(&a, sms, a.sd));
		EMA_HW_TRY_GOTO(err, rc, out, cudaEventRecord(a.ed, a.sd));
		EMA_HW_TRY_GOTO(err, rc, out, (cudaError_t)cal_attn_pass(&a, CAL_ATTN_SEQS, 16, 0, 32,
									 a.splits, a.sa, NULL, 0));
		EMA_HW_TRY_GOTO(err, rc, out, cudaEventRecord(a.e1, a.sa));
		EMA_HW_TRY_GOTO(err, rc, out, cudaEventSynchronize(a.e1));
		EMA_HW_TRY_GOTO(err, rc, out, cudaEventSynchronize(a.ed));
		if (r >= 0) {
			t_dw[r] = cal_ms(a.e0, a.ed) * 1e3;
			t_aw[r] = cal_ms(a.e0, a.e1) * 1e3;
			cal_csv(c, "attention", "beside_decode", lend, 0, kv, pb, r, t_aw[r]);
			cal_csv(c, "attention", "decode_beside_attention", lend, lend,
				CAL_DECODE_LAUNCHES * (dec_bytes / 16), 0, r, t_dw[r]);
		}
	}
	{
		double ta = cal_median(t_alone, reps), td = cal_median(t_dec, reps);
		double tdw = cal_median(t_dw, reps), taw = cal_median(t_aw, reps);
		/* the share of the pass's bytes read while the decode ran,
		 * its rate taken as even */
		double frac = taw > tdw ? tdw / taw : 1.0;

		res->attn_alone_gbps = (double)kv / (ta * 1e3);
		res->attn_busy_gbps = (double)kv / (taw * 1e3);
		res->attn_share = fmin(1.0, res->attn_busy_gbps / res->attn_alone_gbps);
		res->attn_decode_alone_us = td;
		res->attn_decode_with_us = tdw;
		res->attn_with_us = taw;
		res->attn_outlasted = taw > tdw;
		res->attn_gb_during = (double)kv * frac / 1e9;
		res->attn_ms_per_gb = fmax(0.0, (tdw - td) / 1e3 / res->attn_gb_during);
	}
	/* one layer's round trip: warm-up, then reps of 64 layers */
	for (int mode = 0; mode < 3; mode++) {
		double *t = mode == 0 ? s_ev : mode == 1 ? s_fl : s_one;

		if (mode == 1 && wait == NULL)
			continue;
		for (int r = -1; r < reps; r++) {
			double us;

			rc = cal_sync_round(&a, wait, lend, mode, &qv, &pv, &us, err);
			if (rc != 0)
				goto out;
			if (r >= 0) {
				t[r] = us;
				cal_csv(c, "attention_sync", mode == 0 ? "event" : mode == 1 ? "flag" :
					"one_stream", 0, lend, 0, 0, r, us);
			}
		}
		*(mode == 0 ? &res->sync_event_us : mode == 1 ? &res->sync_flag_us :
		  &res->sync_one_stream_us) = cal_median(t, reps);
	}
	res->attn_done = true;
out:
	cudaSetDevice(lend);
	cudaDeviceSynchronize();
	cudaFree(a.pool);
	cudaFree(a.dec);
	cudaFree(a.tab);
	cudaFree(a.q);
	cudaFree(a.scr);
	cudaFree(a.cnt);
	cudaFree(a.q_flag);
	cudaFree(a.dseg);
	if (a.sa != NULL)
		cudaStreamDestroy(a.sa);
	if (a.sd != NULL)
		cudaStreamDestroy(a.sd);
	if (a.sg != NULL)
		cudaStreamDestroy(a.sg);
	if (a.e0 != NULL)
		cudaEventDestroy(a.e0);
	if (a.e1 != NULL)
		cudaEventDestroy(a.e1);
	if (a.ed != NULL)
		cudaEventDestroy(a.ed);
	if (a.evp != NULL)
		cudaEventDestroy(a.evp);
	cudaSetDevice(0);
	cudaDeviceSynchronize();
	cudaFree(a.o);
	cudaFree(a.out);
	cudaFree(a.q_cnt);
	cudaFree(a.p_flag);
	if (a.sb != NULL)
		cudaStreamDestroy(a.sb);
	if (a.eb0 != NULL)
		cudaEventDestroy(a.eb0);
	if (a.eb1 != NULL)
		cudaEventDestroy(a.eb1);
	if (a.evq != NULL)
		cudaEventDestroy(a.evq);
	return rc;
}

static void cal_print_attention(const struct cal_result *r, bool flag_mode)
{
	if (!r->attn_done)
		return;
	printf("\nremote attention (lender GPU %d%s; 4 GiB of KV, 32 layers, GQA 8 x 4, "
	       "dimension 128, 16-token pages)\n", r->attn_lender,
	       r->attn_lender == 0 ? ", a second stream of the borrower" : "");
	printf("%-46s %10.1f GB/s\n", "attention alone", r->attn_alone_gbps);
	printf("%-46s %10.1f GB/s (share %.3f)\n", "attention beside the lender's own decode",
	       r->attn_busy_gbps, r->attn_share);
	printf("%-46s %10.3f ms alone, %.3f ms beside (%.2f GB read meanwhile%s)\n",
	       "the lender's decode (16 GiB, 128 launches)", r->attn_decode_alone_us / 1e3,
	       r->attn_decode_with_us / 1e3, r->attn_gb_during,
	       r->attn_outlasted ? "; the attention outlasted it" : "");
	printf("%-46s %10.3f ms per GB\n", "the lender's slowdown per GB read for a borrower",
	       r->attn_ms_per_gb);
	printf("%-46s %10.2f us\n", "one layer's round trip, by event", r->sync_event_us);
	if (r->sync_flag_us > 0)
		printf("%-46s %10.2f us\n", "one layer's round trip, by flag", r->sync_flag_us);
	else
		printf("%-46s %10s (the driver has no cuStreamWaitValue32)\n",
		       "one layer's round trip, by flag", "-");
	printf("%-46s %10.2f us\n", "the same kernels on one stream (no handoff)",
	       r->sync_one_stream_us);
	printf("profile: attention_gbps %.1f, attention_busy_share %.3f, "
	       "attention_lender_ms_per_gb %.3f, attention_sync_us %.2f (%s)\n",
	       r->attn_alone_gbps, r->attn_share, r->attn_ms_per_gb,
	       flag_mode && r->sync_flag_us > 0 ? r->sync_flag_us : r->sync_event_us,
	       flag_mode && r->sync_flag_us > 0 ? "flag, EMA_HW_ATTN_SYNC" : "event, the default");
}

/* With one GPU nothing crosses a peer link, so calibrate measures none
 * of a link's figures; left at zero, the profile would not load
 * (link_gbps, gather_gbps, remote_read_gbps and the copy curve must be
 * positive) and its interference factors would claim that pulls cost
 * nothing. They are taken from the backend's reference pair, h200x2_hw
 * (the H200s it was calibrated on), and the description says so. */
static int cal_peer_from_reference(struct ema_hw_profile *hw, struct ema_error *err)
{
	struct ema_hw_profile ref;
	int rc;

	rc = ema_hw_profile_load(&ref, "h200x2_hw", err);
	if (rc != 0)
		return rc < 0 ? rc : ema_error_set(err, EMA_ERR_INTERNAL,
						   "calibrate: no reference profile h200x2_hw");
	ema_hw_profile_copy_link(hw, &ref);
	snprintf(hw->description, sizeof hw->description,
		 "ema calibrate on one GPU: HBM, GEMM, decode and prefill steps, host link "
		 "and allocation measured (CUDA events, median after warm-up); link, copy "
		 "and interference figures are h200x2_hw's, not measured");
	return 0;
}

static int cal_profile(const struct cal *c, const struct cal_result *r, const char *name,
		       struct ema_hw_profile *hw, struct ema_error *err)
{
	time_t now = time(NULL);
	struct tm tm;
	int n = 0;
	double xfer = r->fit_gbps > 0 ? r->fit_gbps : 395.0;

	memset(hw, 0, sizeof *hw);
	snprintf(hw->name, sizeof hw->name, "%s", name);
	snprintf(hw->source, sizeof hw->source, "calibrated");
	localtime_r(&now, &tm);
	strftime(hw->date, sizeof hw->date, "%Y-%m-%d", &tm);
	snprintf(hw->description, sizeof hw->description,
		 "ema calibrate%s: CUDA events, median after warm-up; copy cost fitted as "
		 "fixed + bytes/bandwidth (GSL, 1/t^2 weights); efficiencies are those of "
		 "the hw backend's own decode (HBM read) and prefill (GEMM) steps",
		 c->quick ? " --quick" : "");
	snprintf(hw->gpu_name, sizeof hw->gpu_name, "%.*s", (int)sizeof hw->gpu_name - 1,
		 c->prop.name);
	hw->n_gpus = c->n_gpus;
	hw->gpu_mem_gib = (double)c->prop.totalGlobalMem / CAL_GIB;
	hw->hbm_read_gbps = r->hbm_gbps;
	hw->hbm_efficiency = r->hbm_gbps > 0 ? r->decode_gbps / r->hbm_gbps : 1.0;
	if (hw->hbm_efficiency > 1.0)
		hw->hbm_efficiency = 1.0;
	hw->peak_tflops = r->gemm8k_tflops;
	hw->flops_efficiency = r->gemm8k_tflops > 0 ? r->prefill_tflops / r->gemm8k_tflops : 1.0;
	if (hw->flops_efficiency > 1.0)
		hw->flops_efficiency = 1.0;
	hw->iter_overhead_us = r->decode_fixed_us > 0 ? r->decode_fixed_us : 0.0;
	/* two GPUs are a direct pair; more are assumed switched (NVSwitch) */
	hw->topology = c->n_gpus <= 2 ? EMA_TOPO_DIRECT : EMA_TOPO_SWITCH;
	hw->link_gbps = r->fit_gbps;
	hw->host_link_gbps = r->h2d_gbps < r->d2h_gbps ? r->h2d_gbps : r->d2h_gbps;
	hw->copy_engines = c->prop.asyncEngineCount;
	hw->copy_fixed_us = r->fixed_us > 0 ? r->fixed_us : 0.0;
	hw->copy_call_us = r->page_call_us[0][0];
	hw->batch_page_us = r->page_call_us[1][0];
	hw->gather_gbps = r->page_gbps[2][3];
	for (int i = 0; i < r->n_sizes && n < EMA_CURVE_MAX; i++) {
		if (r->copy_gbps[0][i] <= 0)
			continue;
		hw->copy_curve[n].bytes = (double)r->sizes[i];
		hw->copy_curve[n].gbps = r->copy_gbps[0][i];
		n++;
	}
	hw->n_copy_curve = n;
	hw->remote_read_gbps = r->remote_gbps;
	/* slowdown = factor x transfer rate / HBM rate */
	hw->interference_lender = r->hbm_gbps > 0 ? fmax(0.0, r->lender_ce) * r->hbm_gbps / xfer : 0;
	/* the borrower's factor is for the default prefetch, the gather
	 * kernel, at the rate it keeps beside the reads (a fallback when
	 * whole staged steps could not be measured) */
	{
		double pull = r->page_gbps[2][3] > 0 ? r->page_gbps[2][3] : xfer;

		if (r->pull_slow_sm > 0)
			pull /= 1.0 + r->pull_slow_sm;
		hw->interference_borrower = r->hbm_gbps > 0 ?
			fmax(0.0, r->borrower_sm > 0 ? r->borrower_sm : r->borrower) *
			r->hbm_gbps / pull : 0;
	}
	hw->interference_compute = fmax(0.0, r->gemm_slow);
	/* the default prefetch method is the gather kernel */
	hw->pull_share_under_load = 1.0 / (1.0 + fmax(0.0, r->pull_slow_sm));
	/* 1 = local and in-place reads overlap fully, until the whole
	 * decode steps of cal_remote_steps are fitted (cal_fit_remote) */
	hw->inplace_overlap_efficiency = 1.0;
	hw->map_us_per_page = r->vmm_us[1] + r->vmm_us[2];
	hw->unmap_us_per_page = r->vmm_us[3];
	hw->malloc_2mib_us = r->malloc_us[0];
	return c->n_gpus < 2 ? cal_peer_from_reference(hw, err) : 0;
}

static void cal_print(const struct cal_result *r)
{
	struct cal_row rows[] = {
		{ "local HBM read kernel, 1 GiB", "GB/s", 4430, r->hbm_gbps },
		{ "scattered reads, 16 KiB blocks", "GB/s", 3930, r->scattered_gbps[0] },
		{ "scattered reads, 2 MiB blocks", "GB/s", 4140, r->scattered_gbps[3] },
		{ "local device copy, 1 GiB", "GB/s", 2100, r->copy_gbps[2][r->n_sizes - 1] },
		{ "kernel reading peer memory", "GB/s", 373, r->remote_gbps },
		{ "peer copy 0->1, 1 GiB", "GB/s", 395, r->copy_gbps[0][r->n_sizes - 1] },
		{ "peer copy 1->0, 1 GiB", "GB/s", 395, r->copy_gbps[1][r->n_sizes - 1] },
		{ "peer copy fit: bandwidth", "GB/s", 395, r->fit_gbps },
		{ "peer copy fit: fixed cost", "us", 15.9, r->fixed_us },
		{ "bidirectional, 2 x 1 GiB", "GB/s", 777, r->bidir_gbps },
		{ "per-page copies, 16 KiB", "GB/s", 2.6, r->page_gbps[0][0] },
		{ "per-page copies, 64 KiB", "GB/s", 10, r->page_gbps[0][1] },
		{ "per-page copies, 256 KiB", "GB/s", 31, r->page_gbps[0][2] },
		{ "per-page copies, 2 MiB", "GB/s", 150, r->page_gbps[0][3] },
		{ "per-page copies, 16 MiB", "GB/s", 317, r->page_gbps[0][4] },
		{ "batch copy, 16 KiB pages", "GB/s", 30, r->page_gbps[1][0] },
		{ "batch copy, 64 KiB pages", "GB/s", 94, r->page_gbps[1][1] },
		{ "batch copy, 256 KiB pages", "GB/s", 218, r->page_gbps[1][2] },
		{ "batch copy, 2 MiB pages", "GB/s", 357, r->page_gbps[1][3] },
		{ "batch copy, 16 MiB pages", "GB/s", 0, r->page_gbps[1][4] },
		{ "gather kernel, 16 KiB pages", "GB/s", 365, r->page_gbps[2][0] },
		{ "gather kernel, 64 KiB pages", "GB/s", 365, r->page_gbps[2][1] },
		{ "gather kernel, 256 KiB pages", "GB/s", 365, r->page_gbps[2][2] },
		{ "gather kernel, 2 MiB pages", "GB/s", 365, r->page_gbps[2][3] },
		{ "gather kernel, 16 MiB pages", "GB/s", 365, r->page_gbps[2][4] },
		{ "per-page call cost, 16 KiB", "us", 6.3, r->page_call_us[0][0] },
		{ "batch cost per page, 16 KiB", "us", 0.5, r->page_call_us[1][0] },
		{ "pinned host -> device, 256 MiB", "GB/s", 55.4, r->h2d_gbps },
		{ "device -> pinned host, 256 MiB", "GB/s", 55.4, r->d2h_gbps },
		{ "lender slowdown, copy-engine pull", "%", 9.9, 100 * r->lender_ce },
		{ "lender slowdown, gather pull", "%", 8.3, 100 * r->lender_sm },
		{ "borrower slowdown, own pull", "%", 17.3, 100 * r->borrower },
		{ "borrower slowdown, staged (gather)", "%", 0, 100 * r->borrower_sm },
		{ "staged decode step slowdown", "%", 0, 100 * r->staged_slow },
		{ "  at a prefetch rate of", "GB/s", 0, r->staged_in_gbps },
		{ "GEMM slowdown during a pull", "%", 0.7, 100 * r->gemm_slow },
		{ "pull rate kept under reads, copy engine", "%", 0, 100 / (1 + fmax(0.0, r->pull_slow_ce)) },
		{ "pull rate kept under reads, gather", "%", 0, 100 / (1 + fmax(0.0, r->pull_slow_sm)) },
		{ "cudaMalloc 2 MiB", "us", 80, r->malloc_us[0] },
		{ "cudaFree 2 MiB", "us", 55, r->free_us[0] },
		{ "cudaMalloc 64 MiB", "us", 184, r->malloc_us[1] },
		{ "cudaFree 64 MiB", "us", 88, r->free_us[1] },
		{ "cudaMalloc 1 GiB", "us", 630, r->malloc_us[2] },
		{ "cudaFree 1 GiB", "us", 448, r->free_us[2] },
		{ "cuMemCreate per 2 MiB", "us", 10.3, r->vmm_us[0] },
		{ "cuMemMap per 2 MiB", "us", 1.1, r->vmm_us[1] },
		{ "cuMemSetAccess per 2 MiB (2 GPUs)", "us", 97.9, r->vmm_us[2] },
		{ "cuMemUnmap per 2 MiB", "us", 37.4, r->vmm_us[3] },
		{ "cuMemRelease per 2 MiB", "us", 16.6, r->vmm_us[4] },
		{ "decode step (HBM read) fit", "GB/s", 0, r->decode_gbps },
		{ "decode step fixed cost", "us", 0, r->decode_fixed_us },
		{ "prefill step (4096-wide GEMM) fit", "TFLOP/s", 0, r->prefill_tflops },
		{ "bf16 GEMM 8192^3", "TFLOP/s", 872, r->gemm8k_tflops },
	};

	printf("%-38s %10s %10s %7s  %s\n", "what", "measured", "reference", "ratio", "unit");
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		char ref[32];

		/* exactly 0: not measured (the peer figures with one GPU, or
		 * VMM where the driver refuses it) */
		if (rows[i].ref > 0)
			snprintf(ref, sizeof ref, "%.2f", rows[i].ref);
		else
			snprintf(ref, sizeof ref, "-");
		if (rows[i].got == 0)
			printf("%-38s %10s %10s %7s  %s\n", rows[i].what, "-", ref, "-",
			       rows[i].unit);
		else if (rows[i].ref > 0)
			printf("%-38s %10.2f %10.2f %7.3f  %s\n", rows[i].what, rows[i].got,
			       rows[i].ref, rows[i].got / rows[i].ref, rows[i].unit);
		else
			printf("%-38s %10.2f %10s %7s  %s\n", rows[i].what, rows[i].got, "-", "-",
			       rows[i].unit);
	}
}

int ema_hw_calibrate(const struct ema_hw_cal_opts *o, FILE *csv,
		     struct ema_hw_profile *profile, struct ema_error *err)
{
	struct cal c;
	struct cal_result res;
	char why[EMA_ERROR_MSG_MAX];
	int rc, n;

	memset(&c, 0, sizeof c);
	c.quick = o->quick;
	n = ema_hw_gpu_count(err);
	if (n <= 0) {
		snprintf(why, sizeof why, "%s", n < 0 ? err->msg : "no GPU found");
		return ema_error_set(err, EMA_ERR_UNSUPPORTED, "calibrate: not supported here: %.900s",
				     why);
	}
	c.n_gpus = n;
	c.reps = c.quick ? 5 : 20;
	if (n < 2)
		fprintf(stderr, "ema calibrate: one GPU: peer measurements waived\n");
	c.csv = csv;
	if (c.csv != NULL)
		fprintf(c.csv, "test,variant,src_gpu,dst_gpu,bytes,page_bytes,rep,time_us,gbps\n");
	memset(&res, 0, sizeof res);
	rc = cal_setup(&c, err);
	fprintf(stderr, "ema calibrate: %d x %s%s\n", n, c.prop.name, c.quick ? " (quick)" : "");
	if (rc == 0) {
		fprintf(stderr, "ema calibrate: copies by size\n");
		rc = cal_copies(&c, &res, err);
	}
	if (rc == 0) {
		fprintf(stderr, "ema calibrate: scattered pages by method\n");
		rc = cal_page_methods(&c, &res, err);
	}
	if (rc == 0) {
		fprintf(stderr, "ema calibrate: HBM and remote reads\n");
		rc = cal_reads(&c, &res, err);
	}
	if (rc == 0) {
		fprintf(stderr, "ema calibrate: decode and prefill steps\n");
		rc = cal_steps(&c, &res, err);
	}
	if (rc == 0) {
		fprintf(stderr, "ema calibrate: interference\n");
		rc = cal_interference(&c, &res, err);
	}
	if (rc == 0) {
		fprintf(stderr, "ema calibrate: allocation and VMM mapping\n");
		rc = cal_alloc(&c, &res, err);
	}
	if (rc == 0) {
		rc = cal_vmm(&c, &res, err);
		if (rc != 0) {
			fprintf(stderr, "ema calibrate: VMM waived: %s\n", err->msg);
			rc = 0;
		}
	}
	cal_teardown(&c);
	if (rc == 0 && n >= 2) {
		fprintf(stderr, "ema calibrate: decode steps with remote KV, in place and staged\n");
		rc = cal_remote_steps(&c, &res, err);
	}
	if (rc == 0) {
		fprintf(stderr, "ema calibrate: remote attention on the lender, and its handoffs\n");
		rc = cal_attention(&c, &res, err);
	}
	if (rc != 0) {
		snprintf(why, sizeof why, "%s", err->msg);
		return ema_error_set(err, rc, "calibrate: %.900s", why);
	}
	cal_print(&res);
	rc = cal_profile(&c, &res, o->name, profile, err);
	if (rc != 0)
		return rc;
	if (res.attn_done) {
		/* measured on the lender (with one GPU, a second stream of GPU 0:
		 * the kernel's rates hold, the handoff crosses no link) */
		const char *mode = getenv("EMA_HW_ATTN_SYNC");
		bool flag = mode != NULL && strcmp(mode, "flag") == 0 && res.sync_flag_us > 0;

		profile->attention_gbps = res.attn_alone_gbps;
		profile->attention_busy_share = res.attn_share;
		/* 0 would mean "not measured" to the model: a measured nothing
		 * is kept as the smallest positive figure it prints */
		profile->attention_lender_ms_per_gb = fmax(res.attn_ms_per_gb, 0.001);
		profile->attention_sync_us = flag ? res.sync_flag_us : res.sync_event_us;
		cal_print_attention(&res, flag);
		if (n < 2) {
			size_t len = strlen(profile->description);

			snprintf(profile->description + len, sizeof profile->description - len,
				 "; attention_* on one GPU (sync: no link)");
		}
	}
	{
		double ei[8] = {0}, es[8] = {0};

		/* whole steps, where measured, are what the model must
		 * reproduce: they replace the microbenchmark estimate */
		cal_fit_remote(&res, profile, ei, es);
		cal_print_remote(&res, profile, ei, es);
	}
	return 0;
}
