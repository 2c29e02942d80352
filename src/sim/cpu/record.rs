//! A recorded frame: the solver's state, kept in cell order, put in agent order straight into
//! the sink's buffers by the solver's threads.

use super::*;

/// From this many agents a recorded frame is put in agent order through
/// [`CpuSolver::staged`]: below, the state's arrays stay in cache and the direct scatter is as
/// fast; above, it misses a cache line per array per agent (a million agents in 2D: 16 ms
/// on one core of the Xeon against 9 ms staged).
pub(super) const STAGED_MIN: usize = 1 << 16;

impl CpuSolver {
    /// Hand the current state to `out` as the frame of the current step, in agent order,
    /// un-permuted by all the solver's threads straight into the sink's buffers.
    pub fn record<R: FrameOut>(&self, out: &mut R) -> Result<(), R::Error> {
        out.frame_with(self.step, |pos, vel| {
            let (st, ids, n) = (&self.cur, &self.ids, self.cur.n);
            assert!(pos.len() == st.pos.len() && vel.len() == st.vel.len());
            let dst = StateOut::new(pos, vel);
            let pool = Self::pool_light(&self.pool, n);
            let mut staged = self.staged.lock().unwrap_or_else(|p| p.into_inner());
            if staged.is_empty() {
                // Small: the arrays stay in cache, and each value goes straight to its place.
                Self::for_chunks(pool, n, |r| {
                    for s in r {
                        let i = ids[s] as usize;
                        for k in 0..st.dim {
                            // SAFETY: ids is a permutation of 0..n, so agent i is written by
                            // this chunk only; k*n + i < dim*n = the buffers' length (checked).
                            unsafe { dst.set(k * n + i, st.pos[k * n + s], st.vel[k * n + s]) };
                        }
                    }
                });
                return;
            }
            // Large: each agent's values go to its place as one record (one cache line
            // missed per agent instead of one per array), then the records are split into
            // the frame's arrays in order.
            let (dim, w) = (st.dim, 2 * st.dim);
            assert!(staged.len() == w * n);
            let rec = OutArr::new(&mut staged);
            Self::for_chunks(pool, n, |r| {
                for s in r {
                    let i = ids[s] as usize;
                    for k in 0..dim {
                        // SAFETY: ids is a permutation of 0..n, so record i is written by this
                        // chunk only; i*w + w <= w*n = the staging's length (checked).
                        unsafe {
                            rec.set(i * w + k, st.pos[k * n + s]);
                            rec.set(i * w + dim + k, st.vel[k * n + s]);
                        }
                    }
                }
            });
            let staged = &*staged;
            Self::for_chunks(pool, n, |r| {
                for i in r {
                    let one = &staged[i * w..i * w + w];
                    for k in 0..dim {
                        // SAFETY: each chunk writes its own agents i; k*n + i < dim*n.
                        unsafe { dst.set(k * n + i, one[k], one[dim + k]) };
                    }
                }
            });
        })
    }

    /// The state in agent order (allocates: for tests and summaries, not the step loop).
    pub fn state(&self) -> State {
        let mut st = State::zeros(self.cur.dim, self.cur.n).expect("state fits: it exists already");
        unpermute(&self.cur, &self.ids, &mut st.pos, &mut st.vel);
        st
    }
}

#[cfg(test)]
mod record_tests {
    use super::*;

    /// A frame sink that keeps the last frame.
    struct Keep(Vec<f32>, Vec<f32>);
    impl FrameOut for Keep {
        type Error = std::convert::Infallible;
        fn frame_with<F>(&mut self, _step: u64, fill: F) -> Result<(), Self::Error>
        where
            F: FnOnce(&mut [f32], &mut [f32]),
        {
            fill(&mut self.0, &mut self.1);
            Ok(())
        }
    }

    /// A recorded frame is the state in agent order, whether it is put in order directly
    /// (below [`STAGED_MIN`] agents) or through the staging records (from it up), in 2D and
    /// 3D, on one thread or two.
    #[test]
    fn a_recorded_frame_is_the_state_in_agent_order() {
        for (dim, n, threads) in [
            (2, 1000, 2),
            (2, STAGED_MIN + 3, 1),
            (2, STAGED_MIN + 3, 2),
            (3, STAGED_MIN + 5, 2),
        ] {
            let size = vec!["300"; dim].join(", ");
            let text = format!(
                r#"{{"model": "boids", "dim": {dim}, "agents": {n}, "seed": 5,
                    "world": {{"size": [{size}], "boundary": "wrap"}}}}"#
            );
            let s = crate::scene::parse(&crate::scene::Source {
                text: &text,
                dir: std::path::Path::new("."),
                default_name: "r",
            })
            .unwrap();
            let st = crate::sim::init::initial_state(&s).unwrap();
            let mut solver =
                CpuSolver::new(Params::from_scene(&s, n), st, threads, Search::Grid).unwrap();
            assert_eq!(solver.staged.lock().unwrap().is_empty(), n < STAGED_MIN);
            for _ in 0..2 {
                solver.step().unwrap();
            }
            let mut keep = Keep(vec![f32::NAN; dim * n], vec![f32::NAN; dim * n]);
            solver.record(&mut keep).unwrap();
            let want = solver.state();
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert!(
                bits(&keep.0) == bits(&want.pos) && bits(&keep.1) == bits(&want.vel),
                "dim {dim}, n {n}, {threads} threads: the frame is not the state"
            );
        }
    }
}
