//! The agents a species step keeps a list of ([`Species::tracked`]): the rare ones and the
//! predators, followed from step to step; and the predators as the flight reads them.

use super::{Hunter, Rare, Species};
use crate::sim::grid::Grid;

/// The tracked agents of a step ([`Species::tracked`]), kept from step to step: the slots of
/// the state being stepped, found once by a scan and then followed through each re-sort.
#[derive(Debug, Default)]
pub struct Tracked {
    pub list: Vec<Rare>,
    /// The step whose state the slots are of (None: not yet found).
    of_step: Option<u64>,
}

impl Tracked {
    /// The tracked agents among the slots `ids` (slot → agent id) of the state of step `step`.
    pub fn find(&mut self, sp: &Species, ids: &[u32], step: u64) {
        if self.of_step == Some(step) {
            return;
        }
        self.list.clear();
        let ranges: Vec<(u32, u32, u8)> = sp
            .tracked
            .iter()
            .map(|&b| (sp.ids[b as usize].0, sp.ids[b as usize].1, b))
            .collect();
        if !ranges.is_empty() {
            for (s, &id) in ids.iter().enumerate() {
                for &(lo, hi, b) in &ranges {
                    if id >= lo && id < hi {
                        self.list.push(Rare {
                            slot: s as u32,
                            species: b,
                        });
                    }
                }
            }
        }
        self.of_step = Some(step);
    }

    /// After `g` sorted the state of step `step` (slot s went to the t with `order[t] = s`):
    /// the same agents' sorted slots, which are those of step `step + 1`'s state. A slot is
    /// looked for in its own cell only.
    pub fn follow(&mut self, g: &Grid, step: u64) {
        for r in &mut self.list {
            let s = r.slot;
            let c = g.cell_of[s as usize] as usize;
            let (lo, hi) = (g.cell_start[c] as usize, g.cell_start[c + 1] as usize);
            let t = (lo..hi)
                .find(|&t| g.order[t] == s)
                .expect("a slot's cell holds it");
            r.slot = t as u32;
        }
        self.of_step = Some(step + 1);
    }

    /// To be found again at the next step: the tracked species changed (one came or went).
    pub fn forget(&mut self) {
        self.of_step = None;
    }

    /// The slots stay (brute force does not re-sort): valid for step `step + 1` too.
    pub fn keep(&mut self, step: u64) {
        self.of_step = Some(step + 1);
    }
}

/// The predators there of the state `pos` (component-major, stride n, slot order, agent ids `ids`;
/// `tracked`, its tracked agents), in agent-id order, into `out`.
pub fn hunters(
    sp: &Species,
    dim: usize,
    pos: &[f32],
    ids: &[u32],
    tracked: &[Rare],
    out: &mut Vec<Hunter>,
) {
    out.clear();
    let n = ids.len();
    for r in tracked {
        let b = r.species as usize;
        if sp.predator[b] && sp.present[b] {
            let s = r.slot as usize;
            out.push(Hunter {
                id: ids[s],
                pos: crate::sim::math::array(|k| if k < dim { pos[k * n + s] } else { 0.0 }),
            });
        }
    }
    out.sort_unstable_by_key(|h| h.id);
}
