/* test_cli_table.c: the command table and its parser (src/cli.c): what
 * each option sets, in which order --set and --seed reach the
 * configuration, every usage error's message, and that the usage lines,
 * the help and the man page agree with the option lists they are printed
 * from. */
#define _GNU_SOURCE /* open_memstream */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "test_main.h"

static struct ema_cli_args args;
static struct ema_error err;

/* parse CMD WORD...: parses a copy of the words (getopt permutes them). */
static int parse(const char *cmd, ...)
{
	char *argv[64];
	int argc = 0;
	va_list ap;

	argv[argc++] = (char *)cmd;
	va_start(ap, cmd);
	for (char *w = va_arg(ap, char *); w != NULL && argc < 63; w = va_arg(ap, char *))
		argv[argc++] = w;
	va_end(ap);
	argv[argc] = NULL;
	memset(&err, 0, sizeof err);
	return ema_cli_parse(ema_cli_find(cmd), argc, argv, &args, &err);
}

static void test_run_options(void)
{
	CU_ASSERT_EQUAL_FATAL(parse("run", "-c", "a.json", "--set", "x=1", "--seed", "5", "-s", "y=2",
				    "-o", "out", "--backend", "hw", "--verify", "--no-plots", "-q", NULL),
			      EMA_OK);
	CU_ASSERT_STRING_EQUAL(args.config, "a.json");
	/* in command-line order: a later --set seed= would win over --seed */
	CU_ASSERT_EQUAL_FATAL(args.n_sets, 3);
	CU_ASSERT_STRING_EQUAL(args.sets[0], "x=1");
	CU_ASSERT_STRING_EQUAL(args.sets[1], "seed=5");
	CU_ASSERT_STRING_EQUAL(args.sets[2], "y=2");
	CU_ASSERT_STRING_EQUAL(args.out, "out");
	CU_ASSERT_STRING_EQUAL(args.backend->name, "hw");
	CU_ASSERT(args.verify && args.quiet && !args.plots && !args.help);
	CU_ASSERT_STRING_EQUAL(args.command, "ema run -c a.json --set x=1 --seed 5 -s y=2 -o out "
			       "--backend hw --verify --no-plots -q");

	/* defaults; --hw is --backend hw; long options may be abbreviated;
	 * --name=value is one word */
	CU_ASSERT_EQUAL_FATAL(parse("run", NULL), EMA_OK);
	CU_ASSERT(args.config == NULL && args.out == NULL && args.n_sets == 0);
	CU_ASSERT(args.plots && !args.quiet && !args.verify);
	CU_ASSERT_STRING_EQUAL(args.backend->name, "sim");
	CU_ASSERT_EQUAL_FATAL(parse("run", "--hw", "--conf=b.json", "--out=o2", NULL), EMA_OK);
	CU_ASSERT_STRING_EQUAL(args.backend->name, "hw");
	CU_ASSERT_STRING_EQUAL(args.config, "b.json");
	CU_ASSERT_STRING_EQUAL(args.out, "o2");
	/* a value that starts with a dash is still the option's value */
	CU_ASSERT_EQUAL_FATAL(parse("run", "--set", "tenants.0.workload.rate_rps=-1", NULL), EMA_OK);
	CU_ASSERT_STRING_EQUAL(args.sets[0], "tenants.0.workload.rate_rps=-1");
}

/* The words that are not options, wherever they are; the command line
 * recorded as typed, not as getopt_long leaves argv. */
static void test_words(void)
{
	CU_ASSERT_EQUAL_FATAL(parse("config", "--seed", "3", "default", NULL), EMA_OK);
	CU_ASSERT_EQUAL(args.n_args, 1);
	CU_ASSERT_STRING_EQUAL(args.args[0], "default");
	CU_ASSERT_EQUAL_FATAL(parse("help", "run", NULL), EMA_OK);
	CU_ASSERT_STRING_EQUAL(args.args[0], "run");
	CU_ASSERT_EQUAL_FATAL(parse("list", "policies", "--help", NULL), EMA_OK);
	CU_ASSERT(args.help);
	CU_ASSERT_EQUAL_FATAL(parse("sweep", "--vary", "seed=1,2", "--vary", "a=x", "-q", NULL), EMA_OK);
	CU_ASSERT_EQUAL(args.n_vary, 2);
	CU_ASSERT_STRING_EQUAL(args.vary[1], "a=x");
	CU_ASSERT_STRING_EQUAL(args.command, "ema sweep --vary seed=1,2 --vary a=x -q");
}

/* EXPECT_ERROR(CALL, WANT): the parse fails with exit status 2 and this
 * whole message. */
#define EXPECT_ERROR(call, want)                                \
	do {                                                    \
		CU_ASSERT_EQUAL(call, EMA_ERR_INPUT);           \
		CU_ASSERT_STRING_EQUAL(err.msg, want);          \
		CU_ASSERT_EQUAL(ema_status_exit(err.code), 2);  \
	} while (0)

static void test_usage_errors(void)
{
	EXPECT_ERROR(parse("run", "--bogus", NULL),
		     "ema run: unknown option --bogus (see 'ema help run')");
	EXPECT_ERROR(parse("run", "--bogus=1", NULL),
		     "ema run: unknown option --bogus (see 'ema help run')");
	EXPECT_ERROR(parse("run", "-x", NULL), "ema run: unknown option -x (see 'ema help run')");
	EXPECT_ERROR(parse("run", "-qx", NULL), "ema run: unknown option -x (see 'ema help run')");
	/* an option of another command is unknown here */
	EXPECT_ERROR(parse("validate", "--out", "x", NULL),
		     "ema validate: unknown option --out (see 'ema help validate')");
	EXPECT_ERROR(parse("config", "-q", NULL),
		     "ema config: unknown option -q (see 'ema help config')");
	EXPECT_ERROR(parse("run", "--se", "1", NULL),
		     "ema run: ambiguous option --se (--set, --seed?) (see 'ema help run')");
	EXPECT_ERROR(parse("run", "--quiet=yes", NULL),
		     "ema run: option --quiet takes no value (see 'ema help run')");
	EXPECT_ERROR(parse("run", "--config", NULL),
		     "ema run: --config expects FILE (see 'ema help run')");
	EXPECT_ERROR(parse("run", "-o", NULL), "ema run: --out expects DIR (see 'ema help run')");
	EXPECT_ERROR(parse("calibrate", "-o", NULL),
		     "ema calibrate: --out expects FILE (see 'ema help calibrate')");
	EXPECT_ERROR(parse("run", "--set", "serving.max_batch", NULL),
		     "ema run: --set serving.max_batch: expected KEY=VALUE (see 'ema help run')");
	EXPECT_ERROR(parse("bench", "--backend", "gpu", NULL),
		     "ema bench: --backend gpu: expected sim or hw (see 'ema help bench')");
	/* --verify is the backend's to honour: refused where it would check
	 * nothing (the simulator), before anything runs */
	EXPECT_ERROR(parse("run", "--verify", NULL),
		     "ema run: --verify: the sim backend checks no moved pages (--verify goes with "
		     "--backend hw) (see 'ema help run')");
	EXPECT_ERROR(parse("run", "--verify", "--backend", "sim", NULL),
		     "ema run: --verify: the sim backend checks no moved pages (--verify goes with "
		     "--backend hw) (see 'ema help run')");
	CU_ASSERT_EQUAL(parse("run", "--verify", "--hw", NULL), EMA_OK);
	CU_ASSERT_EQUAL(parse("run", "--backend", "hw", "--verify", "--backend", "hw", NULL), EMA_OK);
	/* bench --runs N: 1 to 99, the default left 0 for bench to choose */
	CU_ASSERT_EQUAL_FATAL(parse("bench", "--runs", "99", NULL), EMA_OK);
	CU_ASSERT_EQUAL(args.runs, 99);
	CU_ASSERT_EQUAL_FATAL(parse("bench", NULL), EMA_OK);
	CU_ASSERT_EQUAL(args.runs, 0);
	EXPECT_ERROR(parse("bench", "--runs", "0", NULL),
		     "ema bench: --runs 0: expected a number from 1 to 99 (see 'ema help bench')");
	EXPECT_ERROR(parse("bench", "--runs", "100", NULL),
		     "ema bench: --runs 100: expected a number from 1 to 99 (see 'ema help bench')");
	EXPECT_ERROR(parse("bench", "--runs", "3x", NULL),
		     "ema bench: --runs 3x: expected a number from 1 to 99 (see 'ema help bench')");
	EXPECT_ERROR(parse("run", "--runs", "3", NULL),
		     "ema run: unknown option --runs (see 'ema help run')");
	EXPECT_ERROR(parse("run", "extra", NULL),
		     "ema run: unexpected argument extra (see 'ema help run')");
	EXPECT_ERROR(parse("list", "nothing", NULL),
		     "ema list: unexpected argument nothing; expected policies, models, hardware, "
		     "backends or figures (see 'ema help list')");
	EXPECT_ERROR(parse("list", "models", "figures", NULL),
		     "ema list: unexpected argument figures (see 'ema help list')");
	/* --help ends the parsing: what comes before it is still checked */
	CU_ASSERT_EQUAL(parse("validate", "--seed", "3", "--help", "--bogus", NULL), EMA_OK);
	CU_ASSERT(args.help);
	CU_ASSERT_EQUAL(parse("validate", "--bogus", "--help", NULL), EMA_ERR_INPUT);
}

/* The limits: 256 --set and --seed in all, 8 --vary. */
static void test_limits(void)
{
	static char *argv[2 * 258 + 1];
	int argc = 0;

	argv[argc++] = "run";
	for (int i = 0; i < 257; i++) {
		argv[argc++] = i % 2 ? "--seed" : "--set";
		argv[argc++] = i % 2 ? "1" : "a=1";
	}
	CU_ASSERT_EQUAL(ema_cli_parse(&ema_cmd_run, argc - 2, argv, &args, &err), EMA_OK);
	CU_ASSERT_EQUAL(args.n_sets, 256);
	CU_ASSERT_EQUAL(ema_cli_parse(&ema_cmd_run, argc, argv, &args, &err), EMA_ERR_INPUT);
	CU_ASSERT_STRING_EQUAL(err.msg, "ema run: --set and --seed: at most 256 in all "
			       "(see 'ema help run')");
	argc = 0;
	argv[argc++] = "sweep";
	for (int i = 0; i < 9; i++) {
		argv[argc++] = "--vary";
		argv[argc++] = "seed=1,2";
	}
	CU_ASSERT_EQUAL(ema_cli_parse(&ema_cmd_sweep, argc - 2, argv, &args, &err), EMA_OK);
	CU_ASSERT_EQUAL(args.n_vary, 8);
	CU_ASSERT_EQUAL(ema_cli_parse(&ema_cmd_sweep, argc, argv, &args, &err), EMA_ERR_INPUT);
	CU_ASSERT_STRING_EQUAL(err.msg, "ema sweep: --vary: at most 8 keys (see 'ema help sweep')");
}

/* True when text names the option word (-c, --config) as a whole word. */
static bool mentions(const char *text, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = strstr(text, word); p != NULL; p = strstr(p + 1, word))
		if ((p == text || strchr(" [{|", p[-1]) != NULL) &&
		    (p[n] == '\0' || strchr("abcdefghijklmnopqrstuvwxyz-", p[n]) == NULL))
			return true;
	return false;
}

/* Each command's usage line names each of its options, short or long,
 * and no other; every command takes --help; every common option keeps
 * its spelling (one definition per name). */
static void test_table(void)
{
	for (int i = 0; ema_cli_table[i] != NULL; i++) {
		const struct ema_cli_cmd *cmd = ema_cli_table[i];
		bool has_help = false;

		CU_ASSERT_PTR_EQUAL(ema_cli_find(cmd->name), cmd);
		CU_ASSERT(strlen(cmd->summary) + 13 <= 79);
		for (const struct ema_cli_optuse *u = cmd->options; u->id != EMA_OPT_NONE; u++) {
			const struct ema_cli_optdef *d = ema_cli_optdef(u->id);
			char lng[64], shrt[8] = "";

			CU_ASSERT_PTR_NOT_NULL_FATAL(d);
			if (u->id == EMA_OPT_HELP) {
				has_help = true;
				continue;
			}
			snprintf(lng, sizeof lng, "--%s", d->name);
			if ((int)d->id < 256)
				snprintf(shrt, sizeof shrt, "-%c", (int)d->id);
			if (!mentions(cmd->usage, lng) && (shrt[0] == '\0' || !mentions(cmd->usage, shrt))) {
				fprintf(stderr, "usage of %s lacks %s\n", cmd->name, lng);
				CU_FAIL("an option missing from its usage line");
			}
		}
		CU_ASSERT(has_help);
		/* every option word in the usage line is one of the command's */
		for (const char *p = strchr(cmd->usage, '-'); p != NULL; p = strchr(p + 1, '-')) {
			char word[64];
			bool known = false;

			if (p > cmd->usage && strchr(" [{|", p[-1]) == NULL)
				continue;
			sscanf(p, "%63[-a-z]", word);
			for (const struct ema_cli_optuse *u = cmd->options; u->id != EMA_OPT_NONE; u++) {
				const struct ema_cli_optdef *d = ema_cli_optdef(u->id);
				char lng[64], shrt[8] = "";

				snprintf(lng, sizeof lng, "--%s", d->name);
				if ((int)d->id < 256)
					snprintf(shrt, sizeof shrt, "-%c", (int)d->id);
				known = known || strcmp(word, lng) == 0 || strcmp(word, shrt) == 0;
			}
			if (!known) {
				fprintf(stderr, "usage of %s names %s, not one of its options\n",
					cmd->name, word);
				CU_FAIL("a usage line names an option the command does not take");
			}
			p += strlen(word) - 1;
		}
	}
	for (const struct ema_cli_optdef *a = ema_cli_options; a->id != EMA_OPT_NONE; a++)
		for (const struct ema_cli_optdef *b = a + 1; b->id != EMA_OPT_NONE; b++)
			CU_ASSERT(strcmp(a->name, b->name) != 0 && a->id != b->id);
}

/* What fn prints, in a string to free. */
static char *capture(void (*fn)(FILE *))
{
	/* static: the stream keeps their addresses until fclose */
	static char *buf;
	static size_t len;
	FILE *f;

	buf = NULL;
	f = open_memstream(&buf, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fn(f);
	fclose(f);
	return buf;
}

static const struct ema_cli_cmd *help_cmd;

static void print_help(FILE *f)
{
	ema_cli_print_help(help_cmd, f);
}

/* Help lines fit 79 columns (but for a word longer than the room), and
 * every option of the command is listed with its help. */
static void test_help_text(void)
{
	for (int i = 0; ema_cli_table[i] != NULL; i++) {
		char *text, *line, *save = NULL;

		help_cmd = ema_cli_table[i];
		text = capture(print_help);
		CU_ASSERT(strncmp(text, "usage: ema ", 11) == 0);
		for (const struct ema_cli_optuse *u = help_cmd->options; u->id != EMA_OPT_NONE; u++) {
			char lng[64];

			snprintf(lng, sizeof lng, "--%s", ema_cli_optdef(u->id)->name);
			CU_ASSERT_PTR_NOT_NULL(strstr(strstr(text, "\noptions:\n"), lng));
		}
		for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
			if (strlen(line) > 79 && strchr(line + strspn(line, " "), ' ') != NULL &&
			    strncmp(line, "  ema ", 6) != 0) {
				fprintf(stderr, "help of %s: too long: %s\n", help_cmd->name, line);
				CU_FAIL("a help line longer than 79 columns");
			}
		free(text);
	}
}

/* The man page: roff requests only where meant, every dash of an option
 * escaped (a plain "--" prints as an en dash in some fonts), every
 * command and common option present. */
static void test_man(void)
{
	static const char *const requests[] = {
		".\\\"", ".TH ", ".SH ", ".SS ", ".TP", ".PP", ".RS", ".RE", ".nf", ".fi", ".SY ",
		".YS", ".ad ", ".nh", ".nr ", NULL,
	};
	char *text = capture(ema_cli_print_man), *line, *save = NULL;
	int sections = 0;

	for (int i = 0; ema_cli_table[i] != NULL; i++) {
		char ss[64];

		snprintf(ss, sizeof ss, "\n.SS \"ema %s\"\n", ema_cli_table[i]->name);
		CU_ASSERT_PTR_NOT_NULL(strstr(text, ss));
	}
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "\\fB\\-c\\fR, \\fB\\-\\-config\\fR \\fIFILE\\fR\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "\\fB\\-\\-no\\-plots\\fR\n"));
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '.' || line[0] == '\'') {
			bool known = false;

			for (int k = 0; requests[k] != NULL; k++)
				known = known || strncmp(line, requests[k], strlen(requests[k])) == 0;
			if (!known)
				fprintf(stderr, "man: not a request of ours: %s\n", line);
			CU_ASSERT(known);
			sections += strncmp(line, ".SH ", 4) == 0;
			if (strncmp(line, ".\\\"", 3) == 0)
				continue;
		}
		if (strstr(line, "--") != NULL)
			fprintf(stderr, "man: unescaped dashes: %s\n", line);
		CU_ASSERT_PTR_NULL(strstr(line, "--"));
	}
	CU_ASSERT_EQUAL(sections, 8); /* NAME ... SEE ALSO */
	free(text);
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{"ema run: every option sets its field, --set and --seed in order", test_run_options},
		{"words that are not options, the command as typed", test_words},
		{"usage errors: the whole message, exit status 2", test_usage_errors},
		{"at most 256 --set and --seed, 8 --vary", test_limits},
		{"usage lines name exactly the commands' options", test_table},
		{"help lists every option within 79 columns", test_help_text},
		{"man page: requests, escaped dashes, every command", test_man},
		{NULL, NULL},
	};

	return ema_test_run("cli", cases);
}
