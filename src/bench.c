/* bench.c: `ema bench`. Figures are measured in one process, one after the
 * other, and reported as rates and ratios so that a noisy shared machine
 * changes them little. */
#include "bench.h"
#include "wallclock.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "experiment.h"
#include "hw.h"
#include "sim.h"

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

int ema_bench_main(int argc, char **argv, struct ema_error *err)
{
	const char *trace = "../shared/traces/AzureLLMInferenceTrace_conv.csv";
	bool quick = false;
	double rate, w_static, w_ema;
	uint64_t ev_static, ev_ema;
	int64_t reqs;
	int rc;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--hw") == 0) {
			argv[i] = (char *)"bench";
			return ema_hw_bench_main(argc - i, argv + i) == 0 ? EMA_OK :
			       ema_error_set(err, EMA_ERR_UNSUPPORTED, "bench --hw failed");
		} else if (strcmp(argv[i], "--quick") == 0) {
			quick = true;
		} else if (strcmp(argv[i], "--trace") == 0 && i + 1 < argc) {
			trace = argv[++i];
		} else {
			return ema_error_set(err, EMA_ERR_INPUT,
					     "bench: expected --quick, --trace FILE or --hw, not %s", argv[i]);
		}
	}
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
