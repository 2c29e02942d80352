//! Outputs that appear under their final name only when complete, and that no two runs share.
//! The one atomic-write helper of the crate.
//!
//! - **Temporary names.** An output is written under a unique name beside its final one,
//!   created exclusively (`O_EXCL`): `NAME.XXXXXX.partial` (six random letters or digits) unless
//!   the caller asks otherwise, then renamed over the final name when complete. Two runs never
//!   write the same temporary file.
//! - **A lock on the final name.** While an output is written, forge holds an exclusive lock
//!   (`flock`) on `.NAME.lock` beside it; a second forge process writing the same output is
//!   refused at once, naming it. The lock file is removed when the writer is done; one left by
//!   a killed process blocks nothing (the operating system releases the lock with the
//!   process), and the next writer takes it over.
//! - **Checked before any work** ([`claim`]): every output of a command against every input
//!   (the same file, by device and inode, so links and `./a.bfs` are caught: refused even with
//!   `--force`), against the command's other outputs, against a folder of that name, and
//!   against an existing file (refused without `--force`).
//!
//! Devices (`/dev/null`, `/dev/full`) are written in place, unlocked. A FIFO or a socket is
//! refused, naming what it is: nothing may be reading it, and opening a FIFO without a reader
//! waits for one forever. Every output of every command is opened here.

use std::ffi::{OsStr, OsString};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

mod lock;

use lock::same_inode;
pub use lock::Lock;

/// The temporary name an output is written under, beside its final name; `XXXXXX` is random.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TempName {
    /// `NAME.XXXXXX.partial`.
    #[default]
    Partial,
    /// `STEM.XXXXXX.partial.EXT`: still ends in the final name's extension, for writers that
    /// pick the format from it (plotters' `BitMapBackend`: `plot.png` → `plot.XXXXXX.partial.png`).
    KeepExtension,
    /// `.NAME.XXXXXX.tmp`, hidden: for an output whose `NAME.partial` means something else (a
    /// sweep's CSV, whose `NAME.partial` holds the rows of an unfinished sweep).
    Hidden,
}

/// Longest part of the final name kept in a temporary name (bytes), so that the temporary name
/// fits in a file name (255 bytes) whenever the final one does.
const NAME_KEPT: usize = 200;

/// `name` cut to at most [`NAME_KEPT`] bytes (at a character boundary where it is UTF-8).
fn shortened(name: &OsStr) -> OsString {
    if name.len() <= NAME_KEPT {
        return name.to_os_string();
    }
    match name.to_str() {
        Some(s) => {
            let mut end = NAME_KEPT;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            OsString::from(&s[..end])
        }
        None => OsString::from(name.to_string_lossy().chars().take(50).collect::<String>()),
    }
}

impl TempName {
    /// What goes before and after the random part.
    fn parts(self, path: &Path) -> (OsString, OsString) {
        let name = shortened(path.file_name().unwrap_or_default());
        match self {
            TempName::Partial => {
                let mut prefix = name;
                prefix.push(".");
                (prefix, ".partial".into())
            }
            TempName::KeepExtension => {
                let mut prefix = shortened(path.file_stem().unwrap_or_default());
                prefix.push(".");
                let mut suffix = OsString::from(".partial");
                if let Some(ext) = path.extension() {
                    suffix.push(".");
                    suffix.push(shortened(ext));
                }
                (prefix, suffix)
            }
            TempName::Hidden => {
                let mut prefix = OsString::from(".");
                prefix.push(name);
                prefix.push(".");
                (prefix, ".tmp".into())
            }
        }
    }

    /// Creates a new file with a unique temporary name beside `path` (never an existing one).
    pub fn create_beside(self, path: &Path) -> std::io::Result<(File, PathBuf)> {
        let (prefix, suffix) = self.parts(path);
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let mut b = tempfile::Builder::new();
        b.prefix(&prefix).suffix(&suffix).rand_bytes(6);
        #[cfg(unix)]
        {
            // tempfile's default is 0600; an output gets the usual 0666 less the umask.
            use std::os::unix::fs::PermissionsExt;
            b.permissions(std::fs::Permissions::from_mode(0o666));
        }
        let named = b.tempfile_in(dir)?;
        let (file, made) = named.keep().map_err(|e| e.error)?;
        // The name as the caller wrote the folder (`x.bfs` → `x.bfs.Ab3xZ9.partial`, not
        // `./x.bfs.Ab3xZ9.partial`).
        let temp = path.with_file_name(made.file_name().unwrap_or_default());
        Ok((file, temp))
    }
}

// ---------------------------------------------------------------------------------------------
// Checks

/// What an output's path holds now.
enum Found {
    /// Nothing, or a regular file that may be replaced.
    Replaceable,
    /// A device (`/dev/null`, `/dev/full`): written in place.
    Special,
}

/// Refuses a FIFO or socket as an output (see the module's notes).
fn refuse_pipe(path: &Path, t: std::fs::FileType, what: &str) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() || t.is_socket() {
            bail!(
                "{what} {} is {}, not a regular file: forge writes its outputs to files (or to a \
                 device such as /dev/null); choose another name",
                path.display(),
                crate::sys::not_a_file(t).unwrap_or("not a regular file")
            );
        }
    }
    #[cfg(not(unix))]
    let _ = (path, t, what);
    Ok(())
}

fn found(path: &Path, force: bool, what: &str) -> Result<Found> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => bail!("{what} {} is a folder", path.display()),
        Ok(m) if !m.is_file() => {
            refuse_pipe(path, m.file_type(), what)?;
            Ok(Found::Special)
        }
        Ok(_) if !force => bail!(
            "{what} {} already exists (use --force to overwrite it)",
            path.display()
        ),
        _ => Ok(Found::Replaceable),
    }
}

/// The checks [`OutputFile::create`] makes (not a folder; an existing regular file only with
/// `force`), for callers that want to refuse an output before any work.
pub fn check_writable(path: &Path, force: bool, what: &str) -> Result<()> {
    found(path, force, what).map(|_| ())
}

/// Whether `a` and `b` are one file (device and inode), both existing.
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => {
            #[cfg(unix)]
            {
                same_inode(&x, &y)
            }
            #[cfg(not(unix))]
            {
                let _ = (x, y);
                std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok()
            }
        }
        _ => false,
    }
}

/// Where an output will be: its folder made absolute, and its name.
fn place(path: &Path) -> Option<PathBuf> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    Some(std::fs::canonicalize(dir).ok()?.join(path.file_name()?))
}

fn is_special(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_dir() && !m.is_file())
}

/// A command's outputs, checked and locked by [`claim`]; the locks are held until it is
/// dropped (the writers of the outputs take the same locks again, which is allowed).
pub struct Claim {
    _locks: Vec<Lock>,
}

/// Checks every output of a command before any work, and locks them: `outputs` and `inputs`
/// are `(path, what)`, `what` naming it in messages (`"output"`, `"--bfs"`, `"scene file"`).
///
/// Refused: an output that is the same file as an input (even with `force`); two outputs that
/// are one file; an output being written by another forge process; a folder; an existing file
/// without `force`.
pub fn claim(outputs: &[(&Path, &str)], inputs: &[(&Path, &str)], force: bool) -> Result<Claim> {
    for (out, what) in outputs {
        if is_special(out) {
            continue;
        }
        for (input, in_what) in inputs {
            if same_file(out, input) {
                bail!(
                    "{what} {} is the same file as the {in_what} {}: forge never writes over \
                     an input (not even with --force); choose another output name",
                    out.display(),
                    input.display()
                );
            }
        }
    }
    for (i, (a, what_a)) in outputs.iter().enumerate() {
        for (b, what_b) in &outputs[i + 1..] {
            if is_special(a) || is_special(b) {
                continue;
            }
            let same = same_file(a, b) || place(a).is_some_and(|p| Some(p) == place(b));
            if same {
                bail!(
                    "{what_a} {} and {what_b} {} are the same file: give them different names",
                    a.display(),
                    b.display()
                );
            }
        }
    }
    let mut locks = Vec::new();
    for (out, what) in outputs {
        if let Found::Special = found(out, true, what)? {
            continue;
        }
        locks.push(Lock::acquire(out, what)?);
        found(out, force, what)?;
    }
    Ok(Claim { _locks: locks })
}

// ---------------------------------------------------------------------------------------------
// Writing

/// Where a recording goes: written to a new `NAME.XXXXXX.partial` beside the final name,
/// locked against other forge processes, and renamed on success, so a failed run never leaves
/// a half-written file under the final name. (A run killed outright leaves the `.partial`,
/// which opens with every complete frame.) Devices (`/dev/null`, `/dev/full`) are written in
/// place; FIFOs and sockets are refused.
pub struct OutputFile {
    pub path: PathBuf,
    temp: Option<PathBuf>,
    // Dropped after `Drop::drop` has removed an unfinished temporary file.
    _lock: Option<Lock>,
}

impl OutputFile {
    /// Opens the output. An existing regular file is an error unless `force`.
    pub fn create(path: &Path, force: bool, what: &str) -> Result<(OutputFile, File)> {
        OutputFile::create_as(path, TempName::Partial, force, what)
    }

    /// [`OutputFile::create`], written under the temporary name `temp`.
    pub fn create_as(
        path: &Path,
        temp: TempName,
        force: bool,
        what: &str,
    ) -> Result<(OutputFile, File)> {
        if let Found::Special = found(path, force, what)? {
            // A device: write in place, nothing to rename. Opened without blocking, and its
            // type checked again on the descriptor (a FIFO swapped in meanwhile is refused).
            let f = open_device(path)
                .with_context(|| format!("cannot open {what} {}", path.display()))?;
            refuse_pipe(path, f.metadata()?.file_type(), what)?;
            return Ok((
                OutputFile {
                    path: path.to_path_buf(),
                    temp: None,
                    _lock: None,
                },
                f,
            ));
        }
        let lock = Lock::acquire(path, what)?;
        // Checked again under the lock: another forge may have finished it meanwhile.
        found(path, force, what)?;
        let (f, temp) = temp
            .create_beside(path)
            .with_context(|| format!("cannot create {what} {}", path.display()))?;
        Ok((
            OutputFile {
                path: path.to_path_buf(),
                temp: Some(temp),
                _lock: Some(lock),
            },
            f,
        ))
    }

    /// The name being written now.
    pub fn writing_path(&self) -> &Path {
        self.temp.as_deref().unwrap_or(&self.path)
    }

    /// Move the finished file to its final name.
    pub fn commit(mut self) -> Result<()> {
        if let Some(t) = self.temp.take() {
            std::fs::rename(&t, &self.path).with_context(|| {
                format!("cannot rename {} to {}", t.display(), self.path.display())
            })?;
        }
        Ok(())
    }

    /// Remove what was written (failed run).
    pub fn abandon(mut self) {
        if let Some(t) = self.temp.take() {
            let _ = std::fs::remove_file(t);
        }
    }

    /// Leave what was written under its temporary name (an unfinished recording's complete
    /// frames) and return that name; None for an output written in place.
    pub fn keep(mut self) -> Option<PathBuf> {
        self.temp.take()
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        // Neither committed nor abandoned (an early return or a panic): never leave junk.
        if let Some(t) = self.temp.take() {
            let _ = std::fs::remove_file(t);
        }
    }
}

/// Opens a device for writing with `O_NONBLOCK` (so the open itself cannot wait), then clears
/// the flag for the writes.
fn open_device(path: &Path) -> std::io::Result<File> {
    let mut o = OpenOptions::new();
    o.write(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(crate::sys::NONBLOCK);
    }
    let f = o.open(path)?;
    #[cfg(unix)]
    crate::sys::clear_nonblock(&f);
    Ok(f)
}

/// Write `bytes` to `path` all at once: under the temporary name `temp`, synced, then renamed
/// over `path`. Nothing is left under either name if it fails.
pub fn write_atomic(
    path: &Path,
    bytes: &[u8],
    temp: TempName,
    force: bool,
    what: &str,
) -> Result<()> {
    let (out, mut f) = OutputFile::create_as(path, temp, force, what)?;
    f.write_all(bytes)
        .and_then(|_| f.sync_data())
        .with_context(|| format!("cannot write {what} {}", out.writing_path().display()))?;
    drop(f);
    out.commit()
}

/// Draw into a file whose temporary name keeps `path`'s extension (so a writer that picks the
/// format from the name, such as plotters' `BitMapBackend`, sees it), then rename it to
/// `path`. `draw` gets the name to write; on an error nothing is left under either name.
pub fn write_by_name(
    path: &Path,
    force: bool,
    what: &str,
    draw: impl FnOnce(&Path) -> Result<()>,
) -> Result<()> {
    let (out, f) = OutputFile::create_as(path, TempName::KeepExtension, force, what)?;
    // The writer opens the file by its name.
    drop(f);
    match draw(out.writing_path()) {
        Ok(()) => out.commit(),
        Err(e) => {
            out.abandon();
            Err(e)
        }
    }
}

/// The default output of a scene, `NAME.EXT` in the current folder (or in `dir`): built from
/// the scene's name only if that is a plain file name (the scene's validation allows no
/// other), never a path that leads elsewhere.
pub fn default_name(dir: Option<&Path>, name: &str, ext: &str) -> Result<PathBuf> {
    let file = format!("{name}.{ext}");
    let plain = !name.is_empty()
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\'])
        && !name.chars().any(char::is_control)
        && Path::new(&file).components().count() == 1
        && matches!(
            Path::new(&file).components().next(),
            Some(std::path::Component::Normal(_))
        );
    if !plain {
        bail!("scene.name: {name:?} cannot name a file (use -o to choose the output)");
    }
    Ok(match dir {
        Some(d) => d.join(file),
        None => PathBuf::from(file),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::TryLockError;

    /// The temporary name made for `path` by `t`, split at its random part.
    fn made(t: TempName, path: &Path) -> (String, String, String) {
        let (f, temp) = t.create_beside(path).unwrap();
        drop(f);
        assert_eq!(temp.parent(), path.parent(), "{}", temp.display());
        let name = temp.file_name().unwrap().to_str().unwrap().to_string();
        std::fs::remove_file(&temp).unwrap();
        let (prefix, suffix) = t.parts(path);
        let (prefix, suffix) = (prefix.into_string().unwrap(), suffix.into_string().unwrap());
        assert!(
            name.starts_with(&prefix) && name.ends_with(&suffix),
            "{name}"
        );
        let random = name[prefix.len()..name.len() - suffix.len()].to_string();
        (prefix, random, suffix)
    }

    #[test]
    fn temporary_names() {
        let d = tempfile::TempDir::new().unwrap();
        let p = d.path().join("out.png");
        let (pre, r, suf) = made(TempName::Partial, &p);
        assert_eq!(
            (pre.as_str(), r.len(), suf.as_str()),
            ("out.png.", 6, ".partial")
        );
        assert!(r.chars().all(|c| c.is_ascii_alphanumeric()), "{r}");
        let (pre, _, suf) = made(TempName::KeepExtension, &p);
        assert_eq!((pre.as_str(), suf.as_str()), ("out.", ".partial.png"));
        let (pre, _, suf) = made(TempName::Hidden, &p);
        assert_eq!((pre.as_str(), suf.as_str()), (".out.png.", ".tmp"));
        let (pre, _, suf) = made(TempName::KeepExtension, &d.path().join("plain"));
        assert_eq!((pre.as_str(), suf.as_str()), ("plain.", ".partial"));
        // Unique, and created exclusively: two at once get two names.
        let (f1, t1) = TempName::Partial.create_beside(&p).unwrap();
        let (f2, t2) = TempName::Partial.create_beside(&p).unwrap();
        assert_ne!(t1, t2);
        drop((f1, f2));
        // A long final name still gives a temporary name that fits in 255 bytes.
        let long = d.path().join(format!("{}.bfs", "é".repeat(120)));
        let (pre, _, suf) = made(TempName::Partial, &long);
        assert!(pre.len() + 6 + suf.len() <= 255);
        // A relative name keeps its spelling.
        let rel = Path::new("x.bfs");
        let (prefix, suffix) = TempName::Partial.parts(rel);
        assert_eq!(
            (prefix.to_str(), suffix.to_str()),
            (Some("x.bfs."), Some(".partial"))
        );
    }

    #[test]
    fn a_lock_is_shared_in_one_process_and_removed_after() {
        let d = tempfile::TempDir::new().unwrap();
        let p = d.path().join("a.bfs");
        let lock_file = d.path().join(".a.bfs.lock");
        let a = Lock::acquire(&p, "output").unwrap();
        assert!(lock_file.exists());
        let b = Lock::acquire(&d.path().join(".").join("a.bfs"), "output").unwrap();
        // Another open file description of the same lock file cannot take it.
        let other = File::open(&lock_file).unwrap();
        assert!(matches!(other.try_lock(), Err(TryLockError::WouldBlock)));
        drop(a);
        assert!(lock_file.exists(), "still held by b");
        drop(b);
        assert!(!lock_file.exists(), "removed by the last holder");
        // A lock file left behind (a killed process) blocks nothing.
        std::fs::write(&lock_file, b"").unwrap();
        drop(Lock::acquire(&p, "output").unwrap());
        assert!(!lock_file.exists());
    }

    #[test]
    fn claims_refuse_inputs_and_clashes() {
        let d = tempfile::TempDir::new().unwrap();
        let a = d.path().join("a.bfs");
        std::fs::write(&a, b"input").unwrap();
        let dot = d.path().join(".").join("a.bfs");
        let e = claim(&[(&dot, "output")], &[(&a, "input")], true)
            .err()
            .unwrap();
        assert!(e.to_string().contains("same file as the input"), "{e}");
        #[cfg(unix)]
        {
            let link = d.path().join("link.bfs");
            std::os::unix::fs::symlink(&a, &link).unwrap();
            assert!(claim(&[(&link, "output")], &[(&a, "input")], true).is_err());
            let hard = d.path().join("hard.bfs");
            std::fs::hard_link(&a, &hard).unwrap();
            assert!(claim(&[(&hard, "output")], &[(&a, "input")], true).is_err());
        }
        let x = d.path().join("x.mp4");
        let e = claim(
            &[(&x, "--bfs"), (&d.path().join("./x.mp4"), "output")],
            &[],
            true,
        )
        .err()
        .unwrap();
        assert!(e.to_string().contains("are the same file"), "{e}");
        assert_eq!(std::fs::read(&a).unwrap(), b"input");
        let e = claim(&[(&a, "output")], &[], false).err().unwrap();
        assert!(e.to_string().contains("already exists"), "{e}");
        let c = claim(&[(&x, "output")], &[(&a, "input")], false).unwrap();
        assert!(d.path().join(".x.mp4.lock").exists());
        drop(c);
        assert!(!d.path().join(".x.mp4.lock").exists());
    }

    #[test]
    fn default_names_stay_in_the_folder() {
        assert_eq!(
            default_name(None, "a b é", "bfs").unwrap(),
            Path::new("a b é.bfs")
        );
        for bad in [
            "../x", "/tmp/x", "a/b", "..", ".", "", "a\\b", "a\u{7}b", "a\0b",
        ] {
            assert!(default_name(None, bad, "bfs").is_err(), "{bad:?}");
        }
    }

    #[test]
    fn atomic_writes_refuse_folders_and_existing_files() {
        let d = tempfile::TempDir::new().unwrap();
        let p = d.path().join("a.csv");
        write_atomic(&p, b"one\n", TempName::Hidden, false, "--output:").unwrap();
        let e = write_atomic(&p, b"two\n", TempName::Hidden, false, "--output:").unwrap_err();
        assert!(e.to_string().contains("already exists"), "{e}");
        write_atomic(&p, b"two\n", TempName::Hidden, true, "--output:").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two\n");
        let e = write_atomic(d.path(), b"", TempName::Hidden, true, "--output:").unwrap_err();
        assert!(e.to_string().contains("is a folder"), "{e}");
        let names: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "only a.csv is left");
    }

    #[test]
    fn a_failed_drawing_leaves_nothing() {
        let d = tempfile::TempDir::new().unwrap();
        let p = d.path().join("p.png");
        let e = write_by_name(&p, false, "plot", |tmp| {
            let name = tmp.file_name().unwrap().to_str().unwrap();
            assert!(
                name.starts_with("p.") && name.ends_with(".partial.png"),
                "{name}"
            );
            std::fs::write(tmp, b"half")?;
            bail!("drawing failed")
        })
        .unwrap_err();
        assert!(e.to_string().contains("drawing failed"));
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
        write_by_name(&p, false, "plot", |tmp| Ok(std::fs::write(tmp, b"png")?)).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"png");
    }
}
