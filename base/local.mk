# base/local.mk: the policy core: error record, page ledger, platform
# interface, embedded data lookup.
libema_base_a_CPPFLAGS = $(BASE_CPPFLAGS)
libema_base_a_SOURCES = base/ema_error.c base/ema_error.h base/ledger.c base/ledger.h \
	base/platform.h base/platform.c base/embedded.c base/embedded.h base/ema_limits.h base/gpuset.h base/hardware.c \
	base/hardware.h base/knobs.h base/knobs.c base/step_cost.c base/step_cost.h base/keys.h base/readfile.c base/readfile.h base/wallclock.h base/eventq.c base/eventq.h \
	base/csvout.c base/csvout.h base/sortd.c base/sortd.h base/json_text.c base/json_text.h \
	base/simtime.c base/simtime.h

if HAVE_CUNIT
check_PROGRAMS += tests/test_ledger
TESTS += tests/test_ledger
tests_test_ledger_SOURCES = tests/test_ledger.c tests/test_main.h
tests_test_ledger_CFLAGS = $(TEST_CFLAGS)
tests_test_ledger_LDADD = $(TEST_LIBS)

check_PROGRAMS += tests/test_json_text
TESTS += tests/test_json_text
tests_test_json_text_SOURCES = tests/test_json_text.c tests/test_main.h
tests_test_json_text_CFLAGS = $(TEST_CFLAGS)
tests_test_json_text_LDADD = $(TEST_LIBS)

check_PROGRAMS += tests/test_csvout
TESTS += tests/test_csvout
tests_test_csvout_SOURCES = tests/test_csvout.c
tests_test_csvout_CFLAGS = $(TEST_CFLAGS)
tests_test_csvout_LDADD = $(TEST_LIBS)

check_PROGRAMS += tests/test_eventq
TESTS += tests/test_eventq
tests_test_eventq_SOURCES = tests/test_eventq.c
tests_test_eventq_CFLAGS = $(TEST_CFLAGS)
tests_test_eventq_LDADD = $(TEST_LIBS)
# the test makes chosen allocations fail (tests/test_eventq.c)
tests_test_eventq_LDFLAGS = -Wl,--wrap=malloc -Wl,--wrap=realloc -Wl,--wrap=free
endif

# Old against new event queue, interleaved (`make bench-eventq`; not a test:
# timings belong in no assertion).
check_PROGRAMS += tests/bench_eventq
tests_bench_eventq_SOURCES = tests/bench_eventq.c
tests_bench_eventq_CPPFLAGS = $(BASE_CPPFLAGS)
tests_bench_eventq_LDADD = libema_base.a
bench-eventq: tests/bench_eventq$(EXEEXT)
	nice tests/bench_eventq$(EXEEXT)
.PHONY: bench-eventq
