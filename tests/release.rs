//! The release: `scripts/release.sh --pack` (the packing half of what
//! .github/workflows/release.yml runs on each target) over the binary these tests drive, and
//! the action's install step (deploy/github/install.sh) over what it packs, served by a
//! stand-in `gh` (tests/deploy-support/gh).
//!
//! The tarball holds exactly the stripped binary, LICENSE, README.md, the completions and a man
//! page per command; its `.sha256` is checked by `sha256sum -c` and against our own SHA-256;
//! packing the same binary twice gives the same bytes; the packed binary runs. The install step
//! takes the release of a version tag, or the latest for a branch, refuses a tarball that does
//! not match its checksum, and installs nothing (so the action builds) where there is no release
//! or the action is pinned to a commit.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use crate::common;

use common::*;

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The target triple of the machine the tests run on (the binary is built for it).
fn host() -> &'static str {
    if cfg!(target_arch = "aarch64") {
        "aarch64-unknown-linux-gnu"
    } else {
        "x86_64-unknown-linux-gnu"
    }
}

/// (exit code, stdout, stderr) of `c`.
fn output(c: &mut Command) -> (Option<i32>, String, String) {
    let out = c.output().expect("runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `scripts/release.sh --pack BINARY TARGET OUTDIR`, with `env`.
fn pack(binary: &Path, out: &Path, env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    output(
        Command::new(repo().join("scripts/release.sh"))
            .arg("--pack")
            .arg(binary)
            .arg(host())
            .arg(out)
            .env("XDG_RUNTIME_DIR", std::env::temp_dir())
            .envs(env.iter().copied()),
    )
}

/// Packs the built binary into `out`; the tarball's path.
fn packed(out: &Path) -> PathBuf {
    let (code, stdout, stderr) = pack(&forge_bin(), out, &[]);
    assert_eq!(
        code,
        Some(0),
        "release.sh --pack failed:\n{stdout}\n{stderr}"
    );
    let tarball = out.join(format!("forge-{VERSION}-{}.tar.gz", host()));
    assert_eq!(stdout.trim(), tarball.display().to_string(), "{stderr}");
    tarball
}

fn sha256_hex(path: &Path) -> String {
    let digest = Sha256::digest(fs::read(path).unwrap());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn the_release_script_packs_the_built_binary_with_its_checksum() {
    let d = tmp();
    let out = d.path().join("dist");
    let tarball = packed(&out);
    let name = tarball.file_name().unwrap().to_str().unwrap().to_string();
    assert_eq!(
        listing(&out),
        vec![name.clone(), format!("{name}.sha256")],
        "OUTDIR holds the tarball and its checksum, no stage left behind"
    );

    // The checksum, by sha256sum -c in OUTDIR and by our own hash.
    let (code, stdout, stderr) = output(
        Command::new("sha256sum")
            .args(["-c", "--strict", &format!("{name}.sha256")])
            .current_dir(&out),
    );
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let sums = fs::read_to_string(out.join(format!("{name}.sha256"))).unwrap();
    assert_eq!(sums, format!("{}  {name}\n", sha256_hex(&tarball)));

    // Exactly the files a user needs, under one folder named like the tarball.
    let (code, list, stderr) = output(Command::new("tar").arg("-tzf").arg(&tarball));
    assert_eq!(code, Some(0), "{stderr}");
    let mut got: Vec<&str> = list.lines().collect();
    got.sort();
    let top = format!("forge-{VERSION}-{}", host());
    let help = succeeds(d.path(), &["--help"]).stdout;
    let mut want: Vec<String> = [
        "",
        "LICENSE",
        "README.md",
        "forge",
        "completions/",
        "completions/_forge",
        "completions/_forge.ps1",
        "completions/forge.bash",
        "completions/forge.elv",
        "completions/forge.fish",
        "man/",
        "man/forge.1",
    ]
    .iter()
    .map(|f| format!("{top}/{f}"))
    .collect();
    for c in help_commands(&help) {
        want.push(format!("{top}/man/forge-{c}.1"));
    }
    want.sort();
    assert_eq!(got, want);

    // Unpacked: the binary runs and says its version; it is stripped; the files are ours.
    let unpacked = d.path().join("unpacked");
    fs::create_dir(&unpacked).unwrap();
    let (code, _, stderr) = output(
        Command::new("tar")
            .arg("-xzf")
            .arg(&tarball)
            .arg("-C")
            .arg(&unpacked),
    );
    assert_eq!(code, Some(0), "{stderr}");
    let root = unpacked.join(&top);
    prints_our_version(&root.join("forge"));
    let built = fs::metadata(forge_bin()).unwrap().len();
    let shipped = fs::metadata(root.join("forge")).unwrap().len();
    assert!(
        shipped < built,
        "the packed binary ({shipped} B) is not stripped (built: {built} B)"
    );
    for f in ["LICENSE", "README.md"] {
        assert_eq!(
            fs::read(root.join(f)).unwrap(),
            fs::read(repo().join(f)).unwrap(),
            "{f}"
        );
    }
    let bash = fs::read_to_string(root.join("completions/forge.bash")).unwrap();
    assert!(
        bash.contains("complete ") && bash.contains("render"),
        "{bash}"
    );
    let man = fs::read_to_string(root.join("man/forge-render.1")).unwrap();
    assert!(man.contains(".TH forge-render 1"), "{man}");

    // The same binary packs to the same bytes.
    let again = packed(&d.path().join("again"));
    assert_eq!(fs::read(&again).unwrap(), fs::read(&tarball).unwrap());
}

#[test]
fn the_release_script_refuses_a_wrong_tag_a_missing_binary_and_bad_arguments() {
    let d = tmp();
    let out = d.path().join("dist");
    let (code, _, stderr) = pack(&forge_bin(), &out, &[("TAG", "v999.0.0")]);
    assert_eq!(code, Some(1), "{stderr}");
    has(
        &stderr,
        &format!("TAG: v999.0.0 is not v{VERSION}, the version in Cargo.toml"),
    );
    let (code, _, stderr) = pack(&d.path().join("no-such-forge"), &out, &[]);
    assert_eq!(code, Some(1), "{stderr}");
    has(&stderr, "no-such-forge is not an executable file");
    assert!(
        !out.exists() || listing(&out).is_empty(),
        "{:?}",
        listing(&out)
    );

    // A binary that is not this forge is not packed under this version.
    let fake = write(
        d.path(),
        "fake-forge",
        "#!/bin/sh\necho forge 0.0.0-other\n",
    );
    let (code, _, stderr) = output(Command::new("chmod").arg("+x").arg(&fake));
    assert_eq!(code, Some(0), "{stderr}");
    let (code, _, stderr) = pack(&fake, &out, &[]);
    assert_eq!(code, Some(1), "{stderr}");
    has(&stderr, &format!("not forge {VERSION}"));
    assert!(
        !out.exists() || listing(&out).is_empty(),
        "{:?}",
        listing(&out)
    );

    let script = repo().join("scripts/release.sh");
    for args in [&["x86_64-unknown-linux-gnu"][..], &["--pack", "forge", "x"]] {
        let (code, _, stderr) = output(Command::new(&script).args(args));
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        has(&stderr, "usage: scripts/release.sh");
    }
    let (code, _, stderr) = output(Command::new(&script).args(["linux", "dist"]));
    assert_eq!(code, Some(2), "{stderr}");
    has(&stderr, "TARGET: linux is not a target triple");
}

// ---------------------------------------------------------------------------------------
// The action's install step
// ---------------------------------------------------------------------------------------

/// A PATH on which `gh` is the stand-in.
fn path_with_gh(dir: &Path) -> String {
    let bin = dir.join("gh-bin");
    fs::create_dir_all(&bin).unwrap();
    let gh = bin.join("gh");
    if !gh.exists() {
        std::os::unix::fs::symlink(repo().join("tests/deploy-support/gh"), &gh).unwrap();
    }
    format!("{}:{}", bin.display(), std::env::var("PATH").unwrap())
}

struct Installed {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    /// What it wrote to GITHUB_OUTPUT.
    output: String,
    /// The stand-in gh's calls.
    calls: String,
}

/// deploy/github/install.sh as the action runs it from `action_path`, with the releases in
/// `releases` (a folder per tag, and `latest`), installing into `dir/bin`.
fn install(dir: &Path, action_path: &str, releases: &Path) -> Installed {
    let out = dir.join("github-output");
    let log = dir.join("gh.log");
    let _ = fs::remove_file(&out);
    let _ = fs::remove_file(&log);
    let (code, stdout, stderr) = output(
        Command::new(repo().join("deploy/github/install.sh"))
            .current_dir(dir)
            .env("PATH", path_with_gh(dir))
            .env("DEST", dir.join("bin"))
            .env(
                "ARCH",
                if host().starts_with("aarch64") {
                    "ARM64"
                } else {
                    "X64"
                },
            )
            .env("ACTION_PATH", action_path)
            .env("GITHUB_OUTPUT", &out)
            .env("FAKE_RELEASES", releases)
            .env("FAKE_GH_LOG", &log)
            .env("XDG_RUNTIME_DIR", std::env::temp_dir()),
    );
    Installed {
        code,
        stdout,
        stderr,
        output: fs::read_to_string(&out).unwrap_or_default(),
        calls: fs::read_to_string(&log).unwrap_or_default(),
    }
}

#[test]
fn the_actions_install_step_takes_a_released_forge_and_checks_it() {
    let d = tmp();
    let dir = d.path();
    let releases = dir.join("releases");
    let tag = format!("v{VERSION}");
    let tarball = packed(&releases.join(&tag));
    // The latest release is the same files.
    let latest = releases.join("latest");
    fs::create_dir_all(&latest).unwrap();
    for f in listing(&releases.join(&tag)) {
        fs::copy(releases.join(&tag).join(&f), latest.join(&f)).unwrap();
    }
    let installed = dir.join("bin/forge");

    // A version tag: that release.
    let at_tag = format!("/home/runner/work/_actions/someone/forge/{tag}");
    let r = install(dir, &at_tag, &releases);
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    assert_eq!(r.output, "installed=true\n", "{}{}", r.stdout, r.stderr);
    assert!(
        r.calls
            .starts_with(&format!("release download {tag} --repo someone/forge ")),
        "{}",
        r.calls
    );
    has(&r.stdout, &format!("installed forge-{VERSION}-{}", host()));
    prints_our_version(&installed);
    fs::remove_file(&installed).unwrap();

    // A branch: the latest release (gh with no tag).
    let r = install(
        dir,
        "/home/runner/work/_actions/someone/forge/main",
        &releases,
    );
    assert_eq!(r.output, "installed=true\n", "{}{}", r.stdout, r.stderr);
    assert!(
        r.calls
            .starts_with("release download --repo someone/forge "),
        "{}",
        r.calls
    );
    assert!(installed.is_file());
    fs::remove_file(&installed).unwrap();

    // A tarball that does not match its checksum: an error, nothing installed.
    let mut bytes = fs::read(&tarball).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    fs::write(&tarball, bytes).unwrap();
    let r = install(dir, &at_tag, &releases);
    assert_eq!(r.code, Some(1), "{}{}", r.stdout, r.stderr);
    has(&r.stderr, "does not match its checksum");
    assert!(!installed.exists(), "a corrupt download was installed");
    assert_eq!(r.output, "");

    // No such release, or a local action (uses: ./): nothing installed, the action builds.
    let r = install(
        dir,
        "/home/runner/work/_actions/someone/forge/v0.0.1",
        &releases,
    );
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    assert_eq!(r.output, "installed=false\n");
    has(&r.stdout, "no release v0.0.1 of someone/forge");
    has(&r.stdout, "building it from the action's source instead");
    let pinned = format!(
        "/home/runner/work/_actions/someone/forge/{}",
        "0123abcd".repeat(5)
    );
    let r = install(dir, &pinned, &releases);
    assert_eq!(r.output, "installed=false\n", "{}{}", r.stdout, r.stderr);
    has(&r.stdout, "pinned to commit 0123abcd");
    assert_eq!(r.calls, "", "gh was asked for a pinned commit");
    let r = install(dir, "/home/runner/work/myrepo/myrepo", &releases);
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    assert_eq!(r.output, "installed=false\n");
    assert_eq!(r.calls, "", "gh was asked for a local action");
    assert!(!installed.exists());
}

/// `BINARY --version` runs and names this version.
fn prints_our_version(binary: &Path) {
    let (code, version, stderr) = output(
        Command::new(binary)
            .arg("--version")
            .env("XDG_RUNTIME_DIR", std::env::temp_dir()),
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        version.starts_with(&format!("forge {VERSION}")),
        "{version}"
    );
}

/// build.rs asks cargo to rerun it only for paths that exist: cargo takes a missing watched
/// path for a change, and would rerun the script and rebuild the library on every build (a
/// fresh clone has no `.git/packed-refs`, say). Read from the build script's own output.
#[test]
fn the_build_script_watches_only_paths_that_exist() {
    let output = Path::new(env!("OUT_DIR")).with_file_name("output");
    let text = fs::read_to_string(&output)
        .unwrap_or_else(|e| panic!("{}: {e} (the build script's output)", output.display()));
    let watched: Vec<&str> = text
        .lines()
        .filter_map(|l| {
            l.strip_prefix("cargo:rerun-if-changed=")
                .or_else(|| l.strip_prefix("cargo::rerun-if-changed="))
        })
        .collect();
    assert!(watched.contains(&"build.rs"), "{text}");
    for p in &watched {
        let path = repo().join(p);
        assert!(path.exists(), "build.rs watches {p}, which does not exist");
    }
    // In a git checkout, the commit stamp follows HEAD: one git path is watched.
    if repo().join(".git").exists() {
        assert!(
            watched.iter().any(|p| p.contains("HEAD")),
            "no git path watched: {watched:?}"
        );
    }
}

/// Every package the library is built from, with its features, as `cargo tree` lists them for
/// `args`: `name version` → the feature lists it is built with (two where host and target differ).
/// Not `--offline`: a `cargo test` of the default members fetches none of the Python package's
/// own dependencies (numpy's), so a fresh machine does not have them yet.
fn cargo_tree(args: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut c = Command::new(cargo);
    c.current_dir(repo())
        .args([
            "tree", "--locked", "--prefix", "none", "--format", "{p}|{f}",
        ])
        .args(args);
    let (code, out, err) = output(&mut c);
    assert_eq!(code, Some(0), "cargo tree {args:?}: {err}");
    let mut map = BTreeMap::<String, BTreeSet<String>>::new();
    for line in out.lines().filter(|l| !l.trim().is_empty()) {
        let (package, features) = line.split_once('|').expect("{p}|{f}");
        let key = package
            .split_whitespace()
            .take(2)
            .collect::<Vec<_>>()
            .join(" ");
        let features = features.trim_end_matches(" (*)").trim().to_string();
        map.entry(key).or_default().insert(features);
    }
    map
}

/// `scripts/py-test.sh` builds the Python wheel (maturin, the `forge-flocks-py` package) into the
/// target folder `cargo test --release` has just filled. It reuses the library and every
/// dependency only where each is built with the same features in both builds; one package that
/// differs (syn's `visit-mut`, which pyo3's macros turn on, say) is compiled twice with all that
/// sits above it — the whole library, minutes on two cores.
#[test]
fn the_python_wheel_reuses_the_librarys_build() {
    let library = cargo_tree(&["-p", "forge-flocks-lib", "-e", "normal,build"]);
    let tests = cargo_tree(&[
        "-p",
        "forge-flocks",
        "-p",
        "forge-flocks-lib",
        "-e",
        "normal,build,dev",
    ]);
    let wheel = cargo_tree(&["-p", "forge-flocks-py", "-e", "normal,build"]);
    assert!(
        library.len() > 100 && library.keys().any(|k| k.starts_with("wgpu ")),
        "{library:?}"
    );
    let differ: Vec<String> = library
        .keys()
        .filter(|k| tests.get(*k) != wheel.get(*k))
        .map(|k| format!("{k}: tests {:?}, wheel {:?}", tests.get(k), wheel.get(k)))
        .collect();
    assert!(
        differ.is_empty(),
        "built with other features for the wheel than for the tests (so the library is \
         compiled twice; give the root package the same features, as it does for syn):\n{}",
        differ.join("\n")
    );
}
