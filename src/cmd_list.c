/* cmd_list.c: `ema list`, what a scenario or a command can name:
 * policies, models, hardware profiles, backends, and the figures of a run
 * folder. */
#include <stdbool.h>
#include <string.h>

#include "backends.h"
#include "cli.h"
#include "config.h"
#include "plots.h"
#include "policy.h"

static int list_exec(const struct ema_cli_args *a, struct ema_error *err)
{
	const char *what = a->n_args > 0 ? a->args[0] : "";
	const char *const *names;
	int n;

	if (strcmp(what, "policies") == 0) {
		for (int i = 0; ema_policy_table[i] != NULL; i++)
			printf("%-14s %s\n", ema_policy_table[i]->name, ema_policy_table[i]->summary);
		return EMA_OK;
	}
	if (strcmp(what, "models") == 0) {
		n = ema_model_names(&names);
		for (int i = 0; i < n; i++) {
			struct ema_model m;

			if (ema_model_load(&m, names[i], err) != EMA_OK)
				return err->code;
			printf("%-12s %3d layers, %5.1f B params, weights %6.1f GB, KV %4llu KiB/token\n",
			       names[i], m.layers, m.params_b, (double)ema_model_weight_bytes(&m) / 1e9,
			       (unsigned long long)(ema_model_kv_bytes_per_token(&m) / 1024));
		}
		return EMA_OK;
	}
	if (strcmp(what, "hardware") == 0) {
		n = ema_hw_profile_names(&names);
		for (int i = 0; i < n; i++) {
			struct ema_hw_profile h;

			if (ema_hw_profile_load(&h, names[i], err) != EMA_OK)
				return err->code;
			/* a datasheet profile's measured-kind figures (curves,
			 * overlap, interference, efficiencies) are the H200
			 * pair's, scaled: say so wherever it is listed */
			bool scaled = strcmp(h.source, "datasheet") == 0;

			printf("%-12s %d x %-12s %6.1f GiB  HBM %5.0f GB/s  %-6s link %4.0f GB/s  (%s%s%s%s)\n",
			       names[i], h.n_gpus, h.gpu_name, h.gpu_mem_gib, h.hbm_read_gbps,
			       ema_topology_names[h.topology], h.link_gbps, h.source, h.date[0] ? " " : "", h.date,
			       scaled ? "; copy curve, overlap and interference scaled from h200x2" : "");
		}
		return EMA_OK;
	}
	if (strcmp(what, "backends") == 0) {
		/* one line per backend; one that can be missing here (hw)
		 * says whether this machine can run it, so that a user
		 * learns before a run that the build or the driver is missing */
		ema_backend_list(stdout, ema_backend_table);
		return EMA_OK;
	}
	if (strcmp(what, "figures") == 0) {
		n = ema_plots_names(&names);
		for (int i = 0; i < n; i++)
			printf("%s\n", names[i]);
		return EMA_OK;
	}
	return ema_error_set(err, EMA_ERR_INPUT,
			     "list: expected policies, models, hardware, backends or figures");
}

static const struct ema_cli_optuse list_options[] = {
	{ EMA_OPT_HELP, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_NONE, NULL, NULL, EMA_VALUE_NONE },
};

static const char *const list_words[] = { "policies", "models", "hardware", "backends", "figures", NULL };

const struct ema_cli_cmd ema_cmd_list = {
	.name = "list",
	.summary = "list policies, models, hardware profiles, backends or figures",
	.usage = "policies | models | hardware | backends | figures",
	.options = list_options,
	.max_args = 1,
	.words = list_words,
	.description =
		"policies: each policy's name and what it does; models: layers, parameters, weight "
		"GB and KV KiB per token; hardware: the built-in profiles (GPUs, memory, HBM, "
		"topology, link bandwidth, source and date); backends: the platforms of --backend "
		"(sim, hw) and whether this machine can run hw; figures: the figures of a run "
		"folder's plots/. The first word of each line is the name a scenario or an "
		"option uses (policies, model, hardware, --backend).",
	.fn = list_exec,
};
