#!/usr/bin/env bash
# Runs forge's whole test suite on a fresh Debian/Ubuntu machine with Rust.
# Needs no system packages today (the solver, format and CLI are pure Rust); when run as root
# it would install any that later stages need.
set -euo pipefail
cd "$(dirname "$0")/.."
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"
cargo build --release --locked 2>/dev/null || cargo build --release
cargo test --release
