/* hw_backend.c: the GPUs' entry in the backend table (src/backends.c):
 * real pages moved and read, so the engine gives every iteration its page
 * lists; the moved pages are checked (sampled, or in full with --verify)
 * and the counts reported; `ema list backends` says whether this machine
 * can run it, and `ema bench --backend hw` has figures of its own. In
 * every build: without CUDA its calls say why (hw_none.c). */
#include "hw.h"

static void hw_here(char *buf, size_t size)
{
	struct ema_error e = { 0 };
	int n = ema_hw_gpu_count(&e);

	if (n >= 0)
		snprintf(buf, size, "%d GPU%s", n, n == 1 ? "" : "s");
	else
		snprintf(buf, size, "unavailable (%s)", e.msg);
}

static void hw_run_json(FILE *f, const struct ema_platform_report *r)
{
	fprintf(f, ", \"integrity_check\": \"%s\", \"pages_checked\": %llu, "
		"\"pages_corrupted\": %llu", r->verify ? "full" : "sampled",
		(unsigned long long)r->pages_checked, (unsigned long long)r->pages_corrupted);
}

static void hw_print(FILE *f, const struct ema_platform_report *r)
{
	fprintf(f, "integrity (%s): %s, %llu pages checked after moves, %llu corrupted\n",
		r->verify ? "--verify, every word" : "sampled", r->policy,
		(unsigned long long)r->pages_checked, (unsigned long long)r->pages_corrupted);
}

static int hw_bench(bool quick, FILE *csv, struct ema_error *err)
{
	struct ema_hw_bench_opts o = { quick };

	return ema_hw_bench(&o, csv, err);
}

const struct ema_platform_backend ema_hw_backend = {
	.name = "hw",
	.summary = "the GPUs of this machine (CUDA)",
	.create = ema_hw_platform_create,
	.page_lists = true,
	.verify = true,
	.here = hw_here,
	.integrity = ema_hw_integrity,
	.run_json = hw_run_json,
	.print = hw_print,
	.bench = hw_bench,
};
