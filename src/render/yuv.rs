//! sRGB image → planar Y'CbCr (BT.709, limited range: 8-bit 4:2:0, 10-bit 4:2:0 or 4:2:2) on
//! the GPU (shaders/yuv.wgsl): one pass at the chroma planes' size draws every plane into
//! integer textures (luma as rows of code pairs: for 4:2:0 a texture of each block's top rows
//! and one of its bottom rows, copied into alternate rows of the Y plane), which are copied into
//! the read-back buffer, rows padded to the copy alignment; [`YuvParams::unpack`] strips the
//! padding into the tight frame FFmpeg reads. A frame with nothing drawn over its display
//! image skips the conversion: the tone map draws the same planes itself
//! ([`TonemapPass::run_planes`](super::tonemap::TonemapPass::run_planes)).

use super::tonemap::PlanesTarget;
use super::{begin_overwrite, fullscreen_pipeline_to, layout_entry, YuvFormat};

/// Keep in sync with `YcbcrParams` in shaders/ycbcr.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct YuvParams {
    pub width: u32,
    pub height: u32,
    /// 8 or 10.
    pub bits: u32,
    /// Luma rows per chroma row: 2 (4:2:0) or 1 (4:2:2).
    pub chroma_rows: u32,
    /// The dither's seed of each plane (Y, U, V) this frame, [`YuvParams::seeds`]: hashed
    /// once here rather than for every sample.
    pub seeds: [u32; 3],
    pub _pad: u32,
}

/// A well-mixed 32-bit hash: PCG's output permutation, as `pcg` in shaders/ycbcr.wgsl (which
/// tonemap.wgsl shares) computes it. The dithers' per-frame seeds are hashed here.
pub fn pcg(v: u32) -> u32 {
    let state = v.wrapping_mul(747796405).wrapping_add(2891336453);
    let word = ((state >> ((state >> 28) + 4)) ^ state).wrapping_mul(277803737);
    (word >> 22) ^ word
}

/// One plane as it lies in the read-back buffer.
#[derive(Clone, Copy, Debug)]
struct Plane {
    width: u32,
    height: u32,
    /// Where it starts in the buffer.
    offset: u64,
    /// Bytes from one row to the next in the buffer (a multiple of the copy alignment).
    pitch: u32,
}

impl YuvParams {
    pub fn new(width: u32, height: u32, format: YuvFormat) -> Self {
        YuvParams {
            width,
            height,
            bits: format.bits(),
            chroma_rows: format.chroma_rows(),
            ..Default::default()
        }
    }

    /// The dither's seeds of frame `frame`: plane p's is pcg(p ^ pcg(frame)).
    pub fn seeds(frame: u32) -> [u32; 3] {
        [0, 1, 2].map(|plane| pcg(plane ^ pcg(frame)))
    }

    /// Bytes per sample: 1, or 2 (little-endian) above 8 bits.
    fn sample_bytes(&self) -> u32 {
        if self.bits > 8 {
            2
        } else {
            1
        }
    }

    /// The texture format of the chroma planes: one code per texel.
    fn format(&self) -> wgpu::TextureFormat {
        if self.bits > 8 {
            wgpu::TextureFormat::R16Uint
        } else {
            wgpu::TextureFormat::R8Uint
        }
    }

    /// The texture format of the luma rows: two codes (a horizontal pair) per texel, laid out
    /// in memory as the Y plane lays them out.
    fn pair_format(&self) -> wgpu::TextureFormat {
        if self.bits > 8 {
            wgpu::TextureFormat::Rg16Uint
        } else {
            wgpu::TextureFormat::Rg8Uint
        }
    }

    /// The formats of the planes' targets in the shaders' order: the luma rows (two for
    /// 4:2:0), U, V.
    fn target_formats(&self) -> Vec<wgpu::TextureFormat> {
        let mut f = vec![self.pair_format(); self.chroma_rows as usize];
        f.extend([self.format(), self.format()]);
        f
    }

    /// Y, U and V as they lie in the read-back buffer.
    fn planes(&self) -> [Plane; 3] {
        let pitch = |w: u32| {
            (w * self.sample_bytes()).div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT)
                * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT
        };
        let y = Plane {
            width: self.width,
            height: self.height,
            offset: 0,
            pitch: pitch(self.width),
        };
        let (cw, ch) = (self.width / 2, self.height / self.chroma_rows);
        let u = Plane {
            width: cw,
            height: ch,
            offset: y.pitch as u64 * y.height as u64,
            pitch: pitch(cw),
        };
        let v = Plane {
            offset: u.offset + u.pitch as u64 * ch as u64,
            ..u
        };
        [y, u, v]
    }

    /// Bytes of the read-back buffer (each plane's rows padded).
    pub fn buffer_bytes(&self) -> u64 {
        let [_, _, v] = self.planes();
        v.offset + v.pitch as u64 * v.height as u64
    }

    /// Bytes of one frame as FFmpeg reads it.
    pub fn frame_bytes(&self) -> usize {
        let px = self.width as usize * self.height as usize
            + 2 * (self.width / 2) as usize * (self.height / self.chroma_rows) as usize;
        px * self.sample_bytes() as usize
    }

    /// The read-back buffer → a tight frame (the planes back to back, rows unpadded).
    pub fn unpack(&self, padded: &[u8], out: &mut Vec<u8>) {
        out.clear();
        for plane in self.planes() {
            let row = (plane.width * self.sample_bytes()) as usize;
            for r in 0..plane.height as u64 {
                let at = (plane.offset + r * plane.pitch as u64) as usize;
                out.extend_from_slice(&padded[at..at + row]);
            }
        }
    }
}

pub struct YuvPass {
    pipeline: wgpu::RenderPipeline,
    bind_group: wgpu::BindGroup,
    params: YuvParams,
    uniform: wgpu::Buffer,
    /// The luma rows (4:2:0: the blocks' top rows, then their bottom rows; 4:2:2: every row),
    /// two codes a texel, at the chroma planes' size.
    luma: Vec<wgpu::Texture>,
    /// The U and V planes, one code per texel.
    chroma: [wgpu::Texture; 2],
    /// The targets in the shader's order: the luma rows, U, V.
    views: Vec<wgpu::TextureView>,
}

impl YuvPass {
    pub fn new(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        rgb: &wgpu::TextureView,
        width: u32,
        height: u32,
        format: YuvFormat,
    ) -> Self {
        let module = super::wgsl::create(device, "yuv.wgsl + ycbcr.wgsl", super::wgsl::YUV);
        let bgl = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("yuv bind group layout"),
            entries: &[
                layout_entry::uniform(0, wgpu::ShaderStages::FRAGMENT),
                layout_entry::texture_unfilterable(1, wgpu::ShaderStages::FRAGMENT),
            ],
        });
        let params = YuvParams::new(width, height, format);
        let uniform = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("yuv params"),
            size: std::mem::size_of::<YuvParams>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        queue.write_buffer(&uniform, 0, bytemuck::bytes_of(&params));
        let [_, u, _] = params.planes();
        let texture = |format| {
            device.create_texture(&wgpu::TextureDescriptor {
                label: Some("yuv plane"),
                size: wgpu::Extent3d {
                    width: u.width.max(1),
                    height: u.height.max(1),
                    depth_or_array_layers: 1,
                },
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format,
                usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
                view_formats: &[],
            })
        };
        let rows = params.chroma_rows as usize;
        let luma: Vec<_> = (0..rows).map(|_| texture(params.pair_format())).collect();
        let chroma = [texture(params.format()), texture(params.format())];
        let bind_group =
            super::uniform_textures_sampler(device, "yuv bind group", &bgl, &uniform, &[rgb], None);
        let target = |format| {
            Some(wgpu::ColorTargetState {
                format,
                blend: None,
                write_mask: wgpu::ColorWrites::ALL,
            })
        };
        let targets: Vec<_> = params.target_formats().into_iter().map(target).collect();
        let entry = if rows == 2 {
            "fs_planes420"
        } else {
            "fs_planes422"
        };
        let pipeline = fullscreen_pipeline_to(device, "yuv", &module, entry, Some(&bgl), &targets);
        let views = luma
            .iter()
            .chain(&chroma)
            .map(|t| t.create_view(&Default::default()))
            .collect();
        YuvPass {
            pipeline,
            bind_group,
            params,
            uniform,
            luma,
            chroma,
            views,
        }
    }

    pub fn params(&self) -> &YuvParams {
        &self.params
    }

    /// What the tone map needs to draw the planes itself (`TonemapPass::run_planes`).
    pub fn planes_target(&self) -> PlanesTarget<'_> {
        PlanesTarget {
            ycbcr: &self.uniform,
            formats: self.params.target_formats(),
            rows: self.params.chroma_rows,
        }
    }

    /// The planes' targets, in the shaders' order (the luma rows, U, V).
    pub fn targets(&self) -> Vec<&wgpu::TextureView> {
        self.views.iter().collect()
    }

    /// Sets the dither's seed for frame `frame`, before the planes are drawn.
    pub fn start_frame(&mut self, queue: &wgpu::Queue, frame: u32) {
        self.params.seeds = YuvParams::seeds(frame);
        queue.write_buffer(&self.uniform, 0, bytemuck::bytes_of(&self.params));
    }

    /// Converts the display image into the planes (after [`YuvPass::start_frame`]).
    pub fn convert(&self, encoder: &mut wgpu::CommandEncoder) {
        let mut pass = begin_overwrite(encoder, "yuv pass", &self.targets());
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.bind_group, &[]);
        pass.draw(0..3, 0..1);
    }

    /// Copies the planes into `readback` (laid out as [`YuvParams::unpack`] reads them).
    pub fn copy_out(&self, encoder: &mut wgpu::CommandEncoder, readback: &wgpu::Buffer) {
        let [y, u, v] = self.params.planes();
        let rows = self.luma.len() as u32;
        // Luma row texture r holds the Y plane's rows r, r + rows, r + 2·rows, ...
        let luma = self.luma.iter().enumerate().map(|(r, t)| {
            let at = Plane {
                offset: y.offset + r as u64 * y.pitch as u64,
                pitch: y.pitch * rows,
                ..u
            };
            (t, at)
        });
        let chroma = self.chroma.iter().zip([u, v]);
        for (texture, plane) in luma.chain(chroma) {
            encoder.copy_texture_to_buffer(
                wgpu::TexelCopyTextureInfo {
                    texture,
                    mip_level: 0,
                    origin: wgpu::Origin3d::ZERO,
                    aspect: wgpu::TextureAspect::All,
                },
                wgpu::TexelCopyBufferInfo {
                    buffer: readback,
                    layout: wgpu::TexelCopyBufferLayout {
                        offset: plane.offset,
                        bytes_per_row: Some(plane.pitch),
                        rows_per_image: None,
                    },
                },
                wgpu::Extent3d {
                    width: plane.width,
                    height: plane.height,
                    depth_or_array_layers: 1,
                },
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_pcgs_output_permutation() {
        // Values from an independent big-integer evaluation (mod 2^32) of the same formula:
        // the wrapping arithmetic must match the shader's u32 arithmetic exactly.
        for (v, h) in [
            (0, 0x07bb_2fe2),
            (1, 0xa8be_ea3c),
            (300, 0x50b3_a445),
            (0xdead_beef, 0x6729_9972),
        ] {
            assert_eq!(pcg(v), h, "pcg({v:#x})");
        }
    }

    #[test]
    fn planes_are_padded_and_unpacked_tight() {
        // 4:2:0 at 8 bits, 322 wide: rows of 322 and 161 bytes, pitches of 512 and 256.
        let p = YuvParams::new(322, 4, YuvFormat::Yuv420p);
        let [y, u, v] = p.planes();
        assert_eq!(
            (y.pitch, u.pitch, u.offset, v.offset),
            (512, 256, 2048, 2560)
        );
        assert_eq!(p.buffer_bytes(), 3072);
        let mut padded = vec![0u8; p.buffer_bytes() as usize];
        for plane in [y, u, v] {
            for r in 0..plane.height as usize {
                let at = plane.offset as usize + r * plane.pitch as usize;
                padded[at..at + plane.width as usize].fill(r as u8 + 1);
            }
        }
        let mut tight = Vec::new();
        p.unpack(&padded, &mut tight);
        assert_eq!(tight.len(), p.frame_bytes());
        assert_eq!(tight.len(), 322 * 4 + 2 * 161 * 2);
        assert!(!tight.contains(&0), "padding leaked into the frame");
        // 10-bit 4:2:2: two bytes a sample, chroma on every row.
        let p = YuvParams::new(320, 4, YuvFormat::Yuv422p10);
        assert_eq!(p.frame_bytes(), (320 * 4 + 2 * 160 * 4) * 2);
        assert_eq!(p.planes()[1].height, 4);
    }
}
