#!/usr/bin/env bash
# The frames per second forge view shows in its window (docs/src/rendering.md, "Watching and tuning"):
# 1280x720, 2D, the schooling scene with trails and bloom, at 2000 and 100000 agents, each
# through `forge view FILE --bench-frames N` (N frames, one per window frame, as fast as the
# window goes; the rate printed). Without a display it starts Xvfb (apt-get install xvfb).
#
#   scripts/view-bench.sh              # both rows (a few minutes on 2 cores with lavapipe)
#   FRAMES=100 scripts/view-bench.sh   # frames timed per row [default: 200; 100k agents: a fifth]
#
# FORGE=path/to/forge to time another binary. Needs a Vulkan driver (a GPU or lavapipe).
set -euo pipefail
cd "$(dirname "$0")/.."
FORGE=$(readlink -f "${FORGE:-target/release/forge}")
[ -x "$FORGE" ] || { echo "no forge binary at $FORGE (cargo build --release)" >&2; exit 1; }
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
FRAMES=${FRAMES:-200}
work=$(mktemp -d /tmp/forge-view-bench.XXXXXX)
xvfb=
cleanup() {
    [ -n "$xvfb" ] && kill "$xvfb" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
cd "$work"

if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
    command -v Xvfb >/dev/null || { echo "no display and no Xvfb (apt-get install xvfb)" >&2; exit 1; }
    n=90
    while [ -e "/tmp/.X$n-lock" ] || [ -e "/tmp/.X11-unix/X$n" ]; do n=$((n + 1)); done
    Xvfb ":$n" -screen 0 1920x1200x24 -nolisten tcp -noreset >/dev/null 2>&1 &
    xvfb=$!
    export DISPLAY=":$n"
    for _ in $(seq 100); do [ -e "/tmp/.X11-unix/X$n" ] && break; sleep 0.1; done
fi

echo "forge view, 1280x720, 2D schooling, trails 0.8, bloom 0.4; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for agents in 2000 100000; do
    frames=$FRAMES
    [ "$agents" -gt 10000 ] && frames=$(( (FRAMES + 4) / 5 ))
    "$FORGE" simulate schooling --agents "$agents" --steps "$frames" -o run.bfs -q --force
    "$FORGE" view run.bfs --size 1280x720 --trails 0.8 --bloom 0.4 --bench-frames "$frames"
done
