//! SIGINT and SIGTERM, for the commands that write outputs (`simulate`, `render`, `still`,
//! `run`, `demo`, `sweep`, `info`, `export`): the first one only sets a flag, which their work
//! loops poll ([`check`]); they stop, clean up on their ordinary error path (FFmpeg stopped,
//! temporary files removed, a recording's complete frames kept) and forge exits 130 (SIGINT) or
//! 143 (SIGTERM). A second signal ends the process at once, with the same code and no clean-up.
//!
//! SIGXFSZ (a file grew past `ulimit -f`) is caught too, so that the write fails with an error
//! (EFBIG), handled like a full disk, instead of killing the process.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use signal_hook::consts::{SIGINT, SIGTERM};

struct Flags {
    any: Arc<AtomicBool>,
    which: Arc<AtomicUsize>,
}

static FLAGS: OnceLock<Flags> = OnceLock::new();

/// Installs the handlers (once; later calls do nothing). Commands that never call [`check`]
/// do not install them, so that a signal ends them as usual.
pub fn install() {
    FLAGS.get_or_init(|| {
        let any = Arc::new(AtomicBool::new(false));
        let which = Arc::new(AtomicUsize::new(0));
        for sig in [SIGINT, SIGTERM] {
            // Registered first, so it runs before `any` is set: only a second signal exits.
            let _ = signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, any.clone());
            let _ = signal_hook::flag::register_usize(sig, which.clone(), sig as usize);
            let _ = signal_hook::flag::register(sig, any.clone());
        }
        #[cfg(unix)]
        let _ = signal_hook::flag::register(
            signal_hook::consts::SIGXFSZ,
            Arc::new(AtomicBool::new(false)),
        );
        Flags { any, which }
    });
}

/// A stop asked for by the program that hosts the library (the Python package, which keeps
/// its own SIGINT handler and turns Ctrl-C into `KeyboardInterrupt`): the signal's number, 0
/// for none.
static HOST_STOP: AtomicUsize = AtomicUsize::new(0);

/// Asks the work loops to stop as if `signal` had been received, without any handler
/// installed: [`caught`] returns it until [`clear_host_stop`].
pub fn host_stop(signal: i32) {
    HOST_STOP.store(signal.max(1) as usize, Ordering::Relaxed);
}

/// Ends a stop asked for by [`host_stop`], so the next piece of work runs.
pub fn clear_host_stop() {
    HOST_STOP.store(0, Ordering::Relaxed);
}

/// The signal received (SIGINT or SIGTERM), if any, or the stop the host asked for.
pub fn caught() -> Option<i32> {
    match HOST_STOP.load(Ordering::Relaxed) {
        0 => {}
        s => return Some(s as i32),
    }
    let f = FLAGS.get()?;
    if !f.any.load(Ordering::Relaxed) {
        return None;
    }
    match f.which.load(Ordering::Relaxed) {
        0 => Some(SIGINT),
        s => Some(s as i32),
    }
}

/// Err once a signal has been received: the work loops call it once per step or frame.
pub fn check() -> Result<(), Interrupted> {
    match caught() {
        Some(signal) => Err(Interrupted::new(signal)),
        None => Ok(()),
    }
}

/// The process's exit code for a signal: 128 + its number (130 for SIGINT, 143 for SIGTERM).
pub fn exit_code(signal: i32) -> u8 {
    (128 + signal).clamp(0, 255) as u8
}

/// The name of SIGINT or SIGTERM.
pub fn name(signal: i32) -> &'static str {
    match signal {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        _ => "a signal",
    }
}

/// Work stopped by a signal; `note` says what was kept.
#[derive(Debug)]
pub struct Interrupted {
    pub signal: i32,
    pub note: String,
}

impl Interrupted {
    pub fn new(signal: i32) -> Interrupted {
        Interrupted {
            signal,
            note: String::new(),
        }
    }

    /// With a note (`"; kept …"`) after "interrupted by SIGINT".
    pub fn noting(signal: i32, note: String) -> Interrupted {
        Interrupted { signal, note }
    }
}

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "interrupted by {}{}", name(self.signal), self.note)
    }
}

impl std::error::Error for Interrupted {}
