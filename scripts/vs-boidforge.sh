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

for r in $(seq "$repeats"); do
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
