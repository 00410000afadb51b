/* knobs.c: the names of the knobs' choices, in enum order. */
#include "knobs.h"

#include <stddef.h>

const char *const ema_copy_method_names[] = { "gather", "batch", "per_page", NULL };
const char *const ema_reclaim_mode_names[] = { "auto", "move", "host", "drop", NULL };
const char *const ema_remote_path_names[] = { "inplace", "staged", "auto", "compute", NULL };
const char *const ema_oversize_mode_names[] = { "drop", "yield", "wait", NULL };
