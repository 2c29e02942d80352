#!/usr/bin/env bash
# The Python package (python/, forge-flocks): a venv under the target folder, maturin, pytest and
# NumPy from PyPI, the abi3 wheel built by maturin and installed, then its pytest suite against
# the real `forge` binary (built by `cargo test --release` / `cargo build --release`).
#
# The wheel is built into the same target folder with the same release profile, so every
# dependency `cargo build --release` compiled is reused (pyo3 and numpy are built once).
# The packages go in through uv (from PyPI, into the venv): on 2 cores it installs them in
# about 5 s where pip took 47 (pip byte-compiles every module of matplotlib, OVITO, usd-core
# as it installs; uv leaves that to the first import). Without uv, pip does it.
# Where PyPI is out of reach the suite is skipped with a warning, unless FORGE_REQUIRE_PYTHON=1;
# once the set-up has succeeded, a failure to build or a failing test fails the run.
# `py-test.sh --prepare` makes the venv and installs the packages, then stops: scripts/test.sh
# runs it while cargo's tests run (it mostly waits on the network), then runs this in full.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET="${CARGO_TARGET_DIR:-target}"
case "$TARGET" in /*) ;; *) TARGET="$PWD/$TARGET" ;; esac
VENV="$TARGET/py-venv"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"

skip() {
    if [ "${FORGE_REQUIRE_PYTHON:-0}" = 1 ]; then
        echo "error: $1 (FORGE_REQUIRE_PYTHON=1)" >&2
        exit 1
    fi
    echo "warning: $1: the Python package's tests are skipped" >&2
    exit 0
}

if ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    { DEBIAN_FRONTEND=noninteractive apt-get install -y python3-venv ||
        { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y python3-venv; }; } \
        >/dev/null 2>&1 || true
fi
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV" >/dev/null 2>&1 || { rm -rf "$VENV"; skip "python3 -m venv failed (apt-get install python3-venv)"; }
fi
"$VENV/bin/python" -m pip install -q --disable-pip-version-check uv >/dev/null 2>&1 || true
install() {
    if [ -x "$VENV/bin/uv" ]; then
        "$VENV/bin/uv" pip install -q --python "$VENV/bin/python" "$@"
    else
        "$VENV/bin/python" -m pip install -q --disable-pip-version-check "$@"
    fi
}
install 'maturin>=1.9,<2' pytest numpy >/dev/null 2>&1 ||
    skip "cannot install maturin, pytest and numpy (is PyPI reachable?)"
# The notebook test's kernel and plots; without them that one test is skipped, and says so.
install nbclient nbformat ipykernel matplotlib >/dev/null 2>&1 ||
    echo "warning: cannot install nbclient, ipykernel and matplotlib: the notebook test is skipped" >&2
# The tools a user opens `forge export -o run.xyz` and `-o run.usda` with (ASE, OVITO, OpenUSD's
# usd-core); the export tests fail without them.
install ase ovito usd-core >/dev/null 2>&1 ||
    echo "warning: cannot install ase, ovito and usd-core: the export tests will fail" >&2

if [ "${1-}" = --prepare ]; then
    exit 0
fi

rm -rf "$TARGET/wheels/forge_flocks-"*.whl
(cd python && "$VENV/bin/maturin" build --release --quiet --interpreter "$VENV/bin/python" \
    --out "$TARGET/wheels")
# uv and pip name the same thing differently.
if [ -x "$VENV/bin/uv" ]; then reinstall=--reinstall; else reinstall=--force-reinstall; fi
install "$reinstall" --no-deps "$TARGET/wheels/"forge_flocks-*.whl
# tests/test_wheel.py installs this very wheel into a fresh venv with no Rust on its PATH.
wheel="$(ls "$TARGET/wheels/"forge_flocks-*.whl | head -n 1)"
FORGE_WHEEL="$wheel" FORGE_BIN="$TARGET/release/forge" "$VENV/bin/python" -m pytest -q -rs python/tests "$@"
