/* hw_attn_iter.c: iterations with remote attention on the hw backend
 * (ema_remote_read.compute): the lenders compute the attention over the
 * pages they lent, layer by layer, and the borrower merges their partials
 * with its own.
 *
 * Per layer u of a step on borrower b (one layer at a time, as a model's
 * layers depend on each other):
 *
 *   b:        reads (u's weights, u's slice of in-place pages) [GEMM]
 *             queries of u -> b and every lender  --signal-->
 *             attention over b's own pages (local partial)
 *   lender r: <--wait-- attention over r's pages for b  --signal-->
 *   b:        <--wait-- merge of the partials (flash-decoding's split-K
 *             reduction)
 *
 * "signal" and "wait" are a CUDA event recorded on one stream and waited
 * for by the other (EMA_HW_ATTN_SYNC=event, the default), or a 32-bit
 * flag in the waiter's memory, stored over the link by the last block of
 * the kernel that produced the data and waited for by the stream itself
 * (cuStreamWaitValue32, which holds no SM) (EMA_HW_ATTN_SYNC=flag). On one
 * GPU a "lender" is the same GPU: its work runs on a second stream.
 *
 * The platform knows pages and bytes, not requests: the step's pages
 * become n_seqs sequences (ema_hwa_seqs), each with a share of the local
 * pages and of each lender's. The queries come from a seed, the pages
 * hold their tags' patterns: after the timed step, the combined outputs
 * of a few (layer, sequence) pairs (every pair with --verify) are checked
 * against a reference rebuilt from the tags and the seed, so that a wrong
 * page, a wrong partial or a wrong merge stops the run. */
#include "hw.h"
#include "hw_attn_kernels.h"
#include "hw_priv.h"

#include <stdlib.h>
#include <string.h>

/* A device buffer that grows (freed and allocated again when idle). */
struct hw_dbuf {
	void *d;
	size_t cap;
};

/* Borrower b's attention on lender r. */
struct hw_attn_pair {
	bool ready;
	cudaStream_t s;            /* on r: its work for b */
	cudaEvent_t ev_q;          /* on b: a layer's queries written */
	cudaEvent_t ev_p;          /* on r: a layer's partials written */
	uint32_t *q_flag;          /* in r's memory */
	uint32_t *p_flag;          /* in b's memory */
	uint32_t q_seq, p_seq;     /* the flags' last values */
	struct hw_dbuf q, table, scratch, counters;  /* on r */
	struct hw_dbuf part;       /* on b: the partials r writes */
	int32_t *h_table;          /* pinned: the table uploaded to r */
	size_t h_cap;
};

/* Everything of borrower b's remote attention. */
struct hw_attn_side {
	struct hw_attn_pair pair[EMA_MAX_GPUS];
	/* on b: its own part, the merged outputs, the check */
	struct hw_dbuf q, table, scratch, counters, part, out, kept, check;
	uint32_t *q_counter;
	uint32_t *res;
	uint32_t *h_res;           /* pinned: the check's result */
	int32_t *h_up;             /* pinned: b's tables */
	size_t h_cap;
};

bool hw_attn_wanted(const struct ema_iteration *it)
{
	for (int r = 0; r < it->n_remote; r++)
		if (it->remote[r].compute && it->remote[r].n_pages > 0)
			return true;
	return false;
}

int hw_attn_setup(struct hw_platform *p, struct ema_error *err)
{
	const char *mode = getenv("EMA_HW_ATTN_SYNC");

	if (mode == NULL || mode[0] == '\0' || strcmp(mode, "event") == 0)
		p->attn_flag = false;
	else if (strcmp(mode, "flag") == 0)
		p->attn_flag = true;
	else
		return ema_error_set(err, EMA_ERR_INPUT,
				     "EMA_HW_ATTN_SYNC: expected event or flag, got \"%.64s\"", mode);
	/* the driver's wait on a flag, without linking libcuda */
	p->wait_value = ema_hw_wait_value_load();
	if (p->attn_flag && p->wait_value == NULL)
		return ema_error_set(err, EMA_ERR_UNSUPPORTED,
				     "EMA_HW_ATTN_SYNC=flag: the driver has no cuStreamWaitValue32");
	return 0;
}

int ema_hw_set_attention_sync(struct ema_platform *pp, bool flag, struct ema_error *err)
{
	struct hw_platform *p = hw_of(pp);

	if (p == NULL)
		return ema_error_set(err, EMA_ERR_INTERNAL, "not a hw platform");
	for (int g = 0; g < p->n_gpus; g++)
		if (p->g[g].busy)
			return ema_error_set(err, EMA_ERR_INTERNAL,
					     "attention sync changed while GPU %d runs a step", g);
	if (flag && p->wait_value == NULL)
		return ema_error_set(err, EMA_ERR_UNSUPPORTED,
				     "attention sync by flag: the driver has no cuStreamWaitValue32");
	p->attn_flag = flag;
	return 0;
}

void ema_hw_attention_fault(struct ema_platform *pp)
{
	if (pp != NULL)
		hw_of(pp)->attn_fault = true;
}

void ema_hw_attention_integrity(struct ema_platform *pp, uint64_t *checked, uint64_t *corrupted)
{
	struct hw_platform *p = hw_of(pp);

	*checked = p != NULL ? p->attn_checked : 0;
	*corrupted = p != NULL ? p->attn_corrupted : 0;
}

/* Grows buf on dev to bytes (zeroed when zero is set). Only between a
 * GPU's steps: cudaFree waits for the device anyway. */
static int hw_dbuf_reserve(struct hw_platform *p, int dev, struct hw_dbuf *b, size_t bytes,
			   bool zero)
{
	size_t cap;
	cudaError_t e;

	if (bytes <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 4096;
	while (cap < bytes)
		cap *= 2;
	HW_TRY_OP(p, cudaSetDevice(dev));
	if (b->d != NULL)
		cudaFree(b->d);
	b->d = NULL;
	b->cap = 0;
	e = cudaMalloc(&b->d, cap);
	if (e != cudaSuccess) {
		b->d = NULL;
		cudaGetLastError();
		return hw_fail(p, EMA_ERR_NOSPACE,
			       "remote attention: cannot allocate %.1f MiB on GPU %d: %s",
			       (double)cap / 1048576.0, dev, cudaGetErrorString(e));
	}
	if (zero)
		HW_TRY_OP(p, cudaMemset(b->d, 0, cap));
	b->cap = cap;
	return 0;
}

static int hw_pinned_reserve(struct hw_platform *p, int32_t **h, size_t *cap, size_t bytes)
{
	size_t c;

	if (bytes <= *cap)
		return 0;
	c = *cap ? *cap : 4096;
	while (c < bytes)
		c *= 2;
	if (*h != NULL)
		cudaFreeHost(*h);
	*h = NULL;
	*cap = 0;
	HW_TRY_OP(p, cudaMallocHost((void **)h, c));
	*cap = c;
	return 0;
}

static void hw_dbuf_free(struct hw_dbuf *b)
{
	if (b->d != NULL)
		cudaFree(b->d);
	b->d = NULL;
	b->cap = 0;
}

static int hw_attn_geom(struct hw_platform *p)
{
	if (!p->attn_geom_done) {
		struct ema_error e = { 0, "" };

		p->attn_geom_rc = ema_hwa_geom_init(&p->attn_geom, p->params.model, p->page_bytes, &e);
		snprintf(p->attn_geom_why, sizeof p->attn_geom_why, "%s", e.msg);
		p->attn_geom_done = true;
	}
	if (p->attn_geom_rc != 0)
		return hw_fail(p, p->attn_geom_rc, "%s", p->attn_geom_why);
	return 0;
}

static struct hw_attn_side *hw_attn_side_get(struct hw_platform *p, int b)
{
	struct hw_gpu *g = &p->g[b];

	if (g->attn == NULL)
		g->attn = calloc(1, sizeof *g->attn);
	return g->attn;
}

/* The lender-side stream, events and flags of the pair (b, r). */
static int hw_attn_pair_ready(struct hw_platform *p, struct hw_attn_side *side, int b, int r)
{
	struct hw_attn_pair *pr = &side->pair[r];

	if (pr->ready)
		return 0;
	HW_TRY_OP(p, cudaSetDevice(r));
	HW_TRY_OP(p, cudaStreamCreateWithFlags(&pr->s, cudaStreamNonBlocking));
	HW_TRY_OP(p, cudaEventCreateWithFlags(&pr->ev_p, cudaEventDisableTiming));
	HW_TRY_OP(p, cudaMalloc((void **)&pr->q_flag, 4));
	HW_TRY_OP(p, cudaMemset(pr->q_flag, 0, 4));
	HW_TRY_OP(p, cudaSetDevice(b));
	HW_TRY_OP(p, cudaEventCreateWithFlags(&pr->ev_q, cudaEventDisableTiming));
	HW_TRY_OP(p, cudaMalloc((void **)&pr->p_flag, 4));
	HW_TRY_OP(p, cudaMemset(pr->p_flag, 0, 4));
	pr->q_seq = pr->p_seq = 0;
	pr->ready = true;
	return 0;
}

/* Unblocks any stream still waiting on a flag (an iteration that failed
 * half-issued), then frees everything. */
void hw_attn_free(struct hw_platform *p)
{
	for (int b = 0; b < p->n_gpus; b++) {
		struct hw_attn_side *side = p->g[b].attn;

		if (side == NULL)
			continue;
		for (int r = 0; r < p->n_gpus; r++) {
			struct hw_attn_pair *pr = &side->pair[r];
			uint32_t far;

			if (!pr->ready)
				continue;
			far = pr->q_seq + (1u << 30);
			if (cudaSetDevice(r) == cudaSuccess)
				cudaMemcpy(pr->q_flag, &far, 4, cudaMemcpyHostToDevice);
			far = pr->p_seq + (1u << 30);
			if (cudaSetDevice(b) == cudaSuccess)
				cudaMemcpy(pr->p_flag, &far, 4, cudaMemcpyHostToDevice);
		}
	}
	for (int d = 0; d < p->n_gpus; d++)
		if (cudaSetDevice(d) == cudaSuccess)
			cudaDeviceSynchronize();
	for (int b = 0; b < p->n_gpus; b++) {
		struct hw_attn_side *side = p->g[b].attn;

		if (side == NULL)
			continue;
		for (int r = 0; r < p->n_gpus; r++) {
			struct hw_attn_pair *pr = &side->pair[r];

			if (!pr->ready)
				continue;
			cudaSetDevice(r);
			cudaStreamDestroy(pr->s);
			cudaEventDestroy(pr->ev_p);
			cudaFree(pr->q_flag);
			hw_dbuf_free(&pr->q);
			hw_dbuf_free(&pr->table);
			hw_dbuf_free(&pr->scratch);
			hw_dbuf_free(&pr->counters);
			cudaSetDevice(b);
			cudaEventDestroy(pr->ev_q);
			cudaFree(pr->p_flag);
			hw_dbuf_free(&pr->part);
			if (pr->h_table != NULL)
				cudaFreeHost(pr->h_table);
		}
		cudaSetDevice(b);
		hw_dbuf_free(&side->q);
		hw_dbuf_free(&side->table);
		hw_dbuf_free(&side->scratch);
		hw_dbuf_free(&side->counters);
		hw_dbuf_free(&side->part);
		hw_dbuf_free(&side->out);
		hw_dbuf_free(&side->kept);
		hw_dbuf_free(&side->check);
		if (side->q_counter != NULL)
			cudaFree(side->q_counter);
		if (side->res != NULL)
			cudaFree(side->res);
		if (side->h_res != NULL)
			cudaFreeHost(side->h_res);
		if (side->h_up != NULL)
			cudaFreeHost(side->h_up);
		free(side);
		p->g[b].attn = NULL;
	}
}

/* One part of a step's attention: the borrower's own pages (gpu = b) or
 * a lender's. */
struct hw_part {
	int gpu;
	int n_pages;
	const int32_t *pages;
	int valid, splits;
	int32_t *first;            /* n_seqs + 1 */
};

static size_t align8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* The entries of sequence s for the check: its pages of every part,
 * with their tags (0: unknown, read from memory) and addresses. */
static int hw_attn_entries(struct hw_platform *p, const struct hw_part *parts, int n_parts, int s,
			   struct ema_hwa_check_entry *e, int at)
{
	int tok = 0;

	for (int q = 0; q < n_parts; q++) {
		const struct hw_part *pt = &parts[q];

		if (pt->valid <= 0)
			continue;
		for (int i = pt->first[s]; i < pt->first[s + 1]; i++, at++) {
			int32_t pg = pt->pages[i];

			e[at].addr = (uint64_t)(uintptr_t)hw_page_addr(p, pt->gpu, pg);
			e[at].tag = p->g[pt->gpu].page_tag[pg];
			e[at].valid = pt->valid;
			e[at].tok_first = tok;
			tok += pt->valid;
		}
	}
	return at;
}

int hw_attn_iteration(struct hw_platform *p, const struct ema_iteration *it,
		      ema_iteration_fn fn, void *arg)
{
	const int b = it->gpu;
	struct hw_gpu *g = &p->g[b];
	const struct ema_hwa_geom *geo = &p->attn_geom;
	struct hw_attn_side *side;
	struct hw_part parts[EMA_HWA_MAX_PARTS];
	int n_parts = 0, U, S, Hq, D, rc, n_samples, k = 0, k_chk;
	int inplace_first[EMA_MAX_GPUS] = {0}, inplace_n[EMA_MAX_GPUS] = {0};
	bool seen[EMA_MAX_GPUS] = {false}, gemm, split = false;
	uint64_t pb = p->page_bytes, pool_bytes, n_inplace_pages = 0, chk_chunks = 0, seed;
	uint64_t q_bytes, o_bytes, lse_bytes, part_slot;
	int cols_total;
	size_t nseg, up_tab, up_chk, n_entries = 0;
	int32_t *first_all = NULL, *s_layer = NULL, *s_seq = NULL;
	int *r_first = NULL, *r_n = NULL;
	uint64_t *r_chunks = NULL;
	struct ema_hwk_parts *unit_parts = NULL;
	struct hw_op *op = NULL;
	struct hw_slot *sl;

	rc = hw_attn_geom(p);
	if (rc != 0)
		return rc;
	U = geo->layers;
	Hq = geo->kv_heads * geo->group;
	D = geo->head_dim;
	/* parts: the borrower's own pages, then each lender that computes */
	parts[n_parts].gpu = b;
	parts[n_parts].n_pages = it->n_local_pages;
	parts[n_parts].pages = it->local_pages;
	parts[n_parts].valid = ema_hwa_valid(geo, it->kv_local_bytes, it->n_local_pages);
	n_parts++;
	for (int r = 0; r < it->n_remote; r++) {
		const struct ema_remote_read *rr = &it->remote[r];

		if (rr->n_pages <= 0)
			continue;
		if (!rr->compute) {
			n_inplace_pages += (uint64_t)rr->n_pages;
			continue;
		}
		if (seen[rr->gpu])
			return hw_fail(p, EMA_ERR_INTERNAL,
				       "remote attention on GPU %d given twice in one step", rr->gpu);
		seen[rr->gpu] = true;
		parts[n_parts].gpu = rr->gpu;
		parts[n_parts].n_pages = rr->n_pages;
		parts[n_parts].pages = rr->pages;
		parts[n_parts].valid = ema_hwa_valid(geo, rr->bytes, rr->n_pages);
		n_parts++;
	}
	if (n_inplace_pages > 0 && it->prefetch_depth > 0 && it->staging_pages != NULL &&
	    it->n_staging_pages > 0)
		return hw_fail(p, EMA_ERR_UNSUPPORTED,
			       "hw backend: a step that both stages remote KV and computes "
			       "attention on a lender is not supported; read the other "
			       "lenders' pages in place (prefetch_depth 0)");
	{
		int most = 0;

		for (int q = 1; q < n_parts; q++)
			if (parts[q].n_pages > most)
				most = parts[q].n_pages;
		S = ema_hwa_seqs(it->n_seqs, most);
	}
	seed = ema_hwk_pattern(0xA77E4710u, ++p->attn_steps);
	side = hw_attn_side_get(p, b);
	if (side == NULL)
		return hw_fail(p, EMA_ERR_NOMEM, "out of memory for remote attention");
	for (int q = 1; q < n_parts; q++) {
		rc = hw_attn_pair_ready(p, side, b, parts[q].gpu);
		if (rc != 0)
			return rc;
	}

	/* sequences of each part, its blocks per (sequence, KV head) */
	first_all = malloc((size_t)n_parts * (size_t)(S + 1) * sizeof *first_all);
	/* with verify every (layer, sequence) pair, as long as their kept
	 * outputs fit in EMA_HWA_VERIFY_BYTES */
	n_samples = EMA_HWA_SAMPLES;
	if (p->verify) {
		int64_t most = EMA_HWA_VERIFY_BYTES / ((int64_t)Hq * D * 4);

		n_samples = (int)((int64_t)U * S < most ? (int64_t)U * S : most);
		if (n_samples < EMA_HWA_SAMPLES)
			n_samples = EMA_HWA_SAMPLES;
	}
	s_layer = malloc((size_t)n_samples * sizeof *s_layer);
	s_seq = malloc((size_t)n_samples * sizeof *s_seq);
	r_first = calloc((size_t)U + 1, sizeof *r_first);
	r_n = calloc((size_t)U, sizeof *r_n);
	r_chunks = calloc((size_t)U, sizeof *r_chunks);
	unit_parts = n_inplace_pages > 0 ? calloc((size_t)U, sizeof *unit_parts) : NULL;
	if (first_all == NULL || s_layer == NULL || s_seq == NULL || r_first == NULL ||
	    r_n == NULL || r_chunks == NULL || (n_inplace_pages > 0 && unit_parts == NULL)) {
		rc = hw_fail(p, EMA_ERR_NOMEM, "out of memory for remote attention");
		goto fail;
	}
	for (int q = 0; q < n_parts; q++) {
		int longest = 0;

		parts[q].first = first_all + (size_t)q * (size_t)(S + 1);
		ema_hwa_assign(parts[q].n_pages, S, parts[q].first);
		for (int s = 0; s < S; s++)
			if (parts[q].first[s + 1] - parts[q].first[s] > longest)
				longest = parts[q].first[s + 1] - parts[q].first[s];
		parts[q].splits = ema_hwa_splits(S, geo->kv_heads, longest, p->g[parts[q].gpu].sms);
	}
	n_samples = ema_hwa_samples(U, S, p->verify, s_layer, s_seq, n_samples);

	/* buffers: queries (2 ring slots: a layer's are rewritten only after
	 * the layer before has merged), partials, scratch, counters */
	q_bytes = (uint64_t)S * (uint64_t)Hq * (uint64_t)D * 2;
	o_bytes = (uint64_t)S * (uint64_t)Hq * (uint64_t)D * 4;
	lse_bytes = (uint64_t)S * (uint64_t)Hq * 4;
	/* a slot's outputs then log-sum-exps; slots on 256 bytes, as the
	 * kernels store outputs 16 bytes at a time */
	part_slot = (o_bytes + lse_bytes + 255) & ~(uint64_t)255;
	rc = hw_dbuf_reserve(p, b, &side->q, 2 * q_bytes, false);
	if (rc == 0)
		rc = hw_dbuf_reserve(p, b, &side->part, 2 * part_slot, false);
	if (rc == 0)
		rc = hw_dbuf_reserve(p, b, &side->out, 2 * o_bytes, false);
	if (rc == 0)
		rc = hw_dbuf_reserve(p, b, &side->kept, (size_t)n_samples * (size_t)Hq * (size_t)D * 4,
				     false);
	if (rc == 0)
		rc = hw_dbuf_reserve(p, b, &side->scratch,
				     ema_hwa_scratch_bytes(geo, S, parts[0].splits), false);
	if (rc == 0)
		rc = hw_dbuf_reserve(p, b, &side->counters, ema_hwa_counter_bytes(geo, S), true);
	if (rc == 0 && (side->q_counter == NULL || side->res == NULL || side->h_res == NULL)) {
		if (cudaSetDevice(b) != cudaSuccess ||
		    (side->q_counter == NULL &&
		     (cudaMalloc((void **)&side->q_counter, 4) != cudaSuccess ||
		      cudaMemset(side->q_counter, 0, 4) != cudaSuccess)) ||
		    (side->res == NULL && cudaMalloc((void **)&side->res, 16) != cudaSuccess) ||
		    (side->h_res == NULL && cudaMallocHost((void **)&side->h_res, 16) != cudaSuccess))
			rc = hw_fail(p, EMA_ERR_DEVICE, "remote attention: GPU %d: %s", b,
				     cudaGetErrorString(cudaGetLastError()));
	}
	for (int q = 1; rc == 0 && q < n_parts; q++) {
		struct hw_attn_pair *pr = &side->pair[parts[q].gpu];
		int r = parts[q].gpu;

		rc = hw_dbuf_reserve(p, r, &pr->q, 2 * q_bytes, false);
		if (rc == 0)
			rc = hw_dbuf_reserve(p, r, &pr->table,
					     (size_t)(S + 1 + parts[q].n_pages) * sizeof(int32_t), false);
		if (rc == 0)
			rc = hw_dbuf_reserve(p, r, &pr->scratch,
					     ema_hwa_scratch_bytes(geo, S, parts[q].splits), false);
		if (rc == 0)
			rc = hw_dbuf_reserve(p, r, &pr->counters, ema_hwa_counter_bytes(geo, S), true);
		if (rc == 0)
			rc = hw_dbuf_reserve(p, b, &pr->part, 2 * part_slot, false);
		if (rc == 0)
			rc = hw_pinned_reserve(p, &pr->h_table, &pr->h_cap,
					       (size_t)(S + 1 + parts[q].n_pages) * sizeof(int32_t));
	}
	if (rc != 0)
		goto fail;

	/* b's upload: its part's table and the rows it keeps (table), then
	 * the check's samples and entries (check) */
	for (int q = 0; q < n_parts; q++)
		n_entries += (size_t)parts[q].n_pages;
	up_tab = (size_t)(S + 1 + parts[0].n_pages) + (size_t)U * (size_t)S;
	if (!p->verify) {
		/* only the sampled sequences' entries */
		size_t m = 0;

		for (int i = 0; i < n_samples; i++)
			for (int q = 0; q < n_parts; q++)
				m += (size_t)(parts[q].first[s_seq[i] + 1] - parts[q].first[s_seq[i]]);
		up_chk = align8((size_t)n_samples * 4 * sizeof(int32_t)) +
			 m * sizeof(struct ema_hwa_check_entry);
	} else {
		/* every sequence's entries once, shared by its layers */
		up_chk = align8((size_t)n_samples * 4 * sizeof(int32_t)) +
			 n_entries * sizeof(struct ema_hwa_check_entry);
	}
	rc = hw_dbuf_reserve(p, b, &side->table, up_tab * sizeof(int32_t), false);
	if (rc == 0)
		rc = hw_dbuf_reserve(p, b, &side->check, up_chk + 8, false);
	if (rc == 0)
		rc = hw_pinned_reserve(p, &side->h_up, &side->h_cap,
				       align8(up_tab * sizeof(int32_t)) + up_chk + 8);
	if (rc != 0)
		goto fail;
	{
		int32_t *t = side->h_up, *kept_row = t + S + 1 + parts[0].n_pages;
		char *c = (char *)side->h_up + align8(up_tab * sizeof(int32_t));
		int32_t *cl = (int32_t *)(void *)c, *cs = cl + n_samples, *ce = cs + n_samples;
		struct ema_hwa_check_entry *en =
			(struct ema_hwa_check_entry *)(void *)(c + align8((size_t)n_samples * 4 *
									  sizeof(int32_t)));
		int at = 0;

		memcpy(t, parts[0].first, (size_t)(S + 1) * sizeof *t);
		if (parts[0].n_pages > 0)
			memcpy(t + S + 1, parts[0].pages, (size_t)parts[0].n_pages * sizeof *t);
		for (size_t i = 0; i < (size_t)U * (size_t)S; i++)
			kept_row[i] = -1;
		for (int i = 0; i < n_samples; i++) {
			kept_row[(size_t)s_layer[i] * (size_t)S + (size_t)s_seq[i]] = i;
			cl[i] = s_layer[i];
			cs[i] = s_seq[i];
		}
		if (p->verify) {
			/* sequence s's entries, every layer of it pointing there */
			int32_t *seq_e = malloc((size_t)(S + 1) * sizeof *seq_e);

			if (seq_e == NULL) {
				rc = hw_fail(p, EMA_ERR_NOMEM, "out of memory for remote attention");
				goto fail;
			}
			for (int s = 0; s < S; s++) {
				seq_e[s] = at;
				at = hw_attn_entries(p, parts, n_parts, s, en, at);
			}
			seq_e[S] = at;
			for (int i = 0; i < n_samples; i++) {
				ce[2 * i] = seq_e[s_seq[i]];
				ce[2 * i + 1] = seq_e[s_seq[i] + 1];
			}
			free(seq_e);
		} else {
			for (int i = 0; i < n_samples; i++) {
				ce[2 * i] = at;
				at = hw_attn_entries(p, parts, n_parts, s_seq[i], en, at);
				ce[2 * i + 1] = at;
			}
		}
	}
	for (int q = 1; q < n_parts; q++) {
		struct hw_attn_pair *pr = &side->pair[parts[q].gpu];

		memcpy(pr->h_table, parts[q].first, (size_t)(S + 1) * sizeof(int32_t));
		memcpy(pr->h_table + S + 1, parts[q].pages, (size_t)parts[q].n_pages * sizeof(int32_t));
	}

	op = hw_op_get(p, b);
	if (op == NULL) {
		rc = hw_fail(p, EMA_ERR_NOMEM, "out of memory for an iteration");
		goto fail;
	}
	op->kind = HW_OP_ITER;
	op->ifn = fn;
	op->arg = arg;
	op->n_groups = U;
	op->staged = false;
	op->attn = true;
	op->attn_n = n_samples;
	op->attn_heads = Hq;
	op->attn_layer = s_layer;
	op->attn_seq = s_seq;
	s_layer = s_seq = NULL;
	op->tags_at_start = g->n_tag_calls;
	op->xfers_at_start = g->n_xfers;
	sl = g->iter_slot[g->iter_parity];
	op->slot = sl;
	/* every borrowed page read, in place or by a lender, is also checked
	 * against its tag as in-place reads are (sampled; all with verify) */
	rc = hw_inplace_checks(p, it, op);
	if (rc != 0)
		goto fail;

	/* the borrower's reads, layer by layer: its weights and its slice of
	 * the pages read in place (a lender's share of the grid each) */
	gemm = it->flops / p->flop_rate > (double)it->weight_bytes / p->hbm_bps;
	cols_total = gemm ? hw_gemm_cols(it->flops) : 0;
	pool_bytes = g->pool_pages * pb;
	nseg = (size_t)U * (size_t)(it->weight_bytes / (pool_bytes ? pool_bytes : 1) / (uint64_t)U + 4) +
	       (size_t)n_inplace_pages * (size_t)U + (size_t)op->n_check + 16;
	rc = hw_slot_reserve(p, sl, nseg, (size_t)op->n_check);
	if (rc != 0)
		goto fail;
	for (int u = 0; u < U; u++) {
		uint64_t woff, wlen;

		r_first[u] = k;
		if (!gemm) {
			ema_iteration_group_slice(it->weight_bytes, u, U, &woff, &wlen);
			k = hw_add_wrapped(sl->h, k, g->pool, pool_bytes, woff, wlen);
		}
		for (int r = 0; r < it->n_remote; r++) {
			const struct ema_remote_read *rr = &it->remote[r];
			uint64_t per, off, len;

			inplace_first[r] = k - r_first[u];
			inplace_n[r] = 0;
			if (rr->compute || rr->n_pages <= 0)
				continue;
			per = rr->bytes / (uint64_t)rr->n_pages;
			if (per == 0 || per > pb)
				per = pb;
			ema_iteration_group_slice(per, u, U, &off, &len);
			if (len == 0)
				continue;
			for (int i = 0; i < rr->n_pages; i++, k++) {
				sl->h[k].src = (uint64_t)(uintptr_t)(hw_page_addr(p, rr->gpu, rr->pages[i]) + off);
				sl->h[k].dst = 0;
				sl->h[k].bytes = len;
				op->lender_bytes[rr->gpu] += len;
				op->remote_bytes += len;
			}
			inplace_n[r] = rr->n_pages;
		}
		r_n[u] = k - r_first[u];
		r_chunks[u] = ema_hwk_prefix(sl->h + r_first[u], r_n[u]);
		if (unit_parts != NULL)
			split = hw_inplace_split(p, g, sl->h + r_first[u], r_n[u], r_chunks[u],
						 inplace_first, inplace_n, it->n_remote,
						 &unit_parts[u]) || split;
	}
	k_chk = k;
	for (int j = 0; j < op->n_check; j++, k++) {
		sl->h[k].src = op->chk_tags[j];
		sl->h[k].dst = (uint64_t)(uintptr_t)hw_page_addr(p, op->chk_gpus[j], op->chk_pages[j]);
		sl->h[k].bytes = pb;
	}
	if (op->n_check > 0)
		chk_chunks = ema_hwk_prefix(sl->h + k_chk, op->n_check);
	if ((size_t)k > sl->cap) {
		rc = hw_fail(p, EMA_ERR_INTERNAL, "iteration descriptors overflow");
		goto fail;
	}
	for (int q = 1; q < n_parts; q++) {
		/* one GPU: its "lender" is itself, nothing crosses a link */
		if (parts[q].gpu == b)
			continue;
		op->to_lender[parts[q].gpu] += (uint64_t)U * q_bytes;
		op->lender_bytes[parts[q].gpu] += (uint64_t)U * (o_bytes + lse_bytes);
		op->remote_bytes += (uint64_t)U * (q_bytes + o_bytes + lse_bytes);
	}

	/* Issue. */
	if (cudaSetDevice(b) != cudaSuccess || cudaEventRecord(op->start, g->s_comp) != cudaSuccess ||
	    (k > 0 && cudaMemcpyAsync(sl->d, sl->h, (size_t)k * sizeof *sl->h,
				      cudaMemcpyHostToDevice, g->s_comp) != cudaSuccess) ||
	    cudaMemcpyAsync(side->table.d, side->h_up, up_tab * sizeof(int32_t),
			    cudaMemcpyHostToDevice, g->s_comp) != cudaSuccess ||
	    cudaMemcpyAsync(side->check.d, (char *)side->h_up + align8(up_tab * sizeof(int32_t)),
			    up_chk, cudaMemcpyHostToDevice, g->s_comp) != cudaSuccess ||
	    (g->tagged && cudaStreamWaitEvent(g->s_comp, g->ev_tag, 0) != cudaSuccess))
		goto fail_dev;
	for (int q = 1; q < n_parts; q++) {
		int r = parts[q].gpu;
		struct hw_attn_pair *pr = &side->pair[r];

		/* the lender's pages hold what the engine wrote once its fills
		 * are done */
		if (cudaSetDevice(r) != cudaSuccess ||
		    (p->g[r].tagged && cudaStreamWaitEvent(pr->s, p->g[r].ev_tag, 0) != cudaSuccess) ||
		    cudaMemcpyAsync(pr->table.d, pr->h_table,
				    (size_t)(S + 1 + parts[q].n_pages) * sizeof(int32_t),
				    cudaMemcpyHostToDevice, pr->s) != cudaSuccess)
			goto fail_dev;
	}
	for (int u = 0; u < U; u++) {
		const int slot = u & 1;
		struct ema_hwa_query_args qa;
		struct ema_hwa_combine_args ca;
		int e;

		memset(&qa, 0, sizeof qa);
		memset(&ca, 0, sizeof ca);
		if (cudaSetDevice(b) != cudaSuccess)
			goto fail_dev;
		if (r_n[u] > 0) {
			e = split && unit_parts[u].n > 1 ?
				ema_hwk_read_split(sl->d + r_first[u], r_n[u], &unit_parts[u], g->sink,
						   g->s_comp) :
				ema_hwk_read(sl->d + r_first[u], r_n[u], r_chunks[u],
					     HW_READ_GRID(g, false), g->sink, g->s_comp);
			if (e != 0) {
				rc = hw_fail(p, EMA_ERR_DEVICE, "read kernel: %s",
					     cudaGetErrorString((cudaError_t)e));
				goto fail;
			}
		}
		if (cols_total > 0) {
			int c0 = (int)((int64_t)cols_total * u / U) / 64 * 64;
			int c1 = u + 1 == U ? cols_total : (int)((int64_t)cols_total * (u + 1) / U) / 64 * 64;

			rc = hw_issue_gemm(p, g, c1 - c0);
			if (rc != 0)
				goto fail;
		}
		/* the layer's queries, here and at every lender */
		qa.seed = seed;
		qa.layer = u;
		qa.n_seqs = S;
		qa.heads = Hq;
		qa.head_dim = D;
		qa.dst[qa.n_dst++] = (uint16_t *)side->q.d + (size_t)slot * (q_bytes / 2);
		qa.counter = side->q_counter;
		for (int q = 1; q < n_parts; q++) {
			struct hw_attn_pair *pr = &side->pair[parts[q].gpu];

			qa.dst[qa.n_dst++] = (uint16_t *)pr->q.d + (size_t)slot * (q_bytes / 2);
			if (p->attn_flag) {
				qa.flag[qa.n_flag] = pr->q_flag;
				qa.flag_value[qa.n_flag++] = pr->q_seq + 1;
			}
		}
		e = ema_hwa_queries(&qa, g->s_comp);
		if (e != 0) {
			rc = hw_fail(p, EMA_ERR_DEVICE, "query kernel: %s",
				     cudaGetErrorString((cudaError_t)e));
			goto fail;
		}
		for (int q = 1; q < n_parts; q++) {
			struct hw_attn_pair *pr = &side->pair[parts[q].gpu];

			if (p->attn_flag)
				pr->q_seq++;
			else if (cudaEventRecord(pr->ev_q, g->s_comp) != cudaSuccess)
				goto fail_dev;
		}
		/* the borrower's own part, meanwhile */
		ca.layer = u;
		ca.n_seqs = S;
		ca.heads = Hq;
		ca.head_dim = D;
		if (parts[0].n_pages > 0 && parts[0].valid > 0) {
			struct ema_hwa_attend_args aa;

			memset(&aa, 0, sizeof aa);
			aa.g = *geo;
			aa.layer = u;
			aa.n_seqs = S;
			aa.valid = parts[0].valid;
			aa.splits = parts[0].splits;
			aa.pool = g->pool;
			aa.seq_first = (const int32_t *)side->table.d;
			aa.pages = (const int32_t *)side->table.d + S + 1;
			aa.q = (const uint16_t *)side->q.d + (size_t)slot * (q_bytes / 2);
			aa.o = (float *)((char *)side->part.d + (size_t)slot * part_slot);
			aa.lse = (float *)((char *)aa.o + o_bytes);
			aa.scratch = (float *)side->scratch.d;
			aa.counters = (uint32_t *)side->counters.d;
			e = ema_hwa_attend(&aa, g->s_comp);
			if (e != 0) {
				rc = hw_fail(p, EMA_ERR_DEVICE, "attention kernel on GPU %d: %s", b,
					     cudaGetErrorString((cudaError_t)e));
				goto fail;
			}
			ca.o[ca.n_parts] = aa.o;
			ca.lse[ca.n_parts++] = aa.lse;
		}
		/* each lender's part */
		for (int q = 1; q < n_parts; q++) {
			int r = parts[q].gpu;
			struct hw_attn_pair *pr = &side->pair[r];
			struct ema_hwa_attend_args aa;

			memset(&aa, 0, sizeof aa);
			aa.g = *geo;
			aa.layer = u;
			aa.n_seqs = S;
			aa.valid = parts[q].valid;
			aa.splits = parts[q].splits;
			aa.pool = p->g[r].pool;
			aa.seq_first = (const int32_t *)pr->table.d;
			aa.pages = (const int32_t *)pr->table.d + S + 1;
			aa.q = (const uint16_t *)pr->q.d + (size_t)slot * (q_bytes / 2);
			aa.o = (float *)((char *)pr->part.d + (size_t)slot * part_slot);
			aa.lse = (float *)((char *)aa.o + o_bytes);
			aa.scratch = (float *)pr->scratch.d;
			aa.counters = (uint32_t *)pr->counters.d;
			if (p->attn_flag) {
				aa.flag = pr->p_flag;
				aa.flag_value = pr->p_seq + 1;
			}
			if (p->attn_fault && q == 1 && n_samples > 0 && u == op->attn_layer[0]) {
				/* a wrong partial where the check looks first */
				aa.fault = op->attn_seq[0] + 1;
				p->attn_fault = false;
			}
			if (cudaSetDevice(r) != cudaSuccess)
				goto fail_dev;
			if (p->attn_flag) {
				if (p->wait_value(pr->s, (CUdeviceptr)(uintptr_t)pr->q_flag, pr->q_seq,
						  CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS) {
					rc = hw_fail(p, EMA_ERR_DEVICE,
						     "cuStreamWaitValue32 on GPU %d failed", r);
					goto fail;
				}
			} else if (cudaStreamWaitEvent(pr->s, pr->ev_q, 0) != cudaSuccess) {
				goto fail_dev;
			}
			e = ema_hwa_attend(&aa, pr->s);
			if (e != 0) {
				rc = hw_fail(p, EMA_ERR_DEVICE, "attention kernel on GPU %d for GPU %d: %s",
					     r, b, cudaGetErrorString((cudaError_t)e));
				goto fail;
			}
			if (p->attn_flag)
				pr->p_seq++;
			else if (cudaEventRecord(pr->ev_p, pr->s) != cudaSuccess)
				goto fail_dev;
			ca.o[ca.n_parts] = aa.o;
			ca.lse[ca.n_parts++] = aa.lse;
		}
		/* the borrower waits for every lender's partials, and merges */
		if (cudaSetDevice(b) != cudaSuccess)
			goto fail_dev;
		for (int q = 1; q < n_parts; q++) {
			struct hw_attn_pair *pr = &side->pair[parts[q].gpu];

			if (p->attn_flag) {
				if (p->wait_value(g->s_comp, (CUdeviceptr)(uintptr_t)pr->p_flag, pr->p_seq,
						  CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS) {
					rc = hw_fail(p, EMA_ERR_DEVICE,
						     "cuStreamWaitValue32 on GPU %d failed", b);
					goto fail;
				}
			} else if (cudaStreamWaitEvent(g->s_comp, pr->ev_p, 0) != cudaSuccess) {
				goto fail_dev;
			}
		}
		if (ca.n_parts > 0) {
			ca.out = (float *)side->out.d + (size_t)slot * (o_bytes / 4);
			ca.kept = (float *)side->kept.d;
			ca.kept_row = (const int32_t *)side->table.d + S + 1 + parts[0].n_pages;
			e = ema_hwa_combine(&ca, g->s_comp);
			if (e != 0) {
				rc = hw_fail(p, EMA_ERR_DEVICE, "merge kernel: %s",
					     cudaGetErrorString((cudaError_t)e));
				goto fail;
			}
		}
	}
	if (cudaEventRecord(op->end, g->s_comp) != cudaSuccess)
		goto fail_dev;

	/* after the timed step: pages against their tags, outputs against
	 * the reference */
	for (int l = 0; l < p->n_gpus; l++)
		if (p->g[l].tagged && cudaStreamWaitEvent(g->s_comp, p->g[l].ev_tag, 0) != cudaSuccess)
			goto fail_dev;
	if ((op->chk_done == NULL &&
	     cudaEventCreateWithFlags(&op->chk_done, cudaEventDisableTiming) != cudaSuccess))
		goto fail_dev;
	if (op->n_check > 0) {
		int e;

		if (cudaMemsetAsync(sl->d_bad, 0, (size_t)op->n_check * sizeof *sl->d_bad,
				    g->s_comp) != cudaSuccess)
			goto fail_dev;
		e = ema_hwk_check(sl->d + k_chk, op->n_check, chk_chunks, p->verify, sl->d_bad,
				  g->s_comp);
		if (e != 0) {
			rc = hw_fail(p, EMA_ERR_DEVICE, "check kernel: %s",
				     cudaGetErrorString((cudaError_t)e));
			goto fail;
		}
		if (cudaMemcpyAsync(sl->h_bad, sl->d_bad, (size_t)op->n_check * sizeof *sl->h_bad,
				    cudaMemcpyDeviceToHost, g->s_comp) != cudaSuccess)
			goto fail_dev;
	}
	{
		struct ema_hwa_check_args ck;
		char *c = (char *)side->check.d;
		int e;

		memset(&ck, 0, sizeof ck);
		ck.g = *geo;
		ck.seed = seed;
		ck.n_samples = n_samples;
		ck.sample_layer = (const int32_t *)(void *)c;
		ck.sample_seq = ck.sample_layer + n_samples;
		ck.sample_entry = ck.sample_seq + n_samples;
		ck.entries = (const struct ema_hwa_check_entry *)(void *)
			(c + align8((size_t)n_samples * 4 * sizeof(int32_t)));
		ck.kept = (const float *)side->kept.d;
		ck.res = side->res;
		e = ema_hwa_check_reset(side->res, g->s_comp);
		if (e == 0)
			e = ema_hwa_check(&ck, g->s_comp);
		if (e != 0) {
			rc = hw_fail(p, EMA_ERR_DEVICE, "attention check kernel: %s",
				     cudaGetErrorString((cudaError_t)e));
			goto fail;
		}
		if (cudaMemcpyAsync(side->h_res, side->res, 16, cudaMemcpyDeviceToHost,
				    g->s_comp) != cudaSuccess ||
		    cudaEventRecord(op->chk_done, g->s_comp) != cudaSuccess)
			goto fail_dev;
	}
	free(first_all);
	free(r_first);
	free(r_n);
	free(r_chunks);
	free(unit_parts);
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
	rc = hw_fail(p, EMA_ERR_DEVICE, "remote attention step on GPU %d: %s", b,
		     cudaGetErrorString(cudaGetLastError()));
fail:
	free(first_all);
	free(s_layer);
	free(s_seq);
	free(r_first);
	free(r_n);
	free(r_chunks);
	free(unit_parts);
	if (op != NULL) {
		op->slot = NULL;
		hw_op_put(p, op);
	}
	return rc;
}

int hw_attn_finish(struct hw_platform *p, struct hw_op *op, struct ema_error *err)
{
	struct hw_attn_side *side = p->g[op->gpu].attn;
	cudaError_t e = cudaEventSynchronize(op->chk_done);
	uint32_t bad;
	uint64_t first;

	if (e != cudaSuccess)
		return ema_error_set(err, EMA_ERR_DEVICE,
				     "GPU %d failed checking its remote attention: %s", op->gpu,
				     cudaGetErrorString(e));
	bad = side->h_res[0];
	memcpy(&first, side->h_res + 2, sizeof first);
	p->attn_checked += (uint64_t)op->attn_n * (uint64_t)op->attn_heads;
	p->attn_corrupted += bad;
	if (bad > 0) {
		uint32_t idx = (uint32_t)(first >> 32), bits = (uint32_t)first;
		int kk = (int)(idx / (uint32_t)op->attn_heads), head = (int)(idx % (uint32_t)op->attn_heads);
		float er;

		memcpy(&er, &bits, sizeof er);
		return ema_error_set(err, EMA_ERR_CORRUPT,
				     "data integrity: %u of %d checked attention outputs of GPU %d "
				     "differ from the reference rebuilt from the pages' tags by more "
				     "than %g relative (first: layer %d, sequence %d, head %d, "
				     "error %.3g): a page or a partial from a lender was wrong",
				     bad, op->attn_n * op->attn_heads, op->gpu, EMA_HWA_TOL,
				     kk < op->attn_n ? op->attn_layer[kk] : -1,
				     kk < op->attn_n ? op->attn_seq[kk] : -1, head, (double)er);
	}
	return 0;
}
