//! The CUDA solver: the state stays on the device for the whole run; each step is a few kernel
//! launches on one stream, and recorded frames come back through pinned memory on a second
//! stream while the next steps run.

use std::collections::VecDeque;
use std::sync::Arc;

use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DriverError, LaunchConfig,
    PinnedHostSlice, PushKernelArg,
};

use super::{driver, grid_shape, CudaError, Device, GridShape};
use crate::scene::{Model, Search};
use crate::sim::cpu::{choose_search, unpermute};
use crate::sim::{Diverged, FrameOut, Params, RecordError, State};

/// Threads per block of the per-agent kernels (`BLOCK` in step.cu) and of the scan
/// (`SCAN_BLOCK`).
pub const BLOCK: u32 = 256;
pub const SCAN_BLOCK: u32 = 1024;

struct Kernels {
    cell_index: CudaFunction,
    scan_blocks: CudaFunction,
    scan_sums: CudaFunction,
    scan_add: CudaFunction,
    build_grid: CudaFunction,
    build_brute: CudaFunction,
    boids_grid2: CudaFunction,
    boids_grid3: CudaFunction,
    vicsek_grid: CudaFunction,
    boids_brute2: CudaFunction,
    boids_brute3: CudaFunction,
    vicsek_brute: CudaFunction,
}

impl Kernels {
    fn load(m: &Arc<CudaModule>) -> Result<Kernels, CudaError> {
        let f = |name: &'static str| {
            m.load_function(name)
                .map_err(|source| CudaError::MissingKernel { name, source })
        };
        Ok(Kernels {
            cell_index: f("cell_index_kernel")?,
            scan_blocks: f("scan_blocks_kernel")?,
            scan_sums: f("scan_sums_kernel")?,
            scan_add: f("scan_add_kernel")?,
            build_grid: f("build_grid_kernel")?,
            build_brute: f("build_brute_kernel")?,
            boids_grid2: f("boids_grid_kernel2")?,
            boids_grid3: f("boids_grid_kernel3")?,
            vicsek_grid: f("vicsek_grid_kernel")?,
            boids_brute2: f("boids_brute_kernel2")?,
            boids_brute3: f("boids_brute_kernel3")?,
            vicsek_brute: f("vicsek_brute_kernel")?,
        })
    }
}

fn cfg(n: u32, block: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (n.div_ceil(block).max(1), 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// A recorded frame on its way to pinned host memory.
struct Pending {
    step: u64,
    pos: PinnedHostSlice<f32>,
    vel: PinnedHostSlice<f32>,
    ids: PinnedHostSlice<u32>,
    bad: PinnedHostSlice<u64>,
}

/// The CUDA solver: state stays on the device for the whole run.
pub struct CudaSolver {
    pub params: Params,
    pub step: u64,
    pub search: Search,
    pub device_name: String,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    copy: Arc<CudaStream>,
    k: Kernels,
    shape: GridShape,
    dim: usize,
    n: usize,
    /// Current state (slot order) and its ids; `next_*` are written by the step.
    pos: CudaSlice<f32>,
    vel: CudaSlice<f32>,
    ids: CudaSlice<u32>,
    next_pos: CudaSlice<f32>,
    next_vel: CudaSlice<f32>,
    next_ids: CudaSlice<u32>,
    /// Sorted (grid) or prepared (brute) copies: positions, velocities or unit velocities, fixed point.
    spos: CudaSlice<f32>,
    svel: CudaSlice<f32>,
    svfix: CudaSlice<i64>,
    cell_of: CudaSlice<u32>,
    rank: CudaSlice<u32>,
    scell: CudaSlice<u32>,
    counts: CudaSlice<u32>,
    cell_start: CudaSlice<u32>,
    block_sums: CudaSlice<u32>,
    /// First (step << 32 | agent) whose state became non-finite; u64::MAX while none.
    bad: CudaSlice<u64>,
    /// Frames being copied to the host, oldest first, and spare pinned buffers.
    pending: VecDeque<Pending>,
    spare: Vec<Pending>,
    /// Host copy of the last frame handed over (slot order) and its ids.
    host: State,
    host_ids: Vec<u32>,
    diverged: Option<Diverged>,
}

/// Frames in flight between the device and the frame sink.
const IN_FLIGHT: usize = 2;

impl CudaSolver {
    /// `state` in agent order.
    pub fn new(
        dev: &Device,
        params: Params,
        state: State,
        search: Search,
    ) -> Result<Self, CudaError> {
        // The scene's obstacles never reach here: `AnySolver::new` refuses them first.
        let none = super::super::Rules::none();
        if let Some(why) = super::super::backend::cpu_only(&params, &none) {
            return Err(CudaError::Unsupported(why));
        }
        let n = state.n;
        let dim = state.dim;
        let search = choose_search(search, n);
        let err = driver("CUDA");
        let ctx = dev.ctx.clone();
        let stream = ctx.default_stream();
        let copy = ctx.new_stream().map_err(err)?;
        let k = Kernels::load(&dev.module)?;
        let shape = if search == Search::Grid {
            grid_shape(&params, n)?
        } else {
            GridShape {
                dims: [1, 1, 1],
                ncells: 1,
                inv_cell: [0.0; 3],
                wrap: params.wraps() as u32,
            }
        };
        let ncells = shape.ncells as usize;
        let nblocks = (ncells as u32).div_ceil(SCAN_BLOCK).max(1) as usize;
        let ids0: Vec<u32> = (0..n as u32).collect();
        let mut start = vec![0u32; ncells + 1];
        start[ncells] = n as u32;
        let len = dim * n;
        let bad_init = stream.clone_htod(&[u64::MAX]).map_err(err)?;
        let mut s = CudaSolver {
            params,
            step: 0,
            search,
            device_name: dev.name.clone(),
            pos: stream.clone_htod(&state.pos).map_err(err)?,
            vel: stream.clone_htod(&state.vel).map_err(err)?,
            ids: stream.clone_htod(&ids0).map_err(err)?,
            next_pos: stream.alloc_zeros(len.max(1)).map_err(err)?,
            next_vel: stream.alloc_zeros(len.max(1)).map_err(err)?,
            next_ids: stream.clone_htod(&ids0).map_err(err)?,
            spos: stream.alloc_zeros(len.max(1)).map_err(err)?,
            svel: stream.alloc_zeros(len.max(1)).map_err(err)?,
            svfix: stream.alloc_zeros(len.max(1)).map_err(err)?,
            cell_of: stream.alloc_zeros(n.max(1)).map_err(err)?,
            rank: stream.alloc_zeros(n.max(1)).map_err(err)?,
            scell: stream.alloc_zeros(n.max(1)).map_err(err)?,
            counts: stream.alloc_zeros(ncells).map_err(err)?,
            cell_start: stream.clone_htod(&start).map_err(err)?,
            block_sums: stream.alloc_zeros(nblocks).map_err(err)?,
            bad: bad_init,
            pending: VecDeque::new(),
            spare: Vec::new(),
            host: state,
            host_ids: ids0,
            diverged: None,
            ctx,
            stream,
            copy,
            k,
            shape,
            dim,
            n,
        };
        for _ in 0..=IN_FLIGHT {
            let p = s.alloc_pending()?;
            s.spare.push(p);
        }
        Ok(s)
    }

    fn alloc_pending(&self) -> Result<Pending, CudaError> {
        let err = driver("CUDA pinned memory");
        let len = (self.dim * self.n).max(1);
        // SAFETY: every element is written by a copy before it is read (as_slice waits for it).
        // Flags 0: ordinary (not write-combined) pinned memory, which the host reads fast.
        unsafe {
            Ok(Pending {
                step: 0,
                pos: self.ctx.alloc_pinned_with_flags(len, 0).map_err(err)?,
                vel: self.ctx.alloc_pinned_with_flags(len, 0).map_err(err)?,
                ids: self
                    .ctx
                    .alloc_pinned_with_flags(self.n.max(1), 0)
                    .map_err(err)?,
                bad: self.ctx.alloc_pinned_with_flags(1, 0).map_err(err)?,
            })
        }
    }

    pub fn n(&self) -> usize {
        self.n
    }

    /// Enqueue one step; never waits for the device. A divergence found while handing frames
    /// over is returned by the next call.
    pub fn step(&mut self) -> Result<(), Diverged> {
        if let Some(d) = self.diverged {
            return Err(d);
        }
        if let Err(e) = self.enqueue_step() {
            // A driver failure mid-run: report it as the CPU reports a broken state.
            eprintln!("error: CUDA: {e}");
            let d = Diverged {
                step: self.step + 1,
                agent: 0,
            };
            self.diverged = Some(d);
            return Err(d);
        }
        self.step += 1;
        Ok(())
    }

    /// The step's launches: build the grid (or prepare the velocities), step every agent
    /// into `next_*`, then swap the state for it.
    fn enqueue_step(&mut self) -> Result<(), DriverError> {
        let units = (self.params.model() == Model::Vicsek) as u32;
        if self.search == Search::Grid {
            self.build_grid(units)?;
            self.step_grid()?;
            std::mem::swap(&mut self.ids, &mut self.next_ids);
        } else {
            self.build_brute(units)?;
            self.step_brute()?;
        }
        std::mem::swap(&mut self.pos, &mut self.next_pos);
        std::mem::swap(&mut self.vel, &mut self.next_vel);
        Ok(())
    }

    /// Every agent's cell and rank in it, the cells' starts (a scan of their counts), and the
    /// state sorted by cell into `spos`, `svel`, `svfix` (`next_ids`: the sorted ids).
    fn build_grid(&mut self, units: u32) -> Result<(), DriverError> {
        let n = self.n as u32;
        let dim = self.dim as u32;
        let g = self.shape;
        let st = &self.stream;
        st.memset_zeros(&mut self.counts)?;
        // SAFETY: every buffer holds dim*n (or n, ncells, nblocks) elements as the kernel
        // expects; the launch covers n threads, each guarded by `s < n`.
        unsafe {
            st.launch_builder(&self.k.cell_index)
                .arg(&g)
                .arg(&self.pos)
                .arg(&n)
                .arg(&dim)
                .arg(&mut self.cell_of)
                .arg(&mut self.rank)
                .arg(&mut self.counts)
                .launch(cfg(n, BLOCK))?;
        }
        self.scan_cells()?;
        let st = &self.stream;
        // SAFETY: as for cell_index; slot t = cell_start[c] + rank[s] is a permutation of 0..n.
        unsafe {
            st.launch_builder(&self.k.build_grid)
                .arg(&n)
                .arg(&dim)
                .arg(&units)
                .arg(&self.cell_of)
                .arg(&self.rank)
                .arg(&self.cell_start)
                .arg(&self.pos)
                .arg(&self.vel)
                .arg(&self.ids)
                .arg(&mut self.spos)
                .arg(&mut self.svel)
                .arg(&mut self.svfix)
                .arg(&mut self.next_ids)
                .arg(&mut self.scell)
                .launch(cfg(n, BLOCK))?;
        }
        Ok(())
    }

    /// `cell_start`: the exclusive scan of `counts`, per block, then over the blocks' sums.
    fn scan_cells(&mut self) -> Result<(), DriverError> {
        let st = &self.stream;
        let nc = self.shape.ncells;
        let nb = nc.div_ceil(SCAN_BLOCK).max(1);
        let blocks = |grid: u32| LaunchConfig {
            grid_dim: (grid, 1, 1),
            block_dim: (SCAN_BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: cell_start has ncells + 1 entries (the last fixed at n), block_sums nb.
        unsafe {
            st.launch_builder(&self.k.scan_blocks)
                .arg(&self.counts)
                .arg(&mut self.cell_start)
                .arg(&mut self.block_sums)
                .arg(&nc)
                .launch(blocks(nb))?;
            st.launch_builder(&self.k.scan_sums)
                .arg(&mut self.block_sums)
                .arg(&nb)
                .launch(blocks(1))?;
            st.launch_builder(&self.k.scan_add)
                .arg(&mut self.cell_start)
                .arg(&self.block_sums)
                .arg(&nc)
                .launch(blocks(nb))?;
        }
        Ok(())
    }

    /// Every agent stepped from its neighbours in the grid's cells, sorted slot t into slot t.
    fn step_grid(&mut self) -> Result<(), DriverError> {
        let p = self.params;
        let n = self.n as u32;
        let g = self.shape;
        let step = self.step;
        let st = &self.stream;
        let f = match (p.model() == Model::Vicsek, self.dim) {
            (true, _) => &self.k.vicsek_grid,
            (false, 2) => &self.k.boids_grid2,
            (false, _) => &self.k.boids_grid3,
        };
        // SAFETY: reads the sorted arrays, writes slot t of next_pos/next_vel only.
        unsafe {
            st.launch_builder(f)
                .arg(&p)
                .arg(&g)
                .arg(&step)
                .arg(&self.cell_start)
                .arg(&self.scell)
                .arg(&self.next_ids)
                .arg(&self.spos)
                .arg(&self.svel)
                .arg(&self.svfix)
                .arg(&mut self.next_pos)
                .arg(&mut self.next_vel)
                .arg(&mut self.bad)
                .launch(cfg(n, BLOCK))?;
        }
        Ok(())
    }

    /// The velocities brute force reads: unit vectors (`units`, Vicsek) and fixed point.
    fn build_brute(&mut self, units: u32) -> Result<(), DriverError> {
        let n = self.n as u32;
        let dim = self.dim as u32;
        // SAFETY: writes slot s of svel (units) and svfix only.
        unsafe {
            self.stream
                .launch_builder(&self.k.build_brute)
                .arg(&n)
                .arg(&dim)
                .arg(&units)
                .arg(&self.vel)
                .arg(&mut self.svel)
                .arg(&mut self.svfix)
                .launch(cfg(n, BLOCK))?;
        }
        Ok(())
    }

    /// Every agent stepped from all the others, slot s into slot s.
    fn step_brute(&mut self) -> Result<(), DriverError> {
        let p = self.params;
        let n = self.n as u32;
        let step = self.step;
        let st = &self.stream;
        let vicsek = p.model() == Model::Vicsek;
        let f = match (vicsek, self.dim) {
            (true, _) => &self.k.vicsek_brute,
            (false, 2) => &self.k.boids_brute2,
            (false, _) => &self.k.boids_brute3,
        };
        let vel_src = if vicsek { &self.svel } else { &self.vel };
        // SAFETY: reads all slots, writes slot s of next_pos/next_vel only.
        unsafe {
            st.launch_builder(f)
                .arg(&p)
                .arg(&step)
                .arg(&self.pos)
                .arg(vel_src)
                .arg(&self.svfix)
                .arg(&mut self.next_pos)
                .arg(&mut self.next_vel)
                .arg(&mut self.bad)
                .launch(cfg(n, BLOCK))?;
        }
        Ok(())
    }

    /// Start copying the current state (slot order, ids, divergence flag) to pinned host
    /// memory on the copy stream, and hand every finished frame to `out`. The step loop
    /// waits only when IN_FLIGHT frames are still on their way.
    pub fn record<R: FrameOut>(&mut self, out: &mut R) -> Result<(), RecordError<R::Error>> {
        if self.diverged.is_some() {
            return Ok(());
        }
        let mut slot = match self.spare.pop() {
            Some(s) => s,
            None => self.alloc_pending()?,
        };
        slot.step = self.step;
        let c = &self.copy;
        // cudarc's event tracking makes the copy stream wait for the step's writes and the
        // next writes of these buffers wait for the copy.
        let r = (|| {
            c.memcpy_dtoh(&self.pos, &mut slot.pos)?;
            c.memcpy_dtoh(&self.vel, &mut slot.vel)?;
            c.memcpy_dtoh(&self.ids, &mut slot.ids)?;
            c.memcpy_dtoh(&self.bad, &mut slot.bad)
        })();
        r.map_err(driver("CUDA copy"))?;
        self.pending.push_back(slot);
        while self.pending.len() > IN_FLIGHT {
            self.hand_over_oldest(out)?;
        }
        Ok(())
    }

    /// Wait for the oldest frame, check it was reached without divergence, give it to `out`.
    fn hand_over_oldest<R: FrameOut>(&mut self, out: &mut R) -> Result<(), RecordError<R::Error>> {
        let Some(f) = self.pending.pop_front() else {
            return Ok(());
        };
        let r = (|| -> Result<(), DriverError> {
            let bad = f.bad.as_slice()?[0];
            if bad != u64::MAX && (bad >> 32) <= f.step {
                if self.diverged.is_none() {
                    self.diverged = Some(Diverged {
                        step: bad >> 32,
                        agent: (bad & 0xffff_ffff) as usize,
                    });
                }
                return Ok(());
            }
            if self.diverged.is_some() {
                return Ok(());
            }
            self.host
                .pos
                .copy_from_slice(&f.pos.as_slice()?[..self.dim * self.n]);
            self.host
                .vel
                .copy_from_slice(&f.vel.as_slice()?[..self.dim * self.n]);
            self.host_ids.copy_from_slice(&f.ids.as_slice()?[..self.n]);
            Ok(())
        })();
        let handed = r.is_ok() && self.diverged.is_none();
        let step = f.step;
        self.spare.push(f);
        r.map_err(driver("CUDA copy"))?;
        if handed {
            out.frame_slots(step, &self.host, &self.host_ids)
                .map_err(RecordError::Out)?;
        }
        Ok(())
    }

    /// Hand over every frame still in flight, then check the whole run for divergence; leaves
    /// the last state on the host (see `slots`). On divergence `step` becomes the last good step.
    pub fn finish<R: FrameOut>(
        &mut self,
        out: &mut R,
    ) -> Result<Option<Diverged>, RecordError<R::Error>> {
        while !self.pending.is_empty() {
            self.hand_over_oldest(out)?;
        }
        let r = (|| -> Result<(), DriverError> {
            self.stream.synchronize()?;
            let bad = self.stream.clone_dtoh(&self.bad)?[0];
            if bad != u64::MAX && self.diverged.is_none() {
                self.diverged = Some(Diverged {
                    step: bad >> 32,
                    agent: (bad & 0xffff_ffff) as usize,
                });
            }
            if self.diverged.is_none() {
                self.stream.memcpy_dtoh(&self.pos, &mut self.host.pos)?;
                self.stream.memcpy_dtoh(&self.vel, &mut self.host.vel)?;
                self.stream.memcpy_dtoh(&self.ids, &mut self.host_ids)?;
                self.stream.synchronize()?;
            }
            Ok(())
        })();
        r.map_err(driver("CUDA"))?;
        if let Some(d) = self.diverged {
            self.step = d.step.saturating_sub(1);
        }
        Ok(self.diverged)
    }

    /// The last state brought to the host (after `finish`: the final state), slot order.
    pub fn slots(&self) -> (&State, &[u32]) {
        (&self.host, &self.host_ids)
    }

    /// The current state in agent order (waits for the device; for tests and summaries).
    pub fn state(&mut self) -> Result<State, CudaError> {
        let err = driver("CUDA");
        let pos = self.stream.clone_dtoh(&self.pos).map_err(err)?;
        let vel = self.stream.clone_dtoh(&self.vel).map_err(err)?;
        let ids = self.stream.clone_dtoh(&self.ids).map_err(err)?;
        let slots = State {
            dim: self.dim,
            n: self.n,
            pos,
            vel,
        };
        let mut st = State::zeros(self.dim, self.n)?;
        unpermute(&slots, &ids, &mut st.pos, &mut st.vel);
        Ok(st)
    }

    /// Wait for every queued step (for timing).
    pub fn synchronize(&self) -> Result<(), CudaError> {
        self.stream.synchronize().map_err(driver("CUDA"))
    }
}
