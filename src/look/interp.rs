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
}

/// The value in effect at `step` of a value that is `base` before its first key and keyed by
/// `points` (in step order; at most one at a step): O(log keys). Computed in `f64` from the
/// `f32` endpoints and rounded once, the same on every machine.
pub fn value_at(base: f32, points: &[Point], step: u64) -> f32 {
    // The first key not yet reached.
    let next = points.partition_point(|p| p.step <= step);
    let Some(to) = points.get(next) else {
        return points.last().map_or(base, |p| p.value);
    };
    let (from_step, from) = match next {
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

/// The step a key given by simulated `time` takes effect at: `time / dt` rounded to the nearest
/// step; None where that is not a step (negative, not finite, or past `max`).
pub fn step_of_time(time: f64, dt: f32, max: u64) -> Option<u64> {
    let step = (time / dt as f64).round();
    (time.is_finite() && time >= 0.0 && step <= max as f64).then_some(step as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(step: u64, value: f32, interpolation: Interpolation) -> Point {
        Point {
            step,
            value,
            interpolation,
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
