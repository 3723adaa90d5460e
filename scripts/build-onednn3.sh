#!/usr/bin/env bash
# Builds oneDNN 3 from ../shared/deps (the unmodified release tarball) once,
# into a cache directory outside the checkout, and prints the install prefix
# as its last line. A later run finds the finished install and only prints
# its prefix.
#
#   DGRAD_CACHE        cache root (default: $XDG_CACHE_HOME/dgrad or ~/.cache/dgrad)
#   DGRAD_ONEDNN3_TAR  the tarball (default: ../shared/deps/oneDNN-3.7.1.tar.xz)
#
# The build has the graph API (dgrad's bench and conform compare against
# oneDNN Graph's own partition) and OpenMP threading like Debian's 2.6.
# It takes about 30 minutes with 2 cores; examples and oneDNN's own tests
# are left out. A build is only marked finished (the .complete file) after
# its install succeeded, so an interrupted one starts again.
set -euo pipefail
cd "$(dirname "$0")/.."
tarball=${DGRAD_ONEDNN3_TAR:-../shared/deps/oneDNN-3.7.1.tar.xz}
if [ ! -f "$tarball" ]; then
    echo "build-onednn3.sh: no oneDNN source tarball at '$tarball'" >&2
    exit 1
fi
tarball=$(cd "$(dirname "$tarball")" && pwd)/$(basename "$tarball")
version=$(basename "$tarball" .tar.xz)
version=${version#oneDNN-}
cache=${DGRAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dgrad}
prefix=$cache/onednn-$version
if [ -f "$prefix/.complete" ]; then
    echo "$prefix"
    exit 0
fi
command -v cmake >/dev/null || scripts/install-deps.sh >&2
work=$cache/onednn-$version-build
rm -rf "$work" "$prefix"
mkdir -p "$work"
echo "build-onednn3.sh: building oneDNN $version into $prefix (about 30 minutes on 2 cores)" >&2
tar -xJf "$tarball" -C "$work"
src=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -n 1)
cmake -S "$src" -B "$work/build" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DONEDNN_BUILD_GRAPH=ON \
    -DONEDNN_CPU_RUNTIME=OMP \
    -DONEDNN_GPU_RUNTIME=NONE \
    -DONEDNN_BUILD_EXAMPLES=OFF \
    -DONEDNN_BUILD_TESTS=OFF \
    -DONEDNN_BUILD_DOC=OFF >&2
cmake --build "$work/build" -j "$(nproc)" >&2
cmake --install "$work/build" >&2
rm -rf "$work"
touch "$prefix/.complete"
echo "$prefix"
