#!/usr/bin/env bash
# The `dgrad` command's interface: help, --version, errors for unknown
# commands and options, plugin failures named, a small demo run end to
# end, and the exit-status convention of dgrad and every command (0
# success, 1 failure, 2 usage error) on a success, a failure and a usage
# error of each.
# Usage: cli.sh PATH/TO/dgrad
set -uo pipefail
dgrad="$1"
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
passed=0
failures=0
# expect STATUS PATTERN -- ARGS...: dgrad ARGS exits with STATUS and its
# output (stdout and stderr) matches PATTERN; a PATTERN of several lines
# is several patterns, each of which some line must match.
expect() {
    expect_within 600 "$@"
}
# expect_within SECONDS STATUS PATTERN -- ARGS...: the same, and it ends
# within SECONDS.
expect_within() {
    local seconds="$1" want_status="$2" pattern="$3"
    shift 4
    local out status
    out=$(timeout "$seconds" "$dgrad" "$@" 2>&1)
    status=$?
    local matched=1 line
    while IFS= read -r line; do
        grep -qE -- "$line" <<<"$out" || matched=0
    done <<<"$pattern"
    if [ "$status" -ne "$want_status" ] || [ "$matched" -eq 0 ]; then
        echo "FAIL: dgrad $* -> status $status (want $want_status$([ "$status" -eq 124 ] && echo ", timed out after ${seconds}s")), output:"
        echo "$out" | head -20
        echo "(wanted /$pattern/)"
        failures=$((failures + 1))
    else
        echo "ok: dgrad $*"
        passed=$((passed + 1))
    fi
}
missing=/nonexistent/libdgrad_plugin.so

# The top level.
expect 0 "usage: dgrad" -- --help
expect 0 "^Exit status, of dgrad and of every command:$
^  0  success: everything asked for ran and every check passed$
^  1  failure: a run or a check failed, or something it needs could$
^  2  usage error: the command line is wrong" -- --help
expect 2 "no command given" --
expect 2 "unknown command 'frobnicate'" -- frobnicate
expect 2 "unknown option '--frob'" -- --frob demo
expect 2 "--plugin needs a value" -- --plugin
expect 1 "cannot load plugin '$missing': no such file" -- --plugin "$missing" demo

# --version: dgrad's version, the oneDNN this process runs on (2.6 or
# later, or 3.x), the plugin with the oneDNN it was built against.
expect 0 "^dgrad 0\.1\.0$
^oneDNN (2\.[6-9]|3\.[0-9]+)\.[0-9]+ \(OpenMP CPU runtime(, commit [0-9a-f]+)?\)$
^plugin dgrad 0\.1\.0\+onednn\.(2\.[6-9]|3\.[0-9]+)\.[0-9]+ \(ABI 1\.[0-9]+\) from /.*libdgrad_plugin\.so$" -- --version
expect 1 "^dgrad 0\.1\.0$
^oneDNN (2\.[6-9]|3\.[0-9]+)\.[0-9]+ 
^dgrad: cannot load plugin '$missing': no such file$" -- --plugin "$missing" --version
expect 2 "--version takes no command \('demo' given\)" -- --version demo

# demo: success, failure, usage errors.
expect 0 "usage: dgrad demo" -- demo --help
expect 0 "^Exit status: 0 when every example passes, 1 when one fails or the$
^plugin cannot be loaded, 2 on usage errors" -- demo --help
expect 2 "unknown option or missing value '--frob'" -- demo --frob
expect 2 "--dtype 'f64' is not one of f32, bf16, f16" -- demo --dtype f64
expect 2 "--3d-size '0' must be" -- demo --3d-size 0
expect 0 "5 passed, 0 failed" -- demo --3d-size 12 --points 300
expect 0 "ConvolutionBackwardData +bf16 .*PASS" -- demo --dtype bf16 --3d-size 12 --points 300
expect 0 "GroupConvolutionBackpropData +f16 .*PASS" -- demo --dtype f16 --3d-size 12 --points 300

# conform: success, failures (a malformed file, no plugin), usage errors.
expect 0 "^Exit status: 0 when cases ran and nothing failed; 1 when something
^holding no op dgrad runs\) or the plugin cannot be loaded; 2 on usage
^errors\.$" -- conform --help
expect 0 "^1 passed, 0 failed, 0 skipped$" -- conform --dtypes f32 --formats native \
    "$root/conformance/suites/graph/depthwise.json"
printf '{"cases": [\n' > "$work/malformed.json"
expect 1 "malformed JSON
^0 passed, 1 failed, 0 skipped$" -- conform --dtypes f32 "$work/malformed.json"
expect 1 "cannot load plugin '$missing': no such file" -- --plugin "$missing" conform \
    "$root/conformance/suites/graph/depthwise.json"
expect 2 "unknown option '--frob'" -- conform --frob
expect 2 "bad --dtypes 'f64'" -- conform --dtypes f64 "$work"

# bench: success, failures (no plugin, an unreadable batch file, a CSV
# that cannot be written), usage errors.
quick=(--reps 1 --warmup 0 --cached-reps 1 --peak-gflops 100 --peak-gbs 10 -q)
expect 0 "^Exit status: 0 when every problem ran and checked, 1 otherwise
^usage errors \(unknown option, bad value, a problem that is malformed or$" -- bench --help
expect 0 "mb1ic4iw8oc4ow10kw3pw0 .* ok$" -- bench "${quick[@]}" mb1ic4iw8oc4kw3
expect 1 "cannot load plugin '$missing': no such file" -- --plugin "$missing" bench \
    --backend plugin "${quick[@]}" mb1ic4iw8oc4kw3
expect 1 "cannot open batch file $work/none.txt: No such file" -- bench \
    "${quick[@]}" --batch "$work/none.txt"
expect 1 "cannot write $work/no/out.csv" -- bench "${quick[@]}" --csv "$work/no/out.csv" \
    mb1ic4iw8oc4kw3
expect 2 "unknown option '--frob'" -- bench --frob
expect 2 "bad value 'f64' for --dt" -- bench --dt f64 mb1ic4iw8oc4kw3
expect 2 "bad value 'blocked' for --raw-layout" -- bench --raw-layout blocked mb1ic4iw8oc4kw3
# Against oneDNN's preferred layouts: the output reordered back is checked,
# and the summary gives the added time where the roofline time is < 10 us.
expect 0 "raw baseline on oneDNN's preferred layouts
mb1ic4iw8oc4ow10kw3pw0 .* ok$
^  added us \(dgrad - raw\) where the roofline time is under 10 us: largest -?[0-9.]+, median -?[0-9.]+; [0-9]+ of 2 within 2 us$" -- \
    bench "${quick[@]}" --raw-layout preferred mb1ic4iw8oc4kw3 g2mb1ic6ih5oc4kh3sh2
expect 2 "cannot parse 'mb1ic4iw8oc4kw3x'" -- bench mb1ic4iw8oc4kw3x
# --post-ops: the fused op with the bare and unfused columns, checked; a
# chain's operands count in the memory rule; spelling errors are usage
# errors naming the post-op.
expect 0 "post-ops bias\+relu:0.5\+add:per_oc \(3\): dgrad ms is the fused op
mb1ic4iw8oc4ow10kw3pw0 .* ok$
^  geomean fused/bare time ratio: [0-9.]+ \(1 problems; target for bias\+relu <= 1.05: (met|not met)\)$" -- \
    bench "${quick[@]}" --post-ops bias+relu:0.5+add:per_oc mb1ic4iw8oc4kw3
expect 2 "post-op 'frob': unknown name 'frob'" -- bench --post-ops relu+frob mb1ic4iw8oc4kw3
# --in-place: the fused op accumulates onto the sum's operand in the
# output's buffer, checked (a rerun from the operand after the timing);
# a chain without such an Add fails the problem, naming what it needs.
expect 0 "accumulates onto its Add's operand in the output's buffer
mb1ic4iw8oc4ow10kw3pw0 .* ok$" -- \
    bench "${quick[@]}" --post-ops bias+sum+relu --in-place mb1ic4iw8oc4kw3
expect 1 "FAILED: --in-place: no input of the op may share its output's buffer \(it takes an Add of the output's shape in the op's type: add:f32:per_tensor\)" -- \
    bench "${quick[@]}" --post-ops relu --in-place mb1ic4iw8oc4kw3
expect 2 "post-op 'clip:0': clip takes 2 arguments \(min, max\)" -- \
    bench --post-ops clip:0 mb1ic4iw8oc4kw3
expect 2 "post-op 'add:per_frob': argument 'per_frob' is not a data type \(f32, bf16, f16\) or a policy" -- \
    bench --attr-post-ops add:per_frob mb1ic4iw8oc4kw3
expect_within 5 2 "its buffers need .* post-op operands 2e\+12 elements in f32" -- \
    bench --post-ops add:per_tensor+sum mb1ic1iw1000000000oc1000kw3
# Sizes that would take hours to count or terabytes to hold: refused at
# once, before the calibration, naming the sizes and the rule.
expect_within 5 2 "bench: mb1ic1000000000000ih4iw4oc1oh8ow8kh3kw3sh2sw2ph0pw0: its buffers need 1e\+05 GB \(input 1\.6e\+13, weights 9e\+12, output 64, post-op operands 0 elements in f32, and the baselines' outputs\), more than this machine's physical memory \([0-9.e+]+ GB\): a problem's buffers must fit in physical memory" -- \
    bench mb1ic1000000000000ih4oc1oh8kh3sh2
expect_within 5 2 "bench: mb1ic1iw1000000000000oc1ow1000000000002kw3pw0: its buffers need .*must fit in physical memory" -- \
    bench --peak-gflops 100 --peak-gbs 10 mb1ic1iw1000000000000oc1kw3
expect_within 5 2 "'mb1ic1iw9223372036854775807oc1kw3sw2': on axis w, s\*\(i-1\) \+ \(k-1\)\*\(d\+1\) \+ 1 = 1\.845e\+19 does not fit in 64 bits" -- \
    bench mb1ic1iw9223372036854775807oc1kw3sw2
printf 'mb1ic4iw8oc4kw3\nmb1ic2000000000000iw4oc1kw3\n' > "$work/huge.txt"
expect_within 5 2 "mb1ic2000000000000iw4oc1ow6kw3pw0: its buffers need" -- \
    bench --batch "$work/huge.txt"
# --list-problems: one JSON line per problem with the sizes the parser
# derived (here the spec's grouped 2D example, end pad 449 - 1 - 447 = 1,
# and a dilated 1D problem from a batch file with its file and line); it
# runs nothing (no plugin needed, exit 0 at once).
expect_within 5 0 '^\{"name": "", "label": "g4mb1ic20ih224iw224oc8oh447ow447kh3kw3sh2sw2ph1pw1", "descriptor": "g4mb1ic20ih224iw224oc8oh447ow447kh3kw3sh2sw2ph1pw1", "file": null, "line": 0, "mb": 1, "g": 4, "ic": 20, "oc": 8, "spatial_rank": 2, "axes": "hw", "i": \[224, 224\], "o": \[447, 447\], "k": \[3, 3\], "s": \[2, 2\], "p": \[1, 1\], "pad_end": \[1, 1\], "d": \[0, 0\], "dilation": \[1, 1\], "natural": \[449, 449\], "depthwise": false, "flops": 35912000\}$' -- \
    --plugin "$missing" bench --list-problems g4mb1ic20ih224oc8oh447kh3sh2ph1
printf '# dilated\nmb2ic4iw5oc6ow12kw3sw2pw1dw1n"one_d"\n' > "$work/list.txt"
expect_within 5 0 '^\{"name": "one_d", .*"file": "'"$work"'/list.txt", "line": 2, "mb": 2, "g": 1, "ic": 4, "oc": 6, "spatial_rank": 1, "axes": "w", "i": \[5\], "o": \[12\], "k": \[3\], "s": \[2\], "p": \[1\], "pad_end": \[0\], "d": \[1\], "dilation": \[2\], "natural": \[13\], "depthwise": false, "flops": 1344\}$' -- \
    bench --list-problems --batch "$work/list.txt"
# A batch file's path is kept with each of its problems (--list-problems,
# CSV): one longer than that room is refused, not cut.
long="$work$(printf '/.%.0s' $(seq 300))/list.txt"
expect_within 5 2 "batch file path '.{60}\.\.\.' is longer than 511 bytes" -- \
    bench --list-problems --batch "$long"

echo "$passed passed, $failures failed"
[ "$failures" -eq 0 ]
