//! The `.csv` writer (through the `csv` crate), for small recordings: `frame,step,time,agent,x,y[,z],vx,vy[,vz]`, one
//! row per agent per frame, frames in order, agents by index. Floats are written as the
//! shortest decimal that reads back to the same float32 (the time, a float64, likewise).

use std::fmt::Write;
use std::fs::File;
use std::path::Path;

use anyhow::{bail, Result};

use super::{Selection, CSV_MAX_ROWS};
use crate::bfs::{Header, Reader};

/// Refuses a selection of more than [`CSV_MAX_ROWS`] rows (counted with the header's agent
/// count; a BFS1 file whose count grows is stopped while writing).
pub(super) fn check_size(h: &Header, sel: &Selection) -> Result<()> {
    let rows = sel.len().saturating_mul(u64::from(h.agents));
    if rows > CSV_MAX_ROWS {
        bail!(
            "--output: {} frames x {} agents is {rows} CSV rows, above the {CSV_MAX_ROWS} a \
             .csv export takes; export to .npz (smaller and faster, read with numpy.load), or \
             fewer frames (--frames A..B, --every K)",
            sel.len(),
            h.agents
        );
    }
    Ok(())
}

/// Writes the selected frames of `r` to `file` as CSV; the first frame's agent count and the
/// file.
pub(super) fn write(
    r: &mut Reader,
    input: &Path,
    sel: &Selection,
    file: File,
    bar: &indicatif::ProgressBar,
) -> Result<(u64, File)> {
    let h = r.header().clone();
    let dim = usize::from(h.dim);
    let mut w = csv::WriterBuilder::new()
        .buffer_capacity(1 << 20)
        .from_writer(file);
    let axes = ["x", "y", "z"];
    let head = ["frame", "step", "time", "agent"]
        .into_iter()
        .map(String::from)
        .chain(axes[..dim].iter().map(|a| a.to_string()))
        .chain(axes[..dim].iter().map(|a| format!("v{a}")));
    w.write_record(head)?;
    let mut rows = 0u64;
    // Each field formatted into one reused buffer (`{}`: the shortest decimal that reads back).
    let mut field = String::new();
    let mut put = |w: &mut csv::Writer<File>, v: &dyn std::fmt::Display| -> csv::Result<()> {
        field.clear();
        write!(field, "{v}").expect("formatting into a String");
        w.write_field(&field)
    };
    let first = super::each_frame(r, input, sel, bar, |k, frame, n| {
        rows += frame.present_count(n) as u64;
        if rows > CSV_MAX_ROWS {
            bail!(
                "--output: more than {CSV_MAX_ROWS} CSV rows by frame {k}; export to .npz, or \
                 fewer frames (--frames A..B, --every K)"
            );
        }
        let time = frame.step as f64 * h.dt as f64;
        // The agents there at the frame's step (each row names its agent).
        for i in (0..n).filter(|&i| !frame.is_absent(i)) {
            put(&mut w, &k)?;
            put(&mut w, &frame.step)?;
            put(&mut w, &time)?;
            put(&mut w, &i)?;
            for c in 0..dim {
                put(&mut w, &frame.pos[c * n + i])?;
            }
            for c in 0..dim {
                put(&mut w, &frame.vel[c * n + i])?;
            }
            w.write_record(None::<&[u8]>)?;
        }
        Ok(())
    })?;
    let file = w.into_inner().map_err(|e| e.into_error())?;
    Ok((first, file))
}
