//! One solver surface for CPU and CUDA, selected at run time: `--backend` ([`Backend`]) is
//! resolved by [`choose`] into a [`Chosen`] backend, and [`AnySolver`] runs either.

use std::fmt;

use clap::ValueEnum;

use super::cpu::{CpuError, CpuSolver};
use super::cuda::{open_device, CudaError, CudaSolver, Device, TOPO_K_MAX};
use super::{Diverged, FrameOut, Params, RecordError, Rules, State};
use crate::scene::Search;

/// `--backend`: which solver runs the step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// CUDA where a device and NVRTC are present and the scene allows it (with a note when
    /// one of them keeps the run on the CPU); else the CPU.
    Auto,
    /// Multi-threaded CPU solver.
    Cpu,
    /// NVIDIA GPU through CUDA (NVRTC compiles the kernels at first use); fails where absent.
    Cuda,
}

/// `--backend` resolved: which solver a run uses.
pub enum Chosen {
    Cpu,
    Cuda(Device),
}

/// `--backend cuda` was asked for and CUDA cannot run here. Reads `--backend cuda: ` and the
/// reason; its source is the reason's own source (a driver or NVRTC error), if any.
#[derive(Debug)]
pub struct CudaRequired(pub CudaError);

impl fmt::Display for CudaRequired {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "--backend cuda: {}", self.0)
    }
}

impl std::error::Error for CudaRequired {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        // The reason's message is already in ours: skip to what caused it.
        std::error::Error::source(&self.0)
    }
}

/// Why a run with `params` can use the CPU backend only, if it can: what the CUDA kernels do not
/// implement.
pub fn cpu_only(params: &Params) -> Option<&'static str> {
    (params.topo_k > TOPO_K_MAX).then_some(
        "topological neighbours with k above 64 (scene.boids.neighbours.k) run on the CPU only: \
         the CUDA kernels keep at most 64 nearest neighbours a boid",
    )
}

/// Whether `auto` would run CUDA here if the scene allowed it: a driver is installed. Only
/// then does falling back to the CPU change what happens, and only then is it worth a note; on
/// a machine without CUDA, `auto` is simply the CPU.
fn auto_may_use_cuda() -> bool {
    super::cuda::driver_present()
}

/// Resolve `--backend` for a run with `params`: `cuda` fails with the reason; `auto` falls back
/// to the CPU, with a one-line note (unless `quiet`) where CUDA could otherwise have run; `cpu`
/// is the CPU.
pub fn choose(backend: Backend, quiet: bool, params: &Params) -> Result<Chosen, CudaRequired> {
    match (backend, cpu_only(params)) {
        (Backend::Cpu, _) => return Ok(Chosen::Cpu),
        (Backend::Cuda, Some(why)) => return Err(CudaRequired(CudaError::Unsupported(why))),
        (Backend::Auto, Some(why)) => {
            if !quiet && auto_may_use_cuda() {
                log::info!("note: using the CPU backend ({why})");
            }
            return Ok(Chosen::Cpu);
        }
        _ => {}
    }
    if backend == Backend::Auto && !auto_may_use_cuda() {
        // No driver: `auto` is the CPU, with nothing to say.
        return Ok(Chosen::Cpu);
    }
    match open_device() {
        Ok(d) => {
            if !quiet {
                log::info!("note: CUDA backend on {} ({})", d.name, d.arch);
            }
            Ok(Chosen::Cuda(d))
        }
        Err(e) if backend == Backend::Cuda => Err(CudaRequired(e)),
        Err(e) => {
            if !quiet && super::cuda::driver_present() {
                log::info!("note: using the CPU backend ({})", one_line(&e));
            }
            Ok(Chosen::Cpu)
        }
    }
}

/// An error and its causes on one line: `a: b: c`.
fn one_line(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cause = c.source();
    }
    s
}

/// The chosen solver could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum SolverError {
    #[error(transparent)]
    Cpu(#[from] CpuError),
    #[error(transparent)]
    Cuda(#[from] CudaError),
}

/// Which steps a run records: a frame at `first` (the end of the warm-up), then one every
/// `every` steps after it, until step `last`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedule {
    pub first: u64,
    pub last: u64,
    pub every: u64,
}

impl Schedule {
    /// A scene's schedule: its warm-up, its steps and its `record_every`.
    pub fn of(scene: &crate::scene::Scene) -> Schedule {
        Schedule {
            first: scene.warmup,
            last: scene.warmup + scene.steps,
            every: u64::from(scene.record_every.max(1)),
        }
    }

    /// Frames a whole run records.
    pub fn frames(&self) -> u64 {
        (self.last - self.first) / self.every + 1
    }
}

/// One solver of either backend, with the surface the `simulate` loop uses (the same fields
/// and methods as `CpuSolver`, plus `record` and `finish`).
pub struct AnySolver {
    /// Steps done so far.
    pub step: u64,
    pub search: Search,
    inner: Inner,
}

// One of each per run: the size difference does not matter.
#[allow(clippy::large_enum_variant)]
enum Inner {
    Cpu(CpuSolver),
    Cuda(Box<CudaSolver>),
}

impl AnySolver {
    /// `state` in agent order; `threads == 0` means all cores (CPU only).
    /// `rules`: the scene's obstacles and species (`Rules::from_scene`).
    pub fn new(
        chosen: &Chosen,
        params: Params,
        rules: Rules,
        state: State,
        threads: usize,
        search: Search,
    ) -> Result<AnySolver, SolverError> {
        let inner = match chosen {
            Chosen::Cpu => {
                Inner::Cpu(CpuSolver::new(params, state, threads, search)?.with_rules(rules)?)
            }
            Chosen::Cuda(_) if cpu_only(&params).is_some() => {
                let why = cpu_only(&params).expect("checked just above");
                return Err(SolverError::Cuda(CudaError::Unsupported(why)));
            }
            Chosen::Cuda(d) => {
                Inner::Cuda(Box::new(CudaSolver::new(d, params, &rules, state, search)?))
            }
        };
        let mut s = AnySolver {
            step: 0,
            search,
            inner,
        };
        s.sync();
        Ok(s)
    }

    fn sync(&mut self) {
        (self.step, self.search) = match &self.inner {
            Inner::Cpu(s) => (s.step, s.search),
            Inner::Cuda(s) => (s.step, s.search),
        };
    }

    pub fn is_cuda(&self) -> bool {
        matches!(self.inner, Inner::Cuda(_))
    }

    /// The run's loop (`forge simulate`, the player's live run, the benchmarks): steps until
    /// `sched.last`, recording into `out` as `sched` says, while `go_on(step, out)` allows (it
    /// is asked before every step: a signal, a player that has gone). Returns the divergence that
    /// stopped it, if one did; frames still in flight are the caller's to [`AnySolver::finish`].
    /// Between recorded frames a step is the solver's step alone: no copy, and on CUDA no
    /// synchronisation.
    pub fn run<R: FrameOut>(
        &mut self,
        out: &mut R,
        sched: Schedule,
        mut go_on: impl FnMut(u64, &R) -> bool,
    ) -> Result<Option<Diverged>, RecordError<R::Error>> {
        let mut started = self.step > sched.first;
        loop {
            if self.step == sched.first && !started {
                self.record(out)?;
                started = true;
            }
            if self.step >= sched.last || !go_on(self.step, out) {
                return Ok(None);
            }
            if let Err(d) = self.step() {
                return Ok(Some(d));
            }
            if self.step > sched.first && (self.step - sched.first).is_multiple_of(sched.every) {
                self.record(out)?;
            }
        }
    }

    /// Waits for every queued step (CUDA; the CPU's steps are done when they return).
    pub fn synchronize(&self) -> Result<(), CudaError> {
        match &self.inner {
            Inner::Cpu(_) => Ok(()),
            Inner::Cuda(s) => s.synchronize(),
        }
    }

    pub fn step(&mut self) -> Result<(), Diverged> {
        let r = match &mut self.inner {
            Inner::Cpu(s) => s.step(),
            Inner::Cuda(s) => s.step(),
        };
        self.sync();
        r
    }

    /// Runs the timeline of `scene` from the next step on, in place of the one it had: the
    /// values every key gives at each step from now (a key added at the current step, say,
    /// by `Scene::set_at`).
    pub fn set_timeline(&mut self, scene: &crate::scene::Scene) {
        let t = super::timeline::Live::from_scene(scene);
        match &mut self.inner {
            Inner::Cpu(s) => s.set_timeline(t),
            Inner::Cuda(s) => s.set_timeline(t),
        }
    }

    /// Threads of the CPU backend; 0 on CUDA.
    pub fn threads(&self) -> usize {
        match &self.inner {
            Inner::Cpu(s) => s.threads(),
            Inner::Cuda(_) => 0,
        }
    }

    /// Hand the current state to `out` as the frame of the current step (CUDA:
    /// asynchronously, see `finish`).
    pub fn record<R: FrameOut>(&mut self, out: &mut R) -> Result<(), RecordError<R::Error>> {
        match &mut self.inner {
            Inner::Cpu(s) => s.record(out).map_err(RecordError::Out),
            Inner::Cuda(s) => s.record(out),
        }
    }

    /// Flush frames in flight (CUDA); a divergence found only now is returned, and `step` is
    /// then the last good step.
    pub fn finish<R: FrameOut>(
        &mut self,
        out: &mut R,
    ) -> Result<Option<Diverged>, RecordError<R::Error>> {
        let r = match &mut self.inner {
            Inner::Cpu(_) => Ok(None),
            Inner::Cuda(s) => s.finish(out),
        };
        self.sync();
        r
    }

    /// The state in slot order (CUDA: as of `finish`).
    pub fn slots(&self) -> (&State, &[u32]) {
        match &self.inner {
            Inner::Cpu(s) => s.slots(),
            Inner::Cuda(s) => s.slots(),
        }
    }
}
