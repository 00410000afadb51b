/* test_planner.c: ema's planner (policies/ema.c), one rule a test, on
 * cases computed by hand: the TPOT cap of each path, the lender cap and
 * its sharing among borrowers, the path that allows most, borrowing only
 * where it pays, a lender's demand first, the corrections by measured
 * steps (feedback) and by the prefill share; and over random sequences of
 * page operations, that no page is granted past a budget and no lender's
 * predicted load past its budget. policies/ema.c is included for its
 * static functions; its ema_policy_ema stands in for the library's. */
#include "../policies/ema.c"

#include <stdio.h>

#include "config.h"
#include "engine_priv.h"
#include "sim.h"
#include "test_main.h"

/* The TPOT cap of b on L by path p (budget's first limit). */
static double tpot_cap(const struct ema_policy_ctx *c, const struct ema_state *st, int b, int L,
		       int p, bool admit)
{
	return bytes_within(c, st, b, gpu_busy(c, L), p,
			    tpot_step(c, st, b, admit) - c->hw->iter_overhead_us * 1e3);
}

/* The bytes of b's KV on L that L's lender budget allows by path p
 * (budget's second limit), the other borrowers' load read now. */
static double lender_cap(const struct ema_policy_ctx *c, const struct ema_state *st, int b, int L,
			 int p)
{
	return lender_cap_of(c, st, b, L, p, lender_left(c, st, L, lender_load(c, st, L, b)));
}

/* The path b reads `bytes` of its KV on L by (ema_plan's choice), the
 * other borrowers' load read now. */
static int read_path(const struct ema_policy_ctx *c, const struct ema_state *st, int b, int L,
		     double bytes)
{
	return read_path_at(c, st, b, L, bytes, lender_load(c, st, L, b));
}

static struct ema_request_spec spec(int64_t at, int p, int o)
{
	struct ema_request_spec r = { at, p, o };
	return r;
}

/* An engine of h200x2 at 24 GiB (llama-3-8b: 4629 KV pages of 2 MiB a
 * GPU), with `sets` applied, on the simulator; one tiny request each. */
struct fixture {
	struct ema_config cfg;
	struct ema_platform *p;
	struct ema_engine e;
	struct ema_request_spec r[2];
	struct ema_workload w[2];
};

static struct fixture *fixture(const char *const *sets, int n)
{
	struct fixture *f = calloc(1, sizeof *f);
	const char *all[16] = { "gpu_mem_cap_gib=24" };
	struct ema_platform_params params;
	struct ema_error err = { 0 };
	const struct ema_policy_ops *ema = &ema_policy_ema;

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_FATAL(n < 15);
	for (int i = 0; i < n; i++)
		all[i + 1] = sets[i];
	if (ema_config_load(&f->cfg, NULL, all, n + 1, &err) != EMA_OK)
		fprintf(stderr, "config: %s\n", err.msg);
	f->r[0] = spec(0, 1, 1);
	f->r[1] = spec(0, 1, 1);
	f->w[0] = (struct ema_workload){ &f->r[0], 1, 1 };
	f->w[1] = (struct ema_workload){ &f->r[1], 1, 1 };
	CU_ASSERT_EQUAL_FATAL(ema_engine_platform_params(&params, &f->cfg, ema), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(ema_sim_platform_create(&f->p, &params, NULL, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(ema_engine_create(&f->e, &f->cfg, ema, f->p, f->w, &err), EMA_OK);
	return f;
}

static void fixture_free(struct fixture *f)
{
	ema_engine_destroy(&f->e);
	f->p->ops->destroy(f->p);
	free(f);
}

static struct ema_state *st_of(struct fixture *f)
{
	return f->e.policy_state;
}

/* GPU 1's tenant holds `n` pages (it runs: a busy lender). */
static void lender_holds(struct fixture *f, int32_t n)
{
	for (int32_t i = 0; i < n; i++)
		CU_ASSERT_FATAL(ema_ledger_alloc(&f->e.ledger, 1, 1, EMA_PAGE_KV) >= 0);
}

/* A correction measured at v before the run time the fixture reads at
 * (0): the value both before and at that time. */
static void measured(struct ema_avg *a, double v)
{
	a->v = a->prev = v;
	a->at = 0;
}

/* The local-only step of a full GPU: 0.03 ms + (16.06 GB of weights +
 * 4629 x 2 MiB of KV) / (4357.44 x 0.70 GB/s) = 8.478 ms. */
static void test_local_only_step(void)
{
	struct fixture *f = fixture(NULL, 0);

	CU_ASSERT_DOUBLE_EQUAL(st_of(f)->t0_ns[0] / 1e6, 8.4779, 0.0001);
	CU_ASSERT_DOUBLE_EQUAL(st_of(f)->kv_bytes[0] / 1e9, 9.7077, 0.0001);
	fixture_free(f);
}

/* In place: the TPOT cap is what the link carries within 1.1 x T0 less
 * the overhead, at the derated rate and the overlap: 373.909 x 0.70 x
 * 0.981 x 9.2957 ms = 2.387 GB (1138 pages); the lender cap (its load at
 * 5%: interference 0.952 per 4357 GB/s) 0.05 x 8.4779 ms / (0.95222 /
 * 4357.44) = 1.940 GB (924 pages): the lender binds. */
static void test_inplace_caps(void)
{
	static const char *const sets[] = { "policy.ema.remote_path=inplace" };
	struct fixture *f = fixture(sets, 1);
	int p, bind;

	CU_ASSERT_DOUBLE_EQUAL(tpot_cap(&f->e.ctx, st_of(f), 0, 1, PATH_INPLACE, true) / 1e9, 2.3868, 0.0005);
	CU_ASSERT_DOUBLE_EQUAL(lender_cap(&f->e.ctx, st_of(f), 0, 1, PATH_INPLACE) / 1e9, 1.9398, 0.0005);
	CU_ASSERT_EQUAL(budget(&f->e.ctx, st_of(f), 0, 1, true, &p, &bind), 924);
	CU_ASSERT_EQUAL(p, PATH_INPLACE);
	CU_ASSERT_EQUAL(bind, BIND_LENDER);
	/* and what borrowable offers: the budget, within what GPU 1 lends
	 * (3471 less its headroom of 232) */
	CU_ASSERT_EQUAL(ema_borrowable(&f->e.ctx, st_of(f), 0), 924);
	fixture_free(f);
}

/* Remote attention, at the figures measured on one H200 (the profile's
 * attention_*): idle, the kernel reads 1476.3 GB/s for 9.2957 ms less 32
 * layers x 16.07 us: 12.964 GB; with GPU 1 running steps of its own it
 * keeps 0.611 of that, 7.921 GB. The lender pays 0.380 ms per GB: 0.05 x
 * 8.4779 ms / 0.380 = 1.1155 GB (531 pages), the lender binds. */
static void test_compute_caps(void)
{
	static const char *const sets[] = { "policy.ema.remote_path=compute" };
	struct fixture *f = fixture(sets, 1);
	int p, bind;

	CU_ASSERT_DOUBLE_EQUAL(tpot_cap(&f->e.ctx, st_of(f), 0, 1, PATH_COMPUTE, true) / 1e9, 12.964, 0.0005);
	lender_holds(f, 1000);
	CU_ASSERT_DOUBLE_EQUAL(tpot_cap(&f->e.ctx, st_of(f), 0, 1, PATH_COMPUTE, true) / 1e9, 7.921, 0.0005);
	CU_ASSERT_DOUBLE_EQUAL(lender_cap(&f->e.ctx, st_of(f), 0, 1, PATH_COMPUTE) / 1e9, 1.1155, 0.0005);
	CU_ASSERT_EQUAL(budget(&f->e.ctx, st_of(f), 0, 1, true, &p, &bind), 531);
	CU_ASSERT_EQUAL(p, PATH_COMPUTE);
	CU_ASSERT_EQUAL(bind, BIND_LENDER);
	fixture_free(f);
}

/* Staged: (L + R) / hbm x (1 + k_b R / (avail x hbm_read)) <= avail, with
 * L = 25.77 GB, hbm 3050.2 GB/s, k_b 2.79313, avail 9.2957 ms: the
 * quadratic's root 0.911 GB (its own writes slow the borrower, so it
 * stages less than in place carries); the copies could bring 9.2957 ms x
 * 372.32 x 0.9383 GB/s = 3.247 GB, more. */
static void test_staged_cap(void)
{
	static const char *const sets[] = { "policy.ema.remote_path=staged" };
	struct fixture *f = fixture(sets, 1);
	double a = 2.79313 / (9.2957e6 * 4357.44), L = 16.06e9 + 4629.0 * 2097152;
	double hand = (-(1 + a * L) + sqrt((1 + a * L) * (1 + a * L) - 4 * a * (L - 3050.208 * 9.2957e6))) /
		      (2 * a);

	CU_ASSERT_DOUBLE_EQUAL(hand / 1e9, 0.9107, 0.0001);
	CU_ASSERT_DOUBLE_EQUAL(tpot_cap(&f->e.ctx, st_of(f), 0, 1, PATH_STAGED, true) / 1e9, hand / 1e9, 0.01);
	fixture_free(f);
}

/* auto takes, per lender, the path that serves the most tokens with its
 * budget: on a busy lender in place (924 pages, the step 1.9% longer)
 * against remote attention (531). Where in place costs the lender 4 x
 * more (interference 3.8: 0.05 x 8.4779 ms / (3.8 / 4357.44 GB/s) = 231
 * pages), remote attention's 531 win. */
static void test_auto_picks_most(void)
{
	struct fixture *f = fixture(NULL, 0);
	int p, bind;

	lender_holds(f, 1000);
	CU_ASSERT_EQUAL(budget(&f->e.ctx, st_of(f), 0, 1, true, &p, &bind), 924);
	CU_ASSERT_EQUAL(p, PATH_INPLACE);
	fixture_free(f);
	{
		static const char *const sets[] = { "hardware.interference_lender=3.8" };

		f = fixture(sets, 1);
		CU_ASSERT_EQUAL(budget(&f->e.ctx, st_of(f), 0, 1, true, &p, &bind), 531);
		CU_ASSERT_EQUAL(p, PATH_COMPUTE);
		fixture_free(f);
	}
}

/* Borrowing pays only where the batch grows more than the step does:
 * in place, any remote read costs the step the overlap's loss (the local
 * reads at inplace_overlap_efficiency, 0.981, of the HBM's rate), so a
 * lender that allows little is not worth reading. With the lender budget
 * at 0.2% the lender allows 36 pages (75 MB, 0.8% of the 9.71 GB of
 * local KV) at a step 1.9% longer: no borrowing, "throughput" bound. At
 * 5% (924 pages, 20%) it pays, the lender's budget binding. */
static void test_only_where_it_pays(void)
{
	static const char *const sets[] = { "policy.ema.lender_budget=0.002", "policy.ema.remote_path=inplace" };
	struct fixture *f = fixture(sets, 2);
	int p, bind;

	CU_ASSERT_EQUAL(budget(&f->e.ctx, st_of(f), 0, 1, true, &p, &bind), 0);
	CU_ASSERT_EQUAL(bind, BIND_PAYS);
	CU_ASSERT_EQUAL(ema_borrowable(&f->e.ctx, st_of(f), 0), 0);
	fixture_free(f);
	f = fixture(sets + 1, 1);
	CU_ASSERT_EQUAL(budget(&f->e.ctx, st_of(f), 0, 1, true, &p, &bind), 924);
	CU_ASSERT_EQUAL(bind, BIND_LENDER);
	fixture_free(f);
}

/* A lender lends none of its headroom (232 pages) nor what its own queue
 * asks for: with its tenant holding 4000 of 4629 pages, 629 free, less
 * the reserve's 232 (the shared rule) and the headroom's 232, 165 are
 * left. */
static void test_lender_demand_first(void)
{
	struct fixture *f = fixture(NULL, 0);

	lender_holds(f, 4000);
	CU_ASSERT_EQUAL(ema_lending_lendable(&f->e.ctx, 1), 629 - 232);
	CU_ASSERT_EQUAL(lendable(&f->e.ctx, st_of(f), 1), 629 - 232 - 232);
	CU_ASSERT_EQUAL(ema_borrowable(&f->e.ctx, st_of(f), 0), 165);
	fixture_free(f);
}

/* One lender budget for all its borrowers: pages another tenant holds
 * there take their load out of it. 462 pages of a second borrower read in
 * place over its own 8.4779 ms step are half of the 5%: 462 pages are left
 * to the first. */
static void test_lender_budget_shared(void)
{
	struct fixture *f = fixture(NULL, 0);
	struct ema_state *st = st_of(f);

	/* (tenant 1 stands in as a second borrower of GPU 1's pages) */
	f->e.ledger.borrowed[1][1] = 462;
	ema_gpuset_set(&f->e.ledger.borrowing, 1); /* (as the ledger marks it) */
	st->path[1][1] = PATH_INPLACE;
	CU_ASSERT_DOUBLE_EQUAL(lender_load(&f->e.ctx, st, 1, 0), 0.05 * 462 / 924.97, 0.0001);
	CU_ASSERT_EQUAL(budget(&f->e.ctx, st, 0, 1, true, NULL, NULL), 462);
	f->e.ledger.borrowed[1][1] = 0;
	ema_gpuset_clear(&f->e.ledger.borrowing, 1);
	fixture_free(f);
}

/* Feedback: a sample folds in with weight 1 - exp(-dt / tau), the first
 * whole. A lender measured twice as slow as predicted halves its
 * budget; a borrower whose remote steps run 25% over their prediction
 * (its local ones exact) has its TPOT cap cut by 1 / 1.25. */
static void test_feedback(void)
{
	struct fixture *f = fixture(NULL, 0);
	struct ema_state *st = st_of(f);
	struct ema_avg a;
	double before;

	avg_init(&a);
	avg_add(&f->e.ctx, &a, 2.0, 1000000000, NULL, 0, NULL);
	CU_ASSERT_DOUBLE_EQUAL(a.v, 2.0, 1e-12);
	avg_add(&f->e.ctx, &a, 1.0, 6000000000, NULL, 0, NULL);    /* 5 s later: weight 1 - 1/e */
	CU_ASSERT_DOUBLE_EQUAL(a.v, 2.0 - (1 - exp(-1.0)), 1e-12);
	before = lender_cap(&f->e.ctx, st, 0, 1, PATH_INPLACE);
	st->lend[1].v = 2.0;
	CU_ASSERT_DOUBLE_EQUAL(lender_cap(&f->e.ctx, st, 0, 1, PATH_INPLACE), before / 2, 1);
	before = tpot_cap(&f->e.ctx, st, 0, 1, PATH_COMPUTE, true);
	measured(&st->remote[0], 1.25);
	st->t_epoch[0]++; /* (what note_end does with a sample) */
	CU_ASSERT(tpot_cap(&f->e.ctx, st, 0, 1, PATH_COMPUTE, true) < before);
	/* (in place: the cap follows avail = 1.1 T0 / 1.25 - 0.03 ms) */
	CU_ASSERT_DOUBLE_EQUAL(remote_error(&f->e.ctx, st, 0), 1.25, 1e-12);
	fixture_free(f);
}

/* The lender's correction is learnt from its decode steps only: GPU 1
 * serves a borrower predicted to slow it by 5%; a prefill step of its
 * own that the reads did not slow (compute-bound) leaves the correction
 * at the model's 1, where averaging it in would have loosened the
 * lender's budget for the decode steps the guarantee is about; a decode
 * step 10% over its 10 ms prediction is twice the predicted slowdown. */
static void test_lender_learns_from_decodes(void)
{
	struct fixture *f = fixture(NULL, 0);
	struct ema_state *st = st_of(f);
	struct ema_iteration prefill = { 0 }, decode = { 0 };

	prefill.tenant = decode.tenant = 1;
	prefill.prefill_tokens = 512;
	st->serving[1][0] = (struct ema_serving){ 0, 1000000000, 0.05, -1 };
	st->serving_until[1] = 1000000000; /* (the ring's last end, as ema_plan keeps it) */
	note_start(&f->e.ctx, st, 1, &prefill, 1e7);
	note_end(&f->e.ctx, st, 1, 10000000);
	CU_ASSERT_FALSE(corrected(&st->lend[1]));
	CU_ASSERT_DOUBLE_EQUAL(st->lend[1].v, 1.0, 1e-12);
	note_start(&f->e.ctx, st, 1, &decode, 1e7);
	note_end(&f->e.ctx, st, 1, 11000000);
	CU_ASSERT_DOUBLE_EQUAL(st->lend[1].v, 2.0, 1e-9);
	fixture_free(f);
}

/* The run time the planner sees (ema_policy_now) in test_serving_open. */
static int64_t test_now_ns;

static int64_t test_now(const struct ema_policy_ctx *c)
{
	(void)c;
	return test_now_ns;
}

/* A borrower's step reads its lender until it ends, not until its
 * prediction: GPU 0's tenant plans a step reading 0.5 GB of GPU 1 at 0
 * (predicted about 8.5 ms) that ends at 20 ms. A lender step from 12 to
 * 13 ms ran while the reads went on: it is no sample of the lender's
 * baseline (its steps serving no one). Once the borrower's step ended, a
 * lender step from 25 to 26 ms is. (Until 2026-12-05 the ring entry
 * closed at the prediction, and lender steps in a borrower's overrun,
 * counted as serving no one, made the baseline 1% slow and the measured
 * slowdown that much smaller: lenders' TPOT 1.057 against a budget of
 * 1.05 on a100x4 Llama-2-7B.) */
static void test_serving_open(void)
{
	static const char *const sets[] = { "policy.ema.prefetch_depth=0" };
	struct fixture *f = fixture(sets, 1);
	struct ema_state *st = st_of(f);
	struct ema_policy_mech mech = *f->e.ctx.mech;
	struct ema_iteration it, lender = { 0 };

	mech.now = test_now;
	f->e.ctx.mech = &mech;
	ema_iteration_clear(&it);
	it.tenant = 0;
	it.gpu = 0;
	it.n_seqs = 1;
	it.decode_tokens = 1;
	it.weight_bytes = 16060000000ull;
	it.n_remote = 1;
	/* (ema_iteration_clear leaves remote[] as it was: this test read
	 * whatever the stack held in its write and exchange bytes, zero
	 * until EMA_MAX_GPUS = 72 moved it) */
	memset(&it.remote[0], 0, sizeof it.remote[0]);
	it.remote[0].gpu = 1;
	it.remote[0].bytes = 500000000ull;
	test_now_ns = 0;
	ema_plan(&f->e.ctx, st, &it);
	CU_ASSERT_FATAL(st->pending[0]);
	CU_ASSERT(st->pend_pred[0] < 12e6);
	lender.tenant = 1;
	lender.gpu = 1;
	lender.decode_tokens = 1;
	test_now_ns = 12000000;
	note_start(&f->e.ctx, st, 1, &lender, 1e7);
	note_end(&f->e.ctx, st, 1, 13000000);
	CU_ASSERT_EQUAL(st->idle[1].at, -1);  /* serving: no baseline sample */
	note_end(&f->e.ctx, st, 0, 20000000); /* the borrower's step ends */
	test_now_ns = 25000000;
	note_start(&f->e.ctx, st, 1, &lender, 1e7);
	note_end(&f->e.ctx, st, 1, 26000000);
	CU_ASSERT_EQUAL(st->idle[1].at, 26000000);
	CU_ASSERT_DOUBLE_EQUAL(st->idle[1].v, 0.1, 1e-12);
	fixture_free(f);
}

/* The TPOT budget's correction is remote steps' error over local ones'.
 * With no remote step measured it is 1, whatever the local steps
 * measured: local steps 20% faster than predicted (0.8) leave it at 1
 * (until 2026-12-05 it read 1 / 0.8 = 1.25, and with HBM believed 20%
 * slow the budget's step fell below T0: ema never borrowed). Measured,
 * 1.0 over 0.8 is 1.25; 5 s (feedback_s) on, the remote ratio has faded
 * by 1/e towards 1 and the local error is held: 1 + 0.25 / e (both faded
 * it read 1 / (1 - 0.2 / e) = 1.079). */
static void test_relative_error(void)
{
	struct fixture *f = fixture(NULL, 0);
	struct ema_state *st = st_of(f);
	struct ema_policy_mech mech = *f->e.ctx.mech;
	const int64_t q = 19531250; /* the fading's grid at 5 s: 5 s / 256 */

	mech.now = test_now;
	f->e.ctx.mech = &mech;
	test_now_ns = 0;
	measured(&st->local[0], 0.8);
	st->t_epoch[0]++;
	CU_ASSERT_DOUBLE_EQUAL(remote_error(&f->e.ctx, st, 0), 1.0, 1e-12);
	avg_init(&st->local[0]);
	avg_add(&f->e.ctx, &st->local[0], 0.8, 64 * q, NULL, 0, NULL);
	avg_add(&f->e.ctx, &st->remote[0], 1.0, 64 * q, NULL, 0, NULL);
	st->t_epoch[0]++;
	test_now_ns = 64 * q + 1; /* (after the samples, on their grid step: no fading) */
	CU_ASSERT_DOUBLE_EQUAL(remote_error(&f->e.ctx, st, 0), 1.25, 1e-12);
	test_now_ns = 64 * q + 5000000000;
	CU_ASSERT_DOUBLE_EQUAL(remote_error(&f->e.ctx, st, 0), 1.0 + 0.25 * exp(-1.0), 1e-9);
	fixture_free(f);
}

/* The corrections learn from decode steps only: a local step with a
 * prefill that ran at half its prediction leaves the local error alone;
 * a decode step at 0.8 of it sets it. And a lender's baseline is held:
 * GPU 1's own decode step at 0.9 of its prediction, serving no one, then
 * 5 s later a step serving a borrower predicted to slow it by 5% that
 * ran at 0.945 (5% over the baseline 0.9): the lender's correction is 1,
 * the model right. (A baseline faded towards 1 read 0.963 there, the
 * slowdown as none, and the correction fell to its floor: a lender
 * budget four times too large with HBM believed 10% slow.) */
static void test_decodes_and_baseline(void)
{
	struct fixture *f = fixture(NULL, 0);
	struct ema_state *st = st_of(f);
	struct ema_policy_mech mech = *f->e.ctx.mech;
	struct ema_iteration prefill = { 0 }, decode = { 0 };
	const int64_t q = 19531250;

	mech.now = test_now;
	f->e.ctx.mech = &mech;
	prefill.tenant = 0;
	prefill.prefill_tokens = 512;
	decode.tenant = 0;
	test_now_ns = 64 * q;
	note_start(&f->e.ctx, st, 0, &prefill, 1e7);
	note_end(&f->e.ctx, st, 0, 64 * q + 5000000);
	CU_ASSERT_EQUAL(st->local[0].at, -1);
	note_start(&f->e.ctx, st, 0, &decode, 1e7);
	note_end(&f->e.ctx, st, 0, 64 * q + 8000000);
	CU_ASSERT_DOUBLE_EQUAL(st->local[0].v, 0.8, 1e-12);

	decode.tenant = 1;
	test_now_ns = 64 * q;
	note_start(&f->e.ctx, st, 1, &decode, 1e7);
	note_end(&f->e.ctx, st, 1, 64 * q + 9000000);
	CU_ASSERT_DOUBLE_EQUAL(st->idle[1].v, 0.9, 1e-12);
	st->serving[1][0] = (struct ema_serving){ 0, INT64_MAX - 1, 0.05, -1 };
	test_now_ns = 64 * q + 5000000000;
	note_start(&f->e.ctx, st, 1, &decode, 1e7);
	note_end(&f->e.ctx, st, 1, test_now_ns + 9450000);
	CU_ASSERT_DOUBLE_EQUAL(st->lend[1].v, 1.0, 1e-9);
	fixture_free(f);
}

/* The prefill share: measured f = 0.4 with 10% of the KV borrowed and the
 * step 5% over T0 gives f0 = 0.4 x 1 / 1.1 x 1.05 = 0.3818, and the step
 * budget shrinks by (1 - 0.4) / (1 - 0.3818) = 0.9706. */
static void test_prefill_factor(void)
{
	struct fixture *f = fixture(NULL, 0);
	struct ema_state *st = st_of(f);
	int32_t borrow = (int32_t)lround(0.1 * 4629);

	st->pf_ns[0] = 0.4;
	st->busy_ns[0] = 1.0;
	st->step_now[0] = st->t0_ns[0] * 1.05;
	CU_ASSERT_DOUBLE_EQUAL(prefill_factor(&f->e.ctx, st, 0), 1.0, 0); /* nothing borrowed */
	f->e.ledger.borrowed_total[0] = borrow;
	{
		double f0 = 0.4 * 4629.0 / (4629.0 + borrow) * 1.05;

		CU_ASSERT_DOUBLE_EQUAL(f0, 0.3818, 0.0001);
		CU_ASSERT_DOUBLE_EQUAL(prefill_factor(&f->e.ctx, st, 0), 0.6 / (1 - f0), 1e-9);
		CU_ASSERT_DOUBLE_EQUAL(prefill_factor(&f->e.ctx, st, 0), 0.9706, 0.0001);
	}
	/* a smaller share than borrowing nothing would give: no cut */
	st->step_now[0] = st->t0_ns[0] * 1.2;
	CU_ASSERT_DOUBLE_EQUAL(prefill_factor(&f->e.ctx, st, 0), 1.0, 0);
	f->e.ledger.borrowed_total[0] = 0;
	fixture_free(f);
}

/* The model both ways: the step step_with predicts for the bytes that
 * bytes_within says a step allows is that step, on every path, lender
 * busy or idle, from T0 to four times it. */
static void test_step_and_bytes_agree(void)
{
	struct fixture *f = fixture(NULL, 0);
	struct ema_state *st = st_of(f);
	double ov = f->e.ctx.hw->iter_overhead_us * 1e3;

	for (int p = PATH_INPLACE; p <= PATH_COMPUTE; p++)
		for (int busy = 0; busy < 2; busy++)
			for (double k = 1.02; k < 4; k += 0.1) {
				double avail = k * st->t0_ns[0] - ov;
				double r = bytes_within(&f->e.ctx, st, 0, busy, p, avail);

				if (r <= 0)
					continue;
				CU_ASSERT_DOUBLE_EQUAL(step_with(&f->e.ctx, st, 0, p, busy, r) / (avail + ov),
						       1.0, 1e-9);
			}
	fixture_free(f);
}

/* The pages held are read by the path that keeps both guarantees best:
 * the smallest max(step / the TPOT budget's step, bytes / lender cap),
 * within both the shorter step (staged left out: prefetch_depth 0). GPU
 * 1's tenant is idle; the caps: in place 1.940 GB, remote attention
 * 1.1155 GB; the TPOT budget's step 1.1 x 8.478 = 9.326 ms. 0.5 GB: both
 * within, remote attention's step (T0, the attention hidden) is shorter
 * than in place's (8.448 / 0.981 + 0.03 = 8.642 ms): compute. 1.2 GB:
 * past remote attention's lender cap (1.076), within both in place: in
 * place. With the TPOT budget spent (remote steps measured at twice the
 * prediction, the budget's step 4.663 ms) budgets are nothing, and the
 * 1.2 GB held are read by remote attention, max(8.478 / 4.663, 1.076) =
 * 1.818, against in place's 8.642 / 4.663 = 1.853. (Until 2026-12-04 a
 * spent budget sent them down the first path: in place at 190 ms steps
 * against 26 on a100x8; then down the first within the lender's budget,
 * whatever its step: 90 against 39.5.) */
static void test_read_path(void)
{
	static const char *const sets[] = { "policy.ema.prefetch_depth=0" };
	struct fixture *f = fixture(sets, 1);
	struct ema_state *st = st_of(f);
	int p, bind;

	CU_ASSERT_DOUBLE_EQUAL(lender_cap(&f->e.ctx, st, 0, 1, PATH_INPLACE) / 1e9, 1.940, 0.001);
	CU_ASSERT_DOUBLE_EQUAL(lender_cap(&f->e.ctx, st, 0, 1, PATH_COMPUTE) / 1e9, 1.1155, 0.0005);
	CU_ASSERT_DOUBLE_EQUAL(step_with(&f->e.ctx, st, 0, PATH_INPLACE, false, 1.2e9) / 1e6, 8.642, 0.001);
	CU_ASSERT_DOUBLE_EQUAL(step_with(&f->e.ctx, st, 0, PATH_COMPUTE, false, 1.2e9), st->t0_ns[0], 1);
	CU_ASSERT_EQUAL(read_path(&f->e.ctx, st, 0, 1, 0.5e9), PATH_COMPUTE);
	CU_ASSERT_EQUAL(read_path(&f->e.ctx, st, 0, 1, 1.2e9), PATH_INPLACE);
	measured(&st->remote[0], 2.0);
	st->t_epoch[0]++; /* (what note_end does with a sample) */
	for (int q = PATH_INPLACE; q <= PATH_COMPUTE; q++)
		CU_ASSERT_EQUAL(tpot_cap(&f->e.ctx, st, 0, 1, q, false), 0);
	CU_ASSERT_EQUAL(budget(&f->e.ctx, st, 0, 1, false, &p, &bind), 0);
	CU_ASSERT_EQUAL(bind, BIND_TPOT);
	CU_ASSERT_EQUAL(read_path(&f->e.ctx, st, 0, 1, 1.2e9), PATH_COMPUTE);
	fixture_free(f);
}

/* Random sequences of page operations on h200x2: either tenant's GPU
 * fills or empties by random steps, and the one whose GPU is full borrows
 * page by page (choose_lender) as far as ema lets it. After every page
 * granted: the borrower holds no more on the lender than its budget there
 * was before the grant, and the lender's predicted load from all its
 * borrowers is within the lender budget (the pages' bytes at each path's
 * cost per byte). */
static void test_random_sequences(void)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	int32_t granted = 0;

	for (int round = 0; round < 6; round++) {
		static const char *const paths[] = { "policy.ema.remote_path=inplace",
						     "policy.ema.remote_path=compute",
						     "policy.ema.remote_path=auto" };
		const char *sets[1] = { paths[round % 3] };
		struct fixture *f = fixture(sets, 1);
		struct ema_state *st = st_of(f);
		const struct ema_policy_ctx *c = &f->e.ctx;
		static int32_t own_pages[2][8192];
		int32_t n_own[2] = { 0, 0 };

		for (int op = 0; op < 400; op++) {
			int t, g;
			int32_t n;

			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			t = (int)(x & 1);
			n = (int32_t)((x >> 8) % 600);
			if ((x >> 20) & 1) {
				/* the tenant's own GPU fills by n pages */
				for (int32_t i = 0; i < n; i++) {
					int32_t pg = ema_ledger_alloc(&f->e.ledger, t, t, EMA_PAGE_KV);

					if (pg < 0)
						break;
					own_pages[t][n_own[t]++] = pg;
				}
			} else {
				/* or empties by n of its own pages */
				for (int32_t i = 0; i < n && n_own[t] > 0; i++)
					ema_ledger_free(&f->e.ledger, t, own_pages[t][--n_own[t]]);
			}
			/* the tenant whose GPU is full borrows what ema grants */
			while (ema_ledger_free_pages(&f->e.ledger, t) == 0 &&
			       (g = ema_choose_lender(c, st, t)) >= 0) {
				int32_t before = budget(c, st, t, g, false, NULL, NULL);

				CU_ASSERT_FATAL(ema_ledger_alloc(&f->e.ledger, g, t, EMA_PAGE_KV) >= 0);
				granted++;
				CU_ASSERT(f->e.ledger.borrowed[t][g] <= before);
				CU_ASSERT(lender_load(c, st, g, -1) <=
					  own(c)->lender_budget / clampd(st->lend[g].v, 0.25, 8.0) + 1e-9);
			}
		}
		fixture_free(f);
	}
	CU_ASSERT(granted > 100);
}

/* The fadings' memos (fade): over random sequences of distances and
 * time constants, some repeated, the value from a memo of one or two
 * entries is the double exp() computes; and averages folded and read
 * through the memos (note_end's two, each average's own) hold, and read,
 * the same doubles as averages that compute every fading. */
static void test_fade_memo(void)
{
	struct fixture *f = fixture(NULL, 0);
	const struct ema_policy_ctx *c = &f->e.ctx;
	struct fade_memo two[2] = {{0}}, one = {0};
	struct ema_avg a[3], b[3];
	int next = 0, hits = 0, bad = 0;
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	int64_t now = 0;
	static const int64_t dts[] = { 1, 20000000, 28715683, 39091795, 5000000000 };
	static const double taus[] = { 5e9, 1e9, 0.5e9 };

	for (int i = 0; i < 20000; i++) {
		int64_t dt;
		double tau, want;
		bool held;

		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		dt = (x >> 8) % 3 ? dts[(x >> 16) % 5] : 1 + (int64_t)((x >> 20) % 100000000);
		tau = taus[(x >> 40) % 3];
		want = exp(-(double)dt / tau);
		held = (two[0].dt == dt && two[0].tau == tau) || (two[1].dt == dt && two[1].tau == tau);
		hits += held;
		bad += fade(two, 2, &next, dt, tau) != want;
		bad += fade(&one, 1, NULL, dt, tau) != want;
		bad += fade(NULL, 0, NULL, dt, tau) != want;
	}
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT(hits > 1000);
	/* three averages sampled at shared times (a step's end) and apart,
	 * read at random times: through the memos and without */
	next = 0;
	two[0] = two[1] = (struct fade_memo){ 0, 0, 0 };
	for (int k = 0; k < 3; k++) {
		avg_init(&a[k]);
		avg_init(&b[k]);
	}
	for (int i = 0; i < 20000; i++) {
		int k;
		double v;

		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		now += (x >> 8) % 4 ? 0 : 1 + (int64_t)((x >> 12) % 60000000);
		k = (int)((x >> 40) % 3);
		v = 0.5 + (double)((x >> 20) % 1000) / 500.0;
		if ((x >> 50) % 2) {
			avg_add(c, &a[k], v, now, two, 2, &next);
			avg_add(c, &b[k], v, now, NULL, 0, NULL);
		}
		/* read as of now and a little later, b's memo cleared first */
		for (int d = 0; d < 2; d++) {
			int64_t t = now + d * (int64_t)((x >> 30) % 30000000);

			b[k].read = (struct fade_memo){ 0, 0, 0 };
			bad += avg_value(c, &a[k], t) != avg_value(c, &b[k], t);
		}
		bad += a[k].v != b[k].v || a[k].prev != b[k].prev || a[k].at != b[k].at;
	}
	CU_ASSERT_EQUAL(bad, 0);
	fixture_free(f);
}

/* The base of a borrower's budgets (budget_base) and served()'s memo:
 * over a random sequence of what a budget reads changing (time, the
 * pages the borrower holds, its averages' samples and prefill share as
 * note_end and ema_plan change them, the lender busy or not), every
 * budget through the memos is the one computed with them cleared, the
 * base's step is tpot_step's and its bytes bytes_within's, the same
 * doubles. */
static void test_base_memo(void)
{
	struct fixture *f = fixture(NULL, 0);
	struct ema_state *st = st_of(f);
	struct ema_policy_mech mech = *f->e.ctx.mech;
	const struct ema_policy_ctx *c = &f->e.ctx;
	double ov = c->hw->iter_overhead_us * 1e3;
	int32_t held[4096], n_held = 0, own_held[4096], n_own = 0;
	uint64_t x = 0xd1b54a32d192ed03ULL;
	int bad = 0, checks = 0;
	struct ema_state *cold = malloc(sizeof *cold);

	CU_ASSERT_PTR_NOT_NULL_FATAL(cold);
	mech.now = test_now;
	f->e.ctx.mech = &mech;
	test_now_ns = 1000000000;
	for (int i = 0; i < 6000; i++) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		switch ((x >> 4) % 8) {
		case 0:
			test_now_ns += (int64_t)((x >> 12) % 60000000);
			break;
		case 1:
		case 2:
			if (n_held < 4096) {
				int32_t pg = ema_ledger_alloc(&f->e.ledger, 1, 0, EMA_PAGE_KV);

				if (pg >= 0)
					held[n_held++] = pg;
			}
			break;
		case 3:
			if (n_held > 0)
				ema_ledger_free(&f->e.ledger, 1, held[--n_held]);
			break;
		case 4: /* note_end's samples */
			avg_add(c, (x >> 20) & 1 ? &st->remote[0] : &st->local[0],
				0.8 + (double)((x >> 24) % 100) / 100.0, test_now_ns, NULL, 0, NULL);
			st->busy_ns[0] += 3e7;
			st->pf_ns[0] += (x >> 30) & 1 ? 1e7 : 0;
			st->t_epoch[0]++;
			break;
		case 5: /* ema_plan's predicted step */
			st->step_now[0] = st->t0_ns[0] * (1.0 + (double)((x >> 20) % 50) / 100.0);
			st->t_epoch[0]++;
			break;
		case 6: /* the lender runs, or not */
			if ((x >> 20) & 1 && n_own < 4096) {
				int32_t pg = ema_ledger_alloc(&f->e.ledger, 1, 1, EMA_PAGE_KV);

				if (pg >= 0)
					own_held[n_own++] = pg;
			} else if (n_own > 0) {
				ema_ledger_free(&f->e.ledger, 1, own_held[--n_own]);
			}
			break;
		default:
			break;
		}
		for (int admit = 0; admit < 2; admit++) {
			int p1, b1, p2, b2;
			int32_t n1, n2;
			struct base_memo *m;
			bool busy = gpu_busy(c, 1);

			n1 = budget(c, st, 0, 1, admit, &p1, &b1);
			m = &st->base[0][admit];
			bad += m->avail != tpot_step(c, st, 0, admit) - ov;
			for (int p = PATH_INPLACE; p <= PATH_COMPUTE; p++)
				if (m->have >> (p * 2 + busy) & 1)
					bad += m->tc[p][busy] != bytes_within(c, st, 0, busy, p, m->avail);
			/* the same state with the memos cleared */
			memcpy(cold, st, sizeof *cold);
			memset(cold->base, 0, sizeof cold->base);
			memset(cold->served_memo, 0, sizeof cold->served_memo);
			n2 = budget(c, cold, 0, 1, admit, &p2, &b2);
			bad += n1 != n2 || p1 != p2 || b1 != b2;
			checks++;
		}
		/* served()'s memo, over bytes some of which repeat */
		{
			double r = (x >> 40) % 2 ? 1e9 : (double)((x >> 20) % 4000) * 1e6;
			int p = 1 + (int)((x >> 50) % 3);
			bool busy = (x >> 55) & 1;

			bad += served_memoized(c, st, 0, p, busy, r) != served(c, st, 0, p, busy, r);
		}
	}
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT(checks == 12000);
	CU_ASSERT(n_held > 0 || n_own > 0);
	while (n_held > 0)
		ema_ledger_free(&f->e.ledger, 1, held[--n_held]);
	while (n_own > 0)
		ema_ledger_free(&f->e.ledger, 1, own_held[--n_own]);
	free(cold);
	fixture_free(f);
}

/* The serving rings' index: the entries a borrower's step opened (which
 * its end closes) and each ring's last end (serving_until). Two
 * borrowers on h200x8 plan steps reading GPUs 2 and 3 (a ring each,
 * shared, so that entries of steps in flight are written over) and end
 * them at random times: after every end no entry of that borrower is
 * open, each ring's serving_until is the largest `until` in it, and
 * serving_load over random windows is the whole ring's scan. */
static void test_serving_index(void)
{
	static const char *const sets[] = { "hardware=h200x8", "policy.ema.prefetch_depth=0" };
	struct fixture *f = fixture(sets, 2);
	struct ema_state *st = st_of(f);
	struct ema_policy_mech mech = *f->e.ctx.mech;
	uint64_t x = 0x243f6a8885a308d3ULL;
	int bad = 0, ends = 0;

	mech.now = test_now;
	f->e.ctx.mech = &mech;
	test_now_ns = 0;
	for (int i = 0; i < 4000; i++) {
		int t;

		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		t = (int)(x & 1);
		test_now_ns += (int64_t)((x >> 4) % 3000000);
		if (!st->pending[t] || (x >> 30) % 4 == 0) {
			struct ema_iteration it;
			int n = 0;

			ema_iteration_clear(&it);
			it.tenant = t;
			it.gpu = t;
			it.n_seqs = 1;
			it.decode_tokens = 1;
			it.weight_bytes = 16060000000ull;
			for (int g = 2; g < 4; g++)
				if ((x >> (40 + g)) & 1 || (g == 3 && n == 0)) {
					it.remote[n].gpu = g;
					it.remote[n].bytes = 100000000ull * (uint64_t)(1 + (x >> 50) % 8);
					n++;
				}
			it.n_remote = n;
			ema_plan(&f->e.ctx, st, &it); /* (a step in flight ends first) */
		} else {
			note_end(&f->e.ctx, st, t, test_now_ns);
			ends++;
			for (int g = 0; g < 8; g++)
				for (int k = 0; k < EMA_SERVING_RING; k++)
					bad += st->serving[g][k].borrower == t &&
					       st->serving[g][k].until == EMA_SERVING_OPEN;
		}
		for (int g = 0; g < 8; g++) {
			int64_t most = -1, start, end;
			double want = 0, got;
			bool any = false, serving;

			for (int k = 0; k < EMA_SERVING_RING; k++)
				if (st->serving[g][k].until > most)
					most = st->serving[g][k].until;
			bad += st->serving_until[g] != most;
			start = test_now_ns - (int64_t)((x >> 20) % 10000000);
			end = start + 1 + (int64_t)((x >> 36) % 10000000);
			for (int k = 0; k < EMA_SERVING_RING; k++) {
				const struct ema_serving *sv = &st->serving[g][k];

				if (sv->until > start && sv->from < end) {
					any = true;
					if (sv->load > want)
						want = sv->load;
				}
			}
			got = serving_load(st, g, start, end, &serving);
			bad += got != want || serving != any;
		}
	}
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT(ends > 500);
	fixture_free(f);
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{ "the local-only step of a full GPU", test_local_only_step },
		{ "in place: the TPOT and lender caps by hand", test_inplace_caps },
		{ "remote attention: the caps by hand, busy and idle", test_compute_caps },
		{ "staged: the TPOT cap's quadratic by hand", test_staged_cap },
		{ "auto: per lender the path that allows most", test_auto_picks_most },
		{ "borrowing only where it pays", test_only_where_it_pays },
		{ "a lender's demand first", test_lender_demand_first },
		{ "one lender budget for all its borrowers", test_lender_budget_shared },
		{ "feedback corrects the caps", test_feedback },
		{ "the fadings' memos: the doubles exp() gives", test_fade_memo },
		{ "a borrower's budget base and served(): the memos' doubles", test_base_memo },
		{ "a lender learns its slowdown from decode steps", test_lender_learns_from_decodes },
		{ "a borrower's step reads its lender until it ends", test_serving_open },
		{ "remote steps' error over local ones: 1 until measured", test_relative_error },
		{ "corrections from decode steps; a lender's baseline held", test_decodes_and_baseline },
		{ "the serving rings' index: the whole rings' answers", test_serving_index },
		{ "the prefill share's factor", test_prefill_factor },
		{ "the step predicted and the bytes a step allows agree", test_step_and_bytes_agree },
		{ "pages held are read by the shortest path within budget", test_read_path },
		{ "random page operations: no grant past a budget", test_random_sequences },
		{ NULL, NULL }
	};

	if (ema_engine_register_policies(ema_policy_table) != EMA_OK)
		return 99;
	return ema_test_run("planner", cases);
}
