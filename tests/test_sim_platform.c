/* test_sim_platform.c: the simulated platform: iterations take the cost
 * model's time, timers tie in scheduling order, the prefetch pipeline
 * stalls by the hand-computed amount, interference slows memory-bound
 * work by the documented factor, the horizon and stop end a run, the same
 * ops give the same events, and every failed op says why. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "timing.h"
#include "work.h"
#include "config.h"
#include "ema_error.h"
#include "platform.h"
#include "sim.h"
#include "step_cost.h"
#include "test_main.h"

/* Round figures: 100 GB/s links (100 bytes/ns), HBM 1000 bytes/ns, no
 * copy costs, 20 us iteration overhead, compute negligible. */
static void plain_cfg(struct ema_config *cfg, int n)
{
	struct ema_hw_profile *hw = &cfg->hw;

	memset(cfg, 0, sizeof *cfg);
	snprintf(hw->name, sizeof hw->name, "plain");
	hw->topology = EMA_TOPO_DIRECT;
	hw->n_gpus = n;
	hw->hbm_read_gbps = 1000;
	hw->hbm_efficiency = 1;
	hw->peak_tflops = 1e6;
	hw->flops_efficiency = 1;
	hw->iter_overhead_us = 20;
	hw->link_gbps = 100;
	hw->host_link_gbps = 10;
	hw->copy_engines = 3;
	hw->gather_gbps = 100;
	hw->remote_read_gbps = 50;
	snprintf(cfg->model.name, sizeof cfg->model.name, "toy");
}

static void h200x2_cfg(struct ema_config *cfg)
{
	static const struct ema_curve_point curve[] = {
		{ 1048576, 65.948 }, { 4194304, 167 }, { 16777216, 318 },
		{ 67108864, 369 }, { 268435456, 390 }, { 1073741824, 395 },
	};
	struct ema_hw_profile *hw = &cfg->hw;

	memset(cfg, 0, sizeof *cfg);
	snprintf(hw->name, sizeof hw->name, "h200x2");
	hw->topology = EMA_TOPO_DIRECT;
	hw->n_gpus = 2;
	hw->hbm_read_gbps = 4430;
	hw->hbm_efficiency = 0.7;
	hw->peak_tflops = 872;
	hw->flops_efficiency = 0.65;
	hw->iter_overhead_us = 30;
	hw->link_gbps = 395;
	hw->host_link_gbps = 55.4;
	hw->copy_engines = 3;
	hw->copy_fixed_us = 15.9;
	hw->copy_call_us = 6.3;
	hw->batch_page_us = 0.5;
	hw->gather_gbps = 365;
	hw->n_copy_curve = 6;
	memcpy(hw->copy_curve, curve, sizeof curve);
	hw->remote_read_gbps = 373;
	hw->interference_lender = 1.122;
	hw->interference_borrower = 1.94;
	hw->interference_compute = 0.007;
	snprintf(cfg->model.name, sizeof cfg->model.name, "llama-3-8b");
	cfg->model.layers = 32;
	cfg->model.heads = 32;
	cfg->model.kv_heads = 8;
	cfg->model.head_dim = 128;
	cfg->model.hidden = 4096;
	cfg->model.ffn = 14336;
	cfg->model.params_b = 8.03;
	cfg->model.bytes_per_param = 2;
	cfg->model.tensor_parallel = 1;
}

struct log {
	int n;
	int64_t t[64];
	intptr_t who[64];
	struct ema_iteration_result res[8];
	int n_res;
	struct ema_platform *p;
};

static struct log g_log; /* reset by every test; the callbacks' record */

static void log_timer(void *arg, int64_t now)
{
	if (g_log.n < 64) {
		g_log.t[g_log.n] = now;
		g_log.who[g_log.n] = (intptr_t)arg;
	}
	g_log.n++;
}

static void log_iter(void *arg, const struct ema_iteration_result *r)
{
	if (g_log.n_res < 8)
		g_log.res[g_log.n_res++] = *r;
	log_timer(arg, r->end_ns);
}

static void stop_timer(void *arg, int64_t now)
{
	log_timer(arg, now);
	g_log.p->ops->stop(g_log.p);
}

/* Platform parameters of a test configuration: its server and model and
 * its page size (the pools do not matter to the simulator). */
static const struct ema_platform_params *params_of(const struct ema_config *cfg)
{
	static struct ema_platform_params pp[4];
	static int next;
	struct ema_platform_params *p = &pp[next++ % 4];

	memset(p, 0, sizeof *p);
	p->n_gpus = p->gpus_used = cfg->hw.n_gpus;
	p->page_bytes = (uint64_t)llround(cfg->page_mib * 1048576.0);
	p->hw = &cfg->hw;
	p->model = &cfg->model;
	return p;
}

/* Starts an iteration with the window the core would decide for it. */
static int start(struct ema_platform *p, struct ema_iteration *it, ema_iteration_fn fn, void *arg,
		 struct ema_error *err)
{
	it->window_depth = ema_iteration_window_depth(it, p->params->page_bytes);
	return p->ops->iteration(p, it, fn, arg, err);
}

static struct ema_platform *make(const struct ema_config *cfg)
{
	struct ema_platform *p = NULL;
	struct ema_error err = { 0 };

	CU_ASSERT_EQUAL(ema_sim_platform_create(&p, params_of(cfg), NULL, &err), EMA_OK);
	memset(&g_log, 0, sizeof g_log);
	g_log.p = p;
	return p;
}

/* A decode-like step: 16 GB of weights and 4 GB of KV. */
static void decode_iter(struct ema_iteration *it, int gpu)
{
	memset(it, 0, sizeof *it);
	it->gpu = gpu;
	it->n_seqs = 64;
	it->decode_tokens = 64;
	it->flops = 64 * 2 * 8.03e9;
	it->weight_bytes = 16060000000ULL;
	it->kv_local_bytes = 4000000000ULL;
	it->act_bytes = 10000000;
	it->layer_groups = 4;
	it->staging_pages = NULL;
}

static void test_iteration_alone(void)
{
	struct ema_config cfg;
	struct ema_platform *p;
	struct ema_iteration it;
	struct ema_timing c;
	struct ema_error err = { 0 };

	h200x2_cfg(&cfg);
	p = make(&cfg);
	CU_ASSERT_STRING_EQUAL(p->ops->name, "sim");
	decode_iter(&it, 1);
	ema_timing_iteration(&cfg.hw, &cfg.model, &it, &c);
	CU_ASSERT_EQUAL(start(p, &it, log_iter, (void *)7, NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->run(p, 0, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(g_log.n_res, 1);
	CU_ASSERT_EQUAL(g_log.res[0].start_ns, 0);
	CU_ASSERT_EQUAL(g_log.res[0].end_ns, llround(c.total_ns));
	CU_ASSERT_EQUAL(g_log.res[0].stall_ns, 0);
	CU_ASSERT_EQUAL(g_log.who[0], 7);
	CU_ASSERT_EQUAL(p->ops->now(p), llround(c.total_ns));
	CU_ASSERT_EQUAL(p->ops->events(p), 1);
	p->ops->destroy(p);
}

static void test_timer_ties(void)
{
	struct ema_config cfg;
	struct ema_platform *p;
	struct ema_error err = { 0 };

	plain_cfg(&cfg, 2);
	p = make(&cfg);
	CU_ASSERT_EQUAL(p->ops->timer(p, 500, log_timer, (void *)1, NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->timer(p, 500, log_timer, (void *)2, NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->timer(p, 100, log_timer, (void *)3, NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->timer(p, 500, log_timer, (void *)4, NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->run(p, 0, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(g_log.n, 4);
	CU_ASSERT_EQUAL(g_log.who[0], 3);
	CU_ASSERT_EQUAL(g_log.who[1], 1);
	CU_ASSERT_EQUAL(g_log.who[2], 2);
	CU_ASSERT_EQUAL(g_log.who[3], 4);
	CU_ASSERT_EQUAL(g_log.t[3], 500);
	CU_ASSERT_EQUAL(p->ops->events(p), 4);
	p->ops->destroy(p);
}

static void xfer_done_note(void *arg, int64_t now)
{
	(void)arg;
	(void)now;
}

/* A timer that schedules another (arg: the new one's time x 100 + who). */
static void push_timer(void *arg, int64_t now)
{
	intptr_t v = (intptr_t)arg;

	log_timer(arg, now);
	CU_ASSERT_EQUAL(g_log.p->ops->timer(g_log.p, v / 100, log_timer, (void *)(v % 100), NULL),
			EMA_OK);
}

/* A timer that cuts the leap on GPU 0. */
static void cut_timer(void *arg, int64_t now)
{
	log_timer(arg, now);
	g_log.p->ops->leap_cut(g_log.p, 0);
}

/* ops->leap of k <= 6 iterations ending at ends[], from an array of its
 * own per GPU (the platform writes into it until the leap ends), timed
 * again (on transfers through the GPU) as decode_iter's steps. */
static int leap_of(struct ema_platform *p, int gpu, int k, const int64_t *ends,
		   ema_iteration_fn fn, void *arg, struct ema_error *err)
{
	static int64_t end[2][8];
	static struct ema_iteration it[2];
	static struct ema_leap_step steps[8];
	struct ema_leap_retime rt;

	memcpy(end[gpu], ends, (size_t)(k + 1) * sizeof *ends);
	decode_iter(&it[gpu], gpu);
	for (int j = 0; j < 8; j++)
		steps[j] = (struct ema_leap_step){ 64, false, 10000000, 4000000000ULL, 1e12, 0 };
	rt.it = &it[gpu];
	rt.steps = steps;
	rt.stop_ns = INT64_MAX;
	rt.limit_ns = INT64_MAX;
	return p->ops->leap(p, gpu, k, end[gpu], &rt, fn, arg, err);
}

/* A leap stands for the events of its iterations: each would have been
 * pushed when the previous one ended (the first when the leap was made),
 * so among events of the same time it goes where that push puts it, and
 * an event dispatched at one of its iterations' ends ends it there.
 * Leap on GPU 0: iterations end at 100, 200, 300 (who 9). */
static void test_leap_order(void)
{
	static const int64_t end[] = { 0, 100, 200, 300 };
	struct ema_config cfg;
	struct ema_platform *p;
	struct ema_error err = { 0 };

	plain_cfg(&cfg, 2);
	/* a timer pushed before the leap, for 200: first at 200, and the leap
	 * ends there (its 2nd iteration), started at 100 */
	p = make(&cfg);
	CU_ASSERT_EQUAL(p->ops->timer(p, 200, log_timer, (void *)1, NULL), EMA_OK);
	CU_ASSERT_EQUAL(leap_of(p, 0, 3, end, log_iter, (void *)9, &err), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->run(p, 0, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(g_log.n, 2);
	CU_ASSERT_EQUAL(g_log.who[0], 1);
	CU_ASSERT_EQUAL(g_log.who[1], 9);
	CU_ASSERT_EQUAL(g_log.res[0].start_ns, 100);
	CU_ASSERT_EQUAL(g_log.res[0].end_ns, 200);
	CU_ASSERT_EQUAL(p->ops->events(p), 3);
	p->ops->destroy(p);

	/* pushed after the leap was made, for 100: the leap's first event
	 * came first; the leap ends at 100 */
	p = make(&cfg);
	CU_ASSERT_EQUAL(leap_of(p, 0, 3, end, log_iter, (void *)9, &err), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->timer(p, 100, log_timer, (void *)1, NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->run(p, 0, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(g_log.n, 2);
	CU_ASSERT_EQUAL(g_log.who[0], 9);
	CU_ASSERT_EQUAL(g_log.res[0].start_ns, 0);
	CU_ASSERT_EQUAL(g_log.res[0].end_ns, 100);
	CU_ASSERT_EQUAL(g_log.who[1], 1);
	CU_ASSERT_EQUAL(p->ops->events(p), 2);
	p->ops->destroy(p);

	/* at 150 a timer pushes one for 300: pushed before the leap's 3rd
	 * event (at 200), so first; at 250 one for 300: after it */
	p = make(&cfg);
	CU_ASSERT_EQUAL(leap_of(p, 0, 3, end, log_iter, (void *)9, &err), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->timer(p, 150, push_timer, (void *)(300 * 100 + 2), NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->timer(p, 250, push_timer, (void *)(300 * 100 + 3), NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->run(p, 0, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(g_log.n, 5);
	CU_ASSERT_EQUAL(g_log.t[0], 150);
	CU_ASSERT_EQUAL(g_log.t[1], 250);
	CU_ASSERT_EQUAL(g_log.who[2], 2);
	CU_ASSERT_EQUAL(g_log.who[3], 9);
	CU_ASSERT_EQUAL(g_log.res[0].start_ns, 200);
	CU_ASSERT_EQUAL(g_log.res[0].end_ns, 300);
	CU_ASSERT_EQUAL(g_log.who[4], 3);
	CU_ASSERT_EQUAL(p->ops->events(p), 7);
	p->ops->destroy(p);

	/* a cut at 150: the leap ends with the iteration ending at 200 */
	p = make(&cfg);
	CU_ASSERT_EQUAL(leap_of(p, 0, 3, end, log_iter, (void *)9, &err), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->timer(p, 150, cut_timer, (void *)4, NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->run(p, 0, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(g_log.n, 2);
	CU_ASSERT_EQUAL(g_log.who[1], 9);
	CU_ASSERT_EQUAL(g_log.res[0].end_ns, 200);
	CU_ASSERT_EQUAL(p->ops->now(p), 200);
	CU_ASSERT_EQUAL(p->ops->events(p), 3);
	p->ops->destroy(p);

	/* two leaps with the same ends go in the order they were made */
	for (int first = 0; first < 2; first++) {
		p = make(&cfg);
		CU_ASSERT_EQUAL(leap_of(p, first, 3, end, log_iter, (void *)(intptr_t)(10 + first),
					&err), EMA_OK);
		CU_ASSERT_EQUAL(leap_of(p, 1 - first, 3, end, log_iter,
					(void *)(intptr_t)(11 - first), &err), EMA_OK);
		CU_ASSERT_EQUAL(p->ops->run(p, 0, &err), EMA_OK);
		CU_ASSERT_EQUAL_FATAL(g_log.n, 2);
		CU_ASSERT_EQUAL(g_log.who[0], 10 + first);
		CU_ASSERT_EQUAL(g_log.who[1], 11 - first);
		CU_ASSERT_EQUAL(p->ops->events(p), 6);
		p->ops->destroy(p);
	}
	/* a GPU in a leap takes no iteration; times that do not rise, no leap */
	p = make(&cfg);
	CU_ASSERT_EQUAL(leap_of(p, 0, 3, end, log_iter, (void *)9, &err), EMA_OK);
	{
		struct ema_iteration it;
		int64_t ns;
		static const int64_t flat[] = { 0, 100, 100 };

		decode_iter(&it, 0);
		CU_ASSERT_EQUAL(start(p, &it, log_iter, NULL, &err), EMA_ERR_INTERNAL);
		CU_ASSERT_EQUAL(p->ops->iteration_time(p, &it, &ns, NULL), EMA_ERR_UNSUPPORTED);
		CU_ASSERT_EQUAL(leap_of(p, 1, 2, flat, log_iter, NULL, &err), EMA_ERR_INTERNAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "does not end after it starts"));
	}
	p->ops->destroy(p);
}

/* A timer that times g_it.it and starts it. */
static struct {
	struct ema_platform *p;
	struct ema_iteration it;
	int64_t ns;
} g_it;

static void time_and_start(void *arg, int64_t now)
{
	(void)arg;
	(void)now;
	CU_ASSERT_EQUAL(g_it.p->ops->iteration_time(g_it.p, &g_it.it, &g_it.ns, NULL), EMA_OK);
	CU_ASSERT_EQUAL(start(g_it.p, &g_it.it, log_iter, NULL, NULL), EMA_OK);
}

/* iteration_time is the time iteration() gives, also while a transfer
 * crosses the GPU (at its rates, slower than without). */
static void test_iteration_time(void)
{
	struct ema_config cfg;
	struct ema_platform *p;
	struct ema_iteration it;
	struct ema_error err = { 0 };
	struct ema_transfer tr;
	int32_t pages[1] = { 0 };
	int64_t ns = -1;

	h200x2_cfg(&cfg);
	p = make(&cfg);
	decode_iter(&it, 1);
	it.window_depth = ema_iteration_window_depth(&it, p->params->page_bytes);
	CU_ASSERT_EQUAL(p->ops->iteration_time(p, &it, &ns, NULL), EMA_OK);
	CU_ASSERT_EQUAL(start(p, &it, log_iter, NULL, NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->run(p, 0, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(g_log.n_res, 1);
	CU_ASSERT_EQUAL(g_log.res[0].end_ns, ns);
	memset(&tr, 0, sizeof tr);
	tr.src_gpu = 1;
	tr.dst_gpu = 0;
	tr.n_pages = 1;
	tr.src_pages = pages;
	tr.dst_pages = pages;
	tr.bytes = 1 << 30;
	tr.purpose = EMA_XFER_RECLAIM;
	/* both ends of a transfer slow down once its data moves (after its
	 * latency): timed and started 100 us after the transfer started */
	for (int g = 1; g >= 0; g--) {
		g_it.p = p;
		g_it.it = it;
		g_it.it.gpu = g;
		g_log.n_res = 0;
		CU_ASSERT_EQUAL(p->ops->transfer(p, &tr, xfer_done_note, NULL, NULL), EMA_OK);
		CU_ASSERT_EQUAL(p->ops->timer(p, p->ops->now(p) + 100000, time_and_start, NULL, NULL),
				EMA_OK);
		CU_ASSERT_EQUAL(p->ops->run(p, 0, &err), EMA_OK);
		CU_ASSERT_EQUAL_FATAL(g_log.n_res, 1);
		CU_ASSERT(g_it.ns > ns);
		CU_ASSERT_EQUAL(g_log.res[0].end_ns - g_log.res[0].start_ns, g_it.ns);
	}
	p->ops->destroy(p);
}

/* iteration_time with the FLOPs known only from above (flops_bound): a
 * step whose bound's compute time is within its memory time takes its
 * memory time, whatever the FLOPs below the bound; one that could be
 * compute-bound gets no answer. Plain GPU: 1000 bytes/ns, 10^9 FLOPs/ns,
 * 20 us overhead; 36 MB of weights: 36 us of memory time. */
static void test_iteration_time_bound(void)
{
	struct ema_config cfg;
	struct ema_platform *p;
	struct ema_iteration it;
	struct ema_error err = { 0 };
	int64_t ns = -1;

	plain_cfg(&cfg, 2);
	p = make(&cfg);
	memset(&it, 0, sizeof it);
	it.gpu = 0;
	it.n_seqs = 1;
	it.decode_tokens = 1;
	it.weight_bytes = 36000000;
	it.flops = 1e12;                   /* 1 us of compute */
	it.flops_bound = true;
	CU_ASSERT_EQUAL(p->ops->iteration_time(p, &it, &ns, &err), EMA_OK);
	CU_ASSERT_EQUAL(ns, 56000);
	it.flops = 3.6e13;                 /* 36 us: still memory's time */
	CU_ASSERT_EQUAL(p->ops->iteration_time(p, &it, &ns, &err), EMA_OK);
	CU_ASSERT_EQUAL(ns, 56000);
	it.flops = 3.7e13;                 /* 37 us: the FLOPs could decide */
	ns = -1;
	CU_ASSERT_EQUAL(p->ops->iteration_time(p, &it, &ns, &err), EMA_ERR_UNSUPPORTED);
	CU_ASSERT_EQUAL(ns, -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "exact FLOPs"));
	it.flops_bound = false;            /* as the sum: compute-bound */
	CU_ASSERT_EQUAL(p->ops->iteration_time(p, &it, &ns, &err), EMA_OK);
	CU_ASSERT_EQUAL(ns, 57000);
	p->ops->destroy(p);

	/* the same on a profile with interference (iteration_total's path):
	 * a bound within memory's time gives the time of any FLOPs below it,
	 * one beyond it no answer */
	h200x2_cfg(&cfg);
	p = make(&cfg);
	decode_iter(&it, 0);
	{
		int64_t exact = -1, bound = -1;
		double flops_mem = (double)(it.weight_bytes + it.kv_local_bytes + it.act_bytes) /
				   (cfg.hw.hbm_read_gbps * cfg.hw.hbm_efficiency) *
				   cfg.hw.peak_tflops * 1e3 * cfg.hw.flops_efficiency;

		it.flops = flops_mem * 0.1;
		CU_ASSERT_EQUAL(p->ops->iteration_time(p, &it, &exact, &err), EMA_OK);
		it.flops = flops_mem * 0.9;
		it.flops_bound = true;
		CU_ASSERT_EQUAL(p->ops->iteration_time(p, &it, &bound, &err), EMA_OK);
		CU_ASSERT_EQUAL(bound, exact);
		it.flops = flops_mem * 1.1;
		CU_ASSERT_EQUAL(p->ops->iteration_time(p, &it, &bound, &err), EMA_ERR_UNSUPPORTED);
	}
	p->ops->destroy(p);
}

/* iteration_time computes a step's time in line: on random steps without
 * remote KV (staged or not, memory- or compute-bound, on a profile whose
 * figures are not round), it is what iteration() takes, to the ns. */
static void test_iteration_time_random(void)
{
	struct ema_config cfg;
	struct ema_platform *p;
	struct ema_error err = { 0 };
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	int bad = 0;

	h200x2_cfg(&cfg);
	p = make(&cfg);
	for (int i = 0; i < 3000; i++) {
		struct ema_iteration it;
		int64_t ns = -1;

		memset(&it, 0, sizeof it);
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		it.gpu = (int)(x & 1);
		it.n_seqs = 1 + (int)(x >> 8) % 300;
		it.decode_tokens = it.n_seqs;
		it.weight_bytes = 1000000000ULL + (x >> 20) % 16000000000ULL;
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		it.kv_local_bytes = (x >> 3) % 40000000000ULL;
		it.act_bytes = (x >> 40) * 7;
		it.flops = (double)it.n_seqs * 1.6e10 * (double)(1 + (x & 0xff)) / 16.0;
		it.layer_groups = 4;
		it.prefetch_depth = (int)((x >> 12) & 1);
		g_log.n_res = 0;
		CU_ASSERT_EQUAL_FATAL(p->ops->iteration_time(p, &it, &ns, NULL), EMA_OK);
		CU_ASSERT_EQUAL_FATAL(start(p, &it, log_iter, NULL, NULL), EMA_OK);
		CU_ASSERT_EQUAL_FATAL(p->ops->run(p, 0, &err), EMA_OK);
		CU_ASSERT_EQUAL_FATAL(g_log.n_res, 1);
		bad += g_log.res[0].end_ns - g_log.res[0].start_ns != ns;
	}
	CU_ASSERT_EQUAL(bad, 0);
	p->ops->destroy(p);
}

/* leap_times is iteration_time step by step: random runs of steps (some
 * with FLOPs known only from above), each timed as iteration_time times
 * `it` with that step's figures, the same ns; it stops at the first step
 * iteration_time refuses, and on a GPU a transfer crosses times them at
 * its rates. On
 * h200x2 (not plain: interference factors) and on the plain profile,
 * whose steps leap_times costs in line. */
static void leap_times_random(struct ema_config *cfg)
{
	struct ema_platform *p = make(cfg);
	const struct ema_hw_profile *hw = p->params->hw;
	/* FLOPs that take as long as reading a byte */
	double flops_per_byte = hw->peak_tflops * 1e3 * hw->flops_efficiency /
				(hw->hbm_read_gbps * hw->hbm_efficiency);
	uint64_t x = 0x2545f4914f6cdd1dULL;
	int bad = 0, stopped = 0;

	for (int round = 0; round < 400; round++) {
		struct ema_iteration it, one;
		struct ema_leap_step st[32];
		int64_t ns[32], want;
		int n, m, refused = -1;

		memset(&it, 0, sizeof it);
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		it.gpu = (int)(x & 1);
		it.weight_bytes = 1000000000ULL + (x >> 20) % 16000000000ULL;
		it.layer_groups = 4;
		n = 1 + (int)((x >> 8) % 32);
		for (int i = 0; i < n; i++) {
			x ^= x << 13; x ^= x >> 7; x ^= x << 17;
			st[i].n_seqs = 1 + (int)(x >> 8) % 300;
			st[i].kv_local_bytes = (x >> 3) % 40000000000ULL;
			st[i].act_bytes = (x >> 40) * 7;
			/* compute from none to twice the memory time */
			st[i].flops = ((double)it.weight_bytes + (double)st[i].kv_local_bytes +
				       (double)st[i].act_bytes) * flops_per_byte *
				      (double)(x & 0xffff) / 32768.0;
			st[i].attention_flops = 0;
			st[i].flops_bound = (x >> 33) & 1;
		}
		m = p->ops->leap_times(p, &it, n, st, ns);
		for (int i = 0; i < n && refused < 0; i++) {
			one = it;
			one.n_seqs = st[i].n_seqs;
			one.decode_tokens = st[i].n_seqs;
			one.act_bytes = st[i].act_bytes;
			one.kv_local_bytes = st[i].kv_local_bytes;
			one.flops = st[i].flops;
			one.flops_bound = st[i].flops_bound;
			if (p->ops->iteration_time(p, &one, &want, NULL) != EMA_OK)
				refused = i;
			else if (i < m)
				bad += ns[i] != want;
		}
		CU_ASSERT_EQUAL(m, refused < 0 ? n : refused);
		stopped += refused >= 0;
	}
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT(stopped > 0 && stopped < 400); /* both kinds of run were seen */
	p->ops->destroy(p);
}

/* iteration_time of `one` on a fresh platform of cfg (nothing running). */
static int64_t quiet_plain(const struct ema_config *cfg, const struct ema_iteration *one)
{
	struct ema_platform *q = make(cfg);
	int64_t ns = -1;

	CU_ASSERT_EQUAL(q->ops->iteration_time(q, one, &ns, NULL), EMA_OK);
	q->ops->destroy(q);
	return ns;
}

static void test_leap_times(void)
{
	struct ema_config cfg;
	struct ema_platform *p;
	struct ema_iteration it, one;
	struct ema_leap_step st = { 1, false, 0, 0, 1e12, 0 };
	int32_t pages[1] = { 0 };
	struct ema_transfer tr;
	int64_t ns[1] = { -1 }, quiet = -1, busy = -1;

	h200x2_cfg(&cfg);
	leap_times_random(&cfg);
	plain_cfg(&cfg, 2);
	leap_times_random(&cfg);
	/* a transfer through GPU 0: its times at the transfer's rates */
	h200x2_cfg(&cfg);
	p = make(&cfg);
	memset(&it, 0, sizeof it);
	it.gpu = 0;
	it.weight_bytes = 36000000;
	one = it;
	one.n_seqs = one.decode_tokens = st.n_seqs;
	one.flops = st.flops;
	CU_ASSERT_EQUAL(p->ops->iteration_time(p, &one, &quiet, NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->leap_times(p, &it, 1, &st, ns), 1);
	CU_ASSERT_EQUAL(ns[0], quiet);
	memset(&tr, 0, sizeof tr);
	tr.src_gpu = 1;
	tr.dst_gpu = 0;
	tr.n_pages = 1;
	tr.src_pages = pages;
	tr.dst_pages = pages;
	tr.bytes = 1 << 30;
	tr.purpose = EMA_XFER_RECLAIM;
	CU_ASSERT_EQUAL_FATAL(p->ops->transfer(p, &tr, xfer_done_note, NULL, NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->iteration_time(p, &one, &busy, NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->leap_times(p, &it, 1, &st, ns), 1);
	CU_ASSERT_EQUAL(ns[0], busy);
	CU_ASSERT_EQUAL(p->ops->leap_times(p, &it, 0, &st, ns), 0);
	p->ops->destroy(p);
	/* remote attention that GPU 0 runs for GPU 1's step, with no flow
	 * through GPU 0 (no queries or partials to exchange, as in the
	 * step's last overhead once its exchange ended): GPU 0's steps are
	 * slowed by it (attn_factor) in leap_times as in iteration_time.
	 * (leap_times' flowless fast path left it out, and a lender's leap
	 * under a borrower's remote attention ran steps shorter than
	 * stepping's.) */
	plain_cfg(&cfg, 2);
	cfg.hw.attention_gbps = 500;
	cfg.hw.attention_lender_ms_per_gb = 1;
	p = make(&cfg);
	{
		struct ema_iteration b;

		memset(&b, 0, sizeof b);
		b.gpu = 1;
		b.tenant = 1;
		b.weight_bytes = 36000000;
		b.n_seqs = b.decode_tokens = 1;
		b.n_remote = 1;
		b.remote[0].gpu = 0;
		b.remote[0].n_pages = 1;
		b.remote[0].bytes = 100000000;
		b.remote[0].compute = true;
		CU_ASSERT_EQUAL_FATAL(start(p, &b, log_iter, (void *)1, NULL), EMA_OK);
	}
	CU_ASSERT_EQUAL(p->ops->iteration_time(p, &one, &busy, NULL), EMA_OK);
	CU_ASSERT(busy > quiet_plain(&cfg, &one));
	ns[0] = -1;
	CU_ASSERT_EQUAL(p->ops->leap_times(p, &it, 1, &st, ns), 1);
	CU_ASSERT_EQUAL(ns[0], busy);
	p->ops->destroy(p);
}

/* A leap timed again: GPU 0 runs k decode steps as a leap while, from a
 * random time on, a transfer out of GPU 0 crosses it (and may end before
 * the leap does). The steps that start while it runs are slower, and
 * every step's end is that of the same steps run one by one with the same
 * transfer; with a stop time the step ending at or after it is the last,
 * and with a limit no step ends after it, as the engine's plan would
 * have had it. */
static struct {
	struct ema_platform *p;
	struct ema_leap_step steps[20];
	struct ema_iteration it;
	int k, j;
	int64_t ends[20];
	uint64_t xfer_bytes;
} g_rt;

static void retime_xfer(void *arg, int64_t now)
{
	static int32_t pages[1] = { 0 };
	struct ema_transfer tr;

	(void)arg;
	(void)now;
	memset(&tr, 0, sizeof tr);
	tr.src_gpu = 0;
	tr.dst_gpu = 1;
	tr.n_pages = 1;
	tr.src_pages = pages;
	tr.dst_pages = pages;
	tr.bytes = g_rt.xfer_bytes;
	tr.purpose = EMA_XFER_RECLAIM;
	CU_ASSERT_EQUAL(g_rt.p->ops->transfer(g_rt.p, &tr, xfer_done_note, NULL, NULL), EMA_OK);
}

static void retime_fill(struct ema_iteration *it, const struct ema_leap_step *s)
{
	it->n_seqs = s->n_seqs;
	it->decode_tokens = s->n_seqs;
	it->act_bytes = s->act_bytes;
	it->kv_local_bytes = s->kv_local_bytes;
	it->flops = s->flops;
	it->flops_bound = s->flops_bound;
}

/* stepping: step j ended; the next one starts */
static void retime_step(void *arg, const struct ema_iteration_result *r)
{
	struct ema_iteration it = g_rt.it;

	(void)arg;
	g_rt.ends[g_rt.j] = r->end_ns;
	if (g_rt.j == g_rt.k)
		return;
	g_rt.j++;
	retime_fill(&it, &g_rt.steps[g_rt.j]);
	CU_ASSERT_EQUAL(start(g_rt.p, &it, retime_step, NULL, NULL), EMA_OK);
}

static void test_leap_retime(void)
{
	struct ema_config cfg;
	uint64_t x = 0x243f6a8885a308d3ULL;
	int bad = 0, slower = 0, rounds = 60;

	h200x2_cfg(&cfg);
	for (int round = 0; round < rounds; round++) {
		struct ema_error err = { 0 };
		struct ema_leap_retime rt;
		int64_t end[22], xfer_at, stop, limit, ns;
		int k, m;

		memset(&g_rt, 0, sizeof g_rt);
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		g_rt.k = k = 3 + (int)(x % 16);
		decode_iter(&g_rt.it, 0);
		for (int j = 1; j <= k; j++) {
			x ^= x << 13; x ^= x >> 7; x ^= x << 17;
			g_rt.steps[j] = (struct ema_leap_step){
				64 - j, (x >> 5) & 1, 10000000, 1000000000ULL + (x >> 16) % 8000000000ULL,
				(double)(64 - j) * 2 * 8.03e9, 0,
			};
		}
		g_rt.xfer_bytes = (1ULL << 20) << ((x >> 50) % 12);
		/* stepping, the reference */
		g_rt.p = make(&cfg);
		retime_fill(&g_rt.it, &g_rt.steps[1]);
		g_rt.it.flops_bound = false;
		CU_ASSERT_EQUAL_FATAL(g_rt.p->ops->iteration_time(g_rt.p, &g_rt.it, &ns, NULL), EMA_OK);
		xfer_at = (int64_t)((x >> 8) % (uint64_t)(ns * k)) + 1;
		CU_ASSERT_EQUAL(g_rt.p->ops->timer(g_rt.p, xfer_at, retime_xfer, NULL, NULL), EMA_OK);
		g_rt.j = 1;
		CU_ASSERT_EQUAL(start(g_rt.p, &g_rt.it, retime_step, NULL, NULL), EMA_OK);
		CU_ASSERT_EQUAL(g_rt.p->ops->run(g_rt.p, 0, &err), EMA_OK);
		CU_ASSERT_EQUAL_FATAL(g_rt.j, k);
		g_rt.p->ops->destroy(g_rt.p);
		/* a stop or a limit within the stepped run, or neither */
		stop = limit = INT64_MAX;
		if (round % 3 == 1)
			stop = g_rt.ends[1 + (int)((x >> 20) % (uint64_t)k)] - (int64_t)((x >> 40) % 3);
		if (round % 3 == 2)
			limit = g_rt.ends[1 + (int)((x >> 20) % (uint64_t)k)] + (int64_t)((x >> 40) % 3) - 1;
		/* the leap: times planned before the transfer, as the engine
		 * plans them (ending at the stop, within the limit) */
		g_rt.p = make(&cfg);
		g_log.p = g_rt.p;
		CU_ASSERT_EQUAL(g_rt.p->ops->timer(g_rt.p, xfer_at, retime_xfer, NULL, NULL), EMA_OK);
		end[0] = 0;
		end[1] = ns;
		CU_ASSERT_EQUAL_FATAL(g_rt.p->ops->leap_times(g_rt.p, &g_rt.it, k - 1, &g_rt.steps[2],
							      &end[2]), k - 1);
		for (int j = 2; j <= k; j++)
			end[j] += end[j - 1];
		m = k;
		for (int j = 1; j <= k; j++)
			if (end[j] > limit || end[j] >= stop) {
				m = end[j] > limit ? j - 1 : j;
				break;
			}
		if (m < 2) {
			g_rt.p->ops->destroy(g_rt.p);
			continue;
		}
		rt.it = &g_rt.it;
		rt.steps = g_rt.steps;
		rt.stop_ns = stop;
		rt.limit_ns = limit;
		CU_ASSERT_EQUAL_FATAL(g_rt.p->ops->leap(g_rt.p, 0, m, end, &rt, log_iter, (void *)7,
							&err), EMA_OK);
		CU_ASSERT_EQUAL(g_rt.p->ops->run(g_rt.p, 0, &err), EMA_OK);
		CU_ASSERT_EQUAL_FATAL(g_log.n_res, 1);
		/* the leap ended where stepping's steps say it should */
		{
			int want = m;

			for (int j = 1; j <= m; j++)
				if (g_rt.ends[j] > limit || g_rt.ends[j] >= stop) {
					want = g_rt.ends[j] > limit ? j - 1 : j;
					break;
				}
			CU_ASSERT_EQUAL(g_log.res[0].end_ns, g_rt.ends[want]);
			CU_ASSERT_EQUAL(g_log.res[0].start_ns, g_rt.ends[want - 1]);
			for (int j = 1; j <= want; j++)
				bad += end[j] != g_rt.ends[j];
			slower += g_rt.ends[want] > end[0] + ns * want && xfer_at < g_rt.ends[want - 1];
		}
		g_rt.p->ops->destroy(g_rt.p);
	}
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT(slower > 0); /* the transfer did slow some leaps down */
}

/* The cost model's shortcut for steps without remote KV (timing.c and
 * step_cost.c) gives the doubles of its general path: the same random
 * steps, staged or not, once without remote reads and once with a
 * remote read of 0 bytes (which takes the general path), time alike. */
static void test_timing_local_shortcut(void)
{
	struct ema_config cfg;
	uint64_t x = 0x2545f4914f6cdd1dULL;
	int bad = 0;

	h200x2_cfg(&cfg);
	for (int i = 0; i < 3000; i++) {
		struct ema_iteration a, b;
		struct ema_timing ca, cb;
		struct ema_step_cost sa, sb;

		memset(&a, 0, sizeof a);
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		a.n_seqs = 1 + (int)(x >> 8) % 300;
		a.weight_bytes = (x >> 20) % 32000000000ULL;
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		a.kv_local_bytes = (x >> 3) % 40000000000ULL;
		a.act_bytes = (x >> 40) * 7;
		a.flops = (double)(x % 1000000007ULL) * 1e5;
		a.layer_groups = 4;
		a.prefetch_depth = (int)((x >> 12) & 1);
		b = a;
		b.n_remote = 1;
		b.remote[0].gpu = 1;
		ema_timing_iteration(&cfg.hw, &cfg.model, &a, &ca);
		ema_timing_iteration(&cfg.hw, &cfg.model, &b, &cb);
		bad += ca.overhead_ns != cb.overhead_ns || ca.compute_ns != cb.compute_ns ||
		       ca.memory_ns != cb.memory_ns || ca.remote_inplace_ns != cb.remote_inplace_ns ||
		       ca.total_ns != cb.total_ns;
		ema_step_cost(&cfg.hw, &a, false, &sa);
		ema_step_cost(&cfg.hw, &b, false, &sb);
		bad += sa.overhead_ns != sb.overhead_ns || sa.compute_ns != sb.compute_ns ||
		       sa.local_ns != sb.local_ns || sa.link_ns != sb.link_ns ||
		       sa.memory_ns != sb.memory_ns || sa.total_ns != sb.total_ns;
	}
	CU_ASSERT_EQUAL(bad, 0);
}

/* Borrower GPU 0, lender GPU 1; 36 MB local bytes (36 us at 1000/ns),
 * `remote` bytes staged over 4 groups with depth 1 and the gather kernel
 * (5 us launch, 100 bytes/ns). */
static void prefetch_iter(struct ema_iteration *it, uint64_t remote)
{
	memset(it, 0, sizeof *it);
	it->gpu = 0;
	it->n_seqs = 1;
	it->decode_tokens = 1;
	it->weight_bytes = 36000000;
	it->layer_groups = 4;
	it->prefetch_depth = 1;
	it->n_remote = 1;
	it->remote[0].gpu = 1;
	it->remote[0].n_pages = 8;
	it->remote[0].bytes = remote;
	it->method = EMA_COPY_GATHER;
	it->staging_pages = NULL;
}

static void test_prefetch_small_hidden(void)
{
	struct ema_config cfg;
	struct ema_platform *p;
	struct ema_iteration it;
	struct ema_error err = { 0 };

	plain_cfg(&cfg, 2);
	p = make(&cfg);
	/* the same bytes, all local: 20 us overhead + 36.004 us */
	prefetch_iter(&it, 0);
	it.n_remote = 0;
	it.kv_local_bytes = 4000;
	CU_ASSERT_EQUAL(start(p, &it, log_iter, (void *)1, NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->run(p, 0, &err), EMA_OK);
	/* staged: 1000 bytes per group, 5.01 us each, hidden behind the
	 * overhead (group 0) and the previous group's 9 us */
	prefetch_iter(&it, 4000);
	CU_ASSERT_EQUAL(start(p, &it, log_iter, (void *)2, NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->run(p, 0, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(g_log.n_res, 2);
	CU_ASSERT_EQUAL(g_log.res[0].end_ns - g_log.res[0].start_ns, 56004);
	CU_ASSERT_EQUAL(g_log.res[1].end_ns - g_log.res[1].start_ns, 56004);
	CU_ASSERT_EQUAL(g_log.res[1].stall_ns, 0);
	CU_ASSERT_EQUAL(g_log.res[1].remote_bytes, 4000);
	/* hidden: the fast path moves the bytes as one flow, nothing more */
	CU_ASSERT_EQUAL(p->ops->link_stats(p)->bytes[2][1], 4000);
	CU_ASSERT_EQUAL(p->ops->link_stats(p)->bytes_by_purpose[EMA_XFER_PREFETCH], 4000);
	p->ops->destroy(p);
}

/* The worked example of sim_platform.c: 4 MB remote, so each group's KV
 * takes 5 + 10 = 15 us; groups compute 10 us each after 20 us overhead.
 * Group 0: KV at 15, runs 20-30. Group 1's KV starts at 20 (group 0
 * starts), lands at 35: runs 35-45 (stall 5). Group 2's KV 35-50, runs
 * 50-60 (stall 5). Group 3's KV 50-65, runs 65-75 (stall 5). */
static void test_prefetch_large_stalls(void)
{
	struct ema_config cfg;
	struct ema_platform *p;
	struct ema_iteration it;
	struct ema_error err = { 0 };

	plain_cfg(&cfg, 2);
	p = make(&cfg);
	prefetch_iter(&it, 4000000);
	it.weight_bytes = 36000000;
	CU_ASSERT_EQUAL(p->ops->timer(p, 1000, log_timer, (void *)9, NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->run(p, 0, &err), EMA_OK);
	CU_ASSERT_EQUAL(start(p, &it, log_iter, (void *)1, NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->run(p, 0, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(g_log.n_res, 1);
	CU_ASSERT_EQUAL(g_log.res[0].start_ns, 1000);
	CU_ASSERT_EQUAL(g_log.res[0].end_ns, 1000 + 75000);
	CU_ASSERT_EQUAL(g_log.res[0].stall_ns, 15000);
	CU_ASSERT_EQUAL(g_log.res[0].remote_bytes, 4000000);

	/* depth 4 >= groups: all KV starts at once and shares the link:
	 * 4 MB at 100/ns after the 5 us launch = 45 us; group 0 waits from
	 * 20 to 45 (stall 25), then 4 x 10 us: end 85. (A fresh platform:
	 * the first one speculated on a depth-1 successor.) */
	p->ops->destroy(p);
	p = make(&cfg);
	it.prefetch_depth = 4;
	CU_ASSERT_EQUAL(start(p, &it, log_iter, (void *)2, NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->run(p, 0, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(g_log.n_res, 1); /* make() clears the log */
	CU_ASSERT_EQUAL(g_log.res[0].end_ns - g_log.res[0].start_ns, 85000);
	CU_ASSERT_EQUAL(g_log.res[0].stall_ns, 25000);
	p->ops->destroy(p);
}

static void start_iter_timer(void *arg, int64_t now)
{
	struct ema_iteration *it = arg;

	(void)now;
	CU_ASSERT_EQUAL(start(g_log.p, it, log_iter, (void *)(intptr_t)it->gpu, NULL), EMA_OK);
}

/* The window follows the staging area, as on the GPUs: the worked
 * example with 1 MiB pages. Two staging pages hold two group slots
 * (1 MB each): depth 1, end 75 us, stall 15 us. One page holds one slot:
 * each group's KV is fetched only after the previous group computed:
 * group 0 runs 20-30 (KV at 15), group 1's KV 30-45, runs 45-55, group 2
 * 55-70 then 70-80, group 3 80-95 then 95-105: end 105, stall 45. */
static void test_prefetch_window_from_staging(void)
{
	struct ema_config cfg;
	struct ema_platform *p;
	struct ema_iteration it;
	struct ema_error err = { 0 };
	int32_t staging[2] = { 0, 1 };

	plain_cfg(&cfg, 2);
	cfg.page_mib = 1;
	p = make(&cfg);
	prefetch_iter(&it, 4000000);
	it.weight_bytes = 36000000;
	it.staging_pages = staging;
	it.n_staging_pages = 2;
	CU_ASSERT_EQUAL(start(p, &it, log_iter, (void *)1, NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->run(p, 0, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(g_log.n_res, 1);
	CU_ASSERT_EQUAL(g_log.res[0].end_ns - g_log.res[0].start_ns, 75000);
	CU_ASSERT_EQUAL(g_log.res[0].stall_ns, 15000);
	p->ops->destroy(p);

	p = make(&cfg);
	it.n_staging_pages = 1;
	CU_ASSERT_EQUAL(start(p, &it, log_iter, (void *)2, NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->run(p, 0, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(g_log.n_res, 1);
	CU_ASSERT_EQUAL(g_log.res[0].end_ns - g_log.res[0].start_ns, 105000);
	CU_ASSERT_EQUAL(g_log.res[0].stall_ns, 45000);
	p->ops->destroy(p);
}

/* A pull that keeps half its rate while its GPU computes
 * (pull_share_under_load 0.5): each group's KV, 1 MB at 50 GB/s after the
 * 5 us launch, takes 25 us instead of 15. Group 0: KV at 25, runs 25-35
 * (no overhead); group 1's KV 25-50, runs 50-60; group 2 50-75, runs
 * 75-85; group 3 75-100, runs 100-110: end 110, stall 25 + 3 x 15 = 70. */
static void test_prefetch_pull_share(void)
{
	struct ema_config cfg;
	struct ema_platform *p;
	struct ema_iteration it;
	struct ema_error err = { 0 };

	plain_cfg(&cfg, 2);
	cfg.hw.iter_overhead_us = 0;
	cfg.hw.pull_share_under_load = 0.5;
	p = make(&cfg);
	prefetch_iter(&it, 4000000);
	it.weight_bytes = 36000000;
	CU_ASSERT_EQUAL(start(p, &it, log_iter, (void *)1, NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->run(p, 0, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(g_log.n_res, 1);
	CU_ASSERT_EQUAL(g_log.res[0].end_ns - g_log.res[0].start_ns, 110000);
	CU_ASSERT_EQUAL(g_log.res[0].stall_ns, 70000);
	p->ops->destroy(p);
}

/* The copy engines pay per piece, and a group's KV is a slice of every
 * remote page, as the hw backend copies it: the worked example with the
 * batched copy (5 us call, 1 us host cost per piece) and 8 pages of
 * 500,000 bytes in 4 groups, so each group's 1 MB is 8 pieces of 125,000
 * bytes at 1 + 1.25 us: 5 + 18 = 23 us. Group 0 runs 23-33 (stall 3);
 * group 1's KV 23-46, runs 46-56 (stall 13); group 2's KV 46-69, runs
 * 69-79; group 3's 69-92, runs 92-102: end 102, stall 42. (Charged as 2 whole pages a
 * group, 6 us each, it was 17 us a group: end 101, stall 21.) */
static void test_prefetch_batch_pieces(void)
{
	struct ema_config cfg;
	struct ema_platform *p;
	struct ema_iteration it;
	struct ema_error err = { 0 };

	plain_cfg(&cfg, 2);
	cfg.hw.copy_fixed_us = 5;
	cfg.hw.batch_page_us = 1;
	p = make(&cfg);
	prefetch_iter(&it, 4000000);
	it.method = EMA_COPY_BATCH;
	CU_ASSERT_EQUAL(start(p, &it, log_iter, (void *)1, NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->run(p, 0, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(g_log.n_res, 1);
	CU_ASSERT_EQUAL(g_log.res[0].end_ns - g_log.res[0].start_ns, 102000);
	CU_ASSERT_EQUAL(g_log.res[0].stall_ns, 42000);
	CU_ASSERT_EQUAL(g_log.res[0].remote_bytes, 4000000);
	p->ops->destroy(p);
}

/* Cross-iteration prefetch, no overhead, 4 groups of 10 us, each group's
 * KV 15 us away, depth 1. First iteration: group 0 waits for its KV
 * (0-15), runs 15-25; group 1's KV 15-30, runs 30-40; group 2 45-55;
 * group 3 60-70: stall 30 us. During group 3 (from 60) the next
 * iteration's group 0 is fetched, landing at 75. The second iteration
 * starts at 70.001 us: group 0 waits until 75 (not 85), runs 75-85, and
 * groups 1-3 follow as before: end 130, stall 19.999 us. */
static void test_prefetch_across_iterations(void)
{
	struct ema_config cfg;
	struct ema_platform *p;
	struct ema_iteration it;
	struct ema_error err = { 0 };

	plain_cfg(&cfg, 2);
	cfg.hw.iter_overhead_us = 0;
	p = make(&cfg);
	prefetch_iter(&it, 4000000);
	it.weight_bytes = 36000000;
	CU_ASSERT_EQUAL(start(p, &it, log_iter, (void *)1, NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->timer(p, 70001, start_iter_timer, &it, NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->run(p, 0, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(g_log.n_res, 2);
	CU_ASSERT_EQUAL(g_log.res[0].end_ns, 70000);
	CU_ASSERT_EQUAL(g_log.res[0].stall_ns, 30000);
	CU_ASSERT_EQUAL(g_log.res[1].start_ns, 70001);
	CU_ASSERT_EQUAL(g_log.res[1].end_ns, 130000);
	CU_ASSERT_EQUAL(g_log.res[1].stall_ns, 19999);
	p->ops->destroy(p);
}

/* An iteration with a shallower window than the one before speculated
 * for (random scenarios found it: a staging area that shrank): no
 * overhead, 4 groups of 10 us, each group's KV 15 us away (5 us launch,
 * 1 MB at 100 bytes/ns). The first iteration has depth 2: groups 0 and 1
 * share the link and land at 25 us (stall 25), group 2's KV 25-40 and
 * group 3's 35-50, so groups run 25-35, 35-45, 45-55, 55-65; from 45 and
 * 55 the next iteration's groups 0 and 1 are fetched, landing at 60 and
 * 70. The second, depth 1, starts at 65.001 us and takes over group 0's
 * KV alone: group 0 runs at once, 65.001-75.001; group 1's KV is fetched
 * again from then, 65.001-80.001 (the speculated copy, landing at 70,
 * counts for nothing), so group 1 runs 80.001-90.001, group 2 95.001-
 * 105.001, group 3 110.001-120.001: 55 us, stall 15 us. (Counting the
 * speculated copy for group 1 ran it before its KV, and the run failed
 * when that KV landed: "prefetch flow of group 1 of GPU 0 has no
 * iteration".) */
static void test_prefetch_shallower_window(void)
{
	struct ema_config cfg;
	struct ema_platform *p;
	struct ema_iteration it, it2;
	struct ema_error err = { 0 };

	plain_cfg(&cfg, 2);
	cfg.hw.iter_overhead_us = 0;
	p = make(&cfg);
	prefetch_iter(&it, 4000000);
	it.prefetch_depth = 2;
	prefetch_iter(&it2, 4000000);
	CU_ASSERT_EQUAL(start(p, &it, log_iter, (void *)1, NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->timer(p, 65001, start_iter_timer, &it2, NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->run(p, 0, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(g_log.n_res, 2);
	CU_ASSERT_EQUAL(g_log.res[0].end_ns, 65000);
	CU_ASSERT_EQUAL(g_log.res[0].stall_ns, 25000);
	CU_ASSERT_EQUAL(g_log.res[1].start_ns, 65001);
	CU_ASSERT_EQUAL(g_log.res[1].end_ns, 120001);
	CU_ASSERT_EQUAL(g_log.res[1].stall_ns, 15000);
	p->ops->destroy(p);
}

static void xfer_done(void *arg, int64_t now)
{
	log_timer(arg, now);
}

/* A 1 GiB copy 0 -> 1 runs at 395 GB/s from the start (no latency at that
 * size); iterations started at 100 us see 395 GB/s leaving GPU 0 (lender)
 * and entering GPU 1 (borrower). */
static void test_interference(void)
{
	struct ema_config cfg;
	struct ema_platform *p;
	struct ema_iteration a, b;
	struct ema_transfer t = { 0 };
	struct ema_timing ca, cb;
	struct ema_error err = { 0 };
	double f_lender = 1 + 1.122 * 395 / 4430.0;
	double f_borrower = 1 + 1.94 * 395 / 4430.0;

	h200x2_cfg(&cfg);
	p = make(&cfg);
	t.src_gpu = 0;
	t.dst_gpu = 1;
	t.n_pages = 1;
	t.bytes = 1ULL << 30;
	t.purpose = EMA_XFER_RECLAIM;
	t.method = EMA_COPY_PER_PAGE;
	CU_ASSERT_EQUAL(p->ops->transfer(p, &t, xfer_done, (void *)5, NULL), EMA_OK);
	decode_iter(&a, 0);
	decode_iter(&b, 1);
	ema_timing_iteration(&cfg.hw, &cfg.model, &a, &ca);
	ema_timing_iteration(&cfg.hw, &cfg.model, &b, &cb);
	CU_ASSERT(ca.memory_ns > ca.compute_ns);
	CU_ASSERT_EQUAL(p->ops->timer(p, 100000, start_iter_timer, &a, NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->timer(p, 100000, start_iter_timer, &b, NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->run(p, 0, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(g_log.n_res, 2);
	CU_ASSERT_EQUAL(g_log.res[0].end_ns - g_log.res[0].start_ns,
			llround(ca.overhead_ns + ca.memory_ns * f_lender));
	CU_ASSERT_EQUAL(g_log.res[1].end_ns - g_log.res[1].start_ns,
			llround(cb.overhead_ns + cb.memory_ns * f_borrower));
	/* the transfer arrives at 1 GiB / 395 GB/s */
	for (int i = 0; i < g_log.n; i++)
		if (g_log.who[i] == 5)
			CU_ASSERT_EQUAL(g_log.t[i], (int64_t)ceil((double)(1ULL << 30) / 395 - 1e-6));
	CU_ASSERT_EQUAL(p->ops->link_stats(p)->bytes[1][2], 1ULL << 30);
	CU_ASSERT_EQUAL(p->ops->link_stats(p)->bytes_by_purpose[EMA_XFER_RECLAIM], 1ULL << 30);
	p->ops->destroy(p);
}

/* Compute-bound prefill during the same transfer loses
 * interference_compute x 395 / 395. */
static void test_interference_compute(void)
{
	struct ema_config cfg;
	struct ema_platform *p;
	struct ema_iteration a;
	struct ema_transfer t = { 0 };
	struct ema_timing c;
	struct ema_error err = { 0 };

	h200x2_cfg(&cfg);
	p = make(&cfg);
	t.src_gpu = 1;
	t.dst_gpu = 0;
	t.n_pages = 1;
	t.bytes = 1ULL << 30;
	t.method = EMA_COPY_BATCH;
	CU_ASSERT_EQUAL(p->ops->transfer(p, &t, xfer_done, (void *)5, NULL), EMA_OK);
	decode_iter(&a, 0);
	a.flops = 8192 * 2 * 8.03e9;
	a.prefill_tokens = 8192;
	ema_timing_iteration(&cfg.hw, &cfg.model, &a, &c);
	CU_ASSERT(c.compute_ns > c.memory_ns * (1 + 1.94 * 395 / 4430.0));
	CU_ASSERT_EQUAL(p->ops->timer(p, 100000, start_iter_timer, &a, NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->run(p, 0, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(g_log.n_res, 1);
	CU_ASSERT_EQUAL(g_log.res[0].end_ns - g_log.res[0].start_ns,
			llround(c.overhead_ns + c.compute_ns * (1 + 0.007)));
	p->ops->destroy(p);
}

/* remote_direct: a 1 MB in-place read over an iteration of 40 us (20
 * overhead + max(10 local, 20 in place): they overlap) holds 25 bytes/ns
 * of link 1->0; a 4.8 MB transfer on it gets 75 until 40 us (3 MB), then
 * 100: 58 us. */
static void test_remote_direct_shares_link(void)
{
	struct ema_config cfg;
	struct ema_platform *p;
	struct ema_iteration it;
	struct ema_transfer t = { 0 };
	struct ema_error err = { 0 };

	plain_cfg(&cfg, 2);
	p = make(&cfg);
	prefetch_iter(&it, 1000000);
	it.weight_bytes = 10000000;
	it.prefetch_depth = 0;
	t.src_gpu = 1;
	t.dst_gpu = 0;
	t.n_pages = 1;
	t.bytes = 4800000;
	t.purpose = EMA_XFER_RECLAIM;
	t.method = EMA_COPY_PER_PAGE;
	CU_ASSERT_EQUAL(start(p, &it, log_iter, (void *)1, NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->transfer(p, &t, xfer_done, (void *)2, NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->run(p, 0, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(g_log.n, 2);
	CU_ASSERT_EQUAL(g_log.who[0], 1);
	CU_ASSERT_EQUAL(g_log.t[0], 40000);
	CU_ASSERT_EQUAL(g_log.who[1], 2);
	CU_ASSERT_EQUAL(g_log.t[1], 58000);
	CU_ASSERT_EQUAL(g_log.res[0].remote_bytes, 1000000);
	CU_ASSERT_EQUAL(p->ops->link_stats(p)->bytes[2][1], 5800000);
	p->ops->destroy(p);
}

/* An in-place read that contention slows holds its step: 1 MB spread
 * over the 40 us step (capped at 25 bytes/ns) shares GPU 1 -> 0 with four
 * reclaims (four copy engines), 20 bytes/ns each, so 0.8 MB has crossed
 * at 40 us. The step's own time is up but its reads are not: the other
 * 0.2 MB cross at 20 bytes/ns until 50 us, where the step ends (a 10 us
 * stall, counted in spread_wait_ns; until 2026-12-04 the step ended at
 * 40 us and the 0.2 MB were cut). The reclaims, 1 MB each by then, get 25
 * bytes/ns for their last 3.8 MB and end at 202 us. */
static void test_inplace_ends_with_its_step(void)
{
	struct ema_config cfg;
	struct ema_platform *p;
	struct ema_iteration it;
	struct ema_transfer t = { 0 };
	struct ema_error err = { 0 };

	plain_cfg(&cfg, 2);
	cfg.hw.copy_engines = 4;
	p = make(&cfg);
	prefetch_iter(&it, 1000000);
	it.weight_bytes = 10000000;
	it.prefetch_depth = 0;
	t.src_gpu = 1;
	t.dst_gpu = 0;
	t.n_pages = 1;
	t.bytes = 4800000;
	t.purpose = EMA_XFER_RECLAIM;
	t.method = EMA_COPY_PER_PAGE;
	CU_ASSERT_EQUAL(start(p, &it, log_iter, (void *)1, NULL), EMA_OK);
	for (int i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(p->ops->transfer(p, &t, xfer_done, (void *)2, NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->run(p, 0, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(g_log.n, 5);
	CU_ASSERT_EQUAL(g_log.who[0], 1);
	CU_ASSERT_EQUAL(g_log.t[0], 50000);
	CU_ASSERT_EQUAL(g_log.res[0].stall_ns, 10000);
	for (int i = 1; i < 5; i++) {
		CU_ASSERT_EQUAL(g_log.who[i], 2);
		CU_ASSERT_EQUAL(g_log.t[i], 202000);
	}
	CU_ASSERT_EQUAL(p->ops->link_stats(p)->spread_wait_ns, 10000);
	/* the bytes a step reads count when it starts, all of them */
	CU_ASSERT_EQUAL(p->ops->link_stats(p)->bytes_by_purpose[EMA_XFER_PREFETCH], 1000000);
	p->ops->destroy(p);
}

/* The time of one in-place iteration alone on a fresh platform. */
static int64_t inplace_alone(const struct ema_config *cfg, struct ema_iteration *it)
{
	struct ema_platform *p = make(cfg);
	struct ema_error err = { 0 };
	int64_t d = -1;

	CU_ASSERT_EQUAL(start(p, it, log_iter, (void *)1, NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->run(p, 0, &err), EMA_OK);
	CU_ASSERT_EQUAL(g_log.n_res, 1);
	if (g_log.n_res == 1)
		d = g_log.res[0].end_ns - g_log.res[0].start_ns;
	p->ops->destroy(p);
	return d;
}

/* In place, local and remote reads overlap at inplace_overlap_efficiency
 * 0.8, each lender over its own link (remote_read_gbps 50 per link):
 * 40 MB local = 40 us; 20 us overhead first.
 *   1 MB from GPU 1 (20 us): 20 + max(40, 20) / 0.8 = 70 us
 *   3 MB from GPU 1 (60 us, link-bound): 20 + 60 / 0.8 = 95 us
 *   2 MB from GPU 1 and 2 MB from GPU 2, direct (40 us per link):
 *     20 + max(40, 40) / 0.8 = 70 us (one link's rate for both: 120)
 *   the same behind a switch (one ingress port, 80 us): 20 + 80 / 0.8 = 120 us
 *   nothing remote: 20 + 40 = 60 us (no overlap to lose) */
static void test_inplace_overlap(void)
{
	struct ema_config cfg;
	struct ema_iteration it;

	plain_cfg(&cfg, 3);
	cfg.hw.inplace_overlap_efficiency = 0.8;
	prefetch_iter(&it, 1000000);
	it.weight_bytes = 40000000;
	it.prefetch_depth = 0;
	CU_ASSERT_EQUAL(inplace_alone(&cfg, &it), 70000);
	it.remote[0].bytes = 3000000;
	CU_ASSERT_EQUAL(inplace_alone(&cfg, &it), 95000);
	it.remote[0].bytes = 2000000;
	it.remote[1] = it.remote[0];
	it.remote[1].gpu = 2;
	it.n_remote = 2;
	CU_ASSERT_EQUAL(inplace_alone(&cfg, &it), 70000);
	cfg.hw.topology = EMA_TOPO_SWITCH;
	CU_ASSERT_EQUAL(inplace_alone(&cfg, &it), 120000);
	it.n_remote = 0;
	CU_ASSERT_EQUAL(inplace_alone(&cfg, &it), 60000);
}

/* A staged step from two lenders of a direct topology writes into the
 * borrower's HBM over both links at once. No overhead, 4 groups, no
 * lookahead (window 0: each group's copy starts when the previous group
 * is done), 4 MB from each of GPUs 1 and 2: each group's 1 MB per lender
 * takes 5 us launch + 10 us at 100 GB/s, both links in parallel. Memory:
 * 36 + 8 MB at 1000 GB/s = 44 us, slowed by interference_borrower 1 x
 * (2 x min(4 MB / 44 us, 100)) / 1000 = 0.1818: 52 us, 13 us a group.
 * 4 x (15 + 13) = 112 us. (Capping both lenders at one link's 100 GB/s
 * gave 48.4 us of compute: 108.4 us.) */
static void test_staged_two_lenders_interference(void)
{
	struct ema_config cfg;
	struct ema_platform *p;
	struct ema_iteration it;
	struct ema_error err = { 0 };

	plain_cfg(&cfg, 3);
	cfg.hw.iter_overhead_us = 0;
	cfg.hw.interference_borrower = 1;
	p = make(&cfg);
	prefetch_iter(&it, 4000000);
	it.remote[1] = it.remote[0];
	it.remote[1].gpu = 2;
	it.n_remote = 2;
	it.window_depth = 0;
	CU_ASSERT_EQUAL(p->ops->iteration(p, &it, log_iter, (void *)1, NULL), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->run(p, 0, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(g_log.n_res, 1);
	CU_ASSERT_EQUAL(g_log.res[0].end_ns - g_log.res[0].start_ns, 112000);
	CU_ASSERT_EQUAL(g_log.res[0].stall_ns, 60000);
	p->ops->destroy(p);
}

static void test_horizon_and_stop(void)
{
	struct ema_config cfg;
	struct ema_platform *p;
	struct ema_error err = { 0 };

	plain_cfg(&cfg, 2);
	p = make(&cfg);
	p->ops->timer(p, 1000000, log_timer, (void *)1, NULL);
	p->ops->timer(p, 2000000, log_timer, (void *)2, NULL);
	p->ops->timer(p, 3000000, log_timer, (void *)3, NULL);
	CU_ASSERT_EQUAL(p->ops->run(p, 2500000, &err), EMA_OK);
	CU_ASSERT_EQUAL(g_log.n, 2);
	CU_ASSERT_EQUAL(p->ops->now(p), 2500000);
	CU_ASSERT_EQUAL(p->ops->run(p, 0, &err), EMA_OK);
	CU_ASSERT_EQUAL(g_log.n, 3);
	CU_ASSERT_EQUAL(p->ops->now(p), 3000000);
	/* stop from a callback leaves the rest pending */
	p->ops->timer(p, 4000000, stop_timer, (void *)4, NULL);
	p->ops->timer(p, 4000000, log_timer, (void *)5, NULL);
	CU_ASSERT_EQUAL(p->ops->run(p, 0, &err), EMA_OK);
	CU_ASSERT_EQUAL(g_log.n, 4);
	CU_ASSERT_EQUAL(p->ops->run(p, 0, &err), EMA_OK);
	CU_ASSERT_EQUAL(g_log.n, 5);
	CU_ASSERT_EQUAL(p->ops->events(p), 5);
	p->ops->destroy(p);
}

/* A mix of everything, driven from callbacks; run twice. */
struct script {
	struct ema_platform *p;
	struct ema_iteration it[2];
	int rounds;
	int64_t trace[256];
	int n;
};

static void script_note(struct script *s, int64_t v)
{
	if (s->n < 256)
		s->trace[s->n++] = v;
}

static void script_xfer(void *arg, int64_t now)
{
	script_note(arg, now);
}

static void script_iter(void *arg, const struct ema_iteration_result *r)
{
	struct script *s = arg;
	struct ema_transfer t = { 0 };
	int gpu = r->end_ns % 2 == 0 ? 0 : 1;

	script_note(s, r->end_ns);
	script_note(s, r->stall_ns);
	if (s->rounds-- <= 0)
		return;
	t.src_gpu = 1 - gpu;
	t.dst_gpu = s->rounds % 3 == 0 ? EMA_HOST : gpu;
	if (t.dst_gpu == t.src_gpu)
		t.dst_gpu = EMA_HOST;
	t.n_pages = 1 + s->rounds % 7;
	t.bytes = (uint64_t)t.n_pages * (16384u << (s->rounds % 8));
	t.method = (enum ema_copy_method)(s->rounds % 3);
	t.purpose = (enum ema_transfer_purpose)(s->rounds % EMA_XFER_PURPOSES);
	CU_ASSERT_EQUAL(s->p->ops->transfer(s->p, &t, script_xfer, s, NULL), EMA_OK);
	for (int g = 0; g < 2; g++) {
		s->it[g].prefetch_depth = s->rounds % 3;
		s->it[g].remote[0].bytes = 1000000u * (uint64_t)(1 + s->rounds % 5);
	}
	/* the GPU whose iteration ended starts its next one */
	for (int g = 0; g < 2; g++)
		if (start(s->p, &s->it[g], script_iter, s, NULL) == EMA_OK)
			break;
}

static void run_script(struct script *s, uint64_t *events)
{
	struct ema_config cfg;
	struct ema_error err = { 0 };

	h200x2_cfg(&cfg);
	memset(s, 0, sizeof *s);
	CU_ASSERT_EQUAL_FATAL(ema_sim_platform_create(&s->p, params_of(&cfg), NULL, &err), EMA_OK);
	s->rounds = 60;
	for (int g = 0; g < 2; g++) {
		decode_iter(&s->it[g], g);
		s->it[g].weight_bytes /= 100;
		s->it[g].kv_local_bytes /= 100;
		s->it[g].n_remote = 1;
		s->it[g].remote[0].gpu = 1 - g;
		s->it[g].remote[0].n_pages = 16;
		s->it[g].method = (enum ema_copy_method)g;
		CU_ASSERT_EQUAL(start(s->p, &s->it[g], script_iter, s, NULL), EMA_OK);
	}
	CU_ASSERT_EQUAL(s->p->ops->run(s->p, 0, &err), EMA_OK);
	*events = s->p->ops->events(s->p);
	s->p->ops->destroy(s->p);
}

static void test_determinism(void)
{
	static struct script a, b;
	uint64_t ea, eb;

	run_script(&a, &ea);
	run_script(&b, &eb);
	CU_ASSERT(ea > 100);
	CU_ASSERT_EQUAL(ea, eb);
	CU_ASSERT(a.n > 100);
	CU_ASSERT_EQUAL(a.n, b.n);
	CU_ASSERT_EQUAL(memcmp(a.trace, b.trace, sizeof a.trace), 0);
	for (int i = 2; i < a.n; i++)
		CU_ASSERT(a.trace[i] >= 0);
}

static void test_errors(void)
{
	struct ema_config cfg;
	struct ema_platform *p;
	struct ema_iteration it;
	struct ema_transfer t = { 0 };
	struct ema_error err = { 0 };

	plain_cfg(&cfg, 2);
	cfg.hw.link_gbps = 0;
	p = (struct ema_platform *)&cfg;
	CU_ASSERT_EQUAL(ema_sim_platform_create(&p, params_of(&cfg), NULL, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NULL(p);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "plain: link_gbps must be > 0, got 0"));

	plain_cfg(&cfg, 2);
	p = make(&cfg);
	CU_ASSERT_STRING_EQUAL(ema_sim_platform_last_error(p), "");
	p->ops->timer(p, 1000, log_timer, NULL, NULL);
	CU_ASSERT_EQUAL(p->ops->run(p, 0, &err), EMA_OK);
	CU_ASSERT_EQUAL(p->ops->timer(p, 999, log_timer, NULL, NULL), EMA_ERR_INTERNAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(ema_sim_platform_last_error(p),
				      "timer at 999 ns, before now (1000 ns)"));
	decode_iter(&it, 5);
	CU_ASSERT_EQUAL(start(p, &it, log_iter, NULL, NULL), EMA_ERR_INTERNAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(ema_sim_platform_last_error(p),
				      "iteration on GPU 5, expected 0..1"));
	decode_iter(&it, 0);
	CU_ASSERT_EQUAL(start(p, &it, log_iter, NULL, NULL), EMA_OK);
	CU_ASSERT_EQUAL(start(p, &it, log_iter, NULL, NULL), EMA_ERR_INTERNAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(ema_sim_platform_last_error(p),
				      "GPU 0 already runs an iteration"));
	decode_iter(&it, 1);
	it.n_remote = 1;
	it.remote[0].gpu = 1;
	it.remote[0].bytes = 10;
	CU_ASSERT_EQUAL(start(p, &it, log_iter, NULL, NULL), EMA_ERR_INTERNAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(ema_sim_platform_last_error(p),
				      "remote KV on GPU 1 for an iteration on GPU 1"));
	it.n_remote = 0;
	it.prefetch_depth = -1;
	CU_ASSERT_EQUAL(start(p, &it, log_iter, NULL, NULL), EMA_ERR_INTERNAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(ema_sim_platform_last_error(p), "prefetch depth -1"));
	t.src_gpu = 7;
	t.dst_gpu = 0;
	t.bytes = 10;
	CU_ASSERT_EQUAL(p->ops->transfer(p, &t, xfer_done, NULL, NULL), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(ema_sim_platform_last_error(p),
				      "transfer 7 -> 0: expected GPUs 0..1 or host (-1)"));
	t.src_gpu = 1;
	t.purpose = (enum ema_transfer_purpose)99;
	CU_ASSERT_EQUAL(p->ops->transfer(p, &t, xfer_done, NULL, NULL), EMA_ERR_INTERNAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(ema_sim_platform_last_error(p), "purpose 99 unknown"));
	t.purpose = EMA_XFER_DEMOTE;
	CU_ASSERT_EQUAL(p->ops->transfer(p, &t, NULL, NULL, NULL), EMA_ERR_INTERNAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(ema_sim_platform_last_error(p), "without pages or callback"));
	/* failed ops left nothing behind: the one iteration completes */
	CU_ASSERT_EQUAL(p->ops->run(p, 0, &err), EMA_OK);
	CU_ASSERT_EQUAL(g_log.n_res, 1);
	CU_ASSERT_EQUAL(p->ops->link_stats(p)->bytes_by_purpose[EMA_XFER_DEMOTE], 0);
	p->ops->destroy(p);
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{ "an iteration alone takes the cost model's time", test_iteration_alone },
		{ "timers at the same time fire in scheduling order", test_timer_ties },
		{ "small prefetch hides: no stall, local end time", test_prefetch_small_hidden },
		{ "large prefetch stalls by the hand-computed amount", test_prefetch_large_stalls },
		{ "batched prefetch pays per piece, a slice of every page", test_prefetch_batch_pieces },
		{ "prefetch runs ahead into the next iteration", test_prefetch_across_iterations },
		{ "a window shallower than the last speculation", test_prefetch_shallower_window },
		{ "a pull keeps its measured share of the rate under load", test_prefetch_pull_share },
		{ "the prefetch window follows the staging area", test_prefetch_window_from_staging },
		{ "interference slows memory-bound work on both ends", test_interference },
		{ "interference on compute-bound work", test_interference_compute },
		{ "remote_direct reads occupy the link", test_remote_direct_shares_link },
		{ "in place: local and per-link remote reads overlap", test_inplace_overlap },
		{ "in place: a read slowed by contention holds its step", test_inplace_ends_with_its_step },
		{ "staged from two links: the borrower's HBM sees both", test_staged_two_lenders_interference },
		{ "horizon and stop end a run", test_horizon_and_stop },
		{ "same ops, same events and times", test_determinism },
		{ "failed ops say why", test_errors },
		{ "a leap goes where its iterations' events would", test_leap_order },
		{ "iteration_time: iteration()'s time, with transfers too", test_iteration_time },
		{ "iteration_time with an upper bound of the FLOPs", test_iteration_time_bound },
		{ "iteration_time of random steps is iteration()'s", test_iteration_time_random },
		{ "leap_times is iteration_time step by step", test_leap_times },
		{ "a leap's steps take the rates of transfers begun mid-leap", test_leap_retime },
		{ "cost model: steps without remote KV, shortcut and general path", test_timing_local_shortcut },
		{ NULL, NULL }
	};

	return ema_test_run("sim_platform", cases);
}
