"""The wheel stands alone: installed into a fresh venv whose PATH holds no cargo or rustc, it
runs the README's Python example. ``scripts/py-test.sh`` builds the wheel and names it in
``FORGE_WHEEL``; without it (pytest run by hand) this test is skipped."""

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from test_readme import ROOT, FENCE

WHEEL = os.environ.get("FORGE_WHEEL")


def readme_example() -> str:
    text = (ROOT / "README.md").read_text()
    code = [m.group(2) for m in FENCE.finditer(text) if "forge_flocks" in m.group(2)]
    assert code, "the README has a Python example"
    return code[0]


def path_without_rust() -> str:
    """This PATH with every folder holding cargo or rustc left out."""
    keep = [
        d
        for d in os.environ.get("PATH", "").split(os.pathsep)
        if d and not any(os.path.exists(os.path.join(d, t)) for t in ("cargo", "rustc", "rustup"))
    ]
    return os.pathsep.join(keep)


@pytest.mark.skipif(not WHEEL, reason="FORGE_WHEEL names no wheel (scripts/py-test.sh sets it)")
def test_the_wheel_installs_and_runs_without_rust(tmp_path):
    wheel = Path(WHEEL)
    assert wheel.is_file(), wheel
    # An abi3 wheel for manylinux: one file serves every CPython from 3.9.
    assert "-abi3-" in wheel.name and "linux" in wheel.name, wheel.name
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    path = os.pathsep.join([str(env_dir / "bin"), path_without_rust()])
    env = dict(os.environ, PATH=path, XDG_RUNTIME_DIR=os.environ.get("XDG_RUNTIME_DIR", "/tmp"))
    for var in ("CARGO", "RUSTC", "CARGO_HOME", "RUSTUP_HOME", "VIRTUAL_ENV", "PYTHONPATH"):
        env.pop(var, None)
    for tool in ("cargo", "rustc"):
        assert shutil.which(tool, path=path) is None, f"{tool} is still on the PATH"
    # uv (the suite's venv has it) installs from its cache in seconds; pip otherwise.
    uv = shutil.which("uv", path=os.path.dirname(sys.executable))
    if uv:
        cmd = [uv, "pip", "install", "-q", "--python", str(py), str(wheel)]
    else:
        cmd = [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    work = tmp_path / "work"
    work.mkdir()
    example = readme_example()
    r = subprocess.run(
        [str(py), "-c", example], cwd=work, env=env, capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, f"the README's example failed:\n{r.stdout}\n{r.stderr}"
    assert (work / "run.bfs").is_file(), "the example records run.bfs"
    # The package came from the fresh venv, not from the source tree.
    r = subprocess.run(
        [str(py), "-c", "import forge_flocks, sys; print(forge_flocks.__file__)"],
        cwd=work, env=env, capture_output=True, text=True,
    )
    assert r.returncode == 0 and str(env_dir) in r.stdout, r.stdout + r.stderr
