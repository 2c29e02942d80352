#!/usr/bin/env bash
# Sourced by test.sh and gpu-check.sh: NVRTC (CUDA's run-time compiler) from PyPI, its whole
# lib folder on LD_LIBRARY_PATH (it loads its builtins from there). Sets NVRTC_LIB, empty when
# NVRTC could not be had.
NVRTC_LIB=""
if command -v python3 >/dev/null 2>&1; then
    python3 -m pip install -q --disable-pip-version-check nvidia-cuda-nvrtc >/dev/null 2>&1 || true
    NVRTC_LIB="$(python3 -c '
import glob, os, site
for d in site.getsitepackages() + [site.getusersitepackages()]:
    hits = sorted(glob.glob(os.path.join(d, "nvidia", "**", "libnvrtc.so*"), recursive=True))
    if hits:
        print(os.path.dirname(hits[0])); break
' 2>/dev/null || true)"
fi
if [ -n "$NVRTC_LIB" ]; then
    export LD_LIBRARY_PATH="$NVRTC_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
