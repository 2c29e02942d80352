//! An agent image's colour and crowd share on the CPU, as shaders/splat.wgsl's `colour_of` and
//! `share_at` give them, for a batch of images at a time (`super::agents` finds the images and
//! makes their dots): each stage a loop the compiler runs eight images at a time, with the
//! heading and the share's power as series of our own, the same arithmetic on every machine.

use crate::bfs::Frame;
use crate::render::splat::SplatParams;

const TAU: f32 = std::f32::consts::TAU;
/// Frame pixels per crowd cell, each way.
pub(super) const CELL: f32 = crate::render::agents::CROWD_CELL as f32;

/// What the dots' `light` (`super::agents`) works out for a batch of images, an array a
/// quantity, so that the colours and the crowd shares are each a loop the compiler runs eight
/// images at a time.
/// Each stage is two loops: one that gathers what the images read (scalar loads), one of
/// arithmetic alone over equal slices.
#[derive(Default)]
pub(super) struct Images {
    /// The colour map's coordinate.
    t: Vec<f32>,
    /// The colour times the light's intensity, a channel an array.
    pub rgb: [Vec<f32>; 3],
    /// The crowd share.
    pub share: Vec<f32>,
    /// The weights along x and y between the four crowd cells about the image.
    weights: [Vec<f32>; 2],
    /// What a stage gathers for each image: its agent's velocity, its four crowd cells.
    gathered: [Vec<f32>; 4],
}

impl Images {
    /// Room for `k` images.
    pub fn resize(&mut self, k: usize) {
        let [a, b, c] = &mut self.rgb;
        let [d, e] = &mut self.weights;
        let [f, g, h, i] = &mut self.gathered;
        for v in [&mut self.t, &mut self.share, a, b, c, d, e, f, g, h, i] {
            v.resize(k, 0.0);
        }
    }

    /// The colour map's coordinate of each image by the map's mode (splat.wgsl's
    /// `colour_of`); nothing for a fixed colour.
    #[inline(always)]
    pub fn coordinates(
        &mut self,
        p: &SplatParams,
        values: Option<&[f32]>,
        frame: &Frame,
        n: usize,
        agent: &[u32],
    ) {
        let k = agent.len();
        let value = |i: u32| {
            values
                .and_then(|v| v.get(i as usize))
                .copied()
                .unwrap_or(0.0)
        };
        let (vx, vy) = (&frame.vel[..n], &frame.vel[n..2 * n]);
        let per_span = 1.0 / (p.range[1] - p.range[0]).max(1e-20);
        let t = &mut self.t[..k];
        let [ga, gb, ..] = &mut self.gathered;
        let (ga, gb) = (&mut ga[..k], &mut gb[..k]);
        match p.mode {
            _ if fixed(p) => {}
            0 | 1 | 4 => {
                for ((x, y), &i) in ga.iter_mut().zip(gb.iter_mut()).zip(agent) {
                    (*x, *y) = (vx[i as usize], vy[i as usize]);
                }
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
                    *t = (value(i) - p.range[0]) * per_span;
                }
            }
            5 => {
                for (t, &i) in t.iter_mut().zip(agent) {
                    *t = value(i);
                }
            }
            _ => t.fill(0.75),
        }
    }

    /// The first `k` images' colours, times the light's intensity.
    #[inline(always)]
    pub fn colours(&mut self, p: &SplatParams, lut: &[[f32; 3]], k: usize) {
        let [r, g, b] = &mut self.rgb;
        let (r, g, b) = (&mut r[..k], &mut g[..k], &mut b[..k]);
        if fixed(p) {
            r.fill(p.fixed[0] * p.intensity);
            g.fill(p.fixed[1] * p.intensity);
            b.fill(p.fixed[2] * p.intensity);
            return;
        }
        let t = &self.t[..k];
        for j in 0..k {
            let c = map_colour(lut, t[j]);
            r[j] = c[0] * p.intensity;
            g[j] = c[1] * p.intensity;
            b[j] = c[2] * p.intensity;
        }
    }

    /// The crowd share of each image at (`xs`, `ys`) (splat.wgsl's `share_at`): the four
    /// cells' counts about it gathered with its weights, then the bilinear count's power.
    #[inline(always)]
    /// `counts`: the crowd grid's, `cells` cells wide and high.
    pub fn shares(
        &mut self,
        p: &SplatParams,
        (counts, cells): (&[u32], [u32; 2]),
        xs: &[f32],
        ys: &[f32],
    ) {
        let k = xs.len();
        let share = &mut self.share[..k];
        if p.stacking <= 0.0 {
            share.fill(1.0);
            return;
        }
        let (w, h) = (cells[0] as i64, cells[1] as i64);
        let count =
            |x: i64, y: i64| counts[(y.clamp(0, h - 1) * w + x.clamp(0, w - 1)) as usize] as f32;
        let ys = &ys[..k];
        let [tx, ty] = &mut self.weights;
        let (tx, ty) = (&mut tx[..k], &mut ty[..k]);
        let [ga, gb, gc, gd] = &mut self.gathered;
        let (ga, gb, gc, gd) = (&mut ga[..k], &mut gb[..k], &mut gc[..k], &mut gd[..k]);
        for j in 0..k {
            let fx = xs[j] / CELL - 0.5;
            let fy = ys[j] / CELL - 0.5;
            let (bx, by) = (fx.floor(), fy.floor());
            (tx[j], ty[j]) = (fx - bx, fy - by);
            let (x0, y0) = (bx as i64, by as i64);
            (ga[j], gb[j]) = (count(x0, y0), count(x0 + 1, y0));
            (gc[j], gd[j]) = (count(x0, y0 + 1), count(x0 + 1, y0 + 1));
        }
        for j in 0..k {
            let top = ga[j] + (gb[j] - ga[j]) * tx[j];
            let bottom = gc[j] + (gd[j] - gc[j]) * tx[j];
            let c = top + (bottom - top) * ty[j];
            share[j] = pow_neg((c * p.stack_area).max(1.0), p.stacking);
        }
    }
}

/// Whether the look gives every agent one fixed colour.
fn fixed(p: &SplatParams) -> bool {
    p.mode == 3 && p.fixed[3] > 0.5
}

/// The angle of (x, y) from the x axis, as `atan2`, within 10⁻⁵ radian (a polynomial in the
/// octant's ratio, reflected): a colour's heading is one of 256 texels, and libm's `atan2f`
/// cost a quarter of a million-agent frame. The same arithmetic on every machine.
#[inline(always)]
fn heading_of(x: f32, y: f32) -> f32 {
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
fn pow_neg(x: f32, s: f32) -> f32 {
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
