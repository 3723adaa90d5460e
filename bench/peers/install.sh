#!/usr/bin/env bash
# Installs what bench/peers needs, only what is missing: Debian 12's
# python3-torch (PyTorch 1.13.1), python3-onnx and python3-numpy, OpenBLAS
# (PyTorch's first recommended BLAS: with the reference BLAS its
# transposed convolutions run about 10x slower), Node.js and npm, then
# onnxruntime-node at the version of package-lock.json (`npm ci`). The
# package's install script would fetch CUDA binaries from GitHub on Linux
# x64; ONNXRUNTIME_NODE_INSTALL=skip (the package's documented switch,
# like `--onnxruntime-node-install=skip`) turns that off: the CPU runtime
# is in the npm package itself. Nothing is downloaded when benchmarks run.
set -euo pipefail
cd "$(dirname "$0")"
packages=(python3-torch python3-onnx python3-numpy libopenblas0 gnuplot-nox)
# Node.js and npm: Debian's nodejs (18) and npm, unless a node and npm are
# already installed (e.g. a newer nodejs that bundles npm).
command -v node >/dev/null || packages+=(nodejs)
command -v npm >/dev/null || packages+=(npm)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing missing packages: ${missing[*]}" >&2
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# onnxruntime-node, unless the pinned version is already in node_modules.
if ! node -e "const want = require('./package.json').dependencies['onnxruntime-node'];
        process.exit(require('onnxruntime-node/package.json').version === want ? 0 : 1)" 2>/dev/null; then
    echo "installing onnxruntime-node (npm ci)" >&2
    ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund >&2
fi
