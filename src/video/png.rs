//! Frames out as PNG files (8-bit sRGB).

use std::path::Path;

use anyhow::{Context, Result};

use crate::output::OutputFile;

/// Writes one RGBA8 (sRGB) image as PNG.
pub fn write_png(path: &Path, width: u32, height: u32, rgba: &[u8]) -> Result<()> {
    let file =
        std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut enc = png::Encoder::new(std::io::BufWriter::new(file), width, height);
    enc.set_color(png::ColorType::Rgba);
    enc.set_depth(png::BitDepth::Eight);
    enc.set_source_srgb(png::SrgbRenderingIntent::Perceptual);
    let mut w = enc
        .write_header()
        .with_context(|| format!("writing {}", path.display()))?;
    w.write_image_data(rgba)
        .with_context(|| format!("writing {}", path.display()))?;
    w.finish()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// A PNG written under a temporary name, then renamed.
pub fn write_png_atomic(
    path: &Path,
    width: u32,
    height: u32,
    rgba: &[u8],
    force: bool,
) -> Result<()> {
    let (out, file) = OutputFile::create(path, force, "image")?;
    drop(file);
    match write_png(out.writing_path(), width, height, rgba) {
        Ok(()) => out.commit(),
        Err(e) => {
            out.abandon();
            Err(e)
        }
    }
}
