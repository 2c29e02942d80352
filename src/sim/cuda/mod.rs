//! The CUDA backend: kernels in `kernels/*.cu` (embedded), compiled at first use by NVRTC for the
//! device present (`--fmad=false`), cached as CUBIN under `$XDG_CACHE_HOME/forge`, and run
//! through cudarc. The driver and NVRTC are loaded at run time, so forge builds and runs where
//! no CUDA is installed; a missing driver, device or NVRTC is an error value, never a panic.
//!
//! The kernels mirror the CPU step (src/sim/cpu.rs, src/sim/math.rs) function by function; the
//! per-agent arithmetic lives in `kernels/forge_math.h`, which tests/kernels_host.rs also builds
//! as host C++ and checks byte for byte against the Rust functions and against whole CPU steps.
//!
//! - `nvrtc`: the kernel source, NVRTC's options, compilation and the CUBIN cache;
//! - `device`: the driver, the device and its loaded kernels;
//! - `solver`: [`CudaSolver`], the step on the device and frames to the host.

mod device;
mod inflight;
mod kernels;
mod nvrtc;
mod solver;

use cudarc::driver::{DeviceRepr, DriverError};
use cudarc::nvrtc::result::NvrtcError;
use cudarc::nvrtc::sys::nvrtcResult;

pub use device::{driver_present, open_device, Device};
pub use kernels::{BLOCK, SCAN_BLOCK};
pub use nvrtc::{
    compile, cubin_for, kernel_source, nvrtc_present, Compiled, INSTALL_NVRTC, MATH_H,
    NVRTC_OPTIONS, STEP_CU,
};
pub use solver::CudaSolver;

/// Largest topological k (`scene.boids.neighbours.k`) the kernels take: each thread keeps its
/// k best candidates in local memory (`TOPO_K_MAX` in kernels/forge_math.h; the backend's
/// refusal message names the figure).
pub const TOPO_K_MAX: u32 = 64;

use super::grid::Grid;
use super::{AllocError, Params};

/// Why the CUDA backend cannot run, or stopped. The messages say what is missing and what to
/// install; a failed driver or NVRTC call carries the library's error as its source.
#[derive(Debug, thiserror::Error)]
pub enum CudaError {
    #[error("no NVIDIA driver (libcuda.so) was found: the CUDA backend needs an NVIDIA GPU and its driver")]
    NoDriver,
    #[error("the NVIDIA driver is installed but reports no CUDA device")]
    NoDevice,
    /// NVRTC is needed to compile the kernels and cannot be loaded.
    #[error("NVRTC (libnvrtc) was not found: {INSTALL_NVRTC}")]
    NoNvrtc,
    /// As `NoNvrtc`, found while opening a device.
    #[error("a CUDA device is present but NVRTC (libnvrtc) was not found: {INSTALL_NVRTC}")]
    NoNvrtcForDevice,
    /// A driver call failed; `what` says which.
    #[error("{what}")]
    Driver {
        what: &'static str,
        #[source]
        source: DriverError,
    },
    /// The driver refused the compiled kernels.
    #[error("cannot load the kernels on {device} ({arch}); is NVRTC newer than the driver?")]
    LoadKernels {
        device: String,
        arch: String,
        #[source]
        source: DriverError,
    },
    /// The module lacks a kernel the solver launches.
    #[error("kernel {name} is missing")]
    MissingKernel {
        name: String,
        #[source]
        source: DriverError,
    },
    /// NVRTC rejected the kernels; `log` is its compile log.
    #[error("NVRTC could not compile the kernels for {arch}:\n{log}")]
    Compile {
        arch: String,
        log: String,
        #[source]
        source: NvrtcError,
    },
    #[error("NVRTC could not create the program")]
    CreateProgram(#[source] NvrtcError),
    #[error("NVRTC: no CUBIN for {arch} ({result:?})")]
    NoCubin { arch: String, result: nvrtcResult },
    #[error("kernel source contains a NUL byte")]
    SourceNul(#[source] std::ffi::NulError),
    /// A function was missing from libnvrtc (cudarc panics on those).
    #[error("NVRTC failed (a function was missing from libnvrtc?)")]
    NvrtcPanicked,
    /// The driver library misbehaved (cudarc panics on missing functions).
    #[error("the CUDA driver failed unexpectedly (is it too old?)")]
    DriverPanicked,
    #[error(transparent)]
    Alloc(#[from] AllocError),
    /// The scene asks for something the kernels do not implement (see `backend::cpu_only`).
    #[error("{0} (use --backend cpu)")]
    Unsupported(&'static str),
}

/// `map_err` for a failed driver call: `what` says which.
fn driver(what: &'static str) -> impl Fn(DriverError) -> CudaError + Copy {
    move |source| CudaError::Driver { what, source }
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
// SAFETY: Params is #[repr(C)], declared identically in kernels/forge_math.h (160 bytes).
unsafe impl DeviceRepr for Params {}
// SAFETY: ObsHead is #[repr(C)] of five 4-byte fields, declared identically in
// kernels/forge_math.h (20 bytes; tests/kernels_host.rs checks the layout).
unsafe impl DeviceRepr for crate::sim::obstacles::ObsHead {}
// SAFETY: SpeciesHead is #[repr(C)] of three u32, declared identically in kernels/forge_math.h
// (12 bytes; tests/kernels_host.rs checks the layout).
unsafe impl DeviceRepr for crate::sim::species::SpeciesHead {}

/// The CPU's grid sizing rule (src/sim/grid.rs `Grid::new`), for the kernels.
pub fn grid_shape(p: &Params, n: usize) -> Result<GridShape, AllocError> {
    let g = Grid::new(p, n)?;
    Ok(GridShape {
        dims: [g.dims[0] as u32, g.dims[1] as u32, g.dims[2] as u32],
        ncells: g.ncells as u32,
        inv_cell: g.inv_cell,
        wrap: p.wraps() as u32,
    })
}
