# tests/fuzz/local.mk: `make fuzz`, the libFuzzer harnesses of tests/fuzz/
# (README, "Sanitizers and fuzzing"). They are built by clang, not by the
# configured compiler, so the work is done by tests/fuzz/fuzz.mk, a GNU
# make file of its own; this rule hands it the library's sources and flags.
# make fuzz FUZZ_SECONDS=60 runs each harness a minute (FUZZ_SECONDS=0 only
# builds them); fuzz.mk lists its other settings.
EMA_FUZZ_FILES = tests/fuzz/fuzz.mk tests/fuzz/fuzz_common.h tests/fuzz/fuzz_config.c \
	tests/fuzz/fuzz_profile.c tests/fuzz/fuzz_trace.c
EXTRA_DIST += $(EMA_FUZZ_FILES) tests/fuzz/seeds tools/sanitize.sh

fuzz: $(BUILT_SOURCES)
	@$(MAKE) -f $(srcdir)/tests/fuzz/fuzz.mk SRCDIR='$(abs_top_srcdir)' \
		BUILDDIR='$(abs_top_builddir)' \
		LIB_SOURCES='$(libema_base_a_SOURCES) $(libema_traces_a_SOURCES) $(libema_config_a_SOURCES) $(nodist_libema_config_a_SOURCES) $(libema_policies_a_SOURCES) $(libema_serve_a_SOURCES)' \
		EMA_CPPFLAGS='$(AM_CPPFLAGS)' EMA_LIBS='$(GSL_LIBS) $(CJSON_LIBS) -lm' run
.PHONY: fuzz
