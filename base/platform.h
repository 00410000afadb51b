/* platform.h: the one small interface under the serving model and the
 * policy core. It offers a clock, timers, iterations (GPU work of a batch)
 * and transfers (pages moved between GPUs or to the host). sim/ implements
 * it in simulated time with a cost model and a fluid link model; hw/
 * implements it on real GPUs in real time. Nothing above this header knows
 * which one runs. */
#ifndef EMA_PLATFORM_H
#define EMA_PLATFORM_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "ema_error.h"
#include "knobs.h"

#define EMA_HOST (-1) /* "gpu" index of host memory in transfers */

struct ema_platform;

/* Why pages move; platforms count bytes per purpose and link. */
enum ema_transfer_purpose {
	EMA_XFER_PREFETCH = 0, /* remote KV staged before use */
	EMA_XFER_RECLAIM,      /* lent pages moved back to their borrower */
	EMA_XFER_DEMOTE,       /* a borrower's request demoted to host memory by a reclaim */
	EMA_XFER_SWAP_OUT,     /* preempted request's KV to host */
	EMA_XFER_SWAP_IN,      /* and back */
	EMA_XFER_PURPOSES
};


/* A set of pages moved from one place to another in one operation.
 * Page numbers index the GPU's pool (page * page_bytes is the offset) or,
 * for EMA_HOST, the host pool (policy.host_gib per GPU, one numbering for
 * all: GPU g's tenant uses slots [g x slots per GPU, (g + 1) x ...)). Arrays are owned by the caller and
 * valid only during the call. */
struct ema_transfer {
	int src_gpu;                /* EMA_HOST for host memory */
	int dst_gpu;
	int n_pages;
	const int32_t *src_pages;
	const int32_t *dst_pages;
	uint64_t bytes;             /* usually n_pages * page_bytes */
	enum ema_transfer_purpose purpose;
	enum ema_copy_method method;
	/* integrity: content tag of each page, for the hw backend to check
	 * after the move; may be NULL. */
	const uint64_t *tags;
};

/* Remote KV read by one iteration, from one lender. */
struct ema_remote_read {
	int gpu;                    /* lender holding the pages */
	int n_pages;
	const int32_t *pages;       /* pages on the lender */
	uint64_t bytes;
};

/* The GPU work of one batch of one tenant: what a real step would compute
 * and read. The sim turns it into time with serve/costmodel; the hw backend
 * launches kernels that read these bytes and do these FLOPs. */
struct ema_iteration {
	int tenant;
	int gpu;
	int n_seqs;                 /* requests in the batch */
	int64_t prefill_tokens;
	int64_t decode_tokens;
	double flops;               /* linear layers + attention */
	double attention_flops;     /* the part quadratic in context */
	uint64_t weight_bytes;
	uint64_t kv_local_bytes;    /* KV read from local pages */
	uint64_t act_bytes;         /* activations written and read */
	int n_local_pages;
	const int32_t *local_pages; /* KV pages read locally (hw reads them) */
	/* Remote KV: with prefetch_depth > 0 it is staged into local memory
	 * layer group by group, depth groups ahead; with prefetch_depth == 0
	 * attention reads it in place over the link (remote_direct). */
	int layer_groups;
	int prefetch_depth;
	int n_remote;
	struct ema_remote_read remote[EMA_MAX_GPUS];
	enum ema_copy_method method;
	/* Local pages the policy set aside for staging (any order, not
	 * necessarily contiguous), or NULL. */
	const int32_t *staging_pages;
	int n_staging_pages;
};

struct ema_iteration_result {
	int64_t start_ns;
	int64_t end_ns;
	int64_t stall_ns;           /* time compute waited for prefetched data */
	uint64_t remote_bytes;      /* bytes that crossed the link for it */
};

typedef void (*ema_timer_fn)(void *arg, int64_t now_ns);
typedef void (*ema_iteration_fn)(void *arg, const struct ema_iteration_result *r);
typedef void (*ema_transfer_fn)(void *arg, int64_t now_ns);

/* Per-link totals a platform keeps for the summary. */
struct ema_link_stats {
	uint64_t bytes[EMA_MAX_GPUS + 1][EMA_MAX_GPUS + 1]; /* [src+1][dst+1], host at 0 */
	uint64_t bytes_by_purpose[EMA_XFER_PURPOSES];
};

struct ema_platform_ops {
	const char *name;                /* "sim" or "hw" */
	/* Current time in ns since the run began (simulated or real). */
	int64_t (*now)(struct ema_platform *p);
	/* Calls fn(arg, t) once, at time at_ns (>= now). */
	int (*timer)(struct ema_platform *p, int64_t at_ns, ema_timer_fn fn, void *arg);
	/* Starts one iteration on it->gpu; fn is called when it completes.
	 * One iteration per GPU at a time. */
	int (*iteration)(struct ema_platform *p, const struct ema_iteration *it,
			 ema_iteration_fn fn, void *arg);
	/* Starts a transfer; fn is called when the bytes have arrived. */
	int (*transfer)(struct ema_platform *p, const struct ema_transfer *t,
			ema_transfer_fn fn, void *arg);
	/* Dispatches completions in time order until nothing is pending, the
	 * horizon (0 = none) passes, or ema_platform_stop is called. */
	int (*run)(struct ema_platform *p, int64_t horizon_ns, struct ema_error *err);
	void (*stop)(struct ema_platform *p);
	/* Events (sim) or completions (hw) dispatched so far. */
	uint64_t (*events)(struct ema_platform *p);
	const struct ema_link_stats *(*link_stats)(struct ema_platform *p);
	/* Optional (NULL: nothing to do). The KV in these pages is now the
	 * content named by tags; a backend that checks data integrity writes
	 * it so that later moves of the pages can be verified. */
	int (*tag_pages)(struct ema_platform *p, int gpu, int n, const int32_t *pages,
			 const uint64_t *tags);
	void (*destroy)(struct ema_platform *p);
};

struct ema_platform {
	const struct ema_platform_ops *ops;
	const struct ema_config *cfg;
};

/* Constructors: each backend's one entry point. */
int ema_sim_platform_create(struct ema_platform **out, const struct ema_config *cfg,
			    struct ema_error *err);
/* Returns EMA_ERR_UNSUPPORTED, with the reason, where CUDA or a GPU is missing. */
int ema_hw_platform_create(struct ema_platform **out, const struct ema_config *cfg,
			   uint64_t page_bytes, const uint64_t *pool_pages, bool verify,
			   struct ema_error *err);

#endif
