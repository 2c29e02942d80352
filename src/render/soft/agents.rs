//! The agents of a frame on the CPU as `Dot`s: each image of an agent that reaches the frame,
//! where it lies and its light (its colour and crowd share as shaders/splat.wgsl gives them),
//! and the dots ordered by row for the strips that draw them (`super::sprites`).

use super::par;
use crate::bfs::Frame;
use crate::render::splat::SplatParams;

const TAU: f32 = std::f32::consts::TAU;
/// Frame pixels per crowd cell, each way.
const CELL: f32 = crate::render::agents::CROWD_CELL as f32;

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

/// The angle of (x, y) from the x axis, as `atan2`, within 10⁻⁵ radian (a polynomial in the
/// octant's ratio, reflected): a colour's heading is one of 256 texels, and libm's `atan2f`
/// cost a quarter of a million-agent frame. The same arithmetic on every machine.
#[inline(always)]
pub(super) fn heading_of(x: f32, y: f32) -> f32 {
    const C: [f32; 6] = [
        0.999_977_26,
        -0.332_623_47,
        0.193_543_46,
        -0.116_432_87,
        0.052_653_32,
        -0.011_721_2,
    ];
    let (ax, ay) = (x.abs(), y.abs());
    let (lo, hi) = (ax.min(ay), ax.max(ay));
    let a = if hi > 0.0 { lo / hi } else { 0.0 };
    let s = a * a;
    let p = C[0] + s * (C[1] + s * (C[2] + s * (C[3] + s * (C[4] + s * C[5]))));
    let mut r = a * p;
    if ay > ax {
        r = std::f32::consts::FRAC_PI_2 - r;
    }
    if x < 0.0 {
        r = std::f32::consts::PI - r;
    }
    if y < 0.0 {
        -r
    } else {
        r
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

/// The colour map's colour at coordinate `t` (0..1), as splat.wgsl's `colour_of` samples it
/// (at the texel coordinate between texel centres, clamped at the ends).
#[inline(always)]
fn map_colour(lut: &[[f32; 3]], t: f32) -> [f32; 3] {
    let x = if t.is_nan() {
        0.0
    } else {
        t.clamp(0.0, 1.0) * 255.0
    };
    let i = (x.floor() as usize).min(lut.len() - 1);
    let j = (i + 1).min(lut.len() - 1);
    let f = x - i as f32;
    let (a, b) = (lut[i], lut[j]);
    [
        a[0] + (b[0] - a[0]) * f,
        a[1] + (b[1] - a[1]) * f,
        a[2] + (b[2] - a[2]) * f,
    ]
}

/// x^−s for x ≥ 1 and s ≥ 0, within 4·10⁻⁶ of `powf` (a crowd's share is a colour's factor):
/// log₂ x from the exponent and an odd series in (m − 1)/(m + 1) of the mantissa m (within
/// √½..√2), then 2 to the power of −s log₂ x from its integer part and a series of the
/// fraction. Inlined where the dots are made (`powf` was a call per dot, a tenth of a
/// million-agent frame), and the same arithmetic on every machine.
#[inline(always)]
pub(super) fn pow_neg(x: f32, s: f32) -> f32 {
    const LN2: f32 = std::f32::consts::LN_2;
    let bits = x.to_bits();
    let mut e = ((bits >> 23) & 0xff) as i32 - 127;
    let mut m = f32::from_bits((bits & 0x007f_ffff) | 0x3f80_0000);
    if m > std::f32::consts::SQRT_2 {
        m *= 0.5;
        e += 1;
    }
    let z = (m - 1.0) / (m + 1.0);
    let z2 = z * z;
    // 2 artanh z / ln 2 = log₂ m.
    let c = [
        2.0 / LN2,
        2.0 / (3.0 * LN2),
        2.0 / (5.0 * LN2),
        2.0 / (7.0 * LN2),
        2.0 / (9.0 * LN2),
    ];
    let series = c[0] + z2 * (c[1] + z2 * (c[2] + z2 * (c[3] + z2 * c[4])));
    let y = (-s * (z * series + e as f32)).max(-126.0);
    let k = y.floor();
    let t = (y - k) * LN2;
    // e^t for t in 0..ln 2, to t⁷/7!.
    let mut q = 1.0 / 5040.0;
    for c in [
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
        1.0,
        1.0,
    ] {
        q = q * t + c;
    }
    q * f32::from_bits(((k as i32 + 127) as u32) << 23)
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

/// What [`light`] works out for a batch of images, an array a quantity, so that the
/// colours and the crowd shares are each a loop the compiler runs eight images at a time.
#[derive(Default)]
struct Images {
    /// The colour map's coordinate; then the weight along x between the crowd cells about.
    t: Vec<f32>,
    rgb: [Vec<f32>; 3],
    /// The weight along y between the crowd cells about; then the crowd share.
    share: Vec<f32>,
    /// What a stage gathers for each image: its agent's velocity, its four crowd cells.
    gathered: [Vec<f32>; 4],
}

/// The dots of the images `f`, onto `out`, a batch at a time: their colours' coordinates by
/// the map's mode, the colours, the crowd shares, and the dots — each image's arithmetic as
/// splat.wgsl's `colour_of` and `share_at` do it, in stages.
#[inline(always)]
fn light(job: &DotsJob, f: &Found, out: &mut Vec<Dot>) {
    let DotsJob {
        p,
        lut,
        values,
        frame,
        n,
        counts,
        cells,
        ..
    } = *job;
    out.reserve(f.agent.len());
    let mut im = Images::default();
    let value = |i: usize| values.and_then(|v| v.get(i)).copied().unwrap_or(0.0);
    let (vx, vy) = (&frame.vel[..n], &frame.vel[n..2 * n]);
    let fixed = p.mode == 3 && p.fixed[3] > 0.5;
    let per_span = 1.0 / (p.range[1] - p.range[0]).max(1e-20);
    for from in (0..f.agent.len()).step_by(BATCH) {
        let to = (from + BATCH).min(f.agent.len());
        let (agent, xs, ys) = (&f.agent[from..to], &f.x[from..to], &f.y[from..to]);
        let k = agent.len();
        im.t.resize(k, 0.0);
        im.share.resize(k, 0.0);
        for c in &mut im.rgb {
            c.resize(k, 0.0);
        }
        // Each stage in two loops: one that gathers what the images read (scalar loads),
        // one of arithmetic alone over equal slices, which the compiler runs eight at a time.
        let [ga, gb, gc, gd] = &mut im.gathered;
        for g in [&mut *ga, &mut *gb, &mut *gc, &mut *gd] {
            g.resize(k, 0.0);
        }
        let (ga, gb, gc, gd) = (&mut ga[..k], &mut gb[..k], &mut gc[..k], &mut gd[..k]);
        let t = &mut im.t[..k];
        // The map's coordinate by the mode.
        match p.mode {
            _ if fixed => {}
            0 | 1 | 4 => {
                for ((x, y), &i) in ga.iter_mut().zip(gb.iter_mut()).zip(agent) {
                    (*x, *y) = (vx[i as usize], vy[i as usize]);
                }
                let (ga, gb) = (&ga[..], &gb[..k]);
                let t = &mut t[..k];
                match p.mode {
                    0 => {
                        for j in 0..k {
                            let (x, y) = (ga[j], gb[j]);
                            t[j] = ((x * x + y * y).sqrt() - p.range[0]) * per_span;
                        }
                    }
                    1 => {
                        for j in 0..k {
                            t[j] = heading_of(ga[j], gb[j]) * (1.0 / TAU) + 0.5;
                        }
                    }
                    _ => {
                        for j in 0..k {
                            let turn = heading_of(ga[j], gb[j]) - p.mean_heading;
                            let deg =
                                (turn - TAU * (turn * (1.0 / TAU)).round_ties_even()) * 57.295_78;
                            t[j] = (deg - p.range[0]) * per_span;
                        }
                    }
                }
            }
            2 => {
                for (t, &i) in t.iter_mut().zip(agent) {
                    *t = (value(i as usize) - p.range[0]) * per_span;
                }
            }
            5 => {
                for (t, &i) in t.iter_mut().zip(agent) {
                    *t = value(i as usize);
                }
            }
            _ => t.fill(0.75),
        }
        let [r, g, b] = &mut im.rgb;
        let (r, g, b) = (&mut r[..k], &mut g[..k], &mut b[..k]);
        if fixed {
            r.fill(p.fixed[0] * p.intensity);
            g.fill(p.fixed[1] * p.intensity);
            b.fill(p.fixed[2] * p.intensity);
        } else {
            for j in 0..k {
                let c = map_colour(lut, t[j]);
                r[j] = c[0] * p.intensity;
                g[j] = c[1] * p.intensity;
                b[j] = c[2] * p.intensity;
            }
        }
        let share = &mut im.share[..k];
        if p.stacking <= 0.0 {
            share.fill(1.0);
        } else {
            // splat.wgsl's `share_at`: the four cells' counts about each image gathered, with
            // the weights (in `t`), then the bilinear count and its power.
            let (w, h) = (cells[0] as i64, cells[1] as i64);
            let count = |x: i64, y: i64| {
                counts[(y.clamp(0, h - 1) * w + x.clamp(0, w - 1)) as usize] as f32
            };
            let (xs, ys) = (&xs[..k], &ys[..k]);
            let ty = &mut im.share[..k];
            for j in 0..k {
                let fx = xs[j] / CELL - 0.5;
                let fy = ys[j] / CELL - 0.5;
                let (bx, by) = (fx.floor(), fy.floor());
                (t[j], ty[j]) = (fx - bx, fy - by);
                let (x0, y0) = (bx as i64, by as i64);
                (ga[j], gb[j]) = (count(x0, y0), count(x0 + 1, y0));
                (gc[j], gd[j]) = (count(x0, y0 + 1), count(x0 + 1, y0 + 1));
            }
            let (tx, ga, gb, gc, gd) = (&t[..k], &ga[..k], &gb[..k], &gc[..k], &gd[..k]);
            for j in 0..k {
                let top = ga[j] + (gb[j] - ga[j]) * tx[j];
                let bottom = gc[j] + (gd[j] - gc[j]) * tx[j];
                let c = top + (bottom - top) * ty[j];
                ty[j] = pow_neg((c * p.stack_area).max(1.0), p.stacking);
            }
        }
        let share = &im.share[..k];
        for j in 0..k {
            let s = share[j];
            out.push(Dot {
                x: xs[j],
                y: ys[j],
                light: [r[j] * s, g[j] * s, b[j] * s, p.intensity],
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A crowd's share is `powf`'s within 4·10⁻⁶, from a lone agent to far more than any frame
    /// holds, at the stacking exponents a look may give.
    #[test]
    fn the_share_is_powfs() {
        let mut worst = 0.0f64;
        for i in 0..=100_000 {
            let x = (i as f64 / 100_000.0 * 30.0).exp2() as f32;
            for s in [0.0f32, 0.1, 0.35, 0.5, 0.75, 1.0, 2.0] {
                let want = (x as f64).powf(-(s as f64));
                let got = pow_neg(x, s) as f64;
                worst = worst.max((got - want).abs() / want);
            }
        }
        assert!(worst < 4e-6, "worst {worst}");
        assert_eq!(pow_neg(1.0, 0.5), 1.0);
    }

    /// The heading is `atan2`'s within 10⁻⁵ radian all round the circle, the axes included.
    #[test]
    fn the_heading_is_atan2s() {
        let mut worst = 0.0f64;
        for i in 0..200_000 {
            let t = i as f64 / 200_000.0 * std::f64::consts::TAU - std::f64::consts::PI;
            for r in [1e-3f64, 0.7, 3.0, 250.0] {
                let (x, y) = ((r * t.cos()) as f32, (r * t.sin()) as f32);
                let want = (y as f64).atan2(x as f64);
                let got = heading_of(x, y) as f64;
                let mut d = (got - want).abs();
                // ±π are the same heading.
                d = d.min((d - std::f64::consts::TAU).abs());
                worst = worst.max(d);
            }
        }
        for (x, y) in [
            (1.0f32, 0.0f32),
            (0.0, 1.0),
            (-1.0, 0.0),
            (0.0, -1.0),
            (1.0, 1.0),
        ] {
            let d = (heading_of(x, y) as f64 - (y as f64).atan2(x as f64)).abs();
            worst = worst.max(d);
        }
        assert!(worst < 1e-5, "worst {worst}");
    }
}
