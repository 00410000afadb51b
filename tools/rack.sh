#!/bin/sh
# rack.sh: ema against the pool as the share of hot tenants grows, on a
# GB200 NVL72 rack (72 GPUs, one NVLink 5 switch domain) and, for
# contrast, on two 8-GPU servers: b200x8 (NVLink 5 switch) and l40sx8
# (PCIe only, no NVLink) (issue 36). Every server runs llama-3-8b capped
# at 24 GiB a GPU, one tenant a GPU, the lengths of
# scenarios/kinds/gb200nvl72_hot.json; a hot tenant gets 20 req/s, a
# light one 0.5 req/s (Poisson). The hot shares: 8, 24 and 48 of 72
# (11%, 33%, 67%) on the rack, 1, 3 and 5 of 8 (12.5%, 37.5%, 62.5%) on
# the 8-GPU servers, spread evenly over the GPUs (GPU g is hot when
# g x HOT mod N < HOT). Policies static, pooled, pooled_tpot and ema on
# the same requests.
#
# Scenario length: EMA_DURATION s of arrivals (default 80) with the
# steady window from EMA_WARMUP s (default 20) to each tenant's last
# arrival: a 60 s window that leaves out the pool's ramp. With 20 s of
# arrivals (gb200nvl72_hot.json as shipped) pooled's batches, 3.8 x
# static's TPOT, are still filling when the window closes and its tokens
# finish in the drain after it: pooled reads 0.90 x static's steady_tok_s
# while it finishes the same tokens in 27 s against static's 43 s
# (results/rack/README.md).
#
# Prints one markdown table, a row per (server, hot tenants): per seed
# the whole server's steady_tok_s (the sum over its tenants) as ema /
# static, pooled / static, ema / pooled, ema / pooled_tpot; the worst
# lender's paired TPOT under ema (a lender lent, lent_peak_gib > 0, and
# borrowed nothing: vs_static_tpot_paired_p50); the worst borrower's TPOT
# p50 against static under ema and under pooled (vs_static_tpot_p50);
# then from ema's EMA_DECISION_LOG: the GPUs that lent (bytes > 0), the
# lenders per borrower (mean, max) and the share of a borrower's bytes on
# its top lender (mean over borrowers, bytes summed over the run). Means
# over the seeds; [a, b] the range where there are several.
#
# usage: tools/rack.sh [--report] [--write FILE] [EMA_BINARY] [OUT_DIR]
#   --report    runs nothing: the table (and page) from OUT_DIR's finished
#               runs, as the same command without --report wrote them
#   --write FILE  also writes the table as a dated markdown page (replaced
#               only when complete; a "## Findings" section at the end of
#               an existing FILE is kept), the table as CSV beside it
#               (rack.csv) and the figure (rack.png, rack.pdf: plots/rack.gp)
#   EMA_BINARY  the ema program (default: ./ema, else ema on PATH)
#   OUT_DIR     where the run folders go (default: a new folder under
#               ${TMPDIR:-/tmp}); a run folder already there is refused
# Environment:
#   EMA_SEEDS       seeds (default "1 2 3")
#   EMA_RACK_SEEDS  seeds of the rack's 24 and 48 hot cells (default "1":
#                   one such run of ema takes minutes of CPU)
#   EMA_RACK_EMA_MAX  the most hot tenants on the rack that ema is run
#                   for (default 8; above it static, pooled and
#                   pooled_tpot only: ema with 80 s of arrivals took more
#                   than 7 CPU minutes on 24 hot tenants, its simulated
#                   clock at 100 s and still draining, and more than 10
#                   on 48, where the other three take 18 s together)
#   EMA_CELLS       "SERVER:HOT ..." (default "gb200nvl72:8 gb200nvl72:24
#                   gb200nvl72:48 b200x8:1 b200x8:3 b200x8:5 l40sx8:1
#                   l40sx8:3 l40sx8:5")
#   EMA_DURATION, EMA_WARMUP  as above
#   EMA_JOBS        runs at once (default 2)
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
usage="usage: $0 [--report] [--write FILE] [EMA_BINARY] [OUT_DIR]"
write=
report=
if [ "${1:-}" = --report ]; then
	report=1
	shift
fi
if [ "${1:-}" = --write ]; then
	[ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }
	write=$2
	shift 2
	[ -d "$(dirname "$write")" ] || { echo "$0: --write $write: no folder $(dirname "$write")" >&2; exit 2; }
fi
[ $# -le 2 ] || { echo "$usage" >&2; exit 2; }
if [ $# -ge 1 ]; then
	ema=$1
elif [ -x ./ema ]; then
	ema=./ema
else
	ema=ema
fi
seeds=${EMA_SEEDS:-1 2 3}
rseeds=${EMA_RACK_SEEDS:-1}
emamax=${EMA_RACK_EMA_MAX:-8}
cells=${EMA_CELLS:-gb200nvl72:8 gb200nvl72:24 gb200nvl72:48 b200x8:1 b200x8:3 b200x8:5 l40sx8:1 l40sx8:3 l40sx8:5}
duration=${EMA_DURATION:-80}
warmup=${EMA_WARMUP:-20}
jobs=${EMA_JOBS:-2}
base=$here/scenarios/kinds/gb200nvl72_hot.json
csv() { echo "$1" | tr ' ' ','; }

# cell SERVER:HOT: sets server, hot, n (GPUs), sd (its seeds), pols
cell() {
	server=${1%%:*} hot=${1#*:}
	case $server in
	gb200nvl72) n=72 ;;
	b200x8 | l40sx8) n=8 ;;
	*) echo "$0: unknown server $server (EMA_CELLS)" >&2; exit 2 ;;
	esac
	sd=$seeds
	pols=static,pooled,pooled_tpot,ema
	if [ "$n" -gt 8 ] && [ "$hot" -gt 8 ]; then sd=$rseeds; fi
	if [ "$n" -gt 8 ] && [ "$hot" -gt "$emamax" ]; then pols=static,pooled,pooled_tpot; fi
	return 0
}

# tenants N HOT: the tenants as a JSON array, GPU g hot when g*HOT mod N < HOT
tenants() {
	awk -v n="$1" -v h="$2" -v dur="$duration" 'BEGIN {
		w = "\"prompt\": {\"kind\": \"lognormal\", \"mean\": 2340, \"cv\": 0.91, \"min\": 1, \"max\": 8192}, " \
		    "\"output\": {\"kind\": \"lognormal\", \"mean\": 439, \"cv\": 0.35, \"min\": 1, \"max\": 1024}"
		printf "["
		for (g = 0; g < n; g++) {
			hot = (g * h) % n < h
			printf "%s{\"name\": \"%s%d\", \"gpu\": %d, \"workload\": {\"source\": \"synthetic\", " \
			       "\"arrival\": \"poisson\", \"rate_rps\": %s, \"duration_s\": %s, %s}}",
			       g ? ", " : "", hot ? "hot" : "light", g, g, hot ? 20 : 0.5, dur, w
		}
		print "]"
	}'
}

if [ $# -ge 2 ]; then
	out=$2
	[ -n "$report" ] || mkdir -p "$out"
elif [ -n "$report" ]; then
	echo "$0: --report needs OUT_DIR" >&2
	exit 2
else
	out=$(mktemp -d "${TMPDIR:-/tmp}/ema-rack.XXXXXX")
fi
[ -n "$report" ] || for c in $cells; do
	cell "$c"
	for s in $sd; do
		if [ -e "$out/$server-$hot/seed$s" ]; then
			echo "$0: $out/$server-$hot/seed$s: already there; give a new OUT_DIR" >&2
			exit 2
		fi
	done
done

start=$(date +%s)
running=0
[ -n "$report" ] || for c in $cells; do
	cell "$c"
	mkdir -p "$out/$server-$hot"
	tenants "$n" "$hot" > "$out/$server-$hot/tenants.json"
	for s in $sd; do
		echo "rack: $server, $hot hot of $n, seed $s ($pols)" >&2
		dir=$out/$server-$hot/seed$s
		EMA_DECISION_LOG=$dir.decisions.csv "$ema" run -c "$base" --set "hardware=$server" \
			--set "tenants=$(cat "$out/$server-$hot/tenants.json")" \
			--set "metrics.warmup_s=$warmup" --set "policies=$pols" --set "seed=$s" \
			--no-plots -q -o "$dir" >"$dir.log" 2>&1 &
		running=$((running + 1))
		if [ "$running" -ge "$jobs" ]; then wait; running=0; fi
	done
done
wait
if [ -n "$report" ]; then
	elapsed=$(cat "$out/elapsed_s" 2>/dev/null || echo '?')
else
	elapsed=$(($(date +%s) - start))
	echo "$elapsed" > "$out/elapsed_s"
fi
echo "rack: run folders in $out, $elapsed s" >&2

# row SERVER:HOT: the cell's CSV row (server,n,hot,share,seeds, then the
# figures), from its runs' summary.csv and decision logs
row() {
	cell "$1"
	files=
	for s in $sd; do
		[ -f "$out/$server-$hot/seed$s/summary.csv" ] || { echo "$0: no $out/$server-$hot/seed$s/summary.csv (see its .log)" >&2; exit 1; }
		files="$files $out/$server-$hot/seed$s/summary.csv"
		[ -f "$out/$server-$hot/seed$s.decisions.csv" ] && files="$files $out/$server-$hot/seed$s.decisions.csv"
	done
	# shellcheck disable=SC2086
	awk -F, -v server="$server" -v n="$n" -v hot="$hot" '
	function r(a, b) { return a > 0 && b > 0 ? a / b : "" }
	function add(k, x) { if (x == "") return; m[k]++; s[k] += x
		if (!(k in lo) || x < lo[k]) lo[k] = x; if (!(k in hi) || x > hi[k]) hi[k] = x }
	function mean(k) { return m[k] ? sprintf("%.3f", s[k] / m[k]) : "" }
	function rng(k) { return m[k] > 1 ? sprintf("%.3f", lo[k]) ";" sprintf("%.3f", hi[k]) : "" }
	FNR == 1 { delete c; for (i = 1; i <= NF; i++) c[$i] = i
		dec = ("lender" in c); if (!dec) { sd = ++ns; } next }
	dec {	# the decision log of the seed just read
		if ($c["bytes"] + 0 <= 0) next
		B[sd, $c["tenant"], $c["lender"]] += $c["bytes"]; T[sd, $c["tenant"]] += $c["bytes"]
		if (!((sd, $c["tenant"]) in nb)) { nb[sd, $c["tenant"]] = 0; bl[sd] = bl[sd] " " $c["tenant"] }
		if (!((sd, $c["tenant"], $c["lender"]) in seenl)) { seenl[sd, $c["tenant"], $c["lender"]] = 1
			nb[sd, $c["tenant"]]++; ll[sd, $c["tenant"]] = ll[sd, $c["tenant"]] " " $c["lender"] }
		if (!((sd, $c["lender"]) in lg)) { lg[sd, $c["lender"]] = 1; nl[sd]++ }
		next }
	{	p = $c["policy"]
		S[sd, p] += $c["steady_tok_s"]
		if (p == "pooled" && $c["borrowed_peak_gib"] > 0 && $c["vs_static_tpot_p50"] != "") {
			x = $c["vs_static_tpot_p50"] + 0; if (!((sd, "pb") in W) || x > W[sd, "pb"]) W[sd, "pb"] = x }
		if (p != "ema") next
		if ($c["lent_peak_gib"] > 0 && $c["borrowed_peak_gib"] == 0 && $c["vs_static_tpot_paired_p50"] != "") {
			x = $c["vs_static_tpot_paired_p50"] + 0; if (!((sd, "l") in W) || x > W[sd, "l"]) W[sd, "l"] = x }
		if ($c["borrowed_peak_gib"] > 0 && $c["vs_static_tpot_p50"] != "") {
			x = $c["vs_static_tpot_p50"] + 0; if (!((sd, "b") in W) || x > W[sd, "b"]) W[sd, "b"] = x }
	}
	END {
		for (j = 1; j <= ns; j++) {
			add("es", r(S[j, "ema"], S[j, "static"]))
			add("ps", r(S[j, "pooled"], S[j, "static"]))
			add("ep", r(S[j, "ema"], S[j, "pooled"]))
			add("et", r(S[j, "ema"], S[j, "pooled_tpot"]))
			add("ts", r(S[j, "pooled_tpot"], S[j, "static"]))
			for (k in W) { split(k, kk, SUBSEP); if (kk[1] == j) add(kk[2], W[k]) }
			nbw = split(bl[j], bs, " ")
			if (nbw) add("nl", nl[j])
			for (i = 1; i <= nbw; i++) {
				b = bs[i]; add("lpb", nb[j, b]); top = 0
				nll = split(ll[j, b], ls, " ")
				for (q = 1; q <= nll; q++) if (B[j, b, ls[q]] > top) top = B[j, b, ls[q]]
				add("top", top / T[j, b])
				if (!("lpbmax" in s) || nb[j, b] > s["lpbmax"]) s["lpbmax"] = nb[j, b]
			}
		}
		printf "%s,%d,%d,%.1f,%d,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", server, n, hot, 100 * hot / n, ns,
		       mean("es"), rng("es"), mean("ps"), rng("ps"), mean("ep"), rng("ep"), mean("et"), rng("et"), mean("ts"),
		       mean("l"), hi["l"], mean("b"), hi["b"], mean("pb"), hi["pb"],
		       mean("nl"), mean("lpb"), (m["lpb"] ? s["lpbmax"] : ""), mean("top")
	}' $files
}

header=server,gpus,hot,hot_pct,seeds,ema_static,ema_static_range,pooled_static,pooled_static_range,ema_pooled,ema_pooled_range,ema_pooled_tpot,ema_pooled_tpot_range,pooled_tpot_static,lender_tpot_paired,lender_tpot_paired_max,borrower_tpot,borrower_tpot_max,pooled_borrower_tpot,pooled_borrower_tpot_max,lender_gpus,lenders_per_borrower,lenders_per_borrower_max,top_lender_share
table_csv=$out/rack.csv
{
	echo "$header"
	for c in $cells; do row "$c"; done
} > "$table_csv"

table() {
	echo "| server | hot tenants | seeds | ema / static | pooled / static | ema / pooled | ema / pooled_tpot | worst lender, paired TPOT | worst borrower, TPOT p50 / static | pooled's worst borrower, TPOT p50 / static | GPUs that lent | lenders per borrower (max) | top lender's share of a borrower's bytes |"
	echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
	awk -F, 'NR == 1 { next }
	function v(x, rg) { if (x == "") return "-"; if (rg == "") return x; split(rg, a, ";"); return x " [" a[1] ", " a[2] "]" }
	function w(x, mx, ns) { if (x == "") return "-"; return ns > 1 ? x " (max " sprintf("%.3f", mx) ")" : x }
	{ printf "| %s | %d of %d (%.0f%%) | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
	  $1, $3, $2, $4, $5, v($6, $7), v($8, $9), v($10, $11), v($12, $13),
	  w($15, $16, $5), w($17, $18, $5), w($19, $20, $5), ($21 == "" ? "-" : sprintf("%.1f", $21)),
	  ($22 == "" ? "-" : sprintf("%.1f (%d)", $22, $23)), ($24 == "" ? "-" : $24) }' "$table_csv"
}

echo
table
[ -n "$write" ] || exit 0

wdir=$(cd "$(dirname "$write")" && pwd -P)
case $wdir/ in
"$(cd "$here" && pwd -P)"/*)
	up=$(echo "${wdir#"$(cd "$here" && pwd -P)"/}" | sed -e 's|[^/][^/]*|..|g') ;;
*) up=.. ;;
esac
cp "$table_csv" "$wdir/rack.csv"
if command -v gnuplot >/dev/null 2>&1; then
	for ext in png pdf; do
		gnuplot -d -c "$here/plots/rack.gp" "$wdir/rack.csv" "$wdir/rack.$ext" ||
			echo "$0: gnuplot failed on rack.$ext" >&2
	done
else
	echo "$0: no gnuplot: no figure" >&2
fi
findings=$(mktemp "${TMPDIR:-/tmp}/ema-rack-findings.XXXXXX")
tmp="$write.tmp-$$"
trap 'rm -f "$tmp" "$findings"' EXIT
if [ -f "$write" ]; then
	sed -n '/^## Findings/,$p' "$write" > "$findings"
fi
# the backquotes below are markdown, not commands
# shellcheck disable=SC2016
{
	echo '# ema on a GB200 NVL72 rack, and on two 8-GPU servers, as hot tenants grow'
	echo
	echo '<!-- Written by tools/rack.sh --write: rerun the command below; only the Findings section is written by hand, and kept. -->'
	echo
	echo "[README]($up/README.md) > [results]($up/results/README.md) > rack"
	echo
	printf 'Generated on %s at commit %s with `%s%s%s%s%stools/rack.sh --write %s %s %s` (%s), seeds %s (the rack'"'"'s 24 and 48 hot: %s), in %s s (%s runs at once on %s cores)%s.\n' \
		"$(date -u +%Y-%m-%d)" "$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
		"${EMA_SEEDS:+EMA_SEEDS=\"$EMA_SEEDS\" }" "${EMA_RACK_SEEDS:+EMA_RACK_SEEDS=\"$EMA_RACK_SEEDS\" }" \
		"${EMA_RACK_EMA_MAX:+EMA_RACK_EMA_MAX=$EMA_RACK_EMA_MAX }" "${EMA_DURATION:+EMA_DURATION=$EMA_DURATION }" \
		"${EMA_WARMUP:+EMA_WARMUP=$EMA_WARMUP }" \
		"$write" "$ema" "$out" "$("$ema" version)" "$(csv "$seeds")" "$(csv "$rseeds")" "$elapsed" "$jobs" "$(nproc 2>/dev/null || echo '?')" \
		"${report:+; the table re-read from those runs by the same command with --report}"
	echo
	echo "Every server runs llama-3-8b with its GPUs capped at 24 GiB, one tenant"
	echo "a GPU, the lengths of [gb200nvl72_hot.json]($up/scenarios/kinds/gb200nvl72_hot.json)"
	echo "(prompts 2340, outputs 439 tokens, lognormal); a hot tenant 20 req/s, a"
	echo "light one 0.5 req/s (Poisson), $duration s of arrivals, the steady window"
	echo "from $warmup s to each tenant's last arrival. Hot shares: 8, 24, 48 of 72 on"
	echo '`gb200nvl72` (NVLink 5 switch); 1, 3, 5 of 8 on `b200x8` (NVLink 5'
	echo 'switch) and `l40sx8` (PCIe 4 only): the nearest shares an 8-GPU server'
	echo 'has (12.5%, 37.5%, 62.5% against 11%, 33%, 67%). Throughput is the whole'
	echo 'server'"'"'s `steady_tok_s` (the sum over its tenants), per seed against the'
	echo 'same seed'"'"'s other policy; mean over the seeds, [range] with several.'
	echo 'Lender: lent under ema and borrowed nothing, its `vs_static_tpot_paired_p50`;'
	echo 'borrower: borrowed, its `vs_static_tpot_p50`; per seed the worst, mean (max)'
	echo 'over seeds. The last three columns are from ema'"'"'s `EMA_DECISION_LOG`'
	echo '(steps with bytes > 0): GPUs that lent over the run, distinct lenders'
	echo 'per borrower (mean, max), and the bytes on a borrower'"'"'s top lender over'
	echo 'all its bytes (mean over borrowers). "-": not run (see the command'"'"'s'
	echo '`EMA_RACK_EMA_MAX`) or nothing to show.'
	echo
	table
	echo
	echo '![ema / pooled and pooled / static against the hot share](rack.png)'
	echo
	echo "Figure: [rack.png](rack.png), [rack.pdf](rack.pdf), drawn by"
	echo "[plots/rack.gp]($up/plots/rack.gp) from [rack.csv](rack.csv)."
	if [ -s "$findings" ]; then
		echo
		cat "$findings"
	fi
} > "$tmp"
mv -f "$tmp" "$write"
echo "Written: $write" >&2
