# doc/local.mk: the manual (doc/) and the results pages (results/), shipped
# in the distribution. doc/keys.md is listed in config/local.mk, beside the
# program that generates it.
EXTRA_DIST += doc/README.md doc/install.md doc/cli.md doc/configuration.md \
	doc/outputs.md doc/sweeps.md doc/design.md doc/model.md doc/policies.md \
	doc/hardware.md doc/tuning.md doc/limitations.md doc/reference-figures.md \
	results/README.md results/log.md results/h200x2/README.md results/published/README.md \
	results/published/borrow-rule-throughput.md results/planner-kinds.md \
	results/published/lender-max-slowdown.md results/paper/README.md \
	doc/figures/paths-h200x2-llama2-7b.png doc/figures/paths-a100x8-opt30b.png
