#!/usr/bin/env bash
# The figures of the guide's "Beyond one machine" (docs/src/scale-out.md) that are about cost, not identity (for
# identity: tests/scale_out.rs, scripts/slurm-check.sh):
#
#   scripts/scale-bench.sh concat       # a 1-minute 1080p film in 4 chunks, then its join timed
#   scripts/scale-bench.sh parts        # the join's cost per part: a small film in 4 and 32 chunks
#   scripts/scale-bench.sh turbulence   # the turbulence scene at 4K: what a chunk of 32 costs,
#                                       # and the model of a 32-node render built from it
#   scripts/scale-bench.sh              # all three (about 20 minutes on 2 cores)
#
# FORGE=path/to/forge to time another binary. Needs FFmpeg and a Vulkan driver (lavapipe).
set -euo pipefail
cd "$(dirname "$0")/.."
FORGE=$(readlink -f "${FORGE:-target/release/forge}")
[ -x "$FORGE" ] || { echo "no forge binary at $FORGE (cargo build --release)" >&2; exit 1; }
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
what=${1:-all}
work=$(mktemp -d /tmp/forge-scale.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"

# secs COMMAND...: the command's wall time in seconds (its output kept in $work/log).
secs() {
    local t0 t1
    t0=$(date +%s.%N)
    "$@" >>log 2>&1
    t1=$(date +%s.%N)
    printf '%.2f\n' "$(echo "$t1 - $t0" | bc)"
}
# median of the numbers given
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
frames() { ffprobe -v error -count_packets -select_streams v -show_entries stream=nb_read_packets -of csv=p=0 "$1"; }
mib() { echo "scale=1; $(stat -c %s "$@" | paste -sd+ | bc) / 1048576" | bc; }

if [ "$what" = all ] || [ "$what" = concat ]; then
    # 1800 frames = 60 s at 30 fps; few agents: the join's cost is the bytes, not the scene.
    "$FORGE" simulate murmuration --agents 300 --steps 1799 -o film.bfs -q
    r=0
    for i in 0 1 2 3; do
        r=$(echo "$r + $(secs "$FORGE" render film.bfs --1080p --chunk "$i/4" -o "part-$i.mp4" -q)" | bc)
    done
    t=()
    for _ in 1 2 3 4 5; do t+=("$(secs "$FORGE" concat part-*.mp4 -o film.mp4 --force -q)"); done
    echo "concat: 1-minute 1080p film, 4 chunks, $(frames film.mp4) frames, $(mib part-*.mp4) MiB:" \
        "forge concat $(median "${t[@]}") s (median of 5: ${t[*]}); rendering the chunks took ${r} s"
    rm -f film.bfs part-*.mp4 film.mp4
fi

if [ "$what" = all ] || [ "$what" = parts ]; then
    # The join's cost per part: the same minute at 320x180 in 4 and in 32 chunks.
    "$FORGE" simulate murmuration --agents 300 --steps 1799 -o film.bfs -q
    for n in 4 32; do
        mkdir "p$n"
        for i in $(seq 0 $((n - 1))); do
            "$FORGE" render film.bfs --size 320x180 --chunk "$i/$n" -o "p$n/part-$i.mp4" -q
        done
        t=()
        for _ in 1 2 3 4 5; do t+=("$(secs "$FORGE" concat "p$n"/part-*.mp4 -o film.mp4 --force -q)"); done
        echo "concat: 1800 frames at 320x180 in $n chunks ($(mib "p$n"/part-*.mp4) MiB):" \
            "$(median "${t[@]}") s (median of 5: ${t[*]})"
    done
    rm -rf film.bfs p4 p32 film.mp4
fi

if [ "$what" = all ] || [ "$what" = turbulence ]; then
    "$FORGE" simulate turbulence -o turb.bfs -q
    n=$(( $("$FORGE" info turb.bfs --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["frames"])') ))
    # Start-up: everything but the frames (GPU, FFmpeg, the look measured over the whole clip).
    one=$(secs "$FORGE" render turb.bfs --4k --frames 0..1 -o one.mp4 -q)
    # Chunk 0 of 32 has no frames before it, so no warm-up; chunk 16 warms its trails up.
    c0=$(secs "$FORGE" render turb.bfs --4k --chunk 0/32 -o c0.mp4 -q)
    c16=$(secs "$FORGE" render turb.bfs --4k --chunk 16/32 -o c16.mp4 -q)
    f0=$(frames c0.mp4)
    f16=$(frames c16.mp4)
    frame=$(printf '%.3f' "$(echo "scale=4; ($c0 - $one) / ($f0 - 1)" | bc)")
    warm=$(printf '%.2f' "$(echo "scale=4; $c16 - $c0 - ($f16 - $f0) * $frame" | bc)")
    whole=$(printf '%.0f' "$(echo "$one + $n * $frame" | bc)")
    echo "turbulence at 4K ($n frames, trails 0.9): start-up $one s (a 1-frame render);" \
        "chunk 0/32 $c0 s for $f0 frames -> $frame s a frame; chunk 16/32 $c16 s for $f16" \
        "frames, of which the trails' warm-up $warm s; chunk MP4 $(mib c16.mp4) MiB"
    echo "model: one machine $whole s; 32 nodes = the slowest chunk ($c16 s, warm-up included)" \
        "+ the join of 32 chunks (about $(echo "scale=0; 32 * $(mib c16.mp4)" | bc) MiB, stream" \
        "copy) + the scheduler's start-up per task"
fi
