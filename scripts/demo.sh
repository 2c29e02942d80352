#!/usr/bin/env bash
# The main job: renders the embedded demo scene (`turbulence`, 10k boids, 360 steps) to
# demo.mp4 at 1280x720 — about a minute on a CPU-only machine. Needs FFmpeg and a GPU or
# Mesa's software driver (as root: apt-get install -y mesa-vulkan-drivers libvulkan1 libegl1
# libegl-mesa0 libgl1-mesa-dri ffmpeg). Works on a fresh Debian/Ubuntu machine with Rust.
set -euo pipefail
cd "$(dirname "$0")/.."
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"
cargo build --release
./target/release/forge gpus
./target/release/forge demo --force
