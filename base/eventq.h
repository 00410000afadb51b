/* eventq.h: pending events of a platform (the simulator's clock, the
 * hardware backend's timers), a 4-ary min-heap ordered by
 * (time in ns, insertion sequence) so that ties fire in the order they
 * were scheduled and every run is deterministic. */
#ifndef EMA_EVENTQ_H
#define EMA_EVENTQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef void (*ema_event_fn)(void *arg, int64_t now_ns);

struct ema_event {
	int64_t time_ns;
	uint64_t seq;
	int64_t push_ns;    /* the queue's now_ns when it was pushed */
	ema_event_fn fn;
	void *arg;
};

/* What an event carries besides its time; moved alongside it. */
struct ema_eventq_item {
	uint64_t seq;
	int64_t push_ns;
	ema_event_fn fn;
	void *arg;
};

struct ema_eventq {
	/* The times apart from the rest, so that the four children of a
	 * node share a cache line: time[0] is the root, time[4i+1..4i+4] the
	 * children of i, slots from n on hold INT64_MAX. */
	int64_t *time;
	struct ema_eventq_item *item;  /* item[i] goes with time[i] */
	void *time_mem;                /* what was allocated for time */
	size_t n;
	size_t cap;
	uint64_t next_seq;
	/* The owner's clock, recorded in every event pushed: the simulator
	 * orders a leap of iterations among events of the same time by it
	 * (sim_platform.c). */
	int64_t now_ns;
	/* A pop leaves the root empty until the next operation: a push then
	 * fills it with one sift down instead of a sift down and a sift up
	 * (the simulator pops an event whose callback pushes the next). */
	bool hole;
	struct ema_event top;          /* what ema_eventq_peek() returns */
};

int ema_eventq_init(struct ema_eventq *q, size_t initial_cap);
void ema_eventq_destroy(struct ema_eventq *q);
/* Returns 0, or EMA_ERR_NOMEM (the queue is then as before). */
int ema_eventq_push(struct ema_eventq *q, int64_t time_ns, ema_event_fn fn, void *arg);
/* Removes the earliest event into *ev; returns 0, or 1 when empty. */
int ema_eventq_pop(struct ema_eventq *q, struct ema_event *ev);
static inline size_t ema_eventq_size(const struct ema_eventq *q) { return q->n - q->hole; }
/* Earliest time, or INT64_MAX when empty. */
int64_t ema_eventq_peek_time(struct ema_eventq *q);
/* The earliest event, or NULL when empty; valid until the next call on q. */
const struct ema_event *ema_eventq_peek(struct ema_eventq *q);
/* Takes the next sequence number without pushing: an event that will be
 * ordered as if it had been pushed now. */
static inline uint64_t ema_eventq_take_seq(struct ema_eventq *q)
{
	return q->next_seq++;
}

/* Keeps `pending` events in a queue and does `ops` pop+push pairs (each
 * pushed event lands a pseudo-random, fixed-seed delay after the popped
 * one); *ops_per_s receives pairs per second of wall time. */
int ema_eventq_bench_once(size_t pending, uint64_t ops, double *ops_per_s);
/* The median of five ema_eventq_bench_once() of ops / 5 pairs each, so
 * that a moment of load on a shared machine does not make the figure. */
int ema_eventq_bench(size_t pending, uint64_t ops, double *ops_per_s);

#endif
