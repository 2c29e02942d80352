//! External programs (FFmpeg's probes, ffprobe, the concat join): every one forge starts and
//! waits for runs under [`run`], which
//!
//! - gives it a deadline: it is stopped when it has made no progress for [`Limit::timeout`]
//!   (progress: a change to the file it writes, where there is one; otherwise the deadline is
//!   fixed);
//! - stops it on SIGINT/SIGTERM (the [`crate::signal`] flag, polled while it runs), so the
//!   first signal stops forge cleanly with the program;
//! - starts it in a process group of its own, so that stopping it also stops what it started
//!   (a shell script's children), and a terminal's Ctrl-C reaches forge, which stops it;
//! - hands back its exit status and its output (each stream capped at [`KEPT`] bytes) for the
//!   caller to check before it reports success.
//!
//! The encoder, which streams frames for as long as a render lasts, is watched in the same
//! terms by `video::ffmpeg` (no input accepted, no output written, a signal).

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use crate::signal::Interrupted;

/// Bytes of each output stream kept (the rest is read and dropped, so a program that prints
/// without end cannot fill memory or block on a full pipe).
pub const KEPT: usize = 16 << 20;

/// How often a running program's exit, progress and the signal flag are looked at.
const POLL: Duration = Duration::from_millis(20);

/// How long the output of a program that has exited is waited for (a process it left behind,
/// outside its group, may hold the pipes open).
const DRAIN: Duration = Duration::from_secs(2);

/// How long a program may run.
#[derive(Clone, Copy, Debug)]
pub struct Limit<'a> {
    /// Longest time without progress.
    pub timeout: Duration,
    /// A file the program writes: each change to its length or modification time is progress.
    pub progress: Option<&'a Path>,
}

impl Limit<'static> {
    /// A fixed deadline.
    pub fn within(timeout: Duration) -> Limit<'static> {
        Limit {
            timeout,
            progress: None,
        }
    }
}

/// What a finished program gave.
#[derive(Debug)]
pub struct Output {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl Output {
    /// The last `n` non-empty lines of its stderr.
    pub fn stderr_tail(&self, n: usize) -> Vec<String> {
        let text = String::from_utf8_lossy(&self.stderr);
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        lines[lines.len().saturating_sub(n)..]
            .iter()
            .map(|l| l.trim_end().to_string())
            .collect()
    }
}

/// Why a program gave no [`Output`].
#[derive(Debug, thiserror::Error)]
pub enum Failed {
    /// It could not be started (`NotFound`: no such program).
    #[error("{0}")]
    Start(std::io::Error),
    /// No progress for the timeout: it was stopped.
    #[error("made no progress for {} s: stopped it", .0.as_secs_f64())]
    TimedOut(Duration),
    /// A signal arrived: it was stopped.
    #[error(transparent)]
    Interrupted(#[from] Interrupted),
    /// Waiting for it failed.
    #[error("waiting for it: {0}")]
    Wait(std::io::Error),
}

/// Reads `r` to its end on a thread, keeping the first [`KEPT`] bytes.
fn drain(mut r: impl Read + Send + 'static) -> Receiver<Vec<u8>> {
    let (tx, rx) = channel();
    // Should the thread not start, `r` is dropped with it: the pipe closes (the program gets
    // EPIPE rather than blocking) and the output reads as empty.
    let _ = std::thread::Builder::new()
        .name("forge child output".into())
        .spawn(move || {
            let mut kept = Vec::new();
            let mut buf = [0u8; 8192];
            loop {
                match r.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        let room = KEPT.saturating_sub(kept.len());
                        kept.extend_from_slice(&buf[..n.min(room)]);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            let _ = tx.send(kept);
        });
    rx
}

/// Stops `child` and everything in its process group, and reaps it.
fn stop(child: &mut Child) {
    #[cfg(unix)]
    {
        // The child leads its process group (it was started with `process_group(0)`) and has
        // not been reaped, so the group is still its.
        let group = i32::try_from(child.id())
            .ok()
            .and_then(rustix::process::Pid::from_raw);
        if let Some(pid) = group {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The output file's length and modification time: it changes while a program writes it.
fn stamp(path: &Path) -> Option<(u64, Option<std::time::SystemTime>)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.len(), m.modified().ok()))
}

/// Runs `cmd` to its end under `limit` (stdin empty, stdout and stderr captured): see the
/// module's notes.
pub fn run(cmd: &mut Command, limit: &Limit) -> Result<Output, Failed> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    // A signal that came before the start: the program is not started.
    crate::signal::check()?;
    let mut child = cmd.spawn().map_err(Failed::Start)?;
    let out = drain(child.stdout.take().expect("piped"));
    let err = drain(child.stderr.take().expect("piped"));
    let mut last_stamp = limit.progress.and_then(stamp);
    let mut last = Instant::now();
    let status = loop {
        if let Err(i) = crate::signal::check() {
            stop(&mut child);
            return Err(Failed::Interrupted(i));
        }
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) => {}
            Err(e) => {
                stop(&mut child);
                return Err(Failed::Wait(e));
            }
        }
        if let Some(p) = limit.progress {
            let now = stamp(p);
            if now != last_stamp {
                last_stamp = now;
                last = Instant::now();
            }
        }
        if last.elapsed() >= limit.timeout {
            stop(&mut child);
            return Err(Failed::TimedOut(limit.timeout));
        }
        std::thread::sleep(POLL);
    };
    let until = Instant::now() + DRAIN;
    let take = |rx: Receiver<Vec<u8>>| {
        rx.recv_timeout(until.saturating_duration_since(Instant::now()))
            .unwrap_or_default()
    };
    Ok(Output {
        status,
        stdout: take(out),
        stderr: take(err),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_status_and_tail() {
        let mut c = Command::new("sh");
        c.args(["-c", "echo out; echo one >&2; echo two >&2; exit 3"]);
        let o = run(&mut c, &Limit::within(Duration::from_secs(30))).unwrap();
        assert_eq!(o.status.code(), Some(3));
        assert_eq!(o.stdout, b"out\n");
        assert_eq!(o.stderr_tail(1), ["two"]);
    }

    #[test]
    fn a_hang_is_stopped_with_its_children() {
        let mut c = Command::new("sh");
        // The child `sleep` holds the pipes: stopping only the shell would leave them open.
        c.args(["-c", "sleep 100; true"]);
        let t0 = Instant::now();
        let e = run(&mut c, &Limit::within(Duration::from_millis(300))).unwrap_err();
        assert!(matches!(e, Failed::TimedOut(_)), "{e}");
        assert!(t0.elapsed() < Duration::from_secs(20));
    }

    #[test]
    fn a_missing_program_is_a_start_error() {
        let mut c = Command::new("/nonexistent/forge-no-such-program");
        let e = run(&mut c, &Limit::within(Duration::from_secs(5))).unwrap_err();
        assert!(
            matches!(&e, Failed::Start(io) if io.kind() == std::io::ErrorKind::NotFound),
            "{e}"
        );
    }
}
