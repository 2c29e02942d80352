//! `forge export`: a recording's frames out to NumPy (`.npz`), CSV or extended XYZ, for
//! analysis elsewhere.
//!
//! Both writers stream: they hold one frame at a time (read with [`bfs::Reader`], so every
//! frame's checksum is checked) plus, for `.npz`, a few numbers per exported frame (step,
//! time, metrics: 56 bytes a frame). Memory does not grow with the number of agents times
//! frames, so a recording larger than RAM exports. The output appears under its name only
//! when complete ([`OutputFile`]).
//!
//! - `.npz` ([`npz`]): `pos` and `vel` float32 `(frames, agents, dim)` (the `.bfs` stores each
//!   frame component-major; every frame is transposed to agent-major on the way), `frame` and
//!   `step` int64, `time` float64 (step × dt), the per-frame metrics of `forge info --metrics`
//!   float64 (unless `--no-metrics`), `world` float32 `(dim,)` and `scene` (the resolved scene as JSON, a 0-d `<U`
//!   string). Read with `numpy.load` alone, no pickle.
//! - `.csv` ([`csv`]): `frame,step,time,agent,x,y[,z],vx,vy[,vz]`, one row per agent per frame,
//!   for small recordings (at most [`CSV_MAX_ROWS`] rows).
//! - `.xyz` ([`xyz`]): extended XYZ, a block per frame with the world box, species, positions,
//!   velocities and ids, for OVITO and ASE.
//! - `.usda` / `.usd` ([`usd`]): USD text, one `Points` prim with time-sampled points and
//!   velocities, for Houdini, Blender and usdview.
//! - `.glb` ([`gltf`]): binary glTF, a point cloud whose frames are morph targets, for tools
//!   without USD (Debian's and Ubuntu's Blender).

mod colour;
mod csv;
mod gltf;
mod npy;
mod npz;
mod usd;
mod xyz;

use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::bfs::FrameRange;
use crate::output::{self, OutputFile};

/// Largest CSV written, in rows (one per agent per frame): about 0.5 to 1 GB of text. Above
/// it, `.npz` is the format (a tenth of the size, and loads in one call).
pub const CSV_MAX_ROWS: u64 = 10_000_000;

/// What to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Npz,
    Csv,
    Xyz,
    Usd,
    Glb,
}

impl Format {
    /// The format an output's extension names (`.npz`, `.csv`, `.xyz` or `.extxyz`, any case).
    pub fn from_path(p: &Path) -> Result<Format> {
        let ext = p
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase());
        match ext.as_deref() {
            Some("npz") => Ok(Format::Npz),
            Some("csv") => Ok(Format::Csv),
            Some("xyz" | "extxyz") => Ok(Format::Xyz),
            Some("usda" | "usd") => Ok(Format::Usd),
            Some("glb") => Ok(Format::Glb),
            Some(ext @ ("usdc" | "usdz")) => bail!(
                "--output: {}: forge writes USD as text (.usda, or .usd holding text), not \
                 .{ext}; usdcat converts it (usdcat run.usda -o run.{ext})",
                p.display()
            ),
            _ => bail!(
                "--output: {} must end in .npz (NumPy), .csv, .xyz (extended XYZ), .usda/.usd \
                 (USD) or .glb (glTF)",
                p.display()
            ),
        }
    }
}

/// One export: validated by [`export`] before anything is written.
#[derive(Clone, Debug)]
pub struct Job {
    pub input: PathBuf,
    pub output: PathBuf,
    /// Frames `A..B` (B excluded; either may be left out), as `forge render --frames`.
    pub frames: FrameRange,
    /// Every k-th frame of the range (k >= 1).
    pub every: u64,
    /// `.npz`: leave out the per-frame metrics (for very large recordings, computing them
    /// takes longer than the export itself).
    pub no_metrics: bool,
    /// USD: colour each agent in every frame as `forge render` with these look flags does
    /// (`--color`, `--colormap`); None: each species' colour, if any.
    pub colours: Option<crate::look::Look>,
    pub force: bool,
    pub quiet: bool,
}

/// What was written.
#[derive(Clone, Debug)]
pub struct Report {
    pub format: Format,
    pub frames: u64,
    /// Agents of the first exported frame.
    pub agents: u64,
    pub dim: u8,
    pub bytes: u64,
    pub secs: f64,
}

/// The frames exported: `range`, every `every`-th, from its start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    pub range: Range<u64>,
    pub every: u64,
}

impl Selection {
    /// Checks `--frames` and `--every` against a recording of `count` frames.
    pub fn new(spec: FrameRange, every: u64, count: u64, file: &Path) -> Result<Selection> {
        if every == 0 {
            bail!("--every: must be at least 1");
        }
        if count == 0 {
            bail!("{} holds no complete frame", file.display());
        }
        Ok(Selection {
            range: spec.within(count, file)?,
            every,
        })
    }

    /// Number of frames exported.
    pub fn len(&self) -> u64 {
        (self.range.end - self.range.start).div_ceil(self.every)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The frame numbers exported, in order.
    pub fn frames(&self) -> impl Iterator<Item = u64> {
        self.range.clone().step_by(self.every as usize)
    }
}

/// Exports `job.input` to `job.output` (the format from its extension). Every check (format,
/// same file, an existing output, frames) is made before anything is written; a failure or a
/// signal (SIGINT, SIGTERM: checked every frame) part-way leaves nothing under the output's
/// name.
pub fn export(job: &Job) -> Result<Report> {
    let t0 = Instant::now();
    let format = Format::from_path(&job.output)?;
    // The output against the recording (never written over, even with --force), an existing
    // file and other forge processes, and locked, before reading anything.
    let _claim = output::claim(
        &[(&job.output, "output")],
        &[(&job.input, "input")],
        job.force,
    )?;
    let mut r = crate::bfs::open_recording(&job.input)?;
    if !job.quiet {
        for w in r.warnings() {
            log::warn!("{}: {w}", job.input.display());
        }
    }
    let sel = Selection::new(job.frames, job.every, r.frame_count(), &job.input)?;
    if format == Format::Csv {
        csv::check_size(r.header(), &sel)?;
    }
    let colours = match (&job.colours, format) {
        (None, _) => None,
        (Some(look), Format::Usd) => Some(colour::Colours::resolve(look, &mut r, &job.input)?),
        (Some(look), _) => bail!(
            "--{}: colours go into a USD export (.usda, .usd) only",
            if look.color.is_some() {
                "color"
            } else {
                "colormap"
            }
        ),
    };
    let (out, file) = OutputFile::create(&job.output, job.force, "output")?;
    let passes = match format {
        Format::Npz => 2,
        Format::Usd => usd::PASSES + colours.is_some() as u64,
        Format::Glb => gltf::PASSES,
        _ => 1,
    };
    let bar = crate::progress::bar(sel.len() * passes, job.quiet, "frames");
    let written = match format {
        Format::Npz => npz::write(&mut r, &job.input, &sel, !job.no_metrics, file, &bar),
        Format::Csv => csv::write(&mut r, &job.input, &sel, file, &bar),
        Format::Xyz => xyz::write(&mut r, &job.input, &sel, file, &bar),
        Format::Usd => usd::write(&mut r, &job.input, &sel, colours.as_ref(), file, &bar),
        Format::Glb => gltf::write(&mut r, &job.input, &sel, file, &bar),
    };
    bar.finish_and_clear();
    let (agents, file) = written.with_context(|| {
        format!(
            "cannot export {} to {}",
            job.input.display(),
            job.output.display()
        )
    })?;
    let bytes = finish(file, &out)?;
    out.commit()?;
    Ok(Report {
        format,
        frames: sel.len(),
        agents,
        dim: r.header().dim,
        bytes,
        secs: t0.elapsed().as_secs_f64(),
    })
}

/// Reads the selected frames of `r` in order, each checked (SIGINT and SIGTERM too), and hands
/// each to `each` with its number and agent count; returns the first frame's agent count.
fn each_frame(
    r: &mut crate::bfs::Reader,
    input: &Path,
    sel: &Selection,
    bar: &indicatif::ProgressBar,
    mut each: impl FnMut(u64, &crate::bfs::Frame, usize) -> Result<()>,
) -> Result<u64> {
    let dim = usize::from(r.header().dim);
    let mut frame = crate::bfs::Frame::empty();
    let mut first = None;
    for k in sel.frames() {
        crate::signal::check()?;
        r.read_frame_into(k, &mut frame)
            .with_context(|| format!("{}: frame {k}", input.display()))?;
        frame.check_finite(dim, k)?;
        let n = frame.agents(dim);
        first.get_or_insert(n as u64);
        each(k, &frame, n)?;
        bar.inc(1);
    }
    Ok(first.unwrap_or(0))
}

/// Flushes the finished output to disk; its size.
fn finish(file: File, out: &OutputFile) -> Result<u64> {
    let path = out.writing_path();
    let bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
    // A device (`/dev/null`) cannot be synced: that is no failure.
    if file.metadata().is_ok_and(|m| m.is_file()) {
        file.sync_data()
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selections() {
        let f = Path::new("r.bfs");
        let fr = |start, end| FrameRange { start, end };
        let s = Selection::new(FrameRange::ALL, 1, 5, f).unwrap();
        assert_eq!((s.range.clone(), s.len()), (0..5, 5));
        let s = Selection::new(fr(Some(1), Some(8)), 3, 10, f).unwrap();
        assert_eq!(s.frames().collect::<Vec<_>>(), vec![1, 4, 7]);
        assert_eq!(s.len(), 3);
        let s = Selection::new(fr(Some(2), None), 4, 6, f).unwrap();
        assert_eq!(s.frames().collect::<Vec<_>>(), vec![2]);
        assert_eq!(s.len(), 1);
        for (spec, every, msg) in [
            (FrameRange::ALL, 0, "--every"),
            (fr(Some(5), None), 1, "starts at frame 5"),
            (fr(None, Some(6)), 1, "ends at frame 6"),
            (fr(Some(3), Some(3)), 1, "is empty"),
        ] {
            let e = Selection::new(spec, every, 5, f).unwrap_err().to_string();
            assert!(e.contains(msg), "{e}");
        }
        let e = Selection::new(FrameRange::ALL, 1, 0, f)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no complete frame"), "{e}");
    }

    #[test]
    fn formats_from_extensions() {
        assert_eq!(Format::from_path(Path::new("a.NPZ")).unwrap(), Format::Npz);
        assert_eq!(
            Format::from_path(Path::new("d/a.csv")).unwrap(),
            Format::Csv
        );
        for p in ["a.xyz", "a.XYZ", "a.extxyz"] {
            assert_eq!(Format::from_path(Path::new(p)).unwrap(), Format::Xyz, "{p}");
        }
        for p in ["a.npy", "a", "npz"] {
            assert!(Format::from_path(Path::new(p)).is_err(), "{p}");
        }
    }
}
