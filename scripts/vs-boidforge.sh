#!/usr/bin/env bash
# The runs of BoidForge's benchmark, on forge alone (no BoidForge needed): the boidforge
# preset at BoidForge's default density (2000 agents in 1920x1080, the world grown with N),
# N = 500, 2000, 5000, 20000, the same seeded uniform start, STEPS steps, one frame recorded at
# the end (so the figure is the solver's). Prints ms/step per N as a Markdown table; run
# BoidForge's own benchmark beside it (docs/src/performance.md) to put the two side by side.
#
#   scripts/vs-boidforge.sh [STEPS] [THREADS]     # defaults: 2000 steps, all cores
#   FORGE_SIMD=off scripts/vs-boidforge.sh        # the scalar candidate loop (same bytes)
#   SIZES="2000 20000" REPEATS=5 scripts/vs-boidforge.sh 500 2
#
# Each N runs REPEATS times (default 3), interleaved with the other sizes so that a load
# drift hits every size alike; the table gives the median and the range.
#
# Then the replay runs (REPLAY=0 skips them): a 2000-agent recording of the same preset, 300
# steps (301 frames), rendered whole by `forge render` at 720p and 1080p with forge's defaults
# (x264 veryfast) and at 720p with `--preset medium` (BoidForge's encoder preset), each
# REPEATS times interleaved; wall seconds of the whole command, median and range, and frames/s.
# BoidForge is not installable here (no package in the registries this machine reaches), so
# its column holds the figures measured side by side with it on a machine like this one (its
# native C solver, its ModernGL replay on Mesa llvmpipe, its own 300-frame, 2000-agent
# recording; the medium row on 60 frames): a ratio against a quoted figure, not one run.
set -euo pipefail
steps=${1:-2000}
threads=${2:-0}
sizes=${SIZES:-500 2000 5000 20000}
repeats=${REPEATS:-3}
forge=${FORGE:-$(dirname "$0")/../target/release/forge}
[ -x "$forge" ] || { echo "no forge binary at $forge (cargo build --release, or set FORGE)" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

for n in $sizes; do
    # Same density as 2000 in 1920x1080: both sides grow by sqrt(N/2000).
    read -r w h < <(awk -v n="$n" 'BEGIN { f = sqrt(n / 2000); printf "%.4f %.4f\n", 1920 * f, 1080 * f }')
    cat >"$dir/bf$n.json" <<EOF
{"preset": "boidforge", "agents": $n, "steps": $steps, "record_every": $steps, "seed": 1,
 "world": {"size": [$w, $h], "boundary": "wrap"}}
EOF
done

for _ in $(seq "$repeats"); do
    for n in $sizes; do
        args=(simulate "$dir/bf$n.json" -o "$dir/out.bfs" --force)
        [ "$threads" = 0 ] || args+=(--threads "$threads")
        # The summary line: "... (2D, grid, T threads) in S s: X steps/s, ..."
        line=$("$forge" "${args[@]}" 2>&1 | grep ' steps/s' | tail -1)
        sps=$(sed -E 's/.*: ([0-9.]+) steps\/s.*/\1/' <<<"$line")
        used=$(sed -E 's/.*, ([0-9]+) threads?\).*/\1/' <<<"$line")
        echo "$n $used $(awk -v s="$sps" 'BEGIN { printf "%.4f", 1000 / s }')" >>"$dir/times"
    done
done

simd=${FORGE_SIMD:-auto}
echo "forge, boidforge preset at BoidForge's density, $steps steps, FORGE_SIMD=$simd, $repeats runs each"
echo
echo "| N | threads | ms/step (median) | min | max |"
echo "|---:|---:|---:|---:|---:|"
for n in $sizes; do
    awk -v n="$n" '$1 == n { print $3, $2 }' "$dir/times" | sort -n | awk '
        { t[NR] = $1; th = $2 }
        END { printf "%d|%s|%.4f|%.4f|%.4f\n", 0, th, t[int((NR + 1) / 2)], t[1], t[NR] }' |
        awk -F'|' -v n="$n" '{ printf "| %s | %s | %s | %s | %s |\n", n, $2, $3, $4, $5 }'
done

[ "${REPLAY:-1}" = 0 ] && exit 0
cat >"$dir/replay.json" <<EOF
{"preset": "boidforge", "agents": 2000, "steps": 300, "seed": 1}
EOF
"$forge" simulate "$dir/replay.json" -o "$dir/replay.bfs" --force -q
frames=301
# name|flags|BoidForge's frames/s (quoted: 300 frames in 54.4 s at 720p, 122.7 s at 1080p)
runs=("720p, defaults|--720p|5.5" "1080p, defaults|--1080p|2.45" "720p, --preset medium|--720p --preset medium|8.4")
for _ in $(seq "$repeats"); do
    for i in "${!runs[@]}"; do
        IFS='|' read -r _ flags _ <<<"${runs[$i]}"
        t0=$(date +%s.%N)
        # shellcheck disable=SC2086 # the flags are words
        "$forge" render "$dir/replay.bfs" $flags -o "$dir/replay.mp4" --force -q
        t1=$(date +%s.%N)
        echo "$i $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')" >>"$dir/replays"
    done
done
echo
echo "forge render of a 2000-agent, $frames-frame recording of the preset, whole command, $repeats runs each"
echo
echo "| render | s (median) | min | max | frames/s | BoidForge frames/s (quoted) | ratio to the quoted |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for i in "${!runs[@]}"; do
    IFS='|' read -r name _ theirs <<<"${runs[$i]}"
    awk -v i="$i" '$1 == i { print $2 }' "$dir/replays" | sort -n | awk -v name="$name" \
        -v f="$frames" -v theirs="$theirs" '
        { t[NR] = $1 }
        END {
            m = t[int((NR + 1) / 2)]
            printf "| %s | %.1f | %.1f | %.1f | %.1f | %s | %.2fx |\n", name, m, t[1], t[NR],
                f / m, theirs, f / m / theirs
        }'
done
