# base/local.mk: the policy core: error record, page ledger, platform
# interface, embedded data lookup.
libema_a_SOURCES += base/ema_error.c base/ema_error.h base/ledger.c base/ledger.h \
	base/platform.h base/embedded.c base/embedded.h

if HAVE_CUNIT
check_PROGRAMS += tests/test_ledger
TESTS += tests/test_ledger
tests_test_ledger_SOURCES = tests/test_ledger.c tests/test_main.h
tests_test_ledger_CFLAGS = $(TEST_CFLAGS)
tests_test_ledger_LDADD = $(TEST_LIBS)
endif
