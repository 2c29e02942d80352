//! Every pair, in float64: the pair sums of C(r) and g(r) exactly, O(N²) (the method up to
//! [`super::EXACT_MAX_AGENTS`] agents, and the reference the grid method is checked against).

use super::{FrameStats, Geometry};

/// Ordered-pair sums per bin of width `dr` (pairs at `r < bins·dr`): Σ δu_i·δu_j, the count,
/// and an ideal gas's count in the same box.
pub(super) fn frame_stats(
    pos: &[f32],
    du: &[f64],
    n: usize,
    geo: &Geometry,
    dr: f64,
    bins: usize,
) -> FrameStats {
    let threads = super::threads();
    // Rows i are dealt out in turn, so the triangle's long and short rows share the work.
    let parts: Vec<(Vec<f64>, Vec<f64>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| s.spawn(move || rows(pos, du, n, geo, dr, bins, t, threads)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let (mut a, mut p) = (vec![0.0; bins], vec![0.0; bins]);
    // Summed in thread order: the result does not depend on timing.
    for (pa, pp) in parts {
        for b in 0..bins {
            a[b] += pa[b];
            p[b] += pp[b];
        }
    }
    let pairs = n as f64 * (n as f64 - 1.0);
    let ideal = (0..bins)
        .map(|b| pairs / geo.volume() * shell(geo, b as f64 * dr, (b + 1) as f64 * dr))
        .collect();
    FrameStats {
        a,
        p,
        ideal,
        ..FrameStats::default()
    }
}

#[allow(clippy::too_many_arguments)]
fn rows(
    pos: &[f32],
    du: &[f64],
    n: usize,
    geo: &Geometry,
    dr: f64,
    bins: usize,
    first: usize,
    stride: usize,
) -> (Vec<f64>, Vec<f64>) {
    let dim = geo.dim;
    let r_max = dr * bins as f64;
    let (mut a, mut p) = (vec![0.0; bins], vec![0.0; bins]);
    for i in (first..n).step_by(stride) {
        for j in i + 1..n {
            let mut r2 = 0.0;
            for k in 0..dim {
                let d = geo.delta(pos[k * n + j] as f64 - pos[k * n + i] as f64, k);
                r2 += d * d;
            }
            let r = r2.sqrt();
            if r >= r_max {
                continue;
            }
            let b = ((r / dr) as usize).min(bins - 1);
            let dot: f64 = (0..dim).map(|k| du[k * n + i] * du[k * n + j]).sum();
            // (i, j) and (j, i).
            a[b] += 2.0 * dot;
            p[b] += 2.0;
        }
    }
    (a, p)
}

/// The volume of the shell `r0 ≤ r < r1` that lies at those distances inside the box: for a
/// periodic box (r ≤ half its side) the whole shell; otherwise weighted by the fraction of
/// the box a displacement of that length keeps inside it, Π_k (1 − |x_k|/L_k), averaged over
/// directions — so that an ideal gas in the box has g(r) = 1.
pub(super) fn shell(geo: &Geometry, r0: f64, r1: f64) -> f64 {
    let whole = match geo.dim {
        2 => std::f64::consts::PI * (r1 * r1 - r0 * r0),
        _ => 4.0 / 3.0 * std::f64::consts::PI * (r1.powi(3) - r0.powi(3)),
    };
    if geo.wrap {
        return whole;
    }
    // The weight at the shell's middle radius, averaged over a fixed set of directions.
    let r = 0.5 * (r0 + r1);
    let keep = |d: [f64; 3]| -> f64 {
        (0..geo.dim)
            .map(|k| (1.0 - (r * d[k]).abs() / geo.len[k]).max(0.0))
            .product()
    };
    let dirs = 720;
    let mean = match geo.dim {
        2 => {
            (0..dirs)
                .map(|t| {
                    let th = (t as f64 + 0.5) / dirs as f64 * std::f64::consts::TAU;
                    keep([th.cos(), th.sin(), 0.0])
                })
                .sum::<f64>()
                / dirs as f64
        }
        _ => {
            // A Fibonacci sphere: nearly even directions.
            let golden = std::f64::consts::PI * (3.0 - 5f64.sqrt());
            (0..dirs)
                .map(|t| {
                    let z = 1.0 - 2.0 * (t as f64 + 0.5) / dirs as f64;
                    let s = (1.0 - z * z).sqrt();
                    let ph = golden * t as f64;
                    keep([s * ph.cos(), s * ph.sin(), z])
                })
                .sum::<f64>()
                / dirs as f64
        }
    };
    whole * mean
}
