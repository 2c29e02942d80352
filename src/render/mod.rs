//! The renderer: recorded frames → images, headless, on whatever GPU (or software driver)
//! is present. One file per pass, each with its WGSL in `shaders/`:
//!
//! density (compute, optional) → fade or clear (trails) → agents (additive sprites, HDR) →
//! bloom (mip chain) → tonemap (ACES, background, vignette, sRGB) → yuv (compute, for video)
//! → readback ring.
//!
//! 3D recordings go through a perspective camera (`camera`: orbit, fixed or follow; `top`
//! keeps the orthographic x–y projection): the agents pass projects each agent with the
//! frame's view-projection matrix, shrinks its sprite with distance and fades it with fog; the
//! world box's wireframe, if asked for, is drawn onto the display image after tone mapping.
//! Density in 3D is counted on a 3D grid.
//!
//! The renderer never advances the physics: it sees only what a `.bfs` file holds.

pub mod agents;
pub mod bloom;
pub mod camera;
pub mod colormap;
pub mod density;
pub mod fade;
pub mod gpu;
pub mod readback;
pub mod tonemap;
pub mod yuv;

use anyhow::{bail, Result};

use crate::bfs::Frame;
use agents::{AgentBuffers, AgentBuffers3, AgentParams, AgentsPass};
use bloom::BloomPass;
use camera::{Camera, CameraMode};
use density::DensityPass;
use fade::FadePass;
use gpu::Gpu;
use readback::Readback;
use tonemap::{TonemapParams, TonemapPass};
use yuv::YuvPass;

/// The HDR target: half floats, so additive sprites can exceed 1 and trails can fade
/// smoothly without banding; renderable and blendable on every backend.
pub const HDR_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba16Float;
/// Bloom mips. `Rg11b10Ufloat` would halve the bandwidth but is renderable only with an
/// optional feature; `Rgba16Float` works everywhere.
pub const BLOOM_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba16Float;
/// The display image. Plain `Rgba8Unorm`: the tone-map pass writes sRGB-encoded values
/// itself, so the bytes read back (PNG) and fed to the YUV pass are exactly sRGB.
pub const LDR_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8Unorm;

/// What agents are coloured by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorMode {
    Speed,
    Heading,
    Density,
    Fixed,
}

impl ColorMode {
    pub fn parse(s: &str) -> Option<ColorMode> {
        Some(match s {
            "speed" => ColorMode::Speed,
            "heading" => ColorMode::Heading,
            "density" => ColorMode::Density,
            "fixed" => ColorMode::Fixed,
            _ => return None,
        })
    }

    fn code(self) -> u32 {
        match self {
            ColorMode::Speed => 0,
            ColorMode::Heading => 1,
            ColorMode::Density => 2,
            ColorMode::Fixed => 3,
        }
    }
}

/// How the world is fitted into the frame when their aspects differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Fit {
    /// The whole world shows, with bars of background on two sides.
    Letterbox,
    /// The frame is filled; the world is cropped on two sides.
    Cover,
}

/// Everything about how a recording looks, resolved (flags, else the recording's scene
/// `render` section, else defaults) and validated.
#[derive(Clone, Debug)]
pub struct Look {
    pub width: u32,
    pub height: u32,
    pub color: ColorMode,
    pub colormap: String,
    /// Colour value at the map's ends (speed in world units/s; density in agents per cell).
    /// `None`: speed → 5th..95th percentile over sampled frames; density → 0..4× the mean.
    pub range: Option<[f32; 2]>,
    /// Fraction of the previous frame kept (0 = no trails).
    pub trails: f32,
    /// Bloom strength (0 = off).
    pub bloom: f32,
    pub exposure: f32,
    /// sRGB, as written (`#rrggbb` / 255).
    pub background: [f32; 3],
    /// Sprite core radius in pixels at 1080p (scaled with the output height).
    pub point_size: f32,
    pub fit: Fit,
    pub follow: bool,
    pub vignette: f32,
    /// 3D recordings only: how they are looked at (`None` for 2D).
    pub view3: Option<View3>,
}

/// How a 3D recording is shown (resolved and validated).
#[derive(Clone, Debug, PartialEq)]
pub struct View3 {
    pub mode: CameraMode,
    /// Fixed camera: eye and target (world units) [default: the orbit's start, world centre].
    pub eye: Option<[f32; 3]>,
    pub target: Option<[f32; 3]>,
    /// Vertical field of view, degrees.
    pub fov: f32,
    /// 0..1: how far the farthest agents fade towards the background.
    pub fog: f32,
    /// Draw the world box as a faint wireframe.
    pub world_box: bool,
    /// The clip one orbit spans: first frame number and frame count.
    pub clip: (u64, u64),
}

/// Brightness of the world box's lines, added to the display image (sRGB-encoded).
const BOX_LEVEL: f32 = 0.16;
/// Follow camera: fraction of the way to the new centre (and radius) taken each frame.
const FOLLOW_EASE: f32 = 0.15;
const FOLLOW_RADIUS_EASE: f32 = 0.05;
/// Follow camera: the framed radius is this many times the agents' RMS distance from the
/// centre of mass.
const FOLLOW_RADIUS_RMS: f32 = 2.0;
/// Agents sampled per frame for the follow camera's radius.
const FOLLOW_SAMPLE_AGENTS: usize = 50_000;

/// What the renderer knows about the world from the file's header.
#[derive(Clone, Copy, Debug)]
pub struct World {
    pub dim: usize,
    /// x, y size (density, and the `top` camera, use the x–y projection of a 3D world).
    pub size: [f32; 2],
    /// z size (0 in 2D).
    pub depth: f32,
    pub wrap: bool,
    /// Agents outside the world are possible (open boundary): no scissor.
    pub open: bool,
}

impl World {
    /// The z size when density is counted on a 3D grid (3D recordings), else `None`.
    pub fn density_depth(&self) -> Option<f32> {
        (self.dim == 3 && self.depth > 0.0).then_some(self.depth)
    }
}

/// What comes out of each frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// yuv420p, BT.709 limited range (for FFmpeg).
    Yuv420p,
    /// RGBA8, sRGB, tight rows (for PNG).
    Rgba8,
}

pub(crate) mod layout_entry {
    pub fn uniform(binding: u32, visibility: wgpu::ShaderStages) -> wgpu::BindGroupLayoutEntry {
        wgpu::BindGroupLayoutEntry {
            binding,
            visibility,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Uniform,
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        }
    }

    pub fn storage(
        binding: u32,
        visibility: wgpu::ShaderStages,
        read_only: bool,
    ) -> wgpu::BindGroupLayoutEntry {
        wgpu::BindGroupLayoutEntry {
            binding,
            visibility,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        }
    }

    fn tex(
        binding: u32,
        visibility: wgpu::ShaderStages,
        filterable: bool,
    ) -> wgpu::BindGroupLayoutEntry {
        wgpu::BindGroupLayoutEntry {
            binding,
            visibility,
            ty: wgpu::BindingType::Texture {
                sample_type: wgpu::TextureSampleType::Float { filterable },
                view_dimension: wgpu::TextureViewDimension::D2,
                multisampled: false,
            },
            count: None,
        }
    }

    pub fn texture(binding: u32, visibility: wgpu::ShaderStages) -> wgpu::BindGroupLayoutEntry {
        tex(binding, visibility, true)
    }

    pub fn texture_unfilterable(
        binding: u32,
        visibility: wgpu::ShaderStages,
    ) -> wgpu::BindGroupLayoutEntry {
        tex(binding, visibility, false)
    }

    pub fn sampler(binding: u32, visibility: wgpu::ShaderStages) -> wgpu::BindGroupLayoutEntry {
        wgpu::BindGroupLayoutEntry {
            binding,
            visibility,
            ty: wgpu::BindingType::Sampler(wgpu::SamplerBindingType::Filtering),
            count: None,
        }
    }
}

/// Workgroup counts for `groups` workgroups, as (x, y) within the per-dimension limit.
pub(crate) fn dispatch_2d(groups: u32) -> (u32, u32) {
    const MAX: u32 = 65535;
    if groups <= MAX {
        (groups.max(1), 1)
    } else {
        (MAX, groups.div_ceil(MAX))
    }
}

/// A pipeline drawing one full-screen triangle (`vs_fullscreen` in `module`), with one bind
/// group (or none).
pub(crate) fn fullscreen_pipeline(
    device: &wgpu::Device,
    label: &str,
    module: &wgpu::ShaderModule,
    fs_entry: &str,
    bgl: Option<&wgpu::BindGroupLayout>,
    format: wgpu::TextureFormat,
    blend: Option<wgpu::BlendState>,
) -> wgpu::RenderPipeline {
    let groups = [bgl];
    let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some(label),
        bind_group_layouts: if bgl.is_some() { &groups } else { &[] },
        immediate_size: 0,
    });
    device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
        label: Some(label),
        layout: Some(&layout),
        vertex: wgpu::VertexState {
            module,
            entry_point: Some("vs_fullscreen"),
            compilation_options: Default::default(),
            buffers: &[],
        },
        primitive: wgpu::PrimitiveState::default(),
        depth_stencil: None,
        multisample: wgpu::MultisampleState::default(),
        fragment: Some(wgpu::FragmentState {
            module,
            entry_point: Some(fs_entry),
            compilation_options: Default::default(),
            targets: &[Some(wgpu::ColorTargetState {
                format,
                blend,
                write_mask: wgpu::ColorWrites::ALL,
            })],
        }),
        multiview_mask: None,
        cache: None,
    })
}

/// A render pass on one target, cleared to `clear` or loaded.
pub(crate) fn begin_pass<'e>(
    encoder: &'e mut wgpu::CommandEncoder,
    label: &str,
    target: &wgpu::TextureView,
    clear: Option<wgpu::Color>,
) -> wgpu::RenderPass<'e> {
    encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
        label: Some(label),
        color_attachments: &[Some(wgpu::RenderPassColorAttachment {
            view: target,
            depth_slice: None,
            resolve_target: None,
            ops: wgpu::Operations {
                load: match clear {
                    Some(c) => wgpu::LoadOp::Clear(c),
                    None => wgpu::LoadOp::Load,
                },
                store: wgpu::StoreOp::Store,
            },
        })],
        depth_stencil_attachment: None,
        timestamp_writes: None,
        occlusion_query_set: None,
        multiview_mask: None,
    })
}

fn srgb_to_linear(c: f32) -> f32 {
    if c <= 0.04045 {
        c / 12.92
    } else {
        ((c + 0.055) / 1.055).powf(2.4)
    }
}

/// Centre of mass of x, y (circular mean per axis in a periodic world); `None` if no agent
/// has finite coordinates.
pub fn centre_of_mass(frame: &Frame, n: usize, world: &World) -> Option<[f32; 2]> {
    let mut out = [0.0f32; 2];
    for (axis, o) in out.iter_mut().enumerate() {
        let xs = &frame.pos[axis * n..(axis + 1) * n];
        let l = world.size[axis] as f64;
        let (mut a, mut b, mut count) = (0.0f64, 0.0f64, 0usize);
        for &x in xs.iter().filter(|x| x.is_finite()) {
            if world.wrap {
                let t = x as f64 / l * std::f64::consts::TAU;
                a += t.cos();
                b += t.sin();
            } else {
                a += x as f64;
            }
            count += 1;
        }
        if count == 0 {
            return None;
        }
        *o = if world.wrap {
            let t = b.atan2(a).rem_euclid(std::f64::consts::TAU);
            (t / std::f64::consts::TAU * l) as f32
        } else {
            (a / count as f64) as f32
        };
    }
    Some(out)
}

/// Centre of mass in 3D (circular mean per axis in a periodic world); `None` if no agent has
/// finite coordinates.
pub fn centre_of_mass3(frame: &Frame, n: usize, size: [f32; 3], wrap: bool) -> Option<[f32; 3]> {
    let mut out = [0.0f32; 3];
    for (axis, o) in out.iter_mut().enumerate() {
        let xs = frame.pos.get(axis * n..(axis + 1) * n)?;
        let l = size[axis] as f64;
        let periodic = wrap && l > 0.0;
        let (mut a, mut b, mut count) = (0.0f64, 0.0f64, 0usize);
        for &x in xs.iter().filter(|x| x.is_finite()) {
            if periodic {
                let t = x as f64 / l * std::f64::consts::TAU;
                a += t.cos();
                b += t.sin();
            } else {
                a += x as f64;
            }
            count += 1;
        }
        if count == 0 {
            return None;
        }
        *o = if periodic {
            let t = b.atan2(a).rem_euclid(std::f64::consts::TAU);
            (t / std::f64::consts::TAU * l) as f32
        } else {
            (a / count as f64) as f32
        };
    }
    Some(out)
}

/// The GPU side of rendering: owns every pass and target, renders one frame at a time and
/// hands finished frames (oldest first, a few frames behind) to a callback.
pub struct Renderer {
    gpu: Gpu,
    look: Look,
    world: World,
    output: Output,
    hdr_view: wgpu::TextureView,
    ldr: wgpu::Texture,
    agents_buf: wgpu::Buffer,
    capacity: u32,
    density: Option<DensityPass>,
    agents: AgentsPass,
    fade: FadePass,
    bloom: Option<BloomPass>,
    tonemap: TonemapPass,
    yuv: Option<YuvPass>,
    readback: Readback,
    padded_row: u32,
    tight: Vec<u8>,
    drawn: u64,
    centre: Option<[f32; 2]>,
    /// Follow camera (3D): eased centre and radius.
    follow3: Option<([f32; 3], f32)>,
    /// Colour range actually used (resolved by the caller for speed).
    range: [f32; 2],
}

impl Renderer {
    /// Checks the size against the adapter's limits, builds every pass.
    pub fn new(
        gpu: Gpu,
        look: Look,
        world: World,
        output: Output,
        capacity: u32,
    ) -> Result<Renderer> {
        let (w, h) = (look.width, look.height);
        if w == 0 || h == 0 || w % 2 == 1 || h % 2 == 1 {
            bail!("--size: must be two even numbers above 0, got {w}x{h}");
        }
        if w > gpu.max_size() || h > gpu.max_size() {
            bail!(
                "--size: {w}x{h} is larger than this adapter's texture limit of {} pixels a side ({})",
                gpu.max_size(),
                gpu.info.name
            );
        }
        let device = &gpu.device;
        let queue = &gpu.queue;
        let target = |label: &str, format, usage| {
            device.create_texture(&wgpu::TextureDescriptor {
                label: Some(label),
                size: wgpu::Extent3d {
                    width: w,
                    height: h,
                    depth_or_array_layers: 1,
                },
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format,
                usage,
                view_formats: &[],
            })
        };
        let rt = wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::TEXTURE_BINDING;
        let hdr = target("hdr target", HDR_FORMAT, rt);
        let hdr_view = hdr.create_view(&Default::default());
        let ldr = target(
            "display image",
            LDR_FORMAT,
            rt | wgpu::TextureUsages::COPY_SRC,
        );
        let ldr_view = ldr.create_view(&Default::default());

        let lut_bytes = colormap::bake(&look.colormap)?;
        let lut = device.create_texture(&wgpu::TextureDescriptor {
            label: Some("colour map"),
            size: wgpu::Extent3d {
                width: colormap::LUT_SIZE as u32,
                height: 1,
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            // sRGB bytes, decoded to linear when sampled.
            format: wgpu::TextureFormat::Rgba8UnormSrgb,
            usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
            view_formats: &[],
        });
        queue.write_texture(
            wgpu::TexelCopyTextureInfo {
                texture: &lut,
                mip_level: 0,
                origin: wgpu::Origin3d::ZERO,
                aspect: wgpu::TextureAspect::All,
            },
            &lut_bytes,
            wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(colormap::LUT_SIZE as u32 * 4),
                rows_per_image: None,
            },
            wgpu::Extent3d {
                width: colormap::LUT_SIZE as u32,
                height: 1,
                depth_or_array_layers: 1,
            },
        );
        let lut_view = lut.create_view(&Default::default());
        let sampler = device.create_sampler(&wgpu::SamplerDescriptor {
            label: Some("linear clamp sampler"),
            address_mode_u: wgpu::AddressMode::ClampToEdge,
            address_mode_v: wgpu::AddressMode::ClampToEdge,
            mag_filter: wgpu::FilterMode::Linear,
            min_filter: wgpu::FilterMode::Linear,
            ..Default::default()
        });

        let bloom =
            (look.bloom > 0.0).then(|| BloomPass::new(device, queue, &hdr_view, w, h, &sampler));
        // Without bloom the tone-map pass still needs a texture to bind: the LUT will do.
        let bloom_view = bloom.as_ref().map(|b| b.output()).unwrap_or(&lut_view);
        let tonemap = TonemapPass::new(device, &hdr_view, bloom_view, &sampler);
        let yuv = (output == Output::Yuv420p).then(|| YuvPass::new(device, queue, &ldr_view, w, h));
        let padded_row = (w * 4).div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT)
            * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
        let staging = match &yuv {
            Some(y) => y.params().buffer_bytes(),
            None => padded_row as u64 * h as u64,
        };
        let readback = Readback::new(device, staging);
        let agents = AgentsPass::new(device, &lut_view, &sampler);
        let fade = FadePass::new(device);
        let capacity = capacity.max(1);
        let agents_buf = Self::agent_buffer(device, world.dim, capacity);
        let density = (look.color == ColorMode::Density).then(|| {
            DensityPass::new(
                device,
                &agents_buf,
                capacity,
                world.size,
                world.density_depth(),
                world.wrap,
            )
        });
        let range = look.range.unwrap_or([0.0, 1.0]);
        Ok(Renderer {
            gpu,
            look,
            world,
            output,
            hdr_view,
            ldr,
            agents_buf,
            capacity,
            density,
            agents,
            fade,
            bloom,
            tonemap,
            yuv,
            readback,
            padded_row,
            tight: Vec::new(),
            drawn: 0,
            centre: None,
            follow3: None,
            range,
        })
    }

    fn agent_buffer(device: &wgpu::Device, dim: usize, capacity: u32) -> wgpu::Buffer {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("agents (positions, velocities)"),
            size: 2 * dim as u64 * capacity as u64 * 4,
            usage: wgpu::BufferUsages::VERTEX
                | wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
    }

    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// Bytes of one finished frame as handed to the callback.
    pub fn frame_bytes(&self) -> usize {
        match &self.yuv {
            Some(y) => y.params().frame_bytes(),
            None => self.look.width as usize * self.look.height as usize * 4,
        }
    }

    /// Where the camera looks: world point at the viewport's lower-left, and world units spanned.
    fn view(&mut self, frame: &Frame, n: usize) -> ([f32; 2], [f32; 2], [f32; 2]) {
        let (w, h) = (self.look.width as f32, self.look.height as f32);
        let [ww, wh] = self.world.size;
        let sx = w / ww.max(1e-6);
        let sy = h / wh.max(1e-6);
        let scale = match self.look.fit {
            Fit::Letterbox => sx.min(sy),
            Fit::Cover => sx.max(sy),
        };
        let size = [w / scale, h / scale];
        let mut centre = [ww / 2.0, wh / 2.0];
        if self.look.follow {
            if let Some(target) = centre_of_mass(frame, n, &self.world) {
                // Ease towards the centre of mass so the camera does not jitter.
                let c = match self.centre {
                    None => target,
                    Some(prev) => {
                        let mut c = prev;
                        for k in 0..2 {
                            let mut d = target[k] - prev[k];
                            if self.world.wrap {
                                let l = self.world.size[k];
                                d -= (d / l).round() * l;
                            }
                            c[k] = prev[k] + 0.15 * d;
                        }
                        c
                    }
                };
                self.centre = Some(c);
                centre = c;
            }
        }
        (
            [centre[0] - size[0] / 2.0, centre[1] - size[1] / 2.0],
            size,
            centre,
        )
    }

    /// 3D through a perspective camera: the camera for this frame, as the 3D fields of the
    /// agents pass's parameters. `None` for 2D and for the `top` camera.
    fn camera3(&mut self, frame: &Frame, n: usize) -> Option<AgentParams> {
        let v = self.look.view3.clone()?;
        if v.mode == CameraMode::Top {
            return None;
        }
        let size = [self.world.size[0], self.world.size[1], self.world.depth];
        let aspect = self.look.width as f32 / self.look.height as f32;
        let box_centre = size.map(|s| s / 2.0);
        let box_radius = camera::distance(size, [0.0; 3]) / 2.0;
        let (cam, centre, radius, min_image) = match v.mode {
            CameraMode::Orbit | CameraMode::Top => {
                let phase = if v.clip.1 == 0 {
                    0.0
                } else {
                    (frame.index.saturating_sub(v.clip.0) % v.clip.1) as f32 / v.clip.1 as f32
                };
                let cam = camera::orbit(box_centre, box_radius, v.fov, aspect, phase);
                (cam, box_centre, box_radius, false)
            }
            CameraMode::Fixed => {
                let target = v.target.unwrap_or(box_centre);
                let eye = v
                    .eye
                    .unwrap_or_else(|| camera::orbit(target, box_radius, v.fov, aspect, 0.0).eye);
                let cam = Camera {
                    eye,
                    target,
                    fov_y: v.fov,
                };
                (cam, target, box_radius, false)
            }
            CameraMode::Follow => {
                let (c, r) = self.follow_sphere(frame, n, size, box_centre, box_radius);
                let d = camera::fit_distance(r, v.fov, aspect);
                let cam = Camera {
                    eye: camera::eye_around(c, d, camera::START_AZIMUTH_DEG),
                    target: c,
                    fov_y: v.fov,
                };
                (cam, c, r, self.world.wrap)
            }
        };
        let ref_dist = camera::distance(cam.eye, centre).max(1e-6);
        let (near, far) = camera::planes(cam.eye, centre, radius);
        let m = camera::view_proj(&cam, aspect, near, far);
        Some(AgentParams {
            view_proj: camera::columns(&m),
            eye: cam.eye,
            fog: v.fog,
            period: size,
            ref_dist,
            anchor: centre,
            min_image: min_image as u32,
            fog_near: (ref_dist - radius).max(0.0),
            fog_far: ref_dist + radius,
            box_level: BOX_LEVEL,
            near,
            ..Default::default()
        })
    }

    /// Follow camera: the eased centre of mass and framed radius.
    fn follow_sphere(
        &mut self,
        frame: &Frame,
        n: usize,
        size: [f32; 3],
        fallback_centre: [f32; 3],
        fallback_radius: f32,
    ) -> ([f32; 3], f32) {
        let wrap = self.world.wrap;
        let Some(target) = centre_of_mass3(frame, n, size, wrap) else {
            return self.follow3.unwrap_or((fallback_centre, fallback_radius));
        };
        // Offset of `p` from `c` (the nearest image in a periodic world).
        let offset = |p: f32, c: f32, l: f32| {
            let d = p - c;
            if wrap && l > 0.0 {
                d - (d / l).round() * l
            } else {
                d
            }
        };
        let step = (n / FOLLOW_SAMPLE_AGENTS).max(1);
        let (mut sum, mut count) = (0.0f64, 0usize);
        for i in (0..n).step_by(step) {
            let mut r2 = 0.0f64;
            for a in 0..3 {
                let d = offset(frame.pos[a * n + i], target[a], size[a]) as f64;
                r2 += d * d;
            }
            if r2.is_finite() {
                sum += r2;
                count += 1;
            }
        }
        let rms = if count > 0 {
            (sum / count as f64).sqrt() as f32
        } else {
            fallback_radius
        };
        let min_r = fallback_radius * 0.02;
        let r_target = (rms * FOLLOW_RADIUS_RMS).clamp(min_r.max(1e-3), fallback_radius * 2.0);
        let next = match self.follow3 {
            None => (target, r_target),
            Some((prev, r)) => {
                let mut c = prev;
                for a in 0..3 {
                    c[a] = prev[a] + FOLLOW_EASE * offset(target[a], prev[a], size[a]);
                    if wrap && size[a] > 0.0 {
                        c[a] = c[a].rem_euclid(size[a]);
                    }
                }
                (c, r + FOLLOW_RADIUS_EASE * (r_target - r))
            }
        };
        self.follow3 = Some(next);
        next
    }

    /// Renders `frame`; finished frames (a few behind) go to `sink` in order.
    pub fn render(
        &mut self,
        frame: &Frame,
        sink: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        if self.readback.full() {
            self.deliver_oldest(sink)?;
        }
        let dim = self.world.dim;
        let n = frame.agents(dim);
        let n32 = u32::try_from(n)
            .map_err(|_| anyhow::anyhow!("frame {}: too many agents", frame.index))?;
        if n32 > self.capacity {
            self.capacity = n32;
            self.agents_buf = Self::agent_buffer(&self.gpu.device, dim, n32);
            if self.density.is_some() {
                self.density = Some(DensityPass::new(
                    &self.gpu.device,
                    &self.agents_buf,
                    n32,
                    self.world.size,
                    self.world.density_depth(),
                    self.world.wrap,
                ));
            }
        }
        let cam3 = self.camera3(frame, n);
        let (view_min, view_size, centre) = if cam3.is_some() {
            ([0.0; 2], [1.0; 2], [0.0; 2])
        } else {
            self.view(frame, n)
        };
        let queue = &self.gpu.queue;
        // Positions at 0, velocities right after them (same layout as the file's frame).
        let stride = dim as u64 * n as u64 * 4;
        if n > 0 {
            queue.write_buffer(
                &self.agents_buf,
                0,
                bytemuck::cast_slice(&frame.pos[..dim * n]),
            );
            queue.write_buffer(
                &self.agents_buf,
                stride,
                bytemuck::cast_slice(&frame.vel[..dim * n]),
            );
        }
        let mut encoder = self
            .gpu
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("frame encoder"),
            });
        let mut range = self.range;
        if let Some(d) = self.density.as_mut() {
            d.run(queue, &mut encoder, n32);
            if self.look.range.is_none() {
                range = [0.0, 4.0 * d.mean_per_cell(n32)];
            }
        }
        let trails = (self.drawn > 0 && self.look.trails > 0.0).then_some(self.look.trails);
        self.fade.run(&mut encoder, &self.hdr_view, trails);
        let (w, h) = (self.look.width as f32, self.look.height as f32);
        // Below ~0.7 px a core would fall between pixel centres and flicker: keep it a pixel.
        let core_px = (self.look.point_size * h / 1080.0).max(0.7);
        let radius_px = core_px * 4.0;
        let density_buf = self
            .density
            .as_ref()
            .map(|d| &d.density)
            .unwrap_or(&self.agents_buf);
        let mut with_box = false;
        if let Some(c) = cam3 {
            let core = (core_px / radius_px).clamp(0.05, 1.0);
            let params = AgentParams {
                viewport: [w, h],
                range,
                radius_px,
                core,
                mode: self.look.color.code(),
                copies: 1,
                intensity: 1.0,
                halo: 0.35,
                ..c
            };
            let q = n as u64 * 4;
            let a = &self.agents_buf;
            let bufs = AgentBuffers3 {
                slots: [
                    (a, 0),
                    (a, q),
                    (a, 2 * q),
                    (a, stride),
                    (a, stride + q),
                    (a, stride + 2 * q),
                    (density_buf, 0),
                ],
                n: n32,
            };
            self.agents
                .draw3(queue, &mut encoder, &self.hdr_view, &params, &bufs);
            with_box = self.look.view3.as_ref().is_some_and(|v| v.world_box);
        } else {
            let params = AgentParams {
                view_min,
                view_size,
                world: self.world.size,
                viewport: [w, h],
                range,
                radius_px,
                core: (core_px / radius_px).clamp(0.05, 1.0),
                mode: self.look.color.code(),
                copies: if self.world.wrap { 9 } else { 1 },
                intensity: 1.0,
                halo: 0.35,
                ..Default::default()
            };
            let bufs = AgentBuffers {
                slots: [
                    (&self.agents_buf, 0),
                    (&self.agents_buf, n as u64 * 4),
                    (&self.agents_buf, stride),
                    (&self.agents_buf, stride + n as u64 * 4),
                    (density_buf, 0),
                ],
                n: n32,
            };
            let scissor = self.scissor(centre, view_min, view_size);
            self.agents
                .draw(queue, &mut encoder, &self.hdr_view, &params, &bufs, scissor);
        }
        if let Some(b) = &self.bloom {
            b.run(&mut encoder);
        }
        let bg = self.look.background.map(srgb_to_linear);
        let ldr_view = self.ldr.create_view(&Default::default());
        self.tonemap.run(
            queue,
            &mut encoder,
            &ldr_view,
            &TonemapParams {
                background: [bg[0], bg[1], bg[2], 1.0],
                exposure: self.look.exposure,
                bloom: if self.bloom.is_some() {
                    self.look.bloom
                } else {
                    0.0
                },
                vignette: self.look.vignette,
                aspect: w / h,
            },
        );
        if with_box {
            self.agents.draw_box(&mut encoder, &ldr_view);
        }
        match &self.yuv {
            Some(y) => {
                y.run(&mut encoder);
                encoder.copy_buffer_to_buffer(
                    &y.out,
                    0,
                    self.readback.next_buffer(),
                    0,
                    y.params().buffer_bytes(),
                );
            }
            None => encoder.copy_texture_to_buffer(
                wgpu::TexelCopyTextureInfo {
                    texture: &self.ldr,
                    mip_level: 0,
                    origin: wgpu::Origin3d::ZERO,
                    aspect: wgpu::TextureAspect::All,
                },
                wgpu::TexelCopyBufferInfo {
                    buffer: self.readback.next_buffer(),
                    layout: wgpu::TexelCopyBufferLayout {
                        offset: 0,
                        bytes_per_row: Some(self.padded_row),
                        rows_per_image: None,
                    },
                },
                wgpu::Extent3d {
                    width: self.look.width,
                    height: self.look.height,
                    depth_or_array_layers: 1,
                },
            ),
        }
        let submission = queue.submit([encoder.finish()]);
        self.readback.submitted(submission);
        self.drawn += 1;
        Ok(())
    }

    /// Pixel rectangle agents may be drawn in: one world-sized window around the view's
    /// centre, so the letterbox bars stay empty and a wrapping world shows every agent once.
    fn scissor(
        &self,
        centre: [f32; 2],
        view_min: [f32; 2],
        view_size: [f32; 2],
    ) -> Option<[u32; 4]> {
        if self.world.open {
            return None;
        }
        let (w, h) = (self.look.width as f32, self.look.height as f32);
        let lo = [
            centre[0] - self.world.size[0] / 2.0,
            centre[1] - self.world.size[1] / 2.0,
        ];
        let px = |x: f32, axis: usize| (x - view_min[axis]) / view_size[axis];
        let x0 = (px(lo[0], 0) * w).round().clamp(0.0, w);
        let x1 = (px(lo[0] + self.world.size[0], 0) * w)
            .round()
            .clamp(0.0, w);
        // Pixel rows run top-down; world y runs bottom-up.
        let y0 = ((1.0 - px(lo[1] + self.world.size[1], 1)) * h)
            .round()
            .clamp(0.0, h);
        let y1 = ((1.0 - px(lo[1], 1)) * h).round().clamp(0.0, h);
        Some([
            x0 as u32,
            y0 as u32,
            (x1 - x0).max(0.0) as u32,
            (y1 - y0).max(0.0) as u32,
        ])
    }

    fn deliver_oldest(&mut self, sink: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
        let mut tight = std::mem::take(&mut self.tight);
        let (w, h) = (self.look.width as usize, self.look.height as usize);
        let padded = self.padded_row as usize;
        let yuv = self.yuv.as_ref().map(|y| *y.params());
        self.readback
            .take_oldest(&self.gpu.device, |bytes| match yuv {
                Some(p) => p.unpack(bytes, &mut tight),
                None => {
                    tight.clear();
                    for row in 0..h {
                        tight.extend_from_slice(&bytes[row * padded..row * padded + w * 4]);
                    }
                }
            })?;
        let r = sink(&tight);
        self.tight = tight;
        r
    }

    /// Hands every frame still in flight to `sink`.
    pub fn finish(&mut self, sink: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
        while self.readback.pending() > 0 {
            self.deliver_oldest(sink)?;
        }
        Ok(())
    }

    pub fn output(&self) -> Output {
        self.output
    }
}
