//! Recorded frames in flight between the CUDA solver and the sink: a device buffer the frame
//! kernel writes, its pinned host twin the copy stream fills, and the frame handed to the sink
//! as a [`PendingFrame`] until the writer gives the buffers back.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaContext, CudaEvent, CudaSlice, CudaStream, DriverError, PinnedHostSlice};

use super::{driver, CudaError};
use crate::sim::PendingFrame;

/// A frame buffer in pinned host memory: a recorded frame in agent order (positions, then
/// velocities), the divergence key as of its step, and the event recorded after the copy into
/// them. `index` names its device twin (`CudaSolver::frames`).
pub(super) struct HostFrame {
    pub(super) index: usize,
    pub(super) data: PinnedHostSlice<f32>,
    pub(super) bad: PinnedHostSlice<u64>,
    pub(super) copied: CudaEvent,
    pub(super) ctx: Arc<CudaContext>,
}

impl Drop for HostFrame {
    fn drop(&mut self) {
        // Freeing pinned memory needs the context current on this thread (the writer's, say).
        let _ = self.ctx.bind_to_thread();
    }
}

/// A recorded frame's device buffers: `frame_kernel` writes them, the copy stream reads them
/// once `ready` (recorded after the kernel) has passed.
pub(super) struct DeviceFrame {
    pub(super) data: CudaSlice<f32>,
    pub(super) bad: CudaSlice<u64>,
    pub(super) ready: CudaEvent,
}

/// What the solver shares with its frames in flight: the free host buffers, and what a frame
/// found while the sink waited for it.
pub(super) struct Shared {
    pub(super) free: Mutex<Vec<HostFrame>>,
    pub(super) returned: Condvar,
    /// The earliest divergence key (step << 32 | agent) a frame found; u64::MAX while none.
    pub(super) bad: AtomicU64,
    /// A copy that failed.
    pub(super) failed: Mutex<Option<DriverError>>,
}

impl Shared {
    /// A free host buffer, waiting for the sink to give one back if all are in flight.
    pub(super) fn take(&self) -> HostFrame {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(f) = free.pop() {
                return f;
            }
            free = self.returned.wait(free).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// A recorded frame on its way to the host; given back to the solver when dropped.
pub(super) struct CudaFrame {
    pub(super) step: u64,
    pub(super) len: usize,
    pub(super) buf: Option<HostFrame>,
    pub(super) shared: Arc<Shared>,
}

impl CudaFrame {
    /// Waits for the copy; whether the frame was reached without divergence.
    fn arrived(&self, f: &HostFrame) -> Result<bool, DriverError> {
        f.copied.synchronize()?;
        let bad = f.bad.as_slice()?[0];
        if bad != u64::MAX && (bad >> 32) <= self.step {
            self.shared.bad.fetch_min(bad, Ordering::Relaxed);
            return Ok(false);
        }
        Ok(true)
    }
}

impl PendingFrame for CudaFrame {
    fn step(&self) -> u64 {
        self.step
    }

    fn wait(&mut self) -> Option<(&[f32], &[f32])> {
        let f = self.buf.as_ref()?;
        match self.arrived(f) {
            Ok(true) => {}
            Ok(false) => return None,
            Err(e) => {
                let mut failed = self.shared.failed.lock().unwrap_or_else(|e| e.into_inner());
                failed.get_or_insert(e);
                return None;
            }
        }
        let data = f.data.as_slice().ok()?;
        Some(data[..2 * self.len].split_at(self.len))
    }
}

impl Drop for CudaFrame {
    fn drop(&mut self) {
        if let Some(f) = self.buf.take() {
            // Never handed over before its copy is done: the buffer may be written again.
            let _ = f.copied.synchronize();
            let mut free = self.shared.free.lock().unwrap_or_else(|e| e.into_inner());
            free.push(f);
            self.shared.returned.notify_one();
        }
    }
}

/// One frame buffer of `len` floats on the device and its pinned host twin.
pub(super) fn alloc_frame(
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    index: usize,
    len: usize,
) -> Result<(DeviceFrame, HostFrame), CudaError> {
    let err = driver("CUDA frame buffers");
    let dev = DeviceFrame {
        data: stream.alloc_zeros(len).map_err(err)?,
        bad: stream.alloc_zeros(1).map_err(err)?,
        ready: ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING))
            .map_err(err)?,
    };
    // SAFETY: every element is written by a copy before it is read (after `copied`).
    // Flags 0: ordinary (not write-combined) pinned memory, which the host reads fast.
    let (data, bad) = unsafe {
        (
            ctx.alloc_pinned_with_flags(len, 0).map_err(err)?,
            ctx.alloc_pinned_with_flags(1, 0).map_err(err)?,
        )
    };
    let host = HostFrame {
        index,
        data,
        bad,
        // The writer thread sleeps on it rather than spin a core.
        copied: ctx
            .new_event(Some(CUevent_flags::CU_EVENT_BLOCKING_SYNC))
            .map_err(err)?,
        ctx: ctx.clone(),
    };
    Ok((dev, host))
}
