//! The step of boids with species, predators and prey (src/sim/species.rs has the rules).

use super::*;

impl CpuSolver {
    /// Boids with species (src/sim/species.rs), on the same two searches.
    pub(super) fn step_species<const D: usize>(&mut self, bad: &AtomicUsize) {
        let p = self.params;
        let n = self.cur.n;
        let t_step = self.step;
        let isa = self.isa;
        let grid = self.search == Search::Grid;
        {
            let sp = self.species.as_ref().expect("a species step has species");
            self.tracked.find(sp, &self.ids, self.step);
            let (pos, list) = (&self.cur.pos, &self.tracked.list);
            spc::hunters(sp, D, pos, &self.ids, list, &mut self.hunters);
        }
        if grid {
            self.build_grid(false);
            let g = self.grid.as_ref().expect("grid search has a grid");
            self.tracked.follow(g, self.step);
            let sp = self.species.as_ref().expect("a species step has species");
            let (rare, hunters) = (&self.tracked.list, &self.hunters);
            self.reach.mark(sp, &p, g, D, rare, hunters);
        } else {
            self.build_brute(false);
            self.tracked.keep(self.step);
        }
        let sp = self.species.as_ref().expect("a species step has species");
        let (hunters, rare) = (&self.hunters[..], &self.tracked.list[..]);
        let out = StateOut::new(&mut self.next.pos, &mut self.next.vel);
        let pool = self.pool.as_ref().filter(|_| self.pairs >= self.min_pairs);
        if grid {
            let g = self.grid.as_ref().expect("grid search has a grid");
            let plain = Src::sorted(g, isa, &self.obstacles);
            // An agent of the largest species, where no rare agent is among its candidates and
            // no predator within flight reach, takes the plain boids step with its species'
            // parameters (the same bytes, see `spc::sums` and `spc::finish`) when the species
            // takes the plain candidate loop and hunts nothing. Its parameters are copied here:
            // the step's loads of a local need not be repeated after each of its stores.
            let a = sp.bulk.a;
            let bulk = sp.params[a];
            let (lo, hi) = (sp.bulk.lo, sp.bulk.hi);
            let plain_bulk = sp.fast[a] && !sp.predator[a] && sp.present[a];
            let in_bulk = |id: u32| plain_bulk && id >= lo && id < hi;
            let near = &self.near_cells;
            let src = spc::Src {
                pos: &g.spos,
                vel: &g.svel,
                vfix: &g.svfix,
                ids: &self.next_ids,
                m: n,
                obs: &self.obstacles,
            };
            self.pairs = grid_pass::<D, _>(
                pool,
                g,
                p.wraps(),
                bad,
                &out,
                |c| {
                    (
                        self.reach.at(c as u32),
                        near.get(c).copied().unwrap_or_default(),
                    )
                },
                // Where no rare agent is a candidate, or no predator within reach, the rare
                // correction and the flight would change nothing: none is handed in.
                |t, (bits, _), seam, ranges, acc| {
                    let rare = if bits & reach::RARE != 0 {
                        rare
                    } else if in_bulk(src.ids[t]) {
                        return boids_neighbours::<D>(&bulk, seam, &plain, t, ranges, acc);
                    } else {
                        &[]
                    };
                    spc::sums::<D>(sp, &plain, &src, t, seam, ranges, rare, acc)
                },
                |t, (bits, near), acc| {
                    let id = src.ids[t];
                    let hunters = if bits & reach::HUNTED != 0 {
                        hunters
                    } else if in_bulk(id) {
                        return boids_finish::<D>(&bulk, &plain, t, acc, t_step, id, near);
                    } else {
                        &[]
                    };
                    spc::finish::<D>(sp, &src, t, acc, hunters, Some(g), t_step, near)
                },
            );
        } else {
            self.species_brute::<D>(pool, bad, &out, hunters, rare);
        }
    }

    /// [`CpuSolver::step_species`] by brute force: every agent against every other, in slot
    /// (= agent) order, on `pool`'s threads where given.
    fn species_brute<const D: usize>(
        &self,
        pool: Option<&Pool>,
        bad: &AtomicUsize,
        out: &StateOut,
        hunters: &[Hunter],
        rare: &[spc::Rare],
    ) {
        let sp = self.species.as_ref().expect("a species step has species");
        let (p, n, t_step) = (self.params, self.cur.n, self.step);
        let st = &self.cur;
        let plain = Src::unsorted(st, &self.bvfix, self.isa, &self.obstacles);
        let src = spc::Src {
            pos: &st.pos,
            vel: &st.vel,
            vfix: &self.bvfix,
            ids: &self.ids,
            m: n,
            obs: &self.obstacles,
        };
        Self::for_chunks(pool, n, |r| {
            let all = [(0u32, n as u32)];
            let mut acc = BoidsAcc::<D>::new();
            for s in r {
                spc::sums::<D>(sp, &plain, &src, s, p.wraps(), &all, rare, &mut acc);
                let at: [f32; D] = crate::sim::math::array(|k| st.pos[k * n + s]);
                let near = self.obstacles.near_at(&at);
                let (pi, vi) = spc::finish::<D>(sp, &src, s, &acc, hunters, None, t_step, near);
                check(bad, s, &pi, &vi);
                // SAFETY: chunks partition 0..n.
                unsafe { out.put::<D>(n, s, &pi, &vi) };
            }
        });
    }
}
