//! Frames back from the GPU through a ring of staging buffers: while frame k is being mapped
//! and copied out, frame k+1 is already rendering (and frame k−1 is being encoded on the
//! sink's thread).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, Result};

/// Staging buffers in the ring.
pub const RING: usize = 3;

type MapResult = Arc<Mutex<Option<Result<(), wgpu::BufferAsyncError>>>>;

struct InFlight {
    slot: usize,
    submission: wgpu::SubmissionIndex,
    mapped: MapResult,
}

pub struct Readback {
    buffers: Vec<wgpu::Buffer>,
    in_flight: VecDeque<InFlight>,
    next: usize,
}

impl Readback {
    pub fn new(device: &wgpu::Device, bytes: u64) -> Self {
        let buffers = (0..RING)
            .map(|_| {
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("readback staging"),
                    size: bytes,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                })
            })
            .collect();
        Readback {
            buffers,
            in_flight: VecDeque::new(),
            next: 0,
        }
    }

    /// True when every buffer holds a frame not yet taken: call [`Readback::take_oldest`].
    pub fn full(&self) -> bool {
        self.in_flight.len() == RING
    }

    pub fn pending(&self) -> usize {
        self.in_flight.len()
    }

    /// The buffer the next frame is copied into (the ring must not be full).
    pub fn next_buffer(&self) -> &wgpu::Buffer {
        debug_assert!(!self.full());
        &self.buffers[self.next]
    }

    /// The next buffer's copy was submitted as `submission`: start mapping it.
    pub fn submitted(&mut self, submission: wgpu::SubmissionIndex) {
        let slot = self.next;
        let mapped: MapResult = Arc::new(Mutex::new(None));
        let m = mapped.clone();
        self.buffers[slot]
            .slice(..)
            .map_async(wgpu::MapMode::Read, move |r| {
                *m.lock().unwrap() = Some(r);
            });
        self.in_flight.push_back(InFlight {
            slot,
            submission,
            mapped,
        });
        self.next = (self.next + 1) % RING;
    }

    /// Waits for the oldest frame and hands its bytes to `f`.
    pub fn take_oldest<T>(
        &mut self,
        device: &wgpu::Device,
        f: impl FnOnce(&[u8]) -> T,
    ) -> Result<T> {
        let job = self
            .in_flight
            .pop_front()
            .ok_or_else(|| anyhow!("no frame in flight"))?;
        loop {
            if let Some(r) = job.mapped.lock().unwrap().take() {
                r.map_err(|e| anyhow!("reading a frame back from the GPU: {e}"))?;
                break;
            }
            device
                .poll(wgpu::PollType::Wait {
                    submission_index: Some(job.submission.clone()),
                    timeout: None,
                })
                .map_err(|e| anyhow!("waiting for the GPU: {e}"))?;
        }
        let buf = &self.buffers[job.slot];
        let out = {
            let view = buf
                .slice(..)
                .get_mapped_range()
                .map_err(|e| anyhow!("reading a frame back from the GPU: {e}"))?;
            f(&view)
        };
        buf.unmap();
        Ok(out)
    }
}
