//! `--background-image`: the picture under the agents, read and scaled to the frame once, before
//! any GPU work.

use std::path::Path;

use anyhow::{anyhow, bail, Result};
use image::DynamicImage;

use crate::look::Look;
use crate::render::Plate;

/// Most bytes a plate may decode to (a 16384×16384 RGBA8 picture).
const MAX_DECODED: u64 = 1 << 30;
/// The widest and tallest plate, in pixels (the largest frame forge renders).
const MAX_SIDE: u32 = 16384;

/// The plate `l` names (None without one), scaled to cover `l`'s size: the smaller scale
/// that fills the frame, centred, the overhang cut off. `origin` names the layer a field came
/// from, for messages.
pub(super) fn load(l: &Look, origin: &dyn Fn(&str) -> String) -> Result<Option<Plate>> {
    let Some(path) = &l.background_image else {
        return Ok(None);
    };
    let who = origin("background_image");
    if l.alpha == Some(true) {
        bail!(
            "{who} and {}: one draws over a picture, the other over nothing; give one",
            origin("alpha")
        );
    }
    let [w, h] = l.size.expect("resolved").0;
    let picture = read(path).map_err(|e| anyhow!("{who} {}: {e}", path.display()))?;
    let (pw, ph) = (picture.width(), picture.height());
    let scale = (w as f64 / pw as f64).max(h as f64 / ph as f64);
    let (sw, sh) = (
        ((pw as f64 * scale).ceil() as u32).max(w),
        ((ph as f64 * scale).ceil() as u32).max(h),
    );
    // Scaled in its own 8-bit colours, made RGBA only at the frame's size: the picture is never
    // held twice at its full size (an RGB picture of 16384×16384 is 768 MiB; as RGBA another
    // 1 GiB). Other formats are made RGBA8 first, as the plate is.
    let picture = match picture {
        p @ (DynamicImage::ImageRgb8(_)
        | DynamicImage::ImageRgba8(_)
        | DynamicImage::ImageLuma8(_)
        | DynamicImage::ImageLumaA8(_)) => p,
        p => DynamicImage::ImageRgba8(p.into_rgba8()),
    };
    let scaled = if (sw, sh) == (pw, ph) {
        picture
    } else {
        picture.resize_exact(sw, sh, image::imageops::FilterType::Triangle)
    };
    let (x0, y0) = ((sw - w) / 2, (sh - h) / 2);
    let cut = scaled.crop_imm(x0, y0, w, h).into_rgba8();
    Ok(Some(Plate {
        path: path.clone(),
        width: w,
        height: h,
        rgba: std::sync::Arc::new(cut.into_raw()),
    }))
}

/// The PNG at `path`, its colours sRGB (what a PNG without colour chunks is taken to be).
fn read(path: &Path) -> Result<DynamicImage> {
    let text = |e: &dyn std::fmt::Display| e.to_string();
    let meta = std::fs::metadata(path).map_err(|e| anyhow!("{}", text(&e)))?;
    if !meta.is_file() {
        bail!("not a regular file");
    }
    let mut reader = image::ImageReader::open(path)
        .map_err(|e| anyhow!("{}", text(&e)))?
        .with_guessed_format()
        .map_err(|e| anyhow!("{}", text(&e)))?;
    if reader.format() != Some(image::ImageFormat::Png) {
        bail!("not a PNG image (a plate is read as a PNG)");
    }
    let mut limits = image::Limits::default();
    limits.max_alloc = Some(MAX_DECODED);
    // A small file can hold a huge picture: refused by its header, before it is decoded.
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    reader.limits(limits);
    let picture = reader.decode().map_err(|e| match e {
        image::ImageError::Limits(_) => anyhow!(
            "the picture is larger than a plate may be (at most {MAX_SIDE}×{MAX_SIDE} pixels, \
             {} MiB decoded): scale it down to the video's size",
            MAX_DECODED >> 20
        ),
        e => anyhow!("{}", text(&e)),
    })?;
    if picture.width() == 0 || picture.height() == 0 {
        bail!("an empty picture");
    }
    Ok(picture)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scaling a picture in its own 8-bit colours and making it RGBA after gives the bytes
    /// that making it RGBA first and scaling gives.
    #[test]
    fn scaled_in_its_own_colours_is_scaled_as_rgba() {
        let mut seed = 7u32;
        let mut next = || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 24) as u8
        };
        let rgb = image::RgbImage::from_fn(97, 61, |_, _| image::Rgb([next(), next(), next()]));
        let grey = image::GrayImage::from_fn(97, 61, |_, _| image::Luma([next()]));
        for picture in [DynamicImage::ImageRgb8(rgb), DynamicImage::ImageLuma8(grey)] {
            for (w, h) in [(40, 25), (200, 130), (97, 30)] {
                let filter = image::imageops::FilterType::Triangle;
                let first = image::imageops::resize(&picture.to_rgba8(), w, h, filter);
                let after = picture.resize_exact(w, h, filter).into_rgba8();
                assert!(first == after, "{:?} to {w}x{h}", picture.color());
            }
        }
    }
}
