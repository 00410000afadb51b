# config/local.mk: sources and tests of config/.
