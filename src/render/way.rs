//! Which of its ways the renderer draws frames with, as `FORGE_RENDERER` asks: by default
//! (`auto`) the CPU draws the looks it can where the adapter is a software driver (the frames
//! are the GPU passes' frames, computed as plain loops over the cores: `soft`), and the GPU
//! passes draw everything else. The other values are there to compare the ways and to measure
//! them.

use anyhow::{bail, Result};

/// The environment variable that chooses.
pub const VARIABLE: &str = "FORGE_RENDERER";

const NAMES: &str = "auto, gpu, cpu or sprites";

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Way {
    /// The CPU on a software adapter where it can draw the look, else the GPU passes.
    #[default]
    Auto,
    /// The GPU passes for every frame, on any adapter.
    Gpu,
    /// The CPU for every frame whose look it can draw, on any adapter.
    Cpu,
    /// The GPU passes with every agent an instanced sprite (no splat path): the reference the
    /// splat path is compared with.
    Sprites,
}

impl Way {
    /// The way `FORGE_RENDERER` names (`auto` when unset).
    pub fn from_env() -> Result<Way> {
        match std::env::var(VARIABLE) {
            Err(std::env::VarError::NotPresent) => Ok(Way::Auto),
            Ok(v) => Way::parse(&v),
            Err(_) => bail!("{VARIABLE} is not valid UTF-8 ({NAMES})"),
        }
    }

    fn parse(v: &str) -> Result<Way> {
        match v.trim().to_ascii_lowercase().as_str() {
            "" | "auto" => Ok(Way::Auto),
            "gpu" => Ok(Way::Gpu),
            "cpu" => Ok(Way::Cpu),
            "sprites" => Ok(Way::Sprites),
            _ => bail!("{VARIABLE}={v:?}: not a way to render ({NAMES})"),
        }
    }

    /// Whether frames may be drawn on the CPU with the adapter `info`.
    pub fn on_cpu(self, info: &wgpu::AdapterInfo) -> bool {
        match self {
            Way::Auto => info.device_type == wgpu::DeviceType::Cpu,
            Way::Cpu => true,
            Way::Gpu | Way::Sprites => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_way_by_its_name_and_nothing_else() {
        assert_eq!(Way::parse("auto").unwrap(), Way::Auto);
        assert_eq!(Way::parse("").unwrap(), Way::Auto);
        assert_eq!(Way::parse("GPU").unwrap(), Way::Gpu);
        assert_eq!(Way::parse("cpu").unwrap(), Way::Cpu);
        assert_eq!(Way::parse(" Sprites ").unwrap(), Way::Sprites);
        let e = Way::parse("fast").unwrap_err().to_string();
        assert!(e.contains("FORGE_RENDERER") && e.contains(NAMES), "{e}");
    }
}
