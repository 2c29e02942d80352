//! A scene's timeline applied to the solver: before each step, every keyed parameter's value
//! at that step (src/scene/timeline.rs) goes into the step's [`Params`] or its species'
//! parameters. Steps where no value changes cost one comparison per keyed parameter.

use crate::scene::timeline::{self, BoidsField, ObstacleKeys, Target, Track};
use crate::scene::Scene;

use super::obstacles::Obstacles;
use super::species::Species;
use super::Params;

/// What a step's keys changed beyond [`Params`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// A species' parameters, chase or flight, or whether it is there.
    pub species: bool,
    /// A species came or went (the agents a species step tracks change with it).
    pub presence: bool,
    /// The obstacles: moved, added, removed, or a top speed that bounds their reach
    /// ([`Live::obstacles`] has them).
    pub obstacles: bool,
}

/// The timeline of a run, and the scene's values as of the last step applied.
#[derive(Clone, Debug)]
pub struct Live {
    scene: Scene,
    tracks: Vec<Track>,
    /// Each track's value as last applied (NaN before the first step applied: that step sets
    /// every value, whatever the solver held before).
    last: Vec<f32>,
    /// The obstacles the timeline moves, adds or removes (None: it keys none).
    moving: Option<ObstacleKeys>,
    /// The obstacles as of the last step applied.
    obstacles: Vec<crate::scene::Obstacle>,
}

impl Live {
    /// The timeline of `s`; None when it has no keys.
    pub fn from_scene(s: &Scene) -> Option<Live> {
        let tracks = timeline::tracks(s);
        if tracks.is_empty() {
            return None;
        }
        Some(Live {
            scene: s.clone(),
            last: vec![f32::NAN; tracks.len()],
            tracks,
            moving: ObstacleKeys::of(s),
            obstacles: s.obstacles.clone(),
        })
    }

    /// The obstacles there at the last step applied, ready for the step.
    pub fn obstacles(&self) -> Obstacles {
        Obstacles::from_list(&self.scene, &self.obstacles)
    }

    /// Puts the values in effect at `step` into `params` (and `species`' parameters), where
    /// they differ from those last applied; says what else changed.
    pub fn apply(
        &mut self,
        step: u64,
        params: &mut Params,
        species: Option<&mut Species>,
    ) -> Applied {
        let mut global = false;
        let mut obstacles = false;
        let mut changed: Vec<usize> = Vec::new();
        let mut presence: Vec<(usize, bool)> = Vec::new();
        for (t, last) in self.tracks.iter().zip(&mut self.last) {
            let v = t.value(step);
            if v.to_bits() == last.to_bits() {
                continue;
            }
            *last = v;
            t.target.set(&mut self.scene, v);
            // A top speed bounds how far the obstacles reach in a step.
            if let Target::Boids(BoidsField::VMax) | Target::Species(_, BoidsField::VMax) = t.target
            {
                obstacles = true;
            }
            match t.target {
                Target::Species(i, _) | Target::Hunt(i, _) => changed.push(i),
                Target::Present(i) => presence.push((i, v != 0.0)),
                Target::Obstacle(..) => obstacles = true,
                _ => global = true,
            }
        }
        if global {
            *params = Params::from_scene(&self.scene, params.n as usize);
        }
        let obstacles = obstacles && !self.scene.obstacles.is_empty();
        if obstacles {
            if let Some(m) = &self.moving {
                self.obstacles = m.at(step);
            }
        }
        let mut out = Applied {
            obstacles,
            ..Applied::default()
        };
        let Some(sp) = species else {
            return out;
        };
        for &i in &changed {
            refresh(sp, &self.scene, i);
        }
        for &(i, there) in &presence {
            sp.set_present(i, there);
        }
        out.presence = !presence.is_empty();
        out.species = !changed.is_empty() || out.presence;
        out
    }
}

/// Species `a`'s parameters, chase and flight in `sp` again from `s` (a key changed them).
fn refresh(sp: &mut Species, s: &Scene, a: usize) {
    if a >= sp.params.len() {
        return;
    }
    sp.set_params(a, Species::params_of(s, a));
    let one = &s.species[a];
    if let Some(c) = &one.chase {
        sp.chase[a] = (c.radius * c.radius, c.weight);
    }
    if let Some(f) = &one.flee {
        sp.flee[a] = (f.radius * f.radius, f.weight);
    }
}
