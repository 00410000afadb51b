# core/local.mk: sources and tests of core/.
