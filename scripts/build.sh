#!/usr/bin/env bash
# Configures and builds dgrad into BUILD_DIR (default: build, or
# build-sanitize with --sanitize).
set -euo pipefail
cd "$(dirname "$0")/.."
sanitize=OFF
build_dir=build
for arg in "$@"; do
    case "$arg" in
        --sanitize) sanitize=ON; build_dir=build-sanitize ;;
        *) echo "build.sh: unknown option '$arg'" >&2; exit 2 ;;
    esac
done
build_dir=${BUILD_DIR:-$build_dir}
scripts/install-deps.sh
cmake -S . -B "$build_dir" -DDGRAD_SANITIZE="$sanitize" >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
echo "$build_dir"
