//! The runs of a sweep, spread over the cores: every seed of every point to do, each run on one
//! thread, the largest first so the small ones fill in at the end. A point's statistics are
//! handed on as soon as its last seed is in, combined in seed order whatever order the runs
//! finished in.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Instant;

use anyhow::Result;

use super::param::Vary;
use super::points::Point;
use super::stats::{combine, run_one, Moments, Settings, Stats};

/// What the runs came to.
pub struct Outcome {
    /// Points whose every seed ran and that were handed on.
    pub finished: usize,
    pub runs: usize,
    /// Runs at once.
    pub jobs: usize,
    /// Seconds: wall-clock, and summed over the runs.
    pub wall: f64,
    pub run_secs: f64,
    /// The first failure (of a run, or of handing a point on); nothing new starts after it.
    pub failure: Option<anyhow::Error>,
}

/// Every run of the points `todo` as (point, seed index), the largest first so the small ones
/// fill in at the end, and what they all cost (agent-steps, the progress bar's length).
fn schedule(points: &[Point], todo: &[usize], settings: Settings) -> (Vec<(usize, u32)>, u64) {
    let steps = settings.equilibrate + settings.measure;
    let mut runs: Vec<(usize, u32)> = todo
        .iter()
        .flat_map(|&p| (0..settings.seeds).map(move |k| (p, k)))
        .collect();
    let cost = |p: usize| points[p].scene.agents.max(1) as u64 * steps;
    runs.sort_by_key(|&(p, k)| (std::cmp::Reverse(cost(p)), p, k));
    let total_cost: u64 = runs.iter().map(|&(p, _)| cost(p)).sum();
    (runs, total_cost)
}

/// A progress bar of `total` agent-steps on stderr; hidden when `hide` or when stderr is not a
/// terminal.
fn progress_bar(hide: bool, total: u64) -> indicatif::ProgressBar {
    if hide || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let b = indicatif::ProgressBar::new(total);
    b.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:40.cyan/blue} {msg}  {percent}%  elapsed {elapsed}  ETA {eta}",
        )
        .expect("valid template")
        .progress_chars("█▉▊▋▌▍▎▏ "),
    );
    b
}

/// Run every seed of the points `todo`, `jobs` at once [default: all cores], with a progress
/// bar unless `quiet`. `finished(p, stats)` gets point `p` when its last seed is in.
pub fn run_points(
    points: &[Point],
    todo: &[usize],
    varies: &[Vary],
    settings: Settings,
    jobs: Option<usize>,
    quiet: bool,
    mut finished: impl FnMut(usize, Stats) -> Result<()>,
) -> Outcome {
    let (runs, total_cost) = schedule(points, todo, settings);
    let cores = std::thread::available_parallelism()
        .map(|x| x.get())
        .unwrap_or(1);
    let jobs = jobs.unwrap_or(cores).min(runs.len()).max(1);
    let bar = progress_bar(quiet || runs.is_empty(), total_cost);
    let points_left = todo.len();
    bar.set_message(format!("0/{points_left} points"));

    let t0 = Instant::now();
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let mut results: Vec<Vec<Option<Moments>>> = vec![Vec::new(); points.len()];
    for &p in todo {
        results[p] = vec![None; settings.seeds as usize];
    }
    let mut done = 0usize;
    let mut run_secs = 0.0f64;
    let mut failure: Option<anyhow::Error> = None;
    let (tx, rx) = mpsc::channel::<(usize, Result<Moments>, f64)>();
    std::thread::scope(|s| {
        for _ in 0..jobs {
            let tx = tx.clone();
            let (next, stop, runs, bar) = (&next, &stop, &runs, &bar);
            let (eq, meas) = (settings.equilibrate, settings.measure);
            s.spawn(move || loop {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(p, k)) = runs.get(i) else { break };
                let mut scene = points[p].scene.clone();
                scene.seed = scene.seed.wrapping_add(k as u64);
                let t = Instant::now();
                let r = run_one(&scene, eq, meas, &|c| bar.inc(c));
                if tx.send((i, r, t.elapsed().as_secs_f64())).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        for (i, r, secs) in rx {
            run_secs += secs;
            let (p, k) = runs[i];
            let m = match r {
                Ok(m) => m,
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    if failure.is_none() {
                        failure = Some(e.context(format!(
                            "the run at {} with seed {} failed",
                            points[p].at(varies),
                            points[p].scene.seed.wrapping_add(k as u64)
                        )));
                    }
                    continue;
                }
            };
            results[p][k as usize] = Some(m);
            let all: Option<Vec<Moments>> = results[p].iter().copied().collect();
            if let Some(ms) = all {
                if let Err(e) = finished(p, combine(&ms)) {
                    stop.store(true, Ordering::Relaxed);
                    if failure.is_none() {
                        failure = Some(e);
                    }
                    continue;
                }
                done += 1;
                bar.set_message(format!("{done}/{points_left} points"));
            }
        }
    });
    bar.finish_and_clear();
    Outcome {
        finished: done,
        runs: runs.len(),
        jobs,
        wall: t0.elapsed().as_secs_f64(),
        run_secs,
        failure,
    }
}
