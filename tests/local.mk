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

# The cases on the public traces (../shared/traces beside the source
# folder, or the folder EMA_SHARED_TRACES names; tests/test_main.h finds
# them): three programs built again from their sources with
# EMA_TEST_TRACES, each running only those cases, and skipped (exit 77,
# with the reason) without the traces, so that the programs above need
# nothing outside the repository. EMA_SHARED_TRACES=/nonexistent hides
# the traces from every test.
if HAVE_CUNIT
check_PROGRAMS += tests/test_workload_traces tests/test_policies_traces tests/test_leap_traces
TESTS += tests/test_workload_traces tests/test_policies_traces tests/test_leap_traces
tests_test_workload_traces_SOURCES = tests/test_workload.c tests/test_main.h
tests_test_workload_traces_CFLAGS = $(TEST_CFLAGS) -DEMA_TEST_TRACES
tests_test_workload_traces_LDADD = $(TEST_LIBS)
tests_test_policies_traces_SOURCES = tests/test_policies.c tests/test_main.h tests/mock_platform.h
tests_test_policies_traces_CFLAGS = $(TEST_CFLAGS) -DEMA_TEST_TRACES
tests_test_policies_traces_LDADD = $(TEST_LIBS)
tests_test_leap_traces_SOURCES = tests/test_leap.c tests/test_main.h tests/random_scenario.h
tests_test_leap_traces_CFLAGS = $(TEST_CFLAGS) -DEMA_TEST_TRACES
tests_test_leap_traces_LDADD = $(TEST_LIBS)
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

# `ema sweep --sbatch` on a real one-node Slurm (tests/test_slurm.sh): it
# installs slurm-wlm and munge when missing and starts their daemons,
# which make check must not do, so it is a target of its own, which
# .ci/run calls after make check. It passes, or says why it skipped
# (not root, no packages, daemons that do not start) and exits 0;
# anything else fails.
check-slurm: ema$(EXEEXT)
	@EMA_SRCDIR='$(abs_top_srcdir)' EMA=./ema$(EXEEXT) $(SHELL) $(srcdir)/tests/test_slurm.sh; \
	rc=$$?; case $$rc in \
	0) echo "PASS: tests/test_slurm.sh";; \
	77) echo "SKIP: tests/test_slurm.sh";; \
	*) echo "FAIL: tests/test_slurm.sh (exit $$rc)"; exit 1;; \
	esac
.PHONY: check-slurm
