//! Aggregating frames: C(r), g(r), Q(r), ξ and χ over any multiset of frames, and the
//! bootstrap over frames that gives their error bars.

use super::{Anisotropy, FrameStats};

/// Aggregates over a multiset of frames.
pub(super) struct Aggregate {
    pub(super) c: Vec<Option<f64>>,
    pub(super) g: Vec<Option<f64>>,
    pub(super) q: Vec<f64>,
    pub(super) xi: Option<f64>,
    pub(super) chi: f64,
    pub(super) gamma: Vec<Option<f64>>,
}

pub(super) fn aggregate(stats: &[FrameStats], pick: &[usize], r: &[f64]) -> Aggregate {
    let bins = r.len();
    let (mut a, mut p, mut ideal, mut q) = (
        vec![0.0; bins],
        vec![0.0; bins],
        vec![0.0; bins],
        vec![0.0; bins],
    );
    let k_max = stats.first().map_or(0, |s| s.gamma.len());
    let mut gamma = vec![0.0; k_max];
    for &f in pick {
        let s = &stats[f];
        let mut run = 1.0;
        for b in 0..bins {
            a[b] += s.a[b];
            p[b] += s.p[b];
            ideal[b] += s.ideal[b];
            run += s.a[b] / s.n as f64;
            q[b] += run;
        }
        for (g, x) in gamma.iter_mut().zip(&s.gamma) {
            *g += x;
        }
    }
    let m = pick.len().max(1) as f64;
    let c: Vec<Option<f64>> = (0..bins)
        .map(|b| (p[b] > 0.0).then(|| a[b] / p[b]))
        .collect();
    let g = (0..bins)
        .map(|b| (ideal[b] > 0.0).then(|| p[b] / ideal[b]))
        .collect();
    q.iter_mut().for_each(|x| *x /= m);
    let chi = q.iter().copied().fold(1.0, f64::max);
    Aggregate {
        xi: first_zero(r, &c),
        c,
        g,
        q,
        chi,
        gamma: gamma
            .into_iter()
            .map(|x| Some(x / m).filter(|v| v.is_finite()))
            .collect(),
    }
}

/// The first r where C crosses zero, interpolated linearly between bin centres (from C(0) = 1
/// before the first bin).
fn first_zero(r: &[f64], c: &[Option<f64>]) -> Option<f64> {
    let (mut r0, mut c0) = (0.0, 1.0);
    for (&r1, c1) in r.iter().zip(c) {
        let Some(c1) = *c1 else { continue };
        if c1 <= 0.0 {
            return Some(r0 + (r1 - r0) * c0 / (c0 - c1));
        }
        (r0, c0) = (r1, c1);
    }
    None
}

/// A small deterministic generator for the bootstrap (splitmix64): the same recording and
/// options give the same error bars.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        crate::sim::math::mix64(self.0)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn std_dev(xs: &[f64]) -> Option<f64> {
    if xs.len() < 2 {
        return None;
    }
    let m = xs.iter().sum::<f64>() / xs.len() as f64;
    let v = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (xs.len() - 1) as f64;
    Some(v.sqrt())
}

/// Standard deviations over bootstrap resamples of the frames.
pub(super) struct Errors {
    pub(super) xi: Option<f64>,
    pub(super) chi: Option<f64>,
    pub(super) c: Vec<Option<f64>>,
    pub(super) gamma: Vec<Option<f64>>,
}

/// The bootstrap's error bars (none with fewer than two frames), and how many resamples ran.
pub(super) fn bootstrap(stats: &[FrameStats], r: &[f64], resamples: usize) -> (Errors, usize) {
    let k_max = stats.first().map_or(0, |s| s.gamma.len());
    let none = Errors {
        xi: None,
        chi: None,
        c: vec![None; r.len()],
        gamma: vec![None; k_max],
    };
    if stats.len() < 2 || resamples < 2 {
        return (none, 0);
    }
    let mut rng = SplitMix(0x5EED_F0F0_1234_ABCD);
    let mut xis = Vec::new();
    let mut chis = Vec::new();
    let mut cs: Vec<Vec<f64>> = vec![Vec::new(); r.len()];
    let mut gs: Vec<Vec<f64>> = vec![Vec::new(); k_max];
    for _ in 0..resamples {
        let pick: Vec<usize> = (0..stats.len()).map(|_| rng.below(stats.len())).collect();
        let a = aggregate(stats, &pick, r);
        xis.extend(a.xi);
        chis.push(a.chi);
        for (b, c) in a.c.iter().enumerate() {
            cs[b].extend(*c);
        }
        for (k, g) in a.gamma.iter().enumerate() {
            gs[k].extend(*g);
        }
    }
    let errors = Errors {
        // Where most resamples have no zero crossing, ξ has no error bar either.
        xi: (xis.len() * 2 >= resamples)
            .then(|| std_dev(&xis))
            .flatten(),
        chi: std_dev(&chis),
        c: cs.iter().map(|v| std_dev(v)).collect(),
        gamma: gs.iter().map(|v| std_dev(v)).collect(),
    };
    (errors, resamples)
}

pub(super) fn anisotropy_of(
    stats: &[FrameStats],
    whole: &Aggregate,
    e: &Errors,
    boot: usize,
) -> Anisotropy {
    let k_max = whole.gamma.len();
    // The larger of the bootstrap's spread and the standard error over agents (pooled over
    // frames): with a handful of frames the bootstrap alone can come out too small.
    let m = stats.len().max(1) as f64;
    let gamma_error: Vec<Option<f64>> = (0..k_max)
        .map(|k| {
            let pooled = (stats.iter().map(|s| s.gamma_se[k].powi(2)).sum::<f64>()).sqrt() / m;
            let pooled = Some(pooled).filter(|v| v.is_finite());
            match (if boot > 0 { e.gamma[k] } else { None }, pooled) {
                (Some(b), Some(p)) => Some(b.max(p)),
                (b, p) => b.or(p),
            }
        })
        .collect();
    let isotropic_from_k = (0..k_max)
        .find(|&k| match (whole.gamma[k], gamma_error[k]) {
            (Some(g), Some(e)) => g.abs() <= 2.0 * e,
            _ => false,
        })
        .map(|k| k + 1);
    let projection: Vec<(f64, Option<f64>)> = (0..k_max)
        .map(|k| super::shape::mean_se(stats.iter().map(|s| s.projection[k])))
        .collect();
    Anisotropy {
        k: (1..=k_max).collect(),
        projection: projection
            .iter()
            .map(|p| p.0.is_finite().then_some(p.0))
            .collect(),
        projection_error: projection.iter().map(|p| p.1).collect(),
        gamma: whole.gamma.clone(),
        gamma_error,
        isotropic_from_k,
        agents_measured: stats.iter().map(|s| s.measured as f64).sum::<f64>()
            / stats.len().max(1) as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_zero_interpolates_between_bin_centres() {
        let r = [0.5, 1.5, 2.5];
        let c = [Some(0.8), Some(0.2), Some(-0.2)];
        assert!((first_zero(&r, &c).unwrap() - 2.0).abs() < 1e-12);
        assert_eq!(first_zero(&r, &[Some(0.5), None, Some(0.1)]), None);
    }

    #[test]
    fn splitmix_is_fixed() {
        let mut a = SplitMix(1);
        let mut b = SplitMix(1);
        assert_eq!(a.next(), b.next());
        assert!(a.below(10) < 10);
    }
}
