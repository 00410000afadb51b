#!/bin/sh
# h200-inplace.sh: what the next session with two H200s (NV18) runs for
# issue 11, in order, so that the in-place path is measured, calibrated and
# validated the same way each time. Nothing here has run on GPUs yet: the
# simulator's in-place figures are predictions from one measured point
# (doc/model.md, "Remote reads: in place or staged").
#
# usage: tools/h200-inplace.sh [--dry-run] OUT_DIR [EMA_BINARY]
#   OUT_DIR     a new folder for every output (it must not exist)
#   EMA_BINARY  the ema program built with CUDA (default: ./ema)
#   --dry-run   print the commands instead of running them (no GPU needed)
#
# Steps (each writes OUT_DIR/NN-*.txt and, where the command has one, a CSV):
#   00  the machine: nvidia-smi -L and topo -m, ema version (must say CUDA);
#       ema bench --hw (moves, the host loop, in place against remote share)
#   01  ema calibrate: a fresh hardware profile and its raw samples
#   02  in place against remote share and rate: the validation scenario
#       (README: 18 GiB GPUs, t0 overloaded, 15 s of arrivals) with ema's
#       TPOT budget at 5, 10, 20 and 30% (policy.ema.tpot_budget: the
#       remote share follows) and t0 at 11 and 14 req/s, in place, staged
#       and by remote attention, each through `ema validate` (GPUs, then
#       the simulator with h200x2_hw): TPOT p50 of the borrower against
#       static is its step time against remote share; sim against hw is
#       the model's error
#   03  the validation scenario with ema's default budgets, in place,
#       staged and by remote attention, on seeds 1 and 2 (the GPU target: the borrower at
#       or above static's throughput, TTFT p50 at or below, TPOT p50 within
#       1.05 x; the lender within 5%; validate within 5% / 15%)
#   04  a summary table of 02 and 03 from the validate CSVs
#   05  every queue waiting on the GPUs: the validation scenario with both
#       tenants at 14 req/s, ema at its defaults and with no headroom
#       (policy.ema.headroom=0), each through `ema validate` (in the
#       simulator ema lends next to nothing there, a lender's own queue
#       coming first: tests/test_policies.c)
#   06  staged copies by the copy engines, which pay per piece: the
#       validation scenario staged with `per_page` and `batch` copies at
#       0.5 and 2 MiB pages (pieces of a page / 8 layer groups: 64 and
#       256 KiB), each through `ema validate`. Since 2026-12-03 the
#       simulator charges each group's slice of every remote page as a
#       piece, as the hw backend copies it (it charged whole pages, 8 x
#       fewer calls), and ema's staged TPOT cap takes the pieces' rate
#       (doc/model.md, "Remote reads"); the sim error on the borrower's
#       TPOT here is that change's test on the GPUs
#
# The hw backend's in-place iterations split the read grid between local
# pages and each lender's (hw/hw_split.c; the measured point L 924 + R 132
# of doc/reference-figures.md is its rule), so steps 02-03 measure the
# data path ema's `auto` takes. Step 01's calibration fits
# inplace_overlap_efficiency and interference_borrower to whole decode
# steps at four remote shares (its "remote KV in decode steps" table);
# steps 02-03 then run the simulator side of `ema validate` with that fresh
# profile (01-calibrated.json), so sim-against-hw is the fitted model's
# error. What to do with the results: copy the fitted figures into
# profiles/hardware/h200x2*.json, and record the outputs under
# results/h200x2/ with their date.
#
# STEPS="01 03" (environment) runs only those steps (each device call has
# 10 minutes; 02 takes about 16 validate runs, 03 four, 05 three, 06
# four).
set -eu

dry=
if [ "${1:-}" = --dry-run ]; then
	dry=1
	shift
fi
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: $0 [--dry-run] OUT_DIR [EMA_BINARY]" >&2
	exit 2
fi
out=$1
ema=${2:-./ema}
if [ -e "$out" ]; then
	echo "$0: $out exists; give a new folder" >&2
	exit 2
fi
if [ -z "$dry" ]; then
	[ -x "$ema" ] || command -v "$ema" >/dev/null 2>&1 ||
		{ echo "$0: $ema: not an ema program" >&2; exit 2; }
	n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
	if [ "$n" -lt 2 ]; then
		echo "$0: needs two GPUs, found ${n:-0} (nvidia-smi -L)" >&2
		exit 1
	fi
	"$ema" version | grep -q CUDA ||
		{ echo "$0: $ema was built without the CUDA backend" >&2; exit 1; }
fi
mkdir -p "$out"

# The README's validation scenario (results/h200x2/README.md, "Simulator
# against GPUs").
base="--set hardware=h200x2_hw --set gpu_mem_cap_gib=18 --set tenants.0.workload.duration_s=15 --set tenants.1.workload.duration_s=15 --set policy.host_gib=4 --set policies=static,ema"

# run LOG CMD...: runs (or prints) a command, its output into OUT_DIR/LOG
run() {
	log=$1
	shift
	echo "h200-inplace: $*" >&2
	if [ -n "$dry" ]; then
		echo "$*" >>"$out/commands.txt"
		return 0
	fi
	echo "$*" >>"$out/commands.txt"
	"$@" >"$out/$log" 2>&1 || echo "h200-inplace: failed ($?): see $out/$log" >&2
}

steps=${STEPS:-00 01 02 03 05 06}
want() { case " $steps " in *" $1 "*) return 0 ;; esac; return 1; }

want 00 && run 00-machine.txt sh -c "nvidia-smi -L; nvidia-smi topo -m; $ema version"
# the in-place read against remote share over NVLink, and the link's rate
# against the number of blocks reading it (hw/hw_split.h's cap came from
# PCIe; this says whether NVLink wants more)
want 00 && run 00-bench-hw.txt "$ema" bench --hw --csv "$out/00-bench-hw.csv"
if want 01; then
	run 01-calibrate.txt "$ema" calibrate --out "$out/01-calibrated.json" --csv "$out/01-calibrate.csv"
	# the fitted profile is the validation's simulator side
	[ -s "$out/01-calibrated.json" ] &&
		base=$(echo "$base" | sed "s|hardware=h200x2_hw|hardware=$out/01-calibrated.json|")
fi

want 02 && for rate in 11 14; do
	for share in 0.05 0.1 0.2 0.3; do
		for path in inplace staged compute; do
			tag="02-r$rate-b$share-$path"
			# $base is a list of options: split on purpose
			# shellcheck disable=SC2086
			run "$tag.txt" "$ema" validate $base --set tenants.0.workload.rate_rps=$rate \
				--set policy.ema.tpot_budget=$share --set policy.ema.remote_path=$path \
				--csv "$out/$tag.csv"
		done
	done
done

want 03 && for seed in 1 2; do
	for path in inplace staged compute; do
		tag="03-seed$seed-$path"
		# shellcheck disable=SC2086
		run "$tag.txt" "$ema" validate $base --set seed=$seed --set policy.ema.remote_path=$path \
			--csv "$out/$tag.csv"
	done
done

want 05 && for headroom in 0.05 0; do
	tag="05-overload-headroom-$headroom"
	# shellcheck disable=SC2086
	run "$tag.txt" "$ema" validate $base --set tenants.0.workload.rate_rps=14 \
		--set tenants.1.workload.rate_rps=14 --set policy.ema.headroom=$headroom \
		--csv "$out/$tag.csv"
done

want 06 && for method in per_page batch; do
	for page in 0.5 2; do
		tag="06-staged-$method-page$page"
		# shellcheck disable=SC2086
		run "$tag.txt" "$ema" validate $base --set policy.ema.remote_path=staged \
			--set policy.copy_method=$method --set page_mib=$page --csv "$out/$tag.csv"
	done
done

[ -z "$dry" ] || { echo "Commands: $out/commands.txt" >&2; exit 0; }

# 04: one line per validate run: the borrower's and the lender's figures on
# the GPUs against static, and the simulator's error on the borrower.
{
	echo "| run | t0 thr ema/static (hw) | t0 TTFT p50 ema/static (hw) | t0 TPOT p50 ema/static (hw) | t1 TPOT p50 ema/static (hw) | t0 TPOT p50 sim error (ema) | t0 thr sim error (ema) |"
	echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
	for f in "$out"/0[236]-*.csv; do
		[ -s "$f" ] || continue
		awk -F, -v run="$(basename "$f" .csv)" '
		NR > 1 { hw[$1, $2, $3] = $4; err[$1, $2, $3] = $6 }
		function r(a, b) { return b > 0 ? sprintf("%.3f", a / b) : "-" }
		END {
			printf "| %s | %s | %s | %s | %s | %+.1f%% | %+.1f%% |\n", run,
			       r(hw["ema", "t0", "throughput_tok_s"], hw["static", "t0", "throughput_tok_s"]),
			       r(hw["ema", "t0", "ttft_p50_ms"], hw["static", "t0", "ttft_p50_ms"]),
			       r(hw["ema", "t0", "tpot_p50_ms"], hw["static", "t0", "tpot_p50_ms"]),
			       r(hw["ema", "t1", "tpot_p50_ms"], hw["static", "t1", "tpot_p50_ms"]),
			       100 * err["ema", "t0", "tpot_p50_ms"], 100 * err["ema", "t0", "throughput_tok_s"]
		}' "$f"
	done
} >"$out/04-summary.md"
cat "$out/04-summary.md"
echo "Outputs: $out" >&2
