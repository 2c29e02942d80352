#!/usr/bin/env bash
# Regenerates docs/src/images/blender-murmuration.jpg: a forge recording exported to glTF and
# rendered in Blender (Debian's 3.4, headless, Cycles on the CPU) from straight above, by
# scripts/blender-check.py, which first checks every exported agent against the recording.
# Usage: scripts/blender-frame.sh   (FORGE=path/to/forge; needs blender and python3-numpy)
set -euo pipefail
cd "$(dirname "$0")/.."
FORGE="${FORGE:-target/release/forge}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$FORGE" simulate murmuration --steps 600 -o "$work/m.bfs" -q
"$FORGE" export "$work/m.bfs" -o "$work/m.glb" --frames 590..601 --every 10 -q
# No positions to check here (tests/gltf.rs does): the world's size and the render's.
# Dark birds (no light of their own) against a dusk sky, about three units across.
cat > "$work/e.json" <<'JSON'
{"frames": {}, "world": [1920, 1080], "size": [1280, 720], "render_frame": 600,
 "radius": 1.6, "colour": [0.0, 0.0, 0.0], "background": [0.55, 0.32, 0.22]}
JSON
blender -b --factory-startup -P scripts/blender-check.py -- "$work/m.glb" "$work/e.json" \
    "$work/blender.png" | grep '^blender-check'
ffmpeg -v error -y -i "$work/blender.png" -q:v 3 docs/src/images/blender-murmuration.jpg
echo "docs/src/images/blender-murmuration.jpg: murmuration, frame 600, rendered by Blender"
