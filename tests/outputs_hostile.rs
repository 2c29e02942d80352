//! Outputs under hostile conditions, through the real binary: a FIFO where an output goes, a
//! symbolic link planted where a lock file goes, SIGKILL at a moment the test chooses, SIGINT
//! during a warm-up, and what `--help` and usage errors leave in `TMPDIR`.
//!
//! Moments are chosen by watching files (a `.partial` appears, holds its header, holds a
//! frame), never by sleeping for a guessed time.

use crate::common;

use std::fs;
use std::path::Path;
use std::time::Duration;

use common::child::*;
use common::*;

const LIMIT: Duration = Duration::from_secs(60);

/// A small recording `r.bfs` in `dir`.
fn recording(dir: &Path) {
    write(
        dir,
        "r.json",
        r#"{"name": "r", "model": "vicsek", "agents": 50, "steps": 4,
            "world": {"size": [4, 4], "boundary": "wrap"}}"#,
    );
    succeeds(dir, &["simulate", "r.json", "-o", "r.bfs", "--quiet"]);
}

/// A FIFO with no reader as the output of `export`, `simulate`, `info --metrics` and
/// `render`: refused at once, naming it and what it is (the open blocked forever, and ignored
/// the first SIGINT). A FIFO is never written, with or without --force.
#[test]
fn a_fifo_as_an_output_is_refused_not_waited_on() {
    let d = tmp();
    let p = d.path();
    recording(p);
    let fake = fake_ffmpeg(p, "ffmpeg.sh", "cat > /dev/null\nexit 1");
    let ffmpeg = [("FORGE_FFMPEG", fake.to_str().unwrap())];
    // (the FIFO, the command, its environment)
    type Case<'a> = (&'a str, &'a [&'a str], &'a [(&'a str, &'a str)]);
    let cases: [Case; 4] = [
        ("fifo.npz", &["export", "r.bfs", "-o", "fifo.npz"], &[]),
        ("fifo.bfs", &["simulate", "r.json", "-o", "fifo.bfs"], &[]),
        ("fifo.csv", &["info", "r.bfs", "--metrics", "fifo.csv"], &[]),
        ("fifo.mp4", &["render", "r.bfs", "-o", "fifo.mp4"], &ffmpeg),
    ];
    for (fifo, args, env) in cases {
        mkfifo(&p.join(fifo));
        for force in [false, true] {
            let mut args = args.to_vec();
            if force {
                args.push("--force");
            }
            let r = run_within(
                p,
                &args,
                &Env {
                    set: env,
                    remove: &[],
                },
                LIMIT,
            );
            failed(&r, &args);
            has(&r.stderr, fifo);
            has(&r.stderr, "a FIFO (named pipe), not a regular file");
        }
        assert!(leftovers(p).is_empty(), "{:?}", listing(p));
        fs::remove_file(p.join(fifo)).unwrap();
    }
    // A device is still written in place.
    succeeds(p, &["info", "r.bfs", "--metrics", "/dev/null"]);
}

/// A symbolic link planted as `.x.bfs.lock` is not followed (forge created its target, out of
/// the folder): the run is refused naming the lock file, and the target is never created.
#[test]
fn a_symlink_planted_as_a_lock_file_is_refused_not_followed() {
    let d = tmp();
    let p = d.path();
    let work = p.join("work");
    fs::create_dir(&work).unwrap();
    recording(&work);
    let target = p.join("elsewhere");
    std::os::unix::fs::symlink(&target, work.join(".x.bfs.lock")).unwrap();
    let err = fails(&work, &["simulate", "r.json", "-o", "x.bfs", "--quiet"]);
    has(&err, ".x.bfs.lock");
    has(&err, "symbolic link");
    assert!(!target.exists(), "forge created the link's target");
    no_output(&work, "x.bfs");
    // A link to a file that exists: the file is neither locked nor truncated.
    fs::write(&target, "precious").unwrap();
    let err = fails(&work, &["simulate", "r.json", "-o", "x.bfs", "--quiet"]);
    has(&err, "symbolic link");
    assert_eq!(fs::read_to_string(&target).unwrap(), "precious");
}

/// A scene whose warm-up never ends within the test (10^9 steps), then slow frames.
const LONG_WARMUP: &str = r#"{"name": "w", "model": "vicsek", "agents": 50,
    "warmup": 1000000000, "steps": 10,
    "world": {"size": [4, 4], "boundary": "wrap"}}"#;

/// A scene of small frames (200 agents: 3.2 kB) recorded every 5000 steps (about 0.1 s on
/// one thread), without end.
const SLOW_FRAMES: &str = r#"{"name": "s", "model": "vicsek", "agents": 200,
    "steps": 2000000000, "record_every": 5000,
    "world": {"size": [7, 7], "boundary": "wrap"}}"#;

fn size_of(path: &Path) -> u64 {
    fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

fn frames_in(path: &Path) -> Option<u64> {
    forge::bfs::Reader::open(path).ok().map(|r| r.frame_count())
}

/// SIGKILL while the warm-up runs leaves a `.partial` that opens (it was 0 bytes: the header
/// sat in the write buffer); SIGKILL while frames come leaves every frame written so far (they
/// sat in the 64 KiB buffer): a frame is on disk while the file is still far below 64 KiB.
#[test]
fn sigkill_keeps_the_header_and_every_frame_written() {
    let d = tmp();
    let p = d.path();
    write(p, "w.json", LONG_WARMUP);
    let mut child = start(
        p,
        &["simulate", "w.json", "-o", "w.bfs", "--quiet"],
        &Env::default(),
    );
    let partial = || partials_of(p, "w.bfs").first().cloned();
    wait_until(&mut child, "the header on disk", LIMIT, || {
        partial().is_some_and(|f| size_of(&f) > 0)
    });
    child.kill().unwrap();
    child.wait().unwrap();
    let kept = partial().expect("the partial is kept");
    assert_eq!(
        frames_in(&kept),
        Some(0),
        "{} does not open",
        kept.display()
    );

    write(p, "s.json", SLOW_FRAMES);
    let mut child = start(
        p,
        &[
            "simulate",
            "s.json",
            "-o",
            "s.bfs",
            "--quiet",
            "--threads",
            "1",
        ],
        &Env::default(),
    );
    let partial = || partials_of(p, "s.bfs").first().cloned();
    let mut seen = 0;
    wait_until(&mut child, "two frames on disk", LIMIT, || {
        let Some(f) = partial() else { return false };
        seen = frames_in(&f).unwrap_or(0);
        seen >= 2
    });
    let at = size_of(&partial().unwrap());
    child.kill().unwrap();
    child.wait().unwrap();
    let kept = partial().expect("the partial is kept");
    assert!(
        at < 32 << 10,
        "the first frames reached the disk only with {at} bytes (a full write buffer)"
    );
    let n = frames_in(&kept).expect("the partial opens");
    assert!(n >= seen, "{n} frames kept of the {seen} seen on disk");
}

/// SIGINT during a long warm-up: exit 130, and nothing kept (a 0-frame `.partial` was kept and
/// called "a finished recording").
#[test]
fn sigint_during_the_warmup_keeps_nothing_and_says_so() {
    let d = tmp();
    let p = d.path();
    write(p, "w.json", LONG_WARMUP);
    let mut child = start(
        p,
        &["simulate", "w.json", "-o", "w.bfs", "--quiet"],
        &Env::default(),
    );
    wait_until(&mut child, "the warm-up", LIMIT, || {
        !partials_of(p, "w.bfs").is_empty()
    });
    send(&child, libc::SIGINT);
    let (code, err) = finish(child, LIMIT);
    assert_eq!(code, Some(130), "{err}");
    has(&err, "interrupted by SIGINT");
    has(&err, "warm-up");
    has(&err, "nothing is kept");
    assert!(!err.contains("finished recording"), "{err}");
    assert!(leftovers(p).is_empty(), "{:?}", listing(p));
    no_output(p, "w.bfs");
}

/// `--help`, `--version` and usage errors, with no `XDG_RUNTIME_DIR`, leave nothing in
/// `TMPDIR` (an empty `forge-runtime-XXXXXX` folder each: clap exits before any guard drops);
/// nor do commands that end normally.
#[test]
fn help_version_and_usage_errors_leave_nothing_in_tmpdir() {
    let d = tmp();
    let p = d.path();
    let temp = p.join("tmp");
    fs::create_dir(&temp).unwrap();
    let t = temp.to_str().unwrap();
    let env = Env {
        set: &[("TMPDIR", t)],
        remove: &["XDG_RUNTIME_DIR"],
    };
    for args in [
        &["--help"][..],
        &["--version"],
        &["render", "--help"],
        &["simulate", "--no-such-flag"],
        &["no-such-command"],
        &["render"],
        &["render", "missing.bfs", "--png", "out"],
        &["scenes"],
    ] {
        let r = run_within(p, args, &env, LIMIT);
        no_panic(&r);
        assert!(
            listing(&temp).is_empty(),
            "forge {args:?} left {:?}",
            listing(&temp)
        );
    }
}
