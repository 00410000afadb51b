/* bench.c: `ema bench`. Figures are measured in one process, one after the
 * other, and reported as rates and ratios so that a noisy shared machine
 * changes them little. `ema bench --backend hw` hands over to the hardware
 * backend's figures (hw/bench.c), its CSV written through outdir.c. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "experiment.h"
#include "hw.h"
#include "outdir.h"
#include "sim.h"
#include "wallclock.h"

/* 8 tenants on an 8-GPU profile, each replaying the whole trace. */
static int replay(const char *trace, const char *policies, int tenants, bool pressure,
		  double *wall, uint64_t *events, int64_t *requests, struct ema_error *err)
{
	char path[] = "/tmp/ema-bench-XXXXXX";
	int fd = mkstemp(path);
	FILE *f;
	struct ema_experiment *x;
	int rc;

	if (fd < 0)
		return ema_error_set(err, EMA_ERR_IO, "bench: cannot create a temporary file");
	f = fdopen(fd, "w");
	/* Under pressure the GPUs are capped at 20 GiB (4 GiB of KV) and two
	 * tenants get the trace 4x faster, so that ema borrows and reclaims. */
	fprintf(f, "{\"name\": \"bench\", \"hardware\": \"h200x8\", \"model\": \"llama-3-8b\",\n"
		   " \"gpu_mem_cap_gib\": %d, \"policies\": [%s], \"tenants\": [\n",
		pressure ? 20 : 0, policies);
	for (int i = 0; i < tenants; i++)
		fprintf(f, "  {\"name\": \"t%d\", \"gpu\": %d, \"workload\": {\"source\": \"trace\", "
			   "\"trace\": \"%s\", \"format\": \"azure\", \"rate_scale\": %d}}%s\n", i, i, trace,
			pressure && i < 2 ? 4 : 1, i + 1 < tenants ? "," : "");
	fputs("]}\n", f);
	fclose(f);
	x = calloc(1, sizeof *x);
	if (x == NULL) {
		unlink(path);
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	}
	rc = ema_config_load(&x->cfg, path, NULL, 0, err);
	unlink(path);
	if (rc == EMA_OK) {
		double t0 = ema_wall_now();

		x->quiet = true;
		rc = ema_experiment_run(x, err);
		*wall = ema_wall_now() - t0;
		*events = 0;
		*requests = 0;
		for (int i = 0; i < x->n_runs; i++) {
			*events += x->runs[i].events;
			*requests += ema_engine_total_requests(x->runs[i].engine);
		}
	}
	ema_experiment_free(x);
	free(x);
	return rc;
}

/* bench --backend hw: the CSV is checked before the GPUs are busy and
 * appears only when complete. */
static int bench_hw(const struct ema_cli_args *a, struct ema_error *err)
{
	struct ema_hw_bench_opts o = { a->quick };
	struct ema_outfile of;
	FILE *csv = NULL;
	int rc;

	if (a->trace != NULL)
		return ema_error_set(err, EMA_ERR_INPUT,
				     "bench: --trace is for the simulator's figures, not --backend hw");
	if (a->csv != NULL) {
		rc = ema_outfile_reserve(&of, "--csv", a->csv, err);
		if (rc != EMA_OK)
			return rc;
		csv = ema_outfile_open(&of, err);
		if (csv == NULL)
			return err->code;
	}
	rc = ema_hw_bench(&o, csv, err);
	if (csv != NULL) {
		if (rc == EMA_OK)
			rc = ema_outfile_commit(&of, err);
		else
			ema_outfile_abort(&of);
	}
	return rc;
}

static int bench_exec(const struct ema_cli_args *a, struct ema_error *err)
{
	const char *trace = a->trace != NULL ? a->trace :
			    "../shared/traces/AzureLLMInferenceTrace_conv.csv";
	bool quick = a->quick;
	double rate, w_static, w_ema;
	uint64_t ev_static, ev_ema;
	int64_t reqs;
	int rc;

	if (a->backend == EMA_BACKEND_HW)
		return bench_hw(a, err);
	if (a->csv != NULL)
		return ema_error_set(err, EMA_ERR_INPUT,
				     "bench: --csv writes the hardware figures; it goes with --backend hw");
	rc = ema_eventq_bench(1000, quick ? 2000000 : 20000000, &rate);
	if (rc != EMA_OK)
		return ema_error_set(err, rc, "bench: event queue failed");
	printf("event queue, 1000 pending:        %8.2f M push+pop/s   (target > 10)\n", rate / 1e6);
	fflush(stdout);
	if (access(trace, R_OK) != 0) {
		printf("trace replay:                     skipped (%s not found; --trace FILE)\n", trace);
		return EMA_OK;
	}
	rc = replay(trace, "\"static\"", 8, false, &w_static, &ev_static, &reqs, err);
	if (rc != EMA_OK)
		return rc;
	printf("8 x Azure conv replay, static:    %8.2f s wall   (%lld requests, %llu events, %.2f M events/s; target < 5 s)\n",
	       w_static, (long long)reqs, (unsigned long long)ev_static, ev_static / w_static / 1e6);
	fflush(stdout);
	rc = replay(trace, "\"ema\"", 8, false, &w_ema, &ev_ema, &reqs, err);
	if (rc != EMA_OK)
		return rc;
	printf("8 x Azure conv replay, ema:       %8.2f s wall   (%llu events; no memory pressure: nothing borrowed)\n",
	       w_ema, (unsigned long long)ev_ema);
	printf("ema / static wall time:           %8.2f\n", w_ema / w_static);
	fflush(stdout);
	rc = replay(trace, "\"static\"", 8, true, &w_static, &ev_static, &reqs, err);
	if (rc != EMA_OK)
		return rc;
	printf("same, 20 GiB GPUs, 2 tenants 4x, static: %6.2f s wall   (%llu events)\n",
	       w_static, (unsigned long long)ev_static);
	fflush(stdout);
	rc = replay(trace, "\"ema\"", 8, true, &w_ema, &ev_ema, &reqs, err);
	if (rc != EMA_OK)
		return rc;
	printf("same, 20 GiB GPUs, 2 tenants 4x, ema:    %6.2f s wall   (%llu events)\n",
	       w_ema, (unsigned long long)ev_ema);
	printf("ema / static wall time under pressure:   %6.2f   (target <= 2)\n", w_ema / w_static);
	return EMA_OK;
}

static const struct ema_cli_optuse bench_options[] = {
	{ EMA_OPT_QUICK, "a shorter event-queue test; with --backend hw, 256 MiB per page size "
	  "instead of 1 GiB and fewer repetitions", NULL, EMA_VALUE_NONE },
	{ EMA_OPT_TRACE, "the Azure trace each of the 8 tenants replays; default "
	  "../shared/traces/AzureLLMInferenceTrace_conv.csv (replays skipped when it is missing)",
	  NULL, EMA_VALUE_NONE },
	{ EMA_OPT_BACKEND, "sim: the simulator's figures (default); hw: the hardware backend's, "
	  "on two GPUs", NULL, EMA_VALUE_NONE },
	{ EMA_OPT_HW, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_CSV, "with --backend hw: also writes the figures to FILE "
	  "(bench,variant,method,page_bytes,count,time_us,value), replaced when complete", NULL,
	  EMA_VALUE_NONE },
	{ EMA_OPT_HELP, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_NONE, NULL, NULL, EMA_VALUE_NONE },
};

static const char *const bench_examples[] = {
	"ema bench --quick",
	"ema bench --hw --quick --csv bench-hw.csv",
	NULL,
};

const struct ema_cli_cmd ema_cmd_bench = {
	.name = "bench",
	.summary = "print the speed figures (event queue, trace replay, ema vs static)",
	.usage = "[--quick] [--trace FILE] | {--backend hw | --hw} [--quick] [--csv FILE]",
	.options = bench_options,
	.description =
		"Measures the event queue, then replays the whole Azure conversation trace for 8 "
		"tenants on h200x8, static against ema, without and with memory pressure (GPUs "
		"capped at 20 GiB, two tenants at 4x rate), and reports rates and ratios."
		"\nWith --backend hw (or --hw): transfer bandwidth by page size (16 KiB to 16 MiB) "
		"and copy method through the hardware platform, against the 395 GB/s NVLink peak, "
		"and the host loop's overhead between iterations; it needs two GPUs.",
	.examples = bench_examples,
	.fn = bench_exec,
};
