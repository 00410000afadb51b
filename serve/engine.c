/* engine.c: continuous batching per tenant over the page ledger, with the
 * elastic mechanisms (borrowed pages, moves home, swaps to host) that the
 * policies decide on. Everything here reacts to platform callbacks
 * (arrival timers, iteration and transfer completions), so the same code
 * runs in simulated and in real time. */
#include "engine_priv.h"
#include "ema_build.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Under AddressSanitizer the slots of freed requests are poisoned: any
 * read of one after it was handed over is a report, not a silent zero. */
#if defined(__SANITIZE_ADDRESS__)
#define EMA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMA_ASAN 1
#endif
#endif
#ifdef EMA_ASAN
#include <sanitizer/asan_interface.h>
#define SLOTS_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define SLOTS_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define SLOTS_POISON(p, n) ((void)(p), (void)(n))
#define SLOTS_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#include "work.h"
#include "policy.h"

enum { ALLOC_OK = 0, ALLOC_NOSPACE = 1, ALLOC_WAIT = 2 };

/* Decode leaping on by default; configure --disable-leap makes stepping
 * the default (ema_engine_set_leap switches either way). */
#ifndef EMA_LEAP_DEFAULT
#define EMA_LEAP_DEFAULT 1
#endif

/* Context of a transfer the engine started for a request. */
enum xfer_kind { XFER_MOVE_HOME, XFER_SWAP_OUT, XFER_SWAP_IN };

struct xfer_ctx {
	struct ema_engine *e;
	int tenant;
	int32_t req;
	enum xfer_kind kind;
	int src_gpu;
	int dst_gpu;
	int32_t n;
	int64_t start_ns;
	int32_t *src_pages;
	int32_t *dst_pages;
	int32_t *entry;     /* index into the request's page array */
	/* the engine's list of transfers it owns: those in flight when a run
	 * stops early (an error, a livelock, the horizon) are freed with it */
	struct xfer_ctx *prev, *next;
	bool linked;
};

static void tenant_kick(struct ema_engine *e, struct ema_tenant *t);
static void kick_all(struct ema_engine *e);
static bool try_leap(struct ema_engine *e, struct ema_tenant *t, struct ema_iteration *it);
static void check_leaps(struct ema_engine *e);
static void leap_settle(struct ema_engine *e);
static void timeline_advance(struct ema_engine *e, int64_t now);

int64_t ema_engine_now(struct ema_engine *e)
{
	/* while a leap's iterations are played back, the time of each */
	return e->replay ? e->vnow : e->platform->ops->now(e->platform);
}

static void engine_fail(struct ema_engine *e, int code, const char *what)
{
	if (e->error == 0) {
		e->error = code;
		ema_error_set(&e->err, code, "%s", what);
	}
	e->platform->ops->stop(e->platform);
}

/* A platform op failed: the engine's words, then the backend's reason. */
static void engine_fail_op(struct ema_engine *e, int rc, const char *what)
{
	if (e->error == 0) {
		e->error = e->op_err.code != 0 ? e->op_err.code : rc;
		ema_error_set(&e->err, e->error, "%s: %s", what,
			      e->op_err.msg[0] ? e->op_err.msg : ema_status_str(rc));
	}
	e->platform->ops->stop(e->platform);
}

/* More pages than any pool holds (EMA_MAX_POOL_PAGES, checked before a
 * run), for a request whose KV is larger still: it never fits anywhere,
 * and a sum of a few of them (a watermark, a reserve) stays inside
 * int32_t. A model with KV of 64 GiB a token (1024 layers x 1024 KV
 * heads x 4096 x 8 bytes x 2) has requests of more pages than int32_t
 * counts; their bytes stay within uint64_t (10^7 tokens at most), which
 * the check below keeps true whatever the limits become. */
#define PAGES_NEVER ((int32_t)1 << 29)
_Static_assert(EMA_MAX_POOL_PAGES < PAGES_NEVER / 4, "PAGES_NEVER above every pool");

int32_t ema_engine_pages_for_tokens(const struct ema_engine *e, int64_t tokens)
{
	int64_t bt = e->cfg->serving.block_tokens;
	int64_t blocks;
	uint64_t bytes, pages;

	/* pages of whole blocks: ceil(ceil(tokens / bt) / blocks per page)
	 * is ceil(tokens / tokens per page), one division instead of two */
	if (e->tokens_per_page > 0) {
		int64_t n = (tokens + e->tokens_per_page - 1) / e->tokens_per_page;

		return n < PAGES_NEVER ? (int32_t)n : PAGES_NEVER;
	}
	blocks = (tokens + bt - 1) / bt;
	if (blocks > 0 && e->block_bytes > (UINT64_MAX - e->page_bytes) / (uint64_t)blocks)
		return PAGES_NEVER;
	bytes = (uint64_t)blocks * e->block_bytes;
	pages = (bytes + e->page_bytes - 1) / e->page_bytes;
	return pages < (uint64_t)PAGES_NEVER ? (int32_t)pages : PAGES_NEVER;
}

/* Tokens that n pages hold: whole blocks of n x page bytes, so that
 * pages_for_tokens(tokens) <= n exactly when tokens <= it. */
static inline int64_t tokens_for_pages(const struct ema_engine *e, int32_t n)
{
	if (e->tokens_per_page > 0)
		return (int64_t)n * e->tokens_per_page;
	return e->block_bytes == 0 ? INT64_MAX :
		(int64_t)((uint64_t)n * e->page_bytes / e->block_bytes) * e->cfg->serving.block_tokens;
}

/* pages_for_tokens(tokens) for a request that holds `pages` pages, too
 * few for them: most often one page more (a decode step's token), which
 * needs no division. */
static inline int32_t pages_to_hold(const struct ema_engine *e, int32_t pages, int64_t tokens)
{
	if (e->tokens_per_page > 0 && tokens <= (int64_t)(pages + 1) * e->tokens_per_page)
		return pages + 1;
	return ema_engine_pages_for_tokens(e, tokens);
}

static inline int32_t seq_len(const struct ema_request *r)
{
	return r->prompt_tokens + r->generated;
}

/* ---- queues ---------------------------------------------------------- */

static int waiting_grow(struct ema_tenant *t)
{
	int32_t ncap = t->waiting_cap ? t->waiting_cap * 2 : 64;
	int32_t *n = malloc((size_t)ncap * sizeof *n);

	if (n == NULL)
		return EMA_ERR_NOMEM;
	for (int32_t i = 0; i < t->waiting_n; i++)
		n[i] = t->waiting[(t->waiting_head + i) % t->waiting_cap];
	free(t->waiting);
	t->waiting = n;
	t->waiting_cap = ncap;
	t->waiting_head = 0;
	return EMA_OK;
}

static int waiting_push_back(struct ema_tenant *t, int32_t r)
{
	if (t->waiting_n == t->waiting_cap && waiting_grow(t) != EMA_OK)
		return EMA_ERR_NOMEM;
	t->waiting[(t->waiting_head + t->waiting_n) % t->waiting_cap] = r;
	t->waiting_n++;
	return EMA_OK;
}

static int waiting_push_front(struct ema_tenant *t, int32_t r)
{
	if (t->waiting_n == t->waiting_cap && waiting_grow(t) != EMA_OK)
		return EMA_ERR_NOMEM;
	t->waiting_head = (t->waiting_head + t->waiting_cap - 1) % t->waiting_cap;
	t->waiting[t->waiting_head] = r;
	t->waiting_n++;
	return EMA_OK;
}

static int32_t waiting_front(const struct ema_tenant *t)
{
	return t->waiting[t->waiting_head];
}

static void waiting_pop_front(struct ema_tenant *t)
{
	t->waiting_head = (t->waiting_head + 1) % t->waiting_cap;
	t->waiting_n--;
}

static void running_remove(struct ema_tenant *t, int32_t r)
{
	for (int32_t i = 0; i < t->running_n; i++)
		if (t->running[i] == r) {
			memmove(&t->running[i], &t->running[i + 1],
				(size_t)(t->running_n - i - 1) * sizeof *t->running);
			t->running_n--;
			return;
		}
}

static void swapped_remove(struct ema_tenant *t, int32_t r)
{
	for (int32_t i = 0; i < t->swapped_n; i++)
		if (t->swapped[i] == r) {
			memmove(&t->swapped[i], &t->swapped[i + 1],
				(size_t)(t->swapped_n - i - 1) * sizeof *t->swapped);
			t->swapped_n--;
			return;
		}
}

/* ---- accounting ------------------------------------------------------ */

/* Requests that just finished or were dropped may extend the prefix of
 * t's requests whose records are final: published for other threads
 * (a release store after the requests' last writes). */
_Static_assert(EMA_REQ_DROPPED == EMA_REQ_DONE + 1, "the final states come last");

static void stream_final(struct ema_engine *e, struct ema_tenant *t);

/* Request k's slot filled from its spec as it arrives (the slots of a
 * mapping are zero until then). */
static struct ema_request *req_arrive(struct ema_engine *e, struct ema_tenant *t, int32_t k)
{
	struct ema_request *r = &t->reqs[k];

	(void)e;
	r->id = k;
	r->view.tenant = (int16_t)t->index;
	r->arrival_ns = t->spec[k].arrival_ns;
	r->prompt_tokens = t->spec[k].prompt_tokens;
	r->output_tokens = t->spec[k].output_tokens;
	r->first_token_ns = -1;
	r->finish_ns = -1;
	return r;
}

/* Room in the queues for every request arrived and not done (running and
 * swapped hold at most those, a batch those and max_batch more), grown
 * as requests arrive instead of sized by the whole stream. */
static int queue_room(struct ema_tenant *t)
{
	int64_t live = (int64_t)t->next_arrival - t->n_done + 1, cap;
	int32_t *p;

	if (live <= t->queue_cap && t->running != NULL)
		return EMA_OK;
	cap = t->queue_cap > 0 ? t->queue_cap : 64;
	while (cap < live)
		cap *= 2;
	if (cap > (int64_t)t->n_reqs + 1)
		cap = (int64_t)t->n_reqs + 1;
	if (cap < live)
		cap = live;
	if ((p = realloc(t->running, (size_t)cap * sizeof *p)) == NULL)
		return EMA_ERR_NOMEM;
	t->running = p;
	if ((p = realloc(t->swapped, (size_t)cap * sizeof *p)) == NULL)
		return EMA_ERR_NOMEM;
	t->swapped = p;
	if ((p = realloc(t->iter_batch, (size_t)(cap + t->max_batch) * sizeof *p)) == NULL)
		return EMA_ERR_NOMEM;
	t->iter_batch = p;
	if ((p = realloc(t->iter_chunk, (size_t)(cap + t->max_batch) * sizeof *p)) == NULL)
		return EMA_ERR_NOMEM;
	t->iter_chunk = p;
	t->queue_cap = (int32_t)cap;
	return EMA_OK;
}

/* Requests kept after they are final before their state is freed: what
 * finishes in a step is still looked at by the step's end. */
#define RELEASE_SLACK 64

/* The newly final records to the sink, in id order; then the state of the
 * final prefix that nothing refers to any more is freed (its pages'
 * records, and the mapping's whole pages given back). */
static void stream_final(struct ema_engine *e, struct ema_tenant *t)
{
	int32_t old = t->released, k;

	for (; t->handed < t->final_n && !e->error; t->handed++) {
		struct ema_request_record r;
		struct ema_error rerr = {0};
		int rc;

		memset(&r, 0, sizeof r); /* (padding too: the record is written whole) */
		ema_engine_request(e, t->index, t->handed, &r);
		rc = e->record_fn(e->record_arg, t->index, &r, &rerr);
		if (rc != EMA_OK) {
			engine_fail(e, rc, rerr.msg);
			return;
		}
	}
	for (k = old; k < t->handed - RELEASE_SLACK; k++) {
		struct ema_request *r = &t->reqs[k];

		if (r->in_iter || r->pinned || r->pending_xfers > 0 || r->free_on_unpin)
			break;
		if (r->state == EMA_REQ_DONE)
			t->released_done++;
		else
			t->released_dropped++;
		free(r->pages);
		r->pages = NULL;
		if (e->last_preempted == r)
			e->last_preempted = NULL;
	}
	if (k > old)
		SLOTS_POISON(&t->reqs[old], (size_t)(k - old) * sizeof *t->reqs);
	t->released = k;
	{
		/* whole pages below the first request kept, 256 KiB at a time:
		 * each call flushes the TLB, at 64 KiB a time a week's replay
		 * spent a fifth of its time there (under a hypervisor) */
		uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), base = (uintptr_t)t->reqs;
		uintptr_t to = (base + (uintptr_t)k * sizeof *t->reqs) & ~(pg - 1);

		if (t->advised < base)
			t->advised = base;
		if (to >= t->advised + 64 * pg) {
			madvise((void *)t->advised, to - t->advised, MADV_DONTNEED);
			t->advised = to;
		}
	}
}

static inline void note_final(struct ema_engine *e, struct ema_tenant *t)
{
	int32_t n = t->final_n;

	/* (most finishes leave an older request running before them) */
	if (n >= t->n_reqs || t->reqs[n].state < EMA_REQ_DONE)
		return;
	while (n < t->n_reqs && t->reqs[n].state >= EMA_REQ_DONE)
		n++;
	t->final_n = n;
	__atomic_store_n(&t->final_pub, n, __ATOMIC_RELEASE);
	if (e->record_fn != NULL)
		stream_final(e, t);
}

static void account(struct ema_engine *e, struct ema_tenant *t, int64_t now)
{
	int64_t dt = now - t->last_account_ns;

	if (dt > 0) {
		int32_t remote = ema_ledger_borrowed_pages(&e->ledger, t->index);

		t->stats.kv_page_ns += (double)t->kv_pages * (double)dt;
		t->stats.remote_page_ns += (double)remote * (double)dt;
	}
	t->last_account_ns = now;
}

static void note_peak(struct ema_engine *e, struct ema_tenant *t)
{
	int32_t b = ema_ledger_borrowed_pages(&e->ledger, t->index);

	if (t->kv_pages > t->stats.kv_peak_pages)
		t->stats.kv_peak_pages = t->kv_pages;
	if (b > t->stats.borrowed_peak_pages)
		t->stats.borrowed_peak_pages = b;
}

/* ---- pages of a request ---------------------------------------------- */

/* Room in r's page array for `need` pages. The first time, for all the
 * pages its last step needs (prompt + output - 1 tokens): one allocation
 * per request instead of one per doubling as it grows page by page. */
static int req_reserve(struct ema_engine *e, struct ema_request *r, int32_t need)
{
	int32_t ncap, last;
	struct ema_kv_page *n;

	if (need <= r->cap_pages)
		return EMA_OK;
	last = ema_engine_pages_for_tokens(e, (int64_t)r->prompt_tokens + r->output_tokens - 1);
	ncap = need > last ? need : last;
	if (ncap < 2 * r->cap_pages)
		ncap = 2 * r->cap_pages;
	n = realloc(r->pages, (size_t)ncap * sizeof *n);
	if (n == NULL)
		return EMA_ERR_NOMEM;
	r->pages = n;
	r->cap_pages = ncap;
	return EMA_OK;
}

static int req_add_page(struct ema_engine *e, struct ema_tenant *t, struct ema_request *r,
			int gpu, int32_t page)
{
	if (req_reserve(e, r, r->n_pages + 1) != EMA_OK)
		return EMA_ERR_NOMEM;
	r->pages[r->n_pages].gpu = (int16_t)gpu;
	r->pages[r->n_pages].page = page;
	r->n_pages++;
	r->view.pages_on[gpu]++;
	ema_gpuset_set(&r->on_mask, gpu);
	if (gpu != t->gpu)
		r->n_remote++;
	t->kv_pages++;
	note_peak(e, t);
	return EMA_OK;
}

/* Numbers for the pages of a counted request (the ledger's last counted
 * ones), for whatever needs its page list: from then on its records are
 * kept as every other request's. */
static int req_number(struct ema_engine *e, struct ema_tenant *t, struct ema_request *r)
{
	if (!r->counted)
		return EMA_OK;
	if (req_reserve(e, r, r->n_pages) != EMA_OK) {
		engine_fail(e, EMA_ERR_NOMEM, "engine: out of memory");
		return EMA_ERR_NOMEM;
	}
	if (ema_ledger_number_counted(&e->ledger, t->gpu, r->n_pages, r->pages) != EMA_OK) {
		engine_fail(e, EMA_ERR_INTERNAL, "engine: a request held more pages than counted");
		return EMA_ERR_INTERNAL;
	}
	r->counted = 0;
	return EMA_OK;
}

static int page_scratch(struct ema_engine *e, int32_t n)
{
	if (n > e->cap_page_scratch) {
		int32_t cap = n > 2 * e->cap_page_scratch ? n : 2 * e->cap_page_scratch;
		int32_t *s = realloc(e->page_scratch, (size_t)cap * sizeof *s);

		if (s == NULL)
			return EMA_ERR_NOMEM;
		e->page_scratch = s;
		e->cap_page_scratch = cap;
	}
	return EMA_OK;
}

static void req_free_pages(struct ema_engine *e, struct ema_tenant *t, struct ema_request *r)
{
	int32_t n_local = 0;
	bool bulk;

	account(e, t, ema_engine_now(e));
	if (r->counted) {
		if (ema_ledger_free_counted(&e->ledger, t->gpu, r->n_pages) != EMA_OK)
			engine_fail(e, EMA_ERR_INTERNAL, "engine: a request held more pages than counted");
		t->kv_pages -= r->n_pages;
		r->n_pages = 0;
		r->counted = 0;
		r->view.pages_on[t->gpu] = 0;
		ema_gpuset_zero(&r->on_mask);
		return;
	}
	bulk = page_scratch(e, r->n_pages) == EMA_OK;
	if (r->view.pages_on[t->gpu] == r->n_pages && e->ledger.gpu[t->gpu].home_tenant == t->index) {
		/* all KV on its own GPU (the usual case), read in place */
		int32_t n = r->n_pages;

		if (n > 0)
			ema_ledger_free_home_kv(&e->ledger, t->gpu, r->pages, n);
		t->kv_pages -= n;
		r->n_pages = 0;
		r->n_remote = 0;
		memset(r->view.pages_on, 0, sizeof r->view.pages_on);
		ema_gpuset_zero(&r->on_mask);
		return;
	}
	/* Pages on the tenant's own GPU go back together, in the same order
	 * onto its free stack (each GPU has its own: the order among GPUs
	 * does not matter). */
	for (int32_t i = 0; i < r->n_pages; i++) {
		if (r->pages[i].gpu == EMA_HOST) {
			e->host_stack[t->gpu][e->host_free[t->gpu]++] = r->pages[i].page;
		} else if (bulk && r->pages[i].gpu == t->gpu) {
			e->page_scratch[n_local++] = r->pages[i].page;
			t->kv_pages--;
		} else {
			ema_ledger_free(&e->ledger, r->pages[i].gpu, r->pages[i].page);
			t->kv_pages--;
		}
	}
	ema_ledger_free_n(&e->ledger, t->gpu, e->page_scratch, n_local);
	r->n_pages = 0;
	r->n_remote = 0;
	memset(r->view.pages_on, 0, sizeof r->view.pages_on);
	ema_gpuset_zero(&r->on_mask);
}

/* A finished request's pages go back, and so does its page array: a
 * replay of a long trace would otherwise keep every request's array. */
static void req_done_pages(struct ema_engine *e, struct ema_tenant *t, struct ema_request *r)
{
	req_free_pages(e, t, r);
	free(r->pages);
	r->pages = NULL;
	r->cap_pages = 0;
}

/* Pages of r on `gpu`, the host too (policies read only GPUs, through
 * policy.h's ema_request_pages_on, from r->view) */
static int32_t req_pages_on(const struct ema_request *r, int gpu)
{
	int32_t n = 0;

	if (gpu >= 0 && gpu < EMA_MAX_GPUS)
		return r->view.pages_on[gpu];
	if (r->counted)
		return 0;
	for (int32_t i = 0; i < r->n_pages; i++)
		n += r->pages[i].gpu == gpu;
	return n;
}

/* One more KV page for tenant t: its own GPU first; then its lent pages
 * back (the lender's guarantee); then a page borrowed from a peer. */
static int alloc_page(struct ema_engine *e, struct ema_tenant *t, bool may_borrow, int *gpu_out,
		      int32_t *page_out)
{
	int32_t p = -1;

	if (ema_ledger_free_pages(&e->ledger, t->gpu) > t->local_reserve)
		p = ema_ledger_alloc(&e->ledger, t->gpu, t->index, EMA_PAGE_KV);
	if (p >= 0) {
		*gpu_out = t->gpu;
		*page_out = p;
		return ALLOC_OK;
	}
	if (ema_ledger_lent_pages(&e->ledger, t->gpu) > 0 && e->policy->reclaim != NULL) {
		int64_t start = ema_engine_now(e);
		int32_t freed = e->policy->reclaim(&e->ctx, e->policy_state, t->gpu, 1);

		if (freed > 0)
			ema_engine_record_reclaim(e, t->gpu, freed, start, 0);
		p = ema_ledger_alloc(&e->ledger, t->gpu, t->index, EMA_PAGE_KV);
		if (p >= 0) {
			*gpu_out = t->gpu;
			*page_out = p;
			return ALLOC_OK;
		}
		if (ema_ledger_lent_pages(&e->ledger, t->gpu) > 0)
			return ALLOC_WAIT;
	}
	if (may_borrow && e->policy->choose_lender != NULL) {
		int g = e->policy->choose_lender(&e->ctx, e->policy_state, t->index);

		if (g >= 0 && g != t->gpu) {
			p = ema_ledger_alloc(&e->ledger, g, t->index, EMA_PAGE_KV);
			if (p >= 0) {
				*gpu_out = g;
				*page_out = p;
				return ALLOC_OK;
			}
		}
	}
	/* Nothing to borrow: dip into the pages kept for staging, unless they
	 * stage pages already borrowed (the staging area would shrink below
	 * the prefetch window and every copy would wait for the reads). */
	if (ema_ledger_borrowed_pages(&e->ledger, t->index) > 0)
		return ALLOC_NOSPACE;
	p = ema_ledger_alloc(&e->ledger, t->gpu, t->index, EMA_PAGE_KV);
	if (p >= 0) {
		*gpu_out = t->gpu;
		*page_out = p;
		return ALLOC_OK;
	}
	return ALLOC_NOSPACE;
}

/* Pages tenant t could obtain now without preempting anyone of its own. */
static int32_t obtainable_pages(struct ema_engine *e, struct ema_tenant *t)
{
	int32_t n = ema_ledger_free_pages(&e->ledger, t->gpu);

	if (e->policy->reclaim != NULL)
		n += ema_ledger_lent_pages(&e->ledger, t->gpu);
	if (e->policy->borrowable != NULL)
		n += e->policy->borrowable(&e->ctx, e->policy_state, t->index);
	return n;
}

/* Whether t could obtain at least `need` pages now (obtainable_pages(e,
 * t) >= need). With a policy that has borrowable_below (whose
 * borrowable changes no state, policy.h), borrowable is asked only where
 * the tenant's own pages do not settle it, and the quick test first. */
static bool can_obtain(struct ema_engine *e, struct ema_tenant *t, int64_t need, bool may_borrow)
{
	if (!may_borrow) {
		/* a request under reclaim backoff: its own GPU's pages alone */
		int64_t own = ema_ledger_free_pages(&e->ledger, t->gpu);

		if (e->policy->reclaim != NULL)
			own += ema_ledger_lent_pages(&e->ledger, t->gpu);
		return own >= need;
	}
	if (e->policy->borrowable != NULL && e->policy->borrowable_below != NULL) {
		int64_t own = ema_ledger_free_pages(&e->ledger, t->gpu);

		if (e->policy->reclaim != NULL)
			own += ema_ledger_lent_pages(&e->ledger, t->gpu);
		if (own >= need)
			return true; /* (borrowable is never negative) */
		if (need - own <= INT32_MAX &&
		    e->policy->borrowable_below(&e->ctx, e->policy_state, t->index,
						(int32_t)(need - own)))
			return false;
	}
	return obtainable_pages(e, t) >= need;
}

/* ---- preemption -------------------------------------------------------- */

/* Reclaim backoff. A lender takes its pages back from whatever borrowed
 * them; where every tenant is overloaded that can go round for ever (a
 * request admitted on borrowed pages, taken back before its step
 * completes, admitted again: doc/limitations.md). A request that
 * reclaims preempted or demoted serving.reclaim_backoff times (64) runs on its
 * own GPU's pages only from then on, as under static, and one whose
 * whole KV its own GPU can never hold is dropped, counted in
 * dropped_recomputed. No request of the shipped scenarios comes near
 * (the most preempted one, for any cause, 35 times: the bench's
 * replay with every tenant overloaded), so their outputs are what they
 * were; the random scenarios that livelocked took requests back
 * thousands of times. */
static bool own_never_fits(const struct ema_engine *e, const struct ema_request *r)
{
	return ema_engine_pages_for_tokens(e, (int64_t)r->prompt_tokens + r->output_tokens) >
	       e->tenants[r->view.tenant].kv_capacity_pages;
}

static void reclaim_backoff(struct ema_engine *e, struct ema_request *r)
{
	if (r->reclaimed < INT32_MAX - 1)  /* (INT32_MAX: the backoff is off) */
		r->reclaimed++;
	if (r->reclaimed >= e->reclaim_backoff && !r->own_only) {
		r->own_only = 1;
		e->tenants[r->view.tenant].stats.reclaim_backoffs++;
	}
}

void ema_engine_preempt_recompute(struct ema_engine *e, struct ema_request *r)
{
	struct ema_tenant *t = &e->tenants[r->view.tenant];

	e->preempts_since_token++;
	e->last_preempted = r;
	req_free_pages(e, t, r);
	running_remove(t, r->id);
	r->recomputed_tokens += r->computed;
	t->stats.recomputed_tokens += r->computed;
	r->computed = 0;
	r->preemptions++;
	t->stats.preemptions++;
	if (ema_engine_pages_for_tokens(e, seq_len(r)) > t->max_admit_pages ||
	    (r->own_only && own_never_fits(e, r))) {
		/* Its prompt and the tokens it generated are more than any
		 * admission can take (max_admit_pages: the staged ema of before
		 * its planner, whose link budgets gave less at nothing
		 * borrowed), or, under reclaim backoff, its whole
		 * KV more than its own GPU holds: waiting, it would hold the
		 * queue behind it for ever. Dropped, as at arrival, and
		 * counted. (Random scenarios: a100x4, a recomputed request
		 * 19 pages over, "no progress possible".) */
		int32_t need = ema_engine_pages_for_tokens(e, seq_len(r));

		r->state = EMA_REQ_DROPPED;
		t->stats.dropped++;
		t->stats.dropped_recomputed++;
		if (need > t->max_admit_pages) {
			if (need > t->stats.dropped_recomputed_max_pages)
				t->stats.dropped_recomputed_max_pages = need;
		} else {
			int32_t whole = ema_engine_pages_for_tokens(
				e, (int64_t)r->prompt_tokens + r->output_tokens);

			t->stats.dropped_backoff++;
			if (whole > t->stats.dropped_backoff_max_pages)
				t->stats.dropped_backoff_max_pages = whole;
		}
		t->n_done++;
		e->done_requests++;
		note_final(e, t);
		return;
	}
	r->state = EMA_REQ_WAITING;
	if (waiting_push_front(t, r->id) != EMA_OK)
		engine_fail(e, EMA_ERR_NOMEM, "engine: out of memory");
}

static void xfer_free(struct xfer_ctx *x)
{
	if (x->linked) {
		if (x->prev != NULL)
			x->prev->next = x->next;
		else
			x->e->xfers = x->next;
		if (x->next != NULL)
			x->next->prev = x->prev;
	}
	free(x->src_pages);
	free(x->dst_pages);
	free(x->entry);
	free(x);
}

static struct xfer_ctx *xfer_new(struct ema_engine *e, struct ema_request *r,
				 enum xfer_kind kind, int src, int dst, int32_t n)
{
	struct xfer_ctx *x = calloc(1, sizeof *x);

	if (x == NULL)
		return NULL;
	x->e = e;
	x->tenant = r->view.tenant;
	x->req = r->id;
	x->kind = kind;
	x->src_gpu = src;
	x->dst_gpu = dst;
	x->start_ns = ema_engine_now(e);
	x->src_pages = malloc((size_t)(n > 0 ? n : 1) * sizeof *x->src_pages);
	x->dst_pages = malloc((size_t)(n > 0 ? n : 1) * sizeof *x->dst_pages);
	x->entry = malloc((size_t)(n > 0 ? n : 1) * sizeof *x->entry);
	if (x->src_pages == NULL || x->dst_pages == NULL || x->entry == NULL) {
		xfer_free(x);
		return NULL;
	}
	x->next = e->xfers;
	if (e->xfers != NULL)
		e->xfers->prev = x;
	e->xfers = x;
	x->linked = true;
	return x;
}

static uint64_t page_tag(const struct ema_request *r, int32_t entry)
{
	/* content identity of a KV page: (tenant, request, page index) */
	return ((uint64_t)(r->view.tenant + 1) << 48) ^ ((uint64_t)(uint32_t)r->id << 16) ^
	       (uint64_t)(uint32_t)entry;
}

static void xfer_done(void *arg, int64_t now);
static bool livelocked(struct ema_engine *e, int64_t now);

static int xfer_start(struct ema_engine *e, struct xfer_ctx *x, enum ema_transfer_purpose purpose)
{
	struct ema_transfer tr;
	uint64_t *tags = NULL;
	struct ema_request *r = &e->tenants[x->tenant].reqs[x->req];
	int rc;

	memset(&tr, 0, sizeof tr);
	tr.src_gpu = x->src_gpu;
	tr.dst_gpu = x->dst_gpu;
	tr.n_pages = x->n;
	tr.src_pages = x->src_pages;
	tr.dst_pages = x->dst_pages;
	tr.bytes = (uint64_t)x->n * e->page_bytes;
	tr.purpose = purpose;
	tr.method = e->cfg->policy.copy_method;
	tags = malloc((size_t)(x->n > 0 ? x->n : 1) * sizeof *tags);
	if (tags == NULL)
		return EMA_ERR_NOMEM;
	for (int32_t i = 0; i < x->n; i++)
		tags[i] = page_tag(r, x->entry[i]);
	tr.tags = tags;
	r->pending_xfers++;
	r->pinned = 1;
	e->xfers_in_flight++;
	e->tenants[x->tenant].xfers_in_flight++;
	rc = e->platform->ops->transfer(e->platform, &tr, xfer_done, x, &e->op_err);
	free(tags);
	return rc;
}

static bool swap_out(struct ema_engine *e, struct ema_request *r,
		     enum ema_transfer_purpose purpose);

bool ema_engine_preempt_swap(struct ema_engine *e, struct ema_request *r)
{
	return swap_out(e, r, EMA_XFER_SWAP_OUT);
}

bool ema_engine_demote(struct ema_engine *e, struct ema_request *r)
{
	return swap_out(e, r, EMA_XFER_DEMOTE);
}

static bool swap_out(struct ema_engine *e, struct ema_request *r,
		     enum ema_transfer_purpose purpose)
{
	struct ema_tenant *t = &e->tenants[r->view.tenant];
	int32_t per_src[EMA_MAX_GPUS] = {0};

	if (r->pinned || r->n_pages == 0 || e->host_free[t->gpu] < r->n_pages)
		return false;
	if (req_number(e, t, r) != EMA_OK)
		return true;
	for (int32_t i = 0; i < r->n_pages; i++)
		per_src[r->pages[i].gpu]++;
	if (e->platform->ops->tag_pages != NULL && per_src[t->gpu] > 0) {
		/* Local KV gets its content now (borrowed pages have theirs). */
		int32_t *pages = malloc((size_t)per_src[t->gpu] * sizeof *pages);
		uint64_t *tags = malloc((size_t)per_src[t->gpu] * sizeof *tags);
		int n = 0;

		if (pages == NULL || tags == NULL) {
			free(pages);
			free(tags);
			return false;
		}
		for (int32_t i = 0; i < r->n_pages; i++)
			if (r->pages[i].gpu == t->gpu) {
				pages[n] = r->pages[i].page;
				tags[n++] = page_tag(r, i);
			}
		if (e->platform->ops->tag_pages(e->platform, t->gpu, n, pages, tags, &e->op_err) != EMA_OK)
			engine_fail_op(e, EMA_ERR_DEVICE, "engine: cannot write a page's content");
		free(pages);
		free(tags);
	}
	running_remove(t, r->id);
	r->state = EMA_REQ_SWAPPED;
	e->preempts_since_token++;
	e->last_preempted = r;
	r->preemptions++;
	t->stats.preemptions++;
	t->stats.swaps++;
	for (int g = 0; g < e->ledger.n_gpus; g++) {
		struct xfer_ctx *x;

		if (per_src[g] == 0)
			continue;
		x = xfer_new(e, r, XFER_SWAP_OUT, g, EMA_HOST, per_src[g]);
		if (x == NULL) {
			engine_fail(e, EMA_ERR_NOMEM, "engine: out of memory");
			return true;
		}
		for (int32_t i = 0; i < r->n_pages; i++)
			if (r->pages[i].gpu == g) {
				x->src_pages[x->n] = r->pages[i].page;
				x->dst_pages[x->n] = e->host_stack[t->gpu][--e->host_free[t->gpu]];
				x->entry[x->n++] = i;
			}
		if (xfer_start(e, x, purpose) != EMA_OK) {
			engine_fail_op(e, EMA_ERR_DEVICE, "engine: transfer failed to start");
			return true;
		}
	}
	return true;
}

int32_t ema_engine_move_home(struct ema_engine *e, struct ema_request *r, int lender)
{
	struct ema_tenant *t = &e->tenants[r->view.tenant];
	int32_t k = req_pages_on(r, lender);
	struct xfer_ctx *x;

	if (k == 0 || r->pinned || ema_ledger_free_pages(&e->ledger, t->gpu) < k)
		return 0;
	x = xfer_new(e, r, XFER_MOVE_HOME, lender, t->gpu, k);
	if (x == NULL) {
		engine_fail(e, EMA_ERR_NOMEM, "engine: out of memory");
		return 0;
	}
	for (int32_t i = 0; i < r->n_pages; i++)
		if (r->pages[i].gpu == lender) {
			x->src_pages[x->n] = r->pages[i].page;
			x->dst_pages[x->n] = ema_ledger_alloc(&e->ledger, t->gpu, t->index, EMA_PAGE_KV);
			x->entry[x->n++] = i;
		}
	if (xfer_start(e, x, EMA_XFER_RECLAIM) != EMA_OK)
		engine_fail_op(e, EMA_ERR_DEVICE, "engine: transfer failed to start");
	return k;
}

static int borrowers_on(struct ema_engine *e, int gpu, bool steps);

/* One request's pages on `gpu` given up and the same number taken
 * elsewhere, its own GPU first, then the GPU with the most free pages
 * (the lowest of equals), with no transfer; all or nothing (0 where the
 * other GPUs have too few free pages). */
static int32_t relocate_request(struct ema_engine *e, struct ema_request *r, int gpu)
{
	struct ema_tenant *t = &e->tenants[r->view.tenant];
	int32_t k = req_pages_on(r, gpu);
	int64_t room = 0;

	if (k == 0 || r->pinned || r->counted || gpu == t->gpu)
		return 0;
	for (int g = 0; g < e->ledger.n_gpus; g++)
		if (g != gpu)
			room += ema_ledger_free_pages(&e->ledger, g);
	if (room < k)
		return 0;
	for (int32_t i = 0; i < r->n_pages; i++) {
		struct ema_kv_page *pg = &r->pages[i];
		int dst = -1;
		int32_t np;

		if (pg->gpu != gpu)
			continue;
		if (ema_ledger_free_pages(&e->ledger, t->gpu) > 0)
			dst = t->gpu;
		for (int g = 0; dst < 0 && g < e->ledger.n_gpus; g++)
			if (g != gpu && ema_ledger_free_pages(&e->ledger, g) > 0)
				dst = g;
		for (int g = dst + 1; dst != t->gpu && g < e->ledger.n_gpus; g++)
			if (g != gpu && ema_ledger_free_pages(&e->ledger, g) >
					ema_ledger_free_pages(&e->ledger, dst))
				dst = g;
		np = ema_ledger_alloc(&e->ledger, dst, t->index, EMA_PAGE_KV);
		if (np < 0) {
			engine_fail(e, EMA_ERR_INTERNAL, "engine: a free page counted was not there");
			return 0;
		}
		ema_ledger_free(&e->ledger, gpu, pg->page);
		if (--r->view.pages_on[gpu] == 0)
			ema_gpuset_clear(&r->on_mask, gpu);
		r->view.pages_on[dst]++;
		ema_gpuset_set(&r->on_mask, dst);
		if (dst == t->gpu)
			r->n_remote--;
		pg->gpu = (int16_t)dst;
		pg->page = np;
	}
	return k;
}

/* The pooled bound's reclaim: borrowers' pages on `gpu`, newest first,
 * moved at once and with no transfer to free pages elsewhere, whole
 * requests at a time; where the rest of the server has no room, the
 * newest borrower preempted (recompute) and the rest moved again, until
 * `need` are freed. In a server whose memory is one pool, where a page
 * lives costs nothing and the lender does not wait for a borrower's step
 * (the bound's idealisation: a real policy waits, borrowers_on). */
int32_t ema_engine_pool_reclaim(struct ema_engine *e, int gpu, int32_t need)
{
	int32_t freed = 0;

	while (freed < need) {
		int n = borrowers_on(e, gpu, true);
		struct ema_request *r;

		for (int i = 0; i < n && freed < need; i++)
			freed += relocate_request(e, e->victims[i], gpu);
		if (freed >= need || n == 0)
			break;
		n = borrowers_on(e, gpu, true);
		if (n == 0)
			break;
		r = e->victims[0];
		freed += req_pages_on(r, gpu);
		reclaim_backoff(e, r);
		ema_engine_preempt_recompute(e, r);
	}
	return freed;
}

static void xfer_done(void *arg, int64_t now)
{
	struct xfer_ctx *x = arg;
	struct ema_engine *e = x->e;
	struct ema_tenant *t = &e->tenants[x->tenant];
	struct ema_request *r = &t->reqs[x->req];

	leap_settle(e);
	timeline_advance(e, now);
	account(e, t, now);
	switch (x->kind) {
	case XFER_MOVE_HOME:
		for (int32_t i = 0; i < x->n; i++) {
			struct ema_kv_page *pg = &r->pages[x->entry[i]];

			ema_ledger_free(&e->ledger, pg->gpu, pg->page);
			if (--r->view.pages_on[pg->gpu] == 0)
				ema_gpuset_clear(&r->on_mask, pg->gpu);
			r->view.pages_on[t->gpu]++;
			ema_gpuset_set(&r->on_mask, t->gpu);
			pg->gpu = (int16_t)t->gpu;
			pg->page = x->dst_pages[i];
			r->n_remote--;
		}
		ema_engine_record_reclaim(e, x->src_gpu, x->n, x->start_ns, now - x->start_ns);
		break;
	case XFER_SWAP_OUT:
		for (int32_t i = 0; i < x->n; i++) {
			struct ema_kv_page *pg = &r->pages[x->entry[i]];

			ema_ledger_free(&e->ledger, pg->gpu, pg->page);
			if (--r->view.pages_on[pg->gpu] == 0)
				ema_gpuset_clear(&r->on_mask, pg->gpu);
			if (pg->gpu != t->gpu)
				r->n_remote--;
			pg->gpu = EMA_HOST;
			pg->page = x->dst_pages[i];
			t->kv_pages--;
		}
		break;
	case XFER_SWAP_IN:
		for (int32_t i = 0; i < x->n; i++) {
			struct ema_kv_page *pg = &r->pages[x->entry[i]];

			e->host_stack[t->gpu][e->host_free[t->gpu]++] = pg->page;
			pg->gpu = (int16_t)x->dst_gpu;
			pg->page = x->dst_pages[i];
			r->view.pages_on[x->dst_gpu]++;
			ema_gpuset_set(&r->on_mask, x->dst_gpu);
			t->kv_pages++;
			if (x->dst_gpu != t->gpu)
				r->n_remote++;
		}
		note_peak(e, t);
		break;
	}
	r->pending_xfers--;
	e->xfers_in_flight--;
	t->xfers_in_flight--;
	if (r->pending_xfers == 0) {
		r->pinned = 0;
		if (r->free_on_unpin) {
			r->free_on_unpin = 0;
			req_done_pages(e, t, r);
		} else if (x->kind == XFER_SWAP_OUT) {
			t->swapped[t->swapped_n++] = r->id;
		} else if (x->kind == XFER_SWAP_IN) {
			r->state = EMA_REQ_RUNNING;
			r->admit_seq = e->admit_counter++;
			t->running[t->running_n++] = r->id;
		}
	}
	xfer_free(x);
	/* (swaps alone can go round with no iteration: a swap-in that
	 * another tenant's growth swaps straight out again) */
	if (livelocked(e, now))
		return;
	kick_all(e);
	check_leaps(e);
}

/* Swap a request back in from host memory: all its pages at once. */
static int swap_in(struct ema_engine *e, struct ema_tenant *t, struct ema_request *r)
{
	int32_t n = r->n_pages;
	int32_t *pages;
	int32_t got = 0;
	int rc = ALLOC_OK;

	pages = malloc((size_t)(n > 0 ? n : 1) * sizeof *pages);
	if (pages == NULL)
		return ALLOC_NOSPACE;
	int *where = malloc((size_t)(n > 0 ? n : 1) * sizeof *where);
	if (where == NULL) {
		free(pages);
		return ALLOC_NOSPACE;
	}
	for (got = 0; got < n; got++) {
		rc = alloc_page(e, t, !r->own_only, &where[got], &pages[got]);
		if (rc != ALLOC_OK)
			break;
	}
	if (rc != ALLOC_OK) {
		for (int32_t i = 0; i < got; i++)
			ema_ledger_free(&e->ledger, where[i], pages[i]);
		free(pages);
		free(where);
		return rc;
	}
	swapped_remove(t, r->id);
	for (int g = 0; g < e->ledger.n_gpus; g++) {
		int32_t k = 0;
		struct xfer_ctx *x;

		for (int32_t i = 0; i < n; i++)
			k += where[i] == g;
		if (k == 0)
			continue;
		x = xfer_new(e, r, XFER_SWAP_IN, EMA_HOST, g, k);
		if (x == NULL) {
			engine_fail(e, EMA_ERR_NOMEM, "engine: out of memory");
			break;
		}
		for (int32_t i = 0; i < n; i++)
			if (where[i] == g) {
				x->src_pages[x->n] = r->pages[i].page;
				x->dst_pages[x->n] = pages[i];
				x->entry[x->n++] = i;
			}
		if (xfer_start(e, x, EMA_XFER_SWAP_IN) != EMA_OK)
			engine_fail_op(e, EMA_ERR_DEVICE, "engine: transfer failed to start");
	}
	free(pages);
	free(where);
	return ALLOC_OK;
}

/* Tenant t is out of pages for a running request: preempt its newest
 * unpinned running request (which may be `self`). Returns the victim or
 * -1 when nothing can be preempted; *async is set when the victim's pages
 * are freed only once its swap-out completes. */
static int32_t preempt_newest(struct ema_engine *e, struct ema_tenant *t, bool *async)
{
	*async = false;
	for (int32_t i = t->running_n - 1; i >= 0; i--) {
		struct ema_request *v = &t->reqs[t->running[i]];
		enum ema_preempt_mode mode = EMA_PREEMPT_RECOMPUTE;

		if (v->pinned)
			continue;
		if (e->policy->preempt_mode != NULL)
			mode = e->policy->preempt_mode(&e->ctx, e->policy_state, v);
		if (mode == EMA_PREEMPT_SWAP && ema_engine_preempt_swap(e, v)) {
			*async = true;
			return v->id;
		}
		ema_engine_preempt_recompute(e, v);
		return v->id;
	}
	return -1;
}

/* ---- iterations ------------------------------------------------------- */

static void iteration_done(void *arg, const struct ema_iteration_result *res);

static int ensure_bufs(struct ema_tenant *t, int n_gpus, int32_t need)
{
	if (need <= t->page_buf_cap)
		return EMA_OK;
	int32_t ncap = need * 2;
	int32_t *l = realloc(t->local_buf, (size_t)ncap * sizeof *l);

	if (l == NULL)
		return EMA_ERR_NOMEM;
	t->local_buf = l;
	/* (the configured GPUs only: a buffer per GPU of EMA_MAX_GPUS for
	 * each of as many tenants is what a 72-GPU build cannot afford) */
	for (int g = 0; g < n_gpus; g++) {
		int32_t *r = realloc(t->remote_buf[g], (size_t)ncap * sizeof *r);

		if (r == NULL)
			return EMA_ERR_NOMEM;
		t->remote_buf[g] = r;
	}
	t->page_buf_cap = ncap;
	return EMA_OK;
}

/* Tokens the request's pages hold (tokens_for_pages), recomputed only
 * when its pages changed. */
static inline int64_t tokens_held(const struct ema_engine *e, struct ema_request *r)
{
	if (r->cap_tok_pages != r->n_pages) {
		r->cap_tok = tokens_for_pages(e, r->n_pages);
		r->cap_tok_pages = r->n_pages;
	}
	return r->cap_tok;
}

/* grow_request where the request needs pages. */
static int grow_request_pages(struct ema_engine *e, struct ema_tenant *t, struct ema_request *r,
			      int64_t tokens)
{
	int32_t need;

	need = pages_to_hold(e, r->n_pages, tokens);
	{
		int32_t add = need - r->n_pages;

		/* All from its own GPU's free pages beyond the staging reserve:
		 * what alloc_page's first choice would give one by one, at once. */
		if (add >= 1 && ema_ledger_free_pages(&e->ledger, t->gpu) - add >= t->local_reserve &&
		    e->ledger.gpu[t->gpu].home_tenant == t->index) {
			if (e->counted_pages && (r->counted || r->n_pages == 0) &&
			    ema_ledger_alloc_counted(&e->ledger, t->gpu, add) == EMA_OK) {
				r->counted = 1;
				r->n_pages = need;
				r->view.pages_on[t->gpu] += add;
				ema_gpuset_set(&r->on_mask, t->gpu);
				t->kv_pages += add;
				note_peak(e, t);
				return ALLOC_OK;
			}
			if (req_reserve(e, r, need) != EMA_OK) {
				engine_fail(e, EMA_ERR_NOMEM, "engine: out of memory");
				return ALLOC_NOSPACE;
			}
			if (ema_ledger_alloc_home_kv(&e->ledger, t->gpu, add, &r->pages[r->n_pages]) ==
			    EMA_OK) {
				r->n_pages = need;
				r->view.pages_on[t->gpu] += add;
				ema_gpuset_set(&r->on_mask, t->gpu);
				t->kv_pages += add;
				note_peak(e, t);
				return ALLOC_OK;
			}
		}
	}
	if (r->n_pages < need && req_number(e, t, r) != EMA_OK)
		return ALLOC_NOSPACE;
	while (r->n_pages < need) {
		int gpu;
		int32_t page;
		int rc = alloc_page(e, t, !r->own_only, &gpu, &page);

		if (rc != ALLOC_OK)
			return rc;
		if (req_add_page(e, t, r, gpu, page) != EMA_OK) {
			engine_fail(e, EMA_ERR_NOMEM, "engine: out of memory");
			return ALLOC_NOSPACE;
		}
		/* Borrowed pages are the ones reclaim moves: give them content
		 * that the move can be checked against. */
		if (gpu != t->gpu && e->platform->ops->tag_pages != NULL) {
			uint64_t tag = page_tag(r, r->n_pages - 1);

			if (e->platform->ops->tag_pages(e->platform, gpu, 1, &page, &tag, &e->op_err) != EMA_OK)
				engine_fail_op(e, EMA_ERR_DEVICE, "engine: cannot write a page's content");
		}
	}
	return ALLOC_OK;
}

/* Makes sure request r holds pages for `tokens` tokens: in line, the
 * check that it does (most steps of most requests), which every
 * scheduling pass makes for every running request. */
static inline int grow_request(struct ema_engine *e, struct ema_tenant *t, struct ema_request *r,
			       int64_t tokens)
{
	if (tokens <= tokens_held(e, r))
		return ALLOC_OK;
	return grow_request_pages(e, t, r, tokens);
}

static void launch(struct ema_engine *e, struct ema_tenant *t)
{
	struct ema_iteration it;
	int32_t n_local = 0, n_rem[EMA_MAX_GPUS] = {0};

	/* FLOPs, tokens and bytes were summed as requests joined the batch
	 * (batch_add); only the page lists the hw backend reads need a walk. */
	ema_iteration_clear(&it);
	it.n_seqs = t->iter_work.n_seqs;
	it.prefill_tokens = t->iter_work.prefill_tokens;
	it.decode_tokens = t->iter_work.decode_tokens;
	it.flops = t->iter_work.flops;
	it.attention_flops = t->iter_work.attention_flops;
	it.act_bytes = t->iter_work.act_bytes;
	it.kv_local_bytes = t->iter_kv_local;
	it.tenant = t->index;
	it.gpu = t->gpu;
	it.weight_bytes = e->weight_bytes;
	it.layer_groups = e->cfg->serving.layer_groups;
	it.model_layers = e->cfg->model.layers;
	it.staging_pages = NULL;
	if (e->page_lists) {
		int32_t total_pages = 0;

		for (int32_t i = 0; i < t->iter_n; i++)
			total_pages += t->reqs[t->iter_batch[i]].n_pages;
		if (ensure_bufs(t, e->ledger.n_gpus, total_pages + 1) != EMA_OK) {
			engine_fail(e, EMA_ERR_NOMEM, "engine: out of memory");
			return;
		}
		for (int32_t i = 0; i < t->iter_n; i++) {
			struct ema_request *r = &t->reqs[t->iter_batch[i]];

			for (int32_t k = 0; k < r->n_pages; k++) {
				int g = r->pages[k].gpu;

				if (g == t->gpu)
					t->local_buf[n_local++] = r->pages[k].page;
				else
					t->remote_buf[g][n_rem[g]++] = r->pages[k].page;
			}
		}
	} else if (!ema_gpuset_empty(&t->iter_rem_mask)) {
		memcpy(n_rem, t->iter_rem_pages, sizeof n_rem);
	}
	it.n_local_pages = n_local;
	it.local_pages = t->local_buf;
	for (int g = 0, any = !ema_gpuset_empty(&t->iter_rem_mask); any && g < e->ledger.n_gpus;
	     g++) {
		if (t->iter_rem_bytes[g] == 0 && t->iter_rem_write[g] == 0 && n_rem[g] == 0)
			continue;
		it.remote[it.n_remote].gpu = g;
		it.remote[it.n_remote].n_pages = n_rem[g];
		it.remote[it.n_remote].pages = e->page_lists ? t->remote_buf[g] : NULL;
		it.remote[it.n_remote].bytes = t->iter_rem_bytes[g];
		it.remote[it.n_remote].write_bytes = t->iter_rem_write[g];
		it.remote[it.n_remote].exchange_bytes =
			(uint64_t)t->iter_rem_tokens[g] * e->attention_exchange_per_token;
		/* the path is the policy's (plan_iteration) */
		it.remote[it.n_remote].compute = false;
		it.remote[it.n_remote].lender_busy = false;
		t->stats.remote_bytes += t->iter_rem_bytes[g];
		it.n_remote++;
	}
	it.staging_pages = NULL;
	it.n_staging_pages = 0;
	if (e->policy->plan_iteration != NULL)
		e->policy->plan_iteration(&e->ctx, e->policy_state, &it);
	t->busy = true;
	t->stats.iterations++;
	/* the window, decided here once for every platform */
	it.window_depth = ema_iteration_window_depth(&it, e->page_bytes);
	if (e->replay)
		return; /* a leap's iteration: the platform has run it */
	if (e->leap_on && try_leap(e, t, &it))
		return;
	e->remote_steps += it.n_remote > 0;
	if (e->platform->ops->iteration(e->platform, &it, iteration_done, t, &e->op_err) != EMA_OK)
		engine_fail_op(e, EMA_ERR_DEVICE, "engine: iteration failed to start");
}

/* The batch being built starts empty. */
static void batch_clear(struct ema_tenant *t)
{
	for (int32_t i = 0; i < t->iter_n; i++)
		t->reqs[t->iter_batch[i]].in_iter = 0;
	t->iter_n = 0;
	memset(&t->iter_work, 0, sizeof t->iter_work);
	t->iter_kv_local = 0;
	if (!ema_gpuset_empty(&t->iter_rem_mask)) {
		memset(t->iter_rem_bytes, 0, sizeof t->iter_rem_bytes);
		memset(t->iter_rem_write, 0, sizeof t->iter_rem_write);
		memset(t->iter_rem_tokens, 0, sizeof t->iter_rem_tokens);
		memset(t->iter_rem_pages, 0, sizeof t->iter_rem_pages);
		ema_gpuset_zero(&t->iter_rem_mask);
	}
}

/* The K and V of tokens [computed, computed + n) of r, which holds
 * pages on other GPUs, written into the pages that hold them: those on
 * its own GPU into its local KV traffic, the others into what the step
 * writes to each lender (iter_rem_write). A page not yet allocated (none
 * should be) counts as its last page's. */
static void kv_writes(struct ema_engine *e, struct ema_tenant *t, struct ema_request *r,
		      int64_t n)
{
	int64_t pos = r->computed, end = pos + n;

	while (pos < end) {
		int32_t k = ema_engine_pages_for_tokens(e, pos + 1) - 1;
		int64_t page_end = tokens_for_pages(e, k + 1);
		int64_t here = (page_end < end ? page_end : end) - pos;
		int g;

		if (here <= 0)
			here = end - pos;
		if (k >= r->n_pages)
			k = r->n_pages - 1;
		g = k >= 0 ? r->pages[k].gpu : t->gpu;
		if (g == t->gpu || g < 0) {
			t->iter_kv_local += (uint64_t)here * e->work.kv_per_token;
		} else {
			t->iter_rem_write[g] += (uint64_t)here * e->work.kv_per_token;
			ema_gpuset_set(&t->iter_rem_mask, g);
		}
		pos += here;
	}
}

/* Request r joins the batch: its work is added in batch order, its KV
 * read split over the GPUs that hold its pages (spread evenly over them),
 * its new tokens' KV written where their pages are (kv_writes). */
static void batch_add(struct ema_engine *e, struct ema_tenant *t, int32_t id, int32_t chunk)
{
	struct ema_request *r = &t->reqs[id];
	uint64_t kv = 0;

	t->iter_batch[t->iter_n] = id;
	t->iter_chunk[t->iter_n] = chunk;
	t->iter_n++;
	r->in_iter = 1;
	ema_work_add(&t->iter_work, &e->work, r->computed, chunk, &kv);
	/* the step also writes its new tokens' K and V into the request's
	 * pages: through its own GPU's HBM where they are local (counted
	 * with the KV it reads), over a link into the lender's HBM where not
	 * (until 2026-12-04 no write was charged: a prompt admitted onto
	 * borrowed pages reached the lender for free) */
	if (r->n_remote == 0) {
		t->iter_kv_local += kv + (uint64_t)(chunk > 0 ? chunk : 1) * e->work.kv_per_token;
		return;
	}
	kv_writes(e, t, r, chunk > 0 ? chunk : 1);
	{
		/* (integer sums: any order gives the same totals; the peers
		 * first, then the home GPU, with the tenant's fields written
		 * once each, which the compiler cannot do itself: they might
		 * alias the request's.) Each peer's share is its pages' part
		 * rounded down, and the home GPU reads the rest, so that every
		 * byte is read somewhere: until 2026-12-04 the rounding lost up
		 * to a byte per page, which a pooled step folded back into its
		 * local reads could not match with the same KV all local. */
		const uint64_t share = kv / (uint64_t)r->n_pages;
		const bool at_home = ema_gpuset_test(&r->on_mask, t->gpu);
		uint64_t remote = 0;

		ema_gpuset_or(&t->iter_rem_mask, &r->on_mask);
		if (at_home)
			ema_gpuset_clear(&t->iter_rem_mask, t->gpu);
		EMA_GPUSET_FOREACH(g, &r->on_mask) {
			int32_t n = r->view.pages_on[g];

			if (g == t->gpu)
				continue;
			t->iter_rem_bytes[g] += share * (uint64_t)n;
			t->iter_rem_pages[g] += n;
			t->iter_rem_tokens[g] += chunk > 0 ? chunk : 1;
			remote += share * (uint64_t)n;
		}
		if (at_home)
			t->iter_kv_local += kv - remote;
		else
			t->iter_rem_bytes[ema_gpuset_first(&r->on_mask)] += kv - remote;
	}
}

static bool in_batch(const struct ema_tenant *t, int32_t r)
{
	return t->reqs[r].in_iter != 0;
}

/* Nothing of the tenant runs, is about to, or has pages moving: no
 * event of its own can free memory for the next request. */
static bool tenant_idle(const struct ema_tenant *t)
{
	return t->running_n == 0 && t->iter_n == 0 && t->xfers_in_flight == 0;
}

/* Oversize requests yield. A request whose whole KV is more than its own
 * GPU's (static drops it at arrival) needs every page of its GPU and
 * borrowed ones besides: waiting at the front of the queue for them, or
 * holding its GPU once started, it keeps every request behind it waiting
 * as long as its peers stay busy. Random scenarios with the Mooncake
 * trace beside an overloaded tenant gave the trace's tenant 0.04-0.18 x
 * static's throughput and TTFT p50 minutes against static's milliseconds
 * (vs-static seed 3: 300255, 300293); yielding only to a request behind
 * that could start then still left 0.49 x and a paired TTFT of 6.4 x
 * (300255: one started, prefilled for 3 s, and held the GPU). So such a
 * request starts only with no request queued behind it: where it cannot
 * start at a try and one is, it is dropped, as static drops it at
 * arrival, and counted (dropped_yielded). The requests that fit the GPU
 * keep their turns, and one that needs borrowed pages still runs where
 * the queue leaves it alone and they are there. Its pages are none (a
 * recomputed request's went when it was preempted). True when it dropped
 * r, now popped from the queue. */
static bool oversize_yields(struct ema_engine *e, struct ema_tenant *t, struct ema_request *r)
{
	int32_t whole;

	if (e->cfg->serving.oversize != EMA_OVERSIZE_YIELD || t->waiting_n < 2 ||
	    !own_never_fits(e, r))
		return false;
	whole = ema_engine_pages_for_tokens(e, (int64_t)r->prompt_tokens + r->output_tokens);
	waiting_pop_front(t);
	r->state = EMA_REQ_DROPPED;
	t->stats.dropped++;
	t->stats.dropped_yielded++;
	if (whole > t->stats.dropped_yielded_max_pages)
		t->stats.dropped_yielded_max_pages = whole;
	t->n_done++;
	e->done_requests++;
	note_final(e, t);
	return true;
}

/* ... and once started, an oversize request gives way: where the front
 * of the queue cannot start and would with the own-GPU pages of a
 * running oversize request, that request is preempted and dropped
 * (counted in preemptions and dropped_yielded). Started alone, it would
 * otherwise hold every page of its GPU for as long as it generates, and
 * every request that arrives meanwhile waits (random scenarios: TTFT p50
 * seconds against static's milliseconds, vs-static seed 2: 200010).
 * Asked at the start of a try, before the batch is built, where the
 * front is not oversize itself; not for a request whose pages are
 * moving; the newest first, as preemption goes. */
static void oversize_make_way(struct ema_engine *e, struct ema_tenant *t)
{
	const struct ema_request *r;
	int32_t watermark;
	int64_t own, need;

	if (!e->oversize_started || t->waiting_n == 0 || t->swapped_n > 0)
		return;
	r = &t->reqs[waiting_front(t)];
	if (own_never_fits(e, r))
		return;
	watermark = (int32_t)ceil(e->cfg->serving.watermark * t->kv_capacity_pages);
	need = (int64_t)ema_engine_pages_for_tokens(e, seq_len(r)) +
	       (tenant_idle(t) ? 0 : watermark);
	own = ema_ledger_free_pages(&e->ledger, t->gpu);
	if (e->policy->reclaim != NULL)
		own += ema_ledger_lent_pages(&e->ledger, t->gpu);
	if (own >= need || can_obtain(e, t, need, !r->own_only))
		return;
	for (int32_t i = t->running_n - 1; i >= 0; i--) {
		struct ema_request *v = &t->reqs[t->running[i]];
		int32_t whole;

		if (v->pinned || v->pending_xfers > 0 || !own_never_fits(e, v) ||
		    own + v->view.pages_on[t->gpu] < need)
			continue;
		whole = ema_engine_pages_for_tokens(e, (int64_t)v->prompt_tokens + v->output_tokens);
		ema_engine_preempt_recompute(e, v);
		if (v->state == EMA_REQ_WAITING) {
			/* (preempt_recompute put it at the front) */
			waiting_pop_front(t);
			v->state = EMA_REQ_DROPPED;
			t->stats.dropped++;
			t->n_done++;
			e->done_requests++;
			note_final(e, t);
			t->stats.dropped_yielded++;
			if (whole > t->stats.dropped_yielded_max_pages)
				t->stats.dropped_yielded_max_pages = whole;
		}
		/* (else preempt_recompute dropped it, too large to admit
		 * again, and counted it there) */
		return;
	}
}

/* Admission of waiting requests (FCFS). Returns tokens used. */
static int64_t admit(struct ema_engine *e, struct ema_tenant *t, int64_t budget, bool *wait)
{
	const struct ema_serving_cfg *s = &e->cfg->serving;
	int32_t watermark = (int32_t)ceil(s->watermark * t->kv_capacity_pages);
	int64_t used = 0;

	while (t->waiting_n > 0 && t->running_n < s->max_batch && !*wait) {
		struct ema_request *r = &t->reqs[waiting_front(t)];
		int64_t remaining = seq_len(r) - r->computed;
		int64_t chunk = remaining;
		int32_t need_pages;
		int rc;

		if (s->chunked_prefill) {
			if (budget - used <= 0)
				break;
			if (chunk > budget - used)
				chunk = budget - used;
		} else if (used > 0 && used + chunk > budget) {
			break;
		}
		need_pages = ema_engine_pages_for_tokens(e, seq_len(r));
		/* The watermark keeps room for the running requests to grow;
		 * a tenant with nothing running needs none, and a request
		 * larger than capacity - watermark would otherwise never start
		 * (requests that can never fit were dropped at arrival). */
		if (!can_obtain(e, t, (int64_t)need_pages + (tenant_idle(t) ? 0 : watermark),
				!r->own_only)) {
			if (oversize_yields(e, t, r))
				continue;
			break;
		}
		rc = grow_request(e, t, r, r->computed + chunk);
		if (rc == ALLOC_WAIT) {
			*wait = true;
			req_free_pages(e, t, r);
			break;
		}
		if (rc != ALLOC_OK) {
			req_free_pages(e, t, r);
			break;
		}
		waiting_pop_front(t);
		r->state = EMA_REQ_RUNNING;
		r->admit_seq = e->admit_counter++;
		if (!e->oversize_started && e->cfg->serving.oversize == EMA_OVERSIZE_YIELD &&
		    own_never_fits(e, r))
			e->oversize_started = true;
		t->running[t->running_n++] = r->id;
		batch_add(e, t, r->id, (int32_t)chunk);
		used += chunk;
	}
	return used;
}

/* The pages the next request of t to start asks its GPU for
 * (ema_policy_queue_need, which says how), or 0. */
static inline int32_t queue_need(const struct ema_engine *e, const struct ema_tenant *t)
{
	const struct ema_request *r;
	int64_t need;

	if (t->swapped_n > 0) {
		r = &t->reqs[t->swapped[0]];
		need = ema_engine_pages_for_tokens(e, seq_len(r));
		if (need < r->n_pages)
			need = r->n_pages;
	} else if (t->waiting_n > 0) {
		need = ema_engine_pages_for_tokens(e, seq_len(&t->reqs[waiting_front(t)]));
	} else {
		return 0;
	}
	if (tenant_idle(t)) {
		/* its queue waits for pages only others can free: a
		 * reclaim it waits for, or none */
		if (t->reclaim_wait_since < 0)
			return 0;
	} else {
		need += (int32_t)ceil(e->cfg->serving.watermark * t->kv_capacity_pages);
	}
	return need < INT32_MAX ? (int32_t)need : INT32_MAX;
}

/* After a try to start (a step's end, mostly): whether it left a request
 * queued that t's GPU could hold, noted at `now` for
 * ema_policy_queue_waited_ns (ema's queue guard read it before the
 * planner; no shipped policy does now).
 * (A request that arrived during a step is admitted at its end, so only
 * a queue that waits past a try is noted; a leap that waits notes each
 * step's end as it plays them back, leap_play.) */
static inline void note_queue_left(struct ema_engine *e, struct ema_tenant *t, int64_t now)
{
	if (t->waiting_n > 0 || t->swapped_n > 0) {
		int32_t need = queue_need(e, t);

		if (need > 0 && need <= t->kv_capacity_pages)
			t->queue_left_ns = now;
	}
}

static void tenant_try_start(struct ema_engine *e, struct ema_tenant *t)
{
	const struct ema_serving_cfg *s = &e->cfg->serving;
	int64_t budget = s->max_batch_tokens;
	bool wait = false, preempted = false;

	if (t->busy || e->error)
		return;
	batch_clear(t);
	oversize_make_way(e, t);
	if (!s->chunked_prefill && t->swapped_n == 0) {
		/* vLLM without chunked prefill: a prefill-only iteration whenever
		 * a waiting request can be admitted. */
		admit(e, t, budget, &wait);
		if (t->iter_n > 0) {
			note_queue_left(e, t, ema_engine_now(e));
			launch(e, t);
			return;
		}
	}
	/* Decode (and, with chunked prefill, continuing prefills) of the
	 * running requests, oldest first; out of memory preempts the newest. */
	for (int32_t i = 0; i < t->running_n && budget > 0 && !wait; i++) {
		int32_t id = t->running[i];
		struct ema_request *r = &t->reqs[id];
		int64_t remaining, chunk;
		int rc;

		if (r->pinned || in_batch(t, id))
			continue;
		remaining = seq_len(r) - r->computed;
		chunk = remaining;
		if (chunk > budget)
			chunk = budget;
		bool async = false;

		for (;;) {
			rc = grow_request(e, t, r, r->computed + chunk);
			if (rc != ALLOC_NOSPACE)
				break;
			int32_t victim = preempt_newest(e, t, &async);

			preempted = preempted || victim >= 0;
			/* A swap frees its pages only when it completes: wait for
			 * it rather than preempting everyone. */
			if (victim < 0 || victim == id || async)
				break;
		}
		if (async && r->state == EMA_REQ_RUNNING)
			break;
		if (rc == ALLOC_WAIT) {
			wait = true;
			break;
		}
		if (rc != ALLOC_OK || r->state != EMA_REQ_RUNNING)
			break; /* r itself was preempted: the rest are newer */
		/* A decode step computes one token; report it as chunk 0. */
		batch_add(e, t, id, remaining == 1 ? 0 : (int32_t)chunk);
		budget -= chunk;
	}
	/* As vLLM: swapped requests come back (before new admissions) only
	 * in a step that preempted nothing, and only above the watermark,
	 * so that a request swapped out is not swapped straight back in.
	 * And, as vLLM assumes every sequence takes a block right after its
	 * swap-in, with room for its next step: the pages of its whole
	 * sequence, as admission asks (a request that came back to exactly
	 * its own pages could not grow by a token, went straight out again,
	 * and so on for ever with nothing computed). */
	if (!preempted && !wait) {
		int32_t watermark = (int32_t)ceil(s->watermark * t->kv_capacity_pages);

		while (t->swapped_n > 0) {
			struct ema_request *r = &t->reqs[t->swapped[0]];
			int64_t need = ema_engine_pages_for_tokens(e, seq_len(r));

			if (need < r->n_pages)
				need = r->n_pages;
			if (!can_obtain(e, t, need + (tenant_idle(t) ? 0 : watermark), !r->own_only))
				break;
			if (swap_in(e, t, r) != ALLOC_OK)
				break;
		}
	}
	if (s->chunked_prefill && !wait && t->swapped_n == 0)
		admit(e, t, budget, &wait);
	if (wait && t->reclaim_wait_since < 0)
		t->reclaim_wait_since = ema_engine_now(e);
	note_queue_left(e, t, ema_engine_now(e));
	if (t->iter_n > 0)
		launch(e, t);
}

static void progress(struct ema_engine *e)
{
	struct ema_progress p;

	if (e->progress_fn == NULL)
		return;
	p.done_requests = e->done_requests;
	p.total_requests = e->total_requests;
	p.now_ns = ema_engine_now(e);
	e->progress_fn(e->progress_arg, &p);
}

/* A run that makes no token for this long while its requests keep being
 * preempted is a livelock (iteration_end): no served workload goes ten
 * minutes of run time without a token, and a long prefill preempts no one. */
#define LIVELOCK_NS ((int64_t)600e9)
#define LIVELOCK_PREEMPTS 100

static void livelock_fail(struct ema_engine *e, int64_t now)
{
	const struct ema_request *r = e->last_preempted;
	char what[EMA_ERROR_MSG_MAX];

	snprintf(what, sizeof what,
		 "engine: livelock at t = %.3f s: no token for %.0f s of run time while requests "
		 "were preempted %lld times; the last, tenant %s's request %d (%d prompt + %d output "
		 "tokens), %d times (the policy takes pages back from what it admitted before a step "
		 "of it completes: its reclaims, or a tenant's own growth)",
		 (double)now * 1e-9, (double)(now - e->last_token_ns) * 1e-9,
		 (long long)e->preempts_since_token, r ? e->tenants[r->view.tenant].cfg->name : "?",
		 r ? r->id : -1, r ? r->prompt_tokens : 0, r ? r->output_tokens : 0,
		 r ? r->preemptions : 0);
	engine_fail(e, EMA_ERR_INTERNAL, what);
}

/* Whether the run is livelocked at `now` (then failed): checked at every
 * iteration's end and transfer's. */
static bool livelocked(struct ema_engine *e, int64_t now)
{
	if (e->preempts_since_token < LIVELOCK_PREEMPTS || now - e->last_token_ns < LIVELOCK_NS)
		return false;
	livelock_fail(e, now);
	return true;
}

/* The end of an iteration of tenant t at `end`. A leap's iterations are
 * played back with real = false: what stepping did at their ends, where
 * kicking the other tenants did nothing (check_leaps saw to it). */
static void iteration_end(struct ema_engine *e, struct ema_tenant *t, int64_t start, int64_t end,
			  int64_t stall, bool real)
{
	timeline_advance(e, end);
	account(e, t, end);
	t->busy = false;
	t->stats.stall_ns += stall;
	t->stats.busy_ns += end - start;
	for (int32_t i = 0; i < t->iter_n; i++) {
		struct ema_request *r = &t->reqs[t->iter_batch[i]];
		int32_t chunk = t->iter_chunk[i] > 0 ? t->iter_chunk[i] : 1;

		r->in_iter = 0; /* batch_clear's, in this walk */
		if (r->state != EMA_REQ_RUNNING)
			continue;
		r->computed += chunk;
		if (r->computed < seq_len(r))
			continue;
		r->generated++;
		t->stats.generated_tokens++;
		if (r->first_token_ns < 0)
			r->first_token_ns = end;
		if (r->generated >= r->output_tokens) {
			r->finish_ns = end;
			r->state = EMA_REQ_DONE;
			if (r->pending_xfers > 0)
				r->free_on_unpin = 1;
			else
				req_done_pages(e, t, r);
			running_remove(t, r->id);
			t->n_done++;
			e->done_requests++;
		}
	}
	note_final(e, t);
	t->iter_n = 0;
	batch_clear(t);
	if (!real) {
		tenant_kick(e, t);
		return;
	}
	if (t->stats.generated_tokens != t->tokens_seen) {
		t->tokens_seen = t->stats.generated_tokens;
		e->last_token_ns = end;
		e->preempts_since_token = 0;
	} else if (livelocked(e, end)) {
		return;
	}
	if (e->policy->after_iteration != NULL)
		e->policy->after_iteration(&e->ctx, e->policy_state, t->index);
	progress(e);
	kick_all(e);
}

static void leap_replay(struct ema_engine *e, struct ema_tenant *t, int64_t end);

static void iteration_done(void *arg, const struct ema_iteration_result *res)
{
	struct ema_tenant *t = arg;
	struct ema_engine *e = NULL;

	/* the tenant array lives inside the engine */
	e = (struct ema_engine *)((char *)(t - t->index) - offsetof(struct ema_engine, tenants));
	leap_settle(e);
	if (t->leaping)
		leap_replay(e, t, res->end_ns);
	iteration_end(e, t, res->start_ns, res->end_ns, res->stall_ns, true);
	check_leaps(e);
}

static void tenant_kick(struct ema_engine *e, struct ema_tenant *t)
{
	if (t->busy)
		return;
	if (t->reclaim_wait_since >= 0) {
		int64_t now = ema_engine_now(e);

		t->stats.reclaim_wait_ns += now - t->reclaim_wait_since;
		t->reclaim_wait_since = -1;
	}
	if (t->waiting_n == 0 && t->running_n == 0 && t->swapped_n == 0)
		return;
	tenant_try_start(e, t);
}

/* Lenders waiting for their pages first: a borrower's step that ends
 * gives back the pages it read (borrowers_on lists them again), and a
 * borrower kicked first would start its next step on them before the
 * lender could take them, and so on for as long as it runs. */
static void kick_all(struct ema_engine *e)
{
	for (int i = 0; i < e->n_tenants; i++)
		if (e->tenants[i].reclaim_wait_since >= 0)
			tenant_kick(e, &e->tenants[i]);
	for (int i = 0; i < e->n_tenants; i++)
		tenant_kick(e, &e->tenants[i]);
}

/* ---- arrivals and the timeline ------------------------------------------ */

static void arrival(void *arg, int64_t now)
{
	struct ema_tenant *t = arg;
	struct ema_engine *e =
		(struct ema_engine *)((char *)(t - t->index) - offsetof(struct ema_engine, tenants));

	leap_settle(e);
	timeline_advance(e, now);
	while (t->next_arrival < t->n_reqs && t->spec[t->next_arrival].arrival_ns <= now) {
		struct ema_request *r = req_arrive(e, t, t->next_arrival++);
		/* its KV at its last decode step: prompt + output - 1 tokens */
		int32_t need = ema_engine_pages_for_tokens(e, (int64_t)r->prompt_tokens +
							       r->output_tokens - 1);

		if (need > t->max_request_pages ||
		    ema_engine_pages_for_tokens(e, r->prompt_tokens) > t->max_admit_pages) {
			/* It could never run, or never be admitted: waiting
			 * would stall the queue behind it for ever. Dropped,
			 * and counted. */
			r->state = EMA_REQ_DROPPED;
			t->stats.dropped++;
			if (need > t->stats.dropped_max_pages)
				t->stats.dropped_max_pages = need;
			t->n_done++;
			e->done_requests++;
			note_final(e, t);
			continue;
		}
		r->state = EMA_REQ_WAITING;
		if (waiting_push_back(t, r->id) != EMA_OK) {
			engine_fail(e, EMA_ERR_NOMEM, "engine: out of memory");
			return;
		}
	}
	if (!e->error && queue_room(t) != EMA_OK) {
		engine_fail(e, EMA_ERR_NOMEM, "engine: out of memory");
		return;
	}
	if (t->next_arrival < t->n_reqs &&
	    e->platform->ops->timer(e->platform, t->spec[t->next_arrival].arrival_ns, arrival, t,
				    &e->op_err) != EMA_OK)
		engine_fail_op(e, EMA_ERR_NOMEM, "engine: timer failed");
	tenant_kick(e, t);
	check_leaps(e);
}

static void timeline_take(const struct ema_engine *e, int g, struct ema_timeline_sample *s)
{
	const struct ema_ledger_gpu *gp = &e->ledger.gpu[g];
	int tenant = gp->home_tenant;

	s->gpu = g;
	s->weights = gp->count[EMA_PAGE_WEIGHTS];
	s->staging = tenant >= 0 ? e->tenants[tenant].staging_pages : 0;
	s->kv_used = ema_ledger_used_pages(&e->ledger, g) - s->staging;
	s->free_pages = gp->n_free;
	s->lent = gp->lent;
	s->borrowed = tenant >= 0 ? ema_ledger_borrowed_pages(&e->ledger, tenant) : 0;
}

static bool timeline_same(const struct ema_timeline_sample *a, const struct ema_timeline_sample *b)
{
	return a->weights == b->weights && a->staging == b->staging && a->kv_used == b->kv_used &&
	       a->free_pages == b->free_pages && a->lent == b->lent && a->borrowed == b->borrowed;
}

/* The samples recorded so far to the timeline's sink, if it has one. */
#define TIMELINE_FLUSH 4096
static int timeline_flush(struct ema_engine *e)
{
	struct ema_error rerr = {0};
	int rc;

	if (e->timeline_fn == NULL || e->n_timeline == 0 || e->error)
		return e->error;
	rc = e->timeline_fn(e->timeline_arg, e->timeline, e->n_timeline, &rerr);
	if (rc != EMA_OK) {
		engine_fail(e, rc, rerr.msg);
		return rc;
	}
	e->n_timeline = 0;
	return EMA_OK;
}

static int timeline_push(struct ema_engine *e, const struct ema_timeline_sample *s, int64_t k)
{
	if (e->timeline_fn != NULL && e->n_timeline >= TIMELINE_FLUSH &&
	    timeline_flush(e) != EMA_OK)
		return EMA_OK; /* (the run has failed with the sink's error) */
	if (e->n_timeline == e->cap_timeline) {
		int32_t ncap = e->cap_timeline ? e->cap_timeline * 2 : 1024;
		struct ema_timeline_sample *n;

		if (e->cap_timeline > INT32_MAX / 2)
			return EMA_ERR_NOMEM;
		n = realloc(e->timeline, (size_t)ncap * sizeof *n);
		if (n == NULL)
			return EMA_ERR_NOMEM;
		e->timeline = n;
		e->cap_timeline = ncap;
	}
	e->timeline[e->n_timeline] = *s;
	e->timeline[e->n_timeline].time_s = (double)k * e->timeline_period_s;
	e->n_timeline++;
	return EMA_OK;
}

static int64_t timeline_grid_ns(const struct ema_engine *e, int64_t k)
{
	return (int64_t)((double)k * e->timeline_period_s * 1e9);
}

/* Called before anything changes at time `now`: the memory figures of
 * every grid point in [next grid point, now) are the current ones. Only
 * the first of those points can differ from what was recorded; a GPU
 * whose figures changed gets a row there, preceded by a row with its old
 * figures at the point before (when that one was skipped as unchanged). */
static void timeline_advance(struct ema_engine *e, int64_t now)
{
	int64_t k0 = e->timeline_next_k, k_end;
	int64_t horizon = e->cfg->horizon_s > 0 ? (int64_t)(e->cfg->horizon_s * 1e9) : INT64_MAX;
	struct ema_timeline_sample cur[EMA_MAX_GPUS];
	bool changed[EMA_MAX_GPUS];

	if (timeline_grid_ns(e, k0) >= now || timeline_grid_ns(e, k0) > horizon)
		return;
	/* the last grid point before now (the period divides no int64 exactly) */
	k_end = (int64_t)((double)(now - 1) / (e->timeline_period_s * 1e9));
	while (k_end > k0 && timeline_grid_ns(e, k_end) >= now)
		k_end--;
	while (timeline_grid_ns(e, k_end + 1) < now)
		k_end++;
	for (int g = 0; g < e->ledger.n_gpus; g++) {
		timeline_take(e, g, &cur[g]);
		changed[g] = e->timeline_last_k[g] < 0 || !timeline_same(&cur[g], &e->timeline_last[g]);
	}
	for (int g = 0; g < e->ledger.n_gpus; g++)
		if (changed[g] && e->timeline_last_k[g] >= 0 && e->timeline_last_k[g] < k0 - 1 &&
		    timeline_push(e, &e->timeline_last[g], k0 - 1) != EMA_OK)
			goto nomem;
	for (int g = 0; g < e->ledger.n_gpus; g++) {
		if (!changed[g])
			continue;
		if (timeline_push(e, &cur[g], k0) != EMA_OK)
			goto nomem;
		e->timeline_last[g] = cur[g];
		e->timeline_last_k[g] = k0;
	}
	e->timeline_next_k = k_end + 1;
	return;
nomem:
	engine_fail(e, EMA_ERR_NOMEM, "engine: out of memory");
}

/* The end of the run: the grid point at or after the last event (within
 * the horizon) closes every GPU's line. */
static void timeline_finish(struct ema_engine *e, int64_t end_ns)
{
	double period_ns = e->timeline_period_s * 1e9;
	int64_t k = (int64_t)ceil((double)end_ns / period_ns);

	if (e->cfg->horizon_s > 0)
		while (k > 0 && timeline_grid_ns(e, k) > (int64_t)(e->cfg->horizon_s * 1e9))
			k--;
	if (k < e->timeline_next_k)
		k = e->timeline_next_k;
	timeline_advance(e, timeline_grid_ns(e, k) + 1);
	for (int g = 0; g < e->ledger.n_gpus; g++)
		if (e->timeline_last_k[g] >= 0 && e->timeline_last_k[g] < k &&
		    timeline_push(e, &e->timeline_last[g], k) != EMA_OK) {
			engine_fail(e, EMA_ERR_NOMEM, "engine: out of memory");
			return;
		}
}

/* ---- reclaim records --------------------------------------------------- */

void ema_engine_record_reclaim(struct ema_engine *e, int gpu, int32_t pages,
			       int64_t start_ns, int64_t latency_ns)
{
	if (e->n_reclaims == e->cap_reclaims) {
		int32_t ncap = e->cap_reclaims ? e->cap_reclaims * 2 : 256;
		struct ema_reclaim_record *n = realloc(e->reclaims, (size_t)ncap * sizeof *n);

		if (n == NULL) {
			engine_fail(e, EMA_ERR_NOMEM, "engine: out of memory");
			return;
		}
		e->reclaims = n;
		e->cap_reclaims = ncap;
	}
	e->reclaims[e->n_reclaims].lender_gpu = gpu;
	e->reclaims[e->n_reclaims].pages = pages;
	e->reclaims[e->n_reclaims].start_ns = start_ns;
	e->reclaims[e->n_reclaims].latency_ns = latency_ns;
	e->n_reclaims++;
}

/* Requests of other tenants holding pages on `gpu`, newest admission
 * first (they have the least work to lose), into the engine's own array,
 * grown as needed so that no victim is ever left out. */
/* Whether a step in flight reads r's pages: its tenant's iteration runs
 * with r in the batch. Its pages cannot be taken before that step ends
 * (a lender waits for it: until 2026-12-04 reclaims took them at once,
 * latency 0, while the borrower's step was still reading them). */
static inline bool in_step(const struct ema_engine *e, const struct ema_request *r)
{
	return r->in_iter && e->tenants[r->view.tenant].busy;
}

/* Requests of other tenants holding pages on `gpu`, newest admission
 * first, into e->victims: those whose pages can be taken now (none
 * moving, none read by a step in flight), or with steps = true also
 * those a step reads (the pooled bound's relocation, which moves no
 * data). */
static int borrowers_on(struct ema_engine *e, int gpu, bool steps)
{
	int n = 0;

	for (int ti = 0; ti < e->n_tenants; ti++) {
		struct ema_tenant *t = &e->tenants[ti];

		if (t->gpu == gpu)
			continue;
		for (int32_t i = 0; i < t->running_n; i++) {
			struct ema_request *r = &t->reqs[t->running[i]];

			if (r->pinned || r->n_remote == 0 || req_pages_on(r, gpu) == 0 ||
			    (!steps && in_step(e, r)))
				continue;
			if (n == e->cap_victims) {
				int ncap = e->cap_victims ? 2 * e->cap_victims : 512;
				struct ema_request **nv = realloc(e->victims, (size_t)ncap * sizeof *nv);

				if (nv == NULL) {
					engine_fail(e, EMA_ERR_NOMEM, "engine: out of memory");
					return n;
				}
				e->victims = nv;
				e->cap_victims = ncap;
			}
			e->victims[n++] = r;
		}
	}
	/* insertion sort by admit_seq descending, ties by tenant */
	for (int i = 1; i < n; i++) {
		struct ema_request *x = e->victims[i];
		int j = i - 1;

		while (j >= 0 && e->victims[j]->admit_seq < x->admit_seq) {
			e->victims[j + 1] = e->victims[j];
			j--;
		}
		e->victims[j + 1] = x;
	}
	return n;
}

/* ---- leaps -------------------------------------------------------------- *
 *
 * A decode batch whose requests only grow by a token per step changes
 * nothing anyone else sees while (a) the policy says that none of its
 * decisions could change meanwhile (its leap_ok hook, policy.h: while
 * the tenant's GPU's free pages stay in the range it gives, and neither
 * plan_iteration nor after_iteration of the tenant's steps after the
 * first matter), (b) its pages come from its
 * own free pages, (c) no request of it moves and none waits, or those
 * that wait cannot be admitted at any of its steps' ends (where admission
 * asks only the tenant's own pages: a policy without borrowable, or one
 * that promises it stays 0, ema_leap_range.waiting_ok), (d) no
 * other tenant would do anything when kicked at the end of one of its
 * steps, (e) no grid point of the timeline and no horizon falls within,
 * and (f) no request of its own arrives that could be admitted (with
 * requests waiting, an arrival joins the queue behind them and changes
 * nothing). Its steps' times then follow from the
 * cost model alone (the platform's iteration_time), so the platform can
 * run them as one event (leap). At the end, the steps in between are
 * played back with the same code stepping runs, at their own times
 * (leap_replay, with plan_iteration for each step after the first where
 * leap_ok asked for it), and the last one ends as a real iteration. A leap ends
 * early where (d) stops holding (check_leaps, after every callback),
 * where another event falls on one of its steps' ends (the platform),
 * before a step whose pages would leave (a)'s range, and at the step whose
 * end frees the pages that admit the front of the queue. */

#define LEAP_MAX 1024

/* What tenant_kick would act on. */
static bool kick_sensitive(const struct ema_tenant *u)
{
	return !u->busy && (u->reclaim_wait_since >= 0 || u->waiting_n > 0 || u->running_n > 0 ||
			    u->swapped_n > 0);
}

/* The platform can leap and the policy may let it (its leap_ok). */
static bool leap_possible(const struct ema_engine *e)
{
	const struct ema_platform_ops *ops = e->platform->ops;

	return ops->iteration_time != NULL && ops->leap_times != NULL && ops->leap != NULL &&
	       ops->leap_cut != NULL &&
	       e->policy->leap_ok != NULL;
}

/* A request of a planned leap. */
struct leap_req {
	int32_t id;
	int32_t computed;  /* before the leap's first step */
	int32_t steps;     /* its last step (it finishes at its end) */
	int32_t pages;
	int32_t grow_at;   /* the next step that needs a page more */
	int32_t next;      /* the next request of its bucket (batch order), or -1 */
};

/* The first step j of a leap with computed + j > held: the step that
 * needs a page more (beyond every leap when never). */
static int32_t leap_grow_at(int64_t held, int32_t computed)
{
	int64_t j = held - computed + 1;

	return j > LEAP_MAX + 1 ? LEAP_MAX + 1 : (int32_t)j;
}

/* What a leap's steps do to the ledger, each list in stepping's order:
 * at the end of step `step`, request `id` finishes (log 0), or grows for
 * the next step to `pages` pages (log 1). */
struct leap_event {
	int32_t step;
	int32_t id;
	int32_t pages;
};

static int leap_log_grow(struct ema_tenant *t, int which)
{
	int32_t n = t->leap_n_ev[which];
	int32_t cap = n ? 2 * n : 256;
	struct leap_event *ne = realloc(t->leap_ev[which], (size_t)cap * sizeof *ne);

	if (ne == NULL)
		return EMA_ERR_NOMEM;
	t->leap_ev[which] = ne;
	t->cap_leap_ev[which] = cap;
	return EMA_OK;
}

static inline int leap_log(struct ema_tenant *t, int which, int32_t step, int32_t id,
			   int32_t pages)
{
	struct leap_event *ev;
	int32_t n = t->leap_n_ev[which];

	if (n == t->cap_leap_ev[which] && leap_log_grow(t, which) != EMA_OK)
		return EMA_ERR_NOMEM;
	ev = &((struct leap_event *)t->leap_ev[which])[n];
	ev->step = step;
	ev->id = id;
	ev->pages = pages;
	t->leap_n_ev[which] = n + 1;
	return EMA_OK;
}

/* The steps of a leap being planned at which something happens to a
 * request (it grows or finishes), so that a step costs the requests it
 * touches, not the whole batch: bucket b lists the requests (indices into
 * the plan's array, ascending, which is batch order) whose next event is
 * at step b. A bucket is empty unless its stamp is the plan's, so that
 * no plan clears them all. */
struct leap_buckets {
	uint32_t plan;                   /* this plan's stamp */
	struct {
		uint32_t stamp;
		int32_t head, tail;  /* (one bucket's fields side by side: one line) */
	} b[LEAP_MAX + 1];
};

/* behind a request of a later batch position (rare): in order */
static void bucket_insert(struct leap_buckets *bk, struct leap_req *q, int32_t b, int32_t i)
{
	int32_t *p;

	for (p = &bk->b[b].head; *p >= 0 && *p < i; p = &q[*p].next)
		;
	q[i].next = *p;
	*p = i;
}

static inline void bucket_put(struct leap_buckets *bk, struct leap_req *q, int32_t b, int32_t i)
{
	if (b > LEAP_MAX)
		return;  /* after any leap's end */
	q[i].next = -1;
	if (bk->b[b].stamp != bk->plan) {
		bk->b[b].stamp = bk->plan;
		bk->b[b].head = bk->b[b].tail = i;
		return;
	}
	if (i > bk->b[b].tail) {
		q[bk->b[b].tail].next = i;
		bk->b[b].tail = i;
		return;
	}
	bucket_insert(bk, q, b, i);
}

static int32_t bucket_take(struct leap_buckets *bk, int32_t b)
{
	return bk->b[b].stamp == bk->plan ? bk->b[b].head : -1;
}

/* The suffix extremes of a planned leap's free pages that check_leaps
 * reads (leap_pages_hold), over steps j .. k - 1 for each j >= 1. */
static void leap_pf_suffixes(struct ema_tenant *t, int32_t k)
{
	const int32_t *pf = t->leap_pf;
	int32_t lo = INT32_MAX, hi = INT32_MIN, res = INT32_MAX;

	t->leap_reserve = t->local_reserve;
	for (int32_t j = k - 1; j >= 1; j--) {
		if (pf[j] < lo)
			lo = pf[j];
		if (pf[j] > hi)
			hi = pf[j];
		if (pf[j] >= t->leap_reserve && pf[j] < res)
			res = pf[j];
		t->leap_pf_min[j] = lo;
		t->leap_pf_max[j] = hi;
		t->leap_pf_res[j] = res;
	}
}

/* Called by launch with the first step's iteration, which the tenant's
 * batch holds: plans as many steps as the conditions above allow and
 * starts them as a leap; false when fewer than two (launch then starts
 * the iteration as usual). Each step: the pages of those the previous
 * one finished come back, each request grows by a token in batch order
 * from its own GPU's free pages beyond the staging reserve, and its work
 * is what batch_add would sum. A step's time needs the FLOPs only when
 * they, not memory, bound it: the platform is first given an upper
 * bound of their sum (O(1)), and the sum itself, request by request in
 * batch order, only where the bound is not enough. */
static bool try_leap(struct ema_engine *e, struct ema_tenant *t, struct ema_iteration *it1)
{
	const struct ema_platform_ops *ops = e->platform->ops;
	int32_t n = t->iter_n, live, k = 1, fin = -1, ja = 1;
	int32_t free_pages;
	int64_t now, limit, next_arrival, stop, d;
	int64_t admit_at = INT64_MAX;  /* free pages that would admit the queue's front */
	const bool chunked = e->cfg->serving.chunked_prefill;
	int64_t *end;
	int64_t dd[LEAP_MAX + 1];
	struct ema_leap_step *w;
	bool halt = false, done = false;
	struct leap_req *q;
	struct leap_buckets *bk;
	struct ema_leap_range range = { .free_min = 0, .free_max = INT32_MAX };
	/* its queue waits on the policy's promise that borrowable stays 0 */
	const bool promised = t->waiting_n > 0 && e->policy->borrowable != NULL;
	struct ema_iteration *it = it1;
	int32_t *pf;
	/* the first step's figures, which launch needs back unless it leaps */
	const struct {
		int n_seqs;
		int64_t prefill_tokens, decode_tokens;
		double flops, attention_flops;
		uint64_t act_bytes, kv_local_bytes;
	} first = {
		it1->n_seqs, it1->prefill_tokens, it1->decode_tokens, it1->flops,
		it1->attention_flops, it1->act_bytes, it1->kv_local_bytes,
	};
	const double lin = e->work.linear_per_token, app = e->work.attention_per_pos;
	const uint64_t act1 = e->work.act_one;
	uint64_t ctx_sum = 0;   /* of the live requests, before the leap */

	if (e->page_lists || e->error || n == 0 || n != t->running_n ||
	    t->swapped_n > 0 || t->xfers_in_flight > 0 || t->reclaim_wait_since >= 0 ||
	    !ema_gpuset_empty(&t->iter_rem_mask) || ema_ledger_borrowed_pages(&e->ledger, t->index) != 0)
		return false;
	/* the policy's word for this leap, and the free pages it allows
	 * (O(1) where the batch and the other tenants cost O(n): asked first,
	 * for a policy that refuses most steps, such as ema on roomy GPUs) */
	free_pages = ema_ledger_free_pages(&e->ledger, t->gpu);
	range.waiting = t->waiting_n > 0;
	range.others_wait = e->n_leap_waiting > 0;
	if (!e->policy->leap_ok(&e->ctx, e->policy_state, t->index, &range) ||
	    free_pages < range.free_min || free_pages > range.free_max ||
	    (promised && !range.waiting_ok))
		return false;
	if (t->leap_work == NULL) {
		t->leap_work = malloc((LEAP_MAX + 1) * sizeof(struct ema_leap_step));
		if (t->leap_work == NULL)
			return false;
	}
	for (int32_t i = 0; i < n; i++)
		if (t->iter_batch[i] != t->running[i] || t->iter_chunk[i] != 0)
			return false;
	for (int i = 0; i < e->n_tenants; i++)
		if (i != t->index && kick_sensitive(&e->tenants[i]))
			return false;
	now = ema_engine_now(e);
	limit = timeline_grid_ns(e, e->timeline_next_k);
	if (e->cfg->horizon_s > 0 && (int64_t)(e->cfg->horizon_s * 1e9) < limit)
		limit = (int64_t)(e->cfg->horizon_s * 1e9);
	next_arrival = t->next_arrival < t->n_reqs ? t->spec[t->next_arrival].arrival_ns : INT64_MAX;
	if (t->waiting_n > 0) {
		/* The queue waits. Its front, tried at every step's end (first,
		 * or with chunked prefills after the running requests grew), and
		 * only it, is admitted once the tenant's free pages (with its lent
		 * ones where the policy reclaims: others' borrowing and giving
		 * back leave the sum as it is) reach its pages and the watermark:
		 * admission asks nothing else where the policy has no borrowable
		 * or promises it stays 0 (range.waiting_ok, below). So the leap
		 * ends at the step whose end leaves that many free. Arrivals join
		 * the queue behind the front and change nothing. */
		const struct ema_request *fr = &t->reqs[waiting_front(t)];
		int64_t wm = (int64_t)ceil(e->cfg->serving.watermark * t->kv_capacity_pages);

		admit_at = (int64_t)ema_engine_pages_for_tokens(e, seq_len(fr)) + wm;
		if (e->oversize_started)
			for (int32_t i = 0; i < t->running_n; i++)
				if (own_never_fits(e, &t->reqs[t->running[i]]))
					return false; /* (it may give way: oversize_make_way) */
		if (e->cfg->serving.oversize == EMA_OVERSIZE_YIELD && own_never_fits(e, fr)) {
			/* an oversize front is dropped at the first try that
			 * cannot start it with a request behind it
			 * (oversize_yields): none leaps with one behind, nor
			 * past the next arrival */
			if (t->waiting_n >= 2)
				return false;
		} else {
			next_arrival = INT64_MAX;
		}
		if (e->policy->reclaim != NULL)
			admit_at -= ema_ledger_lent_pages(&e->ledger, t->gpu);
	}
	if (ops->iteration_time(e->platform, it1, &d, NULL) != EMA_OK || d <= 0 ||
	    now + d > limit || now + d >= next_arrival)
		return false;
	if (t->cap_leap < LEAP_MAX + 2) {
		/* (end[k + 1] is the platform's, ema_platform_ops.leap) */
		int64_t *ne = realloc(t->leap_end, (LEAP_MAX + 2) * sizeof *ne);

		if (ne == NULL)
			return false;
		t->leap_end = ne;
		t->cap_leap = LEAP_MAX + 2;
	}
	if (t->leap_pf == NULL) {
		t->leap_pf = malloc(4 * (LEAP_MAX + 1) * sizeof *t->leap_pf);
		if (t->leap_pf == NULL)
			return false;
		t->leap_pf_min = t->leap_pf + (LEAP_MAX + 1);
		t->leap_pf_max = t->leap_pf_min + (LEAP_MAX + 1);
		t->leap_pf_res = t->leap_pf_max + (LEAP_MAX + 1);
	}
	if (t->leap_buckets == NULL) {
		t->leap_buckets = calloc(1, sizeof(struct leap_buckets));
		if (t->leap_buckets == NULL)
			return false;
	}
	if (t->cap_scratch < n) {
		int32_t cap = n * 2;
		void *ns = realloc(t->leap_scratch, (size_t)cap * sizeof(struct leap_req));

		if (ns == NULL)
			return false;
		t->leap_scratch = ns;
		t->cap_scratch = cap;
	}
	end = t->leap_end;
	q = t->leap_scratch;
	bk = t->leap_buckets;
	if (++bk->plan == 0) {
		/* the stamps wrapped: every bucket empty again */
		for (int32_t b = 0; b <= LEAP_MAX; b++)
			bk->b[b].stamp = 0;
		bk->plan = 1;
	}
	t->leap_n_ev[0] = t->leap_n_ev[1] = 0;
	end[0] = now;
	end[1] = now + d;
	pf = t->leap_pf;
	pf[0] = free_pages;
	stop = limit < next_arrival ? limit : next_arrival;
	for (int32_t i = 0; i < n; i++) {
		struct ema_request *r = &t->reqs[t->iter_batch[i]];

		q[i].id = r->id;
		q[i].computed = r->computed;
		q[i].steps = r->output_tokens - r->generated;
		q[i].pages = r->n_pages;
		/* the first step j with computed + j > tokens held */
		q[i].grow_at = leap_grow_at(tokens_held(e, r), r->computed);
		ctx_sum += (uint64_t)r->computed;
		if (q[i].steps == 1) {
			if (leap_log(t, 0, 1, r->id, 0) != EMA_OK)
				return false;
			q[i].next = fin;
			fin = i;
		} else {
			bucket_put(bk, q, q[i].grow_at < q[i].steps ? q[i].grow_at : q[i].steps, i);
		}
	}
	live = n;
	w = t->leap_work;
	/* Planned in rounds: the requests' events and each step's work up to
	 * as many steps as the last step's time says can end before the leap
	 * must stop (stop), then those steps' times in one call; a round
	 * that falls short (steps got faster as requests finished) plans
	 * another. Events planned beyond the leap's end are never played
	 * back (see below). */
	while (!done && !halt && ja < LEAP_MAX) {
		int64_t reach = (stop - end[k]) / (end[k] - end[k - 1]);
		int32_t cap = reach >= LEAP_MAX - k - 2 ? LEAP_MAX : k + (int32_t)reach + 2;
		/* An upper bound of every step's FLOPs this round: those summed
		 * exactly are lin + app x (computed + j) per live request, at
		 * most those of the round's first live requests at its last
		 * step (requests only leave); their sum in exact arithmetic,
		 * enlarged by far more than the roundings of adding live terms
		 * (each under 2^-53) can add, bounds each double sum from above. */
		const double flops_bound = ((double)live * lin +
					    app * (double)(ctx_sum + (uint64_t)live * (uint64_t)cap)) *
					   (1.0 + ((double)live + 16.0) * 0x1p-50);

		for (int32_t j = ja + 1; j <= cap; j++) {
			bool room = true;

			/* step j - 1 ended: the pages of those it finished come back */
			for (int32_t i = fin; i >= 0; i = q[i].next) {
				free_pages += q[i].pages;
				ctx_sum -= (uint64_t)q[i].computed;
				live--;
			}
			fin = -1;
			if (live == 0 || (!chunked && live < e->cfg->serving.max_batch &&
					  free_pages >= admit_at)) {
				halt = true;
				break;
			}
			/* growths and ends of step j, in batch order */
			for (int32_t i = bucket_take(bk, j), nx; i >= 0; i = nx) {
				nx = q[i].next;
				if (q[i].grow_at == j) {
					int64_t tokens = (int64_t)q[i].computed + j;
					int32_t need = pages_to_hold(e, q[i].pages, tokens);

					if (free_pages - (need - q[i].pages) < t->local_reserve ||
					    leap_log(t, 1, j - 1, q[i].id, need) != EMA_OK) {
						room = false;
						break;
					}
					free_pages -= need - q[i].pages;
					q[i].pages = need;
					q[i].grow_at = leap_grow_at(tokens_for_pages(e, need), q[i].computed);
				}
				if (q[i].steps == j) {
					if (leap_log(t, 0, j, q[i].id, 0) != EMA_OK) {
						room = false;
						break;
					}
					q[i].next = fin;
					fin = i;
				} else {
					bucket_put(bk, q, q[i].grow_at < q[i].steps ? q[i].grow_at : q[i].steps, i);
				}
			}
			/* (what it logged for step j and after is never played
			 * back: a leap of j - 1 steps plays back steps 1 .. j - 2,
			 * and step j - 1's end, where free pages would leave the
			 * policy's range, is a real one) */
			if (!room || free_pages < range.free_min || free_pages > range.free_max) {
				halt = true;
				break;
			}
			/* with chunked prefills, the queue's front is tried after the
			 * decodes took their pages and tokens */
			if (chunked && live < e->cfg->serving.max_batch &&
			    e->cfg->serving.max_batch_tokens > live && free_pages >= admit_at) {
				halt = true;
				break;
			}
			/* its work, as batch_add sums it: decodes at context
			 * computed + j - 1 (its FLOPs from above) */
			w[j].n_seqs = live;
			w[j].act_bytes = (uint64_t)live * act1;
			w[j].kv_local_bytes = (ctx_sum + (uint64_t)live * (uint64_t)j) *
					      e->work.kv_per_token;
			w[j].flops = flops_bound;
			w[j].attention_flops = 0.0;
			w[j].flops_bound = true;
			pf[j - 1] = free_pages;
			ja = j;
		}
		/* the times of steps k + 1 .. ja */
		for (int32_t j = k + 1; j <= ja && !done;) {
			int32_t m = ops->leap_times(e->platform, it, ja - j + 1, &w[j], &dd[j]);

			for (int32_t i = j; i < j + m; i++) {
				if (dd[i] <= 0 || end[i - 1] + dd[i] > limit) {
					done = true;
					break;
				}
				end[i] = end[i - 1] + dd[i];
				k = i;
				if (end[i] >= next_arrival) {
					done = true;
					break;
				}
			}
			j += m;
			if (done || j > ja)
				break;
			/* step j's FLOPs matter: summed in batch order */
			{
				double flops = 0.0, attn_sum = 0.0;
				int64_t dj;

				for (int32_t i = 0; i < n; i++) {
					double a;

					if (q[i].steps < j)
						continue; /* finished before step j */
					a = ema_work_decode_attn(&e->work, (int64_t)q[i].computed + j - 1);
					flops += lin + a;
					attn_sum += a;
				}
				w[j].flops = flops;
				w[j].attention_flops = attn_sum;
				w[j].flops_bound = false;
				it->n_seqs = w[j].n_seqs;
				it->prefill_tokens = 0;
				it->decode_tokens = w[j].n_seqs;
				it->act_bytes = w[j].act_bytes;
				it->kv_local_bytes = w[j].kv_local_bytes;
				it->flops = flops;
				it->attention_flops = attn_sum;
				if (ops->iteration_time(e->platform, it, &dj, NULL) != EMA_OK || dj <= 0 ||
				    end[j - 1] + dj > limit) {
					done = true;
					break;
				}
				end[j] = end[j - 1] + dj;
				k = j;
				if (end[j] >= next_arrival)
					done = true;
				j++;
			}
		}
		if (k < ja)
			done = true; /* a step's time stopped it */
	}
	/* launch starts the first step itself unless it leaps */
	it->n_seqs = first.n_seqs;
	it->prefill_tokens = first.prefill_tokens;
	it->decode_tokens = first.decode_tokens;
	it->flops = first.flops;
	it->attention_flops = first.attention_flops;
	it->act_bytes = first.act_bytes;
	it->kv_local_bytes = first.kv_local_bytes;
	if (k < 2)
		return false;
	t->leap_range = range;
	t->leap_sfx = false;
	{
		const struct ema_leap_retime rt = {
			.it = it, .steps = w, .stop_ns = next_arrival, .limit_ns = limit,
		};

		if (ops->leap(e->platform, t->gpu, k, end, &rt, iteration_done, t, &e->op_err) !=
		    EMA_OK) {
			engine_fail_op(e, EMA_ERR_DEVICE, "engine: leap failed to start");
			return true;
		}
	}
	t->leaping = true;
	t->leap_waiting = promised;
	e->n_leap_waiting += promised;
	t->leap_k = k;
	t->leap_played = t->leap_xf = t->leap_xg = 0;
	t->leap_plan = range.plan_each;
	e->n_leaping++;
	e->leaps++;
	return true;
}

/* The steps of t's leap before the one ending at `end`, played back:
 * what iteration_end and tenant_try_start did at each step's end for a
 * batch of decodes (try_leap's conditions), in the same order: the
 * accounting, then the requests the step finished, in batch order, then
 * the pages of the next step, in batch order; the counters of the
 * requests left, at once. */
/* plan_iteration for a leapt step, as launch calls it (leap_ok's
 * plan_each): a batch of t's decodes, nothing remote. The policy sets
 * nothing that the platform, which ran the step, would read. */
static void leap_plan_step(struct ema_engine *e, struct ema_tenant *t, struct ema_iteration *it,
			   const struct ema_leap_step *w)
{
	it->n_seqs = w->n_seqs;
	it->decode_tokens = w->n_seqs;
	it->flops = w->flops;
	it->flops_bound = w->flops_bound;
	it->attention_flops = w->attention_flops;
	it->act_bytes = w->act_bytes;
	it->kv_local_bytes = w->kv_local_bytes;
	/* what the policy may have set for the step before */
	it->layer_groups = e->cfg->serving.layer_groups;
	it->prefetch_depth = 0;
	it->method = 0;
	it->staging_pages = NULL;
	it->n_staging_pages = 0;
	it->window_depth = 0;
	e->policy->plan_iteration(&e->ctx, e->policy_state, it);
}

/* The iteration leap_plan_step hands the policy, less the step's own
 * figures: cleared once per playback rather than per step (it is large,
 * and a leap plays back up to a thousand steps). */
static void leap_plan_init(struct ema_engine *e, struct ema_tenant *t, struct ema_iteration *it)
{
	ema_iteration_clear(it);
	it->tenant = t->index;
	it->gpu = t->gpu;
	it->weight_bytes = e->weight_bytes;
	it->local_pages = t->local_buf;
}

/* A request whose last prompt token the leap's first step computed (with
 * chunked prefills, a chunk can leave one, and a step of one token counts
 * as a decode: batch_add's chunk 0) got its first token at that step's
 * end, where stepping notes it; the others have theirs. */
static inline void leap_first_token(const struct ema_tenant *t, struct ema_request *r)
{
	if (r->first_token_ns < 0)
		r->first_token_ns = t->leap_end[1];
}

/* Step j's finishes (fin from *xf on), as iteration_end leaves them. */
static inline void leap_finishes(struct ema_engine *e, struct ema_tenant *t, int32_t j,
				 int32_t *xf)
{
	const struct leap_event *fin = t->leap_ev[0];

	for (; *xf < t->leap_n_ev[0] && fin[*xf].step == j; (*xf)++) {
		struct ema_request *r = &t->reqs[fin[*xf].id];

		/* it finishes: its counters as stepping left them */
		r->in_iter = 0;
		r->computed += j;
		r->generated = r->output_tokens;
		leap_first_token(t, r);
		r->finish_ns = e->vnow;
		r->state = EMA_REQ_DONE;
		req_done_pages(e, t, r);
		running_remove(t, r->id);
		t->n_done++;
		e->done_requests++;
	}
	note_final(e, t);
}

/* The growths for step j + 1 at step j's end (grow from *xg on). */
static inline void leap_growths(struct ema_engine *e, struct ema_tenant *t, int32_t j,
				int32_t *xg)
{
	const struct leap_event *grow = t->leap_ev[1];

	for (; *xg < t->leap_n_ev[1] && grow[*xg].step == j; (*xg)++) {
		struct ema_request *r = &t->reqs[grow[*xg].id];
		int32_t need = grow[*xg].pages, add = need - r->n_pages;

		/* grow_request's first choice, with the pages the plan found
		 * it needs: all from its own GPU's free pages beyond the
		 * staging reserve, into the room reserved at admission */
		if (add >= 1 && ema_ledger_free_pages(&e->ledger, t->gpu) - add >= t->local_reserve &&
		    e->ledger.gpu[t->gpu].home_tenant == t->index &&
		    (r->counted ? ema_ledger_alloc_counted(&e->ledger, t->gpu, add) :
		     need <= r->cap_pages ?
		     ema_ledger_alloc_home_kv(&e->ledger, t->gpu, add, &r->pages[r->n_pages]) :
		     EMA_ERR_NOSPACE) == EMA_OK) {
			r->n_pages = need;
			r->view.pages_on[t->gpu] += add;
			ema_gpuset_set(&r->on_mask, t->gpu);
			t->kv_pages += add;
			note_peak(e, t);
			continue;
		}
		/* computed is still the leap's first: + j steps + 1 token */
		if (grow_request(e, t, r, (int64_t)r->computed + j + 1) != ALLOC_OK)
			engine_fail(e, EMA_ERR_INTERNAL, "engine: a leap ran out of pages it had counted");
	}
}

/* Steps t->leap_played + 1 .. m - 1 of t's leap played back. */
static void leap_play(struct ema_engine *e, struct ema_tenant *t, int32_t m)
{
	const struct leap_event *fin = t->leap_ev[0], *grow = t->leap_ev[1];
	const int64_t *end = t->leap_end;
	int32_t xf = t->leap_xf, xg = t->leap_xg, j;
	bool was_replay = e->replay;
	int64_t was_vnow = e->vnow;
	bool plan = t->leap_plan && e->policy->plan_iteration != NULL;
	bool plan_all = e->policy->plan_leap != NULL && e->plan_leap_on;
	const int32_t first = t->leap_played + 1;
	struct ema_iteration it;

	if (plan)
		leap_plan_init(e, t, &it);

	/* account()'s integrals in registers: each step adds to them, and
	 * through memory every step waited for the previous one's store.
	 * The tenant borrows nothing while it leaps (try_leap), and only its
	 * own steps change its pages: the remote count is the leap's. The
	 * accounting req_free_pages does at a finish adds nothing (dt 0:
	 * last_account_ns is that step's end). */
	double kv_ns = t->stats.kv_page_ns, remote_ns = t->stats.remote_page_ns;
	const double remote = (double)ema_ledger_borrowed_pages(&e->ledger, t->index);
	int64_t last = t->last_account_ns;

	/* at each step's end, it is that step's time (req_free_pages'
	 * accounting asks for it) */
	e->replay = true;
	if (plan && !plan_all) {
		/* plan_iteration step by step, between the steps' events */
		for (j = first; j < m && !e->error; j++) {
			int64_t dt;

			e->vnow = end[j];
			dt = e->vnow - last;
			if (dt > 0) {
				kv_ns += (double)t->kv_pages * (double)dt;
				remote_ns += remote * (double)dt;
			}
			last = e->vnow;
			t->last_account_ns = last;
			t->stats.generated_tokens += t->running_n;
			leap_finishes(e, t, j, &xf);
			leap_growths(e, t, j, &xg);
			/* step j + 1 starts: what launch would ask the policy for it */
			leap_plan_step(e, t, &it, &((const struct ema_leap_step *)t->leap_work)[j + 1]);
		}
	} else {
		/* from one step with events to the next: the steps in between
		 * change no page and no batch, only the integrals */
		for (j = first; j < m && !e->error;) {
			int32_t ev = m - 1;
			const double pages = (double)t->kv_pages;

			if (xf < t->leap_n_ev[0] && fin[xf].step < ev)
				ev = fin[xf].step;
			if (xg < t->leap_n_ev[1] && grow[xg].step < ev)
				ev = grow[xg].step;
			t->stats.generated_tokens += (int64_t)t->running_n * (ev - j + 1);
			for (; j <= ev; j++) {
				int64_t dt = end[j] - last;

				if (dt > 0) {
					kv_ns += pages * (double)dt;
					remote_ns += remote * (double)dt;
				}
				last = end[j];
			}
			/* step ev's end */
			e->vnow = end[ev];
			t->last_account_ns = last;
			leap_finishes(e, t, ev, &xf);
			leap_growths(e, t, ev, &xg);
		}
	}
	/* or all of them at once: steps first + 1 .. j, step i starting at
	 * leap_end[i - 1] */
	if (plan && plan_all && j > first)
		e->policy->plan_leap(&e->ctx, e->policy_state, &it, j - first,
				     &((const struct ema_leap_step *)t->leap_work)[first + 1],
				     &t->leap_end[first]);
	t->stats.kv_page_ns = kv_ns;
	t->stats.remote_page_ns = remote_ns;
	/* each played step's end tried the queue's front, and a queue that
	 * waits in a leap waits at all of them (try_leap's admit_at) */
	if (j - 1 >= first)
		note_queue_left(e, t, end[j - 1]);
	t->leap_played = j - 1;
	t->leap_xf = xf;
	t->leap_xg = xg;
	e->replay = was_replay;
	e->vnow = was_vnow;
}

/* Every leap brought up to now, before an event of another tenant: the
 * steps that ended before now played back (a step ending at now is its
 * leap's end, the platform's cut saw to it), so that what the event's
 * hooks and the engine read of the leaping tenants' GPUs and requests
 * (their free pages above all) is what stepping would show. The requests
 * still running keep the leap's first counters until its end. */
static void leap_settle(struct ema_engine *e)
{
	int64_t now;

	if (e->n_leaping == 0)
		return;
	now = ema_engine_now(e);
	for (int i = 0; i < e->n_tenants; i++) {
		struct ema_tenant *t = &e->tenants[i];
		int32_t m = t->leap_played + 1;

		if (!t->leaping)
			continue;
		while (m < t->leap_k && t->leap_end[m] < now)
			m++;
		if (m > t->leap_played + 1)
			leap_play(e, t, m);
	}
}

static void leap_replay(struct ema_engine *e, struct ema_tenant *t, int64_t end)
{
	int32_t m = 0;

	for (int32_t j = t->leap_played + 1; j <= t->leap_k; j++)
		if (t->leap_end[j] == end) {
			m = j;
			break;
		}
	t->leaping = false;
	e->n_leaping--;
	e->n_leap_waiting -= t->leap_waiting;
	t->leap_waiting = false;
	if (m == 0) {
		engine_fail(e, EMA_ERR_INTERNAL, "engine: a leap ended at a time it did not plan");
		return;
	}
	/* the steps it ran: fewer than planned where it was cut or timed
	 * again */
	e->leap_steps += (uint64_t)m;
	leap_play(e, t, m);
	if (m > 1) {
		t->stats.busy_ns += t->leap_end[m - 1] - t->leap_end[0];
		t->stats.iterations += m - 1;
	}
	/* Step m, the last, ends for real, and what iteration_end does to its
	 * batch of decodes is done here, in the same order: the timeline and
	 * the accounting to its end, its token each, the requests it finishes
	 * (the plan logged them, in batch order); iteration_end then finds an
	 * empty batch and does the rest. Its growths (logged for a step m + 1)
	 * are not played: stepping makes them in the kick that follows. */
	timeline_advance(e, end);
	account(e, t, end);
	t->stats.generated_tokens += t->running_n;
	{
		bool was_replay = e->replay;
		int64_t was_vnow = e->vnow;
		int32_t xf = t->leap_xf;

		e->replay = true;
		e->vnow = end;
		leap_finishes(e, t, m, &xf);
		t->leap_xf = xf;
		e->replay = was_replay;
		e->vnow = was_vnow;
	}
	/* the requests left ran every step: in one walk, not one per step */
	for (int32_t i = 0; i < t->running_n; i++) {
		struct ema_request *r = &t->reqs[t->running[i]];

		r->computed += m;
		r->generated += m;
		r->in_iter = 0;
		leap_first_token(t, r);
	}
	t->iter_n = 0;
}

/* leap_pages_hold's answer step by step, from step j0 on. */
static bool leap_pages_walk(const struct ema_tenant *t, int32_t j0, int64_t delta,
			    const struct ema_leap_range *r)
{
	for (int32_t j = j0; j < t->leap_k; j++) {
		int64_t f = t->leap_pf[j] + delta;

		if (f < r->free_min || f > r->free_max ||
		    (f < t->local_reserve && t->leap_pf[j] >= t->local_reserve))
			return false;
	}
	return true;
}

/* Whether the ends of t's steps still to be played back find the free
 * pages its plan needs, now that others took pages of its GPU or gave
 * some back since it began (borrowers of a lender's pages): the plan's
 * counts moved by the difference stay within the policy's range r, and
 * at or above the staging reserve wherever the plan was (where a request
 * grows it was: a step without growth that falls under it is a cut too
 * many, never one too few). Asked only after pages were lent or given
 * back, and seldom with a difference: the plan is walked then rather
 * than summed for every leap. */
static bool leap_pages_hold(const struct ema_engine *e, struct ema_tenant *t,
			    const struct ema_leap_range *r)
{
	int64_t delta = (int64_t)ema_ledger_free_pages(&e->ledger, t->gpu) -
			t->leap_pf[t->leap_played];

	int32_t j0 = t->leap_played + 1;

	if (delta == 0 && r->free_min == t->leap_range.free_min &&
	    r->free_max == t->leap_range.free_max)
		return true; /* as planned */
	if (j0 >= t->leap_k)
		return true; /* no step left to walk */
	if (!t->leap_sfx) {
		/* (computed at the first check that needs them: most leaps,
		 * of GPUs no one borrows from, never do) */
		leap_pf_suffixes(t, t->leap_k);
		t->leap_sfx = true;
	}
	if (t->local_reserve == t->leap_reserve) {
		/* the walk below, from the plan's extremes: some step's count
		 * leaves the range, or one at or above the reserve falls under
		 * it (the least such does first) */
		bool holds = !((int64_t)t->leap_pf_min[j0] + delta < r->free_min ||
			       (int64_t)t->leap_pf_max[j0] + delta > r->free_max ||
			       (t->leap_pf_res[j0] != INT32_MAX &&
				(int64_t)t->leap_pf_res[j0] + delta < t->local_reserve));
#ifdef EMA_DEBUG
		if (holds != leap_pages_walk(t, j0, delta, r)) {
			fprintf(stderr, "engine: a leap's page check from its extremes says %d, "
				"its walk the other\n", holds);
			abort();
		}
#endif
		return holds;
	}
	return leap_pages_walk(t, j0, delta, r);
}

/* After every callback: a tenant that a kick would now act on ends every
 * leap at its next step, whose end kicks it as stepping does. */
static void check_leaps(struct ema_engine *e)
{
	if (e->n_leaping == 0)
		return;
	/* a leap its policy allowed only while the rest of the server stays
	 * as it is (leap_holds) ends at the step in progress once it does not */
	/* pages of a GPU change under its tenant's leap only where others
	 * hold pages of it: counted by the ledger's lend_ops */
	bool lent = e->ledger.lend_ops != e->leap_lend_ops;
	/* leap_holds reads nothing but the ledger (policy.h): with no ledger
	 * operation and no leap begun since the last check, every answer
	 * and cut it gave stands (most events: flows, arrivals, the ends of
	 * others' leaps replayed without a page moving) */
	bool asked = e->ledger.ops == e->leap_check_ops && e->leaps == e->leap_check_leaps;

	e->leap_lend_ops = e->ledger.lend_ops;
	e->leap_check_ops = e->ledger.ops;
	e->leap_check_leaps = e->leaps;
	for (int j = 0; j < e->n_tenants && !asked && (lent || e->policy->leap_holds != NULL); j++) {
		struct ema_tenant *t = &e->tenants[j];
		struct ema_leap_range r = t->leap_range;

		if (!t->leaping)
			continue;
		if (e->policy->leap_holds != NULL) {
			r.free_min = 0;
			r.free_max = INT32_MAX;
			r.waiting = t->leap_waiting;
			r.waiting_ok = false;
			r.others_wait = e->n_leap_waiting > (t->leap_waiting ? 1 : 0);
			if (!e->policy->leap_holds(&e->ctx, e->policy_state, j, &r) ||
			    (t->leap_waiting && !r.waiting_ok)) {
				e->platform->ops->leap_cut(e->platform, t->gpu);
				continue;
			}
		}
		/* (leap_holds may also have narrowed the range without a page
		 * lent: another tenant began a leap on a promise, others_wait) */
		if ((lent || r.free_min != t->leap_range.free_min ||
		     r.free_max != t->leap_range.free_max) && !leap_pages_hold(e, t, &r))
			e->platform->ops->leap_cut(e->platform, t->gpu);
	}
	for (int i = 0; i < e->n_tenants; i++)
		if (kick_sensitive(&e->tenants[i])) {
			for (int j = 0; j < e->n_tenants; j++)
				if (e->tenants[j].leaping)
					e->platform->ops->leap_cut(e->platform, e->tenants[j].gpu);
			return;
		}
}

void ema_engine_set_leap(struct ema_engine *e, bool on)
{
	e->leap_on = on && leap_possible(e);
}

void ema_engine_set_plan_leap(struct ema_engine *e, bool on)
{
	e->plan_leap_on = on;
}

int32_t ema_engine_reclaim_backoff(const struct ema_engine *e)
{
	return e->reclaim_backoff;
}

bool ema_engine_leap(const struct ema_engine *e)
{
	return e->leap_on;
}

uint64_t ema_engine_remote_steps(const struct ema_engine *e)
{
	return e->remote_steps;
}

uint64_t ema_engine_leaps(const struct ema_engine *e, uint64_t *steps)
{
	if (steps != NULL)
		*steps = e->leap_steps;
	return e->leaps;
}

/* ---- the policy context and its mechanisms --------------------------- */

static const struct ema_policy_mech engine_mech; /* below */

static void ctx_init(struct ema_engine *e)
{
	struct ema_policy_ctx *c = &e->ctx;

	memset(c, 0, sizeof *c);
	c->ledger = &e->ledger;
	/* what the policy believes (plan.*), the truth where nothing says
	 * otherwise (a configuration built by hand, not loaded, has no
	 * belief: n_gpus 0); the platform charges cfg->hw */
	c->hw = e->cfg->plan_hw.n_gpus > 0 ? &e->cfg->plan_hw : &e->cfg->hw;
	c->model = &e->cfg->model;
	c->knobs = &e->cfg->policy;
	c->own_knobs = e->own_knobs;
	c->n_tenants = e->n_tenants;
	c->n_gpus = e->ledger.n_gpus;
	c->layer_groups = e->cfg->serving.layer_groups;
	c->page_bytes = e->page_bytes;
	c->inplace_beside_local = e->platform->ops->inplace_beside_local;
	c->remote_attention = e->platform->ops->remote_attention;
	c->attention_beside_staged = e->platform->ops->attention_beside_staged;
	for (int i = 0; i < e->n_tenants; i++) {
		c->tenant_gpu[i] = e->tenants[i].gpu;
		c->kv_capacity_pages[i] = e->tenants[i].kv_capacity_pages;
	}
	c->mech = &engine_mech;
	c->engine = e;
}

static int64_t mech_now(const struct ema_policy_ctx *c)
{
	return ema_engine_now(c->engine);
}

/* (the policy's preemptions and demotions are its reclaims': they count
 * towards the reclaim backoff) */
/* A policy may not take pages a step in flight reads (ema_policy_borrowers_on
 * lists none): a run where one does stops, rather than read freed pages. */
static bool policy_takes_in_step(const struct ema_policy_ctx *c, const struct ema_request *r,
				 const char *what)
{
	char msg[EMA_ERROR_MSG_MAX];

	if (!in_step(c->engine, r))
		return false;
	snprintf(msg, sizeof msg, "engine: the policy %s request %d of tenant %s while a step in "
		 "flight reads its pages", what, r->id, c->engine->tenants[r->view.tenant].cfg->name);
	engine_fail(c->engine, EMA_ERR_INTERNAL, msg);
	return true;
}

static void mech_preempt_recompute(const struct ema_policy_ctx *c, struct ema_request *r)
{
	if (policy_takes_in_step(c, r, "preempted"))
		return;
	reclaim_backoff(c->engine, r);
	ema_engine_preempt_recompute(c->engine, r);
}

static bool mech_demote(const struct ema_policy_ctx *c, struct ema_request *r)
{
	/* one that would come back under backoff to a GPU that can never
	 * hold it is recomputed instead (the caller's fallback), and dropped */
	if (policy_takes_in_step(c, r, "demoted"))
		return false;
	if (r->reclaimed >= c->engine->reclaim_backoff - 1 && own_never_fits(c->engine, r))
		return false;
	if (!ema_engine_demote(c->engine, r))
		return false;
	reclaim_backoff(c->engine, r);
	return true;
}

static int32_t mech_move_home(const struct ema_policy_ctx *c, struct ema_request *r, int lender)
{
	if (policy_takes_in_step(c, r, "moved"))
		return 0;
	return ema_engine_move_home(c->engine, r, lender);
}

static int32_t mech_pool_reclaim(const struct ema_policy_ctx *c, int gpu, int32_t need)
{
	return ema_engine_pool_reclaim(c->engine, gpu, need);
}

/* (the figures tenant_try_start asks can_obtain for: the front of the
 * swapped list first, which comes back before any admission; an idle
 * tenant's queue waits on others: tenant_try_start would have started
 * it) */
static int32_t mech_queue_need(const struct ema_policy_ctx *c, int tenant)
{
	return queue_need(c->engine, &c->engine->tenants[tenant]);
}

static int64_t mech_queue_waited_ns(const struct ema_policy_ctx *c, int tenant)
{
	return c->engine->tenants[tenant].queue_left_ns;
}

static int mech_borrowers_on(const struct ema_policy_ctx *c, int gpu, struct ema_request *const **out)
{
	int n = borrowers_on(c->engine, gpu, false);

	*out = c->engine->victims;
	return n;
}

static void mech_record_reclaim(const struct ema_policy_ctx *c, int gpu, int32_t pages,
				int64_t start_ns, int64_t latency_ns)
{
	ema_engine_record_reclaim(c->engine, gpu, pages, start_ns, latency_ns);
}

static void mech_staging_reserve(const struct ema_policy_ctx *c, int tenant, int32_t reserve)
{
	c->engine->tenants[tenant].local_reserve = reserve > 0 ? reserve : 0;
}

static int32_t mech_staging_fill(const struct ema_policy_ctx *c, int tenant, int32_t want)
{
	struct ema_engine *e = c->engine;
	struct ema_tenant *t = &e->tenants[tenant];

	if (want > t->cap_staging) {
		int32_t *n = realloc(t->staging, (size_t)want * 2 * sizeof *n);

		if (n == NULL) {
			engine_fail(e, EMA_ERR_NOMEM, "engine: out of memory");
			return t->staging_pages;
		}
		t->staging = n;
		t->cap_staging = want * 2;
	}
	while (t->staging_pages < want) {
		int32_t p = ema_ledger_alloc(&e->ledger, t->gpu, tenant, EMA_PAGE_STAGING);

		if (p < 0)
			break;
		t->staging[t->staging_pages++] = p;
	}
	return t->staging_pages;
}

static void mech_staging_release(const struct ema_policy_ctx *c, int tenant)
{
	struct ema_engine *e = c->engine;
	struct ema_tenant *t = &e->tenants[tenant];

	for (int32_t i = 0; i < t->staging_pages; i++)
		ema_ledger_free(&e->ledger, t->gpu, t->staging[i]);
	t->staging_pages = 0;
}

static int32_t mech_staging_held(const struct ema_policy_ctx *c, int tenant)
{
	return c->engine->tenants[tenant].staging_pages;
}

static const int32_t *mech_staging_pages(const struct ema_policy_ctx *c, int tenant)
{
	return c->engine->tenants[tenant].staging;
}

/* The mechanisms, as policies reach them (policy.h's ema_policy_*
 * wrappers call through ctx->mech): libema_policies.a references none of
 * serve/'s symbols. */
static const struct ema_policy_mech engine_mech = {
	.now = mech_now,
	.preempt_recompute = mech_preempt_recompute,
	.demote = mech_demote,
	.move_home = mech_move_home,
	.pool_reclaim = mech_pool_reclaim,
	.borrowers_on = mech_borrowers_on,
	.queue_need = mech_queue_need,
	.queue_waited_ns = mech_queue_waited_ns,
	.record_reclaim = mech_record_reclaim,
	.staging_reserve = mech_staging_reserve,
	.staging_fill = mech_staging_fill,
	.staging_release = mech_staging_release,
	.staging_held = mech_staging_held,
	.staging_pages = mech_staging_pages,
};

/* ---- life cycle -------------------------------------------------------- */

int ema_engine_register_policies(const struct ema_policy_ops *const *table)
{
	static struct ema_config_policy list[64];
	int n = 0;

	for (; table[n] != NULL; n++) {
		if (n == (int)(sizeof list / sizeof list[0]))
			return EMA_ERR_INTERNAL;
		list[n].name = table[n]->name;
		list[n].knobs = table[n]->knobs;
		list[n].knobs_size = table[n]->knobs_size;
		list[n].knob_defaults = table[n]->knob_defaults;
	}
	return ema_config_set_policies(list, n);
}

/* The pages of a GPU's pool and of its share of host memory under
 * `policy`, before they are checked against EMA_MAX_POOL_PAGES. */
static void pool_figures(const struct ema_config *cfg, const struct ema_policy_ops *policy,
			 double *factor, double *gpu_pages, double *host_pages)
{
	double mem_gib = cfg->gpu_mem_cap_gib > 0 ? cfg->gpu_mem_cap_gib : cfg->hw.gpu_mem_gib;
	double page = (double)llround(cfg->page_mib * 1048576.0);

	*factor = policy->memory_factor ? policy->memory_factor(&cfg->policy) : 1.0;
	*gpu_pages = floor(mem_gib * *factor * 1073741824.0 / page);
	*host_pages = floor(cfg->policy.host_gib * 1073741824.0 / page);
}

int ema_engine_check_limits(const struct ema_config *cfg, const struct ema_policy_ops *policy,
			    struct ema_error *err)
{
	double factor, gpu, host;
	double mem_gib = cfg->gpu_mem_cap_gib > 0 ? cfg->gpu_mem_cap_gib : cfg->hw.gpu_mem_gib;

	if (llround(cfg->page_mib * 1048576.0) <= 0)
		return ema_error_set(err, EMA_ERR_INPUT, "%s: page_mib %g gives no page",
				     cfg->source_file, cfg->page_mib);
	pool_figures(cfg, policy, &factor, &gpu, &host);
	if (policy->kv_memory_factor != NULL) {
		/* a KV factor grows the pool by less than the same factor on
		 * the whole GPU: bounded by it */
		factor *= policy->kv_memory_factor(&cfg->policy);
		gpu = floor(gpu * policy->kv_memory_factor(&cfg->policy));
	}
	if (!(gpu <= (double)EMA_MAX_POOL_PAGES)) {
		char by[160] = "";

		if (factor != 1.0) {
			/* its knob, where it follows ideal's naming */
			char knob[EMA_NAME_MAX + 32];

			snprintf(knob, sizeof knob, "policy.%s_factor", policy->name);
			/* (the two ideals share theirs) */
			if (ema_config_key_unit(knob) == NULL && strncmp(policy->name, "ideal", 5) == 0)
				snprintf(knob, sizeof knob, "policy.ideal_factor");
			snprintf(by, sizeof by, " x %g (%s's memory factor%s%s)", factor, policy->name,
				 ema_config_key_unit(knob) != NULL ? ", " : "",
				 ema_config_key_unit(knob) != NULL ? knob : "");
		}
		return ema_error_set(err, EMA_ERR_INPUT,
				     "%s: a GPU's %g GiB%s%s in pages of page_mib = %g MiB are %.0f pages "
				     "under %s, more than the %ld (2^26) one pool may hold; expected a "
				     "larger page_mib or less memory", cfg->source_file, mem_gib,
				     cfg->gpu_mem_cap_gib > 0 ? " (gpu_mem_cap_gib)" : " (hardware.gpu_mem_gib)",
				     by, cfg->page_mib, gpu, policy->name, EMA_MAX_POOL_PAGES);
	}
	if (!(host <= (double)EMA_MAX_POOL_PAGES))
		return ema_error_set(err, EMA_ERR_INPUT,
				     "%s: policy.host_gib = %g GiB in pages of page_mib = %g MiB are %.0f "
				     "pages, more than the %ld (2^26) one pool may hold; expected a larger "
				     "page_mib or a smaller host_gib", cfg->source_file, cfg->policy.host_gib,
				     cfg->page_mib, host, EMA_MAX_POOL_PAGES);
	/* Sixteen GPUs' pools and host shares fit 2^31 pages at any size
	 * allowed above; 72 do not (issue 36): their sum is what the ledger
	 * and the engine count in int32_t. */
	if (!((gpu + host) * cfg->hw.n_gpus <= (double)(1L << 31)))
		return ema_error_set(err, EMA_ERR_INPUT,
				     "%s: %d GPUs' pools (%.0f pages each) and host shares (%.0f each) "
				     "in pages of page_mib = %g MiB are more than the 2^31 pages a run "
				     "may count; expected a larger page_mib or less memory",
				     cfg->source_file, cfg->hw.n_gpus, gpu, host, cfg->page_mib);
	return EMA_OK;
}

int ema_engine_platform_params(struct ema_platform_params *p, const struct ema_config *cfg,
			       const struct ema_policy_ops *policy)
{
	double factor, gpu, host;

	memset(p, 0, sizeof *p);
	if (ema_engine_check_limits(cfg, policy, NULL) != EMA_OK)
		return EMA_ERR_INPUT;
	pool_figures(cfg, policy, &factor, &gpu, &host);
	p->n_gpus = cfg->hw.n_gpus;
	p->page_bytes = (uint64_t)llround(cfg->page_mib * 1048576.0);
	for (int g = 0; g < cfg->hw.n_gpus && g < EMA_MAX_GPUS; g++) {
		/* (in [0, EMA_MAX_POOL_PAGES]: checked above) */
		p->pool_pages[g] = gpu > 0 ? (uint64_t)gpu : 0;
		if (p->pool_pages[g] > 0)
			p->gpus_used = g + 1;
	}
	for (int i = 0; i < cfg->n_tenants; i++)
		if (cfg->tenants[i].gpu + 1 > p->gpus_used)
			p->gpus_used = cfg->tenants[i].gpu + 1;
	if (policy->kv_memory_factor != NULL) {
		/* the KV grows, the weights stay: a tenant's GPU keeps its
		 * weight pages and multiplies the rest (a GPU without a tenant
		 * is all KV) */
		double kv_factor = policy->kv_memory_factor(&cfg->policy);
		uint64_t weight_pages = (ema_model_weight_bytes(&cfg->model) + p->page_bytes - 1) /
					p->page_bytes;

		for (int g = 0; g < cfg->hw.n_gpus && g < EMA_MAX_GPUS; g++) {
			uint64_t w = 0;

			for (int i = 0; i < cfg->n_tenants; i++)
				if (cfg->tenants[i].gpu == g && p->pool_pages[g] > weight_pages)
					w = weight_pages;
			p->pool_pages[g] = w + (uint64_t)floor((double)(p->pool_pages[g] - w) *
							      kv_factor);
		}
	}
	p->host_pages_per_gpu = host > 0 ? (uint64_t)host : 0;
	p->hw = &cfg->hw;
	p->model = &cfg->model;
	return EMA_OK;
}

int ema_engine_create(struct ema_engine *e, const struct ema_config *cfg,
		      const struct ema_policy_ops *policy, struct ema_platform *platform,
		      const struct ema_workload *workloads, struct ema_error *err)
{
	int32_t capacity[EMA_MAX_GPUS];
	int tenant_gpu[EMA_MAX_TENANTS];
	struct ema_platform_params params;
	int rc;

	memset(e, 0, sizeof *e);
	e->cfg = cfg;
	e->platform = platform;
	e->policy = policy;
	e->counted_pages = true; /* until page lists are asked for */
	rc = ema_engine_check_limits(cfg, policy, err);
	if (rc != EMA_OK)
		return rc;
	if (ema_engine_platform_params(&params, cfg, policy) != EMA_OK)
		return ema_error_set(err, EMA_ERR_INPUT, "engine: page_mib %g gives no page", cfg->page_mib);
	/* the platform was built for the same memory (one function decides) */
	if (platform->params != NULL &&
	    (platform->params->page_bytes != params.page_bytes ||
	     memcmp(platform->params->pool_pages, params.pool_pages, sizeof params.pool_pages) != 0))
		return ema_error_set(err, EMA_ERR_INTERNAL,
				     "engine: the platform was built for other pools than the policy's");
	e->page_bytes = params.page_bytes;
	e->kv_bytes_per_token = ema_model_kv_bytes_per_token(&cfg->model);
	e->block_bytes = e->kv_bytes_per_token * (uint64_t)cfg->serving.block_tokens;
	if (e->block_bytes > 0 && e->page_bytes % e->block_bytes == 0 &&
	    e->page_bytes / e->block_bytes <= (uint64_t)INT32_MAX)
		e->tokens_per_page = (int64_t)(e->page_bytes / e->block_bytes) *
				     cfg->serving.block_tokens;
	e->weight_bytes = ema_model_weight_bytes(&cfg->model);
	ema_work_model_init(&e->work, &cfg->model);
	{
		/* remote attention, per new token whose request holds pages on
		 * a lender: per layer, its query out (heads x head_dim at the
		 * model's precision) and its partial output back (fp32) with a
		 * log-sum-exp (fp32) per head */
		int tp = cfg->model.tensor_parallel > 0 ? cfg->model.tensor_parallel : 1;
		uint64_t heads = (uint64_t)(cfg->model.heads / tp > 0 ? cfg->model.heads / tp : 1);

		e->attention_exchange_per_token =
			(uint64_t)cfg->model.layers * heads *
			((uint64_t)cfg->model.head_dim * ((uint64_t)cfg->model.bytes_per_param + 4) + 4);
	}
	e->weight_pages = (int32_t)((ema_model_weight_bytes(&cfg->model) + e->page_bytes - 1) /
				    e->page_bytes);
	e->n_tenants = cfg->n_tenants;
	e->timeline_period_s = 0.5;
	e->end_ns = -1;
	for (int g = 0; g < cfg->hw.n_gpus; g++)
		capacity[g] = (int32_t)params.pool_pages[g];
	for (int i = 0; i < cfg->n_tenants; i++)
		tenant_gpu[i] = cfg->tenants[i].gpu;
	rc = ema_ledger_init(&e->ledger, cfg->hw.n_gpus, capacity, e->page_bytes,
			     cfg->n_tenants, tenant_gpu, err);
	if (rc != EMA_OK)
		return rc;
	e->host_capacity = (int32_t)params.host_pages_per_gpu;
	for (int g = 0; g < cfg->hw.n_gpus; g++) {
		e->host_stack[g] = malloc(((size_t)e->host_capacity + 1) * sizeof *e->host_stack[g]);
		if (e->host_stack[g] == NULL) {
			rc = ema_error_set(err, EMA_ERR_NOMEM, "engine: out of memory");
			goto fail;
		}
		/* one numbering over the hosts pools of all GPUs */
		for (int32_t k = 0; k < e->host_capacity; k++)
			e->host_stack[g][k] = g * e->host_capacity + e->host_capacity - 1 - k;
		e->host_free[g] = e->host_capacity;
	}
	for (int i = 0; i < cfg->n_tenants; i++) {
		struct ema_tenant *t = &e->tenants[i];
		const struct ema_workload *w = &workloads[i];
		int32_t maxb = cfg->serving.max_batch + 1;

		t->index = i;
		t->gpu = cfg->tenants[i].gpu;
		t->cfg = &cfg->tenants[i];
		t->reclaim_wait_since = -1;
		t->queue_left_ns = -1;
		rc = ema_ledger_reserve_weights(&e->ledger, t->gpu, e->weight_pages, err);
		if (rc != EMA_OK)
			goto fail;
		t->kv_capacity_pages = capacity[t->gpu] - e->weight_pages;
		t->n_reqs = (int32_t)w->n;
		t->spec = w->reqs;
		t->max_batch = maxb;
		/* (zero pages until touched: the slots of requests not yet
		 * arrived cost no memory) */
		t->reqs_bytes = (w->n ? w->n : 1) * sizeof *t->reqs;
		t->reqs = mmap(NULL, t->reqs_bytes, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (t->reqs == MAP_FAILED) {
			t->reqs = NULL;
			rc = ema_error_set(err, EMA_ERR_NOMEM, "engine: out of memory");
			goto fail;
		}
#ifdef MADV_NOHUGEPAGE
		/* (4 KiB pages: a huge page would hold 2 MiB of slots around
		 * the requests in flight, and give back none until all of it
		 * is final) */
		madvise(t->reqs, t->reqs_bytes, MADV_NOHUGEPAGE);
#endif
		if (queue_room(t) != EMA_OK) {
			rc = ema_error_set(err, EMA_ERR_NOMEM, "engine: out of memory");
			goto fail;
		}
		e->total_requests += (int64_t)w->n;
	}
	if (policy->state_size > 0) {
		e->policy_state = calloc(1, policy->state_size);
		if (e->policy_state == NULL) {
			rc = ema_error_set(err, EMA_ERR_NOMEM, "engine: out of memory");
			goto fail;
		}
	}
	e->own_knobs = ema_config_policy_knobs(cfg, policy->name);
	if (e->own_knobs == NULL)
		e->own_knobs = policy->knob_defaults;
	ctx_init(e);
	/* from here on fini is due, even if init fails half way */
	e->policy_ready = true;
	if (policy->init != NULL) {
		rc = policy->init(&e->ctx, e->policy_state, err);
		if (rc != EMA_OK)
			goto fail;
	}
	for (int i = 0; i < cfg->n_tenants; i++) {
		struct ema_tenant *t = &e->tenants[i];

		t->max_request_pages = policy->max_request_pages != NULL ?
			policy->max_request_pages(&e->ctx, e->policy_state, i) :
			t->kv_capacity_pages;
		t->max_admit_pages = policy->max_admit_pages != NULL ?
			policy->max_admit_pages(&e->ctx, e->policy_state, i) :
			t->max_request_pages;
		/* serving.oversize=drop: what its GPU cannot hold is dropped
		 * at arrival, as under static (oversize_yields says why) */
		if (cfg->serving.oversize == EMA_OVERSIZE_DROP) {
			if (t->max_request_pages > t->kv_capacity_pages)
				t->max_request_pages = t->kv_capacity_pages;
			if (t->max_admit_pages > t->max_request_pages)
				t->max_admit_pages = t->max_request_pages;
		}
	}
	for (int g = 0; g < EMA_MAX_GPUS; g++)
		e->timeline_last_k[g] = -1;
	ema_engine_set_leap(e, EMA_LEAP_DEFAULT);
	e->plan_leap_on = true;
	e->reclaim_backoff = cfg->serving.reclaim_backoff > 0 ? cfg->serving.reclaim_backoff
							      : INT32_MAX;
	e->unstall_at = -1;
	return EMA_OK;
fail:
	ema_engine_destroy(e);
	return rc;
}


static const char *const req_state_names[] = {
	"not arrived", "waiting", "running", "swapped out", "done", "dropped",
};

/* Whether anything the engine started or expects (an iteration, a
 * transfer, an arrival) is still to come: if not, nothing can change. */
static bool work_pending(const struct ema_engine *e)
{
	if (e->xfers_in_flight > 0 || e->unstall_at >= 0)
		return true;
	for (int i = 0; i < e->n_tenants; i++)
		if (e->tenants[i].busy || e->tenants[i].next_arrival < e->tenants[i].n_reqs)
			return true;
	return false;
}

/* The engine's timer of unstall: every tenant kicked, as an arrival
 * would kick its own. */
static void unstall_kick(void *arg, int64_t now)
{
	struct ema_engine *e = arg;

	e->unstall_at = -1;
	leap_settle(e);
	timeline_advance(e, now);
	kick_all(e);
	check_leaps(e);
}

/* Nothing is pending and requests are left. Before calling it a bug: the
 * tenants kicked once more (one that waited for lent pages kicked before
 * another gave them back, in the same pass), then the policy asked what
 * only time or giving something back would change (its stalled hook): a
 * kick at the earliest time it names. True when something is pending
 * again. */
/* The last resort of a stalled run: a tenant with nothing running or
 * moving whose first swapped-out request cannot come back (it needs
 * more pages than the tenant can get, and nothing pending can change
 * that) blocks every request behind it, since swapped requests come
 * back before admissions. The staged ema of before its planner got
 * there: a request admitted while its link budgets were grown by what
 * the tenant borrowed, then demoted to host by a reclaim, needed more
 * than the budgets gave once nothing was borrowed (random scenarios:
 * a100x4, opt-13b, the Mooncake trace at 4x; 17 pages short); under the
 * planner a tenant's budgets move with its corrections, which can do
 * the same. It is dropped, as a request preempted
 * past what can be admitted is, and counted (dropped_recomputed, and
 * dropped_swapped for its message). True when one was. */
static bool drop_stuck_swapped(struct ema_engine *e)
{
	bool dropped = false;

	for (int i = 0; i < e->n_tenants; i++) {
		struct ema_tenant *t = &e->tenants[i];
		struct ema_request *r;
		int32_t need;

		if (t->swapped_n == 0 || t->running_n > 0 || t->iter_n > 0 || t->busy ||
		    t->xfers_in_flight > 0)
			continue;
		r = &t->reqs[t->swapped[0]];
		if (r->pending_xfers > 0 || r->pinned)
			continue;
		need = ema_engine_pages_for_tokens(e, seq_len(r));
		if (need < r->n_pages)
			need = r->n_pages;
		swapped_remove(t, r->id);
		req_done_pages(e, t, r);
		r->state = EMA_REQ_DROPPED;
		t->stats.dropped++;
		t->stats.dropped_recomputed++;
		t->stats.dropped_swapped++;
		if (need > t->stats.dropped_swapped_max_pages)
			t->stats.dropped_swapped_max_pages = need;
		t->n_done++;
		e->done_requests++;
		note_final(e, t);
		dropped = true;
	}
	return dropped;
}

static bool unstall(struct ema_engine *e)
{
	int64_t now = ema_engine_now(e), at = INT64_MAX;

	kick_all(e);
	check_leaps(e);
	if (e->error || work_pending(e))
		return !e->error;
	for (int i = 0; e->policy->stalled != NULL && i < e->n_tenants; i++) {
		int64_t w;

		if (e->tenants[i].n_done == e->tenants[i].n_reqs)
			continue;
		w = e->policy->stalled(&e->ctx, e->policy_state, i);
		if (w >= now && w < at)
			at = w;
	}
	if (at != INT64_MAX && at > now) {
		if (e->platform->ops->timer(e->platform, at, unstall_kick, e, &e->op_err) != EMA_OK) {
			engine_fail_op(e, EMA_ERR_NOMEM, "engine: timer failed");
			return false;
		}
		e->unstall_at = at;   /* (pending: past a horizon, the run ends there) */
		return true;
	}
	if (at == now) {
		kick_all(e);
		check_leaps(e);
		if (e->error || work_pending(e))
			return !e->error;
	}
	/* nothing the policy names moves it: a swapped request that cannot
	 * come back goes (each call drops at least one, so this ends) */
	if (!drop_stuck_swapped(e))
		return false;
	kick_all(e);
	check_leaps(e);
	return !e->error;
}

/* Nothing is pending and requests are left: no event can ever move them
 * (a bug in admission, allocation or a policy's accounting). Names the
 * first stuck request of the first stuck tenant and the memory around it. */
static int no_progress(struct ema_engine *e, struct ema_error *err)
{
	for (int i = 0; i < e->n_tenants; i++) {
		struct ema_tenant *t = &e->tenants[i];
		const struct ema_request *r = NULL;

		if (t->n_done == t->n_reqs)
			continue;
		for (int32_t k = t->released; k < t->n_reqs && r == NULL; k++)
			if (k >= t->next_arrival)
				r = req_arrive(e, t, k); /* (never arrived: not done) */
			else if (t->reqs[k].state != EMA_REQ_DONE && t->reqs[k].state != EMA_REQ_DROPPED)
				r = &t->reqs[k];
		if (r == NULL)
			continue;
		return ema_error_set(err, EMA_ERR_INTERNAL,
			"engine: no progress possible at t = %.3f s (a bug in ema): tenant %s, "
			"request %d %s (%d prompt + %d output tokens, %d computed, needs %d pages, "
			"holds %d), %d of %d requests done; GPU %d: %d pages free, %d lent, "
			"tenant holds %d KV pages, %d borrowed, can borrow %d, one request may hold %d",
			(double)ema_engine_now(e) * 1e-9, t->cfg->name, r->id,
			req_state_names[r->state], r->prompt_tokens, r->output_tokens, r->computed,
			ema_engine_pages_for_tokens(e, seq_len(r)), r->n_pages, t->n_done, t->n_reqs,
			t->gpu, ema_ledger_free_pages(&e->ledger, t->gpu),
			ema_ledger_lent_pages(&e->ledger, t->gpu), t->kv_pages,
			ema_ledger_borrowed_pages(&e->ledger, i),
			e->policy->borrowable ? e->policy->borrowable(&e->ctx, e->policy_state, i) : 0,
			t->max_request_pages);
	}
	return ema_error_set(err, EMA_ERR_INTERNAL,
			     "engine: no progress possible: %lld of %lld requests done (a bug in ema)",
			     (long long)e->done_requests, (long long)e->total_requests);
}

/* The end of a run: every request completed or was dropped, or, where
 * the run stopped at its horizon, is still in flight; and the counts the
 * outputs print (n_done, stats.dropped, done_requests) are those of the
 * requests' states. A run that ends otherwise would print a result short
 * of requests as if it were whole (issue 32: a clock that wrapped around
 * ended a run with 6 of 10 requests completed and none dropped). */
static int check_accounts(struct ema_engine *e, struct ema_error *err)
{
	/* (a platform stops at the horizon with work pending; one that stops
	 * before it has nothing left, and no_progress speaks first) */
	bool at_horizon = e->cfg->horizon_s > 0;
	int64_t all = 0;

	for (int i = 0; i < e->n_tenants; i++) {
		const struct ema_tenant *t = &e->tenants[i];
		int64_t done = t->released_done, dropped = t->released_dropped, open = 0;

		/* (the slots of requests never arrived are not read: untouched,
		 * they cost no memory; they are open) */
		open = t->n_reqs - t->next_arrival;
		for (int32_t k = t->released; k < t->next_arrival; k++) {
			if (t->reqs[k].state == EMA_REQ_DONE)
				done++;
			else if (t->reqs[k].state == EMA_REQ_DROPPED)
				dropped++;
			else
				open++;
		}
		if (done + dropped != t->n_done || dropped != t->stats.dropped ||
		    (open > 0 && !at_horizon))
			return ema_error_set(err, EMA_ERR_INTERNAL,
					     "engine: tenant %s ends the run at t = %.3f s with %lld of its "
					     "%d requests completed, %lld dropped and %lld neither%s (counted: "
					     "%d done, %lld dropped): a bug in ema", t->cfg->name,
					     (double)e->end_ns * 1e-9, (long long)done, t->n_reqs,
					     (long long)dropped, (long long)open,
					     at_horizon ? ", at its horizon" : " in a run without a horizon",
					     t->n_done, (long long)t->stats.dropped);
		all += t->n_done;
	}
	if (all != e->done_requests)
		return ema_error_set(err, EMA_ERR_INTERNAL,
				     "engine: %lld requests done by the tenants' counts, %lld by the "
				     "engine's: a bug in ema", (long long)all,
				     (long long)e->done_requests);
	return EMA_OK;
}

int ema_engine_run(struct ema_engine *e, struct ema_error *err)
{
	int64_t horizon = e->cfg->horizon_s > 0 ? (int64_t)(e->cfg->horizon_s * 1e9) : 0;
	int rc;

	for (int i = 0; i < e->n_tenants; i++) {
		struct ema_tenant *t = &e->tenants[i];

		if (t->n_reqs > 0 &&
		    e->platform->ops->timer(e->platform, t->spec[0].arrival_ns, arrival, t, &e->op_err) != EMA_OK)
			return ema_error_set(err, e->op_err.code ? e->op_err.code : EMA_ERR_NOMEM,
					     "engine: timer failed: %s", e->op_err.msg);
	}
	rc = e->platform->ops->run(e->platform, horizon, err);
	/* (a stalled run goes on where the policy can say when it may move
	 * again, or kicking once more moves it) */
	while (rc == EMA_OK && !e->error && e->done_requests < e->total_requests &&
	       !work_pending(e) && unstall(e))
		rc = e->platform->ops->run(e->platform, horizon, err);
	if (e->error) {
		*err = e->err;
		return e->error;
	}
	if (rc != EMA_OK)
		return rc;
	e->end_ns = ema_engine_now(e);
	if (e->done_requests < e->total_requests && !work_pending(e))
		return no_progress(e, err);
	rc = check_accounts(e, err);
	if (rc != EMA_OK)
		return rc;
	timeline_finish(e, e->end_ns);
	if (!e->error)
		timeline_flush(e);
	if (e->error) {
		*err = e->err;
		return e->error;
	}
	for (int i = 0; i < e->n_tenants; i++)
		account(e, &e->tenants[i], e->end_ns);
	if (e->record_fn != NULL)
		for (int i = 0; i < e->n_tenants; i++) {
			struct ema_tenant *t = &e->tenants[i];

			/* the rest: in flight at the horizon, or never arrived */
			for (; t->handed < t->n_reqs; t->handed++) {
				struct ema_request_record r;

				memset(&r, 0, sizeof r);
				ema_engine_request(e, i, t->handed, &r);
				rc = e->record_fn(e->record_arg, i, &r, err);
				if (rc != EMA_OK)
					return rc;
			}
		}
	return EMA_OK;
}

void ema_engine_destroy(struct ema_engine *e)
{
	if (e->policy_ready && e->policy->fini != NULL)
		e->policy->fini(&e->ctx, e->policy_state);
	e->policy_ready = false;
	free(e->victims);
	e->victims = NULL;
	while (e->xfers != NULL)
		xfer_free(e->xfers);
	for (int i = 0; i < EMA_MAX_TENANTS; i++) {
		struct ema_tenant *t = &e->tenants[i];

		if (t->reqs != NULL) {
			for (int32_t k = t->released; k < t->next_arrival; k++)
				free(t->reqs[k].pages);
			SLOTS_UNPOISON(t->reqs, t->reqs_bytes);
			munmap(t->reqs, t->reqs_bytes);
			t->reqs = NULL;
		}
		free(t->waiting);
		free(t->running);
		free(t->swapped);
		free(t->iter_batch);
		free(t->iter_chunk);
		free(t->local_buf);
		free(t->staging);
		free(t->leap_end);
		free(t->leap_pf);
		free(t->leap_scratch);
		free(t->leap_buckets);
		free(t->leap_work);
		free(t->leap_ev[0]);
		free(t->leap_ev[1]);
		for (int g = 0; g < EMA_MAX_GPUS; g++)
			free(t->remote_buf[g]);
		memset(t, 0, sizeof *t);
	}
	for (int g = 0; g < EMA_MAX_GPUS; g++) {
		free(e->host_stack[g]);
		e->host_stack[g] = NULL;
	}
	free(e->reclaims);
	free(e->timeline);
	free(e->page_scratch);
	e->page_scratch = NULL;
	free(e->policy_state);
	e->reclaims = NULL;
	e->timeline = NULL;
	e->policy_state = NULL;
	ema_ledger_destroy(&e->ledger);
}

/* ---- the public interface ----------------------------------------------- */

int ema_engine_new(struct ema_engine **out, const struct ema_config *cfg,
		   const struct ema_policy_ops *policy, struct ema_platform *platform,
		   const struct ema_workload *workloads, struct ema_error *err)
{
	struct ema_engine *e = malloc(sizeof *e);
	int rc;

	*out = NULL;
	if (e == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "engine: out of memory");
	rc = ema_engine_create(e, cfg, policy, platform, workloads, err);
	if (rc != EMA_OK) {
		free(e);
		return rc;
	}
	*out = e;
	return EMA_OK;
}

void ema_engine_free(struct ema_engine *e)
{
	if (e == NULL)
		return;
	ema_engine_destroy(e);
	free(e);
}

void ema_engine_set_page_lists(struct ema_engine *e, bool on)
{
	e->page_lists = on;
	/* (page numbers in every iteration: none held by count) */
	e->counted_pages = !on;
}

void ema_engine_on_progress(struct ema_engine *e, ema_progress_fn fn, void *arg)
{
	e->progress_fn = fn;
	e->progress_arg = arg;
}

int ema_engine_n_tenants(const struct ema_engine *e)
{
	return e->n_tenants;
}

int ema_engine_tenant_gpu(const struct ema_engine *e, int tenant)
{
	return e->tenants[tenant].gpu;
}

int32_t ema_engine_n_requests(const struct ema_engine *e, int tenant)
{
	return e->tenants[tenant].n_reqs;
}

void ema_engine_stream_timeline(struct ema_engine *e, ema_timeline_fn fn, void *arg)
{
	e->timeline_fn = fn;
	e->timeline_arg = arg;
}

void ema_engine_stream_records(struct ema_engine *e, ema_record_fn fn, void *arg)
{
	e->record_fn = fn;
	e->record_arg = arg;
}

int32_t ema_engine_requests_final(const struct ema_engine *e, int tenant)
{
	return __atomic_load_n(&e->tenants[tenant].final_pub, __ATOMIC_ACQUIRE);
}

void ema_engine_request(const struct ema_engine *e, int tenant, int32_t k,
			struct ema_request_record *out)
{
	const struct ema_tenant *t = &e->tenants[tenant];
	const struct ema_request *r = &t->reqs[k];

	if (k < t->released) {
		/* its record went to the record sink and its slot was freed:
		 * reading it would be a silent wrong answer (zeros where the
		 * pages went back to the system), so a caller's bug stops here */
		fprintf(stderr, "ema: internal error: request %d of tenant %d was streamed and freed "
			"(ema_engine_stream_records): read its record from the sink\n", k, tenant);
		abort();
	}
	if (k >= t->next_arrival) {
		/* never arrived (a horizon): its slot was never filled */
		memset(out, 0, sizeof *out);
		out->id = k;
		out->arrival_ns = t->spec[k].arrival_ns;
		out->first_token_ns = out->finish_ns = -1;
		out->prompt_tokens = t->spec[k].prompt_tokens;
		out->output_tokens = t->spec[k].output_tokens;
		return;
	}

	out->id = r->id;
	out->arrival_ns = r->arrival_ns;
	out->first_token_ns = r->first_token_ns;
	out->finish_ns = r->finish_ns;
	out->prompt_tokens = r->prompt_tokens;
	out->output_tokens = r->output_tokens;
	out->preemptions = r->preemptions;
	out->generated_tokens = (int32_t)r->generated;
	out->dropped = r->state == EMA_REQ_DROPPED;
}

const struct ema_tenant_stats *ema_engine_tenant_stats(const struct ema_engine *e, int tenant)
{
	return &e->tenants[tenant].stats;
}

int32_t ema_engine_kv_capacity(const struct ema_engine *e, int tenant)
{
	return e->tenants[tenant].kv_capacity_pages;
}

int32_t ema_engine_max_admit_pages(const struct ema_engine *e, int tenant)
{
	return e->tenants[tenant].max_admit_pages;
}

int32_t ema_engine_max_request_pages(const struct ema_engine *e, int tenant)
{
	return e->tenants[tenant].max_request_pages;
}

int64_t ema_engine_total_requests(const struct ema_engine *e)
{
	return e->total_requests;
}

uint64_t ema_engine_page_bytes(const struct ema_engine *e)
{
	return e->page_bytes;
}

int64_t ema_engine_end_ns(const struct ema_engine *e)
{
	return e->end_ns;
}

const struct ema_reclaim_record *ema_engine_reclaims(const struct ema_engine *e, int32_t *n)
{
	*n = e->n_reclaims;
	return e->reclaims;
}

const struct ema_timeline_sample *ema_engine_timeline(const struct ema_engine *e, int32_t *n)
{
	*n = e->n_timeline;
	return e->timeline;
}
