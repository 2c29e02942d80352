//! Overlays drawn over the display image after tone mapping (shaders/overlay.wgsl): a colour
//! bar with its quantity and the range actually used, the time, a title, and a scale bar in
//! world units (2D). Each is optional.
//!
//! They are drawn on the CPU into one RGBA image (premultiplied alpha), text with DejaVu Sans
//! (the `dejavu` crate, through `ab_glyph`, the rasteriser plotters uses: no system fonts),
//! sized with the frame's height so that they read the same at 720p and 4K. Each item owns a
//! rectangle; when its text changes (the time every frame, a density range that follows the
//! frame) only that rectangle is drawn again and uploaded.

use ab_glyph::{Font, FontRef, PxScale, ScaleFont};

use super::{layout_entry, ColorMode};

/// Which overlays to draw.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overlays {
    pub colorbar: bool,
    pub time: bool,
    /// The title's text, if one is shown.
    pub title: Option<String>,
    pub scale: bool,
}

impl Overlays {
    pub fn any(&self) -> bool {
        self.colorbar || self.time || self.title.is_some() || self.scale
    }
}

/// An RGBA image, premultiplied alpha, linear 0..1 values written as sRGB-encoded bytes.
struct Canvas {
    w: usize,
    h: usize,
    px: Vec<[f32; 4]>,
}

impl Canvas {
    fn new(w: usize, h: usize) -> Canvas {
        Canvas {
            w,
            h,
            px: vec![[0.0; 4]; w * h],
        }
    }

    fn clear(&mut self, r: Rect) {
        for y in r.y0..r.y1 {
            for x in r.x0..r.x1 {
                self.px[y * self.w + x] = [0.0; 4];
            }
        }
    }

    /// Lays `rgb` (sRGB-encoded) at coverage `a` over pixel (x, y).
    fn blend(&mut self, x: i64, y: i64, rgb: [f32; 3], a: f32) {
        if x < 0 || y < 0 || x >= self.w as i64 || y >= self.h as i64 || a <= 0.0 {
            return;
        }
        let p = &mut self.px[y as usize * self.w + x as usize];
        let a = a.min(1.0);
        for c in 0..3 {
            p[c] = rgb[c] * a + p[c] * (1.0 - a);
        }
        p[3] = a + p[3] * (1.0 - a);
    }

    fn fill(&mut self, x0: i64, y0: i64, x1: i64, y1: i64, rgb: [f32; 3], a: f32) {
        for y in y0..y1 {
            for x in x0..x1 {
                self.blend(x, y, rgb, a);
            }
        }
    }

    /// The bytes of rows `y0..y1`, columns `x0..x1`, RGBA8.
    fn bytes(&self, r: Rect) -> Vec<u8> {
        let mut out = Vec::with_capacity(r.width() * r.height() * 4);
        for y in r.y0..r.y1 {
            for x in r.x0..r.x1 {
                let p = self.px[y * self.w + x];
                out.extend(p.map(|v| (v.clamp(0.0, 1.0) * 255.0).round() as u8));
            }
        }
        out
    }
}

/// A pixel rectangle, clipped to the frame: columns x0..x1, rows y0..y1.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Rect {
    x0: usize,
    y0: usize,
    x1: usize,
    y1: usize,
}

impl Rect {
    fn new(x0: f32, y0: f32, x1: f32, y1: f32, w: usize, h: usize) -> Rect {
        let cx = |v: f32| (v.max(0.0) as usize).min(w);
        let cy = |v: f32| (v.max(0.0) as usize).min(h);
        Rect {
            x0: cx(x0.floor()),
            y0: cy(y0.floor()),
            x1: cx(x1.ceil()),
            y1: cy(y1.ceil()),
        }
    }
    fn width(&self) -> usize {
        self.x1.saturating_sub(self.x0)
    }
    fn height(&self) -> usize {
        self.y1.saturating_sub(self.y0)
    }
}

const WHITE: [f32; 3] = [1.0, 1.0, 1.0];
const SHADOW: [f32; 3] = [0.0, 0.0, 0.0];

/// Text, in the embedded font.
struct Text {
    font: FontRef<'static>,
}

#[derive(Clone, Copy)]
enum Align {
    Left,
    Centre,
    Right,
}

impl Text {
    fn new() -> Text {
        Text {
            font: FontRef::try_from_slice(dejavu::sans::regular()).expect("DejaVu Sans parses"),
        }
    }

    fn width(&self, s: &str, px: f32) -> f32 {
        let f = self.font.as_scaled(PxScale::from(px));
        let mut w = 0.0;
        let mut prev = None;
        for c in s.chars() {
            let id = f.glyph_id(c);
            if let Some(p) = prev {
                w += f.kern(p, id);
            }
            w += f.h_advance(id);
            prev = Some(id);
        }
        w
    }

    /// Draws `s` with its baseline at `y`, aligned on `x`, white over a soft shadow.
    fn draw(&self, c: &mut Canvas, s: &str, x: f32, y: f32, px: f32, align: Align) {
        let x = match align {
            Align::Left => x,
            Align::Centre => x - self.width(s, px) / 2.0,
            Align::Right => x - self.width(s, px),
        };
        let off = (px / 14.0).max(1.0);
        self.glyphs(c, s, x + off, y + off, px, SHADOW, 0.7);
        self.glyphs(c, s, x, y, px, WHITE, 1.0);
    }

    #[allow(clippy::too_many_arguments)]
    fn glyphs(&self, c: &mut Canvas, s: &str, x: f32, y: f32, px: f32, rgb: [f32; 3], a: f32) {
        let scale = PxScale::from(px);
        let f = self.font.as_scaled(scale);
        let mut pen = x;
        let mut prev = None;
        for ch in s.chars() {
            let id = f.glyph_id(ch);
            if let Some(p) = prev {
                pen += f.kern(p, id);
            }
            let g = id.with_scale_and_position(scale, ab_glyph::point(pen, y));
            pen += f.h_advance(id);
            prev = Some(id);
            if let Some(o) = self.font.outline_glyph(g) {
                let b = o.px_bounds();
                o.draw(|gx, gy, cov| {
                    c.blend(
                        b.min.x as i64 + gx as i64,
                        b.min.y as i64 + gy as i64,
                        rgb,
                        cov * a,
                    );
                });
            }
        }
    }
}

/// A number in three significant figures, without trailing zeros.
pub fn short_number(v: f32) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    let s = format!("{v:.digits$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" {
        "0".into()
    } else {
        s
    }
}

/// The colour bar's labels: its two ends and the quantity, for the range actually used.
pub fn colorbar_labels(mode: ColorMode, range: [f32; 2]) -> Option<(String, String, String)> {
    Some(match mode {
        ColorMode::Speed => (
            short_number(range[0]),
            short_number(range[1]),
            "speed (world units/s)".into(),
        ),
        ColorMode::Heading => ("-180°".into(), "180°".into(), "heading".into()),
        ColorMode::RelativeHeading => (
            format!("{}°", short_number(range[0])),
            format!("{}°", short_number(range[1])),
            "turn from the flock's heading".into(),
        ),
        ColorMode::Density => (
            short_number(range[0]),
            short_number(range[1]),
            "density (agents per cell)".into(),
        ),
        ColorMode::Fixed | ColorMode::Species => return None,
    })
}

/// A round length (1, 2 or 5 × 10^k world units) near `target`.
pub fn nice_length(target: f32) -> f32 {
    if !(target.is_finite() && target > 0.0) {
        return 1.0;
    }
    let p = 10f32.powf(target.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .min_by(|a, b| (a - target).abs().total_cmp(&(b - target).abs()))
        .unwrap()
}

/// The time text: `t = 12.35 s · step 247`.
pub fn time_label(seconds: f64, step: u64) -> String {
    format!("t = {seconds:.2} s · step {step}")
}

/// What one frame shows that can change.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FrameInfo {
    pub seconds: f64,
    pub step: u64,
    pub range: [f32; 2],
    /// Pixels per world unit (2D); `None` in a perspective view.
    pub px_per_unit: Option<f32>,
}

/// An overlay's labels, time and scale, as last drawn.
type Shown = (
    Option<(String, String, String)>,
    Option<String>,
    Option<String>,
);

pub struct OverlayPass {
    items: Overlays,
    mode: ColorMode,
    lut: Vec<u8>,
    text: Text,
    canvas: Canvas,
    texture: wgpu::Texture,
    pipeline: wgpu::RenderPipeline,
    bind_group: wgpu::BindGroup,
    /// What is drawn now: (labels, time, scale) to compare with the next frame's.
    shown: Shown,
    drawn_once: bool,
}

impl OverlayPass {
    pub fn new(
        device: &wgpu::Device,
        items: Overlays,
        mode: ColorMode,
        lut: Vec<u8>,
        width: u32,
        height: u32,
        format: wgpu::TextureFormat,
    ) -> OverlayPass {
        let texture = super::sampled_texture(
            device,
            "overlay",
            width,
            height,
            wgpu::TextureFormat::Rgba8Unorm,
        );
        let view = texture.create_view(&Default::default());
        let module = device.create_shader_module(wgpu::include_wgsl!("../../shaders/overlay.wgsl"));
        let bgl = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("overlay bind group layout"),
            entries: &[layout_entry::texture_unfilterable(
                0,
                wgpu::ShaderStages::FRAGMENT,
            )],
        });
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("overlay bind group"),
            layout: &bgl,
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: wgpu::BindingResource::TextureView(&view),
            }],
        });
        let over = wgpu::BlendComponent {
            src_factor: wgpu::BlendFactor::One,
            dst_factor: wgpu::BlendFactor::OneMinusSrcAlpha,
            operation: wgpu::BlendOperation::Add,
        };
        let pipeline = super::fullscreen_pipeline(
            device,
            "overlay",
            &module,
            "fs_overlay",
            Some(&bgl),
            format,
            Some(wgpu::BlendState {
                color: over,
                alpha: over,
            }),
        );
        OverlayPass {
            items,
            mode,
            lut,
            text: Text::new(),
            canvas: Canvas::new(width as usize, height as usize),
            texture,
            pipeline,
            bind_group,
            shown: (None, None, None),
            drawn_once: false,
        }
    }

    /// Sizes, from the frame's height (1080p: text 30 px, margins 32 px).
    fn metrics(&self) -> (f32, f32) {
        let h = self.canvas.h as f32;
        ((h / 36.0).max(9.0), (h * 0.03).round().max(4.0))
    }

    fn title_rect(&self) -> Rect {
        let (px, m) = self.metrics();
        let (w, h) = (self.canvas.w, self.canvas.h);
        Rect::new(0.0, 0.0, w as f32 * 0.6, m + 1.6 * px * 1.2, w, h)
    }

    fn time_rect(&self) -> Rect {
        let (px, m) = self.metrics();
        let (w, h) = (self.canvas.w, self.canvas.h);
        Rect::new(w as f32 * 0.6, 0.0, w as f32, m + 1.6 * px, w, h)
    }

    fn colorbar_rect(&self) -> Rect {
        let (px, m) = self.metrics();
        let (w, h) = (self.canvas.w, self.canvas.h);
        let top = h as f32 - m - 2.0 * px - (h as f32 * 0.014).max(4.0) - px;
        Rect::new(0.0, top, w as f32 * 0.5, h as f32, w, h)
    }

    fn scale_rect(&self) -> Rect {
        let (px, m) = self.metrics();
        let (w, h) = (self.canvas.w, self.canvas.h);
        let top = h as f32 - m - 2.0 * px - px;
        Rect::new(w as f32 * 0.5, top, w as f32, h as f32, w, h)
    }

    fn draw_title(&mut self, title: &str) {
        let (px, m) = self.metrics();
        let r = self.title_rect();
        self.canvas.clear(r);
        let px = px * 1.2;
        self.text
            .draw(&mut self.canvas, title, m, m + px, px, Align::Left);
    }

    fn draw_time(&mut self, label: &str) {
        let (px, m) = self.metrics();
        let r = self.time_rect();
        self.canvas.clear(r);
        let x = self.canvas.w as f32 - m;
        self.text
            .draw(&mut self.canvas, label, x, m + px, px, Align::Right);
    }

    fn draw_colorbar(&mut self, labels: &(String, String, String)) {
        let (px, m) = self.metrics();
        let r = self.colorbar_rect();
        self.canvas.clear(r);
        let h = self.canvas.h as f32;
        let (x0, x1) = (m, m + self.canvas.w as f32 * 0.22);
        let bar_h = (h * 0.014).max(4.0);
        let y1 = h - m - 1.4 * px;
        let y0 = y1 - bar_h;
        // A thin dark frame, then the map (the LUT's sRGB colours, end to end).
        let frame = (h / 540.0).max(1.0);
        self.canvas.fill(
            (x0 - frame) as i64,
            (y0 - frame) as i64,
            (x1 + frame) as i64,
            (y1 + frame) as i64,
            SHADOW,
            0.6,
        );
        let n = super::colormap::LUT_SIZE;
        for x in x0 as i64..x1 as i64 {
            let t = ((x as f32 + 0.5 - x0) / (x1 - x0)).clamp(0.0, 1.0);
            let i = ((t * (n - 1) as f32).round() as usize).min(n - 1);
            let rgb = [0, 1, 2].map(|c| self.lut[i * 4 + c] as f32 / 255.0);
            self.canvas.fill(x, y0 as i64, x + 1, y1 as i64, rgb, 1.0);
        }
        let (lo, hi, what) = labels;
        let base = y1 + 1.15 * px;
        let small = px * 0.85;
        self.text
            .draw(&mut self.canvas, lo, x0, base, small, Align::Left);
        self.text
            .draw(&mut self.canvas, hi, x1, base, small, Align::Right);
        self.text.draw(
            &mut self.canvas,
            what,
            x0,
            y0 - 0.45 * px,
            small,
            Align::Left,
        );
    }

    fn draw_scale(&mut self, px_per_unit: f32) -> String {
        let (px, m) = self.metrics();
        let r = self.scale_rect();
        self.canvas.clear(r);
        let (w, h) = (self.canvas.w as f32, self.canvas.h as f32);
        let units = nice_length(w * 0.12 / px_per_unit);
        let len = units * px_per_unit;
        let x1 = w - m;
        let x0 = x1 - len;
        let y = h - m - 0.2 * px;
        let t = (h / 360.0).max(1.0).round();
        let tick = (px * 0.4).round();
        // Shadow, then the bar and its end ticks.
        for (dx, rgb, a) in [(t, SHADOW, 0.7), (0.0, WHITE, 1.0)] {
            let f = |x0: f32, y0: f32, x1: f32, y1: f32, c: &mut Canvas| {
                c.fill(
                    (x0 + dx) as i64,
                    (y0 + dx) as i64,
                    (x1 + dx) as i64,
                    (y1 + dx) as i64,
                    rgb,
                    a,
                )
            };
            f(x0, y - t, x1, y, &mut self.canvas);
            f(x0, y - tick, x0 + t, y, &mut self.canvas);
            f(x1 - t, y - tick, x1, y, &mut self.canvas);
        }
        let label = format!("{} world units", short_number(units));
        self.text.draw(
            &mut self.canvas,
            &label,
            (x0 + x1) / 2.0,
            y - tick - 0.35 * px,
            px * 0.85,
            Align::Centre,
        );
        label
    }

    /// Brings the overlay up to date for a frame, uploading what changed.
    pub fn update(&mut self, queue: &wgpu::Queue, f: &FrameInfo) {
        let mut dirty: Vec<Rect> = Vec::new();
        if !self.drawn_once {
            if let Some(t) = self.items.title.clone() {
                self.draw_title(&t);
                dirty.push(self.title_rect());
            }
            self.drawn_once = true;
        }
        if self.items.colorbar {
            let labels = colorbar_labels(self.mode, f.range);
            if labels != self.shown.0 {
                if let Some(l) = &labels {
                    self.draw_colorbar(l);
                    dirty.push(self.colorbar_rect());
                }
                self.shown.0 = labels;
            }
        }
        if self.items.time {
            let t = time_label(f.seconds, f.step);
            if self.shown.1.as_deref() != Some(t.as_str()) {
                self.draw_time(&t);
                dirty.push(self.time_rect());
                self.shown.1 = Some(t);
            }
        }
        if self.items.scale {
            if let Some(ppu) = f.px_per_unit.filter(|p| p.is_finite() && *p > 0.0) {
                let key = format!("{ppu}");
                if self.shown.2.as_deref() != Some(key.as_str()) {
                    self.draw_scale(ppu);
                    dirty.push(self.scale_rect());
                    self.shown.2 = Some(key);
                }
            }
        }
        for r in dirty {
            if r.width() == 0 || r.height() == 0 {
                continue;
            }
            queue.write_texture(
                wgpu::TexelCopyTextureInfo {
                    texture: &self.texture,
                    mip_level: 0,
                    origin: wgpu::Origin3d {
                        x: r.x0 as u32,
                        y: r.y0 as u32,
                        z: 0,
                    },
                    aspect: wgpu::TextureAspect::All,
                },
                &self.canvas.bytes(r),
                wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(r.width() as u32 * 4),
                    rows_per_image: None,
                },
                wgpu::Extent3d {
                    width: r.width() as u32,
                    height: r.height() as u32,
                    depth_or_array_layers: 1,
                },
            );
        }
    }

    /// Lays the overlay over `target`.
    pub fn run(&self, encoder: &mut wgpu::CommandEncoder, target: &wgpu::TextureView) {
        let mut pass = super::begin_pass(encoder, "overlay pass", target, None);
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.bind_group, &[]);
        pass.draw(0..3, 0..1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_lengths() {
        assert_eq!(short_number(12.345), "12.3");
        assert_eq!(short_number(0.5), "0.5");
        assert_eq!(short_number(150.0), "150");
        assert_eq!(short_number(0.001234), "0.00123");
        assert_eq!(nice_length(170.0), 200.0);
        assert_eq!(nice_length(0.3), 0.2);
        assert_eq!(nice_length(7.6), 10.0);
        assert_eq!(time_label(12.345, 247), "t = 12.35 s · step 247");
    }

    #[test]
    fn colour_bar_labels_are_the_range_used() {
        let (lo, hi, what) = colorbar_labels(ColorMode::Speed, [12.5, 80.0]).unwrap();
        assert_eq!((lo.as_str(), hi.as_str()), ("12.5", "80"));
        assert!(what.contains("speed"));
        assert!(colorbar_labels(ColorMode::Fixed, [0.0, 1.0]).is_none());
        let (lo, hi, _) = colorbar_labels(ColorMode::Heading, [0.0, 1.0]).unwrap();
        assert_eq!((lo.as_str(), hi.as_str()), ("-180°", "180°"));
    }

    #[test]
    fn text_covers_pixels_and_stays_in_its_rectangle() {
        let mut c = Canvas::new(200, 60);
        let t = Text::new();
        t.draw(&mut c, "t = 1.00 s", 10.0, 40.0, 24.0, Align::Left);
        let lit = c.px.iter().filter(|p| p[3] > 0.5).count();
        assert!(lit > 100, "{lit} pixels covered");
        let r = Rect::new(0.0, 0.0, 200.0, 60.0, 200, 60);
        c.clear(r);
        assert!(c.px.iter().all(|p| p[3] == 0.0));
    }
}
