/* workload_priv.h: helpers shared by the trace readers and the generators
 * of traces/, kept out of workload.h because no other layer needs them. */
#ifndef EMA_WORKLOAD_PRIV_H
#define EMA_WORKLOAD_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "workload.h"

/* Largest token count accepted from a file or a generator: anything above
 * is a corrupt row, and the cap keeps every count inside int32_t. */
#define EMA_WORKLOAD_MAX_TOKENS 10000000L

/* Largest stream a generator may produce, so that a typo in rate_rps or
 * duration_s fails with a message instead of exhausting memory. */
#define EMA_WORKLOAD_MAX_REQUESTS 10000000L

/* Makes room for at least `need` requests, growing geometrically so that
 * reading a trace costs amortised O(1) per row and no malloc per row. */
int ema_workload_reserve(struct ema_workload *w, size_t need,
			 struct ema_error *err);

#endif
