# doc/local.mk: the manual (doc/) and the results pages (results/), shipped
# in the distribution. doc/keys.md is listed in config/local.mk, beside the
# program that generates it.
EXTRA_DIST += doc/README.md doc/install.md doc/cli.md doc/configuration.md \
	doc/outputs.md doc/sweeps.md doc/design.md doc/model.md doc/policies.md \
	doc/hardware.md doc/tuning.md doc/limitations.md doc/reference-figures.md \
	results/README.md results/log.md results/h200x2/README.md results/published/README.md \
	results/published/borrow-rule-throughput.md results/planner-kinds.md \
	results/published/lender-max-slowdown.md results/paper/README.md \
	doc/figures/paths-h200x2-llama2-7b.png doc/figures/paths-a100x8-opt30b.png \
	results/published/load-sweep.md results/published/load-sweep-guards-off.md \
	results/published/load-sweep-lender-cap.md results/published/model-error.md \
	results/rack/README.md results/rack/rack.csv results/rack/rack.png results/rack/rack.pdf \
	$(RESULTS_PAPER_FIGURES)
# the files results/paper/README.md shows and links to
RESULTS_PAPER_FIGURES = results/paper/a100x4_40gb_llama2_13b/capacity.csv \
	results/paper/a100x4_40gb_llama2_13b/capacity.png \
	results/paper/a100x4_40gb_llama2_13b/lender_paired.png \
	results/paper/a100x4_40gb_llama2_13b/lender_slowdown.png \
	results/paper/a100x4_40gb_llama2_13b/memory.png \
	results/paper/a100x4_40gb_llama2_13b/pct_of_ideal.png \
	results/paper/a100x4_40gb_llama2_13b/reclaim_cdf.png \
	results/paper/a100x4_40gb_llama2_13b/throughput.png \
	results/paper/a100x4_40gb_llama2_13b/tpot.png \
	results/paper/a100x4_40gb_llama2_13b/ttft.png
