/* test_flownet.c: the fluid link model: hand-computed max-min shares on
 * direct and switch topologies, rate caps, latency and copy-engine
 * queueing, exact completion times, the H200x2 figures of doc/reference-figures.md
 * within 5%, invariants over random flows, and every error message. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ema_error.h"
#include "flownet.h"
#include "step_cost.h"
#include "test_main.h"

#define MIB (1024.0 * 1024.0)
#define KIB 1024.0

/* Round figures for hand computation: 100 GB/s = 100 bytes per ns. */
static void plain_hw(struct ema_hw_profile *hw, int n, const char *topo)
{
	memset(hw, 0, sizeof *hw);
	snprintf(hw->name, sizeof hw->name, "plain");
	hw->topology = strcmp(topo, "switch") == 0 ? EMA_TOPO_SWITCH : EMA_TOPO_DIRECT;
	hw->n_gpus = n;
	hw->hbm_read_gbps = 1000;
	hw->hbm_efficiency = 1;
	hw->link_gbps = 100;
	hw->host_link_gbps = 10;
	hw->copy_engines = 8;
}

/* profiles/hardware/h200x2.json, by hand (doc/reference-figures.md). */
static void h200x2_hw(struct ema_hw_profile *hw)
{
	static const struct ema_curve_point curve[] = {
		{ 1048576, 65.948 }, { 4194304, 167 }, { 16777216, 318 },
		{ 67108864, 369 }, { 268435456, 390 }, { 1073741824, 395 },
	};

	memset(hw, 0, sizeof *hw);
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
}

#define REC_MAX 256
struct rec {
	int n;
	uint64_t tag[REC_MAX];
	int64_t t[REC_MAX];
};

static void rec_fn(void *arg, uint64_t id, uint64_t tag, int64_t now)
{
	struct rec *r = arg;

	(void)id;
	if (r->n < REC_MAX) {
		r->tag[r->n] = tag;
		r->t[r->n] = now;
	}
	r->n++;
}

static void run_all(struct ema_flownet *net, struct rec *r)
{
	struct ema_error err = { 0 };
	int64_t t;

	while ((t = ema_flownet_next_event_time(net)) != INT64_MAX)
		CU_ASSERT_EQUAL_FATAL(ema_flownet_advance(net, t, rec_fn, r, &err), EMA_OK);
}

static int64_t done_at(const struct rec *r, uint64_t tag)
{
	for (int i = 0; i < r->n && i < REC_MAX; i++)
		if (r->tag[i] == tag)
			return r->t[i];
	return -1;
}

static uint64_t raw(struct ema_flownet *net, int64_t now, int s, int d, double bytes,
		    int64_t lat, double cap, bool engine, uint64_t tag)
{
	struct ema_flow_params p = { s, d, (uint64_t)bytes, lat, cap, engine, false };
	struct ema_error err = { 0 };
	uint64_t id = 0;

	CU_ASSERT_EQUAL(ema_flownet_start_params(net, now, &p, tag, &id, &err), EMA_OK);
	return id;
}

static void test_two_flows_half_each(void)
{
	struct ema_hw_profile hw;
	struct ema_flownet *net;
	struct ema_error err = { 0 };
	struct rec r = { 0 };
	uint64_t a, b;

	plain_hw(&hw, 2, "direct");
	CU_ASSERT_EQUAL_FATAL(ema_flownet_create(&net, &hw, &err), EMA_OK);
	a = raw(net, 0, 1, 0, 1e6, 0, 0, false, 1);
	b = raw(net, 0, 1, 0, 1e6, 0, 0, false, 2);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, a), 50, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, b), 50, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_hbm_out_gbps(net, 1), 100, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_hbm_in_gbps(net, 0), 100, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_hbm_out_gbps(net, 0), 0, 1e-9);
	/* the other direction is a separate link */
	raw(net, 0, 0, 1, 1e6, 0, 0, false, 3);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, a), 50, 1e-9);
	run_all(net, &r);
	CU_ASSERT_EQUAL(r.n, 3);
	/* simultaneous completions come in start order */
	CU_ASSERT_EQUAL(r.tag[0], 3);
	CU_ASSERT_EQUAL(r.tag[1], 1);
	CU_ASSERT_EQUAL(r.tag[2], 2);
	CU_ASSERT_EQUAL(r.t[0], 10000);
	CU_ASSERT_EQUAL(r.t[1], 20000);
	CU_ASSERT_EQUAL(r.t[2], 20000);
	CU_ASSERT_EQUAL(ema_flownet_rate_gbps(net, a), -1);
	CU_ASSERT_EQUAL(ema_flownet_active(net), 0);
	ema_flownet_destroy(net);
}

/* An in-place read (to_sm) reads the source's HBM and writes no HBM:
 * of two flows 1 -> 0 at 50 GB/s each, GPU 1 sends 100 GB/s out of its
 * HBM and GPU 0 takes 50 into its HBM, the copy's. */
static void test_in_place_reads_skip_dst_hbm(void)
{
	struct ema_hw_profile hw;
	struct ema_flownet *net;
	struct ema_error err = { 0 };
	struct ema_flow_params p = { 1, 0, 1000000, 0, 0, false, true };
	struct rec r = { 0 };
	uint64_t id = 0;

	plain_hw(&hw, 2, "direct");
	CU_ASSERT_EQUAL_FATAL(ema_flownet_create(&net, &hw, &err), EMA_OK);
	CU_ASSERT_EQUAL(ema_flownet_start_params(net, 0, &p, 1, &id, &err), EMA_OK);
	raw(net, 0, 1, 0, 1e6, 0, 0, false, 2);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, id), 50, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_hbm_out_gbps(net, 1), 100, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_hbm_in_gbps(net, 0), 50, 1e-9);
	run_all(net, &r);
	CU_ASSERT_EQUAL(r.n, 2);
	ema_flownet_destroy(net);
}

static void test_cap_leaves_rest(void)
{
	struct ema_hw_profile hw;
	struct ema_flownet *net;
	struct ema_error err = { 0 };
	struct rec r = { 0 };
	uint64_t a, b;

	plain_hw(&hw, 2, "direct");
	CU_ASSERT_EQUAL_FATAL(ema_flownet_create(&net, &hw, &err), EMA_OK);
	a = raw(net, 0, 0, 1, 3e5, 0, 30, false, 1);
	b = raw(net, 0, 0, 1, 7e5, 0, 0, false, 2);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, a), 30, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, b), 70, 1e-9);
	run_all(net, &r);
	CU_ASSERT_EQUAL(done_at(&r, 1), 10000);
	CU_ASSERT_EQUAL(done_at(&r, 2), 10000);
	ema_flownet_destroy(net);
}

/* Caps that fit, a third flow that overflows the link (max-min shares),
 * and its end giving the others their caps back: A 30 and B 40 of 100;
 * with C (cap 60) the level 33.3 freezes A at 30, B and C share 70; C's
 * 3500 bytes at 35 end at 100 ns. */
static void test_fit_overflow_and_back(void)
{
	struct ema_hw_profile hw;
	struct ema_flownet *net;
	struct ema_error err = { 0 };
	struct rec r = { 0 };
	uint64_t a, b, c;

	plain_hw(&hw, 2, "direct");
	CU_ASSERT_EQUAL_FATAL(ema_flownet_create(&net, &hw, &err), EMA_OK);
	a = raw(net, 0, 0, 1, 1e6, 0, 30, false, 1);
	b = raw(net, 0, 0, 1, 1e6, 0, 40, false, 2);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, a), 30, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, b), 40, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_hbm_out_gbps(net, 0), 70, 1e-9);
	c = raw(net, 0, 0, 1, 3500, 0, 60, false, 3);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, a), 30, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, b), 35, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, c), 35, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_hbm_in_gbps(net, 1), 100, 1e-9);
	CU_ASSERT_EQUAL(ema_flownet_selfcheck(net), 0);
	CU_ASSERT_EQUAL(ema_flownet_next_event_time(net), 100);
	CU_ASSERT_EQUAL(ema_flownet_advance(net, 100, rec_fn, &r, &err), EMA_OK);
	CU_ASSERT_EQUAL(r.n, 1);
	CU_ASSERT_EQUAL(done_at(&r, 3), 100);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, b), 40, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_hbm_out_gbps(net, 0), 70, 1e-9);
	CU_ASSERT_EQUAL(ema_flownet_flows_at(net, 1), 2);
	CU_ASSERT_EQUAL(ema_flownet_selfcheck(net), 0);
	/* A: 1e6 - 100 * 30 bytes left at 30; B: 1e6 - 100 * 35 at 40 */
	run_all(net, &r);
	CU_ASSERT_EQUAL(done_at(&r, 1), 100 + (int64_t)ceil((1e6 - 3000) / 30 - 1e-6));
	CU_ASSERT_EQUAL(done_at(&r, 2), 100 + (int64_t)ceil((1e6 - 3500) / 40 - 1e-6));
	CU_ASSERT_EQUAL(ema_flownet_flows_at(net, 1), 0);
	CU_ASSERT_EQUAL(ema_flownet_selfcheck(net), 0);
	ema_flownet_destroy(net);
}

static void test_switch_ports(void)
{
	struct ema_hw_profile hw;
	struct ema_flownet *net;
	struct ema_error err = { 0 };
	struct rec r = { 0 };
	uint64_t a, b, c;

	/* two borrowers (1, 2) pull from one lender (0): its egress port */
	plain_hw(&hw, 4, "switch");
	CU_ASSERT_EQUAL_FATAL(ema_flownet_create(&net, &hw, &err), EMA_OK);
	a = raw(net, 0, 0, 1, 1e6, 0, 0, false, 1);
	b = raw(net, 0, 0, 2, 1e6, 0, 0, false, 2);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, a), 50, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, b), 50, 1e-9);
	/* an unrelated pair is not affected */
	c = raw(net, 0, 3, 1, 1e6, 0, 0, false, 3);
	/* 1's ingress now carries a (50) and c: c gets the other 50 */
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, c), 50, 1e-9);
	run_all(net, &r);
	CU_ASSERT_EQUAL(r.n, 3);
	ema_flownet_destroy(net);

	/* one borrower (0) pulls from two lenders: its ingress port binds */
	CU_ASSERT_EQUAL_FATAL(ema_flownet_create(&net, &hw, &err), EMA_OK);
	a = raw(net, 0, 1, 0, 1e6, 0, 0, false, 1);
	b = raw(net, 0, 2, 0, 1e6, 0, 0, false, 2);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, a), 50, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, b), 50, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_hbm_in_gbps(net, 0), 100, 1e-9);
	ema_flownet_destroy(net);

	/* the same on a direct topology: two links, full rate each */
	plain_hw(&hw, 3, "direct");
	CU_ASSERT_EQUAL_FATAL(ema_flownet_create(&net, &hw, &err), EMA_OK);
	a = raw(net, 0, 1, 0, 1e6, 0, 0, false, 1);
	b = raw(net, 0, 2, 0, 1e6, 0, 0, false, 2);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, a), 100, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, b), 100, 1e-9);
	ema_flownet_destroy(net);
}

/* Max-min with a cap on a switch: 0->1 capped at 20, 0->2 and 1->2 share
 * ingress(2) at 50 each; egress(0) has 30 spare, which nobody can use. */
static void test_switch_maxmin(void)
{
	struct ema_hw_profile hw;
	struct ema_flownet *net;
	struct ema_error err = { 0 };
	uint64_t a, b, c;

	plain_hw(&hw, 4, "switch");
	CU_ASSERT_EQUAL_FATAL(ema_flownet_create(&net, &hw, &err), EMA_OK);
	a = raw(net, 0, 0, 1, 1e6, 0, 20, false, 1);
	b = raw(net, 0, 0, 2, 1e6, 0, 0, false, 2);
	c = raw(net, 0, 1, 2, 1e6, 0, 0, false, 3);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, a), 20, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, b), 50, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, c), 50, 1e-9);
	ema_flownet_destroy(net);
}

/* A GB200 NVL72-sized switch domain by hand (72 GPUs, 900 GB/s each way
 * per GPU port, gb200nvl72's figures), as issue 36 asks of the switch
 * model: one GPU (71) reading in place from three lenders (0, 35, 70)
 * shares its one port, 300 each; lender 0, also serving GPU 1, gives it
 * what its egress has left past the 300 (600); twenty disjoint pairs at
 * once each get the full 900 (the fabric is non-blocking). By hand: the
 * pairs' 1.8 MB end at 2000 ns, 0->1's at 3000, the three reads at
 * 6000. The cost model charges a step's remote reads on a switch the
 * same way: their sum over the borrower's port, not the slowest pair. */
static void test_switch_72(void)
{
	struct ema_hw_profile hw;
	struct ema_flownet *net;
	struct ema_error err = { 0 };
	struct rec r = { 0 };
	struct ema_flow_params p = { 0, 71, 1800000, 0, 0, false, true };
	uint64_t id[3], e, pair[20];
	const int lender[3] = { 0, 35, 70 };

	plain_hw(&hw, 72, "switch");
	hw.link_gbps = 900;
	hw.host_link_gbps = 225;
	CU_ASSERT_EQUAL_FATAL(ema_flownet_create(&net, &hw, &err), EMA_OK);
	for (int i = 0; i < 3; i++) {
		p.src = lender[i];
		CU_ASSERT_EQUAL(ema_flownet_start_params(net, 0, &p, (uint64_t)(100 + i), &id[i], &err),
				EMA_OK);
	}
	e = raw(net, 0, 0, 1, 1.8e6, 0, 0, false, 200);
	for (int i = 0; i < 20; i++)
		pair[i] = raw(net, 0, 10 + i, 40 + i, 1.8e6, 0, 0, false, (uint64_t)(300 + i));
	for (int i = 0; i < 3; i++)
		CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, id[i]), 300, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, e), 600, 1e-9);
	for (int i = 0; i < 20; i++)
		CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, pair[i]), 900, 1e-9);
	/* in-place reads leave the lenders' HBM, enter no HBM */
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_hbm_out_gbps(net, 0), 900, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_hbm_in_gbps(net, 71), 0, 1e-9);
	CU_ASSERT_EQUAL(ema_flownet_selfcheck(net), 0);
	run_all(net, &r);
	CU_ASSERT_EQUAL(r.n, 24);
	for (int i = 0; i < 20; i++)
		CU_ASSERT_EQUAL(done_at(&r, (uint64_t)(300 + i)), 2000);
	CU_ASSERT_EQUAL(done_at(&r, 200), 3000);
	for (int i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(done_at(&r, (uint64_t)(100 + i)), 6000);
	ema_flownet_destroy(net);
	{
		const double bytes[3] = { 0.9e6, 0.9e6, 1.8e6 };

		CU_ASSERT_DOUBLE_EQUAL(ema_cost_link_ns(&hw, 900, bytes, 3), 4000, 1e-9);
		hw.topology = EMA_TOPO_DIRECT;
		CU_ASSERT_DOUBLE_EQUAL(ema_cost_link_ns(&hw, 900, bytes, 3), 2000, 1e-9);
	}
}

static void test_release_speeds_up(void)
{
	struct ema_hw_profile hw;
	struct ema_flownet *net;
	struct ema_error err = { 0 };
	struct rec r = { 0 };
	uint64_t b;

	plain_hw(&hw, 2, "direct");
	CU_ASSERT_EQUAL_FATAL(ema_flownet_create(&net, &hw, &err), EMA_OK);
	raw(net, 0, 0, 1, 1e6, 0, 0, false, 1);
	b = raw(net, 0, 0, 1, 3e6, 0, 0, false, 2);
	CU_ASSERT_EQUAL(ema_flownet_next_event_time(net), 20000);
	CU_ASSERT_EQUAL(ema_flownet_advance(net, 19999, rec_fn, &r, &err), EMA_OK);
	CU_ASSERT_EQUAL(r.n, 0);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, b), 50, 1e-9);
	CU_ASSERT_EQUAL(ema_flownet_advance(net, 20000, rec_fn, &r, &err), EMA_OK);
	CU_ASSERT_EQUAL(r.n, 1);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, b), 100, 1e-9);
	/* 2e6 bytes left at 100 bytes/ns */
	CU_ASSERT_EQUAL(ema_flownet_next_event_time(net), 40000);
	/* a third flow at 30000 halves it again: 1e6 left at 30000, 50/ns */
	raw(net, 30000, 1, 0, 1e6, 0, 0, false, 3); /* other direction: no effect */
	raw(net, 30000, 0, 1, 1e6, 0, 0, false, 4);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, b), 50, 1e-9);
	run_all(net, &r);
	CU_ASSERT_EQUAL(done_at(&r, 3), 40000);
	CU_ASSERT_EQUAL(done_at(&r, 2), 50000);
	CU_ASSERT_EQUAL(done_at(&r, 4), 50000);
	ema_flownet_destroy(net);
}

static void test_latency_phase(void)
{
	struct ema_hw_profile hw;
	struct ema_flownet *net;
	struct ema_error err = { 0 };
	struct rec r = { 0 };
	uint64_t a, b;

	plain_hw(&hw, 2, "direct");
	CU_ASSERT_EQUAL_FATAL(ema_flownet_create(&net, &hw, &err), EMA_OK);
	a = raw(net, 0, 0, 1, 1e6, 5000, 0, false, 1);
	b = raw(net, 0, 0, 1, 1e6, 0, 0, false, 2);
	/* the latency phase uses no bandwidth */
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, a), 0, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, b), 100, 1e-9);
	CU_ASSERT_EQUAL(ema_flownet_next_event_time(net), 5000);
	/* b: 5e5 by 5000, then 50/ns: done at 15000; a: 5e5 at 50 by 15000,
	 * then 5e5 at 100: done at 20000 */
	run_all(net, &r);
	CU_ASSERT_EQUAL(done_at(&r, 2), 15000);
	CU_ASSERT_EQUAL(done_at(&r, 1), 20000);
	/* a zero-byte flow completes when its latency ends */
	raw(net, 20000, 0, 1, 0, 700, 0, true, 3);
	run_all(net, &r);
	CU_ASSERT_EQUAL(done_at(&r, 3), 20700);
	ema_flownet_destroy(net);
}

static void test_copy_engine_queue(void)
{
	struct ema_hw_profile hw;
	struct ema_flownet *net;
	struct ema_error err = { 0 };
	struct rec r = { 0 };

	plain_hw(&hw, 3, "direct");
	hw.copy_engines = 1;
	CU_ASSERT_EQUAL_FATAL(ema_flownet_create(&net, &hw, &err), EMA_OK);
	/* GPU 0 pulls from 1 and 2: one engine, so the second waits */
	CU_ASSERT_EQUAL(ema_flownet_start(net, 0, 1, 0, 1000000, 1, EMA_COPY_PER_PAGE, 1, NULL, &err), EMA_OK);
	CU_ASSERT_EQUAL(ema_flownet_start(net, 0, 2, 0, 1000000, 1, EMA_COPY_BATCH, 2, NULL, &err), EMA_OK);
	/* a host transfer into GPU 0 uses GPU 0's engine too */
	CU_ASSERT_EQUAL(ema_flownet_start(net, 0, EMA_HOST, 0, 100000, 1, EMA_COPY_PER_PAGE, 3, NULL, &err), EMA_OK);
	/* GPU 1 pulling from 0 uses its own engine: not queued */
	CU_ASSERT_EQUAL(ema_flownet_start(net, 0, 0, 1, 1000000, 1, EMA_COPY_PER_PAGE, 4, NULL, &err), EMA_OK);
	/* a gather kernel uses SMs: not queued; 5 us launch, no cap here */
	CU_ASSERT_EQUAL(ema_flownet_start(net, 0, 2, 0, 500000, 4, EMA_COPY_GATHER, 5, NULL, &err), EMA_OK);
	CU_ASSERT_EQUAL(ema_flownet_queued(net), 2);
	CU_ASSERT_EQUAL(ema_flownet_active(net), 5);
	run_all(net, &r);
	CU_ASSERT_EQUAL(done_at(&r, 1), 10000);
	CU_ASSERT_EQUAL(done_at(&r, 4), 10000);
	/* gather: 5000 launch, then link 2->0 alone (flow 2 still queued):
	 * 5e5 bytes at 100 from 5000 ends at 10000 */
	CU_ASSERT_EQUAL(done_at(&r, 5), 10000);
	/* FIFO: flow 2 next (10000..20000), then the host flow: 1e5 at 10 */
	CU_ASSERT_EQUAL(done_at(&r, 2), 20000);
	CU_ASSERT_EQUAL(done_at(&r, 3), 30000);
	CU_ASSERT_EQUAL(r.tag[0], 1);
	CU_ASSERT_EQUAL(r.tag[1], 4);
	CU_ASSERT_EQUAL(r.tag[2], 5);
	ema_flownet_destroy(net);
}

/* A cancelled flow leaves at once, without its callback: the other
 * flow on its link gets the whole link from then on, and a copy engine
 * it held goes to the flow queued for it. */
static void test_cancel(void)
{
	struct ema_hw_profile hw;
	struct ema_flownet *net;
	struct ema_error err = { 0 };
	struct rec r = { 0 };
	uint64_t a, b, c, d;
	double left = -1;

	plain_hw(&hw, 2, "direct");
	hw.copy_engines = 1;
	CU_ASSERT_EQUAL_FATAL(ema_flownet_create(&net, &hw, &err), EMA_OK);
	a = raw(net, 0, 0, 1, 1e6, 0, 0, false, 1);
	b = raw(net, 0, 0, 1, 3e6, 0, 0, false, 2);
	/* 50 bytes/ns each; at 10000 a has 5e5 left */
	CU_ASSERT_EQUAL(ema_flownet_advance(net, 10000, rec_fn, &r, &err), EMA_OK);
	CU_ASSERT_EQUAL(ema_flownet_cancel(net, 10000, &a, 1, &left, &err), 1);
	CU_ASSERT_DOUBLE_EQUAL(left, 5e5, 1e-6);
	CU_ASSERT_EQUAL(ema_flownet_active(net), 1);
	CU_ASSERT_EQUAL(ema_flownet_flows_at(net, 0), 1);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, b), 100, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_hbm_out_gbps(net, 0), 100, 1e-9);
	CU_ASSERT_EQUAL(ema_flownet_selfcheck(net), 0);
	/* gone, and never twice; an id never started is unknown */
	CU_ASSERT_EQUAL(ema_flownet_cancel(net, 10000, &a, 1, &left, &err), 0);
	CU_ASSERT_DOUBLE_EQUAL(left, 0, 0);
	{
		const uint64_t unknown = 999;

		CU_ASSERT_EQUAL(ema_flownet_cancel(net, 10000, &unknown, 1, NULL, &err), 0);
		CU_ASSERT_EQUAL(ema_flownet_cancel(net, 10000, &unknown, 0, NULL, &err), 0);
	}
	/* b: 2.5e6 left at 10000, at 100/ns: done at 35000, a never */
	run_all(net, &r);
	CU_ASSERT_EQUAL(r.n, 1);
	CU_ASSERT_EQUAL(done_at(&r, 2), 35000);
	CU_ASSERT_EQUAL(done_at(&r, 1), -1);
	/* GPU 1 pulls c then d on its one engine: d waits until c is
	 * cancelled at 40000, then moves 1e6 at 100/ns */
	c = raw(net, 35000, 0, 1, 1e6, 0, 0, true, 3);
	d = raw(net, 35000, 0, 1, 1e6, 0, 0, true, 4);
	CU_ASSERT_EQUAL(ema_flownet_queued(net), 1);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, d), 0, 0);
	CU_ASSERT_EQUAL(ema_flownet_cancel(net, 40000, &c, 1, &left, &err), 1);
	CU_ASSERT_DOUBLE_EQUAL(left, 5e5, 1e-6);
	CU_ASSERT_EQUAL(ema_flownet_queued(net), 0);
	CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, d), 100, 1e-9);
	CU_ASSERT_EQUAL(ema_flownet_selfcheck(net), 0);
	run_all(net, &r);
	CU_ASSERT_EQUAL(done_at(&r, 4), 50000);
	CU_ASSERT_EQUAL(done_at(&r, 3), -1);
	/* a queued flow cancelled holds no engine: the next one still waits */
	c = raw(net, 50000, 0, 1, 1e6, 0, 0, true, 5);
	d = raw(net, 50000, 0, 1, 1e6, 0, 0, true, 6);
	raw(net, 50000, 0, 1, 1e6, 0, 0, true, 7);
	CU_ASSERT_EQUAL(ema_flownet_cancel(net, 50000, &d, 1, &left, &err), 1);
	CU_ASSERT_DOUBLE_EQUAL(left, 1e6, 1e-6);
	CU_ASSERT_EQUAL(ema_flownet_queued(net), 1);
	CU_ASSERT_EQUAL(ema_flownet_selfcheck(net), 0);
	run_all(net, &r);
	CU_ASSERT_EQUAL(done_at(&r, 5), 60000);
	CU_ASSERT_EQUAL(done_at(&r, 7), 70000);
	CU_ASSERT_EQUAL(done_at(&r, 6), -1);
	/* three at once, one of them unknown: the fourth flow has the link */
	{
		uint64_t ids[3];

		ids[0] = raw(net, 70000, 0, 1, 1e6, 0, 0, false, 8);
		ids[1] = raw(net, 70000, 0, 1, 1e6, 0, 0, false, 9);
		ids[2] = 12345;
		d = raw(net, 70000, 0, 1, 1e6, 0, 0, false, 10);
		/* 100/3 bytes/ns each until 73000: 1e5 moved each */
		CU_ASSERT_EQUAL(ema_flownet_cancel(net, 73000, ids, 3, &left, &err), 2);
		CU_ASSERT_DOUBLE_EQUAL(left, 2 * 9e5, 1e-3);
		CU_ASSERT_DOUBLE_EQUAL(ema_flownet_rate_gbps(net, d), 100, 1e-9);
		CU_ASSERT_EQUAL(ema_flownet_selfcheck(net), 0);
		run_all(net, &r);
		CU_ASSERT_EQUAL(done_at(&r, 10), 82000);
		CU_ASSERT_EQUAL(done_at(&r, 8), -1);
		CU_ASSERT_EQUAL(done_at(&r, 9), -1);
	}
	(void)c;
	ema_flownet_destroy(net);
}

/* Effective GB/s of one transfer alone: bytes / completion time. */
static double alone_gbps(const struct ema_hw_profile *hw, int s, int d, double bytes,
			 int n_pages, enum ema_copy_method m, int64_t *t_out)
{
	struct ema_flownet *net;
	struct ema_error err = { 0 };
	struct rec r = { 0 };

	if (ema_flownet_create(&net, hw, &err) != EMA_OK)
		return -1;
	CU_ASSERT_EQUAL(ema_flownet_start(net, 0, s, d, (uint64_t)bytes, n_pages, m, 1, NULL, &err), EMA_OK);
	run_all(net, &r);
	ema_flownet_destroy(net);
	CU_ASSERT_EQUAL(r.n, 1);
	if (t_out)
		*t_out = r.t[0];
	return r.n == 1 && r.t[0] > 0 ? bytes / (double)r.t[0] : -1;
}

static void check5(const char *what, double got, double want)
{
	bool ok = fabs(got - want) <= 0.05 * want;

	if (!ok)
		fprintf(stderr, "  %s: %.3f, expected %.3f +- 5%%\n", what, got, want);
	CU_ASSERT(ok);
}

static void test_h200_single_copy(void)
{
	struct ema_hw_profile hw;
	static const double sizes[] = { 4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB, 1024 * MIB };
	static const double want[] = { 167, 318, 369, 390, 395 };
	int64_t t;

	h200x2_hw(&hw);
	for (int i = 0; i < 5; i++) {
		char what[64];

		snprintf(what, sizeof what, "single copy %.0f MiB", sizes[i] / MIB);
		check5(what, alone_gbps(&hw, 1, 0, sizes[i], 1, EMA_COPY_PER_PAGE, NULL), want[i]);
		check5(what, alone_gbps(&hw, 0, 1, sizes[i], 1, EMA_COPY_BATCH, NULL), want[i]);
	}
	/* any size <= 1 MiB: ~15.9 us */
	alone_gbps(&hw, 1, 0, 1 * MIB, 1, EMA_COPY_PER_PAGE, &t);
	check5("1 MiB copy, us", (double)t / 1e3, 15.9);
	alone_gbps(&hw, 1, 0, 64 * KIB, 1, EMA_COPY_PER_PAGE, &t);
	check5("64 KiB copy, us", (double)t / 1e3, 15.9);
	alone_gbps(&hw, 1, 0, 4 * KIB, 1, EMA_COPY_PER_PAGE, &t);
	check5("4 KiB copy, us", (double)t / 1e3, 15.9);
}

static void test_h200_bidirectional(void)
{
	struct ema_hw_profile hw;
	struct ema_flownet *net;
	struct ema_error err = { 0 };
	struct rec r = { 0 };
	double agg;

	h200x2_hw(&hw);
	CU_ASSERT_EQUAL_FATAL(ema_flownet_create(&net, &hw, &err), EMA_OK);
	ema_flownet_start(net, 0, 0, 1, 1u << 30, 1, EMA_COPY_PER_PAGE, 1, NULL, &err);
	ema_flownet_start(net, 0, 1, 0, 1u << 30, 1, EMA_COPY_PER_PAGE, 2, NULL, &err);
	run_all(net, &r);
	CU_ASSERT_EQUAL_FATAL(r.n, 2);
	agg = 2.0 * (1u << 30) / (double)(r.t[0] > r.t[1] ? r.t[0] : r.t[1]);
	check5("bidirectional 2 x 1 GiB aggregate", agg, 777);
	ema_flownet_destroy(net);
}

static void test_h200_batch_gather_per_page(void)
{
	struct ema_hw_profile hw;
	static const double page[] = { 16 * KIB, 64 * KIB, 256 * KIB, 2 * MIB };
	static const double batch[] = { 30, 94, 218, 357 };
	double total = 256 * MIB;

	h200x2_hw(&hw);
	for (int i = 0; i < 4; i++) {
		char what[64];
		int n = (int)(total / page[i]);

		snprintf(what, sizeof what, "batch copy, %.0f KiB pages", page[i] / KIB);
		check5(what, alone_gbps(&hw, 1, 0, total, n, EMA_COPY_BATCH, NULL), batch[i]);
		snprintf(what, sizeof what, "gather, %.0f KiB pages", page[i] / KIB);
		check5(what, alone_gbps(&hw, 1, 0, total, n, EMA_COPY_GATHER, NULL), 365.5);
	}
	check5("per-page calls, 16 KiB",
	       alone_gbps(&hw, 1, 0, 1000 * 16 * KIB, 1000, EMA_COPY_PER_PAGE, NULL), 2.6);
	check5("per-page calls, 64 KiB",
	       alone_gbps(&hw, 1, 0, 1000 * 64 * KIB, 1000, EMA_COPY_PER_PAGE, NULL), 10);
	check5("per-page calls, 2 MiB",
	       alone_gbps(&hw, 1, 0, 128 * 2 * MIB, 128, EMA_COPY_PER_PAGE, NULL), 150);
	check5("per-page calls, 16 MiB",
	       alone_gbps(&hw, 1, 0, 32 * 16 * MIB, 32, EMA_COPY_PER_PAGE, NULL), 317);
	check5("pinned host to device, 256 MiB",
	       alone_gbps(&hw, EMA_HOST, 0, 256 * MIB, 1, EMA_COPY_PER_PAGE, NULL), 55.4);
	check5("device to pinned host, 256 MiB",
	       alone_gbps(&hw, 1, EMA_HOST, 256 * MIB, 1, EMA_COPY_BATCH, NULL), 55.4);
}

/* Random flows on a 4-GPU switch with host traffic: every flow finishes,
 * none beats its path's capacity, port loads stay within capacity at
 * every step, and the same sequence gives the same times. */
static void random_run(int64_t *times, int nflows)
{
	struct ema_hw_profile hw;
	struct ema_flownet *net;
	struct ema_error err = { 0 };
	static struct rec r;
	unsigned s = 777;
	int64_t now = 0;
	int started = 0;

	memset(&r, 0, sizeof r);
	plain_hw(&hw, 4, "switch");
	hw.copy_engines = 2;
	hw.copy_fixed_us = 3;
	hw.copy_call_us = 1;
	hw.batch_page_us = 0.2;
	hw.gather_gbps = 60;
	CU_ASSERT_EQUAL_FATAL(ema_flownet_create(&net, &hw, &err), EMA_OK);
	while (r.n < nflows) {
		int64_t t = ema_flownet_next_event_time(net);

		s = s * 1103515245u + 12345u;
		if (started < nflows && (t == INT64_MAX || (s >> 16) % 2 == 0)) {
			int src = (int)((s >> 4) % 5) - 1;
			int dst = (int)((s >> 9) % 4);
			uint64_t bytes = 1000 + (s >> 12) % 500000;

			if (src == dst)
				src = EMA_HOST;
			now += (int64_t)((s >> 20) % 3000);
			if (t != INT64_MAX && now > t)
				now = t;
			CU_ASSERT_EQUAL_FATAL(ema_flownet_advance(net, now, rec_fn, &r, &err), EMA_OK);
			CU_ASSERT_EQUAL_FATAL(ema_flownet_start(net, now, src, dst, bytes,
								1 + (int)((s >> 3) % 8),
								(enum ema_copy_method)((s >> 7) % 3),
								(uint64_t)started, NULL, &err), EMA_OK);
			started++;
		} else {
			CU_ASSERT_FATAL(t != INT64_MAX);
			now = t;
			CU_ASSERT_EQUAL_FATAL(ema_flownet_advance(net, now, rec_fn, &r, &err), EMA_OK);
		}
		for (int g = 0; g < 4; g++) {
			/* host flows included: a port plus its host link at most */
			CU_ASSERT(ema_flownet_hbm_out_gbps(net, g) <= 100 + 10 + 1e-6);
			CU_ASSERT(ema_flownet_hbm_in_gbps(net, g) <= 100 + 10 + 1e-6);
		}
	}
	for (int i = 1; i < r.n; i++)
		CU_ASSERT(r.t[i] >= r.t[i - 1]);
	for (int i = 0; i < r.n; i++)
		times[i] = r.t[i] * 1000 + (int64_t)r.tag[i];
	CU_ASSERT_EQUAL(r.n, nflows);
	CU_ASSERT_EQUAL(ema_flownet_active(net), 0);
	CU_ASSERT_EQUAL(ema_flownet_next_event_time(net), INT64_MAX);
	ema_flownet_destroy(net);
}

static void test_random_invariants(void)
{
	int64_t a[200] = { 0 }, b[200] = { 0 };

	random_run(a, 200);
	random_run(b, 200);
	CU_ASSERT_EQUAL(memcmp(a, b, sizeof a), 0);
}

/* Random operations (capped and uncapped flows, with and without latency
 * and copy engines, on both topologies): after every start and advance
 * the incremental state equals a full recomputation bit for bit. */
static void selfcheck_run(const char *topo, unsigned seed)
{
	struct ema_hw_profile hw;
	struct ema_flownet *net;
	struct ema_error err = { 0 };
	unsigned s = seed;
	int64_t now = 0;
	uint64_t id = 0;
	double last_cap = 0, rate;
	int started = 0, at_cap = 0, below_cap = 0, cancels = 0;

	plain_hw(&hw, 4, topo);
	hw.copy_engines = 2;
	CU_ASSERT_EQUAL_FATAL(ema_flownet_create(&net, &hw, &err), EMA_OK);
	CU_ASSERT_EQUAL(ema_flownet_selfcheck(net), 0);
	while (started < 400 || ema_flownet_active(net) > 0) {
		int64_t t = ema_flownet_next_event_time(net);

		s = s * 1103515245u + 12345u;
		if (started > 0 && (s >> 16) % 11 == 0) {
			/* an iteration's spread flows end with it (sim_platform.c):
			 * a flow cancelled in any phase, or one already gone */
			const uint64_t victims[2] = { (uint64_t)((s >> 3) % (unsigned)started),
						      (uint64_t)((s >> 13) % (unsigned)started) };

			if (t != INT64_MAX && now + 700 < t)
				now += 700;
			CU_ASSERT(ema_flownet_cancel(net, now, victims, 1 + (int)((s >> 5) % 2), NULL, &err) >= 0);
			cancels++;
		} else if (started < 400 && (t == INT64_MAX || (s >> 16) % 3 != 0)) {
			int src = (int)((s >> 4) % 5) - 1;
			int dst = (int)((s >> 9) % 4);
			/* caps from far below to above a link's 100 GB/s, or none */
			double cap = (s >> 22) % 4 == 0 ? 0 : 5 + (double)((s >> 12) % 120);
			struct ema_flow_params p = {
				src == dst ? EMA_HOST : src, dst, 1000 + (s >> 8) % 300000,
				(s >> 27) % 2 ? 0 : (int64_t)((s >> 14) % 2000), cap,
				(s >> 29) % 2 == 0, (s >> 30) % 2 == 0,
			};

			now += (int64_t)((s >> 20) % 1500);
			if (t != INT64_MAX && now > t)
				now = t;
			CU_ASSERT_EQUAL_FATAL(ema_flownet_advance(net, now, NULL, NULL, &err), EMA_OK);
			CU_ASSERT_EQUAL(ema_flownet_selfcheck(net), 0);
			CU_ASSERT_EQUAL_FATAL(ema_flownet_start_params(net, now, &p, 0, &id, &err),
					      EMA_OK);
			last_cap = cap;
			started++;
		} else {
			CU_ASSERT_FATAL(t != INT64_MAX);
			now = t;
			CU_ASSERT_EQUAL_FATAL(ema_flownet_advance(net, now, NULL, NULL, &err), EMA_OK);
		}
		CU_ASSERT_EQUAL(ema_flownet_selfcheck(net), 0);
		/* both regimes (caps fit; max-min shares below the caps) must
		 * occur for the comparison to mean anything */
		rate = ema_flownet_rate_gbps(net, id);
		if (rate > 0 && ema_flownet_active(net) > 1) {
			at_cap += rate == last_cap;
			below_cap += rate != last_cap;
		}
	}
	CU_ASSERT(at_cap > 10);
	CU_ASSERT(below_cap > 10);
	CU_ASSERT(cancels > 10);
	CU_ASSERT_EQUAL(ema_flownet_next_event_time(net), INT64_MAX);
	CU_ASSERT_EQUAL(ema_flownet_selfcheck(net), 0);
	ema_flownet_destroy(net);
}

static void test_incremental_equals_full(void)
{
	selfcheck_run("switch", 4242);
	selfcheck_run("switch", 99);
	selfcheck_run("direct", 4242);
	selfcheck_run("direct", 7);
}

static struct ema_flownet *cancel_net;
static int cancel_rc;

static void cancel_fn(void *arg, uint64_t id, uint64_t tag, int64_t now)
{
	(void)tag;
	cancel_rc = ema_flownet_cancel(cancel_net, now, &id, 1, NULL, arg);
}

static void test_errors(void)
{
	struct ema_hw_profile hw;
	struct ema_flownet *net;
	struct ema_error err = { 0 };
	struct ema_flow_params p;
	const uint64_t first_id = 0;

	h200x2_hw(&hw);
	hw.n_gpus = 0;
	CU_ASSERT_EQUAL(ema_flownet_create(&net, &hw, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "h200x2: n_gpus must be 1..72, got 0"));
	h200x2_hw(&hw);
	hw.link_gbps = 0;
	CU_ASSERT_EQUAL(ema_flownet_create(&net, &hw, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "link_gbps must be > 0"));
	h200x2_hw(&hw);
	hw.host_link_gbps = -1;
	CU_ASSERT_EQUAL(ema_flownet_create(&net, &hw, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "host_link_gbps must be > 0"));
	h200x2_hw(&hw);
	hw.hbm_read_gbps = 0;
	CU_ASSERT_EQUAL(ema_flownet_create(&net, &hw, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "hbm_read_gbps must be > 0"));
	h200x2_hw(&hw);
	hw.copy_engines = 0;
	CU_ASSERT_EQUAL(ema_flownet_create(&net, &hw, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "copy_engines must be >= 1"));
	h200x2_hw(&hw);
	hw.copy_call_us = -2;
	CU_ASSERT_EQUAL(ema_flownet_create(&net, &hw, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "must be >= 0"));
	h200x2_hw(&hw);
	hw.copy_curve[2].bytes = 1;
	CU_ASSERT_EQUAL(ema_flownet_create(&net, &hw, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "copy_curve point 2"));
	h200x2_hw(&hw);
	hw.n_copy_curve = 99;
	CU_ASSERT_EQUAL(ema_flownet_create(&net, &hw, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "copy_curve must have 0..16 points"));
	h200x2_hw(&hw);
	hw.topology = (enum ema_topology)7;
	CU_ASSERT_EQUAL(ema_flownet_create(&net, &hw, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "topology must be \"direct\" or \"switch\", got 7"));

	h200x2_hw(&hw);
	CU_ASSERT_EQUAL_FATAL(ema_flownet_create(&net, &hw, &err), EMA_OK);
	CU_ASSERT_EQUAL(ema_flownet_start(net, 0, 5, 0, 10, 1, EMA_COPY_GATHER, 0, NULL, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "transfer 5 -> 0: expected GPUs 0..1 or host (-1)"));
	CU_ASSERT_EQUAL(ema_flownet_start(net, 0, EMA_HOST, EMA_HOST, 10, 1, EMA_COPY_BATCH, 0, NULL, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "not both host"));
	CU_ASSERT_EQUAL(ema_flownet_start(net, 0, 0, 1, 10, 1, (enum ema_copy_method)9, 0, NULL, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "unknown copy method 9"));
	p = (struct ema_flow_params){ 0, 1, 10, -1, 0, false, false };
	CU_ASSERT_EQUAL(ema_flownet_start_params(net, 0, &p, 0, NULL, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "negative latency"));
	p = (struct ema_flow_params){ 1, 1, 10, 0, 0, false, false };
	CU_ASSERT_EQUAL(ema_flownet_start_params(net, 0, &p, 0, NULL, &err), EMA_ERR_INPUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "within GPU 1 needs a rate cap"));
	/* a copy within a GPU is allowed through the method model */
	CU_ASSERT_EQUAL(ema_flownet_start(net, 0, 1, 1, 1000, 1, EMA_COPY_BATCH, 0, NULL, &err), EMA_OK);
	CU_ASSERT_EQUAL(ema_flownet_advance(net, 100000, NULL, NULL, &err), EMA_OK);
	CU_ASSERT_EQUAL(ema_flownet_start(net, 50, 0, 1, 10, 1, EMA_COPY_BATCH, 0, NULL, &err), EMA_ERR_INTERNAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "start at 50 ns, before the net's time 100000 ns"));
	CU_ASSERT_EQUAL(ema_flownet_advance(net, 10, NULL, NULL, &err), EMA_ERR_INTERNAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "advance to 10 ns, before"));
	CU_ASSERT_EQUAL(ema_flownet_cancel(net, 10, &first_id, 1, NULL, &err), EMA_ERR_INTERNAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "cancel at 10 ns, before the net's time 100000 ns"));
	/* a completion callback may start flows, not cancel them */
	cancel_net = net;
	CU_ASSERT_EQUAL(ema_flownet_start(net, 100000, 0, 1, 1000, 1, EMA_COPY_BATCH, 0, NULL, &err), EMA_OK);
	CU_ASSERT_EQUAL(ema_flownet_advance(net, 200000, cancel_fn, &err, &err), EMA_OK);
	CU_ASSERT_EQUAL(cancel_rc, EMA_ERR_INTERNAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "cancel called from a completion callback"));
	ema_flownet_destroy(net);
	ema_flownet_destroy(NULL);
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{ "two flows on one link get half each", test_two_flows_half_each },
		{ "a capped flow leaves the rest to the other", test_cap_leaves_rest },
		{ "in-place reads leave the destination's HBM out", test_in_place_reads_skip_dst_hbm },
		{ "caps that fit, an overflow, and the caps back", test_fit_overflow_and_back },
		{ "switch ports: shared egress, bound ingress", test_switch_ports },
		{ "switch max-min with a capped flow", test_switch_maxmin },
		{ "a 72-GPU switch: one port per GPU, a non-blocking fabric", test_switch_72 },
		{ "a flow ending speeds the other up, exact times", test_release_speeds_up },
		{ "latency phase uses no bandwidth", test_latency_phase },
		{ "a cancelled flow leaves its link and engine at once", test_cancel },
		{ "copy engines queue FIFO per pulling GPU", test_copy_engine_queue },
		{ "h200x2: single cudaMemcpyPeerAsync by size", test_h200_single_copy },
		{ "h200x2: bidirectional 2 x 1 GiB", test_h200_bidirectional },
		{ "h200x2: batch, gather, per-page, host", test_h200_batch_gather_per_page },
		{ "random flows: invariants and determinism", test_random_invariants },
		{ "random operations: incremental rates equal a full pass", test_incremental_equals_full },
		{ "error paths and messages", test_errors },
		{ NULL, NULL }
	};

	return ema_test_run("flownet", cases);
}
