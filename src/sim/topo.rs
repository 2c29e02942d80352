//! Topological neighbours (Ballerini et al. 2008, PNAS: a starling interacts with its 6–7
//! nearest neighbours, however far they are): a boid's alignment and cohesion average over the
//! `k` nearest other agents instead of all within `r_ali`/`r_coh`; separation stays metric
//! (every agent within `r_sep`). With a field of view (`boids.fov`, [`Sight`]) the k are the
//! nearest of those the boid sees: an agent in its blind angle is never a candidate, however
//! near (separation still counts it). The CPU solver's step calls [`boids_agent`] per agent, on
//! either search (src/sim/cpu.rs, `step_topo`).
//!
//! Determinism (DESIGN.md): which agents are "the k nearest" must not depend on the search, the
//! thread count or the slot order (the grid re-sorts slots every step). Each candidate gets a
//! key: its squared distance as f32, computed exactly as the metric rules compute it
//! (`wrap_delta` per axis, then `norm2`), then its agent id — `(d2 bits << 32) | id`, which
//! orders as (d2, id) does since d2 ≥ 0 (a NaN sorts last). No two agents share a key, so the k
//! smallest keys are one well-defined set; their velocities and offsets are summed in fixed
//! point ([`BoidsAcc`]), so the order they were found in cannot change the result.
//!
//! Searches: brute force offers every slot. The grid visits cells ring by ring (Chebyshev
//! distance in cells) around the agent's cell, each cell once, and stops when the k found are
//! certain: every agent in an unvisited cell is farther than the ring reached, and the k-th best
//! distance (and `r_sep`) is within it, with a margin for the rounding of cell coordinates and
//! distances.

use std::cell::RefCell;

use super::grid::Grid;
use super::math::*;
use super::obstacles::Obstacles;
use super::Params;

/// What the step reads of the other agents (component-major, stride `m`, slot order): positions,
/// velocities, velocities in fixed point, and the agent id of each slot.
pub(super) struct Src<'a> {
    pub pos: &'a [f32],
    pub vel: &'a [f32],
    pub vfix: &'a [i64],
    pub ids: &'a [u32],
    pub m: usize,
    /// The obstacles the integration steers around and settles out of.
    pub obs: &'a Obstacles,
}

thread_local! {
    /// The best candidates so far of the agent being stepped, a max-heap on the key. One per
    /// thread, grown to k once: the step allocates nothing after its first.
    static HEAP: RefCell<Vec<(u64, u32)>> = const { RefCell::new(Vec::new()) };
}

/// Run `f` with this thread's candidate heap.
pub(super) fn with_heap<R>(f: impl FnOnce(&mut Vec<(u64, u32)>) -> R) -> R {
    HEAP.with(|h| f(&mut h.borrow_mut()))
}

/// The candidate heap: the k smallest keys offered so far, as a max-heap (`h[0]` is the worst
/// kept), each with its slot.
type Heap = Vec<(u64, u32)>;

/// Whether [`offer`] would keep `key`: the heap is not full, or `key` beats its worst.
#[inline(always)]
fn kept(h: &Heap, k: usize, key: u64) -> bool {
    h.len() < k || (k > 0 && key < h[0].0)
}

/// Offer one candidate to the heap of the `k` best.
#[inline(always)]
fn offer(h: &mut Heap, k: usize, key: u64, slot: u32) {
    if h.len() < k {
        h.push((key, slot));
        let mut i = h.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if h[parent].0 >= key {
                break;
            }
            h.swap(i, parent);
            i = parent;
        }
    } else if kept(h, k, key) {
        h[0] = (key, slot);
        let n = h.len();
        let mut i = 0;
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut big = i;
            if l < n && h[l].0 > h[big].0 {
                big = l;
            }
            if r < n && h[r].0 > h[big].0 {
                big = r;
            }
            if big == i {
                break;
            }
            h.swap(i, big);
            i = big;
        }
    }
}

/// All `k` found, and the k-th best squared distance is at most `reach2`.
#[inline(always)]
fn certain_within(h: &Heap, k: usize, reach2: f64) -> bool {
    h.len() == k && (k == 0 || f32::from_bits((h[0].0 >> 32) as u32) as f64 <= reach2)
}

/// `d = p_j − p_i` (minimum image) and its squared length, exactly as the metric rules compute
/// them (the species' masked loops too).
#[inline(always)]
pub(super) fn offset<const D: usize>(
    p: &Params,
    src: &Src,
    pi: &[f32; D],
    j: usize,
) -> ([f32; D], f32) {
    offset_by::<D, false>(p, src, pi, j)
}

/// [`offset`], the minimum image by selects where `SELECT` ([`wrap_delta_by`]).
#[inline(always)]
pub(super) fn offset_by<const D: usize, const SELECT: bool>(
    p: &Params,
    src: &Src,
    pi: &[f32; D],
    j: usize,
) -> ([f32; D], f32) {
    let wrap = p.wraps();
    let mut d = [0f32; D];
    for k in 0..D {
        let dk = src.pos[k * src.m + j] - pi[k];
        d[k] = wrap_delta_by::<SELECT>(dk, p.world[k], p.half_world[k], wrap);
    }
    let d2 = norm2(&d);
    (d, d2)
}

/// What one boid is: its slot, position, sight and how many neighbours it keeps.
struct Me<const D: usize> {
    slot: usize,
    pos: [f32; D],
    sight: Option<Sight<D>>,
    k: usize,
}

/// Offer slot `j` to boid `me`: its separation term when within `r_sep`, then the heap of
/// the k nearest it sees.
#[inline(always)]
fn visit<const D: usize, const SELECT: bool>(
    p: &Params,
    src: &Src,
    me: &Me<D>,
    j: usize,
    best: &mut Heap,
    acc: &mut BoidsAcc<D>,
) {
    if j == me.slot {
        return;
    }
    let (d, d2) = offset_by::<D, SELECT>(p, src, &me.pos, j);
    // Separation exactly as `BoidsAcc::boids_pair` takes it: (p_i − p_j) / |p_i − p_j|².
    if (d2 < p.r_sep2) & (d2 > 0.0) {
        for k in 0..D {
            acc.sep[k] = acc.sep[k].wrapping_add(to_fix(-d[k] / d2));
        }
    }
    // Most candidates are farther than the k kept: that cheap test first, and only then
    // the blind angle, whose outcome is a coin toss the branch predictor cannot learn.
    let key = ((d2.to_bits() as u64) << 32) | src.ids[j] as u64;
    if kept(best, me.k, key) && me.sight.as_ref().is_none_or(|s| s.sees(&d, d2)) {
        offer(best, me.k, key, j as u32);
    }
}

/// One boid's step (number `step`) with topological alignment and cohesion; `me` is its slot
/// in `src`; `grid` is the grid `src` is sorted by, or None for brute force. `heap` is scratch.
/// With a field of view ([`Sight`]), the k nearest are those it sees: a candidate it does not
/// see is never offered.
#[inline]
pub(super) fn boids_agent<const D: usize>(
    p: &Params,
    src: &Src,
    me: usize,
    grid: Option<&Grid>,
    step: u64,
    heap: &mut Heap,
) -> ([f32; D], [f32; D]) {
    let m = src.m;
    let mut pi = [0f32; D];
    let mut vi = [0f32; D];
    for k in 0..D {
        pi[k] = src.pos[k * m + me];
        vi[k] = src.vel[k * m + me];
    }
    let k = (p.topo_k as usize).min(m.saturating_sub(1));
    heap.clear();
    if heap.capacity() < k {
        heap.reserve(k);
    }
    let boid = Me {
        slot: me,
        pos: pi,
        sight: Sight::new(p, &vi),
        k,
    };
    let mut acc = BoidsAcc::<D>::new();
    match grid {
        None if selects_pay(p.wraps(), &[(0, m as u32)]) => {
            for j in 0..m {
                visit::<D, true>(p, src, &boid, j, heap, &mut acc);
            }
        }
        None => {
            for j in 0..m {
                visit::<D, false>(p, src, &boid, j, heap, &mut acc);
            }
        }
        Some(g) => rings::<D>(p, g, me, k, heap, &mut acc, &mut |j, best, acc| {
            visit::<D, false>(p, src, &boid, j, best, acc)
        }),
    }
    for &(_, j) in heap.iter() {
        let j = j as usize;
        let (d, _) = offset::<D>(p, src, &pi, j);
        for k in 0..D {
            acc.ali[k] = acc.ali[k].wrapping_add(src.vfix[k * m + j]);
            acc.coh[k] = acc.coh[k].wrapping_add(to_fix(d[k]));
        }
    }
    acc.n_ali = heap.len() as u32;
    acc.n_coh = heap.len() as u32;
    let near = src.obs.near_at(&pi);
    boids_integrate(
        p,
        src.obs,
        near,
        &acc,
        step,
        src.ids[me] as u64,
        &mut pi,
        &mut vi,
    );
    (pi, vi)
}

/// Grid search: offer the agents of the cells around slot `me`'s cell, ring by ring, until the
/// k best and every agent within `r_sep` are certain (or every cell is visited).
fn rings<const D: usize>(
    p: &Params,
    g: &Grid,
    me: usize,
    k: usize,
    best: &mut Heap,
    acc: &mut BoidsAcc<D>,
    visit: &mut impl FnMut(usize, &mut Heap, &mut BoidsAcc<D>),
) {
    let wrap = p.wraps();
    let cc = g.coords(g.scell[me] as usize);
    // Per axis, the window of cell offsets that names each cell once: all D cells around a
    // wrapping axis, the cells inside the world otherwise.
    let (mut lo, mut hi) = ([0i64; 3], [0i64; 3]);
    let mut h_min = f64::INFINITY;
    let mut d_max = 1usize;
    for a in 0..D {
        let d = g.dims[a] as i64;
        if wrap {
            lo[a] = -((d - 1) / 2);
            hi[a] = d / 2;
        } else {
            lo[a] = -(cc[a] as i64);
            hi[a] = d - 1 - cc[a] as i64;
        }
        h_min = h_min.min(p.world[a] as f64 / g.dims[a] as f64);
        d_max = d_max.max(g.dims[a]);
    }
    let r_last = (0..D).map(|a| (-lo[a]).max(hi[a])).max().unwrap_or(0);
    // Cells are assigned by a rounded `x * inv_cell` and offsets are rounded too: count every
    // unvisited agent as up to `slack` cells nearer than its cell says (generous: a rounding
    // error is at most ~d_max·2⁻²³ cells), and distances a relative 1e-5 shorter.
    let slack = 0.01 + d_max as f64 / (1u64 << 20) as f64;
    let cell = |o: [i64; 3]| -> usize {
        let mut c = 0usize;
        for a in (0..D).rev() {
            let x = if wrap {
                (cc[a] as i64 + o[a]).rem_euclid(g.dims[a] as i64)
            } else {
                cc[a] as i64 + o[a]
            };
            c = c * g.dims[a] + x as usize;
        }
        c
    };
    let mut offer_cell = |o: [i64; 3], best: &mut Heap, acc: &mut BoidsAcc<D>| {
        let c = cell(o);
        for j in g.cell_start[c] as usize..g.cell_start[c + 1] as usize {
            visit(j, best, acc);
        }
    };
    for r in 0..=r_last {
        // The cells at Chebyshev offset exactly r, clipped to the window.
        let (zlo, zhi) = if D == 3 {
            ((-r).max(lo[2]), r.min(hi[2]))
        } else {
            (0, 0)
        };
        for oz in zlo..=zhi {
            let z_on = oz.abs() == r;
            for oy in (-r).max(lo[1])..=r.min(hi[1]) {
                if z_on || oy.abs() == r {
                    for ox in (-r).max(lo[0])..=r.min(hi[0]) {
                        offer_cell([ox, oy, oz], best, acc);
                    }
                } else {
                    if -r >= lo[0] {
                        offer_cell([-r, oy, oz], best, acc);
                    }
                    if r <= hi[0] {
                        offer_cell([r, oy, oz], best, acc);
                    }
                }
            }
        }
        // Every agent not yet visited is more than `reach` away.
        let reach = (r as f64 - slack) * h_min;
        if reach > 0.0 {
            let reach2 = reach * reach * (1.0 - 1e-5);
            if p.r_sep2 as f64 <= reach2 && certain_within(best, k, reach2) {
                return;
            }
        }
    }
}
