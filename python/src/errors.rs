//! The package's exceptions, and forge's errors turned into them. Every message is forge's own
//! (the whole cause chain, as the CLI prints it).

use pyo3::create_exception;
use pyo3::exceptions::{PyFileNotFoundError, PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use forge::bfs::BfsError;
use forge::scene::LoadError;
use forge::signal::Interrupted;

create_exception!(
    forge_flocks,
    SceneError,
    PyValueError,
    "A scene that forge refuses: the message names the JSON path (and the line of a file)."
);
create_exception!(
    forge_flocks,
    RecordingError,
    PyValueError,
    "A recording that cannot be read: not a recording, damaged, or a frame out of range."
);
create_exception!(
    forge_flocks,
    LookError,
    PyValueError,
    "A look setting that forge refuses: the message names the key."
);
create_exception!(
    forge_flocks,
    ForgeError,
    PyRuntimeError,
    "Any other failure of forge (an output that exists, a simulation that diverged, …)."
);

/// forge's error as the Python exception a caller can catch by kind.
pub fn to_py(e: anyhow::Error) -> PyErr {
    let msg = format!("{e:#}");
    if let Some(i) = e.downcast_ref::<Interrupted>() {
        return PyKeyboardInterrupt::new_err(i.to_string());
    }
    if e.downcast_ref::<LoadError>().is_some() {
        return SceneError::new_err(msg);
    }
    for cause in e.chain() {
        if let Some(b) = cause.downcast_ref::<BfsError>() {
            return bfs_err(b, msg);
        }
    }
    ForgeError::new_err(msg)
}

/// A reader's error, its message `msg`: a missing file is `FileNotFoundError`.
pub fn bfs_err(e: &BfsError, msg: String) -> PyErr {
    match e {
        BfsError::Io(io) if io.kind() == std::io::ErrorKind::NotFound => {
            PyFileNotFoundError::new_err(msg)
        }
        _ => RecordingError::new_err(msg),
    }
}

/// A `ValueError` raised by the binding's own argument checks, naming the argument.
pub fn arg_err(msg: String) -> PyErr {
    PyValueError::new_err(msg)
}
