/* hw_platform.c: the platform of base/platform.h on real GPUs in real time.
 * Each GPU holds one pool of pages; iterations launch kernels that read the
 * bytes and do the FLOPs a batch would; transfers move pages with the SM
 * gather kernel, the batch copy API or one copy per page; completions are
 * found by polling CUDA events and handed to the serving model in the
 * order they happened, mixed with timers from a host heap.
 *
 * Memory: one cudaMalloc per GPU, with peer access enabled between every
 * pair once at create. A borrowed page stays where it is in its lender's
 * pool and the borrower reaches it through the peer mapping, so lending and
 * reclaiming are ledger entries and never touch a mapping. The alternative,
 * CUDA VMM with one physical allocation mapped into the borrower per lent
 * page, costs per 2 MiB page ~10 us to create, ~1 us to map, 98 us
 * (doc/reference-figures.md) to 290 us (`ema calibrate` here, 2026-11-30) to set
 * access for two GPUs, ~37 us to unmap and ~17 us to release: 110-300 us to
 * lend and ~54 us to give back a page whose data moves over NVLink in
 * ~5.3 us at 395 GB/s. Remapping would cost 20-60 times the data movement, on the
 * critical path of every reclaim, for a capability (one contiguous address
 * range per tenant) that the page-table indirection of paged KV does not
 * need. Peer access costs nothing per page after the one-time enable. */
#include "hw.h"
#include "hw_cuda.h"
#include "hw_kernels.h"
#include "hw_priv.h"

#include "eventq.h"
#include "platform.h"

#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct ema_platform_ops hw_ops;
static int hw_tag_pages(struct ema_platform *pp, int gpu, int n, const int32_t *pages,
			const uint64_t *tags);

/* iteration() and transfer() have no error record: keep the message. */
int hw_fail(struct hw_platform *p, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->last_err, sizeof p->last_err, fmt, ap);
	va_end(ap);
	return code;
}

static int64_t hw_now(struct ema_platform *pp)
{
	return ema_hw_clock_ns() - hw_of(pp)->t0;
}

char *hw_page_addr(struct hw_platform *p, int gpu, int32_t page)
{
	if (gpu == EMA_HOST)
		return p->host_pool + (uint64_t)page * p->page_bytes;
	return p->g[gpu].pool + (uint64_t)page * p->page_bytes;
}

bool hw_page_ok(struct hw_platform *p, int gpu, int32_t page)
{
	if (gpu == EMA_HOST)
		return page >= 0 && (uint64_t)page < p->host_pages;
	if (gpu < 0 || gpu >= p->n_gpus)
		return false;
	return page >= 0 && (uint64_t)page < p->g[gpu].pool_pages;
}

/* ---- descriptor slots --------------------------------------------- */

static struct hw_slot *hw_slot_get(struct hw_platform *p, int gpu)
{
	struct hw_slot *s = p->g[gpu].free_slots;

	if (s != NULL) {
		p->g[gpu].free_slots = s->next_free;
		return s;
	}
	s = calloc(1, sizeof *s);
	if (s == NULL)
		return NULL;
	s->gpu = gpu;
	s->next_all = p->all_slots;
	p->all_slots = s;
	return s;
}

static void hw_slot_put(struct hw_platform *p, struct hw_slot *s)
{
	s->next_free = p->g[s->gpu].free_slots;
	p->g[s->gpu].free_slots = s;
}

static void hw_slot_free_mem(struct hw_slot *s)
{
	if (s->h != NULL)
		cudaFreeHost(s->h);
	if (s->d != NULL)
		cudaFree(s->d);
	if (s->h_bad != NULL)
		cudaFreeHost(s->h_bad);
	if (s->d_bad != NULL)
		cudaFree(s->d_bad);
	s->h = NULL;
	s->d = NULL;
	s->h_bad = NULL;
	s->d_bad = NULL;
	s->cap = 0;
	s->bad_cap = 0;
}

/* Grows a slot; the slot is idle (its last user completed), so freeing
 * the old buffers cannot race with the device. */
int hw_slot_reserve(struct hw_platform *p, struct hw_slot *s, size_t nseg,
			   size_t nbad)
{
	HW_TRY_OP(p, cudaSetDevice(s->gpu));
	if (nseg > s->cap) {
		size_t cap = s->cap ? s->cap : 1024;

		while (cap < nseg)
			cap *= 2;
		if (s->h != NULL)
			cudaFreeHost(s->h);
		if (s->d != NULL)
			cudaFree(s->d);
		s->h = NULL;
		s->d = NULL;
		s->cap = 0;
		HW_TRY_OP(p, cudaMallocHost((void **)&s->h, cap * sizeof *s->h));
		HW_TRY_OP(p, cudaMalloc((void **)&s->d, cap * sizeof *s->d));
		s->cap = cap;
	}
	if (nbad > s->bad_cap) {
		size_t cap = s->bad_cap ? s->bad_cap : 1024;

		while (cap < nbad)
			cap *= 2;
		if (s->h_bad != NULL)
			cudaFreeHost(s->h_bad);
		if (s->d_bad != NULL)
			cudaFree(s->d_bad);
		s->h_bad = NULL;
		s->d_bad = NULL;
		s->bad_cap = 0;
		HW_TRY_OP(p, cudaMallocHost((void **)&s->h_bad, cap * sizeof *s->h_bad));
		HW_TRY_OP(p, cudaMalloc((void **)&s->d_bad, cap * sizeof *s->d_bad));
		s->bad_cap = cap;
	}
	return 0;
}

/* ---- operations in flight ----------------------------------------- */

struct hw_op *hw_op_get(struct hw_platform *p, int gpu)
{
	struct hw_op *op = p->g[gpu].free_ops;

	if (op != NULL) {
		p->g[gpu].free_ops = op->next_free;
	} else {
		op = calloc(1, sizeof *op);
		if (op == NULL)
			return NULL;
		if (cudaSetDevice(gpu) != cudaSuccess ||
		    cudaEventCreate(&op->start) != cudaSuccess ||
		    cudaEventCreate(&op->end) != cudaSuccess) {
			free(op);
			return NULL;
		}
		op->next_all = p->all_ops;
		p->all_ops = op;
	}
	{
		cudaEvent_t s = op->start, e = op->end, c = op->chk_done;
		struct hw_op *all = op->next_all;

		memset(op, 0, sizeof *op);
		op->start = s;
		op->end = e;
		op->chk_done = c;
		op->next_all = all;
	}
	op->gpu = gpu;
	op->seq = p->next_seq++;
	return op;
}

void hw_op_put(struct hw_platform *p, struct hw_op *op)
{
	free(op->chk_pages);
	free(op->chk_tags);
	free(op->chk_gpus);
	free(op->attn_layer);
	free(op->attn_seq);
	op->chk_pages = NULL;
	op->chk_tags = NULL;
	op->chk_gpus = NULL;
	op->attn_layer = NULL;
	op->attn_seq = NULL;
	if (op->slot != NULL && op->kind == HW_OP_XFER)
		hw_slot_put(p, op->slot);
	op->slot = NULL;
	op->next_free = p->g[op->gpu].free_ops;
	p->g[op->gpu].free_ops = op;
}

int hw_activate(struct hw_platform *p, struct hw_op *op)
{
	if (p->n_active == p->cap_active) {
		size_t cap = p->cap_active ? 2 * p->cap_active : 64;
		struct hw_op **a = realloc(p->active, cap * sizeof *a);
		struct hw_op **d;

		if (a == NULL)
			return hw_fail(p, EMA_ERR_NOMEM, "out of memory for operations");
		p->active = a;
		d = realloc(p->done, cap * sizeof *d);
		if (d == NULL)
			return hw_fail(p, EMA_ERR_NOMEM, "out of memory for operations");
		p->done = d;
		p->cap_active = cap;
		p->cap_done = cap;
	}
	p->active[p->n_active++] = op;
	return 0;
}

/* ---- timers ------------------------------------------------------- */

static int hw_timer(struct ema_platform *pp, int64_t at_ns, ema_timer_fn fn, void *arg)
{
	struct hw_platform *p = hw_of(pp);

	if (ema_eventq_push(&p->timers, at_ns, fn, arg) != 0)
		return hw_fail(p, EMA_ERR_NOMEM, "out of memory for timers");
	return 0;
}

/* ---- iterations --------------------------------------------------- */

/* Share [g/L, (g+1)/L) of n bytes, cut on 16-byte boundaries so that the
 * kernels keep their wide loads. */
static void hw_slice(uint64_t n, int g, int l, uint64_t *off, uint64_t *len)
{
	ema_iteration_group_slice(n, g, l, off, len);
}

/* Appends read segments for bytes [a, a+n) of the pool, wrapping around
 * its end (weights larger than the pool are read again from the start). */
int hw_add_wrapped(struct ema_hwk_seg *s, int k, const char *base,
			  uint64_t pool, uint64_t a, uint64_t n)
{
	if (pool == 0)
		return k;
	a %= pool;
	while (n > 0) {
		uint64_t len = pool - a < n ? pool - a : n;

		s[k].src = (uint64_t)(uintptr_t)(base + a);
		s[k].dst = 0;
		s[k].bytes = len;
		k++;
		n -= len;
		a = 0;
	}
	return k;
}

int hw_gemm_cols(double flops)
{
	double per_col = 2.0 * EMA_HW_GEMM_DIM * (double)EMA_HW_GEMM_DIM;
	double cols = flops / per_col;

	if (flops <= 0)
		return 0;
	/* multiples of 64 columns (~2.1 GFLOP, a few us) */
	return (int)(((int64_t)(cols + 63.999)) / 64 * 64);
}

int hw_issue_gemm(struct hw_platform *p, struct hw_gpu *g, int cols)
{
	while (cols > 0) {
		int c = cols > EMA_HW_GEMM_COLS ? EMA_HW_GEMM_COLS : cols;
		int e = ema_hw_gemm(p->have_blas ? &p->blas : NULL, g->blas, c, g->ga,
				    g->gb, g->gc, g->s_comp);

		if (e != 0)
			return hw_fail(p, EMA_ERR_DEVICE, "GEMM of %d columns failed (%d)", c, e);
		cols -= c;
	}
	return 0;
}

/* Copies segs [first, first+n) with the iteration's method on stream s.
 * d_segs are on the device (gather); the host copy drives the APIs. */
static int hw_copy_segs(struct hw_platform *p, struct hw_gpu *g,
			enum ema_copy_method m, const struct ema_hwk_seg *h,
			const struct ema_hwk_seg *d, int n, uint64_t chunks,
			int grid, cudaStream_t s)
{
	if (n == 0)
		return 0;
	if (m == EMA_COPY_GATHER) {
		int e = ema_hwk_gather(d, n, chunks, grid, s);

		if (e != 0)
			return hw_fail(p, EMA_ERR_DEVICE, "gather kernel: %s",
				       cudaGetErrorString((cudaError_t)e));
		return 0;
	}
	if (m == EMA_COPY_BATCH) {
		void **dsts = malloc((size_t)n * sizeof *dsts);
		const void **srcs = malloc((size_t)n * sizeof *srcs);
		size_t *sizes = malloc((size_t)n * sizeof *sizes);
		struct cudaMemcpyAttributes attr;
		size_t idx = 0;
		cudaError_t e;

		if (dsts == NULL || srcs == NULL || sizes == NULL) {
			free(dsts);
			free(srcs);
			free(sizes);
			return hw_fail(p, EMA_ERR_NOMEM, "out of memory for a batch copy");
		}
		for (int i = 0; i < n; i++) {
			dsts[i] = (void *)(uintptr_t)h[i].dst;
			srcs[i] = (const void *)(uintptr_t)h[i].src;
			sizes[i] = h[i].bytes;
		}
		memset(&attr, 0, sizeof attr);
		attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
		attr.srcLocHint.type = cudaMemLocationTypeDevice;
		attr.dstLocHint.type = cudaMemLocationTypeDevice;
		e = cudaMemcpyBatchAsync((void *const *)dsts, (const void *const *)srcs,
					 sizes, (size_t)n, &attr, &idx, 1, s);
		free(dsts);
		free(srcs);
		free(sizes);
		if (e != cudaSuccess)
			return hw_fail(p, EMA_ERR_DEVICE, "cudaMemcpyBatchAsync: %s",
				       cudaGetErrorString(e));
		return 0;
	}
	for (int i = 0; i < n; i++)
		HW_TRY_OP(p, cudaMemcpyAsync((void *)(uintptr_t)h[i].dst,
					     (const void *)(uintptr_t)h[i].src,
					     h[i].bytes, cudaMemcpyDefault, s));
	return 0;
}

/* Adds the pieces covering bytes [at, at + len) of an iteration's staging
 * area, which is the list of pool pages it->staging_pages taken as one
 * ring: a copy into it when src != 0, a read of it when src == 0. Pieces
 * split at page edges because the ledger hands out pages, not runs. */
static int hw_add_staged(struct ema_hwk_seg *h, int k, struct hw_platform *p,
			 const struct ema_iteration *it, uint64_t at, uint64_t len, uint64_t src)
{
	uint64_t pb = p->page_bytes, done = 0;

	while (done < len) {
		uint64_t a = at + done;
		uint64_t pg = a / pb, po = a % pb;
		uint64_t l = pb - po < len - done ? pb - po : len - done;
		uint64_t addr = (uint64_t)(uintptr_t)
			(hw_page_addr(p, it->gpu, it->staging_pages[pg % (uint64_t)it->n_staging_pages]) + po);

		if (src != 0) {
			h[k].src = src + done;
			h[k].dst = addr;
		} else {
			h[k].src = addr;
			h[k].dst = 0;
		}
		h[k].bytes = l;
		k++;
		done += l;
	}
	return k;
}

/* Bytes staged per remote page: the lender's average, cut to a multiple
 * of 16. Unrounded, the last group's slice of each page ended off a
 * 16-byte boundary, every piece after it in the staging ring was
 * misaligned, and the gather kernel fell back to byte copies: on the
 * H200s the last group's copy took 3 ms instead of 0.5 (median of 400
 * iterations, 2026-11-30), a third of the borrower's iteration. The
 * copy engines do not care, which is why `batch` did not show it. */
static uint64_t hw_staged_per_page(const struct ema_remote_read *rr, uint64_t pb)
{
	return ema_iteration_staged_per_page(rr, pb);
}

/* Whether page pg of lender l was copied by the last speculation. */
static bool hw_spec_marked(const struct hw_gpu *g, int l, int32_t pg)
{
	return g->spec_mark[l] != NULL && ((g->spec_mark[l][pg >> 3] >> (pg & 7)) & 1);
}

/* Forgets the last speculation (its copies may still be landing: writes
 * to this GPU's pages wait for ev_spec_end). */
static void hw_spec_clear(struct hw_gpu *g)
{
	for (size_t i = 0; i < g->n_spec; i++) {
		int l = g->spec_list[2 * i];
		int32_t pg = g->spec_list[2 * i + 1];

		g->spec_mark[l][pg >> 3] &= (uint8_t)~(1u << (pg & 7));
	}
	g->n_spec = 0;
	g->spec_groups = 0;
}

static int hw_spec_mark(struct hw_platform *p, struct hw_gpu *g, int l, int32_t pg)
{
	if (g->spec_mark[l] == NULL) {
		g->spec_mark[l] = calloc((size_t)(p->g[l].pool_pages / 8 + 1), 1);
		if (g->spec_mark[l] == NULL)
			return hw_fail(p, EMA_ERR_NOMEM, "out of memory for a prefetch");
	}
	if (hw_spec_marked(g, l, pg))
		return 0;
	if (g->n_spec == g->cap_spec) {
		size_t cap = g->cap_spec ? 2 * g->cap_spec : 1024;
		int32_t *n = realloc(g->spec_list, cap * 2 * sizeof *n);

		if (n == NULL)
			return hw_fail(p, EMA_ERR_NOMEM, "out of memory for a prefetch");
		g->spec_list = n;
		g->cap_spec = cap;
	}
	g->spec_list[2 * g->n_spec] = l;
	g->spec_list[2 * g->n_spec + 1] = pg;
	g->n_spec++;
	g->spec_mark[l][pg >> 3] |= (uint8_t)(1u << (pg & 7));
	return 0;
}

/* Appends the copies of group gi's slice of every remote page into ring
 * slot `slot`, skipping pages `skip` says are there already; returns the
 * new descriptor count. The staged bytes
 * (copied or not) are added to *staged_bytes, the copied ones to *copied. */
static int hw_add_group_copies(struct hw_platform *p, struct hw_gpu *g, struct hw_op *op,
			       const struct ema_iteration *it, int k, int gi, int L,
			       uint64_t slot_base, uint64_t ring, bool skip,
			       uint64_t *staged_bytes, uint64_t *copied)
{
	uint64_t pb = p->page_bytes, stage_off = 0;

	for (int r = 0; r < it->n_remote; r++) {
		const struct ema_remote_read *rr = &it->remote[r];
		uint64_t per = hw_staged_per_page(rr, pb);
		uint64_t off, len;

		hw_slice(per, gi, L, &off, &len);
		if (len == 0)
			continue;
		for (int i = 0; i < rr->n_pages; i++) {
			/* a ring smaller than a group wraps onto itself: timing
			 * stays right, and staged bytes are never checked */
			uint64_t at = (slot_base + stage_off) % ring;
			uint64_t piece = len > ring ? ring : len;

			stage_off += len;
			if (skip && hw_spec_marked(g, rr->gpu, rr->pages[i]))
				continue;
			if (at + len > ring)
				at = 0;
			k = hw_add_staged(op->slot->h, k, p, it, at, piece,
					  (uint64_t)(uintptr_t)
					  (hw_page_addr(p, rr->gpu, rr->pages[i]) + off));
			op->lender_bytes[rr->gpu] += piece;
			*copied += piece;
		}
	}
	*staged_bytes = stage_off;
	return k;
}

/*
 * An iteration in L layer groups. With staging (prefetch_depth D > 0 and a
 * staging area), group g's slice of every remote page is copied into the
 * staging ring on the prefetch stream, and the compute stream waits for it:
 *
 *   prefetch: C0 C1 .. CD | wait done[0] C(D+1) | wait done[1] C(D+2) ...
 *   compute:  wait C0, R0 | wait C1, R1 | ...        (R = reads + GEMM)
 *
 * so copies run at most D groups ahead, and a ring slot is rewritten only
 * after the group that read it has finished. Host issue order matters: a
 * stream can only wait for an event already recorded, so copies for group
 * j+D+1 are issued right after compute group j. The last D groups' turns
 * copy groups 0..D-1 of the next iteration, assuming the same remote pages
 * (decode batches change little); that iteration then copies only pages
 * it has new for those groups. Without it every iteration starts with
 * an unhidden copy, and the simulator, which speculates so, would not
 * model what the GPUs do.
 */
/* The borrowed pages an in-place iteration checks: those whose content
 * tag is known, every one with --verify, else about HW_SAMPLE_PAGES
 * spread evenly over the iteration's remote pages. */
int hw_inplace_checks(struct hw_platform *p, const struct ema_iteration *it,
			     struct hw_op *op)
{
	int known = 0, stride = 1, j = 0, seen = 0;

	for (int r = 0; r < it->n_remote; r++)
		for (int i = 0; i < it->remote[r].n_pages; i++)
			known += p->g[it->remote[r].gpu].page_tag[it->remote[r].pages[i]] != 0;
	if (known == 0)
		return 0;
	if (!p->verify && known > HW_SAMPLE_PAGES)
		stride = (known + HW_SAMPLE_PAGES - 1) / HW_SAMPLE_PAGES;
	op->n_check = (known + stride - 1) / stride;
	op->chk_pages = malloc((size_t)op->n_check * sizeof *op->chk_pages);
	op->chk_tags = malloc((size_t)op->n_check * sizeof *op->chk_tags);
	op->chk_gpus = malloc((size_t)op->n_check * sizeof *op->chk_gpus);
	if (op->chk_pages == NULL || op->chk_tags == NULL || op->chk_gpus == NULL)
		return hw_fail(p, EMA_ERR_NOMEM, "out of memory for an iteration");
	for (int r = 0; r < it->n_remote; r++)
		for (int i = 0; i < it->remote[r].n_pages; i++) {
			int l = it->remote[r].gpu;
			int32_t pg = it->remote[r].pages[i];

			if (p->g[l].page_tag[pg] == 0)
				continue;
			if (seen++ % stride == 0 && j < op->n_check) {
				op->chk_pages[j] = pg;
				op->chk_tags[j] = p->g[l].page_tag[pg];
				op->chk_gpus[j] = l;
				j++;
			}
		}
	op->n_check = j;
	return 0;
}

/* The split of an in-place iteration's read grid: part 0 the weights and
 * local pages (descriptors [0, lender_first[0])), then one part per lender
 * with pages, each given blocks by the time its bytes take on its link
 * against the local bytes on HBM (hw_split.h). Returns false when no
 * lender has pages (one plain read then). */
bool hw_inplace_split(const struct hw_platform *p, const struct hw_gpu *g,
			     const struct ema_hwk_seg *segs, int n_segs, uint64_t chunks,
			     const int *lender_first, const int *lender_n, int n_lenders,
			     struct ema_hwk_parts *parts)
{
	double t[EMA_HWK_MAX_PARTS];
	int np = 1;

	parts->chunk_first[0] = 0;
	t[0] = 0;
	for (int r = 0; r < n_lenders && np < EMA_HWK_MAX_PARTS; r++) {
		uint64_t b = 0;

		if (lender_n[r] == 0)
			continue;
		for (int i = 0; i < lender_n[r]; i++)
			b += segs[lender_first[r] + i].bytes;
		parts->chunk_first[np] = segs[lender_first[r]].first_chunk;
		t[np] = (double)b / p->remote_bps * 1e9;
		np++;
	}
	if (np == 1)
		return false;
	parts->chunk_first[np] = chunks;
	/* lenders' parts follow each other in the descriptors: part 0 is
	 * everything before the first of them */
	for (int i = 0; i < n_segs && segs[i].first_chunk < parts->chunk_first[1]; i++)
		t[0] += (double)segs[i].bytes;
	t[0] = t[0] / p->hbm_bps * 1e9;
	return ema_hwk_split_blocks(parts, np, t, (uint32_t)HW_READ_GRID(g, false),
				    (uint32_t)g->sms) > 0;
}

static int hw_iteration(struct ema_platform *pp, const struct ema_iteration *it,
			ema_iteration_fn fn, void *arg)
{
	struct hw_platform *p = hw_of(pp);
	struct hw_gpu *g;
	struct hw_op *op;
	struct hw_slot *sl;
	uint64_t pb = p->page_bytes, pool_bytes, n_remote_pages = 0;
	int L, D = it->window_depth, nslots = 1, k = 0, rc, adopt = 0, ring_base = 0;
	bool staged, gemm, speculate;
	int *r_first, *c_first, *r_n, *c_n, *s_first, *s_n;
	uint64_t *r_chunks, *c_chunks, *s_chunks, *staged_len;
	uint64_t ring = 0, gmax = 0;
	int cols_total;
	size_t nseg;
	/* in place: each lender's descriptors, the grid split, the checks */
	int lender_first[EMA_MAX_GPUS] = {0}, lender_n[EMA_MAX_GPUS] = {0};
	struct ema_hwk_parts parts;
	bool split = false;
	int k_chk = 0;
	uint64_t chk_chunks = 0;

	if (it->gpu < 0 || it->gpu >= p->n_gpus)
		return hw_fail(p, EMA_ERR_INTERNAL, "iteration on GPU %d of %d", it->gpu,
			       p->n_gpus);
	g = &p->g[it->gpu];
	if (g->busy)
		return hw_fail(p, EMA_ERR_INTERNAL,
			       "iteration on GPU %d while another runs there", it->gpu);
	if (it->remote_as_local && it->n_remote > 0)
		return hw_fail(p, EMA_ERR_UNSUPPORTED,
			       "remote KV at local cost (the pooled bound) exists only in the simulator");
	for (int i = 0; i < it->n_local_pages; i++)
		if (!hw_page_ok(p, it->gpu, it->local_pages[i]))
			return hw_fail(p, EMA_ERR_INTERNAL, "local page %d not in GPU %d's pool",
				       it->local_pages[i], it->gpu);
	if (it->n_remote < 0 || it->n_remote > EMA_MAX_GPUS)
		return hw_fail(p, EMA_ERR_INTERNAL, "n_remote %d", it->n_remote);
	for (int r = 0; r < it->n_remote; r++) {
		const struct ema_remote_read *rr = &it->remote[r];

		for (int i = 0; i < rr->n_pages; i++)
			if (!hw_page_ok(p, rr->gpu, rr->pages[i]) || rr->gpu == EMA_HOST)
				return hw_fail(p, EMA_ERR_INTERNAL,
					       "remote page %d not in GPU %d's pool",
					       rr->pages[i], rr->gpu);
		n_remote_pages += (uint64_t)rr->n_pages;
	}
	/* the lenders compute the attention over their pages: its own
	 * pipeline, layer by layer (hw_attn_iter.c) */
	if (hw_attn_wanted(it))
		return hw_attn_iteration(p, it, fn, arg);
	staged = it->prefetch_depth > 0 && n_remote_pages > 0 && it->staging_pages != NULL &&
		 it->n_staging_pages > 0;
	for (int i = 0; staged && i < it->n_staging_pages; i++)
		if (!hw_page_ok(p, it->gpu, it->staging_pages[i]))
			return hw_fail(p, EMA_ERR_INTERNAL, "staging page %d not in GPU %d's pool",
				       it->staging_pages[i], it->gpu);
	L = it->layer_groups < 1 ? 1 : it->layer_groups;
	if (L > HW_MAX_GROUPS)
		L = HW_MAX_GROUPS;
	if (!staged)
		L = 1;  /* nothing to overlap: one pass reads everything */

	/* Memory- or compute-bound: a GEMM does the FLOPs and reads its own
	 * weights, so the weight pass is skipped when the FLOPs take longer. */
	gemm = it->flops / p->flop_rate > (double)it->weight_bytes / p->hbm_bps;
	cols_total = gemm ? hw_gemm_cols(it->flops) : 0;

	op = hw_op_get(p, it->gpu);
	if (op == NULL)
		return hw_fail(p, EMA_ERR_NOMEM, "out of memory for an iteration");
	op->kind = HW_OP_ITER;
	op->ifn = fn;
	op->arg = arg;
	op->n_groups = L;
	op->staged = staged;
	op->tags_at_start = g->n_tag_calls;
	op->xfers_at_start = g->n_xfers;
	sl = g->iter_slot[g->iter_parity];
	op->slot = sl;

	/* Worst case: weights wrap once per group, each local page, each
	 * remote page once per group. */
	pool_bytes = g->pool_pages * pb;
	nseg = (size_t)L * (size_t)(it->weight_bytes / (pool_bytes ? pool_bytes : 1) /
				     (uint64_t)L + 4) +
	       (size_t)it->n_local_pages + (size_t)n_remote_pages * (size_t)L + 16;
	r_first = calloc((size_t)L + 1, sizeof *r_first);
	c_first = calloc((size_t)L + 1, sizeof *c_first);
	s_first = calloc((size_t)L + 1, sizeof *s_first);
	r_n = calloc((size_t)L, sizeof *r_n);
	c_n = calloc((size_t)L, sizeof *c_n);
	s_n = calloc((size_t)L, sizeof *s_n);
	r_chunks = calloc((size_t)L, sizeof *r_chunks);
	c_chunks = calloc((size_t)L, sizeof *c_chunks);
	s_chunks = calloc((size_t)L, sizeof *s_chunks);
	staged_len = calloc((size_t)L, sizeof *staged_len);
	if (r_first == NULL || c_first == NULL || s_first == NULL || r_n == NULL ||
	    c_n == NULL || s_n == NULL || r_chunks == NULL || c_chunks == NULL ||
	    s_chunks == NULL || staged_len == NULL) {
		rc = hw_fail(p, EMA_ERR_NOMEM, "out of memory for an iteration");
		goto fail_free;
	}

	if (staged) {
		uint64_t cap = (uint64_t)it->n_staging_pages * pb;

		for (int gi = 0; gi < L; gi++) {
			uint64_t sum = 0;

			for (int r = 0; r < it->n_remote; r++) {
				const struct ema_remote_read *rr = &it->remote[r];
				uint64_t off, len;

				hw_slice(hw_staged_per_page(rr, pb), gi, L, &off, &len);
				sum += len * (uint64_t)rr->n_pages;
			}
			if (sum > gmax)
				gmax = sum;
		}
		gmax = (gmax + 15) & ~(uint64_t)15;
		/* D + 1 ring slots of one group each: the core's window
		 * (ema_iteration_window_depth) fits the ring by construction,
		 * cut the same way; the clamp only guards layer_groups beyond
		 * HW_MAX_GROUPS, where the groups here are coarser. */
		nslots = gmax ? (int)(cap / gmax) : 1;
		if (nslots > D + 1)
			nslots = D + 1;
		if (nslots < 1)
			nslots = 1;
		ring = cap;
		if (D > nslots - 1)
			D = nslots - 1;
		/* staged pieces split at the staging pages' edges; the
		 * speculation adds D groups */
		nseg += (size_t)(L + D) * (size_t)(gmax / ring + 2) +
			2 * ((size_t)n_remote_pages * (size_t)(L + D) +
			     (size_t)(L + D) * (ring / pb + 2));
		/* the last iteration's speculation counts if it copied for
		 * the same groups; its ring slots follow that iteration's */
		if (g->spec_groups > 0 && g->spec_layer_groups == L) {
			adopt = g->spec_groups;
			ring_base = g->ring_next % nslots;
		}
	}
	speculate = staged && D >= 1 && L >= 2 * D;
	if (!staged && n_remote_pages > 0) {
		rc = hw_inplace_checks(p, it, op);
		if (rc != 0)
			goto fail_free;
		nseg += (size_t)op->n_check;
	}
	rc = hw_slot_reserve(p, sl, nseg, (size_t)op->n_check);
	if (rc != 0)
		goto fail_free;

	/* Build the descriptors: for each group its copies, then its reads. */
	for (int gi = 0; gi < L; gi++) {
		uint64_t woff, wlen;
		int lp0 = (int)((int64_t)it->n_local_pages * gi / L);
		int lp1 = (int)((int64_t)it->n_local_pages * (gi + 1) / L);
		uint64_t kv_per = it->n_local_pages ?
			it->kv_local_bytes / (uint64_t)it->n_local_pages : 0;

		if (kv_per > pb)
			kv_per = pb;
		c_first[gi] = k;
		if (staged)
			k = hw_add_group_copies(p, g, op, it, k, gi, L,
						(uint64_t)((gi + ring_base) % nslots) * gmax, ring,
						gi < adopt, &staged_len[gi], &op->remote_bytes);
		c_n[gi] = k - c_first[gi];
		c_chunks[gi] = ema_hwk_prefix(sl->h + c_first[gi], c_n[gi]);

		r_first[gi] = k;
		if (!gemm) {
			hw_slice(it->weight_bytes, gi, L, &woff, &wlen);
			k = hw_add_wrapped(sl->h, k, g->pool, pool_bytes, woff, wlen);
		}
		for (int i = lp0; i < lp1 && kv_per > 0; i++) {
			sl->h[k].src = (uint64_t)(uintptr_t)hw_page_addr(p, it->gpu,
									  it->local_pages[i]);
			sl->h[k].dst = 0;
			sl->h[k].bytes = kv_per;
			k++;
		}
		if (staged) {
			/* the group's staged data, as the copies laid it out */
			uint64_t at = (uint64_t)((gi + ring_base) % nslots) * gmax;
			uint64_t n = staged_len[gi];

			while (n > 0) {
				uint64_t a = at % ring;
				uint64_t len = ring - a < n ? ring - a : n;

				k = hw_add_staged(sl->h, k, p, it, a, len, 0);
				n -= len;
				at = a + len;
			}
		} else {
			for (int r = 0; r < it->n_remote; r++) {
				const struct ema_remote_read *rr = &it->remote[r];
				uint64_t per = rr->n_pages ? rr->bytes / (uint64_t)rr->n_pages : 0;

				if (per == 0 || per > pb)
					per = pb;
				lender_first[r] = k - r_first[gi];
				lender_n[r] = rr->n_pages;
				for (int i = 0; i < rr->n_pages; i++) {
					sl->h[k].src = (uint64_t)(uintptr_t)
						hw_page_addr(p, rr->gpu, rr->pages[i]);
					sl->h[k].dst = 0;
					sl->h[k].bytes = per;
					op->lender_bytes[rr->gpu] += per;
					op->remote_bytes += per;
					k++;
				}
			}
		}
		r_n[gi] = k - r_first[gi];
		r_chunks[gi] = ema_hwk_prefix(sl->h + r_first[gi], r_n[gi]);
		if (!staged && n_remote_pages > 0)
			split = hw_inplace_split(p, g, sl->h + r_first[gi], r_n[gi], r_chunks[gi],
						 lender_first, lender_n, it->n_remote, &parts);
	}
	/* The old speculation is used up; this iteration's covers all its
	 * remote pages, in the ring slots after its own last groups. */
	op->adopted = adopt;
	hw_spec_clear(g);
	for (int j = 0; speculate && j < D; j++) {
		uint64_t ignored = 0;

		s_first[j] = k;
		k = hw_add_group_copies(p, g, op, it, k, j, L,
					(uint64_t)((L + j + ring_base) % nslots) * gmax, ring,
					false, &ignored, &op->spec_bytes);
		s_n[j] = k - s_first[j];
		s_chunks[j] = ema_hwk_prefix(sl->h + s_first[j], s_n[j]);
	}
	op->remote_bytes += op->spec_bytes;
	for (int r = 0; speculate && r < it->n_remote; r++)
		for (int i = 0; i < it->remote[r].n_pages; i++) {
			rc = hw_spec_mark(p, g, it->remote[r].gpu, it->remote[r].pages[i]);
			if (rc != 0)
				goto fail_free;
		}
	/* the in-place checks' descriptors, after everything read */
	k_chk = k;
	for (int j = 0; j < op->n_check; j++, k++) {
		sl->h[k].src = op->chk_tags[j];
		sl->h[k].dst = (uint64_t)(uintptr_t)hw_page_addr(p, op->chk_gpus[j],
								  op->chk_pages[j]);
		sl->h[k].bytes = pb;
	}
	if (op->n_check > 0)
		chk_chunks = ema_hwk_prefix(sl->h + k_chk, op->n_check);
	if ((size_t)k > sl->cap) {
		rc = hw_fail(p, EMA_ERR_INTERNAL, "iteration descriptors overflow");
		goto fail_free;
	}

	/* Issue. */
	rc = EMA_ERR_DEVICE;
	if (cudaSetDevice(it->gpu) != cudaSuccess ||
	    cudaEventRecord(op->start, g->s_comp) != cudaSuccess ||
	    (k > 0 && cudaMemcpyAsync(sl->d, sl->h, (size_t)k * sizeof *sl->h,
				      cudaMemcpyHostToDevice, g->s_comp) != cudaSuccess) ||
	    cudaEventRecord(g->ev_up, g->s_comp) != cudaSuccess) {
		rc = hw_fail(p, EMA_ERR_DEVICE, "iteration launch on GPU %d: %s", it->gpu,
			     cudaGetErrorString(cudaGetLastError()));
		goto fail_free;
	}
	if (staged) {
		/* the previous speculation's copies are ahead on this stream */
		if (cudaStreamWaitEvent(g->s_pref, g->ev_up, 0) != cudaSuccess)
			goto fail_dev;
		for (int gi = 0; gi <= D && gi < L; gi++) {
			if (cudaEventRecord(g->ev_cstart[gi], g->s_pref) != cudaSuccess)
				goto fail_dev;
			rc = hw_copy_segs(p, g, it->method, sl->h + c_first[gi], sl->d + c_first[gi],
					  c_n[gi], c_chunks[gi], HW_PREFETCH_GRID(g), g->s_pref);
			if (rc != 0)
				goto fail_free;
			if (cudaEventRecord(g->ev_copied[gi], g->s_pref) != cudaSuccess)
				goto fail_dev;
		}
	}
	for (int gi = 0; gi < L; gi++) {
		int e, nx = gi + D + 1, j = gi + D + 1 - L;

		if (staged && cudaStreamWaitEvent(g->s_comp, g->ev_copied[gi], 0) != cudaSuccess)
			goto fail_dev;
		if (split)
			e = ema_hwk_read_split(sl->d + r_first[gi], r_n[gi], &parts, g->sink,
					       g->s_comp);
		else
			e = ema_hwk_read(sl->d + r_first[gi], r_n[gi], r_chunks[gi],
					 HW_READ_GRID(g, staged), g->sink, g->s_comp);
		if (e != 0) {
			rc = hw_fail(p, EMA_ERR_DEVICE, "read kernel: %s",
				     cudaGetErrorString((cudaError_t)e));
			goto fail_free;
		}
		if (cols_total > 0) {
			int c0 = (int)((int64_t)cols_total * gi / L) / 64 * 64;
			int c1 = gi + 1 == L ? cols_total :
				 (int)((int64_t)cols_total * (gi + 1) / L) / 64 * 64;

			rc = hw_issue_gemm(p, g, c1 - c0);
			if (rc != 0)
				goto fail_free;
		}
		if (cudaEventRecord(g->ev_done[gi], g->s_comp) != cudaSuccess)
			goto fail_dev;
		if (staged && nx < L) {
			/* nx runs D ahead of gi, and its ring slot was last
			 * read by nx - nslots == gi: both wait for done[gi] */
			if (cudaStreamWaitEvent(g->s_pref, g->ev_done[gi], 0) != cudaSuccess ||
			    cudaEventRecord(g->ev_cstart[nx], g->s_pref) != cudaSuccess)
				goto fail_dev;
			rc = hw_copy_segs(p, g, it->method, sl->h + c_first[nx], sl->d + c_first[nx],
					  c_n[nx], c_chunks[nx], HW_PREFETCH_GRID(g), g->s_pref);
			if (rc != 0)
				goto fail_free;
			if (cudaEventRecord(g->ev_copied[nx], g->s_pref) != cudaSuccess)
				goto fail_dev;
		} else if (speculate && j >= 0 && j < D) {
			/* group j of the next iteration goes to ring slot
			 * L + j, last read by group L + j - nslots == gi */
			if (cudaStreamWaitEvent(g->s_pref, g->ev_done[gi], 0) != cudaSuccess)
				goto fail_dev;
			rc = hw_copy_segs(p, g, it->method, sl->h + s_first[j], sl->d + s_first[j],
					  s_n[j], s_chunks[j], HW_PREFETCH_GRID(g), g->s_pref);
			if (rc != 0)
				goto fail_free;
			if (j == D - 1) {
				if (cudaEventRecord(g->ev_spec_end, g->s_pref) != cudaSuccess)
					goto fail_dev;
				g->spec_recorded = true;
			}
		}
	}
	if (cudaEventRecord(op->end, g->s_comp) != cudaSuccess)
		goto fail_dev;
	if (op->n_check > 0) {
		/* after the timed step: the pages' tags may still be being
		 * written by the lenders' fills (hw_tag_pages) */
		for (int l = 0; l < p->n_gpus; l++)
			if (p->g[l].tagged &&
			    cudaStreamWaitEvent(g->s_comp, p->g[l].ev_tag, 0) != cudaSuccess)
				goto fail_dev;
		if ((op->chk_done == NULL &&
		     cudaEventCreateWithFlags(&op->chk_done, cudaEventDisableTiming) != cudaSuccess) ||
		    cudaMemsetAsync(sl->d_bad, 0, (size_t)op->n_check * sizeof *sl->d_bad,
				    g->s_comp) != cudaSuccess)
			goto fail_dev;
		rc = ema_hwk_check(sl->d + k_chk, op->n_check, chk_chunks, p->verify, sl->d_bad,
				   g->s_comp);
		if (rc != 0) {
			rc = hw_fail(p, EMA_ERR_DEVICE, "check kernel: %s",
				     cudaGetErrorString((cudaError_t)rc));
			goto fail_free;
		}
		if (cudaMemcpyAsync(sl->h_bad, sl->d_bad, (size_t)op->n_check * sizeof *sl->h_bad,
				    cudaMemcpyDeviceToHost, g->s_comp) != cudaSuccess ||
		    cudaEventRecord(op->chk_done, g->s_comp) != cudaSuccess)
			goto fail_dev;
	}
	if (speculate) {
		g->spec_groups = D;
		g->spec_layer_groups = L;
		g->ring_next = (ring_base + L) % nslots;
	}
	free(r_first);
	free(c_first);
	free(s_first);
	free(r_n);
	free(c_n);
	free(s_n);
	free(r_chunks);
	free(c_chunks);
	free(s_chunks);
	free(staged_len);
	rc = hw_activate(p, op);
	if (rc != 0) {
		op->slot = NULL;
		hw_op_put(p, op);
		return rc;
	}
	g->iter_parity ^= 1;
	g->busy = true;
	return 0;

fail_dev:
	rc = hw_fail(p, EMA_ERR_DEVICE, "iteration launch on GPU %d: %s", it->gpu,
		     cudaGetErrorString(cudaGetLastError()));
fail_free:
	/* a half-made speculation must not be taken for a whole one */
	hw_spec_clear(g);
	free(r_first);
	free(c_first);
	free(s_first);
	free(r_n);
	free(c_n);
	free(s_n);
	free(r_chunks);
	free(c_chunks);
	free(s_chunks);
	free(staged_len);
	op->slot = NULL;
	hw_op_put(p, op);
	return rc;
}

/* ---- transfers ---------------------------------------------------- */

/* Host copies: one cudaMemcpyAsync per run of pages contiguous on both
 * sides, because the copy engines need no gather and calls cost ~6 us. */
static int hw_copy_runs(struct hw_platform *p, const struct ema_transfer *t,
			cudaStream_t s)
{
	uint64_t pb = p->page_bytes;

	for (int i = 0; i < t->n_pages;) {
		int j = i + 1;

		while (j < t->n_pages && t->src_pages[j] == t->src_pages[j - 1] + 1 &&
		       t->dst_pages[j] == t->dst_pages[j - 1] + 1)
			j++;
		HW_TRY_OP(p, cudaMemcpyAsync(hw_page_addr(p, t->dst_gpu, t->dst_pages[i]),
					     hw_page_addr(p, t->src_gpu, t->src_pages[i]),
					     (size_t)(j - i) * pb, cudaMemcpyDefault, s));
		i = j;
	}
	return 0;
}

static int hw_transfer(struct ema_platform *pp, const struct ema_transfer *t,
		       ema_transfer_fn fn, void *arg)
{
	struct hw_platform *p = hw_of(pp);
	uint64_t pb = p->page_bytes;
	int dev, n = t->n_pages, nc = 0, stride = 1, k = 0, rc;
	bool host_side, page_kernel, full = p->verify;
	cudaStream_t s;
	struct hw_op *op;
	struct hw_slot *sl;
	uint64_t gchunks = 0, cchunks = 0;

	if ((t->src_gpu != EMA_HOST && (t->src_gpu < 0 || t->src_gpu >= p->n_gpus)) ||
	    (t->dst_gpu != EMA_HOST && (t->dst_gpu < 0 || t->dst_gpu >= p->n_gpus)) ||
	    (t->src_gpu == EMA_HOST && t->dst_gpu == EMA_HOST))
		return hw_fail(p, EMA_ERR_INTERNAL, "transfer from %d to %d: no such route",
			       t->src_gpu, t->dst_gpu);
	if (n < 0 || (n > 0 && (t->src_pages == NULL || t->dst_pages == NULL)))
		return hw_fail(p, EMA_ERR_INTERNAL, "transfer of %d pages without page lists", n);
	if ((t->src_gpu == EMA_HOST || t->dst_gpu == EMA_HOST) && p->host_pages == 0 && n > 0)
		return hw_fail(p, EMA_ERR_NOSPACE,
			       "transfer to or from the host, but policy.host_gib is 0");
	for (int i = 0; i < n; i++) {
		if (!hw_page_ok(p, t->src_gpu, t->src_pages[i]))
			return hw_fail(p, EMA_ERR_INTERNAL, "source page %d not in pool of %d",
				       t->src_pages[i], t->src_gpu);
		if (!hw_page_ok(p, t->dst_gpu, t->dst_pages[i]))
			return hw_fail(p, EMA_ERR_INTERNAL, "destination page %d not in pool of %d",
				       t->dst_pages[i], t->dst_gpu);
	}
	if ((t->src_gpu < 0 && t->dst_gpu < 0) || t->src_gpu >= p->n_gpus || t->dst_gpu >= p->n_gpus)
		return hw_fail(p, EMA_ERR_INTERNAL, "transfer from %d to %d", t->src_gpu, t->dst_gpu);
	host_side = t->src_gpu == EMA_HOST || t->dst_gpu == EMA_HOST;
	page_kernel = !host_side && t->method == EMA_COPY_GATHER;
	if (t->dst_gpu == EMA_HOST) {
		dev = t->src_gpu;
		s = p->g[dev].s_hout;
	} else {
		dev = t->dst_gpu;
		s = t->src_gpu == EMA_HOST ? p->g[dev].s_hin : p->g[dev].s_peer;
	}
	/* pages whose content the engine just defined are moved after it is
	 * written (hw_tag_pages does not wait for the fill) */
	if (t->src_gpu >= 0 && t->src_gpu < p->n_gpus && p->g[t->src_gpu].tagged &&
	    cudaStreamWaitEvent(s, p->g[t->src_gpu].ev_tag, 0) != cudaSuccess)
		return hw_fail(p, EMA_ERR_DEVICE, "transfer: cannot order after page fills");
	/* a destination page may have been a staging page that a
	 * speculative prefetch is still writing */
	if (t->dst_gpu >= 0 && p->g[t->dst_gpu].spec_recorded &&
	    cudaStreamWaitEvent(s, p->g[t->dst_gpu].ev_spec_end, 0) != cudaSuccess)
		return hw_fail(p, EMA_ERR_DEVICE, "transfer: cannot order after a prefetch");
	/* the destination pages hold the moved content once it lands; the
	 * engine reads them only after the move is done */
	if (t->dst_gpu >= 0)
		for (int i = 0; i < n; i++)
			p->g[t->dst_gpu].page_tag[t->dst_pages[i]] = t->tags != NULL ? t->tags[i] : 0;
	p->g[dev].n_xfers++;
	op = hw_op_get(p, dev);
	if (op == NULL)
		return hw_fail(p, EMA_ERR_NOMEM, "out of memory for a transfer");
	op->kind = HW_OP_XFER;
	op->tfn = fn;
	op->arg = arg;
	op->src = t->src_gpu;
	op->dst = t->dst_gpu;
	op->bytes = t->bytes;
	op->purpose = t->purpose;
	op->full_check = full;
	if (t->tags != NULL && n > 0) {
		if (!full && n > HW_SAMPLE_PAGES)
			stride = (n + HW_SAMPLE_PAGES - 1) / HW_SAMPLE_PAGES;
		nc = (n + stride - 1) / stride;
		op->chk_pages = malloc((size_t)nc * sizeof *op->chk_pages);
		op->chk_tags = malloc((size_t)nc * sizeof *op->chk_tags);
		if (op->chk_pages == NULL || op->chk_tags == NULL) {
			hw_op_put(p, op);
			return hw_fail(p, EMA_ERR_NOMEM, "out of memory for a transfer");
		}
		for (int i = 0, j = 0; i < n; i += stride, j++) {
			op->chk_pages[j] = t->dst_pages[i];
			op->chk_tags[j] = t->tags[i];
		}
		op->n_check = nc;
		op->host_check = t->dst_gpu == EMA_HOST;
	}
	sl = hw_slot_get(p, dev);
	if (sl == NULL) {
		hw_op_put(p, op);
		return hw_fail(p, EMA_ERR_NOMEM, "out of memory for a transfer");
	}
	op->slot = sl;
	rc = hw_slot_reserve(p, sl, (size_t)n + (size_t)nc + 1, (size_t)nc + 1);
	if (rc != 0)
		goto fail;
	if (page_kernel) {
		/* (source, destination) page pairs, four to a descriptor: a
		 * quarter of the upload and no prefix sums. With a descriptor
		 * per page, 64 KiB pages moved at 86-89% of the link in 256 MiB
		 * moves against 92% at 2 MiB (H200s, 2026-11-30). */
		int32_t *pairs = (int32_t *)(void *)sl->h;

		for (int i = 0; i < n; i++) {
			pairs[2 * i] = t->src_pages[i];
			pairs[2 * i + 1] = t->dst_pages[i];
		}
		k = (n + 3) / 4;
	} else if (!host_side) {
		for (int i = 0; i < n; i++, k++) {
			sl->h[k].src = (uint64_t)(uintptr_t)hw_page_addr(p, t->src_gpu, t->src_pages[i]);
			sl->h[k].dst = (uint64_t)(uintptr_t)hw_page_addr(p, t->dst_gpu, t->dst_pages[i]);
			sl->h[k].bytes = pb;
		}
		gchunks = ema_hwk_prefix(sl->h, k);
	}
	if (nc > 0 && !op->host_check) {
		for (int j = 0; j < nc; j++) {
			sl->h[k + j].src = op->chk_tags[j];
			sl->h[k + j].dst = (uint64_t)(uintptr_t)hw_page_addr(p, t->dst_gpu,
									      op->chk_pages[j]);
			sl->h[k + j].bytes = pb;
		}
		cchunks = ema_hwk_prefix(sl->h + k, nc);
	}

	rc = EMA_ERR_DEVICE;
	if (cudaSetDevice(dev) != cudaSuccess || cudaEventRecord(op->start, s) != cudaSuccess)
		goto fail_dev;
	if (k + (op->host_check ? 0 : nc) > 0 &&
	    cudaMemcpyAsync(sl->d, sl->h, (size_t)(k + (op->host_check ? 0 : nc)) * sizeof *sl->h,
			    cudaMemcpyHostToDevice, s) != cudaSuccess)
		goto fail_dev;
	if (host_side) {
		if (t->method == EMA_COPY_BATCH) {
			/* host pages through the batch API, one entry per page */
			struct ema_hwk_seg *h = malloc((size_t)(n ? n : 1) * sizeof *h);

			if (h == NULL) {
				rc = hw_fail(p, EMA_ERR_NOMEM, "out of memory for a transfer");
				goto fail;
			}
			for (int i = 0; i < n; i++) {
				h[i].src = (uint64_t)(uintptr_t)hw_page_addr(p, t->src_gpu,
									       t->src_pages[i]);
				h[i].dst = (uint64_t)(uintptr_t)hw_page_addr(p, t->dst_gpu,
									       t->dst_pages[i]);
				h[i].bytes = pb;
			}
			rc = hw_copy_segs(p, &p->g[dev], EMA_COPY_BATCH, h, NULL, n, 0, 0, s);
			free(h);
		} else {
			rc = hw_copy_runs(p, t, s);
		}
	} else if (page_kernel) {
		int e = ema_hwk_gather_pages((const int32_t *)(const void *)sl->d, n,
					     p->g[t->src_gpu].pool, p->g[t->dst_gpu].pool, pb,
					     HW_PREFETCH_GRID(&p->g[dev]), s);

		rc = e == 0 ? 0 : hw_fail(p, EMA_ERR_DEVICE, "page gather kernel: %s",
					  cudaGetErrorString((cudaError_t)e));
	} else {
		rc = hw_copy_segs(p, &p->g[dev], t->method, sl->h, sl->d, k, gchunks,
				  HW_PREFETCH_GRID(&p->g[dev]), s);
	}
	if (rc != 0)
		goto fail;
	if (nc > 0 && !op->host_check) {
		int e;

		if (cudaMemsetAsync(sl->d_bad, 0, (size_t)nc * sizeof *sl->d_bad, s) != cudaSuccess)
			goto fail_dev;
		e = ema_hwk_check(sl->d + k, nc, cchunks, full, sl->d_bad, s);
		if (e != 0)
			goto fail_dev;
		if (cudaMemcpyAsync(sl->h_bad, sl->d_bad, (size_t)nc * sizeof *sl->h_bad,
				    cudaMemcpyDeviceToHost, s) != cudaSuccess)
			goto fail_dev;
	}
	if (cudaEventRecord(op->end, s) != cudaSuccess)
		goto fail_dev;
	rc = hw_activate(p, op);
	if (rc != 0)
		goto fail;
	return 0;

fail_dev:
	rc = hw_fail(p, EMA_ERR_DEVICE, "transfer %d -> %d: %s", t->src_gpu, t->dst_gpu,
		     cudaGetErrorString(cudaGetLastError()));
fail:
	hw_op_put(p, op);
	return rc;
}

/* ---- completion --------------------------------------------------- */

float hw_elapsed_ms(cudaEvent_t a, cudaEvent_t b)
{
	float ms = 0.0f;

	if (cudaEventElapsedTime(&ms, a, b) != cudaSuccess)
		return 0.0f;
	return ms;
}

/* Host pages are checked by the CPU once the copy has landed. */
static int hw_host_check(struct hw_platform *p, const struct hw_op *op)
{
	uint64_t words = p->page_bytes / 8;
	int bad = 0;

	for (int j = 0; j < op->n_check; j++) {
		const uint64_t *d = (const uint64_t *)hw_page_addr(p, EMA_HOST, op->chk_pages[j]);

		if (op->full_check) {
			for (uint64_t w = 0; w < words; w++)
				if (d[w] != ema_hwk_pattern(op->chk_tags[j], w)) {
					bad++;
					break;
				}
		} else if (words > 0) {
			for (uint64_t l = 0; l < 32; l++) {
				uint64_t w = (words - 1) * l / 31;

				if (d[w] != ema_hwk_pattern(op->chk_tags[j], w)) {
					bad++;
					break;
				}
			}
		}
	}
	return bad;
}

static int hw_finish_xfer(struct hw_platform *p, struct hw_op *op, int64_t t,
			  struct ema_error *err)
{
	int bad = 0, first = -1, rc = 0;
	ema_transfer_fn fn = op->tfn;
	void *arg = op->arg;

	if (op->n_check > 0) {
		if (op->host_check) {
			bad = hw_host_check(p, op);
		} else {
			for (int j = 0; j < op->n_check; j++)
				if (op->slot->h_bad[j]) {
					bad++;
					if (first < 0)
						first = j;
				}
		}
		p->checked += (uint64_t)op->n_check;
		p->corrupted += (uint64_t)bad;
		if (bad > 0)
			rc = ema_error_set(err, EMA_ERR_CORRUPT,
					   "data integrity: %d of %d checked pages corrupted "
					   "after a transfer from %d to %d (first: page %d, tag %#llx)",
					   bad, op->n_check, op->src, op->dst,
					   first >= 0 ? op->chk_pages[first] : -1,
					   first >= 0 ? (unsigned long long)op->chk_tags[first] : 0ull);
	}
	p->stats.bytes[op->src + 1][op->dst + 1] += op->bytes;
	if ((int)op->purpose >= 0 && op->purpose < EMA_XFER_PURPOSES)
		p->stats.bytes_by_purpose[op->purpose] += op->bytes;
	hw_op_put(p, op);
	if (fn != NULL)
		fn(arg, t);
	return rc;
}

static int hw_finish_iter(struct hw_platform *p, struct hw_op *op, int64_t t,
			  struct ema_error *err)
{
	struct hw_gpu *g = &p->g[op->gpu];
	struct ema_iteration_result r;
	ema_iteration_fn fn = op->ifn;
	void *arg = op->arg;
	double stall_ms = 0.0;
	int rc = 0;

	if (op->n_check > 0) {
		int bad = 0, first = -1;
		cudaError_t e = cudaEventSynchronize(op->chk_done);

		if (e != cudaSuccess)
			rc = ema_error_set(err, EMA_ERR_DEVICE,
					   "GPU %d failed checking in-place reads: %s", op->gpu,
					   cudaGetErrorString(e));
		for (int j = 0; e == cudaSuccess && j < op->n_check; j++)
			if (op->slot->h_bad[j]) {
				bad++;
				if (first < 0)
					first = j;
			}
		p->checked += (uint64_t)op->n_check;
		p->corrupted += (uint64_t)bad;
		if (bad > 0)
			rc = ema_error_set(err, EMA_ERR_CORRUPT,
					   "data integrity: %d of %d checked pages corrupted "
					   "where GPU %d read them in place (first: page %d of GPU "
					   "%d, tag %#llx)",
					   bad, op->n_check, op->gpu, op->chk_pages[first],
					   op->chk_gpus[first], (unsigned long long)op->chk_tags[first]);
	}

	if (op->attn) {
		int r2 = hw_attn_finish(p, op, rc == 0 ? err : NULL);

		if (rc == 0)
			rc = r2;
	}
	memset(&r, 0, sizeof r);
	r.end_ns = t;
	r.start_ns = t - (int64_t)(hw_elapsed_ms(op->start, op->end) * 1e6);
	if (r.start_ns < 0)
		r.start_ns = 0;
	if (op->staged) {
		/* compute waited from the end of the previous group (or the
		 * upload) to the arrival of this group's copies */
		for (int gi = 0; gi < op->n_groups; gi++) {
			cudaEvent_t before = gi == 0 ? g->ev_up : g->ev_done[gi - 1];
			float ms = hw_elapsed_ms(before, g->ev_copied[gi]);

			if (ms > 0)
				stall_ms += ms;
		}
	}
	r.stall_ns = (int64_t)(stall_ms * 1e6);
	r.remote_bytes = op->remote_bytes;
	if (op->staged && p->trace_left > 0) {
		/* where an iteration's time goes, group by group (ms from its
		 * start): copy k began at s and landed at c, read k ended at d */
		p->trace_left--;
		fprintf(stderr, "ema hw trace: gpu %d, %d groups, %.1f MB copied (%.1f MB for "
			"the next), %d groups taken from the last, %llu tag calls and %llu "
			"transfers meanwhile, total %.3f ms:",
			op->gpu, op->n_groups, (double)op->remote_bytes / 1e6,
			(double)op->spec_bytes / 1e6, op->adopted,
			(unsigned long long)(g->n_tag_calls - op->tags_at_start),
			(unsigned long long)(g->n_xfers - op->xfers_at_start),
			hw_elapsed_ms(op->start, op->end));
		for (int gi = 0; gi < op->n_groups; gi++)
			fprintf(stderr, " [s%.3f c%.3f d%.3f]",
				hw_elapsed_ms(op->start, g->ev_cstart[gi]),
				hw_elapsed_ms(op->start, g->ev_copied[gi]),
				hw_elapsed_ms(op->start, g->ev_done[gi]));
		fputc('\n', stderr);
	}
	for (int l = 0; l < p->n_gpus; l++)
		if (op->lender_bytes[l] > 0) {
			p->stats.bytes[l + 1][op->gpu + 1] += op->lender_bytes[l];
			p->stats.bytes_by_purpose[EMA_XFER_PREFETCH] += op->lender_bytes[l];
		}
	/* remote attention's queries, the other way */
	for (int l = 0; l < p->n_gpus; l++)
		if (op->to_lender[l] > 0) {
			p->stats.bytes[op->gpu + 1][l + 1] += op->to_lender[l];
			p->stats.bytes_by_purpose[EMA_XFER_PREFETCH] += op->to_lender[l];
		}
	g->busy = false;
	op->slot = NULL;
	hw_op_put(p, op);
	if (fn != NULL)
		fn(arg, &r);
	return rc;
}

static int hw_cmp_done(const void *a, const void *b)
{
	const struct hw_op *x = *(struct hw_op *const *)a;
	const struct hw_op *y = *(struct hw_op *const *)b;

	if (x->est_end != y->est_end)
		return x->est_end < y->est_end ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Moves completed operations to p->done, each with the time it ended:
 * the poll's time, minus how long before the GPU's latest completion of
 * this pass it ended (the events say), so completions found together are
 * dispatched in the order they happened. */
static int hw_poll(struct hw_platform *p, int64_t now, size_t *n_done,
		   struct ema_error *err)
{
	size_t keep = 0, nd = 0;

	for (size_t i = 0; i < p->n_active; i++) {
		struct hw_op *op = p->active[i];
		cudaError_t e = cudaEventQuery(op->end);

		if (e == cudaSuccess) {
			p->done[nd++] = op;
		} else if (e == cudaErrorNotReady) {
			p->active[keep++] = op;
		} else {
			return ema_error_set(err, EMA_ERR_DEVICE,
					     "GPU %d failed while running an operation: %s",
					     op->gpu, cudaGetErrorString(e));
		}
	}
	p->n_active = keep;
	for (size_t i = 0; i < nd; i++) {
		struct hw_op *latest = p->done[i];
		double ms;

		for (size_t j = 0; j < nd; j++)
			if (p->done[j]->gpu == p->done[i]->gpu &&
			    hw_elapsed_ms(latest->end, p->done[j]->end) > 0)
				latest = p->done[j];
		ms = hw_elapsed_ms(p->done[i]->end, latest->end);
		p->done[i]->est_end = now - (int64_t)(ms * 1e6);
		if (p->done[i]->est_end < p->last_ns)
			p->done[i]->est_end = p->last_ns;
	}
	qsort(p->done, nd, sizeof *p->done, hw_cmp_done);
	*n_done = nd;
	return 0;
}

static int hw_run(struct ema_platform *pp, int64_t horizon_ns, struct ema_error *err)
{
	struct hw_platform *p = hw_of(pp);
	int rc = 0;

	p->stop = false;
	for (;;) {
		int64_t now = hw_now(pp), next;
		size_t nd = 0, di = 0;
		bool fired = false;

		if (p->stop)
			break;
		if (horizon_ns > 0 && now >= horizon_ns)
			break;
		if (p->n_active == 0 && ema_eventq_size(&p->timers) == 0)
			break;
		if (p->n_active > 0) {
			rc = hw_poll(p, now, &nd, err);
			if (rc != 0)
				return rc;
		}
		/* timers and completions, merged in time order */
		for (;;) {
			int64_t tt = ema_eventq_peek_time(&p->timers);
			bool timer_due = tt <= now && (horizon_ns <= 0 || tt < horizon_ns);

			if (timer_due && (di == nd || tt <= p->done[di]->est_end)) {
				struct ema_event ev;

				ema_eventq_pop(&p->timers, &ev);
				if (ev.time_ns > p->last_ns)
					p->last_ns = ev.time_ns;
				p->events++;
				fired = true;
				ev.fn(ev.arg, p->last_ns);
			} else if (di < nd) {
				struct hw_op *op = p->done[di++];
				int64_t t = op->est_end > p->last_ns ? op->est_end : p->last_ns;

				p->last_ns = t;
				p->events++;
				fired = true;
				int r = op->kind == HW_OP_ITER ? hw_finish_iter(p, op, t, err) :
					hw_finish_xfer(p, op, t, err);

				if (r != 0 && rc == 0)
					rc = r;
			} else {
				break;
			}
		}
		if (rc != 0)
			return rc;
		if (fired)
			continue;
		/* Nothing happened: wait briefly. With GPU work in flight we
		 * only yield (a completion must be seen within microseconds);
		 * with only a far timer we sleep until just before it. */
		next = ema_eventq_peek_time(&p->timers);
		if (p->n_active == 0 && next != INT64_MAX) {
			int64_t wait = next - hw_now(pp);

			if (horizon_ns > 0 && horizon_ns < next)
				wait = horizon_ns - hw_now(pp);
			if (wait > 200000) {
				struct timespec ts;

				wait -= 100000;
				ts.tv_sec = wait / 1000000000;
				ts.tv_nsec = wait % 1000000000;
				nanosleep(&ts, NULL);
				continue;
			}
		}
		sched_yield();
	}
	return 0;
}

static void hw_stop(struct ema_platform *pp)
{
	hw_of(pp)->stop = true;
}

static uint64_t hw_events(struct ema_platform *pp)
{
	return hw_of(pp)->events;
}

static const struct ema_link_stats *hw_link_stats(struct ema_platform *pp)
{
	return &hw_of(pp)->stats;
}

static void hw_destroy(struct ema_platform *pp)
{
	struct hw_platform *p = hw_of(pp);

	if (p == NULL)
		return;
	hw_attn_free(p);
	for (int i = 0; i < p->n_gpus; i++) {
		struct hw_gpu *g = &p->g[i];

		if (cudaSetDevice(i) != cudaSuccess)
			continue;
		cudaDeviceSynchronize();
		if (g->blas != NULL && p->have_blas)
			p->blas.destroy(g->blas);
		if (g->s_comp != NULL)
			cudaStreamDestroy(g->s_comp);
		if (g->s_pref != NULL)
			cudaStreamDestroy(g->s_pref);
		if (g->s_peer != NULL)
			cudaStreamDestroy(g->s_peer);
		if (g->s_hin != NULL)
			cudaStreamDestroy(g->s_hin);
		if (g->s_hout != NULL)
			cudaStreamDestroy(g->s_hout);
		if (g->s_util != NULL)
			cudaStreamDestroy(g->s_util);
		if (g->s_tag != NULL)
			cudaStreamDestroy(g->s_tag);
		if (g->ev_tag != NULL)
			cudaEventDestroy(g->ev_tag);
		if (g->ev_up != NULL)
			cudaEventDestroy(g->ev_up);
		for (int k = 0; k < HW_MAX_GROUPS; k++) {
			if (g->ev_copied[k] != NULL)
				cudaEventDestroy(g->ev_copied[k]);
			if (g->ev_done[k] != NULL)
				cudaEventDestroy(g->ev_done[k]);
			if (g->ev_cstart[k] != NULL)
				cudaEventDestroy(g->ev_cstart[k]);
		}
		if (g->ev_spec_end != NULL)
			cudaEventDestroy(g->ev_spec_end);
		for (int l = 0; l < EMA_MAX_GPUS; l++)
			free(g->spec_mark[l]);
		free(g->spec_list);
		free(g->page_tag);
		cudaFree(g->pool);
		cudaFree(g->sink);
		cudaFree(g->ga);
		cudaFree(g->gb);
		cudaFree(g->gc);
	}
	while (p->all_ops != NULL) {
		struct hw_op *op = p->all_ops;

		p->all_ops = op->next_all;
		cudaEventDestroy(op->start);
		cudaEventDestroy(op->end);
		if (op->chk_done != NULL)
			cudaEventDestroy(op->chk_done);
		free(op->chk_pages);
		free(op->chk_tags);
		free(op->chk_gpus);
		free(op);
	}
	while (p->all_slots != NULL) {
		struct hw_slot *s = p->all_slots;

		p->all_slots = s->next_all;
		hw_slot_free_mem(s);
		free(s);
	}
	if (p->host_pool != NULL)
		cudaFreeHost(p->host_pool);
	if (p->have_blas)
		ema_hw_blas_unload(&p->blas);
	ema_eventq_destroy(&p->timers);
	free(p->active);
	free(p->done);
	free(p);
}

/* The ops with an error record: the message hw_fail kept, in its words. */
static int hw_op_result(struct hw_platform *p, int rc, struct ema_error *err)
{
	if (rc != 0 && err != NULL)
		ema_error_set(err, rc, "hw: %s", p->last_err[0] ? p->last_err : ema_status_str(rc));
	return rc;
}

static int hw_timer_op(struct ema_platform *pp, int64_t at_ns, ema_timer_fn fn, void *arg,
		       struct ema_error *err)
{
	return hw_op_result(hw_of(pp), hw_timer(pp, at_ns, fn, arg), err);
}

static int hw_iteration_op(struct ema_platform *pp, const struct ema_iteration *it,
			   ema_iteration_fn fn, void *arg, struct ema_error *err)
{
	return hw_op_result(hw_of(pp), hw_iteration(pp, it, fn, arg), err);
}

static int hw_transfer_op(struct ema_platform *pp, const struct ema_transfer *t,
			  ema_transfer_fn fn, void *arg, struct ema_error *err)
{
	return hw_op_result(hw_of(pp), hw_transfer(pp, t, fn, arg), err);
}

static int hw_tag_pages_op(struct ema_platform *pp, int gpu, int n, const int32_t *pages,
			   const uint64_t *tags, struct ema_error *err)
{
	return hw_op_result(hw_of(pp), hw_tag_pages(pp, gpu, n, pages, tags), err);
}

static const struct ema_platform_ops hw_ops = {
	.name = "hw",
	/* the decode read splits its grid between local pages and each
	 * lender's (hw_inplace_split) */
	.inplace_beside_local = true,
	/* hw/hw_attn_iter.c: lenders compute beside in-place reads, but
	 * a step that also stages from another lender is refused */
	.remote_attention = true,
	.attention_beside_staged = false,
	.now = hw_now,
	.timer = hw_timer_op,
	.iteration = hw_iteration_op,
	.transfer = hw_transfer_op,
	.run = hw_run,
	.stop = hw_stop,
	.events = hw_events,
	.link_stats = hw_link_stats,
	.tag_pages = hw_tag_pages_op,
	.destroy = hw_destroy,
};

/* ---- creation ----------------------------------------------------- */

static int hw_setup_gpu(struct hw_platform *p, int i, uint64_t pages, struct ema_error *err)
{
	struct hw_gpu *g = &p->g[i];
	uint64_t bytes = pages * p->page_bytes;
	size_t free_b = 0, total_b = 0;
	const size_t gdim = EMA_HW_GEMM_DIM;

	EMA_HW_TRY(err, cudaSetDevice(i));
	EMA_HW_TRY(err, cudaDeviceGetAttribute(&g->sms, cudaDevAttrMultiProcessorCount, i));
	EMA_HW_TRY(err, cudaMemGetInfo(&free_b, &total_b));
	if (bytes + (256u << 20) > free_b)
		return ema_error_set(err, EMA_ERR_NOSPACE,
				     "GPU %d has %.2f GiB free; its pool of %llu pages of %llu "
				     "bytes needs %.2f GiB (plus 0.25 GiB of scratch): lower "
				     "gpu_mem_cap_gib to %.1f or less",
				     i, (double)free_b / HW_GIB, (unsigned long long)pages,
				     (unsigned long long)p->page_bytes, (double)bytes / HW_GIB,
				     (double)free_b / HW_GIB - 0.5);
	g->pool_pages = pages;
	if (bytes > 0)
		EMA_HW_TRY(err, cudaMalloc((void **)&g->pool, bytes));
	g->page_tag = calloc(pages > 0 ? pages : 1, sizeof *g->page_tag);
	if (g->page_tag == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	EMA_HW_TRY(err, cudaStreamCreateWithFlags(&g->s_comp, cudaStreamNonBlocking));
	EMA_HW_TRY(err, cudaStreamCreateWithFlags(&g->s_pref, cudaStreamNonBlocking));
	EMA_HW_TRY(err, cudaStreamCreateWithFlags(&g->s_peer, cudaStreamNonBlocking));
	EMA_HW_TRY(err, cudaStreamCreateWithFlags(&g->s_hin, cudaStreamNonBlocking));
	EMA_HW_TRY(err, cudaStreamCreateWithFlags(&g->s_hout, cudaStreamNonBlocking));
	EMA_HW_TRY(err, cudaStreamCreateWithFlags(&g->s_util, cudaStreamNonBlocking));
	EMA_HW_TRY(err, cudaStreamCreateWithFlags(&g->s_tag, cudaStreamNonBlocking));
	EMA_HW_TRY(err, cudaEventCreateWithFlags(&g->ev_tag, cudaEventDisableTiming));
	EMA_HW_TRY(err, cudaEventCreate(&g->ev_up));
	for (int k = 0; k < HW_MAX_GROUPS; k++) {
		EMA_HW_TRY(err, cudaEventCreate(&g->ev_copied[k]));
		EMA_HW_TRY(err, cudaEventCreate(&g->ev_done[k]));
		EMA_HW_TRY(err, cudaEventCreate(&g->ev_cstart[k]));
	}
	EMA_HW_TRY(err, cudaEventCreateWithFlags(&g->ev_spec_end, cudaEventDisableTiming));
	EMA_HW_TRY(err, cudaMalloc((void **)&g->sink, 64));
	EMA_HW_TRY(err, cudaMalloc(&g->ga, gdim * gdim * 2));
	EMA_HW_TRY(err, cudaMalloc(&g->gb, gdim * EMA_HW_GEMM_COLS * 2));
	EMA_HW_TRY(err, cudaMalloc(&g->gc, gdim * EMA_HW_GEMM_COLS * 2));
	EMA_HW_TRY(err, (cudaError_t)ema_hwk_fill_bf16(g->ga, gdim * gdim, 1, g->s_comp));
	EMA_HW_TRY(err, (cudaError_t)ema_hwk_fill_bf16(g->gb, gdim * EMA_HW_GEMM_COLS, 2,
							g->s_comp));
	if (p->have_blas) {
		if (p->blas.create(&g->blas) != CUBLAS_STATUS_SUCCESS ||
		    p->blas.set_stream(g->blas, g->s_comp) != CUBLAS_STATUS_SUCCESS)
			return ema_error_set(err, EMA_ERR_DEVICE,
					     "cuBLAS handle on GPU %d could not be made", i);
	}
	/* warm-up: cuBLAS picks kernels and allocates its workspace now, not
	 * inside the first timed iteration */
	if (ema_hw_gemm(p->have_blas ? &p->blas : NULL, g->blas, 64, g->ga, g->gb, g->gc,
			g->s_comp) != 0)
		return ema_error_set(err, EMA_ERR_DEVICE, "warm-up GEMM failed on GPU %d", i);
	EMA_HW_TRY(err, cudaStreamSynchronize(g->s_comp));
	g->iter_slot[0] = hw_slot_get(p, i);
	g->iter_slot[1] = hw_slot_get(p, i);
	if (g->iter_slot[0] == NULL || g->iter_slot[1] == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	return 0;
}

int ema_hw_platform_create(struct ema_platform **out, const struct ema_platform_params *params,
			   const struct ema_platform_opts *opts, struct ema_error *err)
{
	struct hw_platform *p;
	int count = 0, need = 1, rc;
	cudaError_t e;
	uint64_t page_bytes;
	const uint64_t *pool_pages;
	const struct ema_hw_profile *hw;

	*out = NULL;
	if (params == NULL || params->hw == NULL)
		return ema_error_set(err, EMA_ERR_INTERNAL, "hw platform: no parameters");
	page_bytes = params->page_bytes;
	pool_pages = params->pool_pages;
	hw = params->hw;
	if (page_bytes == 0 || page_bytes % 256 != 0)
		return ema_error_set(err, EMA_ERR_INPUT,
				     "hw backend: page size %llu bytes is not a positive "
				     "multiple of 256", (unsigned long long)page_bytes);
	/* GPUs: those the tenants sit on, and those with a pool to lend */
	if (params->gpus_used > need)
		need = params->gpus_used;
	if (need > EMA_MAX_GPUS)
		return ema_error_set(err, EMA_ERR_INPUT, "hw backend: %d GPUs asked for", need);
	e = cudaGetDeviceCount(&count);
	if (e != cudaSuccess)
		return ema_error_set(err, EMA_ERR_UNSUPPORTED,
				     "hw backend: no usable NVIDIA driver or GPU (%s)",
				     cudaGetErrorString(e));
	if (count < need)
		return ema_error_set(err, EMA_ERR_UNSUPPORTED,
				     "hw backend: the scenario needs %d GPUs (tenants and "
				     "pools of %s), this machine has %d",
				     need, hw->name[0] ? hw->name : "the profile", count);

	p = calloc(1, sizeof *p);
	if (p == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	p->base.ops = &hw_ops;
	p->params = *params;
	p->base.params = &p->params;
	p->n_gpus = need;
	p->page_bytes = page_bytes;
	p->verify = opts != NULL && opts->verify;
	{
		const char *tr = getenv("EMA_HW_TRACE");

		p->trace_left = tr != NULL ? strtol(tr, NULL, 10) : 0;
	}
	p->hbm_bps = (hw->hbm_read_gbps > 0 ? hw->hbm_read_gbps : 4400.0) *
		     (hw->hbm_efficiency > 0 ? hw->hbm_efficiency : 1.0) * 1e9;
	/* what one link carries to a kernel reading the peer in place, as the
	 * cost model takes it (ema_cost_link_gbps) */
	p->remote_bps = (hw->remote_read_gbps > 0 &&
			 (hw->link_gbps <= 0 || hw->remote_read_gbps < hw->link_gbps) ?
			 hw->remote_read_gbps : hw->link_gbps > 0 ? hw->link_gbps : 360.0) * 1e9;
	p->flop_rate = (hw->peak_tflops > 0 ? hw->peak_tflops : 800.0) *
		       (hw->flops_efficiency > 0 ? hw->flops_efficiency : 1.0) * 1e12;
	if (ema_eventq_init(&p->timers, 64) != 0) {
		free(p);
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	}
	rc = hw_attn_setup(p, err);
	if (rc != 0) {
		ema_eventq_destroy(&p->timers);
		free(p);
		return rc;
	}
	p->have_blas = ema_hw_blas_load(&p->blas, p->blas_why, sizeof p->blas_why);
	if (!p->have_blas)
		snprintf(p->last_err, sizeof p->last_err,
			 "prefill GEMMs use a slow fallback kernel: %s", p->blas_why);

	for (int i = 0; i < need; i++) {
		uint64_t pages = i < params->n_gpus ? pool_pages[i] : 0;

		rc = hw_setup_gpu(p, i, pages, err);
		if (rc != 0)
			goto fail;
	}
	for (int i = 0; i < need; i++)
		for (int j = 0; j < need; j++) {
			int can = 0;

			if (i == j)
				continue;
			EMA_HW_TRY_GOTO(err, rc, fail, cudaDeviceCanAccessPeer(&can, i, j));
			if (!can) {
				rc = ema_error_set(err, EMA_ERR_UNSUPPORTED,
						   "hw backend: GPU %d cannot access GPU %d's "
						   "memory (no peer access)", i, j);
				goto fail;
			}
			EMA_HW_TRY_GOTO(err, rc, fail, cudaSetDevice(i));
			e = cudaDeviceEnablePeerAccess(j, 0);
			if (e == cudaErrorPeerAccessAlreadyEnabled)
				cudaGetLastError();
			else
				EMA_HW_TRY_GOTO(err, rc, fail, e);
		}
	p->host_pages = params->host_pages_per_gpu * (uint64_t)need;
	if (p->host_pages > 0) {
		e = cudaHostAlloc((void **)&p->host_pool, p->host_pages * page_bytes,
				  cudaHostAllocPortable | cudaHostAllocMapped);
		if (e != cudaSuccess) {
			rc = ema_error_set(err, EMA_ERR_NOSPACE,
					   "hw backend: cannot pin %.2f GiB of host memory "
					   "(policy.host_gib %.2f per GPU): %s",
					   (double)(p->host_pages * page_bytes) / HW_GIB,
					   (double)(params->host_pages_per_gpu * page_bytes) / HW_GIB,
					   cudaGetErrorString(e));
			p->host_pool = NULL;
			goto fail;
		}
	}
	p->t0 = ema_hw_clock_ns();
	*out = &p->base;
	return 0;
fail:
	hw_destroy(&p->base);
	return rc;
}

/* ---- integrity ---------------------------------------------------- */

int ema_hw_fill_pages(struct ema_platform *pp, int gpu, int n, const int32_t *pages,
		      const uint64_t *tags)
{
	struct hw_platform *p = hw_of(pp);

	if (p == NULL || pp->ops != &hw_ops)
		return EMA_ERR_INTERNAL;
	for (int i = 0; i < n; i++)
		if (!hw_page_ok(p, gpu, pages[i]))
			return hw_fail(p, EMA_ERR_INTERNAL, "fill: page %d not in pool of %d",
				       pages[i], gpu);
	if (gpu == EMA_HOST) {
		for (int i = 0; i < n; i++) {
			uint64_t *d = (uint64_t *)hw_page_addr(p, gpu, pages[i]);

			for (uint64_t w = 0; w < p->page_bytes / 8; w++)
				d[w] = ema_hwk_pattern(tags[i], w);
		}
		return 0;
	}
	HW_TRY_OP(p, cudaSetDevice(gpu));
	if (p->g[gpu].spec_recorded)
		HW_TRY_OP(p, cudaStreamWaitEvent(p->g[gpu].s_util, p->g[gpu].ev_spec_end, 0));
	for (int i = 0; i < n; i++) {
		HW_TRY_OP(p, (cudaError_t)ema_hwk_fill_one(hw_page_addr(p, gpu, pages[i]),
							   p->page_bytes, tags[i],
							   p->g[gpu].s_util));
	}
	HW_TRY_OP(p, cudaStreamSynchronize(p->g[gpu].s_util));
	return 0;
}

/* The platform's tag_pages op: like ema_hw_fill_pages but without waiting.
 * A synchronous fill blocked the one host thread that drives every GPU
 * until the fill kernel found free SMs beside a running iteration (on the
 * H200s borrower iterations took twice the simulated time). Transfers
 * from the GPU wait for ev_tag instead. */
static int hw_tag_pages(struct ema_platform *pp, int gpu, int n, const int32_t *pages,
			const uint64_t *tags)
{
	struct hw_platform *p = hw_of(pp);
	struct hw_gpu *g;

	if (gpu == EMA_HOST)
		return ema_hw_fill_pages(pp, gpu, n, pages, tags);
	for (int i = 0; i < n; i++)
		if (!hw_page_ok(p, gpu, pages[i]))
			return hw_fail(p, EMA_ERR_INTERNAL, "tag: page %d not in pool of %d",
				       pages[i], gpu);
	g = &p->g[gpu];
	HW_TRY_OP(p, cudaSetDevice(gpu));
	if (g->spec_recorded)
		HW_TRY_OP(p, cudaStreamWaitEvent(g->s_tag, g->ev_spec_end, 0));
	g->n_tag_calls++;
	for (int i = 0; i < n; i++) {
		HW_TRY_OP(p, (cudaError_t)ema_hwk_fill_one(hw_page_addr(p, gpu, pages[i]),
							   p->page_bytes, tags[i], g->s_tag));
		g->page_tag[pages[i]] = tags[i];
	}
	HW_TRY_OP(p, cudaEventRecord(g->ev_tag, g->s_tag));
	g->tagged = true;
	return 0;
}

int ema_hw_fill_page(struct ema_platform *pp, int gpu, int32_t page, uint64_t tag)
{
	return ema_hw_fill_pages(pp, gpu, 1, &page, &tag);
}

int ema_hw_check_pages(struct ema_platform *pp, int gpu, int n, const int32_t *pages,
		       const uint64_t *tags, int *bad, struct ema_error *err)
{
	struct hw_platform *p = hw_of(pp);
	struct hw_slot *sl;
	uint64_t chunks;
	int rc;

	*bad = 0;
	if (p == NULL || pp->ops != &hw_ops)
		return ema_error_set(err, EMA_ERR_INTERNAL, "not a hw platform");
	for (int i = 0; i < n; i++)
		if (!hw_page_ok(p, gpu, pages[i]))
			return ema_error_set(err, EMA_ERR_INTERNAL,
					     "check: page %d not in pool of %d", pages[i], gpu);
	if (n == 0)
		return 0;
	if (gpu == EMA_HOST) {
		struct hw_op op;

		memset(&op, 0, sizeof op);
		op.n_check = n;
		op.chk_pages = (int32_t *)(uintptr_t)pages;
		op.chk_tags = (uint64_t *)(uintptr_t)tags;
		op.full_check = true;
		*bad = hw_host_check(p, &op);
		return 0;
	}
	sl = hw_slot_get(p, gpu);
	if (sl == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "out of memory");
	rc = hw_slot_reserve(p, sl, (size_t)n, (size_t)n);
	if (rc != 0) {
		hw_slot_put(p, sl);
		return ema_error_set(err, rc, "%s", p->last_err);
	}
	for (int i = 0; i < n; i++) {
		sl->h[i].src = tags[i];
		sl->h[i].dst = (uint64_t)(uintptr_t)hw_page_addr(p, gpu, pages[i]);
		sl->h[i].bytes = p->page_bytes;
	}
	chunks = ema_hwk_prefix(sl->h, n);
	{
		cudaStream_t s = p->g[gpu].s_util;

		EMA_HW_TRY_GOTO(err, rc, out, cudaSetDevice(gpu));
		/* check what the engine defined: after the fills of tag_pages
		 * (not waited for) and any copy still landing in the pool */
		if (p->g[gpu].tagged)
			EMA_HW_TRY_GOTO(err, rc, out, cudaStreamWaitEvent(s, p->g[gpu].ev_tag, 0));
		if (p->g[gpu].spec_recorded)
			EMA_HW_TRY_GOTO(err, rc, out,
					cudaStreamWaitEvent(s, p->g[gpu].ev_spec_end, 0));
		EMA_HW_TRY_GOTO(err, rc, out, cudaMemcpyAsync(sl->d, sl->h, (size_t)n * sizeof *sl->h,
							      cudaMemcpyHostToDevice, s));
		EMA_HW_TRY_GOTO(err, rc, out, cudaMemsetAsync(sl->d_bad, 0,
							      (size_t)n * sizeof *sl->d_bad, s));
		EMA_HW_TRY_GOTO(err, rc, out, (cudaError_t)ema_hwk_check(sl->d, n, chunks, 1,
									 sl->d_bad, s));
		EMA_HW_TRY_GOTO(err, rc, out, cudaMemcpyAsync(sl->h_bad, sl->d_bad,
							      (size_t)n * sizeof *sl->h_bad,
							      cudaMemcpyDeviceToHost, s));
		EMA_HW_TRY_GOTO(err, rc, out, cudaStreamSynchronize(s));
	}
	for (int i = 0; i < n; i++)
		*bad += sl->h_bad[i] != 0;
	rc = 0;
out:
	hw_slot_put(p, sl);
	return rc;
}

void ema_hw_integrity(struct ema_platform *pp, uint64_t *checked, uint64_t *corrupted)
{
	struct hw_platform *p = hw_of(pp);

	if (p == NULL || pp->ops != &hw_ops) {
		*checked = 0;
		*corrupted = 0;
		return;
	}
	*checked = p->checked;
	*corrupted = p->corrupted;
}

const char *ema_hw_last_error(struct ema_platform *pp)
{
	if (pp == NULL || pp->ops != &hw_ops)
		return "";
	return hw_of(pp)->last_err;
}
