# plots/local.mk: the figures of a run. The gnuplot scripts are compiled
# into ema (tools/embed.sh), so a run writes them beside its CSV files and
# renders them without an installed copy.
PLOTS_GP = plots/throughput.gp plots/latency_cdf.gp plots/memory.gp \
	plots/style.gp plots/load.gp plots/cdf.gp plots/capacity.gp plots/paths.gp

# cJSON: the run's config.json and run.json, for the titles
libema_plots_a_CPPFLAGS = $(PLOTS_CPPFLAGS) $(CJSON_CFLAGS)
libema_plots_a_SOURCES = plots/plots.c plots/plots.h plots/plot_data.c plots/plot_data.h
nodist_libema_plots_a_SOURCES = plots/plots_gp.c
BUILT_SOURCES += plots/plots_gp.c
CLEANFILES += plots/plots_gp.c
# rack.gp: the figure of tools/rack.sh (results/rack/), not a run's: not embedded
EXTRA_DIST += $(PLOTS_GP) plots/rack.gp \
	tests/data/plots/summary.csv \
	tests/data/plots/requests.csv \
	tests/data/plots/timeline.csv

# Sources are named through $(srcdir) so that VPATH builds (distcheck)
# read the scripts from the source tree and write the C file in the build
# tree.
plots/plots_gp.c: $(PLOTS_GP) $(top_srcdir)/tools/embed.sh
	$(AM_V_GEN)$(MKDIR_P) plots && \
	$(SHELL) $(top_srcdir)/tools/embed.sh ema_plots_scripts \
		$(srcdir)/plots/throughput.gp $(srcdir)/plots/latency_cdf.gp \
		$(srcdir)/plots/memory.gp $(srcdir)/plots/style.gp \
		$(srcdir)/plots/load.gp $(srcdir)/plots/cdf.gp $(srcdir)/plots/capacity.gp \
		$(srcdir)/plots/paths.gp \
		> $@.tmp && mv $@.tmp $@

if HAVE_CUNIT
check_PROGRAMS += tests/test_plots tests/test_plot_data
TESTS += tests/test_plots tests/test_plot_data
tests_test_plot_data_SOURCES = tests/test_plot_data.c tests/test_main.h
tests_test_plot_data_CFLAGS = $(TEST_CFLAGS)
tests_test_plot_data_LDADD = $(TEST_LIBS)
tests_test_plots_SOURCES = tests/test_plots.c
tests_test_plots_CFLAGS = $(TEST_CFLAGS)
tests_test_plots_LDADD = $(TEST_LIBS)
endif
