#!/usr/bin/env bash
# Scalar vs SIMD candidate loop, per model: each scene runs with FORGE_SIMD=off (scalar),
# avx2 (at most AVX2) and on (the best the CPU has), interleaved REPEATS times; the table gives
# median ms/step from forge's own summary line (the solver loop; one frame recorded at the end).
# The bytes are the same in every case (tests/determinism.rs).
#
#   scripts/simd-speedup.sh [STEPS] [THREADS]    # defaults: 300 steps, 1 thread
set -euo pipefail
steps=${1:-300}
threads=${2:-1}
repeats=${REPEATS:-3}
forge=${FORGE:-$(dirname "$0")/../target/release/forge}
[ -x "$forge" ] || { echo "no forge binary at $forge (cargo build --release, or set FORGE)" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# boids 2D: boidforge at its density, 20000 agents (world 1920x1080 x sqrt(10));
# boids 3D: the same radii, 20000 agents in a cube of matching density (forge bench's scene);
# Vicsek: the 1995 preset, 100000 particles at density 4 (L = 158.1), noise 2.
cat >"$dir/boids2d.json" <<EOF
{"preset": "boidforge", "agents": 20000, "steps": $steps, "record_every": $steps, "seed": 1,
 "world": {"size": [6071.6, 3415.3], "boundary": "wrap"}}
EOF
cat >"$dir/boids3d.json" <<EOF
{"preset": "boidforge", "dim": 3, "agents": 20000, "steps": $steps, "record_every": $steps,
 "seed": 1, "world": {"size": [861.8, 861.8, 861.8], "boundary": "wrap"}}
EOF
cat >"$dir/vicsek.json" <<EOF
{"preset": "vicsek1995", "agents": 100000, "steps": $steps, "record_every": $steps, "seed": 1,
 "world": {"size": [158.1, 158.1]}}
EOF
models="boids2d boids3d vicsek"
for r in $(seq "$repeats"); do
    for m in $models; do
        for simd in off avx2 on; do
            line=$(FORGE_SIMD=$simd "$forge" simulate "$dir/$m.json" -o "$dir/o.bfs" --force \
                --threads "$threads" 2>&1 | grep ' steps/s' | tail -1)
            sps=$(sed -E 's/.*: ([0-9.]+) steps\/s.*/\1/' <<<"$line")
            echo "$m $simd $(awk -v s="$sps" 'BEGIN { printf "%.4f", 1000 / s }')" >>"$dir/times"
        done
    done
done
median() { sort -n | awk '{ t[NR] = $1 } END { printf "%.3f", t[int((NR + 1) / 2)] }'; }
best=$(FORGE_SIMD=on "$forge" bench --only crossover --seconds 0 | sed -nE 's/.*cores, (.*) candidate loop.*/\1/p')
echo "$steps steps, $threads thread(s), median of $repeats; best loop on this CPU: $best"
echo
echo "| model | scalar ms/step | AVX2 ms/step | $best ms/step | AVX2 speed-up | $best speed-up |"
echo "|---|---:|---:|---:|---:|---:|"
for m in $models; do
    s=$(awk -v m="$m" '$1 == m && $2 == "off" { print $3 }' "$dir/times" | median)
    a=$(awk -v m="$m" '$1 == m && $2 == "avx2" { print $3 }' "$dir/times" | median)
    b=$(awk -v m="$m" '$1 == m && $2 == "on" { print $3 }' "$dir/times" | median)
    awk -v m="$m" -v s="$s" -v a="$a" -v b="$b" \
        'BEGIN { printf "| %s | %s | %s | %s | %.2fx | %.2fx |\n", m, s, a, b, s / a, s / b }'
done
