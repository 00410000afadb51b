/* backends.c: the one table of backends. A new platform is a folder that
 * implements base/platform.h's ops and one line here. */
#include "backends.h"

#include <string.h>

#include "hw.h"
#include "sim.h"

const struct ema_platform_backend ema_backend_table[] = {
	{ "sim", "the discrete-event simulator of the hardware profile", ema_sim_platform_create },
	{ "hw", "the GPUs of this machine (CUDA)", ema_hw_platform_create },
	{ NULL, NULL, NULL },
};

const struct ema_platform_backend *ema_backend_find(const char *name)
{
	for (int i = 0; ema_backend_table[i].name != NULL; i++)
		if (strcmp(ema_backend_table[i].name, name) == 0)
			return &ema_backend_table[i];
	return NULL;
}
