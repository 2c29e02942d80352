//! The neighbour-candidate loop, in lanes: the part of the step that visits every candidate
//! pair (boids 2D/3D, Vicsek), written as plain scalar code here, and eight candidates at a
//! time with AVX2 (`avx2.rs`) and with AVX-512 (`avx512.rs`, the same loop with mask registers).
//! Everything else of the step stays scalar.
//!
//! **Same bytes.** Every version computes the same sums bit for bit, so the choice can never
//! show in a recording (DESIGN.md, the determinism contract):
//! - offsets, squared distances and the separation quotient use only IEEE add, subtract,
//!   multiply and divide, each correctly rounded lane by lane exactly as in scalar code, in
//!   the same order (`dx*dx + dy*dy`, then `+ dz*dz`). No FMA: Rust never contracts a
//!   multiply and an add into one (it emits no `contract` flag), whatever the target features
//!   allow (`avx512f` implies `fma`); `objdump -d target/release/forge` shows no `vfmadd` in
//!   these functions;
//! - minimum image and radius tests are lane masks (compare + blend), not branches;
//! - terms are converted to 64-bit fixed point by `to_fix8`, which reproduces
//!   [`to_fix`](super::math::to_fix) exactly (clamp, NaN → −2^30, truncation toward zero):
//!   AVX-512 with `vcvttps2qq`, AVX2 (which has no float → i64 conversion) from the float's
//!   bits; masked-out candidates add an exact zero (tests below compare both with `to_fix`);
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

use super::math::{selects_pay, wrap_delta, wrap_delta_by, BoidsAcc, Sight};
use super::Params;

/// Which candidate loop runs: a token that only [`isa`] (which asks the CPU) hands out, so
/// [`boids_sums`] and [`vicsek_sum`] are sound for every value safe code can hold. The scalar
/// loop, which runs anywhere, is [`Isa::SCALAR`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Isa(Kind);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Scalar,
    /// x86-64 AVX2 (detected at run time).
    Avx2,
    /// x86-64 AVX-512 F + DQ + VL (detected at run time): the same loop with mask registers
    /// and the exact f32 → i64 truncation AVX2 lacks (`vcvttps2qq`).
    Avx512,
}

impl Isa {
    /// The scalar loop: every CPU runs it.
    pub const SCALAR: Isa = Isa(Kind::Scalar);

    /// The name the guide and `forge bench` print.
    pub fn name(self) -> &'static str {
        match self.0 {
            Kind::Scalar => "scalar",
            Kind::Avx2 => "AVX2",
            Kind::Avx512 => "AVX-512",
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
            Ok(v) if matches!(v.as_str(), "off" | "scalar" | "0") => Isa::SCALAR,
            // AVX-512 (F) implies AVX2 on every CPU that has it.
            Ok(v) if v == "avx2" && best.0 == Kind::Avx512 => Isa(Kind::Avx2),
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
            return Isa(Kind::Avx512);
        }
        if is_x86_feature_detected!("avx2") {
            return Isa(Kind::Avx2);
        }
    }
    Isa::SCALAR
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
/// it was written, which stalled every agent on a failed store-to-load forward). With a
/// `sight`, alignment and cohesion count only the candidates it sees ([`Sight::sees`]); each
/// loop is compiled with and without the test, so a scene without a blind angle runs the loop
/// it always ran.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn boids_sums<const D: usize>(
    isa: Isa,
    p: &Params,
    wrap: bool,
    pi: &[f32; D],
    sight: Option<&Sight<D>>,
    c: &Cands<D>,
    ranges: &[(u32, u32)],
    out: &mut BoidsAcc<D>,
) {
    // What the loops compiled without the field-of-view test are handed (and never read).
    #[cfg(target_arch = "x86_64")]
    let unused = Sight {
        u: [0.0; D],
        c2: 0.0,
        wide: false,
    };
    #[cfg(target_arch = "x86_64")]
    match (isa.0, sight) {
        (Kind::Avx512, None) => {
            // SAFETY: an `Isa` other than the scalar one is made only by `detect`, on a CPU
            // that has its instructions.
            return unsafe { avx512::boids_sums::<D, false>(p, wrap, pi, &unused, c, ranges, out) };
        }
        (Kind::Avx512, Some(s)) => {
            // SAFETY: as for the first arm: `detect` made this `Isa` on a CPU that has it.
            return unsafe { avx512::boids_sums::<D, true>(p, wrap, pi, s, c, ranges, out) };
        }
        (Kind::Avx2, None) => {
            // SAFETY: as for the first arm: `detect` made this `Isa` on a CPU that has it.
            return unsafe { avx2::boids_sums::<D, false>(p, wrap, pi, &unused, c, ranges, out) };
        }
        (Kind::Avx2, Some(s)) => {
            // SAFETY: as for the first arm: `detect` made this `Isa` on a CPU that has it.
            return unsafe { avx2::boids_sums::<D, true>(p, wrap, pi, s, c, ranges, out) };
        }
        (Kind::Scalar, _) => {}
    }
    let _ = isa;
    *out = boids_sums_scalar(p, wrap, pi, sight, c, ranges);
}

fn boids_sums_scalar<const D: usize>(
    p: &Params,
    wrap: bool,
    pi: &[f32; D],
    sight: Option<&Sight<D>>,
    c: &Cands<D>,
    ranges: &[(u32, u32)],
) -> BoidsAcc<D> {
    // One loop per case, each without a test of the case inside (brute force's selects: the
    // scalar loop over 6500 agents in half the time).
    if selects_pay(wrap, ranges) {
        scalar_loop::<D, true, true>(p, pi, sight, c, ranges)
    } else if wrap {
        scalar_loop::<D, true, false>(p, pi, sight, c, ranges)
    } else {
        scalar_loop::<D, false, false>(p, pi, sight, c, ranges)
    }
}

/// The scalar candidate loop; the minimum image where `WRAP`, by selects where `SELECT`.
#[inline(always)]
fn scalar_loop<const D: usize, const WRAP: bool, const SELECT: bool>(
    p: &Params,
    pi: &[f32; D],
    sight: Option<&Sight<D>>,
    c: &Cands<D>,
    ranges: &[(u32, u32)],
) -> BoidsAcc<D> {
    let rmax2 = p.r_sep2.max(p.r_ali2).max(p.r_coh2);
    let mut acc = BoidsAcc::<D>::new();
    for &(a, b) in ranges {
        for j in a as usize..b as usize {
            let mut d = [0f32; D];
            for k in 0..D {
                let dk = c.pos[k][j] - pi[k];
                d[k] = wrap_delta_by::<SELECT>(dk, p.world[k], p.half_world[k], WRAP);
            }
            let d2 = super::math::norm2(&d);
            if d2 < rmax2 {
                let vfix: [i64; D] = crate::sim::math::array(|k| c.vfix[k][j]);
                let seen = sight.is_none_or(|s| s.sees(&d, d2));
                acc.boids_pair(p, &d, d2, &vfix, seen);
            }
        }
    }
    acc
}

/// Vicsek: the fixed-point sum of the unit velocities of the candidates within `p.r_ali2`
/// of `pi` (the particle itself included: d² = 0), and how many there are (vectorial noise
/// scales with it).
#[inline(always)]
pub fn vicsek_sum(
    isa: Isa,
    p: &Params,
    pi: [f32; 2],
    c: &Cands<2>,
    ranges: &[(u32, u32)],
) -> ([i64; 2], u32) {
    #[cfg(target_arch = "x86_64")]
    match isa.0 {
        // SAFETY: as in `boids_sums`.
        Kind::Avx512 => return unsafe { avx512::vicsek_sum(p, pi, c, ranges) },
        // SAFETY: as in `boids_sums`.
        Kind::Avx2 => return unsafe { avx2::vicsek_sum(p, pi, c, ranges) },
        Kind::Scalar => {}
    }
    let _ = isa;
    let wrap = p.wraps();
    let mut sum = [0i64; 2];
    let mut count = 0u32;
    for &(a, b) in ranges {
        for j in a as usize..b as usize {
            let dx = wrap_delta(c.pos[0][j] - pi[0], p.world[0], p.half_world[0], wrap);
            let dy = wrap_delta(c.pos[1][j] - pi[1], p.world[1], p.half_world[1], wrap);
            // Branch-free: add the unit velocity or zero.
            let inside = (dx * dx + dy * dy < p.r_ali2) as u32;
            let mask = -(inside as i64);
            sum[0] = sum[0].wrapping_add(c.vfix[0][j] & mask);
            sum[1] = sum[1].wrapping_add(c.vfix[1][j] & mask);
            count += inside;
        }
    }
    (sum, count)
}

/// Eight floats to fixed point, exactly as [`to_fix`] does one (see the AVX2 version).
#[cfg(test)]
fn to_fix8_reference(x: [f32; 8]) -> [i64; 8] {
    x.map(super::math::to_fix)
}

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;

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
        if detect().0 != Kind::Avx512 {
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
        if detect() == Isa::SCALAR {
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

    /// The candidate loops this CPU runs: scalar, and AVX2 and AVX-512 where it has them.
    fn loops() -> Vec<Isa> {
        let mut v = vec![Isa::SCALAR];
        match detect().0 {
            Kind::Avx512 => v.extend([Isa(Kind::Avx2), Isa(Kind::Avx512)]),
            Kind::Avx2 => v.push(Isa(Kind::Avx2)),
            Kind::Scalar => {}
        }
        v
    }

    fn params(fov: f32) -> Params {
        let mut p = Params::from_scene(&crate::scene::Scene::load("cuplan").unwrap(), 300);
        p.fov_cos = super::super::math::fov_cos(fov);
        p
    }

    /// Every loop gives the scalar loop's sums with a field of view (narrow, 180°, wide) and
    /// without, in 2D and 3D, wrapping or not, over ranges with ragged tails: candidates in a
    /// cluster, on either side of the wrap seam, on one spot, on the edge of the field (at
    /// fov/2 from the heading, where a rounding decides) and the agent itself among them.
    fn sums_agree<const D: usize>() {
        let mut z = 0x5eed_u64;
        let mut next = move || {
            z = super::super::math::mix64(z);
            (z >> 40) as f32 / (1u64 << 24) as f32
        };
        let cluster = 203;
        let mut base: Vec<[f32; D]> = Vec::new();
        for j in 0..cluster {
            // The world is 60 wide.
            base.push(crate::sim::math::array(|_| match (j % 17, j % 23) {
                (5, _) => 30.0,
                (_, 7) => 59.5 - next(),
                (_, 8) => 0.5 + next(),
                _ => 22.0 + 16.0 * next(),
            }));
        }
        let vel: [f32; D] = crate::sim::math::array(|k| [1.5, -0.5, 0.25][k]);
        let mut hidden = 0;
        for fov in [360.0, 90.0, 180.0, 250.0, 30.0] {
            let p = params(fov);
            let sight = Sight::new(&p, &vel);
            assert_eq!(sight.is_some(), fov < 360.0);
            for me in [0usize, 5, 7, 8, 22, 150] {
                let pi = base[me];
                // The cluster, then candidates on the edge of the field around the agent: its
                // heading turned by ±fov/2 (in the x–y plane), at several distances.
                let mut pts = base.clone();
                let half = (fov as f64 / 2.0).to_radians();
                for i in 0..120 {
                    let s = if i % 2 == 0 { 1.0 } else { -1.0 } * half.sin();
                    let (c, r) = (half.cos(), 0.5 + 7.0 * next() as f64);
                    let mut q = pi;
                    q[0] += ((c * vel[0] as f64 - s * vel[1] as f64) * r) as f32;
                    q[1] += ((s * vel[0] as f64 + c * vel[1] as f64) * r) as f32;
                    pts.push(q);
                }
                let m = pts.len() as u32;
                let pos: Vec<Vec<f32>> =
                    (0..D).map(|k| pts.iter().map(|q| q[k]).collect()).collect();
                let vfix: Vec<Vec<i64>> = (0..D)
                    .map(|_| {
                        (0..m)
                            .map(|_| super::super::math::to_fix(next() * 5.0 - 2.5))
                            .collect()
                    })
                    .collect();
                let c = Cands::<D> {
                    pos: crate::sim::math::array(|k| &pos[k][..]),
                    vfix: crate::sim::math::array(|k| &vfix[k][..]),
                };
                let ranges = [(0u32, 13u32), (13, 14), (40, m), (20, 27)];
                for wrap in [false, true] {
                    let want = boids_sums_scalar(&p, wrap, &pi, sight.as_ref(), &c, &ranges);
                    let all = boids_sums_scalar(&p, wrap, &pi, None, &c, &ranges);
                    hidden += (all.n_ali - want.n_ali) as usize;
                    for isa in loops() {
                        let mut got = BoidsAcc::<D>::new();
                        boids_sums(isa, &p, wrap, &pi, sight.as_ref(), &c, &ranges, &mut got);
                        let what = format!("{} D={D} fov {fov} me {me} wrap {wrap}", isa.name());
                        assert_eq!(got.sep, want.sep, "{what}: sep");
                        assert_eq!(got.ali, want.ali, "{what}: ali");
                        assert_eq!(got.coh, want.coh, "{what}: coh");
                        assert_eq!((got.n_ali, got.n_coh), (want.n_ali, want.n_coh), "{what}");
                    }
                }
            }
        }
        assert!(
            hidden > 0,
            "the blind angle hid no candidate: the test is vacuous"
        );
    }

    #[test]
    fn every_loop_sums_the_same_with_a_field_of_view() {
        sums_agree::<2>();
        sums_agree::<3>();
    }
}
