/* sim_backend.c: the simulator's entry in the backend table
 * (src/backends.c): its time is simulated, so its runs report how much
 * the core leapt and how long steps waited on contended links; it keeps
 * no page contents, so it needs no page lists and has nothing to verify. */
#include "sim.h"

static void sim_run_json(FILE *f, const struct ema_platform_report *r)
{
	fprintf(f, ", \"leaps\": %llu, \"leapt_steps\": %llu, \"link_wait_s\": %.6f",
		(unsigned long long)r->leaps, (unsigned long long)r->leapt_steps,
		(double)r->links->spread_wait_ns * 1e-9);
}

const struct ema_platform_backend ema_sim_backend = {
	.name = "sim",
	.summary = "the discrete-event simulator of the hardware profile",
	.create = ema_sim_platform_create,
	.run_json = sim_run_json,
};
