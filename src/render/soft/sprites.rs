//! The agents' sprites added onto a strip of the frame's light on the CPU: each dot's sprite,
//! the splat path's separable kernel at its sub-pixel position, stamped onto the pixels it
//! reaches; or, for a crowd, every dot splatted once into an accumulation image that the
//! kernel's taps filter strip by strip. Either way the sprite is the one the GPU's B-spline
//! splat and filter draw (the same taps, the same sums, in another order).

use super::agents::{by_row, Dot};
use super::par;
use crate::render::splat::Kernel;

/// One axis of a sprite at sub-pixel offset `t` (−½..½ from its nearest pixel's centre): the
/// B-spline splat's three weights through the kernel's taps (centred, half-width m), the
/// `2 m + 3` values from the nearest pixel − m − 1 on. Value k is
/// w₀·taps[k] + w₁·taps[k − 1] + w₂·taps[k − 2], the taps outside the kernel zero (the sum in
/// the GPU filter's order).
/// `padded`: the taps with two zeros before and after, so that each value's three taps are
/// three slices' k-th and the loop runs eight values at a time.
#[inline(always)]
fn profile(t: f32, padded: &[f32], out: &mut [f32]) {
    let (a, b) = (0.5 - t, 0.5 + t);
    let w = [0.5 * a * a, 0.75 - t * t, 0.5 * b * b];
    let n = padded.len() - 2;
    let (t0, t1, t2) = (&padded[2..n + 2], &padded[1..n + 1], &padded[..n]);
    for (k, o) in out[..n].iter_mut().enumerate() {
        *o = w[0] * t0[k] + w[1] * t1[k] + w[2] * t2[k];
    }
}

/// `taps` with two zeros before and after ([`profile`]).
fn padded(taps: &[f32]) -> Vec<f32> {
    [&[0.0, 0.0][..], taps, &[0.0, 0.0]].concat()
}

/// Adds every dot's sprite onto `hdr` (`width` pixels a row), rows `rows` of the frame only,
/// and within the scissor's columns and rows.
pub(super) fn stamp(
    hdr: &mut [[f32; 4]],
    rows: std::ops::Range<usize>,
    width: usize,
    dots: &[Dot],
    kernel: &Kernel,
    scissor: [f32; 4],
) {
    #[cfg(target_arch = "x86_64")]
    if super::avx2() {
        // SAFETY: the CPU has AVX2 (checked at run time by `avx2`).
        unsafe { stamp_avx2(hdr, rows, width, dots, kernel, scissor) };
        return;
    }
    stamp_generic(hdr, rows, width, dots, kernel, scissor)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn stamp_avx2(
    hdr: &mut [[f32; 4]],
    rows: std::ops::Range<usize>,
    width: usize,
    dots: &[Dot],
    kernel: &Kernel,
    scissor: [f32; 4],
) {
    stamp_generic(hdr, rows, width, dots, kernel, scissor)
}

/// The core and the halo stamped together, a row of the halo's square at a time: where the
/// row also crosses the core's square, each pixel gets the halo's term and then the core's
/// (the order in which stamping the halo's square and then the core's adds them), so a
/// pixel's sum is the same whichever way it is drawn. A dot whose halo row, widened to a whole
/// number of AVX registers, lies inside the scissor's columns takes [`rows_fixed`]; the others
/// (at the frame's edges) each square's clipped rows.
#[inline(always)]
fn stamp_generic(
    hdr: &mut [[f32; 4]],
    rows: std::ops::Range<usize>,
    width: usize,
    dots: &[Dot],
    kernel: &Kernel,
    scissor: [f32; 4],
) {
    let parts = [padded(&kernel.halo), padded(&kernel.core)];
    let most = kernel.core.len().max(kernel.halo.len()) + 2;
    let mut px = [vec![0.0f32; most], vec![0.0f32; most]];
    let mut py = [vec![0.0f32; most], vec![0.0f32; most]];
    // The horizontal profiles times the dot's light, as the image holds it, the core's
    // placed in the halo's columns and zero outside its own.
    let mut lit = [
        vec![0.0f32; 4 * most.max(WIDEST)],
        vec![0.0f32; 4 * most.max(WIDEST)],
    ];
    // Pixels whose centres lie inside the scissor rectangle.
    let x_lo = (scissor[0] - 0.5).ceil().max(0.0) as i64;
    let x_hi = ((scissor[2] - 0.5).ceil() as i64).min(width as i64);
    let y_lo = ((scissor[1] - 0.5).ceil().max(0.0) as i64).max(rows.start as i64);
    let y_hi = ((scissor[3] - 0.5).ceil() as i64).min(rows.end as i64);
    let first = rows.start;
    let flat_hdr: &mut [f32] = bytemuck::cast_slice_mut(hdr);
    let (mh, mc) = (
        (kernel.halo.len() as i64 - 1) / 2,
        (kernel.core.len() as i64 - 1) / 2,
    );
    let (span_h, span_c) = (kernel.halo.len() + 2, kernel.core.len() + 2);
    // The halo's row widened to one of the fixed path's widths (four pixels a step).
    let padded = (span_h.div_ceil(4) * 4).max(8);
    let fixed = mc <= mh && padded <= WIDEST;
    let shift = (mh - mc) as usize;
    for d in dots {
        let (nx, ny) = (d.x.floor(), d.y.floor());
        let (tx, ty) = (d.x - nx - 0.5, d.y - ny - 0.5);
        let x0 = nx as i64 - mh - 1;
        if fixed && x0 >= x_lo && x0 + padded as i64 <= x_hi {
            let y0 = ny as i64 - mh - 1;
            let (ry0, ry1) = (y0.max(y_lo), (y0 + span_h as i64).min(y_hi));
            if ry0 >= ry1 {
                continue;
            }
            for (k, taps) in parts.iter().enumerate() {
                profile(tx, taps, &mut px[k]);
                profile(ty, taps, &mut py[k]);
            }
            let [lh, lc] = &mut lit;
            lh[4 * span_h..4 * padded].fill(0.0);
            lc[..4 * padded].fill(0.0);
            lit_row(lh, 0, &px[0][..span_h], d.light);
            lit_row(lc, shift, &px[1][..span_c], d.light);
            let c0 = y0 + shift as i64;
            let s = Square {
                rows: ry0..ry1,
                y0,
                core_rows: c0.max(ry0)..(c0 + span_c as i64).min(ry1),
                c0,
                at: 4 * ((ry0 as usize - first) * width + x0 as usize),
                stride: 4 * width,
            };
            let (ph, pc) = (&py[0][..], &py[1][..]);
            match padded {
                8 => rows_fixed::<32>(flat_hdr, &s, ph, pc, &lit),
                12 => rows_fixed::<48>(flat_hdr, &s, ph, pc, &lit),
                16 => rows_fixed::<64>(flat_hdr, &s, ph, pc, &lit),
                20 => rows_fixed::<80>(flat_hdr, &s, ph, pc, &lit),
                24 => rows_fixed::<96>(flat_hdr, &s, ph, pc, &lit),
                28 => rows_fixed::<112>(flat_hdr, &s, ph, pc, &lit),
                _ => rows_fixed::<128>(flat_hdr, &s, ph, pc, &lit),
            }
            continue;
        }
        for taps in &parts {
            let m = (taps.len() as i64 - 5) / 2;
            let span = taps.len() as i64 - 2;
            let (x0, y0) = (nx as i64 - m - 1, ny as i64 - m - 1);
            let (rx0, rx1) = (x0.max(x_lo), (x0 + span).min(x_hi));
            let (ry0, ry1) = (y0.max(y_lo), (y0 + span).min(y_hi));
            if rx0 >= rx1 || ry0 >= ry1 {
                continue;
            }
            profile(tx, taps, &mut px[0]);
            profile(ty, taps, &mut py[0]);
            let (i0, i1) = ((rx0 - x0) as usize, (rx1 - x0) as usize);
            let n = 4 * (i1 - i0);
            lit_row(&mut lit[0], 0, &px[0][i0..i1], d.light);
            let lit = &lit[0][..n];
            for ry in ry0..ry1 {
                let c = py[0][(ry - y0) as usize];
                let at = 4 * ((ry as usize - first) * width + rx0 as usize);
                for (o, &s) in flat_hdr[at..at + n].iter_mut().zip(lit.iter()) {
                    *o += c * s;
                }
            }
        }
    }
}

/// `profile` times the light `l` into `out` from pixel `from` on, as the image holds it.
#[inline(always)]
fn lit_row(out: &mut [f32], from: usize, profile: &[f32], l: [f32; 4]) {
    let out = &mut out[4 * from..4 * (from + profile.len())];
    for (k, &p) in profile.iter().enumerate() {
        for c in 0..4 {
            out[4 * k + c] = p * l[c];
        }
    }
}

/// The widest halo row the fixed path draws, in pixels.
const WIDEST: usize = 32;

/// Where a dot's halo square lies in a strip: its rows there (and the frame row of its
/// profile's first value), the core's rows among them (and the core profile's first row), and
/// the index of its first row's first value in the strip.
struct Square {
    rows: std::ops::Range<i64>,
    y0: i64,
    core_rows: std::ops::Range<i64>,
    c0: i64,
    at: usize,
    stride: usize,
}

/// A dot's rows `F` floats wide: each pixel the halo's row weight times `lit[0]`, then, on
/// the core's rows, the core's times `lit[1]` (zero outside the core's columns).
#[inline(always)]
fn rows_fixed<const F: usize>(
    hdr: &mut [f32],
    s: &Square,
    halo: &[f32],
    core: &[f32],
    lit: &[Vec<f32>; 2],
) {
    let lh: &[f32; F] = lit[0][..F].try_into().expect("F floats");
    let lc: &[f32; F] = lit[1][..F].try_into().expect("F floats");
    let mut at = s.at;
    for ry in s.rows.clone() {
        let o: &mut [f32; F] = (&mut hdr[at..at + F]).try_into().expect("F floats");
        let ch = halo[(ry - s.y0) as usize];
        if s.core_rows.contains(&ry) {
            let cc = core[(ry - s.c0) as usize];
            for j in 0..F {
                o[j] = (o[j] + ch * lh[j]) + cc * lc[j];
            }
        } else {
            for j in 0..F {
                o[j] += ch * lh[j];
            }
        }
        at += s.stride;
    }
}

fn flat(v: &[[f32; 4]]) -> &[f32] {
    bytemuck::cast_slice(v)
}

fn flat_mut(v: &mut [[f32; 4]]) -> &mut [f32] {
    bytemuck::cast_slice_mut(v)
}

/// `dst[i] += k · src[i]` over the whole slice: the filters' one step, which the compiler
/// runs as SIMD code (AVX2 where the CPU has it).
#[inline(always)]
fn axpy_generic(dst: &mut [f32], src: &[f32], k: f32) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d += k * s;
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn axpy_avx2(dst: &mut [f32], src: &[f32], k: f32) {
    axpy_generic(dst, src, k)
}

fn axpy(dst: &mut [f32], src: &[f32], k: f32) {
    #[cfg(target_arch = "x86_64")]
    if super::avx2() {
        // SAFETY: the CPU has AVX2 (checked at run time by `avx2`).
        unsafe { axpy_avx2(dst, src, k) };
        return;
    }
    axpy_generic(dst, src, k)
}

/// The same sprites as [`stamp`], the splat path's way (shaders/splat.wgsl): every dot
/// splatted by its B-spline weights into an accumulation image with a guard band (here), whose
/// rows and then columns are filtered by the kernel's taps a strip of the frame at a time
/// ([`Filter::strip`]). O(dots + pixels): the way for crowds too many to stamp one by one.
pub(super) fn splat(
    w: usize,
    h: usize,
    dots: &[Dot],
    kernel: &Kernel,
    accum: &mut Vec<[f32; 4]>,
    sorted: &mut Vec<Dot>,
) {
    let g = kernel.reach() as usize;
    let (pw, ph) = (w + 2 * g, h + 2 * g);
    accum.clear();
    accum.resize(pw * ph, [0.0; 4]);
    // The splat, each band of the padded rows on its own thread, over the dots that reach it.
    let starts = by_row(dots, h, g, sorted);
    let sorted = &sorted[..];
    par::bands(accum, pw, |rows, band| {
        // A dot's key in `starts` is its nearest row in the padded image: those within one
        // of the band's rows.
        let last = starts.len() - 1;
        let (lo, hi) = (
            rows.start.saturating_sub(1).min(last),
            (rows.end + 1).min(last),
        );
        for d in &sorted[starts[lo]..starts[hi]] {
            let (nx, ny) = (d.x.floor(), d.y.floor());
            let (px, py) = (nx as i64 + g as i64, ny as i64 + g as i64);
            if py + 1 < rows.start as i64 || py > rows.end as i64 {
                continue;
            }
            let (tx, ty) = (d.x - nx - 0.5, d.y - ny - 0.5);
            let weights = |t: f32| {
                let (a, b) = (0.5 - t, 0.5 + t);
                [0.5 * a * a, 0.75 - t * t, 0.5 * b * b]
            };
            let (wx, wy) = (weights(tx), weights(ty));
            for (j, wyj) in wy.iter().enumerate() {
                let y = py + j as i64 - 1;
                if y < rows.start as i64 || y >= rows.end as i64 {
                    continue;
                }
                let row = (y as usize - rows.start) * pw;
                for (i, wxi) in wx.iter().enumerate() {
                    let x = (px + i as i64 - 1) as usize;
                    let k = wxi * wyj;
                    for (p, l) in band[row + x].iter_mut().zip(d.light) {
                        *p += l * k;
                    }
                }
            }
        }
    });
}

/// One thread's filtering of the splat's accumulation image ([`splat`]) into strips of the
/// frame, the strips of a band in order: the padded rows filtered along x by the core's and
/// the halo's taps, kept in a ring from strip to strip (each row filtered once a band, not
/// once for every strip it reaches), and one row's light.
pub(super) struct Filter<'a> {
    accum: &'a [[f32; 4]],
    w: usize,
    kernel: &'a Kernel,
    /// Columns and rows whose pixel centres lie inside the scissor rectangle.
    x: std::ops::Range<usize>,
    y: std::ops::Range<usize>,
    /// Padded row r's x-filtered rows are at slot r % `slots` of `core` and `halo`; those of
    /// rows `kept` are there.
    core: Vec<[f32; 4]>,
    halo: Vec<[f32; 4]>,
    slots: usize,
    kept: std::ops::Range<usize>,
    light: Vec<[f32; 4]>,
}

/// Pixels of a row a filter step works on at a time: its sums and sources stay in the L1
/// cache over all the taps (each pixel's taps still added in the kernel's order).
const CHUNK: usize = 64;

impl<'a> Filter<'a> {
    pub fn new(accum: &'a [[f32; 4]], w: usize, kernel: &'a Kernel, scissor: [f32; 4]) -> Self {
        let x_lo = ((scissor[0] - 0.5).ceil().max(0.0) as usize).min(w);
        let x_hi = (((scissor[2] - 0.5).ceil()).max(0.0) as usize).min(w);
        let y_lo = (scissor[1] - 0.5).ceil().max(0.0) as usize;
        let y_hi = ((scissor[3] - 0.5).ceil()).max(0.0) as usize;
        Filter {
            accum,
            w,
            kernel,
            x: x_lo..x_hi.max(x_lo),
            y: y_lo..y_hi,
            core: Vec::new(),
            halo: Vec::new(),
            slots: 0,
            kept: 0..0,
            light: vec![[0.0; 4]; w],
        }
    }

    /// Padded row `r` filtered along x into its slot.
    fn filter_row(&mut self, r: usize) {
        let (w, kernel) = (self.w, self.kernel);
        let g = kernel.reach() as usize;
        let pw = w + 2 * g;
        let (mc, mh) = (kernel.core_taps() as usize, kernel.halo_taps() as usize);
        let src = &self.accum[r * pw..(r + 1) * pw];
        let s = r % self.slots;
        let c = &mut self.core[s * w..(s + 1) * w];
        let hl = &mut self.halo[s * w..(s + 1) * w];
        c.fill([0.0; 4]);
        hl.fill([0.0; 4]);
        for x0 in (0..w).step_by(CHUNK) {
            let x1 = (x0 + CHUNK).min(w);
            let (c, hl) = (flat_mut(&mut c[x0..x1]), flat_mut(&mut hl[x0..x1]));
            for (k, &t) in kernel.core.iter().enumerate() {
                let at = g + k - mc + x0;
                axpy(c, flat(&src[at..at + x1 - x0]), t);
            }
            for (k, &t) in kernel.halo.iter().enumerate() {
                let at = g + k - mh + x0;
                axpy(hl, flat(&src[at..at + x1 - x0]), t);
            }
        }
    }

    /// Adds the sprites' light onto rows `rows` of the frame, held by `out` (`w` pixels a row).
    pub fn strip(&mut self, rows: std::ops::Range<usize>, out: &mut [[f32; 4]]) {
        let (w, kernel) = (self.w, self.kernel);
        let g = kernel.reach() as usize;
        let (mc, mh) = (kernel.core_taps() as usize, kernel.halo_taps() as usize);
        let (y0, y1) = (rows.start, rows.end);
        // Rows of the padded image the strip's columns read: y0 + g − m .. y1 + g + m.
        let need = y0..y1 + 2 * g;
        if need.len() > self.slots {
            self.slots = need.len();
            self.core.resize(self.slots * w, [0.0; 4]);
            self.halo.resize(self.slots * w, [0.0; 4]);
            self.kept = 0..0;
        }
        if need.start < self.kept.start || need.start > self.kept.end {
            self.kept = need.start..need.start;
        }
        for r in self.kept.end.max(need.start)..need.end {
            self.filter_row(r);
        }
        self.kept = need.start..need.end;
        let xs = self.x.clone();
        let slots = self.slots;
        for y in y0..y1 {
            if !self.y.contains(&y) || xs.is_empty() {
                continue;
            }
            self.light.fill([0.0; 4]);
            // Output row y is padded row y + g.
            let mid = y + g;
            for x0 in (0..w).step_by(CHUNK) {
                let x1 = (x0 + CHUNK).min(w);
                let l = flat_mut(&mut self.light[x0..x1]);
                for (k, &t) in kernel.core.iter().enumerate() {
                    let s = (mid + k - mc) % slots;
                    axpy(l, flat(&self.core[s * w + x0..s * w + x1]), t);
                }
                for (k, &t) in kernel.halo.iter().enumerate() {
                    let s = (mid + k - mh) % slots;
                    axpy(l, flat(&self.halo[s * w + x0..s * w + x1]), t);
                }
            }
            let o = &mut out[(y - y0) * w..(y - y0 + 1) * w];
            for (o, l) in o[xs.clone()].iter_mut().zip(&self.light[xs.clone()]) {
                for c in 0..4 {
                    o[c] += l[c];
                }
            }
        }
    }
}

/// Whether the [`splat`] and its [`Filter`] cost less than [`stamp`] for `dots` dots on a `w`×`h` frame: a
/// stamp is (2m + 3)² pixels a dot, the filters 2 (core and halo taps) a pixel, the splat 9 a
/// dot (measured on 2 cores: a stamped pixel costs about twice a filter tap).
pub(super) fn filter_pays(dots: usize, w: usize, h: usize, kernel: &Kernel) -> bool {
    let m = kernel.core_taps().max(kernel.halo_taps()) as f64;
    let span = 2.0 * m + 3.0;
    let taps = (kernel.core.len() + kernel.halo.len()) as f64;
    let stamp = dots as f64 * span * span * 2.0;
    let filter = 2.0 * (w * h) as f64 * taps + dots as f64 * 9.0;
    filter < stamp
}
