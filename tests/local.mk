# tests/local.mk: sources and tests of tests/.

# The documentation's links, folder map and quoted default scenario.
TESTS += tests/test_docs.sh
EXTRA_DIST += tests/test_docs.sh

# The worked examples of doc/model.md and doc/policies.md, computed.
if HAVE_CUNIT
check_PROGRAMS += tests/test_model
TESTS += tests/test_model
tests_test_model_SOURCES = tests/test_model.c tests/test_main.h
tests_test_model_CFLAGS = $(TEST_CFLAGS)
tests_test_model_LDADD = $(TEST_LIBS)
endif

# ema's memos against fresh computations (includes policies/ema.c).
if HAVE_CUNIT
check_PROGRAMS += tests/test_ema_memo
TESTS += tests/test_ema_memo
tests_test_ema_memo_SOURCES = tests/test_ema_memo.c tests/test_main.h tests/mock_platform.h
tests_test_ema_memo_CFLAGS = $(TEST_CFLAGS)
tests_test_ema_memo_LDADD = $(TEST_LIBS)
endif

# The random scenarios draw the same with the traces as without
# (tests/random_scenario.h).
if HAVE_CUNIT
check_PROGRAMS += tests/test_random_scenario
TESTS += tests/test_random_scenario
tests_test_random_scenario_SOURCES = tests/test_random_scenario.c tests/test_main.h \
	tests/random_scenario.h
tests_test_random_scenario_CFLAGS = $(TEST_CFLAGS)
tests_test_random_scenario_LDADD = $(TEST_LIBS)
endif
