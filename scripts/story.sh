#!/usr/bin/env bash
# The built-in murmuration-story at 1080p, as a contact sheet: eight frames of the run drawn with
# the scene's own look (its keyed camera included) — the calm flock, the falcon's approach, the
# push-in at the attack, the split, the pull-back, the pieces, the re-join — each scaled to
# 640x360, four a row. Writes OUT/murmuration-story.jpg (OUT: default docs/src/images), and
# with CLIP=1 the whole film as OUT/murmuration-story.mp4 (1080p, 53 s; minutes on lavapipe).
# About a minute on two cores with Mesa's software driver. Knobs: OUT, FORGE, CLIP.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT="${OUT:-docs/src/images}"
if [[ -z "${FORGE:-}" ]]; then
    cargo build --release --quiet
    FORGE=target/release/forge
fi
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"
mkdir -p "$OUT"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$FORGE" simulate murmuration-story -o "$work/story.bfs" -q
# Frames (the warm-up ends at t = 10, a frame every step of dt 0.05): t = 15, 21, 22.6, 23.5,
# 25, 49, 63, 75.
frames=(100 220 252 270 300 780 1060 1300)
inputs=()
for k in "${frames[@]}"; do
    "$FORGE" still "$work/story.bfs" --frame "$k" --1080p -o "$work/$k.png" -q
    inputs+=(-i "$work/$k.png")
done
scale=""
stack=""
for i in "${!frames[@]}"; do
    scale+="[$i]scale=640:360[s$i];"
    stack+="[s$i]"
done
ffmpeg -loglevel error -y "${inputs[@]}" -filter_complex \
    "${scale}${stack}xstack=inputs=8:layout=0_0|w0_0|w0+w1_0|w0+w1+w2_0|0_h0|w0_h0|w0+w1_h0|w0+w1+w2_h0" \
    -q:v 3 "$OUT/murmuration-story.jpg"
echo "$OUT/murmuration-story.jpg: frames ${frames[*]}"
if [[ "${CLIP:-0}" == 1 ]]; then
    "$FORGE" render "$work/story.bfs" --1080p -o "$OUT/murmuration-story.mp4" --force -q
fi
