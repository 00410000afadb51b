#!/bin/sh
# test_cli.sh: end-to-end tests of the ema command line, as a user would
# check it: `ema list`, the run folder and its files, reproducing a run from
# its config.json, seeds, and every bad-input path (exit 2, a located
# message, and nothing written). Run by Automake's harness from the build
# folder (./ema) with EMA_SRCDIR set; exit 0 pass, 1 fail, 77 skip, 99 error.
# Option lists ($SHORT, $TRACE) are split into words on purpose.
# shellcheck disable=SC2086,SC2012,SC2016

EMA=${EMA:-./ema}
SRC=${EMA_SRCDIR:-$(dirname "$0")/..}
DATA=$SRC/tests/data/cli
# Short runs: the default scenario's 120 s of arrivals cut to 10 s.
SHORT="--set tenants.0.workload.duration_s=10 --set tenants.1.workload.duration_s=10"
POLICIES="static pooled ideal_kv ideal host_swap remote_direct ema"

if [ ! -x "$EMA" ]; then
	echo "test_cli.sh: $EMA is not an executable (run from the build folder or set EMA)" >&2
	exit 99
fi
if [ ! -f "$DATA/trace_ok.csv" ]; then
	echo "test_cli.sh: fixtures not found in $DATA (set EMA_SRCDIR)" >&2
	exit 99
fi
# The tests cd around; make both paths absolute first.
EMA=$(cd "$(dirname "$EMA")" && pwd)/$(basename "$EMA")
DATA=$(cd "$DATA" && pwd)

T=$(mktemp -d "${TMPDIR:-/tmp}/ema-cli.XXXXXX") || exit 99
trap 'rm -rf "$T"' EXIT
trap 'exit 1' HUP INT TERM
# Runs happen in $T/cwd: after a failed run it must still be empty (no
# output folder, no DIR.tmp-*, no runs/).
mkdir "$T/cwd" "$T/in" "$T/log" || exit 99
cd "$T/cwd" || exit 99

passed=0
failed=0

pass() { passed=$((passed + 1)); }
fail() {
	failed=$((failed + 1))
	echo "FAIL: $*"
}
# check DESCRIPTION COMMAND...: one assertion.
check() {
	d=$1
	shift
	if "$@"; then pass; else fail "$d"; fi
}

# ema ARGS...: runs ema, stdout and stderr to $T/log/out and $T/log/err,
# status in $rc.
ema() {
	"$EMA" "$@" >"$T/log/out" 2>"$T/log/err"
	rc=$?
}

# bad_input NAME EXPECTED_STDERR_TEXT ARGS...: `ema run ARGS` must exit 2,
# say EXPECTED (a fixed string, e.g. "file:3:") on stderr, and leave
# nothing behind.
bad_input() {
	name=$1
	want=$2
	shift 2
	ema run "$@" --out "bad_$name"
	check "$name: exit status 2 (got $rc)" [ "$rc" -eq 2 ]
	if grep -qF -- "$want" "$T/log/err"; then
		pass
	else
		fail "$name: stderr lacks \"$want\": $(cat "$T/log/err")"
	fi
	check "$name: nothing on stdout" [ ! -s "$T/log/out" ]
	check "$name: nothing written ($(ls -A | tr '\n' ' '))" [ -z "$(ls -A)" ]
	rm -rf ./* ./.[!.]* 2>/dev/null
}

# same_file A B: byte-identical; differ A B: not.
same_file() { cmp -s "$1" "$2"; }
differ() { ! cmp -s "$1" "$2"; }

# ---- ema list ----------------------------------------------------------

# list WHAT NAMES: each name is the first word of some line of `ema list WHAT`.
list() {
	what=$1
	shift
	ema list "$what"
	check "list $what: exit 0" [ "$rc" -eq 0 ]
	for n in "$@"; do
		check "list $what: $n" awk -v n="$n" '$1 == n { f = 1 } END { exit !f }' "$T/log/out"
	done
}
list policies $POLICIES pooled_tpot
list models llama-2-7b llama-2-13b llama-2-70b llama-3-8b llama-3-70b opt-13b opt-30b
list hardware h200x2 h200x8 h100x8 a100x4_40gb a100x8_80gb b200x8 gb200nvl72 l40sx8
# each says where its figures come from: measured (calibrated) or datasheet
ema list hardware
check "list hardware: gb200nvl72 marked datasheet" grep -q "^gb200nvl72 .*(datasheet" "$T/log/out"
check "list hardware: h200x2 marked calibrated" grep -q "^h200x2 .*(calibrated" "$T/log/out"
list figures throughput latency_cdf memory
list backends sim hw
ema list nothing_like_this
check "list nothing_like_this: exit 2" [ "$rc" -eq 2 ]

# ---- the command line: help, options, man page, completion --------------

COMMANDS="run config list sweep figures paths bench calibrate validate version help"
# same_output NAME ARGS...: `ema ARGS` exits 0 with the stdout of the
# last `ema` call ($T/log/out saved as $T/log/want), nothing on stderr.
same_output() {
	name=$1
	shift
	ema "$@"
	check "$name: exit 0 (got $rc)" [ "$rc" -eq 0 ]
	check "$name: nothing on stderr" [ ! -s "$T/log/err" ]
	check "$name: same text as the first" same_file "$T/log/out" "$T/log/want"
}
ema help
check "help: exit 0" [ "$rc" -eq 0 ]
check "help: nothing on stderr" [ ! -s "$T/log/err" ]
for c in $COMMANDS; do
	check "help: lists $c" awk -v c="$c" '/^commands:/ { on = 1; next } /^$/ { on = 0 }
		on && $1 == c { f = 1 } END { exit !f }' "$T/log/out"
done
check "help: the common options, with who takes them" \
	grep -qE '^  -c, --config FILE +run, config, sweep, paths, validate$' "$T/log/out"
cp "$T/log/out" "$T/log/want"
same_output "ema alone"
same_output "ema --help" --help
same_output "ema -h" -h
for c in $COMMANDS; do
	ema help "$c"
	check "help $c: exit 0 (got $rc)" [ "$rc" -eq 0 ]
	check "help $c: usage first" [ "$(head -1 "$T/log/out" | cut -d' ' -f1-3)" = "usage: ema $c" ]
	check "help $c: an options section" grep -qx 'options:' "$T/log/out"
	cp "$T/log/out" "$T/log/want"
	same_output "$c --help" "$c" --help
	same_output "$c -h" "$c" -h
	# the parser takes every option the help shows: each given alone
	# (with a value of its kind) before --help, which then prints the help
	for opt in $(sed -n '/^options:/,/^$/p' "$T/log/want" | grep -oE '^ +(-[a-z], )?--[a-z-]+' |
		grep -oE -- '--[a-z-]+$'); do
		case $opt in
		--set | --vary) val=seed=2 ;;
		--backend) val=sim ;;
		--partition | --account) val=p1 ;;
		--time) val=10 ;;
		--mem) val=1G ;;
		--sbatch-arg) val=--qos=x ;;
		--config | --out | --csv | --trace | --name | --seed | --jobs | --shard | --sbatch | \
			--tasks | --throttle | --max-rate | --slo | --resolution | --runs) val=2 ;;
		*) val= ;;
		esac
		same_output "$c $opt $val --help" "$c" $opt $val --help
	done
	# an unknown option: exit 2, the message, nothing on stdout
	ema "$c" --no-such-option
	check "$c --no-such-option: exit 2 (got $rc)" [ "$rc" -eq 2 ]
	check "$c --no-such-option: says so ($(cat "$T/log/err"))" [ "$(cat "$T/log/err")" = \
		"ema $c: unknown option --no-such-option (see 'ema help $c')" ]
	check "$c --no-such-option: nothing on stdout" [ ! -s "$T/log/out" ]
done
ema help validate
cp "$T/log/out" "$T/log/want"
same_output "validate --seed 3 --help" validate --seed 3 --help
ema run -Z
check "run -Z: exit 2" [ "$rc" -eq 2 ]
check "run -Z: says so" [ "$(cat "$T/log/err")" = "ema run: unknown option -Z (see 'ema help run')" ]
ema run --out
check "run --out without a value: exit 2" [ "$rc" -eq 2 ]
check "run --out without a value: says so" [ "$(cat "$T/log/err")" = \
	"ema run: --out expects DIR (see 'ema help run')" ]
ema run extra_word
check "run extra_word: exit 2" [ "$rc" -eq 2 ]
check "run extra_word: says so" grep -qF "ema run: unexpected argument extra_word" "$T/log/err"
ema no_such_command
check "unknown command: exit 2" [ "$rc" -eq 2 ]
check "unknown command: says so" grep -qF 'ema: unknown command "no_such_command"' "$T/log/err"
ema help no_such_command
check "help of an unknown command: exit 2" [ "$rc" -eq 2 ]
ema --version
check "--version: exit 0" [ "$rc" -eq 0 ]
check "--version: ema and the version" grep -qE '^ema [0-9]+\.[0-9]+' "$T/log/out"
cp "$T/log/out" "$T/log/want"
same_output "version" version
check "nothing written by the commands above ($(ls -A | tr '\n' ' '))" [ -z "$(ls -A)" ]

# The common options mean the same in every command that takes a scenario:
# --seed N is --set seed=N, -c is --config, -s is --set.
ema config --seed 5
check "config --seed 5: exit 0" [ "$rc" -eq 0 ]
check "config --seed 5: seed 5" grep -q '"seed": 5,' "$T/log/out"
cp "$T/log/out" "$T/log/want"
same_output "config -s seed=5" config -s seed=5
"$EMA" config >"$T/seed1.json"
check "config: seed 1 by default" grep -q '"seed": 1,' "$T/seed1.json"
same_output "config -c FILE --seed 5" config -c "$T/seed1.json" --seed 5
ema config default
check "config default: the embedded scenario as written" \
	same_file "$T/log/out" "$SRC/scenarios/default.json"
ema config default --seed 3
check "config default --seed 3: exit 2 (got $rc)" [ "$rc" -eq 2 ]
# sweep and validate take the same short spellings and --seed (checked by
# the output path refused before anything runs)
out_first() {
	name=$1
	want=$2
	shift 2
	ema "$@"
	check "$name: exit 2 (got $rc)" [ "$rc" -eq 2 ]
	check "$name: refuses the output first ($(cat "$T/log/err"))" grep -qF -- "$want" "$T/log/err"
	check "$name: nothing written ($(ls -A | tr '\n' ' '))" [ -z "$(ls -A)" ]
}
out_first "sweep -c -s --seed -o" "--out nosuch/sw: parent folder nosuch does not exist" \
	sweep -c "$T/seed1.json" -s policies=static --seed 4 --vary seed=1,2 -o nosuch/sw -q
out_first "validate -c -s --seed -q" "--csv nosuch/v.csv: parent folder nosuch does not exist" \
	validate -c "$T/seed1.json" -s policies=static --seed 4 -q --csv nosuch/v.csv
out_first "calibrate --out, missing parent" "--out nosuch/cal.json: parent folder nosuch does not exist" \
	calibrate --quick --out nosuch/cal.json
out_first "calibrate --csv, missing parent" "--csv nosuch/cal.csv: parent folder nosuch does not exist" \
	calibrate --csv nosuch/cal.csv
out_first "bench --hw --csv, missing parent" "--csv nosuch/b.csv: parent folder nosuch does not exist" \
	bench --hw --quick --csv nosuch/b.csv
out_first "bench --csv without --hw" "--csv writes the hardware figures" bench --csv b.csv
out_first "bench --hw --trace" "--trace is for the simulator's figures" \
	bench --backend hw --trace "$DATA/trace_ok.csv"

# The man page is the one `ema help --man` writes (regenerate it with
# `./ema help --man > doc/ema.1` after changing the command table).
ema help --man
check "help --man: exit 0" [ "$rc" -eq 0 ]
if same_file "$T/log/out" "$SRC/doc/ema.1"; then
	pass
else
	fail "doc/ema.1 differs from 'ema help --man' (run: ./ema help --man > doc/ema.1)"
fi
if command -v man >/dev/null 2>&1 && command -v groff >/dev/null 2>&1; then
	# (man's own stderr may hold notes about the locale: only groff's is checked)
	MANWIDTH=80 man -l "$SRC/doc/ema.1" >"$T/log/man" 2>/dev/null
	check "man -l doc/ema.1: exit 0" [ $? -eq 0 ]
	for c in $COMMANDS; do
		check "man page: ema $c" grep -q "^   ema $c\$" "$T/log/man"
	done
	check "man page: the options" grep -qE '^ +-c, --config FILE$' "$T/log/man"
	groff -man -ww -z "$SRC/doc/ema.1" 2>"$T/log/man_err"
	check "groff -ww: no warning ($(head -3 "$T/log/man_err"))" [ ! -s "$T/log/man_err" ]
else
	echo "note: man or groff not found, the man page is not rendered"
fi

# Bash completion: the script sourced in bash, the completion function
# called as bash calls it (COMP_WORDS, COMP_CWORD).
COMPLETION=$SRC/tools/ema-completion.bash
# complete WORD...: the candidates for the last word, sorted, one a line.
complete() {
	bash -c '. "$1" || exit 99; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _ema
		printf "%s\n" "${COMPREPLY[@]}"' _ "$COMPLETION" "$EMA" "$@" 2>&1 | sort
}
# completes WANT WORD...: exactly these candidates (space-separated).
completes() {
	want=$1
	shift
	got=$(complete "$@" | tr '\n' ' ' | sed 's/ $//')
	if [ "$got" = "$want" ]; then pass; else fail "complete ema $*: want \"$want\", got \"$got\""; fi
}
if command -v bash >/dev/null 2>&1; then
	completes "calibrate config" c
	completes "$(echo $COMMANDS --help --version | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ $//')" ""
	# each command's options are the ones its help lists
	for c in $COMMANDS; do
		"$EMA" help "$c" | sed -n '/^options:/,/^$/p' | grep -oE -- '--[a-z-]+' | sort -u >"$T/log/want"
		complete "$c" -- | sort -u >"$T/log/got"
		check "complete ema $c --: the options of 'ema help $c' ($(tr '\n' ' ' <"$T/log/got"))" \
			same_file "$T/log/want" "$T/log/got"
	done
	completes "--config" run --con
	completes "figures" list f
	completes "merge" sweep m
	mkdir -p "$T/sdir/one" && completes "$T/sdir/one" sweep merge "$T/sdir/o" && rm -rf "$T/sdir"
	completes "default" config d
	completes "sim" bench --backend s
	completes "$("$EMA" list policies | awk '{ print "policies=" $1 }' | sort | tr '\n' ' ' |
		sed 's/ $//')" run -s policies=
	completes "policies=static,ema" run --set policies=static,e
	# as bash splits the word at '=': only what follows it is replaced
	completes "static,ema" run --set policies = static,e
	completes "$("$EMA" list hardware | awk '/^h200/ { print "hardware=" $1 }' | sort |
		tr '\n' ' ' | sed 's/ $//')" run --set hardware=h200
	completes "llama-3-70b llama-3-8b" sweep --vary model = llama-3
	mkdir "$T/cdir" "$T/cdir/sub" && touch "$T/cdir/scenario.json"
	completes "$T/cdir/scenario.json $T/cdir/sub" run --config "$T/cdir/"
	completes "$T/cdir/sub" run --out "$T/cdir/"
	completes "$T/cdir/sub" sweep -o "$T/cdir/s"
	completes "$T/cdir/scenario.json $T/cdir/sub" calibrate --out "$T/cdir/"
	completes "--out=$T/cdir/sub" run "--out=$T/cdir/s"
	rm -rf "$T/cdir"
else
	echo "note: bash not found, the completion is not checked"
fi

# ---- one run and its folder ------------------------------------------

R=$T/runs
mkdir "$R"
ema run $SHORT --out "$R/r1"
check "run: exit 0 ($(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]
for f in config.json run.json summary.csv requests.csv timeline.csv links.csv transfers.csv; do
	check "run: $f written" [ -s "$R/r1/$f" ]
done
check "run: no temporary folder left" [ "$(ls -A "$R")" = r1 ]
check "run: stdout names the folder" grep -qF "$R/r1" "$T/log/out"
# the results line lists what the folder holds, no more, no less
listed=$(sed -n "s|^results: $R/r1/ (\(.*\))\$|\1|p" "$T/log/out" | tr -d ' ' | tr ',' '\n' | sort | tr '\n' ' ')
held=$(cd "$R/r1" && ls -p | sort | tr '\n' ' ')
check "run: the results line lists the folder's files ($listed) = ($held)" [ "${listed:-none}" = "$held" ]
check "run: summary.csv header" \
	grep -q '^policy,tenant,gpu,requests,completed,dropped,throughput_tok_s,req_s,ttft_p50_ms,ttft_p90_ms,ttft_p99_ms,tpot_p50_ms,tpot_p90_ms,tpot_p99_ms,e2e_p50_ms,e2e_p99_ms,preemptions,kv_peak_gib' \
	"$R/r1/summary.csv"
check "run: requests.csv header" grep -q '^policy,tenant,request,arrival_ms,' "$R/r1/requests.csv"
# one row per (policy, tenant): 7 policies x 2 tenants, no pair twice
rows=$(tail -n +2 "$R/r1/summary.csv" | wc -l)
pairs=$(tail -n +2 "$R/r1/summary.csv" | cut -d, -f1,2 | sort -u | wc -l)
check "run: 14 summary rows (got $rows)" [ "$rows" -eq 14 ]
check "run: 14 distinct (policy, tenant) pairs (got $pairs)" [ "$pairs" -eq 14 ]
for p in $POLICIES; do
	for t in t0 t1; do
		check "run: summary row $p,$t" grep -q "^$p,$t," "$R/r1/summary.csv"
	done
done
# every row as wide as the header
check "run: summary.csv rows as wide as the header" \
	awk -F, 'NR == 1 { n = NF } NF != n { exit 1 }' "$R/r1/summary.csv"
check "run: requests.csv rows as wide as the header" \
	awk -F, 'NR == 1 { n = NF } NF != n { exit 1 }' "$R/r1/requests.csv"
check "run: run.json records the seed" grep -q '"seed": 1' "$R/r1/run.json"
check "run: config.json loads again" "$EMA" config --config "$R/r1/config.json" >/dev/null 2>&1
if command -v gnuplot >/dev/null 2>&1; then
	for fig in throughput latency_cdf memory; do
		check "run: plots/$fig.pdf" [ -s "$R/r1/plots/$fig.pdf" ]
		check "run: plots/$fig.png" [ -s "$R/r1/plots/$fig.png" ]
	done
	# the same command twice: every file the same bytes, the figures too
	# (cairo dates a PDF by the clock; ema writes a fixed date over it), but
	# run.json, whose wall-clock fields differ (doc/outputs.md)
	sleep 1
	ema run $SHORT --out "$R/r1b"
	check "run twice: exit 0" [ "$rc" -eq 0 ]
	for f in $(cd "$R/r1" && find . -type f ! -name run.json | sort); do
		check "run twice: the same $f" same_file "$R/r1/$f" "$R/r1b/$f"
	done
	check "run twice: the same files" [ "$(cd "$R/r1" && find . | sort)" = "$(cd "$R/r1b" && find . | sort)" ]
	rm -rf "$R/r1b"
else
	echo "note: gnuplot not found, figures not checked"
	check "run: plots/ scripts written" [ -n "$(ls "$R/r1/plots/"*.gp 2>/dev/null)" ]
fi

# A GB200 NVL72 (issue 36): the 72-tenant scenario, its first 5 s,
# under static, pooled and ema: a row per tenant and policy, borrowing
# under pooled beyond GPU 63 (two words of every GPU set)
ema run -c "$SRC/scenarios/kinds/gb200nvl72_hot.json" --set policies=static,pooled,ema \
	--set horizon_s=5 --no-plots -q -o "$R/nvl72"
check "gb200nvl72_hot: exit 0 (got $rc: $(cat "$T/log/err"))" [ "$rc" -eq 0 ]
check "gb200nvl72_hot: 216 rows" [ "$(tail -n +2 "$R/nvl72/summary.csv" | wc -l)" -eq 216 ]
check "gb200nvl72_hot: hot63 borrowed under pooled" awk -F, \
	'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "borrowed_peak_gib") c = i }
	 $1 == "pooled" && $2 == "hot63" && $c > 0 { f = 1 } END { exit !f }' "$R/nvl72/summary.csv"
rm -rf "$R/nvl72"

# ---- reproducing a run -------------------------------------------------

# The effective configuration reproduces the run byte for byte.
ema run --quiet --no-plots --config "$R/r1/config.json" --out "$R/r2"
check "rerun from config.json: exit 0 ($(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]
check "rerun from config.json: --quiet is silent on stderr" [ ! -s "$T/log/err" ]
check "rerun from config.json: no plots/ with --no-plots" [ ! -e "$R/r2/plots" ]
for f in summary.csv requests.csv timeline.csv links.csv transfers.csv config.json; do
	check "rerun from config.json: same $f" same_file "$R/r1/$f" "$R/r2/$f"
done
ema run --quiet --no-plots $SHORT --out "$R/r3"
check "same seed: exit 0" [ "$rc" -eq 0 ]
check "same seed: same summary.csv" same_file "$R/r1/summary.csv" "$R/r3/summary.csv"
check "same seed: same requests.csv" same_file "$R/r1/requests.csv" "$R/r3/requests.csv"
ema run --quiet --no-plots $SHORT --seed 2 --out "$R/r4"
check "--seed 2: exit 0" [ "$rc" -eq 0 ]
check "--seed 2: other requests.csv" differ "$R/r1/requests.csv" "$R/r4/requests.csv"
check "--seed 2: run.json records it" grep -q '"seed": 2' "$R/r4/run.json"

# ema's decision log (EMA_DECISION_LOG, doc/cli.md) and its report
# (tools/decisions.awk): the CSV's header, a report row per tenant and
# lender whose shares by path and by binding limit each sum to 1, and
# outputs the same as without the log.
EMA_DECISION_LOG=$T/decisions.csv
export EMA_DECISION_LOG
ema run --quiet --no-plots $SHORT --set policies=static,ema --out "$R/dlog"
unset EMA_DECISION_LOG
check "decision log: exit 0 ($(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]
check "decision log: its header" [ "$(head -1 "$T/decisions.csv")" = \
	"time_s,tenant,gpu,lender,path,bytes,budget_bytes,binding,predicted_ms,local_only_ms,measured_ms" ]
check "decision log: t0 borrowed in the short run" [ "$(wc -l < "$T/decisions.csv")" -gt 1 ]
ema run --quiet --no-plots $SHORT --set policies=static,ema --out "$R/dlog0"
check "decision log: the same summary.csv without it" same_file "$R/dlog/summary.csv" "$R/dlog0/summary.csv"
awk -f "$SRC/tools/decisions.awk" "$T/decisions.csv" >"$T/log/report" 2>&1
check "decisions.awk: exit 0 ($(tail -1 "$T/log/report"))" [ $? -eq 0 ]
check "decisions.awk: its header" [ "$(head -1 "$T/log/report")" = \
	"run tenant lender steps inplace staged compute none tpot lender throughput no_path predicted_ms measured_ms measured/predicted bytes_gb budget_gb" ]
check "decisions.awk: a row of t0 reading GPU 1" awk 'NR > 1 && $1 == 1 && $2 == 0 && $3 == 1 { f = 1 } END { exit !f }' "$T/log/report"
check "decisions.awk: the shares by path and by binding sum to 1" awk 'NR > 1 {
	p = $5 + $6 + $7 + $8; b = $9 + $10 + $11 + $12; n++
	if (p < 0.999 || p > 1.001 || b < 0.999 || b > 1.001) bad = 1
} END { exit bad || n == 0 }' "$T/log/report"
rm -rf "$R/dlog" "$R/dlog0" "$T/decisions.csv"

# A trace the readers accept, as the control of the bad traces below.
TRACE="--set tenants.0.workload.source=trace --set tenants.0.workload.format=azure"
ema run --quiet --no-plots $TRACE --set "tenants.0.workload.trace=$DATA/trace_ok.csv" \
	--set tenants.1.workload.duration_s=10 --set policies=static --out "$R/trace"
check "good trace: exit 0 ($(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]
check "good trace: its 3 requests" grep -q '^static,t0,0,3,3,' "$R/trace/summary.csv"
check "runs left no temporary folder" [ -z "$(find "$R" -maxdepth 1 -name '*.tmp-*')" ]

# A whole workload given with --set replaces the old one: the default
# scenario's duration_s of 120 s no longer cuts a trace replay. When a
# window or max_requests does cut one, stderr says so, --quiet or not.
printf 'arrived_at,num_prefill_tokens,num_decode_tokens\n0,100,10\n60,100,10\n130,100,10\n200,100,10\n' \
	>"$T/long.csv"
ONE="--set tenants.1.workload.duration_s=10 --set policies=static"
ema run --quiet --no-plots $ONE --set "tenants.0.workload={\"source\": \"trace\", \"trace\": \"$T/long.csv\"}" \
	--out "$R/whole"
check "whole workload by --set: exit 0 ($(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]
check "whole workload by --set: all 4 rows replayed" grep -q '^static,t0,0,4,4,' "$R/whole/summary.csv"
check "whole workload by --set: no warning" [ ! -s "$T/log/err" ]
ema run --quiet --no-plots $ONE --set tenants.0.workload.source=trace \
	--set "tenants.0.workload.trace=$T/long.csv" --out "$R/cut"
check "replay cut by duration_s: exit 0" [ "$rc" -eq 0 ]
check "replay cut by duration_s: 2 rows kept" grep -q '^static,t0,0,2,2,' "$R/cut/summary.csv"
check "replay cut by duration_s: warned ($(cat "$T/log/err"))" grep -qF \
	'ema: warning: tenants.0.workload: the trace replay of '"$T/long.csv"' keeps 2 requests; 2 rows after start_s + duration_s = 120 s were left out by duration_s = 120' \
	"$T/log/err"
ema run --quiet --no-plots $ONE --set "tenants.0.workload={\"source\": \"trace\", \"trace\": \"$T/long.csv\", \"max_requests\": 3}" \
	--out "$R/capped"
check "replay cut by max_requests: warned ($(cat "$T/log/err"))" grep -qF \
	'keeps 3 requests; 1 row was left out by max_requests = 3 (0 = no cap)' "$T/log/err"

# ---- bad input: exit 2, where and what, nothing written ----------------

I=$T/in
bad_input missing_config "$I/nosuch.json: cannot open" --config "$I/nosuch.json"
bad_input reclaim_backoff_negative "serving.reclaim_backoff" $SHORT \
	--set serving.reclaim_backoff=-1
bad_input reclaim_backoff_word "serving.reclaim_backoff" $SHORT --set serving.reclaim_backoff=often
# the rule: whatever the user names that cannot be read is bad input, exit 2
bad_input config_folder "$I: expected a JSON file, got a folder" --config "$I"
bad_input profile_folder "--set hardware=$I/: \"$I/\" is a folder; expected a hardware profile file" \
	--set "hardware=$I/"
if [ "$(id -u)" -ne 0 ]; then
	echo '{}' >"$I/noperm.json" && chmod 000 "$I/noperm.json"
	bad_input config_no_permission "$I/noperm.json: cannot open: Permission denied" --config "$I/noperm.json"
fi

printf '{\n  "name": "x",\n  "seed": 1,,\n  "page_mib": 2\n}\n' >"$I/malformed.json"

# more GPUs than one NVLink domain of EMA_MAX_GPUS (72, a GB200 NVL72)
# holds: refused at the profile's line, as in a config's inline object
printf '{\n  "name": "big",\n  "n_gpus": 73\n}\n' >"$I/gpus73.json"
bad_input gpus_73_profile "$I/gpus73.json:3: n_gpus: expected an integer in 1..72, got 73" \
	--set "hardware=$I/gpus73.json"
printf '{"name": "x",\n "hardware": {"name": "big",\n  "n_gpus": 73}}\n' >"$I/gpus73_inline.json"
bad_input gpus_73_inline "$I/gpus73_inline.json:3: hardware.n_gpus: expected an integer in 1..72, got 73" \
	--config "$I/gpus73_inline.json"
bad_input gpus_73_set "--set hardware.n_gpus=73: expected an integer in 1..72, got 73" \
	--set hardware.n_gpus=73
# 72 GPUs whose pools and host shares number more than the int32_t page
# counts hold, each pool under its own limit
bad_input pages_72_gpus "72 GPUs' pools (48339353 pages each) and host shares (1048576 each) in pages of page_mib = 0.0625 MiB are more than the 2^31 pages a run may count" \
	--set hardware=gb200nvl72 --set gpu_mem_cap_gib=0 --set page_mib=0.0625 \
	--set policies=ideal --set policy.ideal_factor=16
bad_input malformed_json "$I/malformed.json:3:" --config "$I/malformed.json"

# Configs with one defect each, from the effective default scenario, so
# that the defect is the only thing wrong; the line is found by grep.
"$EMA" config >"$I/default.json" || fail "ema config"
# at_line FILE PATTERN: line number of the first line matching PATTERN.
at_line() { grep -n -- "$2" "$1" | head -1 | cut -d: -f1; }

sed 's/"block_tokens": 16,/"block_tokens": 16, "bogus_knob": 1,/' "$I/default.json" >"$I/unknown_key.json"
bad_input unknown_key_file "$I/unknown_key.json:$(at_line "$I/unknown_key.json" bogus_knob):" \
	--config "$I/unknown_key.json"
bad_input unknown_key_set "--set serving.bogus_knob=1:" --set serving.bogus_knob=1

sed 's/"page_mib": 2,/"page_mib": "two",/' "$I/default.json" >"$I/wrong_type.json"
bad_input wrong_type_file "$I/wrong_type.json:$(at_line "$I/wrong_type.json" '"page_mib"'):" \
	--config "$I/wrong_type.json"
bad_input wrong_type_set "--set serving.max_batch=many:" --set serving.max_batch=many
bad_input wrong_type_seed "seed=abc" --seed abc

sed 's/"max_batch": 256,/"max_batch": -4,/' "$I/default.json" >"$I/negative.json"
bad_input negative_file "$I/negative.json:$(at_line "$I/negative.json" '"max_batch"'):" \
	--config "$I/negative.json"
bad_input negative_set "--set tenants.0.workload.duration_s=-10:" \
	--set tenants.0.workload.duration_s=-10

bad_input model_too_big "--set model=llama-2-70b:" --set model=llama-2-70b

bad_input unknown_policy_set "--set policies=static,no_such_policy:" $SHORT \
	--set policies=static,no_such_policy
sed 's/"policies": \["static",/"policies": ["no_such_policy",/' "$I/default.json" >"$I/policy.json"
bad_input unknown_policy_file "$I/policy.json:$(at_line "$I/policy.json" no_such_policy):" \
	--config "$I/policy.json"
# the same policy twice would give two rows for one (policy, tenant)
bad_input duplicate_policy "--set policies=static,static:" $SHORT --set policies=static,static

bad_input unknown_option "--no-such-option" --no-such-option

# names reach paths and CSV fields: only a safe set of characters
bad_input name_path "--set name=a/b: name must be letters, digits, '-', '_' or '.', not starting with '.'" \
	--set name=a/b
sed 's/"name": "t1",/"name": "t1,x",/' "$I/default.json" >"$I/tenant_comma.json"
bad_input tenant_name_comma "$I/tenant_comma.json:$(at_line "$I/tenant_comma.json" '"t1,x"'): tenants.1.name must be letters" \
	--config "$I/tenant_comma.json"
bad_input tenant_name_newline "--set tenants.0.name=a\\x0ab: expected text in UTF-8 without control characters" \
	--set "tenants.0.name=a
b"
# without --out, ../../x would have put the run folder outside runs/
ema run --quiet $SHORT --set name=../../x
check "name=../../x: exit 2 (got $rc)" [ "$rc" -eq 2 ]
check "name=../../x: says why" grep -qF -- "--set name=../../x: name must be letters" "$T/log/err"
check "name=../../x: nothing written ($(ls -A | tr '\n' ' '))" [ -z "$(ls -A)" ]
check "name=../../x: nothing outside either" [ ! -e "$T/x" ]

# too many requests is found by the config check, before anything is
# generated: file:line of the tenant's workload object
sed -e 's/"rate_rps": 14,/"rate_rps": 10000,/' -e 's/"duration_s": 120,/"duration_s": 5000,/' \
	"$I/default.json" >"$I/too_many.json"
bad_input too_many_requests \
	"$I/too_many.json:$(at_line "$I/too_many.json" '"workload"'): tenants.0.workload: rate_rps x duration_s = 50,000,000 requests exceeds the limit of 10,000,000" \
	--config "$I/too_many.json"
ema config --config "$I/too_many.json"
check "too many requests: ema config refuses it too (got $rc)" [ "$rc" -eq 2 ]
bad_input too_many_max_requests "--set tenants.0.workload.max_requests=20000000: max_requests = 20,000,000 exceeds the limit of 10,000,000" \
	--set tenants.0.workload.max_requests=20000000

bad_input bad_trace_row "$DATA/trace_bad_row.csv:3:" $TRACE --set "tenants.0.workload.trace=$DATA/trace_bad_row.csv"
bad_input trace_backwards "$DATA/trace_backwards.csv:4:" $TRACE --set "tenants.0.workload.trace=$DATA/trace_backwards.csv"
# A header alone lacks a row on line 2; an empty file its header on line 1.
bad_input trace_header_only "$DATA/trace_empty.csv:2: expected at least one request after the header" \
	$TRACE --set "tenants.0.workload.trace=$DATA/trace_empty.csv"
: >"$I/empty.csv"
bad_input trace_empty "$I/empty.csv:1: expected the header line TIMESTAMP,ContextTokens,GeneratedTokens" \
	$TRACE --set "tenants.0.workload.trace=$I/empty.csv"
bad_input trace_empty_auto "$I/empty.csv:1: expected the header line TIMESTAMP,ContextTokens,GeneratedTokens (azure)" \
	--set tenants.0.workload.source=trace --set "tenants.0.workload.trace=$I/empty.csv"
bad_input trace_missing "$I/nosuch.csv: cannot open" $TRACE --set "tenants.0.workload.trace=$I/nosuch.csv"
# a folder or an unreadable file is bad input like a missing one (exit 2)
mkdir "$I/folder.csv"
bad_input trace_folder "$I/folder.csv: expected a trace file, got a folder" \
	$TRACE --set "tenants.0.workload.trace=$I/folder.csv"
if [ "$(id -u)" -ne 0 ]; then
	cp "$DATA/trace_ok.csv" "$I/noperm.csv" && chmod 000 "$I/noperm.csv"
	bad_input trace_no_permission "$I/noperm.csv: cannot open: Permission denied" \
		$TRACE --set "tenants.0.workload.trace=$I/noperm.csv"
fi
# a lengths-only file has no times: refused, pointing to source "lengths"
LENGTHS=$DATA/../traces/lengths.csv
bad_input lengths_as_trace "$LENGTHS:1: a lengths-only file has no arrival times; expected \"source\": \"lengths\"" \
	--set tenants.0.workload.source=trace --set "tenants.0.workload.trace=$LENGTHS"
# slowed down 1e12 times, row 3 (0.32 s in) would arrive 10,000 years on
bad_input rate_scale_overflow "$DATA/trace_ok.csv:3: this row comes 0.31941 s after the window's first, which rate_scale = 1e-12 stretches" \
	$TRACE --set "tenants.0.workload.trace=$DATA/trace_ok.csv" --set tenants.0.workload.rate_scale=1e-12
# without duration_s, a tiny rate_rps would do the same to generated arrivals
bad_input rate_rps_overflow "tenants.0.workload: request 1 would arrive at" \
	--set tenants.0.workload.rate_rps=1e-12 --set tenants.0.workload.duration_s=0 \
	--set tenants.0.workload.max_requests=3

# A trace through a FIFO (as <(...) gives) is opened once: format auto reads
# it whole instead of hanging on a second open.
to=""
command -v timeout >/dev/null 2>&1 && to="timeout 60"
if mkfifo "$T/fifo" 2>/dev/null; then
	cat "$DATA/trace_ok.csv" >"$T/fifo" &
	writer=$!
	$to "$EMA" run --quiet --no-plots --set tenants.0.workload.source=trace \
		--set "tenants.0.workload.trace=$T/fifo" --set tenants.1.workload.duration_s=10 \
		--set policies=static --out "$R/fifo" >"$T/log/out" 2>"$T/log/err"
	rc=$?
	kill "$writer" 2>/dev/null
	wait "$writer" 2>/dev/null
	check "trace from a FIFO: exit 0 (got $rc: $(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]
	check "trace from a FIFO: its 3 requests" grep -q '^static,t0,0,3,3,' "$R/fifo/summary.csv"
	rm -f "$T/fifo"
fi
# the same through bash's <(...), as a user would write it
if command -v bash >/dev/null 2>&1 && [ -n "$to" ]; then
	EMA="$EMA" OK="$DATA/trace_ok.csv" OUT="$R/procsub" timeout 60 bash -c \
		'"$EMA" run --quiet --no-plots --set tenants.0.workload.source=trace \
		--set tenants.0.workload.trace=<(cat "$OK") --set tenants.1.workload.duration_s=10 \
		--set policies=static --out "$OUT"' >"$T/log/out" 2>"$T/log/err"
	rc=$?
	check "trace from <(...): exit 0 (got $rc: $(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]
	check "trace from <(...): its 3 requests" grep -q '^static,t0,0,3,3,' "$R/procsub/summary.csv"
fi

# --out that exists: refused before running, contents untouched.
mkdir keep
echo "precious" >keep/summary.csv
ema run --quiet $SHORT --out keep
check "existing --out: exit 2 (got $rc)" [ "$rc" -eq 2 ]
check "existing --out: says so" grep -q 'keep.*already exists' "$T/log/err"
check "existing --out: contents untouched" [ "$(ls -A keep)" = summary.csv ]
check "existing --out: file untouched" [ "$(cat keep/summary.csv)" = precious ]
check "existing --out: nothing else written" [ "$(ls -A)" = keep ]
rm -rf keep

# ---- output folders: checked before running, never left half-written ----

# out_refused NAME EXPECTED ARGS...: `ema run ARGS` refused at once: exit 2,
# the reason on stderr, nothing simulated (no "running" line), nothing on
# stdout, nothing written but what was there before ($before).
out_refused() {
	name=$1
	want=$2
	shift 2
	before=$(ls -A | tr '\n' ' ')
	ema "$@"
	check "$name: exit 2 (got $rc)" [ "$rc" -eq 2 ]
	if grep -qF -- "$want" "$T/log/err"; then
		pass
	else
		fail "$name: stderr lacks \"$want\": $(cat "$T/log/err")"
	fi
	check "$name: nothing simulated" [ -z "$(grep -E 'running|sweep point' "$T/log/err")" ]
	check "$name: nothing on stdout" [ ! -s "$T/log/out" ]
	check "$name: nothing written ($(ls -A | tr '\n' ' '))" [ "$(ls -A | tr '\n' ' ')" = "$before" ]
}
out_refused "--out, missing parent" "--out nosuch/r: parent folder nosuch does not exist" \
	run $SHORT --out nosuch/r
touch afile
out_refused "--out under a file" "--out afile/r: parent afile is not a folder" run $SHORT --out afile/r
out_refused "--out under a file, deeper" "--out afile/a/r: parent folder afile/a: Not a directory" \
	run $SHORT --out afile/a/r
out_refused "--out named like a temporary folder" "kept for unfinished folders" \
	run $SHORT --out r.tmp-12
out_refused "sweep --out, missing parent" "--out nosuch/sw: parent folder nosuch does not exist" \
	sweep $SHORT --vary seed=1,2 --out nosuch/sw
out_refused "validate --csv, missing parent" "--csv nosuch/v.csv: parent folder nosuch does not exist" \
	validate $SHORT --csv nosuch/v.csv
rm -f afile
# a name that another live process is writing (this shell's PID)
mkdir "busy.tmp-$$"
out_refused "--out being written" "busy.tmp-$$ is being written by process $$" run $SHORT --out busy
rm -rf "busy.tmp-$$"

# A leftover of a killed run (a PID no process has) is removed, with a
# note, by the next run with the same --out.
sh -c : &
dead=$!
wait "$dead"
mkdir -p "lo.tmp-$dead/plots"
touch "lo.tmp-$dead/summary.csv" "lo.tmp-$dead/plots/memory.gp"
ema run --quiet --no-plots $SHORT --set policies=static --out lo
check "leftover: exit 0 ($(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]
check "leftover: removed with a note" \
	grep -qxF "ema: removing leftover lo.tmp-$dead from a run that was killed" "$T/log/err"
check "leftover: gone, the run written ($(ls -A | tr '\n' ' '))" [ "$(ls -A)" = lo ]
rm -rf lo
# the same for a sweep killed between points
mkdir -p "sw.tmp-$dead/point-000" "sw.tmp-$dead/point-001.tmp-$dead"
touch "sw.tmp-$dead/sweep.csv" "sw.tmp-$dead/point-000/summary.csv"
ema sweep --quiet --no-plots $SHORT --set policies=static --vary seed=1,2 --out sw
check "sweep leftover: exit 0 ($(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]
check "sweep leftover: removed with a note" \
	grep -qxF "ema: removing leftover sw.tmp-$dead from a run that was killed" "$T/log/err"
check "sweep leftover: gone, the sweep written ($(ls -A | tr '\n' ' '))" [ "$(ls -A)" = sw ]
check "sweep leftover: 2 points, no temporary one" [ "$(ls sw | grep -c point-)" -eq 2 ]
rm -rf sw

# Interrupted runs: a run long enough to be stopped while simulating
# (20000 s of arrivals, ~1 min unstopped) is sent a signal once its
# folder is reserved. A watchdog kills it if the signal does nothing
# within 30 s.
LONG="--no-plots --set tenants.0.workload.duration_s=20000 --set tenants.1.workload.duration_s=20000"
# interrupt SIG NAME [WRAPPER...]: starts `ema run` on $LONG into NAME in
# the background, sends SIG when NAME.tmp-* appears; status in $rc.
interrupt() {
	sig=$1
	name=$2
	shift 2
	"$@" "$EMA" run $LONG --out "$name" >"$T/log/out" 2>"$T/log/err" &
	pid=$!
	i=0
	while [ $i -lt 200 ] && [ -z "$(ls -d "$name".tmp-* 2>/dev/null)" ]; do
		sleep 0.05
		i=$((i + 1))
	done
	kill "-$sig" "$pid"
	(
		i=0
		while [ $i -lt 300 ] && kill -0 "$pid" 2>/dev/null; do
			sleep 0.1
			i=$((i + 1))
		done
		kill -9 "$pid" 2>/dev/null
	) >/dev/null 2>&1 &
	watchdog=$!
	wait "$pid"
	rc=$?
	wait "$watchdog"
}
# A background job of a non-interactive shell ignores SIGINT (and ema
# keeps an ignored signal ignored); env gives it back its default.
if env --default-signal=INT true 2>/dev/null; then
	interrupt INT long env --default-signal=INT
	check "SIGINT: exit 130 (got $rc)" [ "$rc" -eq 130 ]
	check "SIGINT: nothing left ($(ls -A | tr '\n' ' '))" [ -z "$(ls -A)" ]
	check "SIGINT: says so" grep -qF "interrupted: the unfinished output was removed" "$T/log/err"
else
	echo "note: env has no --default-signal, SIGINT not checked"
fi
interrupt TERM long
check "SIGTERM: exit 143 (got $rc)" [ "$rc" -eq 143 ]
check "SIGTERM: nothing left ($(ls -A | tr '\n' ' '))" [ -z "$(ls -A)" ]
# A reader that goes away (`ema run | head`): ema dies of SIGPIPE at its
# first line of output and leaves no half-written folder.
"$EMA" run --no-plots $SHORT --set policies=static --out piped 2>"$T/log/err" | true
check "SIGPIPE: no unfinished folder left ($(ls -A | tr '\n' ' '))" [ -z "$(ls -d piped.tmp-* 2>/dev/null)" ]
rm -rf piped
# kill -9 cannot be caught: the leftover stays, the next run removes it
interrupt KILL long
check "SIGKILL: exit 137 (got $rc)" [ "$rc" -eq 137 ]
left=$(ls -d long.tmp-* 2>/dev/null)
check "SIGKILL: the reserved folder is left ($(ls -A | tr '\n' ' '))" [ -n "$left" ]
ema run --quiet --no-plots $SHORT --set policies=static --out long
check "after SIGKILL: exit 0 ($(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]
check "after SIGKILL: leftover removed with a note" \
	grep -qxF "ema: removing leftover $left from a run that was killed" "$T/log/err"
check "after SIGKILL: only the run ($(ls -A | tr '\n' ' '))" [ "$(ls -A)" = long ]
rm -rf long

# ---- sweeps ----------------------------------------------------------------

# 2 x 2 points, 2 policies, 2 tenants: 16 rows, the swept values first.
ema sweep --quiet --no-plots $SHORT --set policies=static,ema \
	--vary tenants.0.workload.rate_rps=6,10 --vary policy.ema.remote_path=inplace,staged --out sw
check "sweep: exit 0 ($(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]
check "sweep: header" grep -q '^tenants.0.workload.rate_rps,policy.ema.remote_path,point,policy,tenant,gpu,' sw/sweep.csv
rows=$(($(wc -l <sw/sweep.csv) - 1))
check "sweep: 16 rows (got $rows)" [ "$rows" -eq 16 ]
check "sweep: one run folder per point" [ "$(ls -d sw/point-* | wc -l)" -eq 4 ]
check "sweep: a point's config.json has its value" \
	grep -q '"rate_rps": 10' sw/point-003/config.json
check "sweep: rows of a point match its run folder" \
	[ "$(grep -c '^10,staged,3,' sw/sweep.csv)" -eq 4 ]
check "sweep without seeds: no sweep_stats.csv" [ ! -e sw/sweep_stats.csv ]
rm -rf sw
# seeds are repetitions: mean, sd and 95% interval per policy and tenant
ema sweep --quiet $SHORT --set policies=static,ema --vary seed=1,2,3 --out sw
check "sweep seeds: exit 0 ($(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]
check "sweep seeds: stats header" \
	grep -q '^policy,tenant,seeds,throughput_tok_s_mean,throughput_tok_s_sd,throughput_tok_s_gmean,throughput_tok_s_ci95_low,throughput_tok_s_ci95_high,req_s_mean,' sw/sweep_stats.csv
rows=$(($(wc -l <sw/sweep_stats.csv) - 1))
check "sweep seeds: one stats row per policy and tenant (got $rows)" [ "$rows" -eq 4 ]
check "sweep seeds: 3 seeds each" [ "$(cut -d, -f3 sw/sweep_stats.csv | sort -u | head -1)" = 3 ]
check "sweep seeds: no load curve against the seed" [ ! -e sw/figures/throughput.png ]
# the mean, sd, geometric mean and the t(0.975, 2) = 4.302653 interval on
# the log scale, from sweep.csv by hand
tput=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "throughput_tok_s") c = i; next }
	$3 == "static" && $4 == "t0" { n++; s += $c; q += $c * $c; l[n] = log($c); ls += l[n] }
	END { m = s / n; sd = sqrt((q - n * m * m) / (n - 1)); lm = ls / n
		for (i = 1; i <= n; i++) lq += (l[i] - lm) ^ 2
		h = 4.302653 * sqrt(lq / (n - 1)) / sqrt(n)
		printf "%.6g %.6g %.6g %.6g %.6g", m, sd, exp(lm), exp(lm - h), exp(lm + h) }' sw/sweep.csv)
stats=$(awk -F, '$1 == "static" && $2 == "t0" { printf "%s %s %s %s %s", $4, $5, $6, $7, $8 }' sw/sweep_stats.csv)
check "sweep seeds: static t0 throughput mean, sd, gmean, interval by hand ($tput) = ($stats)" \
	awk -v a="$tput" -v b="$stats" 'BEGIN { split(a, x, " "); split(b, y, " ");
		for (i = 1; i <= 5; i++) if (x[i] - y[i] > 1e-4 * x[i] || y[i] - x[i] > 1e-4 * x[i]) exit 1 }'
check "sweep seeds: the interval is above zero and around the geometric mean" \
	awk -v b="$stats" 'BEGIN { split(b, y, " "); exit !(y[4] > 0 && y[4] < y[3] && y[3] < y[5]) }'
rm -rf sw
# the figures of a sweep: tests/test_sweep.sh
# a bad value fails before anything runs, naming the --set it came from
ema sweep --quiet $SHORT --vary tenants.0.workload.rate_rps=6,-1 --out sw
check "sweep bad value: exit 2 (got $rc)" [ "$rc" -eq 2 ]
check "sweep bad value: names it" grep -qF -- '--set tenants.0.workload.rate_rps=-1:' "$T/log/err"
check "sweep bad value: nothing written ($(ls -A | tr '\n' ' '))" [ -z "$(ls -A)" ]
ema sweep --quiet $SHORT --out sw
check "sweep without --vary: exit 2 (got $rc)" [ "$rc" -eq 2 ]
check "sweep without --vary: nothing written" [ -z "$(ls -A)" ]

# ---- ema bench ---------------------------------------------------------

# From any folder, with a trace path relative to it: the replays run as
# child processes and their scenario lives in a temporary folder, which
# must not change what the path means, and which goes away after.
mkdir "$T/tmp" "$T/bin" && cp "$DATA/trace_ok.csv" "$T/in/bench.csv" || exit 99
rows=$(($(wc -l <"$DATA/trace_ok.csv") - 1))
old_tmpdir=${TMPDIR-}
TMPDIR=$T/tmp
export TMPDIR
ema bench --quick --trace ../in/bench.csv
check "bench relative trace: exit 0 ($(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]
check "bench: 8 tenants x the trace's $rows rows replayed" \
	grep -q "^8 tenants x trace, h200x8, static .*($((8 * rows)) requests" "$T/log/out"
check "bench: ema replayed" grep -q "^8 tenants x trace, h200x8, ema .*($((8 * rows)) requests" "$T/log/out"
check "bench: under pressure" grep -q "^same, 20 GiB GPUs, 2 tenants 4x, ema .*($((8 * rows)) requests" "$T/log/out"
check "bench: the trace 4x over has 4 times the requests" \
	grep -q "^8 tenants, static, trace 4x over .*($((32 * rows)) requests" "$T/log/out"
check "bench --quick: no 16x replay" [ -z "$(grep 'trace 16x' "$T/log/out")" ]
check "bench: 1 tenant replay" grep -q "^1 tenant, h100x8, llama-2-7b, static .*($rows requests" "$T/log/out"
check "bench: whole-process and simulation times, memory" \
	grep -q ' s whole .* s sim .* s CPU .* MiB' "$T/log/out"
check "bench: the share of iterations leapt" grep -q ' events, [0-9]*% leapt)$' "$T/log/out"
check "bench: the event queue" grep -q '^event queue, 1,000 pending: .* M push+pop/s' "$T/log/out"
for t in '8 tenants, static, whole process' 'ema / static: ' 'ema / static under pressure' \
	'1 tenant, h100x8, whole process' 'peak memory, 8 tenants' 'peak memory, trace  4x'; do
	check "bench: target '$t'" grep -qF "$t" "$T/log/out"
done
check "bench: the load average" grep -q '^load average after: ' "$T/log/out"
check "bench: nothing left in the current folder" [ -z "$(ls -A)" ]
check "bench: temporary folder removed ($(ls "$T/tmp"))" [ -z "$(ls -A "$T/tmp")" ]
check "bench: the week's replay has 7 times the hour's requests" \
	grep -q "^8 tenants, ema, a week, 7x (1 run) .*($((56 * rows)) requests" "$T/log/out"
check "bench: the week's peak memory over the hour's" \
	grep -q '^  peak memory, a week / an hour, static .* MiB = [0-9.]*  (<= 1.5: ' "$T/log/out"
# `ema bench | head -1`: head goes after one line and the next write
# raises SIGPIPE; bench must remove its temporary folder before dying of
# it, as `ema run` removes its unfinished run folder.
"$EMA" bench --quick --trace ../in/bench.csv 2>"$T/log/err" | head -1 >"$T/log/out"
check "bench | head -1: one line" [ "$(wc -l <"$T/log/out")" -eq 1 ]
check "bench | head -1: temporary folder removed ($(ls "$T/tmp"))" [ -z "$(ls -A "$T/tmp")" ]
rm -rf "${T:?}/tmp" && mkdir "$T/tmp" || exit 99
# --memory: that figure alone, each replay a process of its own
ema bench --memory --trace ../in/bench.csv
check "bench --memory: exit 0 (got $rc)" [ "$rc" -eq 0 ]
check "bench --memory: the hour and the week, static and ema" \
	[ "$(grep -c '^8 tenants, [a-z]*, a[n]* [a-z]*.* MiB' "$T/log/out")" -eq 4 ]
check "bench --memory: both ratios" [ "$(grep -c '^  peak memory, a week / an hour' "$T/log/out")" -eq 2 ]
check "bench --memory: no event queue, no other replay" \
	[ -z "$(grep -e '^event queue' -e '^8 tenants x trace' "$T/log/out")" ]
check "bench --memory: temporary folder removed ($(ls "$T/tmp"))" [ -z "$(ls -A "$T/tmp")" ]
# --runs N: medians of N
ema bench --quick --runs 2 --trace ../in/bench.csv
check "bench --runs 2: exit 0 (got $rc)" [ "$rc" -eq 0 ]
check "bench --runs 2: says so" grep -q '^medians of 2 runs' "$T/log/out"
# The default trace, ../shared/traces/AzureLLMInferenceTrace_conv.csv, is
# found from the current folder, else from the program's, else skipped.
mkdir -p "$T/shared/traces" && cp "$DATA/trace_ok.csv" "$T/shared/traces/AzureLLMInferenceTrace_conv.csv" &&
	cp "$EMA" "$T/bin/ema" || exit 99
ema bench --quick
check "bench default trace from here: exit 0 (got $rc)" [ "$rc" -eq 0 ]
check "bench default trace from here: made absolute" \
	grep -qF "trace $T/shared/traces/AzureLLMInferenceTrace_conv.csv" "$T/log/out"
check "bench default trace: replayed" grep -q "^1 tenant, h100x8, llama-2-7b, static .*($rows requests" "$T/log/out"
mkdir -p "$T/deep/a" && cd "$T/deep/a" || exit 99
"$T/bin/ema" bench --quick >"$T/log/out" 2>"$T/log/err"
rc=$?
check "bench default trace from the program's folder: exit 0 (got $rc)" [ "$rc" -eq 0 ]
check "bench default trace from the program's folder: found" \
	grep -qF "trace $T/shared/traces/AzureLLMInferenceTrace_conv.csv" "$T/log/out"
rm -rf "$T/shared"
"$T/bin/ema" bench --quick >"$T/log/out" 2>"$T/log/err"
rc=$?
check "bench without the default trace: exit 0 (got $rc)" [ "$rc" -eq 0 ]
check "bench without the default trace: says replays are skipped" \
	grep -qF 'trace replays skipped: ../shared/traces/AzureLLMInferenceTrace_conv.csv not found' "$T/log/out"
check "bench without the default trace: still the event queue" grep -q '^event queue' "$T/log/out"
check "bench without the default trace: nothing left ($(ls -A))" [ -z "$(ls -A)" ]
cd "$T/cwd" || exit 99
# (the temporary folder is TMPDIR's: one that does not exist fails)
TMPDIR=$T/no-such-folder
ema bench --quick --trace ../in/bench.csv
check "bench without a temporary folder: exit 1 (got $rc)" [ "$rc" -eq 1 ]
check "bench without a temporary folder: says so" grep -qF 'temporary folder' "$T/log/err"
if [ -n "$old_tmpdir" ]; then TMPDIR=$old_tmpdir; else unset TMPDIR; fi
ema bench --quick --trace ../in/missing.csv
check "bench missing trace: exit 2 (got $rc)" [ "$rc" -eq 2 ]
check "bench missing trace: says which" grep -qF 'missing.csv' "$T/log/err"
check "bench missing trace: nothing on stdout" [ ! -s "$T/log/out" ]
ema bench --runs 0
check "bench --runs 0: exit 2 (got $rc)" [ "$rc" -eq 2 ]
check "bench --runs 0: says what is expected" grep -qF -- '--runs 0: expected a number from 1 to 99' "$T/log/err"
out_first "bench --hw --runs" "--runs is for the simulator's figures" bench --hw --runs 2

# ---- ema paths: the map of the remote paths -------------------------------

ema paths
check "paths: exit 0 (got $rc)" [ "$rc" -eq 0 ]
check "paths: a line per lender state, from 0 GB" \
	[ "$(grep -cE '^  lender (idle|busy): [a-z]+ 0\.00-' "$T/log/out")" -eq 2 ]
check "paths: says how far both budgets hold" grep -qF "within both budgets up to" "$T/log/out"
EMA_DECISION_LOG="$T/d.csv" "$EMA" run --quiet --no-plots $SHORT --set policies=static,ema \
	--set tenants.0.workload.rate_rps=24 --out dl >/dev/null 2>&1
rm -rf dl
ema paths "$T/d.csv" -o p
check "paths -o: exit 0 (got $rc: $(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]
check "paths -o: the map's header" [ "$(head -1 p/paths.csv)" = \
	"lender,remote_gb,remote_share,path,step_ms,step_vs_t0,lender_slowdown,within_tpot_budget,within_lender_budget,chosen" ]
# 2 lender states x 3 paths x 65 points of r, one path chosen at each
check "paths -o: 390 rows (got $(tail -n +2 p/paths.csv | wc -l))" [ "$(tail -n +2 p/paths.csv | wc -l)" -eq 390 ]
check "paths -o: one path chosen per lender state and r" \
	awk -F, 'NR > 1 { n[$1 "," $2] += $10 } END { for (k in n) if (n[k] != 1) exit 1; exit length(n) != 130 }' p/paths.csv
check "paths -o: reading nothing remote costs nothing" \
	awk -F, 'NR > 1 && $2 == 0 && $6 != 1 { exit 1 }' p/paths.csv
check "paths -o: the log's steps as points" [ "$(tail -n +2 p/points.csv | wc -l)" -gt 0 ]
check "paths -o: config.json beside" [ -s p/config.json ]
if command -v gnuplot >/dev/null 2>&1; then
	check "paths -o: the figure" [ -s p/paths.png ] && [ -s p/paths.pdf ]
fi
rm -rf p
printf 'time_s,tenant,path\n' >"$T/bad1.csv"
printf 'time_s,tenant,gpu,lender,path,bytes,budget_bytes,binding,predicted_ms,local_only_ms,measured_ms\n1,0,0,1,inplace,100,0,tpot,1,1,1\n1,0,0,1,inplace,1e9,0,tpot,1,zero,1\n' >"$T/bad3.csv"
for b in 1 3; do
	ema paths "$T/bad$b.csv" -o p
	check "paths, bad log $b: exit 2 (got $rc)" [ "$rc" -eq 2 ]
	check "paths, bad log $b: names the line ($(cat "$T/log/err"))" grep -qF "bad$b.csv:$b:" "$T/log/err"
	check "paths, bad log $b: nothing written ($(ls -A | tr '\n' ' '))" [ -z "$(ls -A)" ]
done
mkdir p
ema paths -o p
check "paths -o existing: exit 2 (got $rc)" [ "$rc" -eq 2 ]
rm -rf p

# ---- the hardware backend without a GPU --------------------------------

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
	echo "note: a GPU is present, --backend hw failure not checked"
else
		ema run --quiet --backend hw $SHORT --out hw
	check "--backend hw without GPU: exit 1 (got $rc)" [ "$rc" -eq 1 ]
	check "--backend hw without GPU: says why" grep -qiE 'gpu|cuda|driver' "$T/log/err"
	check "--backend hw without GPU: nothing written ($(ls -A | tr '\n' ' '))" [ -z "$(ls -A)" ]
	# the other commands on GPUs: status 1, why, and no file left behind
	# (the outputs were reserved before finding no GPU)
	for args in "calibrate --quick --csv cal.csv" "bench --hw --quick --csv b.csv" \
		"validate -q $SHORT"; do
		ema $args
		check "$args without GPU: exit 1 (got $rc)" [ "$rc" -eq 1 ]
		check "$args without GPU: says why ($(cat "$T/log/err"))" \
			grep -qiE 'not supported here|gpu|cuda|driver' "$T/log/err"
		check "$args without GPU: nothing written ($(ls -A | tr '\n' ' '))" [ -z "$(ls -A)" ]
	done
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
