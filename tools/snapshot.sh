#!/bin/sh
# snapshot.sh: runs the embedded default scenario and every scenario of
# scenarios/published/ with --no-plots into OUT_DIR and prints one sha256
# line per output file (run.json without its wall-clock fields), so that a
# change meant to keep behaviour can be checked byte for byte:
#     tools/snapshot.sh ./ema /tmp/before > before.sha
#     ... change, rebuild ...
#     tools/snapshot.sh ./ema /tmp/after > after.sha && diff before.sha after.sha
# usage: tools/snapshot.sh EMA_BINARY OUT_DIR [EXTRA_OPTIONS...]
set -eu
[ $# -ge 2 ] || { echo "usage: $0 EMA_BINARY OUT_DIR [OPTIONS...]" >&2; exit 2; }
ema=$1
out=$2
shift 2
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
run() {
	name=$1
	shift
	[ -e "$out/$name" ] && rm -rf "$out/$name"
	"$ema" run "$@" --out "$out/$name" --quiet --no-plots >/dev/null
}
run default "$@"
for f in "$here"/scenarios/published/*.json; do
	run "$(basename "$f" .json)" --config "$f" "$@"
done
cd "$out"
for d in */; do
	for f in "$d"*; do
		case $f in
		*/run.json) grep -v '"command"' "$f" | sed -E -e 's/"wall_s": [0-9.]+/"wall_s": X/' -e 's/, "leaps": [0-9]+, "leapt_steps": [0-9]+//' | sha256sum | sed "s|-|$f|" ;;
		*) sha256sum "$f" ;;
		esac
	done
done
