//! Uniform neighbour grid: counting sort of agents into cells, wrap-aware neighbour cells.
//!
//! The grid only decides which pairs are *tested*; every pair within the radius is found, and
//! sums are order-free, so grid and brute force give the same bytes.

use super::{filled, AllocError, Params, State};

/// Most cells the grid may have, whatever the world and radius: a huge world with a tiny
/// radius gets coarser cells (more candidates per agent), never unbounded memory.
pub fn max_cells(n: usize) -> usize {
    (2 * n).clamp(64, 1 << 22)
}

pub struct Grid {
    pub dims: [usize; 3],
    pub inv_cell: [f32; 3],
    pub ncells: usize,
    /// `cell_start[c]..cell_start[c+1]` are the sorted slots of cell c.
    pub cell_start: Vec<u32>,
    /// Cell of each agent (agent order).
    pub cell_of: Vec<u32>,
    /// Agent at each sorted slot.
    pub order: Vec<u32>,
    /// Cell of each sorted slot (read in order by the step, where `cell_of[order[t]]` would
    /// be a dependent, scattered load).
    pub scell: Vec<u32>,
    /// Positions and velocities (or, for Vicsek, unit velocities) in sorted order.
    pub spos: Vec<f32>,
    pub svel: Vec<f32>,
    /// `to_fix(svel)`: what neighbour sums add, converted once per agent instead of per pair.
    pub svfix: Vec<i64>,
}

impl Grid {
    pub fn new(p: &Params, n: usize) -> Result<Grid, AllocError> {
        let dim = p.dim as usize;
        // Topological neighbours are found ring by ring whatever the cells' size (src/sim/
        // topo.rs), and only separation is metric: cells of r_sep keep a dense flock's first
        // rings to a few dozen candidates, where cells of r_coh held hundreds.
        let r = if p.topo_k > 0 {
            p.r_sep2.sqrt()
        } else {
            p.radius()
        };
        let mut dims = [1usize; 3];
        for k in 0..dim {
            // A hair over the radius so that rounding in `p * inv_cell` can never put two
            // agents closer than r two cells apart.
            let c = if r > 0.0 {
                (p.world[k] as f64 / (r as f64 * 1.0001)).floor()
            } else {
                1.0
            };
            dims[k] = c.clamp(1.0, (1u64 << 22) as f64) as usize;
        }
        let cap = max_cells(n);
        // In f64: three axes of 2^22 cells would overflow usize.
        let total = |d: &[usize; 3]| d.iter().map(|&x| x as f64).product::<f64>();
        while total(&dims) > cap as f64 {
            let f = (cap as f64 / total(&dims)).powf(1.0 / dim as f64);
            for d in dims.iter_mut().take(dim) {
                *d = ((*d as f64 * f).floor() as usize).max(1);
            }
            if dims[..dim].iter().all(|&d| d == 1) {
                break;
            }
        }
        let mut inv_cell = [0f32; 3];
        for k in 0..dim {
            inv_cell[k] = dims[k] as f32 / p.world[k];
        }
        let ncells: usize = dims.iter().product();
        let what = || "the neighbour grid".to_string();
        Ok(Grid {
            dims,
            inv_cell,
            ncells,
            cell_start: filled(ncells + 1, 0u32, what)?,
            cell_of: filled(n, 0u32, what)?,
            order: filled(n, 0u32, what)?,
            scell: filled(n, 0u32, what)?,
            spos: filled(dim * n, 0f32, what)?,
            svel: filled(dim * n, 0f32, what)?,
            svfix: filled(dim * n, 0i64, what)?,
        })
    }

    /// Cell coordinate along axis k (clamped: open worlds put far agents in edge cells, which
    /// keeps neighbours within one cell of each other).
    #[inline(always)]
    pub fn cell_coord(&self, x: f32, k: usize) -> usize {
        let c = (x * self.inv_cell[k]) as i64; // truncation; NaN → 0
        c.clamp(0, self.dims[k] as i64 - 1) as usize
    }

    #[inline(always)]
    pub fn cell_index(&self, state: &State, i: usize) -> u32 {
        let n = state.n;
        let mut c = 0usize;
        for k in (0..state.dim).rev() {
            c = c * self.dims[k] + self.cell_coord(state.pos[k * n + i], k);
        }
        c as u32
    }

    /// Calls `f` on every cell that can hold an agent less than `r` from the point `x` (its
    /// first `dim` coordinates): along each axis the cells within ⌈r / cell⌉ of the point's,
    /// two more for rounding (clamping an open world's far agents into the edge cells only
    /// brings them closer). See [`Grid::each_cell_around`].
    pub fn each_cell_within(
        &self,
        dim: usize,
        wrap: bool,
        x: &[f32],
        r: f32,
        f: impl FnMut(usize),
    ) {
        let cc = crate::sim::math::array(|k| if k < dim { self.cell_coord(x[k], k) } else { 0 });
        let reach = crate::sim::math::array(|k| (r * self.inv_cell[k]) as i64 + 2);
        self.each_cell_around(dim, wrap, cc, reach, f);
    }

    /// Calls `f` on every cell within `reach[k]` cells of the cell at coordinates `cc` along
    /// each axis `k < dim`: around the world where it wraps (`wrap`), clipped to it where it
    /// does not, the whole axis when the reach spans it; z, then y, then x.
    pub fn each_cell_around(
        &self,
        dim: usize,
        wrap: bool,
        cc: [usize; 3],
        reach: [i64; 3],
        mut f: impl FnMut(usize),
    ) {
        let mut axes = [(0i64, 0i64); 3];
        for (k, ax) in axes.iter_mut().enumerate() {
            let (d, c) = (self.dims[k] as i64, cc[k] as i64);
            *ax = if k >= dim {
                (0, 0)
            } else if 2 * reach[k] + 1 >= d {
                (0, d - 1)
            } else if wrap {
                (c - reach[k], c + reach[k])
            } else {
                ((c - reach[k]).max(0), (c + reach[k]).min(d - 1))
            };
        }
        let at = |x: i64, k: usize| x.rem_euclid(self.dims[k] as i64) as usize;
        for z in axes[2].0..=axes[2].1 {
            for y in axes[1].0..=axes[1].1 {
                let row = (at(z, 2) * self.dims[1] + at(y, 1)) * self.dims[0];
                for x in axes[0].0..=axes[0].1 {
                    f(row + at(x, 0));
                }
            }
        }
    }

    /// Cell coordinates of a flat index.
    #[inline(always)]
    pub fn coords(&self, mut c: usize) -> [usize; 3] {
        let mut out = [0; 3];
        for k in 0..3 {
            out[k] = c % self.dims[k];
            c /= self.dims[k];
        }
        out
    }

    /// The distinct cells next to (and including) cell `c`, as slot ranges; returns how many,
    /// and whether offsets to them may cross the wrap seam (if not, every candidate is less
    /// than two cells — at most a fifth of the world — away, so minimum-image correction would
    /// change nothing and can be skipped: same bytes, less work).
    #[inline]
    pub fn neighbour_ranges(
        &self,
        c: usize,
        wrap: bool,
        dim: usize,
        out: &mut [(u32, u32); 27],
    ) -> (usize, bool) {
        // Fast path: a 2D cell away from every edge: three consecutive cells in three rows.
        let (dx, dy) = (self.dims[0], self.dims[1]);
        if dim == 2 {
            let (x, y) = (c % dx, c / dx);
            if x >= 1 && x + 1 < dx && y >= 1 && y + 1 < dy {
                let mut len = 0;
                for row in [c - dx, c, c + dx] {
                    let (lo, hi) = (self.cell_start[row - 1], self.cell_start[row + 2]);
                    if lo < hi {
                        out[len] = (lo, hi);
                        len += 1;
                    }
                }
                return (len, wrap && (dx < 5 || dy < 5));
            }
        }
        // The same in 3D: nine rows of three cells. 3D cells hold about one agent at the
        // bench densities, so this runs for nearly every agent (the general path below was
        // 15% of a 3D step).
        if dim == 3 {
            let dz = self.dims[2];
            let (x, yz) = (c % dx, c / dx);
            let (y, z) = (yz % dy, yz / dy);
            if x >= 1 && x + 1 < dx && y >= 1 && y + 1 < dy && z >= 1 && z + 1 < dz {
                let plane = dx * dy;
                let mut len = 0;
                for mid in [c - plane, c, c + plane] {
                    for row in [mid - dx, mid, mid + dx] {
                        let (lo, hi) = (self.cell_start[row - 1], self.cell_start[row + 2]);
                        if lo < hi {
                            out[len] = (lo, hi);
                            len += 1;
                        }
                    }
                }
                return (len, wrap && (dx < 5 || dy < 5 || dz < 5));
            }
        }
        let cc = self.coords(c);
        let mut offs = [[0i64; 3]; 3];
        let mut counts = [1usize; 3];
        for k in 0..3 {
            let d = self.dims[k] as i64;
            let x = cc[k] as i64;
            let mut m = 0;
            if k >= dim || d == 1 {
                offs[k][0] = x;
                m = 1;
            } else if wrap {
                // d == 2 has only two distinct neighbours; d >= 3 three.
                let cand: &[i64] = if d == 2 { &[0, 1] } else { &[-1, 0, 1] };
                for &o in cand {
                    offs[k][m] = (x + o).rem_euclid(d);
                    m += 1;
                }
            } else {
                for o in -1..=1 {
                    let y = x + o;
                    if (0..d).contains(&y) {
                        offs[k][m] = y;
                        m += 1;
                    }
                }
            }
            counts[k] = m;
        }
        // Cells (x-1, y, z) .. (x+1, y, z) are consecutive in sorted order: merge runs of
        // consecutive x into one slot range (3 ranges a cell in 2D instead of 9).
        let mut xs = offs[0];
        xs[..counts[0]].sort_unstable();
        let mut len = 0;
        for &z in &offs[2][..counts[2]] {
            for &y in &offs[1][..counts[1]] {
                let row = (z as usize * self.dims[1] + y as usize) * self.dims[0];
                let mut a = 0;
                while a < counts[0] {
                    let mut b = a;
                    while b + 1 < counts[0] && xs[b + 1] == xs[b] + 1 {
                        b += 1;
                    }
                    let lo = self.cell_start[row + xs[a] as usize];
                    let hi = self.cell_start[row + xs[b] as usize + 1];
                    if lo < hi {
                        out[len] = (lo, hi);
                        len += 1;
                    }
                    a = b + 1;
                }
            }
        }
        (len, wrap)
    }
}
