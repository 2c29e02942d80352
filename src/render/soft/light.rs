//! The frame's HDR light as the GPU's target holds it (`Rgba16Float`): four half floats a
//! pixel (red, green, blue, the energy). It is worked on a strip of rows at a time as `f32`
//! (faded, the sprites added) and stored back as halves, so a frame reads and writes 8 bytes a
//! pixel instead of 16; the tone map reads it a row at a time.
//!
//! The light is held times [`SCALE`], a power of two (so the scaling is exact): a half's
//! smallest steps, below 2⁻¹⁴, would otherwise round the faint edges of the sprites to whole
//! steps of 6·10⁻⁸, and the ink style, which divides the light by its energy and opens up below
//! an energy of 10⁻⁶, would tint those edges with the glow (by up to 20 code values near black).
//! Times 16 the steps there are 4·10⁻⁹, and the most light a pixel holds is 4094.
//!
//! The conversions are F16C's where the CPU has it (eight values an instruction), and exact
//! one way (a half is an `f32`) and rounded to the nearest half the other, ties to even, either
//! way.

/// Light of `w`×`h` pixels, four halves (their bits) a pixel, row by row.
#[derive(Clone, Debug, Default)]
pub(super) struct Light {
    pub w: usize,
    pub h: usize,
    pub px: Vec<u16>,
}

impl Light {
    pub fn new(w: usize, h: usize) -> Light {
        Light {
            w,
            h,
            px: vec![0; w * h * 4],
        }
    }

    /// Row `y`'s halves.
    pub fn row(&self, y: usize) -> &[u16] {
        &self.px[y * self.w * 4..(y + 1) * self.w * 4]
    }
}

/// What the light is held times.
const SCALE: f32 = 16.0;

/// The largest finite half: light beyond it (over [`SCALE`]) is stored as it (a half would be
/// infinity, which the tone map turns into NaN).
const MOST: f32 = 65504.0;

/// Whether the CPU converts halves itself.
#[cfg(target_arch = "x86_64")]
fn f16c() -> bool {
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| {
        std::arch::is_x86_feature_detected!("f16c") && std::arch::is_x86_feature_detected!("avx")
    })
}

/// `dst[i] = src[i] · k`, `src` the halves held.
pub(super) fn load(src: &[u16], k: f32, dst: &mut [f32]) {
    let k = k / SCALE;
    let n = src.len().min(dst.len());
    let (src, dst) = (&src[..n], &mut dst[..n]);
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if f16c() {
        // SAFETY: the CPU has F16C and AVX (checked at run time).
        done = unsafe { load_f16c(src, k, dst) };
    }
    for i in done..n {
        dst[i] = half::f16::from_bits(src[i]).to_f32() * k;
    }
}

/// `dst[i]` = `src[i]` held: times [`SCALE`], as the nearest half (at most [`MOST`]).
pub(super) fn store(src: &[f32], dst: &mut [u16]) {
    let n = src.len().min(dst.len());
    let (src, dst) = (&src[..n], &mut dst[..n]);
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if f16c() {
        // SAFETY: the CPU has F16C and AVX (checked at run time).
        done = unsafe { store_f16c(src, dst) };
    }
    for i in done..n {
        dst[i] = half::f16::from_f32((src[i] * SCALE).min(MOST)).to_bits();
    }
}

/// [`load`] eight values at a time; how many it did (a multiple of eight).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
fn load_f16c(src: &[u16], k: f32, dst: &mut [f32]) -> usize {
    use std::arch::x86_64::*;
    let n = src.len().min(dst.len()) / 8 * 8;
    let kk = _mm256_set1_ps(k);
    let mut i = 0;
    while i < n {
        // SAFETY: i + 8 ≤ n ≤ both lengths; unaligned loads and stores.
        unsafe {
            let h = _mm_loadu_si128(src.as_ptr().add(i) as *const __m128i);
            let f = _mm256_mul_ps(_mm256_cvtph_ps(h), kk);
            _mm256_storeu_ps(dst.as_mut_ptr().add(i), f);
        }
        i += 8;
    }
    n
}

/// [`store`] eight values at a time; how many it did (a multiple of eight).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
fn store_f16c(src: &[f32], dst: &mut [u16]) -> usize {
    use std::arch::x86_64::*;
    let n = src.len().min(dst.len()) / 8 * 8;
    let most = _mm256_set1_ps(MOST);
    let scale = _mm256_set1_ps(SCALE);
    let mut i = 0;
    while i < n {
        // SAFETY: i + 8 ≤ n ≤ both lengths; unaligned loads and stores.
        unsafe {
            let f = _mm256_mul_ps(_mm256_loadu_ps(src.as_ptr().add(i)), scale);
            let f = _mm256_min_ps(f, most);
            let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(f);
            _mm_storeu_si128(dst.as_mut_ptr().add(i) as *mut __m128i, h);
        }
        i += 8;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The eight-at-a-time conversions give the bytes of the one-at-a-time ones (the tail's),
    /// over values that round every way, halves' ties included.
    #[test]
    fn the_wide_conversions_agree_with_the_scalar_ones() {
        let mut vals: Vec<f32> = (0..4000)
            .map(|i| {
                let t = i as f32 * 0.7371;
                (t.sin() * 1e3).abs() * 10f32.powi((i % 13) - 8)
            })
            .collect();
        // Exact ties between two halves, either side of even.
        vals.extend([
            1.0 + 1.0 / 2048.0,
            1.0 + 3.0 / 2048.0,
            1e9,
            MOST,
            0.0,
            6.0e-8,
        ]);
        let mut wide = vec![0u16; vals.len()];
        store(&vals, &mut wide);
        for (v, h) in vals.iter().zip(&wide) {
            assert_eq!(
                *h,
                half::f16::from_f32((v * SCALE).min(MOST)).to_bits(),
                "{v}"
            );
        }
        let mut back = vec![0.0f32; vals.len()];
        load(&wide, 0.6, &mut back);
        for (h, b) in wide.iter().zip(&back) {
            assert_eq!(*b, half::f16::from_bits(*h).to_f32() * (0.6 / SCALE));
        }
    }
}
