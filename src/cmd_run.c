/* cmd_run.c: `ema run`, one scenario under each of its policies on the
 * same requests, written as one run folder (outdir.c names it and lists
 * its files; experiment.c runs and writes). */
#include <stdlib.h>

#include "cli.h"
#include "experiment.h"
#include "outdir.h"

static int run_exec(const struct ema_cli_args *a, struct ema_error *err)
{
	struct ema_experiment *x = calloc(1, sizeof *x);
	struct ema_outdir od;
	int rc;

	if (x == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	rc = ema_config_load(&x->cfg, a->config, a->sets, a->n_sets, err);
	if (rc != EMA_OK)
		goto done;
	x->backend = a->backend;
	x->verify = a->verify;
	x->quiet = a->quiet;
	snprintf(x->command, sizeof x->command, "%s", a->command);
	/* the folder is checked and reserved before simulating: a wrong
	 * --out must not cost the whole run */
	rc = ema_outdir_reserve(&od, "--out", a->out, x->cfg.name, err);
	if (rc != EMA_OK)
		goto done;
	rc = ema_experiment_run(x, err);
	if (rc != EMA_OK) {
		ema_outdir_abort(&od);
		goto done;
	}
	ema_experiment_print(x, stdout);
	rc = ema_experiment_write(x, &od, a->plots, err);
	if (rc == EMA_OK)
		ema_outdir_print_contents(&od, a->plots, stdout);
done:
	ema_experiment_free(x);
	free(x);
	return rc;
}

static const struct ema_cli_optuse run_options[] = {
	{ EMA_OPT_CONFIG, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_SET, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_SEED, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_OUT, "the run folder to create: it must not exist and its parent must (else "
	  "exit 2 before anything runs); default runs/NAME, runs/NAME-2, ... (NAME: the "
	  "scenario's name)", NULL, EMA_VALUE_NONE },
	{ EMA_OPT_BACKEND, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_HW, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_VERIFY, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_NO_PLOTS, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_QUIET, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_HELP, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_NONE, NULL, NULL, EMA_VALUE_NONE },
};

static const char *const run_examples[] = {
	"ema run --set policies=static,ema --out runs/first",
	"ema run -c scenarios/published/h200x2_llama2_7b_28gib.json --seed 2 --no-plots",
	"ema run -c runs/first/config.json --out runs/again    # the same run, byte for byte",
	"ema run --backend hw --verify --set tenants.0.workload.duration_s=30",
	NULL,
};

const struct ema_cli_cmd ema_cmd_run = {
	.name = "run",
	.summary = "run a scenario under each of its policies and write a run folder",
	.usage = "[-c FILE] [-s KEY=VALUE]... [--seed N] [-o DIR] [--backend sim|hw | --hw] "
		 "[--verify] [--no-plots] [-q]",
	.options = run_options,
	.description =
		"Runs the scenario once under each of its policies, on exactly the same requests, "
		"on the simulator or on the GPUs of this machine (--backend hw), prints one summary "
		"row per policy and tenant, and writes the run folder: summary.csv, requests.csv, "
		"timeline.csv, links.csv, transfers.csv, reclaims.csv, config.json (the effective configuration, "
		"which reproduces the run), run.json (version, commit, command, host, seed, wall time) and plots/."
		"\nBad input (an option, the scenario, a --set, a trace, --out) exits with status 2 "
		"before anything runs, and nothing is written: the folder is written as DIR.tmp-HOST-PID "
		"and renamed when complete, and removed on SIGINT, SIGTERM, SIGHUP or SIGPIPE.",
	.examples = run_examples,
	.fn = run_exec,
};
