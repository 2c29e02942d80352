//! The agents' sprites added onto a strip of the frame's light on the CPU: each dot's sprite,
//! the splat path's separable kernel at its sub-pixel position, stamped onto the pixels it
//! reaches; or, for a crowd, every dot splatted once into an accumulation image that the
//! kernel's taps filter strip by strip. Either way the sprite is the one the GPU's B-spline
//! splat and filter draw (the same taps, the same sums, in another order).

use super::agents::{by_row, Dot};
use super::par;
use crate::render::splat::Kernel;

/// One axis of a sprite at sub-pixel offset `t` (−½..½ from its nearest pixel's centre): the
/// B-spline splat's three weights through `taps` (centred, half-width m), the `2 m + 3` values
/// from the nearest pixel − m − 1 on. Value k is w₀·taps[k] + w₁·taps[k − 1] + w₂·taps[k − 2],
/// the taps outside the kernel zero (the sum in the GPU filter's order).
#[inline(always)]
fn profile(t: f32, taps: &[f32], out: &mut [f32]) {
    let (a, b) = (0.5 - t, 0.5 + t);
    let w = [0.5 * a * a, 0.75 - t * t, 0.5 * b * b];
    let n = taps.len();
    let tap = |k: usize| if k < n { taps[k] } else { 0.0 };
    for (k, o) in out[..n + 2].iter_mut().enumerate() {
        *o = w[0] * tap(k) + w[1] * tap(k.wrapping_sub(1)) + w[2] * tap(k.wrapping_sub(2));
    }
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

/// The core and the halo each stamped over its own square (the core's is a third of the
/// halo's area at the usual sizes): each row of one is a multiply-add a float of the row's
/// profile value times the horizontal profile times the light, laid out as the image holds it.
#[inline(always)]
fn stamp_generic(
    hdr: &mut [[f32; 4]],
    rows: std::ops::Range<usize>,
    width: usize,
    dots: &[Dot],
    kernel: &Kernel,
    scissor: [f32; 4],
) {
    let parts = [&kernel.halo[..], &kernel.core[..]];
    let most = kernel.core.len().max(kernel.halo.len()) + 2;
    let mut px = vec![0.0f32; most];
    let mut py = vec![0.0f32; most];
    // The horizontal profile times the dot's light, as the image holds it.
    let mut lit = vec![[0.0f32; 4]; most];
    // Pixels whose centres lie inside the scissor rectangle.
    let x_lo = (scissor[0] - 0.5).ceil().max(0.0) as i64;
    let x_hi = ((scissor[2] - 0.5).ceil() as i64).min(width as i64);
    let y_lo = ((scissor[1] - 0.5).ceil().max(0.0) as i64).max(rows.start as i64);
    let y_hi = ((scissor[3] - 0.5).ceil() as i64).min(rows.end as i64);
    let first = rows.start;
    let flat_hdr: &mut [f32] = bytemuck::cast_slice_mut(hdr);
    for d in dots {
        let (nx, ny) = (d.x.floor(), d.y.floor());
        let (tx, ty) = (d.x - nx - 0.5, d.y - ny - 0.5);
        for taps in parts {
            let m = (taps.len() as i64 - 1) / 2;
            let span = taps.len() as i64 + 2;
            let (x0, y0) = (nx as i64 - m - 1, ny as i64 - m - 1);
            let (rx0, rx1) = (x0.max(x_lo), (x0 + span).min(x_hi));
            let (ry0, ry1) = (y0.max(y_lo), (y0 + span).min(y_hi));
            if rx0 >= rx1 || ry0 >= ry1 {
                continue;
            }
            profile(tx, taps, &mut px);
            profile(ty, taps, &mut py);
            let (i0, i1) = ((rx0 - x0) as usize, (rx1 - x0) as usize);
            let n = 4 * (i1 - i0);
            let l = d.light;
            for (o, &p) in lit.iter_mut().zip(&px[i0..i1]) {
                *o = [p * l[0], p * l[1], p * l[2], p * l[3]];
            }
            let lit: &[f32] = bytemuck::cast_slice(&lit[..i1 - i0]);
            for ry in ry0..ry1 {
                let c = py[(ry - y0) as usize];
                let at = 4 * ((ry as usize - first) * width + rx0 as usize);
                let o = &mut flat_hdr[at..at + n];
                // Two pixels at a time (one AVX register), then the odd one.
                for q in 0..n / 8 {
                    let oc: &mut [f32; 8] = (&mut o[8 * q..8 * q + 8]).try_into().expect("8");
                    let lc: &[f32; 8] = (&lit[8 * q..8 * q + 8]).try_into().expect("8");
                    for j in 0..8 {
                        oc[j] += c * lc[j];
                    }
                }
                for k in n / 8 * 8..n {
                    o[k] += c * lit[k];
                }
            }
        }
    }
}

fn flat(v: &[[f32; 4]]) -> &[f32] {
    bytemuck::cast_slice(v)
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
/// frame: its scratch rows (the strip's padded rows filtered along x by the core's and the
/// halo's taps, and one row's light).
pub(super) struct Filter<'a> {
    accum: &'a [[f32; 4]],
    w: usize,
    kernel: &'a Kernel,
    /// Columns and rows whose pixel centres lie inside the scissor rectangle.
    x: std::ops::Range<usize>,
    y: std::ops::Range<usize>,
    core: Vec<[f32; 4]>,
    halo: Vec<[f32; 4]>,
    light: Vec<[f32; 4]>,
}

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
            light: vec![[0.0; 4]; w],
        }
    }

    /// Adds the sprites' light onto rows `rows` of the frame, held by `out` (`w` pixels a row).
    pub fn strip(&mut self, rows: std::ops::Range<usize>, out: &mut [[f32; 4]]) {
        let (w, kernel) = (self.w, self.kernel);
        let g = kernel.reach() as usize;
        let pw = w + 2 * g;
        let (mc, mh) = (kernel.core_taps() as usize, kernel.halo_taps() as usize);
        let (y0, y1) = (rows.start, rows.end);
        // Rows of the padded image the strip's columns read: y0 + g − m .. y1 + g + m.
        let n = y1 - y0 + 2 * g;
        self.core.resize(n * w, [0.0; 4]);
        self.halo.resize(n * w, [0.0; 4]);
        for r in 0..n {
            let src = &self.accum[(y0 + r) * pw..(y0 + r + 1) * pw];
            let c = &mut self.core[r * w..(r + 1) * w];
            let hl = &mut self.halo[r * w..(r + 1) * w];
            c.fill([0.0; 4]);
            hl.fill([0.0; 4]);
            let (c, hl) = (bytemuck::cast_slice_mut(c), bytemuck::cast_slice_mut(hl));
            for (k, &t) in kernel.core.iter().enumerate() {
                let at = g + k - mc;
                axpy(c, flat(&src[at..at + w]), t);
            }
            for (k, &t) in kernel.halo.iter().enumerate() {
                let at = g + k - mh;
                axpy(hl, flat(&src[at..at + w]), t);
            }
        }
        let xs = self.x.clone();
        for y in y0..y1 {
            if !self.y.contains(&y) || xs.is_empty() {
                continue;
            }
            self.light.fill([0.0; 4]);
            let l = bytemuck::cast_slice_mut(&mut self.light);
            // Output row y is padded row y + g: strip row y − y0 + g.
            let mid = y - y0 + g;
            for (k, &t) in kernel.core.iter().enumerate() {
                let r = mid + k - mc;
                axpy(l, flat(&self.core[r * w..(r + 1) * w]), t);
            }
            for (k, &t) in kernel.halo.iter().enumerate() {
                let r = mid + k - mh;
                axpy(l, flat(&self.halo[r * w..(r + 1) * w]), t);
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
