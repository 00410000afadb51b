/* config.h: the scenario a run simulates (or executes on GPUs), the
 * hardware profiles and model descriptions it names, and how they are read
 * from JSON, overridden with --set and written back as the effective
 * configuration. Every layer reads these structs; only config/ parses. */
#ifndef EMA_CONFIG_H
#define EMA_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ema_error.h"

#define EMA_MAX_GPUS 16
#define EMA_MAX_TENANTS EMA_MAX_GPUS
#define EMA_MAX_POLICIES 16
#define EMA_NAME_MAX 64
#define EMA_PATH_MAX 1024
#define EMA_CURVE_MAX 16
/* Requests one tenant's generated stream may hold (rate_rps x duration_s
 * or max_requests), so that a typo fails at the config check rather than
 * after minutes of generation or an exhausted memory. */
#define EMA_CFG_MAX_REQUESTS 10000000L

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
	char topology[EMA_NAME_MAX];  /* "direct" (pairwise links) or "switch" */
	double link_gbps;             /* one direction: per pair (direct) or per GPU port (switch) */
	double host_link_gbps;        /* PCIe, one direction, per GPU */
	int copy_engines;             /* concurrent transfers a GPU can drive */
	double copy_fixed_us;         /* fixed cost of one copy call on the device */
	double copy_call_us;          /* host cost of issuing one copy call */
	double batch_page_us;         /* host cost per page in a batched copy */
	double gather_gbps;           /* SM gather kernel, scattered pages */
	int n_copy_curve;             /* cudaMemcpyPeerAsync GB/s by size */
	struct ema_curve_point copy_curve[EMA_CURVE_MAX];
	double remote_read_gbps;      /* kernel reading peer memory in place */
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
uint64_t ema_model_kv_bytes_per_token(const struct ema_model *m);

enum ema_workload_source {
	EMA_WL_SYNTHETIC = 0, /* arrivals and lengths from generators */
	EMA_WL_TRACE,         /* arrivals and lengths from a trace file */
	EMA_WL_LENGTHS        /* lengths from a file, arrivals generated */
};

enum ema_arrival_kind { EMA_ARR_POISSON = 0, EMA_ARR_GAMMA };
enum ema_length_kind {
	EMA_LEN_FIXED = 0, EMA_LEN_UNIFORM, EMA_LEN_LOGNORMAL, EMA_LEN_EMPIRICAL
};
enum ema_trace_format {
	EMA_TRACE_AUTO = 0, EMA_TRACE_AZURE, EMA_TRACE_VIDUR, EMA_TRACE_BURSTGPT,
	EMA_TRACE_MOONCAKE, EMA_TRACE_LENGTHS
};

struct ema_length_cfg {
	enum ema_length_kind kind;
	double mean;                  /* tokens (fixed: the value) */
	double cv;                    /* lognormal */
	int min, max;                 /* uniform bounds; clamp for the others */
};

/* Where one tenant's requests come from. */
struct ema_workload_cfg {
	enum ema_workload_source source;
	char trace[EMA_PATH_MAX];     /* trace or lengths file */
	enum ema_trace_format format;
	double start_s;               /* window into the trace */
	double duration_s;            /* 0 = to the end (trace) / required (synthetic) */
	double rate_scale;            /* trace: arrivals sped up by this factor */
	enum ema_arrival_kind arrival;
	double rate_rps;              /* synthetic/lengths arrivals */
	double cv;                    /* gamma arrivals: coefficient of variation */
	struct ema_length_cfg prompt, output;
	int max_requests;             /* 0 = no cap */
	uint64_t seed;                /* stream seed; 0 = derived from run seed and tenant */
};

struct ema_tenant_cfg {
	char name[EMA_NAME_MAX];
	int gpu;
	struct ema_workload_cfg workload;
};

/* vLLM-like continuous batching knobs (serve/). */
struct ema_serving_cfg {
	int block_tokens;
	int max_batch;                /* running requests */
	int max_batch_tokens;         /* tokens per iteration */
	bool chunked_prefill;
	double watermark;             /* share of KV pages kept free at admission */
	int layer_groups;             /* granularity of prefetch pipelining */
};

/* Knobs of the elastic policies (issue 3). Each policy reads the ones it
 * needs; policies/POLICY.c documents which. */
struct ema_policy_cfg {
	double ideal_factor;          /* ideal: capacity multiplier */
	double lender_floor;          /* share of a lender's KV pages it never lends */
	double lender_reserve;        /* share of a lender's KV pages kept free for its bursts */
	double max_remote_share;      /* cap of a borrower's KV held remotely */
	int prefetch_depth;           /* layer groups fetched ahead */
	double headroom;              /* share of a lender's KV pages kept free by reclaiming ahead */
	char reclaim_mode[EMA_NAME_MAX]; /* "auto", "move", "host", "drop" */
	double host_gib;              /* host memory for swap/demotion per GPU */
	char copy_method[EMA_NAME_MAX];  /* "gather", "batch", "per_page" */
	char borrow_rule[EMA_NAME_MAX];  /* ema: "always", or "throughput" (only where it pays) */
	double lender_max_slowdown;   /* ema: cap on a lender's HBM slowdown from pulls (0 = none) */
};

struct ema_config {
	char source_file[EMA_PATH_MAX]; /* "(default)" for the embedded scenario */
	/* where tenants.N.workload is in source_file (or the nearest key
	 * above it), for errors found only when requests are generated; 0
	 * when unknown. Provenance, like source_file: not a key. */
	long workload_line[EMA_MAX_TENANTS];
	char name[EMA_NAME_MAX];
	uint64_t seed;
	char hardware[EMA_PATH_MAX];  /* profile name or path */
	char model_name[EMA_NAME_MAX];
	double page_mib;
	double gpu_mem_cap_gib;       /* 0 = the profile's memory */
	double horizon_s;             /* 0 = until every request finished */
	int n_policies;
	char policies[EMA_MAX_POLICIES][EMA_NAME_MAX];
	struct ema_serving_cfg serving;
	struct ema_policy_cfg policy;
	int n_tenants;
	struct ema_tenant_cfg tenants[EMA_MAX_TENANTS];
	/* resolved from the names above by ema_config_load */
	struct ema_hw_profile hw;
	struct ema_model model;
};

/* The embedded default scenario, as JSON text (also `ema config default`). */
extern const char ema_config_default_json[];

/* Loads a scenario: defaults, then the file (NULL = embedded default),
 * then each "key.path=value" override in order, then validation and
 * resolution of hardware and model. On error fills err with
 * "file:line: what was expected" and returns EMA_ERR_INPUT. */
int ema_config_load(struct ema_config *cfg, const char *path,
		    const char *const *overrides, int n_overrides,
		    struct ema_error *err);

/* Writes the effective configuration (every default filled in) as JSON. */
int ema_config_write_json(const struct ema_config *cfg, FILE *out,
			  struct ema_error *err);

/* Hardware profiles and models: by name (embedded) or by path (a JSON
 * file, e.g. from `ema calibrate`). */
int ema_hw_profile_load(struct ema_hw_profile *hw, const char *name_or_path,
			struct ema_error *err);
int ema_model_load(struct ema_model *m, const char *name, struct ema_error *err);
int ema_hw_profile_write_json(const struct ema_hw_profile *hw, FILE *out);

/* Names for `ema list`. Returns the count; names[i] valid for the program's life. */
int ema_hw_profile_names(const char *const **names);
int ema_model_names(const char *const **names);

/* Cost of reading a curve: GB/s at a given size, log-linear between points. */
double ema_curve_gbps(const struct ema_curve_point *c, int n, double bytes);

#endif
