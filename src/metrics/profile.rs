//! The density profile along a flock's mean heading. Travelling bands (Grégoire & Chaté 2004;
//! Chaté et al. 2008) are dense stripes across the direction of motion: they show as peaks of
//! this profile, well above its mean, where a homogeneous state gives only counting noise.

use super::Space;

/// Agents counted in equal slabs across one world axis.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    /// The axis the slabs cut: the one closest to the mean heading.
    pub axis: usize,
    /// Slab width (the world's side along `axis` over the number of slabs).
    pub width: f64,
    pub counts: Vec<u64>,
}

impl Profile {
    /// The fullest slab over the mean slab (1 for a perfectly even profile; 0 when empty).
    pub fn peak_to_mean(&self) -> f64 {
        let total: u64 = self.counts.iter().sum();
        if total == 0 {
            return 0.0;
        }
        let peak = self.counts.iter().copied().max().unwrap_or(0);
        peak as f64 * self.counts.len() as f64 / total as f64
    }
}

/// Sum of the unit velocities (zero velocities left out), in f64.
pub fn mean_heading(dim: usize, n: usize, vel: &[f32]) -> [f64; 3] {
    let mut sum = [0f64; 3];
    for i in 0..n {
        let s2: f64 = (0..dim).map(|k| (vel[k * n + i] as f64).powi(2)).sum();
        if s2 > 0.0 && s2.is_finite() {
            let s = s2.sqrt();
            for (k, x) in sum.iter_mut().enumerate().take(dim) {
                *x += vel[k * n + i] as f64 / s;
            }
        }
    }
    sum
}

/// The profile across the world axis closest to the mean heading (the first such axis on a
/// tie), in slabs of about `width` (at least one slab). Agents outside the world (after
/// wrapping, in a wrapping world) or not finite are in no slab. None for a world with no usable
/// size or a width that is not positive.
pub fn heading_profile(
    sp: &Space,
    n: usize,
    pos: &[f32],
    vel: &[f32],
    width: f64,
) -> Option<Profile> {
    let h = mean_heading(sp.dim, n, vel);
    let mut axis = 0;
    for k in 1..sp.dim {
        if h[k].abs() > h[axis].abs() {
            axis = k;
        }
    }
    let l = sp.world[axis] as f64;
    if !(l.is_finite() && l > 0.0 && width.is_finite() && width > 0.0) {
        return None;
    }
    let bins = ((l / width).round().max(1.0) as usize).min(1 << 24);
    let mut counts = vec![0u64; bins];
    for &x in &pos[axis * n..(axis + 1) * n] {
        let x = x as f64;
        if !x.is_finite() {
            continue;
        }
        let x = if sp.wrap { x.rem_euclid(l) } else { x };
        if (0.0..l).contains(&x) {
            let b = ((x / l * bins as f64) as usize).min(bins - 1);
            counts[b] += 1;
        }
    }
    Some(Profile {
        axis,
        width: l / bins as f64,
        counts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_band_across_the_heading_peaks() {
        // 100 agents moving along y: 60 in the slab y ∈ [2, 4), 40 spread over x.
        let n = 100;
        let mut pos = vec![0f32; 2 * n];
        let mut vel = vec![0f32; 2 * n];
        for i in 0..n {
            pos[i] = (i % 10) as f32;
            pos[n + i] = if i < 60 { 2.5 } else { (i - 60) as f32 * 0.25 };
            vel[n + i] = 1.0;
        }
        let sp = Space {
            dim: 2,
            world: [10.0, 10.0, 0.0],
            wrap: true,
        };
        let p = heading_profile(&sp, n, &pos, &vel, 2.0).unwrap();
        assert_eq!(p.axis, 1);
        assert_eq!(p.counts.len(), 5);
        assert_eq!(p.counts.iter().sum::<u64>(), 100);
        assert_eq!(p.counts[1], 68);
        assert!((p.peak_to_mean() - 3.4).abs() < 1e-12);
        assert!(heading_profile(&sp, n, &pos, &vel, 0.0).is_none());
    }
}
