/* cli.c: the table of options and commands, the one parser (getopt_long)
 * every command goes through, the help and the man page printed from the
 * same table, and the `help` and `version` commands. A command's own file
 * (cmd_run.c, sweep.c, ...) holds its entry and its function; nothing here
 * knows what a command does. */
#include "cli.h"
#include "backends.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ema_build.h"
#include "ema_commit.h"

const struct ema_cli_optdef ema_cli_options[] = {
	{ EMA_OPT_CONFIG, "config", "FILE", EMA_VALUE_FILE,
	  "the scenario (JSON); without it, the embedded default scenario ('ema config default' "
	  "prints it)" },
	{ EMA_OPT_SET, "set", "KEY=VALUE", EMA_VALUE_KEY,
	  "overrides one key after the scenario is read: a dotted path and a value "
	  "(serving.max_batch=128, tenants.0.workload.rate_rps=4, policies=static,ema, "
	  "hardware=h200x8); repeatable (at most 256), applied in order" },
	{ EMA_OPT_SEED, "seed", "N", EMA_VALUE_OTHER,
	  "the seed of every random draw; the same as --set seed=N" },
	{ EMA_OPT_OUT, "out", "DIR", EMA_VALUE_DIR,
	  "where the output goes: the run folder of run (it must not exist and its parent "
	  "must, else exit 2 before anything runs), the sweep folder of sweep (made when "
	  "missing, resumed when it holds the same sweep), the folder of figures, the profile "
	  "of calibrate" },
	{ EMA_OPT_BACKEND, "backend", "sim|hw", EMA_VALUE_WORD,
	  "sim: the simulator (default); hw: the GPUs of this machine" },
	{ EMA_OPT_HW, "hw", NULL, EMA_VALUE_NONE, "the same as --backend hw" },
	{ EMA_OPT_VERIFY, "verify", NULL, EMA_VALUE_NONE,
	  "hw backend: checks every word of every moved page, not a sample" },
	{ EMA_OPT_NO_PLOTS, "no-plots", NULL, EMA_VALUE_NONE,
	  "writes the CSV files only: no figures, no plots/" },
	{ EMA_OPT_QUIET, "quiet", NULL, EMA_VALUE_NONE,
	  "no progress on stderr (warnings and errors still)" },
	{ EMA_OPT_CSV, "csv", "FILE", EMA_VALUE_FILE,
	  "also writes the figures to FILE as CSV, replacing it when complete" },
	{ EMA_OPT_QUICK, "quick", NULL, EMA_VALUE_NONE,
	  "fewer repetitions: a faster, rougher measurement" },
	{ EMA_OPT_MEMORY, "memory", NULL, EMA_VALUE_NONE,
	  "only the peak memory of an hour's replay and of a week's, and their ratio" },
	{ EMA_OPT_TRACE, "trace", "FILE", EMA_VALUE_FILE, "the trace to replay" },
	{ EMA_OPT_NAME, "name", "NAME", EMA_VALUE_OTHER, "the name to give" },
	{ EMA_OPT_VARY, "vary", "KEY=V1,V2,...", EMA_VALUE_KEY,
	  "one key and its values; one point per combination of the values of every --vary "
	  "(at most 8 keys, 64 values each)" },
	{ EMA_OPT_JOBS, "jobs", "N", EMA_VALUE_OTHER,
	  "runs up to N points at once, one process each (default: the number of cores this "
	  "process may use); the results do not depend on N" },
	{ EMA_OPT_SHARD, "shard", "I/N", EMA_VALUE_OTHER,
	  "runs only every N-th point starting at point I (0 <= I < N), and does not merge; "
	  "default from SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT and SLURM_ARRAY_TASK_MIN "
	  "when they are set, else 0/1 (every point)" },
	{ EMA_OPT_SBATCH, "sbatch", "FILE", EMA_VALUE_FILE,
	  "runs no sweep but a trial of its first and last points, and writes FILE: a Slurm "
	  "array job of the sweep's shards with time and memory per task estimated from the "
	  "trial, and a merge job after it ('sh FILE' submits both)" },
	{ EMA_OPT_TASKS, "tasks", "N", EMA_VALUE_OTHER,
	  "--sbatch: the array's tasks, one shard each (default: one per point, at most 1000)" },
	{ EMA_OPT_THROTTLE, "throttle", "M", EMA_VALUE_OTHER,
	  "--sbatch: at most M tasks running at once, Slurm's array throttle 0-(N-1)%M "
	  "(default: N, at most 50)" },
	{ EMA_OPT_PARTITION, "partition", "P", EMA_VALUE_OTHER,
	  "--sbatch: the Slurm partition of the array and of the merge job" },
	{ EMA_OPT_ACCOUNT, "account", "A", EMA_VALUE_OTHER,
	  "--sbatch: the Slurm account the array and the merge job are charged to" },
	{ EMA_OPT_TIME, "time", "LIMIT", EMA_VALUE_OTHER,
	  "--sbatch: each task's time limit, as Slurm writes it (MINUTES, HH:MM:SS, D-HH:MM:SS), "
	  "instead of the trial's estimate" },
	{ EMA_OPT_MEM, "mem", "SIZE", EMA_VALUE_OTHER,
	  "--sbatch: each task's memory, as Slurm writes it (4000M, 8G), instead of the trial's "
	  "estimate; with --time too, no trial runs" },
	{ EMA_OPT_SBATCH_ARG, "sbatch-arg", "OPTION", EMA_VALUE_OTHER,
	  "--sbatch: one more option of sbatch, as sbatch takes it (with its dashes), for the "
	  "array and the merge job: a QOS, a generic resource, a constraint; repeatable (at most "
	  "16)" },
	{ EMA_OPT_DRY_RUN, "dry-run", NULL, EMA_VALUE_NONE,
	  "--sbatch: prints the script on stdout and runs nothing (no trial), writes nothing" },
	{ EMA_OPT_MAX_RATE, "max-rate", "KEY", EMA_VALUE_KEY,
	  "finds, per policy, the largest value of the rate KEY whose run meets every --slo "
	  "target, by bisection, for every combination of the --vary values (seeds are "
	  "repetitions); KEY=LO,HI gives the bracket to start from" },
	{ EMA_OPT_SLO, "slo", "METRIC=MAX,...", EMA_VALUE_OTHER,
	  "--max-rate: the targets every tenant must meet, summary.csv columns with their upper "
	  "bounds (ttft_p90_ms=2000,tpot_p99_ms=200); every request must also complete" },
	{ EMA_OPT_RESOLUTION, "resolution", "R", EMA_VALUE_OTHER,
	  "--max-rate: bisection stops when the rate met and the rate missed are within R (in "
	  "the key's unit) or R% of the rate met (default 2%)" },
	{ EMA_OPT_RUNS, "runs", "N", EMA_VALUE_OTHER,
	  "runs each measurement N times (1 to 99) and reports the medians" },
	{ EMA_OPT_POINT_PLOTS, "point-plots", NULL, EMA_VALUE_NONE,
	  "also draws each point's figures into DIR/point-NNN/plots/, as 'ema run' does (off by "
	  "default: drawing them takes many times longer than running the points)" },
	{ EMA_OPT_MAN, "man", NULL, EMA_VALUE_NONE,
	  "prints the whole manual as a man page (roff), the text of doc/ema.1: "
	  "'ema help --man | man -l -'" },
	{ EMA_OPT_HELP, "help", NULL, EMA_VALUE_NONE, "prints the command's help and exits" },
	{ EMA_OPT_NONE, NULL, NULL, EMA_VALUE_NONE, NULL },
};

const struct ema_cli_cmd *const ema_cli_table[] = {
	&ema_cmd_run, &ema_cmd_config, &ema_cmd_list, &ema_cmd_sweep, &ema_cmd_figures, &ema_cmd_paths, &ema_cmd_bench,
	&ema_cmd_calibrate, &ema_cmd_validate, &ema_cmd_version, &ema_cmd_help, NULL,
};

const struct ema_cli_optdef *ema_cli_optdef(enum ema_cli_opt id)
{
	for (const struct ema_cli_optdef *d = ema_cli_options; d->id != EMA_OPT_NONE; d++)
		if (d->id == id)
			return d;
	return NULL;
}

const struct ema_cli_cmd *ema_cli_find(const char *name)
{
	for (int i = 0; ema_cli_table[i] != NULL; i++)
		if (strcmp(ema_cli_table[i]->name, name) == 0)
			return ema_cli_table[i];
	return NULL;
}

/* ---- parsing ------------------------------------------------------------ */

#define CLI_MAX_OPTS 32

static const struct ema_cli_optuse *cmd_use(const struct ema_cli_cmd *cmd, int id)
{
	for (const struct ema_cli_optuse *u = cmd->options; u->id != EMA_OPT_NONE; u++)
		if ((int)u->id == id)
			return u;
	return NULL;
}

static const char *use_arg(const struct ema_cli_optuse *u)
{
	return u->arg != NULL ? u->arg : ema_cli_optdef(u->id)->arg;
}

/* A mistake in the command line: "ema CMD: WHAT (see 'ema help CMD')". */
static int usage_error(struct ema_error *err, const struct ema_cli_cmd *cmd, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int usage_error(struct ema_error *err, const struct ema_cli_cmd *cmd, const char *fmt, ...)
{
	char msg[EMA_ERROR_MSG_MAX / 2];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return ema_error_set(err, EMA_ERR_INPUT, "ema %s: %s (see 'ema help %s')", cmd->name, msg,
			     cmd->name);
}

/* getopt_long said '?' (opterr off): an unknown option, an ambiguous
 * abbreviation, or a value given to a flag (--quiet=1). */
static int bad_option(const struct ema_cli_cmd *cmd, const struct option *longopts,
		      const char *word, int opt, struct ema_error *err)
{
	char name[128], list[512] = "";
	int matches = 0;

	if (opt != 0 && word != NULL && strncmp(word, "--", 2) == 0 && cmd_use(cmd, opt) != NULL)
		return usage_error(err, cmd, "option --%s takes no value",
				   ema_cli_optdef((enum ema_cli_opt)opt)->name);
	if (opt != 0)
		return usage_error(err, cmd, "unknown option -%c", opt);
	if (word == NULL)
		word = "--?";
	snprintf(name, sizeof name, "%.*s", (int)strcspn(word, "="), word);
	for (const struct option *o = longopts; o->name != NULL; o++)
		if (strncmp(o->name, name + 2, strlen(name + 2)) == 0) {
			size_t len = strlen(list);

			snprintf(list + len, sizeof list - len, "%s--%s", matches ? ", " : "", o->name);
			matches++;
		}
	if (matches > 1 && strlen(name) > 2)
		return usage_error(err, cmd, "ambiguous option %s (%s?)", name, list);
	return usage_error(err, cmd, "unknown option %s", name);
}

/* Slurm's time limits: MINUTES, MM:SS, HH:MM:SS, D-HH, D-HH:MM,
 * D-HH:MM:SS (numbers of one to four digits). */
static bool slurm_time_ok(const char *v)
{
	const char *dash = strchr(v, '-');
	int colons = 0, digits = 0;

	if (dash != NULL) {
		if (dash == v || dash[1] == '\0')
			return false;
		for (const char *q = v; q < dash; q++)
			if (*q < '0' || *q > '9')
				return false;
		v = dash + 1;
	}
	for (const char *q = v; *q; q++) {
		if (*q == ':') {
			if (digits == 0)
				return false;
			colons++;
			digits = 0;
		} else if (*q >= '0' && *q <= '9' && digits < 4) {
			digits++;
		} else {
			return false;
		}
	}
	return digits > 0 && colons <= 2;
}

/* Slurm's sizes: digits, then K, M, G or T (M when none). */
static bool slurm_mem_ok(const char *v)
{
	const char *q = v;

	while (*q >= '0' && *q <= '9')
		q++;
	if (q == v)
		return false;
	return *q == '\0' || (strchr("KMGTkmgt", *q) != NULL && q[1] == '\0');
}

int ema_cli_parse(const struct ema_cli_cmd *cmd, int argc, char **argv,
		  struct ema_cli_args *a, struct ema_error *err)
{
	struct option longopts[CLI_MAX_OPTS + 1];
	char shortopts[2 * CLI_MAX_OPTS + 2];
	size_t len = 0, ns = 0;
	int n = 0, c;

	memset(a, 0, sizeof *a);
	a->cmd = cmd;
	a->plots = true;
	a->backend = ema_backend_default();
	/* as typed, before getopt_long permutes argv: run.json records it */
	len = (size_t)snprintf(a->command, sizeof a->command, "ema");
	for (int i = 0; i < argc && len < sizeof a->command; i++)
		len += (size_t)snprintf(a->command + len, sizeof a->command - len, " %s", argv[i]);

	/* ':' first: a missing value is reported as ':', not as '?' */
	shortopts[ns++] = ':';
	for (const struct ema_cli_optuse *u = cmd->options; u->id != EMA_OPT_NONE; u++) {
		const struct ema_cli_optdef *d = ema_cli_optdef(u->id);

		if (d == NULL || n == CLI_MAX_OPTS)
			return ema_error_set(err, EMA_ERR_INTERNAL, "ema %s: bad option table",
					     cmd->name);
		longopts[n].name = d->name;
		longopts[n].has_arg = d->arg != NULL ? required_argument : no_argument;
		longopts[n].flag = NULL;
		longopts[n].val = (int)d->id;
		n++;
		if ((int)d->id < 256) {
			shortopts[ns++] = (char)d->id;
			if (d->arg != NULL)
				shortopts[ns++] = ':';
		}
	}
	memset(&longopts[n], 0, sizeof longopts[n]);
	shortopts[ns] = '\0';

	opterr = 0;
	optind = 0; /* glibc: start afresh (a test parses many command lines) */
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		const char *v = optarg;

		switch (c) {
		case '?':
			return bad_option(cmd, longopts, optind > 0 ? argv[optind - 1] : NULL, optopt,
					  err);
		case ':': {
			const struct ema_cli_optuse *u = cmd_use(cmd, optopt);

			return usage_error(err, cmd, "--%s expects %s",
					   u ? ema_cli_optdef(u->id)->name : "?",
					   u ? use_arg(u) : "a value");
		}
		case EMA_OPT_HELP:
			a->help = true;
			return EMA_OK;
		case EMA_OPT_CONFIG:
			a->config = v;
			break;
		case EMA_OPT_SET:
		case EMA_OPT_SEED:
			if (c == EMA_OPT_SET && strchr(v, '=') == NULL)
				return usage_error(err, cmd, "--set %.200s: expected KEY=VALUE", v);
			if (a->n_sets == EMA_CLI_MAX_SETS)
				return usage_error(err, cmd, "--set and --seed: at most %d in all",
						   EMA_CLI_MAX_SETS);
			if (c == EMA_OPT_SEED) {
				snprintf(a->seed_sets[a->n_sets], sizeof a->seed_sets[0], "seed=%s", v);
				v = a->seed_sets[a->n_sets];
			}
			a->sets[a->n_sets++] = v;
			break;
		case EMA_OPT_OUT:
			a->out = v;
			break;
		case EMA_OPT_BACKEND: {
			/* the names of src/backends.c's table */
			const struct ema_platform_backend *be = ema_backend_find(v);

			if (be == NULL) {
				char names[256];

				ema_backend_names(ema_backend_table, names, sizeof names);
				return usage_error(err, cmd, "--backend %.100s: expected %s", v, names);
			}
			a->backend = be;
			break;
		}
		case EMA_OPT_HW:
			/* the option's own meaning: the GPUs' entry, by its name */
			a->backend = ema_backend_find("hw");
			if (a->backend == NULL)
				return ema_error_set(err, EMA_ERR_INTERNAL, "--hw: no hw backend");
			break;
		case EMA_OPT_VERIFY:
			a->verify = true;
			break;
		case EMA_OPT_NO_PLOTS:
			a->plots = false;
			break;
		case EMA_OPT_POINT_PLOTS:
			a->point_plots = true;
			break;
		case EMA_OPT_QUIET:
			a->quiet = true;
			break;
		case EMA_OPT_CSV:
			a->csv = v;
			break;
		case EMA_OPT_QUICK:
			a->quick = true;
			break;
		case EMA_OPT_MEMORY:
			a->memory = true;
			break;
		case EMA_OPT_TRACE:
			a->trace = v;
			break;
		case EMA_OPT_NAME:
			a->name = v;
			break;
		case EMA_OPT_VARY:
			if (a->n_vary == EMA_CLI_MAX_VARY)
				return usage_error(err, cmd, "--vary: at most %d keys", EMA_CLI_MAX_VARY);
			a->vary[a->n_vary++] = v;
			break;
		case EMA_OPT_MAN:
			a->man = true;
			break;
		case EMA_OPT_SHARD:
			a->shard = v;
			break;
		case EMA_OPT_SBATCH:
			a->sbatch = v;
			break;
		case EMA_OPT_MAX_RATE:
			a->max_rate = v;
			break;
		case EMA_OPT_SLO:
			a->slo = v;
			break;
		case EMA_OPT_RESOLUTION:
			a->resolution = v;
			break;
		case EMA_OPT_PARTITION:
		case EMA_OPT_ACCOUNT:
			/* names: anything else would be a typo or a line break
			 * in a script */
			for (const char *q = v; *q; q++)
				if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
				      (*q >= '0' && *q <= '9') || strchr("-_.,", *q) != NULL))
					return usage_error(err, cmd, "--%s %.100s: expected a name (letters, "
							   "digits, '-', '_', '.', ',')",
							   c == EMA_OPT_PARTITION ? "partition" : "account", v);
			if (*v == '\0')
				return usage_error(err, cmd, "--%s: expected a name",
						   c == EMA_OPT_PARTITION ? "partition" : "account");
			if (c == EMA_OPT_PARTITION)
				a->partition = v;
			else
				a->account = v;
			break;
		case EMA_OPT_TIME:
			if (!slurm_time_ok(v))
				return usage_error(err, cmd, "--time %.100s: expected a time limit as "
						   "Slurm writes it: MINUTES, MM:SS, HH:MM:SS, D-HH, D-HH:MM "
						   "or D-HH:MM:SS", v);
			a->time_limit = v;
			break;
		case EMA_OPT_MEM:
			if (!slurm_mem_ok(v))
				return usage_error(err, cmd, "--mem %.100s: expected a size as Slurm "
						   "writes it: a number with K, M, G or T (4000M, 8G)", v);
			a->mem = v;
			break;
		case EMA_OPT_SBATCH_ARG:
			if (v[0] != '-' || v[1] == '\0' || strpbrk(v, "\n\r") != NULL)
				return usage_error(err, cmd, "--sbatch-arg %.100s: expected one sbatch "
						   "option, such as --qos=long", v);
			if (strncmp(v, "--array", 7) == 0 || strncmp(v, "-a", 2) == 0 ||
			    strncmp(v, "--dependency", 12) == 0 || strncmp(v, "--wrap", 6) == 0)
				return usage_error(err, cmd, "--sbatch-arg %.100s: the script sets it "
						   "itself (give --array to 'sbatch FILE' to run some "
						   "tasks again)", v);
			if (a->n_sbatch_args == EMA_CLI_MAX_SBATCH_ARGS)
				return usage_error(err, cmd, "--sbatch-arg: at most %d",
						   EMA_CLI_MAX_SBATCH_ARGS);
			a->sbatch_args[a->n_sbatch_args++] = v;
			break;
		case EMA_OPT_DRY_RUN:
			a->dry_run = true;
			break;
		case EMA_OPT_RUNS: {
			char *end;
			long num;

			errno = 0;
			num = strtol(v, &end, 10);
			if (end == v || *end != '\0' || errno != 0 || num < 1 || num > 99)
				return usage_error(err, cmd, "--runs %.100s: expected a number from 1 to 99",
						   v);
			a->runs = (int)num;
			break;
		}
		case EMA_OPT_TASKS:
		case EMA_OPT_THROTTLE: {
			char *end;
			long num;

			errno = 0;
			num = strtol(v, &end, 10);
			if (end == v || *end != '\0' || errno != 0 || num < 1 || num > 100000)
				return usage_error(err, cmd, "--%s %.100s: expected a number from 1 to "
						   "100000", c == EMA_OPT_TASKS ? "tasks" : "throttle", v);
			if (c == EMA_OPT_TASKS)
				a->tasks = (int)num;
			else
				a->throttle = (int)num;
			break;
		}
		case EMA_OPT_JOBS: {
			char *end;
			long jobs;

			errno = 0;
			jobs = strtol(v, &end, 10);
			if (end == v || *end != '\0' || errno != 0 || jobs < 1 || jobs > 1024)
				return usage_error(err, cmd, "--jobs %.100s: expected a number of "
						   "processes from 1 to 1024", v);
			a->jobs = (int)jobs;
			break;
		}
		default:
			return ema_error_set(err, EMA_ERR_INTERNAL, "ema %s: option %d not handled",
					     cmd->name, c);
		}
	}
	for (int i = optind; i < argc; i++) {
		bool known = cmd->words == NULL;

		for (int k = 0; !known && cmd->words[k] != NULL; k++)
			known = strcmp(argv[i], cmd->words[k]) == 0;
		if (a->n_args == cmd->max_args || a->n_args == EMA_CLI_MAX_ARGS || !known) {
			char expected[256] = "";

			for (int k = 0; cmd->words != NULL && cmd->words[k] != NULL; k++) {
				size_t l = strlen(expected);

				snprintf(expected + l, sizeof expected - l, "%s%s",
					 k == 0 ? "; expected " : cmd->words[k + 1] ? ", " : " or ",
					 cmd->words[k]);
			}
			if (a->n_args == cmd->max_args)
				expected[0] = '\0';
			return usage_error(err, cmd, "unexpected argument %.200s%s", argv[i], expected);
		}
		a->args[a->n_args++] = argv[i];
	}
	/* --verify is the backend's to honour: on one that moves no data
	 * (the simulator) it would check nothing, and say so nowhere */
	if (a->verify && !a->backend->verify) {
		char names[256] = "";

		for (int i = 0; ema_backend_table[i] != NULL; i++)
			if (ema_backend_table[i]->verify)
				snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
					 names[0] != '\0' ? ", " : "", ema_backend_table[i]->name);
		return usage_error(err, cmd, "--verify: the %s backend checks no moved pages "
				   "(--verify goes with --backend %s)", a->backend->name, names);
	}
	return EMA_OK;
}

/* ---- help for the terminal ------------------------------------------------ */

#define CLI_WIDTH 79
#define CLI_OPT_COL 24

/* Prints text from column col, breaking lines at spaces before width and
 * indenting the next ones by indent; '\n' starts a new paragraph. Words
 * inside brackets are kept together when keep_groups is set (usage). */
static void wrap(FILE *out, const char *text, int col, int indent, bool keep_groups)
{
	const char *p = text;

	while (*p != '\0') {
		const char *w = p;
		int depth = 0, n;

		if (*p == '\n') {
			fprintf(out, "\n\n%*s", indent, "");
			col = indent;
			p++;
			continue;
		}
		/* one word (or one bracketed group) */
		while (*p != '\0' && *p != '\n' && (*p != ' ' || depth > 0)) {
			if (keep_groups && (*p == '[' || *p == '{'))
				depth++;
			else if (keep_groups && (*p == ']' || *p == '}') && depth > 0)
				depth--;
			p++;
		}
		n = (int)(p - w);
		if (col > indent && col + 1 + n > CLI_WIDTH) {
			fprintf(out, "\n%*s", indent, "");
			col = indent;
		} else if (col > indent) {
			fputc(' ', out);
			col++;
		}
		fprintf(out, "%.*s", n, w);
		col += n;
		while (*p == ' ')
			p++;
	}
	fputc('\n', out);
}

static void option_label(const struct ema_cli_optuse *u, char *buf, size_t n)
{
	const struct ema_cli_optdef *d = ema_cli_optdef(u->id);
	const char *arg = use_arg(u);

	if ((int)d->id < 256)
		snprintf(buf, n, "-%c, --%s%s%s", (int)d->id, d->name, arg ? " " : "", arg ? arg : "");
	else
		snprintf(buf, n, "    --%s%s%s", d->name, arg ? " " : "", arg ? arg : "");
}

static void print_option(FILE *out, const struct ema_cli_optuse *u, const char *help)
{
	char label[128];
	int col;

	option_label(u, label, sizeof label);
	col = fprintf(out, "  %s", label);
	if (col + 2 > CLI_OPT_COL) {
		fprintf(out, "\n%*s", CLI_OPT_COL, "");
	} else {
		fprintf(out, "%*s", CLI_OPT_COL - col, "");
	}
	wrap(out, help, CLI_OPT_COL, CLI_OPT_COL, false);
}

void ema_cli_print_help(const struct ema_cli_cmd *cmd, FILE *out)
{
	int col = fprintf(out, "usage: ema %s", cmd->name);

	if (cmd->usage[0] != '\0') {
		fputc(' ', out);
		wrap(out, cmd->usage, col + 1, col + 1, true);
	} else {
		fputc('\n', out);
	}
	fputc('\n', out);
	wrap(out, cmd->description, 0, 0, false);
	fputs("\noptions:\n", out);
	for (const struct ema_cli_optuse *u = cmd->options; u->id != EMA_OPT_NONE; u++)
		print_option(out, u, u->help ? u->help : ema_cli_optdef(u->id)->help);
	if (cmd->examples != NULL) {
		fputs("\nexamples:\n", out);
		for (int i = 0; cmd->examples[i] != NULL; i++)
			fprintf(out, "  %s\n", cmd->examples[i]);
	}
}

/* The commands that take an option, "run, config, sweep" (empty: none). */
static int takers(enum ema_cli_opt id, char *buf, size_t n)
{
	int count = 0;

	buf[0] = '\0';
	for (int i = 0; ema_cli_table[i] != NULL; i++)
		if (cmd_use(ema_cli_table[i], (int)id) != NULL) {
			size_t len = strlen(buf);

			snprintf(buf + len, n - len, "%s%s", count ? ", " : "", ema_cli_table[i]->name);
			count++;
		}
	return count;
}

static const char cli_exit_text[] =
	"exit status: 0 done; 2 bad input (an option, the scenario, a trace, an output path: the "
	"message says which and where, and nothing is written); 1 a failure while working "
	"(writing, memory, the GPUs, no GPU or CUDA for the hardware backend).";

void ema_cli_print_overview(FILE *out)
{
	fputs("usage: ema COMMAND [OPTIONS] [ARGUMENTS]\n"
	      "       ema help [COMMAND] | ema COMMAND --help | ema --version\n"
	      "\ncommands:\n", out);
	for (int i = 0; ema_cli_table[i] != NULL; i++)
		fprintf(out, "  %-10s %s\n", ema_cli_table[i]->name, ema_cli_table[i]->summary);
	fputs("\ncommon options, the same spelling and meaning in every command that takes them:\n",
	      out);
	for (const struct ema_cli_optdef *d = ema_cli_options; d->id != EMA_OPT_NONE; d++) {
		struct ema_cli_optuse u = { d->id, NULL, NULL, EMA_VALUE_NONE };
		char who[256];

		if (takers(d->id, who, sizeof who) < 2)
			continue;
		print_option(out, &u, d->id == EMA_OPT_HELP ? "every command" : who);
	}
	fputc('\n', out);
	wrap(out, cli_exit_text, 0, 0, false);
	fputs("See 'ema help COMMAND', doc/cli.md, and ema(1).\n", out);
}

/* ---- the man page ------------------------------------------------------- */

/* Writes text for roff: backslashes escaped, the dashes of an option
 * (a word starting with a dash) as \- so that they print and copy as ASCII
 * minus signs, and no line starting with a control character. */
static void roff(FILE *out, const char *s)
{
	char prev = ' ';
	bool opt = false;

	for (bool start = true; *s != '\0'; prev = *s, s++) {
		if (start && (*s == '.' || *s == '\''))
			fputs("\\&", out);
		start = false;
		if (*s == '-' && (opt || strchr(" [(|'{", prev) != NULL)) {
			fputs("\\-", out);
			opt = true;
			continue;
		}
		if (strchr(" ]),|'}\n", *s) != NULL)
			opt = false;
		if (*s == '\\') {
			fputs("\\e", out);
		} else if (*s == '\n') {
			fputs("\n.PP\n", out);
			start = true;
		} else {
			fputc(*s, out);
		}
	}
}

static void roff_option(FILE *out, const struct ema_cli_optuse *u, const char *help)
{
	const struct ema_cli_optdef *d = ema_cli_optdef(u->id);
	const char *arg = use_arg(u);

	fputs(".TP\n", out);
	if ((int)d->id < 256)
		fprintf(out, "\\fB\\-%c\\fR, ", (int)d->id);
	fputs("\\fB", out);
	roff(out, "--");
	for (const char *c = d->name; *c != '\0'; c++) {
		if (*c == '-')
			fputs("\\-", out);
		else
			fputc(*c, out);
	}
	fputs("\\fR", out);
	if (arg != NULL) {
		fputs(" \\fI", out);
		roff(out, arg);
		fputs("\\fR", out);
	}
	fputc('\n', out);
	roff(out, help);
	fputc('\n', out);
}

void ema_cli_print_man(FILE *out)
{
	fputs(".\\\" ema.1: written by 'ema help --man' from the command table of src/cli.c;\n"
	      ".\\\" do not edit: change the table and run 'ema help --man > doc/ema.1'.\n", out);
	fprintf(out, ".TH EMA 1 \"\" \"ema %s\" \"User Commands\"\n", PACKAGE_VERSION);
	/* left-adjusted and unhyphenated: paths and option names stay whole */
	fputs(".ad l\n.nh\n.nr HY 0\n"
	      ".SH NAME\nema \\- elastic KV-cache memory across the GPUs of one server\n"
	      ".SH SYNOPSIS\n", out);
	for (int i = 0; ema_cli_table[i] != NULL; i++) {
		/* .SY/.YS (groff's an-ext, mandoc): continuation lines indented */
		fprintf(out, ".SY \"ema %s\"\n", ema_cli_table[i]->name);
		if (ema_cli_table[i]->usage[0] != '\0') {
			roff(out, ema_cli_table[i]->usage);
			fputc('\n', out);
		}
		fputs(".YS\n", out);
	}
	fputs(".SH DESCRIPTION\n", out);
	roff(out, "ema studies how the GPUs of one server can lend each other the memory of the KV "
		  "cache of LLM serving: one policy core for borrowing and reclaiming pages drives a "
		  "discrete-event simulator of NVLink multi-GPU servers or the real GPUs. A scenario "
		  "(JSON) names the hardware, the model, the tenants and their workloads, and the "
		  "policies to compare; every command that takes one reads it the same way.\n"
		  "Every command takes --help (or -h) and prints its options to stdout; an unknown "
		  "option is an error of exit status 2. The same option has the same spelling and "
		  "meaning in every command that takes it.");
	fputs("\n.SH COMMON OPTIONS\n", out);
	for (const struct ema_cli_optdef *d = ema_cli_options; d->id != EMA_OPT_NONE; d++) {
		struct ema_cli_optuse u = { d->id, NULL, NULL, EMA_VALUE_NONE };
		char who[256], help[1024];

		if (takers(d->id, who, sizeof who) < 2)
			continue;
		snprintf(help, sizeof help, "%s. Taken by: %s.", d->help,
			 d->id == EMA_OPT_HELP ? "every command" : who);
		roff_option(out, &u, help);
	}
	fputs(".SH COMMANDS\n", out);
	for (int i = 0; ema_cli_table[i] != NULL; i++) {
		const struct ema_cli_cmd *cmd = ema_cli_table[i];

		fprintf(out, ".SS \"ema %s\"\n", cmd->name);
		roff(out, cmd->summary);
		fputs(".\n.PP\n", out);
		roff(out, cmd->description);
		fputc('\n', out);
		for (const struct ema_cli_optuse *u = cmd->options; u->id != EMA_OPT_NONE; u++)
			roff_option(out, u, u->help ? u->help : ema_cli_optdef(u->id)->help);
		if (cmd->examples != NULL) {
			fputs(".PP\nExamples:\n.PP\n.RS\n.nf\n", out);
			for (int k = 0; cmd->examples[k] != NULL; k++) {
				roff(out, cmd->examples[k]);
				fputc('\n', out);
			}
			fputs(".fi\n.RE\n", out);
		}
	}
	fputs(".SH EXIT STATUS\n", out);
	roff(out, cli_exit_text + strlen("exit status: "));
	fputs("\n.SH FILES\n", out);
	roff(out, "runs/NAME/: the run folder of 'ema run' without --out; runs/sweep-ID/ that of "
		  "'ema sweep' (ID from the sweep's configuration: the same command resumes it). A "
		  "folder being written is NAME.tmp-HOST-PID; a leftover of a killed process is removed by "
		  "the next run aimed at the same name.");
	fputs("\n.SH SEE ALSO\n", out);
	roff(out, "doc/cli.md (this reference with the details) and README.md (configuration, "
		  "outputs, the model) in the source; gnuplot(1).");
	fputc('\n', out);
}

/* ---- help, version ---------------------------------------------------------- */

static int help_exec(const struct ema_cli_args *a, struct ema_error *err)
{
	const struct ema_cli_cmd *cmd;

	if (a->man) {
		if (a->n_args > 0)
			return ema_error_set(err, EMA_ERR_INPUT,
					     "help: --man prints the whole manual, not that of %s",
					     a->args[0]);
		ema_cli_print_man(stdout);
		return EMA_OK;
	}
	if (a->n_args == 0) {
		ema_cli_print_overview(stdout);
		return EMA_OK;
	}
	cmd = ema_cli_find(a->args[0]);
	if (cmd == NULL)
		return ema_error_set(err, EMA_ERR_INPUT, "help: unknown command \"%s\" (see 'ema help')",
				     a->args[0]);
	ema_cli_print_help(cmd, stdout);
	return EMA_OK;
}

static const struct ema_cli_optuse help_options[] = {
	{ EMA_OPT_MAN, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_HELP, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_NONE, NULL, NULL, EMA_VALUE_NONE },
};

const struct ema_cli_cmd ema_cmd_help = {
	.name = "help",
	.summary = "print the help of ema or of one command",
	.usage = "[COMMAND] | --man",
	.options = help_options,
	.max_args = 1,
	.description = "Without COMMAND, lists the commands and the common options; with one, its "
		       "usage, options and examples (the same as 'ema COMMAND --help'). Help goes "
		       "to stdout, exit status 0.",
	.fn = help_exec,
};

#ifdef EMA_HAVE_CUDA
static const char cli_backend[] = "CUDA";
#else
static const char cli_backend[] = "not built";
#endif

static int version_exec(const struct ema_cli_args *a, struct ema_error *err)
{
	printf("ema %s (commit %s; hardware backend: %s)\n", PACKAGE_VERSION, ema_commit,
	       cli_backend);
	return EMA_OK;
}

static const struct ema_cli_optuse version_options[] = {
	{ EMA_OPT_HELP, NULL, NULL, EMA_VALUE_NONE },
	{ EMA_OPT_NONE, NULL, NULL, EMA_VALUE_NONE },
};

const struct ema_cli_cmd ema_cmd_version = {
	.name = "version",
	.summary = "print the version (also: ema --version)",
	.usage = "",
	.options = version_options,
	.description = "Prints the version, the commit the program was built from ('git "
		       "describe --always --dirty' at build time; a tarball's version outside git; "
		       "'unknown' without either), which run.json, sweep.json and capacity.json "
		       "record too, and whether the hardware backend was built with CUDA.",
	.fn = version_exec,
};

/* ---- the command line ------------------------------------------------------- */

int ema_cli_main(int argc, char **argv)
{
	struct ema_error err = {0};
	const struct ema_cli_cmd *cmd;
	struct ema_cli_args *a;
	const char *name;
	int rc;

	if (argc < 2) {
		ema_cli_print_overview(stdout);
		return 0;
	}
	name = argv[1];
	/* the conventional spellings of help and version; argv[1] is then
	 * the command's own name for the parser, which skips it */
	if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0)
		name = "help";
	else if (strcmp(name, "--version") == 0)
		name = "version";
	cmd = ema_cli_find(name);
	if (cmd == NULL) {
		char shown[256];

		/* what the user typed, shown without what a terminal acts on */
		ema_error_escape(shown, sizeof shown, name);
		if (name[0] == '-')
			fprintf(stderr, "ema: unknown option %s (see 'ema help')\n", shown);
		else
			fprintf(stderr, "ema: unknown command \"%s\" (see 'ema help')\n", shown);
		return 2;
	}
	a = malloc(sizeof *a);
	if (a == NULL) {
		fputs("ema: out of memory\n", stderr);
		return 1;
	}
	rc = ema_cli_parse(cmd, argc - 1, argv + 1, a, &err);
	if (rc != EMA_OK) {
		fprintf(stderr, "%s\n", err.msg);
		free(a);
		return ema_status_exit(rc);
	}
	if (a->help) {
		ema_cli_print_help(cmd, stdout);
		free(a);
		return 0;
	}
	rc = cmd->fn(a, &err);
	free(a);
	if (rc != EMA_OK) {
		fprintf(stderr, "ema: %s\n", err.msg[0] ? err.msg : ema_status_str(rc));
		return ema_status_exit(rc);
	}
	return 0;
}
