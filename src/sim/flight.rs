//! Flight (`boids.flight`, src/scene/flight.rs): StarDisplay's simplified aerodynamics and
//! roost, the part of a flying boid's step between the rules' clamped steering and Euler
//! (called from [`super::math::boids_move`]). Determinism contract as src/sim/math.rs:
//! `flight` in kernels/forge_math.h mirrors it line for line.

use super::Params;

/// Flight (`boids.flight`, src/scene/flight.rs; StarDisplay's simplified aerodynamics): the
/// clamped steering `a` of the rules (and the obstacles) is what the bird wants; this makes it
/// what the bird does, in 3D (`pos`, `vel`, `a` hold x, y, z).
/// - The wish is split along the bird's axes: e_x = v/|v| (forward), e_y = ẑ × e_x / |ẑ × e_x|
///   (its left wing, level; +y for a bird flying straight up or down), e_u = e_x × e_y (up, in
///   the vertical plane through e_x).
/// - The roost turns the bird, by a wish along e_y (StarDisplay's roost turns its birds by
///   banking too): towards a flow around the roost, counter-clockwise seen from above, drawn
///   in beyond `roost_radius` and out within it — u = s·(t + c·n), n the horizontal unit
///   vector to the roost's centre, t = (n_y, −n_x) the tangent, s = min(1, d/R) and
///   c = (d − R)/max(d, R) for the horizontal distance d and the radius R. The wish is
///   `w_roost_h · (u·e_y + max(0, −u·e_x))`: the flow's sideways part, plus a left turn
///   for a bird flying against it. The flow is smooth in space, so neighbours turn alike and
///   a flock is not torn where the roost lies to the left of some and the right of others.
///   Its height pulls along z: `w_roost_v · (roost_height − z)`.
/// - It banks into the turn: tan β = (wish · e_y) / g, within ±tan β_max, and its body's up
///   axis becomes b = cos β · e_u + sin β · e_y.
/// - Lift along b: L = g·|v|²/v₀² (weight carried at cruise speed) plus the wish along e_u
///   (pitching up or down), never below zero.
/// - Thrust along e_x: the wish along e_x plus (v₀ − |v|)/τ.
/// - Gravity: −g along z.
///
/// A bird without a heading (|v| = 0) keeps its wish as it is. Only + − × ÷ and sqrt, in this
/// order, as `flight` in kernels/forge_math.h.
#[inline(always)]
pub fn flight(p: &Params, pos: &[f32], vel: &[f32], a: &mut [f32]) {
    let s2 = vel[0] * vel[0] + vel[1] * vel[1] + vel[2] * vel[2];
    if s2 > 0.0 {
    } else {
        return;
    }
    let s = s2.sqrt();
    let f = [vel[0] / s, vel[1] / s, vel[2] / s];
    let h2 = f[0] * f[0] + f[1] * f[1];
    let ey = if h2 > 1e-12 {
        let h = h2.sqrt();
        [-f[1] / h, f[0] / h, 0.0]
    } else {
        [0.0, 1.0, 0.0]
    };
    let eu = [
        f[1] * ey[2] - f[2] * ey[1],
        f[2] * ey[0] - f[0] * ey[2],
        f[0] * ey[1] - f[1] * ey[0],
    ];
    let dx = p.roost[0] - pos[0];
    let dy = p.roost[1] - pos[1];
    let dh = (dx * dx + dy * dy).sqrt();
    let m = if dh > p.roost_radius {
        dh
    } else {
        p.roost_radius
    };
    let (nx, ny) = (dx / m, dy / m);
    let cf = (dh - p.roost_radius) / m;
    let ux = ny + cf * nx;
    let uy = cf * ny - nx;
    let along = ux * f[0] + uy * f[1];
    let side = ux * ey[0] + uy * ey[1];
    let back = if along < 0.0 { -along } else { 0.0 };
    let turn = p.w_roost_h * (side + back);
    let w = [a[0], a[1], a[2] + p.w_roost_v * (p.roost[2] - pos[2])];
    let wx = w[0] * f[0] + w[1] * f[1] + w[2] * f[2];
    let wy = w[0] * ey[0] + w[1] * ey[1] + w[2] * ey[2] + turn;
    let wu = w[0] * eu[0] + w[1] * eu[1] + w[2] * eu[2];
    let t = wy / p.gravity;
    let t = if t > p.tan_bank { p.tan_bank } else { t };
    let t = if t < -p.tan_bank { -p.tan_bank } else { t };
    let c = 1.0 / (1.0 + t * t).sqrt();
    let sn = t * c;
    let lift = p.lift_k * s2 + wu;
    let lift = if lift > 0.0 { lift } else { 0.0 };
    let thrust = wx + (p.cruise - s) * p.inv_tau;
    for k in 0..3 {
        a[k] = lift * (c * eu[k] + sn * ey[k]) + thrust * f[k];
    }
    a[2] -= p.gravity;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Flight parameters: cruise 10, τ 1, g 9.81, β_max 45°, a roost far off at height 60.
    fn flying() -> Params {
        let (g, v0) = (9.81f32, 10.0f32);
        Params {
            dim: 3,
            flight: 1,
            cruise: v0,
            inv_tau: 1.0,
            gravity: g,
            lift_k: g / (v0 * v0),
            tan_bank: 1.0,
            roost: [0.0, 0.0, 60.0],
            roost_radius: 1.0,
            ..Params::default()
        }
    }

    #[test]
    fn flight_carries_the_weight_at_cruise_and_banks_into_turns() {
        let p = flying();
        let pos = [0.0, 0.0, 60.0];
        // Level at cruise speed, no wish: lift balances gravity.
        let mut a = [0.0f32; 3];
        flight(&p, &pos, &[10.0, 0.0, 0.0], &mut a);
        assert!(a.iter().all(|x| x.abs() < 1e-5), "{a:?}");
        // A wish to the left (+y for a bird flying +x): it banks by atan(wy / g) and turns with
        // the lift's sideways part, losing height (only g·cos β of lift upward).
        let wy = 9.81 * (30f32).to_radians().tan();
        let mut a = [0.0, wy, 0.0];
        flight(&p, &pos, &[10.0, 0.0, 0.0], &mut a);
        let (sin, cos) = (30f32).to_radians().sin_cos();
        assert!((a[1] - 9.81 * sin).abs() < 1e-4, "{a:?}");
        assert!((a[2] - (9.81 * cos - 9.81)).abs() < 1e-4, "{a:?}");
        assert!(a[0].abs() < 1e-5, "{a:?}");
        // Banked no further than β_max (45°): the turn is g·sin 45° however hard the wish.
        let mut a = [0.0, -1000.0, 0.0];
        flight(&p, &pos, &[10.0, 0.0, 0.0], &mut a);
        assert!((a[1] + 9.81 * (0.5f32).sqrt()).abs() < 1e-4, "{a:?}");
        // Half the cruise speed: a quarter of the lift, and thrust (v0 - v)/τ = 5 forward.
        let mut a = [0.0f32; 3];
        flight(&p, &pos, &[5.0, 0.0, 0.0], &mut a);
        assert!(
            (a[0] - 5.0).abs() < 1e-5 && (a[2] + 0.75 * 9.81).abs() < 1e-4,
            "{a:?}"
        );
        // On the roost's circle (radius 100, the bird east of the centre), where the flow runs
        // north (counter-clockwise seen from above): with it, no turn; flying east (away) or
        // south (against it), a left turn of w_roost_h, banked as any wish is.
        let mut p = flying();
        p.roost = [-100.0, 0.0, 60.0];
        p.roost_radius = 100.0;
        p.w_roost_h = 2.0;
        let turn = 9.81 * 2.0 / (9.81f32 * 9.81 + 4.0).sqrt();
        for (v, left) in [([0.0, 10.0, 0.0], 0.0), ([10.0, 0.0, 0.0], turn)] {
            let mut a = [0.0f32; 3];
            flight(&p, &pos, &v, &mut a);
            // The left wing's axis: ẑ × e_x.
            let wing = [-v[1] / 10.0, v[0] / 10.0];
            let got = a[0] * wing[0] + a[1] * wing[1];
            assert!((got - left).abs() < 1e-4, "heading {v:?}: {a:?}");
        }
        let mut a = [0.0f32; 3];
        flight(&p, &pos, &[0.0, -10.0, 0.0], &mut a);
        assert!(
            (a[0] - turn).abs() < 1e-4,
            "against the flow, a left turn (east): {a:?}"
        );
        // No heading: the wish as it is.
        let mut a = [1.0, 2.0, 3.0];
        flight(&p, &pos, &[0.0; 3], &mut a);
        assert_eq!(a, [1.0, 2.0, 3.0]);
    }
}
