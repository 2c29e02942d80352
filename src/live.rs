//! A scene simulated while it is watched (`forge view SCENE`): the solver runs on a thread and
//! hands each recorded frame to the player as it comes (and, with `--record`, to the same
//! background writer `forge simulate` uses, so the file is byte for byte the one `forge
//! simulate` writes). Frames go through a channel of one: a player that stops taking them
//! (paused) stops the solver after at most one frame more. The player depends on this module,
//! never on the solver: it receives frames, it never steps the physics.

use crate::scene::timeline::Presence;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::{anyhow, Context, Result};

use crate::bfs::{self, Frame, Header};
use crate::output::{self, OutputFile};
use crate::record::Recorder;
use crate::scene::Scene;
use crate::sim::backend::{self, Schedule};
use crate::sim::{FrameOut, State};
use crate::simulate;

/// A scene to simulate while it is watched.
pub struct LiveScene {
    /// The scene, its command-line overrides applied.
    pub scene: Scene,
    /// The scene file's text as written (a built-in's own): what a tuned scene is saved from.
    pub text: String,
    /// `--record FILE.bfs`.
    pub record: Option<PathBuf>,
    /// The scene's inputs, threads, backend and `--force`, as for `forge simulate`.
    pub setup: simulate::Setup,
}

/// What the solver thread says.
pub enum Msg {
    Frame(Frame),
    /// The run is over: all its steps done, or stopped at a divergence (said in words).
    Ended(Option<String>),
    /// A parameter set with [`Live::set`]: the key it became (its step, path and value), or
    /// why it was refused (naming the path).
    Keyed(Result<(u64, String, f32), String>),
}

/// How the solver thread ended.
struct Outcome {
    frames: u64,
    steps: u64,
    /// Every step of the scene was simulated.
    complete: bool,
    /// The scene with the keys [`Live::set`] added (the recording's header is written again
    /// with it when it differs from the one the run started with).
    scene: Scene,
    keyed: bool,
}

/// Parameters set while the run plays: sent to the solver thread, which makes each a key at
/// the step it is about to take.
struct Tune {
    tx: Sender<(String, f64)>,
    /// Set with every send: the solver's loop then stops between two steps to take them.
    pending: Arc<AtomicBool>,
}

/// A running simulation.
pub struct Live {
    rx: Option<Receiver<Msg>>,
    recycle: SyncSender<Frame>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<Outcome>>>,
    out: Option<OutputFile>,
    _claim: Option<output::Claim>,
    pub header: Header,
    /// Frames the run records in all.
    pub total: u64,
    tune: Tune,
    /// The scene as it runs: the keys the solver thread has taken added.
    scene: Scene,
    text: String,
}

impl Live {
    /// Checks and claims the recording's output, builds the initial state, starts the solver.
    pub fn start(s: LiveScene) -> Result<Live> {
        let p = simulate::prepare(
            s.scene,
            s.record.as_deref().map(|r| (r, "--record")),
            &s.setup,
        )?;
        let header = p.header.clone();
        let (out, file) = match &s.record {
            Some(r) => {
                let (out, file) = OutputFile::create(r, s.setup.force, "--record")?;
                (Some(out), Some(file))
            }
            None => (None, None),
        };
        let total = p.scene.steps / u64::from(p.scene.record_every.max(1)) + 1;
        let (tx, rx) = sync_channel::<Msg>(1);
        let (recycle, free) = sync_channel::<Frame>(4);
        let (tune_tx, tune_rx) = channel();
        let pending = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let scene = p.scene.clone();
        let run = Run {
            scene: p.scene,
            header: header.clone(),
            threads: s.setup.threads,
            stop: stop.clone(),
            tune: tune_rx,
            pending: pending.clone(),
        };
        let (chosen, state) = (p.backend, p.state);
        let thread = std::thread::Builder::new()
            .name("forge view solver".into())
            .spawn(move || run.simulate(chosen, state, file, tx, free))
            .context("cannot start the solver thread")?;
        Ok(Live {
            rx: Some(rx),
            recycle,
            stop,
            thread: Some(thread),
            out,
            _claim: p.claim,
            header,
            total,
            tune: Tune {
                tx: tune_tx,
                pending,
            },
            scene,
            text: s.text,
        })
    }

    /// From the step the solver is about to take, `param` (a timeline path: `vicsek.noise`)
    /// is `value`: a key in the run's timeline, recorded, and answered by a [`Msg::Keyed`].
    pub fn set(&self, param: &str, value: f64) {
        if self.tune.tx.send((param.to_string(), value)).is_ok() {
            self.tune.pending.store(true, Ordering::Release);
        }
    }

    /// The scene as it runs, with the keys taken so far.
    pub fn scene(&self) -> &Scene {
        &self.scene
    }

    /// The scene file that reproduces this run, its keys included
    /// ([`Scene::file_with_timeline`]).
    pub fn scene_file(&self) -> Result<String> {
        Ok(self.scene.file_with_timeline(&self.text)?)
    }

    /// The next message, if one is ready; `Err` when the solver thread failed.
    pub fn try_next(&mut self) -> Result<Option<Msg>> {
        let Some(rx) = &self.rx else {
            return Ok(None);
        };
        match rx.try_recv() {
            Ok(m) => Ok(Some(self.noted(m))),
            Err(TryRecvError::Empty) => Ok(None),
            Err(TryRecvError::Disconnected) => {
                self.finish()?;
                Ok(None)
            }
        }
    }

    /// The next message, waiting for it (the first frame comes after the warm-up).
    pub fn next_blocking(&mut self) -> Result<Msg> {
        let got = self.rx.as_ref().and_then(|rx| rx.recv().ok());
        match got {
            Some(m) => Ok(self.noted(m)),
            None => {
                self.rx = None;
                self.finish()?;
                Err(anyhow!("the solver stopped before its first frame"))
            }
        }
    }

    /// `m`, a key the solver thread took added to the scene here too, so that the scene saved
    /// is the one it ran.
    fn noted(&mut self, m: Msg) -> Msg {
        match m {
            Msg::Keyed(Ok((step, param, value))) => {
                match self.scene.set_at(step, &param, value as f64) {
                    Ok(()) => Msg::Keyed(Ok((step, param, value))),
                    Err(e) => Msg::Keyed(Err(e.to_string())),
                }
            }
            m => m,
        }
    }

    /// A frame the player is done with, for the solver to fill again.
    pub fn give_back(&self, f: Frame) {
        let _ = self.recycle.try_send(f);
    }

    /// Waits for the solver thread and settles the recording: under its name when every step
    /// was simulated, else (the window closed first) its complete frames kept under the
    /// temporary name. Returns the recording's path when it is complete.
    pub fn finish(&mut self) -> Result<Option<PathBuf>> {
        self.stop.store(true, Ordering::Relaxed);
        // A solver waiting to hand over a frame gives up when the channel closes.
        self.rx = None;
        let Some(t) = self.thread.take() else {
            return Ok(None);
        };
        let outcome = t
            .join()
            .map_err(|_| anyhow!("the solver thread panicked"))?;
        let out = self.out.take();
        let o = match outcome {
            Ok(o) => o,
            Err(e) => {
                if let Some(out) = out {
                    keep(out, 0);
                }
                return Err(e);
            }
        };
        match out {
            Some(out) if o.complete => {
                let path = out.path.clone();
                if o.keyed {
                    rewrite_header(&out, &o.scene)?;
                }
                out.commit()?;
                Ok(Some(path))
            }
            Some(out) => {
                keep(out, o.frames);
                log::info!("note: the simulation stopped at step {}", o.steps);
                Ok(None)
            }
            None => Ok(None),
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        if let Err(e) = self.finish() {
            log::error!("{e:#}");
        }
    }
}

/// The recording being written to `out`, its header written again for `scene` (the keys set
/// while it ran): its frames copied one at a time under a new header into a file beside it,
/// which then takes its name. The frames' bytes do not depend on the header, so the file is
/// what `forge simulate` writes for the scene with those keys.
fn rewrite_header(out: &OutputFile, scene: &Scene) -> Result<()> {
    let at = out.writing_path().to_path_buf();
    let mut r = bfs::Reader::open(&at)?;
    let (file, temp) = output::TempName::Partial
        .create_beside(&at)
        .with_context(|| format!("cannot write beside {}", at.display()))?;
    let guard = scopeguard_remove(temp.clone());
    let mut w = bfs::Writer::new(bfs::DirectFile::new(file), &Header::for_scene(scene))?;
    let mut f = Frame::empty();
    for k in 0..r.frame_count() {
        r.read_frame_into(k, &mut f)
            .with_context(|| format!("{}: frame {k}", at.display()))?;
        w.write_frame(f.step, &f.pos, &f.vel)?;
    }
    w.finalize()?;
    std::fs::rename(&temp, &at)
        .with_context(|| format!("cannot rename {} to {}", temp.display(), at.display()))?;
    std::mem::forget(guard);
    Ok(())
}

/// Removes `path` when dropped (a rewrite that failed leaves nothing behind).
fn scopeguard_remove(path: PathBuf) -> impl Drop {
    struct Remove(PathBuf);
    impl Drop for Remove {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
    Remove(path)
}

/// Keeps an unfinished recording's complete frames under its temporary name, and says so.
fn keep(out: OutputFile, frames: u64) {
    if frames == 0 {
        out.abandon();
        return;
    }
    if let Some(p) = out.keep() {
        log::info!(
            "note: the recording was not finished: its {frames} complete frame{} {} kept in {}",
            if frames == 1 { "" } else { "s" },
            if frames == 1 { "is" } else { "are" },
            p.display()
        );
    }
}

/// The solver thread's part.
struct Run {
    scene: Scene,
    header: Header,
    threads: Option<usize>,
    stop: Arc<AtomicBool>,
    tune: Receiver<(String, f64)>,
    pending: Arc<AtomicBool>,
}

impl Run {
    /// The loop of `forge simulate`: the warm-up, then every step, a frame at the warm-up's end
    /// and every `record_every` steps after it, each to the recording (if any) and the player.
    fn simulate(
        self,
        chosen: backend::Chosen,
        state: State,
        file: Option<std::fs::File>,
        tx: SyncSender<Msg>,
        free: Receiver<Frame>,
    ) -> Result<Outcome> {
        let scene = &self.scene;
        let (dim, n) = (scene.dim, state.n);
        let rec = match file {
            Some(f) => Some(Recorder::start(
                bfs::Writer::new(bfs::DirectFile::new(f), &self.header)?,
                dim,
                n,
            )?),
            None => None,
        };
        let mut solver = simulate::solver(scene, &chosen, state, self.threads)?;
        let mut out = Tee {
            rec,
            tx: &tx,
            free: &free,
            dim,
            n,
            sent: 0,
            gone: false,
            presence: Presence::of(scene),
        };
        let sched = Schedule::of(scene);
        let (stop, pending) = (&self.stop, &self.pending);
        let mut scene = self.scene.clone();
        let mut keyed = false;
        let diverged = loop {
            let d = solver.run(&mut out, sched, |_, out| {
                !out.gone && !stop.load(Ordering::Relaxed) && !pending.load(Ordering::Acquire)
            })?;
            let tuned = pending.swap(false, Ordering::AcqRel);
            if d.is_some() || !tuned || out.gone || stop.load(Ordering::Relaxed) {
                break d;
            }
            // Keys at the step about to be taken: the values the next step uses.
            while let Ok((param, value)) = self.tune.try_recv() {
                let step = solver.step;
                let answer = match scene.set_at(step, &param, value) {
                    Ok(()) => {
                        keyed = true;
                        solver.set_timeline(&scene);
                        out.presence = Presence::of(&scene);
                        Ok((step, param, value as f32))
                    }
                    Err(e) => Err(e.to_string()),
                };
                // Said to the player when it next looks (it may be waiting for a frame).
                if out.gone || tx.send(Msg::Keyed(answer)).is_err() {
                    out.gone = true;
                }
            }
        };
        let late = solver.finish(&mut out)?;
        let diverged = diverged.or(late);
        let complete = solver.step >= sched.last || diverged.is_some();
        let frames = match out.rec.take() {
            Some(r) => r.finish()?,
            None => out.sent,
        };
        if complete && !out.gone {
            let _ = tx.send(Msg::Ended(diverged.map(|d| d.to_string())));
        }
        Ok(Outcome {
            frames,
            steps: solver.step,
            complete,
            scene,
            keyed,
        })
    }
}

/// Frames to the recorder and to the player.
struct Tee<'a> {
    rec: Option<Recorder>,
    tx: &'a SyncSender<Msg>,
    free: &'a Receiver<Frame>,
    dim: usize,
    n: usize,
    sent: u64,
    /// The player has gone: frames are still recorded, none sent.
    gone: bool,
    /// The species the timeline adds or removes: the frames sent say who is absent.
    presence: Option<Presence>,
}

impl Tee<'_> {
    fn blank(&self, step: u64) -> Frame {
        let mut f = self.free.try_recv().unwrap_or_default();
        f.pos.resize(self.dim * self.n, 0.0);
        f.vel.resize(self.dim * self.n, 0.0);
        f.step = step;
        f.index = self.sent;
        f.absent = self
            .presence
            .as_ref()
            .map(|p| p.absent(step))
            .unwrap_or_default();
        f
    }

    fn send(&mut self, f: Frame) {
        if !self.gone && self.tx.send(Msg::Frame(f)).is_err() {
            self.gone = true;
        }
        self.sent += 1;
    }
}

impl FrameOut for Tee<'_> {
    type Error = bfs::BfsError;

    fn frame_with<F>(&mut self, step: u64, fill: F) -> Result<(), bfs::BfsError>
    where
        F: FnOnce(&mut [f32], &mut [f32]),
    {
        let mut f = self.blank(step);
        fill(&mut f.pos, &mut f.vel);
        if let Some(r) = &mut self.rec {
            r.record_with(step, |p, v| {
                p.copy_from_slice(&f.pos);
                v.copy_from_slice(&f.vel);
            })?;
        }
        self.send(f);
        Ok(())
    }
}
