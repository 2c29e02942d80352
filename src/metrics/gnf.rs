//! Giant number fluctuations (Toner & Tu 1995; Chaté, Ginelli, Grégoire & Raynaud 2008): how
//! the standard deviation ΔN of the number of agents in a box grows with the box's mean count
//! ⟨N⟩, ΔN ∝ ⟨N⟩^α. Agents placed independently (a gas) give α = 1/2; ordered flocks have
//! anomalously large fluctuations, α ≈ 0.8 in 2D.
//!
//! The world is tiled into equal boxes at a range of scales, from a quarter of its shortest side
//! down to boxes holding half an agent on average, in steps of √2. At each scale, the counts of
//! every box of every measured frame give ⟨N⟩ and ΔN = √(⟨N²⟩ − ⟨N⟩²); α is the least-squares
//! slope of ln ΔN against ln ⟨N⟩ over the scales with ⟨N⟩ ≥ [`FIT_MIN_MEAN`].
//!
//! In a wrapping world every agent is brought into the box first; elsewhere an agent outside
//! the world, or with a coordinate that is not finite, is in no box.

use super::Space;

/// Scales whose mean count is below this are measured but left out of the fit: with one agent
/// per box or fewer, ΔN says more about how agents sit next to each other (their spacing,
/// their repulsion) than about fluctuations.
pub const FIT_MIN_MEAN: f64 = 1.0;
/// The finest scale still measured: half an agent per box on average.
pub const MIN_MEAN: f64 = 0.5;
/// The largest scale: this many boxes along the world's shortest side, so that the world holds
/// at least 4^dim of them and the fixed total does not hold the fluctuations back.
pub const MIN_BOXES_PER_SIDE: f64 = 4.0;
/// At most this many boxes at one scale (the count array's size).
pub const MAX_BOXES: u64 = 1 << 24;

/// One scale: the world cut into `boxes[k]` boxes along axis k.
#[derive(Clone, Debug, PartialEq)]
pub struct Scale {
    pub boxes: [u32; 3],
    /// Box side along each axis (`world[k] / boxes[k]`; unused axes 0).
    pub side: [f64; 3],
    /// Sum over frames and boxes of the count and of its square, and how many boxes were counted
    /// (boxes × frames).
    s1: u128,
    s2: u128,
    m: u64,
}

impl Scale {
    fn total(&self) -> u64 {
        self.boxes.iter().map(|&b| b as u64).product()
    }

    /// Mean agents per box, ⟨N⟩.
    pub fn mean(&self) -> f64 {
        if self.m == 0 {
            return 0.0;
        }
        self.s1 as f64 / self.m as f64
    }

    /// Standard deviation of the agents per box, ΔN (0 before any frame).
    pub fn delta(&self) -> f64 {
        if self.m == 0 {
            return 0.0;
        }
        let m = self.m as f64;
        let mean = self.s1 as f64 / m;
        (self.s2 as f64 / m - mean * mean).max(0.0).sqrt()
    }

    /// Whether the scale takes part in the fit.
    pub fn fitted(&self) -> bool {
        self.m > 0 && self.mean() >= FIT_MIN_MEAN && self.delta() > 0.0
    }
}

/// The fitted exponent: ln ΔN = α ln ⟨N⟩ + c over `points` scales.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Fit {
    pub alpha: f64,
    /// Standard error of α from the residuals (NaN with two points).
    pub alpha_se: f64,
    pub intercept: f64,
    pub points: usize,
    /// The ⟨N⟩ of the smallest and largest fitted scale.
    pub mean_min: f64,
    pub mean_max: f64,
}

impl Fit {
    /// α as the summaries print it: `0.503 ± 0.002`, or `0.454` alone where two scales (a line
    /// through two points) leave no residual to estimate its error from.
    pub fn alpha_text(&self) -> String {
        if self.alpha_se.is_finite() {
            format!("{:.3} ± {:.3}", self.alpha, self.alpha_se)
        } else {
            format!("{:.3}", self.alpha)
        }
    }

    /// What follows the fit's summary where α has no error bar: `; ...` naming why, or "".
    pub fn caveat(&self) -> &'static str {
        if self.alpha_se.is_finite() {
            ""
        } else {
            "; no error bar: a line through two box sizes"
        }
    }
}

/// Least-squares line through `(x, y)`: slope, its standard error, intercept. None with fewer
/// than two points or all x equal.
pub fn fit_line(pts: &[(f64, f64)]) -> Option<(f64, f64, f64)> {
    let n = pts.len();
    if n < 2 {
        return None;
    }
    let nf = n as f64;
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / nf;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / nf;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
    let se = if n > 2 {
        let rss: f64 = pts
            .iter()
            .map(|p| {
                let r = p.1 - (intercept + slope * p.0);
                r * r
            })
            .sum();
        (rss / (nf - 2.0) / sxx).sqrt()
    } else {
        f64::NAN
    };
    Some((slope, se, intercept))
}

/// Box counts accumulated over frames, at every scale.
pub struct Gnf {
    space: Space,
    scales: Vec<Scale>,
    counts: Vec<u32>,
    frames: u64,
}

impl Gnf {
    /// The scales for `n` agents in `space`: boxes as close to square as the world allows, the
    /// largest a quarter of the shortest side, each next one √2 smaller, down to [`MIN_MEAN`]
    /// agents a box (or [`MAX_BOXES`] boxes). None when the world has no usable size or there
    /// are no agents.
    pub fn new(space: &Space, n: usize) -> Option<Gnf> {
        let dim = space.dim;
        let world: Vec<f64> = space.world[..dim].iter().map(|&w| w as f64).collect();
        if n == 0 || world.iter().any(|w| !w.is_finite() || *w <= 0.0) {
            return None;
        }
        let shortest = world.iter().cloned().fold(f64::INFINITY, f64::min);
        let mut scales: Vec<Scale> = Vec::new();
        for j in 0.. {
            let side = shortest / MIN_BOXES_PER_SIDE / 2f64.powf(j as f64 * 0.5);
            let mut boxes = [1u32; 3];
            let mut ok = true;
            for k in 0..dim {
                let b = (world[k] / side).round().max(1.0);
                if b > MAX_BOXES as f64 {
                    ok = false;
                    break;
                }
                boxes[k] = b as u32;
            }
            let total: f64 = boxes.iter().map(|&b| b as f64).product();
            if !ok || total > MAX_BOXES as f64 || (n as f64) / total < MIN_MEAN {
                break;
            }
            if scales.last().is_some_and(|s| s.boxes == boxes) {
                continue;
            }
            let mut sides = [0f64; 3];
            for k in 0..dim {
                sides[k] = world[k] / boxes[k] as f64;
            }
            scales.push(Scale {
                boxes,
                side: sides,
                s1: 0,
                s2: 0,
                m: 0,
            });
        }
        if scales.is_empty() {
            return None;
        }
        let most = scales.iter().map(Scale::total).max().unwrap_or(1) as usize;
        Some(Gnf {
            space: *space,
            scales,
            counts: vec![0; most],
            frames: 0,
        })
    }

    /// Count one frame's agents (`pos` component-major, `n` agents) at every scale.
    pub fn add_frame(&mut self, n: usize, pos: &[f32]) {
        let dim = self.space.dim;
        let world = self.space.world;
        // Each agent's position as a fraction of the world along each axis, in [0, 1); None for
        // an agent in no box.
        let frac = |i: usize| -> Option<[f64; 3]> {
            let mut f = [0f64; 3];
            for k in 0..dim {
                let l = world[k] as f64;
                let x = pos[k * n + i] as f64;
                if !x.is_finite() {
                    return None;
                }
                let x = if self.space.wrap { x.rem_euclid(l) } else { x };
                if !(0.0..l).contains(&x) {
                    return None;
                }
                f[k] = x / l;
            }
            Some(f)
        };
        let fr: Vec<Option<[f64; 3]>> = (0..n).map(frac).collect();
        for s in &mut self.scales {
            let total = s.total() as usize;
            let counts = &mut self.counts[..total];
            counts.fill(0);
            for f in fr.iter().flatten() {
                let mut c = 0usize;
                for k in (0..dim).rev() {
                    let b = s.boxes[k];
                    let x = ((f[k] * b as f64) as u32).min(b - 1);
                    c = c * b as usize + x as usize;
                }
                counts[c] += 1;
            }
            for &c in counts.iter() {
                s.s1 += c as u128;
                s.s2 += (c as u128) * (c as u128);
            }
            s.m += total as u64;
        }
        self.frames += 1;
    }

    pub fn frames(&self) -> u64 {
        self.frames
    }

    pub fn scales(&self) -> &[Scale] {
        &self.scales
    }

    /// α over the fitted scales ([`Scale::fitted`]); None with fewer than two.
    pub fn fit(&self) -> Option<Fit> {
        let pts: Vec<(f64, f64)> = self
            .scales
            .iter()
            .filter(|s| s.fitted())
            .map(|s| (s.mean().ln(), s.delta().ln()))
            .collect();
        let (alpha, alpha_se, intercept) = fit_line(&pts)?;
        let means = self.scales.iter().filter(|s| s.fitted()).map(Scale::mean);
        let (lo, hi) = means.fold((f64::INFINITY, 0f64), |(lo, hi), m| (lo.min(m), hi.max(m)));
        Some(Fit {
            alpha,
            alpha_se,
            intercept,
            points: pts.len(),
            mean_min: lo,
            mean_max: hi,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::math::mix64;

    fn uniform(dim: usize, n: usize, world: [f32; 3], seed: u64) -> Vec<f32> {
        let mut s = seed;
        let mut pos = vec![0f32; dim * n];
        for k in 0..dim {
            for x in pos[k * n..(k + 1) * n].iter_mut() {
                s = mix64(s.wrapping_add(0x9e37_79b9_7f4a_7c15));
                *x = ((s >> 40) as f64 / (1u64 << 24) as f64 * world[k] as f64) as f32;
            }
        }
        pos
    }

    /// Tolerance of α for uncorrelated points: 20 frames of 20 000 (2D) or 30 000 (3D) agents
    /// give 0.503, 0.499 (the 400 × 50 world) and 0.504 (3D), each ± 0.002 (its standard
    /// error); the fixed total pulls the largest boxes' ΔN down by √(1 − 1/16) at most.
    const GAS_TOLERANCE: f64 = 0.02;

    #[test]
    fn uncorrelated_points_give_one_half() {
        for (dim, n, world) in [
            (2, 20_000, [100.0, 100.0, 0.0]),
            (2, 20_000, [400.0, 50.0, 0.0]),
            (3, 30_000, [40.0, 40.0, 40.0]),
        ] {
            for wrap in [true, false] {
                let sp = Space { dim, world, wrap };
                let mut g = Gnf::new(&sp, n).unwrap();
                for f in 0..20 {
                    g.add_frame(n, &uniform(dim, n, world, 1000 * f + dim as u64));
                }
                let fit = g.fit().unwrap();
                assert!(
                    (fit.alpha - 0.5).abs() < GAS_TOLERANCE,
                    "dim {dim} world {world:?} wrap {wrap}: α = {} ± {} over {} scales",
                    fit.alpha,
                    fit.alpha_se,
                    fit.points
                );
                assert!(fit.points >= 6, "{} scales", fit.points);
                // Poisson: ΔN² = ⟨N⟩ (1 − p) at every scale.
                for s in g.scales() {
                    let p = 1.0 / s.total() as f64;
                    let want = (s.mean() * (1.0 - p)).sqrt();
                    assert!(
                        (s.delta() / want - 1.0).abs() < 0.1,
                        "{:?}: ΔN {} vs {want}",
                        s.boxes,
                        s.delta()
                    );
                }
            }
        }
    }

    #[test]
    fn clustered_points_fluctuate_more() {
        // All agents of a frame in one random 25 × 25 square of the 100 × 100 world: ΔN ∝ ⟨N⟩ at large scales
        // (measured α = 0.94).
        let (n, world) = (10_000, [100.0f32, 100.0, 0.0]);
        let sp = Space {
            dim: 2,
            world,
            wrap: true,
        };
        let mut g = Gnf::new(&sp, n).unwrap();
        for f in 0..20u64 {
            let mut pos = uniform(2, n, [25.0, 25.0, 0.0], f);
            let (ox, oy) = ((mix64(f) % 75) as f32, (mix64(f + 99) % 75) as f32);
            for x in &mut pos[..n] {
                *x += ox;
            }
            for y in &mut pos[n..] {
                *y += oy;
            }
            g.add_frame(n, &pos);
        }
        let fit = g.fit().unwrap();
        assert!(fit.alpha > 0.7, "α = {}", fit.alpha);
    }

    #[test]
    fn scales_shrink_by_root_two_and_stop_at_half_an_agent() {
        let sp = Space {
            dim: 2,
            world: [256.0, 64.0, 0.0],
            wrap: true,
        };
        let g = Gnf::new(&sp, 32768).unwrap();
        let s = g.scales();
        assert_eq!(s[0].boxes[..2], [16, 4]);
        assert_eq!(s[0].side[..2], [16.0, 16.0]);
        for w in s.windows(2) {
            assert!(w[1].total() > w[0].total());
        }
        let last = s.last().unwrap();
        assert!(32768.0 / last.total() as f64 >= MIN_MEAN);
        // Nothing counted yet: no fit, no NaN.
        assert!(g.fit().is_none());
        assert_eq!(s[0].delta(), 0.0);
        assert!(Gnf::new(&sp, 0).is_none());
    }

    #[test]
    fn agents_outside_an_open_world_or_not_finite_are_in_no_box() {
        let sp = Space {
            dim: 2,
            world: [10.0, 10.0, 0.0],
            wrap: false,
        };
        let mut g = Gnf::new(&sp, 100).unwrap();
        g.add_frame(4, &[1.0, 12.0, f32::NAN, 5.0, 1.0, 1.0, 1.0, -0.5]);
        let s = &g.scales()[0];
        assert_eq!(s.mean() * s.total() as f64, 1.0);
    }

    #[test]
    fn line_fit_is_exact_on_a_line() {
        let pts: Vec<(f64, f64)> = (0..5).map(|i| (i as f64, 0.8 * i as f64 + 0.3)).collect();
        let (a, se, c) = fit_line(&pts).unwrap();
        assert!((a - 0.8).abs() < 1e-12 && (c - 0.3).abs() < 1e-12 && se < 1e-6);
        assert!(fit_line(&pts[..1]).is_none());
        assert!(fit_line(&[(1.0, 1.0), (1.0, 2.0)]).is_none());
    }
}
