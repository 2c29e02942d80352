//! `forge simulate`: a scene, through the solver, into a recording ([`crate::simulate`]).

use std::path::Path;
use std::process::ExitCode;

use anyhow::{bail, Result};

use super::SimulateArgs;
use crate::scene::{self, Scene};
use crate::signal;
use crate::simulate::{self as sim, scene_inputs, Outcome, Setup, Unfinished};
use crate::units::{bytes, si};

pub fn simulate(a: SimulateArgs) -> Result<ExitCode> {
    let scene = Scene::load(&a.scene)?;
    let output = match &a.output {
        Some(p) => p.clone(),
        None => crate::output::default_name(None, &scene.name, "bfs")?,
    };
    record(scene, &output, &a, Unfinished::Keep)
}

/// Simulates `scene` (with `a`'s overrides applied) into a recording at `out_path`;
/// `forge run` calls this with the scene it has loaded already. Prints the summary line, or
/// the divergence (a failure exit status: the recording keeps the good frames).
pub fn record(
    mut scene: Scene,
    out_path: &Path,
    a: &SimulateArgs,
    unfinished: Unfinished,
) -> Result<ExitCode> {
    a.overrides.apply(&mut scene)?;
    if let Some(s) = a.search {
        scene.search = s;
    }
    if a.threads == Some(0) {
        bail!("--threads: must be at least 1");
    }
    crate::sim::cpu::check_threads("--threads", a.threads)?;
    let setup = Setup {
        inputs: scene_inputs(Some(&a.scene), &scene),
        threads: a.threads,
        backend: a.backend,
        force: a.force,
        quiet: a.quiet,
        agents_from: a.overrides.agents_from(),
        unfinished,
    };
    let name = scene.name.clone();
    let (model, dim) = (scene.model, scene.dim);
    let o = sim::record(scene, out_path, &setup, &mut signal::caught)?;
    if let Some(msg) = o.diverged_message(out_path) {
        eprintln!("error: {msg}");
        return Ok(ExitCode::FAILURE);
    }
    if !a.quiet {
        report(&name, model, dim, &o, out_path);
    }
    Ok(ExitCode::SUCCESS)
}

/// The summary line of a finished recording.
fn report(name: &str, model: scene::Model, dim: usize, o: &Outcome, out_path: &Path) {
    let n = o.agents;
    let size = std::fs::metadata(out_path).map(|m| m.len()).unwrap_or(0);
    let rate = o.steps as f64 / o.secs.max(1e-9);
    eprintln!(
        "{}: {} steps of {} {} ({}D, {}, {} thread{}) in {:.2} s: {:.0} steps/s, {} agent-steps/s; final polarization {:.3} -> {} ({} frames, {})",
        name,
        o.steps,
        n,
        if model == scene::Model::Vicsek { "particles" } else { "boids" },
        dim,
        format!("{:?}", o.search).to_lowercase(),
        o.threads,
        if o.threads == 1 { "" } else { "s" },
        o.secs,
        rate,
        si(rate * n as f64),
        o.polarization,
        out_path.display(),
        o.frames,
        bytes(size),
    );
}
