//! Outputs that appear under their final name only when complete: written to a temporary name
//! beside the final one (`NAME.partial` unless the caller asks otherwise) and renamed on
//! success. The one atomic-write helper of the crate.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// The temporary name an output is written under, beside its final name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TempName {
    /// `NAME.partial`.
    #[default]
    Partial,
    /// `STEM.partial.EXT`: still ends in the final name's extension, for writers that pick
    /// the format from it (plotters' `BitMapBackend`: `plot.png` → `plot.partial.png`).
    KeepExtension,
    /// `.NAME.tmp`, hidden: for an output whose `NAME.partial` means something else (a sweep's
    /// CSV, whose `NAME.partial` holds the rows of an unfinished sweep).
    Hidden,
}

impl TempName {
    fn beside(self, path: &Path) -> PathBuf {
        let name = path
            .file_name()
            .map(|s| s.to_os_string())
            .unwrap_or_default();
        match self {
            TempName::Partial => {
                let mut name = name;
                name.push(".partial");
                path.with_file_name(name)
            }
            TempName::KeepExtension => {
                let mut stem = path
                    .file_stem()
                    .map(|s| s.to_os_string())
                    .unwrap_or_default();
                stem.push(".partial");
                if let Some(ext) = path.extension() {
                    stem.push(".");
                    stem.push(ext);
                }
                path.with_file_name(stem)
            }
            TempName::Hidden => {
                let mut hidden = std::ffi::OsString::from(".");
                hidden.push(name);
                hidden.push(".tmp");
                path.with_file_name(hidden)
            }
        }
    }
}

/// What an output's path holds now.
enum Found {
    /// Nothing, or a regular file that may be replaced.
    Replaceable,
    /// A device or pipe (`/dev/null`, `/dev/full`): written in place.
    Special,
}

fn found(path: &Path, force: bool, what: &str) -> Result<Found> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => bail!("{what} {} is a folder", path.display()),
        Ok(m) if !m.is_file() => Ok(Found::Special),
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

/// Where a recording goes: written to `NAME.partial` beside the final name and renamed on
/// success, so a failed run never leaves a half-written file under the final name. (A run
/// killed outright leaves `NAME.partial`, which opens with every complete frame.) Device
/// files and pipes (`/dev/null`, `/dev/full`) are written in place.
pub struct OutputFile {
    pub path: PathBuf,
    temp: Option<PathBuf>,
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
            // A device or pipe: write in place, nothing to rename.
            let f = OpenOptions::new()
                .write(true)
                .open(path)
                .with_context(|| format!("cannot open {what} {}", path.display()))?;
            return Ok((
                OutputFile {
                    path: path.to_path_buf(),
                    temp: None,
                },
                f,
            ));
        }
        let temp = temp.beside(path);
        let f = OpenOptions::new()
            .write(true)
            .read(true)
            .create(true)
            .truncate(true)
            .open(&temp)
            .with_context(|| format!("cannot create {what} {}", temp.display()))?;
        Ok((
            OutputFile {
                path: path.to_path_buf(),
                temp: Some(temp),
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
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        // Neither committed nor abandoned (an early return or a panic): never leave junk.
        if let Some(t) = self.temp.take() {
            let _ = std::fs::remove_file(t);
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporary_names() {
        let p = Path::new("dir/out.png");
        assert_eq!(
            TempName::Partial.beside(p),
            Path::new("dir/out.png.partial")
        );
        assert_eq!(
            TempName::KeepExtension.beside(p),
            Path::new("dir/out.partial.png")
        );
        assert_eq!(TempName::Hidden.beside(p), Path::new("dir/.out.png.tmp"));
        assert_eq!(
            TempName::KeepExtension.beside(Path::new("plain")),
            Path::new("plain.partial")
        );
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
            assert_eq!(tmp, d.path().join("p.partial.png"));
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
