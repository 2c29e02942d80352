//! egui's output drawn into the window (shaders/panel.wgsl): its textures (the font atlas)
//! kept up to date from each frame's deltas, its meshes drawn clipped, premultiplied alpha.
//!
//! This is what `egui-wgpu`'s renderer does, less what the player does not use (callbacks,
//! user textures, MSAA), with one difference that matters here: its shader samples the texture
//! under a branch on a uniform, which Mesa's lavapipe runs per pixel — the panel and the bar
//! cost ~50 ms a window frame there, against a few with this one.

use std::collections::HashMap;
use std::mem::{offset_of, size_of};

use egui::epaint::{ClippedPrimitive, ImageData, ImageDelta, Primitive, TextureId, Vertex};
use egui::{TextureFilter, TextureOptions, TextureWrapMode};

use crate::render::{layout_entry, sampled_texture, uniform_buffer};

/// Keep in sync with `Params` in shaders/panel.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct PanelParams {
    /// The window's size in points.
    pub size: [f32; 2],
    pub _pad: [f32; 2],
}

/// A texture of egui's, bound with its sampler.
struct Texture {
    texture: wgpu::Texture,
    group: wgpu::BindGroup,
    options: TextureOptions,
}

/// One mesh's draw: its indices in the frame's index buffer, its first vertex, its texture and
/// its clip rectangle (pixels: x, y, width, height).
struct Draw {
    indices: std::ops::Range<u32>,
    base_vertex: i32,
    texture: TextureId,
    clip: [u32; 4],
}

pub struct PanelPainter {
    pipeline: wgpu::RenderPipeline,
    screen: wgpu::Buffer,
    screen_group: wgpu::BindGroup,
    texture_layout: wgpu::BindGroupLayout,
    textures: HashMap<TextureId, Texture>,
    vertices: Option<wgpu::Buffer>,
    indices: Option<wgpu::Buffer>,
    draws: Vec<Draw>,
    /// This frame's meshes, end to end (kept between frames for their capacity).
    vertex_data: Vec<Vertex>,
    index_data: Vec<u32>,
}

fn filter(f: TextureFilter) -> wgpu::FilterMode {
    match f {
        TextureFilter::Nearest => wgpu::FilterMode::Nearest,
        TextureFilter::Linear => wgpu::FilterMode::Linear,
    }
}

fn address(w: TextureWrapMode) -> wgpu::AddressMode {
    match w {
        TextureWrapMode::ClampToEdge => wgpu::AddressMode::ClampToEdge,
        TextureWrapMode::Repeat => wgpu::AddressMode::Repeat,
        TextureWrapMode::MirroredRepeat => wgpu::AddressMode::MirrorRepeat,
    }
}

/// A buffer of at least `len` bytes for `usage`, the one held if it is big enough.
fn buffer_for(
    device: &wgpu::Device,
    held: &mut Option<wgpu::Buffer>,
    len: usize,
    usage: wgpu::BufferUsages,
    label: &str,
) -> wgpu::Buffer {
    let len = (len.max(4) as u64).next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT);
    match held {
        Some(b) if b.size() >= len => b.clone(),
        _ => {
            let b = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: len.next_power_of_two(),
                usage: usage | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            *held = Some(b.clone());
            b
        }
    }
}

/// egui's colours are premultiplied by alpha.
const PREMULTIPLIED: wgpu::BlendState = wgpu::BlendState {
    color: wgpu::BlendComponent {
        src_factor: wgpu::BlendFactor::One,
        dst_factor: wgpu::BlendFactor::OneMinusSrcAlpha,
        operation: wgpu::BlendOperation::Add,
    },
    alpha: wgpu::BlendComponent {
        src_factor: wgpu::BlendFactor::OneMinusDstAlpha,
        dst_factor: wgpu::BlendFactor::One,
        operation: wgpu::BlendOperation::Add,
    },
};

impl PanelPainter {
    /// For a window of `format` (an sRGB one gets egui's sRGB-encoded colours decoded first).
    pub fn new(device: &wgpu::Device, format: wgpu::TextureFormat) -> PanelPainter {
        let module = device.create_shader_module(wgpu::include_wgsl!("../../shaders/panel.wgsl"));
        let vis = wgpu::ShaderStages::VERTEX | wgpu::ShaderStages::FRAGMENT;
        let screen_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("panel screen layout"),
            entries: &[layout_entry::uniform(0, vis)],
        });
        let texture_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("panel texture layout"),
            entries: &[
                layout_entry::texture(0, wgpu::ShaderStages::FRAGMENT),
                layout_entry::sampler(1, wgpu::ShaderStages::FRAGMENT),
            ],
        });
        let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("panel pipeline layout"),
            bind_group_layouts: &[Some(&screen_layout), Some(&texture_layout)],
            immediate_size: 0,
        });
        let attributes = [
            wgpu::VertexAttribute {
                format: wgpu::VertexFormat::Float32x2,
                offset: offset_of!(Vertex, pos) as u64,
                shader_location: 0,
            },
            wgpu::VertexAttribute {
                format: wgpu::VertexFormat::Float32x2,
                offset: offset_of!(Vertex, uv) as u64,
                shader_location: 1,
            },
            wgpu::VertexAttribute {
                format: wgpu::VertexFormat::Uint32,
                offset: offset_of!(Vertex, color) as u64,
                shader_location: 2,
            },
        ];
        let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("panel"),
            layout: Some(&layout),
            vertex: wgpu::VertexState {
                module: &module,
                entry_point: Some("vs_panel"),
                compilation_options: Default::default(),
                buffers: &[Some(wgpu::VertexBufferLayout {
                    array_stride: size_of::<Vertex>() as u64,
                    step_mode: wgpu::VertexStepMode::Vertex,
                    attributes: &attributes,
                })],
            },
            primitive: wgpu::PrimitiveState::default(),
            depth_stencil: None,
            multisample: wgpu::MultisampleState::default(),
            fragment: Some(wgpu::FragmentState {
                module: &module,
                entry_point: Some(if format.is_srgb() {
                    "fs_panel_decode"
                } else {
                    "fs_panel"
                }),
                compilation_options: Default::default(),
                targets: &[Some(wgpu::ColorTargetState {
                    format,
                    blend: Some(PREMULTIPLIED),
                    write_mask: wgpu::ColorWrites::ALL,
                })],
            }),
            multiview_mask: None,
            cache: None,
        });
        let screen = uniform_buffer(device, "panel screen", size_of::<PanelParams>());
        let screen_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("panel screen"),
            layout: &screen_layout,
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: screen.as_entire_binding(),
            }],
        });
        PanelPainter {
            pipeline,
            screen,
            screen_group,
            texture_layout,
            textures: HashMap::new(),
            vertices: None,
            indices: None,
            draws: Vec::new(),
            vertex_data: Vec::new(),
            index_data: Vec::new(),
        }
    }

    /// A texture's new content, whole or a patch of it.
    pub fn set_texture(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        id: TextureId,
        delta: &ImageDelta,
    ) {
        let ImageData::Color(image) = &delta.image;
        let [w, h] = image.size.map(|v| v as u32);
        if w == 0 || h == 0 {
            return;
        }
        let origin = match delta.pos {
            Some([x, y]) => wgpu::Origin3d {
                x: x as u32,
                y: y as u32,
                z: 0,
            },
            None => {
                let texture = sampled_texture(
                    device,
                    "panel texture",
                    w,
                    h,
                    wgpu::TextureFormat::Rgba8Unorm,
                );
                let group = Self::bind_with(device, &self.texture_layout, &texture, delta.options);
                self.textures.insert(
                    id,
                    Texture {
                        texture,
                        group,
                        options: delta.options,
                    },
                );
                wgpu::Origin3d::ZERO
            }
        };
        let Some(t) = self.textures.get_mut(&id) else {
            return; // a patch of a texture never set: nothing to patch
        };
        if t.options != delta.options {
            t.group = Self::bind_with(device, &self.texture_layout, &t.texture, delta.options);
            t.options = delta.options;
        }
        queue.write_texture(
            wgpu::TexelCopyTextureInfo {
                texture: &t.texture,
                mip_level: 0,
                origin,
                aspect: wgpu::TextureAspect::All,
            },
            bytemuck::cast_slice(&image.pixels),
            wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(4 * w),
                rows_per_image: Some(h),
            },
            wgpu::Extent3d {
                width: w,
                height: h,
                depth_or_array_layers: 1,
            },
        );
    }

    fn bind_with(
        device: &wgpu::Device,
        layout: &wgpu::BindGroupLayout,
        texture: &wgpu::Texture,
        o: TextureOptions,
    ) -> wgpu::BindGroup {
        let sampler = device.create_sampler(&wgpu::SamplerDescriptor {
            label: Some("panel sampler"),
            mag_filter: filter(o.magnification),
            min_filter: filter(o.minification),
            address_mode_u: address(o.wrap_mode),
            address_mode_v: address(o.wrap_mode),
            ..Default::default()
        });
        let view = texture.create_view(&Default::default());
        device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("panel texture"),
            layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: wgpu::BindingResource::TextureView(&view),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: wgpu::BindingResource::Sampler(&sampler),
                },
            ],
        })
    }

    /// Forgets a texture egui has freed.
    pub fn free_texture(&mut self, id: &TextureId) {
        self.textures.remove(id);
    }

    /// Uploads this frame's meshes for a window of `size` pixels at `ppp` pixels per point.
    pub fn prepare(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        prims: &[ClippedPrimitive],
        size: [u32; 2],
        ppp: f32,
    ) {
        let params = PanelParams {
            size: [size[0] as f32 / ppp, size[1] as f32 / ppp],
            _pad: [0.0; 2],
        };
        queue.write_buffer(&self.screen, 0, bytemuck::bytes_of(&params));
        self.draws.clear();
        let (vertices, indices) = (&mut self.vertex_data, &mut self.index_data);
        vertices.clear();
        indices.clear();
        for p in prims {
            let Primitive::Mesh(mesh) = &p.primitive else {
                continue; // the player paints no callbacks
            };
            if mesh.indices.is_empty() {
                continue;
            }
            let Some(clip) = clip_pixels(p.clip_rect, size, ppp) else {
                continue;
            };
            let start = indices.len() as u32;
            self.draws.push(Draw {
                indices: start..start + mesh.indices.len() as u32,
                base_vertex: vertices.len() as i32,
                texture: mesh.texture_id,
                clip,
            });
            vertices.extend_from_slice(&mesh.vertices);
            indices.extend_from_slice(&mesh.indices);
        }
        if self.draws.is_empty() {
            return;
        }
        let v = buffer_for(
            device,
            &mut self.vertices,
            vertices.len() * size_of::<Vertex>(),
            wgpu::BufferUsages::VERTEX,
            "panel vertices",
        );
        let i = buffer_for(
            device,
            &mut self.indices,
            indices.len() * 4,
            wgpu::BufferUsages::INDEX,
            "panel indices",
        );
        queue.write_buffer(&v, 0, bytemuck::cast_slice(&self.vertex_data));
        queue.write_buffer(&i, 0, bytemuck::cast_slice(&self.index_data));
    }

    /// Draws the meshes [`PanelPainter::prepare`] uploaded.
    pub fn draw(&self, pass: &mut wgpu::RenderPass<'_>, size: [u32; 2]) {
        let (Some(v), Some(i)) = (&self.vertices, &self.indices) else {
            return;
        };
        if self.draws.is_empty() {
            return;
        }
        pass.push_debug_group("panel");
        pass.set_viewport(0.0, 0.0, size[0] as f32, size[1] as f32, 0.0, 1.0);
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.screen_group, &[]);
        pass.set_vertex_buffer(0, v.slice(..));
        pass.set_index_buffer(i.slice(..), wgpu::IndexFormat::Uint32);
        for d in &self.draws {
            let Some(t) = self.textures.get(&d.texture) else {
                continue;
            };
            let [x, y, w, h] = d.clip;
            pass.set_scissor_rect(x, y, w, h);
            pass.set_bind_group(1, &t.group, &[]);
            pass.draw_indexed(d.indices.clone(), d.base_vertex, 0..1);
        }
        pass.set_scissor_rect(0, 0, size[0], size[1]);
        pass.pop_debug_group();
    }
}

/// A clip rectangle in points as whole pixels inside a window of `size` (x, y, width, height),
/// or `None` where nothing of it is inside.
fn clip_pixels(r: egui::Rect, size: [u32; 2], ppp: f32) -> Option<[u32; 4]> {
    let px = |v: f32, max: u32| ((v * ppp).round().max(0.0) as u32).min(max);
    let (x0, y0) = (px(r.min.x, size[0]), px(r.min.y, size[1]));
    let (x1, y1) = (px(r.max.x, size[0]), px(r.max.y, size[1]));
    (x1 > x0 && y1 > y0).then_some([x0, y0, x1 - x0, y1 - y0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_rectangles_are_whole_pixels_inside_the_window() {
        let r = |x0, y0, x1, y1| egui::Rect::from_min_max(egui::pos2(x0, y0), egui::pos2(x1, y1));
        assert_eq!(
            clip_pixels(r(10.0, 20.0, 30.5, 40.0), [100, 100], 1.0),
            Some([10, 20, 21, 20])
        );
        // Points to pixels at 2 pixels a point, clamped to the window.
        assert_eq!(
            clip_pixels(r(-5.0, 0.0, 80.0, 10.0), [100, 50], 2.0),
            Some([0, 0, 100, 20])
        );
        assert_eq!(clip_pixels(r(60.0, 0.0, 90.0, 10.0), [100, 50], 2.0), None);
        assert_eq!(clip_pixels(r(10.0, 10.0, 10.0, 20.0), [100, 50], 1.0), None);
    }

    #[test]
    fn vertices_are_laid_out_as_the_shader_reads_them() {
        // pos (2 × f32), uv (2 × f32), colour (4 × u8): 20 bytes.
        assert_eq!(size_of::<Vertex>(), 20);
        assert_eq!(offset_of!(Vertex, pos), 0);
        assert_eq!(offset_of!(Vertex, uv), 8);
        assert_eq!(offset_of!(Vertex, color), 16);
    }
}
