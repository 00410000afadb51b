/* test_ema_memo.c: what ema's hooks remember between calls (the decay by
 * run time, whether a lender is under its headroom by ledger operation
 * count, the lender guard by instant and note count, link and step costs)
 * answers as a fresh computation does, the lender guard's bound bounds
 * it and decides as it does, the lender guard's visit of the GPUs read
 * from alone as a visit of every one, and borrowable_below says "fewer"
 * only where borrowable gives fewer (its TPOT bound bounds the TPOT
 * budget's pages for every lender), under random
 * sequences of page operations, iterations and clock moves on 4 GPUs. policies/ema.c is
 * included for its static functions; its ema_policy_ema stands in for the
 * library's (the linker then takes no ema.o from libema_policies.a). */
#include "../policies/ema.c"

#include <stdio.h>

#include "test_main.h"

#include "mock_platform.h"

static uint64_t xs = 11;
static uint32_t rnd(uint32_t n)
{
	xs ^= xs << 13; xs ^= xs >> 7; xs ^= xs << 17;
	return (uint32_t)(xs % n);
}

/* A copy of the state with every memo forgotten: what a first call
 * computes. */
static void forget(struct ema_state *fresh, const struct ema_state *st)
{
	memcpy(fresh, st, sizeof *fresh);
	memset(fresh->link_memo, 0, sizeof fresh->link_memo);
	fresh->slow_valid = false;
	memset(fresh->step0_valid, 0, sizeof fresh->step0_valid);
	memset(fresh->step_memo, 0, sizeof fresh->step_memo);
	memset(fresh->decay_memo, 0, sizeof fresh->decay_memo);
	fresh->short_valid = false;
	fresh->bound_valid = false;
}

/* lendable() as the lending rules and ema's caps state it, one by one. */
static int32_t lendable_by_rules(const struct ema_policy_ctx *c, struct ema_state *fresh, int g,
				 bool admit)
{
	int32_t n = ema_lending_lendable(c, g);
	int32_t left = fresh->max_lent[g] - ema_ledger_lent_pages(c->ledger, g);
	int32_t band = ema_ledger_free_pages(c->ledger, g) - fresh->band_keep[g];

	n = left < n ? left : n;
	n = band < n ? band : n;
	if (n > 0 && c->ledger->gpu[g].home_tenant >= 0 && own(c)->queue_guard) {
		/* the queue guard: its tenant's queued request, if it fits the GPU */
		int32_t need = ema_policy_queue_need(c, c->ledger->gpu[g].home_tenant);

		if (need > 0 && need <= c->kv_capacity_pages[c->ledger->gpu[g].home_tenant] &&
		    (admit || need >= ema_ledger_free_pages(c->ledger, g)))
			n = 0;
		/* and its hold: for new requests, until queue_hold_s after the
		 * tenant last left a request queued */
		if (admit && own(c)->queue_hold_s > 0) {
			int64_t waited = ema_policy_queue_waited_ns(c, c->ledger->gpu[g].home_tenant);

			if (waited >= 0 && waited + (int64_t)llround(own(c)->queue_hold_s * 1e9) >
						   ema_policy_now(c))
				n = 0;
		}
	}
	if (admit && n > 0 && c->ledger->gpu[g].home_tenant >= 0 &&
	    lender_slowdown_now(c, fresh, g) >= own(c)->lender_slowdown)
		n = 0;
	return n > 0 ? n : 0;
}

/* The lender guard of GPU g as it read before the masks: every tenant,
 * every GPU, exp at each borrower. */
static double slowdown_every_gpu(const struct ema_policy_ctx *c, const struct ema_state *st, int g)
{
	int64_t now = ema_policy_now(c);
	double gbps[EMA_MAX_GPUS];

	for (int h = 0; h < c->n_gpus; h++)
		gbps[h] = 0;
	for (int t = 0; t < c->n_tenants; t++) {
		double gap = 0, decay = 0, span = 0;
		bool some = false;

		if (!st->noted[t] || !st->read_any[t])
			continue;
		for (int h = 0; h < c->n_gpus; h++) {
			if (st->read_bytes[t][h] <= 0)
				continue;
			if (!some) {
				gap = (double)(now - st->noted_ns[t]);
				decay = exp(-gap / EMA_TPOT_WINDOW_NS);
				span = st->read_ns[t] * decay + gap;
				some = true;
			}
			gbps[h] += st->read_bytes[t][h] * decay / (span > 1e6 ? span : 1e6);
		}
	}
	return c->hw->hbm_read_gbps > 0 ? c->hw->interference_lender * gbps[g] / c->hw->hbm_read_gbps : 0.0;
}

/* The masks name every GPU a tenant read from and every tenant that read. */
static int masks_wrong(const struct ema_state *st)
{
	int bad = 0;

	for (int t = 0; t < EMA_MAX_TENANTS; t++) {
		bad += st->read_any[t] != ((st->readers >> t) & 1u);
		for (int g = 0; g < EMA_MAX_GPUS; g++)
			bad += !((st->read_mask[t] >> g) & 1u) && st->read_bytes[t][g] != 0;
	}
	return bad;
}

/* choose_lender's pick as pick_by_budget makes it from every GPU's
 * budget and lendable pages, computed first. */
static int pick_by_rules(const struct ema_policy_ctx *c, struct ema_state *fresh, int t)
{
	int32_t avail[EMA_MAX_GPUS] = {0}, budget[EMA_MAX_GPUS] = {0};
	int32_t total = ema_ledger_borrowed_pages(c->ledger, t);
	int32_t b = link_pages(c, fresh, t, total);

	if (fresh->never[t] || total + 1 > fresh->max_borrow[t])
		return -1;
	for (int g = 0; g < c->n_gpus; g++) {
		if (g == c->tenant_gpu[t])
			continue;
		budget[g] = budget_of(c, b, g, c->ledger->borrowed[t], total,
				      ema_ledger_lent_pages(c->ledger, g));
		if (!link_budgets(c) || budget[g] >= 1)
			avail[g] = lendable(c, fresh, g, false);
	}
	return pick_by_budget(c, t, avail, budget);
}

/* An iteration of tenant t: prefill or decode tokens, KV and remote reads
 * as the engine would hand them. */
static void plan_random(struct ema_engine *e, int t)
{
	struct ema_iteration it;
	int n_gpus = e->ledger.n_gpus;

	memset(&it, 0, sizeof it);
	it.tenant = t;
	it.gpu = e->tenants[t].gpu;
	it.weight_bytes = 2000000;
	it.kv_local_bytes = (uint64_t)rnd(100) * 4096;
	it.prefill_tokens = rnd(3) == 0 ? 1 + (int)rnd(200) : 0;
	it.decode_tokens = (int)rnd(8);
	it.flops = (double)rnd(1000000);
	for (int g = 0; g < n_gpus; g++)
		if (g != it.gpu && e->ledger.borrowed[t][g] > 0 && it.n_remote < EMA_MAX_GPUS) {
			it.remote[it.n_remote].gpu = g;
			it.remote[it.n_remote].n_pages = e->ledger.borrowed[t][g];
			it.remote[it.n_remote].bytes = (uint64_t)rnd(100000000);
			it.n_remote++;
		}
	ema_policy_ema.plan_iteration(&e->ctx, e->policy_state, &it);
}

struct held { int gpu; int32_t page; };

static void test_memos_random(void)
{
	/* run-time moves: none (same instant), 1 ns, steps' worth, and 3 s,
	 * where the guard's bound is loose */
	static const int64_t gaps[] = {0, 0, 1, 250000, 3000000000, 1000000, 1000001, 3000000};
	static struct held held[4096];
	struct ema_state *fresh = malloc(sizeof *fresh);
	int checks = 0, bad_short = 0, bad_lend = 0, bad_slow = 0, bad_decay = 0, bad_borrow = 0;
	int shorts = 0, guarded = 0, on_hold = 0, readers = 0, bad_bound = 0, undecided = 0;
	int bad_below = 0, shortcuts = 0, bad_tpot = 0, tpot_tight = 0, tpot_asked = 0;

	CU_ASSERT_FATAL(fresh != NULL);
	for (int round = 0; round < 4; round++) {
		struct ema_request_spec r[3][1] = {{{0, 1, 1}}, {{0, 1, 1}}, {{0, 1, 1}}};
		struct ema_workload w[3] = {{r[0], 1, 1}, {r[1], 1, 1}, {r[2], 1, 1}};
		struct ema_config cfg;
		struct ema_engine e;
		struct ema_error err = {0};
		struct mock *m;
		struct ema_state *st;
		int n_held = 0;

		/* 4 GPUs of 100 KV pages, 3 tenants: GPU 3 only lends */
		tiny_config(&cfg, 4, (489 + 100) * 4.0 / 1024);
		cfg.n_tenants = 3;
		cfg.hw.interference_lender = 1;
		/* in one round reading in place costs 1 / 0.7 of the local
		 * time, so that staging a few pages is cheaper (the TPOT
		 * bound's floor then comes from the staged cost) */
		cfg.hw.inplace_overlap_efficiency = round == 1 ? 0.7 : 0;
		cfg.hw.topology = round % 2 ? EMA_TOPO_SWITCH : EMA_TOPO_DIRECT;
		cfg.policy.remote_path = round < 2 ? EMA_PATH_AUTO : EMA_PATH_STAGED;
		cfg.policy.prefetch_depth = 1;
		/* a floor above reserve + headroom binds while a lender's own
		 * tenant uses little; the slowdown cap binds in half the rounds */
		cfg.policy.lender_floor = round % 2 ? 0.3 : 0.1;
		cfg.policy.lender_reserve = 0.05;
		cfg.policy.headroom = 0.1;
		cfg.policy.lender_max_slowdown = round < 2 ? 0.1 : 0;
		cfg.serving.layer_groups = 4;
		/* link budgets of about 30 pages, which the borrowers reach */
		CU_ASSERT_FATAL(set_own_knob(&cfg, "ema", "link_share", 0.3));
		m = mock_new(&cfg);
		CU_ASSERT_EQUAL_FATAL(ema_engine_create(&e, &cfg, &ema_policy_ema, &m->base, w, &err), EMA_OK);
		st = e.policy_state;
		for (int step = 0; step < 4000; step++) {
			const struct ema_policy_ctx *c = &e.ctx;
			uint32_t op = rnd(10);

			if (op < 4 && n_held < 4096) {
				/* a page for a tenant, mostly its own GPU's */
				int t = (int)rnd(3), g = rnd(3) ? e.tenants[t].gpu : (int)rnd(4);
				int32_t p = ema_ledger_alloc(&e.ledger, g, t, rnd(8) ? EMA_PAGE_KV : EMA_PAGE_STAGING);

				if (p >= 0)
					held[n_held++] = (struct held){g, p};
			} else if (op < 7 && n_held > 0) {
				int k = (int)rnd((uint32_t)n_held);

				ema_ledger_free(&e.ledger, held[k].gpu, held[k].page);
				held[k] = held[--n_held];
			} else if (op < 9) {
				plan_random(&e, (int)rnd(3));
			} else {
				m->now += gaps[rnd(8)];
				/* now and then a tenant's try to start leaves a
				 * request queued: the queue guard's hold */
				if (rnd(4) == 0)
					e.tenants[rnd(3)].queue_left_ns = m->now;
			}
			readers += __builtin_popcount(st->readers) > 1;
			/* every memo, against what a first call computes */
			forget(fresh, st);
			checks++;
			shorts += lender_short_compute(c, fresh);
			bad_short += lender_short(c, st) != lender_short_compute(c, fresh);
			lender_bound_compute(c, fresh, m->now);
			for (int g = 0; g < 4; g++) {
				int32_t a = lendable(c, st, g, true), b = lendable_by_rules(c, fresh, g, true);

				guarded += lendable_by_rules(c, fresh, g, false) > 0 && b == 0;
				on_hold += lendable_by_rules(c, fresh, g, false) > 0 && b == 0 &&
					e.ledger.gpu[g].home_tenant >= 0 &&
					queue_hold_until(c, e.ledger.gpu[g].home_tenant) >= 0;
				bad_lend += a != b;
				bad_lend += lendable(c, st, g, false) != lendable_by_rules(c, fresh, g, false);
				bad_slow += lender_slowdown_now(c, st, g) != lender_slowdown_now(c, fresh, g);
				bad_slow += lender_slowdown_now(c, st, g) != slowdown_every_gpu(c, st, g);
				/* the guard's bound is one, within the 1e-9 it leaves for
				 * rounding, and its answer the exact one's */
				bad_bound += !(fresh->bound[g] * (1 + 1e-9) >= slowdown_every_gpu(c, st, g));
				bad_bound += lender_guard_refuses(c, st, g) !=
					     (slowdown_every_gpu(c, st, g) >= own(c)->lender_slowdown);
				/* and at limits a hair above, at and below the figure:
				 * above, the bound leaves it to the exact figure */
				for (int k = 0; k < 3; k++) {
					double x = slowdown_every_gpu(c, st, g), v = x * (1 + (1 - k) * 1e-7);

					if (x <= 0)
						break;
					CU_ASSERT_FATAL(set_own_knob(&cfg, "ema", "lender_slowdown", v));
					bad_bound += lender_guard_refuses(c, st, g) != (x >= v);
					undecided += fresh->bound[g] * (1 + 1e-9) >= v && x < v;
				}
				CU_ASSERT_FATAL(set_own_knob(&cfg, "ema", "lender_slowdown", LENDER_SLOWDOWN_DEFAULT));
			}
			bad_slow += masks_wrong(st);
			for (int t = 0; t < 3; t++) {
				int64_t d = st->noted[t] ? m->now - st->noted_ns[t] : (int64_t)rnd(1u << 30);

				bad_decay += decay_of(st, d) != exp(-(double)d / EMA_TPOT_WINDOW_NS);
				bad_borrow += ema_borrowable(c, st, t) != ema_borrowable(c, fresh, t);
				/* the TPOT budget's bound is one for every lender, and
				 * within two pages of it somewhere */
				{
					int32_t tb = tpot_pages_bound(c, st, t);

					for (int g = 0; g < 4; g++) {
						int32_t tl;

						if (g == c->tenant_gpu[t])
							continue;
						tl = tpot_pages_left(c, fresh, t, g);
						bad_tpot += tb < tl;
						tpot_asked += tl < INT32_MAX / 2;
						tpot_tight += tl < INT32_MAX / 2 && tb <= tl + 2;
					}
				}
				bad_borrow += ema_choose_lender(c, st, t) != pick_by_rules(c, fresh, t);
				/* the shortcut says "fewer than want" only where it is
				 * so, and says it at least somewhere */
				{
					int32_t have = ema_borrowable(c, fresh, t);

					for (int32_t want = have - 2; want <= have + 400; want += 7) {
						bool below = ema_borrowable_below(c, st, t, want);

						bad_below += below && have >= want;
						shortcuts += below;
					}
				}
			}
		}
		while (n_held > 0) {
			n_held--;
			ema_ledger_free(&e.ledger, held[n_held].gpu, held[n_held].page);
		}
		e.platform = NULL;
		mock_destroy(&m->base);
		ema_engine_destroy(&e);
	}
	free(fresh);
	CU_ASSERT_EQUAL(bad_short, 0);
	CU_ASSERT_EQUAL(bad_lend, 0);
	CU_ASSERT_EQUAL(bad_slow, 0);
	CU_ASSERT_EQUAL(bad_decay, 0);
	CU_ASSERT_EQUAL(bad_bound, 0);
	CU_ASSERT_EQUAL(bad_borrow, 0);
	CU_ASSERT_EQUAL(bad_below, 0);
	CU_ASSERT(shortcuts > 0);
	CU_ASSERT_EQUAL(bad_tpot, 0);
	CU_ASSERT(tpot_asked > 1000 && tpot_tight > tpot_asked / 2);
	/* the sequences reach the cases the memos decide: some lender under
	 * its headroom, some not; the guard refusing a lender */
	CU_ASSERT(shorts > 0 && shorts < checks);
	CU_ASSERT(guarded > 0);
	CU_ASSERT(on_hold > 0);
	/* and cases the bound leaves to the exact figure, not refused */
	CU_ASSERT(undecided > 0);
	CU_ASSERT(readers > 0);
}

/* The decay memo maps colliding run times to their own exp: two gaps
 * that share a slot, asked in turn, each get exp of their own. */
static void test_decay_collisions(void)
{
	struct ema_state *st = calloc(1, sizeof *st);
	int bad = 0;

	CU_ASSERT_FATAL(st != NULL);
	for (int i = 0; i < 20000; i++) {
		int64_t d = (int64_t)rnd(3) * EMA_DECAY_MEMO + (int64_t)rnd(1u << 20) * 1000;

		bad += decay_of(st, d) != exp(-(double)d / EMA_TPOT_WINDOW_NS);
	}
	/* by hand: no decay over no time, e^-1 over the 10 s window */
	CU_ASSERT_EQUAL(decay_of(st, 0), 1.0);
	CU_ASSERT_DOUBLE_EQUAL(decay_of(st, 10000000000LL), 0.36787944117144233, 1e-15);
	CU_ASSERT_EQUAL(bad, 0);
	free(st);
}

/* The notes of ema's steps: what plan_leap must leave as plan_iteration
 * would (the memos aside). */
static bool same_notes(const struct ema_state *a, const struct ema_state *b)
{
	return memcmp(a->busy_ns, b->busy_ns, sizeof a->busy_ns) == 0 &&
	       memcmp(a->prefill_ns, b->prefill_ns, sizeof a->prefill_ns) == 0 &&
	       memcmp(a->read_bytes, b->read_bytes, sizeof a->read_bytes) == 0 &&
	       memcmp(a->read_ns, b->read_ns, sizeof a->read_ns) == 0 &&
	       memcmp(a->read_mask, b->read_mask, sizeof a->read_mask) == 0 &&
	       memcmp(a->noted_ns, b->noted_ns, sizeof a->noted_ns) == 0 &&
	       memcmp(a->noted, b->noted, sizeof a->noted) == 0 && a->notes == b->notes &&
	       a->readers == b->readers;
}

/* plan_leap is plan_iteration step by step: from states that random
 * iterations left (remote reads, prefills, the guard's sums), runs of
 * random leapt steps (decodes, nothing remote, FLOPs memory- or
 * compute-bound) noted at once and one by one at their starts leave the
 * same sums, to the bit, with the TPOT budget and the lender guard each
 * on and off. */
static void test_plan_leap(void)
{
	int bad = 0, runs = 0, compute_bound = 0, decaying = 0;

	for (int round = 0; round < 4; round++) {
		struct ema_request_spec r[3][1] = {{{0, 1, 1}}, {{0, 1, 1}}, {{0, 1, 1}}};
		struct ema_workload w[3] = {{r[0], 1, 1}, {r[1], 1, 1}, {r[2], 1, 1}};
		struct ema_config cfg;
		struct ema_engine e;
		struct ema_error err = {0};
		struct mock *m;
		struct ema_state *one = malloc(sizeof *one);

		CU_ASSERT_FATAL(one != NULL);
		tiny_config(&cfg, 4, (489 + 100) * 4.0 / 1024);
		cfg.n_tenants = 3;
		/* both on, the TPOT budget alone, the guard alone, neither */
		CU_ASSERT_FATAL(set_own_knob(&cfg, "ema", "tpot_slack", round < 2 ? 0.2 : 0));
		CU_ASSERT_FATAL(set_own_knob(&cfg, "ema", "lender_slowdown",
					     round % 2 == 0 ? 0.1 : 0));
		m = mock_new(&cfg);
		CU_ASSERT_EQUAL_FATAL(ema_engine_create(&e, &cfg, &ema_policy_ema, &m->base, w, &err), EMA_OK);
		for (int k = 0; k < 300; k++) {
			struct ema_state *st = e.policy_state;
			struct ema_leap_step steps[40];
			int64_t start[40];
			struct ema_iteration it;
			int t = (int)rnd(3), n = 1 + (int)rnd(40);

			/* some iterations of any kind first */
			for (int i = (int)rnd(4); i > 0; i--) {
				int32_t p = ema_ledger_alloc(&e.ledger, (int)rnd(4), (int)rnd(3), EMA_PAGE_KV);

				(void)p;
				plan_random(&e, (int)rnd(3));
				m->now += 1 + (int64_t)rnd(5000000);
			}
			memset(&it, 0, sizeof it);
			it.tenant = t;
			it.gpu = e.tenants[t].gpu;
			it.weight_bytes = 2000000;
			for (int i = 0; i < n; i++) {
				m->now += 1 + (int64_t)rnd(3) * 1000 + (int64_t)rnd(1000000);
				start[i] = m->now;
				steps[i].n_seqs = 1 + (int)rnd(64);
				steps[i].act_bytes = (uint64_t)rnd(1000) * 64;
				steps[i].kv_local_bytes = (uint64_t)rnd(1000) * 4096;
				steps[i].flops = (double)rnd(4) * (double)rnd(1u << 30) * 1000.0;
				steps[i].attention_flops = 0;
				steps[i].flops_bound = false;
			}
			memcpy(one, st, sizeof *one);
			/* one by one, as the engine's stepping plans them */
			e.policy_state = one;
			for (int i = 0; i < n; i++) {
				struct ema_iteration s1 = it;
				double local = ema_cost_local_ns_of(e.ctx.hw, it.weight_bytes,
								    steps[i].kv_local_bytes, steps[i].act_bytes);

				compute_bound += !ema_cost_surely_memory_bound(e.ctx.hw, steps[i].flops, local);
				s1.n_seqs = steps[i].n_seqs;
				s1.decode_tokens = steps[i].n_seqs;
				s1.act_bytes = steps[i].act_bytes;
				s1.kv_local_bytes = steps[i].kv_local_bytes;
				s1.flops = steps[i].flops;
				m->now = start[i];
				ema_policy_ema.plan_iteration(&e.ctx, one, &s1);
			}
			/* at once (with bytes read before that still decay: a
			 * tenant that once borrowed, with the guard on) */
			decaying += round % 2 == 0 && st->read_mask[t] != 0;
			e.policy_state = st;
			ema_policy_ema.plan_leap(&e.ctx, st, &it, n, steps, start);
			bad += !same_notes(st, one);
			runs++;
		}
		for (int g = 0; g < 4; g++)
			for (int32_t p = 0; p < e.ledger.gpu[g].capacity; p++)
				if (e.ledger.gpu[g].pages[p].state == EMA_PAGE_KV)
					ema_ledger_free(&e.ledger, g, p);
		free(one);
		e.platform = NULL;
		mock_destroy(&m->base);
		ema_engine_destroy(&e);
	}
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT(runs == 1200);
	CU_ASSERT(compute_bound > 0);
	CU_ASSERT(decaying > 50);
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{"ema's memos answer as fresh computations under random operations", test_memos_random},
		{"the decay memo keeps colliding run times apart", test_decay_collisions},
		{"plan_leap notes a leap's steps as plan_iteration does one by one", test_plan_leap},
		{NULL, NULL},
	};

	if (ema_engine_register_policies(ema_policy_table) != EMA_OK)
		return 99;
	return ema_test_run("ema_memo", cases);
}
