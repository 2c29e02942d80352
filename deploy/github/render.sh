#!/bin/bash
# The render step of the reusable action (action.yml at the top of this repository), usable on
# its own: a scene (a built-in name such as murmuration, or a scene JSON file) is simulated and
# rendered with `forge run`; a recording (.bfs) is rendered with `forge render`.
#
#   SCENE=murmuration SIZE=720p OUTPUT=flock.mp4 ARGS="--agents 5000" deploy/github/render.sh
#
# Settings (environment):
#   FORGE   the forge command (default: forge)
#   SCENE   a built-in scene, a scene JSON file or a .bfs recording (required)
#   SIZE    WxH (1280x720), or 720p, 1080p, 4k (default: 1280x720)
#   OUTPUT  the MP4 to write, overwritten if it exists (default: flock.mp4)
#   ARGS    more forge flags, split as a shell splits words: quotes keep a value with spaces
#           whole (--title "My flock"); nothing is expanded or run (default: none)
set -euo pipefail
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
: "${SCENE:?SCENE: a built-in scene, a scene JSON file or a .bfs recording}"
read -r -a forge <<<"${FORGE:-forge}"
# xargs splits at blanks and honours quotes and backslashes, without expanding anything.
args=()
if [ -n "${ARGS:-}" ]; then
    split=$(mktemp)
    trap 'rm -f "$split"' EXIT
    if ! printf '%s' "$ARGS" | xargs -r printf '%s\0' >"$split" 2>/dev/null; then
        echo "error: ARGS (the action's args): an unmatched quote in: $ARGS" >&2
        exit 2
    fi
    mapfile -d '' args <"$split"
fi
case ${SIZE:=1280x720} in
    720p | 1080p) size=(--"$SIZE") ;;
    4k | 4K | 2160p) size=(--4k) ;;
    *) size=(--size "$SIZE") ;;
esac
case $SCENE in
    *.bfs) command=render ;;
    *) command=run ;;
esac
"${forge[@]}" "$command" "$SCENE" "${size[@]}" "${args[@]}" -o "${OUTPUT:-flock.mp4}" --force
