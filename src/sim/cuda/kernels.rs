//! The kernels of kernels/step.cu as the solver launches them: the table of functions, the
//! launch shape, and the species' tables with the launches that read them.

use std::sync::Arc;

use cudarc::driver::{
    CudaFunction, CudaModule, CudaSlice, CudaStream, DriverError, LaunchArgs, LaunchConfig,
    PushKernelArg,
};

use super::solver::BLOCK;
use super::CudaError;
use crate::sim::species::{KernelSpecies, SpeciesHead};

pub(super) struct Kernels {
    pub(super) frame: CudaFunction,
    pub(super) cell_index: CudaFunction,
    pub(super) scan_blocks: CudaFunction,
    pub(super) scan_sums: CudaFunction,
    pub(super) scan_add: CudaFunction,
    pub(super) build_grid: CudaFunction,
    pub(super) build_brute: CudaFunction,
    pub(super) boids_grid2: CudaFunction,
    pub(super) boids_grid3: CudaFunction,
    pub(super) vicsek_grid: CudaFunction,
    pub(super) boids_brute2: CudaFunction,
    pub(super) boids_brute3: CudaFunction,
    pub(super) vicsek_brute: CudaFunction,
    pub(super) topo_grid2: CudaFunction,
    pub(super) topo_grid3: CudaFunction,
    pub(super) topo_brute2: CudaFunction,
    pub(super) topo_brute3: CudaFunction,
    /// With obstacles: the boids and topological kernels' `_obs` twins, in the order above.
    pub(super) boids_grid_obs2: CudaFunction,
    pub(super) boids_grid_obs3: CudaFunction,
    pub(super) boids_brute_obs2: CudaFunction,
    pub(super) boids_brute_obs3: CudaFunction,
    pub(super) topo_grid_obs2: CudaFunction,
    pub(super) topo_grid_obs3: CudaFunction,
    pub(super) topo_brute_obs2: CudaFunction,
    pub(super) topo_brute_obs3: CudaFunction,
    /// Species: the predators' positions, then the step (without and with obstacles).
    pub(super) hunters: CudaFunction,
    pub(super) species_grid2: CudaFunction,
    pub(super) species_grid3: CudaFunction,
    pub(super) species_grid_obs2: CudaFunction,
    pub(super) species_grid_obs3: CudaFunction,
    pub(super) species_brute2: CudaFunction,
    pub(super) species_brute3: CudaFunction,
    pub(super) species_brute_obs2: CudaFunction,
    pub(super) species_brute_obs3: CudaFunction,
}

impl Kernels {
    pub(super) fn load(m: &Arc<CudaModule>) -> Result<Kernels, CudaError> {
        let f = |name: &'static str| {
            m.load_function(name)
                .map_err(|source| CudaError::MissingKernel { name, source })
        };
        Ok(Kernels {
            frame: f("frame_kernel")?,
            cell_index: f("cell_index_kernel")?,
            scan_blocks: f("scan_blocks_kernel")?,
            scan_sums: f("scan_sums_kernel")?,
            scan_add: f("scan_add_kernel")?,
            build_grid: f("build_grid_kernel")?,
            build_brute: f("build_brute_kernel")?,
            boids_grid2: f("boids_grid_kernel2")?,
            boids_grid3: f("boids_grid_kernel3")?,
            vicsek_grid: f("vicsek_grid_kernel")?,
            boids_brute2: f("boids_brute_kernel2")?,
            boids_brute3: f("boids_brute_kernel3")?,
            vicsek_brute: f("vicsek_brute_kernel")?,
            topo_grid2: f("topo_grid_kernel2")?,
            topo_grid3: f("topo_grid_kernel3")?,
            topo_brute2: f("topo_brute_kernel2")?,
            topo_brute3: f("topo_brute_kernel3")?,
            boids_grid_obs2: f("boids_grid_obs_kernel2")?,
            boids_grid_obs3: f("boids_grid_obs_kernel3")?,
            boids_brute_obs2: f("boids_brute_obs_kernel2")?,
            boids_brute_obs3: f("boids_brute_obs_kernel3")?,
            topo_grid_obs2: f("topo_grid_obs_kernel2")?,
            topo_grid_obs3: f("topo_grid_obs_kernel3")?,
            topo_brute_obs2: f("topo_brute_obs_kernel2")?,
            topo_brute_obs3: f("topo_brute_obs_kernel3")?,
            hunters: f("hunters_kernel")?,
            species_grid2: f("species_grid_kernel2")?,
            species_grid3: f("species_grid_kernel3")?,
            species_grid_obs2: f("species_grid_obs_kernel2")?,
            species_grid_obs3: f("species_grid_obs_kernel3")?,
            species_brute2: f("species_brute_kernel2")?,
            species_brute3: f("species_brute_kernel3")?,
            species_brute_obs2: f("species_brute_obs_kernel2")?,
            species_brute_obs3: f("species_brute_obs_kernel3")?,
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
