//! The flock's shape and structure, as the empirical studies of starling flocks measure them
//! (Ballerini et al., Animal Behaviour 76:201, 2008; PNAS 105:1232, 2008):
//!
//! - its principal axes: the square roots of the eigenvalues of the positions' covariance,
//!   largest first (length, width, thickness in 3D), and their ratios to the thinnest
//!   (Ballerini's thickness : width : length, about 1 : 3 : 6 for starlings);
//! - the thinnest axis' angle to the vertical (z), 3D only (close to 0° for starlings, whose
//!   flocks are sheets parallel to the ground);
//! - the nearest-neighbour distance: its least value in a frame (about a wingspan for
//!   starlings) and its mean;
//! - density at the flock's border against its centre: an agent is on the border when its
//!   neighbours lie mostly to one side (the mean of the unit vectors to its k_max nearest
//!   neighbours is longer than [`BORDER_RESULTANT`]), in the centre when it is at least half
//!   the flock's greatest depth in (hops through the neighbour graph to the border); each
//!   agent's density is [`density`]'s, and the ratio is the border's mean over the centre's
//!   (above 1: denser at the border, as starling flocks are).
//!
//! In a periodic world the positions are taken as the minimum images of agent 0's: a flock
//! smaller than half the box keeps its shape, one spanning it has none to measure.

use serde::Serialize;

use super::{FrameStats, Geometry};

/// An agent is on the border when the mean of the unit vectors to its neighbours is longer
/// than this: about 0.2 for neighbours all around (k = 20), 0.5 (3D) to 0.64 (2D) for
/// neighbours in a half-space.
pub(super) const BORDER_RESULTANT: f64 = 0.25;
/// ... and none of them lies further than this (as a cosine) beyond the plane across that
/// mean: a neighbourhood denser on one side than the other (inside a gradient of density)
/// still has neighbours on its sparse side.
pub(super) const BORDER_BEYOND: f64 = 0.3;

/// One frame's shape.
#[derive(Clone, Debug, Default)]
pub(super) struct FrameShape {
    /// Extent along each principal axis, largest first (`dim` of them).
    pub axes: Vec<f64>,
    /// The thinnest axis' angle to the vertical, degrees (3D).
    pub to_vertical: Option<f64>,
    /// Least and mean nearest-neighbour distance.
    pub nn_min: f64,
    pub nn_mean: f64,
    /// Agents on the border and in the centre (at least half the flock's greatest depth in),
    /// and the mean nearest-neighbour distance there and in the centre (NaN where a side has
    /// none).
    pub border: usize,
    pub centre: usize,
    pub r1_border: f64,
    pub r1_centre: f64,
    /// The mean density ([`density`]) there.
    pub rho_border: f64,
    pub rho_centre: f64,
}

/// An agent's density from its `k` nearest neighbours, the farthest at `rk`, whose unit vectors
/// average to length `resultant`: (k − 1) ÷ the volume of the part of the ball of radius `rk`
/// the flock fills. A neighbourhood cut by a flat border fills half the ball, and its unit
/// vectors average to 1/2 (3D) or 2/π (2D) instead of 0: the part filled is taken as
/// 1 − R (3D), 1 − π/4 · R (2D), at least a quarter, where R is the resultant less its noise
/// (R² = resultant² − 1/k). Without it a border agent's density would come out half its true
/// value.
pub(super) fn density(k: usize, rk: f64, resultant: f64, dim: usize) -> f64 {
    let (ball, slope) = match dim {
        2 => (std::f64::consts::PI * rk * rk, std::f64::consts::FRAC_PI_4),
        _ => (4.0 / 3.0 * std::f64::consts::PI * rk.powi(3), 1.0),
    };
    // k unit vectors in random directions average to a length of about 1/√k: that much is
    // noise, not a border.
    let cut = (resultant * resultant - 1.0 / k.max(1) as f64)
        .max(0.0)
        .sqrt();
    let filled = (1.0 - slope * cut).max(0.25);
    if ball > 0.0 {
        (k as f64 - 1.0).max(1.0) / (ball * filled)
    } else {
        f64::NAN
    }
}

/// The principal axes of the frame's positions, and the thinnest one's angle to z.
#[allow(clippy::needless_range_loop)] // matrix code reads best indexed
pub(super) fn axes(pos: &[f32], n: usize, geo: &Geometry) -> (Vec<f64>, Option<f64>) {
    let dim = geo.dim;
    if n < 2 {
        return (vec![0.0; dim], None);
    }
    // Positions relative to agent 0 (minimum images in a periodic world), in float64.
    let rel = |i: usize, k: usize| geo.delta(pos[k * n + i] as f64 - pos[k * n] as f64, k);
    let mut mean = [0.0f64; 3];
    for i in 0..n {
        for (k, m) in mean.iter_mut().enumerate().take(dim) {
            *m += rel(i, k);
        }
    }
    mean.iter_mut().for_each(|m| *m /= n as f64);
    let mut cov = [[0.0f64; 3]; 3];
    for i in 0..n {
        let d = [0, 1, 2].map(|k| if k < dim { rel(i, k) - mean[k] } else { 0.0 });
        for a in 0..dim {
            for b in a..dim {
                cov[a][b] += d[a] * d[b];
            }
        }
    }
    for a in 0..dim {
        for b in a..dim {
            cov[a][b] /= n as f64;
            cov[b][a] = cov[a][b];
        }
    }
    let (values, vectors) = eigen(cov, dim);
    let mut order: Vec<usize> = (0..dim).collect();
    order.sort_by(|&a, &b| values[b].total_cmp(&values[a]));
    let axes = order.iter().map(|&i| values[i].max(0.0).sqrt()).collect();
    let to_vertical = (dim == 3).then(|| {
        let thin = order[dim - 1];
        let z = vectors[2][thin].abs().min(1.0);
        z.acos().to_degrees()
    });
    (axes, to_vertical)
}

/// Eigenvalues and eigenvectors (as columns: `vectors[row][i]` of eigenvalue i) of the
/// symmetric `dim`×`dim` matrix `m`, by cyclic Jacobi rotations.
#[allow(clippy::needless_range_loop)] // matrix code reads best indexed
pub(super) fn eigen(mut m: [[f64; 3]; 3], dim: usize) -> ([f64; 3], [[f64; 3]; 3]) {
    let mut v = [[0.0; 3]; 3];
    for (i, row) in v.iter_mut().enumerate() {
        row[i] = 1.0;
    }
    for _ in 0..64 {
        let off: f64 = (0..dim)
            .flat_map(|p| (p + 1..dim).map(move |q| (p, q)))
            .map(|(p, q)| m[p][q] * m[p][q])
            .sum();
        let scale: f64 = (0..dim).map(|p| m[p][p] * m[p][p]).sum::<f64>() + off;
        if off <= 1e-30 * scale.max(1e-300) {
            break;
        }
        for p in 0..dim {
            for q in p + 1..dim {
                if m[p][q] == 0.0 {
                    continue;
                }
                let theta = (m[q][q] - m[p][p]) / (2.0 * m[p][q]);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..dim {
                    let (a, b) = (m[k][p], m[k][q]);
                    m[k][p] = c * a - s * b;
                    m[k][q] = s * a + c * b;
                }
                for k in 0..dim {
                    let (a, b) = (m[p][k], m[q][k]);
                    m[p][k] = c * a - s * b;
                    m[q][k] = s * a + c * b;
                }
                for row in v.iter_mut().take(dim) {
                    let (a, b) = (row[p], row[q]);
                    row[p] = c * a - s * b;
                    row[q] = s * a + c * b;
                }
            }
        }
    }
    ([m[0][0], m[1][1], m[2][2]], v)
}

/// Ballerini's anisotropy of the k-th neighbour: W, the eigenvector of the smallest eigenvalue
/// of ⟨û ûᵀ⟩ (the direction the k-th neighbour lies along least), and the squared projection
/// of the flight direction V̂ on it, (W·V̂)²: 1/d for an isotropic neighbourhood, towards 1
/// where neighbours lie beside rather than ahead and behind. `m` holds the sums of û ûᵀ as
/// xx, yy, zz, xy, xz, yz over `count` agents.
pub(super) fn projection(m: &[f64; 6], count: usize, v: [f64; 3], dim: usize) -> f64 {
    if count == 0 {
        return f64::NAN;
    }
    let c = count as f64;
    let mat = [
        [m[0] / c, m[3] / c, m[4] / c],
        [m[3] / c, m[1] / c, m[5] / c],
        [m[4] / c, m[5] / c, m[2] / c],
    ];
    let (values, vectors) = eigen(mat, dim);
    let least = (0..dim)
        .min_by(|&a, &b| values[a].total_cmp(&values[b]))
        .unwrap_or(0);
    let dot: f64 = (0..dim).map(|k| vectors[k][least] * v[k]).sum();
    dot * dot
}

/// In a periodic world, a flock whose extent along an axis is near that of agents spread over
/// the whole box (a uniform spread over a side L has L/√12 ≈ 0.29 L) has no shape to measure:
/// the caveat that says so, from 0.2 L.
pub(super) fn spans_the_box(s: &Shape, h: &crate::bfs::Header) -> Option<String> {
    if h.boundary != crate::scene::Boundary::Wrap {
        return None;
    }
    let side = h.world_size[..h.dim as usize]
        .iter()
        .fold(f64::INFINITY, |m, &l| m.min(l as f64));
    let widest = s.principal_axes.first().copied().unwrap_or(0.0);
    (widest > 0.2 * side).then(|| {
        format!(
            "the agents spread over the periodic box (principal axis {widest:.4} against a side of \
             {side}): the shape, its tilt and its border describe the box, not a flock"
        )
    })
}

/// The shape over the frames analysed.
#[derive(Clone, Debug, Serialize)]
pub struct BorderDensity {
    /// Agents on the border, and in the centre, as fractions of all.
    pub border_fraction: f64,
    pub centre_fraction: f64,
    /// Mean nearest-neighbour distance on the border and in the centre.
    pub border_nn_distance: Option<f64>,
    pub centre_nn_distance: Option<f64>,
    /// Mean density (agents per unit area or volume) on the border and in the centre.
    pub border: Option<f64>,
    pub centre: Option<f64>,
    /// Density on the border over density in the centre.
    pub ratio: Option<f64>,
}

/// The nearest-neighbour distance: the least in each frame and the mean, averaged over frames.
#[derive(Clone, Debug, Serialize)]
pub struct NearestNeighbour {
    pub min: f64,
    pub mean: f64,
}

/// Mean over frames, and its standard error over frames (None with one frame).
pub(super) fn mean_se(xs: impl Iterator<Item = f64>) -> (f64, Option<f64>) {
    let v: Vec<f64> = xs.filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return (f64::NAN, None);
    }
    let m = v.iter().sum::<f64>() / v.len() as f64;
    let se = (v.len() > 1).then(|| {
        let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() - 1) as f64;
        (var / v.len() as f64).sqrt()
    });
    (m, se)
}

/// What `forge analyze` reports of the shape, over the frames' [`FrameShape`]s.
#[derive(Clone, Debug, Serialize)]
pub struct Shape {
    /// The flock's extent along its principal axes (the square roots of the eigenvalues of
    /// the positions' covariance), largest first, averaged over frames, and their standard
    /// errors over frames.
    pub principal_axes: Vec<f64>,
    pub principal_axes_error: Vec<Option<f64>>,
    /// Each axis over the thinnest, thinnest first (Ballerini's thickness : width : length,
    /// 1 : I₂/I₃ : I₁/I₃), per frame and averaged.
    pub aspect_ratios: Vec<f64>,
    /// The thinnest axis' angle to the vertical (z), degrees, 3D only: 0 for a flock flat
    /// like a sheet parallel to the ground.
    pub thinnest_axis_to_vertical: Option<f64>,
    pub thinnest_axis_to_vertical_error: Option<f64>,
    pub nearest_neighbour: NearestNeighbour,
    pub border_density: BorderDensity,
}

pub(super) fn summary(stats: &[FrameStats], dim: usize) -> Shape {
    let shapes = stats.iter().map(|s| &s.shape);
    let axes: Vec<(f64, Option<f64>)> = (0..dim)
        .map(|k| {
            mean_se(
                shapes
                    .clone()
                    .map(move |s| s.axes.get(k).copied().unwrap_or(f64::NAN)),
            )
        })
        .collect();
    // Each ratio to the thinnest axis, per frame, then averaged.
    let aspect_ratios = (0..dim)
        .rev()
        .map(|k| {
            mean_se(
                shapes
                    .clone()
                    .map(move |s| match (s.axes.get(k), s.axes.last()) {
                        (Some(a), Some(t)) if *t > 0.0 => a / t,
                        _ => f64::NAN,
                    }),
            )
            .0
        })
        .collect();
    let vertical = mean_se(shapes.clone().filter_map(|s| s.to_vertical));
    let count: usize = stats.iter().map(|s| s.n).sum();
    let border: usize = shapes.clone().map(|s| s.border).sum();
    let centre: usize = shapes.clone().map(|s| s.centre).sum();
    let r1 = |f: fn(&FrameShape) -> f64| {
        let m = mean_se(shapes.clone().map(f)).0;
        m.is_finite().then_some(m)
    };
    let (rb, rc) = (r1(|s| s.r1_border), r1(|s| s.r1_centre));
    let (db, dc) = (r1(|s| s.rho_border), r1(|s| s.rho_centre));
    Shape {
        principal_axes: axes.iter().map(|a| a.0).collect(),
        principal_axes_error: axes.iter().map(|a| a.1).collect(),
        aspect_ratios,
        thinnest_axis_to_vertical: (dim == 3 && vertical.0.is_finite()).then_some(vertical.0),
        thinnest_axis_to_vertical_error: (dim == 3).then_some(vertical.1).flatten(),
        nearest_neighbour: NearestNeighbour {
            min: mean_se(shapes.clone().map(|s| s.nn_min)).0,
            mean: mean_se(shapes.clone().map(|s| s.nn_mean)).0,
        },
        border_density: BorderDensity {
            border_fraction: border as f64 / count.max(1) as f64,
            centre_fraction: centre as f64 / count.max(1) as f64,
            border_nn_distance: rb,
            centre_nn_distance: rc,
            border: db,
            centre: dc,
            ratio: match (db, dc) {
                (Some(b), Some(c)) if c > 0.0 => Some(b / c),
                _ => None,
            },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geo(dim: usize) -> Geometry {
        Geometry {
            dim,
            wrap: false,
            lo: [0.0; 3],
            len: [1000.0; 3],
            image: crate::metrics::image::NONE,
        }
    }

    #[test]
    fn eigen_diagonalises() {
        let m = [[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 1.0]];
        let (vals, vecs) = eigen(m, 3);
        for i in 0..3 {
            // m v = λ v
            for r in 0..3 {
                let mv: f64 = (0..3).map(|c| m[r][c] * vecs[c][i]).sum();
                assert!((mv - vals[i] * vecs[r][i]).abs() < 1e-10);
            }
        }
    }

    /// A slab 60 × 20 × 6 (uniform on a grid), tilted 30° about x: its axes in that order and
    /// ratio, the thinnest axis 30° from the vertical.
    #[test]
    fn a_tilted_slab_has_its_axes_and_tilt() {
        let (a, b, c) = (60usize, 20usize, 6usize);
        let n = a * b * c;
        let mut pos = vec![0f32; 3 * n];
        let t = 30f64.to_radians();
        let mut i = 0;
        for x in 0..a {
            for y in 0..b {
                for z in 0..c {
                    let (y, z) = (y as f64, z as f64);
                    pos[i] = x as f32;
                    pos[n + i] = (y * t.cos() - z * t.sin()) as f32 + 500.0;
                    pos[2 * n + i] = (y * t.sin() + z * t.cos()) as f32 + 500.0;
                    i += 1;
                }
            }
        }
        let (axes, vertical) = axes(&pos, n, &geo(3));
        // A uniform grid of m points spaced 1 has variance (m² − 1) / 12.
        let sd = |m: usize| (((m * m - 1) as f64) / 12.0).sqrt();
        for (got, want) in axes.iter().zip([sd(a), sd(b), sd(c)]) {
            assert!((got - want).abs() < 1e-4, "{axes:?}");
        }
        // Positions are float32: the tilt to a few 1e-5 degrees.
        assert!((vertical.unwrap() - 30.0).abs() < 1e-3, "{vertical:?}");
    }

    /// Neighbours all to one side of x: (W·V̂)² = 1 where V̂ is across them; isotropic ones give
    /// about 1/d.
    #[test]
    fn projection_is_one_across_a_line_of_neighbours() {
        // Neighbours along y only: the least direction is x (and z).
        let m = [0.0, 10.0, 0.0, 0.0, 0.0, 0.0];
        assert!((projection(&m, 10, [1.0, 0.0, 0.0], 2) - 1.0).abs() < 1e-12);
        assert!(projection(&m, 10, [0.0, 1.0, 0.0], 2) < 1e-12);
    }
}
