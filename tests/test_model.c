/* test_model.c: the worked examples of doc/model.md and doc/policies.md,
 * each computed here from the shipped profiles and models and checked
 * against the figure the documentation prints, and, where the program
 * shows it (a run's borrowed_peak_gib), against what the program does.
 * A doc example names the test that pins it; when a formula or a profile
 * changes, the example fails here instead of drifting in the prose. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "engine_priv.h"
#include "experiment.h"
#include "sim.h"
#include "flownet.h"
#include "lending.h"
#include "policy.h"
#include "step_cost.h"
#include "timing.h"
#include "work.h"
#include "test_main.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
#define MIB (1024.0 * 1024.0)

/* Loads the embedded default scenario (doc/configuration.md) with
 * overrides; NULL after a CUnit failure. */
/* The worked examples are those of h200x2 at 24 GiB (the default scenario
 * until 2026-12-04, capped at 19 GiB since): each test's own --set
 * values come after that one and may change it. */
static struct ema_experiment *load(const char *const *sets, int n)
{
	struct ema_experiment *x = calloc(1, sizeof *x);
	struct ema_error err = { 0 };
	const char *all[64] = { "gpu_mem_cap_gib=24" };
	int rc;

	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	CU_ASSERT_FATAL(n < 63);
	for (int i = 0; i < n; i++)
		all[i + 1] = sets[i];
	rc = ema_config_load(&x->cfg, NULL, all, n + 1, &err);
	if (rc != EMA_OK)
		fprintf(stderr, "config: %s\n", err.msg);
	CU_ASSERT_EQUAL(rc, EMA_OK);
	if (rc != EMA_OK) {
		free(x);
		return NULL;
	}
	x->quiet = true;
	return x;
}

static struct ema_experiment *run(const char *const *sets, int n)
{
	struct ema_experiment *x = load(sets, n);
	struct ema_error err = { 0 };
	int rc;

	if (x == NULL)
		return NULL;
	rc = ema_experiment_run(x, &err);
	if (rc != EMA_OK)
		fprintf(stderr, "run: %s\n", err.msg);
	CU_ASSERT_EQUAL(rc, EMA_OK);
	if (rc != EMA_OK) {
		ema_experiment_free(x);
		free(x);
		return NULL;
	}
	return x;
}

static void done(struct ema_experiment *x)
{
	ema_experiment_free(x);
	free(x);
}

static const struct ema_tenant_result *row(const struct ema_experiment *x, const char *policy,
					   const char *tenant)
{
	for (int i = 0; i < x->n_runs; i++)
		for (int t = 0; t < x->cfg.n_tenants; t++)
			if (strcmp(x->runs[i].results[t].policy, policy) == 0 &&
			    strcmp(x->runs[i].results[t].tenant, tenant) == 0)
				return &x->runs[i].results[t];
	return NULL;
}

static double page_bytes(const struct ema_config *c)
{
	return c->page_mib * MIB;
}

/* KV pages of one GPU: the pages of gpu_mem_cap_gib less the weights'
 * (whole pages), as doc/configuration.md computes them by hand. */
static int32_t kv_pages(const struct ema_config *c)
{
	double mem = (c->gpu_mem_cap_gib > 0 ? c->gpu_mem_cap_gib : c->hw.gpu_mem_gib) * GIB;
	double w = (double)ema_model_weight_bytes(&c->model);

	return (int32_t)floor(mem / page_bytes(c)) - (int32_t)ceil(w / page_bytes(c));
}

/* doc/configuration.md: with gpu_mem_cap_gib 24 and 16.1 GB of weights,
 * each GPU has 4629 KV pages of 2 MiB (9.04 GiB); the engine agrees. */
static void test_default_kv_pages(void)
{
	static const char *sets[] = {
		"policies=static", "tenants.0.workload.duration_s=1", "tenants.1.workload.duration_s=1",
	};
	struct ema_experiment *x = run(sets, 3);

	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	CU_ASSERT_DOUBLE_EQUAL((double)ema_model_weight_bytes(&x->cfg.model) / 1e9, 16.1, 0.05);
	CU_ASSERT_EQUAL(kv_pages(&x->cfg), 4629);
	CU_ASSERT_DOUBLE_EQUAL(4629 * page_bytes(&x->cfg) / GIB, 9.04, 0.005);
	for (int t = 0; t < 2; t++)
		CU_ASSERT_EQUAL(ema_engine_kv_capacity(x->runs[0].engine, t), 4629);
	done(x);
}

/* doc/configuration.md, "Models": weights = params x bytes_per_param /
 * TP, KV bytes per token = 2 x layers x kv_heads x head_dim x
 * bytes_per_param / TP, for every embedded model. */
static void test_model_sizes(void)
{
	static const struct { const char *name; double weights_gb; double kv_kib; } want[] = {
		{ "llama-2-7b", 13.5, 512 }, { "llama-2-13b", 26.0, 800 },
		{ "llama-2-70b", 138.0, 320 }, { "llama-3-8b", 16.1, 128 },
		{ "llama-3-70b", 141.2, 320 }, { "opt-13b", 25.8, 800 },
		{ "opt-30b", 60.0, 1344 },
	};
	const char *const *names;
	int n = ema_model_names(&names);

	CU_ASSERT_EQUAL(n, (int)(sizeof want / sizeof want[0]));
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		struct ema_model m;
		struct ema_error err = { 0 };
		double kv_hand;

		CU_ASSERT_EQUAL_FATAL(ema_model_load(&m, want[i].name, &err), EMA_OK);
		kv_hand = 2.0 * m.layers * m.kv_heads * m.head_dim * m.bytes_per_param /
			  m.tensor_parallel;
		CU_ASSERT_DOUBLE_EQUAL((double)ema_model_kv_bytes_per_token(&m), kv_hand, 0.5);
		CU_ASSERT_DOUBLE_EQUAL(kv_hand / 1024, want[i].kv_kib, 1e-9);
		CU_ASSERT_DOUBLE_EQUAL((double)ema_model_weight_bytes(&m) / 1e9, want[i].weights_gb, 0.05);
		CU_ASSERT_DOUBLE_EQUAL((double)ema_model_weight_bytes(&m),
				       m.params_b * 1e9 * m.bytes_per_param / m.tensor_parallel, 1);
	}
}

/* doc/model.md "Cost model": llama-3-8b on h200x2, a decode batch of 32
 * requests at context 1024: memory (16.06 GB + 4.29 GB + 0.09 GB) /
 * (4357 x 0.70 GB/s) = 6.70 ms, compute 0.53 TFLOP / (878 x 0.65) =
 * 0.93 ms, total 0.03 + 6.70 = 6.73 ms; 1 GiB of KV read in place from the
 * peer 2.87 ms (1.074 GB / 373.9 GB/s), locally 0.35 ms. */
static void test_cost_model_decode_batch(void)
{
	struct ema_experiment *x = load(NULL, 0);
	struct ema_iteration it, one;
	struct ema_timing c;
	uint64_t kv = 0, kv_all = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	memset(&it, 0, sizeof it);
	it.weight_bytes = ema_model_weight_bytes(&x->cfg.model);
	for (int i = 0; i < 32; i++) {
		ema_work_add_request(&it, &x->cfg.model, 1024, 0, &kv);
		kv_all += kv;
	}
	it.kv_local_bytes = kv_all;
	it.layer_groups = 1;
	CU_ASSERT_DOUBLE_EQUAL(it.weight_bytes / 1e9, 16.06, 0.005);
	CU_ASSERT_DOUBLE_EQUAL(it.kv_local_bytes / 1e9, 4.29, 0.005);
	CU_ASSERT_DOUBLE_EQUAL(it.act_bytes / 1e9, 0.09, 0.005);
	CU_ASSERT_DOUBLE_EQUAL(it.flops / 1e12, 0.53, 0.005);
	ema_timing_iteration(&x->cfg.hw, &x->cfg.model, &it, &c);
	CU_ASSERT_DOUBLE_EQUAL(c.memory_ns / 1e6, 6.70, 0.005);
	CU_ASSERT_DOUBLE_EQUAL(c.compute_ns / 1e6, 0.93, 0.005);
	CU_ASSERT_DOUBLE_EQUAL(c.overhead_ns / 1e6, 0.03, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(c.total_ns / 1e6, 6.73, 0.005);
	CU_ASSERT(c.memory_ns > c.compute_ns);

	/* 1 GiB of KV: in place over the link (prefetch_depth 0), or local */
	memset(&one, 0, sizeof one);
	one.layer_groups = 1;
	one.n_remote = 1;
	one.remote[0].gpu = 1;
	one.remote[0].bytes = 1ull << 30;
	ema_timing_iteration(&x->cfg.hw, &x->cfg.model, &one, &c);
	CU_ASSERT_DOUBLE_EQUAL(c.remote_inplace_ns / 1e6, 4.10, 0.005);
	memset(&one, 0, sizeof one);
	one.layer_groups = 1;
	one.kv_local_bytes = 1ull << 30;
	ema_timing_iteration(&x->cfg.hw, &x->cfg.model, &one, &c);
	CU_ASSERT_DOUBLE_EQUAL(c.memory_ns / 1e6, 0.35, 0.005);
	done(x);
}

/* doc/model.md "Remote attention": the decode batch of 32 at context
 * 1024 with 1 GiB of its KV on an idle lender that computes its
 * attention, at the figures a profile without attention_* gets (the
 * h200x2 profiles carry those measured: last lines). The lender reads 1.074 GB at 4357 x 0.70 = 3050 GB/s in
 * 0.352 ms, 32 layers x 5 us of round trips = 0.160 ms, the exchange
 * (32 tokens x 32 layers x 32 heads x (128 x (2 + 4) + 4) B = 25.3 MB)
 * 0.063 ms over the link, hidden under the reads: attention 0.512 ms,
 * under the 6.35 ms of local reads; the step 0.03 + 6.35 = 6.38 ms. With
 * the lender busy the kernel keeps half its rate: 0.160 + 0.704 = 0.864
 * ms. With 10 GiB there, in place is link-bound at 41 ms; the attention
 * (3.68 ms) still hides. */
static void test_remote_attention_by_hand(void)
{
	static const char *const unmeasured[] = {
		"hardware.attention_gbps=0", "hardware.attention_busy_share=0",
		"hardware.attention_lender_ms_per_gb=0", "hardware.attention_sync_us=0",
	};
	struct ema_experiment *x = load(unmeasured, 4);
	struct ema_iteration it;
	struct ema_step_cost c, in;
	uint64_t kv = 0, kv_all = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	memset(&it, 0, sizeof it);
	it.weight_bytes = ema_model_weight_bytes(&x->cfg.model);
	for (int i = 0; i < 32; i++) {
		ema_work_add_request(&it, &x->cfg.model, 1024, 0, &kv);
		kv_all += kv;
	}
	it.kv_local_bytes = kv_all - (1ull << 30);
	it.model_layers = x->cfg.model.layers;
	it.n_remote = 1;
	it.remote[0].gpu = 1;
	it.remote[0].bytes = 1ull << 30;
	it.remote[0].compute = true;
	it.remote[0].exchange_bytes = 32ull * 32 * 32 * (128 * (2 + 4) + 4);
	CU_ASSERT_DOUBLE_EQUAL(it.remote[0].exchange_bytes / 1e6, 25.3, 0.05);
	CU_ASSERT_DOUBLE_EQUAL(ema_cost_attention_gbps(&x->cfg.hw, false), 3050.2, 0.05);
	CU_ASSERT_DOUBLE_EQUAL(ema_cost_attention_sync_ns(&x->cfg.hw), 5000, 1e-9);
	ema_step_cost(&x->cfg.hw, &it, false, &c);
	CU_ASSERT_DOUBLE_EQUAL(c.attention_ns / 1e6, 0.512, 0.0005);
	CU_ASSERT_DOUBLE_EQUAL(c.link_ns, 0, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(c.local_ns / 1e6, 6.35, 0.005);
	CU_ASSERT_DOUBLE_EQUAL(c.total_ns / 1e6, 6.38, 0.005);
	it.remote[0].lender_busy = true;
	CU_ASSERT_DOUBLE_EQUAL(ema_cost_attention_ns(&x->cfg.hw, &it) / 1e6, 0.864, 0.0005);
	/* 10 GiB on the lender: in place link-bound, the attention hidden */
	it.remote[0].lender_busy = false;
	it.remote[0].bytes = 10ull << 30;
	ema_step_cost(&x->cfg.hw, &it, false, &c);
	CU_ASSERT_DOUBLE_EQUAL(c.attention_ns / 1e6, 3.68, 0.005);
	CU_ASSERT_DOUBLE_EQUAL(c.total_ns / 1e6, 6.38, 0.005);
	it.remote[0].compute = false;
	ema_step_cost(&x->cfg.hw, &it, false, &in);
	CU_ASSERT_DOUBLE_EQUAL(in.link_ns / 1e6, 41.0, 0.1);
	CU_ASSERT(in.total_ns > 6 * c.total_ns);
	done(x);
	/* measured (one H200): 1.074 GB at 1476.3 GB/s = 0.727 ms, 32 x
	 * 16.07 us = 0.514 ms: 1.242 ms, still under the local reads */
	x = load(NULL, 0);
	it.remote[0].bytes = 1ull << 30;
	it.remote[0].compute = true;
	CU_ASSERT_DOUBLE_EQUAL(ema_cost_attention_gbps(&x->cfg.hw, false), 1476.3, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(ema_cost_attention_sync_ns(&x->cfg.hw), 16070, 1e-6);
	ema_step_cost(&x->cfg.hw, &it, false, &c);
	CU_ASSERT_DOUBLE_EQUAL(c.attention_ns / 1e6, 1.242, 0.0005);
	CU_ASSERT_DOUBLE_EQUAL(c.total_ns / 1e6, 6.38, 0.005);
	done(x);
}

/* doc/model.md "Remote reads": the batch above with 1 GiB of its KV on
 * the peer. Local: 20.44 - 1.07 = 19.37 GB = 6.35 ms; link 1.07 GB /
 * (373.9 x 0.70 GB/s) = 4.10 ms. In place: max(6.35, 4.10) / 0.981 = 6.47 ms, less than the 6.70 ms of all
 * local (the link adds bandwidth beside HBM). Staged: all 20.44 GB from
 * HBM, 6.70 ms, slowed by its own writes: 1.07 GB / 6.70 ms = 160 GB/s,
 * x (1 + 2.79 x 160 / 4357) = 7.39 ms. Plus 0.03 ms of overhead each. */
static void test_cost_model_remote_paths(void)
{
	struct ema_experiment *x = load(NULL, 0);
	struct ema_iteration it;
	struct ema_step_cost in, st;
	uint64_t kv = 0, kv_all = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	memset(&it, 0, sizeof it);
	it.weight_bytes = ema_model_weight_bytes(&x->cfg.model);
	for (int i = 0; i < 32; i++) {
		ema_work_add_request(&it, &x->cfg.model, 1024, 0, &kv);
		kv_all += kv;
	}
	it.kv_local_bytes = kv_all - (1ull << 30);
	it.n_remote = 1;
	it.remote[0].gpu = 1;
	it.remote[0].bytes = 1ull << 30;
	it.method = EMA_COPY_GATHER;
	ema_step_cost(&x->cfg.hw, &it, false, &in);
	ema_step_cost(&x->cfg.hw, &it, true, &st);
	CU_ASSERT_DOUBLE_EQUAL(in.local_ns / 1e6, 6.35, 0.005);
	CU_ASSERT_DOUBLE_EQUAL(in.link_ns / 1e6, 4.10, 0.005);
	CU_ASSERT_DOUBLE_EQUAL(in.memory_ns / 1e6, 6.47, 0.005);
	CU_ASSERT_DOUBLE_EQUAL(in.total_ns / 1e6, 6.50, 0.005);
	CU_ASSERT_DOUBLE_EQUAL(st.local_ns / 1e6, 6.70, 0.005);
	CU_ASSERT_DOUBLE_EQUAL(st.memory_ns / 1e6, 7.39, 0.005);
	CU_ASSERT_DOUBLE_EQUAL(st.total_ns / 1e6, 7.42, 0.005);
	done(x);
}

/* ema costs every iteration in place with ema_step_cost_inplace_ns,
 * which must give ema_step_cost's total to the last bit, or ema would
 * plan with other figures than it did: a decode batch (memory-bound), a
 * long prefill (compute-bound), no work at all, and the batch with KV on
 * one and on three peers, on a direct (h200x2) and a switch (h200x8)
 * topology. */
static void test_cost_model_inplace_total(void)
{
	static const char *sets8[] = { "hardware=h200x8" };

	for (int k = 0; k < 2; k++) {
		struct ema_experiment *x = load(k == 0 ? NULL : sets8, k);
		uint64_t kv = 0, kv_all = 0;

		CU_ASSERT_PTR_NOT_NULL_FATAL(x);
		for (int c = 0; c < 6; c++) {
			struct ema_iteration it;
			struct ema_step_cost sc;

			memset(&it, 0, sizeof it);
			it.weight_bytes = ema_model_weight_bytes(&x->cfg.model);
			kv_all = 0;
			for (int i = 0; c != 2 && i < 32; i++) {
				ema_work_add_request(&it, &x->cfg.model, 1024, c == 1 ? 4096 : 0, &kv);
				kv_all += kv;
			}
			it.kv_local_bytes = kv_all;
			if (c == 2)
				it.weight_bytes = 0;
			for (int g = 1; c >= 3 && g <= (c == 3 ? 1 : 3); g++) {
				it.remote[it.n_remote].gpu = g;
				it.remote[it.n_remote].bytes = (uint64_t)g << 28;
				it.kv_local_bytes -= (uint64_t)g << 28;
				it.n_remote++;
			}
			if (c == 5)
				it.method = EMA_COPY_BATCH;
			ema_step_cost(&x->cfg.hw, &it, false, &sc);
			CU_ASSERT(ema_step_cost_inplace_ns(&x->cfg.hw, &it) == sc.total_ns);
			CU_ASSERT(sc.total_ns > 0);
			/* the cases cover both sides of the roofline and the link */
			if (c == 0)
				CU_ASSERT(sc.memory_ns > sc.compute_ns);
			if (c == 1)
				CU_ASSERT(sc.compute_ns > sc.memory_ns);
			CU_ASSERT_EQUAL(sc.link_ns > 0, c >= 3);
		}
		done(x);
	}
}

/* ema_cost_surely_memory_bound, the simulator's and ema's shortcut past
 * the FLOPs' division: wherever it says so, the division's result is
 * below the local time (so that the maximum is the local time, the same
 * double), over random profiles and FLOPs on both sides of the roofline
 * and at a few ULPs from it; far below it, it says so; it never does for
 * negative or NaN FLOPs or without a FLOP rate; and
 * ema_step_cost_inplace_ns stays ema_step_cost's total throughout. */
static void test_cost_model_memory_bound_shortcut(void)
{
	struct ema_hw_profile hw;
	unsigned seed = 12345;
	int surely = 0, near = 0;

	memset(&hw, 0, sizeof hw);
	for (int i = 0; i < 200000; i++) {
		struct ema_iteration it;
		struct ema_step_cost sc;
		double fpn, local, x;
		int ulps;

		seed = seed * 1103515245u + 12345u;
		hw.peak_tflops = 50 + (seed >> 8) % 2000;
		hw.flops_efficiency = 0.3 + (double)((seed >> 4) % 700) / 1000;
		hw.hbm_read_gbps = 500 + (seed >> 12) % 5000;
		hw.hbm_efficiency = 0.5 + (double)((seed >> 2) % 500) / 1000;
		hw.iter_overhead_us = (double)((seed >> 6) % 40);
		memset(&it, 0, sizeof it);
		seed = seed * 1103515245u + 12345u;
		it.weight_bytes = (uint64_t)((seed >> 4) % 100000) << 16;
		it.kv_local_bytes = (uint64_t)((seed >> 9) % 100000) << 14;
		it.act_bytes = (seed >> 3) % 100000;
		fpn = hw.peak_tflops * 1e3 * hw.flops_efficiency;
		local = ema_cost_local_ns(&hw, &it);
		/* FLOPs whose time is local's, moved by -8..+8 ULPs, or by a
		 * random factor of 0.5 .. 1.5 */
		x = local * fpn;
		ulps = (int)((seed >> 20) % 17) - 8;
		if (i % 2 == 0) {
			for (; ulps < 0; ulps++)
				x = nextafter(x, 0);
			for (; ulps > 0; ulps--)
				x = nextafter(x, INFINITY);
			near++;
		} else {
			x *= 0.5 + (double)((seed >> 5) % 1000) / 1000;
		}
		it.flops = x;
		if (ema_cost_surely_memory_bound(&hw, it.flops, local)) {
			surely++;
			CU_ASSERT(it.flops / fpn < local);
		}
		ema_step_cost(&hw, &it, false, &sc);
		CU_ASSERT(ema_step_cost_inplace_ns(&hw, &it) == sc.total_ns);
		CU_ASSERT(ema_cost_local_ns(&hw, &it) == sc.local_ns);
		/* far below the roofline: decided without the division */
		it.flops = local * fpn * 0.9;
		CU_ASSERT(ema_cost_surely_memory_bound(&hw, it.flops, local));
	}
	CU_ASSERT(surely > 50000 && near == 100000);
	CU_ASSERT_FALSE(ema_cost_surely_memory_bound(&hw, -1.0, 1.0));
	CU_ASSERT_FALSE(ema_cost_surely_memory_bound(&hw, NAN, 1.0));
	hw.peak_tflops = 0;
	CU_ASSERT_FALSE(ema_cost_surely_memory_bound(&hw, 0.0, 1.0));
}

/* ema_step_cost_staged_floor_ns, ema's test for "in place wins" without
 * the staged cost: over random profiles (both topologies, every copy
 * method, interference from 0 up) and iterations with KV on up to 7
 * peers, never above the staged total, to the last bit; by hand on the
 * shipped h200x8 (no overhead: 0 + bytes / rate); -inf where it cannot
 * tell; and it decides a borrower reading 5% of its bytes remotely,
 * ema's common case under the link budgets, for in place. */
static void test_cost_model_staged_floor(void)
{
	struct ema_hw_profile hw;
	struct ema_error err = { 0 };
	unsigned seed = 777;
	int decided = 0;

	for (int i = 0; i < 100000; i++) {
		struct ema_iteration it;
		struct ema_step_cost st;
		double floor_ns;

		memset(&hw, 0, sizeof hw);
		seed = seed * 1103515245u + 12345u;
		hw.n_gpus = 8;
		hw.topology = (seed >> 3) % 2 ? EMA_TOPO_SWITCH : EMA_TOPO_DIRECT;
		hw.peak_tflops = 50 + (seed >> 8) % 2000;
		hw.flops_efficiency = 0.3 + (double)((seed >> 4) % 700) / 1000;
		hw.hbm_read_gbps = 500 + (seed >> 12) % 5000;
		hw.hbm_efficiency = 0.5 + (double)((seed >> 2) % 500) / 1000;
		hw.iter_overhead_us = (double)((seed >> 6) % 40);
		hw.link_gbps = 50 + (seed >> 14) % 500;
		hw.gather_gbps = (seed >> 9) % 3 ? hw.link_gbps * 0.8 : 0;
		hw.pull_share_under_load = (seed >> 11) % 2 ? 0.7 : 0;
		hw.interference_borrower = (double)((seed >> 5) % 400) / 100;
		memset(&it, 0, sizeof it);
		seed = seed * 1103515245u + 12345u;
		it.weight_bytes = (uint64_t)((seed >> 4) % 100000) << 16;
		it.kv_local_bytes = (uint64_t)((seed >> 9) % 100000) << 14;
		it.act_bytes = (seed >> 3) % 100000;
		it.flops = (double)((seed >> 7) % 1000) * 1e9;
		it.method = (enum ema_copy_method)((seed >> 2) % 3);
		it.n_remote = (int)((seed >> 17) % 8);
		for (int r = 0; r < it.n_remote; r++) {
			seed = seed * 1103515245u + 12345u;
			it.remote[r].gpu = 1 + r;
			it.remote[r].bytes = (uint64_t)((seed >> 6) % 100000) << 13;
		}
		ema_step_cost(&hw, &it, true, &st);
		floor_ns = ema_step_cost_staged_floor_ns(&hw, &it);
		CU_ASSERT(floor_ns <= st.total_ns);
		if (floor_ns >= ema_step_cost_inplace_ns(&hw, &it))
			decided++;
	}
	CU_ASSERT(decided > 1000);
	hw.interference_borrower = -1;
	CU_ASSERT(ema_step_cost_staged_floor_ns(&hw, &(struct ema_iteration){ 0 }) == -INFINITY);
	hw.interference_borrower = 1;
	hw.hbm_read_gbps = 0;
	CU_ASSERT(ema_step_cost_staged_floor_ns(&hw, &(struct ema_iteration){ 0 }) == -INFINITY);

	CU_ASSERT_EQUAL_FATAL(ema_hw_profile_load(&hw, "h200x8", &err), EMA_OK);
	{
		struct ema_iteration it;

		memset(&it, 0, sizeof it);
		it.weight_bytes = 16ull << 30;
		it.kv_local_bytes = 4ull << 30;
		it.n_remote = 2;
		it.remote[0].gpu = 2;
		it.remote[0].bytes = 512ull << 20;
		it.remote[1].gpu = 5;
		it.remote[1].bytes = 512ull << 20;
		CU_ASSERT_DOUBLE_EQUAL(ema_step_cost_staged_floor_ns(&hw, &it),
				       hw.iter_overhead_us * 1e3 +
				       (double)(21ull << 30) / (hw.hbm_read_gbps * hw.hbm_efficiency),
				       1e-6);
		CU_ASSERT(ema_step_cost_staged_floor_ns(&hw, &it) >= ema_step_cost_inplace_ns(&hw, &it));
	}
}

/* doc/reference-figures.md "Remote reads beside local reads" (H200 x2,
 * 2026-12-01), reproduced by the cost model with h200x2_hw (ema's own
 * kernels: hbm_efficiency 1, 7.8 us overhead), within 5%: a step
 * streaming 4 GiB of local HBM, 0.952 ms measured; with 280 MiB more read
 * in place from the peer, 0.970 ms (hidden behind the local reads);
 * with 560 MiB, 1.600 ms (link-bound). */
static void test_inplace_measurements(void)
{
	static const struct { double remote_mib, ms; } m[] = {
		{ 0, 0.952 }, { 280, 0.970 }, { 560, 1.600 },
	};
	struct ema_hw_profile hw;
	struct ema_error err = { 0 };

	CU_ASSERT_EQUAL_FATAL(ema_hw_profile_load(&hw, "h200x2_hw", &err), EMA_OK);
	for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
		struct ema_iteration it;
		struct ema_timing c;

		memset(&it, 0, sizeof it);
		it.kv_local_bytes = 4ull << 30;
		it.n_remote = m[i].remote_mib > 0;
		it.remote[0].gpu = 1;
		it.remote[0].bytes = (uint64_t)(m[i].remote_mib * MIB);
		ema_timing_iteration(&hw, NULL, &it, &c);
		CU_ASSERT_DOUBLE_EQUAL(c.total_ns / 1e6 / m[i].ms, 1.0, 0.05);
	}
}

/* The serving model sums an iteration's work as requests join its batch
 * (serve/work.h, ema_work_add): for every shipped model and random
 * batches of decodes and prefill chunks, the sums are those of the cost
 * model's functions added request by request, to the last bit. */
static void test_cost_model_sums(void)
{
	static const char *const models[] = {
		"llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b", "llama-3-70b",
		"opt-13b", "opt-30b",
	};
	uint64_t s = 0x9e3779b97f4a7c15ULL;

	for (size_t mi = 0; mi < sizeof models / sizeof models[0]; mi++) {
		char set[64];
		/* a profile with room for the largest model's weights */
		const char *sets[] = { "hardware=h200x8", "gpu_mem_cap_gib=0", set };
		struct ema_experiment *x;
		const struct ema_model *m;
		struct ema_work_model w;

		snprintf(set, sizeof set, "model=%s", models[mi]);
		x = load(sets, 3);
		CU_ASSERT_PTR_NOT_NULL_FATAL(x);
		m = &x->cfg.model;
		ema_work_model_init(&w, m);
		for (int b = 0; b < 200; b++) {
			struct ema_work_sum sum = { 0 };
			double flops = 0, attn = 0;
			uint64_t act = 0, kv_ref = 0, kv_sum = 0;
			int n = 1 + (int)(s % 256);

			for (int i = 0; i < n; i++) {
				int64_t ctx, chunk, tokens;
				uint64_t kv;

				s ^= s << 13, s ^= s >> 7, s ^= s << 17;
				ctx = (int64_t)(s % 20000);
				chunk = (s >> 20) % 4 == 0 ? 1 + (int64_t)((s >> 24) % 8192) : 0;
				tokens = chunk > 0 ? chunk : 1;
				flops += ema_work_linear_flops(m, tokens) +
					 ema_work_attention_flops(m, ctx, tokens);
				attn += ema_work_attention_flops(m, ctx, tokens);
				act += ema_work_act_bytes(m, tokens);
				kv_ref += (uint64_t)ctx * ema_model_kv_bytes_per_token(m);
				ema_work_add(&sum, &w, ctx, chunk, &kv);
				kv_sum += kv;
			}
			CU_ASSERT(memcmp(&sum.flops, &flops, sizeof flops) == 0);
			CU_ASSERT(memcmp(&sum.attention_flops, &attn, sizeof attn) == 0);
			CU_ASSERT_EQUAL(sum.act_bytes, act);
			CU_ASSERT_EQUAL(kv_sum, kv_ref);
			CU_ASSERT_EQUAL(sum.n_seqs, n);
		}
		done(x);
	}
}

static void ignore_done(void *arg, uint64_t id, uint64_t tag, int64_t now)
{
	(void)arg; (void)id; (void)tag; (void)now;
}

/* Time for one copy of `bytes` alone on the link, by the link model. */
static double alone_us(const struct ema_hw_profile *hw, double bytes)
{
	struct ema_flownet *net;
	struct ema_error err = { 0 };
	int64_t t, end = 0;

	CU_ASSERT_EQUAL_FATAL(ema_flownet_create(&net, hw, &err), EMA_OK);
	CU_ASSERT_EQUAL(ema_flownet_start(net, 0, 1, 0, (uint64_t)bytes, 1, EMA_COPY_PER_PAGE,
					  1, NULL, &err), EMA_OK);
	while ((t = ema_flownet_next_event_time(net)) != INT64_MAX) {
		CU_ASSERT_EQUAL_FATAL(ema_flownet_advance(net, t, ignore_done, NULL, &err), EMA_OK);
		end = t;
	}
	ema_flownet_destroy(net);
	return (double)end / 1e3;
}

/* doc/model.md "Link model": a single copy alone takes
 * max(copy_fixed_us, s / c(s)); the shipped h200x2 profile gives 15.6 us
 * and 156.5, 307.6, 364.8 and 395.0 GB/s at 4 MiB, 16 MiB, 64 MiB and
 * 1 GiB. */
static void test_link_model_single_copy(void)
{
	static const double mib[] = { 4, 16, 64, 1024 }, gbps[] = { 156.5, 307.6, 364.8, 395.0 };
	struct ema_hw_profile hw;
	struct ema_error err = { 0 };

	CU_ASSERT_EQUAL_FATAL(ema_hw_profile_load(&hw, "h200x2", &err), EMA_OK);
	CU_ASSERT_DOUBLE_EQUAL(hw.copy_fixed_us, 15.6, 0.05);
	CU_ASSERT_DOUBLE_EQUAL(alone_us(&hw, 4096), 15.6, 0.05);
	for (int i = 0; i < 4; i++) {
		double b = mib[i] * MIB;

		CU_ASSERT_DOUBLE_EQUAL(ema_curve_gbps(hw.copy_curve, hw.n_copy_curve, b), gbps[i], 0.05);
		CU_ASSERT_DOUBLE_EQUAL(b / (alone_us(&hw, b) * 1e3), gbps[i], 0.05);
	}
}

/* The staged rate of the copy engines follows the pieces they copy
 * (base/step_cost.c; doc/model.md "Remote reads"). h200x2: link 402.25
 * GB/s, pull share 0.9383; per_page costs hypot(6.651 us, s / c'(s))
 * with c'(64 KiB) = 3.730 GB/s (the curve's point), so 64 KiB pieces take
 * hypot(6.651, 17.568) = 18.785 us: 3.489 GB/s, 3.273 with the share;
 * batch 0.8265 us + 64 KiB / 402.25 GB/s = 0.9895 us: 66.23 GB/s. The
 * gather kernel and in-place reads do not depend on the piece, nor does
 * a piece of 0 (unknown). A staged step's pieces: 0.5 MiB pages of two
 * lenders in 8 groups are 64 KiB. */
static void test_link_rate_by_piece(void)
{
	struct ema_hw_profile hw;
	struct ema_error err = { 0 };
	struct ema_iteration it;
	double share, link;

	CU_ASSERT_EQUAL_FATAL(ema_hw_profile_load(&hw, "h200x2", &err), EMA_OK);
	share = hw.pull_share_under_load;
	link = hw.link_gbps;
	CU_ASSERT_DOUBLE_EQUAL(link, 402.25, 0.005);
	CU_ASSERT_DOUBLE_EQUAL(share, 0.9383, 0.00005);
	CU_ASSERT_DOUBLE_EQUAL(ema_cost_copy_page_ns(&hw, EMA_COPY_PER_PAGE, 65536, link, true),
			       18785, 1);
	CU_ASSERT_DOUBLE_EQUAL(ema_cost_copy_page_ns(&hw, EMA_COPY_BATCH, 65536, link, true), 989.4,
			       0.1);
	CU_ASSERT_EQUAL(ema_cost_copy_page_ns(&hw, EMA_COPY_GATHER, 65536, link, true), 0.0);
	CU_ASSERT_DOUBLE_EQUAL(ema_cost_link_gbps(&hw, true, EMA_COPY_PER_PAGE, 65536), 3.489 * share,
			       0.001);
	CU_ASSERT_DOUBLE_EQUAL(ema_cost_link_gbps(&hw, true, EMA_COPY_BATCH, 65536), 66.24 * share,
			       0.01);
	/* pieces large enough for the link, or unknown: the link's rate */
	CU_ASSERT_DOUBLE_EQUAL(ema_cost_link_gbps(&hw, true, EMA_COPY_BATCH, 0), link * share, 1e-9);
	CU_ASSERT(ema_cost_link_gbps(&hw, true, EMA_COPY_BATCH, 1u << 30) <= link * share);
	CU_ASSERT_DOUBLE_EQUAL(ema_cost_link_gbps(&hw, true, EMA_COPY_GATHER, 65536),
			       ema_cost_link_gbps(&hw, true, EMA_COPY_GATHER, 0), 0);
	CU_ASSERT_DOUBLE_EQUAL(ema_cost_link_gbps(&hw, false, EMA_COPY_PER_PAGE, 65536),
			       ema_cost_link_gbps(&hw, false, EMA_COPY_PER_PAGE, 0), 0);
	/* smaller pieces never move faster */
	for (double s = 4096; s <= 1 << 28; s *= 2)
		CU_ASSERT(ema_cost_link_gbps(&hw, true, EMA_COPY_PER_PAGE, s) <=
			  ema_cost_link_gbps(&hw, true, EMA_COPY_PER_PAGE, 2 * s) + 1e-9);
	memset(&it, 0, sizeof it);
	it.layer_groups = 8;
	CU_ASSERT_EQUAL(ema_cost_staged_slice_bytes(&it), 0.0);
	it.n_remote = 2;
	it.remote[0].n_pages = 10;
	it.remote[0].bytes = 10 * 524288;
	it.remote[1].n_pages = 6;
	it.remote[1].bytes = 6 * 524288;
	CU_ASSERT_DOUBLE_EQUAL(ema_cost_staged_slice_bytes(&it), 65536, 0);
}

/* doc/policies.md and doc/model.md "Lending floor, reserve and headroom":
 * 4629 KV pages, floor 0.25, reserve 0.05: floor ceil(0.25 x 4629) = 1158,
 * reserve 232; GPU 1 lends min(free - 232, 3471 - lent); with its tenant
 * holding 1000 pages, min(3397, 3471) = 3397, but ema's budget stops
 * GPU 0 at 924 (its lender cap, tests/test_planner.c). In the default scenario with t0 at 20 req/s, remote_direct,
 * with no cap, borrows 4629 - 1158 = 3471 pages from the nearly idle
 * GPU 1 (at 14 req/s its in-place reads keep up and it needs less). */
static void test_lending_example(void)
{
	static const char *sets[] = { "policies=remote_direct", "tenants.0.workload.rate_rps=20" };
	struct ema_experiment *x = load(NULL, 0);
	struct ema_request_spec r0 = { 0, 1, 1 }, r1 = { 0, 1, 1 };
	struct ema_workload w[2] = { { &r0, 1, 1 }, { &r1, 1, 1 } };
	struct ema_platform *p = NULL;
	struct ema_engine e;
	struct ema_platform_params params;
	struct ema_error err = { 0 };
	const struct ema_policy_ops *ema = ema_policy_find("ema");
	int failed = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ema);
	CU_ASSERT_EQUAL_FATAL(ema_engine_platform_params(&params, &x->cfg, ema), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(ema_sim_platform_create(&p, &params, NULL, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(ema_engine_create(&e, &x->cfg, ema, p, w, &err), EMA_OK);
	CU_ASSERT_EQUAL(ema_lending_kv_capacity(&e.ctx, 1), 4629);
	CU_ASSERT_EQUAL((int32_t)ceil(0.25 * 4629), 1158);
	CU_ASSERT_EQUAL((int32_t)ceil(0.05 * 4629), 232);
	/* idle: min(4629 - 232, 4629 - 1158 - 0) */
	CU_ASSERT_EQUAL(ema_lending_lendable(&e.ctx, 1), 3471);
	for (int i = 0; i < 1000; i++)
		if (ema_ledger_alloc(&e.ledger, 1, 1, EMA_PAGE_KV) < 0)
			failed++;
	CU_ASSERT_EQUAL(failed, 0);
	CU_ASSERT_EQUAL(ema_ledger_free_pages(&e.ledger, 1), 3629);
	CU_ASSERT_EQUAL(ema_lending_lendable(&e.ctx, 1), 3397);
	/* ema's planner: its budget of GPU 1's pages (tests/test_planner.c) */
	CU_ASSERT_EQUAL(ema->borrowable(&e.ctx, e.policy_state, 0), 924);
	ema_engine_destroy(&e);
	p->ops->destroy(p);
	done(x);

	x = run(sets, 2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	CU_ASSERT_DOUBLE_EQUAL(row(x, "remote_direct", "t0")->borrowed_peak_gib * GIB /
			       page_bytes(&x->cfg), 4629 - 1158, 1e-6);
	done(x);
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{ "default scenario: 4629 KV pages per GPU", test_default_kv_pages },
		{ "embedded model sizes", test_model_sizes },
		{ "cost model: remote KV in place or staged", test_cost_model_remote_paths },
		{ "remote attention by hand", test_remote_attention_by_hand },
		{ "in place beside local: the H200 measurements within 5%", test_inplace_measurements },
		{ "cost model: the in-place total alone, to the last bit", test_cost_model_inplace_total },
		{ "cost model: the memory-bound shortcut past the FLOPs' division", test_cost_model_memory_bound_shortcut },
		{ "cost model: the staged total's floor", test_cost_model_staged_floor },
		{ "cost model: decode batch of 32 at context 1024", test_cost_model_decode_batch },
		{ "cost model: sums built request by request", test_cost_model_sums },
		{ "link model: single copies on h200x2", test_link_model_single_copy },
		{ "staged link rates by the size of the copies' pieces", test_link_rate_by_piece },
		{ "lending floor and reserve by hand", test_lending_example },
		{ NULL, NULL }
	};

	/* as the program does: the policies' own knobs are keys */
	if (ema_engine_register_policies(ema_policy_table) != EMA_OK)
		return 99;
	return ema_test_run("model", cases);
}
