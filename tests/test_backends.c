/* test_backends.c: a backend is one table entry and its code. A third
 * backend, "relay", defined here and registered in a table of this test
 * only, runs through the experiment with no change anywhere else: it
 * relays every op to a simulator of its own and takes the engine's page
 * lists, counts what it is given, checks (and reports) the pages it was
 * listed, and writes its own run.json fields and summary lines. Its
 * outputs are the simulator's, byte for byte, since it times nothing
 * itself; and it offers no leap ops, so the engine steps (the same
 * outputs). Also: the table's lookups and `ema list backends`' lines over
 * a table with it, and a backend that cannot run here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backends.h"
#include "experiment.h"
#include "hw.h"
#include "outdir.h"
#include "sim.h"
#include "test_main.h"

/* A platform that relays to a simulator: its own ops (name "relay"), the
 * simulator's clock, timing and links. */
struct relay {
	struct ema_platform base;
	struct ema_platform_ops ops;
	struct ema_platform *inner;
};

/* What the relays of a run were given (one run at a time). */
static struct {
	int created;
	bool verify;                 /* opts->verify at the last create */
	uint64_t iterations;
	uint64_t listed;             /* page numbers listed in iterations */
	uint64_t unlisted;           /* iterations with pages but no list */
} seen;

static struct ema_platform *inner(struct ema_platform *p) { return ((struct relay *)p)->inner; }

static int64_t relay_now(struct ema_platform *p) { return inner(p)->ops->now(inner(p)); }

static int relay_timer(struct ema_platform *p, int64_t at, ema_timer_fn fn, void *arg,
		       struct ema_error *err)
{
	return inner(p)->ops->timer(inner(p), at, fn, arg, err);
}

static int relay_iteration(struct ema_platform *p, const struct ema_iteration *it,
			   ema_iteration_fn fn, void *arg, struct ema_error *err)
{
	seen.iterations++;
	if (it->n_local_pages > 0 && it->local_pages != NULL)
		seen.listed += (uint64_t)it->n_local_pages;
	for (int i = 0; i < it->n_remote; i++)
		if (it->remote[i].n_pages > 0 && it->remote[i].pages != NULL)
			seen.listed += (uint64_t)it->remote[i].n_pages;
	if (it->kv_local_bytes > 0 && it->n_local_pages == 0)
		seen.unlisted++;
	return inner(p)->ops->iteration(inner(p), it, fn, arg, err);
}

static int relay_transfer(struct ema_platform *p, const struct ema_transfer *t,
			  ema_transfer_fn fn, void *arg, struct ema_error *err)
{
	return inner(p)->ops->transfer(inner(p), t, fn, arg, err);
}

static int relay_run(struct ema_platform *p, int64_t horizon, struct ema_error *err)
{
	return inner(p)->ops->run(inner(p), horizon, err);
}

static void relay_stop(struct ema_platform *p) { inner(p)->ops->stop(inner(p)); }

static uint64_t relay_events(struct ema_platform *p) { return inner(p)->ops->events(inner(p)); }

static const struct ema_link_stats *relay_links(struct ema_platform *p)
{
	return inner(p)->ops->link_stats(inner(p));
}

static void relay_destroy(struct ema_platform *p)
{
	inner(p)->ops->destroy(inner(p));
	free(p);
}

static int relay_create(struct ema_platform **out, const struct ema_platform_params *params,
			const struct ema_platform_opts *opts, struct ema_error *err)
{
	struct relay *r = calloc(1, sizeof *r);
	int rc;

	*out = NULL;
	if (r == NULL)
		return ema_error_set(err, EMA_ERR_NOMEM, "relay: out of memory");
	rc = ema_sim_platform_create(&r->inner, params, opts, err);
	if (rc != EMA_OK) {
		free(r);
		return rc;
	}
	r->ops = (struct ema_platform_ops){
		.name = "relay",
		.inplace_beside_local = r->inner->ops->inplace_beside_local,
		.remote_attention = r->inner->ops->remote_attention,
		.attention_beside_staged = r->inner->ops->attention_beside_staged,
		.now = relay_now, .timer = relay_timer, .iteration = relay_iteration,
		.transfer = relay_transfer, .run = relay_run, .stop = relay_stop,
		.events = relay_events, .link_stats = relay_links, .destroy = relay_destroy,
	};
	r->base.ops = &r->ops;
	r->base.params = r->inner->params;
	seen.created++;
	seen.verify = opts->verify;
	*out = &r->base;
	return EMA_OK;
}

static void relay_here(char *buf, size_t size)
{
	snprintf(buf, size, "in this test only");
}

/* Its "integrity checks": the pages it was listed, none corrupted. */
static void relay_integrity(struct ema_platform *p, uint64_t *checked, uint64_t *corrupted)
{
	*checked = seen.listed;
	*corrupted = 0;
}

static void relay_run_json(FILE *f, const struct ema_platform_report *r)
{
	fprintf(f, ", \"relay_listed\": %llu, \"relay_verify\": %s",
		(unsigned long long)r->pages_checked, r->verify ? "true" : "false");
}

static void relay_print(FILE *f, const struct ema_platform_report *r)
{
	fprintf(f, "relay: %s, %llu pages listed\n", r->policy,
		(unsigned long long)r->pages_checked);
}

static const struct ema_platform_backend relay_backend = {
	.name = "relay",
	.summary = "the simulator, relayed (a test's backend)",
	.create = relay_create,
	.page_lists = true,
	.verify = true,
	.here = relay_here,
	.integrity = relay_integrity,
	.run_json = relay_run_json,
	.print = relay_print,
};

/* The same, without page lists, and saying nothing of its own. */
static const struct ema_platform_backend relay_bare_backend = {
	.name = "relay_bare",
	.summary = "the simulator, relayed, without page lists",
	.create = relay_create,
};

static int cannot_create(struct ema_platform **out, const struct ema_platform_params *params,
			 const struct ema_platform_opts *opts, struct ema_error *err)
{
	*out = NULL;
	return ema_error_set(err, EMA_ERR_UNSUPPORTED, "absent: not on this machine");
}

static const struct ema_platform_backend absent_backend = {
	.name = "absent",
	.summary = "a backend that cannot run here",
	.create = cannot_create,
};

static const struct ema_platform_backend *const test_table[] = {
	&ema_sim_backend, &ema_hw_backend, &relay_backend, NULL,
};

static void test_lookups(void)
{
	char names[64];

	CU_ASSERT_PTR_EQUAL(ema_backend_find_in(test_table, "relay"), &relay_backend);
	CU_ASSERT_PTR_EQUAL(ema_backend_find_in(test_table, "sim"), &ema_sim_backend);
	CU_ASSERT_PTR_NULL(ema_backend_find_in(test_table, "rela"));
	/* the program's table: the two shipped, sim first (the default) */
	CU_ASSERT_PTR_NULL(ema_backend_find("relay"));
	CU_ASSERT_PTR_EQUAL(ema_backend_find("hw"), &ema_hw_backend);
	CU_ASSERT_PTR_EQUAL(ema_backend_default(), &ema_sim_backend);
	ema_backend_names(test_table, names, sizeof names);
	CU_ASSERT_STRING_EQUAL(names, "sim, hw or relay");
	ema_backend_names(ema_backend_table, names, sizeof names);
	CU_ASSERT_STRING_EQUAL(names, "sim or hw");
}

/* `ema list backends` over the test's table: one line each, what this
 * machine offers where the entry says (hw's depends on the machine). */
static void test_list(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	ema_backend_list(f, test_table);
	fclose(f);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	CU_ASSERT_EQUAL(strncmp(text, "sim    the discrete-event simulator of the hardware "
				"profile\nhw     the GPUs of this machine (CUDA); here: ", 100), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "\nrelay  the simulator, relayed (a test's backend); "
				      "here: in this test only\n"));
	CU_ASSERT_EQUAL(text[len - 1], '\n');
	free(text);
}

/* Runs the short default scenario (two tenants, tenant 0 borrowing) on
 * `be` (NULL: the default) and writes its folder to dir; x is kept. */
static struct ema_experiment *run_on(const struct ema_platform_backend *be, bool verify,
				     const char *dir)
{
	static const char *const sets[] = {
		"tenants.0.workload.duration_s=10", "tenants.1.workload.duration_s=10",
		"policies=static,remote_direct,ema",
	};
	struct ema_experiment *x = calloc(1, sizeof *x);
	struct ema_error err = { 0, "" };
	struct ema_outdir od;

	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	CU_ASSERT_EQUAL_FATAL(ema_config_load(&x->cfg, NULL, sets, 3, &err), EMA_OK);
	x->backend = be;
	x->verify = verify;
	x->quiet = true;
	memset(&seen, 0, sizeof seen);
	CU_ASSERT_EQUAL_FATAL(ema_experiment_run(x, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(ema_outdir_reserve(&od, "--out", dir, NULL, &err), EMA_OK);
	CU_ASSERT_EQUAL_FATAL(ema_experiment_write(x, &od, false, &err), EMA_OK);
	return x;
}

static char *slurp(const char *dir, const char *name)
{
	char path[4400];
	char *text;
	long n;
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "rb");
	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)n + 1);
	if (text != NULL && fread(text, 1, (size_t)n, f) != (size_t)n) {
		free(text);
		text = NULL;
	}
	fclose(f);
	return text;
}

static void free_run(struct ema_experiment *x)
{
	ema_experiment_free(x);
	free(x);
}

/* The third backend through the experiment: the simulator's outputs, its
 * own name, fields and lines, its page lists, --verify handed over. */
static void test_third_backend_runs(void)
{
	static const char *const same[] = {
		"summary.csv", "requests.csv", "timeline.csv", "links.csv", "transfers.csv",
		"reclaims.csv", "config.json",
	};
	const char *top = ema_test_scratch();
	char sim_dir[4200], relay_dir[4200], bare_dir[4200];
	struct ema_experiment *sim, *relay, *bare;
	uint64_t listed;
	char *sj, *rj, *bj, *printed = NULL;
	size_t printed_len = 0;
	FILE *f;

	CU_ASSERT_PTR_NOT_NULL_FATAL(top);
	snprintf(sim_dir, sizeof sim_dir, "%s/sim", top);
	snprintf(relay_dir, sizeof relay_dir, "%s/relay", top);
	snprintf(bare_dir, sizeof bare_dir, "%s/bare", top);
	sim = run_on(NULL, false, sim_dir);
	CU_ASSERT_EQUAL(seen.created, 0);
	relay = run_on(ema_backend_find_in(test_table, "relay"), true, relay_dir);
	/* one platform per policy, --verify handed to it, every step with
	 * its page lists (page_lists: true) */
	CU_ASSERT_EQUAL(seen.created, 3);
	CU_ASSERT_TRUE(seen.verify);
	CU_ASSERT(seen.iterations > 0);
	CU_ASSERT(seen.listed > 0);
	CU_ASSERT_EQUAL(seen.unlisted, 0);
	listed = seen.listed;
	bare = run_on(&relay_bare_backend, false, bare_dir);
	CU_ASSERT_EQUAL(seen.created, 3);
	CU_ASSERT_FALSE(seen.verify);
	CU_ASSERT(seen.iterations > 0);
	CU_ASSERT_EQUAL(seen.listed, 0);
	CU_ASSERT(seen.unlisted > 0);

	/* the results: the simulator's, byte for byte */
	for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
		char *a = slurp(sim_dir, same[i]), *b = slurp(relay_dir, same[i]);
		char *c = slurp(bare_dir, same[i]);

		CU_ASSERT_PTR_NOT_NULL(a);
		CU_ASSERT(a != NULL && b != NULL && strcmp(a, b) == 0);
		CU_ASSERT(a != NULL && c != NULL && strcmp(a, c) == 0);
		if (a == NULL || b == NULL || strcmp(a, b) != 0)
			printf("\n  %s differs on relay\n", same[i]);
		free(a);
		free(b);
		free(c);
	}
	/* run.json: each backend's name and its own fields only */
	sj = slurp(sim_dir, "run.json");
	rj = slurp(relay_dir, "run.json");
	bj = slurp(bare_dir, "run.json");
	CU_ASSERT_FATAL(sj != NULL && rj != NULL && bj != NULL);
	CU_ASSERT_PTR_NOT_NULL(strstr(sj, "\"backend\": \"sim\","));
	CU_ASSERT_PTR_NOT_NULL(strstr(sj, "\"leapt_steps\": "));
	CU_ASSERT_PTR_NOT_NULL(strstr(rj, "\"backend\": \"relay\","));
	CU_ASSERT_PTR_NULL(strstr(rj, "\"leaps\""));
	CU_ASSERT_PTR_NULL(strstr(rj, "integrity_check"));
	CU_ASSERT_PTR_NOT_NULL(strstr(rj, "\"reclaim_backoffs\": 0, \"relay_listed\": "));
	CU_ASSERT_PTR_NOT_NULL(strstr(rj, "\"relay_verify\": true}"));
	CU_ASSERT_PTR_NOT_NULL(strstr(bj, "\"backend\": \"relay_bare\","));
	CU_ASSERT_PTR_NULL(strstr(bj, "relay_listed"));
	CU_ASSERT_PTR_NULL(strstr(bj, "\"leaps\""));
	/* the relay's pages, counted over its three runs, as its integrity
	 * op said after each */
	{
		uint64_t last = 0;

		for (int i = 0; i < relay->n_runs; i++) {
			CU_ASSERT(relay->runs[i].pages_checked >= last);
			last = relay->runs[i].pages_checked;
			CU_ASSERT_EQUAL(relay->runs[i].pages_corrupted, 0);
		}
		CU_ASSERT_EQUAL(last, listed);
		for (int i = 0; i < sim->n_runs; i++)
			CU_ASSERT_EQUAL(sim->runs[i].pages_checked, 0);
	}
	/* its lines under the summary table, one per policy */
	f = open_memstream(&printed, &printed_len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	ema_experiment_print(relay, f);
	fclose(f);
	CU_ASSERT_PTR_NOT_NULL(strstr(printed, "\nrelay: static, "));
	CU_ASSERT_PTR_NOT_NULL(strstr(printed, "\nrelay: remote_direct, "));
	CU_ASSERT_PTR_NOT_NULL(strstr(printed, "\nrelay: ema, "));
	free(printed);
	printed = NULL;
	f = open_memstream(&printed, &printed_len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	ema_experiment_print(sim, f);
	fclose(f);
	CU_ASSERT_PTR_NULL(strstr(printed, "relay"));
	CU_ASSERT_PTR_NULL(strstr(printed, "integrity"));
	free(printed);
	free(sj);
	free(rj);
	free(bj);
	free_run(sim);
	free_run(relay);
	free_run(bare);
}

/* A backend that cannot run here: its reason, its status, nothing run. */
static void test_backend_cannot_run(void)
{
	static const char *const sets[] = { "tenants.0.workload.duration_s=2",
					    "tenants.1.workload.duration_s=2" };
	struct ema_experiment *x = calloc(1, sizeof *x);
	struct ema_error err = { 0, "" };

	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	CU_ASSERT_EQUAL_FATAL(ema_config_load(&x->cfg, NULL, sets, 2, &err), EMA_OK);
	x->backend = &absent_backend;
	x->quiet = true;
	CU_ASSERT_EQUAL(ema_experiment_run(x, &err), EMA_ERR_UNSUPPORTED);
	CU_ASSERT_STRING_EQUAL(err.msg, "absent: not on this machine");
	free_run(x);
}

int main(void)
{
	static const struct ema_test_case cases[] = {
		{"lookups in a table with a third backend", test_lookups},
		{"list backends over that table", test_list},
		{"a third backend runs through the experiment", test_third_backend_runs},
		{"a backend that cannot run here", test_backend_cannot_run},
		{NULL, NULL},
	};
	return ema_test_run("backends", cases);
}
