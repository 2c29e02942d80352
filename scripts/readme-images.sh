#!/usr/bin/env bash
# Regenerates the README's and the guide's pictures from the build at hand: docs/src/images/murmuration.png,
# docs/src/images/shoal3d.png, docs/src/images/vicsek-bands.png, docs/src/images/overlays.jpg, and docs/src/images/scenes.jpg (through
# scripts/contact-sheet.sh). Each is a built-in scene with its own look, no flag but the size.
# Usage: scripts/readme-images.sh   (FORGE=path/to/forge; about 5 minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
FORGE="${FORGE:-target/release/forge}"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$FORGE" simulate murmuration --steps 600 -o "$work/m.bfs" -q
"$FORGE" still "$work/m.bfs" --frame 600 --720p -o docs/src/images/murmuration.png -q --force
"$FORGE" still "$work/m.bfs" --frame 300 --720p --overlay colorbar,time,title,scale \
    -o "$work/overlays.png" -q
ffmpeg -v error -y -i "$work/overlays.png" -q:v 3 docs/src/images/overlays.jpg
"$FORGE" simulate shoal3d --steps 1300 -o "$work/s.bfs" -q
"$FORGE" still "$work/s.bfs" --frame 1300 --720p -o docs/src/images/shoal3d.png -q --force
"$FORGE" simulate vicsek-bands -o "$work/v.bfs" -q
"$FORGE" still "$work/v.bfs" --frame 300 -o docs/src/images/vicsek-bands.png -q --force
FORGE="$FORGE" scripts/contact-sheet.sh
echo "docs/src/images/murmuration.png, docs/src/images/overlays.jpg, docs/src/images/shoal3d.png, docs/src/images/vicsek-bands.png, docs/src/images/scenes.jpg"
