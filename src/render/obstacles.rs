//! The scene's obstacles (circles, boxes, capsules), drawn over the display image after tone
//! mapping (shaders/obstacles.wgsl): filled, with an outline of a fixed pixel width. Every shape
//! is convex, so each is one closed polygon tessellated once into triangles in world units;
//! the frame's view (2D) places them. 3D recordings are drawn without them.

/// A shape as the renderer draws it, in the world's x–y plane (the scene's obstacles, turned
/// into these by the caller: the renderer reads no scene).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Shape {
    Circle {
        center: [f32; 2],
        radius: f32,
    },
    /// An axis-aligned box.
    Box {
        min: [f32; 2],
        max: [f32; 2],
    },
    /// The points within `radius` of the segment `from`–`to`.
    Segment {
        from: [f32; 2],
        to: [f32; 2],
        radius: f32,
    },
}

use super::{bind_in_order, layout_entry, uniform_buffer};

/// Points on a full circle (a capsule's two ends share them).
const ROUND_POINTS: usize = 96;

/// Keep in sync with `Params` in shaders/obstacles.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ObstacleParams {
    pub view_min: [f32; 2],
    pub view_size: [f32; 2],
    pub viewport: [f32; 2],
    pub line_px: f32,
    pub pad0: f32,
    pub fill: [f32; 4],
    pub line: [f32; 4],
}

/// One vertex: world position, outward normal, how far out (−1: the fill; 0 the edge, 1 the
/// outline's rim).
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Vertex {
    pos: [f32; 2],
    normal: [f32; 2],
    out: f32,
}

pub struct ObstaclesPass {
    pipeline: wgpu::RenderPipeline,
    bind_group: wgpu::BindGroup,
    params: wgpu::Buffer,
    vertices: wgpu::Buffer,
    count: u32,
    /// The shapes drawn (what `count` vertices hold).
    shown: Vec<Shape>,
}

/// The obstacles at a step (a scene's timeline moves, adds or removes them): what the caller
/// that reads the scene gives the renderer.
pub type Moving = std::sync::Arc<dyn Fn(u64) -> Vec<Shape> + Send + Sync>;

/// The boundary of a shape (x–y), counter-clockwise, with the outward normal at each point.
fn outline(o: &Shape) -> Vec<([f32; 2], [f32; 2])> {
    let arc = |c: [f32; 2], r: f32, from: f32, points: usize, out: &mut Vec<_>| {
        for i in 0..points {
            let a = from + std::f32::consts::PI * 2.0 * i as f32 / ROUND_POINTS as f32;
            let n = [a.cos(), a.sin()];
            out.push(([c[0] + r * n[0], c[1] + r * n[1]], n));
        }
    };
    let mut out = Vec::new();
    match o {
        Shape::Circle { center, radius } => arc(*center, *radius, 0.0, ROUND_POINTS, &mut out),
        Shape::Segment { from, to, radius } => {
            let (a, b) = (*from, *to);
            let heading = (b[1] - a[1]).atan2(b[0] - a[0]);
            let half = std::f32::consts::FRAC_PI_2;
            // Half a circle around each end, from one side of the segment to the other.
            arc(b, *radius, heading - half, ROUND_POINTS / 2 + 1, &mut out);
            arc(a, *radius, heading + half, ROUND_POINTS / 2 + 1, &mut out);
        }
        Shape::Box { min, max } => {
            let s = std::f32::consts::FRAC_1_SQRT_2;
            out.extend([
                ([min[0], min[1]], [-s, -s]),
                ([max[0], min[1]], [s, -s]),
                ([max[0], max[1]], [s, s]),
                ([min[0], max[1]], [-s, s]),
            ]);
        }
    }
    out
}

/// Triangles of every shape: its fill (a fan) and its outline (a band outside the edge).
fn tessellate(obstacles: &[Shape]) -> Vec<Vertex> {
    let mut v = Vec::new();
    for o in obstacles {
        let ring = outline(o);
        let m = ring.len();
        let c = ring
            .iter()
            .fold([0.0f32; 2], |s, (p, _)| [s[0] + p[0], s[1] + p[1]]);
        let c = [c[0] / m as f32, c[1] / m as f32];
        let fill = |p: [f32; 2]| Vertex {
            pos: p,
            normal: [0.0; 2],
            out: -1.0,
        };
        for i in 0..m {
            let (a, na) = ring[i];
            let (b, nb) = ring[(i + 1) % m];
            v.extend([fill(c), fill(a), fill(b)]);
            let e = |p, n, out| Vertex {
                pos: p,
                normal: n,
                out,
            };
            v.extend([e(a, na, 0.0), e(b, nb, 0.0), e(b, nb, 1.0)]);
            v.extend([e(a, na, 0.0), e(b, nb, 1.0), e(a, na, 1.0)]);
        }
    }
    v
}

impl ObstaclesPass {
    /// The pass for `obstacles` (None when there are none), drawing into `display` images.
    pub fn new(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        obstacles: &[Shape],
        display: wgpu::TextureFormat,
    ) -> Option<ObstaclesPass> {
        let verts = tessellate(obstacles);
        if verts.is_empty() {
            return None;
        }
        let module =
            device.create_shader_module(wgpu::include_wgsl!("../../shaders/obstacles.wgsl"));
        let bgl = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("obstacles layout"),
            entries: &[layout_entry::uniform(0, wgpu::ShaderStages::VERTEX)],
        });
        let params = uniform_buffer(
            device,
            "obstacles params",
            std::mem::size_of::<ObstacleParams>(),
        );
        let bind_group = bind_in_order(
            device,
            "obstacles bind group",
            &bgl,
            vec![params.as_entire_binding()],
        );
        let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("obstacles pipeline layout"),
            bind_group_layouts: &[Some(&bgl)],
            immediate_size: 0,
        });
        let attributes = wgpu::vertex_attr_array![0 => Float32x2, 1 => Float32x2, 2 => Float32];
        let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("obstacles pipeline"),
            layout: Some(&layout),
            vertex: wgpu::VertexState {
                module: &module,
                entry_point: Some("vs_obstacle"),
                compilation_options: Default::default(),
                buffers: &[Some(wgpu::VertexBufferLayout {
                    array_stride: std::mem::size_of::<Vertex>() as u64,
                    step_mode: wgpu::VertexStepMode::Vertex,
                    attributes: &attributes,
                })],
            },
            primitive: wgpu::PrimitiveState::default(),
            depth_stencil: None,
            multisample: wgpu::MultisampleState::default(),
            fragment: Some(wgpu::FragmentState {
                module: &module,
                entry_point: Some("fs_obstacle"),
                compilation_options: Default::default(),
                targets: &[Some(wgpu::ColorTargetState {
                    format: display,
                    blend: Some(wgpu::BlendState::ALPHA_BLENDING),
                    write_mask: wgpu::ColorWrites::ALL,
                })],
            }),
            multiview_mask: None,
            cache: None,
        });
        let vertices = vertex_buffer(device, &verts);
        queue.write_buffer(&vertices, 0, bytemuck::cast_slice(&verts));
        Some(ObstaclesPass {
            pipeline,
            bind_group,
            params,
            vertices,
            count: verts.len() as u32,
            shown: obstacles.to_vec(),
        })
    }

    /// Draws `shapes` from now on (a timeline moved, added or removed some).
    fn set_shapes(&mut self, device: &wgpu::Device, queue: &wgpu::Queue, shapes: &[Shape]) {
        if shapes == self.shown.as_slice() {
            return;
        }
        let verts = tessellate(shapes);
        if std::mem::size_of_val(verts.as_slice()) as u64 > self.vertices.size() {
            self.vertices = vertex_buffer(device, &verts);
        }
        if !verts.is_empty() {
            queue.write_buffer(&self.vertices, 0, bytemuck::cast_slice(&verts));
        }
        self.count = verts.len() as u32;
        self.shown = shapes.to_vec();
    }

    /// Draws the obstacles onto `ldr` as the frame's view (`p`) places them.
    pub fn run(
        &self,
        queue: &wgpu::Queue,
        encoder: &mut wgpu::CommandEncoder,
        ldr: &wgpu::TextureView,
        p: &ObstacleParams,
    ) {
        if self.count == 0 {
            return;
        }
        queue.write_buffer(&self.params, 0, bytemuck::bytes_of(p));
        let mut pass = super::begin_pass(encoder, "obstacles pass", ldr, None);
        pass.push_debug_group("obstacles");
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.bind_group, &[]);
        pass.set_vertex_buffer(0, self.vertices.slice(..));
        pass.draw(0..self.count, 0..1);
        pass.pop_debug_group();
    }
}

fn vertex_buffer(device: &wgpu::Device, verts: &[Vertex]) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("obstacle triangles"),
        size: std::mem::size_of_val(verts) as u64,
        usage: wgpu::BufferUsages::VERTEX | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })
}

impl super::Renderer {
    /// Draws `obstacles` (a recording's scene's) over every frame from now on; 3D recordings
    /// are drawn without them.
    pub fn set_obstacles(&mut self, obstacles: &[Shape]) {
        let display = self.output.display_format();
        self.obstacles = ObstaclesPass::new(&self.gpu.device, &self.gpu.queue, obstacles, display)
            .filter(|_| self.world.dim == 2);
        self.obstacle_keys = None;
    }

    /// Draws at each frame the obstacles `at` gives for its step; `all`: every obstacle the
    /// scene lists (as it lists them).
    pub fn set_moving_obstacles(&mut self, all: &[Shape], at: Moving) {
        self.set_obstacles(all);
        if self.obstacles.is_some() {
            self.obstacle_keys = Some(at);
        }
    }

    /// The obstacles as they are at `step`, where a timeline moves them.
    pub(super) fn move_obstacles(&mut self, step: u64) {
        if let (Some(at), Some(pass)) = (&self.obstacle_keys, &mut self.obstacles) {
            pass.set_shapes(&self.gpu.device, &self.gpu.queue, &at(step));
        }
    }

    /// The obstacles' parameters for a frame seen through `view` (2D): the fill and outline a
    /// little away from the background, lighter on a dark one, darker on a light one.
    pub(super) fn obstacle_params(&self, view: ([f32; 2], [f32; 2], [f32; 2])) -> ObstacleParams {
        let bg = self.look.background;
        let light = 0.2126 * bg[0] + 0.7152 * bg[1] + 0.0722 * bg[2] > 0.5;
        let toward = |t: f32| -> [f32; 4] {
            let c = bg.map(|x| {
                if light {
                    x * (1.0 - t)
                } else {
                    x + (1.0 - x) * t
                }
            });
            [c[0], c[1], c[2], 1.0]
        };
        ObstacleParams {
            view_min: view.0,
            view_size: view.1,
            viewport: [self.look.width as f32, self.look.height as f32],
            line_px: (self.look.height as f32 / 360.0).max(1.0),
            pad0: 0.0,
            fill: toward(0.12),
            line: toward(0.4),
        }
    }
}
