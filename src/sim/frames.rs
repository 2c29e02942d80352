//! Where a run's frames go. The solver produces frames; whatever stores them (the `.bfs`
//! recorder in src/record.rs, a test's collector) implements [`FrameOut`], so the solver
//! names no file format and no writer.
//!
//! A frame comes in one of two ways: written by the solver straight into the sink's buffers
//! ([`FrameOut::frame_with`], the CPU backend), or as a [`PendingFrame`] still on its way from
//! the device ([`FrameOut::frame_pending`], the CUDA backend), which a sink with a thread of its
//! own waits for there, off the step loop.

use super::cuda::CudaError;

/// A frame on its way to the host, already in agent order (the GPU puts it there): the sink
/// waits for it where it uses it. Dropping it (used or not) gives its buffers back to the
/// solver, whose step loop waits for free buffers only when every one is in flight.
pub trait PendingFrame: Send {
    /// The step the frame was taken at.
    fn step(&self) -> u64;

    /// Waits until the frame is on the host; its positions and velocities (each `dim × n`
    /// floats, component-major, agent order), or `None` when the frame is not part of the
    /// recording: the run diverged at or before its step, or the device failed. The solver
    /// reports which at its next step or at `finish`.
    fn wait(&mut self) -> Option<(&[f32], &[f32])>;
}

/// A sink for frames: each call hands over the frame of one step, in agent order.
pub trait FrameOut {
    /// Why the sink refused a frame (a full disk, a writer that stopped, ...).
    type Error: std::error::Error + Send + Sync + 'static;

    /// The frame of `step`, written by `fill(pos, vel)` straight into the sink's buffers in
    /// agent order (each `dim × n` floats, component-major, as [`super::State`]). The CPU
    /// solver un-permutes with all its threads here: no copy in between, no allocation.
    fn frame_with<F>(&mut self, step: u64, fill: F) -> Result<(), Self::Error>
    where
        F: FnOnce(&mut [f32], &mut [f32]);

    /// A frame still on its way from the device. By default the sink waits for it here and
    /// copies it in through [`FrameOut::frame_with`]; the recorder instead hands it to its
    /// writer thread, so the step loop never waits for a copy.
    fn frame_pending(&mut self, mut frame: Box<dyn PendingFrame>) -> Result<(), Self::Error> {
        let step = frame.step();
        match frame.wait() {
            Some((p, v)) => self.frame_with(step, |pos, vel| {
                pos.copy_from_slice(p);
                vel.copy_from_slice(v);
            }),
            None => Ok(()),
        }
    }
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
