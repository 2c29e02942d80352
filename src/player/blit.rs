//! The renderer's display image into the window, 1:1 (shaders/present.wgsl): each pixel of
//! the image area shows one texel, unfiltered, so the window holds the very values a still
//! writes.

use crate::render::{fullscreen_pipeline, layout_entry};

/// Keep in sync with `Params` in shaders/present.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    decode: u32,
    _pad: [u32; 3],
}

pub struct Blit {
    pipeline: wgpu::RenderPipeline,
    layout: wgpu::BindGroupLayout,
    params: wgpu::Buffer,
}

impl Blit {
    /// For a window of `format`.
    pub fn new(device: &wgpu::Device, queue: &wgpu::Queue, format: wgpu::TextureFormat) -> Blit {
        let module = device.create_shader_module(wgpu::include_wgsl!("../../shaders/present.wgsl"));
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("present bind group layout"),
            entries: &[
                layout_entry::uniform(0, wgpu::ShaderStages::FRAGMENT),
                layout_entry::texture_unfilterable(1, wgpu::ShaderStages::FRAGMENT),
            ],
        });
        let pipeline = fullscreen_pipeline(
            device,
            "present",
            &module,
            "fs_present",
            Some(&layout),
            format,
            None,
        );
        let params = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("present params"),
            size: std::mem::size_of::<Params>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let p = Params {
            decode: format.is_srgb() as u32,
            ..Default::default()
        };
        queue.write_buffer(&params, 0, bytemuck::bytes_of(&p));
        Blit {
            pipeline,
            layout,
            params,
        }
    }

    /// Draws `image` (`size` pixels) at the top-left corner of the pass's target.
    pub fn draw(
        &self,
        device: &wgpu::Device,
        pass: &mut wgpu::RenderPass<'_>,
        image: &wgpu::TextureView,
        size: [u32; 2],
    ) {
        let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("present bind group"),
            layout: &self.layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: self.params.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: wgpu::BindingResource::TextureView(image),
                },
            ],
        });
        pass.push_debug_group("present");
        pass.set_viewport(0.0, 0.0, size[0] as f32, size[1] as f32, 0.0, 1.0);
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.draw(0..3, 0..1);
        pass.pop_debug_group();
    }
}
