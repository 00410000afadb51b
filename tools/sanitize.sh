#!/bin/sh
# sanitize.sh: the sanitizer half of CI. Builds a second copy of ema with
# AddressSanitizer and UndefinedBehaviorSanitizer (gcc, no CUDA, warnings as
# errors; with float-cast-overflow, which gcc's -fsanitize=undefined leaves
# out: a double of ns or pages past what its integer holds) in build-asan/, runs `make check` and a short default run under
# it, then runs every fuzzer for a short time (`make fuzz`, clang
# libFuzzer). Any sanitizer report or fuzzer crash fails the script.
#
#   sh tools/sanitize.sh            # what .ci/run does after `make check`
#   EMA_FUZZ_SECONDS=0 sh tools/sanitize.sh   # skip the fuzzers
#
# Automake refuses a VPATH build from a source folder that is configured
# in place, and tools/setup.sh configures in place. So the sanitizer build
# is made in a copy: build-asan/ receives the files git knows about
# (tracked, and untracked but not ignored: work in progress is tested too),
# with their times kept so that a second run rebuilds only what changed.
# rm -rf build-asan starts afresh. Run tools/setup.sh first: the fuzzers
# are built from the in-place build's generated sources.
set -eu
cd "$(dirname "$0")/.."
top=$(pwd)
asan=$top/build-asan
fuzz_seconds=${EMA_FUZZ_SECONDS:-20}
jobs=$(nproc 2>/dev/null || echo 2)

# libFuzzer comes with clang's runtime libraries: on Debian 12,
# libclang-rt-14-dev holds libclang_rt.fuzzer-x86_64.a.
if [ "$fuzz_seconds" -gt 0 ]; then
	missing=
	for p in clang-14 libclang-rt-14-dev; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
			missing="$missing $p"
	done
	if [ -n "$missing" ]; then
		echo "sanitize: installing$missing" >&2
		if [ "$(id -u)" -eq 0 ]; then sudo=; else sudo=sudo; fi
		$sudo apt-get update -qq
		DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null
	fi
fi

# --- the copy -------------------------------------------------------------
if ! git rev-parse --show-toplevel >/dev/null 2>&1; then
	echo "sanitize: needs a git checkout (it copies the files git lists)" >&2
	exit 1
fi
mkdir -p "$asan"
git ls-files -z --cached --others --exclude-standard |
	tar --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -xf - -C "$asan"

# --- build ----------------------------------------------------------------
cd "$asan"
[ -x configure ] && [ configure -nt configure.ac ] || autoreconf -fi >/dev/null
cflags='-O1 -g -fsanitize=address,undefined,float-cast-overflow -fno-omit-frame-pointer'
# (configured again where an older copy was configured with other flags)
if [ ! -f Makefile ] || [ config.status -ot configure ] ||
	! ./config.status --config | grep -qF -- "$cflags"; then
	./configure -q --without-cuda --enable-werror CFLAGS="$cflags"
fi
make -s -j"$jobs"

# --- run under the sanitizers ---------------------------------------------
# Reports go to files as well as failing the process: a test that captures
# a command's stderr (tests/test_cli.sh does) cannot swallow them.
logs=$(mktemp -d "${TMPDIR:-/tmp}/ema-sanitize.XXXXXX")
trap 'rm -rf "$logs"' EXIT
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:log_path=$logs/asan
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:log_path=$logs/ubsan
export ASAN_OPTIONS UBSAN_OPTIONS
# the public traces beside the checkout, not beside the copy, unless
# EMA_SHARED_TRACES already says where they are (or hides them)
if [ -z "${EMA_SHARED_TRACES+set}" ] && [ -d "$top/../shared/traces" ]; then
	EMA_SHARED_TRACES=$(cd "$top/../shared/traces" && pwd)
	export EMA_SHARED_TRACES
fi

status=0
make -j"$jobs" check || { status=1; cat test-suite.log; }
# the default experiment, all five policies, cut to 10 s of arrivals
mkdir "$logs/run"
./ema run --quiet --no-plots --out "$logs/run/default" \
	--set tenants.0.workload.duration_s=10 --set tenants.1.workload.duration_s=10 >/dev/null ||
	{ echo "sanitize: ema run failed under the sanitizers" >&2; status=1; }
for r in "$logs"/asan.* "$logs"/ubsan.*; do
	[ -f "$r" ] || continue
	echo "--- sanitizer report $(basename "$r")" >&2
	cat "$r" >&2
	status=1
done
[ $status -eq 0 ] || { echo "sanitize: FAILED under AddressSanitizer/UBSan" >&2; exit 1; }
echo "sanitize: make check and a default run are clean under ASan and UBSan"

# --- fuzzers --------------------------------------------------------------
cd "$top"
if [ "$fuzz_seconds" -gt 0 ]; then
	if [ ! -f Makefile ]; then
		echo "sanitize: run tools/setup.sh first (make fuzz needs the configured build)" >&2
		exit 1
	fi
	make fuzz FUZZ_SECONDS="$fuzz_seconds"
fi
