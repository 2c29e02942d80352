//! Locks on final names: while an output is written, forge holds an exclusive lock (`flock`)
//! on `.NAME.lock` beside it, so a second forge process writing the same output is refused at
//! once. One left by a killed process blocks nothing (the lock dies with the process).

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::thread::ThreadId;

use anyhow::{bail, Context, Result};

use super::shortened;

/// A lock file this process holds: the file, the thread that took it, and how many [`Lock`]s
/// share it (a command claims its outputs up front, and the writer of each output takes the
/// same lock again, on the same thread).
struct Held {
    /// Kept open: closing it releases the lock.
    _file: File,
    owner: ThreadId,
    count: usize,
}

/// The lock files this process holds, by path.
fn held() -> &'static Mutex<HashMap<PathBuf, Held>> {
    static HELD: OnceLock<Mutex<HashMap<PathBuf, Held>>> = OnceLock::new();
    HELD.get_or_init(|| Mutex::new(HashMap::new()))
}

/// `.NAME.lock` beside `path`, in its folder made absolute (so that `x.bfs` and `./x.bfs` get
/// the same lock).
fn lock_path(path: &Path) -> std::io::Result<PathBuf> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut name = OsString::from(".");
    name.push(shortened(path.file_name().unwrap_or_default()));
    name.push(".lock");
    Ok(std::fs::canonicalize(dir)?.join(name))
}

pub(super) fn same_inode(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        a.dev() == b.dev() && a.ino() == b.ino()
    }
    #[cfg(not(unix))]
    {
        let _ = (a, b);
        true
    }
}

/// Opens (creating it if need be) the lock file `key`, never through a symbolic link
/// (`O_NOFOLLOW`: a link planted under the lock's name would make forge create or truncate its
/// target elsewhere) and never anything but a regular file (a FIFO planted there is not
/// waited on: `O_NONBLOCK`).
fn open_lock_file(key: &Path) -> std::io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use rustix::fs::OFlags;
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags((OFlags::NOFOLLOW | OFlags::NONBLOCK).bits() as i32);
    }
    let f = match o.open(key) {
        Ok(f) => f,
        #[cfg(unix)]
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "it is a symbolic link, which forge does not follow (remove it if no forge \
                 process is writing this output)",
            ))
        }
        Err(e) => return Err(e),
    };
    let t = f.metadata()?.file_type();
    if let Some(what) = crate::sys::not_a_file(t) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("it is {what}, not a regular file (remove it)"),
        ));
    }
    Ok(f)
}

/// An exclusive lock on an output's final name, held while it is written: `.NAME.lock` beside
/// it, locked with `flock`, removed when the last holder in this process lets go.
pub struct Lock {
    key: Option<PathBuf>,
}

impl Lock {
    /// Takes the lock of `path`, or fails at once if another process holds it, or another
    /// thread of this one (two calls of the library writing one output, from Python threads
    /// say: `flock` alone would let both through).
    pub fn acquire(path: &Path, what: &str) -> Result<Lock> {
        let key =
            lock_path(path).with_context(|| format!("cannot create {what} {}", path.display()))?;
        let mut held = held().lock().unwrap_or_else(|e| e.into_inner());
        let me = std::thread::current().id();
        if let Some(h) = held.get_mut(&key) {
            if h.owner != me {
                bail!(
                    "{what} {} is being written by another call in this process; wait for it \
                     to finish, or choose another name",
                    path.display()
                );
            }
            h.count += 1;
            return Ok(Lock { key: Some(key) });
        }
        for _ in 0..100 {
            let f = open_lock_file(&key).map_err(|e| {
                anyhow::Error::new(e).context(format!(
                    "cannot create {what} {}: its lock file {}",
                    path.display(),
                    key.display()
                ))
            })?;
            match f.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => bail!(
                    "{what} {} is being written by another forge process (it holds {}); wait \
                     for it to finish, or choose another name",
                    path.display(),
                    key.display()
                ),
                // A file system without locks (some network ones): write unlocked.
                Err(TryLockError::Error(_)) => return Ok(Lock { key: None }),
            }
            // The holder before us may have removed the lock file between our open and our
            // lock: then we hold a lock on a file that has no name, and must try again.
            let ours = f.metadata();
            let named = std::fs::metadata(&key);
            if let (Ok(a), Ok(b)) = (&ours, &named) {
                if same_inode(a, b) {
                    let h = Held {
                        _file: f,
                        owner: me,
                        count: 1,
                    };
                    held.insert(key.clone(), h);
                    return Ok(Lock { key: Some(key) });
                }
            }
        }
        bail!(
            "cannot lock {what} {}: its lock file {} keeps changing",
            path.display(),
            key.display()
        )
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let Some(key) = self.key.take() else { return };
        let mut held = held().lock().unwrap_or_else(|e| e.into_inner());
        let last = match held.get_mut(&key) {
            Some(h) => {
                h.count -= 1;
                h.count == 0
            }
            None => false,
        };
        if last {
            // Removed while still locked; closing the file releases the lock.
            let _ = std::fs::remove_file(&key);
            held.remove(&key);
        }
    }
}
