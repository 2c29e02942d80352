//! `Scene`: a built-in scene by name, a scene file, or a dict, through forge's own loader and
//! validation (`Scene::load`, `scene::parse`).

use std::path::Path;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use forge::scene::{self, Scene};

use crate::errors::SceneError;

/// A scene, resolved and validated by forge.
#[pyclass(module = "forge_flocks", name = "Scene", frozen)]
pub struct PyScene {
    pub scene: Scene,
    /// What `forge simulate` would be given for it: the file or the built-in's name; `None`
    /// for a dict.
    pub arg: Option<String>,
}

/// The text of a JSON value from Python (`json.dumps`), compact: one line. NumPy scalars are
/// taken as the Python numbers they hold; a number that is not finite is refused naming its
/// key (`boids.noise: must be a finite number, got nan`), which `json.dumps` would not say.
pub fn dumps(py: Python<'_>, v: &Bound<'_, PyAny>) -> PyResult<String> {
    let plain = plain(py, v, "")?;
    let json = py.import("json")?;
    let kw = PyDict::new(py);
    kw.set_item("allow_nan", false)?;
    json.call_method("dumps", (plain,), Some(&kw))?.extract()
}

/// `v` with NumPy scalars made Python numbers, every float checked finite; `at` is its path.
fn plain<'py>(py: Python<'py>, v: &Bound<'py, PyAny>, at: &str) -> PyResult<Bound<'py, PyAny>> {
    let key = |k: &str| {
        if at.is_empty() {
            k.to_string()
        } else {
            format!("{at}.{k}")
        }
    };
    if let Ok(d) = v.cast::<PyDict>() {
        let out = PyDict::new(py);
        for (k, x) in d.iter() {
            let name = k.str().map(|s| s.to_string()).unwrap_or_default();
            out.set_item(&k, plain(py, &x, &key(&name))?)?;
        }
        return Ok(out.into_any());
    }
    if let Ok(l) = v.cast::<pyo3::types::PyList>() {
        let items = l
            .iter()
            .enumerate()
            .map(|(i, x)| plain(py, &x, &format!("{at}[{i}]")))
            .collect::<PyResult<Vec<_>>>()?;
        return Ok(pyo3::types::PyList::new(py, items)?.into_any());
    }
    if let Ok(t) = v.cast::<pyo3::types::PyTuple>() {
        let items = t
            .iter()
            .enumerate()
            .map(|(i, x)| plain(py, &x, &format!("{at}[{i}]")))
            .collect::<PyResult<Vec<_>>>()?;
        return Ok(pyo3::types::PyList::new(py, items)?.into_any());
    }
    // A NumPy scalar (numpy.float32, numpy.int64, ...): the Python number it holds.
    let numpy_scalar =
        v.get_type().module().is_ok_and(|m| m == "numpy") && v.hasattr("item").unwrap_or(false);
    // A path (`pathlib.Path`, any `os.PathLike`): its text, as a scene file writes it.
    let path_like = py.import("os")?.getattr("PathLike")?;
    let v = if numpy_scalar {
        v.call_method0("item")?
    } else if v.is_instance(&path_like)? {
        py.import("os")?.call_method1("fspath", (v,))?
    } else {
        v.clone()
    };
    if v.is_instance_of::<pyo3::types::PyFloat>() {
        let x: f64 = v.extract()?;
        if !x.is_finite() {
            let name = if at.is_empty() { "value" } else { at };
            let shown = v.repr().map(|r| r.to_string()).unwrap_or_default();
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "{name}: must be a finite number, got {shown}"
            )));
        }
    }
    Ok(v)
}

pub fn loads<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("json")?.call_method1("loads", (text,))
}

impl PyScene {
    pub fn from_any(py: Python<'_>, source: &Bound<'_, PyAny>) -> PyResult<PyScene> {
        if let Ok(s) = source.cast::<PyScene>() {
            let s = s.get();
            return Ok(PyScene {
                scene: s.scene.clone(),
                arg: s.arg.clone(),
            });
        }
        if source.is_instance_of::<PyDict>() {
            let text = dumps(py, source)
                .map_err(|e| SceneError::new_err(format!("scene (a dict): {}", e.value(py))))?;
            let parsed = scene::parse(&scene::Source {
                text: &text,
                dir: Path::new("."),
                default_name: "scene",
            });
            return match parsed {
                Ok(scene) => Ok(PyScene { scene, arg: None }),
                Err(errors) => {
                    // Lines of the dict's one-line JSON would mean nothing: paths only.
                    let mut msg = "scene (a dict) is not valid:".to_string();
                    for mut e in errors {
                        e.line = None;
                        msg.push_str(&format!("\n  {e}"));
                    }
                    Err(SceneError::new_err(msg))
                }
            };
        }
        let arg: String = if source.is_instance_of::<PyString>() {
            source.extract()?
        } else {
            let os = py.import("os")?;
            os.call_method1("fspath", (source,))
                .map_err(|_| {
                    pyo3::exceptions::PyTypeError::new_err(format!(
                        "Scene: expected a built-in scene's name, a scene file's path or a dict, got {}",
                        source.get_type().name().map(|n| n.to_string()).unwrap_or_default()
                    ))
                })?
                .extract()?
        };
        let scene = Scene::load(&arg).map_err(|e| crate::errors::to_py(e.into()))?;
        Ok(PyScene {
            scene,
            arg: Some(arg),
        })
    }
}

#[pymethods]
impl PyScene {
    /// `Scene(source)`: a built-in scene's name (`"boidforge"`), a scene file's path, or a dict
    /// with a scene file's fields. Raises `SceneError` naming the JSON path at fault.
    #[new]
    fn new(py: Python<'_>, source: &Bound<'_, PyAny>) -> PyResult<PyScene> {
        PyScene::from_any(py, source)
    }

    /// The names of the built-in scenes.
    #[staticmethod]
    fn builtins() -> Vec<&'static str> {
        scene::builtin::names()
    }

    #[getter]
    fn name(&self) -> &str {
        &self.scene.name
    }
    #[getter]
    fn dim(&self) -> usize {
        self.scene.dim
    }
    #[getter]
    fn agents(&self) -> u32 {
        self.scene.agents
    }
    #[getter]
    fn seed(&self) -> u64 {
        self.scene.seed
    }
    #[getter]
    fn steps(&self) -> u64 {
        self.scene.steps
    }
    #[getter]
    fn warmup(&self) -> u64 {
        self.scene.warmup
    }
    #[getter]
    fn record_every(&self) -> u32 {
        self.scene.record_every
    }
    #[getter]
    fn dt(&self) -> f32 {
        self.scene.dt
    }
    #[getter]
    fn model(&self) -> &'static str {
        self.scene.model.name()
    }
    #[getter]
    fn boundary(&self) -> &'static str {
        self.scene.boundary.name()
    }
    #[getter]
    fn world(&self) -> Vec<f32> {
        self.scene.world[..self.scene.dim].to_vec()
    }

    /// The resolved scene as a dict: what a recording's header stores (every default filled
    /// in, the world as a list), not a scene file's fields — `Scene(s.to_dict())` is refused.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        loads(py, &self.scene.to_json())
    }

    /// The resolved scene as JSON text (what a recording's header stores).
    fn to_json(&self) -> String {
        self.scene.to_json()
    }

    fn __repr__(&self) -> String {
        format!(
            "Scene({:?}: {} {}D {}, {} agents, seed {}, {} steps)",
            self.scene.name,
            self.scene.model.name(),
            self.scene.dim,
            self.scene.boundary.name(),
            self.scene.agents,
            self.scene.seed,
            self.scene.steps
        )
    }
}
