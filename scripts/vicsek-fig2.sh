#!/usr/bin/env bash
# Reproduces Fig. 2 of Vicsek et al., PRL 75, 1226 (1995) with `forge sweep`:
#   (a) order parameter v_a against noise η for N = 40, 100, 400, 4000 at density ρ = 4
#       (L = 3.16, 5, 10, 31.6);
#   (b) v_a against density ρ at η = 2 in a box of side L = 20 (N = ρ·400, from 40 to 4000).
# Writes docs/src/images/vicsek-fig2a.{csv,png} and docs/src/images/vicsek-fig2b.{csv,png} and prints the wall times.
#
# The defaults are the paper's 2500 + 1500 steps with 2 seeds: about three minutes on two
# cores. More seeds: SEEDS=5 scripts/vicsek-fig2.sh
# Other knobs: OUT (folder, default docs/src/images), JOBS (default: all cores), FORGE (the binary).
set -euo pipefail
cd "$(dirname "$0")/.."

EQUILIBRATE="${EQUILIBRATE:-2500}"
MEASURE="${MEASURE:-1500}"
SEEDS="${SEEDS:-2}"
OUT="${OUT:-docs/src/images}"
JOBS_FLAG=()
if [[ -n "${JOBS:-}" ]]; then JOBS_FLAG=(--jobs "$JOBS"); fi

if [[ -z "${FORGE:-}" ]]; then
    cargo build --release --quiet
    FORGE=target/release/forge
fi
mkdir -p "$OUT"
common=(--seeds "$SEEDS" --equilibrate "$EQUILIBRATE" --measure "$MEASURE" --force "${JOBS_FLAG[@]}")

echo "Fig. 2a: v_a vs noise, N = 40, 100, 400, 4000 at density 4" >&2
t0=$(date +%s%N)
"$FORGE" sweep vicsek \
    --vary noise=0:5:0.25 --vary agents=40,100,400,4000 --vary density=4 \
    "${common[@]}" -o "$OUT/vicsek-fig2a.csv" --plot "$OUT/vicsek-fig2a.png"
t1=$(date +%s%N)

echo "Fig. 2b: v_a vs density at noise 2, L = 20" >&2
"$FORGE" sweep vicsek \
    --vary density=0.1,0.25,0.5,0.75,1,1.5,2,3,4,5,6,8,10 --vary world=20 --vary noise=2 \
    "${common[@]}" -o "$OUT/vicsek-fig2b.csv" --plot "$OUT/vicsek-fig2b.png"
t2=$(date +%s%N)

ms() { echo $(( ($2 - $1) / 1000000 )); }
echo "wall time: Fig. 2a $(ms "$t0" "$t1") ms, Fig. 2b $(ms "$t1" "$t2") ms" \
    "($EQUILIBRATE + $MEASURE steps, $SEEDS seeds)" >&2
