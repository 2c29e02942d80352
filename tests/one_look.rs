//! The look belongs to the recording, not to the command: frame K of a recording is the same
//! image in `forge still --frame K`, in a whole render, in a `--frames A..B` clip (no fade
//! from black) and in every `--chunk I/N`, for every built-in scene (2D and 3D). And the
//! resolved look printed by `--print-look` and read back by `--look` gives the same bytes.

use crate::common;

use std::path::Path;

use common::*;

/// Frames compared at this size (small: lavapipe renders them in milliseconds).
const SIZE: &str = "160x90";

/// A short recording of built-in scene `name` (about 40 frames, whatever its recording
/// interval), and its frame count.
fn recording(dir: &Path, name: &str) -> u64 {
    let bfs = format!("{name}.bfs");
    let every = forge::scene::Scene::load(name).unwrap().record_every;
    let steps = (40 * every).to_string();
    succeeds(
        dir,
        &[
            "simulate", name, "--agents", "500", "--steps", &steps, "-o", &bfs, "-q", "--force",
        ],
    );
    let info = succeeds(dir, &["info", &bfs, "--json"]).stdout;
    let v: serde_json::Value = serde_json::from_str(&info).unwrap();
    v["frames"].as_u64().expect("a frame count")
}

/// Renders `extra` of recording `bfs` as PNG frames into folder `out`.
fn frames(dir: &Path, bfs: &str, out: &str, extra: &[&str]) {
    let mut a = vec!["render", bfs, "--png", out, "--size", SIZE, "-q"];
    a.extend_from_slice(extra);
    succeeds(dir, &a);
}

fn png(dir: &Path, folder: &str, k: u64) -> std::path::PathBuf {
    dir.join(folder).join(format!("frame_{k:06}.png"))
}

/// Two renders of frame K: at most one code value apart.
fn same_frame(what: &str, a: &Path, b: &Path) {
    let (worst, differ) = max_difference(a, b);
    assert!(
        worst <= 1,
        "{what}: {} and {} differ by up to {worst} code values ({differ} samples)",
        a.display(),
        b.display()
    );
}

#[test]
fn frame_k_is_the_same_image_however_it_is_rendered() {
    if !have_gpu("frame_k_is_the_same_image_however_it_is_rendered") {
        return;
    }
    let d = tmp();
    let p = d.path();
    let scenes = succeeds(p, &["scenes"]).stdout;
    let names: Vec<&str> = scenes
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(names.len() >= 9, "{scenes}");
    for name in names {
        let count = recording(p, name);
        assert!(count >= 20, "{name}: {count} frames");
        let bfs = format!("{name}.bfs");
        let whole = format!("{name}-whole");
        frames(p, &bfs, &whole, &[]);
        // A clip that starts well inside the recording, and the frame compared within it.
        let (a, b) = (count / 2, count - 2);
        let k = a + 3;
        let clip = format!("{name}-clip");
        frames(p, &bfs, &clip, &["--frames", &format!("{a}..{b}")]);
        for f in a..b {
            same_frame(
                &format!("{name}: frame {f} of --frames {a}..{b}"),
                &png(p, &clip, f),
                &png(p, &whole, f),
            );
        }
        let still = p.join(format!("{name}-{k}.png"));
        let s = still.to_str().unwrap();
        succeeds(
            p,
            &[
                "still",
                &bfs,
                "--frame",
                &k.to_string(),
                "--size",
                SIZE,
                "-o",
                s,
                "-q",
            ],
        );
        same_frame(
            &format!("{name}: still --frame {k}"),
            &still,
            &png(p, &whole, k),
        );
        // Three chunks: every frame of each as in the whole render.
        for i in 0..3 {
            let part = format!("{name}-chunk{i}");
            frames(p, &bfs, &part, &["--chunk", &format!("{i}/3")]);
            let mut shown = 0;
            for f in 0..count {
                let one = png(p, &part, f);
                if one.exists() {
                    shown += 1;
                    same_frame(
                        &format!("{name}: frame {f} of --chunk {i}/3"),
                        &one,
                        &png(p, &whole, f),
                    );
                }
            }
            assert!(
                shown >= count / 3,
                "{name}: chunk {i}/3 holds {shown} frames"
            );
        }
    }
}

#[test]
fn the_printed_look_reads_back_to_the_same_bytes() {
    if !have_gpu("the_printed_look_reads_back_to_the_same_bytes") {
        return;
    }
    let d = tmp();
    let p = d.path();
    for name in ["plasma", "shoal3d"] {
        recording(p, name);
        let bfs = format!("{name}.bfs");
        let still = |extra: &[&str]| {
            let mut a = vec!["still", &bfs, "--frame", "30", "--size", SIZE, "-q"];
            a.extend_from_slice(extra);
            succeeds(p, &a).stdout
        };
        let printed = still(&["--print-look"]);
        let look: serde_json::Value = serde_json::from_str(&printed).unwrap();
        // Every setting is there, the measured ones included.
        for field in [
            "size",
            "exposure",
            "point_size",
            "trails",
            "colormap",
            "fps",
        ] {
            assert!(
                look.get(field).is_some(),
                "{name}: no {field} in\n{printed}"
            );
        }
        assert_eq!(look["size"], serde_json::json!([160, 90]));
        // The look is the recording's: a render prints the same one.
        let mut r = vec!["render", &bfs, "--size", SIZE, "--print-look"];
        assert_eq!(succeeds(p, &r).stdout, printed, "{name}: render and still");
        r.extend_from_slice(&["--frames", "10..20"]);
        assert_eq!(succeeds(p, &r).stdout, printed, "{name}: a clip's look");
        assert!(!p.join(format!("{name}.mp4")).exists());
        let file = p.join(format!("{name}-look.json"));
        std::fs::write(&file, &printed).unwrap();
        let f = file.to_str().unwrap();
        // Read back: the same look again, and the same image to the byte.
        assert_eq!(still(&["--look", f, "--print-look"]), printed, "{name}");
        still(&["-o", "measured.png", "--force"]);
        still(&["-o", "pinned.png", "--force", "--look", f]);
        assert_eq!(
            std::fs::read(p.join("measured.png")).unwrap(),
            std::fs::read(p.join("pinned.png")).unwrap(),
            "{name}: the pinned look draws another image"
        );
        // A flag still beats the file.
        let changed = still(&["--look", f, "--exposure", "0.123", "--print-look"]);
        has(&changed, "\"exposure\": 0.123,");
    }
}

#[test]
fn a_look_file_with_a_bad_field_is_refused_naming_file_and_field() {
    let d = tmp();
    let p = d.path();
    recording(p, "vicsek");
    for (text, says) in [
        (r#"{"exposure": "bright"}"#, "exposure"),
        (r#"{"sparkle": 1}"#, "sparkle"),
        (r#"{"colormap": "rainbow"}"#, "colormap"),
        (r#"{"trails": 1.5}"#, "trails: must be in [0, 1)"),
        (r#"{"camera": "orbit"}"#, "camera: applies to 3D only"),
        ("[1, 2]", "look.json"),
        ("{", "look.json"),
    ] {
        write(p, "look.json", text);
        let err = fails_cleanly(
            p,
            &["still", "vicsek.bfs", "--look", "look.json", "-o", "x.png"],
            &["--look", "look.json", says],
            &["x.png"],
        );
        no_output(p, "x.png");
        assert!(!err.contains("panicked"), "{err}");
    }
    let err = fails(
        p,
        &["still", "vicsek.bfs", "--look", "none.json", "-o", "x.png"],
    );
    has(&err, "none.json");
}

#[test]
fn a_look_files_wrong_types_are_named_in_the_users_words() {
    let d = tmp();
    let p = d.path();
    recording(p, "vicsek");
    for (text, says) in [
        (
            "{\n  \"exposure\": \"x\"\n}",
            "--look bad.look.json: exposure: invalid type: string \"x\", expected a number (line 2)",
        ),
        (r#"{"bloom": true}"#, "bloom: invalid type: boolean `true`, expected a number"),
        (r#"{"trails": [1]}"#, "trails: invalid type: sequence, expected a number"),
        (
            r#"{"fps": 1.5}"#,
            "fps: invalid type: the number `1.5`, expected a whole number, 0 or more",
        ),
        (r#"{"size": [-1, 2]}"#, "size[0]: invalid value: integer `-1`, expected a whole number, 0 or more"),
        ("{\"exposure\": 1}\n\nx", "--look bad.look.json: trailing characters (line 3)"),
    ] {
        write(p, "bad.look.json", text);
        let err = fails_cleanly(
            p,
            &["render", "vicsek.bfs", "--look", "bad.look.json", "-o", "x.mp4"],
            &[says],
            &["x.mp4"],
        );
        for rust in ["f32", "u32", "i64", "floating point", "column"] {
            assert!(!err.contains(rust), "{text}: {rust} in\n{err}");
        }
    }
}
