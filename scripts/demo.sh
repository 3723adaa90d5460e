#!/usr/bin/env bash
# The main job: installs what is missing, builds dgrad and runs `dgrad demo`
# (the specification's examples through the plugin, checked against the
# reference). Extra arguments go to `dgrad demo` (see `--help`).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=$(scripts/build.sh | tail -n 1)
"$build_dir/dgrad" demo "$@"
