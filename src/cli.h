/* cli.h: the command table of ema, in the style of tmux's cmd_entry: one
 * entry per subcommand (name, summary, usage, options, function), one
 * table of options whose spelling and meaning are the same in every
 * command that takes them, one getopt_long parser for all commands, and
 * the help, `ema help --man` and completion facts generated from them, so
 * that the help, the man page (doc/ema.1) and the parser cannot disagree. */
#ifndef EMA_CLI_H
#define EMA_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "ema_error.h"
#include "experiment.h"
#include "platform.h"

/* Every option of every command. A short letter is its own id. */
enum ema_cli_opt {
	EMA_OPT_NONE = 0,
	EMA_OPT_CONFIG = 'c',
	EMA_OPT_HELP = 'h',
	EMA_OPT_JOBS = 'j',
	EMA_OPT_OUT = 'o',
	EMA_OPT_QUIET = 'q',
	EMA_OPT_SET = 's',
	EMA_OPT_SEED = 256,
	EMA_OPT_BACKEND,
	EMA_OPT_HW,
	EMA_OPT_VERIFY,
	EMA_OPT_NO_PLOTS,
	EMA_OPT_CSV,
	EMA_OPT_QUICK,
	EMA_OPT_TRACE,
	EMA_OPT_NAME,
	EMA_OPT_VARY,
	EMA_OPT_MAN,
	EMA_OPT_SHARD,
	EMA_OPT_SBATCH,
	EMA_OPT_TASKS,
	EMA_OPT_THROTTLE,
	EMA_OPT_MAX_RATE,
	EMA_OPT_SLO,
	EMA_OPT_RESOLUTION,
	EMA_OPT_RUNS,
	EMA_OPT_PARTITION,
	EMA_OPT_ACCOUNT,
	EMA_OPT_TIME,
	EMA_OPT_MEM,
	EMA_OPT_SBATCH_ARG,
	EMA_OPT_DRY_RUN,
	EMA_OPT_POINT_PLOTS,
	EMA_OPT_MEMORY
};

/* What a value of the option is, for the completion and the man page. */
enum ema_cli_value {
	EMA_VALUE_NONE = 0,  /* a flag */
	EMA_VALUE_FILE,
	EMA_VALUE_DIR,
	EMA_VALUE_WORD,      /* one of a fixed list (--backend sim|hw) */
	EMA_VALUE_KEY,       /* KEY=VALUE of the configuration */
	EMA_VALUE_OTHER      /* a number, a name */
};

/* One option as the table of options defines it. */
struct ema_cli_optdef {
	enum ema_cli_opt id;
	const char *name;      /* long name, without the dashes */
	const char *arg;       /* metavariable of its value, NULL for a flag */
	enum ema_cli_value value;
	const char *help;      /* one sentence, for every command that takes it */
};

/* One option as a command takes it: its own metavariable, value kind and
 * help where the common ones do not fit (--out is a FILE for calibrate). */
struct ema_cli_optuse {
	enum ema_cli_opt id;
	const char *help;      /* NULL: the common help */
	const char *arg;       /* NULL: the common metavariable */
	enum ema_cli_value value; /* EMA_VALUE_NONE: the common kind */
};

#define EMA_CLI_MAX_SETS 256
#define EMA_CLI_MAX_VARY 8   /* keys of a sweep */
#define EMA_CLI_MAX_ARGS 8
#define EMA_CLI_MAX_SBATCH_ARGS 16

/* The parsed command line of one command. */
struct ema_cli_args {
	const struct ema_cli_cmd *cmd;
	bool help;               /* -h/--help: print the command's help */
	const char *config;      /* --config, NULL: the embedded scenario */
	/* --set and --seed, in command-line order (--seed N is "seed=N") */
	const char *sets[EMA_CLI_MAX_SETS];
	int n_sets;
	char seed_sets[EMA_CLI_MAX_SETS][64];
	const char *vary[EMA_CLI_MAX_VARY];
	int n_vary;
	const char *out, *csv, *trace, *name;
	/* --backend NAME, --hw: an entry of src/backends.c's table (the
	 * default: its first) */
	const struct ema_platform_backend *backend;
	bool verify, plots, quiet, quick, man;
	bool point_plots;        /* sweep --point-plots: each point's plots/ too */
	bool memory;             /* bench --memory: the memory figure only */
	int jobs;                /* -j N; 0: the number of cores */
	/* sweep: --shard I/N, --sbatch FILE (--tasks, --throttle; 0: default),
	 * --max-rate KEY, --slo M=V,..., --resolution R */
	const char *shard, *sbatch, *max_rate, *slo, *resolution;
	int tasks, throttle;
	/* --sbatch: --partition, --account, --time, --mem (NULL: none given),
	 * --sbatch-arg ARG..., --dry-run */
	const char *partition, *account, *time_limit, *mem;
	const char *sbatch_args[EMA_CLI_MAX_SBATCH_ARGS];
	int n_sbatch_args;
	bool dry_run;
	int runs;               /* bench --runs N; 0: the command's default */
	/* words that are not options (`ema list WHAT`) */
	const char *args[EMA_CLI_MAX_ARGS];
	int n_args;
	/* the command as typed: "ema run ARGS...", recorded in run.json */
	char command[4096];
};

struct ema_cli_cmd {
	const char *name;
	const char *summary;      /* one line, for `ema help` */
	const char *usage;        /* what follows "ema NAME" */
	const struct ema_cli_optuse *options; /* ends with { EMA_OPT_NONE } */
	int max_args;             /* words that are not options */
	const char *const *words; /* the words it accepts, NULL-terminated (NULL: any) */
	const char *description;  /* paragraphs separated by '\n' */
	const char *const *examples; /* command lines, NULL-terminated, or NULL */
	int (*fn)(const struct ema_cli_args *a, struct ema_error *err);
};

/* The commands, in `ema help` order, NULL-terminated. */
extern const struct ema_cli_cmd *const ema_cli_table[];
/* The options, ending with an entry of id EMA_OPT_NONE. */
extern const struct ema_cli_optdef ema_cli_options[];

/* The commands, one per file of src/ (tmux's cmd-*.c). */
extern const struct ema_cli_cmd ema_cmd_run;
extern const struct ema_cli_cmd ema_cmd_config;
extern const struct ema_cli_cmd ema_cmd_paths;
extern const struct ema_cli_cmd ema_cmd_list;
extern const struct ema_cli_cmd ema_cmd_sweep;
extern const struct ema_cli_cmd ema_cmd_figures;
extern const struct ema_cli_cmd ema_cmd_bench;
extern const struct ema_cli_cmd ema_cmd_calibrate;
extern const struct ema_cli_cmd ema_cmd_validate;
extern const struct ema_cli_cmd ema_cmd_version;
extern const struct ema_cli_cmd ema_cmd_help;

const struct ema_cli_cmd *ema_cli_find(const char *name);
const struct ema_cli_optdef *ema_cli_optdef(enum ema_cli_opt id);

/* Parses argv[1..argc-1] for cmd (argv[0] is the command's name). Each
 * option is checked against cmd's list; an option's value is checked
 * where the parser can (--set KEY=VALUE has a '=', --backend is sim or
 * hw). An error is EMA_ERR_INPUT with the whole message for the user:
 * "ema CMD: unknown option --x (see 'ema help CMD')". --help stops the
 * parsing with a->help set. argv may be permuted (getopt_long). */
int ema_cli_parse(const struct ema_cli_cmd *cmd, int argc, char **argv,
		  struct ema_cli_args *a, struct ema_error *err);

/* `ema help`, `ema help CMD` (or `ema CMD --help`) and the man page. */
void ema_cli_print_overview(FILE *out);
void ema_cli_print_help(const struct ema_cli_cmd *cmd, FILE *out);
void ema_cli_print_man(FILE *out);

/* The whole command line: finds the command, parses, runs it, prints an
 * error; returns the exit status (0, 1 or 2). */
int ema_cli_main(int argc, char **argv);

#endif
