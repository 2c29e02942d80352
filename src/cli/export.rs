//! `forge export`: a recording to NumPy (.npz), CSV or extended XYZ.

use std::process::ExitCode;

use anyhow::Result;

use super::ExportArgs;
use crate::export::{self, Format, Job};
use crate::units::bytes;

pub fn export_cmd(a: ExportArgs) -> Result<ExitCode> {
    let output = a
        .output
        .clone()
        .unwrap_or_else(|| a.file.with_extension("npz"));
    let job = Job {
        input: a.file,
        output,
        frames: a.frames.unwrap_or(crate::bfs::FrameRange::ALL),
        every: a.every,
        no_metrics: a.no_metrics,
        colours: (a.color.is_some() || a.colormap.is_some()).then(|| crate::look::Look {
            color: a.color,
            colormap: a.colormap,
            ..Default::default()
        }),
        force: a.force,
        quiet: a.quiet,
    };
    let r = export::export(&job)?;
    if !a.quiet {
        eprintln!(
            "{} frames x {} agents ({}D) in {:.2} s -> {} ({}, {})",
            r.frames,
            r.agents,
            r.dim,
            r.secs,
            job.output.display(),
            match r.format {
                Format::Npz => "npz",
                Format::Csv => "csv",
                Format::Xyz => "extended XYZ",
                Format::Usd => "USD text",
                Format::Glb => "glTF",
            },
            bytes(r.bytes)
        );
    }
    Ok(ExitCode::SUCCESS)
}
