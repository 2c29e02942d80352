//! Species: the flock split into named groups, each with its own boids weights, radii and
//! speeds (partial overrides of the scene's `boids`), a role (a flock, or predators that chase
//! the others), a colour and a sprite size, and who aligns with, coheres with and separates
//! from whom.
//!
//! ```json
//! "species": [
//!   {"name": "starling", "agents": 3000, "boids": {"w_flee": 400, "flee_radius": 90}},
//!   {"name": "falcon", "agents": 2, "role": "predator",
//!    "boids": {"v_min": 120, "v_max": 230, "chase_radius": 400},
//!    "render": {"colour": "#ff5a36", "size": 2.5}}
//! ],
//! "interactions": {"starling": {"falcon": {"separate": false}}}
//! ```
//! Agents are numbered species by species, in the order listed: the first species' agents
//! are 0..n0, the next n0..n0+n1, and so on. The counts sum to the flock; `scene.agents`, when
//! given too, must equal that sum.
//!
//! `interactions[a][b]` says what an agent of species `a` does with a neighbour of species
//! `b` (`align`, `cohere`, `separate`, each a bool); anything not given takes the default: a
//! species aligns, coheres and separates with its own kind, and only separates from the others.
//! The resolved scene stores the whole matrix.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ctx::Ctx;
use super::BoidsParams;

/// Most species a scene may list (the recording stores a species id as one byte).
pub const MAX_SPECIES: usize = 256;

/// What a species does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Flocks by the boids rules with those the interactions name (and flees predators).
    #[default]
    Flock,
    /// Flocks likewise, and chases the nearest agent of a flock species within its
    /// `chase_radius`.
    Predator,
}

impl Role {
    pub fn is_flock(&self) -> bool {
        *self == Role::Flock
    }
}

/// A predator's chase: it steers with acceleration `weight` towards the nearest prey within
/// `radius`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Chase {
    pub radius: f32,
    pub weight: f32,
}

/// A prey's flight: it steers with acceleration `weight` away from each predator within
/// `radius`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Flee {
    pub radius: f32,
    pub weight: f32,
}

/// One species, resolved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Species {
    pub name: String,
    pub agents: u32,
    #[serde(default, skip_serializing_if = "Role::is_flock")]
    pub role: Role,
    /// The scene's boids parameters with this species' overrides.
    pub boids: BoidsParams,
    /// Predators only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chase: Option<Chase>,
    /// Flock species of a scene with predators only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flee: Option<Flee>,
    /// `render.colour`: the colour `forge render --color species` draws it in, as `[r, g, b]`
    /// (sRGB bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub colour: Option<[u8; 3]>,
    /// `render.size`: its sprites' size as a multiple of the look's point size (a falcon drawn
    /// larger than the starlings it hunts); 1 when not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<f32>,
}

/// What an agent of one species does with a neighbour of another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Interaction {
    pub align: bool,
    pub cohere: bool,
    pub separate: bool,
}

impl Interaction {
    /// The default: all three with its own species, only separation with the others.
    pub fn default_for(same: bool) -> Interaction {
        Interaction {
            align: same,
            cohere: same,
            separate: true,
        }
    }
}

/// The whole matrix, by species name: `interactions[a][b]`.
pub type Interactions = BTreeMap<String, BTreeMap<String, Interaction>>;

/// The colours of species that give none (`render.colour`), in turn: a qualitative set that
/// reads on dark and light backgrounds.
pub const PALETTE: [[u8; 3]; 8] = [
    [0x4c, 0x9b, 0xe8],
    [0xff, 0x5a, 0x36],
    [0x5c, 0xc4, 0x6a],
    [0xf2, 0xc1, 0x4e],
    [0xb3, 0x7f, 0xe0],
    [0x3f, 0xc7, 0xc7],
    [0xe8, 0x6f, 0xa8],
    [0xa0, 0xa0, 0xa0],
];

/// The colour each species is drawn in by `--color species` (sRGB bytes, by species index):
/// its `render.colour`, else [`PALETTE`]'s colour for its place in the list.
pub fn colours(species: &[Species]) -> Vec<[u8; 3]> {
    species
        .iter()
        .enumerate()
        .map(|(i, s)| s.colour.unwrap_or(PALETTE[i % PALETTE.len()]))
        .collect()
}

/// Each species' agent ids `lo..hi` in a flock of `agents`: species hold consecutive ids in
/// scene order. Counts that do not sum to the flock (never, from a validated scene and
/// `Scene::set_agents`): the last species takes the rest, or those past the flock are cut.
pub fn id_ranges(species: &[Species], agents: u32) -> Vec<(u32, u32)> {
    let mut lo = 0u32;
    let last = species.len().saturating_sub(1);
    species
        .iter()
        .enumerate()
        .map(|(i, sp)| {
            let end = if i == last {
                agents
            } else {
                lo.saturating_add(sp.agents).min(agents)
            };
            let r = (lo, end.max(lo));
            lo = r.1;
            r
        })
        .collect()
}

/// Each species' sprite size as a multiple of the look's point size (by species index): its
/// `render.size`, else 1.
pub fn sizes(species: &[Species]) -> Vec<f32> {
    species.iter().map(|s| s.size.unwrap_or(1.0)).collect()
}

/// The range of `render.size`.
const MIN_SIZE: f64 = 0.25;
const MAX_SIZE: f64 = 8.0;

// ---------------------------------------------------------------------------------------------
// As written.

#[derive(Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct SpeciesFile {
    pub(super) name: Option<String>,
    pub(super) agents: Option<i64>,
    pub(super) role: Option<serde_json::Value>,
    pub(super) boids: Option<SpeciesBoidsFile>,
    pub(super) render: Option<SpeciesRenderFile>,
}

/// `species[i].boids`: overrides of the scene's boids parameters, and the predator-prey rules.
#[derive(Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct SpeciesBoidsFile {
    pub(super) r_sep: Option<f64>,
    pub(super) r_ali: Option<f64>,
    pub(super) r_coh: Option<f64>,
    pub(super) w_sep: Option<f64>,
    pub(super) w_ali: Option<f64>,
    pub(super) w_coh: Option<f64>,
    pub(super) max_force: Option<f64>,
    pub(super) v_min: Option<f64>,
    pub(super) v_max: Option<f64>,
    pub(super) noise: Option<f64>,
    pub(super) fov: Option<f64>,
    /// Predators: the chase.
    pub(super) chase_radius: Option<f64>,
    pub(super) w_chase: Option<f64>,
    /// Prey: the flight.
    pub(super) flee_radius: Option<f64>,
    pub(super) w_flee: Option<f64>,
}

#[derive(Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct SpeciesRenderFile {
    pub(super) colour: Option<String>,
    pub(super) size: Option<f64>,
}

#[derive(Clone, Copy, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct InteractionFile {
    pub(super) align: Option<bool>,
    pub(super) cohere: Option<bool>,
    pub(super) separate: Option<bool>,
}

pub(super) type InteractionsFile = BTreeMap<String, BTreeMap<String, InteractionFile>>;

/// `"#RRGGBB"` as bytes.
fn colour(s: &str) -> Option<[u8; 3]> {
    let h = s.strip_prefix('#')?;
    if h.len() != 6 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let byte = |i: usize| u8::from_str_radix(&h[i..i + 2], 16).ok();
    Some([byte(0)?, byte(2)?, byte(4)?])
}

/// A check of a number (its path, value and default, and whether 0 is allowed) → the value.
type SignCheck<'a> = &'a dyn Fn(&mut Ctx, &str, Option<f64>, f64, bool) -> f32;
/// A check of a number (its path, value and default) → the value.
type NumberCheck<'a> = &'a dyn Fn(&mut Ctx, &str, Option<f64>, f64) -> f32;

/// The number checks of `resolve.rs`, handed in so that species use the very same rules.
pub(super) struct Checks<'a> {
    /// finite, > 0 (or >= 0 when the flag says so), storable as f32.
    pub(super) pos_f: SignCheck<'a>,
    /// finite, any sign.
    pub(super) any_f: NumberCheck<'a>,
    /// the heading noise (bounded by dt).
    pub(super) noise: &'a dyn Fn(&mut Ctx, &str, Option<f64>) -> f32,
    /// the field of view.
    pub(super) fov: &'a dyn Fn(&mut Ctx, &str, Option<f64>) -> f32,
}

/// `scene.species` and `scene.interactions`, resolved against the scene's boids parameters
/// `base`. Returns the species and the full matrix (both empty without species).
pub(super) fn resolve(
    cx: &mut Ctx,
    given: Option<&[SpeciesFile]>,
    interactions: Option<&InteractionsFile>,
    base: Option<&BoidsParams>,
    checks: &Checks,
) -> (Vec<Species>, Interactions) {
    let Some(given) = given else {
        if interactions.is_some() {
            cx.err(
                "scene.interactions",
                "only used with species (scene.species lists none)",
            );
        }
        return (Vec::new(), Interactions::new());
    };
    let Some(base) = base else {
        cx.err("scene.species", "only with model \"boids\"");
        return (Vec::new(), Interactions::new());
    };
    if given.is_empty() {
        cx.err(
            "scene.species",
            "must list at least one species (or be left out)",
        );
        return (Vec::new(), Interactions::new());
    }
    if given.len() > MAX_SPECIES {
        cx.err(
            "scene.species",
            format!("at most {MAX_SPECIES} species, got {}", given.len()),
        );
        return (Vec::new(), Interactions::new());
    }
    let roles: Vec<Role> = given
        .iter()
        .enumerate()
        .map(|(i, s)| role(cx, i, s.role.as_ref()))
        .collect();
    let any_predator = roles.contains(&Role::Predator);
    if any_predator && !roles.contains(&Role::Flock) {
        cx.err(
            "scene.species",
            "predators need prey: at least one species must have role \"flock\"",
        );
    }
    let mut out: Vec<Species> = Vec::with_capacity(given.len());
    for (i, s) in given.iter().enumerate() {
        let name = name(cx, i, s.name.as_ref(), &out);
        let agents = agents(cx, i, s.agents);
        let b = s.boids.clone().unwrap_or_default();
        let p = boids(cx, i, &b, base, checks);
        let predator = roles[i] == Role::Predator;
        let (chase, flee) = hunting(cx, i, &b, &p, predator, any_predator, checks);
        let (colour, size) = look(cx, i, s.render.as_ref());
        out.push(Species {
            name,
            agents,
            role: roles[i],
            boids: p,
            chase,
            flee,
            colour,
            size,
        });
    }
    let matrix = matrix(cx, &out, interactions);
    (out, matrix)
}

/// `scene.species[i].name`: required, 1 to 64 characters, no control characters, unique among
/// the species before it (`done`).
fn name(cx: &mut Ctx, i: usize, given: Option<&String>, done: &[Species]) -> String {
    let at = format!("scene.species[{i}].name");
    match given {
        None => {
            cx.err(&at, "required");
            format!("species{i}")
        }
        Some(n) if n.is_empty() || n.chars().count() > 64 => {
            cx.err(&at, "must be 1 to 64 characters");
            n.clone()
        }
        Some(n) if n.chars().any(char::is_control) => {
            cx.err(&at, "must not contain control characters");
            n.clone()
        }
        Some(n) => {
            if let Some(j) = done.iter().position(|o| &o.name == n) {
                cx.err(
                    &at,
                    format!("{n:?} is already the name of scene.species[{j}]"),
                );
            }
            n.clone()
        }
    }
}

/// `scene.species[i].agents`: required, 1 to the scene's limit.
fn agents(cx: &mut Ctx, i: usize, given: Option<i64>) -> u32 {
    let at = format!("scene.species[{i}].agents");
    match given {
        None => {
            cx.err(&at, "required");
            1
        }
        Some(a) if a < 1 => {
            cx.err(&at, format!("must be >= 1, got {a}"));
            1
        }
        Some(a) if a as u64 > super::MAX_AGENTS => {
            cx.err(
                &at,
                format!("must be at most {}, got {a}", super::MAX_AGENTS),
            );
            1
        }
        Some(a) => a as u32,
    }
}

/// `scene.species[i].boids`: the scene's boids parameters `base` with the species' own,
/// each checked as the scene's are.
fn boids(
    cx: &mut Ctx,
    i: usize,
    b: &SpeciesBoidsFile,
    base: &BoidsParams,
    checks: &Checks,
) -> BoidsParams {
    let bp = |f: &str| format!("scene.species[{i}].boids.{f}");
    let mut p = base.clone();
    p.r_sep = (checks.pos_f)(cx, &bp("r_sep"), b.r_sep, base.r_sep as f64, true);
    p.r_ali = (checks.pos_f)(cx, &bp("r_ali"), b.r_ali, base.r_ali as f64, true);
    p.r_coh = (checks.pos_f)(cx, &bp("r_coh"), b.r_coh, base.r_coh as f64, true);
    p.w_sep = (checks.any_f)(cx, &bp("w_sep"), b.w_sep, base.w_sep as f64);
    p.w_ali = (checks.any_f)(cx, &bp("w_ali"), b.w_ali, base.w_ali as f64);
    p.w_coh = (checks.any_f)(cx, &bp("w_coh"), b.w_coh, base.w_coh as f64);
    p.max_force = (checks.pos_f)(
        cx,
        &bp("max_force"),
        b.max_force,
        base.max_force as f64,
        true,
    );
    p.v_min = (checks.pos_f)(cx, &bp("v_min"), b.v_min, base.v_min as f64, true);
    p.v_max = (checks.pos_f)(cx, &bp("v_max"), b.v_max, base.v_max as f64, false);
    if b.noise.is_some() {
        p.noise = (checks.noise)(cx, &bp("noise"), b.noise);
    }
    if b.fov.is_some() {
        p.fov = (checks.fov)(cx, &bp("fov"), b.fov);
    }
    if p.v_min >= p.v_max {
        let f = if b.v_min.is_some() { "v_min" } else { "v_max" };
        cx.err(
            &bp(f),
            format!(
                "v_min must be < v_max, got v_min {} >= v_max {} (the scene's boids give \
                 what the species does not)",
                p.v_min, p.v_max
            ),
        );
    }
    p
}

/// A predator's chase and a prey's flight (`any_predator`: some species hunts), from
/// `scene.species[i].boids` with the species' parameters `p`; the keys of the other role are
/// refused.
fn hunting(
    cx: &mut Ctx,
    i: usize,
    b: &SpeciesBoidsFile,
    p: &BoidsParams,
    predator: bool,
    any_predator: bool,
    checks: &Checks,
) -> (Option<Chase>, Option<Flee>) {
    let bp = |f: &str| format!("scene.species[{i}].boids.{f}");
    let reach = p.r_coh.max(p.r_ali) as f64;
    let chase = if predator {
        Some(Chase {
            radius: (checks.pos_f)(cx, &bp("chase_radius"), b.chase_radius, 4.0 * reach, false),
            weight: (checks.any_f)(cx, &bp("w_chase"), b.w_chase, p.max_force as f64),
        })
    } else {
        for (f, v) in [("chase_radius", b.chase_radius), ("w_chase", b.w_chase)] {
            if v.is_some() {
                cx.err(&bp(f), "only for a species with role \"predator\"");
            }
        }
        None
    };
    let flee = if !predator && any_predator {
        Some(Flee {
            radius: (checks.pos_f)(cx, &bp("flee_radius"), b.flee_radius, 2.0 * reach, false),
            weight: (checks.any_f)(cx, &bp("w_flee"), b.w_flee, p.max_force as f64),
        })
    } else {
        for (f, v) in [("flee_radius", b.flee_radius), ("w_flee", b.w_flee)] {
            if v.is_some() {
                cx.err(
                    &bp(f),
                    if predator {
                        "only for a species with role \"flock\" (predators do not flee)"
                    } else {
                        "only used when another species has role \"predator\""
                    },
                );
            }
        }
        None
    };
    (chase, flee)
}

/// `scene.species[i].render`: the species' colour and sprite size, where given.
fn look(
    cx: &mut Ctx,
    i: usize,
    render: Option<&SpeciesRenderFile>,
) -> (Option<[u8; 3]>, Option<f32>) {
    let at = |f: &str| format!("scene.species[{i}].render.{f}");
    let colour = render.and_then(|r| {
        let c = r.colour.as_deref()?;
        let parsed = colour(c);
        if parsed.is_none() {
            cx.err(
                &at("colour"),
                format!("must be a colour as \"#RRGGBB\" (hex digits), got {c:?}"),
            );
        }
        parsed
    });
    let size = render.and_then(|r| {
        let v = r.size?;
        if !(v.is_finite() && (MIN_SIZE..=MAX_SIZE).contains(&v)) {
            cx.err(
                &at("size"),
                format!(
                    "must be a multiple of the point size from {MIN_SIZE} to {MAX_SIZE}, \
                     got {v}"
                ),
            );
            return None;
        }
        Some(v as f32)
    });
    (colour, size)
}

fn role(cx: &mut Ctx, i: usize, v: Option<&serde_json::Value>) -> Role {
    match v.map(|v| (v, v.as_str())) {
        None => Role::Flock,
        Some((_, Some("flock"))) => Role::Flock,
        Some((_, Some("predator"))) => Role::Predator,
        Some((v, _)) => {
            cx.err(
                &format!("scene.species[{i}].role"),
                format!("expected \"flock\" or \"predator\", got {v}"),
            );
            Role::Flock
        }
    }
}

/// The full matrix: the defaults, with what `given` says; a name that is no species' is an
/// error at its path.
fn matrix(cx: &mut Ctx, species: &[Species], given: Option<&InteractionsFile>) -> Interactions {
    let names: Vec<&str> = species.iter().map(|s| s.name.as_str()).collect();
    let known = |n: &str| names.contains(&n);
    let listed = || {
        names
            .iter()
            .map(|n| format!("{n:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut m = Interactions::new();
    for a in &names {
        let row = m.entry(a.to_string()).or_default();
        for b in &names {
            row.insert(b.to_string(), Interaction::default_for(a == b));
        }
    }
    for (a, row) in given.into_iter().flatten() {
        if !known(a) {
            cx.err(
                &format!("scene.interactions.{a}"),
                format!("no species is named {a:?} (species: {})", listed()),
            );
            continue;
        }
        for (b, f) in row {
            if !known(b) {
                cx.err(
                    &format!("scene.interactions.{a}.{b}"),
                    format!("no species is named {b:?} (species: {})", listed()),
                );
                continue;
            }
            let e = m
                .get_mut(a)
                .and_then(|r| r.get_mut(b))
                .expect("filled above");
            e.align = f.align.unwrap_or(e.align);
            e.cohere = f.cohere.unwrap_or(e.cohere);
            e.separate = f.separate.unwrap_or(e.separate);
        }
    }
    m
}
