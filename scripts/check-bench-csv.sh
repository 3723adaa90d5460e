#!/usr/bin/env bash
# Checks that `dgrad bench --csv` wrote a well-formed file.
#
#   scripts/check-bench-csv.sh CSV EXPECTED_ROWS
#       checks CSV: the header exactly as bench/README.md gives it, EXPECTED_ROWS
#       rows of 23 fields, known dt/format/baseline names, numeric fields
#       that parse (dgrad time, compile times and roofline time positive,
#       GFLOP/s and roofline % non-negative; the raw oneDNN time, the ratio
#       and the added time may be "nan" when oneDNN has no baseline for a
#       problem), and fields that must agree: ratio = dgrad_ms / onednn_ms,
#       added_us = 1000 x (dgrad_ms - onednn_ms), roofline_us = 10 x
#       roofline_pct x dgrad_ms (to the printed digits); graph_ms (oneDNN
#       Graph's partition) positive, or "nan" where there is none (builds
#       on oneDNN 2, or an op oneDNN Graph refuses); raw_wrong and
#       graph_wrong 0 or 1 (1 where that baseline's output is wrong);
#       post_ops empty, bare_ms and unfused_ms "nan" (no --post-ops), or
#       the chain, bare_ms positive and unfused_ms positive or "nan" (no
#       unfused chain) and graph_ms "nan"; memory_bound and unfused_wrong
#       0 or 1; f32_ms (dgrad in f32 in the same run) positive for f16 and
#       bf16 rows without --post-ops, "nan" otherwise.
#   scripts/check-bench-csv.sh CSV EXPECTED_ROWS BASELINE [POST_OPS]
#       the same, and every row's raw_baseline is BASELINE (and post_ops
#       POST_OPS).
#   scripts/check-bench-csv.sh --run DGRAD BATCH [BENCH OPTIONS...]
#       runs DGRAD bench on BATCH with few repetitions and fixed peaks into
#       a temporary CSV, then checks it with one row per problem of BATCH and
#       the baseline the options ask for (--raw-layout, --raw-weights).
set -euo pipefail

header='problem,dt,data_format,weights_format,dgrad_ms,onednn_ms,ratio,gflops,roofline_pct,compile_ms,compile_cached_us,raw_baseline,roofline_us,added_us,graph_ms,raw_wrong,graph_wrong,post_ops,bare_ms,unfused_ms,memory_bound,unfused_wrong,f32_ms'

count_problems() {
    # Problem tokens of a batch file: '#' starts a comment, blank-separated
    # tokens, nested --batch= files followed relative to the file.
    local file=$1 dir tok n=0
    dir=$(dirname "$file")
    while IFS= read -r line || [ -n "$line" ]; do
        line=${line%%#*}
        for tok in $line; do
            case $tok in
                --batch=/*) n=$((n + $(count_problems "${tok#--batch=}"))) ;;
                --batch=*) n=$((n + $(count_problems "$dir/${tok#--batch=}"))) ;;
                *) n=$((n + 1)) ;;
            esac
        done
    done < "$file"
    echo "$n"
}

# The chain of --post-ops (or --attr-post-ops) in the options, as given.
post_ops_of() {
    local chain=
    while [ $# -gt 0 ]; do
        case $1 in
            --post-ops|--attr-post-ops) chain=${2:-}; shift ;;
            --post-ops=*|--attr-post-ops=*) chain=${1#*=} ;;
        esac
        shift
    done
    echo "$chain"
}

# The raw_baseline the bench options ask for: user, prepacked_weights or
# preferred (which includes the weights).
baseline_of() {
    local layout=user weights=user
    while [ $# -gt 0 ]; do
        case $1 in
            --raw-layout) layout=${2:-}; shift ;;
            --raw-layout=*) layout=${1#*=} ;;
            --raw-weights) weights=${2:-}; shift ;;
            --raw-weights=*) weights=${1#*=} ;;
        esac
        shift
    done
    if [ "$layout" = preferred ]; then echo preferred
    elif [ "$weights" = prepacked ]; then echo prepacked_weights
    else echo user; fi
}

check() {
    local csv=$1 expected=$2 baseline=${3:-} post_ops=${4:-}
    [ -s "$csv" ] || { echo "check-bench-csv: $csv is missing or empty" >&2; return 1; }
    local first
    first=$(head -n 1 "$csv")
    if [ "$first" != "$header" ]; then
        echo "check-bench-csv: bad header in $csv:" >&2
        echo "  got:      $first" >&2
        echo "  expected: $header" >&2
        return 1
    fi
    awk -F, -v expected="$expected" -v file="$csv" -v baseline="$baseline" \
        -v post_ops="$post_ops" '
        function num(s) { return s ~ /^-?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/ }
        function abs(x) { return x < 0 ? -x : x }
        # Equal up to @p tol plus @p rel of the expected value.
        function close_to(a, b, rel, tol) { return abs(a - b) <= rel * abs(b) + tol }
        function bad(msg) { printf "check-bench-csv: %s:%d: %s\n", file, NR, msg > "/dev/stderr"; errors++ }
        NR == 1 { next }
        {
            rows++
            if (NF != 23) { bad("expected 23 fields, got " NF); next }
            if ($1 == "") bad("empty problem")
            if ($2 !~ /^(f32|bf16|f16)$/) bad("bad dt \"" $2 "\"")
            if ($3 !~ /^(NXC|NCX)$/) bad("bad data_format \"" $3 "\"")
            if ($4 !~ /^(XIO|OIX)$/) bad("bad weights_format \"" $4 "\"")
            if ($12 !~ /^(user|prepacked_weights|preferred|none)$/) bad("bad raw_baseline \"" $12 "\"")
            if (baseline != "" && $12 != baseline) bad("raw_baseline \"" $12 "\", expected \"" baseline "\"")
            split("5 10 11 13", must, " ")
            for (i in must) {
                f = must[i]
                if (!num($f) || $f + 0 <= 0) bad("field " f " (\"" $f "\") is not a positive number")
            }
            split("8 9", nonneg, " ")
            for (i in nonneg) {
                f = nonneg[i]
                if (!num($f) || $f + 0 < 0) bad("field " f " (\"" $f "\") is not a non-negative number")
            }
            split("6 7 14", may, " ")
            for (i in may) {
                f = may[i]
                if ($f == "nan") { printf "check-bench-csv: %s:%d: no raw oneDNN baseline\n", file, NR; continue }
                if (!num($f) || (f != 14 && $f + 0 <= 0)) bad("field " f " (\"" $f "\") is not a positive number or nan")
            }
            if ($15 != "nan" && (!num($15) || $15 + 0 <= 0)) bad("graph_ms \"" $15 "\" is not a positive number or nan")
            if ($16 !~ /^[01]$/) bad("raw_wrong \"" $16 "\" is not 0 or 1")
            if ($17 !~ /^[01]$/) bad("graph_wrong \"" $17 "\" is not 0 or 1")
            if ($17 == 1 && $15 == "nan") bad("graph_wrong 1 without a graph_ms")
            if ($18 != post_ops) bad("post_ops \"" $18 "\", expected \"" post_ops "\"")
            if (post_ops == "") {
                if ($19 != "nan" || $20 != "nan") bad("bare_ms and unfused_ms without --post-ops: \"" $19 "\", \"" $20 "\", expected nan")
            } else {
                if (!num($19) || $19 + 0 <= 0) bad("bare_ms \"" $19 "\" is not a positive number")
                if ($20 != "nan" && (!num($20) || $20 + 0 <= 0)) bad("unfused_ms \"" $20 "\" is not a positive number or nan")
                if ($15 != "nan") bad("graph_ms \"" $15 "\" with --post-ops: the anchor takes no post-ops")
            }
            if ($21 !~ /^[01]$/) bad("memory_bound \"" $21 "\" is not 0 or 1")
            if ($22 !~ /^[01]$/) bad("unfused_wrong \"" $22 "\" is not 0 or 1")
            if ($2 != "f32" && post_ops == "") {
                if (!num($23) || $23 + 0 <= 0) bad("f32_ms \"" $23 "\" is not a positive number (dgrad in f32 in a " $2 " run)")
            } else if ($23 != "nan") bad("f32_ms \"" $23 "\", expected nan (" $2 ", post_ops \"" post_ops "\")")
            # Derived fields agree with the times they come from (printed
            # with 5-6 significant digits).
            if (num($5) && num($6) && num($7) && !close_to($7, $5 / $6, 1e-3, 0))
                bad("ratio " $7 " is not dgrad_ms / onednn_ms = " $5 / $6)
            # (a difference of times printed with 6 digits: within 5e-6 of
            # each, in microseconds)
            if (num($5) && num($6) && num($14) && !close_to($14, 1000 * ($5 - $6), 1e-5, 1e-2 * ($5 + $6) + 1e-4))
                bad("added_us " $14 " is not 1000 x (dgrad_ms - onednn_ms) = " 1000 * ($5 - $6))
            if (($6 == "nan") != ($14 == "nan"))
                bad("added_us \"" $14 "\" and onednn_ms \"" $6 "\": both numbers or both nan")
            if (num($5) && num($9) && num($13) && !close_to($13, 10 * $9 * $5, 1e-3, 0))
                bad("roofline_us " $13 " is not 10 x roofline_pct x dgrad_ms = " 10 * $9 * $5)
        }
        END {
            if (rows != expected) { printf "check-bench-csv: %s: %d rows, expected %d\n", file, rows, expected > "/dev/stderr"; errors++ }
            if (errors) exit 1
            printf "check-bench-csv: %s: header and %d rows well-formed\n", file, rows
        }' "$csv"
}

if [ "${1:-}" = "--run" ]; then
    [ $# -ge 3 ] || { echo "usage: $0 --run DGRAD BATCH [OPTIONS...]" >&2; exit 2; }
    dgrad=$2 batch=$3
    shift 3
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    expected=$(count_problems "$batch")
    "$dgrad" bench --batch "$batch" --reps 2 --warmup 1 --cached-reps 3 \
        --min-sample-ms 0.1 --peak-gflops 100 --peak-gbs 10 --quiet \
        --csv "$tmp/bench.csv" "$@"
    check "$tmp/bench.csv" "$expected" "$(baseline_of "$@")" "$(post_ops_of "$@")"
elif [ $# -ge 2 ] && [ $# -le 4 ]; then
    check "$@"
else
    echo "usage: $0 CSV EXPECTED_ROWS [BASELINE [POST_OPS]] | $0 --run DGRAD BATCH [OPTIONS...]" >&2
    exit 2
fi
