# sim/local.mk: sources and tests of sim/ (event queue, fluid link model,
# simulated platform).
libema_sim_a_CPPFLAGS = $(SIM_CPPFLAGS)
libema_sim_a_SOURCES = sim/sim.h sim/flownet.c sim/flownet.h sim/sim_platform.c sim/sim_backend.c \
	sim/timing.c sim/timing.h

if HAVE_CUNIT
check_PROGRAMS += tests/test_flownet
TESTS += tests/test_flownet
tests_test_flownet_SOURCES = tests/test_flownet.c
tests_test_flownet_CFLAGS = $(TEST_CFLAGS)
tests_test_flownet_LDADD = $(TEST_LIBS)

check_PROGRAMS += tests/test_sim_platform
TESTS += tests/test_sim_platform
tests_test_sim_platform_SOURCES = tests/test_sim_platform.c
tests_test_sim_platform_CFLAGS = $(TEST_CFLAGS)
tests_test_sim_platform_LDADD = $(TEST_LIBS)
endif
