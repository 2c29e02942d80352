//! The look of a render, resolved once: the layers of a [`Look`] (flags, then a `--look` file,
//! then the recording's `render` section) merged, checked, and what none of them sets filled
//! in — from defaults, or measured over the *whole* recording (colour range, exposure, sprite
//! size, the orbit's period), never over the frames a command happens to render. So frame K
//! is the same image in a still, a whole render, a `--frames` clip and every chunk.
//!
//! The result is both the renderer's [`Settings`] and the resolved [`Look`] with every field
//! set (`--print-look`): fed back with `--look`, it resolves to the same settings.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};

use super::exposure;
use super::ranges::{density_range_3d, speed_range};
use crate::bfs::{Header, Reader};
use crate::look::{self, CameraMode, ColorMode, Colormap, Fit, Look, Overlay, Size, Span};
use crate::render::camera;
use crate::render::overlay::Overlays;
use crate::render::{Settings, View3, World};
use crate::scene::Boundary;

/// Defaults for what no layer sets and nothing is measured for.
pub mod defaults {
    use crate::look::{Rgb, Size};
    pub const SIZE: Size = Size([1920, 1080]);
    pub const FPS: u32 = 30;
    /// With the default map, the colour scale starts this far into it (a deep magenta), so
    /// the slowest agents stay clearly visible on the dark background instead of vanishing
    /// into inferno's near-black low end. A map chosen by a layer is used whole.
    pub const COLORMAP_START: f32 = 0.3;
    /// Trails: the light an agent leaves halves in this many seconds, whatever the frame rate.
    pub const TRAIL_HALF_LIFE_S: f32 = 0.15;
    pub const BLOOM: f32 = 0.5;
    pub const BACKGROUND: Rgb = Rgb([0x05, 0x05, 0x0a]);
    pub const VIGNETTE: f32 = 0.25;
    /// Point size when the exposure is set but the point size is not.
    pub const POINT_SIZE: f32 = 1.5;
    /// The orbit turns at most once in this many seconds of video.
    pub const MIN_ORBIT_VIDEO_S: f32 = 20.0;
}

/// The look's layers above the recording's own `render` section.
#[derive(Clone, Debug, Default)]
pub struct Layers {
    /// The command-line flags.
    pub flags: Look,
    /// `--look FILE`, with its path.
    pub file: Option<(PathBuf, Look)>,
}

impl Layers {
    /// The flags alone.
    pub fn flags(flags: Look) -> Layers {
        Layers { flags, file: None }
    }
}

/// A resolved look.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// What the renderer takes.
    pub settings: Settings,
    pub fps: u32,
    /// Every setting as resolved (`--print-look`).
    pub look: Look,
    /// The settings measured on the recording (JSON names), for the one line that says so.
    pub measured: Vec<&'static str>,
}

impl Resolved {
    /// One line: what was measured and what the trails are.
    pub fn summary(&self) -> String {
        let l = &self.look;
        let tag = |f: &str| {
            if self.measured.contains(&f) {
                " (measured)"
            } else {
                ""
            }
        };
        let mut s = format!(
            "look: exposure {:.2}{}, point size {:.2}{}, trails {:.2}",
            l.exposure.unwrap_or(0.0),
            tag("exposure"),
            l.point_size.unwrap_or(0.0),
            tag("point_size"),
            l.trails.unwrap_or(0.0),
        );
        if let Some(Span([a, b])) = l.range {
            s.push_str(&format!(", range {a:.3}..{b:.3}{}", tag("range")));
        }
        s.push_str(" (--print-look prints them all; set any with its flag or --look)");
        s
    }
}

/// What the renderer knows about the world from the file's header.
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

/// One layer of the look and how its fields are named in messages.
struct Layer {
    look: Look,
    kind: Kind,
}

enum Kind {
    Flags,
    File(PathBuf),
    Recording,
}

impl Layer {
    fn name(&self, field: &str) -> String {
        match &self.kind {
            Kind::Flags => Look::flag(field),
            Kind::File(p) => format!("--look {}: {field}", p.display()),
            Kind::Recording => recorded(field),
        }
    }
}

/// How the recording's `render.FIELD` is named in messages.
fn recorded(field: &str) -> String {
    format!("scene.render.{field} (in the recording)")
}

/// A field of the recording's `render` section that does not parse.
#[derive(Debug)]
struct BadField {
    field: String,
    message: String,
    /// A field this build knows (else a newer forge's, ignored with a warning).
    known: bool,
}

/// The recording's `render` section (empty if it has none), and the fields of it that did not
/// parse: each is left out and reported (a recording not written by this build may hold
/// anything), so that a flag can still stand in for it.
fn recording_layer(h: &Header) -> Result<(Look, Vec<BadField>)> {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&h.scene_json) else {
        return Ok((Look::default(), Vec::new()));
    };
    let Some(r) = v.get("render").filter(|r| !r.is_null()) else {
        return Ok((Look::default(), Vec::new()));
    };
    let Some(obj) = r.as_object() else {
        bail!("scene.render (in the recording): must be an object, got {r}");
    };
    let mut good = serde_json::Map::new();
    let mut bad = Vec::new();
    for (k, val) in obj {
        if !Look::fields().contains(&k.as_str()) {
            bad.push(BadField {
                field: k.clone(),
                message: "not a field this build knows (ignored)".into(),
                known: false,
            });
            continue;
        }
        let one = serde_json::Map::from_iter([(k.clone(), val.clone())]);
        match serde_json::from_value::<Look>(serde_json::Value::Object(one)) {
            Ok(_) => {
                good.insert(k.clone(), val.clone());
            }
            Err(e) => bad.push(BadField {
                field: k.clone(),
                message: e.to_string(),
                known: true,
            }),
        }
    }
    let look = serde_json::from_value(serde_json::Value::Object(good))
        .expect("fields that parse one by one parse together");
    Ok((look, bad))
}

/// The layers, top first, each checked on its own: its values in range, its 3D settings on a
/// 3D recording only, an eye or target only with a fixed camera. In 3D, a layer that gives an
/// eye or a target (or follow) and no camera asks for the fixed (or follow) camera.
fn checked_layers(layers: &Layers, h: &Header) -> Result<Vec<Layer>> {
    let (rec, bad) = recording_layer(h)?;
    let overridden =
        |f: &str| layers.flags.has(f) || layers.file.as_ref().is_some_and(|(_, l)| l.has(f));
    for b in &bad {
        if !b.known {
            eprintln!("warning: {}: {}", recorded(&b.field), b.message);
        } else if !overridden(&b.field) {
            bail!(
                "{}: {} (a flag overrides it: {})",
                recorded(&b.field),
                b.message,
                Look::flag(&b.field)
            );
        }
    }
    let mut out = vec![Layer {
        look: layers.flags.clone(),
        kind: Kind::Flags,
    }];
    if let Some((p, l)) = &layers.file {
        out.push(Layer {
            look: l.clone(),
            kind: Kind::File(p.clone()),
        });
    }
    out.push(Layer {
        look: rec,
        kind: Kind::Recording,
    });
    for layer in &mut out {
        if let Some(p) = layer.look.problems(Some(h.dim)).first() {
            bail!("{}: {}", layer.name(p.field), p.message);
        }
        if h.dim != 3 {
            continue;
        }
        let l = &mut layer.look;
        let placed = l.eye.is_some() || l.target.is_some();
        match l.camera {
            Some(m) if placed && m != CameraMode::Fixed => {
                let field = if l.eye.is_some() { "eye" } else { "target" };
                bail!(
                    "{}: only with the fixed camera (the {} camera places itself)",
                    layer.name(field),
                    look::name_of(&m)
                );
            }
            None if placed => l.camera = Some(CameraMode::Fixed),
            None if l.follow == Some(true) => l.camera = Some(CameraMode::Follow),
            _ => {}
        }
    }
    Ok(out)
}

/// The look for recording `r` (at `path`, for messages), measured over the whole recording.
pub fn resolve(layers: &Layers, r: &mut Reader, path: &Path) -> Result<Resolved> {
    let h = r.header().clone();
    let stack = checked_layers(layers, &h)?;
    let merged = stack
        .iter()
        .rev()
        .fold(Look::default(), |lower, layer| layer.look.over(&lower));
    // The name to blame for a merged field: the layer it came from.
    let origin = |field: &str| {
        stack
            .iter()
            .find(|l| l.look.has(field))
            .map(|l| l.name(field))
            .unwrap_or_else(|| Look::flag(field))
    };
    let world = world_of(&h);
    let size = merged.size.unwrap_or(defaults::SIZE);
    let fps = merged.fps.unwrap_or(defaults::FPS);
    let (color, colormap, colormap_start) = colours(&merged, &origin);
    let trails = merged
        .trails
        .unwrap_or_else(|| 0.5f32.powf(1.0 / (defaults::TRAIL_HALF_LIFE_S * fps as f32)));
    let fit = merged.fit.unwrap_or(Fit::Letterbox);
    let follow = merged.follow.unwrap_or(false);
    let (overlay, title) = overlays(&layers.flags, &merged, &h.scene_name);
    let view3 = view3(&merged, &h, &world, size, fps, r.frame_count(), &origin)?;
    let m = Measure {
        world: &world,
        size,
        fit,
        trails,
        fps,
        color,
    }
    .run(&merged, r, path)?;
    let background = merged.background.unwrap_or(defaults::BACKGROUND);
    let settings = Settings {
        width: size.0[0],
        height: size.0[1],
        color,
        colormap,
        colormap_floor: colormap_start,
        range: m.range,
        trails,
        bloom: merged.bloom.unwrap_or(defaults::BLOOM),
        bloom_radius: merged.bloom_radius.unwrap_or(1.0),
        exposure: m.exposure,
        background: background.unit(),
        point_size: m.point_size,
        fit,
        follow: follow && view3.as_ref().is_none_or(|v| v.mode == CameraMode::Top),
        vignette: merged.vignette.unwrap_or(defaults::VIGNETTE),
        shutter: merged.motion_blur.unwrap_or(0.0),
        overlay,
        view3,
        center: merged.center.map(|c| c.0),
        zoom: merged.zoom.unwrap_or(1.0),
    };
    let look = resolved_look(
        &settings,
        size,
        fps,
        colormap_start,
        background,
        follow,
        title,
    );
    Ok(Resolved {
        settings,
        fps,
        look,
        measured: m.measured,
    })
}

/// The colour mode, the map (sinebow for heading, else inferno) and where the scale starts
/// in it (the default map leaves out its darkest 30%; a map a layer chose is used whole).
fn colours(merged: &Look, origin: &dyn Fn(&str) -> String) -> (ColorMode, Colormap, f32) {
    let color = merged.color.unwrap_or(ColorMode::Speed);
    let colormap = merged.colormap.unwrap_or(if color == ColorMode::Heading {
        Colormap::Sinebow
    } else {
        Colormap::Inferno
    });
    let start =
        merged
            .colormap_start
            .unwrap_or(if merged.colormap.is_none() && !colormap.is_cyclic() {
                defaults::COLORMAP_START
            } else {
                0.0
            });
    if color == ColorMode::Heading && !colormap.is_cyclic() {
        eprintln!(
            "warning: {}: heading with the non-cyclic map {}: headings just either side of 180° get far-apart colours (twilight or sinebow wrap)",
            origin("color"),
            look::name_of(&colormap)
        );
    }
    (color, colormap, start)
}

/// What is measured over the whole recording, and what it depends on.
struct Measure<'a> {
    world: &'a World,
    size: Size,
    fit: Fit,
    trails: f32,
    fps: u32,
    color: ColorMode,
}

/// The measured (or given) exposure, sprite size and colour range.
struct Measured {
    exposure: f32,
    point_size: f32,
    range: Option<[f32; 2]>,
    /// Which of them were measured (JSON names).
    measured: Vec<&'static str>,
}

impl Measure<'_> {
    /// Exposure and sprite size (as a pair: a layer that sets the exposure was tuned with the
    /// default sprite), then the colour range, from frames sampled over the whole recording.
    fn run(&self, merged: &Look, r: &mut Reader, path: &Path) -> Result<Measured> {
        let count = r.frame_count();
        let mut measured = Vec::new();
        let (exposure, point_size) = match merged.exposure {
            Some(e) => (e, merged.point_size.unwrap_or(defaults::POINT_SIZE)),
            None => {
                let [w, h] = self.size.0;
                let m = exposure::measure(
                    r,
                    0..count,
                    self.world,
                    w,
                    h,
                    self.fit,
                    merged.point_size,
                    self.trails,
                    self.fps,
                )
                .with_context(|| format!("measuring the look of {}", path.display()))?;
                measured.push("exposure");
                if merged.point_size.is_none() {
                    measured.push("point_size");
                }
                (m.exposure, m.point_size)
            }
        };
        let measuring = || format!("measuring the colour range of {}", path.display());
        let dim3 = self.world.dim == 3;
        let range = match (merged.range, self.color) {
            (Some(r), _) => Some(r.0),
            (None, ColorMode::Speed) => {
                measured.push("range");
                Some(speed_range(r, 0..count).with_context(measuring)?)
            }
            (None, ColorMode::Density) if dim3 => {
                measured.push("range");
                Some(density_range_3d(r, 0..count).with_context(measuring)?)
            }
            (None, ColorMode::Density) => {
                measured.push("range");
                let agents = r.header().agents;
                Some(crate::render::density::range_2d(self.world.size, agents))
            }
            (None, _) => None,
        };
        Ok(Measured {
            exposure,
            point_size,
            range,
            measured,
        })
    }
}

/// Every setting of `s` as a look (`--print-look`); 3D settings only for a 3D recording, and
/// each camera's own (an orbit's period, a fixed camera's eye and target).
fn resolved_look(
    s: &Settings,
    size: Size,
    fps: u32,
    colormap_start: f32,
    background: look::Rgb,
    follow: bool,
    title: Option<String>,
) -> Look {
    let v = s.view3.as_ref();
    // The 2D view's settings: for 2D and the top camera.
    let flat = v.is_none_or(|v| v.mode == CameraMode::Top);
    Look {
        size: Some(size),
        fps: Some(fps),
        color: Some(s.color),
        colormap: Some(s.colormap),
        colormap_start: Some(colormap_start),
        range: s.range.map(Span),
        exposure: Some(s.exposure),
        point_size: Some(s.point_size),
        trails: Some(s.trails),
        bloom: Some(s.bloom),
        bloom_radius: Some(s.bloom_radius),
        background: Some(background),
        vignette: Some(s.vignette),
        motion_blur: Some(s.shutter),
        overlay: Some(resolved_overlays(&s.overlay)),
        title,
        fit: Some(s.fit),
        follow: Some(follow),
        camera: v.map(|v| v.mode),
        orbit_period: v
            .filter(|v| v.mode == CameraMode::Orbit)
            .map(|v| v.orbit_period),
        eye: v.and_then(|v| v.eye).map(look::Vec3),
        target: v.and_then(|v| v.target).map(look::Vec3),
        fov: v.filter(|v| v.mode != CameraMode::Top).map(|v| v.fov),
        fog: v.map(|v| v.fog),
        world_box: v.map(|v| v.world_box),
        center: s.center.filter(|_| flat).map(look::Vec2),
        zoom: flat.then_some(s.zoom),
    }
}

/// The overlays and the title's text. A title on the command line shows the title overlay
/// too; a title from a file or the recording does where no layer lists the overlays.
fn overlays(flags: &Look, merged: &Look, scene_name: &str) -> (Overlays, Option<String>) {
    let list = merged.overlay.clone().unwrap_or_default();
    let mut o = Overlays {
        colorbar: list.has(Overlay::Colorbar),
        time: list.has(Overlay::Time),
        title: None,
        scale: list.has(Overlay::Scale),
    };
    let shown = list.has(Overlay::Title)
        || flags.title.is_some()
        || (merged.title.is_some() && merged.overlay.is_none());
    if shown {
        let t = merged
            .title
            .clone()
            .unwrap_or_else(|| scene_name.to_string());
        o.title = (!t.trim().is_empty()).then_some(t);
    }
    let title = o.title.clone();
    (o, title)
}

/// The overlay list that shows exactly `o`.
fn resolved_overlays(o: &Overlays) -> look::Overlays {
    let mut v = Vec::new();
    for (on, which) in [
        (o.colorbar, Overlay::Colorbar),
        (o.time, Overlay::Time),
        (o.title.is_some(), Overlay::Title),
        (o.scale, Overlay::Scale),
    ] {
        if on {
            v.push(which);
        }
    }
    look::Overlays(v)
}

/// The 3D view (`None` for a 2D recording): the camera, a fixed camera's eye and target (the
/// orbit's start and the world's centre unless given), the orbit's period.
fn view3(
    m: &Look,
    h: &Header,
    world: &World,
    size: Size,
    fps: u32,
    frames: u64,
    origin: &dyn Fn(&str) -> String,
) -> Result<Option<View3>> {
    if h.dim != 3 {
        return Ok(None);
    }
    let mode = m.camera.unwrap_or(CameraMode::Orbit);
    if mode == CameraMode::Top && m.fov.is_some() {
        let who = origin("fov");
        if !who.contains("(in the recording)") {
            bail!("{who}: the top camera is orthographic; use the orbit, fixed or follow camera");
        }
    }
    let fov = m.fov.unwrap_or(camera::DEFAULT_FOV);
    let (mut eye, mut target) = (None, None);
    if mode == CameraMode::Fixed {
        let dims = [world.size[0], world.size[1], world.depth];
        let t = m.target.map(|v| v.0).unwrap_or(dims.map(|s| s / 2.0));
        let aspect = size.0[0] as f32 / size.0[1] as f32;
        let radius = camera::distance(dims, [0.0; 3]) / 2.0;
        let e = match m.eye {
            Some(v) => v.0,
            None => camera::orbit(t, radius, fov, aspect, 0.0).eye,
        };
        if camera::distance(e, t) <= 0.0 {
            bail!(
                "{} and {}: must be different points",
                origin("eye"),
                origin("target")
            );
        }
        (eye, target) = (Some(e), Some(t));
    }
    if mode == CameraMode::Top {
        eprintln!("note: the recording is 3D: the top camera renders an orthographic projection onto x, y");
    }
    let orbit_period = m.orbit_period.unwrap_or_else(|| {
        let length = frames.saturating_sub(1).max(1) as f32 * world.frame_dt;
        length.max(defaults::MIN_ORBIT_VIDEO_S * fps as f32 * world.frame_dt)
    });
    if !(orbit_period.is_finite() && orbit_period > 0.0) {
        return Err(anyhow!(
            "{}: must be a number of seconds > 0, got {orbit_period}",
            origin("orbit_period")
        ));
    }
    Ok(Some(View3 {
        mode,
        eye,
        target,
        fov,
        fog: m.fog.unwrap_or(0.0),
        world_box: m.world_box.unwrap_or(false),
        orbit_period,
    }))
}

/// A look file's layer, read and named.
pub fn read_look_file(path: &Path) -> Result<(PathBuf, Look)> {
    let look = Look::read_file(path).map_err(|e| anyhow!(e))?;
    Ok((path.to_path_buf(), look))
}
