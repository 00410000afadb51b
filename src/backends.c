/* backends.c: the one table of backends. A new platform is a folder that
 * implements base/platform.h's ops and its struct ema_platform_backend,
 * and one line here. */
#include "backends.h"

#include <string.h>

#include "hw.h"
#include "sim.h"

const struct ema_platform_backend *const ema_backend_table[] = {
	&ema_sim_backend,
	&ema_hw_backend,
	NULL,
};

const struct ema_platform_backend *ema_backend_default(void)
{
	return ema_backend_table[0];
}

const struct ema_platform_backend *ema_backend_find_in(const struct ema_platform_backend *const *table,
						       const char *name)
{
	for (int i = 0; table[i] != NULL; i++)
		if (strcmp(table[i]->name, name) == 0)
			return table[i];
	return NULL;
}

const struct ema_platform_backend *ema_backend_find(const char *name)
{
	return ema_backend_find_in(ema_backend_table, name);
}

void ema_backend_names(const struct ema_platform_backend *const *table, char *buf, size_t size)
{
	size_t len = 0;

	if (size == 0)
		return;
	buf[0] = '\0';
	for (int i = 0; table[i] != NULL && len < size; i++) {
		int n = snprintf(buf + len, size - len, "%s%s",
				 i == 0 ? "" : table[i + 1] != NULL ? ", " : " or ", table[i]->name);

		if (n < 0)
			break;
		len += (size_t)n;
	}
}

void ema_backend_list(FILE *f, const struct ema_platform_backend *const *table)
{
	for (int i = 0; table[i] != NULL; i++) {
		const struct ema_platform_backend *b = table[i];

		fprintf(f, "%-6s %s", b->name, b->summary);
		if (b->here != NULL) {
			char here[EMA_ERROR_MSG_MAX + 64];

			b->here(here, sizeof here);
			fprintf(f, "; here: %s", here);
		}
		fputc('\n', f);
	}
}
