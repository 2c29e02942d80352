//! The candidate loop with AVX2, eight candidates at a time (see the parent module for why
//! every lane gives the scalar loop's bits).

use std::arch::x86_64::*;

use super::Cands;
use crate::sim::math::{BoidsAcc, Sight, FIX_CLAMP};
use crate::sim::Params;

/// Lanes of f32 in a register.
const L: usize = 8;

/// `to_fix` on eight lanes → (lanes 0..4, lanes 4..8) as i64.
///
/// Fast path, when every lane is below 2^19 in magnitude (offsets and most separation
/// terms): widen to f64 (exact), scale by 2^32 (exact), truncate toward zero (exact: an
/// integer below 2^51), then read the integer out of the bits of `t + 1.5·2^52` (exact: the
/// sum stays in [2^52, 2^53), where doubles are the integers). `x·2^32` is exact in f32 too,
/// so this is `to_fix`'s value. Otherwise, the general path:
///
/// Clamp to ±2^30 with max/min (MAXPS returns its second operand when either is NaN, so
/// NaN → −2^30 as in scalar code). Then, from the bits of a clamped float
/// `±M·2^(E−150)` (M the 24-bit significand, E the biased exponent), `c·2^32` truncated
/// toward zero is `M << (E−118)` when E ≥ 118, else `M >> (118−E)` (a shift of 64 or more
/// gives 0, which covers zero and subnormals); the sign is applied last. E ≤ 157 after the
/// clamp, so `M << 39 < 2^63` never overflows.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn to_fix8(x: __m256) -> (__m256i, __m256i) {
    let small = _mm256_cmp_ps::<_CMP_LT_OQ>(
        _mm256_andnot_ps(_mm256_set1_ps(-0.0), x),
        _mm256_set1_ps(524_288.0),
    );
    if _mm256_movemask_ps(small) == 0xff {
        let magic = _mm256_set1_pd(6_755_399_441_055_744.0); // 1.5 · 2^52
        let conv = |v: __m256d| {
            let t = _mm256_round_pd::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(_mm256_mul_pd(
                v,
                _mm256_set1_pd(4_294_967_296.0),
            ));
            _mm256_sub_epi64(
                _mm256_castpd_si256(_mm256_add_pd(t, magic)),
                _mm256_castpd_si256(magic),
            )
        };
        return (
            conv(_mm256_cvtps_pd(_mm256_castps256_ps128(x))),
            conv(_mm256_cvtps_pd(_mm256_extractf128_ps::<1>(x))),
        );
    }
    let c = _mm256_max_ps(x, _mm256_set1_ps(-FIX_CLAMP));
    let c = _mm256_min_ps(c, _mm256_set1_ps(FIX_CLAMP));
    let bits = _mm256_castps_si256(c);
    let e = _mm256_and_si256(_mm256_srli_epi32::<23>(bits), _mm256_set1_epi32(0xff));
    let m = _mm256_or_si256(
        _mm256_and_si256(bits, _mm256_set1_epi32(0x7f_ffff)),
        _mm256_set1_epi32(0x80_0000),
    );
    let zero = _mm256_setzero_si256();
    let bias = _mm256_set1_epi32(118);
    let left = _mm256_max_epi32(_mm256_sub_epi32(e, bias), zero);
    let right = _mm256_max_epi32(_mm256_sub_epi32(bias, e), zero);
    let sign = _mm256_srai_epi32::<31>(bits);
    let half = |h: bool| {
        let pick = |v: __m256i| {
            if h {
                _mm256_extracti128_si256::<1>(v)
            } else {
                _mm256_castsi256_si128(v)
            }
        };
        let mag = _mm256_srlv_epi64(
            _mm256_sllv_epi64(
                _mm256_cvtepu32_epi64(pick(m)),
                _mm256_cvtepu32_epi64(pick(left)),
            ),
            _mm256_cvtepu32_epi64(pick(right)),
        );
        let s = _mm256_cvtepi32_epi64(pick(sign));
        _mm256_sub_epi64(_mm256_xor_si256(mag, s), s)
    };
    (half(false), half(true))
}

/// A 32-bit lane mask (all ones / zero) widened to two 64-bit masks.
#[inline]
#[target_feature(enable = "avx2")]
fn widen(m: __m256) -> (__m256i, __m256i) {
    let m = _mm256_castps_si256(m);
    (
        _mm256_cvtepi32_epi64(_mm256_castsi256_si128(m)),
        _mm256_cvtepi32_epi64(_mm256_extracti128_si256::<1>(m)),
    )
}

/// Minimum image of the offsets `d` (scalar `wrap_delta`): `d − size` where `d > half`,
/// `d + size` where `d < −half`, else `d`.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn wrap8(d: __m256, size: f32, half: f32) -> __m256 {
    let (s, h) = (_mm256_set1_ps(size), _mm256_set1_ps(half));
    let hi = _mm256_cmp_ps::<_CMP_GT_OQ>(d, h);
    let lo = _mm256_cmp_ps::<_CMP_LT_OQ>(d, _mm256_sub_ps(_mm256_setzero_ps(), h));
    let r = _mm256_blendv_ps(d, _mm256_sub_ps(d, s), hi);
    _mm256_blendv_ps(r, _mm256_add_ps(d, s), lo)
}

/// Which of the eight lanes from slot `j` lie before `b`: all, or a tail mask.
#[inline]
#[target_feature(enable = "avx2")]
fn lanes(j: usize, b: usize) -> (bool, __m256i) {
    let left = b - j;
    if left >= L {
        return (true, _mm256_set1_epi32(-1));
    }
    let idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    (
        false,
        _mm256_cmpgt_epi32(_mm256_set1_epi32(left as i32), idx),
    )
}

/// Eight positions of one axis from slot `j` (masked lanes read as 0, never out of bounds).
///
/// # Safety
/// The CPU has AVX2; `j < s.len()`; with `full`, `j + 8 <= s.len()`; otherwise every lane set in
/// `valid` is an index within `s`.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn load_f(s: &[f32], j: usize, full: bool, valid: __m256i) -> __m256 {
    debug_assert!(j < s.len());
    if full {
        // SAFETY: (the caller) j + 8 <= s.len().
        unsafe { _mm256_loadu_ps(s.as_ptr().add(j)) }
    } else {
        // SAFETY: (the caller) lanes set in `valid` are within s.
        unsafe { _mm256_maskload_ps(s.as_ptr().add(j), valid) }
    }
}

/// Eight fixed-point values of one axis from slot `j`, as two halves.
///
/// # Safety
/// As for [`load_f`], over `s`.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn load_i(s: &[i64], j: usize, full: bool, valid: (__m256i, __m256i)) -> (__m256i, __m256i) {
    debug_assert!(j < s.len());
    // SAFETY: (the caller) j < s.len(), so the pointer stays inside the slice.
    let q = unsafe { s.as_ptr().add(j) };
    if full {
        let p = q as *const __m256i;
        // SAFETY: (the caller) j + 8 <= s.len(): both halves are inside s.
        unsafe { (_mm256_loadu_si256(p), _mm256_loadu_si256(p.add(1))) }
    } else {
        // SAFETY: (the caller) lanes set in `valid` are within s.
        let lo = unsafe { _mm256_maskload_epi64(q, valid.0) };
        // The upper half starts at j + 4; where that is past the slice, none of its lanes is
        // valid, and no pointer is made there (not even one that is never read through).
        let hi = if j + 4 < s.len() {
            // SAFETY: j + 4 < s.len(), and lanes set in `valid.1` are within s (caller).
            unsafe { _mm256_maskload_epi64(q.add(4), valid.1) }
        } else {
            _mm256_setzero_si256()
        };
        (lo, hi)
    }
}

/// `acc += v & mask`, both halves into one four-lane accumulator (wrapping adds commute:
/// which lane holds which partial sum does not matter).
#[inline]
#[target_feature(enable = "avx2")]
fn add_masked(acc: &mut __m256i, v: (__m256i, __m256i), m: (__m256i, __m256i)) {
    let both = _mm256_add_epi64(_mm256_and_si256(v.0, m.0), _mm256_and_si256(v.1, m.1));
    *acc = _mm256_add_epi64(*acc, both);
}

/// Wrapping sum of the four i64 lanes (order-free).
#[inline]
#[target_feature(enable = "avx2")]
fn hsum(acc: __m256i) -> i64 {
    let mut a = [0i64; 4];
    // SAFETY: a is 32 bytes; unaligned store.
    unsafe { _mm256_storeu_si256(a.as_mut_ptr() as *mut __m256i, acc) };
    a.iter().fold(0i64, |s, &x| s.wrapping_add(x))
}

/// Checks that every range lies within every slice (the loads below rely on it).
/// Plain loops: it runs once per agent, and iterator adapters are calls without link-time
/// optimisation.
#[inline]
pub(super) fn in_bounds<const D: usize>(c: &Cands<D>, ranges: &[(u32, u32)]) {
    let mut n = usize::MAX;
    for k in 0..D {
        n = n.min(c.pos[k].len()).min(c.vfix[k].len());
    }
    for &(a, b) in ranges {
        assert!(a <= b && b as usize <= n);
    }
}

/// The lanes of `sight` sees among the offsets `d` (squared lengths `d2`), as
/// [`Sight::sees`] decides each: `dot` summed x, y, z in that order, then the comparisons
/// (ordered: a NaN lane is not seen, as in scalar code).
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn sees8<const D: usize>(sight: &Sight<D>, d: &[__m256; D], d2: __m256) -> __m256 {
    let mut dot = _mm256_mul_ps(d[0], _mm256_set1_ps(sight.u[0]));
    for (dk, uk) in d.iter().zip(sight.u).skip(1) {
        dot = _mm256_add_ps(dot, _mm256_mul_ps(*dk, _mm256_set1_ps(uk)));
    }
    let dd = _mm256_mul_ps(dot, dot);
    let q = _mm256_mul_ps(_mm256_set1_ps(sight.c2), d2);
    let ahead = _mm256_cmp_ps::<_CMP_GE_OQ>(dot, _mm256_setzero_ps());
    if sight.wide {
        _mm256_or_ps(ahead, _mm256_cmp_ps::<_CMP_LE_OQ>(dd, q))
    } else {
        _mm256_and_ps(ahead, _mm256_cmp_ps::<_CMP_GE_OQ>(dd, q))
    }
}

/// [`super::boids_sums`], eight candidates at a time; with `FOV`, alignment and cohesion count
/// only the lanes `sight` sees (without, `sight` is not read).
///
/// # Safety
/// The CPU has AVX2 (the candidate ranges are checked against the slices by `in_bounds`).
#[target_feature(enable = "avx2")]
pub(super) unsafe fn boids_sums<const D: usize, const FOV: bool>(
    p: &Params,
    wrap: bool,
    pi: &[f32; D],
    sight: &Sight<D>,
    c: &Cands<D>,
    ranges: &[(u32, u32)],
    out: &mut BoidsAcc<D>,
) {
    in_bounds(c, ranges);
    let z = _mm256_setzero_si256();
    let mut sep = [z; D];
    let mut ali = [z; D];
    let mut coh = [z; D];
    let (mut n_ali, mut n_coh) = (0u32, 0u32);
    let r_sep2 = _mm256_set1_ps(p.r_sep2);
    let r_ali2 = _mm256_set1_ps(p.r_ali2);
    let r_coh2 = _mm256_set1_ps(p.r_coh2);
    let fzero = _mm256_setzero_ps();
    let sign = _mm256_set1_ps(-0.0);
    for &(a, b) in ranges {
        let (a, b) = (a as usize, b as usize);
        let mut j = a;
        while j < b {
            let (full, valid) = lanes(j, b);
            let mut d = [fzero; D];
            for k in 0..D {
                // SAFETY: `in_bounds`; lanes past b are masked.
                let q = unsafe { load_f(c.pos[k], j, full, valid) };
                d[k] = _mm256_sub_ps(q, _mm256_set1_ps(pi[k]));
                if wrap {
                    d[k] = wrap8(d[k], p.world[k], p.half_world[k]);
                }
            }
            // norm2: x·x + y·y, then + z·z (two roundings each, no FMA).
            let mut d2 = _mm256_mul_ps(d[0], d[0]);
            for dk in d.iter().skip(1) {
                d2 = _mm256_add_ps(d2, _mm256_mul_ps(*dk, *dk));
            }
            let v = _mm256_castsi256_ps(valid);
            // Alignment and cohesion: the valid lanes within their radius (and seen).
            let v_seen = if FOV {
                _mm256_and_ps(v, sees8(sight, &d, d2))
            } else {
                v
            };
            let m_ali = _mm256_and_ps(_mm256_cmp_ps::<_CMP_LT_OQ>(d2, r_ali2), v_seen);
            let m_coh = _mm256_and_ps(_mm256_cmp_ps::<_CMP_LT_OQ>(d2, r_coh2), v_seen);
            let m_sep = _mm256_and_ps(
                _mm256_and_ps(
                    _mm256_cmp_ps::<_CMP_LT_OQ>(d2, r_sep2),
                    _mm256_cmp_ps::<_CMP_GT_OQ>(d2, fzero),
                ),
                v,
            );
            let (ba, bc, bs) = (
                _mm256_movemask_ps(m_ali),
                _mm256_movemask_ps(m_coh),
                _mm256_movemask_ps(m_sep),
            );
            n_ali += ba.count_ones();
            n_coh += bc.count_ones();
            if ba != 0 {
                let w = widen(m_ali);
                let vv = (w.0, w.1);
                for k in 0..D {
                    // SAFETY: as above; masked lanes read nothing.
                    let f = unsafe { load_i(c.vfix[k], j, full, vv) };
                    add_masked(&mut ali[k], f, w);
                }
            }
            if bc != 0 {
                let w = widen(m_coh);
                for k in 0..D {
                    add_masked(&mut coh[k], to_fix8(d[k]), w);
                }
            }
            if bs != 0 {
                // (p_i − p_j)/|p_i − p_j|² = −d/d²; other lanes may be inf/NaN, masked.
                let w = widen(m_sep);
                for k in 0..D {
                    let q = _mm256_div_ps(_mm256_xor_ps(d[k], sign), d2);
                    add_masked(&mut sep[k], to_fix8(q), w);
                }
            }
            j += L;
        }
    }
    for k in 0..D {
        out.sep[k] = hsum(sep[k]);
        out.ali[k] = hsum(ali[k]);
        out.coh[k] = hsum(coh[k]);
    }
    out.n_ali = n_ali;
    out.n_coh = n_coh;
}

/// [`super::vicsek_sum`], eight candidates at a time.
///
/// # Safety
/// The CPU has AVX2 (the candidate ranges are checked against the slices by `in_bounds`).
#[target_feature(enable = "avx2")]
pub(super) unsafe fn vicsek_sum(
    p: &Params,
    pi: [f32; 2],
    c: &Cands<2>,
    ranges: &[(u32, u32)],
) -> ([i64; 2], u32) {
    in_bounds(c, ranges);
    let wrap = p.wraps();
    let z = _mm256_setzero_si256();
    let mut sum = [z; 2];
    let mut count = 0u32;
    let r2 = _mm256_set1_ps(p.r_ali2);
    for &(a, b) in ranges {
        let (a, b) = (a as usize, b as usize);
        let mut j = a;
        while j < b {
            let (full, valid) = lanes(j, b);
            let mut d = [_mm256_setzero_ps(); 2];
            for k in 0..2 {
                // SAFETY: `in_bounds`; lanes past b are masked.
                let q = unsafe { load_f(c.pos[k], j, full, valid) };
                d[k] = _mm256_sub_ps(q, _mm256_set1_ps(pi[k]));
                if wrap {
                    d[k] = wrap8(d[k], p.world[k], p.half_world[k]);
                }
            }
            let d2 = _mm256_add_ps(_mm256_mul_ps(d[0], d[0]), _mm256_mul_ps(d[1], d[1]));
            let m = _mm256_and_ps(
                _mm256_cmp_ps::<_CMP_LT_OQ>(d2, r2),
                _mm256_castsi256_ps(valid),
            );
            count += (_mm256_movemask_ps(m) as u32).count_ones();
            let w = widen(m);
            for k in 0..2 {
                // SAFETY: as above; masked lanes read nothing.
                let f = unsafe { load_i(c.vfix[k], j, full, w) };
                add_masked(&mut sum[k], f, w);
            }
            j += L;
        }
    }
    ([hsum(sum[0]), hsum(sum[1])], count)
}
