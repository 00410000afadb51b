# sim/local.mk: sources and tests of sim/.
