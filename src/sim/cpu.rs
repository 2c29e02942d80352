//! The CPU backend: multi-threaded (rayon), allocation-free in the step.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;

use super::grid::Grid;
use super::math::*;
use super::{Diverged, Params, State};
use crate::scene::{Model, Search};

/// Below this many agents `--search auto` compares every pair: the grid's sort costs more
/// than it saves. Measured with `forge bench --crossover` (see README).
pub const BRUTE_MAX: usize = 96;
/// Below this many agents one thread does the step: fan-out costs more than it saves.
pub const PARALLEL_MIN: usize = 6000;

/// Resolve `auto` to the search actually used for `n` agents.
pub fn choose_search(search: Search, n: usize) -> Search {
    match search {
        Search::Auto if n <= BRUTE_MAX => Search::Brute,
        Search::Auto => Search::Grid,
        s => s,
    }
}

pub struct CpuSolver {
    pub params: Params,
    pub state: State,
    next: State,
    grid: Option<Grid>,
    /// Vicsek with brute force: unit velocities in agent order.
    units: Vec<f32>,
    pool: Option<rayon::ThreadPool>,
    threads: usize,
    /// Steps done so far; the next step computed is number `step`.
    pub step: u64,
    pub search: Search,
}

#[derive(Clone, Copy)]
struct Out {
    pos: *mut f32,
    vel: *mut f32,
}
// SAFETY: every agent index is written by exactly one task (the slots of a step are a
// permutation of the agents and the chunks partition the slots).
unsafe impl Send for Out {}
unsafe impl Sync for Out {}

impl Out {
    // Methods (not field access) so closures capture the whole `Out`, which is Sync.
    #[inline(always)]
    fn p(&self) -> *mut f32 {
        self.pos
    }
    /// # Safety
    /// `i < n`, and no other task writes agent `i` during this pass.
    #[inline(always)]
    unsafe fn put<const D: usize>(&self, n: usize, i: usize, p: &[f32; D], v: &[f32; D]) {
        for k in 0..D {
            *self.pos.add(k * n + i) = p[k];
            *self.vel.add(k * n + i) = v[k];
        }
    }
}

impl CpuSolver {
    /// `threads == 0` means all cores.
    pub fn new(params: Params, state: State, threads: usize, search: Search) -> Result<CpuSolver, String> {
        let n = state.n;
        let search = choose_search(search, n);
        let threads = if threads == 0 { std::thread::available_parallelism().map(|x| x.get()).unwrap_or(1) } else { threads };
        let pool = if threads > 1 && n >= PARALLEL_MIN {
            Some(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .thread_name(|i| format!("forge-step-{i}"))
                    .build()
                    .map_err(|e| format!("cannot start {threads} threads: {e}"))?,
            )
        } else {
            None
        };
        let grid = if search == Search::Grid { Some(Grid::new(&params, n)?) } else { None };
        let mut units = Vec::new();
        if params.model() == Model::Vicsek && search == Search::Brute {
            units.try_reserve_exact(2 * n).map_err(|_| "cannot allocate".to_string())?;
            units.resize(2 * n, 0.0);
        }
        let next = State::zeros(state.dim, n)?;
        Ok(CpuSolver { params, state, next, grid, units, pool, threads, step: 0, search })
    }

    pub fn threads(&self) -> usize {
        if self.pool.is_some() {
            self.threads
        } else {
            1
        }
    }

    /// Run `f` over `0..n` split into chunks, in parallel when a pool exists.
    fn for_chunks(pool: &Option<rayon::ThreadPool>, n: usize, f: impl Fn(Range<usize>) + Sync + Send) {
        match pool {
            None => f(0..n),
            Some(pool) => {
                let chunks = pool.current_num_threads() * 8;
                let len = n.div_ceil(chunks).max(1);
                pool.install(|| {
                    (0..chunks).into_par_iter().for_each(|c| {
                        let a = (c * len).min(n);
                        let b = ((c + 1) * len).min(n);
                        if a < b {
                            f(a..b)
                        }
                    })
                });
            }
        }
    }

    /// Advance one step. On `Err` the state is left at the last good step.
    pub fn step(&mut self) -> Result<(), Diverged> {
        let bad = AtomicUsize::new(usize::MAX);
        match (self.params.model(), self.params.dim) {
            (Model::Boids, 2) => self.step_boids::<2>(&bad),
            (Model::Boids, _) => self.step_boids::<3>(&bad),
            (Model::Vicsek, _) => self.step_vicsek(&bad),
        }
        let agent = bad.into_inner();
        if agent != usize::MAX {
            return Err(Diverged { step: self.step + 1, agent });
        }
        std::mem::swap(&mut self.state, &mut self.next);
        self.step += 1;
        Ok(())
    }

    /// Sort agents into cells and gather their data into cell order. For Vicsek the gathered
    /// "velocity" is the unit velocity.
    fn build_grid(&mut self, units: bool) {
        let grid = self.grid.as_mut().expect("grid search has a grid");
        let st = &self.state;
        let n = st.n;
        let dim = st.dim;
        {
            let g: &Grid = grid;
            let cells = Out { pos: grid_ptr(&g.cell_of), vel: std::ptr::null_mut() };
            Self::for_chunks(&self.pool, n, |r| {
                for i in r {
                    // SAFETY: chunks are disjoint, i < n.
                    unsafe { *(cells.p() as *mut u32).add(i) = g.cell_index(st, i) };
                }
            });
        }
        // Counting sort: counts → inclusive prefix (cell ends) → reverse scatter leaves
        // cell_start[c] at the start of cell c, agents ascending within a cell.
        let starts = &mut grid.cell_start;
        starts.iter_mut().for_each(|x| *x = 0);
        for &c in &grid.cell_of {
            starts[c as usize] += 1;
        }
        let mut run = 0u32;
        for x in starts[..grid.ncells].iter_mut() {
            run += *x;
            *x = run;
        }
        starts[grid.ncells] = n as u32;
        for i in (0..n).rev() {
            let c = grid.cell_of[i] as usize;
            starts[c] -= 1;
            grid.order[starts[c] as usize] = i as u32;
        }
        let g: &Grid = grid;
        let outp = Out { pos: grid_ptr(&g.spos) as *mut f32, vel: grid_ptr(&g.svel) as *mut f32 };
        Self::for_chunks(&self.pool, n, |r| {
            for s in r {
                let i = g.order[s] as usize;
                if units {
                    let u = unit2([st.vel[i], st.vel[n + i]]);
                    // SAFETY: slot s is written by this chunk only.
                    unsafe { outp.put::<2>(n, s, &[st.pos[i], st.pos[n + i]], &u) };
                } else {
                    for k in 0..dim {
                        // SAFETY: as above.
                        unsafe {
                            *outp.pos.add(k * n + s) = st.pos[k * n + i];
                            *outp.vel.add(k * n + s) = st.vel[k * n + i];
                        }
                    }
                }
            }
        });
    }

    fn step_boids<const D: usize>(&mut self, bad: &AtomicUsize) {
        let p = self.params;
        let n = self.state.n;
        let out = Out { pos: self.next.pos.as_mut_ptr(), vel: self.next.vel.as_mut_ptr() };
        let rmax2 = p.r_sep2.max(p.r_ali2).max(p.r_coh2);
        if self.search == Search::Grid {
            self.build_grid(false);
            let g = self.grid.as_ref().unwrap();
            Self::for_chunks(&self.pool, n, |r| {
                let mut ranges = [(0u32, 0u32); 27];
                let mut cur_cell = usize::MAX;
                let mut nr = 0;
                for s in r {
                    let i = g.order[s] as usize;
                    let c = g.cell_of[i] as usize;
                    if c != cur_cell {
                        cur_cell = c;
                        nr = g.neighbour_ranges(c, p.wraps(), D, &mut ranges);
                    }
                    let (pi, vi) = boids_agent::<D>(&p, rmax2, &g.spos, &g.svel, n, s, &ranges[..nr]);
                    check(bad, i, &pi, &vi);
                    // SAFETY: order is a permutation; slot s (and so agent i) is this chunk's.
                    unsafe { out.put::<D>(n, i, &pi, &vi) };
                }
            });
        } else {
            let st = &self.state;
            Self::for_chunks(&self.pool, n, |r| {
                let all = [(0u32, n as u32)];
                for i in r {
                    let (pi, vi) = boids_agent::<D>(&p, rmax2, &st.pos, &st.vel, n, i, &all);
                    check(bad, i, &pi, &vi);
                    // SAFETY: chunks partition 0..n.
                    unsafe { out.put::<D>(n, i, &pi, &vi) };
                }
            });
        }
    }

    fn step_vicsek(&mut self, bad: &AtomicUsize) {
        let p = self.params;
        let n = self.state.n;
        let t = self.step;
        let out = Out { pos: self.next.pos.as_mut_ptr(), vel: self.next.vel.as_mut_ptr() };
        if self.search == Search::Grid {
            self.build_grid(true);
            let g = self.grid.as_ref().unwrap();
            Self::for_chunks(&self.pool, n, |r| {
                let mut ranges = [(0u32, 0u32); 27];
                let mut cur_cell = usize::MAX;
                let mut nr = 0;
                for s in r {
                    let i = g.order[s] as usize;
                    let c = g.cell_of[i] as usize;
                    if c != cur_cell {
                        cur_cell = c;
                        nr = g.neighbour_ranges(c, p.wraps(), 2, &mut ranges);
                    }
                    let (pi, vi) = vicsek_agent(&p, t, i, &g.spos, &g.svel, n, s, &ranges[..nr]);
                    check(bad, i, &pi, &vi);
                    // SAFETY: as in step_boids.
                    unsafe { out.put::<2>(n, i, &pi, &vi) };
                }
            });
        } else {
            let st = &self.state;
            let units = Out { pos: self.units.as_mut_ptr(), vel: std::ptr::null_mut() };
            Self::for_chunks(&self.pool, n, |r| {
                for i in r {
                    let u = unit2([st.vel[i], st.vel[n + i]]);
                    // SAFETY: chunks partition 0..n.
                    unsafe {
                        *units.p().add(i) = u[0];
                        *units.p().add(n + i) = u[1];
                    }
                }
            });
            let units = &self.units;
            Self::for_chunks(&self.pool, n, |r| {
                let all = [(0u32, n as u32)];
                for i in r {
                    let (pi, vi) = vicsek_agent(&p, t, i, &st.pos, units, n, i, &all);
                    check(bad, i, &pi, &vi);
                    // SAFETY: chunks partition 0..n.
                    unsafe { out.put::<2>(n, i, &pi, &vi) };
                }
            });
        }
    }
}

fn grid_ptr<T>(v: &[T]) -> *mut f32 {
    v.as_ptr() as *mut f32
}

#[inline(always)]
fn check<const D: usize>(bad: &AtomicUsize, i: usize, p: &[f32; D], v: &[f32; D]) {
    if p.iter().chain(v.iter()).any(|x| !x.is_finite()) {
        bad.fetch_min(i, Ordering::Relaxed);
    }
}

/// One boid's step. `src_*` are component-major with stride `m`; `me` is its own slot there.
#[inline(always)]
fn boids_agent<const D: usize>(p: &Params, rmax2: f32, src_pos: &[f32], src_vel: &[f32], m: usize, me: usize, ranges: &[(u32, u32)]) -> ([f32; D], [f32; D]) {
    let mut pi = [0f32; D];
    let mut vi = [0f32; D];
    for k in 0..D {
        pi[k] = src_pos[k * m + me];
        vi[k] = src_vel[k * m + me];
    }
    let wrap = p.wraps();
    let mut acc = BoidsAcc::<D>::new();
    for &(a, b) in ranges {
        for j in a as usize..b as usize {
            if j == me {
                continue;
            }
            let mut d = [0f32; D];
            for k in 0..D {
                d[k] = wrap_delta(src_pos[k * m + j] - pi[k], p.world[k], p.half_world[k], wrap);
            }
            let d2 = norm2(&d);
            if d2 < rmax2 {
                let mut vj = [0f32; D];
                for k in 0..D {
                    vj[k] = src_vel[k * m + j];
                }
                acc.boids_pair(p, &d, d2, &vj);
            }
        }
    }
    boids_integrate(p, &acc, &mut pi, &mut vi);
    (pi, vi)
}

/// One Vicsek particle's step; `src_unit` holds unit velocities; `agent` keys the noise.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn vicsek_agent(p: &Params, step: u64, agent: usize, src_pos: &[f32], src_unit: &[f32], m: usize, me: usize, ranges: &[(u32, u32)]) -> ([f32; 2], [f32; 2]) {
    let pi = [src_pos[me], src_pos[m + me]];
    let own = [src_unit[me], src_unit[m + me]];
    let wrap = p.wraps();
    let mut sum = [0i64; 2];
    for &(a, b) in ranges {
        for j in a as usize..b as usize {
            let dx = wrap_delta(src_pos[j] - pi[0], p.world[0], p.half_world[0], wrap);
            let dy = wrap_delta(src_pos[m + j] - pi[1], p.world[1], p.half_world[1], wrap);
            // Self included: d2 = 0 < r².
            if dx * dx + dy * dy < p.r_ali2 {
                sum[0] = sum[0].wrapping_add(to_fix(src_unit[j]));
                sum[1] = sum[1].wrapping_add(to_fix(src_unit[m + j]));
            }
        }
    }
    let mut pos = pi;
    let mut vel = [0f32; 2];
    vicsek_integrate(p, &sum, own, step, agent as u64, &mut pos, &mut vel);
    (pos, vel)
}
