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
    /// Shapes boids steer around (src/scene/obstacles.rs): checked there, entry by entry. At
    /// most MAX_OBSTACLES, counted while parsing: a longer list is refused before it is read.
    #[serde(
        default,
        deserialize_with = "at_most::<_, _, { super::obstacles::MAX_OBSTACLES }>"
    )]
    pub(super) obstacles: Option<Vec<super::obstacles::ObstacleFile>>,
    /// The flock's species (src/scene/species.rs) and who does what with whom; at most
    /// MAX_SPECIES, counted while parsing.
    #[serde(
        default,
        deserialize_with = "at_most::<_, _, { super::species::MAX_SPECIES }>"
    )]
    pub(super) species: Option<Vec<super::species::SpeciesFile>>,
    pub(super) interactions: Option<super::species::InteractionsFile>,
    pub(super) render: Option<Look>,
    /// Keys that change parameters while the run plays (src/scene/timeline.rs); at most
    /// MAX_KEYS, counted while parsing.
    #[serde(
        default,
        deserialize_with = "at_most::<_, _, { super::timeline::MAX_KEYS }>"
    )]
    pub(super) timeline: Option<Vec<super::resolve::timeline::KeyFile>>,
}

/// A list of at most `N` entries (or null), refused at its entry N + 1: a huge list is never
/// read into memory before its length is checked.
fn at_most<'de, D, T, const N: usize>(d: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct Bounded<T, const N: usize>(std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>, const N: usize> serde::de::Visitor<'de> for Bounded<T, N> {
        type Value = Option<Vec<T>>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            write!(f, "a list of at most {N} entries")
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D2: serde::Deserializer<'de>>(self, d: D2) -> Result<Self::Value, D2::Error> {
            d.deserialize_seq(self)
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(x) = seq.next_element()? {
                if out.len() == N {
                    return Err(serde::de::Error::custom(format!(
                        "at most {N} entries, got more"
                    )));
                }
                out.push(x);
            }
            Ok(Some(out))
        }
    }
    d.deserialize_option(Bounded::<T, N>(std::marker::PhantomData))
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
    /// Flight aerodynamics and a roost (3D, no species): src/scene/flight.rs.
    pub(super) flight: Option<super::flight::FlightFile>,
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
