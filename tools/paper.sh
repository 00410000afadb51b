#!/bin/sh
# paper.sh: the paper's figure set for every published scenario
# (scenarios/published/): a load sweep of the first tenant's rate from
# under- to over-load (0.5x to 2x the scenario's rate, 3 seeds), a
# capacity search under the SLO ttft_p90_ms=2000,tpot_p99_ms=200 over the
# same seeds, and `ema figures` of both. Sweeps resume: running it again
# after a kill goes on where it was.
#
# usage: tools/paper.sh [EMA_BINARY] [OUT_DIR]   (or: make paper)
#   EMA_BINARY  the ema program (default: ./ema)
#   OUT_DIR     default paper/: OUT_DIR/SCENARIO/{load,capacity,figures}
#   JOBS=N      processes at once (default 2)
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
ema=${1:-./ema}
out=${2:-paper}
jobs=${JOBS:-2}
[ -x "$ema" ] || { echo "$0: $ema is not an executable" >&2; exit 2; }
mkdir -p "$out"
for f in "$here"/scenarios/published/*.json; do
	name=$(basename "$f" .json)
	r0=$("$ema" config -c "$f" | awk -F': ' '/"rate_rps"/ { gsub(/,/, "", $2); print $2; exit }')
	rates=$(awk -v r="$r0" 'BEGIN { printf "%.3g,%.3g,%.3g,%.3g,%.3g", 0.5 * r, r, 1.25 * r, 1.5 * r, 2 * r }')
	echo "paper: $name: tenants.0.workload.rate_rps = $rates, seeds 1,2,3"
	mkdir -p "$out/$name"
	"$ema" sweep -q --no-plots -c "$f" --vary seed=1,2,3 --vary tenants.0.workload.rate_rps="$rates" \
		-j "$jobs" --out "$out/$name/load"
	"$ema" sweep -q -c "$f" --max-rate tenants.0.workload.rate_rps \
		--slo ttft_p90_ms=2000,tpot_p99_ms=200 --vary seed=1,2,3 -j "$jobs" --out "$out/$name/capacity"
	"$ema" figures -q "$out/$name/load" "$out/$name/capacity" -o "$out/$name/figures"
done
echo "paper: figures in $out/*/figures/"
