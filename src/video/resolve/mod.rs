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

mod exposure;
mod keys;
mod overlays;
mod plate;
mod ranges;

use crate::bfs::{Header, Reader};
use crate::look::{self, CameraMode, ColorBy, ColorMode, Colormap, Fit, Look, Shape, Span, Style};
use crate::render::camera;
use crate::render::overlay::Overlays;
use crate::render::{Grade, Settings, View3, World};
use crate::scene::Boundary;
use ranges::{density_range_3d, speed_range};

/// Defaults for what no layer sets and nothing is measured for.
pub mod defaults {
    use crate::look::{Rgb, Size};
    pub const SIZE: Size = Size([1920, 1080]);
    pub const FPS: u32 = 30;
    /// With the default map, speed's colour scale starts this far into it (a deep magenta),
    /// so the slowest agents stay clearly visible on the dark background instead of vanishing
    /// into inferno's near-black low end. Density takes the whole map (sparse regions recede,
    /// clusters glow), and so does a map chosen by a layer.
    pub const COLORMAP_START: f32 = 0.3;
    /// Trails: the light an agent leaves halves in this many seconds, whatever the frame rate.
    /// The shortest default trails of a 3D recording (its camera moves: long trails would
    /// string into beads), half-life in seconds; 2D ones take `exposure::TRAIL_HALF_LIFE_S`.
    pub const TRAIL_HALF_LIFE_3D_S: f32 = 0.05;
    pub const BLOOM: f32 = 0.5;
    pub const BACKGROUND: Rgb = Rgb([0x05, 0x05, 0x0a]);
    pub const VIGNETTE: f32 = 0.25;
    /// Point size when the exposure is set but the point size is not.
    pub const POINT_SIZE: f32 = 1.5;
    /// The orbit camera's degrees per second of video: one turn in 20 s.
    pub const ORBIT_SPEED: f32 = 18.0;
    /// Ink's sky: the horizon's glow at the bottom of the frame, the dusk blue at the top.
    pub const DUSK_HORIZON: Rgb = Rgb([0xe0, 0xa8, 0x82]);
    pub const DUSK_SKY: Rgb = Rgb([0x4a, 0x63, 0x8c]);
    /// Ink's agents: a warm near-black.
    pub const INK: Rgb = Rgb([0x17, 0x12, 0x14]);
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

    /// The files these layers read, named as a message names them: the `--look` file and
    /// each layer's background picture. No output may be written over one.
    pub fn inputs(&self) -> Vec<(PathBuf, String)> {
        let mut v = Vec::new();
        if let Some(p) = &self.flags.background_image {
            v.push((p.clone(), "--background-image".to_string()));
        }
        if let Some((path, look)) = &self.file {
            v.push((path.clone(), "--look".to_string()));
            if let Some(p) = &look.background_image {
                let what = format!("background_image of --look {}", path.display());
                v.push((p.clone(), what));
            }
        }
        v
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
        if self.measured.contains(&"bloom") {
            s.push_str(&format!(", bloom {:.2} (measured)", l.bloom.unwrap_or(0.0)));
        }
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
            log::warn!("{}: {}", recorded(&b.field), b.message);
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
            bail!("{}: {}", layer.name(&p.field), p.message);
        }
        if h.dim != 3 {
            continue;
        }
        let l = &mut layer.look;
        let keyed = l.timeline.as_deref().is_some_and(look::keys::places_camera);
        let placed = l.eye.is_some() || l.target.is_some() || keyed;
        match l.camera {
            Some(m) if placed && m != CameraMode::Fixed => {
                let field = if l.eye.is_some() {
                    "eye"
                } else if l.target.is_some() {
                    "target"
                } else {
                    "timeline"
                };
                bail!(
                    "{}: only with the fixed camera (the {} camera places itself)",
                    layer.name(field),
                    look::name_of(&m)
                );
            }
            // In 3D, follow is the follow camera (or the top camera's centring): a flag or a
            // look file that asks for another camera too is refused (a recording's own look
            // is taken as it was recorded, its camera first).
            Some(m @ (CameraMode::Orbit | CameraMode::Fixed))
                if l.follow == Some(true) && !matches!(layer.kind, Kind::Recording) =>
            {
                bail!(
                    "{}: in 3D it is the follow camera, and {} asks for the {} camera",
                    layer.name("follow"),
                    layer.name("camera"),
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
    let mut look = merged.clone();
    let mut measured = Vec::new();
    fill_frame(&mut look, &h);
    fill_colours(&mut look, r, path, &mut measured)?;
    if look.color.is_some_and(|c| c.mode == ColorMode::Species) && h.species.is_empty() {
        anyhow::bail!(
            "{} species: {} has no species (its scene lists no scene.species)",
            origin("color"),
            path.display()
        );
    }
    if look.color.is_some_and(|c| c.mode == ColorMode::Heading)
        && !look.colormap.is_some_and(Colormap::is_cyclic)
    {
        log::warn!(
            "{}: heading with a non-cyclic map: headings just either side of 180° get far-apart colours (twilight or sinebow wrap)",
            origin("color"),
        );
    }
    let (overlay, title) = overlays::overlays(&layers.flags, &merged, &h.scene_name);
    look.overlay = Some(overlays::resolved(&overlay));
    look.title = title;
    let view3 = view3(&look, &h, &world, &origin)?;
    fill_view3(&mut look, view3.as_ref());
    fill_flat_view(&mut look);
    Measure { world: &world }.run(&mut look, r, path, &mut measured)?;
    let mut settings = settings_of(&look, overlay, view3);
    settings.plate = plate::load(&look, &origin)?;
    if settings.color == ColorMode::Species {
        settings.palette = Some(species_colours(&h));
    }
    settings.keys = keys::look_keys(&look, &settings, &world, &h, &origin)?;
    Ok(Resolved {
        fps: look.fps.expect("resolved"),
        settings,
        look,
        measured,
    })
}

/// The colour of each species of recording `h` (`--color species`), by species index: the
/// colour every command that draws it uses. None from a scene that does not parse (all white).
pub fn species_colours(h: &Header) -> Vec<[u8; 3]> {
    crate::scene::Scene::from_stored_json(&h.scene_json)
        .map(|s| crate::scene::species::colours(&s.species))
        .unwrap_or_default()
}

/// The frame and its style: size, rate, how the world fills it, trails, the background and
/// the grading (defaults only; nothing here is measured). Ink is dark on a dusk sky, with no
/// bloom; glow's bloom is measured (see [`exposure::cover`]).
fn fill_frame(l: &mut Look, h: &Header) {
    let ink = l.style == Some(Style::Ink);
    l.style.get_or_insert(Style::Glow);
    l.size.get_or_insert(defaults::SIZE);
    l.fps.get_or_insert(defaults::FPS);
    l.fit
        .get_or_insert(if h.boundary == Boundary::Wrap && h.dim == 2 {
            Fit::Tile
        } else {
            Fit::Letterbox
        });
    l.follow.get_or_insert(false);
    if ink {
        l.bloom.get_or_insert(0.0);
    }
    l.bloom_radius.get_or_insert(1.0);
    l.stacking.get_or_insert(if ink { 0.5 } else { 0.7 });
    l.shape.get_or_insert(Shape::Dot);
    if ink && l.background.is_none() && l.background_top.is_none() {
        l.background = Some(defaults::DUSK_HORIZON);
        l.background_top = Some(defaults::DUSK_SKY);
    }
    l.background.get_or_insert(defaults::BACKGROUND);
    l.alpha.get_or_insert(false);
    l.vignette
        .get_or_insert(if ink { 0.15 } else { defaults::VIGNETTE });
    l.motion_blur.get_or_insert(0.0);
    l.contrast.get_or_insert(1.0);
    l.saturation.get_or_insert(1.0);
    l.lift.get_or_insert(0.0);
    l.gamma.get_or_insert(1.0);
    l.gain.get_or_insert(1.0);
}

/// What agents are coloured by (in glow, the quantity that varies most over the recording;
/// in ink, one dark colour), the map (per quantity) and where its scale starts (the default
/// inferno leaves out its darkest 30% for speed; density, and a map a layer chose, use it
/// whole).
fn fill_colours(
    l: &mut Look,
    r: &mut Reader,
    path: &Path,
    measured: &mut Vec<&'static str>,
) -> Result<()> {
    let given_map = l.colormap.is_some();
    let color = match l.color {
        Some(c) => c,
        None if l.style == Some(Style::Ink) => ColorBy {
            mode: ColorMode::Fixed,
            fixed: Some(defaults::INK),
        },
        None => {
            measured.push("color");
            let count = r.frame_count();
            let mode = ranges::most_telling(r, 0..count)
                .with_context(|| format!("choosing the colour quantity of {}", path.display()))?;
            ColorBy::mode(mode)
        }
    };
    l.color = Some(color);
    let map = *l.colormap.get_or_insert(match color.mode {
        ColorMode::Heading => Colormap::Sinebow,
        ColorMode::RelativeHeading => Colormap::Viridis,
        _ => Colormap::Inferno,
    });
    l.colormap_start.get_or_insert(
        if !given_map && map == Colormap::Inferno && color.mode == ColorMode::Speed {
            defaults::COLORMAP_START
        } else {
            0.0
        },
    );
    Ok(())
}

/// The 3D view's settings as resolved (none for 2D): the camera, and each camera's own.
fn fill_view3(l: &mut Look, v: Option<&View3>) {
    l.camera = v.map(|v| v.mode);
    l.orbit_speed = v
        .filter(|v| v.mode == CameraMode::Orbit)
        .map(|v| v.orbit_speed);
    l.eye = v.and_then(|v| v.eye).map(look::Vec3);
    l.target = v.and_then(|v| v.target).map(look::Vec3);
    l.fov = v.filter(|v| v.mode != CameraMode::Top).map(|v| v.fov);
    l.fog = v.map(|v| v.fog);
    l.world_box = v.map(|v| v.world_box);
}

/// The 2D view's centre and zoom: for 2D and the 3D top camera only.
fn fill_flat_view(l: &mut Look) {
    let flat = l.camera.is_none_or(|m| m == CameraMode::Top);
    l.center = l.center.filter(|_| flat);
    l.zoom = flat.then(|| l.zoom.unwrap_or(1.0));
}

/// What is measured over the whole recording.
struct Measure<'a> {
    world: &'a World,
}

impl Measure<'_> {
    /// The trails as the exposure sees them: an orbiting camera fades them as it turns (see
    /// [`crate::render::orbit_trails`]).
    fn kept_trails(&self, l: &Look, height: u32) -> f32 {
        let trails = l.trails.expect("resolved");
        let placed = l.eye.is_some() || l.target.is_some();
        let orbit = l.camera.map_or(!placed, |c| c == CameraMode::Orbit);
        if self.world.dim != 3 || !orbit {
            return trails;
        }
        let speed = l.orbit_speed.unwrap_or(defaults::ORBIT_SPEED);
        crate::render::orbit_trails(trails, speed, l.fps.expect("resolved"), height)
    }

    /// Exposure and sprite size (as a pair: a layer that sets the exposure was tuned with the
    /// default sprite), then the colour range, from frames sampled over the whole recording.
    fn run(
        &self,
        l: &mut Look,
        r: &mut Reader,
        path: &Path,
        measured: &mut Vec<&'static str>,
    ) -> Result<()> {
        let count = r.frame_count();
        if l.trails.is_none() {
            let min = if self.world.dim == 3 {
                defaults::TRAIL_HALF_LIFE_3D_S
            } else {
                exposure::TRAIL_HALF_LIFE_S
            };
            let [w, h] = l.size.expect("resolved").0;
            let fit = l.fit.expect("resolved");
            let fps = l.fps.expect("resolved");
            let t = exposure::default_trails(r, 0..count, self.world, (w, h, fit), fps, min)
                .with_context(|| format!("measuring the look of {}", path.display()))?;
            measured.push("trails");
            l.trails = Some(t);
        }
        // 2D only: a 3D flock's x–y projection covers its box whatever the camera sees.
        if l.bloom.is_none() && self.world.dim == 3 {
            l.bloom = Some(defaults::BLOOM);
        }
        if l.bloom.is_none() {
            let [w, h] = l.size.expect("resolved").0;
            let cover = exposure::cover(r, 0..count, self.world, (w, h, l.fit.expect("resolved")))
                .with_context(|| format!("measuring the look of {}", path.display()))?;
            measured.push("bloom");
            l.bloom = Some(exposure::default_bloom(defaults::BLOOM, cover));
        }
        match l.exposure {
            Some(_) => {
                l.point_size.get_or_insert(defaults::POINT_SIZE);
            }
            None => {
                let [w, h] = l.size.expect("resolved").0;
                let m = exposure::measure(
                    r,
                    0..count,
                    self.world,
                    exposure::Framing {
                        width: w,
                        height: h,
                        fit: l.fit.expect("resolved"),
                        trails: self.kept_trails(l, h),
                        fps: l.fps.expect("resolved"),
                        stacking: l.stacking.expect("resolved"),
                        ink: l.style == Some(Style::Ink),
                    },
                    l.point_size,
                )
                .with_context(|| format!("measuring the look of {}", path.display()))?;
                measured.push("exposure");
                if l.point_size.is_none() {
                    measured.push("point_size");
                }
                l.exposure = Some(m.exposure);
                l.point_size = Some(m.point_size);
            }
        }
        if l.range.is_some() {
            return Ok(());
        }
        let measuring = || format!("measuring the colour range of {}", path.display());
        let dim3 = self.world.dim == 3;
        let range = match l.color.expect("resolved").mode {
            ColorMode::Speed => speed_range(r, 0..count).with_context(measuring)?,
            ColorMode::RelativeHeading => {
                ranges::turn_range(r, 0..count).with_context(measuring)?
            }
            ColorMode::Density if dim3 => density_range_3d(r, 0..count).with_context(measuring)?,
            ColorMode::Density => {
                crate::render::density::range_2d(self.world.size, r.header().agents)
            }
            ColorMode::Heading | ColorMode::Fixed | ColorMode::Species => return Ok(()),
        };
        measured.push("range");
        l.range = Some(Span(range));
        Ok(())
    }
}

/// The renderer's settings from a look with every setting resolved.
fn settings_of(l: &Look, overlay: Overlays, view3: Option<View3>) -> Settings {
    let [width, height] = l.size.expect("resolved").0;
    let color = l.color.expect("resolved");
    let camera = view3.as_ref().map(|v| v.mode);
    Settings {
        width,
        height,
        style: l.style.expect("resolved"),
        color: color.mode,
        fixed: color.fixed.map(|c| c.unit()),
        palette: None,
        colormap: l.colormap.expect("resolved"),
        colormap_floor: l.colormap_start.expect("resolved"),
        range: l.range.map(|r| r.0),
        trails: l.trails.expect("resolved"),
        bloom: l.bloom.expect("resolved"),
        bloom_radius: l.bloom_radius.expect("resolved"),
        exposure: l.exposure.expect("resolved"),
        background: l.background.expect("resolved").unit(),
        background_top: l.background_top.map(|c| c.unit()),
        alpha: l.alpha.expect("resolved"),
        plate: None,
        stacking: l.stacking.expect("resolved"),
        shape: l.shape.expect("resolved"),
        grade: Grade {
            contrast: l.contrast.expect("resolved"),
            saturation: l.saturation.expect("resolved"),
            lift: l.lift.expect("resolved"),
            gamma: l.gamma.expect("resolved"),
            gain: l.gain.expect("resolved"),
        },
        point_size: l.point_size.expect("resolved"),
        fit: l.fit.expect("resolved"),
        follow: l.follow.expect("resolved") && camera.is_none_or(|m| m == CameraMode::Top),
        vignette: l.vignette.expect("resolved"),
        shutter: l.motion_blur.expect("resolved"),
        overlay,
        view3,
        center: l.center.map(|c| c.0),
        zoom: l.zoom.unwrap_or(1.0),
        keys: None,
    }
}

/// The 3D view (`None` for a 2D recording): the camera, a fixed camera's eye and target (the
/// orbit's start and the world's centre unless given), the orbit's period.
fn view3(
    m: &Look,
    h: &Header,
    world: &World,
    origin: &dyn Fn(&str) -> String,
) -> Result<Option<View3>> {
    if h.dim != 3 {
        return Ok(None);
    }
    let (size, fps) = (m.size.expect("resolved"), m.fps.expect("resolved"));
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
        log::info!("note: the recording is 3D: the top camera renders an orthographic projection onto x, y");
    }
    // Degrees per second of video at the frame rate, whatever the clip's length: the
    // renderer turns by the frame's simulated time, so the speed becomes simulated seconds
    // per turn (none for 0: the camera holds still).
    let orbit_speed = m.orbit_speed.unwrap_or(defaults::ORBIT_SPEED);
    if !(orbit_speed.is_finite() && orbit_speed.abs() <= 36_000.0) {
        return Err(anyhow!(
            "{}: must be degrees per second of video, at most 36000 either way, got {orbit_speed}",
            origin("orbit_speed")
        ));
    }
    let orbit_period = if orbit_speed == 0.0 {
        0.0
    } else {
        360.0 / orbit_speed * fps as f32 * world.frame_dt
    };
    Ok(Some(View3 {
        mode,
        eye,
        target,
        fov,
        fog: m.fog.unwrap_or(0.0),
        world_box: m.world_box.unwrap_or(false),
        orbit_speed,
        orbit_period,
    }))
}

/// A look file's layer, read and named.
pub fn read_look_file(path: &Path) -> Result<(PathBuf, Look)> {
    // A regular file only (a FIFO would block, a device never end), and a look's size.
    let text = crate::sys::read_text(path, crate::sys::MAX_LOOK_BYTES)
        .map_err(|e| anyhow!("--look {}: {e}", path.display()))?;
    // "expected f32" is Rust's word, not the user's.
    let look =
        Look::parse_file(&text, path).map_err(|e| anyhow!(crate::units::types_in_words(&e)))?;
    Ok((path.to_path_buf(), look))
}
