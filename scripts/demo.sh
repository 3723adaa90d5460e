#!/usr/bin/env bash
# The main job: installs what is missing, builds dgrad and runs the
# specification's example through the public API.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=$(scripts/build.sh | tail -n 1)
"$build_dir/dgrad_example" "$@"
