//! The native half of `Recording`: forge's reader (`bfs::Reader`, forge and BoidForge BFS1
//! files) opens and checks the file, and reads each frame from the descriptor it opened into
//! arrays of its own: a file replaced or cut short afterwards is never read in its place.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use forge::bfs::{self, Reader, SourceFormat};
use forge::metrics::{self, Space};

use crate::errors::{bfs_err, RecordingError};

/// Frame `k` of the recording at `path` holds `bad`: damaged, as every reader of forge says.
fn non_finite(path: &std::path::Path, k: u64, bad: bfs::NonFinite) -> PyErr {
    RecordingError::new_err(format!(
        "{}: frame {k}: {bad}: forge's solver never records one, so the recording is damaged \
         or was written by another program",
        path.display()
    ))
}

#[pyclass(module = "forge_flocks._forge", name = "Reader")]
pub struct PyReader {
    path: PathBuf,
    reader: Arc<Mutex<Reader>>,
}

impl PyReader {
    fn with<T>(&self, py: Python<'_>, f: impl FnOnce(&mut Reader) -> T + Send) -> T
    where
        T: Send,
    {
        py.detach(|| {
            let mut r = self.reader.lock().unwrap_or_else(|p| p.into_inner());
            f(&mut r)
        })
    }

    fn err(&self, e: bfs::BfsError) -> PyErr {
        let msg = format!("{}: {e}", self.path.display());
        bfs_err(&e, msg)
    }

    /// The rule every reader of forge keeps: a frame holding a value that is not a finite
    /// number is damaged (forge's solver never records one).
    fn finite(&self, f: &bfs::Frame, k: u64, dim: usize) -> PyResult<()> {
        match f.non_finite(dim) {
            Some(bad) => Err(non_finite(&self.path, k, bad)),
            None => Ok(()),
        }
    }
}

#[pymethods]
impl PyReader {
    /// Opens `path` with forge's reader (header checks, complete frames counted).
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<PyReader> {
        let p = path.clone();
        let reader = py.detach(move || bfs::open_recording(&p)).map_err(|e| {
            // open_recording's message names the file (and says so when it is a scene).
            let msg = format!("{e:#}");
            match e.downcast_ref::<bfs::BfsError>() {
                Some(b) => bfs_err(b, msg),
                None => crate::errors::RecordingError::new_err(msg),
            }
        })?;
        Ok(PyReader {
            path,
            reader: Arc::new(Mutex::new(reader)),
        })
    }

    /// Whether the path still names the file this reader opened: the methods that go by the
    /// path (`still`, `render`, `to_usd`) check it, so that every method of one Recording
    /// reads the same file.
    fn same_file(&self, py: Python<'_>) -> bool {
        let path = self.path.clone();
        self.with(py, move |r| r.same_file(&path))
    }

    fn __len__(&self, py: Python<'_>) -> usize {
        self.with(py, |r| r.frame_count() as usize)
    }

    /// The header as a dict.
    fn header<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (h, count, warnings) = self.with(py, |r| {
            (r.header().clone(), r.frame_count(), r.warnings().to_vec())
        });
        let d = PyDict::new(py);
        d.set_item(
            "format",
            match h.source {
                SourceFormat::Forge => "forge",
                SourceFormat::Bfs1 => "bfs1",
            },
        )?;
        d.set_item("version", h.version)?;
        d.set_item("dim", h.dim)?;
        d.set_item("agents", h.agents)?;
        d.set_item("dt", h.dt)?;
        d.set_item("seed", h.seed)?;
        d.set_item("record_every", h.record_every)?;
        d.set_item("world", h.world_size[..h.dim as usize].to_vec())?;
        d.set_item("world_inferred", h.world_inferred)?;
        d.set_item("model", h.model.name())?;
        d.set_item("boundary", h.boundary.name())?;
        d.set_item("scene_name", h.scene_name)?;
        d.set_item("scene_json", h.scene_json)?;
        d.set_item("frames", count)?;
        d.set_item("warnings", warnings)?;
        Ok(d)
    }

    /// `(payload_at, step, agents)` of frame `k` after the reader's checks (tag, index, and
    /// with `verify` the checksum).
    fn locate(&self, py: Python<'_>, k: u64, verify: bool) -> PyResult<(u64, u64, u64)> {
        let span = self
            .with(py, |r| r.locate_frame(k, verify))
            .map_err(|e| self.err(e))?;
        Ok((span.payload_at, span.step, span.agents))
    }

    /// Frame `k` as `(step, positions, velocities, absent)`, each array `dim × agents`
    /// (component-major; `absent`: the id ranges `(lo, hi)` out of the world at its step),
    /// copied from the file this reader opened (a file replaced or cut short since is
    /// never read in its place, never mapped: a clear error, not a signal). With `verify` its
    /// checksum is compared; a value that is not a finite number is refused as `forge still`
    /// and `forge render` refuse it.
    #[allow(clippy::type_complexity)]
    fn read<'py>(
        &self,
        py: Python<'py>,
        k: u64,
        verify: bool,
    ) -> PyResult<(
        u64,
        Bound<'py, PyArray2<f32>>,
        Bound<'py, PyArray2<f32>>,
        Vec<(u32, u32)>,
    )> {
        let (f, dim) = self
            .with(py, |r| -> Result<_, bfs::BfsError> {
                let dim = usize::from(r.header().dim);
                let mut f = bfs::Frame::empty();
                r.read_frame_checked(k, &mut f, verify)?;
                Ok((f, dim))
            })
            .map_err(|e| self.err(e))?;
        self.finite(&f, k, dim)?;
        let n = f.agents(dim);
        let shaped = |v: Vec<f32>| -> PyResult<Bound<'py, PyArray2<f32>>> {
            let a = Array2::from_shape_vec((dim, n), v)
                .map_err(|e| RecordingError::new_err(e.to_string()))?;
            Ok(a.into_pyarray(py))
        };
        Ok((f.step, shaped(f.pos)?, shaped(f.vel)?, f.absent))
    }

    /// forge's metrics of every frame (`forge info --metrics`), as columns of NumPy arrays.
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let cols = self
            .with(py, |r| -> Result<_, bfs::BfsError> {
                let space = Space::of(r.header());
                let count = r.frame_count();
                let (mut step, mut pol, mut speed, mut nn, mut pair) =
                    (vec![], vec![], vec![], vec![], vec![]);
                let mut f = bfs::Frame::empty();
                for k in 0..count {
                    r.read_frame_into(k, &mut f)?;
                    if let Some(bad) = f.non_finite(space.dim) {
                        return Ok(Err((k, bad)));
                    }
                    f.drop_absent(space.dim);
                    let n = f.agents(space.dim);
                    let m = metrics::frame_metrics(&space, n, &f.pos, &f.vel);
                    step.push(f.step);
                    pol.push(m.polarization);
                    speed.push(m.mean_speed);
                    nn.push(m.nn_distance);
                    pair.push(m.pairwise_distance);
                }
                Ok(Ok((step, pol, speed, nn, pair)))
            })
            .map_err(|e| self.err(e))?
            .map_err(|(k, bad)| non_finite(&self.path, k, bad))?;
        let d = PyDict::new(py);
        let frames: Vec<u64> = (0..cols.0.len() as u64).collect();
        d.set_item("frame", frames.into_pyarray(py))?;
        d.set_item("step", cols.0.into_pyarray(py))?;
        d.set_item("polarization", cols.1.into_pyarray(py))?;
        d.set_item("mean_speed", cols.2.into_pyarray(py))?;
        d.set_item("nn_distance", cols.3.into_pyarray(py))?;
        d.set_item("pairwise_distance", cols.4.into_pyarray(py))?;
        Ok(d)
    }

    /// `forge analyze`'s analysis of frames `frames` (`None`: all), as its JSON: the Python
    /// half parses it. Runs under the per-call stop flag, so Ctrl-C stops it.
    #[pyo3(signature = (frames, every, bins, r_max, k_max, field, mean, method, bootstrap))]
    #[allow(clippy::too_many_arguments)]
    fn analyze_json(
        &self,
        py: Python<'_>,
        frames: Option<(Option<u64>, Option<u64>)>,
        every: u64,
        bins: usize,
        r_max: Option<f64>,
        k_max: usize,
        field: Option<String>,
        mean: String,
        method: String,
        bootstrap: usize,
    ) -> PyResult<String> {
        use forge::analyze::{Field, Mean, Method, Options};
        let mean = match mean.as_str() {
            "frame" => Mean::Frame,
            "frames" => Mean::Frames,
            x => {
                return Err(crate::errors::arg_err(format!(
                    "mean: {x:?} is not 'frame' or 'frames'"
                )))
            }
        };
        let field = match field.as_deref() {
            None => None,
            Some("velocity") => Some(Field::Velocity),
            Some("heading") => Some(Field::Heading),
            Some(x) => {
                return Err(crate::errors::arg_err(format!(
                    "field: {x:?} is not 'velocity' or 'heading'"
                )))
            }
        };
        let method = match method.as_str() {
            "auto" => Method::Auto,
            "exact" => Method::Exact,
            "grid" => Method::Grid,
            x => {
                return Err(crate::errors::arg_err(format!(
                    "method: {x:?} is not 'auto', 'exact' or 'grid'"
                )))
            }
        };
        let (reader, path) = (self.reader.clone(), self.path.clone());
        let json = crate::work::run(py, move || {
            let mut r = reader.lock().unwrap_or_else(|p| p.into_inner());
            let range = match frames {
                Some((start, end)) => bfs::FrameRange { start, end },
                None => bfs::FrameRange::ALL,
            };
            let frames = match range.within(r.frame_count(), &path) {
                Ok(f) => f,
                // The argument's error: `frames: …`, as the CLI's is `--frames: …`.
                Err(e) => {
                    let msg = e.to_string();
                    return Ok(Err(format!(
                        "frames: {}",
                        msg.trim_start_matches("--frames: ")
                    )));
                }
            };
            let o = Options {
                frames,
                every,
                bins,
                r_max,
                k_max,
                field,
                mean,
                method,
                bootstrap,
            };
            // An option out of range is the argument's error (a ValueError naming it);
            // anything else is about the file, named first as every reader error is.
            let a = match forge::analyze::analyze(&mut r, &o) {
                Err(e) => match e.downcast::<forge::analyze::BadOption>() {
                    Ok(b) => return Ok(Err(format!("{}: {}", b.option, b.message))),
                    Err(e) => return Err(e.context(path.display().to_string())),
                },
                Ok(a) => a,
            };
            Ok(Ok(serde_json::to_string(&a)?))
        })?;
        json.map_err(crate::errors::arg_err)
    }

    /// forge's metrics of frame `k`.
    fn frame_metrics<'py>(&self, py: Python<'py>, k: u64) -> PyResult<Bound<'py, PyDict>> {
        let (f, space) = self
            .with(py, |r| -> Result<_, bfs::BfsError> {
                Ok((r.read_frame(k)?, Space::of(r.header())))
            })
            .map_err(|e| self.err(e))?;
        self.finite(&f, k, space.dim)?;
        let mut f = f;
        f.drop_absent(space.dim);
        let n = f.agents(space.dim);
        let (step, m) = (f.step, metrics::frame_metrics(&space, n, &f.pos, &f.vel));
        crate::simulation::metrics_dict(py, step, &m)
    }
}
