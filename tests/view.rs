//! `forge view` in a real window: an Xvfb server per test, the player driven with real X input
//! (xdotool: space, arrows, the timeline, drags, the wheel, `s`), and the window's pixels
//! captured by the X server (xwd). Checked: playback advances and pauses; steps and the
//! timeline land on the frame the HUD names (the window's title carries the HUD's frame and
//! state); after `s`, `forge still FILE --frame K --look NAME.look.json` is the window's image
//! within one code value, 2D and 3D, the camera moves included, and a frame drawn between
//! recorded ones (`--interpolate`) is `forge render --interpolate`'s; `--color species` draws
//! each species in its colour as `forge still` does, from a recording and live, and is refused
//! as `forge render` refuses it on a recording without species; a scene's obstacles are drawn as
//! `forge still` draws them; a live run waits while paused
//! and records what `forge simulate` writes; and without a display, one line says why.
//!
//! The window tests need Xvfb, xdotool and xwd (apt-get install xvfb xdotool x11-apps) and a
//! GPU or Mesa's software driver; they skip without them, or fail where
//! `FORGE_REQUIRE_WINDOW=1` (set by scripts/test.sh once it has installed them).

use crate::common;
#[path = "view/x11.rs"]
mod x11;

use std::path::Path;
use std::time::{Duration, Instant};

use common::child::{self, Env};
use common::*;
use x11::{Image, Window, Xvfb};

/// How long the player may take to open, settle a frame or save (a software GPU on a shared
/// machine is slow; these are limits, not expectations).
const SLOW: Duration = Duration::from_secs(180);

/// The image the tests ask for (small: the software rasteriser is the slow part).
const W: u32 = 480;
const H: u32 = 270;
const SIZE: &str = "480x270";

/// An X display for a window test, or `None` (skipped) where the tools or a GPU are missing.
fn display(test: &str) -> Option<Xvfb> {
    if let Some((prog, pkg)) = x11::missing_tool() {
        skip_unless_required(
            "FORGE_REQUIRE_WINDOW",
            &format!("{test}: {prog} is not installed (apt-get install {pkg})"),
        );
        return None;
    }
    if !have_gpu(test) {
        return None;
    }
    Some(Xvfb::start())
}

/// A player under test: stopped if the test fails, its messages then shown.
struct Player(Option<std::process::Child>);

impl Player {
    fn child(&mut self) -> &mut std::process::Child {
        self.0.as_mut().expect("running")
    }
}

impl Drop for Player {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
            let mut err = String::new();
            if let Some(mut e) = c.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            if std::thread::panicking() {
                skip(&format!("forge view said:\n{err}"));
            }
        }
    }
}

/// The player on display `x`, in `dir`.
fn player(x: &Xvfb, dir: &Path, args: &[&str]) -> Player {
    let set = [
        ("DISPLAY", x.display.as_str()),
        ("WINIT_X11_SCALE_FACTOR", "1"),
    ];
    Player(Some(child::start(
        dir,
        args,
        &Env {
            set: &set,
            remove: &["WAYLAND_DISPLAY", "WAYLAND_SOCKET"],
        },
    )))
}

/// The frame number in a title `forge view: NAME: frame K of N, STATE`.
fn frame_of(title: &str) -> u64 {
    let rest = title
        .split("frame ")
        .nth(1)
        .unwrap_or_else(|| panic!("no frame in the title {title:?}"));
    rest.split(' ').next().unwrap().parse().unwrap()
}

fn paused(t: &str) -> bool {
    t.ends_with(", paused")
}

/// Quits the player with `q` and checks it ends cleanly.
fn quit(win: &Window, mut p: Player) -> String {
    win.keys(&["q"]);
    let (code, err) = child::finish(p.0.take().expect("running"), SLOW);
    assert_eq!(code, Some(0), "forge view did not end cleanly:\n{err}");
    err
}

/// Waits until the player has taken every input sent so far and settled: paused, and the
/// same frame and picture twice, a while apart. Returns the frame.
fn settled(dir: &Path, win: &Window) -> u64 {
    let t0 = Instant::now();
    loop {
        let k = frame_of(&win.wait_title("a settled frame", SLOW, paused));
        let a = win.capture(dir, "settle-a.xwd").corner(W, H);
        std::thread::sleep(Duration::from_millis(700));
        let b = win.capture(dir, "settle-b.xwd").corner(W, H);
        let t = win.title();
        if paused(&t) && frame_of(&t) == k && a == b {
            return k;
        }
        assert!(
            t0.elapsed() < SLOW,
            "the player never settled; last title {t:?}"
        );
    }
}

/// Saves the look (`s`) once the player has settled; returns the frame shown and the window's
/// picture.
fn save_look(dir: &Path, win: &Window, look: &str) -> (u64, Image) {
    let k = settled(dir, win);
    let _ = std::fs::remove_file(dir.join(look));
    win.keys(&["s"]);
    let t0 = Instant::now();
    while !dir.join(look).is_file() {
        assert!(t0.elapsed() < SLOW, "s wrote no {look}");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(frame_of(&win.title()), k, "the frame changed while saving");
    (k, win.capture(dir, "window.xwd").corner(W, H))
}

/// The window's picture of frame `k` and the one forge drew offline: the same pixels within
/// one code value, and not an empty picture.
fn same_picture(k: u64, shown: &Image, drawn: &Image) {
    assert_eq!((drawn.width, drawn.height), (W, H), "the saved look's size");
    let (worst, differ) = shown.difference(drawn);
    assert!(
        worst <= 1,
        "frame {k}: the window and forge differ by up to {worst} code values in {differ} samples"
    );
    assert!(
        shown.lit() > 200,
        "frame {k}: the window shows (almost) nothing"
    );
}

/// Saves the look (`s`) and checks the window against `forge still` of the frame shown with
/// that look.
fn hand_off(dir: &Path, win: &Window, rec: &str, look: &str) -> u64 {
    let (k, shown) = save_look(dir, win, look);
    still_matches(dir, rec, k, look, &shown);
    k
}

/// `forge still` of frame `k` of `rec` with the look file `look` is `shown`, the window's
/// picture of that frame ([`same_picture`]).
fn still_matches(dir: &Path, rec: &str, k: u64, look: &str, shown: &Image) {
    let still = format!("still-{k}.png");
    succeeds(
        dir,
        &[
            "still",
            rec,
            "--frame",
            &k.to_string(),
            "--look",
            look,
            "-o",
            &still,
            "--force",
            "-q",
        ],
    );
    same_picture(k, shown, &Image::from_png(&dir.join(&still)));
}

/// The panel beside the picture shows its labels: light text on egui's dark grey, glyphs
/// neither missing (no font atlas) nor solid blocks (the atlas not sampled: about twice the
/// light pixels of real text, 1.6% of the region).
fn panel_has_its_labels(window: &Image) {
    let panel = window.region(W + 8, 0, 280, H);
    let px = panel.rgb.chunks(3);
    let n = px.len();
    let light = px.clone().filter(|p| p.iter().all(|&v| v > 140)).count();
    let grey = px
        .filter(|p| p.iter().all(|&v| (20..=60).contains(&v)))
        .count();
    assert!(
        light > n / 200 && light < n / 40,
        "the panel's text: {light} light pixels of {n}"
    );
    assert!(
        grey > n / 2,
        "the panel's background: {grey} grey pixels of {n}"
    );
}

fn record_2d(dir: &Path) {
    succeeds(
        dir,
        &[
            "simulate",
            "schooling",
            "--agents",
            "400",
            "--steps",
            "150",
            "-o",
            "run.bfs",
            "-q",
        ],
    );
}

#[test]
fn playback_advances_pauses_and_steps_frame_by_frame() {
    let d = tmp();
    let Some(x) = display("playback_advances_pauses_and_steps_frame_by_frame") else {
        return;
    };
    record_2d(d.path());
    let mut p = player(&x, d.path(), &["view", "run.bfs", "--size", SIZE]);
    let win = x.window("forge view", SLOW, p.child());
    let first = frame_of(&win.wait_title("playing", SLOW, |t| t.ends_with(", playing")));
    win.wait_title("playback moving on", SLOW, |t| frame_of(t) >= first + 5);
    win.keys(&["space"]);
    let k = frame_of(&win.wait_title("paused", SLOW, paused));
    let whole = win.capture(d.path(), "a.xwd");
    panel_has_its_labels(&whole);
    let a = whole.corner(W, H);
    std::thread::sleep(Duration::from_millis(1500));
    let b = win.capture(d.path(), "b.xwd").corner(W, H);
    assert_eq!(frame_of(&win.title()), k, "paused, the frame moved on");
    assert_eq!(a.difference(&b).1, 0, "paused, the picture changed");
    win.keys(&["Right", "Right", "Right"]);
    let t = win.wait_title("three frames on", SLOW, |t| {
        paused(t) && frame_of(t) == k + 3
    });
    let c = win.capture(d.path(), "c.xwd").corner(W, H);
    assert!(
        c.difference(&b).1 > 0,
        "three frames on, the same picture ({t})"
    );
    win.keys(&["Left"]);
    win.wait_title("a frame back", SLOW, |t| paused(t) && frame_of(t) == k + 2);
    win.keys(&["End"]);
    win.wait_title("the last frame", SLOW, |t| paused(t) && frame_of(t) == 150);
    win.keys(&["Home"]);
    win.wait_title("the first frame", SLOW, |t| paused(t) && frame_of(t) == 0);
    quit(&win, p);
}

#[test]
fn the_window_is_what_still_draws_after_scrub_pan_and_zoom() {
    let d = tmp();
    let Some(x) = display("the_window_is_what_still_draws_after_scrub_pan_and_zoom") else {
        return;
    };
    record_2d(d.path());
    let mut p = player(
        &x,
        d.path(),
        &["view", "run.bfs", "--size", SIZE, "--paused"],
    );
    let win = x.window("forge view", SLOW, p.child());
    win.wait_title("the first frame, settled", SLOW, paused);
    // The timeline runs along the bar below the picture, a panel margin in from each side.
    let margin = 8;
    let at = margin + (W - 2 * margin) * 3 / 4;
    win.click([at, H + 11], 1);
    let t = win.wait_title("the scrubbed-to frame", SLOW, |t| {
        paused(t) && frame_of(t) > 0
    });
    let k = frame_of(&t);
    assert!(
        k.abs_diff(150 * 3 / 4) <= 5,
        "a click three quarters along the timeline showed frame {k} of 0..=150"
    );
    assert_eq!(hand_off(d.path(), &win, "run.bfs", "run.look.json"), k);
    // The camera: a drag pans, the wheel zooms about the cursor; both are in the saved look.
    win.drag([200, 150], [260, 120], 1);
    win.wheel([300, 100], true);
    assert_eq!(hand_off(d.path(), &win, "run.bfs", "run.look.json"), k);
    let look: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.path().join("run.look.json")).unwrap())
            .unwrap();
    assert!(look["zoom"].as_f64().unwrap() > 1.0, "{look}");
    let c = look["center"].as_array().expect("a centre after a pan");
    assert!((c[0].as_f64().unwrap() - 800.0).abs() > 1.0, "{look}");
    quit(&win, p);
}

#[test]
fn frames_drawn_between_recorded_ones_are_what_render_interpolate_draws() {
    let d = tmp();
    let Some(x) = display("frames_drawn_between_recorded_ones_are_what_render_interpolate_draws")
    else {
        return;
    };
    let args = [
        "simulate",
        "schooling",
        "--agents",
        "400",
        "--steps",
        "6",
        "-o",
        "run.bfs",
        "-q",
    ];
    succeeds(d.path(), &args);
    let mut p = player(
        &x,
        d.path(),
        &[
            "view",
            "run.bfs",
            "--size",
            SIZE,
            "--paused",
            "--interpolate",
            "4",
        ],
    );
    let win = x.window("forge view", SLOW, p.child());
    // 7 recorded frames, 4 output frames to each interval: 25 in all.
    let t = win.wait_title("the first frame, settled", SLOW, paused);
    has(&t, "frame 0 of 25");
    win.keys(&["Right", "Right", "Right", "Right", "Right", "Right"]);
    win.wait_title("frame 6", SLOW, |t| paused(t) && frame_of(t) == 6);
    let (k, shown) = save_look(d.path(), &win, "run.look.json");
    assert_eq!(k, 6);
    succeeds(
        d.path(),
        &[
            "render",
            "run.bfs",
            "--interpolate",
            "4",
            "--look",
            "run.look.json",
            "--png",
            "frames",
            "-q",
        ],
    );
    let frame = |k: u64| Image::from_png(&d.path().join(format!("frames/frame_{k:06}.png")));
    same_picture(k, &shown, &frame(k));
    // Halfway between recorded frames 1 and 2: neither of them.
    for recorded in [4, 8] {
        assert!(
            shown.difference(&frame(recorded)).0 > 1,
            "output frame 6 is output frame {recorded}"
        );
    }
    quit(&win, p);
}

#[test]
fn a_3d_camera_orbited_and_dollied_is_handed_to_still() {
    let d = tmp();
    let Some(x) = display("a_3d_camera_orbited_and_dollied_is_handed_to_still") else {
        return;
    };
    succeeds(
        d.path(),
        &[
            "simulate", "shoal3d", "--agents", "600", "--steps", "40", "-o", "s3.bfs", "-q",
        ],
    );
    let mut p = player(
        &x,
        d.path(),
        &["view", "s3.bfs", "--size", SIZE, "--paused"],
    );
    let win = x.window("forge view", SLOW, p.child());
    win.wait_title("the first frame, settled", SLOW, paused);
    win.keys(&["Right", "Right"]);
    win.wait_title("frame 2", SLOW, |t| paused(t) && frame_of(t) == 2);
    win.drag([240, 135], [300, 110], 1);
    win.wheel([240, 135], true);
    win.drag([240, 135], [250, 140], 3);
    hand_off(d.path(), &win, "s3.bfs", "s3.look.json");
    let look = std::fs::read_to_string(d.path().join("s3.look.json")).unwrap();
    has(&look, "\"camera\": \"fixed\"");
    has(&look, "\"eye\"");
    quit(&win, p);
}

#[test]
fn a_live_run_waits_while_paused_and_records_what_simulate_writes() {
    let d = tmp();
    let Some(x) = display("a_live_run_waits_while_paused_and_records_what_simulate_writes") else {
        return;
    };
    let scene = ["schooling", "--agents", "300", "--steps", "90"];
    let mut args = vec!["view"];
    args.extend_from_slice(&scene);
    args.extend_from_slice(&["--record", "live.bfs", "--size", "320x180"]);
    let mut p = player(&x, d.path(), &args);
    let pid = p.child().id();
    let win = x.window("forge view", SLOW, p.child());
    win.wait_title("frames coming live", SLOW, |t| {
        t.ends_with(", live") && frame_of(t) > 2
    });
    win.keys(&["space"]);
    let k = frame_of(&win.wait_title("paused", SLOW, |t| !t.ends_with(", live")));
    let cpu = || proc_cpu_ticks(pid);
    let before = cpu();
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(frame_of(&win.title()), k, "paused, frames kept coming");
    let used = cpu() - before;
    // 100 ticks a second: a quarter of a second in two, where a running solver takes all of it.
    assert!(
        used < 25,
        "paused, forge view used {used} ticks of CPU in 2 s"
    );
    win.keys(&["Right"]);
    win.wait_title("one frame on", SLOW, |t| frame_of(t) == k + 1);
    win.keys(&["space"]);
    win.wait_title("the run's end", SLOW, |t| paused(t) && frame_of(t) == 90);
    // `s` saves the scene as it ran beside the look: forge simulate on it is this run again.
    win.keys(&["s"]);
    let saved = d.path().join("schooling.scene.json");
    let t0 = std::time::Instant::now();
    while !saved.exists() && t0.elapsed() < SLOW {
        std::thread::sleep(Duration::from_millis(50));
    }
    quit(&win, p);
    let mut sim = vec!["simulate"];
    sim.extend_from_slice(&scene);
    sim.extend_from_slice(&["-o", "sim.bfs", "-q"]);
    succeeds(d.path(), &sim);
    let (a, b) = (
        std::fs::read(d.path().join("live.bfs")).unwrap(),
        std::fs::read(d.path().join("sim.bfs")).unwrap(),
    );
    assert!(a == b, "--record wrote other bytes than forge simulate");
    succeeds(
        d.path(),
        &["simulate", "schooling.scene.json", "-o", "saved.bfs", "-q"],
    );
    let c = std::fs::read(d.path().join("saved.bfs")).unwrap();
    assert!(
        a == c,
        "the saved scene simulates to other bytes than the live run recorded"
    );
}

/// User and system CPU time of process `pid`, in clock ticks.
fn proc_cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc/PID/stat");
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = after.split(' ').collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

#[test]
fn without_a_display_one_line_names_the_cause_and_what_works_instead() {
    let d = tmp();
    record_2d(d.path());
    let no_display = Env {
        set: &[],
        remove: &["DISPLAY", "WAYLAND_DISPLAY", "WAYLAND_SOCKET"],
    };
    let r = child::run_within(d.path(), &["view", "run.bfs"], &no_display, SLOW);
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert_eq!(lines.len(), 1, "one line:\n{}", r.stderr);
    for word in ["DISPLAY", "WAYLAND_DISPLAY", "forge still", "forge render"] {
        has(lines[0], word);
    }
    // A display named but not there: the same one line, naming it.
    let gone = (400..500)
        .find(|n| !Path::new(&format!("/tmp/.X11-unix/X{n}")).exists())
        .unwrap();
    let name = format!(":{gone}");
    let set = [("DISPLAY", name.as_str())];
    let env = Env {
        set: &set,
        remove: &["WAYLAND_DISPLAY", "WAYLAND_SOCKET"],
    };
    let r = child::run_within(d.path(), &["view", "run.bfs"], &env, SLOW);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "one line:\n{}", r.stderr);
    has(&r.stderr, &format!("DISPLAY={name}"));
    has(&r.stderr, "forge still");
    // A live scene fails the same way before simulating anything.
    let r = child::run_within(
        d.path(),
        &["view", "schooling", "--record", "x.bfs"],
        &no_display,
        SLOW,
    );
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    has(&r.stderr, "needs a display");
    assert!(!d.path().join("x.bfs").exists());
    // A recording that is not there is named first: the display is not what is wrong.
    let r = child::run_within(d.path(), &["view", "gone.bfs"], &no_display, SLOW);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    has(&r.stderr, "cannot open gone.bfs");
    assert!(!r.stderr.contains("display"), "{}", r.stderr);
}

#[test]
fn bench_frames_shows_n_frames_as_fast_as_it_can_and_says_how_fast() {
    let d = tmp();
    // A scene has no frames to race through: said before any window opens.
    let err = fails(d.path(), &["view", "schooling", "--bench-frames", "5"]);
    has(&err, "--bench-frames");
    has(&err, "recording");
    let Some(x) = display("bench_frames_shows_n_frames_as_fast_as_it_can_and_says_how_fast") else {
        return;
    };
    // 30 frames recorded, 40 shown: it loops at the end.
    succeeds(
        d.path(),
        &[
            "simulate",
            "schooling",
            "--agents",
            "300",
            "--steps",
            "29",
            "-o",
            "b.bfs",
            "-q",
        ],
    );
    let env = Env {
        set: &[("DISPLAY", x.display.as_str())],
        remove: &["WAYLAND_DISPLAY", "WAYLAND_SOCKET"],
    };
    let args = ["view", "b.bfs", "--size", "320x180", "--bench-frames", "40"];
    let r = child::run_within(d.path(), &args, &env, SLOW);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let mut lines = r.stdout.lines();
    let line = lines.next().unwrap_or_default();
    has(line, "forge view: 40 frames shown in ");
    has(line, "(320x180, 300 agents, ");
    let fps: f64 = line
        .split(" s: ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no rate in {line:?}"));
    assert!(fps > 0.0, "{line}");
    // Where the time went, each part in milliseconds a window frame, over 10 more frames.
    let parts = lines.next().unwrap_or_default();
    has(parts, "over 10 more with each part waited for");
    for part in [
        "scene ",
        "panel and bar (egui) ",
        "into the window and presented ",
    ] {
        let ms: f64 = parts
            .split(part)
            .nth(1)
            .and_then(|s| s.split(" ms").next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no {part:?} in {parts:?}"));
        assert!(ms > 0.0, "{parts}");
    }
}

#[test]
fn an_ink_look_graded_and_stacked_is_handed_to_still() {
    let d = tmp();
    let Some(x) = display("an_ink_look_graded_and_stacked_is_handed_to_still") else {
        return;
    };
    record_2d(d.path());
    // Every setting of the style, grading and stacking, from the flags: what the window draws
    // with them is what still draws with the look it saves.
    let mut p = player(
        &x,
        d.path(),
        &[
            "view",
            "run.bfs",
            "--size",
            SIZE,
            "--paused",
            "--style",
            "ink",
            "--shape",
            "dart",
            "--stacking",
            "0.3",
            "--color",
            "fixed:#203040",
            "--background-top",
            "#405060",
            "--contrast",
            "1.2",
            "--saturation",
            "0.8",
            "--lift",
            "0.05",
            "--gamma",
            "1.1",
            "--gain",
            "0.95",
        ],
    );
    let win = x.window("forge view", SLOW, p.child());
    win.wait_title("the first frame, settled", SLOW, paused);
    win.keys(&["Right", "Right", "Right", "Right"]);
    win.wait_title("frame 4", SLOW, |t| paused(t) && frame_of(t) == 4);
    assert_eq!(hand_off(d.path(), &win, "run.bfs", "run.look.json"), 4);
    let look = std::fs::read_to_string(d.path().join("run.look.json")).unwrap();
    for kv in [
        "\"style\": \"ink\"",
        "\"shape\": \"dart\"",
        "\"stacking\": 0.3",
        "\"color\": \"fixed:#203040\"",
        "\"background_top\": \"#405060\"",
        "\"contrast\": 1.2",
        "\"gamma\": 1.1",
    ] {
        has(&look, kv);
    }
    quit(&win, p);
}

/// Samples of `img` that are mostly blue (b well above r) and mostly orange (r well above b):
/// two-flocks' sprat (#4fa8ff) and herring (#ffb13b).
fn blue_and_orange(img: &Image) -> (usize, usize) {
    let px = img.rgb.chunks(3);
    let blue = px
        .clone()
        .filter(|p| p[2] as i32 > p[0] as i32 + 60)
        .count();
    let orange = px.filter(|p| p[0] as i32 > p[2] as i32 + 60).count();
    (blue, orange)
}

/// The window shows both species of two-flocks in their own colours.
fn both_species_seen(k: u64, window: &Image) {
    let (blue, orange) = blue_and_orange(window);
    assert!(
        blue > 100 && orange > 100,
        "frame {k}: the window shows {blue} blue (sprat) and {orange} orange (herring) pixels; \
         --color species draws each species in its own colour"
    );
}

#[test]
fn species_colours_in_the_window_are_what_still_draws() {
    let d = tmp();
    let Some(x) = display("species_colours_in_the_window_are_what_still_draws") else {
        return;
    };
    succeeds(
        d.path(),
        &[
            "simulate",
            "two-flocks",
            "--agents",
            "600",
            "--steps",
            "12",
            "-o",
            "sp.bfs",
            "-q",
        ],
    );
    let mut p = player(
        &x,
        d.path(),
        &[
            "view", "sp.bfs", "--size", SIZE, "--paused", "--color", "species",
        ],
    );
    let win = x.window("forge view", SLOW, p.child());
    win.wait_title("the first frame, settled", SLOW, paused);
    win.keys(&["Right", "Right", "Right", "Right", "Right"]);
    win.wait_title("frame 5", SLOW, |t| paused(t) && frame_of(t) == 5);
    let (k, shown) = save_look(d.path(), &win, "sp.look.json");
    assert_eq!(k, 5);
    has(
        &std::fs::read_to_string(d.path().join("sp.look.json")).unwrap(),
        "\"color\": \"species\"",
    );
    both_species_seen(k, &shown);
    still_matches(d.path(), "sp.bfs", k, "sp.look.json", &shown);
    quit(&win, p);
}

#[test]
fn a_live_run_colours_species_as_still_does_on_the_recording() {
    let d = tmp();
    let Some(x) = display("a_live_run_colours_species_as_still_does_on_the_recording") else {
        return;
    };
    // The species ids come from the scene: its first frame, live, is what forge simulate
    // records as frame 0 (the same scene, the same seed).
    let scene = ["two-flocks", "--agents", "600", "--steps", "30"];
    let mut args = vec!["view"];
    args.extend_from_slice(&scene);
    args.extend_from_slice(&["--size", SIZE, "--paused", "--color", "species"]);
    args.extend_from_slice(&["--save-look", "live.look.json"]);
    let mut p = player(&x, d.path(), &args);
    let win = x.window("forge view", SLOW, p.child());
    let (k, shown) = save_look(d.path(), &win, "live.look.json");
    assert_eq!(k, 0);
    both_species_seen(k, &shown);
    let mut sim = vec!["simulate"];
    sim.extend_from_slice(&scene);
    sim.extend_from_slice(&["-o", "sim.bfs", "-q"]);
    succeeds(d.path(), &sim);
    still_matches(d.path(), "sim.bfs", k, "live.look.json", &shown);
    quit(&win, p);
}

#[test]
fn color_species_without_species_fails_as_render_does() {
    let d = tmp();
    let Some(x) = display("color_species_without_species_fails_as_render_does") else {
        return;
    };
    record_2d(d.path());
    let look = write(d.path(), "sp.look.json", r#"{"color": "species"}"#);
    let look = look.to_str().unwrap();
    let env = Env {
        set: &[("DISPLAY", x.display.as_str())],
        remove: &["WAYLAND_DISPLAY", "WAYLAND_SOCKET"],
    };
    for (asked, named) in [
        (["--color", "species"], "--color species: ".to_string()),
        (["--look", look], format!("--look {look}: color species: ")),
    ] {
        let mut view = vec!["view", "run.bfs", "--size", SIZE];
        view.extend_from_slice(&asked);
        let r = child::run_within(d.path(), &view, &env, SLOW);
        failed(&r, &view);
        has(&r.stderr, &named);
        has(&r.stderr, "run.bfs has no species");
        let mut render = vec!["render", "run.bfs", "-o", "run.mp4"];
        render.extend_from_slice(&asked);
        let rendered = fails(d.path(), &render);
        assert_eq!(
            r.stderr, rendered,
            "forge view and forge render say different things"
        );
        no_output(d.path(), "run.mp4");
    }
}

#[test]
fn obstacles_in_the_window_are_what_still_draws() {
    let d = tmp();
    let Some(x) = display("obstacles_in_the_window_are_what_still_draws") else {
        return;
    };
    // The obstacles scene's rocks cover a good part of the frame: a window without them differs
    // from the still by far more than one code value.
    succeeds(
        d.path(),
        &[
            "simulate",
            "obstacles",
            "--agents",
            "600",
            "--steps",
            "6",
            "-o",
            "ob.bfs",
            "-q",
        ],
    );
    let mut p = player(
        &x,
        d.path(),
        &["view", "ob.bfs", "--size", SIZE, "--paused"],
    );
    let win = x.window("forge view", SLOW, p.child());
    win.wait_title("the first frame, settled", SLOW, paused);
    win.keys(&["Right", "Right", "Right"]);
    win.wait_title("frame 3", SLOW, |t| paused(t) && frame_of(t) == 3);
    let (k, shown) = save_look(d.path(), &win, "ob.look.json");
    assert_eq!(k, 3);
    still_matches(d.path(), "ob.bfs", k, "ob.look.json", &shown);
    quit(&win, p);
}

/// The physics panel of a live run: a drag on the noise's value while the run plays becomes
/// timeline keys at the steps the solver was about to take; `s` saves the scene with them,
/// and `forge simulate` on that file writes the bytes the session recorded.
#[test]
fn a_live_run_tuned_in_the_physics_panel_is_what_simulate_writes_from_the_saved_scene() {
    let d = tmp();
    let Some(x) = display("a_live_run_tuned_in_the_physics_panel") else {
        return;
    };
    let args = [
        "view",
        "vicsek-bands",
        "--agents",
        "3000",
        "--steps",
        "400",
        "--every",
        "2",
        "--record",
        "live.bfs",
        "--size",
        "320x180",
    ];
    let mut p = player(&x, d.path(), &args);
    let win = x.window("forge view", SLOW, p.child());
    win.wait_title("frames coming live", SLOW, |t| {
        t.ends_with(", live") && frame_of(t) > 5
    });
    // The noise's value: the first field of the panel, right of the 320-pixel image.
    win.drag([356, 70], [420, 70], 1);
    win.wait_title("the run's end", SLOW, |t| paused(t) && frame_of(t) == 200);
    let scene = save_and_quit(&win, p, d.path(), "vicsek-bands");
    let keys = scene["timeline"]
        .as_array()
        .expect("the saved scene has a timeline");
    assert!(
        !keys.is_empty()
            && keys
                .iter()
                .all(|k| k["set"]["vicsek.noise"].as_f64().unwrap() > 0.6),
        "{keys:?}"
    );
    simulate_saved_is_live(d.path(), "vicsek-bands");
}

/// A value typed into the physics panel while the run plays is one key, of the value typed,
/// at the step the solver was about to take when it was committed (Enter): no key a keystroke
/// ("0", "0.3"), no text rewritten by the run under the cursor.
#[test]
fn a_value_typed_into_the_physics_panel_is_one_key_of_that_value() {
    let d = tmp();
    let Some(x) = display("a_value_typed_into_the_physics_panel") else {
        return;
    };
    let args = [
        "view",
        "vicsek-bands",
        "--agents",
        "3000",
        "--steps",
        "300",
        "--every",
        "2",
        "--record",
        "live.bfs",
        "--size",
        "320x180",
    ];
    let mut p = player(&x, d.path(), &args);
    let win = x.window("forge view", SLOW, p.child());
    win.wait_title("frames coming live", SLOW, |t| {
        t.ends_with(", live") && frame_of(t) > 5
    });
    // The speed v0: the panel's second field, right of the 320-pixel image.
    win.click([356, 91], 1);
    win.keys(&["0", "period", "3", "7", "Return"]);
    win.wait_title("the run's end", SLOW, |t| paused(t) && frame_of(t) == 150);
    let scene = save_and_quit(&win, p, d.path(), "vicsek-bands");
    let keys = scene["timeline"].as_array().expect("a timeline");
    let v0: Vec<f64> = keys
        .iter()
        .filter_map(|k| k["set"]["vicsek.v0"].as_f64())
        .collect();
    assert!(
        v0.len() == 1 && (v0[0] - 0.37).abs() < 1e-6 && keys.len() == 1,
        "{keys:?}"
    );
    simulate_saved_is_live(d.path(), "vicsek-bands");
}

/// The physics panel's species checkboxes: unticking the falcons while the run plays is a
/// `remove` event at the step the solver was about to take; the frames after it leave them out,
/// and `forge simulate` of the saved scene writes the bytes the session recorded.
#[test]
fn a_species_taken_out_in_the_physics_panel_is_what_simulate_writes() {
    let d = tmp();
    let Some(x) = display("a_species_taken_out_in_the_physics_panel") else {
        return;
    };
    let args = [
        "view",
        "murmuration-falcon",
        "--agents",
        "1000",
        "--steps",
        "240",
        "--record",
        "live.bfs",
        "--size",
        "320x180",
    ];
    let mut p = player(&x, d.path(), &args);
    let win = x.window("forge view", SLOW, p.child());
    win.wait_title("frames coming live", SLOW, |t| {
        t.ends_with(", live") && frame_of(t) > 5
    });
    // The second checkbox of the panel (the falcons), right of the 320-pixel image.
    win.click([380, 91], 1);
    win.wait_title("the run's end", SLOW, |t| paused(t) && frame_of(t) == 240);
    let scene = save_and_quit(&win, p, d.path(), "murmuration-falcon");
    let keys = scene["timeline"].as_array().expect("a timeline");
    assert!(
        keys.len() == 1 && keys[0]["set"]["species[1].present"] == 0.0,
        "{keys:?}"
    );
    let mut r = forge::bfs::Reader::open(&d.path().join("live.bfs")).unwrap();
    let last = r.read_frame(r.frame_count() - 1).unwrap();
    let n = last.agents(2) as u32;
    assert!(
        matches!(last.absent[..], [(lo, hi)] if hi == n && lo < n),
        "the falcons (the last agents) are not absent at the end: {:?}",
        last.absent
    );
    simulate_saved_is_live(d.path(), "murmuration-falcon");
}

/// `s` in the player of a live run of `name`: the scene saved as `NAME.scene.json` (waited for),
/// then the player quit; the saved scene.
fn save_and_quit(win: &Window, p: Player, dir: &Path, name: &str) -> serde_json::Value {
    win.keys(&["s"]);
    let saved = dir.join(format!("{name}.scene.json"));
    let t0 = Instant::now();
    while !saved.exists() && t0.elapsed() < SLOW {
        std::thread::sleep(Duration::from_millis(50));
    }
    quit(win, p);
    let text = std::fs::read_to_string(&saved).expect("s saved the scene");
    serde_json::from_str(&text).unwrap()
}

/// `forge simulate NAME.scene.json` writes the bytes the live session recorded (`live.bfs`).
fn simulate_saved_is_live(dir: &Path, name: &str) {
    let scene = format!("{name}.scene.json");
    succeeds(dir, &["simulate", &scene, "-o", "sim.bfs", "-q"]);
    let (a, b) = (
        std::fs::read(dir.join("live.bfs")).unwrap(),
        std::fs::read(dir.join("sim.bfs")).unwrap(),
    );
    assert!(
        a == b,
        "the live run and forge simulate of its saved scene differ"
    );
}
