# src/local.mk: the command line: experiments, outputs, subcommands.
libema_src_a_CPPFLAGS = $(SRC_CPPFLAGS)
libema_src_a_SOURCES = src/experiment.c src/experiment.h src/bench.c src/bench.h \
	src/validate.c src/validate.h src/sweep.c src/sweep.h \
	src/outdir.c src/outdir.h src/backends.c src/backends.h


bench: ema$(EXEEXT)
	./ema$(EXEEXT) bench --trace $(abs_top_srcdir)/../shared/traces/AzureLLMInferenceTrace_conv.csv
.PHONY: bench

if HAVE_CUNIT
check_PROGRAMS += tests/test_experiment tests/test_outdir tests/test_leap
TESTS += tests/test_experiment tests/test_outdir tests/test_leap tests/test_cli.sh
tests_test_leap_SOURCES = tests/test_leap.c tests/test_main.h
tests_test_leap_CFLAGS = $(TEST_CFLAGS)
tests_test_leap_LDADD = $(TEST_LIBS)
tests_test_experiment_SOURCES = tests/test_experiment.c tests/test_main.h
tests_test_experiment_CFLAGS = $(TEST_CFLAGS)
tests_test_experiment_LDADD = $(TEST_LIBS)
tests_test_outdir_SOURCES = tests/test_outdir.c tests/test_main.h
tests_test_outdir_CFLAGS = $(TEST_CFLAGS)
tests_test_outdir_LDADD = $(TEST_LIBS)
endif
EXTRA_DIST += tests/test_cli.sh tests/data/cli/one_request.json tests/data/cli/trace_ok.csv \
	tests/data/cli/trace_bad_row.csv tests/data/cli/trace_backwards.csv \
	tests/data/cli/trace_empty.csv
