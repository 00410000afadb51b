/* ledger.c: page bookkeeping with O(1) alloc and free (a stack of free
 * page numbers per GPU) and a full recount for the invariant check. */
#include "ledger.h"

#include <stdlib.h>
#include <string.h>

#include "ema_build.h"

#ifdef EMA_DEBUG
static const bool ledger_debug = true;
#else
static const bool ledger_debug = false;
#endif

int ema_ledger_init(struct ema_ledger *l, int n_gpus, const int32_t *capacity,
		    uint64_t page_bytes, int n_tenants, const int *tenant_gpu,
		    struct ema_error *err)
{
	memset(l, 0, sizeof *l);
	if (n_gpus < 1 || n_gpus > EMA_MAX_GPUS)
		return ema_error_set(err, EMA_ERR_INPUT, "ledger: %d GPUs (expected 1..%d)",
				     n_gpus, EMA_MAX_GPUS);
	if (n_tenants < 0 || n_tenants > n_gpus)
		return ema_error_set(err, EMA_ERR_INPUT, "ledger: %d tenants on %d GPUs",
				     n_tenants, n_gpus);
	if (page_bytes == 0)
		return ema_error_set(err, EMA_ERR_INPUT, "ledger: page size 0");
	l->n_gpus = n_gpus;
	l->n_tenants = n_tenants;
	l->page_bytes = page_bytes;
	for (int g = 0; g < n_gpus; g++) {
		struct ema_ledger_gpu *gp = &l->gpu[g];

		if (capacity[g] < 0)
			return ema_error_set(err, EMA_ERR_INPUT, "ledger: GPU %d has %d pages",
					     g, capacity[g]);
		gp->capacity = capacity[g];
		gp->home_tenant = EMA_NO_TENANT;
		gp->pages = calloc((size_t)capacity[g] + 1, sizeof *gp->pages);
		gp->free_stack = malloc(((size_t)capacity[g] + 1) * sizeof *gp->free_stack);
		if (gp->pages == NULL || gp->free_stack == NULL) {
			ema_ledger_destroy(l);
			return ema_error_set(err, EMA_ERR_NOMEM, "ledger: out of memory");
		}
		/* Stack top is page 0, so pages are handed out lowest first:
		 * deterministic, and contiguous runs for the hw backend. */
		for (int32_t i = 0; i < capacity[g]; i++) {
			gp->free_stack[i] = capacity[g] - 1 - i;
			gp->pages[i].holder = EMA_NO_TENANT;
		}
		gp->n_free = capacity[g];
		gp->count[EMA_PAGE_FREE] = capacity[g];
	}
	for (int t = 0; t < n_tenants; t++) {
		int g = tenant_gpu[t];

		if (g < 0 || g >= n_gpus || l->gpu[g].home_tenant != EMA_NO_TENANT) {
			ema_ledger_destroy(l);
			return ema_error_set(err, EMA_ERR_INPUT,
					     "ledger: tenant %d on GPU %d (expected a distinct GPU in 0..%d)",
					     t, g, n_gpus - 1);
		}
		l->tenant_gpu[t] = g;
		l->gpu[g].home_tenant = t;
	}
	return EMA_OK;
}

void ema_ledger_destroy(struct ema_ledger *l)
{
	for (int g = 0; g < EMA_MAX_GPUS; g++) {
		free(l->gpu[g].pages);
		free(l->gpu[g].free_stack);
		l->gpu[g].pages = NULL;
		l->gpu[g].free_stack = NULL;
	}
}

int ema_ledger_reserve_weights(struct ema_ledger *l, int gpu, int32_t n,
			       struct ema_error *err)
{
	struct ema_ledger_gpu *gp = &l->gpu[gpu];

	if (gp->n_free != gp->capacity)
		return ema_error_set(err, EMA_ERR_INTERNAL,
				     "ledger: weights of GPU %d reserved after pages were used", gpu);
	if (n < 0 || n > gp->capacity)
		return ema_error_set(err, EMA_ERR_INPUT,
				     "ledger: %d weight pages do not fit GPU %d's %d pages",
				     n, gpu, gp->capacity);
	/* Weights take pages [0, n): the stack holds capacity-1 .. 0 with 0
	 * on top, so popping n pages hands out exactly those. */
	for (int32_t i = 0; i < n; i++) {
		int32_t p = gp->free_stack[--gp->n_free];

		gp->pages[p].state = EMA_PAGE_WEIGHTS;
		gp->pages[p].holder = (int8_t)gp->home_tenant;
	}
	gp->count[EMA_PAGE_FREE] -= n;
	gp->count[EMA_PAGE_WEIGHTS] += n;
	return EMA_OK;
}

int32_t ema_ledger_alloc(struct ema_ledger *l, int gpu, int holder,
			 enum ema_page_state state)
{
	struct ema_ledger_gpu *gp = &l->gpu[gpu];
	int32_t p;

	if (gp->n_free == 0)
		return EMA_ERR_NOSPACE;
	p = gp->free_stack[--gp->n_free];
	if (gp->n_counted > 0) /* the counted numbers move down one */
		gp->free_stack[gp->n_free] = gp->free_stack[gp->n_free + gp->n_counted];
	gp->pages[p].state = (int8_t)state;
	gp->pages[p].holder = (int8_t)holder;
	gp->count[EMA_PAGE_FREE]--;
	gp->count[state]++;
	if (holder != gp->home_tenant) {
		gp->lent++;
		l->lend_ops++;
		l->borrowed[holder][gpu]++;
		l->borrowed_total[holder]++;
		ema_gpuset_set(&l->borrowing, holder);
		if (gp->home_tenant >= 0)
			ema_gpuset_set(&l->lending_home, gpu);
	}
	l->ops++;
	if (ledger_debug && ema_ledger_check(l, NULL) != EMA_OK)
		abort(); /* debug builds only: stop at the operation that broke it */
	return p;
}

/* n pages were just taken off the top of a free stack of nf: the
 * counted numbers above them move into the gap, the last ones first,
 * which leaves them where n single allocations would. */
static inline void counted_move_down(int32_t *stack, int32_t nf, int32_t n, int32_t nc)
{
	int32_t m = n < nc ? n : nc;

	if (m > 0)
		memcpy(stack + nf - n, stack + nf + nc - m, (size_t)m * sizeof *stack);
}

int ema_ledger_alloc_n(struct ema_ledger *l, int gpu, int holder, enum ema_page_state state,
		       int32_t n, int32_t *out)
{
	struct ema_ledger_gpu *gp = &l->gpu[gpu];

	if (n < 0 || gp->n_free < n)
		return EMA_ERR_NOSPACE;
	{
		/* locals: the stores to pages[] could otherwise alias gp */
		struct ema_page *pages = gp->pages;
		int32_t *stack = gp->free_stack;
		int32_t nf = gp->n_free;

		for (int32_t i = 0; i < n; i++) {
			int32_t p = stack[--nf];

			pages[p].state = (int8_t)state;
			pages[p].holder = (int8_t)holder;
			out[i] = p;
		}
		counted_move_down(stack, gp->n_free, n, gp->n_counted);
		gp->n_free = nf;
	}
	gp->count[EMA_PAGE_FREE] -= n;
	gp->count[state] += n;
	if (holder != gp->home_tenant) {
		gp->lent += n;
		l->lend_ops += (uint64_t)n;
		l->borrowed[holder][gpu] += n;
		l->borrowed_total[holder] += n;
		if (n > 0)
			ema_gpuset_set(&l->borrowing, holder);
		if (gp->home_tenant >= 0 && n > 0)
			ema_gpuset_set(&l->lending_home, gpu);
	}
	l->ops += (uint64_t)n;
	if (ledger_debug && ema_ledger_check(l, NULL) != EMA_OK)
		abort();
	return EMA_OK;
}

int ema_ledger_alloc_home_kv(struct ema_ledger *l, int gpu, int32_t n, struct ema_kv_page *out)
{
	struct ema_ledger_gpu *gp = &l->gpu[gpu];
	struct ema_page *pages = gp->pages;
	int32_t *stack = gp->free_stack;
	int32_t nf = gp->n_free;
	const struct ema_page kv = { EMA_PAGE_KV, (int8_t)gp->home_tenant };
	uint16_t kv_bits;

	if (n < 0 || nf < n || gp->home_tenant < 0)
		return EMA_ERR_NOSPACE;
	/* a page's state and holder in one store */
	memcpy(&kv_bits, &kv, sizeof kv_bits);
	/* (a request's prompt takes hundreds of pages at once) */
#pragma GCC unroll 4
	for (int32_t i = 0; i < n; i++) {
		int32_t p = stack[--nf];

		memcpy(&pages[p], &kv_bits, sizeof kv_bits);
		out[i].gpu = (int16_t)gpu;
		out[i].page = p;
	}
	counted_move_down(stack, gp->n_free, n, gp->n_counted);
	gp->n_free = nf;
	gp->count[EMA_PAGE_FREE] -= n;
	gp->count[EMA_PAGE_KV] += n;
	l->ops += (uint64_t)n;
	if (ledger_debug && ema_ledger_check(l, NULL) != EMA_OK)
		abort();
	return EMA_OK;
}

void ema_ledger_free_home_kv(struct ema_ledger *l, int gpu, const struct ema_kv_page *in,
			     int32_t n)
{
	struct ema_ledger_gpu *gp = &l->gpu[gpu];
	struct ema_page *pg0 = gp->pages;
	int32_t *stack = gp->free_stack;
	int32_t nf = gp->n_free, nc = gp->n_counted;
	const struct ema_page free_page = { EMA_PAGE_FREE, EMA_NO_TENANT };
	uint16_t free_bits;

	memcpy(&free_bits, &free_page, sizeof free_bits);
	if (nc > 0) {
		/* one by one as ema_ledger_free: each moves a counted number up */
		for (int32_t i = 0; i < n; i++) {
			memcpy(&pg0[in[i].page], &free_bits, sizeof free_bits);
			stack[nf + nc] = stack[nf];
			stack[nf++] = in[i].page;
		}
		goto counts;
	}
#pragma GCC unroll 4
	for (int32_t i = 0; i < n; i++) {
		int32_t page = in[i].page;

		if (ledger_debug && (in[i].gpu != gpu || pg0[page].state != EMA_PAGE_KV ||
				     pg0[page].holder != gp->home_tenant))
			abort();
		memcpy(&pg0[page], &free_bits, sizeof free_bits);
		stack[nf++] = page;
	}
counts:
	gp->n_free = nf;
	gp->count[EMA_PAGE_KV] -= n;
	gp->count[EMA_PAGE_FREE] += n;
	l->ops += (uint64_t)n;
	if (ledger_debug && ema_ledger_check(l, NULL) != EMA_OK)
		abort();
}

void ema_ledger_free_n(struct ema_ledger *l, int gpu, const int32_t *pages, int32_t n)
{
	struct ema_ledger_gpu *gp = &l->gpu[gpu];
	struct ema_page *pg0 = gp->pages;
	int32_t *stack = gp->free_stack;
	int32_t nf = gp->n_free, home = gp->home_tenant, nc = gp->n_counted;
	/* counts in locals, not an array: the stores to pages[] (bytes)
	 * may alias anything in memory, which made every page wait for
	 * the previous one's count (a fifth of a 1-tenant replay) */
	int32_t n_kv = 0, n_staging = 0, n_freed = 0;

	for (int32_t i = 0; i < n; i++) {
		int32_t page = pages[i];
		struct ema_page *pg = &pg0[page];
		int st = pg->state, holder = pg->holder;

		if (st == EMA_PAGE_FREE || st == EMA_PAGE_WEIGHTS) {
			if (ledger_debug)
				abort();
			continue; /* as ema_ledger_free */
		}
		if (holder != home) {
			gp->lent--;
			l->lend_ops++;
			l->borrowed[holder][gpu]--;
			if (--l->borrowed_total[holder] == 0)
				ema_gpuset_clear(&l->borrowing, holder);
		}
		n_kv += st == EMA_PAGE_KV;
		n_staging += st == EMA_PAGE_STAGING;
		n_freed++;
		pg->state = EMA_PAGE_FREE;
		pg->holder = EMA_NO_TENANT;
		if (nc > 0) /* the counted numbers move up one */
			stack[nf + nc] = stack[nf];
		stack[nf++] = page;
	}
	gp->n_free = nf;
	if (gp->lent == 0)
		ema_gpuset_clear(&l->lending_home, gpu);
	gp->count[EMA_PAGE_KV] -= n_kv;
	gp->count[EMA_PAGE_STAGING] -= n_staging;
	gp->count[EMA_PAGE_FREE] += n_freed;
	l->ops += (uint64_t)n_freed;
	if (ledger_debug && ema_ledger_check(l, NULL) != EMA_OK)
		abort();
}

void ema_ledger_free(struct ema_ledger *l, int gpu, int32_t page)
{
	struct ema_ledger_gpu *gp = &l->gpu[gpu];
	struct ema_page *pg = &gp->pages[page];

	if (pg->state == EMA_PAGE_FREE || pg->state == EMA_PAGE_WEIGHTS) {
		if (ledger_debug)
			abort();
		return; /* double free: ignored in release builds, caught by check */
	}
	if (pg->holder != gp->home_tenant) {
		gp->lent--;
		l->lend_ops++;
		l->borrowed[pg->holder][gpu]--;
		if (--l->borrowed_total[pg->holder] == 0)
			ema_gpuset_clear(&l->borrowing, pg->holder);
		if (gp->lent == 0)
			ema_gpuset_clear(&l->lending_home, gpu);
	}
	gp->count[pg->state]--;
	gp->count[EMA_PAGE_FREE]++;
	pg->state = EMA_PAGE_FREE;
	pg->holder = EMA_NO_TENANT;
	if (gp->n_counted > 0) /* the counted numbers move up one */
		gp->free_stack[gp->n_free + gp->n_counted] = gp->free_stack[gp->n_free];
	gp->free_stack[gp->n_free++] = page;
	l->ops++;
	if (ledger_debug && ema_ledger_check(l, NULL) != EMA_OK)
		abort();
}

void ema_ledger_debug_check(const struct ema_ledger *l)
{
	if (ema_ledger_check(l, NULL) != EMA_OK)
		abort(); /* debug builds only: stop at the operation that broke it */
}

int ema_ledger_number_counted(struct ema_ledger *l, int gpu, int32_t n, struct ema_kv_page *out)
{
	struct ema_ledger_gpu *gp = &l->gpu[gpu];
	const int32_t *stack = gp->free_stack;
	int32_t top = gp->n_free + gp->n_counted;

	if (n < 0 || gp->n_counted < n)
		return EMA_ERR_NOSPACE;
	/* the last counted numbers first: nothing else moves */
	for (int32_t i = 0; i < n; i++) {
		int32_t p = stack[--top];

		gp->pages[p].state = EMA_PAGE_KV;
		gp->pages[p].holder = (int8_t)gp->home_tenant;
		out[i].gpu = (int16_t)gpu;
		out[i].page = p;
	}
	gp->n_counted -= n;
	if (ledger_debug && ema_ledger_check(l, NULL) != EMA_OK)
		abort();
	return EMA_OK;
}

int ema_ledger_check(const struct ema_ledger *l, struct ema_error *err)
{
	int32_t borrowed[EMA_MAX_TENANTS][EMA_MAX_GPUS];

	memset(borrowed, 0, sizeof borrowed);
	for (int g = 0; g < l->n_gpus; g++) {
		const struct ema_ledger_gpu *gp = &l->gpu[g];
		int32_t count[EMA_PAGE_STATES] = {0};
		int32_t lent = 0, used = 0;

		for (int32_t p = 0; p < gp->capacity; p++) {
			const struct ema_page *pg = &gp->pages[p];

			if (pg->state < 0 || pg->state >= EMA_PAGE_STATES)
				return ema_error_set(err, EMA_ERR_INTERNAL,
						     "ledger: GPU %d page %d has state %d", g, p, pg->state);
			count[pg->state]++;
			if (pg->state == EMA_PAGE_FREE) {
				if (pg->holder != EMA_NO_TENANT)
					return ema_error_set(err, EMA_ERR_INTERNAL,
							     "ledger: GPU %d page %d is free but held by %d",
							     g, p, pg->holder);
				continue;
			}
			if (pg->state == EMA_PAGE_WEIGHTS)
				continue;
			if (pg->holder < 0 || pg->holder >= l->n_tenants)
				return ema_error_set(err, EMA_ERR_INTERNAL,
						     "ledger: GPU %d page %d has holder %d", g, p, pg->holder);
			if (pg->holder == gp->home_tenant) {
				used++;
			} else {
				lent++;
				borrowed[pg->holder][g]++;
			}
		}
		/* pages held by count read as free (their numbers follow the
		 * free ones on the stack, checked below) */
		if (gp->n_counted < 0 || gp->n_counted > count[EMA_PAGE_FREE] ||
		    (gp->home_tenant < 0 && gp->n_counted > 0))
			return ema_error_set(err, EMA_ERR_INTERNAL,
					     "ledger: GPU %d counts %d pages held by count, of %d that read free",
					     g, gp->n_counted, count[EMA_PAGE_FREE]);
		count[EMA_PAGE_FREE] -= gp->n_counted;
		count[EMA_PAGE_KV] += gp->n_counted;
		used += gp->n_counted;
		for (int s = 0; s < EMA_PAGE_STATES; s++)
			if (count[s] != gp->count[s])
				return ema_error_set(err, EMA_ERR_INTERNAL,
						     "ledger: GPU %d counts %d pages in state %d, recount %d",
						     g, gp->count[s], s, count[s]);
		if (lent != gp->lent)
			return ema_error_set(err, EMA_ERR_INTERNAL,
					     "ledger: GPU %d counts %d lent pages, recount %d", g, gp->lent, lent);
		if (ema_gpuset_test(&l->lending_home, g) != (gp->home_tenant >= 0 && lent > 0))
			return ema_error_set(err, EMA_ERR_INTERNAL,
					     "ledger: GPU %d is%s marked as a lender with a tenant, "
					     "with %d pages lent", g,
					     ema_gpuset_test(&l->lending_home, g) ? "" : " not", lent);
		if (count[EMA_PAGE_FREE] != gp->n_free)
			return ema_error_set(err, EMA_ERR_INTERNAL,
					     "ledger: GPU %d has %d free pages on its stack, recount %d",
					     g, gp->n_free, count[EMA_PAGE_FREE]);
		if (count[EMA_PAGE_WEIGHTS] + used + count[EMA_PAGE_FREE] + lent != gp->capacity)
			return ema_error_set(err, EMA_ERR_INTERNAL,
					     "ledger: GPU %d: weights %d + used %d + free %d + lent %d != capacity %d",
					     g, count[EMA_PAGE_WEIGHTS], used, count[EMA_PAGE_FREE], lent,
					     gp->capacity);
		/* every free page and every one held by count is on the stack
		 * exactly once */
		{
			char *seen = calloc((size_t)gp->capacity + 1, 1);

			if (seen == NULL)
				return ema_error_set(err, EMA_ERR_NOMEM, "ledger: out of memory");
			for (int32_t i = 0; i < gp->n_free + gp->n_counted; i++) {
				int32_t p = gp->free_stack[i];

				if (p < 0 || p >= gp->capacity || seen[p] ||
				    gp->pages[p].state != EMA_PAGE_FREE) {
					free(seen);
					return ema_error_set(err, EMA_ERR_INTERNAL,
							     "ledger: GPU %d free stack entry %d (page %d) is wrong",
							     g, i, p);
				}
				seen[p] = 1;
			}
			free(seen);
		}
	}
	for (int t = 0; t < l->n_tenants; t++) {
		int32_t total = 0;

		for (int g = 0; g < l->n_gpus; g++)
			total += l->borrowed[t][g];
		if (total != l->borrowed_total[t])
			return ema_error_set(err, EMA_ERR_INTERNAL,
					     "ledger: tenant %d counts %d borrowed pages in all, recount %d",
					     t, l->borrowed_total[t], total);
		if (ema_gpuset_test(&l->borrowing, t) != (total > 0))
			return ema_error_set(err, EMA_ERR_INTERNAL,
					     "ledger: tenant %d is%s marked as a borrower, with %d pages "
					     "borrowed", t, ema_gpuset_test(&l->borrowing, t) ? "" : " not",
					     total);
	}
	for (int t = 0; t < l->n_tenants; t++)
		for (int g = 0; g < l->n_gpus; g++)
			if (borrowed[t][g] != l->borrowed[t][g])
				return ema_error_set(err, EMA_ERR_INTERNAL,
						     "ledger: tenant %d counts %d pages borrowed on GPU %d, recount %d",
						     t, l->borrowed[t][g], g, borrowed[t][g]);
	return EMA_OK;
}
