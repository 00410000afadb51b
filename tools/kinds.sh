#!/bin/sh
# kinds.sh: ema's planner over the six scenario kinds of issue 35
# (scenarios/kinds/), each at three loads from its GPU's capacity to 4 x
# past it (many_to_many: 0.5 x to 2 x on every GPU), over seeds, under
# static, host_swap, remote_direct, pooled (the bound: remote memory
# read as local), pooled_tpot (that bound at ema's TPOT budget) and ema,
# on the same requests. Prints one markdown
# table: per (kind, load), the means over the seeds of ema / static,
# ema / pooled, ema / the best of static, host_swap and remote_direct,
# pooled / static (all on the whole server's steady_tok_s, the sum over
# its tenants), pooled's worst borrower's TPOT p50 against static (what
# its gain costs the borrower), ema / pooled_tpot, the worst lender's paired TPOT against
# static and the worst borrower's TPOT p50 against static, with a mark per check of the
# issue:
#   (1) ema >= 0.98 x the best of static, host_swap and remote_direct;
#   (2) ema >= 0.95 x pooled where pooled gains 10% or more over static;
#   (3) every lender's paired TPOT (vs_static_tpot_paired_p50) <= 1.05;
#   (4) every borrower's TPOT p50 (vs_static_tpot_p50) <= 1.10.
# A lender is a tenant that lent under ema (lent_peak_gib > 0) and
# borrowed nothing; a borrower one that borrowed (borrowed_peak_gib >
# 0), whether or not it also lent (summary.csv's lender_guarantee
# "both": it is judged as a borrower). Then, for the lender check only,
# a second table of the same kinds under model error: each entry of
# EMA_ERRORS is one more sweep (static and ema) with those --set's.
#
# usage: tools/kinds.sh [--write FILE] [EMA_BINARY] [OUT_DIR]
#   --write FILE  also writes the tables as a dated markdown page, replaced
#               only when complete; a "## Findings" section at the end of
#               an existing FILE is kept
#   EMA_BINARY  the ema program (default: ./ema, else ema on PATH)
#   OUT_DIR     where the sweep folders go (default: a new folder under
#               ${TMPDIR:-/tmp}); the same command on the same folder
#               resumes (the time the page gives is this invocation's)
# Environment:
#   EMA_SEEDS   seeds (default "1 2 3")
#   EMA_JOBS    runs at once (default 2)
#   EMA_KINDS   the kinds to run (default: all six, in table order)
#   EMA_ERRORS  the model errors of the second table, space-separated,
#               several --set's of one entry joined by '/' (default
#               "plan.error.link=-20% plan.error.interference=+20%
#               plan.error.link=-20%/plan.error.interference=+20%");
#               empty: no second table
#   EMA_FLAGS   more options for every sweep (word-split)
#   EMA_SHARED_TRACES  the public traces (default ../shared/traces beside
#               the checkout); the kinds on a trace are skipped, with a
#               message, when their file is not there
#
# A kind whose load is one key is one `ema sweep --vary KEY=V1,V2,V3
# --vary seed=SEEDS`; one whose load is several keys moved together (the
# four hot tenants of h200x8_70b_4hot, the four tenants of many_to_many)
# is one `ema sweep --vary seed=SEEDS` per load with --set KEY=V for
# each. Columns of sweep.csv are read by name.
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
usage="usage: $0 [--write FILE] [EMA_BINARY] [OUT_DIR]"
write=
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
if [ $# -ge 2 ]; then
	out=$2
	mkdir -p "$out"
else
	out=$(mktemp -d "${TMPDIR:-/tmp}/ema-kinds.XXXXXX")
fi
seeds=${EMA_SEEDS:-1 2 3}
jobs=${EMA_JOBS:-2}
kinds=${EMA_KINDS:-a100x8_30b_hot h200x8_70b_4hot h200x2_conv code_prefill bursty_lenders many_to_many}
errors=${EMA_ERRORS-plan.error.link=-20% plan.error.interference=+20% plan.error.link=-20%/plan.error.interference=+20%}
traces=${EMA_SHARED_TRACES:-$here/../shared/traces}
policies=static,host_swap,remote_direct,pooled,pooled_tpot,ema
csv() { echo "$1" | tr ' ' ','; }

# spec KIND: sets keys (the load's keys, moved together), values (the
# three loads), labels (each as a multiple of what one GPU serves under
# static), unit and trace (the file of ../shared/traces it replays,
# empty for none)
spec() {
	trace=
	labels="1x 2x 4x"
	unit=req/s
	case $1 in
	a100x8_30b_hot)
		keys=tenants.0.workload.rate_rps
		values="0.2 0.4 0.8" ;;
	h200x8_70b_4hot)
		keys="tenants.0.workload.rate_rps tenants.1.workload.rate_rps tenants.2.workload.rate_rps tenants.3.workload.rate_rps"
		values="0.35 0.7 1.4" ;;
	h200x2_conv)
		keys=tenants.0.workload.rate_scale
		values="1 2 4"; unit="x trace"
		trace=AzureLLMInferenceTrace_conv.csv ;;
	code_prefill)
		keys=tenants.0.workload.rate_scale
		values="1 2 4"; unit="x trace"
		trace=AzureLLMInferenceTrace_code.csv ;;
	bursty_lenders)
		keys=tenants.0.workload.rate_rps
		values="1 2 4" ;;
	many_to_many)
		keys="tenants.0.workload.rate_rps tenants.1.workload.rate_rps tenants.2.workload.rate_rps tenants.3.workload.rate_rps"
		values="0.5 1 2"; labels="0.5x 1x 2x" ;;
	*)
		echo "$0: unknown kind $1 (EMA_KINDS)" >&2
		exit 2 ;;
	esac
}

# has_trace KIND: the kind's trace is there (or it needs none)
has_trace() {
	spec "$1"
	[ -z "$trace" ] || [ -r "$traces/$trace" ]
}

# sweeps KIND DIR POLICIES [OPTION...]: the kind's sweeps into DIR/KIND
# (one key) or DIR/KIND-1, -2, -3 (one per load), with the options
sweeps() {
	kind=$1 dir=$2 pols=$3
	shift 3
	mkdir -p "$dir"
	spec "$kind"
	[ -z "$trace" ] || set -- --set "tenants.0.workload.trace=$traces/$trace" "$@"
	# EMA_FLAGS: extra options, word-split on purpose
	# shellcheck disable=SC2086
	set -- --config "$here/scenarios/kinds/$kind.json" --set "policies=$pols" "$@" ${EMA_FLAGS:-} \
		--vary "seed=$(csv "$seeds")" --no-plots -q -j "$jobs"
	case $keys in
	*" "*)
		i=0
		for v in $values; do
			i=$((i + 1))
			sets=
			for k in $keys; do sets="$sets --set $k=$v"; done
			# shellcheck disable=SC2086
			"$ema" sweep "$@" $sets --out "$dir/$kind-$i" >/dev/null
		done ;;
	*)
		"$ema" sweep "$@" --vary "$keys=$(csv "$values")" --out "$dir/$kind" >/dev/null ;;
	esac
}

# cells MODE KIND DIR [N]: per load of KIND (only the N-th with N), its
# cells from the sweeps in DIR: MODE main, a whole table row; MODE
# lender, the lender's figure and mark only
cells() {
	mode=$1 kind=$2 dir=$3 only=${4:-}
	spec "$kind"
	li=0
	for v in $values; do
		li=$((li + 1))
		[ -z "$only" ] || [ "$only" = "$li" ] || continue
		label=$(echo "$labels" | cut -d' ' -f"$li")
		case $keys in
		*" "*) file=$dir/$kind-$li/sweep.csv; col= ;;
		*) file=$dir/$kind/sweep.csv; col=$keys ;;
		esac
		[ "$mode" = lender ] || printf '| %s | %s (%s %s) ' "$kind" "$label" "$v" "$unit"
		awk -F, -v mode="$mode" -v col="$col" -v val="$v" '
		function r(a, b) { return b > 0 ? a / b : "" }
		function add(k, x) { if (x != "") { n[k]++; s[k] += x } }
		function mean(k) { return n[k] ? s[k] / n[k] : "" }
		function f(x) { return x == "" ? "-" : sprintf("%.3f", x) }
		function fm(k) {
			if (!n[k]) return "-"
			return sprintf("%.3f (max %.3f%s)", mean(k), mx[k], n[k] < ns ? sprintf("; %d of %d seeds", n[k], ns) : "")
		}
		function mark(ok) { return ok ? "pass" : "**fail**" }
		NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		col != "" && $c[col] + 0 != val + 0 { next }
		{
			sd = $c["seed"]; p = $c["policy"]; t = $c["tenant"]
			if (!(sd in seen)) { seen[sd] = 1; order[++ns] = sd }
			S[sd, p] += $c["steady_tok_s"]
			if (t ~ /^hot/) H[sd, p] += $c["steady_tok_s"]
			if (p == "pooled" && $c["borrowed_peak_gib"] > 0 && $c["vs_static_tpot_p50"] != "") {
				x = $c["vs_static_tpot_p50"] + 0
				if (!(sd in PB) || x > PB[sd]) PB[sd] = x
			}
			if (p != "ema") next
			if ($c["lent_peak_gib"] > 0 && $c["borrowed_peak_gib"] == 0 && $c["vs_static_tpot_paired_p50"] != "") {
				x = $c["vs_static_tpot_paired_p50"] + 0
				if (!(sd in L) || x > L[sd]) L[sd] = x
			}
			if ($c["borrowed_peak_gib"] > 0 && $c["vs_static_tpot_p50"] != "") {
				x = $c["vs_static_tpot_p50"] + 0
				if (!(sd in B) || x > B[sd]) B[sd] = x
			}
			# lent and borrowed: judged as a borrower; its paired TPOT shown
			if ($c["lent_peak_gib"] > 0 && $c["borrowed_peak_gib"] > 0 && $c["vs_static_tpot_paired_p50"] != "") {
				x = $c["vs_static_tpot_paired_p50"] + 0
				if (!(sd in W) || x > W[sd]) W[sd] = x
			}
		}
		END {
			for (j = 1; j <= ns; j++) {
				sd = order[j]
				best = S[sd, "static"]
				if (S[sd, "host_swap"] > best) best = S[sd, "host_swap"]
				if (S[sd, "remote_direct"] > best) best = S[sd, "remote_direct"]
				add("st", r(S[sd, "ema"], S[sd, "static"]))
				add("po", r(S[sd, "ema"], S[sd, "pooled"]))
				add("best", r(S[sd, "ema"], best))
				add("pst", r(S[sd, "pooled"], S[sd, "static"]))
				add("pt", r(S[sd, "ema"], S[sd, "pooled_tpot"]))
				add("hot", r(H[sd, "ema"], H[sd, "pooled"]))
				if (sd in L) { add("l", L[sd]); if (!("l" in mx) || L[sd] > mx["l"]) mx["l"] = L[sd] }
				if (sd in B) { add("b", B[sd]); if (!("b" in mx) || B[sd] > mx["b"]) mx["b"] = B[sd] }
				if (sd in W) { add("w", W[sd]); if (!("w" in mx) || W[sd] > mx["w"]) mx["w"] = W[sd] }
				if (sd in PB) { add("pb", PB[sd]); if (!("pb" in mx) || PB[sd] > mx["pb"]) mx["pb"] = PB[sd] }
			}
			if (ns == 0) { print "| no rows in " FILENAME " |"; exit }
			c3 = n["l"] ? mark(mean("l") <= 1.05) : "n/a"
			if (mode == "lender") { printf "| %s | %s ", fm("l"), c3; exit }
			c1 = mark(mean("best") >= 0.98)
			c2 = mean("pst") >= 1.10 ? mark(mean("po") >= 0.95) : "n/a"
			c4 = n["b"] ? mark(mean("b") <= 1.10) : "n/a"
			printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			       f(mean("st")), f(mean("po")), f(mean("best")), f(mean("pst")), fm("pb"), f(mean("pt")), f(mean("hot")),
			       fm("l"), fm("b"), fm("w"), c1, c2, c3, c4, ns
		}' "$file"
	done
}

# lender_rows KIND: the lender table's rows of KIND, one per load, from
# the error sweeps
lender_rows() {
	spec "$1"
	n=0
	for lv in $values; do
		n=$((n + 1))
		printf '| %s | %s (%s %s) ' "$1" "$(echo "$labels" | cut -d' ' -f"$n")" "$lv" "$unit"
		e=0
		for err in $errors; do
			e=$((e + 1))
			cells lender "$1" "$out/error-$e" "$n"
			spec "$1"
		done
		echo "|"
	done
}

start=$(date +%s)
ran=
for kind in $kinds; do
	if ! has_trace "$kind"; then
		echo "kinds: $kind skipped: no trace $traces/$trace (EMA_SHARED_TRACES)" >&2
		continue
	fi
	echo "kinds: $kind" >&2
	sweeps "$kind" "$out" "$policies"
	e=0
	for err in $errors; do
		e=$((e + 1))
		echo "kinds: $kind under $(echo "$err" | tr / ' ')" >&2
		set --
		for one in $(echo "$err" | tr / ' '); do set -- "$@" --set "$one"; done
		sweeps "$kind" "$out/error-$e" static,ema "$@"
	done
	ran="$ran $kind"
done
elapsed=$(($(date +%s) - start))
echo "kinds: sweep folders in $out, $elapsed s" >&2

table() {
	echo "| kind | load | ema / static | ema / pooled | ema / best of static, host_swap, remote_direct | pooled / static | pooled's worst borrower, TPOT p50 / static | ema / pooled_tpot | ema / pooled, hot* only | worst lender, paired TPOT | worst borrower, TPOT p50 / static | worst two-way tenant, paired TPOT | (1) >= 0.98 x best | (2) >= 0.95 x pooled | (3) lenders <= 1.05 | (4) borrowers <= 1.10 | seeds |"
	echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- | --- | ---: |"
	for kind in $kinds; do
		case " $ran " in
		*" $kind "*) cells main "$kind" "$out" ;;
		*) echo "| $kind | skipped: no trace | | | | | | | | | | | | | | | |" ;;
		esac
	done
}

error_table() {
	[ -n "$errors" ] || return 0
	printf '| kind | load '
	for err in $errors; do printf '| %s | (3) ' "$(echo "$err" | sed 's|/|, |g')"; done
	echo "|"
	printf '| --- | --- '
	for err in $errors; do printf '| ---: | --- '; done
	echo "|"
	for kind in $ran; do lender_rows "$kind"; done
}

echo
table
echo
error_table
[ -n "$write" ] || exit 0

# links from FILE's folder back to the README and to the results page
wdir=$(cd "$(dirname "$write")" && pwd -P)
case $wdir/ in
"$(cd "$here" && pwd -P)"/*)
	up=$(echo "${wdir#"$(cd "$here" && pwd -P)"/}" | sed -e 's|[^/][^/]*|..|g') ;;
*) up=.. ;;
esac
[ "$wdir" != "$(cd "$here" && pwd -P)" ] || up=.
findings=$(mktemp "${TMPDIR:-/tmp}/ema-kinds-findings.XXXXXX")
tmp="$write.tmp-$$"
trap 'rm -f "$tmp" "$findings"' EXIT
if [ -f "$write" ]; then
	sed -n '/^## Findings/,$p' "$write" > "$findings"
fi
# the backquotes below are markdown, not commands
# shellcheck disable=SC2016
{
	echo '# ema'"'"'s planner over six scenario kinds'
	echo
	echo '<!-- Written by tools/kinds.sh --write: rerun the command below; only the Findings section is written by hand, and kept. -->'
	echo
	echo "[README]($up/README.md) > [results]($up/results/README.md) > planner kinds"
	echo
	printf 'Generated on %s at commit %s with `%stools/kinds.sh --write %s %s %s` (%s), seeds %s, in %s s (%s runs at once on %s cores).\n' \
		"$(date -u +%Y-%m-%d)" "$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
		"${EMA_FLAGS:+EMA_FLAGS=\"$EMA_FLAGS\" }" "$write" "$ema" "$out" "$("$ema" version)" \
		"$(csv "$seeds")" "$elapsed" "$jobs" "$(nproc 2>/dev/null || echo '?')"
	echo
	echo "The kinds ([scenarios/kinds/]($up/scenarios/kinds/)), each on the simulator for"
	echo 'static, host_swap, remote_direct, pooled, pooled_tpot and ema on the same requests;'
	echo 'a load is a multiple of what one GPU serves under static (about where'
	echo 'static'"'"'s TTFT starts to climb), set on the keys named:'
	echo
	echo '| kind | server, model | tenants | load |'
	echo '| --- | --- | --- | --- |'
	echo '| `a100x8_30b_hot` | a100x8_80gb, OPT-30B | hot0 Poisson beside 7 light (0.1 req/s), ShareGPT-like lengths (2340/439 tokens), 600 s | hot0 0.2, 0.4, 0.8 req/s |'
	echo '| `h200x8_70b_4hot` | h200x8, Llama-3-70B (weights leave ~8 GiB of KV a GPU) | hot0-3 Poisson beside 4 light (0.1 req/s), 600 s | hot0-3 each 0.35, 0.7, 1.4 req/s |'
	echo '| `h200x2_conv` | h200x2 capped at 24 GiB, Llama-2-7B | hot0 replays the Azure 2023 conversation trace (its first 1200 s) beside light1 (Poisson 0.5 req/s, 600 s) | `rate_scale` 1, 2, 4 |'
	echo '| `code_prefill` | the same | hot0 replays the Azure 2023 code trace (1200 s from 1080 s: prompts ~2000, outputs ~27 tokens) beside light1 | `rate_scale` 1, 2, 4 |'
	echo '| `bursty_lenders` | a100x4_40gb, Llama-2-7B | hot0 Poisson beside 3 lenders with gamma arrivals (0.15 req/s, cv 4: bursts and silences), 600 s | hot0 1, 2, 4 req/s |'
	echo '| `many_to_many` | a100x4_40gb, Llama-2-7B | 4 tenants, all gamma (cv 4), 600 s: each GPU lends in its silences and borrows in its bursts | each 0.5, 1, 2 req/s |'
	echo
	echo 'Throughput is the whole server'"'"'s: `steady_tok_s` summed over its'
	echo 'tenants (each tenant'"'"'s output tokens finishing between 10% of its last'
	echo 'arrival and that arrival, over that window), per seed against the same'
	echo 'seed'"'"'s other policy, then the mean over the seeds; "hot* only" is the'
	echo 'same over the tenants named hot*. A lender lent under ema'
	echo '(`lent_peak_gib` > 0) and borrowed nothing; its figure is'
	echo '`vs_static_tpot_paired_p50` (each request against itself under static).'
	echo 'A borrower borrowed under ema (`borrowed_peak_gib` > 0), lending or not;'
	echo 'its figure is `vs_static_tpot_p50`. A two-way tenant lent and borrowed:'
	echo 'judged as a borrower, its paired TPOT is shown too (no check). Per seed'
	echo 'the worst tenant, then the mean over the seeds (the worst seed, and how'
	echo 'many seeds had such a tenant when not all). Checks, on the means: (1) ema'
	echo '>= 0.98 x the best of static, host_swap and remote_direct; (2) ema >='
	echo '0.95 x pooled where pooled / static >= 1.10 (else n/a); (3) lenders <='
	echo '1.05; (4) borrowers <= 1.10. pooled reads remote memory as local: it'
	echo 'is the bound of moving KV, not of moving compute, so ema'"'"'s remote'
	echo 'attention (`policy.ema.remote_path=compute`, in its default `auto`) may'
	echo 'pass it; ratios above 1 are as measured. pooled keeps no TPOT budget:'
	echo 'the column "pooled'"'"'s worst borrower" (its worst borrowing tenant'"'"'s'
	echo '`vs_static_tpot_p50`, as for ema) shows what its gain costs the'
	echo 'borrower'"'"'s TPOT, which ema'"'"'s guarantee (b) (`policy.ema.tpot_budget`,'
	echo '10% of the local-only step) does not allow. `pooled_tpot` is the pool'
	echo 'held to that guarantee (its `tpot_budget` 0.10, as ema'"'"'s: doc/policies.md,'
	echo '"The bounds"); ema / pooled_tpot is shown without a check.'
	echo
	table
	if [ -n "$errors" ]; then
		echo
		echo '## Under model error: the lenders'
		echo
		echo 'The same kinds and loads, static and ema only, with ema planning on a'
		echo 'model that is wrong by the `plan.error.*` shown (the simulator charges'
		echo "the truth; [doc/model.md]($up/doc/model.md#the-policy-against-a-model-it-does-not-know)):"
		echo 'the worst lender'"'"'s paired TPOT, mean over the seeds (worst seed), and'
		echo 'check (3).'
		echo
		error_table
	fi
	if [ -s "$findings" ]; then
		echo
		cat "$findings"
	fi
} > "$tmp"
mv -f "$tmp" "$write"
echo "Written: $write" >&2
