#!/bin/sh
# setup.sh: everything a fresh Debian 12 machine needs before `ema run` or
# `make check`: the packages (GSL, cJSON, CUnit, gnuplot, Autotools), then
# autoreconf, configure (warnings as errors) and make. CUDA is used when
# nvcc is found (PATH or /usr/local/cuda); without it the hardware backend
# is built as a stub that says why it cannot run.
set -eu
cd "$(dirname "$0")/.."

pkgs="build-essential autoconf automake pkg-config libgsl-dev libcjson-dev libcunit1-dev gnuplot-nox"
missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "setup: installing$missing" >&2
	if [ "$(id -u)" -eq 0 ]; then sudo=; else sudo=sudo; fi
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null
fi

[ -x configure ] && [ configure -nt configure.ac ] || autoreconf -fi
if [ ! -f Makefile ] || [ config.status -ot configure ]; then
	./configure --enable-werror ${EMA_CONFIGURE_FLAGS:-}
fi
make -j"$(nproc 2>/dev/null || echo 2)"
