#!/usr/bin/env bash
# Vectorial-noise Vicsek (Grégoire & Chaté, PRL 92, 025702, 2004) against the angular noise of
# Vicsek 1995, and the giant number fluctuations of ordered flocks (Toner & Tu; Chaté et al.,
# PRE 77, 046113, 2008). Writes, in OUT (default docs/src/images):
#   vicsek-noise-kinds.{csv,png}  forge sweep: v_a against η for both kinds (N = 400, ρ = 4);
#   gnf-ordered.{csv,png}         forge info --gnf: ΔN against <N> in an ordered flock
#                                 (vectorial η = 0.3; α ≈ 0.8);
#   gnf-disordered.{csv,png}      the same above the transition (vectorial η = 1; α ≈ 0.5).
# The two GNF recordings are the vicsek-bands box (256 x 64, ρ = 2, v0 = 0.5) run 2000 steps
# from an aligned start; frames 50.. (steps 1000-2000) are measured. About a minute on two
# cores. Knobs: OUT (folder), FORGE (the binary).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT="${OUT:-docs/src/images}"
if [[ -z "${FORGE:-}" ]]; then
    cargo build --release --quiet
    FORGE=target/release/forge
fi
mkdir -p "$OUT"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "v_a against noise, angular and vectorial, N = 400 at density 4" >&2
"$FORGE" sweep vicsek --vary noise_kind=angular,vectorial --vary noise=0:3:0.25 \
    --vary agents=400 --vary density=4 --seeds 2 --equilibrate 500 --measure 300 --force \
    -o "$OUT/vicsek-noise-kinds.csv" --plot "$OUT/vicsek-noise-kinds.png" -q

for state in ordered:0.3 disordered:1.0; do
    name="${state%%:*}"
    eta="${state##*:}"
    cat > "$work/$name.json" <<JSON
{
  "name": "gnf-$name",
  "preset": "vicsek1995",
  "agents": 32768,
  "steps": 2000,
  "seed": 2033,
  "record_every": 20,
  "world": { "size": [256, 64], "boundary": "wrap" },
  "vicsek": { "v0": 0.5, "r": 1.0, "noise": $eta, "noise_kind": "vectorial" },
  "init": { "layout": "uniform", "velocity": "aligned" }
}
JSON
    echo "GNF, $name (vectorial noise $eta)" >&2
    "$FORGE" simulate "$work/$name.json" -o "$work/$name.bfs" -q
    "$FORGE" info "$work/$name.bfs" --frames 50.. --force \
        --gnf-csv "$OUT/gnf-$name.csv" --gnf-plot "$OUT/gnf-$name.png" | grep -E '^(gnf|  polarization)'
done
