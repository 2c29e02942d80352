//! A recording's timeline in `forge info`: its keys listed, and each keyed parameter's value at
//! every measured frame (for the CSV, the plot, `--against`).

use std::io::Write;

use anyhow::{bail, Result};

use crate::bfs::{Header, SourceFormat};
use crate::scene::timeline::{self, Key, Track};
use crate::scene::Scene;

/// Keys listed in the text before the rest is counted.
const LISTED: usize = 12;

/// The timeline a recording's scene holds (none for BFS1 files and scenes without one).
pub(super) struct Keyed {
    pub(super) keys: Vec<Key>,
    pub(super) tracks: Vec<Track>,
}

impl Keyed {
    pub(super) fn of(h: &Header) -> Keyed {
        let scene = match h.source {
            SourceFormat::Forge => Scene::from_stored_json(&h.scene_json).ok(),
            SourceFormat::Bfs1 => None,
        };
        match scene {
            Some(s) => Keyed {
                tracks: timeline::tracks(&s),
                keys: s.timeline,
            },
            None => Keyed {
                keys: Vec::new(),
                tracks: Vec::new(),
            },
        }
    }

    /// `--against PARAM`: the keyed parameter's track, or an error naming the flag and what
    /// the recording keys.
    pub(super) fn track(&self, param: &str) -> Result<&Track> {
        if let Some(t) = self.tracks.iter().find(|t| t.path == param) {
            return Ok(t);
        }
        if self.tracks.is_empty() {
            bail!("--against {param}: the recording has no timeline (nothing is keyed)");
        }
        let names: Vec<&str> = self.tracks.iter().map(|t| t.path.as_str()).collect();
        bail!(
            "--against {param}: the recording's timeline does not key it (it keys {})",
            names.join(", ")
        )
    }

    /// Each keyed parameter's name and its value at each of `steps`.
    pub(super) fn columns(&self, steps: &[u64]) -> Vec<(String, Vec<f64>)> {
        self.tracks
            .iter()
            .map(|t| {
                let v = steps.iter().map(|&s| t.value(s) as f64).collect();
                (t.path.clone(), v)
            })
            .collect()
    }

    pub(super) fn write_text(&self, out: &mut impl Write, dt: f32) -> Result<()> {
        if self.keys.is_empty() {
            return Ok(());
        }
        let names: Vec<&str> = self.tracks.iter().map(|t| t.path.as_str()).collect();
        writeln!(
            out,
            "timeline   {} key{} on {}",
            self.keys.len(),
            if self.keys.len() == 1 { "" } else { "s" },
            names.join(", ")
        )?;
        for k in self.keys.iter().take(LISTED) {
            // The time as the key would give it (dt is a float32: 22, not 22.0000003).
            let t = ((k.step as f64 * dt as f64) as f32).to_string();
            writeln!(out, "  t = {t:<10} {k}")?;
        }
        if self.keys.len() > LISTED {
            writeln!(out, "  ... and {} more keys", self.keys.len() - LISTED)?;
        }
        Ok(())
    }
}
