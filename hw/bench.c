/* bench.c: the figures of `ema bench --hw`, the backend's speed through the
 * platform interface itself, as the serving model sees them: prefetch and
 * reclaim bandwidth by page size and copy method against the 395 GB/s
 * NVLink peak (target: 90% or more for pages of 64 KiB and up with the
 * gather kernel), the host loop's overhead between iterations, and one
 * decode-like read against the share of its bytes read in place from a
 * lender (the peer GPU, or pinned host memory on a machine with one GPU):
 * split grid, one pass, and all local; and whole decode steps through the
 * platform against remote share for the three remote paths: in place,
 * staged, and computed on the lender (remote attention, by event and by
 * flag). */
#include "hw.h"
#include "hw_cuda.h"
#include "hw_kernels.h"

#include "config.h"
#include "platform.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_MIB (1024ull * 1024ull)
#define BENCH_PEAK_GBPS 395.0
#define BENCH_MAX_REPS 16

struct bench_done {
	int pending;
	int64_t t;
};

static void bench_xfer_done(void *arg, int64_t now_ns)
{
	struct bench_done *d = arg;

	d->pending--;
	d->t = now_ns;
}

static int bench_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void bench_cfg(struct ema_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	snprintf(cfg->name, sizeof cfg->name, "bench-hw");
	cfg->hw.n_gpus = 2;
	cfg->n_tenants = 2;
	cfg->tenants[0].gpu = 0;
	cfg->tenants[1].gpu = 1;
}

/* Moves n scattered pages from src to dst; returns the median time from
 * the call to the callback, in us. */
static int bench_move(struct ema_platform *p, int src, int dst, int n, int slots,
		      enum ema_copy_method m, enum ema_transfer_purpose why, int reps,
		      double *med_us, struct ema_error *err)
{
	int32_t *sp = malloc((size_t)n * sizeof *sp), *dp = malloc((size_t)n * sizeof *dp);
	double t[BENCH_MAX_REPS];
	int rc = 0;

	if (sp == NULL || dp == NULL) {
		free(sp);
		free(dp);
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	}
	for (int i = 0; i < n; i++) {
		/* every other slot, in a shuffled order: no contiguous runs */
		sp[i] = (int32_t)((2 * ((int64_t)i * 7919 % n)) % slots);
		dp[i] = (int32_t)((2 * ((int64_t)i * 104729 % n) + 1) % slots);
	}
	for (int r = -1; r < reps && rc == 0; r++) {
		struct ema_transfer tr;
		struct bench_done d = { 1, 0 };
		int64_t t0;

		memset(&tr, 0, sizeof tr);
		tr.src_gpu = src;
		tr.dst_gpu = dst;
		tr.n_pages = n;
		tr.src_pages = sp;
		tr.dst_pages = dp;
		tr.purpose = why;
		tr.method = m;
		t0 = p->ops->now(p);
		rc = p->ops->transfer(p, &tr, bench_xfer_done, &d, NULL);
		if (rc != 0) {
			rc = ema_error_set(err, rc, "transfer: %s", ema_hw_last_error(p));
			break;
		}
		rc = p->ops->run(p, 0, err);
		if (rc == 0 && r >= 0)
			t[r] = (double)(d.t - t0) / 1e3;
	}
	free(sp);
	free(dp);
	if (rc != 0)
		return rc;
	qsort(t, (size_t)reps, sizeof t[0], bench_cmp);
	*med_us = t[reps / 2];
	return 0;
}

static int bench_transfers(bool quick, FILE *csv, struct ema_error *err)
{
	static const uint64_t pages[5] = {
		16 * 1024, 64 * 1024, 256 * 1024, 2 * BENCH_MIB, 16 * BENCH_MIB
	};
	static const char *const mname[3] = { "gather", "batch", "per_page" };
	uint64_t total = quick ? 256 * BENCH_MIB : 1024 * BENCH_MIB;
	struct ema_config *cfg = malloc(sizeof *cfg);
	int rc = 0;

	if (cfg == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	bench_cfg(cfg);
	printf("%-9s %-9s %10s %8s %10s %8s %9s %8s  %s\n", "page", "method", "pages",
	       "MiB", "prefetch", "% peak", "reclaim", "% peak", "target");
	for (int pi = 0; pi < 5 && rc == 0; pi++) {
		uint64_t pb = pages[pi];
		int n = (int)(total / pb);
		int slots = 2 * n;
		uint64_t pool[EMA_MAX_GPUS] = { 0 };
		struct ema_platform *p = NULL;

		if (n > 16384) {
			n = 16384;
			slots = 2 * n;
		}
		pool[0] = pool[1] = (uint64_t)slots;
		{
			struct ema_platform_params pp;

			ema_hw_params_for_pools(&pp, cfg, pb, pool);
			rc = ema_hw_platform_create(&p, &pp, NULL, err);
		}
		if (rc != 0)
			break;
		for (int m = 0; m < 3 && rc == 0; m++) {
			double pre = 0, rec = 0, gp, gr;
			int reps = quick ? 3 : 7;

			rc = bench_move(p, 1, 0, n, slots, (enum ema_copy_method)m,
					EMA_XFER_PREFETCH, reps, &pre, err);
			if (rc == 0)
				rc = bench_move(p, 0, 1, n, slots, (enum ema_copy_method)m,
						EMA_XFER_RECLAIM, reps, &rec, err);
			if (rc != 0)
				break;
			gp = (double)n * (double)pb / (pre * 1e3);
			gr = (double)n * (double)pb / (rec * 1e3);
			printf("%-9llu %-9s %10d %8.0f %10.1f %7.1f%% %9.1f %7.1f%%  %s\n",
			       (unsigned long long)pb, mname[m], n,
			       (double)n * (double)pb / BENCH_MIB, gp,
			       100 * gp / BENCH_PEAK_GBPS, gr, 100 * gr / BENCH_PEAK_GBPS,
			       m == 0 && pb >= 64 * 1024 ?
			       (gp >= 0.9 * BENCH_PEAK_GBPS && gr >= 0.9 * BENCH_PEAK_GBPS ?
				"met (>= 90%)" : "MISSED (< 90%)") : "-");
			if (csv != NULL) {
				fprintf(csv, "transfer,prefetch,%s,%llu,%d,%.3f,%.3f\n", mname[m],
					(unsigned long long)pb, n, pre, gp);
				fprintf(csv, "transfer,reclaim,%s,%llu,%d,%.3f,%.3f\n", mname[m],
					(unsigned long long)pb, n, rec, gr);
			}
		}
		p->ops->destroy(p);
	}
	free(cfg);
	return rc;
}

/* A chain of iterations on GPU 0, each started from the previous one's
 * callback, as the serving model does. */
#define BENCH_MAX_STEPS 128
struct bench_chain {
	struct ema_platform *p;
	struct ema_iteration it;
	int left;
	int64_t gpu_ns;
	int64_t stall_ns;
	uint64_t remote;
	int rc;
	int n_steps;                        /* bench_paths: steps so far, */
	double steps_us[BENCH_MAX_STEPS];   /* and each one's time */
};

static void bench_iter_done(void *arg, const struct ema_iteration_result *r)
{
	struct bench_chain *c = arg;

	c->gpu_ns += r->end_ns - r->start_ns;
	c->stall_ns += r->stall_ns;
	c->remote += r->remote_bytes;
	if (--c->left > 0 && c->rc == 0)
		c->rc = c->p->ops->iteration(c->p, &c->it, bench_iter_done, c, NULL);
}

static int bench_loop(bool quick, FILE *csv, struct ema_error *err)
{
	struct ema_config *cfg = malloc(sizeof *cfg);
	uint64_t pb = 2 * BENCH_MIB, pool[EMA_MAX_GPUS] = { 0 };
	struct ema_platform *p = NULL;
	int32_t local[256], remote[256], staging[16];
	int n_iter = quick ? 100 : 400, rc;
	/* the last variant's pages hold 1000 bytes less than full on
	 * average, as a batch's last pages do: staged copies must stay on
	 * 16-byte boundaries anyway */
	static const char *const label[4] = { "decode, local only", "decode, staged remote KV",
					      "decode, remote KV in place",
					      "decode, staged, part-full" };

	if (cfg == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	bench_cfg(cfg);
	pool[0] = 1024;  /* 2 GiB: 256 pages of weights, then KV and staging */
	pool[1] = 1024;
	{
			struct ema_platform_params pp;

			ema_hw_params_for_pools(&pp, cfg, pb, pool);
			rc = ema_hw_platform_create(&p, &pp, NULL, err);
		}
	if (rc != 0) {
		free(cfg);
		return rc;
	}
	for (int i = 0; i < 256; i++) {
		local[i] = 256 + i;
		remote[i] = 300 + 2 * i;
		if (i < 16)
			staging[i] = 600 + i;
	}
	printf("\n%-28s %6s %10s %10s %10s %9s %10s\n", "iterations (GPU 0)", "count",
	       "wall ms", "GPU ms", "gap us/it", "overhead", "stall ms");
	for (int v = 0; v < 4 && rc == 0; v++) {
		struct bench_chain c;
		int64_t t0, wall;

		memset(&c, 0, sizeof c);
		c.p = p;
		c.left = n_iter;
		c.it.tenant = 0;
		c.it.gpu = 0;
		c.it.n_seqs = 32;
		c.it.decode_tokens = 32;
		c.it.weight_bytes = 512 * BENCH_MIB;   /* ~120 us of HBM reads */
		c.it.n_local_pages = 64;
		c.it.local_pages = local;
		c.it.kv_local_bytes = 64 * pb;
		c.it.layer_groups = 8;
		c.it.method = EMA_COPY_GATHER;
		c.it.staging_pages = NULL;
		if (v > 0) {
			c.it.n_remote = 1;
			c.it.remote[0].gpu = 1;
			c.it.remote[0].n_pages = 32;
			c.it.remote[0].pages = remote;
			c.it.remote[0].bytes = v == 3 ? 32 * (pb - 1000) : 32 * pb;
		}
		if (v == 1 || v == 3) {
			c.it.prefetch_depth = 2;
			c.it.staging_pages = staging;
			c.it.n_staging_pages = 16;
		}
		t0 = p->ops->now(p);
		rc = p->ops->iteration(p, &c.it, bench_iter_done, &c, NULL);
		if (rc != 0) {
			rc = ema_error_set(err, rc, "iteration: %s", ema_hw_last_error(p));
			break;
		}
		rc = p->ops->run(p, 0, err);
		if (rc == 0 && c.rc != 0)
			rc = ema_error_set(err, c.rc, "iteration: %s", ema_hw_last_error(p));
		if (rc != 0)
			break;
		wall = p->ops->now(p) - t0;
		printf("%-28s %6d %10.2f %10.2f %10.2f %8.2f%% %10.2f\n", label[v], n_iter,
		       (double)wall / 1e6, (double)c.gpu_ns / 1e6,
		       (double)(wall - c.gpu_ns) / 1e3 / n_iter,
		       100.0 * (double)(wall - c.gpu_ns) / (double)c.gpu_ns,
		       (double)c.stall_ns / 1e6);
		if (csv != NULL)
			fprintf(csv, "loop,%s,gather,%llu,%d,%.3f,%.3f\n", label[v],
				(unsigned long long)pb, n_iter, (double)wall / 1e3,
				(double)c.gpu_ns / 1e3);
	}
	p->ops->destroy(p);
	free(cfg);
	return rc;
}

/* Medians of 10 timed launches after 2 warm-ups, in ms. split: NULL for
 * one plain read over all segs with `grid` blocks. */
static int bench_time_read(const struct ema_hwk_seg *d, int n, uint64_t chunks,
			   const struct ema_hwk_parts *split, int grid, uint64_t *sink,
			   cudaStream_t s, cudaEvent_t a, cudaEvent_t b, double *ms,
			   struct ema_error *err)
{
	double t[10];

	for (int r = -2; r < 10; r++) {
		float f = 0;

		EMA_HW_TRY(err, cudaEventRecord(a, s));
		EMA_HW_TRY(err, (cudaError_t)(split != NULL ?
					      ema_hwk_read_split(d, n, split, sink, s) :
					      ema_hwk_read(d, n, chunks, grid, sink, s)));
		EMA_HW_TRY(err, cudaEventRecord(b, s));
		EMA_HW_TRY(err, cudaEventSynchronize(b));
		EMA_HW_TRY(err, cudaEventElapsedTime(&f, a, b));
		if (r >= 0)
			t[r] = f;
	}
	qsort(t, 10, sizeof t[0], bench_cmp);
	*ms = (t[4] + t[5]) / 2;
	return 0;
}

/* Step time against remote share: 4 GiB of local reads (2 MiB pieces,
 * 8 blocks per SM) plus R bytes that live on the lender, read (a) in
 * place by the split grid of the hw backend (hw_split.c), (b) in place
 * by one grid striding over everything (what the backend did before),
 * (c) all local; the model's prediction is max(local alone, R / link
 * rate) with the link rate measured by the split kernel's remote part
 * alone. Lender: GPU 1 with two GPUs, else pinned host memory over PCIe
 * (a slower link: the same knee at smaller shares). */
static int bench_inplace(bool quick, FILE *csv, int n_gpus, struct ema_error *err)
{
	const uint64_t piece = 2 * BENCH_MIB, local_bytes = 4096 * BENCH_MIB;
	static const uint64_t peer_mib[5] = { 70, 140, 280, 420, 560 };
	static const uint64_t host_mib[5] = { 8, 16, 32, 64, 128 };
	const uint64_t *share_mib = n_gpus >= 2 ? peer_mib : host_mib;
	uint64_t max_remote = share_mib[4] * BENCH_MIB;
	int n_local = (int)(local_bytes / piece), n_max = n_local + (int)(max_remote / piece);
	int sms = 132, nsh = quick ? 3 : 5, rc = 0;
	char *lbuf = NULL, *rbuf = NULL, *rhost = NULL;
	struct ema_hwk_seg *h = NULL, *d = NULL;
	uint64_t *sink = NULL;
	cudaStream_t s = NULL;
	cudaEvent_t a = NULL, b = NULL;
	double ms_alone = 0, ms_link[5], ms_split[5], ms_one[5], ms_all[5], link_gbps = 0;

	EMA_HW_TRY(err, cudaSetDevice(0));
	EMA_HW_TRY(err, cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	EMA_HW_TRY_GOTO(err, rc, out, cudaMalloc((void **)&lbuf, local_bytes + max_remote));
	if (n_gpus >= 2) {
		cudaError_t e = cudaDeviceEnablePeerAccess(1, 0);

		if (e == cudaErrorPeerAccessAlreadyEnabled)
			cudaGetLastError();
		else
			EMA_HW_TRY_GOTO(err, rc, out, e);
		EMA_HW_TRY_GOTO(err, rc, out, cudaSetDevice(1));
		EMA_HW_TRY_GOTO(err, rc, out, cudaMalloc((void **)&rbuf, max_remote));
		EMA_HW_TRY_GOTO(err, rc, out, cudaMemset(rbuf, 1, max_remote));
		EMA_HW_TRY_GOTO(err, rc, out, cudaSetDevice(0));
	} else {
		EMA_HW_TRY_GOTO(err, rc, out, cudaHostAlloc((void **)&rhost, max_remote,
							    cudaHostAllocMapped | cudaHostAllocPortable));
		memset(rhost, 1, max_remote);
		EMA_HW_TRY_GOTO(err, rc, out, cudaHostGetDevicePointer((void **)&rbuf, rhost, 0));
	}
	EMA_HW_TRY_GOTO(err, rc, out, cudaMemset(lbuf, 1, local_bytes + max_remote));
	EMA_HW_TRY_GOTO(err, rc, out, cudaMallocHost((void **)&h, (size_t)n_max * sizeof *h));
	EMA_HW_TRY_GOTO(err, rc, out, cudaMalloc((void **)&d, (size_t)n_max * sizeof *d));
	EMA_HW_TRY_GOTO(err, rc, out, cudaMalloc((void **)&sink, 64));
	EMA_HW_TRY_GOTO(err, rc, out, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	EMA_HW_TRY_GOTO(err, rc, out, cudaEventCreate(&a));
	EMA_HW_TRY_GOTO(err, rc, out, cudaEventCreate(&b));
	printf("\nin place against remote share (GPU 0; lender: %s; 4 GiB local, 8 blocks/SM)\n",
	       n_gpus >= 2 ? "GPU 1 over NVLink" : "pinned host memory over PCIe");
	for (int i = -1; i < nsh && rc == 0; i++) {
		uint64_t rb = i < 0 ? 0 : share_mib[i] * BENCH_MIB;
		int nr = (int)(rb / piece), n = n_local + nr;
		uint64_t chunks;
		struct ema_hwk_parts parts, rparts;
		double t[2], model;

		/* local pieces, then the lender's */
		for (int k = 0; k < n; k++) {
			h[k].src = (uint64_t)(uintptr_t)(k < n_local ? lbuf + (uint64_t)k * piece :
						     rbuf + (uint64_t)(k - n_local) * piece);
			h[k].dst = 0;
			h[k].bytes = piece;
		}
		chunks = ema_hwk_prefix(h, n);
		EMA_HW_TRY_GOTO(err, rc, out, cudaMemcpy(d, h, (size_t)n * sizeof *h,
							 cudaMemcpyHostToDevice));
		if (i < 0) {
			rc = bench_time_read(d, n, chunks, NULL, EMA_HWK_READ_BLOCKS_PER_SM * sms, sink,
					     s, a, b, &ms_alone, err);
			continue;
		}
		if (link_gbps <= 0) {
			/* the link alone, read by more and more blocks, on the
			 * first share: its best rate is the model's */
			printf("%10s %14s %10s\n", "remote MiB", "remote blocks", "GB/s");
			for (int m = 0; m < 6 && rc == 0; m++) {
				uint32_t rblk = (uint32_t)sms * (1u << m) / 16;
				double ms = 0;

				rparts.n = 1;
				rparts.block_first[0] = 0;
				rparts.block_first[1] = rblk > 0 ? rblk : 1;
				/* the segments keep their chunk numbers from the
				 * whole list */
				rparts.chunk_first[0] = h[n_local].first_chunk;
				rparts.chunk_first[1] = chunks;
				rc = bench_time_read(d + n_local, nr, chunks, &rparts, 0, sink, s, a,
						     b, &ms, err);
				if (rc != 0)
					break;
				printf("%10llu %14u %10.1f\n", (unsigned long long)share_mib[i],
				       rparts.block_first[1], (double)rb / (ms * 1e6));
				if ((double)rb / (ms * 1e6) > link_gbps)
					link_gbps = (double)rb / (ms * 1e6);
				if (csv != NULL)
					fprintf(csv, "inplace,remote_alone_%u_blocks,%s,%llu,%llu,%.3f,%.3f\n",
						rparts.block_first[1], n_gpus >= 2 ? "peer" : "host",
						(unsigned long long)piece, (unsigned long long)rb,
						ms * 1e3, (double)rb / (ms * 1e6));
			}
			if (rc != 0)
				break;
			printf("\n");
		}
		/* the model's time of the lender's part, as the backend
		 * splits by it */
		t[0] = ms_alone;
		ms_link[i] = (double)rb / (link_gbps * 1e6);
		t[1] = ms_link[i];
		if (i == 0) {
			printf("%10s %8s %10s %10s %10s %10s %10s %8s %9s\n", "remote MiB",
			       "share %", "link ms", "split ms", "1-pass ms", "local ms", "model ms",
			       "split/", "blocks");
			printf("%10s %8s %10s %10s %10s %10s %10s %8s %9s\n", "", "", "", "", "", "",
			       "", "model", "L+R");
		}
		parts.chunk_first[0] = 0;
		parts.chunk_first[1] = h[n_local].first_chunk;
		parts.chunk_first[2] = chunks;
		ema_hwk_split_blocks(&parts, 2, t, (uint32_t)(EMA_HWK_READ_BLOCKS_PER_SM * sms),
				     (uint32_t)sms);
		rc = bench_time_read(d, n, chunks, &parts, 0, sink, s, a, b, &ms_split[i], err);
		if (rc == 0)
			rc = bench_time_read(d, n, chunks, NULL, EMA_HWK_READ_BLOCKS_PER_SM * sms,
					     sink, s, a, b, &ms_one[i], err);
		/* all local: the same bytes from local HBM */
		for (int k = n_local; k < n; k++)
			h[k].src = (uint64_t)(uintptr_t)(lbuf + (uint64_t)k * piece);
		if (rc == 0)
			EMA_HW_TRY_GOTO(err, rc, out, cudaMemcpy(d, h, (size_t)n * sizeof *h,
								 cudaMemcpyHostToDevice));
		if (rc == 0)
			rc = bench_time_read(d, n, chunks, NULL, EMA_HWK_READ_BLOCKS_PER_SM * sms,
					     sink, s, a, b, &ms_all[i], err);
		if (rc != 0)
			break;
		model = ms_alone > ms_link[i] ? ms_alone : ms_link[i];
		printf("%10llu %8.2f %10.1f %10.3f %10.3f %10.3f %10.3f %8.3f %4u+%-4u\n",
		       (unsigned long long)share_mib[i],
		       100.0 * (double)rb / (double)(local_bytes + rb),
		       ms_link[i], ms_split[i], ms_one[i], ms_all[i], model,
		       ms_split[i] / model, parts.block_first[1] - parts.block_first[0],
		       parts.block_first[2] - parts.block_first[1]);
		if (csv != NULL) {
			static const char *const vname[4] = { "split", "one_pass", "all_local",
							      "remote_alone" };
			const double v[4] = { ms_split[i], ms_one[i], ms_all[i], ms_link[i] };

			for (int k = 0; k < 4; k++)
				fprintf(csv, "inplace,%s,%s,%llu,%llu,%.3f,%.3f\n", vname[k],
					n_gpus >= 2 ? "peer" : "host", (unsigned long long)piece,
					(unsigned long long)rb, v[k] * 1e3, model * 1e3);
		}
	}
	printf("local alone (4 GiB): %.3f ms; split/model near 1 where the link carries "
	       "R within the local time, then link-bound\n", ms_alone);
	printf("link: %.1f GB/s at best (model ms = max(local alone, R / link))\n", link_gbps);
	/* how many blocks the link's part needs: the second and third shares
	 * with one block per 16 SMs to two per SM */
	printf("\n%10s %14s %10s %10s\n", "remote MiB", "remote blocks", "split ms", "split/model");
	for (int i = 1; i < 3 && i < nsh && rc == 0; i++) {
		uint64_t rb = share_mib[i] * BENCH_MIB;
		int nr = (int)(rb / piece), n = n_local + nr;
		uint64_t chunks;
		double model = ms_alone > ms_link[i] ? ms_alone : ms_link[i];

		for (int k = 0; k < n; k++)
			h[k].src = (uint64_t)(uintptr_t)(k < n_local ? lbuf + (uint64_t)k * piece :
						     rbuf + (uint64_t)(k - n_local) * piece);
		chunks = ema_hwk_prefix(h, n);
		EMA_HW_TRY_GOTO(err, rc, out, cudaMemcpy(d, h, (size_t)n * sizeof *h,
							 cudaMemcpyHostToDevice));
		for (int m = 0; m < 6 && rc == 0; m++) {
			uint32_t grid = (uint32_t)(EMA_HWK_READ_BLOCKS_PER_SM * sms);
			uint32_t rblk = (uint32_t)sms * (uint32_t)(1 << m) / 16;
			struct ema_hwk_parts parts;
			double ms = 0;

			parts.n = 2;
			parts.block_first[0] = 0;
			parts.block_first[1] = grid - rblk;
			parts.block_first[2] = grid;
			parts.chunk_first[0] = 0;
			parts.chunk_first[1] = h[n_local].first_chunk;
			parts.chunk_first[2] = chunks;
			rc = bench_time_read(d, n, chunks, &parts, 0, sink, s, a, b, &ms, err);
			if (rc == 0)
				printf("%10llu %14u %10.3f %10.3f\n", (unsigned long long)share_mib[i],
				       rblk, ms, ms / model);
			if (rc == 0 && csv != NULL)
				fprintf(csv, "inplace,split_%u_remote_blocks,%s,%llu,%llu,%.3f,%.3f\n",
					rblk, n_gpus >= 2 ? "peer" : "host",
					(unsigned long long)piece, (unsigned long long)rb, ms * 1e3,
					model * 1e3);
		}
	}
out:
	if (a != NULL)
		cudaEventDestroy(a);
	if (b != NULL)
		cudaEventDestroy(b);
	if (s != NULL)
		cudaStreamDestroy(s);
	cudaFree(sink);
	cudaFree(d);
	cudaFreeHost(h);
	cudaFree(lbuf);
	if (rhost != NULL)
		cudaFreeHost(rhost);
	else if (rbuf != NULL) {
		cudaSetDevice(1);
		cudaFree(rbuf);
		cudaSetDevice(0);
	}
	return rc;
}

/* Whole decode steps through the platform (what `ema run --backend hw`
 * runs), each started from the previous one's callback: 2 GiB of weights
 * and 512 KV pages of 2 MiB (16 tokens of the default shape: 32 layers,
 * 8 KV heads of 4 query heads, dimension 128), 64 sequences, with 0, 5,
 * 10, 20 and 40% of the pages on the lender (GPU 1; with one GPU, pages
 * of GPU 0 itself, its lender work on a second stream) read in place,
 * staged (8 layer groups, one ahead, gather copies) or computed there
 * (remote attention: by event, then by flag). Median step time of N
 * steps after 5 of warm-up; the lent pages carry tags, so that the
 * compute path's sampled checks run as in a real run (after the timed
 * step). */
#define BENCH_PATH_PAGES 512
static const int bench_share_pct[] = { 0, 5, 10, 20, 40 };

static void bench_step_done(void *arg, const struct ema_iteration_result *r)
{
	struct bench_chain *c = arg;

	if (c->n_steps < BENCH_MAX_STEPS)
		c->steps_us[c->n_steps++] = (double)(r->end_ns - r->start_ns) / 1e3;
	c->remote += r->remote_bytes;
	if (--c->left > 0 && c->rc == 0)
		c->rc = c->p->ops->iteration(c->p, &c->it, bench_step_done, c, NULL);
}

static int bench_paths(bool quick, FILE *csv, int n_gpus, struct ema_error *err)
{
	const uint64_t pb = 2 * BENCH_MIB;
	const int lender = n_gpus >= 2 ? 1 : 0, warm = 5, steps = quick ? 20 : 60;
	const int n_sh = (int)(sizeof bench_share_pct / sizeof bench_share_pct[0]);
	struct ema_config *cfg = calloc(1, sizeof *cfg);
	uint64_t pool[EMA_MAX_GPUS] = { 2112, 2048 };
	int32_t *local = malloc(BENCH_PATH_PAGES * sizeof *local);
	int32_t *remote = malloc(BENCH_PATH_PAGES * sizeof *remote);
	uint64_t *tags = malloc(BENCH_PATH_PAGES * sizeof *tags);
	int32_t staging[64];
	struct ema_platform *p = NULL;
	double all_local = 0;
	bool have_flag = true;
	int rc = 0;

	if (cfg == NULL || local == NULL || remote == NULL || tags == NULL) {
		rc = ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
		goto out;
	}
	snprintf(cfg->name, sizeof cfg->name, "bench-hw-paths");
	cfg->hw.n_gpus = n_gpus >= 2 ? 2 : 1;
	cfg->n_tenants = n_gpus >= 2 ? 2 : 1;
	if (n_gpus >= 2)
		cfg->tenants[1].gpu = 1;
	/* GPU 0: weights read from pages 0..1023, local KV 1024..1535,
	 * staging 2048..2111; the lent pages on GPU 1 (or GPU 0's 1536..) */
	for (int i = 0; i < BENCH_PATH_PAGES; i++) {
		local[i] = 1024 + i;
		/* every other page of GPU 1; with one GPU, GPU 0's 1536.. */
		remote[i] = lender == 1 ? 2 * i : 1536 + i;
		tags[i] = 0xbe4c0000u + (uint64_t)i;
	}
	for (int i = 0; i < 64; i++)
		staging[i] = 2048 + i;
	{
		struct ema_platform_params pp;

		ema_hw_params_for_pools(&pp, cfg, pb, pool);
		rc = ema_hw_platform_create(&p, &pp, NULL, err);
	}
	if (rc != 0)
		goto out;
	rc = p->ops->tag_pages(p, lender, BENCH_PATH_PAGES, remote, tags, err);
	if (rc != 0)
		goto out;
	printf("\nstep time against remote share, by path (GPU 0; lender: %s; 2 GiB weights + "
	       "%d KV pages of 2 MiB, 64 sequences; median of %d steps, ms)\n",
	       lender == 1 ? "GPU 1 over NVLink" : "GPU 0's own pages, its work on a second stream",
	       BENCH_PATH_PAGES, steps);
	printf("%8s %6s %10s %10s %14s %14s %10s\n", "remote %", "pages", "in place", "staged",
	       "compute/event", "compute/flag", "all local");
	for (int sh = 0; sh < n_sh && rc == 0; sh++) {
		int n_r = BENCH_PATH_PAGES * bench_share_pct[sh] / 100;
		double med[4] = { 0, 0, 0, 0 };

		for (int path = 0; path < 4 && rc == 0; path++) {
			struct bench_chain c;
			static const char *const pname[4] = { "inplace", "staged", "compute", "compute" };
			static const char *const sync[4] = { "-", "-", "event", "flag" };

			if (n_r == 0 && path > 0)
				break;  /* all local: one variant */
			if (path >= 2) {
				rc = ema_hw_set_attention_sync(p, path == 3, err);
				if (rc == EMA_ERR_UNSUPPORTED && path == 3) {
					have_flag = false;
					rc = 0;
					continue;
				}
				if (rc != 0)
					break;
			}
			memset(&c, 0, sizeof c);
			c.p = p;
			c.left = warm + steps;
			c.it.gpu = 0;
			c.it.n_seqs = 64;
			c.it.decode_tokens = 64;
			c.it.weight_bytes = 2048 * BENCH_MIB;
			c.it.n_local_pages = BENCH_PATH_PAGES - n_r;
			c.it.local_pages = local;
			c.it.kv_local_bytes = (uint64_t)(BENCH_PATH_PAGES - n_r) * pb;
			c.it.layer_groups = 8;
			c.it.model_layers = 32;
			c.it.method = EMA_COPY_GATHER;
			if (n_r > 0) {
				c.it.n_remote = 1;
				c.it.remote[0].gpu = lender;
				c.it.remote[0].n_pages = n_r;
				c.it.remote[0].pages = remote;
				c.it.remote[0].bytes = (uint64_t)n_r * pb;
				c.it.remote[0].compute = path >= 2;
				/* queries out, partials back: 64 tokens x 32 layers x 32 heads */
				c.it.remote[0].exchange_bytes = 64ull * 32 * 32 * (128 * 6 + 4);
			}
			if (path == 1) {
				c.it.prefetch_depth = 1;
				c.it.staging_pages = staging;
				c.it.n_staging_pages = 64;
			}
			c.it.window_depth = ema_iteration_window_depth(&c.it, pb);
			rc = p->ops->iteration(p, &c.it, bench_step_done, &c, NULL);
			if (rc == 0)
				rc = p->ops->run(p, 0, err);
			if (rc == 0 && c.rc != 0)
				rc = c.rc;
			if (rc != 0) {
				rc = ema_error_set(err, rc, "%s steps at %d%%: %s", pname[path],
						   bench_share_pct[sh], ema_hw_last_error(p));
				break;
			}
			{
				int n = c.n_steps - warm;
				double *v = c.steps_us + warm;

				qsort(v, (size_t)n, sizeof *v, bench_cmp);
				med[path] = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
				if (csv != NULL)
					for (int i = 0; i < n; i++)
						fprintf(csv, "paths,%s_%d%%,%s,%llu,%d,%.3f,%.3f\n",
							n_r == 0 ? "all_local" : pname[path],
							bench_share_pct[sh], sync[path],
							(unsigned long long)pb, n_r, v[i],
							(double)c.remote / (double)(n + warm));
			}
			if (n_r == 0)
				all_local = med[0];
		}
		if (rc != 0)
			break;
		if (n_r == 0) {
			printf("%8d %6d %10s %10s %14s %14s %10.3f\n", 0, 0, "-", "-", "-", "-",
			       all_local / 1e3);
		} else {
			char fl[32];

			snprintf(fl, sizeof fl, have_flag ? "%.3f" : "-", med[3] / 1e3);
			printf("%8d %6d %10.3f %10.3f %14.3f %14s %10.3f\n", bench_share_pct[sh], n_r,
			       med[0] / 1e3, med[1] / 1e3, med[2] / 1e3, fl, all_local / 1e3);
		}
	}
	if (rc == 0) {
		uint64_t checked = 0, bad = 0;

		ema_hw_attention_integrity(p, &checked, &bad);
		printf("compute path: %llu attention outputs checked after the steps, %llu wrong\n",
		       (unsigned long long)checked, (unsigned long long)bad);
	}
out:
	if (p != NULL)
		p->ops->destroy(p);
	free(cfg);
	free(local);
	free(remote);
	free(tags);
	return rc;
}

int ema_hw_bench(const struct ema_hw_bench_opts *o, FILE *csv, struct ema_error *err)
{
	char why[EMA_ERROR_MSG_MAX];
	int n, rc;

	n = ema_hw_gpu_count(err);
	if (n < 0) {
		snprintf(why, sizeof why, "%s", err->msg);
		return ema_error_set(err, EMA_ERR_UNSUPPORTED, "bench --hw: not supported here: %.900s",
				     why);
	}
	if (n < 1)
		return ema_error_set(err, EMA_ERR_UNSUPPORTED, "bench --hw: not supported here: no GPU");
	if (csv != NULL)
		/* time_us: per move (transfer), whole chain (loop), one read
		 * (inplace) or one step (paths); value: GB/s, GPU us, the
		 * model's us (inplace, whose method column names the lender and
		 * count the remote bytes), or the bytes a step moved over links
		 * (paths: variant PATH_SHARE%, method the way of waiting, count
		 * the remote pages) */
		fprintf(csv, "bench,variant,method,page_bytes,count,time_us,value\n");
	if (n < 2) {
		/* one GPU: moves and the loop need a peer; in place can read
		 * host memory instead */
		fprintf(stderr, "ema bench --hw: one GPU: the in-place read against remote "
			"share with pinned host memory as the lender, and the three paths "
			"with GPU 0's own pages as the lender's\n");
		rc = bench_inplace(o->quick, csv, n, err);
		if (rc == 0)
			rc = bench_paths(o->quick, csv, n, err);
	} else {
		rc = bench_transfers(o->quick, csv, err);
		if (rc == 0)
			rc = bench_loop(o->quick, csv, err);
		if (rc == 0)
			rc = bench_inplace(o->quick, csv, n, err);
		if (rc == 0)
			rc = bench_paths(o->quick, csv, n, err);
	}
	if (rc != 0) {
		snprintf(why, sizeof why, "%s", err->msg);
		return ema_error_set(err, rc, "bench --hw: %.900s", why);
	}
	return 0;
}
