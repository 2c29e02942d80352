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
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};

pub use param::{fmt_value, parse_vary, Param, Vary, MAX_VALUES};
pub use plot::PlotY;
pub use points::Point;
pub use shard::{merge, Merge};
pub use table::STAT_COLUMNS;

use crate::engine::Task;
use crate::output::Claim;
use crate::scene::{self, Layout, Scene};
use crate::sim::init;
use points::{check_varies, points};
use stats::Settings;
use table::{header, Earlier, PartialCsv, Row};

/// A sweep as asked for (`forge sweep`'s flags): checked by [`run`] before any run starts.
#[derive(Debug, Clone)]
pub struct Request {
    /// A scene file (JSON) or the name of a built-in scene.
    pub scene: String,
    /// `NAME=VALUES` expressions ([`parse_vary`]); every combination of their values runs.
    pub vary: Vec<String>,
    /// Runs per point, with seeds scene.seed + 0, 1, ..., seeds-1.
    pub seeds: u32,
    /// Steps run before measuring, then steps measured.
    pub equilibrate: u64,
    pub measure: u64,
    /// The CSV written (one row per point), and the plot.
    pub output: PathBuf,
    pub plot: Option<PathBuf>,
    /// What the plot shows.
    pub plot_y: PlotY,
    /// Runs at once (`None`: all cores).
    pub jobs: Option<usize>,
    /// Continue an interrupted sweep, or extend a finished one.
    pub resume: bool,
    /// Overwrite the outputs.
    pub force: bool,
    /// No progress bar and no summary line.
    pub quiet: bool,
    /// Run only this shard of the points.
    pub shard: Option<crate::engine::TaskSpec>,
}

impl Request {
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

/// Runs a sweep: every check first, then every point not finished yet.
pub fn run(a: Request) -> Result<()> {
    let plan = Plan::resolve(a)?;
    plan.run()
}

/// A sweep resolved from its flags: every flag checked, the points made, the outputs checked
/// and claimed, an earlier run's rows read (`--resume`); nothing has run yet.
struct Plan {
    base: Scene,
    varies: Vec<Vary>,
    points: Vec<Point>,
    settings: Settings,
    /// The points this run owns (indices into `points`): every one, or a shard's share.
    share: Vec<usize>,
    /// `--shard`, and the identity line its CSV starts with.
    shard: Option<Task>,
    shard_line: Option<String>,
    out: PathBuf,
    /// `OUT.partial`, where rows go as they finish.
    partial: PathBuf,
    plot: Option<PathBuf>,
    plot_y: PlotY,
    jobs: Option<usize>,
    quiet: bool,
    resume: bool,
    /// `--resume`'s earlier rows, when there was a file to resume.
    earlier: Option<Earlier>,
    /// The outputs, locked for the whole sweep.
    _claim: Claim,
}

impl Plan {
    /// Every check, in the order its errors are reported: the scene, the settings, the
    /// `--vary` expressions and the points they make, the run count, the shard, the outputs,
    /// and last the rows of the file `--resume` continues.
    fn resolve(a: Request) -> Result<Plan> {
        let (scene_arg, out) = (a.scene.as_str(), a.output.clone());
        let mut base = Scene::load(scene_arg)?;
        check_settings(&a)?;
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
        check_run_count(points.len(), a.seeds)?;
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
        let partial = table::partial_path(&out);
        let claim = claim_outputs(&a, scene_arg, &base, &out, &partial)?;
        let earlier = match a.resume {
            true => earlier_rows(&out, &partial, &varies, settings, shard_line.as_deref())?,
            false => None,
        };
        Ok(Plan {
            base,
            varies,
            points,
            settings,
            share,
            shard,
            shard_line,
            out,
            partial,
            plot: a.plot,
            plot_y: a.plot_y,
            jobs: a.jobs,
            quiet: a.quiet,
            resume: a.resume,
            earlier,
            _claim: claim,
        })
    }

    /// Runs every point of the share not finished yet, appending each row to `OUT.partial` as
    /// its point finishes; then writes the rows in point order under `OUT`, and the plot.
    fn run(self) -> Result<()> {
        if let (Some(t), false) = (self.shard, self.quiet) {
            log::info!(
                "shard {t}: {} of the {} points",
                self.share.len(),
                self.points.len()
            );
        }
        if let Some(e) = &self.earlier {
            e.warn_if_cut();
        }
        let (mut done, extra) = self.sort_earlier();
        let todo: Vec<usize> = self
            .share
            .iter()
            .copied()
            .filter(|&i| !done.contains_key(&self.points[i].key))
            .collect();
        self.report_resume(done.len(), extra.len(), todo.len());
        self.check_earlier(&done)?;

        // The .partial starts with the header and every row already finished.
        let head = match &self.shard_line {
            Some(l) => format!("{l}\n{}", header(&self.varies)),
            None => header(&self.varies),
        };
        let earlier = self.earlier.iter().flat_map(|e| &e.rows);
        let mut csv = PartialCsv::start(&self.partial, &head, earlier)?;
        let (points, settings) = (&self.points, self.settings);
        let ran = runs::run_points(
            points,
            &todo,
            &self.varies,
            settings,
            self.jobs,
            self.quiet,
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
        let rows = self.rows_in_order(&done)?;
        csv.finish(&self.out, &head, rows.iter().copied().chain(&extra))?;
        if let Some(path) = &self.plot {
            plot::plot_sweep(
                path,
                &self.base,
                &self.varies,
                points,
                &rows,
                (settings, self.plot_y),
            )?;
        }
        if !self.quiet {
            self.summary(&ran);
        }
        Ok(())
    }

    /// The earlier rows, split into this run's finished points (by key) and the rows that are
    /// not points of it (kept, after the others).
    fn sort_earlier(&self) -> (HashMap<Vec<String>, Row>, Vec<Row>) {
        let mut done: HashMap<Vec<String>, Row> = HashMap::new();
        let mut extra = Vec::new();
        let wanted: HashSet<&Vec<String>> =
            self.share.iter().map(|&i| &self.points[i].key).collect();
        for row in self.earlier.iter().flat_map(|e| &e.rows) {
            if wanted.contains(&row.key) {
                done.insert(row.key.clone(), row.clone());
            } else {
                extra.push(row.clone());
            }
        }
        (done, extra)
    }

    /// A resumed file holds no record of the scene its rows came from: its cheapest finished
    /// point (`done`) runs again, and its row must come out as the file has it (a sweep gives
    /// the same bytes whatever the jobs or shards), else the file is another scene's,
    /// settings' or forge's, and its rows are not kept.
    fn check_earlier(&self, done: &HashMap<Vec<String>, Row>) -> Result<()> {
        let Some(e) = &self.earlier else {
            return Ok(());
        };
        let Some(i) = self
            .share
            .iter()
            .copied()
            .filter(|&i| done.contains_key(&self.points[i].key))
            .min_by_key(|&i| (self.points[i].scene.agents, i))
        else {
            return Ok(());
        };
        let point = &self.points[i];
        if !self.quiet {
            log::info!(
                "checking {} against this sweep: running {} again",
                e.from.display(),
                point.at(&self.varies)
            );
        }
        let mut now = None;
        let ran = runs::run_points(
            &self.points,
            &[i],
            &self.varies,
            self.settings,
            self.jobs,
            true,
            |p, stats| {
                now = Some(Row::ran(&self.points[p], stats, self.settings));
                Ok(())
            },
        );
        if let Some(err) = ran.failure {
            return Err(err.context(format!("--resume: checking {}", e.from.display())));
        }
        let (was, now) = (&done[&point.key], now.expect("the point ran"));
        if !was.same_numbers(&now) {
            let (was, now) = (was.line(), now.line());
            bail!(
                "--resume: {} was not made by this sweep: its row for {} is\n  {was}\nbut this \
                 scene and these settings give\n  {now}\n(resume with the scene it was made \
                 from, or start over with --force)",
                e.from.display(),
                point.at(&self.varies)
            );
        }
        Ok(())
    }

    /// What `--resume` found: `done` finished points, `extra` rows kept, `todo` points to run.
    fn report_resume(&self, done: usize, extra: usize, todo: usize) {
        if let Some(e) = &self.earlier {
            log::info!(
                "resuming from {}: skipping {done} finished point{} of {}, running {todo}{}",
                e.from.display(),
                plural(done),
                self.share.len(),
                if extra == 0 {
                    String::new()
                } else {
                    format!(
                        " (keeping {extra} row{} that are not points of this sweep)",
                        plural(extra)
                    )
                }
            );
        } else if self.resume {
            log::info!(
                "nothing to resume ({} and {} do not exist): starting the sweep",
                self.partial.display(),
                self.out.display()
            );
        }
    }

    /// The share's rows in point order, from `done` (which holds every one of them).
    fn rows_in_order<'a>(&self, done: &'a HashMap<Vec<String>, Row>) -> Result<Vec<&'a Row>> {
        self.share
            .iter()
            .map(|&i| &self.points[i])
            .map(|p| {
                done.get(&p.key).ok_or_else(|| {
                    anyhow!("internal: no row for the point at {}", p.at(&self.varies))
                })
            })
            .collect()
    }

    /// The line that ends a sweep: what ran, how long it took, where it went.
    fn summary(&self, ran: &runs::Outcome) {
        let s = self.settings;
        log::info!(
            "sweep {}{}: {} points x {} seed{} ({} + {} steps): ran {} point{} ({} runs) on {} job{} in {:.2} s wall, {:.2} s of runs ({:.2}x) -> {}{}",
            self.base.name,
            self.shard.map(|t| format!(" shard {t}")).unwrap_or_default(),
            self.share.len(),
            s.seeds,
            plural(s.seeds as usize),
            s.equilibrate,
            s.measure,
            ran.finished,
            plural(ran.finished),
            ran.runs,
            ran.jobs,
            plural(ran.jobs),
            ran.wall,
            ran.run_secs,
            ran.run_secs / ran.wall.max(1e-9),
            self.out.display(),
            self.plot
                .as_ref()
                .map(|p| format!(", {}", p.display()))
                .unwrap_or_default(),
        );
    }
}

/// `--seeds`, `--measure`, `--equilibrate` and `--jobs`.
fn check_settings(a: &Request) -> Result<()> {
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
    crate::sim::cpu::check_threads("--jobs", a.jobs)
}

/// The whole sweep's runs (every point, whatever the shard) against `MAX_RUNS`.
fn check_run_count(points: usize, seeds: u32) -> Result<()> {
    let runs = points as u64 * u64::from(seeds);
    if runs > MAX_RUNS {
        bail!(
            "--seeds: {points} point{} x {seeds} seeds = {runs} runs, more than the {MAX_RUNS} a \
             sweep may have (fewer seeds or fewer values)",
            plural(points),
        );
    }
    Ok(())
}

/// Refuses outputs that would lose work (an interrupted or finished sweep without `--resume`
/// or `--force`, an existing plot), then claims `OUT` (`OUT.partial` with it) and `--plot`
/// against the scene's files and each other, for the whole sweep.
fn claim_outputs(
    a: &Request,
    scene_arg: &str,
    base: &Scene,
    out: &Path,
    partial: &Path,
) -> Result<Claim> {
    table::check_csv_output(out, partial, a.resume, a.force)?;
    // --resume may redraw the plot of the sweep it continues, not a file of the same name
    // when there is no such sweep.
    let resuming = a.resume && (out.exists() || partial.exists());
    if let Some(p) = &a.plot {
        crate::plot::check_output(p, a.force || resuming, "--plot")?;
    }
    // Existing files were checked above, with --resume in mind.
    let mut outputs: Vec<(&Path, &str)> = vec![(out, "--output")];
    if let Some(p) = &a.plot {
        outputs.push((p, "--plot"));
    }
    let mut inputs: Vec<(&Path, &str)> = Vec::new();
    if Path::new(scene_arg).is_file() {
        inputs.push((Path::new(scene_arg), "scene file"));
    }
    if let Some(p) = &base.init.resolved_path {
        inputs.push((p, "scene.init.path"));
    }
    crate::output::claim(&outputs, &inputs, true)
}

/// The rows `--resume` continues from: an interrupted sweep's `.partial` first, else a finished
/// CSV; `None` when neither exists.
fn earlier_rows(
    out: &Path,
    partial: &Path,
    varies: &[Vary],
    settings: Settings,
    shard_line: Option<&str>,
) -> Result<Option<Earlier>> {
    let from = if partial.exists() {
        partial
    } else if out.exists() {
        out
    } else {
        return Ok(None);
    };
    table::read_earlier(from, varies, settings, shard_line).map(Some)
}
