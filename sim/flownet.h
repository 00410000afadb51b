/* flownet.h: a fluid model of the transfers between GPUs and the host.
 * Each flow crosses one or two capacity resources (a link per ordered GPU
 * pair for "direct" topologies; an egress and an ingress port per GPU for
 * "switch"; a host link each way per GPU) and gets a max-min fair share of
 * them, recomputed whenever a flow starts or ends. A flow first spends a
 * latency phase that uses no bandwidth (call and launch costs), then moves
 * its bytes, never faster than its own rate cap. Copy-engine flows are
 * limited to copy_engines at a time per driving GPU and queue FIFO.
 *
 * Rates are in GB/s, which is also bytes per ns. Times are ns. */
#ifndef EMA_FLOWNET_H
#define EMA_FLOWNET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hardware.h"
#include "ema_error.h"
#include "platform.h"

/* Launch latency of the SM gather kernel; not in the profile because it
 * is the same for every GPU the project targets. */
#define EMA_FLOWNET_KERNEL_LAUNCH_NS 5000

struct ema_flownet;

/* What one flow costs, as the fluid model sees it. ema_flownet_params
 * derives it from a copy method; tests and special users (in-place remote
 * reads) fill it directly. */
struct ema_flow_params {
	int src;              /* GPU index or EMA_HOST */
	int dst;
	uint64_t bytes;
	int64_t latency_ns;   /* phase before data moves; uses no bandwidth */
	double cap_gbps;      /* the flow's own rate cap; <= 0: none */
	bool copy_engine;     /* takes one of the driving GPU's copy engines */
	/* The bytes go to the destination's SMs, not its HBM (a kernel
	 * reading peer memory in place): they count in the source's HBM
	 * traffic, not in the destination's. */
	bool to_sm;
};

/* Called once per completed flow, in (time, start order). The callback
 * may start new flows (at now_ns) but must not call ema_flownet_advance. */
typedef void (*ema_flownet_done_fn)(void *arg, uint64_t id, uint64_t tag,
				    int64_t now_ns);

/* Validates the profile's topology figures; errors name the profile. */
int ema_flownet_create(struct ema_flownet **out, const struct ema_hw_profile *hw,
		       struct ema_error *err);
void ema_flownet_destroy(struct ema_flownet *net);

/* The cost model of one transfer of n_pages pages (bytes in all) with a
 * copy method; see flownet.c for the equations and how they reproduce
 * doc/reference-figures.md. n_pages <= 1 is a single cudaMemcpyPeerAsync-like copy
 * (gather excepted). Returns EMA_ERR_INPUT for a bad endpoint. */
int ema_flownet_params(const struct ema_flownet *net, int src, int dst,
		       uint64_t bytes, int n_pages, enum ema_copy_method method,
		       struct ema_flow_params *out, struct ema_error *err);

/* Starts a flow at now_ns (>= the last time the net saw); *id (may be
 * NULL) receives its id, which is also its start order. */
int ema_flownet_start(struct ema_flownet *net, int64_t now_ns, int src, int dst,
		      uint64_t bytes, int n_pages, enum ema_copy_method method,
		      uint64_t tag, uint64_t *id, struct ema_error *err);
int ema_flownet_start_params(struct ema_flownet *net, int64_t now_ns,
			     const struct ema_flow_params *p, uint64_t tag,
			     uint64_t *id, struct ema_error *err);

/* Time of the next phase change (a latency ending or a flow finishing),
 * or INT64_MAX when nothing is in flight. Not const: the answer is
 * cached until the flows change. */
int64_t ema_flownet_next_event_time(struct ema_flownet *net);

/* Moves the net to now_ns, completing every flow due by then and calling
 * fn for each (fn may be NULL). */
int ema_flownet_advance(struct ema_flownet *net, int64_t now_ns,
			ema_flownet_done_fn fn, void *arg, struct ema_error *err);

/* Ends the flows of ids[0..n_ids) at now_ns (>= the net's time) without
 * their callbacks: what they had not moved by then never moves, and the
 * others' rates are those of a net without them. *left_bytes (may be
 * NULL) gets the bytes they had left. Returns how many were in flight
 * (ids unknown or finished are skipped). */
int ema_flownet_cancel(struct ema_flownet *net, int64_t now_ns, const uint64_t *ids, int n_ids,
		       double *left_bytes, struct ema_error *err);

/* Current rate of a flow in GB/s: 0 while queued or in its latency phase,
 * -1 when the id is unknown or finished. */
double ema_flownet_rate_gbps(const struct ema_flownet *net, uint64_t id);
/* Bytes per ns leaving (out) and entering (in) a GPU's HBM right now,
 * for interference; in-place reads (to_sm) leave their source's HBM and
 * enter no HBM. */
double ema_flownet_hbm_out_gbps(const struct ema_flownet *net, int gpu);
double ema_flownet_hbm_in_gbps(const struct ema_flownet *net, int gpu);
/* The arrays behind the two above, indexed by GPU: they stay where they
 * are for the flownet's lifetime and always hold its rates of now (for
 * a caller that reads them at every step of a leap). */
const double *ema_flownet_hbm_out_array(const struct ema_flownet *net);
const double *ema_flownet_hbm_in_array(const struct ema_flownet *net);
/* Flows not yet finished, queued ones included. */
int ema_flownet_active(const struct ema_flownet *net);
/* Flows not yet finished, in any phase, from or to gpu's HBM: while there
 * are none and none starts, the network slows no iteration there. */
int ema_flownet_flows_at(const struct ema_flownet *net, int gpu);
/* Copy-engine flows waiting for an engine. */
int ema_flownet_queued(const struct ema_flownet *net);
/* Says which flow would end past the limit of simulated time
 * (simtime.h), naming the profile's keys that set its rate. */
void ema_flownet_describe_late(const struct ema_flownet *net, char *buf, size_t size);
/* Bumped whenever the rates may have changed. */
uint64_t ema_flownet_generation(const struct ema_flownet *net);
/* For tests: compares the incrementally kept state (rates, HBM sums,
 * per-resource fit sums, flow counts, the cached next event) with a full
 * recomputation, bit for bit. Returns the number of mismatches (0: all
 * equal), -1 out of memory; leaves the net as it was. */
int ema_flownet_selfcheck(struct ema_flownet *net);

#endif
