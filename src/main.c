/* main.c: the ema command line. The commands and their options are the
 * table of cli.c; this file only prepares the process. */
#include <gsl/gsl_errno.h>
#include <stdlib.h>

#include "cli.h"
#include "config.h"
#include "policy.h"

int main(int argc, char **argv)
{
	gsl_set_error_handler_off();
	if (ema_engine_register_policies(ema_policy_table) != EMA_OK) {
		fprintf(stderr, "ema: the policies' knob tables do not fit the configuration\n");
		return 1;
	}
	/* CUDA loads kernels at their first use by default: on the H200s the
	 * lender's largest prefill waited for new cuBLAS kernels, its TTFT
	 * 107-170 ms against 58-64 with eager loading (simulated: 56). Eager
	 * loading costs ~6 s when a hw run starts; simulator commands make no
	 * CUDA call. A setting of the user's own wins. */
	setenv("CUDA_MODULE_LOADING", "EAGER", 0);
	return ema_cli_main(argc, argv);
}
