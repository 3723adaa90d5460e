#!/usr/bin/env bash
# Builds dgrad and runs every test (unit tests, conformance suites, tools).
#   --sanitize  with AddressSanitizer (leak checks included) and
#               UndefinedBehaviorSanitizer; any report fails the run
#   --onednn3   against oneDNN 3 (built once into a cache by
#               scripts/build-onednn3.sh, about 30 minutes the first time),
#               then the demo on it too
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=$(scripts/build.sh "$@" | tail -n 1)
sanitize=0
onednn3=0
for arg in "$@"; do
    case "$arg" in
        --sanitize) sanitize=1 ;;
        --onednn3) onednn3=1 ;;
    esac
done
if [ "$sanitize" = 1 ]; then
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    # oneDNN's own leaks, each named with its evidence in the file
    export LSAN_OPTIONS="suppressions=$PWD/tests/lsan-onednn.supp:print_suppressions=0"
fi
# As many tests at once as there are cores: one test alone leaves a core
# idle much of the time, so two at a time on 2 cores take half the time
# (the plain suite on an AMD EPYC Zen 5: 256 s one at a time, 129 s two at
# a time; `time ctest --test-dir build [-j2]`). Every OpenMP team waits passively (tests/CMakeLists.txt) so
# that neighbours do not starve each other; results do not depend on it.
ctest --test-dir "$build_dir" --output-on-failure --verbose -j "$(nproc)"
if [ "$onednn3" = 1 ] && [ "$sanitize" = 0 ]; then
    "$build_dir/dgrad" --version
    "$build_dir/dgrad" demo
fi
