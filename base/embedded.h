/* embedded.h: data files compiled into the program by tools/embed.sh
 * (hardware profiles, models, the default scenario, gnuplot scripts). */
#ifndef EMA_EMBEDDED_H
#define EMA_EMBEDDED_H

#include <stddef.h>

struct ema_embedded {
	const char *name;   /* file's basename, e.g. "h200x2.json" */
	const char *data;   /* NUL-terminated */
	size_t len;         /* bytes, without the NUL */
};

/* Finds name in a table ending with a NULL name; NULL when absent. */
const struct ema_embedded *ema_embedded_find(const struct ema_embedded *table,
					     const char *name);

#endif
