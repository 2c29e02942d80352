//! Long work (a recording, a render) run by forge's own command code on a worker thread, the
//! GIL released, while this thread watches for Ctrl-C: on one, forge's work loop is told to
//! stop (`forge::signal::host_stop`, the flag its loops poll for SIGINT), cleans up by the
//! CLI's rules, and the caller gets `KeyboardInterrupt` with forge's note of what was kept.

use std::time::{Duration, Instant};

use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;

use forge::signal::{self, Interrupted};

use crate::errors::{to_py, ForgeError};

/// How often this thread looks for a signal while the work runs.
const POLL: Duration = Duration::from_millis(50);

pub fn run<T, F>(py: Python<'_>, work: F) -> PyResult<T>
where
    T: Send + 'static,
    F: FnOnce() -> anyhow::Result<T> + Send + 'static,
{
    let handle = std::thread::spawn(work);
    let mut interrupt: Option<PyErr> = None;
    loop {
        let done = py.detach(|| {
            let t = Instant::now();
            while !handle.is_finished() && t.elapsed() < POLL {
                std::thread::sleep(Duration::from_millis(2));
            }
            handle.is_finished()
        });
        if done {
            break;
        }
        if let Err(e) = py.check_signals() {
            signal::host_stop(libc::SIGINT);
            interrupt = Some(e);
            break;
        }
    }
    let joined = py.detach(|| handle.join());
    signal::clear_host_stop();
    let result = match joined {
        Ok(r) => r,
        Err(_) => {
            return Err(ForgeError::new_err(
                "internal error: forge's worker thread panicked",
            ))
        }
    };
    match (result, interrupt) {
        // Stopped by the interrupt: forge's own words on what it kept.
        (Err(e), Some(_)) if e.is::<Interrupted>() => {
            Err(PyKeyboardInterrupt::new_err(format!("{e:#}")))
        }
        // Finished (or failed) before it saw the stop: the interrupt still propagates.
        (_, Some(e)) => Err(e),
        (r, None) => r.map_err(to_py),
    }
}
