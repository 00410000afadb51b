/* main.c: the ema command line: run an experiment, list what can be named,
 * print the effective configuration, benchmark, calibrate, validate. */
#include <gsl/gsl_errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "config.h"
#include "ema_build.h"
#include "experiment.h"
#include "hw.h"
#include "plots.h"
#include "policy.h"
#include "sweep.h"
#include "validate.h"

#define MAX_SETS 256

#ifdef EMA_HAVE_CUDA
static const bool built_with_cuda = true;
#else
static const bool built_with_cuda = false;
#endif

static void usage(FILE *out)
{
	fputs("usage: ema COMMAND [OPTIONS]\n"
	      "\n"
	      "commands:\n"
	      "  run       run a scenario under each of its policies and write a run folder\n"
	      "  list      list policies | models | hardware | figures\n"
	      "  config    print the effective configuration (defaults filled in);\n"
	      "            `ema config default` prints the embedded scenario as written\n"
	      "  sweep     run a scenario over every combination of --vary KEY=V1,V2,...\n"
	      "  bench     print the speed figures (event queue, trace replay, ema vs static)\n"
	      "  calibrate measure the GPUs present and write a hardware profile\n"
	      "  validate  run a scenario on the simulator and on the GPUs and compare\n"
	      "  version   print the version\n"
	      "\n"
	      "ema run [--config FILE] [--set key=value ...] [--seed N] [--out DIR]\n"
	      "        [--backend sim|hw] [--verify] [--no-plots] [--quiet]\n"
	      "  Without --config, runs the embedded default scenario (`ema config`).\n"
	      "  --set takes dotted keys: serving.max_batch=128, tenants.0.workload.rate_rps=4,\n"
	      "  policies=static,ema. Bad input exits with status 2 and writes nothing.\n"
	      "\n"
	      "ema sweep --vary KEY=V1,V2,... [--vary ...] [--config FILE] [--set key=value ...]\n"
	      "          [--out DIR] [--no-plots] [--quiet]\n"
	      "  One run folder per point (DIR/point-NNN/) and DIR/sweep.csv with the\n"
	      "  summary rows of every point, the swept values as leading columns.\n", out);
}

struct run_opts {
	const char *config;
	const char *sets[MAX_SETS];
	int n_sets;
	const char *out;
	enum ema_backend backend;
	bool verify, plots, quiet;
};

static int parse_common(int argc, char **argv, struct run_opts *o, struct ema_error *err)
{
	memset(o, 0, sizeof *o);
	o->plots = true;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--config") == 0 || strcmp(a, "-c") == 0) {
			if (!val)
				return ema_error_set(err, EMA_ERR_INPUT, "%s: expected a file", a);
			o->config = val;
			i++;
		} else if (strcmp(a, "--set") == 0 || strcmp(a, "-s") == 0) {
			if (!val || strchr(val, '=') == NULL)
				return ema_error_set(err, EMA_ERR_INPUT, "%s: expected key=value", a);
			if (o->n_sets == MAX_SETS)
				return ema_error_set(err, EMA_ERR_INPUT, "--set: at most %d", MAX_SETS);
			o->sets[o->n_sets++] = val;
			i++;
		} else if (strcmp(a, "--seed") == 0) {
			static char buf[MAX_SETS][64];

			if (!val)
				return ema_error_set(err, EMA_ERR_INPUT, "--seed: expected an integer");
			if (o->n_sets == MAX_SETS)
				return ema_error_set(err, EMA_ERR_INPUT, "--set: at most %d", MAX_SETS);
			snprintf(buf[o->n_sets], sizeof buf[0], "seed=%s", val);
			o->sets[o->n_sets] = buf[o->n_sets];
			o->n_sets++;
			i++;
		} else if (strcmp(a, "--out") == 0 || strcmp(a, "-o") == 0) {
			if (!val)
				return ema_error_set(err, EMA_ERR_INPUT, "--out: expected a folder");
			o->out = val;
			i++;
		} else if (strcmp(a, "--backend") == 0) {
			if (val && strcmp(val, "sim") == 0)
				o->backend = EMA_BACKEND_SIM;
			else if (val && strcmp(val, "hw") == 0)
				o->backend = EMA_BACKEND_HW;
			else
				return ema_error_set(err, EMA_ERR_INPUT, "--backend: expected sim or hw");
			i++;
		} else if (strcmp(a, "--hw") == 0) {
			o->backend = EMA_BACKEND_HW;
		} else if (strcmp(a, "--verify") == 0) {
			o->verify = true;
		} else if (strcmp(a, "--no-plots") == 0) {
			o->plots = false;
		} else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
			o->quiet = true;
		} else {
			return ema_error_set(err, EMA_ERR_INPUT, "%s: unknown option (see `ema help`)", a);
		}
	}
	return EMA_OK;
}

static int cmd_run(int argc, char **argv, struct ema_error *err)
{
	struct run_opts o;
	struct ema_experiment *x;
	struct ema_outdir od;
	int rc;

	rc = parse_common(argc, argv, &o, err);
	if (rc != EMA_OK)
		return rc;
	x = calloc(1, sizeof *x);
	if (x == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	rc = ema_config_load(&x->cfg, o.config, o.sets, o.n_sets, err);
	if (rc != EMA_OK)
		goto done;
	x->backend = o.backend;
	x->verify = o.verify;
	x->quiet = o.quiet;
	{
		size_t len = 0;

		len += (size_t)snprintf(x->command, sizeof x->command, "ema run");
		for (int i = 0; i < argc && len < sizeof x->command; i++)
			len += (size_t)snprintf(x->command + len, sizeof x->command - len, " %s", argv[i]);
	}
	/* the folder is checked and reserved before simulating: a wrong
	 * --out must not cost the whole run */
	rc = ema_outdir_reserve(&od, "--out", o.out, x->cfg.name, err);
	if (rc != EMA_OK)
		goto done;
	rc = ema_experiment_run(x, err);
	if (rc != EMA_OK) {
		ema_outdir_abort(&od);
		goto done;
	}
	ema_experiment_print(x, stdout);
	rc = ema_experiment_write(x, &od, o.plots, err);
	if (rc == EMA_OK)
		ema_outdir_print_contents(&od, o.plots, stdout);
done:
	ema_experiment_free(x);
	free(x);
	return rc;
}

static int cmd_config(int argc, char **argv, struct ema_error *err)
{
	struct run_opts o;
	struct ema_config *cfg = calloc(1, sizeof *cfg);
	int rc;

	if (cfg == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	if (argc == 1 && strcmp(argv[0], "default") == 0) {
		/* the embedded scenario as written, to copy and edit */
		fputs(ema_config_default_json, stdout);
		free(cfg);
		return EMA_OK;
	}
	rc = parse_common(argc, argv, &o, err);
	if (rc == EMA_OK)
		rc = ema_config_load(cfg, o.config, o.sets, o.n_sets, err);
	if (rc == EMA_OK)
		rc = ema_config_write_json(cfg, stdout, err);
	free(cfg);
	return rc;
}

static int cmd_list(int argc, char **argv, struct ema_error *err)
{
	const char *what = argc > 0 ? argv[0] : "";
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
			printf("%-12s %d x %-12s %6.1f GiB  HBM %5.0f GB/s  %-6s link %4.0f GB/s  (%s%s%s)\n",
			       names[i], h.n_gpus, h.gpu_name, h.gpu_mem_gib, h.hbm_read_gbps,
			       ema_topology_names[h.topology], h.link_gbps, h.source, h.date[0] ? " " : "", h.date);
		}
		return EMA_OK;
	}
	if (strcmp(what, "figures") == 0) {
		n = ema_plots_names(&names);
		for (int i = 0; i < n; i++)
			printf("%s\n", names[i]);
		return EMA_OK;
	}
	return ema_error_set(err, EMA_ERR_INPUT,
			     "list: expected policies, models, hardware or figures");
}

int main(int argc, char **argv)
{
	struct ema_error err = {0};
	const char *cmd = argc > 1 ? argv[1] : "help";
	int rc;

	gsl_set_error_handler_off();
	ema_config_set_policy_names(ema_policy_names());
	/* CUDA loads kernels at their first use by default: on the H200s the
	 * lender's largest prefill waited for new cuBLAS kernels, its TTFT
	 * 107-170 ms against 58-64 with eager loading (simulated: 56). Eager
	 * loading costs ~6 s when a hw run starts; simulator commands make no
	 * CUDA call. A setting of the user's own wins. */
	setenv("CUDA_MODULE_LOADING", "EAGER", 0);
	if (strcmp(cmd, "run") == 0)
		rc = cmd_run(argc - 2, argv + 2, &err);
	else if (strcmp(cmd, "list") == 0)
		rc = cmd_list(argc - 2, argv + 2, &err);
	else if (strcmp(cmd, "config") == 0)
		rc = cmd_config(argc - 2, argv + 2, &err);
	else if (strcmp(cmd, "bench") == 0)
		rc = ema_bench_main(argc - 2, argv + 2, &err);
	else if (strcmp(cmd, "calibrate") == 0)
		return ema_calibrate_main(argc - 1, argv + 1);
	else if (strcmp(cmd, "sweep") == 0)
		rc = ema_sweep_main(argc - 2, argv + 2, &err);
	else if (strcmp(cmd, "validate") == 0)
		rc = ema_validate_main(argc - 2, argv + 2, &err);
	else if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
		printf("ema %s (hardware backend: %s)\n", PACKAGE_VERSION,
		       built_with_cuda ? "CUDA" : "not built");
		return 0;
	} else if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
		usage(stdout);
		return 0;
	} else {
		fprintf(stderr, "ema: unknown command \"%s\"\n", cmd);
		usage(stderr);
		return 2;
	}
	if (rc != EMA_OK) {
		fprintf(stderr, "ema: %s\n", err.msg[0] ? err.msg : ema_status_str(rc));
		return ema_status_exit(rc);
	}
	return 0;
}
