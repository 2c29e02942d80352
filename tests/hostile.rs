//! Hostile and careless input through the real binary: files that lie about their size, caps
//! on threads and seeds, metrics on absurd coordinates, FIFOs and directories where files are
//! expected, values that vanish in f32, and messages that name the right thing. Each test
//! fails if its case hangs, aborts, allocates gigabytes or blames the wrong thing.

use crate::common;

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::*;
use forge::bfs::{self, Frame, Header, Reader, SourceFormat, Writer};
use forge::scene::{Boundary, Model};

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// A small header: 2D or 3D boids, `agents` agents, world 100 per axis.
fn header(dim: u8, agents: u32, boundary: Boundary) -> Header {
    Header {
        version: bfs::VERSION,
        dim,
        model: Model::Boids,
        boundary,
        agents,
        dt: 0.05,
        seed: 1,
        record_every: 1,
        world_size: [100.0, 100.0, if dim == 3 { 100.0 } else { 0.0 }],
        scene_name: "hostile".into(),
        scene_json: "{}".into(),
        frame_count: None,
        source: SourceFormat::Forge,
        world_inferred: false,
        species: Vec::new(),
    }
}

/// Writes a finalized forge recording of `frames` (`(step, pos, vel)`) with header `h`.
fn write_recording(path: &Path, h: &Header, frames: &[(u64, Vec<f32>, Vec<f32>)]) {
    let mut w = Writer::new(fs::File::create(path).unwrap(), h).unwrap();
    for (step, pos, vel) in frames {
        w.write_frame(*step, pos, vel).unwrap();
    }
    w.finalize().unwrap();
}

/// `n` agents spread over a 100-wide box (deterministic), velocities (1, 0.5, ...).
fn spread(dim: usize, n: usize) -> (Vec<f32>, Vec<f32>) {
    let mut pos = Vec::with_capacity(dim * n);
    for k in 0..dim {
        for i in 0..n {
            pos.push(((i * 37 + k * 11) % 97) as f32 + 0.5);
        }
    }
    let vel = (0..dim * n).map(|j| 1.0 + (j % 3) as f32 * 0.5).collect();
    (pos, vel)
}

/// Copies the recording `src` to `dst`, letting `edit` change its header and frames.
fn rewrite(src: &Path, dst: &Path, edit: impl FnOnce(&mut Header, &mut Vec<Frame>)) {
    let mut r = Reader::open(src).unwrap();
    let mut h = r.header().clone();
    let mut frames: Vec<Frame> = (0..r.frame_count())
        .map(|k| r.read_frame(k).unwrap())
        .collect();
    edit(&mut h, &mut frames);
    let mut w = Writer::new(fs::File::create(dst).unwrap(), &h).unwrap();
    for f in &frames {
        w.write_frame(f.step, &f.pos, &f.vel).unwrap();
    }
    w.finalize().unwrap();
}

/// A small real recording, `name` in `dir`, of the scene `json`.
fn simulate(dir: &Path, name: &str, json: &str) -> PathBuf {
    let scene = format!("{name}.json");
    write(dir, &scene, json);
    succeeds(dir, &["simulate", &scene, "-o", name, "--quiet"]);
    dir.join(name)
}

/// A tiny vicsek recording (`small.bfs`) to damage.
fn small_recording(dir: &Path) -> PathBuf {
    simulate(
        dir,
        "small.bfs",
        r#"{"model": "vicsek", "agents": 50, "steps": 4, "name": "small"}"#,
    )
}

/// Edits the scene JSON stored in a recording.
fn with_scene_json(src: &Path, dst: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    rewrite(src, dst, |h, _| {
        let mut v: serde_json::Value = serde_json::from_str(&h.scene_json).unwrap();
        edit(&mut v);
        h.scene_json = serde_json::to_string_pretty(&v).unwrap();
    });
}

/// Runs forge with its address space limited to `bytes` (RLIMIT_AS), so that an allocation
/// sized by a lying file fails instead of succeeding on a machine with memory to spare. The
/// test then checks that the failure is a clean error, not an abort.
fn run_limited(dir: &Path, args: &[&str], bytes: u64) -> Run {
    let mut c = std::process::Command::new(forge_bin());
    c.current_dir(dir)
        .args(args)
        .env("XDG_RUNTIME_DIR", std::env::temp_dir());
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
    run_timed(&mut c, Duration::from_secs(120))
}

/// Runs a process with a deadline: a hang is a test failure (the child is killed), not a
/// stuck test run.
fn run_timed(c: &mut std::process::Command, limit: Duration) -> Run {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("forge starts");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut s = Vec::new();
        out.read_to_end(&mut s).ok();
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = Vec::new();
        err.read_to_end(&mut s).ok();
        s
    });
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > limit {
            child.kill().ok();
            child.wait().ok();
            panic!("{c:?} hung: still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run {
        code: status.code(),
        stdout: String::from_utf8_lossy(&t_out.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&t_err.join().unwrap()).into_owned(),
    }
}

/// Runs forge in `dir` with a deadline.
fn run_within(dir: &Path, args: &[&str], limit: Duration) -> Run {
    let mut c = std::process::Command::new(forge_bin());
    c.current_dir(dir)
        .args(args)
        .env("XDG_RUNTIME_DIR", std::env::temp_dir());
    run_timed(&mut c, limit)
}

/// A clean failure (see `common::failed`) whose message names every one of `names`.
fn failed_naming(r: &Run, args: &[&str], names: &[&str]) {
    failed(r, args);
    for n in names {
        assert!(
            r.stderr.contains(n),
            "forge {args:?}: the message does not name {n:?}:\n{}",
            r.stderr
        );
    }
}

fn mkfifo(path: &Path) {
    let ok = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs")
        .success();
    assert!(ok, "mkfifo {}", path.display());
}

// ---------------------------------------------------------------------------------------
// 10. Metrics on absurd coordinates: O(n), never a grid that follows the extent
// ---------------------------------------------------------------------------------------

#[test]
fn info_on_a_coordinate_at_3e38_or_an_agent_far_out_finishes_quickly() {
    let d = tmp();
    let cases: [(&str, u8, Boundary, f32); 4] = [
        ("wrap2.bfs", 2, Boundary::Wrap, 3e38),
        ("wrap3.bfs", 3, Boundary::Wrap, 3e38),
        ("open2.bfs", 2, Boundary::Open, 1e9),
        ("open3.bfs", 3, Boundary::Open, -3e38),
    ];
    for (name, dim, boundary, far) in cases {
        let n = 12;
        let h = header(dim, n as u32, boundary);
        let (mut pos, vel) = spread(dim as usize, n);
        pos[3] = far;
        let (pos2, _) = spread(dim as usize, n);
        write_recording(
            &d.path().join(name),
            &h,
            &[(0, pos, vel.clone()), (1, pos2, vel)],
        );
        let t0 = Instant::now();
        let r = run_within(d.path(), &["info", name], Duration::from_secs(30));
        no_panic(&r);
        assert!(r.ok(), "info {name}:\n{}", r.stderr);
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "info {name} took {:?}",
            t0.elapsed()
        );
        assert!(r.stdout.contains("nn distance"), "{}", r.stdout);
    }
}

// ---------------------------------------------------------------------------------------
// 7. Allocations sized by a file: fallible and capped, an error naming the file and size
// ---------------------------------------------------------------------------------------

/// Address space the children of the memory tests get: enough for forge itself, far below
/// what the lying headers below ask for (4 GiB and 48 GiB).
const AS_LIMIT: u64 = 1 << 30;

/// A forge recording whose header declares `agents` agents in `dim` dimensions, one frame
/// long as far as its length goes: a frame tag, then a hole (a sparse file: nothing on disk).
/// With `valid_crc` the frame's checksum is that of its zeros, so it is a true frame of
/// agents all at the origin. Reading it needs `8 * dim * agents` bytes of memory.
fn lying_recording(path: &Path, dim: u8, agents: u32, valid_crc: bool) {
    let h = header(dim, agents, Boundary::Reflect);
    // Not finalized (as a killed run leaves it): every complete frame counts.
    let mut w = Writer::new(fs::File::create(path).unwrap(), &h).unwrap();
    w.flush().unwrap();
    drop(w);
    use std::io::Write;
    let mut file = fs::OpenOptions::new().append(true).open(path).unwrap();
    let header_len = file.metadata().unwrap().len();
    let payload = 8 * u64::from(dim) * u64::from(agents);
    let crc = if valid_crc {
        // The checksum of the payload's zeros, doubled up from 1 MiB's (crc32's combine).
        let mut zeros = crc32fast::Hasher::new();
        zeros.update(&vec![0u8; 1 << 20]);
        let mut len = 1u64 << 20;
        while len < payload {
            let twice = zeros.clone();
            zeros.combine(&twice);
            len *= 2;
        }
        assert_eq!(len, payload, "a payload of 2^k MiB");
        let mut c = crc32fast::Hasher::new();
        c.update(&[0u8; 16]); // index 0, step 0
        c.combine(&zeros);
        c.finalize()
    } else {
        0
    };
    file.write_all(b"FRM1").unwrap();
    file.write_all(&crc.to_le_bytes()).unwrap();
    file.set_len(header_len + 24 + payload).unwrap();
}

#[test]
fn a_header_declaring_2_27_agents_over_a_sparse_file_is_an_error_not_2_gb() {
    let d = tmp();
    let p = d.path();
    lying_recording(&p.join("big.bfs"), 2, 1 << 27, false);
    // info reads frames for its metrics; still and render measure the look from them, before
    // any GPU or FFmpeg work. Under a 1 GiB limit: the frame (2 GiB of zeros whose checksum
    // does not match) is found corrupt without its arrays being allocated.
    for args in [
        &["info", "big.bfs"][..],
        &["still", "big.bfs", "-o", "big.png"][..],
        &["render", "big.bfs", "-o", "big.mp4"][..],
    ] {
        let r = run_limited(p, args, AS_LIMIT);
        failed_naming(&r, args, &["big.bfs", "frame 0", "checksum mismatch"]);
        no_partials(p);
        assert!(!p.join("big.png").exists() && !p.join("big.mp4").exists());
    }
    // A true frame that size (agents at the origin, the checksum right): the arrays cannot be
    // allocated under the limit, and that is an error naming the file and the size.
    lying_recording(&p.join("true.bfs"), 2, 1 << 27, true);
    for args in [
        &["info", "true.bfs"][..],
        &["still", "true.bfs", "-o", "t.png"][..],
    ] {
        let r = run_limited(p, args, AS_LIMIT);
        failed_naming(
            &r,
            args,
            &["true.bfs", "frame 0", "2.00 GiB", "134217728 agents"],
        );
        no_partials(p);
    }
}

#[test]
fn a_3d_header_of_2_31_agents_is_an_error_not_an_abort() {
    let d = tmp();
    let p = d.path();
    // 48 GiB of frame, sparse: the arrays would be 2 x 24 GiB.
    lying_recording(&p.join("huge.bfs"), 3, 1 << 31, false);
    let args = ["info", "huge.bfs"];
    // With no limit and with one. Where less than 54 GiB of memory is available the frame is
    // refused for its size, unread; where more is, it is read through its checksum first,
    // which fails. Either way, no abort and no 48 GiB taken.
    for r in [
        run_within(p, &args, Duration::from_secs(120)),
        run_limited(p, &args, AS_LIMIT),
    ] {
        failed_naming(&r, &args, &["huge.bfs", "frame 0"]);
        assert!(
            r.stderr.contains("48.00 GiB") && r.stderr.contains("2147483648 agents in 3D")
                || r.stderr.contains("checksum mismatch"),
            "{}",
            r.stderr
        );
    }
}

#[test]
fn a_streaming_bfs1_file_with_a_sparse_4_gib_length_builds_no_index_of_4_gb() {
    let d = tmp();
    let p = d.path();
    let path = p.join("hole.bfs");
    // A BFS1 header (frame count -1: streaming), then 4 GiB of nothing.
    let mut f = fs::File::create(&path).unwrap();
    bfs::write_bfs1(&mut f, 0.05, 7, 100, &[], false).unwrap();
    f.set_len(4 << 30).unwrap();
    drop(f);
    let t0 = Instant::now();
    let r = run_limited(p, &["info", "hole.bfs"], AS_LIMIT);
    no_panic(&r);
    assert!(r.ok(), "info hole.bfs:\n{}", r.stderr);
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
    // Zeros read as one frame of no agents at timestep 0, then a frame out of order.
    has(&r.stdout, "frames     1 ");
    has(&r.stderr, "frame 1 is out of order");
}

// ---------------------------------------------------------------------------------------
// 9. Caps on threads and seeds, checked before any output exists
// ---------------------------------------------------------------------------------------

#[test]
fn too_many_threads_is_refused_before_the_recording_is_created() {
    let d = tmp();
    let p = d.path();
    // Enough agents for the solver to start its threads.
    let args = [
        "simulate",
        "vicsek",
        "--agents",
        "20000",
        "--steps",
        "2",
        "--threads",
        "100000",
        "-o",
        "t.bfs",
        "--quiet",
    ];
    let r = run_within(p, &args, Duration::from_secs(60));
    failed_naming(&r, &args, &["--threads", "1024", "100000"]);
    no_output(p, "t.bfs");
    assert!(listing(p).is_empty(), "{:?}", listing(p));
}

#[test]
fn a_sweep_of_4294967295_seeds_or_100000_jobs_is_refused_before_any_output() {
    let d = tmp();
    let p = d.path();
    for (args, names) in [
        (
            &[
                "sweep",
                "vicsek",
                "--vary",
                "noise=1",
                "--seeds",
                "4294967295",
                "-o",
                "s.csv",
                "--quiet",
            ][..],
            &["--seeds", "4294967295", "1000000"][..],
        ),
        (
            &[
                "sweep",
                "vicsek",
                "--vary",
                "noise=0:2:0.5",
                "--seeds",
                "300000",
                "-o",
                "s.csv",
            ][..],
            &["--seeds", "5 points x 300000 seeds = 1500000 runs"][..],
        ),
        (
            &[
                "sweep", "vicsek", "--vary", "noise=1", "--jobs", "100000", "-o", "s.csv",
            ][..],
            &["--jobs", "1024"][..],
        ),
    ] {
        let r = run_within(p, args, Duration::from_secs(60));
        failed_naming(&r, args, names);
        assert!(listing(p).is_empty(), "{args:?} left {:?}", listing(p));
    }
}

// ---------------------------------------------------------------------------------------
// 11. FIFOs (and directories) where a file is expected: refused, named, never waited on
// ---------------------------------------------------------------------------------------

const QUICK: Duration = Duration::from_secs(20);

/// A look file is a regular file of a look's size: a FIFO, a device that never ends or one of
/// zeros, and a huge file are refused at once, naming `--look`, the file and why; never waited
/// on, never read to the end.
#[test]
fn a_look_file_that_is_no_look_file_is_refused_at_once() {
    let d = tmp();
    let p = d.path();
    simulate(
        p,
        "l.bfs",
        r#"{"model": "vicsek", "agents": 20, "steps": 2}"#,
    );
    mkfifo(&p.join("look.fifo"));
    fs::write(p.join("big.json"), vec![b' '; 2 << 20]).unwrap();
    for (look, why) in [
        ("look.fifo", "FIFO"),
        ("/dev/zero", "character device"),
        ("/dev/urandom", "character device"),
        ("big.json", "larger than 1024 KiB"),
    ] {
        for args in [
            &["still", "l.bfs", "-o", "x.png", "--look", look][..],
            &[
                "run", "vicsek", "--steps", "2", "-o", "x.mp4", "--look", look,
            ][..],
        ] {
            let r = run_within(p, args, QUICK);
            failed_naming(&r, args, &["--look", look, why]);
        }
    }
    no_output(p, "x.png");
    no_output(p, "x.mp4");
}

#[test]
fn a_fifo_as_a_recording_is_refused_not_waited_on() {
    let d = tmp();
    let p = d.path();
    mkfifo(&p.join("pipe.bfs"));
    for args in [
        &["info", "pipe.bfs"][..],
        &["still", "pipe.bfs", "-o", "x.png"][..],
    ] {
        let r = run_within(p, args, QUICK);
        failed_naming(&r, args, &["pipe.bfs", "FIFO", "not a regular file"]);
    }
    fs::create_dir(p.join("dir.bfs")).unwrap();
    let r = run_within(p, &["info", "dir.bfs"], QUICK);
    failed_naming(&r, &["info", "dir.bfs"], &["dir.bfs", "a directory"]);
}

#[test]
fn a_fifo_as_init_path_is_refused_not_waited_on() {
    let d = tmp();
    let p = d.path();
    mkfifo(&p.join("start.bfs"));
    write(
        p,
        "from.json",
        r#"{"preset": "boidforge", "steps": 1, "init": {"layout": "file", "path": "start.bfs"}}"#,
    );
    let args = ["simulate", "from.json", "-o", "out.bfs", "--quiet"];
    let r = run_within(p, &args, QUICK);
    failed_naming(&r, &args, &["scene.init.path", "start.bfs", "FIFO"]);
    no_output(p, "out.bfs");
}

/// A recording of a larger world as a smaller world's start: its agents would begin outside
/// the walls (frame 0 recorded there, then pulled in). Refused naming the agent and world; an
/// open world takes any position.
#[test]
fn an_initial_frame_outside_the_world_is_refused() {
    let d = tmp();
    let p = d.path();
    let scene = |size: u32, boundary: &str| {
        format!(
            r#"{{"preset": "boidforge", "agents": 300, "steps": 2, "seed": 1,
                "world": {{"size": [{size}, {size}], "boundary": "{boundary}"}},
                "init": {{"layout": "file", "path": "big.bfs"}}}}"#
        )
    };
    write(
        p,
        "big.json",
        &scene(400, "wrap").replace(
            r#""init": {"layout": "file", "path": "big.bfs"}"#,
            r#""init": {"layout": "uniform"}"#,
        ),
    );
    succeeds(p, &["simulate", "big.json", "-o", "big.bfs", "-q"]);
    for boundary in ["wrap", "reflect"] {
        write(p, "small.json", &scene(100, boundary));
        let args = ["simulate", "small.json", "-o", "small.bfs", "-q"];
        let r = run_within(p, &args, QUICK);
        failed_naming(
            &r,
            &args,
            &[
                "scene.init.path",
                "big.bfs",
                "outside the scene's world 100 x 100",
            ],
        );
        no_output(p, "small.bfs");
    }
    write(p, "small.json", &scene(100, "open"));
    succeeds(p, &["simulate", "small.json", "-o", "small.bfs", "-q"]);
    write(p, "same.json", &scene(400, "reflect"));
    succeeds(p, &["simulate", "same.json", "-o", "same.bfs", "-q"]);
}

#[test]
fn a_fifo_or_directory_named_like_a_built_in_scene_does_not_hide_it() {
    let d = tmp();
    let p = d.path();
    mkfifo(&p.join("vicsek"));
    fs::create_dir(p.join("cuplan.json")).unwrap();
    for (scene, what) in [("vicsek", "FIFO"), ("cuplan.json", "directory")] {
        let args = ["simulate", scene, "--steps", "1", "-o", "x.bfs", "--force"];
        let r = run_within(p, &args, QUICK);
        no_panic(&r);
        assert!(r.ok(), "{args:?}:\n{}", r.stderr);
        for want in ["note", scene, what, "built-in scene"] {
            has(&r.stderr, want);
        }
    }
    // Not named like a built-in scene: an error that says what it is.
    mkfifo(&p.join("mine.json"));
    fs::create_dir(p.join("other")).unwrap();
    for (scene, what) in [("mine.json", "FIFO"), ("other", "directory")] {
        let args = ["simulate", scene, "-o", "y.bfs"];
        let r = run_within(p, &args, QUICK);
        failed_naming(&r, &args, &[scene, what, "not a scene file"]);
    }
    no_output(p, "y.bfs");
}

// ---------------------------------------------------------------------------------------
// 14. Values checked as stored; a recording's header and render section named when bad
// ---------------------------------------------------------------------------------------

#[test]
fn values_that_vanish_in_f32_are_refused_naming_the_field() {
    let d = tmp();
    let p = d.path();
    for (json, field) in [
        (
            r#"{"model": "boids", "dt": 1e-50, "agents": 50, "steps": 3}"#,
            "scene.dt",
        ),
        (
            r#"{"model": "vicsek", "dt": 1e-50, "agents": 50, "steps": 3}"#,
            "scene.dt",
        ),
        (
            r#"{"model": "boids", "world": {"size": [1e-50, 1e-50]}, "agents": 50, "steps": 3}"#,
            "scene.world.size[0]",
        ),
        (
            r#"{"model": "vicsek", "vicsek": {"r": 1e-40}, "agents": 50, "steps": 3}"#,
            "scene.vicsek.r",
        ),
    ] {
        write(p, "tiny.json", json);
        let args = ["simulate", "tiny.json", "-o", "tiny.bfs", "--quiet"];
        fails_cleanly(p, &args, &[field, "32-bit float"], &["tiny.bfs"]);
    }
    // Allowed to be 0, but not to be rounded to 0 (nor to a subnormal).
    write(
        p,
        "sep.json",
        r#"{"model": "boids", "boids": {"r_sep": 1e-45}, "agents": 50, "steps": 3}"#,
    );
    fails_cleanly(
        p,
        &["simulate", "sep.json", "-o", "sep.bfs"],
        &["scene.boids.r_sep", "32-bit float"],
        &["sep.bfs"],
    );
    // And the sweep's values the same way.
    let args = [
        "sweep",
        "vicsek",
        "--vary",
        "r=1e-50,1",
        "-o",
        "s.csv",
        "--quiet",
    ];
    let err = fails(p, &args);
    has(&err, "r=");
    has(&err, "32-bit float");
    assert!(!p.join("s.csv").exists());
}

#[test]
fn a_header_with_a_nan_infinite_or_negative_world_or_dt_is_refused_naming_the_field() {
    let d = tmp();
    let p = d.path();
    let src = small_recording(p);
    type Case = (&'static str, fn(&mut Header), &'static str);
    let cases: [Case; 6] = [
        ("dt-nan.bfs", |h| h.dt = f32::NAN, "dt is NaN"),
        ("dt-neg.bfs", |h| h.dt = -0.5, "dt is -0.5"),
        ("dt-zero.bfs", |h| h.dt = 0.0, "dt is 0"),
        (
            "w-inf.bfs",
            |h| h.world_size[1] = f32::INFINITY,
            "world_size[1] is inf",
        ),
        (
            "w-neg.bfs",
            |h| h.world_size[0] = -31.6,
            "world_size[0] is -31.6",
        ),
        (
            "w-nan.bfs",
            |h| h.world_size[0] = f32::NAN,
            "world_size[0] is NaN",
        ),
    ];
    for (name, edit, says) in cases {
        rewrite(&src, &p.join(name), |h, _| edit(h));
        for args in [&["info", name][..], &["still", name, "-o", "x.png"][..]] {
            let r = run_within(p, args, QUICK);
            failed_naming(&r, args, &[name, says, "must be a finite number > 0"]);
        }
    }
    // A 2D recording's z size is not used: anything goes there.
    rewrite(&src, &p.join("z.bfs"), |h, _| h.world_size[2] = f32::NAN);
    succeeds(p, &["info", "z.bfs"]);
}

#[test]
fn a_bad_render_section_in_a_recording_is_blamed_on_its_field_not_on_a_flag() {
    let d = tmp();
    let p = d.path();
    let src = small_recording(p);
    let cases: [(&str, serde_json::Value, &str); 9] = [
        (
            "overlay.bfs",
            serde_json::json!({"overlay": 5}),
            "scene.render.overlay (in the recording)",
        ),
        (
            "title.bfs",
            serde_json::json!({"title": ["a"]}),
            "scene.render.title (in the recording)",
        ),
        (
            "blur.bfs",
            serde_json::json!({"motion_blur": "wide"}),
            "scene.render.motion_blur (in the recording)",
        ),
        (
            "fps0.bfs",
            serde_json::json!({"fps": 0}),
            "scene.render.fps (in the recording)",
        ),
        (
            "fps4e9.bfs",
            serde_json::json!({"fps": 4e9}),
            "scene.render.fps (in the recording)",
        ),
        (
            "color.bfs",
            serde_json::json!({"color": "x"}),
            "scene.render.color (in the recording)",
        ),
        (
            "size.bfs",
            serde_json::json!({"size": [0, 0]}),
            "scene.render.size (in the recording)",
        ),
        (
            "sizetype.bfs",
            serde_json::json!({"size": "big"}),
            "scene.render.size (in the recording)",
        ),
        (
            "camera.bfs",
            serde_json::json!({"bloom": -1}),
            "scene.render.bloom (in the recording)",
        ),
    ];
    for (name, render, field) in cases {
        with_scene_json(&src, &p.join(name), |v| v["render"] = render.clone());
        let args = ["still", name, "-o", "x.png"];
        let r = run_within(p, &args, QUICK);
        failed_naming(&r, &args, &[field]);
        // No flag was given: none may be blamed.
        assert!(
            !r.stderr.contains(" --fps:") && !r.stderr.contains("error: --"),
            "{name}: a flag is blamed:\n{}",
            r.stderr
        );
        assert!(!p.join("x.png").exists());
    }
    // A field this build does not know is ignored with a warning (a newer forge's recording):
    // the look is still checked (here the bad fps is caught, the unknown field only warned).
    with_scene_json(&src, &p.join("unknown.bfs"), |v| {
        v["render"] = serde_json::json!({"sparkle": 3, "fps": 0})
    });
    let r = run_within(p, &["still", "unknown.bfs", "-o", "x.png"], QUICK);
    failed_naming(
        &r,
        &["still", "unknown.bfs"],
        &["scene.render.fps (in the recording)"],
    );
    has(&r.stderr, "scene.render.sparkle (in the recording)");
}

#[test]
fn a_bad_render_field_in_a_recording_gives_way_to_the_flag_that_replaces_it() {
    if !have_gpu("a_bad_render_field_in_a_recording_gives_way_to_the_flag_that_replaces_it")
        || !have_ffmpeg("a_bad_render_field_in_a_recording_gives_way_to_the_flag_that_replaces_it")
    {
        return;
    }
    let d = tmp();
    let p = d.path();
    let src = small_recording(p);
    with_scene_json(&src, &p.join("fps.bfs"), |v| {
        v["render"] = serde_json::json!({"fps": 4e9, "color": "x"})
    });
    succeeds(
        p,
        &[
            "render", "fps.bfs", "--fps", "24", "--color", "heading", "--size", "64x36", "-o",
            "f.mp4", "-q",
        ],
    );
    assert!(fs::metadata(p.join("f.mp4")).unwrap().len() > 0);
}

// ---------------------------------------------------------------------------------------
// 15. Messages
// ---------------------------------------------------------------------------------------

#[test]
fn info_escapes_control_characters_in_a_scene_name() {
    let d = tmp();
    let p = d.path();
    let src = small_recording(p);
    rewrite(&src, &p.join("esc.bfs"), |h, _| {
        h.scene_name = "evil\u{1b}]0;pwned\u{7}\u{1b}[2J\nname".into()
    });
    let r = succeeds(p, &["info", "esc.bfs"]);
    assert!(
        !r.stdout.contains('\u{1b}') && !r.stdout.contains('\u{7}'),
        "raw control characters in:\n{:?}",
        r.stdout
    );
    has(
        &r.stdout,
        "scene      evil\\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\nname",
    );
    // JSON escapes them its own way.
    let r = succeeds(p, &["info", "esc.bfs", "--json"]);
    assert!(!r.stdout.contains('\u{1b}'), "{:?}", r.stdout);
}

#[test]
fn a_frame_with_a_wrong_index_is_not_called_a_checksum_mismatch() {
    let d = tmp();
    let p = d.path();
    let src = small_recording(p);
    // Frame 2 replaced by a copy of frame 4 (a valid frame, checksum and all, out of place).
    let bytes = fs::read(&src).unwrap();
    let (header_len, frame_size) = bfs_layout(&bytes, 2, 50);
    let mut b = bytes.clone();
    let f4 = bytes[header_len + 4 * frame_size..header_len + 5 * frame_size].to_vec();
    b[header_len + 2 * frame_size..header_len + 3 * frame_size].copy_from_slice(&f4);
    fs::write(p.join("spliced.bfs"), &b).unwrap();
    let args = ["info", "spliced.bfs", "--metrics", "m.csv"];
    let r = run_within(p, &args, QUICK);
    failed_naming(&r, &args, &["spliced.bfs", "frame 2", "index field says 4"]);
    assert!(!r.stderr.contains("checksum mismatch"), "{}", r.stderr);
    // The library says so with its own variant.
    let mut rd = Reader::open(&p.join("spliced.bfs")).unwrap();
    assert!(matches!(
        rd.read_frame(2),
        Err(bfs::BfsError::FrameIndex { frame: 2, found: 4 })
    ));
}

#[test]
fn info_metrics_to_a_full_device_names_the_file() {
    let d = tmp();
    let p = d.path();
    // Enough frames that the CSV fills its buffer (and fails) while the frames are read,
    // not only at the final flush (which named the file already).
    simulate(
        p,
        "many.bfs",
        r#"{"model": "vicsek", "agents": 20, "steps": 600, "name": "many"}"#,
    );
    if !Path::new("/dev/full").exists() {
        skip("info_metrics_to_a_full_device_names_the_file: no /dev/full");
        return;
    }
    let args = ["info", "many.bfs", "--metrics", "/dev/full", "--force"];
    let r = run_within(p, &args, QUICK);
    failed_naming(&r, &args, &["/dev/full", "No space left"]);
}

#[test]
fn an_unreadable_input_says_its_cause_once() {
    let d = tmp();
    let p = d.path();
    let args = ["info", "missing.bfs"];
    let r = run_within(p, &args, QUICK);
    failed_naming(&r, &args, &["missing.bfs", "No such file"]);
    assert_eq!(
        r.stderr.matches("No such file").count(),
        1,
        "the cause is said twice:\n{}",
        r.stderr
    );
}

#[test]
fn an_unknown_wgpu_backend_is_named_instead_of_asking_for_mesa() {
    let d = tmp();
    let p = d.path();
    let r = run_env(p, &["gpus"], &[("WGPU_BACKEND", "bogus")]);
    failed_naming(&r, &["gpus"], &["WGPU_BACKEND", "bogus", "not a backend"]);
    assert!(!r.stderr.contains("apt-get"), "{}", r.stderr);
    small_recording(p);
    let args = ["still", "small.bfs", "-o", "x.png"];
    let r = run_env(p, &args, &[("WGPU_BACKEND", "vulkan,bogus")]);
    failed_naming(&r, &args, &["WGPU_BACKEND", "bogus"]);
    assert!(!p.join("x.png").exists());
}

#[test]
fn without_xdg_runtime_dir_mesa_does_not_complain() {
    if !have_gpu("without_xdg_runtime_dir_mesa_does_not_complain") {
        return;
    }
    let d = tmp();
    let mut c = std::process::Command::new(forge_bin());
    c.current_dir(d.path())
        .arg("gpus")
        .env_remove("XDG_RUNTIME_DIR");
    let r = run_timed(&mut c, Duration::from_secs(120));
    no_panic(&r);
    assert!(r.ok(), "{}", r.stderr);
    assert!(!r.stderr.contains("XDG_RUNTIME_DIR"), "{}", r.stderr);
}

#[test]
fn bench_refuses_a_nan_or_infinite_duration() {
    let d = tmp();
    for v in ["NaN", "inf", "-1"] {
        let seconds = format!("--seconds={v}");
        let args = ["bench", &seconds, "--only", "boidforge"];
        let r = run_within(d.path(), &args, QUICK);
        failed_naming(&r, &args, &["--seconds", v]);
        assert!(r.stdout.is_empty(), "{}", r.stdout);
    }
}

/// A flag that the tables asked for would not read is refused, naming it and what reads it,
/// before anything is measured: render flags on the solver's tables and the other way round,
/// and a table's flag when `--only` leaves that table out.
#[test]
fn bench_refuses_flags_its_tables_would_not_read() {
    let d = tmp();
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["bench", "--render-sizes", "320x180", "--only", "crossover"],
            &["--render-sizes", "`forge bench render` only"],
        ),
        (
            &["bench", "--memory-frames", "20", "--only", "crossover"],
            &["--memory-frames", "`forge bench render` only"],
        ),
        (
            &["bench", "--only", "record", "--sizes", "1000"],
            &[
                "--sizes",
                "scaling table",
                "--only record",
                "--record-sizes",
            ],
        ),
        (
            &["bench", "--only", "scaling", "--record-sizes", "1000"],
            &["--record-sizes", "record table", "--only scaling"],
        ),
        (
            &["bench", "--only", "record", "--seconds", "1"],
            &["--seconds", "--only record"],
        ),
        (
            &["bench", "--only", "cuda", "--quick"],
            &["--quick", "--only cuda"],
        ),
        (
            &["bench", "render", "--sizes", "1000"],
            &["--sizes", "not by `forge bench render`"],
        ),
        (
            &["bench", "render", "--quick", "--only", "fps"],
            &["--quick", "not by `forge bench render`"],
        ),
        (
            &[
                "bench",
                "render",
                "--only",
                "fps",
                "--passes-size",
                "320x180",
            ],
            &["--passes-size", "passes table", "--only fps"],
        ),
        (
            &[
                "bench",
                "render",
                "--only",
                "passes",
                "--render-agents",
                "10",
            ],
            &["--render-agents", "fps table", "--only passes"],
        ),
    ];
    for (args, names) in cases {
        let r = run_within(d.path(), args, QUICK);
        failed_naming(&r, args, names);
        assert!(
            r.stdout.is_empty(),
            "forge {args:?} measured:\n{}",
            r.stdout
        );
    }
    // Sizes given with --quick are measured as given.
    let args = [
        "bench",
        "--quick",
        "--only",
        "scaling",
        "--sizes",
        "300",
        "--seconds",
        "0",
    ];
    let r = run_within(d.path(), &args, QUICK);
    assert!(r.ok(), "{}", r.stderr);
    assert!(r.stdout.contains("| 300 "), "{}", r.stdout);
    assert!(!r.stdout.contains("| 1000 "), "{}", r.stdout);
}
#[test]
fn a_recording_larger_than_the_free_space_is_announced_with_its_size() {
    let d = tmp();
    let p = d.path();
    write(
        p,
        "long.json",
        r#"{"model": "vicsek", "agents": 4000, "steps": 2147483648, "name": "long"}"#,
    );
    // 2^31 steps of 4000 agents, a frame every step: 125 TiB. The warning comes
    // before the first step; the run is then stopped (it would take days).
    let mut c = std::process::Command::new(forge_bin());
    c.current_dir(p)
        .args(["simulate", "long.json", "-o", "long.bfs", "--quiet"])
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        use std::io::Read;
        let mut buf = [0u8; 4096];
        let mut s = Vec::new();
        // The first line is enough.
        while !s.contains(&b'\n') {
            match err.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(k) => s.extend_from_slice(&buf[..k]),
            }
        }
        String::from_utf8_lossy(&s).into_owned()
    });
    let t0 = Instant::now();
    while !reader.is_finished() && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().ok();
    child.wait().ok();
    let line = reader.join().unwrap();
    let free = forge::sys::available_space(p).unwrap();
    if free > 130 << 40 {
        skip("a_recording_larger_than_the_free_space_is_announced: over 130 TiB free here");
        return;
    }
    // 2147483649 frames of 4000 agents (64024 bytes each).
    for want in [
        "warning",
        "125.05 TiB",
        "2147483649 frames",
        "4000 agents",
        "free",
    ] {
        assert!(line.contains(want), "no {want:?} in {line:?}");
    }
}

/// What forge writes to standard output (`--help`, `--version`, `completions`, `man`) fails
/// with a message and a non-zero status when it cannot be written (a full device, a closed
/// pipe): never a panic, never a success.
#[test]
fn output_that_cannot_be_written_fails_clearly() {
    use std::process::Stdio;
    let d = tmp();
    let cases: [&[&str]; 6] = [
        &["--help"],
        &["--version"],
        &["simulate", "--help"],
        &["completions", "bash"],
        &["completions", "zsh"],
        &["man"],
    ];
    for args in cases {
        if Path::new("/dev/full").exists() {
            let full = fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap();
            let r = run_process(
                std::process::Command::new(forge_bin())
                    .current_dir(d.path())
                    .args(args)
                    .stdout(full),
            );
            assert_ne!(r.code, Some(0), "forge {args:?} > /dev/full succeeded");
            assert!(!r.stderr.contains("panicked"), "{args:?}: {}", r.stderr);
            assert!(
                r.stderr.contains("standard output"),
                "{args:?}: {}",
                r.stderr
            );
        }
        // A pipe whose reader has gone: the write fails with EPIPE (SIGPIPE is ignored).
        let mut child = std::process::Command::new(forge_bin())
            .current_dir(d.path())
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_ne!(out.status.code(), Some(101), "{args:?}: {stderr}");
    }
}

/// Every look value has a range, checked in one place for the flag, the look file and the
/// scene's `render` section: a value that would render a white or an empty frame is refused
/// naming the field and its range, and nothing is written.
#[test]
fn look_values_out_of_range_are_refused_everywhere() {
    let d = tmp();
    let p = d.path();
    simulate(
        p,
        "l.bfs",
        r#"{"model": "vicsek", "agents": 20, "steps": 2}"#,
    );
    for (flag, field, value, range) in [
        ("--exposure", "exposure", "1e9", "[0, 100]"),
        ("--bloom", "bloom", "3.4e38", "[0, 10]"),
        ("--point-size", "point_size", "1e6", "[0, 64]"),
        ("--vignette", "vignette", "1e9", "[0, 4]"),
    ] {
        let args = ["still", "l.bfs", "-o", "x.png", flag, value];
        let r = run_within(p, &args, QUICK);
        failed_naming(&r, &args, &[flag, range]);
        fs::write(p.join("look.json"), format!(r#"{{"{field}": {value}}}"#)).unwrap();
        let args = ["still", "l.bfs", "-o", "x.png", "--look", "look.json"];
        let r = run_within(p, &args, QUICK);
        failed_naming(&r, &args, &[field, range]);
        fs::write(
            p.join("s.json"),
            format!(
                r#"{{"model": "vicsek", "agents": 20, "steps": 2, "render": {{"{field}": {value}}}}}"#
            ),
        )
        .unwrap();
        let args = ["simulate", "s.json", "-o", "s.bfs"];
        let r = run_within(p, &args, QUICK);
        failed_naming(&r, &args, &[&format!("scene.render.{field}"), range]);
        no_output(p, "x.png");
        no_output(p, "s.bfs");
    }
}

/// `forge view --bench-frames` on a recording of one frame (nothing to play) is refused at
/// once, naming the flag and the file, instead of spinning.
#[test]
fn bench_frames_on_a_single_frame_is_refused() {
    let d = tmp();
    let p = d.path();
    simulate(
        p,
        "one.bfs",
        r#"{"model": "vicsek", "agents": 20, "steps": 0}"#,
    );
    let args = ["view", "one.bfs", "--bench-frames", "5"];
    let r = run_within(p, &args, QUICK);
    failed_naming(&r, &args, &["--bench-frames", "one.bfs", "holds 1 frame;"]);
}

/// A scene's lists have their limits counted while the file is parsed: a million obstacles
/// (45 MB of JSON) are refused at the 4097th, in little memory, naming the field; species
/// likewise.
#[test]
fn a_scene_list_over_its_limit_is_refused_before_it_is_read() {
    let d = tmp();
    let p = d.path();
    let shapes = vec![r#"{"circle": {"center": [1, 1], "radius": 1}}"#; 1_000_000].join(",");
    write(
        p,
        "many.json",
        &format!(r#"{{"model": "boids", "agents": 10, "obstacles": [{shapes}]}}"#),
    );
    let m = peak_memory(p, &["simulate", "many.json", "-o", "x.bfs"], &[]);
    failed(&m.run, &["simulate", "many.json"]);
    has(&m.run.stderr, "scene.obstacles");
    has(&m.run.stderr, "at most 4096");
    assert!(m.peak_mb < 200.0, "{:.0} MB", m.peak_mb);
    let species: Vec<String> = (0..300)
        .map(|i| format!(r#"{{"name": "s{i}", "agents": 1}}"#))
        .collect();
    write(
        p,
        "species.json",
        &format!(
            r#"{{"model": "boids", "agents": 300, "species": [{}]}}"#,
            species.join(",")
        ),
    );
    let r = run_within(p, &["simulate", "species.json", "-o", "x.bfs"], QUICK);
    failed_naming(
        &r,
        &["simulate", "species.json"],
        &["scene.species", "at most 256"],
    );
    no_output(p, "x.bfs");
}

/// A frame size no GPU takes is refused before anything is sized by it: little memory, the
/// flag named.
#[test]
fn an_impossible_frame_size_is_refused_before_memory_is_taken() {
    let d = tmp();
    let p = d.path();
    simulate(
        p,
        "l.bfs",
        r#"{"model": "vicsek", "agents": 20, "steps": 2}"#,
    );
    for size in ["2147483648x2", "2x4294967294", "70000x2"] {
        let args = ["still", "l.bfs", "-o", "x.png", "--size", size];
        let m = peak_memory(p, &args, &[]);
        failed(&m.run, &args);
        has(&m.run.stderr, "--size");
        has(&m.run.stderr, "at most 65536");
        assert!(m.peak_mb < 300.0, "--size {size}: {:.0} MB", m.peak_mb);
        no_output(p, "x.png");
    }
}

/// A value the user did not write is never named in an error: `w_chase` and `w_flee` default
/// to `max_force`, and a `max_force` near the limit is not reported as theirs.
#[test]
fn defaults_taken_from_another_field_are_not_reported_as_errors() {
    let d = tmp();
    let p = d.path();
    write(
        p,
        "s.json",
        r#"{"model": "boids", "steps": 2, "boids": {"max_force": 1e30},
            "species": [
              {"name": "prey", "agents": 30, "boids": {"flee_radius": 50}},
              {"name": "hawk", "agents": 1, "role": "predator", "boids": {"chase_radius": 80}}
            ]}"#,
    );
    let r = run_within(p, &["simulate", "s.json", "-o", "x.bfs"], QUICK);
    for never in ["w_chase", "w_flee"] {
        assert!(!r.stderr.contains(never), "{never} named:\n{}", r.stderr);
    }
    no_panic(&r);
}

/// A byte-order mark before the JSON (Windows Notepad saves one) is not a syntax error: the
/// scene and the look read as without it, and the recording is the one the plain file gives.
#[test]
fn a_scene_or_look_file_with_a_byte_order_mark_reads_as_without_it() {
    let d = tmp();
    let p = d.path();
    let scene = r#"{"model": "vicsek", "agents": 30, "steps": 3, "name": "bom"}"#;
    simulate(p, "plain.bfs", scene);
    fs::write(p.join("bom.json"), format!("\u{feff}{scene}")).unwrap();
    succeeds(p, &["simulate", "bom.json", "-o", "bom.bfs", "--quiet"]);
    assert_eq!(
        fs::read(p.join("bom.bfs")).unwrap(),
        fs::read(p.join("plain.bfs")).unwrap()
    );
    if !have_gpu("a_scene_or_look_file_with_a_byte_order_mark_reads_as_without_it") {
        return;
    }
    fs::write(p.join("look.json"), "\u{feff}{\"size\": [64, 36]}").unwrap();
    succeeds(
        p,
        &["still", "bom.bfs", "-o", "x.png", "--look", "look.json"],
    );
    assert_eq!(decode_png(&p.join("x.png")), (64, 36));
}
