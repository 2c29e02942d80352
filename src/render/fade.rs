//! The trails for the instanced sprites: this frame's HDR target starts as the last frame's
//! light times the fade (shaders/fade.wgsl reads the other HDR target; the blend state scales
//! it by the blend constant), or cleared (no trails, or the first frame); the sprites are then
//! added on it. The splat path (`splat.rs`) carries the trails in its own last pass instead.

use super::{fullscreen_pipeline_with, layout_entry, HDR_FORMAT};

pub struct FadePass {
    pipeline: wgpu::RenderPipeline,
    /// [i] reads HDR target i.
    groups: [wgpu::BindGroup; 2],
}

impl FadePass {
    /// `hdr`: the two HDR targets.
    pub fn new(device: &wgpu::Device, hdr: [&wgpu::TextureView; 2]) -> Self {
        let module = device.create_shader_module(wgpu::include_wgsl!("../../shaders/fade.wgsl"));
        let bgl = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("fade bind group layout"),
            entries: &[layout_entry::texture_unfilterable(
                0,
                wgpu::ShaderStages::FRAGMENT,
            )],
        });
        let groups = hdr.map(|view| {
            super::bind_in_order(
                device,
                "fade bind group",
                &bgl,
                vec![wgpu::BindingResource::TextureView(view)],
            )
        });
        let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("fade pipeline layout"),
            bind_group_layouts: &[Some(&bgl)],
            immediate_size: 0,
        });
        let scaled = wgpu::BlendComponent {
            src_factor: wgpu::BlendFactor::Constant,
            dst_factor: wgpu::BlendFactor::Zero,
            operation: wgpu::BlendOperation::Add,
        };
        let target = wgpu::ColorTargetState {
            format: HDR_FORMAT,
            blend: Some(wgpu::BlendState {
                color: scaled,
                alpha: scaled,
            }),
            write_mask: wgpu::ColorWrites::ALL,
        };
        let pipeline = fullscreen_pipeline_with(
            device,
            "fade pipeline",
            &layout,
            &module,
            "fs_fade",
            &[Some(target)],
            &[],
        );
        FadePass { pipeline, groups }
    }

    /// Starts HDR target `hdr` as target `1 - cur`'s light times `factor` (`cur` is `hdr`'s
    /// index); `None` clears it instead.
    pub fn run(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        hdr: &wgpu::TextureView,
        cur: usize,
        factor: Option<f32>,
    ) {
        let clear = factor.is_none().then_some(wgpu::Color::TRANSPARENT);
        let mut pass = super::begin_pass(encoder, "fade pass", hdr, clear);
        if let Some(f) = factor {
            pass.push_debug_group("trails fade");
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &self.groups[1 - cur], &[]);
            let f = f as f64;
            pass.set_blend_constant(wgpu::Color {
                r: f,
                g: f,
                b: f,
                a: f,
            });
            pass.draw(0..3, 0..1);
            pass.pop_debug_group();
        }
    }
}
