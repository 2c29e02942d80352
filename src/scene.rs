//! Scene files: schema, presets, validation with JSON paths and line numbers.

use serde::{Deserialize, Serialize};

/// Which rule set moves the agents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Model {
    Boids,
    Vicsek,
}

impl Model {
    pub fn code(self) -> u8 {
        match self {
            Model::Boids => 0,
            Model::Vicsek => 1,
        }
    }
    pub fn from_code(c: u8) -> Option<Model> {
        match c {
            0 => Some(Model::Boids),
            1 => Some(Model::Vicsek),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Model::Boids => "boids",
            Model::Vicsek => "vicsek",
        }
    }
}

/// What happens at the edge of the world box `[0, size)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Boundary {
    Wrap,
    Reflect,
    Open,
}

impl Boundary {
    pub fn code(self) -> u8 {
        match self {
            Boundary::Wrap => 0,
            Boundary::Reflect => 1,
            Boundary::Open => 2,
        }
    }
    pub fn from_code(c: u8) -> Option<Boundary> {
        match c {
            0 => Some(Boundary::Wrap),
            1 => Some(Boundary::Reflect),
            2 => Some(Boundary::Open),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Boundary::Wrap => "wrap",
            Boundary::Reflect => "reflect",
            Boundary::Open => "open",
        }
    }
}

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// Neighbour search strategy. The output bytes never depend on it (determinism contract).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Search {
    Auto,
    Grid,
    Brute,
}

/// Ready-made parameter sets; explicit fields in a scene override them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    /// BoidForge: world 1920×1080, r_sep 12, r_ali/r_coh 30, weights 1.5/1/1, max_force 220,
    /// speed 40..180, dt 0.05.
    Boidforge,
    /// cuplan/pymapf: perception 8, separation distance 1.5, gains sep 6 / coh 1.2 / ali 2.5,
    /// max accel 4, max speed 2.5, dt 0.05.
    Cuplan,
    /// Vicsek et al. 1995: v0 0.03, r 1, dt 1, N 4000, L 31.6, η 2.
    Vicsek1995,
}

impl Preset {
    pub fn name(self) -> &'static str {
        match self {
            Preset::Boidforge => "boidforge",
            Preset::Cuplan => "cuplan",
            Preset::Vicsek1995 => "vicsek1995",
        }
    }
}

/// Initial positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// Uniform in the world box.
    Uniform,
    /// Uniform in a disc (2D) or ball (3D) of `radius` around `center`.
    Disc,
    /// `count` discs/balls of `radius` at random centres.
    Clusters,
    /// A frame of an existing recording (`path`, `frame`; ours or BoidForge's BFS1).
    File,
}

/// Initial velocities.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Velocity {
    /// Random headings, speeds uniform in the band (v0 for Vicsek).
    Random,
    /// One random heading per cluster (the whole flock for other layouts).
    Aligned,
}

// ---------------------------------------------------------------------------------------------
// The file as written by a user: every field optional, unknown fields rejected.

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct SceneFile {
    name: Option<String>,
    description: Option<String>,
    preset: Option<Preset>,
    model: Option<Model>,
    dim: Option<i64>,
    agents: Option<i64>,
    steps: Option<i64>,
    dt: Option<f64>,
    seed: Option<u64>,
    record_every: Option<i64>,
    search: Option<Search>,
    world: Option<WorldFile>,
    boids: Option<BoidsFile>,
    vicsek: Option<VicsekFile>,
    init: Option<InitFile>,
    render: Option<Render>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct WorldFile {
    size: Option<Vec<f64>>,
    boundary: Option<Boundary>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct BoidsFile {
    r_sep: Option<f64>,
    r_ali: Option<f64>,
    r_coh: Option<f64>,
    w_sep: Option<f64>,
    w_ali: Option<f64>,
    w_coh: Option<f64>,
    max_force: Option<f64>,
    v_min: Option<f64>,
    v_max: Option<f64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct VicsekFile {
    v0: Option<f64>,
    r: Option<f64>,
    noise: Option<f64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct InitFile {
    layout: Option<Layout>,
    velocity: Option<Velocity>,
    center: Option<Vec<f64>>,
    radius: Option<f64>,
    count: Option<i64>,
    path: Option<String>,
    frame: Option<i64>,
}

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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exposure: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub point_size: Option<f64>,
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

/// Cameras for 3D recordings (`scene.render.camera`, `forge render --camera`).
pub const RENDER_CAMERAS: &[&str] = &["orbit", "fixed", "follow", "top"];

pub const RENDER_COLORS: &[&str] = &["speed", "heading", "density", "fixed"];
pub const RENDER_COLORMAPS: &[&str] = &[
    "viridis", "magma", "inferno", "plasma", "turbo", "cividis", "twilight", "sinebow",
];

// ---------------------------------------------------------------------------------------------
// The resolved scene: every value known, validated, in the types the solver uses.

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BoidsParams {
    pub r_sep: f32,
    pub r_ali: f32,
    pub r_coh: f32,
    pub w_sep: f32,
    pub w_ali: f32,
    pub w_coh: f32,
    pub max_force: f32,
    pub v_min: f32,
    pub v_max: f32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VicsekParams {
    pub v0: f32,
    pub r: f32,
    pub noise: f32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Init {
    pub layout: Layout,
    pub velocity: Velocity,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub center: Option<Vec<f32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub radius: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// For `file`: as written in the scene, and resolved against the scene's folder.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(skip)]
    pub resolved_path: Option<PathBuf>,
    /// For `file`: frame index; negative counts from the end (-1 = last).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frame: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scene {
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty", default)]
    pub description: String,
    pub preset: Preset,
    pub model: Model,
    pub dim: usize,
    pub agents: u32,
    pub steps: u64,
    pub dt: f32,
    pub seed: u64,
    pub record_every: u32,
    /// Not stored in recordings: the output does not depend on it.
    #[serde(skip, default = "search_auto")]
    pub search: Search,
    pub world: [f32; 3],
    pub boundary: Boundary,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boids: Option<BoidsParams>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vicsek: Option<VicsekParams>,
    pub init: Init,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub render: Option<Render>,
}

fn search_auto() -> Search {
    Search::Auto
}

/// Largest agent count a scene may ask for (the state of 2^31 3D agents is 48 GiB).
pub const MAX_AGENTS: u64 = 1 << 31;
/// Largest step count.
pub const MAX_STEPS: u64 = 1 << 40;

/// An error in a scene: the JSON path, what is wrong, and the line when the field is in the text.
#[derive(Debug, Clone, PartialEq)]
pub struct SceneError {
    pub path: String,
    pub message: String,
    pub line: Option<usize>,
}

impl fmt::Display for SceneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)?;
        if let Some(l) = self.line {
            write!(f, " (line {l})")?;
        }
        Ok(())
    }
}

impl std::error::Error for SceneError {}

/// Where a scene came from, for resolving relative paths and naming it.
pub struct Source<'a> {
    pub text: &'a str,
    /// The folder that relative paths in the scene are resolved against.
    pub dir: &'a Path,
    /// Name used when the scene has no `name` (file stem).
    pub default_name: &'a str,
}

struct Ctx {
    lines: HashMap<String, usize>,
    errors: Vec<SceneError>,
}

impl Ctx {
    fn err(&mut self, path: &str, message: impl Into<String>) {
        let line = self.lines.get(path).copied();
        self.errors.push(SceneError {
            path: path.to_string(),
            message: message.into(),
            line,
        });
    }
}

fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// Parse and validate a scene. All problems found are returned, the first one first.
pub fn parse(src: &Source) -> Result<Scene, Vec<SceneError>> {
    let lines = json_lines(src.text);
    let mut de = serde_json::Deserializer::from_str(src.text);
    let syntax = |path: String, inner: &serde_json::Error| {
        let mut msg = inner.to_string();
        // serde_json appends " at line L column C": we print the line our own way.
        if let Some(i) = msg.rfind(" at line ") {
            msg.truncate(i);
        }
        let line = if inner.line() > 0 {
            Some(inner.line())
        } else {
            None
        };
        vec![SceneError {
            path,
            message: msg,
            line,
        }]
    };
    let file: SceneFile = match serde_path_to_error::deserialize(&mut de) {
        Ok(f) => f,
        Err(e) => {
            let p = e.path().to_string();
            // serde_path_to_error marks a position it cannot name with `?`.
            let p = p.trim_end_matches('?').trim_end_matches('.');
            let path = if p.is_empty() {
                "scene".to_string()
            } else {
                format!("scene.{p}")
            };
            return Err(syntax(path, e.inner()));
        }
    };
    if let Err(e) = de.end() {
        return Err(syntax("scene".to_string(), &e));
    }
    let mut cx = Ctx {
        lines,
        errors: Vec::new(),
    };
    let scene = resolve(file, src, &mut cx);
    if cx.errors.is_empty() {
        Ok(scene)
    } else {
        Err(cx.errors)
    }
}

fn resolve(f: SceneFile, src: &Source, cx: &mut Ctx) -> Scene {
    let preset = match (f.preset, f.model) {
        (Some(p), _) => p,
        (None, Some(Model::Vicsek)) => Preset::Vicsek1995,
        (None, Some(Model::Boids)) => Preset::Boidforge,
        (None, None) => {
            cx.err(
                "scene.model",
                "required: \"boids\" or \"vicsek\" (or give a \"preset\")",
            );
            Preset::Boidforge
        }
    };
    let preset_model = if preset == Preset::Vicsek1995 {
        Model::Vicsek
    } else {
        Model::Boids
    };
    let model = f.model.unwrap_or(preset_model);
    if model != preset_model && f.preset.is_some() {
        cx.err(
            "scene.preset",
            format!(
                "preset \"{}\" is for model \"{}\", but the scene's model is \"{}\"",
                preset.name(),
                preset_model.name(),
                model.name()
            ),
        );
    }

    let dim = match f.dim {
        None => 2,
        Some(d @ (2 | 3)) => d as usize,
        Some(d) => {
            cx.err("scene.dim", format!("must be 2 or 3, got {d}"));
            2
        }
    };
    if model == Model::Vicsek && dim != 2 {
        cx.err(
            "scene.dim",
            format!("the vicsek model is 2D only, got {dim}"),
        );
    }

    // Preset defaults.
    let (p_agents, p_dt, p_world, p_boundary): (u64, f64, [f64; 3], Boundary) = match preset {
        Preset::Boidforge => (2000, 0.05, [1920.0, 1080.0, 1080.0], Boundary::Wrap),
        Preset::Cuplan => (200, 0.05, [60.0, 60.0, 60.0], Boundary::Wrap),
        Preset::Vicsek1995 => (4000, 1.0, [31.6, 31.6, 31.6], Boundary::Wrap),
    };

    let pos_f = |cx: &mut Ctx, path: &str, v: Option<f64>, default: f64, allow_zero: bool| -> f32 {
        let x = v.unwrap_or(default);
        if !x.is_finite() {
            cx.err(path, format!("must be a finite number, got {x}"));
            return default as f32;
        }
        if x < 0.0 || (!allow_zero && x == 0.0) {
            cx.err(
                path,
                format!(
                    "must be {}, got {}",
                    if allow_zero { ">= 0" } else { "> 0" },
                    fmt_num(x)
                ),
            );
            return default as f32;
        }
        if x > 1e30 {
            cx.err(path, format!("is too large, got {x}"));
            return default as f32;
        }
        x as f32
    };
    let any_f = |cx: &mut Ctx, path: &str, v: Option<f64>, default: f64| -> f32 {
        let x = v.unwrap_or(default);
        if !x.is_finite() || x.abs() > 1e30 {
            cx.err(path, format!("must be a finite number, got {x}"));
            return default as f32;
        }
        x as f32
    };

    let init_f = f.init.unwrap_or_default();
    let layout = init_f.layout.unwrap_or(Layout::Uniform);
    let agents = match f.agents {
        Some(a) if a <= 0 => {
            cx.err("scene.agents", format!("must be > 0, got {a}"));
            1
        }
        Some(a) if a as u64 > MAX_AGENTS => {
            cx.err(
                "scene.agents",
                format!("must be at most {MAX_AGENTS}, got {a}"),
            );
            1
        }
        Some(a) => a as u32,
        None if layout == Layout::File => 0, // taken from the file later
        None => p_agents as u32,
    };
    let steps = match f.steps {
        Some(s) if s < 0 => {
            cx.err("scene.steps", format!("must be >= 0, got {s}"));
            0
        }
        Some(s) if s as u64 > MAX_STEPS => {
            cx.err(
                "scene.steps",
                format!("must be at most {MAX_STEPS}, got {s}"),
            );
            0
        }
        Some(s) => s as u64,
        None => 1000,
    };
    let record_every = match f.record_every {
        Some(k) if k <= 0 => {
            cx.err("scene.record_every", format!("must be >= 1, got {k}"));
            1
        }
        Some(k) if k > u32::MAX as i64 => {
            cx.err(
                "scene.record_every",
                format!("must be at most {}, got {k}", u32::MAX),
            );
            1
        }
        Some(k) => k as u32,
        None => 1,
    };
    let dt = pos_f(cx, "scene.dt", f.dt, p_dt, false);

    let wf = f.world.unwrap_or_default();
    let mut world = [0f32; 3];
    match &wf.size {
        None => {
            for (k, w) in world.iter_mut().enumerate().take(dim) {
                *w = p_world[k] as f32;
            }
        }
        Some(s) if s.len() != dim => {
            cx.err(
                "scene.world.size",
                format!("must have {dim} numbers (dim is {dim}), got {}", s.len()),
            );
        }
        Some(s) => {
            for k in 0..dim {
                let path = format!("scene.world.size[{k}]");
                world[k] = pos_f(cx, &path, Some(s[k]), p_world[k], false);
            }
        }
    }
    let boundary = wf.boundary.unwrap_or(p_boundary);

    let (boids, vicsek) = if model == Model::Boids {
        let b = f.boids.unwrap_or_default();
        if f.vicsek.is_some() {
            cx.err("scene.vicsek", "only allowed with model \"vicsek\"");
        }
        let d: [f64; 9] = match preset {
            Preset::Cuplan => [1.5, 8.0, 8.0, 6.0, 2.5, 1.2, 4.0, 0.0, 2.5],
            _ => [12.0, 30.0, 30.0, 1.5, 1.0, 1.0, 220.0, 40.0, 180.0],
        };
        let p = BoidsParams {
            r_sep: pos_f(cx, "scene.boids.r_sep", b.r_sep, d[0], true),
            r_ali: pos_f(cx, "scene.boids.r_ali", b.r_ali, d[1], true),
            r_coh: pos_f(cx, "scene.boids.r_coh", b.r_coh, d[2], true),
            w_sep: any_f(cx, "scene.boids.w_sep", b.w_sep, d[3]),
            w_ali: any_f(cx, "scene.boids.w_ali", b.w_ali, d[4]),
            w_coh: any_f(cx, "scene.boids.w_coh", b.w_coh, d[5]),
            max_force: pos_f(cx, "scene.boids.max_force", b.max_force, d[6], true),
            v_min: pos_f(cx, "scene.boids.v_min", b.v_min, d[7], true),
            v_max: pos_f(cx, "scene.boids.v_max", b.v_max, d[8], false),
        };
        if p.v_min >= p.v_max {
            let path = if b.v_min.is_some() {
                "scene.boids.v_min"
            } else {
                "scene.boids.v_max"
            };
            cx.err(
                path,
                format!(
                    "v_min must be < v_max, got v_min {} >= v_max {}",
                    fmt_num(p.v_min as f64),
                    fmt_num(p.v_max as f64)
                ),
            );
        }
        let r_max = p.r_sep.max(p.r_ali).max(p.r_coh);
        if r_max <= 0.0 {
            cx.err(
                "scene.boids",
                "at least one of r_sep, r_ali, r_coh must be > 0",
            );
        }
        (Some(p), None)
    } else {
        let v = f.vicsek.unwrap_or_default();
        if f.boids.is_some() {
            cx.err("scene.boids", "only allowed with model \"boids\"");
        }
        let p = VicsekParams {
            v0: pos_f(cx, "scene.vicsek.v0", v.v0, 0.03, false),
            r: pos_f(cx, "scene.vicsek.r", v.r, 1.0, false),
            noise: pos_f(cx, "scene.vicsek.noise", v.noise, 2.0, true),
        };
        if p.noise as f64 > 2.0 * std::f64::consts::PI + 1e-6 {
            cx.err(
                "scene.vicsek.noise",
                format!("must be in [0, 2π], got {}", p.noise),
            );
        }
        (None, Some(p))
    };

    // Initial conditions.
    let velocity = init_f.velocity.unwrap_or(Velocity::Random);
    let mut init = Init {
        layout,
        velocity,
        center: None,
        radius: None,
        count: None,
        path: None,
        resolved_path: None,
        frame: None,
    };
    let only = |cx: &mut Ctx, present: bool, field: &str, layouts: &str| {
        if present {
            cx.err(
                &format!("scene.init.{field}"),
                format!("only allowed with layout {layouts}"),
            );
        }
    };
    let disc_like = matches!(layout, Layout::Disc | Layout::Clusters);
    if !disc_like {
        only(
            cx,
            init_f.radius.is_some(),
            "radius",
            "\"disc\" or \"clusters\"",
        );
    }
    if layout != Layout::Disc {
        only(cx, init_f.center.is_some(), "center", "\"disc\"");
    }
    if layout != Layout::Clusters {
        only(cx, init_f.count.is_some(), "count", "\"clusters\"");
    }
    if layout != Layout::File {
        only(cx, init_f.path.is_some(), "path", "\"file\"");
        only(cx, init_f.frame.is_some(), "frame", "\"file\"");
    }
    let min_side = world[..dim].iter().cloned().fold(f32::INFINITY, f32::min);
    if disc_like {
        init.radius = Some(pos_f(
            cx,
            "scene.init.radius",
            init_f.radius,
            (min_side / 4.0) as f64,
            false,
        ));
    }
    if layout == Layout::Disc {
        let c = match &init_f.center {
            None => world[..dim].iter().map(|w| w * 0.5).collect(),
            Some(c) if c.len() != dim => {
                cx.err(
                    "scene.init.center",
                    format!("must have {dim} numbers, got {}", c.len()),
                );
                vec![0.0; dim]
            }
            Some(c) => (0..dim)
                .map(|k| any_f(cx, &format!("scene.init.center[{k}]"), Some(c[k]), 0.0))
                .collect(),
        };
        init.center = Some(c);
    }
    if layout == Layout::Clusters {
        init.count = Some(match init_f.count {
            None => 8,
            Some(c) if c <= 0 => {
                cx.err("scene.init.count", format!("must be > 0, got {c}"));
                1
            }
            Some(c) if c > agents.max(1) as i64 => {
                cx.err(
                    "scene.init.count",
                    format!("must be at most the number of agents ({agents}), got {c}"),
                );
                1
            }
            Some(c) => c as u32,
        });
    }
    if layout == Layout::File {
        match &init_f.path {
            None => cx.err("scene.init.path", "required with layout \"file\""),
            Some(p) => {
                let pb = Path::new(p);
                init.resolved_path = Some(if pb.is_absolute() {
                    pb.to_path_buf()
                } else {
                    src.dir.join(pb)
                });
                init.path = Some(p.clone());
            }
        }
        init.frame = Some(init_f.frame.unwrap_or(-1));
    }

    let render = f.render.clone();
    if let Some(r) = &render {
        if let Some(c) = &r.color {
            if !RENDER_COLORS.contains(&c.as_str()) {
                cx.err(
                    "scene.render.color",
                    format!(
                        "unknown colour mode \"{c}\" (one of: {})",
                        RENDER_COLORS.join(", ")
                    ),
                );
            }
        }
        if let Some(c) = &r.colormap {
            if !RENDER_COLORMAPS.contains(&c.as_str()) {
                cx.err(
                    "scene.render.colormap",
                    format!(
                        "unknown colour map \"{c}\" (one of: {})",
                        RENDER_COLORMAPS.join(", ")
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
            if !RENDER_CAMERAS.contains(&c.as_str()) {
                cx.err(
                    "scene.render.camera",
                    format!(
                        "unknown camera \"{c}\" (one of: {})",
                        RENDER_CAMERAS.join(", ")
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

    let name = f
        .name
        .clone()
        .unwrap_or_else(|| src.default_name.to_string());
    if name.is_empty() || name.len() > 200 {
        cx.err("scene.name", "must be 1 to 200 characters");
    }

    Scene {
        name,
        description: f.description.unwrap_or_default(),
        preset,
        model,
        dim,
        agents,
        steps,
        dt,
        seed: f.seed.unwrap_or(0),
        record_every,
        search: f.search.unwrap_or(Search::Auto),
        world,
        boundary,
        boids,
        vicsek,
        init,
        render,
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

impl Scene {
    /// The largest interaction radius: the neighbour grid's minimum cell size.
    pub fn interaction_radius(&self) -> f32 {
        match (&self.boids, &self.vicsek) {
            (Some(b), _) => b.r_sep.max(b.r_ali).max(b.r_coh),
            (_, Some(v)) => v.r,
            _ => 0.0,
        }
    }

    /// The resolved scene as JSON text: stored in every recording, enough to reproduce it.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a resolved scene always serialises")
    }

    /// Re-read a scene stored in a recording (already validated when it was written).
    pub fn from_stored_json(text: &str) -> Result<Scene, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }
}

// ---------------------------------------------------------------------------------------------
// JSON path → line, so that validation errors (not only syntax errors) can name the line.

/// Maps every value's path (`scene.world.size[0]`, `scene.boids`) to the line it starts on.
/// Tolerant: stops quietly on malformed text (serde reports that with its own line).
pub fn json_lines(text: &str) -> HashMap<String, usize> {
    let mut p = LineScan {
        b: text.as_bytes(),
        i: 0,
        line: 1,
        out: HashMap::new(),
    };
    p.ws();
    p.value("scene".to_string(), 0);
    p.out
}

struct LineScan<'a> {
    b: &'a [u8],
    i: usize,
    line: usize,
    out: HashMap<String, usize>,
}

impl LineScan<'_> {
    fn ws(&mut self) {
        while let Some(&c) = self.b.get(self.i) {
            match c {
                b'\n' => self.line += 1,
                b' ' | b'\t' | b'\r' => {}
                _ => return,
            }
            self.i += 1;
        }
    }
    fn string(&mut self) -> Option<String> {
        if self.b.get(self.i) != Some(&b'"') {
            return None;
        }
        self.i += 1;
        let start = self.i;
        while let Some(&c) = self.b.get(self.i) {
            match c {
                b'\\' => self.i += 2,
                b'"' => {
                    let s = String::from_utf8_lossy(&self.b[start..self.i]).into_owned();
                    self.i += 1;
                    return Some(s);
                }
                b'\n' => {
                    self.line += 1;
                    self.i += 1
                }
                _ => self.i += 1,
            }
        }
        None
    }
    fn value(&mut self, path: String, depth: usize) -> Option<()> {
        if depth > 64 {
            return None;
        }
        self.out.entry(path.clone()).or_insert(self.line);
        match *self.b.get(self.i)? {
            b'{' => {
                self.i += 1;
                loop {
                    self.ws();
                    match *self.b.get(self.i)? {
                        b'}' => {
                            self.i += 1;
                            return Some(());
                        }
                        b',' => {
                            self.i += 1;
                            continue;
                        }
                        _ => {}
                    }
                    let key = self.string()?;
                    self.ws();
                    if self.b.get(self.i) != Some(&b':') {
                        return None;
                    }
                    self.i += 1;
                    self.ws();
                    self.value(format!("{path}.{key}"), depth + 1)?;
                }
            }
            b'[' => {
                self.i += 1;
                let mut k = 0;
                loop {
                    self.ws();
                    match *self.b.get(self.i)? {
                        b']' => {
                            self.i += 1;
                            return Some(());
                        }
                        b',' => {
                            self.i += 1;
                            continue;
                        }
                        _ => {}
                    }
                    self.value(format!("{path}[{k}]"), depth + 1)?;
                    k += 1;
                }
            }
            b'"' => self.string().map(|_| ()),
            _ => {
                let start = self.i;
                while let Some(&c) = self.b.get(self.i) {
                    if matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n') {
                        break;
                    }
                    self.i += 1;
                }
                // Nothing consumed (e.g. `[1, }`): malformed, stop rather than loop.
                (self.i > start).then_some(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(t: &str) -> Result<Scene, Vec<SceneError>> {
        parse(&Source {
            text: t,
            dir: Path::new("."),
            default_name: "t",
        })
    }

    #[test]
    fn error_names_path_and_line() {
        let t = "{\n  \"model\": \"boids\",\n  \"world\": {\n    \"size\": [\n      -3,\n      100\n    ]\n  }\n}";
        let e = parse_str(t).unwrap_err();
        assert_eq!(
            e[0].to_string(),
            "scene.world.size[0]: must be > 0, got -3 (line 5)"
        );
    }

    #[test]
    fn unknown_field_is_an_error_with_path() {
        let e = parse_str("{\"model\": \"boids\",\n \"boids\": {\"r_sepp\": 3}}").unwrap_err();
        let s = e[0].to_string();
        assert!(
            s.starts_with("scene.boids.r_sepp: unknown field `r_sepp`"),
            "{s}"
        );
        assert!(s.ends_with("(line 2)"), "{s}");
    }

    #[test]
    fn presets_fill_defaults() {
        let s = parse_str("{\"preset\": \"vicsek1995\"}").unwrap();
        assert_eq!(s.model, Model::Vicsek);
        assert_eq!(s.agents, 4000);
        assert_eq!(s.world[0], 31.6);
        let s = parse_str("{\"preset\": \"cuplan\", \"dim\": 3}").unwrap();
        assert_eq!(s.boids.unwrap().r_sep, 1.5);
        assert_eq!(s.world, [60.0, 60.0, 60.0]);
    }

    #[test]
    fn stored_json_round_trips() {
        let s = parse_str("{\"model\": \"boids\", \"dim\": 3, \"init\": {\"layout\": \"clusters\", \"count\": 3}}").unwrap();
        let mut back = Scene::from_stored_json(&s.to_json()).unwrap();
        back.search = s.search;
        assert_eq!(s, back);
    }
}
