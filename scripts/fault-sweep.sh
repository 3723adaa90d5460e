#!/usr/bin/env bash
# The full fault-injection sweep (tests/fault/): every N, in the normal
# build and under ASan+UBSan (where CI's run samples every 5th N).
set -euo pipefail
cd "$(dirname "$0")/.."
for mode in "" --sanitize; do
    build_dir=$(scripts/build.sh $mode | tail -n 1)
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1:intercept_tls_get_addr=0 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    OMP_WAIT_POLICY=passive DGRAD_FAULT_STRIDE=1 \
        "$build_dir/dgrad_fault_tests" --jobs 2
done
