#!/bin/bash
# The install step of the reusable action (action.yml): forge from a release of the action's own
# repository, for the runner's architecture, its checksum verified, into DEST. Which release:
# the action's ref when it is a version tag (uses: OWNER/forge@v0.1.0), else (a branch) the
# latest one; a ref that is a commit hash is built from its source.
# Where there is none (no release yet, a local `uses: ./`, no `gh`), it installs nothing and
# says so: the action then builds forge from its source with cargo.
#
# Settings (environment):
#   DEST          the folder to put forge in (required)
#   ARCH          the runner's architecture: X64 or ARM64 (runner.arch), or x86_64, aarch64
#   ACTION_PATH   the action's folder (default: GITHUB_ACTION_PATH): the runner unpacks a remote
#                 action to .../_actions/OWNER/REPO/REF, which names the repository and ref
#   GH_TOKEN      a token for `gh release download` (github.token)
#   GITHUB_OUTPUT where `installed=true` or `installed=false` is written, when set
#
# A download whose checksum does not match is an error (exit 1), never installed.
set -euo pipefail
: "${DEST:?DEST: the folder to install forge in}"

result() {
    if [ -n "${GITHUB_OUTPUT:-}" ]; then
        echo "installed=$1" >>"$GITHUB_OUTPUT"
    fi
}
build() {
    echo "forge: $1; building it from the action's source instead"
    result false
    exit 0
}

case ${ARCH:-$(uname -m)} in
    X64 | x86_64 | amd64) target=x86_64-unknown-linux-gnu ;;
    ARM64 | aarch64 | arm64) target=aarch64-unknown-linux-gnu ;;
    *) build "no released binary for the architecture ${ARCH:-$(uname -m)}" ;;
esac

# github.action_repository and github.action_ref are empty inside composite actions: read them
# from the folder the runner unpacked the action to.
path=${ACTION_PATH:-${GITHUB_ACTION_PATH:-}}
case $path in
    */_actions/*/*/*) ;;
    *) build "the action is not a released one (it runs from ${path:-an unknown folder})" ;;
esac
rest=${path#*/_actions/}
owner=${rest%%/*}
rest=${rest#*/}
repo=$owner/${rest%%/*}
ref=${rest#*/}
tag=
case $ref in
    v[0-9]*) tag=$ref ;;
esac
# A commit pinned by its hash is that source, which no release binary is said to be.
if [[ $ref =~ ^[0-9a-f]{40}$ ]]; then
    build "the action is pinned to commit $ref"
fi
command -v gh >/dev/null || build "gh (the GitHub CLI) is not installed on this runner"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# No tag: gh picks the latest release.
if ! gh release download ${tag:+"$tag"} --repo "$repo" --dir "$tmp" \
    --pattern "forge-*-$target.tar.gz" --pattern "forge-*-$target.tar.gz.sha256" >"$tmp/gh.log" 2>&1; then
    build "no release ${tag:-(latest)} of $repo with a forge for $target ($(tr '\n' ' ' <"$tmp/gh.log"))"
fi
shopt -s nullglob
tarballs=("$tmp"/forge-*-"$target".tar.gz)
if [ ${#tarballs[@]} -ne 1 ] || [ ! -f "${tarballs[0]}.sha256" ]; then
    build "release ${tag:-(latest)} of $repo has no one forge-*-$target.tar.gz with its .sha256"
fi
tarball=${tarballs[0]}
if ! (cd "$tmp" && sha256sum -c --strict "$(basename "$tarball").sha256"); then
    echo "error: $(basename "$tarball") from release ${tag:-(latest)} of $repo does not match its checksum" >&2
    exit 1
fi
name=$(basename "$tarball" .tar.gz)
tar -xzf "$tarball" -C "$tmp"
mkdir -p "$DEST"
install -m 0755 "$tmp/$name/forge" "$DEST/forge"
echo "forge: installed $name from release ${tag:-(latest)} of $repo: $(XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp} "$DEST/forge" --version)"
result true
