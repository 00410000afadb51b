/* mock_platform.h: a platform for unit tests of the engine and the
 * policies: iterations take exactly the cost model's time (rounded to the
 * ns), transfers a fixed time, no interference, no link sharing; plus a
 * tiny model and GPU with round numbers. Header-only: each test program
 * includes it once. */
#ifndef EMA_MOCK_PLATFORM_H
#define EMA_MOCK_PLATFORM_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "timing.h"
#include "work.h"
#include "engine_priv.h"
#include "eventq.h"

struct mock {
	struct ema_platform base;
	struct ema_eventq q;
	int64_t now;
	uint64_t events;
	bool stopped;
	struct ema_link_stats links;
	struct ema_iteration_result res[EMA_MAX_GPUS];
	ema_iteration_fn fn[EMA_MAX_GPUS];
	void *arg[EMA_MAX_GPUS];
	int64_t xfer_ns;
	const struct ema_config *cfg;
};

static int64_t mock_now(struct ema_platform *p) { return ((struct mock *)p)->now; }

static int mock_timer(struct ema_platform *p, int64_t at, ema_timer_fn fn, void *arg,
		      struct ema_error *err)
{
	return ema_eventq_push(&((struct mock *)p)->q, at, fn, arg);
}

struct iter_slot { struct mock *m; int gpu; };
static struct iter_slot slots[EMA_MAX_GPUS];

static void mock_fire(void *arg, int64_t now)
{
	struct iter_slot *s = arg;

	s->m->fn[s->gpu](s->m->arg[s->gpu], &s->m->res[s->gpu]);
}

static int mock_iteration(struct ema_platform *p, const struct ema_iteration *it,
			  ema_iteration_fn fn, void *arg, struct ema_error *err)
{
	struct mock *m = (struct mock *)p;
	struct ema_timing c;

	ema_timing_iteration(&m->cfg->hw, &m->cfg->model, it, &c);
	m->res[it->gpu].start_ns = m->now;
	m->res[it->gpu].end_ns = m->now + llround(c.total_ns);
	m->res[it->gpu].stall_ns = 0;
	m->fn[it->gpu] = fn;
	m->arg[it->gpu] = arg;
	slots[it->gpu].m = m;
	slots[it->gpu].gpu = it->gpu;
	return ema_eventq_push(&m->q, m->res[it->gpu].end_ns, mock_fire, &slots[it->gpu]);
}

static int mock_transfer(struct ema_platform *p, const struct ema_transfer *t,
			 ema_transfer_fn fn, void *arg, struct ema_error *err)
{
	struct mock *m = (struct mock *)p;

	m->links.bytes[t->src_gpu + 1][t->dst_gpu + 1] += t->bytes;
	m->links.bytes_by_purpose[t->purpose] += t->bytes;
	return ema_eventq_push(&m->q, m->now + m->xfer_ns, fn, arg);
}

static int mock_run(struct ema_platform *p, int64_t horizon, struct ema_error *err)
{
	struct mock *m = (struct mock *)p;
	struct ema_event ev;

	m->stopped = false;
	while (!m->stopped) {
		/* peek first: a run up to a horizon can be continued */
		if (horizon > 0 && ema_eventq_peek_time(&m->q) > horizon)
			break;
		if (ema_eventq_pop(&m->q, &ev) != 0)
			break;
		m->now = ev.time_ns;
		m->events++;
		ev.fn(ev.arg, ev.time_ns);
	}
	return EMA_OK;
}

static void mock_stop(struct ema_platform *p) { ((struct mock *)p)->stopped = true; }
static uint64_t mock_events(struct ema_platform *p) { return ((struct mock *)p)->events; }
static const struct ema_link_stats *mock_links(struct ema_platform *p) { return &((struct mock *)p)->links; }
static void mock_destroy(struct ema_platform *p)
{
	ema_eventq_destroy(&((struct mock *)p)->q);
	free(p);
}

static const struct ema_platform_ops mock_ops = {
	.name = "mock", .inplace_beside_local = true, .now = mock_now, .timer = mock_timer, .iteration = mock_iteration,
	.transfer = mock_transfer, .run = mock_run, .stop = mock_stop, .events = mock_events,
	.link_stats = mock_links, .destroy = mock_destroy,
};

static struct mock *mock_new(const struct ema_config *cfg)
{
	struct mock *m = calloc(1, sizeof *m);

	m->base.ops = &mock_ops;
	m->cfg = cfg;
	m->xfer_ns = 1000;
	ema_eventq_init(&m->q, 64);
	return m;
}

/* A tiny model and GPU with round numbers: 1e3 FLOP/ns, 1000 B/ns, no
 * overhead; 1e6 parameters (2 MB of weights), KV 256 B per token,
 * activations 512 B per token. */
static void tiny_config(struct ema_config *c, int tenants, double mem_mib)
{
	memset(c, 0, sizeof *c);
	snprintf(c->name, sizeof c->name, "t");
	snprintf(c->source_file, sizeof c->source_file, "test");
	c->seed = 1;
	c->hw.n_gpus = tenants;
	c->hw.gpu_mem_gib = mem_mib / 1024.0;
	c->hw.hbm_read_gbps = 1000;
	c->hw.hbm_efficiency = 1;
	c->hw.peak_tflops = 1;
	c->hw.flops_efficiency = 1;
	c->hw.iter_overhead_us = 0;
	c->hw.link_gbps = 100;
	c->hw.remote_read_gbps = 100;
	c->model.layers = 1;
	c->model.heads = 1;
	c->model.kv_heads = 1;
	c->model.head_dim = 64;
	c->model.hidden = 64;
	c->model.ffn = 0;
	c->model.params_b = 0.001;
	c->model.bytes_per_param = 2;
	c->model.tensor_parallel = 1;
	c->page_mib = 1.0 / 256;    /* 4 KiB pages = 16 tokens = one block */
	c->serving.block_tokens = 16;
	c->serving.max_batch = 256;
	c->serving.max_batch_tokens = 4096;
	c->serving.watermark = 0;
	c->serving.layer_groups = 1;
	c->policy.ideal_factor = 2;
	c->policy.host_gib = 1;
	c->policy.copy_method = EMA_COPY_GATHER;
	c->policy.reclaim_mode = EMA_RECLAIM_AUTO;
	c->n_tenants = tenants;
	for (int i = 0; i < tenants; i++) {
		snprintf(c->tenants[i].name, sizeof c->tenants[i].name, "t%d", i);
		c->tenants[i].gpu = i;
	}
	/* the own knobs of the policies registered (ema_engine_register_policies)
	 * at their defaults, as a configuration file would have them */
	for (int p = 0; ema_policy_table[p] != NULL; p++) {
		void *own = (void *)ema_config_policy_knobs(c, ema_policy_table[p]->name);

		if (own != NULL && ema_policy_table[p]->knob_defaults != NULL)
			memcpy(own, ema_policy_table[p]->knob_defaults, ema_policy_table[p]->knobs_size);
	}
}

/* Sets a double (or, 0 or not, a bool; an int; an enum's index) knob of a policy's own table (policy.NAME.KEY) in c;
 * false when the policy's table is not registered or has no such key. */
static inline bool set_own_knob(struct ema_config *c, const char *policy, const char *key, double v)
{
	const struct ema_policy_ops *ops = ema_policy_find(policy);
	unsigned char *own = (unsigned char *)ema_config_policy_knobs(c, policy);

	if (ops == NULL || own == NULL || ops->knobs == NULL)
		return false;
	for (const struct ema_config_key *k = ops->knobs; k->key != NULL; k++)
		if (strcmp(k->key, key) == 0 && k->type == EMA_CFG_DBL) {
			memcpy(own + k->off, &v, sizeof v);
			return true;
		} else if (strcmp(k->key, key) == 0 && k->type == EMA_CFG_BOOL) {
			bool b = v != 0;

			memcpy(own + k->off, &b, sizeof b);
			return true;
		} else if (strcmp(k->key, key) == 0 &&
			   (k->type == EMA_CFG_INT || k->type == EMA_CFG_ENUM)) {
			int i = (int)v; /* (an enum: the index of its name) */

			memcpy(own + k->off, &i, sizeof i);
			return true;
		}
	return false;
}

static inline struct ema_request_spec spec(int64_t at, int p, int o)
{
	struct ema_request_spec s = {at, p, o};
	return s;
}

#endif
