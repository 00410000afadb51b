/* sweep.h: `ema sweep`, the same scenario over every combination of
 * values of one or more keys, each point a full run folder, and one tidy
 * CSV of every point's summary rows with the swept values as columns. */
#ifndef EMA_SWEEP_H
#define EMA_SWEEP_H

#include "ema_error.h"

int ema_sweep_main(int argc, char **argv, struct ema_error *err);

#endif
