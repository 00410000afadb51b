/* cmd_config.c: `ema config`, the effective configuration as JSON (every
 * default filled in), or the embedded scenario as written. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config.h"

static int config_exec(const struct ema_cli_args *a, struct ema_error *err)
{
	struct ema_config *cfg;
	int rc;

	if (a->n_args == 1 && strcmp(a->args[0], "default") == 0) {
		if (a->config != NULL || a->n_sets > 0)
			return ema_error_set(err, EMA_ERR_INPUT,
					     "config default prints the embedded scenario as written; "
					     "--config, --set and --seed go without 'default'");
		/* the embedded scenario as written, to copy and edit */
		fputs(ema_config_default_json, stdout);
		return EMA_OK;
	}
	cfg = calloc(1, sizeof *cfg);
	if (cfg == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	rc = ema_config_load(cfg, a->config, a->sets, a->n_sets, err);
	if (rc == EMA_OK)
		rc = ema_config_write_json(cfg, stdout, err);
	free(cfg);
	return rc;
}

static const struct ema_cli_optuse config_options[] = {
	{ EMA_OPT_CONFIG, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_SET, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_SEED, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_HELP, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_NONE, NULL, NULL, EMA_VALUE_NONE },
};

static const char *const config_words[] = { "default", NULL };

static const char *const config_examples[] = {
	"ema config default > mine.json    # the embedded scenario, to edit",
	"ema config -c mine.json --set hardware=h200x8 --seed 5",
	NULL,
};

const struct ema_cli_cmd ema_cmd_config = {
	.name = "config",
	.summary = "print the effective configuration (defaults filled in)",
	.usage = "[-c FILE] [-s KEY=VALUE]... [--seed N] | default",
	.options = config_options,
	.max_args = 1,
	.words = config_words,
	.description =
		"Prints the scenario as JSON with every default filled in and the hardware profile "
		"and model expanded: the same text as a run's config.json, and the same checks as "
		"'ema run' (exit 2 on bad input). 'ema config default' prints the embedded scenario "
		"as written, to copy and edit.",
	.examples = config_examples,
	.fn = config_exec,
};
