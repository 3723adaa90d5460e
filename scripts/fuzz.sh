#!/usr/bin/env bash
# Builds the libFuzzer targets of `dgrad conform` (the vector, oneDNN Graph
# and OpenVINO IR readers, and attribute/shape resolution) with clang,
# AddressSanitizer and UndefinedBehaviorSanitizer, in a build directory of
# their own, and runs each for a bounded time, as many at once as there are
# cores. Any crash, sanitizer report, leak or timeout fails the run; the
# input that caused it is kept.
#
#   scripts/fuzz.sh [SECONDS]     seconds per target (default 60, or
#                                 $FUZZ_SECONDS)
#   FUZZ_BUILD_DIR (default build-fuzz), FUZZ_TARGETS (default: all four)
#
# Seeds: the committed suites and the public vectors. The corpora grow in
# $FUZZ_BUILD_DIR/fuzz-work and are reused by later runs. A crash input
# becomes a regression case: reduce it (the fuzzer's -minimize_crash=1),
# fix the reader, and add the file to conformance/suites or to the reader
# tests (tests/test_conform_readers.c).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-${FUZZ_SECONDS:-60}}
case "$seconds" in
    ''|*[!0-9]*) echo "fuzz.sh: SECONDS must be a positive integer" >&2; exit 2 ;;
esac
build_dir=${FUZZ_BUILD_DIR:-build-fuzz}
targets=${FUZZ_TARGETS:-"vectors graph ir resolve"}
vectors_dir=${DGRAD_VECTORS_DIR:-../shared/conformance/vectors}

# The project's packages, then clang and its runtime (libFuzzer, sanitizers).
scripts/install-deps.sh
missing=()
for p in clang-14 libclang-rt-14-dev; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing missing packages: ${missing[*]}"
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

CC=clang-14 CXX=clang++-14 cmake -S . -B "$build_dir" -DDGRAD_BUILD_FUZZERS=ON \
    -DDGRAD_BUILD_TESTS=OFF -DDGRAD_VECTORS_DIR="$(realpath -m "$vectors_dir")" >/dev/null
fuzzers=()
for t in $targets; do fuzzers+=("fuzz_$t"); done
cmake --build "$build_dir" -j "$(nproc)" --target "${fuzzers[@]}" >/dev/null

work="$build_dir/fuzz-work"
mkdir -p "$work"
seed() { # corpus, then files to copy in
    local corpus=$1
    shift
    mkdir -p "$corpus"
    for f in "$@"; do [ -f "$f" ] && cp -n "$f" "$corpus/" || true; done
}
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# One target: seeds its corpus, fuzzes, prints its summary; fails on a
# finding.
fuzz_target() {
    local t=$1
    local corpus="$work/corpus_$t"
    case "$t" in
        vectors) seed "$corpus" conformance/suites/vectors/*.json "$vectors_dir"/*.json ;;
        graph) seed "$corpus" conformance/suites/graph/*.json ;;
        ir) seed "$corpus" conformance/suites/ir/*.xml ;;
        *) seed "$corpus" ;;
    esac
    mkdir -p "$work/artifacts_$t"
    local log="$work/fuzz_$t.log"
    echo "fuzz_$t: ${seconds}s (log $log)"
    if "$build_dir/fuzz_$t" -max_total_time="$seconds" -timeout=10 \
            -rss_limit_mb=2048 -max_len=65536 \
            -artifact_prefix="$work/artifacts_$t/" "$corpus" >"$log" 2>&1; then
        grep -E '^Done [0-9]+ runs' "$log" | sed "s/^/fuzz_$t: /" || true
    else
        echo "fuzz_$t: FAILED; the report:" >&2
        grep -E 'ERROR|runtime error|SUMMARY|disagree|rejects|Test unit written' "$log" \
            | head -20 >&2 || tail -20 "$log" >&2
        return 1
    fi
}
# A libFuzzer process keeps one core busy: as many targets at once as
# there are cores, each still fuzzed for SECONDS.
slots=$(nproc)
status=0
pids=()
for t in $targets; do
    if [ "${#pids[@]}" -ge "$slots" ]; then
        wait "${pids[0]}" || status=1
        pids=("${pids[@]:1}")
    fi
    fuzz_target "$t" &
    pids+=("$!")
done
for pid in "${pids[@]}"; do
    wait "$pid" || status=1
done
if [ "$status" -ne 0 ]; then
    echo "fuzz.sh: a target failed; crash inputs are in $work/artifacts_*" >&2
else
    echo "fuzz.sh: no crash in ${seconds}s per target"
fi
exit "$status"
