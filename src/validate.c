/* validate.c: `ema validate`: one scenario on the simulator and on the
 * GPUs, the relative error of throughput and latency percentiles per
 * tenant and policy, printed and written as CSV. Targets (issue 4):
 * within 5% on throughput and p50s, 15% on p99s. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "cli.h"
#include "experiment.h"
#include "outdir.h"

static double rel(double hw, double sim)
{
	if (isnan(hw) || isnan(sim) || hw == 0)
		return NAN;
	return (sim - hw) / hw;
}

static int validate_exec(const struct ema_cli_args *a, struct ema_error *err)
{
	const char *csv = a->csv != NULL ? a->csv : "validate.csv";
	struct ema_experiment *sim = NULL, *hw = NULL;
	struct ema_outfile of;
	FILE *f;
	int rc;

	/* before the GPUs are busy for minutes: the file must be writable
	 * (it is replaced when it exists, as a file) */
	rc = ema_outfile_reserve(&of, "--csv", csv, err);
	if (rc != EMA_OK)
		return rc;
	sim = calloc(1, sizeof *sim);
	hw = calloc(1, sizeof *hw);
	if (sim == NULL || hw == NULL) {
		rc = ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
		goto done;
	}
	rc = ema_config_load(&sim->cfg, a->config, a->sets, a->n_sets, err);
	if (rc != EMA_OK)
		goto done;
	sim->quiet = a->quiet;
	hw->cfg = sim->cfg;
	/* the command's own pair: the GPUs (by their entry's name) against
	 * the default, the simulator */
	hw->backend = ema_backend_find("hw");
	if (hw->backend == NULL) {
		rc = ema_error_set(err, EMA_ERR_INTERNAL, "validate: no hw backend");
		goto done;
	}
	hw->quiet = a->quiet;
	/* hardware first: if there is no GPU, say so before simulating */
	rc = ema_experiment_run(hw, err);
	if (rc != EMA_OK)
		goto done;
	rc = ema_experiment_run(sim, err);
	if (rc != EMA_OK)
		goto done;
	/* written beside it and renamed: an old validate.csv stays whole
	 * until the new one is */
	f = ema_outfile_open(&of, err);
	if (f == NULL) {
		rc = err->code;
		goto done;
	}
	fputs("policy,tenant,metric,hw,sim,rel_error\n", f);
	printf("%-14s %-8s %-18s %12s %12s %9s\n", "policy", "tenant", "metric", "hw", "sim", "error");
	for (int i = 0; i < sim->n_runs; i++)
		for (int t = 0; t < sim->cfg.n_tenants; t++) {
			const struct ema_tenant_result *r_hw = &hw->runs[i].results[t];
			const struct ema_tenant_result *r_sim = &sim->runs[i].results[t];
			const struct { const char *name; double hw, sim; } m[] = {
				{"throughput_tok_s", r_hw->throughput_tok_s, r_sim->throughput_tok_s},
				{"ttft_p50_ms", r_hw->ttft_ms[0], r_sim->ttft_ms[0]},
				{"ttft_p99_ms", r_hw->ttft_ms[2], r_sim->ttft_ms[2]},
				{"tpot_p50_ms", r_hw->tpot_ms[0], r_sim->tpot_ms[0]},
				{"tpot_p99_ms", r_hw->tpot_ms[2], r_sim->tpot_ms[2]},
			};

			for (size_t k = 0; k < sizeof m / sizeof m[0]; k++) {
				double r = rel(m[k].hw, m[k].sim);

				fprintf(f, "%s,%s,%s,%.6g,%.6g,%.6g\n", r_hw->policy, r_hw->tenant,
					m[k].name, m[k].hw, m[k].sim, r);
				printf("%-14s %-8s %-18s %12.4g %12.4g %+8.1f%%\n", r_hw->policy,
				       r_hw->tenant, m[k].name, m[k].hw, m[k].sim, 100.0 * r);
			}
		}
	rc = ema_outfile_commit(&of, err);
	if (rc == EMA_OK)
		printf("written: %s\n", csv);
done:
	if (sim) {
		ema_experiment_free(sim);
		free(sim);
	}
	if (hw) {
		ema_experiment_free(hw);
		free(hw);
	}
	return rc;
}

static const struct ema_cli_optuse validate_options[] = {
	{ EMA_OPT_CONFIG, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_SET, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_SEED, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_CSV, "the comparison to write (policy,tenant,metric,hw,sim,rel_error); checked "
	  "before anything runs, replaced when complete; default validate.csv", NULL,
	  EMA_VALUE_NONE },
	{ EMA_OPT_QUIET, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_HELP, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_NONE, NULL, NULL, EMA_VALUE_NONE },
};

static const char *const validate_examples[] = {
	"ema validate -c scenarios/published/h200x2_llama2_7b_28gib.json --csv h200.csv",
	NULL,
};

const struct ema_cli_cmd ema_cmd_validate = {
	.name = "validate",
	.summary = "run a scenario on the GPUs and on the simulator and compare",
	.usage = "[-c FILE] [-s KEY=VALUE]... [--seed N] [--csv FILE] [-q]",
	.options = validate_options,
	.description =
		"Runs the scenario on the GPUs of this machine, then on the simulator, and prints "
		"and writes, per policy and tenant, throughput and TTFT/TPOT p50 and p99 on both "
		"with rel_error = (sim - hw) / hw. Targets: within 5% on throughput and the p50s, "
		"15% on the p99s. Without a GPU (or a CUDA build) it says so and exits with status "
		"1 before simulating.",
	.examples = validate_examples,
	.fn = validate_exec,
};
