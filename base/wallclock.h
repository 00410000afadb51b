/* wallclock.h: wall-clock seconds for progress lines and the wall_s
 * figures of run.json and `ema bench` (never for simulated time). */
#ifndef EMA_WALLCLOCK_H
#define EMA_WALLCLOCK_H

#include <time.h>

/* Seconds on the monotonic clock. */
static inline double ema_wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
