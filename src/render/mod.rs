//! The renderer: recorded frames → images, headless, on whatever GPU (or software driver)
//! is present. One file per pass, each with its WGSL in `shaders/`:
//!
//! density (compute, optional) → agents into the HDR target, with the last frame's light times
//! the fade under them (trails): in 2D splatted and filtered in compute passes (`splat`), else
//! as instanced sprites (`agents`, over the `fade` pass) → bloom (mip chain) → tonemap (ACES,
//! background, vignette, sRGB) → yuv (planes, for video) → readback ring. The two HDR targets
//! take turns: each frame is drawn in one while the other holds the last frame's light.
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
mod deep;
mod delivery;
pub mod density;
mod draw;
pub mod fade;
pub mod gpu;
pub mod laps;
pub mod limits;
pub mod obstacles;
pub mod overlay;
pub mod pipeline;
pub mod present;
pub mod readback;
mod settings;
mod setup;
mod shown;
mod soft;
mod soft_frame;
pub mod splat;
pub mod tonemap;
mod view;
pub mod way;
pub use view::orbit_trails;
pub mod wgsl;
pub mod yuv;

use anyhow::{bail, Context, Result};

use crate::bfs::Frame;
use crate::look::keys::LookField;
use agents::AgentsPass;
use bloom::BloomPass;
use camera::CameraMode;
use density::DensityPass;
use fade::FadePass;
use gpu::Gpu;
use laps::{Laps, Pass};
use overlay::{FrameInfo, OverlayPass};
use readback::Readback;
use setup::{linear_sampler, overlay_pass, padded_row, staging_bytes, targets};
use tonemap::{TonemapParams, TonemapPass};
use yuv::YuvPass;

/// The HDR target: half floats, so additive sprites can exceed 1 and trails can fade
/// smoothly without banding; renderable and blendable on every backend.
pub const HDR_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba16Float;
/// Bloom mips. `Rg11b10Ufloat` would halve the bandwidth but is renderable only with an
/// optional feature; `Rgba16Float` works everywhere.
pub const BLOOM_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba16Float;
// The display image: `Output::display_format`. Plain `Rgba8Unorm` for 8-bit outputs (or
// `Rgba16Float` for deeper ones): the tone-map pass writes sRGB-encoded values itself, so the
// values read back (PNG) and fed to the YUV pass are exactly sRGB.

/// The background outside a letterboxed world, relative to inside it.
const BARS: f32 = 0.55;

/// Brightness of the world box's lines, added to the display image (sRGB-encoded).
const BOX_LEVEL: f32 = 0.16;

pub(crate) use pipeline::{
    begin_overwrite, begin_pass, bind_in_order, dispatch_2d, fullscreen_pipeline,
    fullscreen_pipeline_to, fullscreen_pipeline_with, layout_entry, sampled_texture,
    uniform_buffer, uniform_textures_sampler,
};
pub use settings::{
    ColorMode, Fit, Grade, Output, Plate, Settings, Shape, Style, View3, World, YuvFormat,
};
pub use view::{centre_of_mass, centre_of_mass3, mean_heading};

/// sRGB-encoded → linear light.
pub fn srgb_to_linear(c: f32) -> f32 {
    if c <= 0.04045 {
        c / 12.92
    } else {
        ((c + 0.055) / 1.055).powf(2.4)
    }
}

/// The GPU side of rendering: owns every pass and target, renders one frame at a time and
/// hands finished frames (oldest first, a few frames behind) to a callback.
pub struct Renderer {
    gpu: Gpu,
    look: Settings,
    world: World,
    output: Output,
    /// Two HDR targets: the frame is drawn in `hdr_views[cur]`, starting from the other one's
    /// light (the last frame's) times the fade.
    hdr_views: [wgpu::TextureView; 2],
    cur: usize,
    ldr: wgpu::Texture,
    ldr_view: wgpu::TextureView,
    agents_buf: wgpu::Buffer,
    capacity: u32,
    density: Option<DensityPass>,
    /// `--color species`: each agent's species index / 255, one f32 per agent
    /// ([`Renderer::set_species`]).
    species: Option<wgpu::Buffer>,
    /// Each agent's sprite size as a multiple of the point size, one f32 per agent, where its
    /// species has one ([`Renderer::set_sizes`]).
    sizes: Option<wgpu::Buffer>,
    /// What the per-agent buffers are made from (for the agents there) and the smallest size
    /// multiple ([`shown::PerAgent`]).
    per_agent: shown::PerAgent,
    agents: AgentsPass,
    fade: FadePass,
    /// The 2D agents in compute passes, where the adapter has them (`splat`).
    splat: Option<splat::SplatPass>,
    /// How frames are drawn (`FORGE_RENDERER`).
    way: way::Way,
    /// Frames drawn on the CPU, where they may be (`soft`).
    soft: Option<soft::Soft>,
    /// Whether the last frame drawn was drawn on the CPU (the GPU's HDR targets then hold no
    /// trails to carry), and how many were.
    soft_last: bool,
    on_cpu: u64,
    bloom: Option<BloomPass>,
    tonemap: TonemapPass,
    yuv: Option<YuvPass>,
    overlay: Option<OverlayPass>,
    obstacles: Option<obstacles::ObstaclesPass>,
    /// The obstacles at a step, where a timeline moves, adds or removes them.
    obstacle_keys: Option<obstacles::Moving>,
    readback: Readback,
    padded_row: u32,
    tight: Vec<u8>,
    drawn: u64,
    centre: Option<[f32; 2]>,
    /// Follow camera (3D): eased centre and radius.
    follow3: Option<([f32; 3], f32)>,
    /// 3D: the last frame's view-projection, to see how far the camera moved since.
    last_view_proj: Option<camera::Mat4>,
    /// Trails: the fraction of light kept out of this frame, and out of the one before (the
    /// trails fade faster while the 3D camera moves; see [`Renderer::camera3`]).
    fade_now: f32,
    fade_before: f32,
    /// Colour range actually used (resolved by the caller for speed).
    range: [f32; 2],
    /// Drawing a warm-up frame ([`Renderer::warm`]): trails only, nothing shown.
    warming: bool,
    /// Drawing for a window ([`Renderer::show`]): the display image stays on the GPU, nothing
    /// is converted or read back.
    showing: bool,
    /// Where the last frame was seen from (see `present.rs`).
    seen: present::Seen,
    /// Each pass's wall time, when timing them ([`Renderer::time_passes`]).
    laps: Option<Laps>,
}

impl Renderer {
    /// Checks the size against the adapter's limits, builds every pass.
    pub fn new(
        gpu: Gpu,
        look: Settings,
        world: World,
        output: Output,
        capacity: u32,
    ) -> Result<Renderer> {
        let (w, h) = (look.width, look.height);
        let way = way::Way::from_env()?;
        let odd = w % 2 == 1 || h % 2 == 1;
        if w == 0 || h == 0 || (odd && matches!(output, Output::Yuv(_))) {
            bail!("--size: must be two numbers above 0 (even for a video), got {w}x{h}");
        }
        // Every limit the passes depend on, before any is built.
        let density = look.color == ColorMode::Density;
        Self::check_limits(&gpu, w, h, output, capacity.max(1), world.dim, density)?;
        let device = &gpu.device;
        let queue = &gpu.queue;
        let display = output.display_format();
        let compute = splat::SplatPass::supported(&gpu.limits);
        let (hdr_views, ldr, ldr_view) = targets(device, w, h, display, compute);
        let hdr_pair = [&hdr_views[0], &hdr_views[1]];
        let lut_bytes = match (&look.palette, look.color) {
            (Some(p), ColorMode::Species) => colormap::palette(p),
            _ => colormap::bake(look.colormap, look.colormap_floor),
        };
        let overlay = overlay_pass(device, &look, output, &lut_bytes);
        let lut_view = colormap::texture(device, queue, &lut_bytes);
        let sampler = linear_sampler(device);
        let bloom = (look.bloom > 0.0)
            .then(|| BloomPass::new(device, queue, hdr_pair, [w, h], look.bloom_radius, &sampler));
        // Without bloom the tone-map pass still needs a texture to bind: the LUT will do.
        let bloom_view = bloom.as_ref().map(|b| b.output()).unwrap_or(&lut_view);
        let yuv = match output {
            Output::Yuv(f) => Some(YuvPass::new(device, queue, &ldr_view, w, h, f)),
            _ => None,
        };
        let planes = yuv.as_ref().map(|y| y.planes_target());
        let views = tonemap::Views {
            hdr: hdr_pair,
            bloom: bloom_view,
            sampler: &sampler,
        };
        let tonemap = TonemapPass::new(device, queue, views, look.plate.as_ref(), display, planes);
        let padded_row = padded_row(w, output);
        let readback = Readback::new(device, staging_bytes(yuv.as_ref(), padded_row, h));
        let agents = AgentsPass::new(device, &lut_view, &sampler, display, [w, h]);
        let fade = FadePass::new(device, hdr_pair);
        let splat =
            compute.then(|| splat::SplatPass::new(device, &gpu.limits, &lut_view, &sampler));
        let soft = way.on_cpu(&gpu.info).then(|| soft::Soft::new(&lut_bytes));
        let capacity = capacity.max(1);
        let agents_buf = Self::agent_buffer(device, world.dim, capacity);
        let density = density.then(|| {
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
        gpu.check(|| format!("setting up the render passes for {w}x{h}"))?;
        Ok(Renderer {
            gpu,
            look,
            world,
            output,
            hdr_views,
            cur: 0,
            ldr,
            ldr_view,
            agents_buf,
            capacity,
            density,
            species: None,
            sizes: None,
            per_agent: Default::default(),
            agents,
            fade,
            splat,
            way,
            soft,
            soft_last: false,
            on_cpu: 0,
            bloom,
            tonemap,
            yuv,
            overlay,
            obstacles: None,
            obstacle_keys: None,
            readback,
            padded_row,
            tight: Vec::new(),
            drawn: 0,
            centre: None,
            follow3: None,
            last_view_proj: None,
            fade_now: 0.0,
            fade_before: 0.0,
            range,
            warming: false,
            showing: false,
            seen: present::Seen::default(),
            laps: None,
        })
    }

    /// Checks the size and the agents against the adapter's limits (wgpu would panic).
    fn check_limits(
        gpu: &Gpu,
        w: u32,
        h: u32,
        output: Output,
        agents: u32,
        dim: usize,
        density: bool,
    ) -> Result<()> {
        limits::check(
            &gpu.limits,
            &limits::Needs {
                width: w,
                height: h,
                output,
                agents,
                dim,
                density,
            },
            &gpu.info.name,
            "--size",
        )
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
            None => {
                let px = self.look.width as usize * self.look.height as usize;
                match self.output {
                    Output::Linear => px * 16,
                    Output::Rgba16 => px * 8,
                    _ => px * 4,
                }
            }
        }
    }

    /// Renders `frame`; finished frames (a few behind) go to `sink` in order.
    pub fn render(
        &mut self,
        frame: &Frame,
        sink: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        self.with_shown(frame, |r, f| r.render_shown(f, sink))
    }

    /// [`Renderer::render`] of the agents there at the frame's step.
    fn render_shown(
        &mut self,
        frame: &Frame,
        sink: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        if self.readback.full() {
            self.deliver_oldest(sink)?;
        }
        let n = frame.agents(self.world.dim);
        let n32 = u32::try_from(n)
            .map_err(|_| anyhow::anyhow!("frame {}: too many agents", frame.index))?;
        self.fit_agents(n32)
            .with_context(|| format!("frame {}", frame.index))?;
        self.apply_keys(frame.step);
        let cam3 = self.camera3(frame, n);
        let view = if cam3.is_some() {
            ([0.0; 2], [1.0; 2], [0.0; 2])
        } else {
            self.view(frame, n)
        };
        self.seen = present::Seen::of(cam3.as_ref(), view);
        if let Some(l) = &mut self.laps {
            l.start();
        }
        let mean_heading = if self.look.color == ColorMode::RelativeHeading {
            view::mean_heading(frame, self.world.dim, n)
        } else {
            0.0
        };
        if self.soft_draws(cam3.is_some()) {
            return self.soft_frame(frame, view, mean_heading, sink);
        }
        self.upload(frame, n);
        let mut encoder = self
            .gpu
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("frame encoder"),
            });
        let range = self.colour_range(&mut encoder, n32);
        self.lap(&mut encoder, Pass::Upload);
        // The frame is drawn in the other HDR target: this one holds the last frame's light.
        self.cur = 1 - self.cur;
        let with_box = self.draw_agents(&mut encoder, n32, cam3, view, range, mean_heading);
        self.lap(&mut encoder, Pass::Agents);
        if self.warming {
            // Only the HDR target (the trails) carries over to the next frame.
            self.gpu.queue.submit([encoder.finish()]);
            self.drawn += 1;
            self.soft_last = false;
            return Ok(());
        }
        let rect = if cam3.is_some() {
            [0.0, 0.0, 1.0, 1.0]
        } else {
            self.world_rect(view)
        };
        // A video frame with nothing drawn over its display image is tone-mapped straight
        // into the Y'CbCr planes.
        let to_planes = self.tonemap.draws_planes()
            && !self.showing
            && self.obstacles.is_none()
            && !with_box
            && self.overlay.is_none();
        // The planes' dither is seeded by the frame, whichever pass draws them.
        if let Some(y) = self.yuv.as_mut().filter(|_| !self.showing) {
            y.start_frame(&self.gpu.queue, frame.index as u32);
        }
        self.display(&mut encoder, frame, rect, to_planes);
        self.draw_over(&mut encoder, frame, view, cam3.is_some(), with_box, range);
        self.lap(&mut encoder, Pass::Overlay);
        if !self.showing {
            self.read_out(&mut encoder, to_planes);
        }
        let submission = self.gpu.queue.submit([encoder.finish()]);
        if let Some(l) = &mut self.laps {
            let _ = self.gpu.device.poll(wgpu::PollType::wait_indefinitely());
            l.lap(Pass::Convert);
            l.frames += 1;
        }
        self.gpu
            .check(|| format!("rendering frame {}", frame.index))?;
        if !self.showing {
            self.readback.submitted(submission);
        }
        self.drawn += 1;
        self.soft_last = false;
        Ok(())
    }

    /// What goes over the display image after tone mapping: the obstacles, the 3D world
    /// box (`with_box`), the overlays (`view`: the 2D view; `three`: a 3D camera instead).
    fn draw_over(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        frame: &Frame,
        view: ([f32; 2], [f32; 2], [f32; 2]),
        three: bool,
        with_box: bool,
        range: [f32; 2],
    ) {
        if let Some(o) = &self.obstacles {
            let p = self.obstacle_params(view);
            o.run(&self.gpu.queue, encoder, &self.ldr_view, &p);
        }
        if with_box {
            self.agents.draw_box(encoder, &self.ldr_view);
        }
        if let Some(o) = &mut self.overlay {
            let w = self.look.width as f32;
            o.update(
                &self.gpu.queue,
                &FrameInfo {
                    seconds: frame.step as f64 * self.world.dt as f64,
                    step: frame.step,
                    range,
                    px_per_unit: (!three).then(|| w / view.1[0]),
                },
            );
            o.run(encoder, &self.ldr_view);
        }
    }

    /// Makes room for `n` agents (a BFS1 file's count may grow): the limits checked, the
    /// buffers that hold them rebuilt.
    fn fit_agents(&mut self, n: u32) -> Result<()> {
        if n <= self.capacity {
            return Ok(());
        }
        let (w, h, dim) = (self.look.width, self.look.height, self.world.dim);
        let density = self.density.is_some();
        Self::check_limits(&self.gpu, w, h, self.output, n, dim, density)?;
        self.capacity = n;
        self.agents_buf = Self::agent_buffer(&self.gpu.device, dim, n);
        if density {
            self.density = Some(DensityPass::new(
                &self.gpu.device,
                &self.agents_buf,
                n,
                self.world.size,
                self.world.density_depth(),
                self.world.wrap,
            ));
        }
        Ok(())
    }

    /// The frame's positions at 0 of the agents' buffer, its velocities right after them
    /// (the file's frame layout).
    fn upload(&self, frame: &Frame, n: usize) {
        if n == 0 {
            return;
        }
        let dim = self.world.dim;
        let queue = &self.gpu.queue;
        let pos = bytemuck::cast_slice(&frame.pos[..dim * n]);
        queue.write_buffer(&self.agents_buf, 0, pos);
        let vel = bytemuck::cast_slice(&frame.vel[..dim * n]);
        queue.write_buffer(&self.agents_buf, pos.len() as u64, vel);
    }

    /// The colour range of this frame: the resolved one; for density without one, four times
    /// the mean per cell (the density pass runs first).
    fn colour_range(&mut self, encoder: &mut wgpu::CommandEncoder, n: u32) -> [f32; 2] {
        let mut range = self.range;
        if let Some(d) = self.density.as_mut() {
            d.run(&self.gpu.queue, encoder, n);
            if self.look.range.is_none() {
                range = [0.0, 4.0 * d.mean_per_cell(n)];
            }
        }
        range
    }

    /// The fraction of the last frame's light this frame starts from: `None` without trails
    /// or on the first frame (the HDR target starts black).
    fn carried(&self) -> Option<f32> {
        (self.drawn > 0 && self.look.trails > 0.0 && !self.soft_last).then_some(self.fade_before)
    }

    /// The tone map's parameters for `frame`, the world's rectangle on screen `world_rect`;
    /// `to_planes`: drawn straight into the Y'CbCr planes (dithered there, not here).
    fn tonemap_params(
        &self,
        frame: &Frame,
        world_rect: [f32; 4],
        to_planes: bool,
    ) -> TonemapParams {
        let bg = self.look.background.map(srgb_to_linear);
        let top = self
            .look
            .background_top
            .unwrap_or(self.look.background)
            .map(srgb_to_linear);
        let g = self.look.grade;
        let (w, h) = (self.look.width as f32, self.look.height as f32);
        TonemapParams {
            background: [bg[0], bg[1], bg[2], 1.0],
            background_top: [top[0], top[1], top[2], 1.0],
            ink: (self.look.style == Style::Ink) as u32,
            contrast: g.contrast,
            saturation: g.saturation,
            lift: g.lift,
            gamma: g.gamma,
            gain: g.gain,
            bars: BARS,
            alpha: self.look.alpha as u32,
            plate: self.look.plate.is_some() as u32,
            _pad: [0; 3],
            world_rect,
            exposure: self.look.exposure,
            // The glow holds the bright light once (energy-conserving); the strength
            // keeps the meaning it had when the six levels of 1080p were added up.
            bloom: if self.bloom.is_some() {
                self.look.bloom * bloom::LEVELS_AT_1080P
            } else {
                0.0
            },
            vignette: self.look.vignette,
            aspect: w / h,
            // The dither's seed: the frame's own index, so a frame is the same image
            // whichever frames are rendered with it.
            seed: yuv::pcg(frame.index as u32),
            // An 8-bit display image is dithered; the planes dither their codes instead.
            dither: if self.output.texel_bytes() == 4 && !to_planes {
                1.0
            } else {
                0.0
            },
            linear: (self.output == Output::Linear) as u32,
            _pad0: 0.0,
        }
    }

    /// Bloom and the tone map, into the display image (or, `to_planes`, the Y'CbCr planes).
    fn display(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        frame: &Frame,
        world_rect: [f32; 4],
        to_planes: bool,
    ) {
        if let Some(b) = &self.bloom {
            b.run(encoder, self.cur);
        }
        self.lap(encoder, Pass::Bloom);
        let params = self.tonemap_params(frame, world_rect, to_planes);
        let (device, queue) = (&self.gpu.device, &self.gpu.queue);
        match &self.yuv {
            Some(yuv) if to_planes => {
                let targets = yuv.targets();
                self.tonemap
                    .run_planes(device, queue, encoder, &targets, self.cur, &params);
            }
            _ => self
                .tonemap
                .run(device, queue, encoder, &self.ldr_view, self.cur, &params),
        }
        self.lap(encoder, Pass::ToneMap);
    }

    /// The look's keyed settings at `step` (the frame's), into the settings the passes read.
    fn apply_keys(&mut self, step: u64) {
        self.move_obstacles(step);
        let Some(keys) = &self.look.keys else {
            return;
        };
        for (field, v) in keys.at(step) {
            let l = &mut self.look;
            match field {
                LookField::Center => l.center = Some([v[0], v[1]]),
                LookField::Zoom => l.zoom = v[0],
                LookField::Exposure => l.exposure = v[0],
                LookField::Trails => l.trails = v[0],
                LookField::Eye | LookField::Target | LookField::Fov => {
                    if let Some(v3) = l.view3.as_mut() {
                        match field {
                            LookField::Eye => v3.eye = Some(v),
                            LookField::Target => v3.target = Some(v),
                            _ => v3.fov = v[0],
                        }
                    }
                }
            }
        }
    }

    /// Times every pass from now on: each is submitted on its own and waited for (slower
    /// than a normal render, which overlaps them); [`Renderer::laps`] holds the times.
    pub fn time_passes(&mut self) {
        self.laps = Some(Laps::default());
    }

    /// Each pass's wall time so far, when timing them.
    pub fn laps(&self) -> Option<&Laps> {
        self.laps.as_ref()
    }

    /// When timing passes: the work recorded in `encoder` since the last lap submitted and
    /// waited for, its time added to `pass`'s; `encoder` starts afresh.
    fn lap(&mut self, encoder: &mut wgpu::CommandEncoder, pass: Pass) {
        let Some(l) = &mut self.laps else {
            return;
        };
        let fresh = self
            .gpu
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("frame encoder"),
            });
        self.gpu
            .queue
            .submit([std::mem::replace(encoder, fresh).finish()]);
        let _ = self.gpu.device.poll(wgpu::PollType::wait_indefinitely());
        l.lap(pass);
    }
}
