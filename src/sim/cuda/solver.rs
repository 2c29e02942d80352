//! The CUDA solver: the state stays on the device for the whole run; each step is a few kernel
//! launches on one stream, with no synchronisation and no copy. A recorded frame is put in
//! agent order on the device (`frame_kernel`), copied to pinned host memory on a second stream
//! while the next steps run, and handed to the sink as a
//! [`PendingFrame`](crate::sim::PendingFrame): the recorder's writer thread waits for the copy,
//! checksums and writes the frame, and gives the buffers back. The step loop waits only when
//! every frame buffer is still on its way to the disk.
//!
//! The context does not track buffer uses with events (see `device::open_device`): the two
//! streams meet only where this file and inflight.rs say so — the copy stream waits for an
//! event recorded after `frame_kernel`, the host waits for an event recorded after the copy,
//! and a frame buffer is written again only once its previous frame has been given back.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use cudarc::driver::{CudaSlice, CudaStream, DriverError, LaunchConfig, PushKernelArg};

use super::inflight::{alloc_frame, CudaFrame, DeviceFrame, HostFrame, Shared};
use super::kernels::{
    cfg, hunters, species_args, species_dev, Kernels, Rule, SpeciesDev, StepKind, BLOCK, SCAN_BLOCK,
};
use super::{driver, grid_shape, CudaError, Device, GridShape};
use crate::scene::{Model, Search};
use crate::sim::cpu::{choose_search, unpermute};
use crate::sim::obstacles::ObsHead;
use crate::sim::species::Species;
use crate::sim::timeline::Live;
use crate::sim::{Diverged, FrameOut, Params, RecordError, Rules, State};

/// The CUDA solver: state stays on the device for the whole run.
pub struct CudaSolver {
    pub params: Params,
    pub step: u64,
    pub search: Search,
    pub device_name: String,
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
    /// The obstacles (`n == 0`: none, and the kernels without them run) and their shapes
    /// (`struct ObsShape` in kernels/forge_math.h, as 4-byte words).
    obs_head: ObsHead,
    obs_shapes: CudaSlice<u32>,
    /// The step kernel takes the obstacles (the scene lists some, though the timeline may
    /// have none there at a step: then `obs_head.n` is 0).
    obs_kernel: bool,
    /// The species as the kernels read them, and this step's predators; None: no species.
    sp: Option<SpeciesDev>,
    /// The scene's timeline, applied to `params` before each step is enqueued; with species,
    /// their host copy, whose parameters are uploaded again when a key changes them.
    timeline: Option<Live>,
    sp_host: Option<Species>,
    /// Recorded frames' device buffers (`HostFrame::index` names one).
    frames: Vec<DeviceFrame>,
    shared: Arc<Shared>,
    /// The final state (slot order) and its ids, brought to the host by `finish`.
    host: State,
    host_ids: Vec<u32>,
    diverged: Option<Diverged>,
}

/// Recorded frames in flight between the step loop and the sink (the disk), each a device
/// buffer and a pinned host buffer of a frame. The solver's memory check
/// (`sim::init::check_memory`) budgets for this many.
pub const IN_FLIGHT: usize = 3;
const _: () = assert!(IN_FLIGHT <= crate::sim::init::SINK_FRAMES);

/// The run's step kernel: its rule, search, obstacles and dimension.
fn step_kind(params: &Params, rules: &Rules, search: Search, dim: usize) -> StepKind {
    let rule = match (params.model(), &rules.species) {
        (Model::Vicsek, _) => Rule::Vicsek,
        (_, Some(_)) => Rule::Species,
        _ if params.topo_k > 0 => Rule::Topological,
        _ => Rule::Boids,
    };
    StepKind {
        rule,
        grid: search == Search::Grid,
        obstacles: rules.obstacle_slots > 0,
        dim,
    }
}

impl GridShape {
    /// Brute force: one cell holding every agent.
    fn one_cell(params: &Params) -> GridShape {
        GridShape {
            dims: [1, 1, 1],
            ncells: 1,
            inv_cell: [0.0; 3],
            wrap: params.wraps() as u32,
        }
    }
}

impl CudaSolver {
    /// `state` in agent order; `rules` the scene's obstacles and species (`Rules::from_scene`).
    pub fn new(
        dev: &Device,
        params: Params,
        rules: &Rules,
        state: State,
        search: Search,
    ) -> Result<Self, CudaError> {
        if let Some(why) = super::super::backend::cpu_only(&params) {
            return Err(CudaError::Unsupported(why));
        }
        let (obs_head, shapes) = rules.obstacles.for_kernels();
        let n = state.n;
        let dim = state.dim;
        let search = choose_search(search, n);
        let err = driver("CUDA");
        let ctx = dev.ctx.clone();
        let stream = ctx.default_stream();
        let copy = ctx.new_stream().map_err(err)?;
        let k = Kernels::load(&dev.module, step_kind(&params, rules, search, dim))?;
        let shape = if search == Search::Grid {
            grid_shape(&params, n)?
        } else {
            GridShape::one_cell(&params)
        };
        let ncells = shape.ncells as usize;
        let nblocks = (ncells as u32).div_ceil(SCAN_BLOCK).max(1) as usize;
        let ids0: Vec<u32> = (0..n as u32).collect();
        let mut start = vec![0u32; ncells + 1];
        start[ncells] = n as u32;
        let len = dim * n;
        let bad_init = stream.clone_htod(&[u64::MAX]).map_err(err)?;
        let shared = Arc::new(Shared {
            free: Mutex::new(Vec::new()),
            returned: Condvar::new(),
            bad: AtomicU64::new(u64::MAX),
            failed: Mutex::new(None),
        });
        let mut frames = Vec::new();
        {
            let mut free = shared.free.lock().unwrap_or_else(|e| e.into_inner());
            for index in 0..IN_FLIGHT {
                let (d, h) = alloc_frame(&ctx, &stream, index, 2 * len.max(1))?;
                frames.push(d);
                free.push(h);
            }
        }
        let s = CudaSolver {
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
            obs_head,
            obs_shapes: obstacle_slots(&stream, &shapes, rules.obstacle_slots).map_err(err)?,
            obs_kernel: rules.obstacle_slots > 0,
            sp: match &rules.species {
                Some(s) => Some(species_dev(&stream, &s.for_kernels()).map_err(err)?),
                None => None,
            },
            timeline: rules.timeline.clone(),
            sp_host: rules.species.clone(),
            frames,
            shared,
            host: state,
            host_ids: ids0,
            diverged: None,
            stream,
            copy,
            k,
            shape,
            dim,
            n,
        };
        Ok(s)
    }

    pub fn n(&self) -> usize {
        self.n
    }

    /// Enqueue one step; never waits for the device. A divergence found by a recorded frame
    /// is returned by the next call.
    pub fn step(&mut self) -> Result<(), Diverged> {
        if let Some(d) = self.diverged {
            return Err(d);
        }
        let bad = self.shared.bad.load(Ordering::Relaxed);
        if bad != u64::MAX {
            let d = Diverged {
                step: bad >> 32,
                agent: (bad & 0xffff_ffff) as usize,
            };
            self.diverged = Some(d);
            return Err(d);
        }
        if let Err(e) = self.apply_timeline().and_then(|()| self.enqueue_step()) {
            // A driver failure mid-run: report it as the CPU reports a broken state.
            log::error!("CUDA: {e}");
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

    /// The timeline's values at this step into `params` (kernel arguments, copied at each
    /// launch) and, where a key changed a species' parameters, chase, flight or presence, into
    /// the device's copies of them (uploads ordered on the step's stream: only on such steps).
    fn apply_timeline(&mut self) -> Result<(), DriverError> {
        let Some(t) = &mut self.timeline else {
            return Ok(());
        };
        let applied = t.apply(self.step, &mut self.params, self.sp_host.as_mut());
        if applied.obstacles {
            // Within the slots allocated for every obstacle the scene lists.
            let (head, shapes) = t.obstacles().for_kernels();
            if !shapes.is_empty() {
                let words: &[u32] = bytemuck::cast_slice(&shapes);
                let mut dst = self.obs_shapes.slice_mut(..words.len());
                self.stream.memcpy_htod(words, &mut dst)?;
            }
            self.obs_head = head;
        }
        if applied.species {
            if let (Some(host), Some(dev)) = (&self.sp_host, &mut self.sp) {
                let bytes: &[u8] = bytemuck::cast_slice(&host.params);
                self.stream.memcpy_htod(bytes, &mut dev.params)?;
                let rows = host.rows();
                let words: &[u32] = bytemuck::cast_slice(&rows);
                self.stream.memcpy_htod(words, &mut dev.rows)?;
                if applied.presence {
                    // An absent species leaves every interaction mask.
                    self.stream.memcpy_htod(&host.mask, &mut dev.mask)?;
                }
            }
        }
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
        let obs = self.obs_kernel;
        if let Some(sp) = &self.sp {
            hunters(
                &self.stream,
                &self.k.hunters,
                sp,
                n,
                self.dim,
                &self.spos,
                &self.next_ids,
                1,
            )?;
        }
        let mut b = self.stream.launch_builder(&self.k.step);
        b.arg(&p)
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
            .arg(&mut self.bad);
        if let Some(sp) = &self.sp {
            species_args(&mut b, sp);
        }
        if obs {
            b.arg(&self.obs_head).arg(&self.obs_shapes);
        }
        // SAFETY: the arguments are the kernel's, in its order (kernels/step.cu); it reads the
        // sorted arrays (and the obs_head.n shapes) and writes slot t of next_pos/next_vel only.
        unsafe { b.launch(cfg(n, BLOCK)) }?;
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
        let vicsek = p.model() == Model::Vicsek;
        let obs = self.obs_kernel;
        if let Some(sp) = &self.sp {
            hunters(
                &self.stream,
                &self.k.hunters,
                sp,
                n,
                self.dim,
                &self.pos,
                &self.ids,
                0,
            )?;
        }
        let vel_src = if vicsek { &self.svel } else { &self.vel };
        let mut b = self.stream.launch_builder(&self.k.step);
        b.arg(&p)
            .arg(&step)
            .arg(&self.pos)
            .arg(vel_src)
            .arg(&self.svfix)
            .arg(&mut self.next_pos)
            .arg(&mut self.next_vel)
            .arg(&mut self.bad);
        if let Some(sp) = &self.sp {
            species_args(&mut b, sp);
        }
        if obs {
            b.arg(&self.obs_head).arg(&self.obs_shapes);
        }
        // SAFETY: the arguments are the kernel's, in its order (kernels/step.cu); it reads all
        // slots (and the obs_head.n shapes) and writes slot s of next_pos/next_vel only.
        unsafe { b.launch(cfg(n, BLOCK)) }?;
        Ok(())
    }

    /// Record the current state: `frame_kernel` puts it in agent order into a free frame
    /// buffer, the copy stream brings that to pinned host memory once the kernel is done, and
    /// `out` gets it as a [`PendingFrame`] at once. Waits only when every frame buffer is
    /// still in flight.
    pub fn record<R: FrameOut>(&mut self, out: &mut R) -> Result<(), RecordError<R::Error>> {
        if self.diverged.is_some() {
            return Ok(());
        }
        let mut host = self.shared.take();
        let r = self.enqueue_frame(&mut host);
        let frame = CudaFrame {
            step: self.step,
            len: self.dim * self.n,
            buf: Some(host),
            shared: self.shared.clone(),
        };
        if let Err(e) = r {
            drop(frame);
            return Err(RecordError::Cuda(CudaError::Driver {
                what: "CUDA copy",
                source: e,
            }));
        }
        out.frame_pending(Box::new(frame)).map_err(RecordError::Out)
    }

    /// The launches and copies of one recorded frame into `host` (and its device twin).
    fn enqueue_frame(&mut self, host: &mut HostFrame) -> Result<(), DriverError> {
        let n = self.n as u32;
        let dim = self.dim as u32;
        let dev = &mut self.frames[host.index];
        // SAFETY: pos, vel hold dim*n values, ids n (a permutation of 0..n), dev.data 2*dim*n,
        // bad and dev.bad one; each thread writes its agent's values only (thread 0 the key).
        // dev.data is not being copied: its host twin was given back, after its copy.
        unsafe {
            self.stream
                .launch_builder(&self.k.frame)
                .arg(&n)
                .arg(&dim)
                .arg(&self.pos)
                .arg(&self.vel)
                .arg(&self.ids)
                .arg(&self.bad)
                .arg(&mut dev.data)
                .arg(&mut dev.bad)
                .launch(cfg(n, BLOCK))?;
        }
        dev.ready.record(&self.stream)?;
        self.copy.wait(&dev.ready)?;
        self.copy.memcpy_dtoh(&dev.data, &mut host.data)?;
        self.copy.memcpy_dtoh(&dev.bad, &mut host.bad)?;
        host.copied.record(&self.copy)
    }

    /// Wait for every queued step, then check the whole run for divergence and for a failed
    /// copy; leaves the final state on the host (see `slots`). Frames still with the sink are
    /// its to finish. On divergence `step` becomes the last good step.
    pub fn finish<R: FrameOut>(
        &mut self,
        _out: &mut R,
    ) -> Result<Option<Diverged>, RecordError<R::Error>> {
        let r = (|| -> Result<(), DriverError> {
            self.stream.synchronize()?;
            self.copy.synchronize()?;
            let mut bad = self.stream.clone_dtoh(&self.bad)?[0];
            bad = bad.min(self.shared.bad.load(Ordering::Relaxed));
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
        let failed = *self.shared.failed.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = failed {
            return Err(RecordError::Cuda(CudaError::Driver {
                what: "CUDA copy",
                source: e,
            }));
        }
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
    /// Replaces the timeline (None: none), from the next step on.
    pub fn set_timeline(&mut self, t: Option<Live>) {
        self.timeline = t;
    }

    pub fn synchronize(&self) -> Result<(), CudaError> {
        self.stream.synchronize().map_err(driver("CUDA"))
    }
}

/// The device's copy of the obstacles: `shapes` in room for `slots` of them (one word at
/// least: the driver refuses an empty allocation).
fn obstacle_slots(
    stream: &Arc<CudaStream>,
    shapes: &[crate::sim::obstacles::ObsShape],
    slots: usize,
) -> Result<CudaSlice<u32>, DriverError> {
    let per = std::mem::size_of::<crate::sim::obstacles::ObsShape>() / 4;
    let mut dev = stream.alloc_zeros::<u32>((slots.max(shapes.len()) * per).max(1))?;
    if !shapes.is_empty() {
        let words: &[u32] = bytemuck::cast_slice(shapes);
        stream.memcpy_htod(words, &mut dev.slice_mut(..words.len()))?;
    }
    Ok(dev)
}

impl Drop for CudaSolver {
    fn drop(&mut self) {
        // The device buffers are freed on the compute stream: nothing may still read them.
        let _ = self.copy.synchronize();
        let _ = self.stream.synchronize();
    }
}
