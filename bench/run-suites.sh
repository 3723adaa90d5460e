#!/usr/bin/env bash
# Runs the full benchmark suite in the seven configurations reported in
# bench/README.md and writes tables, CSV files and plots to OUT_DIR
# (default bench/results). Usage: bench/run-suites.sh [DGRAD_BINARY] [OUT_DIR]
# (SUITE=FILE for another batch file).
# About 4-6 minutes on the 2-CPU machine of bench/results (`time
# bench/run-suites.sh`), 5 GB of memory at most; run it on a quiet
# machine.
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
# Which suite file each problem comes from (results_table.py groups by it).
"$bin" bench --list-problems --batch "$suite" > "$out/problems.jsonl"
run() {
    local name=$1
    shift
    echo "dgrad bench: $name" >&2
    "$bin" bench --batch "$suite" "$@" --csv "$out/$name.csv" > "$out/$name.txt"
}
# The first configuration calibrates the machine's peaks (dnnl_sgemm and a
# triad, its `machine:` line); the others are given the same figures so
# that their roofline fractions share one yardstick (bf16 calibrates its
# own compute peak).
run f32_nxc --plot "$out/f32_nxc.png"
gflops=$(sed -n 's/^machine:.* peak \([0-9.]*\) GFLOP\/s.*/\1/p' "$out/f32_nxc.txt")
gbs=$(sed -n 's/^machine:.* GFLOP\/s ([^)]*), \([0-9.]*\) GB\/s.*/\1/p' "$out/f32_nxc.txt")
if [ -z "$gflops" ] || [ -z "$gbs" ]; then
    echo "run-suites.sh: no calibrated peaks in $out/f32_nxc.txt" >&2
    exit 1
fi
peaks="--peak-gflops $gflops --peak-gbs $gbs"
run f32_nxc_prepacked $peaks --constant-weights --raw-weights prepacked \
    --plot "$out/f32_nxc_prepacked.png"
run f32_ncx $peaks --data-format NCX --weights-format OIX --plot "$out/f32_ncx.png"
run f16_nxc $peaks --dt f16 --plot "$out/f16_nxc.png"
run f16_ncx $peaks --dt f16 --data-format NCX --weights-format OIX
run bf16_nxc --peak-gbs "$gbs" --dt bf16
run bf16_ncx --peak-gbs "$gbs" --dt bf16 --data-format NCX --weights-format OIX
# The 3D specification example at its full size (1x20x224^3 -> 1x8x447^3,
# 3.8 GB of f32 input and output; the suite has it at 56^3): each type on
# its own, then f32 against raw (its gemm takes about 1.7 s a run). Raw's
# runs interleaved slow dgrad's: 284 ms [241..308] against 226-230 alone
# on the Intel machine of results/spr_avx512 (bench/README.md, fourteenth
# look), so the types are compared, and the roofline taken, alone.
spec3d='g4mb1ic20id224ih224iw224oc8od447oh447ow447kd3kh3kw3sd2sh2sw2pd1ph1pw1n"spec:GroupConvolutionBackpropData_3d"'
for run in f32 bf16 f16 f32_raw; do
    echo "dgrad bench: spec_3d_full_$run" >&2
    raw=(--no-raw)
    [ "$run" = f32_raw ] && raw=()
    "$bin" bench --dt "${run%_raw}" --data-format NCX --weights-format OIX \
        $peaks --reps 5 "${raw[@]}" --csv "$out/spec_3d_full_$run.csv" \
        "$spec3d" > "$out/spec_3d_full_$run.txt"
done
# The issue's third 3D size, 1x20x112^3 -> 1x8x223^3 (0.47 GB of f32
# input and output: also planned on a reduced copy), f32 against raw.
spec3d_112='g4mb1ic20id112ih112iw112oc8od223oh223ow223kd3kh3kw3sd2sh2sw2pd1ph1pw1n"spec:GroupConvolutionBackpropData_3d_112"'
echo "dgrad bench: spec_3d_112_f32" >&2
"$bin" bench --data-format NCX --weights-format OIX $peaks --reps 10 \
    --csv "$out/spec_3d_112_f32.csv" "$spec3d_112" > "$out/spec_3d_112_f32.txt"
python3 bench/results_table.py "$out" > "$out/summary.md"
echo "written: $out (summary.md has the tables of bench/README.md)" >&2
