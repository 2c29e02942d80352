//! Local density on the GPU (shaders/density.wgsl): splat counts into a grid over the world,
//! blur it, sample it per agent. The per-agent values feed the agents pass as a vertex
//! attribute. A 3D world gets a 3D grid.

use super::layout_entry;

/// Keep in sync with `WORKGROUP` in shaders/density.wgsl.
const WORKGROUP: u32 = 64;

/// Cells along the world's longer side.
pub const GRID_LONG_SIDE: u32 = 160;
/// Cells along a 3D world's longest side (48³ ≈ 110k cells at most).
pub const GRID_LONG_SIDE_3D: u32 = 48;

/// Grid cells for a 3D world: cubic cells, `GRID_LONG_SIDE_3D` along the longest side.
pub fn grid_for_3d(world: [f32; 3]) -> [u32; 3] {
    let long = world.iter().fold(1e-6f32, |a, &b| a.max(b));
    world.map(|s| ((GRID_LONG_SIDE_3D as f32 * s.max(0.0) / long).round() as u32).max(1))
}

/// The default colour range of a 2D recording's density: 0 to four times the mean agents
/// per cell, for `agents` agents in a world of `world`.
pub fn range_2d(world: [f32; 2], agents: u32) -> [f32; 2] {
    let g = grid_for(world);
    [0.0, 4.0 * agents.max(1) as f32 / (g[0] * g[1]) as f32]
}

/// Keep in sync with `Params` in shaders/density.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct DensityParams {
    pub grid: [u32; 2],
    pub n: u32,
    pub wrap: u32,
    pub world: [f32; 2],
    pub grid_z: u32,
    pub world_z: f32,
}

/// Grid cells for a world of this size: square cells, `GRID_LONG_SIDE` along the longer side.
pub fn grid_for(world: [f32; 2]) -> [u32; 2] {
    let (w, h) = (world[0].max(1e-6), world[1].max(1e-6));
    if w >= h {
        [
            GRID_LONG_SIDE,
            ((GRID_LONG_SIDE as f32 * h / w).round() as u32).max(1),
        ]
    } else {
        [
            ((GRID_LONG_SIDE as f32 * w / h).round() as u32).max(1),
            GRID_LONG_SIDE,
        ]
    }
}

pub struct DensityPass {
    /// In order, each with whether it runs once per agent (else once per cell).
    pipelines: Vec<(wgpu::ComputePipeline, bool)>,
    bind_group: wgpu::BindGroup,
    params_buf: wgpu::Buffer,
    counts: wgpu::Buffer,
    params: DensityParams,
    /// One value per agent (capacity of the agents buffer).
    pub density: wgpu::Buffer,
}

/// The compute passes in order, and whether each runs over the agents (else over the cells):
/// splat, blur along each axis, sample back at the agents.
fn entry_points(three: bool) -> &'static [(&'static str, bool)] {
    if three {
        &[
            ("cs_splat3", true),
            ("cs_blur3_x", false),
            ("cs_blur3_y", false),
            ("cs_blur3_z", false),
            ("cs_sample3", true),
        ]
    } else {
        &[
            ("cs_splat", true),
            ("cs_blur_x", false),
            ("cs_blur_y", false),
            ("cs_sample", true),
        ]
    }
}

impl DensityParams {
    /// The grid for `world` (and `depth`: a 3D world that deep, with a 3D grid), no agents yet.
    fn of_world(world: [f32; 2], depth: Option<f32>, wrap: bool) -> DensityParams {
        let (grid, grid_z) = match depth {
            None => (grid_for(world), 1),
            Some(d) => {
                let g = grid_for_3d([world[0], world[1], d]);
                ([g[0], g[1]], g[2])
            }
        };
        DensityParams {
            grid,
            n: 0,
            wrap: wrap as u32,
            world,
            grid_z,
            world_z: depth.unwrap_or(0.0),
        }
    }
}

impl DensityPass {
    /// `pos` holds x\[0..cap\], y\[0..cap\] (and z\[0..cap\] when `depth` is given: a 3D
    /// world `depth` deep, with a 3D grid) from offset 0.
    pub fn new(
        device: &wgpu::Device,
        pos: &wgpu::Buffer,
        capacity: u32,
        world: [f32; 2],
        depth: Option<f32>,
        wrap: bool,
    ) -> Self {
        let module = device.create_shader_module(wgpu::include_wgsl!("../../shaders/density.wgsl"));
        let cs = wgpu::ShaderStages::COMPUTE;
        let bgl = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("density bind group layout"),
            entries: &[
                layout_entry::uniform(0, cs),
                layout_entry::storage(1, cs, true),
                layout_entry::storage(2, cs, false),
                layout_entry::storage(3, cs, false),
                layout_entry::storage(4, cs, false),
                layout_entry::storage(5, cs, false),
            ],
        });
        let params = DensityParams::of_world(world, depth, wrap);
        let cells = (params.grid[0] * params.grid[1] * params.grid_z) as u64;
        let dim = if depth.is_some() { 3 } else { 2 };
        let buf = |label: &str, size: u64, usage: wgpu::BufferUsages| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: size.max(4),
                usage,
                mapped_at_creation: false,
            })
        };
        let st = wgpu::BufferUsages::STORAGE;
        let params_buf = super::uniform_buffer(
            device,
            "density params",
            std::mem::size_of::<DensityParams>(),
        );
        let counts = buf(
            "density counts",
            cells * 4,
            st | wgpu::BufferUsages::COPY_DST,
        );
        let tmp = buf("density blur temp", cells * 4, st);
        let field = buf("density field", cells * 4, st);
        let density = buf(
            "density per agent",
            capacity as u64 * 4,
            st | wgpu::BufferUsages::VERTEX,
        );
        let pos_binding = wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: pos,
            offset: 0,
            size: wgpu::BufferSize::new(capacity.max(1) as u64 * 4 * dim),
        });
        let bind_group = super::bind_in_order(
            device,
            "density bind group",
            &bgl,
            vec![
                params_buf.as_entire_binding(),
                pos_binding,
                counts.as_entire_binding(),
                tmp.as_entire_binding(),
                field.as_entire_binding(),
                density.as_entire_binding(),
            ],
        );
        let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("density pipeline layout"),
            bind_group_layouts: &[Some(&bgl)],
            immediate_size: 0,
        });
        let pipe = |entry: &str| {
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: Some(&layout),
                module: &module,
                entry_point: Some(entry),
                compilation_options: Default::default(),
                cache: None,
            })
        };
        let entries = entry_points(depth.is_some());
        DensityPass {
            pipelines: entries.iter().map(|&(e, a)| (pipe(e), a)).collect(),
            bind_group,
            params_buf,
            counts,
            params,
            density,
        }
    }

    /// Mean agents per cell for `n` agents: the scale of the density values.
    pub fn mean_per_cell(&self, n: u32) -> f32 {
        n as f32 / self.cells() as f32
    }

    fn cells(&self) -> u32 {
        self.params.grid[0] * self.params.grid[1] * self.params.grid_z
    }

    pub fn run(&mut self, queue: &wgpu::Queue, encoder: &mut wgpu::CommandEncoder, n: u32) {
        self.params.n = n;
        queue.write_buffer(&self.params_buf, 0, bytemuck::bytes_of(&self.params));
        encoder.clear_buffer(&self.counts, 0, None);
        let cells = self.cells();
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("density pass"),
            timestamp_writes: None,
        });
        pass.push_debug_group("density");
        pass.set_bind_group(0, &self.bind_group, &[]);
        for (p, per_agent) in &self.pipelines {
            let items = if *per_agent { n } else { cells };
            if items == 0 {
                continue;
            }
            pass.set_pipeline(p);
            let (x, y) = super::dispatch_2d(items.div_ceil(WORKGROUP));
            pass.dispatch_workgroups(x, y, 1);
        }
        pass.pop_debug_group();
    }
}
