//! Frames in: a reader thread keeps a few frames ahead; frames are recycled, so memory stays
//! flat however long the recording.
//!
//! A frame with a position or velocity that is not a finite number (NaN, ±infinity) stops the
//! render, naming the frame, the agent and the value: forge's solver never records one, and a
//! NaN agent would be drawn nowhere (or its colour computed from NaN) without a word.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use anyhow::{anyhow, Context, Result};

use crate::bfs::{Frame, Reader};

/// Frames read ahead of the renderer.
const READ_AHEAD: usize = 4;

pub struct FrameSource {
    rx: Receiver<Result<Frame>>,
    recycle: SyncSender<Frame>,
    thread: Option<JoinHandle<()>>,
}

impl FrameSource {
    /// Reads `frames` of `reader` on a thread, a few ahead of the renderer.
    pub fn start(mut reader: Reader, frames: std::ops::Range<u64>) -> Result<FrameSource> {
        let dim = usize::from(reader.header().dim);
        let (tx, rx) = sync_channel::<Result<Frame>>(READ_AHEAD);
        let (recycle, free) = sync_channel::<Frame>(READ_AHEAD + 4);
        let thread = std::thread::Builder::new()
            .name("forge frame reader".into())
            .spawn(move || {
                for k in frames {
                    let mut f = free.try_recv().unwrap_or_default();
                    let r = match reader.read_frame_into(k, &mut f) {
                        Err(e) => Err(anyhow!("frame {k}: {e}")),
                        Ok(()) => match f.non_finite(dim) {
                            Some(bad) => Err(anyhow!(
                                "frame {k}: {bad}: forge's solver never records one, so the \
                                 recording is damaged or was written by another program"
                            )),
                            None => Ok(f),
                        },
                    };
                    let stop = r.is_err();
                    if tx.send(r).is_err() || stop {
                        return;
                    }
                }
            })
            .context("cannot start the frame reader thread")?;
        Ok(FrameSource {
            rx,
            recycle,
            thread: Some(thread),
        })
    }

    pub fn give_back(&self, f: Frame) {
        let _ = self.recycle.try_send(f);
    }
}

impl Iterator for FrameSource {
    type Item = Result<Frame>;

    /// The next frame, `None` at the end.
    fn next(&mut self) -> Option<Result<Frame>> {
        self.rx.recv().ok()
    }
}

impl Drop for FrameSource {
    fn drop(&mut self) {
        // Unblock the reader (its sends fail once rx is gone), then join it.
        let (_, dead) = sync_channel(1);
        drop(std::mem::replace(&mut self.rx, dead));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
