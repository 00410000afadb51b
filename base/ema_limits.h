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

#endif
