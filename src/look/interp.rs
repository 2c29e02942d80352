//! Values keyed over solver steps, shared by the look's timeline ([`super::keys`]) and the
//! scene's (`scene::timeline`, which the look's leaf-ness lets use it): a value holds its base
//! until the first key, and each key says how the value gets to it from the key before (`step`,
//! `linear`, `smooth`).

use serde::{Deserialize, Serialize};

/// How a value reaches a key from the one before.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Interpolation {
    /// Holds the previous value and jumps at the key's step.
    #[default]
    Step,
    /// A straight ramp from the previous key's step to this one's.
    Linear,
    /// A ramp that starts and ends gently: `3s² − 2s³` of the way at fraction s.
    Smooth,
}

impl Interpolation {
    pub const ALL: [Interpolation; 3] = [
        Interpolation::Step,
        Interpolation::Linear,
        Interpolation::Smooth,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Interpolation::Step => "step",
            Interpolation::Linear => "linear",
            Interpolation::Smooth => "smooth",
        }
    }
    pub fn from_name(s: &str) -> Option<Interpolation> {
        Self::ALL.into_iter().find(|i| i.name() == s)
    }
    /// The default, left out of what forge writes.
    pub fn is_step(&self) -> bool {
        *self == Interpolation::Step
    }
}

/// One key of one value: the value at its step, and how it gets there.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    pub step: u64,
    pub value: f32,
    pub interpolation: Interpolation,
    /// Set while the run played (`Simulation.set`, the player's panel): it changes the values
    /// from its step on only. A step before it keeps the ramp it was on: the key it ramps
    /// towards is the next one that is not live.
    pub live: bool,
}

/// The value in effect at `step` of a value that is `base` before its first key and keyed by
/// `points` (in step order; at most one at a step): O(log keys). Computed in `f64` from the
/// `f32` endpoints and rounded once, the same on every machine.
pub fn value_at(base: f32, points: &[Point], step: u64) -> f32 {
    // The first key not yet reached (live keys change only the steps from theirs on).
    let reached = points.partition_point(|p| p.step <= step);
    let Some(next) = (reached..points.len()).find(|&i| !points[i].live) else {
        return reached.checked_sub(1).map_or(base, |i| points[i].value);
    };
    let to = &points[next];
    let (from_step, from) = match reached {
        0 => (0, base),
        i => (points[i - 1].step, points[i - 1].value),
    };
    let s = (step - from_step) as f64 / (to.step - from_step) as f64;
    let f = match to.interpolation {
        Interpolation::Step => return from,
        Interpolation::Linear => s,
        Interpolation::Smooth => s * s * (3.0 - 2.0 * s),
    };
    (from as f64 + (to.value as f64 - from as f64) * f) as f32
}

/// The first step at which keyed value `lo` is not below keyed value `hi` (each its value
/// before the first key and its keys), or None where `lo < hi` at every step — between keys
/// as well as at them: two ramps eased differently (linear against smooth, or ending at other
/// steps) can cross between keys whose values are in order.
///
/// Every step is covered, in O(keys · log steps): between two consecutive key steps of either
/// value both are polynomials of degree at most 3 in the step, so `hi − lo` is monotonic
/// between the span's ends and the steps next to the zeros of its derivative; those steps are
/// evaluated by [`value_at`] itself, and the first bad one is found by halving.
pub fn first_crossing(lo: (f32, &[Point]), hi: (f32, &[Point])) -> Option<u64> {
    let mut ends: Vec<u64> = lo.1.iter().chain(hi.1).map(|p| p.step).collect();
    ends.push(0);
    ends.sort_unstable();
    ends.dedup();
    let bad = |step: u64| value_at(lo.0, lo.1, step) >= value_at(hi.0, hi.1, step);
    for (i, &a) in ends.iter().enumerate() {
        // Steps a..b are one span: no key of either value inside it (after the last key,
        // both values are constant).
        let Some(&b) = ends.get(i + 1) else {
            return bad(a).then_some(a);
        };
        let mut steps = vec![a, b - 1];
        // hi′ − lo′ as A·x² + B·x + C, x the step.
        let (da, db) = (slope(lo, a), slope(hi, a));
        let q = [db[0] - da[0], db[1] - da[1], db[2] - da[2]];
        for x in stationary(q) {
            if x > a as f64 && x < (b - 1) as f64 {
                let f = x.floor() as u64;
                steps.extend([f.saturating_sub(1), f, f + 1, f + 2]);
            }
        }
        steps.retain(|&s| (a..b).contains(&s));
        steps.sort_unstable();
        steps.dedup();
        // Between two neighbouring candidates `hi − lo` is monotonic: the first bad step
        // after a good one is found by halving.
        let mut good = None;
        for s in steps {
            if !bad(s) {
                good = Some(s);
                continue;
            }
            let Some(mut ok) = good else {
                return Some(s);
            };
            let mut no = s;
            while no - ok > 1 {
                let mid = ok + (no - ok) / 2;
                if bad(mid) {
                    no = mid;
                } else {
                    ok = mid;
                }
            }
            return Some(no);
        }
    }
    None
}

/// The derivative over the step, as [A, B, C] of A·x² + B·x + C, of keyed value `v` in the
/// span of steps starting at `at` (no key of `v` strictly inside it).
fn slope(v: (f32, &[Point]), at: u64) -> [f64; 3] {
    let (base, points) = v;
    let reached = points.partition_point(|p| p.step <= at);
    let Some(next) = (reached..points.len()).find(|&i| !points[i].live) else {
        return [0.0; 3];
    };
    let to = &points[next];
    let (from_step, from) = match reached {
        0 => (0, base),
        i => (points[i - 1].step, points[i - 1].value),
    };
    let len = (to.step - from_step) as f64;
    let d = to.value as f64 - from as f64;
    match to.interpolation {
        Interpolation::Step => [0.0; 3],
        Interpolation::Linear => [0.0, 0.0, d / len],
        Interpolation::Smooth => {
            // d/dx of d·(3s² − 2s³), s = α·x + β: 6d·α·(s − s²).
            let (al, be) = (1.0 / len, -(from_step as f64) / len);
            let k = 6.0 * d * al;
            [-k * al * al, k * (al - 2.0 * al * be), k * (be - be * be)]
        }
    }
}

/// Where A·x² + B·x + C is zero (none, one or two real x).
fn stationary([a, b, c]: [f64; 3]) -> Vec<f64> {
    if a.abs() < 1e-300 {
        return if b != 0.0 { vec![-c / b] } else { Vec::new() };
    }
    let disc = b * b - 4.0 * a * c;
    if disc < 0.0 {
        return Vec::new();
    }
    let r = disc.sqrt();
    vec![(-b - r) / (2.0 * a), (-b + r) / (2.0 * a)]
}

/// The step a key given by simulated `time` takes effect at: `time / dt` rounded to the nearest
/// step; None where that is not a step (negative, not finite, or past `max`).
pub fn step_of_time(time: f64, dt: f32, max: u64) -> Option<u64> {
    let step = (time / dt as f64).round();
    (time.is_finite() && time >= 0.0 && step <= max as f64).then_some(step as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every step checked one by one: the reference for `first_crossing`.
    fn crossing_by_brute(lo: (f32, &[Point]), hi: (f32, &[Point]), steps: u64) -> Option<u64> {
        (0..steps).find(|&s| value_at(lo.0, lo.1, s) >= value_at(hi.0, hi.1, s))
    }

    #[test]
    fn crossings_between_keys_are_found_at_their_first_step() {
        use Interpolation::*;
        // A band 0.5..1 whose ends ramp to 2..2.05 over steps 10..110, one smooth, one
        // linear: in order at every key, crossed in between.
        let lo = [p(10, 0.5, Step), p(110, 2.0, Smooth)];
        let hi = [p(10, 1.0, Step), p(110, 2.05, Linear)];
        let got = first_crossing((1.0, &lo), (2.0, &hi));
        assert_eq!(got, crossing_by_brute((1.0, &lo), (2.0, &hi), 200));
        assert!(got.is_some_and(|s| s > 10 && s < 110), "{got:?}");
        // Ramps ending at different steps.
        let lo = [p(0, 1.0, Step), p(100, 5.0, Linear)];
        let hi = [p(0, 2.0, Step), p(40, 3.0, Smooth), p(100, 6.0, Linear)];
        assert_eq!(
            first_crossing((1.0, &lo), (2.0, &hi)),
            crossing_by_brute((1.0, &lo), (2.0, &hi), 200)
        );
        // In order everywhere: none.
        let lo = [p(50, 1.5, Smooth)];
        let hi = [p(50, 2.5, Linear)];
        assert_eq!(first_crossing((1.0, &lo), (2.0, &hi)), None);
        assert_eq!(crossing_by_brute((1.0, &lo), (2.0, &hi), 200), None);
        // A key that inverts at its own step, and a crossing after the last key.
        let lo = [p(7, 3.0, Step)];
        assert_eq!(first_crossing((1.0, &lo), (2.0, &[])), Some(7));
        // Many random pairs against the brute force.
        let mut seed = 12345u64;
        let mut rnd = |m: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % m
        };
        let kinds = [Step, Linear, Smooth];
        for _ in 0..2000 {
            let mut keys = || {
                let mut step = 0;
                (0..1 + rnd(4))
                    .map(|_| {
                        step += 1 + rnd(40);
                        p(step, rnd(100) as f32 / 10.0, kinds[rnd(3) as usize])
                    })
                    .collect::<Vec<_>>()
            };
            let (lo, hi) = (keys(), keys());
            assert_eq!(
                first_crossing((0.0, &lo), (5.0, &hi)),
                crossing_by_brute((0.0, &lo), (5.0, &hi), 400),
                "{lo:?} {hi:?}"
            );
        }
    }

    fn p(step: u64, value: f32, interpolation: Interpolation) -> Point {
        Point {
            step,
            value,
            interpolation,
            live: false,
        }
    }

    #[test]
    fn a_value_holds_jumps_and_ramps() {
        use Interpolation::*;
        let pts = [p(10, 2.0, Step), p(20, 4.0, Linear), p(30, 0.0, Smooth)];
        assert_eq!(value_at(1.0, &pts, 0), 1.0);
        assert_eq!(value_at(1.0, &pts, 9), 1.0);
        assert_eq!(value_at(1.0, &pts, 10), 2.0);
        assert_eq!(value_at(1.0, &pts, 15), 3.0);
        assert_eq!(value_at(1.0, &pts, 20), 4.0);
        assert_eq!(value_at(1.0, &pts, 25), 2.0);
        // A quarter of the way: 3/16 - 2/64 = 0.15625 of the drop.
        assert_eq!(
            value_at(1.0, &pts, 22) as f64,
            (4.0 - 4.0 * (0.04 * 3.0 - 2.0 * 0.008)) as f32 as f64
        );
        assert_eq!(value_at(1.0, &pts, 30), 0.0);
        assert_eq!(value_at(1.0, &pts, u64::MAX), 0.0);
        // A ramp from the base, before any key.
        assert_eq!(value_at(0.0, &[p(4, 8.0, Linear)], 1), 2.0);
        assert_eq!(value_at(5.0, &[], 7), 5.0);
    }

    #[test]
    fn times_round_to_the_nearest_step() {
        assert_eq!(step_of_time(8.0, 0.05, 1 << 40), Some(160));
        assert_eq!(step_of_time(0.026, 0.05, 1 << 40), Some(1));
        assert_eq!(step_of_time(-0.1, 0.05, 1 << 40), None);
        assert_eq!(step_of_time(f64::NAN, 0.05, 1 << 40), None);
        assert_eq!(step_of_time(1e30, 0.05, 1 << 40), None);
    }
}
