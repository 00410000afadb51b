# serve/local.mk: the serving model (continuous batching) and the cost model.
libema_serve_a_CPPFLAGS = $(SERVE_CPPFLAGS)
libema_serve_a_SOURCES = serve/engine.c serve/engine.h serve/engine_priv.h serve/work.c serve/work.h

if HAVE_CUNIT
check_PROGRAMS += tests/test_engine
TESTS += tests/test_engine
tests_test_engine_SOURCES = tests/test_engine.c tests/test_main.h tests/mock_platform.h
tests_test_engine_CFLAGS = $(TEST_CFLAGS)
tests_test_engine_LDADD = $(TEST_LIBS)
check_PROGRAMS += tests/test_stream
TESTS += tests/test_stream
tests_test_stream_SOURCES = tests/test_stream.c tests/test_main.h tests/mock_platform.h
tests_test_stream_CFLAGS = $(TEST_CFLAGS)
tests_test_stream_LDADD = $(TEST_LIBS)
endif

# The charges of the honest model (issue 33), by hand.
if HAVE_CUNIT
check_PROGRAMS += tests/test_charges
TESTS += tests/test_charges
tests_test_charges_SOURCES = tests/test_charges.c tests/test_main.h tests/mock_platform.h
tests_test_charges_CFLAGS = $(TEST_CFLAGS)
tests_test_charges_LDADD = $(TEST_LIBS)
endif

# Extreme but valid input: every documented range at both ends, the
# limits of simulated time and of page counts, a random walk over extreme
# hardware and model figures (issue 32); and the same from the command line.
if HAVE_CUNIT
check_PROGRAMS += tests/test_limits
TESTS += tests/test_limits
tests_test_limits_SOURCES = tests/test_limits.c tests/test_main.h
tests_test_limits_CFLAGS = $(TEST_CFLAGS)
tests_test_limits_LDADD = $(TEST_LIBS)
endif
TESTS += tests/test_extremes.sh
EXTRA_DIST += tests/test_extremes.sh
