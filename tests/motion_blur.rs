//! `--motion-blur SHUTTER`: one agent moving at a known speed, rendered as linear-light EXR
//! stills (no bloom, trails, vignette or background, so every bit of light is the sprite's),
//! through the real binary and the real (software) GPU.
//!
//! - The streak's length is speed × frame interval × shutter / 360: its light's centroid moves
//!   back by half that, and its variance along the motion grows by length² / 12.
//! - Light is kept: the image's total within 2% of the unblurred sprite's.
//! - A zero shutter is no blur, byte for byte; in 3D the same holds through a perspective camera.

use std::fs;
use std::path::Path;

use forge::bfs;

use crate::common;

use common::*;

/// A recording of one agent at `pos` moving at `vel` (world units/s) in `world` (a built-in
/// scene's header: dt 0.05 s, a frame every step), three identical frames.
fn one_agent(path: &Path, scene: &str, world: [f32; 3], pos: &[f32], vel: &[f32]) -> f32 {
    let mut s = forge::scene::Scene::load(scene).unwrap();
    s.render = None;
    s.agents = 1;
    s.world = world;
    let header = bfs::Header::for_scene(&s);
    let frame_dt = header.dt * header.record_every as f32;
    let mut w = bfs::Writer::new(fs::File::create(path).unwrap(), &header).unwrap();
    for f in 0..3u64 {
        w.write_frame(f, pos, vel).unwrap();
    }
    w.finalize().unwrap();
    frame_dt
}

struct Shape {
    total: f64,
    /// Light-weighted centroid, pixels.
    cx: f64,
    cy: f64,
    /// Light-weighted variance along x, px².
    var_x: f64,
    /// Columns whose light exceeds 2% of the brightest column's.
    extent: f64,
}

fn shape(path: &Path) -> Shape {
    let (w, h, v) = exr_light(path);
    let total: f64 = v.iter().sum();
    let (mut sx, mut sy) = (0.0, 0.0);
    let mut cols = vec![0.0; w];
    for y in 0..h {
        for x in 0..w {
            let l = v[y * w + x];
            sx += l * (x as f64 + 0.5);
            sy += l * (y as f64 + 0.5);
            cols[x] += l;
        }
    }
    let cx = sx / total;
    let var_x = cols
        .iter()
        .enumerate()
        .map(|(x, l)| l * (x as f64 + 0.5 - cx).powi(2))
        .sum::<f64>()
        / total;
    let peak = cols.iter().cloned().fold(0.0, f64::max);
    let extent = cols.iter().filter(|&&c| c > 0.02 * peak).count() as f64;
    Shape {
        total,
        cx,
        cy: sy / total,
        var_x,
        extent,
    }
}

const BARE: &[&str] = &[
    "--bloom",
    "0",
    "--trails",
    "0",
    "--vignette",
    "0",
    "--background",
    "#000000",
    "--exposure",
    "1",
    "--point-size",
    "6",
    "--frame",
    "2",
    "-q",
];

fn still(dir: &Path, input: &str, out: &str, extra: &[&str]) -> Shape {
    let mut a = vec!["still", input, "-o", out];
    a.extend_from_slice(BARE);
    a.extend_from_slice(extra);
    succeeds(dir, &a);
    shape(&dir.join(out))
}

#[test]
fn a_streak_as_long_as_the_shutter_and_the_same_light() {
    if !have_gpu("motion_blur_2d") {
        return;
    }
    let d = tmp();
    // 320x180 world into a 320x180 frame: one world unit is one pixel. 300 units/s → 15 px a
    // frame at 0.05 s.
    let speed = 300.0;
    let frame_dt = one_agent(
        &d.path().join("a.bfs"),
        "turbulence",
        [320.0, 180.0, 0.0],
        &[200.0, 90.0],
        &[speed, 0.0],
    );
    let size = ["--size", "320x180"];
    let sharp = still(d.path(), "a.bfs", "s0.exr", &size);
    for shutter in [90.0f64, 180.0, 360.0] {
        let s = shutter.to_string();
        let mut extra = size.to_vec();
        extra.extend_from_slice(&["--motion-blur", &s]);
        let out = format!("s{shutter}.exr");
        let b = still(d.path(), "a.bfs", &out, &extra);
        let want = speed as f64 * frame_dt as f64 * shutter / 360.0;
        // The agent moves +x: its streak reaches back (−x) from where it is.
        let shift = sharp.cx - b.cx;
        assert!(
            (shift - want / 2.0).abs() < 0.25,
            "shutter {shutter}: centroid moved back {shift:.2} px, want {:.2}",
            want / 2.0
        );
        assert!((b.cy - sharp.cy).abs() < 0.05, "no smear across the motion");
        // Smearing over a segment of length L adds L²/12 to the variance along it.
        let length = (12.0 * (b.var_x - sharp.var_x)).sqrt();
        assert!(
            (length - want).abs() < 0.05 * want,
            "shutter {shutter}: a streak {length:.2} px long, want {want:.2}"
        );
        let kept = b.total / sharp.total;
        assert!(
            (kept - 1.0).abs() < 0.02,
            "shutter {shutter}: light {kept:.4} of the sharp sprite's"
        );
    }
    // Zero shutter: byte for byte the render without the flag (PNG, dithered, same seed).
    let png = |out: &str, extra: &[&str]| {
        let mut a = vec!["still", "a.bfs", "-o", out, "--size", "320x180", "-q"];
        a.extend_from_slice(extra);
        succeeds(d.path(), &a);
        fs::read(d.path().join(out)).unwrap()
    };
    assert_eq!(png("n.png", &[]), png("z.png", &["--motion-blur", "0"]));
    assert_ne!(png("n2.png", &[]), png("b.png", &["--motion-blur", "180"]));
    for bad in ["-1", "361", "nan"] {
        let flag = format!("--motion-blur={bad}");
        let err = fails(d.path(), &["still", "a.bfs", "-o", "x.png", &flag]);
        has(&err, "--motion-blur");
    }
}

#[test]
fn three_d_streaks_through_the_camera() {
    if !have_gpu("motion_blur_3d") {
        return;
    }
    let d = tmp();
    // A 3D agent moving +x, seen from straight above (fixed camera looking down −z).
    let frame_dt = one_agent(
        &d.path().join("b.bfs"),
        "shoal3d",
        [200.0, 200.0, 120.0],
        &[100.0, 100.0, 60.0],
        &[200.0, 0.0, 0.0],
    );
    assert!(frame_dt > 0.0);
    let cam = [
        "--size",
        "320x180",
        "--camera",
        "fixed",
        "--eye",
        "100,100.001,400",
        "--target",
        "100,100,60",
    ];
    let sharp = still(d.path(), "b.bfs", "t0.exr", &cam);
    let mut extra = cam.to_vec();
    extra.extend_from_slice(&["--motion-blur", "360"]);
    let b = still(d.path(), "b.bfs", "t1.exr", &extra);
    let kept = b.total / sharp.total;
    assert!(
        (kept - 1.0).abs() < 0.03,
        "3D: light {kept:.4} of the sharp sprite's"
    );
    assert!(
        b.extent > sharp.extent + 3.0,
        "3D: the streak shows ({} vs {} px)",
        b.extent,
        sharp.extent
    );
    assert!(
        (sharp.cx - b.cx).abs() > 1.0,
        "3D: the centroid moves along the motion"
    );
}
