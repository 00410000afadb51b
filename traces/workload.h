/* workload.h: one tenant's request stream, read from a trace (Azure,
 * Vidur, BurstGPT, Mooncake, length-only) or generated (Poisson or gamma
 * arrivals; fixed, uniform, lognormal or empirical lengths), always from an
 * explicit seed so that every policy sees exactly the same requests. */
#ifndef EMA_WORKLOAD_H
#define EMA_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ema_limits.h"
#include "ema_error.h"

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

/* The names of these choices, in enum order, NULL-terminated (the
 * configuration parses and writes them from here). */
extern const char *const ema_workload_source_names[];
extern const char *const ema_arrival_kind_names[];
extern const char *const ema_length_kind_names[];
extern const char *const ema_trace_format_names[];

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

struct ema_request_spec {
	int64_t arrival_ns;         /* from the start of the run */
	int32_t prompt_tokens;      /* >= 1 */
	int32_t output_tokens;      /* >= 1 */
};

struct ema_workload {
	struct ema_request_spec *reqs;  /* sorted by arrival, ties in file order */
	size_t n;
	size_t cap;
};

/* Rows of a trace replay's file left out after the window end
 * (start_s + duration_s) and after max_requests, for the warning that a
 * replay was cut (a duration_s kept from a default goes unnoticed). */
struct ema_workload_cut {
	size_t by_duration;
	size_t by_max_requests;
};

/* Reads a trace file as it is (no window, no scaling), opening it once
 * (a FIFO or <(...) works). fmt AUTO detects the format from the header
 * line / first record. Errors: "path:line: what was expected",
 * EMA_ERR_INPUT; a path that cannot be read (missing, a folder, no
 * permission) is an input error too. An empty trace is an error at line 1,
 * a header without rows at line 2. */
int ema_trace_read(const char *path, enum ema_trace_format fmt,
		   struct ema_workload *out, struct ema_error *err);

/* The largest trace file read (whole, into memory): EMA_TRACE_MAX_GIB in
 * the environment (GiB, a decimal number > 0), else 4 GiB, 20 times the
 * largest public trace. Not a key of the scenario: it changes whether a
 * file is read, never what a run computes, and a key would change every
 * config.json and so every sweep's hashes. A bad value is EMA_ERR_INPUT. */
#define EMA_TRACE_MAX_GIB_DEFAULT 4
int ema_trace_max_bytes(size_t *max, struct ema_error *err);

/* Builds a tenant's stream from its configuration: reads or generates,
 * applies the window and rate scaling, caps max_requests, and shifts the
 * first kept arrival of a trace window to start_s = 0 of the run.
 * seed is the stream's seed (the caller derives it from run seed and tenant). */
int ema_workload_build(const struct ema_workload_cfg *cfg, uint64_t seed,
		       struct ema_workload *out, struct ema_error *err);

/* ema_workload_build that also says what a trace replay left out (all 0
 * for generated streams). cut may be NULL. */
int ema_workload_build_cut(const struct ema_workload_cfg *cfg, uint64_t seed,
			   struct ema_workload *out, struct ema_workload_cut *cut,
			   struct ema_error *err);

/* Trace files read once for every tenant that replays them: 8 tenants of
 * one scenario replaying the same file read and parsed it 8 times. */
struct ema_trace_cache;
struct ema_trace_cache *ema_trace_cache_new(void);   /* NULL: out of memory */
void ema_trace_cache_free(struct ema_trace_cache *c);

/* ema_workload_build_cut whose trace replays read each (file, format)
 * once through cache (NULL: no cache): every tenant gets the rows a read
 * of its own would give, windowed and scaled by its own configuration. */
int ema_workload_build_shared(const struct ema_workload_cfg *cfg, uint64_t seed,
			      struct ema_workload *out, struct ema_workload_cut *cut,
			      struct ema_trace_cache *cache, struct ema_error *err);

void ema_workload_free(struct ema_workload *w);

/* A sentence saying how many rows of a trace replay its window end
 * (duration_s) and max_requests left out, naming the key, for a warning:
 * a duration_s the user never meant to set cuts a replay silently. Returns
 * false, buf "", when nothing was cut. */
bool ema_workload_cut_note(const struct ema_workload *w,
			   const struct ema_workload_cut *cut,
			   const struct ema_workload_cfg *cfg, char *buf,
			   size_t size);

/* Format names for configs and messages: "auto", "azure", "vidur",
 * "burstgpt", "mooncake", "lengths". Returns -1 for an unknown name. */
int ema_trace_format_parse(const char *name);
const char *ema_trace_format_name(enum ema_trace_format fmt);

/* Stream seed from (run seed, tenant index, stream name): a stable mix
 * (splitmix64 over an FNV-1a hash of the name), never 0. */
uint64_t ema_seed_derive(uint64_t run_seed, int index, const char *stream);

#endif
