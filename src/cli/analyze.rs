//! `forge analyze`: the correlation length, susceptibility, pair correlation and neighbour
//! anisotropy of a recording ([`crate::analyze`]), as a summary, JSON or a plot.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::analyze::{self, Field, Method, Options};
use crate::bfs::FrameRange;

#[derive(clap::Args, Debug)]
#[command(
    after_help = "C(r) is the connected correlation of the velocities (boids) or headings \
(Vicsek) with each frame's mean removed, normalised to C(0) = 1; ξ is its first zero and χ the \
maximum of its integral (Cavagna et al. 2010). γ_k = ⟨(û·V̂)²⟩ − 1/d is the anisotropy of the \
k-th nearest neighbour's direction û against the flight direction V̂ (Ballerini et al. 2008): 0 \
when isotropic. Error bars: a bootstrap over the analysed frames."
)]
pub struct AnalyzeArgs {
    /// A recording (.bfs, ours or BoidForge's BFS1).
    pub file: PathBuf,
    /// Frames A..B of the recording (B excluded; either may be left out) [default: all].
    #[arg(long, value_name = "A..B")]
    pub frames: Option<FrameRange>,
    /// Analyse every K-th frame of the range, from its first.
    #[arg(long, value_name = "K", default_value_t = 1)]
    pub every: u64,
    /// Bins of C(r) and g(r) between 0 and --r-max.
    #[arg(long, default_value_t = 100)]
    pub bins: usize,
    /// The largest distance of C(r) and g(r) [default: half the box's shortest side; in a
    /// periodic world it may not be more].
    #[arg(long, value_name = "R")]
    pub r_max: Option<f64>,
    /// The neighbour anisotropy for k = 1..K.
    #[arg(long, value_name = "K", default_value_t = 20)]
    pub k_max: usize,
    /// What is correlated [default: heading for Vicsek, velocity for boids].
    #[arg(long, value_enum)]
    pub field: Option<Field>,
    /// The mean removed from each velocity: each frame's own, or the mean over all the
    /// analysed frames.
    #[arg(long, value_enum, default_value_t = analyze::Mean::Frame)]
    pub mean: analyze::Mean,
    /// Pair sums: exact (every pair, O(N²)), grid (FFT, O(N + M log M)), or auto (exact up to
    /// 5000 agents).
    #[arg(long, value_enum, default_value_t = Method::Auto)]
    pub method: Method,
    /// Bootstrap resamples of the frames for the error bars (0: none; at most 100000).
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub bootstrap: usize,
    /// Print the whole analysis as JSON on standard output instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// Also draw C(r), with ξ marked, and g(r) (PNG).
    #[arg(long, value_name = "OUT.png")]
    pub plot: Option<PathBuf>,
    /// Overwrite the plot if it exists.
    #[arg(long)]
    pub force: bool,
}

pub fn analyze_cmd(a: AnalyzeArgs) -> Result<ExitCode> {
    if let Some(p) = &a.plot {
        crate::plot::check_output(p, a.force, "--plot")?;
    }
    let mut reader = crate::bfs::open_recording(&a.file)?;
    for w in reader.warnings() {
        eprintln!("warning: {}: {w}", a.file.display());
    }
    if reader.frame_count() == 0 {
        anyhow::bail!("{}: {}", a.file.display(), analyze::NO_FRAMES);
    }
    let frames = a
        .frames
        .unwrap_or(FrameRange::ALL)
        .within(reader.frame_count(), &a.file)?;
    let o = Options {
        frames,
        every: a.every,
        bins: a.bins,
        r_max: a.r_max,
        k_max: a.k_max,
        field: a.field,
        mean: a.mean,
        method: a.method,
        bootstrap: a.bootstrap,
    };
    let result = analyze::analyze(&mut reader, &o)?;
    let name = a.file.display().to_string();
    if let Some(p) = &a.plot {
        let title = a
            .file
            .file_name()
            .map_or(name.clone(), |f| f.to_string_lossy().into_owned());
        crate::plot::correlation_png(p, &title, &result)?;
    }
    let mut out = std::io::stdout().lock();
    let text = if a.json {
        serde_json::to_string(&result)?
    } else {
        result.report(&name)
    };
    writeln!(out, "{text}")
        .and_then(|()| out.flush())
        .context("cannot write to standard output")?;
    Ok(ExitCode::SUCCESS)
}
