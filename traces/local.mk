# traces/local.mk: sources and tests of traces/ (trace readers, request
# generators, stream seeds) and the small fixtures its tests read.
libema_traces_a_CPPFLAGS = $(TRACES_CPPFLAGS) $(GSL_CFLAGS)
libema_traces_a_SOURCES = traces/workload.h traces/workload_priv.h \
	traces/trace_read.c traces/generate.c traces/seed.c

EXTRA_DIST += tests/data/traces/azure_2023.csv \
	tests/data/traces/azure_2024.csv \
	tests/data/traces/vidur.csv \
	tests/data/traces/burstgpt.csv \
	tests/data/traces/mooncake.jsonl \
	tests/data/traces/lengths.csv

if HAVE_CUNIT
check_PROGRAMS += tests/test_workload
TESTS += tests/test_workload
tests_test_workload_SOURCES = tests/test_workload.c
tests_test_workload_CFLAGS = $(TEST_CFLAGS)
tests_test_workload_LDADD = $(TEST_LIBS)
endif
