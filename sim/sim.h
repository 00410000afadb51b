/* sim.h: the public side of the simulator beyond base/platform.h: the
 * event-queue benchmark behind `ema bench`, the fluid link model, and the
 * last error of a simulated platform (platform ops return only a code). */
#ifndef EMA_SIM_H
#define EMA_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "eventq.h"
#include "flownet.h"
#include "platform.h"


/* The simulator backend: simulated time, the timing model and the fluid
 * link model, for the server of params->hw (opts unused). */
int ema_sim_platform_create(struct ema_platform **out, const struct ema_platform_params *params,
			    const struct ema_platform_opts *opts, struct ema_error *err);

/* Its entry in the backend table (sim_backend.c). */
extern const struct ema_platform_backend ema_sim_backend;

/* Message of the last failed op of a platform made by
 * ema_sim_platform_create, or "" when none failed. */
const char *ema_sim_platform_last_error(struct ema_platform *p);

#endif
