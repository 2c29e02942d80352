//! Obstacles: solid shapes in the world that boids steer around (look-ahead avoidance) and never
//! end a step inside (src/sim/obstacles/). The scene lists them; the recording's scene carries
//! them, so the renderer draws them from the recording alone.
//!
//! ```json
//! "obstacles": [
//!   {"circle":  {"center": [600, 540], "radius": 80}},
//!   {"box":     {"min": [1200, 300], "max": [1300, 700]}},
//!   {"segment": {"from": [200, 900], "to": [700, 950], "radius": 6}}
//! ]
//! ```
//! In 3D, `circle` is a sphere (`sphere` is accepted as the same shape), `box` is a box and
//! `segment` a capsule. How strongly and how far ahead boids avoid them is in `boids`
//! (`w_avoid`, `look_ahead`, `clearance`).

use serde::{Deserialize, Serialize};

use super::ctx::Ctx;

/// Most obstacles a scene may list: every boid checks each nearby one every step.
pub const MAX_OBSTACLES: usize = 4096;

/// One obstacle, as resolved (coordinates in world units, `dim` of them).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum Obstacle {
    /// A disc (2D) or ball (3D).
    #[serde(alias = "sphere")]
    Circle { center: Vec<f32>, radius: f32 },
    /// An axis-aligned box, `min < max` on every axis.
    Box { min: Vec<f32>, max: Vec<f32> },
    /// The points within `radius` of the segment `from`–`to` (a capsule; a wall when thin).
    Segment {
        from: Vec<f32>,
        to: Vec<f32>,
        radius: f32,
    },
}

impl Obstacle {
    pub fn kind(&self) -> &'static str {
        match self {
            Obstacle::Circle { .. } => "circle",
            Obstacle::Box { .. } => "box",
            Obstacle::Segment { .. } => "segment",
        }
    }
}

/// One obstacle as written: any JSON, checked here so that every problem gets its path.
pub(super) type ObstacleFile = serde_json::Value;

/// A point of `dim` finite coordinates at `path`.
fn point(cx: &mut Ctx, path: &str, v: Option<&serde_json::Value>, dim: usize) -> Vec<f32> {
    let zero = vec![0.0; dim];
    let Some(v) = v else {
        cx.err(path, "required");
        return zero;
    };
    let Some(a) = v.as_array() else {
        cx.err(path, format!("must be an array of {dim} numbers, got {v}"));
        return zero;
    };
    if a.len() != dim {
        cx.err(
            path,
            format!(
                "must have {dim} coordinates (the scene is {dim}D), got {}",
                a.len()
            ),
        );
        return zero;
    }
    let mut out = Vec::with_capacity(dim);
    for (k, x) in a.iter().enumerate() {
        match x.as_f64() {
            Some(x) if x.is_finite() && super::ctx::within_largest(x) => out.push(x as f32),
            _ => {
                cx.err(
                    &format!("{path}[{k}]"),
                    format!("must be a finite number, got {x}"),
                );
                out.push(0.0);
            }
        }
    }
    out
}

/// A radius > 0 at `path`.
fn radius(cx: &mut Ctx, path: &str, v: Option<&serde_json::Value>) -> f32 {
    let Some(v) = v else {
        cx.err(path, "required");
        return 1.0;
    };
    match v.as_f64() {
        Some(x)
            if x.is_finite()
                && x > 0.0
                && super::ctx::within_largest(x)
                && (x as f32).is_normal() =>
        {
            x as f32
        }
        _ => {
            cx.err(path, format!("must be a number > 0, got {v}"));
            1.0
        }
    }
}

/// The fields of `obj` other than `known` are errors at `path.field`.
fn unknown(
    cx: &mut Ctx,
    path: &str,
    obj: &serde_json::Map<String, serde_json::Value>,
    known: &[&str],
) {
    for k in obj.keys().filter(|k| !known.contains(&k.as_str())) {
        cx.err(
            &format!("{path}.{k}"),
            format!("unknown field `{k}`, expected one of {}", list(known)),
        );
    }
}

fn list(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

const KINDS: [&str; 4] = ["circle", "sphere", "box", "segment"];

/// `scene.obstacles`: each entry one shape, checked with its path (`scene.obstacles[2].circle.radius`).
pub(super) fn resolve(cx: &mut Ctx, given: &[ObstacleFile], dim: usize) -> Vec<Obstacle> {
    if given.len() > MAX_OBSTACLES {
        cx.err(
            "scene.obstacles",
            format!("at most {MAX_OBSTACLES} obstacles, got {}", given.len()),
        );
        return Vec::new();
    }
    let mut out = Vec::new();
    for (i, o) in given.iter().enumerate() {
        let path = format!("scene.obstacles[{i}]");
        let entry = o.as_object().filter(|m| m.len() == 1);
        let Some((kind, body)) = entry.and_then(|m| m.iter().next()) else {
            cx.err(
                &path,
                format!(
                    "must be one shape, an object with one key of {} (e.g. {{\"circle\": \
                     {{\"center\": [x, y], \"radius\": r}}}}), got {o}",
                    list(&KINDS)
                ),
            );
            continue;
        };
        let path = format!("{path}.{kind}");
        if !KINDS.contains(&kind.as_str()) {
            cx.err(
                &path,
                format!("unknown shape `{kind}`, expected one of {}", list(&KINDS)),
            );
            continue;
        }
        let Some(b) = body.as_object() else {
            cx.err(&path, format!("must be an object, got {body}"));
            continue;
        };
        let at = |f: &str| format!("{path}.{f}");
        match kind.as_str() {
            "circle" | "sphere" => {
                unknown(cx, &path, b, &["center", "radius"]);
                out.push(Obstacle::Circle {
                    center: point(cx, &at("center"), b.get("center"), dim),
                    radius: radius(cx, &at("radius"), b.get("radius")),
                });
            }
            "box" => {
                unknown(cx, &path, b, &["min", "max"]);
                let min = point(cx, &at("min"), b.get("min"), dim);
                let max = point(cx, &at("max"), b.get("max"), dim);
                for k in 0..dim.min(min.len()).min(max.len()) {
                    if min[k] >= max[k] {
                        cx.err(
                            &format!("{}[{k}]", at("max")),
                            format!("must be > min[{k}] = {}, got {}", min[k], max[k]),
                        );
                    }
                }
                out.push(Obstacle::Box { min, max });
            }
            _ => {
                unknown(cx, &path, b, &["from", "to", "radius"]);
                out.push(Obstacle::Segment {
                    from: point(cx, &at("from"), b.get("from"), dim),
                    to: point(cx, &at("to"), b.get("to"), dim),
                    radius: radius(cx, &at("radius"), b.get("radius")),
                });
            }
        }
    }
    out
}
