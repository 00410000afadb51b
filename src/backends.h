/* backends.h: the table of platforms a run can use (`--backend NAME`):
 * the simulator and the GPUs, each one entry. */
#ifndef EMA_BACKENDS_H
#define EMA_BACKENDS_H

#include "platform.h"

/* Every backend, in `ema list backends` order, NULL-terminated by name. */
extern const struct ema_platform_backend ema_backend_table[];
/* The backend named `name`, or NULL. */
const struct ema_platform_backend *ema_backend_find(const char *name);

#endif
