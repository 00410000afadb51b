/* hw.h: what the hardware backend offers beyond base/platform.h: page
 * content tags for data-integrity checks, the integrity counters, a probe
 * for usable GPUs, and the measurements behind `ema calibrate` and
 * `ema bench --hw` (their command lines and files are src/'s). Every function exists in every build; without CUDA
 * (hw_none.c) they fail with EMA_ERR_UNSUPPORTED, "built without CUDA". */
#ifndef EMA_HW_H
#define EMA_HW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ema_error.h"
#include "hardware.h"
#include "platform.h"

/* Counts the CUDA GPUs this process can use. Returns the count (>= 0), or
 * EMA_ERR_UNSUPPORTED with the reason in err (no CUDA build, no driver). */
int ema_hw_gpu_count(struct ema_error *err);

/* Writes the content of tag over one page of gpu's pool (gpu = EMA_HOST:
 * the host pool), synchronously. Word w of the page then holds
 * ema_hw_tag_word(tag, w); transfers given tags check that pattern at
 * their destination. Call it while no transfer touches the page. The
 * in-place checks of iterations compare against the tags the engine gave
 * (the tag_pages op), not these: a fill with another tag is how a test
 * corrupts a page that an iteration then reads in place. */
int ema_hw_fill_page(struct ema_platform *p, int gpu, int32_t page, uint64_t tag);
/* The same for n pages in one launch. */
int ema_hw_fill_pages(struct ema_platform *p, int gpu, int n, const int32_t *pages,
		      const uint64_t *tags);
/* Checks n pages against their tags now, in full; *bad = pages that differ. */
int ema_hw_check_pages(struct ema_platform *p, int gpu, int n, const int32_t *pages,
		       const uint64_t *tags, int *bad, struct ema_error *err);
/* Integrity counters since create: pages checked, pages found corrupted.
 * By default a transfer checks 32 words of every page when it moves at
 * most 16 pages, else of every Nth page (about 16 pages); with verify set
 * at create it checks every word of every page. */
void ema_hw_integrity(struct ema_platform *p, uint64_t *checked, uint64_t *corrupted);

/* Remote attention (ema_remote_read.compute; doc/hardware.md): the
 * combined outputs checked against the reference rebuilt from the pages'
 * tags since create, and those found wrong (each a (layer, sequence,
 * query head) output). */
void ema_hw_attention_integrity(struct ema_platform *p, uint64_t *checked, uint64_t *corrupted);
/* How a GPU waits for another's queries and partials: a CUDA event
 * (flag false, the default) or a flag in its memory set by the producing
 * kernel and waited for by the stream (cuStreamWaitValue32). Create reads
 * EMA_HW_ATTN_SYNC (event or flag); this changes it between steps.
 * EMA_ERR_UNSUPPORTED where the driver has no wait on a flag. */
int ema_hw_set_attention_sync(struct ema_platform *p, bool flag, struct ema_error *err);
/* Tests: in the next step with remote attention, its first lender
 * writes one element of one partial 0.5 too high (head 0 of the first
 * (layer, sequence) pair the step checks), as a wrong partial would be;
 * the step's check must stop the run. */
void ema_hw_attention_fault(struct ema_platform *p);

/* The last error of iteration() or transfer(), whose signatures carry no
 * error record; "" when none. */
const char *ema_hw_last_error(struct ema_platform *p);

/* The content word w of a page tagged tag (splitmix64 of both). */
uint64_t ema_hw_tag_word(uint64_t tag, uint64_t w);

/* What `ema calibrate` asks for (src/cmd_calibrate.c parses it). */
struct ema_hw_cal_opts {
	bool quick;        /* 5 repetitions instead of 20 */
	const char *name;  /* the profile's name, shorter than EMA_NAME_MAX */
};

/* Measures the GPUs of this machine (progress on stderr), prints the
 * figures against the H200x2 reference, and fills *profile. Raw samples go
 * to csv (header included) unless it is NULL; the caller owns the files.
 * EMA_ERR_UNSUPPORTED "calibrate: not supported here: ..." without a GPU
 * or a CUDA build; a failure of a measurement is "calibrate: ...". */
int ema_hw_calibrate(const struct ema_hw_cal_opts *o, FILE *csv,
		     struct ema_hw_profile *profile, struct ema_error *err);

/* What `ema bench --backend hw` asks for. */
struct ema_hw_bench_opts {
	bool quick;        /* 256 MiB per page size instead of 1 GiB, fewer repetitions */
};

/* Transfer bandwidth by page size and method through the platform, and
 * the host loop's overhead, printed on stdout; the figures also go to csv
 * (header included) unless it is NULL. Needs two GPUs: else
 * EMA_ERR_UNSUPPORTED "bench --hw: not supported here: ...". */
int ema_hw_bench(const struct ema_hw_bench_opts *o, FILE *csv, struct ema_error *err);

/* The hardware backend: real GPUs in real time, one pool of
 * params->pool_pages pages per GPU used, a pinned host pool, peer access
 * between every pair. Returns EMA_ERR_UNSUPPORTED, with the reason, where
 * CUDA or a GPU is missing (always, in a build without CUDA). */
int ema_hw_platform_create(struct ema_platform **out, const struct ema_platform_params *params,
			   const struct ema_platform_opts *opts, struct ema_error *err);
/* Its entry in the backend table (hw_backend.c, in every build). */
extern const struct ema_platform_backend ema_hw_backend;

#endif
