/* plot_data.h: the data the memory and latency figures draw, prepared in C
 * from a run's timeline.csv and requests.csv and cut down to what a figure
 * can show, so that drawing takes about the same time whatever the run's
 * length: gnuplot reads one block per curve, a few thousand points at
 * most, instead of going over every row of the CSV once per curve and
 * panel (the CSV files keep every row). */
#ifndef EMA_PLOT_DATA_H
#define EMA_PLOT_DATA_H

#include <stddef.h>

#include "ema_error.h"

/* Pixel columns of a memory panel's time axis: more than the data width
 * of a panel in the PNG (443 of its 520 px). */
#define EMA_PLOTS_TIME_BUCKETS 500
/* Steps of a CDF curve: a point is kept where the curve rose by at least
 * 1/this of its height since the last point kept, so what is left out is
 * under a pixel high. */
#define EMA_PLOTS_CDF_POINTS 2000
/* The stacked areas of a memory panel: weights, KV in use, staging, lent,
 * free, borrowed (their running sums are the curves drawn). */
#define EMA_PLOTS_STACK 6

/* One row of a series: its time and up to EMA_PLOTS_STACK values. */
struct ema_plots_point {
	double t;
	double y[EMA_PLOTS_STACK];
};

/* The rows of one series (pts[0..n), times ascending) that a figure with
 * `buckets` pixel columns over [t0, t1] needs, as ascending indices into
 * keep[] (room for n); returns how many. A series of at most 2 x buckets
 * rows is kept whole. A longer one keeps, in each column (the rows whose
 * time falls in that slice of [t0, t1]), its first and last row and, for
 * each of the ny curves, the first row of its minimum and of its maximum:
 * what a pixel column of each line shows, always through real rows; so
 * the series' first and last rows are kept too. */
size_t ema_plots_cut_timeline(const struct ema_plots_point *pts, size_t n, int ny, double t0,
			      double t1, size_t buckets, size_t *keep);

/* Leaves out of keep[0..nk) (indices into pts, ascending) each row whose
 * ny values equal those of the rows kept before and after it: a line
 * drawn through the rest is the same (a memory panel's weights and
 * capacity are flat for hours). Returns the new count; the first and the
 * last row stay. */
size_t ema_plots_drop_flat(const struct ema_plots_point *pts, int ny, size_t *keep, size_t nk);

/* The points of an empirical CDF drawn `with steps`: v[0..n) sorted
 * ascending, fractions over denom (>= n) requests. One point (value,
 * count / denom) at the end of each run of equal values, count being the
 * values up to it; kept when count grew by at least ceil(n / max_points)
 * since the last point kept, and always the first and the last. Writes
 * x[] and frac[] (room for n each); returns how many (0 when n is 0). */
size_t ema_plots_cut_cdf(const double *v, size_t n, size_t denom, size_t max_points, double *x,
			 double *frac);

/* The curves of a memory panel, one data block each: the six stacked
 * areas, then the GPU's own capacity as a line. */
#define EMA_PLOTS_MEMORY_CURVES (EMA_PLOTS_STACK + 1)

/* From timeline.csv (columns policy, time_s, gpu, weights_gib, kv_used_gib,
 * staging_gib, lent_gib, free_gib, borrowed_gib, found by name): writes
 * `out`, EMA_PLOTS_MEMORY_CURVES data blocks per (policy, GPU), policies
 * in the order of `policies` (space-separated; NULL or "": as they first
 * appear) and GPUs in order of first appearance, each row
 *     time_s  lower  upper  policy  gpu
 * where lower and upper bound a stacked area, the running sums of
 * weights, KV in use, staging, lent, free and borrowed (the line's block:
 * the capacity, twice). Each curve's rows are cut by
 * ema_plots_cut_timeline over the time of all the rows, then by
 * ema_plots_drop_flat; an area of no height anywhere is its first row
 * alone, and a pair without rows one row of NaN, so that the block of curve c (from 0) is
 * ((policy - 1) x GPUs + gpu - 1) x EMA_PLOTS_MEMORY_CURVES + c.
 * `out` is written as out.tmp and renamed when complete, so that it is
 * whole or not there (an interrupt removes out.tmp).
 * Errors: EMA_ERR_IO (cannot read or write, with the reason, such as "No
 * space left on device"; out.tmp is removed),
 * EMA_ERR_INPUT ("path:line: expected ..."), EMA_ERR_NOMEM. */
int ema_plots_memory_data(const char *timeline_csv, const char *out, const char *policies,
			  struct ema_error *err);

/* From requests.csv (columns policy, tenant, ttft_ms, tpot_ms): writes
 * `out`, two data blocks per (tenant, policy), tenants in order of first
 * appearance and policies as for ema_plots_memory_data: the TTFT CDF, then
 * the TPOT CDF, rows
 *     value_ms  fraction  policy  tenant
 * cut by ema_plots_cut_cdf. TTFT fractions count every request of the
 * tenant under the policy (an unfinished one never arrives), TPOT
 * fractions the requests that have one; empty and non-positive values are
 * left out. An empty curve is one row of NaN (block of tenant t, policy
 * p, metric m: ((t - 1) x policies + p - 1) x 2 + m). Errors as
 * ema_plots_memory_data. */
int ema_plots_cdf_data(const char *requests_csv, const char *out, const char *policies,
		       struct ema_error *err);

/* Within plots/: registers a temporary file with the cleanup that
 * ema_plots_set_cleanup set (plots.h), so that an interrupt removes it;
 * returns its slot or -1. ema_plots_tmp_drop forgets a slot (-1: none). */
int ema_plots_tmp_add(const char *path);
void ema_plots_tmp_drop(int slot);

#endif
