/* simtime.h: the one limit of simulated time and the checked conversion
 * of a duration the cost model computes (a double of ns) into the int64_t
 * ns of the clock. Every time the simulator schedules goes through it, so
 * that a slow enough profile (hbm_read_gbps = 1e-6 reads the weights of an
 * 8B model in 0.7 years a step) ends with an error that says which figure
 * made time run out, never with a clock that wrapped around (which made
 * runs loop forever, end requests in 0 ms or lose them).
 *
 * Times and durations are at most EMA_TIME_MAX_NS, so that the sum of a
 * time and a duration never overflows int64_t. A duration past it (or not
 * a number) saturates to EMA_TIME_PAST: an event there is scheduled but
 * never reached where a horizon stops the run first, and stops the run
 * with ema_time_error's message where it would be reached. */
#ifndef EMA_SIMTIME_H
#define EMA_SIMTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ema_error.h"

/* 2^62 ns, 146.1 years: half the int64_t clock's range. */
#define EMA_TIME_MAX_NS ((int64_t)1 << 62)
#define EMA_TIME_MAX_TEXT "146 years"
/* A time past the limit: scheduled, never dispatched. */
#define EMA_TIME_PAST (EMA_TIME_MAX_NS + 1)

/* ns in years, for messages. */
static inline double ema_time_years(double ns)
{
	return ns / (365.25 * 86400e9);
}

/* A time or a duration for a message: "0.101 s" below a day, "3.2
 * years" from 30 days on, days between. Returns buf. */
const char *ema_time_text(char *buf, size_t size, double ns);

/* ns rounded to the nearest integer (halves up), for 0 <= ns <=
 * EMA_TIME_MAX_NS; EMA_TIME_PAST for more, a NaN or a negative value
 * (the cost model makes none: a negative time is as wrong as a huge
 * one). The fraction ns - trunc(ns) of a double is exact, so this is
 * llround's answer without a call: the simulator times every step. */
static inline int64_t ema_time_ns(double ns)
{
	int64_t r;

	if (!(ns >= 0 && ns <= 0x1p62))
		return EMA_TIME_PAST;
	r = (int64_t)ns;
	return r + (ns - (double)r >= 0.5);
}

/* Whether ns converts (ema_time_ns gives a time within the limit). */
static inline bool ema_time_ns_ok(double ns)
{
	return ns >= 0 && ns <= 0x1p62;
}

/* now + dt for now in [0, EMA_TIME_MAX_NS] and dt >= 0 (EMA_TIME_PAST
 * included): EMA_TIME_PAST where the sum passes the limit. */
static inline int64_t ema_time_after(int64_t now, int64_t dt)
{
	if (dt < 0 || dt > EMA_TIME_MAX_NS - now)
		return EMA_TIME_PAST;
	return now + dt;
}

/* Records "simulated time would pass 146 years (2^62 ns, the limit of
 * its clock): " and the rest, which says what would take that long and
 * the keys that make it so, as an input error (exit status 2). */
int ema_time_error(struct ema_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
