//! The agents pass: instanced soft point sprites, added into the HDR target
//! (shaders/agents.wgsl); before them, with stacking, one point per agent into the crowd
//! texture (an eighth of the frame each way), which each sprite reads to share its light.

use super::{layout_entry, HDR_FORMAT};

/// Keep in sync with `Params` in shaders/agents.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct AgentParams {
    pub view_min: [f32; 2],
    pub view_size: [f32; 2],
    pub world: [f32; 2],
    pub viewport: [f32; 2],
    pub range: [f32; 2],
    pub radius_px: f32,
    pub core: f32,
    pub mode: u32,
    /// 1; in a wrapping world 9, or 4 (the agent and its images across the nearer edges).
    pub copies: u32,
    pub intensity: f32,
    pub halo: f32,
    // 3D only (left zero for 2D).
    /// World → clip, column-major.
    pub view_proj: [[f32; 4]; 4],
    pub eye: [f32; 3],
    pub fog: f32,
    pub period: [f32; 3],
    pub ref_dist: f32,
    pub anchor: [f32; 3],
    pub min_image: u32,
    pub fog_near: f32,
    pub fog_far: f32,
    pub box_level: f32,
    pub near: f32,
    /// Motion blur: simulated seconds the shutter is open (0 = none); each sprite is drawn
    /// from its position this long ago (by its velocity) to where it is.
    pub shutter: f32,
    /// 0..1: each sprite's light is divided by its crowd's overlap to this power.
    pub stacking: f32,
    /// One sprite's light footprint over a crowd cell's area ([`CROWD_CELL`]² px).
    pub stack_area: f32,
    /// 0 dot, 1 dart.
    pub shape: u32,
    /// The flock's mean direction this frame, radians (`relative-heading`).
    pub mean_heading: f32,
    /// 1: each sprite's size is its own multiple of `radius_px` (the sizes slot), else 1.
    pub sized: u32,
    pub _pad: [f32; 2],
    /// The fixed colour (linear RGB) and 1 in `a` when one is given.
    pub fixed: [f32; 4],
}

/// Frame pixels per crowd-texture pixel, each way.
pub const CROWD_CELL: u32 = 8;
/// The crowd texture: agents per cell, added up (half floats blend everywhere).
const CROWD_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::R16Float;

/// Vertices per sprite copy (two triangles).
const VERTS_PER_COPY: u32 = 6;

/// From this core width (px) up, a round sprite's core is drawn as a Gaussian widened by the
/// pixel's variance instead of the exact average of the Gaussian over the pixel: within 0.2%
/// of the core's peak, and cheaper (shaders/agents.wgsl, `core_over`).
pub const WIDE_CORE_PX: f32 = 2.0;

/// How long a dart is, in halo radii along its heading (`DART_LENGTH` in shaders/agents.wgsl).
pub const DART_LENGTH: f32 = 2.2;

impl AgentParams {
    /// Which sprites the frame can hold, the shader's `SHAPES`: 0 round dots only (shape dot,
    /// no motion blur), 1 darts only (shape dart, no motion blur; an agent standing still is a
    /// round dart), 2 anything (motion blur). Each pipeline gives the same light as the one
    /// holding every shape; the fewer shapes, the less it costs.
    fn shapes(&self) -> usize {
        match (self.shutter > 0.0, self.shape) {
            (true, _) => 2,
            (false, 0) => 0,
            (false, _) => 1,
        }
    }
}

/// The sprites' pipelines, one for each value of [`AgentParams::shapes`], with the exact core
/// and with the wide one ([`WIDE_CORE_PX`]).
struct Sprites([[wgpu::RenderPipeline; 2]; 3]);

impl Sprites {
    /// `wide_core`: every round sprite's core is at least [`WIDE_CORE_PX`] wide.
    fn for_frame(&self, params: &AgentParams, wide_core: bool) -> &wgpu::RenderPipeline {
        &self.0[params.shapes()][wide_core as usize]
    }
}

pub struct AgentsPass {
    /// The pipelines, built when a frame first draws with them: fifteen of them, a tenth of a
    /// second of start-up on lavapipe, where the CPU usually draws the frames instead.
    pipelines: std::sync::OnceLock<Pipelines>,
    /// What they are built from.
    device: wgpu::Device,
    module: wgpu::ShaderModule,
    layout: wgpu::PipelineLayout,
    count_layout: wgpu::PipelineLayout,
    display: wgpu::TextureFormat,
    crowd: wgpu::TextureView,
    bind_group: wgpu::BindGroup,
    /// The parameters alone, for the count pipelines (the crowd texture is their target).
    count_group: wgpu::BindGroup,
    params: wgpu::Buffer,
}

/// Where each per-agent attribute lives: (buffer, byte offset) for x, y, vx, vy, density and
/// the size multiple (read only where `AgentParams::sized` is 1).
pub struct AgentBuffers<'a> {
    pub slots: [(&'a wgpu::Buffer, u64); 6],
    pub n: u32,
}

/// The same for 3D: x, y, z, vx, vy, vz, density, size multiple.
pub struct AgentBuffers3<'a> {
    pub slots: [(&'a wgpu::Buffer, u64); 8],
    pub n: u32,
}

/// The crowd texture for a frame of `size`: one texel per [`CROWD_CELL`]² pixels.
fn crowd_texture(device: &wgpu::Device, size: [u32; 2]) -> wgpu::TextureView {
    device
        .create_texture(&wgpu::TextureDescriptor {
            label: Some("crowd counts"),
            size: wgpu::Extent3d {
                width: size[0].div_ceil(CROWD_CELL).max(1),
                height: size[1].div_ceil(CROWD_CELL).max(1),
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: CROWD_FORMAT,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::TEXTURE_BINDING,
            view_formats: &[],
        })
        .create_view(&Default::default())
}

/// One f32 per agent per vertex buffer: 2D x, y, vx, vy, density at locations 0..5; 3D x, y,
/// z, vx, vy, vz, density at 0..7; the sprite's size multiple at 7 (both).
fn instance_attributes() -> [[wgpu::VertexAttribute; 1]; 8] {
    [
        wgpu::vertex_attr_array![0 => Float32],
        wgpu::vertex_attr_array![1 => Float32],
        wgpu::vertex_attr_array![2 => Float32],
        wgpu::vertex_attr_array![3 => Float32],
        wgpu::vertex_attr_array![4 => Float32],
        wgpu::vertex_attr_array![5 => Float32],
        wgpu::vertex_attr_array![6 => Float32],
        wgpu::vertex_attr_array![7 => Float32],
    ]
}

/// One buffer layout per attribute, stepping with `step_mode`.
fn attribute_buffers(
    attrs: &[[wgpu::VertexAttribute; 1]; 8],
    step_mode: wgpu::VertexStepMode,
) -> Vec<Option<wgpu::VertexBufferLayout<'_>>> {
    attrs
        .iter()
        .map(|a| {
            Some(wgpu::VertexBufferLayout {
                array_stride: 4,
                step_mode,
                attributes: a,
            })
        })
        .collect()
}

/// A pipeline of the agents' shader (`entries`: vertex and fragment entry points) that adds
/// its light to a target of `format`.
#[allow(clippy::too_many_arguments)]
fn additive_pipeline(
    device: &wgpu::Device,
    layout: &wgpu::PipelineLayout,
    module: &wgpu::ShaderModule,
    label: &str,
    (vs, fs): (&str, &str),
    buffers: &[Option<wgpu::VertexBufferLayout>],
    topology: wgpu::PrimitiveTopology,
    format: wgpu::TextureFormat,
    constants: &[(&str, f64)],
) -> wgpu::RenderPipeline {
    let additive = wgpu::BlendComponent {
        src_factor: wgpu::BlendFactor::One,
        dst_factor: wgpu::BlendFactor::One,
        operation: wgpu::BlendOperation::Add,
    };
    device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
        label: Some(label),
        layout: Some(layout),
        vertex: wgpu::VertexState {
            module,
            entry_point: Some(vs),
            compilation_options: Default::default(),
            buffers,
        },
        primitive: wgpu::PrimitiveState {
            topology,
            ..Default::default()
        },
        depth_stencil: None,
        multisample: wgpu::MultisampleState::default(),
        fragment: Some(wgpu::FragmentState {
            module,
            entry_point: Some(fs),
            compilation_options: wgpu::PipelineCompilationOptions {
                constants,
                ..Default::default()
            },
            targets: &[Some(wgpu::ColorTargetState {
                format,
                blend: Some(wgpu::BlendState {
                    color: additive,
                    alpha: additive,
                }),
                write_mask: wgpu::ColorWrites::ALL,
            })],
        }),
        multiview_mask: None,
        cache: None,
    })
}

/// The pass's pipelines, made from one shader module.
struct Pipelines {
    sprites: Sprites,
    sprites3: Sprites,
    world_box: wgpu::RenderPipeline,
    count: wgpu::RenderPipeline,
    count3: wgpu::RenderPipeline,
}

impl Pipelines {
    /// `layout`: the sprites' and the box's (parameters, colour map, crowd texture);
    /// `count_layout`: the crowd counts' (parameters alone); `display`: the display image's
    /// format, which the world box is drawn onto.
    fn new(
        device: &wgpu::Device,
        module: &wgpu::ShaderModule,
        layout: &wgpu::PipelineLayout,
        count_layout: &wgpu::PipelineLayout,
        display: wgpu::TextureFormat,
    ) -> Pipelines {
        let make = |label,
                    vs,
                    fs,
                    buffers: &[Option<wgpu::VertexBufferLayout>],
                    topology,
                    format,
                    constants: &[(&str, f64)]| {
            additive_pipeline(
                device,
                layout,
                module,
                label,
                (vs, fs),
                buffers,
                topology,
                format,
                constants,
            )
        };
        let attrs = instance_attributes();
        let buffers = attribute_buffers(&attrs, wgpu::VertexStepMode::Instance);
        // The crowd count: a vertex (a point) per agent, an instance per wrapped copy. Lavapipe
        // runs each instance as a draw of its own: an instance per agent cost ~0.25 µs each.
        let points = attribute_buffers(&attrs, wgpu::VertexStepMode::Vertex);
        // 2D: x, y, vx, vy, density and the size multiple (location 7).
        let buffers2: Vec<_> = buffers[..5].iter().chain(&buffers[7..]).cloned().collect();
        let tri = wgpu::PrimitiveTopology::TriangleList;
        let hdr = HDR_FORMAT;
        let sprites = |label, vs, buffers: &[Option<wgpu::VertexBufferLayout>]| {
            Sprites([0.0, 1.0, 2.0].map(|shapes| {
                [0.0, 1.0].map(|wide| {
                    make(
                        label,
                        vs,
                        "fs_main",
                        buffers,
                        tri,
                        hdr,
                        &[("SHAPES", shapes), ("WIDE_CORE", wide)],
                    )
                })
            }))
        };
        let pipeline = sprites("agents pipeline", "vs_main", &buffers2);
        let pipeline3 = sprites("agents 3D pipeline", "vs_main3", &buffers);
        // The box goes onto the display image, after tone mapping: no trails, no bloom.
        let box_pipeline = make(
            "world box pipeline",
            "vs_box",
            "fs_box",
            &[],
            wgpu::PrimitiveTopology::LineList,
            display,
            &[],
        );
        let count = |label, vs, buffers: &[Option<wgpu::VertexBufferLayout>]| {
            additive_pipeline(
                device,
                count_layout,
                module,
                label,
                (vs, "fs_count"),
                buffers,
                wgpu::PrimitiveTopology::PointList,
                CROWD_FORMAT,
                &[],
            )
        };
        Pipelines {
            sprites: pipeline,
            sprites3: pipeline3,
            world_box: box_pipeline,
            count: count("crowd count pipeline", "vs_count", &points[..2]),
            count3: count("crowd count 3D pipeline", "vs_count3", &points[..3]),
        }
    }
}

impl AgentsPass {
    /// `display`: the display image's format (the world box is drawn onto it); `size`: the
    /// frame's (the crowd texture is an eighth of it each way).
    pub fn new(
        device: &wgpu::Device,
        lut: &wgpu::TextureView,
        sampler: &wgpu::Sampler,
        display: wgpu::TextureFormat,
        size: [u32; 2],
    ) -> Self {
        let module = super::wgsl::create(device, "agents.wgsl + colour.wgsl", super::wgsl::AGENTS);
        let vs = wgpu::ShaderStages::VERTEX;
        let bgl = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("agents bind group layout"),
            entries: &[
                layout_entry::uniform(0, wgpu::ShaderStages::VERTEX_FRAGMENT),
                layout_entry::texture(1, vs),
                layout_entry::sampler(2, vs),
                layout_entry::texture(3, vs),
            ],
        });
        let count_bgl = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("crowd count bind group layout"),
            entries: &[layout_entry::uniform(
                0,
                wgpu::ShaderStages::VERTEX_FRAGMENT,
            )],
        });
        let params =
            super::uniform_buffer(device, "agents params", std::mem::size_of::<AgentParams>());
        let crowd = crowd_texture(device, size);
        let bind_group = super::bind_in_order(
            device,
            "agents bind group",
            &bgl,
            vec![
                params.as_entire_binding(),
                wgpu::BindingResource::TextureView(lut),
                wgpu::BindingResource::Sampler(sampler),
                wgpu::BindingResource::TextureView(&crowd),
            ],
        );
        let count_group = super::bind_in_order(
            device,
            "crowd count bind group",
            &count_bgl,
            vec![params.as_entire_binding()],
        );
        let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("agents pipeline layout"),
            bind_group_layouts: &[Some(&bgl)],
            immediate_size: 0,
        });
        let count_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("crowd count pipeline layout"),
            bind_group_layouts: &[Some(&count_bgl)],
            immediate_size: 0,
        });
        AgentsPass {
            pipelines: std::sync::OnceLock::new(),
            device: device.clone(),
            module,
            layout,
            count_layout,
            display,
            crowd,
            bind_group,
            count_group,
            params,
        }
    }

    /// The pipelines, built on first use.
    fn pipelines(&self) -> &Pipelines {
        self.pipelines.get_or_init(|| {
            let (device, module) = (&self.device, &self.module);
            Pipelines::new(
                device,
                module,
                &self.layout,
                &self.count_layout,
                self.display,
            )
        })
    }

    /// With stacking, one point per agent (and wrapped copy) into the cleared crowd texture.
    fn count_crowd(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        params: &AgentParams,
        slots: &[(&wgpu::Buffer, u64)],
        n: u32,
        three: bool,
    ) {
        if params.stacking <= 0.0 {
            return;
        }
        let mut pass = super::begin_pass(
            encoder,
            "crowd count pass",
            &self.crowd,
            Some(wgpu::Color::TRANSPARENT),
        );
        if n == 0 {
            return;
        }
        let p = self.pipelines();
        pass.set_pipeline(if three { &p.count3 } else { &p.count });
        pass.set_bind_group(0, &self.count_group, &[]);
        let len = n as u64 * 4;
        for (slot, (buf, off)) in slots.iter().enumerate() {
            pass.set_vertex_buffer(slot as u32, buf.slice(*off..*off + len));
        }
        let copies = if three { 1 } else { params.copies };
        pass.draw(0..n, 0..copies);
    }

    /// Draws every agent into `hdr` (loaded, not cleared: the fade or clear came before);
    /// `wide_core`: every round sprite's core is at least [`WIDE_CORE_PX`] wide.
    #[allow(clippy::too_many_arguments)]
    pub fn draw(
        &self,
        queue: &wgpu::Queue,
        encoder: &mut wgpu::CommandEncoder,
        hdr: &wgpu::TextureView,
        params: &AgentParams,
        wide_core: bool,
        agents: &AgentBuffers,
        scissor: Option<[u32; 4]>,
    ) {
        queue.write_buffer(&self.params, 0, bytemuck::bytes_of(params));
        self.count_crowd(encoder, params, &agents.slots[..2], agents.n, false);
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("agents pass"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: hdr,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Load,
                    store: wgpu::StoreOp::Store,
                },
            })],
            depth_stencil_attachment: None,
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        if agents.n == 0 {
            return;
        }
        pass.push_debug_group("agents");
        pass.set_pipeline(self.pipelines().sprites.for_frame(params, wide_core));
        pass.set_bind_group(0, &self.bind_group, &[]);
        if let Some([x, y, w, h]) = scissor {
            if w == 0 || h == 0 {
                pass.pop_debug_group();
                return;
            }
            pass.set_scissor_rect(x, y, w, h);
        }
        let len = agents.n as u64 * 4;
        for (slot, (buf, off)) in agents.slots.iter().enumerate() {
            pass.set_vertex_buffer(slot as u32, buf.slice(*off..*off + len));
        }
        pass.draw(0..VERTS_PER_COPY * params.copies, 0..agents.n);
        pass.pop_debug_group();
    }

    /// Draws every agent of a 3D recording through the camera in `params` into `hdr`
    /// (loaded, not cleared); `wide_core` as for [`AgentsPass::draw`].
    pub fn draw3(
        &self,
        queue: &wgpu::Queue,
        encoder: &mut wgpu::CommandEncoder,
        hdr: &wgpu::TextureView,
        params: &AgentParams,
        wide_core: bool,
        agents: &AgentBuffers3,
    ) {
        queue.write_buffer(&self.params, 0, bytemuck::bytes_of(params));
        self.count_crowd(encoder, params, &agents.slots[..3], agents.n, true);
        let mut pass = super::begin_pass(encoder, "agents 3D pass", hdr, None);
        pass.set_bind_group(0, &self.bind_group, &[]);
        if agents.n == 0 {
            return;
        }
        pass.push_debug_group("agents 3D");
        pass.set_pipeline(self.pipelines().sprites3.for_frame(params, wide_core));
        let len = agents.n as u64 * 4;
        for (slot, (buf, off)) in agents.slots.iter().enumerate() {
            pass.set_vertex_buffer(slot as u32, buf.slice(*off..*off + len));
        }
        pass.draw(0..VERTS_PER_COPY, 0..agents.n);
        pass.pop_debug_group();
    }

    /// The world box's wireframe, added onto the display image `ldr` with the camera given
    /// to the last [`draw3`](Self::draw3) of this frame.
    pub fn draw_box(&self, encoder: &mut wgpu::CommandEncoder, ldr: &wgpu::TextureView) {
        let mut pass = super::begin_pass(encoder, "world box pass", ldr, None);
        pass.push_debug_group("world box");
        pass.set_pipeline(&self.pipelines().world_box);
        pass.set_bind_group(0, &self.bind_group, &[]);
        pass.draw(0..24, 0..1);
        pass.pop_debug_group();
    }
}
