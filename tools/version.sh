#!/bin/sh
# version.sh [SRCDIR]: the commit ema is built from, which `ema --version`
# prints and run.json, sweep.json and capacity.json record: `git describe
# --always --dirty` when SRCDIR is the top of a git work tree (not merely
# inside another repository), else the first line of SRCDIR/.tarball-version,
# which `make dist` writes, else "unknown". Only the characters a commit
# name needs are kept, since the result is compiled in as a C string.
srcdir=${1:-.}
v=
if command -v git >/dev/null 2>&1 &&
	top=$(git -C "$srcdir" rev-parse --show-toplevel 2>/dev/null) &&
	[ "$(cd "$top" && pwd -P)" = "$(cd "$srcdir" && pwd -P)" ]; then
	v=$(git -C "$srcdir" describe --always --dirty 2>/dev/null)
fi
if [ -z "$v" ] && [ -s "$srcdir/.tarball-version" ]; then
	v=$(head -n 1 "$srcdir/.tarball-version")
fi
v=$(printf '%s' "$v" | tr -cd 'A-Za-z0-9._+-' | cut -c1-80)
printf '%s\n' "${v:-unknown}"
