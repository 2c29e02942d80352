#!/usr/bin/env bash
# Regenerates docs/src/images/scenes.jpg: one frame of every built-in scene (its own render section,
# else the measured default look), drawn at 1920x1080 and shown at 640x360, four to a row, in
# `forge scenes` order.
# Usage: scripts/contact-sheet.sh [STEPS]   (default 300 steps per scene; FORGE=path/to/forge)
set -euo pipefail
cd "$(dirname "$0")/.."
FORGE="${FORGE:-target/release/forge}"
STEPS="${1:-300}"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
scenes=$("$FORGE" scenes | awk '{print $1}')
inputs=()
for s in $scenes; do
    "$FORGE" simulate "$s" --steps "$STEPS" -o "$work/$s.bfs" -q
    # The last frame, STEPS recorded steps in (after the scene's warm-up, if it has one): a
    # scene may record every k-th step (vicsek-bands: every 10th).
    every=$("$FORGE" info "$work/$s.bfs" --json | sed -n 's/^  "record_every": \([0-9]*\),$/\1/p')
    "$FORGE" still "$work/$s.bfs" --frame "$((STEPS / every))" --1080p -o "$work/$s-1080p.png" -q
    ffmpeg -v error -y -i "$work/$s-1080p.png" -vf scale=640:360:flags=area "$work/$s.png"
    inputs+=(-i "$work/$s.png")
done
n=$(echo "$scenes" | wc -w)
rows=$(( (n + 3) / 4 ))
layout=""
for ((k = 0; k < n; k++)); do
    layout+="$(( (k % 4) * 640 ))_$(( (k / 4) * 360 ))|"
done
ffmpeg -v error -y "${inputs[@]}" \
    -filter_complex "xstack=inputs=$n:layout=${layout%|}:fill=black" -q:v 3 docs/src/images/scenes.jpg
echo "docs/src/images/scenes.jpg: $n scenes ($scenes), ${rows} rows, $STEPS steps each"
