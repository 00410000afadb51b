# tests/fuzz/fuzz.mk: builds the libFuzzer harnesses of tests/fuzz/ with
# clang (-fsanitize=fuzzer,address,undefined) against the readers' own
# sources, seeds their corpora and runs each for FUZZ_SECONDS. A GNU make
# file of its own, not Automake's: `make fuzz` (tests/fuzz/local.mk) calls
# it with the library's source list and flags from the configured build:
#   SRCDIR BUILDDIR   absolute source and build folders
#   LIB_SOURCES       libema's sources (those of base/ config/ traces/
#                     policies/ serve/ are used)
#   EMA_CPPFLAGS EMA_LIBS
# Everything it makes is in $(FUZZ_DIR) (build-fuzz/, git-ignored).
# Settable from the make command line:
#   FUZZ_SECONDS  seconds per harness (default 60; 0 builds only)
#   FUZZ_CC       clang with libFuzzer (default clang-14, else clang)
#   FUZZ_TARGETS  harnesses to run (default all, see below)
#   FUZZ_JOBS     harnesses run at once (default 2; compiles follow -j)
#   FUZZ_FLAGS    extra libFuzzer flags, e.g. -runs=0 to replay the corpora

FUZZ_SECONDS = 60
FUZZ_CC := $(shell command -v clang-14 2>/dev/null || command -v clang 2>/dev/null || echo clang)
FUZZ_DIR = $(BUILDDIR)/build-fuzz
FUZZ_JOBS = 2
FUZZ_FLAGS =

TRACE_FORMATS = azure vidur burstgpt mooncake lengths auto
ALL_TARGETS = config profile $(addprefix trace_,$(TRACE_FORMATS))
FUZZ_TARGETS = $(ALL_TARGETS)

SAN = -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS = -std=gnu11 -g -O1 -fno-omit-frame-pointer $(SAN) \
	-DEMA_SRCDIR='"$(SRCDIR)"' $(EMA_CPPFLAGS) -I$(SRCDIR)/tests/fuzz

# The readers and what they use (config checks policy names against the
# registry): no CUDA, no simulator, no CLI.
LIB_C = $(filter base/%.c config/%.c traces/%.c policies/%.c serve/%.c,$(LIB_SOURCES))
LIB_O = $(patsubst %.c,$(FUZZ_DIR)/obj/%.o,$(LIB_C))
vpath %.c $(BUILDDIR) $(SRCDIR)

SHARED = $(firstword $(wildcard $(EMA_SHARED_TRACES) $(SRCDIR)/../shared/traces))

.PHONY: build run seeds
.DELETE_ON_ERROR:

build: $(addprefix $(FUZZ_DIR)/fuzz_,$(ALL_TARGETS)) $(FUZZ_DIR)/config.dict \
	$(FUZZ_DIR)/profile.dict $(FUZZ_DIR)/trace.dict

# First, whether the compiler can make a fuzzer at all, said plainly.
$(FUZZ_DIR)/cc-ok:
	@mkdir -p $(dir $@)
	@printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
		'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);' \
		'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return (int)(d == 0 && n); }' \
		> $(FUZZ_DIR)/cc-ok.c
	@$(FUZZ_CC) $(SAN) -fsanitize=fuzzer $(FUZZ_DIR)/cc-ok.c -o $(FUZZ_DIR)/cc-ok.bin 2>/dev/null || \
		{ echo "make fuzz: $(FUZZ_CC) cannot build a libFuzzer program; on Debian 12:" \
		       "apt-get install clang-14 libclang-rt-14-dev" >&2; exit 1; }
	@touch $@

# Library objects get coverage instrumentation but no fuzzer main.
$(FUZZ_DIR)/obj/%.o: %.c | $(FUZZ_DIR)/cc-ok
	@mkdir -p $(dir $@)
	@echo "  CLANG    $<"
	@$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(FUZZ_DIR)/libema-fuzz.a: $(LIB_O)
	@rm -f $@
	@ar rcs $@ $^

FUZZ_LINK = $(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -MMD -MP -MF $(FUZZ_DIR)/deps/$(notdir $@).d
$(FUZZ_DIR)/fuzz_config: $(SRCDIR)/tests/fuzz/fuzz_config.c $(FUZZ_DIR)/libema-fuzz.a
	@mkdir -p $(FUZZ_DIR)/deps
	@echo "  FUZZER   $@"
	@$(FUZZ_LINK) $< $(FUZZ_DIR)/libema-fuzz.a $(EMA_LIBS) -o $@
$(FUZZ_DIR)/fuzz_profile: $(SRCDIR)/tests/fuzz/fuzz_profile.c $(FUZZ_DIR)/libema-fuzz.a
	@mkdir -p $(FUZZ_DIR)/deps
	@echo "  FUZZER   $@"
	@$(FUZZ_LINK) $< $(FUZZ_DIR)/libema-fuzz.a $(EMA_LIBS) -o $@
# One binary per trace format, so that each gets its own time and corpus.
$(FUZZ_DIR)/fuzz_trace_%: $(SRCDIR)/tests/fuzz/fuzz_trace.c $(FUZZ_DIR)/libema-fuzz.a
	@mkdir -p $(FUZZ_DIR)/deps
	@echo "  FUZZER   $@"
	@$(FUZZ_LINK) -DEMA_FUZZ_FORMAT=EMA_TRACE_$(shell echo $* | tr a-z A-Z) \
		$< $(FUZZ_DIR)/libema-fuzz.a $(EMA_LIBS) -o $@

-include $(LIB_O:.o=.d) $(wildcard $(FUZZ_DIR)/deps/*.d)

# Dictionaries: the names the parsers compare against, taken from their
# sources (identifier-like string literals, and the CSV headers), so they
# follow the key tables as these change.
$(FUZZ_DIR)/config.dict: $(SRCDIR)/config/config.c $(SRCDIR)/config/config_keys.c \
		$(SRCDIR)/config/profile.c $(SRCDIR)/traces/trace_read.c
	@mkdir -p $(dir $@)
	@{ grep -oh '"[A-Za-z_][A-Za-z0-9_.]*"' $^; \
	   printf '%s\n' '"{"' '"}"' '"["' '"]"' '":"' '","' '"true"' '"false"' '"null"' \
		'"="' '"tenants.0."' '"tenants.1.workload."' '"policy."' '"serving."' \
		'"1e308"' '"-1"' '"0.5"' '"2147483648"'; } | sort -u > $@
$(FUZZ_DIR)/profile.dict: $(SRCDIR)/config/profile.c $(SRCDIR)/config/config_keys.c
	@mkdir -p $(dir $@)
	@{ grep -oh '"[A-Za-z_][A-Za-z0-9_.]*"' $^; \
	   printf '%s\n' '"{"' '"}"' '"["' '"]"' '":"' '","' '"bytes"' '"gbps"' \
		'"1e308"' '"-1"' '"0.5"'; } | sort -u > $@
$(FUZZ_DIR)/trace.dict: $(SRCDIR)/traces/trace_read.c
	@mkdir -p $(dir $@)
	@{ grep -oh '"[A-Za-z_][A-Za-z0-9_ ,]*"' $^; \
	   printf '%s\n' '"\x0d\x0a"' '"2023-11-16 18:15:46.6805900"' '"+00:00"' '"Z"' \
		'"1e9"' '"0.0000000005"' '"9999999"' '"10000001"' '"{\"timestamp\": "' \
		'", \"input_length\": "' '", \"output_length\": "' '"\xef\xbb\xbf"'; } | sort -u > $@

# Seed corpora, rebuilt at every run: the project's fixtures, and the
# first rows of each real trace when ../shared/traces is there (copied
# here, never into the source tree). New inputs found go to corpus/,
# which is kept between runs.
SEEDS = $(FUZZ_DIR)/seeds
seeds:
	@rm -rf $(SEEDS)
	@mkdir -p $(addprefix $(SEEDS)/,$(ALL_TARGETS))
	@cp $(SRCDIR)/tests/data/config/*.json $(SRCDIR)/tests/data/cli/*.json \
		$(SRCDIR)/scenarios/default.json $(SRCDIR)/scenarios/published/*.json \
		$(SEEDS)/config/
	@cp $(SRCDIR)/profiles/hardware/*.json $(SRCDIR)/profiles/models/*.json \
		$(SRCDIR)/tests/data/config/hw_*.json $(SEEDS)/profile/
	@cp $(SRCDIR)/tests/data/traces/azure_*.csv $(SRCDIR)/tests/data/cli/trace_*.csv \
		$(SEEDS)/trace_azure/
	@cp $(SRCDIR)/tests/data/traces/vidur.csv $(SEEDS)/trace_vidur/
	@cp $(SRCDIR)/tests/data/traces/burstgpt.csv $(SEEDS)/trace_burstgpt/
	@cp $(SRCDIR)/tests/data/traces/mooncake.jsonl $(SEEDS)/trace_mooncake/
	@cp $(SRCDIR)/tests/data/traces/lengths.csv $(SEEDS)/trace_lengths/
	@for t in azure vidur burstgpt mooncake lengths; do cp $(SEEDS)/trace_$$t/* $(SEEDS)/trace_auto/; done
	@if [ -n "$(SHARED)" ]; then \
		for f in $(SHARED)/*; do \
			case $$(basename "$$f") in \
			README*) continue;; \
			Azure*) d=trace_azure;; mooncake*) d=trace_mooncake;; sharegpt*) d=trace_lengths;; \
			*) d=;; esac; \
			head -n 20 "$$f" > $(SEEDS)/trace_auto/shared-$$(basename "$$f"); \
			[ -z "$$d" ] || cp $(SEEDS)/trace_auto/shared-$$(basename "$$f") $(SEEDS)/$$d/; \
		done; \
	fi

# Each harness reads its kept corpus first (where libFuzzer adds what it
# finds), then the seeds, then the committed inputs of tests/fuzz/seeds/NAME
# (inputs that once failed, and hand-made ones). Inputs are written to
# files in a RAM folder where there is one (three times the executions per
# second of a disk). A crash, leak, UB report or timeout fails make, after
# the other harnesses ran, with the input saved as $(FUZZ_DIR)/artifacts/NAME-*.
run: build seeds
	@mkdir -p $(FUZZ_DIR)/artifacts $(addprefix $(FUZZ_DIR)/corpus/,$(FUZZ_TARGETS))
	@if [ "$(FUZZ_SECONDS)" -gt 0 ]; then \
	  tmp=$$(mktemp -d /dev/shm/ema-fuzz.XXXXXX 2>/dev/null || mktemp -d $(FUZZ_DIR)/tmp.XXXXXX) && \
	  trap 'rm -rf "$$tmp"' EXIT && \
	  printf '%s\n' $(FUZZ_TARGETS) | TMPDIR=$$tmp EMA_SRCDIR=$(SRCDIR) \
	    xargs -P $(FUZZ_JOBS) -I{} sh -c ' \
	      echo "fuzz: {} for $(FUZZ_SECONDS) s"; \
	      $(FUZZ_DIR)/fuzz_{} -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
	        -max_len=8192 -print_final_stats=1 -dict=$(FUZZ_DIR)/$$(case {} in trace_*) echo trace;; *) echo {};; esac).dict \
	        -artifact_prefix=$(FUZZ_DIR)/artifacts/{}- $(FUZZ_FLAGS) \
	        $(FUZZ_DIR)/corpus/{} $(SEEDS)/{} \
	        $$([ -d $(SRCDIR)/tests/fuzz/seeds/{} ] && echo $(SRCDIR)/tests/fuzz/seeds/{}) \
	        > $(FUZZ_DIR)/{}.log 2>&1; rc=$$?; \
	      grep -E "^(stat::|#[0-9]+[[:space:]]+DONE|Done )" $(FUZZ_DIR)/{}.log | sed "s/^/fuzz: {}: /"; \
	      if [ $$rc -ne 0 ]; then echo "fuzz: {} FAILED (exit $$rc), see $(FUZZ_DIR)/{}.log:"; \
	        tail -n 60 $(FUZZ_DIR)/{}.log; exit 1; fi' || \
	  { echo "fuzz: a harness failed" >&2; exit 1; }; \
	fi
