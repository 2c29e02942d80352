//! HDR → display colours: bloom, exposure, ACES, background, vignette, sRGB
//! (shaders/tonemap.wgsl). With trails the pass also writes the faded HDR image into the
//! other of the two HDR targets, which the next frame draws on.

use super::{fullscreen_pipeline, fullscreen_pipeline_to, layout_entry, HDR_FORMAT};

/// Keep in sync with `Params` in shaders/tonemap.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct TonemapParams {
    /// Linear RGB at the bottom of the frame.
    pub background: [f32; 4],
    /// Linear RGB at the top (the same as `background` for a flat one).
    pub background_top: [f32; 4],
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
    /// Trails: the fraction of this frame's light written into the next HDR target.
    pub fade: f32,
    /// 1: ink (dark agents over the background); 0: glow.
    pub ink: u32,
    pub contrast: f32,
    pub saturation: f32,
    pub lift: f32,
    pub gamma: f32,
    pub gain: f32,
    /// The background outside the world's rectangle, relative (1 = the same).
    pub bars: f32,
    pub _pad: f32,
    /// The world's rectangle on screen, uv (x0, y0, x1, y1; y down).
    pub world_rect: [f32; 4],
}

pub struct TonemapPass {
    pipeline: wgpu::RenderPipeline,
    /// Also writes the faded HDR image (trails).
    with_trails: wgpu::RenderPipeline,
    /// [i] reads HDR target i.
    bind_groups: [wgpu::BindGroup; 2],
    params: wgpu::Buffer,
}

impl TonemapPass {
    pub fn new(
        device: &wgpu::Device,
        hdr: [&wgpu::TextureView; 2],
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
        let bind_groups = hdr.map(|hdr| {
            super::uniform_textures_sampler(
                device,
                "tonemap bind group",
                &bgl,
                &params,
                &[hdr, bloom],
                Some(sampler),
            )
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
        let target = |format| {
            Some(wgpu::ColorTargetState {
                format,
                blend: None,
                write_mask: wgpu::ColorWrites::ALL,
            })
        };
        let with_trails = fullscreen_pipeline_to(
            device,
            "tonemap with trails",
            &module,
            "fs_tonemap_trails",
            Some(&bgl),
            &[target(format), target(HDR_FORMAT)],
        );
        TonemapPass {
            pipeline,
            with_trails,
            bind_groups,
            params,
        }
    }

    /// Tone-maps HDR target `hdr` into `target`; with `next`, also writes the HDR image times
    /// `params.fade` there (an HDR target: the next frame's trails).
    pub fn run(
        &self,
        queue: &wgpu::Queue,
        encoder: &mut wgpu::CommandEncoder,
        target: &wgpu::TextureView,
        hdr: usize,
        next: Option<&wgpu::TextureView>,
        params: &TonemapParams,
    ) {
        queue.write_buffer(&self.params, 0, bytemuck::bytes_of(params));
        let mut pass = match next {
            Some(n) => super::begin_overwrite(encoder, "tonemap pass", &[target, n]),
            None => super::begin_pass(encoder, "tonemap pass", target, None),
        };
        pass.push_debug_group("tonemap");
        pass.set_pipeline(if next.is_some() {
            &self.with_trails
        } else {
            &self.pipeline
        });
        pass.set_bind_group(0, &self.bind_groups[hdr], &[]);
        pass.draw(0..3, 0..1);
        pass.pop_debug_group();
    }
}
