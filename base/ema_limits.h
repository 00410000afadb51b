/* ema_limits.h: the fixed sizes every layer shares (GPUs, tenants, policies
 * in one run, names, paths, points of a bandwidth curve), in the lowest
 * layer so that no header needs the configuration to size an array. */
#ifndef EMA_LIMITS_H
#define EMA_LIMITS_H

/* GPUs of one server or NVLink domain: 72, a GB200 NVL72's switch domain
 * (issue 36), rather than 128: the per-pair tables (the ledger's
 * borrowed pages, ema's memo and paths, a step's bytes by link) grow
 * with its square, 5184 entries rather than 16384, while a set of GPUs
 * (gpuset.h) takes two 64-bit words either way. */
#define EMA_MAX_GPUS 72
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
/* Tokens of one prompt or one output, from a generator, a trace or the
 * configuration's length keys (one figure for all three, so that a value
 * the key reference allows is one the generators and readers accept): a
 * request's prompt + output stays far inside int32_t. */
#define EMA_MAX_TOKENS 10000000L
/* Pages of one pool: a GPU's (its memory, times ideal's factor, over the
 * page size) or a GPU's share of host memory (policy.host_gib). Sixteen
 * pools of a GPU and sixteen of host memory number at most 2^31 pages;
 * past 16 GPUs the engine also checks the sum over the configured GPUs
 * (ema_engine_check_limits), so that every page number and every sum of
 * page counts over the GPUs fits the int32_t the ledger and the engine
 * count in; the ledger's six bytes a page make 384 MiB for a full pool.
 * Larger memories need a larger page_mib (the engine checks it before
 * anything runs). */
#define EMA_MAX_POOL_PAGES (1L << 26)

#endif
