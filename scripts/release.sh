#!/usr/bin/env bash
# A release archive of forge for one target: the release binary (stripped), LICENSE, README.md,
# shell completions and man pages, packed as OUTDIR/forge-VERSION-TARGET.tar.gz with its
# checksum beside it (forge-VERSION-TARGET.tar.gz.sha256, for `sha256sum -c`). What
# .github/workflows/release.yml runs on each target's own runner.
#
#   scripts/release.sh TARGET OUTDIR                # cargo build --release --locked, then pack
#   scripts/release.sh --pack BINARY TARGET OUTDIR  # pack a binary already built
#
# TARGET is a Rust target triple (x86_64-unknown-linux-gnu, aarch64-unknown-linux-gnu). The
# binary must run here: its completions and man pages come from it, and it is asked for its
# version. VERSION is the package's version in Cargo.toml; with TAG set (the workflow's tag,
# v0.1.0), a tag that is not vVERSION is an error. The archive is the same bytes for the same
# binary: sorted names, owner 0, the modification time of the last commit.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    echo "usage: scripts/release.sh TARGET OUTDIR | scripts/release.sh --pack BINARY TARGET OUTDIR" >&2
    exit 2
}

binary=
if [ "${1:-}" = --pack ]; then
    [ $# -eq 4 ] || usage
    binary=$2
    shift 2
fi
[ $# -eq 2 ] || usage
target=$1
outdir=$2
case $target in
    *-*-*) ;;
    *)
        echo "error: TARGET: $target is not a target triple (x86_64-unknown-linux-gnu, ...)" >&2
        exit 2
        ;;
esac

# The [package] version: the first `version = "..."` line of Cargo.toml.
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
if [ -z "$version" ]; then
    echo "error: Cargo.toml: no version line" >&2
    exit 1
fi
if [ -n "${TAG:-}" ] && [ "$TAG" != "v$version" ]; then
    echo "error: TAG: $TAG is not v$version, the version in Cargo.toml" >&2
    exit 1
fi

if [ -z "$binary" ]; then
    host=$(rustc -vV | sed -n 's/^host: //p')
    dir=${CARGO_TARGET_DIR:-target}
    if [ "$target" = "$host" ]; then
        # The host's own build folder (target/release), where `cargo build --release` puts it.
        cargo build --release --locked --package forge-flocks --bin forge
        binary=$dir/release/forge
    else
        cargo build --release --locked --package forge-flocks --bin forge --target "$target"
        binary=$dir/$target/release/forge
    fi
fi
if [ ! -f "$binary" ] || [ ! -x "$binary" ]; then
    echo "error: BINARY: $binary is not an executable file" >&2
    exit 1
fi

if ! line=$(XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp} "$binary" --version 2>&1); then
    echo "error: $binary does not run here: $line" >&2
    exit 1
fi
case $line in
    "forge $version"*) ;;
    *)
        echo "error: $binary says \"$line\", not forge $version" >&2
        exit 1
        ;;
esac

name=forge-$version-$target
mkdir -p "$outdir"
stage=$(mktemp -d "$outdir/.stage.XXXXXX")
trap 'rm -rf "$stage"' EXIT
root=$stage/$name
mkdir -p "$root/completions" "$root/man"

# The binary without its debug information (the release profile keeps line tables).
cp "$binary" "$root/forge"
chmod 0755 "$root/forge"
strip "$root/forge"
forge=$root/forge

cp LICENSE README.md "$root/"
"$forge" completions bash >"$root/completions/forge.bash"
"$forge" completions zsh >"$root/completions/_forge"
"$forge" completions fish >"$root/completions/forge.fish"
"$forge" completions powershell >"$root/completions/_forge.ps1"
"$forge" completions elvish >"$root/completions/forge.elv"
"$forge" man >"$root/man/forge.1"
# One page per command, named from the binary's own list (help has none).
commands=$("$forge" --help | sed -n '/^Commands:$/,/^$/s/^  \([a-z][a-z0-9-]*\) .*/\1/p')
for c in $commands; do
    [ "$c" = help ] && continue
    "$forge" man "$c" >"$root/man/forge-$c.1"
done

epoch=$(git log -1 --format=%ct 2>/dev/null || echo 0)
tarball=$name.tar.gz
tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" \
    -cf - "$name" | gzip -9n >"$stage/$tarball"
(cd "$stage" && sha256sum "$tarball" >"$tarball.sha256")
mv -f "$stage/$tarball" "$stage/$tarball.sha256" "$outdir/"
(cd "$outdir" && sha256sum -c --quiet "$tarball.sha256")
echo "$outdir/$tarball"
