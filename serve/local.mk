# serve/local.mk: sources and tests of serve/.
