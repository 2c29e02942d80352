//! `forge export --color`: each agent's colour in every frame as `forge render` draws it (the
//! look's quantity, colour map and range, resolved from the recording as the renderer resolves
//! them), for USD's `primvars:displayColor`.
//!
//! The renderer looks a value t (0..1) up in a 256-texel sRGB map with linear filtering at
//! `(t·255 + 0.5) / 256`: the texels either side of `t·255`, mixed in linear light. So does
//! this. The 3D renderer's brightening of climbing agents, the fog and the crowd's share are
//! light, not colour, and are left out.

use std::path::Path;

use anyhow::{bail, Result};

use crate::bfs::{Frame, Reader};
use crate::look::{ColorMode, Look};
use crate::render::colormap;
use crate::render::srgb_to_linear as linear;
use crate::video::resolve::{self, Layers};

/// The colours of a look, ready per frame.
pub(super) struct Colours {
    mode: ColorMode,
    /// The map's texels in linear light.
    lut: Vec<[f32; 3]>,
    range: [f32; 2],
    /// `fixed:#rrggbb`, linear.
    fixed: Option<[f32; 3]>,
}

impl Colours {
    /// The look `flags` give over the recording's own (as `forge render` with those flags).
    pub(super) fn resolve(flags: &Look, r: &mut Reader, input: &Path) -> Result<Colours> {
        let resolved = resolve::resolve(&Layers::flags(flags.clone()), r, input)?;
        let s = resolved.settings;
        if s.color == ColorMode::Density {
            bail!(
                "--color density: density is counted by the renderer, on the GPU; export \
                 speed, heading, relative-heading, species or fixed colours"
            );
        }
        let bytes = match (&s.palette, s.color) {
            (Some(p), ColorMode::Species) => colormap::palette(p),
            _ => colormap::bake(s.colormap, s.colormap_floor),
        };
        let lut = bytes
            .chunks_exact(4)
            .map(|c| [c[0], c[1], c[2]].map(|v| linear(v as f32 / 255.0)))
            .collect();
        Ok(Colours {
            mode: s.color,
            lut,
            range: s.range.unwrap_or([0.0, 1.0]),
            fixed: s.fixed.map(|c| c.map(linear)),
        })
    }

    /// Each agent's colour (linear RGB) in `frame` of `n` agents; `species`: each agent's
    /// species index (the header's).
    pub(super) fn of_frame(
        &self,
        frame: &Frame,
        dim: usize,
        n: usize,
        species: &[u8],
    ) -> Vec<[f32; 3]> {
        let mean = if self.mode == ColorMode::RelativeHeading {
            crate::render::mean_heading(frame, dim, n)
        } else {
            0.0
        };
        let span = (self.range[1] - self.range[0]).max(1e-20);
        (0..n)
            .map(|i| {
                let v: [f32; 3] =
                    std::array::from_fn(|k| if k < dim { frame.vel[k * n + i] } else { 0.0 });
                let heading = v[1].atan2(v[0]);
                let t = match self.mode {
                    ColorMode::Speed => {
                        let s = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
                        (s - self.range[0]) / span
                    }
                    ColorMode::Heading => heading / std::f32::consts::TAU + 0.5,
                    ColorMode::RelativeHeading => {
                        let turn = heading - mean;
                        let tau = std::f32::consts::TAU;
                        let deg = (turn - tau * (turn / tau).round()).to_degrees();
                        (deg - self.range[0]) / span
                    }
                    ColorMode::Species => species.get(i).copied().unwrap_or(0) as f32 / 255.0,
                    ColorMode::Fixed | ColorMode::Density => {
                        if let Some(c) = self.fixed {
                            return c;
                        }
                        0.75
                    }
                };
                self.lookup(t)
            })
            .collect()
    }

    /// The map at `t`, as the renderer's linear filter reads it.
    fn lookup(&self, t: f32) -> [f32; 3] {
        let x = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) } * 255.0;
        let i = (x.floor() as usize).min(self.lut.len() - 1);
        let j = (i + 1).min(self.lut.len() - 1);
        let f = x - i as f32;
        std::array::from_fn(|k| self.lut[i][k] * (1.0 - f) + self.lut[j][k] * f)
    }
}
