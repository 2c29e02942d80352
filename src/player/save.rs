//! The hand-off: the look on screen written as a look file (`NAME.look.json`, what
//! `--print-look` prints), for `forge render FILE --look NAME.look.json` and `forge still`.
//! Written whole under a temporary name and renamed; a file that was there before the player
//! started is replaced only with `--force`.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::look::Look;
use crate::output::{self, TempName};

pub struct Saver {
    path: PathBuf,
    force: bool,
    /// Whether this player has written the file already (it then replaces its own file).
    written: bool,
}

impl Saver {
    pub fn new(path: PathBuf, force: bool) -> Saver {
        Saver {
            path,
            force,
            written: false,
        }
    }

    /// The look file's name for a recording or scene named `stem` (`run.bfs` gives
    /// `run.look.json`), beside `dir`.
    pub fn default_path(dir: Option<&Path>, stem: &str) -> PathBuf {
        let name = format!("{stem}.look.json");
        match dir {
            Some(d) if !d.as_os_str().is_empty() => d.join(name),
            _ => PathBuf::from(name),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `look`.
    pub fn save(&mut self, look: &Look) -> Result<&Path> {
        let mut text = look.to_json();
        text.push('\n');
        self.save_text(&text, "look file")
    }

    /// Writes `text` (`what` names the file in messages).
    pub fn save_text(&mut self, text: &str, what: &str) -> Result<&Path> {
        output::write_atomic(
            &self.path,
            text.as_bytes(),
            TempName::Partial,
            self.force || self.written,
            what,
        )?;
        self.written = true;
        Ok(&self.path)
    }
}
