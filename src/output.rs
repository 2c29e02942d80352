//! Outputs that appear under their final name only when complete: written to `NAME.partial`
//! beside the final name and renamed on success. The one atomic-write helper of the crate.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

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
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => bail!("{what} {} is a folder", path.display()),
            Ok(m) if !m.is_file() => {
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
            Ok(_) if !force => bail!(
                "{what} {} already exists (use --force to overwrite it)",
                path.display()
            ),
            _ => {}
        }
        let mut name = path
            .file_name()
            .map(|s| s.to_os_string())
            .unwrap_or_default();
        name.push(".partial");
        let temp = path.with_file_name(name);
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
