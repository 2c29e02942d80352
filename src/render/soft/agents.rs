//! The agents of a frame on the CPU as `Dot`s: each image of an agent that reaches the frame,
//! where it lies and its light (its colour and crowd share as shaders/splat.wgsl gives them,
//! worked out by `super::colour`), and the dots ordered by row for the strips that draw them
//! (`super::sprites`).

use super::colour::{Images, CELL};
use super::par;
use crate::bfs::Frame;
use crate::render::splat::SplatParams;

/// One image of an agent on screen: where (pixels, y down) and the light it adds (colour
/// times its crowd share, then the energy, which the crowd does not share).
#[derive(Clone, Copy, Debug)]
pub(super) struct Dot {
    pub x: f32,
    pub y: f32,
    pub light: [f32; 4],
}

/// The colour map as linear light, 256 texels (sRGB bytes decoded as a `Rgba8UnormSrgb`
/// texture reads them).
pub(super) fn linear_lut(bytes: &[u8]) -> Vec<[f32; 3]> {
    bytes
        .chunks_exact(4)
        .map(|t| [0, 1, 2].map(|k| crate::render::srgb_to_linear(t[k] as f32 / 255.0)))
        .collect()
}

/// As splat.wgsl's `copy_shift`.
#[inline(always)]
fn copy_shift(p: &SplatParams, copy: u32, pos: [f32; 2]) -> [f32; 2] {
    let [wx, wy] = p.world;
    match p.copies {
        9 => [
            ((copy % 3) as f32 - 1.0) * wx,
            ((copy / 3) as f32 - 1.0) * wy,
        ],
        4 => {
            let toward = |q: f32, w: f32| if q < w * 0.5 { w } else { -w };
            [
                if copy & 1 != 0 {
                    toward(pos[0], wx)
                } else {
                    0.0
                },
                if copy & 2 != 0 {
                    toward(pos[1], wy)
                } else {
                    0.0
                },
            ]
        }
        _ => [0.0, 0.0],
    }
}

/// World points → pixels (x right, y down; pixel centres at k + 0.5): splat.wgsl's
/// ((w − view_min) / view_size) · viewport, y flipped, with the frame's pixels per world unit
/// worked out once (a multiplication a point instead of a division; the same point within a
/// few units in the last place).
#[derive(Clone, Copy, Debug)]
struct Pixels {
    min: [f32; 2],
    scale: [f32; 2],
    height: f32,
}

impl Pixels {
    fn new(p: &SplatParams) -> Pixels {
        Pixels {
            min: p.view_min,
            scale: [
                p.viewport[0] / p.view_size[0],
                p.viewport[1] / p.view_size[1],
            ],
            height: p.viewport[1],
        }
    }

    #[inline(always)]
    fn of(&self, w: [f32; 2]) -> [f32; 2] {
        [
            (w[0] - self.min[0]) * self.scale[0],
            self.height - (w[1] - self.min[1]) * self.scale[1],
        ]
    }
}

/// Where in the world an image of an agent must lie for its pixel to fall within pixel bounds
/// (x from `lo[0]` to `hi[0]`, y down from `lo[1]` to `hi[1]`), two pixels and far more than
/// the rounding of [`Pixels::of`] wider each way: a test without its divisions that only turns
/// away images the exact test would (most of a wrapping world's copies lie far outside the
/// frame).
#[derive(Clone, Copy, Debug)]
struct Near {
    x: [f32; 2],
    y: [f32; 2],
}

impl Near {
    fn new(p: &SplatParams, lo: [f32; 2], hi: [f32; 2]) -> Near {
        let [vw, vh] = p.viewport;
        let [sx, sy] = p.view_size;
        let pad = |k: usize, s: f32, v: f32| 2.0 * s / v + (p.view_min[k].abs() + s.abs()) * 1e-5;
        let (px, py) = (pad(0, sx, vw), pad(1, sy, vh));
        let x = [
            p.view_min[0] + lo[0] / vw * sx - px,
            p.view_min[0] + hi[0] / vw * sx + px,
        ];
        let y = [
            p.view_min[1] + (1.0 - hi[1] / vh) * sy - py,
            p.view_min[1] + (1.0 - lo[1] / vh) * sy + py,
        ];
        let usable = [x[0], x[1], y[0], y[1]].iter().all(|v| v.is_finite())
            && p.view_size[0] > 0.0
            && p.view_size[1] > 0.0;
        if usable {
            Near { x, y }
        } else {
            let all = [f32::NEG_INFINITY, f32::INFINITY];
            Near { x: all, y: all }
        }
    }

    /// Whether world point (x, y) may fall within the bounds.
    #[inline(always)]
    fn may(&self, x: f32, y: f32) -> bool {
        x >= self.x[0] && x <= self.x[1] && y >= self.y[0] && y <= self.y[1]
    }
}

/// Every agent image whose sprite reaches the frame, with its light: the images the GPU's
/// splat deposits (its nearest pixel within the guard band of `guard` pixels).
pub(super) fn dots(
    p: &SplatParams,
    lut: &[[f32; 3]],
    values: Option<&[f32]>,
    frame: &Frame,
    dim: usize,
    guard: u32,
    bufs: &mut Buffers,
) {
    let n = frame.agents(dim);
    let cells = [
        (p.viewport[0] as u32).div_ceil(CELL as u32).max(1),
        (p.viewport[1] as u32).div_ceil(CELL as u32).max(1),
    ];
    let g = guard as f32;
    let (lo_x, hi_x) = (1.0 - g, p.viewport[0] + g - 2.0);
    let (lo_y, hi_y) = (1.0 - g, p.viewport[1] + g - 2.0);
    let chunks = par::split(n, 4096);
    let bounds = [lo_x, hi_x, lo_y, hi_y];
    if bufs.parts.len() < chunks.len() {
        bufs.parts.resize_with(chunks.len(), Vec::new);
        bufs.found.resize_with(chunks.len(), Found::default);
    }
    let mut job = DotsJob {
        p,
        lut,
        values,
        frame,
        n,
        counts: &[],
        cells,
        bounds,
    };
    // Each thread's agents' images, and their crowd counts (splat.wgsl's `cs_count`: one per
    // image inside the frame, in its 8×8 cell).
    let found = &mut bufs.found[..chunks.len()];
    let counting = p.stacking > 0.0;
    par::each(&chunks, found, |range, f| {
        // Filled while this thread holds it (as the dots below).
        let mut mine = std::mem::take(f);
        #[cfg(target_arch = "x86_64")]
        if super::avx2() {
            // SAFETY: the CPU has AVX2 (checked at run time by `avx2`).
            unsafe { find_avx2(&job, range, counting, &mut mine) };
        } else {
            find(&job, range, counting, &mut mine);
        }
        *f = mine;
    });
    let mut counts = Vec::new();
    if counting {
        counts = vec![0u32; cells[0] as usize * cells[1] as usize];
        for f in found.iter() {
            for (c, k) in counts.iter_mut().zip(&f.counts) {
                *c += k;
            }
        }
    }
    job.counts = &counts;
    let found = &bufs.found[..chunks.len()];
    let parts = &mut bufs.parts[..chunks.len()];
    let found: Vec<&Found> = found.iter().collect();
    par::each(&found, parts, |f, part| {
        // Pushed onto a vector held by this thread: the parts' headers share cache lines,
        // and each push writing its length there would bounce them between the threads.
        let mut out = std::mem::take(part);
        out.clear();
        #[cfg(target_arch = "x86_64")]
        if super::avx2() {
            // SAFETY: the CPU has AVX2 (checked at run time by `avx2`).
            unsafe { light_avx2(&job, f, &mut out) };
        } else {
            light(&job, f, &mut out);
        }
        *part = out;
    });
    bufs.dots.clear();
    for part in &bufs.parts[..chunks.len()] {
        bufs.dots.extend_from_slice(part);
    }
}

/// A frame's dots and the buffers they are made in, kept from frame to frame (a million
/// agents' dots are 24 MB: allocated afresh, each frame paid its page faults).
#[derive(Default)]
pub(super) struct Buffers {
    /// Each thread's agents' images.
    found: Vec<Found>,
    /// Each thread's dots.
    parts: Vec<Vec<Dot>>,
    /// The frame's dots, in agent order.
    pub dots: Vec<Dot>,
    /// The dots ordered by row ([`by_row`]).
    pub sorted: Vec<Dot>,
}

/// What [`find`] and [`light`] read.
struct DotsJob<'a> {
    p: &'a SplatParams,
    lut: &'a [[f32; 3]],
    values: Option<&'a [f32]>,
    frame: &'a Frame,
    n: usize,
    counts: &'a [u32],
    cells: [u32; 2],
    /// The nearest pixel's least and greatest x, then y.
    bounds: [f32; 4],
}

/// One thread's agents' images that reach the frame (each agent's wrap copies, in agent
/// order), and its counts of those inside the frame by crowd cell.
#[derive(Default)]
pub(super) struct Found {
    agent: Vec<u32>,
    x: Vec<f32>,
    y: Vec<f32>,
    counts: Vec<u32>,
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn find_avx2(job: &DotsJob, agents: std::ops::Range<usize>, counting: bool, f: &mut Found) {
    find(job, agents, counting, f)
}

/// The images of agents `agents` that reach the frame (their nearest pixel within the guard
/// band) into `f`, and, if `counting`, those inside the frame by crowd cell.
#[inline(always)]
fn find(job: &DotsJob, agents: std::ops::Range<usize>, counting: bool, f: &mut Found) {
    let DotsJob {
        p,
        frame,
        n,
        cells,
        bounds: [lo_x, hi_x, lo_y, hi_y],
        ..
    } = *job;
    let near = Near::new(p, [lo_x, lo_y], [hi_x + 1.0, hi_y + 1.0]);
    let pixels = Pixels::new(p);
    f.agent.clear();
    f.x.clear();
    f.y.clear();
    f.counts.clear();
    if counting {
        f.counts.resize(cells[0] as usize * cells[1] as usize, 0);
    }
    for i in agents {
        let pos = [frame.pos[i], frame.pos[n + i]];
        if pos[0].is_nan() || pos[1].is_nan() {
            continue;
        }
        for copy in 0..p.copies {
            let s = copy_shift(p, copy, pos);
            let at = [pos[0] + s[0], pos[1] + s[1]];
            if !near.may(at[0], at[1]) {
                continue;
            }
            let [x, y] = pixels.of(at);
            let (nx, ny) = (x.floor(), y.floor());
            if !(nx >= lo_x && nx <= hi_x && ny >= lo_y && ny <= hi_y) {
                continue;
            }
            f.agent.push(i as u32);
            f.x.push(x);
            f.y.push(y);
            // Inside the frame: within the guard band too (it reaches a pixel or more past
            // the frame's edges), so every image the crowd counts is found here.
            let inside = x >= 0.0 && y >= 0.0 && x <= p.viewport[0] && y <= p.viewport[1];
            if counting && inside {
                let cx = ((x / CELL).floor() as i64).clamp(0, cells[0] as i64 - 1);
                let cy = ((y / CELL).floor() as i64).clamp(0, cells[1] as i64 - 1);
                f.counts[cy as usize * cells[0] as usize + cx as usize] += 1;
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn light_avx2(job: &DotsJob, f: &Found, out: &mut Vec<Dot>) {
    light(job, f, out)
}

/// Images [`light`] takes through its stages at a time.
const BATCH: usize = 512;

/// The dots of the images `f`, onto `out`, a batch at a time: their colours' coordinates by
/// the map's mode, the colours, the crowd shares, and the dots — each image's arithmetic as
/// splat.wgsl's `colour_of` and `share_at` do it, in stages.
#[inline(always)]
fn light(job: &DotsJob, f: &Found, out: &mut Vec<Dot>) {
    out.reserve(f.agent.len());
    let mut im = Images::default();
    let intensity = job.p.intensity;
    for from in (0..f.agent.len()).step_by(BATCH) {
        let to = (from + BATCH).min(f.agent.len());
        let (agent, xs, ys) = (&f.agent[from..to], &f.x[from..to], &f.y[from..to]);
        let k = agent.len();
        im.resize(k);
        im.coordinates(job.p, job.values, job.frame, job.n, agent);
        im.colours(job.p, job.lut, k);
        im.shares(job.p, (job.counts, job.cells), xs, ys);
        let [r, g, b] = &im.rgb;
        let (r, g, b, share) = (&r[..k], &g[..k], &b[..k], &im.share[..k]);
        for j in 0..k {
            let s = share[j];
            out.push(Dot {
                x: xs[j],
                y: ys[j],
                light: [r[j] * s, g[j] * s, b[j] * s, intensity],
            });
        }
    }
}

/// `dots` ordered by the row of their nearest pixel into `out` (a counting sort: within a row,
/// in the order they came), and where each row's dots start: `starts[k]` for row k − `guard`, one
/// more entry at the end. Stamped in this order, consecutive sprites touch neighbouring rows
/// of the image, which stay in the cache.
pub(super) fn by_row(dots: &[Dot], h: usize, guard: usize, out: &mut Vec<Dot>) -> Vec<usize> {
    #[cfg(target_arch = "x86_64")]
    if super::avx2() {
        // SAFETY: the CPU has AVX2 (checked at run time by `avx2`).
        return unsafe { by_row_avx2(dots, h, guard, out) };
    }
    by_row_generic(dots, h, guard, out)
}

/// [`by_row`] where the CPU has AVX2 (its `floor` an instruction, not a call).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn by_row_avx2(dots: &[Dot], h: usize, guard: usize, out: &mut Vec<Dot>) -> Vec<usize> {
    by_row_generic(dots, h, guard, out)
}

#[inline(always)]
fn by_row_generic(dots: &[Dot], h: usize, guard: usize, out: &mut Vec<Dot>) -> Vec<usize> {
    let rows = h + 2 * guard;
    let key = |d: &Dot| ((d.y.floor() as i64 + guard as i64).clamp(0, rows as i64 - 1)) as usize;
    let mut starts = vec![0usize; rows + 1];
    for d in dots {
        starts[key(d) + 1] += 1;
    }
    for k in 0..rows {
        starts[k + 1] += starts[k];
    }
    let mut next = starts.clone();
    let none = Dot {
        x: 0.0,
        y: 0.0,
        light: [0.0; 4],
    };
    out.clear();
    out.resize(dots.len(), none);
    for d in dots {
        let k = key(d);
        out[next[k]] = *d;
        next[k] += 1;
    }
    starts
}

/// The dots of `sorted` (ordered by [`by_row`], `starts` its row starts) whose sprites reach
/// rows `rows` of the frame: those whose nearest row lies within `reach` of them.
pub(super) fn reaching<'a>(
    sorted: &'a [Dot],
    starts: &[usize],
    guard: usize,
    rows: &std::ops::Range<usize>,
    reach: usize,
) -> &'a [Dot] {
    let last = starts.len() - 1;
    let lo = (rows.start + guard).saturating_sub(reach).min(last);
    let hi = (rows.end + guard + reach).min(last);
    &sorted[starts[lo]..starts[hi]]
}
