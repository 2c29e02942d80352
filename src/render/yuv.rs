//! sRGB image → planar Y'CbCr (BT.709, limited range: 8-bit 4:2:0, 10-bit 4:2:0 or 4:2:2) on
//! the GPU, packed the way FFmpeg's rawvideo reads it (shaders/yuv.wgsl).

use super::{layout_entry, YuvFormat};

/// Keep in sync with `WORKGROUP` in shaders/yuv.wgsl.
const WORKGROUP: u32 = 64;

/// Keep in sync with `Params` in shaders/yuv.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct YuvParams {
    pub width: u32,
    pub height: u32,
    pub y_words: u32,
    pub c_words: u32,
    /// Seeds the dither before the Y'CbCr store (with the pixel).
    pub frame: u32,
    /// 8 or 10.
    pub bits: u32,
    /// Luma rows per chroma row: 2 (4:2:0) or 1 (4:2:2).
    pub chroma_rows: u32,
    pub _pad: u32,
}

impl YuvParams {
    pub fn new(width: u32, height: u32, format: YuvFormat) -> Self {
        let mut p = YuvParams {
            width,
            height,
            bits: format.bits(),
            chroma_rows: format.chroma_rows(),
            ..Default::default()
        };
        let per = p.per_word() as u64;
        p.y_words = p.luma_samples().div_ceil(per) as u32;
        p.c_words = p.chroma_samples().div_ceil(per) as u32;
        p
    }

    /// Samples packed into one `u32`: four bytes, or two little-endian `u16`s.
    fn per_word(&self) -> u32 {
        if self.bits > 8 {
            2
        } else {
            4
        }
    }

    fn sample_bytes(&self) -> usize {
        4 / self.per_word() as usize
    }

    fn luma_samples(&self) -> u64 {
        self.width as u64 * self.height as u64
    }

    fn chroma_samples(&self) -> u64 {
        (self.width / 2) as u64 * (self.height / self.chroma_rows) as u64
    }

    /// Bytes of the packed GPU buffer (each plane padded to whole words).
    pub fn buffer_bytes(&self) -> u64 {
        (self.y_words as u64 + 2 * self.c_words as u64) * 4
    }

    /// Bytes of one frame as FFmpeg reads it.
    pub fn frame_bytes(&self) -> usize {
        (self.luma_samples() + 2 * self.chroma_samples()) as usize * self.sample_bytes()
    }

    /// The packed GPU buffer → a tight frame (the planes back to back).
    pub fn unpack(&self, packed: &[u8], out: &mut Vec<u8>) {
        let y = self.luma_samples() as usize * self.sample_bytes();
        let c = self.chroma_samples() as usize * self.sample_bytes();
        let u_at = self.y_words as usize * 4;
        let v_at = u_at + self.c_words as usize * 4;
        out.clear();
        out.extend_from_slice(&packed[..y]);
        out.extend_from_slice(&packed[u_at..u_at + c]);
        out.extend_from_slice(&packed[v_at..v_at + c]);
    }
}

pub struct YuvPass {
    pipeline: wgpu::ComputePipeline,
    bind_group: wgpu::BindGroup,
    params: YuvParams,
    uniform: wgpu::Buffer,
    pub out: wgpu::Buffer,
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
        let module = device.create_shader_module(wgpu::include_wgsl!("../../shaders/yuv.wgsl"));
        let bgl = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("yuv bind group layout"),
            entries: &[
                layout_entry::uniform(0, wgpu::ShaderStages::COMPUTE),
                layout_entry::texture_unfilterable(1, wgpu::ShaderStages::COMPUTE),
                layout_entry::storage(2, wgpu::ShaderStages::COMPUTE, false),
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
        let out = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("yuv planes"),
            size: params.buffer_bytes(),
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("yuv bind group"),
            layout: &bgl,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: uniform.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: wgpu::BindingResource::TextureView(rgb),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: out.as_entire_binding(),
                },
            ],
        });
        let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("yuv pipeline layout"),
            bind_group_layouts: &[Some(&bgl)],
            immediate_size: 0,
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("yuv pipeline"),
            layout: Some(&layout),
            module: &module,
            entry_point: Some("cs_yuv"),
            compilation_options: Default::default(),
            cache: None,
        });
        YuvPass {
            pipeline,
            bind_group,
            params,
            uniform,
            out,
        }
    }

    pub fn params(&self) -> &YuvParams {
        &self.params
    }

    /// Converts the display image of frame `frame` (the dither's seed).
    pub fn run(&mut self, queue: &wgpu::Queue, encoder: &mut wgpu::CommandEncoder, frame: u32) {
        self.params.frame = frame;
        queue.write_buffer(&self.uniform, 0, bytemuck::bytes_of(&self.params));
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("yuv pass"),
            timestamp_writes: None,
        });
        pass.push_debug_group("rgb to yuv");
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.bind_group, &[]);
        let words = self.params.y_words + self.params.c_words;
        let (x, y) = super::dispatch_2d(words.div_ceil(WORKGROUP));
        pass.dispatch_workgroups(x, y, 1);
        pass.pop_debug_group();
    }
}
