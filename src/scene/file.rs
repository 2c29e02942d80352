//! The scene file as written by a user: every field optional, unknown fields rejected.

use serde::Deserialize;

use super::{Boundary, Layout, Model, Preset, Search, Velocity};
use crate::look::Look;

#[derive(Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct SceneFile {
    pub(super) name: Option<String>,
    pub(super) description: Option<String>,
    pub(super) preset: Option<Preset>,
    pub(super) model: Option<Model>,
    pub(super) dim: Option<i64>,
    pub(super) agents: Option<i64>,
    pub(super) steps: Option<i64>,
    /// Steps simulated before the first recorded frame (not recorded).
    pub(super) warmup: Option<i64>,
    pub(super) dt: Option<f64>,
    pub(super) seed: Option<u64>,
    pub(super) record_every: Option<i64>,
    pub(super) search: Option<Search>,
    pub(super) world: Option<WorldFile>,
    pub(super) boids: Option<BoidsFile>,
    pub(super) vicsek: Option<VicsekFile>,
    pub(super) init: Option<InitFile>,
    /// Shapes boids steer around (src/scene/obstacles.rs): checked there, entry by entry.
    pub(super) obstacles: Option<Vec<super::obstacles::ObstacleFile>>,
    /// The flock's species (src/scene/species.rs) and who does what with whom.
    pub(super) species: Option<Vec<super::species::SpeciesFile>>,
    pub(super) interactions: Option<super::species::InteractionsFile>,
    pub(super) render: Option<Look>,
}

#[derive(Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct WorldFile {
    pub(super) size: Option<Vec<f64>>,
    pub(super) boundary: Option<Boundary>,
}

#[derive(Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct BoidsFile {
    pub(super) r_sep: Option<f64>,
    pub(super) r_ali: Option<f64>,
    pub(super) r_coh: Option<f64>,
    pub(super) w_sep: Option<f64>,
    pub(super) w_ali: Option<f64>,
    pub(super) w_coh: Option<f64>,
    pub(super) max_force: Option<f64>,
    pub(super) v_min: Option<f64>,
    pub(super) v_max: Option<f64>,
    pub(super) neighbours: Option<NeighboursFile>,
    /// Heading noise η (radians per √time unit); 0 = none.
    pub(super) noise: Option<f64>,
    /// Field of view in degrees, (0, 360]; 360 = all around.
    pub(super) fov: Option<f64>,
    /// Obstacle avoidance (only with `obstacles`): the steering at a head-on threat, how far
    /// ahead (time) and how wide a berth (distance).
    pub(super) w_avoid: Option<f64>,
    pub(super) look_ahead: Option<f64>,
    pub(super) clearance: Option<f64>,
}

/// `boids.neighbours`: which others alignment and cohesion average over.
#[derive(Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct NeighboursFile {
    /// Any JSON value: checked in `resolve`, so that a misspelling gets a message listing the
    /// kinds.
    pub(super) kind: Option<serde_json::Value>,
    pub(super) k: Option<i64>,
}

#[derive(Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct VicsekFile {
    pub(super) v0: Option<f64>,
    pub(super) r: Option<f64>,
    pub(super) noise: Option<f64>,
    /// Any JSON value: checked in `resolve`, so that a number or a misspelling gets a message
    /// that lists the kinds.
    pub(super) noise_kind: Option<serde_json::Value>,
}

#[derive(Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct InitFile {
    pub(super) layout: Option<Layout>,
    pub(super) velocity: Option<Velocity>,
    pub(super) center: Option<Vec<f64>>,
    pub(super) radius: Option<f64>,
    pub(super) count: Option<i64>,
    pub(super) path: Option<String>,
    pub(super) frame: Option<i64>,
}
