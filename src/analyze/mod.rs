//! `forge analyze`: the measurements of collective-motion papers from a recording.
//!
//! - The connected velocity (or heading) correlation C(r) of Cavagna et al. (PNAS 2010): each
//!   frame's fluctuations δu_i = u_i − ⟨u⟩ (the frame's mean removed), C(r) = Σ δu_i·δu_j over
//!   the pairs at distance r ÷ their number ÷ ⟨|δu|²⟩, so C(0) = 1; the correlation length ξ is
//!   its first zero, and the susceptibility χ the maximum over r of the integrated correlation
//!   Q(r) = (1/N) Σ_{r_ij<r} δu_i·δu_j ÷ ⟨|δu|²⟩ (the i = j terms included: Q(0) = 1).
//! - The pair correlation g(r): pairs at distance r against an ideal gas in the same box.
//! - The anisotropy of the k-th nearest neighbour's direction against the flight direction
//!   (Ballerini et al., PNAS 2008): γ_k = ⟨(û_ij · V̂)²⟩ − 1/d, 0 for an isotropic arrangement,
//!   negative when neighbours sit beside each other rather than ahead and behind; and
//!   Ballerini's own measure of it, the squared projection (W·V̂)² of the flight direction on
//!   W, the direction the k-th neighbours lie along least ([`shape::projection`]).
//! - The flock's shape ([`shape`]): its principal axes and their ratios, the thinnest axis'
//!   angle to the vertical, the nearest-neighbour distance, and density at the border against
//!   the centre.
//!
//! Pairs are summed exactly ([`pairs`], every pair in float64) up to [`EXACT_MAX_AGENTS`]
//! agents, and through a grid and FFTs above ([`grid`]: O(N + M log M) for M cells). Periodic
//! worlds use minimum-image distances; other worlds take each frame's bounding box as the box.
//! Error bars come from a bootstrap over the analysed frames.

mod grid;
mod knn;
mod pairs;
mod report;
mod shape;
mod stats;

use std::ops::Range;

use anyhow::{bail, Result};
use serde::Serialize;

use crate::bfs::{Frame, Header, Reader};
use crate::metrics::image;
use crate::scene::{Boundary, Model};
pub use shape::{BorderDensity, NearestNeighbour, Shape};
use stats::{aggregate, anisotropy_of, bootstrap};

/// Up to this many agents, [`Method::Auto`] sums every pair exactly.
pub const EXACT_MAX_AGENTS: usize = 5000;
/// The most bins of C(r) and g(r).
pub const MAX_BINS: usize = 10_000;
/// The largest k of the neighbour anisotropy.
pub const MAX_K: usize = 64;
/// The most bootstrap resamples (each holds its frames' sums: a bound on memory).
pub const MAX_BOOTSTRAP: usize = 100_000;
/// Fewer agents than this get a statistical caveat.
pub const FEW_AGENTS: usize = 50;

/// What is correlated: the velocities (boids; Cavagna's starlings) or the unit headings
/// (Vicsek, whose agents all move at one speed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Field {
    Velocity,
    Heading,
}

/// Whose mean is removed from each velocity: the frame's own (Cavagna's, the default), or the
/// mean over every analysed frame (a flock's drift around a fixed direction kept in).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Mean {
    Frame,
    Frames,
}

/// How the pair sums are made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// Exact up to [`EXACT_MAX_AGENTS`] agents, the grid above.
    Auto,
    /// Every pair, in float64: O(N²).
    Exact,
    /// Agents on a grid, pair sums by FFT: O(N + M log M).
    Grid,
}

/// What to analyse, checked against the recording by [`analyze`].
#[derive(Clone, Debug)]
pub struct Options {
    /// Frames `A..B` of the recording, every `every`-th of them.
    pub frames: Range<u64>,
    pub every: u64,
    /// Bins of C(r) and g(r) over `0..r_max`.
    pub bins: usize,
    /// `None`: half the box's shortest side.
    pub r_max: Option<f64>,
    /// Neighbours 1..=k_max for the anisotropy.
    pub k_max: usize,
    /// `None`: headings for Vicsek, velocities otherwise.
    pub field: Option<Field>,
    /// The mean removed from the velocities.
    pub mean: Mean,
    pub method: Method,
    /// Bootstrap resamples of the frames for the error bars.
    pub bootstrap: usize,
}

impl Options {
    /// The defaults for frames `frames`.
    pub fn new(frames: Range<u64>) -> Options {
        Options {
            frames,
            every: 1,
            bins: 100,
            r_max: None,
            k_max: 20,
            field: None,
            mean: Mean::Frame,
            method: Method::Auto,
            bootstrap: 200,
        }
    }
}

/// The anisotropy of the k-th nearest neighbour's direction, k = 1..=k_max.
#[derive(Clone, Debug, Serialize)]
pub struct Anisotropy {
    pub k: Vec<usize>,
    /// γ_k = ⟨(û·V̂)²⟩ − 1/d, and its error: the larger of the bootstrap's over frames and
    /// the standard error over agents.
    pub gamma: Vec<Option<f64>>,
    pub gamma_error: Vec<Option<f64>>,
    /// The first k whose γ_k is within two error bars of 0.
    pub isotropic_from_k: Option<usize>,
    /// Ballerini's (W·V̂)²: the squared projection of the flight direction on W, the
    /// eigenvector of the least eigenvalue of ⟨û ûᵀ⟩ over the k-th neighbours (1/d when
    /// isotropic, towards 1 when neighbours lie beside rather than ahead and behind), averaged
    /// over frames, and its standard error over frames.
    pub projection: Vec<Option<f64>>,
    pub projection_error: Vec<Option<f64>>,
    /// Agents measured per frame (those nearer a wall than their k_max-th neighbour are not,
    /// in a world that does not wrap).
    pub agents_measured: f64,
}

/// What `forge analyze` measures, as `--json` prints it.
#[derive(Clone, Debug, Serialize)]
pub struct Analysis {
    /// The frames analysed, `[A, B]` (B excluded), every `every`-th.
    pub frames: [u64; 2],
    pub every: u64,
    pub frames_analysed: usize,
    pub agents: usize,
    pub dim: usize,
    pub periodic: bool,
    pub field: Field,
    pub mean: Mean,
    pub method: Method,
    /// Grid cells per axis where the grid method ran.
    pub grid: Option<usize>,
    pub r_max: f64,
    pub bootstrap: usize,
    /// The frames' mean polarisation |⟨u⟩| / ⟨|u|⟩.
    pub polarization: f64,
    pub correlation_length: Option<f64>,
    pub correlation_length_error: Option<f64>,
    pub susceptibility: f64,
    pub susceptibility_error: Option<f64>,
    /// Bin centres, and C(r), its error, g(r) and Q(r) (at the bins' upper edges) per bin; null
    /// where a bin holds no pair.
    pub r: Vec<f64>,
    pub c: Vec<Option<f64>>,
    pub c_error: Vec<Option<f64>>,
    pub g: Vec<Option<f64>>,
    pub q: Vec<f64>,
    pub anisotropy: Anisotropy,
    /// The flock's shape: its principal axes, their ratios and tilt, the nearest-neighbour
    /// distance and the border's density (at the top level of the JSON).
    #[serde(flatten)]
    pub shape: Shape,
    /// What limits the numbers (few agents, one frame, no mean direction).
    pub caveats: Vec<String>,
}

/// Threads for a frame's pair sums and neighbour search: the cores, at most 16.
fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |t| t.get().clamp(1, 16))
}

/// The geometry of one frame's pair sums.
#[derive(Clone, Copy, Debug)]
struct Geometry {
    dim: usize,
    wrap: bool,
    /// The box: the world (periodic) or the frame's bounding box.
    lo: [f64; 3],
    len: [f64; 3],
    /// The frame's minimum image ([`image::choose`]): none in an open world, one select where
    /// every position lies near the periodic box (any recording forge writes), else libm's
    /// round.
    image: u8,
}

impl Geometry {
    fn volume(&self) -> f64 {
        self.len[..self.dim].iter().product()
    }

    /// The separation of `a` and `b` along axis `k`, minimum image in a periodic world.
    #[inline]
    fn delta(&self, d: f64, k: usize) -> f64 {
        match self.image {
            image::NONE => d,
            image::NEAR => image::near(d, self.len[k]),
            _ => image::far(d, self.len[k]),
        }
    }
}

/// One frame's sums, from which any set of frames is aggregated.
#[derive(Clone, Debug, Default)]
struct FrameStats {
    n: usize,
    /// Per bin, over ordered pairs i ≠ j: Σ δu_i·δu_j / ⟨|δu|²⟩, the pair count, and the count
    /// an ideal gas in the same box would give.
    a: Vec<f64>,
    p: Vec<f64>,
    ideal: Vec<f64>,
    /// Per k: mean of (û·V̂)² − 1/d over the agents measured, its standard error, and how many.
    gamma: Vec<f64>,
    gamma_se: Vec<f64>,
    measured: usize,
    /// Per k: Ballerini's (W·V̂)² ([`shape::projection`]).
    projection: Vec<f64>,
    polarization: f64,
    shape: shape::FrameShape,
}

/// An option out of range for this recording, named as the CLI (`--r-max`) and the Python
/// package (`r_max`) each name it: the CLI shows `--r-max: …`, the package raises a
/// `ValueError` naming `r_max`.
#[derive(Debug, thiserror::Error)]
#[error("--{}: {message}", option.replace('_', "-"))]
pub struct BadOption {
    /// The option's name as a Python argument (`r_max`, `frames`).
    pub option: &'static str,
    pub message: String,
}

fn bad(option: &'static str, message: String) -> anyhow::Error {
    BadOption { option, message }.into()
}

/// Why a recording of no complete frame is refused (the CLI says it before `--frames`).
pub const NO_FRAMES: &str = "the recording holds no complete frame to analyse";

/// The checks that need the recording: frames, agents, r_max against the box.
fn check(h: &Header, o: &Options, frame_count: u64) -> Result<()> {
    if frame_count == 0 {
        bail!(NO_FRAMES);
    }
    if o.frames.start >= o.frames.end || o.frames.end > frame_count {
        let (a, b) = (o.frames.start, o.frames.end);
        return Err(bad(
            "frames",
            format!("{a}..{b} is not within the recording's frames 0..{frame_count}"),
        ));
    }
    if o.every == 0 {
        return Err(bad("every", "must be at least 1".into()));
    }
    if o.bins == 0 || o.bins > MAX_BINS {
        return Err(bad(
            "bins",
            format!("must be in 1..={MAX_BINS}, got {}", o.bins),
        ));
    }
    if o.k_max == 0 || o.k_max > MAX_K {
        return Err(bad(
            "k_max",
            format!("must be in 1..={MAX_K}, got {}", o.k_max),
        ));
    }
    if o.bootstrap > MAX_BOOTSTRAP {
        let n = o.bootstrap;
        return Err(bad(
            "bootstrap",
            format!("at most {MAX_BOOTSTRAP} resamples, got {n}"),
        ));
    }
    if h.agents < 2 {
        bail!(
            "the recording has {} agent{}: correlations need at least 2",
            h.agents,
            if h.agents == 1 { "" } else { "s" }
        );
    }
    if let Some(r) = o.r_max {
        if !(r.is_finite() && r > 0.0) {
            return Err(bad("r_max", format!("must be a distance above 0, got {r}")));
        }
        if h.boundary == Boundary::Wrap {
            let half = h.world_size[..h.dim as usize]
                .iter()
                .fold(f64::INFINITY, |m, &l| m.min(l as f64))
                / 2.0;
            if r > half * (1.0 + 1e-9) {
                return Err(bad(
                    "r_max",
                    format!(
                        "{r} is beyond half the periodic box ({half}): distances past it wrap \
                         around"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The field u of a frame (velocities or headings, component-major like the frame) and the
/// mean speed.
fn field_of(f: &Frame, dim: usize, field: Field) -> (Vec<f64>, f64) {
    let n = f.agents(dim);
    let mut u = vec![0.0f64; dim * n];
    let mut speed = 0.0;
    for i in 0..n {
        let s = (0..dim)
            .map(|k| (f.vel[k * n + i] as f64).powi(2))
            .sum::<f64>()
            .sqrt();
        speed += s;
        for k in 0..dim {
            let v = f.vel[k * n + i] as f64;
            u[k * n + i] = match field {
                Field::Velocity => v,
                Field::Heading if s > 0.0 => v / s,
                Field::Heading => 0.0,
            };
        }
    }
    (u, speed)
}

/// The mean of the field u over a frame.
fn mean_of(u: &[f64], dim: usize, n: usize) -> [f64; 3] {
    let mut mean = [0.0; 3];
    for (k, m) in mean.iter_mut().enumerate().take(dim) {
        *m = u[k * n..(k + 1) * n].iter().sum::<f64>() / n as f64;
    }
    mean
}

/// Below this ⟨|δu|²⟩ ÷ |⟨u⟩|², a frame's fluctuations are float32 rounding (a relative 6e-8 a
/// value), not motion: a flock in perfect order.
const ROUNDING: f64 = 1e-12;

/// The fluctuations δu = u − `remove` (the frame's own mean where `None`), ⟨|δu|²⟩, the
/// polarisation, and whether ⟨|δu|²⟩ is no more than rounding ([`ROUNDING`]).
fn fluctuations(
    f: &Frame,
    dim: usize,
    field: Field,
    remove: Option<[f64; 3]>,
) -> (Vec<f64>, f64, f64, bool) {
    let n = f.agents(dim);
    let (mut u, speed) = field_of(f, dim, field);
    let mean = mean_of(&u, dim, n);
    let mean_len = mean.iter().map(|x| x * x).sum::<f64>().sqrt();
    let scale = match field {
        Field::Velocity => speed / n as f64,
        Field::Heading => 1.0,
    };
    let polarization = if scale > 0.0 { mean_len / scale } else { 0.0 };
    let mean = remove.unwrap_or(mean);
    for k in 0..dim {
        u[k * n..(k + 1) * n].iter_mut().for_each(|x| *x -= mean[k]);
    }
    let c0 = u.iter().map(|x| x * x).sum::<f64>() / n as f64;
    (u, c0, polarization, c0 <= ROUNDING * mean_len * mean_len)
}

/// The mean direction of motion V̂ of a frame (`None` when the velocities cancel).
fn flight_direction(f: &Frame, dim: usize) -> Option<[f64; 3]> {
    let n = f.agents(dim);
    let mut v = [0.0; 3];
    for (k, x) in v.iter_mut().enumerate().take(dim) {
        *x = f.vel[k * n..(k + 1) * n]
            .iter()
            .map(|&x| x as f64)
            .sum::<f64>();
    }
    let len = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    (len > 0.0 && len.is_finite()).then(|| v.map(|x| x / len))
}

fn geometry(h: &Header, f: &Frame) -> Geometry {
    let dim = h.dim as usize;
    let n = f.agents(dim);
    if h.boundary == Boundary::Wrap {
        let mut len = [1.0; 3];
        for (l, &w) in len.iter_mut().zip(&h.world_size).take(dim) {
            *l = w as f64;
        }
        let axis = |k: usize| f.pos[k * n..(k + 1) * n].iter().map(|&x| x as f64);
        return Geometry {
            dim,
            wrap: true,
            lo: [0.0; 3],
            len,
            image: image::choose(true, dim, &len, axis),
        };
    }
    let (mut lo, mut len) = ([0.0; 3], [1.0; 3]);
    for k in 0..dim {
        let xs = &f.pos[k * n..(k + 1) * n];
        let a = xs.iter().fold(f64::INFINITY, |m, &x| m.min(x as f64));
        let b = xs.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(x as f64));
        lo[k] = a;
        // A flat flock (every agent on one line) still gets a box of some width.
        len[k] = (b - a).max(1e-9 * (1.0 + a.abs()));
    }
    Geometry {
        dim,
        wrap: false,
        lo,
        len,
        image: image::NONE,
    }
}

/// What the first frame settles for the rest: r_max, the method, the grid.
struct Run {
    r_max: Option<f64>,
    method: Method,
    /// The grid method's FFT plans and buffers, made at the first frame.
    grid: Option<grid::Grid>,
    /// Frames with no mean direction of motion.
    no_direction: usize,
    /// Frames whose fluctuations are float32 rounding.
    still: usize,
}

impl Run {
    /// One frame's sums.
    fn frame(
        &mut self,
        h: &Header,
        frame: &Frame,
        (field, remove): (Field, Option<[f64; 3]>),
        o: &Options,
    ) -> FrameStats {
        let dim = h.dim as usize;
        let n = frame.agents(dim);
        let geo = geometry(h, frame);
        let half = geo.len[..dim].iter().fold(f64::INFINITY, |m, &l| m.min(l)) / 2.0;
        let r_max = *self.r_max.get_or_insert(half);
        if self.method == Method::Auto {
            self.method = if n <= EXACT_MAX_AGENTS {
                Method::Exact
            } else {
                Method::Grid
            };
        }
        let (du, c0, polarization, rounding) = fluctuations(frame, dim, field, remove);
        self.still += rounding as usize;
        let dr = r_max / o.bins as f64;
        let mut s = match self.method {
            Method::Grid => self
                .grid
                .get_or_insert_with(|| grid::Grid::new(dim, geo.wrap))
                .frame_stats(&frame.pos, &du, n, &geo, dr, o.bins),
            _ => pairs::frame_stats(&frame.pos, &du, n, &geo, dr, o.bins),
        };
        if c0 > 0.0 {
            s.a.iter_mut().for_each(|x| *x /= c0);
        } else {
            s.a.iter_mut().for_each(|x| *x = 0.0);
        }
        s.n = n;
        s.polarization = polarization;
        (s.shape.axes, s.shape.to_vertical) = shape::axes(&frame.pos, n, &geo);
        let v = flight_direction(frame, dim);
        self.no_direction += v.is_none() as usize;
        knn::anisotropy(&frame.pos, n, &geo, v, o.k_max, &mut s);
        s
    }
}

/// What limits the numbers: few agents, one frame, frames with no direction, no zero of C
/// (`no_zero`: the r_max it stays above 0 up to).
fn caveats(n: usize, frames: usize, no_direction: usize, no_zero: Option<f64>) -> Vec<String> {
    let mut caveats = Vec::new();
    if n < FEW_AGENTS {
        caveats.push(format!(
            "{n} agents: {} pairs per frame, too few for C(r) and g(r) to mean much",
            n * (n - 1) / 2
        ));
    }
    if frames < 2 {
        caveats.push(
            "one frame: no error bars from the bootstrap over frames (the anisotropy's are over \
             agents)"
                .into(),
        );
    }
    if no_direction > 0 {
        caveats.push(format!(
            "{no_direction} frame(s) with no mean direction of motion: no anisotropy there"
        ));
    }
    if let Some(r_max) = no_zero {
        caveats.push(format!(
            "C(r) stays above 0 up to r_max = {r_max}: no correlation length within it"
        ));
    }
    caveats
}

/// Analyses frames `o.frames` (every `o.every`-th) of `reader`.
pub fn analyze(reader: &mut Reader, o: &Options) -> Result<Analysis> {
    let h = reader.header().clone();
    check(&h, o, reader.frame_count())?;
    let dim = h.dim as usize;
    let field = o.field.unwrap_or(match h.model {
        Model::Vicsek => Field::Heading,
        Model::Boids => Field::Velocity,
    });
    let mut frame = Frame::empty();
    let picks: Vec<u64> = o.frames.clone().step_by(o.every as usize).collect();
    let mut stats = Vec::with_capacity(picks.len());
    let mut run = Run {
        r_max: o.r_max,
        method: o.method,
        grid: None,
        no_direction: 0,
        still: 0,
    };
    let read = |reader: &mut Reader, k: u64, frame: &mut Frame| -> Result<()> {
        crate::signal::check()?;
        reader.read_frame_into(k, frame)?;
        frame.check_finite(dim, k)?;
        frame.drop_absent(dim);
        Ok(())
    };
    // `--mean frames`: a first pass for the mean over every analysed frame.
    let remove = match o.mean {
        Mean::Frame => None,
        Mean::Frames => {
            let mut sum = [0.0; 3];
            for &k in &picks {
                read(reader, k, &mut frame)?;
                let m = mean_of(&field_of(&frame, dim, field).0, dim, frame.agents(dim));
                (0..3).for_each(|d| sum[d] += m[d] / picks.len() as f64);
            }
            Some(sum)
        }
    };
    for &k in &picks {
        read(reader, k, &mut frame)?;
        stats.push(run.frame(&h, &frame, (field, remove), o));
    }
    let (method, no_direction) = (run.method, run.no_direction);
    let grid_side = run.grid.as_ref().map(grid::Grid::side);
    let r_max = run.r_max.unwrap_or(0.0);
    let dr = r_max / o.bins as f64;
    let r: Vec<f64> = (0..o.bins).map(|b| (b as f64 + 0.5) * dr).collect();
    let all: Vec<usize> = (0..stats.len()).collect();
    let whole = aggregate(&stats, &all, &r);
    let (errors, boot) = bootstrap(&stats, &r, o.bootstrap);
    let n = stats.first().map_or(0, |s| s.n);
    let mut caveats = caveats(
        n,
        stats.len(),
        no_direction,
        whole.xi.is_none().then_some(r_max),
    );
    if run.still > 0 {
        caveats.push(format!(
            "{} of {} frames with no fluctuations beyond float32 rounding (a flock in perfect \
             order): C(r), ξ and χ there measure rounding, not the flock",
            run.still,
            stats.len()
        ));
    }
    let anisotropy = anisotropy_of(&stats, &whole, &errors, boot);
    let shape = shape::summary(&stats, dim);
    if let Some(c) = shape::spans_the_box(&shape, &h) {
        caveats.push(c);
    }
    Ok(Analysis {
        frames: [o.frames.start, o.frames.end],
        every: o.every,
        frames_analysed: stats.len(),
        agents: n,
        dim,
        periodic: h.boundary == Boundary::Wrap,
        field,
        mean: o.mean,
        method,
        grid: grid_side,
        r_max,
        bootstrap: boot,
        polarization: stats.iter().map(|s| s.polarization).sum::<f64>() / stats.len().max(1) as f64,
        correlation_length: whole.xi,
        correlation_length_error: errors.xi,
        susceptibility: whole.chi,
        susceptibility_error: errors.chi,
        r,
        c: whole.c,
        c_error: errors.c,
        g: whole.g,
        q: whole.q,
        anisotropy,
        shape,
        caveats,
    })
}
