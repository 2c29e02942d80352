//! Frames drawn on the CPU: where the adapter is a software driver (Mesa's lavapipe on a
//! machine without a GPU, as CI runners are), the renderer draws the looks it can here instead
//! of through the GPU passes. Lavapipe runs WGSL as SIMD code, but measured on 2 cores its
//! compute passes cost 5 to 10 ms a 1080p frame each for the simplest work (one read, one
//! write a pixel; the splat path's row filter 90 ms), and its atomics ~5 ns each: a frame costs
//! more than x264 takes to encode it. The same arithmetic as plain loops over the cores costs
//! a fraction of that.
//!
//! Each frame is the GPU passes' frame, computed the same way: the agents' colours, crowd
//! shares and sprites as the splat path gives them (`agents`), the trails carried in the HDR
//! light, the bloom chain (`bloom`), the tone map and the Y'CbCr codes with their dither
//! (`shade`). The images agree with the GPU's within a code value (a test compares them).
//!
//! A frame reads and writes its light once before the tone map: each thread draws a band of
//! rows a strip at a time ([`Strips`]), the last frame's light (half floats, as the GPU's target
//! holds it: `light`) faded into an `f32` strip, the sprites added, the strip stored back as
//! halves and, while it is in the cache, its 2×2 blocks bright-passed for bloom's first
//! downsample. Then the bloom chain runs on its small mips, and the tone map reads the light a
//! row at a time, straight into the video's planes.
//!
//! What it draws: 2D views (and the 3D top camera) of round sprites of one size, not
//! motion-blurred, coloured by speed, heading, relative heading, species or a fixed colour;
//! glow or ink, bloom, grading, vignette, a plate; into video planes, 8- and 16-bit images and
//! linear light. Every other look (darts, streaks, species sizes, the 3D camera, density
//! colouring, a transparent background, frames larger than 8K) goes through the GPU passes;
//! overlays and obstacles are drawn by them over the CPU's display image.

mod agents;
mod bloom;
mod codes;
mod colour;
mod light;
mod par;
mod shade;
mod sprites;
mod srgb;

/// Whether this CPU runs AVX2 (the hot loops are compiled for it too, and take it where it
/// is: the same arithmetic, eight lanes at a time).
fn avx2() -> bool {
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    #[cfg(target_arch = "x86_64")]
    let has = *HAS.get_or_init(|| std::arch::is_x86_feature_detected!("avx2"));
    #[cfg(not(target_arch = "x86_64"))]
    let has = *HAS.get_or_init(|| false);
    has
}

use crate::bfs::Frame;
use crate::render::splat::{Kernel, SplatParams};
use crate::render::tonemap::TonemapParams;
use crate::render::yuv::YuvParams;
use bloom::Image;
use light::Light;
pub(crate) use shade::Deep;

/// Rows drawn at a time by one thread: faded, the sprites added, stored as halves and
/// downsampled for bloom while they are in the cache (even: bloom's blocks are two rows high).
const STRIP_ROWS: usize = 16;

/// What a frame drawn here comes out as.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Out {
    Planes(YuvParams),
    Rgba8,
    /// From a half-float display image.
    Deep(Deep),
}

/// One frame's inputs.
pub(crate) struct Job<'a> {
    pub frame: &'a Frame,
    pub dim: usize,
    /// The agents' sprite parameters as the splat path takes them (the trails' fade and carry
    /// included).
    pub sprites: SplatParams,
    pub core_px: f32,
    pub halo_level: f32,
    /// The species values of the agents shown (species colouring).
    pub values: Option<&'a [f32]>,
    /// Only the trails: nothing is shaded or delivered.
    pub warming: bool,
    /// The tone map's parameters (with bloom's strength) and the plate's sRGB bytes (RGBA8,
    /// the frame's size).
    pub tonemap: TonemapParams,
    pub plate: Option<&'a std::sync::Arc<Vec<u8>>>,
    /// The bloom chain's radius (bloom off: 0 strength in `tonemap`).
    pub bloom_radius: f32,
    pub out: Out,
    /// The frame's index (the dithers' seeds).
    pub index: u64,
}

/// The CPU's frames: the colour map, the sprite's kernel, the HDR light (this frame's, and
/// the last one's until this one is drawn over it), the bloom chain.
pub(crate) struct Soft {
    lut: Vec<[f32; 3]>,
    kernel: Option<Kernel>,
    light: Light,
    bloom: Option<Bloom>,
    /// How many frames the renderer had drawn when this drew its last (its trails are those
    /// of the frame before the next only if that was drawn here).
    last: Option<u64>,
    /// The splat's accumulation image (crowds drawn through the filters).
    accum: Vec<[f32; 4]>,
    /// The agents' dots, kept from frame to frame.
    bufs: agents::Buffers,
    /// The light as `f32`, for a bloom chain that reads the frame itself (frames that are not
    /// four times its first mip each way).
    wide: Image,
    /// The plate as linear light, and the bytes it was made from.
    plate: Option<Plate>,
}

/// A plate's sRGB bytes and the linear light made from them.
type Plate = (std::sync::Arc<Vec<u8>>, Vec<[f32; 3]>);

struct Bloom {
    key: (u32, u32, u32),
    chain: bloom::Bloom,
}

impl Soft {
    /// `lut`: the colour map's bytes (sRGB RGBA8, 256 texels).
    pub fn new(lut: &[u8]) -> Soft {
        Soft {
            lut: agents::linear_lut(lut),
            kernel: None,
            light: Light::default(),
            bloom: None,
            last: None,
            accum: Vec::new(),
            bufs: agents::Buffers::default(),
            wide: Image::default(),
            plate: None,
        }
    }

    /// Whether the last frame the renderer drew (its `drawn`-th) was drawn here: only then
    /// do this frame's trails start from it.
    pub fn carries(&self, drawn: u64) -> bool {
        drawn > 0 && self.last == Some(drawn - 1)
    }

    /// The kernel for `core_px`, kept while it stays the same.
    fn kernel(&mut self, core_px: f32, halo: f32) -> &Kernel {
        if !matches!(&self.kernel, Some(k) if k.core_px == core_px && k.halo_level == halo) {
            self.kernel = Some(Kernel::new(core_px, halo));
        }
        self.kernel.as_ref().expect("just set")
    }

    /// Draws `job` as the `drawn`-th frame; the finished frame's bytes into `out` (nothing for
    /// a warm-up frame). `lap(k)`: called after each stage, for the passes table (0 agents,
    /// 1 bloom, 2 tone map).
    pub fn draw(&mut self, job: &Job, drawn: u64, out: &mut Vec<u8>, lap: &mut dyn FnMut(usize)) {
        let p = job.sprites;
        let (w, h) = (p.viewport[0] as usize, p.viewport[1] as usize);
        let carry = p.carry == 1 && self.carries(drawn);
        let kernel = self.kernel(job.core_px, job.halo_level).clone();
        agents::dots(
            &p,
            &self.lut,
            job.values,
            job.frame,
            job.dim,
            kernel.reach(),
            &mut self.bufs,
        );
        let dots = &self.bufs.dots;
        let kept = carry && self.light.w == w && self.light.h == h;
        if self.light.w != w || self.light.h != h {
            self.light = Light::new(w, h);
        }
        let glow = job.tonemap.bloom > 0.0 && !job.warming;
        if glow {
            let key = (w as u32, h as u32, job.bloom_radius.to_bits());
            if !matches!(&self.bloom, Some(b) if b.key == key) {
                self.bloom = Some(Bloom {
                    key,
                    chain: bloom::Bloom::new(w as u32, h as u32, job.bloom_radius),
                });
            }
        }
        let blocks = match (&mut self.bloom, glow) {
            (Some(b), true) if b.chain.takes_blocks(w, h) => Some(b.chain.blocks(w, h)),
            _ => None,
        };
        let sorted = &mut self.bufs.sorted;
        let sprites = if sprites::filter_pays(dots.len(), w, h, &kernel) {
            sprites::splat(w, h, dots, &kernel, &mut self.accum, sorted);
            Sprites::Filtered(&self.accum)
        } else {
            let guard = kernel.reach() as usize;
            let starts = agents::by_row(dots, h, guard, sorted);
            Sprites::Stamped(sorted, starts)
        };
        let strips = Strips {
            w,
            h,
            fade: if kept { Some(p.fade) } else { None },
            sprites,
            kernel: &kernel,
            scissor: p.scissor,
        };
        strips.draw(&mut self.light, blocks);
        self.last = Some(drawn);
        lap(0);
        if job.warming {
            return;
        }
        let glow_image = match (&mut self.bloom, glow) {
            (Some(b), true) => {
                let hdr = (!b.chain.takes_blocks(w, h)).then(|| {
                    widen(&self.light, &mut self.wide);
                    &self.wide
                });
                Some(b.chain.run(hdr))
            }
            _ => None,
        };
        let hdr = &self.light;
        lap(1);
        if let Some(bytes) = job.plate {
            if !matches!(&self.plate, Some((b, _)) if std::sync::Arc::ptr_eq(b, bytes)) {
                let lin: Vec<[f32; 3]> = bytes
                    .chunks_exact(4)
                    .map(|t| [0, 1, 2].map(|k| crate::render::srgb_to_linear(t[k] as f32 / 255.0)))
                    .collect();
                self.plate = Some((bytes.clone(), lin));
            }
        }
        let plate = job
            .plate
            .and(self.plate.as_ref())
            .map(|(_, lin)| lin.as_slice());
        let shader = shade::Shader {
            p: &job.tonemap,
            v: job.tonemap.variant(),
            width: w,
            height: h,
            inputs: shade::Inputs {
                hdr,
                bloom: glow_image,
                plate,
            },
        };
        match job.out {
            Out::Planes(yuv) => shader.planes(&yuv, YuvParams::seeds(job.index as u32), out),
            Out::Rgba8 => shader.rgba8(out),
            Out::Deep(to) => shader.deep(to, out),
        }
        lap(2);
    }
}

/// The light as `f32` into `wide`.
fn widen(light: &Light, wide: &mut Image) {
    if wide.w != light.w || wide.h != light.h {
        *wide = Image::new(light.w, light.h);
    }
    par::bands(&mut wide.px, light.w, |rows, band| {
        let at = rows.start * light.w * 4;
        light::load(
            &light.px[at..at + band.len() * 4],
            1.0,
            bytemuck::cast_slice_mut(band),
        );
    });
}

/// How a frame's sprites are added to its strips.
enum Sprites<'a> {
    /// Each stamped where it lies: the dots ordered by row, and where each row's start.
    Stamped(&'a [agents::Dot], Vec<usize>),
    /// Splatted into this accumulation image, filtered strip by strip.
    Filtered(&'a [[f32; 4]]),
}

/// The drawing of one frame's light: each band of rows on its own thread, a strip of
/// [`STRIP_ROWS`] at a time.
struct Strips<'a> {
    w: usize,
    h: usize,
    /// The last frame's light times this is where the frame starts (black if none).
    fade: Option<f32>,
    sprites: Sprites<'a>,
    kernel: &'a Kernel,
    scissor: [f32; 4],
}

impl Strips<'_> {
    /// Draws the frame over `light` (the last frame's, or anything if it does not carry),
    /// and fills bloom's `blocks` (sized by [`bloom::blocks_size`]) where given.
    fn draw(&self, light: &mut Light, blocks: Option<&mut [[f32; 4]]>) {
        let (w, h) = (self.w, self.h);
        let bw = bloom::blocks_size(w, h).0;
        // Bands of whole pairs of rows (blocks are two rows high), none empty: the last holds
        // the bottom edge's blocks.
        let ranges = par::pairs(h, 8);
        let last = ranges.len() - 1;
        std::thread::scope(|s| {
            let mut halves = &mut light.px[..];
            let mut blocks = blocks;
            let mut first = None;
            for (i, rows) in ranges.into_iter().enumerate() {
                let (band, rest) = halves.split_at_mut((rows.end - rows.start) * w * 4);
                halves = rest;
                // Block rows b = pair + 1 for the band's pairs; row 0 with the first band,
                // the last (the bottom edge's) with the last.
                let b0 = if i == 0 { 0 } else { rows.start / 2 + 1 };
                let b1 = if i == last {
                    h / 2 + 2
                } else {
                    rows.end / 2 + 1
                };
                let mine = blocks.take().map(|b| {
                    let (mine, rest) = b.split_at_mut((b1 - b0) * bw);
                    blocks = Some(rest);
                    mine
                });
                if first.is_none() {
                    first = Some((rows, band, mine, b0));
                } else {
                    s.spawn(move || self.band(rows, band, mine, b0));
                }
            }
            if let Some((rows, band, mine, b0)) = first {
                self.band(rows, band, mine, b0);
            }
        });
    }

    /// Rows `rows` (starting at an even row), held by `halves`; `blocks`: bloom's block rows
    /// from `b0` on, those of these rows.
    fn band(
        &self,
        rows: std::ops::Range<usize>,
        halves: &mut [u16],
        mut blocks: Option<&mut [[f32; 4]]>,
        b0: usize,
    ) {
        let w = self.w;
        let bw = bloom::blocks_size(w, self.h).0;
        let mut strip = vec![[0.0f32; 4]; STRIP_ROWS * w];
        let mut filter = match &self.sprites {
            Sprites::Filtered(accum) => {
                Some(sprites::Filter::new(accum, w, self.kernel, self.scissor))
            }
            Sprites::Stamped(..) => None,
        };
        let mut y0 = rows.start;
        while y0 < rows.end {
            let y1 = (y0 + STRIP_ROWS).min(rows.end);
            let strip = &mut strip[..(y1 - y0) * w];
            let held = &mut halves[(y0 - rows.start) * w * 4..(y1 - rows.start) * w * 4];
            match self.fade {
                Some(fade) => light::load(held, fade, bytemuck::cast_slice_mut(strip)),
                None => strip.fill([0.0; 4]),
            }
            match (&self.sprites, filter.as_mut()) {
                (_, Some(f)) => f.strip(y0..y1, strip),
                (Sprites::Stamped(sorted, starts), None) => {
                    let guard = self.kernel.reach() as usize;
                    let mine = agents::reaching(sorted, starts, guard, &(y0..y1), guard + 1);
                    sprites::stamp(strip, y0..y1, w, mine, self.kernel, self.scissor);
                }
                (Sprites::Filtered(_), None) => unreachable!("a filter is made for the splat"),
            }
            light::store(bytemuck::cast_slice(strip), held);
            if let Some(blocks) = blocks.as_deref_mut() {
                let row = |y: usize| &strip[(y - y0) * w..(y - y0 + 1) * w];
                let mut put = |b: usize, top: usize, bottom: usize| {
                    let out = &mut blocks[(b - b0) * bw..(b - b0 + 1) * bw];
                    bloom::block_row(row(top), row(bottom), out);
                };
                if y0 == 0 {
                    put(0, 0, 0);
                }
                for pair in y0 / 2..y1 / 2 {
                    put(pair + 1, 2 * pair, 2 * pair + 1);
                }
                if y1 == self.h {
                    put(self.h / 2 + 1, self.h - 1, self.h - 1);
                }
            }
            y0 = y1;
        }
    }
}
