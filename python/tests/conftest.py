"""Shared fixtures: the real forge binary (the CLI the package must agree with) and small
recordings made by it."""

import json
import os
import struct
import subprocess
import sys
import textwrap
import time
import zlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def forge_bin() -> Path:
    p = os.environ.get("FORGE_BIN")
    if p:
        return Path(p)
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    if not target.is_absolute():
        target = ROOT / target
    return target / "release" / "forge"


FORGE = forge_bin()


def forge(*args, check=True, **kw):
    """Runs the real CLI; returns the CompletedProcess (text mode)."""
    env = dict(os.environ, XDG_RUNTIME_DIR=os.environ.get("XDG_RUNTIME_DIR", "/tmp"))
    r = subprocess.run([str(FORGE), *map(str, args)], capture_output=True, text=True, env=env, **kw)
    if check and r.returncode != 0:
        raise AssertionError(f"forge {' '.join(map(str, args))} failed ({r.returncode}):\n{r.stderr}")
    return r


@pytest.fixture(scope="session", autouse=True)
def _forge_present():
    if not FORGE.is_file():
        pytest.fail(f"the forge binary is missing at {FORGE} (cargo build --release, or set FORGE_BIN)")


SMALL = {
    "name": "small",
    "model": "boids",
    "dim": 2,
    "agents": 1500,
    "steps": 40,
    "warmup": 5,
    "dt": 0.05,
    "seed": 3,
    "world": {"size": [400, 225], "boundary": "wrap"},
    "boids": {
        "r_sep": 9, "r_ali": 30, "r_coh": 30,
        "w_sep": 150, "w_ali": 2.2, "w_coh": 0.8,
        "max_force": 180, "v_min": 50, "v_max": 120,
    },
    "render": {"color": "speed", "trails": 0.0},
}


@pytest.fixture(scope="session")
def small_scene():
    return json.loads(json.dumps(SMALL))


@pytest.fixture(scope="session")
def small_file(tmp_path_factory):
    p = tmp_path_factory.mktemp("scene") / "small.json"
    p.write_text(json.dumps(SMALL, indent=2))
    return p


@pytest.fixture(scope="session")
def cli_recording(tmp_path_factory, small_file):
    """The CLI's recording of the small scene, seed 7, 20 steps."""
    out = tmp_path_factory.mktemp("cli") / "cli.bfs"
    forge("simulate", small_file, "--seed", 7, "--steps", 20, "-o", out, "-q", "--threads", 2)
    return out


def decode_png(data: bytes):
    """A minimal PNG decoder (8-bit RGB or RGBA, not interlaced) → (w, h, channels, rows)."""
    import numpy as np

    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    at, idat, w = 8, b"", None
    while at < len(data):
        (n,) = struct.unpack(">I", data[at:at + 4])
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + n]
        at += 12 + n
        if kind == b"IHDR":
            w, h, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and color in (2, 6) and interlace == 0, (depth, color, interlace)
            ch = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
    raw = zlib.decompress(idat)
    stride = w * ch
    out = np.zeros((h, stride), dtype=np.int32)
    prev = np.zeros(stride, dtype=np.int32)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = np.frombuffer(raw, dtype=np.uint8, count=stride, offset=y * (stride + 1) + 1).astype(np.int32)
        cur = np.zeros(stride, dtype=np.int32)
        for x in range(stride):
            a = cur[x - ch] if x >= ch else 0
            b = prev[x]
            c = prev[x - ch] if x >= ch else 0
            if f == 0:
                p = 0
            elif f == 1:
                p = a
            elif f == 2:
                p = b
            elif f == 3:
                p = (a + b) // 2
            else:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                p = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            cur[x] = (line[x] + p) & 0xFF
        out[y] = cur
        prev = cur
    return out.reshape(h, w, ch).astype(np.uint8)


PYTHON = sys.executable


def signal_when_ready(script, sig, after, timeout):
    """Runs `script` (dedented) in a fresh Python; once it prints "ready", waits `after` seconds
    and sends it `sig`. Returns its exit status (negative: the signal that ended it) and its
    standard output."""
    p = subprocess.Popen([PYTHON, "-c", textwrap.dedent(script)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    time.sleep(after)
    p.send_signal(sig)
    out, _ = p.communicate(timeout=timeout)
    return p.returncode, out
