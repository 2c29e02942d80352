//! `forge_flocks._forge`: the native module of the `forge-flocks` Python package, a thin PyO3
//! binding over the forge library. Every rule (scene validation, the solver, the recording's
//! format, the look, the render) is forge's own code; this crate only converts values and
//! errors, releases the GIL and relays Ctrl-C. The Python half (`forge_flocks/__init__.py`)
//! maps recordings into NumPy without a copy.

mod args;
mod errors;
mod log;
mod recording;
mod render;
mod scene;
mod simulation;
mod work;

use pyo3::prelude::*;

#[pymodule]
fn _forge(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    log::install();
    m.add("SceneError", py.get_type::<errors::SceneError>())?;
    m.add("RecordingError", py.get_type::<errors::RecordingError>())?;
    m.add("LookError", py.get_type::<errors::LookError>())?;
    m.add("ForgeError", py.get_type::<errors::ForgeError>())?;
    m.add_class::<scene::PyScene>()?;
    m.add_class::<simulation::PySimulation>()?;
    m.add_class::<recording::PyReader>()?;
    m.add_function(wrap_pyfunction!(simulation::simulate, m)?)?;
    m.add_function(wrap_pyfunction!(render::still, m)?)?;
    m.add_function(wrap_pyfunction!(render::render, m)?)?;
    m.add_function(wrap_pyfunction!(render::encode_png, m)?)?;
    m.add_function(wrap_pyfunction!(render::export, m)?)?;
    m.add("FORGE_VERSION", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
