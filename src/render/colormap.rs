//! Colour maps baked into a 256-texel lookup texture. All but `twilight` come from `colorous`
//! (d3-scale-chromatic's schemes); `twilight` (matplotlib's cyclic map, not in colorous) is
//! approximated from control points.

use crate::look::Colormap;

/// Texels in the lookup texture.
pub const LUT_SIZE: usize = 256;

/// matplotlib's `twilight` at 9 evenly spaced points (sRGB), joined linearly.
const TWILIGHT: [[f32; 3]; 9] = [
    [0.886, 0.851, 0.888],
    [0.616, 0.679, 0.813],
    [0.373, 0.446, 0.751],
    [0.308, 0.204, 0.548],
    [0.185, 0.078, 0.219],
    [0.434, 0.108, 0.300],
    [0.694, 0.276, 0.284],
    [0.812, 0.579, 0.478],
    [0.886, 0.851, 0.888],
];

fn twilight(t: f64) -> [u8; 3] {
    let x = t.clamp(0.0, 1.0) * (TWILIGHT.len() - 1) as f64;
    let i = (x.floor() as usize).min(TWILIGHT.len() - 2);
    let f = (x - i as f64) as f32;
    let a = TWILIGHT[i];
    let b = TWILIGHT[i + 1];
    let mut out = [0u8; 3];
    for k in 0..3 {
        out[k] = ((a[k] + (b[k] - a[k]) * f) * 255.0).round() as u8;
    }
    out
}

/// The lookup texture of baked colours (`bake`): sRGB bytes, decoded to linear when sampled.
pub fn texture(device: &wgpu::Device, queue: &wgpu::Queue, lut: &[u8]) -> wgpu::TextureView {
    let size = wgpu::Extent3d {
        width: LUT_SIZE as u32,
        height: 1,
        depth_or_array_layers: 1,
    };
    let tex = super::sampled_texture(
        device,
        "colour map",
        LUT_SIZE as u32,
        1,
        wgpu::TextureFormat::Rgba8UnormSrgb,
    );
    queue.write_texture(
        wgpu::TexelCopyTextureInfo {
            texture: &tex,
            mip_level: 0,
            origin: wgpu::Origin3d::ZERO,
            aspect: wgpu::TextureAspect::All,
        },
        lut,
        wgpu::TexelCopyBufferLayout {
            offset: 0,
            bytes_per_row: Some(LUT_SIZE as u32 * 4),
            rows_per_image: None,
        },
        size,
    );
    tex.create_view(&Default::default())
}

/// The map's 256 colours as sRGB RGBA bytes. A non-cyclic map starts at `floor` (0..1) of
/// its gradient instead of 0, so that its darkest colours can be left out.
pub fn bake(map: Colormap, floor: f32) -> Vec<u8> {
    let g: Option<colorous::Gradient> = match map {
        Colormap::Viridis => Some(colorous::VIRIDIS),
        Colormap::Magma => Some(colorous::MAGMA),
        Colormap::Inferno => Some(colorous::INFERNO),
        Colormap::Plasma => Some(colorous::PLASMA),
        Colormap::Turbo => Some(colorous::TURBO),
        Colormap::Cividis => Some(colorous::CIVIDIS),
        Colormap::Sinebow => Some(colorous::SINEBOW),
        Colormap::Spectral => Some(colorous::SPECTRAL),
        Colormap::Coolwarm => Some(colorous::RED_BLUE),
        Colormap::Warm => Some(colorous::WARM),
        Colormap::Cool => Some(colorous::COOL),
        Colormap::Greys => Some(colorous::GREYS),
        Colormap::Twilight => None,
    };
    // Maps that colorous runs the other way round: blue (low) to red (high), dark to light.
    let reversed = matches!(map, Colormap::Coolwarm | Colormap::Greys);
    let mut out = Vec::with_capacity(LUT_SIZE * 4);
    for i in 0..LUT_SIZE {
        let floor = f64::from(floor.clamp(0.0, 0.9));
        let t = floor + (1.0 - floor) * i as f64 / (LUT_SIZE - 1) as f64;
        let rgb = match g {
            // A cyclic gradient's eval at 1.0 equals 0.0; sample [0, 1) so the seam is even.
            Some(g) if map.is_cyclic() => {
                let c = g.eval_continuous(i as f64 / LUT_SIZE as f64);
                [c.r, c.g, c.b]
            }
            Some(g) => {
                let c = g.eval_continuous(if reversed { 1.0 - t } else { t });
                [c.r, c.g, c.b]
            }
            None => twilight(i as f64 / LUT_SIZE as f64),
        };
        out.extend_from_slice(&[rgb[0], rgb[1], rgb[2], 255]);
    }
    out
}

/// A LUT of one colour per species: texel i is `colours[i]` (the last colour beyond them), so
/// that an agent's value `i / 255` (its species index) lands on the centre of texel i.
pub fn palette(colours: &[[u8; 3]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(LUT_SIZE * 4);
    for i in 0..LUT_SIZE {
        let c = colours
            .get(i)
            .or(colours.last())
            .copied()
            .unwrap_or([255, 255, 255]);
        out.extend_from_slice(&[c[0], c[1], c[2], 255]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_map_bakes() {
        for &m in <Colormap as clap::ValueEnum>::value_variants() {
            assert_eq!(bake(m, 0.0).len(), LUT_SIZE * 4);
        }
    }

    #[test]
    fn a_floor_drops_the_dark_end_and_keeps_the_bright_one() {
        let full = bake(Colormap::Inferno, 0.0);
        let cut = bake(Colormap::Inferno, 0.3);
        let luma = |b: &[u8]| 0.2126 * b[0] as f32 + 0.7152 * b[1] as f32 + 0.0722 * b[2] as f32;
        assert!(luma(&cut[..4]) > luma(&full[..4]) + 20.0);
        assert_eq!(cut[cut.len() - 4..], full[full.len() - 4..]);
    }
}
