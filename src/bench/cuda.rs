//! `forge bench --only cuda` (and `record` on either backend): what a step costs on a backend
//! with and without recording, through the run loop `forge simulate` uses
//! ([`AnySolver::run`]), so the figures are the command's.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use anyhow::{anyhow, Result};

use crate::bfs::{DirectFile, Header, Writer};
use crate::record::Recorder;
use crate::scene::{self, Scene};
use crate::sim::backend::{AnySolver, Chosen, Schedule};
use crate::sim::{cuda, init, Params, Rules};

/// The CUDA table's workloads: a built-in scene's rules and density at any agent count.
pub const WORKLOADS: [&str; 3] = ["turbulence", "flame3d", "vicsek"];

/// `name` at `n` agents at its own density: a built-in scene with its world grown (2D by √,
/// 3D by ∛ of the agent ratio), or `flame3d`, FLAME GPU 2's fixed-radius benchmark (3D, one
/// agent per unit volume, every radius 2, so about 33 agents within reach).
pub fn workload(name: &str, n: u64) -> Result<Scene> {
    let mut s = if name == "flame3d" {
        let side = (n as f64).cbrt() as f32;
        scene::parse(&scene::Source {
            text: &format!(
                r#"{{"name": "flame3d", "model": "boids", "dim": 3, "agents": {n}, "seed": 1,
                    "world": {{"size": [{side}, {side}, {side}], "boundary": "wrap"}},
                    "boids": {{"r_sep": 2, "r_ali": 2, "r_coh": 2, "w_sep": 10, "w_ali": 1.6,
                               "w_coh": 0.6, "max_force": 13, "v_min": 3.5, "v_max": 8}}}}"#
            ),
            dir: Path::new("."),
            default_name: "flame3d",
        })
        .map_err(|e| anyhow!("flame3d: {}", e[0]))?
    } else {
        let mut s = Scene::load(name)?;
        let f = n as f64 / f64::from(s.agents);
        let grow = if s.dim == 2 { f.sqrt() } else { f.cbrt() };
        for w in s.world.iter_mut().take(s.dim) {
            *w = (f64::from(*w) * grow) as f32;
        }
        s.set_agents(n as u32).map_err(|e| anyhow!("{name}: {e}"))?;
        s
    };
    s.warmup = 0;
    Ok(s)
}

/// How a timed run records.
#[derive(Clone, Copy)]
pub enum Recording<'a> {
    /// Nothing: the solver alone.
    None,
    /// A frame every `every` steps (and the first) to `path` (`/dev/null`, a file).
    Every { every: u64, path: &'a Path },
}

/// Milliseconds a step over `steps` steps of `scene` on `chosen`, from the first step to the
/// last frame written (CUDA: queued steps waited for), after two untimed steps.
pub fn ms_per_step(scene: &Scene, chosen: &Chosen, steps: u64, rec: Recording) -> Result<f64> {
    let state = init::initial_state(scene)?;
    let (n, dim) = (state.n, scene.dim);
    let params = Params::from_scene(scene, n);
    let mut solver = AnySolver::new(
        chosen,
        params,
        Rules::from_scene(scene),
        state,
        0,
        scene.search,
    )?;
    for _ in 0..2 {
        solver.step().map_err(|d| anyhow!("{d}"))?;
    }
    solver.synchronize()?;
    let first = solver.step;
    let t0;
    match rec {
        Recording::None => {
            t0 = Instant::now();
            for _ in 0..steps {
                solver.step().map_err(|d| anyhow!("{d}"))?;
            }
            solver.synchronize()?;
        }
        Recording::Every { every, path } => {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(path)?;
            let mut h = Header::for_scene(scene);
            h.agents = n as u32;
            let mut out = Recorder::start(Writer::new(DirectFile::new(file), &h)?, dim, n)?;
            let sched = Schedule {
                first,
                last: first + steps,
                every,
            };
            t0 = Instant::now();
            if let Some(d) = solver.run(&mut out, sched, |_, _| true)? {
                return Err(anyhow!("{d}"));
            }
            if let Some(d) = solver.finish(&mut out)? {
                return Err(anyhow!("{d}"));
            }
            out.finish()?;
        }
    }
    Ok(t0.elapsed().as_secs_f64() * 1e3 / steps as f64)
}

/// Steps timed for `n` agents: about 2·10⁸ agent-steps, 10 to 200.
fn steps_for(n: u64) -> u64 {
    (200_000_000 / n.max(1)).clamp(10, 200)
}

/// The CUDA backend's ms/step per workload and agent count: the solver alone, then recording
/// every step, every 10th and only the first and last frame to /dev/null, and every step to a
/// file in the temporary folder. Says why and prints nothing else where CUDA cannot run.
pub fn cuda_table(out: &mut impl Write, sizes: &[u64]) -> Result<()> {
    let device = match cuda::open_device() {
        Ok(d) => d,
        Err(e) => {
            writeln!(out, "CUDA table: skipped ({e})\n")?;
            return Ok(());
        }
    };
    writeln!(
        out,
        "CUDA backend on {} ({}), ms/step (steps timed: 2·10⁸ agent-steps, 10 to 200):\n",
        device.name, device.arch
    )?;
    writeln!(out, "| workload | agents | solver | every step → /dev/null | every 10th → /dev/null | first and last only | every step → file |")?;
    writeln!(out, "|---|---:|---:|---:|---:|---:|---:|")?;
    let chosen = Chosen::Cuda(device);
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("bench.bfs");
    let null = Path::new("/dev/null");
    for name in WORKLOADS {
        for &n in sizes {
            let s = workload(name, n)?;
            let steps = steps_for(n);
            let every = |every, path| Recording::Every { every, path };
            let cols = [
                Recording::None,
                every(1, null),
                every(10, null),
                every(steps, null),
                every(1, &file),
            ];
            let mut row = format!("| {name} | {n} |");
            for c in cols {
                let ms = ms_per_step(&s, &chosen, steps, c)?;
                row.push_str(&format!(" {ms:.3} |"));
            }
            let _ = std::fs::remove_file(&file);
            writeln!(out, "{row}")?;
            out.flush()?;
        }
    }
    writeln!(out)?;
    Ok(())
}

/// Alternated runs of each column of the record table: the differences it shows are a few
/// percent, about as much as a small machine's speed drifts between two runs.
const RECORD_ROUNDS: usize = 3;

/// What recording costs the CPU backend (all cores): turbulence's rules and density at each
/// size, the solver alone, then a frame every 10th step to a file in the temporary folder, and
/// every step to /dev/null and to that file, best of [`RECORD_ROUNDS`] alternated runs each. A
/// run's time ends when its file is on the disk (`fsync`), as `forge simulate`'s does.
pub fn record_table(out: &mut impl Write, sizes: &[u64]) -> Result<()> {
    writeln!(
        out,
        "Recording on the CPU backend, turbulence at its density, files in {} (best of {RECORD_ROUNDS}, ms/step):\n",
        std::env::temp_dir().display()
    )?;
    writeln!(
        out,
        "| agents | steps | solver | every 10th → file | every step → /dev/null | every step → file | /dev/null over every 10th | file over every 10th |"
    )?;
    writeln!(out, "|---:|---:|---:|---:|---:|---:|---:|---:|")?;
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("bench.bfs");
    let null = Path::new("/dev/null");
    for &n in sizes {
        let s = workload("turbulence", n)?;
        let steps = (20_000_000 / n.max(1)).clamp(10, 100);
        let every = |every, path| Recording::Every { every, path };
        let cols = [
            Recording::None,
            every(10, &file),
            every(1, null),
            every(1, &file),
        ];
        let mut ms = [f64::INFINITY; 4];
        // Alternated, so a slow moment of the machine falls on every column alike; the file
        // is removed before each run, so no run pays for freeing the last one's pages.
        for _ in 0..RECORD_ROUNDS {
            for (i, c) in cols.iter().enumerate() {
                let _ = std::fs::remove_file(&file);
                ms[i] = ms[i].min(ms_per_step(&s, &Chosen::Cpu, steps, *c)?);
            }
        }
        writeln!(
            out,
            "| {n} | {steps} | {:.2} | {:.2} | {:.2} | {:.2} | {:+.1}% | {:+.1}% |",
            ms[0],
            ms[1],
            ms[2],
            ms[3],
            (ms[2] / ms[1] - 1.0) * 100.0,
            (ms[3] / ms[1] - 1.0) * 100.0
        )?;
        out.flush()?;
    }
    let _ = std::fs::remove_file(&file);
    writeln!(out)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workloads_keep_their_density() {
        for name in WORKLOADS {
            let small = workload(name, 1000).unwrap();
            let large = workload(name, 1_000_000).unwrap();
            assert_eq!(large.agents, 1_000_000, "{name}");
            assert_eq!(large.warmup, 0, "{name}");
            let volume = |s: &Scene| s.world.iter().take(s.dim).product::<f32>();
            let (a, b) = (
                small.agents as f32 / volume(&small),
                large.agents as f32 / volume(&large),
            );
            assert!((a / b - 1.0).abs() < 0.01, "{name}: density {a} vs {b}");
        }
        // FLAME GPU 2's benchmark: one agent per unit volume.
        let f = workload("flame3d", 1_000_000).unwrap();
        assert!((f.world[0] - 100.0).abs() < 0.01, "{:?}", f.world);
    }
}
