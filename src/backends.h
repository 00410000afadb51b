/* backends.h: the table of platforms a run can use (`--backend NAME`):
 * the simulator and the GPUs, each one entry (struct ema_platform_backend
 * in base/platform.h) defined in its own folder. The experiment and the
 * commands ask an entry's fields and ops, never a backend's name. */
#ifndef EMA_BACKENDS_H
#define EMA_BACKENDS_H

#include <stdio.h>

#include "platform.h"

/* Every backend, in `ema list backends` order, NULL-terminated; the
 * first is the default (the simulator). */
extern const struct ema_platform_backend *const ema_backend_table[];

/* The default backend: the table's first. */
const struct ema_platform_backend *ema_backend_default(void);
/* The backend named `name` in `table` (NULL-terminated), or NULL. */
const struct ema_platform_backend *ema_backend_find_in(const struct ema_platform_backend *const *table,
						       const char *name);
/* The backend named `name` in the program's table, or NULL. */
const struct ema_platform_backend *ema_backend_find(const char *name);
/* The names of `table` as a user reads a choice ("sim or hw", "a, b or
 * c") into buf. */
void ema_backend_names(const struct ema_platform_backend *const *table, char *buf, size_t size);
/* `ema list backends`: one line per backend of `table`, its name, its
 * summary and, where it says, what this machine offers of it. */
void ema_backend_list(FILE *f, const struct ema_platform_backend *const *table);

#endif
