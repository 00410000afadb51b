/* example_policy.c: the worked example of policies/policy.h, compiled and
 * run by tests/test_example_policy.c so that it cannot drift: a policy with
 * two knobs of its own that borrows from the GPU with the most free pages,
 * at most max_pages pages per tenant, preempts borrowers when a lender needs
 * its pages back, and otherwise behaves like static.
 * Adding it to ema is this file plus one line in policies/policy_table.c. */
#include "policy.h"

struct greedy_knobs {
	int max_pages;
	double spare;
};
static const struct greedy_knobs greedy_defaults = { 1000, 0.1 };
static const struct ema_config_key greedy_keys[] = {
	EMA_KNOB_INT(struct greedy_knobs, max_pages, 0, 1e9,
		     "pages a tenant may borrow (greedy)"),
	EMA_KNOB_DBL(struct greedy_knobs, spare, 0, 1,
		     "share of its KV capacity a lender keeps free (greedy)"),
	EMA_KNOB_END
};

static int greedy_choose_lender(const struct ema_policy_ctx *c, void *state, int tenant)
{
	const struct greedy_knobs *k = c->own_knobs;
	int best = -1;

	if (ema_ledger_borrowed_pages(c->ledger, tenant) >= k->max_pages)
		return -1;
	for (int g = 0; g < c->n_gpus; g++)
		if (g != c->tenant_gpu[tenant] &&
		    (best < 0 || ema_ledger_free_pages(c->ledger, g) >
				 ema_ledger_free_pages(c->ledger, best)))
			best = g;
	return best >= 0 && ema_ledger_free_pages(c->ledger, best) >
			    k->spare * c->kv_capacity_pages[tenant] ? best : -1;
}

/* A lender that needs its pages back preempts the newest borrowers. */
static int32_t greedy_reclaim(const struct ema_policy_ctx *c, void *state, int gpu, int32_t need)
{
	struct ema_request *const *victims;
	int n = ema_policy_borrowers_on(c, gpu, &victims);
	int32_t freed = 0;

	for (int i = 0; i < n && freed < need; i++) {
		freed += ema_request_pages_on(victims[i], gpu);
		ema_policy_preempt_recompute(c, victims[i]);
	}
	return freed;
}

const struct ema_policy_ops ema_policy_greedy = {
	.name = "greedy",
	.summary = "borrow from the freest GPU",
	.knobs = greedy_keys,
	.knobs_size = sizeof(struct greedy_knobs),
	.knob_defaults = &greedy_defaults,
	.choose_lender = greedy_choose_lender,
	.reclaim = greedy_reclaim,
};
