//! Initial conditions: uniform, disc/ball, clusters, or a frame of an existing recording.
//! Random draws use the same counter-based generator as the step (keyed by step u64::MAX), so
//! the initial state is a pure function of the scene as well.

use anyhow::{bail, Context, Result};

use super::math::{cos_sin, rand_uniform, unit2};
use super::State;
use crate::bfs;
use crate::scene::{Layout, Model, Scene, Velocity};

const INIT_STEP: u64 = u64::MAX;
// Streams of the initial draws.
const S_POS: u64 = 0; // .. S_POS + 2 (+ retries)
const S_HEADING: u64 = 16;
const S_SPEED: u64 = 19;
const S_CENTRE: u64 = 20;
const S_CLUSTER_HEADING: u64 = 24;

fn u(seed: u64, agent: u64, stream: u64) -> f32 {
    rand_uniform(seed, INIT_STEP, agent, stream)
}

/// Uniform in [−π, π).
fn angle(seed: u64, agent: u64, stream: u64) -> f32 {
    (u(seed, agent, stream) * 2.0 - 1.0) * std::f32::consts::PI
}

/// A random unit vector (2D: uniform heading; 3D: uniform on the sphere).
fn direction(dim: usize, seed: u64, key: u64, stream: u64) -> [f32; 3] {
    let (c, s) = cos_sin(angle(seed, key, stream));
    if dim == 2 {
        [c, s, 0.0]
    } else {
        let z = u(seed, key, stream + 1) * 2.0 - 1.0;
        let r = (1.0 - z * z).max(0.0).sqrt();
        [r * c, r * s, z]
    }
}

/// A point uniform in the unit disc/ball, by rejection with a bounded number of tries.
fn in_ball(dim: usize, seed: u64, agent: u64) -> [f32; 3] {
    for t in 0..64u64 {
        let mut q = [0f32; 3];
        let mut r2 = 0.0f32;
        for k in 0..dim {
            q[k] = u(seed, agent, S_POS + 32 + t * 3 + k as u64) * 2.0 - 1.0;
            r2 += q[k] * q[k];
        }
        if r2 <= 1.0 {
            return q;
        }
    }
    [0.0; 3]
}

/// Put a coordinate back in the world: wrap for wrapping worlds, clamp otherwise.
fn into_world(x: f32, size: f32, wrap: bool) -> f32 {
    if wrap {
        let mut q = x - size * (x / size).floor();
        if !(0.0..size).contains(&q) {
            q = 0.0;
        }
        q
    } else {
        x.clamp(0.0, size)
    }
}

/// The initial state of a scene. For `layout: file` this reads the recording, and the scene's
/// agent count is taken from it (the caller stores it back into the scene).
pub fn initial_state(scene: &Scene) -> Result<State> {
    let mut st = if scene.init.layout == Layout::File {
        from_file(scene)?
    } else {
        drawn(scene)?
    };
    out_of_obstacles(scene, &mut st)?;
    Ok(st)
}

/// Tries at a new place for an agent that starts inside an obstacle.
const PLACE_TRIES: u64 = 64;
/// Streams of those places (3 per try).
const S_PLACE: u64 = 1000;

/// Every agent starting inside an obstacle is put somewhere else, uniform in the world (its
/// own draws, keyed by agent and try), so that no agent ever is inside one
/// (src/sim/obstacles/ relies on it). Agents outside every obstacle keep their places.
fn out_of_obstacles(scene: &Scene, st: &mut State) -> Result<()> {
    let obs = super::obstacles::Obstacles::from_scene(scene);
    if obs.is_empty() {
        return Ok(());
    }
    let (n, dim, w, seed) = (st.n, scene.dim, scene.world, scene.seed);
    let at = |st: &State, i: usize| -> [f32; 3] {
        crate::sim::math::array(|k| if k < dim { st.pos[k * n + i] } else { 0.0 })
    };
    let inside = |p: &[f32; 3]| {
        if dim == 2 {
            obs.inside::<2>(&[p[0], p[1]])
        } else {
            obs.inside::<3>(p)
        }
    };
    for i in 0..n {
        let mut p = at(st, i);
        let mut t = 0;
        while inside(&p) {
            if t == PLACE_TRIES {
                bail!(
                    "scene.obstacles: agent {i} found no place outside the obstacles in \
                     {PLACE_TRIES} tries: they cover (nearly) the whole world"
                );
            }
            for k in 0..dim {
                // A coordinate in [0, size): valid for every boundary.
                p[k] = into_world(
                    u(seed, i as u64, S_PLACE + t * 3 + k as u64) * w[k],
                    w[k],
                    true,
                );
            }
            t += 1;
        }
        for k in 0..dim {
            st.pos[k * n + i] = p[k];
        }
    }
    Ok(())
}

/// The initial state drawn for the scene's layout.
fn drawn(scene: &Scene) -> Result<State> {
    let dim = scene.dim;
    let n = scene.agents as usize;
    check_memory(n, dim)?;
    let mut st = State::zeros(dim, n)?;
    let seed = scene.seed;
    let wrap = scene.boundary == crate::scene::Boundary::Wrap;
    let w = scene.world;
    let clusters = scene.init.count.unwrap_or(1) as u64;
    let radius = scene.init.radius.unwrap_or(0.0);
    let centre: &[f32] = match &scene.init.center {
        Some(c) => c,
        None if scene.init.layout == Layout::Disc => {
            bail!("scene.init.center: required with layout \"disc\"")
        }
        None => &[],
    };

    for i in 0..n {
        let a = i as u64;
        let mut p = [0f32; 3];
        match scene.init.layout {
            Layout::Uniform => {
                for k in 0..dim {
                    p[k] = into_world(u(seed, a, S_POS + k as u64) * w[k], w[k], wrap);
                }
            }
            Layout::Disc => {
                let q = in_ball(dim, seed, a);
                for k in 0..dim {
                    p[k] = into_world(centre[k] + q[k] * radius, w[k], wrap);
                }
            }
            Layout::Clusters => {
                let cl = a % clusters;
                let q = in_ball(dim, seed, a);
                for k in 0..dim {
                    let centre = u(seed, cl, S_CENTRE + k as u64) * w[k];
                    p[k] = into_world(centre + q[k] * radius, w[k], wrap);
                }
            }
            Layout::File => unreachable!(),
        }
        let dir = match scene.init.velocity {
            Velocity::Random => direction(dim, seed, a, S_HEADING),
            Velocity::Aligned => {
                let group = if scene.init.layout == Layout::Clusters {
                    a % clusters
                } else {
                    0
                };
                direction(dim, seed, group, S_CLUSTER_HEADING)
            }
        };
        let speed = match (&scene.boids, &scene.vicsek) {
            (Some(b), _) => b.v_min + u(seed, a, S_SPEED) * (b.v_max - b.v_min),
            (_, Some(v)) => v.v0,
            _ => 1.0,
        };
        for k in 0..dim {
            st.pos[k * n + i] = p[k];
            st.vel[k * n + i] = dir[k] * speed;
        }
    }
    Ok(st)
}

/// Frames a recording sink may hold in flight (each a frame's positions, velocities and slot
/// ids), besides one agent-order frame of its own: what [`check_memory`] budgets for. The
/// recorder checks its queue depth against it.
pub const SINK_FRAMES: usize = 3;

/// Refuse agent counts whose state (and the solver's work arrays) would not fit in memory.
pub fn check_memory(n: usize, dim: usize) -> Result<()> {
    // Per agent: the state twice (double buffer) and its cell-sorted copy (24·dim bytes), four
    // u32 index arrays (16), the sink's frame buffers in flight, its agent-order frame and the
    // solver's staging of a recorded frame ((SINK_FRAMES + 2)·8·dim + SINK_FRAMES·4).
    let depth = SINK_FRAMES as u128;
    let per_agent = 24 * dim as u128 + 16 + (depth + 2) * 8 * dim as u128 + depth * 4;
    let need = n as u128 * per_agent;
    if let Some(avail) = available_memory() {
        if need > avail as u128 / 10 * 9 {
            bail!(
                "{n} agents need about {} MiB but only {} MiB of memory is available",
                need >> 20,
                avail >> 20
            );
        }
    }
    Ok(())
}

/// MemAvailable from /proc/meminfo, where there is one.
pub use crate::sys::available_memory;

fn from_file(scene: &Scene) -> Result<State> {
    let path = scene
        .init
        .resolved_path
        .as_ref()
        .expect("validated: file layout has a path");
    let mut r = bfs::Reader::open(path).with_context(|| {
        format!(
            "scene.init.path: cannot use {} as initial condition",
            path.display()
        )
    })?;
    for w in r.warnings() {
        log::warn!("{}: {w}", path.display());
    }
    let h = r.header().clone();
    if h.dim as usize != scene.dim {
        bail!(
            "scene.init.path: {} is {}D but the scene is {}D",
            path.display(),
            h.dim,
            scene.dim
        );
    }
    let count = r.frame_count();
    if count == 0 {
        bail!(
            "scene.init.path: {} holds no complete frame",
            path.display()
        );
    }
    let want = scene.init.frame.unwrap_or(-1);
    let k = if want < 0 { count as i64 + want } else { want };
    if k < 0 || k as u64 >= count {
        bail!(
            "scene.init.frame: {} has {count} frames (0..{}), got {want}",
            path.display(),
            count - 1
        );
    }
    let f = r
        .read_frame(k as u64)
        .with_context(|| format!("scene.init.path: reading frame {k} of {}", path.display()))?;
    let dim = scene.dim;
    let n = f.agents(dim);
    if scene.agents != 0 && scene.agents as usize != n {
        bail!(
            "scene.agents: the scene asks for {} agents but frame {k} of {} has {n}",
            scene.agents,
            path.display()
        );
    }
    if n == 0 {
        bail!(
            "scene.init.path: frame {k} of {} has no agents",
            path.display()
        );
    }
    let st = State {
        dim,
        n,
        pos: f.pos,
        vel: f.vel,
    };
    if let Some(i) = st.first_non_finite() {
        bail!("scene.init.path: frame {k} of {}: agent {i} has a NaN or infinite position or velocity", path.display());
    }
    outside_world(&st, scene).map_or(Ok(()), |(i, at)| {
        let side: Vec<String> = scene.world[..dim].iter().map(|l| l.to_string()).collect();
        bail!(
            "scene.init.path: frame {k} of {}: agent {i} is at ({at}), outside the scene's world \
             {} (a recording of another world? give the scene its scene.world)",
            path.display(),
            side.join(" x ")
        )
    })?;
    match (scene.model, &scene.vicsek) {
        (Model::Vicsek, Some(v)) => {
            // Vicsek particles move at v0: keep the headings, set the speed.
            let mut st = st;
            for i in 0..n {
                let u = unit2([st.vel[i], st.vel[n + i]]);
                st.vel[i] = u[0] * v.v0;
                st.vel[n + i] = u[1] * v.v0;
            }
            Ok(st)
        }
        (Model::Vicsek, None) => bail!("scene.vicsek: required with model \"vicsek\""),
        (Model::Boids, _) => Ok(st),
    }
}

/// The first agent of `st` outside `scene`'s world, with its position as text: walls and a
/// periodic box hold every agent in `0..=L` on each axis (an open world holds any position).
fn outside_world(st: &State, scene: &Scene) -> Option<(usize, String)> {
    if scene.boundary == crate::scene::Boundary::Open {
        return None;
    }
    let (n, dim) = (st.n, st.dim);
    (0..n)
        .find(|&i| (0..dim).any(|k| !(0.0..=scene.world[k]).contains(&st.pos[k * n + i])))
        .map(|i| {
            let at: Vec<String> = (0..dim).map(|k| st.pos[k * n + i].to_string()).collect();
            (i, at.join(", "))
        })
}
