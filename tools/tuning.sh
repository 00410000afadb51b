#!/bin/sh
# tuning.sh: the sensitivity of ema's planner to each of its knobs
# (policy.ema.*), one knob at a time from the defaults, on two
# scenarios: the embedded default one (h200x2, Llama-3-8B, t0 overloaded
# beside t1 nearly idle) and scenarios/published/a100x4_40gb_llama2_13b.json
# (hot0 overloaded beside three light lenders). Each setting is one
# `ema run --set policies=static,pooled,ema` per seed, on the same
# requests. Prints one markdown table: per (scenario, setting), the
# mean over the seeds (lowest-highest) of
#   - ema / static and ema / pooled: the whole server's steady_tok_s
#     (summed over its tenants), per seed against the same seed's policy;
#   - the worst borrower's TPOT p50 / static: the largest
#     vs_static_tpot_p50 over the tenants that borrowed under ema
#     (borrowed_peak_gib > 0);
#   - the worst lender's paired TPOT: the largest
#     vs_static_tpot_paired_p50 over the tenants that lent under ema
#     (lent_peak_gib > 0) and borrowed nothing (each request's TPOT
#     against its own under static, the median).
# summary.csv's columns are read by name from its header, as
# tools/kinds.sh reads sweep.csv.
#
# usage: tools/tuning.sh [EMA_BINARY] [OUT_DIR]
#   EMA_BINARY  the ema program (default: ./ema, else ema on PATH)
#   OUT_DIR     where the run folders go; it must not exist (default: a
#               new folder under ${TMPDIR:-/tmp})
# Environment:
#   EMA_SEEDS   seeds (default "1 2 3")
#   EMA_FLAGS   more options for every run (word-split)
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
usage="usage: $0 [EMA_BINARY] [OUT_DIR]"
[ $# -le 2 ] || { echo "$usage" >&2; exit 2; }
if [ $# -ge 1 ]; then
	ema=$1
elif [ -x ./ema ]; then
	ema=./ema
else
	ema=ema
fi
if [ $# -ge 2 ]; then
	out=$2
	if [ -e "$out" ]; then
		echo "$0: $out exists: give a new folder" >&2
		exit 2
	fi
	mkdir -p "$out"
else
	out=$(mktemp -d "${TMPDIR:-/tmp}/ema-tuning.XXXXXX")
fi
seeds=${EMA_SEEDS:-1 2 3}

# the settings, one knob at a time; "defaults" sets nothing
settings="defaults lender_budget=0.02 lender_budget=0.1 tpot_budget=0.05 tpot_budget=0.2
feedback_s=0 feedback_s=30 headroom=0 headroom=0.15 prefetch_depth=0 prefetch_depth=2
remote_path=inplace remote_path=staged remote_path=compute"
scenarios="default a100x4_40gb_llama2_13b"

start=$(date +%s)
for scen in $scenarios; do
	case $scen in
	default) set -- ;;
	*) set -- --config "$here/scenarios/published/$scen.json" ;;
	esac
	echo "tuning: $scen" >&2
	mkdir -p "$out/$scen"
	for s in $settings; do
		for seed in $seeds; do
			# EMA_FLAGS: extra options, word-split on purpose
			# shellcheck disable=SC2086
			if [ "$s" = defaults ]; then
				"$ema" run "$@" --set seed="$seed" --set policies=static,pooled,ema \
					${EMA_FLAGS:-} --no-plots -q -o "$out/$scen/$s.s$seed" >/dev/null
			else
				"$ema" run "$@" --set seed="$seed" --set policies=static,pooled,ema \
					--set "policy.ema.$s" ${EMA_FLAGS:-} --no-plots -q \
					-o "$out/$scen/$s.s$seed" >/dev/null
			fi
		done
	done
done
echo "tuning: run folders in $out, $(($(date +%s) - start)) s" >&2

echo "| scenario | setting (policy.ema.*) | ema / static | ema / pooled | worst borrower, TPOT p50 / static | worst lender, paired TPOT p50 |"
echo "| --- | --- | ---: | ---: | ---: | ---: |"
for scen in $scenarios; do
	for s in $settings; do
		files=
		for seed in $seeds; do files="$files $out/$scen/$s.s$seed/summary.csv"; done
		# the backquotes are markdown
		# shellcheck disable=SC2016
		printf '| %s | `%s` ' "$scen" "$s"
		# shellcheck disable=SC2086
		awk -F, '
		function r(a, b) { return b > 0 ? a / b : "" }
		function add(k, x) {
			if (x == "") return
			x += 0
			if (!(k in n) || x < lo[k]) lo[k] = x
			if (!(k in n) || x > hi[k]) hi[k] = x
			n[k]++; s[k] += x
		}
		function fm(k) {
			if (!(k in n)) return "-"
			return sprintf("%.3f (%.3f-%.3f)%s", s[k] / n[k], lo[k], hi[k],
				       n[k] < ns ? sprintf("; %d of %d seeds", n[k], ns) : "")
		}
		FNR == 1 { delete c; for (i = 1; i <= NF; i++) c[$i] = i; sd = ++ns; next }
		{
			p = $c["policy"]
			S[sd, p] += $c["steady_tok_s"]
			if (p != "ema") next
			if ($c["borrowed_peak_gib"] > 0 && $c["vs_static_tpot_p50"] != "") {
				x = $c["vs_static_tpot_p50"] + 0
				if (!(sd in B) || x > B[sd]) B[sd] = x
			}
			if ($c["lent_peak_gib"] > 0 && $c["borrowed_peak_gib"] == 0 && $c["vs_static_tpot_paired_p50"] != "") {
				x = $c["vs_static_tpot_paired_p50"] + 0
				if (!(sd in L) || x > L[sd]) L[sd] = x
			}
		}
		END {
			for (sd = 1; sd <= ns; sd++) {
				add("st", r(S[sd, "ema"], S[sd, "static"]))
				add("po", r(S[sd, "ema"], S[sd, "pooled"]))
				if (sd in B) add("b", B[sd])
				if (sd in L) add("l", L[sd])
			}
			printf "| %s | %s | %s | %s |\n", fm("st"), fm("po"), fm("b"), fm("l")
		}' $files
	done
done
