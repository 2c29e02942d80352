//! Bloom on the CPU: the mip chain of shaders/bloom.wgsl (bright pass and downsamples, then
//! upsamples blended back up), each texel at its centre's uv as the full-screen passes shade
//! it, every tap a bilinear sample clamped at the edges as the linear sampler reads it. The
//! texels and weights of each tap are worked out once per column and per row, and each
//! destination row interpolates the source along y once per tap row.

use super::par;
use crate::render::bloom::{BloomParams, Chain};

/// An RGBA image of `w`×`h` texels.
#[derive(Clone, Debug, Default)]
pub(super) struct Image {
    pub w: usize,
    pub h: usize,
    pub px: Vec<[f32; 4]>,
}

impl Image {
    pub fn new(w: usize, h: usize) -> Image {
        Image {
            w,
            h,
            px: vec![[0.0; 4]; w * h],
        }
    }
}

/// A bilinear tap along one axis: the texels either side and the weight of the second.
#[derive(Clone, Copy, Debug)]
struct Tap {
    a: u32,
    b: u32,
    f: f32,
}

/// The tap `off` source texels from the centre of each of `dst` texels, in a source `src`
/// texels long (clamped to its edges, as the sampler clamps).
fn axis(dst: usize, src: usize, off: f32) -> Vec<Tap> {
    let hi = src as i64 - 1;
    (0..dst)
        .map(|i| {
            let u = (i as f32 + 0.5) / dst as f32;
            let s = (u + off / src as f32) * src as f32 - 0.5;
            let f = s.floor();
            Tap {
                a: (f as i64).clamp(0, hi) as u32,
                b: (f as i64 + 1).clamp(0, hi) as u32,
                f: s - f,
            }
        })
        .collect()
}

/// Filters `src` into `dst`: each texel the sum of `taps` — (x offset, y offset, weight), in
/// source texels — of the bilinear samples, each through `each` first. Blends into what `dst`
/// holds by `blend` (1: replaces it).
fn filter(
    src: &Image,
    dst: &mut Image,
    taps: &[(f32, f32, f32)],
    each: impl Fn([f32; 3]) -> [f32; 3] + Sync,
    blend: f32,
) {
    let mut xs: Vec<f32> = Vec::new();
    let mut ys: Vec<f32> = Vec::new();
    for &(x, y, _) in taps {
        if !xs.contains(&x) {
            xs.push(x);
        }
        if !ys.contains(&y) {
            ys.push(y);
        }
    }
    let tx: Vec<Vec<Tap>> = xs.iter().map(|&o| axis(dst.w, src.w, o)).collect();
    let ty: Vec<Vec<Tap>> = ys.iter().map(|&o| axis(dst.h, src.h, o)).collect();
    let plan: Vec<(usize, usize, f32)> = taps
        .iter()
        .map(|&(x, y, w)| {
            let i = xs.iter().position(|&v| v == x).expect("listed");
            let j = ys.iter().position(|&v| v == y).expect("listed");
            (i, j, w)
        })
        .collect();
    let w = dst.w;
    let sw = src.w;
    par::bands(&mut dst.px, w, |rows, band| {
        // Per row of `dst`: the source interpolated along y at each y offset, then each tap
        // interpolated along x from those rows.
        let mut lines = vec![[0.0f32; 3]; ys.len() * sw];
        let mut sums = vec![[0.0f32; 3]; w];
        for (j, y) in rows.enumerate() {
            for (iy, t) in ty.iter().enumerate() {
                let c = t[y];
                let (r0, r1) = (
                    &src.px[c.a as usize * sw..][..sw],
                    &src.px[c.b as usize * sw..][..sw],
                );
                let line = &mut lines[iy * sw..(iy + 1) * sw];
                for x in 0..sw {
                    let (p, q) = (r0[x], r1[x]);
                    line[x] = [
                        p[0] + (q[0] - p[0]) * c.f,
                        p[1] + (q[1] - p[1]) * c.f,
                        p[2] + (q[2] - p[2]) * c.f,
                    ];
                }
            }
            // Tap by tap over the row (each pixel sums its taps in the same order).
            sums.fill([0.0; 3]);
            for &(ix, iy, wt) in &plan {
                let line = &lines[iy * sw..(iy + 1) * sw];
                for (o, cx) in sums.iter_mut().zip(&tx[ix]) {
                    let (p, q) = (line[cx.a as usize], line[cx.b as usize]);
                    let s = each([
                        p[0] + (q[0] - p[0]) * cx.f,
                        p[1] + (q[1] - p[1]) * cx.f,
                        p[2] + (q[2] - p[2]) * cx.f,
                    ]);
                    o[0] += s[0] * wt;
                    o[1] += s[1] * wt;
                    o[2] += s[2] * wt;
                }
            }
            let row = &mut band[j * w..(j + 1) * w];
            for (d, o) in row.iter_mut().zip(&sums) {
                if blend == 1.0 {
                    *d = [o[0], o[1], o[2], 1.0];
                } else {
                    for k in 0..3 {
                        d[k] = d[k] * (1.0 - blend) + o[k] * blend;
                    }
                    d[3] = d[3] * (1.0 - blend) + blend;
                }
            }
        }
    });
}

/// Soft-knee bright pass (bloom.wgsl's `bright`).
#[inline(always)]
fn bright(c: [f32; 3]) -> [f32; 3] {
    let p = BloomParams::DEFAULT;
    let l = c[0] * 0.2126 + c[1] * 0.7152 + c[2] * 0.0722;
    let soft = (l - p.threshold + p.knee).clamp(0.0, 2.0 * p.knee);
    let soft2 = soft * soft / (4.0 * p.knee + 1e-5);
    let w = soft2.max(l - p.threshold) / l.max(1e-5);
    [c[0] * w, c[1] * w, c[2] * w]
}

#[inline(always)]
fn same(c: [f32; 3]) -> [f32; 3] {
    c
}

/// The chain for one frame size: its mips, and which of them the tone map reads.
pub(super) struct Bloom {
    chain: Chain,
    mips: Vec<Image>,
    /// The blocks [`quarter`] weighs, filled by the frame's strips ([`block_row`]).
    blocks: Vec<[f32; 4]>,
}

impl Bloom {
    pub fn new(width: u32, height: u32, radius: f32) -> Bloom {
        let chain = Chain::plan(width, height, radius);
        let mips = (0..chain.mips)
            .map(|m| {
                Image::new(
                    (chain.size[0] >> m).max(1) as usize,
                    (chain.size[1] >> m).max(1) as usize,
                )
            })
            .collect();
        Bloom {
            chain,
            mips,
            blocks: Vec::new(),
        }
    }

    /// Whether the first downsample of a `w`×`h` frame is [`quarter`]'s: the frame's strips
    /// then fill [`Bloom::blocks`] as they are drawn, and [`Bloom::run`] reads them, not the
    /// frame.
    pub fn takes_blocks(&self, w: usize, h: usize) -> bool {
        let first = &self.mips[0];
        self.chain.start == 1 && w == 4 * first.w && h == 4 * first.h
    }

    /// The blocks of a `w`×`h` frame ([`blocks_size`]), to fill.
    pub fn blocks(&mut self, w: usize, h: usize) -> &mut [[f32; 4]] {
        let (bw, bh) = blocks_size(w, h);
        self.blocks.resize(bw * bh, [0.0; 4]);
        &mut self.blocks
    }

    /// The glow of the frame: the mip the tone map samples. `hdr`: the frame's light, where
    /// it does not take blocks (none if it does: the blocks are filled).
    pub fn run(&mut self, hdr: Option<&Image>) -> &Image {
        match hdr {
            Some(hdr) if !self.takes_blocks(hdr.w, hdr.h) => self.first_from(hdr),
            _ => {
                let bw = 2 * self.mips[0].w + 2;
                quarter(&self.blocks, bw, &mut self.mips[0]);
            }
        }
        self.rest()
    }

    /// The first mip from the frame's light (no blocks).
    fn first_from(&mut self, hdr: &Image) {
        let first = &mut self.mips[0];
        if self.chain.start == 1 {
            // 16 taps, (1, 3, 3, 1)/8 each way, each through the bright pass.
            let mut taps = Vec::new();
            for (j, wy) in [1.0f32, 3.0, 3.0, 1.0].iter().enumerate() {
                for (i, wx) in [1.0f32, 3.0, 3.0, 1.0].iter().enumerate() {
                    let (x, y) = ((2 * i) as f32 - 3.0, (2 * j) as f32 - 3.0);
                    taps.push((x, y, wx * wy / 64.0));
                }
            }
            filter(hdr, first, &taps, bright, 1.0);
        } else {
            // 5 taps, then the bright pass on their sum.
            let taps = [
                (0.0, 0.0, 0.5),
                (-1.0, -1.0, 0.125),
                (1.0, -1.0, 0.125),
                (-1.0, 1.0, 0.125),
                (1.0, 1.0, 0.125),
            ];
            filter(hdr, first, &taps, same, 1.0);
            for p in &mut first.px {
                let b = bright([p[0], p[1], p[2]]);
                *p = [b[0], b[1], b[2], 1.0];
            }
        }
    }

    /// The downsamples after the first, then the upsamples blended back up.
    fn rest(&mut self) -> &Image {
        let r = std::f32::consts::SQRT_2;
        let down = [
            (0.0, 0.0, 0.125),
            (-r, -r, 0.03125),
            (r, -r, 0.03125),
            (-r, r, 0.03125),
            (r, r, 0.03125),
            (0.0, -2.0, 0.0625),
            (-2.0, 0.0, 0.0625),
            (2.0, 0.0, 0.0625),
            (0.0, 2.0, 0.0625),
            (-1.0, -1.0, 0.125),
            (1.0, -1.0, 0.125),
            (-1.0, 1.0, 0.125),
            (1.0, 1.0, 0.125),
        ];
        for m in 1..self.mips.len() {
            let (done, rest) = self.mips.split_at_mut(m);
            filter(&done[m - 1], &mut rest[0], &down, same, 1.0);
        }
        let t = BloomParams::DEFAULT.radius;
        let q = t * std::f32::consts::FRAC_1_SQRT_2;
        let ring = 0.09375;
        let up = [
            (0.0, 0.0, 0.25),
            (-t, 0.0, ring),
            (t, 0.0, ring),
            (0.0, -t, ring),
            (0.0, t, ring),
            (-q, -q, ring),
            (q, -q, ring),
            (-q, q, ring),
            (q, q, ring),
        ];
        let hidden = self.chain.hidden as usize;
        for m in (hidden..self.mips.len() - 1).rev() {
            let a = self.chain.blend[m - hidden];
            let (lo, hi) = self.mips.split_at_mut(m + 1);
            filter(&hi[0], &mut lo[m], &up, same, a);
        }
        &self.mips[hidden]
    }
}

/// The first downsample to a quarter (`fs_downsample_quarter`) where the frame is exactly four
/// times the mip each way: each of its 16 taps then falls on a corner between pixels, so it is
/// the mean of a 2×2 block (taken through the bright pass), and the blocks it reads are those
/// of the half-size grid, 2X − 1 .. 2X + 2 each way. The blocks are bright-passed once, as the
/// frame's strips are drawn ([`block_row`], with a border of the blocks the edge clamp makes),
/// then weighed (1, 3, 3, 1)/8 along x and along y here.
fn quarter(blocks: &[[f32; 4]], bw: usize, dst: &mut Image) {
    let dw = dst.w;
    let weights = [1.0f32, 3.0, 3.0, 1.0];
    par::bands(&mut dst.px, dw, |rows, band| {
        for (j, y) in rows.enumerate() {
            for x in 0..dw {
                let mut o = [0.0f32; 3];
                for (dj, wy) in weights.iter().enumerate() {
                    // Block 2y − 1 + dj of the half grid is row 2y + dj of `blocks`.
                    let row = &blocks[(2 * y + dj) * bw..];
                    let mut line = [0.0f32; 3];
                    for (di, wx) in weights.iter().enumerate() {
                        let b = &row[2 * x + di];
                        for k in 0..3 {
                            line[k] += b[k] * wx;
                        }
                    }
                    for k in 0..3 {
                        o[k] += line[k] * wy;
                    }
                }
                band[j * dw + x] = [o[0] / 64.0, o[1] / 64.0, o[2] / 64.0, 1.0];
            }
        }
    });
}

/// The blocks' size for a `w`×`h` frame: the half-size grid and a block each side.
pub(super) fn blocks_size(w: usize, h: usize) -> (usize, usize) {
    (w / 2 + 2, h / 2 + 2)
}

/// One row of [`quarter`]'s blocks, from the two rows of the frame it covers (`top`, `bottom`,
/// `w` pixels each): block a holds pixels 2(a − 1) and 2(a − 1) + 1 of each (clamped to the
/// frame), averaged as bilinear taps at the corner between them, then bright-passed.
pub(super) fn block_row(top: &[[f32; 4]], bottom: &[[f32; 4]], out: &mut [[f32; 4]]) {
    #[cfg(target_arch = "x86_64")]
    if super::avx2() {
        // SAFETY: the CPU has AVX2 (checked at run time by `avx2`).
        unsafe { block_row_avx2(top, bottom, out) };
        return;
    }
    block_row_generic(top, bottom, out)
}

/// [`block_row`] two blocks a register: a block's four channels in one half, its two pixels of
/// each row split out of the row's four by lane permutes, then [`bright`]'s arithmetic in its
/// order, each half's luminance spread over its lanes. The same values for finite light; the
/// blocks at the edges (the clamp) and an odd one left over by the scalar code.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn block_row_avx2(top: &[[f32; 4]], bottom: &[[f32; 4]], out: &mut [[f32; 4]]) {
    use std::arch::x86_64::*;
    let w = top.len();
    let n = out.len();
    // Blocks 1..=w/2 read pixels 2a − 2 and 2a − 1, inside the frame; two at a time.
    let hi = (w / 2 + 1).min(n);
    let pairs = if hi > 1 { (hi - 1) / 2 } else { 0 };
    let p = BloomParams::DEFAULT;
    let splat = _mm256_set1_ps;
    let (threshold, knee) = (splat(p.threshold), splat(p.knee));
    let (two_knee, over) = (splat(2.0 * p.knee), splat(4.0 * p.knee + 1e-5));
    let weights = _mm256_setr_ps(0.2126, 0.7152, 0.0722, 0.0, 0.2126, 0.7152, 0.0722, 0.0);
    let half = splat(0.5);
    let zero = _mm256_setzero_ps();
    let row = |s: &[[f32; 4]], x: usize| {
        // SAFETY: pixels x..x + 4 lie in the row (x + 4 ≤ 2·(w/2) ≤ w).
        unsafe {
            let f = s.as_ptr().add(x) as *const f32;
            let (a, b) = (_mm256_loadu_ps(f), _mm256_loadu_ps(f.add(8)));
            (
                _mm256_permute2f128_ps::<0x20>(a, b),
                _mm256_permute2f128_ps::<0x31>(a, b),
            )
        }
    };
    for k in 0..pairs {
        let a = 1 + 2 * k;
        let x = 2 * a - 2;
        let (p, q) = row(top, x);
        let (r, t) = row(bottom, x);
        let upper = _mm256_add_ps(p, _mm256_mul_ps(_mm256_sub_ps(q, p), half));
        let lower = _mm256_add_ps(r, _mm256_mul_ps(_mm256_sub_ps(t, r), half));
        let c = _mm256_add_ps(upper, _mm256_mul_ps(_mm256_sub_ps(lower, upper), half));
        // (r·0.2126 + g·0.7152) + b·0.0722 in each half's first lane, then in all four.
        let m = _mm256_mul_ps(c, weights);
        let l = _mm256_add_ps(
            _mm256_add_ps(m, _mm256_permute_ps::<0b10_11_00_01>(m)),
            _mm256_permute_ps::<0b10_10_10_10>(m),
        );
        let l = _mm256_permute_ps::<0>(l);
        let soft = _mm256_add_ps(_mm256_sub_ps(l, threshold), knee);
        let soft = _mm256_min_ps(_mm256_max_ps(soft, zero), two_knee);
        let soft2 = _mm256_div_ps(_mm256_mul_ps(soft, soft), over);
        let wt = _mm256_div_ps(
            _mm256_max_ps(soft2, _mm256_sub_ps(l, threshold)),
            _mm256_max_ps(l, splat(1e-5)),
        );
        let v = _mm256_blend_ps::<0b1000_1000>(_mm256_mul_ps(c, wt), zero);
        // SAFETY: blocks a and a + 1 lie in `out` (a + 1 < hi ≤ n).
        unsafe { _mm256_storeu_ps(out.as_mut_ptr().add(a) as *mut f32, v) };
    }
    // The rest: block 0, an odd block left over, the clamped blocks past w/2.
    let done = 1..1 + 2 * pairs;
    for (a, o) in out.iter_mut().enumerate() {
        if !done.contains(&a) {
            *o = block_at(top, bottom, a);
        }
    }
}

/// [`block_row`] one block at a time.
fn block_row_generic(top: &[[f32; 4]], bottom: &[[f32; 4]], out: &mut [[f32; 4]]) {
    for (a, o) in out.iter_mut().enumerate() {
        *o = block_at(top, bottom, a);
    }
}

/// Block `a` of a row: pixels 2(a − 1) and 2(a − 1) + 1 of `top` and `bottom` (clamped to the
/// frame), averaged as bilinear taps at the corner between them, then bright-passed.
#[inline(always)]
fn block_at(top: &[[f32; 4]], bottom: &[[f32; 4]], a: usize) -> [f32; 4] {
    let w = top.len() as i64;
    let x0 = (2 * a as i64 - 2).clamp(0, w - 1) as usize;
    let x1 = (2 * a as i64 - 1).clamp(0, w - 1) as usize;
    let (p, q, r, t) = (&top[x0], &top[x1], &bottom[x0], &bottom[x1]);
    let mut c = [0.0f32; 3];
    for k in 0..3 {
        let upper = p[k] + (q[k] - p[k]) * 0.5;
        let lower = r[k] + (t[k] - r[k]) * 0.5;
        c[k] = upper + (lower - upper) * 0.5;
    }
    let c = bright(c);
    [c[0], c[1], c[2], 0.0]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two blocks a register give the scalar blocks' values, for rows of every width to 41
    /// (odd and even, block counts short of and past the frame's) and light from dark to bright.
    #[test]
    fn the_vector_blocks_are_the_scalar_ones() {
        #[cfg(target_arch = "x86_64")]
        if super::super::avx2() {
            let mut z = 7u32;
            let mut next = || {
                z = crate::render::yuv::pcg(z);
                (z >> 8) as f32 / (1u32 << 24) as f32 * 3.0
            };
            for w in 1..42 {
                let mut row = || (0..w).map(|_| [next(), next(), next(), next()]).collect();
                let (top, bottom): (Vec<[f32; 4]>, Vec<[f32; 4]>) = (row(), row());
                for n in [w / 2 + 1, w / 2 + 2, w / 2, 1] {
                    let mut want = vec![[9.0f32; 4]; n];
                    block_row_generic(&top, &bottom, &mut want);
                    let mut got = vec![[9.0f32; 4]; n];
                    // SAFETY: the CPU has AVX2 (checked above).
                    unsafe { block_row_avx2(&top, &bottom, &mut got) };
                    assert_eq!(got, want, "width {w}, {n} blocks");
                }
            }
        }
    }
}
