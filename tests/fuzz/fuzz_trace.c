/* fuzz_trace.c: libFuzzer harness of the trace readers (ema_trace_read),
 * one binary per format: EMA_FUZZ_FORMAT is EMA_TRACE_AZURE, ...,
 * EMA_TRACE_AUTO (format detection). The input is the trace file. Beyond
 * the error contract it checks what the reader promises a workload:
 * requests sorted by arrival from 0 on, token counts in 1..max. */
#include "fuzz_common.h"
#include "workload.h"
#include "workload_priv.h"

#ifndef EMA_FUZZ_FORMAT
#define EMA_FUZZ_FORMAT EMA_TRACE_AUTO
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[600], prefix[620];
	struct ema_workload w;
	struct ema_error err = {0};
	int rc;

	ema_fuzz_write(path, sizeof path, "trace", data, size);
	rc = ema_trace_read(path, EMA_FUZZ_FORMAT, &w, &err);
	snprintf(prefix, sizeof prefix, "%s:", path);
	ema_fuzz_check_status(rc, &err, prefix);
	if (rc != EMA_OK) {
		if (w.reqs != NULL || w.n != 0)
			ema_fuzz_fail("a failed read left %zu requests behind", w.n);
		return 0;
	}
	if (w.n == 0)
		ema_fuzz_fail("an empty trace was read as a success");
	for (size_t i = 0; i < w.n; i++) {
		const struct ema_request_spec *r = &w.reqs[i];

		if (r->arrival_ns < 0 || (i > 0 && r->arrival_ns < w.reqs[i - 1].arrival_ns))
			ema_fuzz_fail("request %zu arrives at %lld ns, out of order", i,
				      (long long)r->arrival_ns);
		if (r->prompt_tokens < 1 || r->prompt_tokens > EMA_WORKLOAD_MAX_TOKENS ||
		    r->output_tokens < 1 || r->output_tokens > EMA_WORKLOAD_MAX_TOKENS)
			ema_fuzz_fail("request %zu has %d prompt and %d output tokens", i,
				      r->prompt_tokens, r->output_tokens);
	}
	ema_workload_free(&w);
	return 0;
}
