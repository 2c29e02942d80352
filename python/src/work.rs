//! Long work (a recording, a render) run by forge's own code on a worker thread, the GIL
//! released, while this thread watches for Ctrl-C: on one, the work is told to stop, cleans up
//! by the CLI's rules, and the caller gets `KeyboardInterrupt` with forge's note of what was
//! kept. A recording is told through a flag of its own call ([`run_stoppable`]); a render
//! through `forge::signal::host_stop`, the process-wide flag its loops poll for SIGINT.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
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
    run_with(
        py,
        work,
        || signal::host_stop(libc::SIGINT),
        signal::clear_host_stop,
    )
}

/// [`run`] for work that takes a stop flag of its own: Ctrl-C, delivered to this thread, sets
/// only this call's flag (a signal number, 0 while none), so it stops this call and nothing
/// else running in the process, and no other call's Ctrl-C stops this one.
pub fn run_stoppable<T, F>(py: Python<'_>, work: F) -> PyResult<T>
where
    T: Send + 'static,
    F: FnOnce(Arc<AtomicI32>) -> anyhow::Result<T> + Send + 'static,
{
    let stop = Arc::new(AtomicI32::new(0));
    let flag = stop.clone();
    run_with(
        py,
        move || work(flag),
        move || stop.store(libc::SIGINT, Ordering::Relaxed),
        || {},
    )
}

/// The loop of [`run`]: `interrupt` tells the work to stop, `after` tidies up once it has.
fn run_with<T, F>(
    py: Python<'_>,
    work: F,
    interrupt_work: impl FnOnce(),
    after: impl FnOnce(),
) -> PyResult<T>
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
            interrupt_work();
            interrupt = Some(e);
            break;
        }
    }
    let joined = py.detach(|| handle.join());
    after();
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
