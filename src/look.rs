//! How a recording looks: command-line flags, else the recording's scene `render` section,
//! else defaults, resolved once into one validated [`Look`].

use anyhow::{anyhow, bail, Result};

use crate::bfs::Header;
use crate::render::camera::{self, CameraMode};
use crate::render::overlay::{self, Overlays};
use crate::render::{colormap, ColorMode, Fit, Look, View3, World};
use crate::scene::{self, Boundary};

/// Defaults used when neither a flag nor the recording's scene says otherwise.
pub mod defaults {
    pub const SIZE: [u32; 2] = [1920, 1080];
    pub const FPS: u32 = 30;
    pub const COLOR: &str = "speed";
    pub const COLORMAP: &str = "inferno";
    /// With the default map, the colour scale starts this far into it (a deep magenta), so
    /// the slowest agents stay clearly visible on the dark background instead of vanishing
    /// into inferno's near-black low end. A map chosen by flag or scene is used whole.
    pub const COLORMAP_FLOOR: f32 = 0.3;
    /// For `--color heading` (a cyclic map).
    pub const COLORMAP_HEADING: &str = "sinebow";
    /// Trails (when neither a flag nor the scene sets them): the light an agent leaves halves
    /// in this many seconds, whatever the frame rate.
    pub const TRAIL_HALF_LIFE_S: f32 = 0.15;
    pub const BLOOM: f32 = 0.5;
    pub const BACKGROUND: &str = "#05050a";
    pub const VIGNETTE: f32 = 0.25;
}

/// Look settings as given on the command line (all optional: the scene's, then defaults).
#[derive(Clone, Debug, Default)]
pub struct LookFlags {
    pub size: Option<[u32; 2]>,
    /// Frames per second of the video.
    pub fps: Option<u32>,
    pub color: Option<String>,
    pub colormap: Option<String>,
    pub range: Option<[f32; 2]>,
    pub trails: Option<f32>,
    pub bloom: Option<f32>,
    pub bloom_radius: Option<f32>,
    pub exposure: Option<f32>,
    pub background: Option<String>,
    pub point_size: Option<f32>,
    pub fit: Option<Fit>,
    pub follow: bool,
    pub vignette: Option<f32>,
    /// Shutter angle, degrees.
    pub motion_blur: Option<f32>,
    /// Overlay names (`--overlay`), or `["none"]`.
    pub overlay: Option<Vec<String>>,
    pub title: Option<String>,
    /// 3D recordings only.
    pub camera: Option<CameraMode>,
    pub eye: Option<[f32; 3]>,
    pub target: Option<[f32; 3]>,
    pub fov: Option<f32>,
    pub fog: Option<f32>,
    pub world_box: bool,
}

/// The 3D view from the flags, else the scene's `render` section (`None` for a 2D recording,
/// which refuses every 3D flag). The clip the orbit spans is filled in by the caller.
fn resolve_view3(f: &LookFlags, s: &scene::Render, dim: u8) -> Result<Option<View3>> {
    if dim != 3 {
        let given = [
            f.camera.map(|c| format!("--camera {}", c.name())),
            f.eye.map(|_| "--eye".to_string()),
            f.target.map(|_| "--target".to_string()),
            f.fov.map(|_| "--fov".to_string()),
            f.fog.map(|_| "--fog".to_string()),
            f.world_box.then(|| "--box".to_string()),
        ];
        if let Some(flag) = given.into_iter().flatten().next() {
            bail!(
                "{flag}: this recording is 2D; --camera, --eye, --target, --fov, --fog and --box apply to 3D recordings only"
            );
        }
        return Ok(None);
    }
    let v3 = |a: [f64; 3]| a.map(|x| x as f32);
    let flag_fixed = f.eye.is_some() || f.target.is_some();
    let scene_mode = match s.camera.as_deref() {
        None => None,
        Some("orbit") => Some(CameraMode::Orbit),
        Some("fixed") => Some(CameraMode::Fixed),
        Some("follow") => Some(CameraMode::Follow),
        Some("top") => Some(CameraMode::Top),
        Some(other) if f.camera.is_none() => {
            bail!("{}: unknown camera {other:?}", recorded("camera"))
        }
        Some(_) => None,
    };
    let mode = if let Some(m) = f.camera {
        m
    } else if flag_fixed {
        CameraMode::Fixed
    } else if f.follow {
        CameraMode::Follow
    } else if let Some(m) = scene_mode {
        m
    } else if s.eye.is_some() || s.target.is_some() {
        CameraMode::Fixed
    } else {
        CameraMode::Orbit
    };
    if flag_fixed && mode != CameraMode::Fixed {
        let flag = if f.eye.is_some() { "--eye" } else { "--target" };
        bail!(
            "{flag}: only with --camera fixed (the {} camera places itself)",
            mode.name()
        );
    }
    let (eye, target) = if mode == CameraMode::Fixed {
        (
            pick_opt(f.eye, s.eye.map(v3), "eye"),
            pick_opt(f.target, s.target.map(v3), "target"),
        )
    } else {
        (None, None)
    };
    for (p, who) in [&eye, &target].into_iter().flatten() {
        if !p.iter().all(|x| x.is_finite()) {
            bail!("{who}: must be three finite numbers X,Y,Z");
        }
    }
    if let (Some((e, e_who)), Some((t, t_who))) = (&eye, &target) {
        if camera::distance(*e, *t) <= 0.0 {
            bail!("{e_who} and {t_who}: must be different points");
        }
    }
    let (eye, target) = (eye.map(|(p, _)| p), target.map(|(p, _)| p));
    if mode == CameraMode::Top && f.fov.is_some() {
        bail!("--fov: the top camera is orthographic; use --camera orbit, fixed or follow");
    }
    let (fov, who) = pick(f.fov, s.fov.map(|x| x as f32), camera::DEFAULT_FOV, "fov");
    if !(fov.is_finite() && fov > 1.0 && fov < 170.0) {
        bail!("{who}: must be between 1 and 170 degrees, got {fov}");
    }
    let (fog, who) = pick(f.fog, s.fog.map(|x| x as f32), 0.0, "fog");
    if !(0.0..=1.0).contains(&fog) {
        bail!("{who}: must be in [0, 1], got {fog}");
    }
    Ok(Some(View3 {
        mode,
        eye,
        target,
        fov,
        fog,
        world_box: f.world_box || s.world_box.unwrap_or(false),
        clip: (0, 1),
    }))
}

/// The fields of a `render` section, as written in JSON.
const RENDER_FIELDS: &[&str] = &[
    "color",
    "colormap",
    "range",
    "trails",
    "bloom",
    "bloom_radius",
    "exposure",
    "background",
    "point_size",
    "overlay",
    "title",
    "motion_blur",
    "size",
    "fps",
    "camera",
    "eye",
    "target",
    "fov",
    "fog",
    "box",
];

/// A field of the recording's `render` section that did not parse: its name and why.
#[derive(Debug)]
pub struct BadField {
    pub field: String,
    pub message: String,
}

/// The recording's scene `render` section (empty if it has none), and the fields of it that
/// did not parse (a recording not written by forge may hold anything): each is left out and
/// reported, so that a flag can still stand in for it. Fields this build does not know are
/// reported as such (`field` is then not one of the known ones).
pub fn scene_render(h: &Header) -> (scene::Render, Vec<BadField>) {
    let mut bad = Vec::new();
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&h.scene_json) else {
        return (scene::Render::default(), bad);
    };
    let Some(r) = v.get("render").filter(|r| !r.is_null()) else {
        return (scene::Render::default(), bad);
    };
    let Some(obj) = r.as_object() else {
        bad.push(BadField {
            field: String::new(),
            message: format!("must be an object, got {r}"),
        });
        return (scene::Render::default(), bad);
    };
    let mut obj = obj.clone();
    // One bad field at a time: drop it and parse the rest again (at most once per field).
    loop {
        let value = serde_json::Value::Object(obj.clone());
        match serde_path_to_error::deserialize::<_, scene::Render>(value) {
            Ok(r) => return (r, bad),
            Err(e) => {
                let key = e
                    .path()
                    .iter()
                    .next()
                    .map(|seg| seg.to_string())
                    .filter(|k| obj.contains_key(k));
                let mut message = e.inner().to_string();
                // The unknown field's error has no path: find the key it names.
                let key = key.or_else(|| {
                    obj.keys()
                        .find(|k| !RENDER_FIELDS.contains(&k.as_str()))
                        .cloned()
                });
                let Some(key) = key else {
                    bad.push(BadField {
                        field: String::new(),
                        message,
                    });
                    return (scene::Render::default(), bad);
                };
                if !RENDER_FIELDS.contains(&key.as_str()) {
                    message = "not a field this build knows (ignored)".into();
                }
                obj.remove(&key);
                bad.push(BadField {
                    field: key,
                    message,
                });
            }
        }
    }
}

/// How the recording's `render.FIELD` is named in messages.
fn recorded(field: &str) -> String {
    format!("scene.render.{field} (in the recording)")
}

/// Fails on the first field of the recording's `render` section that did not parse, unless
/// the flag that would replace it was given (`given(field)`); fields this build does not
/// know are warned about and ignored.
fn check_bad_fields(bad: &[BadField], given: impl Fn(&str) -> bool) -> Result<()> {
    for b in bad {
        if b.field.is_empty() {
            bail!("scene.render (in the recording): {}", b.message);
        }
        if !RENDER_FIELDS.contains(&b.field.as_str()) {
            eprintln!("warning: {}: {}", recorded(&b.field), b.message);
        } else if !given(&b.field) {
            bail!(
                "{}: {} (a flag overrides it: --{})",
                recorded(&b.field),
                b.message,
                b.field.replace('_', "-")
            );
        }
    }
    Ok(())
}

/// A look resolved for one recording, with the video's frame rate.
#[derive(Clone, Debug)]
pub struct Resolved {
    pub look: Look,
    pub fps: u32,
    /// Neither a flag nor the scene set the exposure / the sprite size: the caller measures
    /// them on the recording (`video::exposure`); `look` holds placeholders until then.
    pub auto_exposure: bool,
    pub auto_point_size: bool,
}

/// A setting from the flag, else the recording's `render` section, else the default; with the
/// name to blame when it is out of range (the flag, or the recording's field).
fn pick<T>(flag: Option<T>, scene: Option<T>, default: T, name: &str) -> (T, String) {
    match (flag, scene) {
        (Some(v), _) => (v, format!("--{name}")),
        (None, Some(v)) => (v, recorded(&name.replace('-', "_"))),
        (None, None) => (default, format!("--{name}")),
    }
}

/// Like [`pick`] for a setting with no default.
fn pick_opt<T>(flag: Option<T>, scene: Option<T>, name: &str) -> Option<(T, String)> {
    match (flag, scene) {
        (Some(v), _) => Some((v, format!("--{name}"))),
        (None, Some(v)) => Some((v, recorded(&name.replace('-', "_")))),
        (None, None) => None,
    }
}

/// Flags, else the scene's `render` section, else defaults; validated, once.
pub fn resolve_look(f: &LookFlags, h: &Header) -> Result<Resolved> {
    let (s, bad) = scene_render(h);
    check_bad_fields(&bad, |field| match field {
        "color" => f.color.is_some(),
        "colormap" => f.colormap.is_some(),
        "range" => f.range.is_some(),
        "trails" => f.trails.is_some(),
        "bloom" => f.bloom.is_some(),
        "bloom_radius" => f.bloom_radius.is_some(),
        "exposure" => f.exposure.is_some(),
        "background" => f.background.is_some(),
        "point_size" => f.point_size.is_some(),
        "size" => f.size.is_some(),
        "fps" => f.fps.is_some(),
        "camera" => f.camera.is_some(),
        "eye" => f.eye.is_some(),
        "target" => f.target.is_some(),
        "fov" => f.fov.is_some(),
        "fog" => f.fog.is_some(),
        "box" => f.world_box,
        "motion_blur" => f.motion_blur.is_some(),
        "overlay" => f.overlay.is_some(),
        "title" => f.title.is_some(),
        _ => false,
    })?;
    let view3 = resolve_view3(f, &s, h.dim)?;
    let ([width, height], who) = pick(f.size, s.size, defaults::SIZE, "size");
    if width == 0 || height == 0 {
        bail!("{who}: must be above zero, got {width}x{height}");
    }
    if width % 2 == 1 || height % 2 == 1 {
        bail!("{who}: H.264 in yuv420p needs even sizes, got {width}x{height}");
    }
    let (fps, who) = pick(f.fps, s.fps, defaults::FPS, "fps");
    if fps == 0 || fps > 240 {
        bail!("{who}: must be in 1..=240, got {fps}");
    }
    let (color_name, who) = pick(
        f.color.clone(),
        s.color.clone(),
        defaults::COLOR.into(),
        "color",
    );
    let color = ColorMode::parse(&color_name).ok_or_else(|| {
        anyhow!(
            "{who}: unknown colour mode {color_name:?} (one of: {})",
            crate::vocab::COLORS.join(", ")
        )
    })?;
    let default_map = if color == ColorMode::Heading {
        defaults::COLORMAP_HEADING
    } else {
        defaults::COLORMAP
    };
    let (colormap, who) = pick(
        f.colormap.clone(),
        s.colormap.clone(),
        default_map.into(),
        "colormap",
    );
    let colormap_floor = if f.colormap.is_none() && s.colormap.is_none() {
        defaults::COLORMAP_FLOOR
    } else {
        0.0
    };
    if !colormap::NAMES.contains(&colormap.as_str()) {
        bail!(
            "{who}: unknown colour map {colormap:?} (one of: {})",
            colormap::NAMES.join(", ")
        );
    }
    if color == ColorMode::Heading && !colormap::is_cyclic(&colormap) {
        eprintln!(
            "warning: --color heading with the non-cyclic map {colormap}: headings just either side of 180° get far-apart colours (twilight or sinebow wrap)"
        );
    }
    let range = match (f.range, s.range) {
        (Some(r), _) => Some((r, "--range".to_string())),
        (None, Some(r)) => Some(([r[0] as f32, r[1] as f32], recorded("range"))),
        (None, None) => None,
    };
    if let Some(([a, b], who)) = &range {
        if !(a.is_finite() && b.is_finite() && a < b) {
            bail!("{who}: must be A..B with A < B, got {a}..{b}");
        }
    }
    let f32s = |x: Option<f64>| x.map(|x| x as f32);
    let auto_trails = 0.5f32.powf(1.0 / (defaults::TRAIL_HALF_LIFE_S * fps as f32));
    let (trails, who) = pick(f.trails, f32s(s.trails), auto_trails, "trails");
    if !(0.0..1.0).contains(&trails) {
        bail!("{who}: must be in [0, 1), got {trails}");
    }
    let nonneg = |(x, who): (f32, String)| -> Result<f32> {
        if !x.is_finite() || x < 0.0 {
            bail!("{who}: must be a number >= 0, got {x}");
        }
        Ok(x)
    };
    let bloom = nonneg(pick(f.bloom, f32s(s.bloom), defaults::BLOOM, "bloom"))?;
    let (bloom_radius, who) = pick(f.bloom_radius, f32s(s.bloom_radius), 1.0, "bloom-radius");
    if !(0.25..=4.0).contains(&bloom_radius) {
        bail!("{who}: must be in 0.25..=4 (times the default reach), got {bloom_radius}");
    }
    // Unset: measured on the recording later (1.0 and 1.5 hold the places until then).
    let auto_exposure = f.exposure.is_none() && s.exposure.is_none();
    let exposure = nonneg(pick(f.exposure, f32s(s.exposure), 1.0, "exposure"))?;
    // The sprite size is measured with the exposure, as a pair: a scene or flag that sets the
    // exposure was tuned with the 1.5 px default.
    let auto_point_size = auto_exposure && f.point_size.is_none() && s.point_size.is_none();
    let point_size = nonneg(pick(f.point_size, f32s(s.point_size), 1.5, "point-size"))?;
    let vignette = nonneg(pick(f.vignette, None, defaults::VIGNETTE, "vignette"))?;
    let overlay = resolve_overlay(f, &s, &h.scene_name)?;
    let (shutter, who) = pick(f.motion_blur, f32s(s.motion_blur), 0.0, "motion-blur");
    if !(0.0..=360.0).contains(&shutter) {
        bail!("{who}: must be a shutter angle in [0, 360] degrees, got {shutter}");
    }
    let (bg_text, who) = pick(
        f.background.clone(),
        s.background.clone(),
        defaults::BACKGROUND.into(),
        "background",
    );
    let background = scene::parse_hex_color(&bg_text)
        .ok_or_else(|| anyhow!("{who}: must be a colour like \"#0a0a12\", got {bg_text:?}"))?;
    Ok(Resolved {
        look: Look {
            width,
            height,
            color,
            colormap,
            colormap_floor,
            range: range.map(|(r, _)| r),
            trails,
            bloom,
            bloom_radius,
            exposure,
            background,
            point_size,
            fit: f.fit.unwrap_or(Fit::Letterbox),
            follow: f.follow,
            vignette,
            shutter,
            overlay,
            view3,
        },
        fps,
        auto_exposure,
        auto_point_size,
    })
}

/// The overlays: `--overlay` (or `none`), else the scene's `render.overlay`; a `--title` (or
/// the scene's `render.title`) shows the title too. The title's text: that, else the scene's
/// name.
fn resolve_overlay(f: &LookFlags, s: &scene::Render, scene_name: &str) -> Result<Overlays> {
    let (names, who) = match (&f.overlay, &s.overlay) {
        (Some(n), _) => (n.clone(), "--overlay".to_string()),
        (None, Some(n)) => (n.clone(), recorded("overlay")),
        (None, None) => (Vec::new(), String::new()),
    };
    let mut o = Overlays::default();
    let mut title = false;
    for n in &names {
        match n.as_str() {
            "colorbar" => o.colorbar = true,
            "time" => o.time = true,
            "title" => title = true,
            "scale" => o.scale = true,
            "none" if names.len() == 1 => {}
            other => bail!(
                "{who}: unknown overlay {other:?} (one or more of: {}; or none)",
                overlay::NAMES.join(", ")
            ),
        }
    }
    let text = f.title.clone().or_else(|| s.title.clone());
    if title || f.title.is_some() || (s.title.is_some() && f.overlay.is_none()) {
        let t = text.unwrap_or_else(|| scene_name.to_string());
        o.title = (!t.trim().is_empty()).then_some(t);
    }
    Ok(o)
}

pub fn world_of(h: &Header) -> World {
    World {
        dim: h.dim as usize,
        size: [h.world_size[0], h.world_size[1]],
        depth: if h.dim == 3 { h.world_size[2] } else { 0.0 },
        wrap: h.boundary == Boundary::Wrap,
        open: h.boundary == Boundary::Open,
        dt: h.dt,
        frame_dt: h.dt * h.record_every.max(1) as f32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field of the scene's `render` section is one this build knows: serde's own list
    /// (from its unknown-field message) against `RENDER_FIELDS`, which decides whether a bad
    /// value is an error or an ignored newer field.
    #[test]
    fn render_fields_are_the_sections_fields() {
        let e = serde_json::from_str::<scene::Render>(r#"{"no such field": 1}"#).unwrap_err();
        let msg = e.to_string();
        let list = msg.split("expected one of ").nth(1).expect(&msg);
        let mut serde_fields: Vec<&str> = list
            .split(',')
            .map(|f| {
                f.trim()
                    .trim_matches(|c: char| c == '`' || c.is_whitespace())
            })
            .map(|f| f.split('`').next().unwrap_or(f))
            .collect();
        serde_fields.sort();
        let mut ours = RENDER_FIELDS.to_vec();
        ours.sort();
        assert_eq!(serde_fields, ours, "{msg}");
    }
}
