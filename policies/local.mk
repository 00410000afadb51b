# policies/local.mk: sources and tests of policies/.
