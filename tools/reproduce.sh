#!/bin/sh
# reproduce.sh: runs every scenario of scenarios/published/ (the simulated
# counterpart of the published EMA experiment) and prints one markdown table
# comparing ema with static partitioning and with the 2x-memory ideal.
#
# usage: tools/reproduce.sh [--write FILE] [EMA_BINARY] [OUT_DIR]
#   --write FILE  also writes the table as a dated markdown page (the
#               results README: results/published/README.md, and one page
#               per EMA_FLAGS variant beside it), replaced only when
#               complete
#   EMA_BINARY  the ema program (default: ./ema, else ema on PATH)
#   OUT_DIR     where the run folders go, one per scenario (default: a new
#               folder under ${TMPDIR:-/tmp}); it must not hold them already
#               since ema refuses to overwrite a run folder.
#   PLOTS=1 in the environment keeps the plots (off by default: gnuplot is
#   slow and optional). EMA_FLAGS adds options to every run, for example
#   EMA_FLAGS="--set policy.borrow_rule=throughput".
#
# Overloaded tenants are those whose name starts with "hot" (the scenarios'
# convention); every other tenant whose GPU lent memory under ema is a
# lender, judged by summary.csv's lender_guarantee. summary.csv columns are
# read by name from its header, so adding columns does not break this.
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
scen_dir="$here/scenarios/published"

write=
if [ "${1:-}" = --write ]; then
	[ $# -ge 2 ] || { echo "usage: $0 [--write FILE] [EMA_BINARY] [OUT_DIR]" >&2; exit 2; }
	write=$2
	shift 2
	# checked before anything runs, as ema checks --out
	[ -d "$(dirname "$write")" ] || { echo "$0: --write $write: no folder $(dirname "$write")" >&2; exit 2; }
fi

if [ $# -ge 1 ]; then
	ema=$1
elif [ -x ./ema ]; then
	ema=./ema
else
	ema=ema
fi
if [ $# -ge 2 ]; then
	out=$2
	mkdir -p "$out"
else
	out=$(mktemp -d "${TMPDIR:-/tmp}/ema-reproduce.XXXXXX")
fi
if [ $# -gt 2 ]; then
	echo "usage: $0 [--write FILE] [EMA_BINARY] [OUT_DIR]" >&2
	exit 2
fi
plots=--no-plots
[ "${PLOTS:-0}" = 1 ] && plots=

set -- "$scen_dir"/*.json
[ -e "$1" ] || { echo "$0: no scenario in $scen_dir" >&2; exit 2; }

for f in "$@"; do
	name=$(basename "$f" .json)
	echo "reproduce: $name" >&2
	# $plots is empty or one word: left unquoted on purpose
	# EMA_FLAGS: extra options for every run, e.g. a --set to sweep
	# shellcheck disable=SC2086
	"$ema" run --config "$f" --out "$out/$name" --quiet $plots ${EMA_FLAGS:-} >/dev/null
done

echo "Run folders: $out" >&2

table() {
	echo "| scenario | tenant | ema vs static thr | ema % of ideal | ideal vs static thr | ema vs static steady | ema % of ideal steady | TTFT p50 ema/static | TPOT p50 ema/static | remote share | stall s | preempt static/ema | worst lender (ema) |"
	echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
	for f in "$@"; do
		name=$(basename "$f" .json)
		awk -F, -v scen="$name" '
		# Worst lender: the one whose ratio goes furthest past (or closest to)
		# the limits that experiment.c applies (5% on throughput and p50, 15% on
		# p99), reported with that ratio.
		function judge(row,   k, v, lim, m, bad) {
			bad = 0
			for (k = 1; k <= 5; k++) {
				v = row[k]; lim = limit[k]
				m = (k == 1) ? (v > 0 ? lim / v : 1e9) : v / lim
				if (m > bad) { bad = m; badk = k; badv = v }
			}
			return bad
		}
		BEGIN {
			limit[1] = 0.95; limit[2] = 1.05; limit[3] = 1.05; limit[4] = 1.15; limit[5] = 1.15
			split("thr,ttft_p50,tpot_p50,ttft_p99,tpot_p99", kname, ",")
		}
		NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		{
			p = $c["policy"]; t = $c["tenant"]
			if (!(t in seen)) { seen[t] = 1; order[++nt] = t }
			if (p == "static") st_pre[t] = $c["preemptions"]
			if (p == "ideal") id_thr[t] = $c["vs_static_throughput"]
			if (p != "ema") next
			thr[t] = $c["vs_static_throughput"]; idl[t] = $c["vs_ideal_throughput"]
			sthr[t] = $c["vs_static_steady_tok_s"]; sidl[t] = $c["vs_ideal_steady_tok_s"]
			ttft[t] = $c["vs_static_ttft_p50"]; tpot[t] = $c["vs_static_tpot_p50"]
			rem[t] = $c["remote_share"]; stall[t] = $c["stall_ms"] / 1000
			pre[t] = $c["preemptions"]
			g = $c["lender_guarantee"]
			if (g == "ok" || g == "violated") {
				nl++
				if (g == "violated") viol++
				row[1] = $c["vs_static_throughput"]; row[2] = $c["vs_static_ttft_p50"]
				row[3] = $c["vs_static_tpot_p50"]; row[4] = $c["vs_static_ttft_p99"]
				row[5] = $c["vs_static_tpot_p99"]
				m = judge(row)
				if (nl == 1 || m > worst) {
					worst = m; wt = t; wk = badk; wv = badv
					# the worst lender: its paired medians, each request
					# against itself under static
					wpt = $c["vs_static_ttft_paired_p50"]; wpp = $c["vs_static_tpot_paired_p50"]
				}
			}
		}
		END {
			if (nl == 0)
				lend = "no lending"
			else
				lend = sprintf("%s (%d/%d lenders ok): %s %s %.3f; paired TTFT %.3f, TPOT %.3f",
					       viol ? "violated" : "ok", nl - viol, nl, wt, kname[wk], wv, wpt, wpp)
			for (i = 1; i <= nt; i++) {
				t = order[i]
				if (t !~ /^hot/) continue
				printf "| %s | %s | %+.1f%% | %.1f%% | %+.1f%% | %+.1f%% | %.1f%% | %.2f | %.2f | %.1f%% | %.1f | %d/%d | %s |\n",
				       scen, t, 100 * (thr[t] - 1), 100 * idl[t], 100 * (id_thr[t] - 1),
				       100 * (sthr[t] - 1), 100 * sidl[t],
				       ttft[t], tpot[t], 100 * rem[t], stall[t], st_pre[t], pre[t], lend
			}
		}' "$out/$name/summary.csv"
	done
}

echo
table "$@"
[ -n "$write" ] || exit 0

# The page: what was run, when and with which program, then the table.
# The date is the only field that changes between two runs of the same
# program on the same scenarios.
tmp="$write.tmp-$$"
trap 'rm -f "$tmp"' EXIT
# the backquotes below are markdown, not commands
# shellcheck disable=SC2016
{
	printf '# Published scenarios, simulated%s\n\n' "${EMA_FLAGS:+ (\`$EMA_FLAGS\`)}"
	echo '<!-- Written by tools/reproduce.sh --write; do not edit: rerun the command below. -->'
	echo
	echo '[README](../../README.md) > [results](../README.md) > published scenarios'
	echo
	printf 'Generated on %s with `%s` (%s):\n' "$(date -u +%Y-%m-%d)" \
		"${EMA_FLAGS:+EMA_FLAGS=\"$EMA_FLAGS\" }tools/reproduce.sh --write $write $ema $out" \
		"$("$ema" version)"
	echo 'every scenario of `scenarios/published/` under the policies it lists, on'
	echo 'the simulator. One row per overloaded (`hot*`) tenant: ema against static'
	echo 'and against the 2x-memory ideal: "thr" is `throughput_tok_s` (first arrival'
	echo 'to last finish), "steady" `steady_tok_s` (requests finishing between 10%'
	echo 'of the last arrival and the last arrival, over that window; the figure'
	echo 'that separates capacity from offered load). TTFT/TPOT are ratios ema/static; "stall"'
	echo 'is the prefetch stall summed over the run; "preempt" counts preemptions'
	echo 'under static and ema; the worst lender is the one furthest past (or'
	echo 'closest to) the limits of `lender_guarantee` (5% on throughput and p50s,'
	echo '15% on p99s), with that ratio and its paired medians (the medians of'
	echo 'each of its requests'"'"' TTFT and TPOT against the same request'"'"'s under'
	echo 'static, `vs_static_*_paired_p50`).'
	echo
	table "$@"
	echo
	echo 'What the table says, and why the model does not reproduce the published'
	echo 'gains: [results/README.md](../README.md#published-scenarios-simulated).'
} > "$tmp"
mv -f "$tmp" "$write"
trap - EXIT
echo "Written: $write" >&2
