# hw/local.mk: sources and tests of hw/.
