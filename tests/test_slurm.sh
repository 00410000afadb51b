#!/bin/sh
# test_slurm.sh: `ema sweep --sbatch` on a real Slurm cluster of one node,
# made here: Debian's munged, slurmctld and slurmd, configured in a
# temporary folder (own munge key and socket, own ports, state and logs),
# started, used to run a small sweep as an array job and its merge job,
# and stopped at the end, also when a check fails or the test is
# interrupted. The merged sweep.csv must be byte-identical to that of the
# same sweep run locally. As root with apt-get, a missing slurm-wlm or
# munge is installed first; without them, or when the daemons cannot
# start, the test is skipped (77) with the reason. About a minute. Not
# part of make check (it installs packages and starts daemons): `make
# check-slurm` runs it (tests/local.mk).
# shellcheck disable=SC2086

EMA=${EMA:-./ema}
if [ ! -x "$EMA" ]; then
	echo "test_slurm.sh: $EMA is not an executable (run from the build folder or set EMA)" >&2
	exit 99
fi
EMA=$(cd "$(dirname "$EMA")" && pwd)/$(basename "$EMA")

skip() {
	echo "test_slurm.sh: skipped: $*"
	exit 77
}

# ---- the packages ------------------------------------------------------------------

have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]; }
if ! have slurmctld || ! have slurmd || ! have munged || ! have sbatch; then
	if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "test_slurm.sh: installing slurm-wlm and munge"
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			slurm-wlm munge; } >/dev/null 2>&1 || skip "apt-get install slurm-wlm munge failed"
	else
		skip "slurmctld, slurmd, munged or sbatch missing (apt-get install slurm-wlm munge, as root)"
	fi
fi
[ "$(id -u)" -eq 0 ] || skip "slurmd must run as root to start jobs; run as root"
PATH=$PATH:/usr/sbin:/sbin
export PATH

# ---- the cluster --------------------------------------------------------------------

T=$(mktemp -d "${TMPDIR:-/tmp}/ema-slurm.XXXXXX") || exit 99
chmod 755 "$T"
pids=
stop() {
	# the daemons, by the PIDs this test started, then their files
	for p in $pids; do kill "$p" 2>/dev/null; done
	for p in $pids; do
		i=0
		while kill -0 "$p" 2>/dev/null && [ "$i" -lt 50 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		kill -9 "$p" 2>/dev/null
	done
	pids=
	rm -rf "$T"
}
trap stop EXIT
trap 'exit 1' HUP INT TERM

mkdir "$T/munge" "$T/state" "$T/spool" "$T/work" || exit 99
dd if=/dev/urandom of="$T/munge/munge.key" bs=1024 count=1 2>/dev/null
chmod 700 "$T/munge"
chmod 400 "$T/munge/munge.key"
munged --force --key-file="$T/munge/munge.key" --socket="$T/munge/munge.sock" \
	--pid-file="$T/munge/munged.pid" --log-file="$T/munge/munged.log" \
	--seed-file="$T/munge/munged.seed" >"$T/munge/out" 2>&1 ||
	skip "munged does not start: $(tail -2 "$T/munge/out" "$T/munge/munged.log" 2>/dev/null | tr '\n' ' ')"
# munged forks: its PID from its file
i=0
while [ ! -s "$T/munge/munged.pid" ] && [ "$i" -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
pids="$(cat "$T/munge/munged.pid" 2>/dev/null)"
[ -n "$pids" ] || skip "munged wrote no PID file"

host=$(hostname -s)
cpus=$(slurmd -C 2>/dev/null | sed -n 's/.* CPUs=\([0-9]*\).*/\1/p')
mem=$(slurmd -C 2>/dev/null | sed -n 's/.* RealMemory=\([0-9]*\).*/\1/p')
[ -n "$cpus" ] && [ -n "$mem" ] || skip "slurmd -C does not describe this machine"
# ports of our own, so that another Slurm on the machine is left alone
port=$((20000 + $$ % 20000))
cat >"$T/slurm.conf" <<EOF
ClusterName=ematest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$T/munge/munge.sock
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=600
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
SLURM_CONF=$T/slurm.conf
export SLURM_CONF
slurmctld -D -i -f "$SLURM_CONF" >"$T/slurmctld.out" 2>&1 &
pids="$pids $!"
slurmd -D -f "$SLURM_CONF" -N "$host" >"$T/slurmd.out" 2>&1 &
pids="$pids $!"
# the node idle within 30 s, or no cluster
i=0
state=
while [ "$i" -lt 150 ]; do
	state=$(sinfo -h -N -o %t 2>/dev/null | head -1)
	[ "$state" = idle ] && break
	sleep 0.2
	i=$((i + 1))
done
if [ "$state" != idle ]; then
	reason=$(tail -3 "$T/slurmctld.log" "$T/slurmd.log" "$T/slurmctld.out" "$T/slurmd.out" 2>/dev/null |
		grep -v '^==' | grep . | tail -4 | tr '\n' ' ')
	skip "the one-node cluster did not come up (node state '${state:-none}'): $reason"
fi
echo "test_slurm.sh: cluster up: node $host, $cpus CPUs, slurmctld port $port"

# ---- the sweep ------------------------------------------------------------------------

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

cd "$T/work" || exit 99
TINY="--set tenants.0.workload.duration_s=10 --set tenants.1.workload.duration_s=10 --set policies=static,ema"
VARY="--vary seed=1,2,3 --vary tenants.0.workload.rate_rps=4,8"
"$EMA" sweep -q --no-plots $TINY $VARY --out sw --sbatch job.sh --tasks 3 --throttle 2 >sbatch.out 2>&1
check "--sbatch: exit 0 ($(tail -1 sbatch.out))" [ $? -eq 0 ]
check "--sbatch: the array, throttled" grep -qx '#SBATCH --array=0-2%2' job.sh
check "--sbatch: time and memory per task" grep -qE '^#SBATCH --time=[0-9:]+$' job.sh
check "--sbatch: memory per task" grep -qE '^#SBATCH --mem=[0-9]+M$' job.sh
check "--sbatch: the trial points are complete" [ -d sw/point-000 ] && [ -d sw/point-005 ]
sh job.sh >submit.out 2>&1
check "sh job.sh: submitted ($(cat submit.out))" grep -q '^submitted array job [0-9]* (3 tasks) and merge job [0-9]* after it$' submit.out
merge=$(sed -n 's/.* and merge job \([0-9]*\) after it$/\1/p' submit.out)
# the merge job done within 2 minutes
i=0
mstate=
while [ -n "$merge" ] && [ "$i" -lt 600 ]; do
	mstate=$(scontrol show job "$merge" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
	case $mstate in
	COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY) break ;;
	esac
	sleep 0.2
	i=$((i + 1))
done
check "the merge job completed (state ${mstate:-unknown})" [ "$mstate" = COMPLETED ]
check "every task wrote its log" [ "$(ls sw/slurm/*_[0-9]*.out 2>/dev/null | wc -l)" -eq 3 ]
check "the merge found every point ($(cat sw/slurm/merge-*.out 2>/dev/null | tail -1))" \
	grep -qF "sweep merge: 6 of 6 points" sw/slurm/merge-"$merge".out
check "every point ran once, in a task or the trial" [ "$(ls -d sw/point-* | wc -l)" -eq 6 ]
"$EMA" sweep -q --no-plots $TINY $VARY -j 2 --out local >local.out 2>&1
check "the local sweep: exit 0" [ $? -eq 0 ]
check "the array's sweep.csv is the local run's, byte for byte" cmp -s sw/sweep.csv local/sweep.csv
check "sweep_stats.csv too" cmp -s sw/sweep_stats.csv local/sweep_stats.csv
if [ "$failed" -gt 0 ]; then
	echo "--- slurmctld.log"
	tail -20 "$T/slurmctld.log"
	echo "--- task logs"
	tail -5 sw/slurm/*.out 2>/dev/null
fi

cd / || exit 99
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
