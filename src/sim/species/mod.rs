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
//! over the predators in id order, gathered before the step. The neighbour sums are
//! integers, so they may be taken two ways with the same bytes: a species that treats every
//! species it meets as its own kind, except a few *rare* ones (at most [`RARE_MAX`] agents in
//! all, such as its predators), takes the plain boids candidate loop (SIMD where the CPU has
//! it) over every candidate and then subtracts, exactly, what the rare agents added that the
//! interaction matrix does not allow; any other species takes the per-pair masked loop. Neither
//! `FORGE_SIMD`, the search nor the thread count can change a byte.

// `!(d2 < r2)` also turns away a NaN distance, as the kernels' comparisons do.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

mod tracked;

pub use tracked::{hunters, Tracked};

use super::agent;
use super::grid::Grid;
use super::math::*;
use super::obstacles::Near;
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
    /// `mask[a * count + b]`: what a does with b ([`SEPARATE`] | [`ALIGN`] | [`COHERE`]);
    /// nothing where b is absent.
    pub mask: Vec<u8>,
    /// The scene's interaction matrix, as `mask` is with every species present.
    pub scene_mask: Vec<u8>,
    /// Whether each species is in the world (the timeline's `add` and `remove`): an absent
    /// species' agents are seen, chased and fled by no one, and do not move.
    pub present: Vec<bool>,
    pub predator: Vec<bool>,
    /// Squared chase radius and weight per species (0, 0 for a flock species).
    pub chase: Vec<(f32, f32)>,
    /// Squared flight radius and weight per species (0, 0 without predators).
    pub flee: Vec<(f32, f32)>,
    /// Each species' largest squared boids radius.
    pub rmax2: Vec<f32>,
    pub any_predator: bool,
    /// Each species' agent ids, `first..end` ([`crate::scene::species::id_ranges`]).
    pub ids: Vec<(u32, u32)>,
    /// Whether species a's sums are the plain loop's, corrected for rare agents (see the
    /// module's header): every species b with `mask[a][b]` not all three rules is rare.
    pub fast: Vec<bool>,
    /// The species some fast species corrects for (in scene order).
    pub rare: Vec<u8>,
    /// The species whose agents the step keeps a list of ([`Tracked`]): the rare ones and the
    /// predators (in scene order).
    pub tracked: Vec<u8>,
    /// The species with the most agents, which the step tells by its id range alone.
    pub bulk: Bulk,
}

/// One species as the CUDA kernels read it (`struct SpeciesRow` in kernels/forge_math.h, 40
/// bytes; tests/kernels_host.rs checks the layout).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct SpeciesRow {
    /// Its agents' ids, `lo..hi`.
    pub lo: u32,
    pub hi: u32,
    /// 1 for a predator.
    pub predator: u32,
    /// 1 while the species is in the world ([`Species::present`]).
    pub present: u32,
    /// Where its first agent goes in the list of predators in id order (predators only).
    pub hunter_base: u32,
    pub rmax2: f32,
    pub chase_r2: f32,
    pub chase_w: f32,
    pub flee_r2: f32,
    pub flee_w: f32,
}

/// The counts of a run's species, as the CUDA kernels read them (`struct SpeciesHead`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SpeciesHead {
    pub count: u32,
    pub any_predator: u32,
    pub n_hunters: u32,
}

/// A run's species as the CUDA kernels read them ([`Species::for_kernels`]).
#[derive(Clone, Debug, Default)]
pub struct KernelSpecies {
    pub head: SpeciesHead,
    /// Each species' parameters.
    pub params: Vec<Params>,
    pub rows: Vec<SpeciesRow>,
    /// `mask[a * count + b]`: what a does with b.
    pub mask: Vec<u8>,
    /// The species of each agent id.
    pub of_agent: Vec<u8>,
}

/// The largest species: its agents' ids `lo..hi`, its index and parameters (a copy, at an
/// address that does not depend on the agent: the step's loads of them need not wait for
/// the agent's species to be known).
#[derive(Clone, Debug, Default)]
pub struct Bulk {
    pub lo: u32,
    pub hi: u32,
    pub a: usize,
}

/// Most agents, over all the species a species corrects for, that still let it take the
/// plain candidate loop: each of its agents visits every one of them.
pub const RARE_MAX: usize = 64;

/// Up to this many species [`Species::of`] compares ids with their ranges.
const FEW: usize = 8;

/// All three rules: a neighbour treated as one's own kind.
const ALL: u8 = SEPARATE | ALIGN | COHERE;

impl Species {
    /// Species `a`'s parameters: the step's [`Params`] with its boids.
    pub fn params_of(s: &Scene, a: usize) -> Params {
        let mut one = s.clone();
        one.boids = Some(s.species[a].boids.clone());
        one.species = Vec::new();
        one.timeline = Vec::new();
        Params::from_scene(&one, s.agents as usize)
    }

    /// None for a scene without species: the step is the one it always was.
    pub fn from_scene(s: &Scene) -> Option<Species> {
        if s.species.is_empty() {
            return None;
        }
        let count = s.species.len();
        let mut out = Species {
            ids: crate::scene::species::id_ranges(&s.species, s.agents),
            ..Species::default()
        };
        for (a, sp) in s.species.iter().enumerate() {
            let (lo, hi) = out.ids[a];
            out.of_agent
                .extend(std::iter::repeat_n(a as u8, (hi - lo) as usize));
            let p = Species::params_of(s, a);
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
                    ((e.separate as u8) * SEPARATE)
                        | ((e.align as u8) * ALIGN)
                        | ((e.cohere as u8) * COHERE),
                );
            }
        }
        debug_assert_eq!(out.mask.len(), count * count);
        out.scene_mask = out.mask.clone();
        out.present = vec![true; count];
        out.any_predator = out.predator.contains(&true);
        debug_assert_eq!(out.of_agent.len(), s.agents as usize);
        debug_assert!(out
            .of_agent
            .iter()
            .enumerate()
            .all(|(i, &a)| (out.ids[a as usize].0..out.ids[a as usize].1).contains(&(i as u32))));
        out.derive();
        Some(out)
    }

    /// Species `a`'s parameters from now on.
    pub fn set_params(&mut self, a: usize, p: Params) {
        self.params[a] = p;
    }

    /// Says whether species `a` is in the world from now on: its column of the interaction
    /// matrix, and the fast paths that follow from the matrix, again.
    pub fn set_present(&mut self, a: usize, present: bool) {
        if self.present.get(a) == Some(&present) || a >= self.count() {
            return;
        }
        self.present[a] = present;
        let count = self.count();
        for b in 0..count {
            self.mask[b * count + a] = if present {
                self.scene_mask[b * count + a]
            } else {
                0
            };
        }
        self.derive();
    }

    /// What follows from the interaction matrix: which species take the plain candidate loop,
    /// the rare and tracked species, and the bulk.
    fn derive(&mut self) {
        let out = self;
        let count = out.count();
        out.fast.clear();
        out.rare.clear();
        let size = |b: usize| (out.ids[b].1 - out.ids[b].0) as usize;
        for a in 0..count {
            let others: Vec<usize> = (0..count)
                .filter(|&b| out.mask[a * count + b] != ALL)
                .collect();
            let fast = others.iter().map(|&b| size(b)).sum::<usize>() <= RARE_MAX;
            out.fast.push(fast);
            if fast {
                for b in others {
                    if !out.rare.contains(&(b as u8)) {
                        out.rare.push(b as u8);
                    }
                }
            }
        }
        out.rare.sort_unstable();
        out.tracked = (0..count as u8)
            .filter(|&b| out.rare.contains(&b) || out.predator[b as usize])
            .collect();
        let a = (0..count)
            .max_by_key(|&b| (size(b), usize::MAX - b))
            .unwrap_or(0);
        out.bulk = Bulk {
            lo: out.ids[a].0,
            hi: out.ids[a].1,
            a,
        };
    }

    pub fn count(&self) -> usize {
        self.params.len()
    }

    /// The species as the CUDA kernels read them. The kernels take every agent through the
    /// masked loop and every predator into the flight, where the CPU takes faster paths that
    /// give the same integers and skip predators out of reach (see the module's header).
    pub fn for_kernels(&self) -> KernelSpecies {
        let rows = self.rows();
        let n_hunters = rows
            .iter()
            .filter(|r| r.predator != 0)
            .map(|r| r.hi - r.lo)
            .sum();
        KernelSpecies {
            head: SpeciesHead {
                count: self.count() as u32,
                any_predator: self.any_predator as u32,
                n_hunters,
            },
            params: self.params.clone(),
            rows,
            mask: self.mask.clone(),
            of_agent: self.of_agent.clone(),
        }
    }

    /// Each species' row for the kernels (`struct SpeciesRow`): its ids, role, radii, chase and
    /// flight.
    pub fn rows(&self) -> Vec<SpeciesRow> {
        let mut base = 0u32;
        (0..self.count())
            .map(|a| {
                let (lo, hi) = self.ids[a];
                let row = SpeciesRow {
                    lo,
                    hi,
                    predator: self.predator[a] as u32,
                    present: self.present[a] as u32,
                    hunter_base: base,
                    rmax2: self.rmax2[a],
                    chase_r2: self.chase[a].0,
                    chase_w: self.chase[a].1,
                    flee_r2: self.flee[a].0,
                    flee_w: self.flee[a].1,
                };
                if self.predator[a] {
                    base += hi - lo;
                }
                row
            })
            .collect()
    }

    /// The species of agent `id`: the bulk's, by its id range alone; else, species holding
    /// consecutive ids, with a few species how many of the later ones start at or before
    /// `id`: no load from the per-agent table, which the step's slot order reads at random (a
    /// cache miss an agent).
    #[inline(always)]
    pub fn of(&self, id: u32) -> usize {
        if id >= self.bulk.lo && id < self.bulk.hi {
            return self.bulk.a;
        }
        if self.ids.len() <= FEW {
            self.ids[1..]
                .iter()
                .map(|&(lo, _)| (id >= lo) as usize)
                .sum()
        } else {
            self.of_agent[id as usize] as usize
        }
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
use super::topo::{offset, offset_by};

/// An agent of a tracked species (see [`Species::tracked`]) and its slot.
#[derive(Clone, Copy, Debug)]
pub struct Rare {
    pub slot: u32,
    pub species: u8,
}

/// One agent's neighbour sums, into `acc`: `me` its slot in `src` (`plain`, the same agents
/// as the boids candidate loop reads them), `seam` whether its candidates' offsets may cross
/// the wrap seam, `ranges` its candidate slots (every slot within the largest radius of any
/// species is among them), `rare` this step's tracked agents ([`Tracked`]).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn sums<const D: usize>(
    sp: &Species,
    plain: &agent::Src,
    src: &Src,
    me: usize,
    seam: bool,
    ranges: &[(u32, u32)],
    rare: &[Rare],
    acc: &mut BoidsAcc<D>,
) {
    let a = sp.of(src.ids[me]);
    sums_of::<D>(
        sp,
        a,
        &sp.params[a],
        plain,
        src,
        me,
        seam,
        ranges,
        rare,
        acc,
    )
}

/// [`sums`] for an agent of species `a` (parameters `p`).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn sums_of<const D: usize>(
    sp: &Species,
    a: usize,
    p: &Params,
    plain: &agent::Src,
    src: &Src,
    me: usize,
    seam: bool,
    ranges: &[(u32, u32)],
    rare: &[Rare],
    acc: &mut BoidsAcc<D>,
) {
    let m = src.m;
    let pi: [f32; D] = crate::sim::math::array(|k| src.pos[k * m + me]);
    let vi: [f32; D] = crate::sim::math::array(|k| src.vel[k * m + me]);
    let sight = Sight::new(p, &vi);
    let count = sp.count();
    let row = &sp.mask[a * count..(a + 1) * count];
    let rmax2 = sp.rmax2[a];
    if sp.fast[a] {
        // Every candidate as one's own kind, then what the matrix takes away from the rare
        // ones among them, term by term: the same integers as the masked loop.
        agent::boids_neighbours::<D>(p, seam, plain, me, ranges, acc);
        for r in rare {
            let j = r.slot as usize;
            let mask = row[r.species as usize];
            if mask == ALL || j == me || !ranges.iter().any(|&(lo, hi)| (lo..hi).contains(&r.slot))
            {
                continue;
            }
            let (d, d2) = offset::<D>(p, src, &pi, j);
            if !(d2 < rmax2) {
                continue;
            }
            if mask & SEPARATE == 0 && d2 < p.r_sep2 && d2 > 0.0 {
                for k in 0..D {
                    acc.sep[k] = acc.sep[k].wrapping_sub(to_fix(-d[k] / d2));
                }
            }
            if mask & (ALIGN | COHERE) == ALIGN | COHERE {
                continue;
            }
            if !sight.as_ref().is_none_or(|s| s.sees(&d, d2)) {
                continue;
            }
            if mask & ALIGN == 0 && d2 < p.r_ali2 {
                for k in 0..D {
                    acc.ali[k] = acc.ali[k].wrapping_sub(src.vfix[k * m + j]);
                }
                acc.n_ali -= 1;
            }
            if mask & COHERE == 0 && d2 < p.r_coh2 {
                for k in 0..D {
                    acc.coh[k] = acc.coh[k].wrapping_sub(to_fix(d[k]));
                }
                acc.n_coh -= 1;
            }
        }
        return;
    }
    *acc = BoidsAcc::<D>::new();
    let who = Who {
        sp,
        row,
        me,
        pi,
        sight,
        rmax2,
    };
    if selects_pay(p.wraps(), ranges) {
        masked_loop::<D, true>(&who, p, src, ranges, acc);
    } else {
        masked_loop::<D, false>(&who, p, src, ranges, acc);
    }
}

/// The agent whose sums [`masked_loop`] takes: its species' row of the interaction matrix,
/// its slot, position and sight, and the largest of its radii, squared.
struct Who<'a, const D: usize> {
    sp: &'a Species,
    row: &'a [u8],
    me: usize,
    pi: [f32; D],
    sight: Option<Sight<D>>,
    rmax2: f32,
}

/// The sums over `ranges` as the interaction matrix masks each candidate's terms; `SELECT`:
/// the minimum image by selects ([`offset_by`]).
#[inline(always)]
fn masked_loop<const D: usize, const SELECT: bool>(
    who: &Who<D>,
    p: &Params,
    src: &Src,
    ranges: &[(u32, u32)],
    acc: &mut BoidsAcc<D>,
) {
    let (sp, row, me, sight, m) = (who.sp, who.row, who.me, &who.sight, src.m);
    for &(lo, hi) in ranges {
        for j in lo as usize..hi as usize {
            if j == me {
                continue;
            }
            let (d, d2) = offset_by::<D, SELECT>(p, src, &who.pi, j);
            if !(d2 < who.rmax2) {
                continue;
            }
            let mask = row[sp.of(src.ids[j])];
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
}

/// One agent's new position and velocity (step number `step`) from its sums: the steering of
/// its species' rules, the chase or the flight (`hunters`: the predators, in id order), then
/// the move (`near`: the obstacles' masks for its cell).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn finish<const D: usize>(
    sp: &Species,
    src: &Src,
    me: usize,
    acc: &BoidsAcc<D>,
    hunters: &[Hunter],
    grid: Option<&Grid>,
    step: u64,
    near: Near,
) -> ([f32; D], [f32; D]) {
    let a = sp.of(src.ids[me]);
    finish_of::<D>(
        sp,
        a,
        &sp.params[a],
        src,
        me,
        acc,
        hunters,
        grid,
        step,
        near,
    )
}

/// [`finish`] for an agent of species `a` (parameters `p`).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn finish_of<const D: usize>(
    sp: &Species,
    a: usize,
    p: &Params,
    src: &Src,
    me: usize,
    acc: &BoidsAcc<D>,
    hunters: &[Hunter],
    grid: Option<&Grid>,
    step: u64,
    near: Near,
) -> ([f32; D], [f32; D]) {
    let m = src.m;
    let id = src.ids[me];
    let mut pi: [f32; D] = crate::sim::math::array(|k| src.pos[k * m + me]);
    let mut vi: [f32; D] = crate::sim::math::array(|k| src.vel[k * m + me]);
    if !sp.present[a] {
        // Out of the world: it stays where it went.
        return (pi, vi);
    }
    let mut acc_v = boids_accel(p, acc, &vi);
    if sp.predator[a] {
        let (r2, w) = sp.chase[a];
        // By value, as `Obstacles::settle` takes a boid's position: `pi` stays in registers.
        if let Some(d) = nearest_prey::<D>(sp, p, src, grid, pi, r2) {
            let d2 = norm2(&d);
            if d2 > 0.0 {
                let s = d2.sqrt();
                for k in 0..D {
                    acc_v[k] += w * (d[k] / s);
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
                    acc_v[k] += w * (d[k] / s);
                }
            }
        }
    }
    boids_move(p, src.obs, near, acc_v, step, id as u64, &mut pi, &mut vi);
    (pi, vi)
}

/// The offset to the nearest agent of a flock species there within squared radius `r2` of `pi`
/// (smallest squared distance, then smallest agent id): over the grid's cells that can hold
/// one, or every slot. Both see every agent within the radius, so they agree.
#[inline]
fn nearest_prey<const D: usize>(
    sp: &Species,
    p: &Params,
    src: &Src,
    grid: Option<&Grid>,
    pi: [f32; D],
    r2: f32,
) -> Option<[f32; D]> {
    let pi = &pi;
    let mut best: Option<(f32, u32, [f32; D])> = None;
    let mut visit = |lo: usize, hi: usize| {
        for j in lo..hi {
            let id = src.ids[j];
            let b = sp.of(id);
            if sp.predator[b] || !sp.present[b] {
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
    };
    let Some(g) = grid else {
        visit(0, src.m);
        return best.map(|b| b.2);
    };
    g.each_cell_within(D, p.wraps(), pi, r2.sqrt(), |c| {
        visit(g.cell_start[c] as usize, g.cell_start[c + 1] as usize)
    });
    best.map(|b| b.2)
}
