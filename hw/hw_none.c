/* hw_none.c: the hardware backend of a build without CUDA (configure
 * --without-cuda, or no toolkit found): every entry point exists, so the
 * rest of ema links unchanged, and says why it cannot run. */
#include "hw.h"
#include "hw_pattern.h"

#include <stdio.h>

#define HW_NONE_WHY "built without CUDA"

int ema_hw_platform_create(struct ema_platform **out, const struct ema_platform_params *params,
			   const struct ema_platform_opts *opts, struct ema_error *err)
{
	*out = NULL;
	return ema_error_set(err, EMA_ERR_UNSUPPORTED, "hw backend: " HW_NONE_WHY);
}

int ema_hw_gpu_count(struct ema_error *err)
{
	return ema_error_set(err, EMA_ERR_UNSUPPORTED, HW_NONE_WHY);
}

uint64_t ema_hw_tag_word(uint64_t tag, uint64_t w)
{
	return ema_hwk_pattern(tag, w);
}

int ema_hw_fill_page(struct ema_platform *p, int gpu, int32_t page, uint64_t tag)
{
	return EMA_ERR_UNSUPPORTED;
}

int ema_hw_fill_pages(struct ema_platform *p, int gpu, int n, const int32_t *pages,
		      const uint64_t *tags)
{
	return EMA_ERR_UNSUPPORTED;
}

int ema_hw_check_pages(struct ema_platform *p, int gpu, int n, const int32_t *pages,
		       const uint64_t *tags, int *bad, struct ema_error *err)
{
	*bad = 0;
	return ema_error_set(err, EMA_ERR_UNSUPPORTED, HW_NONE_WHY);
}

void ema_hw_integrity(struct ema_platform *p, uint64_t *checked, uint64_t *corrupted)
{
	*checked = 0;
	*corrupted = 0;
}

void ema_hw_attention_integrity(struct ema_platform *p, uint64_t *checked, uint64_t *corrupted)
{
	*checked = 0;
	*corrupted = 0;
}

int ema_hw_set_attention_sync(struct ema_platform *p, bool flag, struct ema_error *err)
{
	return ema_error_set(err, EMA_ERR_UNSUPPORTED, HW_NONE_WHY);
}

void ema_hw_attention_fault(struct ema_platform *p)
{
}

const char *ema_hw_last_error(struct ema_platform *p)
{
	return HW_NONE_WHY;
}

int ema_hw_calibrate(const struct ema_hw_cal_opts *o, FILE *csv,
		     struct ema_hw_profile *profile, struct ema_error *err)
{
	return ema_error_set(err, EMA_ERR_UNSUPPORTED, "calibrate: not supported here: " HW_NONE_WHY);
}

int ema_hw_bench(const struct ema_hw_bench_opts *o, FILE *csv, struct ema_error *err)
{
	return ema_error_set(err, EMA_ERR_UNSUPPORTED, "bench --hw: not supported here: " HW_NONE_WHY);
}
