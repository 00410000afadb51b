#!/bin/sh
# sweep-demo.sh: the sweep checks too long for `make check`, on a tiny
# scenario: a 200-point sweep (10 seeds x 20 loads, 2 policies) with -j 2;
# the same sweep killed with kill -9 half-way through and run again; and
# the same with -j 1. The three sweep.csv (and sweep_stats.csv) must be
# byte-identical. About 10 s on 2 cores; PLOTS=1 draws every point's
# figures in the first sweep (gnuplot: about 2 minutes more).
#
# usage: tools/sweep-demo.sh [EMA_BINARY] [OUT_DIR]   (or: make sweep-demo)
#   EMA_BINARY  the ema program (default: ./ema)
#   OUT_DIR     a folder for the three sweeps (default: a new one under
#               ${TMPDIR:-/tmp}, removed at the end when all went well)
# Exit status 0 when the three agree, 1 otherwise.
set -u

ema=${1:-./ema}
[ -x "$ema" ] || { echo "$0: $ema is not an executable" >&2; exit 2; }
if [ $# -ge 2 ]; then
	out=$2
	mkdir -p "$out" || exit 2
	keep=1
else
	out=$(mktemp -d "${TMPDIR:-/tmp}/ema-sweep-demo.XXXXXX") || exit 2
	keep=0
fi

tiny="--set tenants.0.workload.duration_s=20 --set tenants.1.workload.duration_s=20 --set policies=static,ema"
rates=$(seq -s, 2 1 21)
vary="--vary seed=1,2,3,4,5,6,7,8,9,10 --vary tenants.0.workload.rate_rps=$rates"
status=0

now() { date +%s.%N; }
secs() { echo "$1 $2" | awk '{ printf "%.1f", $2 - $1 }'; }

plots=--no-plots
[ "${PLOTS:-0}" = 1 ] && plots=
echo "sweep-demo: 200 points, -j 2 ${plots:-(with figures)} -> $out/j2"
t0=$(now)
"$ema" sweep -q $plots $tiny $vary -j 2 --out "$out/j2" || status=1
echo "sweep-demo: $(secs "$t0" "$(now)") s"

echo "sweep-demo: the same, killed with kill -9 half-way -> $out/killed"
setsid "$ema" sweep -q --no-plots $tiny $vary -j 2 --out "$out/killed" &
pid=$!
n=0
while [ "$n" -lt 100 ] && kill -0 "$pid" 2>/dev/null; do
	sleep 0.01
	n=$(ls -d "$out/killed"/point-[0-9][0-9][0-9] 2>/dev/null | wc -l)
done
kill -9 "-$pid" 2>/dev/null
wait "$pid" 2>/dev/null
echo "sweep-demo: killed with $n points complete, $(ls "$out/killed" | grep -c '\.tmp-') being written"
t0=$(now)
"$ema" sweep --no-plots $tiny $vary -j 2 --out "$out/killed" 2>&1 | grep -v '^ema: sweep: [0-9]*/[0-9]* done'
echo "sweep-demo: resumed in $(secs "$t0" "$(now)") s"

echo "sweep-demo: the same with -j 1 -> $out/j1"
t0=$(now)
"$ema" sweep -q --no-plots $tiny $vary -j 1 --out "$out/j1" || status=1
echo "sweep-demo: $(secs "$t0" "$(now)") s"

for f in sweep.csv sweep_stats.csv; do
	for d in killed j1; do
		if cmp -s "$out/j2/$f" "$out/$d/$f"; then
			echo "sweep-demo: $d/$f: identical to j2/$f ($(wc -l <"$out/j2/$f") lines)"
		else
			echo "sweep-demo: $d/$f: DIFFERS from j2/$f" >&2
			status=1
		fi
	done
done
[ "$status" -eq 0 ] && [ "$keep" -eq 0 ] && rm -rf "$out"
exit "$status"
