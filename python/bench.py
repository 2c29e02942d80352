"""The Python package's overhead against the CLI, rerunnable:

    python python/bench.py [--forge target/release/forge] [--steps 200] [--big 1000000]
                           [--frames-only]

1. ms/step of the boidforge preset (BoidForge's density, world scaled with N; 2 threads) at
   N = 500 and N = 10 000: `forge simulate` (its own summary line: the stepping loop, timed by
   forge, one frame at the start and one at the end) against `Simulation.step(n)` (one call) and
   `Simulation.step()` called n times (the per-call overhead), same scene, same seed;
2. taking one frame of a 1M-agent recording (`Recording[k]`, verify=False and verify=True: read
   from the open file into arrays of its own) and summing its arrays, against `numpy.fromfile`
   of the same bytes (`--frames-only`: this part alone).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

# This folder holds the package's sources (without the native module): import the installed one.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != _here]
import forge_flocks as ff  # noqa: E402


def scene(n, steps):
    f = (n / 2000.0) ** 0.5
    return {
        "name": f"bench{n}", "preset": "boidforge", "dim": 2, "agents": n, "seed": 1,
        "steps": steps, "record_every": steps,
        "world": {"size": [1920.0 * f, 1080.0 * f], "boundary": "wrap"},
    }


def cli_ms(forge, sc, tmp):
    p = os.path.join(tmp, "s.json")
    with open(p, "w") as fh:
        json.dump(sc, fh)
    r = subprocess.run([forge, "simulate", p, "-o", os.path.join(tmp, "cli.bfs"), "--threads", "2", "--force"],
                       capture_output=True, text=True, check=True)
    m = re.search(r"in ([0-9.]+) s: ([0-9.]+) steps/s", r.stderr)
    return 1e3 / float(m.group(2))


def py_ms(sc, one_call):
    sim = ff.Simulation(sc, threads=2)
    steps = sc["steps"]
    t = time.perf_counter()
    if one_call:
        sim.step(steps)
    else:
        for _ in range(steps):
            sim.step()
    return (time.perf_counter() - t) * 1e3 / steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--forge", default=os.environ.get("FORGE_BIN", "target/release/forge"))
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--big", type=int, default=1_000_000)
    ap.add_argument("--frames-only", action="store_true", help="only part 2: taking a frame")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if not a.frames_only:
            steps_table(a, tmp)
        frames(a, tmp)


def steps_table(a, tmp):
    print("| N | forge simulate ms/step | Simulation.step(n) ms/step | step() x n ms/step | overhead step(n) | overhead step() |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n in (500, 10_000):
        sc = scene(n, a.steps)
        # Best of `repeat` for each, interleaved: the machine is shared.
        c, p1, pn = [], [], []
        for _ in range(a.repeat):
            c.append(cli_ms(a.forge, sc, tmp))
            p1.append(py_ms(sc, True))
            pn.append(py_ms(sc, False))
        c, p1, pn = min(c), min(p1), min(pn)
        print(f"| {n} | {c:.4f} | {p1:.4f} | {pn:.4f} | {100 * (p1 / c - 1):+.1f}% | {100 * (pn / c - 1):+.1f}% |")


def frames(a, tmp):
    big = os.path.join(tmp, "big.bfs")
    sc = scene(a.big, 2)
    sc["record_every"] = 1
    sc["init"] = {"layout": "uniform"}
    ff.simulate(sc, big, threads=2)
    rec = ff.Recording(big, verify=False)
    at, _, agents = rec._reader.locate(1, False)
    print(f"\n1 frame of {agents} agents ({8 * 2 * agents / 1e6:.0f} MB), best of 20:")
    for verify in (False, True):
        r = ff.Recording(big, verify=verify)
        r[0]
        best = min(_timed(lambda: r[1]) for _ in range(20))
        print(f"  Recording(verify={verify})[1]: {best * 1e3:.3f} ms")
    f = rec[1]
    best = min(_timed(lambda: (f.positions.sum(), f.velocities.sum())) for _ in range(5))
    print(f"  summing its positions and velocities: {best * 1e3:.3f} ms")
    best = min(_timed(lambda: np.fromfile(big, dtype="<f4", count=4 * agents, offset=at)) for _ in range(5))
    print(f"  numpy.fromfile of the same bytes (a copy): {best * 1e3:.3f} ms")


def _timed(f):
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


if __name__ == "__main__":
    sys.exit(main())
