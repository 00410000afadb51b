# hw/local.mk: sources and tests of hw/, the hardware backend on real GPUs.
# With CUDA (HAVE_CUDA) the C sources include the toolkit's headers and the
# device code is compiled by nvcc into one object added to libema_hw.a; the
# runtime is linked statically (CUDA_LIBS) and the driver and cuBLAS are
# reached at run time, so ema starts on machines without either. Without
# CUDA, hw_none.c provides the same entry points, each saying why.
EXTRA_DIST += hw/hw_kernels.cu hw/hw_attn.cu tools/h200-attention.sh
.PHONY: ema-cuda-arch-check
libema_hw_a_CPPFLAGS = $(HW_CPPFLAGS) $(CUDA_CFLAGS)
libema_hw_a_SOURCES = hw/hw.h hw/hw_pattern.h hw/hw_split.h hw/hw_split.c \
	hw/hw_attn.h hw/hw_attn.c hw/hw_backend.c

if HAVE_CUDA
AM_CPPFLAGS += $(CUDA_CFLAGS)
libema_hw_a_SOURCES += hw/hw_platform.c hw/hw_util.c hw/calibrate.c hw/bench.c \
	hw/hw_cuda.h hw/hw_kernels.h hw/hw_priv.h hw/hw_attn_kernels.h hw/hw_attn_iter.c
libema_hw_a_LIBADD += hw/hw_kernels.$(OBJEXT) hw/hw_attn_dev.$(OBJEXT)
CLEANFILES += hw/hw_kernels.$(OBJEXT) hw/hw_attn_dev.$(OBJEXT) hw/hw_kernels.arch
# CUDA_ARCH (configure's, default sm_90; `make CUDA_ARCH=sm_80` overrides
# it for one build): its machine code plus its PTX, so newer GPUs can JIT
# it. hw/hw_kernels.arch holds the architecture of the last build and
# changes only with it, so that a new CUDA_ARCH rebuilds the kernels.
EMA_NVCCFLAGS = -std=c++17 -O3 \
	-Xcompiler -Wall,-Wextra,-Wno-unused-parameter,-Werror -Werror all-warnings
hw/hw_kernels.arch: ema-cuda-arch-check
	@$(MKDIR_P) hw && echo '$(CUDA_ARCH)' > $@.tmp && \
	if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv -f $@.tmp $@; fi
# sm_NN or sm_NNx (sm_90a), else nvcc's error would come far from the cause
ema-cuda-arch-check:
	@case '$(CUDA_ARCH)' in \
	sm_[0-9][0-9]|sm_[0-9][0-9][0-9]|sm_[0-9][0-9][a-z]|sm_[0-9][0-9][0-9][a-z]) ;; \
	*) echo "CUDA_ARCH=$(CUDA_ARCH): expected sm_NN, such as sm_90 or sm_80" >&2; exit 2 ;; \
	esac
hw/hw_kernels.$(OBJEXT): $(srcdir)/hw/hw_kernels.cu $(srcdir)/hw/hw_kernels.h \
		$(srcdir)/hw/hw_pattern.h $(srcdir)/hw/hw_split.h hw/hw_kernels.arch
	$(AM_V_GEN)$(MKDIR_P) hw && arch='$(CUDA_ARCH)' && \
	$(NVCC) -ccbin $(CC) $(EMA_NVCCFLAGS) \
		-gencode arch=compute_$${arch#sm_},code=$$arch \
		-gencode arch=compute_$${arch#sm_},code=compute_$${arch#sm_} \
		$(NVCCFLAGS) -I$(srcdir)/hw -c $(srcdir)/hw/hw_kernels.cu -o $@
hw/hw_attn_dev.$(OBJEXT): $(srcdir)/hw/hw_attn.cu $(srcdir)/hw/hw_attn_kernels.h \
		$(srcdir)/hw/hw_attn.h $(srcdir)/hw/hw_pattern.h hw/hw_kernels.arch
	$(AM_V_GEN)$(MKDIR_P) hw && arch='$(CUDA_ARCH)' && \
	$(NVCC) -ccbin $(CC) $(EMA_NVCCFLAGS) \
		-gencode arch=compute_$${arch#sm_},code=$$arch \
		-gencode arch=compute_$${arch#sm_},code=compute_$${arch#sm_} \
		$(NVCCFLAGS) -I$(srcdir)/hw -c $(srcdir)/hw/hw_attn.cu -o $@
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
# remote attention's plain C (no GPU): geometry, merge, plan, reference
check_PROGRAMS += tests/test_hw_attn_ref
TESTS += tests/test_hw_attn_ref
tests_test_hw_attn_ref_SOURCES = tests/test_hw_attn_ref.c
tests_test_hw_attn_ref_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/hw
tests_test_hw_attn_ref_CFLAGS = $(TEST_CFLAGS)
tests_test_hw_attn_ref_LDADD = $(TEST_LIBS)
# remote attention on a GPU: kernels against the reference, the platform's
# compute path, its integrity checks and errors (skips without a GPU)
check_PROGRAMS += tests/test_hw_attn
TESTS += tests/test_hw_attn
tests_test_hw_attn_SOURCES = tests/test_hw_attn.c
tests_test_hw_attn_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/hw
tests_test_hw_attn_CFLAGS = $(TEST_CFLAGS)
tests_test_hw_attn_LDADD = $(TEST_LIBS)
endif
