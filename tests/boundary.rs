//! DESIGN.md: the solver never imports the renderer and the renderer never advances the
//! physics; the `.bfs` format is the only contract between them. Checked on the sources.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Lines of code (comments dropped) in `paths` that mention any of `forbidden`.
fn offenders(paths: &[&str], forbidden: &[&str]) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for p in paths {
        let p = root.join(p);
        if p.is_dir() {
            rust_files(&p, &mut files);
        } else {
            files.push(p);
        }
    }
    assert!(!files.is_empty(), "no sources found under {paths:?}");
    let mut bad = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if let Some(w) = forbidden.iter().find(|w| code.contains(*w)) {
                bad.push(format!(
                    "{}:{}: uses {w}: {}",
                    f.display(),
                    i + 1,
                    line.trim()
                ));
            }
        }
    }
    bad
}

#[test]
fn the_solver_does_not_import_the_renderer() {
    let bad = offenders(
        &["src/sim"],
        &["crate::render", "crate::video", "wgpu", "crate::plot"],
    );
    assert!(
        bad.is_empty(),
        "the solver reaches into the renderer:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_renderer_does_not_advance_the_physics() {
    let bad = offenders(
        &["src/render", "src/video"],
        &["crate::sim", "CpuSolver", "cudarc"],
    );
    assert!(
        bad.is_empty(),
        "the renderer reaches into the solver:\n{}",
        bad.join("\n")
    );
}
