//! `forge sweep` and `forge sweep merge`: their flags, handed to the library's sweep
//! ([`crate::sweep::run`], [`crate::sweep::merge`]).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Result};

use crate::sweep;

/// `forge sweep …` or `forge sweep merge …`.
pub fn sweep_cmd(a: SweepArgs) -> Result<ExitCode> {
    if let Some(SweepCommand::Merge(m)) = a.command {
        sweep::merge(sweep::Merge {
            parts: m.parts,
            output: m.output,
            plot: m.plot,
            plot_y: m.plot_y,
            force: m.force,
            quiet: m.quiet,
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    let (Some(scene), Some(output)) = (a.scene, a.output) else {
        bail!("forge sweep: give a SCENE, --vary and --output (or: forge sweep merge)");
    };
    sweep::run(sweep::Request {
        scene,
        vary: a.vary,
        seeds: a.seeds,
        equilibrate: a.equilibrate,
        measure: a.measure,
        output,
        plot: a.plot,
        plot_y: a.plot_y,
        jobs: a.jobs,
        resume: a.resume,
        force: a.force,
        quiet: a.quiet,
        shard: a.shard,
    })?;
    Ok(ExitCode::SUCCESS)
}

#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct SweepArgs {
    #[command(subcommand)]
    pub command: Option<SweepCommand>,
    /// A scene file (JSON) or the name of a built-in scene (see `forge scenes`).
    #[arg(required = true)]
    pub scene: Option<String>,
    /// NAME=VALUES: a parameter and its values, as a range `a:b:step` (b included within
    /// rounding) or a list `a,b,c`; `pi` may follow a number (`0:2pi:0.1pi`). Repeat it to vary
    /// several parameters: every combination runs. NAME is one of noise, v0, r, noise_kind
    /// (vicsek; noise_kind takes a list of words, `noise_kind=angular,vectorial`),
    /// r_sep, r_ali, r_coh, w_sep, w_ali, w_coh, max_force, v_min, v_max, k (boids; k makes
    /// alignment and cohesion topological over the k nearest, `k=1,3,7,20`), agents,
    /// world (side L of a square/cubic box) and density (N/L^dim: sets L from N, or N from L
    /// when world is varied instead of agents).
    #[arg(long = "vary", value_name = "NAME=VALUES", required = true)]
    pub vary: Vec<String>,
    /// Runs per point, with seeds scene.seed + 0, 1, ..., SEEDS-1.
    #[arg(long, default_value_t = 3)]
    pub seeds: u32,
    /// Steps run before measuring.
    #[arg(long, default_value_t = 2500)]
    pub equilibrate: u64,
    /// Steps measured (the order parameter is sampled after each of them).
    #[arg(long, default_value_t = 1500)]
    pub measure: u64,
    /// The CSV written: one row per point.
    #[arg(short, long, value_name = "OUT.csv", required = true)]
    pub output: Option<PathBuf>,
    /// Also plot the order parameter against the first varied parameter (PNG).
    #[arg(long, value_name = "OUT.png")]
    pub plot: Option<PathBuf>,
    /// What the plot shows: the order parameter, its Binder cumulant (the crossing of a
    /// sweep over sizes) or its susceptibility.
    #[arg(long, value_enum, default_value_t = sweep::PlotY::Order, requires = "plot")]
    pub plot_y: sweep::PlotY,
    /// Runs at once [default: all cores]. Each run uses one thread. The CSV does not depend on it.
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Continue an interrupted sweep (OUT.partial) or extend a finished one (OUT): points
    /// already there are not run again.
    #[arg(long, conflicts_with = "force")]
    pub resume: bool,
    /// Overwrite the outputs (and discard an interrupted sweep's OUT.partial).
    #[arg(long)]
    pub force: bool,
    /// No progress bar and no summary line.
    #[arg(short, long)]
    pub quiet: bool,
    /// Run only shard I (0-based) of N: points I, I+N, I+2N, ... of the point list, into its
    /// own CSV (which starts with a `# forge sweep shard` identity line); join the shards with
    /// `forge sweep merge`. `auto` (or `auto/N`) reads I and N from a Slurm job array, a
    /// Kubernetes Indexed Job or FORGE_TASK_INDEX/FORGE_TASK_COUNT.
    #[arg(long, value_name = "I/N|auto", value_parser = crate::engine::parse_task_spec)]
    pub shard: Option<crate::engine::TaskSpec>,
}

/// `forge sweep merge`.
#[derive(clap::Subcommand, Debug)]
pub enum SweepCommand {
    /// Join the shards of `forge sweep ... --shard I/N` into the CSV (and plot) the unsharded
    /// sweep writes, byte for byte, after checking they are every shard of one sweep, once.
    Merge(MergeArgs),
}

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Shards may be given in any order. They must be every shard of one \
sweep (the same scene, --vary values, --seeds, --equilibrate and --measure), each once; the \
scene is read from the shards, not from a file. The CSV written is byte for byte the one the \
sweep writes unsharded."
)]
pub struct MergeArgs {
    /// The shards' CSV files (from `forge sweep … --shard I/N`).
    #[arg(required = true, value_name = "PARTS")]
    pub parts: Vec<PathBuf>,
    /// The merged CSV: one row per point, in point order.
    #[arg(short, long, value_name = "OUT.csv")]
    pub output: PathBuf,
    /// Also plot the order parameter against the first varied parameter (PNG).
    #[arg(long, value_name = "OUT.png")]
    pub plot: Option<PathBuf>,
    /// What the plot shows: the order parameter, its Binder cumulant (the crossing of a
    /// sweep over sizes) or its susceptibility.
    #[arg(long, value_enum, default_value_t = sweep::PlotY::Order, requires = "plot")]
    pub plot_y: sweep::PlotY,
    /// Overwrite the outputs.
    #[arg(long)]
    pub force: bool,
    /// No summary line.
    #[arg(short, long)]
    pub quiet: bool,
}
