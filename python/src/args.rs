//! The binding's whole-number arguments, converted with their names: a NumPy integer is taken
//! like a Python int; anything else is a `TypeError`, and a value out of range a `ValueError`,
//! each naming the argument and the range it takes (PyO3's own conversion says neither).

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt};

use forge::sim::backend::Backend;

/// `v` as a whole number in `lo..=hi`, or an error naming `name`.
fn whole(v: &Bound<'_, PyAny>, name: &str, lo: i128, hi: i128) -> PyResult<i128> {
    let range = format!("a whole number in {lo}..={hi}");
    let kind = v
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default();
    // bool is an int to Python, never a count or a seed to a user.
    if v.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "{name}: must be {range}, got {kind}"
        )));
    }
    match v.extract::<i128>() {
        Ok(i) if (lo..=hi).contains(&i) => Ok(i),
        Ok(i) => Err(PyValueError::new_err(format!(
            "{name}: must be {range}, got {i}"
        ))),
        // An int too large for 128 bits is out of range; anything else is not a number.
        Err(_) if v.is_instance_of::<PyInt>() || v.hasattr("__index__").unwrap_or(false) => Err(
            PyValueError::new_err(format!("{name}: must be {range}, got {v}")),
        ),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{name}: must be {range}, got {kind}"
        ))),
    }
}

/// [`whole`] where `None` means "not given".
fn opt_whole(v: &Bound<'_, PyAny>, name: &str, lo: i128, hi: i128) -> PyResult<Option<i128>> {
    if v.is_none() {
        return Ok(None);
    }
    whole(v, name, lo, hi).map(Some)
}

pub fn seed(v: &Bound<'_, PyAny>) -> PyResult<Option<u64>> {
    Ok(opt_whole(v, "seed", 0, u64::MAX as i128)?.map(|x| x as u64))
}

pub fn threads(v: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
    Ok(opt_whole(v, "threads", 1, u32::MAX as i128)?.map(|x| x as usize))
}

pub fn steps(v: &Bound<'_, PyAny>) -> PyResult<Option<u64>> {
    // The scene's own limit (MAX_STEPS) is checked with the other overrides.
    Ok(opt_whole(v, "steps", 0, u64::MAX as i128)?.map(|x| x as u64))
}

pub fn every(v: &Bound<'_, PyAny>) -> PyResult<Option<u32>> {
    Ok(opt_whole(v, "every", 1, u32::MAX as i128)?.map(|x| x as u32))
}

/// `Simulation.step(n)`.
pub fn n(v: &Bound<'_, PyAny>) -> PyResult<u64> {
    Ok(whole(v, "n", 0, u64::MAX as i128)? as u64)
}

/// `still(frame=...)`, once the Python side has counted a negative frame from the end.
pub fn frame(v: &Bound<'_, PyAny>) -> PyResult<u64> {
    Ok(whole(v, "frame", 0, u64::MAX as i128)? as u64)
}

/// `render(frames=(a, b))`: either end `None`.
pub fn frames(v: &Bound<'_, PyAny>) -> PyResult<Option<(Option<u64>, Option<u64>)>> {
    if v.is_none() {
        return Ok(None);
    }
    let pair: (Bound<'_, PyAny>, Bound<'_, PyAny>) = v.extract().map_err(|_| {
        PyTypeError::new_err("frames: must be a pair (start, end) of frame numbers or None")
    })?;
    let end = |x: &Bound<'_, PyAny>| -> PyResult<Option<u64>> {
        Ok(opt_whole(x, "frames", 0, u64::MAX as i128)?.map(|i| i as u64))
    };
    Ok(Some((end(&pair.0)?, end(&pair.1)?)))
}

/// `backend="auto" | "cpu" | "cuda"`.
pub fn backend(v: &Bound<'_, PyAny>) -> PyResult<Backend> {
    match v.extract::<String>() {
        Ok(s) => match s.as_str() {
            "auto" => Ok(Backend::Auto),
            "cpu" => Ok(Backend::Cpu),
            "cuda" => Ok(Backend::Cuda),
            _ => Err(crate::errors::arg_err(format!(
                "backend: expected \"auto\", \"cpu\" or \"cuda\", got {s:?}"
            ))),
        },
        Err(_) => Err(PyTypeError::new_err(format!(
            "backend: expected \"auto\", \"cpu\" or \"cuda\", got {}",
            v.repr().map(|r| r.to_string()).unwrap_or_default()
        ))),
    }
}
