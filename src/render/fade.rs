//! Clearing the HDR target, or fading it in place by a factor (shaders/fade.wgsl; the blend
//! state does the arithmetic: dst × constant). A frame tone-mapped into the display image has
//! its trails faded by the tone-map pass instead (into the other HDR target); this pass fades
//! after a warm-up frame, which is not tone-mapped, and after a video frame tone-mapped
//! straight into the Y'CbCr planes.

use super::{fullscreen_pipeline, HDR_FORMAT};

pub struct FadePass {
    pipeline: wgpu::RenderPipeline,
}

impl FadePass {
    pub fn new(device: &wgpu::Device) -> Self {
        let module = device.create_shader_module(wgpu::include_wgsl!("../../shaders/fade.wgsl"));
        let fade = wgpu::BlendComponent {
            src_factor: wgpu::BlendFactor::Zero,
            dst_factor: wgpu::BlendFactor::Constant,
            operation: wgpu::BlendOperation::Add,
        };
        let blend = wgpu::BlendState {
            color: fade,
            alpha: fade,
        };
        let pipeline = fullscreen_pipeline(
            device,
            "fade pipeline",
            &module,
            "fs_fade",
            None,
            HDR_FORMAT,
            Some(blend),
        );
        FadePass { pipeline }
    }

    /// Scales `hdr` by `factor` in place; `None` clears it instead (first frame, no trails).
    pub fn run(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        hdr: &wgpu::TextureView,
        factor: Option<f32>,
    ) {
        let load = match factor {
            Some(_) => wgpu::LoadOp::Load,
            None => wgpu::LoadOp::Clear(wgpu::Color::TRANSPARENT),
        };
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("fade pass"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: hdr,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load,
                    store: wgpu::StoreOp::Store,
                },
            })],
            depth_stencil_attachment: None,
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        if let Some(f) = factor {
            pass.push_debug_group("trails fade");
            pass.set_pipeline(&self.pipeline);
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
