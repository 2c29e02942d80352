//! Obstacles through the real binary: every bad field named by its JSON path; no agent ever
//! ends a step inside one (checked in float64 on every frame, 2D and 3D, with and without
//! avoidance); avoidance keeps agents off the surfaces; the CUDA backend refuses them by name;
//! the recording carries them and the renderer draws them.

use std::path::Path;

mod common;

use common::*;

fn simulate(dir: &Path, scene: &Path, extra: &[&str]) -> std::path::PathBuf {
    let out = dir.join("run.bfs");
    let mut args = vec![
        "simulate",
        scene.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--force",
        "--quiet",
    ];
    args.extend_from_slice(extra);
    succeeds(dir, &args);
    out
}

/// A shape in float64, as the scene wrote it.
enum Shape {
    Round { a: [f64; 3], b: [f64; 3], r: f64 },
    Box { lo: [f64; 3], hi: [f64; 3] },
}

fn v3(v: &serde_json::Value) -> [f64; 3] {
    let a = v.as_array().unwrap();
    std::array::from_fn(|k| a.get(k).and_then(|x| x.as_f64()).unwrap_or(0.0))
}

fn shapes(scene: &serde_json::Value) -> Vec<Shape> {
    scene["obstacles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let (kind, b) = o.as_object().unwrap().iter().next().unwrap();
            match kind.as_str() {
                "circle" | "sphere" => Shape::Round {
                    a: v3(&b["center"]),
                    b: v3(&b["center"]),
                    r: b["radius"].as_f64().unwrap(),
                },
                "segment" => Shape::Round {
                    a: v3(&b["from"]),
                    b: v3(&b["to"]),
                    r: b["radius"].as_f64().unwrap(),
                },
                _ => Shape::Box {
                    lo: v3(&b["min"]),
                    hi: v3(&b["max"]),
                },
            }
        })
        .collect()
}

/// How far `x` is inside `s` (≤ 0: outside), float64.
fn depth(s: &Shape, x: [f64; 3]) -> f64 {
    match s {
        Shape::Round { a, b, r } => {
            let e: [f64; 3] = std::array::from_fn(|k| b[k] - a[k]);
            let e2: f64 = e.iter().map(|v| v * v).sum();
            let t = if e2 > 0.0 {
                ((0..3).map(|k| (x[k] - a[k]) * e[k]).sum::<f64>() / e2).clamp(0.0, 1.0)
            } else {
                0.0
            };
            let d: f64 = (0..3)
                .map(|k| (x[k] - (a[k] + e[k] * t)).powi(2))
                .sum::<f64>()
                .sqrt();
            r - d
        }
        Shape::Box { lo, hi } => (0..3)
            .map(|k| (x[k] - lo[k]).min(hi[k] - x[k]))
            .fold(f64::INFINITY, f64::min),
    }
}

/// Per frame: the deepest any agent is inside any shape, and how many agents are within
/// `near` of a surface (inside or out).
fn survey(bfs: &Path, near: f64) -> (f64, usize) {
    let mut r = forge::bfs::Reader::open(bfs).unwrap();
    let h = r.header().clone();
    let scene: serde_json::Value = serde_json::from_str(&h.scene_json).unwrap();
    let sh = shapes(&scene);
    let dim = h.dim as usize;
    let (mut deepest, mut close) = (f64::NEG_INFINITY, 0);
    for k in 0..r.frame_count() {
        let f = r.read_frame(k).unwrap();
        let n = f.agents(dim);
        for i in 0..n {
            let x: [f64; 3] =
                std::array::from_fn(|c| if c < dim { f.pos[c * n + i] as f64 } else { 0.0 });
            for s in &sh {
                let d = depth(s, x);
                deepest = deepest.max(d);
                if d > -near {
                    close += 1;
                }
            }
        }
    }
    (deepest, close)
}

/// A crowded field: a flock released towards a wall of rocks, a box and a wall segment.
fn field(dim: usize, boundary: &str, boids_extra: &str) -> String {
    let (world, z) = if dim == 2 {
        ("[600, 400]", "")
    } else {
        ("[600, 400, 300]", ", 150")
    };
    format!(
        r#"{{"model": "boids", "dim": {dim}, "agents": 1500, "steps": 120, "seed": 5,
            "world": {{"size": {world}, "boundary": "{boundary}"}},
            "boids": {{"w_sep": 40{boids_extra}}},
            "obstacles": [
              {{"circle": {{"center": [300, 200{z}], "radius": 60}}}},
              {{"circle": {{"center": [150, 100{z}], "radius": 25}}}},
              {{"box": {{"min": [420, 50{b0}], "max": [480, 350{b1}]}}}},
              {{"segment": {{"from": [100, 300{z}], "to": [250, 360{z}], "radius": 4}}}}
            ],
            "init": {{"layout": "clusters", "count": 4, "radius": 80, "velocity": "aligned"}}}}"#,
        b0 = if dim == 2 { "" } else { ", 60" },
        b1 = if dim == 2 { "" } else { ", 240" },
    )
}

#[test]
fn no_agent_ever_ends_a_step_inside_an_obstacle() {
    let dir = tmp();
    for dim in [2, 3] {
        for boundary in ["wrap", "reflect"] {
            // Without avoidance agents run into every shape: only the projection keeps them out.
            for extra in [r#", "w_avoid": 0"#, ""] {
                let s = write(dir.path(), "s.json", &field(dim, boundary, extra));
                let out = simulate(dir.path(), &s, &[]);
                let (deepest, close) = survey(&out, 0.5);
                assert!(
                    deepest <= 1e-3,
                    "{dim}D {boundary} {extra}: an agent ended {deepest} inside an obstacle"
                );
                if extra.is_empty() {
                    continue;
                }
                // The test can fail: agents do reach the surfaces.
                assert!(close > 100, "{dim}D {boundary}: only {close} contacts without avoidance");
            }
        }
    }
}

#[test]
fn avoidance_keeps_agents_off_the_surfaces() {
    let dir = tmp();
    let count = |extra: &str| {
        let s = write(dir.path(), "s.json", &field(2, "wrap", extra));
        survey(&simulate(dir.path(), &s, &[]), 2.0).1
    };
    let without = count(r#", "w_avoid": 0"#);
    let with = count(r#", "w_avoid": 400, "look_ahead": 0.8, "clearance": 12"#);
    assert!(
        (with as f64) < 0.5 * without as f64,
        "agents within 2 units of a surface: {with} with avoidance, {without} without"
    );
}

#[test]
fn bad_obstacles_are_named_by_their_json_path() {
    let dir = tmp();
    let base = |obstacles: &str, boids: &str| {
        format!(
            r#"{{"model": "boids", "agents": 10, "steps": 2, "boids": {{"r_sep": 5{boids}}},
                "obstacles": {obstacles}}}"#
        )
    };
    let cases = [
        (
            base(r#"[{"circle": {"center": [1, 2], "radius": 3}}, {"circle": {"center": [1, 2], "radius": -1}}]"#, ""),
            "scene.obstacles[1].circle.radius: must be a number > 0",
        ),
        (
            base(r#"[{"circle": {"center": [1, 2, 3], "radius": 3}}]"#, ""),
            "scene.obstacles[0].circle.center: must have 2 coordinates",
        ),
        (
            base(r#"[{"triangle": {}}]"#, ""),
            "scene.obstacles[0].triangle: unknown shape",
        ),
        (
            base(r#"[{"box": {"min": [5, 5], "max": [9, 2]}}]"#, ""),
            "scene.obstacles[0].box.max[1]: must be > min[1]",
        ),
        (
            base(r#"[{"segment": {"from": [0, 0], "to": [1, "x"], "radius": 1}}]"#, ""),
            "scene.obstacles[0].segment.to[1]: must be a finite number",
        ),
        (
            base(r#"[{"segment": {"from": [0, 0], "to": [1, 1], "radius": 1, "width": 2}}]"#, ""),
            "scene.obstacles[0].segment.width: unknown field",
        ),
        (
            base(r#"[{"circle": {"center": [1, 2], "radius": 3}, "box": {}}]"#, ""),
            "scene.obstacles[0]: must be one shape",
        ),
        (
            base(r#"[{"circle": {"center": [1, 2], "radius": 3}}]"#, r#", "look_ahead": -1"#),
            "scene.boids.look_ahead: must be >= 0",
        ),
        (base("[]", r#", "w_avoid": 3"#), "scene.boids.w_avoid: only used with obstacles"),
        (
            r#"{"model": "vicsek", "obstacles": [{"circle": {"center": [1, 2], "radius": 3}}]}"#
                .to_string(),
            "scene.obstacles: only with model \"boids\"",
        ),
    ];
    for (body, want) in cases {
        let s = write(dir.path(), "bad.json", &body);
        let err = fails(dir.path(), &["simulate", s.to_str().unwrap(), "-o", "x.bfs"]);
        assert!(err.contains(want), "{body}\nwanted {want:?} in:\n{err}");
        no_output(dir.path(), "x.bfs");
    }
}

#[test]
fn the_cuda_backend_refuses_obstacles_by_name() {
    let dir = tmp();
    let s = write(dir.path(), "s.json", &field(2, "wrap", ""));
    let err = fails(
        dir.path(),
        &["simulate", s.to_str().unwrap(), "-o", "x.bfs", "--backend", "cuda"],
    );
    has(&err, "--backend cuda: obstacles (scene.obstacles) run on the CPU only");
    no_output(dir.path(), "x.bfs");
}

#[test]
fn a_recording_without_obstacles_stores_no_obstacle_fields() {
    // Older recordings keep their bytes: nothing new appears in a scene that uses none.
    let dir = tmp();
    let s = write(
        dir.path(),
        "s.json",
        r#"{"model": "boids", "agents": 20, "steps": 2}"#,
    );
    let out = simulate(dir.path(), &s, &[]);
    let h = forge::bfs::Reader::open(&out).unwrap().header().clone();
    for field in ["obstacles", "w_avoid", "look_ahead", "clearance"] {
        assert!(!h.scene_json.contains(field), "{field} in {}", h.scene_json);
    }
    // And one with obstacles stores them, with the avoidance it resolved.
    let s = write(dir.path(), "s.json", &field(2, "wrap", ""));
    let out = simulate(dir.path(), &s, &[]);
    let h = forge::bfs::Reader::open(&out).unwrap().header().clone();
    let scene: serde_json::Value = serde_json::from_str(&h.scene_json).unwrap();
    assert_eq!(scene["obstacles"].as_array().unwrap().len(), 4);
    assert_eq!(scene["boids"]["clearance"], 12.0, "clearance defaults to r_sep");
    assert_eq!(scene["boids"]["look_ahead"], 1.0);
}

#[test]
fn the_renderer_draws_the_obstacles() {
    if !have_gpu("the_renderer_draws_the_obstacles") {
        return;
    }
    let dir = tmp();
    // One big rock in an empty world: its pixels differ from the background's.
    let body = r##"{"model": "boids", "agents": 1, "steps": 1, "world": {"size": [320, 180]},
        "obstacles": [{"circle": {"center": [160, 90], "radius": 50}}],
        "init": {"layout": "disc", "center": [20, 20], "radius": 1},
        "render": {"background": "#000000", "bloom": 0, "vignette": 0}}"##;
    let s = write(dir.path(), "s.json", body);
    let out = simulate(dir.path(), &s, &[]);
    let png = dir.path().join("still.png");
    succeeds(
        dir.path(),
        &["still", out.to_str().unwrap(), "-o", png.to_str().unwrap(), "--size", "320x180"],
    );
    let (w, h, px) = read_png(&png);
    let c = px.len() / (w as usize * h as usize);
    let at = |x: usize, y: usize| &px[(y * w as usize + x) * c..(y * w as usize + x) * c + 3];
    let centre = at(160, 90);
    let corner = at(300, 170);
    assert!(
        centre.iter().zip(corner).any(|(a, b)| a.abs_diff(*b) > 10),
        "the rock's centre {centre:?} looks like the background {corner:?}"
    );
}
