//! The window: a winit window, the wgpu surface it presents, and egui (input through
//! egui-winit, drawing through [`PanelPainter`]). Each frame the renderer's display image goes to the
//! window's top-left corner 1:1 ([`Blit`]) and egui draws its panel to the right of it and its
//! bar below it, never over it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use winit::dpi::PhysicalSize;
use winit::event_loop::ActiveEventLoop;

use super::blit::Blit;
use super::panel_paint::PanelPainter;
use super::NoDisplay;
use crate::render::gpu::{self, Gpu};

/// The panel's width, in egui points.
pub const PANEL_PT: f32 = 300.0;
/// The bar's height (timeline, transport, HUD), in egui points.
pub const BAR_PT: f32 = 104.0;
/// The smallest image the window keeps.
const MIN_IMAGE: u32 = 64;

/// Where a window frame's time went after the scene was drawn (`--bench-frames`' breakdown).
#[derive(Clone, Copy, Debug, Default)]
pub struct PaintTimes {
    /// egui: the panel and bar laid out and tessellated (CPU).
    pub panel: Duration,
    /// The image and egui's shapes drawn into the window and presented, the GPU waited for.
    pub window: Duration,
}

pub struct Window {
    pub window: Arc<winit::window::Window>,
    surface: wgpu::Surface<'static>,
    config: wgpu::SurfaceConfiguration,
    blit: Blit,
    pub egui: egui::Context,
    egui_in: egui_winit::State,
    panel: PanelPainter,
}

/// The surface formats that store what they are given (the display image's values as they
/// are), best first; an sRGB one is taken only where there is no other.
fn pick_format(formats: &[wgpu::TextureFormat]) -> Option<wgpu::TextureFormat> {
    use wgpu::TextureFormat as F;
    [F::Bgra8Unorm, F::Rgba8Unorm]
        .into_iter()
        .find(|f| formats.contains(f))
        .or_else(|| formats.iter().copied().find(|f| !f.is_srgb()))
        .or_else(|| formats.first().copied())
}

impl Window {
    /// Opens a window for an image of `image` pixels, with a panel and bar beside it, and the
    /// GPU (the best adapter that can present to it, or `--adapter`'s).
    pub fn open(
        event_loop: &ActiveEventLoop,
        title: &str,
        image: [u32; 2],
        adapter: Option<&str>,
    ) -> Result<(Window, Gpu)> {
        let scale = event_loop
            .primary_monitor()
            .map(|m| m.scale_factor())
            .unwrap_or(1.0) as f32;
        let size = PhysicalSize::new(
            image[0] + (PANEL_PT * scale).round() as u32,
            image[1] + (BAR_PT * scale).round() as u32,
        );
        let attrs = winit::window::Window::default_attributes()
            .with_title(title)
            .with_inner_size(size);
        let window = Arc::new(event_loop.create_window(attrs).map_err(|e| {
            NoDisplay(format!(
                "cannot open a window: {}",
                super::os_error_text(&e.to_string())
            ))
        })?);
        let instance = gpu::instance_for_display(Box::new(event_loop.owned_display_handle()));
        let surface = instance
            .create_surface(window.clone())
            .map_err(|e| NoDisplay(format!("cannot draw into the window: {e}")))?;
        let (gpu, adapter) = Gpu::for_surface(&instance, &surface, adapter)?;
        let caps = surface.get_capabilities(&adapter);
        let Some(format) = pick_format(&caps.formats) else {
            bail!(NoDisplay(format!(
                "the GPU ({}) offers no format to present the window in",
                gpu.info.name
            )));
        };
        let inner = window.inner_size();
        let config = wgpu::SurfaceConfiguration {
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
            format,
            color_space: wgpu::SurfaceColorSpace::Auto,
            width: inner.width.max(1),
            height: inner.height.max(1),
            desired_maximum_frame_latency: 2,
            present_mode: wgpu::PresentMode::Fifo,
            alpha_mode: if caps.alpha_modes.contains(&wgpu::CompositeAlphaMode::Opaque) {
                wgpu::CompositeAlphaMode::Opaque
            } else {
                wgpu::CompositeAlphaMode::Auto
            },
            view_formats: vec![],
        };
        surface.configure(&gpu.device, &config);
        gpu.check(|| "setting up the window's surface".into())?;
        let blit = Blit::new(&gpu.device, format);
        let egui = egui::Context::default();
        let egui_in = egui_winit::State::new(
            egui.clone(),
            egui::ViewportId::ROOT,
            &window,
            Some(window.scale_factor() as f32),
            None,
            Some(gpu.max_size() as usize),
        );
        let panel = PanelPainter::new(&gpu.device, format);
        Ok((
            Window {
                window,
                surface,
                config,
                blit,
                egui,
                egui_in,
                panel,
            },
            gpu,
        ))
    }

    /// Hands a window event to egui; true if egui took it for itself.
    pub fn egui_event(&mut self, event: &winit::event::WindowEvent) -> bool {
        self.egui_in.on_window_event(&self.window, event).consumed
    }

    /// The window's new size: the surface follows.
    pub fn resized(&mut self, gpu: &Gpu, size: PhysicalSize<u32>) {
        if size.width == 0 || size.height == 0 {
            return;
        }
        self.config.width = size.width;
        self.config.height = size.height;
        self.surface.configure(&gpu.device, &self.config);
    }

    /// The largest image (two even numbers) the window holds beside its panel and bar.
    pub fn image_room(&self) -> [u32; 2] {
        let ppp = self.window.scale_factor() as f32;
        let fit = |total: u32, taken: f32| {
            let room = total.saturating_sub((taken * ppp).round() as u32);
            (room & !1).max(MIN_IMAGE)
        };
        [
            fit(self.config.width, PANEL_PT),
            fit(self.config.height, BAR_PT),
        ]
    }

    /// One frame: egui's pass (`ui` builds the panel and the bar), then the image and egui's
    /// shapes into the window. Returns whether egui asks to be drawn again soon. With `times`,
    /// the GPU is waited for after presenting and the two halves' times are added to it.
    pub fn paint(
        &mut self,
        gpu: &Gpu,
        image: &wgpu::TextureView,
        image_size: [u32; 2],
        ui: impl FnMut(&mut egui::Ui),
        times: Option<&mut PaintTimes>,
    ) -> Result<bool> {
        let t0 = Instant::now();
        let raw = self.egui_in.take_egui_input(&self.window);
        let out = self.egui.run_ui(raw, ui);
        self.egui_in
            .handle_platform_output(&self.window, out.platform_output);
        let again = out
            .viewport_output
            .get(&egui::ViewportId::ROOT)
            .is_some_and(|v| v.repaint_delay.is_zero());
        let prims = self.egui.tessellate(out.shapes, out.pixels_per_point);
        let t1 = Instant::now();
        for (id, deltas) in &out.textures_delta.set {
            for delta in deltas {
                self.panel.set_texture(&gpu.device, &gpu.queue, *id, delta);
            }
        }
        let size = [self.config.width, self.config.height];
        let frame = match self.surface.get_current_texture() {
            wgpu::CurrentSurfaceTexture::Success(f)
            | wgpu::CurrentSurfaceTexture::Suboptimal(f) => f,
            wgpu::CurrentSurfaceTexture::Outdated | wgpu::CurrentSurfaceTexture::Lost => {
                self.surface.configure(&gpu.device, &self.config);
                return Ok(true);
            }
            wgpu::CurrentSurfaceTexture::Timeout | wgpu::CurrentSurfaceTexture::Occluded => {
                return Ok(again)
            }
            wgpu::CurrentSurfaceTexture::Validation => {
                gpu.check(|| "getting the window's next image".into())?;
                return Err(anyhow!("the window's surface reported an error"));
            }
        };
        let target = frame.texture.create_view(&Default::default());
        let mut encoder = gpu
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("window encoder"),
            });
        self.panel
            .prepare(&gpu.device, &gpu.queue, &prims, size, out.pixels_per_point);
        {
            let pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("window pass"),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view: &target,
                    resolve_target: None,
                    depth_slice: None,
                    ops: wgpu::Operations {
                        load: wgpu::LoadOp::Clear(wgpu::Color::BLACK),
                        store: wgpu::StoreOp::Store,
                    },
                })],
                depth_stencil_attachment: None,
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            });
            let mut pass = pass.forget_lifetime();
            let fits = image_size[0] <= self.config.width && image_size[1] <= self.config.height;
            if fits {
                self.blit.draw(&gpu.device, &mut pass, image, image_size);
            }
            self.panel.draw(&mut pass, size);
        }
        gpu.queue.submit([encoder.finish()]);
        self.window.pre_present_notify();
        gpu.queue.present(frame);
        for id in &out.textures_delta.free {
            self.panel.free_texture(id);
        }
        if let Some(t) = times {
            gpu.device
                .poll(wgpu::PollType::wait_indefinitely())
                .map_err(|e| anyhow!("waiting for the GPU: {e}"))?;
            t.panel += t1 - t0;
            t.window += t1.elapsed();
        }
        gpu.check(|| "drawing the window".into())
            .context("the window")?;
        Ok(again)
    }
}
