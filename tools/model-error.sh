#!/bin/sh
# model-error.sh: ema against a model it does not know. For each scenario
# of scenarios/published/ (or EMA_SCENARIOS, a list of files) and each
# figure the policies may misjudge (plan.error.link, .hbm, .interference,
# .compute), an `ema sweep` over the errors -30% .. +30% and the seeds,
# static, pooled and ema on the same requests: the platform charges the
# truth, ema plans with the belief. Prints one markdown table per
# scenario: per (figure, error), the overloaded tenant's TPOT p50 against
# static, the worst lender's paired TPOT against static, and ema / pooled
# (steady_tok_s), each the mean over the seeds, the lender's the highest.
#
# usage: tools/model-error.sh [--write FILE] [EMA_BINARY] [OUT_DIR]
#   EMA_SEEDS   seeds (default "1 2 3"); EMA_ERRORS errors as shares
#   (default "-0.3 -0.2 -0.1 0 0.1 0.2 0.3"); EMA_JOBS parallel runs (2).
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
write=
if [ "${1:-}" = --write ]; then
	[ $# -ge 2 ] || { echo "usage: $0 [--write FILE] [EMA_BINARY] [OUT_DIR]" >&2; exit 2; }
	write=$2
	shift 2
	[ -d "$(dirname "$write")" ] || { echo "$0: --write $write: no folder $(dirname "$write")" >&2; exit 2; }
fi
ema=${1:-./ema}
[ -x "$ema" ] || ema=ema
if [ $# -ge 2 ]; then
	out=$2
	mkdir -p "$out"
else
	out=$(mktemp -d "${TMPDIR:-/tmp}/ema-model-error.XXXXXX")
fi
seeds=${EMA_SEEDS:-1 2 3}
errors=${EMA_ERRORS:--0.3 -0.2 -0.1 0 0.1 0.2 0.3}
jobs=${EMA_JOBS:-2}
scenarios=${EMA_SCENARIOS:-$(ls "$here"/scenarios/published/*.json)}
csv() { echo "$1" | tr ' ' ','; }

for f in $scenarios; do
	name=$(basename "$f" .json)
	for fig in link hbm interference compute; do
		echo "model-error: $name, plan.error.$fig" >&2
		"$ema" sweep --config "$f" --set policies=static,pooled,ema --no-plots -q -j "$jobs" \
			--vary "seed=$(csv "$seeds")" --vary "plan.error.$fig=$(csv "$errors")" \
			--out "$out/$name-$fig" >/dev/null
	done
done

table() {
	for f in $scenarios; do
		name=$(basename "$f" .json)
		echo
		echo "### $name"
		echo
		echo "| figure | error | borrower TPOT p50 / static | worst lender paired TPOT / static | ema / pooled (steady) | lender within 5% |"
		echo "| --- | ---: | ---: | ---: | ---: | --- |"
		for fig in link hbm interference compute; do
			awk -F, -v fig="$fig" '
			NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; key = c["plan.error." fig]; next }
			{
				e = $key; p = $c["policy"]; t = $c["tenant"]
				if (!(e in seen)) { seen[e] = 1; order[++ne] = e }
				if (p != "ema") next
				if (t ~ /^hot/) {
					tp[e] += $c["vs_static_tpot_p50"]; ntp[e]++
					po[e] += $c["vs_pooled_steady_tok_s"]; npo[e]++
				} else if ($c["lender_guarantee"] == "ok" || $c["lender_guarantee"] == "violated") {
					v = $c["vs_static_tpot_paired_p50"] + 0
					if (!(e in lw) || v > lw[e]) lw[e] = v
				}
			}
			END {
				for (i = 1; i <= ne; i++) {
					e = order[i]
					printf "| %s | %+d%% | %s | %s | %s | %s |\n", fig, 100 * e + (e < 0 ? -0.5 : 0.5),
					       ntp[e] ? sprintf("%.3f", tp[e] / ntp[e]) : "-",
					       (e in lw) ? sprintf("%.3f", lw[e]) : "no lending",
					       npo[e] ? sprintf("%.3f", po[e] / npo[e]) : "-",
					       !(e in lw) ? "-" : lw[e] <= 1.05 ? "yes" : "**no**"
				}
			}' "$out/$name-$fig/sweep.csv" | sort -t'|' -k3,3n
		done
	done
}

table
[ -n "$write" ] || exit 0
tmp="$write.tmp-$$"
trap 'rm -f "$tmp"' EXIT
# shellcheck disable=SC2016
{
	echo '# ema against a model it does not know'
	echo
	echo '<!-- Written by tools/model-error.sh --write; do not edit: rerun the command below. -->'
	echo
	echo '[README](../../README.md) > [results](../README.md) > model error'
	echo
	printf 'Generated on %s with `tools/model-error.sh --write %s %s %s` (%s), seeds %s.\n' \
		"$(date -u +%Y-%m-%d)" "$write" "$ema" "$out" "$("$ema" version)" "$(csv "$seeds")"
	echo
	echo 'The simulator charges the scenario'"'"'s hardware; ema plans with it changed by'
	echo 'one figure at a time (`plan.error.FIGURE`: +20% believes the figure 20%'
	echo 'higher than it is; [doc/model.md](../../doc/model.md#the-policy-against-a-model-it-does-not-know)).'
	echo 'Per error: the overloaded tenant'"'"'s TPOT p50 against static (mean over the'
	echo 'seeds), the worst lender'"'"'s TPOT against static on the paired medians (each'
	echo 'request against itself; the highest over lenders and seeds), and ema /'
	echo 'pooled on `steady_tok_s` (mean over the seeds). "lender within 5%" is the'
	echo 'lender guarantee on that paired TPOT.'
	table
} > "$tmp"
mv -f "$tmp" "$write"
trap - EXIT
echo "Written: $write" >&2
