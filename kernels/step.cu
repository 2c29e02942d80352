// forge's step on the GPU: the CPU solver's step (src/sim/cpu.rs) kernel by kernel.
//
// Grid search, per step:
//   cell_index_kernel     cell of every slot, and its rank within the cell (atomics)
//   scan_blocks_kernel,
//   scan_sums_kernel,
//   scan_add_kernel       exclusive prefix of the cell counts -> cell_start (counting sort)
//   build_grid_kernel     coherent reorder into cell order: positions, velocities (Vicsek: unit
//                         velocities), their fixed-point form (svfix), agent ids
//   boids_grid_kernel2/3, vicsek_grid_kernel, topo_grid_kernel2/3 (topological neighbours)
//                         the force and integration, boundaries, RNG; writes slot t of `next`
// Brute force (small N), per step:
//   build_brute_kernel    fixed-point velocities (Vicsek: unit velocities) in slot order
//   boids_brute_kernel2/3, vicsek_brute_kernel, topo_brute_kernel2/3
// With obstacles, the boids and topological kernels' _obs twins (boids_grid_obs_kernel2, ...).
// Species: hunters_kernel (the predators' positions, in id order), then species_grid_kernel2/3
// or species_brute_kernel2/3 (and their _obs twins).
//
// Recording (a frame every record_every steps):
//   frame_kernel          the state in agent order, as a .bfs frame stores it, into a frame
//                         buffer that the copy stream brings to pinned host memory
//
// The order of agents inside a cell depends on the atomics; the result does not: neighbour
// sums are 64-bit fixed point (order-free) and each agent's id travels with it.
//
// Each per-slot kernel is an index, a bounds guard and one call to its slot function in
// forge_math.h (gather_slot, brute_prep_slot, boids_grid_slot, ...), which
// kernels/host/shim.cpp runs over all slots on the host for tests/kernels_host.rs.
//
// Compiled by NVRTC at run time with --fmad=false (src/sim/cuda.rs); forge_math.h is pasted in
// place of the #include below.
#include "forge_math.h"

#define BLOCK 256
#define SCAN_BLOCK 1024
// The step kernels are held to 64 registers a thread (65536 / (BLOCK * 4)), so four blocks of
// BLOCK threads share an SM: half its warps, against three blocks at the 67 registers NVRTC
// gives them unbounded (sm_90). Their neighbour loops wait on memory, and more warps hide it.
#define STEP_BLOCKS_PER_SM 4

// Records the first (step, agent) whose new state is not finite: key = step << 32 | agent.
__device__ __forceinline__ void flag(fu64* bad, fu64 step, fu32 agent) {
    atomicMin(bad, (step << 32) | (fu64)agent);
}

extern "C" __global__ void cell_index_kernel(GridShape g, const float* __restrict__ pos, fu32 n,
                                             fu32 dim, fu32* __restrict__ cell_of,
                                             fu32* __restrict__ rank, fu32* __restrict__ counts) {
    fu32 s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= n) {
        return;
    }
    fu32 c = cell_index(&g, pos, n, s, (int)dim);
    cell_of[s] = c;
    rank[s] = atomicAdd(&counts[c], 1u);
}

// Exclusive scan of `len` counts, one block of SCAN_BLOCK elements each; block totals to sums.
extern "C" __global__ void scan_blocks_kernel(const fu32* __restrict__ counts,
                                              fu32* __restrict__ out, fu32* __restrict__ sums,
                                              fu32 len) {
    __shared__ fu32 buf[SCAN_BLOCK];
    fu32 i = blockIdx.x * SCAN_BLOCK + threadIdx.x;
    fu32 x = i < len ? counts[i] : 0u;
    buf[threadIdx.x] = x;
    __syncthreads();
    for (fu32 off = 1; off < SCAN_BLOCK; off <<= 1) {
        fu32 y = threadIdx.x >= off ? buf[threadIdx.x - off] : 0u;
        __syncthreads();
        buf[threadIdx.x] += y;
        __syncthreads();
    }
    if (i < len) {
        out[i] = buf[threadIdx.x] - x;
    }
    if (threadIdx.x == SCAN_BLOCK - 1) {
        sums[blockIdx.x] = buf[SCAN_BLOCK - 1];
    }
}

// Exclusive scan of the `nb` block totals in place, by one block (each thread a contiguous run).
extern "C" __global__ void scan_sums_kernel(fu32* __restrict__ sums, fu32 nb) {
    __shared__ fu32 buf[SCAN_BLOCK];
    fu32 per = (nb + SCAN_BLOCK - 1) / SCAN_BLOCK;
    fu32 lo = threadIdx.x * per;
    fu32 hi = lo + per < nb ? lo + per : nb;
    fu32 local = 0;
    for (fu32 i = lo; i < hi; i++) {
        local += sums[i];
    }
    buf[threadIdx.x] = local;
    __syncthreads();
    for (fu32 off = 1; off < SCAN_BLOCK; off <<= 1) {
        fu32 y = threadIdx.x >= off ? buf[threadIdx.x - off] : 0u;
        __syncthreads();
        buf[threadIdx.x] += y;
        __syncthreads();
    }
    fu32 run = buf[threadIdx.x] - local;
    for (fu32 i = lo; i < hi; i++) {
        fu32 v = sums[i];
        sums[i] = run;
        run += v;
    }
}

extern "C" __global__ void scan_add_kernel(fu32* __restrict__ out, const fu32* __restrict__ sums,
                                           fu32 len) {
    fu32 i = blockIdx.x * SCAN_BLOCK + threadIdx.x;
    if (i < len) {
        out[i] += sums[blockIdx.x];
    }
}

// Gather slot s of the current state into its sorted slot t (CpuSolver::build_grid).
extern "C" __global__ void build_grid_kernel(fu32 n, fu32 dim, fu32 units,
                                             const fu32* __restrict__ cell_of,
                                             const fu32* __restrict__ rank,
                                             const fu32* __restrict__ cell_start,
                                             const float* __restrict__ pos,
                                             const float* __restrict__ vel,
                                             const fu32* __restrict__ ids,
                                             float* __restrict__ spos, float* __restrict__ svel,
                                             fi64* __restrict__ svfix, fu32* __restrict__ next_ids,
                                             fu32* __restrict__ scell) {
    fu32 s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= n) {
        return;
    }
    gather_slot(n, dim, units != 0, cell_of, rank, cell_start, pos, vel, ids, spos, svel, svfix,
                next_ids, scell, s);
}

// The current state in agent order into `frame` (positions, then velocities), and the
// divergence key as of this step into `frame_bad`, for the copy to the host.
extern "C" __global__ void frame_kernel(fu32 n, fu32 dim, const float* __restrict__ pos,
                                        const float* __restrict__ vel,
                                        const fu32* __restrict__ ids,
                                        const fu64* __restrict__ bad, float* __restrict__ frame,
                                        fu64* __restrict__ frame_bad) {
    fu32 s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s == 0) {
        *frame_bad = *bad;
    }
    if (s >= n) {
        return;
    }
    frame_slot(n, dim, pos, vel, ids, frame, s);
}

// Fixed-point velocities (Vicsek: unit velocities, kept in `units` too) of the current slots
// (CpuSolver::build_brute).
extern "C" __global__ void build_brute_kernel(fu32 n, fu32 dim, fu32 is_units,
                                              const float* __restrict__ vel,
                                              float* __restrict__ units,
                                              fi64* __restrict__ bvfix) {
    fu32 s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= n) {
        return;
    }
    brute_prep_slot(n, dim, is_units != 0, vel, units, bvfix, s);
}

// A boids step kernel's body, grid search: metric rules, or with TOPO topological neighbours;
// with OBS, obstacles.
template <int D, bool OBS = false, bool TOPO = false>
__device__ __forceinline__ void boids_grid(Params p, GridShape g, fu64 step,
                                           const fu32* cell_start, const fu32* scell,
                                           const fu32* ids, const float* spos, const float* svel,
                                           const fi64* svfix, float* out_pos, float* out_vel,
                                           fu64* bad, const Obs* obs = 0) {
    fu32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= p.n) {
        return;
    }
    bool ok;
    if constexpr (TOPO) {
        ok = topo_grid_slot<D, OBS>(&p, &g, step, cell_start, scell, ids, spos, svel, svfix, t,
                                    out_pos, out_vel, obs);
    } else {
        ok = boids_grid_slot<D, OBS>(&p, &g, step, cell_start, scell, ids, spos, svel, svfix, t,
                                     out_pos, out_vel, obs);
    }
    if (!ok) {
        flag(bad, step + 1, ids[t]);
    }
}

extern "C" __global__ __launch_bounds__(BLOCK, STEP_BLOCKS_PER_SM)
void boids_grid_kernel2(Params p, GridShape g, fu64 step, const fu32* cell_start, const fu32* scell,
                        const fu32* ids, const float* spos, const float* svel, const fi64* svfix,
                        float* out_pos, float* out_vel, fu64* bad) {
    boids_grid<2>(p, g, step, cell_start, scell, ids, spos, svel, svfix, out_pos, out_vel, bad);
}

extern "C" __global__ __launch_bounds__(BLOCK, STEP_BLOCKS_PER_SM)
void boids_grid_kernel3(Params p, GridShape g, fu64 step, const fu32* cell_start, const fu32* scell,
                        const fu32* ids, const float* spos, const float* svel, const fi64* svfix,
                        float* out_pos, float* out_vel, fu64* bad) {
    boids_grid<3>(p, g, step, cell_start, scell, ids, spos, svel, svfix, out_pos, out_vel, bad);
}

extern "C" __global__ __launch_bounds__(BLOCK, STEP_BLOCKS_PER_SM)
void vicsek_grid_kernel(Params p, GridShape g, fu64 step, const fu32* cell_start, const fu32* scell,
                        const fu32* ids, const float* spos, const float* svel, const fi64* svfix,
                        float* out_pos, float* out_vel, fu64* bad) {
    fu32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= p.n) {
        return;
    }
    if (!vicsek_grid_slot(&p, &g, step, cell_start, scell, ids, spos, svel, svfix, t, out_pos,
                          out_vel)) {
        flag(bad, step + 1, ids[t]);
    }
}

// A boids step kernel's body, brute force (see boids_grid).
template <int D, bool OBS = false, bool TOPO = false>
__device__ __forceinline__ void boids_brute(Params p, fu64 step, const float* pos,
                                            const float* vel, const fi64* bvfix, float* out_pos,
                                            float* out_vel, fu64* bad, const Obs* obs = 0) {
    fu32 s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= p.n) {
        return;
    }
    bool ok;
    if constexpr (TOPO) {
        ok = topo_brute_slot<D, OBS>(&p, step, pos, vel, bvfix, s, out_pos, out_vel, obs);
    } else {
        ok = boids_brute_slot<D, OBS>(&p, step, pos, vel, bvfix, s, out_pos, out_vel, obs);
    }
    if (!ok) {
        flag(bad, step + 1, s);
    }
}

extern "C" __global__ void boids_brute_kernel2(Params p, fu64 step, const float* pos,
                                               const float* vel, const fi64* bvfix,
                                               float* out_pos, float* out_vel, fu64* bad) {
    boids_brute<2>(p, step, pos, vel, bvfix, out_pos, out_vel, bad);
}

extern "C" __global__ void boids_brute_kernel3(Params p, fu64 step, const float* pos,
                                               const float* vel, const fi64* bvfix,
                                               float* out_pos, float* out_vel, fu64* bad) {
    boids_brute<3>(p, step, pos, vel, bvfix, out_pos, out_vel, bad);
}

// Brute force keeps slots = agent ids (the CPU never reorders without a grid).
extern "C" __global__ void vicsek_brute_kernel(Params p, fu64 step, const float* pos,
                                               const float* units, const fi64* bvfix,
                                               float* out_pos, float* out_vel, fu64* bad) {
    fu32 s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= p.n) {
        return;
    }
    if (!vicsek_brute_slot(&p, step, pos, units, bvfix, s, out_pos, out_vel)) {
        flag(bad, step + 1, s);
    }
}

// Topological neighbours (forge_math.h topo_agent): the k nearest seen agents, k <= TOPO_K_MAX.
extern "C" __global__ void topo_grid_kernel2(Params p, GridShape g, fu64 step,
                                             const fu32* cell_start, const fu32* scell,
                                             const fu32* ids, const float* spos,
                                             const float* svel, const fi64* svfix,
                                             float* out_pos, float* out_vel, fu64* bad) {
    boids_grid<2, false, true>(p, g, step, cell_start, scell, ids, spos, svel, svfix, out_pos,
                               out_vel, bad);
}

extern "C" __global__ void topo_grid_kernel3(Params p, GridShape g, fu64 step,
                                             const fu32* cell_start, const fu32* scell,
                                             const fu32* ids, const float* spos,
                                             const float* svel, const fi64* svfix,
                                             float* out_pos, float* out_vel, fu64* bad) {
    boids_grid<3, false, true>(p, g, step, cell_start, scell, ids, spos, svel, svfix, out_pos,
                               out_vel, bad);
}

extern "C" __global__ void topo_brute_kernel2(Params p, fu64 step, const float* pos,
                                              const float* vel, const fi64* bvfix,
                                              float* out_pos, float* out_vel, fu64* bad) {
    boids_brute<2, false, true>(p, step, pos, vel, bvfix, out_pos, out_vel, bad);
}

extern "C" __global__ void topo_brute_kernel3(Params p, fu64 step, const float* pos,
                                              const float* vel, const fi64* bvfix,
                                              float* out_pos, float* out_vel, fu64* bad) {
    boids_brute<3, false, true>(p, step, pos, vel, bvfix, out_pos, out_vel, bad);
}

// With obstacles (forge_math.h obs_steer, obs_settle): the same kernels, with the shapes. One
// kernel per search, rule and dimension, named as above with _obs.
#define OBS_GRID_KERNEL(name, D, TOPO)                                                            \
    extern "C" __global__ void name(Params p, GridShape g, fu64 step, const fu32* cell_start,    \
                                    const fu32* scell, const fu32* ids, const float* spos,       \
                                    const float* svel, const fi64* svfix, float* out_pos,        \
                                    float* out_vel, fu64* bad, ObsHead oh,                        \
                                    const ObsShape* shapes) {                                     \
        Obs obs = {oh, shapes};                                                                   \
        boids_grid<D, true, TOPO>(p, g, step, cell_start, scell, ids, spos, svel, svfix,         \
                                  out_pos, out_vel, bad, &obs);                                   \
    }
#define OBS_BRUTE_KERNEL(name, D, TOPO)                                                           \
    extern "C" __global__ void name(Params p, fu64 step, const float* pos, const float* vel,     \
                                    const fi64* bvfix, float* out_pos, float* out_vel, fu64* bad, \
                                    ObsHead oh, const ObsShape* shapes) {                         \
        Obs obs = {oh, shapes};                                                                   \
        boids_brute<D, true, TOPO>(p, step, pos, vel, bvfix, out_pos, out_vel, bad, &obs);        \
    }

OBS_GRID_KERNEL(boids_grid_obs_kernel2, 2, false)
OBS_GRID_KERNEL(boids_grid_obs_kernel3, 3, false)
OBS_GRID_KERNEL(topo_grid_obs_kernel2, 2, true)
OBS_GRID_KERNEL(topo_grid_obs_kernel3, 3, true)
OBS_BRUTE_KERNEL(boids_brute_obs_kernel2, 2, false)
OBS_BRUTE_KERNEL(boids_brute_obs_kernel3, 3, false)
OBS_BRUTE_KERNEL(topo_brute_obs_kernel2, 2, true)
OBS_BRUTE_KERNEL(topo_brute_obs_kernel3, 3, true)

// ---- Species (forge_math.h species_agent) ----

// The species tables as kernel arguments, and as the step reads them.
#define SPECIES_ARGS                                                                              \
    SpeciesHead sh, const Params *sp_params, const SpeciesRow *sp_rows,                           \
        const unsigned char *sp_mask, const unsigned char *sp_of, const Hunter *hunters
#define SPECIES_TAB                                                                               \
    SpeciesTab sp = {sh.count, sh.any_predator, sh.n_hunters, sp_params,                         \
                     sp_rows,  sp_mask,         sp_of,        hunters};

// The predators of the state pos (slot order; ids = NULL: slot = agent) into `out`, in id
// order, for the flight of the step that follows.
extern "C" __global__ void hunters_kernel(fu32 n, fu32 dim, const float* __restrict__ pos,
                                          const fu32* __restrict__ ids, fu32 has_ids,
                                          SpeciesHead sh, const Params* sp_params,
                                          const SpeciesRow* sp_rows, const unsigned char* sp_mask,
                                          const unsigned char* sp_of, Hunter* out) {
    fu32 s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= n) {
        return;
    }
    SpeciesTab sp = {sh.count, sh.any_predator, sh.n_hunters, sp_params, sp_rows, sp_mask, sp_of,
                     out};
    hunters_slot(&sp, n, dim, pos, has_ids ? ids : 0, s, out);
}

template <int D, bool OBS>
__device__ __forceinline__ void species_grid(Params p, GridShape g, fu64 step,
                                             const fu32* cell_start, const fu32* scell,
                                             const fu32* ids, const float* spos, const float* svel,
                                             const fi64* svfix, float* out_pos, float* out_vel,
                                             fu64* bad, const SpeciesTab* sp, const Obs* obs) {
    fu32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= p.n) {
        return;
    }
    if (!species_grid_slot<D, OBS>(&p, sp, &g, step, cell_start, scell, ids, spos, svel, svfix,
                                   t, out_pos, out_vel, obs)) {
        flag(bad, step + 1, ids[t]);
    }
}

template <int D, bool OBS>
__device__ __forceinline__ void species_brute(Params p, fu64 step, const float* pos,
                                              const float* vel, const fi64* bvfix, float* out_pos,
                                              float* out_vel, fu64* bad, const SpeciesTab* sp,
                                              const Obs* obs) {
    fu32 s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= p.n) {
        return;
    }
    if (!species_brute_slot<D, OBS>(&p, sp, step, pos, vel, bvfix, s, out_pos, out_vel, obs)) {
        flag(bad, step + 1, s);
    }
}

#define SPECIES_GRID_KERNEL(name, D)                                                              \
    extern "C" __global__ void name(Params p, GridShape g, fu64 step, const fu32* cell_start,    \
                                    const fu32* scell, const fu32* ids, const float* spos,       \
                                    const float* svel, const fi64* svfix, float* out_pos,        \
                                    float* out_vel, fu64* bad, SPECIES_ARGS) {                    \
        SPECIES_TAB                                                                               \
        species_grid<D, false>(p, g, step, cell_start, scell, ids, spos, svel, svfix, out_pos,   \
                               out_vel, bad, &sp, 0);                                             \
    }
#define SPECIES_GRID_OBS_KERNEL(name, D)                                                          \
    extern "C" __global__ void name(Params p, GridShape g, fu64 step, const fu32* cell_start,    \
                                    const fu32* scell, const fu32* ids, const float* spos,       \
                                    const float* svel, const fi64* svfix, float* out_pos,        \
                                    float* out_vel, fu64* bad, SPECIES_ARGS, ObsHead oh,          \
                                    const ObsShape* shapes) {                                     \
        SPECIES_TAB                                                                               \
        Obs obs = {oh, shapes};                                                                   \
        species_grid<D, true>(p, g, step, cell_start, scell, ids, spos, svel, svfix, out_pos,    \
                              out_vel, bad, &sp, &obs);                                           \
    }
#define SPECIES_BRUTE_KERNEL(name, D)                                                             \
    extern "C" __global__ void name(Params p, fu64 step, const float* pos, const float* vel,     \
                                    const fi64* bvfix, float* out_pos, float* out_vel, fu64* bad, \
                                    SPECIES_ARGS) {                                               \
        SPECIES_TAB                                                                               \
        species_brute<D, false>(p, step, pos, vel, bvfix, out_pos, out_vel, bad, &sp, 0);        \
    }
#define SPECIES_BRUTE_OBS_KERNEL(name, D)                                                         \
    extern "C" __global__ void name(Params p, fu64 step, const float* pos, const float* vel,     \
                                    const fi64* bvfix, float* out_pos, float* out_vel, fu64* bad, \
                                    SPECIES_ARGS, ObsHead oh, const ObsShape* shapes) {           \
        SPECIES_TAB                                                                               \
        Obs obs = {oh, shapes};                                                                   \
        species_brute<D, true>(p, step, pos, vel, bvfix, out_pos, out_vel, bad, &sp, &obs);      \
    }

SPECIES_GRID_KERNEL(species_grid_kernel2, 2)
SPECIES_GRID_KERNEL(species_grid_kernel3, 3)
SPECIES_GRID_OBS_KERNEL(species_grid_obs_kernel2, 2)
SPECIES_GRID_OBS_KERNEL(species_grid_obs_kernel3, 3)
SPECIES_BRUTE_KERNEL(species_brute_kernel2, 2)
SPECIES_BRUTE_KERNEL(species_brute_kernel3, 3)
SPECIES_BRUTE_OBS_KERNEL(species_brute_obs_kernel2, 2)
SPECIES_BRUTE_OBS_KERNEL(species_brute_obs_kernel3, 3)
