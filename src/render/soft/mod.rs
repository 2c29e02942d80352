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
//! What it draws: 2D views (and the 3D top camera) of round sprites of one size, not
//! motion-blurred, coloured by speed, heading, relative heading, species or a fixed colour;
//! glow or ink, bloom, grading, vignette, a plate; into video planes, 8- and 16-bit images and
//! linear light. Every other look (darts, streaks, species sizes, the 3D camera, density
//! colouring, a transparent background, frames larger than 8K) goes through the GPU passes;
//! overlays and obstacles are drawn by them over the CPU's display image.

mod agents;
mod bloom;
mod par;
mod shade;

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
pub(crate) use shade::Deep;

/// Rows faded and stamped at a time by one thread (the strip stays in the cache).
const STRIP_ROWS: usize = 32;

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

/// The CPU's frames: the colour map, the sprite's kernel, the HDR light of this frame and the
/// last, the bloom chain.
pub(crate) struct Soft {
    lut: Vec<[f32; 3]>,
    kernel: Option<Kernel>,
    hdr: [Image; 2],
    cur: usize,
    bloom: Option<Bloom>,
    /// How many frames the renderer had drawn when this drew its last (its trails are those
    /// of the frame before the next only if that was drawn here).
    last: Option<u64>,
    /// The splat's accumulation image (crowds drawn through the filters).
    accum: Vec<[f32; 4]>,
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
            hdr: [Image::default(), Image::default()],
            cur: 0,
            bloom: None,
            last: None,
            accum: Vec::new(),
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
        self.cur = 1 - self.cur;
        let kernel = self.kernel(job.core_px, job.halo_level).clone();
        let dots = agents::dots(
            &p,
            &self.lut,
            job.values,
            job.frame,
            job.dim,
            kernel.reach(),
        );
        let [a, b] = &mut self.hdr;
        let (hdr, last) = if self.cur == 0 { (a, &*b) } else { (b, &*a) };
        if hdr.w != w || hdr.h != h {
            *hdr = Image::new(w, h);
        }
        let fade = p.fade;
        let kept = carry && last.w == w && last.h == h;
        // Rows `rows` of this frame's light, before its agents: the last frame's times the
        // fade, or black.
        let start = |rows: std::ops::Range<usize>, band: &mut [[f32; 4]]| {
            if kept {
                let from = &last.px[rows.start * w..rows.end * w];
                for (d, s) in band.iter_mut().zip(from) {
                    *d = [s[0] * fade, s[1] * fade, s[2] * fade, s[3] * fade];
                }
            } else {
                band.fill([0.0; 4]);
            }
        };
        if agents::filter_pays(dots.len(), w, h, &kernel) {
            par::bands(&mut hdr.px, w, |rows, band| start(rows, band));
            agents::filtered(
                &mut hdr.px,
                w,
                h,
                &dots,
                &kernel,
                p.scissor,
                &mut self.accum,
            );
        } else {
            // A strip of rows at a time: faded, then stamped while it is in the cache.
            let guard = kernel.reach() as usize;
            let (sorted, starts) = agents::by_row(&dots, h, guard);
            par::bands(&mut hdr.px, w, |rows, band| {
                for (k, strip) in band.chunks_mut(STRIP_ROWS * w).enumerate() {
                    let first = rows.start + k * STRIP_ROWS;
                    let strip_rows = first..first + strip.len() / w;
                    start(strip_rows.clone(), strip);
                    let mine = agents::reaching(&sorted, &starts, guard, &strip_rows, guard + 1);
                    agents::stamp(strip, strip_rows, w, mine, &kernel, p.scissor);
                }
            });
        }
        self.last = Some(drawn);
        lap(0);
        if job.warming {
            return;
        }
        let glow = job.tonemap.bloom > 0.0;
        if glow {
            let key = (w as u32, h as u32, job.bloom_radius.to_bits());
            if !matches!(&self.bloom, Some(b) if b.key == key) {
                self.bloom = Some(Bloom {
                    key,
                    chain: bloom::Bloom::new(w as u32, h as u32, job.bloom_radius),
                });
            }
        }
        let hdr = &self.hdr[self.cur];
        let glow_image = match (&mut self.bloom, glow) {
            (Some(b), true) => Some(b.chain.run(hdr)),
            _ => None,
        };
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
