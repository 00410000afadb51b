/* plots.h: the figures of a run (throughput, latency CDFs, memory over
 * time), drawn by gnuplot from the CSV files that `ema run --out DIR`
 * writes, with the scripts copied beside them so that a researcher can
 * edit and re-render them. */
#ifndef EMA_PLOTS_H
#define EMA_PLOTS_H

#include <stdbool.h>
#include <stddef.h>

#include "ema_error.h"

/* Writes DIR/plots/NAME.gp for every figure and DIR/plots/render.sh, which
 * re-renders them, then, unless gnuplot is NULL or "", runs gnuplot (an
 * executable path, not searched in PATH) once per figure and format to
 * make DIR/plots/NAME.pdf and DIR/plots/NAME.png. gnuplot's stderr goes to
 * DIR/plots/gnuplot.log. *rendered (may be NULL) is the number of figures
 * drawn: 0 when gnuplot was skipped, else every figure.
 *
 * The policies, in the order of first appearance in DIR/summary.csv, are
 * passed to every script so that a policy keeps its colour across figures.
 *
 * Errors: EMA_ERR_IO when a CSV file is missing or gnuplot cannot be run or
 * fails (the message names the figure and the log), EMA_ERR_INPUT
 * ("DIR/summary.csv:LINE: ...") when summary.csv has no policy column or a
 * policy name that a script cannot carry, EMA_ERR_NOMEM. */
int ema_plots_render(const char *run_dir, const char *gnuplot, int *rendered,
		     struct ema_error *err);

/* The figures of a sweep folder (`ema sweep --out DIR`): DIR/sweep.gp, and
 * unless gnuplot is NULL or "", DIR/sweep_METRIC.pdf and .png for the
 * throughput, TTFT p50 and TPOT p50 of every (policy, tenant) against the
 * swept column `key` (numeric), log in DIR/gnuplot.log. With ci, from
 * DIR/sweep_stats.csv: the mean over seeds with its 95% interval as error
 * bars; else from DIR/sweep.csv. *rendered as for ema_plots_render. */
int ema_plots_render_sweep(const char *dir, const char *gnuplot, const char *key, bool ci,
			   int *rendered, struct ema_error *err);

/* Sets *names to the figure names ("throughput", ...), a NULL-terminated
 * static list, and returns how many there are. */
int ema_plots_names(const char *const **names);

/* Looks for gnuplot: $EMA_GNUPLOT if set (and then only there), else an
 * executable "gnuplot" in a folder of $PATH. Writes the path to buf and
 * returns 0, or returns EMA_ERR_UNSUPPORTED with buf set to "". */
int ema_plots_find_gnuplot(char *buf, size_t size);

#endif
