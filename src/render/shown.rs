//! The agents a frame shows: those there at its step. A recording whose timeline takes a
//! species out of the world keeps its agents in every frame ([`Frame::absent`] names them);
//! the renderer draws the others, each with its own species value and size.

use super::Renderer;
use crate::bfs::{present_of, Frame};

/// Every agent's species value and size multiple (empty where not given), and the agents left
/// out of the buffers made from them: those absent from the frame last drawn.
#[derive(Debug)]
pub(super) struct PerAgent {
    species: Vec<f32>,
    /// The species values of the agents shown (those not absent), for the CPU's frames.
    shown: Vec<f32>,
    sizes: Vec<f32>,
    absent: Vec<(u32, u32)>,
    /// The smallest size multiple (1 without them).
    pub(super) smallest_size: f32,
    /// The last frame drawn without its absent agents (its buffers reused).
    scratch: Frame,
}

impl Default for PerAgent {
    fn default() -> PerAgent {
        PerAgent {
            species: Vec::new(),
            shown: Vec::new(),
            sizes: Vec::new(),
            absent: Vec::new(),
            smallest_size: 1.0,
            scratch: Frame::empty(),
        }
    }
}

impl PerAgent {
    /// The species values of the agents shown, where the renderer was given them.
    pub(super) fn shown_species(&self) -> Option<&[f32]> {
        (!self.species.is_empty()).then_some(self.shown.as_slice())
    }
}

impl Renderer {
    /// Each agent's species index (agent order), for `--color species`: the value the palette
    /// is read at.
    pub fn set_species(&mut self, ids: &[u8]) {
        self.per_agent.species = ids.iter().map(|&i| i as f32 / 255.0).collect();
        self.per_agent.shown = self.per_agent.species.clone();
        self.per_agent.absent.clear();
        self.species = Some(self.values_buffer("species values", &self.per_agent.species));
    }

    /// Each agent's sprite size as a multiple of the look's point size (agent order; its
    /// species' `render.size`). Every sprite is drawn at the point size when all are 1.
    pub fn set_sizes(&mut self, sizes: &[f32]) {
        let sized = !sizes.iter().all(|&s| s == 1.0);
        self.per_agent.sizes = if sized { sizes.to_vec() } else { Vec::new() };
        self.per_agent.absent.clear();
        self.sizes = sized.then(|| self.values_buffer("sprite sizes", sizes));
        self.per_agent.smallest_size = match self.sizes {
            Some(_) => sizes.iter().copied().fold(f32::INFINITY, f32::min),
            None => 1.0,
        };
    }

    /// `then` on `frame` as drawn: the agents there at its step (copied into a scratch frame
    /// kept from call to call where some are absent), with the per-agent buffers made for
    /// those agents.
    pub(super) fn with_shown<T>(
        &mut self,
        frame: &Frame,
        then: impl FnOnce(&mut Renderer, &Frame) -> T,
    ) -> T {
        if frame.absent != self.per_agent.absent {
            let absent = &frame.absent;
            if self.species.is_some() {
                let v: Vec<f32> = present_of(absent, &self.per_agent.species).collect();
                self.species = Some(self.values_buffer("species values", &v));
                self.per_agent.shown = v;
            }
            if self.sizes.is_some() {
                let v: Vec<f32> = present_of(absent, &self.per_agent.sizes).collect();
                self.sizes = Some(self.values_buffer("sprite sizes", &v));
            }
            self.per_agent.absent = absent.clone();
        }
        let mut scratch = std::mem::take(&mut self.per_agent.scratch);
        let out = then(self, frame.present_in(self.world.dim, &mut scratch));
        self.per_agent.scratch = scratch;
        out
    }

    /// A vertex (and storage) buffer holding `values`, one f32 per agent.
    fn values_buffer(&self, label: &str, values: &[f32]) -> wgpu::Buffer {
        let buf = self.gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: (values.len().max(1) * 4) as u64,
            usage: wgpu::BufferUsages::VERTEX
                | wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_DST,
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
