#!/usr/bin/env bash
# The main job: records the default demo scene (the 60k-boid `turbulence`) to turbulence.bfs
# and describes it. Works on a fresh Debian/Ubuntu machine with Rust.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release
./target/release/forge simulate turbulence --force
./target/release/forge info turbulence.bfs
