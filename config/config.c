/* config.c: the scenario a run follows: its key table, built-in defaults,
 * loading (file or embedded default, then --set overrides in order, then
 * cross-field checks and resolution of hardware and model) and the writer
 * of the effective configuration that reproduces a run exactly. */
#include "config_internal.h"
#include "simtime.h"


#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The policies a scenario may list, injected by the program
 * (ema_config_set_policies) so that config/ needs no policy code. */
static const struct ema_config_policy *known_policies;
static int n_known_policies;
/* policy.NAME of each policy with a knob table: the slot of its block */
static const char *knob_table_owner[EMA_MAX_KNOB_TABLES];

static bool policy_known(const char *name)
{
	for (int k = 0; k < n_known_policies; k++)
		if (strcmp(known_policies[k].name, name) == 0)
			return true;
	return false;
}

#define CF(f) offsetof(struct ema_config, f)
#define SV(f) offsetof(struct ema_serving_cfg, f)
#define PO(f) offsetof(struct ema_policy_cfg, f)
#define TN(f) offsetof(struct ema_tenant_cfg, f)
#define WL(f) offsetof(struct ema_workload_cfg, f)
#define LN(f) offsetof(struct ema_length_cfg, f)
#define MT(f) offsetof(struct ema_metrics_cfg, f)
#define SL(f) offsetof(struct ema_slo_cfg, f)
#define PL(f) offsetof(struct ema_plan_cfg, f)
#define PE(f) offsetof(struct ema_plan_error_cfg, f)
#define SZ(t, f) sizeof(((struct t *)0)->f)
#define OPEN EMA_CFG_MIN_OPEN
#define SEED_MAX 9007199254740992.0 /* 2^53: JSON numbers are doubles */
#define END { NULL, 0, 0, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL }

/* The workload choices' names are traces/'s (workload.h), in enum order. */

static const struct ema_config_key length_keys[] = {
	{ "kind", EMA_CFG_ENUM, LN(kind), 0, 0, 0, 0, 0, ema_length_kind_names, NULL, NULL,
	  "",
	  "`fixed`: `mean` tokens; `uniform`: integers in [`min`, `max`]; "
	  "`lognormal`: `mean` and `cv` of the lognormal itself, not of its log; "
	  "`empirical`: a random row of the workload's `trace`." },
	{ "mean", EMA_CFG_DBL, LN(mean), 0, 0, 0, EMA_MAX_TOKENS, OPEN, NULL, NULL, NULL,
	  "tokens", "Mean length (`fixed`, `lognormal`)." },
	{ "cv", EMA_CFG_DBL, LN(cv), 0, 0, 0, 100, 0, NULL, NULL, NULL,
	  "", "Coefficient of variation (`lognormal`)." },
	{ "min", EMA_CFG_INT, LN(min), 0, 0, 1, EMA_MAX_TOKENS, 0, NULL, NULL, NULL,
	  "tokens",
	  "Every drawn length is clamped to [max(1, `min`), `max`], rows of "
	  "`lengths` and `empirical` files included; also the lower end of "
	  "`uniform`." },
	{ "max", EMA_CFG_INT, LN(max), 0, 0, 1, EMA_MAX_TOKENS, 0, NULL, NULL, NULL,
	  "tokens", "Upper clamp of every drawn length; also the upper end of `uniform`." },
	END
};

static const struct ema_config_key workload_keys[] = {
	{ "source", EMA_CFG_ENUM, WL(source), 0, 0, 0, 0, 0, ema_workload_source_names, NULL, NULL,
	  "",
	  "`synthetic`: generated arrivals and lengths; `trace`: arrivals and "
	  "lengths from a file; `lengths`: generated arrivals, lengths from a file "
	  "(a random row per request, prompt and output kept paired)." },
	{ "trace", EMA_CFG_PATH, WL(trace), SZ(ema_workload_cfg, trace), 0, 0, 0, 0, NULL, NULL, NULL,
	  "",
	  "The file for `trace`, `lengths` or `empirical` lengths; a relative path "
	  "resolves against the config file's folder (the current folder for "
	  "`--set`)." },
	{ "format", EMA_CFG_ENUM, WL(format), 0, 0, 0, 0, 0, ema_trace_format_names, NULL, NULL,
	  "",
	  "Trace format; `auto` tells it from the header line "
	  "(doc/configuration.md, \"Trace formats\")." },
	{ "start_s", EMA_CFG_DBL, WL(start_s), 0, 0, 0, 1e9, 0, NULL, NULL, NULL,
	  "s", "trace: window start; the first kept arrival becomes t = 0." },
	{ "duration_s", EMA_CFG_DBL, WL(duration_s), 0, 0, 0, 1e9, 0, NULL, NULL, NULL,
	  "s",
	  "synthetic/lengths: arrivals in [0, duration) (required unless "
	  "`max_requests` > 0); trace: window length, 0 = to the end." },
	{ "rate_scale", EMA_CFG_DBL, WL(rate_scale), 0, 0, 0, 1e6, OPEN, NULL, NULL, NULL,
	  "factor", "trace: inter-arrival times are divided by this (2 = twice as fast)." },
	{ "arrival", EMA_CFG_ENUM, WL(arrival), 0, 0, 0, 0, 0, ema_arrival_kind_names, NULL, NULL,
	  "", "synthetic/lengths: the arrival process." },
	{ "rate_rps", EMA_CFG_DBL, WL(rate_rps), 0, 0, 0, 1e4, 0, NULL, NULL, NULL,
	  "requests/s", "synthetic/lengths: arrival rate; must be > 0 for generated arrivals." },
	{ "cv", EMA_CFG_DBL, WL(cv), 0, 0, 0, 100, 0, NULL, NULL, NULL,
	  "",
	  "`gamma` arrivals: coefficient of variation of the gaps; must be > 0 for "
	  "them." },
	{ "prompt", EMA_CFG_OBJ, WL(prompt), SZ(ema_workload_cfg, prompt), 0, 0, 0, 0, NULL, length_keys, NULL,
	  "tokens", "Prompt length distribution: the `prompt.*` rows." },
	{ "output", EMA_CFG_OBJ, WL(output), SZ(ema_workload_cfg, output), 0, 0, 0, 0, NULL, length_keys, NULL,
	  "tokens", "Output length distribution: the `output.*` rows." },
	{ "max_requests", EMA_CFG_INT, WL(max_requests), 0, 0, 0, INT_MAX, 0, NULL, NULL, NULL,
	  "requests",
	  "At most this many requests (the first ones); 0 = no cap. A generated "
	  "stream holds at most 10,000,000 (rate_rps x duration_s included)." },
	{ "seed", EMA_CFG_U64, WL(seed), 0, 0, 0, SEED_MAX, 0, NULL, NULL, NULL,
	  "",
	  "0 = derived from the run seed and the tenant index; otherwise this "
	  "tenant's stream seed." },
	END
};

static const struct ema_config_key tenant_keys[] = {
	{ "name", EMA_CFG_STR, TN(name), SZ(ema_tenant_cfg, name), 0, 0, 0, EMA_CFG_NONEMPTY, NULL, NULL, NULL,
	  "",
	  "Unique; 1..63 letters, digits, `-`, `_`, `.`, not starting with `.`. "
	  "Shown in every output and a field of every CSV." },
	{ "gpu", EMA_CFG_INT, TN(gpu), 0, 0, 0, EMA_MAX_GPUS - 1, 0, NULL, NULL, NULL,
	  "",
	  "Home GPU, 0..n_gpus-1, one tenant per GPU. A GPU without a tenant lends "
	  "all its memory (no floor, no reserve)." },
	{ "workload", EMA_CFG_OBJ, TN(workload), SZ(ema_tenant_cfg, workload), 0, 0, 0, 0, NULL, workload_keys, NULL,
	  "", "Where its requests come from: the `workload.*` rows." },
	END
};

static const struct ema_config_key serving_keys[] = {
	{ "block_tokens", EMA_CFG_INT, SV(block_tokens), 0, 0, 1, 4096, 0, NULL, NULL, NULL,
	  "tokens",
	  "KV block size; a request's pages = ceil(blocks x block bytes / page "
	  "bytes)." },
	{ "max_batch", EMA_CFG_INT, SV(max_batch), 0, 0, 1, 65536, 0, NULL, NULL, NULL,
	  "requests", "Running requests per tenant." },
	{ "max_batch_tokens", EMA_CFG_INT, SV(max_batch_tokens), 0, 0, 1, 1 << 20, 0, NULL, NULL, NULL,
	  "tokens", "Tokens computed per iteration." },
	{ "chunked_prefill", EMA_CFG_BOOL, SV(chunked_prefill), 0, 0, 0, 0, 0, NULL, NULL, NULL,
	  "",
	  "false: as vLLM, an iteration with only prefills whenever a waiting "
	  "request can be admitted; true: decodes first, then prefill chunks fill "
	  "the token budget." },
	{ "watermark", EMA_CFG_DBL, SV(watermark), 0, 0, 0, 0.5, 0, NULL, NULL, NULL,
	  "share of KV pages",
	  "Kept free when admitting or swapping in, so that running requests can "
	  "grow; waived when the tenant has nothing running or moving. A request "
	  "whose whole KV can never fit is dropped at arrival." },
	{ "layer_groups", EMA_CFG_INT, SV(layer_groups), 0, 0, 1, 1024, 0, NULL, NULL, NULL,
	  "layer groups",
	  "Granularity of the prefetch pipeline (ema, hw backend); capped at the "
	  "model's layers." },
	{ "reclaim_backoff", EMA_CFG_INT, SV(reclaim_backoff), 0, 0, 0, 1000000000, 0, NULL, NULL,
	  NULL, "reclaims",
	  "Lending policies: a request that lenders' reclaims took back this many "
	  "times runs on its own GPU's pages only from then on, and is dropped if "
	  "its whole KV is more than its GPU's; it ends the livelock of every "
	  "tenant overloaded (doc/limitations.md). 0: never (such a run then stops "
	  "with the livelock error)." },
	{ "oversize", EMA_CFG_ENUM, SV(oversize), 0, 0, 0, 0, 0, ema_oversize_mode_names, NULL, NULL,
	  "",
	  "Lending policies: a request whose whole KV is more than its own GPU's "
	  "(static drops it at arrival). drop: dropped at arrival as well; yield: "
	  "starts only with no request of its tenant queued behind it, is dropped at "
	  "the front where one is, and gives its pages back (preempted, dropped) when "
	  "the front needs them; wait: waits at the front for borrowed pages, and "
	  "every request behind it with it (doc/policies.md, \"Oversize requests\")." },
	END
};

/* The shipped policies' knobs, then (from ema_config_set_policies) one
 * object per policy with a knob table of its own. */
#define POLICY_SHARED_KEYS 6
static struct ema_config_key policy_keys[POLICY_SHARED_KEYS + EMA_MAX_KNOB_TABLES + 1] = {
	{ "ideal_factor", EMA_CFG_DBL, PO(ideal_factor), 0, 0, 1, 64, 0, NULL, NULL, NULL,
	  "factor", "ideal: every GPU's memory (weights included) is multiplied by this." },
	{ "lender_floor", EMA_CFG_DBL, PO(lender_floor), 0, 0, 0, 1, 0, NULL, NULL, NULL,
	  "share of the lender's KV pages", "remote_direct, ema: share a lender never lends." },
	{ "lender_reserve", EMA_CFG_DBL, PO(lender_reserve), 0, 0, 0, 1, 0, NULL, NULL, NULL,
	  "share of the lender's KV pages", "remote_direct, ema: share a lender keeps free for its own bursts." },
	{ "reclaim_mode", EMA_CFG_ENUM, PO(reclaim_mode), 0, 0, 0, 0, 0, ema_reclaim_mode_names, NULL, NULL,
	  "",
	  "remote_direct, ema: how a borrower's pages are given back. `auto` moves "
	  "the request home if its GPU has room, else preempts it (recompute); "
	  "`move` only moves (skips a borrower without room); `host` swaps the "
	  "borrower to host memory, falling back to recompute; `drop` recomputes." },
	{ "host_gib", EMA_CFG_DBL, PO(host_gib), 0, 0, 0, 4096, 0, NULL, NULL, NULL,
	  "GiB per GPU",
	  "host_swap and `reclaim_mode` `host`: host memory for swapped KV; when "
	  "full, preemption recomputes." },
	{ "copy_method", EMA_CFG_ENUM, PO(copy_method), 0, 0, 0, 0, 0, ema_copy_method_names, NULL, NULL,
	  "",
	  "Copy API of engine transfers (swap in/out, reclaim moves) and of ema's "
	  "staged reads: `gather` an SM gather kernel, `batch` cudaMemcpyBatchAsync "
	  "(copy engines), `per_page` one cudaMemcpyPeerAsync per page. The prefetch copies each "
	  "layer group's slice of every remote page, one piece per page and group, and the copy "
	  "engines pay per piece." },
	END
};

#define ERR_KEY(f, what) \
	{ #f, EMA_CFG_DBL, PE(f), 0, 0, -0.9, 10, EMA_CFG_PERCENT, NULL, NULL, NULL, "share", \
	  "What the policies believe of " what " over the truth the platform " \
	  "charges: +0.2 (or `+20%` with --set) believes it 20% higher; 0 = no " \
	  "error (doc/model.md, \"The policy against a model it does not know\")." }
static const struct ema_config_key plan_error_keys[] = {
	ERR_KEY(link, "the link rates (`link_gbps`, `remote_read_gbps`, `gather_gbps`, the copy curve)"),
	ERR_KEY(hbm, "the HBM rate (`hbm_read_gbps`)"),
	ERR_KEY(interference, "the interference factors (`interference_lender`, `_borrower`, `_compute`)"),
	ERR_KEY(compute, "the compute rate (`peak_tflops`)"),
	END
};
#undef ERR_KEY

static const struct ema_config_key plan_keys[] = {
	{ "hardware", EMA_CFG_STR, PL(hardware), SZ(ema_plan_cfg, hardware), 0, 0, 0, 0, NULL, NULL, NULL,
	  "",
	  "The hardware profile the policies plan with (an embedded name or a "
	  "path), where it is not the one the platform charges; \"\" = "
	  "`hardware`. Must have as many GPUs." },
	{ "error", EMA_CFG_OBJ, PL(error), SZ(ema_plan_cfg, error), 0, 0, 0, 0, NULL, plan_error_keys, NULL,
	  "", "Errors of the policies' belief, figure by figure: the `plan.error.*` rows." },
	END
};

static const struct ema_config_key metrics_keys[] = {
	{ "warmup_s", EMA_CFG_DBL, MT(warmup_s), 0, 0, 0, 1e9, EMA_CFG_OR_MINUS_ONE, NULL, NULL, NULL,
	  "s",
	  "Start of the steady-state window of summary.csv's `steady_tok_s` and "
	  "`goodput_req_s`, in run time; -1 = 10% of the window's end (the first "
	  "tenth, while queues and batches fill from empty, is left out)." },
	{ "window_end_s", EMA_CFG_DBL, MT(window_end_s), 0, 0, 0, 1e9, 0, NULL, NULL, NULL,
	  "s",
	  "End of the steady-state window, in run time; 0 = each tenant's last "
	  "arrival (the drain after it is left out)." },
	END
};

static const struct ema_config_key slo_keys[] = {
	{ "ttft_ms", EMA_CFG_DBL, SL(ttft_ms), 0, 0, 0, 1e9, 0, NULL, NULL, NULL,
	  "ms",
	  "Time-to-first-token target of each request, for summary.csv's "
	  "`slo_attainment` and `goodput_req_s`; 0 = no target." },
	{ "tpot_ms", EMA_CFG_DBL, SL(tpot_ms), 0, 0, 0, 1e9, 0, NULL, NULL, NULL,
	  "ms",
	  "Time-per-output-token target of each request (requests with one output "
	  "token meet it); 0 = no target." },
	END
};

static void tenant_init(void *elem, int index)
{
	struct ema_tenant_cfg *t = elem;
	struct ema_workload_cfg *w = &t->workload;

	memset(t, 0, sizeof *t);
	snprintf(t->name, sizeof t->name, "t%d", index);
	t->gpu = index;
	w->source = EMA_WL_SYNTHETIC;
	w->format = EMA_TRACE_AUTO;
	w->rate_scale = 1.0;
	w->arrival = EMA_ARR_POISSON;
	w->rate_rps = 1.0;
	w->cv = 1.0;
	w->prompt = (struct ema_length_cfg){ EMA_LEN_LOGNORMAL, 1024, 1.0, 1, 8192 };
	w->output = (struct ema_length_cfg){ EMA_LEN_LOGNORMAL, 256, 1.0, 1, 2048 };
}

const struct ema_config_key ema_config_top_keys[] = {
	{ "name", EMA_CFG_STR, CF(name), SZ(ema_config, name), 0, 0, 0, EMA_CFG_NONEMPTY, NULL, NULL, NULL,
	  "",
	  "Names the run folder `runs/NAME`; 1..63 letters, digits, `-`, `_`, `.`, "
	  "not starting with `.`. A config file without it takes its base name "
	  "(other characters turned into `_`)." },
	{ "seed", EMA_CFG_U64, CF(seed), 0, 0, 0, SEED_MAX, 0, NULL, NULL, NULL,
	  "",
	  "Run seed; every workload stream is derived from (seed, tenant index, "
	  "stream name)." },
	{ "hardware", EMA_CFG_HW, CF(hardware), SZ(ema_config, hardware), CF(hw), 0, 0, 0, NULL, NULL, NULL,
	  "",
	  "Hardware profile: an embedded name (`ema list hardware`), a path to a "
	  "profile file (it holds a `/` or ends in `.json`), or an inline object of "
	  "the hardware profile keys. `hardware.KEY=...` overrides one field of the "
	  "resolved profile." },
	{ "model", EMA_CFG_MODEL, CF(model_name), SZ(ema_config, model_name), CF(model), 0, 0, 0, NULL, NULL, NULL,
	  "",
	  "Model: an embedded name (`ema list models`), a path to a model file, or "
	  "an inline object of the model keys. `model.KEY=...` overrides one field." },
	{ "page_mib", EMA_CFG_DBL, CF(page_mib), 0, 0, 0.0625, 1024, EMA_CFG_POW2, NULL, NULL, NULL,
	  "MiB", "Page size of the ledger, the GPU pools and transfers." },
	{ "gpu_mem_cap_gib", EMA_CFG_DBL, CF(gpu_mem_cap_gib), 0, 0, 0, 1e5, 0, NULL, NULL, NULL,
	  "GiB",
	  "Memory each GPU offers (weights + KV); 0 = the profile's `gpu_mem_gib`. "
	  "Must hold the weights." },
	{ "horizon_s", EMA_CFG_DBL, CF(horizon_s), 0, 0, 0, 1e9, 0, NULL, NULL, NULL,
	  "s", "Stop time of each policy's run; 0 = until every request finished." },
	{ "policies", EMA_CFG_STRLIST, CF(policies), EMA_NAME_MAX, CF(n_policies), 1, EMA_MAX_POLICIES, 0, NULL, NULL, NULL,
	  "",
	  "Policies to run, in order, on the same requests: names from `ema list "
	  "policies`, no repeats." },
	{ "serving", EMA_CFG_OBJ, CF(serving), SZ(ema_config, serving), 0, 0, 0, 0, NULL, serving_keys, NULL,
	  "",
	  "Batching knobs of the serving model, for every policy: the `serving.*` "
	  "rows." },
	{ "policy", EMA_CFG_OBJ, CF(policy), SZ(ema_config, policy), 0, 0, 0, 0, NULL, policy_keys, NULL,
	  "",
	  "Policy knobs: the `policy.*` rows, each naming the policies that read "
	  "it." },
	{ "tenants", EMA_CFG_ARRAY, CF(tenants), sizeof(struct ema_tenant_cfg), CF(n_tenants), 0, EMA_MAX_TENANTS, 0, NULL, tenant_keys, tenant_init,
	  "",
	  "One LLM instance per GPU: the `tenants[i].*` rows; at least one. `--set "
	  "tenants.N=...` with N the current count appends one." },
	{ "metrics", EMA_CFG_OBJ, CF(metrics), SZ(ema_config, metrics), 0, 0, 0, 0, NULL, metrics_keys, NULL,
	  "", "How summary.csv measures steady state: the `metrics.*` rows." },
	{ "slo", EMA_CFG_OBJ, CF(slo), SZ(ema_config, slo), 0, 0, 0, 0, NULL, slo_keys, NULL,
	  "", "Per-request latency targets of summary.csv: the `slo.*` rows." },
	{ "plan", EMA_CFG_OBJ, CF(plan), SZ(ema_config, plan), 0, 0, 0, 0, NULL, plan_keys, NULL,
	  "",
	  "The model the policies plan with, where it differs from the truth the "
	  "platform charges: the `plan.*` rows (all 0 and \"\": the same)." },
	END
};

static int config_defaults(struct ema_config *c, struct ema_error *err)
{
	int rc;

	memset(c, 0, sizeof *c);
	snprintf(c->name, sizeof c->name, "default");
	c->seed = 1;
	snprintf(c->hardware, sizeof c->hardware, "h200x2");
	snprintf(c->model_name, sizeof c->model_name, "llama-3-8b");
	c->page_mib = 2;
	c->n_policies = 2;
	snprintf(c->policies[0], sizeof c->policies[0], "static");
	snprintf(c->policies[1], sizeof c->policies[1], "ideal");
	c->serving = (struct ema_serving_cfg){
		.block_tokens = 16, .max_batch = 256, .max_batch_tokens = 8192,
		.chunked_prefill = false, .watermark = 0.01, .layer_groups = 8,
		.reclaim_backoff = 64,
		.oversize = EMA_OVERSIZE_DROP,
	};
	c->policy = (struct ema_policy_cfg){
		.ideal_factor = 2, .lender_floor = 0.25, .lender_reserve = 0.05,
		.reclaim_mode = EMA_RECLAIM_AUTO, .host_gib = 64, .copy_method = EMA_COPY_GATHER,
	};
	c->metrics = (struct ema_metrics_cfg){ .warmup_s = -1, .window_end_s = 0 };
	c->slo = (struct ema_slo_cfg){ .ttft_ms = 0, .tpot_ms = 0 };
	for (int k = 0; k < EMA_MAX_KNOB_TABLES && knob_table_owner[k] != NULL; k++)
		for (int i = 0; i < n_known_policies; i++)
			if (known_policies[i].name == knob_table_owner[k])
				memcpy(c->policy.own[k], known_policies[i].knob_defaults,
				       known_policies[i].knobs_size);
	rc = ema_hw_profile_load(&c->hw, c->hardware, err);
	if (rc == 0)
		rc = ema_model_load(&c->model, c->model_name, err);
	if (rc < 0)
		return ema_error_set(err, EMA_ERR_INTERNAL,
				     "embedded default profile or model is broken: %s",
				     err ? err->msg : "");
	return EMA_OK;
}

int ema_config_set_policies(const struct ema_config_policy *list, int n)
{
	int slot = 0;

	for (int i = 0; i < n; i++) {
		struct ema_config_key *row;

		if (list[i].knobs == NULL)
			continue;
		if (slot == EMA_MAX_KNOB_TABLES || list[i].knobs_size > EMA_KNOB_TABLE_BYTES ||
		    list[i].knob_defaults == NULL)
			return EMA_ERR_INTERNAL;
		row = &policy_keys[POLICY_SHARED_KEYS + slot];
		memset(row, 0, sizeof *row);
		row->key = list[i].name;
		row->type = EMA_CFG_OBJ;
		row->off = offsetof(struct ema_policy_cfg, own) + (size_t)slot * EMA_KNOB_TABLE_BYTES;
		row->size = list[i].knobs_size;
		row->sub = list[i].knobs;
		row->unit = "";
		row->help = "The policy's own knobs (policies/policy.h): the rows below, read by "
			    "that policy alone.";
		knob_table_owner[slot++] = list[i].name;
	}
	memset(&policy_keys[POLICY_SHARED_KEYS + slot], 0, sizeof policy_keys[0]);
	for (int k = slot; k < EMA_MAX_KNOB_TABLES; k++)
		knob_table_owner[k] = NULL;
	known_policies = list;
	n_known_policies = n;
	return EMA_OK;
}

const void *ema_config_policy_knobs(const struct ema_config *cfg, const char *name)
{
	for (int k = 0; k < EMA_MAX_KNOB_TABLES && knob_table_owner[k] != NULL; k++)
		if (strcmp(knob_table_owner[k], name) == 0)
			return cfg->policy.own[k];
	return NULL;
}

int ema_config_builtin(struct ema_config *c, struct ema_error *err)
{
	return config_defaults(c, err);
}

/* Where a value came from: the last --set that wrote it (or an ancestor or
 * descendant of it), else the file. */
struct origin {
	const struct ema_config_src *file;
	const char *const *overrides;
	int n;
	const char *cwd;
};

static bool path_related(const char *key, size_t klen, const char *path)
{
	size_t plen = strlen(path);
	size_t n = klen < plen ? klen : plen;

	if (memcmp(key, path, n) != 0)
		return false;
	return klen == plen || (klen < plen && path[klen] == '.') ||
	       (plen < klen && key[plen] == '.');
}

static int origin_of(const struct origin *o, const char *path)
{
	for (int i = o->n - 1; i >= 0; i--) {
		const char *eq = strchr(o->overrides[i], '=');

		if (eq != NULL && path_related(o->overrides[i],
					       (size_t)(eq - o->overrides[i]), path))
			return i;
	}
	return -1;
}

static int vfail(const struct origin *o, const char *path, bool with_path,
		 struct ema_error *err, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* The source to blame for path: a --set (filled into tmp) or the file. */
static const struct ema_config_src *src_for(const struct origin *o,
					    const char *path,
					    struct ema_config_src *tmp,
					    char *key, size_t key_size)
{
	int i = origin_of(o, path);
	const char *arg;

	if (i < 0)
		return o->file;
	arg = o->overrides[i];
	snprintf(key, key_size, "%.*s", (int)(strchr(arg, '=') - arg), arg);
	*tmp = (struct ema_config_src){ "--set", NULL, 0, arg, key, o->cwd };
	return tmp;
}

static int vfail(const struct origin *o, const char *path, bool with_path,
		 struct ema_error *err, const char *fmt, ...)
{
	char msg[EMA_ERROR_MSG_MAX], key[512];
	struct ema_config_src tmp;
	const struct ema_config_src *s = src_for(o, path, &tmp, key, sizeof key);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return ema_config_fail(s, path, with_path, err, "%s", msg);
}

/* locate() for keys relative to tenants.INDEX ("" = the tenant itself). */
static const char *locate(const struct origin *o, const char *const *paths);

static const char *locate_t(const struct origin *o, char *buf, size_t size,
			    int tenant, const char *const *keys)
{
	char paths[6][128];
	const char *list[7];
	int n = 0;

	for (; keys[n] != NULL && n < 6; n++) {
		snprintf(paths[n], sizeof paths[n], "tenants.%d%s%s", tenant,
			 *keys[n] ? "." : "", keys[n]);
		list[n] = paths[n];
	}
	list[n] = NULL;
	snprintf(buf, size, "%s", locate(o, list));
	return buf;
}

/* Names end up in paths (the scenario's is the run folder under runs/)
 * and in CSV fields (tenants'), which nothing quotes: only letters,
 * digits, '-', '_' and '.', not starting with '.' (no "..", no hidden
 * folder). The length is bounded by the EMA_NAME_MAX buffer. */
static bool safe_name(const char *s)
{
	if (s[0] == '\0' || s[0] == '.')
		return false;
	for (; *s != '\0'; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' || *s == '.'))
			return false;
	return true;
}

/* A name as a message shows it: control bytes escaped, so that a
 * newline in it cannot split the message. */
static const char *shown_name(char *buf, size_t size, const char *s)
{
	size_t k = 0;

	for (; *s != '\0' && k + 5 < size; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch < 0x20 || ch == 0x7f || ch == '"' || ch == '\\')
			k += (size_t)snprintf(buf + k, size - k, "\\x%02x", ch);
		else
			buf[k++] = (char)ch;
	}
	buf[k] = '\0';
	return buf;
}

static int check_name(const struct origin *o, const char *path,
		      const char *name, const char *what, struct ema_error *err)
{
	char shown[4 * EMA_NAME_MAX + 8];

	if (safe_name(name))
		return EMA_OK;
	return vfail(o, path, false, err,
		     "%s must be letters, digits, '-', '_' or '.', not starting with '.', at most %d bytes (%s); got \"%s\"",
		     path, EMA_NAME_MAX - 1, what, shown_name(shown, sizeof shown, name));
}

/* 5e7 as "50,000,000": request counts in messages are read by people.
 * x is a whole number below 1e15 here (rate_rps x duration_s). */
static const char *thousands(char *buf, size_t size, double x)
{
	char digits[32];
	size_t n, k = 0;

	n = (size_t)snprintf(digits, sizeof digits, "%.0f", x);
	for (size_t i = 0; i < n && k + 2 < size; i++) {
		if (i > 0 && (n - i) % 3 == 0)
			buf[k++] = ',';
		buf[k++] = digits[i];
	}
	buf[k] = '\0';
	return buf;
}

static int check_length(const struct origin *o, const struct ema_length_cfg *l,
			int tenant, const char *which, struct ema_error *err)
{
	char p[512], fmin[128], fmax[128];
	const char *fmts[] = { fmin, fmax, NULL };

	snprintf(fmin, sizeof fmin, "workload.%s.min", which);
	snprintf(fmax, sizeof fmax, "workload.%s.max", which);
	if (l->min > l->max)
		return vfail(o, locate_t(o, p, sizeof p, tenant, fmts), false, err,
			     "expected %s min <= max, got min %d and max %d",
			     which, l->min, l->max);
	return EMA_OK;
}

static int check_tenant(const struct origin *o, const struct ema_config *c,
			int i, struct ema_error *err)
{
	const struct ema_tenant_cfg *t = &c->tenants[i];
	const struct ema_workload_cfg *w = &t->workload;
	char p[512];
	int rc;

	snprintf(p, sizeof p, "tenants.%d.name", i);
	rc = check_name(o, p, t->name, "it is a field of every CSV output", err);
	if (rc < 0)
		return rc;
	if (t->gpu >= c->hw.n_gpus) {
		/* blamed on what a --set changed, the GPU or the server */
		char gpu_key[64];
		const char *keys[] = { gpu_key, "hardware.n_gpus", "hardware", NULL };
		const char *blame;

		snprintf(gpu_key, sizeof gpu_key, "tenants.%d.gpu", i);
		blame = locate(o, keys);
		if (blame == keys[0])
			return vfail(o, blame, true, err,
				     "GPU %d is outside hardware %s; expected 0..%d",
				     t->gpu, c->hw.name, c->hw.n_gpus - 1);
		return vfail(o, blame, false, err,
			     "tenants.%d.gpu = %d is outside hardware %s (hardware.n_gpus = %d); "
			     "expected 0..%d", i, t->gpu, c->hw.name, c->hw.n_gpus, c->hw.n_gpus - 1);
	}
	for (int j = 0; j < i; j++) {
		if (c->tenants[j].gpu == t->gpu) {
			snprintf(p, sizeof p, "tenants.%d.gpu", i);
			return vfail(o, p, true, err,
				     "GPU %d already serves tenant %s; expected one tenant per GPU",
				     t->gpu, c->tenants[j].name);
		}
		if (strcmp(c->tenants[j].name, t->name) == 0) {
			snprintf(p, sizeof p, "tenants.%d.name", i);
			return vfail(o, p, true, err,
				     "tenant name \"%s\" is taken by tenants.%d; expected unique names",
				     t->name, j);
		}
	}
	if (w->source != EMA_WL_SYNTHETIC && w->trace[0] == '\0') {
		static const char *const f[] = {
			"workload.trace", "workload.source", NULL
		};

		return vfail(o, locate_t(o, p, sizeof p, i, f), false, err,
			     "a %s workload needs a file in tenants.%d.workload.trace",
			     ema_workload_source_names[w->source], i);
	}
	if (w->source != EMA_WL_TRACE && w->rate_rps <= 0) {
		static const char *const f[] = {
			"workload.rate_rps", "workload.source", NULL
		};

		return vfail(o, locate_t(o, p, sizeof p, i, f), false, err,
			     "generated arrivals need tenants.%d.workload.rate_rps > 0",
			     i);
	}
	if (w->source == EMA_WL_SYNTHETIC && w->duration_s <= 0 &&
	    w->max_requests <= 0) {
		static const char *const f[] = {
			"workload.duration_s", "workload.max_requests",
			"workload.source", "", NULL
		};

		return vfail(o, locate_t(o, p, sizeof p, i, f), false, err,
			     "a synthetic workload needs tenants.%d.workload.duration_s > 0 (or max_requests > 0)",
			     i);
	}
	/* the generator's limit, checked here so that a typo fails before
	 * anything runs, at the workload's line */
	if (w->source != EMA_WL_TRACE) {
		char n[40], lim[40];

		thousands(lim, sizeof lim, (double)EMA_CFG_MAX_REQUESTS);
		if (w->max_requests > EMA_CFG_MAX_REQUESTS) {
			snprintf(p, sizeof p, "tenants.%d.workload.max_requests", i);
			return vfail(o, p, true, err,
				     "max_requests = %s exceeds the limit of %s generated requests",
				     thousands(n, sizeof n, w->max_requests), lim);
		}
		if (w->max_requests == 0 &&
		    w->rate_rps * w->duration_s > (double)EMA_CFG_MAX_REQUESTS) {
			snprintf(p, sizeof p, "tenants.%d.workload", i);
			return vfail(o, p, true, err,
				     "rate_rps x duration_s = %s requests exceeds the limit of %s; expected a lower rate_rps or duration_s, or max_requests",
				     thousands(n, sizeof n, ceil(w->rate_rps * w->duration_s)), lim);
		}
	}
	if (w->source == EMA_WL_TRACE && w->format == EMA_TRACE_LENGTHS) {
		static const char *const f[] = {
			"workload.format", "workload.source", NULL
		};

		return vfail(o, locate_t(o, p, sizeof p, i, f), false, err,
			     "a lengths-only file has no arrival times; expected \"source\": \"lengths\" for tenants.%d",
			     i);
	}
	if ((w->prompt.kind == EMA_LEN_EMPIRICAL || w->output.kind == EMA_LEN_EMPIRICAL) &&
	    w->source != EMA_WL_TRACE && w->trace[0] == '\0') {
		static const char *const f[] = {
			"workload.prompt.kind", "workload.output.kind", "workload.trace", NULL
		};

		return vfail(o, locate_t(o, p, sizeof p, i, f), false, err,
			     "empirical lengths need a lengths file in tenants.%d.workload.trace", i);
	}
	if (w->arrival == EMA_ARR_GAMMA && w->cv <= 0) {
		static const char *const f[] = {
			"workload.cv", "workload.arrival", NULL
		};

		return vfail(o, locate_t(o, p, sizeof p, i, f), false, err,
			     "gamma arrivals need tenants.%d.workload.cv > 0", i);
	}
	rc = check_length(o, &w->prompt, i, "prompt", err);
	if (rc < 0)
		return rc;
	return check_length(o, &w->output, i, "output", err);
}

/* The key to blame for a question that several keys decide: one a --set
 * changed, else the first one the file holds. */
static const char *locate(const struct origin *o, const char *const *paths)
{
	for (int i = 0; paths[i] != NULL; i++)
		if (origin_of(o, paths[i]) >= 0)
			return paths[i];
	for (int i = 0; paths[i] != NULL; i++)
		if (ema_config_json_line(o->file->text, o->file->len, paths[i]) > 0)
			return paths[i];
	return paths[0];
}

/* The profile the policies plan with: plan.hardware (or the platform's
 * profile, hw) with plan.error applied figure by figure. It must describe
 * the same server (GPUs, memory): the policies index GPUs and pages by
 * it; what may differ are its rates. */
static int resolve_plan(const struct origin *o, struct ema_config *c, struct ema_error *err)
{
	struct ema_hw_profile *b = &c->plan_hw;
	const struct ema_plan_error_cfg *e = &c->plan.error;
	double link = 1 + e->link, hbm = 1 + e->hbm;
	double inter = 1 + e->interference, comp = 1 + e->compute;

	if (c->plan.hardware[0] == '\0') {
		*b = c->hw;
	} else {
		char key[512];
		struct ema_config_src tmp;
		const struct ema_config_src *s = src_for(o, "plan.hardware", &tmp, key, sizeof key);
		int rc = ema_config_resolve_hw(b, c->plan.hardware, s, "plan.hardware", err);

		if (rc < 0)
			return rc;
		if (b->n_gpus != c->hw.n_gpus)
			return vfail(o, "plan.hardware", true, err,
				     "expected a profile of the %d GPUs of %s, got %s with %d",
				     c->hw.n_gpus, c->hw.name, b->name, b->n_gpus);
		/* the server's size is the truth's: a belief is about rates */
		b->gpu_mem_gib = c->hw.gpu_mem_gib;
	}
	b->link_gbps *= link;
	b->remote_read_gbps *= link;
	b->gather_gbps *= link;
	for (int i = 0; i < b->n_copy_curve; i++)
		b->copy_curve[i].gbps *= link;
	b->hbm_read_gbps *= hbm;
	b->interference_lender *= inter;
	b->interference_borrower *= inter;
	b->interference_compute *= inter;
	b->peak_tflops *= comp;
	return EMA_OK;
}

/* The shortest step a run can take, a decode of one token (every weight
 * read once, 2 x params FLOPs, and the overhead), must end within the
 * limit of simulated time (simtime.h): else no step ends at all. A rate
 * that rounds to 0 (1e-300 x 1e-12) would time every step at 0 ns, as
 * the cost model reads "no rate"; it is refused here too. Longer steps
 * and runs are checked as they are simulated (sim/sim_platform.c). */
static int check_step_limit(const struct ema_config *c, const struct origin *o,
			    struct ema_error *err)
{
	static const char *const hbm_keys[] = {
		"hardware.hbm_read_gbps", "hardware.hbm_efficiency", "hardware", "model", NULL
	};
	static const char *const flops_keys[] = {
		"hardware.peak_tflops", "hardware.flops_efficiency", "hardware", "model", NULL
	};
	const struct ema_hw_profile *hw = &c->hw;
	double tp = c->model.tensor_parallel > 0 ? c->model.tensor_parallel : 1;
	double rate = hw->hbm_read_gbps * hw->hbm_efficiency;
	double flops_per_ns = hw->peak_tflops * 1e3 * hw->flops_efficiency;
	double weights = (double)ema_model_weight_bytes(&c->model);
	double flops = 2.0 * c->model.params_b * 1e9 / tp;
	double over = hw->iter_overhead_us * 1e3;
	char t[32];

	if (!(rate > 0) || !ema_time_ns_ok(over + weights / rate))
		return vfail(o, locate(o, hbm_keys), false, err,
			     "hardware.hbm_read_gbps x hbm_efficiency = %.3g GB/s reads the %.3g GB "
			     "of weights of model %s in %s a step: past the limit of simulated "
			     "time, " EMA_TIME_MAX_TEXT " (2^62 ns); expected faster reads",
			     rate, weights / 1e9, c->model.name,
			     rate > 0 ? ema_time_text(t, sizeof t, over + weights / rate) : "forever");
	if (!(flops_per_ns > 0) || !ema_time_ns_ok(over + flops / flops_per_ns))
		return vfail(o, locate(o, flops_keys), false, err,
			     "hardware.peak_tflops x flops_efficiency = %.3g TFLOP/s computes the "
			     "%.3g FLOPs of one token of model %s in %s a step: past the limit of "
			     "simulated time, " EMA_TIME_MAX_TEXT " (2^62 ns); expected faster compute",
			     flops_per_ns / 1e3, flops, c->model.name,
			     flops_per_ns > 0 ? ema_time_text(t, sizeof t, over + flops / flops_per_ns) :
			     "forever");
	return EMA_OK;
}

static int validate(struct ema_config *c, const struct origin *o,
		    struct ema_error *err)
{
	static const char *const fit_keys[] = {
		"model", "gpu_mem_cap_gib", "hardware", NULL
	};
	double usable_gib;
	uint64_t weights;
	int rc;

	char key[512];
	struct ema_config_src tmp;

	/* --set may have changed single fields of a resolved profile */
	rc = ema_config_check_hw(&c->hw, src_for(o, "hardware", &tmp, key, sizeof key),
				 "hardware", err);
	if (rc == 0)
		rc = ema_config_check_model(&c->model,
					    src_for(o, "model", &tmp, key, sizeof key),
					    "model", err);
	if (rc < 0)
		return rc;
	rc = check_name(o, "name", c->name, "it names the run folder under runs/", err);
	if (rc < 0)
		return rc;
	if (c->gpu_mem_cap_gib > c->hw.gpu_mem_gib) {
		/* blamed on what a --set changed, the cap or the GPU's memory */
		static const char *const cap_keys[] = {
			"gpu_mem_cap_gib", "hardware.gpu_mem_gib", "hardware", NULL
		};

		const char *blame = locate(o, cap_keys);

		if (blame == cap_keys[0])
			return vfail(o, blame, true, err,
				     "expected at most the %g GiB of a GPU of %s (0 = all of it), got %g",
				     c->hw.gpu_mem_gib, c->hw.name, c->gpu_mem_cap_gib);
		return vfail(o, blame, false, err,
			     "gpu_mem_cap_gib = %g GiB: expected at most the %g GiB of a GPU of %s "
			     "(hardware.gpu_mem_gib; 0 = all of it)",
			     c->gpu_mem_cap_gib, c->hw.gpu_mem_gib, c->hw.name);
	}
	if (c->model.tensor_parallel > c->hw.n_gpus)
		return vfail(o, "model", true, err,
			     "tensor_parallel %d exceeds the %d GPUs of %s",
			     c->model.tensor_parallel, c->hw.n_gpus, c->hw.name);
	for (int i = 0; i < c->n_policies; i++) {
		if (known_policies != NULL && !policy_known(c->policies[i])) {
			char names[512] = "";

			for (int k = 0; k < n_known_policies; k++)
				snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
					 k ? ", " : "", known_policies[k].name);
			return vfail(o, "policies", true, err,
				     "unknown policy \"%s\" (expected one of: %s)", c->policies[i], names);
		}
		for (int k = 0; k < i; k++)
			if (strcmp(c->policies[k], c->policies[i]) == 0)
				return vfail(o, "policies", true, err,
					     "policy \"%s\" listed twice", c->policies[i]);
	}
	if (c->n_tenants == 0)
		return vfail(o, "tenants", false, err,
			     "expected at least one tenant in \"tenants\"");
	for (int i = 0; i < c->n_tenants; i++) {
		rc = check_tenant(o, c, i, err);
		if (rc < 0)
			return rc;
	}
	if (c->metrics.window_end_s > 0 && c->metrics.warmup_s >= c->metrics.window_end_s) {
		static const char *const win_keys[] = {
			"metrics.warmup_s", "metrics.window_end_s", NULL
		};

		return vfail(o, locate(o, win_keys), false, err,
			     "metrics.warmup_s (%g s) must be below metrics.window_end_s (%g s)",
			     c->metrics.warmup_s, c->metrics.window_end_s);
	}
	rc = resolve_plan(o, c, err);
	if (rc < 0)
		return rc;
	usable_gib = c->gpu_mem_cap_gib > 0 ? c->gpu_mem_cap_gib : c->hw.gpu_mem_gib;
	weights = ema_model_weight_bytes(&c->model);
	if ((double)weights >= usable_gib * 1073741824.0)
		return vfail(o, locate(o, fit_keys), false, err,
			     "model %s needs %.1f GB of weights per GPU, more than the %.1f GiB a GPU has",
			     c->model.name, (double)weights / 1e9, usable_gib);
	rc = check_step_limit(c, o, err);
	if (rc < 0)
		return rc;
	/* a group is at least one layer */
	if (c->serving.layer_groups > c->model.layers)
		c->serving.layer_groups = c->model.layers;
	return EMA_OK;
}

/* Folder of the config file as an absolute path, so that trace paths stay
 * valid when the effective configuration is reloaded from elsewhere. */
static void file_dir(char *out, size_t size, const char *path, const char *cwd)
{
	const char *slash = strrchr(path, '/');
	char dir[EMA_PATH_MAX];

	if (slash == NULL) {
		snprintf(out, size, "%s", cwd);
		return;
	}
	snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
	if (dir[0] == '\0')
		snprintf(dir, sizeof dir, "/");
	if (ema_config_join_path(out, size, cwd, dir) < 0)
		snprintf(out, size, "%s", dir);
}

/* The file's base name as the default scenario name. The user did not
 * write it as a name, so "my run.json" becomes "my_run" rather than an
 * error: unsafe characters (and a leading '.') turn into '_'. */
static void base_name(char *out, size_t size, const char *path)
{
	const char *b = strrchr(path, '/');
	size_t n;

	b = b ? b + 1 : path;
	n = strlen(b);
	if (n > 5 && strcmp(b + n - 5, ".json") == 0)
		n -= 5;
	snprintf(out, size, "%.*s", (int)n, b);
	for (char *q = out; *q != '\0'; q++) {
		char ch[2] = { *q, '\0' };

		if (!safe_name(ch) || (q == out && *q == '.'))
			*q = '_';
	}
}

int ema_config_load(struct ema_config *cfg, const char *path,
		    const char *const *overrides, int n_overrides,
		    struct ema_error *err)
{
	char cwd[EMA_PATH_MAX], dir[EMA_PATH_MAX];
	struct ema_config_src src;
	struct origin o;
	char *owned = NULL;
	const char *text;
	size_t len;
	cJSON *root = NULL;
	struct ema_config *defaults = NULL;
	int rc;

	if (cfg == NULL || (n_overrides > 0 && overrides == NULL))
		return ema_error_set(err, EMA_ERR_INTERNAL, "ema_config_load: bad arguments");
	/* the key engine resolves hardware and model values through these */
	ema_config_keys_use_named(&ema_config_hw_named, &ema_config_model_named);
	rc = config_defaults(cfg, err);
	if (rc < 0)
		return rc;
	if (getcwd(cwd, sizeof cwd) == NULL)
		cwd[0] = '\0';
	if (path == NULL) {
		text = ema_config_default_json;
		len = strlen(text);
		snprintf(cfg->source_file, sizeof cfg->source_file, "(default)");
		snprintf(dir, sizeof dir, "%s", cwd);
	} else {
		if (strlen(path) >= sizeof cfg->source_file)
			return ema_error_at(err, path, 0, "expected a path shorter than %d bytes",
					    EMA_PATH_MAX);
		rc = ema_config_read_file(path, &owned, &len, err);
		if (rc < 0)
			return rc;
		text = owned;
		snprintf(cfg->source_file, sizeof cfg->source_file, "%s", path);
		file_dir(dir, sizeof dir, path, cwd);
		base_name(cfg->name, sizeof cfg->name, path);
		if (cfg->name[0] == '\0')
			snprintf(cfg->name, sizeof cfg->name, "default");
	}
	src = (struct ema_config_src){ cfg->source_file, text, len, NULL, NULL, dir };
	o = (struct origin){ &src, overrides, n_overrides, cwd };
	rc = ema_config_parse_text(cfg->source_file, text, len, &root, err);
	if (rc == 0)
		rc = ema_config_parse_object(ema_config_top_keys, cfg, root, "", &src, err);
	/* a whole object given with --set replaces the old one: what it
	 * leaves out takes the built-in defaults, not the file's values */
	if (rc == 0 && n_overrides > 0) {
		defaults = malloc(sizeof *defaults);
		if (defaults == NULL)
			rc = ema_error_set(err, EMA_ERR_NOMEM, "out of memory for the defaults");
		else
			rc = config_defaults(defaults, err);
	}
	for (int i = 0; rc == 0 && i < n_overrides; i++)
		rc = ema_config_apply_set(ema_config_top_keys, cfg, defaults,
					  overrides[i], cwd, err);
	free(defaults);
	if (rc == 0)
		rc = validate(cfg, &o, err);
	for (int i = 0; rc == 0 && i < cfg->n_tenants; i++) {
		char key[64];

		snprintf(key, sizeof key, "tenants.%d.workload", i);
		cfg->workload_line[i] = ema_config_json_near_line(text, len, key);
	}
	cJSON_Delete(root);
	free(owned);
	return rc;
}

int ema_config_write_json(const struct ema_config *cfg, FILE *out,
			  struct ema_error *err)
{
	ema_config_keys_use_named(&ema_config_hw_named, &ema_config_model_named);
	ema_config_write_object(out, ema_config_top_keys, cfg, 0);
	fputc('\n', out);
	if (ferror(out))
		return ema_error_set(err, EMA_ERR_IO, "cannot write the configuration");
	return EMA_OK;
}
