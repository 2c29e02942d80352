// Host build of kernels/forge_math.h for tests/kernels_host.rs: thin extern "C" wrappers around
// the __host__ __device__ arithmetic, and a whole step over all agents that runs the per-slot
// bodies of the CUDA kernels of kernels/step.cu (cell index, reorder, per-agent step: the same
// forge_math.h functions) on the CPU, with a sequential counting sort in place of the atomics
// and scan kernels.
// Compiled with -ffp-contract=off -fno-fast-math, so it computes what the GPU computes under
// NVRTC --fmad=false.
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "../forge_math.h"

// fm_boids_pairs_integrate for one D.
template <int D>
static void pairs_integrate(const Params* p, fu32 m, const float* d, const float* d2,
                            const fi64* vfix, int self0, fu64 step, fu64 agent, float* pos,
                            float* vel, fi64* acc_out) {
    Sight<D> sight;
    bool fov = sight_new<D>(p, vel, &sight);
    BoidsAcc<D> acc;
    boids_acc_new<D>(&acc);
    for (fu32 i = 0; i < m; i++) {
        bool seen = !fov || sees<D>(&sight, d + D * i, d2[i]);
        boids_pair<D>(&acc, p, d + D * i, d2[i], vfix + D * i, seen);
    }
    if (self0) {
        boids_remove_self<D>(&acc, p, vfix);
    }
    for (int k = 0; k < D; k++) {
        acc_out[k] = acc.sep[k];
        acc_out[D + k] = acc.ali[k];
        acc_out[2 * D + k] = acc.coh[k];
    }
    acc_out[3 * D] = acc.n_ali;
    acc_out[3 * D + 1] = acc.n_coh;
    boids_integrate<D>(p, &acc, step, agent, pos, vel);
}

// fm_sees for one D.
template <int D>
static int sees_d(const Params* p, const float* vel, const float* d, float d2) {
    Sight<D> sight;
    if (!sight_new<D>(p, vel, &sight)) {
        return -1;
    }
    return sees<D>(&sight, d, d2) ? 1 : 0;
}

// One boid's slot of a whole step, as the kernel for its search (grid), rule (topo) and
// obstacles (OBS) runs it: boids_grid_kernel2/3, topo_grid_kernel2/3, boids_brute_kernel2/3,
// topo_brute_kernel2/3 and their _obs twins.
template <int D, bool OBS>
static bool boids_slot(const Params* p, const GridShape* g, int grid, bool topo, fu64 step,
                       const fu32* cell_start, const fu32* scell, const fu32* ids,
                       const float* spos, const float* svel, const fi64* svfix, const float* pos,
                       const float* vel, fu32 t, float* out_pos, float* out_vel, const Obs* obs) {
    if (grid) {
        return topo ? topo_grid_slot<D, OBS>(p, g, step, cell_start, scell, ids, spos, svel,
                                             svfix, t, out_pos, out_vel, obs)
                    : boids_grid_slot<D, OBS>(p, g, step, cell_start, scell, ids, spos, svel,
                                              svfix, t, out_pos, out_vel, obs);
    }
    return topo ? topo_brute_slot<D, OBS>(p, step, pos, vel, svfix, t, out_pos, out_vel, obs)
                : boids_brute_slot<D, OBS>(p, step, pos, vel, svfix, t, out_pos, out_vel, obs);
}

// One agent's slot of a whole step with species, as species_grid_kernel2/3 or
// species_brute_kernel2/3 (or their _obs twins, with obstacles) runs it.
template <int D>
static bool species_slot(const Params* p, const SpeciesTab* sp, const GridShape* g, int grid,
                         fu64 step, const fu32* cell_start, const fu32* scell, const fu32* ids,
                         const float* spos, const float* svel, const fi64* svfix,
                         const float* pos, const float* vel, fu32 t, float* out_pos,
                         float* out_vel, const Obs* obs) {
    if (obs->head.n > 0) {
        return grid ? species_grid_slot<D, true>(p, sp, g, step, cell_start, scell, ids, spos,
                                                 svel, svfix, t, out_pos, out_vel, obs)
                    : species_brute_slot<D, true>(p, sp, step, pos, vel, svfix, t, out_pos,
                                                  out_vel, obs);
    }
    return grid ? species_grid_slot<D, false>(p, sp, g, step, cell_start, scell, ids, spos, svel,
                                              svfix, t, out_pos, out_vel)
                : species_brute_slot<D, false>(p, sp, step, pos, vel, svfix, t, out_pos,
                                               out_vel);
}

extern "C" {

fi64 fm_to_fix(float x) { return to_fix(x); }
float fm_from_fix(fi64 s) { return from_fix(s); }
float fm_wrap_delta(float d, float size, float half, int wrap) {
    return wrap_delta(d, size, half, wrap != 0);
}
fu64 fm_mix64(fu64 z) { return mix64(z); }
fu32 fm_rand_u32(fu64 seed, fu64 step, fu64 agent, fu64 stream) {
    return rand_u32(seed, step, agent, stream);
}
float fm_rand_uniform(fu64 seed, fu64 step, fu64 agent, fu64 stream) {
    return rand_uniform(seed, step, agent, stream);
}
void fm_cos_sin(float x, float* c, float* s) { cos_sin(x, c, s); }
void fm_apply_boundary(float* p, float* v, float size, fu32 boundary) {
    apply_boundary(p, v, size, boundary);
}
void fm_unit2(float vx, float vy, float* out) { unit2(vx, vy, out); }
fu32 fm_params_size(void) { return (fu32)sizeof(Params); }
fu32 fm_topo_k_max(void) { return TOPO_K_MAX; }
fu32 fm_obs_shape_size(void) { return (fu32)sizeof(ObsShape); }
fu32 fm_obs_head_size(void) { return (fu32)sizeof(ObsHead); }
fu32 fm_species_row_size(void) { return (fu32)sizeof(SpeciesRow); }
fu32 fm_species_head_size(void) { return (fu32)sizeof(SpeciesHead); }
fu32 fm_grid_shape_size(void) { return (fu32)sizeof(GridShape); }

// Where each field of Params and GridShape lies (offsetof), by name; -1 for a name neither has.
#define FM_FIELD(S, f) \
    if (strcmp(name, #f) == 0) return (long)offsetof(S, f);
long fm_params_offset(const char* name) {
    FM_FIELD(Params, n) FM_FIELD(Params, dim) FM_FIELD(Params, model)
    FM_FIELD(Params, boundary) FM_FIELD(Params, world) FM_FIELD(Params, half_world)
    FM_FIELD(Params, dt) FM_FIELD(Params, r_sep2) FM_FIELD(Params, r_ali2)
    FM_FIELD(Params, r_coh2) FM_FIELD(Params, w_sep) FM_FIELD(Params, w_ali)
    FM_FIELD(Params, w_coh) FM_FIELD(Params, max_force) FM_FIELD(Params, v_min)
    FM_FIELD(Params, v_max) FM_FIELD(Params, v0) FM_FIELD(Params, noise)
    FM_FIELD(Params, seed) FM_FIELD(Params, noise_kind) FM_FIELD(Params, topo_k)
    FM_FIELD(Params, heading_noise) FM_FIELD(Params, fov_cos) FM_FIELD(Params, flight)
    FM_FIELD(Params, cruise) FM_FIELD(Params, inv_tau) FM_FIELD(Params, gravity)
    FM_FIELD(Params, lift_k) FM_FIELD(Params, tan_bank) FM_FIELD(Params, roost)
    FM_FIELD(Params, roost_radius) FM_FIELD(Params, w_roost_h) FM_FIELD(Params, w_roost_v)
    return -1;
}
long fm_obs_offset(const char* name) {
    FM_FIELD(ObsShape, round) FM_FIELD(ObsShape, a) FM_FIELD(ObsShape, e) FM_FIELD(ObsShape, e2)
    FM_FIELD(ObsShape, r) FM_FIELD(ObsShape, centre) FM_FIELD(ObsShape, near2)
    FM_FIELD(ObsShape, touch2) FM_FIELD(ObsShape, cross2)
    return -1;
}
long fm_obs_head_offset(const char* name) {
    FM_FIELD(ObsHead, n) FM_FIELD(ObsHead, w_avoid) FM_FIELD(ObsHead, look_ahead)
    FM_FIELD(ObsHead, clearance) FM_FIELD(ObsHead, inv_clearance)
    return -1;
}
long fm_species_offset(const char* name) {
    FM_FIELD(SpeciesRow, lo) FM_FIELD(SpeciesRow, hi) FM_FIELD(SpeciesRow, predator)
    FM_FIELD(SpeciesRow, present)
    FM_FIELD(SpeciesRow, hunter_base) FM_FIELD(SpeciesRow, rmax2) FM_FIELD(SpeciesRow, chase_r2)
    FM_FIELD(SpeciesRow, chase_w) FM_FIELD(SpeciesRow, flee_r2) FM_FIELD(SpeciesRow, flee_w)
    return -1;
}
long fm_species_head_offset(const char* name) {
    FM_FIELD(SpeciesHead, count) FM_FIELD(SpeciesHead, any_predator)
    FM_FIELD(SpeciesHead, n_hunters)
    return -1;
}
long fm_grid_shape_offset(const char* name) {
    FM_FIELD(GridShape, dims) FM_FIELD(GridShape, ncells) FM_FIELD(GridShape, inv_cell)
    FM_FIELD(GridShape, wrap)
    return -1;
}
#undef FM_FIELD

// boids_pair over a list of candidates (seen or not by the sight of an agent moving with vel),
// boids_remove_self of candidate 0 when self0, then boids_integrate of step `step` for agent
// `agent` (D = 2 or 3); d is [m][D] offsets, d2 [m], vfix [m][D]. Returns the sums (after
// remove_self) through acc_out: sep, ali, coh (D each), then n_ali, n_coh.
void fm_boids_pairs_integrate(const Params* p, int dim, fu32 m, const float* d, const float* d2,
                              const fi64* vfix, int self0, fu64 step, fu64 agent, float* pos,
                              float* vel, fi64* acc_out) {
    if (dim == 2) {
        pairs_integrate<2>(p, m, d, d2, vfix, self0, step, agent, pos, vel, acc_out);
    } else {
        pairs_integrate<3>(p, m, d, d2, vfix, self0, step, agent, pos, vel, acc_out);
    }
}

// Whether an agent moving with vel sees the candidate at offset d (squared length d2): 1 or 0;
// -1 when it has no sight (sight_new: all around, or no heading).
int fm_sees(const Params* p, int dim, const float* vel, const float* d, float d2) {
    return dim == 2 ? sees_d<2>(p, vel, d, d2) : sees_d<3>(p, vel, d, d2);
}

// heading_noise of step `step` for agent `agent` on vel (D = dim).
void fm_heading_noise(const Params* p, int dim, fu64 step, fu64 agent, float* vel) {
    if (dim == 2) {
        heading_noise<2>(p, step, agent, vel);
    } else {
        heading_noise<3>(p, step, agent, vel);
    }
}

void fm_vicsek_integrate(const Params* p, const fi64* sum, fu32 count, const float* own_unit,
                         fu64 step, fu64 agent, float* pos, float* vel) {
    vicsek_integrate(p, sum, count, own_unit, step, agent, pos, vel);
}
void fm_heading(float m0, float m1, const float* own_unit, float* out) {
    heading(m0, m1, own_unit, out);
}

// The recording's frame of a state in slot order, as frame_kernel writes it: frame_slot over
// every slot.
void fm_frame(fu32 n, fu32 dim, const float* pos, const float* vel, const fu32* ids,
              float* frame) {
    for (fu32 s = 0; s < n; s++) {
        frame_slot(n, dim, pos, vel, ids, frame, s);
    }
}

// One whole step of n agents, as the GPU does it: the per-slot bodies are the very functions
// step.cu's kernels call (gather_slot, brute_prep_slot, boids_grid_slot, ...); only the cell
// ranks and the scan are done here instead of by atomics and scan kernels. State in slot order
// (pos, vel component-major, ids[s] = agent in slot s); the new state goes to out_* (slot order,
// ids in out_ids). grid == 0: brute force (slots keep their agents: ids must be the identity,
// as on the GPU). grid != 0: counting sort into the cells of `g`, with the agents inside a cell
// in REVERSE of their current slot order (the GPU's atomics give an arbitrary order: the result
// must not depend on it). oh, shapes: the obstacles (oh NULL: none); sh, sp_*: the species
// (sh NULL: none). Returns the first agent whose new state is not finite, or -1.
long long fm_step(const Params* p, const GridShape* g, int grid, fu64 step, const float* pos,
                  const float* vel, const fu32* ids, float* out_pos, float* out_vel,
                  fu32* out_ids, const ObsHead* oh, const ObsShape* shapes,
                  const SpeciesHead* sh, const Params* sp_params, const SpeciesRow* sp_rows,
                  const unsigned char* sp_mask, const unsigned char* sp_of) {
    Obs obs = {{0, 0.0f, 0.0f, 0.0f, 0.0f}, shapes};
    if (oh) {
        obs.head = *oh;
    }
    SpeciesTab sp = {0, 0, 0, sp_params, sp_rows, sp_mask, sp_of, NULL};
    if (sh) {
        sp.count = sh->count;
        sp.any_predator = sh->any_predator;
        sp.n_hunters = sh->n_hunters;
    }
    Hunter* hunters = (Hunter*)calloc((size_t)sp.n_hunters + 1, sizeof(Hunter));
    sp.hunters = hunters;
    fu32 n = p->n;
    fu32 dim = p->dim;
    bool vicsek = p->model == 1;
    long long bad = -1;
    // Grid: the sorted state (spos, svel, svfix, scell). Brute force: svel holds the unit
    // velocities (Vicsek) and svfix the fixed-point velocities (`units`, `bvfix` on the GPU).
    float* spos = (float*)malloc(sizeof(float) * dim * (size_t)n + 4);
    float* svel = (float*)malloc(sizeof(float) * dim * (size_t)n + 4);
    fi64* svfix = (fi64*)malloc(sizeof(fi64) * dim * (size_t)n + 8);
    fu32* scell = (fu32*)malloc(sizeof(fu32) * (size_t)n + 4);
    fu32* cell_start = NULL;
    if (grid) {
        fu32* cell_of = (fu32*)malloc(sizeof(fu32) * (size_t)n + 4);
        fu32* rank = (fu32*)malloc(sizeof(fu32) * (size_t)n + 4);
        fu32* counts = (fu32*)calloc((size_t)g->ncells + 1, sizeof(fu32));
        cell_start = (fu32*)calloc((size_t)g->ncells + 1, sizeof(fu32));
        // cell_index_kernel, with ranks handed out from the last slot down.
        for (fu32 s = 0; s < n; s++) {
            cell_of[s] = cell_index(g, pos, n, s, (int)dim);
        }
        for (fu32 s = n; s-- > 0;) {
            rank[s] = counts[cell_of[s]]++;
        }
        // scan kernels: exclusive prefix; cell_start[ncells] = n.
        fu32 run = 0;
        for (fu32 c = 0; c < g->ncells; c++) {
            cell_start[c] = run;
            run += counts[c];
        }
        cell_start[g->ncells] = n;
        // build_grid_kernel
        for (fu32 s = 0; s < n; s++) {
            gather_slot(n, dim, vicsek, cell_of, rank, cell_start, pos, vel, ids, spos, svel,
                        svfix, out_ids, scell, s);
        }
        free(cell_of);
        free(rank);
        free(counts);
    } else {
        // build_brute_kernel: slots stay.
        for (fu32 s = 0; s < n; s++) {
            out_ids[s] = ids[s];
            brute_prep_slot(n, dim, vicsek, vel, svel, svfix, s);
        }
    }
    // hunters_kernel, over the slots the step reads.
    if (sp.count > 0) {
        for (fu32 s = 0; s < n; s++) {
            hunters_slot(&sp, n, dim, grid ? spos : pos, grid ? out_ids : NULL, s, hunters);
        }
    }
    // boids_grid_kernel2/3, vicsek_grid_kernel, topo_grid_kernel2/3, species_grid_kernel2/3;
    // boids_brute_kernel2/3, vicsek_brute_kernel, topo_brute_kernel2/3, species_brute_kernel2/3
    for (fu32 t = 0; t < n; t++) {
        bool ok;
        bool topo = !vicsek && p->topo_k > 0;
        if (vicsek) {
            ok = grid ? vicsek_grid_slot(p, g, step, cell_start, scell, out_ids, spos, svel, svfix,
                                         t, out_pos, out_vel)
                      : vicsek_brute_slot(p, step, pos, svel, svfix, t, out_pos, out_vel);
        } else if (sp.count > 0) {
            ok = dim == 2 ? species_slot<2>(p, &sp, g, grid, step, cell_start, scell, out_ids, spos,
                                            svel, svfix, pos, vel, t, out_pos, out_vel, &obs)
                          : species_slot<3>(p, &sp, g, grid, step, cell_start, scell, out_ids, spos,
                                            svel, svfix, pos, vel, t, out_pos, out_vel, &obs);
        } else if (obs.head.n > 0) {
            ok = dim == 2 ? boids_slot<2, true>(p, g, grid, topo, step, cell_start, scell, out_ids,
                                                spos, svel, svfix, pos, vel, t, out_pos, out_vel,
                                                &obs)
                          : boids_slot<3, true>(p, g, grid, topo, step, cell_start, scell, out_ids,
                                                spos, svel, svfix, pos, vel, t, out_pos, out_vel,
                                                &obs);
        } else {
            ok = dim == 2 ? boids_slot<2, false>(p, g, grid, topo, step, cell_start, scell,
                                                 out_ids, spos, svel, svfix, pos, vel, t, out_pos,
                                                 out_vel, &obs)
                          : boids_slot<3, false>(p, g, grid, topo, step, cell_start, scell,
                                                 out_ids, spos, svel, svfix, pos, vel, t, out_pos,
                                                 out_vel, &obs);
        }
        if (!ok && bad < 0) {
            bad = out_ids[t];
        }
    }
    free(spos);
    free(svel);
    free(svfix);
    free(scell);
    free(cell_start);
    free(hunters);
    return bad;
}

}  // extern "C"
