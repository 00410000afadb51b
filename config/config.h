/* config.h: the scenario a run simulates (or executes on GPUs): its
 * tenants and their workloads, the policies to compare, and the hardware
 * profile, model and knobs it names (described in base/), and how all of it
 * is read from JSON, overridden with --set and written back as the
 * effective configuration. Only config/ parses. */
#ifndef EMA_CONFIG_H
#define EMA_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ema_error.h"
#include "hardware.h"
#include "keys.h"
#include "knobs.h"
#include "ema_limits.h"
#include "workload.h"

struct ema_tenant_cfg {
	char name[EMA_NAME_MAX];
	int gpu;
	struct ema_workload_cfg workload;
};

/* How summary.csv measures a tenant (src/experiment.c): the window of its
 * steady state, and per-request latency targets (SLO). */
struct ema_metrics_cfg {
	double warmup_s;              /* window start, s of run time; -1 = 10% of the window's end */
	double window_end_s;          /* window end, s of run time; 0 = the tenant's last arrival */
};
struct ema_slo_cfg {
	double ttft_ms;               /* per-request TTFT target; 0 = none */
	double tpot_ms;               /* per-request TPOT target; 0 = none */
};
/* What the policies believe of the hardware, where it is not the truth
 * the platform charges (issue 33: the policy against a model it does not
 * know). Each error is a share: +0.2 believes the figure 20% higher than
 * it is. */
struct ema_plan_error_cfg {
	double link;                  /* link_gbps, remote_read_gbps, gather_gbps, the copy curve */
	double hbm;                   /* hbm_read_gbps */
	double interference;          /* interference_lender, _borrower, _compute */
	double compute;               /* peak_tflops */
};
struct ema_plan_cfg {
	char hardware[EMA_PATH_MAX];  /* profile the policies plan with; "" = `hardware` */
	struct ema_plan_error_cfg error;
};

struct ema_config {
	char source_file[EMA_PATH_MAX]; /* "(default)" for the embedded scenario */
	/* where tenants.N.workload is in source_file (or the nearest key
	 * above it), for errors found only when requests are generated; 0
	 * when unknown. Provenance, like source_file: not a key. */
	long workload_line[EMA_MAX_TENANTS];
	char name[EMA_NAME_MAX];
	uint64_t seed;
	char hardware[EMA_PATH_MAX];  /* profile name or path */
	char model_name[EMA_NAME_MAX];
	double page_mib;
	double gpu_mem_cap_gib;       /* 0 = the profile's memory */
	double horizon_s;             /* 0 = until every request finished */
	int n_policies;
	char policies[EMA_MAX_POLICIES][EMA_NAME_MAX];
	struct ema_serving_cfg serving;
	struct ema_policy_cfg policy;
	int n_tenants;
	struct ema_tenant_cfg tenants[EMA_MAX_TENANTS];
	struct ema_metrics_cfg metrics;
	struct ema_slo_cfg slo;
	struct ema_plan_cfg plan;
	/* resolved from the names above by ema_config_load */
	struct ema_hw_profile hw;
	struct ema_model model;
	/* the profile the policies are given (ema_policy_ctx.hw): plan.hardware
	 * (or hw) with plan.error applied; the platform charges hw. A
	 * configuration built by hand may leave it zeroed: the engine then
	 * gives the policies hw. */
	struct ema_hw_profile plan_hw;
};

/* The embedded default scenario, as JSON text (also `ema config default`). */
extern const char ema_config_default_json[];

/* Loads a scenario: defaults, then the file (NULL = embedded default),
 * then each "key.path=value" override in order, then validation and
 * resolution of hardware and model. On error fills err with
 * "file:line: what was expected" and returns EMA_ERR_INPUT. */
int ema_config_load(struct ema_config *cfg, const char *path,
		    const char *const *overrides, int n_overrides,
		    struct ema_error *err);

/* A policy as the configuration knows it: its name, and the table of its
 * own knobs (NULL: none) over a struct of knobs_size bytes with defaults. */
struct ema_config_policy {
	const char *name;
	const struct ema_config_key *knobs;
	size_t knobs_size;
	const void *knob_defaults;
};

/* The policies `policies` may list and whose knob tables `policy.NAME`
 * holds (n of them, valid for the program's life): the policy registry's,
 * given by the program at start-up (serve's ema_engine_register_policies),
 * since config/ sits below the policies. Until it is called any name
 * passes here, and running an unknown policy fails later. Returns
 * EMA_ERR_INTERNAL when the tables do not fit (EMA_MAX_KNOB_TABLES,
 * EMA_KNOB_TABLE_BYTES). */
int ema_config_set_policies(const struct ema_config_policy *list, int n);
/* The own knobs of policy `name` in cfg (policy.NAME), or NULL when it
 * declared none. */
const void *ema_config_policy_knobs(const struct ema_config *cfg, const char *name);

/* Writes the effective configuration (every default filled in) as JSON. */
int ema_config_write_json(const struct ema_config *cfg, FILE *out,
			  struct ema_error *err);

/* Hardware profiles and models: by name (embedded) or by path (a JSON
 * file, e.g. from `ema calibrate`). */
int ema_hw_profile_load(struct ema_hw_profile *hw, const char *name_or_path,
			struct ema_error *err);
int ema_model_load(struct ema_model *m, const char *name, struct ema_error *err);
int ema_hw_profile_write_json(const struct ema_hw_profile *hw, FILE *out);
/* Copies into hw what only a peer link can measure, from ref: the link
 * and copy figures (link_gbps, copy_fixed_us, copy_call_us,
 * batch_page_us, gather_gbps, the copy curve, remote_read_gbps) and the
 * interference of pulls (interference_*, pull_share_under_load,
 * inplace_overlap_efficiency). `ema calibrate` on one GPU measures none
 * of them, and a profile with them at zero does not load. */
void ema_hw_profile_copy_link(struct ema_hw_profile *hw, const struct ema_hw_profile *ref);

/* Names for `ema list`. Returns the count; names[i] valid for the program's life. */
int ema_hw_profile_names(const char *const **names);
int ema_model_names(const char *const **names);

/* Writes the reference of every key of scenarios, hardware profiles and
 * models as markdown (doc/keys.md is this text: tools/gen_keys writes it,
 * `make keys-doc` refreshes it, tests/test_keys checks it): key path,
 * type, range, built-in default, unit and help, from the key tables. */
int ema_config_write_reference(FILE *out, struct ema_error *err);

/* The unit of a key path ("requests/s" for tenants.0.workload.rate_rps;
 * "" for a key without one), NULL when the path names no key of the
 * tables (policy.NAME.KEY knobs included: NULL). */
const char *ema_config_key_unit(const char *path);

#endif
