//! Scenes: the resolved scene the solver runs, and how one is loaded — from a file or a
//! built-in by name — and validated with JSON paths and line numbers.
//!
//! - `file`: the schema as a user writes it (every field optional, unknown fields rejected);
//! - `resolve`: presets fill defaults, every value checked (per section);
//! - the `render` section (the recording's default look) is a [`crate::look::Look`];
//! - `lines`: JSON path → line, so validation errors name the line;
//! - `builtin`: the ready scenes embedded in the binary.

pub mod builtin;
mod ctx;
mod file;
pub mod flight;
mod lines;
pub mod obstacles;
mod overrides;
mod resolve;
pub mod species;
pub mod timeline;

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use ctx::Ctx;
use file::SceneFile;
pub use lines::json_lines;
pub use obstacles::Obstacle;
pub use overrides::Overrides;
use resolve::resolve;
pub use species::{Interaction, Interactions, Role, Species};

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

/// How a Vicsek particle's heading is perturbed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NoiseKind {
    /// Vicsek et al. 1995: a random angle, uniform in [−η/2, η/2), added to the heading of the
    /// summed neighbour velocities.
    #[default]
    Angular,
    /// Grégoire & Chaté 2004: a random unit vector times η·n_i (n_i neighbours, itself
    /// included) added to the summed neighbour velocities before taking the heading.
    Vectorial,
}

impl NoiseKind {
    pub const ALL: [NoiseKind; 2] = [NoiseKind::Angular, NoiseKind::Vectorial];

    /// The code the kernels take (`Params::noise_kind`).
    pub fn code(self) -> u32 {
        match self {
            NoiseKind::Angular => 0,
            NoiseKind::Vectorial => 1,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            NoiseKind::Angular => "angular",
            NoiseKind::Vectorial => "vectorial",
        }
    }
    pub fn from_name(s: &str) -> Option<NoiseKind> {
        NoiseKind::ALL.into_iter().find(|k| k.name() == s)
    }
    /// The default: left out of a stored scene, so that recordings made before noise kinds
    /// existed keep their bytes.
    pub fn is_angular(&self) -> bool {
        *self == NoiseKind::Angular
    }
}

/// Which other agents a boid's alignment and cohesion average over (separation is always
/// metric: every agent within `r_sep`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Neighbours {
    /// Reynolds: every agent within `r_ali` (alignment) and `r_coh` (cohesion).
    #[default]
    Metric,
    /// Ballerini et al. 2008: the `k` nearest other agents, however far (ties broken by agent
    /// id); `r_ali` and `r_coh` are not used.
    Topological { k: u32 },
}

impl Neighbours {
    /// The default: left out of a stored scene, so that recordings made before topological
    /// neighbours existed keep their bytes.
    pub fn is_metric(&self) -> bool {
        *self == Neighbours::Metric
    }
    /// k of a topological rule; 0 for the metric one (`Params::topo_k`).
    pub fn k(&self) -> u32 {
        match self {
            Neighbours::Metric => 0,
            Neighbours::Topological { k } => *k,
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
    #[serde(default, skip_serializing_if = "Neighbours::is_metric")]
    pub neighbours: Neighbours,
    /// Heading noise η, in radians per √(time unit): each step, after steering, the velocity is
    /// turned by an angle uniform in `[−η√dt/2, η√dt/2)` (src/sim/math.rs, `heading_noise`).
    /// 0 (the default) is none, and is left out of a stored scene, so that recordings made
    /// before heading noise existed keep their bytes.
    #[serde(default, skip_serializing_if = "is_zero_f32")]
    pub noise: f32,
    /// Field of view in degrees, in (0, 360]: alignment and cohesion count a neighbour only
    /// within `fov/2` of the agent's heading (separation counts every agent within `r_sep`).
    /// 360 (the default) is all around, and is left out of a stored scene for the same reason.
    #[serde(default = "fov_all_around", skip_serializing_if = "is_all_around")]
    pub fov: f32,
    /// Obstacle avoidance, set exactly when the scene has obstacles (left out of a stored
    /// scene otherwise): the steering acceleration towards the side at a head-on threat just
    /// ahead (default `max_force`), ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub w_avoid: Option<f32>,
    /// ... how far ahead a boid looks, in time units: its path `p + v·t`, t ∈ [0,
    /// look_ahead] (default 1) ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub look_ahead: Option<f32>,
    /// ... and the berth it keeps, in world units (default `r_sep`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clearance: Option<f32>,
    /// Flight aerodynamics and a roost ([`flight::Flight`]; 3D, no species). Left out of a
    /// stored scene when there is none, so that older recordings keep their bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flight: Option<flight::Flight>,
}

/// [`BoidsParams::fov`] when there is no blind angle.
pub const FOV_ALL_AROUND: f32 = 360.0;

fn fov_all_around() -> f32 {
    FOV_ALL_AROUND
}

fn is_all_around(fov: &f32) -> bool {
    *fov == FOV_ALL_AROUND
}

fn is_zero_f32(v: &f32) -> bool {
    *v == 0.0
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VicsekParams {
    pub v0: f32,
    pub r: f32,
    pub noise: f32,
    #[serde(default, skip_serializing_if = "NoiseKind::is_angular")]
    pub noise_kind: NoiseKind,
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
    /// Recorded steps (after the warm-up).
    pub steps: u64,
    /// Steps simulated before the first recorded frame, so a recording can open on a flock
    /// that has already formed. Omitted from a recording's scene when 0, so recordings of
    /// scenes without a warm-up keep the same bytes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub warmup: u64,
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
    /// Shapes boids steer around and never end a step inside (boids only). Left out of a
    /// stored scene when there are none, so that older recordings keep their bytes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub obstacles: Vec<Obstacle>,
    /// The flock's species, agents numbered species by species in this order (boids only).
    /// Left out of a stored scene when there are none, so that older recordings keep their
    /// bytes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub species: Vec<Species>,
    /// With species: `interactions[a][b]`, what an agent of species a does with a neighbour of
    /// species b (every pair present).
    #[serde(default, skip_serializing_if = "Interactions::is_empty")]
    pub interactions: Interactions,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub render: Option<crate::look::Look>,
    /// Keys that change parameters while the run plays ([`timeline`]), in step order. Left out
    /// of a stored scene when there are none, so that older recordings keep their bytes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<timeline::Key>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
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

/// A scene that could not be loaded: the file, or the built-in, and everything wrong with it.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read scene file {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("scene file {}{}", path.display(), list(errors))]
    Invalid {
        path: PathBuf,
        errors: Vec<SceneError>,
    },
    #[error("built-in scene {name}: {}", errors[0])]
    Builtin {
        name: &'static str,
        errors: Vec<SceneError>,
    },
    #[error("{} is {what}, not a scene file (and no built-in scene has that name; built-in: {})", path.display(), builtin::names().join(", "))]
    NotAFile { path: PathBuf, what: &'static str },
    #[error("no scene file {arg} and no built-in scene named {name:?}{} (built-in: {})", did_you_mean(name), builtin::names().join(", "))]
    NotFound { arg: String, name: String },
}

/// `; did you mean "murmuration"?` when `name` is close to a built-in scene's name.
fn did_you_mean(name: &str) -> String {
    builtin::closest(name)
        .map(|n| format!("; did you mean {n:?}?"))
        .unwrap_or_default()
}

fn list(errors: &[SceneError]) -> String {
    let mut msg = " is not valid:".to_string();
    for e in errors {
        msg.push_str(&format!("\n  {e}"));
    }
    msg
}

impl Scene {
    /// A scene argument: an existing regular file, else a built-in scene by name (with or
    /// without `.json`).
    ///
    /// Something that exists under the name but is not a regular file (a directory, a FIFO, a
    /// device) is never read — a FIFO would block the read forever. If a built-in scene has
    /// the name, it is used and a note says what was passed over; otherwise it is an error
    /// naming it.
    pub fn load(arg: &str) -> Result<Scene, LoadError> {
        Scene::load_with_text(arg).map(|(s, _)| s)
    }

    /// [`Scene::load`], with the scene's text as written (the file's, or the built-in's).
    pub fn load_with_text(arg: &str) -> Result<(Scene, String), LoadError> {
        let path = Path::new(arg);
        let name = arg.strip_suffix(".json").unwrap_or(arg);
        if let Ok(meta) = std::fs::metadata(path) {
            if let Some(what) = crate::sys::not_a_file(meta.file_type()) {
                return match builtin::find(name) {
                    Some(b) => {
                        log::info!(
                            "note: {arg} here is {what}, not a scene file: using the built-in \
                             scene {name:?}"
                        );
                        Scene::builtin(b).map(|s| (s, b.text.to_string()))
                    }
                    None => Err(LoadError::NotAFile {
                        path: path.to_path_buf(),
                        what,
                    }),
                };
            }
            // Opened without blocking and checked again on the descriptor: a file swapped for
            // a FIFO after the check above is refused, not waited on.
            let text =
                crate::sys::read_text(path, crate::sys::MAX_SCENE_BYTES).map_err(|source| {
                    LoadError::Read {
                        path: path.to_path_buf(),
                        source,
                    }
                })?;
            let dir = match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("scene");
            return parse(&Source {
                text: &text,
                dir,
                default_name: stem,
            })
            .map(|s| (s, text.clone()))
            .map_err(|errors| LoadError::Invalid {
                path: path.to_path_buf(),
                errors,
            });
        }
        match builtin::find(name) {
            Some(b) => Scene::builtin(b).map(|s| (s, b.text.to_string())),
            None => Err(LoadError::NotFound {
                arg: arg.to_string(),
                name: name.to_string(),
            }),
        }
    }

    /// A built-in scene.
    pub fn builtin(b: &builtin::Builtin) -> Result<Scene, LoadError> {
        parse(&Source {
            text: b.text,
            dir: Path::new("."),
            default_name: b.name,
        })
        .map_err(|errors| LoadError::Builtin {
            name: b.name,
            errors,
        })
    }
}
/// Longest name (a run of characters without spaces, dots, backticks or brackets) printed
/// whole in a message.
const NAME_SHOWN: usize = 80;

/// `text` with every name longer than [`NAME_SHOWN`] characters cut to its start and its
/// length (`aaaa… (300000 bytes)`).
fn shorten_names(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(4 * NAME_SHOWN));
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if word.chars().count() > NAME_SHOWN {
            out.extend(word.chars().take(32));
            out.push_str(&format!("… ({} bytes)", word.len()));
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for c in text.chars() {
        if c.is_whitespace() || matches!(c, '.' | '`' | '[' | ']' | ',' | '"') {
            flush(&mut word, &mut out);
            out.push(c);
        } else {
            word.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// Parse and validate a scene. All problems found are returned, the first one first.
pub fn parse(src: &Source) -> Result<Scene, Vec<SceneError>> {
    let mut de = serde_json::Deserializer::from_str(src.text);
    let syntax = |path: String, inner: &serde_json::Error| {
        let mut msg = inner.to_string();
        // serde_json appends " at line L column C": we print the line our own way.
        if let Some(i) = msg.rfind(" at line ") {
            msg.truncate(i);
        }
        // "expected i64" is Rust's word, not the user's.
        let msg = crate::units::types_in_words(&msg);
        // A key of 300 KB is named by its start, not printed whole.
        let (path, msg) = (shorten_names(&path), shorten_names(&msg));
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
    let mut cx = Ctx { errors: Vec::new() };
    let scene = resolve(file, src, &mut cx);
    if cx.errors.is_empty() {
        return Ok(scene);
    }
    // A key's parameter is named `set["boids.v_max"]`; the text's path to it reads
    // `set.boids.v_max`.
    let in_text = |p: &str| p.replace("[\"", ".").replace("\"]", "");
    let texts: Vec<String> = cx.errors.iter().map(|e| in_text(&e.path)).collect();
    let wanted: std::collections::HashSet<&str> = texts.iter().map(String::as_str).collect();
    let lines = json_lines(src.text, &wanted);
    let mut errors = cx.errors;
    for e in &mut errors {
        e.line = lines.get(&in_text(&e.path)).copied();
    }
    Err(errors)
}

impl Scene {
    /// The largest interaction radius: the neighbour grid's minimum cell size.
    pub fn interaction_radius(&self) -> f32 {
        let r = |b: &BoidsParams| b.r_sep.max(b.r_ali).max(b.r_coh);
        match (&self.boids, &self.vicsek) {
            (Some(_), _) if !self.species.is_empty() => {
                self.species.iter().map(|s| r(&s.boids)).fold(0.0, f32::max)
            }
            (Some(b), _) => r(b),
            (_, Some(v)) => v.r,
            _ => 0.0,
        }
    }

    /// Sets the agent count to `n`; with species, each species' count is scaled to keep its
    /// share (at least one each, the rounding taken up by the largest), so that they still
    /// sum to `n`. Fails, changing nothing, when there are fewer agents than species.
    pub fn set_agents(&mut self, n: u32) -> Result<(), String> {
        if !self.species.is_empty() {
            let k = self.species.len();
            if (n as usize) < k {
                return Err(format!(
                    "at least {k} with {k} species (scene.species: one agent each), got {n}"
                ));
            }
            let total: u64 = self.species.iter().map(|s| s.agents as u64).sum();
            let mut counts: Vec<u64> = self
                .species
                .iter()
                .map(|s| (s.agents as u64 * n as u64 / total.max(1)).max(1))
                .collect();
            let largest = (0..k)
                .max_by_key(|&i| (counts[i], std::cmp::Reverse(i)))
                .unwrap_or(0);
            let sum: u64 = counts.iter().sum();
            if sum <= n as u64 {
                counts[largest] += n as u64 - sum;
            } else {
                // Every species at least one: take the excess from the largest counts.
                let mut excess = sum - n as u64;
                while excess > 0 {
                    let i = (0..k).max_by_key(|&i| counts[i]).unwrap_or(0);
                    counts[i] -= 1;
                    excess -= 1;
                }
            }
            for (s, c) in self.species.iter_mut().zip(counts) {
                s.agents = c as u32;
            }
        }
        self.agents = n;
        Ok(())
    }

    /// The resolved scene as JSON text: stored in every recording, enough to reproduce it.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a resolved scene always serialises")
    }

    /// Re-read a scene stored in a recording (already validated when it was written).
    pub fn from_stored_json(text: &str) -> Result<Scene, serde_json::Error> {
        serde_json::from_str(text)
    }
}

#[cfg(test)]
mod tests;
