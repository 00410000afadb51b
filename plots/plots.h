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

/* One figure drawn by an embedded script, for the figures of a sweep
 * (`ema figures`): writes DIR/SCRIPT and DIR/style.gp, then, unless
 * gnuplot is NULL or "", runs `gnuplot -d -c DIR/SCRIPT ARG1 OUT.EXT
 * EXTRA...` for EXT pdf and png, each drawn to OUT.part.EXT and renamed
 * when complete, gnuplot's output appended to DIR/gnuplot.log. out_base
 * is the output path without its extension. EMA_ERR_IO with gnuplot's
 * last line when it fails. */
int ema_plots_draw(const char *dir, const char *gnuplot, const char *script, const char *arg1,
		   const char *out_base, const char *const *extra, struct ema_error *err);

/* Sets *names to the figure names ("throughput", ...), a NULL-terminated
 * static list, and returns how many there are. */
int ema_plots_names(const char *const **names);

/* Looks for gnuplot: $EMA_GNUPLOT if set (and then only there), else an
 * executable "gnuplot" in a folder of $PATH. Writes the path to buf and
 * returns 0, or returns EMA_ERR_UNSUPPORTED with buf set to "". */
int ema_plots_find_gnuplot(char *buf, size_t size);

#endif
