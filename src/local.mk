# src/local.mk: the command line: experiments, outputs, subcommands.
libema_a_SOURCES += src/experiment.c src/experiment.h src/bench.c src/bench.h \
	src/validate.c src/validate.h


bench: ema$(EXEEXT)
	./ema$(EXEEXT) bench --trace $(abs_top_srcdir)/../shared/traces/AzureLLMInferenceTrace_conv.csv
.PHONY: bench
