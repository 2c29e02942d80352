//! The anisotropy of the k-th nearest neighbour's direction (Ballerini et al., PNAS 2008):
//! for every agent, its k_max nearest neighbours from a cell grid (about four agents a cell,
//! rings of cells searched outwards until no nearer agent can remain), and per k the mean of
//! (û·V̂)² − 1/d, û the direction to the k-th neighbour and V̂ the flight direction. In a world
//! that does not wrap, an agent nearer the box's wall than its k_max-th neighbour is left out:
//! the wall would cut its neighbourhood.

use super::{FrameStats, Geometry};

/// Agents per cell aimed at.
const PER_CELL: f64 = 4.0;
/// Up to this many agents, every agent's neighbours are found among all the others. The grid
/// gives the same neighbours (ties go to the lower index either way) and is faster from far
/// fewer agents.
const BRUTE_MAX: usize = 100;

/// Fills `s.gamma`, `s.gamma_se` and `s.measured` for one frame.
pub(super) fn anisotropy(
    pos: &[f32],
    n: usize,
    geo: &Geometry,
    v: [f64; 3],
    k_max: usize,
    s: &mut FrameStats,
) {
    let cells = Cells::new(pos, n, geo);
    let threads = super::threads();
    let chunk = n.div_ceil(threads).max(1);
    let parts: Vec<(Vec<f64>, Vec<f64>, usize)> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..n)
            .step_by(chunk)
            .map(|start| {
                let cells = &cells;
                sc.spawn(move || {
                    let mut sum = (vec![0.0; k_max], vec![0.0; k_max], 0);
                    let mut best = Vec::with_capacity(k_max + 1);
                    for i in start..(start + chunk).min(n) {
                        cells.nearest(i, k_max, &mut best);
                        measure(cells, i, &best, v, k_max, &mut sum);
                    }
                    sum
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let (mut s1, mut s2, mut count) = (vec![0.0; k_max], vec![0.0; k_max], 0);
    for (a, b, c) in parts {
        for k in 0..k_max {
            s1[k] += a[k];
            s2[k] += b[k];
        }
        count += c;
    }
    let m = count as f64;
    s.measured = count;
    s.gamma = (0..k_max)
        .map(|k| {
            if k < n - 1 && count > 0 {
                s1[k] / m
            } else {
                f64::NAN
            }
        })
        .collect();
    s.gamma_se = (0..k_max)
        .map(|k| {
            if k < n - 1 && count > 1 {
                let mean = s1[k] / m;
                ((s2[k] / m - mean * mean).max(0.0) / (m - 1.0)).sqrt()
            } else {
                f64::NAN
            }
        })
        .collect();
}

/// Adds agent `i`'s (û·V̂)² − 1/d for each k to the sums, unless a wall is nearer than its
/// farthest neighbour or a neighbour sits on it.
fn measure(
    c: &Cells,
    i: usize,
    best: &[(f64, u32)],
    v: [f64; 3],
    k_max: usize,
    (s1, s2, count): &mut (Vec<f64>, Vec<f64>, usize),
) {
    let geo = &c.geo;
    let Some(&(far, _)) = best.last() else { return };
    if best.first().is_some_and(|b| b.0 == 0.0) {
        return;
    }
    if !geo.wrap {
        let wall = (0..geo.dim)
            .map(|k| {
                let x = c.at(i, k) - geo.lo[k];
                x.min(geo.len[k] - x)
            })
            .fold(f64::INFINITY, f64::min);
        if wall * wall < far {
            return;
        }
    }
    let third = 1.0 / geo.dim as f64;
    for (k, &(r2, j)) in best.iter().enumerate().take(k_max) {
        let r = r2.sqrt();
        let cos: f64 = (0..geo.dim)
            .map(|d| geo.delta(c.at(j as usize, d) - c.at(i, d), d) / r * v[d])
            .sum();
        let x = cos * cos - third;
        s1[k] += x;
        s2[k] += x * x;
    }
    *count += 1;
}

/// Agents sorted into a grid of cells over the box.
struct Cells<'a> {
    pos: &'a [f32],
    n: usize,
    geo: Geometry,
    dims: [usize; 3],
    side: [f64; 3],
    /// Agents of cell c: `order[start[c]..start[c + 1]]`.
    start: Vec<u32>,
    order: Vec<u32>,
}

impl<'a> Cells<'a> {
    fn new(pos: &'a [f32], n: usize, geo: &Geometry) -> Cells<'a> {
        let dim = geo.dim;
        let target = (geo.volume() * PER_CELL / n as f64).powf(1.0 / dim as f64);
        let cap = if dim == 2 { 4096.0 } else { 256.0 };
        let mut dims = [1usize; 3];
        let mut side = [1.0; 3];
        for k in 0..dim {
            dims[k] = (geo.len[k] / target).floor().clamp(1.0, cap) as usize;
            side[k] = geo.len[k] / dims[k] as f64;
        }
        let mut c = Cells {
            pos,
            n,
            geo: *geo,
            dims,
            side,
            start: Vec::new(),
            order: Vec::new(),
        };
        let total: usize = dims[..dim].iter().product();
        let home: Vec<usize> = (0..n).map(|i| c.index(c.cell_of(i))).collect();
        let mut start = vec![0u32; total + 1];
        for &h in &home {
            start[h + 1] += 1;
        }
        for t in 0..total {
            start[t + 1] += start[t];
        }
        let mut fill = start.clone();
        let mut order = vec![0u32; n];
        for (i, &h) in home.iter().enumerate() {
            order[fill[h] as usize] = i as u32;
            fill[h] += 1;
        }
        c.start = start;
        c.order = order;
        c
    }

    fn at(&self, i: usize, k: usize) -> f64 {
        self.pos[k * self.n + i] as f64
    }

    fn cell_of(&self, i: usize) -> [i64; 3] {
        let mut c = [0i64; 3];
        for (k, ck) in c.iter_mut().enumerate().take(self.geo.dim) {
            let x = ((self.at(i, k) - self.geo.lo[k]) / self.side[k]).floor() as i64;
            *ck = if self.geo.wrap {
                x.rem_euclid(self.dims[k] as i64)
            } else {
                x.clamp(0, self.dims[k] as i64 - 1)
            };
        }
        c
    }

    fn index(&self, c: [i64; 3]) -> usize {
        (0..self.geo.dim)
            .rev()
            .fold(0, |acc, k| acc * self.dims[k] + c[k] as usize)
    }

    /// A plain loop, inlined: it runs for every candidate pair.
    #[inline]
    fn dist2(&self, i: usize, j: usize) -> f64 {
        let mut s = 0.0;
        for k in 0..self.geo.dim {
            s += self.geo.delta(self.at(j, k) - self.at(i, k), k).powi(2);
        }
        s
    }

    /// The `k` nearest other agents of `i` into `best`, nearest first, as (r², index); ties
    /// in distance go to the lower index.
    fn nearest(&self, i: usize, k: usize, best: &mut Vec<(f64, u32)>) {
        best.clear();
        let dim = self.geo.dim;
        let reach = (0..dim).map(|d| self.dims[d]).max().unwrap_or(1) as i64;
        // A ring must not meet itself around a periodic world; brute force where it would.
        let wrap_limit = (0..dim)
            .map(|d| (self.dims[d] as i64 - 1) / 2)
            .min()
            .unwrap_or(0);
        if self.n <= BRUTE_MAX {
            return self.brute(i, k, best);
        }
        let h_min = self.side[..dim]
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min);
        let home = self.cell_of(i);
        for ring in 0..=reach {
            if self.geo.wrap && ring > wrap_limit {
                return self.brute(i, k, best);
            }
            self.visit_ring(i, home, ring, k, best);
            let covered = ring as f64 * h_min;
            if best.len() == k && best[k - 1].0 <= covered * covered {
                return;
            }
        }
    }

    fn visit_ring(
        &self,
        i: usize,
        home: [i64; 3],
        ring: i64,
        k: usize,
        best: &mut Vec<(f64, u32)>,
    ) {
        let dim = self.geo.dim;
        let span = 2 * ring + 1;
        let count = span.pow(dim as u32);
        for t in 0..count {
            let mut off = [0i64; 3];
            let mut rest = t;
            for o in off.iter_mut().take(dim) {
                *o = rest % span - ring;
                rest /= span;
            }
            if off[..dim].iter().all(|o| o.abs() < ring) {
                continue; // inside: an earlier ring
            }
            let mut c = [0i64; 3];
            let mut inside = true;
            for d in 0..dim {
                let x = home[d] + off[d];
                c[d] = if self.geo.wrap {
                    x.rem_euclid(self.dims[d] as i64)
                } else {
                    inside &= (0..self.dims[d] as i64).contains(&x);
                    x
                };
            }
            if !inside {
                continue;
            }
            let cell = self.index(c);
            for &j in &self.order[self.start[cell] as usize..self.start[cell + 1] as usize] {
                if j as usize != i {
                    offer(best, k, (self.dist2(i, j as usize), j));
                }
            }
        }
    }

    fn brute(&self, i: usize, k: usize, best: &mut Vec<(f64, u32)>) {
        best.clear();
        for j in (0..self.n).filter(|&j| j != i) {
            offer(best, k, (self.dist2(i, j), j as u32));
        }
    }
}

/// Keeps the `k` smallest candidates, sorted. A linear search for the place (k is at most a
/// few dozen): `partition_point` was a call per candidate.
#[inline]
fn offer(best: &mut Vec<(f64, u32)>, k: usize, cand: (f64, u32)) {
    if best.len() == k && cand >= best[k - 1] {
        return;
    }
    let mut at = 0;
    while at < best.len() && best[at] < cand {
        at += 1;
    }
    best.insert(at, cand);
    best.truncate(k);
}
