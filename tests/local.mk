# tests/local.mk: sources and tests of tests/.
