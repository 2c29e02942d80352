#!/usr/bin/env bash
# The built-in vicsek-hysteresis scene (Grégoire & Chaté, PRL 92, 025702, 2004): vectorial-noise
# Vicsek, N = 4096 at density 2, v0 = 0.5, its noise ramped by the scene's timeline from 0.45 up
# to 0.75 over 40 000 steps and back down over 40 000. Writes, in OUT (default
# docs/src/images):
#   vicsek-hysteresis.png       forge info --against vicsek.noise: polarization against the
#                               noise, rising and falling branches (the loop);
#   vicsek-hysteresis-time.png  forge info --plot: the metrics and the keyed noise against time.
# About 25 s on two cores. Knobs: OUT (folder), FORGE (the binary).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT="${OUT:-docs/src/images}"
if [[ -z "${FORGE:-}" ]]; then
    cargo build --release --quiet
    FORGE=target/release/forge
fi
mkdir -p "$OUT"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$FORGE" simulate vicsek-hysteresis -o "$work/h.bfs"
"$FORGE" info "$work/h.bfs" --plot "$OUT/vicsek-hysteresis.png" --against vicsek.noise --force -q >/dev/null
"$FORGE" info "$work/h.bfs" --plot "$OUT/vicsek-hysteresis-time.png" --force -q
