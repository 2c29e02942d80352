//! The renderer's two ways to the same pixels: on a software adapter the CPU draws the looks it
//! can (src/render/soft), elsewhere the GPU passes draw them (`FORGE_RENDERER=gpu` forces them,
//! `cpu` the CPU). Through the real binary on the real software driver: every look the CPU
//! draws, as 8-bit and 16-bit images, linear light and lossless video, within one code value
//! of the GPU's (an 8-bit code for 16-bit images; the half-float display image's precision for
//! linear light), and each way the same bytes run after run. `FORGE_RENDERER` with a value it
//! does not know is refused, naming it.

use std::fs;
use std::path::Path;

use crate::common::*;

/// The golden images' recording: `n` agents on a spiral in a 320x180 wrapping world, their
/// speeds and headings varied.
fn spiral(dir: &Path, name: &str, n: usize, frames: usize) {
    crate::render::synthetic(&dir.join(name), n, frames);
}

/// `args` rendered by way `way` (`FORGE_RENDERER`) into `out` in `dir`; its report says the
/// CPU drew every frame (`cpu`) or none (`gpu`).
fn by(dir: &Path, way: &str, out: &str, args: &[&str]) {
    let mut a = args.to_vec();
    a.extend_from_slice(&["-o", out]);
    let r = succeeds_env(dir, &a, &[("FORGE_RENDERER", way)]);
    let cpu = r.stderr.contains("drawn on the CPU)");
    assert_eq!(cpu, way == "cpu", "{way}, {args:?}: {}", r.stderr);
}

/// The largest difference between two 16-bit RGBA PNGs, in 8-bit code values.
fn max_difference16(a: &Path, b: &Path) -> f64 {
    let read = |p: &Path| {
        let img = image::open(p).unwrap();
        assert_eq!(img.color(), image::ColorType::Rgba16, "{}", p.display());
        img.to_rgba16().into_raw()
    };
    let (x, y) = (read(a), read(b));
    assert_eq!(x.len(), y.len());
    x.iter()
        .zip(&y)
        .map(|(p, q)| p.abs_diff(*q) as f64 / 257.0)
        .fold(0.0, f64::max)
}

#[test]
fn the_cpu_draws_the_gpus_pixels() {
    if !have_gpu("the_cpu_draws_the_gpus_pixels") {
        return;
    }
    let d = tmp();
    spiral(d.path(), "s.bfs", 1500, 6);
    let base = ["still", "s.bfs", "--frame", "5", "--point-size", "6"];
    let looks: &[&[&str]] = &[
        &[],
        &["--color", "heading", "--trails", "0.8", "--bloom", "0.6"],
        &["--color", "relative-heading", "--stacking", "0.8"],
        &[
            "--color",
            "fixed:#ffaa33",
            "--fit",
            "cover",
            "--background",
            "#203040",
        ],
        &[
            "--style",
            "ink",
            "--background",
            "#e8e0d0",
            "--trails",
            "0.5",
        ],
        &[
            "--saturation",
            "0.5",
            "--contrast",
            "1.2",
            "--vignette",
            "0.8",
            "--bloom",
            "1",
        ],
        &["--fit", "tile", "--zoom", "0.5"],
        &["--size", "1280x720", "--bloom", "0.5"],
        &["--overlay", "colorbar,time"],
    ];
    for (k, look) in looks.iter().enumerate() {
        let mut args = base.to_vec();
        if !look.contains(&"--size") {
            args.extend_from_slice(&["--size", "320x180"]);
        }
        args.extend_from_slice(look);
        let (g, c) = (format!("g{k}.png"), format!("c{k}.png"));
        by(d.path(), "gpu", &g, &args);
        by(d.path(), "cpu", &c, &args);
        let (worst, differ) = max_difference(&d.path().join(&g), &d.path().join(&c));
        assert!(
            worst <= 1,
            "{look:?}: the CPU's still differs from the GPU's by {worst} codes ({differ} samples)"
        );
        // The same bytes again.
        let again = format!("c{k}b.png");
        by(d.path(), "cpu", &again, &args);
        assert_eq!(
            fs::read(d.path().join(&c)).unwrap(),
            fs::read(d.path().join(&again)).unwrap(),
            "{look:?}: two CPU stills differ"
        );
    }
    // A crowd the CPU splats and filters (cheaper than stamping 20 000 sprites at 320x180),
    // against the GPU's 64-bit sums.
    spiral(d.path(), "dense.bfs", 20_000, 2);
    let dense = [
        "still",
        "dense.bfs",
        "--frame",
        "1",
        "--size",
        "320x180",
        "--point-size",
        "6",
        "--trails",
        "0",
    ];
    by(d.path(), "gpu", "gd.png", &dense);
    by(d.path(), "cpu", "cd.png", &dense);
    let (worst, differ) = max_difference(&d.path().join("gd.png"), &d.path().join("cd.png"));
    assert!(worst <= 1, "a crowd: {worst} codes ({differ} samples)");
    // 16 bits a channel: within one 8-bit code.
    let mut args = base.to_vec();
    args.extend_from_slice(&["--size", "320x180", "--format", "png16", "--bloom", "0.5"]);
    by(d.path(), "gpu", "g16.png", &args);
    by(d.path(), "cpu", "c16.png", &args);
    let worst = max_difference16(&d.path().join("g16.png"), &d.path().join("c16.png"));
    assert!(worst <= 1.0, "16-bit: {worst:.2} codes");
    // Linear light: the half-float display image's precision, relative.
    let mut args = base.to_vec();
    args.extend_from_slice(&["--size", "320x180"]);
    by(d.path(), "gpu", "g.exr", &args);
    by(d.path(), "cpu", "c.exr", &args);
    let (_, _, a) = exr_light(&d.path().join("g.exr"));
    let (_, _, b) = exr_light(&d.path().join("c.exr"));
    let worst = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs() / x.abs().max(y.abs()).max(1e-3))
        .fold(0.0, f64::max);
    assert!(
        worst < 0.01,
        "linear light differs by {:.2}%",
        worst * 100.0
    );
}

#[test]
fn the_cpus_video_is_the_gpus_within_a_code() {
    if !have_gpu("the_cpus_video_is_the_gpus") || !have_ffmpeg("the_cpus_video_is_the_gpus") {
        return;
    }
    let d = tmp();
    spiral(d.path(), "s.bfs", 1500, 6);
    let args = [
        "render", "s.bfs", "--size", "320x180", "--crf", "0", "--trails", "0.7", "--bloom", "0.5",
    ];
    by(d.path(), "gpu", "g.mp4", &args);
    by(d.path(), "cpu", "c.mp4", &args);
    let g = decode_yuv420(&d.path().join("g.mp4"), 320, 180);
    let c = decode_yuv420(&d.path().join("c.mp4"), 320, 180);
    assert_eq!(g.len(), 6);
    assert_eq!(g.len(), c.len());
    for (k, (a, b)) in g.iter().zip(&c).enumerate() {
        let worst = a
            .iter()
            .zip(b)
            .map(|(x, y)| x.abs_diff(*y))
            .max()
            .unwrap_or(0);
        assert!(worst <= 1, "frame {k}: the CPU's codes differ by {worst}");
    }
}

#[test]
fn an_unknown_renderer_is_refused_naming_the_variable() {
    if !have_gpu("an_unknown_renderer_is_refused") {
        return;
    }
    let d = tmp();
    spiral(d.path(), "s.bfs", 10, 1);
    let err = fails_env(
        d.path(),
        &["still", "s.bfs", "-o", "x.png"],
        &[("FORGE_RENDERER", "fastest")],
    );
    has(&err, "FORGE_RENDERER");
    has(&err, "auto, gpu, cpu or sprites");
    no_output(d.path(), "x.png");
}
