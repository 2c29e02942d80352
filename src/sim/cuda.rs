//! The CUDA backend: kernels in `kernels/*.cu` (embedded), compiled at first use by NVRTC for the
//! device present (`--fmad=false`), cached as CUBIN under `$XDG_CACHE_HOME/forge`, and run
//! through cudarc. The driver and NVRTC are loaded at run time, so forge builds and runs where
//! no CUDA is installed; a missing driver, device or NVRTC is an error value, never a panic.
//!
//! The kernels mirror the CPU step (src/sim/cpu.rs, src/sim/math.rs) function by function; the
//! per-agent arithmetic lives in `kernels/forge_math.h`, which tests/kernels_host.rs also builds
//! as host C++ and checks byte for byte against the Rust functions and against whole CPU steps.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::Arc;

use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DeviceRepr, LaunchConfig,
    PinnedHostSlice, PushKernelArg,
};

use super::cpu::{choose_search, CpuSolver};
use super::grid::Grid;
use super::{Diverged, Params, State};
use crate::record::Recorder;
use crate::scene::{Model, Search};

/// The per-agent arithmetic (`__host__ __device__`), shared with the host test build.
pub const MATH_H: &str = include_str!("../../kernels/forge_math.h");
/// The step's kernels.
pub const STEP_CU: &str = include_str!("../../kernels/step.cu");

/// NVRTC options besides the architecture. `--fmad=false` is the contract (no FMA contraction);
/// the rest spell out NVRTC's defaults so that nobody can flip them to fast math unnoticed.
pub const NVRTC_OPTIONS: &[&str] = &[
    "--fmad=false",
    "--prec-div=true",
    "--prec-sqrt=true",
    "--ftz=false",
    "--std=c++17",
];

/// Threads per block of the per-agent kernels (`BLOCK` in step.cu) and of the scan
/// (`SCAN_BLOCK`).
pub const BLOCK: u32 = 256;
pub const SCAN_BLOCK: u32 = 1024;

/// What to install, for the error messages.
pub const INSTALL_NVRTC: &str =
    "install NVRTC (e.g. `pip install nvidia-cuda-nvrtc` and put its lib folder on LD_LIBRARY_PATH, or the CUDA toolkit)";

/// The whole kernel source as NVRTC sees it: step.cu with forge_math.h pasted in place of its
/// `#include` (NVRTC has no file system to read it from).
pub fn kernel_source() -> String {
    STEP_CU.replacen("#include \"forge_math.h\"", MATH_H, 1)
}

/// The grid's shape as the kernels take it; identical in layout to `struct GridShape` in
/// kernels/forge_math.h (keep in sync).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct GridShape {
    pub dims: [u32; 3],
    pub ncells: u32,
    pub inv_cell: [f32; 3],
    pub wrap: u32,
}

// SAFETY: plain #[repr(C)] data, declared identically in kernels/forge_math.h.
unsafe impl DeviceRepr for GridShape {}
// SAFETY: Params is #[repr(C)], declared identically in kernels/forge_math.h (96 bytes).
unsafe impl DeviceRepr for Params {}

/// The CPU's grid sizing rule (src/sim/grid.rs `Grid::new`), for the kernels.
pub fn grid_shape(p: &Params, n: usize) -> Result<GridShape, String> {
    let g = Grid::new(p, n)?;
    Ok(GridShape {
        dims: [g.dims[0] as u32, g.dims[1] as u32, g.dims[2] as u32],
        ncells: g.ncells as u32,
        inv_cell: g.inv_cell,
        wrap: p.wraps() as u32,
    })
}

/// Whether libnvrtc can be loaded.
pub fn nvrtc_present() -> bool {
    // SAFETY: only tries to dlopen the library.
    catch_unwind(|| unsafe { cudarc::nvrtc::sys::is_culib_present() }).unwrap_or(false)
}

/// Whether libcuda (the driver) can be loaded.
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the library.
    catch_unwind(|| unsafe { cudarc::driver::sys::is_culib_present() }).unwrap_or(false)
}

/// A compiled kernel image and NVRTC's log (empty when there was nothing to say).
pub struct Compiled {
    pub cubin: Vec<u8>,
    pub log: String,
}

/// Compile the kernels with NVRTC for `arch` (e.g. "sm_90") to CUBIN. Warnings are in `log`.
pub fn compile(arch: &str) -> Result<Compiled, String> {
    if !nvrtc_present() {
        return Err(format!("NVRTC (libnvrtc) was not found: {INSTALL_NVRTC}"));
    }
    let src = kernel_source();
    catch_unwind(AssertUnwindSafe(|| compile_inner(&src, arch)))
        .unwrap_or_else(|_| Err("NVRTC failed (a function was missing from libnvrtc?)".into()))
}

fn compile_inner(src: &str, arch: &str) -> Result<Compiled, String> {
    use cudarc::nvrtc::{result, sys};
    use std::ffi::{CStr, CString};
    let csrc = CString::new(src).map_err(|_| "kernel source contains a NUL byte".to_string())?;
    let name = CString::new("forge_step.cu").expect("no NUL");
    let prog = result::create_program(&csrc, Some(&name)).map_err(|e| format!("NVRTC: {e:?}"))?;
    let mut opts: Vec<String> = NVRTC_OPTIONS.iter().map(|s| s.to_string()).collect();
    opts.push(format!("--gpu-architecture={arch}"));
    // SAFETY: prog was created above and is destroyed once, below.
    let compiled = unsafe { result::compile_program(prog, &opts) };
    let log = unsafe { result::get_program_log(prog) }
        .map(|raw| {
            // SAFETY: NVRTC's log is NUL-terminated.
            unsafe { CStr::from_ptr(raw.as_ptr()) }
                .to_string_lossy()
                .trim()
                .to_string()
        })
        .unwrap_or_default();
    let out = match compiled {
        Err(e) => Err(format!(
            "NVRTC could not compile the kernels for {arch} ({e:?}):\n{log}"
        )),
        Ok(()) => {
            let mut size = 0usize;
            // SAFETY: prog compiled successfully; the buffer has the size NVRTC reports.
            unsafe {
                let r = sys::nvrtcGetCUBINSize(prog, &mut size);
                if r != sys::nvrtcResult::NVRTC_SUCCESS {
                    Err(format!("NVRTC: no CUBIN for {arch} ({r:?})"))
                } else {
                    let mut cubin = vec![0u8; size];
                    let r = sys::nvrtcGetCUBIN(prog, cubin.as_mut_ptr() as *mut _);
                    if r != sys::nvrtcResult::NVRTC_SUCCESS {
                        Err(format!("NVRTC: no CUBIN for {arch} ({r:?})"))
                    } else {
                        Ok(Compiled { cubin, log })
                    }
                }
            }
        }
    };
    // SAFETY: prog is not used after this.
    let _ = unsafe { result::destroy_program(prog) };
    out
}

/// FNV-1a, 64 bits: the cache key of (source, arch, options, NVRTC version).
fn fnv64(parts: &[&[u8]]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for p in parts {
        for &b in p.iter().chain([0xffu8].iter()) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

fn nvrtc_version() -> String {
    let (mut a, mut b) = (0i32, 0i32);
    // SAFETY: two out-pointers to locals.
    let ok = catch_unwind(AssertUnwindSafe(|| unsafe {
        cudarc::nvrtc::sys::nvrtcVersion(&mut a, &mut b)
    }))
    .is_ok();
    if ok {
        format!("{a}.{b}")
    } else {
        "?".into()
    }
}

fn cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d).join("forge"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("forge"))
}

/// The kernels for `arch`, from the cache or compiled (and cached, best effort).
pub fn cubin_for(arch: &str) -> Result<Vec<u8>, String> {
    let src = kernel_source();
    let key = fnv64(&[
        src.as_bytes(),
        arch.as_bytes(),
        NVRTC_OPTIONS.join(" ").as_bytes(),
        nvrtc_version().as_bytes(),
    ]);
    let path = cache_dir().map(|d| d.join(format!("step-{arch}-{key:016x}.cubin")));
    if let Some(p) = &path {
        if let Ok(b) = std::fs::read(p) {
            if !b.is_empty() {
                return Ok(b);
            }
        }
    }
    let c = compile(arch)?;
    if let Some(p) = &path {
        if let Some(dir) = p.parent() {
            if std::fs::create_dir_all(dir).is_ok() {
                let tmp = p.with_extension(format!("tmp{}", std::process::id()));
                if std::fs::write(&tmp, &c.cubin).is_ok() {
                    let _ = std::fs::rename(&tmp, p);
                }
            }
        }
    }
    Ok(c.cubin)
}

/// A CUDA device ready to run forge's kernels.
pub struct Device {
    pub ctx: Arc<CudaContext>,
    pub name: String,
    pub arch: String,
    module: Arc<CudaModule>,
}

/// Find a device, check NVRTC, compile (or load) the kernels. Every failure is a message that
/// says what is missing and what to install.
pub fn open_device() -> Result<Device, String> {
    catch_unwind(open_device_inner)
        .unwrap_or_else(|_| Err("the CUDA driver failed unexpectedly (is it too old?)".into()))
}

fn open_device_inner() -> Result<Device, String> {
    if !driver_present() {
        return Err(
            "no NVIDIA driver (libcuda.so) was found: the CUDA backend needs an NVIDIA GPU and its driver"
                .into(),
        );
    }
    cudarc::driver::result::init().map_err(|e| format!("the NVIDIA driver did not start: {e}"))?;
    let count = cudarc::driver::result::device::get_count()
        .map_err(|e| format!("the NVIDIA driver cannot count devices: {e}"))?;
    if count < 1 {
        return Err("the NVIDIA driver is installed but reports no CUDA device".into());
    }
    if !nvrtc_present() {
        return Err(format!(
            "a CUDA device is present but NVRTC (libnvrtc) was not found: {INSTALL_NVRTC}"
        ));
    }
    let ctx = CudaContext::new(0).map_err(|e| format!("cannot open CUDA device 0: {e}"))?;
    let name = ctx.name().unwrap_or_else(|_| "CUDA device".into());
    let (ma, mi) = ctx
        .compute_capability()
        .map_err(|e| format!("cannot query CUDA device 0: {e}"))?;
    let arch = format!("sm_{ma}{mi}");
    let cubin = cubin_for(&arch)?;
    let module = ctx
        .load_module(cudarc::nvrtc::Ptx::from_binary(cubin))
        .map_err(|e| {
            format!(
                "cannot load the kernels on {name} ({arch}): {e} (is NVRTC newer than the driver?)"
            )
        })?;
    Ok(Device {
        ctx,
        name,
        arch,
        module,
    })
}

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
    fn load(m: &Arc<CudaModule>) -> Result<Kernels, String> {
        let f = |name: &str| {
            m.load_function(name)
                .map_err(|e| format!("kernel {name} is missing: {e}"))
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

/// Frames in flight between the device and the recorder.
const IN_FLIGHT: usize = 2;

impl CudaSolver {
    /// `state` in agent order.
    pub fn new(dev: &Device, params: Params, state: State, search: Search) -> Result<Self, String> {
        let n = state.n;
        let dim = state.dim;
        let search = choose_search(search, n);
        let err = |e: cudarc::driver::DriverError| format!("CUDA: {e}");
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

    fn alloc_pending(&self) -> Result<Pending, String> {
        let err = |e: cudarc::driver::DriverError| format!("CUDA pinned memory: {e}");
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

    fn enqueue_step(&mut self) -> Result<(), cudarc::driver::DriverError> {
        let p = self.params;
        let n = self.n as u32;
        let dim = self.dim as u32;
        let step = self.step;
        let st = &self.stream;
        let vicsek = p.model() == Model::Vicsek;
        let units = vicsek as u32;
        if self.search == Search::Grid {
            let g = self.shape;
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
            let nc = g.ncells;
            let nb = nc.div_ceil(SCAN_BLOCK).max(1);
            // SAFETY: cell_start has ncells + 1 entries (the last fixed at n), block_sums nb.
            unsafe {
                st.launch_builder(&self.k.scan_blocks)
                    .arg(&self.counts)
                    .arg(&mut self.cell_start)
                    .arg(&mut self.block_sums)
                    .arg(&nc)
                    .launch(LaunchConfig {
                        grid_dim: (nb, 1, 1),
                        block_dim: (SCAN_BLOCK, 1, 1),
                        shared_mem_bytes: 0,
                    })?;
                st.launch_builder(&self.k.scan_sums)
                    .arg(&mut self.block_sums)
                    .arg(&nb)
                    .launch(LaunchConfig {
                        grid_dim: (1, 1, 1),
                        block_dim: (SCAN_BLOCK, 1, 1),
                        shared_mem_bytes: 0,
                    })?;
                st.launch_builder(&self.k.scan_add)
                    .arg(&mut self.cell_start)
                    .arg(&self.block_sums)
                    .arg(&nc)
                    .launch(LaunchConfig {
                        grid_dim: (nb, 1, 1),
                        block_dim: (SCAN_BLOCK, 1, 1),
                        shared_mem_bytes: 0,
                    })?;
            }
            // SAFETY: as above; slot t = cell_start[c] + rank[s] is a permutation of 0..n.
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
            let f = match (vicsek, dim) {
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
            std::mem::swap(&mut self.ids, &mut self.next_ids);
        } else {
            // SAFETY: writes slot s of svel (units) and svfix only.
            unsafe {
                st.launch_builder(&self.k.build_brute)
                    .arg(&n)
                    .arg(&dim)
                    .arg(&units)
                    .arg(&self.vel)
                    .arg(&mut self.svel)
                    .arg(&mut self.svfix)
                    .launch(cfg(n, BLOCK))?;
            }
            let f = match (vicsek, dim) {
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
        }
        std::mem::swap(&mut self.pos, &mut self.next_pos);
        std::mem::swap(&mut self.vel, &mut self.next_vel);
        Ok(())
    }

    /// Start copying the current state (slot order, ids, divergence flag) to pinned host
    /// memory on the copy stream, and hand every finished frame to the recorder. The step loop
    /// waits only when IN_FLIGHT frames are still on their way.
    pub fn record(&mut self, rec: &mut Recorder) -> Result<(), crate::bfs::BfsError> {
        if self.diverged.is_some() {
            return Ok(());
        }
        let mut slot = match self.spare.pop() {
            Some(s) => s,
            None => self.alloc_pending().map_err(io_err)?,
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
        r.map_err(|e| io_err(format!("CUDA copy: {e}")))?;
        self.pending.push_back(slot);
        while self.pending.len() > IN_FLIGHT {
            self.hand_over_oldest(rec)?;
        }
        Ok(())
    }

    /// Wait for the oldest frame, check it was reached without divergence, give it to `rec`.
    fn hand_over_oldest(&mut self, rec: &mut Recorder) -> Result<(), crate::bfs::BfsError> {
        let Some(f) = self.pending.pop_front() else {
            return Ok(());
        };
        let r = (|| -> Result<(), cudarc::driver::DriverError> {
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
        r.map_err(|e| io_err(format!("CUDA copy: {e}")))?;
        if handed {
            rec.record(step, &self.host, &self.host_ids)?;
        }
        Ok(())
    }

    /// Hand over every frame still in flight, then check the whole run for divergence; leaves
    /// the last state on the host (see `slots`). On divergence `step` becomes the last good step.
    pub fn finish(&mut self, rec: &mut Recorder) -> Result<Option<Diverged>, crate::bfs::BfsError> {
        while !self.pending.is_empty() {
            self.hand_over_oldest(rec)?;
        }
        let r = (|| -> Result<(), cudarc::driver::DriverError> {
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
        r.map_err(|e| io_err(format!("CUDA: {e}")))?;
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
    pub fn state(&mut self) -> Result<State, String> {
        let err = |e: cudarc::driver::DriverError| format!("CUDA: {e}");
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
        super::cpu::unpermute(&slots, &ids, &mut st.pos, &mut st.vel);
        Ok(st)
    }

    /// Wait for every queued step (for timing).
    pub fn synchronize(&self) -> Result<(), String> {
        self.stream.synchronize().map_err(|e| format!("CUDA: {e}"))
    }
}

fn io_err(msg: impl Into<String>) -> crate::bfs::BfsError {
    crate::bfs::BfsError::Io(std::io::Error::other(msg.into()))
}

/// `--backend` resolved: which solver a run uses.
pub enum Chosen {
    Cpu,
    Cuda(Device),
}

/// Resolve `--backend`: `require` (cuda) fails with the reason; `auto` falls back to the CPU
/// with a one-line note (unless `quiet`).
/// Whether the CUDA backend has passed `scripts/gpu-check.sh` (byte-identical to the CPU on
/// every built-in scene) on real hardware. Until it has, `--backend auto` keeps to the CPU:
/// the determinism contract matters more than speed. `--backend cuda` runs it regardless.
pub const CUDA_VERIFIED: bool = false;

pub fn choose(require: bool, auto: bool, quiet: bool) -> Result<Chosen, String> {
    if !require && !auto {
        return Ok(Chosen::Cpu);
    }
    if auto && !require && !CUDA_VERIFIED {
        if !quiet {
            eprintln!("note: using the CPU backend (the CUDA backend is not yet verified on a GPU: --backend cuda tries it)");
        }
        return Ok(Chosen::Cpu);
    }
    match open_device() {
        Ok(d) => {
            if !quiet {
                eprintln!("note: CUDA backend on {} ({})", d.name, d.arch);
            }
            Ok(Chosen::Cuda(d))
        }
        Err(e) if require => Err(format!("--backend cuda: {e}")),
        Err(e) => {
            if !quiet {
                eprintln!("note: using the CPU backend ({e})");
            }
            Ok(Chosen::Cpu)
        }
    }
}

/// One solver of either backend, with the surface the `simulate` loop uses (the same fields
/// and methods as `CpuSolver`, plus `record` and `finish`).
pub struct AnySolver {
    /// Steps done so far.
    pub step: u64,
    pub search: Search,
    inner: Inner,
}

// One of each per run: the size difference does not matter.
#[allow(clippy::large_enum_variant)]
enum Inner {
    Cpu(CpuSolver),
    Cuda(Box<CudaSolver>),
}

impl AnySolver {
    pub fn new(
        chosen: &Chosen,
        params: Params,
        state: State,
        threads: usize,
        search: Search,
    ) -> Result<AnySolver, String> {
        let inner = match chosen {
            Chosen::Cpu => Inner::Cpu(CpuSolver::new(params, state, threads, search)?),
            Chosen::Cuda(d) => Inner::Cuda(Box::new(CudaSolver::new(d, params, state, search)?)),
        };
        let mut s = AnySolver {
            step: 0,
            search,
            inner,
        };
        s.sync();
        Ok(s)
    }

    fn sync(&mut self) {
        (self.step, self.search) = match &self.inner {
            Inner::Cpu(s) => (s.step, s.search),
            Inner::Cuda(s) => (s.step, s.search),
        };
    }

    pub fn is_cuda(&self) -> bool {
        matches!(self.inner, Inner::Cuda(_))
    }

    pub fn step(&mut self) -> Result<(), Diverged> {
        let r = match &mut self.inner {
            Inner::Cpu(s) => s.step(),
            Inner::Cuda(s) => s.step(),
        };
        self.sync();
        r
    }

    /// Threads of the CPU backend; 0 on CUDA.
    pub fn threads(&self) -> usize {
        match &self.inner {
            Inner::Cpu(s) => s.threads(),
            Inner::Cuda(_) => 0,
        }
    }

    /// Record the current state as the frame of the current step (CUDA: asynchronously).
    pub fn record(&mut self, rec: &mut Recorder) -> Result<(), crate::bfs::BfsError> {
        match &mut self.inner {
            Inner::Cpu(s) => s.record(rec),
            Inner::Cuda(s) => s.record(rec),
        }
    }

    /// Flush frames in flight (CUDA); a divergence found only now is returned, and `step` is
    /// then the last good step.
    pub fn finish(&mut self, rec: &mut Recorder) -> Result<Option<Diverged>, crate::bfs::BfsError> {
        let r = match &mut self.inner {
            Inner::Cpu(_) => Ok(None),
            Inner::Cuda(s) => s.finish(rec),
        };
        self.sync();
        r
    }

    /// The state in slot order (CUDA: as of `finish`).
    pub fn slots(&self) -> (&State, &[u32]) {
        match &self.inner {
            Inner::Cpu(s) => s.slots(),
            Inner::Cuda(s) => s.slots(),
        }
    }
}
