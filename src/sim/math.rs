//! The per-agent arithmetic of the step, shared by both neighbour searches.
//!
//! Determinism contract (DESIGN.md): float32 state; only IEEE-exact operations (+ − × ÷ sqrt)
//! in a fixed order (Rust never contracts to FMA); neighbour sums in 64-bit fixed point so the
//! order of summation cannot change the result; randomness from a counter-based hash of
//! (seed, step, agent). `kernels/*.cu` mirror these functions name by name.

use super::flight::flight;
use super::obstacles::{Near, Obstacles};
use super::Params;

/// Fixed-point scale of neighbour sums: 32 fractional bits.
pub const FIX_SCALE: f32 = 4_294_967_296.0;
pub const FIX_INV: f32 = 1.0 / 4_294_967_296.0;
/// Largest magnitude converted to fixed point (2^30): larger terms saturate, so that the sum of
/// up to 2^32 terms can never overflow an i64.
pub const FIX_CLAMP: f32 = 1_073_741_824.0;

/// f32 → 64-bit fixed point: clamp to ±2^30 (NaN → −2^30, as IEEE maxNum/fmaxf do), scale by
/// 2^32, truncate toward zero.
#[inline(always)]
pub fn to_fix(x: f32) -> i64 {
    let c = if x >= -FIX_CLAMP { x } else { -FIX_CLAMP };
    let c = if c <= FIX_CLAMP { c } else { FIX_CLAMP };
    // SAFETY: c is finite and |c · 2^32| ≤ 2^62 < 2^63.
    unsafe { (c * FIX_SCALE).to_int_unchecked::<i64>() }
}

/// 64-bit fixed point → f32 (round to nearest, then an exact power-of-two scale).
#[inline(always)]
pub fn from_fix(s: i64) -> f32 {
    (s as f32) * FIX_INV
}

/// Shortest signed offset `b − a` along one axis (minimum image when the world wraps).
#[inline(always)]
pub fn wrap_delta(d: f32, size: f32, half: f32, wrap: bool) -> f32 {
    if wrap {
        if d > half {
            return d - size;
        }
        if d < -half {
            return d + size;
        }
    }
    d
}

/// [`wrap_delta`] of a wrapping world as two selects instead of two branches: the same value
/// (the two tests exclude each other; a NaN passes both). For candidates at random offsets
/// (brute force, [`selects_pay`]), where the branches mispredict; near neighbours (the
/// grid) are faster with the branches.
#[inline(always)]
pub fn wrap_delta_select(d: f32, size: f32, half: f32) -> f32 {
    let t = if d > half { d - size } else { d };
    if d < -half {
        d + size
    } else {
        t
    }
}

/// [`wrap_delta`], by selects where `SELECT` (the world wraps: see [`selects_pay`]).
#[inline(always)]
pub fn wrap_delta_by<const SELECT: bool>(d: f32, size: f32, half: f32, wrap: bool) -> f32 {
    if SELECT {
        wrap_delta_select(d, size, half)
    } else {
        wrap_delta(d, size, half, wrap)
    }
}

/// Whether a loop over `ranges` takes the minimum image by selects: the world wraps and
/// `ranges` is one run of at least 64 candidate slots — brute force's range of every slot, at
/// random offsets, where the branches mispredict (a grid's ranges are a few cells long and
/// seldom cross the seam).
#[inline(always)]
pub fn selects_pay(wrap: bool, ranges: &[(u32, u32)]) -> bool {
    wrap && ranges.len() == 1 && ranges[0].1 - ranges[0].0 >= 64
}

/// SplitMix64's finaliser: a bijective 64-bit mixer.
#[inline(always)]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Counter-based random bits keyed by (seed, step, agent, stream): no state, any order.
#[inline(always)]
pub fn rand_u32(seed: u64, step: u64, agent: u64, stream: u64) -> u32 {
    let k = mix64(seed ^ 0x9e37_79b9_7f4a_7c15);
    let k = mix64(k ^ step.wrapping_mul(0xd1b5_4a32_d192_ed03));
    let k = mix64(k ^ agent.wrapping_mul(0xaf25_1af3_b0f0_25b5) ^ stream);
    (k >> 32) as u32
}

/// Uniform in [0, 1) with 24 random bits (exactly representable).
#[inline(always)]
pub fn rand_uniform(seed: u64, step: u64, agent: u64, stream: u64) -> f32 {
    ((rand_u32(seed, step, agent, stream) >> 8) as f32) * (1.0 / 16_777_216.0)
}

/// (cos x, sin x) for x in [−π, π] as a fixed polynomial: Taylor series on x/4 (|x/4| ≤ π/4,
/// error < 2e-9) then two double-angle steps. Same operations in the same order on every
/// backend, so the same bits.
#[inline(always)]
pub fn cos_sin(x: f32) -> (f32, f32) {
    let h = x * 0.25;
    let h2 = h * h;
    // sin h = h (1 − h²/6 (1 − h²/20 (1 − h²/42 (1 − h²/72))))
    let s = h
        * (1.0
            - h2 * (1.0 / 6.0)
                * (1.0
                    - h2 * (1.0 / 20.0) * (1.0 - h2 * (1.0 / 42.0) * (1.0 - h2 * (1.0 / 72.0)))));
    // cos h = 1 − h²/2 (1 − h²/12 (1 − h²/30 (1 − h²/56 (1 − h²/90))))
    let c = 1.0
        - h2 * 0.5
            * (1.0
                - h2 * (1.0 / 12.0)
                    * (1.0
                        - h2 * (1.0 / 30.0)
                            * (1.0 - h2 * (1.0 / 56.0) * (1.0 - h2 * (1.0 / 90.0)))));
    let (c, s) = (c * c - s * s, 2.0 * s * c);
    (c * c - s * s, 2.0 * s * c)
}

/// Keep a coordinate in the world: wrap into [0, size), or reflect (flipping the velocity).
#[inline(always)]
#[allow(clippy::collapsible_match)] // one arm per boundary, as the CUDA kernels' switch reads
pub fn apply_boundary(p: &mut f32, v: &mut f32, size: f32, boundary: u32) {
    match boundary {
        0 => {
            if *p < 0.0 || *p >= size {
                let mut q = *p - size * (*p / size).floor();
                if q >= size || q < 0.0 {
                    q = 0.0;
                }
                *p = q;
            }
        }
        1 => {
            if *p < 0.0 {
                *p = -*p;
                *v = -*v;
            } else if *p > size {
                *p = size - (*p - size);
                *v = -*v;
            }
            // An agent faster than the world is wide: clamp.
            if *p < 0.0 {
                *p = 0.0;
            } else if *p > size {
                *p = size;
            }
        }
        _ => {}
    }
}

/// Running neighbour sums of one boid, in fixed point.
#[derive(Clone, Copy)]
pub struct BoidsAcc<const D: usize> {
    pub sep: [i64; D],
    pub ali: [i64; D],
    pub coh: [i64; D],
    pub n_ali: u32,
    pub n_coh: u32,
}

impl<const D: usize> BoidsAcc<D> {
    #[inline(always)]
    pub fn new() -> Self {
        BoidsAcc {
            sep: [0; D],
            ali: [0; D],
            coh: [0; D],
            n_ali: 0,
            n_coh: 0,
        }
    }

    /// One neighbour candidate j within the largest radius, at offset `d = p_j − p_i`
    /// (minimum image), squared distance `d2`, velocity already in fixed point (`vfix_j`,
    /// see [`to_fix`]); `seen`: whether it is in the agent's field of view ([`Sight::sees`];
    /// true without one), which alignment and cohesion need and separation does not. The
    /// agent itself may be among the candidates (d2 = 0, always seen): take it out afterwards
    /// with [`BoidsAcc::remove_self`]. Alignment and cohesion add their term or an exact zero
    /// (branch-free: nearly every candidate counts for both); separation, rarer, branches.
    #[inline(always)]
    pub fn boids_pair(&mut self, p: &Params, d: &[f32; D], d2: f32, vfix_j: &[i64; D], seen: bool) {
        if (d2 < p.r_sep2) & (d2 > 0.0) {
            // (p_i − p_j) / |p_i − p_j|²
            for k in 0..D {
                self.sep[k] = self.sep[k].wrapping_add(to_fix(-d[k] / d2));
            }
        }
        let m_ali = (d2 < p.r_ali2) & seen;
        let m_coh = (d2 < p.r_coh2) & seen;
        for k in 0..D {
            self.ali[k] = self.ali[k].wrapping_add(vfix_j[k] & -(m_ali as i64));
            self.coh[k] = self.coh[k].wrapping_add(to_fix(d[k]) & -(m_coh as i64));
        }
        self.n_ali += m_ali as u32;
        self.n_coh += m_coh as u32;
    }

    /// Undo what the agent itself added as a candidate (d = 0, d2 = 0): exact in fixed point.
    #[inline(always)]
    pub fn remove_self(&mut self, p: &Params, vfix_self: &[i64; D]) {
        if 0.0 < p.r_ali2 {
            for k in 0..D {
                self.ali[k] = self.ali[k].wrapping_sub(vfix_self[k]);
            }
            self.n_ali -= 1;
        }
        if 0.0 < p.r_coh2 {
            // Its cohesion term was to_fix(0) = 0.
            self.n_coh -= 1;
        }
    }
}

impl<const D: usize> Default for BoidsAcc<D> {
    fn default() -> Self {
        Self::new()
    }
}

pub use super::each::array;

/// Squared length, summed x, y, z in that order.
#[inline(always)]
pub fn norm2<const D: usize>(v: &[f32; D]) -> f32 {
    let mut s = v[0] * v[0];
    for k in 1..D {
        s += v[k] * v[k];
    }
    s
}

/// Steering from the sums and the obstacles' avoidance ([`Obstacles::steer`]), clamped to
/// max_force; semi-implicit Euler; heading noise (when `p.heading_noise > 0`, keyed by `step`
/// and the agent's id `agent`); speed band; boundary; then no boid left inside an obstacle
/// ([`Obstacles::settle`]); `near`: the obstacles' masks for the boid's cell ([`Near`]).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn boids_integrate<const D: usize>(
    p: &Params,
    obs: &Obstacles,
    near: Near,
    acc: &BoidsAcc<D>,
    step: u64,
    agent: u64,
    pos: &mut [f32; D],
    vel: &mut [f32; D],
) {
    let a = boids_accel(p, acc, vel);
    boids_move(p, obs, near, a, step, agent, pos, vel);
}

/// The steering of the three rules from the neighbour sums (before obstacles and the clamp).
#[inline(always)]
pub fn boids_accel<const D: usize>(p: &Params, acc: &BoidsAcc<D>, vel: &[f32; D]) -> [f32; D] {
    let mut a = [0f32; D];
    for k in 0..D {
        a[k] = p.w_sep * from_fix(acc.sep[k]);
    }
    if acc.n_ali > 0 {
        let n = acc.n_ali as f32;
        for k in 0..D {
            a[k] += p.w_ali * (from_fix(acc.ali[k]) / n - vel[k]);
        }
    }
    if acc.n_coh > 0 {
        let n = acc.n_coh as f32;
        for k in 0..D {
            a[k] += p.w_coh * (from_fix(acc.coh[k]) / n);
        }
    }
    a
}

/// The rest of [`boids_integrate`] from the steering `a`: obstacles' avoidance, the clamp to
/// max_force, Euler, heading noise, speed band, boundary, settling out of obstacles (`near`:
/// the obstacles' masks for the boid's cell, [`Near`]).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn boids_move<const D: usize>(
    p: &Params,
    obs: &Obstacles,
    near: Near,
    mut a: [f32; D],
    step: u64,
    agent: u64,
    pos: &mut [f32; D],
    vel: &mut [f32; D],
) {
    // No shape in sight: nothing to steer around.
    if near.see != 0 {
        obs.steer(near.see, *pos, *vel, &mut a);
    }
    let a2 = norm2(&a);
    if a2 > p.max_force * p.max_force {
        let f = p.max_force / a2.sqrt();
        for x in a.iter_mut() {
            *x *= f;
        }
    }
    if D == 3 && p.flight != 0 {
        flight(p, &pos[..], &vel[..], &mut a[..]);
    }
    for k in 0..D {
        vel[k] += a[k] * p.dt;
    }
    if p.heading_noise > 0.0 {
        heading_noise(p, step, agent, vel);
    }
    let s2 = norm2(vel);
    if s2 > p.v_max * p.v_max {
        let f = p.v_max / s2.sqrt();
        for x in vel.iter_mut() {
            *x *= f;
        }
    } else if s2 < p.v_min * p.v_min && s2 > 0.0 {
        let f = p.v_min / s2.sqrt();
        for x in vel.iter_mut() {
            *x *= f;
        }
    }
    if obs.is_empty() {
        for k in 0..D {
            pos[k] += vel[k] * p.dt;
            apply_boundary(&mut pos[k], &mut vel[k], p.world[k], p.boundary);
        }
        return;
    }
    let old = *pos;
    for k in 0..D {
        pos[k] += vel[k] * p.dt;
    }
    let moved = *pos;
    for k in 0..D {
        apply_boundary(&mut pos[k], &mut vel[k], p.world[k], p.boundary);
    }
    // None within a step's reach, and the world's boundary left the move alone: none to
    // settle out of.
    if near.touch == 0 && *pos == moved {
        return;
    }
    (*pos, *vel) = obs.settle(p, &old, &moved, *pos, *vel);
}

/// Random stream of a boid's heading-noise angle (Vicsek's noise draws from stream 0).
pub const STREAM_HEADING: u64 = 1;
/// Random stream of the direction a 3D boid's heading noise turns it towards.
pub const STREAM_AXIS: u64 = 2;

/// Heading noise: turn `vel` by θ = (u − ½)·w, u uniform in [0, 1) from stream
/// [`STREAM_HEADING`] of (seed, step, agent), w = `p.heading_noise` = η·√dt. The speed is kept
/// (to rounding). Scaled by √dt, the heading diffuses at the same rate whatever the step: the
/// variance of the angle turned in a time T is (T/dt)·w²/12 = T·η²/12 (rotational diffusion
/// D_r = η²/24), and at dt = 1 the angle is Vicsek's, uniform in [−η/2, η/2).
/// - 2D: the rotation by θ, as Vicsek's angular noise turns its heading.
/// - 3D: the rotation by θ about an axis perpendicular to the velocity: with n = v/|v| and
///   (e1, e2) an orthonormal basis of the plane normal to n (Duff et al. 2017, "Building an
///   orthonormal basis, revisited": only + − × ÷ and a sign), the direction turned towards is
///   t = cos φ·e1 + sin φ·e2 with φ = (u' − ½)·2π from stream [`STREAM_AXIS`], and
///   v ← cos θ·v + sin θ·|v|·t (the rotation about n × t). A velocity of zero has no heading
///   and is left as it is.
#[inline(always)]
pub fn heading_noise<const D: usize>(p: &Params, step: u64, agent: u64, vel: &mut [f32; D]) {
    let u = rand_uniform(p.seed, step, agent, STREAM_HEADING) - 0.5;
    let (c, s) = cos_sin(u * p.heading_noise);
    if D == 2 {
        turn2(c, s, vel);
    } else {
        turn3(p, step, agent, c, s, vel);
    }
}

/// 2D heading noise: `v` (two components) rotated by the angle of cosine `c` and sine `s`.
#[inline(always)]
fn turn2(c: f32, s: f32, v: &mut [f32]) {
    let (x, y) = (v[0], v[1]);
    v[0] = c * x - s * y;
    v[1] = s * x + c * y;
}

/// 3D heading noise: `v` (three components) turned by the angle of cosine `c` and sine `s`
/// towards a random direction perpendicular to it (see [`heading_noise`]).
#[inline(always)]
fn turn3(p: &Params, step: u64, agent: u64, c: f32, s: f32, v: &mut [f32]) {
    let s2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
    // Zero (or NaN): no heading to turn.
    if s2.is_nan() || s2 <= 0.0 {
        return;
    }
    let speed = s2.sqrt();
    let n = [v[0] / speed, v[1] / speed, v[2] / speed];
    let sign = if n[2] >= 0.0 { 1.0f32 } else { -1.0 };
    let a = -1.0 / (sign + n[2]);
    let b = n[0] * n[1] * a;
    let e1 = [1.0 + sign * n[0] * n[0] * a, sign * b, -sign * n[0]];
    let e2 = [b, sign + n[1] * n[1] * a, -n[1]];
    let phi = (rand_uniform(p.seed, step, agent, STREAM_AXIS) - 0.5) * TWO_PI;
    let (cp, sp) = cos_sin(phi);
    let ss = s * speed;
    for k in 0..3 {
        let t = cp * e1[k] + sp * e2[k];
        v[k] = c * v[k] + ss * t;
    }
}

/// `cos(fov/2)` for a field of view of `fov` degrees, as [`Params::fov_cos`] holds it: exactly
/// −1 for 360° (no blind angle), else our own polynomial ([`cos_sin`]), so that every machine
/// computes the same bits.
pub fn fov_cos(fov: f32) -> f32 {
    if fov >= 360.0 {
        -1.0
    } else {
        cos_sin(fov * (std::f32::consts::PI / 360.0)).0
    }
}

/// What one boid sees, for the field-of-view test of every candidate: its heading `u` (unit
/// velocity), `c2 = cos²(fov/2)`, and whether the field is wider than 180° (`cos(fov/2) < 0`).
///
/// A candidate at offset d is within fov/2 of the heading when d·u ≥ cos(fov/2)·|d|. The test
/// is done without a square root and with IEEE-exact operations only, in this order
/// (`dot = d_x·u_x + d_y·u_y (+ d_z·u_z)`, `dd = dot·dot`, `q = c2·d2`):
/// - fov ≤ 180° (cos ≥ 0): seen ⇔ dot ≥ 0 and dd ≥ q;
/// - fov > 180° (cos < 0): seen ⇔ dot ≥ 0 or dd ≤ q.
///
/// The SIMD loops (src/sim/simd/) and the kernels (`sees` in kernels/forge_math.h) do the same
/// operations lane by lane, so they decide the same for every pair. The agent itself (d = 0:
/// dot = ±0, dd = q = 0) is always seen, as [`BoidsAcc::remove_self`] needs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sight<const D: usize> {
    pub u: [f32; D],
    pub c2: f32,
    pub wide: bool,
}

impl<const D: usize> Sight<D> {
    /// The sight of a boid moving with `vel`; None when it sees all around: no blind angle
    /// (`p.fov_cos ≤ −1`), or no heading (a velocity of zero).
    #[inline(always)]
    pub fn new(p: &Params, vel: &[f32; D]) -> Option<Sight<D>> {
        if p.fov_cos <= -1.0 {
            return None;
        }
        let s2 = norm2(vel);
        if s2.is_nan() || s2 <= 0.0 {
            return None;
        }
        let s = s2.sqrt();
        Some(Sight {
            u: crate::sim::math::array(|k| vel[k] / s),
            c2: p.fov_cos * p.fov_cos,
            wide: p.fov_cos < 0.0,
        })
    }

    /// Whether the candidate at offset `d` (squared length `d2`) is in the field of view.
    #[inline(always)]
    pub fn sees(&self, d: &[f32; D], d2: f32) -> bool {
        let mut dot = d[0] * self.u[0];
        // An index loop: zip and skip were calls per candidate (see `array`).
        #[allow(clippy::needless_range_loop)]
        for k in 1..D {
            dot += d[k] * self.u[k];
        }
        let dd = dot * dot;
        let q = self.c2 * d2;
        if self.wide {
            (dot >= 0.0) | (dd <= q)
        } else {
            (dot >= 0.0) & (dd >= q)
        }
    }
}

/// A velocity's direction (zero stays zero): what a Vicsek neighbour contributes.
#[inline(always)]
pub fn unit2(v: [f32; 2]) -> [f32; 2] {
    let s2 = v[0] * v[0] + v[1] * v[1];
    if s2 > 0.0 {
        let s = s2.sqrt();
        [v[0] / s, v[1] / s]
    } else {
        [0.0, 0.0]
    }
}

/// `Params::noise_kind` of Vicsek's angular noise (Vicsek et al. 1995).
pub const NOISE_ANGULAR: u32 = 0;
/// `Params::noise_kind` of vectorial noise (Grégoire & Chaté 2004).
pub const NOISE_VECTORIAL: u32 = 1;
/// 2π as a float (the width of a vectorial noise's random angle).
pub const TWO_PI: f32 = std::f32::consts::TAU;

/// The direction of `m`; where `m` is zero, the agent's own heading (or +x if it has none).
#[inline(always)]
pub fn heading(m: [f32; 2], own_unit: [f32; 2]) -> [f32; 2] {
    let m2 = m[0] * m[0] + m[1] * m[1];
    if m2 > 0.0 {
        let s = m2.sqrt();
        [m[0] / s, m[1] / s]
    } else if own_unit[0] != 0.0 || own_unit[1] != 0.0 {
        own_unit
    } else {
        [1.0, 0.0]
    }
}

/// Vicsek: the new heading from `sum`, the summed unit velocities of the `count` neighbours
/// within r (itself included), and the noise; constant speed v0; position advanced with the new
/// velocity. One random number u (stream 0) per agent and step, for either kind of noise:
/// - angular (Vicsek et al. 1995): the heading of `sum`, rotated by (u − ½)·η, uniform in
///   [−η/2, η/2);
/// - vectorial (Grégoire & Chaté 2004): the heading of `sum + η·count·(cos ξ, sin ξ)` with
///   ξ = (u − ½)·2π, a random unit vector.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn vicsek_integrate(
    p: &Params,
    sum: &[i64; 2],
    count: u32,
    own_unit: [f32; 2],
    step: u64,
    agent: u64,
    pos: &mut [f32; 2],
    vel: &mut [f32; 2],
) {
    let m = [from_fix(sum[0]), from_fix(sum[1])];
    let u = rand_uniform(p.seed, step, agent, 0) - 0.5;
    let nd = if p.noise_kind == NOISE_VECTORIAL {
        let (c, s) = cos_sin(u * TWO_PI);
        let a = p.noise * count as f32;
        heading([m[0] + a * c, m[1] + a * s], own_unit)
    } else {
        let dir = heading(m, own_unit);
        let (c, s) = cos_sin(u * p.noise);
        [c * dir[0] - s * dir[1], s * dir[0] + c * dir[1]]
    };
    for k in 0..2 {
        vel[k] = p.v0 * nd[k];
        pos[k] += vel[k] * p.dt;
        apply_boundary(&mut pos[k], &mut vel[k], p.world[k], p.boundary);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_delta_select_is_wrap_delta_bit_for_bit() {
        let (size, half) = (900.0f32, 450.0f32);
        let mut xs = vec![
            0.0,
            -0.0,
            half,
            -half,
            f32::from_bits(half.to_bits() + 1),
            -f32::from_bits(half.to_bits() + 1),
            size,
            -size,
            1e-30,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ];
        xs.extend((-2000..=2000).map(|i| i as f32 * 0.4567));
        for d in xs {
            assert_eq!(
                wrap_delta_select(d, size, half).to_bits(),
                wrap_delta(d, size, half, true).to_bits(),
                "d = {d}"
            );
        }
    }

    #[test]
    fn cos_sin_is_accurate() {
        let mut worst = 0f64;
        for i in -1000..=1000 {
            let x = i as f32 * std::f32::consts::PI / 1000.0;
            let (c, s) = cos_sin(x);
            worst = worst
                .max((c as f64 - (x as f64).cos()).abs())
                .max((s as f64 - (x as f64).sin()).abs());
        }
        assert!(worst < 2e-6, "worst error {worst}");
    }

    #[test]
    fn fixed_point_sums_are_order_free() {
        let xs = [1e-3f32, 123.456, -7.25, 3.0e5, -0.1, 1e-7];
        let a: i64 = xs.iter().map(|&x| to_fix(x)).fold(0, i64::wrapping_add);
        let b: i64 = xs
            .iter()
            .rev()
            .map(|&x| to_fix(x))
            .fold(0, i64::wrapping_add);
        assert_eq!(a, b);
        assert!((from_fix(to_fix(123.456)) - 123.456).abs() < 1e-4);
        assert_eq!(to_fix(f32::NAN), to_fix(-FIX_CLAMP));
        assert_eq!(to_fix(f32::INFINITY), to_fix(FIX_CLAMP));
    }

    #[test]
    fn wrap_boundary_stays_in_range() {
        for &x in &[-1e-9f32, -0.0, 31.6, 31.600002, -31.6, 70.0, 1e-30] {
            let (mut p, mut v) = (x, 1.0);
            apply_boundary(&mut p, &mut v, 31.6, 0);
            assert!((0.0..31.6).contains(&p), "{x} -> {p}");
        }
    }

    #[test]
    fn uniform_is_in_unit_interval() {
        for a in 0..10_000u64 {
            let u = rand_uniform(7, 3, a, 1);
            assert!((0.0..1.0).contains(&u));
        }
    }
}
