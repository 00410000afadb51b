/* bench.c: the figures of `ema bench --hw`, the backend's speed through the
 * platform interface itself, as the serving model sees them: prefetch and
 * reclaim bandwidth by page size and copy method against the 395 GB/s
 * NVLink peak (target: 90% or more for pages of 64 KiB and up with the
 * gather kernel), and the host loop's overhead between iterations. */
#include "hw.h"
#include "hw_cuda.h"

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
struct bench_chain {
	struct ema_platform *p;
	struct ema_iteration it;
	int left;
	int64_t gpu_ns;
	int64_t stall_ns;
	uint64_t remote;
	int rc;
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
	if (n < 2)
		return ema_error_set(err, EMA_ERR_UNSUPPORTED,
				     "bench --hw: not supported here: needs two GPUs");
	if (csv != NULL)
		/* time_us: per move (transfer) or whole chain (loop); value: GB/s or GPU us */
		fprintf(csv, "bench,variant,method,page_bytes,count,time_us,value\n");
	rc = bench_transfers(o->quick, csv, err);
	if (rc == 0)
		rc = bench_loop(o->quick, csv, err);
	if (rc != 0) {
		snprintf(why, sizeof why, "%s", err->msg);
		return ema_error_set(err, rc, "bench --hw: %.900s", why);
	}
	return 0;
}
