//! The kernels of kernels/step.cu as the solver launches them: the table of functions, the
//! launch shape, and the species' tables with the launches that read them.

use std::sync::Arc;

use cudarc::driver::{
    CudaFunction, CudaModule, CudaSlice, CudaStream, DriverError, LaunchArgs, LaunchConfig,
    PushKernelArg,
};

use super::CudaError;
use crate::sim::species::{KernelSpecies, SpeciesHead};

/// Threads per block of the per-agent kernels (`BLOCK` in step.cu) and of the scan
/// (`SCAN_BLOCK`).
pub const BLOCK: u32 = 256;
pub const SCAN_BLOCK: u32 = 1024;

pub(super) struct Kernels {
    pub(super) frame: CudaFunction,
    pub(super) cell_index: CudaFunction,
    pub(super) scan_blocks: CudaFunction,
    pub(super) scan_sums: CudaFunction,
    pub(super) scan_add: CudaFunction,
    pub(super) build_grid: CudaFunction,
    pub(super) build_brute: CudaFunction,
    /// Species: the predators' positions before each step.
    pub(super) hunters: CudaFunction,
    /// The run's step kernel ([`step_kernel`]).
    pub(super) step: CudaFunction,
}

/// What a run's step kernel does: its rule, search, obstacles and dimension.
#[derive(Clone, Copy, Debug)]
pub(super) struct StepKind {
    pub(super) rule: Rule,
    pub(super) grid: bool,
    pub(super) obstacles: bool,
    pub(super) dim: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Rule {
    Boids,
    Topological,
    Species,
    Vicsek,
}

/// The name of the step kernel of kernels/step.cu for `k`: `{rule}_{grid|brute}[_obs]_kernel`
/// and the dimension (Vicsek: 2D only, no obstacles, no dimension in the name).
pub(super) fn step_kernel(k: StepKind) -> String {
    let rule = match k.rule {
        Rule::Boids => "boids",
        Rule::Topological => "topo",
        Rule::Species => "species",
        Rule::Vicsek => return format!("vicsek_{}_kernel", if k.grid { "grid" } else { "brute" }),
    };
    format!(
        "{rule}_{}{}_kernel{}",
        if k.grid { "grid" } else { "brute" },
        if k.obstacles { "_obs" } else { "" },
        k.dim
    )
}

impl Kernels {
    /// The kernels every run launches, and the step kernel of `step`.
    pub(super) fn load(m: &Arc<CudaModule>, step: StepKind) -> Result<Kernels, CudaError> {
        let f = |name: String| {
            m.load_function(&name)
                .map_err(|source| CudaError::MissingKernel { name, source })
        };
        Ok(Kernels {
            frame: f("frame_kernel".into())?,
            cell_index: f("cell_index_kernel".into())?,
            scan_blocks: f("scan_blocks_kernel".into())?,
            scan_sums: f("scan_sums_kernel".into())?,
            scan_add: f("scan_add_kernel".into())?,
            build_grid: f("build_grid_kernel".into())?,
            build_brute: f("build_brute_kernel".into())?,
            hunters: f("hunters_kernel".into())?,
            step: f(step_kernel(step))?,
        })
    }
}

pub(super) fn cfg(n: u32, block: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (n.div_ceil(block).max(1), 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// The species' tables on the device, each at least one element long (the driver refuses an
/// empty allocation).
pub(super) fn species_dev(
    st: &Arc<CudaStream>,
    k: &KernelSpecies,
) -> Result<SpeciesDev, DriverError> {
    let words = |w: &[u32]| -> Result<CudaSlice<u32>, DriverError> {
        if w.is_empty() {
            st.alloc_zeros(1)
        } else {
            st.clone_htod(w)
        }
    };
    let bytes = |b: &[u8]| -> Result<CudaSlice<u8>, DriverError> {
        if b.is_empty() {
            st.alloc_zeros(1)
        } else {
            st.clone_htod(b)
        }
    };
    Ok(SpeciesDev {
        head: k.head,
        params: bytes(bytemuck::cast_slice(&k.params))?,
        rows: words(bytemuck::cast_slice(&k.rows))?,
        mask: bytes(&k.mask)?,
        of_agent: bytes(&k.of_agent)?,
        hunters: st.alloc_zeros(4 * (k.head.n_hunters as usize).max(1))?,
    })
}

/// The species kernels' arguments after the state's (`SPECIES_ARGS` in kernels/step.cu).
pub(super) fn species_args<'a>(b: &mut LaunchArgs<'a>, sp: &'a SpeciesDev) {
    b.arg(&sp.head)
        .arg(&sp.params)
        .arg(&sp.rows)
        .arg(&sp.mask)
        .arg(&sp.of_agent)
        .arg(&sp.hunters);
}

/// `hunters_kernel`: the predators of the state `pos` (slot order, agent ids `ids` where
/// `has_ids`, else slot = agent) into `sp.hunters`, in id order.
#[allow(clippy::too_many_arguments)]
pub(super) fn hunters(
    st: &Arc<CudaStream>,
    f: &CudaFunction,
    sp: &SpeciesDev,
    n: u32,
    dim: usize,
    pos: &CudaSlice<f32>,
    ids: &CudaSlice<u32>,
    has_ids: u32,
) -> Result<(), DriverError> {
    let dim = dim as u32;
    // SAFETY: pos holds dim*n values and ids n; each thread writes the hunter of its own slot's
    // agent only, at an index below n_hunters (`KernelSpecies`: hunter_base + id - lo).
    unsafe {
        st.launch_builder(f)
            .arg(&n)
            .arg(&dim)
            .arg(pos)
            .arg(ids)
            .arg(&has_ids)
            .arg(&sp.head)
            .arg(&sp.params)
            .arg(&sp.rows)
            .arg(&sp.mask)
            .arg(&sp.of_agent)
            .arg(&sp.hunters)
            .launch(cfg(n, BLOCK))?;
    }
    Ok(())
}

/// A run's species on the device (`KernelSpecies`): each species' parameters (as bytes) and row
/// (as 4-byte words), the interaction matrix, the species of each agent, and the predators of
/// the step being taken (`struct Hunter`, 4 words each).
pub(super) struct SpeciesDev {
    pub(super) head: SpeciesHead,
    pub(super) params: CudaSlice<u8>,
    pub(super) rows: CudaSlice<u32>,
    pub(super) mask: CudaSlice<u8>,
    pub(super) of_agent: CudaSlice<u8>,
    pub(super) hunters: CudaSlice<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every step kernel a run can ask for is defined in kernels/step.cu (by name, or by a
    /// macro given the name): the solver loads only the one it runs, so a misspelt one would
    /// otherwise surface on a GPU only.
    #[test]
    fn every_step_kernel_is_in_the_source() {
        let src = super::super::nvrtc::STEP_CU;
        let rules = [Rule::Boids, Rule::Topological, Rule::Species, Rule::Vicsek];
        for rule in rules {
            for grid in [true, false] {
                for obstacles in [false, true] {
                    for dim in [2, 3] {
                        if rule == Rule::Vicsek && (obstacles || dim == 3) {
                            continue;
                        }
                        let k = StepKind {
                            rule,
                            grid,
                            obstacles,
                            dim,
                        };
                        let name = step_kernel(k);
                        assert!(
                            src.contains(&format!("void {name}("))
                                || src.contains(&format!("({name},")),
                            "{name} is not defined in kernels/step.cu"
                        );
                    }
                }
            }
        }
    }
}
