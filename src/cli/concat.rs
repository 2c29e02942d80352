//! `forge concat`: chunks from `forge render --chunk I/N`, checked, joined by stream copy.

use std::process::ExitCode;

use anyhow::Result;

use super::ConcatArgs;
use crate::units::bytes;
use crate::video::concat::{join, plan, probe};

pub fn concat_cmd(a: ConcatArgs) -> Result<ExitCode> {
    // The output: not a part, not another forge process's, not an existing file without --force.
    let inputs: Vec<(&std::path::Path, &str)> =
        a.parts.iter().map(|p| (p.as_path(), "part")).collect();
    let _claim = crate::output::claim(&[(&a.output, "output")], &inputs, a.force)?;
    let parts = a
        .parts
        .iter()
        .map(|p| probe(p))
        .collect::<Result<Vec<_>>>()?;
    let parts = plan(parts)?;
    let j = join(&parts, &a.output, a.force)?;
    if !a.quiet {
        let m = &parts[0].manifest;
        let size = std::fs::metadata(&a.output).map(|m| m.len()).unwrap_or(0);
        eprintln!(
            "{} chunks of {} joined: {} frames ({}..{}, {:.2} s at {} fps) in {:.2} s -> {} ({})",
            parts.len(),
            m.recording.file,
            j.frames,
            m.clip[0],
            m.clip[1],
            j.duration,
            m.fps,
            j.secs,
            a.output.display(),
            bytes(size)
        );
    }
    Ok(ExitCode::SUCCESS)
}
