/* platform.c: what the core decides for every platform alike: how far
 * ahead an iteration's staging copies may run, from the pages it stages
 * into, cut the way the hw backend copies them. */
#include "platform.h"

void ema_iteration_group_slice(uint64_t n, int g, int l, uint64_t *off, uint64_t *len)
{
	uint64_t a = (n * (uint64_t)g / (uint64_t)l) & ~(uint64_t)15;
	uint64_t b = g + 1 == l ? n : (n * (uint64_t)(g + 1) / (uint64_t)l) & ~(uint64_t)15;

	*off = a;
	*len = b > a ? b - a : 0;
}

uint64_t ema_iteration_staged_per_page(const struct ema_remote_read *rr, uint64_t page_bytes)
{
	uint64_t per = rr->n_pages ? rr->bytes / (uint64_t)rr->n_pages : 0;

	if (per == 0 || per > page_bytes)
		per = page_bytes;
	per &= ~(uint64_t)15;
	return per > 0 ? per : 16;
}

int ema_iteration_window_depth(const struct ema_iteration *it, uint64_t page_bytes)
{
	int depth = it->prefetch_depth, groups, slots;
	uint64_t gmax = 0, ring;

	if (depth <= 0 || it->n_staging_pages <= 0 || it->n_remote == 0)
		return depth > 0 ? depth : 0;
	groups = it->layer_groups > 0 ? it->layer_groups : 1;
	for (int gi = 0; gi < groups; gi++) {
		uint64_t sum = 0;

		for (int r = 0; r < it->n_remote; r++) {
			uint64_t off, len;

			ema_iteration_group_slice(ema_iteration_staged_per_page(&it->remote[r], page_bytes),
						  gi, groups, &off, &len);
			sum += len * (uint64_t)it->remote[r].n_pages;
		}
		if (sum > gmax)
			gmax = sum;
	}
	gmax = (gmax + 15) & ~(uint64_t)15;
	ring = (uint64_t)it->n_staging_pages * page_bytes;
	slots = gmax > 0 ? (int)(ring / gmax) : depth + 1;
	if (slots < 1)
		slots = 1;
	return depth < slots - 1 ? depth : slots - 1;
}
