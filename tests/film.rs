//! The look's film controls through the real binary on hand-made recordings (no solver): ink
//! on a sky gradient, tiling a wrapping world and the bars of a walled one, crowds sharing
//! their light, darts along the velocity, a fixed colour, heading relative to the flock's,
//! and grading. Measured on `forge still`'s PNG (sRGB code values, 0..255).

use crate::common;

use std::path::Path;

use common::{exr_light, fails, has, have_gpu, succeeds};
use image::RgbImage;
use tempfile::TempDir;

/// A 2D recording of `world` and `boundary`: three frames with the agents at `pos`, moving
/// with `vel`, and standing still (the same positions every frame).
fn recording(
    dir: &Path,
    name: &str,
    world: [f32; 2],
    boundary: forge::scene::Boundary,
    agents: &[([f32; 2], [f32; 2])],
) {
    let frame = agents.to_vec();
    recording_frames(
        dir,
        name,
        world,
        boundary,
        &[frame.clone(), frame.clone(), frame],
    );
}

/// A 2D recording of `world` and `boundary` whose frame k holds `frames[k]` (positions and
/// velocities, the same agents in the same order in every frame).
fn recording_frames(
    dir: &Path,
    name: &str,
    world: [f32; 2],
    boundary: forge::scene::Boundary,
    frames: &[Vec<([f32; 2], [f32; 2])>],
) {
    let agents = &frames[0];
    let mut scene = forge::scene::Scene::load("vicsek").unwrap();
    scene.render = None;
    scene.agents = agents.len() as u32;
    scene.world = [world[0], world[1], 0.0];
    scene.boundary = boundary;
    let header = forge::bfs::Header::for_scene(&scene);
    let file = std::fs::File::create(dir.join(name)).unwrap();
    let mut w = forge::bfs::Writer::new(file, &header).unwrap();
    let n = agents.len();
    for (k, agents) in frames.iter().enumerate() {
        let (mut pos, mut vel) = (vec![0.0f32; 2 * n], vec![0.0f32; 2 * n]);
        for (i, (p, v)) in agents.iter().enumerate() {
            (pos[i], pos[n + i]) = (p[0], p[1]);
            (vel[i], vel[n + i]) = (v[0], v[1]);
        }
        w.write_frame(k as u64, &pos, &vel).unwrap();
    }
    w.finalize().unwrap();
}

/// `forge still` of frame 2 at 320×180 with `args`, read back.
fn still(dir: &Path, bfs: &str, out: &str, args: &[&str]) -> RgbImage {
    let mut all = vec![
        "still", bfs, "--frame", "2", "--size", "320x180", "-o", out, "-q",
    ];
    all.extend_from_slice(args);
    succeeds(dir, &all);
    image::open(dir.join(out)).unwrap().to_rgb8()
}

fn luma(p: [u8; 3]) -> f64 {
    0.2126 * p[0] as f64 + 0.7152 * p[1] as f64 + 0.0722 * p[2] as f64
}

/// The mean colour of the pixels within `r` of (x, y).
fn mean_around(img: &RgbImage, x: i32, y: i32, r: i32) -> [f64; 3] {
    let mut sum = [0.0f64; 3];
    let mut n = 0.0;
    for yy in (y - r).max(0)..=(y + r).min(img.height() as i32 - 1) {
        for xx in (x - r).max(0)..=(x + r).min(img.width() as i32 - 1) {
            let p = img.get_pixel(xx as u32, yy as u32).0;
            for c in 0..3 {
                sum[c] += p[c] as f64;
            }
            n += 1.0;
        }
    }
    sum.map(|s| s / n)
}

/// A plain look: no trails, bloom or vignette, a fixed exposure.
const PLAIN: [&str; 8] = [
    "--trails",
    "0",
    "--bloom",
    "0",
    "--vignette",
    "0",
    "--exposure",
    "1",
];

/// Ink: every pixel is the sky or darker than it, the agents clearly darker; the sky runs
/// from `background_top` at the top to `background` at the bottom.
#[test]
fn ink_draws_dark_agents_on_a_sky_gradient() {
    if !have_gpu("ink_draws_dark_agents_on_a_sky_gradient") {
        return;
    }
    let d = TempDir::new().unwrap();
    let mut agents = Vec::new();
    for i in 0..12 {
        for j in 0..6 {
            let p = [30.0 + 12.0 * i as f32, 25.0 + 10.0 * j as f32];
            agents.push((p, [1.0, 0.0]));
        }
    }
    recording(
        d.path(),
        "a.bfs",
        [200.0, 112.5],
        forge::scene::Boundary::Open,
        &agents,
    );
    let sky_args = ["--background", "#e0a882", "--background-top", "#4a638c"];
    let mut args: Vec<&str> = vec!["--style", "ink"];
    args.extend_from_slice(&sky_args);
    args.extend_from_slice(&PLAIN[..6]);
    let ink = still(d.path(), "a.bfs", "ink.png", &args);
    args.extend_from_slice(&["--exposure", "0"]);
    let sky = still(d.path(), "a.bfs", "sky.png", &args);
    // The gradient's ends (dither moves a code value or so).
    let top = mean_around(&sky, 160, 0, 2);
    let bottom = mean_around(&sky, 160, 179, 2);
    for (got, want, end) in [
        (top, [0x4a, 0x63, 0x8c], "top"),
        (bottom, [0xe0, 0xa8, 0x82], "bottom"),
    ] {
        for c in 0..3 {
            assert!(
                (got[c] - want[c] as f64).abs() < 4.0,
                "the sky's {end}: {got:?}, want {want:?}"
            );
        }
    }
    let (mut darker, mut brighter) = (0usize, 0usize);
    for (a, s) in ink.pixels().zip(sky.pixels()) {
        let (la, ls) = (luma(a.0), luma(s.0));
        if la < ls - 30.0 {
            darker += 1;
        }
        if la > ls + 2.5 {
            brighter += 1;
        }
    }
    println!("ink: {darker} pixels much darker than the sky, {brighter} brighter");
    assert!(
        darker > 72,
        "the agents are not drawn dark: {darker} pixels"
    );
    assert_eq!(brighter, 0, "ink never lightens the sky");
}

/// A sprite across a corner of a wrapping world shows in all four corners of the frame; a view
/// zoomed out to two and a half worlds shows an agent's far repeats as well as its near ones.
#[test]
fn a_wrapping_world_shows_every_image_of_a_sprite() {
    if !have_gpu("a_wrapping_world_shows_every_image") {
        return;
    }
    let d = TempDir::new().unwrap();
    // A 160×90 world fills the 320×180 frame, 2 px a unit (y up): one crowd in the corner at
    // (0.5, 0.5), one at (100, 45), right of the middle.
    let agents: Vec<_> = (0..40)
        .map(|i| {
            let at = if i < 20 { [0.5f32, 0.5] } else { [100.0, 45.0] };
            (at, [1.0f32, 0.0])
        })
        .collect();
    recording(
        d.path(),
        "c.bfs",
        [160.0, 90.0],
        forge::scene::Boundary::Wrap,
        &agents,
    );
    let mut args: Vec<&str> = vec![
        "--background",
        "#303030",
        "--color",
        "fixed:#ffffff",
        "--point-size",
        "18",
    ];
    args.extend_from_slice(&PLAIN);
    let lit = |img: &RgbImage, x: i32, y: i32| luma(mean_around(img, x, y, 1).map(|v| v as u8));
    let img = still(d.path(), "c.bfs", "corners.png", &args);
    let bg = luma(img.get_pixel(100, 40).0);
    for (x, y) in [(1, 178), (318, 178), (1, 1), (318, 1)] {
        let l = lit(&img, x, y);
        println!("corner ({x}, {y}): {l:.0}, background {bg:.0}");
        assert!(
            l > bg + 40.0,
            "the corner sprite's image at ({x}, {y}): {l:.0}"
        );
    }
    // Zoomed out: 0.8 px a unit, the world's left edge at x = 96; the second crowd at x = 176,
    // its repeats one world (128 px) to either side, in the middle row.
    args.extend_from_slice(&["--zoom", "0.4"]);
    let img = still(d.path(), "c.bfs", "far.png", &args);
    for x in [48, 176, 304] {
        let l = lit(&img, x, 90);
        println!("zoomed out, x = {x}: {l:.0}");
        assert!(l > bg + 40.0, "the repeat at x = {x}: {l:.0}");
    }
    assert!(lit(&img, 112, 90) < bg + 5.0, "nothing between the repeats");
}

/// A wrapping world tiles the frame by default (an agent by the left edge shows again one
/// world width to the right); `--fit letterbox` shows it once, with bars darker than the
/// world's background; a walled world letterboxes by default.
#[test]
fn a_wrapping_world_tiles_the_frame_and_a_walled_one_shows_its_bars() {
    if !have_gpu("a_wrapping_world_tiles") {
        return;
    }
    let d = TempDir::new().unwrap();
    // A 100×100 world in a 320×180 frame: 1.8 px a unit, the world from x = 70 to 250.
    let agents: Vec<_> = (0..20).map(|_| ([5.0f32, 50.0], [1.0f32, 0.0])).collect();
    recording(
        d.path(),
        "w.bfs",
        [100.0, 100.0],
        forge::scene::Boundary::Wrap,
        &agents,
    );
    recording(
        d.path(),
        "r.bfs",
        [100.0, 100.0],
        forge::scene::Boundary::Reflect,
        &agents,
    );
    let mut args: Vec<&str> = vec!["--background", "#303030", "--color", "fixed:#ffffff"];
    args.extend_from_slice(&PLAIN);
    let lit = |img: &RgbImage, x: i32| luma(mean_around(img, x, 90, 2).map(|v| v as u8));
    let tiled = still(d.path(), "w.bfs", "tiled.png", &args);
    println!(
        "tiled: {:.0} at x = 79, {:.0} at x = 259",
        lit(&tiled, 79),
        lit(&tiled, 259)
    );
    assert!(
        lit(&tiled, 79) > 120.0 && lit(&tiled, 259) > 120.0,
        "tiling shows both copies"
    );
    let bg = luma(tiled.get_pixel(5, 5).0);
    let bg_inside = luma(tiled.get_pixel(160, 5).0);
    assert!(
        (bg - bg_inside).abs() < 3.0,
        "a tiled world has no bars: {bg} / {bg_inside}"
    );

    let mut boxed = args.clone();
    boxed.extend_from_slice(&["--fit", "letterbox"]);
    for (img, what) in [
        (
            still(d.path(), "w.bfs", "boxed.png", &boxed),
            "wrap, --fit letterbox",
        ),
        (still(d.path(), "r.bfs", "walled.png", &args), "reflect"),
    ] {
        let (bar, inside) = (
            luma(img.get_pixel(20, 20).0),
            luma(img.get_pixel(160, 20).0),
        );
        println!(
            "{what}: agent {:.0}, copy {:.0}, bar {bar:.0}, inside {inside:.0}",
            lit(&img, 79),
            lit(&img, 259)
        );
        assert!(lit(&img, 79) > 120.0, "{what}: the agent is drawn");
        assert!(lit(&img, 259) < inside + 3.0, "{what}: no copy in the bar");
        assert!(
            bar < inside - 8.0 && bar > 4.0,
            "{what}: the bars a shade darker: {bar} / {inside}"
        );
    }
}

/// Crowd sharing: the light of a crowd of `n` overlapping sprites is divided by their
/// overlap to the power `--stacking`. 200 agents on one point (few enough for the half-float
/// light to add up exactly), in linear light (EXR): with `--stacking 0` they carry 200 times
/// one agent's light; with 0.7 and 1 the logarithms of what is left keep the ratio 0.7 : 1,
/// and the pile is seen as a crowd (an overlap above 2).
#[test]
fn a_crowd_shares_its_light() {
    if !have_gpu("a_crowd_shares_its_light") {
        return;
    }
    let d = TempDir::new().unwrap();
    let agents: Vec<_> = (0..200).map(|_| ([50.0f32, 50.0], [1.0f32, 0.0])).collect();
    recording(
        d.path(),
        "p.bfs",
        [100.0, 100.0],
        forge::scene::Boundary::Open,
        &agents,
    );
    let one = [([50.0f32, 50.0], [1.0f32, 0.0])];
    recording(
        d.path(),
        "one.bfs",
        [100.0, 100.0],
        forge::scene::Boundary::Open,
        &one,
    );
    let total = |bfs: &str, stacking: &str| {
        let out = format!("{bfs}-{stacking}.exr");
        let mut args: Vec<&str> = vec![
            "--color",
            "fixed:#ff6020",
            "--point-size",
            "4",
            "--background",
            "#000000",
            "--stacking",
            stacking,
        ];
        args.extend_from_slice(&PLAIN);
        still(d.path(), bfs, &out, &args);
        exr_light(&d.path().join(&out)).2.iter().sum::<f64>()
    };
    let single = total("one.bfs", "0");
    let (r0, r07, r1) = (
        total("p.bfs", "0") / single,
        total("p.bfs", "0.7") / single,
        total("p.bfs", "1") / single,
    );
    println!("a crowd of 200 against one agent: stacking 0 {r0:.1}, 0.7 {r07:.2}, 1 {r1:.3}");
    assert!(
        (r0 / 200.0 - 1.0).abs() < 0.03,
        "unshared: 200 agents' light"
    );
    let overlap07 = (r0 / r07).ln() / 0.7;
    let overlap1 = (r0 / r1).ln();
    assert!(
        (overlap07 / overlap1 - 1.0).abs() < 0.05,
        "the share is overlap^-stacking: ln overlap {overlap07:.3} (0.7) against {overlap1:.3} (1)"
    );
    assert!(
        overlap1.exp() > 2.0,
        "200 sprites on one point are seen to overlap"
    );
}

/// The second moments of the light above the background: (xx, yy).
fn spread(img: &RgbImage) -> (f64, f64) {
    let (mut w, mut mx, mut my) = (0.0, 0.0, 0.0);
    let mut px = Vec::new();
    for (x, y, p) in img.enumerate_pixels() {
        let l = (luma(p.0) - 12.0).max(0.0);
        if l > 0.0 {
            px.push((x as f64, y as f64, l));
            w += l;
            mx += l * x as f64;
            my += l * y as f64;
        }
    }
    let (mx, my) = (mx / w, my / w);
    let (mut xx, mut yy) = (0.0, 0.0);
    for (x, y, l) in px {
        xx += l * (x - mx).powi(2);
        yy += l * (y - my).powi(2);
    }
    (xx / w, yy / w)
}

/// Darts lie along the velocity: longer than wide, along x for agents moving along x and
/// along y for agents moving along y; dots are round.
#[test]
fn darts_point_along_the_velocity() {
    if !have_gpu("darts_point_along_the_velocity") {
        return;
    }
    let d = TempDir::new().unwrap();
    for (name, v) in [("x.bfs", [1.0f32, 0.0]), ("y.bfs", [0.0, 1.0])] {
        recording(
            d.path(),
            name,
            [100.0, 100.0],
            forge::scene::Boundary::Open,
            &[([50.0, 50.0], v)],
        );
    }
    let mut args: Vec<&str> = vec!["--point-size", "8", "--color", "fixed:#ffffff"];
    args.extend_from_slice(&PLAIN);
    let mut dart = args.clone();
    dart.extend_from_slice(&["--shape", "dart"]);
    let (xx, xy) = spread(&still(d.path(), "x.bfs", "dx.png", &dart));
    let (yx, yy) = spread(&still(d.path(), "y.bfs", "dy.png", &dart));
    let (ox, oy) = spread(&still(d.path(), "x.bfs", "ox.png", &args));
    println!("dart along x: {xx:.1} × {xy:.1}; along y: {yx:.1} × {yy:.1}; dot: {ox:.1} × {oy:.1}");
    assert!(xx > 2.0 * xy, "a dart moving along x is long in x");
    assert!(yy > 2.0 * yx, "a dart moving along y is long in y");
    assert!((ox / oy - 1.0).abs() < 0.15, "a dot is round");
}

/// An agent standing still has no velocity to point a dart along: it is drawn as a round dart,
/// and alike by the darts-only pipeline and by the one that holds every shape (motion blur on,
/// which leaves a still agent unblurred).
#[test]
fn a_still_agent_is_a_round_dart_in_every_pipeline() {
    if !have_gpu("a_still_agent_is_a_round_dart_in_every_pipeline") {
        return;
    }
    let d = TempDir::new().unwrap();
    recording(
        d.path(),
        "s.bfs",
        [100.0, 100.0],
        forge::scene::Boundary::Open,
        &[([50.0, 50.0], [0.0, 0.0])],
    );
    let mut args: Vec<&str> = vec!["--point-size", "8", "--color", "fixed:#ffffff"];
    args.extend_from_slice(&PLAIN);
    args.extend_from_slice(&["--shape", "dart"]);
    let darts = still(d.path(), "s.bfs", "d.png", &args);
    args.extend_from_slice(&["--motion-blur", "180"]);
    let every = still(d.path(), "s.bfs", "b.png", &args);
    let lit = darts.pixels().filter(|p| luma(p.0) > 40.0).count();
    let (xx, yy) = spread(&darts);
    println!("a still agent as a dart: {lit} lit pixels, spread {xx:.1} × {yy:.1}");
    assert!(lit > 20, "the still agent is drawn ({lit} lit pixels)");
    assert!(
        (xx / yy - 1.0).abs() < 0.15,
        "a still agent's dart is round"
    );
    assert!(
        darts.as_raw() == every.as_raw(),
        "the darts-only pipeline and the every-shape pipeline draw a still agent alike"
    );
}

/// `--color fixed:#RRGGBB` draws every agent in that colour; a colour that is not one is
/// refused naming the flag.
#[test]
fn a_fixed_colour_is_the_colour_drawn() {
    if !have_gpu("a_fixed_colour_is_the_colour_drawn") {
        return;
    }
    let d = TempDir::new().unwrap();
    let agents: Vec<_> = (0..40)
        .map(|i| {
            (
                [10.0 + 2.0 * i as f32, 50.0],
                [1.0f32, (i as f32 * 0.7).sin()],
            )
        })
        .collect();
    recording(
        d.path(),
        "f.bfs",
        [100.0, 100.0],
        forge::scene::Boundary::Open,
        &agents,
    );
    let mut args: Vec<&str> = vec!["--color", "fixed:#20c040", "--background", "#000000"];
    args.extend_from_slice(&PLAIN);
    let img = still(d.path(), "f.bfs", "f.png", &args);
    let mut n = 0;
    for p in img.pixels().filter(|p| luma(p.0) > 40.0) {
        let [r, g, b] = p.0.map(|c| c as f64);
        assert!(
            g > 2.0 * r && g > 2.0 * b,
            "a pixel of {:?} is not the fixed green",
            p.0
        );
        n += 1;
    }
    assert!(n > 40, "the agents are drawn ({n} lit pixels)");
    let err = fails(
        d.path(),
        &["still", "f.bfs", "--frame", "2", "--color", "fixed:#12345"],
    );
    has(&err, "--color");
}

/// Heading relative to the flock's mean: two groups turned ±40° from the mean take the two
/// ends of the map, and turning the whole flock changes nothing (absolute heading would).
#[test]
fn relative_heading_colours_the_turn_from_the_flock() {
    if !have_gpu("relative_heading_colours_the_turn_from_the_flock") {
        return;
    }
    let d = TempDir::new().unwrap();
    let flock = |turn: f32| -> Vec<([f32; 2], [f32; 2])> {
        let mut a = Vec::new();
        for i in 0..30 {
            for (x0, angle) in [(20.0, 40.0f32), (70.0, -40.0)] {
                let t = (angle + turn).to_radians();
                a.push((
                    [x0 + (i % 6) as f32, 45.0 + (i / 6) as f32 * 2.0],
                    [t.cos(), t.sin()],
                ));
            }
        }
        a
    };
    recording(
        d.path(),
        "a.bfs",
        [100.0, 100.0],
        forge::scene::Boundary::Open,
        &flock(0.0),
    );
    recording(
        d.path(),
        "b.bfs",
        [100.0, 100.0],
        forge::scene::Boundary::Open,
        &flock(100.0),
    );
    let mut args: Vec<&str> = vec![
        "--color",
        "relative-heading",
        "--colormap",
        "viridis",
        "--range",
        "-60..60",
    ];
    args.extend_from_slice(&PLAIN);
    let a = still(d.path(), "a.bfs", "a.png", &args);
    let b = still(d.path(), "b.bfs", "b.png", &args);
    // The groups at x ≈ 20..26 and 70..76 world units: pixels 70 + 1.8·x.
    let (left, right) = (mean_around(&a, 111, 93, 3), mean_around(&a, 201, 93, 3));
    println!("turned +40°: {left:?}; turned −40°: {right:?}");
    let diff: f64 = (0..3).map(|c| (left[c] - right[c]).abs()).sum();
    assert!(diff > 60.0, "the two groups take different colours");
    let diff_turned: f64 = a
        .pixels()
        .zip(b.pixels())
        .map(|(p, q)| {
            (0..3)
                .map(|c| (p.0[c] as f64 - q.0[c] as f64).abs())
                .sum::<f64>()
        })
        .fold(0.0, f64::max);
    assert!(
        diff_turned <= 3.0,
        "turning the flock changed a pixel by {diff_turned}"
    );
}

/// Grading: saturation 0 is grey; gain darkens the whites; contrast spreads the tones.
#[test]
fn grading_controls_act_on_the_frame() {
    if !have_gpu("grading_controls_act_on_the_frame") {
        return;
    }
    let d = TempDir::new().unwrap();
    let agents: Vec<_> = (0..200)
        .map(|i| {
            let a = i as f32 * 0.1;
            (
                [
                    50.0 + 30.0 * a.cos() * (i as f32 / 200.0),
                    50.0 + 30.0 * a.sin() * (i as f32 / 200.0),
                ],
                [a.cos(), a.sin()],
            )
        })
        .collect();
    recording(
        d.path(),
        "g.bfs",
        [100.0, 100.0],
        forge::scene::Boundary::Open,
        &agents,
    );
    let mut args: Vec<&str> = vec!["--color", "heading", "--background", "#102030"];
    args.extend_from_slice(&PLAIN);
    let plain = still(d.path(), "g.bfs", "plain.png", &args);
    let with = |extra: &[&str], out: &str| {
        let mut a = args.clone();
        a.extend_from_slice(extra);
        still(d.path(), "g.bfs", out, &a)
    };
    let grey = with(&["--saturation", "0"], "grey.png");
    let worst = grey
        .pixels()
        .map(|p| p.0.iter().max().unwrap() - p.0.iter().min().unwrap())
        .max()
        .unwrap();
    assert!(
        worst <= 2,
        "saturation 0: a pixel's channels differ by {worst}"
    );
    let plain_chroma = plain
        .pixels()
        .map(|p| p.0.iter().max().unwrap() - p.0.iter().min().unwrap())
        .max()
        .unwrap();
    assert!(plain_chroma > 60, "the plain frame is coloured");
    let npx = |img: &RgbImage| (img.width() * img.height()) as f64;
    let mean = |img: &RgbImage| img.pixels().map(|p| luma(p.0)).sum::<f64>() / npx(img);
    let bright = |img: &RgbImage| img.pixels().map(|p| luma(p.0)).fold(0.0, f64::max);
    let dim = with(&["--gain", "0.5"], "gain.png");
    println!(
        "max luma: plain {:.0}, gain 0.5 {:.0}",
        bright(&plain),
        bright(&dim)
    );
    assert!(
        bright(&dim) < 0.75 * bright(&plain),
        "gain 0.5 darkens the whites"
    );
    let flat = with(&["--contrast", "0.5"], "flat.png");
    let sd = |img: &RgbImage| {
        let m = mean(img);
        (img.pixels().map(|p| (luma(p.0) - m).powi(2)).sum::<f64>() / npx(img)).sqrt()
    };
    println!(
        "tone spread: plain {:.1}, contrast 0.5 {:.1}",
        sd(&plain),
        sd(&flat)
    );
    assert!(
        sd(&flat) < 0.8 * sd(&plain),
        "contrast 0.5 narrows the tones"
    );
}

/// The resolved look of `bfs` as `forge still --print-look` prints it (no GPU needed).
fn printed_look(dir: &Path, bfs: &str, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["still", bfs, "--size", "320x180", "--print-look"];
    all.extend_from_slice(args);
    serde_json::from_str(&succeeds(dir, &all).stdout).unwrap()
}

/// A small deterministic generator (the test's own, so the recordings do not depend on a
/// crate's stream).
fn lcg(state: &mut u64) -> f32 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (*state >> 40) as f32 / (1u64 << 24) as f32
}

/// With no colour named, the default quantity is one that holds steady from frame to frame:
/// speed or the turn where an agent keeps its value, local density where both are redrawn
/// every frame (coloured by them, agents would flicker on the spot) — unless the flock fills
/// its world so evenly that density shows nothing either.
#[test]
fn the_default_colour_is_a_quantity_that_holds_steady() {
    let d = TempDir::new().unwrap();
    // Enough agents for density's grid (160 cells a side here) to hold several a cell.
    let n = 6400;
    let mut seed = 7u64;
    // A third spread over the world, a third in a square 40 units across, a third in one 20
    // across (so local density varies), or an even lattice: one agent in the middle of every
    // other cell of density's grid, each with the same neighbourhood.
    let clumped: Vec<[f32; 2]> = (0..n)
        .map(|i| {
            let (cx, cy, r) = [(50.0, 50.0, 100.0), (30.0, 30.0, 40.0), (70.0, 70.0, 20.0)][i % 3];
            [
                cx + r * (lcg(&mut seed) - 0.5),
                cy + r * (lcg(&mut seed) - 0.5),
            ]
        })
        .collect();
    let even: Vec<[f32; 2]> = (0..n)
        .map(|i| {
            [
                0.3125 + 1.25 * (i % 80) as f32,
                0.3125 + 1.25 * (i / 80) as f32,
            ]
        })
        .collect();
    // Each agent's own heading (within ±60° of the flock's) and speed (1..3), drawn once.
    let kept: Vec<(f32, f32)> = (0..n)
        .map(|_| ((lcg(&mut seed) - 0.5) * 120.0, 1.0 + 2.0 * lcg(&mut seed)))
        .collect();
    let flock = |places: &[[f32; 2]],
                 redraw_turn: bool,
                 redraw_speed: bool,
                 spread_speed: bool,
                 seed: &mut u64| {
        (0..20)
            .map(|_| {
                (0..n)
                    .map(|i| {
                        let turn = if redraw_turn {
                            (lcg(seed) - 0.5) * 120.0
                        } else {
                            kept[i].0
                        };
                        let speed = match (spread_speed, redraw_speed) {
                            (false, _) => 2.0,
                            (true, false) => kept[i].1,
                            (true, true) => 1.0 + 2.0 * lcg(seed),
                        };
                        let t = turn.to_radians();
                        (places[i], [speed * t.cos(), speed * t.sin()])
                    })
                    .collect()
            })
            .collect::<Vec<Vec<_>>>()
    };
    let wrap = forge::scene::Boundary::Wrap;
    let cases = [
        // (file, where, turn redrawn, speed redrawn, speeds spread, the colour chosen)
        (
            "steady-turn.bfs",
            &clumped,
            false,
            false,
            false,
            "relative-heading",
        ),
        ("noisy-turn.bfs", &clumped, true, false, false, "density"),
        ("steady-speed.bfs", &clumped, true, false, true, "speed"),
        ("noisy-both.bfs", &clumped, true, true, true, "density"),
        // Evenly spread, density is flat: the choice falls back to spread, flicker and all.
        ("noisy-even.bfs", &even, true, true, true, "speed"),
    ];
    for (file, places, turn, speed, spread, want) in cases {
        let frames = flock(places, turn, speed, spread, &mut seed);
        recording_frames(d.path(), file, [100.0, 100.0], wrap, &frames);
        let look = printed_look(d.path(), file, &[]);
        assert_eq!(look["color"], want, "{file}: {look}");
    }
    // A colour the user names is kept, however noisy.
    let look = printed_look(d.path(), "noisy-turn.bfs", &["--color", "relative-heading"]);
    assert_eq!(look["color"], "relative-heading");
}

/// Bloom lifts highlights: a flock that fills its world evenly has none, and bloom would only
/// light its gaps, so the default bloom falls with the share of the world the flock covers
/// (none where it covers all of it); a sparse flock keeps full bloom, and a bloom the user
/// names is kept.
#[test]
fn the_default_bloom_falls_as_the_flock_fills_its_world() {
    let d = TempDir::new().unwrap();
    let still_agent = |p: [f32; 2]| (p, [1.0f32, 0.0]);
    // A lattice over the whole world, an agent every 2 units (a 100-unit world on 180 px:
    // 3.6 px apart, far closer than the 21 px squares the cover is counted in).
    let even: Vec<_> = (0..50 * 50)
        .map(|i| still_agent([1.0 + 2.0 * (i % 50) as f32, 1.0 + 2.0 * (i / 50) as f32]))
        .collect();
    // The same agents in one clump, a tenth of the world across.
    let clump: Vec<_> = (0..50 * 50)
        .map(|i| still_agent([45.0 + 0.2 * (i % 50) as f32, 45.0 + 0.2 * (i / 50) as f32]))
        .collect();
    let wrap = forge::scene::Boundary::Wrap;
    recording(d.path(), "even.bfs", [100.0, 100.0], wrap, &even);
    recording(d.path(), "clump.bfs", [100.0, 100.0], wrap, &clump);
    let bloom = |bfs: &str, args: &[&str]| -> f64 {
        printed_look(d.path(), bfs, args)["bloom"].as_f64().unwrap()
    };
    let (even_bloom, clump_bloom) = (bloom("even.bfs", &[]), bloom("clump.bfs", &[]));
    println!("default bloom: {even_bloom} filling the world, {clump_bloom} in a clump");
    assert!(
        even_bloom < 0.01,
        "a flock filling its world: bloom {even_bloom}"
    );
    assert!(
        (clump_bloom - 0.5).abs() < 1e-6,
        "a clump: bloom {clump_bloom}"
    );
    assert_eq!(bloom("even.bfs", &["--bloom", "0.8"]), 0.8);
    // Ink has no bloom, whatever the cover.
    assert_eq!(bloom("clump.bfs", &["--style", "ink"]), 0.0);
}
