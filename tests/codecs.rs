//! `--codec` (h264, h265, av1, prores) and `forge still --format` (png, png16, exr), through
//! the real binary, FFmpeg and ffprobe: codec, pixel format, bit depth, colour tags and
//! container of each; the raw frames forge feeds FFmpeg at each depth; what this FFmpeg lacks
//! named in the error.

use crate::common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::*;

/// A small recording: 600 agents over 12 frames, so the trails, bloom and vignette show.
fn recording(dir: &Path) {
    succeeds(
        dir,
        &[
            "simulate",
            "murmuration",
            "--agents",
            "600",
            "--steps",
            "11",
            "-o",
            "m.bfs",
            "-q",
        ],
    );
}

fn probe(path: &Path) -> serde_json::Value {
    let out = std::process::Command::new("ffprobe")
        .args(["-v", "error", "-count_frames", "-select_streams", "v:0"])
        .args([
            "-show_entries",
            "stream=codec_name,codec_tag_string,profile,pix_fmt,bits_per_raw_sample,width,height,\
             nb_read_frames,color_space,color_primaries,color_transfer,color_range:format=format_name",
        ])
        .args(["-of", "json"])
        .arg(path)
        .output()
        .expect("ffprobe runs");
    assert!(out.status.success(), "ffprobe {}", path.display());
    serde_json::from_slice(&out.stdout).unwrap()
}

fn text(v: &serde_json::Value) -> String {
    v.as_str()
        .map(str::to_string)
        .unwrap_or_else(|| v.to_string())
}

#[test]
fn each_codec_writes_its_format_with_bt709_tags() {
    if !have_gpu("each_codec") || !have_ffmpeg("each_codec") {
        return;
    }
    let d = tmp();
    recording(d.path());
    succeeds(
        d.path(),
        &["render", "m.bfs", "--size", "320x180", "--png", "png", "-q"],
    );
    // codec flag, output, ffprobe's codec, tag, profile, pixel format, container.
    let cases = [
        ("h264", "h264.mp4", "h264", "avc1", "High", "yuv420p", "mp4"),
        (
            "h265",
            "h265.mp4",
            "hevc",
            "hvc1",
            "Main 10",
            "yuv420p10le",
            "mp4",
        ),
        (
            "av1",
            "av1.mp4",
            "av1",
            "av01",
            "Main",
            "yuv420p10le",
            "mp4",
        ),
        (
            "prores",
            "prores.mov",
            "prores",
            "apch",
            "HQ",
            "yuv422p10le",
            "mov",
        ),
    ];
    for (codec, out, name, tag, profile, pix, container) in cases {
        succeeds(
            d.path(),
            &[
                "render", "m.bfs", "--size", "320x180", "--codec", codec, "-o", out, "-q",
            ],
        );
        let p = probe(&d.path().join(out));
        let s = &p["streams"][0];
        assert_eq!(text(&s["codec_name"]), name, "{codec}: {s}");
        assert_eq!(text(&s["codec_tag_string"]), tag, "{codec}: {s}");
        assert_eq!(text(&s["profile"]), profile, "{codec}: {s}");
        assert_eq!(text(&s["pix_fmt"]), pix, "{codec}: {s}");
        assert_eq!(text(&s["nb_read_frames"]), "12", "{codec}: {s}");
        for (k, v) in [
            ("color_space", "bt709"),
            ("color_primaries", "bt709"),
            ("color_transfer", "bt709"),
            ("color_range", "tv"),
        ] {
            assert_eq!(text(&s[k]), v, "{codec} {k}: {s}");
        }
        assert!(
            text(&p["format"]["format_name"]).contains(container),
            "{codec}: {p}"
        );
        // The planes are where FFmpeg reads them: the decoded frames match the PNG render
        // (chroma subsampling and compression cost a few dB; misplaced planes cost ~25).
        let db = video_psnr_vs_png(&d.path().join(out), &d.path().join("png"), 0);
        assert!(db >= 32.0, "{codec}: {db:.1} dB against the PNG frames");
    }
    // With no -o, a ProRes render is named .mov.
    succeeds(
        d.path(),
        &[
            "render", "m.bfs", "--size", "160x90", "--codec", "prores", "-q",
        ],
    );
    assert!(d.path().join("m.mov").is_file(), "{:?}", listing(d.path()));
}

/// A stand-in for FFmpeg that keeps a copy of the raw frames forge feeds it (then runs the
/// real one) and, with `HIDE` set, leaves that encoder out of `ffmpeg -encoders`.
fn spy(dir: &Path) -> PathBuf {
    let p = dir.join("spy-ffmpeg");
    fs::write(
        &p,
        "#!/bin/sh\n\
         for a in \"$@\"; do\n\
           if [ \"$a\" = -encoders ] && [ -n \"$HIDE\" ]; then ffmpeg \"$@\" | grep -v \" $HIDE \"; exit 0; fi\n\
         done\n\
         tee -a \"$RAW\" | ffmpeg \"$@\"\n",
    )
    .unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
    p
}

#[test]
fn ten_bit_frames_carry_ten_bits() {
    if !have_gpu("ten_bit_frames") || !have_ffmpeg("ten_bit_frames") {
        return;
    }
    let d = tmp();
    recording(d.path());
    let spy = spy(d.path());
    let spy = spy.to_str().unwrap();
    let (w, h) = (320usize, 180usize);
    let raw = |codec: &str, out: &str| -> Vec<u8> {
        let raw = d.path().join(format!("{codec}.raw"));
        succeeds_env(
            d.path(),
            &[
                "render", "m.bfs", "--size", "320x180", "--codec", codec, "-o", out, "-q",
            ],
            &[("FORGE_FFMPEG", spy), ("RAW", raw.to_str().unwrap())],
        );
        fs::read(raw).unwrap()
    };
    let eight = raw("h264", "a.mp4");
    let ten = raw("h265", "b.mp4");
    let pro = raw("prores", "c.mov");
    let frames = 12;
    assert_eq!(eight.len(), frames * (w * h + 2 * (w / 2) * (h / 2)));
    assert_eq!(ten.len(), frames * 2 * (w * h + 2 * (w / 2) * (h / 2)));
    assert_eq!(pro.len(), frames * 2 * (w * h + 2 * (w / 2) * h));
    // The last frame's luma plane.
    let luma8: Vec<f64> = eight[(frames - 1) * eight.len() / frames..][..w * h]
        .iter()
        .map(|&b| b as f64)
        .collect();
    let frame10 = &ten[(frames - 1) * ten.len() / frames..];
    let luma10: Vec<u16> = frame10[..2 * w * h]
        .chunks_exact(2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .collect();
    // Limited range at 10 bits: 64..=940 (the 8-bit 16..=235, times 4), with dither's ±1.
    let (lo, hi) = (*luma10.iter().min().unwrap(), *luma10.iter().max().unwrap());
    assert!(lo >= 63 && hi <= 941, "10-bit luma {lo}..{hi}");
    // The same picture as the 8-bit frame, at four times the resolution of code values...
    let mad: f64 = luma10
        .iter()
        .zip(&luma8)
        .map(|(&a, &b)| (a as f64 / 4.0 - b).abs())
        .sum::<f64>()
        / (w * h) as f64;
    assert!(mad < 0.75, "10-bit luma / 4 vs 8-bit: mean |diff| {mad:.3}");
    // ...and not an 8-bit picture shifted up: most codes are not multiples of 4.
    let off = luma10.iter().filter(|&&v| v % 4 != 0).count() as f64 / (w * h) as f64;
    assert!(
        off > 0.5,
        "only {:.0}% of 10-bit codes off the 8-bit grid",
        off * 100.0
    );
    // 4:2:2 (ProRes): full-height chroma planes, the same luma as 4:2:0.
    let frame_pro = &pro[(frames - 1) * pro.len() / frames..];
    assert_eq!(&frame_pro[..2 * w * h], &frame10[..2 * w * h]);
}

#[test]
fn what_this_ffmpeg_lacks_is_named() {
    if !have_ffmpeg("what_this_ffmpeg_lacks") {
        return;
    }
    let d = tmp();
    let spy = spy(d.path());
    let spy = spy.to_str().unwrap();
    write(d.path(), "x.bfs", "not used: the codec is checked first");
    let raw = d.path().join("x.raw");
    let env = [
        ("FORGE_FFMPEG", spy),
        ("RAW", raw.to_str().unwrap()),
        ("HIDE", "libx265"),
    ];
    let err = fails_env(d.path(), &["render", "x.bfs", "--codec", "h265"], &env);
    has(&err, "--codec h265");
    has(&err, "libx265");
    let err = fails_env(d.path(), &["render", "x.bfs", "--encoder", "libx265"], &env);
    has(&err, "--encoder libx265");
    // An FFmpeg that hangs instead of answering is stopped and named.
    let hangs = d.path().join("hangs.sh");
    fs::write(
        &hangs,
        "#!/bin/sh\nif [ \"$1\" = -version ]; then echo 'ffmpeg version 6.0'; exit 0; fi\nexec sleep 100\n",
    )
    .unwrap();
    fs::set_permissions(&hangs, fs::Permissions::from_mode(0o755)).unwrap();
    let t0 = std::time::Instant::now();
    let err = fails_env(
        d.path(),
        &["render", "x.bfs"],
        &[
            ("FORGE_FFMPEG", hangs.to_str().unwrap()),
            ("FORGE_ENCODER_TIMEOUT", "1"),
        ],
    );
    has(&err, "did not answer `ffmpeg -encoders` within 1 s");
    assert!(t0.elapsed().as_secs() < 20);
    // Flags that do not fit the codec, before any work.
    for (args, want) in [
        (&["--codec", "prores", "-o", "x.mp4"][..], ".mov"),
        (&["--codec", "prores", "--crf", "10"][..], "--crf"),
        (&["--codec", "av1", "--preset", "medium"][..], "--preset"),
        (&["--codec", "h264", "--crf", "60"][..], "--crf"),
        (
            &["--codec", "h265", "--encoder", "libx264"][..],
            "--encoder libx264 writes h264",
        ),
        (&["--codec", "h264", "--png", "frames"][..], "--codec"),
    ] {
        let mut a = vec!["render", "x.bfs"];
        a.extend_from_slice(args);
        let err = fails(d.path(), &a);
        has(&err, want);
    }
    assert!(!d.path().join("x.mp4").exists() && !d.path().join("frames").exists());
}

/// Reads a PNG (8 or 16 bits) as RGBA values scaled to 0..255.
fn png_rgba(path: &Path) -> (u32, u32, Vec<f64>) {
    let img = image::open(path).unwrap();
    let (w, h) = (img.width(), img.height());
    let v = img
        .to_rgba16()
        .into_raw()
        .into_iter()
        .map(|c| c as f64 / 257.0)
        .collect();
    (w, h, v)
}

#[test]
fn stills_in_sixteen_bits_and_linear_light() {
    if !have_gpu("stills_in_sixteen_bits") {
        return;
    }
    let d = tmp();
    recording(d.path());
    let still = |args: &[&str]| {
        // The background and vignette set, for the tone curve done by hand below.
        let mut a = vec![
            "still",
            "m.bfs",
            "--frame",
            "11",
            "--size",
            "320x180",
            "-q",
            "--background",
            "#102030",
            "--vignette",
            "0.25",
            // Light on a dark background (the scene's own look is ink), bright enough that
            // some of it is above 1.
            "--style",
            "glow",
            "--color",
            "speed",
            "--exposure",
            "3",
        ];
        a.extend_from_slice(args);
        succeeds(d.path(), &a);
    };
    still(&["-o", "a.png"]);
    still(&["-o", "b.png", "--format", "png16"]);
    still(&["-o", "c.exr"]);
    let a = image::open(d.path().join("a.png")).unwrap();
    let b = image::open(d.path().join("b.png")).unwrap();
    assert_eq!(a.color(), image::ColorType::Rgba8);
    assert_eq!(b.color(), image::ColorType::Rgba16);
    // The same picture: within the 8-bit dither (±1) and the half-float display image.
    let (_, _, pa) = png_rgba(&d.path().join("a.png"));
    let (_, _, pb) = png_rgba(&d.path().join("b.png"));
    let max = pa
        .iter()
        .zip(&pb)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max);
    assert!(max < 1.6, "8-bit vs 16-bit still: max |diff| {max:.2}");
    // 16 bits carry more than 8: most values fall between the 8-bit codes.
    let between = pb.iter().filter(|v| (*v - v.round()).abs() > 0.1).count();
    assert!(between * 2 > pb.len() / 2, "{between} of {}", pb.len());
    // EXR: linear light, float, unclipped. Tone mapping it the way the shader does gives
    // the PNG back (sRGB of the tone curve screened over the background, times the vignette).
    let e = image::open(d.path().join("c.exr")).unwrap();
    assert_eq!(e.color(), image::ColorType::Rgba32F);
    let ev = e.to_rgba32f().into_raw();
    let brightest = ev.iter().cloned().fold(0.0f32, f32::max);
    assert!(
        brightest > 1.0,
        "linear light is not clipped: max {brightest}"
    );
    assert!(ev.iter().all(|v| v.is_finite() && *v >= 0.0));
    let (w, h) = (320usize, 180usize);
    let srgb_to_linear = |c: f64| {
        if c <= 0.04045 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    let encode = |c: f64| {
        if c <= 0.0031308 {
            c * 12.92
        } else {
            1.055 * c.powf(1.0 / 2.4) - 0.055
        }
    };
    let aces = |x: f64| ((x * (2.51 * x + 0.03)) / (x * (2.43 * x + 0.59) + 0.14)).clamp(0.0, 1.0);
    // The tone curve on the brightest channel, the others in proportion, 15% of the
    // per-channel curve mixed in (`tone` in shaders/tonemap.wgsl).
    let tone = |x: [f64; 3]| -> [f64; 3] {
        let m = x[0].max(x[1]).max(x[2]).max(1e-6);
        let k = aces(m) / m;
        x.map(|c| c * k * 0.85 + aces(c) * 0.15)
    };
    let bg = [0x10, 0x20, 0x30].map(|c| srgb_to_linear(c as f64 / 255.0));
    let mut worst = 0f64;
    for y in 0..h {
        for x in 0..w {
            // The vignette, as in shaders/tonemap.wgsl.
            let u = ((x as f64 + 0.5) / w as f64 - 0.5) * (w as f64 / h as f64);
            let v = (y as f64 + 0.5) / h as f64 - 0.5;
            let t = (((u * u + v * v).sqrt() * 1.2 - 0.35) / 0.75).clamp(0.0, 1.0);
            let vig = 1.0 - 0.25 * t * t * (3.0 - 2.0 * t);
            let at = (y * w + x) * 4;
            let light: [f64; 3] = std::array::from_fn(|c| ev[at + c] as f64 / vig - bg[c]);
            let toned = tone(light);
            for c in 0..3 {
                let shown = (bg[c] + (1.0 - bg[c]) * toned[c]) * vig;
                let code = encode(shown.clamp(0.0, 1.0)) * 255.0;
                worst = worst.max((code - pa[at + c]).abs());
            }
        }
    }
    assert!(
        worst < 2.5,
        "the EXR tone-mapped by hand vs the PNG: max |diff| {worst:.2} codes"
    );
    let err = fails(
        d.path(),
        &["still", "m.bfs", "-o", "d.exr", "--format", "png16"],
    );
    has(&err, "--format png16");
}
