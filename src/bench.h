/* bench.h: `ema bench`, the speed figures of the simulator's targets:
 * event-queue rate, whole-process and simulation time, CPU time and peak
 * memory of full-trace replays run as child processes, and the cost of
 * the ema policy against static on the same runs. */
#ifndef EMA_BENCH_H
#define EMA_BENCH_H

#include "ema_error.h"

int ema_bench_main(int argc, char **argv, struct ema_error *err);

#endif
