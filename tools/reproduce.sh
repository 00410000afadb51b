#!/bin/sh
# reproduce.sh: runs every scenario of scenarios/published/ (the simulated
# counterpart of the published EMA experiment) on several seeds and prints
# one markdown table comparing ema with static partitioning and with the
# bounds: pooled (the bound of borrowing, the figure of merit) and
# ideal_kv (twice the KV, the published "96% of 2x").
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
#   EMA_FLAGS="--set policy.ema.tpot_budget=0.05". EMA_SEEDS lists the
#   seeds (default "1 2 3"); each ratio is the mean over them, with the
#   lowest and highest.
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

seeds=${EMA_SEEDS:-1 2 3}
for f in "$@"; do
	name=$(basename "$f" .json)
	for seed in $seeds; do
		echo "reproduce: $name, seed $seed" >&2
		# $plots is empty or one word: left unquoted on purpose
		# EMA_FLAGS: extra options for every run, e.g. a --set to sweep
		# shellcheck disable=SC2086
		"$ema" run --config "$f" --out "$out/$name.s$seed" --quiet $plots --set seed="$seed" \
			${EMA_FLAGS:-} >/dev/null
	done
done

echo "Run folders: $out" >&2

table() {
	echo "| scenario | tenant | ema / static | pooled / static | **ema / pooled** | ema / ideal_kv | TTFT p50 ema/static | TPOT p50 ema/static | remote share | worst lender (ema) |"
	echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
	for f in "$@"; do
		name=$(basename "$f" .json)
		files=
		for seed in $seeds; do
			files="$files $out/$name.s$seed/summary.csv"
		done
		# shellcheck disable=SC2086
		awk -F, -v scen="$name" '
		# Worst lender: the one whose ratio goes furthest past (or closest to)
		# the limits that experiment.c applies (5% on throughput and p50, 15% on
		# p99), over the seeds, reported with that ratio.
		function judge(row,   k, v, lim, m, bad) {
			bad = 0
			for (k = 1; k <= 5; k++) {
				v = row[k]; lim = limit[k]
				m = (k == 1) ? (v > 0 ? lim / v : 1e9) : v / lim
				if (m > bad) { bad = m; badk = k; badv = v }
			}
			return bad
		}
		function add(key, v) {
			if (v == "" || v == "nan" || v == "NaN") return
			v += 0
			if (!((key) in n) || v < lo[key]) lo[key] = v
			if (!((key) in n) || v > hi[key]) hi[key] = v
			n[key]++; sum[key] += v
		}
		function fmt(key, d) {
			if (!((key) in n)) return "-"
			if (lo[key] == hi[key]) return sprintf("%.*f", d, sum[key] / n[key])
			return sprintf("%.*f [%.*f-%.*f]", d, sum[key] / n[key], d, lo[key], d, hi[key])
		}
		BEGIN {
			limit[1] = 0.95; limit[2] = 1.05; limit[3] = 1.05; limit[4] = 1.15; limit[5] = 1.15
			split("steady,ttft_p50,tpot_p50,ttft_p99,tpot_p99", kname, ",")
		}
		FNR == 1 { delete c; for (i = 1; i <= NF; i++) c[$i] = i; nseeds++; next }
		{
			p = $c["policy"]; t = $c["tenant"]
			if (!(t in seen)) { seen[t] = 1; order[++nt] = t }
			if (p == "pooled") add(t SUBSEP "pool", $c["vs_static_steady_tok_s"])
			if (p != "ema") next
			add(t SUBSEP "st", $c["vs_static_steady_tok_s"])
			add(t SUBSEP "po", $c["vs_pooled_steady_tok_s"])
			add(t SUBSEP "ik", $c["vs_ideal_kv_steady_tok_s"])
			add(t SUBSEP "ttft", $c["vs_static_ttft_p50"])
			add(t SUBSEP "tpot", $c["vs_static_tpot_p50"])
			add(t SUBSEP "rem", 100 * $c["remote_share"])
			g = $c["lender_guarantee"]
			if (g == "ok" || g == "violated") {
				nl++
				if (g == "violated") viol++
				row[1] = $c["vs_static_steady_tok_s"]; row[2] = $c["vs_static_ttft_p50"]
				row[3] = $c["vs_static_tpot_p50"]; row[4] = $c["vs_static_ttft_p99"]
				row[5] = $c["vs_static_tpot_p99"]
				m = judge(row)
				if (nl == 1 || m > worst) {
					worst = m; wt = t; wk = badk; wv = badv
					wpt = $c["vs_static_ttft_paired_p50"]; wpp = $c["vs_static_tpot_paired_p50"]
				}
			}
		}
		END {
			if (nl == 0)
				lend = "no lending"
			else
				lend = sprintf("%s (%d/%d lender-seeds ok): %s %s %.3f; paired TTFT %.3f, TPOT %.3f",
					       viol ? "violated" : "ok", nl - viol, nl, wt, kname[wk], wv, wpt, wpp)
			for (i = 1; i <= nt; i++) {
				t = order[i]
				if (t !~ /^hot/) continue
				printf "| %s | %s | %s | %s | **%s** | %s | %s | %s | %s%% | %s |\n",
				       scen, t, fmt(t SUBSEP "st", 3), fmt(t SUBSEP "pool", 3),
				       fmt(t SUBSEP "po", 3), fmt(t SUBSEP "ik", 3),
				       fmt(t SUBSEP "ttft", 2), fmt(t SUBSEP "tpot", 2),
				       fmt(t SUBSEP "rem", 1), lend
			}
		}' $files
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
	printf 'the simulator, seeds %s. One row per overloaded (`hot*`) tenant.\n' "$(echo $seeds | tr ' ' ',')"
	echo
	echo '- Metric: `steady_tok_s`, output tokens of the requests finishing in the'
	echo '  steady-state window (10% of the last arrival to the last arrival), per'
	echo '  second; each ratio is per seed, on the same requests, then the mean over'
	echo '  the seeds [lowest-highest].'
	echo '- Bound: `pooled`, the server'"'"'s free memory as one pool at no cost'
	echo '  ([doc/policies.md](../../doc/policies.md#the-bounds)): **ema / pooled** is'
	echo '  the figure of merit; `ideal_kv` (twice the KV) is the published "2x".'
	echo '- TTFT/TPOT: p50 ratios ema/static; remote share: of the KV held, over time.'
	echo '- Worst lender: over the tenants that lent and the seeds, the one furthest'
	echo '  past (or closest to) the limits of `lender_guarantee` (5% on steady'
	echo '  throughput and p50s, 15% on p99s), with that ratio and its paired'
	echo '  medians (each request against itself under static).'
	echo '- Hardware: the a100x4/a100x8 profiles are datasheet figures with the'
	echo '  H200 pair'"'"'s measured ratios (overlap, interference) scaled onto them'
	echo '  ([doc/hardware.md](../../doc/hardware.md)); only h200x2 is measured. Not'
	echo '  validated on GPUs.'
	echo
	table "$@"
	echo
	echo 'What the table says, and why the model does not reproduce the published'
	echo 'gains: [results/README.md](../README.md#published-scenarios-simulated).'
} > "$tmp"
mv -f "$tmp" "$write"
trap - EXIT
echo "Written: $write" >&2
