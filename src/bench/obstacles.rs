//! `forge bench --only obstacles`: what obstacles cost. The bench flock (boidforge preset at
//! constant density, 2D, N = 100 000, 2 threads) with 10 obstacles against the same flock
//! without: ns per agent-step of each (the fastest of 5 alternated rounds) and the ratio.

use std::io::Write;

use anyhow::Result;

use super::{bench_scene, solver_for, time_steps};
use crate::scene::{Obstacle, Search};
use crate::units::si;

/// Agents, threads and obstacles of the row.
const N: u64 = 100_000;
const THREADS: usize = 2;
const OBSTACLES: usize = 10;
/// Rounds of the two rows, alternated.
const ROUNDS: usize = 5;

pub(super) fn obstacles_line(out: &mut impl Write, seconds: f64) -> Result<()> {
    let plain = bench_scene(N, 2);
    let mut with = plain.clone();
    let [w, h, _] = with.world;
    // Ten rocks on a 5 × 2 lattice across the world: 6 circles, 2 boxes, 2 walls, each about
    // a twentieth of the world's height across.
    let r = h / 40.0;
    with.obstacles = (0..OBSTACLES)
        .map(|i| {
            let c = [
                w * (i % 5) as f32 / 5.0 + w / 10.0,
                h * (i / 5) as f32 / 2.0 + h / 4.0,
            ];
            match i % 5 {
                1 => Obstacle::Box {
                    min: vec![c[0] - r, c[1] - r],
                    max: vec![c[0] + r, c[1] + r],
                },
                3 => Obstacle::Segment {
                    from: vec![c[0] - r, c[1] - 2.0 * r],
                    to: vec![c[0] + r, c[1] + 2.0 * r],
                    radius: r / 8.0,
                },
                _ => Obstacle::Circle {
                    center: c.to_vec(),
                    radius: r,
                },
            }
        })
        .collect();
    if let Some(b) = with.boids.as_mut() {
        (b.w_avoid, b.look_ahead, b.clearance) = (Some(b.max_force), Some(1.0), Some(b.r_sep));
    }
    writeln!(
        out,
        "Obstacles: {N} agents, 2D, {THREADS} threads, grid, the same flock without and with \
         {OBSTACLES} obstacles:\n"
    )?;
    writeln!(
        out,
        "| obstacles | ms/step | agent-steps/s | ns/agent-step |"
    )?;
    writeln!(out, "|---:|---:|---:|---:|")?;
    // Alternated, ROUNDS times each, the fastest kept: a machine shared with other work slows
    // some rounds, and both rows alike over the rounds.
    let mut best = [f64::INFINITY; 2];
    for _ in 0..ROUNDS {
        for (i, s) in [&plain, &with].into_iter().enumerate() {
            let (ms, _) = time_steps(
                || solver_for(s, THREADS, Search::Grid),
                seconds / ROUNDS as f64,
            )?;
            best[i] = best[i].min(ms);
        }
    }
    let mut ns = [0.0; 2];
    for (i, s) in [&plain, &with].into_iter().enumerate() {
        let ms = best[i];
        let rate = N as f64 / (ms / 1e3);
        ns[i] = 1e9 / rate;
        writeln!(
            out,
            "| {} | {ms:.3} | {} | {:.1} |",
            s.obstacles.len(),
            si(rate),
            ns[i]
        )?;
        out.flush()?;
    }
    writeln!(out, "\nWith obstacles / without: {:.3}\n", ns[1] / ns[0])?;
    Ok(())
}
