/* ema.c: the EMA planner. One objective, stated in doc/policies.md ("ema's
 * planner"): each tenant whose GPU is full borrows peers' free pages, per
 * lender up to the most that keeps two guarantees, and reads each lender's
 * pages by the path that allows the most:
 *
 *   (a) every lender's predicted slowdown, summed over its borrowers,
 *       stays within policy.ema.lender_budget (5%): a borrower reading
 *       R bytes of lender L's pages per step of T ns costs L
 *       kappa_path x R / T, kappa being the cost model's interference
 *       per GB/s (in place or staged) or the seconds per GB of remote
 *       attention (compute);
 *   (b) the borrower's predicted step stays within 1 + policy.ema.
 *       tpot_budget (10%) of its local-only step, a full GPU's.
 *
 * and borrowing stops where it would no longer raise the tokens served,
 * (L + R) / T(R) <= L / T0. Both predictions are corrected by what the
 * platform reports (feedback): each tenant's measured step against the
 * predicted one, with nothing remote and with remote reads, and each
 * lender's measured slowdown against its predicted one, as averages with
 * the time constant policy.ema.feedback_s, so that the guarantees hold
 * where the model is wrong. Reclaims follow from the lenders' demand: a
 * lender lends none of the pages its own queue asks for, keeps
 * policy.ema.headroom of its KV free by reclaiming ahead of need after
 * every step, and takes pages back at once when it runs out. Staged
 * reads prefetch policy.ema.prefetch_depth layer groups ahead. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lending.h"

/* ema's knobs, policy.ema.KEY (doc/tuning.md says what each moves). */
struct ema_knobs {
	double lender_budget;   /* a lender's predicted slowdown stays within this share */
	double tpot_budget;     /* a borrower's predicted step within 1 + this of its local-only step */
	double feedback_s;      /* time constant of the corrections from measured steps (0: none) */
	double headroom;        /* share of a lender's KV kept free by reclaiming ahead */
	int prefetch_depth;     /* staged: layer groups copied ahead of the one computing */
	enum ema_remote_path remote_path; /* auto: per lender, the path that allows the most */
};

static const struct ema_knobs ema_knob_defaults = { 0.05, 0.10, 5.0, 0.05, 1, EMA_PATH_AUTO };

#define EMA_OWN_DBL(field, lo, hi, unit, text) \
	{ #field, EMA_CFG_DBL, offsetof(struct ema_knobs, field), 0, 0, lo, hi, 0, NULL, NULL, NULL, \
	  unit, text }

static const struct ema_config_key ema_knob_keys[] = {
	EMA_OWN_DBL(lender_budget, 0, 1, "share of the lender's step",
		    "ema: guarantee (a) of its objective: every lender's predicted slowdown, "
		    "summed over its borrowers and corrected by the slowdown measured, stays "
		    "within this share (doc/policies.md, \"ema's planner\")."),
	EMA_OWN_DBL(tpot_budget, 0, 10, "share of the local-only step",
		    "ema: guarantee (b) of its objective: a borrower's predicted step, "
		    "corrected by its measured steps, stays within 1 + this of its "
		    "local-only step (a full GPU's)."),
	EMA_OWN_DBL(feedback_s, 0, 3600, "s, 0 = none",
		    "ema: time constant of the corrections of its predictions by the steps "
		    "the platform measured (each tenant's steps, each lender's slowdown)."),
	EMA_OWN_DBL(headroom, 0, 1, "share of the lender's KV pages",
		    "ema: kept free on every lender by reclaiming ahead of need, after every step."),
	{ "prefetch_depth", EMA_CFG_INT, offsetof(struct ema_knobs, prefetch_depth), 0, 0, 0, 1024, 0,
	  NULL, NULL, NULL, "layer groups",
	  "ema: the staged path's window: layer groups copied ahead of the one computing "
	  "(0: never staged)." },
	{ "remote_path", EMA_CFG_ENUM, offsetof(struct ema_knobs, remote_path), 0, 0, 0, 0, 0,
	  ema_remote_path_names, NULL, NULL, "",
	  "ema: how a borrower reads a lender's pages. `inplace`: a share of the SMs reads "
	  "them over the link beside the local reads; `staged`: copied into local staging "
	  "pages `prefetch_depth` layer groups ahead; `compute`: the lender computes the "
	  "attention over them and sends back partials (doc/model.md, \"Remote attention\"); "
	  "`auto`: per lender, the path whose budget allows the most." },
	EMA_KNOB_END
};

/* Paths a borrower may read a lender's pages by (path[][] below). */
enum { PATH_NONE = 0, PATH_INPLACE, PATH_STAGED, PATH_COMPUTE };
static const char *const path_names[] = { "none", "inplace", "staged", "compute" };

/* What bound a lender's budget (the decision log's "binding"). */
enum { BIND_TPOT = 0, BIND_LENDER, BIND_PAYS, BIND_PATH };
static const char *const bind_names[] = { "tpot", "lender", "throughput", "no_path" };

/* exp(-dt / tau) as last computed, with its dt and tau (fade): the
 * forgetting of the averages and of the prefill share is read again and
 * again at the same distance from their last sample (a lender's average
 * by every budget on it within one grid step, fade_time; a step's end
 * folded into a tenant's sums and averages that all took their last
 * sample at its previous end). dt 0: none yet (every dt asked is > 0
 * or a sample's first). */
struct fade_memo {
	int64_t dt;
	double tau, k;
};

/* An average of a measured ratio with exponential forgetting. */
struct ema_avg {
	double v;          /* the average, 1 until a sample came */
	double prev;       /* the average before the samples taken at `at` */
	int64_t at;        /* run time of the last sample, -1: none yet */
	struct fade_memo read; /* avg_value's fading (a memo) */
};

/* A borrower's step reading a lender's HBM: when, and the slowdown of
 * the lender predicted for it (the lender's own steps that overlap it
 * are its measured slowdown's samples). `until` is EMA_SERVING_OPEN while
 * the step runs and its measured end once it ended: a step that ran past
 * its prediction still reads the lender, and a lender step in that time
 * counted as serving no one made the lender's baseline 1% slow and its
 * slowdown look that much smaller (a100x4 Llama-2-7B). */
#define EMA_SERVING_RING 16
#define EMA_SERVING_OPEN INT64_MAX
struct ema_serving {
	int64_t from, until;
	double load;
	int borrower;
};

/* What a borrower's budgets on every lender share, as last computed,
 * with what it was computed from (budget_memo's borrower side): the
 * step its TPOT budget allows less the overhead (tpot_step), and the
 * bytes each path reads within it, to a lender busy or not
 * (bytes_within; bit p * 2 + busy of `have`). pages_left asks for the
 * budgets on every lender in turn, each the same base. */
struct base_memo {
	int64_t at;        /* fade_time then */
	uint64_t t_epoch;  /* the borrower's then */
	int32_t own;       /* pages the borrower held (admissions: its prefill share) */
	uint8_t fresh;     /* which of its averages had a sample at now */
	uint8_t valid, have;
	double avail;
	double tc[4][2];
};

/* served() of one borrower, path and lender busy or not, as last
 * computed, with its bytes (a memo of a function of them alone). */
struct served_memo {
	double r, f;
	bool valid;
};

/* A budget as last computed, with what it was computed from: a borrower
 * asks for page after page within one event, and only these move it. */
struct budget_memo {
	int64_t at;        /* fade_time then */
	uint8_t fresh;     /* which of the averages read had a sample at now */
	uint64_t t_epoch, g_epoch; /* the borrower's and the lender's then */
	double load;       /* the lender's load from the other borrowers */
	int32_t own;       /* pages the borrower held (its prefill share) */
	int32_t pages;
	int8_t busy, path, bind, valid;
};

struct ema_state {
	/* bumped by every change of a correction or of a step's prediction
	 * a budget reads (budget_memo): the borrower's own (its steps'
	 * errors, its prefill share, its predicted step), the lender's (its
	 * measured slowdown) */
	uint64_t t_epoch[EMA_MAX_TENANTS], g_epoch[EMA_MAX_GPUS];
	/* note_end's fadings: its tenant's prefill share, its averages and
	 * its GPU's, whose last samples were mostly all at its last end */
	struct fade_memo end_fade[2];
	int end_fade_next;
	/* remote_error's last answer per tenant, with what it was read at */
	double rerr[EMA_MAX_TENANTS];
	int64_t rerr_at[EMA_MAX_TENANTS];
	uint64_t rerr_epoch[EMA_MAX_TENANTS];
	uint8_t rerr_fresh[EMA_MAX_TENANTS];
	bool rerr_valid[EMA_MAX_TENANTS];
	struct budget_memo memo[EMA_MAX_TENANTS][EMA_MAX_GPUS][2];
	struct base_memo base[EMA_MAX_TENANTS][2];
	struct served_memo served_memo[EMA_MAX_TENANTS][4][2];
	double t0_ns[EMA_MAX_TENANTS];     /* local-only full step (the belief) */
	/* kappa() of each path (PATH_NONE: in place's), fixed by the
	 * hardware profile: set at init, read by lender_load for every
	 * borrower of every lender at every budget */
	double kappa_of[4];
	double w_bytes, kv_bytes[EMA_MAX_TENANTS];
	int32_t headroom[EMA_MAX_GPUS];    /* pages kept free by reclaiming ahead */
	int32_t lent_limit[EMA_MAX_GPUS];  /* KV capacity less the lending floor */
	int8_t path[EMA_MAX_TENANTS][EMA_MAX_GPUS]; /* how each borrower reads each lender */
	/* feedback: measured over predicted step of each tenant with nothing
	 * remote, and with remote reads; of each GPU's own steps while no
	 * borrower read it; measured over predicted slowdown of each lender */
	struct ema_avg local[EMA_MAX_TENANTS], remote[EMA_MAX_TENANTS];
	struct ema_avg idle[EMA_MAX_GPUS], lend[EMA_MAX_GPUS];
	/* the latest borrower steps that read GPU g's HBM (a ring) */
	struct ema_serving serving[EMA_MAX_GPUS][EMA_SERVING_RING];
	int serving_next[EMA_MAX_GPUS];
	/* the largest `until` of GPU g's ring (kept at every write): no
	 * step of g that starts at or after it overlapped a borrower's */
	int64_t serving_until[EMA_MAX_GPUS];
	/* the entries tenant t's step in flight opened (GPU x ring + slot),
	 * which its end closes: the only open ones of t (-1: more than
	 * these hold, every ring is looked through) */
	int16_t opened[EMA_MAX_TENANTS][2 * EMA_MAX_GPUS];
	int opened_n[EMA_MAX_TENANTS];
	/* the step of each tenant in flight: its start, its prediction,
	 * and what it was (remote reads; its GPU serving at the start) */
	bool pending[EMA_MAX_TENANTS], pend_remote[EMA_MAX_TENANTS];
	bool pend_prefill[EMA_MAX_TENANTS];
	/* TPOT is a decode step's time over the share of time not spent in
	 * prefills: the prefill share of each tenant's busy time, decayed
	 * sums (prefill ns, busy ns) over all its steps and over those while
	 * it borrowed nothing (what it is under static) */
	double pf_ns[EMA_MAX_TENANTS], busy_ns[EMA_MAX_TENANTS];
	int64_t share_at[EMA_MAX_TENANTS];
	double step_now[EMA_MAX_TENANTS];   /* its last step reading remote KV, predicted */
	/* the bytes on one lender past which borrowing more serves fewer
	 * tokens, per path and lender busy or not (most_served) */
	double most_served[EMA_MAX_TENANTS][4][2];
	int64_t pend_start[EMA_MAX_TENANTS];
	double pend_pred[EMA_MAX_TENANTS];
	bool staged_last[EMA_MAX_TENANTS], reserve_set[EMA_MAX_TENANTS];
	/* the decision log's lines of each tenant's step in flight, which its
	 * end completes with the measured time (EMA_DECISION_LOG) */
	char log_lines[EMA_MAX_TENANTS][1024];
};

static const struct ema_knobs *own(const struct ema_policy_ctx *c)
{
	return c->own_knobs != NULL ? c->own_knobs : &ema_knob_defaults;
}

/* ---- the decision log ---------------------------------------------------
 * EMA_DECISION_LOG=FILE: a CSV line per borrower step that reads remote
 * KV: per lender the path, the bytes read, its budget and what bound it,
 * and the step's predicted and measured times (tools/decisions.awk turns
 * it into a report). Off, and the outputs unchanged, when unset. */
static FILE *decision_log;
static int decision_log_tried;

static FILE *dlog(void)
{
	if (!decision_log_tried) {
		const char *path = getenv("EMA_DECISION_LOG");

		decision_log_tried = 1;
		if (path != NULL && *path != '\0') {
			decision_log = fopen(path, "a");
			if (decision_log == NULL)
				fprintf(stderr, "ema: warning: EMA_DECISION_LOG=%s: cannot open it; "
					"no decision log\n", path);
			else
				fputs("time_s,tenant,gpu,lender,path,bytes,budget_bytes,binding,"
				      "predicted_ms,local_only_ms,measured_ms\n", decision_log);
		}
	}
	return decision_log;
}

/* ---- feedback ------------------------------------------------------------ */

/* exp(-dt / tau), the same double as computing it, from m (m[0] ..
 * m[n - 1]) where one holds that dt and tau, else computed into m[*next]
 * (round robin). */
static double fade(struct fade_memo *m, int n, int *next, int64_t dt, double tau)
{
	double k;

	for (int i = 0; i < n; i++)
		if (m[i].dt == dt && m[i].tau == tau && dt != 0)
			return m[i].k;
	k = exp(-(double)dt / tau);
	if (n > 0) {
		int i = next != NULL ? *next : 0;

		m[i] = (struct fade_memo){ dt, tau, k };
		if (next != NULL)
			*next = (i + 1) % n;
	}
	return k;
}

static void avg_init(struct ema_avg *a)
{
	a->v = 1.0;
	a->prev = 1.0;
	a->at = -1;
	a->read = (struct fade_memo){ 0, 0, 0 };
}

/* The time the fading of the averages is read at: `now` on a grid of
 * feedback_s / 256 (20 ms at 5 s), so that a budget stays what it was
 * within one, and a borrower asking page after page, or a queue asking at
 * every event, does not recompute it (budget_memo). */
static int64_t fade_time(const struct ema_policy_ctx *c, int64_t now)
{
	int64_t q = (int64_t)(own(c)->feedback_s * 1e9 / 256);

	return q > 0 ? now - now % q : now;
}

/* The average as read at run time `now`: the samples taken before now,
 * their weight fading with the time since the last, with the time
 * constant feedback_s, towards the model's 1. Samples taken at `now`
 * itself (a step that ends as another starts) are left out, so that
 * stepping and leaping, which order same-time events differently, read
 * the same. The fading matters where no step renews a correction: a
 * borrower whose remote steps were slow stops reading remote KV, and
 * without it would never try again. */
static double avg_value(const struct ema_policy_ctx *c, const struct ema_avg *a, int64_t now)
{
	double tau = own(c)->feedback_s * 1e9;
	double v = a->at < now ? a->v : a->prev;
	int64_t t = fade_time(c, now);

	if (a->at >= 0 && t > a->at && tau > 0)
		v = 1.0 + (v - 1.0) * fade(&((struct ema_avg *)a)->read, 1, NULL, t - a->at, tau);
	return v;
}

/* Folds sample x, taken at run time `at`, into a with the time constant
 * of policy.ema.feedback_s: the first sample is the average. m: n
 * fadings to look in and keep the new one in (none: n 0). */
static void avg_add(const struct ema_policy_ctx *c, struct ema_avg *a, double x, int64_t at,
		    struct fade_memo *m, int n, int *next)
{
	double tau = own(c)->feedback_s * 1e9, w;

	if (!(tau > 0) || !isfinite(x))
		return;
	w = a->at < 0 ? 1.0 : 1.0 - fade(m, n, next, at - a->at, tau);
	if (at != a->at)
		a->prev = a->v;
	a->v += w * (x - a->v);
	a->at = at;
}

/* Measured over predicted, kept within [lo, hi] so that one odd step
 * cannot stop all borrowing or undo every budget. */
static double clampd(double x, double lo, double hi)
{
	return x < lo ? lo : x > hi ? hi : x;
}

/* Remote steps' measured over predicted time against local steps' (r
 * over l), fading towards 1 since the last remote step: without remote
 * steps to renew it, the belief is that remote steps are as wrong as the
 * local ones. l is held as last measured, not faded: it is the model's
 * error on the tenant's own steps (as with idle_baseline). With both
 * fading towards the model's 1, a ratio with no remote sample read 1 over
 * the measured local error, and a belief of HBM 20% slower than it is
 * (plan.error.hbm=-0.2) put the step the TPOT budget allows below T0
 * before the first remote step: ema never borrowed (A100x4, Llama-2-13B). */
static double relative_error(const struct ema_policy_ctx *c, const struct ema_avg *r,
			     const struct ema_avg *l, int64_t now)
{
	double tau = own(c)->feedback_s * 1e9;
	double x;
	int64_t t = fade_time(c, now);

	if (r->at < 0)
		return 1.0;
	x = (r->at < now ? r->v : r->prev) / (l->at < now ? l->v : l->prev);
	if (t > r->at && tau > 0)
		x = 1.0 + (x - 1.0) * exp(-(double)(t - r->at) / tau);
	return x;
}

/* How much slower than predicted a tenant's remote steps are than its
 * local ones: what its TPOT budget is corrected by. */
static double remote_error(const struct ema_policy_ctx *c, const struct ema_state *st, int t)
{
	int64_t now = ema_policy_now(c), at = fade_time(c, now);
	struct ema_state *w = (struct ema_state *)st; /* (a memo of a pure function) */
	uint8_t fresh = (uint8_t)((st->remote[t].at == now) | (st->local[t].at == now) << 1);

	if (w->rerr_at[t] != at || w->rerr_epoch[t] != st->t_epoch[t] || w->rerr_fresh[t] != fresh ||
	    !w->rerr_valid[t]) {
		w->rerr[t] = clampd(relative_error(c, &st->remote[t], &st->local[t], now), 0.5, 8.0);
		w->rerr_at[t] = at;
		w->rerr_epoch[t] = st->t_epoch[t];
		w->rerr_fresh[t] = fresh;
		w->rerr_valid[t] = true;
	}
	return w->rerr[t];
}

/* Adds a step of d ns (a prefill or not) ending at `at` to decayed sums
 * whose weights fall by e every feedback_s (at least 1 s: a share needs
 * a few steps of each kind). */
static void share_add(const struct ema_policy_ctx *c, double *pf, double *busy, int64_t *last,
		      bool prefill, double d, int64_t at, struct fade_memo *m, int n, int *next)
{
	double tau = own(c)->feedback_s > 1 ? own(c)->feedback_s * 1e9 : 1e9;
	double k = *last >= 0 ? fade(m, n, next, at - *last, tau) : 0.0;

	*pf = *pf * k + (prefill ? d : 0);
	*busy = *busy * k + d;
	*last = at;
}

/* The factor a tenant's step budget shrinks by as borrowing raises its
 * prefill share. TPOT is the decode step over 1 - f, f the share of the
 * tenant's time in prefills, so a TPOT within 1 + tpot_budget of the
 * local-only one is a step within (1 + tpot_budget) x (1 - f) / (1 - f0)
 * of T0. f is measured (recent steps); f0, the share it would have
 * borrowing nothing, follows from it: prefill time goes with the requests
 * served, and they with the batch over the step, so f0 = f x L / (L + R)
 * x T / T0, R the bytes borrowed now and T the step predicted with them.
 * 1 without feedback, or while nothing is borrowed. */
static double prefill_factor(const struct ema_policy_ctx *c, const struct ema_state *st, int t)
{
	double f, f0, r = (double)ema_ledger_borrowed_pages(c->ledger, t) * (double)c->page_bytes;

	if (!(own(c)->feedback_s > 0) || st->busy_ns[t] <= 0 || r <= 0 || st->step_now[t] <= 0)
		return 1.0;
	f = st->pf_ns[t] / st->busy_ns[t];
	f0 = f * st->kv_bytes[t] / (st->kv_bytes[t] + r) * st->step_now[t] / st->t0_ns[t];
	if (f <= f0 || f0 >= 0.95)
		return 1.0;
	return clampd((1 - f) / (1 - f0), 0.05, 1.0);
}

/* ---- the cost of borrowing ---------------------------------------------- */

/* Slowdown of a lender per GB/s it serves by a path: interference per
 * GB/s leaving its HBM (in place, staged), or the time each GB of remote
 * attention costs it (compute). */
static double kappa(const struct ema_policy_ctx *c, int path)
{
	if (path == PATH_COMPUTE)
		return ema_cost_attention_lender_s_per_gb(c->hw);
	return c->hw->hbm_read_gbps > 0 ? c->hw->interference_lender / c->hw->hbm_read_gbps : 0;
}

/* The slowdown GPU g is predicted to suffer from every borrower but
 * `except`, at the pages they hold there and the paths they read them
 * by, each over its local-only step (the shortest step it takes: the
 * highest rate). */
static double lender_load(const struct ema_policy_ctx *c, const struct ema_state *st, int g,
			  int except)
{
	double load = 0;

	/* (the tenants that borrow anything, in order: the others add no
	 * term; at 72 tenants a loop over all of them, once per lender per
	 * page borrowed, was 30% of a gb200nvl72 run) */
	EMA_GPUSET_FOREACH(b, ema_ledger_borrowing(c->ledger)) {
		int32_t n = c->ledger->borrowed[b][g];

		if (b == except || n <= 0 || st->t0_ns[b] <= 0)
			continue;
		/* (kappa_of[PATH_NONE] is in place's) */
		load += st->kappa_of[st->path[b][g]] * (double)n * (double)c->page_bytes /
			st->t0_ns[b];
	}
	return load;
}

/* lender_load(g, except) of every GPU g, into load[] (0 for `home`, the
 * borrower's own GPU, which none of its plans reads): one walk of the
 * ledger for a borrower's plan or its page-by-page budgets, each sum
 * the same doubles in the same order as lender_load's. */
static void lender_loads(const struct ema_policy_ctx *c, const struct ema_state *st, int except,
			 int home, double *load)
{
	for (int g = 0; g < c->n_gpus; g++)
		load[g] = g == home ? 0.0 : lender_load(c, st, g, except);
}

/* Whether GPU g runs steps of its own now (its tenant holds KV): remote
 * attention then gets attention_busy_share of its rate. */
static bool gpu_busy(const struct ema_policy_ctx *c, int g)
{
	return c->ledger->gpu[g].home_tenant >= 0 && ema_ledger_used_pages(c->ledger, g) > 0;
}

/* The largest root of a x^2 + b x + c <= 0's boundary, at least 0. */
static double quad_root(double a, double b, double cc)
{
	double d = b * b - 4 * a * cc;

	if (a <= 0)
		return b > 0 && cc < 0 ? -cc / b : 0;
	if (d < 0)
		return 0;
	/* (negative where even nothing breaks the bound: none then) */
	return fmax(0.0, (-b + sqrt(d)) / (2 * a));
}

/* The most bytes of tenant b's KV on lender L that path p reads within
 * a step of `avail` ns past the step's fixed overhead, the other lenders'
 * reads aside (each lender has its own link, and its own attention; a
 * switch's shared port and the staged path's shared HBM are for the sums
 * in borrowable). */
static double bytes_within(const struct ema_policy_ctx *c, const struct ema_state *st, int b,
			   bool busy, int p, double avail)
{
	const struct ema_hw_profile *hw = c->hw;
	double local = st->w_bytes + st->kv_bytes[b];
	double hbm = hw->hbm_read_gbps * hw->hbm_efficiency;

	if (avail <= 0 || hbm <= 0)
		return 0;
	switch (p) {
	case PATH_INPLACE: {
		double eta = hw->inplace_overlap_efficiency > 0 && hw->inplace_overlap_efficiency < 1 ?
			     hw->inplace_overlap_efficiency : 1.0;

		if (local / hbm > eta * avail)
			return 0;
		return ema_cost_link_gbps(hw, false, EMA_COPY_GATHER, 0) * eta * avail;
	}
	case PATH_COMPUTE: {
		double sync = c->model->layers * ema_cost_attention_sync_ns(hw);

		/* the lenders' attention runs beside the borrower's own reads,
		 * which must fit the step too */
		if (local / hbm > avail)
			return 0;
		return avail > sync ? ema_cost_attention_gbps(hw, busy) * (avail - sync) : 0;
	}
	case PATH_STAGED: {
		/* (local + R) / hbm x (1 + k_b x (R / avail) / hbm_read) <= avail,
		 * and the copies within the step at the link's copy rate */
		double kb = hw->interference_borrower / (avail * hw->hbm_read_gbps);
		double r = quad_root(kb, 1 + kb * local, local - hbm * avail);
		double copy = ema_cost_link_gbps(hw, true, c->knobs->copy_method,
						 (double)c->page_bytes / (c->layer_groups > 0 ? c->layer_groups : 1)) * avail;

		return r < copy ? r : copy;
	}
	}
	return 0;
}

/* The most bytes of b's KV on L that path p allows within b's TPOT
 * budget: the step within (1 + tpot_budget) x T0, shrunk by how much
 * slower than predicted b's remote steps were and, for an admission, by
 * the prefill share borrowing adds. The prefill share grows with the
 * requests admitted, so admissions are what it holds back: a running
 * request's next page is held only to the step, since refusing it
 * preempts the request, whose recomputed prompt adds more prefill (a
 * loop that, with the share on every page, took a single tenant on
 * a100x8 to 457 preemptions and 0.72 x static's throughput). */
static double tpot_step(const struct ema_policy_ctx *c, const struct ema_state *st, int b,
			bool admit)
{
	return st->t0_ns[b] * (1 + own(c)->tpot_budget) * (admit ? prefill_factor(c, st, b) : 1.0) /
	       remote_error(c, st, b);
}


/* The step the model predicts for b reading r bytes of one lender by
 * path p: bytes_within's inverse (the shortest step whose reads reach r,
 * tests/test_planner.c checks the two agree), at least T0. `busy`:
 * whether the lender runs steps of its own (remote attention's rate). */
static double step_with(const struct ema_policy_ctx *c, const struct ema_state *st, int b, int p,
			bool busy, double r)
{
	const struct ema_hw_profile *hw = c->hw;
	double local = st->w_bytes + st->kv_bytes[b];
	double hbm = hw->hbm_read_gbps * hw->hbm_efficiency, avail = 0;

	if (r <= 0 || hbm <= 0)
		return st->t0_ns[b];
	switch (p) {
	case PATH_INPLACE: {
		double eta = hw->inplace_overlap_efficiency > 0 && hw->inplace_overlap_efficiency < 1 ?
			     hw->inplace_overlap_efficiency : 1.0;
		double link = ema_cost_link_gbps(hw, false, EMA_COPY_GATHER, 0);

		avail = fmax(local / (hbm * eta), link > 0 ? r / (link * eta) : INFINITY);
		break;
	}
	case PATH_COMPUTE: {
		double att = ema_cost_attention_gbps(hw, busy);

		avail = c->model->layers * ema_cost_attention_sync_ns(hw) + (att > 0 ? r / att : INFINITY);
		break;
	}
	case PATH_STAGED: {
		double a = (local + r) / hbm;
		double copy = ema_cost_link_gbps(hw, true, c->knobs->copy_method,
						 (double)c->page_bytes / (c->layer_groups > 0 ? c->layer_groups : 1));

		avail = 0.5 * (a + sqrt(a * a + 4 * a * hw->interference_borrower * r / hw->hbm_read_gbps));
		avail = fmax(avail, copy > 0 ? r / copy : INFINITY);
		break;
	}
	}
	return fmax(st->t0_ns[b], avail + hw->iter_overhead_us * 1e3);
}

/* Tokens served per ns, up to a constant, with r bytes borrowed: the
 * batch grows with the KV it holds, the step with the reads. */
static double served(const struct ema_policy_ctx *c, const struct ema_state *st, int b, int p,
		     bool busy, double r)
{
	return (st->kv_bytes[b] + r) / step_with(c, st, b, p, busy, r);
}

/* The bytes on one lender by path p past which borrowing more serves
 * fewer tokens: the maximum of served() (one peak: flat steps, then
 * steps growing faster than the batch), by golden-section search up to
 * the reads of a step ten times T0. A property of the model and the
 * tenant, found once. */
static double most_served(const struct ema_policy_ctx *c, const struct ema_state *st, int b,
			  int p, bool busy)
{
	const double g = 0.5 * (sqrt(5.0) - 1);
	double lo = 0, hi = bytes_within(c, st, b, busy, p, 10 * st->t0_ns[b]);
	double x1, x2, f1, f2;

	if (!(hi > 0) || !isfinite(hi))
		return isfinite(hi) ? 0 : INFINITY;
	x1 = hi - g * (hi - lo);
	x2 = lo + g * (hi - lo);
	f1 = served(c, st, b, p, busy, x1);
	f2 = served(c, st, b, p, busy, x2);
	for (int i = 0; i < 80 && hi - lo > 1.0; i++) {
		if (f1 < f2) {
			lo = x1;
			x1 = x2;
			f1 = f2;
			x2 = lo + g * (hi - lo);
			f2 = served(c, st, b, p, busy, x2);
		} else {
			hi = x2;
			x2 = x1;
			f2 = f1;
			x1 = hi - g * (hi - lo);
			f1 = served(c, st, b, p, busy, x1);
		}
	}
	return 0.5 * (lo + hi);
}

/* The most bytes of b's KV on L that L's lender budget allows by path p,
 * with what the other borrowers of L put on it, the prediction corrected
 * by L's measured slowdown. A GPU without a tenant slows no one. */
/* The share of L's step its budget leaves b, the others' load being
 * `load`: the budget corrected by L's measured slowdown, less the load. */
static double lender_left(const struct ema_policy_ctx *c, const struct ema_state *st, int L,
			  double load)
{
	return own(c)->lender_budget / clampd(avg_value(c, &st->lend[L], ema_policy_now(c)), 0.25, 8.0) -
	       load;
}

/* The bytes that share allows by path p, over b's local-only step. */
static double lender_cap_of(const struct ema_policy_ctx *c, const struct ema_state *st, int b,
			    int L, int p, double left)
{
	double k = kappa(c, p);

	if (c->ledger->gpu[L].home_tenant < 0 || k <= 0)
		return INFINITY;
	return left > 0 ? left * st->t0_ns[b] / k : 0;
}

static bool path_allowed(const struct ema_policy_ctx *c, int p)
{
	enum ema_remote_path want = own(c)->remote_path;

	switch (p) {
	case PATH_INPLACE:
		return (want == EMA_PATH_INPLACE || want == EMA_PATH_AUTO) && c->inplace_beside_local;
	case PATH_STAGED:
		/* (auto on a platform that cannot mix the two in one step
		 * keeps to in place and compute, which can) */
		if (want == EMA_PATH_AUTO && c->remote_attention && !c->attention_beside_staged)
			return false;
		return (want == EMA_PATH_STAGED || want == EMA_PATH_AUTO) && own(c)->prefetch_depth > 0;
	case PATH_COMPUTE:
		return (want == EMA_PATH_COMPUTE || want == EMA_PATH_AUTO) && c->remote_attention;
	}
	return false;
}

/* Tenant b's budget of pages on lender L, the path it reads them by and
 * what bound it. Per path allowed: the smallest of the TPOT cap, the
 * lender cap and the bytes past which borrowing more serves fewer tokens;
 * of those, the path that serves the most tokens with its budget; none
 * where that serves no more than borrowing nothing, (L + R) / T(R) <=
 * L / T0 (in place, for one, costs the step the overlap's loss however
 * little it reads). */
/* The base of b's budgets (struct base_memo), from its memo where
 * nothing it reads changed: the key is budget_memo's borrower side. */
static struct base_memo *budget_base(const struct ema_policy_ctx *c, const struct ema_state *st,
				     int b, bool admit)
{
	struct base_memo *m = &((struct ema_state *)st)->base[b][admit];
	int64_t now = ema_policy_now(c), at = fade_time(c, now);
	int32_t own = admit ? ema_ledger_borrowed_pages(c->ledger, b) : 0;
	uint8_t fresh = (uint8_t)((st->remote[b].at == now) | (st->local[b].at == now) << 1);

	if (!m->valid || m->at != at || m->fresh != fresh || m->t_epoch != st->t_epoch[b] ||
	    m->own != own) {
		m->avail = tpot_step(c, st, b, admit) - c->hw->iter_overhead_us * 1e3;
		m->at = at;
		m->fresh = fresh;
		m->t_epoch = st->t_epoch[b];
		m->own = own;
		m->have = 0;
		m->valid = 1;
	}
	return m;
}

/* served(), from the borrower's memo where the bytes are the last's. */
static double served_memoized(const struct ema_policy_ctx *c, const struct ema_state *st, int b,
			      int p, bool busy, double r)
{
	struct served_memo *m = &((struct ema_state *)st)->served_memo[b][p][busy];

	if (!m->valid || m->r != r) {
		m->f = served(c, st, b, p, busy, r);
		m->r = r;
		m->valid = true;
	}
	return m->f;
}

static int32_t budget_at(const struct ema_policy_ctx *c, const struct ema_state *st, int b, int L,
			 bool admit, double load, int *path, int *bind)
{
	double best = 0, best_f = 0;
	int best_p = PATH_NONE, b_bind = BIND_PATH;
	bool busy = gpu_busy(c, L);
	/* what every path shares: the step the TPOT budget allows (and the
	 * bytes each path reads within it) and the share of L's step left
	 * to b */
	struct base_memo *base = budget_base(c, st, b, admit);
	double avail = base->avail;
	double left = lender_left(c, st, L, load);

	for (int p = PATH_INPLACE; p <= PATH_COMPUTE; p++) {
		double tc, lc, ms, cap, f;
		int why;

		if (!path_allowed(c, p))
			continue;
		if (!(base->have >> (p * 2 + busy) & 1)) {
			base->tc[p][busy] = bytes_within(c, st, b, busy, p, avail);
			base->have |= (uint8_t)(1u << (p * 2 + busy));
		}
		tc = base->tc[p][busy];
		lc = lender_cap_of(c, st, b, L, p, left);
		ms = st->most_served[b][p][busy];
		cap = tc;
		why = BIND_TPOT;
		if (lc < cap) {
			cap = lc;
			why = BIND_LENDER;
		}
		if (ms < cap) {
			cap = ms;
			why = BIND_PAYS;
		}
		f = served_memoized(c, st, b, p, busy, cap);
		if (best_p == PATH_NONE || f > best_f || (f == best_f && cap > best)) {
			best = cap;
			best_f = f;
			best_p = p;
			b_bind = why;
		}
	}
	if (best_p != PATH_NONE && !(best_f > st->kv_bytes[b] / st->t0_ns[b])) {
		/* (a cap of nothing keeps its name: what bound it is that
		 * limit, not the throughput) */
		if (best > 0)
			b_bind = BIND_PAYS;
		best = 0;
	}
	if (path != NULL)
		*path = best_p;
	if (bind != NULL)
		*bind = b_bind;
	best /= (double)c->page_bytes;
	return best >= (double)INT32_MAX / 2 ? INT32_MAX / 2 : (int32_t)best;
}

static int32_t budget(const struct ema_policy_ctx *c, const struct ema_state *st, int b, int L,
		      bool admit, int *path, int *bind)
{
	return budget_at(c, st, b, L, admit, lender_load(c, st, L, b), path, bind);
}

/* ---- lending ------------------------------------------------------------- */

/* Pages GPU g may lend now: the shared rules (floor, reserve, none while
 * its tenant borrows), less its headroom and what its own queue asks
 * for: a lender's demand comes first (no page its queue is about to take
 * is lent, to be taken back a step later). */
static int32_t lendable(const struct ema_policy_ctx *c, const struct ema_state *st, int g)
{
	int32_t n = ema_lending_lendable(c, g);
	int home = c->ledger->gpu[g].home_tenant;

	if (n <= 0)
		return 0;
	n -= st->headroom[g];
	if (home >= 0)
		n -= ema_policy_queue_need(c, home);
	return n > 0 ? n : 0;
}

/* ---- the hooks ------------------------------------------------------------- */

static int ema_init(const struct ema_policy_ctx *c, void *state, struct ema_error *err)
{
	struct ema_state *st = state;
	uint64_t w = 0;

	(void)err;
	/* the weights every tenant's GPU holds: its weight pages' bytes */
	for (int g = 0; g < c->n_gpus; g++) {
		int32_t cap = ema_lending_kv_capacity(c, g);
		int32_t floor_pages = c->ledger->gpu[g].home_tenant >= 0 ?
				      (int32_t)ceil(c->knobs->lender_floor * cap) : 0;

		st->headroom[g] = c->ledger->gpu[g].home_tenant >= 0 ?
				  (int32_t)ceil(own(c)->headroom * cap) : 0;
		st->lent_limit[g] = cap - floor_pages;
		avg_init(&st->idle[g]);
		avg_init(&st->lend[g]);
		for (int k = 0; k < EMA_SERVING_RING; k++)
			st->serving[g][k] = (struct ema_serving){ 0, -1, 0, -1 };
		st->serving_until[g] = -1;
	}
	for (int p = PATH_NONE; p <= PATH_COMPUTE; p++)
		st->kappa_of[p] = kappa(c, p);
	w = ema_model_weight_bytes(c->model);
	st->w_bytes = (double)w;
	for (int t = 0; t < c->n_tenants; t++) {
		st->kv_bytes[t] = (double)c->kv_capacity_pages[t] * (double)c->page_bytes;
		st->t0_ns[t] = ema_step_cost_local_ns(c->hw, w, (uint64_t)st->kv_bytes[t], 0, 0);
		for (int p = PATH_INPLACE; p <= PATH_COMPUTE; p++)
			for (int busy = 0; busy < 2; busy++)
				st->most_served[t][p][busy] = most_served(c, st, t, p, busy);
		avg_init(&st->local[t]);
		avg_init(&st->remote[t]);
		st->share_at[t] = -1;
	}
	return EMA_OK;
}

/* Staging pages that `borrowed` remote pages need for the window of depth
 * + 1 group slots, one page more per slot (a group's share of each page
 * is rounded: a ring a few bytes short holds one slot less). */
static int32_t staging_for(const struct ema_policy_ctx *c, int32_t borrowed)
{
	int groups = c->layer_groups > 0 ? c->layer_groups : 1;
	int slots = own(c)->prefetch_depth + 1;

	if (slots > groups)
		slots = groups;
	return (int32_t)(((int64_t)borrowed * slots + groups - 1) / groups) + slots;
}

static void set_reserve(const struct ema_policy_ctx *c, struct ema_state *st, int t, int32_t r)
{
	ema_policy_staging_reserve(c, t, r);
	st->reserve_set[t] = r > 0;
}

/* Own free pages kept for the staging area where the tenant stages: what
 * it borrows now and `more` pages need, less what it holds. */
static void update_reserve(const struct ema_policy_ctx *c, struct ema_state *st, int t,
			   int32_t more)
{
	int32_t r = 0;

	if (st->staged_last[t] && own(c)->prefetch_depth > 0)
		r = staging_for(c, ema_ledger_borrowed_pages(c->ledger, t) + more) -
		    ema_policy_staging_held(c, t);
	set_reserve(c, st, t, r > 0 ? r : 0);
}

/* budget() where nothing it reads changed since it was last asked. */
/* What the budgets of one borrower asked for in turn share of their
 * memo's key: the time, its grid point, the borrower's averages fresh
 * at now (fresh bits 1 and 2) and the pages it holds for an admission. */
struct budget_key {
	int64_t now, at;
	uint8_t fresh;
	int32_t own;
};

static void budget_key_of(const struct ema_policy_ctx *c, const struct ema_state *st, int b,
			  bool admit, struct budget_key *k)
{
	k->now = ema_policy_now(c);
	k->at = fade_time(c, k->now);
	k->fresh = (uint8_t)((st->remote[b].at == k->now) << 1 | (st->local[b].at == k->now) << 2);
	k->own = admit ? ema_ledger_borrowed_pages(c->ledger, b) : 0;
}

static int32_t budget_memoized(const struct ema_policy_ctx *c, struct ema_state *st, int b, int L,
			       bool admit, const struct budget_key *k, int *path, int *bind)
{
	struct budget_memo *m = &st->memo[b][L][admit];
	int64_t now = k->now, at = k->at;
	double load = lender_load(c, st, L, b);
	int32_t own = k->own;
	int8_t busy = gpu_busy(c, L);
	uint8_t fresh = (uint8_t)((st->lend[L].at == now) | k->fresh);

	if (!m->valid || m->at != at || m->fresh != fresh || m->t_epoch != st->t_epoch[b] ||
	    m->g_epoch != st->g_epoch[L] ||
	    m->load != load || m->own != own || m->busy != busy) {
		int p, why;

		m->pages = budget_at(c, st, b, L, admit, load, &p, &why);
		m->path = (int8_t)p;
		m->bind = (int8_t)why;
		m->at = at;
		m->fresh = fresh;
		m->t_epoch = st->t_epoch[b];
		m->g_epoch = st->g_epoch[L];
		m->load = load;
		m->own = own;
		m->busy = busy;
		m->valid = 1;
	}
	*path = m->path;
	*bind = m->bind;
	return m->pages;
}

/* What `tenant` may borrow from each lender now (pages left of its budget
 * there, for an admission or a running request's next page, at most what
 * the lender can lend), the lender with the most of it, and the sum: the
 * lenders read in place within the switch's shared ingress port, those
 * staged within the borrower's own HBM. */
static int32_t pages_left(const struct ema_policy_ctx *c, struct ema_state *st, int tenant,
			  bool admit, int *best, int8_t *paths)
{
	const int32_t *from = c->ledger->borrowed[tenant];
	int home = c->tenant_gpu[tenant];
	int64_t total = 0;
	int32_t best_n = 0, inplace_cap = INT32_MAX, inplace_held = 0, inplace_sum = 0;
	int32_t staged_cap = INT32_MAX, staged_held = 0, staged_sum = 0;
	struct budget_key key;

	budget_key_of(c, st, tenant, admit, &key);
	*best = -1;
	for (int g = 0; g < c->n_gpus; g++) {
		int p, bind;
		int32_t b, n;

		if (g == home)
			continue;
		b = budget_memoized(c, st, tenant, g, admit, &key, &p, &bind);
		if (paths != NULL)
			paths[g] = (int8_t)p;
		n = b - from[g];
		if (n > 0) {
			int32_t avail = lendable(c, st, g);

			if (avail < n)
				n = avail;
		}
		if (p == PATH_INPLACE) {
			inplace_held += from[g];
			inplace_sum += n > 0 ? n : 0;
			if (b < inplace_cap)
				inplace_cap = b;
		} else if (p == PATH_STAGED) {
			staged_held += from[g];
			staged_sum += n > 0 ? n : 0;
			if (b < staged_cap)
				staged_cap = b;
		}
		if (n > best_n) {
			best_n = n;
			*best = g;
		}
		if (n > 0)
			total += n;
	}
	/* behind a switch every lender read in place enters by one port:
	 * what one lender's budget is, all of them together */
	if (c->hw->topology == EMA_TOPO_SWITCH && inplace_sum > 0 && inplace_cap < INT32_MAX) {
		int32_t room = inplace_cap - inplace_held;

		if (room < inplace_sum)
			total -= inplace_sum - (room > 0 ? room : 0);
	}
	/* every staged page is written into and read again from the
	 * borrower's own HBM, whichever lender it came from: what one
	 * lender's staged budget is, all of them together */
	if (staged_sum > 0 && staged_cap < INT32_MAX) {
		int32_t room = staged_cap - staged_held;

		if (room < staged_sum)
			total -= staged_sum - (room > 0 ? room : 0);
	}
	return total > INT32_MAX ? INT32_MAX : total > 0 ? (int32_t)total : 0;
}

static int32_t ema_borrowable(const struct ema_policy_ctx *c, void *state, int tenant)
{
	int best;

	return pages_left(c, state, tenant, true, &best, NULL);
}

/* Fewer than `want` pages borrowable now: none where the lenders have
 * fewer free than that, else what borrowable says. (Having it, the
 * engine asks neither where the tenant's own pages suffice.) */
static bool ema_borrowable_below(const struct ema_policy_ctx *c, void *state, int tenant,
				 int32_t want)
{
	struct ema_state *st = state;
	int64_t most = 0;
	int best;

	for (int g = 0; g < c->n_gpus && most < want; g++)
		if (g != c->tenant_gpu[tenant])
			most += lendable(c, st, g);
	if (most < want)
		return true;
	return pages_left(c, st, tenant, true, &best, NULL) < want;
}

/* The most one request can hold: its GPU's KV plus its budgets on idle
 * lenders (each at most what the lender could ever lend), summed as
 * pages_left sums them. */
static int32_t ema_max_request_pages(const struct ema_policy_ctx *c, void *state, int tenant)
{
	struct ema_state *st = state;
	int64_t n = c->kv_capacity_pages[tenant], staged = 0, inplace = 0;
	int32_t staged_cap = INT32_MAX, inplace_cap = INT32_MAX;

	for (int g = 0; g < c->n_gpus; g++) {
		int32_t b, most, take;
		int p, bind;

		if (g == c->tenant_gpu[tenant])
			continue;
		b = budget(c, st, tenant, g, false, &p, &bind);
		most = ema_lending_max_lendable(c, g);
		take = b < most ? b : most;
		/* the sums pages_left holds them to: staged pages within the
		 * borrower's HBM, in-place ones behind a switch within its port */
		if (p == PATH_STAGED) {
			staged += take;
			staged_cap = b < staged_cap ? b : staged_cap;
		} else if (p == PATH_INPLACE && c->hw->topology == EMA_TOPO_SWITCH) {
			inplace += take;
			inplace_cap = b < inplace_cap ? b : inplace_cap;
		} else {
			n += take;
		}
	}
	n += staged < staged_cap ? staged : staged_cap;
	n += inplace < inplace_cap ? inplace : inplace_cap;
	return n < INT32_MAX ? (int32_t)n : INT32_MAX;
}

static int ema_choose_lender(const struct ema_policy_ctx *c, void *state, int tenant)
{
	struct ema_state *st = state;
	int8_t paths[EMA_MAX_GPUS];
	int best;

	if (pages_left(c, st, tenant, false, &best, paths) <= 0)
		return -1;
	if (best >= 0 && paths[best] == PATH_STAGED) {
		st->staged_last[tenant] = true;
		update_reserve(c, st, tenant, 1);
	}
	return best;
}

static int32_t ema_reclaim(const struct ema_policy_ctx *c, void *state, int gpu, int32_t need)
{
	const struct ema_state *st = state;

	return ema_lending_reclaim(c, gpu, need + st->headroom[gpu], c->knobs->reclaim_mode);
}

static void log_end(struct ema_state *st, int t, double measured_ns);

/* Whether a borrower's step read GPU g's HBM during [start, end), and the
 * largest slowdown of g predicted for those that did. Decided at the
 * step's end over the borrower steps that began before it: a borrower
 * step that begins as g's step begins counts, whichever of the two the
 * engine took first. */
static double serving_load(const struct ema_state *st, int g, int64_t start, int64_t end,
			   bool *serving)
{
	double load = 0;

	*serving = false;
	if (st->serving_until[g] <= start)
		return 0; /* (every entry ended by then) */
	for (int k = 0; k < EMA_SERVING_RING; k++) {
		const struct ema_serving *sv = &st->serving[g][k];

		if (sv->until > start && sv->from < end) {
			*serving = true;
			if (sv->load > load)
				load = sv->load;
		}
	}
	return load;
}

/* A lender's baseline, its own steps' measured over predicted time while
 * it served no one, as last measured: unlike the other corrections it is
 * not faded towards the model's 1. It is the model's error on the lender's
 * own steps, which holds while the lender serves without pause; faded,
 * it became the model's 1 a few feedback_s into a long borrowing, and a
 * belief of HBM 10% slower than it is (plan.error.hbm=-0.1) then read the
 * lender's slowed steps as faster than predicted: the correction fell to
 * its floor, the lender budget rose four-fold and lenders ran 8-10% slow
 * on the A100x4 scenarios (results/published/model-error.md). */
static double idle_baseline(const struct ema_state *st, int g, int64_t now)
{
	const struct ema_avg *a = &st->idle[g];

	return a->at < now ? a->v : a->prev;
}

/* The step in flight of tenant t ends at `end`: its measured time against
 * the prediction corrects t's predictions (remote, or local), and, for a
 * step its GPU ran while serving borrowers, the lender's slowdown. */
static void note_end(const struct ema_policy_ctx *c, struct ema_state *st, int t, int64_t end)
{
	double ratio, load;
	bool serving;
	int g = c->tenant_gpu[t];

	if (!st->pending[t])
		return;
	st->pending[t] = false;
	st->t_epoch[t]++;
	/* the ring entries its step opened, where no other step's took
	 * their place since (ema_plan records them) */
	for (int i = 0, n = st->opened_n[t] >= 0 ? st->opened_n[t] : c->n_gpus * EMA_SERVING_RING;
	     i < n; i++) {
		int slot = st->opened_n[t] >= 0 ? st->opened[t][i] : i;
		int L = slot / EMA_SERVING_RING;
		struct ema_serving *sv = &st->serving[L][slot % EMA_SERVING_RING];

		if (sv->borrower == t && sv->until == EMA_SERVING_OPEN) {
			int64_t most = -1;

			sv->until = end;
			for (int k = 0; k < EMA_SERVING_RING; k++)
				if (st->serving[L][k].until > most)
					most = st->serving[L][k].until;
			st->serving_until[L] = most;
		}
	}
	st->opened_n[t] = 0;
	log_end(st, t, (double)(end - st->pend_start[t]));
	if (end > st->pend_start[t]) {
		double d = (double)(end - st->pend_start[t]);

		share_add(c, &st->pf_ns[t], &st->busy_ns[t], &st->share_at[t], st->pend_prefill[t], d,
			  end, st->end_fade, 2, &st->end_fade_next);
	}
	if (!(st->pend_pred[t] > 0) || end <= st->pend_start[t])
		return;
	/* the corrections learn from decode steps only: the guarantees are
	 * on TPOT, decode steps' time, and a step with a prefill, bound by
	 * compute, is not wrong as a decode step is where the model misjudges
	 * a rate: the local error averaged over both (0.9 with HBM believed
	 * 20% slow, against 0.8 for decode steps) let the borrower's steps
	 * run 1.26 x static against a budget of 1.10 */
	if (st->pend_prefill[t])
		return;
	ratio = (double)(end - st->pend_start[t]) / st->pend_pred[t];
	if (st->pend_remote[t]) {
		avg_add(c, &st->remote[t], ratio, end, st->end_fade, 2, &st->end_fade_next);
		return;
	}
	avg_add(c, &st->local[t], ratio, end, st->end_fade, 2, &st->end_fade_next);
	load = serving_load(st, g, st->pend_start[t], end, &serving);
	if (!serving) {
		avg_add(c, &st->idle[g], ratio, end, st->end_fade, 2, &st->end_fade_next);
	} else if (load > 0.002) {
		/* measured slowdown (against its steps serving no one) over
		 * the predicted one, from decode steps only (above): a
		 * prefill, bound by compute, is hardly slowed by reads leaving
		 * its HBM; averaging its near-zero slowdowns in halved the
		 * correction on h200x2_conv and let decode steps past the
		 * budget (lender TPOT 1.066 x static against a budget of 1.05) */
		double x = clampd((ratio / idle_baseline(st, g, end) - 1) / load, 0, 8);

		/* with no step serving no one measured yet, the baseline is
		 * the model's 1, as wrong as the model: such a sample may only
		 * tighten the lender's budget */
		if (st->idle[g].at < 0 && x < 1)
			x = 1;
		avg_add(c, &st->lend[g], x, end, st->end_fade, 2, &st->end_fade_next);
		st->g_epoch[g]++;
	}
}

/* A step of tenant t starts now with prediction `pred`. */
static void note_start(const struct ema_policy_ctx *c, struct ema_state *st, int t,
		       const struct ema_iteration *it, double pred)
{
	int64_t now = ema_policy_now(c);

	note_end(c, st, t, now); /* (a leap's steps: the previous ends now) */
	st->pending[t] = true;
	st->pend_start[t] = now;
	st->pend_pred[t] = pred;
	st->pend_remote[t] = it->n_remote > 0;
	st->pend_prefill[t] = it->prefill_tokens > 0;
}

/* Staged reads for this step: every lender's pages that are not
 * computed remotely, where the tenant's budget said staged for one of
 * them; else in place (ties of a mixed plan go to in place, which needs
 * no staging pages). */
static bool plan_staged(const struct ema_state *st, const struct ema_iteration *it)
{
	bool staged = false;

	for (int i = 0; i < it->n_remote; i++) {
		int p = st->path[it->tenant][it->remote[i].gpu];

		if (p == PATH_INPLACE)
			return false;
		if (p == PATH_STAGED)
			staged = true;
	}
	return staged;
}

/* The decision log's lines of a borrower's step, held until its end. */
static void log_step(const struct ema_policy_ctx *c, struct ema_state *st,
		     const struct ema_iteration *it, double pred)
{
	char *buf = st->log_lines[it->tenant];
	size_t used = 0;

	buf[0] = '\0';
	if (dlog() == NULL)
		return;
	for (int i = 0; i < it->n_remote && used < sizeof st->log_lines[0]; i++) {
		int L = it->remote[i].gpu, p, bind;
		int32_t b = budget(c, st, it->tenant, L, false, &p, &bind);
		int n = snprintf(buf + used, sizeof st->log_lines[0] - used,
				 "%.6f,%d,%d,%d,%s,%llu,%.0f,%s,%.4f,%.4f,",
				 (double)ema_policy_now(c) * 1e-9, it->tenant, it->gpu, L,
				 path_names[st->path[it->tenant][L]],
				 (unsigned long long)it->remote[i].bytes,
				 (double)b * (double)c->page_bytes, bind_names[bind], pred * 1e-6,
				 st->t0_ns[it->tenant] * 1e-6);

		if (n < 0 || (size_t)n >= sizeof st->log_lines[0] - used) {
			buf[used] = '\0';
			break;
		}
		used += (size_t)n;
		buf[used++] = '\n';
		buf[used] = '\0';
	}
}

/* Writes the held lines of tenant t's step with its measured time. */
static void log_end(struct ema_state *st, int t, double measured_ns)
{
	FILE *f = decision_log;
	char *line = st->log_lines[t];

	if (f == NULL || line[0] == '\0')
		return;
	while (*line != '\0') {
		char *nl = strchr(line, '\n');

		if (nl == NULL)
			break;
		fprintf(f, "%.*s%.4f\n", (int)(nl - line), line, measured_ns * 1e-6);
		line = nl + 1;
	}
	st->log_lines[t][0] = '\0';
}

/* The path tenant b reads the `bytes` it holds on lender L by in a step:
 * of the paths allowed, the one that keeps both guarantees best, i.e.
 * the smallest of max(predicted step / the TPOT budget's step, bytes /
 * the lender cap), ties to the shorter step. Within both it is the path
 * with the shortest step that keeps the lender's budget; past one (the
 * pages were granted under a budget that shrank since) it is the least
 * past, not the first path with room on one side: reading 4.8 GB in
 * place because remote attention's lender cap had shrunk to 4.79 made
 * steps of 90 ms against a T0 of 39.5. budget()'s choice, what borrowing
 * more would take, may differ: with no budget left every path ties at
 * nothing. `load`: the other borrowers' load on L (lender_load). */
static int read_path_at(const struct ema_policy_ctx *c, const struct ema_state *st, int b, int L,
			double bytes, double load)
{
	bool busy = gpu_busy(c, L);
	double tmax = st->t0_ns[b] * (1 + own(c)->tpot_budget) / remote_error(c, st, b);
	/* what every path shares: the share of L's step its budget leaves b
	 * (lender_cap_of's, read once rather than once a path) */
	double left = lender_left(c, st, L, load);
	int best = PATH_NONE;
	double best_score = INFINITY, best_t = INFINITY;

	for (int p = PATH_INPLACE; p <= PATH_COMPUTE; p++) {
		double t, lc, score;

		if (!path_allowed(c, p))
			continue;
		t = step_with(c, st, b, p, busy, bytes);
		lc = lender_cap_of(c, st, b, L, p, left);
		score = fmax(t / tmax, lc > 0 ? bytes / lc : INFINITY);
		if (score < 1.0)
			score = 1.0; /* within both: the shorter step decides */
		if (best == PATH_NONE || score < best_score || (score == best_score && t < best_t)) {
			best = p;
			best_score = score;
			best_t = t;
		}
	}
	return best != PATH_NONE ? best : st->path[b][L];
}

static void ema_plan(const struct ema_policy_ctx *c, void *state, struct ema_iteration *it)
{
	struct ema_state *st = state;
	int tn = it->tenant, groups = c->layer_groups > 0 ? c->layer_groups : 1;
	int depth = own(c)->prefetch_depth < groups ? own(c)->prefetch_depth : groups;
	struct ema_step_cost sc;
	uint64_t remote = 0;
	int32_t want, got;
	bool staged;

	double load[EMA_MAX_GPUS];

	it->layer_groups = groups;
	it->method = c->knobs->copy_method;
	it->staging_pages = NULL;
	it->n_staging_pages = 0;
	/* the lenders' loads from the other borrowers, which the paths
	 * chosen below (tn's own) leave as they are */
	if (it->n_remote > 0)
		lender_loads(c, st, tn, c->tenant_gpu[tn], load);
	for (int i = 0; i < it->n_remote; i++) {
		int L = it->remote[i].gpu;

		st->path[tn][L] = (int8_t)read_path_at(c, st, tn, L, (double)it->remote[i].bytes,
						       load[L]);
		it->remote[i].compute = st->path[tn][L] == PATH_COMPUTE;
		it->remote[i].lender_busy = gpu_busy(c, L);
		if (!it->remote[i].compute)
			remote += it->remote[i].bytes;
	}
	staged = remote > 0 && depth > 0 && plan_staged(st, it);
	it->prefetch_depth = staged ? depth : remote == 0 ? depth : 0;
	/* the prediction the step's measured time is held against */
	if (it->n_remote == 0) {
		note_start(c, st, tn, it, ema_step_cost_local_ns(c->hw, it->weight_bytes,
								 it->kv_local_bytes, it->act_bytes,
								 it->flops));
	} else {
		ema_step_cost(c->hw, it, staged, &sc);
		note_start(c, st, tn, it, sc.total_ns);
		if (it->prefill_tokens == 0 && st->step_now[tn] != sc.total_ns) {
			st->step_now[tn] = sc.total_ns;
			st->t_epoch[tn]++;
		}
		/* the lenders serve this step: their own steps meanwhile are
		 * slowed by the load all their borrowers put on them */
		for (int i = 0; i < it->n_remote; i++) {
			int L = it->remote[i].gpu;
			struct ema_serving *sv = &st->serving[L][st->serving_next[L]];

			if (st->opened_n[tn] >= 0 && st->opened_n[tn] < 2 * EMA_MAX_GPUS)
				st->opened[tn][st->opened_n[tn]++] =
					(int16_t)(L * EMA_SERVING_RING + st->serving_next[L]);
			else
				st->opened_n[tn] = -1;
			st->serving_until[L] = EMA_SERVING_OPEN;

			sv->from = ema_policy_now(c);
			sv->until = EMA_SERVING_OPEN; /* note_end closes it */
			sv->borrower = tn;
			sv->load = lender_load(c, st, L, -1);
			st->serving_next[L] = (st->serving_next[L] + 1) % EMA_SERVING_RING;
		}
		log_step(c, st, it, sc.total_ns);
	}
	if (remote == 0)
		return;
	st->staged_last[tn] = staged;
	if (!staged) {
		if (ema_policy_staging_held(c, tn) > 0)
			ema_policy_staging_release(c, tn);
		set_reserve(c, st, tn, 0);
		return;
	}
	/* depth + 1 slots of one group each, one page more per slot */
	want = (int32_t)(((remote * (uint64_t)(depth + 1 < groups ? depth + 1 : groups)) /
			  (uint64_t)groups + c->page_bytes - 1) / c->page_bytes) +
	       (depth + 1 < groups ? depth + 1 : groups);
	got = ema_policy_staging_fill(c, tn, want);
	update_reserve(c, st, tn, 0);
	it->prefetch_depth = got > 0 ? depth : 0;
	it->staging_pages = got > 0 ? ema_policy_staging_pages(c, tn) : NULL;
	it->n_staging_pages = got;
}

/* Whether a lender (a GPU with a tenant and lent pages) is under its
 * headroom: after_iteration reclaims there. */
static bool lender_short(const struct ema_policy_ctx *c, const struct ema_state *st)
{
	EMA_GPUSET_FOREACH(g, ema_ledger_lending_home(c->ledger)) {
		if (ema_ledger_free_pages(c->ledger, g) < st->headroom[g])
			return true;
	}
	return false;
}

static void ema_after_iteration(const struct ema_policy_ctx *c, void *state, int tenant)
{
	struct ema_state *st = state;

	note_end(c, st, tenant, ema_policy_now(c));
	if (ema_ledger_borrowed_pages(c->ledger, tenant) == 0) {
		if (ema_policy_staging_held(c, tenant) > 0)
			ema_policy_staging_release(c, tenant);
		if (st->reserve_set[tenant])
			set_reserve(c, st, tenant, 0);
	}
	if (!lender_short(c, st))
		return;
	for (int g = 0; g < c->n_gpus; g++) {
		int32_t free_pages = ema_ledger_free_pages(c->ledger, g);

		if (ema_ledger_lent_pages(c->ledger, g) == 0 || c->ledger->gpu[g].home_tenant < 0 ||
		    free_pages >= st->headroom[g])
			continue;
		{
			int64_t now = ema_policy_now(c);
			int32_t freed = ema_lending_reclaim(c, g, st->headroom[g] - free_pages,
							    c->knobs->reclaim_mode);

			if (freed > 0)
				ema_policy_record_reclaim(c, g, freed, now, 0);
		}
	}
}

/* ---- leaps (policy.h, leap_ok) ---------------------------------------------
 * A tenant leaps while it borrows nothing and holds no staging area or
 * reserve, no lender is under its headroom (after_iteration would
 * reclaim), and its own steps keep its GPU at or above its headroom where
 * it lends. Its steps' notes (note_start, note_end) are the engine's
 * replay of plan_iteration at each step's start (plan_each), in order,
 * before any other tenant's hook reads them. Other tenants read its GPU
 * through lendable() and the lender loads, which the engine's replay keeps
 * as stepping would; with requests of the tenant waiting, borrowable must
 * stay 0, which holds while no other GPU can lend (only ledger operations
 * change that); and while another tenant leaps on that promise, its pages
 * must not become lendable mid-leap (others_wait). */
static bool lends_nothing(const struct ema_policy_ctx *c, const struct ema_state *st, int g)
{
	return ema_lending_lendable(c, g) - st->headroom[g] <= 0;
}

static bool ema_leap_holds(const struct ema_policy_ctx *c, void *state, int tenant,
			   struct ema_leap_range *r)
{
	struct ema_state *st = state;
	int g = c->tenant_gpu[tenant];

	if (lender_short(c, st))
		return false;
	if (ema_gpuset_test(ema_ledger_lending_home(c->ledger), g))
		r->free_min = st->headroom[g];
	if (r->waiting) {
		for (int h = 0; h < c->n_gpus; h++)
			if (h != g && !lends_nothing(c, st, h))
				return false;
		r->waiting_ok = true;
	}
	if (r->others_wait) {
		/* lendable() counts free pages beyond reserve + headroom + the
		 * queue's need: keep them at or under reserve + headroom */
		int32_t band = ema_lending_reserve(c, g) + st->headroom[g];

		if (band < r->free_max)
			r->free_max = band;
	}
	return true;
}

static bool ema_leap_ok(const struct ema_policy_ctx *c, void *state, int tenant,
			struct ema_leap_range *r)
{
	const struct ema_state *st = state;

	if (st->reserve_set[tenant] || ema_policy_staging_held(c, tenant) > 0 ||
	    ema_ledger_borrowed_pages(c->ledger, tenant) > 0 || !ema_leap_holds(c, state, tenant, r))
		return false;
	/* A lender leaps too. Its steps measure its slowdown (note_end,
	 * from the borrower steps that overlapped each in the serving ring),
	 * which its borrowers read, and with plan_each the engine notes each
	 * leapt step at its end, before any event after it (an event at a
	 * step's very end cuts the leap there: that end is a real one), so
	 * every hook of another tenant reads the averages, the epochs and
	 * the ring as stepping leaves them; avg_value leaves out samples
	 * taken at `now` either way. The simulator times its steps at the
	 * interference and remote attention of its borrowers' reads, timed
	 * again where they change (sim_platform.c, leaps). */
	r->plan_each = own(c)->feedback_s > 0;
	return true;
}

/* Whether an average holds a correction (it is not the model's 1). */
static bool corrected(const struct ema_avg *a)
{
	return a->at >= 0 && (a->v != 1.0 || a->prev != 1.0);
}

/* Nothing is pending and the tenant cannot run: its staging area and
 * reserve go back where it borrows nothing, and the corrections its
 * budgets hang on are forgotten where no step can renew them: its own
 * (remote steps slower than predicted, its prefill share) and those of
 * lenders that run nothing. Corrections only move with steps; with none
 * running they are evidence of a past load, and held they could keep a
 * request out for ever that the model's budgets, on which its admission
 * was promised (max_request_pages), let in. Otherwise nothing of the
 * planner changes with time alone. */
static int64_t ema_stalled(const struct ema_policy_ctx *c, void *state, int tenant)
{
	struct ema_state *st = state;
	bool forgot = false;

	if (corrected(&st->remote[tenant]) || corrected(&st->local[tenant]) ||
	    st->busy_ns[tenant] > 0) {
		avg_init(&st->remote[tenant]);
		avg_init(&st->local[tenant]);
		st->pf_ns[tenant] = 0;
		st->busy_ns[tenant] = 0;
		st->share_at[tenant] = -1;
		forgot = true;
	}
	for (int g = 0; g < c->n_gpus; g++) {
		int home = c->ledger->gpu[g].home_tenant;

		if (g != c->tenant_gpu[tenant] && corrected(&st->lend[g]) &&
		    (home < 0 || !st->pending[home])) {
			avg_init(&st->lend[g]);
			forgot = true;
		}
	}
	if (forgot) {
		st->t_epoch[tenant]++;
		for (int g = 0; g < c->n_gpus; g++)
			st->g_epoch[g]++;
		return ema_policy_now(c);
	}

	if (ema_ledger_borrowed_pages(c->ledger, tenant) == 0 &&
	    (ema_policy_staging_held(c, tenant) > 0 || st->reserve_set[tenant])) {
		ema_policy_staging_release(c, tenant);
		set_reserve(c, st, tenant, 0);
		return ema_policy_now(c);
	}
	return -1;
}

const struct ema_policy_ops ema_policy_ema = {
	.name = "ema",
	.summary = "borrow within a lender-slowdown and a TPOT budget, per lender by the path that allows most, corrected by measured steps",
	.state_size = sizeof(struct ema_state),
	.knobs = ema_knob_keys,
	.knobs_size = sizeof(struct ema_knobs),
	.knob_defaults = &ema_knob_defaults,
	.init = ema_init,
	.borrowable = ema_borrowable,
	.borrowable_below = ema_borrowable_below,
	.max_request_pages = ema_max_request_pages,
	.choose_lender = ema_choose_lender,
	.reclaim = ema_reclaim,
	.plan_iteration = ema_plan,
	.after_iteration = ema_after_iteration,
	.leap_ok = ema_leap_ok,
	.leap_holds = ema_leap_holds,
	.stalled = ema_stalled,
};
