/* policy_table.c: the one table of policies. Adding a policy is its file
 * in policies/, its declaration and its entry here, its name in
 * policies/local.mk and its tests (doc/policies.md, "Writing a policy"). */
#include <string.h>

#include "policy.h"

extern const struct ema_policy_ops ema_policy_static;
extern const struct ema_policy_ops ema_policy_ideal;
extern const struct ema_policy_ops ema_policy_ideal_kv;
extern const struct ema_policy_ops ema_policy_pooled;
extern const struct ema_policy_ops ema_policy_pooled_tpot;
extern const struct ema_policy_ops ema_policy_host_swap;
extern const struct ema_policy_ops ema_policy_remote_direct;
extern const struct ema_policy_ops ema_policy_ema;

const struct ema_policy_ops *const ema_policy_table[] = {
	&ema_policy_static,
	&ema_policy_pooled,
	&ema_policy_pooled_tpot,
	&ema_policy_ideal,
	&ema_policy_ideal_kv,
	&ema_policy_host_swap,
	&ema_policy_remote_direct,
	&ema_policy_ema,
	NULL,
};

const char *const *ema_policy_names(void)
{
	static const char *names[sizeof ema_policy_table / sizeof ema_policy_table[0]];

	if (names[0] == NULL)
		for (int i = 0; ema_policy_table[i] != NULL; i++)
			names[i] = ema_policy_table[i]->name;
	return names;
}

const struct ema_policy_ops *ema_policy_find(const char *name)
{
	for (int i = 0; ema_policy_table[i] != NULL; i++)
		if (strcmp(ema_policy_table[i]->name, name) == 0)
			return ema_policy_table[i];
	return NULL;
}
