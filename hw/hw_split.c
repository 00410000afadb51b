/* hw_split.c: the block split of the in-place decode read (hw_split.h). */
#include "hw_split.h"

#include <math.h>
#include <stddef.h>

uint32_t ema_hwk_split_blocks(struct ema_hwk_parts *parts, int n, const double *time_ns,
			      uint32_t grid, uint32_t sms)
{
	uint32_t cap = sms / EMA_HWK_SMS_PER_REMOTE_BLOCK;
	uint32_t given = 0, b[EMA_HWK_MAX_PARTS];

	if (parts == NULL || n < 1 || n > EMA_HWK_MAX_PARTS || grid < (uint32_t)n ||
	    time_ns == NULL)
		return 0;
	for (int q = 0; q < n; q++)
		if (!(time_ns[q] >= 0) || !isfinite(time_ns[q]))
			return 0;
	/* the local part keeps at least half: the remote parts are link-bound
	 * and draw their rate from few blocks (hw_split.h) */
	if (cap > grid / 2 / (uint32_t)(n > 1 ? n - 1 : 1))
		cap = grid / 2 / (uint32_t)(n > 1 ? n - 1 : 1);
	if (cap < 1)
		cap = 1;
	for (int q = 1; q < n; q++) {
		double want = time_ns[0] > 0 ? (double)cap * time_ns[q] / time_ns[0] :
			      time_ns[q] > 0 ? (double)cap : 0.0;
		uint32_t k = want >= (double)cap ? cap : (uint32_t)ceil(want);

		b[q] = k < 1 ? 1 : k;
		given += b[q];
	}
	b[0] = grid - given;
	parts->n = n;
	parts->block_first[0] = 0;
	for (int q = 0; q < n; q++)
		parts->block_first[q + 1] = parts->block_first[q] + b[q];
	return parts->block_first[n];
}
