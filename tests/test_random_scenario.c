/* test_random_scenario.c: the random scenarios of tests/random_scenario.h
 * (test_leap's wide rounds, `make fuzz-scenarios`, `make vs-static`) draw
 * the same whether or not the public traces are there: every knob and
 * every synthetic tenant of a seed is the same without them, and only the
 * tenants that replay a trace become synthetic loads, so that what a test
 * of them sees does not depend on which files lie beside the checkout.
 * A seed's scenario with the traces is pinned, as runs and reports name
 * scenarios by their seeds. */
#include <cJSON.h>
#include <stdio.h>
#include <string.h>

#include "random_scenario.h"
#include "test_main.h"

/* any folder: the generator only writes the path into the scenario */
#define TRACES "/traces"

/* The tenants of a scenario, parsed (its last --set, "tenants=[...]"). */
static cJSON *tenants_of(const struct ema_random_scenario *rs)
{
	const char *last = rs->argv[rs->n - 1];
	cJSON *t;

	CU_ASSERT_FATAL(strncmp(last, "tenants=", 8) == 0);
	t = cJSON_Parse(last + 8);
	CU_ASSERT_FATAL(cJSON_IsArray(t));
	return t;
}

static const char *source_of(const cJSON *tenant)
{
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(tenant, "workload");
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(w, "source");

	return cJSON_IsString(s) ? s->valuestring : "";
}

/* Compares the scenario of `seed` with and without the traces; counts the
 * replays it saw. false (and says which) where they differ otherwise. */
static bool same_but_replays(uint32_t seed, bool ema_knobs, int *replays)
{
	struct ema_random_scenario with, without;
	cJSON *tw, *to;
	bool same = true;

	CU_ASSERT_FATAL(ema_random_scenario(&with, seed, TRACES, ema_knobs));
	CU_ASSERT_FATAL(ema_random_scenario(&without, seed, NULL, ema_knobs));
	if (with.n != without.n || with.replays != without.replays) {
		fprintf(stderr, "\nseed %u: %d settings, %d replays with the traces; %d, %d without\n",
			seed, with.n, with.replays, without.n, without.replays);
		return false;
	}
	for (int k = 0; k + 1 < with.n; k++)
		if (strcmp(with.argv[k], without.argv[k]) != 0) {
			fprintf(stderr, "\nseed %u: '%s' with the traces, '%s' without\n", seed,
				with.argv[k], without.argv[k]);
			return false;
		}
	tw = tenants_of(&with);
	to = tenants_of(&without);
	if (cJSON_GetArraySize(tw) != cJSON_GetArraySize(to))
		same = false;
	for (int i = 0; same && i < cJSON_GetArraySize(tw); i++) {
		const cJSON *a = cJSON_GetArrayItem(tw, i), *b = cJSON_GetArrayItem(to, i);

		/* without the traces nothing replays one */
		if (strcmp(source_of(b), "synthetic") != 0)
			same = false;
		if (strcmp(source_of(a), "trace") == 0)
			(*replays)++;
		else if (!cJSON_Compare(a, b, true))
			same = false;
	}
	if (!same)
		fprintf(stderr, "\nseed %u: tenants\n  %s\nwith the traces, and\n  %s\nwithout\n", seed,
			with.argv[with.n - 1], without.argv[without.n - 1]);
	cJSON_Delete(tw);
	cJSON_Delete(to);
	return same;
}

/* The seeds of test_leap's wide rounds (from 7), vs-static's and
 * test_vs_static.sh's (from 1 and 3), and 20,000 more: the same without
 * the traces but for the replays, of which there are many. */
static void test_same_without_traces(void)
{
	static const uint32_t firsts[] = { 1u * 100003u, 3u * 100003u, 7u * 100003u, 1u };
	int replays = 0, differ = 0;

	for (size_t f = 0; f < sizeof firsts / sizeof firsts[0]; f++)
		for (uint32_t seed = firsts[f]; seed < firsts[f] + (f == 3 ? 20000u : 300u); seed++) {
			differ += !same_but_replays(seed, true, &replays);
			differ += !same_but_replays(seed, false, &replays);
			if (differ > 3)
				break;
		}
	CU_ASSERT_EQUAL(differ, 0);
	/* about one tenant in three replays a trace */
	CU_ASSERT(replays > 10000);
}

/* A replay in place of which, without the traces, a synthetic load runs:
 * seed 100004 (vs-static's second scenario) has one tenant, replaying the
 * Azure code trace; pinned as the generator drew it before it drew the
 * same without the traces, so that seeds name the scenarios they did. */
static void test_pinned(void)
{
	struct ema_random_scenario rs;
	bool move = false, h200x2 = false;

	CU_ASSERT_FATAL(ema_random_scenario(&rs, 100004, TRACES, false));
	CU_ASSERT_EQUAL(rs.replays, 1);
	CU_ASSERT_STRING_EQUAL(rs.argv[rs.n - 1],
			       "tenants=[{\"name\": \"t0\", \"gpu\": 0, \"workload\": {\"source\": "
			       "\"trace\", \"trace\": \"/traces/AzureLLMInferenceTrace_code.csv\", "
			       "\"format\": \"azure\", \"duration_s\": 60, \"start_s\": 0, "
			       "\"rate_scale\": 2}}]");
	CU_ASSERT_FATAL(ema_random_scenario(&rs, 100004, NULL, false));
	CU_ASSERT_EQUAL(rs.replays, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(rs.argv[rs.n - 1], "\"source\": \"synthetic\""));

	/* seed 100018, which tests/test_vs_static.sh expects: a lender
	 * under reclaim_mode=move on h200x2, no replay, so the same both
	 * ways */
	CU_ASSERT_FATAL(ema_random_scenario(&rs, 100018, NULL, false));
	CU_ASSERT_EQUAL(rs.replays, 0);
	for (int k = 0; k < rs.n; k++) {
		move |= strcmp(rs.argv[k], "policy.reclaim_mode=move") == 0;
		h200x2 |= strcmp(rs.argv[k], "hardware=h200x2") == 0;
	}
	CU_ASSERT(move && h200x2);
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{ "the same scenarios without the traces, replays made synthetic",
		  test_same_without_traces },
		{ "seeds name the scenarios they did", test_pinned },
		{ NULL, NULL }
	};

	return ema_test_run("random scenarios", cases);
}
