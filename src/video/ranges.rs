//! Colour-map ranges measured from the recording: speed and turn percentiles, 3D density,
//! and the quantity that tells most.

use anyhow::{anyhow, Result};

use crate::bfs::{Frame, Reader};
use crate::scene::Boundary;

/// How many frames the speed range is estimated from (evenly spaced).
const RANGE_SAMPLE_FRAMES: u64 = 16;
/// Agents per sampled frame used for the speed range (evenly strided).
const RANGE_SAMPLE_AGENTS: usize = 20_000;

/// `k` frames of `clip` evenly spaced, its first and last included (all of them if fewer).
pub fn sample_frames(clip: std::ops::Range<u64>, k: u64) -> Vec<u64> {
    let count = clip.end - clip.start;
    if count <= k {
        return clip.collect();
    }
    (0..k)
        .map(|i| clip.start + i * (count - 1) / (k - 1))
        .collect()
}

/// The value a fraction `p` of the way up `sorted` (nearest rank).
fn percentile(sorted: &[f32], p: f64) -> f32 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Speed at the map's ends: 5th and 95th percentiles over frames sampled from `frames`.
pub fn speed_range(r: &mut Reader, frames: std::ops::Range<u64>) -> Result<[f32; 2]> {
    Ok(speed_span(speeds_by_frame(r, frames)?.concat()))
}

/// The speed range of the sampled `speeds`, all frames together.
fn speed_span(mut speeds: Vec<f32>) -> [f32; 2] {
    if speeds.is_empty() {
        return [0.0, 1.0];
    }
    speeds.sort_by(|a, b| a.total_cmp(b));
    let (lo, hi) = (percentile(&speeds, 0.05), percentile(&speeds, 0.95));
    if hi - lo <= 1e-6 * hi.abs().max(1.0) {
        // One speed (Vicsek): put it mid-map.
        let s = hi.abs().max(1e-6);
        return [hi - s * 0.5, hi + s * 0.5];
    }
    [lo, hi]
}

/// Density at the map's ends for a 3D recording: 0 and the 95th percentile of the agents'
/// local density over frames sampled from `frames`, computed on the CPU the way the density
/// pass does on the GPU (the same grid and blur; nearest cell instead of trilinear). Agents
/// fill so little of a 3D world that a multiple of the mean per cell (the 2D rule) saturates.
pub fn density_range_3d(r: &mut Reader, frames: std::ops::Range<u64>) -> Result<[f32; 2]> {
    let h = r.header();
    let size = h.world_size;
    let wrap = h.boundary == Boundary::Wrap;
    let g = crate::render::density::grid_for_3d(size).map(|x| x as usize);
    let cells = g[0] * g[1] * g[2];
    let index = |c: [isize; 3]| -> usize {
        let mut q = [0usize; 3];
        for a in 0..3 {
            let n = g[a] as isize;
            q[a] = if wrap {
                c[a].rem_euclid(n) as usize
            } else {
                c[a].clamp(0, n - 1) as usize
            };
        }
        (q[2] * g[1] + q[1]) * g[0] + q[0]
    };
    const W: [f32; 5] = [0.0625, 0.25, 0.375, 0.25, 0.0625];
    let picks = sample_frames(frames.clone(), RANGE_SAMPLE_FRAMES);
    let mut values = Vec::new();
    let mut f = Frame::empty();
    let (mut a, mut b) = (vec![0f32; cells], vec![0f32; cells]);
    for k in picks {
        r.read_frame_into(k, &mut f)
            .map_err(|e| anyhow!("frame {k}: {e}"))?;
        let n = f.agents(3);
        let cell_of = |i: usize| -> Option<[isize; 3]> {
            let mut c = [0isize; 3];
            for ax in 0..3 {
                let x = (f.pos[ax * n + i] / size[ax] * g[ax] as f32).floor();
                if !(x >= 0.0 && x < g[ax] as f32) {
                    return None;
                }
                c[ax] = x as isize;
            }
            Some(c)
        };
        a.iter_mut().for_each(|x| *x = 0.0);
        for i in 0..n {
            if let Some(c) = cell_of(i) {
                a[index(c)] += 1.0;
            }
        }
        // Blur along x, y, z (ping-pong between a and b), as shaders/density.wgsl does.
        for axis in 0..3 {
            for z in 0..g[2] {
                for y in 0..g[1] {
                    for x in 0..g[0] {
                        let c = [x as isize, y as isize, z as isize];
                        let mut s = 0.0;
                        for (t, w) in W.iter().enumerate() {
                            let mut q = c;
                            q[axis] += t as isize - 2;
                            s += w * a[index(q)];
                        }
                        b[index(c)] = s;
                    }
                }
            }
            std::mem::swap(&mut a, &mut b);
        }
        let step = (n / RANGE_SAMPLE_AGENTS).max(1);
        for i in (0..n).step_by(step) {
            if let Some(c) = cell_of(i) {
                values.push(a[index(c)]);
            }
        }
    }
    if values.is_empty() {
        return Ok([0.0, 1.0]);
    }
    values.sort_by(|a, b| a.total_cmp(b));
    let hi = percentile(&values, 0.95);
    Ok([0.0, if hi > 1e-6 { hi } else { 1.0 }])
}

/// The turn of every sampled agent: its heading minus its frame's mean heading (x–y), in
/// degrees in (−180, 180], frame by frame.
fn turns_by_frame(r: &mut Reader, frames: std::ops::Range<u64>) -> Result<Vec<Vec<f32>>> {
    let dim = r.header().dim as usize;
    let mut out = Vec::new();
    let mut f = Frame::empty();
    for k in sample_frames(frames, RANGE_SAMPLE_FRAMES) {
        r.read_frame_into(k, &mut f)
            .map_err(|e| anyhow!("frame {k}: {e}"))?;
        let n = f.agents(dim);
        let mean = crate::render::mean_heading(&f, dim, n);
        let step = (n / RANGE_SAMPLE_AGENTS).max(1);
        let mut turns = Vec::with_capacity(n / step + 1);
        for i in (0..n).step_by(step) {
            let (vx, vy) = (f.vel[i], f.vel[n + i]);
            if !(vx.is_finite() && vy.is_finite()) || (vx == 0.0 && vy == 0.0) {
                continue;
            }
            let t = vy.atan2(vx) - mean;
            let t = t - std::f32::consts::TAU * (t / std::f32::consts::TAU).round();
            turns.push(t.to_degrees());
        }
        out.push(turns);
    }
    Ok(out)
}

/// The `relative-heading` range: ± the 95th percentile of the turn over frames sampled from
/// `frames`, at least ±5°.
pub fn turn_range(r: &mut Reader, frames: std::ops::Range<u64>) -> Result<[f32; 2]> {
    Ok(turn_span(&turns_by_frame(r, frames)?))
}

/// The turn range of the sampled turns `by_frame`.
fn turn_span(by_frame: &[Vec<f32>]) -> [f32; 2] {
    let mut all: Vec<f32> = by_frame.iter().flatten().map(|t| t.abs()).collect();
    if all.is_empty() {
        return [-90.0, 90.0];
    }
    all.sort_by(|a, b| a.total_cmp(b));
    let hi = percentile(&all, 0.95).clamp(5.0, 180.0);
    [-hi, hi]
}

/// The share of the colour map a typical frame's agents span between their 5th and 95th
/// percentile, for values `by_frame` shown over `range`: the median over the frames.
fn spread(by_frame: &[Vec<f32>], range: [f32; 2]) -> f32 {
    let width = (range[1] - range[0]).max(1e-20);
    let mut spans: Vec<f32> = by_frame
        .iter()
        .filter(|v| v.len() >= 2)
        .map(|v| {
            let mut v = v.clone();
            v.sort_by(|a, b| a.total_cmp(b));
            let (lo, hi) = (percentile(&v, 0.05), percentile(&v, 0.95));
            ((hi.min(range[1]) - lo.max(range[0])) / width).clamp(0.0, 1.0)
        })
        .collect();
    if spans.is_empty() {
        return 0.0;
    }
    spans.sort_by(|a, b| a.total_cmp(b));
    spans[spans.len() / 2]
}

/// The speeds of the sampled agents, frame by frame.
pub(super) fn speeds_by_frame(
    r: &mut Reader,
    frames: std::ops::Range<u64>,
) -> Result<Vec<Vec<f32>>> {
    let dim = r.header().dim as usize;
    let mut out = Vec::new();
    let mut f = Frame::empty();
    for k in sample_frames(frames, RANGE_SAMPLE_FRAMES) {
        r.read_frame_into(k, &mut f)
            .map_err(|e| anyhow!("frame {k}: {e}"))?;
        let n = f.agents(dim);
        let step = (n / RANGE_SAMPLE_AGENTS).max(1);
        let speeds = (0..n)
            .step_by(step)
            .map(|i| {
                (0..dim)
                    .map(|a| f.vel[a * n + i] * f.vel[a * n + i])
                    .sum::<f32>()
                    .sqrt()
            })
            .filter(|s| s.is_finite())
            .collect();
        out.push(speeds);
    }
    Ok(out)
}

/// The colour quantity that carries the most over `frames` when no layer names one: speed
/// if a typical frame's agents span at least 40% of the map by it, else whichever of speed
/// and the turn (relative heading) spans more. (A flock at one speed, or one heading, shows
/// nothing by it.)
pub fn most_telling(
    r: &mut Reader,
    frames: std::ops::Range<u64>,
) -> Result<crate::look::ColorMode> {
    use crate::look::ColorMode;
    // Each quantity read once, its range and its spread from the same samples.
    let speeds = speeds_by_frame(r, frames.clone())?;
    let speed = spread(&speeds, speed_span(speeds.concat()));
    if speed >= 0.4 {
        return Ok(ColorMode::Speed);
    }
    let turns = turns_by_frame(r, frames)?;
    let turn = spread(&turns, turn_span(&turns));
    Ok(if turn > speed {
        ColorMode::RelativeHeading
    } else {
        ColorMode::Speed
    })
}
