//! The extended XYZ writer (`.xyz`), for OVITO, ASE and ParaView (through ASE): one block per
//! frame,
//!
//! ```text
//! N
//! Lattice="Lx 0 0 0 Ly 0 0 0 Lz" Origin="0 0 0" pbc="T T T" Properties=species:S:1:pos:R:3:velo:R:3:id:I:1:Z:I:1 Time=… Step=… Frame=…
//! starling x y z vx vy vz 0 0
//! …
//! ```
//!
//! - `species`: the agent's species name where the recording has species (characters other
//!   than letters, digits, `_`, `-` and `.` become `_`, so a name stays one column), else
//!   `boid` or `particle` (Vicsek). OVITO makes them its particle types.
//! - `pos`, `velo`: 2D runs lie in the plane z = 0 (velocity z 0), in a box one unit deep;
//!   3D as recorded. Floats are the shortest decimals that read back to the same float32.
//! - `id`: the agent's index, the same in every frame (OVITO's Particle Identifier).
//! - `Z`: 0 for every agent. ASE takes a `Z` column as the atomic numbers (0: its dummy atom
//!   `X`) instead of reading `species` as chemical symbols, which flock species are not.
//! - The world box is the `Lattice` from the origin; `pbc` is `T` along each axis of a
//!   wrapping world (2D: `T T F`), else `F`.
//! - `Time` (step × dt), `Step` and `Frame` (the recording's frame number) per block.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::Result;

use super::Selection;
use crate::bfs::{Header, Reader};
use crate::scene::{Boundary, Model, Scene};

/// The species column's text for each species id, and for agents without one.
struct Names {
    by_id: Vec<String>,
    plain: String,
}

impl Names {
    fn of(h: &Header) -> Names {
        let scene = Scene::from_stored_json(&h.scene_json).ok();
        let by_id = scene
            .as_ref()
            .map(|s| s.species.iter().map(|sp| column_text(&sp.name)).collect())
            .unwrap_or_default();
        let plain = match h.model {
            Model::Vicsek => "particle",
            Model::Boids => "boid",
        };
        Names {
            by_id,
            plain: plain.into(),
        }
    }

    /// Agent `i`'s name, from the header's species ids where they cover the frame's `n`.
    fn of_agent<'a>(&'a self, h: &Header, n: usize, i: usize) -> &'a str {
        if h.species.len() == n {
            if let Some(name) = self.by_id.get(h.species[i] as usize) {
                return name;
            }
        }
        &self.plain
    }
}

/// `name` as one whitespace-free token: characters other than ASCII letters, digits, `_`,
/// `-` and `.` become `_`.
fn column_text(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The comment line's box and properties, the same for every frame.
fn box_line(h: &Header) -> String {
    let dim = usize::from(h.dim);
    let side = |k: usize| if k < dim { h.world_size[k] } else { 1.0 };
    let wraps = h.boundary == Boundary::Wrap;
    let pbc: Vec<&str> = (0..3)
        .map(|k| if wraps && k < dim { "T" } else { "F" })
        .collect();
    format!(
        "Lattice=\"{} 0 0 0 {} 0 0 0 {}\" Origin=\"0 0 0\" pbc=\"{}\" \
         Properties=species:S:1:pos:R:3:velo:R:3:id:I:1:Z:I:1",
        side(0),
        side(1),
        side(2),
        pbc.join(" ")
    )
}

/// Writes the selected frames of `r` to `file` as extended XYZ; the first frame's agent count
/// and the file.
pub(super) fn write(
    r: &mut Reader,
    input: &Path,
    sel: &Selection,
    file: File,
    bar: &indicatif::ProgressBar,
) -> Result<(u64, File)> {
    let h = r.header().clone();
    let dim = usize::from(h.dim);
    let names = Names::of(&h);
    let fixed = box_line(&h);
    let mut w = BufWriter::with_capacity(1 << 20, file);
    let first = super::each_frame(r, input, sel, bar, |k, frame, n| {
        let time = frame.step as f64 * h.dt as f64;
        // The agents there at the frame's step (the last column but one is the agent's id).
        writeln!(w, "{}", frame.present_count(n))?;
        writeln!(w, "{fixed} Time={time} Step={} Frame={k}", frame.step)?;
        let axis = |a: &[f32], c: usize, i: usize| if c < dim { a[c * n + i] } else { 0.0 };
        for i in (0..n).filter(|&i| !frame.is_absent(i)) {
            let (p, v) = (&frame.pos, &frame.vel);
            writeln!(
                w,
                "{} {} {} {} {} {} {} {i} 0",
                names.of_agent(&h, n, i),
                axis(p, 0, i),
                axis(p, 1, i),
                axis(p, 2, i),
                axis(v, 0, i),
                axis(v, 1, i),
                axis(v, 2, i),
            )?;
        }
        Ok(())
    })?;
    let file = w.into_inner().map_err(|e| e.into_error())?;
    Ok((first, file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn species_names_are_one_token() {
        assert_eq!(column_text("red fish"), "red_fish");
        assert_eq!(column_text("falcon-2.b"), "falcon-2.b");
        assert_eq!(column_text("\"q\"é"), "_q__");
    }
}
