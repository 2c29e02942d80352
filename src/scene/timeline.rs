//! The timeline: scene parameters that change while the run plays.
//!
//! ```json
//! "timeline": [
//!   {"step": 2000, "set": {"vicsek.noise": 0.3}},
//!   {"time": 400,  "set": {"vicsek.noise": 0.9}, "interpolation": "linear"}
//! ]
//! ```
//! A key sets parameters, by their path in the scene, at a step (or at a simulated time
//! `step × dt`, rounded to the nearest step). Its `interpolation` says how each value gets
//! there from the previous key of the same parameter (from the scene's own value at step 0
//! where there is none): `step` (the default) jumps at the key's step, `linear` ramps, `smooth`
//! ramps with zero slope at both ends (`3s² − 2s³`). The value in effect at step t is the
//! one the step from t to t + 1 uses, so a recorded frame at step t was made by the values
//! before t and is followed by those at t.
//!
//! Values are computed on the host in `f64` from the stored `f32` endpoints and rounded to
//! `f32` once per step; both backends take the same numbers, so a run with a timeline keeps the
//! determinism contract.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::flight::FlightField;
use super::Scene;

/// Most keys a timeline may hold (counted while parsing).
pub const MAX_KEYS: usize = 100_000;

pub use crate::look::interp::{Interpolation, Point};

/// One key of a resolved timeline, as a recording stores it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Key {
    /// The solver step it takes effect at (a key given by time: `round(time / dt)`).
    pub step: u64,
    #[serde(default, skip_serializing_if = "Interpolation::is_step")]
    pub interpolation: Interpolation,
    /// Parameter path → value.
    pub set: BTreeMap<String, f32>,
    /// Set while the run played ([`Scene::set_at`]): it changes only the steps from its own
    /// on, so a ramp it falls inside keeps its course before it ([`Point::live`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub live: bool,
}

/// A boids parameter a key may set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoidsField {
    WSep,
    WAli,
    WCoh,
    MaxForce,
    VMin,
    VMax,
    Noise,
    Fov,
}

impl BoidsField {
    pub const ALL: [BoidsField; 8] = [
        BoidsField::WSep,
        BoidsField::WAli,
        BoidsField::WCoh,
        BoidsField::MaxForce,
        BoidsField::VMin,
        BoidsField::VMax,
        BoidsField::Noise,
        BoidsField::Fov,
    ];
    pub fn name(self) -> &'static str {
        match self {
            BoidsField::WSep => "w_sep",
            BoidsField::WAli => "w_ali",
            BoidsField::WCoh => "w_coh",
            BoidsField::MaxForce => "max_force",
            BoidsField::VMin => "v_min",
            BoidsField::VMax => "v_max",
            BoidsField::Noise => "noise",
            BoidsField::Fov => "fov",
        }
    }
    fn get(self, b: &super::BoidsParams) -> f32 {
        match self {
            BoidsField::WSep => b.w_sep,
            BoidsField::WAli => b.w_ali,
            BoidsField::WCoh => b.w_coh,
            BoidsField::MaxForce => b.max_force,
            BoidsField::VMin => b.v_min,
            BoidsField::VMax => b.v_max,
            BoidsField::Noise => b.noise,
            BoidsField::Fov => b.fov,
        }
    }
    fn slot(self, b: &mut super::BoidsParams) -> &mut f32 {
        match self {
            BoidsField::WSep => &mut b.w_sep,
            BoidsField::WAli => &mut b.w_ali,
            BoidsField::WCoh => &mut b.w_coh,
            BoidsField::MaxForce => &mut b.max_force,
            BoidsField::VMin => &mut b.v_min,
            BoidsField::VMax => &mut b.v_max,
            BoidsField::Noise => &mut b.noise,
            BoidsField::Fov => &mut b.fov,
        }
    }
}

/// A predator's chase or a prey's flight (`species[i].boids.w_chase`, ...), kept beside the
/// species' boids parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HuntField {
    WChase,
    ChaseRadius,
    WFlee,
    FleeRadius,
}

impl HuntField {
    pub const ALL: [HuntField; 4] = [
        HuntField::WChase,
        HuntField::ChaseRadius,
        HuntField::WFlee,
        HuntField::FleeRadius,
    ];
    pub fn name(self) -> &'static str {
        match self {
            HuntField::WChase => "w_chase",
            HuntField::ChaseRadius => "chase_radius",
            HuntField::WFlee => "w_flee",
            HuntField::FleeRadius => "flee_radius",
        }
    }
    fn is_chase(self) -> bool {
        matches!(self, HuntField::WChase | HuntField::ChaseRadius)
    }
    /// A radius (> 0), not a weight (any sign).
    pub fn is_radius(self) -> bool {
        matches!(self, HuntField::ChaseRadius | HuntField::FleeRadius)
    }
}

/// What a parameter path names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// `boids.<field>` (a scene without species).
    Boids(BoidsField),
    /// `boids.flight.<field>` (a scene whose boids fly: src/scene/flight.rs).
    Flight(FlightField),
    /// `species[i].boids.<field>`.
    Species(usize, BoidsField),
    /// `species[i].boids.w_chase` and the rest of a chase or a flight.
    Hunt(usize, HuntField),
    /// `vicsek.v0`.
    VicsekV0,
    /// `vicsek.noise`.
    VicsekNoise,
    /// `obstacles[i].center[k]`, `obstacles[i].radius`, ..., `obstacles[i].present`.
    Obstacle(usize, ObstacleField),
    /// `species[i].present`: whether species i's agents are in the world (0 or 1: what `add`
    /// and `remove` set).
    Present(usize),
}

impl Target {
    /// Whether it says that a thing is there (1) or gone (0): a value set by `add` and
    /// `remove`, which takes effect at its step (never ramped).
    pub fn is_presence(&self) -> bool {
        matches!(
            self,
            Target::Present(_) | Target::Obstacle(_, ObstacleField::Present)
        )
    }
}

/// An obstacle's value a key may set: one coordinate of a point (`center[1]`), a radius, or
/// whether it is there at all (`present`, 0 or 1: what `add` and `remove` set).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObstacleField {
    /// A circle's or sphere's centre.
    Center(usize),
    /// A segment's ends.
    From(usize),
    To(usize),
    /// A box's corners.
    Min(usize),
    Max(usize),
    /// A circle's or segment's radius.
    Radius,
    Present,
}

impl ObstacleField {
    /// The point fields, by name.
    pub const POINTS: [&'static str; 5] = ["center", "from", "to", "min", "max"];

    fn point(name: &str, k: usize) -> Option<ObstacleField> {
        Some(match name {
            "center" => ObstacleField::Center(k),
            "from" => ObstacleField::From(k),
            "to" => ObstacleField::To(k),
            "min" => ObstacleField::Min(k),
            "max" => ObstacleField::Max(k),
            _ => return None,
        })
    }

    /// The point field's name and coordinate (None: radius or present).
    pub fn coordinate(self) -> Option<(&'static str, usize)> {
        match self {
            ObstacleField::Center(k) => Some(("center", k)),
            ObstacleField::From(k) => Some(("from", k)),
            ObstacleField::To(k) => Some(("to", k)),
            ObstacleField::Min(k) => Some(("min", k)),
            ObstacleField::Max(k) => Some(("max", k)),
            ObstacleField::Radius | ObstacleField::Present => None,
        }
    }

    /// Its slot in `o`; None where the shape has no such field.
    fn slot(self, o: &mut super::Obstacle) -> Option<&mut f32> {
        use super::Obstacle as O;
        match (self, o) {
            (ObstacleField::Center(k), O::Circle { center, .. }) => center.get_mut(k),
            (ObstacleField::Radius, O::Circle { radius, .. } | O::Segment { radius, .. }) => {
                Some(radius)
            }
            (ObstacleField::From(k), O::Segment { from, .. }) => from.get_mut(k),
            (ObstacleField::To(k), O::Segment { to, .. }) => to.get_mut(k),
            (ObstacleField::Min(k), O::Box { min, .. }) => min.get_mut(k),
            (ObstacleField::Max(k), O::Box { max, .. }) => max.get_mut(k),
            _ => None,
        }
    }

    /// The fields a shape of `kind` has, for messages.
    fn of_kind(kind: &str) -> &'static str {
        match kind {
            "circle" => "center, radius",
            "segment" => "from, to, radius",
            _ => "min, max",
        }
    }
}

/// The paths a key may set, for messages.
pub fn keyable() -> String {
    let fields: Vec<&str> = BoidsField::ALL.iter().map(|f| f.name()).collect();
    let hunt: Vec<&str> = HuntField::ALL.iter().map(|f| f.name()).collect();
    let flight: Vec<&str> = FlightField::ALL.iter().map(|f| f.name()).collect();
    format!(
        "vicsek.noise, vicsek.v0, boids.{{{f}}}, boids.flight.{{{l}}}, \
         species[i].boids.{{{f},{h}}}, \
         species[i].present, obstacles[i].{{center,from,to,min,max}}[k], \
         obstacles[i].{{radius,present}}",
        f = fields.join(","),
        h = hunt.join(","),
        l = flight.join(",")
    )
}

impl Target {
    /// The target a path names, or why it names none (in words, for a message).
    pub fn parse(path: &str) -> Result<Target, String> {
        let field = |name: &str| {
            BoidsField::ALL
                .into_iter()
                .find(|f| f.name() == name)
                .ok_or_else(|| format!("no boids parameter {name:?} can be keyed"))
        };
        if let Some(f) = path.strip_prefix("boids.flight.") {
            return FlightField::ALL
                .into_iter()
                .find(|x| x.name() == f)
                .map(Target::Flight)
                .ok_or_else(|| format!("no flight parameter {f:?} can be keyed"));
        }
        if let Some(f) = path.strip_prefix("boids.") {
            return field(f).map(Target::Boids);
        }
        if let Some(rest) = path.strip_prefix("species[") {
            if let Some(index) = rest.strip_suffix("].present") {
                return plain_index(index, "species").map(Target::Present);
            }
            let (index, f) = rest
                .split_once("].boids.")
                .ok_or_else(|| "a species parameter reads species[i].boids.<name>".to_string())?;
            let i = plain_index(index, "species")?;
            if let Some(h) = HuntField::ALL.into_iter().find(|h| h.name() == f) {
                return Ok(Target::Hunt(i, h));
            }
            return field(f).map(|f| Target::Species(i, f));
        }
        if let Some(rest) = path.strip_prefix("obstacles[") {
            return parse_obstacle(rest);
        }
        match path {
            "vicsek.noise" => Ok(Target::VicsekNoise),
            "vicsek.v0" => Ok(Target::VicsekV0),
            _ => Err("no parameter of that name can be keyed".to_string()),
        }
    }

    /// The parameter's value in `s`; an error (in words) where the scene has no such parameter.
    pub fn get(&self, s: &Scene) -> Result<f32, String> {
        match *self {
            Target::Boids(f) => match (&s.boids, s.species.is_empty()) {
                (Some(b), true) => Ok(f.get(b)),
                (Some(_), false) => Err(format!(
                    "the scene has species, each with its own boids parameters: key \
                     species[i].boids.{}",
                    f.name()
                )),
                (None, _) => Err("the scene's model is not boids".to_string()),
            },
            Target::Flight(f) => match s.boids.as_ref().and_then(|b| b.flight.as_ref()) {
                Some(fl) => Ok(f.get(fl)),
                None => Err("the scene's boids do not fly: it has no boids.flight".to_string()),
            },
            Target::Species(i, f) => match s.species.get(i) {
                Some(sp) => Ok(f.get(&sp.boids)),
                None if s.species.is_empty() => Err("the scene has no species".to_string()),
                None => Err(format!(
                    "the scene has {} species (species[0] to species[{}])",
                    s.species.len(),
                    s.species.len() - 1
                )),
            },
            Target::Hunt(i, h) => {
                let Some(sp) = s.species.get(i) else {
                    return Target::Species(i, BoidsField::WSep).get(s);
                };
                let (chase, flee) = (sp.chase.as_ref(), sp.flee.as_ref());
                match (h, chase, flee) {
                    (HuntField::WChase, Some(c), _) => Ok(c.weight),
                    (HuntField::ChaseRadius, Some(c), _) => Ok(c.radius),
                    (HuntField::WFlee, _, Some(f)) => Ok(f.weight),
                    (HuntField::FleeRadius, _, Some(f)) => Ok(f.radius),
                    _ if h.is_chase() => Err(format!(
                        "species[{i}] ({}) is not a predator: it chases nothing",
                        sp.name
                    )),
                    _ => Err(format!(
                        "species[{i}] ({}) flees nothing (a flock species flees only in a \
                         scene with predators)",
                        sp.name
                    )),
                }
            }
            Target::VicsekV0 | Target::VicsekNoise => match &s.vicsek {
                Some(v) if *self == Target::VicsekV0 => Ok(v.v0),
                Some(v) => Ok(v.noise),
                None => Err("the scene's model is not vicsek".to_string()),
            },
            Target::Obstacle(i, f) => obstacle_value(s, i, f),
            Target::Present(i) => Target::Species(i, BoidsField::WSep).get(s).map(|_| 1.0),
        }
    }

    /// Sets the parameter in `s` (one [`Target::get`] accepted).
    pub fn set(&self, s: &mut Scene, v: f32) {
        match *self {
            Target::Boids(f) => {
                if let Some(b) = &mut s.boids {
                    *f.slot(b) = v;
                }
            }
            Target::Flight(f) => {
                if let Some(fl) = s.boids.as_mut().and_then(|b| b.flight.as_mut()) {
                    *f.slot(fl) = v;
                }
            }
            Target::Species(i, f) => {
                if let Some(sp) = s.species.get_mut(i) {
                    *f.slot(&mut sp.boids) = v;
                }
            }
            Target::Hunt(i, h) => {
                if let Some(sp) = s.species.get_mut(i) {
                    let slot = match h {
                        HuntField::WChase => sp.chase.as_mut().map(|c| &mut c.weight),
                        HuntField::ChaseRadius => sp.chase.as_mut().map(|c| &mut c.radius),
                        HuntField::WFlee => sp.flee.as_mut().map(|f| &mut f.weight),
                        HuntField::FleeRadius => sp.flee.as_mut().map(|f| &mut f.radius),
                    };
                    if let Some(x) = slot {
                        *x = v;
                    }
                }
            }
            Target::VicsekV0 => {
                if let Some(p) = &mut s.vicsek {
                    p.v0 = v;
                }
            }
            Target::VicsekNoise => {
                if let Some(p) = &mut s.vicsek {
                    p.noise = v;
                }
            }
            Target::Obstacle(i, f) => {
                if let Some(x) = s.obstacles.get_mut(i).and_then(|o| f.slot(o)) {
                    *x = v;
                }
            }
            // Not a value of the scene: the solver and the readers follow its track.
            Target::Present(_) => {}
        }
    }
}

/// An index as a path writes it: digits, no sign, no leading zero (`species[1]`, never
/// `species[01]` or `species[+1]`), so that one parameter has one path — the "set twice"
/// check, the band checks and the tracks all go by the path.
fn plain_index(index: &str, what: &str) -> Result<usize, String> {
    let plain = !index.is_empty()
        && index.bytes().all(|b| b.is_ascii_digit())
        && (index == "0" || !index.starts_with('0'));
    match index.parse() {
        Ok(i) if plain => Ok(i),
        Ok(i) => Err(format!(
            "{what} index {index:?} must be written {i} (one path for each parameter)"
        )),
        Err(_) => Err(format!("{what} index {index:?} is not a whole number")),
    }
}

/// `obstacles[` + `rest`: `i].center[k]`, `i].radius`, `i].present`.
fn parse_obstacle(rest: &str) -> Result<Target, String> {
    let (index, field) = rest
        .split_once("].")
        .ok_or_else(|| "an obstacle's value reads obstacles[i].<name>".to_string())?;
    let i = plain_index(index, "obstacle")?;
    let f = match field {
        "radius" => ObstacleField::Radius,
        "present" => ObstacleField::Present,
        _ => {
            let (name, k) = field
                .strip_suffix(']')
                .and_then(|f| f.split_once('['))
                .ok_or_else(|| {
                    format!(
                        "no obstacle value {field:?} can be keyed (center[k], from[k], to[k], \
                         min[k], max[k], radius, present)"
                    )
                })?;
            let k = plain_index(k, "coordinate")?;
            ObstacleField::point(name, k).ok_or_else(|| {
                format!("an obstacle has no point {name:?} (center, from, to, min, max)")
            })?
        }
    };
    Ok(Target::Obstacle(i, f))
}

/// Obstacle `i`'s value `f` in `s`, or why it has none.
fn obstacle_value(s: &Scene, i: usize, f: ObstacleField) -> Result<f32, String> {
    let Some(o) = s.obstacles.get(i) else {
        return Err(match s.obstacles.len() {
            0 => "the scene has no obstacles".to_string(),
            1 => "the scene has one obstacle (obstacles[0])".to_string(),
            n => format!(
                "the scene has {n} obstacles (obstacles[0] to obstacles[{}])",
                n - 1
            ),
        });
    };
    if f == ObstacleField::Present {
        return Ok(1.0);
    }
    if let Some((name, k)) = f.coordinate() {
        if k >= s.dim {
            return Err(format!(
                "{name}[{k}]: the scene is {}D, its coordinates are [0] to [{}]",
                s.dim,
                s.dim - 1
            ));
        }
    }
    let mut o = o.clone();
    let kind = o.kind();
    f.slot(&mut o).map(|x| *x).ok_or_else(|| {
        format!(
            "obstacles[{i}] is a {kind}: its keyable values are {}, present",
            ObstacleField::of_kind(kind)
        )
    })
}

/// One keyed parameter: its value before the first key, and its keys in step order.
#[derive(Clone, Debug, PartialEq)]
pub struct Track {
    pub path: String,
    pub target: Target,
    pub base: f32,
    pub points: Vec<Point>,
}

impl Track {
    /// The value in effect at `step`: O(log keys).
    pub fn value(&self, step: u64) -> f32 {
        crate::look::interp::value_at(self.base, &self.points, step)
    }
}

/// The scene's timeline as one track per keyed parameter (in path order). Keys whose path the
/// scene has no parameter for are left out (never, in a validated scene).
pub fn tracks(s: &Scene) -> Vec<Track> {
    let mut by_path: BTreeMap<&str, Vec<Point>> = BTreeMap::new();
    for k in &s.timeline {
        for (path, &value) in &k.set {
            by_path.entry(path).or_default().push(Point {
                step: k.step,
                value,
                interpolation: k.interpolation,
                live: k.live,
            });
        }
    }
    by_path
        .into_iter()
        .filter_map(|(path, mut points)| {
            let target = Target::parse(path).ok()?;
            let mut base = target.get(s).ok()?;
            points.sort_by_key(|p| p.step);
            if target.is_presence() {
                // Added first: absent until then. `add` and `remove` take effect at their step.
                base = 1.0 - points[0].value;
                for p in &mut points {
                    p.interpolation = Interpolation::Step;
                }
            }
            Some(Track {
                path: path.to_string(),
                target,
                base,
                points,
            })
        })
        .collect()
}

/// The obstacles the timeline moves, adds or removes: their values at any step.
#[derive(Clone, Debug, PartialEq)]
pub struct ObstacleKeys {
    base: Vec<super::Obstacle>,
    tracks: Vec<Track>,
}

impl ObstacleKeys {
    /// The obstacle keys of `s`'s timeline; None where no key sets an obstacle's value.
    pub fn of(s: &Scene) -> Option<ObstacleKeys> {
        let tracks: Vec<Track> = tracks(s)
            .into_iter()
            .filter(|t| matches!(t.target, Target::Obstacle(..)))
            .collect();
        (!tracks.is_empty()).then(|| ObstacleKeys {
            base: s.obstacles.clone(),
            tracks,
        })
    }

    /// The obstacles there at `step`, in the scene's order, with their keyed values.
    pub fn at(&self, step: u64) -> Vec<super::Obstacle> {
        let mut list: Vec<Option<super::Obstacle>> = self.base.iter().cloned().map(Some).collect();
        for t in &self.tracks {
            let Target::Obstacle(i, f) = t.target else {
                continue;
            };
            let v = t.value(step);
            match (f, list.get_mut(i)) {
                (ObstacleField::Present, Some(o)) if v == 0.0 => *o = None,
                (_, Some(Some(o))) => {
                    if let Some(x) = f.slot(o) {
                        *x = v;
                    }
                }
                _ => {}
            }
        }
        list.into_iter().flatten().collect()
    }
}

/// The species the timeline adds or removes: which agents are absent at any step.
///
/// An absent species' agents are not in the world: no agent sees, chases or flees them, they
/// do not move, and the readers of a recording leave them out of the frames of those steps
/// (the recording itself keeps every agent, where it was when it went).
#[derive(Clone, Debug, PartialEq)]
pub struct Presence {
    /// Each species' agent ids, `lo..hi`.
    ids: Vec<(u32, u32)>,
    /// The `species[i].present` tracks.
    tracks: Vec<Track>,
}

impl Presence {
    /// The presence keys of `s`'s timeline; None where no species comes or goes.
    pub fn of(s: &Scene) -> Option<Presence> {
        let tracks: Vec<Track> = tracks(s)
            .into_iter()
            .filter(|t| matches!(t.target, Target::Present(_)))
            .collect();
        if tracks.is_empty() {
            return None;
        }
        Some(Presence {
            ids: super::species::id_ranges(&s.species, s.agents),
            tracks,
        })
    }

    /// Whether species `i` is there at `step`.
    pub fn present(&self, i: usize, step: u64) -> bool {
        self.tracks
            .iter()
            .find(|t| t.target == Target::Present(i))
            .is_none_or(|t| t.value(step) != 0.0)
    }

    /// The agent ids absent at `step`, as ascending, disjoint ranges `lo..hi`.
    pub fn absent(&self, step: u64) -> Vec<(u32, u32)> {
        let mut out: Vec<(u32, u32)> = Vec::new();
        for (i, &(lo, hi)) in self.ids.iter().enumerate() {
            if lo == hi || self.present(i, step) {
                continue;
            }
            match out.last_mut() {
                Some(last) if last.1 == lo => last.1 = hi,
                _ => out.push((lo, hi)),
            }
        }
        out
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "step {}:", self.step)?;
        for (i, (path, v)) in self.set.iter().enumerate() {
            write!(f, "{} {path} = {v}", if i == 0 { "" } else { "," })?;
        }
        if !self.interpolation.is_step() {
            write!(f, " ({})", self.interpolation.name())?;
        }
        if self.live {
            write!(f, " (live)")?;
        }
        Ok(())
    }
}

impl Scene {
    /// A scene file that resolves to `self`: the file it was loaded from (`text`) with the
    /// values the command line changed (name, steps, seed, `record_every`, agent counts) and
    /// the whole timeline written into it. What `forge view`'s `s` saves after tuning the
    /// physics: `forge simulate` on it writes the recording the session wrote.
    pub fn file_with_timeline(&self, text: &str) -> Result<String, serde_json::Error> {
        let mut v: serde_json::Value = serde_json::from_str(text)?;
        if let Some(o) = v.as_object_mut() {
            o.insert("name".into(), self.name.clone().into());
            o.insert("steps".into(), self.steps.into());
            o.insert("seed".into(), self.seed.into());
            o.insert("record_every".into(), self.record_every.into());
            if self.init.layout != super::Layout::File {
                o.insert("agents".into(), self.agents.into());
            }
            if let Some(list) = o.get_mut("species").and_then(|s| s.as_array_mut()) {
                for (f, sp) in list.iter_mut().zip(&self.species) {
                    if let Some(f) = f.as_object_mut() {
                        f.insert("agents".into(), sp.agents.into());
                    }
                }
            }
            o.remove("timeline");
            if !self.timeline.is_empty() {
                o.insert("timeline".into(), serde_json::to_value(&self.timeline)?);
            }
        }
        let mut out = serde_json::to_string_pretty(&v)?;
        out.push('\n');
        Ok(out)
    }
}
