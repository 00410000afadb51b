#!/bin/sh
# load-sweep.sh: runs every scenario of scenarios/published/ over a load
# sweep (its first tenant's arrival rate from under- to over-load) and
# several seeds, for static, pooled (the bound of borrowing),
# remote_direct and ema on its remote paths, and prints one markdown table
# of the regime-separating metrics (steady-state throughput against static
# and against pooled, per-user throughput, TPOT, the lenders) as means
# over the seeds with 95% confidence intervals, judged against the targets
# of issues 34 and 35.
#
# usage: tools/load-sweep.sh [--write FILE] [EMA_BINARY] [OUT_DIR]
#   --write FILE  also writes the table as a dated markdown page, replaced
#               only when complete
#   EMA_BINARY  the ema program (default: ./ema, else ema on PATH)
#   OUT_DIR     where the sweep folders go, one per scenario (default: a
#               new folder under ${TMPDIR:-/tmp})
# Environment: LOADS (default "0.25 0.5 0.75 1 1.25": multiples of each
# scenario's tenants.0 rate), SEEDS (default "1,2,3"), PATHS (default
# "auto": ema's policy.ema.remote_path values), EMA_FLAGS (more
# options for every sweep, e.g. "--set policy.ema.lender_budget=0.02").
#
# The sweeps are `ema sweep --vary seed=SEEDS --vary
# tenants.0.workload.rate_rps=RATES --vary policy.ema.remote_path=PATHS`;
# policies that ignore remote_path are taken from its first value. Ratios
# are per seed against static on the same requests, then averaged; the
# interval is mean +- t(0.975, n - 1) x sd / sqrt(n). Overloaded tenants
# are those named hot*; a lender is any other tenant that lent and did
# not borrow, judged by the worst of its TTFT p50 and TPOT p50 ratios and
# the inverse of its steady-state throughput ratio. Columns of sweep.csv
# are read by name.
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
scen_dir="$here/scenarios/published"
loads=${LOADS:-"0.25 0.5 0.75 1 1.25"}
seeds=${SEEDS:-"1,2,3"}
paths=${PATHS:-"auto"}

write=
if [ "${1:-}" = --write ]; then
	[ $# -ge 2 ] || { echo "usage: $0 [--write FILE] [EMA_BINARY] [OUT_DIR]" >&2; exit 2; }
	write=$2
	shift 2
	[ -d "$(dirname "$write")" ] || { echo "$0: --write $write: no folder $(dirname "$write")" >&2; exit 2; }
fi
if [ $# -gt 2 ]; then
	echo "usage: $0 [--write FILE] [EMA_BINARY] [OUT_DIR]" >&2
	exit 2
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
	out=$(mktemp -d "${TMPDIR:-/tmp}/ema-load-sweep.XXXXXX")
fi

set -- "$scen_dir"/*.json
[ -e "$1" ] || { echo "$0: no scenario in $scen_dir" >&2; exit 2; }

for f in "$@"; do
	name=$(basename "$f" .json)
	# tenants.0's rate: the first rate_rps of the effective configuration
	base=$("$ema" config --config "$f" | awk -F: '/"rate_rps"/ { gsub(/[ ,]/, "", $2); print $2; exit }')
	rates=$(echo "$loads" | awk -v b="$base" '{ for (i = 1; i <= NF; i++) printf "%s%.6g", (i > 1 ? "," : ""), $i * b }')
	echo "load-sweep: $name (tenants.0 at $rates req/s)" >&2
	# EMA_FLAGS: extra options, word-split on purpose
	# shellcheck disable=SC2086
	"$ema" sweep --config "$f" --vary "seed=$seeds" --vary "tenants.0.workload.rate_rps=$rates" \
		--vary "policy.ema.remote_path=$paths" --set policies=static,pooled,remote_direct,ema \
		--out "$out/$name" --no-plots --quiet ${EMA_FLAGS:-} >/dev/null
done
echo "Sweep folders: $out" >&2

table() {
	echo "| scenario | t0 req/s | policy | static steady tok/s (hot) | steady vs static | **vs pooled** | pooled vs static | TPOT p50 vs static | per-user tok/s p50 vs static | worst lender | worst lender, paired TPOT | targets |"
	echo "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
	for f in "$@"; do
		name=$(basename "$f" .json)
		awk -F, -v scen="$name" -v first_path="${paths%%,*}" '
		function tval(df) {
			if (df < 1) return 0
			if (df <= 10) return t975[df]
			return 1.96
		}
		function add(k, v) { n[k]++; s[k] += v; ss[k] += v * v }
		function mean(k) { return n[k] ? s[k] / n[k] : 0 }
		function ci(k,   m, var) {
			if (n[k] < 2) return 0
			m = mean(k); var = (ss[k] - n[k] * m * m) / (n[k] - 1)
			return tval(n[k] - 1) * sqrt(var > 0 ? var : 0) / sqrt(n[k])
		}
		function fmt(k, d) {
			if (!(k in n)) return "-"
			return sprintf("%." d "f ± %." d "f", mean(k), ci(k))
		}
		BEGIN {
			split("12.706 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262 2.228", tt, " ")
			for (i = 1; i <= 10; i++) t975[i] = tt[i]
		}
		NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		{
			seed = $c["seed"]; rate = $c["tenants.0.workload.rate_rps"]; path = $c["policy.ema.remote_path"]
			p = $c["policy"]; t = $c["tenant"]
			if (!(rate in seen_rate)) { seen_rate[rate] = 1; rates[++nr] = rate }
			pt = rate SUBSEP path SUBSEP seed
			# static and pooled rows come before ema in each point: the baselines
			if (p == "static") { st_user[pt, t] = $c["user_tok_s_p50"]; st_steady[pt, t] = $c["steady_tok_s"]; next }
			if (p == "pooled") { id_vs[pt, t] = $c["vs_static_steady_tok_s"]; next }
			if (p == "remote_direct") rd_vs[pt, t] = $c["vs_static_steady_tok_s"]
			if (p == "ema") v = "ema (" path ")"
			else if (path == first_path) v = p
			else next
			if (t ~ /^hot/) {
				if (!((v, t) in seen_vt)) { seen_vt[v, t] = 1; vts[++nvt] = v SUBSEP t }
				g = rate SUBSEP v SUBSEP t
				add(g SUBSEP "steady", $c["vs_static_steady_tok_s"])
				add(g SUBSEP "ideal", $c["vs_pooled_steady_tok_s"])
				add(g SUBSEP "idvs", id_vs[pt, t])
				add(g SUBSEP "tpot", $c["vs_static_tpot_p50"])
				if (p == "ema" && rd_vs[pt, t] > 0)
					add(g SUBSEP "vsrd", $c["vs_static_steady_tok_s"] / rd_vs[pt, t])
				if (st_user[pt, t] > 0)
					add(g SUBSEP "user", $c["user_tok_s_p50"] / st_user[pt, t])
				add(g SUBSEP "abs", st_steady[pt, t])
			} else if ($c["lent_peak_gib"] > 0 && $c["borrowed_peak_gib"] == 0) {
				w = $c["vs_static_ttft_p50"]
				if ($c["vs_static_tpot_p50"] > w) w = $c["vs_static_tpot_p50"]
				if ($c["vs_static_steady_tok_s"] > 0 && 1 / $c["vs_static_steady_tok_s"] > w)
					w = 1 / $c["vs_static_steady_tok_s"]
				lk = rate SUBSEP v SUBSEP seed
				if (!(lk in worst) || w > worst[lk]) worst[lk] = w
				# its TPOT with each request against itself (the paired
				# median): the guarantee to lenders of issues 34 and 35
				w = $c["vs_static_tpot_paired_p50"]
				if (!(lk in worstp) || w > worstp[lk]) worstp[lk] = w
			}
		}
		END {
			for (lk in worst) {
				split(lk, a, SUBSEP)
				add(a[1] SUBSEP a[2] SUBSEP "lender", worst[lk])
				add(a[1] SUBSEP a[2] SUBSEP "lenderp", worstp[lk])
			}
			for (i = 1; i <= nr; i++)
				for (j = 1; j <= nvt; j++) {
					split(vts[j], a, SUBSEP); v = a[1]; t = a[2]
					g = rates[i] SUBSEP v SUBSEP t
					if (!((g SUBSEP "steady") in n)) continue
					lg = rates[i] SUBSEP v SUBSEP "lender"
					verdict = ""
					if (v ~ /^ema/) {
						if (mean(g SUBSEP "steady") < 0.98) verdict = verdict " static"
						if ((g SUBSEP "vsrd") in n && mean(g SUBSEP "vsrd") < 0.98) verdict = verdict " remote_direct"
						if (mean(g SUBSEP "tpot") > 1.10) verdict = verdict " tpot"
						if (((rates[i] SUBSEP v SUBSEP "lenderp") in n) && mean(rates[i] SUBSEP v SUBSEP "lenderp") > 1.05) verdict = verdict " lender"
						if (mean(g SUBSEP "idvs") >= 1.10 && mean(g SUBSEP "ideal") < 0.95) verdict = verdict " pooled"
					}
					printf "| %s | %s | %s, %s | %.1f | %s | %s | %s | %s | %s | %s | %s | %s |\n",
					       scen, rates[i], v, t, mean(g SUBSEP "abs"),
					       fmt(g SUBSEP "steady", 3), fmt(g SUBSEP "ideal", 3), fmt(g SUBSEP "idvs", 2),
					       fmt(g SUBSEP "tpot", 2), fmt(g SUBSEP "user", 2), fmt(lg, 3),
					       fmt(rates[i] SUBSEP v SUBSEP "lenderp", 3),
					       v !~ /^ema/ ? "-" : verdict == "" ? "met" : "missed:" verdict
				}
		}' "$out/$name/sweep.csv"
	done
}

echo
table "$@"
[ -n "$write" ] || exit 0

tmp="$write.tmp-$$"
trap 'rm -f "$tmp"' EXIT
# the backquotes below are markdown, not commands
# shellcheck disable=SC2016
{
	printf '# Published scenarios over load and seeds, simulated%s\n\n' "${EMA_FLAGS:+ (\`$EMA_FLAGS\`)}"
	echo '<!-- Written by tools/load-sweep.sh --write; do not edit: rerun the command below. -->'
	echo
	echo '[README](../../README.md) > [results](../README.md) > load sweep'
	echo
	printf 'Generated on %s with `%s` (%s), loads %s x each scenario'"'"'s tenants.0 rate, seeds %s, ema paths %s.\n' \
		"$(date -u +%Y-%m-%d)" \
		"${EMA_FLAGS:+EMA_FLAGS=\"$EMA_FLAGS\" }tools/load-sweep.sh --write $write $ema $out" \
		"$("$ema" version)" "$loads" "$seeds" "$paths"
	echo
	echo 'One row per (scenario, load, policy, overloaded tenant). Every ratio is'
	echo 'against static on the same requests, per seed, then the mean ± the 95%'
	echo 'interval over the seeds. "steady" is `steady_tok_s` (output tokens of'
	echo 'requests finishing between 10% of the last arrival and the last'
	echo 'arrival, over that window); "per-user" is `user_tok_s_p50` (output'
	echo 'tokens over end-to-end time, median); the worst lender is the largest'
	echo 'of TTFT p50, TPOT p50 and 1 / steady ratios over the tenants that lent'
	echo 'and did not borrow; "paired" is the same with the medians of each'
	echo 'request against itself under static (`vs_static_*_paired_p50`), which'
	echo 'do not move with which request lands in the middle. Bound: `pooled`,'
	echo 'the server'"'"'s free memory as one pool at no cost (**vs pooled** is'
	echo '`vs_pooled_steady_tok_s`, the figure of merit). Targets of ema (issues 34'
	echo 'and 35): steady >= 0.98 x static and x remote_direct, TPOT p50 <= 1.10 x'
	echo 'static, every lender'"'"'s paired TPOT <= 1.05, and >= 0.95 x pooled wherever'
	echo 'pooled gains 10% or more over static.'
	echo
	table "$@"
} > "$tmp"
mv -f "$tmp" "$write"
trap - EXIT
echo "Written: $write" >&2
