//! `forge bench --only timeline`: what a scene timeline costs the step. The bench flock
//! (boidforge preset at constant density, 2D, N = 100 000, 2 threads, grid) as it is, with four
//! keys none of which falls in the timed steps (a timeline between its keys), and with a ramp
//! that changes three weights at every step (the step's parameters made again each step):
//! ns per agent-step of each (the fastest of 5 alternated rounds) and the ratio to the plain
//! flock.

use std::io::Write;

use anyhow::Result;

use super::{alternated_table, bench_scene, bench_scene_with};
use crate::scene::Scene;

const N: u64 = 100_000;
const THREADS: usize = 2;
const ROUNDS: usize = 5;

/// The bench flock with `timeline` (JSON) and its world.
fn keyed(plain: &Scene, timeline: &str) -> Scene {
    let mut s = bench_scene_with(N, 2, &format!(r#", "timeline": {timeline}"#));
    s.world = plain.world;
    s
}

pub(super) fn timeline_line(out: &mut impl Write, seconds: f64) -> Result<()> {
    let plain = bench_scene(N, 2);
    // Step keys only: the values hold, and nothing ramps, until step 1 000 000.
    let idle = keyed(
        &plain,
        r#"[{"step": 1000000, "set": {"boids.w_ali": 2}},
            {"step": 2000000, "set": {"boids.w_coh": 2, "boids.noise": 1}},
            {"step": 3000000, "set": {"boids.fov": 270}}]"#,
    );
    // Weights and force ramped from step 0: new values, and new step parameters, every step
    // (no rule switched on or off, so the step itself costs what it did).
    let ramp = keyed(
        &plain,
        r#"[{"step": 1000000, "set": {"boids.w_ali": 2, "boids.w_coh": 2, "boids.max_force": 300},
             "interpolation": "linear"}]"#,
    );
    let rows: [(&str, &Scene); 3] = [
        ("none", &plain),
        ("3 keys, none reached", &idle),
        ("3 parameters ramped every step", &ramp),
    ];
    writeln!(
        out,
        "Timeline: {N} agents, 2D, {THREADS} threads, grid, the same flock without and with a \
         timeline:\n"
    )?;
    alternated_table(out, "timeline", &rows, N, THREADS, ROUNDS, seconds)
}
