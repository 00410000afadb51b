/* ledger.h: the page ledger of the policy core. Every GPU's memory is a
 * pool of equal pages; each page has a home (the GPU it physically lives
 * on), a holder (the tenant using it, or none) and a state. The ledger is
 * the single source of truth for "who uses whose memory": borrowing is a
 * page whose holder is not its home GPU's tenant. Invariant, per GPU:
 *     weights + used + free + lent = capacity
 * where used = pages held by the GPU's own tenant and lent = pages held by
 * another tenant; no page is lost or counted twice. */
#ifndef EMA_LEDGER_H
#define EMA_LEDGER_H

#include <stdbool.h>
#include <stdint.h>

#include "ema_build.h"
#include "ema_limits.h"
#include "ema_error.h"
#include "gpuset.h"

enum ema_page_state {
	EMA_PAGE_FREE = 0,
	EMA_PAGE_WEIGHTS,   /* model weights of the home tenant */
	EMA_PAGE_KV,        /* KV cache of the holder */
	EMA_PAGE_STAGING,   /* prefetch staging area of the holder */
	EMA_PAGE_STATES
};

#define EMA_NO_TENANT (-1)

struct ema_page {
	int8_t state;
	int8_t holder;      /* tenant index, or EMA_NO_TENANT when free */
};
/* (the home-KV fast paths write a page's two bytes as one store) */
_Static_assert(sizeof(struct ema_page) == 2, "struct ema_page: two bytes");

struct ema_ledger_gpu {
	int32_t capacity;   /* pages */
	int32_t n_free;
	/* free_stack[0, n_free): free page numbers, top = next to hand out;
	 * then [n_free, n_free + n_counted): the numbers of the pages held
	 * by count (ema_ledger_alloc_counted below) */
	int32_t *free_stack;
	int32_t n_counted;
	struct ema_page *pages;
	int home_tenant;    /* tenant whose weights live here, or EMA_NO_TENANT */
	int32_t count[EMA_PAGE_STATES]; /* pages by state, any holder */
	int32_t lent;       /* KV/staging pages held by another tenant */
};

struct ema_ledger {
	int n_gpus;
	int n_tenants;
	uint64_t page_bytes;
	struct ema_ledger_gpu gpu[EMA_MAX_GPUS];
	/* borrowed[t][g]: pages tenant t holds on GPU g != its home */
	int32_t borrowed[EMA_MAX_TENANTS][EMA_MAX_GPUS];
	int32_t borrowed_total[EMA_MAX_TENANTS]; /* sum over GPUs, kept in step */
	int tenant_gpu[EMA_MAX_TENANTS];
	uint64_t ops;       /* alloc + free calls, for debug checks */
	uint64_t lend_ops;  /* those of pages held by a tenant other than the GPU's */
	/* g in it: GPU g has a tenant and pages lent (what a policy that
	 * reclaims on every lender asks at every event) */
	struct ema_gpuset lending_home;
	/* t in it: tenant t holds borrowed pages (borrowed_total[t] > 0), a
	 * set of tenants (gpuset.h: EMA_MAX_TENANTS == EMA_MAX_GPUS), for
	 * the loops over borrowers a policy runs per lender */
	struct ema_gpuset borrowing;
};

/* capacity[g] pages per GPU; tenant_gpu[t] = home GPU of tenant t. */
int ema_ledger_init(struct ema_ledger *l, int n_gpus, const int32_t *capacity,
		    uint64_t page_bytes, int n_tenants, const int *tenant_gpu,
		    struct ema_error *err);
void ema_ledger_destroy(struct ema_ledger *l);

/* Marks n pages of the GPU as its tenant's weights (done once, first). */
int ema_ledger_reserve_weights(struct ema_ledger *l, int gpu, int32_t n,
			       struct ema_error *err);

/* Takes a free page of `gpu` for `holder` in `state` (KV or STAGING).
 * Returns the page number, or EMA_ERR_NOSPACE when the GPU has none. */
int32_t ema_ledger_alloc(struct ema_ledger *l, int gpu, int holder,
			 enum ema_page_state state);
/* Returns a page to its GPU's free pool. */
void ema_ledger_free(struct ema_ledger *l, int gpu, int32_t page);
/* n pages at once, the same pages in the same order as n calls of
 * ema_ledger_alloc (EMA_ERR_NOSPACE, nothing taken, when fewer are free),
 * and of ema_ledger_free. */
int ema_ledger_alloc_n(struct ema_ledger *l, int gpu, int holder, enum ema_page_state state,
		       int32_t n, int32_t *out);
void ema_ledger_free_n(struct ema_ledger *l, int gpu, const int32_t *pages, int32_t n);
/* Where one KV page of a request lives: the engine's page lists are
 * arrays of these. */
struct ema_kv_page {
	int16_t gpu;          /* EMA_HOST for host memory */
	int32_t page;
};

/* The two above for KV pages of the GPU's home tenant, the engine's
 * commonest case (a request growing on, or finishing from, its own GPU),
 * written to or read from the request's page list directly (alloc sets
 * each record's gpu and page): the same pages in the same order.
 * free_home_kv is the caller's word that every page is EMA_PAGE_KV held
 * by the home tenant on `gpu` (ema_ledger_check finds out otherwise;
 * EMA_DEBUG builds check at once), so that no page's state is read. */
int ema_ledger_alloc_home_kv(struct ema_ledger *l, int gpu, int32_t n, struct ema_kv_page *out);
void ema_ledger_free_home_kv(struct ema_ledger *l, int gpu, const struct ema_kv_page *pages,
			     int32_t n);

/* KV pages of the GPU's home tenant held by count alone, without page
 * numbers: what a simulated tenant's pages on its own GPU need, where
 * no page's identity is ever asked for (the engine's counted requests,
 * engine.c), at the cost of two additions where ema_ledger_alloc_home_kv
 * writes every page. They count as KV pages of the home tenant
 * everywhere; their numbers are the ones just above the free ones on the
 * free stack (ema_ledger_page reads them as free), so that giving a
 * page a number when its identity is needed after all (number_counted:
 * n pages that become ordinary KV pages of the home tenant, written to
 * out as alloc_home_kv does) is O(1) per page, and every other
 * operation keeps its cost. EMA_ERR_NOSPACE (nothing done) when the
 * GPU has fewer than n free pages, fewer than n counted ones, or no
 * tenant. */
static inline int ema_ledger_alloc_counted(struct ema_ledger *l, int gpu, int32_t n);
static inline int ema_ledger_free_counted(struct ema_ledger *l, int gpu, int32_t n);
int ema_ledger_number_counted(struct ema_ledger *l, int gpu, int32_t n, struct ema_kv_page *out);
static inline int32_t ema_ledger_counted_pages(const struct ema_ledger *l, int gpu)
{
	return l->gpu[gpu].n_counted;
}

static inline int32_t ema_ledger_free_pages(const struct ema_ledger *l, int gpu)
{
	return l->gpu[gpu].n_free;
}
static inline int32_t ema_ledger_lent_pages(const struct ema_ledger *l, int gpu)
{
	return l->gpu[gpu].lent;
}
/* The tenants that hold borrowed pages. */
static inline const struct ema_gpuset *ema_ledger_borrowing(const struct ema_ledger *l)
{
	return &l->borrowing;
}
/* The GPUs with a tenant that have pages lent. */
static inline const struct ema_gpuset *ema_ledger_lending_home(const struct ema_ledger *l)
{
	return &l->lending_home;
}
/* Pages of the GPU used by its own tenant (KV and staging). */
static inline int32_t ema_ledger_used_pages(const struct ema_ledger *l, int gpu)
{
	const struct ema_ledger_gpu *g = &l->gpu[gpu];
	return g->count[EMA_PAGE_KV] + g->count[EMA_PAGE_STAGING] - g->lent;
}
static inline int32_t ema_ledger_borrowed_pages(const struct ema_ledger *l, int tenant)
{
	return l->borrowed_total[tenant];
}
/* (a page held by count reads as free: see ema_ledger_alloc_counted) */
static inline const struct ema_page *ema_ledger_page(const struct ema_ledger *l, int gpu,
						     int32_t page)
{
	return &l->gpu[gpu].pages[page];
}

/* Recounts every page and checks the invariants; EMA_ERR_INTERNAL with a
 * description of the first violation. */
int ema_ledger_check(const struct ema_ledger *l, struct ema_error *err);
/* ema_ledger_check after an operation of an EMA_DEBUG build: aborts there
 * where it fails. */
void ema_ledger_debug_check(const struct ema_ledger *l);

/* (in line: a leap's replay grows a request by count at every page it
 * crosses, millions of times in an 8-tenant replay) */
static inline int ema_ledger_alloc_counted(struct ema_ledger *l, int gpu, int32_t n)
{
	struct ema_ledger_gpu *gp = &l->gpu[gpu];

	if (n < 0 || gp->n_free < n || gp->home_tenant < 0)
		return EMA_ERR_NOSPACE;
	gp->n_free -= n;
	gp->n_counted += n;
	gp->count[EMA_PAGE_FREE] -= n;
	gp->count[EMA_PAGE_KV] += n;
	l->ops += (uint64_t)n;
#ifdef EMA_DEBUG
	ema_ledger_debug_check(l);
#endif
	return EMA_OK;
}

static inline int ema_ledger_free_counted(struct ema_ledger *l, int gpu, int32_t n)
{
	struct ema_ledger_gpu *gp = &l->gpu[gpu];

	if (n < 0 || gp->n_counted < n)
		return EMA_ERR_NOSPACE;
	gp->n_free += n;
	gp->n_counted -= n;
	gp->count[EMA_PAGE_KV] -= n;
	gp->count[EMA_PAGE_FREE] += n;
	l->ops += (uint64_t)n;
#ifdef EMA_DEBUG
	ema_ledger_debug_check(l);
#endif
	return EMA_OK;
}

#endif
