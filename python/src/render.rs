//! `still` and `render`: forge's own render (`video::render`, the code of `forge still` and
//! `forge render`) with a look given as keyword arguments, the keys of a scene's `render`
//! section.

use std::path::PathBuf;

use image::ImageEncoder;
use numpy::ndarray::Array3;
use numpy::{IntoPyArray, PyArray3, PyReadonlyArray3};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use forge::bfs::FrameRange;
use forge::look::Look;
use forge::video::codec::EncodingFlags;
use forge::video::resolve::Layers;
use forge::video::{Destination, Job, StillFormat};

use crate::errors::{ForgeError, LookError};

/// The keyword arguments as a look: the keys of a scene's `render` section, read by the same
/// serde type (an unknown key is an error naming it, and listing the known ones); then forge's
/// range checks of each setting.
fn look_of(py: Python<'_>, look: Option<&Bound<'_, PyDict>>) -> PyResult<Look> {
    let Some(d) = look else {
        return Ok(Look::default());
    };
    let text = crate::scene::dumps(py, d.as_any())
        .map_err(|e| LookError::new_err(format!("look: {}", e.value(py))))?;
    let mut de = serde_json::Deserializer::from_str(&text);
    let look: Look = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let at = e.path().to_string();
        let inner = e.inner().to_string();
        let inner = match inner.rfind(" at line ") {
            Some(i) => &inner[..i],
            None => &inner[..],
        };
        if at.is_empty() || at == "." {
            LookError::new_err(format!("look: {inner}"))
        } else {
            LookError::new_err(format!("look: {at}: {inner}"))
        }
    })?;
    if let Some(p) = look.problems(None).into_iter().next() {
        return Err(LookError::new_err(format!(
            "look: {}: {}",
            p.field, p.message
        )));
    }
    Ok(look)
}

/// Renders frame `frame` of `recording` as `forge still` does and returns it as an
/// `(H, W, 3)` `uint8` array, `(H, W, 4)` (straight alpha last) where the look asks for alpha.
#[pyfunction]
#[pyo3(signature = (recording, frame, look=None))]
pub fn still<'py>(
    py: Python<'py>,
    recording: PathBuf,
    #[pyo3(from_py_with = crate::args::frame)] frame: u64,
    look: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyArray3<u8>>> {
    let look = look_of(py, look)?;
    let channels = if look.alpha == Some(true) { 4 } else { 3 };
    let dir =
        tempfile::tempdir().map_err(|e| ForgeError::new_err(format!("a temporary folder: {e}")))?;
    let out = dir.path().join("still.png");
    let job = Job {
        input: recording,
        look: Layers::flags(look),
        frames: FrameRange::ALL,
        dest: Destination::Still {
            path: out.clone(),
            frame,
            format: StillFormat::Png,
        },
        force: false,
        quiet: true,
        adapter: None,
        interpolate: 1,
        chunk: None,
    };
    let png = out.clone();
    let img = crate::work::run(py, move || {
        forge::video::render(&job)?;
        let img = image::open(&png)
            .map_err(|e| anyhow::anyhow!("reading the still back from {}: {e}", png.display()))?;
        let (w, h) = (img.width(), img.height());
        let raw = match channels {
            4 => img.into_rgba8().into_raw(),
            _ => img.into_rgb8().into_raw(),
        };
        Ok((w, h, raw))
    })?;
    drop(dir);
    let (w, h, raw) = img;
    let a = Array3::from_shape_vec((h as usize, w as usize, channels), raw)
        .expect("an image of w × h × channels");
    Ok(a.into_pyarray(py))
}

/// An `(H, W, 3)` (RGB) or `(H, W, 4)` (RGBA) `uint8` array as PNG bytes (for `_repr_png_`).
#[pyfunction]
pub fn encode_png(py: Python<'_>, image: &Bound<'_, PyAny>) -> PyResult<Py<pyo3::types::PyBytes>> {
    let image: PyReadonlyArray3<'_, u8> = image.extract().map_err(|_| {
        let kind = image
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_default();
        let shape = image
            .getattr("shape")
            .map(|s| format!(" of shape {s}"))
            .unwrap_or_default();
        let dtype = image
            .getattr("dtype")
            .map(|d| format!(" and dtype {d}"))
            .unwrap_or_default();
        pyo3::exceptions::PyTypeError::new_err(format!(
            "image: must be an (H, W, 3) or (H, W, 4) uint8 NumPy array, got {kind}{shape}{dtype}"
        ))
    })?;
    let a = image.as_array();
    let (h, w, c) = a.dim();
    if c != 3 && c != 4 {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "image: expected shape (H, W, 3) or (H, W, 4), got ({h}, {w}, {c})"
        )));
    }
    let raw: Vec<u8> = a.iter().copied().collect();
    let colour = if c == 4 {
        image::ExtendedColorType::Rgba8
    } else {
        image::ExtendedColorType::Rgb8
    };
    let mut out = std::io::Cursor::new(Vec::new());
    image::codecs::png::PngEncoder::new(&mut out)
        .write_image(&raw, w as u32, h as u32, colour)
        .map_err(|e| ForgeError::new_err(format!("encoding a PNG: {e}")))?;
    Ok(pyo3::types::PyBytes::new(py, &out.into_inner()).unbind())
}

/// Renders `recording` to the video `output` as `forge render` does (H.264 MP4 by default,
/// through FFmpeg); `frames` = `(start, end)` of the recorded frames, either `None`.
#[pyfunction]
#[pyo3(signature = (recording, output, frames=None, force=false, look=None))]
pub fn render<'py>(
    py: Python<'py>,
    recording: PathBuf,
    output: PathBuf,
    #[pyo3(from_py_with = crate::args::frames)] frames: Option<(Option<u64>, Option<u64>)>,
    force: bool,
    look: Option<&Bound<'py, PyDict>>,
) -> PyResult<(u64, u32, u32)> {
    let look = look_of(py, look)?;
    // A video with alpha is ProRes 4444 (a .mov), as `forge render --alpha` makes it.
    let encoding = EncodingFlags::default().for_alpha(look.alpha == Some(true));
    let frames = match frames {
        Some((start, end)) => FrameRange { start, end },
        None => FrameRange::ALL,
    };
    let job = Job {
        input: recording,
        look: Layers::flags(look),
        frames,
        dest: Destination::Mp4 {
            path: output,
            encoding,
        },
        force,
        quiet: true,
        adapter: None,
        interpolate: 1,
        chunk: None,
    };
    let r = crate::work::run(py, move || forge::video::render(&job))?;
    Ok((r.frames, r.width, r.height))
}

/// `forge export RECORDING -o OUTPUT` (`.npz`, `.csv`, `.xyz`, `.usda`/`.usd`), the same code;
/// returns the frames written. Ctrl-C stops it and leaves no output.
#[pyfunction]
#[pyo3(signature = (recording, output, frames, every, force, look=None))]
pub fn export(
    py: Python<'_>,
    recording: PathBuf,
    output: PathBuf,
    frames: Option<(Option<u64>, Option<u64>)>,
    every: u64,
    force: bool,
    look: Option<&Bound<'_, PyDict>>,
) -> PyResult<u64> {
    // The colours (`color`, `colormap`) as a look, checked as `still`'s and `render`'s are.
    let colours = look.map(|d| look_of(py, Some(d))).transpose()?;
    let job = forge::export::Job {
        input: recording,
        output,
        frames: match frames {
            Some((start, end)) => FrameRange { start, end },
            None => FrameRange::ALL,
        },
        every,
        no_metrics: false,
        colours,
        force,
        quiet: true,
    };
    let r = crate::work::run(py, move || forge::export::export(&job))?;
    Ok(r.frames)
}
