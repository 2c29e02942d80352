//! Species (src/scene/species.rs) in the step: each agent steers by its own species'
//! parameters, counts a neighbour for alignment, cohesion and separation as the interaction
//! matrix says for the pair of species, and then predators chase and prey flee.
//!
//! The rules, for agent i of species a (parameters `P_a`) at step t:
//! - **boids**: the sums of [`BoidsAcc::boids_pair`] over the neighbours j ≠ i within `P_a`'s
//!   radii, each of species b counted for separation / alignment / cohesion only where
//!   `interactions[a][b]` says so (alignment and cohesion within `P_a`'s field of view), then
//!   the steering of [`boids_accel`] with `P_a`'s weights;
//! - **chase** (a a predator): the nearest agent of a flock species within `chase.radius`
//!   (minimum image; ties to the lower agent id) adds `chase.weight · d/|d|`, d the offset to it;
//! - **flee** (a a flock species in a scene with predators): each predator within
//!   `flee.radius` (d > 0) adds `flee.weight · (p_i − p_pred)/|p_i − p_pred|`, summed over the
//!   predators in agent-id order;
//! - then [`boids_move`] with `P_a`: obstacles, the clamp to `P_a`'s max_force, Euler, heading
//!   noise, `P_a`'s speed band, boundary.
//!
//! Determinism (DESIGN.md): the neighbour sums are in fixed point (order-free); the nearest
//! prey is a minimum over a total order (squared distance, then agent id); the flight sum runs
//! over the predators in id order, gathered before the step. The candidate loop is the scalar
//! one whatever the CPU (the species test is per pair), so `FORGE_SIMD` cannot change it, and
//! neither can the search nor the thread count.

use super::math::*;
use super::Params;
use crate::scene::{Role, Scene};

/// Bits of one pair's entry in [`Species::mask`].
pub const SEPARATE: u8 = 1;
pub const ALIGN: u8 = 2;
pub const COHERE: u8 = 4;

/// The species of a run, ready for the step.
#[derive(Clone, Debug, Default)]
pub struct Species {
    /// Species index of each agent id.
    pub of_agent: Vec<u8>,
    /// Each species' parameters (`Params::from_scene` with its boids).
    pub params: Vec<Params>,
    /// `mask[a * count + b]`: what a does with b ([`SEPARATE`] | [`ALIGN`] | [`COHERE`]).
    pub mask: Vec<u8>,
    pub predator: Vec<bool>,
    /// Squared chase radius and weight per species (0, 0 for a flock species).
    pub chase: Vec<(f32, f32)>,
    /// Squared flight radius and weight per species (0, 0 without predators).
    pub flee: Vec<(f32, f32)>,
    /// Each species' largest squared boids radius.
    pub rmax2: Vec<f32>,
    pub any_predator: bool,
}

impl Species {
    /// None for a scene without species: the step is the one it always was.
    pub fn from_scene(s: &Scene) -> Option<Species> {
        if s.species.is_empty() {
            return None;
        }
        let count = s.species.len();
        let mut out = Species::default();
        for (a, sp) in s.species.iter().enumerate() {
            out.of_agent
                .extend(std::iter::repeat_n(a as u8, sp.agents as usize));
            if a + 1 == count {
                // Counts that do not sum to the flock (never, from a validated scene and
                // `Scene::set_agents`): the last species takes the rest, or is cut short.
                out.of_agent.resize(s.agents as usize, a as u8);
            }
            let mut one = s.clone();
            one.boids = Some(sp.boids.clone());
            one.species = Vec::new();
            let p = Params::from_scene(&one, s.agents as usize);
            out.rmax2.push(p.r_sep2.max(p.r_ali2).max(p.r_coh2));
            out.params.push(p);
            out.predator.push(sp.role == Role::Predator);
            out.chase.push(
                sp.chase
                    .as_ref()
                    .map_or((0.0, 0.0), |c| (c.radius * c.radius, c.weight)),
            );
            out.flee.push(
                sp.flee
                    .as_ref()
                    .map_or((0.0, 0.0), |f| (f.radius * f.radius, f.weight)),
            );
            for b in &s.species {
                let e = s
                    .interactions
                    .get(&sp.name)
                    .and_then(|r| r.get(&b.name))
                    .copied()
                    .unwrap_or(crate::scene::Interaction::default_for(sp.name == b.name));
                out.mask.push(
                    (e.separate as u8) * SEPARATE
                        | (e.align as u8) * ALIGN
                        | (e.cohere as u8) * COHERE,
                );
            }
        }
        debug_assert_eq!(out.mask.len(), count * count);
        out.any_predator = out.predator.contains(&true);
        Some(out)
    }

    pub fn count(&self) -> usize {
        self.params.len()
    }
}

/// A predator as the flight rule reads it: its agent id and position (the first `D` axes).
#[derive(Clone, Copy, Debug)]
pub struct Hunter {
    pub id: u32,
    pub pos: [f32; 3],
}

/// What the species step reads of all agents: the topological step's view of them.
pub(super) use super::topo::Src;

/// `d = p_j − p_i` (minimum image) and its squared length, as the metric rules compute them.
#[inline(always)]
fn offset<const D: usize>(p: &Params, src: &Src, pi: &[f32; D], j: usize) -> ([f32; D], f32) {
    let wrap = p.wraps();
    let mut d = [0f32; D];
    for k in 0..D {
        d[k] = wrap_delta(
            src.pos[k * src.m + j] - pi[k],
            p.world[k],
            p.half_world[k],
            wrap,
        );
    }
    let d2 = norm2(&d);
    (d, d2)
}

/// One agent's step (number `step`); `me` its slot in `src`; `ranges` its candidate slots
/// (every slot within the largest radius of any species is among them); `hunters` the
/// predators, in id order.
#[allow(clippy::too_many_arguments)]
#[inline]
pub(super) fn agent_step<const D: usize>(
    sp: &Species,
    src: &Src,
    me: usize,
    ranges: &[(u32, u32)],
    hunters: &[Hunter],
    step: u64,
) -> ([f32; D], [f32; D]) {
    let m = src.m;
    let id = src.ids[me];
    let a = sp.of_agent[id as usize] as usize;
    let p = &sp.params[a];
    let mut pi: [f32; D] = std::array::from_fn(|k| src.pos[k * m + me]);
    let mut vi: [f32; D] = std::array::from_fn(|k| src.vel[k * m + me]);
    let sight = Sight::new(p, &vi);
    let count = sp.count();
    let row = &sp.mask[a * count..(a + 1) * count];
    let rmax2 = sp.rmax2[a];
    let mut acc = BoidsAcc::<D>::new();
    for &(lo, hi) in ranges {
        for j in lo as usize..hi as usize {
            if j == me {
                continue;
            }
            let (d, d2) = offset::<D>(p, src, &pi, j);
            if !(d2 < rmax2) {
                continue;
            }
            let mask = row[sp.of_agent[src.ids[j] as usize] as usize];
            if mask & SEPARATE != 0 && d2 < p.r_sep2 && d2 > 0.0 {
                for k in 0..D {
                    acc.sep[k] = acc.sep[k].wrapping_add(to_fix(-d[k] / d2));
                }
            }
            if mask & (ALIGN | COHERE) == 0 {
                continue;
            }
            let seen = sight.as_ref().is_none_or(|s| s.sees(&d, d2));
            if !seen {
                continue;
            }
            if mask & ALIGN != 0 && d2 < p.r_ali2 {
                for k in 0..D {
                    acc.ali[k] = acc.ali[k].wrapping_add(src.vfix[k * m + j]);
                }
                acc.n_ali += 1;
            }
            if mask & COHERE != 0 && d2 < p.r_coh2 {
                for k in 0..D {
                    acc.coh[k] = acc.coh[k].wrapping_add(to_fix(d[k]));
                }
                acc.n_coh += 1;
            }
        }
    }
    let mut acc_v = boids_accel(p, &acc, &vi);
    if sp.predator[a] {
        let (r2, w) = sp.chase[a];
        if let Some(d) = nearest_prey::<D>(sp, p, src, &pi, r2) {
            let d2 = norm2(&d);
            if d2 > 0.0 {
                let s = d2.sqrt();
                for k in 0..D {
                    acc_v[k] = acc_v[k] + w * (d[k] / s);
                }
            }
        }
    } else if sp.any_predator {
        let (r2, w) = sp.flee[a];
        for h in hunters {
            if h.id == id {
                continue;
            }
            let mut d = [0f32; D];
            for k in 0..D {
                d[k] = wrap_delta(pi[k] - h.pos[k], p.world[k], p.half_world[k], p.wraps());
            }
            let d2 = norm2(&d);
            if d2 < r2 && d2 > 0.0 {
                let s = d2.sqrt();
                for k in 0..D {
                    acc_v[k] = acc_v[k] + w * (d[k] / s);
                }
            }
        }
    }
    boids_move(p, src.obs, acc_v, step, id as u64, &mut pi, &mut vi);
    (pi, vi)
}

/// The offset to the nearest agent of a flock species within squared radius `r2` of `pi`
/// (smallest squared distance, then smallest agent id), over every slot.
#[inline]
fn nearest_prey<const D: usize>(
    sp: &Species,
    p: &Params,
    src: &Src,
    pi: &[f32; D],
    r2: f32,
) -> Option<[f32; D]> {
    let mut best: Option<(f32, u32, [f32; D])> = None;
    for j in 0..src.m {
        let id = src.ids[j];
        if sp.predator[sp.of_agent[id as usize] as usize] {
            continue;
        }
        let (d, d2) = offset::<D>(p, src, pi, j);
        if !(d2 < r2) {
            continue;
        }
        let better = match best {
            None => true,
            Some((b2, bid, _)) => d2 < b2 || (d2 == b2 && id < bid),
        };
        if better {
            best = Some((d2, id, d));
        }
    }
    best.map(|b| b.2)
}

/// The predators of the state `pos` (component-major, stride n, slot order, agent ids `ids`),
/// in agent-id order, into `out`.
pub fn hunters(sp: &Species, dim: usize, pos: &[f32], ids: &[u32], out: &mut Vec<Hunter>) {
    out.clear();
    if !sp.any_predator {
        return;
    }
    let n = ids.len();
    for (s, &id) in ids.iter().enumerate() {
        if sp.predator[sp.of_agent[id as usize] as usize] {
            out.push(Hunter {
                id,
                pos: std::array::from_fn(|k| if k < dim { pos[k * n + s] } else { 0.0 }),
            });
        }
    }
    out.sort_unstable_by_key(|h| h.id);
}
