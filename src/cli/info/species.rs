//! `forge info`'s species: for a recording with species, each one's name, role, agent count
//! and the colour `--color species` draws it in.

use std::io::Write;

use anyhow::Result;

use super::printable;
use crate::bfs;
use crate::look::Rgb;
use crate::scene::Role;

/// One species of the recording, as `forge info` lists it.
#[derive(serde::Serialize)]
pub(super) struct SpeciesRow {
    name: String,
    /// `flock` or `predator`.
    role: &'static str,
    /// Agents of this species in the recording (its species ids).
    agents: u64,
    /// The colour `--color species` draws it in.
    colour: Rgb,
}

/// The recording's species, in species-index order (empty without species): names and roles
/// from its scene, counts from the species id of each agent it stores.
pub(super) fn species_rows(h: &bfs::Header) -> Vec<SpeciesRow> {
    if h.species.is_empty() {
        return Vec::new();
    }
    let scene = crate::scene::Scene::from_stored_json(&h.scene_json).ok();
    let listed = scene.as_ref().map_or(&[][..], |s| &s.species[..]);
    let mut counts = vec![0u64; listed.len()];
    for &id in &h.species {
        let i = usize::from(id);
        if i >= counts.len() {
            counts.resize(i + 1, 0);
        }
        counts[i] += 1;
    }
    let colours = crate::video::resolve::species_colours(h);
    counts
        .iter()
        .enumerate()
        .map(|(i, &agents)| SpeciesRow {
            name: listed
                .get(i)
                .map_or_else(|| format!("species {i}"), |s| s.name.clone()),
            role: match listed.get(i).map(|s| s.role) {
                Some(Role::Predator) => "predator",
                _ => "flock",
            },
            agents,
            colour: Rgb(colours
                .get(i)
                .or(colours.last())
                .copied()
                .unwrap_or([255, 255, 255])),
        })
        .collect()
}

/// The species of the text output: one line each, name, role, agents and colour.
pub(super) fn write_species_text(out: &mut impl Write, rows: &[SpeciesRow]) -> Result<()> {
    let width = rows
        .iter()
        .map(|r| printable(&r.name).chars().count())
        .max()
        .unwrap_or(0);
    for (i, r) in rows.iter().enumerate() {
        writeln!(
            out,
            "{:<11}{:<width$}  {:<8} {:>8} agents  colour {}",
            if i == 0 { "species" } else { "" },
            printable(&r.name),
            r.role,
            r.agents,
            r.colour,
        )?;
    }
    Ok(())
}
