# src/local.mk: sources and tests of src/.
