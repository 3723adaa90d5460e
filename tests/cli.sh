#!/usr/bin/env bash
# The `dgrad` command's interface: help, errors for unknown commands and
# options, plugin failures named, and a small demo run end to end.
# Usage: cli.sh PATH/TO/dgrad
set -uo pipefail
dgrad="$1"
failures=0
expect() { # expect STATUS PATTERN -- ARGS...
    local want_status="$1" pattern="$2"
    shift 3
    local out status
    out=$("$dgrad" "$@" 2>&1)
    status=$?
    if [ "$status" -ne "$want_status" ] || ! grep -qE -- "$pattern" <<<"$out"; then
        echo "FAIL: dgrad $* -> status $status (want $want_status), output:"
        echo "$out" | head -20
        echo "(wanted /$pattern/)"
        failures=$((failures + 1))
    else
        echo "ok: dgrad $*"
    fi
}
expect 0 "usage: dgrad" -- --help
expect 2 "no command given" --
expect 2 "unknown command 'frobnicate'" -- frobnicate
expect 2 "unknown option '--frob'" -- --frob demo
expect 0 "usage: dgrad demo" -- demo --help
expect 2 "unknown option or missing value '--frob'" -- demo --frob
expect 2 "--dtype 'f64' is not one of f32, bf16, f16" -- demo --dtype f64
expect 2 "--3d-size '0' must be" -- demo --3d-size 0
expect 1 "cannot load plugin '/nonexistent/libdgrad_plugin.so': no such file" -- \
    --plugin /nonexistent/libdgrad_plugin.so demo
expect 0 "5 passed, 0 failed" -- demo --3d-size 12 --points 300
expect 0 "ConvolutionBackwardData +bf16 .*PASS" -- demo --dtype bf16 --3d-size 12 --points 300
expect 0 "GroupConvolutionBackpropData +f16 .*PASS" -- demo --dtype f16 --3d-size 12 --points 300
echo "$((12 - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]
