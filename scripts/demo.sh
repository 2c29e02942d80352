#!/usr/bin/env bash
# The main job: renders the embedded demo scene (`murmuration`, 10k boids, 360 steps) to
# demo.mp4 at 1280x720 — about 20 s on 2 CPU cores (after the build) with no GPU. Needs FFmpeg and a GPU or
# Mesa's software driver: run as root on Debian/Ubuntu, scripts/setup.sh installs them.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
cargo build --release
./target/release/forge gpus
./target/release/forge demo --force
