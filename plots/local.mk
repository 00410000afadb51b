# plots/local.mk: sources and tests of plots/.
