//! "Does it flock?" as numbers: polarization, mean speed, nearest-neighbour distance and mean
//! pairwise distance of one frame. Computed in f64, minimum image distances in wrapping worlds.
//!
//! - [`gnf`]: giant number fluctuations over many frames (`forge info --gnf`);
//! - [`profile`]: the density profile along the mean heading (travelling bands).

pub mod gnf;
pub(crate) mod image;
pub mod profile;

use serde::Serialize;

/// Exact pairwise mean up to this many agents; above it, a fixed deterministic sample of this
/// many agents (every ⌈N/PAIR_SAMPLE⌉-th).
pub const PAIR_SAMPLE: usize = 3000;
/// Nearest-neighbour distance is averaged over at most this many agents (a fixed stride
/// sample above it); each one's neighbour is searched among all agents.
pub const NN_SAMPLE: usize = 20_000;

#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct Metrics {
    /// |mean unit velocity|: 1 = all aligned, ~1/√N = random (Vicsek's order parameter v_a).
    pub polarization: f64,
    pub mean_speed: f64,
    /// Mean distance to the nearest other agent.
    pub nn_distance: f64,
    /// Mean distance between two agents (cuplan's cohesion measure).
    pub pairwise_distance: f64,
}

/// The geometry a frame lives in.
#[derive(Clone, Copy, Debug)]
pub struct Space {
    pub dim: usize,
    pub world: [f32; 3],
    pub wrap: bool,
}

impl Space {
    /// The geometry of a recording's frames, from its header.
    pub fn of(h: &crate::bfs::Header) -> Space {
        Space {
            dim: h.dim as usize,
            world: h.world_size,
            wrap: h.boundary == crate::scene::Boundary::Wrap,
        }
    }

    /// The separation `d` along axis `k`, minimum image in a periodic world (the tests'
    /// one-pair-at-a-time references).
    #[cfg(test)]
    fn delta(&self, d: f64, k: usize) -> f64 {
        if self.wrap {
            image::far(d, self.world[k] as f64)
        } else {
            d
        }
    }
    #[cfg(test)]
    fn dist2(&self, pos: &[f32], n: usize, i: usize, j: usize) -> f64 {
        let mut s = 0.0;
        for k in 0..self.dim {
            let d = self.delta(pos[k * n + j] as f64 - pos[k * n + i] as f64, k);
            s += d * d;
        }
        s
    }
}

pub fn polarization(dim: usize, n: usize, vel: &[f32]) -> f64 {
    polarization_of(dim, n, vel, |_| true)
}

/// [`polarization`] over the agents `i` of `0..n` for which `keep(i)` (none: 0).
pub fn polarization_of(dim: usize, n: usize, vel: &[f32], keep: impl Fn(usize) -> bool) -> f64 {
    let mut sum = [0f64; 3];
    let mut kept = 0usize;
    for i in (0..n).filter(|&i| keep(i)) {
        kept += 1;
        let mut s2 = 0.0;
        for k in 0..dim {
            s2 += (vel[k * n + i] as f64).powi(2);
        }
        if s2 > 0.0 {
            let s = s2.sqrt();
            for (k, x) in sum.iter_mut().enumerate().take(dim) {
                *x += vel[k * n + i] as f64 / s;
            }
        }
    }
    if kept == 0 {
        return 0.0;
    }
    sum.iter().map(|x| x * x).sum::<f64>().sqrt() / kept as f64
}

/// [`polarization`] of a solver's state (`vel` in slot order, `ids` the agent of each slot) over
/// the agents not in `absent` (ascending id ranges, as [`crate::bfs::Frame::absent`]).
pub fn polarization_present(dim: usize, vel: &[f32], ids: &[u32], absent: &[(u32, u32)]) -> f64 {
    polarization_of(dim, ids.len(), vel, |s| {
        !crate::bfs::is_in(absent, ids[s] as usize)
    })
}

pub fn mean_speed(dim: usize, n: usize, vel: &[f32]) -> f64 {
    if n == 0 {
        return 0.0;
    }
    (0..n)
        .map(|i| {
            (0..dim)
                .map(|k| (vel[k * n + i] as f64).powi(2))
                .sum::<f64>()
                .sqrt()
        })
        .sum::<f64>()
        / n as f64
}

/// Mean distance between two agents, over every pair of at most [`PAIR_SAMPLE`] agents (a
/// fixed stride sample above it). Each pair's distance is `sqrt(Σ_k image(x_j,k − x_i,k)²)` in
/// float64, summed one pair after the other in the order (i, j > i): the sum is the same, bit
/// for bit, however the distances are computed.
pub fn pairwise_distance(sp: &Space, n: usize, pos: &[f32]) -> f64 {
    let stride = n.div_ceil(PAIR_SAMPLE).max(1);
    let m = n.div_ceil(stride);
    if m < 2 {
        return 0.0;
    }
    let dim = sp.dim;
    // The sample's coordinates, an axis at a time, in float64 and side by side.
    let xs: Vec<Vec<f64>> = (0..dim)
        .map(|k| {
            let axis = &pos[k * n..(k + 1) * n];
            axis.iter().step_by(stride).map(|&x| x as f64).collect()
        })
        .collect();
    let len: [f64; 3] = sp.world.map(|w| w as f64);
    // The minimum image of the sampled positions.
    let total = match (
        dim,
        image::choose(sp.wrap, dim, &len, |k| xs[k].iter().copied()),
    ) {
        (2, image::NONE) => pair_sum::<2, { image::NONE }>(&xs, len),
        (2, image::NEAR) => pair_sum::<2, { image::NEAR }>(&xs, len),
        (2, _) => pair_sum::<2, { image::FAR }>(&xs, len),
        (_, image::NONE) => pair_sum::<3, { image::NONE }>(&xs, len),
        (_, image::NEAR) => pair_sum::<3, { image::NEAR }>(&xs, len),
        (_, _) => pair_sum::<3, { image::FAR }>(&xs, len),
    };
    total / (m * (m - 1) / 2) as f64
}

/// Pairs are taken in blocks of this many j for one i: a block's distances first (a loop the
/// compiler vectorises), then their sum in order.
const PAIR_BLOCK: usize = 256;

/// Σ over i < j of the distance between sample points i and j (`xs[k]`: axis k, `D` axes),
/// with minimum image `IMAGE` ([`image::apply`]) in sides `len`.
fn pair_sum<const D: usize, const IMAGE: u8>(xs: &[Vec<f64>], len: [f64; 3]) -> f64 {
    let x: [&[f64]; D] = crate::sim::math::array(|k| &xs[k][..]);
    let m = x[0].len();
    let mut r = [0.0f64; PAIR_BLOCK];
    let mut total = 0.0;
    for i in 0..m {
        let xi: [f64; D] = crate::sim::math::array(|k| x[k][i]);
        let mut j0 = i + 1;
        while j0 < m {
            let b = (m - j0).min(PAIR_BLOCK);
            let xj: [&[f64]; D] = crate::sim::math::array(|k| &x[k][j0..j0 + b]);
            for (t, r) in r[..b].iter_mut().enumerate() {
                let mut s = 0.0;
                for k in 0..D {
                    let d = image::apply::<IMAGE>(xj[k][t] - xi[k], len[k]);
                    s += d * d;
                }
                *r = s.sqrt();
            }
            for &d in &r[..b] {
                total += d;
            }
            j0 += b;
        }
    }
    total
}

/// Mean nearest-neighbour distance (minimum image in wrapping worlds), over at most
/// [`NN_SAMPLE`] agents, each one's neighbour searched among all agents with a k-d tree.
///
/// The cost depends on the number of agents only, never on where they are: a tree has no cells
/// to follow the extent, so one coordinate at 3e38 or an agent a billion units out costs what
/// any other agent does (O(n log n) to build, about O(log n) a query). Agents with a NaN or
/// infinite coordinate take no part (neither as a query nor as a neighbour).
pub fn nn_distance(sp: &Space, n: usize, pos: &[f32]) -> f64 {
    if n < 2 {
        return 0.0;
    }
    let dim = sp.dim;
    // Minimum image needs a usable period on every axis; otherwise the world is treated as open.
    let period: Option<[f64; 3]> =
        (sp.wrap && sp.world[..dim].iter().all(|&l| l.is_finite() && l > 0.0)).then(|| {
            let mut p = [0f64; 3];
            for (k, x) in p.iter_mut().enumerate().take(dim) {
                *x = sp.world[k] as f64;
            }
            p
        });
    let point = |i: usize| -> Option<[f64; 3]> {
        let mut p = [0f64; 3];
        for k in 0..dim {
            let x = pos[k * n + i] as f64;
            if !x.is_finite() {
                return None;
            }
            // Inside the period box, so that one image on each side is enough.
            p[k] = match period {
                Some(l) => {
                    let r = x.rem_euclid(l[k]);
                    if r >= l[k] {
                        0.0
                    } else {
                        r
                    }
                }
                None => x,
            };
        }
        Some(p)
    };
    let mut pts: Vec<([f64; 3], u32)> = (0..n)
        .filter_map(|i| point(i).map(|p| (p, i as u32)))
        .collect();
    if pts.len() < 2 {
        return 0.0;
    }
    let tree = KdTree::build(&mut pts, dim);
    let stride = n.div_ceil(NN_SAMPLE).max(1);
    let mut total = 0.0;
    let mut count = 0usize;
    for i in (0..n).step_by(stride) {
        let Some(q) = point(i) else { continue };
        let mut best = f64::INFINITY;
        tree.nearest(&q, i as u32, &mut best);
        if let Some(l) = period {
            // The images of q one period away on each axis that could hold something closer.
            let shifts = 3usize.pow(dim as u32);
            for s in 0..shifts {
                let mut img = q;
                let mut gap2 = 0.0;
                let mut t = s;
                let mut moved = false;
                for k in 0..dim {
                    match t % 3 {
                        1 => {
                            img[k] += l[k];
                            gap2 += q[k] * q[k];
                            moved = true;
                        }
                        2 => {
                            img[k] -= l[k];
                            gap2 += (l[k] - q[k]) * (l[k] - q[k]);
                            moved = true;
                        }
                        _ => {}
                    }
                    t /= 3;
                }
                if moved && gap2 < best {
                    tree.nearest(&img, i as u32, &mut best);
                }
            }
        }
        if best.is_finite() {
            total += best.sqrt();
            count += 1;
        }
    }
    if count == 0 {
        0.0
    } else {
        total / count as f64
    }
}

/// Points at most this many to a leaf of the k-d tree.
const KD_LEAF: usize = 8;

/// A k-d tree stored in place: the points of the range `lo..hi` are split at `mid =
/// (lo + hi) / 2` along `axis[mid]` (the axis of largest spread), smaller coordinates before
/// `mid`, larger after.
struct KdTree<'a> {
    pts: &'a [([f64; 3], u32)],
    axis: Vec<u8>,
    dim: usize,
}

impl<'a> KdTree<'a> {
    fn build(pts: &'a mut [([f64; 3], u32)], dim: usize) -> KdTree<'a> {
        let mut axis = vec![0u8; pts.len()];
        // An explicit stack: the depth is about log2(n), but no recursion is needed at all.
        let mut todo = vec![(0usize, pts.len())];
        while let Some((lo, hi)) = todo.pop() {
            if hi - lo <= KD_LEAF {
                continue;
            }
            let part = &mut pts[lo..hi];
            let mut a = 0;
            let mut widest = -1.0;
            for k in 0..dim {
                let (mut mn, mut mx) = (f64::INFINITY, f64::NEG_INFINITY);
                for (p, _) in part.iter() {
                    mn = mn.min(p[k]);
                    mx = mx.max(p[k]);
                }
                if mx - mn > widest {
                    widest = mx - mn;
                    a = k;
                }
            }
            let mid = (hi - lo) / 2;
            part.select_nth_unstable_by(mid, |x, y| x.0[a].total_cmp(&y.0[a]));
            axis[lo + mid] = a as u8;
            todo.push((lo, lo + mid));
            todo.push((lo + mid + 1, hi));
        }
        KdTree { pts, axis, dim }
    }

    fn dist2(&self, a: &[f64; 3], b: &[f64; 3]) -> f64 {
        (0..self.dim).map(|k| (a[k] - b[k]) * (a[k] - b[k])).sum()
    }

    /// Lowers `best` (a squared distance) to that of the nearest point to `q` other than the
    /// agent `skip`.
    fn nearest(&self, q: &[f64; 3], skip: u32, best: &mut f64) {
        // (range, squared distance from q to the range's side of the split that led to it)
        let mut todo: Vec<(usize, usize, f64)> = Vec::with_capacity(64);
        todo.push((0, self.pts.len(), 0.0));
        while let Some((lo, hi, bound)) = todo.pop() {
            if bound >= *best {
                continue;
            }
            if hi - lo <= KD_LEAF {
                for (p, id) in &self.pts[lo..hi] {
                    if *id != skip {
                        *best = best.min(self.dist2(q, p));
                    }
                }
                continue;
            }
            let mid = lo + (hi - lo) / 2;
            let (p, id) = &self.pts[mid];
            if *id != skip {
                *best = best.min(self.dist2(q, p));
            }
            let a = self.axis[mid] as usize;
            let d = q[a] - p[a];
            let (near, far) = if d < 0.0 {
                ((lo, mid), (mid + 1, hi))
            } else {
                ((mid + 1, hi), (lo, mid))
            };
            // The far side first in, so the near side is searched first.
            todo.push((far.0, far.1, d * d));
            todo.push((near.0, near.1, 0.0));
        }
    }
}

pub fn frame_metrics(sp: &Space, n: usize, pos: &[f32], vel: &[f32]) -> Metrics {
    Metrics {
        polarization: polarization(sp.dim, n, vel),
        mean_speed: mean_speed(sp.dim, n, vel),
        nn_distance: nn_distance(sp, n, pos),
        pairwise_distance: pairwise_distance(sp, n, pos),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute_nn(sp: &Space, n: usize, pos: &[f32]) -> f64 {
        (0..n)
            .map(|i| {
                (0..n)
                    .filter(|&j| j != i)
                    .map(|j| sp.dist2(pos, n, i, j))
                    .fold(f64::INFINITY, f64::min)
                    .sqrt()
            })
            .sum::<f64>()
            / n as f64
    }

    /// `len` coordinates in [0, 50), from a fixed seed.
    fn scattered(len: usize, seed: u64) -> Vec<f32> {
        let mut s = seed;
        (0..len)
            .map(|_| {
                s = crate::sim::math::mix64(s);
                (s >> 40) as f32 / (1u64 << 24) as f32 * 50.0
            })
            .collect()
    }

    /// [`pairwise_distance`] one pair at a time, as the sum is defined.
    fn pairwise_one_by_one(sp: &Space, n: usize, pos: &[f32]) -> f64 {
        let idx: Vec<usize> = (0..n).step_by(n.div_ceil(PAIR_SAMPLE).max(1)).collect();
        let m = idx.len();
        if m < 2 {
            return 0.0;
        }
        let mut total = 0.0;
        for a in 0..m {
            for b in a + 1..m {
                total += sp.dist2(pos, n, idx[a], idx[b]).sqrt();
            }
        }
        total / (m * (m - 1) / 2) as f64
    }

    /// The blocked, vectorised sum gives the bits of the one-pair-at-a-time sum: in 2D and 3D,
    /// periodic and open, with every position near the box (the select image), with one far out
    /// (division and round), with a NaN, at the sample's stride, and with 0, 1 and 2 agents.
    #[test]
    fn pairwise_is_the_one_by_one_sum() {
        for &(dim, wrap) in &[(2, true), (2, false), (3, true), (3, false)] {
            let sp = Space {
                dim,
                world: [50.0, 45.0, 50.0],
                wrap,
            };
            for n in [0, 1, 2, 3, 257, 700, PAIR_SAMPLE + 1, 2 * PAIR_SAMPLE + 5] {
                let mut pos = scattered(dim * n, 99 + n as u64);
                let same = |pos: &[f32]| {
                    assert_eq!(
                        pairwise_distance(&sp, n, pos).to_bits(),
                        pairwise_one_by_one(&sp, n, pos).to_bits(),
                        "dim {dim} wrap {wrap} n {n}"
                    );
                };
                same(&pos);
                if n > 3 {
                    // Exactly on half a side apart, and on the box's edges.
                    pos[0] = 0.0;
                    pos[n.div_ceil(PAIR_SAMPLE)] = 25.0;
                    pos[n] = 37.5;
                    same(&pos);
                    pos[3] = -1.0e6;
                    same(&pos);
                    pos[n + 2] = f32::NAN;
                    same(&pos);
                }
            }
        }
    }

    #[test]
    fn nn_matches_brute_force() {
        for &(dim, wrap) in &[(2, true), (2, false), (3, true), (3, false)] {
            let n = 500;
            let pos = scattered(dim * n, 12345u64);
            let sp = Space {
                dim,
                world: [50.0, 50.0, 50.0],
                wrap,
            };
            let a = nn_distance(&sp, n, &pos);
            let b = brute_nn(&sp, n, &pos);
            assert!((a - b).abs() < 1e-9, "dim {dim} wrap {wrap}: {a} vs {b}");
        }
    }

    #[test]
    fn nn_with_far_agents_matches_brute_force() {
        // Agents outside the box (wrap: any multiple of the period away; open: far out), and a
        // NaN, which takes no part.
        for &(dim, wrap) in &[(2, true), (2, false), (3, true), (3, false)] {
            let n = 300;
            let mut pos = scattered(dim * n, 777u64);
            pos[5] = 1.0e6;
            pos[n + 7] = -2.5e4;
            pos[9] = -149.75;
            let sp = Space {
                dim,
                world: [50.0, 50.0, 50.0],
                wrap,
            };
            let a = nn_distance(&sp, n, &pos);
            let b = brute_nn(&sp, n, &pos);
            assert!((a - b).abs() < 1e-6, "dim {dim} wrap {wrap}: {a} vs {b}");
            pos[11] = f32::NAN;
            assert!(nn_distance(&sp, n, &pos).is_finite());
        }
    }

    #[test]
    fn nn_cost_does_not_follow_the_extent() {
        // One coordinate at 3e38: a grid sized by the extent would be searched ring after
        // empty ring (hours); the cost must follow the agents, not the extent.
        for &(dim, wrap) in &[(2, true), (2, false), (3, true), (3, false)] {
            let n = 5000;
            let mut pos: Vec<f32> = (0..dim * n).map(|j| (j % 101) as f32 * 0.37).collect();
            pos[3] = 3e38;
            pos[n + 4] = -3e38;
            let sp = Space {
                dim,
                world: [100.0, 100.0, 100.0],
                wrap,
            };
            let t0 = std::time::Instant::now();
            assert!(nn_distance(&sp, n, &pos).is_finite());
            assert!(t0.elapsed().as_secs_f64() < 2.0, "{:?}", t0.elapsed());
        }
    }

    #[test]
    fn polarization_of_aligned_and_opposed() {
        assert!((polarization(2, 2, &[1.0, 3.0, 0.0, 0.0]) - 1.0).abs() < 1e-12);
        assert!(polarization(2, 2, &[1.0, -1.0, 0.0, 0.0]).abs() < 1e-12);
    }
}
