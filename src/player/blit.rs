//! The renderer's display image into the window, 1:1 (shaders/present.wgsl): each pixel of
//! the image area shows one texel, unfiltered, so the window holds the very values a still
//! writes.

use crate::render::{fullscreen_pipeline, layout_entry};

pub struct Blit {
    pipeline: wgpu::RenderPipeline,
    layout: wgpu::BindGroupLayout,
}

impl Blit {
    /// For a window of `format` (an sRGB one gets the image's values decoded first).
    pub fn new(device: &wgpu::Device, format: wgpu::TextureFormat) -> Blit {
        let module = device.create_shader_module(wgpu::include_wgsl!("../../shaders/present.wgsl"));
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("present bind group layout"),
            entries: &[layout_entry::texture_unfilterable(
                0,
                wgpu::ShaderStages::FRAGMENT,
            )],
        });
        let pipeline = fullscreen_pipeline(
            device,
            "present",
            &module,
            if format.is_srgb() {
                "fs_present_decode"
            } else {
                "fs_present"
            },
            Some(&layout),
            format,
            None,
        );
        Blit { pipeline, layout }
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
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: wgpu::BindingResource::TextureView(image),
            }],
        });
        pass.push_debug_group("present");
        pass.set_viewport(0.0, 0.0, size[0] as f32, size[1] as f32, 0.0, 1.0);
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.draw(0..3, 0..1);
        pass.pop_debug_group();
    }
}
