//! Display colours → Y'CbCr codes on the CPU, as shaders/ycbcr.wgsl writes them: BT.709 luma
//! and chroma (the mean of each 2×2 block, or pair for 4:2:2), the column dither, rounded and
//! clamped, stored as one or two bytes.

/// How a row's colours become codes: the depth's scale and range, and the dithers' phases
/// per column of each plane.
pub(super) struct Codes {
    pub scale: f32,
    pub most: f32,
    pub bytes: usize,
    pub luma: Vec<u32>,
    pub u: Vec<u32>,
    pub v: Vec<u32>,
}

/// A chroma row's depth, range, height and whether it averages two luma rows (4:2:0) or one.
struct Chroma {
    scale: f32,
    most: f32,
    two: bool,
    y: usize,
}

/// A row's R', G', B'.
pub(super) type Channels<'a> = [&'a [f32]; 3];

/// The rows a chroma row reads: the top row's R', G', B', then the bottom row's.
type Lines<'a> = [&'a [f32]; 6];

/// Chroma codes (ycbcr.wgsl's `chroma_codes`) of the mean R'G'B' of each 2×2 block (each
/// pair, for 4:2:2), rounded and clamped, into `cu`, `cv`.
#[inline(always)]
fn chroma_codes(c: &Chroma, l: Lines, pu: &[u32], pv: &[u32], cu: &mut [f32], cv: &mut [f32]) {
    let n = cu.len();
    let (cv, pu, pv) = (&mut cv[..n], &pu[..n], &pv[..n]);
    let [r0, g0, b0, r1, g1, b1] = l.map(|s| &s[..2 * n]);
    let k = if c.two { 0.25 } else { 0.5 };
    for x in 0..n {
        let (a, b) = (2 * x, 2 * x + 1);
        // ycbcr.wgsl: (a + b + c + d) · ¼, or (a + b) · ½.
        let (mut mr, mut mg, mut mb) = (r0[a] + r0[b], g0[a] + g0[b], b0[a] + b0[b]);
        if c.two {
            mr = mr + r1[a] + r1[b];
            mg = mg + g1[a] + g1[b];
            mb = mb + b1[a] + b1[b];
        }
        let (mr, mg, mb) = (mr * k, mg * k, mb * k);
        let yy = mr * 0.2126 + mg * 0.7152 + mb * 0.0722;
        let cb = c.scale * (128.0 + 224.0 * (mb - yy) / 1.8556) + dither(pu[x], c.y);
        let cr = c.scale * (128.0 + 224.0 * (mr - yy) / 1.5748) + dither(pv[x], c.y);
        cu[x] = cb.round_ties_even().clamp(0.0, c.most);
        cv[x] = cr.round_ties_even().clamp(0.0, c.most);
    }
}

/// [`chroma_codes`] eight codes at a time: each row's 16 values split into the blocks' left
/// and right columns, then the same sums in the same order, lane by lane.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn chroma_codes_avx2(c: &Chroma, l: Lines, pu: &[u32], pv: &[u32], cu: &mut [f32], cv: &mut [f32]) {
    use std::arch::x86_64::*;
    let n = cu.len();
    let (cv, pu, pv) = (&mut cv[..n], &pu[..n], &pv[..n]);
    let rows = l.map(|s| &s[..2 * n]);
    let whole = n / 8 * 8;
    let splat = _mm256_set1_ps;
    let k = splat(if c.two { 0.25 } else { 0.5 });
    let (scale, most) = (splat(c.scale), splat(c.most));
    let y = _mm256_set1_epi32(c.y as u32 as i32);
    // Pairs of 16 values → (left columns, right columns), each in order.
    let split = |s: &[f32], x: usize| {
        // SAFETY: x + 8 ≤ n, so values 2x..2x + 16 lie in the row's 2n.
        unsafe {
            let lo = _mm256_loadu_ps(s.as_ptr().add(2 * x));
            let hi = _mm256_loadu_ps(s.as_ptr().add(2 * x + 8));
            let left = _mm256_shuffle_ps::<0b10_00_10_00>(lo, hi);
            let right = _mm256_shuffle_ps::<0b11_01_11_01>(lo, hi);
            (
                _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(
                    left,
                ))),
                _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(
                    right,
                ))),
            )
        }
    };
    let dither = |phase: &[u32], x: usize| {
        // SAFETY: x + 8 ≤ n = phase.len().
        unsafe {
            let p = _mm256_loadu_si256(phase.as_ptr().add(x) as *const __m256i);
            let k = _mm256_and_si256(_mm256_add_epi32(y, p), _mm256_set1_epi32(3));
            let bits = _mm256_srlv_epi32(_mm256_set1_epi32(0xd8), _mm256_slli_epi32::<1>(k));
            let d = _mm256_cvtepi32_ps(_mm256_and_si256(bits, _mm256_set1_epi32(3)));
            _mm256_mul_ps(_mm256_sub_ps(d, splat(1.5)), splat(0.4))
        }
    };
    let code = |v: __m256| {
        let r = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(v);
        _mm256_min_ps(_mm256_max_ps(r, _mm256_setzero_ps()), most)
    };
    for x in (0..whole).step_by(8) {
        let mut m = [_mm256_setzero_ps(); 3];
        for (ch, mean) in m.iter_mut().enumerate() {
            let (a, b) = split(rows[ch], x);
            let mut s = _mm256_add_ps(a, b);
            if c.two {
                let (a1, b1) = split(rows[ch + 3], x);
                s = _mm256_add_ps(_mm256_add_ps(s, a1), b1);
            }
            *mean = _mm256_mul_ps(s, k);
        }
        let [mr, mg, mb] = m;
        let yy = _mm256_add_ps(
            _mm256_add_ps(
                _mm256_mul_ps(mr, splat(0.2126)),
                _mm256_mul_ps(mg, splat(0.7152)),
            ),
            _mm256_mul_ps(mb, splat(0.0722)),
        );
        let chroma = |m: __m256, over: f32, phase: &[u32]| {
            let d = _mm256_div_ps(
                _mm256_mul_ps(splat(224.0), _mm256_sub_ps(m, yy)),
                splat(over),
            );
            let v = _mm256_mul_ps(scale, _mm256_add_ps(splat(128.0), d));
            code(_mm256_add_ps(v, dither(phase, x)))
        };
        // SAFETY: x + 8 ≤ n = cu.len() = cv.len().
        unsafe {
            _mm256_storeu_ps(cu.as_mut_ptr().add(x), chroma(mb, 1.8556, pu));
            _mm256_storeu_ps(cv.as_mut_ptr().add(x), chroma(mr, 1.5748, pv));
        }
    }
    let tail = rows.map(|s| &s[2 * whole..]);
    chroma_codes(
        c,
        tail,
        &pu[whole..],
        &pv[whole..],
        &mut cu[whole..],
        &mut cv[whole..],
    );
}

/// Luma codes of a row (ycbcr.wgsl's `luma_code`), rounded and clamped.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn luma_codes(
    scale: f32,
    most: f32,
    r: &[f32],
    g: &[f32],
    b: &[f32],
    phase: &[u32],
    y: usize,
    codes: &mut [f32],
) {
    let n = codes.len();
    let (r, g, b, phase) = (&r[..n], &g[..n], &b[..n], &phase[..n]);
    for x in 0..n {
        let l = r[x] * 0.2126 + g[x] * 0.7152 + b[x] * 0.0722;
        let v = scale * (16.0 + 219.0 * l) + dither(phase[x], y);
        codes[x] = v.round_ties_even().clamp(0.0, most);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
fn luma_codes_avx2(
    scale: f32,
    most: f32,
    r: &[f32],
    g: &[f32],
    b: &[f32],
    phase: &[u32],
    y: usize,
    codes: &mut [f32],
) {
    luma_codes(scale, most, r, g, b, phase, y, codes)
}

/// `codes` (whole numbers) into `out`, `bytes` (one or two) each.
#[inline(always)]
// `max` then `min`, not `clamp`: `clamp` keeps a NaN, which the unchecked conversion must not see.
#[allow(clippy::manual_clamp)]
fn store_generic(bytes: usize, out: &mut [u8], codes: &[f32]) {
    if bytes == 2 {
        let n = codes.len().min(out.len() / 2);
        let (out, codes) = (&mut out[..2 * n], &codes[..n]);
        for i in 0..n {
            // SAFETY: `max` and `min` leave a finite value within 0..=65535 (NaN becomes 0).
            let c = unsafe { codes[i].max(0.0).min(65535.0).to_int_unchecked::<i32>() } as u16;
            let c = c.to_le_bytes();
            out[2 * i] = c[0];
            out[2 * i + 1] = c[1];
        }
    } else {
        let n = codes.len().min(out.len());
        let (out, codes) = (&mut out[..n], &codes[..n]);
        for i in 0..n {
            // SAFETY: `max` and `min` leave a finite value within 0..=255 (NaN becomes 0).
            out[i] = unsafe { codes[i].max(0.0).min(255.0).to_int_unchecked::<i32>() } as u8;
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn store_avx2(bytes: usize, out: &mut [u8], codes: &[f32]) {
    store_generic(bytes, out, codes)
}

#[inline(always)]
fn dither(phase: u32, y: usize) -> f32 {
    let k = (y as u32).wrapping_add(phase) & 3;
    (((0xd8u32 >> (k * 2)) & 3) as f32 - 1.5) * 0.4
}

impl Codes {
    /// Row `y`'s luma codes, from its R', G', B', into `out`.
    pub fn luma_row(&self, [r, g, b]: Channels, y: usize, out: &mut [u8], codes: &mut [f32]) {
        let n = r.len();
        let (r, g, b, phase) = (&r[..n], &g[..n], &b[..n], &self.luma[..n]);
        let codes = &mut codes[..n];
        #[cfg(target_arch = "x86_64")]
        if super::avx2() {
            // SAFETY: the CPU has AVX2 (checked at run time by `avx2`).
            unsafe { luma_codes_avx2(self.scale, self.most, r, g, b, phase, y, codes) };
            self.store(out, codes);
            return;
        }
        luma_codes(self.scale, self.most, r, g, b, phase, y, codes);
        self.store(out, codes);
    }

    /// `codes` (whole numbers) into `out`, one or two bytes each.
    fn store(&self, out: &mut [u8], codes: &[f32]) {
        #[cfg(target_arch = "x86_64")]
        if super::avx2() {
            // SAFETY: the CPU has AVX2 (checked at run time by `avx2`).
            unsafe { store_avx2(self.bytes, out, codes) };
            return;
        }
        store_generic(self.bytes, out, codes)
    }

    /// Chroma row `cy`'s codes from its luma rows' R', G', B' (`top`, and `bottom` for 4:2:0)
    /// into `u`, `v`; `codes`: scratch, two chroma rows long.
    pub fn chroma_row(
        &self,
        top: Channels,
        bottom: Option<Channels>,
        cy: usize,
        u: &mut [u8],
        v: &mut [u8],
        codes: &mut [f32],
    ) {
        let n = self.u.len();
        let (cu, cv) = codes[..2 * n].split_at_mut(n);
        let c = Chroma {
            scale: self.scale,
            most: self.most,
            two: bottom.is_some(),
            y: cy,
        };
        let [r1, g1, b1] = bottom.unwrap_or(top);
        let rows = [top[0], top[1], top[2], r1, g1, b1];
        #[cfg(target_arch = "x86_64")]
        if super::avx2() {
            // SAFETY: the CPU has AVX2 (checked at run time by `avx2`).
            unsafe { chroma_codes_avx2(&c, rows, &self.u, &self.v, cu, cv) };
            self.store(u, cu);
            self.store(v, cv);
            return;
        }
        chroma_codes(&c, rows, &self.u, &self.v, cu, cv);
        self.store(u, cu);
        self.store(v, cv);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The eight-at-a-time chroma gives the scalar loop's codes, bit for bit, for 4:2:0 and
    /// 4:2:2, 8 and 10 bits, rows of every length up to 40 blocks, values out of range and NaN
    /// (which both store as code 0).
    #[test]
    fn the_vector_chroma_is_the_scalar_one() {
        #[cfg(target_arch = "x86_64")]
        if crate::render::soft::avx2() {
            let mut z = 12345u32;
            let mut next = || {
                z = crate::render::yuv::pcg(z);
                (z >> 8) as f32 / (1u32 << 24) as f32 * 1.2 - 0.1
            };
            for n in 0..41 {
                let rows: Vec<Vec<f32>> = (0..6)
                    .map(|_| (0..2 * n).map(|_| next()).collect())
                    .collect();
                let mut rows = rows;
                if n > 3 {
                    rows[1][3] = f32::NAN;
                }
                let phase: Vec<u32> = (0..n as u32).map(crate::render::yuv::pcg).collect();
                for (two, bits) in [(true, 8), (false, 8), (true, 10)] {
                    let c = Chroma {
                        scale: (1u32 << (bits - 8)) as f32,
                        most: ((1u32 << bits) - 1) as f32,
                        two,
                        y: n + 7,
                    };
                    let l: Lines = std::array::from_fn(|k| rows[k].as_slice());
                    let (mut u0, mut v0) = (vec![0.0; n], vec![0.0; n]);
                    let (mut u1, mut v1) = (vec![0.0; n], vec![0.0; n]);
                    chroma_codes(&c, l, &phase, &phase, &mut u0, &mut v0);
                    // SAFETY: the CPU has AVX2 (checked above).
                    unsafe { chroma_codes_avx2(&c, l, &phase, &phase, &mut u1, &mut v1) };
                    // The store writes a NaN as code 0, as it writes a 0.
                    let bits = |v: &[f32]| {
                        v.iter()
                            .map(|x| if x.is_nan() { 0 } else { x.to_bits() })
                            .collect::<Vec<_>>()
                    };
                    assert_eq!(bits(&u0), bits(&u1), "Cb, {n} blocks, two rows {two}");
                    assert_eq!(bits(&v0), bits(&v1), "Cr, {n} blocks, two rows {two}");
                }
            }
        }
    }
}
