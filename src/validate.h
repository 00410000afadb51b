/* validate.h: `ema validate`, the same scenario on the simulator and on the
 * GPUs, with the relative error of each figure per tenant and policy. */
#ifndef EMA_VALIDATE_H
#define EMA_VALIDATE_H

#include "ema_error.h"

int ema_validate_main(int argc, char **argv, struct ema_error *err);

#endif
