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
        f.drop_absent(3);
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

/// Each sampled agent's local density in a 2D recording, frame by frame, as the density pass
/// computes it on the GPU (shaders/density.wgsl: counts on `render::density::grid_for`'s grid,
/// the 5-tap binomial blur along x then y, wrapping in a periodic world; the nearest cell
/// instead of a bilinear read).
fn densities_2d(r: &mut Reader, frames: std::ops::Range<u64>) -> Result<Vec<Vec<f32>>> {
    let h = r.header();
    let size = [h.world_size[0], h.world_size[1]];
    let wrap = h.boundary == Boundary::Wrap;
    let g = crate::render::density::grid_for(size).map(|x| x as usize);
    let at = |x: isize, y: isize| -> usize {
        let (nx, ny) = (g[0] as isize, g[1] as isize);
        let (x, y) = if wrap {
            (x.rem_euclid(nx), y.rem_euclid(ny))
        } else {
            (x.clamp(0, nx - 1), y.clamp(0, ny - 1))
        };
        y as usize * g[0] + x as usize
    };
    const W: [f32; 5] = [0.0625, 0.25, 0.375, 0.25, 0.0625];
    let (mut a, mut b) = (vec![0f32; g[0] * g[1]], vec![0f32; g[0] * g[1]]);
    let mut f = Frame::empty();
    let mut out = Vec::new();
    for k in sample_frames(frames, RANGE_SAMPLE_FRAMES) {
        r.read_frame_into(k, &mut f)
            .map_err(|e| anyhow!("frame {k}: {e}"))?;
        f.drop_absent(2);
        let n = f.agents(2);
        let cell = |i: usize| -> Option<(isize, isize)> {
            let x = (f.pos[i] / size[0] * g[0] as f32).floor();
            let y = (f.pos[n + i] / size[1] * g[1] as f32).floor();
            (x >= 0.0 && y >= 0.0 && x < g[0] as f32 && y < g[1] as f32)
                .then_some((x as isize, y as isize))
        };
        a.iter_mut().for_each(|c| *c = 0.0);
        for i in 0..n {
            if let Some((x, y)) = cell(i) {
                a[at(x, y)] += 1.0;
            }
        }
        for (dx, dy) in [(1, 0), (0, 1)] {
            for y in 0..g[1] as isize {
                for x in 0..g[0] as isize {
                    b[at(x, y)] = (0..5)
                        .map(|t| W[t] * a[at(x + (t as isize - 2) * dx, y + (t as isize - 2) * dy)])
                        .sum();
                }
            }
            std::mem::swap(&mut a, &mut b);
        }
        let step = (n / RANGE_SAMPLE_AGENTS).max(1);
        out.push(
            (0..n)
                .step_by(step)
                .filter_map(|i| cell(i).map(|(x, y)| a[at(x, y)]))
                .collect(),
        );
    }
    Ok(out)
}

/// The turn of every sampled agent: its heading minus its frame's mean heading (x–y), in
/// degrees in (−180, 180], frame by frame.
fn turns_by_frame(r: &mut Reader, frames: std::ops::Range<u64>) -> Result<Vec<Vec<f32>>> {
    let picks = sample_frames(frames, RANGE_SAMPLE_FRAMES);
    Ok(per_agent(r, &picks, Quantity::Turn)?
        .into_iter()
        .map(|v| v.into_iter().filter(|t| t.is_finite()).collect())
        .collect())
}

/// A colour quantity measured per agent.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Quantity {
    Speed,
    Turn,
}

/// `q` of the same sampled agents (every `n / RANGE_SAMPLE_AGENTS`-th) in each of `frames`,
/// NaN where an agent has none (no finite velocity; for the turn, standing still), so that
/// the i-th value of two frames is one agent's.
fn per_agent(r: &mut Reader, frames: &[u64], q: Quantity) -> Result<Vec<Vec<f32>>> {
    let dim = r.header().dim as usize;
    let mut out = Vec::with_capacity(frames.len());
    let mut f = Frame::empty();
    for &k in frames {
        r.read_frame_into(k, &mut f)
            .map_err(|e| anyhow!("frame {k}: {e}"))?;
        f.drop_absent(dim);
        let n = f.agents(dim);
        let step = (n / RANGE_SAMPLE_AGENTS).max(1);
        let mean = match q {
            Quantity::Turn => crate::render::mean_heading(&f, dim, n),
            Quantity::Speed => 0.0,
        };
        let values = (0..n)
            .step_by(step)
            .map(|i| match q {
                Quantity::Speed => (0..dim)
                    .map(|a| f.vel[a * n + i] * f.vel[a * n + i])
                    .sum::<f32>()
                    .sqrt(),
                Quantity::Turn => {
                    let (vx, vy) = (f.vel[i], f.vel[n + i]);
                    if !(vx.is_finite() && vy.is_finite()) || (vx == 0.0 && vy == 0.0) {
                        return f32::NAN;
                    }
                    let t = vy.atan2(vx) - mean;
                    let t = t - std::f32::consts::TAU * (t / std::f32::consts::TAU).round();
                    t.to_degrees()
                }
            })
            .map(|v| if v.is_finite() { v } else { f32::NAN })
            .collect();
        out.push(values);
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
    let picks = sample_frames(frames, RANGE_SAMPLE_FRAMES);
    Ok(per_agent(r, &picks, Quantity::Speed)?
        .into_iter()
        .map(|v| v.into_iter().filter(|s| s.is_finite()).collect())
        .collect())
}

/// How steady `q` is from one recorded frame to the next, as the colour map shows it (values
/// clamped to `range`): the correlation, over the sampled agents, between each agent's value
/// in a frame and in the next, the median over pairs of frames sampled from `frames`. 1 where
/// the agents share one value (nothing flickers); near 0 where the quantity is noise redrawn
/// every frame, so that an agent's colour would flicker on the spot.
fn steadiness(
    r: &mut Reader,
    frames: std::ops::Range<u64>,
    q: Quantity,
    range: [f32; 2],
) -> Result<f32> {
    if frames.end < frames.start + 2 {
        return Ok(1.0);
    }
    let firsts = sample_frames(frames.start..frames.end - 1, RANGE_SAMPLE_FRAMES / 2);
    let picks: Vec<u64> = firsts.iter().flat_map(|&k| [k, k + 1]).collect();
    let values = per_agent(r, &picks, q)?;
    let mut by_pair: Vec<f32> = values
        .chunks(2)
        .filter_map(|pair| {
            let (a, b): (Vec<f64>, Vec<f64>) = pair[0]
                .iter()
                .zip(&pair[1])
                .filter(|(a, b)| a.is_finite() && b.is_finite())
                .map(|(&a, &b)| {
                    let clamp = |v: f32| v.clamp(range[0], range[1]) as f64;
                    (clamp(a), clamp(b))
                })
                .unzip();
            correlation(&a, &b)
        })
        .collect();
    if by_pair.is_empty() {
        return Ok(1.0);
    }
    by_pair.sort_by(|a, b| a.total_cmp(b));
    Ok(by_pair[by_pair.len() / 2])
}

/// Pearson's correlation of `a` and `b`; 1 where either holds one value (it cannot
/// flicker), None with fewer than two pairs.
fn correlation(a: &[f64], b: &[f64]) -> Option<f32> {
    if a.len() < 2 {
        return None;
    }
    let n = a.len() as f64;
    let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for (x, y) in a.iter().zip(b) {
        let (dx, dy) = (x - ma, y - mb);
        sab += dx * dy;
        saa += dx * dx;
        sbb += dy * dy;
    }
    let tiny = 1e-12 * (ma * ma + mb * mb).max(1e-30) * n;
    if saa <= tiny || sbb <= tiny {
        return Some(1.0);
    }
    Some((sab / (saa * sbb).sqrt()) as f32)
}

/// Below this [`steadiness`], a quantity is noise from frame to frame (the Vicsek model's
/// redrawn headings, a jammed crystal's jitter): coloured by it, agents flicker on the spot.
const STEADY: f32 = 0.8;
/// A quantity whose typical frame spans less of the map than this shows one colour.
const MIN_SPREAD: f32 = 0.05;

/// The colour quantity that carries the most over `frames` when no layer names one: speed
/// if a typical frame's agents span at least 40% of the map by it, else whichever of speed
/// and the turn (relative heading) spans more, of those that hold steady from one frame to
/// the next; where neither does (or neither spans more than a sliver of the map), local
/// density, a steady, spatial quantity, unless it spans under 40% of the map too (a flock
/// that fills its world evenly), when the choice is made on spread alone. (A flock at one
/// speed, or one heading, shows nothing by it; a quantity redrawn every frame shows noise.)
pub fn most_telling(
    r: &mut Reader,
    frames: std::ops::Range<u64>,
) -> Result<crate::look::ColorMode> {
    use crate::look::ColorMode;
    // Each quantity read once, its range and its spread from the same samples.
    let speeds = speeds_by_frame(r, frames.clone())?;
    let speed_range = speed_span(speeds.concat());
    let speed = spread(&speeds, speed_range);
    let speed_steady = steadiness(r, frames.clone(), Quantity::Speed, speed_range)? >= STEADY;
    if speed >= 0.4 && speed_steady {
        return Ok(ColorMode::Speed);
    }
    let turns = turns_by_frame(r, frames.clone())?;
    let turn_range = turn_span(&turns);
    let turn = spread(&turns, turn_range);
    let turn_steady = steadiness(r, frames.clone(), Quantity::Turn, turn_range)? >= STEADY;
    let mut best: Option<(ColorMode, f32)> = None;
    for (mode, span, steady) in [
        (ColorMode::Speed, speed, speed_steady),
        (ColorMode::RelativeHeading, turn, turn_steady),
    ] {
        if steady && span >= MIN_SPREAD && best.is_none_or(|(_, b)| span > b) {
            best = Some((mode, span));
        }
    }
    if let Some((mode, _)) = best {
        return Ok(mode);
    }
    // Neither holds steady: density where it tells something (2D, where its spread can be
    // measured here; 3D takes it as it is), else the one that spans more, flicker and all.
    if r.header().dim == 2 {
        let h = r.header();
        let range = crate::render::density::range_2d([h.world_size[0], h.world_size[1]], h.agents);
        if spread(&densities_2d(r, frames)?, range) < 0.4 {
            return Ok(if speed < 0.4 && turn > speed {
                ColorMode::RelativeHeading
            } else {
                ColorMode::Speed
            });
        }
    }
    Ok(ColorMode::Density)
}
