//! One agent's step from its neighbour candidates (boids, Vicsek), as the CPU solver's
//! parallel passes (src/sim/cpu.rs) call it: the candidates summed by the SIMD or scalar loop
//! (src/sim/simd/), then integrated (src/sim/math.rs).

use std::sync::atomic::{AtomicUsize, Ordering};

use super::math::*;
use super::obstacles::{Near, Obstacles};
use super::simd::{self, Cands, Isa};
use super::Params;

/// What a step reads of the other agents, component-major with stride `m`: positions,
/// velocities (Vicsek: unit velocities) and those in fixed point.
pub(super) struct Src<'a> {
    pub(super) pos: &'a [f32],
    pub(super) vel: &'a [f32],
    pub(super) vfix: &'a [i64],
    pub(super) m: usize,
    /// Which candidate loop runs (the same sums either way).
    pub(super) isa: Isa,
    /// Boids: the obstacles the integration steers around and settles out of.
    pub(super) obs: &'a Obstacles,
}

impl<'a> Src<'a> {
    /// The grid's agents, in its sorted slot order.
    pub(super) fn sorted(g: &'a super::grid::Grid, isa: Isa, obs: &'a Obstacles) -> Self {
        Src {
            pos: &g.spos,
            vel: &g.svel,
            vfix: &g.svfix,
            m: g.cell_of.len(),
            isa,
            obs,
        }
    }

    /// A state's agents in its own slot order (brute force), their velocities in fixed
    /// point `vfix`.
    pub(super) fn unsorted(
        st: &'a super::State,
        vfix: &'a [i64],
        isa: Isa,
        obs: &'a Obstacles,
    ) -> Self {
        Src {
            pos: &st.pos,
            vel: &st.vel,
            vfix,
            m: st.n,
            isa,
            obs,
        }
    }

    /// The first `D` axes, as the candidate loop reads them.
    #[inline(always)]
    fn cands<const D: usize>(&self) -> Cands<'_, D> {
        let m = self.m;
        Cands {
            pos: crate::sim::math::array(|k| &self.pos[k * m..(k + 1) * m]),
            vfix: crate::sim::math::array(|k| &self.vfix[k * m..(k + 1) * m]),
        }
    }
}

/// Candidate slots in `ranges`.
#[inline(always)]
pub(super) fn candidates(ranges: &[(u32, u32)]) -> usize {
    let mut n = 0;
    for &(a, b) in ranges {
        n += (b - a) as usize;
    }
    n
}

#[inline(always)]
pub(super) fn check<const D: usize>(bad: &AtomicUsize, slot: usize, p: &[f32; D], v: &[f32; D]) {
    let mut finite = true;
    for k in 0..D {
        finite &= p[k].is_finite() & v[k].is_finite();
    }
    if !finite {
        bad.fetch_min(slot, Ordering::Relaxed);
    }
}

/// Agents whose neighbour sums are taken before any of them is integrated (see `step_boids`).
pub(super) const BATCH: usize = 8;

/// One boid's step; `me` is its own slot in `src`, `agent` its id (it keys the heading noise
/// of step number `step`).
#[inline(always)]
pub(super) fn boids_agent<const D: usize>(
    p: &Params,
    wrap: bool,
    src: &Src,
    me: usize,
    ranges: &[(u32, u32)],
    step: u64,
    agent: u32,
) -> ([f32; D], [f32; D]) {
    let mut acc = BoidsAcc::<D>::new();
    boids_neighbours::<D>(p, wrap, src, me, ranges, &mut acc);
    let m = src.m;
    let pi: [f32; D] = crate::sim::math::array(|k| src.pos[k * m + me]);
    let near = src.obs.near_at(&pi);
    boids_finish::<D>(p, src, me, &acc, step, agent, near)
}

/// One boid's neighbour sums over the candidate slots `ranges`, itself excluded, into `acc`;
/// alignment and cohesion over those in its field of view ([`Sight`]).
#[inline(always)]
pub(super) fn boids_neighbours<const D: usize>(
    p: &Params,
    wrap: bool,
    src: &Src,
    me: usize,
    ranges: &[(u32, u32)],
    acc: &mut BoidsAcc<D>,
) {
    let m = src.m;
    let pi: [f32; D] = crate::sim::math::array(|k| src.pos[k * m + me]);
    let vi: [f32; D] = crate::sim::math::array(|k| src.vel[k * m + me]);
    let sight = Sight::new(p, &vi);
    let cands = src.cands::<D>();
    simd::boids_sums::<D>(src.isa, p, wrap, &pi, sight.as_ref(), &cands, ranges, acc);
    // The agent was its own candidate (every search visits its own slot; d2 = 0 < rmax2).
    let vfix: [i64; D] = crate::sim::math::array(|k| src.vfix[k * m + me]);
    acc.remove_self(p, &vfix);
}

/// One boid's new position and velocity from its sums (`agent`, its id, and `step` key its
/// heading noise; `near`, the obstacles' masks for its cell).
#[inline(always)]
pub(super) fn boids_finish<const D: usize>(
    p: &Params,
    src: &Src,
    me: usize,
    acc: &BoidsAcc<D>,
    step: u64,
    agent: u32,
    near: Near,
) -> ([f32; D], [f32; D]) {
    let m = src.m;
    let mut pi: [f32; D] = crate::sim::math::array(|k| src.pos[k * m + me]);
    let mut vi: [f32; D] = crate::sim::math::array(|k| src.vel[k * m + me]);
    boids_integrate(p, src.obs, near, acc, step, agent as u64, &mut pi, &mut vi);
    (pi, vi)
}

/// One Vicsek particle's step; `agent` keys the noise.
#[inline(always)]
pub(super) fn vicsek_agent(
    p: &Params,
    step: u64,
    agent: u32,
    src: &Src,
    me: usize,
    ranges: &[(u32, u32)],
) -> ([f32; 2], [f32; 2]) {
    let m = src.m;
    let pi = [src.pos[me], src.pos[m + me]];
    let own = [src.vel[me], src.vel[m + me]];
    // Self included: d2 = 0 < r².
    let (sum, count) = simd::vicsek_sum(src.isa, p, pi, &src.cands::<2>(), ranges);
    let mut pos = pi;
    let mut vel = [0f32; 2];
    vicsek_integrate(p, &sum, count, own, step, agent as u64, &mut pos, &mut vel);
    (pos, vel)
}
