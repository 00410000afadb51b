# sim/local.mk: sources and tests of sim/ (event queue, fluid link model,
# simulated platform).
libema_a_SOURCES += sim/eventq.c sim/eventq.h sim/sim.h \
	sim/flownet.c sim/flownet.h sim/sim_platform.c

if HAVE_CUNIT
check_PROGRAMS += tests/test_eventq
TESTS += tests/test_eventq
tests_test_eventq_SOURCES = tests/test_eventq.c
tests_test_eventq_CFLAGS = $(TEST_CFLAGS)
tests_test_eventq_LDADD = $(TEST_LIBS)

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
