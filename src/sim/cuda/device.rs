//! The driver and the device: found and opened at run time (libcuda is loaded dynamically), with
//! the kernels compiled for it (or loaded from the cache) and loaded as a module.

use std::panic::catch_unwind;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaModule};

use super::nvrtc::{cubin_for, nvrtc_present};
use super::{driver, CudaError};

/// Whether libcuda (the driver) can be loaded.
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the library.
    catch_unwind(|| unsafe { cudarc::driver::sys::is_culib_present() }).unwrap_or(false)
}

/// A CUDA device ready to run forge's kernels.
pub struct Device {
    pub ctx: Arc<CudaContext>,
    pub name: String,
    pub arch: String,
    pub(super) module: Arc<CudaModule>,
}

/// Find a device, check NVRTC, compile (or load) the kernels. Every failure says what is
/// missing and what to install.
pub fn open_device() -> Result<Device, CudaError> {
    catch_unwind(open_device_inner).unwrap_or(Err(CudaError::DriverPanicked))
}

fn open_device_inner() -> Result<Device, CudaError> {
    if !driver_present() {
        return Err(CudaError::NoDriver);
    }
    cudarc::driver::result::init().map_err(driver("the NVIDIA driver did not start"))?;
    let count = cudarc::driver::result::device::get_count()
        .map_err(driver("the NVIDIA driver cannot count devices"))?;
    if count < 1 {
        return Err(CudaError::NoDevice);
    }
    if !nvrtc_present() {
        return Err(CudaError::NoNvrtcForDevice);
    }
    let ctx = CudaContext::new(0).map_err(driver("cannot open CUDA device 0"))?;
    // SAFETY: no buffer exists yet. forge orders its streams itself (src/sim/cuda/solver.rs
    // says where they meet); cudarc's per-buffer events would cost two driver calls per kernel
    // argument on every launch once a second stream exists.
    unsafe { ctx.disable_event_tracking() };
    let name = ctx.name().unwrap_or_else(|_| "CUDA device".into());
    let (ma, mi) = ctx
        .compute_capability()
        .map_err(driver("cannot query CUDA device 0"))?;
    let arch = format!("sm_{ma}{mi}");
    let cubin = cubin_for(&arch)?;
    let module = ctx
        .load_module(cudarc::nvrtc::Ptx::from_binary(cubin))
        .map_err(|source| CudaError::LoadKernels {
            device: name.clone(),
            arch: arch.clone(),
            source,
        })?;
    Ok(Device {
        ctx,
        name,
        arch,
        module,
    })
}
