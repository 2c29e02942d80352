//! Puts the commit forge is built from into `forge --version` (`FORGE_VERSION`): "0.1.0
//! (commit 1a2b3c4d5e6f, 2026-12-01)", the last commit of the tree it is built from; without
//! git or outside a repository (a crate tarball), just the version.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8(out.stdout).ok()?.trim().to_string())
}

fn main() {
    let version = env!("CARGO_PKG_VERSION");
    let line = match git(&["log", "-1", "--format=%h %cs", "--abbrev=12"]) {
        Some(commit) if !commit.is_empty() => {
            let (hash, date) = commit.split_once(' ').unwrap_or((commit.as_str(), ""));
            format!("{version} (commit {hash}, {date})")
        }
        _ => version.to_string(),
    };
    println!("cargo:rustc-env=FORGE_VERSION={line}");
    // Rerun when HEAD moves (a commit, a checkout, a reset): git appends a line to HEAD's reflog
    // each time, so that one file is watched. Only a path that exists may be watched: cargo
    // takes a missing one for a change and would rerun this script, and rebuild the library,
    // on every build (a fresh clone has no packed-refs, say). Without a reflog, HEAD itself.
    let watched = ["logs/HEAD", "HEAD"]
        .into_iter()
        .filter_map(|p| git(&["rev-parse", "--git-path", p]))
        .find(|p| std::path::Path::new(p).is_file());
    if let Some(p) = watched {
        println!("cargo:rerun-if-changed={p}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
