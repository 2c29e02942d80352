#!/usr/bin/env bash
# Runs forge's whole test suite on a fresh Debian/Ubuntu machine with Rust.
# The renderer's tests need a GPU or Mesa's software driver (lavapipe) and FFmpeg. Run as root,
# this installs them if they are missing; otherwise it names them. With them present, the GPU
# tests are required to run (FORGE_REQUIRE_GPU_TESTS=1), not skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh

cargo test --release
