/* hw_priv.h: what the files of the hw platform share (hw_platform.c,
 * and hw_attn_iter.c for remote attention): the platform's state, its
 * operations in flight and descriptor slots, and the helpers both use.
 * Private to hw/. */
#ifndef EMA_HW_PRIV_H
#define EMA_HW_PRIV_H

#include <stdbool.h>
#include <stdint.h>

#include "eventq.h"
#include "hw_attn.h"
#include "hw_cuda.h"
#include "hw_kernels.h"
#include "platform.h"

#define HW_MAX_GROUPS 256
/* Sampled checks look at about this many pages of a transfer. */
#define HW_SAMPLE_PAGES 16
#define HW_GIB (1024.0 * 1024.0 * 1024.0)

struct hw_attn_side;

struct hw_slot {
	struct ema_hwk_seg *h;   /* pinned host copy, written then uploaded */
	struct ema_hwk_seg *d;
	size_t cap;
	uint32_t *h_bad;
	uint32_t *d_bad;
	size_t bad_cap;
	int gpu;
	struct hw_slot *next_free;
	struct hw_slot *next_all;
};

enum hw_op_kind { HW_OP_ITER, HW_OP_XFER };

struct hw_op {
	enum hw_op_kind kind;
	int gpu;                 /* device of the events */
	uint64_t seq;
	cudaEvent_t start, end;
	struct hw_slot *slot;
	void *arg;
	ema_iteration_fn ifn;
	ema_transfer_fn tfn;
	/* iteration */
	int n_groups;
	bool staged;
	uint64_t remote_bytes;
	uint64_t spec_bytes;     /* of remote_bytes, copied for the next one */
	uint64_t lender_bytes[EMA_MAX_GPUS];
	uint64_t tags_at_start, xfers_at_start;
	int adopted;             /* groups whose copies the last one made */
	/* transfer */
	int src, dst;
	uint64_t bytes;
	enum ema_transfer_purpose purpose;
	int n_check;
	int32_t *chk_pages;      /* copies: the caller's arrays die with the call */
	uint64_t *chk_tags;
	int32_t *chk_gpus;       /* iteration: the lender of each checked page */
	cudaEvent_t chk_done;    /* iteration: its in-place check has landed */
	bool host_check;
	bool full_check;
	/* iteration with remote attention (hw_attn_iter.c): the (layer,
	 * sequence) pairs its check compares, the query heads of each, the
	 * query bytes sent to each lender (lender_bytes: partials back) */
	bool attn;
	int attn_n, attn_heads;
	int32_t *attn_layer, *attn_seq;
	uint64_t to_lender[EMA_MAX_GPUS];
	int64_t est_end;
	struct hw_op *next_free;
	struct hw_op *next_all;
};

struct hw_gpu {
	int sms;
	char *pool;
	uint64_t pool_pages;
	/* The content tag each pool page was last given (hw_tag_pages, or a
	 * transfer that carried tags), 0 where unknown: in-place reads of
	 * borrowed pages are checked against it as moves are. */
	uint64_t *page_tag;
	cudaStream_t s_comp;     /* iterations */
	cudaStream_t s_pref;     /* their prefetch copies */
	cudaStream_t s_peer;     /* transfers pulled into this GPU */
	cudaStream_t s_hin;      /* host -> this GPU */
	cudaStream_t s_hout;     /* this GPU -> host */
	cudaStream_t s_util;     /* fills and checks the caller waits for */
	cudaStream_t s_tag;      /* content written for the engine, not waited for */
	cudaEvent_t ev_tag;      /* after the last of those: moves wait on it */
	bool tagged;
	cudaEvent_t ev_up;
	cudaEvent_t ev_copied[HW_MAX_GROUPS];
	cudaEvent_t ev_done[HW_MAX_GROUPS];
	cudaEvent_t ev_cstart[HW_MAX_GROUPS]; /* for EMA_HW_TRACE: a copy began */
	uint64_t *sink;
	void *ga, *gb, *gc;      /* GEMM operands */
	cublasHandle_t blas;
	bool busy;
	/* Two descriptor slots, used in turn: the speculative copies of one
	 * iteration still read theirs while the next iteration uploads. */
	struct hw_slot *iter_slot[2];
	int iter_parity;
	/* Cross-iteration prefetch (as the simulator does): while its last
	 * groups compute, an iteration copies the first spec_groups groups
	 * of the same remote pages for the next one into the ring slots that
	 * follow its own, ring_next on. spec_mark[l] marks those pages of
	 * lender l (listed in spec_list) so the next iteration copies only
	 * pages it has new; writes to this GPU's pages wait for ev_spec_end,
	 * because a staging page may be freed and reused before the copy into
	 * it has landed. */
	int spec_groups, spec_layer_groups, ring_next;
	uint8_t *spec_mark[EMA_MAX_GPUS];
	int32_t *spec_list;      /* (lender, page) pairs */
	size_t n_spec, cap_spec;
	cudaEvent_t ev_spec_end;
	bool spec_recorded;
	uint64_t n_tag_calls, n_xfers; /* for EMA_HW_TRACE */
	struct hw_slot *free_slots;
	struct hw_op *free_ops;
	/* remote attention of this GPU's iterations (hw_attn_iter.c) */
	struct hw_attn_side *attn;
};

struct hw_platform {
	struct ema_platform base;
	int n_gpus;
	uint64_t page_bytes;
	bool verify;
	long trace_left;         /* EMA_HW_TRACE=N: print N staged iterations' group times */
	struct hw_gpu g[EMA_MAX_GPUS];
	char *host_pool;
	uint64_t host_pages;
	struct ema_hw_blas blas;
	bool have_blas;
	double hbm_bps;          /* for the memory- or compute-bound choice */
	double remote_bps;       /* one link, read in place: for the grid split */
	double flop_rate;
	struct ema_eventq timers;
	struct hw_op **active;
	size_t n_active, cap_active;
	struct hw_op **done;     /* scratch of one polling pass */
	size_t cap_done;
	struct hw_op *all_ops;
	struct hw_slot *all_slots;
	uint64_t next_seq;
	int64_t t0;
	int64_t last_ns;         /* time given to the last callback */
	bool stop;
	uint64_t events;
	struct ema_link_stats stats;
	uint64_t checked, corrupted;
	char last_err[EMA_ERROR_MSG_MAX];
	char blas_why[256];
	struct ema_platform_params params;
	/* remote attention (hw_attn_iter.c): the page geometry (made at the
	 * first such iteration), how a GPU waits for another's queries and
	 * partials, the driver's wait on a flag, a fault armed by a test, the
	 * outputs checked and found wrong, the steps run (their seeds) */
	struct ema_hwa_geom attn_geom;
	bool attn_geom_done;
	int attn_geom_rc;
	char attn_geom_why[EMA_ERROR_MSG_MAX];
	bool attn_flag;
	PFN_cuStreamWaitValue32_v11070 wait_value;
	bool attn_fault;
	uint64_t attn_checked, attn_corrupted;
	uint64_t attn_steps;
};

static inline struct hw_platform *hw_of(struct ema_platform *p)
{
	return (struct hw_platform *)p;
}

/* Keeps the message for ema_hw_last_error (iteration() and transfer()
 * have no error record) and returns code. */
int hw_fail(struct hw_platform *p, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define HW_TRY_OP(p, expr)                                                  \
	do {                                                                \
		cudaError_t e_ = (expr);                                    \
		if (e_ != cudaSuccess)                                      \
			return hw_fail((p), EMA_ERR_DEVICE, "%s:%d: %s: %s", \
				       __FILE__, __LINE__, #expr,           \
				       cudaGetErrorString(e_));             \
	} while (0)

/* Grids of an iteration's kernels (see hw_kernels.h for why). */
#define HW_PREFETCH_GRID(g) (EMA_HWK_PREFETCH_BLOCKS_PER_SM * (g)->sms)
#define HW_READ_GRID(g, staged) \
	(((staged) ? EMA_HWK_STAGED_READ_BLOCKS_PER_SM : EMA_HWK_READ_BLOCKS_PER_SM) * (g)->sms)

char *hw_page_addr(struct hw_platform *p, int gpu, int32_t page);
bool hw_page_ok(struct hw_platform *p, int gpu, int32_t page);
/* Grows an idle slot to nseg descriptors and nbad check words. */
int hw_slot_reserve(struct hw_platform *p, struct hw_slot *s, size_t nseg, size_t nbad);
struct hw_op *hw_op_get(struct hw_platform *p, int gpu);
void hw_op_put(struct hw_platform *p, struct hw_op *op);
int hw_activate(struct hw_platform *p, struct hw_op *op);
int hw_add_wrapped(struct ema_hwk_seg *s, int k, const char *base, uint64_t pool, uint64_t a,
		   uint64_t n);
int hw_gemm_cols(double flops);
int hw_issue_gemm(struct hw_platform *p, struct hw_gpu *g, int cols);
int hw_inplace_checks(struct hw_platform *p, const struct ema_iteration *it, struct hw_op *op);
bool hw_inplace_split(const struct hw_platform *p, const struct hw_gpu *g,
		      const struct ema_hwk_seg *segs, int n_segs, uint64_t chunks,
		      const int *lender_first, const int *lender_n, int n_lenders,
		      struct ema_hwk_parts *parts);
float hw_elapsed_ms(cudaEvent_t a, cudaEvent_t b);

/* Remote attention (hw_attn_iter.c). Whether an iteration has any: a
 * remote read with compute and pages. */
bool hw_attn_wanted(const struct ema_iteration *it);
/* The sync mode from EMA_HW_ATTN_SYNC and the driver's wait; at create. */
int hw_attn_setup(struct hw_platform *p, struct ema_error *err);
/* Starts an iteration with remote attention (validated by hw_iteration). */
int hw_attn_iteration(struct hw_platform *p, const struct ema_iteration *it,
		      ema_iteration_fn fn, void *arg);
/* The check of its outputs, once op->chk_done has landed. */
int hw_attn_finish(struct hw_platform *p, struct hw_op *op, struct ema_error *err);
/* Frees what the attention of every GPU holds; the devices are synced. */
void hw_attn_free(struct hw_platform *p);

#endif
