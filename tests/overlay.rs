//! Overlays (`--overlay colorbar,time,title,scale`, `--title`, the scene's `render.overlay`):
//! golden images through the real binary on the real (software) GPU, every overlay in its
//! corner, and the errors that name the flag or JSON path.

use std::fs;
use std::path::{Path, PathBuf};

use crate::common;

use common::*;

fn rgba(path: &Path) -> (usize, usize, Vec<u8>) {
    let img = image::open(path).unwrap().to_rgba8();
    (img.width() as usize, img.height() as usize, img.into_raw())
}

fn golden(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

/// Pixels in a rectangle (fractions of the frame) that differ between two images.
fn changed(
    a: &(usize, usize, Vec<u8>),
    b: &(usize, usize, Vec<u8>),
    x: [f64; 2],
    y: [f64; 2],
) -> usize {
    let (w, h, _) = a;
    let (x0, x1) = ((x[0] * *w as f64) as usize, (x[1] * *w as f64) as usize);
    let (y0, y1) = ((y[0] * *h as f64) as usize, (y[1] * *h as f64) as usize);
    (y0..y1)
        .flat_map(|yy| (x0..x1).map(move |xx| (yy * w + xx) * 4))
        .filter(|&i| a.2[i..i + 3] != b.2[i..i + 3])
        .count()
}

/// A recording of its own (not a built-in scene, whose look and warm-up may change): 400 boids
/// in clusters in a 640x360 world, 10 frames.
fn recording(dir: &Path) {
    write(
        dir,
        "m.json",
        r#"{"preset": "boidforge", "agents": 400, "steps": 9, "seed": 11,
            "world": {"size": [640, 360], "boundary": "wrap"},
            "init": {"layout": "clusters", "count": 12, "radius": 30}}"#,
    );
    succeeds(dir, &["simulate", "m.json", "-o", "m.bfs", "-q"]);
}

/// The look pinned (exposure, point size, colour map), so only the overlays are tested.
const PINNED: &[&str] = &[
    "--exposure",
    "1",
    "--point-size",
    "1.5",
    "--trails",
    "0",
    "--bloom",
    "0.5",
    "--background",
    "#05050a",
    "--color",
    "speed",
    "--colormap",
    "inferno",
    "--frame",
    "9",
    "--size",
    "640x360",
    "-q",
];

#[test]
fn every_overlay_in_its_corner_and_the_golden_image() {
    if !have_gpu("overlays") {
        return;
    }
    let d = tmp();
    recording(d.path());
    let still = |out: &str, extra: &[&str]| {
        let mut a = vec!["still", "m.bfs", "-o", out];
        a.extend_from_slice(PINNED);
        if !extra.contains(&"--range") {
            a.extend_from_slice(&["--range", "10..60"]);
        }
        a.extend_from_slice(extra);
        succeeds(d.path(), &a);
        rgba(&d.path().join(out))
    };
    let plain = still("plain.png", &[]);
    let none = still("none.png", &["--overlay", "none"]);
    assert_eq!(plain, none, "--overlay none is no overlay");
    let all = still(
        "all.png",
        &[
            "--overlay",
            "colorbar,time,title,scale",
            "--title",
            "Starlings",
        ],
    );
    // Each corner gains its overlay; the middle does not change.
    for (what, x, y) in [
        ("title", [0.0, 0.35], [0.0, 0.12]),
        ("time", [0.6, 1.0], [0.0, 0.1]),
        ("colour bar", [0.0, 0.3], [0.85, 1.0]),
        ("scale bar", [0.75, 1.0], [0.85, 1.0]),
    ] {
        let n = changed(&all, &plain, x, y);
        assert!(n > 150, "{what}: {n} pixels changed");
    }
    assert_eq!(changed(&all, &plain, [0.3, 0.7], [0.3, 0.7]), 0);
    // The golden image (text at 10 px, the bar, the ticks), compared like tests/render.rs's.
    let reference = golden("overlay_all.png");
    if std::env::var("FORGE_UPDATE_GOLDEN").is_ok_and(|v| v == "1") {
        fs::copy(d.path().join("all.png"), &reference).unwrap();
    }
    if let Err(why) = golden_difference(&d.path().join("all.png"), &reference) {
        panic!("overlay golden: {why}");
    }
    // Another range, other labels: only the colour bar's corner changes.
    let other = still(
        "other.png",
        &[
            "--overlay",
            "colorbar,time,title,scale",
            "--title",
            "Starlings",
            "--range",
            "10..95",
        ],
    );
    let bar = ([0.0, 0.5], [0.8, 1.0]);
    // (Agents coloured by the new range change too; the bar's label "95" is new.)
    assert!(
        changed(&all, &other, bar.0, bar.1) > 20,
        "the colour bar's labels follow --range"
    );
}

#[test]
fn the_scene_asks_for_overlays_and_flags_override() {
    if !have_gpu("overlays_scene") {
        return;
    }
    let d = tmp();
    write(
        d.path(),
        "s.json",
        r#"{"model": "boids", "agents": 300, "steps": 4, "seed": 1,
            "render": {"overlay": ["title", "time"], "title": "From the scene"}}"#,
    );
    succeeds(d.path(), &["simulate", "s.json", "-o", "s.bfs", "-q"]);
    let still = |out: &str, extra: &[&str]| {
        let mut a = vec![
            "still", "s.bfs", "-o", out, "--frame", "4", "--size", "320x180",
        ];
        a.extend_from_slice(&["-q", "--exposure", "1", "--trails", "0"]);
        a.extend_from_slice(extra);
        succeeds(d.path(), &a);
        rgba(&d.path().join(out))
    };
    let scene = still("a.png", &[]);
    let off = still("b.png", &["--overlay", "none"]);
    let title = ([0.0, 0.5], [0.0, 0.15]);
    assert!(changed(&scene, &off, title.0, title.1) > 50);
    // Bad names, each naming where it came from.
    let err = fails(
        d.path(),
        &["still", "s.bfs", "-o", "x.png", "--overlay", "clock"],
    );
    has(&err, "--overlay");
    has(&err, "clock");
    write(
        d.path(),
        "bad.json",
        r#"{"model": "boids", "agents": 10, "steps": 1, "render": {"overlay": ["time", "logo"]}}"#,
    );
    let err = fails(d.path(), &["simulate", "bad.json", "-o", "bad.bfs"]);
    has(&err, "scene.render.overlay[1]");
}
