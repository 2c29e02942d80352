//! Outputs through the real binary: nothing lost, nothing clobbered (DESIGN.md, "Failure is
//! part of the design").
//!
//! - two runs writing one output: the second is refused at once, the first is unaffected;
//! - an output is never the same file as an input (device and inode), even with --force;
//! - a full disk keeps a recording's complete frames (under its `.partial` name);
//! - SIGINT and SIGTERM stop the work cleanly: FFmpeg stopped, temporary files removed, a
//!   recording's complete frames kept, exit 130 / 143;
//! - a scene's name never leads a default output out of the current folder;
//! - every output of a command is checked against the others and existing files before any
//!   work.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// A Vicsek scene that records every 10th step: `agents` particles at density 4, `steps`
/// steps (1000 agents: about 2500 steps/s on one thread).
fn slow_scene(agents: u32, steps: u64) -> String {
    let side = (agents as f64 / 4.0).sqrt();
    format!(
        r#"{{"name": "slow", "model": "vicsek", "agents": {agents}, "steps": {steps},
            "record_every": 10, "seed": 7,
            "world": {{"size": [{side}, {side}], "boundary": "wrap"}}}}"#
    )
}

const TINY: &str = r#"{
  "name": "tiny",
  "model": "boids",
  "agents": 20,
  "steps": 3,
  "seed": 4,
  "world": { "size": [100, 100], "boundary": "wrap" }
}"#;

/// forge started in `dir` in the background (stdout dropped, stderr kept for the end).
fn spawn(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Child {
    let mut c = Command::new(forge_bin());
    c.args(args)
        .current_dir(dir)
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    c.spawn().expect("forge starts")
}

/// Waits (up to `secs`) until `ready` holds; fails if forge exits first or never gets there.
fn wait_until(child: &mut Child, what: &str, secs: u64, mut ready: impl FnMut() -> bool) {
    let t0 = Instant::now();
    loop {
        if ready() {
            return;
        }
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            panic!("forge stopped ({status}) before {what}:\n{err}");
        }
        if t0.elapsed() > Duration::from_secs(secs) {
            let _ = child.kill();
            panic!("forge did not get to {what} within {secs} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends `signal` (`INT`, `TERM`) to `child`.
fn send(child: &Child, signal: &str) {
    let ok = Command::new("kill")
        .args([format!("-{signal}"), child.id().to_string()])
        .status()
        .expect("kill runs")
        .success();
    assert!(ok, "kill -{signal} failed");
}

/// Waits (up to `secs`) for `child` to exit: its code (None: killed by a signal) and stderr.
fn finish(mut child: Child, secs: u64) -> (Option<i32>, String) {
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > Duration::from_secs(secs) {
            let _ = child.kill();
            panic!("forge did not exit within {secs} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut err);
    }
    assert!(!err.contains("panicked"), "forge panicked:\n{err}");
    (status.code(), err)
}

/// The temporary files of output `name` in `dir`: `name.XXXXXX.partial`.
fn partials_of(dir: &Path, name: &str) -> Vec<PathBuf> {
    listing(dir)
        .into_iter()
        .filter(|n| n.starts_with(&format!("{name}.")) && n.ends_with(".partial"))
        .map(|n| dir.join(n))
        .collect()
}

/// The size of the (first) temporary file of `name`, 0 if none yet.
fn partial_size(dir: &Path, name: &str) -> u64 {
    partials_of(dir, name)
        .first()
        .and_then(|p| fs::metadata(p).ok())
        .map(|m| m.len())
        .unwrap_or(0)
}

/// Temporary files and locks left in `dir`: `*.partial*`, `*.tmp`, `.*.lock`.
fn leftovers(dir: &Path) -> Vec<String> {
    listing(dir)
        .into_iter()
        .filter(|n| n.contains(".partial") || n.ends_with(".tmp") || n.ends_with(".lock"))
        .collect()
}

fn no_leftovers(dir: &Path) {
    assert_eq!(leftovers(dir), Vec::<String>::new(), "in {}", dir.display());
}

fn info_json(dir: &Path, file: &str) -> serde_json::Value {
    let out = succeeds(dir, &["info", file, "--json"]).stdout;
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}"))
}

/// The number after "the " and before " complete frame" in a message.
fn frames_said(msg: &str) -> u64 {
    let i = msg
        .find(" complete frame")
        .unwrap_or_else(|| panic!("no frame count in:\n{msg}"));
    let head = &msg[..i];
    let j = head.rfind(' ').unwrap();
    head[j + 1..].parse().unwrap()
}

/// A recording of `frames` frames of 200 agents, `r.bfs` in `dir`.
fn recording(dir: &Path, frames: u64) {
    write(dir, "r.json", &slow_scene(200, (frames - 1) * 10));
    succeeds(dir, &["simulate", "r.json", "-o", "r.bfs", "--quiet"]);
}

/// Frames in a video, counted by decoding it.
fn video_frames(path: &Path) -> u64 {
    let out = Command::new("ffprobe")
        .args(["-v", "error", "-count_frames", "-select_streams", "v:0"])
        .args(["-show_entries", "stream=nb_read_frames", "-of", "csv=p=0"])
        .arg(path)
        .output()
        .expect("ffprobe runs");
    assert!(
        out.status.success(),
        "ffprobe {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// Processes whose command line mentions `text` (an FFmpeg writing into a test's folder).
fn processes_mentioning(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmd) = fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains(text) {
            found.push(cmd);
        }
    }
    found
}

// ---------------------------------------------------------------------------------------
// 1. Two runs writing one output
// ---------------------------------------------------------------------------------------

#[test]
fn a_second_writer_of_a_recording_is_refused_at_once() {
    let d = tmp();
    let p = d.path();
    write(p, "slow.json", &slow_scene(1000, 15_000));
    let mut first = spawn(
        p,
        &[
            "simulate",
            "slow.json",
            "-o",
            "same.bfs",
            "--quiet",
            "--threads",
            "1",
        ],
        &[],
    );
    wait_until(&mut first, "recording", 60, || {
        partial_size(p, "same.bfs") > 200_000
    });
    for force in [false, true] {
        let mut args = vec![
            "simulate", "vicsek", "--seed", "2", "--steps", "10", "-o", "same.bfs", "--quiet",
        ];
        if force {
            args.push("--force");
        }
        let t0 = Instant::now();
        let err = fails(p, &args);
        has(&err, "same.bfs");
        has(&err, "is being written by another forge process");
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "refused only after {:?}",
            t0.elapsed()
        );
        assert!(
            first.try_wait().unwrap().is_none(),
            "the first run ended before the second was refused: not a test of 'at once'"
        );
    }
    // `forge run` keeping its recording there is refused too, before simulating.
    let err = fails_env(
        p,
        &[
            "run", "vicsek", "--bfs", "same.bfs", "-o", "v.mp4", "--force", "-q",
        ],
        NO_GPU,
    );
    has(&err, "is being written by another forge process");
    assert_eq!(
        partials_of(p, "same.bfs").len(),
        1,
        "one writer, one partial"
    );

    let (code, err) = finish(first, 240);
    assert_eq!(code, Some(0), "the first run failed:\n{err}");
    let v = info_json(p, "same.bfs");
    assert_eq!(v["frames"], 1501, "{v}");
    assert_eq!(v["seed"], 7, "the first run's recording: {v}");
    assert_eq!(v["finalized"], true);
    assert_eq!(v["warnings"].as_array().unwrap().len(), 0, "{v}");
    no_leftovers(p);
}

#[test]
fn a_second_render_of_the_same_video_is_refused_at_once() {
    if !have_gpu("a_second_render_of_the_same_video_is_refused_at_once")
        || !have_ffmpeg("a_second_render_of_the_same_video_is_refused_at_once")
    {
        return;
    }
    let d = tmp();
    let p = d.path();
    recording(p, 301);
    let mut first = spawn(
        p,
        &[
            "render", "r.bfs", "--size", "160x90", "-o", "same.mp4", "-q",
        ],
        &[],
    );
    wait_until(&mut first, "creating the video", 120, || {
        !partials_of(p, "same.mp4").is_empty()
    });
    for args in [
        &[
            "render", "r.bfs", "--size", "160x90", "-o", "same.mp4", "--force", "-q",
        ][..],
        &[
            "render",
            "r.bfs",
            "--size",
            "160x90",
            "-o",
            "./same.mp4",
            "-q",
        ][..],
    ] {
        let err = fails_env(p, args, NO_GPU);
        has(&err, "same.mp4");
        has(&err, "is being written by another forge process");
    }
    assert!(
        first.try_wait().unwrap().is_none(),
        "the first render ended too soon"
    );
    let (code, err) = finish(first, 240);
    assert_eq!(code, Some(0), "the first render failed:\n{err}");
    assert_eq!(video_frames(&p.join("same.mp4")), 301);
    no_leftovers(p);
}

#[test]
fn lock_files_left_by_killed_runs_block_nothing() {
    let d = tmp();
    let p = d.path();
    write(p, "tiny.json", TINY);
    // What a run killed outright (SIGKILL) leaves: its lock file and its partial.
    fs::write(p.join(".t.bfs.lock"), b"").unwrap();
    fs::write(p.join("t.bfs.Ab3xZ9.partial"), b"an earlier run's frames").unwrap();
    succeeds(p, &["simulate", "tiny.json", "-o", "t.bfs", "--quiet"]);
    assert_eq!(info_json(p, "t.bfs")["frames"], 4);
    assert_eq!(
        listing(p),
        ["t.bfs", "t.bfs.Ab3xZ9.partial", "tiny.json"],
        "the lock file is removed; another run's partial is left alone"
    );
    assert_eq!(
        fs::read(p.join("t.bfs.Ab3xZ9.partial")).unwrap(),
        b"an earlier run's frames"
    );
}

/// The SIGKILL promise with the new names: the partial opens with every complete frame.
#[cfg(unix)]
#[test]
fn a_run_killed_outright_leaves_a_partial_that_opens() {
    let d = tmp();
    let p = d.path();
    write(p, "slow.json", &slow_scene(1000, 1_000_000));
    let mut child = spawn(
        p,
        &[
            "simulate",
            "slow.json",
            "-o",
            "k.bfs",
            "--quiet",
            "--threads",
            "1",
        ],
        &[],
    );
    wait_until(&mut child, "recording", 60, || {
        partial_size(p, "k.bfs") > 500_000
    });
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let kept = partials_of(p, "k.bfs");
    assert_eq!(kept.len(), 1, "{:?}", listing(p));
    assert!(!p.join("k.bfs").exists());
    let name = kept[0].file_name().unwrap().to_str().unwrap().to_string();
    let v = info_json(p, &name);
    assert!(v["frames"].as_u64().unwrap() >= 10, "{v}");
    assert_eq!(v["finalized"], false);
    // Its lock died with it: the next run of the same output is not blocked, and leaves the
    // killed run's partial alone.
    succeeds(
        p,
        &[
            "simulate",
            "slow.json",
            "--steps",
            "20",
            "-o",
            "k.bfs",
            "--quiet",
        ],
    );
    assert_eq!(info_json(p, "k.bfs")["frames"], 3);
    assert_eq!(partials_of(p, "k.bfs"), kept);
    assert!(!p.join(".k.bfs.lock").exists());
}

// ---------------------------------------------------------------------------------------
// 2. An output is never an input
// ---------------------------------------------------------------------------------------

/// `args` fails naming `names`, leaves `keep` (relative to `dir`) as it was and no temporary
/// file or lock behind.
fn refused_keeping(dir: &Path, args: &[&str], names: &[&str], keep: &str) {
    let before = fs::read(dir.join(keep)).unwrap();
    let err = fails_cleanly_env(dir, args, NO_GPU, names, &[]);
    has(&err, "same file");
    assert!(
        fs::read(dir.join(keep)).unwrap() == before,
        "{args:?} changed {keep}"
    );
    no_leftovers(dir);
}

#[test]
fn an_output_is_never_an_input() {
    let d = tmp();
    let p = d.path();
    write(p, "s.json", TINY);
    succeeds(p, &["simulate", "s.json", "-o", "a.bfs", "--quiet"]);
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("s.json", p.join("link.json")).unwrap();
        fs::hard_link(p.join("a.bfs"), p.join("hard.bfs")).unwrap();
    }
    // The scene file.
    for out in ["s.json", "./s.json", "link.json"] {
        refused_keeping(
            p,
            &["simulate", "s.json", "-o", out, "--force", "--quiet"],
            &[out, "s.json"],
            "s.json",
        );
        refused_keeping(
            p,
            &["run", "s.json", "-o", out, "--force", "-q"],
            &[out, "s.json"],
            "s.json",
        );
        refused_keeping(
            p,
            &["run", "s.json", "--bfs", out, "--force", "-q"],
            &[out, "s.json"],
            "s.json",
        );
        refused_keeping(
            p,
            &[
                "sweep",
                "s.json",
                "--vary",
                "w_ali=1,2",
                "--seeds",
                "1",
                "--equilibrate",
                "1",
                "--measure",
                "1",
                "-o",
                out,
                "--force",
                "-q",
            ],
            &[out, "s.json"],
            "s.json",
        );
    }
    // A recording read by render, still and info.
    for out in ["a.bfs", "./a.bfs", "hard.bfs"] {
        for args in [
            &["render", "a.bfs", "-o", out, "--force", "-q"][..],
            &["still", "a.bfs", "-o", out, "--force", "-q"][..],
            &["info", "a.bfs", "--metrics", out, "--force"][..],
        ] {
            refused_keeping(p, args, &[out, "a.bfs"], "a.bfs");
        }
    }
    // --plot needs a .png name: a recording called so.
    fs::copy(p.join("a.bfs"), p.join("r.png")).unwrap();
    refused_keeping(
        p,
        &["info", "r.png", "--plot", "./r.png", "--force"],
        &["./r.png", "r.png"],
        "r.png",
    );
    // A scene's initial condition.
    write(
        p,
        "init.json",
        r#"{"name": "init", "model": "boids", "steps": 2, "world": {"size": [100, 100]},
            "init": {"layout": "file", "path": "a.bfs"}}"#,
    );
    refused_keeping(
        p,
        &["simulate", "init.json", "-o", "a.bfs", "--force", "--quiet"],
        &["a.bfs", "scene.init.path"],
        "a.bfs",
    );
    refused_keeping(
        p,
        &["run", "init.json", "--bfs", "./a.bfs", "--force", "-q"],
        &["a.bfs", "scene.init.path"],
        "a.bfs",
    );
    assert_eq!(
        info_json(p, "a.bfs")["frames"],
        4,
        "the recording still reads"
    );
    // The look's files: a --look file, a background picture named by a flag, by the look
    // file or by the recording's scene. (Their contents are never parsed: refused first.)
    write(
        p,
        "look.json",
        r#"{"exposure": 2, "background_image": "plate.png"}"#,
    );
    fs::write(p.join("plate.png"), b"a picture").unwrap();
    fs::write(p.join("plate.mp4"), b"a picture").unwrap();
    for (args, names, keep) in [
        (
            &[
                "still",
                "a.bfs",
                "--background-image",
                "plate.png",
                "-o",
                "plate.png",
            ][..],
            &["plate.png", "--background-image"][..],
            "plate.png",
        ),
        (
            &["still", "a.bfs", "--look", "look.json", "-o", "./plate.png"],
            &["./plate.png", "background_image of --look look.json"],
            "plate.png",
        ),
        (
            &[
                "render",
                "a.bfs",
                "--background-image",
                "plate.mp4",
                "-o",
                "plate.mp4",
            ],
            &["plate.mp4", "--background-image"],
            "plate.mp4",
        ),
        (
            &[
                "run",
                "s.json",
                "--background-image",
                "plate.png",
                "--bfs",
                "plate.png",
            ],
            &["--bfs plate.png", "--background-image"],
            "plate.png",
        ),
        (
            &["run", "s.json", "--look", "look.json", "--bfs", "look.json"],
            &["--bfs look.json", "--look look.json"],
            "look.json",
        ),
    ] {
        let mut args = args.to_vec();
        args.extend(["--force", "-q"]);
        refused_keeping(p, &args, names, keep);
    }
    write(
        p,
        "bg.json",
        &TINY.replace(
            r#""seed": 4,"#,
            r#""seed": 4, "render": {"background_image": "plate.png"},"#,
        ),
    );
    succeeds(p, &["simulate", "bg.json", "-o", "bg.bfs", "--quiet"]);
    refused_keeping(
        p,
        &["run", "bg.json", "--bfs", "plate.png", "--force", "-q"],
        &["--bfs plate.png", "scene.render.background_image"],
        "plate.png",
    );
    // A still of that recording: its picture is read (so a real one) before the refusal.
    image::RgbaImage::from_pixel(8, 8, image::Rgba([40, 60, 80, 255]))
        .save(p.join("plate.png"))
        .unwrap();
    refused_keeping(
        p,
        &["still", "bg.bfs", "-o", "plate.png", "--force", "-q"],
        &["output plate.png", "scene.render.background_image"],
        "plate.png",
    );
}

// ---------------------------------------------------------------------------------------
// 3. A full disk
// ---------------------------------------------------------------------------------------

/// After a recording ran out of room: a clean failure that says how many complete frames are
/// kept and where, and a partial holding exactly those.
fn check_kept_on_a_full_disk(dir: &Path, code: Option<i32>, err: &str, listing: &[String]) {
    assert_eq!(code, Some(1), "a clean failure, not a signal:\n{err}");
    has(err, "error");
    assert!(!listing.iter().any(|n| n == "full.bfs"), "{listing:?}");
    assert!(!listing.iter().any(|n| n.ends_with(".lock")), "{listing:?}");
    let kept: Vec<&String> = listing.iter().filter(|n| n.ends_with(".partial")).collect();
    assert_eq!(kept.len(), 1, "one partial kept: {listing:?}");
    has(err, kept[0]);
    let n = frames_said(err);
    assert!(n >= 2, "{err}");
    let v = info_json(dir, kept[0]);
    assert_eq!(v["frames"].as_u64(), Some(n), "the message's count: {v}");
    assert_eq!(v["agents"], 200);
}

#[cfg(unix)]
#[test]
fn a_full_disk_keeps_the_complete_frames_file_size_limit() {
    // RLIMIT_FSIZE (ulimit -f) with SIGXFSZ ignored: writes past it fail with EFBIG, as a
    // full disk fails them with ENOSPC. Needs no privileges.
    let d = tmp();
    let p = d.path();
    write(p, "full.json", &slow_scene(200, 20_000));
    let r = run_process(
        Command::new("sh")
            .arg("-c")
            .arg("trap '' XFSZ; ulimit -f 400; exec \"$0\" simulate full.json -o full.bfs --quiet")
            .arg(forge_bin())
            .current_dir(p),
    );
    no_panic(&r);
    check_kept_on_a_full_disk(p, r.code, &r.stderr, &listing(p));
}

#[cfg(unix)]
#[test]
fn a_full_disk_keeps_the_complete_frames_tmpfs() {
    // A real ENOSPC: a 256 KiB tmpfs, mounted in a private mount namespace (unshare -m), so
    // that it goes with the shell. Skipped where that is not allowed (not root), unless
    // FORGE_REQUIRE_TMPFS=1 (scripts/test.sh, as root).
    let d = tmp();
    let p = d.path();
    let disk = p.join("disk");
    let out = p.join("out");
    fs::create_dir(&disk).unwrap();
    fs::create_dir(&out).unwrap();
    write(&out, "full.json", &slow_scene(200, 20_000));
    let script = r#"
        mount -t tmpfs -o size=256k forge-test "$1" 2>/dev/null || exit 99
        cd "$1" && cp "$2/full.json" . || exit 98
        "$3" simulate full.json -o full.bfs --quiet 2>"$2/stderr"
        echo $? >"$2/rc"
        ls -A >"$2/listing"
        for f in *.partial; do [ -e "$f" ] && cp "$f" "$2/"; done
        rm -f full.json
        exit 0
    "#;
    let r = run_process(
        Command::new("unshare")
            .args(["-m", "sh", "-c", script, "sh"])
            .arg(&disk)
            .arg(&out)
            .arg(forge_bin()),
    );
    if r.code != Some(0) {
        skip_unless_required(
            "FORGE_REQUIRE_TMPFS",
            &format!(
                "a_full_disk_keeps_the_complete_frames_tmpfs: cannot mount a tmpfs here ({:?}): {}",
                r.code, r.stderr
            ),
        );
        return;
    }
    let err = fs::read_to_string(out.join("stderr")).unwrap();
    has(&err, "No space left");
    let code: i32 = fs::read_to_string(out.join("rc"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let names: Vec<String> = fs::read_to_string(out.join("listing"))
        .unwrap()
        .lines()
        .filter(|l| *l != "full.json")
        .map(String::from)
        .collect();
    check_kept_on_a_full_disk(&out, Some(code), &err, &names);
}

// ---------------------------------------------------------------------------------------
// 4. Signals
// ---------------------------------------------------------------------------------------

#[cfg(unix)]
#[test]
fn a_signal_stops_simulate_and_keeps_its_frames() {
    for (signal, code) in [("INT", 130), ("TERM", 143)] {
        let d = tmp();
        let p = d.path();
        write(p, "slow.json", &slow_scene(1000, 1_000_000));
        let mut child = spawn(
            p,
            &[
                "simulate",
                "slow.json",
                "-o",
                "k.bfs",
                "--quiet",
                "--threads",
                "1",
            ],
            &[],
        );
        wait_until(&mut child, "recording", 60, || {
            partial_size(p, "k.bfs") > 300_000
        });
        send(&child, signal);
        let (got, err) = finish(child, 30);
        assert_eq!(got, Some(code), "SIG{signal}:\n{err}");
        has(&err, &format!("interrupted by SIG{signal}"));
        let kept = partials_of(p, "k.bfs");
        assert_eq!(kept.len(), 1, "{:?}", listing(p));
        let name = kept[0].file_name().unwrap().to_str().unwrap().to_string();
        has(&err, &name);
        assert!(
            !p.join("k.bfs").exists(),
            "a stopped run is not the finished recording"
        );
        assert!(!p.join(".k.bfs.lock").exists());
        // The kept frames are a finished recording of the steps run.
        let v = info_json(p, &name);
        assert_eq!(v["finalized"], true, "{v}");
        assert!(v["frames"].as_u64().unwrap() >= 10, "{v}");
        assert_eq!(v["frames"].as_u64(), Some(frames_said(&err)), "{err}");
    }
}

#[cfg(unix)]
#[test]
fn a_signal_stops_render_and_still_and_their_ffmpeg() {
    if !have_gpu("a_signal_stops_render_and_still_and_their_ffmpeg")
        || !have_ffmpeg("a_signal_stops_render_and_still_and_their_ffmpeg")
    {
        return;
    }
    let d = tmp();
    let p = d.path();
    recording(p, 3001);
    let before = listing(p);
    let mut render = spawn(
        p,
        &["render", "r.bfs", "--size", "160x90", "-o", "v.mp4", "-q"],
        &[],
    );
    wait_until(&mut render, "encoding", 120, || {
        partial_size(p, "v.mp4") > 0
    });
    // FFmpeg is given the name as forge writes it: the random part makes it unique.
    let partial = partials_of(p, "v.mp4")[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(
        !processes_mentioning(&partial).is_empty(),
        "FFmpeg writes {partial}"
    );
    send(&render, "INT");
    let (code, err) = finish(render, 60);
    assert_eq!(code, Some(130), "{err}");
    has(&err, "interrupted by SIGINT");
    assert_eq!(
        listing(p),
        before,
        "the video's partial and lock are removed"
    );
    let left = processes_mentioning(&partial);
    assert!(left.is_empty(), "FFmpeg still running: {left:?}");

    // A still whose trails need every frame before it (large enough that warming them up
    // takes longer than the wait below).
    let mut still = spawn(
        p,
        &[
            "still",
            "r.bfs",
            "--frame",
            "3000",
            "--trails",
            "0.999",
            "--size",
            "1920x1080",
            "-o",
            "s.png",
            "-q",
        ],
        &[],
    );
    wait_until(&mut still, "rendering", 120, || {
        !partials_of(p, "s.png").is_empty()
    });
    std::thread::sleep(Duration::from_millis(1500));
    send(&still, "TERM");
    let (code, err) = finish(still, 60);
    assert_eq!(code, Some(143), "{err}");
    assert_eq!(listing(p), before);
}

#[cfg(unix)]
#[test]
fn a_signal_stops_forge_run_and_removes_its_temporary_files() {
    let d = tmp();
    let p = d.path();
    let t = p.join("tmp");
    fs::create_dir(&t).unwrap();
    let env = [("TMPDIR", t.to_str().unwrap())];
    // While simulating: the recording in /tmp/forge-run-* goes with its folder.
    write(p, "slow.json", &slow_scene(1000, 1_000_000));
    let mut child = spawn(
        p,
        &["run", "slow.json", "--size", "160x90", "-o", "v.mp4", "-q"],
        &env,
    );
    let recording_grew = || {
        fs::read_dir(&t).unwrap().flatten().any(|e| {
            let dir = e.path();
            e.file_name().to_string_lossy().starts_with("forge-run-")
                && partial_size(&dir, "slow.bfs") > 300_000
        })
    };
    wait_until(&mut child, "simulating", 60, recording_grew);
    send(&child, "INT");
    let (code, err) = finish(child, 30);
    assert_eq!(code, Some(130), "{err}");
    assert_eq!(
        listing(&t),
        Vec::<String>::new(),
        "the temporary folder is removed"
    );
    assert_eq!(listing(p), ["slow.json", "tmp"]);

    if !have_gpu("a_signal_stops_forge_run, while rendering")
        || !have_ffmpeg("a_signal_stops_forge_run, while rendering")
    {
        return;
    }
    // While rendering, with the recording kept (--bfs): it stays, the video goes.
    write(p, "short.json", &slow_scene(200, 30_000));
    let mut child = spawn(
        p,
        &[
            "run",
            "short.json",
            "--bfs",
            "keep.bfs",
            "--size",
            "160x90",
            "-o",
            "v.mp4",
            "-q",
        ],
        &env,
    );
    wait_until(&mut child, "encoding", 180, || partial_size(p, "v.mp4") > 0);
    send(&child, "TERM");
    let (code, err) = finish(child, 60);
    assert_eq!(code, Some(143), "{err}");
    assert_eq!(listing(&t), Vec::<String>::new());
    assert_eq!(listing(p), ["keep.bfs", "short.json", "slow.json", "tmp"]);
    assert_eq!(info_json(p, "keep.bfs")["frames"], 3001);
}

#[cfg(unix)]
#[test]
fn a_signal_stops_a_sweep_which_keeps_its_partial() {
    let d = tmp();
    let p = d.path();
    write(p, "slow.json", &slow_scene(1000, 10));
    let mut child = spawn(
        p,
        &[
            "sweep",
            "slow.json",
            "--vary",
            "noise=0:5:0.5",
            "--seeds",
            "2",
            "--equilibrate",
            "1000000",
            "--measure",
            "10",
            "--jobs",
            "1",
            "-o",
            "out.csv",
            "-q",
        ],
        &[],
    );
    wait_until(&mut child, "sweeping", 60, || {
        p.join("out.csv.partial").exists()
    });
    // A second sweep into the same CSV, even with --force, is refused while this one runs.
    let err = fails(
        p,
        &[
            "sweep",
            "slow.json",
            "--vary",
            "noise=1",
            "--seeds",
            "1",
            "--equilibrate",
            "1",
            "--measure",
            "1",
            "-o",
            "out.csv",
            "--force",
            "-q",
        ],
    );
    has(&err, "out.csv");
    has(&err, "is being written by another forge process");
    assert!(
        child.try_wait().unwrap().is_none(),
        "the first sweep ended too soon"
    );
    send(&child, "INT");
    let (code, err) = finish(child, 30);
    assert_eq!(code, Some(130), "{err}");
    has(&err, "--resume");
    assert_eq!(listing(p), ["out.csv.partial", "slow.json"]);
    assert!(fs::read_to_string(p.join("out.csv.partial"))
        .unwrap()
        .starts_with("noise,"));
}

// ---------------------------------------------------------------------------------------
// 5. A scene's name is a file name, never a path
// ---------------------------------------------------------------------------------------

#[test]
fn a_scene_name_never_leads_out_of_the_folder() {
    let d = tmp();
    let p = d.path();
    let work = p.join("work");
    fs::create_dir(&work).unwrap();
    fs::write(p.join("victim.mp4"), "precious").unwrap();
    let abs = p.join("victim");
    let names = [
        "../escaped".to_string(),
        abs.display().to_string(),
        "sub/x".to_string(),
        "..".to_string(),
        "a\\b".to_string(),
        "bell\u{7}".to_string(),
        "red\u{1b}[31m".to_string(),
        "nul\u{0}".to_string(),
    ];
    for name in &names {
        let scene = serde_json::json!({
            "name": name, "model": "boids", "agents": 20, "steps": 3,
            "world": {"size": [100, 100]}
        });
        write(&work, "s.json", &scene.to_string());
        for args in [
            &["simulate", "s.json", "--quiet"][..],
            &["simulate", "s.json", "-o", "fine.bfs", "--quiet"][..],
            &["run", "s.json", "--force", "-q"][..],
        ] {
            let err = fails_cleanly_env(&work, args, NO_GPU, &["scene.name"], &[]);
            has(&err, "file");
        }
        assert_eq!(listing(&work), ["s.json"], "name {name:?}");
    }
    assert_eq!(listing(p), ["victim.mp4", "work"]);
    assert_eq!(
        fs::read_to_string(p.join("victim.mp4")).unwrap(),
        "precious"
    );
}

#[test]
fn scene_names_with_spaces_and_unicode_still_name_files() {
    let d = tmp();
    let p = d.path();
    let scene = serde_json::json!({
        "name": "my flock ñ 鳥 ..x", "model": "boids", "agents": 20, "steps": 3,
        "world": {"size": [100, 100]}
    });
    write(p, "s.json", &scene.to_string());
    succeeds(p, &["simulate", "s.json", "--quiet"]);
    assert_eq!(listing(p), ["my flock ñ 鳥 ..x.bfs", "s.json"]);
}

// ---------------------------------------------------------------------------------------
// 6. Every output of a command, checked before any work
// ---------------------------------------------------------------------------------------

#[test]
fn outputs_are_checked_against_each_other_and_existing_files_first() {
    let d = tmp();
    let p = d.path();
    // A scene that would run for minutes: a refusal after any simulating would time out.
    write(p, "slow.json", &slow_scene(1000, 1_000_000));
    let quick = |args: &[&str], names: &[&str]| {
        let t0 = Instant::now();
        let err = fails_cleanly_env(p, args, NO_GPU, names, &[]);
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "{args:?} did work first"
        );
        no_leftovers(p);
        err
    };
    // The recording over the video's name.
    for bfs in ["x.mp4", "./x.mp4"] {
        for force in [false, true] {
            let mut args = vec!["run", "slow.json", "--bfs", bfs, "-o", "x.mp4", "-q"];
            if force {
                args.push("--force");
            }
            let err = quick(&args, &[bfs, "x.mp4", "--bfs"]);
            has(&err, "same file");
        }
    }
    assert_eq!(listing(p), ["slow.json"]);
    // An existing recording to keep, without --force: refused before simulating.
    fs::write(p.join("keep.bfs"), "precious").unwrap();
    let err = quick(
        &["run", "slow.json", "--bfs", "keep.bfs", "-o", "v.mp4", "-q"],
        &["keep.bfs", "--force"],
    );
    has(&err, "already exists");
    fs::write(p.join("v.mp4"), "precious").unwrap();
    quick(
        &["run", "slow.json", "--bfs", "new.bfs", "-o", "v.mp4", "-q"],
        &["v.mp4", "--force"],
    );
    assert_eq!(fs::read_to_string(p.join("keep.bfs")).unwrap(), "precious");
    assert_eq!(fs::read_to_string(p.join("v.mp4")).unwrap(), "precious");
    // info's two outputs.
    write(p, "tiny.json", TINY);
    succeeds(p, &["simulate", "tiny.json", "-o", "t.bfs", "--quiet"]);
    let err = quick(
        &[
            "info",
            "t.bfs",
            "--metrics",
            "m.png",
            "--plot",
            "./m.png",
            "--force",
        ],
        &["m.png", "--metrics", "--plot"],
    );
    has(&err, "same file");
    // The help says what --force covers.
    let help = succeeds(p, &["run", "--help"]).stdout;
    let opts = help_options(&help);
    let bfs = opts.iter().find(|o| o.long == "--bfs").unwrap();
    assert!(bfs.text.contains("--force"), "{}", bfs.text);
    let force = opts.iter().find(|o| o.long == "--force").unwrap();
    assert!(force.text.contains("--bfs"), "{}", force.text);
}

#[test]
fn run_force_covers_the_kept_recording() {
    if !have_gpu("run_force_covers_the_kept_recording")
        || !have_ffmpeg("run_force_covers_the_kept_recording")
    {
        return;
    }
    let d = tmp();
    let p = d.path();
    write(p, "tiny.json", TINY);
    fs::write(p.join("keep.bfs"), "old").unwrap();
    succeeds(
        p,
        &[
            "run",
            "tiny.json",
            "--bfs",
            "keep.bfs",
            "--size",
            "160x90",
            "-o",
            "v.mp4",
            "--force",
            "-q",
        ],
    );
    assert_eq!(info_json(p, "keep.bfs")["scene"], "tiny");
    assert_eq!(video_frames(&p.join("v.mp4")), 4);
    no_leftovers(p);
}
