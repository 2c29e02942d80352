//! Where the species step's per-agent extras can act, per grid cell: a rare agent among a
//! cell's neighbour candidates (the correction of [`super::species`]' plain candidate loop),
//! a predator within flight reach of an agent in the cell. Most of a big flock is in neither,
//! and there the step skips them; the bits are supersets of where they act, so skipping
//! changes nothing (same bytes), it only saves their per-agent tests.

use super::grid::Grid;
use super::species::{Hunter, Rare, Species};
use super::Params;

/// A rare agent is in one of the cell's neighbour cells (its candidate ranges).
pub const RARE: u8 = 1;
/// A predator may be within the flee radius of an agent in the cell.
pub const HUNTED: u8 = 2;

/// The bits of every grid cell, rebuilt each step ([`Reach::mark`]).
#[derive(Default)]
pub struct Reach {
    cells: Vec<u8>,
}

impl Reach {
    /// The bits of cell `c`.
    #[inline(always)]
    pub fn at(&self, c: u32) -> u8 {
        self.cells[c as usize]
    }

    /// Marks the cells of grid `g` (its slots sorted, `rare` in its slots) for this step's
    /// rare agents and predators (`hunters`, at their positions before the step).
    pub fn mark(
        &mut self,
        sp: &Species,
        p: &Params,
        g: &Grid,
        dim: usize,
        rare: &[Rare],
        hunters: &[Hunter],
    ) {
        self.cells.clear();
        self.cells.resize(g.ncells, 0);
        let wraps = p.wraps();
        // A rare agent is a candidate of exactly the cells whose neighbour block holds its
        // own: the block around it (the relation is symmetric: coordinates at most one
        // apart, around the world where it wraps).
        let cells = &mut self.cells;
        for r in rare {
            let cc = g.coords(g.scell[r.slot as usize] as usize);
            g.each_cell_around(dim, wraps, cc, [1; 3], |c| cells[c] |= RARE);
        }
        // Every cell that can hold an agent within the flee radius of a predator, as the
        // chase's own search counts them.
        let r2 = sp.flee.iter().map(|f| f.0).fold(0.0f32, f32::max);
        if r2 > 0.0 {
            for h in hunters {
                g.each_cell_within(dim, wraps, &h.pos, r2.sqrt(), |c| cells[c] |= HUNTED);
            }
        }
    }
}
