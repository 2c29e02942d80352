#!/usr/bin/env bash
# On a machine with an NVIDIA GPU (driver installed), in a few minutes: builds forge, checks that
# CPU and CUDA recordings are byte-identical (cmp) on every built-in scene and for N = 1, 2,
# 1000, 100k, with both neighbour searches, times both backends, and prints a short table last.
# NVRTC comes from PyPI if it is not installed (pip install nvidia-cuda-nvrtc).
# Usage: scripts/gpu-check.sh [STEPS]   (default 30)
set -uo pipefail
cd "$(dirname "$0")/.."
STEPS="${1:-30}"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT

if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "warning: nvidia-smi not found; continuing (forge reports what is missing)" >&2
else
    nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader || true
fi
if ! python3 -c 'import ctypes; ctypes.CDLL("libnvrtc.so.13")' >/dev/null 2>&1; then
    . scripts/nvrtc.sh
fi
export XDG_CACHE_HOME="${XDG_CACHE_HOME:-$OUT/cache}"

cargo build --release --locked 2>/dev/null || cargo build --release || exit 1
FORGE=target/release/forge

# The backend must come up, or nothing below means anything.
if ! "$FORGE" simulate cuplan --steps 1 --backend cuda -q -o "$OUT/probe.bfs"; then
    echo "FAIL: the CUDA backend did not start (see the message above)" >&2
    exit 1
fi

ROWS=()
FAILS=0
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
run() { # label, searches ("grid" or "brute grid"), forge simulate args...
    local label="$1" searches="$2"; shift 2
    for search in $searches; do
        local t0 t1 t2 res
        t0=$(date +%s.%N)
        "$FORGE" simulate "$@" --search "$search" --backend cpu -q --force -o "$OUT/cpu.bfs" || { ROWS+=("$label|$search|cpu failed|"); FAILS=$((FAILS+1)); continue; }
        t1=$(date +%s.%N)
        "$FORGE" simulate "$@" --search "$search" --backend cuda -q --force -o "$OUT/cuda.bfs" || { ROWS+=("$label|$search|cuda failed|"); FAILS=$((FAILS+1)); continue; }
        t2=$(date +%s.%N)
        if cmp -s "$OUT/cpu.bfs" "$OUT/cuda.bfs"; then res=identical; else res=DIFFER; FAILS=$((FAILS+1)); fi
        ROWS+=("$label|$search|$res|$(secs "$t0" "$t1") s / $(secs "$t1" "$t2") s")
    done
}

for scene in $("$FORGE" scenes 2>/dev/null | awk '{print $1}' | grep -E '^[a-z0-9-]+$'); do
    # Topological neighbours run on the CPU only: CUDA must refuse such a scene, naming why.
    if "$FORGE" simulate "$scene" --steps 1 --backend cuda -q --force -o "$OUT/refused.bfs" 2>"$OUT/refused.txt"; then :
    elif grep -q "topological neighbours" "$OUT/refused.txt"; then
        ROWS+=("$scene|-|refused (CPU only)|"); continue
    fi
    run "$scene" grid "$scene" --steps "$STEPS"
    run "$scene N=1000" "brute grid" "$scene" --steps "$STEPS" --agents 1000
done
for n in 1 2 1000; do
    run "cuplan N=$n" "brute grid" cuplan --steps "$STEPS" --agents "$n"
    run "vicsek N=$n" "brute grid" vicsek --steps "$STEPS" --agents "$n"
done
# Brute force on 100k agents is 10^10 pairs a step: grid only. (cuplan at 100k is too dense for
# the CPU to finish in time: turbulence instead; murmuration's topological neighbours are
# CPU only.)
run "turbulence N=100000" grid turbulence --steps "$STEPS" --agents 100000
run "vicsek N=100000" grid vicsek --steps "$STEPS" --agents 100000

# Benchmark: a longer run, written to /dev/null.
bench() { # backend
    local t0 t1
    t0=$(date +%s.%N)
    "$FORGE" simulate turbulence --agents 100000 --steps 100 --backend "$1" -q --force -o /dev/null || return 1
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", 100 / (b - a) }'
}
BCPU=$(bench cpu || echo failed)
BCUDA=$(bench cuda || echo failed)

echo
printf '%-22s %-6s %-10s %s\n' "case" "search" "cpu=cuda?" "time cpu / cuda"
for r in "${ROWS[@]}"; do
    IFS='|' read -r a b c d <<<"$r"
    printf '%-22s %-6s %-10s %s\n' "$a" "$b" "$c" "$d"
done
echo "benchmark turbulence N=100k, 100 steps (with start-up): cpu $BCPU steps/s, cuda $BCUDA steps/s"
if [ "$FAILS" -ne 0 ]; then
    echo "FAIL: $FAILS case(s) differ or failed"
    exit 1
fi
echo "OK: every case byte-identical"
