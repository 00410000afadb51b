#!/bin/sh
# snapshot.sh: runs the embedded default scenario and every scenario of
# scenarios/published/ with --no-plots into OUT_DIR and prints one sha256
# line per output file (run.json without its wall-clock fields), so that a
# change meant to keep behaviour can be checked byte for byte:
#     tools/snapshot.sh ./ema /tmp/before > before.sha
#     ... change, rebuild ...
#     tools/snapshot.sh ./ema /tmp/after > after.sha && diff before.sha after.sha
# With SNAPSHOT_TRACE=FILE (the Azure conversation trace) it also runs
# the six 8-tenant replays of `ema bench` (h200x8, llama-3-8b, static and
# ema, without memory pressure, with it, and with every tenant
# overloaded), the heaviest check of leaping:
#     SNAPSHOT_TRACE=../shared/traces/AzureLLMInferenceTrace_conv.csv \
#         tools/snapshot.sh ./ema /tmp/leap > leap.sha
#     EMA_LEAP=0 SNAPSHOT_TRACE=... tools/snapshot.sh ./ema /tmp/step > step.sha
#     diff leap.sha step.sha    (the same but for the folder names)
# usage: tools/snapshot.sh EMA_BINARY OUT_DIR [EXTRA_OPTIONS...]
set -eu
[ $# -ge 2 ] || { echo "usage: $0 EMA_BINARY OUT_DIR [OPTIONS...]" >&2; exit 2; }
ema=$1
out=$2
shift 2
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
run() {
	name=$1
	shift
	[ -e "$out/$name" ] && rm -rf "$out/$name"
	"$ema" run "$@" --out "$out/$name" --quiet --no-plots >/dev/null
}
run default "$@"
for f in "$here"/scenarios/published/*.json; do
	run "$(basename "$f" .json)" --config "$f" "$@"
done
# the bench's replays (src/bench.c, write_scenario): 8 tenants, each on its
# own GPU replaying the trace; under pressure 20 GiB GPUs and t0, t1 (or
# all eight) at 4x
bench_scenario() {
	name=$1 policy=$2 cap=$3 fast=$4 nfast=${5:-2}
	{
		printf '{"name": "%s", "hardware": "h200x8", "model": "llama-3-8b",\n' "$name"
		printf ' "gpu_mem_cap_gib": %s, "policies": ["%s"], "tenants": [\n' "$cap" "$policy"
		for i in 0 1 2 3 4 5 6 7; do
			scale=1
			[ "$i" -lt "$nfast" ] && scale=$fast
			sep=,
			[ "$i" -eq 7 ] && sep=
			printf '  {"name": "t%d", "gpu": %d, "workload": {"source": "trace", "trace": "%s", "format": "azure", "rate_scale": %s}}%s\n' \
				"$i" "$i" "$trace" "$scale" "$sep"
		done
		printf ']}\n'
	} > "$out/$name.json"
}
if [ -n "${SNAPSHOT_TRACE:-}" ]; then
	trace=$(cd "$(dirname "$SNAPSHOT_TRACE")" && pwd)/$(basename "$SNAPSHOT_TRACE")
	bench_scenario static8 static 0 1
	bench_scenario ema8 ema 0 1
	bench_scenario static8p static 20 4
	bench_scenario ema8p ema 20 4
	bench_scenario static8all static 20 4 8
	bench_scenario ema8all ema 20 4 8
	for name in static8 ema8 static8p ema8p static8all ema8all; do
		run "$name" --config "$out/$name.json" "$@"
	done
fi
cd "$out"
for d in */; do
	for f in "$d"*; do
		case $f in
		*/run.json) grep -v '"command"' "$f" | sed -E -e 's/"wall_s": [0-9.]+/"wall_s": X/' -e 's/, "leaps": [0-9]+, "leapt_steps": [0-9]+//' | sha256sum | sed "s|-|$f|" ;;
		*) sha256sum "$f" ;;
		esac
	done
done
