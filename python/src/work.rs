//! Long work (a recording, a render) run by forge's own code on a worker thread, the GIL
//! released, while this thread watches for signals:
//!
//! - Ctrl-C (Python's KeyboardInterrupt, delivered to this thread) stops this call and nothing
//!   else running in the process: the work runs under a stop flag of its own
//!   (`forge::signal::with_stop`), cleans up by the CLI's rules, and the caller gets
//!   `KeyboardInterrupt` with forge's note of what was kept. Any other exception a Python
//!   signal handler raises stops the work the same way and is raised as it is.
//! - SIGTERM, where Python would die of it (its disposition is the default): while work runs,
//!   forge catches it, stops every call (no temporary file or half-written output is left),
//!   and then dies of it as the process would have, exit status and all.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;

use forge::signal::{self, Interrupted};

use crate::errors::{to_py, ForgeError};

/// How often this thread looks for a signal while the work runs.
const POLL: Duration = Duration::from_millis(50);

/// Runs `work` as described in the module's notes; returns its result.
pub fn run<T, F>(py: Python<'_>, work: F) -> PyResult<T>
where
    T: Send + 'static,
    F: FnOnce() -> anyhow::Result<T> + Send + 'static,
{
    let stop = Arc::new(AtomicI32::new(0));
    let flag = stop.clone();
    let _term = TermWatch::enter();
    let handle = std::thread::spawn(move || signal::with_stop(flag, work));
    let mut interrupt: Option<PyErr> = None;
    loop {
        let done = py.detach(|| {
            let t = Instant::now();
            while !handle.is_finished() && t.elapsed() < POLL && !TERM.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(2));
            }
            handle.is_finished()
        });
        if done {
            break;
        }
        if TERM.load(Ordering::Relaxed) {
            stop.store(libc::SIGTERM, Ordering::Relaxed);
            break;
        }
        if let Err(e) = py.check_signals() {
            stop.store(libc::SIGINT, Ordering::Relaxed);
            interrupt = Some(e);
            break;
        }
    }
    let joined = py.detach(|| handle.join());
    let result = match joined {
        Ok(r) => r,
        Err(_) => {
            return Err(ForgeError::new_err(
                "internal error: forge's worker thread panicked",
            ))
        }
    };
    match (result, interrupt) {
        // Stopped by Ctrl-C: forge's own words on what it kept.
        (Err(e), Some(i))
            if e.is::<Interrupted>() && i.is_instance_of::<PyKeyboardInterrupt>(py) =>
        {
            Err(PyKeyboardInterrupt::new_err(format!("{e:#}")))
        }
        // Another exception from a signal handler, or work that finished (or failed) before it
        // saw the stop: the exception still propagates.
        (_, Some(e)) => Err(e),
        (r, None) => r.map_err(to_py),
    }
    // `_term` leaves here: the last call out dies of a SIGTERM caught meanwhile.
}

/// Set by [`on_term`]: SIGTERM arrived while forge's handler was installed.
static TERM: AtomicBool = AtomicBool::new(false);

extern "C" fn on_term(_: libc::c_int) {
    TERM.store(true, Ordering::Relaxed);
}

/// Calls running, and whether forge's SIGTERM handler is installed (in place of the default).
static WATCH: Mutex<(usize, bool)> = Mutex::new((0, false));

/// One call's hold on the SIGTERM handler: the first call in installs it where SIGTERM's
/// disposition is the default (a handler or `SIG_IGN` of the program's own is left alone), the
/// last one out puts the default back and, if SIGTERM came meanwhile, raises it again.
struct TermWatch;

impl TermWatch {
    fn enter() -> TermWatch {
        let mut w = WATCH.lock().unwrap_or_else(|p| p.into_inner());
        if w.0 == 0 {
            // SAFETY: reads the current action into a zeroed struct; installs a handler that
            // only stores to an atomic (async-signal-safe).
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(libc::SIGTERM, std::ptr::null(), &mut old) == 0
                    && old.sa_sigaction == libc::SIG_DFL
                {
                    let mut new: libc::sigaction = std::mem::zeroed();
                    new.sa_sigaction = on_term as extern "C" fn(libc::c_int) as usize;
                    new.sa_flags = libc::SA_RESTART;
                    libc::sigemptyset(&mut new.sa_mask);
                    w.1 = libc::sigaction(libc::SIGTERM, &new, std::ptr::null_mut()) == 0;
                }
            }
        }
        w.0 += 1;
        TermWatch
    }
}

impl Drop for TermWatch {
    fn drop(&mut self) {
        let mut w = WATCH.lock().unwrap_or_else(|p| p.into_inner());
        w.0 -= 1;
        if w.0 > 0 || !w.1 {
            return;
        }
        w.1 = false;
        // SAFETY: puts the default action back, then (with every call stopped and cleaned up)
        // raises the SIGTERM that came while forge held it, which ends the process.
        unsafe {
            let mut dfl: libc::sigaction = std::mem::zeroed();
            dfl.sa_sigaction = libc::SIG_DFL;
            libc::sigemptyset(&mut dfl.sa_mask);
            libc::sigaction(libc::SIGTERM, &dfl, std::ptr::null_mut());
            if TERM.swap(false, Ordering::Relaxed) {
                libc::raise(libc::SIGTERM);
            }
        }
    }
}
