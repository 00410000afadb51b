/* workload_priv.h: helpers shared by the trace readers and the generators
 * of traces/, kept out of workload.h because no other layer needs them. */
#ifndef EMA_WORKLOAD_PRIV_H
#define EMA_WORKLOAD_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "workload.h"

/* Largest token count accepted from a file or a generator: anything above
 * is a corrupt row, and the cap keeps every count inside int32_t. The
 * configuration's length keys stop at the same figure (ema_limits.h). */
#define EMA_WORKLOAD_MAX_TOKENS EMA_MAX_TOKENS

/* Largest stream a generator may produce, so that a typo in rate_rps or
 * duration_s fails with a message instead of exhausting memory. The config
 * check (config/config.c) enforces the same figure before anything runs. */
#define EMA_WORKLOAD_MAX_REQUESTS EMA_CFG_MAX_REQUESTS

/* Latest arrival accepted, 1e9 s (about 31 years) in ns: the bound of
 * times read from files, kept after scaling too, so that the engine can add
 * durations to any arrival and stay far inside int64_t (about 292 years). */
#define EMA_WORKLOAD_MAX_ARRIVAL_NS 1000000000000000000LL

/* Makes room for at least `need` requests, growing geometrically so that
 * reading a trace costs amortised O(1) per row and no malloc per row. */
int ema_workload_reserve(struct ema_workload *w, size_t need,
			 struct ema_error *err);

/* ema_trace_read with what a trace replay needs beyond the requests:
 * need_times rejects a lengths-only file (it has no arrival times) at its
 * header, decided from the same single read of the file (a FIFO can be
 * read only once); lines, when not NULL, receives a malloc'd array with
 * the file line of each request (saturating at UINT32_MAX), so that a row
 * found bad later (an arrival that overflows once scaled) is named. */
int ema_trace_read_ex(const char *path, enum ema_trace_format fmt,
		      bool need_times, struct ema_workload *out,
		      uint32_t **lines, struct ema_error *err);

#endif
