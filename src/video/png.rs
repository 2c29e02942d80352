//! Frames out as image files: PNG (8-bit sRGB, or 16-bit for stills) and OpenEXR (linear
//! light, for stills).

use std::io::Write;
use std::path::Path;

use anyhow::{ensure, Context, Result};
use image::codecs::png::{CompressionType, FilterType, PngEncoder};
use image::{ExtendedColorType, ImageEncoder};

use crate::output::OutputFile;

/// Where the sRGB chunk goes: after the signature (8 bytes) and the IHDR chunk (length, type,
/// 13 bytes of data, CRC).
const AFTER_IHDR: usize = 8 + 4 + 4 + 13 + 4;

/// The PNG `sRGB` chunk, rendering intent 0 (perceptual): length, type, data, CRC of type + data.
fn srgb_chunk() -> [u8; 13] {
    let mut c = [0u8; 13];
    c[..4].copy_from_slice(&1u32.to_be_bytes());
    c[4..8].copy_from_slice(b"sRGB");
    c[8] = 0;
    let crc = crc32fast::hash(&c[4..9]);
    c[9..].copy_from_slice(&crc.to_be_bytes());
    c
}

/// How hard a PNG's pixels are compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pack {
    /// zlib level 6 with adaptive filters (the png crate's default): a still, written once.
    Small,
    /// fdeflate with adaptive filters: a folder of frames, at about an encoder's speed
    /// (several times faster, files about a fifth larger).
    Fast,
}

/// Encodes one RGBA8 (sRGB) image as PNG: IHDR, sRGB, IDAT, IEND.
fn encode_png(width: u32, height: u32, rgba: &[u8], pack: Pack) -> Result<Vec<u8>> {
    encode_png_as(width, height, rgba, ExtendedColorType::Rgba8, pack)
}

/// Encodes one RGBA image (8 bits a channel, or 16 in native-endian `u16`s), sRGB, as PNG.
///
/// `image`'s PNG encoder can embed an ICC profile but has no way to write the 13-byte `sRGB`
/// chunk, so it is spliced in after IHDR, where the PNG spec wants it (before IDAT).
fn encode_png_as(
    width: u32,
    height: u32,
    rgba: &[u8],
    color: ExtendedColorType,
    pack: Pack,
) -> Result<Vec<u8>> {
    let want = u64::from(width) * u64::from(height) * color.bits_per_pixel() as u64 / 8;
    ensure!(
        rgba.len() as u64 == want,
        "{width}x{height} {color:?} image: {} bytes, expected {want}",
        rgba.len()
    );
    let mut png = Vec::with_capacity(rgba.len() / 2);
    let compression = match pack {
        Pack::Small => CompressionType::Default,
        Pack::Fast => CompressionType::Fast,
    };
    PngEncoder::new_with_quality(&mut png, compression, FilterType::Adaptive)
        .write_image(rgba, width, height, color)?;
    ensure!(
        png.get(12..16) == Some(b"IHDR".as_slice()) && png.len() > AFTER_IHDR,
        "the PNG encoder wrote no IHDR chunk first"
    );
    png.splice(AFTER_IHDR..AFTER_IHDR, srgb_chunk());
    Ok(png)
}

/// Writes one RGBA8 (sRGB) image as PNG.
pub fn write_png(path: &Path, width: u32, height: u32, rgba: &[u8], pack: Pack) -> Result<()> {
    let png = encode_png(width, height, rgba, pack)
        .with_context(|| format!("writing {}", path.display()))?;
    let mut file =
        std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    file.write_all(&png)
        .with_context(|| format!("writing {}", path.display()))
}

/// Writes one RGBA image, 16 bits a channel (native-endian `u16`s, sRGB), as PNG.
pub fn write_png16(path: &Path, width: u32, height: u32, rgba: &[u8]) -> Result<()> {
    let png = encode_png_as(width, height, rgba, ExtendedColorType::Rgba16, Pack::Small)
        .with_context(|| format!("writing {}", path.display()))?;
    std::fs::write(path, png).with_context(|| format!("writing {}", path.display()))
}

/// Writes one RGBA image of linear light (native-endian `f32`s) as OpenEXR (32-bit float,
/// Rec. 709 primaries, as EXR assumes by default).
pub fn write_exr(path: &Path, width: u32, height: u32, rgba: &[u8]) -> Result<()> {
    let want = u64::from(width) * u64::from(height) * 16;
    ensure!(
        rgba.len() as u64 == want,
        "{width}x{height} RGBA float image: {} bytes, expected {want}",
        rgba.len()
    );
    let file =
        std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut w = std::io::BufWriter::new(file);
    image::codecs::openexr::OpenExrEncoder::new(&mut w)
        .write_image(rgba, width, height, ExtendedColorType::Rgba32F)
        .with_context(|| format!("writing {}", path.display()))?;
    w.flush()
        .with_context(|| format!("writing {}", path.display()))
}

/// A PNG written under a temporary name, then renamed.
pub fn write_png_atomic(
    path: &Path,
    width: u32,
    height: u32,
    rgba: &[u8],
    force: bool,
    pack: Pack,
) -> Result<()> {
    let (out, file) = OutputFile::create(path, force, "image")?;
    drop(file);
    match write_png(out.writing_path(), width, height, rgba, pack) {
        Ok(()) => out.commit(),
        Err(e) => {
            out.abandon();
            Err(e)
        }
    }
}
