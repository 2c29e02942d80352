//! `forge simulate`: a scene, through the solver, into a recording.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{anyhow, bail, Result};

use super::SimulateArgs;
use crate::bfs::{self, Header};
use crate::metrics;
use crate::output::{self, OutputFile};
use crate::record::Recorder;
use crate::scene::{self, Scene, Search};
use crate::signal::{self, Interrupted};
use crate::sim::backend::{self, AnySolver, Schedule};
use crate::sim::Rules;
use crate::sim::{init, Params, RecordError};
use crate::units::{bytes, si};

pub fn simulate(a: SimulateArgs) -> Result<ExitCode> {
    let scene = Scene::load(&a.scene)?;
    let output = match &a.output {
        Some(p) => p.clone(),
        None => output::default_name(None, &scene.name, "bfs")?,
    };
    record(scene, &output, &a, Unfinished::Keep)
}

/// The files a scene reads, as `(path, what)`: the scene file (a built-in has none) and the
/// initial condition's recording (`init.path`).
pub fn scene_inputs(arg: &str, scene: &Scene) -> Vec<(PathBuf, &'static str)> {
    let mut v = Vec::new();
    if Path::new(arg).is_file() {
        v.push((PathBuf::from(arg), "scene file"));
    }
    if let Some(p) = &scene.init.resolved_path {
        v.push((p.clone(), "scene.init.path"));
    }
    v
}

/// What becomes of a recording that stops early (a signal, a full disk or another write
/// error): its complete frames kept under its temporary name, or removed with it (`forge
/// run`'s recording in a temporary folder).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unfinished {
    Keep,
    Remove,
}

/// Writing the recording failed (a full disk, most often): the complete frames already
/// written are worth keeping.
#[derive(Debug, thiserror::Error)]
#[error("writing {}: {cause}", path.display())]
struct WriteFailed {
    path: PathBuf,
    cause: bfs::BfsError,
}

/// Simulates `scene` (with `a`'s overrides applied) into a recording at `out_path`;
/// `forge run` calls this with the scene it has loaded already. A recording that stops early
/// keeps its complete frames under its temporary name when `unfinished` says so.
pub fn record(
    scene: Scene,
    out_path: &Path,
    a: &SimulateArgs,
    unfinished: Unfinished,
) -> Result<ExitCode> {
    Plan::resolve(scene, out_path, a)?.run(unfinished)
}

/// A recording with every check made: the scene's overrides applied, the output claimed, the
/// backend chosen, the initial state built.
struct Plan<'a> {
    scene: Scene,
    out_path: &'a Path,
    a: &'a SimulateArgs,
    /// The output's lock, held until the plan is dropped.
    _claim: output::Claim,
    backend: backend::Chosen,
    /// The initial state (taken by the solver when the run starts).
    state: Option<crate::sim::State>,
    /// Its agent count.
    n: usize,
    header: Header,
}

impl<'a> Plan<'a> {
    fn resolve(mut scene: Scene, out_path: &'a Path, a: &'a SimulateArgs) -> Result<Plan<'a>> {
        a.overrides.apply(&mut scene)?;
        if let Some(s) = a.search {
            scene.search = s;
        }
        if a.threads == Some(0) {
            bail!("--threads: must be at least 1");
        }
        crate::sim::cpu::check_threads("--threads", a.threads)?;
        // Every output checked (against the scene's files too) and locked before any work.
        let inputs = scene_inputs(&a.scene, &scene);
        let inputs: Vec<(&Path, &str)> = inputs.iter().map(|(p, w)| (p.as_path(), *w)).collect();
        let claim = output::claim(&[(out_path, "output")], &inputs, a.force)?;
        let backend = backend::choose(a.backend, a.quiet, &Params::from_scene(&scene, 0))?;
        let state = init::initial_state(&scene).map_err(|e| {
            // Outside `layout: file` (whose errors name scene.init.*), the only failures are
            // about the agent count (memory): name the field or flag that set it.
            let what = if a.overrides.agents.is_some() {
                "--agents"
            } else {
                "scene.agents"
            };
            let msg = format!("{e:#}");
            if scene.init.layout == scene::Layout::File
                || msg.starts_with(what)
                || msg.starts_with("scene.obstacles")
            {
                e
            } else {
                anyhow!("{what}: {msg}")
            }
        })?;
        scene.agents = state.n as u32;
        let n = state.n;
        let header = Header::for_scene(&scene);
        warn_if_too_large(&header, &scene, out_path);
        Ok(Plan {
            scene,
            out_path,
            a,
            _claim: claim,
            backend,
            state: Some(state),
            n,
            header,
        })
    }

    /// Simulates into the output; settles a run stopped early as `unfinished` says.
    fn run(mut self, unfinished: Unfinished) -> Result<ExitCode> {
        let (out, file) = OutputFile::create(self.out_path, self.a.force, "output")?;
        let o = match self.simulate(file) {
            Ok(o) => o,
            Err(e) if unfinished == Unfinished::Keep && e.is::<WriteFailed>() => {
                return Err(keep_complete_frames(out, e));
            }
            Err(e) => {
                out.abandon();
                return Err(e);
            }
        };
        if let Some(sig) = o.interrupted {
            let note = interrupted_note(out, &o, unfinished);
            return Err(Interrupted::noting(sig, note).into());
        }
        out.commit()?;
        if let Some(d) = &o.diverged {
            eprintln!(
                "error: {d}; the recording keeps the {} good frames (up to step {}) in {}",
                o.frames,
                o.steps,
                self.out_path.display()
            );
            return Ok(ExitCode::FAILURE);
        }
        if !self.a.quiet {
            self.report(&o);
        }
        Ok(ExitCode::SUCCESS)
    }

    /// The warm-up, then every step, recording the first frame at the warm-up's end and then
    /// one every `record_every` steps, into `file`.
    fn simulate(&mut self, file: std::fs::File) -> Result<Outcome> {
        let state = self.state.take().expect("one run per plan");
        let (scene, a) = (&self.scene, self.a);
        let (n, dim) = (self.n, scene.dim);
        let wr = |cause: bfs::BfsError| {
            anyhow::Error::new(WriteFailed {
                path: self.out_path.to_path_buf(),
                cause,
            })
        };
        let writer = bfs::Writer::new(file, &self.header).map_err(wr)?;
        let mut rec = Recorder::start(writer, dim, n)?;
        let params = Params::from_scene(scene, n);
        let mut solver = AnySolver::new(
            &self.backend,
            params,
            Rules::from_scene(scene),
            state,
            a.threads.unwrap_or(0),
            scene.search,
        )?;
        // The recorder's errors name the file; the solver's (CUDA) are its own.
        let rec_err = |e: RecordError<bfs::BfsError>| match e {
            RecordError::Out(e) => wr(e),
            e => anyhow::Error::new(e),
        };
        let bar = crate::progress::bar(scene.warmup + scene.steps, a.quiet, "steps");
        let t0 = Instant::now();
        let mut interrupted = None;
        let mut diverged = solver
            .run(&mut rec, Schedule::of(scene), |step, _| {
                if step % 16 == 0 {
                    bar.set_position(step);
                }
                // Stop here; the frames so far are finished like a complete recording's.
                interrupted = signal::caught();
                interrupted.is_none()
            })
            .map_err(rec_err)?;
        bar.finish_and_clear();
        let late = solver.finish(&mut rec).map_err(rec_err)?;
        diverged = diverged.or(late);
        let frames = rec.finish().map_err(wr)?;
        // Every step done (CUDA: queued steps included) and every frame written.
        let secs = t0.elapsed().as_secs_f64();
        Ok(Outcome {
            steps: solver.step,
            secs,
            frames,
            threads: solver.threads(),
            search: solver.search,
            polarization: metrics::polarization(dim, n, &solver.slots().0.vel),
            diverged,
            interrupted,
        })
    }

    /// The summary line of a finished recording.
    fn report(&self, o: &Outcome) {
        let (scene, n) = (&self.scene, self.n);
        let size = std::fs::metadata(self.out_path)
            .map(|m| m.len())
            .unwrap_or(0);
        let rate = o.steps as f64 / o.secs.max(1e-9);
        eprintln!(
            "{}: {} steps of {} {} ({}D, {}, {} thread{}) in {:.2} s: {:.0} steps/s, {} agent-steps/s; final polarization {:.3} -> {} ({} frames, {})",
            scene.name,
            o.steps,
            n,
            if scene.model == scene::Model::Vicsek { "particles" } else { "boids" },
            scene.dim,
            format!("{:?}", o.search).to_lowercase(),
            o.threads,
            if o.threads == 1 { "" } else { "s" },
            o.secs,
            rate,
            si(rate * n as f64),
            o.polarization,
            self.out_path.display(),
            o.frames,
            bytes(size),
        );
    }
}

/// What becomes of a recording stopped by a signal, in words: its complete frames kept under
/// the temporary name, or (during the warm-up, or for `forge run`'s own recording) nothing.
fn interrupted_note(out: OutputFile, o: &Outcome, unfinished: Unfinished) -> String {
    match unfinished {
        Unfinished::Keep if o.frames == 0 => {
            out.abandon();
            format!(
                " at step {} of the warm-up, before the first frame: nothing was recorded, \
                 nothing is kept",
                o.steps
            )
        }
        Unfinished::Keep => match out.keep() {
            Some(p) => format!(
                "; the {} complete frame{} recorded (up to step {}) {} kept in {}, a \
                 finished recording of those steps",
                o.frames,
                if o.frames == 1 { "" } else { "s" },
                o.steps,
                if o.frames == 1 { "is" } else { "are" },
                p.display()
            ),
            None => String::new(),
        },
        Unfinished::Remove => {
            out.abandon();
            String::new()
        }
    }
}

/// After a failed write: keeps the complete frames under the temporary name (counted by
/// reading the file back), or removes it if it holds none; says which in the error.
fn keep_complete_frames(out: OutputFile, e: anyhow::Error) -> anyhow::Error {
    if out.writing_path() == out.path {
        // Written in place (a device or pipe): nothing to keep, nothing to read back.
        return e;
    }
    let frames = bfs::Reader::open(out.writing_path())
        .map(|r| r.frame_count())
        .unwrap_or(0);
    if frames == 0 {
        out.abandon();
        return anyhow!("{e} (before a complete frame was written: nothing is kept)");
    }
    match out.keep() {
        Some(p) => anyhow!(
            "{e}; the {frames} complete frame{} written so far {} kept in {} (it opens like \
             any recording; rename it to keep it)",
            if frames == 1 { "" } else { "s" },
            if frames == 1 { "is" } else { "are" },
            p.display()
        ),
        None => e,
    }
}

struct Outcome {
    steps: u64,
    secs: f64,
    frames: u64,
    threads: usize,
    search: Search,
    polarization: f64,
    diverged: Option<crate::sim::Diverged>,
    /// The signal that stopped the run early.
    interrupted: Option<i32>,
}

/// Says so, with the figures, when the whole recording would not fit in the free space of the
/// output's folder (`"steps": 2147483648` asks for hundreds of GB, and nothing said so). A
/// warning, not a refusal: a run may be meant to be stopped early, and a full disk ends it
/// with an error that keeps the complete frames.
fn warn_if_too_large(header: &Header, scene: &Scene, out_path: &Path) {
    let frames = scene.steps / u64::from(scene.record_every) + 1;
    let size = header.recording_size(frames);
    let dir = match out_path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if let Some(free) = crate::sys::available_space(dir) {
        if size > free {
            eprintln!(
                "warning: the recording will take {} ({frames} frames of {} agents) but {} has \
                 only {} free: it stops with an error when the disk is full (lower the steps or \
                 raise record_every to make it smaller)",
                bytes(size),
                scene.agents,
                dir.display(),
                bytes(free)
            );
        }
    }
}
