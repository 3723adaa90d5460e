#!/usr/bin/env bash
# Installs a build into a temporary prefix (not the configured one), then
# builds the README's examples against it and runs them: the API example
# and the graph-compiler host (plugin/example_host.c), each once through
# find_package(dgrad) (targets dgrad::dgrad and dgrad::dgrad_loader) and
# once through pkg-config (dgrad.pc and dgrad_loader.pc, found on
# PKG_CONFIG_PATH only), the host on the installed plugin; and the
# installed dgrad command, which must find the installed plugin itself.
# Usage: check-install.sh BUILD_DIR
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build_dir="$(cd "$1" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
cmake --install "$build_dir" --prefix "$prefix" >/dev/null
libdir=$(find "$prefix" -name 'libdgrad.so' -printf '%h\n' | head -n 1)
plugin="$libdir/libdgrad_plugin.so"
for f in "$plugin" "$libdir/libdgrad_loader.a" "$prefix/bin/dgrad" \
         "$prefix/include/dgrad/dgrad.h" "$prefix/include/dgrad/dgrad_loader.h" \
         "$prefix/include/dgrad/dgrad_plugin.h" \
         "$libdir/pkgconfig/dgrad.pc" "$libdir/pkgconfig/dgrad_loader.pc" \
         "$libdir/cmake/dgrad/dgradConfig.cmake"; do
    [ -e "$f" ] || { echo "not installed: $f" >&2; exit 1; }
done

# The README's examples, as a reader would copy them.
extract() { # extract MARKER FILE
    awk -v marker="<!-- $1 -->" '$0 == marker {found=1; next}
         found && /^```c/ {inside=1; next}
         inside && /^```/ {exit}
         inside {print}' "$root/README.md" > "$2"
    [ -s "$2" ] || { echo "no $1 block in README.md" >&2; exit 1; }
}
extract readme-example "$work/api_example.c"
extract readme-host-example "$work/host_example.c"

# The host prints the plugin's name and the ConvTranspose result it checked.
host_output='^dgrad [0-9.]+(\+onednn\.[0-9.]+)?, .+: y = \[1 3 2; 4 10 6; 3 7 4\]$'
run_host() { # run_host HOST PLUGIN HOW
    local out
    out=$("$1" "$2")
    grep -qE "$host_output" <<<"$out" || {
        echo "host example ($3) printed: $out" >&2; exit 1; }
}

# find_package(dgrad).
cmake -S "$root/tests/install_consumer" -B "$work/consumer" \
      -DCMAKE_PREFIX_PATH="$prefix" -DAPI_EXAMPLE="$work/api_example.c" \
      -DHOST_EXAMPLE="$work/host_example.c" ${DGRAD_CONSUMER_CMAKE_ARGS:-} >/dev/null
cmake --build "$work/consumer" >/dev/null
LD_LIBRARY_PATH="$libdir" "$work/consumer/api_example"
cmake_plugin=$(cat "$work/consumer/plugin_path.txt")
[ "$(realpath "$cmake_plugin")" = "$(realpath "$plugin")" ] || {
    echo "find_package(dgrad) gives DGRAD_PLUGIN=$cmake_plugin, not $plugin" >&2; exit 1; }
run_host "$work/consumer/host_example" "$cmake_plugin" "find_package"

# pkg-config, with nothing but the search path: the files locate the
# prefix themselves.
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc -std=c11 "$work/api_example.c" $(pkg-config --cflags --libs dgrad) \
   ${DGRAD_EXTRA_LDFLAGS:-} -o "$work/api_example_pc"
LD_LIBRARY_PATH="$libdir" "$work/api_example_pc"
cc -std=c11 "$work/host_example.c" $(pkg-config --cflags --libs dgrad_loader) \
   ${DGRAD_EXTRA_LDFLAGS:-} -o "$work/host_example_pc"
pc_plugin=$(pkg-config --variable=plugin dgrad_loader)
[ "$(realpath "$pc_plugin")" = "$(realpath "$plugin")" ] || {
    echo "dgrad_loader.pc gives plugin=$pc_plugin, not $plugin" >&2; exit 1; }
run_host "$work/host_example_pc" "$pc_plugin" "pkg-config"

# The installed command finds the installed plugin next to itself.
version=$(env -u DGRAD_PLUGIN "$prefix/bin/dgrad" --version)
grep -qE "^plugin dgrad [0-9.]+\+onednn\.[0-9.]+ \(ABI [0-9.]+\) from $prefix/bin/\.\./lib.*/libdgrad_plugin\.so$" \
    <<<"$version" || { echo "installed dgrad --version printed: $version" >&2; exit 1; }
echo "installed to $prefix: find_package and pkg-config consumers, host on the installed plugin, dgrad --version: ok"
