#!/usr/bin/env bash
# Installs a build into a temporary prefix, then builds and runs a consumer
# through find_package(dgrad) and another through pkg-config.
# Usage: check-install.sh BUILD_DIR
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build_dir="$(cd "$1" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
libdir=$(find "$work/prefix" -name 'libdgrad.so' -printf '%h\n' | head -n 1)
cmake -S "$root/tests/install_consumer" -B "$work/consumer" \
      -DCMAKE_PREFIX_PATH="$work/prefix" ${DGRAD_CONSUMER_CMAKE_ARGS:-} >/dev/null
cmake --build "$work/consumer" >/dev/null
LD_LIBRARY_PATH="$libdir" "$work/consumer/consumer"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc -std=c11 "$root/tests/install_consumer/consumer.c" $(pkg-config --define-variable=prefix="$work/prefix" --cflags --libs dgrad) \
   ${DGRAD_EXTRA_LDFLAGS:-} -o "$work/consumer-pc"
LD_LIBRARY_PATH="$libdir" "$work/consumer-pc"
