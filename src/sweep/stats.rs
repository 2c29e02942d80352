//! One run's samples of the order parameter, and a point's statistics over its seeds: mean,
//! standard error, Binder cumulant and susceptibility.

use anyhow::{anyhow, Result};

use crate::metrics::polarization_present;
use crate::scene::{Scene, Search};
use crate::sim::Rules;
use crate::sim::{cpu::CpuSolver, init, Params};

/// One run's samples of the order parameter φ: means of φ, φ², φ⁴ over the measured steps.
#[derive(Clone, Copy, Debug)]
pub struct Moments {
    m1: f64,
    m2: f64,
    m4: f64,
    /// The agent count actually run (a `layout: file` scene takes it from the file).
    n: usize,
}

/// How every point is measured: the same for all its rows, and checked when resuming.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Runs per point, seeds `scene.seed + 0..seeds`.
    pub seeds: u32,
    /// Steps run before measuring.
    pub equilibrate: u64,
    /// Steps measured.
    pub measure: u64,
}

/// How often a run reports progress, in steps.
const TICK: u64 = 32;

/// Run one scene: `equilibrate` steps, then `measure` steps sampling φ after each.
pub fn run_one(
    scene: &Scene,
    equilibrate: u64,
    measure: u64,
    tick: &dyn Fn(u64),
) -> Result<Moments> {
    let state = init::initial_state(scene)?;
    let n = state.n;
    let dim = scene.dim;
    let params = Params::from_scene(scene, n);
    let mut solver =
        CpuSolver::new(params, state, 1, Search::Auto)?.with_rules(Rules::from_scene(scene))?;
    let (mut s1, mut s2, mut s4) = (0.0f64, 0.0f64, 0.0f64);
    let presence = crate::scene::timeline::Presence::of(scene);
    let total = equilibrate + measure;
    for k in 1..=total {
        crate::signal::check()?;
        solver.step().map_err(|d| anyhow!("{d}"))?;
        if k > equilibrate {
            let absent = presence
                .as_ref()
                .map(|p| p.absent(solver.step))
                .unwrap_or_default();
            let (st, ids) = solver.slots();
            let phi = polarization_present(dim, &st.vel, ids, &absent);
            let p2 = phi * phi;
            s1 += phi;
            s2 += p2;
            s4 += p2 * p2;
        }
        if k % TICK == 0 {
            tick(TICK * n as u64);
        }
    }
    tick((total % TICK) * n as u64);
    let m = measure as f64;
    Ok(Moments {
        m1: s1 / m,
        m2: s2 / m,
        m4: s4 / m,
        n,
    })
}

/// A point's statistics over its seeds (combined in seed order: deterministic).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    /// The agent count run.
    pub n: usize,
    /// The order parameter φ's mean over the measured steps and seeds.
    pub order: f64,
    /// Its standard error over seeds (NaN with one seed).
    pub order_se: f64,
    /// Binder cumulant 1 − <φ⁴>/(3<φ²>²).
    pub binder: f64,
    /// N(<φ²> − <φ>²).
    pub susceptibility: f64,
}

pub fn combine(runs: &[Moments]) -> Stats {
    let k = runs.len() as f64;
    let order = runs.iter().map(|r| r.m1).sum::<f64>() / k;
    let m2 = runs.iter().map(|r| r.m2).sum::<f64>() / k;
    let m4 = runs.iter().map(|r| r.m4).sum::<f64>() / k;
    let order_se = if runs.len() > 1 {
        let var = runs.iter().map(|r| (r.m1 - order).powi(2)).sum::<f64>() / (k - 1.0);
        (var / k).sqrt()
    } else {
        f64::NAN
    };
    let n = runs[0].n;
    Stats {
        n,
        order,
        order_se,
        binder: if m2 > 0.0 {
            1.0 - m4 / (3.0 * m2 * m2)
        } else {
            f64::NAN
        },
        susceptibility: n as f64 * (m2 - order * order).max(0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binder_and_susceptibility_of_a_constant() {
        let m = Moments {
            m1: 0.5,
            m2: 0.25,
            m4: 0.0625,
            n: 100,
        };
        let s = combine(&[m, m]);
        assert!((s.binder - 2.0 / 3.0).abs() < 1e-12);
        assert!(s.susceptibility.abs() < 1e-12);
        assert_eq!(s.order_se, 0.0);
    }
}
