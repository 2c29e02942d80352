//! Watching the encoder: whether it makes progress (bytes accepted on its input, changes to its
//! output file) within `FORGE_ENCODER_TIMEOUT`, and whether what it wrote is a playable MP4.

use std::io::Read;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

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

/// Why `path` is not a playable MP4, if it is not: empty, no `ftyp` box first, no `moov` box,
/// or boxes that run past the end (a file cut short). Reads only the box headers.
pub fn mp4_problem(path: &Path) -> Option<String> {
    let mut f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) => return Some(format!("cannot open it: {e}")),
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    if len == 0 {
        return Some("it is empty".into());
    }
    let (mut at, mut first, mut moov) = (0u64, true, false);
    while at < len {
        let mut head = [0u8; 16];
        use std::io::Seek;
        if f.seek(std::io::SeekFrom::Start(at)).is_err() || f.read_exact(&mut head[..8]).is_err() {
            return Some(format!("it ends inside a box header at byte {at}"));
        }
        let kind: [u8; 4] = head[4..8].try_into().unwrap();
        let mut size = u32::from_be_bytes(head[..4].try_into().unwrap()) as u64;
        if size == 1 {
            if f.read_exact(&mut head[8..16]).is_err() {
                return Some(format!("it ends inside a box header at byte {at}"));
            }
            size = u64::from_be_bytes(head[8..16].try_into().unwrap());
        } else if size == 0 {
            size = len - at;
        }
        if first && &kind != b"ftyp" {
            return Some("it does not start with an MP4 `ftyp` box".into());
        }
        if size < 8 || at + size > len {
            return Some(format!(
                "its `{}` box at byte {at} runs past the end ({len} bytes): cut short",
                String::from_utf8_lossy(&kind)
            ));
        }
        moov |= &kind == b"moov";
        first = false;
        at += size;
    }
    (!moov).then(|| "it has no `moov` box (no index: unplayable)".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A playable MP4 has an `ftyp` box first and a `moov` box, and no box runs past the end.
    #[test]
    fn mp4_boxes() {
        let dir = tempfile::tempdir().unwrap();
        let boxed = |kind: &[u8; 4], body: usize| {
            let mut b = ((8 + body) as u32).to_be_bytes().to_vec();
            b.extend_from_slice(kind);
            b.resize(8 + body, 0);
            b
        };
        let check = |bytes: &[u8]| {
            let p = dir.path().join("v.mp4");
            std::fs::write(&p, bytes).unwrap();
            mp4_problem(&p)
        };
        let good = [boxed(b"ftyp", 16), boxed(b"moov", 40), boxed(b"mdat", 100)].concat();
        assert_eq!(check(&good), None);
        assert!(check(b"").unwrap().contains("empty"));
        assert!(check(b"not a video").unwrap().contains("ftyp"));
        let no_index = [boxed(b"ftyp", 16), boxed(b"mdat", 100)].concat();
        assert!(check(&no_index).unwrap().contains("moov"));
        assert!(check(&good[..good.len() - 10])
            .unwrap()
            .contains("cut short"));
        assert!(mp4_problem(&dir.path().join("missing.mp4"))
            .unwrap()
            .contains("cannot open"));
    }
}
