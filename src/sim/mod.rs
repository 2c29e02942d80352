//! The solver: models, neighbour grid, CPU and CUDA backends. It knows nothing of the
//! renderer, of the video sinks or of how frames are stored: a run hands its frames to a
//! [`FrameOut`] (the recorder implements it), and the command line picks a backend through
//! [`backend`].

// The solver's loops index each axis `k` as the CUDA kernels do, line for line, so that the
// two read alike and keep the same order of operations.
#![allow(clippy::needless_range_loop)]

mod agent;
pub mod backend;
pub mod cpu;
pub mod cuda;
mod disjoint;
pub mod each;
pub mod flight;
pub mod frames;
pub mod grid;
pub mod init;
pub mod math;
pub mod obstacles;
pub mod pool;
mod reach;
pub mod simd;
pub mod species;
pub mod timeline;
mod topo;

pub use frames::{FrameOut, PendingFrame, RecordError};

/// What of a scene the step needs beyond [`Params`]: its obstacles, its species and its
/// timeline. All empty: the step is the one it was before any existed.
#[derive(Clone, Debug, Default)]
pub struct Rules {
    pub obstacles: obstacles::Obstacles,
    pub species: Option<species::Species>,
    pub timeline: Option<timeline::Live>,
    /// The most obstacles there at once: every one the scene lists (boids only).
    pub obstacle_slots: usize,
}

impl Rules {
    pub fn from_scene(s: &Scene) -> Rules {
        Rules {
            obstacles: obstacles::Obstacles::from_scene(s),
            species: species::Species::from_scene(s),
            timeline: timeline::Live::from_scene(s),
            obstacle_slots: if s.boids.is_some() {
                s.obstacles.len()
            } else {
                0
            },
        }
    }

    /// No obstacles, no species.
    pub fn none() -> Rules {
        Rules {
            obstacles: obstacles::Obstacles::none(),
            species: None,
            timeline: None,
            obstacle_slots: 0,
        }
    }
}

use crate::scene::{Boundary, Model, Scene};

/// A large array could not be had. User input sizes these arrays, so this is an error value,
/// never an abort. (The message is the one users see; the allocator's reason adds nothing
/// they can act on.)
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AllocError {
    /// `bytes` (saturating) for `what` were refused.
    #[error("cannot allocate {what}")]
    OutOfMemory { what: String, bytes: usize },
    /// `dim × n` does not fit in `usize`.
    #[error("agent count overflows")]
    Overflow,
}

/// Agent state, structure of arrays, component-major: `pos[k*n + i]` is axis k of agent i.
/// This is exactly a `.bfs` frame's payload layout.
#[derive(Clone, Debug, PartialEq)]
pub struct State {
    pub dim: usize,
    pub n: usize,
    pub pos: Vec<f32>,
    pub vel: Vec<f32>,
}

impl State {
    /// Zeroed state; an error (not an abort) when the memory cannot be had.
    pub fn zeros(dim: usize, n: usize) -> Result<State, AllocError> {
        let len = dim.checked_mul(n).ok_or(AllocError::Overflow)?;
        let what = || format!("the state of {n} agents");
        Ok(State {
            dim,
            n,
            pos: filled(len, 0.0, what)?,
            vel: filled(len, 0.0, what)?,
        })
    }

    /// The first agent whose position or velocity is not finite.
    pub fn first_non_finite(&self) -> Option<usize> {
        (0..self.n).find(|&i| {
            (0..self.dim).any(|k| {
                !self.pos[k * self.n + i].is_finite() || !self.vel[k * self.n + i].is_finite()
            })
        })
    }
}

/// `len` copies of `v`, or an error naming `what` could not be allocated: large arrays sized
/// by user input must fail as an error, never abort the process.
pub fn filled<T: Clone>(len: usize, v: T, what: impl Fn() -> String) -> Result<Vec<T>, AllocError> {
    let mut out = Vec::new();
    out.try_reserve_exact(len)
        .map_err(|_| AllocError::OutOfMemory {
            what: what(),
            bytes: len.saturating_mul(std::mem::size_of::<T>()),
        })?;
    out.resize(len, v);
    Ok(out)
}

/// Parameters of one run, identical in layout to `struct Params` in `kernels/forge_math.h`
/// (keep in sync; 160 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    pub n: u32,
    pub dim: u32,
    pub model: u32,
    pub boundary: u32,
    pub world: [f32; 3],
    pub half_world: [f32; 3],
    pub dt: f32,
    pub r_sep2: f32,
    pub r_ali2: f32,
    pub r_coh2: f32,
    pub w_sep: f32,
    pub w_ali: f32,
    pub w_coh: f32,
    pub max_force: f32,
    pub v_min: f32,
    pub v_max: f32,
    pub v0: f32,
    pub noise: f32,
    pub seed: u64,
    /// Vicsek: 0 angular noise, 1 vectorial ([`crate::scene::NoiseKind::code`]).
    pub noise_kind: u32,
    /// Boids: alignment and cohesion over the `topo_k` nearest other agents
    /// ([`crate::scene::Neighbours`], src/sim/topo.rs); 0 = metric, within the radii. The
    /// kernels run the metric rules only: the CUDA backend refuses `topo_k > 0`.
    pub topo_k: u32,
    /// Boids: the width of the heading-noise angle drawn each step, `η·√dt` in radians
    /// ([`math::heading_noise`]); 0 = none.
    pub heading_noise: f32,
    /// Boids: `cos(fov/2)` of the field of view ([`math::fov_cos`], [`math::Sight`]); −1 (or
    /// below, by rounding) = all around, no blind angle. With `heading_noise`, keeps the size a
    /// multiple of 8 with no implicit padding (the kernels copy the bytes).
    pub fov_cos: f32,
    /// Boids: 1 where they fly (`boids.flight`, [`flight::flight`]), else 0 and the flight
    /// values below are unused.
    pub flight: u32,
    /// Flight: the cruise speed v₀.
    pub cruise: f32,
    /// Flight: 1/τ, the rate the speed relaxes towards v₀.
    pub inv_tau: f32,
    /// Flight: gravity g.
    pub gravity: f32,
    /// Flight: g/v₀², the lift a unit of squared speed gives (the lift is g at v₀).
    pub lift_k: f32,
    /// Flight: tan β_max, the steepest bank's tangent.
    pub tan_bank: f32,
    /// Flight: the roost's centre (x, y) and the preferred height (z).
    pub roost: [f32; 3],
    /// Flight: the roost's radius, and its horizontal and vertical pulls.
    pub roost_radius: f32,
    pub w_roost_h: f32,
    pub w_roost_v: f32,
}

impl Params {
    pub fn from_scene(s: &Scene, n: usize) -> Params {
        let mut p = Params {
            n: n as u32,
            dim: s.dim as u32,
            model: s.model.code() as u32,
            boundary: s.boundary.code() as u32,
            world: s.world,
            half_world: [s.world[0] * 0.5, s.world[1] * 0.5, s.world[2] * 0.5],
            dt: s.dt,
            r_sep2: 0.0,
            r_ali2: 0.0,
            r_coh2: 0.0,
            w_sep: 0.0,
            w_ali: 0.0,
            w_coh: 0.0,
            max_force: 0.0,
            v_min: 0.0,
            v_max: 0.0,
            v0: 0.0,
            noise: 0.0,
            seed: s.seed,
            noise_kind: 0,
            topo_k: 0,
            heading_noise: 0.0,
            fov_cos: -1.0,
            flight: 0,
            cruise: 0.0,
            inv_tau: 0.0,
            gravity: 0.0,
            lift_k: 0.0,
            tan_bank: 0.0,
            roost: [0.0; 3],
            roost_radius: 0.0,
            w_roost_h: 0.0,
            w_roost_v: 0.0,
        };
        if let Some(b) = &s.boids {
            p.r_sep2 = b.r_sep * b.r_sep;
            p.r_ali2 = b.r_ali * b.r_ali;
            p.r_coh2 = b.r_coh * b.r_coh;
            p.w_sep = b.w_sep;
            p.w_ali = b.w_ali;
            p.w_coh = b.w_coh;
            p.max_force = b.max_force;
            p.v_min = b.v_min;
            p.v_max = b.v_max;
            p.topo_k = b.neighbours.k();
            p.heading_noise = b.noise * s.dt.sqrt();
            p.fov_cos = math::fov_cos(b.fov);
            if let Some(f) = &b.flight {
                p.flight = 1;
                p.cruise = f.cruise_speed;
                p.inv_tau = 1.0 / f.speed_time;
                p.gravity = f.gravity;
                p.lift_k = f.gravity / (f.cruise_speed * f.cruise_speed);
                p.tan_bank = (f.max_bank as f64).to_radians().tan() as f32;
                p.roost = [f.roost[0], f.roost[1], f.roost_height];
                p.roost_radius = f.roost_radius;
                p.w_roost_h = f.w_roost_h;
                p.w_roost_v = f.w_roost_v;
            }
        }
        // With species, the candidates must cover every species' radii (src/sim/species/mod.rs
        // then tests each pair against its own).
        for sp in &s.species {
            let b = &sp.boids;
            p.r_sep2 = p.r_sep2.max(b.r_sep * b.r_sep);
            p.r_ali2 = p.r_ali2.max(b.r_ali * b.r_ali);
            p.r_coh2 = p.r_coh2.max(b.r_coh * b.r_coh);
        }
        if let Some(v) = &s.vicsek {
            // Vicsek's single radius is stored as the alignment radius.
            p.r_ali2 = v.r * v.r;
            p.v0 = v.v0;
            p.noise = v.noise;
            p.noise_kind = v.noise_kind.code();
        }
        p
    }

    pub fn model(&self) -> Model {
        Model::from_code(self.model as u8).unwrap_or(Model::Boids)
    }

    pub fn wraps(&self) -> bool {
        self.boundary == Boundary::Wrap.code() as u32
    }

    /// Largest interaction radius (squared radii are what the step compares against).
    pub fn radius(&self) -> f32 {
        self.r_sep2.max(self.r_ali2).max(self.r_coh2).sqrt()
    }
}

/// The state stopped being finite: which step produced it and the first agent affected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the state became NaN or infinite at step {step} (agent {agent})")]
pub struct Diverged {
    pub step: u64,
    pub agent: usize,
}
