//! `forge sweep`: a scene run over every combination of some parameters' values, several seeds
//! per point, in parallel; the order parameter's statistics per point go to a CSV and a plot.
//!
//! Each run is single-threaded and the runs are spread over the cores, largest first, so a
//! sweep of many small systems keeps the whole machine busy. A run is a pure function of its
//! scene (seed included) and the statistics are combined in seed order, so the CSV is too: the
//! same sweep gives the same bytes, whatever `--jobs` and whatever order the runs finish in.
//!
//! Files: finished points are appended (and flushed) to `OUT.partial` as they complete, so an
//! interrupted sweep keeps them; when every point is done the rows are rewritten in point
//! order under `OUT` and the `.partial` is removed. `--resume` continues from `OUT.partial` (or
//! extends a finished `OUT`), skipping the points already there.

mod param;
mod plot;
mod points;
mod runs;
mod shard;
mod stats;
mod table;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Result};

pub use param::{fmt_value, parse_vary, Param, Vary, MAX_VALUES};
pub use points::Point;
pub use shard::MergeArgs;
pub use table::STAT_COLUMNS;

use crate::scene::{self, Layout, Scene};
use crate::sim::init;
use points::{check_varies, points};
use stats::Settings;
use table::{header, PartialCsv, Row};

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

impl SweepArgs {
    fn settings(&self) -> Settings {
        Settings {
            seeds: self.seeds,
            equilibrate: self.equilibrate,
            measure: self.measure,
        }
    }
}

/// Most runs (points x seeds) in one sweep: each is a whole simulation, so a million is
/// already days of work; the bound keeps the run list and the per-seed results (tens of bytes
/// a run) small: without it, `--seeds 4294967295` would ask for 68 GB before the first step.
pub const MAX_RUNS: u64 = 1_000_000;

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

pub fn run(a: SweepArgs) -> Result<ExitCode> {
    if let Some(SweepCommand::Merge(m)) = a.command {
        return shard::merge(m);
    }
    let (Some(scene_arg), Some(out)) = (a.scene.as_deref(), a.output.clone()) else {
        bail!("forge sweep: give a SCENE, --vary and --output (or: forge sweep merge)");
    };
    let mut base = Scene::load(scene_arg)?;
    if a.seeds == 0 {
        bail!("--seeds: must be at least 1");
    }
    if a.measure == 0 {
        bail!("--measure: must be at least 1 step");
    }
    if a.equilibrate > scene::MAX_STEPS || a.measure > scene::MAX_STEPS - a.equilibrate {
        bail!(
            "--equilibrate + --measure: must be at most {} steps",
            scene::MAX_STEPS
        );
    }
    if a.jobs == Some(0) {
        bail!("--jobs: must be at least 1");
    }
    crate::sim::cpu::check_threads("--jobs", a.jobs)?;
    let settings = a.settings();
    let varies = a
        .vary
        .iter()
        .map(|e| parse_vary(e))
        .collect::<Result<Vec<_>>>()?;
    check_varies(&base, &varies)?;
    if base.init.layout == Layout::File {
        // The agent count comes from the file: learn it once (and check the file) up front.
        let st = init::initial_state(&base)?;
        base.agents = st.n as u32;
    }
    let points = points(&base, &varies)?;
    let runs = points.len() as u64 * u64::from(a.seeds);
    if runs > MAX_RUNS {
        bail!(
            "--seeds: {} point{} x {} seeds = {runs} runs, more than the {MAX_RUNS} a sweep may \
             have (fewer seeds or fewer values)",
            points.len(),
            plural(points.len()),
            a.seeds
        );
    }
    // A shard runs its share of the points; its CSV starts with its identity line.
    let shard = match a.shard {
        Some(spec) => Some(spec.resolve("--shard")?),
        None => None,
    };
    let share: Vec<usize> = match shard {
        Some(t) => shard::share(points.len(), t)?,
        None => (0..points.len()).collect(),
    };
    let shard_line =
        shard.map(|t| shard::Identity::new(&base, &varies, &points, settings, t).line());
    if let (Some(t), Some(_)) = (shard, &a.plot) {
        bail!("--plot: shard {t} holds part of the sweep; plot the merged shards (forge sweep merge ... --plot)");
    }
    if let (Some(t), false) = (shard, a.quiet) {
        eprintln!("shard {t}: {} of the {} points", share.len(), points.len());
    }

    let partial = table::partial_path(&out);
    table::check_csv_output(&out, &partial, a.resume, a.force)?;
    if let Some(p) = &a.plot {
        crate::plot::check_output(p, a.force || a.resume, "--plot")?;
    }
    // The outputs against the scene's files and each other, and locked for the whole sweep
    // (OUT.partial included); existing files were checked above, with --resume in mind.
    let mut outputs: Vec<(&std::path::Path, &str)> = vec![(&out, "--output")];
    if let Some(p) = &a.plot {
        outputs.push((p, "--plot"));
    }
    let mut inputs: Vec<(&std::path::Path, &str)> = Vec::new();
    if std::path::Path::new(scene_arg).is_file() {
        inputs.push((std::path::Path::new(scene_arg), "scene file"));
    }
    if let Some(p) = &base.init.resolved_path {
        inputs.push((p, "scene.init.path"));
    }
    let _claim = crate::output::claim(&outputs, &inputs, true)?;

    // Earlier rows: an interrupted sweep's .partial first, else a finished CSV.
    let earlier = if a.resume {
        if partial.exists() {
            Some(table::read_earlier(
                &partial,
                &varies,
                settings,
                shard_line.as_deref(),
            )?)
        } else if out.exists() {
            Some(table::read_earlier(
                &out,
                &varies,
                settings,
                shard_line.as_deref(),
            )?)
        } else {
            None
        }
    } else {
        None
    };
    let mut done: HashMap<Vec<String>, Row> = HashMap::new();
    let mut extra = Vec::new(); // earlier rows that are not points of this sweep
    let wanted: HashSet<&Vec<String>> = share.iter().map(|&i| &points[i].key).collect();
    if let Some(e) = &earlier {
        for row in &e.rows {
            if wanted.contains(&row.key) {
                done.insert(row.key.clone(), row.clone());
            } else {
                extra.push(row.clone());
            }
        }
    }
    let todo: Vec<usize> = share
        .iter()
        .copied()
        .filter(|&i| !done.contains_key(&points[i].key))
        .collect();
    if let Some(e) = &earlier {
        eprintln!(
            "resuming from {}: skipping {} finished point{} of {}, running {}{}",
            e.from.display(),
            done.len(),
            plural(done.len()),
            share.len(),
            todo.len(),
            if extra.is_empty() {
                String::new()
            } else {
                format!(
                    " (keeping {} row{} that are not points of this sweep)",
                    extra.len(),
                    plural(extra.len())
                )
            }
        );
    } else if a.resume {
        eprintln!(
            "nothing to resume ({} and {} do not exist): starting the sweep",
            partial.display(),
            out.display()
        );
    }

    // The .partial starts with the header and every row already finished.
    let head = match &shard_line {
        Some(l) => format!("{l}\n{}", header(&varies)),
        None => header(&varies),
    };
    let mut csv = PartialCsv::start(&partial, &head, earlier.iter().flat_map(|e| &e.rows))?;
    let ran = runs::run_points(
        &points,
        &todo,
        &varies,
        settings,
        a.jobs,
        a.quiet,
        |p, stats| {
            let row = Row::ran(&points[p], stats, settings);
            csv.append(&row)?;
            done.insert(row.key.clone(), row);
            Ok(())
        },
    );
    if let Some(e) = ran.failure {
        return Err(e.context(format!(
            "the {} point{} finished are kept in {} (run again with --resume to continue)",
            ran.finished,
            plural(ran.finished),
            csv.path().display()
        )));
    }

    // Every point done: the rows in point order (then any kept extras) under the final name.
    let rows = share
        .iter()
        .map(|&i| &points[i])
        .map(|p| {
            done.get(&p.key)
                .ok_or_else(|| anyhow!("internal: no row for the point at {}", p.at(&varies)))
        })
        .collect::<Result<Vec<&Row>>>()?;
    csv.finish(&out, &head, rows.iter().copied().chain(&extra))?;

    if let Some(path) = &a.plot {
        plot::plot_sweep(path, &base, &varies, &points, &rows, settings)?;
    }
    if !a.quiet {
        eprintln!(
            "sweep {}{}: {} points x {} seed{} ({} + {} steps): ran {} point{} ({} runs) on {} job{} in {:.2} s wall, {:.2} s of runs ({:.2}x) -> {}{}",
            base.name,
            shard.map(|t| format!(" shard {t}")).unwrap_or_default(),
            share.len(),
            a.seeds,
            plural(a.seeds as usize),
            a.equilibrate,
            a.measure,
            ran.finished,
            plural(ran.finished),
            ran.runs,
            ran.jobs,
            plural(ran.jobs),
            ran.wall,
            ran.run_secs,
            ran.run_secs / ran.wall.max(1e-9),
            out.display(),
            a.plot
                .as_ref()
                .map(|p| format!(", {}", p.display()))
                .unwrap_or_default(),
        );
    }
    Ok(ExitCode::SUCCESS)
}
