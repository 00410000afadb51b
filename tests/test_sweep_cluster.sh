#!/bin/sh
# test_sweep_cluster.sh: `ema sweep` as a Slurm user meets it, without
# Slurm: several processes on one sweep folder (a sweep submitted twice,
# a requeued task beside its first run), claims left by dead processes of
# this machine or of another, the script's tasks run here with Slurm's
# variables set by hand (resubmitting some indices with --array), the
# submission with a stand-in sbatch, --dry-run, the site options, the
# tasks' logs, run.json's host and job, and `ema sweep status`. Run by
# Automake's harness from the build folder (./ema); exit 0 pass, 1 fail,
# 99 error. Option lists ($TINY, ...) are split into words on purpose.
# shellcheck disable=SC2086,SC2012

EMA=${EMA:-./ema}
if [ ! -x "$EMA" ]; then
	echo "test_sweep_cluster.sh: $EMA is not an executable (run from the build folder or set EMA)" >&2
	exit 99
fi
EMA=$(cd "$(dirname "$EMA")" && pwd)/$(basename "$EMA")

T=$(mktemp -d "${TMPDIR:-/tmp}/ema-cluster.XXXXXX") || exit 99
holder=
cleanup() {
	[ -n "$holder" ] && kill "$holder" 2>/dev/null
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
ema() {
	"$EMA" "$@" >"$T/log/out" 2>"$T/log/err"
	rc=$?
}
points() { ls "$1" | grep -E '^point-[0-9]+$' | tr '\n' ' '; }
# the host as ema names it: the short name, other characters as '_'
host=$(uname -n | cut -d. -f1 | tr -c 'A-Za-z0-9_\n-' _)

TINY="--set tenants.0.workload.duration_s=30 --set tenants.1.workload.duration_s=30 --set policies=static,ema"
EIGHT="--vary seed=1,2,3,4 --vary tenants.0.workload.rate_rps=4,8"
ema sweep --quiet --no-plots $TINY $EIGHT -j 1 --out ref
check "reference: exit 0 ($(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]

# ---- a point claimed by a live process is left to it ----------------------------------

sleep 60 &
holder=$!
ema sweep --quiet --no-plots $TINY $EIGHT -j 1 --out held --shard 0/1
# the folder now exists: claim point-001 for the sleeping process, then
# remove that point to see the claim respected
rm -rf held/point-001
echo "$host $holder 0" >held/point-001.claim
ema sweep --no-plots $TINY $EIGHT -j 2 --shard 1/2 --out held
check "a live process's claim: exit 0, the shard goes on ($(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]
check "a live process's claim: the point is left to it" [ ! -d held/point-001 ]
check "a live process's claim: says who runs it" \
	grep -qF "point-001 is being run by process $holder" "$T/log/err"
check "a live process's claim: lists it at the end" grep -qF "1 point left to the processes that run them" "$T/log/err"
ema sweep status held
check "status: the point is running" grep -qF "running: point-001 (process $holder" "$T/log/out"
# its owner dies: the next run takes the point over
kill "$holder"
wait "$holder" 2>/dev/null
holder=
ema sweep --no-plots $TINY $EIGHT -j 2 --shard 1/2 --out held
check "a dead process's claim: exit 0 ($(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]
check "a dead process's claim: taken over, with a note" grep -qF "held/point-001: taking over from process" "$T/log/err"
check "a dead process's claim: the point is run" [ -d held/point-001 ]
check "a dead process's claim: gone" [ ! -e held/point-001.claim ]
ema sweep merge held
check "then the merge: the tables of one run" cmp -s ref/sweep.csv held/sweep.csv

# another machine's claim: fresh, it is left to that machine; silent for
# longer than 10 minutes, it is taken over
rm -rf held/point-003 held/point-005
echo "othernode 12345 0" >held/point-003.claim
echo "othernode 12346 0" >held/point-005.claim
touch -d "@$(($(date +%s) - 3600))" held/point-005.claim
ema sweep --no-plots $TINY $EIGHT -j 1 --shard 1/2 --out held
check "another machine's claims: exit 0 ($(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]
check "another machine's fresh claim: left to it" [ ! -d held/point-003 ]
check "another machine's fresh claim: named" grep -qF "point-003 is being run by process 12345 on othernode" "$T/log/err"
check "another machine's silent claim: taken over" [ -d held/point-005 ]
check "another machine's silent claim: with a note" grep -qF "taking over from process 12346 on othernode" "$T/log/err"
rm -f held/point-003.claim

# ---- two whole sweeps on one folder at once: both finish, nothing run twice ------------

MANY="--vary seed=1,2,3,4,5,6 --vary tenants.0.workload.rate_rps=4,6,8,10"
ema sweep --quiet --no-plots $TINY $MANY -j 1 --out many_ref
"$EMA" sweep --no-plots $TINY $MANY -j 1 --out twice >"$T/log/a.out" 2>"$T/log/a.err" &
a=$!
"$EMA" sweep --no-plots $TINY $MANY -j 2 --out twice >"$T/log/b.out" 2>"$T/log/b.err" &
b=$!
wait "$a"
ra=$?
wait "$b"
rb=$?
check "two sweeps on one folder: the first exits 0 ($(tail -1 "$T/log/a.err"))" [ "$ra" -eq 0 ]
check "two sweeps on one folder: the second exits 0 ($(tail -1 "$T/log/b.err"))" [ "$rb" -eq 0 ]
check "two sweeps on one folder: no 'already exists'" sh -c "! grep -q 'already exists' '$T/log/a.err' '$T/log/b.err'"
check "two sweeps on one folder: every point once" [ "$(points twice | wc -w)" -eq 24 ]
check "two sweeps on one folder: the tables of one run" cmp -s many_ref/sweep.csv twice/sweep.csv
na=$(sed -n 's/.*(\([0-9]*\) run now).*/\1/p' "$T/log/a.out")
nb=$(sed -n 's/.*(\([0-9]*\) run now).*/\1/p' "$T/log/b.out")
check "two sweeps on one folder: no point run twice ($na + $nb)" [ "$((na + nb))" -eq 24 ]
check "two sweeps on one folder: no claim left" [ -z "$(ls twice | grep claim)" ]

# ---- the script: N written in, site options, --dry-run ---------------------------------

SITE="--partition=cpu_short --account=proj1 --time 0:20:00 --mem 2G --sbatch-arg=--qos=low"
ema sweep --quiet --no-plots $TINY $EIGHT --sbatch dry.sh --tasks 4 $SITE --dry-run --out dryfolder
check "--dry-run: exit 0 ($(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]
check "--dry-run: the script on stdout" grep -qx '#SBATCH --array=0-3%4' "$T/log/out"
check "--dry-run: no script written" [ ! -e dry.sh ]
check "--dry-run: no folder made, no point run" [ ! -e dryfolder ]
check "--dry-run: a script sh can read" sh -n "$T/log/out"
ema sweep --quiet --no-plots $TINY $EIGHT --sbatch job.sh --tasks 4 $SITE --out sb
check "--sbatch with --time and --mem: exit 0 ($(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]
check "--sbatch with --time and --mem: no trial, no point run" [ -z "$(points sb)" ]
check "--sbatch: the task count written in the task's command" \
	grep -qF -- '--shard "$SLURM_ARRAY_TASK_ID/4"' job.sh
for want in '#SBATCH --time=0:20:00' '#SBATCH --mem=2G' '#SBATCH --partition=cpu_short' \
	'#SBATCH --account=proj1' '#SBATCH --qos=low'; do
	check "--sbatch: $want" grep -qxF -- "$want" job.sh
done
check "--sbatch: the record of the array" grep -qF '"tasks": 4' sb/slurm/sbatch.json
# the submission: --array goes to the array only, the site options to both
mkdir fakebin
printf '%s\n' '#!/bin/sh' 'echo "$*" >>"$SBATCH_LOG"' 'n=$(wc -l <"$SBATCH_LOG")' \
	'echo "$((100 + n));cluster"' >fakebin/sbatch
chmod +x fakebin/sbatch
SBATCH_LOG=$T/log/sbatch PATH=$T/cwd/fakebin:$PATH sh job.sh --array=1,3 --nice=5 >"$T/log/out" 2>&1
check "sh job.sh --array=1,3: submits both ($(cat "$T/log/out"))" \
	grep -qF "submitted array job 101 (4 tasks) and merge job 102" "$T/log/out"
check "sh job.sh --array=1,3: the array gets it" [ "$(sed -n 1p "$T/log/sbatch" | grep -c -- '--array=1,3')" -eq 1 ]
check "sh job.sh --array=1,3: the merge is one job" [ "$(sed -n 2p "$T/log/sbatch" | grep -c -- '--array')" -eq 0 ]
check "sh job.sh: the other options go to the merge too" grep -qF -- "--parsable --nice=5 --dependency=afterany:101" "$T/log/sbatch"
check "sh job.sh: the merge in the partition and account" \
	sh -c "sed -n 2p '$T/log/sbatch' | grep -qF -- \"--partition=cpu_short --account=proj1 --qos=low\""
rm -f "$T/log/sbatch"
SBATCH_LOG=$T/log/sbatch PATH=$T/cwd/fakebin:$PATH sh job.sh -a 2 >"$T/log/out" 2>&1
check "sh job.sh -a 2: not for the merge" [ "$(sed -n 2p "$T/log/sbatch" | grep -c -- ' -a\| 2 ')" -eq 0 ]

# the tasks as Slurm starts them after `sbatch --array=1,3 job.sh`: two
# tasks, MIN 1, yet shards 1 and 3 of 4 (points 1, 5 and 3, 7)
for i in 3 1; do
	SLURM_JOB_ID=$((900 + i)) SLURM_ARRAY_JOB_ID=900 SLURM_ARRAY_TASK_ID=$i SLURM_ARRAY_TASK_COUNT=2 \
		SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_MAX=3 sh job.sh >"$T/log/task$i.out" 2>&1
	check "task $i of --array=1,3: exit 0 ($(tail -1 "$T/log/task$i.out"))" [ $? -eq 0 ]
done
check "--array=1,3: shards 1 and 3 of 4 ran, points 1, 3, 5, 7 ($(points sb))" \
	[ "$(points sb)" = "point-001 point-003 point-005 point-007 " ]
check "a task's log: where and when" grep -qE "^ema: sweep .*/sb: on $host, Slurm job 903, from 20[0-9-]+ [0-9:]+Z$" "$T/log/task3.out"
check "a task's log: a line per point" grep -qF "point-007 (" "$T/log/task3.out"
check "a task's log: how it ended" grep -qE "done on $host at 20.*, 2 points run here" "$T/log/task3.out"
check "run.json: the host" grep -qF "\"host\": \"$host\"" sb/point-003/run.json
check "run.json: the Slurm job" grep -qF '"slurm": {"job_id": "903", "array_job_id": "900", "array_task_id": "3"}' sb/point-003/run.json
check "run.json: the commit" grep -qE '"commit": "[^"]+"' sb/point-003/run.json
SLURM_ARRAY_TASK_ID=5 sh job.sh >"$T/log/out" 2>&1
check "a task index past N: exit 2" [ $? -eq 2 ]
check "a task index past N: says why" grep -qF -- "--shard 5/4" "$T/log/out"

# ---- status and merge name the missing points and the tasks to resubmit --------------

ema sweep status sb
check "status: exit 0" [ "$rc" -eq 0 ]
check "status: the counts" grep -qF "8 points: 4 complete, 0 running, 4 missing" "$T/log/out"
check "status: each missing point" grep -qF "missing: point-002: seed=2 tenants.0.workload.rate_rps=4" "$T/log/out"
check "status: the tasks to resubmit" grep -qF "sbatch --array=0,2 $T/cwd/job.sh" "$T/log/out"
ema sweep merge sb
check "merge with points missing: fails (exit 1)" [ "$rc" -eq 1 ]
check "merge with points missing: names them" grep -qF "point-006: seed=4 tenants.0.workload.rate_rps=4" "$T/log/err"
check "merge with points missing: says which tasks hold them" grep -qF "sbatch --array=0,2" "$T/log/err"
for i in 0 2; do
	SLURM_ARRAY_TASK_ID=$i sh job.sh >/dev/null 2>&1
done
ema sweep merge sb
check "merge after the resubmitted tasks: exit 0 ($(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]
check "merge after the resubmitted tasks: the tables of one run" cmp -s ref/sweep.csv sb/sweep.csv
ema sweep --quiet --no-plots $TINY $EIGHT --sbatch job3.sh --tasks 4 $SITE --out sb
check "--sbatch without a trial on a complete sweep: says so" grep -qF "all 8 points of sb are complete" "$T/log/out"
check "--sbatch without a trial on a complete sweep: no script" [ ! -e job3.sh ]

# ---- --tasks is capped as documented; the options go with --sbatch --------------------

BIG="--vary seed=$(seq -s, 1 64) --vary tenants.0.workload.rate_rps=$(seq -s, 1 20)"
ema sweep --no-plots $TINY $BIG --sbatch big.sh --tasks 5000 --dry-run --out big
check "--tasks 5000 of 1280 points: at most 1000 tasks" grep -qx '#SBATCH --array=0-999%50' "$T/log/out"
check "--tasks 5000: says so" grep -qF -- "--tasks 5000: at most 1000" "$T/log/err"
for bad in "--partition cpu" "--time 10" "--dry-run" "--sbatch-arg=--qos=x"; do
	ema sweep --quiet --no-plots $TINY $EIGHT $bad --out nosbatch
	check "$bad without --sbatch: exit 2 (got $rc)" [ "$rc" -eq 2 ]
	check "$bad without --sbatch: nothing written" [ ! -e nosbatch ]
done
for bad in "--time 1:2:3:4" "--time abc" "--mem 2Q" "--mem G" "--partition a;b" "--sbatch-arg=--array=1" "--sbatch-arg=qos"; do
	ema sweep --quiet --no-plots $TINY $EIGHT --sbatch bad.sh $bad --out badsb
	check "$bad: exit 2 (got $rc)" [ "$rc" -eq 2 ]
	check "$bad: nothing written" [ ! -e badsb ] && [ ! -e bad.sh ]
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
