//! Frames out of the renderer: the display image read back through the staging ring, and
//! delivered oldest first; frames skipped or drawn only to warm the trails and the camera.

use super::*;

impl Renderer {
    /// The display image into the next staging buffer: as Y'CbCr planes (video) or as it is.
    /// `drawn`: the tone map already drew the planes.
    pub(super) fn read_out(&mut self, encoder: &mut wgpu::CommandEncoder, drawn: bool) {
        match &self.yuv {
            Some(y) => {
                if !drawn {
                    y.convert(encoder);
                }
                y.copy_out(encoder, self.readback.next_buffer());
            }
            None => encoder.copy_texture_to_buffer(
                wgpu::TexelCopyTextureInfo {
                    texture: &self.ldr,
                    mip_level: 0,
                    origin: wgpu::Origin3d::ZERO,
                    aspect: wgpu::TextureAspect::All,
                },
                wgpu::TexelCopyBufferInfo {
                    buffer: self.readback.next_buffer(),
                    layout: wgpu::TexelCopyBufferLayout {
                        offset: 0,
                        bytes_per_row: Some(self.padded_row),
                        rows_per_image: None,
                    },
                },
                wgpu::Extent3d {
                    width: self.look.width,
                    height: self.look.height,
                    depth_or_array_layers: 1,
                },
            ),
        }
    }

    pub(super) fn deliver_oldest(
        &mut self,
        sink: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        let mut tight = std::mem::take(&mut self.tight);
        let (w, h) = (self.look.width as usize, self.look.height as usize);
        let padded = self.padded_row as usize;
        let yuv = self.yuv.as_ref().map(|y| *y.params());
        let output = self.output;
        if let Some(l) = &mut self.laps {
            l.start();
        }
        self.readback
            .take_oldest(&self.gpu.device, |bytes| match yuv {
                Some(p) => p.unpack(bytes, &mut tight),
                None => {
                    tight.clear();
                    let row_bytes = w * output.texel_bytes() as usize;
                    for row in 0..h {
                        let texels = &bytes[row * padded..row * padded + row_bytes];
                        match output {
                            Output::Rgba16 => deep::sixteen_bits(texels, &mut tight),
                            Output::Linear => deep::floats(texels, &mut tight),
                            _ => tight.extend_from_slice(texels),
                        }
                    }
                }
            })?;
        if let Some(l) = &mut self.laps {
            l.lap(Pass::ReadBack);
        }
        let r = sink(&tight);
        if let Some(l) = &mut self.laps {
            l.lap(Pass::Sink);
        }
        self.tight = tight;
        r
    }

    /// Hands every frame still in flight to `sink`.
    pub fn finish(&mut self, sink: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
        while self.readback.pending() > 0 {
            self.deliver_oldest(sink)?;
        }
        Ok(())
    }

    pub fn output(&self) -> Output {
        self.output
    }

    /// Moves past a frame without drawing it: a follow camera eases towards it as if it had
    /// been drawn. Trails are left alone: a render that starts mid-recording warms them up by
    /// drawing the frames just before its first ([`Renderer::warm`]).
    pub fn skip(&mut self, frame: &Frame) {
        self.with_shown(frame, |r, f| {
            let n = f.agents(r.world.dim);
            if r.camera3(f, n).is_none() {
                r.view(f, n);
            }
        });
    }

    /// Draws `frame` into the trails and shows nothing (no bloom, tone map, conversion or
    /// read-back): a frame before the first one a chunk shows. Frames still in flight go to
    /// `sink`, as in [`Renderer::render`].
    pub fn warm(&mut self, frame: &Frame, sink: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
        self.warming = true;
        let r = self.render(frame, sink);
        self.warming = false;
        r
    }

    /// Whether the camera carries state from frame to frame (a follow camera eases), so that
    /// [`Renderer::skip`] needs the skipped frames themselves.
    pub fn follows(&self) -> bool {
        self.look.follow
            || self
                .look
                .view3
                .as_ref()
                .is_some_and(|v| matches!(v.mode, CameraMode::Follow | CameraMode::Orbit))
    }
}
