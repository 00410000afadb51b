/* validate.c: `ema validate`: one scenario on the simulator and on the
 * GPUs, the relative error of throughput and latency percentiles per
 * tenant and policy, printed and written as CSV. Targets (issue 4):
 * within 5% on throughput and p50s, 15% on p99s. */
#include "validate.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "experiment.h"
#include "outdir.h"

#define MAX_SETS 256

static double rel(double hw, double sim)
{
	if (isnan(hw) || isnan(sim) || hw == 0)
		return NAN;
	return (sim - hw) / hw;
}

int ema_validate_main(int argc, char **argv, struct ema_error *err)
{
	const char *config = NULL, *csv = "validate.csv";
	const char *sets[MAX_SETS];
	int n_sets = 0;
	struct ema_experiment *sim = NULL, *hw = NULL;
	char tmp[EMA_PATH_MAX + 32];
	struct stat st;
	FILE *f;
	int rc, slot;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
			config = argv[++i];
		else if (strcmp(argv[i], "--set") == 0 && i + 1 < argc && n_sets < MAX_SETS)
			sets[n_sets++] = argv[++i];
		else if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc)
			csv = argv[++i];
		else
			return ema_error_set(err, EMA_ERR_INPUT,
					     "validate: expected --config FILE, --set key=value or --csv FILE, not %s",
					     argv[i]);
	}
	/* before the GPUs are busy for minutes: the file must be writable
	 * (it is replaced when it exists, as a file) */
	rc = ema_out_check_parent("--csv", csv, err);
	if (rc != EMA_OK)
		return rc;
	if (stat(csv, &st) == 0 && S_ISDIR(st.st_mode))
		return ema_error_set(err, EMA_ERR_INPUT, "--csv %s: is a folder, expected a file", csv);
	if (snprintf(tmp, sizeof tmp, "%s.tmp-%ld", csv, (long)getpid()) >= (int)sizeof tmp)
		return ema_error_set(err, EMA_ERR_INPUT, "--csv %s: name too long", csv);
	rc = ema_out_clean_leftovers(csv, NULL, err);
	if (rc != EMA_OK)
		return rc;
	sim = calloc(1, sizeof *sim);
	hw = calloc(1, sizeof *hw);
	if (sim == NULL || hw == NULL) {
		rc = ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
		goto done;
	}
	rc = ema_config_load(&sim->cfg, config, sets, n_sets, err);
	if (rc != EMA_OK)
		goto done;
	hw->cfg = sim->cfg;
	hw->backend = EMA_BACKEND_HW;
	/* hardware first: if there is no GPU, say so before simulating */
	rc = ema_experiment_run(hw, err);
	if (rc != EMA_OK)
		goto done;
	rc = ema_experiment_run(sim, err);
	if (rc != EMA_OK)
		goto done;
	/* written beside it and renamed: an old validate.csv stays whole
	 * until the new one is */
	slot = ema_cleanup_add(tmp);
	f = fopen(tmp, "w");
	if (f == NULL) {
		rc = ema_error_set(err, EMA_ERR_IO, "%s: cannot write: %s", csv, strerror(errno));
		ema_cleanup_drop(slot);
		goto done;
	}
	errno = 0;
	fputs("policy,tenant,metric,hw,sim,rel_error\n", f);
	printf("%-14s %-8s %-18s %12s %12s %9s\n", "policy", "tenant", "metric", "hw", "sim", "error");
	for (int i = 0; i < sim->n_runs; i++)
		for (int t = 0; t < sim->cfg.n_tenants; t++) {
			const struct ema_tenant_result *a = &hw->runs[i].results[t];
			const struct ema_tenant_result *b = &sim->runs[i].results[t];
			const struct { const char *name; double hw, sim; } m[] = {
				{"throughput_tok_s", a->throughput_tok_s, b->throughput_tok_s},
				{"ttft_p50_ms", a->ttft_ms[0], b->ttft_ms[0]},
				{"ttft_p99_ms", a->ttft_ms[2], b->ttft_ms[2]},
				{"tpot_p50_ms", a->tpot_ms[0], b->tpot_ms[0]},
				{"tpot_p99_ms", a->tpot_ms[2], b->tpot_ms[2]},
			};

			for (size_t k = 0; k < sizeof m / sizeof m[0]; k++) {
				double r = rel(m[k].hw, m[k].sim);

				fprintf(f, "%s,%s,%s,%.6g,%.6g,%.6g\n", a->policy, a->tenant, m[k].name,
					m[k].hw, m[k].sim, r);
				printf("%-14s %-8s %-18s %12.4g %12.4g %+8.1f%%\n", a->policy, a->tenant,
				       m[k].name, m[k].hw, m[k].sim, 100.0 * r);
			}
		}
	rc = ema_file_close(f, ferror(f) ? EMA_ERR_IO : EMA_OK, csv, err);
	if (rc == EMA_OK && rename(tmp, csv) != 0)
		rc = ema_error_set(err, EMA_ERR_IO, "%s: cannot rename %s to it: %s", csv, tmp,
				   strerror(errno));
	if (rc != EMA_OK)
		unlink(tmp);
	ema_cleanup_drop(slot);
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
