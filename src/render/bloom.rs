//! Bloom: bright pass + 13-tap downsample mip chain + tent upsample back up
//! (shaders/bloom.wgsl; the Call of Duty 2014 method, as in bevy's bloom).

use super::{fullscreen_pipeline, layout_entry, BLOOM_FORMAT};

/// Keep in sync with `Params` in shaders/bloom.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct BloomParams {
    pub threshold: f32,
    pub knee: f32,
    pub radius: f32,
    pub _pad: f32,
}

impl BloomParams {
    /// Light above ~0.25 (after the downsample's averaging) glows, fading in from 0.05;
    /// upsample taps one texel apart.
    pub const DEFAULT: BloomParams = BloomParams {
        threshold: 0.25,
        knee: 0.2,
        radius: 1.0,
        _pad: 0.0,
    };
}

/// At most this many mips (the first at half resolution).
const MAX_MIPS: u32 = 6;

pub struct BloomPass {
    down_first: wgpu::RenderPipeline,
    down: wgpu::RenderPipeline,
    up: wgpu::RenderPipeline,
    /// One view per mip; `views[0]` is what the tone-map pass reads.
    views: Vec<wgpu::TextureView>,
    /// Downsample bind groups: [0] reads the HDR image, [i] reads mip i−1.
    down_groups: Vec<wgpu::BindGroup>,
    /// Upsample bind groups: [i] reads mip i+1 (and writes mip i).
    up_groups: Vec<wgpu::BindGroup>,
}

impl BloomPass {
    pub fn new(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        hdr: &wgpu::TextureView,
        width: u32,
        height: u32,
        sampler: &wgpu::Sampler,
    ) -> Self {
        let module = device.create_shader_module(wgpu::include_wgsl!("../../shaders/bloom.wgsl"));
        let bgl = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("bloom bind group layout"),
            entries: &[
                layout_entry::uniform(0, wgpu::ShaderStages::FRAGMENT),
                layout_entry::texture(1, wgpu::ShaderStages::FRAGMENT),
                layout_entry::sampler(2, wgpu::ShaderStages::FRAGMENT),
            ],
        });
        let params = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("bloom params"),
            size: std::mem::size_of::<BloomParams>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        queue.write_buffer(&params, 0, bytemuck::bytes_of(&BloomParams::DEFAULT));
        let w0 = (width / 2).max(1);
        let h0 = (height / 2).max(1);
        let mut mips = 1;
        while mips < MAX_MIPS && (w0 >> mips) >= 8 && (h0 >> mips) >= 8 {
            mips += 1;
        }
        let texture = device.create_texture(&wgpu::TextureDescriptor {
            label: Some("bloom mip chain"),
            size: wgpu::Extent3d {
                width: w0,
                height: h0,
                depth_or_array_layers: 1,
            },
            mip_level_count: mips,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: BLOOM_FORMAT,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::TEXTURE_BINDING,
            view_formats: &[],
        });
        let views: Vec<wgpu::TextureView> = (0..mips)
            .map(|m| {
                texture.create_view(&wgpu::TextureViewDescriptor {
                    label: Some("bloom mip view"),
                    base_mip_level: m,
                    mip_level_count: Some(1),
                    ..Default::default()
                })
            })
            .collect();
        let group = |src: &wgpu::TextureView| {
            device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("bloom bind group"),
                layout: &bgl,
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: 0,
                        resource: params.as_entire_binding(),
                    },
                    wgpu::BindGroupEntry {
                        binding: 1,
                        resource: wgpu::BindingResource::TextureView(src),
                    },
                    wgpu::BindGroupEntry {
                        binding: 2,
                        resource: wgpu::BindingResource::Sampler(sampler),
                    },
                ],
            })
        };
        let mut down_groups = vec![group(hdr)];
        for m in 1..mips as usize {
            down_groups.push(group(&views[m - 1]));
        }
        let up_groups = (0..mips as usize - 1)
            .map(|m| group(&views[m + 1]))
            .collect();
        let add = wgpu::BlendComponent {
            src_factor: wgpu::BlendFactor::One,
            dst_factor: wgpu::BlendFactor::One,
            operation: wgpu::BlendOperation::Add,
        };
        let additive = Some(wgpu::BlendState {
            color: add,
            alpha: add,
        });
        BloomPass {
            down_first: fullscreen_pipeline(
                device,
                "bloom first downsample",
                &module,
                "fs_downsample_first",
                Some(&bgl),
                BLOOM_FORMAT,
                None,
            ),
            down: fullscreen_pipeline(
                device,
                "bloom downsample",
                &module,
                "fs_downsample",
                Some(&bgl),
                BLOOM_FORMAT,
                None,
            ),
            up: fullscreen_pipeline(
                device,
                "bloom upsample",
                &module,
                "fs_upsample",
                Some(&bgl),
                BLOOM_FORMAT,
                additive,
            ),
            views,
            down_groups,
            up_groups,
        }
    }

    /// The result, for the tone-map pass.
    pub fn output(&self) -> &wgpu::TextureView {
        &self.views[0]
    }

    pub fn run(&self, encoder: &mut wgpu::CommandEncoder) {
        encoder.push_debug_group("bloom");
        for (m, view) in self.views.iter().enumerate() {
            let mut pass = super::begin_pass(
                encoder,
                "bloom downsample pass",
                view,
                Some(wgpu::Color::BLACK),
            );
            pass.set_pipeline(if m == 0 { &self.down_first } else { &self.down });
            pass.set_bind_group(0, &self.down_groups[m], &[]);
            pass.draw(0..3, 0..1);
        }
        for m in (0..self.views.len() - 1).rev() {
            let mut pass = super::begin_pass(encoder, "bloom upsample pass", &self.views[m], None);
            pass.set_pipeline(&self.up);
            pass.set_bind_group(0, &self.up_groups[m], &[]);
            pass.draw(0..3, 0..1);
        }
        encoder.pop_debug_group();
    }
}
