//! `boids.flight` (StarDisplay's flight: lift, banking, thrust, gravity and a roost) through
//! the real binary: every bad value named by its JSON path, the section stored in a recording
//! only when given, the bytes the same on every thread count, search and candidate loop, a flock
//! that keeps to its roost's height and its cruise speed, and a keyed roost height that moves it.
//! The arithmetic against the CUDA kernels' is in tests/kernels_host.rs.

use std::path::Path;

use crate::common;
use common::*;

use forge::bfs::Reader;

/// A flying flock: 300 starlings in metres and seconds, `flight` the section's inside, `extra`
/// more top-level fields (with a leading comma).
fn scene(flight: &str, extra: &str) -> String {
    format!(
        r#"{{
  "name": "fly",
  "model": "boids", "dim": 3, "agents": 300, "steps": 300, "dt": 0.04, "seed": 5,
  "world": {{ "size": [300, 300, 120], "boundary": "open" }},
  "boids": {{
    "r_sep": 1.0, "r_ali": 10, "r_coh": 10, "w_sep": 20, "w_ali": 3, "w_coh": 2,
    "max_force": 12, "v_min": 5, "v_max": 18,
    "neighbours": {{"kind": "topological", "k": 7}}, "noise": 0.5,
    "flight": {{{flight}}}
  }},
  "init": {{ "layout": "disc", "center": [150, 150, 60], "radius": 8, "velocity": "aligned" }}{extra}
}}"#
    )
}

fn bad(text: &str, expect: &[&str]) {
    let d = tmp();
    write(d.path(), "s.json", text);
    let mut names = expect.to_vec();
    names.push("s.json");
    fails_cleanly(
        d.path(),
        &["simulate", "s.json", "-o", "out.bfs", "--quiet"],
        &names,
        &["out.bfs"],
    );
}

#[test]
fn bad_flight_values_name_the_field() {
    for (flight, want) in [
        (
            r#""cruise_speed": 0"#,
            "scene.boids.flight.cruise_speed: must be > 0, got 0",
        ),
        (
            r#""cruise_speed": 30"#,
            "scene.boids.flight.cruise_speed: must lie in the speed band [v_min, v_max] = [5, 18], got 30",
        ),
        (
            r#""max_bank": 90"#,
            "scene.boids.flight.max_bank: must be in (0, 90) degrees, got 90",
        ),
        (
            r#""gravity": -9.81"#,
            "scene.boids.flight.gravity: must be > 0, got -9.81",
        ),
        (
            r#""speed_time": 0"#,
            "scene.boids.flight.speed_time: must be > 0, got 0",
        ),
        (
            r#""w_roost_h": -1"#,
            "scene.boids.flight.w_roost_h: must be >= 0, got -1",
        ),
        (
            r#""roost_radius": 0"#,
            "scene.boids.flight.roost_radius: must be > 0, got 0",
        ),
        (
            r#""roost": [1, 2, 3]"#,
            "scene.boids.flight.roost: must be 2 numbers, the centre's x and y on the ground, got 3",
        ),
        (
            r#""roost_height": 1e40"#,
            "scene.boids.flight.roost_height: is too large",
        ),
        (r#""lift": 2"#, "scene.boids.flight.lift: unknown field `lift`"),
    ] {
        bad(&scene(flight, ""), &[want]);
    }
    // 2D: no up for gravity and lift.
    bad(
        r#"{"model": "boids", "boids": {"flight": {}}}"#,
        &["scene.boids.flight: flight is 3D only (gravity and lift act along z), the scene's dim is 2"],
    );
    // Species: a flock of one kind only.
    bad(
        r#"{"model": "boids", "dim": 3, "boids": {"flight": {}},
            "species": [{"name": "a", "agents": 10}, {"name": "b", "agents": 10}]}"#,
        &["scene.boids.flight: not with species"],
    );
}

#[test]
fn bad_flight_keys_name_the_key() {
    for (key, want) in [
        (
            r#"{"step": 10, "set": {"boids.flight.max_bank": 95}}"#,
            "scene.timeline[0].set[\"boids.flight.max_bank\"]: must be in (0, 90) degrees, got 95",
        ),
        (
            r#"{"step": 10, "set": {"boids.flight.wings": 2}}"#,
            "no flight parameter \"wings\" can be keyed",
        ),
    ] {
        bad(&scene("", &format!(r#", "timeline": [{key}]"#)), &[want]);
    }
    bad(
        r#"{"model": "boids", "dim": 3, "timeline": [{"step": 1, "set": {"boids.flight.gravity": 5}}]}"#,
        &["the scene's boids do not fly: it has no boids.flight"],
    );
}

/// Each frame's positions and velocities.
type Frames = Vec<(Vec<f32>, Vec<f32>)>;

fn frames(path: &Path) -> (usize, Frames) {
    let mut r = Reader::open(path).unwrap();
    let mut out = Vec::new();
    let mut n = 0;
    for f in 0..r.frame_count() {
        let fr = r.read_frame(f).unwrap();
        n = fr.agents(3);
        out.push((fr.pos, fr.vel));
    }
    (n, out)
}

/// Over the last `last` frames: the mean height, the mean speed, and the farthest the flock's
/// centre came from the point (150, 150) on the ground.
fn height_speed_reach(path: &Path, last: usize) -> (f64, f64, f64) {
    let (n, fs) = frames(path);
    let (mut z, mut s, mut count, mut reach) = (0.0, 0.0, 0.0, 0.0f64);
    for (pos, vel) in &fs[fs.len() - last..] {
        let mut c = [0.0; 2];
        for i in 0..n {
            z += pos[2 * n + i] as f64;
            let v2: f64 = (0..3).map(|k| (vel[k * n + i] as f64).powi(2)).sum();
            s += v2.sqrt();
            count += 1.0;
            for k in 0..2 {
                c[k] += pos[k * n + i] as f64 / n as f64;
            }
        }
        reach = reach.max((c[0] - 150.0).hypot(c[1] - 150.0));
    }
    (z / count, s / count, reach)
}

#[test]
fn a_flying_flock_keeps_its_roost_height_and_cruise_speed() {
    let d = tmp();
    let flight = r#""cruise_speed": 10, "roost_height": 60, "roost_radius": 40, "w_roost_v": 0.3"#;
    // Flying straight (no horizontal pull): lift carries the weight at cruise speed, and the
    // vertical pull holds the roost's height.
    write(
        d.path(),
        "straight.json",
        &scene(&format!(r#"{flight}, "w_roost_h": 0"#), "")
            .replace(r#""steps": 300"#, r#""steps": 600"#),
    );
    succeeds(
        d.path(),
        &["simulate", "straight.json", "-o", "straight.bfs", "-q"],
    );
    let (z, s, reach) = height_speed_reach(&d.path().join("straight.bfs"), 100);
    assert!(
        (z - 60.0).abs() < 4.0,
        "straight: mean height {z:.2}, the roost's 60"
    );
    assert!(
        (s - 10.0).abs() < 0.7,
        "straight: mean speed {s:.2}, cruise 10"
    );
    assert!(
        reach > 180.0,
        "straight: the flock stayed within {reach:.1} of the roost"
    );
    // Circling the roost: banked turns cost height (the lift's vertical part is g·cos β) and
    // speed, which the pulls and the thrust win back in part.
    write(
        d.path(),
        "fly.json",
        &scene(flight, "").replace(r#""steps": 300"#, r#""steps": 600"#),
    );
    succeeds(d.path(), &["simulate", "fly.json", "-o", "fly.bfs", "-q"]);
    let (z, s, reach) = height_speed_reach(&d.path().join("fly.bfs"), 300);
    assert!(
        z > 45.0 && z < 62.0,
        "circling: mean height {z:.2}, the roost's 60"
    );
    assert!(
        s > 8.0 && s < 11.0,
        "circling: mean speed {s:.2}, cruise 10"
    );
    assert!(
        reach < 130.0,
        "circling: the flock went {reach:.1} from the roost"
    );
    // Stored in the recording, with its defaults filled.
    let v: serde_json::Value =
        serde_json::from_str(&succeeds(d.path(), &["info", "fly.bfs", "--json"]).stdout).unwrap();
    let f = &v["scene_json"]["boids"]["flight"];
    assert_eq!(f["cruise_speed"], 10.0, "{f}");
    assert_eq!(f["max_bank"], 60.0, "{f}");
    assert_eq!(f["roost"], serde_json::json!([150.0, 150.0]), "{f}");

    // The roost's height keyed down at step 100: the flock follows it down; up to the key the
    // frames are the unkeyed run's, byte for byte.
    write(
        d.path(),
        "low.json",
        &scene(
            flight,
            r#", "timeline": [{"step": 100, "set": {"boids.flight.roost_height": 30}}]"#,
        )
        .replace(r#""steps": 300"#, r#""steps": 600"#),
    );
    succeeds(d.path(), &["simulate", "low.json", "-o", "low.bfs", "-q"]);
    let (z_low, _, _) = height_speed_reach(&d.path().join("low.bfs"), 300);
    assert!(
        z_low < z - 20.0,
        "mean height {z_low:.2} after the key to 30, {z:.2} without"
    );
    let (_, a) = frames(&d.path().join("fly.bfs"));
    let (_, b) = frames(&d.path().join("low.bfs"));
    assert!(a[..=100] == b[..=100], "the frames up to the key differ");
    assert!(a[150] != b[150], "the key changed nothing");

    // Without the section nothing of it is stored.
    let plain = scene("", "").replace(
        r#",
    "flight": {}"#,
        "",
    );
    assert!(!plain.contains("flight"), "{plain}");
    write(d.path(), "plain.json", &plain);
    succeeds(
        d.path(),
        &["simulate", "plain.json", "-o", "plain.bfs", "-q"],
    );
    let v: serde_json::Value =
        serde_json::from_str(&succeeds(d.path(), &["info", "plain.bfs", "--json"]).stdout).unwrap();
    assert!(v["scene_json"]["boids"].get("flight").is_none());
}

#[test]
fn flight_bytes_do_not_depend_on_threads_search_or_simd() {
    let d = tmp();
    write(
        d.path(),
        "fly.json",
        &scene(r#""max_bank": 35, "w_roost_h": 2"#, "").replace(r#""steps": 300"#, r#""steps": 8"#),
    );
    let record = |args: &[&str], simd: &str| {
        let mut a = vec!["simulate", "fly.json", "-o", "o.bfs", "-q", "--force"];
        a.extend_from_slice(args);
        succeeds_env(d.path(), &a, &[("FORGE_SIMD", simd)]);
        std::fs::read(d.path().join("o.bfs")).unwrap()
    };
    let reference = record(&["--threads", "1", "--search", "grid"], "on");
    for simd in ["on", "off"] {
        for threads in ["1", "2", "7"] {
            for search in ["grid", "brute"] {
                let other = record(&["--threads", threads, "--search", search], simd);
                assert!(
                    other == reference,
                    "FORGE_SIMD={simd}, {threads} threads, {search}: different bytes"
                );
            }
        }
    }
}

/// The built-in starlings beside the flocks measured over Rome (docs/src/science.md, "Starlings
/// against the flocks over Rome"): each measure within the band the guide states.
#[test]
fn the_starlings_stay_within_the_guides_bands() {
    let d = tmp();
    succeeds(
        d.path(),
        &[
            "simulate",
            "murmuration3d",
            "--agents",
            "2000",
            "--steps",
            "300",
            "-o",
            "st.bfs",
            "-q",
        ],
    );
    let out = succeeds(d.path(), &["analyze", "st.bfs", "--json"]).stdout;
    let a: serde_json::Value = serde_json::from_str(&out).unwrap();
    let f = |v: &serde_json::Value| v.as_f64().unwrap_or(f64::NAN);
    let r = &a["aspect_ratios"];
    let (width, length) = (f(&r[1]), f(&r[2]));
    assert!((1.6..=3.2).contains(&width), "width/thickness {width:.2}");
    assert!(
        (5.0..=11.0).contains(&length),
        "length/thickness {length:.2}"
    );
    let tilt = f(&a["thinnest_axis_to_vertical"]);
    assert!(tilt < 20.0, "thinnest axis {tilt:.1}° from the vertical");
    let nn = &a["nearest_neighbour"];
    let (least, mean) = (f(&nn["min"]), f(&nn["mean"]));
    assert!(
        (0.3..=0.6).contains(&least),
        "least nearest-neighbour distance {least:.2}"
    );
    assert!(
        (0.68..=1.51).contains(&mean),
        "mean nearest-neighbour distance {mean:.2}"
    );
    let border = f(&a["border_density"]["ratio"]);
    assert!(
        (0.5..=1.05).contains(&border),
        "border/centre density {border:.2}"
    );
    let k1 = f(&a["anisotropy"]["projection"][0]);
    assert!(k1 < 0.25, "(W·V)² at k = 1: {k1:.2}");
}
