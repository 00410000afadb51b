/* test_policies_alone.c: the policies library stands on base/ alone. This
 * program is compiled with only base/ and policies/ on the include path
 * and linked with only libema_policies.a and libema_base.a: a policy that
 * referenced a symbol of serve/ (the engine's mechanisms, a request's
 * fields) would fail its link, and so `make check`. Every object of the
 * library is linked in, reached from ema_policy_table. Then it drives the
 * shared lending rules through a stub engine of its own (its own struct
 * ema_engine and struct ema_request, its own mechanism table), as any
 * engine may: by hand, the reclaims of remote_direct. */
#include "test_main.h"

#include <stdarg.h>

#include "policy.h"

/* A request of this stub engine: the view policies read first, as
 * policy.h asks, then what the stub keeps. */
struct ema_request {
	struct ema_request_view view;
	int id;
};

/* The stub engine: what the mechanisms were asked, in order. */
struct ema_engine {
	char calls[256];             /* "move_home(1,1) preempt(1) ..." */
	struct ema_request *victims[4];
	int n_victims;
	bool demote_ok;
	int64_t now;
};

__attribute__((format(printf, 2, 3)))
static void note(const struct ema_policy_ctx *c, const char *fmt, ...)
{
	struct ema_engine *e = c->engine;
	size_t n = strlen(e->calls);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e->calls + n, sizeof e->calls - n, fmt, ap);
	va_end(ap);
}

static int64_t stub_now(const struct ema_policy_ctx *c)
{
	note(c, "now ");
	return c->engine->now;
}

static void stub_preempt(const struct ema_policy_ctx *c, struct ema_request *r)
{
	note(c, "preempt(%d) ", r->id);
}

static bool stub_demote(const struct ema_policy_ctx *c, struct ema_request *r)
{
	note(c, "demote(%d) ", r->id);
	return c->engine->demote_ok;
}

static int32_t stub_move_home(const struct ema_policy_ctx *c, struct ema_request *r, int lender)
{
	note(c, "move_home(%d,%d) ", r->id, lender);
	return r->view.pages_on[lender];
}

static int32_t stub_pool_reclaim(const struct ema_policy_ctx *c, int gpu, int32_t need)
{
	note(c, "pool_reclaim(%d,%d) ", gpu, need);
	return need + 1;
}

static int stub_borrowers_on(const struct ema_policy_ctx *c, int gpu,
			     struct ema_request *const **out)
{
	note(c, "borrowers_on(%d) ", gpu);
	*out = c->engine->victims;
	return c->engine->n_victims;
}

static int32_t stub_queue_need(const struct ema_policy_ctx *c, int tenant)
{
	note(c, "queue_need(%d) ", tenant);
	return 100 + tenant;
}

static int64_t stub_queue_waited_ns(const struct ema_policy_ctx *c, int tenant)
{
	note(c, "queue_waited_ns(%d) ", tenant);
	return 200 + tenant;
}

static void stub_record_reclaim(const struct ema_policy_ctx *c, int gpu, int32_t pages,
				int64_t start_ns, int64_t latency_ns)
{
	note(c, "record_reclaim(%d,%d,%lld,%lld) ", gpu, pages, (long long)start_ns,
	     (long long)latency_ns);
}

static void stub_staging_reserve(const struct ema_policy_ctx *c, int tenant, int32_t reserve)
{
	note(c, "staging_reserve(%d,%d) ", tenant, reserve);
}

static int32_t stub_staging_fill(const struct ema_policy_ctx *c, int tenant, int32_t want)
{
	note(c, "staging_fill(%d,%d) ", tenant, want);
	return want - 1;
}

static void stub_staging_release(const struct ema_policy_ctx *c, int tenant)
{
	note(c, "staging_release(%d) ", tenant);
}

static int32_t stub_staging_held(const struct ema_policy_ctx *c, int tenant)
{
	note(c, "staging_held(%d) ", tenant);
	return 300 + tenant;
}

static const int32_t stub_pages[2] = { 7, 9 };

static const int32_t *stub_staging_pages(const struct ema_policy_ctx *c, int tenant)
{
	note(c, "staging_pages(%d) ", tenant);
	return stub_pages;
}

static const struct ema_policy_mech stub_mech = {
	.now = stub_now,
	.preempt_recompute = stub_preempt,
	.demote = stub_demote,
	.move_home = stub_move_home,
	.pool_reclaim = stub_pool_reclaim,
	.borrowers_on = stub_borrowers_on,
	.queue_need = stub_queue_need,
	.queue_waited_ns = stub_queue_waited_ns,
	.record_reclaim = stub_record_reclaim,
	.staging_reserve = stub_staging_reserve,
	.staging_fill = stub_staging_fill,
	.staging_release = stub_staging_release,
	.staging_held = stub_staging_held,
	.staging_pages = stub_staging_pages,
};

/* Two GPUs of 100 pages, 20 of weights each; tenant t on GPU t, 80 KV
 * pages each. Tenant 0 borrows 10 pages of GPU 1: request 1 (the newest)
 * holds 6 there, request 2 holds 4; tenant 1 uses 50 of its own. */
struct world {
	struct ema_ledger ledger;
	struct ema_policy_cfg knobs;
	struct ema_engine engine;
	struct ema_request req[2];
	struct ema_policy_ctx ctx;
};

static void world_init(struct world *w, enum ema_reclaim_mode mode)
{
	static const int32_t cap[2] = { 100, 100 };
	static const int tenant_gpu[2] = { 0, 1 };
	struct ema_error err = { 0, "" };

	memset(w, 0, sizeof *w);
	CU_ASSERT_EQUAL_FATAL(ema_ledger_init(&w->ledger, 2, cap, 2u << 20, 2, tenant_gpu, &err),
			      EMA_OK);
	for (int g = 0; g < 2; g++)
		CU_ASSERT_EQUAL_FATAL(ema_ledger_reserve_weights(&w->ledger, g, 20, &err), EMA_OK);
	for (int i = 0; i < 10; i++)
		CU_ASSERT_FATAL(ema_ledger_alloc(&w->ledger, 1, 0, EMA_PAGE_KV) >= 0);
	for (int i = 0; i < 50; i++)
		CU_ASSERT_FATAL(ema_ledger_alloc(&w->ledger, 1, 1, EMA_PAGE_KV) >= 0);
	for (int i = 0; i < 2; i++) {
		w->req[i].id = i + 1;
		w->req[i].view.tenant = 0;
		w->req[i].view.pages_on[1] = i == 0 ? 6 : 4;
		w->engine.victims[i] = &w->req[i];
	}
	w->engine.n_victims = 2;
	w->knobs.reclaim_mode = mode;
	w->knobs.lender_floor = 0.25;
	w->knobs.lender_reserve = 0.05;
	w->ctx.ledger = &w->ledger;
	w->ctx.knobs = &w->knobs;
	w->ctx.n_tenants = 2;
	w->ctx.n_gpus = 2;
	w->ctx.layer_groups = 1;
	w->ctx.page_bytes = 2u << 20;
	for (int t = 0; t < 2; t++) {
		w->ctx.tenant_gpu[t] = t;
		w->ctx.kv_capacity_pages[t] = 80;
	}
	w->ctx.mech = &stub_mech;
	w->ctx.engine = &w->engine;
}

/* Every policy is linked in (through the table) and named. */
static void test_every_policy_linked(void)
{
	int n = 0;

	for (int i = 0; ema_policy_table[i] != NULL; i++, n++) {
		CU_ASSERT_PTR_NOT_NULL(ema_policy_table[i]->name);
		CU_ASSERT_PTR_EQUAL(ema_policy_find(ema_policy_table[i]->name), ema_policy_table[i]);
	}
	CU_ASSERT(n >= 7);
	CU_ASSERT_PTR_NOT_NULL(ema_policy_find("remote_direct"));
}

/* Each wrapper of policy.h calls its own entry of the table, with its
 * arguments, and returns what the entry returned. */
static void test_wrappers_call_their_entry(void)
{
	struct world w;
	struct ema_request *const *v;

	world_init(&w, EMA_RECLAIM_AUTO);
	w.engine.now = 12345;
	w.engine.demote_ok = true;
	CU_ASSERT_EQUAL(ema_policy_now(&w.ctx), 12345);
	ema_policy_preempt_recompute(&w.ctx, &w.req[1]);
	CU_ASSERT_TRUE(ema_policy_demote(&w.ctx, &w.req[0]));
	CU_ASSERT_EQUAL(ema_policy_move_home(&w.ctx, &w.req[0], 1), 6);
	CU_ASSERT_EQUAL(ema_policy_pool_reclaim(&w.ctx, 1, 5), 6);
	CU_ASSERT_EQUAL(ema_policy_borrowers_on(&w.ctx, 1, &v), 2);
	CU_ASSERT_PTR_EQUAL(v, w.engine.victims);
	CU_ASSERT_EQUAL(ema_policy_queue_need(&w.ctx, 1), 101);
	CU_ASSERT_EQUAL(ema_policy_queue_waited_ns(&w.ctx, 0), 200);
	ema_policy_record_reclaim(&w.ctx, 1, 8, 30, 40);
	ema_policy_staging_reserve(&w.ctx, 0, 3);
	CU_ASSERT_EQUAL(ema_policy_staging_fill(&w.ctx, 1, 4), 3);
	ema_policy_staging_release(&w.ctx, 1);
	CU_ASSERT_EQUAL(ema_policy_staging_held(&w.ctx, 0), 300);
	CU_ASSERT_PTR_EQUAL(ema_policy_staging_pages(&w.ctx, 1), stub_pages);
	CU_ASSERT_STRING_EQUAL(w.engine.calls,
			       "now preempt(2) demote(1) move_home(1,1) pool_reclaim(1,5) "
			       "borrowers_on(1) queue_need(1) queue_waited_ns(0) "
			       "record_reclaim(1,8,30,40) staging_reserve(0,3) staging_fill(1,4) "
			       "staging_release(1) staging_held(0) staging_pages(1) ");
	/* the request reads: from the view, GPUs only */
	CU_ASSERT_EQUAL(ema_request_tenant(&w.req[0]), 0);
	CU_ASSERT_EQUAL(ema_request_pages_on(&w.req[0], 1), 6);
	CU_ASSERT_EQUAL(ema_request_pages_on(&w.req[1], 1), 4);
	CU_ASSERT_EQUAL(ema_request_pages_on(&w.req[1], 0), 0);
	CU_ASSERT_EQUAL(ema_request_pages_on(&w.req[1], EMA_HOST), 0);
	ema_ledger_destroy(&w.ledger);
}

/* remote_direct's reclaim of GPU 1, by mode, over the stub's borrowers
 * (request 1 then 2, newest first):
 *  - auto, need 5: GPU 0 has 80 free >= 6, so request 1 moves home (6
 *    pages moving, not freed at once): returns 0, nothing preempted;
 *  - drop, need 8: request 1 preempted (6 freed), still short, request 2
 *    (10): returns 10;
 *  - host, need 5, host memory full (demote fails): request 1 preempted
 *    instead, 6 freed;
 *  - host, need 5, demote succeeds: 6 moving, none freed. */
static void test_remote_direct_reclaim_by_hand(void)
{
	const struct ema_policy_ops *rd = ema_policy_find("remote_direct");
	struct world w;

	CU_ASSERT_PTR_NOT_NULL_FATAL(rd);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rd->reclaim);

	world_init(&w, EMA_RECLAIM_AUTO);
	CU_ASSERT_EQUAL(rd->reclaim(&w.ctx, NULL, 1, 5), 0);
	CU_ASSERT_STRING_EQUAL(w.engine.calls, "borrowers_on(1) move_home(1,1) ");
	ema_ledger_destroy(&w.ledger);

	world_init(&w, EMA_RECLAIM_DROP);
	CU_ASSERT_EQUAL(rd->reclaim(&w.ctx, NULL, 1, 8), 10);
	CU_ASSERT_STRING_EQUAL(w.engine.calls, "borrowers_on(1) preempt(1) preempt(2) ");
	ema_ledger_destroy(&w.ledger);

	world_init(&w, EMA_RECLAIM_HOST);
	CU_ASSERT_EQUAL(rd->reclaim(&w.ctx, NULL, 1, 5), 6);
	CU_ASSERT_STRING_EQUAL(w.engine.calls, "borrowers_on(1) demote(1) preempt(1) ");
	ema_ledger_destroy(&w.ledger);

	world_init(&w, EMA_RECLAIM_HOST);
	w.engine.demote_ok = true;
	CU_ASSERT_EQUAL(rd->reclaim(&w.ctx, NULL, 1, 5), 0);
	CU_ASSERT_STRING_EQUAL(w.engine.calls, "borrowers_on(1) demote(1) ");
	ema_ledger_destroy(&w.ledger);
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{"every policy linked without serve/", test_every_policy_linked},
		{"each wrapper calls its own mechanism", test_wrappers_call_their_entry},
		{"remote_direct's reclaims through a stub engine, by hand",
		 test_remote_direct_reclaim_by_hand},
		{NULL, NULL},
	};
	return ema_test_run("policies alone", cases);
}
