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

use super::Params;
use crate::scene::{Obstacle, Scene};

mod cells;
pub use cells::Near;

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

/// One shape as the CUDA kernels read it (`struct ObsShape` in kernels/forge_math.h, 60 bytes;
/// tests/kernels_host.rs checks the layout): [`Shape`] less the cells' radii.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ObsShape {
    pub round: u32,
    pub a: [f32; 3],
    pub e: [f32; 3],
    pub e2: f32,
    pub r: f32,
    pub centre: [f32; 3],
    pub near2: f32,
    pub touch2: f32,
    pub cross2: f32,
}

/// The avoidance settings and the number of shapes, as the CUDA kernels read them (`struct
/// ObsHead` in kernels/forge_math.h, 20 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ObsHead {
    pub n: u32,
    pub w_avoid: f32,
    pub look_ahead: f32,
    pub clearance: f32,
    pub inv_clearance: f32,
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

/// A boid put back on a round surface lands this much further out than the radius, so that
/// rounding cannot leave it inside (1 + 2⁻¹²).
const OUT: f32 = 1.000_244_1;

impl Obstacles {
    /// None: the step is exactly what it was before obstacles existed.
    pub fn none() -> Obstacles {
        Obstacles::default()
    }

    /// The scene's obstacles as they are at step 0 (its timeline may move, add or remove
    /// them).
    pub fn from_scene(s: &Scene) -> Obstacles {
        match crate::scene::timeline::ObstacleKeys::of(s) {
            Some(keys) => Obstacles::from_list(s, &keys.at(0)),
            None => Obstacles::from_list(s, &s.obstacles),
        }
    }

    /// `list` (the scene's obstacles, or those there at some step) with the scene's avoidance
    /// settings; `s`'s speeds bound how far a boid reaches in a step.
    pub fn from_list(s: &Scene, list: &[Obstacle]) -> Obstacles {
        let Some(b) = &s.boids else {
            return Obstacles::none();
        };
        if list.is_empty() {
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
        let shapes = list
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

    /// The shapes and settings as the CUDA kernels read them. The kernels test every shape
    /// where the CPU tests those its cells' masks name: the masks only skip shapes whose exact
    /// test fails ([`Near`]), so both give the same bytes.
    pub fn for_kernels(&self) -> (ObsHead, Vec<ObsShape>) {
        let head = ObsHead {
            n: self.shapes.len() as u32,
            w_avoid: self.w_avoid,
            look_ahead: self.look_ahead,
            clearance: self.clearance,
            inv_clearance: self.inv_clearance,
        };
        let shapes = self
            .shapes
            .iter()
            .map(|s| ObsShape {
                round: s.round as u32,
                a: s.a,
                e: s.e,
                e2: s.e2,
                r: s.r,
                centre: s.centre,
                near2: s.near2,
                touch2: s.touch2,
                cross2: s.cross2,
            })
            .collect();
        (head, shapes)
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
        let f: [f32; D] = crate::sim::each::array(|k| vel[k] * self.look_ahead);
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
                    acc[k] += g * n[k];
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
                        vel[k] -= vn * n[k];
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
                m2 += d * d;
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
    /// Squared distance of `x` from the bounding sphere's centre.
    #[inline(always)]
    fn centre_dist2<const D: usize>(&self, x: &[f32; D]) -> f32 {
        let mut d2 = 0.0f32;
        for k in 0..D {
            let d = x[k] - self.centre[k];
            d2 += d * d;
        }
        d2
    }

    /// Whether a boid at `x` may see the shape this step.
    #[inline(always)]
    fn near<const D: usize>(&self, x: &[f32; D]) -> bool {
        self.centre_dist2(x) < self.near2
    }

    /// Whether `x` may be inside the shape (or have crossed it in its last move).
    #[inline(always)]
    fn touches<const D: usize>(&self, x: &[f32; D]) -> bool {
        self.centre_dist2(x) < self.touch2
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
                m[k] -= along * f[k];
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
        n[i] /= l;
        n[j] /= l;
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
            w += (x[k] - self.a[k]) * self.e[k];
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
        let e: [f32; D] = crate::sim::each::array(|k| self.e[k]);
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
        (s, crate::sim::each::array(|k| x[k] + f[k] * s))
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
        Some((s, crate::sim::each::array(|k| x[k] + f[k] * s)))
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
        let f: [f32; D] = crate::sim::each::array(|k| to[k] - from[k]);
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
    x.clamp(0.0, 1.0)
}

#[inline(always)]
fn dot<const D: usize>(a: &[f32; D], b: &[f32; D]) -> f32 {
    let mut s = a[0] * b[0];
    for k in 1..D {
        s += a[k] * b[k];
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
