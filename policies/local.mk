# policies/local.mk: one file per policy, registered in policy_table.c.
libema_policies_a_CPPFLAGS = $(POLICIES_CPPFLAGS)
libema_policies_a_SOURCES = policies/policy.h policies/policy_table.c policies/static.c \
	policies/ideal.c policies/ideal_kv.c policies/pooled.c policies/pooled_tpot.c policies/pool.h policies/host_swap.c policies/remote_direct.c policies/ema.c \
	policies/lending.c policies/lending.h


if HAVE_CUNIT
check_PROGRAMS += tests/test_policies
TESTS += tests/test_policies
tests_test_policies_SOURCES = tests/test_policies.c tests/test_main.h tests/mock_platform.h
tests_test_policies_CFLAGS = $(TEST_CFLAGS)
tests_test_policies_LDADD = $(TEST_LIBS)
endif

# The worked example of policies/policy.h, built only for its test.
if HAVE_CUNIT
check_PROGRAMS += tests/test_example_policy
TESTS += tests/test_example_policy
tests_test_example_policy_SOURCES = tests/test_example_policy.c tests/example_policy.c \
	tests/test_main.h tests/mock_platform.h
tests_test_example_policy_CFLAGS = $(TEST_CFLAGS)
tests_test_example_policy_LDADD = $(TEST_LIBS)
endif

# The bounds (pooled, ideal, ideal_kv) by hand.
if HAVE_CUNIT
check_PROGRAMS += tests/test_bounds
TESTS += tests/test_bounds
tests_test_bounds_SOURCES = tests/test_bounds.c tests/test_main.h
tests_test_bounds_CFLAGS = $(TEST_CFLAGS)
tests_test_bounds_LDADD = $(TEST_LIBS)
endif

# ema's planner, one rule a test (includes policies/ema.c).
if HAVE_CUNIT
check_PROGRAMS += tests/test_planner
TESTS += tests/test_planner
tests_test_planner_SOURCES = tests/test_planner.c tests/test_main.h
tests_test_planner_CFLAGS = $(TEST_CFLAGS)
tests_test_planner_LDADD = $(TEST_LIBS)
endif

# The policies library on base/ alone: compiled with only base/ and
# policies/ on the include path and linked with libema_policies.a and
# libema_base.a only, so that a policy referencing serve/ (or any layer
# above base/) fails the build (doc/design.md, "Layers").
if HAVE_CUNIT
check_PROGRAMS += tests/test_policies_alone
TESTS += tests/test_policies_alone
tests_test_policies_alone_SOURCES = tests/test_policies_alone.c tests/test_main.h
tests_test_policies_alone_CPPFLAGS = $(POLICIES_CPPFLAGS)
tests_test_policies_alone_CFLAGS = $(TEST_CFLAGS)
tests_test_policies_alone_LDADD = libema_policies.a libema_base.a -lm $(CUNIT_LIBS)
endif
