//! The CPU backend: multi-threaded on a fork-join pool of its own (src/sim/pool.rs), and
//! allocation-free in the step.
//!
//! State is kept in *slot* order, re-sorted by grid cell every step (the "coherent grid" of
//! the CUDA Boids project): neighbours sit next to each other in memory and every write is
//! sequential. `ids[s]` is the agent in slot s; recordings are written in agent order.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::agent::{
    boids_agent, boids_finish, boids_neighbours, candidates, check, vicsek_agent, Src, BATCH,
};
use super::disjoint::{OutArr, StateOut};
use super::grid::Grid;
use super::math::*;
use super::obstacles::{Near, Obstacles};
use super::pool::Pool;
use super::reach::{self, Reach};
use super::simd::{self, Isa};
use super::species::{self as spc, Hunter, Species, Tracked};
use super::topo;
use super::{filled, AllocError, Diverged, FrameOut, Params, State};

mod record;
mod species;

use crate::scene::{Model, Search};
use record::STAGED_MIN;

/// Up to this many agents `--search auto` compares every pair: the grid's sort costs more
/// than it saves. Measured with `forge bench --only crossover` (docs/src/performance.md).
pub const BRUTE_MAX: usize = 24;
/// Below this many agents one thread does the light per-agent passes (grid build, gather,
/// un-permute): fan-out costs more than they do.
pub const PARALLEL_MIN: usize = 6000;
/// Below this many candidate pairs one thread does a step's neighbour pass, whatever the
/// agent count: the work, not N, decides (a dense flock of 2000 has more pairs than a sparse
/// one of 20 000). Measured with `forge bench --only threads` (docs/src/performance.md).
pub const PARALLEL_MIN_PAIRS: usize = 60_000;
/// Most threads a solver (or a sweep) starts. Far beyond any machine's cores — more threads
/// than cores only wait on each other, and the output never depends on the count — and far
/// below what exhausts the process's memory maps (100 000 threads made the runtime abort
/// setting up their stack guard pages).
pub const MAX_THREADS: usize = 1024;

/// Checks a thread count given by `flag` against [`MAX_THREADS`], before anything is created:
/// the message names the flag and the machine's cores.
pub fn check_threads(flag: &str, threads: Option<usize>) -> anyhow::Result<()> {
    match threads {
        Some(t) if t > MAX_THREADS => {
            let cores = std::thread::available_parallelism()
                .map(|x| x.get())
                .unwrap_or(1);
            anyhow::bail!(
                "{flag}: at most {MAX_THREADS}, got {t} (this machine has {cores} core{}; \
                 more threads than cores do not help, and the output never depends on it)",
                if cores == 1 { "" } else { "s" }
            )
        }
        _ => Ok(()),
    }
}

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
    /// State in slot order.
    cur: State,
    next: State,
    /// Agent id of each slot of `cur`; `next_ids` is the scratch for the next order.
    ids: Vec<u32>,
    next_ids: Vec<u32>,
    grid: Option<Grid>,
    /// Brute force: velocities (Vicsek: unit velocities) in fixed point, and for Vicsek the
    /// unit velocities themselves, in slot order.
    bvfix: Vec<i64>,
    units: Vec<f32>,
    pool: Option<Pool>,
    threads: usize,
    /// Candidate pairs the last neighbour pass visited (before the first: estimated, see
    /// `build_grid`); decides whether the next one splits across threads.
    pairs: usize,
    /// Fewest pairs the neighbour pass splits at ([`PARALLEL_MIN_PAIRS`]; the bench lowers it).
    min_pairs: usize,
    /// The candidate loop used (AVX-512, AVX2 or scalar: the same bytes).
    isa: Isa,
    /// Steps done so far; the next step computed is number `step`.
    pub step: u64,
    pub search: Search,
    /// Boids: the obstacles ([`CpuSolver::with_obstacles`]; none by default), and their
    /// masks for each cell of the grid (empty without obstacles or grid).
    obstacles: Obstacles,
    near_cells: Vec<Near>,
    /// Boids: the species ([`CpuSolver::with_species`]; none by default) and the predators of
    /// the current step (scratch).
    species: Option<Species>,
    hunters: Vec<Hunter>,
    /// Species: the grid cells each step's rare agents and predators can reach.
    reach: Reach,
    /// Boids with species: the agents of the tracked species and their slots.
    tracked: Tracked,
    /// A recorded frame's agents as records (position then velocity, `2·dim` values each) in
    /// agent order, from [`STAGED_MIN`] agents up (empty below): see [`CpuSolver::record`].
    staged: Mutex<Vec<f32>>,
    /// The scene's timeline ([`CpuSolver::with_rules`]; none by default): applied to `params`
    /// and the species' parameters before each step.
    timeline: Option<super::timeline::Live>,
}

/// The CPU solver could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum CpuError {
    #[error(transparent)]
    Alloc(#[from] AllocError),
    #[error("{threads} threads asked for, at most {MAX_THREADS} are allowed")]
    TooManyThreads { threads: usize },
    #[error("cannot start {threads} threads")]
    Threads {
        threads: usize,
        #[source]
        source: std::io::Error,
    },
}

impl CpuSolver {
    /// `state` in agent order; `threads == 0` means all cores.
    pub fn new(
        params: Params,
        state: State,
        threads: usize,
        search: Search,
    ) -> Result<CpuSolver, CpuError> {
        let n = state.n;
        let work = || "the solver's work arrays".to_string();
        let search = choose_search(search, n);
        let threads = if threads == 0 {
            std::thread::available_parallelism()
                .map(|x| x.get())
                .unwrap_or(1)
        } else {
            threads
        };
        if threads > MAX_THREADS {
            return Err(CpuError::TooManyThreads { threads });
        }
        // Started whenever more than one thread is asked for; each pass then decides from its
        // work whether to use it (idle workers cost nothing but their stacks).
        let pool = if threads > 1 && n > 1 {
            Some(Pool::new(threads).map_err(|source| CpuError::Threads { threads, source })?)
        } else {
            None
        };
        let grid = if search == Search::Grid {
            Some(Grid::new(&params, n)?)
        } else {
            None
        };
        let brute = search == Search::Brute;
        let units = if params.model() == Model::Vicsek && brute {
            filled(2 * n, 0.0, work)?
        } else {
            Vec::new()
        };
        let bvfix = if brute {
            filled(state.dim * n, 0i64, work)?
        } else {
            Vec::new()
        };
        let next = State::zeros(state.dim, n)?;
        let mut ids = filled(n, 0u32, work)?;
        for (i, x) in ids.iter_mut().enumerate() {
            *x = i as u32;
        }
        let next_ids = filled(n, 0u32, work)?;
        let staged = if n >= STAGED_MIN {
            filled(2 * state.dim * n, 0.0f32, work)?
        } else {
            Vec::new()
        };
        Ok(CpuSolver {
            params,
            cur: state,
            next,
            ids,
            next_ids,
            grid,
            bvfix,
            units,
            pool,
            threads,
            pairs: 0,
            min_pairs: PARALLEL_MIN_PAIRS,
            isa: simd::isa(),
            step: 0,
            search,
            obstacles: Obstacles::none(),
            near_cells: Vec::new(),
            species: None,
            hunters: Vec::new(),
            reach: Reach::default(),
            tracked: Tracked::default(),
            staged: Mutex::new(staged),
            timeline: None,
        })
    }

    /// The solver with the scene's obstacles (`Obstacles::from_scene`): boids steer around them
    /// and never end a step inside one.
    pub fn with_obstacles(mut self, obstacles: Obstacles) -> Result<CpuSolver, CpuError> {
        self.near_cells = match &self.grid {
            Some(g) => obstacles.grid_cells(g, self.params.dim as usize, self.params.world)?,
            None => Vec::new(),
        };
        self.obstacles = obstacles;
        Ok(self)
    }

    /// The solver with the scene's species (`Species::from_scene`; None: the step without).
    pub fn with_species(mut self, species: Option<Species>) -> CpuSolver {
        self.species = species;
        self
    }

    /// The solver with the scene's obstacles, species and timeline
    /// ([`super::Rules::from_scene`]).
    pub fn with_rules(self, rules: super::Rules) -> Result<CpuSolver, CpuError> {
        let mut s = self
            .with_obstacles(rules.obstacles)?
            .with_species(rules.species);
        s.timeline = rules.timeline;
        Ok(s)
    }

    /// Replaces the timeline (None: none), from the next step on.
    pub fn set_timeline(&mut self, t: Option<super::timeline::Live>) {
        self.timeline = t;
    }

    /// Threads the last step's neighbour pass ran on (1 when its work was too small to split,
    /// and before any step).
    pub fn threads(&self) -> usize {
        if self.pool_for(self.pairs).is_some() {
            self.threads
        } else {
            1
        }
    }

    /// The candidate loop this solver runs (`FORGE_SIMD` and the CPU decide; same bytes).
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// The pool, when a pass of `pairs` candidate pairs is worth splitting.
    fn pool_for(&self, pairs: usize) -> Option<&Pool> {
        self.pool.as_ref().filter(|_| pairs >= self.min_pairs)
    }

    /// Candidate pairs of the last step's neighbour pass (N² for brute force; before the first
    /// step, estimated, see `build_grid`).
    pub fn pairs(&self) -> usize {
        self.pairs
    }

    /// Split the neighbour pass from `min_pairs` candidate pairs on (default
    /// [`PARALLEL_MIN_PAIRS`]): for measuring the crossover. Same bytes either way.
    pub fn set_parallel_min_pairs(&mut self, min_pairs: usize) {
        self.min_pairs = min_pairs;
    }

    /// The pool, when a light per-agent pass over `n` agents is worth splitting.
    fn pool_light(pool: &Option<Pool>, n: usize) -> Option<&Pool> {
        pool.as_ref().filter(|_| n >= PARALLEL_MIN)
    }

    pub fn n(&self) -> usize {
        self.cur.n
    }

    /// The state in slot order and the agent id of each slot (what `FrameOut::frame_slots` takes).
    pub fn slots(&self) -> (&State, &[u32]) {
        (&self.cur, &self.ids)
    }

    /// Run `f` over `0..n` split into chunks, in parallel when a pool exists.
    fn for_chunks(pool: Option<&Pool>, n: usize, f: impl Fn(Range<usize>) + Sync + Send) {
        match pool {
            None => f(0..n),
            Some(pool) => pool.run(n, &f),
        }
    }

    /// Advance one step. On `Err` the state is left at the last good step.
    pub fn step(&mut self) -> Result<(), Diverged> {
        if let Some(t) = &mut self.timeline {
            let applied = t.apply(self.step, &mut self.params, self.species.as_mut());
            if applied.presence {
                self.tracked.forget();
            }
            if applied.obstacles {
                let o = t.obstacles();
                match &self.grid {
                    Some(g) => {
                        let (dim, world) = (self.params.dim as usize, self.params.world);
                        o.refill_cells(g, dim, world, &mut self.near_cells);
                    }
                    None => self.near_cells.clear(),
                }
                self.obstacles = o;
            }
        }
        let bad = AtomicUsize::new(usize::MAX);
        match (self.params.model(), self.params.dim) {
            (Model::Boids, 2) if self.species.is_some() => self.step_species::<2>(&bad),
            (Model::Boids, _) if self.species.is_some() => self.step_species::<3>(&bad),
            (Model::Boids, 2) if self.params.topo_k > 0 => self.step_topo::<2>(&bad),
            (Model::Boids, _) if self.params.topo_k > 0 => self.step_topo::<3>(&bad),
            (Model::Boids, 2) => self.step_boids::<2>(&bad),
            (Model::Boids, _) => self.step_boids::<3>(&bad),
            (Model::Vicsek, _) => self.step_vicsek(&bad),
        }
        let slot = bad.into_inner();
        if slot != usize::MAX {
            let agent = if self.search == Search::Grid {
                self.next_ids[slot]
            } else {
                self.ids[slot]
            };
            return Err(Diverged {
                step: self.step + 1,
                agent: agent as usize,
            });
        }
        std::mem::swap(&mut self.cur, &mut self.next);
        if self.search == Search::Grid {
            std::mem::swap(&mut self.ids, &mut self.next_ids);
        }
        self.step += 1;
        Ok(())
    }

    /// Sort slots into cells (counting sort, stable) and gather into cell order: positions,
    /// velocities (Vicsek: unit velocities) and their fixed-point form, and ids
    /// (`grid.spos/svel/svfix`, `next_ids`).
    fn build_grid(&mut self, units: bool) {
        let grid = self.grid.as_mut().expect("grid search has a grid");
        let st = &self.cur;
        let n = st.n;
        let dim = st.dim;
        {
            // Write pointers come from `&mut` before the shared borrow the pass reads through.
            let cells = OutArr::new(&mut grid.cell_of);
            let g: &Grid = grid;
            Self::for_chunks(Self::pool_light(&self.pool, n), n, |r| {
                for s in r {
                    // SAFETY: chunks are disjoint, s < n.
                    unsafe { cells.set(s, g.cell_index(st, s)) };
                }
            });
        }
        // Counting sort: counts → inclusive prefix (cell ends) → reverse scatter leaves
        // cell_start[c] at the start of cell c, slots ascending within a cell.
        let starts = &mut grid.cell_start;
        starts.iter_mut().for_each(|x| *x = 0);
        for &c in &grid.cell_of {
            starts[c as usize] += 1;
        }
        // Before the first step, the candidate pairs the neighbour pass will visit, estimated
        // as Σ count² over the cells times the cells of a neighbourhood (exact for locally
        // uniform density, high for clumps smaller than a cell); from then on, the count of
        // the step before (flocks change little in a step).
        let mut run = 0u32;
        let mut same_cell = 0u64;
        for x in starts[..grid.ncells].iter_mut() {
            same_cell += *x as u64 * *x as u64;
            run += *x;
            *x = run;
        }
        if self.step == 0 {
            self.pairs = (same_cell * 3u64.pow(dim as u32)).min(usize::MAX as u64) as usize;
        }
        starts[grid.ncells] = n as u32;
        for s in (0..n).rev() {
            let c = grid.cell_of[s] as usize;
            starts[c] -= 1;
            grid.order[starts[c] as usize] = s as u32;
        }
        let outp = StateOut::new(&mut grid.spos, &mut grid.svel);
        let outfix = OutArr::new(&mut grid.svfix);
        let outcell = OutArr::new(&mut grid.scell);
        let outid = OutArr::new(&mut self.next_ids);
        let g: &Grid = grid;
        let ids = &self.ids;
        Self::for_chunks(Self::pool_light(&self.pool, n), n, |r| {
            for t in r {
                let s = g.order[t] as usize;
                // SAFETY: slot t (indices k*n + t) is written by this chunk only; every array
                // holds dim*n (svfix, spos, svel) or n (scell, next_ids) elements.
                unsafe {
                    outid.set(t, ids[s]);
                    outcell.set(t, g.cell_of[s]);
                    if units {
                        let u = unit2([st.vel[s], st.vel[n + s]]);
                        outp.put::<2>(n, t, &[st.pos[s], st.pos[n + s]], &u);
                        outfix.set(t, to_fix(u[0]));
                        outfix.set(n + t, to_fix(u[1]));
                    } else {
                        for k in 0..dim {
                            let v = st.vel[k * n + s];
                            outp.set(k * n + t, st.pos[k * n + s], v);
                            outfix.set(k * n + t, to_fix(v));
                        }
                    }
                }
            }
        });
    }

    /// Brute force: the fixed-point velocities (Vicsek: unit velocities, kept in `units` too)
    /// of the current slots.
    fn build_brute(&mut self, units: bool) {
        let st = &self.cur;
        let n = st.n;
        let dim = st.dim;
        let outfix = OutArr::new(&mut self.bvfix);
        let outu = OutArr::new(&mut self.units);
        self.pairs = n.saturating_mul(n);
        Self::for_chunks(Self::pool_light(&self.pool, n), n, |r| {
            for s in r {
                // SAFETY: chunks partition 0..n.
                unsafe {
                    if units {
                        let u = unit2([st.vel[s], st.vel[n + s]]);
                        outu.set(s, u[0]);
                        outu.set(n + s, u[1]);
                        outfix.set(s, to_fix(u[0]));
                        outfix.set(n + s, to_fix(u[1]));
                    } else {
                        for k in 0..dim {
                            outfix.set(k * n + s, to_fix(st.vel[k * n + s]));
                        }
                    }
                }
            }
        });
    }

    fn step_boids<const D: usize>(&mut self, bad: &AtomicUsize) {
        let p = self.params;
        let n = self.cur.n;
        let t_step = self.step;
        let out = StateOut::new(&mut self.next.pos, &mut self.next.vel);
        let isa = self.isa;
        if self.search == Search::Grid {
            self.build_grid(false);
            let g = self.grid.as_ref().unwrap();
            let ids = &self.next_ids;
            let src = Src::sorted(g, isa, &self.obstacles);
            let near = &self.near_cells;
            self.pairs = grid_pass::<D, _>(
                self.pool_for(self.pairs),
                g,
                p.wraps(),
                bad,
                &out,
                |c| near.get(c).copied().unwrap_or_default(),
                |t, _, seam, ranges, acc| boids_neighbours::<D>(&p, seam, &src, t, ranges, acc),
                |t, near, acc| boids_finish::<D>(&p, &src, t, acc, t_step, ids[t], near),
            );
        } else {
            self.build_brute(false);
            let ids = &self.ids;
            let src = Src::unsorted(&self.cur, &self.bvfix, isa, &self.obstacles);
            Self::for_chunks(self.pool_for(self.pairs), n, |r| {
                let all = [(0u32, n as u32)];
                for s in r {
                    let (pi, vi) = boids_agent::<D>(&p, p.wraps(), &src, s, &all, t_step, ids[s]);
                    check(bad, s, &pi, &vi);
                    // SAFETY: chunks partition 0..n.
                    unsafe { out.put::<D>(n, s, &pi, &vi) };
                }
            });
        }
    }

    /// Boids with topological neighbours (src/sim/topo.rs), on the same two searches.
    fn step_topo<const D: usize>(&mut self, bad: &AtomicUsize) {
        let p = self.params;
        let n = self.cur.n;
        let t_step = self.step;
        let grid = self.search == Search::Grid;
        if grid {
            self.build_grid(false);
        } else {
            self.build_brute(false);
        }
        let out = StateOut::new(&mut self.next.pos, &mut self.next.vel);
        let (src, g) = match &self.grid {
            Some(g) if grid => (
                topo::Src {
                    pos: &g.spos,
                    vel: &g.svel,
                    vfix: &g.svfix,
                    ids: &self.next_ids,
                    m: n,
                    obs: &self.obstacles,
                },
                Some(g),
            ),
            _ => (
                topo::Src {
                    pos: &self.cur.pos,
                    vel: &self.cur.vel,
                    vfix: &self.bvfix,
                    ids: &self.ids,
                    m: n,
                    obs: &self.obstacles,
                },
                None,
            ),
        };
        Self::for_chunks(self.pool.as_ref(), n, |r| {
            topo::with_heap(|heap| {
                for s in r {
                    let (pi, vi) = topo::boids_agent::<D>(&p, &src, s, g, t_step, heap);
                    check(bad, s, &pi, &vi);
                    // SAFETY: chunks partition 0..n.
                    unsafe { out.put::<D>(n, s, &pi, &vi) };
                }
            })
        });
    }

    fn step_vicsek(&mut self, bad: &AtomicUsize) {
        let p = self.params;
        let n = self.cur.n;
        let t_step = self.step;
        let isa = self.isa;
        let out = StateOut::new(&mut self.next.pos, &mut self.next.vel);
        if self.search == Search::Grid {
            self.build_grid(true);
            let g = self.grid.as_ref().unwrap();
            let ids = &self.next_ids;
            let visited = AtomicUsize::new(0);
            Self::for_chunks(self.pool_for(self.pairs), n, |r| {
                let mut ranges = [(0u32, 0u32); 27];
                let mut cur_cell = usize::MAX;
                let mut nr = 0;
                let (mut cell_pairs, mut pairs) = (0, 0);
                let src = Src::sorted(g, isa, &self.obstacles);
                for t in r {
                    let c = g.scell[t] as usize;
                    if c != cur_cell {
                        cur_cell = c;
                        nr = g.neighbour_ranges(c, p.wraps(), 2, &mut ranges).0;
                        cell_pairs = candidates(&ranges[..nr]);
                    }
                    pairs += cell_pairs;
                    let (pi, vi) = vicsek_agent(&p, t_step, ids[t], &src, t, &ranges[..nr]);
                    check(bad, t, &pi, &vi);
                    // SAFETY: as in step_boids.
                    unsafe { out.put::<2>(n, t, &pi, &vi) };
                }
                visited.fetch_add(pairs, Ordering::Relaxed);
            });
            self.pairs = visited.into_inner();
        } else {
            self.build_brute(true);
            let st = &self.cur;
            let ids = &self.ids;
            let src = Src {
                pos: &st.pos,
                vel: &self.units,
                vfix: &self.bvfix,
                m: n,
                isa,
                obs: &self.obstacles,
            };
            Self::for_chunks(self.pool_for(self.pairs), n, |r| {
                let all = [(0u32, n as u32)];
                for s in r {
                    let (pi, vi) = vicsek_agent(&p, t_step, ids[s], &src, s, &all);
                    check(bad, s, &pi, &vi);
                    // SAFETY: chunks partition 0..n.
                    unsafe { out.put::<2>(n, s, &pi, &vi) };
                }
            });
        }
    }
}

/// A boids step's neighbour pass over the grid's slots, split across `pool` when given: for
/// each slot t (in batches of [`BATCH`]), `sums(t, what, seam, candidate ranges, acc)` takes
/// its neighbour sums, then `finish(t, what, acc)` its new position and velocity, written to
/// slot t of `out` (a non-finite one is reported in `bad`); `what` is `cell(c)` of its cell c,
/// taken once per run of slots in the cell (what the step knows of the cell: its obstacle
/// masks, its species bits). Returns the candidate pairs visited.
///
/// The batch: the integration is a chain of divisions and square roots, and a batch of
/// independent chains overlaps in the CPU where one chain between two long candidate loops
/// waits. Each agent's result depends on nothing but its own sums, so the bytes do not.
#[allow(clippy::too_many_arguments)]
fn grid_pass<const D: usize, C: Copy + Default>(
    pool: Option<&Pool>,
    g: &Grid,
    wraps: bool,
    bad: &AtomicUsize,
    out: &StateOut,
    cell: impl Fn(usize) -> C + Sync + Send,
    sums: impl Fn(usize, C, bool, &[(u32, u32)], &mut BoidsAcc<D>) + Sync + Send,
    finish: impl Fn(usize, C, &BoidsAcc<D>) -> ([f32; D], [f32; D]) + Sync + Send,
) -> usize {
    let n = g.cell_of.len();
    let visited = AtomicUsize::new(0);
    CpuSolver::for_chunks(pool, n, |r| {
        let mut ranges = [(0u32, 0u32); 27];
        let mut cur_cell = usize::MAX;
        let (mut nr, mut seam, mut what) = (0, false, C::default());
        let (mut cell_pairs, mut pairs) = (0, 0);
        let mut accs = [BoidsAcc::<D>::new(); BATCH];
        let mut whats = [C::default(); BATCH];
        let mut start = r.start;
        while start < r.end {
            let end = (start + BATCH).min(r.end);
            for t in start..end {
                let c = g.scell[t] as usize;
                if c != cur_cell {
                    cur_cell = c;
                    (nr, seam) = g.neighbour_ranges(c, wraps, D, &mut ranges);
                    cell_pairs = candidates(&ranges[..nr]);
                    what = cell(c);
                }
                pairs += cell_pairs;
                whats[t - start] = what;
                sums(t, what, seam, &ranges[..nr], &mut accs[t - start]);
            }
            for t in start..end {
                let (pi, vi) = finish(t, whats[t - start], &accs[t - start]);
                check(bad, t, &pi, &vi);
                // SAFETY: slot t belongs to this chunk.
                unsafe { out.put::<D>(n, t, &pi, &vi) };
            }
            start = end;
        }
        visited.fetch_add(pairs, Ordering::Relaxed);
    });
    visited.into_inner()
}

/// Slot order → agent order: `pos[k*n + ids[s]] = st.pos[k*n + s]`.
pub fn unpermute(st: &State, ids: &[u32], pos: &mut [f32], vel: &mut [f32]) {
    let n = st.n;
    for k in 0..st.dim {
        let (src_p, src_v) = (&st.pos[k * n..(k + 1) * n], &st.vel[k * n..(k + 1) * n]);
        let (dst_p, dst_v) = (&mut pos[k * n..(k + 1) * n], &mut vel[k * n..(k + 1) * n]);
        for (s, &i) in ids.iter().enumerate() {
            dst_p[i as usize] = src_p[s];
            dst_v[i as usize] = src_v[s];
        }
    }
}
