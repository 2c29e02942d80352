//! The sRGB curve of the CPU's frames: tonemap.wgsl's `srgb_encode` (three square roots a
//! value), and the same curve read from a table of it by linear interpolation, eight values a
//! gather, which the tone map's rows use.

/// tonemap.wgsl's `srgb_encode`.
#[inline(always)]
fn srgb_encode(c: f32) -> f32 {
    let s1 = c.sqrt();
    let s2 = s1.sqrt();
    let s3 = s2.sqrt();
    let hi = 0.653_936_2 * s1 + 0.688_820_05 * s2
        - 0.318_561_67 * s3
        - 0.020_178_843 * c
        - 0.004_047_161;
    if c <= 0.003_130_8 {
        c * 12.92
    } else {
        hi
    }
}

/// [`srgb_encode`] at `STEPS + 1` evenly spaced values of [0, 1] (and once more past 1, for
/// the interpolation's upper neighbour at 1).
const STEPS: usize = 4096;

/// The sRGB table, built once.
fn srgb_lut() -> &'static [f32; STEPS + 2] {
    static LUT: std::sync::OnceLock<Box<[f32; STEPS + 2]>> = std::sync::OnceLock::new();
    LUT.get_or_init(|| {
        let mut t = Box::new([0.0f32; STEPS + 2]);
        for (i, v) in t.iter_mut().enumerate() {
            *v = srgb_encode((i.min(STEPS) as f32 / STEPS as f32).min(1.0)).clamp(0.0, 1.0);
        }
        t
    })
}

/// [`srgb_encode`] of `c` in [0, 1] (above 1, its value at 1) by linear interpolation in `lut`
/// ([`srgb_lut`]): within 2e-5 of it, a two-hundredth of an 8-bit code, for a table lookup
/// in place of three square roots.
#[inline(always)]
fn srgb_encode_lut(lut: &[f32; STEPS + 2], c: f32) -> f32 {
    let x = c * STEPS as f32;
    let i = (x as usize).min(STEPS);
    let f = x - i as f32;
    let (lo, hi) = (lut[i], lut[i + 1]);
    lo + (hi - lo) * f
}

/// Each value of `c` (in [0, 1]) sRGB-encoded through the table ([`srgb_encode_lut`]).
pub(super) fn encode(c: &mut [f32]) {
    let lut = srgb_lut();
    #[cfg(target_arch = "x86_64")]
    if super::avx2() {
        // SAFETY: the CPU has AVX2 (checked at run time by `avx2`).
        unsafe { encode_row_avx2(lut, c) };
        return;
    }
    for v in c.iter_mut() {
        *v = srgb_encode_lut(lut, *v);
    }
}

/// [`encode`] eight values at a time: the table's two neighbours of each gathered.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn encode_row_avx2(lut: &[f32; STEPS + 2], c: &mut [f32]) {
    use std::arch::x86_64::*;
    let mut chunks = c.chunks_exact_mut(8);
    let scale = _mm256_set1_ps(STEPS as f32);
    let top = _mm256_set1_epi32(STEPS as i32);
    let zero = _mm256_setzero_si256();
    for v in &mut chunks {
        // SAFETY: `v` holds 8 floats; the indices are clamped to 0..=STEPS, so both gathers
        // read inside the table's STEPS + 2 values.
        unsafe {
            let x = _mm256_mul_ps(_mm256_loadu_ps(v.as_ptr()), scale);
            // Truncation toward zero (x ≥ 0; a NaN gives i32::MIN, clamped to 0).
            let i = _mm256_min_epi32(_mm256_max_epi32(_mm256_cvttps_epi32(x), zero), top);
            let f = _mm256_sub_ps(x, _mm256_cvtepi32_ps(i));
            let lo = _mm256_i32gather_ps::<4>(lut.as_ptr(), i);
            let hi = _mm256_i32gather_ps::<4>(lut.as_ptr().add(1), i);
            let e = _mm256_add_ps(lo, _mm256_mul_ps(_mm256_sub_ps(hi, lo), f));
            _mm256_storeu_ps(v.as_mut_ptr(), e);
        }
    }
    for v in chunks.into_remainder() {
        *v = srgb_encode_lut(lut, *v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table's curve is tonemap.wgsl's within 2e-5 (a two-hundredth of an 8-bit code)
    /// over [0, 1], its ends exact, and the row's eight-at-a-time loop gives the scalar
    /// lookup's bits (NaN stays NaN).
    #[test]
    fn the_table_is_the_curve() {
        let lut = srgb_lut();
        let n = 1 << 20;
        let mut worst = 0.0f32;
        for i in 0..=n {
            let c = i as f32 / n as f32;
            let d = (srgb_encode_lut(lut, c) - srgb_encode(c).clamp(0.0, 1.0)).abs();
            worst = worst.max(d);
        }
        assert!(worst < 2e-5, "the table is {worst} from the curve");
        assert_eq!(srgb_encode_lut(lut, 0.0), 0.0);
        assert_eq!(srgb_encode_lut(lut, 1.0), srgb_encode(1.0).clamp(0.0, 1.0));
        let mut row: Vec<f32> = (0..1003).map(|i| (i as f32 * 0.618).fract()).collect();
        row[5] = f32::NAN;
        row[900] = f32::NAN;
        let want: Vec<f32> = row.iter().map(|&c| srgb_encode_lut(lut, c)).collect();
        encode(&mut row);
        for (k, (a, b)) in row.iter().zip(&want).enumerate() {
            assert!(
                a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                "value {k}"
            );
        }
    }
}
