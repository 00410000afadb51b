# policies/local.mk: one file per policy, registered in policy_table.c.
libema_a_SOURCES += policies/policy.h policies/policy_table.c policies/static.c \
	policies/ideal.c policies/host_swap.c policies/remote_direct.c policies/ema.c \
	policies/lending.c policies/lending.h

