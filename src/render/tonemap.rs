//! HDR → display colours: bloom, exposure, ACES, background, vignette, sRGB
//! (shaders/tonemap.wgsl). For a video frame with nothing drawn over it, the pass draws the
//! Y'CbCr planes instead of the display image ([`TonemapPass::run_planes`]).

use super::{fullscreen_pipeline_with, layout_entry, Plate};

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
    /// Seeds the dither (with the pixel), so a render is reproducible frame by frame:
    /// [`pcg`](super::yuv::pcg) of the frame's index.
    pub seed: u32,
    /// 1.0: dither for an 8-bit store (ordered down each column, `column_dither`); 0.0: none.
    pub dither: f32,
    /// 1: scene-linear light out (EXR) instead of tone-mapped sRGB.
    pub linear: u32,
    pub _pad0: f32,
    /// 1: ink (dark agents over the background); 0: glow.
    pub ink: u32,
    pub contrast: f32,
    pub saturation: f32,
    pub lift: f32,
    pub gamma: f32,
    pub gain: f32,
    /// The background outside the world's rectangle, relative (1 = the same).
    pub bars: f32,
    /// 1: a transparent background (see `Settings::alpha`).
    pub alpha: u32,
    /// 1: the plate (`--background-image`) in place of the background colour.
    pub plate: u32,
    pub _pad: [u32; 3],
    /// The world's rectangle on screen, uv (x0, y0, x1, y1; y down).
    pub world_rect: [f32; 4],
}

impl TonemapParams {
    /// Which parts of the shading these parameters use: the pipeline built for them.
    pub fn variant(&self) -> TonemapVariant {
        let neutral = self.contrast == 1.0
            && self.saturation == 1.0
            && self.lift == 0.0
            && self.gamma == 1.0
            && self.gain == 1.0;
        TonemapVariant {
            ink: self.ink != 0,
            linear: self.linear != 0,
            bloom: self.bloom != 0.0,
            vignette: self.vignette != 0.0,
            grade: !neutral,
            dither: self.dither != 0.0,
            alpha: self.alpha != 0,
            plate: self.plate != 0,
        }
    }
}

/// The parts of the tone map a pipeline runs (the shader's pipeline constants): a part a look
/// leaves out costs nothing, and no shader branches on a uniform.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TonemapVariant {
    pub ink: bool,
    pub linear: bool,
    pub bloom: bool,
    pub vignette: bool,
    pub grade: bool,
    pub dither: bool,
    pub alpha: bool,
    pub plate: bool,
}

impl TonemapVariant {
    fn constants(&self) -> [(&'static str, f64); 8] {
        let b = |v: bool| if v { 1.0 } else { 0.0 };
        [
            ("INK", b(self.ink)),
            ("LINEAR", b(self.linear)),
            ("BLOOM", b(self.bloom)),
            ("VIGNETTE", b(self.vignette)),
            ("GRADE", b(self.grade)),
            ("DITHER", b(self.dither)),
            ("ALPHA", b(self.alpha)),
            ("PLATE", b(self.plate)),
        ]
    }
}

/// The Y'CbCr planes as the tone map's targets (a video frame with nothing drawn over its
/// display image): the conversion's uniform and the planes' formats, from `YuvPass`.
pub struct PlanesTarget<'a> {
    pub ycbcr: &'a wgpu::Buffer,
    pub formats: Vec<wgpu::TextureFormat>,
    /// Luma rows per chroma row: 2 (4:2:0) or 1 (4:2:2).
    pub rows: u32,
}

/// The tone map straight into the planes: its layout and bind groups ([i] reads HDR target i),
/// the planes' formats and the entry point.
struct Planes {
    layout: wgpu::PipelineLayout,
    bind_groups: [wgpu::BindGroup; 2],
    formats: Vec<wgpu::TextureFormat>,
    entry: &'static str,
}

/// What a pipeline draws: its variant and its targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Key {
    /// The display image.
    Display(TonemapVariant),
    /// The Y'CbCr planes.
    Planes(TonemapVariant),
}

pub struct TonemapPass {
    module: wgpu::ShaderModule,
    layout: wgpu::PipelineLayout,
    format: wgpu::TextureFormat,
    /// The pipelines built so far. A look changed in the player builds the new variant once.
    pipelines: Vec<(Key, wgpu::RenderPipeline)>,
    /// [i] reads HDR target i.
    bind_groups: [wgpu::BindGroup; 2],
    planes: Option<Planes>,
    params: wgpu::Buffer,
}

/// The textures the tone map reads: the two HDR targets, the bloom, and its sampler.
#[derive(Clone, Copy)]
pub struct Views<'a> {
    pub hdr: [&'a wgpu::TextureView; 2],
    pub bloom: &'a wgpu::TextureView,
    pub sampler: &'a wgpu::Sampler,
}

/// The plate as a texture (sRGB: it reads as linear light); a black texel without one.
fn plate_view(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    plate: Option<&Plate>,
) -> wgpu::TextureView {
    let (w, h, black) = (1, 1, [0u8, 0, 0, 255]);
    let (w, h, bytes): (u32, u32, &[u8]) = match plate {
        Some(p) => (p.width, p.height, p.rgba.as_slice()),
        None => (w, h, &black),
    };
    let size = wgpu::Extent3d {
        width: w,
        height: h,
        depth_or_array_layers: 1,
    };
    let texture = device.create_texture(&wgpu::TextureDescriptor {
        label: Some("plate"),
        size,
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: wgpu::TextureFormat::Rgba8UnormSrgb,
        usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
        view_formats: &[],
    });
    queue.write_texture(
        texture.as_image_copy(),
        bytes,
        wgpu::TexelCopyBufferLayout {
            offset: 0,
            bytes_per_row: Some(4 * w),
            rows_per_image: Some(h),
        },
        size,
    );
    texture.create_view(&wgpu::TextureViewDescriptor::default())
}

impl TonemapPass {
    /// `planes`: for video, what the tone map needs to draw the Y'CbCr planes itself.
    pub fn new(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        views: Views,
        plate: Option<&Plate>,
        format: wgpu::TextureFormat,
        planes: Option<PlanesTarget>,
    ) -> Self {
        let Views {
            hdr,
            bloom,
            sampler,
        } = views;
        let module = super::wgsl::create(device, "tonemap.wgsl + ycbcr.wgsl", super::wgsl::TONEMAP);
        let fragment = wgpu::ShaderStages::FRAGMENT;
        let entries = [
            layout_entry::uniform(0, fragment),
            layout_entry::texture(1, fragment),
            layout_entry::texture(2, fragment),
            layout_entry::sampler(3, fragment),
            layout_entry::texture(5, fragment),
            layout_entry::uniform(4, fragment),
        ];
        let plate = plate_view(device, queue, plate);
        let bgl = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("tonemap bind group layout"),
            entries: &entries[..5],
        });
        let params = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("tonemap params"),
            size: std::mem::size_of::<TonemapParams>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let bind_groups = hdr.map(|hdr| {
            device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("tonemap bind group"),
                layout: &bgl,
                entries: &[
                    entry(0, params.as_entire_binding()),
                    entry(1, wgpu::BindingResource::TextureView(hdr)),
                    entry(2, wgpu::BindingResource::TextureView(bloom)),
                    entry(3, wgpu::BindingResource::Sampler(sampler)),
                    entry(5, wgpu::BindingResource::TextureView(&plate)),
                ],
            })
        });
        let layout_of = |bgl: &wgpu::BindGroupLayout| {
            device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some("tonemap"),
                bind_group_layouts: &[Some(bgl)],
                immediate_size: 0,
            })
        };
        let layout = layout_of(&bgl);
        let planes = planes.map(|t| {
            let bgl = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some("tonemap to planes bind group layout"),
                entries: &entries,
            });
            let bind_groups = [0, 1].map(|i| {
                device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("tonemap to planes bind group"),
                    layout: &bgl,
                    entries: &[
                        entry(0, params.as_entire_binding()),
                        entry(1, wgpu::BindingResource::TextureView(hdr[i])),
                        entry(2, wgpu::BindingResource::TextureView(bloom)),
                        entry(3, wgpu::BindingResource::Sampler(sampler)),
                        entry(5, wgpu::BindingResource::TextureView(&plate)),
                        entry(4, t.ycbcr.as_entire_binding()),
                    ],
                })
            });
            Planes {
                layout: layout_of(&bgl),
                bind_groups,
                formats: t.formats,
                entry: if t.rows == 2 {
                    "fs_tonemap_planes420"
                } else {
                    "fs_tonemap_planes422"
                },
            }
        });
        TonemapPass {
            module,
            layout,
            format,
            pipelines: Vec::new(),
            bind_groups,
            planes,
            params,
        }
    }

    /// Whether the tone map can draw the Y'CbCr planes itself ([`TonemapPass::run_planes`]).
    pub fn draws_planes(&self) -> bool {
        self.planes.is_some()
    }

    /// The index in `pipelines` of the pipeline for `key`, built the first time it is asked
    /// for.
    fn pipeline(&mut self, device: &wgpu::Device, key: Key) -> usize {
        if let Some(i) = self.pipelines.iter().position(|(k, _)| *k == key) {
            return i;
        }
        let target = |format| {
            Some(wgpu::ColorTargetState {
                format,
                blend: None,
                write_mask: wgpu::ColorWrites::ALL,
            })
        };
        let pipeline = match (key, &self.planes) {
            (Key::Planes(variant), Some(planes)) => {
                let targets: Vec<_> = planes.formats.iter().map(|&f| target(f)).collect();
                fullscreen_pipeline_with(
                    device,
                    "tonemap to planes",
                    &planes.layout,
                    &self.module,
                    planes.entry,
                    &targets,
                    &variant.constants(),
                )
            }
            (Key::Planes(_), None) => unreachable!("a tone map built without the planes"),
            (Key::Display(variant), _) => fullscreen_pipeline_with(
                device,
                "tonemap",
                &self.layout,
                &self.module,
                "fs_tonemap",
                &[target(self.format)],
                &variant.constants(),
            ),
        };
        self.pipelines.push((key, pipeline));
        self.pipelines.len() - 1
    }

    /// Tone-maps HDR target `hdr` into `target`.
    pub fn run(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        encoder: &mut wgpu::CommandEncoder,
        target: &wgpu::TextureView,
        hdr: usize,
        params: &TonemapParams,
    ) {
        queue.write_buffer(&self.params, 0, bytemuck::bytes_of(params));
        let i = self.pipeline(device, Key::Display(params.variant()));
        let mut pass = super::begin_pass(encoder, "tonemap pass", target, None);
        pass.set_pipeline(&self.pipelines[i].1);
        pass.set_bind_group(0, &self.bind_groups[hdr], &[]);
        pass.draw(0..3, 0..1);
    }

    /// Tone-maps HDR target `hdr` straight into the Y'CbCr planes `targets` (the conversion's
    /// uniform as given to [`TonemapPass::new`], set for this frame). `params.dither` must be 0:
    /// the codes are dithered instead.
    pub fn run_planes(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        encoder: &mut wgpu::CommandEncoder,
        targets: &[&wgpu::TextureView],
        hdr: usize,
        params: &TonemapParams,
    ) {
        debug_assert_eq!(params.dither, 0.0);
        queue.write_buffer(&self.params, 0, bytemuck::bytes_of(params));
        let i = self.pipeline(device, Key::Planes(params.variant()));
        let planes = self
            .planes
            .as_ref()
            .expect("a tone map built with the planes");
        let mut pass = super::begin_overwrite(encoder, "tonemap to planes pass", targets);
        pass.set_pipeline(&self.pipelines[i].1);
        pass.set_bind_group(0, &planes.bind_groups[hdr], &[]);
        pass.draw(0..3, 0..1);
    }
}

fn entry(binding: u32, resource: wgpu::BindingResource<'_>) -> wgpu::BindGroupEntry<'_> {
    wgpu::BindGroupEntry { binding, resource }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn neutral() -> TonemapParams {
        TonemapParams {
            contrast: 1.0,
            saturation: 1.0,
            gamma: 1.0,
            gain: 1.0,
            ..Default::default()
        }
    }

    #[test]
    fn a_part_is_left_out_only_where_its_uniforms_make_it_the_identity() {
        let v = neutral().variant();
        assert!(!v.bloom && !v.vignette && !v.dither && !v.grade && !v.ink && !v.linear);
        let on = |f: fn(&mut TonemapParams)| {
            let mut p = neutral();
            f(&mut p);
            p.variant()
        };
        assert!(on(|p| p.bloom = 0.1).bloom);
        assert!(on(|p| p.vignette = 0.1).vignette);
        assert!(on(|p| p.dither = 1.0).dither);
        assert!(on(|p| p.ink = 1).ink);
        assert!(on(|p| p.linear = 1).linear);
        for grade in [
            (|p: &mut TonemapParams| p.contrast = 1.1) as fn(&mut TonemapParams),
            |p| p.saturation = 0.9,
            |p| p.lift = 0.02,
            |p| p.gamma = 1.2,
            |p| p.gain = 0.9,
        ] {
            assert!(on(grade).grade);
        }
    }
}
