//! "Does it flock?" as numbers: polarization, mean speed, nearest-neighbour distance and mean
//! pairwise distance of one frame. Computed in f64, minimum image distances in wrapping worlds.

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
    #[inline]
    fn delta(&self, d: f64, k: usize) -> f64 {
        if self.wrap {
            let l = self.world[k] as f64;
            let d = d - l * (d / l).round();
            d
        } else {
            d
        }
    }
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
    if n == 0 {
        return 0.0;
    }
    let mut sum = [0f64; 3];
    for i in 0..n {
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
    sum.iter().map(|x| x * x).sum::<f64>().sqrt() / n as f64
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

pub fn pairwise_distance(sp: &Space, n: usize, pos: &[f32]) -> f64 {
    let stride = n.div_ceil(PAIR_SAMPLE).max(1);
    let idx: Vec<usize> = (0..n).step_by(stride).collect();
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

/// Mean nearest-neighbour distance with a hash grid searched ring by ring.
pub fn nn_distance(sp: &Space, n: usize, pos: &[f32]) -> f64 {
    if n < 2 {
        return 0.0;
    }
    let dim = sp.dim;
    // Bounding box (open worlds may have agents outside the nominal box).
    let mut lo = [0f64; 3];
    let mut hi = [1f64; 3];
    for k in 0..dim {
        let xs = &pos[k * n..(k + 1) * n];
        let (mut a, mut b) = (f64::INFINITY, f64::NEG_INFINITY);
        for &x in xs {
            a = a.min(x as f64);
            b = b.max(x as f64);
        }
        if sp.wrap {
            a = a.min(0.0);
            b = b.max(sp.world[k] as f64);
        }
        lo[k] = a;
        hi[k] = if b > a { b } else { a + 1.0 };
    }
    // About two agents a cell.
    let vol: f64 = (0..dim).map(|k| hi[k] - lo[k]).product();
    let cell = (vol * 2.0 / n as f64).powf(1.0 / dim as f64).max(1e-12);
    let mut dims = [1usize; 3];
    for k in 0..dim {
        dims[k] = (((hi[k] - lo[k]) / cell).ceil() as usize).clamp(1, 4096);
    }
    // With wrap, cells must tile the world exactly.
    let csize: Vec<f64> = (0..3)
        .map(|k| {
            if k < dim {
                (hi[k] - lo[k]) / dims[k] as f64
            } else {
                1.0
            }
        })
        .collect();
    let ncells: usize = dims.iter().product();
    let coord = |i: usize, k: usize| -> usize {
        let x = (pos[k * n + i] as f64 - lo[k]) / csize[k];
        (x.max(0.0) as usize).min(dims[k] - 1)
    };
    let cell_of = |i: usize| -> usize {
        let mut c = 0;
        for k in (0..dim).rev() {
            c = c * dims[k] + coord(i, k);
        }
        c
    };
    let mut start = vec![0u32; ncells + 1];
    for i in 0..n {
        start[cell_of(i) + 1] += 1;
    }
    for c in 0..ncells {
        start[c + 1] += start[c];
    }
    let mut fill = start.clone();
    let mut items = vec![0u32; n];
    for i in 0..n {
        let c = cell_of(i);
        items[fill[c] as usize] = i as u32;
        fill[c] += 1;
    }
    let stride = n.div_ceil(NN_SAMPLE).max(1);
    let min_cell = csize[..dim].iter().cloned().fold(f64::INFINITY, f64::min);
    let max_ring = *dims[..dim].iter().max().unwrap();
    let mut total = 0.0;
    let mut count = 0usize;
    for i in (0..n).step_by(stride) {
        let mut c0 = [0i64; 3];
        for k in 0..dim {
            c0[k] = coord(i, k) as i64;
        }
        let mut best = f64::INFINITY;
        for ring in 0..=max_ring as i64 {
            // Every cell at Chebyshev distance `ring`.
            let r = ring;
            let zr = if dim == 3 { -r..=r } else { 0..=0 };
            for dz in zr {
                for dy in -r..=r {
                    for dx in -r..=r {
                        let off = [dx, dy, dz];
                        if off[..dim].iter().map(|o| o.abs()).max().unwrap() != r {
                            continue;
                        }
                        let mut c = 0usize;
                        let mut ok = true;
                        for k in (0..dim).rev() {
                            let mut x = c0[k] + off[k];
                            let d = dims[k] as i64;
                            if sp.wrap {
                                if 2 * r + 1 > d && (off[k] < -(d / 2) || off[k] > (d - 1) / 2) {
                                    ok = false; // would visit a cell twice
                                    break;
                                }
                                x = x.rem_euclid(d);
                            } else if x < 0 || x >= d {
                                ok = false;
                                break;
                            }
                            c = c * dims[k] + x as usize;
                        }
                        if !ok {
                            continue;
                        }
                        for &j in &items[start[c] as usize..start[c + 1] as usize] {
                            let j = j as usize;
                            if j != i {
                                best = best.min(sp.dist2(pos, n, i, j));
                            }
                        }
                    }
                }
            }
            // Everything beyond this ring is at least `ring * min_cell` away.
            if best.is_finite() && (ring as f64 * min_cell).powi(2) >= best {
                break;
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

    #[test]
    fn nn_matches_brute_force() {
        for &(dim, wrap) in &[(2, true), (2, false), (3, true), (3, false)] {
            let n = 500;
            let mut pos = vec![0f32; dim * n];
            let mut s = 12345u64;
            for x in pos.iter_mut() {
                s = crate::sim::math::mix64(s);
                *x = (s >> 40) as f32 / (1u64 << 24) as f32 * 50.0;
            }
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
    fn polarization_of_aligned_and_opposed() {
        assert!((polarization(2, 2, &[1.0, 3.0, 0.0, 0.0]) - 1.0).abs() < 1e-12);
        assert!(polarization(2, 2, &[1.0, -1.0, 0.0, 0.0]).abs() < 1e-12);
    }
}
