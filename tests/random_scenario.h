/* random_scenario.h: the random scenarios of test_leap's wide rounds
 * (`make fuzz-scenarios`) and of tests/vs_static.c (`make vs-static`):
 * from a 32-bit seed, a server, a model, a GPU cap, page and block sizes,
 * batch limits, chunked prefills, a horizon, the lending and reclaim
 * knobs, ema's own knobs, and one to five tenants, each replaying a
 * public trace or a synthetic load. The same seed always gives the same
 * scenario, so a round that fails names it by its seed; without the
 * traces it gives the same scenario with each replay replaced by a
 * synthetic load (drawn from a stream of its own: every other draw is
 * the same), so that what a test sees does not depend on which files lie
 * beside the checkout. */
#ifndef EMA_RANDOM_SCENARIO_H
#define EMA_RANDOM_SCENARIO_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static inline uint32_t wide_next(uint32_t *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

#define PICK(s, arr) (arr[wide_next(s) % (sizeof arr / sizeof arr[0])])

/* A scenario as `--set` arguments over the embedded default: argv[0 ..
 * n - 1], the last one the tenants (the strings are the struct's). */
struct ema_random_scenario {
	char sets[32][96];
	char tenants[8192];
	const char *argv[32];
	int n;
	int replays; /* tenants drawn to replay a trace (synthetic without the traces) */
};

/* Fills rs with the scenario of `seed`, its traces under `traces` (NULL:
 * synthetic loads only, in place of the replays). With ema_knobs false the knobs that loosen
 * or switch off ema's guarantees and corrections (policy.ema.lender_budget,
 * tpot_budget, feedback_s) are drawn as ever, so that the rest is the same
 * scenario, but left at their defaults. (The draws are those of the
 * knobs ema had until 2026-12-04, one for one, so that every seed still
 * names the same scenario in all else.) false if the tenants did not fit
 * (never with these draws). */
static inline bool ema_random_scenario(struct ema_random_scenario *rs, uint32_t seed,
				       const char *traces, bool ema_knobs)
{
	static const char *const hw[] = { "h200x2", "a100x4_40gb", "h200x8", "h100x8",
					  "a100x8_80gb" };
	static const int gpus[] = { 2, 4, 8, 8, 8 };
	static const char *const models[] = { "llama-3-8b", "llama-2-7b", "llama-2-13b",
					      "opt-13b" };
	static const char *const small_caps[] = { "0", "17", "18", "20", "24", "28" };
	static const char *const big_caps[] = { "0", "30", "34" };
	static const char *const page_mib[] = { "0.5", "1", "2", "4", "8" };
	static const char *const horizon[] = { "0", "0", "0", "15" };
	static const char *const batch_tokens[] = { "64", "128", "512", "2048", "8192" };
	static const char *const max_batch[] = { "4", "16", "64", "256" };
	static const char *const watermark[] = { "0", "0.01", "0.1" };
	static const char *const block[] = { "8", "16", "32" };
	static const char *const headroom[] = { "0", "0.05", "0.2" };
	static const char *const reserve[] = { "0", "0.05" };
	static const char *const floor_[] = { "0.1", "0.25" };
	static const char *const depth[] = { "0", "1", "2" };
	static const char *const path[] = { "auto", "inplace", "staged" };
	static const char *const reclaim[] = { "auto", "move", "host", "drop" };
	static const char *const host_gib[] = { "0.5", "1", "64" };
	static const char *const share[] = { "0.05", "0.05", "0.2" };   /* lender_budget */
	static const char *const rule[] = { "always", "always", "throughput" }; /* (drawn, unused) */
	static const char *const method[] = { "gather", "batch", "per_page" };
	static const char *const slack[] = { "10", "0.1", "0.3" };      /* tpot_budget */
	static const char *const slowdown[] = { "0", "5" };             /* feedback_s */
	static const char *const rates[] = { "0.5", "2", "6", "12", "20", "40" };
	static const char *const durations[] = { "20", "40" };
	static const char *const prompts[] = { "256", "1024", "3000" };
	static const char *const outputs[] = { "64", "256" };
	static const char *const scales[] = { "0.5", "1", "2", "4" };
	static const char *const starts[] = { "0", "300", "1200" };
	static const char *const trace_files[] = { "AzureLLMInferenceTrace_conv.csv",
						   "AzureLLMInferenceTrace_code.csv",
						   "mooncake_synthetic_trace.jsonl" };
	char (*sets)[96] = rs->sets;
	char *tenants = rs->tenants;
	const size_t tenants_size = sizeof rs->tenants;
	int n = 0, h, m, nt, len;
	uint32_t s = seed;
	const char *drawn;

	h = (int)(wide_next(&s) % 5);
	m = (int)(wide_next(&s) % 4);
	snprintf(sets[n++], sizeof sets[0], "hardware=%s", hw[h]);
	snprintf(sets[n++], sizeof sets[0], "model=%s", models[m]);
	snprintf(sets[n++], sizeof sets[0], "gpu_mem_cap_gib=%s",
		 m >= 2 ? PICK(&s, big_caps) : PICK(&s, small_caps));
	snprintf(sets[n++], sizeof sets[0], "seed=%u", 1 + wide_next(&s) % 1000);
	snprintf(sets[n++], sizeof sets[0], "page_mib=%s", PICK(&s, page_mib));
	snprintf(sets[n++], sizeof sets[0], "horizon_s=%s", PICK(&s, horizon));
	snprintf(sets[n++], sizeof sets[0], "serving.chunked_prefill=%s",
		 wide_next(&s) % 2 ? "true" : "false");
	snprintf(sets[n++], sizeof sets[0], "serving.max_batch_tokens=%s", PICK(&s, batch_tokens));
	snprintf(sets[n++], sizeof sets[0], "serving.max_batch=%s", PICK(&s, max_batch));
	snprintf(sets[n++], sizeof sets[0], "serving.watermark=%s", PICK(&s, watermark));
	snprintf(sets[n++], sizeof sets[0], "serving.block_tokens=%s", PICK(&s, block));
	snprintf(sets[n++], sizeof sets[0], "policy.ema.headroom=%s", PICK(&s, headroom));
	snprintf(sets[n++], sizeof sets[0], "policy.lender_reserve=%s", PICK(&s, reserve));
	snprintf(sets[n++], sizeof sets[0], "policy.lender_floor=%s", PICK(&s, floor_));
	snprintf(sets[n++], sizeof sets[0], "policy.ema.prefetch_depth=%s", PICK(&s, depth));
	snprintf(sets[n++], sizeof sets[0], "policy.ema.remote_path=%s", PICK(&s, path));
	snprintf(sets[n++], sizeof sets[0], "policy.reclaim_mode=%s", PICK(&s, reclaim));
	snprintf(sets[n++], sizeof sets[0], "policy.host_gib=%s", PICK(&s, host_gib));
	drawn = PICK(&s, share);
	if (ema_knobs)
		snprintf(sets[n++], sizeof sets[0], "policy.ema.lender_budget=%s", drawn);
	(void)PICK(&s, rule);
	snprintf(sets[n++], sizeof sets[0], "policy.copy_method=%s", PICK(&s, method));
	drawn = PICK(&s, slack);
	if (ema_knobs)
		snprintf(sets[n++], sizeof sets[0], "policy.ema.tpot_budget=%s", drawn);
	drawn = PICK(&s, slowdown);
	if (ema_knobs)
		snprintf(sets[n++], sizeof sets[0], "policy.ema.feedback_s=%s", drawn);
	rs->replays = 0;
	nt = 1 + (int)(wide_next(&s) % (unsigned)(gpus[h] < 5 ? gpus[h] : 5));
	len = snprintf(tenants, tenants_size, "tenants=[");
	for (int i = 0; i < nt; i++) {
		const char *sep = i > 0 ? ", " : "";
		/* A replay's draws are made whether or not the traces are
		 * there, so that the rest of the scenario (every knob, the
		 * other tenants) is the same without them. */
		bool replay = wide_next(&s) % 10 < 3;

		if (replay) {
			const char *f = PICK(&s, trace_files);
			bool mooncake = strstr(f, "mooncake") != NULL;
			/* (in the order the arguments of a call were drawn in
			 * until 2026-12, so that a seed names the scenario it did) */
			const char *scale = PICK(&s, scales);
			const char *start = mooncake ? "0" : PICK(&s, starts);
			const char *duration = wide_next(&s) % 2 ? "30" : "60";

			rs->replays++;
			if (traces != NULL) {
				len += snprintf(tenants + len, tenants_size - (size_t)len,
						"%s{\"name\": \"t%d\", \"gpu\": %d, \"workload\": {\"source\": "
						"\"trace\", \"trace\": \"%s/%s\", \"format\": \"%s\", "
						"\"duration_s\": %s, \"start_s\": %s, \"rate_scale\": %s}}",
						sep, i, i, traces, f, mooncake ? "auto" : "azure", duration,
						start, scale);
				continue;
			}
		}
		/* a synthetic load; in place of a replay without the traces,
		 * one drawn from a stream of its own (the seed and the
		 * tenant), which leaves the scenario's stream as it is */
		{
			uint32_t own = (seed ^ 0x9e3779b9u) * 2654435761u + (uint32_t)i;
			uint32_t *st = replay ? &own : &s;
			const char *output = PICK(st, outputs);
			const char *prompt = PICK(st, prompts);
			const char *duration = PICK(st, durations);
			const char *rate = PICK(st, rates);
			const char *arrival = wide_next(st) % 2 ? "poisson" : "gamma";

			len += snprintf(tenants + len, tenants_size - (size_t)len,
					"%s{\"name\": \"t%d\", \"gpu\": %d, \"workload\": {\"source\": "
					"\"synthetic\", \"arrival\": \"%s\", \"rate_rps\": %s, "
					"\"duration_s\": %s, \"prompt\": {\"kind\": \"lognormal\", "
					"\"mean\": %s, \"cv\": 1.0, \"min\": 1, \"max\": 8192}, "
					"\"output\": {\"kind\": \"lognormal\", \"mean\": %s, "
					"\"cv\": 1.0, \"min\": 1, \"max\": 2048}}}",
					sep, i, i, arrival, rate, duration, prompt, output);
		}
	}
	snprintf(tenants + len, tenants_size - (size_t)len, "]");
	if (len >= (int)tenants_size - 2)
		return false;
	for (int k = 0; k < n; k++)
		rs->argv[k] = sets[k];
	rs->argv[n++] = tenants;
	rs->n = n;
	return true;
}

#endif
