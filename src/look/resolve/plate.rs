//! `--background-image`: the picture under the agents, read and scaled to the frame once, before
//! any GPU work.

use std::path::Path;

use anyhow::{anyhow, bail, Result};

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
    let scaled = if (sw, sh) == (pw, ph) {
        picture
    } else {
        image::imageops::resize(&picture, sw, sh, image::imageops::FilterType::Triangle)
    };
    let (x0, y0) = ((sw - w) / 2, (sh - h) / 2);
    let cut = image::imageops::crop_imm(&scaled, x0, y0, w, h).to_image();
    Ok(Some(Plate {
        path: path.clone(),
        width: w,
        height: h,
        rgba: std::sync::Arc::new(cut.into_raw()),
    }))
}

/// The PNG at `path` as sRGB RGBA8 (what a PNG without colour chunks is taken to be).
fn read(path: &Path) -> Result<image::RgbaImage> {
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
    Ok(picture.into_rgba8())
}
