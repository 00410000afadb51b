#!/bin/sh
# test_extremes.sh: extreme but valid input from the command line (issue
# 32): the commands the issue ran, each now either exits 0 with every
# request of summary.csv completed or dropped, or exits 2 with a message
# that names the key and the limit and leaves nothing behind. Run by
# Automake's harness from the build folder (./ema) with EMA_SRCDIR set;
# exit 0 pass, 1 fail, 99 error. tests/test_limits.c covers every key.

EMA=${EMA:-./ema}
if [ ! -x "$EMA" ]; then
	echo "test_extremes.sh: $EMA is not an executable (run from the build folder or set EMA)" >&2
	exit 99
fi
EMA=$(cd "$(dirname "$EMA")" && pwd)/$(basename "$EMA")
T=$(mktemp -d "${TMPDIR:-/tmp}/ema-extremes.XXXXXX") || exit 99
trap 'rm -rf "$T"' EXIT
trap 'exit 1' HUP INT TERM
mkdir "$T/cwd" || exit 99
cd "$T/cwd" || exit 99

passed=0
failed=0
fail() {
	failed=$((failed + 1))
	echo "FAIL: $*"
}

# refused TEXT... -- ARGS: `ema run --out out ARGS` exits 2, says every
# TEXT on stderr, and leaves no folder behind.
refused() {
	want=
	while [ "$1" != "--" ]; do
		want="$want
$1"
		shift
	done
	shift
	timeout 300 "$EMA" run -q --no-plots --out out "$@" >"$T/out" 2>"$T/err"
	rc=$?
	if [ $rc -ne 2 ]; then
		fail "ema run $*: exit $rc, expected 2: $(cat "$T/err")"
		rm -rf ./* ./.[!.]*
		return
	fi
	ok=1
	echo "$want" | while IFS= read -r w; do
		[ -z "$w" ] || grep -qF -- "$w" "$T/err" || { echo "FAIL: ema run $*: no \"$w\" in: $(cat "$T/err")"; exit 1; }
	done || ok=0
	if [ "$(ls -A .)" != "" ]; then
		echo "FAIL: ema run $*: left $(ls -A .)"
		ok=0
		rm -rf ./* ./.[!.]*
	fi
	if [ $ok -eq 1 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
}

# ran HORIZON ARGS: `ema run ARGS` exits 0 and every row of summary.csv
# has requests = completed + dropped (HORIZON "h": at most, requests in
# flight at the horizon being the rest), with TTFT and TPOT numbers or
# empty, never negative.
ran() {
	h=$1
	shift
	rm -rf out
	timeout 300 "$EMA" run -q --no-plots --out out "$@" >"$T/out" 2>"$T/err"
	rc=$?
	if [ $rc -ne 0 ]; then
		fail "ema run $*: exit $rc, expected 0: $(cat "$T/err")"
		return
	fi
	# requests, completed, dropped, ttft_p50_ms .. tpot_p99_ms: columns 4-6, 9-14
	bad=$(awk -F, -v h="$h" 'NR > 1 {
		if ((h == "h" && $5 + $6 > $4) || (h != "h" && $5 + $6 != $4)) print "row " NR ": " $0
		for (c = 9; c <= 14; c++) if ($c != "" && $c + 0 < 0) print "row " NR " column " c ": " $c
	}' out/summary.csv)
	if [ -n "$bad" ] || [ ! -s out/summary.csv ]; then
		fail "ema run $*: $bad"
		return
	fi
	passed=$((passed + 1))
	rm -rf out
}

# The issue's commands, on the default scenario.
refused "simulated time would pass 146 years" "hardware.hbm_read_gbps x hardware.hbm_efficiency" -- \
	--set hardware.hbm_read_gbps=1e-6 --set policies=static
refused "simulated time would pass 146 years" "hardware.peak_tflops x hardware.flops_efficiency" -- \
	--set hardware.peak_tflops=1e-9 --set policies=static
refused "simulated time would pass 146 years" "hardware.peak_tflops x hardware.flops_efficiency" -- \
	--set hardware.flops_efficiency=1e-12 --set policies=static
refused "--set hardware.hbm_read_gbps=1e-9:" "past the limit of simulated time, 146 years" -- \
	--set hardware.hbm_read_gbps=1e-9 --set policies=static
refused "--set hardware.hbm_read_gbps=1e-300:" "past the limit of simulated time, 146 years" -- \
	--set hardware.hbm_read_gbps=1e-300 --set policies=static
refused "simulated time would pass 146 years" "hardware.hbm_efficiency" -- \
	--set hardware.hbm_efficiency=1e-12 --set policies=static
refused "hardware.gpu_mem_gib" "policy.ideal_factor" "more than the 67108864 (2^26) one pool may hold" -- \
	--set gpu_mem_cap_gib=0 --set hardware.gpu_mem_gib=100000 --set policy.ideal_factor=64
# (host memory's largest pool, 4096 GiB in pages of 64 KiB, is 2^26 pages
# exactly: tests/test_limits.c runs it)
# transfers past the limit: a host link of 1e-12 GB/s
refused "simulated time would pass 146 years" "hardware.host_link_gbps" -- \
	--set hardware.host_link_gbps=1e-12 --set policies=host_swap
# the key reference's token range, as the generators take it
ran n --set tenants.0.workload.prompt.max=10000000 --set tenants.0.workload.max_requests=3 \
	--set tenants.1.workload.max_requests=3 --set policies=static
refused "tenants.0.workload.prompt.max" "expected" -- \
	--set tenants.0.workload.prompt.max=10000001

# With a horizon, a slow profile is a right answer: what is in flight at
# the horizon is neither lost nor counted.
ran h --set hardware.hbm_read_gbps=1e-6 --set horizon_s=1e9 --set policies=static,ema
# The other end: 0 ns steps end.
ran n --set model.params_b=1e-12 --set hardware.iter_overhead_us=0 \
	--set hardware.hbm_read_gbps=1e6 --set hardware.peak_tflops=1e6 \
	--set tenants.0.workload.duration_s=10 --set tenants.1.workload.duration_s=10
# The default scenario, cut short: every request accounted for.
ran n --set tenants.0.workload.duration_s=10 --set tenants.1.workload.duration_s=10

echo "test_extremes.sh: $passed passed, $failed failed"
[ $failed -eq 0 ]
