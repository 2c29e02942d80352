//! The agents of a 2D frame in O(agents + pixels) (shaders/splat.wgsl): every agent splatted
//! once into a fixed-point accumulation image, then the sprites' soft shape given to all of
//! them by a separable filter over the frame, and the trails carried from the last frame added.
//! The instanced sprites (`agents.rs`) cost agents × copies × sprite area instead; they still
//! draw what a filter cannot give: darts, motion-blurred streaks, sprites of several sizes and
//! the 3D camera's perspective.
//!
//! The filter's taps ([`Kernel`]) are fitted, by least squares over the sub-pixel positions, so
//! that the quadratic B-spline splat followed by the filter gives the round sprite the instanced
//! pipeline draws: a Gaussian core averaged over the pixel (`core_over` in agents.wgsl) and a
//! Gaussian halo (`halo_at`), which holds the light of the soft `(1 − r²)² e^(−3r²)` and keeps
//! within 2.2% of its peak everywhere.

/// Keep in sync with `WORKGROUP` in shaders/splat.wgsl.
const WORKGROUP: u32 = 64;
/// Frame pixels per crowd cell, each way (agents.rs's `CROWD_CELL`).
const CROWD_CELL: u32 = super::agents::CROWD_CELL;

/// The halo as one Gaussian `HALO_PEAK · e^(−HALO_WIDTH · r²)` (r in halo radii): the width that
/// fits `(1 − r²)² e^(−3r²)` best (max error 2.2% of its peak) with the peak that keeps its light
/// (`HALO_PEAK · π / HALO_WIDTH` = π ∫₀¹ (1 − u)² e^(−3u) du).
const HALO_WIDTH: f64 = 5.628_504_876;
const HALO_PEAK: f64 = 1.021_558_180;

/// Taps the parameters hold (splat.wgsl's `taps`: 64 vec4s), the core's and the halo's.
const TAP_SLOTS: usize = 256;

/// Sub-pixel positions per axis the taps are fitted over.
const PHASES: usize = 32;

/// The widest filter the splat path draws (taps each side of the centre); sprites wider than
/// this go through the instanced pipeline.
pub const MAX_TAPS: i32 = 63;

/// Keep in sync with `Params` in shaders/splat.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct SplatParams {
    pub view_min: [f32; 2],
    pub view_size: [f32; 2],
    pub world: [f32; 2],
    pub viewport: [f32; 2],
    pub range: [f32; 2],
    /// As `AgentParams::mode`.
    pub mode: u32,
    /// 1, 4 or 9, as `AgentParams::copies`.
    pub copies: u32,
    pub n: u32,
    /// Pixels of guard band on each side of the accumulation image (set by [`SplatPass::run`]).
    pub guard: u32,
    pub padded: [u32; 2],
    pub crowd: [u32; 2],
    pub stacking: f32,
    pub stack_area: f32,
    pub mean_heading: f32,
    /// Fixed-point units per unit of light, and its inverse (set by [`SplatPass::run`]).
    pub scale: f32,
    pub inv_scale: f32,
    /// The fraction of the last frame's light kept in this one.
    pub fade: f32,
    /// 1: the trails of the last frame carried (`fade` times the other HDR target).
    pub carry: u32,
    pub intensity: f32,
    /// The recording's dimensions (a 3D one seen from the top): where the velocities start.
    pub dim: u32,
    pub _pad: u32,
    /// Pixels (x0, y0, x1, y1; y down) the light may land in: the world's window on screen.
    pub scissor: [f32; 4],
    /// The fixed colour (linear RGB) and 1 in `a` when one is given.
    pub fixed: [f32; 4],
    /// The kernel's core taps, then its halo's, four to an element (set by [`SplatPass::run`]).
    pub taps: [[f32; 4]; TAP_SLOTS / 4],
}

impl Default for SplatParams {
    fn default() -> SplatParams {
        bytemuck::Zeroable::zeroed()
    }
}

/// erf, Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7), as agents.wgsl has it.
fn erf(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let y = 1.0
        - (((((1.061_405_429 * t - 1.453_152_027) * t) + 1.421_413_741) * t - 0.284_496_736) * t
            + 0.254_829_592)
            * t
            * (-x * x).exp();
    if x >= 0.0 {
        y
    } else {
        -y
    }
}

/// Quadratic B-spline weights of the pixels before, at and after the nearest one, for a point
/// `t` (−½..½) from the nearest pixel's centre (splat.wgsl's `bspline`).
fn bspline(t: f64) -> [f64; 3] {
    let (a, b) = (0.5 - t, 0.5 + t);
    [0.5 * a * a, 0.75 - t * t, 0.5 * b * b]
}

/// Solves `a x = b` (n × n, row-major) by Gaussian elimination with partial pivoting.
fn solve(mut a: Vec<f64>, mut b: Vec<f64>) -> Vec<f64> {
    let n = b.len();
    for col in 0..n {
        let pivot = (col..n)
            .max_by(|&i, &j| a[i * n + col].abs().total_cmp(&a[j * n + col].abs()))
            .unwrap_or(col);
        if pivot != col {
            for k in 0..n {
                a.swap(col * n + k, pivot * n + k);
            }
            b.swap(col, pivot);
        }
        let d = a[col * n + col];
        if d.abs() < 1e-300 {
            continue;
        }
        for row in col + 1..n {
            let f = a[row * n + col] / d;
            if f == 0.0 {
                continue;
            }
            for k in col..n {
                a[row * n + k] -= f * a[col * n + k];
            }
            b[row] -= f * b[col];
        }
    }
    let mut x = vec![0.0; n];
    for row in (0..n).rev() {
        let s: f64 = (row + 1..n).map(|k| a[row * n + k] * x[k]).sum();
        let d = a[row * n + row];
        x[row] = if d.abs() < 1e-300 {
            0.0
        } else {
            (b[row] - s) / d
        };
    }
    x
}

/// The taps (`2m + 1`, centred) that, after the B-spline splat, best give `target(d)` at every
/// pixel `d` from the point, over [`PHASES`] sub-pixel positions (least squares), scaled so that
/// they hold `light` (the target's integral).
fn fit(target: impl Fn(f64) -> f64, m: usize, light: f64) -> Vec<f32> {
    let n = 2 * m + 1;
    let mut ata = vec![0.0f64; n * n];
    let mut atb = vec![0.0f64; n];
    let reach = m as i64 + 1;
    for k in 0..PHASES {
        let t = (k as f64 + 0.5) / PHASES as f64 - 0.5;
        let w = bspline(t);
        for i in -reach..=reach {
            // Row: the pixel i's value as a sum of taps.
            let mut row = vec![(0usize, 0.0f64); 0];
            for (c, wc) in w.iter().enumerate() {
                let j = i - (c as i64 - 1);
                if j.abs() <= m as i64 {
                    row.push(((j + m as i64) as usize, *wc));
                }
            }
            let y = target(i as f64 - t);
            for &(a, wa) in &row {
                atb[a] += wa * y;
                for &(b, wb) in &row {
                    ata[a * n + b] += wa * wb;
                }
            }
        }
    }
    // A whisper of ridge keeps the system regular where a tap is barely constrained.
    for d in 0..n {
        ata[d * n + d] += 1e-9;
    }
    let taps = solve(ata, atb);
    let sum: f64 = taps.iter().sum();
    let k = if sum.abs() > 1e-12 { light / sum } else { 1.0 };
    taps.iter().map(|&v| (v * k) as f32).collect()
}

/// The round sprite of core width `core_px` as separable taps for the splat path: the core's
/// taps and the halo's, each used along x and then along y.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    pub core_px: f32,
    /// The halo's brightness relative to the core (agents.wgsl's `p.halo`).
    pub halo_level: f32,
    pub core: Vec<f32>,
    pub halo: Vec<f32>,
}

impl Kernel {
    /// The sprite whose core is `core_px` wide (`exp(−2 d² / core_px²)`, averaged over the
    /// pixel) and whose halo, of radius 4 `core_px`, peaks at `halo_level`.
    pub fn new(core_px: f32, halo_level: f32) -> Kernel {
        let c = core_px.max(0.05) as f64;
        let radius = 4.0 * c;
        // Core: per axis the mean of e^(−t²/a²) over the pixel (a = c/√2).
        let a = c * std::f64::consts::FRAC_1_SQRT_2;
        let sqrt_pi = std::f64::consts::PI.sqrt();
        let core = move |t: f64| (erf((t + 0.5) / a) - erf((t - 0.5) / a)) * a * sqrt_pi / 2.0;
        let core_m = (1.5 * c + 0.5).ceil() as usize;
        // Halo: per axis √(level · peak) e^(−width t² / R²).
        let amp = (halo_level as f64 * HALO_PEAK).sqrt();
        let halo = move |t: f64| amp * (-HALO_WIDTH * t * t / (radius * radius)).exp();
        let sigma_h = radius / (2.0 * HALO_WIDTH).sqrt();
        let halo_m = (3.0 * sigma_h + 0.5).ceil() as usize;
        Kernel {
            core_px,
            halo_level,
            core: fit(core, core_m, a * sqrt_pi),
            halo: fit(
                halo,
                halo_m,
                amp * radius * (std::f64::consts::PI / HALO_WIDTH).sqrt(),
            ),
        }
    }

    pub fn core_taps(&self) -> i32 {
        (self.core.len() as i32 - 1) / 2
    }

    pub fn halo_taps(&self) -> i32 {
        (self.halo.len() as i32 - 1) / 2
    }

    /// Pixels a splatted agent's light reaches beyond its own: the accumulation image's guard
    /// band (the splat's pixel on each side, then the widest taps).
    pub fn reach(&self) -> u32 {
        self.core_taps().max(self.halo_taps()) as u32 + 1
    }

    /// The light of one sprite, summed over the frame.
    pub fn light(&self) -> f32 {
        let s = |v: &[f32]| v.iter().sum::<f32>();
        s(&self.core).powi(2) + s(&self.halo).powi(2)
    }
}

/// Bytes of each buffer of the splat path for a `w`×`h` frame and a guard band of `guard`:
/// each channel of the accumulation image (a 64-bit value a pixel), and each half (two
/// channels) of the row-filtered images.
pub fn buffer_bytes(w: u32, h: u32, guard: u32) -> [u64; 2] {
    let pw = (w + 2 * guard) as u64;
    let ph = (h + 2 * guard) as u64;
    [pw * ph * 8, w as u64 * ph * 8]
}

/// Fixed-point units per unit of light in the accumulation image: a 64-bit sum a pixel holds
/// 2^44 units of light (every agent of the largest recording, many times over) at 2^-20 each.
pub const FIXED_SCALE: f32 = 1_048_576.0;

/// The buffers of one frame size and guard band.
struct Buffers {
    size: [u32; 2],
    guard: u32,
    cells: [u32; 2],
    crowd: wgpu::Buffer,
    /// Red, green, blue, energy.
    accum: [wgpu::Buffer; 4],
    /// Core red-green, core blue-energy, halo red-green, halo blue-energy.
    rows: [wgpu::Buffer; 4],
}

impl Buffers {
    fn new(device: &wgpu::Device, [w, h]: [u32; 2], guard: u32) -> Buffers {
        let storage = |label: &str, size: u64| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: size.max(16),
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        };
        let cells = [w.div_ceil(CROWD_CELL).max(1), h.div_ceil(CROWD_CELL).max(1)];
        let [accum, rows] = buffer_bytes(w, h, guard);
        Buffers {
            size: [w, h],
            guard,
            cells,
            crowd: storage("splat crowd counts", cells[0] as u64 * cells[1] as u64 * 4),
            accum: [
                storage("splat accumulation (red)", accum),
                storage("splat accumulation (green)", accum),
                storage("splat accumulation (blue)", accum),
                storage("splat accumulation (energy)", accum),
            ],
            rows: [
                storage("splat rows (core, red and green)", rows),
                storage("splat rows (core, blue and energy)", rows),
                storage("splat rows (halo, red and green)", rows),
                storage("splat rows (halo, blue and energy)", rows),
            ],
        }
    }
}

/// What one frame of the splat path reads and writes.
pub struct SplatFrame<'a> {
    /// Positions then velocities, component-major (the file's frame layout), `n` agents.
    pub agents: &'a wgpu::Buffer,
    /// One value per agent: the density or the species value (any buffer where unread).
    pub values: &'a wgpu::Buffer,
    pub n: u32,
    /// The HDR target of the last frame (read for the trails) and this frame's (written).
    pub prev: &'a wgpu::TextureView,
    pub hdr: &'a wgpu::TextureView,
    /// The sprites' core width in pixels and their halo's brightness ([`Kernel::new`]).
    pub core_px: f32,
    pub halo_level: f32,
}

pub struct SplatPass {
    /// The shader and its count and splat pipelines, built when a frame first takes this
    /// path (on lavapipe the CPU usually draws the frames instead).
    shaders: Option<Shaders>,
    /// The row and column filters, per (core taps, halo taps): pipeline constants.
    blurs: Vec<((i32, i32), [wgpu::ComputePipeline; 2])>,
    params: wgpu::Buffer,
    lut: wgpu::TextureView,
    sampler: wgpu::Sampler,
    kernel: Option<Kernel>,
    buffers: Option<Buffers>,
    max_binding: u64,
}

/// The splat shader's module and its count and splat pipelines.
struct Shaders {
    module: wgpu::ShaderModule,
    count: wgpu::ComputePipeline,
    splat: wgpu::ComputePipeline,
}

impl Shaders {
    fn new(device: &wgpu::Device) -> Shaders {
        let module = super::wgsl::create(device, "splat.wgsl + colour.wgsl", super::wgsl::SPLAT);
        Shaders {
            count: pipeline(device, &module, "cs_count", &[]),
            splat: pipeline(device, &module, "cs_splat", &[]),
            module,
        }
    }
}

fn pipeline(
    device: &wgpu::Device,
    module: &wgpu::ShaderModule,
    entry: &str,
    constants: &[(&str, f64)],
) -> wgpu::ComputePipeline {
    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(entry),
        layout: None,
        module,
        entry_point: Some(entry),
        compilation_options: wgpu::PipelineCompilationOptions {
            constants,
            ..Default::default()
        },
        cache: None,
    })
}

fn whole(b: &wgpu::Buffer) -> wgpu::BindingResource<'_> {
    b.as_entire_binding()
}

/// A bind group of `entries` (binding, resource) for `pipeline`'s own layout.
fn group(
    device: &wgpu::Device,
    label: &str,
    pipeline: &wgpu::ComputePipeline,
    entries: &[(u32, wgpu::BindingResource)],
) -> wgpu::BindGroup {
    let entries: Vec<_> = entries
        .iter()
        .map(|(binding, resource)| wgpu::BindGroupEntry {
            binding: *binding,
            resource: resource.clone(),
        })
        .collect();
    device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some(label),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &entries,
    })
}

impl SplatPass {
    /// Whether `limits` allow the splat path at all (compute, storage textures and buffers).
    pub fn supported(limits: &wgpu::Limits) -> bool {
        limits.max_storage_buffers_per_shader_stage >= 8
            && limits.max_storage_textures_per_shader_stage >= 1
            && limits.max_compute_invocations_per_workgroup >= WORKGROUP
            && limits.max_compute_workgroups_per_dimension >= 1
    }

    pub fn new(
        device: &wgpu::Device,
        limits: &wgpu::Limits,
        lut: &wgpu::TextureView,
        sampler: &wgpu::Sampler,
    ) -> SplatPass {
        SplatPass {
            shaders: None,
            blurs: Vec::new(),
            params: super::uniform_buffer(device, "splat params", size_of::<SplatParams>()),
            lut: lut.clone(),
            sampler: sampler.clone(),
            kernel: None,
            buffers: None,
            max_binding: limits.max_storage_buffer_binding_size,
        }
    }

    /// Whether a `w`×`h` frame of sprites with a core `core_px` wide can be drawn here (its
    /// taps within [`MAX_TAPS`], its buffers within the adapter's storage binding size).
    pub fn fits(&self, [w, h]: [u32; 2], core_px: f32, halo_level: f32) -> bool {
        let kernel = match &self.kernel {
            Some(k) if k.core_px == core_px && k.halo_level == halo_level => k.reach(),
            _ => Kernel::new(core_px, halo_level).reach(),
        };
        let taps = kernel as i32 - 1;
        let [a, r] = buffer_bytes(w, h, kernel);
        taps <= MAX_TAPS && a.max(r) <= self.max_binding
    }

    /// The kernel for `core_px` (kept while it stays the same).
    fn kernel(&mut self, core_px: f32, halo_level: f32) -> &Kernel {
        let stale = !matches!(&self.kernel,
            Some(k) if k.core_px == core_px && k.halo_level == halo_level);
        if stale {
            self.kernel = Some(Kernel::new(core_px, halo_level));
        }
        self.kernel.as_ref().expect("just set")
    }

    /// The filters for `taps` (core, halo), built the first time they are asked for.
    fn blurs(&mut self, device: &wgpu::Device, taps: (i32, i32)) -> usize {
        if let Some(i) = self.blurs.iter().position(|(t, _)| *t == taps) {
            return i;
        }
        let c = [("CORE_TAPS", taps.0 as f64), ("HALO_TAPS", taps.1 as f64)];
        let module = &self
            .shaders
            .get_or_insert_with(|| Shaders::new(device))
            .module;
        let x = pipeline(device, module, "cs_blur_x", &c);
        let y = pipeline(device, module, "cs_blur_y", &c);
        self.blurs.push((taps, [x, y]));
        self.blurs.len() - 1
    }

    /// Draws `frame`'s agents with `params` (the view, colours, crowd and trails set; the
    /// guard, sizes and scale are set here) into `frame.hdr`. The caller has checked
    /// [`SplatPass::fits`].
    pub fn run(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        encoder: &mut wgpu::CommandEncoder,
        mut params: SplatParams,
        frame: &SplatFrame,
    ) {
        let kernel = self.kernel(frame.core_px, frame.halo_level);
        let taps = (kernel.core_taps(), kernel.halo_taps());
        let guard = kernel.reach();
        for (k, &v) in kernel.core.iter().chain(&kernel.halo).enumerate() {
            params.taps[k / 4][k % 4] = v;
        }
        let size = [params.viewport[0] as u32, params.viewport[1] as u32];
        if !matches!(&self.buffers, Some(b) if b.size == size && b.guard == guard) {
            self.buffers = Some(Buffers::new(device, size, guard));
        }
        let blur = self.blurs(device, taps);
        self.shaders.get_or_insert_with(|| Shaders::new(device));
        let b = self.buffers.as_ref().expect("just set");
        params.guard = guard;
        params.padded = [size[0] + 2 * guard, size[1] + 2 * guard];
        params.crowd = b.cells;
        params.n = frame.n;
        params.scale = FIXED_SCALE;
        params.inv_scale = 1.0 / FIXED_SCALE;
        queue.write_buffer(&self.params, 0, bytemuck::bytes_of(&params));
        for a in &b.accum {
            encoder.clear_buffer(a, 0, None);
        }
        let stacking = params.stacking > 0.0;
        if stacking {
            encoder.clear_buffer(&b.crowd, 0, None);
        }
        let [count, splat, rows, columns] = self.bind_groups(device, blur, frame);
        let shaders = self.shaders.as_ref().expect("just set");
        let [bx, by] = &self.blurs[blur].1;
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("agents splat pass"),
            timestamp_writes: None,
        });
        pass.push_debug_group("agents splat");
        let mut dispatch = |pipe: &wgpu::ComputePipeline, bg: &wgpu::BindGroup, items: u64| {
            pass.set_pipeline(pipe);
            pass.set_bind_group(0, bg, &[]);
            let groups = items.div_ceil(WORKGROUP as u64).min(u32::MAX as u64) as u32;
            let (x, y) = super::dispatch_2d(groups);
            pass.dispatch_workgroups(x, y, 1);
        };
        let (w, ph) = (size[0] as u64, params.padded[1] as u64);
        if frame.n > 0 {
            if stacking {
                dispatch(&shaders.count, &count, frame.n as u64);
            }
            dispatch(&shaders.splat, &splat, frame.n as u64);
        }
        dispatch(bx, &rows, w * ph);
        dispatch(by, &columns, w * size[1] as u64);
        pass.pop_debug_group();
    }

    /// The bind groups of the count, the splat and the row and column filters (`blur`, an
    /// index into the filters), over this frame's agents and targets.
    fn bind_groups(
        &self,
        device: &wgpu::Device,
        blur: usize,
        frame: &SplatFrame,
    ) -> [wgpu::BindGroup; 4] {
        let shaders = self.shaders.as_ref().expect("built before the groups");
        let b = self.buffers.as_ref().expect("made before the groups");
        let [bx, by] = &self.blurs[blur].1;
        let p = self.params.as_entire_binding();
        let tex = wgpu::BindingResource::TextureView;
        let count = group(
            device,
            "splat count",
            &shaders.count,
            &[
                (0, p.clone()),
                (1, whole(frame.agents)),
                (5, whole(&b.crowd)),
            ],
        );
        let splat = group(
            device,
            "splat",
            &shaders.splat,
            &[
                (0, p.clone()),
                (1, whole(frame.agents)),
                (2, whole(frame.values)),
                (3, tex(&self.lut)),
                (4, wgpu::BindingResource::Sampler(&self.sampler)),
                (11, whole(&b.crowd)),
                (6, whole(&b.accum[0])),
                (14, whole(&b.accum[1])),
                (22, whole(&b.accum[2])),
                (23, whole(&b.accum[3])),
            ],
        );
        let rows = group(
            device,
            "splat rows",
            bx,
            &[
                (0, p.clone()),
                (12, whole(&b.accum[0])),
                (15, whole(&b.accum[1])),
                (24, whole(&b.accum[2])),
                (25, whole(&b.accum[3])),
                (7, whole(&b.rows[0])),
                (16, whole(&b.rows[1])),
                (18, whole(&b.rows[2])),
                (19, whole(&b.rows[3])),
            ],
        );
        let columns = group(
            device,
            "splat columns",
            by,
            &[
                (0, p),
                (13, whole(&b.rows[0])),
                (17, whole(&b.rows[1])),
                (20, whole(&b.rows[2])),
                (21, whole(&b.rows[3])),
                (9, tex(frame.prev)),
                (10, tex(frame.hdr)),
            ],
        );
        [count, splat, rows, columns]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sprite a splatted agent at sub-pixel offset (fx, fy) from a pixel centre becomes,
    /// against the instanced sprite's (agents.wgsl: the core averaged over the pixel, the halo
    /// at pixel centres, nothing past the halo's radius).
    fn worst_error(core_px: f32) -> (f64, f64) {
        let k = Kernel::new(core_px, 0.35);
        let c = core_px as f64;
        let r = 4.0 * c;
        let a = c * std::f64::consts::FRAC_1_SQRT_2;
        let box_gauss = |t: f64| {
            (erf((t + 0.5) / a) - erf((t - 0.5) / a)) * a * std::f64::consts::PI.sqrt() / 2.0
        };
        let exact = |dx: f64, dy: f64| {
            let r2 = (dx * dx + dy * dy) / (r * r);
            let halo = if r2 < 1.0 {
                0.35 * HALO_PEAK * (-HALO_WIDTH * r2).exp()
            } else {
                0.0
            };
            box_gauss(dx) * box_gauss(dy) + halo
        };
        let tap = |v: &[f32], j: i64| {
            let m = (v.len() as i64 - 1) / 2;
            if j.abs() <= m {
                v[(j + m) as usize] as f64
            } else {
                0.0
            }
        };
        let reach = k.reach() as i64 + 1;
        let (mut worst, mut light_err) = (0.0f64, 0.0f64);
        for &(fx, fy) in &[(0.0, 0.0), (0.25, -0.1), (0.49, 0.49), (-0.3, 0.2)] {
            let (wx, wy) = (bspline(fx), bspline(fy));
            let (mut got_sum, mut want_sum) = (0.0, 0.0);
            for y in -reach..=reach {
                for x in -reach..=reach {
                    let mut got = 0.0;
                    for (cy, wyc) in wy.iter().enumerate() {
                        for (cx, wxc) in wx.iter().enumerate() {
                            let (jx, jy) = (x - (cx as i64 - 1), y - (cy as i64 - 1));
                            let w = wxc * wyc;
                            got += w
                                * (tap(&k.core, jx) * tap(&k.core, jy)
                                    + tap(&k.halo, jx) * tap(&k.halo, jy));
                        }
                    }
                    let want = exact(x as f64 - fx, y as f64 - fy);
                    worst = worst.max((got - want).abs());
                    got_sum += got;
                    want_sum += want;
                }
            }
            light_err = light_err.max((got_sum - want_sum).abs() / want_sum);
        }
        (worst, light_err)
    }

    #[test]
    fn the_splat_and_filter_draw_the_instanced_sprite() {
        // The core's peak is at most 1; the smallest cores (0.7 px, the least a frame draws)
        // are the hardest to place between pixel centres.
        for (core, most) in [
            (0.7, 0.09),
            (1.0, 0.05),
            (1.4, 0.05),
            (2.8, 0.02),
            (4.5, 0.02),
        ] {
            let (worst, light) = worst_error(core);
            assert!(
                worst < most,
                "core {core} px: worst error {worst:.4} ≥ {most}"
            );
            assert!(
                light < 0.01,
                "core {core} px: light differs by {:.2}%",
                light * 100.0
            );
        }
    }

    #[test]
    fn the_kernel_holds_the_sprites_light() {
        for core in [0.7f32, 1.4, 3.0] {
            let k = Kernel::new(core, 0.35);
            // The instanced sprite: core π/2 c², halo ≈ 3.19 c² (video::resolve::exposure).
            let want = 4.76 * core * core;
            assert!(
                (k.light() - want).abs() / want < 0.005,
                "{core}: {}",
                k.light()
            );
        }
    }

    #[test]
    fn the_fixed_point_sum_holds_every_agent_on_one_pixel() {
        // Each agent splats at most 0.75² of its light (at most 1 a channel) into a pixel; a
        // 64-bit sum holds 2^64 units, for the 2^31 agents a recording holds at most.
        let most = 2f64.powi(31) * 0.5625 * FIXED_SCALE as f64;
        assert!(most < 2f64.powi(64) / 1000.0, "{most}");
        // A lone agent's least contribution that counts: well under an 8-bit code of light.
        assert!(1.0 / (FIXED_SCALE as f64) < 1e-5);
    }
}
