#!/bin/sh
# test_sweep.sh: end-to-end tests of `ema sweep` as a user running long
# sweeps would check them: a sweep killed with kill -9 at some moment
# leaves no partial point, and the same command then finishes it with
# results byte-identical to an uninterrupted run; a changed configuration
# is refused rather than mixed; `ema sweep merge` builds the tables from
# the complete points and lists the missing ones. Run by Automake's
# harness from the build folder (./ema) with EMA_SRCDIR set; exit 0 pass,
# 1 fail, 77 skip, 99 error.
# Option lists ($TINY, $CMD) are split into words on purpose.
# shellcheck disable=SC2086,SC2012

EMA=${EMA:-./ema}
if [ ! -x "$EMA" ]; then
	echo "test_sweep.sh: $EMA is not an executable (run from the build folder or set EMA)" >&2
	exit 99
fi
EMA=$(cd "$(dirname "$EMA")" && pwd)/$(basename "$EMA")

T=$(mktemp -d "${TMPDIR:-/tmp}/ema-sweep.XXXXXX") || exit 99
bg=
cleanup() {
	[ -n "$bg" ] && kill -9 "$bg" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM
mkdir "$T/cwd" "$T/log" || exit 99
cd "$T/cwd" || exit 99

passed=0
failed=0
pass() { passed=$((passed + 1)); }
fail() {
	failed=$((failed + 1))
	echo "FAIL: $*"
}
check() {
	d=$1
	shift
	if "$@"; then pass; else fail "$d"; fi
}
# ema ARGS...: stdout and stderr to $T/log/out and $T/log/err, status in $rc.
ema() {
	"$EMA" "$@" >"$T/log/out" 2>"$T/log/err"
	rc=$?
}
same_file() { cmp -s "$1" "$2"; }
# listing DIR: the names in DIR and their sizes, to tell that nothing moved
listing() { (cd "$1" && find . -type f | sort | xargs ls -l | awk '{ print $5, $9 }'); }

# A tiny scenario: 2 policies, a few seconds of arrivals, no figures.
TINY="--set tenants.0.workload.duration_s=30 --set tenants.1.workload.duration_s=30 --set policies=static,ema"
# 40 points: long enough (a second or more) to be killed in the middle.
VARY="--vary seed=1,2,3,4,5,6,7,8 --vary tenants.0.workload.rate_rps=4,6,8,10,12"
CMD="sweep --quiet --no-plots $TINY $VARY"

# ---- the reference: one uninterrupted run, in one process --------------------

ema $CMD -j 1 --out ref
check "reference sweep: exit 0 ($(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]
check "reference sweep: 40 points" [ "$(ls -d ref/point-* | wc -l)" -eq 40 ]
check "reference sweep: 40 x 2 x 2 rows" [ "$(($(wc -l <ref/sweep.csv) - 1))" -eq 160 ]
check "reference sweep: a manifest" grep -q '"sha256": "' ref/sweep.json
# the hash in a point is that of its config.json, as sha256sum computes it
if command -v sha256sum >/dev/null 2>&1; then
	check "point-007/config.sha256: sha256sum -c agrees" \
		sh -c 'cd ref/point-007 && sha256sum -c --quiet config.sha256'
	check "point-007's hash is the manifest's" \
		grep -qF "\"point\": 7, \"sha256\": \"$(cut -c1-64 ref/point-007/config.sha256)\"" ref/sweep.json
fi

# ---- a pool of processes: the same bytes ------------------------------------------

ema $CMD -j 2 --out j2
check "-j 2: exit 0 ($(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]
check "-j 2: sweep.csv byte-identical to -j 1's" same_file ref/sweep.csv j2/sweep.csv
check "-j 2: sweep_stats.csv too" same_file ref/sweep_stats.csv j2/sweep_stats.csv
check "-j 2: every point's summary.csv and requests.csv too" \
	sh -c 'for p in ref/point-*; do for f in summary.csv requests.csv timeline.csv; do
		cmp -s "$p/$f" "j2/${p#ref/}/$f" || exit 1; done; done'
# progress: a line per point, then the result on stdout
ema sweep --no-plots $TINY --vary seed=1,2,3 -j 2 --out prog
check "progress: the plan" grep -qxF "ema: sweep prog: 3 points, 0 complete, 3 to run in 2 processes" "$T/log/err"
check "progress: a line per point" [ "$(grep -c '^ema: sweep: [1-3]/3 done, point-00[0-2] (' "$T/log/err")" -eq 3 ]
check "progress: the result line" grep -qF "sweep: 3 points (3 run now), results in prog/" "$T/log/out"
ema sweep --quiet --no-plots $TINY --vary seed=1,2 -j 0 --out badj
check "-j 0: exit 2" [ "$rc" -eq 2 ]
check "-j 0: says what it expects" grep -qF -- "--jobs 0: expected a number of processes from 1 to 1024" "$T/log/err"

# ---- kill -9 in the middle, then the same command ---------------------------------

# A process of its own group (setsid), so that kill -9 reaches every
# process of the sweep at once, as a node crash or an OOM kill would.
if command -v setsid >/dev/null 2>&1; then
	setsid "$EMA" $CMD -j 2 --out sw >"$T/log/bg.out" 2>"$T/log/bg.err" &
	bg=$!
	group=-$bg
else
	"$EMA" $CMD -j 2 --out sw >"$T/log/bg.out" 2>"$T/log/bg.err" &
	bg=$!
	group=$bg
fi
# wait for a few complete points (at most 30 s), then kill
i=0
while [ "$i" -lt 600 ] && [ "$(ls -d sw/point-[0-9][0-9][0-9] 2>/dev/null | wc -l)" -lt 3 ]; do
	sleep 0.05
	i=$((i + 1))
done
kill -9 "$group" 2>/dev/null
wait "$bg" 2>/dev/null
bg=
complete=$(ls -d sw/point-[0-9][0-9][0-9] 2>/dev/null | wc -l)
check "killed sweep: some points complete ($complete)" [ "$complete" -ge 3 ]
if [ "$complete" -lt 40 ]; then
	pass
else
	echo "note: the sweep ended before the kill; the resume below is not of a killed sweep"
fi
# no partial point visible: every point folder is whole and checks
bad=
for p in sw/point-[0-9][0-9][0-9]; do
	for f in summary.csv requests.csv timeline.csv links.csv transfers.csv config.json run.json config.sha256; do
		[ -s "$p/$f" ] || bad="$bad $p/$f"
	done
	if command -v sha256sum >/dev/null 2>&1; then
		(cd "$p" && sha256sum -c --quiet config.sha256 >/dev/null 2>&1) || bad="$bad $p/config.sha256"
	fi
done
check "killed sweep: every visible point is whole (missing or bad:$bad)" [ -z "$bad" ]
check "killed sweep: no sweep.csv before the end" [ ! -e sw/sweep.csv ]
# the same command: the complete points are kept, the others run
ema $CMD --out sw
check "resumed sweep: exit 0 ($(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]
check "resumed sweep: ran only the missing points ($(cat "$T/log/out"))" \
	grep -qF "($((40 - complete)) run now)" "$T/log/out"
check "resumed sweep: sweep.csv byte-identical to the uninterrupted run's" same_file ref/sweep.csv sw/sweep.csv
check "resumed sweep: sweep_stats.csv too" same_file ref/sweep_stats.csv sw/sweep_stats.csv
check "resumed sweep: every point's requests.csv too" \
	sh -c 'for p in ref/point-*; do cmp -s "$p/requests.csv" "sw/${p#ref/}/requests.csv" || exit 1; done'
check "resumed sweep: no temporary folder left ($(ls sw | grep tmp | tr '\n' ' '))" \
	[ -z "$(ls sw | grep '\.tmp-')" ]

# ---- SIGTERM to the sweep: its workers remove their points and go too ------------

"$EMA" $CMD -j 2 --out term >"$T/log/bg.out" 2>"$T/log/bg.err" &
bg=$!
i=0
while [ "$i" -lt 600 ] && [ "$(ls -d term/point-[0-9][0-9][0-9] 2>/dev/null | wc -l)" -lt 2 ]; do
	sleep 0.05
	i=$((i + 1))
done
kill -TERM "$bg"
wait "$bg"
st=$?
bg=
if [ "$(ls -d term/point-[0-9][0-9][0-9] | wc -l)" -lt 40 ]; then
	check "SIGTERM: the sweep dies of it (status $st)" [ "$st" -eq 143 ]
	# the workers got the signal: within 5 s no point is being written
	i=0
	while [ "$i" -lt 100 ] && [ -n "$(ls term | grep '\.tmp-')" ]; do
		sleep 0.05
		i=$((i + 1))
	done
	check "SIGTERM: no unfinished point left ($(ls term | grep tmp | tr '\n' ' '))" \
		[ -z "$(ls term | grep '\.tmp-')" ]
	n=$(ls -d term/point-[0-9][0-9][0-9] | wc -l)
	sleep 0.3
	check "SIGTERM: no worker goes on writing points" [ "$(ls -d term/point-[0-9][0-9][0-9] | wc -l)" -eq "$n" ]
else
	echo "note: the sweep ended before SIGTERM; not checked"
fi

# ---- a leftover of a killed point, a point removed -------------------------------

sh -c : &
dead=$!
wait "$dead"
rm -rf sw/point-013
mkdir "sw/point-013.tmp-$dead"
touch "sw/point-013.tmp-$dead/summary.csv"
ema sweep merge sw
check "merge with a point missing: exit 1, the sweep is not whole ($(tail -1 "$T/log/err"))" [ "$rc" -eq 1 ]
check "merge with a point missing: says so" grep -qF "1 of 40 points missing" "$T/log/err"
check "merge: says 39 of 40" grep -qF "39 of 40 points" "$T/log/out"
check "merge: lists the missing point with its values" \
	grep -qF "point-013: seed=3 tenants.0.workload.rate_rps=10" "$T/log/err"
check "merge: 39 x 4 rows" [ "$(($(wc -l <sw/sweep.csv) - 1))" -eq 156 ]
check "merge: no row of the missing point" [ -z "$(awk -F, '$3 == 13' sw/sweep.csv)" ]
check "merge: the leftover is left alone" [ -d "sw/point-013.tmp-$dead" ]
ema $CMD --out sw
check "resume after a removed point: exit 0" [ "$rc" -eq 0 ]
check "resume: removes the leftover with a note" \
	grep -qF "removing leftover sw/point-013.tmp-$dead from a run that was killed" "$T/log/err"
check "resume: ran 1 point" grep -qF "(1 run now)" "$T/log/out"
check "resume: sweep.csv identical again" same_file ref/sweep.csv sw/sweep.csv

# ---- a changed configuration is refused, not mixed ------------------------------------

listing sw >"$T/log/before"
# refused: exit 2, a message naming what changed, nothing written
refused() {
	name=$1
	want=$2
	shift 2
	ema "$@"
	check "$name: exit 2 (got $rc)" [ "$rc" -eq 2 ]
	if grep -qF -- "$want" "$T/log/err"; then pass; else fail "$name: stderr lacks \"$want\": $(cat "$T/log/err")"; fi
	listing sw >"$T/log/after"
	check "$name: nothing written" same_file "$T/log/before" "$T/log/after"
}
refused "another --set" "--out sw: the sweep's configuration changed since the folder was made" \
	$CMD --set serving.max_batch=64 --out sw
refused "other values" "--out sw: holds another sweep" \
	sweep --quiet --no-plots $TINY --vary seed=1,2 --out sw
refused "a folder that is not a sweep" "--out ref/point-000: already exists and cannot be resumed" \
	$CMD --out ref/point-000
# the scenario file edited between two runs
"$EMA" config $TINY >scen.json
ema sweep --quiet --no-plots -c scen.json --vary seed=1,2 --out fromfile
check "sweep from a file: exit 0" [ "$rc" -eq 0 ]
sed 's/"max_batch": 256/"max_batch": 32/' scen.json >scen2.json && mv scen2.json scen.json
ema sweep --quiet --no-plots -c scen.json --vary seed=1,2 --out fromfile
check "edited scenario: exit 2 (got $rc)" [ "$rc" -eq 2 ]
check "edited scenario: says the configuration changed" grep -qF "configuration changed" "$T/log/err"
# a --set that leaves the effective configuration as it was is the same sweep
ema $CMD --set tenants.0.gpu=0 --out sw
check "a --set that changes nothing: resumed, exit 0 ($(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]
check "a --set that changes nothing: nothing run" grep -qF "(0 run now)" "$T/log/out"
# a point from elsewhere in the folder
cp ref/point-001/config.sha256 sw/point-002/config.sha256
refused "a point of another configuration" "sw/point-002: made from another configuration" \
	$CMD --out sw
cp ref/point-002/config.sha256 sw/point-002/config.sha256

# ---- the default folder is named after the sweep --------------------------------------

ema sweep --quiet --no-plots $TINY --vary seed=1,2
check "default folder: exit 0" [ "$rc" -eq 0 ]
first=$(ls runs)
check "default folder: runs/sweep-ID ($first)" sh -c "echo '$first' | grep -qxE 'sweep-[0-9a-f]{8}'"
ema sweep --quiet --no-plots $TINY --vary seed=1,2
check "default folder: the same command resumes it" [ "$(ls runs)" = "$first" ]
ema sweep --quiet --no-plots $TINY --vary seed=1,3
check "default folder: another sweep gets another" [ "$(ls runs | wc -l)" -eq 2 ]

# ---- shards ---------------------------------------------------------------------------

# three shards, in any order, then the merge: the reference's tables
SMALL="--vary seed=1,2,3 --vary tenants.0.workload.rate_rps=4,8"
ema sweep --quiet --no-plots $TINY $SMALL -j 1 --out small
for i in 2 0 1; do
	ema sweep --quiet --no-plots $TINY $SMALL --shard "$i/3" --out sh
	check "--shard $i/3: exit 0 ($(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]
done
check "--shard: shard 1/3 ran points 1 and 4" grep -qF "shard 1/3: 2 points run now" "$T/log/out"
check "--shard: no tables before the merge" [ ! -e sh/sweep.csv ]
ema sweep merge sh
check "--shard then merge: sweep.csv identical to one run's" same_file small/sweep.csv sh/sweep.csv
rm -rf sh
# the shard from Slurm's variables (an array 1-3: SLURM_ARRAY_TASK_MIN=1)
SLURM_ARRAY_TASK_ID=2 SLURM_ARRAY_TASK_COUNT=3 SLURM_ARRAY_TASK_MIN=1 \
	"$EMA" sweep --no-plots $TINY $SMALL --out sh >"$T/log/out" 2>"$T/log/err"
check "SLURM_ARRAY_TASK_ID=2 of 1-3: shard 1/3 ($(head -1 "$T/log/err"))" \
	grep -qF "shard 1/3 (SLURM_ARRAY_TASK_ID=2 of SLURM_ARRAY_TASK_COUNT=3)" "$T/log/err"
check "SLURM_ARRAY_TASK_ID=2 of 1-3: points 1 and 4" [ "$(ls sh | grep -c '^point-00[14]$')" -eq 2 ]
check "SLURM_ARRAY_TASK_ID=2 of 1-3: only those" [ "$(ls sh | grep -c '^point-')" -eq 2 ]
SLURM_ARRAY_TASK_ID=2 SLURM_ARRAY_TASK_COUNT=3 \
	"$EMA" sweep --quiet --no-plots $TINY $SMALL --shard 0/1 --out sh >"$T/log/out" 2>&1
check "--shard 0/1 overrides Slurm's: every point" [ "$(ls sh | grep -c '^point-')" -eq 6 ]
rm -rf sh
for bad in 3/3 -1/2 1 a/b 1/0 "1/2x"; do
	ema sweep --quiet --no-plots $TINY $SMALL --shard "$bad" --out sh
	check "--shard $bad: exit 2 (got $rc)" [ "$rc" -eq 2 ]
	check "--shard $bad: nothing written" [ ! -e sh ]
done
SLURM_ARRAY_TASK_ID=5 SLURM_ARRAY_TASK_COUNT=3 \
	"$EMA" sweep --quiet --no-plots $TINY $SMALL --out sh >"$T/log/out" 2>"$T/log/err"
check "SLURM_ARRAY_TASK_ID past the count: exit 2, says so" \
	grep -qF "SLURM_ARRAY_TASK_ID=5 with SLURM_ARRAY_TASK_COUNT=3" "$T/log/err"
ema sweep --quiet $TINY $SMALL --tasks 3 --out sh
check "--tasks without --sbatch: exit 2" [ "$rc" -eq 2 ]

# ---- --sbatch: the script, run here as Slurm would ---------------------------------------

ema sweep --quiet --no-plots $TINY $SMALL --sbatch job.sh --tasks 2 --out sb
check "--sbatch: exit 0 ($(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]
check "--sbatch: says what it wrote" grep -qF "wrote job.sh: 6 points in 2 array tasks of at most 3 (at most 2 at once)" "$T/log/out"
check "--sbatch: a script sh can read" sh -n job.sh
check "--sbatch: --array=0-1%2" grep -qx '#SBATCH --array=0-1%2' job.sh
check "--sbatch: the trial ran the first and last points only" \
	[ "$(ls sb | grep '^point-' | tr '\n' ' ')" = "point-000 point-005 " ]
# the submission, with an sbatch that records what it is asked
mkdir fakebin
printf '%s\n' '#!/bin/sh' 'echo "$*" >>"$SBATCH_LOG"' 'n=$(wc -l <"$SBATCH_LOG")' \
	'echo "$((100 + n));cluster"' >fakebin/sbatch
chmod +x fakebin/sbatch
SBATCH_LOG=$T/log/sbatch PATH=$T/cwd/fakebin:$PATH sh job.sh --partition=cpu >"$T/log/out" 2>&1
check "sh job.sh: submits both ($(cat "$T/log/out"))" \
	grep -qxF "submitted array job 101 (2 tasks) and merge job 102 after it" "$T/log/out"
check "sh job.sh: the array, with the user's options" \
	grep -qE "^--parsable --partition=cpu .*job.sh$" "$T/log/sbatch"
check "sh job.sh: the merge after every task" \
	grep -qF -- "--parsable --partition=cpu --dependency=afterany:101 " "$T/log/sbatch"
check "sh job.sh: the merge runs ema sweep merge, without figures as the sweep" \
	grep -qF "sweep merge --no-plots '" "$T/log/sbatch"
# the two tasks, as Slurm would start them, then the merge
for i in 1 0; do
	SLURM_ARRAY_TASK_ID=$i SLURM_ARRAY_TASK_COUNT=2 SLURM_ARRAY_TASK_MIN=0 sh job.sh >"$T/log/out" 2>&1
	check "task $i: exit 0 ($(tail -1 "$T/log/out"))" [ $? -eq 0 ]
done
ema sweep merge sb
check "the tasks then the merge: the tables of one run" same_file small/sweep.csv sb/sweep.csv
ema sweep --quiet --no-plots $TINY $SMALL --sbatch job2.sh --out sb
check "--sbatch on a complete sweep: says so" grep -qF "all 6 points of sb are complete" "$T/log/out"
check "--sbatch on a complete sweep: no script" [ ! -e job2.sh ]
ema sweep --quiet --no-plots $TINY $SMALL --sbatch nosuch/job.sh --out sb2
check "--sbatch nosuch/job.sh: exit 2, before anything" [ "$rc" -eq 2 ]
check "--sbatch nosuch/job.sh: nothing written" [ ! -e sb2 ]

# ---- capacity under an SLO -------------------------------------------------------------

CAP="--max-rate tenants.0.workload.rate_rps --slo ttft_p90_ms=2000,tpot_p99_ms=200 --vary seed=1,2"
ema sweep --quiet $TINY $CAP -j 2 --out cap
check "--max-rate: exit 0 ($(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]
check "--max-rate: capacity.csv, units in the column names" \
	grep -q '^policy,seeds,max_rate_rps_mean,max_rate_rps_sd,max_rate_rps_gmean,max_rate_rps_ci95_low,max_rate_rps_ci95_high,' cap/capacity.csv
check "--max-rate: a row per policy" [ "$(cut -d, -f1 cap/capacity.csv | tr '\n' ' ')" = "policy static ema " ]
cp cap/capacity.csv cap1.csv
probes=$(ls cap/probes | wc -l)
ema sweep --quiet $TINY $CAP -j 1 --out cap
check "--max-rate again, -j 1: the same capacity.csv" same_file cap1.csv cap/capacity.csv
check "--max-rate again: no probe run twice" [ "$(ls cap/probes | wc -l)" -eq "$probes" ]
# by hand: at the rate met every tenant completes within the targets, at
# the rate missed one does not, and the two are within 2% of each other
slo_ok() {
	awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		{ if ($c["completed"] != $c["requests"] || $c["ttft_p90_ms"] == "" || $c["ttft_p90_ms"] > 2000 ||
		      $c["tpot_p99_ms"] == "" || $c["tpot_p99_ms"] > 200) bad = 1 }
		END { exit bad }' "$1"
}
line=$(awk -F, '$1 == 2 && $2 == "ema"' cap/capacity_seeds.csv)
met=$(echo "$line" | cut -d, -f3)
missed=$(echo "$line" | cut -d, -f4)
"$EMA" run -q --no-plots $TINY --seed 2 --set policies=ema --set tenants.0.workload.rate_rps="$met" --out at_met >/dev/null 2>&1
"$EMA" run -q --no-plots $TINY --seed 2 --set policies=ema --set tenants.0.workload.rate_rps="$missed" --out at_missed >/dev/null 2>&1
check "--max-rate: ema, seed 2, at $met req/s: every target met" slo_ok at_met/summary.csv
if slo_ok at_missed/summary.csv; then fail "--max-rate: the rate missed meets the SLO"; else pass; fi
check "--max-rate: met and missed within 2% ($met, $missed)" \
	awk -v a="$met" -v b="$missed" 'BEGIN { exit !(b > a && b - a <= 0.02 * a) }'
# the interval over the 2 seeds holds the mean (of zero width when both
# seeds' bisections end on the same probe, as ema's do with its TPOT budget)
check "--max-rate: the interval around the geometric mean" \
	awk -F, '$1 == "ema" { exit !($6 <= $5 && $5 <= $7 && $6 > 0) }' cap/capacity.csv
for bad in "--max-rate tenants.0.workload.rate_rps" \
	"--max-rate tenants.0.workload.rate_rps --slo nosuch_ms=3" \
	"--max-rate tenants.0.workload.rate_rps --slo ttft_p90_ms=-1" \
	"--max-rate tenants.0.workload.rate_rps=5,3 --slo ttft_p90_ms=1" \
	"--max-rate tenants.0.workload.nosuch --slo ttft_p90_ms=1" \
	"--max-rate tenants.0.workload.rate_rps --slo ttft_p90_ms=1 --resolution 0" \
	"--max-rate tenants.0.workload.rate_rps --slo ttft_p90_ms=1 --vary tenants.0.workload.rate_rps=1,2" \
	"--slo ttft_p90_ms=1 --vary seed=1,2"; do
	ema sweep --quiet $TINY $bad --out badcap
	check "$bad: exit 2 (got $rc)" [ "$rc" -eq 2 ]
	check "$bad: nothing written" [ ! -e badcap ]
done

# ---- figures -------------------------------------------------------------------------

if command -v gnuplot >/dev/null 2>&1; then
	# a load sweep over seeds: the full set, each figure naming the
	# scenario as run and how many seeds a value stands for
	ema sweep --quiet $TINY --set policies=static,ideal,ema --vary seed=1,2 \
		--vary tenants.0.workload.rate_rps=8,12,16 --out fig
	check "figures: exit 0 ($(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]
	for f in throughput pct_of_ideal ttft tpot lender_slowdown lender_paired memory; do
		check "figures: $f.pdf and $f.png" [ -s "fig/figures/$f.pdf" ] && [ -s "fig/figures/$f.png" ]
	done
	check "figures: no point's own plots/ unless --point-plots" [ ! -e fig/point-000/plots ]
	check "figures: every spec names the scenario as run, --set and all" \
		[ -z "$(grep -L '^figtitle = .*scenario default + tenants.0.workload.duration_s=30, tenants.1.workload.duration_s=30' fig/figures/*.spec.gp)" ]
	check "figures: every title says n" [ -z "$(grep -L '^figtitle = .*n = ' fig/figures/*.spec.gp)" ]
	check "figures: the memory figure says n" grep -q "one run (n = 1)" fig/figures/render.sh
	check "figures: units in every axis label" \
		[ -z "$(grep -hE '^(ylab|xlab) = ' fig/figures/*.spec.gp | grep -v '(')" ]
	# two seeds: no t interval (t = 12.7), each seed a dot
	check "figures: 2 seeds: n = 2 and no interval" \
		awk -F, 'NR > 1 && ($6 != 2 || $8 != "NaN" || $9 != "NaN") { bad = 1 } END { exit bad }' fig/figures/ttft.csv
	check "figures: 2 seeds: their values drawn, two per value" \
		[ "$(($(wc -l <fig/figures/ttft.seeds.csv) - 1))" -eq "$((2 * ($(wc -l <fig/figures/ttft.csv) - 1)))" ]
	check "figures: 2 seeds: the title says so" grep -q '^figtitle = .*n = 2 seeds: each seed a dot' fig/figures/ttft.spec.gp
	check "figures: borrowers and lenders apart" \
		[ "$(cut -d, -f1,2 fig/figures/throughput.csv | sort -u | tr '\n' ' ')" = "t0,borrower t1,lender tenant,role " ]
	check "figures: render.sh redraws them" sh -c 'cd fig/figures && sh render.sh >/dev/null 2>&1'
	# three seeds: a 95% interval on the log scale, above zero, around the mean
	ema sweep --quiet $TINY --set policies=static,ema --vary seed=1,2,3 \
		--vary tenants.0.workload.rate_rps=8,16 --out fig3
	check "figures: 3 seeds: an interval above zero around the mean" \
		awk -F, 'NR > 1 && ($6 != 3 || $8 <= 0 || $8 > $7 || $9 < $7) { bad = 1 } END { exit bad }' fig3/figures/ttft.csv
	check "figures: 3 seeds: no seed dots" [ ! -e fig3/figures/ttft.seeds.csv ]
	check "figures: 3 seeds: the title says so" grep -q '^figtitle = .*geometric mean over n = 3 seeds, 95% interval' fig3/figures/ttft.spec.gp
	# a second key that is not a policy knob: a set of figures per value
	ema sweep --quiet $TINY --set policies=static,ema --vary tenants.0.workload.rate_rps=8,12 \
		--vary serving.max_batch=64,256 --out ex1
	check "two keys: figures per serving.max_batch value" \
		[ -s ex1/figures/throughput_64.png ] && [ -s ex1/figures/throughput_256.png ]
	check "two keys: each titled with its value" grep -qF "serving.max_batch=256" ex1/figures/throughput_256.spec.gp
	# a swept policy knob: its values share one plot, a line each; static,
	# which the knob does not change, drawn once
	ema sweep --quiet $TINY --set policies=static,ema --vary tenants.0.workload.rate_rps=8,16 \
		--vary policy.ema.tpot_budget=0.02,0.5 --out knob
	check "policy knob: one set of figures" [ -s knob/figures/throughput.png ] && [ ! -e knob/figures/throughput_0.png ]
	check "policy knob: a line per value, static once" \
		grep -qx 'policies = "static ema:tpot_budget=0.02 ema:tpot_budget=0.5"' knob/figures/throughput.spec.gp
	check "policy knob: the title names it" grep -q '^figtitle = .*; policy.ema.tpot_budget=0.02,0.5 (a line per value' knob/figures/throughput.spec.gp
	# seeds alone: nothing to draw against, and it says why
	ema sweep $TINY --set policies=static --vary seed=1,2 --out seeds
	check "seeds only: says why there is no load figure" grep -qF "no numeric key besides the seed" "$T/log/err"
	check "seeds only: no empty figures folder" [ ! -e seeds/figures ]
	ema figures seeds
	check "ema figures, seeds only: exit 0 and says none drawn" [ "$rc" -eq 0 ] && grep -q "none drawn" "$T/log/out"
	# the capacity bars, with a sweep's figures or alone
	ema figures fig cap -o figcap
	check "ema figures SWEEP CAPACITY: exit 0 ($(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]
	check "ema figures SWEEP CAPACITY: one scenario, no warning" [ -z "$(grep warning "$T/log/err")" ]
	check "ema figures: the capacity bars" [ -s figcap/capacity.png ] && [ -s figcap/capacity.pdf ]
	check "ema figures: the capacity figure names the SLO" grep -qF "ttft_p90_ms<=2000" figcap/capacity.spec.gp
	check "ema figures: capacity over 2 seeds: the seeds drawn, no interval" \
		[ -s figcap/capacity.seeds.csv ] && grep -q '^figtitle = .*n = 2 seeds' figcap/capacity.spec.gp
	# folders of different scenarios drawn together: a warning
	ema sweep --quiet --no-plots $TINY --set name=other --set policies=static,ema \
		--vary tenants.0.workload.rate_rps=8,12 --out other
	ema figures other cap -o othercap
	check "ema figures of two scenarios: exit 0, with a warning" \
		[ "$rc" -eq 0 ] && grep -q "warning: other and cap ran different scenarios" "$T/log/err"
	# a point's own plots when asked
	ema sweep --quiet $TINY --set policies=static --vary tenants.0.workload.rate_rps=8,12 \
		--point-plots --out pp
	check "--point-plots: each point's plots/" [ -s pp/point-000/plots/throughput.png ] && [ -s pp/point-001/plots/memory.pdf ]
	ema sweep --quiet $TINY --vary seed=1,2 --no-plots --point-plots --out ppn
	check "--no-plots --point-plots: exit 2" [ "$rc" -eq 2 ]
	# a full disk (a file size limit here) while drawing: the reason, no
	# figure that looks whole, no partial file
	(trap '' XFSZ; ulimit -f 24; "$EMA" figures fig -o full >"$T/log/out" 2>"$T/log/err")
	rc=$?
	check "figures on a full disk: exit 1 (got $rc)" [ "$rc" -eq 1 ]
	check "figures on a full disk: the reason" grep -q "File too large" "$T/log/err"
	check "figures on a full disk: no partial file" [ -z "$(ls full | grep -E '\.part\.|\.tmp')" ]
	check "figures on a full disk: no cut PNG" sh -c 'for f in full/*.png; do [ -e "$f" ] || continue; tail -c 8 "$f" | od -c | grep -q "I   E   N   D" || exit 1; done'
fi
ema figures
check "figures without DIR: exit 2" [ "$rc" -eq 2 ]
ema figures ref/point-000
check "figures of a run folder: exit 2" [ "$rc" -eq 2 ]
ema figures nosuch
check "figures nosuch: exit 2" [ "$rc" -eq 2 ]
check "figures nosuch: says the folder is missing" grep -q "nosuch: no such folder" "$T/log/err"

# ---- merge: mistakes ------------------------------------------------------------------

ema sweep merge
check "merge without DIR: exit 2" [ "$rc" -eq 2 ]
ema sweep merge nosuch
check "merge nosuch: exit 2" [ "$rc" -eq 2 ]
ema sweep merge ref/point-000
check "merge of a run folder: exit 2" [ "$rc" -eq 2 ]
check "merge of a run folder: says why" grep -qF "not a sweep folder" "$T/log/err"
ema sweep merge sw --vary seed=1
check "merge with --vary: exit 2" [ "$rc" -eq 2 ]
mkdir empty && cp sw/sweep.json empty/
ema sweep merge empty
check "merge with no point: exit 1 (got $rc)" [ "$rc" -eq 1 ]
check "merge with no point: says so" grep -qF "no point is complete yet" "$T/log/err"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
