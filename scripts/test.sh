#!/usr/bin/env bash
# Runs forge's whole test suite on a fresh Debian/Ubuntu machine with Rust.
# The renderer's tests need a GPU or Mesa's software driver (lavapipe) and FFmpeg. Run as root,
# this installs them if they are missing; otherwise it names them. With them present, the GPU
# tests are required to run (FORGE_REQUIRE_GPU_TESTS=1), not skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"

PACKAGES="mesa-vulkan-drivers libvulkan1 libegl1 libegl-mesa0 libgl1-mesa-dri ffmpeg"
missing=""
if command -v dpkg-query >/dev/null 2>&1; then
    for p in $PACKAGES; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
            missing="$missing $p"
        fi
    done
fi
if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing:$missing" >&2
        apt-get update
        DEBIAN_FRONTEND=noninteractive apt-get install -y $missing
    else
        echo "warning: missing packages:$missing" >&2
        echo "  install them (as root): apt-get install -y$missing" >&2
        echo "  without them the renderer's GPU and video tests are skipped" >&2
    fi
fi
if [ -z "$missing" ] || [ "$(id -u)" = 0 ]; then
    export FORGE_REQUIRE_GPU_TESTS=1
fi

cargo build --release --locked 2>/dev/null || cargo build --release
cargo test --release
