#!/usr/bin/env bash
# Extracts the C example of README.md (the ```c block after the marker
# "readme-example") and compiles and runs it against the built library, so
# the README's example cannot rot. Usage: check-readme-example.sh BUILD_DIR
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build_dir="$(cd "$1" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
awk '/<!-- readme-example -->/ {found=1; next}
     found && /^```c/ {inside=1; next}
     inside && /^```/ {exit}
     inside {print}' "$root/README.md" > "$work/example.c"
[ -s "$work/example.c" ] || { echo "no readme-example block in README.md" >&2; exit 1; }
# The graph-compiler example must be plugin/example_host.c, which a test runs.
awk '/<!-- readme-host-example -->/ {found=1; next}
     found && /^```c/ {inside=1; next}
     inside && /^```/ {exit}
     inside {print}' "$root/README.md" > "$work/example_host.c"
if ! cmp -s "$work/example_host.c" "$root/plugin/example_host.c"; then
    echo "README's graph-compiler example differs from plugin/example_host.c:" >&2
    diff "$work/example_host.c" "$root/plugin/example_host.c" >&2 || true
    exit 1
fi
cc -std=c11 -Wall -Werror -I"$root/include" "$work/example.c" -L"$build_dir" \
   -ldgrad -Wl,-rpath,"$build_dir" ${DGRAD_EXTRA_LDFLAGS:-} -o "$work/example"
"$work/example"
