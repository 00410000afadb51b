#!/bin/sh
# test_outputs.sh: outputs that hold their promises and say what made
# them, checked from the command line: run.json, sweep.json and
# capacity.json stay JSON whatever bytes the command line holds, and name
# the commit; input that JSON or ema cannot carry (control characters, a
# NUL, bytes that are not UTF-8) is refused where it is, at file:line:col;
# a trace of endless bytes fails at a limit; messages show input without
# terminal escapes; `ema sweep merge` refuses a malformed row at its line;
# a relative path that could not be written absolute is refused; a second
# capacity search of another scenario is refused, not mixed. Run by
# Automake's harness from the build folder (./ema) with EMA_SRCDIR set;
# exit 0 pass, 1 fail, 99 error. Option lists are split on purpose.
# shellcheck disable=SC2086,SC2012

EMA=${EMA:-./ema}
SRC=${EMA_SRCDIR:-$(dirname "$0")/..}
if [ ! -x "$EMA" ]; then
	echo "test_outputs.sh: $EMA is not an executable (run from the build folder or set EMA)" >&2
	exit 99
fi
EMA=$(cd "$(dirname "$EMA")" && pwd)/$(basename "$EMA")
SRC=$(cd "$SRC" && pwd)

T=$(mktemp -d "${TMPDIR:-/tmp}/ema-outputs.XXXXXX") || exit 99
bg=
cleanup() {
	[ -n "$bg" ] && kill "$bg" 2>/dev/null
	cd / && rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM
mkdir "$T/cwd" "$T/log" || exit 99
cd "$T/cwd" || exit 99

passed=0
failed=0
pass() { passed=$((passed + 1)); }
fail() {
	failed=$((failed + 1))
	echo "FAIL: $*"
}
check() {
	d=$1
	shift
	if "$@"; then pass; else fail "$d"; fi
}
ema() {
	"$EMA" "$@" >"$T/log/out" 2>"$T/log/err"
	rc=$?
}
# is_json FILE: python's parser agrees, where there is one
is_json() {
	if command -v python3 >/dev/null 2>&1; then
		python3 -c 'import json, sys; json.load(open(sys.argv[1], encoding="utf-8"))' "$1" 2>/dev/null
	else
		return 0
	fi
}
# refused NAME WANT ARGS...: exit 2, WANT on stderr, one line, no escape
# byte, nothing written in the current folder
refused() {
	name=$1
	want=$2
	shift 2
	before=$(ls -A | tr '\n' ' ')
	ema "$@"
	check "$name: exit 2 (got $rc)" [ "$rc" -eq 2 ]
	if grep -qF -- "$want" "$T/log/err"; then pass; else fail "$name: stderr lacks \"$want\": $(cat "$T/log/err")"; fi
	check "$name: the message on one line" [ "$(wc -l <"$T/log/err")" -eq 1 ]
	check "$name: no escape byte in the message" [ -z "$(tr -d '\n' <"$T/log/err" | tr -d '[:print:]')" ]
	check "$name: nothing written" [ "$(ls -A | tr '\n' ' ')" = "$before" ]
}
TINY="--set tenants.0.workload.duration_s=10 --set tenants.1.workload.duration_s=10 --set policies=static"
TAB=$(printf '\t')
NL='
'
ESC=$(printf '\033')

# ---- provenance: the commit in --version and in every JSON file ------------------

ema --version
commit=$(sed -n 's/^ema [^ ]* (commit \([^;]*\);.*/\1/p' "$T/log/out")
check "--version: the commit ($(cat "$T/log/out"))" [ -n "$commit" ]
if command -v git >/dev/null 2>&1 && [ -d "$SRC/.git" -o -f "$SRC/.git" ]; then
	check "--version: the commit is git describe's ($commit)" \
		[ "$commit" = "$(git -C "$SRC" describe --always --dirty)" ]
fi
check "tools/version.sh outside git: the tarball's version" \
	sh -c "mkdir -p '$T/tb' && echo 0.9-g1234567 >'$T/tb/.tarball-version' &&
		[ \"\$(sh '$SRC/tools/version.sh' '$T/tb')\" = 0.9-g1234567 ]"
check "tools/version.sh with neither: unknown" \
	sh -c "mkdir -p '$T/none' && [ \"\$(sh '$SRC/tools/version.sh' '$T/none')\" = unknown ]"

# ---- run.json is JSON whatever the command line holds ------------------------------

ema run -q --no-plots $TINY --out "r${TAB}1"
check "--out with a tab: exit 0 ($(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]
check "--out with a tab: run.json escapes it" grep -qF -- '--out r\t1"' "r${TAB}1/run.json"
check "--out with a tab: run.json is JSON" is_json "r${TAB}1/run.json"
check "run.json: the commit" grep -qxF "  \"commit\": \"$commit\"," "r${TAB}1/run.json"
check "run.json: the host" grep -qE '^  "host": "[A-Za-z0-9_-]+",$' "r${TAB}1/run.json"
"$EMA" config $TINY >"s${NL}c.json"
ema run -q --no-plots -c "s${NL}c.json" --out "r${NL}2"
check "a config path and --out with a newline: exit 0 ($(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]
check "a newline in the command: escaped in run.json" grep -qF -- '-c s\nc.json --out r\n2"' "r${NL}2/run.json"
check "a newline in the command: run.json is JSON" is_json "r${NL}2/run.json"
check "config.json is JSON" is_json "r${NL}2/config.json"
rm -rf ./*

# ---- what cannot be carried is refused where it is ----------------------------------

refused "--set with a tab" "--set hardware.name=a\\x09b: expected text in UTF-8 without control characters" \
	run $TINY --set "hardware.name=a${TAB}b" --out r
refused "--set with an escape sequence" "got \"\\x1b[2J\"" run $TINY --set "hardware.name=${ESC}[2J" --out r
refused "--vary with a carriage return" "expected text in UTF-8 without control characters" \
	sweep $TINY --vary "seed=1$(printf '\r'),2" --out sw
printf '{\n  "name": "bad", "gpus": 2, "gpu_mem_gib": 141, "gpu_name": "caf\351"\n}\n' >hw_latin1.json
refused "a profile string not UTF-8" "hw_latin1.json:2:65: a byte that is not UTF-8" \
	run $TINY --set hardware=./hw_latin1.json --out r
printf '{"name": "ab\000cd"}' >nul.json
refused "a NUL byte in a config string" "nul.json:1:13: a NUL byte" run -c nul.json --out r
printf '{"name": "ab\\u0000cd"}' >unul.json
refused "an escaped NUL in a config string" "unul.json:1:13: \\u0000 (a NUL character) inside a string" \
	run -c unul.json --out r
printf '{"name": "a\tb"}' >raw.json
refused "a raw tab in a config string" "raw.json:1:12: a raw control character inside a string" \
	run -c raw.json --out r
rm -f ./*.json

# ---- traces ----------------------------------------------------------------------------

TRACE="--set tenants.0.workload.source=trace --set tenants.0.workload.trace"
EMA_TRACE_MAX_GIB=0.001 refused "a trace of endless bytes (/dev/zero)" \
	"/dev/zero: more than 1 MiB: expected a trace file of at most that" run $TINY $TRACE=/dev/zero --out r
if command -v mkfifo >/dev/null 2>&1; then
	mkfifo "$T/fifo"
	yes >"$T/fifo" 2>/dev/null &
	bg=$!
	EMA_TRACE_MAX_GIB=0.001 refused "a FIFO fed by yes" "more than 1 MiB" run $TINY $TRACE="$T/fifo" --out r
	kill "$bg" 2>/dev/null
	wait "$bg" 2>/dev/null
	bg=
	rm -f "$T/fifo"
fi
EMA_TRACE_MAX_GIB=lots refused "EMA_TRACE_MAX_GIB=lots" "EMA_TRACE_MAX_GIB=lots: expected the largest trace file" \
	run $TINY $TRACE=/dev/null --out r
printf 'arrived_at,num_prefill_tokens,num_decode_tokens\n0x1e3,10,10\n' >"$T/hex.csv"
refused "a hex time in a trace" "hex.csv:2: expected a time in seconds in column arrived_at, got '0x1e3'" \
	run $TINY $TRACE="$T/hex.csv" --out r
printf 'arrived_at,num_prefill_tokens,num_decode_tokens\n\033[31m1,10,10\n' >"$T/esc.csv"
refused "terminal escapes in a trace row: shown escaped" "got '\\x1b[31m1'" run $TINY $TRACE="$T/esc.csv" --out r
printf '{"timestamp": 1, "input_length": 5, "output_length": 6, "input_length": 7}\n' >"$T/dup.jsonl"
refused "a key twice in a Mooncake row" 'dup.jsonl:1: key "input_length" given twice' \
	run $TINY $TRACE="$T/dup.jsonl" --out r
refused "bench --trace /dev/null: bad input, exit 2" "/dev/null:1: expected the header line" \
	bench --quick --trace /dev/null
refused "an unknown command with an escape: shown escaped" "unknown command \"\\x1b[2J\"" "${ESC}[2J"

# ---- config.json's paths re-run from anywhere ----------------------------------------------

mkdir -p a/b
printf 'arrived_at,num_prefill_tokens,num_decode_tokens\n0.5,10,10\n1.5,20,5\n' >a/b/t.csv
(cd a/b && "$EMA" run -q --no-plots $TINY $TRACE=t.csv --out ../../rel >/dev/null 2>&1)
check "a relative trace path: config.json holds it absolute" \
	grep -qF "\"trace\": \"$(cd a/b && pwd -P)/t.csv\"" rel/config.json
mkdir elsewhere
(cd elsewhere && "$EMA" run -q --no-plots -c ../rel/config.json --out again >/dev/null 2>&1)
check "config.json runs again from another folder" cmp -s rel/summary.csv elsewhere/again/summary.csv
# a folder whose path is too long to name: refused, not kept relative
deep=$(printf 'd%.0s' $(seq 1 100))
mkdir -p "$T/deep" && cd "$T/deep" || exit 99
for i in 1 2 3 4 5 6 7 8 9 10 11; do mkdir "$deep" && cd "$deep" || exit 99; done
cp "$T/cwd/a/b/t.csv" .
refused "a relative path from a folder too deep to name" "a relative path, but the folder it is relative to cannot be named" \
	run $TINY $TRACE=t.csv --out r
cd "$T/cwd" || exit 99
rm -rf rel elsewhere a "$T/deep"

# ---- sweep merge: a malformed row fails at its line -----------------------------------------

ema sweep -q --no-plots $TINY --vary seed=1,2 --out sw
check "sweep.json: the commit" grep -qxF "  \"commit\": \"$commit\"," sw/sweep.json
check "sweep.json is JSON" is_json sw/sweep.json
cp sw/point-001/summary.csv "$T/summary.csv"
awk -F, 'BEGIN { OFS = "," } NR == 1 { for (i = 1; i <= NF; i++) if ($i == "ttft_p50_ms") c = i; print; next }
	NR == 2 { $c = "12abc" } { print }' "$T/summary.csv" >sw/point-001/summary.csv
ema sweep merge sw
check "merge of a row with a bad number: exit 2 (got $rc)" [ "$rc" -eq 2 ]
check "merge of a row with a bad number: file:line and column" \
	grep -qF "sw/point-001/summary.csv:2: expected a number or nothing in column ttft_p50_ms, got '12abc'" "$T/log/err"
awk 'NR == 3 { sub(/,[^,]*$/, "") } { print }' "$T/summary.csv" >sw/point-001/summary.csv
ema sweep merge sw
check "merge of a row cut short: exit 2 (got $rc)" [ "$rc" -eq 2 ]
check "merge of a row cut short: file:line" grep -qF "sw/point-001/summary.csv:3: expected" "$T/log/err"
cp "$T/summary.csv" sw/point-001/summary.csv
ema sweep merge sw
check "merge of the points as written: exit 0" [ "$rc" -eq 0 ]

# ---- capacity.json: the command and the scenario; another scenario is refused ---------------

CAP="--max-rate tenants.0.workload.rate_rps --slo ttft_p90_ms=2000,tpot_p99_ms=200"
ema sweep -q $TINY $CAP --out cap
check "capacity search: exit 0 ($(tail -1 "$T/log/err"))" [ "$rc" -eq 0 ]
check "capacity.json: the commit" grep -qxF "  \"commit\": \"$commit\"," cap/capacity.json
check "capacity.json: the command" grep -qF '"command": "ema sweep -q --set' cap/capacity.json
check "capacity.json: the scenario" grep -qF '"scenario": "default"' cap/capacity.json
check "capacity.json is JSON" is_json cap/capacity.json
ls -R cap >"$T/before"
refused "a capacity search of another scenario into the same folder" \
	"--out cap: holds a capacity search of another scenario (hardware.name: \"h200x2\" there, \"h200x8\" here)" \
	sweep -q $TINY --set hardware=h200x8 $CAP --out cap
ls -R cap >"$T/after"
check "another scenario: nothing written in the folder" cmp -s "$T/before" "$T/after"
refused "a capacity search of another key" "holds a capacity search of another key" \
	sweep -q $TINY --max-rate tenants.1.workload.rate_rps --slo ttft_p90_ms=2000 --out cap
ema sweep -q $TINY --set policies=static,ema --set tenants.0.workload.rate_rps=3 $CAP --out cap
check "the same scenario with other policies and another start: resumed (exit $rc)" [ "$rc" -eq 0 ]
# a folder of an older ema, which did not say its scenario
sed '/"scenario_config"/,$d' cap/capacity.json >"$T/old.json" && printf '"x": 0}\n' >>"$T/old.json"
cp "$T/old.json" cap/capacity.json
refused "an older capacity folder" "made by an older ema, which did not record its scenario" \
	sweep -q $TINY $CAP --out cap

# The request records and the timeline go to unlinked temporary files in
# $TMPDIR as the run goes (memory bounded by the requests in flight): a
# folder that cannot hold them, or a write that fails mid-run, fails the
# run with the reason, and leaves no run folder and no temporary file.
mkdir "$T/spill" || exit 99
TMPDIR=$T/nosuch ema run -q --no-plots --out nospill
check "records: no temporary folder: exit 1 (got $rc)" [ "$rc" -eq 1 ]
check "records: no temporary folder: said ($(cat "$T/log/err"))" \
	grep -qF "requests: cannot make a temporary file in $T/nosuch" "$T/log/err"
check "records: no temporary folder: no run folder" [ ! -e nospill ]
# (a file size limit: the records' file fails to grow mid-run, EFBIG)
before=$(ls -A | tr '\n' ' ')
(ulimit -f 20 && trap '' XFSZ && TMPDIR=$T/spill exec "$EMA" run -q --no-plots --out midrun) \
	>"$T/log/out" 2>"$T/log/err"
rc=$?
check "records: a write failing mid-run: exit 1 (got $rc)" [ "$rc" -eq 1 ]
check "records: a write failing mid-run: said ($(cat "$T/log/err"))" \
	grep -qF "cannot write a temporary file" "$T/log/err"
check "records: a write failing mid-run: no run folder" [ ! -e midrun ]
check "records: a write failing mid-run: nothing new here" [ "$(ls -A | tr '\n' ' ')" = "$before" ]
check "records: no temporary file left ($(ls -A "$T/spill"))" [ -z "$(ls -A "$T/spill")" ]

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
