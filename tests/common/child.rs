//! forge as a child the test controls: started in the background, waited on with a deadline,
//! signalled at a moment the test chooses (a file appears, a marker is written), and stand-in
//! programs (fake `ffmpeg`, `ffprobe`) written as small shell scripts.
//!
//! Every deadline here is generous (tens of seconds where forge's own timeout is a few): a
//! loaded machine makes a test slower, never wrong.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{forge_bin, listing, Run};

/// How forge is started: extra variables, variables removed.
#[derive(Default)]
pub struct Env<'a> {
    pub set: &'a [(&'a str, &'a str)],
    pub remove: &'a [&'a str],
}

fn command(dir: &Path, args: &[&str], env: &Env) -> Command {
    let mut c = Command::new(forge_bin());
    c.args(args)
        .current_dir(dir)
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .stdin(Stdio::null());
    for k in env.remove {
        c.env_remove(k);
    }
    for (k, v) in env.set {
        c.env(k, v);
    }
    c
}

/// forge started in `dir` in the background (stdout dropped, stderr kept for the end).
pub fn start(dir: &Path, args: &[&str], env: &Env) -> Child {
    command(dir, args, env)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("forge starts")
}

/// Runs forge in `dir` to its end, failing the test if it is still running after `limit` (it
/// is killed first).
pub fn run_within(dir: &Path, args: &[&str], env: &Env, limit: Duration) -> Run {
    let mut c = command(dir, args, env);
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = c.spawn().expect("forge starts");
    let (code, stdout, stderr) = wait_output(child, limit, &format!("forge {args:?}"));
    Run {
        code,
        stdout,
        stderr,
    }
}

/// Waits (up to `limit`) until `ready` holds; fails if forge exits first or never gets there.
pub fn wait_until(child: &mut Child, what: &str, limit: Duration, mut ready: impl FnMut() -> bool) {
    let t0 = Instant::now();
    loop {
        if ready() {
            return;
        }
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            panic!("forge stopped ({status}) before {what}:\n{err}");
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("forge did not get to {what} within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Sends `signal` (`libc::SIGINT`, ...) to `child`.
pub fn send(child: &Child, signal: i32) {
    // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
    let rc = unsafe { libc::kill(child.id() as i32, signal) };
    assert_eq!(rc, 0, "kill({}, {signal})", child.id());
}

/// Waits (up to `limit`) for `child` to exit: its code (None: killed by a signal) and stderr.
/// Fails (after killing it) if it is still running then, and if it panicked.
pub fn finish(child: Child, limit: Duration) -> (Option<i32>, String) {
    let (code, _, err) = wait_output(child, limit, "forge");
    (code, err)
}

fn wait_output(mut child: Child, limit: Duration, what: &str) -> (Option<i32>, String, String) {
    use std::io::Read;
    let read = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut s);
            }
            String::from_utf8_lossy(&s).into_owned()
        })
    };
    let out = read(
        child
            .stdout
            .take()
            .map(|o| Box::new(o) as Box<dyn Read + Send>),
    );
    let err = read(
        child
            .stderr
            .take()
            .map(|e| Box::new(e) as Box<dyn Read + Send>),
    );
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} hung: still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    assert!(!err.contains("panicked"), "{what} panicked:\n{err}");
    (status.code(), out, err)
}

/// The temporary files of output `name` in `dir`: `name.XXXXXX.partial`.
pub fn partials_of(dir: &Path, name: &str) -> Vec<PathBuf> {
    listing(dir)
        .into_iter()
        .filter(|n| n.starts_with(&format!("{name}.")) && n.ends_with(".partial"))
        .map(|n| dir.join(n))
        .collect()
}

/// Temporary files and locks left in `dir`: `*.partial*`, `*.tmp`, `.*.lock`.
pub fn leftovers(dir: &Path) -> Vec<String> {
    listing(dir)
        .into_iter()
        .filter(|n| n.contains(".partial") || n.ends_with(".tmp") || n.ends_with(".lock"))
        .collect()
}

/// Writes an executable shell script `dir/name` with `body` after `#!/bin/sh`.
pub fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A stand-in FFmpeg's answers to forge's questions before it encodes (`-version`,
/// `-encoders`, `-h encoder=libx264`), as a real FFmpeg with libx264 gives them; `body` runs
/// for any other call (the encode itself, with the output file last).
pub fn fake_ffmpeg(dir: &Path, name: &str, body: &str) -> PathBuf {
    script(
        dir,
        name,
        &format!(
            "if [ \"$1\" = \"-version\" ]; then\n  \
             echo 'ffmpeg version 6.0 Copyright (c) 2000-2023 the FFmpeg developers'\n  \
             exit 0\nfi\n\
             if [ \"$2\" = \"-encoders\" ]; then\n  \
             echo ' V....D libx264              libx264 H.264 / AVC (codec h264)'\n  exit 0\nfi\n\
             if [ \"$2\" = \"-h\" ]; then\n  echo '    Supported pixel formats: yuv420p'\n  \
             exit 0\nfi\n\
             for a; do out=\"$a\"; done\n{body}"
        ),
    )
}

/// `mkfifo path`.
pub fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs")
        .success();
    assert!(ok, "mkfifo {}", path.display());
}
