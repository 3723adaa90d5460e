#!/usr/bin/env bash
# Runs the full benchmark suite in the six configurations reported in
# bench/README.md and writes tables, CSV files and plots to OUT_DIR
# (default bench/results). Usage: bench/run-suites.sh [DGRAD_BINARY] [OUT_DIR]
# (SUITE=FILE for another batch file).
# About 3-5 minutes on the 2-CPU machine of bench/results (`time
# bench/run-suites.sh`); run it on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build-rel/dgrad}
out=${2:-bench/results}
if [ ! -x "$bin" ]; then
    scripts/install-deps.sh
    cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=Release -DDGRAD_BUILD_TESTS=OFF >/dev/null
    cmake --build build-rel -j "$(nproc)"
    bin=build-rel/dgrad
fi
mkdir -p "$out"
suite=${SUITE:-bench/suites/full.txt}
# Peaks of the 2-CPU machine of bench/results (sgemm, triad), as the
# `machine:` line of `dgrad bench` reports them when --peak-gflops and
# --peak-gbs are not given; given here so that roofline fractions are
# comparable between runs. bf16 calibrates its own.
peaks="--peak-gflops 300 --peak-gbs 30"
run() {
    local name=$1
    shift
    echo "dgrad bench: $name" >&2
    "$bin" bench --batch "$suite" "$@" --csv "$out/$name.csv" > "$out/$name.txt"
}
run f32_nxc $peaks --plot "$out/f32_nxc.png"
run f32_nxc_prepacked $peaks --constant-weights --raw-weights prepacked \
    --plot "$out/f32_nxc_prepacked.png"
run f32_ncx $peaks --data-format NCX --weights-format OIX --plot "$out/f32_ncx.png"
run f16_nxc $peaks --dt f16 --plot "$out/f16_nxc.png"
run f16_ncx $peaks --dt f16 --data-format NCX --weights-format OIX
run bf16_nxc --peak-gbs 30 --dt bf16
python3 bench/results_table.py "$out" > "$out/summary.md"
echo "written: $out (summary.md has the tables of bench/README.md)" >&2
