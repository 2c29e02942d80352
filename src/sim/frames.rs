//! Where a run's frames go. The solver produces frames; whatever stores them (the `.bfs`
//! recorder in src/record.rs, a test's collector) implements [`FrameOut`], so the solver
//! names no file format and no writer.

use super::cuda::CudaError;
use super::State;

/// A sink for frames: each call hands over the frame of one step, in agent order.
pub trait FrameOut {
    /// Why the sink refused a frame (a full disk, a writer that stopped, ...).
    type Error: std::error::Error + Send + Sync + 'static;

    /// The frame of `step`, written by `fill(pos, vel)` straight into the sink's buffers in
    /// agent order (each `dim × n` floats, component-major, as [`State`]). The CPU solver
    /// un-permutes with all its threads here: no copy in between, no allocation.
    fn frame_with<F>(&mut self, step: u64, fill: F) -> Result<(), Self::Error>
    where
        F: FnOnce(&mut [f32], &mut [f32]);

    /// The frame of `step` given in slot order: `ids[s]` is the agent in slot `s` of `state`;
    /// the sink puts it in agent order (see [`super::cpu::unpermute`]).
    fn frame_slots(&mut self, step: u64, state: &State, ids: &[u32]) -> Result<(), Self::Error>;
}

/// A frame could not be recorded: the sink refused it, or the solver could not produce it.
#[derive(Debug, thiserror::Error)]
pub enum RecordError<E> {
    /// The sink's own error, as it is.
    #[error(transparent)]
    Out(E),
    /// The CUDA backend could not bring the frame to the host.
    #[error(transparent)]
    Cuda(#[from] CudaError),
}
