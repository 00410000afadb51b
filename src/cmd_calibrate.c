/* cmd_calibrate.c: `ema calibrate`, the GPUs of this machine measured by
 * the hardware backend (hw/calibrate.c) and written as a hardware profile
 * and, on request, the raw samples. Both files are checked before the
 * GPUs are busy for minutes and appear only when complete (outdir.c). */
#include <string.h>

#include "cli.h"
#include "config.h"
#include "hw.h"
#include "outdir.h"

static int calibrate_exec(const struct ema_cli_args *a, struct ema_error *err)
{
	const char *out = a->out != NULL ? a->out : "calibrated.json";
	struct ema_hw_cal_opts o = { a->quick, a->name != NULL ? a->name : "calibrated" };
	struct ema_outfile prof, raw;
	struct ema_hw_profile hw;
	FILE *csv = NULL, *f;
	int rc;

	if (strlen(o.name) >= EMA_NAME_MAX)
		return ema_error_set(err, EMA_ERR_INPUT, "calibrate: --name: at most %d characters",
				     EMA_NAME_MAX - 1);
	if (a->csv != NULL && strcmp(a->csv, out) == 0)
		return ema_error_set(err, EMA_ERR_INPUT,
				     "calibrate: --csv %s: the same file as --out; choose another",
				     a->csv);
	rc = ema_outfile_reserve(&prof, "--out", out, err);
	if (rc == EMA_OK && a->csv != NULL)
		rc = ema_outfile_reserve(&raw, "--csv", a->csv, err);
	if (rc != EMA_OK)
		return rc;
	if (a->csv != NULL) {
		csv = ema_outfile_open(&raw, err);
		if (csv == NULL)
			return err->code;
	}
	rc = ema_hw_calibrate(&o, csv, &hw, err);
	if (csv != NULL) {
		if (rc == EMA_OK)
			rc = ema_outfile_commit(&raw, err);
		else
			ema_outfile_abort(&raw);
	}
	if (rc != EMA_OK)
		return rc;
	f = ema_outfile_open(&prof, err);
	if (f == NULL)
		return err->code;
	ema_hw_profile_write_json(&hw, f);
	rc = ema_outfile_commit(&prof, err);
	if (rc != EMA_OK)
		return rc;
	fprintf(stderr, "ema calibrate: wrote %s%s%s\n", out, a->csv ? " and " : "",
		a->csv ? a->csv : "");
	return EMA_OK;
}

static const struct ema_cli_optuse calibrate_options[] = {
	{ EMA_OPT_OUT, "the hardware profile to write (JSON; replaced when it exists); default "
	  "calibrated.json", "FILE", EMA_VALUE_FILE },
	{ EMA_OPT_CSV, "also writes the raw measurements to FILE "
	  "(test,variant,src_gpu,dst_gpu,bytes,page_bytes,rep,time_us,gbps)", NULL,
	  EMA_VALUE_NONE },
	{ EMA_OPT_NAME, "the profile's name (at most 63 characters); default calibrated", NULL,
	  EMA_VALUE_NONE },
	{ EMA_OPT_QUICK, "5 repetitions instead of 20", NULL, EMA_VALUE_NONE },
	{ EMA_OPT_HELP, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_NONE, NULL, NULL, EMA_VALUE_NONE },
};

static const char *const calibrate_examples[] = {
	"ema calibrate --out h200.json --csv h200-samples.csv --name h200x2_here",
	"ema run --set hardware=h200.json",
	NULL,
};

const struct ema_cli_cmd ema_cmd_calibrate = {
	.name = "calibrate",
	.summary = "measure the GPUs present and write a hardware profile",
	.usage = "[-o FILE] [--csv FILE] [--name NAME] [--quick]",
	.options = calibrate_options,
	.description =
		"Measures the GPUs of this machine with the hardware backend's own kernels and "
		"copy paths (CUDA events, median after warm-up), prints the figures against the "
		"H200x2 reference, and writes a hardware profile that --set hardware=FILE then "
		"uses. Progress goes to stderr. Without a GPU (or a CUDA build) it says so and "
		"exits with status 1. With one GPU nothing crosses a peer link: the link, copy "
		"and interference figures are the reference pair's (h200x2_hw), and the "
		"profile's description says so. Remote attention's figures (attention_gbps, "
		"attention_busy_share, attention_lender_ms_per_gb, attention_sync_us) are "
		"measured on the lender, GPU 1 or, with one GPU, a second stream of GPU 0. "
		"The files are checked before anything is "
		"measured and written under a temporary name, then renamed.",
	.examples = calibrate_examples,
	.fn = calibrate_exec,
};
