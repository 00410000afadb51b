/* plots.h: the figures of a run (throughput, latency CDFs, memory over
 * time), drawn by gnuplot from the CSV files that `ema run --out DIR`
 * writes, with the scripts copied beside them so that a researcher can
 * edit and re-render them. */
#ifndef EMA_PLOTS_H
#define EMA_PLOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

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

/* What the figures' temporary files and gnuplot processes are handed to,
 * so that an interrupt (SIGINT, SIGTERM, SIGHUP) leaves no NAME.part.png
 * or NAME.tmp behind and stops gnuplot too: src/'s signal cleanup
 * (outdir.h), which this layer cannot call itself. add returns a slot (-1:
 * not registered), drop forgets it once the file is renamed or removed;
 * add_child and drop_child do the same for a gnuplot process. Until set
 * (NULL members or no call) nothing is registered. */
struct ema_plots_cleanup {
	int (*add)(const char *path);
	void (*drop)(int slot);
	int (*add_child)(pid_t pid);
	void (*drop_child)(pid_t pid);
};
void ema_plots_set_cleanup(const struct ema_plots_cleanup *c);

/* The scenario as run, for a figure's title: name, then the --set
 * KEY=VALUE (also -s, --set=, --seed N as seed=N) of command, the command
 * line that made the figures' data (run.json's or sweep.json's), as
 * "NAME + KEY=VALUE, KEY=VALUE". Keys named in skip (NULL-terminated, may
 * be NULL) are left out: policies, which the legend names. A value over 60
 * characters is cut with "..."; when out is too small the label ends with
 * "(N more)". Characters that a title or render.sh's single quotes cannot
 * carry (control characters, quotes, backslashes, backquotes) become '_'.
 * command may be NULL. Returns the number of overrides found. */
int ema_plots_scenario_label(const char *name, const char *command, const char *const *skip,
			     char *out, size_t size);

/* Looks for gnuplot: $EMA_GNUPLOT if set (and then only there), else an
 * executable "gnuplot" in a folder of $PATH. Writes the path to buf and
 * returns 0, or returns EMA_ERR_UNSUPPORTED with buf set to "". */
int ema_plots_find_gnuplot(char *buf, size_t size);

#endif
