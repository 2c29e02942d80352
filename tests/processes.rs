//! External programs through the real binary. The rule, for every program forge starts (the
//! FFmpeg version and encoder probes, the encoder, ffprobe, `forge concat`'s join):
//!
//! - it has a deadline: stopped, and named, when it makes no progress for
//!   `FORGE_ENCODER_TIMEOUT` seconds (its output file does not change, or it does not answer);
//! - the first SIGINT or SIGTERM stops it and forge cleanly (exit 130 or 143, nothing left:
//!   no partial output, no lock, no temporary folder);
//! - its output is checked before success is reported: an exit status of 0 is not enough (an
//!   encoder's MP4 must be playable and hold every frame sent).
//!
//! Stand-in programs are small shell scripts named by `FORGE_FFMPEG` / `FORGE_FFPROBE`. A hang
//! test asserts that forge ends well within a generous deadline (30 s for a 3 s timeout), never
//! how fast.

use crate::common;

use std::fs;
use std::path::Path;
use std::time::Duration;

use common::child::*;
use common::*;

/// Deadline of a command whose timeout is [`TIMEOUT_S`]: generous, for a loaded machine.
const HANG_LIMIT: Duration = Duration::from_secs(40);
const TIMEOUT_S: &str = "3";

/// A small 2D recording `name` in `dir` (vicsek, 200 agents, `frames` frames).
fn recording(dir: &Path, name: &str, frames: u32) {
    let scene = format!("{name}.json");
    write(
        dir,
        &scene,
        &format!(
            r#"{{"name": "p", "model": "vicsek", "agents": 200, "steps": {},
                 "world": {{"size": [8, 8], "boundary": "wrap"}}}}"#,
            frames - 1
        ),
    );
    succeeds(dir, &["simulate", &scene, "-o", name, "--quiet"]);
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

// ---------------------------------------------------------------------------------------
// The version probe
// ---------------------------------------------------------------------------------------

/// An FFmpeg that hangs on `-version` is stopped after the timeout, named; and the first
/// SIGINT during that probe stops forge at once.
#[test]
fn a_version_probe_that_hangs_is_stopped_and_named() {
    let d = tmp();
    let p = d.path();
    write(p, "x.bfs", "not read: the probe comes first");
    let hang = script(p, "hang.sh", "exec sleep 1000");
    let env = [
        ("FORGE_FFMPEG", path_str(&hang)),
        ("FORGE_ENCODER_TIMEOUT", TIMEOUT_S),
    ];
    let env = Env {
        set: &env,
        remove: &[],
    };
    let args = ["render", "x.bfs", "-o", "x.mp4"];
    let r = run_within(p, &args, &env, HANG_LIMIT);
    failed(&r, &args);
    has(&r.stderr, "-version");
    has(&r.stderr, "within 3 s");
    has(&r.stderr, "FORGE_ENCODER_TIMEOUT");
    has(&r.stderr, path_str(&hang));
    assert!(leftovers(p).is_empty(), "{:?}", listing(p));

    // The first SIGINT while the probe hangs (a long timeout this time).
    let marker = p.join("started");
    let waits = script(
        p,
        "waits.sh",
        &format!("touch '{}'\nexec sleep 1000", marker.display()),
    );
    let env = [
        ("FORGE_FFMPEG", path_str(&waits)),
        ("FORGE_ENCODER_TIMEOUT", "600"),
    ];
    let mut child = start(
        p,
        &args,
        &Env {
            set: &env,
            remove: &[],
        },
    );
    wait_until(&mut child, "the version probe", HANG_LIMIT, || {
        marker.exists()
    });
    send(&child, libc::SIGINT);
    let (code, err) = finish(child, HANG_LIMIT);
    assert_eq!(code, Some(130), "{err}");
    has(&err, "interrupted by SIGINT");
}

// ---------------------------------------------------------------------------------------
// What the encoder wrote
// ---------------------------------------------------------------------------------------

/// An encoder whose MP4 has a 64-bit box size that wraps the offset back to the start: the
/// check of the output ends (it looped forever, and ignored SIGINT), naming the box, and no
/// output is left.
#[test]
fn an_mp4_whose_box_size_wraps_is_refused_not_looped_on() {
    if !have_gpu("an_mp4_whose_box_size_wraps_is_refused_not_looped_on") {
        return;
    }
    let d = tmp();
    let p = d.path();
    recording(p, "r.bfs", 3);
    // ftyp (24 bytes), then a `free` box at 24 whose 64-bit size is 2^64 - 24: 24 + size
    // wraps to 0. Then a moov, so that only the walk itself can fail.
    let wrap = "printf '\\000\\000\\000\\030ftypisom\\000\\000\\002\\000isomiso2' > \"$out\"\n\
                printf '\\000\\000\\000\\001free\\377\\377\\377\\377\\377\\377\\377\\350' >> \"$out\"\n\
                printf '\\000\\000\\000\\010moov' >> \"$out\"";
    let fake = fake_ffmpeg(p, "wrap.sh", &format!("cat > /dev/null\n{wrap}\nexit 0"));
    let env = [
        ("FORGE_FFMPEG", path_str(&fake)),
        ("FORGE_ENCODER_TIMEOUT", "600"),
    ];
    let args = ["render", "r.bfs", "--size", "64x36", "-o", "x.mp4", "-q"];
    let r = run_within(
        p,
        &args,
        &Env {
            set: &env,
            remove: &[],
        },
        Duration::from_secs(120),
    );
    failed(&r, &args);
    has(&r.stderr, "not a playable MP4");
    has(&r.stderr, "`free` box at byte 24");
    no_output(p, "x.mp4");
    assert!(leftovers(p).is_empty(), "{:?}", listing(p));
}

/// An encoder that exits 0 with a playable MP4 holding fewer frames than it was sent (0.3 s of
/// test pattern for 10 frames): the render fails naming the encoder and both counts.
#[test]
fn an_mp4_with_fewer_frames_than_sent_is_a_failure() {
    if !have_gpu("an_mp4_with_fewer_frames_than_sent_is_a_failure")
        || !have_ffmpeg("an_mp4_with_fewer_frames_than_sent_is_a_failure")
    {
        return;
    }
    let d = tmp();
    let p = d.path();
    recording(p, "r.bfs", 10);
    let fake = fake_ffmpeg(
        p,
        "pattern.sh",
        "cat > /dev/null\nexec ffmpeg -hide_banner -loglevel error -nostdin -y -f lavfi \
         -i testsrc=size=64x36:rate=30 -t 0.3 -c:v libx264 -pix_fmt yuv420p -f mp4 \"$out\"",
    );
    let env = [("FORGE_FFMPEG", path_str(&fake))];
    let args = ["render", "r.bfs", "--size", "64x36", "-o", "x.mp4"];
    let r = run_within(
        p,
        &args,
        &Env {
            set: &env,
            remove: &[],
        },
        Duration::from_secs(120),
    );
    failed(&r, &args);
    has(&r.stderr, path_str(&fake));
    has(&r.stderr, "exited 0 after 10 frames");
    has(&r.stderr, "of the 10 sent to it");
    assert!(!r.stderr.contains("10 frames at"), "{}", r.stderr);
    no_output(p, "x.mp4");
}

/// `render --size 16384x16384` is past FFmpeg's picture size: refused before the GPU starts
/// (it rendered for minutes and failed on the first frame), naming the size and the largest
/// that fits; `run` refuses it before simulating.
#[test]
fn a_size_past_the_encoders_is_refused_before_any_work() {
    if !have_ffmpeg("a_size_past_the_encoders_is_refused_before_any_work") {
        return;
    }
    let d = tmp();
    let p = d.path();
    recording(p, "r.bfs", 3);
    for size in ["16384x16384", "16256x16256"] {
        let args = ["render", "r.bfs", "--size", size, "-o", "x.mp4"];
        let err = fails_cleanly_env(p, &args, NO_GPU, &[size, "FFmpeg refuses"], &["x.mp4"]);
        has(&err, "the largest 1:1 size that fits is 16254x16254");
        if no_gpu_hides_the_gpu() {
            assert!(!err.contains("GPU adapter"), "got to the GPU first:\n{err}");
        }
    }
    let args = [
        "run",
        "vicsek",
        "--steps",
        "3",
        "--size",
        "16384x16384",
        "-o",
        "v.mp4",
        "--bfs",
        "v.bfs",
    ];
    fails_cleanly_env(p, &args, NO_GPU, &["16384x16384"], &["v.mp4", "v.bfs"]);
    assert!(leftovers(p).is_empty(), "{:?}", listing(p));
}

// ---------------------------------------------------------------------------------------
// forge concat
// ---------------------------------------------------------------------------------------

/// Two chunk parts of a small recording, rendered for real: `part0.mp4`, `part1.mp4`.
fn parts(p: &Path) {
    recording(p, "c.bfs", 6);
    for i in 0..2 {
        let spec = format!("{i}/2");
        let out = format!("part{i}.mp4");
        succeeds(
            p,
            &[
                "render", "c.bfs", "--size", "64x36", "--chunk", &spec, "-o", &out, "-q",
            ],
        );
    }
}

/// A part that is a FIFO, a folder or a device is named as what it is, not "no such file".
#[test]
fn concat_names_a_part_that_is_not_a_file() {
    let d = tmp();
    let p = d.path();
    mkfifo(&p.join("fifo.mp4"));
    fs::create_dir(p.join("dir.mp4")).unwrap();
    for (part, what) in [
        ("fifo.mp4", "a FIFO (named pipe)"),
        ("dir.mp4", "a directory"),
        ("/dev/zero", "a character device"),
    ] {
        let args = ["concat", part, "-o", "j.mp4"];
        let r = run_within(p, &args, &Env::default(), HANG_LIMIT);
        failed(&r, &args);
        has(&r.stderr, part);
        has(&r.stderr, what);
        assert!(!r.stderr.contains("no such file"), "{}", r.stderr);
    }
    assert!(leftovers(p).is_empty(), "{:?}", listing(p));
}

/// A hanging ffprobe is stopped after the timeout, naming it and the part.
#[test]
fn concat_stops_a_hanging_ffprobe() {
    let d = tmp();
    let p = d.path();
    write(p, "a.mp4", "probed first");
    write(p, "b.mp4", "probed second");
    let hang = script(p, "ffprobe-hang.sh", "exec sleep 1000");
    let env = [
        ("FORGE_FFPROBE", path_str(&hang)),
        ("FORGE_ENCODER_TIMEOUT", TIMEOUT_S),
    ];
    let args = ["concat", "a.mp4", "b.mp4", "-o", "j.mp4"];
    let r = run_within(
        p,
        &args,
        &Env {
            set: &env,
            remove: &[],
        },
        HANG_LIMIT,
    );
    failed(&r, &args);
    has(&r.stderr, "ffprobe");
    has(&r.stderr, "a.mp4");
    has(&r.stderr, "within 3 s");
    no_output(p, "j.mp4");
    assert!(leftovers(p).is_empty(), "{:?}", listing(p));
}

/// An FFmpeg that hangs in the join (it writes nothing) is stopped after the timeout; SIGINT
/// or SIGTERM during the join stops it and forge, leaving no partial film, no lock and no
/// temporary folder.
#[test]
fn concat_stops_a_hanging_join_on_timeout_and_on_signals() {
    if !have_gpu("concat_stops_a_hanging_join_on_timeout_and_on_signals")
        || !have_ffmpeg("concat_stops_a_hanging_join_on_timeout_and_on_signals")
    {
        return;
    }
    let d = tmp();
    let p = d.path();
    parts(p);
    let temp = p.join("tmp");
    fs::create_dir(&temp).unwrap();
    let marker = p.join("joining");
    let hang = fake_ffmpeg(
        p,
        "join-hang.sh",
        &format!("touch '{}'\nexec sleep 1000", marker.display()),
    );
    let base = [
        ("FORGE_FFMPEG", path_str(&hang)),
        ("FORGE_FFPROBE", "ffprobe"),
        ("TMPDIR", path_str(&temp)),
    ];
    let args = ["concat", "part1.mp4", "part0.mp4", "-o", "j.mp4"];
    let clean = |what: &str| {
        no_output(p, "j.mp4");
        assert!(leftovers(p).is_empty(), "{what}: {:?}", listing(p));
        assert!(listing(&temp).is_empty(), "{what}: {:?}", listing(&temp));
    };
    let remove = ["XDG_RUNTIME_DIR"];

    let mut env = base.to_vec();
    env.push(("FORGE_ENCODER_TIMEOUT", TIMEOUT_S));
    let r = run_within(
        p,
        &args,
        &Env {
            set: &env,
            remove: &remove,
        },
        HANG_LIMIT,
    );
    failed(&r, &args);
    has(&r.stderr, "finish joining the parts within 3 s");
    clean("timeout");

    for (signal, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let _ = fs::remove_file(&marker);
        let mut env = base.to_vec();
        env.push(("FORGE_ENCODER_TIMEOUT", "600"));
        let mut child = start(
            p,
            &args,
            &Env {
                set: &env,
                remove: &remove,
            },
        );
        wait_until(&mut child, "the join", HANG_LIMIT, || marker.exists());
        send(&child, signal);
        let (got, err) = finish(child, HANG_LIMIT);
        assert_eq!(got, Some(code), "signal {signal}:\n{err}");
        has(&err, "interrupted by SIG");
        clean(&format!("signal {signal}"));
    }
}
