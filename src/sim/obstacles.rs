//! Obstacles in the step: look-ahead avoidance (a steering term) and the guarantee that no boid
//! ends a step inside one (projection onto the surface, else the step's move undone).
//!
//! Determinism: float32, IEEE-exact operations only (+ − × ÷ sqrt, comparisons) in a fixed
//! order, obstacles visited in the scene's order; each boid's result depends on its own state
//! and the obstacles only, so thread count, search and SIMD path cannot change it.
//!
//! Obstacles do not wrap: in a wrapping world a shape across the seam is cut by it.
//!
//! - **Avoidance.** A boid at p with velocity v looks along its path p + v·t, t ∈ [0, T]
//!   (T = `look_ahead`). For each shape, the point of that path nearest the shape (exact for
//!   circles, spheres and capsules: segment–segment closest points; for boxes, the middle of
//!   the chord through the box grown by the clearance c) at fraction s ∈ [0, 1] of the path,
//!   at signed distance δ from the surface: `a += w_avoid · clamp((c − δ)/c, 0, 1) · (1 − s) · n`,
//!   n sideways for round shapes ([`Shape::sideways`]: from the core point nearest the boid
//!   towards it, less its part along the path), the outward normal there for boxes. A path that
//!   hits the shape right ahead steers with the full weight; one that misses by c or more, or
//!   meets the shape only at the end of the look-ahead, not at all. The term is added before
//!   the `max_force` clamp.
//! - **Never inside.** After the move (and the world's boundary), a boid inside a shape
//!   (strictly: on the surface is outside) is put back on its surface along the normal, and
//!   the part of its velocity into the shape removed (it slides). If it is then still inside
//!   one (overlapping shapes), outside the world, or its move passed through a shape's core
//!   (a fast boid and a thin wall), the move is undone: it stays where it was, which was
//!   outside every shape (the initial state is, src/sim/init.rs).

use super::grid::Grid;
use super::{filled, AllocError, Params};
use crate::scene::{Obstacle, Scene};

/// One shape, prepared for the step.
#[derive(Clone, Copy, Debug)]
struct Shape {
    /// A capsule (circles and spheres are capsules of length 0) or a box.
    round: bool,
    /// Round: the core segment from `a` to `a + e`, `e2 = e·e` (0 for a circle), radius `r`.
    /// Box: `a` = min, `e` = max.
    a: [f32; 3],
    e: [f32; 3],
    e2: f32,
    r: f32,
    /// Bounding sphere centre, and the squared distances from it beyond which a boid can
    /// neither see the shape this step (`near2`), nor be inside it after its move (`touch2`).
    centre: [f32; 3],
    near2: f32,
    touch2: f32,
    /// Radii about `centre` for the cells' masks ([`Near`]): beyond `see_r` a boid cannot see
    /// the shape this step; beyond `move_r`, moved by one step (v_max·dt) or less, it can be
    /// neither inside it nor have crossed it.
    see_r: f32,
    move_r: f32,
    /// A move shorter than this (squared) cannot pass through the shape's core
    /// ([`Shape::crossed`]) from outside to outside.
    cross2: f32,
}

/// The obstacles of a run and the avoidance settings, ready for the step.
#[derive(Clone, Debug, Default)]
pub struct Obstacles {
    shapes: Vec<Shape>,
    w_avoid: f32,
    look_ahead: f32,
    clearance: f32,
    inv_clearance: f32,
    /// A coarse grid over the world: per cell, the shapes that may matter to a boid in it
    /// ([`Near`]). Only with at most 64 shapes; a boid outside the world, or with more shapes,
    /// tests every shape. The neighbour grid's cells get masks of their own
    /// ([`Obstacles::grid_cells`]).
    cells: Vec<Near>,
    dims: [usize; 3],
    inv_cell: [f32; 3],
}

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

/// A boid put back on a round surface lands this much further out than the radius, so that
/// rounding cannot leave it inside (1 + 2⁻¹²).
const OUT: f32 = 1.000_244_1;

impl Obstacles {
    /// None: the step is exactly what it was before obstacles existed.
    pub fn none() -> Obstacles {
        Obstacles::default()
    }

    pub fn from_scene(s: &Scene) -> Obstacles {
        let Some(b) = &s.boids else {
            return Obstacles::none();
        };
        if s.obstacles.is_empty() {
            return Obstacles::none();
        }
        let look_ahead = b.look_ahead.unwrap_or(1.0);
        let clearance = b.clearance.unwrap_or(b.r_sep);
        // What a boid can see in a step (its look-ahead, its clearance, its move), and cover:
        // at the fastest speed of any species.
        let v_max = s
            .species
            .iter()
            .map(|sp| sp.boids.v_max)
            .fold(b.v_max, f32::max);
        let reach = v_max * (look_ahead + s.dt) + clearance;
        let step = v_max * s.dt;
        let v3 = |v: &[f32]| [v[0], v[1], if v.len() > 2 { v[2] } else { 0.0 }];
        let shapes = s
            .obstacles
            .iter()
            .map(|o| {
                let (round, a, e, r) = match o {
                    Obstacle::Circle { center, radius } => (true, v3(center), [0.0; 3], *radius),
                    Obstacle::Segment { from, to, radius } => {
                        let (f, t) = (v3(from), v3(to));
                        (true, f, [t[0] - f[0], t[1] - f[1], t[2] - f[2]], *radius)
                    }
                    Obstacle::Box { min, max } => (false, v3(min), v3(max), 0.0),
                };
                let (centre, half) = if round {
                    let c = [a[0] + e[0] * 0.5, a[1] + e[1] * 0.5, a[2] + e[2] * 0.5];
                    (c, len3(e) * 0.5 + r)
                } else {
                    let c = [
                        (a[0] + e[0]) * 0.5,
                        (a[1] + e[1]) * 0.5,
                        (a[2] + e[2]) * 0.5,
                    ];
                    (c, len3([e[0] - a[0], e[1] - a[1], e[2] - a[2]]) * 0.5)
                };
                // 1% and one unit of slack over the bound: rounding cannot make it too tight.
                let near = (half + reach) * 1.01 + 1.0;
                let touch = (half + step) * 1.01 + 1.0;
                let move_r = (touch + step) * 1.01 + 1.0;
                // Through the core from outside: a chord of the r/2 core of a capsule is at
                // least √3·r long; through the inner half of a box, a quarter of its thinnest
                // side. Half of that, squared, to keep clear of rounding.
                let cross = if round {
                    r * r * 0.75
                } else {
                    let thin = (0..s.dim)
                        .map(|k| e[k] - a[k])
                        .fold(f32::INFINITY, f32::min);
                    thin * thin * (0.125 * 0.125)
                };
                Shape {
                    round,
                    a,
                    e,
                    e2: e[0] * e[0] + e[1] * e[1] + e[2] * e[2],
                    r,
                    centre,
                    near2: near * near,
                    touch2: touch * touch,
                    see_r: near,
                    move_r,
                    cross2: cross,
                }
            })
            .collect();
        Obstacles {
            shapes,
            w_avoid: b.w_avoid.unwrap_or(b.max_force),
            look_ahead,
            clearance,
            inv_clearance: 1.0 / clearance,
            cells: Vec::new(),
            dims: [1; 3],
            inv_cell: [0.0; 3],
        }
        .with_cells(s.dim, s.world)
    }

    /// The coarse grid (see `cells`): cells about half the smallest look-ahead reach wide.
    fn with_cells(mut self, dim: usize, world: [f32; 3]) -> Obstacles {
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
        for (c, near) in cells.iter_mut().enumerate() {
            let mut idx = c;
            let mut lo = [0f64; 3];
            let mut hi = [0f64; 3];
            for k in 0..dim {
                let i = idx % self.dims[k];
                idx /= self.dims[k];
                let w = world[k] as f64 / self.dims[k] as f64;
                // A cell as wide as rounding of the index could make it, and a little more.
                lo[k] = i as f64 * w - w * 0.01 - 1.0;
                hi[k] = (i + 1) as f64 * w + w * 0.01 + 1.0;
            }
            for (b, s) in self.shapes.iter().enumerate() {
                s.mark(dim, &lo, &hi, 1 << b, near);
            }
        }
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
        let dims = g.dims;
        let w: [f64; 3] = std::array::from_fn(|k| world[k] as f64 / dims[k] as f64);
        // The index is `pos · inv_cell` in float32: off by up to about 2⁻²³ of the axis's cell
        // count (a millionth here), on top of the 1% and one unit the coarse grid allows.
        let slack: [f64; 3] = std::array::from_fn(|k| w[k] * (0.01 + dims[k] as f64 * 1e-6) + 1.0);
        let span = |k: usize, i: usize| {
            let lo = if i == 0 {
                f64::NEG_INFINITY
            } else {
                i as f64 * w[k] - slack[k]
            };
            let hi = if i + 1 == dims[k] {
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
                        s.mark(dim, &lo, &hi, 1 << b, &mut out[c]);
                    }
                }
            }
        }
        Ok(out)
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

    /// Calls `f` on each shape a boid at `x` may be inside, in the scene's order.
    #[inline(always)]
    fn each_touching<const D: usize>(&self, x: &[f32; D], f: impl FnMut(&Shape)) {
        self.each_of(self.near_at(x).touch, f);
    }

    /// Calls `f` on each shape of `bits` (every shape: all ones), in the scene's order.
    #[inline(always)]
    fn each_of(&self, bits: u64, mut f: impl FnMut(&Shape)) {
        if bits == u64::MAX {
            self.shapes.iter().for_each(f);
            return;
        }
        let mut m = bits;
        while m != 0 {
            let i = m.trailing_zeros() as usize;
            m &= m - 1;
            f(&self.shapes[i]);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.shapes.is_empty()
    }

    pub fn len(&self) -> usize {
        self.shapes.len()
    }

    /// The avoidance steering of a boid at `pos` with velocity `vel`, added to `acc`; `bits`:
    /// the `see` mask ([`Near`]) of `pos`. Position and velocity come by value, as
    /// [`Obstacles::settle`]'s do.
    #[inline]
    pub fn steer<const D: usize>(
        &self,
        bits: u64,
        pos: [f32; D],
        vel: [f32; D],
        acc: &mut [f32; D],
    ) {
        let f: [f32; D] = std::array::from_fn(|k| vel[k] * self.look_ahead);
        let c = self.clearance;
        self.each_of(bits, |sh| {
            if !sh.near::<D>(&pos) {
                return;
            }
            let (s, n, dist) = if sh.round {
                let (s, y) = sh.closest_on_path::<D>(&pos, &f);
                let (_, dist) = sh.surface::<D>(&y);
                (s, sh.sideways::<D>(&pos, &f), dist)
            } else {
                match sh.chord_middle::<D>(&pos, &f, c) {
                    Some((s, y)) => {
                        let (n, dist) = sh.surface::<D>(&y);
                        (s, n, dist)
                    }
                    None => return,
                }
            };
            if dist < c {
                let mut g = (c - dist) * self.inv_clearance;
                if g > 1.0 {
                    g = 1.0;
                }
                let g = self.w_avoid * g * (1.0 - s);
                for k in 0..D {
                    acc[k] = acc[k] + g * n[k];
                }
            }
        });
    }

    /// The position and velocity of a boid after its move from `old` to `pos` (`moved`: `old +
    /// vel·dt` before the world's boundary acted): no boid ends inside a shape (see the
    /// module's header). By value, not by reference: a caller's arrays whose address is taken
    /// live on the stack on every path of its step, with or without shapes, and reading them
    /// back as one eight-byte load after four-byte stores stalls.
    #[inline]
    pub fn settle<const D: usize>(
        &self,
        p: &Params,
        old: &[f32; D],
        moved: &[f32; D],
        mut pos: [f32; D],
        mut vel: [f32; D],
    ) -> ([f32; D], [f32; D]) {
        let (mut touched, mut projected) = (false, false);
        let at = pos;
        self.each_touching(&at, |sh| {
            if !sh.touches::<D>(&pos) {
                return;
            }
            touched = true;
            let (n, dist) = sh.surface::<D>(&pos);
            if dist < 0.0 {
                sh.put_out::<D>(&mut pos, &n);
                projected = true;
                let vn = dot(&vel, &n);
                if vn < 0.0 {
                    for k in 0..D {
                        vel[k] = vel[k] - vn * n[k];
                    }
                }
            }
        });
        if !touched {
            return (pos, vel);
        }
        // Put out of one shape: still in the world, and in no other? Else, where the boundary
        // left the move alone, did the straight move old → pos pass through a core?
        let bad = if projected {
            !in_world(p, &pos) || self.inside(&pos)
        } else if (0..D).all(|k| moved[k] == pos[k]) {
            let mut m2 = 0.0f32;
            for k in 0..D {
                let d = pos[k] - old[k];
                m2 = m2 + d * d;
            }
            self.shapes
                .iter()
                .any(|sh| m2 >= sh.cross2 && sh.touches::<D>(&pos) && sh.crossed(old, &pos))
        } else {
            false
        };
        if bad {
            pos = *old;
        }
        (pos, vel)
    }

    /// Whether `pos` is inside a shape (strictly).
    pub fn inside<const D: usize>(&self, pos: &[f32; D]) -> bool {
        self.shapes
            .iter()
            .any(|sh| sh.touches::<D>(pos) && sh.surface::<D>(pos).1 < 0.0)
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

    /// Squared distance of `x` from the bounding sphere's centre.
    #[inline(always)]
    fn from_centre2<const D: usize>(&self, x: &[f32; D]) -> f32 {
        let mut d2 = 0.0f32;
        for k in 0..D {
            let d = x[k] - self.centre[k];
            d2 = d2 + d * d;
        }
        d2
    }

    /// Whether a boid at `x` may see the shape this step.
    #[inline(always)]
    fn near<const D: usize>(&self, x: &[f32; D]) -> bool {
        self.from_centre2(x) < self.near2
    }

    /// Whether `x` may be inside the shape (or have crossed it in its last move).
    #[inline(always)]
    fn touches<const D: usize>(&self, x: &[f32; D]) -> bool {
        self.from_centre2(x) < self.touch2
    }

    /// The outward normal at the surface point nearest `x`, and the signed distance of `x`
    /// from the surface (negative inside).
    #[inline]
    fn surface<const D: usize>(&self, x: &[f32; D]) -> ([f32; D], f32) {
        let mut n = [0f32; D];
        if self.round {
            let t = self.core_t::<D>(x);
            let mut d = [0f32; D];
            for k in 0..D {
                d[k] = x[k] - (self.a[k] + self.e[k] * t);
            }
            let l = dot(&d, &d).sqrt();
            if l > 0.0 {
                for k in 0..D {
                    n[k] = d[k] / l;
                }
            } else {
                n[0] = 1.0;
            }
            return (n, l - self.r);
        }
        let (lo, hi) = (&self.a, &self.e);
        let mut d = [0f32; D];
        for k in 0..D {
            let c = if x[k] < lo[k] {
                lo[k]
            } else if x[k] > hi[k] {
                hi[k]
            } else {
                x[k]
            };
            d[k] = x[k] - c;
        }
        let l2 = dot(&d, &d);
        if l2 > 0.0 {
            let l = l2.sqrt();
            for k in 0..D {
                n[k] = d[k] / l;
            }
            return (n, l);
        }
        // Inside (or on the surface): the nearest face, the lowest axis and the min side first.
        let (mut best, mut axis, mut high) = (f32::INFINITY, 0, false);
        for k in 0..D {
            let (pl, ph) = (x[k] - lo[k], hi[k] - x[k]);
            if pl < best {
                (best, axis, high) = (pl, k, false);
            }
            if ph < best {
                (best, axis, high) = (ph, k, true);
            }
        }
        n[axis] = if high { 1.0 } else { -1.0 };
        (n, -best)
    }

    /// Round shape: which way a boid at `x` on the path `x + f·s` steers around it: from the
    /// core point nearest `x` towards `x`, less its part along the path (for a circle, exactly
    /// the direction from the centre to the path's closest approach; for a wall ahead, along
    /// the wall), unit length; for a path straight at the core, a quarter turn left of the
    /// path (2D) or the path's perpendicular with the smallest axis (3D).
    #[inline]
    fn sideways<const D: usize>(&self, x: &[f32; D], f: &[f32; D]) -> [f32; D] {
        let t = self.core_t::<D>(x);
        let mut m = [0f32; D];
        for k in 0..D {
            m[k] = x[k] - (self.a[k] + self.e[k] * t);
        }
        let ff = dot(f, f);
        if ff > 0.0 {
            let along = dot(&m, f) / ff;
            for k in 0..D {
                m[k] = m[k] - along * f[k];
            }
        }
        let l2 = dot(&m, &m);
        let mut n = [0f32; D];
        if l2 > 0.0 {
            let l = l2.sqrt();
            for k in 0..D {
                n[k] = m[k] / l;
            }
            return n;
        }
        if ff <= 0.0 {
            n[0] = 1.0;
            return n;
        }
        if D == 2 {
            let l = ff.sqrt();
            n[0] = -f[1] / l;
            n[1] = f[0] / l;
            return n;
        }
        // 3D: f × (the axis of f's smallest component).
        let mut ax = 0;
        for k in 1..D {
            if f[k].abs() < f[ax].abs() {
                ax = k;
            }
        }
        let (i, j) = ((ax + 1) % 3, (ax + 2) % 3);
        // f × e_ax has components i: f[j], j: −f[i] (cyclic), 0 on ax.
        n[i] = f[j];
        n[j] = -f[i];
        let l = (n[i] * n[i] + n[j] * n[j]).sqrt();
        n[i] = n[i] / l;
        n[j] = n[j] / l;
        n
    }

    /// Parameter in [0, 1] of the core segment's point nearest `x` (0 for a circle).
    #[inline(always)]
    fn core_t<const D: usize>(&self, x: &[f32; D]) -> f32 {
        if self.e2 <= 0.0 {
            return 0.0;
        }
        let mut w = 0.0f32;
        for k in 0..D {
            w = w + (x[k] - self.a[k]) * self.e[k];
        }
        clamp01(w / self.e2)
    }

    /// Round shape: the point of the path `x + f·s`, s ∈ [0, 1], nearest the core segment
    /// (Ericson, Real-Time Collision Detection, 5.1.9), and its s.
    #[inline]
    fn closest_on_path<const D: usize>(&self, x: &[f32; D], f: &[f32; D]) -> (f32, [f32; D]) {
        let mut rr = [0f32; D];
        for k in 0..D {
            rr[k] = x[k] - self.a[k];
        }
        let e: [f32; D] = std::array::from_fn(|k| self.e[k]);
        let a = dot(f, f);
        let ee = self.e2;
        let ff = dot(&e, &rr);
        let s = if a <= 0.0 {
            0.0
        } else {
            let c = dot(f, &rr);
            if ee <= 0.0 {
                clamp01(-c / a)
            } else {
                let b = dot(f, &e);
                let denom = a * ee - b * b;
                let mut s = if denom > 0.0 {
                    clamp01((b * ff - c * ee) / denom)
                } else {
                    0.0
                };
                let t = (b * s + ff) / ee;
                if t < 0.0 {
                    s = clamp01(-c / a);
                } else if t > 1.0 {
                    s = clamp01((b - c) / a);
                }
                s
            }
        };
        (s, std::array::from_fn(|k| x[k] + f[k] * s))
    }

    /// Box: the middle of the chord of the path `x + f·s`, s ∈ [0, 1], through the box grown
    /// by `c` on every side (slab clipping), and its s; None when the path misses it.
    #[inline]
    fn chord_middle<const D: usize>(
        &self,
        x: &[f32; D],
        f: &[f32; D],
        c: f32,
    ) -> Option<(f32, [f32; D])> {
        let (mut t0, mut t1) = (0.0f32, 1.0f32);
        for k in 0..D {
            let (lo, hi) = (self.a[k] - c, self.e[k] + c);
            if f[k] == 0.0 {
                if x[k] < lo || x[k] > hi {
                    return None;
                }
                continue;
            }
            let (mut u0, mut u1) = ((lo - x[k]) / f[k], (hi - x[k]) / f[k]);
            if u0 > u1 {
                std::mem::swap(&mut u0, &mut u1);
            }
            if u0 > t0 {
                t0 = u0;
            }
            if u1 < t1 {
                t1 = u1;
            }
            if t0 > t1 {
                return None;
            }
        }
        let s = (t0 + t1) * 0.5;
        Some((s, std::array::from_fn(|k| x[k] + f[k] * s)))
    }

    /// `x`, inside, moved onto the surface along `n` (from [`Shape::surface`]).
    #[inline]
    fn put_out<const D: usize>(&self, x: &mut [f32; D], n: &[f32; D]) {
        if self.round {
            let t = self.core_t::<D>(x);
            let r = self.r * OUT;
            for k in 0..D {
                x[k] = (self.a[k] + self.e[k] * t) + n[k] * r;
            }
        } else {
            // n is ±e_k: the face's coordinate exactly (on the surface is outside).
            for k in 0..D {
                if n[k] > 0.0 {
                    x[k] = self.e[k];
                } else if n[k] < 0.0 {
                    x[k] = self.a[k];
                }
            }
        }
    }

    /// Whether the straight move `from` → `to` passed through the shape's core: within half
    /// the radius of a capsule's segment, or through the box shrunk to half its size.
    #[inline]
    fn crossed<const D: usize>(&self, from: &[f32; D], to: &[f32; D]) -> bool {
        let f: [f32; D] = std::array::from_fn(|k| to[k] - from[k]);
        if self.round {
            let (_, y) = self.closest_on_path::<D>(from, &f);
            let (_, dist) = self.surface::<D>(&y);
            // dist < −r/2: within r/2 of the core.
            dist + self.r * 0.5 < 0.0
        } else {
            let mut inner = *self;
            for k in 0..D {
                let q = (self.e[k] - self.a[k]) * 0.25;
                inner.a[k] = self.a[k] + q;
                inner.e[k] = self.e[k] - q;
            }
            inner.chord_middle::<D>(from, &f, 0.0).is_some()
        }
    }
}

#[inline(always)]
fn clamp01(x: f32) -> f32 {
    if x < 0.0 {
        0.0
    } else if x > 1.0 {
        1.0
    } else {
        x
    }
}

#[inline(always)]
fn dot<const D: usize>(a: &[f32; D], b: &[f32; D]) -> f32 {
    let mut s = a[0] * b[0];
    for k in 1..D {
        s = s + a[k] * b[k];
    }
    s
}

fn len3(v: [f32; 3]) -> f32 {
    (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt()
}

/// Whether `x` is in the world as its boundary keeps it (wrap: [0, size); reflect: [0, size];
/// open: anywhere).
#[inline(always)]
fn in_world<const D: usize>(p: &Params, x: &[f32; D]) -> bool {
    (0..D).all(|k| match p.boundary {
        0 => x[k] >= 0.0 && x[k] < p.world[k],
        1 => x[k] >= 0.0 && x[k] <= p.world[k],
        _ => true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::{self, Source};

    fn scene(text: &str) -> Scene {
        scene::parse(&Source {
            text,
            dir: std::path::Path::new("."),
            default_name: "masks",
        })
        .expect("test scene is valid")
    }

    /// A small deterministic generator (splitmix64) of floats in [0, 1).
    struct Draw(u64);
    impl Draw {
        fn next(&mut self) -> f32 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32
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
            points.push(std::array::from_fn::<f32, D, _>(|k| {
                (draw.next() * 2.0 - 0.5) * s.world[k]
            }));
        }
        for sh in &obs.shapes {
            for r in [sh.see_r, sh.move_r, sh.touch2.sqrt()] {
                for _ in 0..4_000 {
                    let u: [f32; D] = std::array::from_fn(|_| draw.next() * 2.0 - 1.0);
                    let l = u.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
                    let at = r * (0.98 + 0.04 * draw.next());
                    points.push(std::array::from_fn(|k| sh.centre[k] + u[k] / l * at));
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
            let x64: [f64; 3] = std::array::from_fn(|k| if k < D { x[k] as f64 } else { 0.0 });
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
                    let y: [f32; D] = std::array::from_fn(|k| x[k] + d[k] / l * step);
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
