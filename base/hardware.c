/* hardware.c: sizes that follow from a model's shapes, and reading a
 * measured bandwidth curve. */
#include "hardware.h"

#include <math.h>
#include <stddef.h>

const char *const ema_topology_names[] = { "direct", "switch", NULL };

uint64_t ema_model_weight_bytes(const struct ema_model *m)
{
	int tp = m->tensor_parallel > 0 ? m->tensor_parallel : 1;

	return (uint64_t)llround(m->params_b * 1e9 * m->bytes_per_param / tp);
}

uint64_t ema_model_kv_bytes_per_token(const struct ema_model *m)
{
	uint64_t tp = m->tensor_parallel > 0 ? (uint64_t)m->tensor_parallel : 1;

	/* K and V, for every layer and KV head; heads split across TP ranks */
	return 2 * (uint64_t)m->layers * (uint64_t)m->kv_heads *
	       (uint64_t)m->head_dim * (uint64_t)m->bytes_per_param / tp;
}

double ema_curve_gbps(const struct ema_curve_point *c, int n, double bytes)
{
	if (n <= 0)
		return 0.0;
	if (bytes <= c[0].bytes)
		return c[0].gbps;
	if (bytes >= c[n - 1].bytes)
		return c[n - 1].gbps;
	for (int i = 0; i + 1 < n; i++) {
		if (bytes <= c[i + 1].bytes) {
			/* sizes span decades: interpolate in log(bytes) */
			double t = (log(bytes) - log(c[i].bytes)) /
				   (log(c[i + 1].bytes) - log(c[i].bytes));

			return c[i].gbps + t * (c[i + 1].gbps - c[i].gbps);
		}
	}
	return c[n - 1].gbps;
}
