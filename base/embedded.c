/* embedded.c: lookup in the tables that tools/embed.sh generates. */
#include "embedded.h"

#include <string.h>

const struct ema_embedded *ema_embedded_find(const struct ema_embedded *table,
					     const char *name)
{
	for (; table->name != NULL; table++)
		if (strcmp(table->name, name) == 0)
			return table;
	return NULL;
}
