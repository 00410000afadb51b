# hw/local.mk: sources and tests of hw/, the hardware backend on real GPUs.
# With CUDA (HAVE_CUDA) the C sources include the toolkit's headers and the
# device code is compiled by nvcc into one object added to libema_hw.a; the
# runtime is linked statically (CUDA_LIBS) and the driver and cuBLAS are
# reached at run time, so ema starts on machines without either. Without
# CUDA, hw_none.c provides the same entry points, each saying why.
EXTRA_DIST += hw/hw_kernels.cu
libema_hw_a_CPPFLAGS = $(HW_CPPFLAGS) $(CUDA_CFLAGS)
libema_hw_a_SOURCES = hw/hw.h hw/hw_pattern.h hw/hw_split.h hw/hw_split.c

if HAVE_CUDA
AM_CPPFLAGS += $(CUDA_CFLAGS)
libema_hw_a_SOURCES += hw/hw_platform.c hw/hw_util.c hw/calibrate.c hw/bench.c \
	hw/hw_cuda.h hw/hw_kernels.h
libema_hw_a_LIBADD += hw/hw_kernels.$(OBJEXT)
CLEANFILES += hw/hw_kernels.$(OBJEXT)
# sm_90 machine code plus compute_90 PTX, so newer GPUs can JIT it.
EMA_NVCCFLAGS = -std=c++17 -O3 \
	-gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
	-Xcompiler -Wall,-Wextra,-Wno-unused-parameter,-Werror -Werror all-warnings
hw/hw_kernels.$(OBJEXT): $(srcdir)/hw/hw_kernels.cu $(srcdir)/hw/hw_kernels.h \
		$(srcdir)/hw/hw_pattern.h $(srcdir)/hw/hw_split.h
	$(AM_V_GEN)$(MKDIR_P) hw && \
	$(NVCC) -ccbin $(CC) $(EMA_NVCCFLAGS) $(NVCCFLAGS) -I$(srcdir)/hw \
		-c $(srcdir)/hw/hw_kernels.cu -o $@
else
libema_hw_a_SOURCES += hw/hw_none.c
endif

if HAVE_CUNIT
check_PROGRAMS += tests/test_hw
TESTS += tests/test_hw
tests_test_hw_SOURCES = tests/test_hw.c
tests_test_hw_CFLAGS = $(TEST_CFLAGS)
tests_test_hw_LDADD = $(TEST_LIBS)
check_PROGRAMS += tests/test_hw_split
TESTS += tests/test_hw_split
tests_test_hw_split_SOURCES = tests/test_hw_split.c
tests_test_hw_split_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/hw
tests_test_hw_split_CFLAGS = $(TEST_CFLAGS)
tests_test_hw_split_LDADD = libema_hw.a -lm $(CUNIT_LIBS)
endif
