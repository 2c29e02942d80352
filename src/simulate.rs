//! A scene simulated into a recording: the one way the library does it, which `forge
//! simulate`, `forge run` and the Python package call (and whose preparation `forge view
//! --record` shares, [`prepare`]). The scene comes with its overrides applied; the output is
//! checked against the scene's files and locked before any work, written under a temporary
//! name and renamed when complete. A run stopped early (a signal, a full disk) keeps its
//! complete frames or removes them as [`Unfinished`] says; one that diverges keeps its good
//! frames and says so in [`Outcome::diverged`].

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{anyhow, Result};

use crate::bfs::{self, Header};
use crate::metrics;
use crate::output::{self, OutputFile};
use crate::record::Recorder;
use crate::scene::{self, Scene, Search};
use crate::signal::Interrupted;
use crate::sim::backend::{self, AnySolver, Backend, Schedule};
use crate::sim::{init, Diverged, Params, RecordError, Rules, State};
use crate::units::bytes;

/// The files a scene reads, as `(path, what)`: the scene file where the scene was named by
/// one (`source`: what the user gave, a file or a built-in's name; `None` for a scene given
/// as data, whose `name` is never a file) and the initial condition's recording (`init.path`).
pub fn scene_inputs(source: Option<&str>, scene: &Scene) -> Vec<(PathBuf, &'static str)> {
    let mut v = Vec::new();
    if let Some(file) = source.filter(|s| Path::new(s).is_file()) {
        v.push((PathBuf::from(file), "scene file"));
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
    /// Kept, but removed when SIGTERM stopped it: for a host that dies of that signal once
    /// the run has stopped (the Python package), where no one would hear where it was kept.
    KeepUnlessTerminated,
}

impl Unfinished {
    /// The rule for a run that `signal` stopped (None: a write error).
    fn after(self, signal: Option<i32>) -> Unfinished {
        match (self, signal) {
            (Unfinished::KeepUnlessTerminated, Some(signal_hook::consts::SIGTERM)) => {
                Unfinished::Remove
            }
            (Unfinished::KeepUnlessTerminated, _) => Unfinished::Keep,
            (rule, _) => rule,
        }
    }
}

/// How a recording is made, besides its scene and output.
#[derive(Clone, Debug)]
pub struct Setup {
    /// The files the scene reads ([`scene_inputs`]), which the output must not be.
    pub inputs: Vec<(PathBuf, &'static str)>,
    /// Worker threads (None: all cores).
    pub threads: Option<usize>,
    pub backend: Backend,
    /// Overwrite the output if it exists.
    pub force: bool,
    /// No progress bar and no note about the backend.
    pub quiet: bool,
    /// What set the agent count, for the messages about it: `"--agents"` or `"scene.agents"`.
    pub agents_from: &'static str,
    pub unfinished: Unfinished,
}

/// A finished recording.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub agents: usize,
    /// Steps simulated, the warm-up's included.
    pub steps: u64,
    pub secs: f64,
    pub frames: u64,
    pub threads: usize,
    pub search: Search,
    /// The final state's polarization.
    pub polarization: f64,
    /// The run stopped where the state stopped being finite; the recording keeps the frames
    /// before it.
    pub diverged: Option<Diverged>,
}

impl Outcome {
    /// A divergence in words: what happened and what the recording at `path` keeps.
    pub fn diverged_message(&self, path: &Path) -> Option<String> {
        self.diverged.map(|d| {
            format!(
                "{d}; the recording keeps the {} good frames (up to step {}) in {}",
                self.frames,
                self.steps,
                path.display()
            )
        })
    }
}

/// A recording ready to run: the output claimed (locked until this is dropped), the backend
/// chosen, the initial state built and the scene's agent count set from it.
pub struct Prepared {
    pub scene: Scene,
    pub header: Header,
    pub backend: backend::Chosen,
    pub state: State,
    /// The output's lock (none without an output).
    pub claim: Option<output::Claim>,
}

/// Checks and claims `output` (`(path, what)`: the flag or keyword that named it) against the
/// scene's inputs, chooses the backend and builds the initial state of `scene`, its overrides
/// applied.
pub fn prepare(
    mut scene: Scene,
    output: Option<(&Path, &'static str)>,
    setup: &Setup,
) -> Result<Prepared> {
    let inputs: Vec<(&Path, &str)> = setup
        .inputs
        .iter()
        .map(|(p, w)| (p.as_path(), *w))
        .collect();
    let claim = match output {
        Some(o) => Some(output::claim(&[o], &inputs, setup.force)?),
        None => None,
    };
    let backend = backend::choose(setup.backend, setup.quiet, &Params::from_scene(&scene, 0))?;
    let state = init::initial_state(&scene).map_err(|e| {
        // Outside `layout: file` (whose errors name scene.init.*), the only failures are
        // about the agent count (memory): name the field or flag that set it.
        let what = setup.agents_from;
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
    let header = Header::for_scene(&scene);
    Ok(Prepared {
        scene,
        header,
        backend,
        state,
        claim,
    })
}

/// The solver of `scene` on the backend `chosen` from its initial `state`, with `threads`
/// (None: all cores).
pub fn solver(
    scene: &Scene,
    chosen: &backend::Chosen,
    state: State,
    threads: Option<usize>,
) -> Result<AnySolver> {
    let params = Params::from_scene(scene, state.n);
    Ok(AnySolver::new(
        chosen,
        params,
        Rules::from_scene(scene),
        state,
        threads.unwrap_or(0),
        scene.search,
    )?)
}

/// Simulates `scene` (its overrides applied) into a recording at `out_path`. `stop` is asked
/// every step whether to stop early (a signal number: the run ends with [`Interrupted`]).
pub fn record(
    scene: Scene,
    out_path: &Path,
    setup: &Setup,
    stop: &mut dyn FnMut() -> Option<i32>,
) -> Result<Outcome> {
    let prepared = prepare(scene, Some((out_path, "output")), setup)?;
    warn_if_too_large(&prepared.header, &prepared.scene, out_path);
    let (out, file) = OutputFile::create(out_path, setup.force, "output")?;
    let (o, interrupted) = match simulate(prepared, out_path, file, setup, stop) {
        Ok(o) => o,
        Err(e) if setup.unfinished.after(None) == Unfinished::Keep && e.is::<WriteFailed>() => {
            return Err(keep_complete_frames(out, e));
        }
        Err(e) => {
            out.abandon();
            return Err(e);
        }
    };
    if let Some(sig) = interrupted {
        let note = interrupted_note(out, &o, setup.unfinished.after(Some(sig)));
        return Err(Interrupted::noting(sig, note).into());
    }
    out.commit()?;
    Ok(o)
}

/// The warm-up, then every step, recording the first frame at the warm-up's end and then one
/// every `record_every` steps, into `file`; with the signal that stopped it early, if one did.
fn simulate(
    p: Prepared,
    out_path: &Path,
    file: std::fs::File,
    setup: &Setup,
    stop: &mut dyn FnMut() -> Option<i32>,
) -> Result<(Outcome, Option<i32>)> {
    let Prepared {
        scene,
        header,
        backend: chosen,
        state,
        claim: _claim,
    } = p;
    let (n, dim) = (state.n, scene.dim);
    let wr = |cause: bfs::BfsError| {
        anyhow::Error::new(WriteFailed {
            path: out_path.to_path_buf(),
            cause,
        })
    };
    let writer = bfs::Writer::new(bfs::DirectFile::new(file), &header).map_err(wr)?;
    let mut rec = Recorder::start(writer, dim, n)?;
    let mut solver = solver(&scene, &chosen, state, setup.threads)?;
    // The recorder's errors name the file; the solver's (CUDA) are its own.
    let rec_err = |e: RecordError<bfs::BfsError>| match e {
        RecordError::Out(e) => wr(e),
        e => anyhow::Error::new(e),
    };
    let bar = crate::progress::bar(scene.warmup + scene.steps, setup.quiet, "steps");
    let t0 = Instant::now();
    let mut interrupted = None;
    let mut diverged = solver
        .run(&mut rec, Schedule::of(&scene), |step, _| {
            if step % 16 == 0 {
                bar.set_position(step);
            }
            // Stop here; the frames so far are finished like a complete recording's.
            interrupted = stop();
            interrupted.is_none()
        })
        .map_err(rec_err)?;
    bar.finish_and_clear();
    let late = solver.finish(&mut rec).map_err(rec_err)?;
    diverged = diverged.or(late);
    let frames = rec.finish().map_err(wr)?;
    // Every step done (CUDA: queued steps included) and every frame written.
    let secs = t0.elapsed().as_secs_f64();
    let o = Outcome {
        agents: n,
        steps: solver.step,
        secs,
        frames,
        threads: solver.threads(),
        search: solver.search,
        polarization: {
            // Over the agents there at the last step.
            let absent = crate::scene::timeline::Presence::of(&scene)
                .map(|p| p.absent(solver.step))
                .unwrap_or_default();
            let (st, ids) = solver.slots();
            metrics::polarization_present(dim, &st.vel, ids, &absent)
        },
        diverged,
    };
    Ok((o, interrupted))
}

/// Writing the recording failed (a full disk, most often): the complete frames already
/// written are worth keeping.
#[derive(Debug, thiserror::Error)]
#[error("writing {}: {cause}", path.display())]
struct WriteFailed {
    path: PathBuf,
    cause: bfs::BfsError,
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
        Unfinished::Remove | Unfinished::KeepUnlessTerminated => {
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
            log::warn!(
                "the recording will take {} ({frames} frames of {} agents) but {} has \
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
