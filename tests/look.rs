//! The default look adapts to the recording: a sparse flock (2000 agents in BoidForge's
//! 1920×1080 world) and a dense one (60k in the same world), ours and BoidForge's BFS1, come
//! out well exposed at 720p with no flag and no render section. Measured on the real binary's
//! PNG output (luma from sRGB with BT.709 weights, 0..255).

use crate::common;

use std::path::Path;

use common::{exr_light, fails, has, have_gpu, succeeds};
use tempfile::TempDir;

/// Mean luma, fraction of pixels above 50/255, fraction clipped at 255.
fn luma_stats(png: &Path) -> (f64, f64, f64) {
    let img = image::open(png)
        .unwrap_or_else(|e| panic!("{}: {e}", png.display()))
        .to_rgb8();
    let (mut sum, mut lit, mut clipped) = (0.0f64, 0usize, 0usize);
    let n = (img.width() * img.height()) as usize;
    for p in img.pixels() {
        let [r, g, b] = p.0;
        let y = 0.2126 * r as f64 + 0.7152 * g as f64 + 0.0722 * b as f64;
        sum += y;
        if y > 50.0 {
            lit += 1;
        }
        if r == 255 && g == 255 && b == 255 {
            clipped += 1;
        }
    }
    (
        sum / n as f64,
        lit as f64 / n as f64,
        clipped as f64 / n as f64,
    )
}

fn scene(dir: &Path, name: &str, agents: u32, steps: u32) {
    std::fs::write(
        dir.join(format!("{name}.json")),
        format!(
            r#"{{"name": "{name}", "preset": "boidforge", "agents": {agents}, "steps": {steps}, "seed": 3}}"#
        ),
    )
    .unwrap();
    succeeds(dir, &["simulate", &format!("{name}.json"), "-q"]);
}

fn still(dir: &Path, bfs: &str, frame: u32, out: &str) -> (f64, f64, f64) {
    let stderr = succeeds(
        dir,
        &[
            "still",
            bfs,
            "--frame",
            &frame.to_string(),
            "--720p",
            "-o",
            out,
        ],
    )
    .stderr;
    assert!(
        stderr.contains("(measured)"),
        "the default look should say what it measured:\n{stderr}"
    );
    luma_stats(&dir.join(out))
}

/// At least `min_lit` of the pixels above 50/255 and under 2% clipped.
fn well_exposed(what: &str, (mean, lit, clipped): (f64, f64, f64), min_lit: f64) {
    println!("{what}: mean luma {mean:.1}, lit {lit:.3}, clipped {clipped:.4}");
    assert!(
        lit >= min_lit,
        "{what}: only {:.1}% of pixels above 50",
        lit * 100.0
    );
    assert!(
        clipped < 0.02,
        "{what}: {:.1}% clipped at 255",
        clipped * 100.0
    );
}

/// A 2D open world of `world` with `n` agents all at `at`, three frames: no solver involved.
fn points(dir: &Path, name: &str, n: usize, world: [f32; 2], at: [f32; 2]) {
    let mut scene = forge::scene::Scene::load("vicsek").unwrap();
    scene.render = None;
    scene.agents = n as u32;
    scene.world = [world[0], world[1], 0.0];
    scene.boundary = forge::scene::Boundary::Open;
    let header = forge::bfs::Header::for_scene(&scene);
    let file = std::fs::File::create(dir.join(name)).unwrap();
    let mut w = forge::bfs::Writer::new(file, &header).unwrap();
    let mut pos = vec![at[0]; 2 * n];
    pos[n..].fill(at[1]);
    let mut vel = vec![0.0f32; 2 * n];
    vel[..n].fill(0.03);
    for k in 0..3 {
        w.write_frame(k, &pos, &vel).unwrap();
    }
    w.finalize().unwrap();
}

#[test]
fn sparse_recording_is_well_exposed_by_default() {
    if !have_gpu("sparse_recording_is_well_exposed_by_default") {
        return;
    }
    let d = TempDir::new().unwrap();
    scene(d.path(), "sparse", 2000, 200);
    let stats = still(d.path(), "sparse.bfs", 200, "sparse.png");
    // Before the adaptive look: mean 5, 0.03% lit (dim dots on black).
    well_exposed("sparse", stats, 0.10);
    assert!(stats.0 >= 15.0, "sparse: mean luma {:.1}", stats.0);

    // The same frames as BoidForge's BFS1 (no world size stored, no render section).
    let mut r = forge::bfs::Reader::open(&d.path().join("sparse.bfs")).unwrap();
    let mut frames = Vec::new();
    for k in 0..r.frame_count() {
        let f = r.read_frame(k).unwrap();
        let n = f.agents(2);
        frames.push((
            f.step as i32,
            f.pos[..n].to_vec(),
            f.pos[n..].to_vec(),
            f.vel[..n].to_vec(),
            f.vel[n..].to_vec(),
        ));
    }
    let file = std::fs::File::create(d.path().join("bf.bfs")).unwrap();
    forge::bfs::write_bfs1(file, 0.05, 3, 2000, &frames, true).unwrap();
    well_exposed("BFS1", still(d.path(), "bf.bfs", 200, "bf.png"), 0.10);
}

#[test]
fn dense_recording_is_not_blown_out_by_default() {
    if !have_gpu("dense_recording_is_not_blown_out_by_default") {
        return;
    }
    let d = TempDir::new().unwrap();
    scene(d.path(), "dense", 60_000, 12);
    let stats = still(d.path(), "dense.bfs", 12, "dense.png");
    well_exposed("dense", stats, 0.10);
    assert!(stats.0 >= 20.0, "dense: mean luma {:.1}", stats.0);
}

#[test]
fn flags_and_the_scene_still_override_the_measured_look() {
    if !have_gpu("flags_and_the_scene_still_override_the_measured_look") {
        return;
    }
    let d = TempDir::new().unwrap();
    scene(d.path(), "sparse", 2000, 20);
    let stderr = succeeds(
        d.path(),
        &[
            "still",
            "sparse.bfs",
            "--frame",
            "20",
            "--size",
            "320x180",
            "-o",
            "a.png",
            "--exposure",
            "0.7",
            "--point-size",
            "1.5",
            "--trails",
            "0",
        ],
    )
    .stderr;
    assert!(!stderr.contains("(measured)"), "{stderr}");
    // Exposure alone: the sprite size stays the fixed default (the pair is measured together).
    let stderr = succeeds(
        d.path(),
        &[
            "still",
            "sparse.bfs",
            "--frame",
            "20",
            "--size",
            "320x180",
            "-o",
            "b.png",
            "--exposure",
            "0.7",
        ],
    )
    .stderr;
    assert!(!stderr.contains("(measured)"), "{stderr}");
    // Nothing set: both measured, identically run to run.
    for out in ["c.png", "d.png"] {
        succeeds(
            d.path(),
            &[
                "still",
                "sparse.bfs",
                "--frame",
                "20",
                "--size",
                "320x180",
                "-o",
                out,
            ],
        );
    }
    assert_eq!(
        std::fs::read(d.path().join("c.png")).unwrap(),
        std::fs::read(d.path().join("d.png")).unwrap(),
        "the measured look must be reproducible"
    );
}

/// `#rrggbb` sRGB level → linear, as the renderer decodes the background.
fn srgb_to_linear(c: f64) -> f64 {
    if c <= 0.04045 {
        c / 12.92
    } else {
        ((c + 0.055) / 1.055).powf(2.4)
    }
}

fn srgb_encode(c: f64) -> f64 {
    if c <= 0.0031308 {
        c * 12.92
    } else {
        1.055 * c.powf(1.0 / 2.4) - 0.055
    }
}

/// A dark vignette with no agents on screen: dithered, its gradient shows no bands (long runs
/// of one 8-bit value), and its mean stays what the undithered maths says.
#[test]
fn dark_gradients_are_dithered_not_banded() {
    if !have_gpu("dark_gradients_are_dithered_not_banded") {
        return;
    }
    let d = TempDir::new().unwrap();
    // One agent far outside an open world: only the background and the vignette show.
    points(d.path(), "empty.bfs", 1, [320.0, 180.0], [-1e4, -1e4]);
    let bg = 8u8;
    succeeds(
        d.path(),
        &[
            "still",
            "empty.bfs",
            "--frame",
            "2",
            "--size",
            "320x180",
            "-o",
            "v.png",
            "--background",
            "#080808",
            "--vignette",
            "1",
            "--bloom",
            "0",
            "--trails",
            "0",
            "--exposure",
            "1",
            "--point-size",
            "1.5",
            "-q",
        ],
    );
    let img = image::open(d.path().join("v.png")).unwrap().to_rgb8();
    let (w, h) = (img.width() as usize, img.height() as usize);
    // The true (continuous) level of each pixel: tonemap.wgsl's vignette on the background.
    let bg_lin = srgb_to_linear(bg as f64 / 255.0);
    let expect = |x: usize, y: usize| -> f64 {
        let u = (x as f64 + 0.5) / w as f64 - 0.5;
        let v = (y as f64 + 0.5) / h as f64 - 0.5;
        let len = ((u * w as f64 / h as f64).powi(2) + v * v).sqrt() * 1.2;
        let t = ((len - 0.35) / (1.1 - 0.35)).clamp(0.0, 1.0);
        let vig = 1.0 - t * t * (3.0 - 2.0 * t);
        srgb_encode(bg_lin * vig) * 255.0
    };
    let (mut got, mut want) = (0.0f64, 0.0f64);
    for y in 0..h {
        for x in 0..w {
            got += img.get_pixel(x as u32, y as u32).0[1] as f64;
            want += expect(x, y);
        }
    }
    let shift = (got - want) / (w * h) as f64;
    assert!(shift.abs() <= 0.5, "mean moved by {shift:.3}/255");
    // Along the gradient (the centre row and the diagonal, from where the vignette starts to
    // the edge), the longest run of one non-zero 8-bit value. Rounded, each of the few dark
    // levels holds for many pixels (a band); dithered, values alternate within a few.
    let row: Vec<(usize, usize)> = (w / 2 + 30..w).map(|x| (x, h / 2)).collect();
    let diag: Vec<(usize, usize)> = (20..90)
        .map(|k| (w / 2 + k * 16 / 9, h / 2 + k - 1))
        .collect();
    let longest_run = |level: &dyn Fn(usize, usize) -> u8| -> usize {
        let mut longest = 1;
        for line in [&row, &diag] {
            let mut run = 1;
            for i in 1..line.len() {
                let (a, b) = (
                    level(line[i].0, line[i].1),
                    level(line[i - 1].0, line[i - 1].1),
                );
                if a == b && a > 0 {
                    run += 1;
                    longest = longest.max(run);
                } else {
                    run = 1;
                }
            }
        }
        longest
    };
    let rendered = longest_run(&|x, y| img.get_pixel(x as u32, y as u32).0[1]);
    let banded = longest_run(&|x, y| expect(x, y).round() as u8);
    println!("longest run: {rendered} dithered, {banded} rounded; mean shift {shift:.3}/255");
    assert!(
        banded >= 30,
        "the test's gradient should band when rounded ({banded})"
    );
    // Across a row the dither's phases are independent, so a value still repeats by chance
    // where the true level sits on a step, but never for half a band.
    assert!(
        rendered <= 16 && rendered * 2 <= banded,
        "banding: a run of {rendered} equal values along the gradient (rounded: {banded})"
    );
    // Down a column the dither is ordered: any four rows hold levels a step apart, so no
    // value lasts more than four rows, in any channel, wherever the gradient is above black.
    let mut column_run = 0;
    let mut column_banded = 0;
    for x in (0..w).step_by(7) {
        for c in 0..3 {
            let mut run = 1;
            let mut band = 1;
            for y in 1..h {
                let (a, b) = (
                    img.get_pixel(x as u32, y as u32).0[c],
                    img.get_pixel(x as u32, y as u32 - 1).0[c],
                );
                run = if a == b && a > 0 { run + 1 } else { 1 };
                column_run = column_run.max(run);
                let (ra, rb) = (expect(x, y).round(), expect(x, y - 1).round());
                band = if ra == rb && ra > 0.0 { band + 1 } else { 1 };
                column_banded = column_banded.max(band);
            }
        }
    }
    println!("down the columns: longest run {column_run} dithered, {column_banded} rounded");
    assert!(
        column_banded >= 30,
        "the columns should band when rounded ({column_banded})"
    );
    assert!(
        column_run <= 4,
        "a run of {column_run} rows of one value down a column (the ordered dither allows 4 at any slope)"
    );
}

/// A still of `point.bfs`'s bright spot at the centre of a `side`×`side` frame, alone on black:
/// a fixed colour, no trails, no vignette.
fn spot_still(dir: &Path, side: u32, out: &str, bloom: &str, exposure: &str, radius: &str) {
    let size = format!("{side}x{side}");
    succeeds(
        dir,
        &[
            "still",
            "--bloom-radius",
            radius,
            "point.bfs",
            "--frame",
            "2",
            "--size",
            &size,
            "-o",
            out,
            "-q",
            "--bloom",
            bloom,
            "--exposure",
            exposure,
            "--point-size",
            "3",
            "--trails",
            "0",
            "--vignette",
            "0",
            "--background",
            "#000000",
            "--color",
            "fixed",
            // All the light of 3000 agents on one point (no crowd sharing): far above the
            // bloom's threshold.
            "--stacking",
            "0",
        ],
    );
}

/// One bright spot (3000 agents on one point) with strong bloom: the halo at equal distance
/// along the axes and the diagonals agrees within 5% (a box-like mip filter makes it a
/// rounded square, brighter along the diagonals).
#[test]
fn bloom_is_round() {
    if !have_gpu("bloom_is_round") {
        return;
    }
    let d = TempDir::new().unwrap();
    points(d.path(), "point.bfs", 3000, [640.0, 640.0], [320.0, 320.0]);
    spot_still(d.path(), 640, "b.png", "1", "0.02", "1");
    let img = image::open(d.path().join("b.png")).unwrap().to_rgb8();
    let lin =
        |x: usize, y: usize| srgb_to_linear(img.get_pixel(x as u32, y as u32).0[1] as f64 / 255.0);
    // Bilinear sample of the linear image at (x, y) (pixel centres at +0.5).
    let sample = |x: f64, y: f64| -> f64 {
        let (fx, fy) = (x - 0.5, y - 0.5);
        let (x0, y0) = (fx.floor() as usize, fy.floor() as usize);
        let (tx, ty) = (fx - x0 as f64, fy - y0 as f64);
        let top = lin(x0, y0) * (1.0 - tx) + lin(x0 + 1, y0) * tx;
        let bottom = lin(x0, y0 + 1) * (1.0 - tx) + lin(x0 + 1, y0 + 1) * tx;
        top * (1.0 - ty) + bottom * ty
    };
    // Mean over a ±4° wedge around each of four directions at `base` degrees (+ k·90°).
    let ring = |r: f64, base: f64| -> f64 {
        let mut sum = 0.0;
        let mut count = 0;
        for k in 0..4 {
            for s in -8..=8 {
                let a = (base + 90.0 * k as f64 + s as f64 * 0.5).to_radians();
                sum += sample(320.0 + r * a.cos(), 320.0 + r * a.sin());
                count += 1;
            }
        }
        sum / count as f64
    };
    // Out to where the halo is still several 8-bit steps above black (farther, quantization
    // and dither dominate). Before the round filters: up to 8.9% brighter on the diagonals.
    let mut worst = 0.0f64;
    for r in [24.0, 32.0, 48.0, 64.0] {
        let (axis, diag) = (ring(r, 0.0), ring(r, 45.0));
        let ratio = diag / axis;
        println!("r = {r}: axis {axis:.5}, diagonal {diag:.5}, ratio {ratio:.3}");
        assert!(axis > 1e-4, "no halo at r = {r}");
        worst = worst.max((ratio - 1.0).abs());
    }
    assert!(
        worst <= 0.05,
        "halo differs by {:.1}% between axis and diagonal",
        worst * 100.0
    );
}

/// The glow (bloom on minus bloom off, linear light) of one bright spot at the centre of a
/// `side`×`side` frame: its total, and the radius holding half of it as a fraction of `side`.
fn glow(dir: &Path, side: u32, bloom: &str, exposure: &str, radius: &str) -> (f64, f64, f64) {
    let render = |out: &str, b: &str| {
        spot_still(dir, side, out, b, exposure, radius);
        let (w, _, v) = exr_light(&dir.join(out));
        (w, v)
    };
    let (w, off) = render(&format!("off{side}-{radius}.exr"), "0");
    let (_, on) = render(&format!("on{side}-{radius}.exr"), bloom);
    let diff: Vec<f64> = on.iter().zip(&off).map(|(a, b)| a - b).collect();
    let total: f64 = diff.iter().sum();
    let c = side as f64 / 2.0;
    let mut by_r: Vec<(f64, f64)> = diff
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let (x, y) = ((i % w) as f64 + 0.5, (i / w) as f64 + 0.5);
            (((x - c).powi(2) + (y - c).powi(2)).sqrt(), *v)
        })
        .collect();
    by_r.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut acc = 0.0;
    let half = by_r
        .iter()
        .find(|(_, v)| {
            acc += v;
            acc >= total / 2.0
        })
        .map(|(r, _)| *r)
        .unwrap_or(0.0);
    (off.iter().sum(), total, half / side as f64)
}

/// Bloom keeps energy: the glow of a spot far above the threshold carries the spot's light
/// times the strength (× 6, the levels of 1080p the strength was tuned with) within 2%; and it
/// reaches the same fraction of the frame at 360 and 720 pixels (within 10%).
#[test]
fn bloom_keeps_energy_and_scales_with_the_frame() {
    if !have_gpu("bloom_keeps_energy") {
        return;
    }
    let d = TempDir::new().unwrap();
    points(d.path(), "point.bfs", 3000, [640.0, 640.0], [320.0, 320.0]);
    let (spot, glow720, reach720) = glow(d.path(), 720, "0.5", "1", "1");
    let ratio = glow720 / (spot * 0.5 * 6.0);
    println!("720: spot {spot:.1}, glow {glow720:.1} ({ratio:.4} of 6·s·spot), half within {reach720:.4} of the side");
    assert!((ratio - 1.0).abs() < 0.02, "glow / (6·s·spot) = {ratio:.4}");
    let (_, _, reach360) = glow(d.path(), 360, "0.5", "1", "1");
    println!("360: half within {reach360:.4} of the side");
    assert!(
        (reach360 / reach720 - 1.0).abs() < 0.10,
        "the glow's reach: {reach360:.4} of the frame at 360, {reach720:.4} at 720"
    );
}

/// `--bloom-radius`: twice the radius, the glow twice as wide (half its light within 1.8–2.2×
/// the default's radius), alike at 360 and 720 pixels (within 10%), with the same light
/// (within 2%); a radius out of range is refused, naming the flag.
#[test]
fn the_bloom_radius_stretches_the_reach_and_keeps_the_light() {
    if !have_gpu("the_bloom_radius") {
        return;
    }
    let d = TempDir::new().unwrap();
    points(d.path(), "point.bfs", 3000, [640.0, 640.0], [320.0, 320.0]);
    let (spot, glow1, reach1) = glow(d.path(), 720, "0.5", "1", "1");
    let (_, glow2, reach2) = glow(d.path(), 720, "0.5", "1", "2");
    let (_, _, reach2_360) = glow(d.path(), 360, "0.5", "1", "2");
    println!(
        "720: radius 1 half within {reach1:.4}, radius 2 within {reach2:.4} (360: {reach2_360:.4}); \
         light {:.4} and {:.4} of 6·s·spot",
        glow1 / (spot * 3.0),
        glow2 / (spot * 3.0)
    );
    assert!(
        (1.8..2.2).contains(&(reach2 / reach1)),
        "radius 2 reaches {reach2:.4} against {reach1:.4}"
    );
    assert!(
        (reach2_360 / reach2 - 1.0).abs() < 0.10,
        "radius 2: {reach2_360:.4} of the frame at 360, {reach2:.4} at 720"
    );
    assert!(
        (glow2 / (spot * 3.0) - 1.0).abs() < 0.02,
        "radius 2 keeps the light"
    );
    let r = fails(
        d.path(),
        &[
            "still",
            "point.bfs",
            "--frame",
            "2",
            "--bloom-radius",
            "9",
            "-o",
            "x.png",
        ],
    );
    has(&r, "--bloom-radius");
    has(&r, "0.25..=4");
}
