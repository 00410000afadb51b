/* ema_limits.h: the fixed sizes every layer shares (GPUs, tenants, policies
 * in one run, names, paths, points of a bandwidth curve), in the lowest
 * layer so that no header needs the configuration to size an array. */
#ifndef EMA_LIMITS_H
#define EMA_LIMITS_H

#define EMA_MAX_GPUS 16
#define EMA_MAX_TENANTS EMA_MAX_GPUS
#define EMA_MAX_POLICIES 16
#define EMA_NAME_MAX 64
#define EMA_PATH_MAX 1024
#define EMA_CURVE_MAX 16
/* Policies with a knob table of their own, and the bytes of each. */
#define EMA_MAX_KNOB_TABLES 8
#define EMA_KNOB_TABLE_BYTES 256
/* Requests one tenant's generated stream may hold (rate_rps x duration_s
 * or max_requests), so that a typo fails at the config check rather than
 * after minutes of generation or an exhausted memory. */
#define EMA_CFG_MAX_REQUESTS 10000000L

#endif
