//! Beyond one machine, through the real binary: `forge render --chunk I/N` and `forge concat`.
//!
//! - PNG chunks (2D with trails and a follow camera; 3D orbiting with trails) against the whole
//!   render, frame by frame: at most 1/255 per channel (measured: identical).
//! - MP4 chunks concatenated (given out of order; one chunk by `--chunk auto` from a Slurm
//!   array's variables): the whole render's frame count, duration, timestamps k/fps, a key
//!   frame at each chunk's start; decoded, every frame equal to the whole render's at --crf 0
//!   (lossless), and within 45 dB PSNR and 1.0 mean absolute difference (0..255) of it at
//!   --crf 6 (x264 decides differently near a chunk's ends; measured 47.7 dB, 0.65; at the
//!   default --crf 18 it is about 40 dB and 1.35, at --crf 10 45.0 dB and 0.91).
//! - `concat` refuses a missing, duplicated, foreign (other recording, other settings) or
//!   damaged (cut short, not a chunk) part, naming it, and leaves nothing behind.
//! - `--chunk`: N above the frame count, bad values and `auto` outside a scheduler are clear
//!   errors before any GPU work.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::common;

use common::*;

const SIZE: &str = "160x90";

/// A small recording of a built-in scene: `agents`, `steps` steps (steps + 1 frames).
fn record(dir: &Path, scene: &str, agents: u32, steps: u32, seed: u32, out: &str) {
    succeeds(
        dir,
        &[
            "simulate",
            scene,
            "--agents",
            &agents.to_string(),
            "--steps",
            &steps.to_string(),
            "--seed",
            &seed.to_string(),
            "-o",
            out,
            "-q",
        ],
    );
}

fn args<'a>(head: &[&'a str], tail: &[&'a str]) -> Vec<&'a str> {
    head.iter().chain(tail).copied().collect()
}

/// RGBA pixels of a PNG.
fn pixels(p: &Path) -> Vec<u8> {
    image::open(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .to_rgba8()
        .into_raw()
}

/// Renders `look` whole and in `n` PNG chunks; every chunk frame against the whole's.
fn png_chunks_match(dir: &Path, file: &str, look: &[&str], n: u32) {
    let mut whole = vec!["render", file, "--png", "whole", "-q", "--size", SIZE];
    whole.extend_from_slice(look);
    succeeds(dir, &whole);
    let mut seen = 0;
    let (mut worst, mut differing) = (0u8, 0usize);
    for i in 0..n {
        let spec = format!("{i}/{n}");
        let out = format!("chunk{i}");
        let mut a = vec!["render", file, "--png", &out, "-q", "--size", SIZE];
        a.extend_from_slice(look);
        a.extend_from_slice(&["--chunk", &spec]);
        succeeds(dir, &a);
        for name in listing(&dir.join(&out)) {
            let c = pixels(&dir.join(&out).join(&name));
            let w = pixels(&dir.join("whole").join(&name));
            assert_eq!(c.len(), w.len(), "{name}");
            for (x, y) in c.iter().zip(&w) {
                let d = x.abs_diff(*y);
                worst = worst.max(d);
                differing += (d > 0) as usize;
            }
            seen += 1;
        }
    }
    assert_eq!(
        seen,
        listing(&dir.join("whole")).len(),
        "the chunks' frames are not the whole render's"
    );
    eprintln!("{file} {look:?}: {seen} frames, worst difference {worst}/255, {differing} channel values differ");
    assert!(
        worst <= 1,
        "{file} {look:?}: a chunk frame differs by {worst}/255"
    );
}

#[test]
fn png_chunks_are_the_whole_render_frames() {
    if !have_gpu("png_chunks_are_the_whole_render_frames") {
        return;
    }
    let d = tmp();
    record(d.path(), "murmuration", 300, 80, 7, "m.bfs");
    png_chunks_match(
        d.path(),
        "m.bfs",
        &["--frames", "5..80", "--trails", "0.9", "--follow"],
        3,
    );
    // A camera keyed by a look timeline (a push-in over steps 220..260 of the run, which
    // records steps 200..280 after its warm-up): every chunk draws its frames as the whole does.
    let (d, first) = (tmp(), d);
    std::fs::copy(first.path().join("m.bfs"), d.path().join("m.bfs")).unwrap();
    write(
        d.path(),
        "keys.json",
        r#"{"timeline": [{"step": 220, "set": {"zoom": 1, "exposure": 1}},
            {"step": 260, "set": {"zoom": 2.5, "exposure": 3}, "interpolation": "smooth"}]}"#,
    );
    png_chunks_match(
        d.path(),
        "m.bfs",
        &["--look", "keys.json", "--trails", "0.9"],
        3,
    );
    // Trails keyed from 0.2 to 0.95: the frames drawn before a chunk (or a still) to warm
    // its trails up fade by the keyed trails, so they reach as far back as 0.95 needs.
    let (d, first) = (tmp(), d);
    std::fs::copy(first.path().join("m.bfs"), d.path().join("m.bfs")).unwrap();
    write(
        d.path(),
        "trails.json",
        r#"{"trails": 0.2, "timeline": [{"step": 212, "set": {"trails": 0.2}},
            {"step": 226, "set": {"trails": 0.95}, "interpolation": "linear"}]}"#,
    );
    let keyed = ["--look", "trails.json"];
    png_chunks_match(d.path(), "m.bfs", &keyed, 3);
    let still = args(
        &["still", "m.bfs", "--frame", "40", "-o", "s40.png", "-q"],
        &[&keyed[..], &["--size", SIZE]].concat(),
    );
    succeeds(d.path(), &still);
    let (a, b) = (
        pixels(&d.path().join("s40.png")),
        pixels(&d.path().join("whole/frame_000040.png")),
    );
    let worst = a.iter().zip(&b).map(|(x, y)| x.abs_diff(*y)).max();
    assert!(
        worst <= Some(1),
        "still 40 against the whole render's: {worst:?}/255"
    );
    let d = tmp();
    record(d.path(), "shoal3d", 200, 50, 7, "s.bfs");
    // The scene's look: orbit, trails 0.6, fog, box.
    png_chunks_match(d.path(), "s.bfs", &[], 4);
}

/// ffprobe's JSON for `path`.
fn ffprobe(path: &Path, entries: &str) -> serde_json::Value {
    let out = Command::new("ffprobe")
        .args(["-v", "error", "-show_entries", entries, "-of", "json"])
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "ffprobe {}", path.display());
    serde_json::from_slice(&out.stdout).unwrap()
}

fn as_f64(v: &serde_json::Value) -> f64 {
    match v {
        serde_json::Value::String(s) => s.parse().unwrap(),
        v => v.as_f64().unwrap(),
    }
}

/// Per-frame (min PSNR, max mean absolute difference) between two decoded videos.
fn compare(a: &[Vec<u8>], b: &[Vec<u8>]) -> (f64, f64) {
    let (mut min_psnr, mut max_mad) = (f64::INFINITY, 0f64);
    for (x, y) in a.iter().zip(b) {
        let (mut se, mut ad) = (0f64, 0f64);
        for (p, q) in x.iter().zip(y) {
            let d = *p as f64 - *q as f64;
            se += d * d;
            ad += d.abs();
        }
        let n = x.len() as f64;
        let psnr = if se == 0.0 {
            f64::INFINITY
        } else {
            10.0 * (255.0f64 * 255.0 / (se / n)).log10()
        };
        min_psnr = min_psnr.min(psnr);
        max_mad = max_mad.max(ad / n);
    }
    (min_psnr, max_mad)
}

/// ffprobe -count_frames: frame count, rate, colour tags, duration.
fn counted(path: &Path) -> serde_json::Value {
    let entries = "stream=nb_read_frames,r_frame_rate,color_space,color_range:format=duration";
    let out = Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-count_frames",
            "-show_entries",
            entries,
            "-of",
            "json",
        ])
        .arg(path)
        .output()
        .unwrap();
    serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
}

/// Renders frames 3..75 of `m.bfs` whole and in 3 chunks at `crf`, joins the chunks into
/// `film-CRF.mp4`; checks the film's frames, timing and key frames; returns (min PSNR, max
/// mean absolute difference) of its decoded frames against the whole render's.
fn whole_and_film(dir: &Path, crf: &str) -> (f64, f64) {
    let look = ["-q", "--size", SIZE, "--crf", crf, "--frames", "3..75"];
    let whole = format!("whole-{crf}.mp4");
    let film = format!("film-{crf}.mp4");
    let part = |i: u32| format!("part-{crf}-{i}.mp4");
    succeeds(dir, &args(&["render", "m.bfs", "-o", &whole], &look));
    for i in [0, 2] {
        let spec = format!("{i}/3");
        succeeds(
            dir,
            &args(
                &["render", "m.bfs", "-o", &part(i), "--chunk", &spec],
                &look,
            ),
        );
    }
    // Chunk 1 as a Slurm array task would run it.
    succeeds_env(
        dir,
        &args(
            &["render", "m.bfs", "-o", &part(1), "--chunk", "auto"],
            &look,
        ),
        &[
            ("SLURM_ARRAY_TASK_ID", "1"),
            ("SLURM_ARRAY_TASK_MIN", "0"),
            ("SLURM_ARRAY_TASK_MAX", "2"),
        ],
    );
    // The manifest, as ffprobe reads it.
    let j = ffprobe(&dir.join(part(1)), "format_tags=forge_chunk");
    let m: serde_json::Value =
        serde_json::from_str(j["format"]["tags"]["forge_chunk"].as_str().unwrap()).unwrap();
    assert_eq!(m["chunk"], serde_json::json!([1, 3]), "{m}");
    assert_eq!(m["clip"], serde_json::json!([3, 75]), "{m}");
    assert_eq!(m["frames"], serde_json::json!([27, 51]), "{m}");
    assert_eq!(m["recording"]["frames"], 81, "{m}");
    assert_eq!(m["fps"], 30, "{m}");
    assert_eq!(m["size"], serde_json::json!([160, 90]), "{m}");
    assert_eq!(m["crf"], crf.parse::<u32>().unwrap(), "{m}");

    // Out of order on purpose: they are joined in chunk order.
    let r = succeeds(dir, &["concat", &part(2), &part(0), &part(1), "-o", &film]);
    has(&r.stderr, "72 frames");
    no_partials(dir);

    let (w, f) = (counted(&dir.join(&whole)), counted(&dir.join(&film)));
    assert_eq!(as_f64(&f["streams"][0]["nb_read_frames"]), 72.0, "{f}");
    assert_eq!(
        w["streams"][0]["nb_read_frames"],
        f["streams"][0]["nb_read_frames"]
    );
    assert_eq!(
        w["streams"][0]["r_frame_rate"],
        f["streams"][0]["r_frame_rate"]
    );
    assert_eq!(f["streams"][0]["color_space"], "bt709", "{f}");
    assert_eq!(f["streams"][0]["color_range"], "tv", "{f}");
    let (dw, df) = (
        as_f64(&w["format"]["duration"]),
        as_f64(&f["format"]["duration"]),
    );
    assert!(
        (dw - 2.4).abs() < 1e-3 && (df - dw).abs() < 1e-3,
        "{dw} {df}"
    );
    // Timestamps k/30, key frames where the chunks start (frames 0, 24, 48 of the film).
    let frames = ffprobe(&dir.join(&film), "frame=pts_time,key_frame");
    let frames = frames["frames"].as_array().unwrap();
    assert_eq!(frames.len(), 72);
    for (k, fr) in frames.iter().enumerate() {
        let t = as_f64(&fr["pts_time"]);
        assert!((t - k as f64 / 30.0).abs() < 1e-4, "frame {k} at {t}");
        if [0, 24, 48].contains(&k) {
            assert_eq!(fr["key_frame"], 1, "frame {k} should be a key frame");
        }
    }
    let (a, b) = (
        decode_yuv420(&dir.join(&whole), 160, 90),
        decode_yuv420(&dir.join(&film), 160, 90),
    );
    assert_eq!(a.len(), 72);
    assert_eq!(a.len(), b.len());
    let (psnr, mad) = compare(&a, &b);
    eprintln!(
        "--crf {crf}: film vs whole: min PSNR {psnr:.2} dB, max mean abs difference {mad:.3}"
    );
    (psnr, mad)
}

#[test]
fn mp4_chunks_concatenate_into_the_whole_render() {
    if !have_gpu("mp4_chunks_concatenate_into_the_whole_render")
        || !have_ffmpeg("mp4_chunks_concatenate_into_the_whole_render")
    {
        return;
    }
    let d = tmp();
    let dir = d.path();
    record(dir, "murmuration", 300, 80, 7, "m.bfs");
    // Lossless: the chunks' frames are the whole render's, through yuv420p and H.264.
    let (psnr, mad) = whole_and_film(dir, "0");
    assert!(psnr.is_infinite() && mad == 0.0, "{psnr} dB, {mad}");
    let (psnr, mad) = whole_and_film(dir, "6");
    assert!(
        psnr >= 45.0,
        "a frame is {psnr:.2} dB from the whole render's"
    );
    assert!(mad <= 1.0, "a frame differs by {mad:.3} on average");

    // The edge: a single chunk (0/1) is the whole clip.
    let look = ["-q", "--size", SIZE, "--frames", "3..75"];
    succeeds(
        dir,
        &args(
            &["render", "m.bfs", "-o", "one.mp4", "--chunk", "0/1"],
            &look,
        ),
    );
    succeeds(dir, &["concat", "one.mp4", "-o", "one-film.mp4", "-q"]);
    let one = counted(&dir.join("one-film.mp4"));
    assert_eq!(as_f64(&one["streams"][0]["nb_read_frames"]), 72.0);
}

#[test]
fn concat_refuses_missing_duplicated_foreign_and_damaged_parts() {
    if !have_gpu("concat_refuses_missing_duplicated_foreign_and_damaged_parts")
        || !have_ffmpeg("concat_refuses_missing_duplicated_foreign_and_damaged_parts")
    {
        return;
    }
    let d = tmp();
    let dir = d.path();
    record(dir, "murmuration", 200, 30, 7, "m.bfs");
    record(dir, "murmuration", 200, 30, 8, "other.bfs");
    let look = ["-q", "--size", SIZE];
    for i in 0..3 {
        let spec = format!("{i}/3");
        let out = format!("part-{i}.mp4");
        succeeds(
            dir,
            &args(&["render", "m.bfs", "-o", &out, "--chunk", &spec], &look),
        );
    }
    succeeds(
        dir,
        &args(
            &["render", "other.bfs", "-o", "other-1.mp4", "--chunk", "1/3"],
            &look,
        ),
    );
    succeeds(
        dir,
        &args(
            &[
                "render",
                "m.bfs",
                "-o",
                "bright-1.mp4",
                "--chunk",
                "1/3",
                "--exposure",
                "2",
            ],
            &look,
        ),
    );
    succeeds(
        dir,
        &args(
            &["render", "m.bfs", "-o", "four-1.mp4", "--chunk", "1/4"],
            &look,
        ),
    );
    succeeds(dir, &args(&["render", "m.bfs", "-o", "whole.mp4"], &look));
    let bytes = fs::read(dir.join("part-1.mp4")).unwrap();
    fs::write(dir.join("cut-1.mp4"), &bytes[..bytes.len() * 2 / 3]).unwrap();

    let out = ["-o", "film.mp4"];
    let e = fails_cleanly(
        dir,
        &args(&["concat", "part-0.mp4", "part-2.mp4"], &out),
        &["missing chunk 1/3"],
        &["film.mp4"],
    );
    has(&e, "frames 10..20");
    fails_cleanly(
        dir,
        &args(
            &[
                "concat",
                "part-0.mp4",
                "part-1.mp4",
                "part-1.mp4",
                "part-2.mp4",
            ],
            &out,
        ),
        &["chunk 1/3", "given twice", "part-1.mp4"],
        &["film.mp4"],
    );
    // A foreign part is named, whatever position it has.
    fails_cleanly(
        dir,
        &args(&["concat", "other-1.mp4", "part-0.mp4", "part-2.mp4"], &out),
        &["other-1.mp4", "another recording", "other.bfs"],
        &["film.mp4"],
    );
    fails_cleanly(
        dir,
        &args(
            &["concat", "part-0.mp4", "bright-1.mp4", "part-2.mp4"],
            &out,
        ),
        &["bright-1.mp4", "other settings"],
        &["film.mp4"],
    );
    fails_cleanly(
        dir,
        &args(&["concat", "part-0.mp4", "four-1.mp4", "part-2.mp4"], &out),
        &["four-1.mp4", "another split"],
        &["film.mp4"],
    );
    fails_cleanly(
        dir,
        &args(&["concat", "part-0.mp4", "cut-1.mp4", "part-2.mp4"], &out),
        &["cut-1.mp4", "damaged"],
        &["film.mp4"],
    );
    fails_cleanly(
        dir,
        &args(&["concat", "part-0.mp4", "whole.mp4", "part-2.mp4"], &out),
        &["whole.mp4", "not a forge chunk"],
        &["film.mp4"],
    );
    fails_cleanly(
        dir,
        &args(&["concat", "part-0.mp4", "nothere.mp4"], &out),
        &["nothere.mp4"],
        &["film.mp4"],
    );
    // The output: not over a part, not over a file without --force.
    fails_cleanly(
        dir,
        &[
            "concat",
            "part-0.mp4",
            "part-1.mp4",
            "part-2.mp4",
            "-o",
            "part-0.mp4",
            "--force",
        ],
        &["same file", "part-0.mp4"],
        &[],
    );
    fs::write(dir.join("film.mp4"), b"keep").unwrap();
    fails(
        dir,
        &args(&["concat", "part-0.mp4", "part-1.mp4", "part-2.mp4"], &out),
    );
    assert_eq!(fs::read(dir.join("film.mp4")).unwrap(), b"keep");
    succeeds(
        dir,
        &[
            "concat",
            "part-0.mp4",
            "part-1.mp4",
            "part-2.mp4",
            "-o",
            "film.mp4",
            "--force",
            "-q",
        ],
    );
    no_partials(dir);
}

#[test]
fn chunk_flag_errors_are_clear() {
    let d = tmp();
    let dir = d.path();
    record(dir, "murmuration", 50, 4, 7, "m.bfs");
    // Parsed or resolved before the GPU starts.
    for (spec, says) in [
        ("3/3", "0-based"),
        ("1/0", "at least 1"),
        ("one/3", "bad index"),
        ("2", "expected I/N"),
    ] {
        let e = fails_cleanly(
            dir,
            &["render", "m.bfs", "--chunk", spec],
            &[says],
            &["m.mp4"],
        );
        has(&e, "--chunk");
    }
    let clean = [
        ("SLURM_ARRAY_TASK_ID", ""),
        ("JOB_COMPLETION_INDEX", ""),
        ("FORGE_TASK_INDEX", ""),
        ("FORGE_TASK_COUNT", ""),
    ];
    let e = fails_cleanly_env(
        dir,
        &["render", "m.bfs", "--chunk", "auto"],
        &clean,
        &[
            "SLURM_ARRAY_TASK_ID",
            "JOB_COMPLETION_INDEX",
            "FORGE_TASK_INDEX",
        ],
        &["m.mp4"],
    );
    has(&e, "no task index");
    fails_cleanly_env(
        dir,
        &["render", "m.bfs", "--chunk", "auto"],
        &[("JOB_COMPLETION_INDEX", "2")],
        &["JOB_COMPLETION_INDEX=2", "auto/N"],
        &["m.mp4"],
    );
    if !have_ffmpeg("chunk_flag_errors_are_clear") {
        return;
    }
    // 5 frames cannot make 6 chunks.
    fails_cleanly(
        dir,
        &["render", "m.bfs", "--chunk", "0/6", "--size", SIZE],
        &["6 chunks", "5 frames", "at most 5"],
        &["m.mp4"],
    );
    fails_cleanly(
        dir,
        &[
            "render", "m.bfs", "--chunk", "0/3", "--frames", "1..3", "--size", SIZE,
        ],
        &["at most 2"],
        &["m.mp4"],
    );
}

// ---------------------------------------------------------------------------------------
// Sharded sweeps
// ---------------------------------------------------------------------------------------

/// 13 points (noise 0.5..3.5 by 0.25), which no N of 2, 3 or 7 divides.
const SWEEP: &[&str] = &[
    "sweep",
    "vicsek",
    "--vary",
    "noise=0.5:3.5:0.25",
    "--vary",
    "agents=40",
    "--seeds",
    "2",
    "--equilibrate",
    "20",
    "--measure",
    "10",
    "-q",
];

#[test]
fn sweep_shards_merge_into_the_unsharded_csv_byte_for_byte() {
    let d = tmp();
    let dir = d.path();
    succeeds(dir, &args(SWEEP, &["-o", "all.csv"]));
    let whole = fs::read(dir.join("all.csv")).unwrap();
    assert_eq!(String::from_utf8_lossy(&whole).lines().count(), 14);
    for n in [1u32, 2, 3, 7] {
        let mut parts = Vec::new();
        for i in 0..n {
            let out = format!("n{n}-{i}.csv");
            if i == 1 {
                // As a CI matrix job would run it.
                succeeds_env(
                    dir,
                    &args(SWEEP, &["-o", &out, "--shard", "auto"]),
                    &[
                        ("FORGE_TASK_INDEX", "1"),
                        ("FORGE_TASK_COUNT", &n.to_string()),
                    ],
                );
            } else {
                let spec = format!("{i}/{n}");
                succeeds(dir, &args(SWEEP, &["-o", &out, "--shard", &spec]));
            }
            let text = fs::read_to_string(dir.join(&out)).unwrap();
            assert!(text.starts_with("# forge sweep shard "), "{text}");
            parts.push(out);
        }
        parts.reverse(); // any order
        let merged = format!("merged-{n}.csv");
        let mut a: Vec<&str> = vec!["sweep", "merge"];
        a.extend(parts.iter().map(|s| s.as_str()));
        a.extend(["-o", &merged]);
        if n == 3 {
            a.extend(["--plot", "merged.png"]);
        }
        succeeds(dir, &a);
        assert_eq!(
            fs::read(dir.join(&merged)).unwrap(),
            whole,
            "{n} shards merged differ from the unsharded CSV"
        );
        no_partials(dir);
    }
    assert!(fs::metadata(dir.join("merged.png")).unwrap().len() > 1000);

    // Refusals, naming the part; nothing written.
    succeeds(
        dir,
        &[
            "sweep",
            "vicsek",
            "--vary",
            "noise=0.5:3.5:0.25",
            "--vary",
            "agents=40",
            "--seeds",
            "3",
            "--equilibrate",
            "20",
            "--measure",
            "10",
            "-q",
            "--shard",
            "1/3",
            "-o",
            "seeds3-1.csv",
        ],
    );
    let text = fs::read_to_string(dir.join("n3-1.csv")).unwrap();
    fs::write(dir.join("cut-1.csv"), &text[..text.len() - 10]).unwrap();
    let out = ["-o", "m.csv"];
    let cases: &[(&[&str], &[&str])] = &[
        (&["n3-0.csv", "n3-2.csv"], &["missing shard 1/3"]),
        (
            &["n3-0.csv", "n3-1.csv", "n3-1.csv", "n3-2.csv"],
            &["shard 1/3 is given twice", "n3-1.csv"],
        ),
        (
            &["seeds3-1.csv", "n3-0.csv", "n3-2.csv"],
            &["seeds3-1.csv", "foreign", "--seeds 3"],
        ),
        (
            &["n3-0.csv", "all.csv", "n3-2.csv"],
            &["all.csv", "not a sweep shard"],
        ),
        (
            &["n3-0.csv", "cut-1.csv", "n3-2.csv"],
            &["cut-1.csv", "damaged"],
        ),
        (
            &["n3-0.csv", "n2-1.csv", "n3-2.csv"],
            &["n2-1.csv", "foreign"],
        ),
    ];
    for (parts, says) in cases {
        let a = args(&args(&["sweep", "merge"], parts), &out);
        fails_cleanly(dir, &a, says, &["m.csv"]);
    }
    fails_cleanly(
        dir,
        &args(SWEEP, &["-o", "x.csv", "--shard", "0/14"]),
        &["14 shards", "13 points"],
        &["x.csv"],
    );
    // A shard's CSV resumes as that shard only.
    let e = fails(dir, &args(SWEEP, &["-o", "n3-1.csv", "--resume"]));
    has(&e, "shard 1/3");
    succeeds(
        dir,
        &args(SWEEP, &["-o", "n3-1.csv", "--resume", "--shard", "1/3"]),
    );
    assert_eq!(fs::read_to_string(dir.join("n3-1.csv")).unwrap(), text);
}

#[test]
fn merge_never_writes_over_a_shard() {
    let d = tmp();
    let dir = d.path();
    for i in 0..2 {
        let spec = format!("{i}/2");
        let out = format!("s-{i}.csv");
        succeeds(dir, &args(SWEEP, &["-o", &out, "--shard", &spec]));
    }
    let before = fs::read(dir.join("s-0.csv")).unwrap();
    fails_cleanly(
        dir,
        &[
            "sweep", "merge", "s-0.csv", "s-1.csv", "-o", "s-0.csv", "--force",
        ],
        &["same file", "s-0.csv"],
        &[],
    );
    assert_eq!(fs::read(dir.join("s-0.csv")).unwrap(), before);
}

/// The run cap (points x seeds, `MAX_RUNS`) counts the whole sweep, not a shard's share: every
/// shard refuses a sweep over it with the unsharded run's message (a shard of 1 point x 1000
/// seeds would be far under it), before it looks for its task index; a sweep at the cap passes
/// the cap in every shard (each then fails on its unwritable output, so nothing runs).
#[test]
fn the_run_cap_counts_the_whole_sweep_in_every_shard() {
    let d = tmp();
    let dir = d.path();
    // Runs of 2 agents and 2 steps: a shard that wrongly accepted would finish in a moment.
    let over = [
        "sweep",
        "vicsek",
        "--vary",
        "noise=0:1:0.001",
        "--vary",
        "agents=2",
        "--seeds",
        "1000",
        "--equilibrate",
        "1",
        "--measure",
        "1",
        "-o",
        "x.csv",
        "-q",
    ];
    let whole = fails_cleanly(
        dir,
        &over,
        &["1001 points x 1000 seeds = 1001000 runs"],
        &[],
    );
    for (shard, env) in [
        ("0/1001", &[][..]),
        ("1000/1001", &[][..]),
        ("3/7", &[][..]),
        ("auto", &[][..]),
        (
            "auto",
            &[
                ("SLURM_ARRAY_TASK_ID", "5"),
                ("SLURM_ARRAY_TASK_COUNT", "1001"),
            ][..],
        ),
    ] {
        let e = fails_cleanly_env(dir, &args(&over, &["--shard", shard]), env, &[], &["x.csv"]);
        assert_eq!(e, whole, "--shard {shard} {env:?}");
    }
    let at = [
        "sweep",
        "vicsek",
        "--vary",
        "noise=0:0.999:0.001",
        "--seeds",
        "1000",
        "-o",
        "no-such-folder/x.csv",
        "-q",
    ];
    for shard in [None, Some("0/1000"), Some("999/1000")] {
        let a = match shard {
            Some(s) => args(&at, &["--shard", s]),
            None => at.to_vec(),
        };
        let e = fails(dir, &a);
        assert!(!e.contains("runs, more than"), "{shard:?}: {e}");
        has(&e, "--output no-such-folder/x.csv");
    }
}
