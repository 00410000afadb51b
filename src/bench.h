/* bench.h: `ema bench`, the speed figures: event-queue rate, wall time of
 * a full-trace replay on 8 GPUs, and the cost of the ema policy against
 * static on the same run. */
#ifndef EMA_BENCH_H
#define EMA_BENCH_H

#include "ema_error.h"

int ema_bench_main(int argc, char **argv, struct ema_error *err);

#endif
