#!/usr/bin/env bash
# Installs the Debian 12 packages dgrad needs, only those that are missing.
set -euo pipefail
packages=(build-essential cmake pkg-config libdnnl-dev libcriterion-dev libjansson-dev libxml2-dev binutils gnuplot-nox)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing missing packages: ${missing[*]}"
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
