"""The two figures of the guide's "Measuring a flock" page, made with forge itself:

- analyze-xi-vs-L.png: the correlation length ξ of an ordered Vicsek flock against its box side
  L at constant density: a straight line through the origin (Cavagna et al., PNAS 2010:
  scale-free correlations), its slope printed. Each size is simulated by ``forge_flocks.simulate``
  and measured by ``Recording.analyze`` (the code of ``forge analyze``).
- analyze-correlation.png: the largest of those flocks' C(r), g(r) and neighbour anisotropy, by
  ``forge analyze --plot``.
- analyze-binder.png: the Binder cumulant G = 1 − ⟨φ⁴⟩/(3⟨φ²⟩²) of vectorial-noise Vicsek
  against the noise for three sizes, ``forge sweep --plot-y binder`` (Chaté et al., PRE 2008).

Run from a clone, with the Python package and matplotlib installed (scripts/py-test.sh makes
such a venv): ``target/py-venv/bin/python scripts/analyze-figs.py`` (OUT=folder, default
docs/src/images; FORGE=the binary, default target/release/forge). About 3 minutes on 2 cores.
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import forge_flocks as ff  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(os.environ.get("OUT", ROOT / "docs/src/images"))
FORGE = os.environ.get("FORGE", str(ROOT / "target/release/forge"))

# Ordered Vicsek (angular noise 1.0, density 4, v0 = 0.5): sides L and the frames measured.
SIDES = [8, 12, 16, 24, 32]
DENSITY = 4.0
STEPS, EVERY, FIRST = 3000, 50, 20  # frames 20.. (steps 1000-3000) are measured


def xi_against_side(work: Path):
    rows = []
    for side in SIDES:
        n = int(round(DENSITY * side * side))
        scene = {
            "name": f"ordered-{side}",
            "preset": "vicsek1995",
            "agents": n,
            "steps": STEPS,
            "seed": 2010 + side,
            "record_every": EVERY,
            "world": {"size": [side, side], "boundary": "wrap"},
            "vicsek": {"v0": 0.5, "r": 1.0, "noise": 1.0},
            "init": {"layout": "uniform", "velocity": "aligned"},
        }
        out = work / f"ordered-{side}.bfs"
        ff.simulate(scene, out, force=True)
        a = ff.Recording(out).analyze(frames=(FIRST, None), bins=60)
        print(
            f"L = {side:3d}  N = {n:5d}  polarization {a['polarization']:.3f}  "
            f"ξ = {a['correlation_length']:.3f} ± {a['correlation_length_error']:.3f}",
            file=sys.stderr,
        )
        rows.append((side, a["correlation_length"], a["correlation_length_error"]))
    # The largest flock's C(r) and g(r), as `forge analyze --plot` draws them.
    subprocess.run(
        [FORGE, "analyze", str(out), "--frames", f"{FIRST}..", "--bins", "60", "--force",
         "--plot", str(OUT / "analyze-correlation.png")],
        check=True, stdout=subprocess.DEVNULL,
    )
    return np.array(rows)


def plot_xi(rows):
    side, xi, err = rows.T
    # Least squares through the origin, weighted by the error bars.
    w = 1.0 / np.maximum(err, 1e-9) ** 2
    slope = np.sum(w * side * xi) / np.sum(w * side * side)
    fig, ax = plt.subplots(figsize=(6.4, 4.6), dpi=120)
    ax.errorbar(side, xi, yerr=err, fmt="o", color="#1f77b4", capsize=3, label="forge analyze")
    ls = np.linspace(0, side.max() * 1.05, 50)
    ax.plot(ls, slope * ls, color="#d62728", label=f"ξ = {slope:.3f} L")
    ax.set_xlim(0, side.max() * 1.05)
    ax.set_ylim(0, max(xi.max(), slope * side.max()) * 1.15)
    ax.set_xlabel("box side L (density 4)")
    ax.set_ylabel("correlation length ξ (first zero of C(r))")
    ax.set_title("Ordered Vicsek flock: scale-free correlations")
    ax.legend(loc="upper left")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(OUT / "analyze-xi-vs-L.png")
    print(f"slope ξ/L = {slope:.4f}", file=sys.stderr)
    return slope


def binder(work: Path):
    """forge sweep over sizes x noise, plotted by forge itself (--plot-y binder)."""
    scene = work / "vectorial.json"
    scene.write_text(json.dumps({
        "name": "vectorial Vicsek",
        "preset": "vicsek1995",
        "agents": 1024,
        "seed": 2004,
        "world": {"size": [22.6, 22.6], "boundary": "wrap"},
        "vicsek": {"v0": 0.5, "r": 1.0, "noise": 0.6, "noise_kind": "vectorial"},
        "init": {"layout": "uniform"},
    }))
    subprocess.run(
        [
            FORGE, "sweep", str(scene),
            "--vary", "noise=0.58:0.66:0.01",
            "--vary", "agents=256,1024,4096",
            "--vary", "density=2",
            "--seeds", "3", "--equilibrate", "3000", "--measure", "3000",
            "-o", str(work / "binder.csv"), "-q", "--force",
            "--plot", str(OUT / "analyze-binder.png"), "--plot-y", "binder",
        ],
        check=True,
    )


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        rows = xi_against_side(work)
        plot_xi(rows)
        binder(work)
    json.dump({"sides": rows[:, 0].tolist(), "xi": rows[:, 1].tolist()}, sys.stderr)
    print(file=sys.stderr)


if __name__ == "__main__":
    main()
