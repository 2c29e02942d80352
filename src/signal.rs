//! SIGINT and SIGTERM, for the commands that write outputs (`simulate`, `render`, `still`,
//! `run`, `demo`, `sweep`, `info`, `export`): the first one only sets a flag, which their work
//! loops poll ([`check`]); they stop, clean up on their ordinary error path (FFmpeg stopped,
//! temporary files removed, a recording's complete frames kept) and forge exits 130 (SIGINT) or
//! 143 (SIGTERM). A second signal ends the process at once, with the same code and no clean-up.
//!
//! SIGXFSZ (a file grew past `ulimit -f`) is caught too, so that the write fails with an error
//! (EFBIG), handled like a full disk, instead of killing the process.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
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

thread_local! {
    /// The stop of the call this thread runs for a program that hosts the library (the Python
    /// package, which keeps its own SIGINT handler and turns Ctrl-C into `KeyboardInterrupt`):
    /// a signal's number once that call is to stop, 0 until then. See [`with_stop`].
    static CALL_STOP: std::cell::RefCell<Option<Arc<AtomicI32>>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `work` on this thread with `stop` as its call's stop: while it runs, [`caught`] on
/// this thread also returns the signal stored in `stop` (0: none), as if it had been received.
/// Each call of a host has a flag of its own, so a stop reaches that call and no other; the
/// work loops that poll [`check`] run on the calling thread (reader and encoder threads never
/// do).
pub fn with_stop<T>(stop: Arc<AtomicI32>, work: impl FnOnce() -> T) -> T {
    struct Reset(Option<Arc<AtomicI32>>);
    impl Drop for Reset {
        fn drop(&mut self) {
            let before = self.0.take();
            CALL_STOP.with(|c| *c.borrow_mut() = before);
        }
    }
    let _reset = Reset(CALL_STOP.with(|c| c.borrow_mut().replace(stop)));
    work()
}

/// The signal received (SIGINT or SIGTERM), if any, or the stop of this thread's call
/// ([`with_stop`]).
pub fn caught() -> Option<i32> {
    let call = CALL_STOP.with(|c| c.borrow().as_ref().map(|s| s.load(Ordering::Relaxed)));
    if let Some(s @ 1..) = call {
        return Some(s);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A call's stop reaches the thread running that call only, and ends with it.
    #[test]
    fn a_calls_stop_reaches_its_own_thread_only() {
        let mine = Arc::new(AtomicI32::new(0));
        let other = Arc::new(AtomicI32::new(0));
        let (go, ready) = std::sync::mpsc::channel::<()>();
        let (seen_tx, seen) = std::sync::mpsc::channel();
        let o = other.clone();
        let t = std::thread::spawn(move || {
            with_stop(o, || {
                ready.recv().unwrap();
                seen_tx.send(caught()).unwrap();
            })
        });
        with_stop(mine.clone(), || {
            assert_eq!(caught(), None);
            mine.store(SIGTERM, Ordering::Relaxed);
            assert_eq!(caught(), Some(SIGTERM));
            assert!(check().is_err());
            go.send(()).unwrap();
            assert_eq!(
                seen.recv().unwrap(),
                None,
                "another call saw this call's stop"
            );
        });
        t.join().unwrap();
        assert_eq!(caught(), None, "the stop outlived its call");
    }
}
