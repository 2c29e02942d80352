//! HDR → display colours: bloom, exposure, ACES, background, vignette, sRGB
//! (shaders/tonemap.wgsl).

use super::{fullscreen_pipeline, layout_entry};

/// Keep in sync with `Params` in shaders/tonemap.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct TonemapParams {
    pub background: [f32; 4],
    pub exposure: f32,
    pub bloom: f32,
    pub vignette: f32,
    pub aspect: f32,
    /// Seeds the dither (with the pixel), so a render is reproducible frame by frame.
    pub frame: u32,
    /// 1.0: TPDF dither for an 8-bit store; 0.0: none.
    pub dither: f32,
    /// 1: scene-linear light out (EXR) instead of tone-mapped sRGB.
    pub linear: u32,
    pub _pad: u32,
}

pub struct TonemapPass {
    pipeline: wgpu::RenderPipeline,
    bind_group: wgpu::BindGroup,
    params: wgpu::Buffer,
}

impl TonemapPass {
    pub fn new(
        device: &wgpu::Device,
        hdr: &wgpu::TextureView,
        bloom: &wgpu::TextureView,
        sampler: &wgpu::Sampler,
        format: wgpu::TextureFormat,
    ) -> Self {
        let module = device.create_shader_module(wgpu::include_wgsl!("../../shaders/tonemap.wgsl"));
        let bgl = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("tonemap bind group layout"),
            entries: &[
                layout_entry::uniform(0, wgpu::ShaderStages::FRAGMENT),
                layout_entry::texture(1, wgpu::ShaderStages::FRAGMENT),
                layout_entry::texture(2, wgpu::ShaderStages::FRAGMENT),
                layout_entry::sampler(3, wgpu::ShaderStages::FRAGMENT),
            ],
        });
        let params = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("tonemap params"),
            size: std::mem::size_of::<TonemapParams>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("tonemap bind group"),
            layout: &bgl,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: params.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: wgpu::BindingResource::TextureView(hdr),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: wgpu::BindingResource::TextureView(bloom),
                },
                wgpu::BindGroupEntry {
                    binding: 3,
                    resource: wgpu::BindingResource::Sampler(sampler),
                },
            ],
        });
        let pipeline = fullscreen_pipeline(
            device,
            "tonemap",
            &module,
            "fs_tonemap",
            Some(&bgl),
            format,
            None,
        );
        TonemapPass {
            pipeline,
            bind_group,
            params,
        }
    }

    pub fn run(
        &self,
        queue: &wgpu::Queue,
        encoder: &mut wgpu::CommandEncoder,
        target: &wgpu::TextureView,
        params: &TonemapParams,
    ) {
        queue.write_buffer(&self.params, 0, bytemuck::bytes_of(params));
        let mut pass = super::begin_pass(encoder, "tonemap pass", target, None);
        pass.push_debug_group("tonemap");
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.bind_group, &[]);
        pass.draw(0..3, 0..1);
        pass.pop_debug_group();
    }
}
