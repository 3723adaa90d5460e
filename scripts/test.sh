#!/usr/bin/env bash
# Builds dgrad and runs every test. --sanitize builds and runs them with
# AddressSanitizer (leak checks included) and UndefinedBehaviorSanitizer;
# any report fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=$(scripts/build.sh "$@" | tail -n 1)
if [ "${1:-}" = "--sanitize" ]; then
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fi
ctest --test-dir "$build_dir" --output-on-failure --verbose
