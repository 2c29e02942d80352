//! The scene's `render` section: how a recording looks by default (`forge render` flags
//! override it). Validated here with JSON paths; resolved with the flags in `crate::look`.

use serde::{Deserialize, Serialize};

use super::ctx::Ctx;
use crate::vocab;

/// Rendering defaults carried in the recording; `forge render` flags override them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Render {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub colormap: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range: Option<[f64; 2]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trails: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bloom: Option<f64>,
    /// Bloom's size relative to the default, 0.25..=4 (`forge render --bloom-radius`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bloom_radius: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exposure: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub point_size: Option<f64>,
    /// Overlays: any of "colorbar", "time", "title", "scale" (`forge render --overlay`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overlay: Option<Vec<String>>,
    /// The title overlay's text [default: the scene's name].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Shutter angle in degrees (0 = no motion blur, 180 = film's usual, up to 360).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub motion_blur: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<[u32; 2]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fps: Option<u32>,
    /// 3D only: orbit, fixed, follow or top (`forge render --camera`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub camera: Option<String>,
    /// 3D, fixed camera: eye and target in world units.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eye: Option<[f64; 3]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<[f64; 3]>,
    /// 3D: vertical field of view, degrees.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fov: Option<f64>,
    /// 3D: fog strength, 0..1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fog: Option<f64>,
    /// 3D: draw the world box.
    #[serde(rename = "box", skip_serializing_if = "Option::is_none")]
    pub world_box: Option<bool>,
}

/// Checks every value of a `render` section, naming its JSON path.
pub(super) fn check(r: &Render, dim: usize, cx: &mut Ctx) {
    if let Some(c) = &r.color {
        if !vocab::COLORS.contains(&c.as_str()) {
            cx.err(
                "scene.render.color",
                format!(
                    "unknown colour mode \"{c}\" (one of: {})",
                    vocab::COLORS.join(", ")
                ),
            );
        }
    }
    if let Some(c) = &r.colormap {
        if !vocab::COLORMAPS.contains(&c.as_str()) {
            cx.err(
                "scene.render.colormap",
                format!(
                    "unknown colour map \"{c}\" (one of: {})",
                    vocab::COLORMAPS.join(", ")
                ),
            );
        }
    }
    if let Some(t) = r.trails {
        if !(0.0..1.0).contains(&t) {
            cx.err("scene.render.trails", format!("must be in [0, 1), got {t}"));
        }
    }
    for (name, v) in [
        ("bloom", r.bloom),
        ("exposure", r.exposure),
        ("point_size", r.point_size),
    ] {
        if let Some(x) = v {
            if !x.is_finite() || x < 0.0 {
                cx.err(
                    &format!("scene.render.{name}"),
                    format!("must be >= 0, got {x}"),
                );
            }
        }
    }
    if let Some(names) = &r.overlay {
        for (i, n) in names.iter().enumerate() {
            if !crate::vocab::OVERLAYS.contains(&n.as_str()) {
                cx.err(
                    &format!("scene.render.overlay[{i}]"),
                    format!(
                        "unknown overlay \"{n}\" (one of: {})",
                        crate::vocab::OVERLAYS.join(", ")
                    ),
                );
            }
        }
    }
    if let Some(b) = r.bloom_radius {
        if !(0.25..=4.0).contains(&b) {
            cx.err(
                "scene.render.bloom_radius",
                format!("must be in 0.25..=4 (times the default reach), got {b}"),
            );
        }
    }
    if let Some(m) = r.motion_blur {
        if !(0.0..=360.0).contains(&m) {
            cx.err(
                "scene.render.motion_blur",
                format!("must be a shutter angle in [0, 360] degrees, got {m}"),
            );
        }
    }
    if let Some([w, h]) = r.size {
        if w == 0 || h == 0 || w % 2 == 1 || h % 2 == 1 || w > 8192 || h > 8192 {
            cx.err(
                "scene.render.size",
                format!("must be two even numbers in 2..=8192, got [{w}, {h}]"),
            );
        }
    }
    if let Some(fps) = r.fps {
        if fps == 0 || fps > 240 {
            cx.err("scene.render.fps", format!("must be in 1..=240, got {fps}"));
        }
    }
    let three_d = [
        ("camera", r.camera.is_some()),
        ("eye", r.eye.is_some()),
        ("target", r.target.is_some()),
        ("fov", r.fov.is_some()),
        ("fog", r.fog.is_some()),
        ("box", r.world_box.is_some()),
    ];
    if dim != 3 {
        for (name, given) in three_d {
            if given {
                cx.err(
                    &format!("scene.render.{name}"),
                    "applies to 3D scenes only (dim 3)",
                );
            }
        }
    }
    if let Some(c) = &r.camera {
        if !vocab::CAMERAS.contains(&c.as_str()) {
            cx.err(
                "scene.render.camera",
                format!(
                    "unknown camera \"{c}\" (one of: {})",
                    vocab::CAMERAS.join(", ")
                ),
            );
        }
    }
    for (name, v) in [("eye", r.eye), ("target", r.target)] {
        if let Some(p) = v {
            if !p.iter().all(|x| x.is_finite()) {
                cx.err(
                    &format!("scene.render.{name}"),
                    "must be three finite numbers [x, y, z]",
                );
            }
        }
    }
    if let Some(f) = r.fov {
        if !(f.is_finite() && f > 1.0 && f < 170.0) {
            cx.err(
                "scene.render.fov",
                format!("must be between 1 and 170 degrees, got {f}"),
            );
        }
    }
    if let Some(f) = r.fog {
        if !(0.0..=1.0).contains(&f) {
            cx.err("scene.render.fog", format!("must be in [0, 1], got {f}"));
        }
    }
    if let Some(b) = &r.background {
        if parse_hex_color(b).is_none() {
            cx.err(
                "scene.render.background",
                format!("must be a colour like \"#0a0a12\", got \"{b}\""),
            );
        }
    }
}

/// `#rrggbb` → linear-ish 0..1 components (as written; sRGB decoding is the renderer's job).
pub fn parse_hex_color(s: &str) -> Option<[f32; 3]> {
    let h = s.strip_prefix('#')?;
    if h.len() != 6 || !h.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let v = u32::from_str_radix(h, 16).ok()?;
    Some([
        ((v >> 16) & 255) as f32 / 255.0,
        ((v >> 8) & 255) as f32 / 255.0,
        (v & 255) as f32 / 255.0,
    ])
}
