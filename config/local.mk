# config/local.mk: sources and tests of config/, and the generated C files
# that carry profiles/ and scenarios/default.json inside the program.
libema_config_a_CPPFLAGS = $(CONFIG_CPPFLAGS)
libema_config_a_SOURCES = config/config.c config/config.h config/config_internal.h \
	config/config_keys.c config/json_pos.c config/profile.c config/reference.c

EMA_CONFIG_HW_JSON = profiles/hardware/h200x2.json profiles/hardware/h200x2_hw.json \
	profiles/hardware/h200x8.json \
	profiles/hardware/h100x8.json profiles/hardware/a100x4_40gb.json \
	profiles/hardware/a100x8_80gb.json profiles/hardware/b200x8.json \
	profiles/hardware/gb200nvl72.json profiles/hardware/l40sx8.json
EMA_CONFIG_MODEL_JSON = profiles/models/llama-2-7b.json profiles/models/llama-2-13b.json \
	profiles/models/llama-2-70b.json profiles/models/llama-3-8b.json \
	profiles/models/llama-3-70b.json profiles/models/opt-13b.json \
	profiles/models/opt-30b.json
EMA_CONFIG_GEN = config/hw_data.c config/model_data.c config/scenario_data.c

nodist_libema_config_a_SOURCES = $(EMA_CONFIG_GEN)
BUILT_SOURCES += $(EMA_CONFIG_GEN)
CLEANFILES += $(EMA_CONFIG_GEN)
EXTRA_DIST += $(EMA_CONFIG_HW_JSON) $(EMA_CONFIG_MODEL_JSON) \
	scenarios/default.json tools/embed.sh \
	tests/data/config/full.json tests/data/config/malformed.json \
	tests/data/config/unknown_key.json tests/data/config/model_too_big.json \
	tests/data/config/hw_small.json tests/data/config/hw_unsorted.json \
	tests/data/config/with_paths.json

# Inputs are named relative to the source tree so that VPATH builds read
# them from $(srcdir); embed.sh keeps only basenames.
config/hw_data.c: $(EMA_CONFIG_HW_JSON) tools/embed.sh
	$(AM_V_GEN)$(MKDIR_P) config && files= && \
	for f in $(EMA_CONFIG_HW_JSON); do files="$$files $(srcdir)/$$f"; done && \
	$(SHELL) $(srcdir)/tools/embed.sh ema_config_hw_files $$files > $@-t && \
	mv -f $@-t $@

config/model_data.c: $(EMA_CONFIG_MODEL_JSON) tools/embed.sh
	$(AM_V_GEN)$(MKDIR_P) config && files= && \
	for f in $(EMA_CONFIG_MODEL_JSON); do files="$$files $(srcdir)/$$f"; done && \
	$(SHELL) $(srcdir)/tools/embed.sh ema_config_model_files $$files > $@-t && \
	mv -f $@-t $@

# config.h declares the default scenario as `const char
# ema_config_default_json[]`: the first array embed.sh writes is renamed to
# that (the file must stay ASCII, which tests/test_config checks).
config/scenario_data.c: scenarios/default.json tools/embed.sh
	$(AM_V_GEN)$(MKDIR_P) config && \
	$(SHELL) $(srcdir)/tools/embed.sh ema_config_scenario_files \
		$(srcdir)/scenarios/default.json > $@-e && \
	sed -e 's/^static const unsigned char ema_config_scenario_files_0\[\]/const char ema_config_default_json[]/' \
	    -e 's/(const char \*)ema_config_scenario_files_0/ema_config_default_json/' \
		$@-e > $@-t && rm -f $@-e && mv -f $@-t $@

# The key reference: doc/keys.md is tools/gen_keys's output, committed so
# that it reads on the web; `make keys-doc` refreshes it after a table
# changes, and tests/test_keys fails until it is refreshed.
noinst_PROGRAMS += tools/gen_keys
tools_gen_keys_SOURCES = tools/gen_keys.c
tools_gen_keys_CPPFLAGS = $(SERVE_CPPFLAGS)
tools_gen_keys_LDADD = $(EMA_LIBS)
EXTRA_DIST += doc/keys.md

keys-doc: tools/gen_keys$(EXEEXT)
	$(AM_V_GEN)./tools/gen_keys$(EXEEXT) > $(srcdir)/doc/keys.md-t && \
	mv -f $(srcdir)/doc/keys.md-t $(srcdir)/doc/keys.md
.PHONY: keys-doc

if HAVE_CUNIT
check_PROGRAMS += tests/test_keys
TESTS += tests/test_keys
tests_test_keys_SOURCES = tests/test_keys.c tests/test_main.h
tests_test_keys_CFLAGS = $(TEST_CFLAGS)
tests_test_keys_LDADD = $(TEST_LIBS)

check_PROGRAMS += tests/test_config
TESTS += tests/test_config
tests_test_config_SOURCES = tests/test_config.c tests/test_main.h
tests_test_config_CFLAGS = $(TEST_CFLAGS)
tests_test_config_LDADD = $(TEST_LIBS)
endif

# The policies' belief against the platform's truth (plan.*).
if HAVE_CUNIT
check_PROGRAMS += tests/test_plan
TESTS += tests/test_plan
tests_test_plan_SOURCES = tests/test_plan.c tests/test_main.h
tests_test_plan_CFLAGS = $(TEST_CFLAGS)
tests_test_plan_LDADD = $(TEST_LIBS)
endif
