#!/bin/sh
# h200-attention.sh: remote attention (issue 34) on ONE H200, in one go:
# the hw tests, the compute path's integrity run, the calibration of the
# attention figures, and `ema bench --hw` for the three remote paths. With
# one GPU the "lender" is a second stream of the same GPU: kernels, merge,
# handoffs and integrity are real, the link is not (two GPUs: issue 37,
# tools/h200-inplace.sh's successor).
#
# usage: tools/h200-attention.sh [--dry-run] OUT_DIR [BIN_DIR]
#   OUT_DIR   a folder for the outputs (created; existing files are kept
#             unless a step writes the same name), e.g. $OUT on the device
#   BIN_DIR   where `ema` and `tests/test_hw*` are (default: .): the build
#             tree, or the .device/ folder of ../shared/device/bundle;
#             BIN_DIR/lib, where it exists, goes first on LD_LIBRARY_PATH
#   --dry-run print the commands instead of running them (no GPU needed)
#
# Preparing the binaries here (no GSL, cJSON or CUnit on the device):
#   make -j2 ema tests/test_hw tests/test_hw_attn tests/test_hw_attn_ref tests/test_hw_split
#   ../shared/device/bundle ema tests/test_hw tests/test_hw_attn \
#       tests/test_hw_attn_ref tests/test_hw_split
# then on the device, from the checkout's root:
#   sh tools/h200-attention.sh "$OUT" .device
#
# Steps (STEPS="01 03" runs only those; each has its own time limit, all
# together about 9 minutes at most, 2-3 expected):
#   01  tests: test_hw_attn_ref and test_hw_split (CPU), test_hw_attn (the
#       kernels against the CPU reference, steps through the platform by
#       event and by flag, a corrupted page and partial, the errors),
#       test_hw's one-GPU cases                              -> 01-tests.txt
#   02  integrity run: EMA_TEST_HW_ATTN_SOAK random steps of the compute
#       path with every output checked against the reference rebuilt from
#       the pages' tags (--verify's rule), both ways of waiting
#                                                            -> 02-integrity.txt
#   03  ema calibrate --quick: the attention figures (lender's kernel alone
#       and beside its own decode, ms per GB, a layer's round trip by event
#       and by flag) with the rest of the profile  -> 03-calibrate.txt,
#                                           03-calibrated.json, 03-calibrate.csv
#   04  ema bench --hw --quick: step time against remote share for in
#       place, staged and compute (event and flag)  -> 04-bench.txt, 04-bench.csv
#   05  with two GPUs only, and an ema whose policy takes
#       policy.ema.remote_path=compute: the validation scenario on the GPUs with
#       --verify                                              -> 05-run.txt
# 00-summary.txt: each step's command, exit status and time, then the
# figures to read (ATTENTION lines). At most 8 files come back from a
# device call: steps 01-04 write 7 besides the summary.
set -u

dry=
if [ "${1:-}" = --dry-run ]; then
	dry=1
	shift
fi
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: $0 [--dry-run] OUT_DIR [BIN_DIR]" >&2
	exit 2
fi
out=$1
bin=${2:-.}
ema=$bin/ema
t=$bin/tests
soak=${EMA_TEST_HW_ATTN_SOAK:-300}
steps=${STEPS:-01 02 03 04 05}
want() { case " $steps " in *" $1 "*) return 0 ;; esac; return 1; }
sum=$out/00-summary.txt

mkdir -p "$out" || { echo "$0: cannot make $out" >&2; exit 2; }
[ -d "$bin/lib" ] && LD_LIBRARY_PATH=$bin/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} &&
	export LD_LIBRARY_PATH
# CUDA's lazy loading would put module loads inside timed steps
CUDA_MODULE_LOADING=${CUDA_MODULE_LOADING:-EAGER}
export CUDA_MODULE_LOADING

{
	echo "# tools/h200-attention.sh, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "bin: $bin; steps: $steps; soak steps: $soak; EMA_HW_ATTN_SYNC=${EMA_HW_ATTN_SYNC:-(unset: event)}"
	if [ -z "$dry" ]; then
		nvidia-smi -L 2>&1 | sed 's/^/gpu: /'
		"$ema" version 2>&1 | sed 's/^/ema: /'
	fi
} >"$sum"

failed=0
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
# step NAME LOG LIMIT_S CMD...: runs a command with a time limit, its
# output into the file LOG, and records its status and time in the
# summary; a failure is recorded and the next step runs
step() {
	name=$1 log=$2 limit=$3
	shift 3
	echo "h200-attention: $name: $*" >&2
	if [ -n "$dry" ]; then
		echo "$name: $*" >>"$sum"
		return 0
	fi
	start=$(date +%s)
	timeout "$limit" "$@" >"$log" 2>&1
	rc=$?
	secs=$(($(date +%s) - start))
	if [ "$rc" -eq 0 ]; then
		status=ok
	elif [ "$rc" -eq 77 ]; then
		status="skipped (77)"
	elif [ "$rc" -eq 124 ]; then
		status="TIMED OUT after ${limit} s"
		failed=$((failed + 1))
	else
		status="FAILED (exit $rc)"
		failed=$((failed + 1))
	fi
	echo "$name: $status, ${secs} s: $* > $(basename "$log")" >>"$sum"
	echo "h200-attention: $name: $status (${secs} s)" >&2
	return 0
}

if [ -z "$dry" ]; then
	if ! [ -x "$ema" ]; then
		echo "$0: $ema: not found or not executable" >&2
		echo "no ema at $ema" >>"$sum"
		exit 2
	fi
	"$ema" version 2>/dev/null | grep -q CUDA ||
		echo "warning: $ema says it was built without CUDA: the GPU steps will skip" >>"$sum"
	ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
else
	ngpu=1
fi

if want 01; then
	step 01-test_hw_attn_ref "$tmp/a" 60 "$t/test_hw_attn_ref"
	step 01-test_hw_split "$tmp/b" 60 "$t/test_hw_split"
	step 01-test_hw_attn "$tmp/c" 240 "$t/test_hw_attn"
	step 01-test_hw-one-gpu "$tmp/d" 150 env EMA_TEST_HW_ONE_GPU=1 "$t/test_hw"
	if [ -z "$dry" ]; then
		for f in a b c d; do
			echo "==== $f: $(grep -m1 "^01-.*> $f\$" "$sum" | cut -d: -f1)"
			cat "$tmp/$f" 2>/dev/null
		done >"$out/01-tests.txt"
	fi
fi
want 02 && step 02-integrity "$out/02-integrity.txt" 120 env EMA_TEST_HW_ATTN_SOAK="$soak" "$t/test_hw_attn"
want 03 && step 03-calibrate "$out/03-calibrate.txt" 240 "$ema" calibrate --quick \
	--name h200_attention --out "$out/03-calibrated.json" --csv "$out/03-calibrate.csv"
want 04 && step 04-bench-hw "$out/04-bench.txt" 150 "$ema" bench --hw --quick --csv "$out/04-bench.csv"
if want 05; then
	if [ "$ngpu" -ge 2 ]; then
		step 05-run-compute "$out/05-run.txt" 240 "$ema" run --backend hw --verify \
			--set hardware=h200x2_hw --set gpu_mem_cap_gib=18 \
			--set tenants.0.workload.duration_s=15 --set tenants.1.workload.duration_s=15 \
			--set policy.host_gib=4 --set policies=ema --set policy.ema.remote_path=compute \
			--no-plots --out "$out/05-run"
	else
		echo "05-run-compute: skipped: needs two GPUs (found $ngpu)" >>"$sum"
	fi
fi

if [ -z "$dry" ]; then
	{
		echo
		echo "## what to read"
		# the kernels' worst errors, the steps' times, the soak's counts,
		# the corruption messages
		grep -h -E "^====|worst error|a step of 32 layers|soak:|^ *a wrong (page|partial)|FAILED|tests +[0-9]|asserts|skipped" \
			"$out/01-tests.txt" "$out/02-integrity.txt" 2>/dev/null | sed 's/^ */ATTENTION test: /'
		# the calibration's attention section
		sed -n '/^remote attention (lender/,/^profile: attention/p' "$out/03-calibrate.txt" 2>/dev/null |
			sed 's/^/ATTENTION calibrate: /'
		# the bench's three paths
		sed -n '/^step time against remote share, by path/,/^compute path:/p' "$out/04-bench.txt" 2>/dev/null |
			sed 's/^/ATTENTION bench: /'
		echo
		echo "steps failed: $failed"
	} >>"$sum"
	cat "$sum"
fi
[ "$failed" -eq 0 ]
