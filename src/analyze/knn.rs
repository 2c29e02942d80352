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

/// Neighbours per agent kept for the border's depth ([`depths`]).
const LINKS: usize = 6;

/// One thread's sums over its agents.
struct Sums {
    /// Per k: Σ x and Σ x² of x = (û·V̂)² − 1/d, and Σ û ûᵀ (xx, yy, zz, xy, xz, yz).
    s1: Vec<f64>,
    s2: Vec<f64>,
    proj: Vec<[f64; 6]>,
    /// Agents measured (away from the walls).
    count: usize,
    /// Per agent, in order: on the border, nearest-neighbour distance, density, and its
    /// [`LINKS`] nearest neighbours (`u32::MAX` past the last).
    border: Vec<bool>,
    r1: Vec<f64>,
    rho: Vec<f64>,
    links: Vec<u32>,
}

impl Sums {
    fn new(k_max: usize) -> Sums {
        Sums {
            s1: vec![0.0; k_max],
            s2: vec![0.0; k_max],
            proj: vec![[0.0; 6]; k_max],
            count: 0,
            border: Vec::new(),
            r1: Vec::new(),
            rho: Vec::new(),
            links: Vec::new(),
        }
    }

    fn add(&mut self, o: Sums) {
        for k in 0..self.s1.len() {
            self.s1[k] += o.s1[k];
            self.s2[k] += o.s2[k];
            for (a, b) in self.proj[k].iter_mut().zip(o.proj[k]) {
                *a += b;
            }
        }
        self.count += o.count;
        self.border.extend(o.border);
        self.r1.extend(o.r1);
        self.rho.extend(o.rho);
        self.links.extend(o.links);
    }
}

/// Each agent's depth in the flock: 0 on the border, else one more than its least deep of
/// [`LINKS`] nearest neighbours (hops through the neighbour graph to the border; `u32::MAX`
/// where no path reaches it). A breadth-first search out of the border along the links taken
/// backwards: O(agents · LINKS).
fn depths(border: &[bool], links: &[u32]) -> Vec<u32> {
    let n = border.len();
    // Who links to each agent: `from[start[j]..start[j + 1]]`.
    let mut start = vec![0u32; n + 1];
    for &j in links.iter().filter(|&&j| j != u32::MAX) {
        start[j as usize + 1] += 1;
    }
    for j in 0..n {
        start[j + 1] += start[j];
    }
    let mut fill = start.clone();
    let mut from = vec![0u32; start[n] as usize];
    for (i, row) in links.chunks_exact(LINKS).enumerate() {
        for &j in row.iter().filter(|&&j| j != u32::MAX) {
            from[fill[j as usize] as usize] = i as u32;
            fill[j as usize] += 1;
        }
    }
    let mut depth: Vec<u32> = border
        .iter()
        .map(|&b| if b { 0 } else { u32::MAX })
        .collect();
    let mut queue: std::collections::VecDeque<u32> =
        (0..n as u32).filter(|&i| border[i as usize]).collect();
    while let Some(j) = queue.pop_front() {
        let d = depth[j as usize] + 1;
        for &i in &from[start[j as usize] as usize..start[j as usize + 1] as usize] {
            if depth[i as usize] == u32::MAX {
                depth[i as usize] = d;
                queue.push_back(i);
            }
        }
    }
    depth
}

/// Fills, for one frame, the neighbour measures of `s`: `gamma`, `gamma_se`, `measured` and
/// `projection` where the frame has a flight direction `v`, and the nearest-neighbour
/// distances and border of `s.shape` always.
pub(super) fn anisotropy(
    pos: &[f32],
    n: usize,
    geo: &Geometry,
    v: Option<[f64; 3]>,
    k_max: usize,
    s: &mut FrameStats,
) {
    let cells = Cells::new(pos, n, geo);
    let threads = super::threads();
    let chunk = n.div_ceil(threads).max(1);
    let parts: Vec<Sums> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..n)
            .step_by(chunk)
            .map(|start| {
                let cells = &cells;
                sc.spawn(move || {
                    let mut sum = Sums::new(k_max);
                    let mut best = Vec::with_capacity(k_max + 1);
                    let mut units = Vec::with_capacity(k_max + 1);
                    for i in start..(start + chunk).min(n) {
                        cells.nearest(i, k_max, &mut best);
                        cells.units(i, &best, &mut units);
                        structure(&best, &units, cells.geo.dim, &mut sum);
                        if let Some(v) = v {
                            measure(cells, i, &best, &units, v, &mut sum);
                        }
                    }
                    sum
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all = Sums::new(k_max);
    parts.into_iter().for_each(|p| all.add(p));
    shape_of(&all, &mut s.shape);
    let Some(v) = v else {
        s.gamma = vec![f64::NAN; k_max];
        s.gamma_se = vec![f64::NAN; k_max];
        s.projection = vec![f64::NAN; k_max];
        return;
    };
    let (s1, s2, count) = (&all.s1, &all.s2, all.count);
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
    s.projection = (0..k_max)
        .map(|k| {
            if k < n - 1 {
                super::shape::projection(&all.proj[k], count, v, geo.dim)
            } else {
                f64::NAN
            }
        })
        .collect();
}

/// The border's and the centre's nearest-neighbour distances and densities from each agent's
/// (in order, so the same whatever the threads): the centre is the agents at least half the
/// flock's greatest [`depths`] in.
fn shape_of(all: &Sums, shape: &mut super::shape::FrameShape) {
    let n = all.r1.len();
    let depth = depths(&all.border, &all.links);
    let deepest = depth.iter().filter(|&&d| d != u32::MAX).max().copied();
    let inner = deepest.map_or(1, |d| d.div_ceil(2).max(1));
    let mut sums = [(0usize, 0.0f64, 0.0f64); 2];
    shape.nn_min = f64::INFINITY;
    let mut r1_sum = 0.0;
    for (((&r1, &rho), &border), &depth) in all.r1.iter().zip(&all.rho).zip(&all.border).zip(&depth)
    {
        shape.nn_min = shape.nn_min.min(r1);
        r1_sum += r1;
        let side = if border {
            0
        } else if depth >= inner && depth != u32::MAX {
            1
        } else {
            continue;
        };
        sums[side].0 += 1;
        sums[side].1 += r1;
        sums[side].2 += 1.0 / rho;
    }
    shape.nn_mean = r1_sum / n.max(1) as f64;
    shape.border = sums[0].0;
    shape.centre = sums[1].0;
    let mean = |(c, x): (usize, f64)| if c > 0 { x / c as f64 } else { f64::NAN };
    shape.r1_border = mean((sums[0].0, sums[0].1));
    shape.r1_centre = mean((sums[1].0, sums[1].1));
    // Agents over the volume they take: the harmonic mean of their densities.
    shape.rho_border = 1.0 / mean((sums[0].0, sums[0].2));
    shape.rho_centre = 1.0 / mean((sums[1].0, sums[1].2));
}

/// Adds agent `i`'s nearest-neighbour distance, density, border flag and nearest neighbours
/// to the sums: on the border when the mean of the unit vectors to its neighbours is longer
/// than [`super::shape::BORDER_RESULTANT`] (they lie mostly to one side). Its density is
/// [`super::shape::density`]'s from its k neighbours.
fn structure(best: &[(f64, u32)], units: &[[f64; 3]], dim: usize, sum: &mut Sums) {
    let (Some(&(r2, _)), Some(&(rk2, _))) = (best.first(), best.last()) else {
        sum.border.push(true);
        sum.r1.push(f64::NAN);
        sum.rho.push(f64::NAN);
        sum.links.extend([u32::MAX; LINKS]);
        return;
    };
    let mut resultant = [0.0f64; 3];
    let mut counted = 0;
    for (&(r2, _), u) in best.iter().zip(units) {
        if r2 > 0.0 {
            for d in 0..dim {
                resultant[d] += u[d];
            }
            counted += 1;
        }
    }
    let norm = resultant.iter().map(|x| x * x).sum::<f64>().sqrt();
    let len = norm / counted.max(1) as f64;
    // No neighbour on the far side: each unit vector's component along the resultant's
    // direction above −BORDER_BEYOND (a neighbour on the agent itself has none).
    let one_sided = norm > 0.0
        && units.iter().all(|u| {
            let along: f64 = (0..dim).map(|d| u[d] * resultant[d]).sum();
            along / norm >= -super::shape::BORDER_BEYOND
        });
    sum.border
        .push(one_sided && len > super::shape::BORDER_RESULTANT);
    sum.r1.push(r2.sqrt());
    sum.rho
        .push(super::shape::density(best.len(), rk2.sqrt(), len, dim));
    sum.links
        .extend((0..LINKS).map(|k| best.get(k).map_or(u32::MAX, |b| b.1)));
}

/// Adds agent `i`'s (û·V̂)² − 1/d and û ûᵀ for each k to the sums, unless a wall is nearer
/// than its farthest neighbour or a neighbour sits on it.
fn measure(
    c: &Cells,
    i: usize,
    best: &[(f64, u32)],
    units: &[[f64; 3]],
    v: [f64; 3],
    sum: &mut Sums,
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
    for (k, u) in units.iter().enumerate() {
        let cos: f64 = (0..geo.dim).map(|d| u[d] * v[d]).sum();
        let x = cos * cos - third;
        sum.s1[k] += x;
        sum.s2[k] += x * x;
        let p = &mut sum.proj[k];
        p[0] += u[0] * u[0];
        p[1] += u[1] * u[1];
        p[2] += u[2] * u[2];
        p[3] += u[0] * u[1];
        p[4] += u[0] * u[2];
        p[5] += u[1] * u[2];
    }
    sum.count += 1;
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

    /// The unit vectors from agent `i` to each of `best` (minimum image; zero for a neighbour
    /// on the agent itself) into `out`.
    fn units(&self, i: usize, best: &[(f64, u32)], out: &mut Vec<[f64; 3]>) {
        out.clear();
        out.extend(best.iter().map(|&(r2, j)| {
            let r = r2.sqrt();
            let mut u = [0.0f64; 3];
            if r2 > 0.0 {
                for (d, x) in u.iter_mut().enumerate().take(self.geo.dim) {
                    *x = self.geo.delta(self.at(j as usize, d) - self.at(i, d), d) / r;
                }
            }
            u
        }));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The search gives each agent one more than its least deep link, by its definition
    /// (sweeps until nothing changes), on random graphs with a few border agents.
    #[test]
    fn depths_are_hops_to_the_border() {
        let mut state = 12345u64;
        let mut next = |m: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % m
        };
        for n in [1usize, 2, 50, 400] {
            let border: Vec<bool> = (0..n).map(|_| next(20) == 0).collect();
            let links: Vec<u32> = (0..n * LINKS)
                .map(|_| {
                    if next(10) == 0 {
                        u32::MAX
                    } else {
                        next(n as u64) as u32
                    }
                })
                .collect();
            let mut want: Vec<u32> = border
                .iter()
                .map(|&b| if b { 0 } else { u32::MAX })
                .collect();
            loop {
                let mut changed = false;
                for i in 0..n {
                    let near = links[i * LINKS..(i + 1) * LINKS]
                        .iter()
                        .filter(|&&j| j != u32::MAX)
                        .map(|&j| want[j as usize])
                        .min()
                        .unwrap_or(u32::MAX)
                        .saturating_add(1);
                    if near < want[i] {
                        want[i] = near;
                        changed = true;
                    }
                }
                if !changed {
                    break;
                }
            }
            assert_eq!(depths(&border, &links), want, "n = {n}");
        }
    }
}
