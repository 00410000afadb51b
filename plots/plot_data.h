/* plot_data.h: the data the figures draw, prepared from a run's CSV files
 * and cut down to what a figure can show, so that drawing takes about the
 * same time whatever the run's length: gnuplot reads a few thousand points
 * per curve instead of every row (the CSV files keep every row). */
#ifndef EMA_PLOT_DATA_H
#define EMA_PLOT_DATA_H

#include <stddef.h>

#include "ema_error.h"

/* Time buckets per memory panel: more than the pixels of a panel's width
 * (a panel is 520 px wide in the PNG, about 450 of them data). A series
 * with at most twice this many rows is kept whole; a longer one keeps, per
 * bucket, one row of each column's minimum and one of its maximum (the
 * envelope a pixel column would draw). */
#define EMA_PLOTS_TIME_BUCKETS 500
/* Points per CDF curve: a step of the curve is at most 1/this of its
 * height (a fraction of a pixel), and the largest value is always kept. */
#define EMA_PLOTS_CDF_POINTS 1000

/* From timeline.csv (columns policy, time_s, gpu, weights_gib, kv_used_gib,
 * staging_gib, lent_gib, free_gib, borrowed_gib, found by name): writes
 * `out`, one data block per (policy, GPU), policies in the order given and
 * GPUs in order of first appearance, each row
 *     time_s  s1 .. s6  policy  gpu
 * where s1..s6 are the running sums of weights, KV in use, staging, lent,
 * free and borrowed (the stacked areas' tops). A pair without rows gets
 * one row of NaN so that block numbers stay (policy - 1) x GPUs + gpu - 1;
 * without rows of the policies given, the file has no blocks.
 * The GPUs, joined by spaces, go to gpus (size bytes). Errors: EMA_ERR_IO
 * (cannot read or write), EMA_ERR_INPUT ("path:line: expected ..."),
 * EMA_ERR_NOMEM. */
int ema_plots_memory_data(const char *timeline_csv, const char *out,
			  const char *const *policies, size_t n_policies, char *gpus,
			  size_t size, struct ema_error *err);

/* From requests.csv (columns policy, ttft_ms, tpot_ms): writes `out`, two
 * data blocks per policy in the order given (TTFT, then TPOT), each row
 *     value_ms  fraction  policy
 * the points of the empirical CDF, at most EMA_PLOTS_CDF_POINTS + 1 of them.
 * TTFT fractions count every request of the policy (an unfinished one never
 * arrives), TPOT fractions the requests that have one; empty and
 * non-positive values are left out. An empty curve is one row of NaN.
 * Errors as ema_plots_memory_data. */
int ema_plots_cdf_data(const char *requests_csv, const char *out,
		       const char *const *policies, size_t n_policies, struct ema_error *err);

#endif
