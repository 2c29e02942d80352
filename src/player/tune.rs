//! The look being tuned: one [`Look`] with every setting given, resolved over the recording
//! exactly as `forge render` resolves a look, so the settings the window draws with are the
//! ones a render is handed with `--look`.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::bfs::Reader;
use crate::look::{Look, Size};
use crate::video::resolve::{self, Layers, Resolved};

/// The frame size when no layer of the look gives one: a window that fits most screens.
pub const DEFAULT_SIZE: Size = Size([1280, 720]);

pub struct Tuning {
    /// Resolves looks over this recording (its header, the frames measured).
    reader: Reader,
    path: PathBuf,
    resolved: Resolved,
}

impl Tuning {
    /// The look of `layers` over the recording at `path`, resolved; its size, unless a layer
    /// gives one, [`DEFAULT_SIZE`].
    pub fn new(layers: &Layers, mut reader: Reader, path: &Path) -> Result<Tuning> {
        let mut layers = layers.clone();
        let given = layers.flags.size.is_some()
            || layers.file.as_ref().is_some_and(|(_, l)| l.size.is_some())
            || recorded_size(reader.header());
        if !given {
            layers.flags.size = Some(DEFAULT_SIZE);
        }
        let resolved = resolve::resolve(&layers, &mut reader, path)?;
        Ok(Tuning {
            reader,
            path: path.to_path_buf(),
            resolved,
        })
    }

    /// Every setting, as resolved (what is saved).
    pub fn look(&self) -> &Look {
        &self.resolved.look
    }

    pub fn resolved(&self) -> &Resolved {
        &self.resolved
    }

    /// Resolves `edited` (every setting given) in place of the current look; on an error the
    /// current look stays. True if the look changed.
    pub fn apply(&mut self, edited: &Look) -> Result<bool> {
        if *edited == self.resolved.look {
            return Ok(false);
        }
        let r = resolve::resolve(&Layers::flags(edited.clone()), &mut self.reader, &self.path)?;
        let changed = r.look != self.resolved.look;
        self.resolved = r;
        Ok(changed)
    }
}

/// Whether the recording's own `render` section gives a size.
fn recorded_size(h: &crate::bfs::Header) -> bool {
    serde_json::from_str::<serde_json::Value>(&h.scene_json)
        .ok()
        .and_then(|v| v.get("render")?.get("size").cloned())
        .is_some_and(|s| !s.is_null())
}
