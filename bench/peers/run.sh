#!/usr/bin/env bash
# dgrad against PyTorch and ONNX Runtime, in one run on the same problems
# and threads: installs what is missing (install.sh), builds the Release
# dgrad like bench/run-suites.sh when no binary is given, then for each
# configuration (f32 NXC, f32 NCX) runs dgrad bench and both peers
# (peers.py), and writes OUT_DIR/peers_<config>.csv, peers.md and
# peers.png (report.py).
# Usage: bench/peers/run.sh [-b DGRAD] [-o OUT_DIR] [-t THREADS] [-- PEERS.PY OPTIONS...] [SUITE...]
#   SUITE: batch files (default bench/suites/full.txt); -t: threads of every
#   participant (default nproc); options after -- go to peers.py (e.g.
#   --skip REGEX, --max-problem-s S, --weights variable).
# About 10 minutes for the full suite on 2 CPUs; run it on a quiet machine.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="" out="$root/bench/results" threads="$(nproc)"
while getopts "b:o:t:" opt; do
    case $opt in
        b) bin=$OPTARG ;;
        o) out=$OPTARG ;;
        t) threads=$OPTARG ;;
        *) echo "usage: $0 [-b DGRAD] [-o OUT_DIR] [-t THREADS] [-- PEERS.PY OPTIONS...] [SUITE...]" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
extra=()
suites=()
for a in "$@"; do
    case $a in
        --*|[0-9]*) extra+=("$a") ;;
        *) if [ -f "$a" ]; then suites+=("$(cd "$(dirname "$a")" && pwd)/$(basename "$a")"); else extra+=("$a"); fi ;;
    esac
done
[ ${#suites[@]} -gt 0 ] || suites=("$root/bench/suites/full.txt")
"$root/bench/peers/install.sh"
cd "$root"
if [ -z "$bin" ]; then
    bin=build-rel/dgrad
    if [ ! -x "$bin" ]; then
        scripts/install-deps.sh
        cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=Release -DDGRAD_BUILD_TESTS=OFF >/dev/null
        cmake --build build-rel -j "$(nproc)"
    fi
fi
mkdir -p "$out"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
status=0
for layout in NXC NCX; do
    config=f32_$(echo "$layout" | tr A-Z a-z)
    /usr/bin/python3 bench/peers/peers.py --dgrad "$bin" --layout "$layout" \
        --threads "$threads" --csv "$out/peers_$config.csv" "${extra[@]}" "${suites[@]}" || status=1
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
/usr/bin/python3 bench/peers/report.py "$out/peers.md" "$out/peers.png" \
    "$out/peers_f32_nxc.csv" "$out/peers_f32_ncx.csv"
echo "written: $out/peers.md, peers.png, peers_f32_{nxc,ncx}.csv" >&2
exit $status
