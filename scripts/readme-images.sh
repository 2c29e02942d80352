#!/usr/bin/env bash
# Regenerates the README's pictures from the build at hand: docs/murmuration.png,
# docs/shoal3d.png, docs/vicsek-bands.png, docs/overlays.jpg, and docs/scenes.jpg (through
# scripts/contact-sheet.sh). Each is a built-in scene with its own look, no flag but the size.
# Usage: scripts/readme-images.sh   (FORGE=path/to/forge; about 5 minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
FORGE="${FORGE:-target/release/forge}"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$FORGE" simulate murmuration --steps 600 -o "$work/m.bfs" -q
"$FORGE" still "$work/m.bfs" --frame 600 --720p -o docs/murmuration.png -q --force
"$FORGE" still "$work/m.bfs" --frame 300 --720p --overlay colorbar,time,title,scale \
    -o "$work/overlays.png" -q
ffmpeg -v error -y -i "$work/overlays.png" -q:v 3 docs/overlays.jpg
"$FORGE" simulate shoal3d --steps 1300 -o "$work/s.bfs" -q
"$FORGE" still "$work/s.bfs" --frame 1300 --720p -o docs/shoal3d.png -q --force
"$FORGE" simulate vicsek-bands -o "$work/v.bfs" -q
"$FORGE" still "$work/v.bfs" --frame 300 -o docs/vicsek-bands.png -q --force
FORGE="$FORGE" scripts/contact-sheet.sh
echo "docs/murmuration.png, docs/overlays.jpg, docs/shoal3d.png, docs/vicsek-bands.png, docs/scenes.jpg"
