//! The AVX2 loop's shape with AVX-512's mask registers: masked loads that never touch a lane
//! past the range, masked adds instead of AND-then-add, and `vcvttps2qq` for `to_fix`.

use std::arch::x86_64::*;

use super::avx2::{in_bounds, wrap8};
use super::Cands;
use crate::sim::math::{BoidsAcc, Sight, FIX_CLAMP, FIX_SCALE};
use crate::sim::Params;

/// `to_fix` on eight lanes: clamp (NaN → −2^30, as in AVX2's version), scale by 2^32 in
/// f32 (exact: a power of two, no overflow under the clamp), truncate to i64.
#[inline]
#[target_feature(enable = "avx512f,avx512dq,avx512vl")]
pub(super) fn to_fix8(x: __m256) -> __m512i {
    let c = _mm256_max_ps(x, _mm256_set1_ps(-FIX_CLAMP));
    let c = _mm256_min_ps(c, _mm256_set1_ps(FIX_CLAMP));
    _mm512_cvttps_epi64(_mm256_mul_ps(c, _mm256_set1_ps(FIX_SCALE)))
}

/// Lanes of slots `j..min(j + 8, b)`.
#[inline(always)]
fn lanes(j: usize, b: usize) -> __mmask8 {
    let left = b - j;
    if left >= 8 {
        0xff
    } else {
        ((1u32 << left) - 1) as __mmask8
    }
}

/// Offsets `q − pi` of the eight candidates from `j` (lanes outside `k` read as 0).
///
/// # Safety
/// The CPU has AVX-512 F, DQ and VL; every lane set in `k` is a slot within each axis of
/// `c.pos` (from `j`).
#[inline]
#[target_feature(enable = "avx512f,avx512dq,avx512vl")]
unsafe fn offsets<const D: usize>(
    p: &Params,
    wrap: bool,
    pi: &[f32; D],
    c: &Cands<D>,
    j: usize,
    k: __mmask8,
) -> [__m256; D] {
    let mut d = [_mm256_setzero_ps(); D];
    for a in 0..D {
        // SAFETY: (the caller) lanes set in k are slots within the axis (`in_bounds`); a masked
        // load never touches the others.
        let q = unsafe { _mm256_maskz_loadu_ps(k, c.pos[a].as_ptr().add(j)) };
        d[a] = _mm256_sub_ps(q, _mm256_set1_ps(pi[a]));
        if wrap {
            d[a] = wrap8(d[a], p.world[a], p.half_world[a]);
        }
    }
    d
}

/// The lanes of `k` that `sight` sees among the offsets `d` (squared lengths `d2`), as
/// [`Sight::sees`] decides each (AVX2's `sees8` with mask registers).
#[inline]
#[target_feature(enable = "avx512f,avx512dq,avx512vl")]
fn sees8<const D: usize>(k: __mmask8, sight: &Sight<D>, d: &[__m256; D], d2: __m256) -> __mmask8 {
    let mut dot = _mm256_mul_ps(d[0], _mm256_set1_ps(sight.u[0]));
    for (da, ua) in d.iter().zip(sight.u).skip(1) {
        dot = _mm256_add_ps(dot, _mm256_mul_ps(*da, _mm256_set1_ps(ua)));
    }
    let dd = _mm256_mul_ps(dot, dot);
    let q = _mm256_mul_ps(_mm256_set1_ps(sight.c2), d2);
    let ahead = _mm256_mask_cmp_ps_mask::<_CMP_GE_OQ>(k, dot, _mm256_setzero_ps());
    if sight.wide {
        ahead | _mm256_mask_cmp_ps_mask::<_CMP_LE_OQ>(k, dd, q)
    } else {
        _mm256_mask_cmp_ps_mask::<_CMP_GE_OQ>(ahead, dd, q)
    }
}

/// [`super::boids_sums`], eight candidates at a time with mask registers; with `FOV`,
/// alignment and cohesion count only the lanes `sight` sees (without, `sight` is not read).
///
/// # Safety
/// The CPU has AVX-512 F, DQ and VL (the candidate ranges are checked against the slices by
/// `avx2::in_bounds`).
#[target_feature(enable = "avx512f,avx512dq,avx512vl")]
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
    let z = _mm512_setzero_si512();
    let (mut sep, mut ali, mut coh) = ([z; D], [z; D], [z; D]);
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
            let k = lanes(j, b);
            // SAFETY: see `offsets`.
            let d = unsafe { offsets::<D>(p, wrap, pi, c, j, k) };
            // norm2: x·x + y·y, then + z·z (two roundings each, no FMA).
            let mut d2 = _mm256_mul_ps(d[0], d[0]);
            for dk in d.iter().skip(1) {
                d2 = _mm256_add_ps(d2, _mm256_mul_ps(*dk, *dk));
            }
            // Alignment and cohesion: the lanes within their radius (and seen).
            let k_seen = if FOV { sees8(k, sight, &d, d2) } else { k };
            let k_ali = _mm256_mask_cmp_ps_mask::<_CMP_LT_OQ>(k_seen, d2, r_ali2);
            let k_coh = _mm256_mask_cmp_ps_mask::<_CMP_LT_OQ>(k_seen, d2, r_coh2);
            let k_sep = _mm256_mask_cmp_ps_mask::<_CMP_GT_OQ>(
                _mm256_mask_cmp_ps_mask::<_CMP_LT_OQ>(k, d2, r_sep2),
                d2,
                fzero,
            );
            n_ali += k_ali.count_ones();
            n_coh += k_coh.count_ones();
            for x in 0..D {
                // SAFETY: as in `offsets`.
                let v = unsafe { _mm512_maskz_loadu_epi64(k_ali, c.vfix[x].as_ptr().add(j)) };
                ali[x] = _mm512_add_epi64(ali[x], v);
                coh[x] = _mm512_mask_add_epi64(coh[x], k_coh, coh[x], to_fix8(d[x]));
            }
            if k_sep != 0 {
                for x in 0..D {
                    // (p_i − p_j)/|p_i − p_j|² = −d/d²; other lanes are not added.
                    let q = _mm256_div_ps(_mm256_xor_ps(d[x], sign), d2);
                    sep[x] = _mm512_mask_add_epi64(sep[x], k_sep, sep[x], to_fix8(q));
                }
            }
            j += 8;
        }
    }
    for x in 0..D {
        // Wrapping lane sums (order-free).
        out.sep[x] = _mm512_reduce_add_epi64(sep[x]);
        out.ali[x] = _mm512_reduce_add_epi64(ali[x]);
        out.coh[x] = _mm512_reduce_add_epi64(coh[x]);
    }
    out.n_ali = n_ali;
    out.n_coh = n_coh;
}

/// [`super::vicsek_sum`], eight candidates at a time with mask registers.
///
/// # Safety
/// The CPU has AVX-512 F, DQ and VL (the candidate ranges are checked as in `boids_sums`).
#[target_feature(enable = "avx512f,avx512dq,avx512vl")]
pub(super) unsafe fn vicsek_sum(
    p: &Params,
    pi: [f32; 2],
    c: &Cands<2>,
    ranges: &[(u32, u32)],
) -> ([i64; 2], u32) {
    in_bounds(c, ranges);
    let wrap = p.wraps();
    let mut sum = [_mm512_setzero_si512(); 2];
    let mut count = 0u32;
    let r2 = _mm256_set1_ps(p.r_ali2);
    for &(a, b) in ranges {
        let (a, b) = (a as usize, b as usize);
        let mut j = a;
        while j < b {
            let k = lanes(j, b);
            // SAFETY: see `offsets`.
            let d = unsafe { offsets::<2>(p, wrap, &pi, c, j, k) };
            let d2 = _mm256_add_ps(_mm256_mul_ps(d[0], d[0]), _mm256_mul_ps(d[1], d[1]));
            let m = _mm256_mask_cmp_ps_mask::<_CMP_LT_OQ>(k, d2, r2);
            count += (m as u32).count_ones();
            for x in 0..2 {
                // SAFETY: as in `offsets`.
                let v = unsafe { _mm512_maskz_loadu_epi64(m, c.vfix[x].as_ptr().add(j)) };
                sum[x] = _mm512_add_epi64(sum[x], v);
            }
            j += 8;
        }
    }
    (
        [
            _mm512_reduce_add_epi64(sum[0]),
            _mm512_reduce_add_epi64(sum[1]),
        ],
        count,
    )
}
