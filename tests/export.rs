//! `forge export` through the real binary, read back by real NumPy: every array of the `.npz`
//! against forge's own reader (sha-256 of the bytes of every float, so the round trip is
//! exact), with `--frames` and `--every`, in 2D and 3D; the guide's (docs/src/data-out.md) two `numpy.load` lines
//! and its `numpy.memmap` recipe run as written; CSV rows and values; BoidForge files whose
//! agent count changes; bad inputs; SIGINT and SIGTERM; and an export running under a memory
//! limit (`ulimit -d`) well below the size of its recording.
//!
//! NumPy comes from pip when it is missing; without it the NumPy checks skip with a printed
//! line, or fail when `FORGE_REQUIRE_NUMPY=1` (set by scripts/test.sh).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use forge::bfs::{self, Header, Reader, SourceFormat};
use forge::metrics::{self, Space};
use forge::scene::{Boundary, Model};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::common;

use common::*;

// ---------------------------------------------------------------------------------------
// Python and NumPy
// ---------------------------------------------------------------------------------------

fn python_ok(code: &str) -> bool {
    Command::new("python3")
        .args(["-c", code])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// True if `python3` can import NumPy (installed with pip when missing); otherwise skips,
/// or fails when `FORGE_REQUIRE_NUMPY=1`.
fn have_numpy(test: &str) -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    let present = *PRESENT.get_or_init(|| {
        if python_ok("import numpy") {
            return true;
        }
        let _ = Command::new("python3")
            .args(["-m", "pip", "install", "-q", "numpy"])
            .output();
        python_ok("import numpy")
    });
    if !present {
        if std::env::var("FORGE_REQUIRE_NUMPY").is_ok_and(|v| v == "1") {
            panic!(
                "{test}: FORGE_REQUIRE_NUMPY=1 but python3 cannot import numpy (pip install numpy)"
            );
        }
        skip(&format!(
            "{test}: python3 with numpy is missing (python3 -m pip install numpy)"
        ));
    }
    present
}

/// Runs a Python script with arguments; its stdout parsed as JSON.
fn python_json(script: &str, args: &[&Path]) -> Value {
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "python failed:\n{script}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("python printed no JSON ({e}):\n{text}"))
}

/// Loads an .npz with `numpy.load` alone (no pickle) and describes every array: dtype, shape,
/// sha-256 of its C-order bytes, and the integer arrays and the scene in full.
const DESCRIBE_NPZ: &str = r#"
import hashlib, json, sys
import numpy as np
d = np.load(sys.argv[1], allow_pickle=False)
out = {"files": sorted(d.files)}
for k in d.files:
    a = d[k]
    out[k] = {"dtype": a.dtype.str, "shape": list(a.shape),
              "sha": hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()}
out["frame_values"] = d["frame"].tolist()
out["step_values"] = d["step"].tolist()
out["scene_text"] = str(d["scene"])
print(json.dumps(out))
"#;

/// A fenced `python` block of the guide's Data out chapter that contains `needle`.
fn readme_python(needle: &str) -> String {
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/data-out.md");
    let readme = fs::read_to_string(&page).expect("docs/src/data-out.md");
    readme
        .split("```python\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .find(|b| b.contains(needle))
        .unwrap_or_else(|| panic!("docs/src/data-out.md has no ```python block with {needle:?}"))
        .to_string()
}

/// A Python string literal of `p`.
fn py_str(p: &Path) -> String {
    serde_json::to_string(&p.to_string_lossy()).unwrap()
}

// ---------------------------------------------------------------------------------------
// What forge's reader says
// ---------------------------------------------------------------------------------------

fn sha_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The arrays an export of `frames` of `file` must hold, from forge's reader: for each name,
/// (dtype, shape, sha-256 of the bytes).
struct Expected {
    arrays: Vec<(&'static str, String, Vec<u64>, String)>,
    frames: Vec<u64>,
    steps: Vec<u64>,
    scene: String,
}

fn expected(file: &Path, frames: &[u64], with_metrics: bool) -> Expected {
    let mut r = Reader::open(file).unwrap();
    let h = r.header().clone();
    let dim = h.dim as usize;
    let space = Space {
        dim,
        world: h.world_size,
        wrap: h.boundary == Boundary::Wrap,
    };
    let (mut pos, mut vel) = (Vec::<u8>::new(), Vec::<u8>::new());
    let mut steps = Vec::new();
    let mut f64s: [Vec<u8>; 5] = Default::default();
    let mut n = 0;
    for &k in frames {
        let f = r.read_frame(k).unwrap();
        n = f.agents(dim);
        for i in 0..n {
            for c in 0..dim {
                pos.extend(f.pos[c * n + i].to_le_bytes());
                vel.extend(f.vel[c * n + i].to_le_bytes());
            }
        }
        let m = metrics::frame_metrics(&space, n, &f.pos, &f.vel);
        let time = f.step as f64 * h.dt as f64;
        for (buf, x) in f64s.iter_mut().zip([
            time,
            m.polarization,
            m.mean_speed,
            m.nn_distance,
            m.pairwise_distance,
        ]) {
            buf.extend(x.to_le_bytes());
        }
        steps.push(f.step);
    }
    let nf = frames.len() as u64;
    let ints =
        |v: &[u64]| -> Vec<u8> { v.iter().flat_map(|x| (*x as i64).to_le_bytes()).collect() };
    let world: Vec<u8> = h.world_size[..dim]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let shape3 = vec![nf, n as u64, dim as u64];
    let mut arrays = vec![
        ("pos", "<f4".to_string(), shape3.clone(), sha_hex(&pos)),
        ("vel", "<f4".to_string(), shape3, sha_hex(&vel)),
        ("frame", "<i8".to_string(), vec![nf], sha_hex(&ints(frames))),
        ("step", "<i8".to_string(), vec![nf], sha_hex(&ints(&steps))),
        (
            "world",
            "<f4".to_string(),
            vec![dim as u64],
            sha_hex(&world),
        ),
    ];
    for (name, buf) in [
        "time",
        "polarization",
        "mean_speed",
        "nn_distance",
        "pairwise_distance",
    ]
    .into_iter()
    .zip(&f64s)
    .take(if with_metrics { 5 } else { 1 })
    {
        arrays.push((name, "<f8".to_string(), vec![nf], sha_hex(buf)));
    }
    Expected {
        arrays,
        frames: frames.to_vec(),
        steps,
        scene: h.scene_json,
    }
}

/// Checks NumPy's description of an export against forge's reader.
fn check_npz(npz: &Path, file: &Path, frames: &[u64]) {
    check_npz_with(npz, file, frames, true)
}

fn check_npz_with(npz: &Path, file: &Path, frames: &[u64], with_metrics: bool) {
    let got = python_json(DESCRIBE_NPZ, &[npz]);
    let want = expected(file, frames, with_metrics);
    let mut names: Vec<&str> = want.arrays.iter().map(|a| a.0).collect();
    names.push("scene");
    names.sort();
    assert_eq!(got["files"], serde_json::json!(names), "{}", npz.display());
    for (name, dtype, shape, sha) in &want.arrays {
        let g = &got[*name];
        assert_eq!(g["dtype"], *dtype, "{name} of {}", npz.display());
        assert_eq!(
            g["shape"],
            serde_json::json!(shape),
            "{name} of {}",
            npz.display()
        );
        assert_eq!(
            g["sha"],
            *sha,
            "{name} of {}: the bytes differ from forge's reader",
            npz.display()
        );
    }
    assert_eq!(got["frame_values"], serde_json::json!(want.frames));
    assert_eq!(got["step_values"], serde_json::json!(want.steps));
    assert!(
        got["scene"]["dtype"].as_str().unwrap().starts_with("<U"),
        "{}",
        got["scene"]
    );
    assert_eq!(got["scene"]["shape"], serde_json::json!([]));
    assert_eq!(got["scene_text"], want.scene);
}

// ---------------------------------------------------------------------------------------
// Recordings
// ---------------------------------------------------------------------------------------

/// 30 agents in 2D (wrap) and 3D (reflect), 12 steps: 13 frames each.
const SCENE_2D: &str = r#"{
  "name": "export2d", "model": "boids", "agents": 30, "steps": 12, "seed": 7,
  "world": { "size": [120, 80], "boundary": "wrap" }
}"#;
const SCENE_3D: &str = r#"{
  "name": "export3d", "model": "boids", "dim": 3, "agents": 30, "steps": 12, "seed": 8,
  "world": { "size": [100, 70, 60], "boundary": "reflect" }
}"#;

/// Simulates `scene` into `dir/name`.
fn simulate(dir: &Path, scene: &str, name: &str) -> PathBuf {
    let json = format!("{name}.json");
    write(dir, &json, scene);
    succeeds(dir, &["simulate", &json, "-o", name, "--quiet"]);
    dir.join(name)
}

fn synthetic_header(dim: u8, agents: u32) -> Header {
    Header {
        version: bfs::VERSION,
        dim,
        model: Model::Boids,
        boundary: Boundary::Wrap,
        agents,
        dt: 0.05,
        seed: 1,
        record_every: 1,
        world_size: [1000.0, 1000.0, if dim == 3 { 1000.0 } else { 0.0 }],
        scene_name: "synthetic".into(),
        scene_json: r#"{"name":"synthetic"}"#.into(),
        frame_count: None,
        source: SourceFormat::Forge,
        world_inferred: false,
        species: Vec::new(),
    }
}

/// A valid recording of `frames` frames of `agents` agents in 3D, written directly (fast):
/// positions and velocities vary by frame and agent.
fn synthetic(path: &Path, agents: u32, frames: u64) {
    let h = synthetic_header(3, agents);
    let file = fs::File::create(path).unwrap();
    let mut w = bfs::Writer::new(std::io::BufWriter::new(file), &h).unwrap();
    let m = 3 * agents as usize;
    let mut pos = vec![0f32; m];
    let mut vel = vec![0f32; m];
    for k in 0..frames {
        for (i, (p, v)) in pos.iter_mut().zip(vel.iter_mut()).enumerate() {
            let x = (i as u64).wrapping_mul(2654435761).wrapping_add(k * 97) % 100_000;
            *p = x as f32 / 100.0;
            *v = (x % 1000) as f32 / 100.0 - 5.0;
        }
        w.write_frame(k * 2, &pos, &vel).unwrap();
    }
    w.finalize().unwrap();
}

// ---------------------------------------------------------------------------------------
// .npz
// ---------------------------------------------------------------------------------------

#[test]
fn npz_matches_the_reader_in_2d_and_3d() {
    if !have_numpy("npz_matches_the_reader_in_2d_and_3d") {
        return;
    }
    let d = tmp();
    for (scene, name) in [(SCENE_2D, "r2.bfs"), (SCENE_3D, "r3.bfs")] {
        let file = simulate(d.path(), scene, name);
        assert_eq!(Reader::open(&file).unwrap().frame_count(), 13);
        let stem = name.trim_end_matches(".bfs");

        // Every frame, to the default name (FILE with .npz).
        let r = succeeds(d.path(), &["export", name]);
        let dim = if name == "r2.bfs" { 2 } else { 3 };
        has(&r.stderr, &format!("13 frames x 30 agents ({dim}D)"));
        has(&r.stderr, &format!("{stem}.npz"));
        check_npz(
            &d.path().join(format!("{stem}.npz")),
            &file,
            &(0..13).collect::<Vec<_>>(),
        );

        // A range, every 3rd frame.
        let out = format!("{stem}-part.npz");
        succeeds(
            d.path(),
            &[
                "export", name, "-o", &out, "--frames", "2..11", "--every", "3", "--quiet",
            ],
        );
        check_npz(&d.path().join(&out), &file, &[2, 5, 8]);

        // Open-ended ranges.
        let out = format!("{stem}-tail.npz");
        succeeds(
            d.path(),
            &["export", name, "-o", &out, "--frames", "10..", "-q"],
        );
        check_npz(&d.path().join(&out), &file, &[10, 11, 12]);
        let out = format!("{stem}-head.npz");
        succeeds(
            d.path(),
            &[
                "export", name, "-o", &out, "--frames", "..2", "--every", "5", "-q",
            ],
        );
        check_npz(&d.path().join(&out), &file, &[0]);

        // Without the metrics.
        let out = format!("{stem}-lean.npz");
        succeeds(
            d.path(),
            &[
                "export",
                name,
                "-o",
                &out,
                "--no-metrics",
                "--every",
                "4",
                "-q",
            ],
        );
        check_npz_with(&d.path().join(&out), &file, &[0, 4, 8, 12], false);
    }
    no_partials(d.path());
}

#[test]
fn npz_of_a_recording_cut_short_holds_its_complete_frames() {
    if !have_numpy("npz_of_a_recording_cut_short_holds_its_complete_frames") {
        return;
    }
    let d = tmp();
    let file = simulate(d.path(), SCENE_2D, "cut.bfs");
    let bytes = fs::read(&file).unwrap();
    let (header_len, frame_size) = bfs_layout(&bytes, 2, 30);
    // 5 complete frames and half of the 6th.
    fs::write(
        &file,
        &bytes[..header_len + 5 * frame_size + frame_size / 2],
    )
    .unwrap();
    let r = succeeds(d.path(), &["export", "cut.bfs", "-o", "cut.npz"]);
    has(&r.stderr, "warning");
    check_npz(&d.path().join("cut.npz"), &file, &[0, 1, 2, 3, 4]);
}

#[test]
fn the_same_recording_exports_to_the_same_bytes() {
    let d = tmp();
    simulate(d.path(), SCENE_3D, "r.bfs");
    succeeds(d.path(), &["export", "r.bfs", "-o", "a.npz", "-q"]);
    succeeds(d.path(), &["export", "r.bfs", "-o", "b.npz", "-q"]);
    let a = fs::read(d.path().join("a.npz")).unwrap();
    assert_eq!(a, fs::read(d.path().join("b.npz")).unwrap());
    // Stored entries, like numpy.savez: a zip whose pos.npy holds the raw float32.
    assert_eq!(&a[..4], b"PK\x03\x04");
}

#[test]
fn readme_numpy_load_lines_run_as_written() {
    if !have_numpy("readme_numpy_load_lines_run_as_written") {
        return;
    }
    let d = tmp();
    simulate(d.path(), SCENE_3D, "run.bfs");
    succeeds(d.path(), &["export", "run.bfs", "-o", "run.npz", "-q"]);
    let snippet = readme_python("np.load(\"run.npz\")");
    let npz = d.path().join("run.npz");
    let script = format!(
        "{}\nimport json\nprint(json.dumps(list(d[\"pos\"].shape)))\n",
        snippet.replace("\"run.npz\"", &py_str(&npz))
    );
    assert_eq!(python_json(&script, &[]), serde_json::json!([13, 30, 3]));
}

/// The guide's memmap recipe (docs/src/data-out.md), run as written on a forge recording, against the reader.
fn check_memmap_recipe(file: &Path) {
    let snippet = readme_python("np.memmap(path");
    let script = format!(
        "{}\nimport hashlib, json\n\
         sha = lambda a: hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()\n\
         print(json.dumps({{\"count\": int(count), \"pos\": sha(pos), \"vel\": sha(vel),\n\
         \"shape\": list(pos.shape), \"step\": f[\"step\"].tolist(), \"index\": f[\"index\"].tolist(),\n\
         \"time\": sha(time.astype(\"<f8\")), \"tags\": sorted(set(t.decode() for t in f[\"tag\"]))}}))\n",
        snippet.replace("\"run.bfs\"", &py_str(file))
    );
    let got = python_json(&script, &[]);
    let r = Reader::open(file).unwrap();
    let count = r.frame_count();
    let dim = r.header().dim as u64;
    let n = r.header().agents as u64;
    let frames: Vec<u64> = (0..count).collect();
    let want = expected(file, &frames, true);
    let sha_of = |name: &str| want.arrays.iter().find(|a| a.0 == name).unwrap().3.clone();
    assert_eq!(got["count"], count, "{}", file.display());
    assert_eq!(got["shape"], serde_json::json!([count, n, dim]));
    assert_eq!(got["pos"], sha_of("pos"), "memmap positions differ");
    assert_eq!(got["vel"], sha_of("vel"), "memmap velocities differ");
    assert_eq!(got["time"], sha_of("time"), "memmap times differ");
    assert_eq!(got["step"], serde_json::json!(want.steps));
    assert_eq!(got["index"], serde_json::json!(frames));
    assert_eq!(got["tags"], serde_json::json!(["FRM1"]));
}

#[test]
fn readme_memmap_recipe_matches_the_reader() {
    if !have_numpy("readme_memmap_recipe_matches_the_reader") {
        return;
    }
    let d = tmp();
    for (scene, name) in [(SCENE_2D, "m2.bfs"), (SCENE_3D, "m3.bfs")] {
        let file = simulate(d.path(), scene, name);
        check_memmap_recipe(&file);
        // Cut short (not finalized, as after a crash): the complete frames.
        let bytes = fs::read(&file).unwrap();
        let dim = if name == "m2.bfs" { 2 } else { 3 };
        let (header_len, frame_size) = bfs_layout(&bytes, dim, 30);
        let mut cut = bytes[..header_len + 7 * frame_size + 10].to_vec();
        cut[52..60].copy_from_slice(&u64::MAX.to_le_bytes());
        let cut_file = d.path().join(format!("cut-{name}"));
        fs::write(&cut_file, &cut).unwrap();
        assert_eq!(Reader::open(&cut_file).unwrap().frame_count(), 7);
        check_memmap_recipe(&cut_file);
    }
}

// ---------------------------------------------------------------------------------------
// .csv
// ---------------------------------------------------------------------------------------

/// Checks every row of a CSV export against the reader, values parsed back exactly.
fn check_csv(csv: &Path, file: &Path, frames: &[u64]) {
    let text = fs::read_to_string(csv).unwrap();
    let mut r = Reader::open(file).unwrap();
    let h = r.header().clone();
    let dim = h.dim as usize;
    let mut lines = text.lines();
    let head = if dim == 2 {
        "frame,step,time,agent,x,y,vx,vy"
    } else {
        "frame,step,time,agent,x,y,z,vx,vy,vz"
    };
    assert_eq!(lines.next(), Some(head));
    let mut rows = 0;
    for &k in frames {
        let f = r.read_frame(k).unwrap();
        let n = f.agents(dim);
        for i in 0..n {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("frame {k}: too few rows"));
            let v: Vec<&str> = line.split(',').collect();
            assert_eq!(v.len(), 4 + 2 * dim, "{line}");
            assert_eq!(v[0].parse::<u64>().unwrap(), k, "{line}");
            assert_eq!(v[1].parse::<u64>().unwrap(), f.step, "{line}");
            let time: f64 = v[2].parse().unwrap();
            assert_eq!(time.to_bits(), (f.step as f64 * h.dt as f64).to_bits());
            assert_eq!(v[3].parse::<usize>().unwrap(), i, "{line}");
            for c in 0..dim {
                let p: f32 = v[4 + c].parse().unwrap();
                let q: f32 = v[4 + dim + c].parse().unwrap();
                assert_eq!(p.to_bits(), f.pos[c * n + i].to_bits(), "{line}");
                assert_eq!(q.to_bits(), f.vel[c * n + i].to_bits(), "{line}");
            }
            rows += 1;
        }
    }
    assert_eq!(lines.next(), None, "rows after the last frame");
    assert_eq!(text.lines().count(), rows + 1);
}

#[test]
fn csv_has_one_exact_row_per_agent_per_frame() {
    let d = tmp();
    for (scene, name) in [(SCENE_2D, "c2.bfs"), (SCENE_3D, "c3.bfs")] {
        let file = simulate(d.path(), scene, name);
        let stem = name.trim_end_matches(".bfs");
        let out = format!("{stem}.csv");
        succeeds(d.path(), &["export", name, "-o", &out]);
        check_csv(&d.path().join(&out), &file, &(0..13).collect::<Vec<_>>());
        assert_eq!(
            fs::read_to_string(d.path().join(&out))
                .unwrap()
                .lines()
                .count(),
            13 * 30 + 1
        );
        let out = format!("{stem}-part.CSV");
        succeeds(
            d.path(),
            &[
                "export", name, "-o", &out, "--frames", "3..9", "--every", "2", "-q",
            ],
        );
        check_csv(&d.path().join(&out), &file, &[3, 5, 7]);
    }
}

/// A recording that claims `frames` frames of `agents` agents in 3D without storing them: a
/// sparse file of the right length (every frame fails its checksum).
fn sparse_recording(path: &Path, agents: u32, frames: u64) {
    let h = synthetic_header(3, agents);
    let w = bfs::Writer::new(fs::File::create(path).unwrap(), &h).unwrap();
    drop(w);
    let header_len = fs::metadata(path).unwrap().len();
    let frame_size = 24 + 24 * agents as u64;
    fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(header_len + frames * frame_size)
        .unwrap();
}

#[test]
fn csv_is_refused_above_its_size_and_npz_suggested() {
    let d = tmp();
    // 11 frames of a million agents: 11 million rows (a sparse file, nothing read).
    sparse_recording(&d.path().join("big.bfs"), 1_000_000, 11);
    let err = fails_cleanly(
        d.path(),
        &["export", "big.bfs", "-o", "big.csv"],
        &["11000000", ".npz", "--frames"],
        &["big.csv"],
    );
    has(&err, "10000000");
    // Fewer frames are within the limit; then the unreadable frame is named.
    let err = fails_cleanly(
        d.path(),
        &["export", "big.bfs", "-o", "big.csv", "--frames", "3..5"],
        &["frame 3", "corrupt", "big.bfs"],
        &["big.csv"],
    );
    assert!(!err.contains("rows"), "{err}");
}

// ---------------------------------------------------------------------------------------
// BoidForge BFS1
// ---------------------------------------------------------------------------------------

#[test]
fn bfs1_with_a_changing_agent_count_goes_to_csv_only() {
    let d = tmp();
    let frame = |ts: i32, n: usize| -> bfs::Bfs1Frame {
        let v = |o: f32| (0..n).map(|i| o + i as f32).collect::<Vec<f32>>();
        (ts, v(10.0), v(20.0), v(1.0), v(-1.0))
    };
    let frames = vec![
        frame(0, 4),
        frame(1, 4),
        frame(2, 4),
        frame(3, 6),
        frame(4, 6),
    ];
    let p = d.path().join("bf.bfs");
    bfs::write_bfs1(fs::File::create(&p).unwrap(), 0.1, 3, 8, &frames, true).unwrap();

    let err = fails_cleanly(
        d.path(),
        &["export", "bf.bfs", "-o", "bf.npz"],
        &["frame 3 has 6 agents", "frame 0 has 4", ".csv", "--frames"],
        &["bf.npz"],
    );
    assert!(!err.contains("panicked"), "{err}");
    // A range in which the count holds exports.
    succeeds(
        d.path(),
        &["export", "bf.bfs", "-o", "a.npz", "--frames", "0..3", "-q"],
    );
    succeeds(
        d.path(),
        &["export", "bf.bfs", "-o", "b.npz", "--frames", "3..", "-q"],
    );
    // CSV takes any count, and so does extended XYZ (a count per block).
    succeeds(d.path(), &["export", "bf.bfs", "-o", "bf.csv", "-q"]);
    check_csv(&d.path().join("bf.csv"), &p, &[0, 1, 2, 3, 4]);
    succeeds(d.path(), &["export", "bf.bfs", "-o", "bf.xyz", "-q"]);
    let xyz = fs::read_to_string(d.path().join("bf.xyz")).unwrap();
    let counts: Vec<usize> = xyz
        .lines()
        .filter(|l| !l.contains(' '))
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(counts, [4, 4, 4, 6, 6], "{xyz}");
    // Frame 3, agent 5: x = 10 + 5, y = 20 + 5, vx = 1 + 5, vy = -1 + 5, z and vz 0.
    let block3: Vec<&str> = xyz.lines().skip(3 * 6).take(8).collect();
    assert!(block3[1].contains("Frame=3"), "{xyz}");
    assert_eq!(block3[7], "boid 15 25 0 6 4 0 5 0", "{xyz}");
    // USD: ids sampled per frame as the points are, each frame's ids as many as its points.
    succeeds(d.path(), &["export", "bf.bfs", "-o", "bf.usda", "-q"]);
    let usda = fs::read_to_string(d.path().join("bf.usda")).unwrap();
    let samples = |attr: &str| -> Vec<usize> {
        let at = usda
            .find(&format!("{attr}.timeSamples = {{"))
            .unwrap_or_else(|| panic!("no {attr} samples:\n{usda}"));
        let body = &usda[at..at + usda[at..].find("        }").unwrap()];
        // Each sample's values: points are "(x, y, z)" each, ids plain numbers.
        let count = |l: &str| {
            let inner = &l[l.find('[').unwrap() + 1..l.rfind(']').unwrap()];
            match inner.contains('(') {
                true => inner.matches('(').count(),
                false => inner.split(',').filter(|x| !x.trim().is_empty()).count(),
            }
        };
        body.lines().skip(1).map(count).collect()
    };
    let points = samples("point3f[] points");
    let ids = samples("int64[] ids");
    assert_eq!(points, [4, 4, 4, 6, 6], "{usda}");
    assert_eq!(ids, points, "{usda}");
    if have_numpy("bfs1_with_a_changing_agent_count_goes_to_csv_only") {
        check_npz(&d.path().join("a.npz"), &p, &[0, 1, 2]);
        check_npz(&d.path().join("b.npz"), &p, &[3, 4]);
    }
}

// ---------------------------------------------------------------------------------------
// Bad inputs
// ---------------------------------------------------------------------------------------

#[test]
fn bad_inputs_fail_cleanly_and_touch_nothing() {
    let d = tmp();
    let file = simulate(d.path(), SCENE_2D, "in.bfs");
    let input = fs::read(&file).unwrap();

    // An existing output: refused without --force, left as it was; replaced with it.
    write(d.path(), "old.npz", "keep me");
    write(d.path(), "old.csv", "keep me");
    write(d.path(), "old.usda", "keep me");
    for out in ["old.npz", "old.csv", "old.usda"] {
        fails_cleanly(
            d.path(),
            &["export", "in.bfs", "-o", out],
            &[out, "already exists", "--force"],
            &[],
        );
        assert_eq!(fs::read_to_string(d.path().join(out)).unwrap(), "keep me");
        succeeds(d.path(), &["export", "in.bfs", "-o", out, "--force", "-q"]);
        assert_ne!(
            fs::read_to_string(d.path().join(out)).ok().as_deref(),
            Some("keep me")
        );
    }

    // The output is the input: under its own name, through a symbolic link, a hard link, and
    // with --force.
    fs::copy(&file, d.path().join("in.npz")).unwrap();
    std::os::unix::fs::symlink(d.path().join("in.npz"), d.path().join("link.npz")).unwrap();
    fs::hard_link(d.path().join("in.npz"), d.path().join("hard.csv")).unwrap();
    for (src, out) in [
        ("in.npz", "in.npz"),
        ("in.npz", "link.npz"),
        ("link.npz", "in.npz"),
        ("in.npz", "hard.csv"),
    ] {
        for force in [false, true] {
            let mut args = vec!["export", src, "-o", out];
            if force {
                args.push("--force");
            }
            fails_cleanly(d.path(), &args, &[out, "same file as the input"], &[]);
        }
    }
    assert_eq!(fs::read(d.path().join("in.npz")).unwrap(), input);

    // A full device under a USD name: the error names the output and the cause, and no
    // partial file is left beside it.
    if Path::new("/dev/full").exists() {
        std::os::unix::fs::symlink("/dev/full", d.path().join("full.usda")).unwrap();
        let err = fails(d.path(), &["export", "in.bfs", "-o", "full.usda", "-q"]);
        has(&err, "full.usda");
        has(&err, "No space left");
        assert!(listing(d.path()).iter().all(|f| !f.contains("partial")));
    }

    // Bad ranges and steps: named, nothing written.
    for (flags, names) in [
        (&["--frames", "5..3"][..], &["--frames", "5..3"][..]),
        (&["--frames", "4..4"], &["--frames", "empty"]),
        (
            &["--frames", "0..14"],
            &["--frames", "ends at frame 14", "13 frames"],
        ),
        (&["--frames", "13.."], &["--frames", "starts at frame 13"]),
        (&["--frames", "x..3"], &["--frames", "bad frame number"]),
        (&["--frames", "3"], &["--frames", "A..B"]),
        (&["--every", "0"], &["--every", "at least 1"]),
        (&["--every=-1"], &["--every", "-1"]),
        (&["--every", "x"], &["--every", "x"]),
    ] {
        let mut args = vec!["export", "in.bfs", "-o", "out.npz"];
        args.extend_from_slice(flags);
        fails_cleanly(d.path(), &args, names, &["out.npz"]);
    }

    // Unknown output formats, missing and broken inputs.
    fails_cleanly(
        d.path(),
        &["export", "in.bfs", "-o", "out.npy"],
        &["out.npy", ".npz", ".csv"],
        &["out.npy"],
    );
    fails_cleanly(
        d.path(),
        &["export", "missing.bfs", "-o", "m.npz"],
        &["missing.bfs"],
        &["m.npz"],
    );
    write(d.path(), "notes.txt", "hello");
    fails_cleanly(
        d.path(),
        &["export", "notes.txt", "-o", "n.npz"],
        &["notes.txt", "not a .bfs file"],
        &["n.npz"],
    );
    fails_cleanly(
        d.path(),
        &["export", "in.bfs", "-o", "nodir/out.npz"],
        &["nodir/out.npz"],
        &[],
    );
    fs::create_dir(d.path().join("dir.npz")).unwrap();
    fails_cleanly(
        d.path(),
        &["export", "in.bfs", "-o", "dir.npz"],
        &["dir.npz", "folder"],
        &[],
    );

    // A corrupt last frame: named, and no half-written output, in either format.
    let (header_len, frame_size) = bfs_layout(&input, 2, 30);
    let mut bad = input.clone();
    bad[header_len + 12 * frame_size + 40] ^= 0x10;
    fs::write(d.path().join("bad.bfs"), &bad).unwrap();
    for out in ["bad.npz", "bad.csv"] {
        fails_cleanly(
            d.path(),
            &["export", "bad.bfs", "-o", out],
            &["bad.bfs", "frame 12", "corrupt"],
            &[out],
        );
    }
    // Its first 12 frames export.
    succeeds(
        d.path(),
        &[
            "export", "bad.bfs", "-o", "ok.npz", "--frames", "..12", "-q",
        ],
    );
    assert_eq!(fs::read(&file).unwrap(), input, "the input was modified");
    no_partials(d.path());
}

/// SIGINT or SIGTERM part-way: exit 130 or 143, and nothing left (no output, no temporary
/// file, no lock).
#[test]
fn a_signal_stops_an_export_and_leaves_nothing() {
    let d = tmp();
    let p = d.path();
    // 2,000 agents in 3D, 1,600 frames (77 MB): seconds of metrics, or 3.2 M CSV rows.
    synthetic(&p.join("s.bfs"), 2000, 1600);
    for (signal, code, out) in [("INT", 130, "s.npz"), ("TERM", 143, "s.csv")] {
        let mut child = Command::new(forge_bin())
            .args(["export", "s.bfs", "-o", out, "-q"])
            .current_dir(p)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("forge starts");
        let t0 = std::time::Instant::now();
        let writing = || {
            listing(p)
                .iter()
                .any(|n| n.starts_with(&format!("{out}.")) && n.ends_with(".partial"))
        };
        while !writing() {
            assert!(
                t0.elapsed().as_secs() < 60 && child.try_wait().unwrap().is_none(),
                "forge export {out} never started writing"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let killed = Command::new("kill")
            .args(["-s", signal, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "SIG{signal}: {err}");
        has(&err, &format!("SIG{signal}"));
        assert!(!err.contains("panicked"), "{err}");
        assert_eq!(listing(p), ["s.bfs"], "left behind after SIG{signal}");
    }
}

#[test]
fn help_names_the_formats_and_the_python_line() {
    let d = tmp();
    let help = succeeds(d.path(), &["export", "--help"]).stdout;
    for s in [
        "--frames",
        "--every",
        "--force",
        ".npz",
        ".csv",
        "numpy.load",
        "[default: 1]",
    ] {
        has(&help, s);
    }
    let top = succeeds(d.path(), &["--help"]).stdout;
    assert!(help_commands(&top).iter().any(|c| c == "export"), "{top}");
}

// ---------------------------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------------------------

/// Runs `program args` in `dir` with its data segment (heap, private anonymous maps:
/// `ulimit -d`) limited to `kib` KiB.
fn under_data_limit(dir: &Path, kib: u64, program: &Path, args: &[&str]) -> Run {
    run_process(
        Command::new("sh")
            .arg("-c")
            .arg(format!("ulimit -d {kib} && exec \"$0\" \"$@\""))
            .arg(program)
            .args(args)
            .current_dir(dir),
    )
}

/// The export streams: with its memory limited to 32 MiB (`ulimit -d`) it exports a
/// recording of 77 MB, to .npz and .csv, which holding the recording (a control, in Python)
/// cannot do under the same limit.
#[test]
fn export_runs_in_less_memory_than_the_recording() {
    const LIMIT_KIB: u64 = 32 * 1024;
    let d = tmp();
    // 200 agents in 3D: 4.8 KB a frame, 16,000 frames.
    synthetic(&d.path().join("large.bfs"), 200, 16_000);
    let size = fs::metadata(d.path().join("large.bfs")).unwrap().len();
    assert!(size > 2 * LIMIT_KIB * 1024, "{size}");
    let forge = forge_bin();
    let r = under_data_limit(
        d.path(),
        LIMIT_KIB,
        &forge,
        &["export", "large.bfs", "-o", "large.npz"],
    );
    no_panic(&r);
    assert!(
        r.ok(),
        "export under a {LIMIT_KIB} KiB limit failed:\n{}",
        r.stderr
    );
    let npz = fs::metadata(d.path().join("large.npz")).unwrap().len();
    assert!(npz > size * 9 / 10, "large.npz is {npz} bytes");
    // 16,000 x 200 = 3.2 M rows; a quarter of them is enough to show the memory.
    let r = under_data_limit(
        d.path(),
        LIMIT_KIB,
        &forge,
        &[
            "export",
            "large.bfs",
            "-o",
            "large.csv",
            "--every",
            "4",
            "-q",
        ],
    );
    assert!(
        r.ok(),
        "CSV export under a {LIMIT_KIB} KiB limit failed:\n{}",
        r.stderr
    );
    if have_numpy("export_runs_in_less_memory_than_the_recording") {
        let p = d.path().join("large.npz");
        let got = python_json(
            "import json, sys, numpy as np\n\
             d = np.load(sys.argv[1]); print(json.dumps(list(d['pos'].shape)))",
            &[&p],
        );
        assert_eq!(got, serde_json::json!([16_000, 200, 3]));
    }
    // The control: the limit does bite a process that holds the recording.
    if python_ok("import sys") {
        let r = under_data_limit(
            d.path(),
            LIMIT_KIB,
            Path::new("python3"),
            &[
                "-c",
                "import sys; print(len(open(sys.argv[1], 'rb').read()))",
                "large.bfs",
            ],
        );
        assert!(
            !r.ok() && r.stderr.contains("MemoryError"),
            "reading the whole recording under the limit should fail: {} {}",
            r.stdout,
            r.stderr
        );
    }
}
