//! Every pair, in float64: the pair sums of C(r) and g(r) exactly, O(N²) (the method up to
//! [`super::EXACT_MAX_AGENTS`] agents, and the reference the grid method is checked against).

use super::{FrameStats, Geometry};
use crate::metrics::image;
use crate::sim::math::array;

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
    let rows = match (geo.dim, geo.image) {
        (2, image::NONE) => rows::<2, { image::NONE }>,
        (2, image::NEAR) => rows::<2, { image::NEAR }>,
        (2, _) => rows::<2, { image::FAR }>,
        (_, image::NONE) => rows::<3, { image::NONE }>,
        (_, image::NEAR) => rows::<3, { image::NEAR }>,
        (_, _) => rows::<3, { image::FAR }>,
    };
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

/// Pairs are taken in blocks of this many j for one i: a block's distances, bins and dot
/// products first (a loop the compiler vectorises), then their sums into the bins in order.
const BLOCK: usize = 128;

/// The sums of rows `first, first + stride, …` of the triangle j > i, in `D` dimensions with
/// minimum image `IMAGE` ([`image::apply`]): the
/// same sums, bit for bit, as one pair at a time in order.
#[allow(clippy::too_many_arguments)]
fn rows<const D: usize, const IMAGE: u8>(
    pos: &[f32],
    du: &[f64],
    n: usize,
    geo: &Geometry,
    dr: f64,
    bins: usize,
    first: usize,
    stride: usize,
) -> (Vec<f64>, Vec<f64>) {
    let r_max = dr * bins as f64;
    // One bin more, for the pairs at r ≥ r_max: the sums need no branch.
    let (mut a, mut p) = (vec![0.0; bins + 1], vec![0.0; bins + 1]);
    let (last, beyond) = (bins as u32 - 1, bins as u32);
    let x: [&[f32]; D] = array(|k| &pos[k * n..(k + 1) * n]);
    let u: [&[f64]; D] = array(|k| &du[k * n..(k + 1) * n]);
    let len: [f64; D] = array(|k| geo.len[k]);
    let (mut bin, mut dot) = ([0u32; BLOCK], [0.0f64; BLOCK]);
    for i in (first..n).step_by(stride) {
        let xi: [f64; D] = array(|k| x[k][i] as f64);
        let ui: [f64; D] = array(|k| u[k][i]);
        let mut j0 = i + 1;
        while j0 < n {
            let m = (n - j0).min(BLOCK);
            let xj: [&[f32]; D] = array(|k| &x[k][j0..j0 + m]);
            let uj: [&[f64]; D] = array(|k| &u[k][j0..j0 + m]);
            for t in 0..m {
                let (mut r2, mut d_u) = (0.0, 0.0);
                for k in 0..D {
                    let d = image::apply::<IMAGE>(xj[k][t] as f64 - xi[k], len[k]);
                    r2 += d * d;
                    d_u += ui[k] * uj[k][t];
                }
                let r = r2.sqrt();
                let b = ((r / dr) as u32).min(last);
                bin[t] = if r >= r_max { beyond } else { b };
                dot[t] = d_u;
            }
            // (i, j) and (j, i).
            for t in 0..m {
                let b = bin[t] as usize;
                a[b] += 2.0 * dot[t];
                p[b] += 2.0;
            }
            j0 += m;
        }
    }
    a.truncate(bins);
    p.truncate(bins);
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
