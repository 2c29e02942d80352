#!/usr/bin/env bash
# The CUDA backend and the renderer on a machine with an NVIDIA GPU, in about four minutes, from
# a built binary (no cargo needed): FORGE=path, else target/release/forge (built with cargo
# where cargo exists). NVRTC comes from the system, else from PyPI (scripts/nvrtc.sh).
#
#  1. identity: CPU and CUDA recordings are the same bytes (cmp) for every built-in scene the
#     kernels run (any other must be refused, naming why), at their own size and N = 1000 with
#     both searches, N = 1 and 2, 100k, a frame every 3rd step, and 1M;
#  2. speed: the whole `forge simulate` command, ms/step as (T(long) − T(short)) / (steps
#     between), so start-up does not count, beside FORGE_BEFORE (another build) if set; then
#     `forge bench --only cuda` (ms/step, the solver alone and recording, 1M and 10M agents);
#  3. renderer (FFmpeg from FORGE_FFMPEG or PATH): 1M agents at 4K, frames/s and each pass's
#     time with the crowd count (stacking) on and off, and one 4K still.
#
# Prints one Markdown table at the end (the guide's performance page quotes it); with
# GPU_CHECK_OUT=DIR the table and each section's log are written there as they are made.
# Exit status 1 when a recording differs or a run fails.
# Usage: [FORGE=path] [FORGE_BEFORE=path] [GPU_CHECK_OUT=dir] scripts/gpu-check.sh [--no-render]
set -uo pipefail
cd "$(dirname "$0")/.."
RENDER=1
[ "${1:-}" = "--no-render" ] && RENDER=0
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
LOG="${GPU_CHECK_OUT:-$TMP}"
mkdir -p "$LOG"
T0=$(date +%s)

if [ -z "${FORGE:-}" ]; then
    FORGE=target/release/forge
    if command -v cargo >/dev/null; then
        cargo build --release --locked 2>/dev/null || cargo build --release || exit 1
    fi
fi
[ -x "$FORGE" ] || { echo "FAIL: no forge binary at $FORGE (set FORGE=path)" >&2; exit 1; }
if ! python3 -c 'import ctypes; ctypes.CDLL("libnvrtc.so.13")' >/dev/null 2>&1; then
    . scripts/nvrtc.sh
fi
export XDG_CACHE_HOME="${XDG_CACHE_HOME:-$TMP/cache}"
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
CORES=$(nproc)

# The backend must come up, or nothing below means anything.
if ! "$FORGE" simulate cuplan --steps 1 --backend cuda -q -o "$TMP/probe.bfs"; then
    echo "FAIL: the CUDA backend did not start (see the message above)" >&2
    exit 1
fi

# A built-in scene at N agents at its own density, no warm-up, a frame every K steps: a scene
# file both builds read (FORGE_BEFORE may not know --every).
scene_at() { # name agents every out.json
    python3 - "$@" <<'EOF'
import json, subprocess, sys, os
name, n, every, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
if name == "flame3d":
    side = n ** (1 / 3)
    s = {"name": "flame3d", "model": "boids", "dim": 3, "agents": n, "seed": 1,
         "world": {"size": [side] * 3, "boundary": "wrap"},
         "boids": {"r_sep": 2, "r_ali": 2, "r_coh": 2, "w_sep": 10, "w_ali": 1.6, "w_coh": 0.6,
                   "max_force": 13, "v_min": 3.5, "v_max": 8}}
else:
    s = json.load(open(os.path.join("scenes", name + ".json")))
    g = (n / s["agents"]) ** (1 / s.get("dim", 2))
    s["world"]["size"] = [w * g for w in s["world"]["size"]]
    s["agents"] = n
s["warmup"] = 0
s["record_every"] = every
json.dump(s, open(out, "w"))
EOF
}

# ---- 1. identity -------------------------------------------------------------------------
ROWS=()
FAILS=0
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
same() { # label, searches, forge simulate args...
    local label="$1" searches="$2"; shift 2
    for search in $searches; do
        local t0 t1 t2 res
        t0=$(date +%s.%N)
        "$FORGE" simulate "$@" --search "$search" --backend cpu -q --force -o "$TMP/cpu.bfs" 2>>"$LOG/identity.log" || { ROWS+=("$label|$search|cpu failed|"); FAILS=$((FAILS+1)); continue; }
        t1=$(date +%s.%N)
        "$FORGE" simulate "$@" --search "$search" --backend cuda -q --force -o "$TMP/cuda.bfs" 2>>"$LOG/identity.log" || { ROWS+=("$label|$search|cuda failed|"); FAILS=$((FAILS+1)); continue; }
        t2=$(date +%s.%N)
        if cmp -s "$TMP/cpu.bfs" "$TMP/cuda.bfs"; then res=identical; else res=DIFFER; FAILS=$((FAILS+1)); fi
        ROWS+=("$label|$search|$res|$(secs "$t0" "$t1") s / $(secs "$t1" "$t2") s")
        echo "$label $search $res" >>"$LOG/identity.log"
    done
}
for scene in $("$FORGE" scenes 2>/dev/null | awk '{print $1}' | grep -E '^[a-z0-9-]+$'); do
    if ! "$FORGE" simulate "$scene" --steps 1 --backend cuda -q --force -o "$TMP/refused.bfs" 2>"$TMP/refused.txt"; then
        if grep -q "run on the CPU only" "$TMP/refused.txt"; then
            ROWS+=("$scene|-|refused (CPU only)|$(sed -n 's/.*--backend cuda: \(.*\) run on the CPU only.*/\1/p' "$TMP/refused.txt" | head -1)")
        else
            ROWS+=("$scene|-|cuda failed|$(head -c 200 "$TMP/refused.txt")"); FAILS=$((FAILS+1))
        fi
        continue
    fi
    same "$scene" grid "$scene" --steps 30
    same "$scene N=1000" "brute grid" "$scene" --steps 30 --agents 1000
done
for n in 1 2; do
    for scene in cuplan vicsek shoal3d murmuration obstacles; do
        same "$scene N=$n" "brute grid" "$scene" --steps 30 --agents "$n"
    done
done
same "vicsek-bands every 3rd" grid vicsek-bands --steps 30 --every 3
same "turbulence N=100000" grid turbulence --steps 30 --agents 100000
same "vicsek N=100000" grid vicsek --steps 30 --agents 100000
same "murmuration N=100000" grid murmuration --steps 30 --agents 100000
same "murmuration-falcon N=100000" grid murmuration-falcon --steps 30 --agents 100000
same "obstacles N=100000" grid obstacles --steps 30 --agents 100000
# Timelines on species: the falcons come and go, the starlings' (largest species') v_max is
# keyed; one of two-flocks' flocks leaves and comes back.
python3 - "$TMP" <<'PY'
import json, os, sys
keys = {
    "murmuration-falcon": [
        {"step": 5, "add": ["species[1]"]},
        {"step": 12, "set": {"species[0].boids.v_max": 120, "species[0].boids.w_ali": 6}},
        {"step": 20, "remove": ["species[1]"]},
    ],
    "two-flocks": [{"step": 4, "remove": ["species[0]"]}, {"step": 18, "add": ["species[0]"]}],
}
for name, timeline in keys.items():
    s = json.load(open(os.path.join("scenes", name + ".json")))
    s["warmup"] = 0
    s["timeline"] = timeline
    json.dump(s, open(os.path.join(sys.argv[1], name + "-keys.json"), "w"))
PY
same "murmuration-falcon, falcons in and out" "brute grid" "$TMP/murmuration-falcon-keys.json" --steps 30 --agents 3000
same "two-flocks, a flock out and back" "brute grid" "$TMP/two-flocks-keys.json" --steps 30 --agents 3000
scene_at turbulence 1000000 1 "$TMP/t1m.json"
same "turbulence N=1M" grid "$TMP/t1m.json" --steps 10
scene_at flame3d 1000000 5 "$TMP/f1m.json"
same "flame3d N=1M" grid "$TMP/f1m.json" --steps 10
IDENTITY_S=$(( $(date +%s) - T0 ))

# ---- 2. speed ----------------------------------------------------------------------------

wall() { # command...: seconds, or "failed"
    local t0 t1
    t0=$(date +%s.%N)
    "$@" >/dev/null 2>>"$LOG/speed.log" || { echo failed; return; }
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }'
}
per_step() { # binary scene.json short long reps: ms/step of the whole command, best of reps
    local best=""
    for _ in $(seq "$5"); do
        local a b
        a=$(wall "$1" simulate "$2" --steps "$3" --backend cuda -q --force -o /dev/null)
        b=$(wall "$1" simulate "$2" --steps "$4" --backend cuda -q --force -o /dev/null)
        [ "$a" = failed ] || [ "$b" = failed ] && { echo failed; return; }
        best=$(awk -v a="$a" -v b="$b" -v s="$3" -v l="$4" -v best="$best" \
            'BEGIN { m = (b - a) * 1000 / (l - s); if (best == "" || m < best) best = m; printf "%.2f", best }')
    done
    echo "$best"
}
SPEED=()
speed() { # label name agents every short long
    local f="$TMP/speed.json" new old="-"
    scene_at "$2" "$3" "$4" "$f"
    new=$(per_step "$FORGE" "$f" "$5" "$6" 2)
    if [ -n "${FORGE_BEFORE:-}" ]; then old=$(per_step "$FORGE_BEFORE" "$f" "$5" "$6" 1); fi
    SPEED+=("$1|$old|$new")
    echo "$1: before $old, now $new ms/step" >>"$LOG/speed.log"
}
# Steps 20..1020 (10M: 4..104): about a second of stepping, well above start-up's jitter. A
# flock clumps as it goes, so only rows over the same steps compare.
speed "turbulence 1M, every step → /dev/null" turbulence 1000000 1 20 1020
speed "turbulence 1M, every 10th → /dev/null" turbulence 1000000 10 20 1020
speed "turbulence 1M, first and last frame" turbulence 1000000 1000 20 1020
speed "flame3d 1M, every 10th → /dev/null" flame3d 1000000 10 20 1020
speed "vicsek 1M, every step → /dev/null" vicsek 1000000 1 20 1020
speed "turbulence 10M, every step → /dev/null" turbulence 10000000 1 4 104
# After the whole commands: its every-step-to-a-file column leaves gigabytes for the kernel to
# write back, which slows whatever runs next.
"$FORGE" bench --only cuda --cuda-sizes 1000000,10000000 >"$LOG/bench-cuda.md" 2>&1 || FAILS=$((FAILS+1))
SPEED_S=$(( $(date +%s) - T0 - IDENTITY_S ))

# ---- 3. renderer -------------------------------------------------------------------------
RENDER_ROWS=()
if [ "$RENDER" = 1 ]; then
    "$FORGE" gpus >"$LOG/gpus.txt" 2>&1
    for stacking in 0.7 0; do
        python3 - "$stacking" "$TMP/r$stacking.json" <<'EOF'
import json, sys
st, out = float(sys.argv[1]), sys.argv[2]
s = json.load(open("scenes/turbulence.json"))
g = (1000000 / s["agents"]) ** 0.5
s["world"]["size"] = [w * g for w in s["world"]["size"]]
s.update(agents=1000000, warmup=0, steps=10, name="turbulence-1m")
s["render"]["stacking"] = st
json.dump(s, open(out, "w"))
EOF
        "$FORGE" simulate "$TMP/r$stacking.json" --backend cuda -q --force -o "$TMP/r$stacking.bfs" 2>>"$LOG/render.log"
    done
    # Each pass waited for on its own, 4K (crowd count on, then off), and the whole command.
    "$FORGE" bench render --only passes --passes-size 3840x2160 \
        --render-scenes "$TMP/r0.7.bfs,$TMP/r0.bfs" >"$LOG/bench-passes.md" 2>&1 || FAILS=$((FAILS+1))
    "$FORGE" bench render --only fps --render-sizes 3840x2160 --render-dims 2 \
        --render-agents 100000,1000000 >"$LOG/bench-fps.md" 2>&1 || FAILS=$((FAILS+1))
    t=$(wall "$FORGE" still "$TMP/r0.7.bfs" --4k --frame 10 -o "$TMP/still.png" --force)
    RENDER_ROWS+=("forge still --4k, frame 10 of a 1M-agent recording|$t s")
fi

# ---- the table ---------------------------------------------------------------------------
{
    echo "gpu-check on ${GPU:-an unnamed GPU}, $CORES cores, $(date -u +%Y-%m-%d), $("$FORGE" --version 2>/dev/null)"
    echo
    echo "| case | search | CPU = CUDA? | time CPU / CUDA |"
    echo "|---|---|---|---|"
    for r in "${ROWS[@]}"; do
        IFS='|' read -r a b c d <<<"$r"
        echo "| $a | $b | $c | $d |"
    done
    echo
    cat "$LOG/bench-cuda.md"
    echo "Whole \`forge simulate\` command, ms/step without start-up (now: best of 2):"
    echo
    echo "| run | ${FORGE_BEFORE:+before ($("$FORGE_BEFORE" --version 2>/dev/null)) |}now |"
    echo "|---|${FORGE_BEFORE:+---:|}---:|"
    for r in "${SPEED[@]}"; do
        IFS='|' read -r a b c <<<"$r"
        if [ -n "${FORGE_BEFORE:-}" ]; then echo "| $a | $b | $c |"; else echo "| $a | $c |"; fi
    done
    echo
    if [ "$RENDER" = 1 ]; then
        cat "$LOG/bench-passes.md" "$LOG/bench-fps.md"
        for r in "${RENDER_ROWS[@]}"; do echo "- ${r%%|*}: ${r##*|}"; done
        echo
    fi
    echo "identity ${IDENTITY_S} s, speed ${SPEED_S} s, all $(( $(date +%s) - T0 )) s"
    if [ "$FAILS" -ne 0 ]; then
        echo "FAIL: $FAILS case(s) differ or failed"
    else
        echo "OK: every case byte-identical"
    fi
} | tee "$LOG/table.md"
[ "$FAILS" -eq 0 ]
