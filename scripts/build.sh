#!/usr/bin/env bash
# Configures and builds dgrad into BUILD_DIR and prints the directory as
# its last line.
#   --sanitize  AddressSanitizer and UndefinedBehaviorSanitizer (build-sanitize)
#   --onednn3   against oneDNN 3, built once by scripts/build-onednn3.sh
#               (build-onednn3; with --sanitize: build-onednn3-sanitize)
# Without --onednn3 the system's oneDNN (Debian 12: 2.6.3) is used.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitize=OFF
onednn3=0
for arg in "$@"; do
    case "$arg" in
        --sanitize) sanitize=ON ;;
        --onednn3) onednn3=1 ;;
        *) echo "build.sh: unknown option '$arg'" >&2; exit 2 ;;
    esac
done
build_dir=build
[ "$onednn3" = 1 ] && build_dir=build-onednn3
[ "$sanitize" = ON ] && build_dir=$build_dir-sanitize
build_dir=${BUILD_DIR:-$build_dir}
scripts/install-deps.sh
onednn_root=""
if [ "$onednn3" = 1 ]; then
    onednn_root=$(scripts/build-onednn3.sh | tail -n 1)
fi
cmake -S . -B "$build_dir" -DDGRAD_SANITIZE="$sanitize" \
    -DDGRAD_ONEDNN_ROOT="$onednn_root" >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
echo "$build_dir"
