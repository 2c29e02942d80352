//! Watching the encoder: whether it makes progress (bytes accepted on its input, changes to its
//! output file) within `FORGE_ENCODER_TIMEOUT` (what it wrote is checked in `mp4.rs`). The same
//! timeout bounds every other FFmpeg and ffprobe run ([`crate::process`]), named in
//! [`program_failed`] when one is stopped.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};

use crate::process::Failed;

/// How long the encoder may make no progress before forge gives up on it, unless
/// `FORGE_ENCODER_TIMEOUT` (seconds) says otherwise.
pub const ENCODER_TIMEOUT_S: f64 = 60.0;

/// `FORGE_ENCODER_TIMEOUT` (seconds, > 0), else [`ENCODER_TIMEOUT_S`].
pub fn encoder_timeout() -> Result<Duration> {
    let Some(v) = std::env::var_os("FORGE_ENCODER_TIMEOUT") else {
        return Ok(Duration::from_secs_f64(ENCODER_TIMEOUT_S));
    };
    let text = v.to_string_lossy();
    match text.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 && s < 1e9 => Ok(Duration::from_secs_f64(s)),
        _ => bail!(
            "FORGE_ENCODER_TIMEOUT: {text:?} is not a number of seconds above 0 (default {ENCODER_TIMEOUT_S})"
        ),
    }
}

/// What the writer thread has done: when it last got bytes into the encoder, and whether it
/// has ended (input all written and closed, or failed).
pub(super) struct Fed {
    pub(super) last: Instant,
    pub(super) ended: bool,
}

/// [`Fed`], shared with the writer thread; the condvar wakes whoever waits on progress.
#[derive(Clone)]
pub(super) struct Progress(Arc<(Mutex<Fed>, Condvar)>);

impl Progress {
    pub(super) fn new() -> Progress {
        Progress(Arc::new((
            Mutex::new(Fed {
                last: Instant::now(),
                ended: false,
            }),
            Condvar::new(),
        )))
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Fed> {
        self.0 .0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn update(&self, f: impl FnOnce(&mut Fed)) {
        f(&mut self.lock());
        self.0 .1.notify_all();
    }

    pub(super) fn last(&self) -> Instant {
        self.lock().last
    }

    /// Waits until the writer makes progress after `since` or ends, `timeout` passes since
    /// its last progress, or `slice` passes (so that the caller can look for a signal).
    pub(super) fn wait(&self, since: Instant, timeout: Duration, slice: Duration) -> Waited {
        let until = Instant::now() + slice;
        let mut g = self.lock();
        loop {
            if g.ended || g.last > since {
                return Waited::Progressed;
            }
            let idle = g.last.elapsed();
            if idle >= timeout {
                return Waited::Stalled;
            }
            let now = Instant::now();
            if now >= until {
                return Waited::Pending;
            }
            let left = (timeout - idle).min(until - now);
            g = self
                .0
                 .1
                .wait_timeout(g, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

/// How a [`Progress::wait`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Waited {
    /// The writer progressed (or ended).
    Progressed,
    /// No progress for the timeout.
    Stalled,
    /// Neither yet: the slice is over.
    Pending,
}

/// The output file's length and modification time: it changes while the encoder writes.
pub(super) fn file_stamp(path: &Path) -> Option<(u64, Option<std::time::SystemTime>)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.len(), m.modified().ok()))
}

/// Why running `what` (e.g. "FFmpeg (/usr/bin/ffmpeg)") to `doing` (e.g. "answer `ffmpeg
/// -version`") gave no output, as an error: a signal stays an [`crate::signal::Interrupted`]
/// (forge exits 130 or 143), a stop for want of progress names `FORGE_ENCODER_TIMEOUT`.
pub fn program_failed(e: Failed, what: &str, doing: &str) -> anyhow::Error {
    match e {
        Failed::Interrupted(i) => anyhow::Error::new(i),
        Failed::TimedOut(t) => anyhow!(
            "{what} did not {doing} within {} s: stopped it (FORGE_ENCODER_TIMEOUT sets the \
             limit, in seconds; default {ENCODER_TIMEOUT_S})",
            t.as_secs_f64()
        ),
        Failed::Start(io) => anyhow!("cannot start {what}: {io}"),
        Failed::Wait(io) => anyhow!("waiting for {what}: {io}"),
    }
}
