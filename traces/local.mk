# traces/local.mk: sources and tests of traces/.
