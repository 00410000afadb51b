# src/local.mk: the command line: experiments, outputs, subcommands.
libema_src_a_CPPFLAGS = $(SRC_CPPFLAGS)
libema_src_a_SOURCES = src/experiment.c src/experiment.h src/bench.c \
	src/validate.c src/sweep.c src/sweep.h src/sweep_merge.c src/sweep_slurm.c src/capacity.c src/figures.c src/cmd_figures.c src/sha256.c src/sha256.h \
	src/outdir.c src/outdir.h src/rows.c src/rows.h \
	src/cli.c src/cli.h src/cmd_run.c src/cmd_config.c src/cmd_list.c src/cmd_calibrate.c \
	src/backends.c src/backends.h

# The manual page is written by `ema help --man` from the command table
# (src/cli.c) and kept in the source; tests/test_cli.sh fails when the two
# differ. The bash completion is installed under the command's name.
dist_man1_MANS = doc/ema.1
bashcompletiondir = $(datadir)/bash-completion/completions
EXTRA_DIST += tools/ema-completion.bash doc/cli.md
install-data-local:
	$(MKDIR_P) '$(DESTDIR)$(bashcompletiondir)'
	$(INSTALL_DATA) '$(srcdir)/tools/ema-completion.bash' '$(DESTDIR)$(bashcompletiondir)/ema'
uninstall-local:
	rm -f '$(DESTDIR)$(bashcompletiondir)/ema'

# A 200-point sweep with -j 2, killed with kill -9 half-way and resumed,
# against -j 1: too long for make check (doc/sweeps.md).
sweep-demo: ema$(EXEEXT)
	$(SHELL) $(srcdir)/tools/sweep-demo.sh ./ema$(EXEEXT)
.PHONY: sweep-demo
EXTRA_DIST += tools/sweep-demo.sh

# The paper's figures for the published scenarios (doc/sweeps.md):
# PAPER_OUT/SCENARIO/figures/.
PAPER_OUT = paper
paper: ema$(EXEEXT)
	$(SHELL) $(srcdir)/tools/paper.sh ./ema$(EXEEXT) $(PAPER_OUT)
.PHONY: paper
EXTRA_DIST += tools/paper.sh

# The speed figures of issue 12 (results/README.md), from the source
# folder, whose ../shared/traces/ holds the trace (skipped without it);
# BENCH_FLAGS=--runs 5, or --quick.
bench: ema$(EXEEXT)
	cd $(abs_top_srcdir) && $(abs_top_builddir)/ema$(EXEEXT) bench $(BENCH_FLAGS)
.PHONY: bench

if HAVE_CUNIT
check_PROGRAMS += tests/test_experiment tests/test_outdir tests/test_cli_table tests/test_sweep \
	tests/test_leap
TESTS += tests/test_experiment tests/test_outdir tests/test_cli_table tests/test_cli.sh \
	tests/test_sweep tests/test_sweep.sh tests/test_leap
tests_test_leap_SOURCES = tests/test_leap.c tests/test_main.h tests/random_scenario.h
tests_test_leap_CFLAGS = $(TEST_CFLAGS)
tests_test_leap_LDADD = $(TEST_LIBS)

tests_test_experiment_SOURCES = tests/test_experiment.c tests/test_main.h
tests_test_experiment_CFLAGS = $(TEST_CFLAGS)
tests_test_experiment_LDADD = $(TEST_LIBS)
tests_test_outdir_SOURCES = tests/test_outdir.c tests/test_main.h
tests_test_outdir_CFLAGS = $(TEST_CFLAGS)
tests_test_outdir_LDADD = $(TEST_LIBS)
tests_test_cli_table_SOURCES = tests/test_cli_table.c tests/test_main.h
tests_test_cli_table_CFLAGS = $(TEST_CFLAGS)
tests_test_cli_table_LDADD = $(TEST_LIBS)
tests_test_sweep_SOURCES = tests/test_sweep.c tests/test_main.h
tests_test_sweep_CFLAGS = $(TEST_CFLAGS)
tests_test_sweep_LDADD = $(TEST_LIBS)

# ema against static on random scenarios: a report (`make vs-static`),
# built with the tests so that it always compiles, not run by them.
check_PROGRAMS += tests/vs_static
tests_vs_static_SOURCES = tests/vs_static.c tests/test_main.h tests/random_scenario.h
tests_vs_static_CFLAGS = $(TEST_CFLAGS)
tests_vs_static_LDADD = $(TEST_LIBS)
endif
# ... whose report, pairing included, a short run checks
TESTS += tests/test_vs_static.sh
EXTRA_DIST += tests/test_vs_static.sh
# Random scenarios by the hundred, each run stepping and leaping, which
# must write the same files and must run (tests/test_leap.c, "random
# scenarios"): FUZZ_ROUNDS=300 of each generator from FUZZ_SEED=1 (a few
# minutes on 2 cores; needs CUnit). A failing round prints its --set
# options. The wide rounds run with synthetic loads in place of the
# traces' replays, then, with the public traces, those that replay one on
# them (tests/test_leap_traces; skipped without).
FUZZ_ROUNDS = 300
FUZZ_SEED = 1
fuzz-scenarios: tests/test_leap$(EXEEXT) tests/test_leap_traces$(EXEEXT)
	EMA_SRCDIR='$(abs_top_srcdir)' EMA_LEAP_ROUNDS=$(FUZZ_ROUNDS) EMA_LEAP_SEED=$(FUZZ_SEED) \
		EMA_WIDE_ROUNDS=$(FUZZ_ROUNDS) EMA_WIDE_SEED=$(FUZZ_SEED) tests/test_leap$(EXEEXT)
	EMA_SRCDIR='$(abs_top_srcdir)' EMA_WIDE_ROUNDS=$(FUZZ_ROUNDS) EMA_WIDE_SEED=$(FUZZ_SEED) \
		tests/test_leap_traces$(EXEEXT); rc=$$?; [ $$rc -eq 0 ] || [ $$rc -eq 77 ]
.PHONY: fuzz-scenarios
# Is ema ever worse than static? VS_ROUNDS random scenarios from VS_SEED
# (tests/vs_static.c), ema at its default protections: the tenants past
# the design's lines and the worst ratios (about 1 s a scenario; needs
# CUnit). VS_SET=KEY=VALUE adds a --set to every run; VS_AGAINST=KEY=VALUE
# runs ema again with it and pairs the two scenario by scenario;
# VS_SHOW=SEED prints the --set options of the scenario of that seed.
VS_ROUNDS = 100
VS_SEED = 1
VS_SET =
VS_AGAINST =
VS_SHOW =
vs-static: tests/vs_static$(EXEEXT)
	EMA_SRCDIR='$(abs_top_srcdir)' EMA_VS_ROUNDS=$(VS_ROUNDS) EMA_VS_SEED=$(VS_SEED) \
		EMA_VS_SET='$(VS_SET)' EMA_VS_AGAINST='$(VS_AGAINST)' \
		EMA_VS_SHOW='$(VS_SHOW)' tests/vs_static$(EXEEXT)
.PHONY: vs-static
EXTRA_DIST += tests/test_cli.sh tests/test_sweep.sh tests/test_slurm.sh tests/data/cli/one_request.json tests/data/cli/trace_ok.csv \
	tests/data/cli/trace_bad_row.csv tests/data/cli/trace_backwards.csv \
	tests/data/cli/trace_empty.csv
