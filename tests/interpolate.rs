//! `--interpolate K`: frames drawn between recorded ones. The data through forge's own reader
//! and `video::interp::Frames` (exact at recorded frames, the short way across a seam), and
//! renders through the real binary (frame counts, chunks, an agent crossing the seam).

use std::fs;
use std::path::Path;

use forge::bfs;
use forge::video::interp::{Frames, Space, Timeline};

use crate::common;

use common::*;

/// One agent per row crossing the x seam of a 320x180 wrapping world, `frames` frames a
/// recorded interval apart (0.05 s), 200 units/s: 10 units a frame.
fn crossing(path: &Path, frames: u64) {
    let mut s = forge::scene::Scene::load("turbulence").unwrap();
    s.render = None;
    s.agents = 3;
    s.world = [320.0, 180.0, 0.0];
    let header = bfs::Header::for_scene(&s);
    let mut w = bfs::Writer::new(fs::File::create(path).unwrap(), &header).unwrap();
    for f in 0..frames {
        let x = (300.0 + 10.0 * f as f32).rem_euclid(320.0);
        let pos = [x, x, x, 40.0, 90.0, 140.0];
        let vel = [200.0, 200.0, 200.0, 0.0, 0.0, 0.0];
        w.write_frame(f, &pos, &vel).unwrap();
    }
    w.finalize().unwrap();
}

#[test]
fn recorded_frames_come_out_exactly_and_seams_are_crossed_the_short_way() {
    let d = tmp();
    let path = d.path().join("c.bfs");
    crossing(&path, 5);
    let reader = bfs::Reader::open(&path).unwrap();
    let space = Space {
        dim: 2,
        size: [320.0, 180.0, 0.0],
        wrap: true,
        frame_dt: 0.05,
    };
    let k = 8;
    let t = Timeline { k };
    let out = t.output(&(0..5));
    assert_eq!(out, 0..33);
    let mut frames = Frames::start(reader, t, space, out.clone()).unwrap();
    let mut again = bfs::Reader::open(&path).unwrap();
    let mut rec = bfs::Frame::empty();
    let mut n = 0;
    while let Some(f) = frames.next() {
        let f = f.unwrap();
        let (r, frac) = t.at(f.index);
        again.read_frame_into(r, &mut rec).unwrap();
        if frac == 0 {
            // Bit for bit the recorded frame.
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&f.pos), bits(&rec.pos), "output {}", f.index);
            assert_eq!(bits(&f.vel), bits(&rec.vel));
            assert_eq!(f.step, rec.step);
        } else {
            // On the way from this recorded position to the next, the short way (10 units
            // a frame, so never more than 10 from either end).
            let x = f.pos[0];
            assert!((0.0..320.0).contains(&x), "output {}: x {x}", f.index);
            let want = (rec.pos[0] + 10.0 * frac as f32 / k as f32).rem_euclid(320.0);
            let err = (x - want).abs().min(320.0 - (x - want).abs());
            assert!(err < 1e-3, "output {}: x {x}, want {want}", f.index);
        }
        frames.give_back(f);
        n += 1;
    }
    assert_eq!(n, 33);
}

/// Columns of a PNG with any light above the background (max channel > 60).
fn lit_columns(path: &Path) -> Vec<usize> {
    let img = image::open(path).unwrap().to_rgba8();
    let (w, h) = (img.width() as usize, img.height() as usize);
    let px = img.into_raw();
    (0..w)
        .filter(|&x| (0..h).any(|y| px[(y * w + x) * 4..][..3].iter().any(|&c| c > 60)))
        .collect()
}

#[test]
fn renders_between_frames_and_never_jumps_across_the_frame() {
    if !have_gpu("interpolate_render") {
        return;
    }
    let d = tmp();
    crossing(&d.path().join("c.bfs"), 5);
    let look = [
        "--size",
        "320x180",
        "--trails",
        "0",
        "--bloom",
        "0",
        "--exposure",
        "1",
        "--point-size",
        "2",
        "-q",
    ];
    let mut a = vec!["render", "c.bfs", "--png", "k1"];
    a.extend_from_slice(&look);
    succeeds(d.path(), &a);
    let mut a = vec!["render", "c.bfs", "--png", "k4", "--interpolate", "4"];
    a.extend_from_slice(&look);
    succeeds(d.path(), &a);
    let names = |dir: &str| {
        let mut v: Vec<String> = fs::read_dir(d.path().join(dir))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(names("k1").len(), 5);
    assert_eq!(names("k4").len(), 17);
    // The first frame is the same picture, byte for byte.
    assert_eq!(
        fs::read(d.path().join("k1/frame_000000.png")).unwrap(),
        fs::read(d.path().join("k4/frame_000000.png")).unwrap()
    );
    // Every frame: the agents near the seam (x 290..330 wrapped), none in the middle.
    for name in names("k4") {
        let cols = lit_columns(&d.path().join("k4").join(&name));
        assert!(!cols.is_empty(), "{name}: nothing drawn");
        assert!(
            cols.iter().all(|&x| !(40..=260).contains(&x)),
            "{name}: light in the middle of the frame (columns {cols:?})"
        );
    }
    // A video: (5 − 1) × 3 + 1 frames.
    if have_ffmpeg("interpolate_render") {
        let mut a = vec!["render", "c.bfs", "-o", "c.mp4", "--interpolate", "3"];
        a.extend_from_slice(&look);
        succeeds(d.path(), &a);
        let out = std::process::Command::new("ffprobe")
            .args(["-v", "error", "-count_frames", "-select_streams", "v:0"])
            .args(["-show_entries", "stream=nb_read_frames", "-of", "csv=p=0"])
            .arg(d.path().join("c.mp4"))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "13");
    }
    let err = fails(
        d.path(),
        &["render", "c.bfs", "--interpolate", "0", "-o", "x.mp4"],
    );
    has(&err, "--interpolate");
}

#[test]
fn chunks_split_the_interpolated_frames() {
    if !have_gpu("interpolate_chunks") {
        return;
    }
    let d = tmp();
    succeeds(
        d.path(),
        &[
            "simulate",
            "murmuration",
            "--agents",
            "500",
            "--steps",
            "6",
            "-o",
            "m.bfs",
            "-q",
        ],
    );
    let base = [
        "--size",
        "160x90",
        "--interpolate",
        "3",
        "--exposure",
        "1",
        "--point-size",
        "1.5",
        "-q",
    ];
    let mut a = vec!["render", "m.bfs", "--png", "whole"];
    a.extend_from_slice(&base);
    succeeds(d.path(), &a);
    for i in 0..2 {
        let spec = format!("{i}/2");
        let dir = format!("part{i}");
        let mut a = vec!["render", "m.bfs", "--png", &dir, "--chunk", &spec];
        a.extend_from_slice(&base);
        succeeds(d.path(), &a);
    }
    // 7 recorded frames → 19 output frames, split 10 + 9; each equal to the whole render's
    // (within the trails' warm-up residue of one code value).
    let mut seen = 0;
    for i in 0..2 {
        for e in fs::read_dir(d.path().join(format!("part{i}"))).unwrap() {
            let e = e.unwrap();
            let a = image::open(e.path()).unwrap().to_rgba8().into_raw();
            let b = image::open(d.path().join("whole").join(e.file_name()))
                .unwrap()
                .to_rgba8()
                .into_raw();
            let worst = a.iter().zip(&b).map(|(x, y)| x.abs_diff(*y)).max().unwrap();
            assert!(worst <= 1, "{:?}: off by {worst}", e.file_name());
            seen += 1;
        }
    }
    assert_eq!(seen, 19);
}
