//! Damaged and lying input through the real binary: frames whose CRCs are valid but whose
//! numbers are not (NaN, infinite), a BFS1 file with nothing to infer its world from, scenes
//! whose size hides a quadratic cost, and task variables that do not add up.
//!
//! `render` and `still` refuse a frame holding a NaN or infinite position or velocity, naming
//! the frame, the agent, the field and the value (forge's solver never writes one, so there
//! is no right way to draw it).

use crate::common;

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::time::Duration;

use common::child::*;
use common::*;
use forge::bfs::{self, Header, SourceFormat, Writer};
use forge::scene::{Boundary, Model};

/// A 2D header of `agents` boids in a 100x100 box.
fn header(agents: u32) -> Header {
    Header {
        version: bfs::VERSION,
        dim: 2,
        model: Model::Boids,
        boundary: Boundary::Wrap,
        agents,
        dt: 0.05,
        seed: 1,
        record_every: 1,
        world_size: [100.0, 100.0, 0.0],
        scene_name: "damaged".into(),
        scene_json: "{}".into(),
        frame_count: None,
        source: SourceFormat::Forge,
        world_inferred: false,
        species: Vec::new(),
    }
}

/// A recording of `frames` frames of `n` agents (valid CRCs), in which `damage` may change
/// frame `k`'s positions and velocities.
fn recording(path: &Path, n: usize, frames: u64, damage: impl Fn(u64, &mut [f32], &mut [f32])) {
    let mut w = Writer::new(fs::File::create(path).unwrap(), &header(n as u32)).unwrap();
    for k in 0..frames {
        let mut pos: Vec<f32> = (0..2 * n)
            .map(|j| ((j * 37 + k as usize) % 97) as f32 + 0.5)
            .collect();
        let mut vel: Vec<f32> = (0..2 * n).map(|j| 1.0 + (j % 3) as f32).collect();
        damage(k, &mut pos, &mut vel);
        w.write_frame(k, &pos, &vel).unwrap();
    }
    w.finalize().unwrap();
}

const N: usize = 50;

/// Frame 30 damaged three ways (an agent's x position NaN, an agent's velocity infinite,
/// every velocity NaN): `render` and `still` fail naming frame 30, the agent and the field,
/// and write nothing; the frames before it still render.
#[test]
fn frames_with_nan_or_infinite_values_are_refused_naming_frame_and_agent() {
    if !have_gpu("frames_with_nan_or_infinite_values_are_refused_naming_frame_and_agent") {
        return;
    }
    let d = tmp();
    let p = d.path();
    type Damage = fn(&mut [f32], &mut [f32]);
    let cases: [(&str, Damage, &[&str]); 3] = [
        (
            "nan-pos.bfs",
            |pos, _| pos[7] = f32::NAN,
            &["frame 30", "agent 7", "position", "NaN"],
        ),
        (
            "inf-vel.bfs",
            |_, vel| vel[N + 3] = f32::INFINITY,
            &["frame 30", "agent 3", "velocity of y inf"],
        ),
        (
            "nan-vel.bfs",
            |_, vel| vel.iter_mut().for_each(|v| *v = f32::NAN),
            &["frame 30", "agent 0", "velocity", "NaN"],
        ),
    ];
    for (file, damage, names) in cases {
        recording(&p.join(file), N, 40, |k, pos, vel| {
            if k == 30 {
                damage(pos, vel)
            }
        });
        let mut names = names.to_vec();
        names.push(file);
        fails_cleanly(
            p,
            &["render", file, "--size", "64x36", "--png", "frames", "-q"],
            &names,
            &[],
        );
        assert!(
            !p.join("frames/frame_000030.png").exists(),
            "{file}: frame 30 was drawn"
        );
        fails_cleanly(
            p,
            &[
                "still", file, "--frame", "30", "--size", "64x36", "-o", "s.png", "-q",
            ],
            &names,
            &["s.png"],
        );
        // A still of an earlier frame never reads frame 30.
        succeeds(
            p,
            &[
                "still", file, "--frame", "5", "--size", "64x36", "-o", "ok.png", "-q",
            ],
        );
        fs::remove_file(p.join("ok.png")).unwrap();
        fs::remove_dir_all(p.join("frames")).unwrap();
    }
}

/// The same damage through the readers that pass numbers on: every export format, `info`'s
/// metrics and `analyze` fail naming frame 30 and the agent, and write nothing (a NaN in a
/// USD file, or "mean speed inf" from `info`, would be a wrong result handed on); the frames
/// before it still export.
#[test]
fn exports_info_and_analyze_refuse_a_frame_with_nan_or_infinite_values() {
    let d = tmp();
    let p = d.path();
    recording(&p.join("nan-pos.bfs"), N, 40, |k, pos, _| {
        if k == 30 {
            pos[N + 7] = f32::NAN
        }
    });
    recording(&p.join("inf-vel.bfs"), N, 40, |k, _, vel| {
        if k == 30 {
            vel[3] = f32::INFINITY
        }
    });
    let names: [(&str, &[&str]); 2] = [
        ("nan-pos.bfs", &["frame 30", "agent 7", "position of y NaN"]),
        ("inf-vel.bfs", &["frame 30", "agent 3", "velocity of x inf"]),
    ];
    for (file, want) in names {
        for out in ["x.csv", "x.npz", "x.xyz", "x.usda", "x.glb"] {
            fails_cleanly(p, &["export", file, "-o", out, "-q"], want, &[out]);
        }
        fails_cleanly(p, &["info", file, "--metrics", "m.csv"], want, &["m.csv"]);
        fails_cleanly(p, &["info", file, "--json"], want, &[]);
        fails_cleanly(p, &["analyze", file, "--frames", "20.."], want, &[]);
        succeeds(
            p,
            &[
                "export", file, "--frames", "..30", "-o", "ok.csv", "--force", "-q",
            ],
        );
    }
}

/// A BFS1 file whose positions are all NaN: no world is inferred from them (it was 1 x 1) and
/// the render fails naming frame 0.
#[test]
fn a_bfs1_file_of_nan_positions_is_refused() {
    if !have_gpu("a_bfs1_file_of_nan_positions_is_refused") {
        return;
    }
    let d = tmp();
    let p = d.path();
    let nan = vec![f32::NAN; 20];
    let vel = vec![1.0f32; 20];
    let frames: Vec<bfs::Bfs1Frame> = (0..3)
        .map(|t| (t, nan.clone(), nan.clone(), vel.clone(), vel.clone()))
        .collect();
    let file = fs::File::create(p.join("nan.bfs")).unwrap();
    bfs::write_bfs1(file, 0.05, 1, 20, &frames, true).unwrap();
    let err = fails_cleanly(
        p,
        &[
            "render", "nan.bfs", "--size", "64x36", "--png", "frames", "-q",
        ],
        &["nan.bfs", "frame 0", "agent 0", "position"],
        &[],
    );
    has(&err, "no finite position");
    assert!(!err.contains("1 x 1"), "{err}");
}

// ---------------------------------------------------------------------------------------
// Scenes: memory proportional to their size
// ---------------------------------------------------------------------------------------

/// A scene of one unknown key `key_len` bytes long holding an array of `items` numbers.
fn long_key_scene(key_len: usize, items: usize) -> String {
    let array = vec!["0"; items].join(",");
    format!(
        "{{\"name\": \"big\", \"{}\": [{array}]}}",
        "k".repeat(key_len)
    )
}

/// Runs forge under an address-space limit of `bytes` (RLIMIT_AS), with a deadline.
fn run_limited(dir: &Path, args: &[&str], bytes: u64) -> Run {
    let mut c = std::process::Command::new(forge_bin());
    c.current_dir(dir)
        .args(args)
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        c.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: bytes,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = c.output().expect("forge runs");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// An unknown key of 300 KB over a 30k-element array (360 KB in all) aborted under a 2 GB
/// address space ("memory allocation of 300012 bytes failed"); at 160 KB it took 2.94 GB, at
/// 60 KB 399 MB. Now each is refused as an unknown field, naming the key by its start, in
/// memory of the order of the file's size. So is the same shape inside a field that takes any
/// JSON value (`vicsek.noise_kind`).
#[test]
fn a_long_unknown_key_over_a_long_array_is_refused_in_little_memory() {
    let d = tmp();
    let p = d.path();
    write(p, "k360.json", &long_key_scene(300_000, 30_000));
    let r = run_limited(p, &["simulate", "k360.json", "-o", "x.bfs"], 2 << 30);
    let args = ["simulate", "k360.json"];
    failed(&r, &args);
    has(&r.stderr, "unknown field");
    has(&r.stderr, "kkkkkkkk… (300000 bytes)");
    assert!(
        r.stderr.len() < 4000,
        "the key printed whole: {} bytes",
        r.stderr.len()
    );
    no_output(p, "x.bfs");
    for (name, key, items) in [("k160.json", 130_000, 15_000), ("k60.json", 40_000, 10_000)] {
        write(p, name, &long_key_scene(key, items));
        let m = peak_memory(p, &["simulate", name, "-o", "x.bfs"], &[]);
        failed(&m.run, &["simulate", name]);
        has(&m.run.stderr, "unknown field");
        assert!(m.peak_mb < 150.0, "{name}: {:.0} MB", m.peak_mb);
    }
    let array = vec!["0"; 30_000].join(",");
    let inside = format!(
        "{{\"name\": \"big\", \"model\": \"vicsek\", \"vicsek\": {{\"noise_kind\": {{\"{}\": [{array}]}}}}}}",
        "k".repeat(300_000)
    );
    write(p, "inside.json", &inside);
    let m = peak_memory(p, &["simulate", "inside.json", "-o", "x.bfs"], &[]);
    failed(&m.run, &["simulate", "inside.json"]);
    has(&m.run.stderr, "scene.vicsek.noise_kind");
    assert!(m.peak_mb < 150.0, "inside.json: {:.0} MB", m.peak_mb);
    no_output(p, "x.bfs");
}

// ---------------------------------------------------------------------------------------
// Task variables
// ---------------------------------------------------------------------------------------

/// Every variable `--chunk auto` reads, so that the test's own environment adds none.
const TASK_VARS: &[&str] = &[
    "FORGE_TASK_INDEX",
    "FORGE_TASK_COUNT",
    "SLURM_ARRAY_TASK_ID",
    "SLURM_ARRAY_TASK_COUNT",
    "SLURM_ARRAY_TASK_MIN",
    "SLURM_ARRAY_TASK_MAX",
    "SLURM_ARRAY_TASK_STEP",
    "JOB_COMPLETION_INDEX",
];

/// A count of 0 names the variable that holds it (not the index's); a count past 2^64 - 1
/// is out of range, not 0.
#[test]
fn task_counts_of_zero_or_out_of_range_name_their_variable() {
    let d = tmp();
    let p = d.path();
    write(p, "x.bfs", "not read: the task comes first");
    let max = u64::MAX.to_string();
    // (the variables set, what the message names)
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str]);
    let cases: [Case; 3] = [
        (
            &[
                ("SLURM_ARRAY_TASK_ID", "0"),
                ("SLURM_ARRAY_TASK_COUNT", "0"),
            ],
            &["number of tasks is 0", "SLURM_ARRAY_TASK_COUNT=0"],
        ),
        (
            &[("JOB_COMPLETION_INDEX", "0"), ("FORGE_TASK_COUNT", "0")],
            &["number of tasks is 0", "FORGE_TASK_COUNT=0"],
        ),
        (
            &[
                ("SLURM_ARRAY_TASK_ID", &max),
                ("SLURM_ARRAY_TASK_MAX", &max),
            ],
            &["out of range", "SLURM_ARRAY_TASK_MAX"],
        ),
    ];
    for (set, names) in cases {
        let args = ["render", "x.bfs", "--chunk", "auto", "-o", "x.mp4"];
        let r = run_within(
            p,
            &args,
            &Env {
                set,
                remove: TASK_VARS,
            },
            Duration::from_secs(60),
        );
        failed(&r, &args);
        for n in names {
            has(&r.stderr, n);
        }
        assert!(
            !r.stderr.contains("is 0 (SLURM_ARRAY_TASK_ID)"),
            "{}",
            r.stderr
        );
        assert!(!r.stderr.contains("(JOB_COMPLETION_INDEX)"), "{}", r.stderr);
    }
    assert_eq!(listing(p), ["x.bfs"]);
}
