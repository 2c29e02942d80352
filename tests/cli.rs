//! The `forge` binary, driven from outside: bad scenes, bad flags, bad files, full disks,
//! diverging runs and killed runs must fail with a message that names the field, flag, file or
//! frame at fault, a non-zero exit, never a panic, and no output left behind; good runs must
//! produce recordings that `forge info` describes.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common;

use common::*;

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// A scene file that must be rejected: checks the exit, the message (`expect` in stderr), no
/// panic, and that the folder holds nothing but the scene afterwards.
fn bad_scene(text: &str, expect: &[&str]) -> String {
    let d = tmp();
    write(d.path(), "s.json", text);
    let mut names = expect.to_vec();
    names.push("s.json");
    let err = fails_cleanly(
        d.path(),
        &["simulate", "s.json", "-o", "out.bfs", "--quiet"],
        &names,
        &["out.bfs"],
    );
    assert_eq!(listing(d.path()), ["s.json"], "files left behind");
    err
}

/// A tiny valid 2D boids scene (20 agents, 3 steps).
const TINY: &str = r#"{
  "name": "tiny",
  "model": "boids",
  "agents": 20,
  "steps": 3,
  "seed": 4,
  "world": { "size": [100, 100], "boundary": "wrap" }
}"#;

/// Records TINY (4 frames of 20 agents) as `name` in `dir`.
fn record_tiny(dir: &Path, name: &str) -> PathBuf {
    write(dir, "tiny.json", TINY);
    succeeds(dir, &["simulate", "tiny.json", "-o", name, "--quiet"]);
    dir.join(name)
}

fn info_json(dir: &Path, file: &str) -> serde_json::Value {
    let out = succeeds(dir, &["info", file, "--json"]).stdout;
    serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("forge info --json is not JSON ({e}):\n{out}"))
}

// ---------------------------------------------------------------------------------------
// Scene validation
// ---------------------------------------------------------------------------------------

#[test]
fn unknown_top_level_field() {
    bad_scene(
        "{\n  \"model\": \"boids\",\n  \"agnets\": 10\n}",
        &["scene.agnets: unknown field `agnets`", "(line 3)"],
    );
}

#[test]
fn bad_noise_kind_names_the_field_and_the_kinds() {
    for value in ["\"vector\"", "3", "true", "\"Vectorial\""] {
        bad_scene(
            &format!(
                "{{\n  \"model\": \"vicsek\",\n  \"vicsek\": {{\n    \"noise_kind\": {value}\n  }}\n}}"
            ),
            &[
                &format!(
                    "scene.vicsek.noise_kind: expected \"angular\" or \"vectorial\", got {value}"
                ),
                "(line 4)",
            ],
        );
    }
    // A boids scene has no noise.
    bad_scene(
        r#"{"model": "boids", "vicsek": {"noise_kind": "vectorial"}}"#,
        &["scene.vicsek: only allowed with model \"vicsek\""],
    );
}

/// The noise kind travels in the recording's scene only when it is not the default, so
/// recordings made before noise kinds existed keep their bytes (tests/determinism.rs pins them).
#[test]
fn noise_kind_is_stored_only_when_vectorial() {
    let d = tmp();
    for (kind, stored) in [("angular", false), ("vectorial", true)] {
        let s = write(
            d.path(),
            &format!("{kind}.json"),
            &format!(
                r#"{{"model": "vicsek", "agents": 30, "steps": 2, "vicsek": {{"noise_kind": "{kind}"}}}}"#
            ),
        );
        let out = format!("{kind}.bfs");
        succeeds(
            d.path(),
            &["simulate", s.to_str().unwrap(), "-o", &out, "-q"],
        );
        let v = info_json(d.path(), &out);
        let vicsek = &v["scene_json"]["vicsek"];
        assert_eq!(vicsek.get("noise_kind").is_some(), stored, "{vicsek}");
        if stored {
            assert_eq!(vicsek["noise_kind"], "vectorial");
        }
    }
}

#[test]
fn bad_neighbours_name_the_field() {
    for (neighbours, want) in [
        (
            r#"{"kind": "topological", "k": 0}"#,
            "scene.boids.neighbours.k: must be >= 1 (the number of nearest neighbours), got 0",
        ),
        (
            r#"{"kind": "topological", "k": -3}"#,
            "scene.boids.neighbours.k: must be >= 1",
        ),
        (
            r#"{"kind": "topo", "k": 7}"#,
            "scene.boids.neighbours.kind: expected \"metric\" or \"topological\", got \"topo\"",
        ),
        (
            r#"{"kind": "metric", "k": 7}"#,
            "scene.boids.neighbours.k: only allowed with \"kind\": \"topological\"",
        ),
        (
            r#"{"kind": "topological", "n": 7}"#,
            "scene.boids.neighbours.n: unknown field `n`",
        ),
    ] {
        bad_scene(
            &format!(
                "{{\n  \"model\": \"boids\",\n  \"boids\": {{\n    \"neighbours\": {neighbours}\n  }}\n}}"
            ),
            &[want, "(line 4)"],
        );
    }
}

/// Topological neighbours travel in the recording's scene only when asked for, so recordings
/// made before they existed keep their bytes (tests/determinism.rs pins them); the CUDA kernels
/// take k up to 64: `--backend cuda` refuses more, naming the field.
#[test]
fn topological_neighbours_are_stored_and_k_above_64_runs_on_the_cpu() {
    let d = tmp();
    for (neighbours, stored) in [(r#""metric""#, false), (r#""topological", "k": 5"#, true)] {
        let s = write(
            d.path(),
            "n.json",
            &format!(
                r#"{{"model": "boids", "agents": 30, "steps": 2, "boids": {{"neighbours": {{"kind": {neighbours}}}}}}}"#
            ),
        );
        let r = succeeds(
            d.path(),
            &["simulate", s.to_str().unwrap(), "-o", "n.bfs", "--force"],
        );
        // Without a CUDA driver `auto` is the CPU: a note would change nothing.
        assert!(!r.stderr.contains("note:"), "{}", r.stderr);
        let v = info_json(d.path(), "n.bfs");
        let b = &v["scene_json"]["boids"];
        assert_eq!(b.get("neighbours").is_some(), stored, "{b}");
        if stored {
            assert_eq!(b["neighbours"]["kind"], "topological");
            assert_eq!(b["neighbours"]["k"], 5);
        }
    }
    write(
        d.path(),
        "k.json",
        r#"{"model": "boids", "agents": 100, "steps": 2, "boids": {"neighbours": {"kind": "topological", "k": 65}}}"#,
    );
    fails_cleanly(
        d.path(),
        &["simulate", "k.json", "-o", "c.bfs", "--backend", "cuda"],
        &[
            "--backend cuda: topological neighbours with k above 64 (scene.boids.neighbours.k) \
             run on the CPU only",
            "use --backend cpu",
        ],
        &["c.bfs"],
    );
}

#[test]
fn misspelt_nested_field() {
    bad_scene(
        "{\n  \"model\": \"boids\",\n  \"agents\": 10,\n  \"boids\": {\n    \"r_sepp\": 3\n  }\n}",
        &[
            "scene.boids.r_sepp: unknown field `r_sepp`",
            "r_sep",
            "(line 5)",
        ],
    );
    bad_scene(
        "{\n  \"model\": \"boids\",\n  \"world\": { \"size\": [10, 10],\n    \"boundry\": \"wrap\" }\n}",
        &["scene.world.boundry: unknown field `boundry`", "(line 4)"],
    );
}

#[test]
fn wrong_type_for_agents() {
    bad_scene(
        "{\n  \"model\": \"boids\",\n  \"agents\": \"50\"\n}",
        &["scene.agents: invalid type: string \"50\"", "(line 3)"],
    );
}

#[test]
fn wrong_enum_value() {
    bad_scene(
        "{\n  \"model\": \"boidz\"\n}",
        &["scene.model: unknown variant `boidz`", "(line 2)"],
    );
}

#[test]
fn out_of_range_and_nan_numbers() {
    // JSON has no NaN or infinity: 1e999 does not fit an f64 and NaN is not a value.
    bad_scene(
        "{\n  \"model\": \"boids\",\n  \"dt\": 1e999\n}",
        &["scene.dt: number out of range", "(line 3)"],
    );
    bad_scene(
        "{\n  \"model\": \"boids\",\n  \"world\": { \"size\": [\n    1e999, 5] }\n}",
        &["scene.world.size[0]: number out of range", "(line 4)"],
    );
    bad_scene(
        "{\n  \"model\": \"boids\",\n  \"boids\": {\n    \"r_ali\": -1e999 }\n}",
        &["scene.boids.r_ali: number out of range", "(line 4)"],
    );
    bad_scene(
        "{\n  \"model\": \"boids\",\n  \"dt\": NaN\n}",
        &["scene.dt", "(line 3)"],
    );
    bad_scene(
        "{\n  \"model\": \"boids\",\n  \"dt\": Infinity\n}",
        &["scene.dt", "(line 3)"],
    );
    // Finite in f64 but not in the f32 the solver uses.
    bad_scene(
        "{\n  \"model\": \"boids\",\n  \"dt\": 1e300\n}",
        &[
            "scene.dt: is too large: at most 1e30, got 1e300",
            "(line 3)",
        ],
    );
    // A finite weight above the limit is named as too large, not as infinite.
    bad_scene(
        "{\n  \"model\": \"boids\",\n  \"boids\": {\"w_sep\": -1e38}\n}",
        &[
            "scene.boids.w_sep: is too large: at most 1e30 either way, got -1e38",
            "(line 3)",
        ],
    );
}

#[test]
fn negative_sizes_and_radii() {
    bad_scene(
        "{\n  \"model\": \"boids\",\n  \"world\": {\n    \"size\": [\n      -3,\n      100\n    ]\n  }\n}",
        &["scene.world.size[0]: must be > 0, got -3 (line 5)"],
    );
    bad_scene(
        "{\n  \"model\": \"boids\",\n  \"world\": { \"size\": [100, 0] }\n}",
        &["scene.world.size[1]: must be > 0, got 0 (line 3)"],
    );
    bad_scene(
        "{\n  \"model\": \"boids\",\n  \"boids\": {\n    \"r_coh\": -2\n  }\n}",
        &["scene.boids.r_coh: must be >= 0, got -2 (line 4)"],
    );
    bad_scene(
        "{\n  \"model\": \"vicsek\",\n  \"vicsek\": {\n    \"r\": -1\n  }\n}",
        &["scene.vicsek.r: must be > 0, got -1 (line 4)"],
    );
    bad_scene(
        "{\n  \"model\": \"boids\",\n  \"init\": { \"layout\": \"disc\",\n    \"radius\": -5 }\n}",
        &["scene.init.radius: must be > 0, got -5 (line 4)"],
    );
    // A disc is placed in the world: wider than it, or centred outside it, it is not a disc.
    bad_scene(
        "{\"model\": \"boids\", \"world\": {\"size\": [100, 50]},\n  \"init\": {\"layout\": \"disc\", \"radius\": 1e9}}",
        &["scene.init.radius: 1000000000 is wider than the world: at most its largest side, 100 (line 2)"],
    );
    bad_scene(
        "{\"model\": \"boids\", \"world\": {\"size\": [100, 50]},\n  \"init\": {\"layout\": \"disc\", \"center\": [50, 1e20]}}",
        &["scene.init.center[1]: must lie in the world, 0 to 50, got 1e20"],
    );
}

#[test]
fn v_min_not_below_v_max() {
    bad_scene(
        "{\n  \"model\": \"boids\",\n  \"boids\": {\n    \"v_min\": 50,\n    \"v_max\": 50\n  }\n}",
        &["scene.boids.v_min: v_min must be < v_max, got v_min 50 >= v_max 50 (line 4)"],
    );
    bad_scene(
        "{\n  \"model\": \"boids\",\n  \"boids\": {\n    \"v_min\": 90,\n    \"v_max\": 10\n  }\n}",
        &["scene.boids.v_min: v_min must be < v_max", "(line 4)"],
    );
}

#[test]
fn zero_agents() {
    bad_scene(
        "{\n  \"model\": \"boids\",\n  \"agents\": 0\n}",
        &["scene.agents: must be > 0, got 0 (line 3)"],
    );
    bad_scene(
        "{\n  \"model\": \"boids\",\n  \"agents\": -4\n}",
        &["scene.agents: must be > 0, got -4 (line 3)"],
    );
}

#[test]
fn agents_that_do_not_fit_in_memory() {
    // 2e9 3D agents: hundreds of GiB of state. Refused before anything is allocated.
    // (The scene is valid as text, so the message names the field but no line.)
    let d = tmp();
    write(
        d.path(),
        "s.json",
        "{\n  \"model\": \"boids\",\n  \"dim\": 3,\n  \"agents\": 2000000000,\n  \"steps\": 1\n}",
    );
    let t = Instant::now();
    let err = fails(
        d.path(),
        &["simulate", "s.json", "-o", "out.bfs", "--quiet"],
    );
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "took {:?}",
        t.elapsed()
    );
    has(&err, "scene.agents: 2000000000 agents");
    has(&err, "memory");
    assert_eq!(listing(d.path()), ["s.json"], "files left behind");
    // Beyond the hard limit.
    bad_scene(
        "{\n  \"model\": \"boids\",\n  \"agents\": 9999999999\n}",
        &["scene.agents: must be at most", "(line 3)"],
    );
    // The same through the flag.
    let d = tmp();
    let err = fails(
        d.path(),
        &[
            "simulate",
            "murmuration3d",
            "--agents",
            "2000000000",
            "-o",
            "out.bfs",
            "--quiet",
        ],
    );
    has(&err, "--agents");
    has(&err, "2000000000 agents");
    no_output(d.path(), "out.bfs");
}

#[test]
fn malformed_json_names_its_line() {
    // A missing comma: serde stops at the next key, line 4.
    bad_scene(
        "{\n  \"model\": \"boids\",\n  \"agents\": 10\n  \"steps\": 3\n}",
        &["expected `,` or `}`", "(line 4)"],
    );
    // Cut short.
    bad_scene(
        "{\n  \"model\": \"boids\",\n  \"agents\": 10,\n",
        &["EOF while parsing", "(line 4)"],
    );
    // A value missing.
    bad_scene(
        "{\n  \"model\": \"boids\",\n  \"world\": { \"size\": }\n}",
        &["scene.world.size: expected value", "(line 3)"],
    );
    // Not JSON at all.
    bad_scene("model = boids\n", &["expected value", "(line 1)"]);
    // Empty file.
    bad_scene("", &["EOF while parsing", "line 1"]);
}

#[test]
fn malformed_array_does_not_hang() {
    // Run with a short timeout: the bug allocates without bound while it loops.
    let d = tmp();
    write(
        d.path(),
        "s.json",
        "{\n  \"model\": \"boids\",\n  \"agents\": 10,\n  \"world\": {\"size\": [1, 2,\n}}",
    );
    let r = run_command(
        forge(d.path())
            .args(["simulate", "s.json", "-o", "out.bfs", "--quiet"])
            .timeout(Duration::from_secs(5)),
    );
    let err = &r.stderr;
    assert!(r.code.is_some(), "forge hung (killed after 5 s)");
    assert_ne!(r.code, Some(0));
    no_panic(&r);
    has(err, "scene.world.size");
    has(err, "(line 5)");
    assert_eq!(listing(d.path()), ["s.json"], "files left behind");
}

#[test]
fn trailing_garbage() {
    bad_scene(
        "{\n  \"model\": \"boids\",\n  \"agents\": 10\n}\n xx",
        &["scene: trailing characters", "(line 5)"],
    );
    bad_scene(
        "{\"model\": \"boids\"}\n{\"model\": \"boids\"}\n",
        &["trailing characters", "(line 2)"],
    );
}

#[test]
fn all_errors_reported_together() {
    let err = bad_scene(
        "{\n  \"model\": \"boids\",\n  \"agents\": 0,\n  \"world\": { \"size\": [-1, 10] }\n}",
        &[
            "scene.agents: must be > 0, got 0 (line 3)",
            "scene.world.size[0]: must be > 0, got -1 (line 4)",
        ],
    );
    assert!(
        err.find("scene.agents").unwrap() < err.find("scene.world").unwrap(),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------
// Huge world, tiny radius: coarser grid cells, bounded memory
// ---------------------------------------------------------------------------------------

/// Runs `forge` under a 1 GiB address-space limit (sh's ulimit -v), so that a grid sized by
/// world / radius (10^24 cells) would fail instead of succeeding by luck.
fn bounded(dir: &Path, args: &str) -> Run {
    run_process(
        std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "ulimit -v 1048576 && exec '{}' {args}",
                forge_bin().display()
            ))
            .current_dir(dir),
    )
}

#[test]
fn huge_world_tiny_radius_2d() {
    let d = tmp();
    for search in ["auto", "grid"] {
        write(
            d.path(),
            "h.json",
            &format!(
                r#"{{"model": "boids", "agents": 1000, "steps": 3, "search": "{search}",
                   "world": {{"size": [1e9, 1e9]}},
                   "boids": {{"r_sep": 0.001, "r_ali": 0.001, "r_coh": 0.001}}}}"#
            ),
        );
        let t = Instant::now();
        let r = bounded(
            d.path(),
            "simulate h.json -o h.bfs --force --quiet --threads 1",
        );
        no_panic(&r);
        assert_eq!(r.code, Some(0), "search {search}: {}", r.stderr);
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "took {:?}",
            t.elapsed()
        );
        let v = info_json(d.path(), "h.bfs");
        assert_eq!(v["frames"], 4);
        assert_eq!(v["agents"], 1000);
    }
}

#[test]
fn huge_world_tiny_radius_3d() {
    let d = tmp();
    write(
        d.path(),
        "h.json",
        r#"{"model": "boids", "dim": 3, "agents": 1000, "steps": 3, "search": "grid",
           "world": {"size": [1e9, 1e9, 1e9]},
           "boids": {"r_sep": 0.001, "r_ali": 0.001, "r_coh": 0.001}}"#,
    );
    let r = bounded(d.path(), "simulate h.json -o h.bfs --quiet --threads 1");
    no_panic(&r);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(info_json(d.path(), "h.bfs")["frames"], 4);
}

// ---------------------------------------------------------------------------------------
// Existing outputs, unwritable outputs
// ---------------------------------------------------------------------------------------

#[test]
fn existing_output_needs_force() {
    let d = tmp();
    write(d.path(), "tiny.json", TINY);
    let precious: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 251) as u8).collect();
    fs::write(d.path().join("out.bfs"), &precious).unwrap();

    let err = fails(
        d.path(),
        &["simulate", "tiny.json", "-o", "out.bfs", "--quiet"],
    );
    has(&err, "out.bfs");
    has(&err, "already exists");
    has(&err, "--force");
    assert_eq!(
        fs::read(d.path().join("out.bfs")).unwrap(),
        precious,
        "the existing file was changed"
    );
    assert!(!d.path().join("out.bfs.partial").exists());

    // A run that fails for another reason (bad flag value) with --force leaves it alone too.
    let err = fails(
        d.path(),
        &[
            "simulate",
            "tiny.json",
            "-o",
            "out.bfs",
            "--force",
            "--threads",
            "0",
        ],
    );
    has(&err, "--threads");
    assert_eq!(fs::read(d.path().join("out.bfs")).unwrap(), precious);

    succeeds(
        d.path(),
        &[
            "simulate",
            "tiny.json",
            "-o",
            "out.bfs",
            "--force",
            "--quiet",
        ],
    );
    assert!(!d.path().join("out.bfs.partial").exists());
    let v = info_json(d.path(), "out.bfs");
    assert_eq!(v["frames"], 4);
    assert_eq!(v["agents"], 20);
}

#[test]
fn existing_metrics_csv_needs_force() {
    let d = tmp();
    record_tiny(d.path(), "t.bfs");
    fs::write(d.path().join("m.csv"), "keep me\n").unwrap();
    let err = fails(d.path(), &["info", "t.bfs", "--metrics", "m.csv"]);
    has(&err, "m.csv");
    has(&err, "--force");
    assert_eq!(
        fs::read_to_string(d.path().join("m.csv")).unwrap(),
        "keep me\n"
    );
    assert!(!d.path().join("m.csv.partial").exists());
    succeeds(
        d.path(),
        &["info", "t.bfs", "--metrics", "m.csv", "--force"],
    );
    assert!(fs::read_to_string(d.path().join("m.csv"))
        .unwrap()
        .starts_with("frame,"));
}

#[test]
fn output_is_a_folder() {
    let d = tmp();
    write(d.path(), "tiny.json", TINY);
    fs::create_dir(d.path().join("out.bfs")).unwrap();
    let err = fails(
        d.path(),
        &[
            "simulate",
            "tiny.json",
            "-o",
            "out.bfs",
            "--force",
            "--quiet",
        ],
    );
    has(&err, "out.bfs");
    has(&err, "folder");
    assert!(!d.path().join("out.bfs.partial").exists());
}

#[test]
fn full_disk() {
    if !Path::new("/dev/full").exists() {
        eprintln!("no /dev/full here: skipped");
        return;
    }
    let d = tmp();
    write(d.path(), "tiny.json", TINY);
    for force in [false, true] {
        let mut args = vec!["simulate", "tiny.json", "-o", "/dev/full", "--quiet"];
        if force {
            args.push("--force");
        }
        let err = fails(d.path(), &args);
        has(&err, "/dev/full");
        has(&err, "No space left");
    }
    assert_eq!(listing(d.path()), ["tiny.json"]);
    assert!(!Path::new("/dev/full.partial").exists());

    // The metrics CSV too.
    record_tiny(d.path(), "t.bfs");
    let err = fails(d.path(), &["info", "t.bfs", "--metrics", "/dev/full"]);
    has(&err, "/dev/full");
    has(&err, "No space left");
}

#[cfg(unix)]
#[test]
fn device_outputs() {
    let d = tmp();
    write(d.path(), "tiny.json", TINY);
    // /dev/null is a device: written in place, never renamed, no --force needed.
    succeeds(
        d.path(),
        &["simulate", "tiny.json", "-o", "/dev/null", "--quiet"],
    );
    assert!(Path::new("/dev/null").exists());
    assert!(!Path::new("/dev/null.partial").exists());
    // A pipe cannot seek back to finalize the header: whatever happens, no panic, and a
    // failure names the output.
    let r = run(
        d.path(),
        &["simulate", "tiny.json", "-o", "/dev/stdout", "--quiet"],
    );
    no_panic(&r);
    if r.code != Some(0) {
        has(&r.stderr, "/dev/stdout");
    }
    assert_eq!(listing(d.path()), ["tiny.json"]);
}

#[test]
fn output_in_missing_folder() {
    let d = tmp();
    write(d.path(), "tiny.json", TINY);
    let err = fails(
        d.path(),
        &["simulate", "tiny.json", "-o", "nodir/out.bfs", "--quiet"],
    );
    has(&err, "nodir/out.bfs");
    has(&err, "No such file or directory");
    assert!(!d.path().join("nodir").exists());
    assert_eq!(listing(d.path()), ["tiny.json"]);

    record_tiny(d.path(), "t.bfs");
    let err = fails(d.path(), &["info", "t.bfs", "--metrics", "nodir/m.csv"]);
    has(&err, "nodir/m.csv");
}

// ---------------------------------------------------------------------------------------
// A recording as initial condition
// ---------------------------------------------------------------------------------------

fn file_scene(dir: &Path, bfs: &str, frame: Option<i64>) {
    let frame = frame
        .map(|k| format!(",\n    \"frame\": {k}"))
        .unwrap_or_default();
    write(
        dir,
        "from.json",
        &format!(
            "{{\n  \"model\": \"boids\",\n  \"steps\": 2,\n  \"world\": {{ \"size\": [100, 100] }},\n  \
             \"init\": {{\n    \"layout\": \"file\",\n    \"path\": \"{bfs}\"{frame}\n  }}\n}}"
        ),
    );
}

#[test]
fn init_from_good_file() {
    let d = tmp();
    record_tiny(d.path(), "rec.bfs");
    file_scene(d.path(), "rec.bfs", Some(2));
    succeeds(
        d.path(),
        &["simulate", "from.json", "-o", "out.bfs", "--quiet"],
    );
    let v = info_json(d.path(), "out.bfs");
    assert_eq!(v["agents"], 20);
    assert_eq!(v["frames"], 3);
}

#[test]
fn init_from_truncated_header() {
    let d = tmp();
    let rec = record_tiny(d.path(), "rec.bfs");
    let bytes = fs::read(&rec).unwrap();
    let (header_len, _) = bfs_layout(&bytes, 2, 20);
    for cut in [0, 5, 40, header_len - 3] {
        fs::write(d.path().join("cut.bfs"), &bytes[..cut]).unwrap();
        file_scene(d.path(), "cut.bfs", None);
        let err = fails(
            d.path(),
            &["simulate", "from.json", "-o", "out.bfs", "--quiet"],
        );
        has(&err, "scene.init.path");
        has(&err, "cut.bfs");
        no_output(d.path(), "out.bfs");
    }
}

#[test]
fn init_from_file_with_no_complete_frame() {
    let d = tmp();
    let rec = record_tiny(d.path(), "rec.bfs");
    let bytes = fs::read(&rec).unwrap();
    let (header_len, _) = bfs_layout(&bytes, 2, 20);
    fs::write(d.path().join("cut.bfs"), &bytes[..header_len + 10]).unwrap();
    file_scene(d.path(), "cut.bfs", None);
    let err = fails(
        d.path(),
        &["simulate", "from.json", "-o", "out.bfs", "--quiet"],
    );
    has(&err, "cut.bfs");
    has(&err, "no complete frame");
    no_output(d.path(), "out.bfs");
}

#[test]
fn init_from_corrupt_frame() {
    let d = tmp();
    let rec = record_tiny(d.path(), "rec.bfs");
    let mut bytes = fs::read(&rec).unwrap();
    let (header_len, frame_size) = bfs_layout(&bytes, 2, 20);
    assert_eq!(
        bytes.len(),
        header_len + 4 * frame_size,
        "4 frames expected"
    );
    // Flip one bit in frame 2's payload (a velocity).
    bytes[header_len + 2 * frame_size + 24 + 4 * 2 * 20 + 9] ^= 0x40;
    fs::write(d.path().join("flip.bfs"), &bytes).unwrap();
    file_scene(d.path(), "flip.bfs", Some(2));
    let err = fails(
        d.path(),
        &["simulate", "from.json", "-o", "out.bfs", "--quiet"],
    );
    has(&err, "flip.bfs");
    has(&err, "frame 2");
    has(&err, "corrupt");
    no_output(d.path(), "out.bfs");

    // forge info reports it too, naming the file and the frame.
    let err = fails(d.path(), &["info", "flip.bfs"]);
    has(&err, "flip.bfs");
    has(&err, "frame 2");

    // A metrics CSV started before the corrupt frame is not left behind.
    let err = fails(d.path(), &["info", "flip.bfs", "--metrics", "m.csv"]);
    has(&err, "frame 2");
    no_output(d.path(), "m.csv");

    // The other frames are still good.
    file_scene(d.path(), "flip.bfs", Some(1));
    succeeds(
        d.path(),
        &["simulate", "from.json", "-o", "out.bfs", "--quiet"],
    );
}

#[test]
fn init_frame_out_of_range() {
    let d = tmp();
    record_tiny(d.path(), "rec.bfs");
    for k in [4, 9, -5] {
        file_scene(d.path(), "rec.bfs", Some(k));
        let err = fails(
            d.path(),
            &["simulate", "from.json", "-o", "out.bfs", "--quiet"],
        );
        has(&err, "scene.init.frame");
        has(&err, "rec.bfs");
        has(&err, &format!("got {k}"));
        no_output(d.path(), "out.bfs");
    }
}

#[test]
fn init_from_missing_or_foreign_file() {
    let d = tmp();
    file_scene(d.path(), "nothere.bfs", None);
    let err = fails(
        d.path(),
        &["simulate", "from.json", "-o", "out.bfs", "--quiet"],
    );
    has(&err, "scene.init.path");
    has(&err, "nothere.bfs");
    no_output(d.path(), "out.bfs");

    write(d.path(), "text.bfs", "hello, not a recording\n");
    file_scene(d.path(), "text.bfs", None);
    let err = fails(
        d.path(),
        &["simulate", "from.json", "-o", "out.bfs", "--quiet"],
    );
    has(&err, "text.bfs");
    has(&err, "not a .bfs file");
    no_output(d.path(), "out.bfs");
}

// ---------------------------------------------------------------------------------------
// A state that becomes NaN
// ---------------------------------------------------------------------------------------

#[test]
fn diverging_run_keeps_good_frames() {
    // No neighbours (tiny radii), an open world, v_max so large that its square is infinite
    // (no clamp) and a huge dt: positions grow by ~1e37 a step and overflow after a few steps.
    let d = tmp();
    write(
        d.path(),
        "nan.json",
        r#"{"model": "boids", "agents": 50, "steps": 200, "dt": 3e7,
           "world": {"size": [100, 100], "boundary": "open"},
           "boids": {"r_sep": 0.001, "r_ali": 0.001, "r_coh": 0.001, "max_force": 1,
                     "v_min": 0, "v_max": 1e30}}"#,
    );
    let err = fails(
        d.path(),
        &["simulate", "nan.json", "-o", "nan.bfs", "--quiet"],
    );
    has(&err, "NaN or infinite");
    has(&err, "nan.bfs");
    // "... at step S (agent A) ..."
    let after = |key: &str| -> u64 {
        let i = err
            .find(key)
            .unwrap_or_else(|| panic!("no {key:?} in:\n{err}"))
            + key.len();
        let digits: String = err[i..]
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        digits
            .parse()
            .unwrap_or_else(|_| panic!("no number after {key:?} in:\n{err}"))
    };
    let step = after("step ");
    let agent = after("agent ");
    assert!(
        (2..200).contains(&step),
        "diverged at step {step}: pick other parameters\n{err}"
    );
    assert!(agent < 50);
    assert!(!d.path().join("nan.bfs.partial").exists());

    let v = info_json(d.path(), "nan.bfs");
    assert_eq!(v["frames"], step, "frames 0..step-1 are the good ones");
    assert_eq!(v["last_step"], step - 1);
    assert_eq!(v["finalized"], true);
    assert_eq!(v["agents"], 50);
    let out = succeeds(d.path(), &["info", "nan.bfs"]).stdout;
    assert!(out.contains(&format!("frames     {step}")), "{out}");
}

// ---------------------------------------------------------------------------------------
// Flags and scene names
// ---------------------------------------------------------------------------------------

#[test]
fn unknown_scene_lists_builtins() {
    let d = tmp();
    let err = fails(d.path(), &["simulate", "nosuchscene", "--quiet"]);
    has(&err, "nosuchscene");
    for name in [
        "turbulence",
        "murmuration",
        "schooling",
        "plasma",
        "vicsek",
        "cuplan",
        "murmuration3d",
    ] {
        has(&err, name);
    }
    assert!(listing(d.path()).is_empty());
}

#[test]
fn bad_flag_values() {
    let d = tmp();
    write(d.path(), "tiny.json", TINY);
    let cases: &[(&[&str], &str)] = &[
        (&["--threads", "0"], "--threads"),
        (&["--agents", "0"], "--agents"),
        (&["--steps", "99999999999999999"], "--steps"),
        (&["--steps", "99999999999999999999999"], "--steps"),
        (&["--steps", "-1"], "-1"),
        (&["--agents", "many"], "--agents"),
        (&["--threads", "-2"], "-2"),
        (&["--search", "octree"], "--search"),
        (&["--backend", "cuda9"], "--backend"),
        (&["--frobnicate"], "--frobnicate"),
    ];
    for (extra, named) in cases {
        let mut args = vec!["simulate", "tiny.json", "-o", "out.bfs", "--quiet"];
        args.extend_from_slice(extra);
        let err = fails(d.path(), &args);
        has(&err, named);
        no_output(d.path(), "out.bfs");
    }
    assert_eq!(listing(d.path()), ["tiny.json"]);
}

#[test]
fn agents_flag_refused_for_file_layout() {
    let d = tmp();
    record_tiny(d.path(), "rec.bfs");
    file_scene(d.path(), "rec.bfs", None);
    let err = fails(
        d.path(),
        &[
            "simulate",
            "from.json",
            "--agents",
            "10",
            "-o",
            "out.bfs",
            "--quiet",
        ],
    );
    has(&err, "--agents");
    has(&err, "rec.bfs");
    no_output(d.path(), "out.bfs");
}

#[test]
fn no_arguments_is_usage_error() {
    let d = tmp();
    let r = run(d.path(), &[]);
    no_panic(&r);
    assert_eq!(r.code, Some(2));
    has(&r.stderr, "Usage");
    let r = run(d.path(), &["simulate"]);
    no_panic(&r);
    assert_eq!(r.code, Some(2));
    has(&r.stderr, "SCENE");
}

// ---------------------------------------------------------------------------------------
// forge info on bad files
// ---------------------------------------------------------------------------------------

#[test]
fn info_missing_file() {
    let d = tmp();
    let err = fails(d.path(), &["info", "missing.bfs"]);
    has(&err, "missing.bfs");
    has(&err, "No such file");
}

#[test]
fn info_not_a_bfs() {
    let d = tmp();
    write(
        d.path(),
        "notes.txt",
        "these are not the frames you are looking for\n",
    );
    let err = fails(d.path(), &["info", "notes.txt"]);
    has(&err, "notes.txt");
    has(&err, "not a .bfs file");
    let err = fails(d.path(), &["info", "notes.txt", "--json"]);
    has(&err, "notes.txt");
}

/// `forge ARGS` in `dir` under a pseudo-terminal (util-linux `script`), stdout and stderr both
/// on it: what a user at a terminal sees. `None` where `script` is missing.
fn at_a_terminal(dir: &Path, args: &[&str]) -> Option<(bool, String)> {
    let ok = std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        skip("util-linux script is not installed: no pseudo-terminal to show a progress bar on");
        return None;
    }
    let mut line = format!("'{}'", forge_bin().display());
    for a in args {
        line.push_str(&format!(" '{a}'"));
    }
    let out = std::process::Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .current_dir(dir)
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .env("TERM", "xterm")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    Some((
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    ))
}

#[test]
fn info_metrics_shows_progress_at_a_terminal_only() {
    let d = tmp();
    let p = d.path();
    succeeds(
        p,
        &[
            "simulate", "vicsek", "--agents", "200", "--steps", "150", "-o", "v.bfs", "-q",
        ],
    );
    let args = ["info", "v.bfs", "--metrics", "m.csv", "--force"];
    let Some((ok, seen)) = at_a_terminal(p, &args) else {
        return;
    };
    assert!(ok, "{seen}");
    has(&seen, "/151 frames");
    assert_eq!(
        fs::read_to_string(p.join("m.csv")).unwrap().lines().count(),
        152
    );
    // --quiet: no bar; not a terminal: no bar either, and nothing else on stderr.
    let (ok, seen) = at_a_terminal(p, &[&args[..], &["--quiet"]].concat()).unwrap();
    assert!(ok && !seen.contains("/151 frames"), "{seen}");
    let r = succeeds(p, &args);
    assert_eq!(r.stderr, "");
    assert_eq!(
        fs::read_to_string(p.join("m.csv")).unwrap().lines().count(),
        152
    );
}

#[test]
fn info_empty_file() {
    let d = tmp();
    write(d.path(), "empty.bfs", "");
    let err = fails(d.path(), &["info", "empty.bfs"]);
    has(&err, "empty.bfs");
}

#[test]
fn info_folder() {
    let d = tmp();
    fs::create_dir(d.path().join("dir.bfs")).unwrap();
    let err = fails(d.path(), &["info", "dir.bfs"]);
    has(&err, "dir.bfs");
}

#[test]
fn info_truncated_recordings() {
    let d = tmp();
    let rec = record_tiny(d.path(), "rec.bfs");
    let bytes = fs::read(&rec).unwrap();
    let (header_len, frame_size) = bfs_layout(&bytes, 2, 20);
    // Inside the magic, inside the fixed header, inside the scene JSON.
    for cut in [3, 30, header_len / 2] {
        fs::write(d.path().join("cut.bfs"), &bytes[..cut]).unwrap();
        let err = fails(d.path(), &["info", "cut.bfs"]);
        has(&err, "cut.bfs");
        has(&err, "header");
    }
    // Inside frame 2: frames 0 and 1 readable, with a warning naming frame 2.
    fs::write(
        d.path().join("cut.bfs"),
        &bytes[..header_len + 2 * frame_size + 100],
    )
    .unwrap();
    let v = info_json(d.path(), "cut.bfs");
    assert_eq!(v["frames"], 2);
    let warnings = v["warnings"].to_string();
    assert!(warnings.contains("frame 2"), "{warnings}");
}

// ---------------------------------------------------------------------------------------
// A run killed outright
// ---------------------------------------------------------------------------------------

#[cfg(unix)]
#[test]
fn killed_run_leaves_readable_partial() {
    let d = tmp();
    let mut child = std::process::Command::new(forge_bin())
        .args([
            "simulate",
            "turbulence",
            "--steps",
            "100000",
            "-o",
            "k.bfs",
            "--quiet",
            "--threads",
            "2",
        ])
        .current_dir(d.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("forge starts");
    // Written as k.bfs.XXXXXX.partial (a unique name; XXXXXX random).
    let find_partial = || {
        listing(d.path())
            .into_iter()
            .find(|n| n.starts_with("k.bfs.") && n.ends_with(".partial"))
    };
    let t0 = Instant::now();
    let mut size = 0;
    while t0.elapsed() < Duration::from_secs(60) {
        size = find_partial()
            .and_then(|n| fs::metadata(d.path().join(n)).ok())
            .map(|m| m.len())
            .unwrap_or(0);
        if size > 3 << 20 {
            break;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("forge stopped early: {status}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().expect("SIGKILL"); // Child::kill is SIGKILL on Unix
    child.wait().unwrap();
    assert!(size > 3 << 20, "the recording did not grow: {size} bytes");
    assert!(
        !d.path().join("k.bfs").exists(),
        "a killed run must not leave the final name"
    );
    let partial = find_partial().expect("the partial recording is left");

    let r = run(d.path(), &["info", &partial]);
    no_panic(&r);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    has(&r.stdout, "not finalized");
    has(&r.stderr, "not finalized");
    has(&r.stdout, "agents     60000");

    let v = info_json(d.path(), &partial);
    assert!(v["frames"].as_u64().unwrap() >= 1, "{v}");
    assert_eq!(v["finalized"], false);
    assert_eq!(v["scene"], "turbulence");
    assert!(v["warnings"].to_string().contains("not finalized"), "{v}");

    // The partial recording is usable as an initial condition.
    write(
        d.path(),
        "resume.json",
        &r#"{"model": "boids", "steps": 1, "world": {"size": [3840, 2160]},
           "init": {"layout": "file", "path": "PARTIAL"}}"#
            .replace("PARTIAL", &partial),
    );
    succeeds(
        d.path(),
        &[
            "simulate",
            "resume.json",
            "-o",
            "r.bfs",
            "--quiet",
            "--threads",
            "2",
        ],
    );
    assert_eq!(info_json(d.path(), "r.bfs")["agents"], 60000);
}

// ---------------------------------------------------------------------------------------
// Good paths
// ---------------------------------------------------------------------------------------

#[test]
fn simulate_then_info_json() {
    let d = tmp();
    write(
        d.path(),
        "small.json",
        r#"{"name": "small", "model": "boids", "dim": 3, "agents": 64, "steps": 6,
           "record_every": 2, "seed": 9, "world": {"size": [50, 60, 70], "boundary": "reflect"}}"#,
    );
    let err = succeeds(d.path(), &["simulate", "small.json", "-o", "small.bfs"]).stderr;
    has(&err, "small.bfs");
    let v = info_json(d.path(), "small.bfs");
    assert_eq!(v["format"], "forge");
    assert_eq!(v["model"], "boids");
    assert_eq!(v["dim"], 3);
    assert_eq!(v["boundary"], "reflect");
    assert_eq!(v["agents"], 64);
    assert_eq!(v["seed"], 9);
    assert_eq!(v["record_every"], 2);
    assert_eq!(v["frames"], 4, "steps 0, 2, 4, 6");
    assert_eq!(v["last_step"], 6);
    assert_eq!(v["finalized"], true);
    assert_eq!(v["scene"], "small");
    assert_eq!(v["world"], serde_json::json!([50.0, 60.0, 70.0]));
    assert_eq!(v["warnings"], serde_json::json!([]));
    assert_eq!(v["scene_json"]["agents"], 64);
    let pol = v["metrics"]["last"]["polarization"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&pol));

    // Default output name: SCENE_NAME.bfs in the current folder.
    write(
        d.path(),
        "v.json",
        r#"{"name": "vic", "model": "vicsek", "agents": 100, "steps": 3, "world": {"size": [10, 10]}}"#,
    );
    succeeds(d.path(), &["simulate", "v.json", "--quiet"]);
    let v = info_json(d.path(), "vic.bfs");
    assert_eq!(v["model"], "vicsek");
    assert_eq!(v["dim"], 2);
    assert_eq!(v["frames"], 4);
    assert_eq!(v["agents"], 100);
}

/// `forge info` lists a recording's species: each one's name, role, agents (as recorded) and
/// the colour `--color species` draws it in (its `render.colour`, else the palette's for its
/// place in the list); a recording without species lists none.
#[test]
fn info_lists_the_species_with_roles_counts_and_colours() {
    let d = tmp();
    write(
        d.path(),
        "sp.json",
        r##"{"model": "boids", "steps": 2, "world": {"size": [200, 200]},
           "species": [
             {"name": "red", "agents": 5, "render": {"colour": "#ff2020"}},
             {"name": "hawk", "agents": 3, "role": "predator"},
             {"name": "wren", "agents": 2}]}"##,
    );
    succeeds(d.path(), &["simulate", "sp.json", "-o", "sp.bfs", "-q"]);
    let v = info_json(d.path(), "sp.bfs");
    assert_eq!(v["version"], 2);
    assert_eq!(
        v["species"],
        serde_json::json!([
            {"name": "red", "role": "flock", "agents": 5, "colour": "#ff2020"},
            {"name": "hawk", "role": "predator", "agents": 3, "colour": "#ff5a36"},
            {"name": "wren", "role": "flock", "agents": 2, "colour": "#5cc46a"},
        ])
    );
    let text = succeeds(d.path(), &["info", "sp.bfs"]).stdout;
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("species "))
        .unwrap_or_else(|| panic!("no species line in:\n{text}"));
    let words = |l: &str| l.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    assert_eq!(
        words(lines[at]),
        ["species", "red", "flock", "5", "agents", "colour", "#ff2020"]
    );
    assert_eq!(
        words(lines[at + 1]),
        ["hawk", "predator", "3", "agents", "colour", "#ff5a36"]
    );
    assert_eq!(
        words(lines[at + 2]),
        ["wren", "flock", "2", "agents", "colour", "#5cc46a"]
    );
    // The names line up in one column.
    let col = |l: &str, w: &str| l.find(w).unwrap();
    assert_eq!(col(lines[at], "red"), col(lines[at + 1], "hawk"), "{text}");
    assert_eq!(
        col(lines[at], "flock"),
        col(lines[at + 1], "predator"),
        "{text}"
    );
    // Without species: an empty list, and no species line.
    record_tiny(d.path(), "plain.bfs");
    assert_eq!(
        info_json(d.path(), "plain.bfs")["species"],
        serde_json::json!([])
    );
    let text = succeeds(d.path(), &["info", "plain.bfs"]).stdout;
    assert!(!text.contains("species"), "{text}");
}

#[test]
fn overrides_change_the_recording() {
    let d = tmp();
    succeeds(
        d.path(),
        &[
            "simulate", "cuplan", "--agents", "30", "--steps", "4", "--seed", "77", "-o", "c.bfs",
            "--quiet",
        ],
    );
    let v = info_json(d.path(), "c.bfs");
    assert_eq!(v["agents"], 30);
    assert_eq!(v["frames"], 5);
    assert_eq!(v["seed"], 77);
    assert_eq!(v["scene"], "cuplan");
}

/// Agents in the thread-count comparisons: above the solver's PARALLEL_MIN, below which one
/// thread does all the work whatever `--threads` says (so a comparison would prove nothing).
const THREADED_AGENTS: u32 = 7000;

/// Records `scene` once per variant of `--threads` and `--search`; every recording must be the
/// same bytes as the first (1 thread, grid).
fn same_bytes_for_threads_and_search(dir: &Path, label: &str, scene: &str) {
    write(dir, "s.json", scene);
    let variants: [&[&str]; 6] = [
        &["--threads", "1", "--search", "grid"],
        &["--threads", "2", "--search", "grid"],
        &["--threads", "3", "--search", "grid"],
        &["--threads", "1", "--search", "brute"],
        &["--threads", "2", "--search", "brute"],
        &[],
    ];
    let mut first: Option<Vec<u8>> = None;
    for extra in variants {
        let mut args = vec!["simulate", "s.json", "-o", "o.bfs", "--quiet", "--force"];
        args.extend_from_slice(extra);
        succeeds(dir, &args);
        let bytes = fs::read(dir.join("o.bfs")).unwrap();
        match &first {
            None => first = Some(bytes),
            Some(want) => assert!(
                &bytes == want,
                "{label}: {extra:?} wrote different bytes than --threads 1 --search grid"
            ),
        }
    }
}

#[test]
fn output_does_not_depend_on_threads_or_search() {
    // A tiny scene: brute force against the grid (one thread does the work at this size).
    let d = tmp();
    write(d.path(), "tiny.json", TINY);
    let mut files = Vec::new();
    for (i, extra) in [
        ["--threads", "1"],
        ["--threads", "2"],
        ["--search", "brute"],
        ["--search", "grid"],
    ]
    .iter()
    .enumerate()
    {
        let out = format!("o{i}.bfs");
        let mut args = vec!["simulate", "tiny.json", "-o", out.as_str(), "--quiet"];
        args.extend_from_slice(extra);
        succeeds(d.path(), &args);
        files.push(fs::read(d.path().join(&out)).unwrap());
    }
    for f in &files[1..] {
        assert!(f == &files[0], "recordings differ");
    }
}

#[test]
fn output_does_not_depend_on_thread_count_when_the_pool_runs() {
    assert!(
        THREADED_AGENTS as usize > forge::sim::cpu::PARALLEL_MIN,
        "THREADED_AGENTS ({THREADED_AGENTS}) must exceed PARALLEL_MIN ({}) or the pool never starts",
        forge::sim::cpu::PARALLEL_MIN
    );
    let n = THREADED_AGENTS;
    let d = tmp();
    same_bytes_for_threads_and_search(
        d.path(),
        "boids 2D",
        &format!(
            r#"{{"model": "boids", "agents": {n}, "steps": 3, "seed": 11,
               "world": {{"size": [800, 600], "boundary": "wrap"}}, "boids": {{"w_sep": 40}}}}"#
        ),
    );
    same_bytes_for_threads_and_search(
        d.path(),
        "boids 3D",
        &format!(
            r#"{{"model": "boids", "dim": 3, "agents": {n}, "steps": 3, "seed": 12,
               "world": {{"size": [200, 200, 200], "boundary": "wrap"}}, "boids": {{"w_sep": 40}}}}"#
        ),
    );
    same_bytes_for_threads_and_search(
        d.path(),
        "vicsek",
        &format!(
            r#"{{"model": "vicsek", "agents": {n}, "steps": 3, "seed": 13,
               "world": {{"size": [40, 40]}}}}"#
        ),
    );
}

#[test]
fn metrics_csv_one_row_per_frame() {
    let d = tmp();
    record_tiny(d.path(), "t.bfs");
    succeeds(d.path(), &["info", "t.bfs", "--metrics", "m.csv"]);
    assert!(!d.path().join("m.csv.partial").exists());
    let csv = fs::read_to_string(d.path().join("m.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "frame,step,time,polarization,mean_speed,nn_distance,pairwise_distance"
    );
    assert_eq!(lines.len(), 1 + 4, "{csv}");
    for (k, line) in lines[1..].iter().enumerate() {
        let cols: Vec<&str> = line.split(',').collect();
        assert_eq!(cols.len(), 7, "{line}");
        assert_eq!(cols[0], k.to_string());
        assert_eq!(cols[1], k.to_string(), "a frame every step");
        let time: f64 = cols[2].parse().unwrap();
        assert!((time - k as f64 * 0.05).abs() < 1e-6, "{line}");
        for c in &cols[3..] {
            let x: f64 = c.parse().unwrap_or_else(|_| panic!("{line}"));
            assert!(x.is_finite() && x >= 0.0, "{line}");
        }
    }
}

#[test]
fn scenes_lists_all_builtins() {
    let d = tmp();
    let out = succeeds(d.path(), &["scenes"]).stdout;
    let names: Vec<&str> = out
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [
            "cuplan",
            "murmuration",
            "murmuration-falcon",
            "murmuration-story",
            "murmuration3d",
            "obstacles",
            "plasma",
            "schooling",
            "shoal3d",
            "turbulence",
            "two-flocks",
            "vicsek",
            "vicsek-bands",
            "vicsek-hysteresis"
        ],
        "{out}"
    );
    assert!(out.contains("boids 3D"));
    assert!(out.contains("vicsek"));
}

#[test]
fn every_builtin_scene_runs() {
    let d = tmp();
    for name in [
        "turbulence",
        "murmuration",
        "schooling",
        "plasma",
        "vicsek",
        "vicsek-bands",
        "vicsek-hysteresis",
        "cuplan",
        "murmuration3d",
        "shoal3d",
        "obstacles",
        "murmuration-falcon",
        "murmuration-story",
        "two-flocks",
    ] {
        let out = format!("{name}.bfs");
        succeeds(
            d.path(),
            &[
                "simulate",
                name,
                "--agents",
                "50",
                "--steps",
                "2",
                "-o",
                out.as_str(),
                "--quiet",
            ],
        );
        let v = info_json(d.path(), &out);
        assert_eq!(v["scene"], name);
        // Frame 0, then a frame every record_every steps (vicsek-bands: every 10th).
        let every = v["record_every"].as_u64().unwrap();
        assert_eq!(v["frames"], 1 + 2 / every, "record_every {every}");
    }
}

#[test]
fn cli_definition_is_consistent() {
    use clap::CommandFactory;
    forge::cli::Cli::command().debug_assert();
}

#[test]
fn help_and_version() {
    let d = tmp();
    let out = succeeds(d.path(), &["--help"]).stdout;
    for sub in ["simulate", "info", "scenes", "bench"] {
        assert!(out.contains(sub), "{out}");
    }
    let out = succeeds(d.path(), &["--version"]).stdout;
    assert!(out.starts_with("forge "), "{out}");
}

#[test]
fn help_command_and_version_flags() {
    let d = tmp();
    let help = succeeds(d.path(), &["--help"]).stdout;
    // `forge help` is `forge --help`; `forge help SUB` is `forge SUB --help`.
    assert_eq!(succeeds(d.path(), &["help"]).stdout, help);
    assert_eq!(
        succeeds(d.path(), &["help", "render"]).stdout,
        succeeds(d.path(), &["render", "--help"]).stdout
    );
    let r = run(d.path(), &["help", "nosuchcommand"]);
    failed(&r, &["help", "nosuchcommand"]);
    has(&r.stderr, "nosuchcommand");
    // The version is the crate's (and the commit's, see below), on stdout, the same for both
    // spellings.
    let version = succeeds(d.path(), &["--version"]).stdout;
    assert!(
        version.starts_with(&format!("forge {}", env!("CARGO_PKG_VERSION"))),
        "{version}"
    );
    assert_eq!(succeeds(d.path(), &["-V"]).stdout, version);
}

/// `--version` names the commit the binary was built from, where it was built in a git
/// repository (as here, when git is installed).
#[test]
fn version_names_the_commit() {
    let head = std::process::Command::new("git")
        .args(["log", "-1", "--format=%h", "--abbrev=12"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output();
    let Some(head) = head
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    else {
        skip("version_names_the_commit: no git repository here");
        return;
    };
    let d = tmp();
    let version = succeeds(d.path(), &["--version"]).stdout;
    let want = format!("forge {} (commit {head}, ", env!("CARGO_PKG_VERSION"));
    assert!(version.starts_with(&want), "{version:?}, want {want:?}...");
}

/// `forge completions SHELL` prints a script each shell accepts, naming every command;
/// `forge man [COMMAND]` prints roff pages.
#[test]
fn completions_and_man_pages() {
    let d = tmp();
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let out = succeeds(d.path(), &["completions", shell]).stdout;
        for sub in SUBCOMMANDS {
            assert!(out.contains(sub), "{shell}: no {sub}");
        }
        assert!(out.contains("point-size"), "{shell}: no render flag");
    }
    // bash and zsh parse their scripts (`-n`: read, do not run), where installed.
    for (shell, exe) in [("bash", "bash"), ("zsh", "zsh")] {
        let script = write(
            d.path(),
            &format!("forge.{shell}"),
            &succeeds(d.path(), &["completions", shell]).stdout,
        );
        match std::process::Command::new(exe)
            .arg("-n")
            .arg(&script)
            .output()
        {
            Ok(o) => assert!(
                o.status.success(),
                "{exe} -n: {}",
                String::from_utf8_lossy(&o.stderr)
            ),
            Err(_) => skip_unless_required(
                "FORGE_REQUIRE_SHELLS",
                &format!("completions_and_man_pages: {exe} not installed (apt-get install {exe})"),
            ),
        }
    }
    let r = run(d.path(), &["completions", "tcsh"]);
    failed(&r, &["completions", "tcsh"]);
    has(&r.stderr, "tcsh");

    let page = succeeds(d.path(), &["man"]).stdout;
    assert!(page.contains(".TH forge 1"), "{page}");
    for sub in SUBCOMMANDS {
        assert!(
            page.contains(&format!("forge\\-{sub}")),
            "forge.1 lists no {sub}"
        );
        let p = succeeds(d.path(), &["man", sub]).stdout;
        assert!(p.contains(&format!(".TH forge-{sub} 1")), "{sub}: {p}");
    }
    let render = succeeds(d.path(), &["man", "render"]).stdout;
    assert!(
        render.contains("point\\-size"),
        "render's page has its flags"
    );
    let err = fails(d.path(), &["man", "rendr"]);
    has(&err, "no command \"rendr\"");
    has(&err, "render");
}

/// A misspelt built-in scene gets the name it most likely meant; a name like none gets the list.
#[test]
fn misspelt_scene_gets_a_suggestion() {
    let d = tmp();
    for (typo, meant) in [
        ("murmuratoin", "murmuration"),
        ("vicsek-band", "vicsek-bands"),
        ("Turbulence", "turbulence"),
        ("shoal3", "shoal3d"),
    ] {
        let err = fails(d.path(), &["simulate", typo]);
        has(&err, &format!("did you mean \"{meant}\"?"));
        has(&err, "built-in: turbulence");
    }
    let err = fails(d.path(), &["simulate", "qqqq"]);
    assert!(!err.contains("did you mean"), "{err}");
    has(&err, "built-in: turbulence");
}

/// On a machine without CUDA, `--backend auto` is the CPU and says nothing about it: a note
/// would change nothing.
#[test]
fn no_cuda_note_when_it_changes_nothing() {
    let d = tmp();
    let r = succeeds(
        d.path(),
        &[
            "simulate", "vicsek", "--agents", "50", "--steps", "2", "-o", "v.bfs",
        ],
    );
    assert!(!r.stderr.contains("note:"), "{}", r.stderr);
    assert!(!r.stderr.contains("CUDA"), "{}", r.stderr);
}

/// `--help`, `--version`, usage errors and the quick commands leave no private runtime folder
/// behind when `XDG_RUNTIME_DIR` is unset (forge makes one only for commands that may open a
/// GPU, and removes it on the way out).
#[test]
fn no_runtime_folder_left_behind() {
    let d = tmp();
    let scratch = tmp();
    let cases: &[&[&str]] = &[
        &["--help"],
        &["--version"],
        &["render", "--help"],
        &["render", "--bogus"],
        &["render"],
        &["still", "nosuch.bfs", "--frame", "0", "-o", "x.png"],
        &["nosuchcommand"],
        &["simulate", "vicsek", "--agents", "x"],
        &["scenes"],
        &["completions", "bash"],
        &["man"],
        &["gpus"],
    ];
    for args in cases {
        let mut c = forge(d.path());
        c.env_remove("XDG_RUNTIME_DIR")
            .env("TMPDIR", scratch.path());
        let _ = run_command(c.args(*args));
        let left = listing(scratch.path());
        assert!(left.is_empty(), "forge {args:?} left {left:?} in TMPDIR");
    }
}

/// Every subcommand `forge --help` must list.
const SUBCOMMANDS: &[&str] = &[
    "simulate", "info", "scenes", "bench", "render", "still", "gpus", "run", "demo", "sweep",
    "concat", "view",
];

/// Options that take a value and have no default: they are off, required, or override the
/// scene only when given. Every other option that takes a value shows `[default: ...]`.
const NO_DEFAULT: &[(&str, &[&str])] = &[
    ("simulate", &["--steps", "--agents", "--seed", "--every"]),
    (
        "info",
        &[
            "--metrics",
            "--plot",
            "--against",
            "--gnf-csv",
            "--gnf-plot",
        ],
    ),
    ("render", &["--png", "--chunk"]),
    ("still", &["--output"]),
    (
        "run",
        &["--steps", "--agents", "--seed", "--every", "--png"],
    ),
    ("sweep", &["--vary", "--output", "--plot", "--shard"]),
    ("concat", &["--output"]),
    ("view", &["--steps", "--agents", "--seed", "--every"]),
    ("analyze", &["--plot"]),
];

/// Concrete defaults each subcommand's help must show for the flag (besides the shared ones).
const DEFAULTS: &[(&str, &[(&str, &str)])] = &[
    (
        "simulate",
        &[
            ("--output", "SCENE_NAME.bfs"),
            ("--threads", "all cores"),
            ("--search", "auto"),
            ("--backend", "auto"),
        ],
    ),
    (
        "bench",
        &[
            ("--sizes", "1000,10000,100000,1000000"),
            ("--seconds", "0.5"),
            ("--only", "all"),
            ("--render-sizes", "1280x720,1920x1080,3840x2160"),
            ("--render-dims", "2,3"),
            ("--render-agents", "2000,100000,1000000"),
        ],
    ),
    ("render", &[("--output", ".mp4"), ("--frames", "all")]),
    ("still", &[("--frame", "0")]),
    (
        "run",
        &[("--output", "SCENE_NAME.mp4"), ("--bfs", "temporary")],
    ),
    ("demo", &[("--output", "demo.mp4")]),
    (
        "sweep",
        &[
            ("--seeds", "3"),
            ("--equilibrate", "2500"),
            ("--measure", "1500"),
            ("--jobs", "all cores"),
        ],
    ),
];

fn lookup<'a, T: ?Sized>(table: &[(&str, &'a T)], sub: &str) -> Option<&'a T> {
    table.iter().find(|(s, _)| *s == sub).map(|(_, v)| *v)
}

#[test]
fn every_subcommand_documents_its_flags_and_defaults() {
    let d = tmp();
    let subs = help_commands(&succeeds(d.path(), &["--help"]).stdout);
    for want in SUBCOMMANDS {
        assert!(
            subs.iter().any(|s| s == want),
            "forge --help does not list {want}: {subs:?}"
        );
    }
    let mut faults = Vec::new();
    for sub in &subs {
        let help = succeeds(d.path(), &[sub, "--help"]).stdout;
        assert!(
            help.contains(&format!("Usage: forge {sub}")),
            "forge {sub} --help:\n{help}"
        );
        let options = help_options(&help);
        assert!(
            options.iter().any(|o| o.long == "--help"),
            "forge {sub} --help lists no options (parse error?):\n{help}"
        );
        let no_default = lookup(NO_DEFAULT, sub).unwrap_or(&[]);
        for o in &options {
            if o.text.is_empty() {
                faults.push(format!("{sub} {}: no description", o.head));
            }
            if o.takes_value && o.default().is_none() && !no_default.contains(&o.long.as_str()) {
                faults.push(format!(
                    "{sub} {}: takes a value but shows no [default: ...] (or add it to NO_DEFAULT)",
                    o.head
                ));
            }
        }
        let mut concrete: Vec<(&str, &str)> = lookup(DEFAULTS, sub).unwrap_or(&[]).to_vec();
        if ["render", "still", "run"].contains(&sub.as_str()) {
            concrete.extend_from_slice(LOOK_DEFAULTS);
        }
        if ["render", "run"].contains(&sub.as_str()) {
            concrete.extend_from_slice(VIDEO_DEFAULTS);
        }
        for (flag, value) in concrete {
            match options.iter().find(|o| o.long == flag) {
                None => faults.push(format!("{sub}: no {flag} in --help")),
                Some(o) => match o.default() {
                    Some(d) if d.contains(value) => {}
                    Some(d) => {
                        faults.push(format!("{sub} {flag}: [default: {d}] does not say {value}"))
                    }
                    None => faults.push(format!("{sub} {flag}: no [default: ...], want {value}")),
                },
            }
        }
    }
    assert!(faults.is_empty(), "--help texts:\n{}", faults.join("\n"));
}

#[test]
fn init_from_a_boidforge_bfs1_file() {
    let d = tmp();
    // Two frames of 3 boids in BoidForge's default world; start from the last one.
    let frames = vec![
        (
            0,
            vec![10.0, 20.0, 30.0],
            vec![40.0, 50.0, 60.0],
            vec![1.0, 0.0, -1.0],
            vec![0.0, 1.0, 0.0],
        ),
        (
            1,
            vec![11.0, 21.0, 31.0],
            vec![41.0, 51.0, 61.0],
            vec![50.0, 60.0, -70.0],
            vec![5.0, 6.0, 7.0],
        ),
    ];
    let f = fs::File::create(d.path().join("boidforge.bfs")).unwrap();
    forge::bfs::write_bfs1(f, 0.05, 7, 3, &frames, true).unwrap();
    write(
        d.path(),
        "from.json",
        r#"{"preset": "boidforge", "steps": 0, "init": {"layout": "file", "path": "boidforge.bfs"}}"#,
    );
    succeeds(
        d.path(),
        &["simulate", "from.json", "-o", "out.bfs", "--quiet"],
    );
    let mut r = forge::bfs::Reader::open(&d.path().join("out.bfs")).unwrap();
    assert_eq!(r.header().agents, 3);
    let f0 = r.read_frame(0).unwrap();
    assert_eq!(f0.pos, vec![11.0, 21.0, 31.0, 41.0, 51.0, 61.0]);
    assert_eq!(f0.vel, vec![50.0, 60.0, -70.0, 5.0, 6.0, 7.0]);
    // And `info` reads the BFS1 file itself, saying the world was inferred.
    let Run {
        stdout: out,
        stderr: err,
        ..
    } = succeeds(d.path(), &["info", "boidforge.bfs"]);
    assert!(
        out.contains("BoidForge BFS1") && out.contains("(inferred)"),
        "{out}"
    );
    assert!(err.contains("BFS1 stores no world size"), "{err}");
}

/// `"warmup": W` simulates W steps before the first recorded frame: the recording is the tail
/// of the one without a warm-up, bit for bit, from step W on.
#[test]
fn a_warm_up_is_simulated_not_recorded() {
    let d = tmp();
    let scene = |name: &str, warmup: u64, steps: u64| {
        write(
            d.path(),
            name,
            &format!(
                r#"{{"preset": "boidforge", "agents": 300, "seed": 5, "record_every": 5,
                    "warmup": {warmup}, "steps": {steps}}}"#
            ),
        );
    };
    scene("w.json", 30, 20);
    scene("n.json", 0, 50);
    succeeds(d.path(), &["simulate", "w.json", "-o", "w.bfs", "-q"]);
    succeeds(d.path(), &["simulate", "n.json", "-o", "n.bfs", "-q"]);
    let mut w = forge::bfs::Reader::open(&d.path().join("w.bfs")).unwrap();
    let mut n = forge::bfs::Reader::open(&d.path().join("n.bfs")).unwrap();
    assert_eq!(w.frame_count(), 5);
    assert_eq!(n.frame_count(), 11);
    let (mut a, mut b) = (forge::bfs::Frame::empty(), forge::bfs::Frame::empty());
    for k in 0..5 {
        w.read_frame_into(k, &mut a).unwrap();
        n.read_frame_into(k + 6, &mut b).unwrap();
        assert_eq!(a.step, 30 + 5 * k);
        assert_eq!(a.step, b.step);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&a.pos), bits(&b.pos), "frame {k}");
        assert_eq!(bits(&a.vel), bits(&b.vel), "frame {k}");
    }
    write(
        d.path(),
        "bad.json",
        r#"{"preset": "boidforge", "warmup": -3}"#,
    );
    let err = fails(d.path(), &["simulate", "bad.json", "-o", "bad.bfs"]);
    has(&err, "scene.warmup");
}

/// A scene where a recording goes (a built-in name, with or without `.json`, or a scene
/// file) fails naming it and the command that makes a recording of it; a missing file that is
/// no scene gets no such hint. No command reads past the open.
#[test]
fn a_scene_given_where_a_recording_goes_says_how_to_make_one() {
    let d = tmp();
    write(
        d.path(),
        "mine.json",
        r#"  {"model": "boids", "agents": 10}"#,
    );
    for args in [
        &["render", "murmuration"][..],
        &["still", "murmuration.json", "--frame", "0", "-o", "x.png"],
        &["info", "vicsek"],
        &["export", "cuplan", "-o", "x.npz"],
    ] {
        let err = fails(d.path(), args);
        has(&err, "is a built-in scene, not a recording");
        has(&err, "`forge run ");
        no_output(d.path(), "x.png");
    }
    for args in [
        &["render", "mine.json"][..],
        &["info", "mine.json"],
        &["still", "mine.json", "--frame", "0", "-o", "x.png"],
    ] {
        let err = fails(d.path(), args);
        has(
            &err,
            "mine.json: it is a scene file (JSON), not a recording",
        );
        has(&err, "`forge run mine.json`");
    }
    let err = fails(d.path(), &["render", "nosuch.bfs"]);
    has(&err, "cannot open nosuch.bfs");
    assert!(
        !err.contains("built-in"),
        "no hint for a file that is no scene:\n{err}"
    );
}

/// A value of the wrong type is named in the user's words, never Rust's (`i64`, `f64`).
#[test]
fn wrong_types_in_plain_words() {
    let d = tmp();
    for (field, value, words) in [
        (
            "agents",
            "1.5",
            "invalid type: the number `1.5`, expected a whole number",
        ),
        (
            "agents",
            "\"many\"",
            "invalid type: string \"many\", expected a whole number",
        ),
        ("seed", "-1", "expected a whole number, 0 or more"),
        (
            "dt",
            "\"x\"",
            "invalid type: string \"x\", expected a number",
        ),
    ] {
        let s = write(
            d.path(),
            "t.json",
            &format!("{{\"preset\": \"vicsek1995\", \"{field}\": {value}}}"),
        );
        let err = fails(d.path(), &["simulate", s.to_str().unwrap(), "-o", "t.bfs"]);
        has(&err, &format!("scene.{field}: "));
        has(&err, words);
        for rust in ["i64", "u64", "u32", "f64", "f32", "floating point"] {
            assert!(!err.contains(rust), "{err}");
        }
    }
}

/// `forge render --help` groups its flags under headings and ends with examples, each of which
/// names only flags the command has.
#[test]
fn render_help_is_grouped_with_examples() {
    let d = tmp();
    for args in [&["render", "--help"][..], &["render", "-h"]] {
        let help = succeeds(d.path(), args).stdout;
        for heading in [
            "Options:",
            "Video:",
            "Frame:",
            "Colour:",
            "Agents and light:",
            "Background and grading:",
            "Overlays:",
            "2D view:",
            "3D camera:",
            "Look file and GPU:",
            "Examples:",
        ] {
            assert!(
                help.lines()
                    .any(|l| l.trim_end() == heading || l.starts_with(heading)),
                "{args:?}: no {heading}\n{help}"
            );
        }
        let flags: Vec<String> = help_options(&help).into_iter().map(|o| o.long).collect();
        let examples = help.split("Examples:").nth(1).unwrap();
        for line in examples
            .lines()
            .filter(|l| l.trim_start().starts_with("forge render"))
        {
            for word in line.split_whitespace().filter(|w| w.starts_with("--")) {
                assert!(
                    flags.iter().any(|f| f == word),
                    "example flag {word} unknown"
                );
            }
        }
    }
}

/// `--every K` is the scene's `record_every`: a frame at the start and every K steps, stored in
/// the recording; 0 and a recording (for `view`) are refused naming the flag.
#[test]
fn every_records_a_frame_every_k_steps() {
    let d = tmp();
    succeeds(
        d.path(),
        &[
            "simulate", "cuplan", "--steps", "12", "--every", "4", "-o", "e.bfs", "-q",
        ],
    );
    let v = info_json(d.path(), "e.bfs");
    assert_eq!(v["record_every"], 4, "{v}");
    assert_eq!(v["frames"], 4, "{v}");
    assert_eq!(v["scene_json"]["record_every"], 4, "{v}");
    // The same bytes as the scene field's.
    let s = write(
        d.path(),
        "e.json",
        r#"{"preset": "cuplan", "agents": 40, "steps": 12, "record_every": 4}"#,
    );
    let s = s.to_str().unwrap();
    succeeds(d.path(), &["simulate", s, "-o", "f.bfs", "-q"]);
    succeeds(
        d.path(),
        &["simulate", s, "--every", "4", "-o", "g.bfs", "-q"],
    );
    assert!(
        std::fs::read(d.path().join("f.bfs")).unwrap()
            == std::fs::read(d.path().join("g.bfs")).unwrap()
    );
    let err = fails(
        d.path(),
        &["simulate", "cuplan", "--every", "0", "-o", "z.bfs"],
    );
    has(&err, "--every: must be in 1..=");
    let err = fails(d.path(), &["view", "e.bfs", "--every", "2"]);
    has(&err, "--every: applies to a scene");
}
