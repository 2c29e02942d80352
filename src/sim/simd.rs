//! The neighbour-candidate loop, in lanes: the part of the step that visits every candidate
//! pair (boids 2D/3D, Vicsek), written once as plain scalar code and once with AVX2, eight
//! candidates at a time. Everything else of the step stays scalar.
//!
//! **Same bytes.** Both versions compute the same sums bit for bit, so the choice can never
//! show in a recording (DESIGN.md, the determinism contract):
//! - offsets, squared distances and the separation quotient use only IEEE add, subtract,
//!   multiply and divide, each correctly rounded lane by lane exactly as in scalar code, in
//!   the same order (`dx*dx + dy*dy`, then `+ dz*dz`). No FMA: the AVX2 functions enable the
//!   `avx2` target feature only, never `fma`, so the compiler cannot fuse a multiply and an
//!   add, and Rust never contracts floating-point expressions by itself;
//! - minimum image and radius tests are lane masks (compare + blend), not branches;
//! - terms are converted to 64-bit fixed point by [`to_fix8`], which reproduces
//!   [`to_fix`] exactly (clamp, NaN → −2^30, truncation toward zero) from the float's bits,
//!   since AVX2 has no float → i64 conversion; masked-out candidates add an exact zero;
//! - sums are wrapping i64 additions, which commute: visiting eight candidates at a time, in
//!   any lane, changes nothing.
//!
//! **Why `std::arch`.** The kernel is small (three functions) and its worth is in exact
//! control of which instructions run: `std::arch` names each one, needs no dependency, and
//! `is_x86_feature_detected!` gives runtime detection. `wide` has no exact float → fixed-point
//! conversion nor variable 64-bit shifts, and `pulp`'s generic dispatch adds a layer this one
//! kernel does not need. Other architectures (aarch64 included: no machine to test NEON on)
//! use the scalar loop.
//!
//! `FORGE_SIMD=off` (or `scalar`) forces the scalar loop, for tests and for measuring.

use std::sync::OnceLock;

use super::math::{wrap_delta, BoidsAcc};
use super::Params;

/// Which candidate loop runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    Scalar,
    /// x86-64 AVX2 (detected at run time).
    Avx2,
    /// x86-64 AVX-512 F + DQ + VL (detected at run time): the same loop with mask registers
    /// and the exact f32 → i64 truncation AVX2 lacks (`vcvttps2qq`).
    Avx512,
}

impl Isa {
    /// The name the README and `forge bench` print.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Avx2 => "AVX2",
            Isa::Avx512 => "AVX-512",
        }
    }
}

/// The best loop this CPU runs, unless `FORGE_SIMD` asks for less: `off` (or `scalar`, `0`)
/// the scalar loop, `avx2` at most AVX2. Decided once per process.
pub fn isa() -> Isa {
    static ISA: OnceLock<Isa> = OnceLock::new();
    *ISA.get_or_init(|| {
        let best = detect();
        match std::env::var("FORGE_SIMD").map(|v| v.to_ascii_lowercase()) {
            Ok(v) if matches!(v.as_str(), "off" | "scalar" | "0") => Isa::Scalar,
            Ok(v) if v == "avx2" && best == Isa::Avx512 => Isa::Avx2,
            _ => best,
        }
    })
}

fn detect() -> Isa {
    #[cfg(target_arch = "x86_64")]
    {
        if is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512dq")
            && is_x86_feature_detected!("avx512vl")
        {
            return Isa::Avx512;
        }
        if is_x86_feature_detected!("avx2") {
            return Isa::Avx2;
        }
    }
    Isa::Scalar
}

/// What the candidate loop reads: positions and velocities in fixed point (Vicsek: unit
/// velocities), one slice per axis, indexed by slot.
pub struct Cands<'a, const D: usize> {
    pub pos: [&'a [f32]; D],
    pub vfix: [&'a [i64]; D],
}

/// Boids: the fixed-point sums over the candidate slots `ranges` of an agent at `pi`
/// (the agent itself included, as in [`BoidsAcc::boids_pair`]), written into `out` field by
/// field (returned by value, the struct came back through memory and was re-read wider than
/// it was written, which stalled every agent on a failed store-to-load forward).
#[inline(always)]
pub fn boids_sums<const D: usize>(
    isa: Isa,
    p: &Params,
    wrap: bool,
    pi: &[f32; D],
    c: &Cands<D>,
    ranges: &[(u32, u32)],
    out: &mut BoidsAcc<D>,
) {
    #[cfg(target_arch = "x86_64")]
    match isa {
        // SAFETY: each is only chosen where the CPU has it (`detect`).
        Isa::Avx512 => return unsafe { avx512::boids_sums::<D>(p, wrap, pi, c, ranges, out) },
        Isa::Avx2 => return unsafe { avx2::boids_sums::<D>(p, wrap, pi, c, ranges, out) },
        Isa::Scalar => {}
    }
    let _ = isa;
    *out = boids_sums_scalar(p, wrap, pi, c, ranges);
}

fn boids_sums_scalar<const D: usize>(
    p: &Params,
    wrap: bool,
    pi: &[f32; D],
    c: &Cands<D>,
    ranges: &[(u32, u32)],
) -> BoidsAcc<D> {
    let rmax2 = p.r_sep2.max(p.r_ali2).max(p.r_coh2);
    let mut acc = BoidsAcc::<D>::new();
    for &(a, b) in ranges {
        for j in a as usize..b as usize {
            let mut d = [0f32; D];
            for k in 0..D {
                d[k] = wrap_delta(c.pos[k][j] - pi[k], p.world[k], p.half_world[k], wrap);
            }
            let d2 = super::math::norm2(&d);
            if d2 < rmax2 {
                let vfix: [i64; D] = std::array::from_fn(|k| c.vfix[k][j]);
                acc.boids_pair(p, &d, d2, &vfix);
            }
        }
    }
    acc
}

/// Vicsek: the fixed-point sum of the unit velocities of the candidates within `p.r_ali2`
/// of `pi` (the particle itself included: d² = 0).
#[inline(always)]
pub fn vicsek_sum(
    isa: Isa,
    p: &Params,
    pi: [f32; 2],
    c: &Cands<2>,
    ranges: &[(u32, u32)],
) -> [i64; 2] {
    #[cfg(target_arch = "x86_64")]
    match isa {
        // SAFETY: as in `boids_sums`.
        Isa::Avx512 => return unsafe { avx512::vicsek_sum(p, pi, c, ranges) },
        Isa::Avx2 => return unsafe { avx2::vicsek_sum(p, pi, c, ranges) },
        Isa::Scalar => {}
    }
    let _ = isa;
    let wrap = p.wraps();
    let mut sum = [0i64; 2];
    for &(a, b) in ranges {
        for j in a as usize..b as usize {
            let dx = wrap_delta(c.pos[0][j] - pi[0], p.world[0], p.half_world[0], wrap);
            let dy = wrap_delta(c.pos[1][j] - pi[1], p.world[1], p.half_world[1], wrap);
            // Branch-free: add the unit velocity or zero.
            let mask = -((dx * dx + dy * dy < p.r_ali2) as i64);
            sum[0] = sum[0].wrapping_add(c.vfix[0][j] & mask);
            sum[1] = sum[1].wrapping_add(c.vfix[1][j] & mask);
        }
    }
    sum
}

/// Eight floats to fixed point, exactly as [`to_fix`] does one (see the AVX2 version).
#[cfg(test)]
fn to_fix8_reference(x: [f32; 8]) -> [i64; 8] {
    x.map(super::math::to_fix)
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::super::math::{BoidsAcc, FIX_CLAMP};
    use super::super::Params;
    use super::Cands;

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
                let t = _mm256_round_pd::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(
                    _mm256_mul_pd(v, _mm256_set1_pd(4_294_967_296.0)),
                );
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
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn load_f(s: &[f32], j: usize, full: bool, valid: __m256i) -> __m256 {
        debug_assert!(j < s.len());
        if full {
            // SAFETY (caller): j + 8 <= s.len().
            unsafe { _mm256_loadu_ps(s.as_ptr().add(j)) }
        } else {
            // SAFETY (caller): lanes set in `valid` are within s.
            unsafe { _mm256_maskload_ps(s.as_ptr().add(j), valid) }
        }
    }

    /// Eight fixed-point values of one axis from slot `j`, as two halves.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn load_i(
        s: &[i64],
        j: usize,
        full: bool,
        valid: (__m256i, __m256i),
    ) -> (__m256i, __m256i) {
        let p = s.as_ptr().add(j) as *const __m256i;
        if full {
            // SAFETY (caller): j + 8 <= s.len().
            unsafe { (_mm256_loadu_si256(p), _mm256_loadu_si256(p.add(1))) }
        } else {
            let q = s.as_ptr().add(j);
            // SAFETY (caller): lanes set in `valid` are within s.
            unsafe {
                (
                    _mm256_maskload_epi64(q, valid.0),
                    _mm256_maskload_epi64(q.add(4), valid.1),
                )
            }
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
    pub(super) fn in_bounds<const D: usize>(c: &Cands<D>, ranges: &[(u32, u32)]) {
        let n = c
            .pos
            .iter()
            .map(|s| s.len())
            .chain(c.vfix.iter().map(|s| s.len()))
            .min();
        let n = n.unwrap_or(0);
        assert!(ranges.iter().all(|&(a, b)| a <= b && b as usize <= n));
    }

    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn boids_sums<const D: usize>(
        p: &Params,
        wrap: bool,
        pi: &[f32; D],
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
                let m_ali = _mm256_and_ps(_mm256_cmp_ps::<_CMP_LT_OQ>(d2, r_ali2), v);
                let m_coh = _mm256_and_ps(_mm256_cmp_ps::<_CMP_LT_OQ>(d2, r_coh2), v);
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

    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn vicsek_sum(
        p: &Params,
        pi: [f32; 2],
        c: &Cands<2>,
        ranges: &[(u32, u32)],
    ) -> [i64; 2] {
        in_bounds(c, ranges);
        let wrap = p.wraps();
        let z = _mm256_setzero_si256();
        let mut sum = [z; 2];
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
                let w = widen(m);
                for k in 0..2 {
                    // SAFETY: as above; masked lanes read nothing.
                    let f = unsafe { load_i(c.vfix[k], j, full, w) };
                    add_masked(&mut sum[k], f, w);
                }
                j += L;
            }
        }
        [hsum(sum[0]), hsum(sum[1])]
    }
}

/// The AVX2 loop's shape with AVX-512's mask registers: masked loads that never touch a lane
/// past the range, masked adds instead of AND-then-add, and `vcvttps2qq` for `to_fix`.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use super::super::math::{BoidsAcc, FIX_CLAMP, FIX_SCALE};
    use super::super::Params;
    use super::avx2::{in_bounds, wrap8};
    use super::Cands;

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
            // SAFETY (caller): lanes set in k are slots within the axis (`in_bounds`); a masked
            // load never touches the others.
            let q = unsafe { _mm256_maskz_loadu_ps(k, c.pos[a].as_ptr().add(j)) };
            d[a] = _mm256_sub_ps(q, _mm256_set1_ps(pi[a]));
            if wrap {
                d[a] = wrap8(d[a], p.world[a], p.half_world[a]);
            }
        }
        d
    }

    #[target_feature(enable = "avx512f,avx512dq,avx512vl")]
    pub(super) unsafe fn boids_sums<const D: usize>(
        p: &Params,
        wrap: bool,
        pi: &[f32; D],
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
                let k_ali = _mm256_mask_cmp_ps_mask::<_CMP_LT_OQ>(k, d2, r_ali2);
                let k_coh = _mm256_mask_cmp_ps_mask::<_CMP_LT_OQ>(k, d2, r_coh2);
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

    #[target_feature(enable = "avx512f,avx512dq,avx512vl")]
    pub(super) unsafe fn vicsek_sum(
        p: &Params,
        pi: [f32; 2],
        c: &Cands<2>,
        ranges: &[(u32, u32)],
    ) -> [i64; 2] {
        in_bounds(c, ranges);
        let wrap = p.wraps();
        let mut sum = [_mm512_setzero_si512(); 2];
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
                for x in 0..2 {
                    // SAFETY: as in `offsets`.
                    let v = unsafe { _mm512_maskz_loadu_epi64(m, c.vfix[x].as_ptr().add(j)) };
                    sum[x] = _mm512_add_epi64(sum[x], v);
                }
                j += 8;
            }
        }
        [
            _mm512_reduce_add_epi64(sum[0]),
            _mm512_reduce_add_epi64(sum[1]),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random floats of every exponent and sign, plus the edges.
    fn samples() -> Vec<f32> {
        let mut v = vec![
            0.0,
            -0.0,
            f32::NAN,
            -f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MIN_POSITIVE,
            1e-45,
            -1e-45,
            1.0,
            -1.0,
            0.5,
            2.3283064e-10, // 2^-32: the smallest step
            -2.3283064e-10,
            FIX_CLAMP_TEST,
            -FIX_CLAMP_TEST,
            FIX_CLAMP_TEST * 1.0000001,
            3.0e9,
            -3.0e9,
            f32::MAX,
            f32::MIN,
        ];
        let mut z = 0x1234_5678_9abc_def0u64;
        for i in 0..400_000 {
            z = super::super::math::mix64(z);
            let bits = f32::from_bits(z as u32);
            // Half any bit pattern, half the magnitudes a step meets (the fast path),
            // runs of eight alike so that whole registers take each path.
            v.push(if (i / 8) % 2 == 0 {
                bits
            } else {
                ((z >> 40) as f32 / (1u64 << 24) as f32 - 0.5)
                    * 2f32.powi((z >> 32) as i32 % 40 - 20)
            });
        }
        v
    }
    const FIX_CLAMP_TEST: f32 = super::super::math::FIX_CLAMP;

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx512_to_fix8_matches_to_fix_bit_for_bit() {
        if detect() != Isa::Avx512 {
            eprintln!("no AVX-512 on this CPU: skipped");
            return;
        }
        use std::arch::x86_64::*;
        for chunk in samples().chunks_exact(8) {
            let x: [f32; 8] = chunk.try_into().unwrap();
            // SAFETY: AVX-512 F/DQ/VL detected above.
            let got = unsafe {
                let mut out = [0i64; 8];
                _mm512_storeu_si512(
                    out.as_mut_ptr() as *mut _,
                    avx512::to_fix8(_mm256_loadu_ps(x.as_ptr())),
                );
                out
            };
            assert_eq!(got, to_fix8_reference(x), "{x:?}");
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn to_fix8_matches_to_fix_bit_for_bit() {
        if detect() == Isa::Scalar {
            eprintln!("no AVX2 on this CPU: skipped");
            return;
        }
        use std::arch::x86_64::*;
        for chunk in samples().chunks_exact(8) {
            let x: [f32; 8] = chunk.try_into().unwrap();
            let want = to_fix8_reference(x);
            // SAFETY: AVX2 detected above.
            let got = unsafe {
                let (lo, hi) = avx2::to_fix8(_mm256_loadu_ps(x.as_ptr()));
                let mut out = [0i64; 8];
                _mm256_storeu_si256(out.as_mut_ptr() as *mut __m256i, lo);
                _mm256_storeu_si256(out.as_mut_ptr().add(4) as *mut __m256i, hi);
                out
            };
            assert_eq!(got, want, "{x:?}");
        }
    }
}
