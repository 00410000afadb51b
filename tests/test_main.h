/* test_main.h: the shared runner of every CUnit test program, turning
 * CUnit's counts into Automake's exit codes (0 pass, 77 skip, 99 hard
 * error, 1 failure) because CU_basic_run_tests() reports success even when
 * assertions fail. A test program defines its suites in a table and calls
 * ema_test_run(). */
#ifndef EMA_TEST_MAIN_H
#define EMA_TEST_MAIN_H

#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct ema_test_case {
	const char *name;
	void (*fn)(void);
};

/* Path of a file in the source tree (tests/data/...); EMA_SRCDIR is set by
 * the build and by `make check`. */
static inline const char *ema_test_srcdir(void)
{
	const char *d = getenv("EMA_SRCDIR");
#ifdef EMA_SRCDIR
	if (d == NULL)
		d = EMA_SRCDIR;
#endif
	return d ? d : ".";
}

/* The temporary folder: $TMPDIR, else /tmp. */
static inline const char *ema_test_tmp(void)
{
	const char *t = getenv("TMPDIR");

	return t != NULL && t[0] != '\0' ? t : "/tmp";
}

/* Removes path and all it holds, links not followed (a test's own
 * scratch; src/outdir.h's ema_remove_tree is not linked into every test
 * program). */
static inline void ema_test_remove_tree(const char *path)
{
	struct stat st;
	DIR *d;
	struct dirent *de;

	if (lstat(path, &st) != 0)
		return;
	if (S_ISDIR(st.st_mode) && (d = opendir(path)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			char sub[4600];

			if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
				continue;
			if (snprintf(sub, sizeof sub, "%s/%s", path, de->d_name) < (int)sizeof sub)
				ema_test_remove_tree(sub);
		}
		closedir(d);
		rmdir(path);
		return;
	}
	unlink(path);
}

static char ema_test_scratch_dir[4096];

static inline void ema_test_scratch_remove(void)
{
	if (getenv("EMA_KEEP_TMP") != NULL) {
		fprintf(stderr, "EMA_KEEP_TMP: the test's files are kept in %s\n", ema_test_scratch_dir);
		return;
	}
	ema_test_remove_tree(ema_test_scratch_dir);
}

/* The test program's own temporary folder, made on the first call under
 * $TMPDIR (or /tmp), which TMPDIR then names for the rest of the program
 * (what the code under test writes to the temporary folder goes there
 * too), removed with all it holds when the program exits, whether its
 * tests passed or failed (EMA_KEEP_TMP=1 keeps it and says where): a
 * make check leaves nothing behind. NULL if it cannot be made. */
static inline const char *ema_test_scratch(void)
{
	if (ema_test_scratch_dir[0] != '\0')
		return ema_test_scratch_dir;
	snprintf(ema_test_scratch_dir, sizeof ema_test_scratch_dir, "%s/ema-test.XXXXXX",
		 ema_test_tmp());
	if (mkdtemp(ema_test_scratch_dir) == NULL) {
		fprintf(stderr, "cannot make a temporary folder under %s\n", ema_test_tmp());
		ema_test_scratch_dir[0] = '\0';
		return NULL;
	}
	atexit(ema_test_scratch_remove);
	setenv("TMPDIR", ema_test_scratch_dir, 1);
	return ema_test_scratch_dir;
}

/* The public traces (Azure conversation and code, Mooncake, ShareGPT
 * lengths), which the repository does not hold: the folder
 * EMA_SHARED_TRACES names, else ../shared/traces beside the source
 * folder; NULL when that folder has no README.md. Every test finds them
 * here and nowhere else, so that one variable hides them from all
 * (EMA_SHARED_TRACES=/nonexistent, or empty). */
static inline const char *ema_test_shared_traces(void)
{
	static char buf[4096];
	const char *env = getenv("EMA_SHARED_TRACES");
	char probe[4200];
	FILE *f;

	if (env != NULL)
		snprintf(buf, sizeof buf, "%s", env);
	else
		snprintf(buf, sizeof buf, "%s/../shared/traces", ema_test_srcdir());
	if (buf[0] == '\0')
		return NULL;
	snprintf(probe, sizeof probe, "%s/README.md", buf);
	f = fopen(probe, "r");
	if (f == NULL)
		return NULL;
	fclose(f);
	return buf;
}

/* Why ema_test_shared_traces() found nothing, as a skipping test says. */
static inline const char *ema_test_shared_traces_why(void)
{
	static char why[4400];
	const char *env = getenv("EMA_SHARED_TRACES");

	if (env != NULL && env[0] == '\0')
		snprintf(why, sizeof why, "the public traces are hidden (EMA_SHARED_TRACES is empty)");
	else if (env != NULL)
		snprintf(why, sizeof why, "no public traces in EMA_SHARED_TRACES=%s (no README.md there)",
			 env);
	else
		snprintf(why, sizeof why, "no public traces in %s/../shared/traces (set "
			 "EMA_SHARED_TRACES to the folder that holds them)", ema_test_srcdir());
	return why;
}

static inline int ema_test_run(const char *suite_name, const struct ema_test_case *cases)
{
	CU_pSuite suite;
	unsigned failed, ran;

	if (ema_test_scratch() == NULL || CU_initialize_registry() != CUE_SUCCESS)
		return 99;
	suite = CU_add_suite(suite_name, NULL, NULL);
	if (suite == NULL)
		return 99;
	for (const struct ema_test_case *c = cases; c->name != NULL; c++)
		if (CU_add_test(suite, c->name, c->fn) == NULL)
			return 99;
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
	ran = CU_get_number_of_tests_run();
	CU_cleanup_registry();
	if (ran == 0) {
		fprintf(stderr, "%s: no test ran\n", suite_name);
		return 99;
	}
	return failed ? 1 : 0;
}

/* A test program whose cases need the public traces is built twice from
 * its source (tests/local.mk): as itself, running `cases`, which need
 * nothing outside the repository, and with EMA_TEST_TRACES defined (as
 * NAME_traces), running `trace_cases`, which exits 77 with the reason
 * when the traces are not there, so that Automake reports SKIP, not a
 * PASS that ran nothing. */
static inline int ema_test_main(const char *suite_name, const struct ema_test_case *cases,
				const struct ema_test_case *trace_cases)
{
#ifdef EMA_TEST_TRACES
	(void)cases;
	if (ema_test_shared_traces() == NULL) {
		printf("%s (public traces): skipped: %s\n", suite_name, ema_test_shared_traces_why());
		return 77;
	}
	printf("%s (public traces): traces from %s\n", suite_name, ema_test_shared_traces());
	return ema_test_run(suite_name, trace_cases);
#else
	(void)trace_cases;
	return ema_test_run(suite_name, cases);
#endif
}

#endif
