//! `forge bench --only obstacles`: what obstacles and a predator cost. The bench flock
//! (boidforge preset at constant density, 2D, N = 100 000, 2 threads) as it is, with 10
//! obstacles, with one predator (a species of one that chases the flock, which flees it), and
//! with both: ns per agent-step of each (the fastest of 5 alternated rounds) and the ratio to
//! the plain flock.

use std::io::Write;

use anyhow::Result;

use super::{alternated_table, bench_scene, bench_scene_with};
use crate::scene::{Obstacle, Scene};

/// Agents, threads and obstacles of the row.
const N: u64 = 100_000;
const THREADS: usize = 2;
const OBSTACLES: usize = 10;
/// The predator rows' species: the flock, which flees within 200 (four of its cohesion
/// radii), and one falcon chasing it from up to 600 away, at nine tenths of its speed (a
/// falcon as fast as the flock rides inside it).
fn predator_scene() -> Scene {
    let mut s = bench_scene_with(
        N,
        2,
        &format!(
            r#", "species": [
            {{"name": "starling", "agents": {}, "boids": {{"w_flee": 300, "flee_radius": 200}}}},
            {{"name": "falcon", "agents": 1, "role": "predator",
              "boids": {{"chase_radius": 600, "w_chase": 300}}}}]"#,
            N - 1
        ),
    );
    let falcon = &mut s.species[1].boids;
    (falcon.v_min, falcon.v_max) = (falcon.v_min * 0.9, falcon.v_max * 0.9);
    s
}
/// Rounds of the rows, alternated.
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
    let mut hunted = predator_scene();
    hunted.world = plain.world;
    let mut both = hunted.clone();
    both.obstacles = with.obstacles.clone();
    both.boids = with.boids.clone();
    for sp in &mut both.species {
        (sp.boids.w_avoid, sp.boids.look_ahead, sp.boids.clearance) =
            (Some(sp.boids.max_force), Some(1.0), Some(sp.boids.r_sep));
    }
    let rows: [(&str, &Scene); 4] = [
        ("none", &plain),
        ("10 obstacles", &with),
        ("1 predator", &hunted),
        ("1 predator + 10 obstacles", &both),
    ];
    writeln!(
        out,
        "Obstacles and a predator: {N} agents, 2D, {THREADS} threads, grid, the same flock \
         without and with {OBSTACLES} obstacles and one predator:\n"
    )?;
    alternated_table(out, "rules", &rows, N, THREADS, ROUNDS, seconds)
}
