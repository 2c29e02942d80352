//! The agents a frame shows: those there at its step. A recording whose timeline takes a
//! species out of the world keeps its agents in every frame ([`Frame::absent`] names them);
//! the renderer draws the others, each with its own species value and size.

use std::borrow::Cow;

use super::Renderer;
use crate::bfs::{present_of, Frame};

impl Renderer {
    /// Each agent's species index (agent order), for `--color species`: the value the palette
    /// is read at.
    pub fn set_species(&mut self, ids: &[u8]) {
        self.species_values = ids.iter().map(|&i| i as f32 / 255.0).collect();
        self.buffers_absent.clear();
        self.species = Some(self.per_agent("species values", &self.species_values));
    }

    /// Each agent's sprite size as a multiple of the look's point size (agent order; its
    /// species' `render.size`). Every sprite is drawn at the point size when all are 1.
    pub fn set_sizes(&mut self, sizes: &[f32]) {
        let sized = !sizes.iter().all(|&s| s == 1.0);
        self.size_values = if sized { sizes.to_vec() } else { Vec::new() };
        self.buffers_absent.clear();
        self.sizes = sized.then(|| self.per_agent("sprite sizes", sizes));
        self.smallest_size = match self.sizes {
            Some(_) => sizes.iter().copied().fold(f32::INFINITY, f32::min),
            None => 1.0,
        };
    }

    /// `frame` as drawn: the agents there at its step (a copy where some are absent), with
    /// the per-agent buffers made for those agents.
    pub(super) fn shown<'a>(&mut self, frame: &'a Frame) -> Cow<'a, Frame> {
        if frame.absent != self.buffers_absent {
            let absent = &frame.absent;
            if self.species.is_some() {
                let v: Vec<f32> = present_of(absent, &self.species_values).collect();
                self.species = Some(self.per_agent("species values", &v));
            }
            if self.sizes.is_some() {
                let v: Vec<f32> = present_of(absent, &self.size_values).collect();
                self.sizes = Some(self.per_agent("sprite sizes", &v));
            }
            self.buffers_absent = absent.clone();
        }
        if frame.absent.is_empty() {
            return Cow::Borrowed(frame);
        }
        let mut f = frame.clone();
        f.drop_absent(self.world.dim);
        Cow::Owned(f)
    }

    /// A vertex buffer holding `values`, one f32 per agent.
    fn per_agent(&self, label: &str, values: &[f32]) -> wgpu::Buffer {
        let buf = self.gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: (values.len().max(1) * 4) as u64,
            usage: wgpu::BufferUsages::VERTEX | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        if !values.is_empty() {
            self.gpu
                .queue
                .write_buffer(&buf, 0, bytemuck::cast_slice(values));
        }
        buf
    }
}
