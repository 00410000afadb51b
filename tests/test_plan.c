/* test_plan.c: the policy against a model it does not know (plan.*):
 * the belief the policies are given is the truth with plan.error applied
 * (or plan.hardware's rates), the platform still charges the truth, and
 * bad settings are refused with the key named. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "engine.h"
#include "experiment.h"
#include "engine_priv.h"
#include "policy.h"
#include "sim.h"
#include "test_main.h"

static int load(struct ema_config *c, const char *const *sets, int n, struct ema_error *err)
{
	memset(err, 0, sizeof *err);
	return ema_config_load(c, NULL, sets, n, err);
}

/* Each error scales its figures: +20% as a percentage or 0.2 as a share. */
static void test_errors_scale_the_belief(void)
{
	static const char *const sets[] = {
		"plan.error.link=+20%", "plan.error.hbm=-0.1", "plan.error.interference=50%",
		"plan.error.compute=-25%",
	};
	struct ema_config c;
	struct ema_error err;

	CU_ASSERT_EQUAL_FATAL(load(&c, sets, 4, &err), EMA_OK);
	CU_ASSERT_DOUBLE_EQUAL(c.plan.error.link, 0.2, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(c.plan_hw.link_gbps, c.hw.link_gbps * 1.2, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(c.plan_hw.remote_read_gbps, c.hw.remote_read_gbps * 1.2, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(c.plan_hw.gather_gbps, c.hw.gather_gbps * 1.2, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(c.plan_hw.copy_curve[0].gbps, c.hw.copy_curve[0].gbps * 1.2, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(c.plan_hw.hbm_read_gbps, c.hw.hbm_read_gbps * 0.9, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(c.plan_hw.interference_lender, c.hw.interference_lender * 1.5, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(c.plan_hw.interference_borrower, c.hw.interference_borrower * 1.5,
			       1e-12);
	CU_ASSERT_DOUBLE_EQUAL(c.plan_hw.peak_tflops, c.hw.peak_tflops * 0.75, 1e-9);
	/* untouched: the server's size */
	CU_ASSERT_EQUAL(c.plan_hw.n_gpus, c.hw.n_gpus);
	CU_ASSERT_EQUAL(c.plan_hw.gpu_mem_gib, c.hw.gpu_mem_gib);
}

/* Without plan.*, the belief is the truth, field for field. */
static void test_no_error_is_the_truth(void)
{
	struct ema_config c;
	struct ema_error err;

	CU_ASSERT_EQUAL_FATAL(load(&c, NULL, 0, &err), EMA_OK);
	CU_ASSERT_EQUAL(memcmp(&c.plan_hw, &c.hw, sizeof c.hw), 0);
}

/* plan.hardware gives the policies another profile's rates on the
 * platform's server. */
static void test_plan_hardware(void)
{
	static const char *const sets[] = { "plan.hardware=h200x2_hw" };
	struct ema_config c;
	struct ema_hw_profile ref;
	struct ema_error err;

	CU_ASSERT_EQUAL_FATAL(load(&c, sets, 1, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(ema_hw_profile_load(&ref, "h200x2_hw", &err), EMA_OK);
	CU_ASSERT_STRING_EQUAL(c.plan_hw.name, "h200x2_hw");
	CU_ASSERT_EQUAL(c.plan_hw.hbm_efficiency, ref.hbm_efficiency);
	CU_ASSERT_EQUAL(c.plan_hw.gpu_mem_gib, c.hw.gpu_mem_gib);
	CU_ASSERT_STRING_EQUAL(c.hw.name, "h200x2");
}

static void expect_error(const char *set, const char *what)
{
	const char *sets[] = { set };
	struct ema_config c;
	struct ema_error err;
	int rc = load(&c, sets, 1, &err);

	CU_ASSERT_EQUAL(rc, EMA_ERR_INPUT);
	if (strstr(err.msg, what) == NULL)
		fprintf(stderr, "\n  %s: %s\n", set, err.msg);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, what));
}

static void test_bad_settings(void)
{
	expect_error("plan.hardware=h200x8", "plan.hardware");
	expect_error("plan.hardware=h200x8", "expected a profile of the 2 GPUs");
	expect_error("plan.hardware=nosuch", "plan.hardware");
	expect_error("plan.error.link=-95%", "plan.error.link");
	expect_error("plan.error.link=20%%", "plan.error.link");
	expect_error("plan.error.hbm=fast", "expected a number or a percentage");
	expect_error("plan.error.nosuch=0.1", "nosuch");
}

/* The policy plans with the belief, the simulator charges the truth. On
 * h200x2 at 24 GiB ema's budget of GPU 1's pages read in place is 924
 * pages, bound by the lender's slowdown at interference_lender 0.952
 * (tests/test_planner.c); believing the interference half as high it
 * would lend twice as much, but borrowing stops where more would serve
 * fewer tokens: in place, at the reads that fill the local step (the
 * link's rate x the local step, 1054 pages, below the TPOT cap's 1138).
 * ema's borrowable is 1054 on the belief, 924 on the truth. */
static int32_t ema_offers(const char *const *sets, int n)
{
	struct ema_config cfg;
	struct ema_error err;
	struct ema_platform_params params;
	struct ema_platform *p = NULL;
	struct ema_engine *e = NULL;
	struct ema_request_spec r = { 0, 1, 1 };
	struct ema_workload w[2] = { { &r, 1, 1 }, { &r, 1, 1 } };
	const struct ema_policy_ops *ema = ema_policy_find("ema");
	int32_t got;

	CU_ASSERT_EQUAL_FATAL(load(&cfg, sets, n, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(ema_engine_platform_params(&params, &cfg, ema), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(ema_sim_platform_create(&p, &params, NULL, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(ema_engine_new(&e, &cfg, ema, p, w, &err), EMA_OK);
	got = e->policy->borrowable(&e->ctx, e->policy_state, 0);
	ema_engine_free(e);
	p->ops->destroy(p);
	return got;
}

static void test_policy_plans_with_the_belief(void)
{
	static const char *const truth[] = {
		"gpu_mem_cap_gib=24", "policy.ema.remote_path=inplace",
	};
	static const char *const belief[] = {
		"gpu_mem_cap_gib=24", "policy.ema.remote_path=inplace", "plan.error.interference=-50%",
	};

	CU_ASSERT_EQUAL(ema_offers(truth, 2), 924);
	CU_ASSERT_EQUAL(ema_offers(belief, 3), 1054);
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{ "plan.error scales the belief, figure by figure", test_errors_scale_the_belief },
		{ "without plan.*, the belief is the truth", test_no_error_is_the_truth },
		{ "plan.hardware: another profile's rates on this server", test_plan_hardware },
		{ "bad plan settings name the key", test_bad_settings },
		{ "the policy plans with the belief, the platform charges the truth",
		  test_policy_plans_with_the_belief },
		{ NULL, NULL }
	};

	if (ema_engine_register_policies(ema_policy_table) != EMA_OK)
		return 99;
	return ema_test_run("plan", cases);
}
