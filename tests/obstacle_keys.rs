//! Obstacles on the timeline: keys that move and resize them, events that add and remove them.
//! Through the real binary: no agent ends a step inside an obstacle there at that step (a moving
//! one pushes them ahead of it, an added one puts those under it out); a removed one lets them
//! in; the run keeps the determinism contract; the renderer draws each frame's obstacles.

use std::path::Path;

use crate::common::*;
use crate::obstacles::{depth, Shape};

/// A disc that grows as it crosses the world, through a crowd (world 320×180: one unit a
/// pixel in a 320×180 still).
const MOVING: &str = r##"{"model": "boids", "agents": 1000, "steps": 90, "seed": 3,
 "world": {"size": [320, 180], "boundary": "reflect"},
 "obstacles": [{"circle": {"center": [60, 90], "radius": 25}}],
 "timeline": [{"step": 90, "set": {"obstacles[0].center": [260, 90], "obstacles[0].radius": 35},
               "interpolation": "linear"}],
 "render": {"background": "#000000", "bloom": 0, "vignette": 0}}"##;

/// Two boxes: the left half of the world, removed at step 30; another, added at step 60.
const EVENTS: &str = r##"{"model": "boids", "agents": 800, "steps": 90, "seed": 3,
 "world": {"size": [320, 180], "boundary": "reflect"},
 "obstacles": [{"box": {"min": [0, 0], "max": [160, 180]}},
               {"box": {"min": [200, 45], "max": [280, 135]}}],
 "timeline": [{"step": 30, "remove": ["obstacles[0]"]}, {"step": 60, "add": ["obstacles[1]"]}],
 "render": {"background": "#000000", "bloom": 0, "vignette": 0}}"##;

/// The moving disc at `step`, as its linear key gives it.
fn disc_at(step: u64) -> Shape {
    let t = step.min(90) as f64 / 90.0;
    let c = [60.0 + 200.0 * t, 90.0, 0.0];
    Shape::Round {
        a: c,
        b: c,
        r: 25.0 + 10.0 * t,
    }
}

fn left_box() -> Shape {
    Shape::Box {
        lo: [0.0, 0.0, -1.0],
        hi: [160.0, 180.0, 1.0],
    }
}

fn right_box() -> Shape {
    Shape::Box {
        lo: [200.0, 45.0, -1.0],
        hi: [280.0, 135.0, 1.0],
    }
}

/// Per frame: how many agents are inside `shape` (deeper than 1e-3).
fn inside(bfs: &Path, shape: impl Fn(u64) -> Shape) -> Vec<usize> {
    let mut r = forge::bfs::Reader::open(bfs).unwrap();
    (0..r.frame_count())
        .map(|k| {
            let f = r.read_frame(k).unwrap();
            let n = f.agents(2);
            let s = shape(f.step);
            (0..n)
                .filter(|&i| depth(&s, [f.pos[i] as f64, f.pos[n + i] as f64, 0.0]) > 1e-3)
                .count()
        })
        .collect()
}

/// The obstacles in effect for the step that made frame `step` (the step before it; at
/// step 0 those of step 0).
fn made_by(step: u64) -> u64 {
    step.saturating_sub(1)
}

#[test]
fn a_moving_obstacle_pushes_the_agents_it_meets() {
    let d = tmp();
    write(d.path(), "moving.json", MOVING);
    succeeds(d.path(), &["simulate", "moving.json", "-o", "m.bfs", "-q"]);
    let keyed = inside(&d.path().join("m.bfs"), |s| disc_at(made_by(s)));
    assert!(
        keyed.iter().all(|&c| c == 0),
        "agents inside the moving disc, per frame: {keyed:?}"
    );
    // The check can fail: where the disc does not move, agents are where it would have been.
    let mut plain: serde_json::Value = serde_json::from_str(MOVING).unwrap();
    plain.as_object_mut().unwrap().remove("timeline");
    write(d.path(), "plain.json", &plain.to_string());
    succeeds(d.path(), &["simulate", "plain.json", "-o", "p.bfs", "-q"]);
    let unmoved: usize = inside(&d.path().join("p.bfs"), |s| disc_at(made_by(s)))
        .iter()
        .sum();
    assert!(
        unmoved > 100,
        "only {unmoved} agents in the disc's path without its keys"
    );
}

#[test]
fn added_obstacles_put_agents_out_and_removed_ones_let_them_in() {
    let d = tmp();
    write(d.path(), "events.json", EVENTS);
    succeeds(d.path(), &["simulate", "events.json", "-o", "e.bfs", "-q"]);
    let bfs = d.path().join("e.bfs");
    let left = inside(&bfs, |_| left_box());
    let right = inside(&bfs, |_| right_box());
    // Frames 0..=30 were made with the left box there; from frame 31 on without it.
    assert!(left[..=30].iter().all(|&c| c == 0), "left box: {left:?}");
    assert!(left[90] > 50, "nobody entered the removed box: {left:?}");
    // The right box is absent until step 60: agents start in it (placed without it), and
    // the step from 60 to 61 puts every one of them out.
    assert!(right[0] > 50 && right[60] > 50, "right box: {right:?}");
    assert!(right[61..].iter().all(|&c| c == 0), "right box: {right:?}");
    // `forge info` lists the events as keys of the timeline.
    let info = succeeds(d.path(), &["info", "e.bfs"]).stdout;
    has(&info, "obstacles[0].present = 0");
    has(&info, "obstacles[1].present = 1");
}

#[test]
fn obstacle_keys_keep_the_determinism_contract() {
    let d = tmp();
    for (name, text) in [("moving", MOVING), ("events", EVENTS)] {
        write(d.path(), &format!("{name}.json"), text);
        let mut bytes = Vec::new();
        for (threads, search) in [("1", "grid"), ("2", "grid"), ("2", "brute")] {
            let out = format!("{name}-{threads}-{search}.bfs");
            let scene = format!("{name}.json");
            succeeds(
                d.path(),
                &[
                    "simulate",
                    &scene,
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
        let scene = format!("{name}.json");
        cuda_runs_as_the_cpu(d.path(), &[&scene], "with obstacle keys");
    }
}

/// The renderer draws each frame's obstacles: one unit is one pixel (y up, symmetric about
/// the middle row here), and an obstacle's inside is its opaque fill colour.
#[test]
fn the_renderer_draws_each_frames_obstacles() {
    if !have_gpu("the_renderer_draws_each_frames_obstacles") {
        return;
    }
    let d = tmp();
    write(d.path(), "moving.json", MOVING);
    write(d.path(), "events.json", EVENTS);
    succeeds(d.path(), &["simulate", "moving.json", "-o", "m.bfs", "-q"]);
    succeeds(d.path(), &["simulate", "events.json", "-o", "e.bfs", "-q"]);
    let still = |rec: &str, k: u64| {
        let png = d.path().join(format!("{rec}-{k}.png"));
        let k = k.to_string();
        succeeds(
            d.path(),
            &[
                "still",
                rec,
                "--frame",
                &k,
                "--size",
                "320x180",
                "-o",
                png.to_str().unwrap(),
                "-q",
            ],
        );
        let (w, _, px) = read_png(&png);
        let c = px.len() / (w as usize * 180);
        move |x: usize, y: usize| px[(y * w as usize + x) * c..][..3].to_vec()
    };
    let (e10, e45, e75) = (still("e.bfs", 10), still("e.bfs", 45), still("e.bfs", 75));
    let fill = e10(80, 90);
    assert!(
        fill != e10(300, 10),
        "the box's fill {fill:?} is the background"
    );
    assert!(
        e10(240, 90) != fill,
        "the right box is drawn before it is added"
    );
    assert!(
        e45(80, 90) != fill,
        "the left box is drawn after it is removed"
    );
    assert!(e75(240, 90) == fill, "the added box is not drawn");
    // The disc's centre, where its keys put it at frames 0, 45 and 90.
    let (m0, m45, m90) = (still("m.bfs", 0), still("m.bfs", 45), still("m.bfs", 90));
    let fill = m0(60, 90);
    assert!(
        m0(160, 90) != fill,
        "the disc is drawn at its frame-45 place at frame 0"
    );
    assert!(
        m45(160, 90) == fill,
        "the disc is not at (160, 90) at frame 45"
    );
    assert!(
        m90(260, 90) == fill,
        "the disc is not at (260, 90) at frame 90"
    );
    assert!(
        m90(60, 90) != fill,
        "the disc is still drawn where it started"
    );
}
