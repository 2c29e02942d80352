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
        for r in rare {
            let cc = g.coords(g.scell[r.slot as usize] as usize);
            self.block(g, dim, wraps, cc, [1; 3], RARE);
        }
        // An agent less than r from a predator is at most ⌈r / cell⌉ cells from it along each
        // axis, two more for rounding (clamping an open world's far agents into the edge
        // cells only brings them closer), as the chase's own search counts them.
        let r2 = sp.flee.iter().map(|f| f.0).fold(0.0f32, f32::max);
        if r2 > 0.0 {
            let r = r2.sqrt();
            for h in hunters {
                let cc: [usize; 3] = std::array::from_fn(|k| {
                    if k < dim {
                        g.cell_coord(h.pos[k], k)
                    } else {
                        0
                    }
                });
                let reach: [i64; 3] = std::array::from_fn(|k| (r * g.inv_cell[k]) as i64 + 2);
                self.block(g, dim, wraps, cc, reach, HUNTED);
            }
        }
    }

    /// Sets `bit` on the cells within `reach` cells of coordinates `cc` along each axis
    /// (around the world where it wraps; the whole axis when the reach spans it).
    fn block(
        &mut self,
        g: &Grid,
        dim: usize,
        wraps: bool,
        cc: [usize; 3],
        reach: [i64; 3],
        bit: u8,
    ) {
        let mut axes = [(0i64, 0i64); 3];
        for (k, ax) in axes.iter_mut().enumerate() {
            let d = g.dims[k] as i64;
            let c = cc[k] as i64;
            *ax = if k >= dim {
                (0, 0)
            } else if 2 * reach[k] + 1 >= d {
                (0, d - 1)
            } else if wraps {
                (c - reach[k], c + reach[k])
            } else {
                ((c - reach[k]).max(0), (c + reach[k]).min(d - 1))
            };
        }
        let wrap = |x: i64, d: usize| x.rem_euclid(d as i64) as usize;
        for z in axes[2].0..=axes[2].1 {
            for y in axes[1].0..=axes[1].1 {
                let row = (wrap(z, g.dims[2]) * g.dims[1] + wrap(y, g.dims[1])) * g.dims[0];
                for x in axes[0].0..=axes[0].1 {
                    self.cells[row + wrap(x, g.dims[0])] |= bit;
                }
            }
        }
    }
}
