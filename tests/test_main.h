/* test_main.h: the shared runner of every CUnit test program, turning
 * CUnit's counts into Automake's exit codes (0 pass, 77 skip, 99 hard
 * error, 1 failure) because CU_basic_run_tests() reports success even when
 * assertions fail. A test program defines its suites in a table and calls
 * ema_test_run(). */
#ifndef EMA_TEST_MAIN_H
#define EMA_TEST_MAIN_H

#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>

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

/* ../shared/traces beside the checkout, or NULL (tests then skip). */
static inline const char *ema_test_shared_traces(void)
{
	static char buf[4096];
	const char *env = getenv("EMA_SHARED_TRACES");
	FILE *f;

	if (env != NULL)
		snprintf(buf, sizeof buf, "%s", env);
	else
		snprintf(buf, sizeof buf, "%s/../shared/traces", ema_test_srcdir());
	{
		char probe[4200];
		snprintf(probe, sizeof probe, "%s/README.md", buf);
		f = fopen(probe, "r");
	}
	if (f == NULL)
		return NULL;
	fclose(f);
	return buf;
}

static inline int ema_test_run(const char *suite_name, const struct ema_test_case *cases)
{
	CU_pSuite suite;
	unsigned failed, ran;

	if (CU_initialize_registry() != CUE_SUCCESS)
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

#endif
