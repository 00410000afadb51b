/* hardware.h: plain descriptions of a server (GPUs, memory, links,
 * measured costs) and of a model (shapes), with the sizes that follow from
 * them. config/ reads them from JSON; every other layer only reads these
 * structs, so they live at the bottom. */
#ifndef EMA_HARDWARE_H
#define EMA_HARDWARE_H

#include <stdint.h>

#include "ema_limits.h"

/* How the GPUs are joined; names in ema_topology_names (same order). */
enum ema_topology {
	EMA_TOPO_DIRECT = 0,  /* "direct": a link between every pair */
	EMA_TOPO_SWITCH       /* "switch": one port per GPU into a switch */
};
extern const char *const ema_topology_names[]; /* NULL-terminated */

/* One point of a measured size-dependent bandwidth curve. */
struct ema_curve_point {
	double bytes;
	double gbps; /* GB/s = 1e9 bytes/s */
};

/* A server: GPUs, their memory and compute, and how they are joined.
 * Loaded from profiles/hardware/NAME.json (embedded in the program) or from
 * a file that `ema calibrate` wrote. Units are in the field names. */
struct ema_hw_profile {
	char name[EMA_NAME_MAX];
	char source[EMA_NAME_MAX];    /* "measured", "datasheet", "calibrated" */
	char date[EMA_NAME_MAX];      /* when measured, YYYY-MM-DD, or "" */
	char description[256];
	char gpu_name[EMA_NAME_MAX];
	int n_gpus;
	double gpu_mem_gib;           /* usable memory per GPU */
	double hbm_read_gbps;         /* peak read bandwidth of one GPU */
	double hbm_efficiency;        /* share reached by decode-like reads */
	double peak_tflops;           /* dense bf16 */
	double flops_efficiency;      /* share reached by large prefill GEMMs */
	double iter_overhead_us;      /* fixed cost per iteration (launches, sampling) */
	enum ema_topology topology;   /* pairwise links or a switch */
	double link_gbps;             /* one direction: per pair (direct) or per GPU port (switch) */
	double host_link_gbps;        /* PCIe, one direction, per GPU */
	int copy_engines;             /* concurrent transfers a GPU can drive */
	double copy_fixed_us;         /* fixed cost of one copy call on the device */
	double copy_call_us;          /* host cost of issuing one copy call */
	double batch_page_us;         /* host cost per page in a batched copy */
	double gather_gbps;           /* SM gather kernel, scattered pages */
	int n_copy_curve;             /* cudaMemcpyPeerAsync GB/s by size */
	struct ema_curve_point copy_curve[EMA_CURVE_MAX];
	double remote_read_gbps;      /* kernel reading peer memory in place, per link */
	/* Share of remote_read_gbps that decode-like paged reads reach, as
	 * hbm_efficiency is of hbm_read_gbps (both peaks are streaming
	 * kernels'); 0: hbm_efficiency (ema_hw_remote_read_efficiency). */
	double remote_read_efficiency;
	/* Share of the separate rates that local HBM reads and in-place
	 * remote reads keep when one step does both at once (a share of the
	 * SMs on each): the step takes max(local, remote) / this. 1 when not
	 * measured. */
	double inplace_overlap_efficiency;
	/* Slowdown of memory-bound work on a GPU = factor x (transfer bytes/s
	 * through its HBM) / hbm_read_gbps. Lender: a peer pulls from it;
	 * borrower: it pulls into itself. Compute-bound work loses
	 * interference_compute at a full-rate transfer. */
	double interference_lender;
	double interference_borrower;
	double interference_compute;
	/* Share of its rate a pull into a GPU keeps while that GPU runs
	 * memory-bound work (prefetch always overlaps an iteration); 1 when
	 * not measured. */
	double pull_share_under_load;
	/* The remote-attention path (policy.ema.remote_path=compute): a lender
	 * runs split-K decode attention over the pages it lent and returns
	 * partial outputs. attention_gbps: that kernel's rate over the
	 * borrower's KV alone (0: hbm_read_gbps x hbm_efficiency, what the
	 * borrower's own decode kernels reach); attention_busy_share: the
	 * share of it the kernel keeps beside the lender's own step (0: 0.5);
	 * attention_lender_ms_per_gb: what each GB read for a borrower adds
	 * to the lender's own step (0: the bytes alone, 1 / (hbm_read_gbps x
	 * hbm_efficiency)); attention_sync_us: the per-layer round trip,
	 * queries out, partials back, the borrower waiting on them. */
	double attention_gbps;
	double attention_busy_share;
	double attention_lender_ms_per_gb;
	double attention_sync_us;
	double map_us_per_page;       /* cuMemMap + cuMemSetAccess, 2 MiB page */
	double unmap_us_per_page;
	double malloc_2mib_us;
};

/* A model: shapes from which weights, KV bytes and FLOPs follow. */
struct ema_model {
	char name[EMA_NAME_MAX];
	int layers;
	int heads;
	int kv_heads;
	int head_dim;
	int hidden;
	int ffn;
	double params_b;              /* billions of parameters */
	int bytes_per_param;          /* 2 for fp16/bf16 */
	int tensor_parallel;          /* GPUs one instance spans (1 here) */
};

/* Derived sizes, per GPU of an instance. */
uint64_t ema_model_weight_bytes(const struct ema_model *m);
/* remote_read_efficiency, or hbm_efficiency where it is 0 (not measured):
 * local and in-place remote reads derate alike. */
static inline double ema_hw_remote_read_efficiency(const struct ema_hw_profile *hw)
{
	return hw->remote_read_efficiency > 0 ? hw->remote_read_efficiency : hw->hbm_efficiency;
}
uint64_t ema_model_kv_bytes_per_token(const struct ema_model *m);

/* Cost of reading a curve: GB/s at a given size, log-linear between points. */
double ema_curve_gbps(const struct ema_curve_point *c, int n, double bytes);

#endif
