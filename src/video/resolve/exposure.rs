//! The default look adapts to the recording: sprite size from how far apart the agents are on
//! screen, exposure from how much light they pile up, both measured once on frames sampled
//! over the whole clip (one value per render: no flicker).
//!
//! The model: a sprite's core is a Gaussian of peak 1 and radius `core_px`, with a faint halo
//! out to four core radii; together they carry about 4.8·core² pixel-units of light, and
//! trails multiply what each agent leaves by up to 1/(1 − trails). Each agent sees the larger
//! of two levels: its own peak (1, or more where a slow agent stacks its trail on itself) and
//! the mean light per pixel of its neighbourhood (agents binned into screen cells of ~8 px).
//! Exposure brings the 80th percentile of that, over agents, to a level ACES maps to a bright
//! but unclipped value; sparse flocks get more exposure, dense ones less.

use anyhow::{anyhow, Result};

use crate::bfs::{Frame, Reader};
use crate::render::{Fit, World};

/// Frames sampled for the measurement (evenly spaced over the clip).
const SAMPLE_FRAMES: u64 = 8;
/// Agents per sampled frame (evenly strided).
const SAMPLE_AGENTS: usize = 50_000;
/// Core radius as a fraction of the mean on-screen spacing between agents.
const CORE_PER_SPACING: f32 = 0.15;
/// Core radius bounds in output pixels at 1080p (scaled with the height).
const CORE_MIN_PX: f32 = 1.4;
const CORE_MAX_PX: f32 = 4.5;
/// HDR level the typical agent's light is exposed to (ACES maps 1.0 to ~0.8).
const TARGET: f32 = 0.9;
/// Exposure bounds.
const EXPOSURE_MIN: f32 = 0.08;
const EXPOSURE_MAX: f32 = 2.5;
/// Ink: the typical agent's ink density (opacity 1 − e^(−this)), and its exposure's bounds.
const INK_TARGET: f32 = 1.6;
const INK_EXPOSURE_MIN: f32 = 0.3;
const INK_EXPOSURE_MAX: f32 = 6.0;

/// What the default look measured.
#[derive(Clone, Copy, Debug)]
pub struct Measured {
    /// Sprite core radius, pixels at 1080p (the unit of `--point-size`).
    pub point_size: f32,
    pub exposure: f32,
}

/// Default trails: the light an agent leaves halves in this many seconds at least …
pub const TRAIL_HALF_LIFE_S: f32 = 0.15;
/// … or in the time the median agent takes to cross this many pixels (at 1080p, scaled with
/// the height), whichever is longer: slow agents, moving under a pixel a frame, leave trails
/// as long on screen as fast ones, and do not shimmer …
const TRAIL_PX: f32 = 10.0;
/// … but at most in this many seconds.
const TRAIL_MAX_HALF_LIFE_S: f32 = 0.5;

/// The default trails for `clip` of `r` in a `width`×`height` frame at `fps`: the fraction of
/// the light kept from one frame to the next (see [`TRAIL_PX`]).
pub fn default_trails(
    r: &mut Reader,
    clip: std::ops::Range<u64>,
    world: &World,
    (width, height, fit): (u32, u32, Fit),
    fps: u32,
    min_half_life_s: f32,
) -> Result<f32> {
    let s = px_per_unit(world, width, height, fit);
    // The sampled agents' speeds (the colour range's samples), as pixels a recorded frame.
    let mut steps: Vec<f32> = super::ranges::speeds_by_frame(r, clip)?
        .concat()
        .into_iter()
        .map(|v| v * world.frame_dt * s)
        .filter(|px| px.is_finite())
        .collect();
    steps.sort_by(|a, b| a.total_cmp(b));
    let fps = fps.max(1) as f32;
    let mut frames = min_half_life_s * fps;
    if let Some(&median) = steps.get(steps.len() / 2) {
        let want = TRAIL_PX * height as f32 / 1080.0 / median.max(1e-6);
        frames = frames.max(want.min(TRAIL_MAX_HALF_LIFE_S * fps));
    }
    Ok(0.5f32.powf(1.0 / frames))
}

/// Screen pixels per world unit, as the 2D view (or, for 3D, roughly the camera) fits the
/// world into a `width`×`height` frame.
fn px_per_unit(world: &World, width: u32, height: u32, fit: Fit) -> f32 {
    let sx = width as f32 / world.size[0].max(1e-6);
    let sy = height as f32 / world.size[1].max(1e-6);
    let s = match fit {
        Fit::Letterbox | Fit::Tile => sx.min(sy),
        Fit::Cover => sx.max(sy),
    };
    if world.dim == 3 {
        // A perspective camera frames the whole box from outside it: about 0.6 of the 2D fit.
        s * 0.6
    } else {
        s
    }
}

/// Squares, pixels at 1080p (scaled with the height), in which [`cover`] counts the world's
/// area that holds agents: about the reach of bloom's first levels.
const COVER_CELL_PX: f32 = 32.0;

/// The share of the world's area on screen that holds agents, counted in squares of
/// [`COVER_CELL_PX`] (its x–y projection in 3D), the median over frames sampled from `clip`.
/// A flock that fills its world evenly (a jammed crystal, a disordered gas) covers nearly all
/// of it: it has no highlights for bloom to lift, and bloom would only light its gaps.
pub fn cover(
    r: &mut Reader,
    clip: std::ops::Range<u64>,
    world: &World,
    (width, height, fit): (u32, u32, Fit),
) -> Result<f32> {
    let dim = r.header().dim as usize;
    let s = px_per_unit(world, width, height, fit);
    let cell = COVER_CELL_PX * height as f32 / 1080.0 / s.max(1e-12);
    let [ww, wh] = world.size;
    let (gw, gh) = (
        ((ww / cell).ceil() as usize).clamp(1, 4096),
        ((wh / cell).ceil() as usize).clamp(1, 4096),
    );
    let mut grid = vec![false; gw * gh];
    let mut shares = Vec::new();
    let mut f = Frame::empty();
    for k in super::ranges::sample_frames(clip, SAMPLE_FRAMES) {
        r.read_frame_into(k, &mut f)
            .map_err(|e| anyhow!("frame {k}: {e}"))?;
        f.drop_absent(dim);
        let n = f.agents(dim);
        grid.iter_mut().for_each(|c| *c = false);
        for i in (0..n).step_by((n / SAMPLE_AGENTS).max(1)) {
            let (x, y) = (f.pos[i] / ww * gw as f32, f.pos[n + i] / wh * gh as f32);
            if x >= 0.0 && y >= 0.0 && x < gw as f32 && y < gh as f32 {
                grid[y as usize * gw + x as usize] = true;
            }
        }
        shares.push(grid.iter().filter(|&&c| c).count() as f32 / grid.len() as f32);
    }
    if shares.is_empty() {
        return Ok(0.0);
    }
    shares.sort_by(|a, b| a.total_cmp(b));
    Ok(shares[shares.len() / 2])
}

/// The default bloom for a flock that covers `cover` of its world: full strength up to 85% of
/// it, falling to none at 95% (see [`cover`]). Flocks with gaps, bands and clusters keep their
/// glow; an evenly filled world does not turn into a lit haze.
pub fn default_bloom(full: f32, cover: f32) -> f32 {
    full * ((0.95 - cover) / 0.1).clamp(0.0, 1.0)
}

/// The frame the measurement is for.
#[derive(Clone, Copy, Debug)]
pub struct Framing {
    pub width: u32,
    pub height: u32,
    pub fit: Fit,
    pub trails: f32,
    pub fps: u32,
    /// A crowd's sprites share their light (`--stacking`): the levels a crowd reaches.
    pub stacking: f32,
    /// Ink: the exposure sets how dark an agent's ink is, not how bright its light.
    pub ink: bool,
}

/// Measures `clip` of `r`: the sprite size (when `point_size` is `None`) and the exposure.
pub fn measure(
    r: &mut Reader,
    clip: std::ops::Range<u64>,
    world: &World,
    frame: Framing,
    point_size: Option<f32>,
) -> Result<Measured> {
    let Framing {
        width,
        height,
        fit,
        trails,
        fps,
        stacking,
        ink,
    } = frame;
    let dim = r.header().dim as usize;
    let s = px_per_unit(world, width, height, fit);
    let hscale = height as f32 / 1080.0;
    let picks = super::ranges::sample_frames(clip.clone(), SAMPLE_FRAMES);
    // Agents on screen: the world's area in pixels, clipped to the frame.
    let area_px = (world.size[0] * s).min(width as f32) * (world.size[1] * s).min(height as f32);
    let n = r.header().agents.max(1) as f32;
    let spacing = (area_px / n).sqrt();
    let point_size = point_size.unwrap_or_else(|| {
        (CORE_PER_SPACING * spacing).clamp(CORE_MIN_PX * hscale, CORE_MAX_PX * hscale) / hscale
    });
    let core_px = (point_size * hscale).max(0.7);
    // Light of one sprite (core π/2·c², halo ≈ 3.19·c², see agents.wgsl's fs_main), and
    // the cells its neighbourhood is measured in.
    let sprite_light = 4.76 * core_px * core_px;
    let trail_gain = 1.0 / (1.0 - trails.clamp(0.0, 0.99));
    let cell = (4.0 * core_px).max(8.0);
    let (gw, gh) = (
        ((width as f32 / cell).ceil() as usize).max(1),
        ((height as f32 / cell).ceil() as usize).max(1),
    );
    let mut grid = vec![0u32; gw * gh];
    let mut levels = Vec::new();
    let mut f = Frame::empty();
    // The frame's centre maps to the world's centre (as the 2D view does without --follow).
    let (ox, oy) = (
        width as f32 / 2.0 - world.size[0] * s / 2.0,
        height as f32 / 2.0 - world.size[1] * s / 2.0,
    );
    for k in picks {
        r.read_frame_into(k, &mut f)
            .map_err(|e| anyhow!("frame {k}: {e}"))?;
        f.drop_absent(dim);
        let na = f.agents(dim);
        let stride = (na / SAMPLE_AGENTS).max(1);
        grid.iter_mut().for_each(|c| *c = 0);
        let cell_of = |i: usize| -> Option<usize> {
            let x = f.pos[i] * s + ox;
            let y = f.pos[na + i] * s + oy;
            if !(x >= 0.0 && y >= 0.0 && x < width as f32 && y < height as f32) {
                return None;
            }
            Some((y / cell) as usize * gw + (x / cell) as usize)
        };
        for i in (0..na).step_by(stride) {
            if let Some(c) = cell_of(i) {
                grid[c] += stride as u32;
            }
        }
        for i in (0..na).step_by(stride) {
            let Some(c) = cell_of(i) else { continue };
            // A crowd's sprites share their light: its level is one sprite's overlap times
            // its share (see agents.wgsl's `crowd_share`).
            let overlap = (grid[c] as f32 * sprite_light / (cell * cell)).max(1.0);
            let area = overlap.powf(1.0 - stacking) * trail_gain;
            // Trails: an agent moving less than a core per frame stacks its own light.
            let v2: f32 = (0..dim)
                .map(|a| f.vel[a * na + i] * f.vel[a * na + i])
                .sum();
            let step_px = v2.sqrt() * s / fps.max(1) as f32;
            let peak = (2.0 * core_px / step_px.max(1e-3)).clamp(1.0, trail_gain);
            let level = area.max(peak);
            if level.is_finite() {
                levels.push(level);
            }
        }
    }
    Ok(Measured {
        point_size,
        exposure: exposure_for(levels, ink),
    })
}

/// The exposure that brings the median agent's light `levels` (of the sampled agents) to the
/// target, partly: a dense flock should still read denser than a sparse one. In ink, the
/// typical agent's ink reaches an opacity of 1 − e^(−INK_TARGET) (about 0.8). 1 for none.
fn exposure_for(mut levels: Vec<f32>, ink: bool) -> f32 {
    if levels.is_empty() {
        return 1.0;
    }
    levels.sort_by(|a, b| a.total_cmp(b));
    let p80 = levels[((levels.len() - 1) as f64 * 0.5).round() as usize];
    if ink {
        (INK_TARGET / p80.powf(0.7)).clamp(INK_EXPOSURE_MIN, INK_EXPOSURE_MAX)
    } else {
        (TARGET / p80.powf(0.7)).clamp(EXPOSURE_MIN, EXPOSURE_MAX)
    }
}
