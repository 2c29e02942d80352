//! The points of a sweep: every combination of the varied values, each resolved into the scene
//! its runs start from.

use anyhow::{anyhow, bail, Result};

use super::param::{fmt_value, Param, Vary, MAX_VALUES};
use crate::scene::{self, Layout, Model, Neighbours, NoiseKind, Scene};

/// One combination of the varied values, resolved into a scene.
pub struct Point {
    /// The varied values in `--vary` order, and their CSV text.
    pub values: Vec<f64>,
    pub key: Vec<String>,
    /// Seed 0's scene; run k uses seed `scene.seed + k`.
    pub scene: Scene,
}

impl Point {
    /// Where the point is, for messages: `noise=0.5, agents=40`.
    pub fn at(&self, varies: &[Vary]) -> String {
        at(varies, &self.key)
    }
}

fn at(varies: &[Vary], key: &[String]) -> String {
    let at: Vec<String> = varies
        .iter()
        .zip(key)
        .map(|(v, k)| format!("{}={k}", v.param.name()))
        .collect();
    at.join(", ")
}

fn find(varies: &[Vary], p: Param) -> Option<usize> {
    varies.iter().position(|v| v.param == p)
}

/// Check the `--vary` flags against the scene and each other. Among other things, a model's
/// parameter is varied only in a scene of that model: `resolve_point` counts on it.
pub fn check_varies(base: &Scene, varies: &[Vary]) -> Result<()> {
    for (i, v) in varies.iter().enumerate() {
        if let Some(j) = varies[..i].iter().position(|w| w.param == v.param) {
            bail!(
                "--vary {:?}: {} is already varied by --vary {:?}",
                v.expr,
                v.param.name(),
                varies[j].expr
            );
        }
        if let Some(m) = v.param.model() {
            if m != base.model {
                bail!(
                    "--vary {:?}: {} is a {} parameter, but scene {} is {}",
                    v.expr,
                    v.param.name(),
                    m.name(),
                    base.name,
                    base.model.name()
                );
            }
        }
        // A parameter the timeline keys takes the keys' values from their step on, whatever
        // the point gives it: the sweep would measure the same keyed run at every point.
        let keyed = base.timeline.iter().enumerate().find_map(|(k, key)| {
            key.set
                .keys()
                .find(|path| {
                    let (section, field) = path.rsplit_once('.').unwrap_or(("", path));
                    field == v.param.name()
                        && (section == "vicsek"
                            || section == "boids"
                            || section.ends_with("].boids"))
                })
                .map(|path| (k, key.step, path))
        });
        if let Some((k, step, path)) = keyed {
            bail!(
                "--vary {:?}: scene {}'s timeline keys {path} (timeline[{k}], step {step}), which                  would replace the varied value from that step on, so every point would run the                  same keyed values; vary a parameter the timeline does not key, or take its keys                  out of the scene",
                v.expr,
                base.name
            );
        }
        if matches!(v.param, Param::Agents | Param::Density) && base.init.layout == Layout::File {
            bail!(
                "--vary {:?}: scene {} takes its agents from {}",
                v.expr,
                base.name,
                base.init.path.as_deref().unwrap_or("a file")
            );
        }
    }
    if let (Some(d), Some(a), Some(w)) = (
        find(varies, Param::Density),
        find(varies, Param::Agents),
        find(varies, Param::World),
    ) {
        bail!(
            "--vary {:?}: density is N/L^dim, it cannot be varied together with both --vary {:?} and --vary {:?}",
            varies[d].expr,
            varies[a].expr,
            varies[w].expr
        );
    }
    Ok(())
}

/// Why a combination of values makes no scene; the message completes "at NAME=VALUE, ...: ".
#[derive(Debug, thiserror::Error)]
pub enum PointError {
    #[error(
        "density {} in a box of volume {volume} gives {agents} agents (must be 1..={})",
        fmt_value(*.density),
        scene::MAX_AGENTS
    )]
    TooManyOrFewAgents {
        density: f64,
        volume: f64,
        agents: f64,
    },
    /// The agent count the scene cannot take (`Scene::set_agents`, as `--agents` is checked).
    #[error("agents: {0}")]
    Agents(String),
    #[error("v_min must be < v_max, got v_min {v_min} >= v_max {v_max}")]
    SpeedsCrossed { v_min: f32, v_max: f32 },
    #[error("at least one of r_sep, r_ali, r_coh must be > 0")]
    NoRadius,
    #[error("{} is a {} parameter, but scene {scene} has no {} section", .param.name(), .model.name(), .model.name())]
    NoModelSection {
        param: Param,
        model: Model,
        scene: String,
    },
}

/// The scene of one point.
fn resolve_point(base: &Scene, varies: &[Vary], values: &[f64]) -> Result<Scene, PointError> {
    let mut s = base.clone();
    let mut density = None;
    for (v, &x) in varies.iter().zip(values) {
        if v.param == Param::Density {
            density = Some(x);
        } else {
            set_param(&mut s, v.param, x)?;
        }
    }
    if let Some(rho) = density {
        set_density(&mut s, varies, rho)?;
    }
    if let Some(b) = &s.boids {
        if b.v_min >= b.v_max {
            return Err(PointError::SpeedsCrossed {
                v_min: b.v_min,
                v_max: b.v_max,
            });
        }
        if b.r_sep.max(b.r_ali).max(b.r_coh) <= 0.0 {
            return Err(PointError::NoRadius);
        }
    }
    Ok(s)
}

/// Sets parameter `p` of scene `s` to `x`.
fn set_param(s: &mut Scene, p: Param, x: f64) -> Result<(), PointError> {
    let f = x as f32;
    // A model's parameters live in that model's section. `check_varies` lets a model's
    // parameter be varied only in a scene of that model, and a loaded scene always has its
    // model's section (scene resolution fills it in from the defaults), so it is there;
    // should that ever stop holding, this is an error naming the parameter, not a panic.
    let missing = |model| PointError::NoModelSection {
        param: p,
        model,
        scene: s.name.clone(),
    };
    match p {
        Param::Noise | Param::NoiseKind | Param::V0 | Param::R => {
            let Some(vi) = s.vicsek.as_mut() else {
                return Err(missing(Model::Vicsek));
            };
            match p {
                Param::Noise => vi.noise = f,
                // parse_vary made it an index of NoiseKind::ALL.
                Param::NoiseKind => {
                    vi.noise_kind = NoiseKind::ALL[(x as usize).min(NoiseKind::ALL.len() - 1)]
                }
                Param::V0 => vi.v0 = f,
                _ => vi.r = f,
            }
        }
        Param::Agents => {
            // As `forge simulate --agents` takes it: too few for the species is refused.
            s.set_agents(x as u32).map_err(PointError::Agents)?;
            if let Some(c) = s.init.count {
                s.init.count = Some(c.min(s.agents));
            }
        }
        Param::World => {
            let dim = s.dim;
            for w in s.world.iter_mut().take(dim) {
                *w = f;
            }
        }
        // Set by `set_density` once the others are: it depends on them.
        Param::Density => {}
        Param::RSep
        | Param::RAli
        | Param::RCoh
        | Param::WSep
        | Param::WAli
        | Param::WCoh
        | Param::MaxForce
        | Param::VMin
        | Param::VMax
        | Param::K => {
            let Some(b) = s.boids.as_mut() else {
                return Err(missing(Model::Boids));
            };
            if p == Param::K {
                // parse_vary made it a whole number in 1..=MAX_AGENTS.
                b.neighbours = Neighbours::Topological { k: x as u32 };
                return Ok(());
            }
            let field = match p {
                Param::RSep => &mut b.r_sep,
                Param::RAli => &mut b.r_ali,
                Param::RCoh => &mut b.r_coh,
                Param::WSep => &mut b.w_sep,
                Param::WAli => &mut b.w_ali,
                Param::WCoh => &mut b.w_coh,
                Param::MaxForce => &mut b.max_force,
                Param::VMin => &mut b.v_min,
                _ => &mut b.v_max,
            };
            *field = f;
        }
    }
    Ok(())
}

/// Density `rho`: sets N from the box when the box is varied and N is not, else the box's
/// side from N.
fn set_density(s: &mut Scene, varies: &[Vary], rho: f64) -> Result<(), PointError> {
    let dim = s.dim;
    let world_varied = find(varies, Param::World).is_some();
    let agents_varied = find(varies, Param::Agents).is_some();
    if world_varied && !agents_varied {
        let vol: f64 = s.world[..dim].iter().map(|&w| w as f64).product();
        let n = (rho * vol).round();
        if n < 1.0 || n > scene::MAX_AGENTS as f64 {
            return Err(PointError::TooManyOrFewAgents {
                density: rho,
                volume: vol,
                agents: n,
            });
        }
        s.set_agents(n as u32).map_err(PointError::Agents)?;
        if let Some(c) = s.init.count {
            s.init.count = Some(c.min(s.agents));
        }
    } else {
        let side = (s.agents as f64 / rho).powf(1.0 / dim as f64) as f32;
        for w in s.world.iter_mut().take(dim) {
            *w = side;
        }
    }
    Ok(())
}

/// Every combination of the varied values (the first `--vary` outermost), as scenes.
pub fn points(base: &Scene, varies: &[Vary]) -> Result<Vec<Point>> {
    let total = varies
        .iter()
        .try_fold(1usize, |acc, v| acc.checked_mul(v.values.len()))
        .filter(|&t| t <= MAX_VALUES)
        .ok_or_else(|| anyhow!("the --vary flags make more than {MAX_VALUES} points"))?;
    let mut out = Vec::with_capacity(total);
    let mut idx = vec![0usize; varies.len()];
    for _ in 0..total {
        let values: Vec<f64> = varies.iter().zip(&idx).map(|(v, &i)| v.values[i]).collect();
        let key: Vec<String> = varies
            .iter()
            .zip(&values)
            .map(|(v, &x)| v.param.fmt(x))
            .collect();
        let scene = resolve_point(base, varies, &values).map_err(|m| {
            let exprs: Vec<String> = varies.iter().map(|v| format!("{:?}", v.expr)).collect();
            anyhow!(
                "--vary {}: at {}: {m}",
                exprs.join(" --vary "),
                at(varies, &key)
            )
        })?;
        out.push(Point { values, key, scene });
        // Odometer, last --vary fastest.
        for k in (0..idx.len()).rev() {
            idx[k] += 1;
            if idx[k] < varies[k].values.len() {
                break;
            }
            idx[k] = 0;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::param::parse_vary;
    use super::*;

    #[test]
    fn a_missing_model_section_is_an_error_not_a_panic() {
        let mut base = Scene::load("vicsek").unwrap();
        let varies = [parse_vary("noise=1").unwrap()];
        check_varies(&base, &varies).unwrap();
        assert_eq!(
            resolve_point(&base, &varies, &[1.0])
                .unwrap()
                .vicsek
                .unwrap()
                .noise,
            1.0
        );
        base.vicsek = None;
        let e = resolve_point(&base, &varies, &[1.0]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "noise is a vicsek parameter, but scene vicsek has no vicsek section"
        );
    }
}
