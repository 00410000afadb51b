/* gen_keys.c: writes the key reference (doc/keys.md) to stdout from the
 * key tables of config/ and the own knob tables of the shipped policies
 * (policy.NAME.KEY, registered as the program registers them); `make
 * keys-doc` runs it into the source tree, and tests/test_keys compares
 * its text with the committed file. */
#include <stdio.h>

#include "config.h"
#include "ema_error.h"
#include "engine.h"

int main(void)
{
	struct ema_error err = { 0 };
	int rc = ema_engine_register_policies(ema_policy_table);

	if (rc == EMA_OK)
		rc = ema_config_write_reference(stdout, &err);
	else
		ema_error_set(&err, rc, "the policies' knob tables do not fit");

	if (rc != EMA_OK) {
		fprintf(stderr, "gen_keys: %s\n", err.msg);
		return ema_status_exit(rc);
	}
	return 0;
}
