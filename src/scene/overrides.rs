//! What the front ends may change of a scene before it runs (`--steps`, `--agents`, `--seed`,
//! `--every`; the Python package's keywords): one value type, the flags of `forge simulate`,
//! `run` and `view` and the library's input alike.

use super::Scene;

/// What `simulate` and `run` may change of a scene; stored back into the recording's scene.
#[derive(clap::Args, Debug, Clone, Copy, Default)]
pub struct Overrides {
    /// Override the scene's number of steps.
    #[arg(long)]
    pub steps: Option<u64>,
    /// Override the scene's number of agents (the world keeps its size).
    #[arg(long)]
    pub agents: Option<u64>,
    /// Override the scene's random seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Record a frame every K steps (the scene's `record_every`); the first frame is always
    /// recorded. The steps between frames cost only the solver.
    #[arg(long, value_name = "K")]
    pub every: Option<u64>,
}

impl Overrides {
    /// What sets the agent count, for messages about it: `--agents` when given, else the
    /// scene's field.
    pub fn agents_from(&self) -> &'static str {
        if self.agents.is_some() {
            "--agents"
        } else {
            "scene.agents"
        }
    }

    /// Applies the overrides to `scene`, naming the flag at fault.
    pub fn apply(&self, scene: &mut Scene) -> Result<(), anyhow::Error> {
        if let Some(s) = self.steps {
            if s > super::MAX_STEPS {
                anyhow::bail!("--steps: must be at most {}, got {s}", super::MAX_STEPS);
            }
            scene.steps = s;
        }
        if let Some(n) = self.agents {
            if n == 0 || n > super::MAX_AGENTS {
                anyhow::bail!("--agents: must be in 1..={}, got {n}", super::MAX_AGENTS);
            }
            if scene.init.layout == super::Layout::File {
                anyhow::bail!(
                    "--agents: the scene takes its agents from {}",
                    scene.init.path.as_deref().unwrap_or("a file")
                );
            }
            scene
                .set_agents(n as u32)
                .map_err(|e| anyhow::anyhow!("--agents: {e}"))?;
            if let Some(c) = scene.init.count {
                scene.init.count = Some(c.min(n as u32));
            }
        }
        if let Some(s) = self.seed {
            scene.seed = s;
        }
        if let Some(k) = self.every {
            if k == 0 || k > u64::from(u32::MAX) {
                anyhow::bail!("--every: must be in 1..={}, got {k}", u32::MAX);
            }
            scene.record_every = k as u32;
        }
        Ok(())
    }
}
