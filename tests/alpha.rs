//! For compositing: `--alpha` (the light over nothing, PNG and EXR stills, PNG frames, ProRes
//! 4444 video) and `--background-image` (a picture under the agents), through the real binary,
//! lavapipe and FFmpeg. Composites are made here in linear light, as a compositor does, and
//! compared with forge's own opaque render over the same background.

use std::path::Path;

use crate::common::*;

/// A small flock with room around its agents (glow by default).
const SCENE: &str = r#"{"preset": "boidforge", "agents": 1500, "steps": 20, "seed": 9}"#;

fn recording(dir: &Path) {
    write(dir, "s.json", SCENE);
    succeeds(dir, &["simulate", "s.json", "-o", "s.bfs", "-q"]);
}

/// `forge still s.bfs --frame 15 --size 320x180 --vignette 0 --format png16` with `flags`, as
/// RGBA samples in 0..1.
fn still(dir: &Path, flags: &[&str], out: &str) -> Vec<[f64; 4]> {
    let mut args = vec![
        "still",
        "s.bfs",
        "--frame",
        "15",
        "--size",
        "320x180",
        "--vignette",
        "0",
        "--format",
        "png16",
        "-o",
        out,
        "--force",
        "-q",
    ];
    args.extend_from_slice(flags);
    succeeds(dir, &args);
    rgba(&dir.join(out))
}

/// A PNG's pixels as RGBA in 0..1 (8 or 16 bits, RGB or RGBA).
fn rgba(path: &Path) -> Vec<[f64; 4]> {
    let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let mut r = png::Decoder::new(file).read_info().unwrap();
    let mut buf = vec![0; r.output_buffer_size().unwrap()];
    let info = r.next_frame(&mut buf).unwrap();
    let (wide, channels) = (
        info.bit_depth == png::BitDepth::Sixteen,
        info.color_type.samples(),
    );
    let samples: Vec<f64> = if wide {
        buf[..info.buffer_size()]
            .chunks_exact(2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]) as f64 / 65535.0)
            .collect()
    } else {
        buf[..info.buffer_size()]
            .iter()
            .map(|&b| b as f64 / 255.0)
            .collect()
    };
    samples
        .chunks_exact(channels)
        .map(|p| [p[0], p[1], p[2], if channels == 4 { p[3] } else { 1.0 }])
        .collect()
}

fn decode(c: f64) -> f64 {
    if c <= 0.04045 {
        c / 12.92
    } else {
        ((c + 0.055) / 1.055).powf(2.4)
    }
}

fn encode(c: f64) -> f64 {
    if c <= 0.003_130_8 {
        c * 12.92
    } else {
        1.055 * c.powf(1.0 / 2.4) - 0.055
    }
}

/// `#rrggbb` as sRGB in 0..1.
fn hex(h: &str) -> [f64; 3] {
    std::array::from_fn(|k| {
        u8::from_str_radix(&h[1 + 2 * k..3 + 2 * k], 16).unwrap() as f64 / 255.0
    })
}

/// The largest difference, in 8-bit code values, between `composite(pixel)` (an sRGB colour)
/// and the opaque render.
fn worst(
    alpha: &[[f64; 4]],
    opaque: &[[f64; 4]],
    composite: impl Fn(&[f64; 4]) -> [f64; 3],
) -> f64 {
    alpha
        .iter()
        .zip(opaque)
        .flat_map(|(a, o)| {
            let c = composite(a);
            (0..3).map(move |k| (c[k] - o[k]).abs() * 255.0)
        })
        .fold(0.0, f64::max)
}

/// The alpha is the light's coverage, neither blank nor opaque.
fn covers_some(alpha: &[[f64; 4]]) {
    let n = alpha.len() as f64;
    // Bloom and trails leave a faint glow almost everywhere.
    let clear = alpha.iter().filter(|p| p[3] < 0.02).count() as f64 / n;
    let solid = alpha.iter().filter(|p| p[3] > 0.5).count() as f64 / n;
    assert!(
        clear > 0.2 && solid > 0.001,
        "{:.1}% clear (alpha < 0.02), {:.2}% above half",
        clear * 100.0,
        solid * 100.0
    );
}

#[test]
fn an_alpha_still_composites_as_the_opaque_render() {
    if !have_gpu("an_alpha_still_composites_as_the_opaque_render") {
        return;
    }
    let d = tmp();
    recording(d.path());
    // Glow: its light, premultiplied, screened over a plate is forge's own blend; over black
    // the alpha's "over" is too.
    let glow = still(d.path(), &["--alpha"], "glow.png");
    covers_some(&glow);
    for bg in ["#05050a", "#4a6890", "#d0c8b0"] {
        let opaque = still(d.path(), &["--background", bg], "opaque.png");
        let b = hex(bg).map(decode);
        let screen = worst(&glow, &opaque, |p| {
            std::array::from_fn(|k| {
                let t = decode(p[k]) * p[3];
                encode(t + (1.0 - t) * b[k])
            })
        });
        assert!(
            screen <= 2.0,
            "glow screened over {bg}: {screen:.2} codes off"
        );
    }
    let black = still(d.path(), &["--background", "#000000"], "black.png");
    let over = worst(&glow, &black, |p| {
        std::array::from_fn(|k| encode(decode(p[k]) * p[3]))
    });
    assert!(over <= 2.0, "glow over black: {over:.2} codes off");
    // Ink: its colour at its opacity, over any plate.
    let ink = ["--style", "ink", "--color", "fixed:#402818"];
    let inked = still(d.path(), &[&ink[..], &["--alpha"]].concat(), "ink.png");
    covers_some(&inked);
    for bg in ["#c8d0e0", "#e0c090"] {
        let opaque = still(
            d.path(),
            &[&ink[..], &["--background", bg]].concat(),
            "opaque.png",
        );
        let b = hex(bg).map(decode);
        let over = worst(&inked, &opaque, |p| {
            std::array::from_fn(|k| encode(decode(p[k]) * p[3] + (1.0 - p[3]) * b[k]))
        });
        assert!(over <= 2.0, "ink over {bg}: {over:.2} codes off");
    }
}

#[test]
fn an_alpha_video_is_prores_4444_and_png_frames_carry_alpha() {
    if !have_gpu("an_alpha_video_is_prores_4444_and_png_frames_carry_alpha")
        || !have_ffmpeg("an_alpha_video_is_prores_4444_and_png_frames_carry_alpha")
    {
        return;
    }
    let d = tmp();
    recording(d.path());
    let size = ["--size", "320x180", "-q"];
    // ProRes 4444 by default, named .mov.
    succeeds(
        d.path(),
        &[&["render", "s.bfs", "--alpha"][..], &size].concat(),
    );
    let probe = std::process::Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-show_entries",
            "stream=codec_name,profile,pix_fmt,color_space",
            "-of",
            "compact",
            "s.mov",
        ])
        .current_dir(d.path())
        .output()
        .expect("ffprobe runs");
    let text = String::from_utf8_lossy(&probe.stdout);
    for want in [
        "codec_name=prores",
        "profile=4444",
        "pix_fmt=yuva444p",
        "color_space=bt709",
    ] {
        has(&text, want);
    }
    // Frame 15 of the video, decoded, is the alpha still's frame 15 (within the 10-bit
    // Y'CbCr round trip).
    let still = {
        let args = [
            "still", "s.bfs", "--frame", "15", "--size", "320x180", "--alpha",
        ];
        succeeds(d.path(), &[&args[..], &["-o", "s15.png", "-q"]].concat());
        rgba(&d.path().join("s15.png"))
    };
    let out = std::process::Command::new("ffmpeg")
        .args(["-v", "error", "-i", "s.mov", "-vf", "select=eq(n\\,15)"])
        .args(["-frames:v", "1", "-pix_fmt", "rgba", "f15.png"])
        .current_dir(d.path())
        .status()
        .expect("ffmpeg runs");
    assert!(out.success());
    let frame = rgba(&d.path().join("f15.png"));
    let off = still
        .iter()
        .zip(&frame)
        .flat_map(|(a, b)| (0..4).map(move |k| (a[k] - b[k]).abs() * 255.0))
        .fold(0.0, f64::max);
    assert!(
        off <= 6.0,
        "the video's frame 15 is {off:.1} codes from the still"
    );
    covers_some(&frame);
    // A codec without alpha is refused naming the flag; so is an .mp4.
    let err = fails(
        d.path(),
        &[
            &[
                "render", "s.bfs", "--alpha", "--codec", "h264", "-o", "a.mp4",
            ][..],
            &size,
        ]
        .concat(),
    );
    has(&err, "--alpha: a video with alpha is ProRes 4444");
    no_output(d.path(), "a.mp4");
    let err = fails(
        d.path(),
        &[&["render", "s.bfs", "--alpha", "-o", "a.mp4"][..], &size].concat(),
    );
    has(&err, "-o a.mp4");
    // --alpha chose the codec, and the message says so.
    has(
        &err,
        "--alpha: a video with alpha is ProRes 4444, which is written into a .mov file",
    );
    // Alpha asked for by a look file: the message names the file's alpha and the codec flag.
    std::fs::write(d.path().join("alpha.json"), r#"{"alpha": true}"#).unwrap();
    let err = fails(
        d.path(),
        &[
            &["render", "s.bfs", "--look", "alpha.json", "-o", "b.mp4"][..],
            &size,
        ]
        .concat(),
    );
    has(
        &err,
        "alpha in --look alpha.json: a video with alpha is ProRes 4444 (--codec prores",
    );
    no_output(d.path(), "b.mp4");
    // PNG frames carry the alpha.
    succeeds(
        d.path(),
        &[
            &["render", "s.bfs", "--alpha", "--png", "frames"][..],
            &size,
        ]
        .concat(),
    );
    let first = std::fs::read_dir(d.path().join("frames"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "png"))
        .max()
        .expect("frames written");
    covers_some(&rgba(&first));
}

/// A large RGB plate is scaled in its own colours: the picture is held once at its full size
/// (decoded 192 MiB here), not again as RGBA (measured: peak 470 MB when it was, 249 MB now).
#[test]
fn a_large_plate_is_held_once() {
    if !have_gpu("a_large_plate_is_held_once") || !have_ffmpeg("a_large_plate_is_held_once") {
        return;
    }
    let d = tmp();
    recording(d.path());
    let made = std::process::Command::new("ffmpeg")
        .current_dir(d.path())
        .args(["-v", "error", "-f", "lavfi", "-i", "testsrc2=s=8192x8192"])
        .args(["-frames:v", "1", "-pix_fmt", "rgb24", "big.png"])
        .status()
        .unwrap();
    assert!(made.success());
    let args = ["still", "s.bfs", "--background-image", "big.png"];
    let m = peak_memory(
        d.path(),
        &[&args[..], &["--size", "320x180", "-o", "p.png", "-q"]].concat(),
        &[],
    );
    assert_eq!(m.run.code, Some(0), "{}", m.run.stderr);
    let decoded_mb = 8192.0 * 8192.0 * 3.0 / 1e6;
    assert!(
        m.peak_mb < decoded_mb + 150.0,
        "peak {:.0} MB with a plate of {decoded_mb:.0} MB decoded",
        m.peak_mb
    );
}

#[test]
fn a_background_image_is_drawn_under_the_agents() {
    if !have_gpu("a_background_image_is_drawn_under_the_agents") {
        return;
    }
    let d = tmp();
    recording(d.path());
    // A plate of one colour draws what that background colour draws; its size need not be
    // the frame's (it is scaled to cover it).
    let colour = [0x40u8, 0x70, 0x98, 255];
    let plate: Vec<u8> = colour.repeat(50 * 40);
    forge::video::png::write_png(&d.path().join("plate.png"), 50, 40, &plate).unwrap();
    let on_plate = still(
        d.path(),
        &["--background-image", "plate.png"],
        "plate-still.png",
    );
    let on_colour = still(d.path(), &["--background", "#407098"], "colour.png");
    let off = worst(&on_plate, &on_colour, |p| [p[0], p[1], p[2]]);
    assert!(
        off <= 1.0,
        "over the plate: {off:.2} codes from the same colour"
    );
    // A picture that varies shows through: the plate's left and right halves differ.
    let mut halves = Vec::new();
    for y in 0..40 {
        for x in 0..50 {
            halves.extend_from_slice(if x < 25 {
                &[200, 40, 40, 255]
            } else {
                &[40, 40, 200, 255]
            });
            let _ = y;
        }
    }
    forge::video::png::write_png(&d.path().join("halves.png"), 50, 40, &halves).unwrap();
    let img = still(
        d.path(),
        &["--background-image", "halves.png"],
        "halves-still.png",
    );
    let mean = |x0: usize, x1: usize, k: usize| {
        let v: Vec<f64> = (0..180)
            .flat_map(|y| (x0..x1).map(move |x| (y, x)))
            .map(|(y, x)| img[y * 320 + x][k])
            .collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    assert!(
        mean(0, 100, 0) > mean(0, 100, 2) + 0.3,
        "the left half is not red"
    );
    assert!(
        mean(220, 320, 2) > mean(220, 320, 0) + 0.3,
        "the right half is not blue"
    );
    // A picture whose header says 20000×20000 (a few hundred bytes could decode to gigabytes):
    // refused from its header.
    let mut huge = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = b"IHDR".to_vec();
    ihdr.extend(20000u32.to_be_bytes());
    ihdr.extend(20000u32.to_be_bytes());
    ihdr.extend([8, 0, 0, 0, 0]); // 8-bit greyscale
    huge.extend(13u32.to_be_bytes());
    huge.extend(&ihdr);
    huge.extend(crc32fast::hash(&ihdr).to_be_bytes());
    huge.extend(0u32.to_be_bytes());
    huge.extend(b"IEND");
    huge.extend(crc32fast::hash(b"IEND").to_be_bytes());
    std::fs::write(d.path().join("huge.png"), huge).unwrap();
    // Bad plates are refused naming the flag, before anything is written.
    for (flags, needle) in [
        (
            &["--background-image", "huge.png"][..],
            "--background-image huge.png: the picture is larger than a plate may be (at most 16384×16384",
        ),
        (
            &["--background-image", "missing.png"][..],
            "--background-image missing.png: ",
        ),
        (
            &["--background-image", "s.bfs"][..],
            "--background-image s.bfs: not a PNG image",
        ),
        (
            &["--background-image", "plate.png", "--alpha"][..],
            "--background-image and --alpha: one draws over a picture, the other over nothing",
        ),
    ] {
        let err = fails(
            d.path(),
            &[&["still", "s.bfs", "-o", "bad.png"][..], flags].concat(),
        );
        has(&err, needle);
        no_output(d.path(), "bad.png");
    }
}
