//! The obstacles' masks ([`Near`]): which shapes may matter to a boid, per cell of a coarse
//! grid over the world (brute force, topological neighbours) and per cell of the neighbour
//! grid (the grid step), so that a boid far from every shape tests none.

use super::{Obstacles, Shape};
use crate::sim::grid::Grid;
use crate::sim::{filled, AllocError};

/// The shapes that may matter to a boid at some point, as masks over the shapes (bit i:
/// shape i; all ones: every shape): `see`, those it may see this step ([`Shape::near`], which
/// the avoidance tests); `touch`, those it may be inside, or have crossed, after a move of one
/// step or less ([`Shape::touches`], which settling tests). A shape whose bit is clear fails
/// that test everywhere the mask holds for. The masks only choose which exact tests run, so
/// whichever cells a path takes them from, every path gives the same bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Near {
    pub see: u64,
    pub touch: u64,
}

impl Near {
    /// Every shape.
    pub const ALL: Near = Near {
        see: u64::MAX,
        touch: u64::MAX,
    };
}

/// Most cells of the coarse grid along an axis.
const MAX_CELLS: usize = 128;

impl Obstacles {
    /// The coarse grid (see `cells`): cells about half the smallest look-ahead reach wide.
    pub(super) fn with_cells(mut self, dim: usize, world: [f32; 3]) -> Obstacles {
        if self.shapes.len() > 64 || self.shapes.is_empty() {
            return self;
        }
        let reach = self
            .shapes
            .iter()
            .map(|s| s.near2.sqrt())
            .fold(f32::INFINITY, f32::min);
        let mut total = 1usize;
        for k in 0..dim {
            let n = ((world[k] / (reach * 0.5)).ceil() as usize).clamp(1, MAX_CELLS);
            self.dims[k] = n;
            self.inv_cell[k] = n as f32 / world[k];
            total *= n;
        }
        let mut cells = vec![Near::default(); total];
        // A boid outside the world tests every shape (`near_at`): the cells end at its edges.
        self.fill(dim, self.dims, world, false, &mut cells);
        self.cells = cells;
        self
    }

    /// The masks ([`Near`]) of every cell of the neighbour grid `g` over `world`, in its cell
    /// order: a boid is in the cell its position truncates to, clamped, so the edge cells
    /// reach out to infinity. Empty without obstacles; every shape in every cell with more
    /// than 64.
    pub fn grid_cells(
        &self,
        g: &Grid,
        dim: usize,
        world: [f32; 3],
    ) -> Result<Vec<Near>, AllocError> {
        if self.shapes.is_empty() {
            return Ok(Vec::new());
        }
        let what = || "the obstacles' masks of the neighbour grid".to_string();
        if self.cells.is_empty() {
            return filled(g.ncells, Near::ALL, what);
        }
        let mut out = filled(g.ncells, Near::default(), what)?;
        self.fill(dim, g.dims, world, true, &mut out);
        Ok(out)
    }

    /// [`Obstacles::grid_cells`] into `out` (its memory kept: the timeline moves obstacles
    /// between steps).
    pub fn refill_cells(&self, g: &Grid, dim: usize, world: [f32; 3], out: &mut Vec<Near>) {
        out.clear();
        if self.shapes.is_empty() {
            return;
        }
        if self.cells.is_empty() {
            out.resize(g.ncells, Near::ALL);
            return;
        }
        out.resize(g.ncells, Near::default());
        self.fill(dim, g.dims, world, true, out);
    }

    /// Sets the masks of `cells`, a grid of `dims` cells over `world` (first axis fastest),
    /// each shape's in the cells within its reach only. Each cell is taken as wide as float32
    /// rounding of a position's index could make it (`pos · inv_cell` is off by up to about
    /// 2⁻²³ of the axis's cell count), and 1% and one unit more; with `open_edges` the edge
    /// cells reach out to infinity, for a grid that clamps positions into them.
    fn fill(
        &self,
        dim: usize,
        dims: [usize; 3],
        world: [f32; 3],
        open_edges: bool,
        cells: &mut [Near],
    ) {
        let w: [f64; 3] = crate::sim::each::array(|k| world[k] as f64 / dims[k] as f64);
        let slack: [f64; 3] =
            crate::sim::each::array(|k| w[k] * (0.01 + dims[k] as f64 * 1e-6) + 1.0);
        let span = |k: usize, i: usize| {
            let lo = if open_edges && i == 0 {
                f64::NEG_INFINITY
            } else {
                i as f64 * w[k] - slack[k]
            };
            let hi = if open_edges && i + 1 == dims[k] {
                f64::INFINITY
            } else {
                (i + 1) as f64 * w[k] + slack[k]
            };
            (lo, hi)
        };
        for (b, s) in self.shapes.iter().enumerate() {
            let r = (s.see_r.max(s.move_r) as f64) * 1.01 + 1.0;
            // The cells along each axis whose span can come within r of the centre.
            let mut first = [0usize; 3];
            let mut last = [0usize; 3];
            for k in 0..dim {
                let c = s.centre[k] as f64;
                let top = (dims[k] - 1) as f64;
                let a = ((c - r - slack[k]) / w[k]).floor() - 1.0;
                let z = ((c + r + slack[k]) / w[k]).floor() + 1.0;
                first[k] = a.clamp(0.0, top) as usize;
                last[k] = z.clamp(0.0, top) as usize;
            }
            let (mut lo, mut hi) = ([0f64; 3], [0f64; 3]);
            for i2 in first[2]..=last[2] {
                (lo[2], hi[2]) = span(2, i2);
                for i1 in first[1]..=last[1] {
                    (lo[1], hi[1]) = span(1, i1);
                    for i0 in first[0]..=last[0] {
                        (lo[0], hi[0]) = span(0, i0);
                        let c = (i2 * dims[1] + i1) * dims[0] + i0;
                        s.mark(dim, &lo, &hi, 1 << b, &mut cells[c]);
                    }
                }
            }
        }
    }

    /// The masks ([`Near`]) for a boid at `pos`, from the coarse grid.
    #[inline(always)]
    pub fn near_at<const D: usize>(&self, pos: &[f32; D]) -> Near {
        if self.shapes.is_empty() {
            return Near::default();
        }
        if self.cells.is_empty() {
            return Near::ALL;
        }
        let (mut idx, mut stride) = (0usize, 1usize);
        for k in 0..D {
            let c = pos[k] * self.inv_cell[k];
            if !(c >= 0.0 && c < self.dims[k] as f32) {
                return Near::ALL;
            }
            idx += (c as usize).min(self.dims[k] - 1) * stride;
            stride *= self.dims[k];
        }
        self.cells[idx]
    }
}

impl Shape {
    /// Sets `bit` in `near`'s masks where a boid somewhere in the box `lo..hi` (its first
    /// `dim` axes) may see the shape, or be inside it after a move of one step or less.
    fn mark(&self, dim: usize, lo: &[f64; 3], hi: &[f64; 3], bit: u64, near: &mut Near) {
        let d2: f64 = (0..dim)
            .map(|k| {
                let x = self.centre[k] as f64;
                let q = x.clamp(lo[k], hi[k]);
                (x - q) * (x - q)
            })
            .sum();
        let within = |r: f32| {
            let r = r as f64 * 1.01 + 1.0;
            d2 < r * r
        };
        if within(self.see_r) {
            near.see |= bit;
        }
        if within(self.move_r) {
            near.touch |= bit;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::{self, Scene, Source};
    use crate::sim::Params;

    fn scene(text: &str) -> Scene {
        scene::parse(&Source {
            text,
            dir: std::path::Path::new("."),
            default_name: "masks",
        })
        .expect("test scene is valid")
    }

    /// A small deterministic generator (SplitMix64) of floats in [0, 1).
    struct Draw(u64);
    impl Draw {
        fn next(&mut self) -> f32 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            (crate::sim::math::mix64(self.0) >> 40) as f32 / (1u64 << 24) as f32
        }
    }

    /// Every point's masks, from the coarse grid and from the neighbour grid's cell it falls
    /// in, hold each shape it may see and each it may touch after a move of up to one step:
    /// points spread over the world and beyond it (an open world), and packed about each
    /// shape's mask radii, where a mask too tight would first leave one out.
    fn masks_hold_every_shape<const D: usize>(text: &str) {
        let s = scene(text);
        let n = s.agents as usize;
        let obs = Obstacles::from_scene(&s);
        assert!(!obs.cells.is_empty(), "a coarse grid");
        let p = Params::from_scene(&s, n);
        let g = Grid::new(&p, n).expect("grid");
        let table = obs.grid_cells(&g, D, s.world).expect("masks");
        assert_eq!(table.len(), g.ncells);
        let step = s.boids.as_ref().unwrap().v_max * s.dt;
        let mut draw = Draw(7);
        let mut points = Vec::new();
        for _ in 0..20_000 {
            points.push(crate::sim::each::array::<f32, D>(|k| {
                (draw.next() * 2.0 - 0.5) * s.world[k]
            }));
        }
        for sh in &obs.shapes {
            for r in [sh.see_r, sh.move_r, sh.touch2.sqrt()] {
                for _ in 0..4_000 {
                    let u: [f32; D] = crate::sim::each::array(|_| draw.next() * 2.0 - 1.0);
                    let l = u.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
                    let at = r * (0.98 + 0.04 * draw.next());
                    points.push(crate::sim::each::array(|k| sh.centre[k] + u[k] / l * at));
                }
            }
        }
        let mut checked = [0usize; 2];
        for x in &points {
            let mut c = 0usize;
            for k in (0..D).rev() {
                c = c * g.dims[k] + g.cell_coord(x[k], k);
            }
            let (fine, coarse) = (table[c], obs.near_at(x));
            // The masks of the point alone: the radii themselves, without a cell's width.
            let x64: [f64; 3] = crate::sim::each::array(|k| if k < D { x[k] as f64 } else { 0.0 });
            for (b, sh) in obs.shapes.iter().enumerate() {
                let bit = 1u64 << b;
                let mut own = Near::default();
                sh.mark(D, &x64, &x64, bit, &mut own);
                if sh.near::<D>(x) {
                    checked[0] += 1;
                    assert!(fine.see & bit != 0, "shape {b} in sight of {x:?}, cell {c}");
                    assert!(
                        coarse.see & bit != 0,
                        "shape {b} in sight of {x:?} (coarse)"
                    );
                    assert!(own.see & bit != 0, "shape {b} in sight of {x:?} (point)");
                }
                // Moves of one step along each axis and diagonal.
                for m in 0..3usize.pow(D as u32) {
                    let mut d = [0f32; D];
                    let mut q = m;
                    for dk in d.iter_mut() {
                        *dk = (q % 3) as f32 - 1.0;
                        q /= 3;
                    }
                    let l = d.iter().map(|x| x * x).sum::<f32>().sqrt().max(1.0);
                    let y: [f32; D] = crate::sim::each::array(|k| x[k] + d[k] / l * step);
                    if sh.touches::<D>(&y) {
                        checked[1] += 1;
                        assert!(fine.touch & bit != 0, "shape {b} within a step of {x:?}");
                        assert!(coarse.touch & bit != 0, "shape {b} within a step (coarse)");
                        assert!(own.touch & bit != 0, "shape {b} within a step (point)");
                    }
                }
            }
        }
        assert!(checked[0] > 10_000 && checked[1] > 10_000, "{checked:?}");
    }

    #[test]
    fn the_masks_hold_every_shape_a_boid_may_meet() {
        masks_hold_every_shape::<2>(
            r#"{"model": "boids", "agents": 4000, "seed": 1,
               "world": {"size": [1200, 700], "boundary": "open"},
               "boids": {"look_ahead": 0.6, "clearance": 10},
               "obstacles": [{"circle": {"center": [300, 250], "radius": 70}},
                             {"circle": {"center": [-40, 690], "radius": 30}},
                             {"circle": {"center": [-400, 300], "radius": 30}},
                             {"box": {"min": [1500, 900], "max": [1560, 960]}},
                             {"box": {"min": [700, 300], "max": [800, 480]}},
                             {"box": {"min": [1150, -20], "max": [1250, 60]}},
                             {"segment": {"from": [100, 50], "to": [200, 400], "radius": 5}},
                             {"segment": {"from": [500, 650], "to": [1100, 640], "radius": 12}}]}"#,
        );
        masks_hold_every_shape::<3>(
            r#"{"model": "boids", "dim": 3, "agents": 3000, "seed": 1,
               "world": {"size": [300, 240, 200], "boundary": "reflect"},
               "boids": {"look_ahead": 0, "clearance": 2},
               "obstacles": [{"sphere": {"center": [150, 120, 100], "radius": 40}},
                             {"box": {"min": [0, 0, 0], "max": [60, 240, 30]}},
                             {"segment": {"from": [200, 20, 20], "to": [280, 220, 180], "radius": 6}}]}"#,
        );
    }
}
