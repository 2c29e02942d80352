//! `Simulation`: forge's solver (`AnySolver`, CPU or CUDA) stepped from Python, and
//! `simulate`: a recording made by the library's recording function (`forge::simulate::record`),
//! as `forge simulate` makes it.

use std::mem::ManuallyDrop;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use numpy::ndarray::Array2;
use numpy::IntoPyArray;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use forge::metrics::{self, Space};
use forge::scene::{Boundary, Overrides, Scene};
use forge::sim::backend::{self, AnySolver, Backend};
use forge::sim::frames::FrameOut;
use forge::sim::Rules;
use forge::sim::{init, Params};

use crate::errors::{arg_err, to_py, ForgeError};
use crate::scene::PyScene;

/// How often a long `step(n)` looks for Ctrl-C.
const SIGNAL_POLL: Duration = Duration::from_millis(20);

/// `threads` checked as `--threads` is (the message names `threads`).
fn check_threads(threads: Option<usize>) -> PyResult<()> {
    if threads == Some(0) {
        return Err(arg_err("threads: must be at least 1".into()));
    }
    forge::sim::cpu::check_threads("threads", threads).map_err(|e| arg_err(format!("{e:#}")))
}

/// The current state in agent order (component-major, as a frame stores it).
struct Snapshot {
    pos: Vec<f32>,
    vel: Vec<f32>,
}

impl FrameOut for Snapshot {
    type Error = std::convert::Infallible;

    fn frame_with<F>(&mut self, _step: u64, fill: F) -> Result<(), Self::Error>
    where
        F: FnOnce(&mut [f32], &mut [f32]),
    {
        fill(&mut self.pos, &mut self.vel);
        Ok(())
    }
}

struct Inner {
    solver: AnySolver,
    /// The scene with the keys `set` added: what `record` writes.
    keyed: Scene,
}

/// The arrays of step `.0`, once asked for.
type Cached = Option<(u64, Py<PyAny>, Py<PyAny>)>;

/// A running simulation of a scene.
#[pyclass(module = "forge_flocks", name = "Simulation")]
pub struct PySimulation {
    scene: Py<PyScene>,
    seeded: Scene,
    threads: Option<usize>,
    backend: Backend,
    /// Locked only with the GIL released (a thread stepping holds it while it runs). Dropped
    /// by hand: see `Drop`.
    inner: ManuallyDrop<Mutex<Inner>>,
    /// Locked only with the GIL held, never across a release.
    cached: Mutex<Cached>,
    /// The process that made the solver, and whether it runs on CUDA: a CUDA context does not
    /// survive `fork()` (a CPU solver does: its pool runs a forked child's passes itself).
    pid: u32,
    cuda: bool,
}

impl Drop for PySimulation {
    fn drop(&mut self) {
        if self.cuda && std::process::id() != self.pid {
            // A forked child: the device memory and context are the parent's, not freed here.
            return;
        }
        // SAFETY: dropped once, here, and never used again.
        unsafe { ManuallyDrop::drop(&mut self.inner) }
    }
}

impl PySimulation {
    /// Refuses a CUDA solver in a forked child: its context is the parent's.
    fn usable(&self) -> PyResult<()> {
        if self.cuda && std::process::id() != self.pid {
            return Err(ForgeError::new_err(format!(
                "this Simulation runs on CUDA in process {}, and a CUDA context does not \
                 survive fork(): create the Simulation in this process (or use \
                 multiprocessing's \"spawn\" start method)",
                self.pid
            )));
        }
        Ok(())
    }

    /// `f` on the solver, the GIL released.
    fn with<T: Send>(&self, py: Python<'_>, f: impl FnOnce(&mut Inner) -> T + Send) -> T {
        py.detach(|| {
            let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            f(&mut g)
        })
    }

    fn space(&self) -> Space {
        Space {
            dim: self.seeded.dim,
            world: self.seeded.world,
            wrap: self.seeded.boundary == Boundary::Wrap,
        }
    }

    fn snapshot(inner: &mut Inner, dim: usize) -> PyResult<Snapshot> {
        let n = inner.solver.slots().0.n;
        let mut s = Snapshot {
            pos: vec![0.0; dim * n],
            vel: vec![0.0; dim * n],
        };
        inner
            .solver
            .record(&mut s)
            .map_err(|e| ForgeError::new_err(format!("{e:#}")))?;
        if let Some(d) = inner
            .solver
            .finish(&mut s)
            .map_err(|e| ForgeError::new_err(format!("{e:#}")))?
        {
            return Err(ForgeError::new_err(format!("{d}")));
        }
        Ok(s)
    }

    /// The state as (N, dim) read-only views of (dim, N) arrays (the solver's component-major
    /// layout, in agent order), made once per step.
    fn arrays(&self, py: Python<'_>) -> PyResult<(Py<PyAny>, Py<PyAny>)> {
        self.usable()?;
        let dim = self.seeded.dim;
        let step = self.with(py, |g| g.solver.step);
        if let Some((s, p, v)) = &*self.cached.lock().unwrap_or_else(|p| p.into_inner()) {
            if *s == step {
                return Ok((p.clone_ref(py), v.clone_ref(py)));
            }
        }
        let (step, snap) = self.with(py, |g| (g.solver.step, Self::snapshot(g, dim)));
        let snap = snap?;
        let n = snap.pos.len() / dim;
        let view = |data: Vec<f32>| -> PyResult<Py<PyAny>> {
            let a = Array2::from_shape_vec((dim, n), data).expect("dim × n values");
            let base = a.into_pyarray(py);
            base.getattr("flags")?.setattr("writeable", false)?;
            let t = base.getattr("T")?;
            t.getattr("flags")?.setattr("writeable", false)?;
            Ok(t.unbind())
        };
        let (p, v) = (view(snap.pos)?, view(snap.vel)?);
        *self.cached.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((step, p.clone_ref(py), v.clone_ref(py)));
        Ok((p, v))
    }
}

#[pymethods]
impl PySimulation {
    /// `Simulation(scene, seed=None, threads=None, backend="auto")`: the scene's initial state
    /// (step 0, before any warm-up), in forge's solver. `threads` (CPU) does not change the
    /// result; `seed` replaces the scene's.
    #[new]
    #[pyo3(signature = (scene, seed=None, threads=None, backend=Backend::Auto))]
    fn new(
        py: Python<'_>,
        scene: &Bound<'_, PyAny>,
        #[pyo3(from_py_with = crate::args::seed)] seed: Option<u64>,
        #[pyo3(from_py_with = crate::args::threads)] threads: Option<usize>,
        #[pyo3(from_py_with = crate::args::backend)] backend: Backend,
    ) -> PyResult<PySimulation> {
        let sc = PyScene::from_any(py, scene)?;
        check_threads(threads)?;
        let mut seeded = sc.scene.clone();
        if let Some(s) = seed {
            seeded.seed = s;
        }
        let scene_obj = Py::new(py, sc)?;
        let s2 = seeded.clone();
        let (solver, seeded) = py
            .detach(move || -> anyhow::Result<(AnySolver, Scene)> {
                let mut scene = s2;
                let rules = Rules::from_scene(&scene);
                let chosen = backend::choose(backend, true, &Params::from_scene(&scene, 0))?;
                let state = init::initial_state(&scene)?;
                scene.agents = state.n as u32;
                let params = Params::from_scene(&scene, state.n);
                let search = scene.search;
                let threads = threads.unwrap_or(0);
                let solver = AnySolver::new(&chosen, params, rules, state, threads, search)?;
                Ok((solver, scene))
            })
            .map_err(to_py)?;
        let keyed = seeded.clone();
        Ok(PySimulation {
            scene: scene_obj,
            seeded,
            threads,
            backend,
            pid: std::process::id(),
            cuda: solver.is_cuda(),
            inner: ManuallyDrop::new(Mutex::new(Inner { solver, keyed })),
            cached: Mutex::new(None),
        })
    }

    /// Advances `n` steps with the GIL released; Ctrl-C stops it between two steps
    /// (`KeyboardInterrupt`, the state that of the last step done).
    #[pyo3(signature = (n=1))]
    fn step(&self, py: Python<'_>, #[pyo3(from_py_with = crate::args::n)] n: u64) -> PyResult<()> {
        self.usable()?;
        let r: PyResult<()> = py.detach(|| {
            let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            let mut polled = Instant::now();
            for _ in 0..n {
                if let Err(d) = g.solver.step() {
                    return Err(ForgeError::new_err(format!("{d}")));
                }
                if polled.elapsed() >= SIGNAL_POLL {
                    Python::attach(|py| py.check_signals())?;
                    polled = Instant::now();
                }
            }
            Ok(())
        });
        r
    }

    /// `set(param, value)`: from this step on, the scene parameter `param` (a timeline path:
    /// `"vicsek.noise"`, `"boids.w_ali"`, `"species[1].boids.v_max"`) is `value`. It is a key
    /// at this step in the simulation's timeline, checked as one in a scene file is
    /// (`ValueError` naming `param`), and `record` writes it: the recording then has the very
    /// states this object stepped through.
    fn set(&self, py: Python<'_>, param: &str, value: f64) -> PyResult<()> {
        self.usable()?;
        self.with(py, |g| {
            let step = g.solver.step;
            g.keyed.set_at(step, param, value)?;
            g.solver.set_timeline(&g.keyed);
            Ok::<(), forge::scene::SceneError>(())
        })
        .map_err(|e| arg_err(e.to_string()))
    }

    /// The keys of the simulation's timeline (the scene's, and those `set` added), in step
    /// order: `[{"step": 100, "interpolation": "step", "set": {"vicsek.noise": 2.5}}, ...]`;
    /// a key `set` added has `"live": True` (it changes the steps from its own on only: a ramp
    /// it falls inside keeps its course before it), and a scene given this list runs the same.
    #[getter]
    fn timeline<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyList>> {
        let keys = self.with(py, |g| g.keyed.timeline.clone());
        let out = pyo3::types::PyList::empty(py);
        for k in keys {
            let d = PyDict::new(py);
            d.set_item("step", k.step)?;
            d.set_item("interpolation", k.interpolation.name())?;
            let set = PyDict::new(py);
            for (p, v) in &k.set {
                set.set_item(p, *v)?;
            }
            d.set_item("set", set)?;
            if k.live {
                d.set_item("live", true)?;
            }
            out.append(d)?;
        }
        Ok(out)
    }

    /// Steps done so far.
    #[getter]
    fn step_index(&self, py: Python<'_>) -> u64 {
        self.with(py, |g| g.solver.step)
    }

    /// Simulated time: `step_index × dt`.
    #[getter]
    fn time(&self, py: Python<'_>) -> f64 {
        self.with(py, |g| g.solver.step) as f64 * f64::from(self.seeded.dt)
    }

    /// Agent count.
    #[getter]
    fn n(&self) -> u32 {
        self.seeded.agents
    }

    #[getter]
    fn dim(&self) -> usize {
        self.seeded.dim
    }

    /// The scene as given (before `seed`).
    #[getter]
    fn scene(&self, py: Python<'_>) -> Py<PyScene> {
        self.scene.clone_ref(py)
    }

    /// The seed the simulation runs with.
    #[getter]
    fn seed(&self) -> u64 {
        self.seeded.seed
    }

    /// `True` where the CUDA backend steps it.
    #[getter]
    fn is_cuda(&self, py: Python<'_>) -> bool {
        self.with(py, |g| g.solver.is_cuda())
    }

    /// Whether each agent is in the world at this step, `bool`, shape `(N,)`, read-only: False
    /// for the agents of a species the timeline took out (`set("species[i].present", 0)`),
    /// which the arrays keep where they went and `metrics()` leaves out.
    #[getter]
    fn present<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let absent = self.with(py, |g| {
            forge::scene::timeline::Presence::of(&g.keyed)
                .map(|p| p.absent(g.solver.step))
                .unwrap_or_default()
        });
        let n = self.seeded.agents as usize;
        let mut v = vec![true; n];
        for (lo, hi) in absent {
            let (lo, hi) = ((lo as usize).min(n), (hi as usize).min(n));
            v[lo..hi].fill(false);
        }
        let a = numpy::ndarray::Array1::from_vec(v).into_pyarray(py);
        a.call_method1("setflags", (false,))?;
        Ok(a.into_any())
    }

    /// Positions, `float32`, shape `(N, dim)`, read-only: a snapshot of this step.
    #[getter]
    fn positions(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(self.arrays(py)?.0)
    }

    /// Velocities, `float32`, shape `(N, dim)`, read-only: a snapshot of this step.
    #[getter]
    fn velocities(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(self.arrays(py)?.1)
    }

    /// forge's order parameters of this step (`forge info`'s): polarization, mean_speed,
    /// nn_distance, pairwise_distance.
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.usable()?;
        let dim = self.seeded.dim;
        let space = self.space();
        let (step, m) = self.with(py, |g| -> PyResult<(u64, metrics::Metrics)> {
            let s = Self::snapshot(g, dim)?;
            // Over the agents there at this step (`set("species[i].present", 0)` takes a
            // species out).
            let mut f = forge::bfs::Frame {
                pos: s.pos,
                vel: s.vel,
                absent: forge::scene::timeline::Presence::of(&g.keyed)
                    .map(|p| p.absent(g.solver.step))
                    .unwrap_or_default(),
                ..Default::default()
            };
            f.drop_absent(dim);
            let m = metrics::frame_metrics(&space, f.agents(dim), &f.pos, &f.vel);
            Ok((g.solver.step, m))
        })?;
        metrics_dict(py, step, &m)
    }

    /// Writes `forge simulate`'s recording of this simulation's scene and seed, with the keys
    /// `set` added, to `path`: the same bytes (forge's own code runs it, from step 0 with the
    /// scene's warm-up, on its own solver; this object's state is neither read nor advanced).
    /// See `forge_flocks.simulate`.
    #[pyo3(signature = (path, steps=None, every=None, force=false))]
    fn record(
        &self,
        py: Python<'_>,
        path: PathBuf,
        #[pyo3(from_py_with = crate::args::steps)] steps: Option<u64>,
        #[pyo3(from_py_with = crate::args::every)] every: Option<u32>,
        force: bool,
    ) -> PyResult<()> {
        let sc = self.scene.get();
        let mut scene = sc.scene.clone();
        scene.timeline = self.with(py, |g| g.keyed.timeline.clone());
        simulate_scene(
            py,
            &scene,
            sc.arg.clone(),
            path,
            steps,
            Some(self.seeded.seed),
            every,
            self.threads,
            self.backend,
            force,
        )
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "Simulation({:?}, {} agents, {}D, seed {}, step {})",
            self.seeded.name,
            self.seeded.agents,
            self.seeded.dim,
            self.seeded.seed,
            self.with(py, |g| g.solver.step)
        )
    }
}

pub fn metrics_dict<'py>(
    py: Python<'py>,
    step: u64,
    m: &metrics::Metrics,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("step", step)?;
    d.set_item("polarization", m.polarization)?;
    d.set_item("mean_speed", m.mean_speed)?;
    d.set_item("nn_distance", m.nn_distance)?;
    d.set_item("pairwise_distance", m.pairwise_distance)?;
    Ok(d)
}

/// A recording of `scene` at `path` by the library's one recording function
/// (`forge::simulate::record`, which `forge simulate` calls too), `steps`, `seed` and `every`
/// overriding the scene's (`every`: its `record_every`).
#[allow(clippy::too_many_arguments)]
pub fn simulate_scene(
    py: Python<'_>,
    scene: &Scene,
    arg: Option<String>,
    path: PathBuf,
    steps: Option<u64>,
    seed: Option<u64>,
    every: Option<u32>,
    threads: Option<usize>,
    backend: Backend,
    force: bool,
) -> PyResult<()> {
    check_threads(threads)?;
    let mut scene = scene.clone();
    let overrides = Overrides {
        steps,
        agents: None,
        seed,
        every: every.map(u64::from),
    };
    // The overrides checked here, before any work, as the argument errors they are
    // (`ValueError`); forge's message names the flag, here the keyword.
    overrides
        .apply(&mut scene)
        .map_err(|e| arg_err(format!("{e:#}").trim_start_matches("--").to_string()))?;
    let setup = forge::simulate::Setup {
        // The scene's inputs (its file; a dict has none) are checked against the output, as
        // the CLI does.
        inputs: forge::simulate::scene_inputs(arg.as_deref(), &scene),
        threads,
        backend,
        force,
        quiet: true,
        agents_from: "scene.agents",
        unfinished: forge::simulate::Unfinished::KeepUnlessTerminated,
    };
    // Stopped by this call's Ctrl-C only, never by another call's (crate::work).
    let outcome = crate::work::run(py, move || {
        forge::simulate::record(scene, &path, &setup, &mut forge::signal::caught)
            .map(|o| (o.diverged_message(&path), o))
    })?;
    if let (Some(msg), _) = outcome {
        // The recording keeps the good frames.
        return Err(ForgeError::new_err(msg));
    }
    Ok(())
}

/// `simulate(scene, output, steps=None, seed=None, every=None, threads=None, backend="auto",
/// force=False)`: `forge simulate`'s recording, by its own code.
#[pyfunction]
#[pyo3(signature = (scene, output, steps=None, seed=None, every=None, threads=None, backend=Backend::Auto, force=false))]
#[allow(clippy::too_many_arguments)]
pub fn simulate(
    py: Python<'_>,
    scene: &Bound<'_, PyAny>,
    output: PathBuf,
    #[pyo3(from_py_with = crate::args::steps)] steps: Option<u64>,
    #[pyo3(from_py_with = crate::args::seed)] seed: Option<u64>,
    #[pyo3(from_py_with = crate::args::every)] every: Option<u32>,
    #[pyo3(from_py_with = crate::args::threads)] threads: Option<usize>,
    #[pyo3(from_py_with = crate::args::backend)] backend: Backend,
    force: bool,
) -> PyResult<()> {
    let sc = PyScene::from_any(py, scene)?;
    simulate_scene(
        py, &sc.scene, sc.arg, output, steps, seed, every, threads, backend, force,
    )
}
