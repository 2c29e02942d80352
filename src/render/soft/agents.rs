//! The agents into the HDR light on the CPU: each agent's colour and crowd share as
//! shaders/splat.wgsl gives them, then its sprite, the splat path's separable kernel at its
//! sub-pixel position, added onto the pixels it reaches. The sprite is the one the GPU's
//! B-spline splat and filter draw (the same taps, the same sums, in another order).

use super::par;
use crate::bfs::Frame;
use crate::render::splat::{Kernel, SplatParams};

const TAU: f32 = std::f32::consts::TAU;
/// Frame pixels per crowd cell, each way.
const CELL: f32 = crate::render::agents::CROWD_CELL as f32;

/// One image of an agent on screen: where (pixels, y down) and the light it adds (colour
/// times its crowd share, then the energy, which the crowd does not share).
#[derive(Clone, Copy, Debug)]
pub(super) struct Dot {
    pub x: f32,
    pub y: f32,
    pub light: [f32; 4],
}

/// The colour map as linear light, 256 texels (sRGB bytes decoded as a `Rgba8UnormSrgb`
/// texture reads them).
pub(super) fn linear_lut(bytes: &[u8]) -> Vec<[f32; 3]> {
    bytes
        .chunks_exact(4)
        .map(|t| [0, 1, 2].map(|k| crate::render::srgb_to_linear(t[k] as f32 / 255.0)))
        .collect()
}

/// As splat.wgsl's `copy_shift`.
#[inline(always)]
fn copy_shift(p: &SplatParams, copy: u32, pos: [f32; 2]) -> [f32; 2] {
    let [wx, wy] = p.world;
    match p.copies {
        9 => [
            ((copy % 3) as f32 - 1.0) * wx,
            ((copy / 3) as f32 - 1.0) * wy,
        ],
        4 => {
            let toward = |q: f32, w: f32| if q < w * 0.5 { w } else { -w };
            [
                if copy & 1 != 0 {
                    toward(pos[0], wx)
                } else {
                    0.0
                },
                if copy & 2 != 0 {
                    toward(pos[1], wy)
                } else {
                    0.0
                },
            ]
        }
        _ => [0.0, 0.0],
    }
}

/// A world point → pixels (x right, y down; pixel centres at k + 0.5).
#[inline(always)]
fn to_pixels(p: &SplatParams, w: [f32; 2]) -> [f32; 2] {
    let u = (w[0] - p.view_min[0]) / p.view_size[0];
    let v = (w[1] - p.view_min[1]) / p.view_size[1];
    [u * p.viewport[0], (1.0 - v) * p.viewport[1]]
}

/// As splat.wgsl's `colour_of`: the map's colour at the agent's value by mode, or the fixed one.
#[inline(always)]
fn colour_of(p: &SplatParams, lut: &[[f32; 3]], speed: f32, heading: f32, value: f32) -> [f32; 3] {
    if p.mode == 3 && p.fixed[3] > 0.5 {
        return [p.fixed[0], p.fixed[1], p.fixed[2]];
    }
    let span = (p.range[1] - p.range[0]).max(1e-20);
    let t = match p.mode {
        0 => (speed - p.range[0]) / span,
        1 => heading / TAU + 0.5,
        2 => (value - p.range[0]) / span,
        4 => {
            let turn = heading - p.mean_heading;
            let deg = (turn - TAU * (turn / TAU).round_ties_even()) * 57.295_78;
            (deg - p.range[0]) / span
        }
        5 => value,
        _ => 0.75,
    };
    // The texel coordinate the shader samples at, between texel centres (clamped at the ends).
    let x = if t.is_nan() {
        0.0
    } else {
        t.clamp(0.0, 1.0) * 255.0
    };
    let i = (x.floor() as usize).min(lut.len() - 1);
    let j = (i + 1).min(lut.len() - 1);
    let f = x - i as f32;
    let (a, b) = (lut[i], lut[j]);
    [
        a[0] + (b[0] - a[0]) * f,
        a[1] + (b[1] - a[1]) * f,
        a[2] + (b[2] - a[2]) * f,
    ]
}

/// The crowd grid's counts: one per agent image inside the frame, in its 8×8 cell (splat.wgsl's
/// `cs_count`). Each thread counts its agents into a grid of its own; the grids are summed.
fn crowd_counts(p: &SplatParams, frame: &Frame, n: usize, cells: [u32; 2]) -> Vec<u32> {
    let chunks = par::split(n, 16384);
    let parts = par::map(&chunks, |r| {
        #[cfg(target_arch = "x86_64")]
        if super::avx2() {
            // SAFETY: the CPU has AVX2 (checked at run time by `avx2`).
            return unsafe { count_avx2(p, frame, n, cells, r.clone()) };
        }
        count(p, frame, n, cells, r.clone())
    });
    let mut parts = parts.into_iter();
    let mut counts = parts.next().unwrap_or_default();
    for part in parts {
        for (c, k) in counts.iter_mut().zip(part) {
            *c += k;
        }
    }
    counts
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn count_avx2(
    p: &SplatParams,
    frame: &Frame,
    n: usize,
    cells: [u32; 2],
    agents: std::ops::Range<usize>,
) -> Vec<u32> {
    count(p, frame, n, cells, agents)
}

#[inline(always)]
fn count(
    p: &SplatParams,
    frame: &Frame,
    n: usize,
    cells: [u32; 2],
    agents: std::ops::Range<usize>,
) -> Vec<u32> {
    let mut counts = vec![0u32; cells[0] as usize * cells[1] as usize];
    for i in agents {
        let pos = [frame.pos[i], frame.pos[n + i]];
        if pos[0].is_nan() || pos[1].is_nan() {
            continue;
        }
        for copy in 0..p.copies {
            let s = copy_shift(p, copy, pos);
            let px = to_pixels(p, [pos[0] + s[0], pos[1] + s[1]]);
            let inside =
                px[0] >= 0.0 && px[1] >= 0.0 && px[0] <= p.viewport[0] && px[1] <= p.viewport[1];
            if inside {
                let cx = ((px[0] / CELL).floor() as i64).clamp(0, cells[0] as i64 - 1);
                let cy = ((px[1] / CELL).floor() as i64).clamp(0, cells[1] as i64 - 1);
                counts[cy as usize * cells[0] as usize + cx as usize] += 1;
            }
        }
    }
    counts
}

/// The crowd share at pixel `px` (splat.wgsl's `share_at`).
#[inline(always)]
fn share_at(p: &SplatParams, counts: &[u32], cells: [u32; 2], px: [f32; 2]) -> f32 {
    if p.stacking <= 0.0 {
        return 1.0;
    }
    let (w, h) = (cells[0] as i64, cells[1] as i64);
    let fx = px[0] / CELL - 0.5;
    let fy = px[1] / CELL - 0.5;
    let (bx, by) = (fx.floor(), fy.floor());
    let (tx, ty) = (fx - bx, fy - by);
    let at = |x: i64, y: i64| counts[(y.clamp(0, h - 1) * w + x.clamp(0, w - 1)) as usize] as f32;
    let (x0, y0) = (bx as i64, by as i64);
    let top = at(x0, y0) + (at(x0 + 1, y0) - at(x0, y0)) * tx;
    let bottom = at(x0, y0 + 1) + (at(x0 + 1, y0 + 1) - at(x0, y0 + 1)) * tx;
    let count = top + (bottom - top) * ty;
    (count * p.stack_area).max(1.0).powf(-p.stacking)
}

/// Every agent image whose sprite reaches the frame, with its light: the images the GPU's
/// splat deposits (its nearest pixel within the guard band of `guard` pixels).
pub(super) fn dots(
    p: &SplatParams,
    lut: &[[f32; 3]],
    values: Option<&[f32]>,
    frame: &Frame,
    dim: usize,
    guard: u32,
) -> Vec<Dot> {
    let n = frame.agents(dim);
    let cells = [
        (p.viewport[0] as u32).div_ceil(CELL as u32).max(1),
        (p.viewport[1] as u32).div_ceil(CELL as u32).max(1),
    ];
    let counts = if p.stacking > 0.0 {
        crowd_counts(p, frame, n, cells)
    } else {
        Vec::new()
    };
    let g = guard as f32;
    let (lo_x, hi_x) = (1.0 - g, p.viewport[0] + g - 2.0);
    let (lo_y, hi_y) = (1.0 - g, p.viewport[1] + g - 2.0);
    let chunks = par::split(n, 4096);
    let bounds = [lo_x, hi_x, lo_y, hi_y];
    let parts = par::map(&chunks, |range| {
        let job = DotsJob {
            p,
            lut,
            values,
            frame,
            n,
            counts: &counts,
            cells,
            bounds,
        };
        #[cfg(target_arch = "x86_64")]
        if super::avx2() {
            // SAFETY: the CPU has AVX2 (checked at run time by `avx2`).
            return unsafe { dots_avx2(&job, range.clone()) };
        }
        dots_of(&job, range.clone())
    });
    parts.concat()
}

/// What [`dots_of`] reads.
struct DotsJob<'a> {
    p: &'a SplatParams,
    lut: &'a [[f32; 3]],
    values: Option<&'a [f32]>,
    frame: &'a Frame,
    n: usize,
    counts: &'a [u32],
    cells: [u32; 2],
    /// The nearest pixel's least and greatest x, then y.
    bounds: [f32; 4],
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn dots_avx2(job: &DotsJob, agents: std::ops::Range<usize>) -> Vec<Dot> {
    dots_of(job, agents)
}

/// The dots of agents `agents`.
#[inline(always)]
fn dots_of(job: &DotsJob, agents: std::ops::Range<usize>) -> Vec<Dot> {
    let DotsJob {
        p,
        lut,
        values,
        frame,
        n,
        counts,
        cells,
        bounds: [lo_x, hi_x, lo_y, hi_y],
    } = *job;
    {
        let mut out = Vec::with_capacity(agents.len());
        for i in agents {
            let pos = [frame.pos[i], frame.pos[n + i]];
            if pos[0].is_nan() || pos[1].is_nan() {
                continue;
            }
            let vel = [frame.vel[i], frame.vel[n + i]];
            let value = values.and_then(|v| v.get(i)).copied().unwrap_or(0.0);
            let mut colour: Option<[f32; 3]> = None;
            for copy in 0..p.copies {
                let s = copy_shift(p, copy, pos);
                let [x, y] = to_pixels(p, [pos[0] + s[0], pos[1] + s[1]]);
                let (nx, ny) = (x.floor(), y.floor());
                if !(nx >= lo_x && nx <= hi_x && ny >= lo_y && ny <= hi_y) {
                    continue;
                }
                let c = *colour.get_or_insert_with(|| {
                    let speed = (vel[0] * vel[0] + vel[1] * vel[1]).sqrt();
                    let c = colour_of(p, lut, speed, vel[1].atan2(vel[0]), value);
                    [c[0] * p.intensity, c[1] * p.intensity, c[2] * p.intensity]
                });
                let share = share_at(p, counts, cells, [x, y]);
                out.push(Dot {
                    x,
                    y,
                    light: [c[0] * share, c[1] * share, c[2] * share, p.intensity],
                });
            }
        }
        out
    }
}

/// `dots` ordered by the row of their nearest pixel (a counting sort: within a row, in the
/// order they came), and where each row's dots start: `starts[k]` for row k − `guard`, one
/// more entry at the end. Stamped in this order, consecutive sprites touch neighbouring rows
/// of the image, which stay in the cache.
pub(super) fn by_row(dots: &[Dot], h: usize, guard: usize) -> (Vec<Dot>, Vec<usize>) {
    let rows = h + 2 * guard;
    let key = |d: &Dot| ((d.y.floor() as i64 + guard as i64).clamp(0, rows as i64 - 1)) as usize;
    let mut starts = vec![0usize; rows + 1];
    for d in dots {
        starts[key(d) + 1] += 1;
    }
    for k in 0..rows {
        starts[k + 1] += starts[k];
    }
    let mut next = starts.clone();
    let mut out = vec![
        Dot {
            x: 0.0,
            y: 0.0,
            light: [0.0; 4],
        };
        dots.len()
    ];
    for d in dots {
        let k = key(d);
        out[next[k]] = *d;
        next[k] += 1;
    }
    (out, starts)
}

/// The dots of `sorted` (ordered by [`by_row`], `starts` its row starts) whose sprites reach
/// rows `rows` of the frame: those whose nearest row lies within `reach` of them.
pub(super) fn reaching<'a>(
    sorted: &'a [Dot],
    starts: &[usize],
    guard: usize,
    rows: &std::ops::Range<usize>,
    reach: usize,
) -> &'a [Dot] {
    let last = starts.len() - 1;
    let lo = (rows.start + guard).saturating_sub(reach).min(last);
    let hi = (rows.end + guard + reach).min(last);
    &sorted[starts[lo]..starts[hi]]
}

/// One axis of a sprite at sub-pixel offset `t` (−½..½ from its nearest pixel's centre): the
/// B-spline splat's three weights through `taps` (centred), `2 m + 3` values from the nearest
/// pixel − m − 1 on, `m` the widest taps' half-width.
#[inline(always)]
fn profile(t: f32, taps: &[f32], m: usize, out: &mut [f32]) {
    let (a, b) = (0.5 - t, 0.5 + t);
    let w = [0.5 * a * a, 0.75 - t * t, 0.5 * b * b];
    let half = (taps.len() - 1) / 2;
    for (k, o) in out.iter_mut().enumerate() {
        // Pixel offset from the nearest one.
        let i = k as i64 - m as i64 - 1;
        let mut v = 0.0;
        for (c, wc) in w.iter().enumerate() {
            let j = i - (c as i64 - 1);
            if j.unsigned_abs() as usize <= half {
                v += wc * taps[(j + half as i64) as usize];
            }
        }
        *o = v;
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

#[inline(always)]
fn stamp_generic(
    hdr: &mut [[f32; 4]],
    rows: std::ops::Range<usize>,
    width: usize,
    dots: &[Dot],
    kernel: &Kernel,
    scissor: [f32; 4],
) {
    let m = kernel.core_taps().max(kernel.halo_taps()) as usize;
    let span = 2 * m + 3;
    let mut cx = vec![0.0f32; span];
    let mut hx = vec![0.0f32; span];
    let mut cy = vec![0.0f32; span];
    let mut hy = vec![0.0f32; span];
    // The horizontal profiles times the dot's light, four floats a pixel as the image holds
    // them: each row of the sprite is then two multiply-adds a float.
    let mut cl = vec![0.0f32; 4 * span];
    let mut hl = vec![0.0f32; 4 * span];
    // Pixels whose centres lie inside the scissor rectangle.
    let x_lo = (scissor[0] - 0.5).ceil().max(0.0) as i64;
    let x_hi = ((scissor[2] - 0.5).ceil() as i64).min(width as i64);
    let y_lo = ((scissor[1] - 0.5).ceil().max(0.0) as i64).max(rows.start as i64);
    let y_hi = ((scissor[3] - 0.5).ceil() as i64).min(rows.end as i64);
    let first = rows.start;
    let flat_hdr: &mut [f32] = bytemuck::cast_slice_mut(hdr);
    for d in dots {
        let (nx, ny) = (d.x.floor(), d.y.floor());
        let (x0, y0) = (nx as i64 - m as i64 - 1, ny as i64 - m as i64 - 1);
        let (rx0, rx1) = (x0.max(x_lo), (x0 + span as i64).min(x_hi));
        let (ry0, ry1) = (y0.max(y_lo), (y0 + span as i64).min(y_hi));
        if rx0 >= rx1 || ry0 >= ry1 {
            continue;
        }
        profile(d.x - nx - 0.5, &kernel.core, m, &mut cx);
        profile(d.x - nx - 0.5, &kernel.halo, m, &mut hx);
        profile(d.y - ny - 0.5, &kernel.core, m, &mut cy);
        profile(d.y - ny - 0.5, &kernel.halo, m, &mut hy);
        let (i0, i1) = ((rx0 - x0) as usize, (rx1 - x0) as usize);
        let n = 4 * (i1 - i0);
        for i in i0..i1 {
            for k in 0..4 {
                cl[4 * (i - i0) + k] = cx[i] * d.light[k];
                hl[4 * (i - i0) + k] = hx[i] * d.light[k];
            }
        }
        let (cl, hl) = (&cl[..n], &hl[..n]);
        for ry in ry0..ry1 {
            let j = (ry - y0) as usize;
            let (c, h) = (cy[j], hy[j]);
            let at = 4 * ((ry as usize - first) * width + rx0 as usize);
            let px = &mut flat_hdr[at..at + n];
            for k in 0..n {
                px[k] += c * cl[k] + h * hl[k];
            }
        }
    }
}

fn flat(v: &[[f32; 4]]) -> &[f32] {
    bytemuck::cast_slice(v)
}

/// Rows of the frame filtered at a time by one thread in [`filtered`] (the row-filtered strip
/// stays in the cache for the column filter).
const STRIP: usize = 32;

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
/// splatted by its B-spline weights into an accumulation image with a guard band, whose rows
/// and then columns are filtered by the kernel's taps; the light lands in `hdr` (`w`×`h`)
/// within the scissor. O(dots + pixels): the way for crowds too many to stamp one by one.
pub(super) fn filtered(
    hdr: &mut [[f32; 4]],
    w: usize,
    h: usize,
    dots: &[Dot],
    kernel: &Kernel,
    scissor: [f32; 4],
    accum: &mut Vec<[f32; 4]>,
) {
    let g = kernel.reach() as usize;
    let (pw, ph) = (w + 2 * g, h + 2 * g);
    accum.clear();
    accum.resize(pw * ph, [0.0; 4]);
    // The splat, each band of the padded rows on its own thread, over the dots that reach it.
    let (sorted, starts) = by_row(dots, h, g);
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
    let (mc, mh) = (kernel.core_taps() as usize, kernel.halo_taps() as usize);
    let x_lo = ((scissor[0] - 0.5).ceil().max(0.0) as usize).min(w);
    let x_hi = (((scissor[2] - 0.5).ceil()).max(0.0) as usize).min(w);
    let y_lo = (scissor[1] - 0.5).ceil().max(0.0) as usize;
    let y_hi = ((scissor[3] - 0.5).ceil()).max(0.0) as usize;
    let accum = &accum[..];
    par::bands(hdr, w, |rows, band| {
        let mut core = vec![[0.0f32; 4]; (STRIP + 2 * g) * w];
        let mut halo = vec![[0.0f32; 4]; (STRIP + 2 * g) * w];
        let mut light = vec![[0.0f32; 4]; w];
        let mut y0 = rows.start;
        while y0 < rows.end {
            let y1 = (y0 + STRIP).min(rows.end);
            // Rows of the padded image the strip's columns read: y0 + g − m .. y1 + g + m.
            let n = y1 - y0 + 2 * g;
            for r in 0..n {
                let src = &accum[(y0 + r) * pw..(y0 + r + 1) * pw];
                let (c, hl) = (&mut core[r * w..(r + 1) * w], &mut halo[r * w..(r + 1) * w]);
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
            for y in y0..y1 {
                if y < y_lo || y >= y_hi || x_lo >= x_hi {
                    continue;
                }
                light.fill([0.0; 4]);
                let l = bytemuck::cast_slice_mut(&mut light);
                // Output row y is padded row y + g: strip row y − y0 + g.
                let mid = y - y0 + g;
                for (k, &t) in kernel.core.iter().enumerate() {
                    let r = mid + k - mc;
                    axpy(l, flat(&core[r * w..(r + 1) * w]), t);
                }
                for (k, &t) in kernel.halo.iter().enumerate() {
                    let r = mid + k - mh;
                    axpy(l, flat(&halo[r * w..(r + 1) * w]), t);
                }
                let out = &mut band[(y - rows.start) * w..(y - rows.start + 1) * w];
                for (o, l) in out[x_lo..x_hi].iter_mut().zip(&light[x_lo..x_hi]) {
                    for c in 0..4 {
                        o[c] += l[c];
                    }
                }
            }
            y0 = y1;
        }
    });
}

/// Whether [`filtered`] costs less than [`stamp`] for `dots` dots on a `w`×`h` frame: a
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
