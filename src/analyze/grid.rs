//! The pair sums of C(r) and g(r) through a grid: each agent is put in its cell (nearest grid
//! point), and the sums over pairs at every cell-to-cell lag are autocorrelations of the
//! cell fields — the count and each component of δu — made by FFT in O(M log M) for M cells.
//! A pair counts at the distance between its cells' corners, so distances are known to about
//! a cell: bins narrower than the cells ([`side`]) get few lags at small r. Periodic worlds wrap
//! the FFT as the world wraps; other worlds pad the bounding box to twice its size, so no lag
//! wraps.

use std::sync::Arc;

use forge_fft::{Complex, Fft};

use super::{FrameStats, Geometry};

/// Cells a side of the box: 512² in 2D and 128³ in 3D for a periodic world (16 MB and 32 MB
/// per field), half that for other worlds, whose FFT runs on the box padded to twice its side.
fn side(dim: usize, wrap: bool) -> usize {
    match (dim, wrap) {
        (2, true) => 512,
        (2, false) => 256,
        (_, true) => 128,
        (_, false) => 64,
    }
}

/// The grid of an analysis: its FFT plans and buffers, made once and reused for every frame.
pub(super) struct Grid {
    /// Cells a side of the box, and of the FFT (twice that where the world does not wrap).
    side: usize,
    size: usize,
    fft: Fft3,
    buf: Vec<Complex<f64>>,
    /// The count's and δu's power spectra, then (in place) their autocorrelations.
    count: Vec<f64>,
    dot: Vec<f64>,
    /// Each agent's cell.
    cell: Vec<usize>,
}

impl Grid {
    pub(super) fn new(dim: usize, wrap: bool) -> Grid {
        let side = side(dim, wrap);
        let size = if wrap { side } else { 2 * side };
        let cells = size.pow(dim as u32);
        Grid {
            side,
            size,
            fft: Fft3::new(size, dim),
            buf: vec![Complex::new(0.0, 0.0); cells],
            count: vec![0.0; cells],
            dot: vec![0.0; cells],
            cell: Vec::new(),
        }
    }

    pub(super) fn side(&self) -> usize {
        self.side
    }

    /// Ordered-pair sums per bin of width `dr`, as [`super::pairs::frame_stats`] makes them
    /// exactly, from the grid's cells over the box.
    pub(super) fn frame_stats(
        &mut self,
        pos: &[f32],
        du: &[f64],
        n: usize,
        geo: &Geometry,
        dr: f64,
        bins: usize,
    ) -> FrameStats {
        let (dim, side, size) = (geo.dim, self.side, self.size);
        self.cell.clear();
        self.cell.extend((0..n).map(|i| {
            let mut idx = 0;
            for k in (0..dim).rev() {
                let x = (pos[k * n + i] as f64 - geo.lo[k]) / geo.len[k] * side as f64;
                let c = if geo.wrap {
                    (x.floor() as i64).rem_euclid(side as i64) as usize
                } else {
                    (x.floor().max(0.0) as usize).min(side - 1)
                };
                idx = idx * size + c;
            }
            idx
        }));
        // Power spectra of the count field and of δu's components (summed).
        self.count.fill(0.0);
        self.dot.fill(0.0);
        self.add_power(|_| 1.0, false);
        for k in 0..dim {
            self.add_power(|i| du[k * n + i], true);
        }
        // Back to lags: the autocorrelations, self-pairs (lag 0) removed.
        self.lags_of(false);
        self.lags_of(true);
        self.count[0] -= n as f64;
        self.dot[0] -= du.iter().map(|x| x * x).sum::<f64>();
        bin_lags(&self.count, &self.dot, geo, side, size, n, dr, bins)
    }

    /// Adds the power spectrum of the cell field Σ values(i) to `count` or to `dot`.
    fn add_power(&mut self, values: impl Fn(usize) -> f64, to_dot: bool) {
        self.buf.fill(Complex::new(0.0, 0.0));
        for (i, &c) in self.cell.iter().enumerate() {
            self.buf[c].re += values(i);
        }
        self.fft.run(&mut self.buf, false);
        let out = if to_dot {
            &mut self.dot
        } else {
            &mut self.count
        };
        for (o, c) in out.iter_mut().zip(&self.buf) {
            *o += c.norm_sqr();
        }
    }

    /// Turns `count` or `dot` from a power spectrum into the autocorrelation over lags.
    fn lags_of(&mut self, dot: bool) {
        let spectrum = if dot { &mut self.dot } else { &mut self.count };
        for (b, &s) in self.buf.iter_mut().zip(spectrum.iter()) {
            *b = Complex::new(s, 0.0);
        }
        self.fft.run(&mut self.buf, true);
        let cells = self.buf.len() as f64;
        for (s, b) in spectrum.iter_mut().zip(&self.buf) {
            *s = b.re / cells;
        }
    }
}

/// Sums the lag fields into distance bins, with an ideal gas's expected count per lag.
#[allow(clippy::too_many_arguments)]
fn bin_lags(
    pair_count: &[f64],
    dot: &[f64],
    geo: &Geometry,
    side: usize,
    size: usize,
    n: usize,
    dr: f64,
    bins: usize,
) -> FrameStats {
    let dim = geo.dim;
    let r_max = dr * bins as f64;
    let h: Vec<f64> = (0..dim).map(|k| geo.len[k] / side as f64).collect();
    let box_cells = side.pow(dim as u32) as f64;
    let pairs = n as f64 * (n as f64 - 1.0);
    let (mut a, mut p, mut ideal) = (vec![0.0; bins], vec![0.0; bins], vec![0.0; bins]);
    for (m, (&pc, &d)) in pair_count.iter().zip(dot).enumerate() {
        let (mut rest, mut r2, mut overlap) = (m, 0.0, 1.0);
        for hk in &h {
            let l = rest % size;
            rest /= size;
            let lag = if geo.wrap {
                if l <= size / 2 {
                    l as i64
                } else {
                    l as i64 - size as i64
                }
            } else if l < side {
                l as i64
            } else {
                l as i64 - size as i64
            };
            r2 += (lag as f64 * hk).powi(2);
            overlap *= (side as f64 - lag.unsigned_abs() as f64).max(0.0);
        }
        let r = r2.sqrt();
        if r >= r_max {
            continue;
        }
        let b = ((r / dr) as usize).min(bins - 1);
        a[b] += d;
        p[b] += pc;
        ideal[b] += if geo.wrap {
            pairs / box_cells
        } else {
            pairs * overlap / (box_cells * box_cells)
        };
    }
    FrameStats {
        a,
        p,
        ideal,
        ..FrameStats::default()
    }
}

/// A d-dimensional FFT of `size` points a side, as 1-D FFTs along each axis; its plans and
/// scratch buffers made once.
struct Fft3 {
    size: usize,
    dim: usize,
    forward: Arc<dyn Fft<f64>>,
    inverse: Arc<dyn Fft<f64>>,
    scratch: Vec<Complex<f64>>,
    /// A batch of lines along one axis, gathered contiguous.
    line: Vec<Complex<f64>>,
}

impl Fft3 {
    fn new(size: usize, dim: usize) -> Fft3 {
        let (forward, inverse) = forge_fft::plan(size);
        let scratch = forward
            .get_inplace_scratch_len()
            .max(inverse.get_inplace_scratch_len());
        Fft3 {
            size,
            dim,
            forward,
            inverse,
            scratch: vec![Complex::new(0.0, 0.0); scratch],
            line: vec![Complex::new(0.0, 0.0); size * size],
        }
    }

    /// Transforms `buf` (x fastest) in place; unnormalised both ways.
    fn run(&mut self, buf: &mut [Complex<f64>], inverse: bool) {
        let fft = if inverse {
            &self.inverse
        } else {
            &self.forward
        };
        let size = self.size;
        let (scratch, line) = (&mut self.scratch, &mut self.line);
        // Axis 0 is contiguous: every row at once.
        fft.process_with_scratch(buf, scratch);
        // The other axes: lines gathered into a contiguous batch, transformed, put back.
        let total = buf.len();
        for axis in 1..self.dim {
            let stride = size.pow(axis as u32);
            let block = stride * size;
            for start in (0..total).step_by(block) {
                // The lines of this block: offsets 0..stride, each `size` points at `stride`.
                for first in (0..stride).step_by(size) {
                    let lines = size.min(stride - first);
                    for o in 0..lines {
                        for t in 0..size {
                            line[o * size + t] = buf[start + first + o + t * stride];
                        }
                    }
                    fft.process_with_scratch(&mut line[..lines * size], scratch);
                    for o in 0..lines {
                        for t in 0..size {
                            buf[start + first + o + t * stride] = line[o * size + t];
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 2-D transform of a point at (1, 2) is the plane wave it should be.
    #[test]
    fn a_point_transforms_to_its_plane_wave() {
        let size = 8;
        let mut g = Fft3::new(size, 2);
        let mut buf = vec![Complex::new(0.0, 0.0); size * size];
        buf[1 + size * 2] = Complex::new(1.0, 0.0);
        g.run(&mut buf, false);
        for ky in 0..size {
            for kx in 0..size {
                let ph = -std::f64::consts::TAU * (kx as f64 + 2.0 * ky as f64) / size as f64;
                let want = Complex::new(ph.cos(), ph.sin());
                assert!((buf[kx + size * ky] - want).norm() < 1e-12, "{kx} {ky}");
            }
        }
        g.run(&mut buf, true);
        assert!((buf[1 + size * 2].re - (size * size) as f64).abs() < 1e-9);
    }

    /// 3-D round trip: the inverse of the forward transform is the input times the cell count.
    #[test]
    fn three_dimensions_round_trip() {
        let size = 4;
        let mut g = Fft3::new(size, 3);
        let input: Vec<Complex<f64>> = (0..64)
            .map(|i| Complex::new((i * 7 % 11) as f64, 0.0))
            .collect();
        let mut buf = input.clone();
        g.run(&mut buf, false);
        g.run(&mut buf, true);
        for (a, b) in buf.iter().zip(&input) {
            assert!((a.re / 64.0 - b.re).abs() < 1e-9);
        }
    }
}
