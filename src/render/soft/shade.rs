//! HDR light → display colours on the CPU, as shaders/tonemap.wgsl shades them (bloom added,
//! exposure, the hue-keeping filmic curve or ink, the background, vignette, grading, sRGB
//! encoding, the column dither), and → Y'CbCr codes as shaders/ycbcr.wgsl writes them.
//!
//! A row at a time, each step a loop over the row's pixels that the compiler runs as SIMD
//! code (AVX2 where the CPU has it: `super::avx2`).

use super::bloom::Image;
use super::codes::{Channels, Codes};
use super::light::{self, Light};
use super::par;
use super::srgb;
use crate::render::tonemap::{TonemapParams, TonemapVariant};
use crate::render::yuv::{pcg, YuvParams};

/// What the shading reads besides the parameters: the HDR light, the glow, the plate.
pub(super) struct Inputs<'a> {
    pub hdr: &'a Light,
    pub bloom: Option<&'a Image>,
    /// The plate as linear light (the frame's size), where it replaces the background.
    pub plate: Option<&'a [[f32; 3]]>,
}

#[inline(always)]
fn aces(x: f32) -> f32 {
    ((x * (2.51 * x + 0.03)) / (x * (2.43 * x + 0.59) + 0.14)).clamp(0.0, 1.0)
}

#[inline(always)]
fn smoothstep(a: f32, b: f32, x: f32) -> f32 {
    let t = ((x - a) / (b - a)).clamp(0.0, 1.0);
    t * t * (3.0 - 2.0 * t)
}

/// A row's pixels, one array per channel (and, as the glow's scratch, the light's row as `f32`
/// and the bloom image's rows about it).
#[derive(Default)]
struct Row {
    r: Vec<f32>,
    g: Vec<f32>,
    b: Vec<f32>,
    light: Vec<[f32; 4]>,
    /// Two rows of the bloom image upsampled to the frame's width.
    up: [Upsampled; 2],
}

/// A row of the bloom image sampled along x at the centre of each of the frame's pixels (the
/// texels either side, linearly), one array per channel; which row it is.
#[derive(Default)]
struct Upsampled {
    row: Option<usize>,
    r: Vec<f32>,
    g: Vec<f32>,
    b: Vec<f32>,
}

impl Upsampled {
    /// The bloom image `b`'s rows either side of height `vv` (0..1 down the frame) and the
    /// weight of the second, each upsampled through `taps` once and kept in `up` while the
    /// frame's rows below still read it.
    fn about<'a>(
        up: &'a mut [Upsampled; 2],
        b: &Image,
        vv: f32,
        taps: &[(usize, usize, f32)],
    ) -> (&'a Upsampled, &'a Upsampled, f32) {
        let ty = vv * b.h as f32 - 0.5;
        let fy = ty.floor();
        let (y0, y1) = (
            (fy as i64).clamp(0, b.h as i64 - 1) as usize,
            (fy as i64 + 1).clamp(0, b.h as i64 - 1) as usize,
        );
        // The slot for y0: the one that holds it, else not the one that holds y1.
        let i = match (up[0].row, up[1].row) {
            (Some(r), _) if r == y0 => 0,
            (_, Some(r)) if r == y0 => 1,
            (Some(r), _) if r == y1 => 1,
            _ => 0,
        };
        if up[i].row != Some(y0) {
            up[i].fill(b, y0, taps);
        }
        if up[1 - i].row != Some(y1) {
            up[1 - i].fill(b, y1, taps);
        }
        let [a, c] = up;
        let (u0, u1) = if i == 0 { (&*a, &*c) } else { (&*c, &*a) };
        (u0, u1, ty - fy)
    }

    /// Row `y` of `b`, through `taps` (one a pixel).
    fn fill(&mut self, b: &Image, y: usize, taps: &[(usize, usize, f32)]) {
        let src = &b.px[y * b.w..(y + 1) * b.w];
        let n = taps.len();
        self.r.resize(n, 0.0);
        self.g.resize(n, 0.0);
        self.b.resize(n, 0.0);
        for (x, &(i0, i1, f)) in taps.iter().enumerate() {
            let (p, q) = (src[i0], src[i1]);
            self.r[x] = p[0] + (q[0] - p[0]) * f;
            self.g[x] = p[1] + (q[1] - p[1]) * f;
            self.b[x] = p[2] + (q[2] - p[2]) * f;
        }
        self.row = Some(y);
    }
}

impl Row {
    fn channels(&self) -> Channels<'_> {
        [&self.r, &self.g, &self.b]
    }

    fn new(w: usize) -> Row {
        Row {
            r: vec![0.0; w],
            g: vec![0.0; w],
            b: vec![0.0; w],
            light: Vec::new(),
            up: Default::default(),
        }
    }
}

/// Per column of the frame: what does not change down the rows.
struct Columns {
    /// (u − ½)·aspect, squared (the vignette).
    dx2: Vec<f32>,
    /// Whether the column lies within the world's rectangle (the bars).
    inside: Vec<bool>,
    /// The bloom image's texels either side of the column's centre and the weight of the
    /// second (its bilinear sample along x).
    bloom_x: Vec<(usize, usize, f32)>,
}

/// The shading of one frame: its parameters and the parts its pipeline would run.
pub(super) struct Shader<'a> {
    pub p: &'a TonemapParams,
    pub v: TonemapVariant,
    pub width: usize,
    pub height: usize,
    pub inputs: Inputs<'a>,
}

/// The bilinear taps along one axis of an image `n` texels long, at the centres of `m` pixels
/// spanning it (`m` the frame's size): the texels either side and the weight of the second.
fn taps_along(m: usize, n: usize) -> Vec<(usize, usize, f32)> {
    (0..m)
        .map(|i| {
            let x = (i as f32 + 0.5) / m as f32 * n as f32 - 0.5;
            let f = x.floor();
            let hi = n as i64 - 1;
            let a = (f as i64).clamp(0, hi) as usize;
            let b = (f as i64 + 1).clamp(0, hi) as usize;
            (a, b, x - f)
        })
        .collect()
}

impl Shader<'_> {
    fn columns(&self) -> Columns {
        let w = self.width;
        let p = self.p;
        let u = |x: usize| (x as f32 + 0.5) / w as f32;
        Columns {
            dx2: (0..w)
                .map(|x| {
                    let d = (u(x) - 0.5) * p.aspect;
                    d * d
                })
                .collect(),
            inside: (0..w)
                .map(|x| u(x) >= p.world_rect[0] && u(x) <= p.world_rect[2])
                .collect(),
            bloom_x: match self.inputs.bloom {
                Some(b) => taps_along(w, b.w),
                None => Vec::new(),
            },
        }
    }

    /// Row `y`'s display colours (R'G'B', graded, undithered: tonemap.wgsl's `shade` before
    /// its dither) into `out`; `glow`: scratch for the bloom's row.
    fn row(&self, y: usize, cols: &Columns, glow: &mut Row, out: &mut Row) {
        let p = self.p;
        let v = self.v;
        let w = self.width;
        let vv = (y as f32 + 0.5) / self.height as f32;
        glow.light.resize(w, [0.0; 4]);
        light::load(
            self.inputs.hdr.row(y),
            1.0,
            bytemuck::cast_slice_mut(&mut glow.light),
        );
        let hdr = &glow.light[..];
        // The light (with the glow) into `out`.
        let mut bloom = None;
        if let (true, Some(b)) = (v.bloom, self.inputs.bloom) {
            let (u0, u1, t) = Upsampled::about(&mut glow.up, b, vv, &cols.bloom_x);
            bloom = Some((u0, u1, t, p.bloom));
        }
        fill_row(hdr, &mut out.r, &mut out.g, &mut out.b, bloom);
        let r = p.world_rect;
        let row_inside = vv >= r[1] && vv <= r[3];
        let sky_at = |k: usize| p.background_top[k] + (p.background[k] - p.background_top[k]) * vv;
        let sky_in = [sky_at(0), sky_at(1), sky_at(2)];
        let sky_out = sky_in.map(|s| s * p.bars);
        let dy = vv - 0.5;
        let frame = Frame {
            exposure: p.exposure,
            ink: v.ink,
            vignette: if v.vignette { p.vignette } else { 0.0 },
            dy2: dy * dy,
            saturation: if v.grade { p.saturation } else { 1.0 },
            grade: v
                .grade
                .then_some((p.lift, p.gain, 1.0 / p.gamma.max(1e-3), p.contrast)),
            linear: v.linear,
        };
        let plate = if v.plate {
            self.inputs.plate.map(|pl| &pl[y * w..(y + 1) * w])
        } else {
            None
        };
        let energy: Vec<f32>;
        let energy = if v.ink {
            energy = hdr.iter().map(|px| px[3]).collect();
            energy.as_slice()
        } else {
            &[]
        };
        if !v.ink && !v.linear && !v.grade && plate.is_none() {
            let g = Glow {
                exposure: p.exposure,
                vignette: frame.vignette,
                dy2: frame.dy2,
                sky_in: if row_inside { sky_in } else { sky_out },
                sky_out,
            };
            #[cfg(target_arch = "x86_64")]
            if super::avx2() {
                // SAFETY: the CPU has AVX2 (checked at run time by `avx2`).
                unsafe { glow_row_avx2(&g, &mut out.r, &mut out.g, &mut out.b, cols) };
                return;
            }
            glow_row_generic(
                &g,
                &mut out.r,
                &mut out.g,
                &mut out.b,
                &cols.dx2,
                &cols.inside,
            );
            return;
        }
        let args = (
            &cols.dx2[..],
            &cols.inside[..],
            row_inside,
            sky_in,
            sky_out,
            plate,
            energy,
        );
        #[cfg(target_arch = "x86_64")]
        if super::avx2() {
            // SAFETY: the CPU has AVX2 (checked at run time by `avx2`).
            unsafe { shade_row_avx2(&frame, &mut out.r, &mut out.g, &mut out.b, args) };
            return;
        }
        shade_row_plain(&frame, &mut out.r, &mut out.g, &mut out.b, args)
    }

    /// The frame as RGBA8 (sRGB, the column dither added before the store).
    pub fn rgba8(&self, out: &mut Vec<u8>) {
        let (w, h) = (self.width, self.height);
        out.clear();
        out.resize(w * h * 4, 0);
        let phases: Vec<[u32; 3]> = (0..w)
            .map(|x| {
                let column = pcg(x as u32 ^ self.p.seed);
                [column, pcg(column), pcg(column ^ 0x9e37_79b9)]
            })
            .collect();
        let dither = if self.v.dither { self.p.dither } else { 0.0 };
        let cols = self.columns();
        par::bands(out, w * 4, |rows, band| {
            let (mut glow, mut row) = (Row::new(w), Row::new(w));
            for (j, y) in rows.enumerate() {
                self.row(y, &cols, &mut glow, &mut row);
                let px = &mut band[j * w * 4..(j + 1) * w * 4];
                for x in 0..w {
                    let c = [row.r[x], row.g[x], row.b[x]];
                    for k in 0..3 {
                        let level =
                            (0xd8u32 >> (((y as u32).wrapping_add(phases[x][k]) & 3) * 2)) & 3;
                        let d = c[k] + dither * (level as f32 - 1.5) * 0.4 / 255.0;
                        px[x * 4 + k] = (d.clamp(0.0, 1.0) * 255.0 + 0.5) as u8;
                    }
                    px[x * 4 + 3] = 255;
                }
            }
        });
    }

    /// The frame as the half-float display image a deep output reads back, converted as
    /// `deep` converts it: 16-bit sRGB codes, linear light as `f32`, or the halves as they
    /// are (to upload as the display image).
    pub fn deep(&self, to: Deep, out: &mut Vec<u8>) {
        let (w, h) = (self.width, self.height);
        let texel = if to == Deep::Floats { 16 } else { 8 };
        out.clear();
        out.resize(w * h * texel, 0);
        let cols = self.columns();
        par::bands(out, w * texel, |rows, band| {
            let (mut glow, mut row) = (Row::new(w), Row::new(w));
            for (j, y) in rows.enumerate() {
                self.row(y, &cols, &mut glow, &mut row);
                let px = &mut band[j * w * texel..(j + 1) * w * texel];
                for x in 0..w {
                    let c = [row.r[x], row.g[x], row.b[x], 1.0];
                    for (k, v) in c.into_iter().enumerate() {
                        // The display image holds half floats.
                        let half = half::f16::from_f32(v);
                        let v = half.to_f32();
                        match to {
                            Deep::Floats => {
                                let v = if v.is_nan() { 0.0 } else { v };
                                px[(x * 4 + k) * 4..][..4].copy_from_slice(&v.to_ne_bytes());
                            }
                            Deep::Codes => {
                                let code = (v.clamp(0.0, 1.0) * 65535.0).round() as u16;
                                px[(x * 4 + k) * 2..][..2].copy_from_slice(&code.to_ne_bytes());
                            }
                            Deep::Halves => {
                                px[(x * 4 + k) * 2..][..2].copy_from_slice(&half.to_le_bytes());
                            }
                        }
                    }
                }
            }
        });
    }

    /// The frame as planar Y'CbCr codes (`yuv`'s layout, tight: Y, then U, then V), the codes
    /// dithered as ycbcr.wgsl dithers them.
    pub fn planes(&self, yuv: &YuvParams, seeds: [u32; 3], out: &mut Vec<u8>) {
        let (w, h) = (self.width, self.height);
        let rows = yuv.chroma_rows as usize;
        let (cw, ch) = (w / 2, h / rows);
        let bytes = if yuv.bits > 8 { 2 } else { 1 };
        out.clear();
        out.resize((w * h + 2 * cw * ch) * bytes, 0);
        let codes = Codes {
            scale: (1u32 << (yuv.bits - 8)) as f32,
            most: ((1u32 << yuv.bits) - 1) as f32,
            bytes,
            luma: (0..w).map(|x| pcg(x as u32 ^ seeds[0])).collect(),
            u: (0..cw).map(|x| pcg(x as u32 ^ seeds[1])).collect(),
            v: (0..cw).map(|x| pcg(x as u32 ^ seeds[2])).collect(),
        };
        let cols = self.columns();
        let (luma_plane, chroma) = out.split_at_mut(w * h * bytes);
        let (u_plane, v_plane) = chroma.split_at_mut(cw * ch * bytes);
        let ranges = par::split(ch, 8);
        let work = |r: std::ops::Range<usize>, ya: &mut [u8], ub: &mut [u8], vc: &mut [u8]| {
            let mut glow = Row::new(w);
            let mut scratch = vec![0.0f32; w];
            let mut lines: Vec<Row> = (0..rows).map(|_| Row::new(w)).collect();
            for (j, cy) in r.enumerate() {
                for (dy, line) in lines.iter_mut().enumerate() {
                    let y = cy * rows + dy;
                    self.row(y, &cols, &mut glow, line);
                    let at = &mut ya[(j * rows + dy) * w * bytes..][..w * bytes];
                    codes.luma_row(line.channels(), y, at, &mut scratch);
                }
                let at = j * cw * bytes..(j + 1) * cw * bytes;
                let bottom = lines.get(1).map(Row::channels);
                let (u, v) = (&mut ub[at.clone()], &mut vc[at]);
                codes.chroma_row(lines[0].channels(), bottom, cy, u, v, &mut scratch);
            }
        };
        let work = &work;
        // Each thread its chroma rows and their luma rows (disjoint slices).
        std::thread::scope(|s| {
            let (mut ly, mut lu, mut lv) = (luma_plane, u_plane, v_plane);
            let mut first = None;
            for r in ranges {
                let n = r.end - r.start;
                let (a, rest) = ly.split_at_mut(n * rows * w * bytes);
                ly = rest;
                let (b, rest) = lu.split_at_mut(n * cw * bytes);
                lu = rest;
                let (c, rest) = lv.split_at_mut(n * cw * bytes);
                lv = rest;
                if first.is_none() {
                    first = Some((r, a, b, c));
                } else {
                    s.spawn(move || work(r, a, b, c));
                }
            }
            if let Some((r, a, b, c)) = first {
                work(r, a, b, c);
            }
        });
    }
}

/// A row of the plain glow look (no ink, linear light, grading or plate): what
/// [`glow_row_generic`] needs besides the pixels.
struct Glow {
    exposure: f32,
    /// 0 without a vignette.
    vignette: f32,
    dy2: f32,
    /// The background inside the world's rectangle (the bars' where the row is outside it)
    /// and outside.
    sky_in: [f32; 3],
    sky_out: [f32; 3],
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn glow_row_avx2(k: &Glow, r: &mut [f32], g: &mut [f32], b: &mut [f32], cols: &Columns) {
    glow_row_generic(k, r, g, b, &cols.dx2, &cols.inside)
}

/// [`shade_row_generic`] for the plain glow look, one loop with no branch, which the
/// compiler runs eight pixels at a time.
#[inline(always)]
fn glow_row_generic(
    k: &Glow,
    r: &mut [f32],
    g: &mut [f32],
    b: &mut [f32],
    dx2: &[f32],
    inside: &[bool],
) {
    let n = r.len();
    let (g, b, dx2, inside) = (&mut g[..n], &mut b[..n], &dx2[..n], &inside[..n]);
    let enc = |c: f32, vig: f32| (c * vig).clamp(0.0, 1.0);
    for x in 0..n {
        let (lr, lg, lb) = (r[x] * k.exposure, g[x] * k.exposure, b[x] * k.exposure);
        let m = lr.max(lg).max(lb.max(1e-6));
        let q = aces(m) / m;
        let t = |c: f32| {
            let kept = c * q;
            kept + (aces(c) - kept) * 0.15
        };
        let (tr, tg, tb) = (t(lr), t(lg), t(lb));
        let i = inside[x];
        let sky = |c: usize| if i { k.sky_in[c] } else { k.sky_out[c] };
        let (sr, sg, sb) = (sky(0), sky(1), sky(2));
        let vig = 1.0 - k.vignette * smoothstep(0.35, 1.1, (dx2[x] + k.dy2).sqrt() * 1.2);
        r[x] = enc(sr + (1.0 - sr) * tr, vig);
        g[x] = enc(sg + (1.0 - sg) * tg, vig);
        b[x] = enc(sb + (1.0 - sb) * tb, vig);
    }
    for c in [r, g, b] {
        srgb::encode(c);
    }
}

/// The glow at a row of the frame: the bloom image's rows above and below it, upsampled to the
/// frame's width, the weight of the second, and the glow's strength.
type BloomRow<'a> = Option<(&'a Upsampled, &'a Upsampled, f32, f32)>;

/// A row of HDR light into its channels, the glow's bilinear sample times its strength added.
fn fill_row(hdr: &[[f32; 4]], r: &mut [f32], g: &mut [f32], b: &mut [f32], bloom: BloomRow) {
    #[cfg(target_arch = "x86_64")]
    if super::avx2() {
        // SAFETY: the CPU has AVX2 (checked at run time by `avx2`).
        unsafe { fill_row_avx2(hdr, r, g, b, bloom) };
        return;
    }
    fill_row_generic(hdr, r, g, b, bloom)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn fill_row_avx2(hdr: &[[f32; 4]], r: &mut [f32], g: &mut [f32], b: &mut [f32], bloom: BloomRow) {
    fill_row_generic(hdr, r, g, b, bloom)
}

#[inline(always)]
fn fill_row_generic(
    hdr: &[[f32; 4]],
    r: &mut [f32],
    g: &mut [f32],
    b: &mut [f32],
    bloom: BloomRow,
) {
    let n = hdr.len();
    let (r, g, b) = (&mut r[..n], &mut g[..n], &mut b[..n]);
    match bloom {
        None => {
            for x in 0..n {
                r[x] = hdr[x][0];
                g[x] = hdr[x][1];
                b[x] = hdr[x][2];
            }
        }
        Some((u0, u1, t, k)) => {
            let (r0, g0, b0) = (&u0.r[..n], &u0.g[..n], &u0.b[..n]);
            let (r1, g1, b1) = (&u1.r[..n], &u1.g[..n], &u1.b[..n]);
            for x in 0..n {
                r[x] = hdr[x][0] + k * (r0[x] + (r1[x] - r0[x]) * t);
                g[x] = hdr[x][1] + k * (g0[x] + (g1[x] - g0[x]) * t);
                b[x] = hdr[x][2] + k * (b0[x] + (b1[x] - b0[x]) * t);
            }
        }
    }
}

/// The inputs of `shade_row_generic` after the row's channels.
type RowArgs<'a> = (
    &'a [f32],
    &'a [bool],
    bool,
    [f32; 3],
    [f32; 3],
    Option<&'a [[f32; 3]]>,
    &'a [f32],
);

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn shade_row_avx2(f: &Frame, r: &mut [f32], g: &mut [f32], b: &mut [f32], a: RowArgs) {
    shade_row_generic(f, r, g, b, a.0, a.1, a.2, a.3, a.4, a.5, a.6)
}

fn shade_row_plain(f: &Frame, r: &mut [f32], g: &mut [f32], b: &mut [f32], a: RowArgs) {
    shade_row_generic(f, r, g, b, a.0, a.1, a.2, a.3, a.4, a.5, a.6)
}

/// One row's shading parameters (`shade_row_generic`).
pub(super) struct Frame {
    pub exposure: f32,
    pub ink: bool,
    /// 0 without a vignette.
    pub vignette: f32,
    /// (v − ½)² of the row.
    pub dy2: f32,
    /// 1 without grading.
    pub saturation: f32,
    /// Lift, gain, 1/gamma, contrast, where the look grades.
    pub grade: Option<(f32, f32, f32, f32)>,
    /// Scene-linear light out (EXR): no tone curve, no grading, no sRGB encoding.
    pub linear: bool,
}

/// Light `out` (the row's HDR light with the glow) → its display colours in place.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn shade_row_generic(
    f: &Frame,
    out: &mut [f32],
    out_g: &mut [f32],
    out_b: &mut [f32],
    dx2: &[f32],
    inside: &[bool],
    row_inside: bool,
    sky_in: [f32; 3],
    sky_out: [f32; 3],
    plate: Option<&[[f32; 3]]>,
    energy: &[f32],
) {
    let n = out.len();
    for x in 0..n {
        let (cr, cg, cb) = (out[x], out_g[x], out_b[x]);
        let inside = row_inside & inside[x];
        let mut sky = if inside { sky_in } else { sky_out };
        if let Some(pl) = plate {
            sky = pl[x];
        }
        let (mut r, mut g, mut b);
        if f.ink {
            let e = energy[x].max(0.0);
            let opacity = 1.0 - (-e * f.exposure).exp();
            let e = e.max(1e-6);
            r = sky[0] + (cr / e - sky[0]) * opacity;
            g = sky[1] + (cg / e - sky[1]) * opacity;
            b = sky[2] + (cb / e - sky[2]) * opacity;
        } else if f.linear {
            // Linear light adds to the background (a screen needs light bounded by 1).
            r = sky[0] + cr * f.exposure;
            g = sky[1] + cg * f.exposure;
            b = sky[2] + cb * f.exposure;
        } else {
            let (lr, lg, lb) = (cr * f.exposure, cg * f.exposure, cb * f.exposure);
            let m = lr.max(lg).max(lb.max(1e-6));
            let k = aces(m) / m;
            let t = |c: f32| {
                let kept = c * k;
                kept + (aces(c) - kept) * 0.15
            };
            r = sky[0] + (1.0 - sky[0]) * t(lr);
            g = sky[1] + (1.0 - sky[1]) * t(lg);
            b = sky[2] + (1.0 - sky[2]) * t(lb);
        }
        let vig = 1.0 - f.vignette * smoothstep(0.35, 1.1, (dx2[x] + f.dy2).sqrt() * 1.2);
        if f.linear {
            out[x] = r * vig;
            out_g[x] = g * vig;
            out_b[x] = b * vig;
            continue;
        }
        if f.grade.is_some() {
            let luma = r * 0.2126 + g * 0.7152 + b * 0.0722;
            r = luma + (r - luma) * f.saturation;
            g = luma + (g - luma) * f.saturation;
            b = luma + (b - luma) * f.saturation;
        }
        // sRGB-encoded below, the whole row at once.
        out[x] = (r * vig).clamp(0.0, 1.0);
        out_g[x] = (g * vig).clamp(0.0, 1.0);
        out_b[x] = (b * vig).clamp(0.0, 1.0);
    }
    if f.linear {
        return;
    }
    for c in [out, out_g, out_b] {
        srgb::encode(c);
        if let Some((lift, gain, inv_gamma, contrast)) = f.grade {
            for e in c.iter_mut() {
                let lifted = gain * (*e + lift * (1.0 - *e));
                let curved = lifted.max(0.0).powf(inv_gamma);
                *e = ((curved - 0.5) * contrast + 0.5).clamp(0.0, 1.0);
            }
        }
    }
}

/// What a half-float display image becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Deep {
    /// 16-bit sRGB codes (native-endian `u16`), as `deep::sixteen_bits` makes them.
    Codes,
    /// Linear light as `f32` (native-endian), as `deep::floats` makes it.
    Floats,
    /// The halves themselves (little-endian): the display image to upload.
    Halves,
}
