#!/usr/bin/env bash
# Sourced by demo.sh and test.sh: makes sure the system packages forge's renderer needs are
# present. Run as root on Debian/Ubuntu, it installs what is missing; otherwise it names them.
# Sets FORGE_REQUIRE_GPU_TESTS=1 when they are present, so GPU tests run instead of skipping.
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"

FORGE_PACKAGES="mesa-vulkan-drivers libvulkan1 libegl1 libegl-mesa0 libgl1-mesa-dri ffmpeg"
forge_missing=""
if command -v dpkg-query >/dev/null 2>&1; then
    for p in $FORGE_PACKAGES; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
            forge_missing="$forge_missing $p"
        fi
    done
fi
if [ -n "$forge_missing" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing:$forge_missing" >&2
        apt-get update
        DEBIAN_FRONTEND=noninteractive apt-get install -y $forge_missing
        forge_missing=""
    else
        echo "warning: missing packages:$forge_missing" >&2
        echo "  install them (as root): apt-get install -y$forge_missing" >&2
        echo "  without them rendering fails and the renderer's tests are skipped" >&2
    fi
fi
if [ -z "$forge_missing" ]; then
    export FORGE_REQUIRE_GPU_TESTS=1
fi
