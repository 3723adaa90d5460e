#!/usr/bin/env bash
# Checks that `dgrad bench --csv` wrote a well-formed file.
#
#   scripts/check-bench-csv.sh CSV EXPECTED_ROWS
#       checks CSV: the header exactly as bench/README.md gives it, EXPECTED_ROWS
#       rows of 11 fields, known dt/format names, numeric fields that parse
#       (dgrad time and compile times positive, GFLOP/s and roofline %
#       non-negative;
#       the raw oneDNN time and the ratio may be "nan" when oneDNN has no
#       baseline for a problem).
#   scripts/check-bench-csv.sh --run DGRAD BATCH [BENCH OPTIONS...]
#       runs DGRAD bench on BATCH with few repetitions and fixed peaks into
#       a temporary CSV, then checks it with one row per problem of BATCH.
set -euo pipefail

header='problem,dt,data_format,weights_format,dgrad_ms,onednn_ms,ratio,gflops,roofline_pct,compile_ms,compile_cached_us'

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

check() {
    local csv=$1 expected=$2
    [ -s "$csv" ] || { echo "check-bench-csv: $csv is missing or empty" >&2; return 1; }
    local first
    first=$(head -n 1 "$csv")
    if [ "$first" != "$header" ]; then
        echo "check-bench-csv: bad header in $csv:" >&2
        echo "  got:      $first" >&2
        echo "  expected: $header" >&2
        return 1
    fi
    awk -F, -v expected="$expected" -v file="$csv" '
        function num(s) { return s ~ /^-?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/ }
        function bad(msg) { printf "check-bench-csv: %s:%d: %s\n", file, NR, msg > "/dev/stderr"; errors++ }
        NR == 1 { next }
        {
            rows++
            if (NF != 11) { bad("expected 11 fields, got " NF); next }
            if ($1 == "") bad("empty problem")
            if ($2 !~ /^(f32|bf16|f16)$/) bad("bad dt \"" $2 "\"")
            if ($3 !~ /^(NXC|NCX)$/) bad("bad data_format \"" $3 "\"")
            if ($4 !~ /^(XIO|OIX)$/) bad("bad weights_format \"" $4 "\"")
            split("5 10 11", must, " ")
            for (i in must) {
                f = must[i]
                if (!num($f) || $f + 0 <= 0) bad("field " f " (\"" $f "\") is not a positive number")
            }
            split("8 9", nonneg, " ")
            for (i in nonneg) {
                f = nonneg[i]
                if (!num($f) || $f + 0 < 0) bad("field " f " (\"" $f "\") is not a non-negative number")
            }
            split("6 7", may, " ")
            for (i in may) {
                f = may[i]
                if ($f == "nan") { printf "check-bench-csv: %s:%d: no raw oneDNN baseline\n", file, NR; continue }
                if (!num($f) || $f + 0 <= 0) bad("field " f " (\"" $f "\") is not a positive number or nan")
            }
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
    check "$tmp/bench.csv" "$expected"
elif [ $# -eq 2 ]; then
    check "$1" "$2"
else
    echo "usage: $0 CSV EXPECTED_ROWS | $0 --run DGRAD BATCH [OPTIONS...]" >&2
    exit 2
fi
