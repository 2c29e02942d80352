//! The `.npz` writer: NumPy's `numpy.savez` layout (a zip of stored, uncompressed `.npy`
//! entries), written as a stream.
//!
//! - The zip container is the `zip` crate's `ZipWriter` over the output file: each entry's
//!   bytes go straight to the file as they are written (stored entries are not buffered), and
//!   the writer seeks back to patch each local header's CRC and sizes. `pos` and `vel` are
//!   written as ZIP64 entries, so the same code writes an array above 4 GiB. Timestamps are
//!   fixed (1980-01-01), so one recording always exports to the same bytes.
//! - Every `.npy` header (magic, version, `descr`, `fortran_order`, `shape`, padding to 64
//!   bytes) comes from `super::npy`; the shape is known before the first frame (frames ×
//!   agents × dim), so no header is patched afterwards. `pos` and `vel` follow their header as
//!   bulk little-endian float32 (the header says `<f4`; forge builds only for little-endian
//!   targets), one transposed frame at a time; the small arrays (steps, times, metrics,
//!   world, scene) are built whole and written at once.
//! - `pos` is written in a first pass over the frames (which also collects the steps and the
//!   metrics), `vel` in a second: the input is read twice and never held.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{bail, Context, Result};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, ZipWriter};

use super::{npy, Selection};
use crate::bfs::{Frame, Reader};
use crate::metrics;

/// Write buffer in front of each zip entry: frames of a few agents become large writes.
const BUFFER: usize = 1 << 20;

fn options(large: bool) -> SimpleFileOptions {
    SimpleFileOptions::default()
        .compression_method(CompressionMethod::Stored)
        .last_modified_time(DateTime::default())
        .large_file(large)
}

/// The per-frame numbers collected in the first pass.
#[derive(Default)]
struct PerFrame {
    frame: Vec<i64>,
    step: Vec<i64>,
    time: Vec<f64>,
    polarization: Vec<f64>,
    mean_speed: Vec<f64>,
    nn_distance: Vec<f64>,
    pairwise_distance: Vec<f64>,
    /// Whether each agent is there at each frame's step, frame-major; written where the
    /// recorded timeline takes a species out in some exported frame.
    present: Vec<bool>,
    any_absent: bool,
}

/// Transposes one component-major frame array (`x[0..n] y[0..n] (z[0..n])`) into agent-major
/// order (`x0 y0 (z0) x1 y1 ...`), the C order of a `(agents, dim)` array.
fn agent_major(src: &[f32], n: usize, dim: usize, out: &mut Vec<f32>) {
    out.clear();
    out.resize(n * dim, 0.0);
    for (k, comp) in src.chunks_exact(n.max(1)).take(dim).enumerate() {
        for (i, &x) in comp.iter().enumerate() {
            out[i * dim + k] = x;
        }
    }
}

/// Writes `pos` (or `vel`) of every selected frame as `NAME.npy`, float32 `(frames, n, dim)`,
/// and calls `each` on every frame read.
#[allow(clippy::too_many_arguments)]
fn write_frames(
    zip: &mut ZipWriter<File>,
    name: &str,
    r: &mut Reader,
    input: &Path,
    sel: &Selection,
    n: usize,
    bar: &indicatif::ProgressBar,
    mut each: impl FnMut(&Frame),
) -> Result<()> {
    let dim = usize::from(r.header().dim);
    zip.start_file(format!("{name}.npy"), options(true))?;
    let mut w = BufWriter::with_capacity(BUFFER, &mut *zip);
    w.write_all(&npy::header(
        <f32 as npy::Element>::DESCR,
        &[sel.len(), n as u64, dim as u64],
    ))?;
    let mut frame = Frame::empty();
    let mut rows = Vec::new();
    for k in sel.frames() {
        crate::signal::check()?;
        r.read_frame_into(k, &mut frame)
            .with_context(|| format!("{}: frame {k}", input.display()))?;
        frame.check_finite(dim, k)?;
        let m = frame.agents(dim);
        if m != n {
            bail!(
                "{}: frame {k} has {m} agents but frame {} has {n}: a .npz holds the same \
                 agents in every frame; export a range in which the count does not change \
                 (--frames), or to .csv, which takes any count",
                input.display(),
                sel.range.start
            );
        }
        let src = if name == "pos" {
            &frame.pos
        } else {
            &frame.vel
        };
        agent_major(src, n, dim, &mut rows);
        w.write_all(bytemuck::cast_slice(&rows))?;
        each(&frame);
        bar.inc(1);
    }
    w.flush()?;
    Ok(())
}

/// Writes a 1-d array `NAME.npy` of the values.
fn write_1d<T: npy::Element>(zip: &mut ZipWriter<File>, name: &str, values: &[T]) -> Result<()> {
    write_nd(zip, name, &[values.len() as u64], values)
}

/// Writes an array `NAME.npy` of `shape` (C order) of the values.
fn write_nd<T: npy::Element>(
    zip: &mut ZipWriter<File>,
    name: &str,
    shape: &[u64],
    values: &[T],
) -> Result<()> {
    write_entry(zip, name, &npy::array(shape, values))
}

/// Writes the entry `NAME.npy` holding `bytes`.
fn write_entry(zip: &mut ZipWriter<File>, name: &str, bytes: &[u8]) -> Result<()> {
    zip.start_file(format!("{name}.npy"), options(false))?;
    zip.write_all(bytes)?;
    Ok(())
}

/// Writes the selected frames of `r` to `file` as `.npz`; the agent count and the file.
pub(super) fn write(
    r: &mut Reader,
    input: &Path,
    sel: &Selection,
    with_metrics: bool,
    file: File,
    bar: &indicatif::ProgressBar,
) -> Result<(u64, File)> {
    let h = r.header().clone();
    let dim = usize::from(h.dim);
    let space = crate::metrics::Space::of(&h);
    // The first exported frame sets the agent count (BFS1 may vary it; forge never does).
    let n = r
        .read_frame(sel.range.start)
        .with_context(|| format!("{}: frame {}", input.display(), sel.range.start))?
        .agents(dim);

    let mut zip = ZipWriter::new(file);
    let mut per = PerFrame::default();
    write_frames(&mut zip, "pos", r, input, sel, n, bar, |f| {
        per.frame.push(f.index as i64);
        per.step.push(f.step as i64);
        per.time.push(f.step as f64 * h.dt as f64);
        per.present.extend((0..n).map(|i| !f.is_absent(i)));
        per.any_absent |= !f.absent.is_empty();
        if with_metrics {
            // Over the agents there at the frame's step.
            let f = f.present(dim);
            let m = metrics::frame_metrics(&space, f.agents(dim), &f.pos, &f.vel);
            per.polarization.push(m.polarization);
            per.mean_speed.push(m.mean_speed);
            per.nn_distance.push(m.nn_distance);
            per.pairwise_distance.push(m.pairwise_distance);
        }
    })?;
    write_frames(&mut zip, "vel", r, input, sel, n, bar, |_| {})?;
    write_1d(&mut zip, "frame", &per.frame)?;
    write_1d(&mut zip, "step", &per.step)?;
    write_1d(&mut zip, "time", &per.time)?;
    if with_metrics {
        write_1d(&mut zip, "polarization", &per.polarization)?;
        write_1d(&mut zip, "mean_speed", &per.mean_speed)?;
        write_1d(&mut zip, "nn_distance", &per.nn_distance)?;
        write_1d(&mut zip, "pairwise_distance", &per.pairwise_distance)?;
    }
    if per.any_absent {
        write_nd(&mut zip, "present", &[sel.len(), n as u64], &per.present)?;
    }
    write_1d(&mut zip, "world", &h.world_size[..dim])?;
    write_entry(&mut zip, "scene", &npy::text(&h.scene_json))?;
    let file = zip.finish()?;
    Ok((n as u64, file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_become_agent_major() {
        let mut out = Vec::new();
        // 3 agents in 2D: x = 1 2 3, y = 4 5 6.
        agent_major(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 3, 2, &mut out);
        assert_eq!(out, [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        agent_major(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 2, 3, &mut out);
        assert_eq!(out, [1.0, 3.0, 5.0, 2.0, 4.0, 6.0]);
        agent_major(&[], 0, 3, &mut out);
        assert!(out.is_empty());
    }
}
