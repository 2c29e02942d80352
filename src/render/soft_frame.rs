//! A frame drawn on the CPU (`soft`) where the renderer may and the look allows: its inputs
//! gathered from the renderer's settings as the GPU passes take them. Where nothing is drawn
//! over the display image, the CPU makes the frame's bytes and they are delivered in order
//! after any frame still in flight on the GPU; where something is (overlays, obstacles), or
//! for the player's window, the CPU's display image is uploaded and the GPU draws over it,
//! converts and reads it back as it does its own.

use anyhow::Result;

use super::draw::SPRITE_HALO;
use super::laps::Pass;
use super::soft::{Deep, Job, Out};
use super::splat::{Kernel, MAX_TAPS};
use super::{ColorMode, Output, Renderer};
use crate::bfs::Frame;

/// The largest frame the CPU draws: 7680×4320.
const MOST_PIXELS: u64 = 7680 * 4320;

impl Renderer {
    /// Frames drawn so far (warm-up ones included), and of them on the CPU.
    pub fn drawn(&self) -> u64 {
        self.drawn
    }

    pub fn drawn_on_cpu(&self) -> u64 {
        self.on_cpu
    }

    /// Whether this frame is drawn on the CPU: the renderer may (`FORGE_RENDERER`, the
    /// adapter), and the look is one the CPU draws (see `soft`'s documentation).
    pub(super) fn soft_draws(&self, three: bool) -> bool {
        if self.soft.is_none() || three || !self.round_dots() {
            return false;
        }
        // Past 8K the CPU's light (two f32 images) would take gigabytes: the GPU passes' half
        // floats do with less.
        if self.look.width as u64 * self.look.height as u64 > MOST_PIXELS {
            return false;
        }
        !self.look.alpha
            && self.look.color != ColorMode::Density
            && Kernel::new(self.core_px(), SPRITE_HALO).reach() as i32 - 1 <= MAX_TAPS
    }

    /// Draws `frame` on the CPU (2D `view`) and delivers it to `sink`, in order.
    pub(super) fn soft_frame(
        &mut self,
        frame: &Frame,
        view: ([f32; 2], [f32; 2], [f32; 2]),
        mean_heading: f32,
        sink: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        let over = self.showing || self.overlay.is_some() || self.obstacles.is_some();
        let core_px = self.core_px();
        let mut sprites = self.splat_params(view, self.range, mean_heading, core_px);
        // The trails of the last frame, if it was drawn here (`Soft::draw` checks).
        let trails = self.look.trails > 0.0;
        sprites.carry = trails as u32;
        sprites.fade = if trails { self.fade_before } else { 0.0 };
        let to_planes = !over && matches!(self.output, Output::Yuv(_));
        let tonemap = self.tonemap_params(frame, self.world_rect(view), to_planes);
        let half = self.output.display_format() == wgpu::TextureFormat::Rgba16Float;
        let out = match (&self.yuv, self.output) {
            (Some(y), Output::Yuv(_)) if to_planes => Out::Planes(*y.params()),
            _ if over && half => Out::Deep(Deep::Halves),
            (_, Output::Rgba16) if !over => Out::Deep(Deep::Codes),
            (_, Output::Linear) if !over => Out::Deep(Deep::Floats),
            _ => Out::Rgba8,
        };
        let values = (self.look.color == ColorMode::Species)
            .then(|| self.per_agent.shown_species())
            .flatten();
        let job = Job {
            frame,
            dim: self.world.dim,
            sprites,
            core_px,
            halo_level: SPRITE_HALO,
            values,
            warming: self.warming,
            tonemap,
            plate: self.look.plate.as_ref().map(|p| &p.rgba),
            bloom_radius: self.look.bloom_radius,
            out,
            index: frame.index,
        };
        let mut bytes = std::mem::take(&mut self.tight);
        let mut laps = self.laps.take();
        let stages = [Pass::Agents, Pass::Bloom, Pass::ToneMap];
        if let Some(soft) = self.soft.as_mut() {
            soft.draw(&job, self.drawn, &mut bytes, &mut |k| {
                if let Some(l) = laps.as_mut() {
                    l.lap(stages[k]);
                }
            });
        }
        self.laps = laps;
        let sent = match (self.warming, over) {
            (true, _) => Ok(()),
            (false, true) => self.draw_over_upload(frame, view, &bytes, sink),
            (false, false) => {
                let r = self.finish(sink).and_then(|_| sink(&bytes));
                if let Some(l) = self.laps.as_mut() {
                    l.lap(Pass::Sink);
                    l.frames += 1;
                }
                r
            }
        };
        self.tight = bytes;
        self.drawn += 1;
        self.on_cpu += 1;
        self.soft_last = true;
        sent
    }

    /// The CPU's display image `bytes` uploaded, drawn over, converted and read back (or kept
    /// for the window) as the GPU's own frames are.
    fn draw_over_upload(
        &mut self,
        frame: &Frame,
        view: ([f32; 2], [f32; 2], [f32; 2]),
        bytes: &[u8],
        sink: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        if !self.showing && self.readback.full() {
            self.deliver_oldest(sink)?;
        }
        let (w, h) = (self.look.width, self.look.height);
        let texel = bytes.len() as u32 / (w * h).max(1);
        self.gpu.queue.write_texture(
            self.ldr.as_image_copy(),
            bytes,
            wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(w * texel),
                rows_per_image: Some(h),
            },
            wgpu::Extent3d {
                width: w,
                height: h,
                depth_or_array_layers: 1,
            },
        );
        let mut encoder = self
            .gpu
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("frame encoder"),
            });
        if let Some(y) = self.yuv.as_mut().filter(|_| !self.showing) {
            y.start_frame(&self.gpu.queue, frame.index as u32);
        }
        let range = self.range;
        self.draw_over(&mut encoder, frame, view, false, false, range);
        if !self.showing {
            self.read_out(&mut encoder, false);
        }
        let submission = self.gpu.queue.submit([encoder.finish()]);
        self.gpu
            .check(|| format!("rendering frame {}", frame.index))?;
        if let Some(l) = self.laps.as_mut() {
            let _ = self.gpu.device.poll(wgpu::PollType::wait_indefinitely());
            l.lap(Pass::Overlay);
            l.frames += 1;
        }
        if !self.showing {
            self.readback.submitted(submission);
        }
        Ok(())
    }
}
