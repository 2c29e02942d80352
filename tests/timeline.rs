//! The scene's timeline: keys that change parameters while the run plays, checked like every
//! scene value, applied at their steps, stored in the recording and listed by `forge info`.

use std::path::Path;

use crate::common::*;

/// A small vectorial Vicsek scene with `timeline` (JSON text), recording every step.
fn vicsek(timeline: &str) -> String {
    format!(
        r#"{{
  "model": "vicsek",
  "agents": 400,
  "steps": 60,
  "world": {{ "size": [10, 10] }},
  "vicsek": {{ "v0": 0.5, "r": 1, "noise": 0.4, "noise_kind": "vectorial" }},
  "timeline": {timeline}
}}"#
    )
}

/// A small boids scene with `timeline`.
fn boids(timeline: &str) -> String {
    format!(
        r#"{{
  "preset": "cuplan",
  "agents": 300,
  "steps": 40,
  "boids": {{ "noise": 0.5, "fov": 270 }},
  "timeline": {timeline}
}}"#
    )
}

/// A small boids scene with a circle and a box, and `timeline`.
fn obstacles(timeline: &str) -> String {
    format!(
        r#"{{
  "model": "boids",
  "agents": 100,
  "steps": 20,
  "world": {{ "size": [400, 200] }},
  "obstacles": [{{"circle": {{"center": [100, 100], "radius": 20}}}},
                {{"box": {{"min": [250, 50], "max": [300, 100]}}}}],
  "timeline": {timeline}
}}"#
    )
}

/// Column `name` of the CSV `forge info --metrics` wrote, one value per frame.
fn column(dir: &Path, csv: &str, name: &str) -> Vec<f64> {
    let text = std::fs::read_to_string(dir.join(csv)).unwrap();
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let i = head
        .iter()
        .position(|h| *h == name)
        .unwrap_or_else(|| panic!("no column {name} in {head:?}"));
    lines
        .map(|l| l.split(',').nth(i).unwrap().parse().unwrap())
        .collect()
}

#[test]
fn bad_keys_are_refused_naming_the_key_and_why() {
    let d = tmp();
    let v = |t: &str| vicsek(t);
    let cases: Vec<(String, &[&str])> = vec![
        (
            v(r#"[{"step": 5, "set": {"vicsek.nois": 1}}]"#),
            &[
                r#"scene.timeline[0].set["vicsek.nois"]: no parameter of that name can be keyed"#,
                "vicsek.noise, vicsek.v0",
            ],
        ),
        (
            v(r#"[{"step": 5, "set": {"vicsek.noise": 1}}, {"step": 9, "set": {"vicsek.noise": 7}}]"#),
            &[r#"scene.timeline[1].set["vicsek.noise"]: must be in [0, 2π], got 7"#],
        ),
        (
            v(r#"[{"step": 5, "set": {"vicsek.v0": 0}}]"#),
            &[r#"scene.timeline[0].set["vicsek.v0"]: must be > 0, got 0"#],
        ),
        (
            v(r#"[{"step": 5, "set": {"boids.w_ali": 1}}]"#),
            &[r#"scene.timeline[0].set["boids.w_ali"]: the scene's model is not boids"#],
        ),
        (
            v(r#"[{"step": 20, "set": {"vicsek.noise": 1}}, {"step": 10, "set": {"vicsek.v0": 1}}]"#),
            &["scene.timeline[1]: keys must be in step order: step 10 comes after timeline[0]'s step 20"],
        ),
        (
            v(r#"[{"step": 2, "time": 2, "set": {"vicsek.noise": 1}}]"#),
            &["scene.timeline[0]: give \"step\" or \"time\", not both"],
        ),
        (
            v(r#"[{"set": {"vicsek.noise": 1}}]"#),
            &["scene.timeline[0]: needs \"step\""],
        ),
        (
            v(r#"[{"step": -3, "set": {"vicsek.noise": 1}}]"#),
            &["scene.timeline[0].step: must be in 0..="],
        ),
        (
            v(r#"[{"time": -1.5, "set": {"vicsek.noise": 1}}]"#),
            &["scene.timeline[0].time: must be a time in [0, ", "got -1.5"],
        ),
        (
            v(r#"[{"step": 5, "set": {"vicsek.noise": 1}, "interpolation": "cubic"}]"#),
            &[r#"scene.timeline[0].interpolation: must be one of step, linear, smooth, got "cubic""#],
        ),
        (
            v(r#"[{"step": 5, "set": {"vicsek.noise": "high"}}]"#),
            &[r#"scene.timeline[0].set["vicsek.noise"]: must be a number, got "high""#],
        ),
        (
            v(r#"[{"step": 5, "set": {"vicsek.noise": 1}}, {"step": 5, "set": {"vicsek.noise": 2}}]"#),
            &[r#"scene.timeline[1].set["vicsek.noise"]: set twice at step 5 (also by timeline[0])"#],
        ),
        (
            v(r#"[{"step": 5, "set": {}}]"#),
            &["scene.timeline[0].set: sets nothing"],
        ),
        (
            v(r#"[{"step": 5, "set": {"vicsek.noise": 1}, "ease": "linear"}]"#),
            &["scene.timeline[0].ease: unknown field `ease`"],
        ),
        (
            boids(r#"[{"step": 5, "set": {"boids.v_min": 3}}]"#),
            &[r#"scene.timeline[0].set["boids.v_min"]: v_min must be < v_max at every step, got v_min 3 >= v_max 2.5 at step 5"#],
        ),
        // A band in order at every key, crossed between them: v_min eased (smooth), v_max
        // straight (linear), over the same steps.
        (
            boids(
                r#"[{"step": 5, "set": {"boids.v_min": 0.5, "boids.v_max": 1.0}},
                    {"step": 35, "set": {"boids.v_min": 2.0}, "interpolation": "smooth"},
                    {"step": 35, "set": {"boids.v_max": 2.05}, "interpolation": "linear"}]"#,
            ),
            &[r#"scene.timeline[1].set["boids.v_min"]: v_min must be < v_max at every step, got v_min 1.844 >= v_max 1.8399999 at step 29"#],
        ),
        // One parameter, one path: an index written otherwise is refused, so neither the
        // "set twice" check nor the band check can be passed by.
        (
            boids(r#"[{"step": 5, "set": {"boids.v_min": 1}}, {"step": 5, "set": {"boids.v_min": 2}}]"#),
            &[r#"scene.timeline[1].set["boids.v_min"]: set twice at step 5"#],
        ),
        (
            v(r#"[{"step": 5, "set": {"vicsek.noise": 1, "vicsek.noise": 2}}]"#),
            &[r#"duplicate name "vicsek.noise": each value is set once in a key"#],
        ),
        (
            boids(r#"[{"step": 5, "set": {"boids.fov": 400}}]"#),
            &[r#"scene.timeline[0].set["boids.fov"]: must be in (0, 360]"#],
        ),
        (
            boids(r#"[{"step": 5, "set": {"boids.noise": -1}}]"#),
            &[r#"scene.timeline[0].set["boids.noise"]: must be >= 0, got -1"#],
        ),
        (
            boids(r#"[{"step": 5, "set": {"boids.r_ali": 3}}]"#),
            &[r#"scene.timeline[0].set["boids.r_ali"]: no boids parameter "r_ali" can be keyed"#],
        ),
        (
            boids(r#"[{"step": 5, "set": {"species[0].boids.w_ali": 3}}]"#),
            &[r#"scene.timeline[0].set["species[0].boids.w_ali"]: the scene has no species"#],
        ),
    ];
    let o = |t: &str| obstacles(t);
    let cases: Vec<(String, &[&str])> = cases
        .into_iter()
        .chain([
            (
                boids(r#"[{"step": 5, "set": {"obstacles[0].radius": 3}}]"#),
                &[r#"scene.timeline[0].set["obstacles[0].radius"]: the scene has no obstacles"#][..],
            ),
            (
                o(r#"[{"step": 5, "set": {"obstacles[2].radius": 3}}]"#),
                &[r#"set["obstacles[2].radius"]: the scene has 2 obstacles (obstacles[0] to obstacles[1])"#],
            ),
            (
                o(r#"[{"step": 5, "set": {"obstacles[0].min[0]": 3}}]"#),
                &[r#"set["obstacles[0].min[0]"]: obstacles[0] is a circle: its keyable values are center, radius, present"#],
            ),
            (
                o(r#"[{"step": 5, "set": {"obstacles[0].center[2]": 3}}]"#),
                &[r#"set["obstacles[0].center[2]"]: center[2]: the scene is 2D, its coordinates are [0] to [1]"#],
            ),
            (
                o(r#"[{"step": 5, "set": {"obstacles[0].center": [1, 2, 3]}}]"#),
                &[r#"set["obstacles[0].center"]: must have 2 coordinates (the scene is 2D), got 3"#],
            ),
            (
                o(r#"[{"step": 5, "set": {"obstacles[0].center": [1, "x"]}}]"#),
                &[r#"set["obstacles[0].center"][1]: must be a number, got "x""#],
            ),
            (
                o(r#"[{"step": 5, "set": {"obstacles[0].radius": 0}}]"#),
                &[r#"set["obstacles[0].radius"]: must be > 0, got 0"#],
            ),
            (
                o(r#"[{"step": 5, "set": {"obstacles[0].colour": 1}}]"#),
                &[r#"set["obstacles[0].colour"]: no obstacle value "colour" can be keyed"#],
            ),
            (
                o(r#"[{"step": 5, "set": {"obstacles[1].max[1]": 40}}]"#),
                &[r#"set["obstacles[1].max[1]"]: a box needs min[1] < max[1] at every step, got 50 >= 40 at step 5"#],
            ),
            (
                o(r#"[{"step": 2, "set": {"obstacles[1].min[0]": 250, "obstacles[1].max[0]": 253}},
                      {"step": 18, "set": {"obstacles[1].min[0]": 290}, "interpolation": "smooth"},
                      {"step": 18, "set": {"obstacles[1].max[0]": 293}, "interpolation": "linear"}]"#),
                &[r#"set["obstacles[1].min[0]"]: a box needs min[0] < max[0] at every step, got 280.72266 >= 280.5 at step 13"#],
            ),
            (
                o(r#"[{"step": 5, "set": {"obstacles[+0].radius": 5}}]"#),
                &[r#"set["obstacles[+0].radius"]: obstacle index "+0" must be written 0"#],
            ),
            (
                o(r#"[{"step": 5, "remove": ["obstacles[01]"]}]"#),
                &[r#"scene.timeline[0].remove[0]: obstacle index "01" must be written 1"#],
            ),
            (
                o(r#"[{"step": 5, "set": {"obstacles[1].present": 0.5}}]"#),
                &[r#"set["obstacles[1].present"]: must be 1 (there) or 0 (gone), got 0.5"#],
            ),
            (
                o(r#"[{"step": 5, "add": ["obstacles[1]"]}, {"step": 9, "add": ["obstacles[1]"]}]"#),
                &[r#"scene.timeline[1].add[0]: obstacles[1] is already there at step 9"#],
            ),
            (
                o(r#"[{"step": 5, "remove": ["species[1]"]}]"#),
                &[r#"scene.timeline[0].remove[0]: the scene has no species"#],
            ),
            (
                o(r#"[{"step": 5, "add": "obstacles[1]"}]"#),
                &[r#"scene.timeline[0].add: must be a list of obstacles and species, ["obstacles[0]", "species[1]"], got "obstacles[1]""#],
            ),
            (
                o(r#"[{"step": 5, "add": ["obstacles[4]"]}]"#),
                &[r#"scene.timeline[0].add[0]: the scene has 2 obstacles"#],
            ),
        ])
        .collect();
    for (i, (text, needles)) in cases.iter().enumerate() {
        let name = format!("bad{i}.json");
        write(d.path(), &name, text);
        let err = fails_cleanly(
            d.path(),
            &["simulate", &name, "-o", "out.bfs"],
            needles,
            &["out.bfs"],
        );
        // Validation errors name the line of the key in the scene file.
        if needles[0].contains("].set[\"") {
            has(&err, "(line ");
        }
    }
}

#[test]
fn species_keys_name_the_species_a_scene_has() {
    let d = tmp();
    let scene = r#"{
  "preset": "cuplan",
  "steps": 10,
  "species": [{"name": "a", "agents": 20}, {"name": "b", "agents": 20}],
  "timeline": [{"step": 5, "set": {"species[2].boids.v_max": 3, "boids.w_ali": 1}}]
}"#;
    write(d.path(), "sp.json", scene);
    let err = fails(d.path(), &["simulate", "sp.json", "-o", "out.bfs"]);
    has(
        &err,
        r#"scene.timeline[0].set["species[2].boids.v_max"]: the scene has 2 species (species[0] to species[1])"#,
    );
    has(
        &err,
        r#"scene.timeline[0].set["boids.w_ali"]: the scene has species, each with its own boids parameters: key species[i].boids.w_ali"#,
    );
    // A chase only on a predator, a flight only on a prey of one; a radius above 0.
    let hunt = r#"{
  "preset": "cuplan",
  "steps": 10,
  "species": [{"name": "a", "agents": 20}, {"name": "f", "agents": 1, "role": "predator"}],
  "timeline": [{"step": 5, "set": {"species[0].boids.w_chase": 3, "species[1].boids.w_flee": 1, "species[1].boids.chase_radius": 0}}]
}"#;
    write(d.path(), "hunt.json", hunt);
    let err = fails(d.path(), &["simulate", "hunt.json", "-o", "out.bfs"]);
    has(
        &err,
        r#"scene.timeline[0].set["species[0].boids.w_chase"]: species[0] (a) is not a predator: it chases nothing"#,
    );
    has(
        &err,
        r#"scene.timeline[0].set["species[1].boids.w_flee"]: species[1] (f) flees nothing"#,
    );
    has(
        &err,
        r#"scene.timeline[0].set["species[1].boids.chase_radius"]: must be > 0, got 0"#,
    );
}

/// A step key changes the speed from the frame after its step; a linear and a smooth ramp give
/// the values their formulas give; `forge info` lists the keys and its CSV has each keyed
/// parameter's value at every frame.
#[test]
fn keys_take_effect_at_their_steps_with_their_interpolation() {
    let d = tmp();
    let t = r#"[
    {"step": 10, "set": {"vicsek.v0": 0.2}},
    {"step": 30, "set": {"vicsek.v0": 0.6}, "interpolation": "linear"},
    {"time": 50, "set": {"vicsek.v0": 0.2}, "interpolation": "smooth"}
  ]"#;
    write(d.path(), "t.json", &vicsek(t));
    succeeds(d.path(), &["simulate", "t.json", "-o", "t.bfs", "-q"]);
    let info = succeeds(d.path(), &["info", "t.bfs"]).stdout;
    has(&info, "timeline   3 keys on vicsek.v0");
    has(&info, "step 10: vicsek.v0 = 0.2");
    has(&info, "step 30: vicsek.v0 = 0.6 (linear)");
    has(&info, "step 50: vicsek.v0 = 0.2 (smooth)");
    succeeds(d.path(), &["info", "t.bfs", "--metrics", "m.csv", "-q"]);
    let speed = column(d.path(), "m.csv", "mean_speed");
    let keyed = column(d.path(), "m.csv", "vicsek.v0");
    assert_eq!(speed.len(), 61);
    // The value in effect at step t moves the agents from t to t + 1: frame t + 1's speed.
    let expect = |t: u64| -> f64 {
        match t {
            0..=9 => 0.5,
            // A ramp starts at the previous key of the parameter.
            10..=29 => 0.2 + 0.4 * (t - 10) as f64 / 20.0,
            _ => {
                let s = ((t - 30) as f64 / 20.0).min(1.0);
                0.6 - 0.4 * s * s * (3.0 - 2.0 * s)
            }
        }
    };
    for t in 0..60u64 {
        let want = expect(t) as f32 as f64;
        assert!(
            (speed[t as usize + 1] - want).abs() < 1e-5,
            "frame {}: mean speed {} where the timeline gives {want}",
            t + 1,
            speed[t as usize + 1]
        );
        assert!(
            (keyed[t as usize] - want).abs() < 1e-6,
            "the CSV's vicsek.v0 at step {t}: {} where the timeline gives {want}",
            keyed[t as usize]
        );
    }
    // The keys travel in the recording's scene, and its JSON lists them.
    let json = succeeds(d.path(), &["info", "t.bfs", "--json"]).stdout;
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["timeline"].as_array().unwrap().len(), 3);
    assert_eq!(v["timeline"][1]["interpolation"], "linear");
    assert_eq!(v["scene_json"]["timeline"][2]["step"], 50);
}

/// A run with a timeline is the same bytes on any thread count and either search, for the
/// scene's boids, a species' parameters and Vicsek; and the keyed run differs from the unkeyed
/// one (the keys did something).
#[test]
fn a_timeline_keeps_the_determinism_contract() {
    let d = tmp();
    let b = boids(
        r#"[{"step": 8, "set": {"boids.w_ali": 0, "boids.noise": 2}, "interpolation": "linear"},
            {"step": 20, "set": {"boids.fov": 120, "boids.v_max": 4, "boids.max_force": 9}, "interpolation": "smooth"}]"#,
    );
    let v = vicsek(r#"[{"step": 10, "set": {"vicsek.noise": 3}, "interpolation": "linear"}]"#);
    let sp = r#"{
  "preset": "cuplan", "steps": 30, "seed": 4,
  "species": [{"name": "a", "agents": 150}, {"name": "b", "agents": 150, "role": "predator", "boids": {"v_max": 3}}],
  "timeline": [{"step": 12, "set": {"species[1].boids.v_max": 5, "species[0].boids.w_coh": 4}, "interpolation": "linear"},
               {"step": 20, "set": {"species[1].boids.w_chase": 0, "species[0].boids.flee_radius": 30}, "interpolation": "smooth"}]
}"#;
    for (name, text) in [("b", b.as_str()), ("v", v.as_str()), ("sp", sp)] {
        write(d.path(), &format!("{name}.json"), text);
        let runs = [("1", "grid"), ("2", "grid"), ("2", "brute")];
        let mut bytes = Vec::new();
        for (threads, search) in runs {
            let out = format!("{name}-{threads}-{search}.bfs");
            succeeds(
                d.path(),
                &[
                    "simulate",
                    &format!("{name}.json"),
                    "-o",
                    &out,
                    "--threads",
                    threads,
                    "--search",
                    search,
                    "--backend",
                    "cpu",
                    "-q",
                ],
            );
            bytes.push((out.clone(), std::fs::read(d.path().join(&out)).unwrap()));
        }
        for (out, b) in &bytes[1..] {
            assert!(b == &bytes[0].1, "{out} differs from {}", bytes[0].0);
        }
        // Without its keys the run is another run.
        let mut scene: serde_json::Value = serde_json::from_str(text).unwrap();
        scene.as_object_mut().unwrap().remove("timeline");
        write(d.path(), &format!("{name}-plain.json"), &scene.to_string());
        let plain = format!("{name}-plain.bfs");
        succeeds(
            d.path(),
            &[
                "simulate",
                &format!("{name}-plain.json"),
                "-o",
                &plain,
                "--backend",
                "cpu",
                "-q",
            ],
        );
        let frames = |p: &str| {
            let info = succeeds(d.path(), &["info", p, "--json"]).stdout;
            let v: serde_json::Value = serde_json::from_str(&info).unwrap();
            v["metrics"]["last"]["polarization"].as_f64().unwrap()
        };
        assert_ne!(
            frames(&plain),
            frames(&bytes[0].0),
            "{name}: the keys changed nothing"
        );
    }
}

/// `--against` draws the order parameter against a keyed parameter; a parameter the recording
/// does not key, or a recording without a timeline, is refused naming the flag.
#[test]
fn info_plots_against_a_keyed_parameter() {
    let d = tmp();
    let t = r#"[{"step": 30, "set": {"vicsek.noise": 3}, "interpolation": "linear"},
               {"step": 60, "set": {"vicsek.noise": 0.4}, "interpolation": "linear"}]"#;
    write(d.path(), "t.json", &vicsek(t));
    succeeds(d.path(), &["simulate", "t.json", "-o", "t.bfs", "-q"]);
    succeeds(
        d.path(),
        &[
            "info",
            "t.bfs",
            "--plot",
            "loop.png",
            "--against",
            "vicsek.noise",
            "-q",
        ],
    );
    let img = image::open(d.path().join("loop.png")).unwrap().to_rgb8();
    // Both branches are drawn: the rising one in red, the falling one in blue.
    let count = |c: [u8; 3]| img.pixels().filter(|p| p.0 == c).count();
    assert!(count([214, 39, 40]) > 200, "no rising branch");
    assert!(count([31, 119, 180]) > 200, "no falling branch");
    // The plot against time gains a panel for the keyed parameter.
    succeeds(d.path(), &["info", "t.bfs", "--plot", "time.png", "-q"]);
    let (w, h) = image::image_dimensions(d.path().join("time.png")).unwrap();
    assert_eq!((w, h), (960, 1200));
    let err = fails(
        d.path(),
        &["info", "t.bfs", "--plot", "x.png", "--against", "vicsek.v0"],
    );
    has(
        &err,
        "--against vicsek.v0: the recording's timeline does not key it (it keys vicsek.noise)",
    );
    write(d.path(), "plain.json", &vicsek("[]"));
    succeeds(
        d.path(),
        &["simulate", "plain.json", "-o", "plain.bfs", "-q"],
    );
    let err = fails(
        d.path(),
        &[
            "info",
            "plain.bfs",
            "--plot",
            "x.png",
            "--against",
            "vicsek.noise",
        ],
    );
    has(
        &err,
        "--against vicsek.noise: the recording has no timeline",
    );
    let err = fails(d.path(), &["info", "t.bfs", "--against", "vicsek.noise"]);
    has(&err, "--plot");
    no_output(d.path(), "x.png");
}

/// The built-in hysteresis scene draws a loop: at the same noise just below where order is lost
/// on the way up, the flock is ordered on the way up and disordered on the way down.
#[test]
fn the_hysteresis_scene_draws_a_loop() {
    let d = tmp();
    succeeds(
        d.path(),
        &["simulate", "vicsek-hysteresis", "-o", "h.bfs", "-q"],
    );
    let info = succeeds(d.path(), &["info", "h.bfs", "--metrics", "h.csv"]).stdout;
    has(&info, "timeline   3 keys on vicsek.noise");
    has(&info, "step 42000: vicsek.noise = 0.75 (linear)");
    let (steps, noise, order) = (
        column(d.path(), "h.csv", "step"),
        column(d.path(), "h.csv", "vicsek.noise"),
        column(d.path(), "h.csv", "polarization"),
    );
    let mean = |rising: bool| {
        let v: Vec<f64> = (0..steps.len())
            .filter(|&i| (steps[i] < 42000.0) == rising && (0.62..0.635).contains(&noise[i]))
            .map(|i| order[i])
            .collect();
        assert!(v.len() >= 5, "{} frames at noise 0.62..0.635", v.len());
        v.iter().sum::<f64>() / v.len() as f64
    };
    let (up, down) = (mean(true), mean(false));
    assert!(
        up > 0.5 && down < 0.2,
        "polarization at noise 0.62..0.635: {up} rising, {down} falling"
    );
}

/// A 2D scene whose `render.timeline` keys the view: unzoomed to step 30, then a linear ramp
/// to zoom 3 centred on (600, 300) with exposure 4 at step 90.
const CAMERA_2D: &str = r#"{
  "name": "cam",
  "preset": "boidforge",
  "agents": 1500,
  "steps": 100,
  "seed": 5,
  "init": { "layout": "clusters", "count": 6, "radius": 80, "velocity": "aligned" },
  "render": {
    "color": "heading", "trails": 0, "exposure": 2,
    "timeline": [
      { "step": 30, "set": { "zoom": 1, "center": [960, 540], "exposure": 2 } },
      { "time": 4.5, "set": { "zoom": 3, "center": [600, 300], "exposure": 4 }, "interpolation": "linear" }
    ]
  }
}"#;

/// `forge still` of `rec` frame `k` at 320×180 with `flags`: the PNG's bytes.
fn still(dir: &Path, rec: &str, k: u64, flags: &[&str], out: &str) -> Vec<u8> {
    let k = k.to_string();
    let mut args = vec![
        "still",
        rec,
        "--frame",
        k.as_str(),
        "--size",
        "320x180",
        "-o",
        out,
        "--force",
        "-q",
    ];
    args.extend_from_slice(flags);
    succeeds(dir, &args);
    std::fs::read(dir.join(out)).unwrap()
}

/// The keyed camera draws, at every frame, what the flags give at the value the keys give
/// there: before the first key the scene's own view, half-way up the ramp zoom 2 at the
/// midpoint, after the last key zoom 3 at (600, 300) with exposure 4.
#[test]
fn render_keys_move_the_2d_camera() {
    let d = tmp();
    write(d.path(), "cam.json", CAMERA_2D);
    let mut plain: serde_json::Value = serde_json::from_str(CAMERA_2D).unwrap();
    plain["render"].as_object_mut().unwrap().remove("timeline");
    write(d.path(), "plain.json", &plain.to_string());
    succeeds(d.path(), &["simulate", "cam.json", "-o", "cam.bfs", "-q"]);
    succeeds(
        d.path(),
        &["simulate", "plain.json", "-o", "plain.bfs", "-q"],
    );
    let cases: [(u64, &[&str]); 3] = [
        (20, &[]),
        (
            60,
            &["--zoom", "2", "--center", "780,420", "--exposure", "3"],
        ),
        (
            95,
            &["--zoom", "3", "--center", "600,300", "--exposure", "4"],
        ),
    ];
    for (k, flags) in cases {
        let keyed = still(d.path(), "cam.bfs", k, &[], "keyed.png");
        let want = still(d.path(), "plain.bfs", k, flags, "want.png");
        assert!(
            keyed == want,
            "frame {k}: the keyed view is not the view of {flags:?}"
        );
    }
    // The keys moved the camera: the last frame differs from the unkeyed view.
    let keyed = still(d.path(), "cam.bfs", 95, &[], "keyed.png");
    assert!(keyed != still(d.path(), "plain.bfs", 95, &[], "want.png"));
}

/// A 3D scene's keys move a fixed camera (the keys ask for it), its eye and field of view
/// ramping; a camera that places itself refuses them.
#[test]
fn render_keys_move_a_fixed_3d_camera() {
    let d = tmp();
    let scene = r#"{
  "preset": "boidforge", "dim": 3, "agents": 800, "steps": 40, "seed": 2,
  "world": { "size": [600, 400, 400] },
  "render": { "trails": 0, "exposure": 2, "target": [300, 200, 200],
    "timeline": [
      { "step": 10, "set": { "eye": [300, -500, 300], "fov": 50 } },
      { "step": 30, "set": { "eye": [300, -100, 260], "fov": 30 }, "interpolation": "linear" }
    ] }
}"#;
    write(d.path(), "c3.json", scene);
    succeeds(d.path(), &["simulate", "c3.json", "-o", "c3.bfs", "-q"]);
    let mut plain: serde_json::Value = serde_json::from_str(scene).unwrap();
    plain["render"].as_object_mut().unwrap().remove("timeline");
    write(d.path(), "p3.json", &plain.to_string());
    succeeds(d.path(), &["simulate", "p3.json", "-o", "p3.bfs", "-q"]);
    let fixed = ["--camera", "fixed", "--target", "300,200,200"];
    let cases: [(u64, Vec<&str>); 2] = [
        (
            20,
            [&fixed[..], &["--eye", "300,-300,280", "--fov", "40"]].concat(),
        ),
        (
            35,
            [&fixed[..], &["--eye", "300,-100,260", "--fov", "30"]].concat(),
        ),
    ];
    for (k, flags) in cases {
        let keyed = still(d.path(), "c3.bfs", k, &[], "k3.png");
        let want = still(d.path(), "p3.bfs", k, &flags, "w3.png");
        assert!(
            keyed == want,
            "frame {k}: the keyed camera is not {flags:?}"
        );
    }
    let err = fails(
        d.path(),
        &["still", "c3.bfs", "--camera", "orbit", "-o", "x.png"],
    );
    has(
        &err,
        "keys the eye, which only the fixed camera has (the camera is orbit)",
    );
}

#[test]
fn bad_render_keys_are_refused_naming_the_key() {
    let d = tmp();
    let cases: [(&str, &str); 8] = [
        (r#"[{"step": 5, "set": {"zoom": 0}}]"#, r#"scene.render.timeline[0].set["zoom"]: must be in 0.01..=1000, got 0"#),
        (r#"[{"step": 5, "set": {"center": [1]}}]"#, r#"scene.render.timeline[0].set["center"]: must be 2 numbers [X, Y], got 1 number(s)"#),
        (r#"[{"step": 5, "set": {"eye": [1, 2, 3]}}]"#, r#"scene.render.timeline[0].set["eye"]: applies to 3D only (dim 3); this is 2D"#),
        (r#"[{"step": 5, "set": {"bloom": 1}}]"#, r#"scene.render.timeline[0].set["bloom"]: no look setting of that name can be keyed"#),
        (r#"[{"step": 9, "set": {"zoom": 2}}, {"step": 5, "set": {"zoom": 1}}]"#, "scene.render.timeline[1]: keys must be in step order: step 5 comes after timeline[0]'s step 9"),
        (r#"[{"set": {"zoom": 2}}]"#, "scene.render.timeline[0]: needs \"step\""),
        // Placed at steps by the scene's dt when simulating, as every render will place them.
        (r#"[{"step": 50, "set": {"zoom": 2}}, {"time": 0.1, "set": {"zoom": 1}}]"#, "scene.render.timeline[1]: keys must be in step order: step "),
        (r#"[{"step": 5, "set": {"zoom": 2}}, {"step": 5, "set": {"zoom": 3}}]"#, r#"scene.render.timeline[1].set["zoom"]: set twice at step 5"#),
    ];
    for (i, (timeline, needle)) in cases.iter().enumerate() {
        let mut v: serde_json::Value = serde_json::from_str(CAMERA_2D).unwrap();
        v["render"]["timeline"] = serde_json::from_str(timeline).unwrap();
        let name = format!("bad{i}.json");
        write(d.path(), &name, &serde_json::to_string_pretty(&v).unwrap());
        fails_cleanly(
            d.path(),
            &["simulate", &name, "-o", "o.bfs"],
            &[needle],
            &["o.bfs"],
        );
    }
    // A look file's keys are checked the same way, named by the file.
    write(d.path(), "cam.json", CAMERA_2D);
    succeeds(d.path(), &["simulate", "cam.json", "-o", "cam.bfs", "-q"]);
    write(
        d.path(),
        "look.json",
        r#"{"timeline": [{"time": 1, "set": {"trails": 1}}]}"#,
    );
    let err = fails(
        d.path(),
        &["still", "cam.bfs", "--look", "look.json", "-o", "x.png"],
    );
    has(
        &err,
        r#"timeline[0].set["trails"]: must be in [0, 1), got 1"#,
    );
    has(&err, "look.json");
}

/// A live run (`forge view SCENE --record`, the player's own `Live`) tuned while it plays:
/// each parameter set becomes a key at the step the solver was about to take, a refused value
/// is answered naming the path, and the recording is written under a header holding the keys.
/// The scene saved from the run (`s` in the player) makes `forge simulate` write the very
/// same bytes.
#[test]
fn a_live_run_tuned_while_it_plays_is_what_simulate_writes_from_the_saved_scene() {
    use forge::live::{Live, LiveScene, Msg};
    use forge::scene::{Overrides, Scene};
    use forge::simulate::{scene_inputs, Setup, Unfinished};
    let d = tmp();
    let (mut scene, text) = Scene::load_with_text("vicsek-bands").unwrap();
    Overrides {
        steps: Some(80),
        agents: Some(2000),
        seed: Some(9),
        every: Some(2),
    }
    .apply(&mut scene)
    .unwrap();
    // The scene's warm-up runs first; frame k is at step warmup + 2k.
    let w = scene.warmup;
    let rec = d.path().join("live.bfs");
    let setup = Setup {
        inputs: scene_inputs(Some("vicsek-bands"), &scene),
        threads: Some(2),
        backend: forge::sim::backend::Backend::Cpu,
        force: false,
        quiet: true,
        agents_from: "--agents",
        unfinished: Unfinished::Keep,
    };
    let mut live = Live::start(LiveScene {
        scene,
        text,
        record: Some(rec.clone()),
        setup,
    })
    .unwrap();
    let (mut frames, mut keyed, mut refused) = (0u64, Vec::new(), Vec::new());
    loop {
        match live.next_blocking() {
            Ok(Msg::Frame(f)) => {
                frames += 1;
                match f.index {
                    8 => live.set("vicsek.noise", 1.2),
                    20 => {
                        live.set("vicsek.noise", 9.0);
                        live.set("vicsek.v0", 0.2);
                    }
                    _ => {}
                }
                live.give_back(f);
            }
            Ok(Msg::Keyed(Ok(k))) => keyed.push(k),
            Ok(Msg::Keyed(Err(e))) => refused.push(e),
            Ok(Msg::Ended(why)) => {
                assert_eq!(why, None);
                break;
            }
            Err(e) => panic!("{e:#}"),
        }
    }
    assert_eq!(frames, 41);
    assert_eq!(refused, ["vicsek.noise: must be in [0, 2π], got 9"]);
    assert_eq!(keyed.len(), 2, "{keyed:?}");
    assert_eq!((keyed[0].1.as_str(), keyed[0].2), ("vicsek.noise", 1.2));
    assert_eq!((keyed[1].1.as_str(), keyed[1].2), ("vicsek.v0", 0.2));
    // Taken between two steps after the frame that asked (the solver runs a frame ahead at
    // most): frame 8 is step w + 16, frame 20 step w + 40.
    assert!(
        (w + 16..=w + 20).contains(&keyed[0].0) && (w + 40..=w + 44).contains(&keyed[1].0),
        "{keyed:?}"
    );
    assert_eq!(live.finish().unwrap().as_deref(), Some(rec.as_path()));
    let saved = live.scene_file().unwrap();
    write(d.path(), "saved.json", &saved);
    succeeds(d.path(), &["simulate", "saved.json", "-o", "sim.bfs", "-q"]);
    let (a, b) = (
        std::fs::read(&rec).unwrap(),
        std::fs::read(d.path().join("sim.bfs")).unwrap(),
    );
    assert!(
        a == b,
        "the live recording and forge simulate of the saved scene differ"
    );
    let info = succeeds(d.path(), &["info", "live.bfs"]).stdout;
    has(&info, "timeline   2 keys on vicsek.noise, vicsek.v0");
    // The keys did something: the speed after the second is 0.2.
    succeeds(d.path(), &["info", "live.bfs", "--metrics", "m.csv", "-q"]);
    let speed = column(d.path(), "m.csv", "mean_speed");
    assert!(
        (speed[40] - 0.2).abs() < 1e-6 && (speed[0] - 0.5).abs() < 1e-6,
        "{speed:?}"
    );
}

/// A sweep of a scene with a timeline runs the keys in every point (the v0 keyed at step 15
/// shows in the measured speed), and its shards merge into the unsharded CSV byte for byte.
#[test]
fn a_swept_scene_with_a_timeline_shards_as_one_run() {
    let d = tmp();
    write(
        d.path(),
        "t.json",
        &vicsek(r#"[{"step": 15, "set": {"vicsek.v0": 0.25}}]"#),
    );
    let sweep = |extra: &[&str]| {
        let mut a = vec![
            "sweep",
            "t.json",
            "--vary",
            "noise=0.2,0.8,1.4",
            "--seeds",
            "2",
            "--equilibrate",
            "20",
            "--measure",
            "10",
        ];
        a.extend_from_slice(extra);
        succeeds(d.path(), &a);
    };
    sweep(&["-o", "whole.csv"]);
    // The keyed parameter itself cannot be swept: its keys would give every point one run.
    let err = fails(
        d.path(),
        &["sweep", "t.json", "--vary", "v0=0.1,0.5", "-o", "v0.csv"],
    );
    has(&err, r#"--vary "v0=0.1,0.5": scene "#);
    has(&err, "timeline keys vicsek.v0 (timeline[0], step 15)");
    assert!(!d.path().join("v0.csv").exists());
    sweep(&["-o", "s0.csv", "--shard", "0/2"]);
    sweep(&["-o", "s1.csv", "--shard", "1/2"]);
    succeeds(
        d.path(),
        &["sweep", "merge", "s1.csv", "s0.csv", "-o", "merged.csv"],
    );
    let whole = std::fs::read(d.path().join("whole.csv")).unwrap();
    assert!(
        whole == std::fs::read(d.path().join("merged.csv")).unwrap(),
        "the shards merged differ from the unsharded sweep"
    );
    // Without the key the points are other runs.
    write(d.path(), "p.json", &vicsek("[]"));
    succeeds(
        d.path(),
        &[
            "sweep",
            "p.json",
            "--vary",
            "noise=0.2,0.8,1.4",
            "--seeds",
            "2",
            "--equilibrate",
            "20",
            "--measure",
            "10",
            "-o",
            "plain.csv",
        ],
    );
    // (The rows, not the identity line, which names the scene.)
    let rows = |p: &str| -> Vec<String> {
        std::fs::read_to_string(d.path().join(p))
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(rows("whole.csv").len(), rows("plain.csv").len());
    assert!(
        rows("whole.csv") != rows("plain.csv"),
        "the key changed no point"
    );
}
