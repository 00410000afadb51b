/* cmd_figures.c: `ema figures DIR...`, the paper's figures from a sweep
 * folder and a capacity search's folder (figures.c draws them). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "ema_build.h"
#include "sweep.h"

static bool has(const char *dir, const char *file)
{
	char path[EMA_PATH_MAX + 32];
	struct stat st;

	snprintf(path, sizeof path, "%s/%s", dir, file);
	return stat(path, &st) == 0;
}

static int figures_exec(const struct ema_cli_args *a, struct ema_error *err)
{
	const char *sweep = NULL, *cap = NULL;
	char out[EMA_PATH_MAX + 16];
	int drawn = 0, rc;

	if (a->n_args == 0)
		return ema_error_set(err, EMA_ERR_INPUT, "ema figures: expected a sweep folder "
				     "(ema figures DIR [CAPACITY_DIR]; see 'ema help figures')");
	for (int i = 0; i < a->n_args; i++) {
		const char *d = a->args[i];
		struct stat st;

		/* a mistyped folder is named as missing, not as the wrong kind */
		if (stat(d, &st) != 0)
			return ema_error_set(err, EMA_ERR_INPUT, "%s: no such folder (%s); expected a "
					     "sweep folder or a capacity search's folder", d,
					     strerror(errno));
		if (!S_ISDIR(st.st_mode))
			return ema_error_set(err, EMA_ERR_INPUT, "%s: not a folder; expected a sweep "
					     "folder or a capacity search's folder", d);
		if (has(d, "sweep.json") && sweep == NULL)
			sweep = d;
		else if (has(d, "capacity.json") && has(d, "capacity.csv") && cap == NULL)
			cap = d;
		else
			return ema_error_set(err, EMA_ERR_INPUT, "%s: expected a sweep folder (with "
					     "sweep.json) or a capacity search's folder (with capacity.csv), "
					     "one of each at most", d);
	}
	if (a->out != NULL)
		snprintf(out, sizeof out, "%s", a->out);
	else
		snprintf(out, sizeof out, "%s/figures", sweep != NULL ? sweep : cap);
	if (a->out != NULL) {
		rc = ema_out_check_parent("--out", a->out, err);
		if (rc != EMA_OK)
			return rc;
	}
	rc = ema_figures_draw(sweep, cap, out, a->quiet, &drawn, err);
	if (rc != EMA_OK)
		return rc;
	if (EMA_GNUPLOT[0] == '\0')
		fprintf(stderr, "ema: gnuplot not found: the tables and scripts are in %s, no figure "
			"was drawn\n", out);
	if (drawn > 0)
		printf("figures: %d drawn, in %s/ (PDF and PNG; render.sh redraws them)\n", drawn,
		       out);
	else
		printf("figures: none drawn (the reason is above)\n");
	return EMA_OK;
}

static const struct ema_cli_optuse figures_options[] = {
	{ EMA_OPT_OUT, "the folder of the figures (made when missing, its parent must exist); "
	  "default DIR/figures", NULL, EMA_VALUE_NONE },
	{ EMA_OPT_QUIET, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_HELP, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_NONE, NULL, NULL, EMA_VALUE_NONE },
};

static const char *const figures_examples[] = {
	"ema figures runs/load",
	"ema figures runs/load runs/cap -o paper/a100x4",
	NULL,
};

const struct ema_cli_cmd ema_cmd_figures = {
	.name = "figures",
	.summary = "draw the paper's figures from a sweep folder and a capacity search",
	.usage = "DIR [CAPACITY_DIR] [-o OUT] [-q]",
	.options = figures_options,
	.max_args = 2,
	.description =
		"From a sweep folder (ema sweep) with a numeric key besides the seed, the load: "
		"throughput and per-user throughput, % of ideal, TTFT and TPOT p50 and p99, and the "
		"lenders' slowdown against the load, one row of panels per tenant (borrowers first, "
		"then lenders), the geometric mean over seeds with its 95% interval on the log "
		"scale; the reclaim latency CDFs of the lenders' GPUs and the memory timeline at "
		"the highest load. Other swept keys give one set of figures each. From a capacity "
		"search's folder (ema sweep --max-rate): the capacity under the SLO as bars per "
		"policy. Every figure names its scenario, gives a policy the same colour and line "
		"style (plots/style.gp, Okabe-Ito) and units on every axis, as PDF and PNG, with the "
		"table it was drawn from and render.sh to redraw after an edit.",
	.examples = figures_examples,
	.fn = figures_exec,
};
