// Host build of kernels/forge_math.h for tests/kernels_host.rs: thin extern "C" wrappers around
// the __host__ __device__ arithmetic, and a whole step over all agents that mirrors the CUDA
// kernels of kernels/step.cu (cell index, counting sort, reorder, per-agent step) on the CPU.
// Compiled with -ffp-contract=off -fno-fast-math, so it computes what the GPU computes under
// NVRTC --fmad=false.
#include <stdlib.h>
#include <string.h>
#include "../forge_math.h"

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
fu32 fm_grid_shape_size(void) { return (fu32)sizeof(GridShape); }

// boids_pair over a list of candidates, boids_remove_self of candidate 0 when self0, then
// boids_integrate (D = 2 or 3); d is [m][D] offsets, d2 [m], vfix [m][D]. Returns the sums
// (after remove_self) through acc_out: sep, ali, coh (D each), then n_ali, n_coh.
void fm_boids_pairs_integrate(const Params* p, int dim, fu32 m, const float* d, const float* d2,
                              const fi64* vfix, int self0, float* pos, float* vel,
                              fi64* acc_out) {
    if (dim == 2) {
        BoidsAcc<2> acc;
        boids_acc_new<2>(&acc);
        for (fu32 i = 0; i < m; i++) {
            boids_pair<2>(&acc, p, d + 2 * i, d2[i], vfix + 2 * i);
        }
        if (self0) {
            boids_remove_self<2>(&acc, p, vfix);
        }
        for (int k = 0; k < 2; k++) {
            acc_out[k] = acc.sep[k];
            acc_out[2 + k] = acc.ali[k];
            acc_out[4 + k] = acc.coh[k];
        }
        acc_out[6] = acc.n_ali;
        acc_out[7] = acc.n_coh;
        boids_integrate<2>(p, &acc, pos, vel);
    } else {
        BoidsAcc<3> acc;
        boids_acc_new<3>(&acc);
        for (fu32 i = 0; i < m; i++) {
            boids_pair<3>(&acc, p, d + 3 * i, d2[i], vfix + 3 * i);
        }
        if (self0) {
            boids_remove_self<3>(&acc, p, vfix);
        }
        for (int k = 0; k < 3; k++) {
            acc_out[k] = acc.sep[k];
            acc_out[3 + k] = acc.ali[k];
            acc_out[6 + k] = acc.coh[k];
        }
        acc_out[9] = acc.n_ali;
        acc_out[10] = acc.n_coh;
        boids_integrate<3>(p, &acc, pos, vel);
    }
}

void fm_vicsek_integrate(const Params* p, const fi64* sum, const float* own_unit, fu64 step,
                         fu64 agent, float* pos, float* vel) {
    vicsek_integrate(p, sum, own_unit, step, agent, pos, vel);
}

// One whole step of n agents, as the GPU does it. State in slot order (pos, vel
// component-major, ids[s] = agent in slot s); the new state goes to out_* (slot order, ids in
// out_ids). grid == 0: brute force (slots keep their agents). grid != 0: counting sort into the
// cells of `g`, with the agents inside a cell in REVERSE of their current slot order (the GPU's
// atomics give an arbitrary order: the result must not depend on it). Returns the first agent
// whose new state is not finite, or -1.
long long fm_step(const Params* p, const GridShape* g, int grid, fu64 step, const float* pos,
                  const float* vel, const fu32* ids, float* out_pos, float* out_vel,
                  fu32* out_ids) {
    fu32 n = p->n;
    int dim = (int)p->dim;
    bool vicsek = p->model == 1;
    float rmax2 = fmaxf(fmaxf(p->r_sep2, p->r_ali2), p->r_coh2);
    long long bad = -1;
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
            cell_of[s] = cell_index(g, pos, n, s, dim);
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
            fu32 c = cell_of[s];
            fu32 t = cell_start[c] + rank[s];
            out_ids[t] = ids[s];
            scell[t] = c;
            if (vicsek) {
                float u[2];
                unit2(vel[s], vel[n + s], u);
                spos[t] = pos[s];
                spos[n + t] = pos[n + s];
                svel[t] = u[0];
                svel[n + t] = u[1];
                svfix[t] = to_fix(u[0]);
                svfix[n + t] = to_fix(u[1]);
            } else {
                for (int k = 0; k < dim; k++) {
                    float v = vel[(size_t)k * n + s];
                    spos[(size_t)k * n + t] = pos[(size_t)k * n + s];
                    svel[(size_t)k * n + t] = v;
                    svfix[(size_t)k * n + t] = to_fix(v);
                }
            }
        }
        free(cell_of);
        free(rank);
        free(counts);
    } else {
        // build_brute_kernel: slots stay.
        for (fu32 s = 0; s < n; s++) {
            out_ids[s] = ids[s];
            if (vicsek) {
                float u[2];
                unit2(vel[s], vel[n + s], u);
                spos[s] = pos[s];
                spos[n + s] = pos[n + s];
                svel[s] = u[0];
                svel[n + s] = u[1];
                svfix[s] = to_fix(u[0]);
                svfix[n + s] = to_fix(u[1]);
            } else {
                for (int k = 0; k < dim; k++) {
                    spos[(size_t)k * n + s] = pos[(size_t)k * n + s];
                    svel[(size_t)k * n + s] = vel[(size_t)k * n + s];
                    svfix[(size_t)k * n + s] = to_fix(vel[(size_t)k * n + s]);
                }
            }
        }
    }
    Src src = {spos, svel, svfix, n};
    for (fu32 t = 0; t < n; t++) {
        fu32 ranges[27][2];
        int nr;
        bool seam = p->boundary == 0;
        if (grid) {
            nr = neighbour_ranges(g, cell_start, scell[t], g->wrap != 0, dim, ranges, &seam);
        } else {
            ranges[0][0] = 0;
            ranges[0][1] = n;
            nr = 1;
        }
        float pi[3], vi[3];
        if (vicsek) {
            vicsek_agent(p, step, out_ids[t], &src, t, ranges, nr, pi, vi);
        } else if (dim == 2) {
            boids_agent<2>(p, rmax2, seam, &src, t, ranges, nr, pi, vi);
        } else {
            boids_agent<3>(p, rmax2, seam, &src, t, ranges, nr, pi, vi);
        }
        for (int k = 0; k < dim; k++) {
            if (!(finite_f32(pi[k]) && finite_f32(vi[k])) && bad < 0) {
                bad = out_ids[t];
            }
            out_pos[(size_t)k * n + t] = pi[k];
            out_vel[(size_t)k * n + t] = vi[k];
        }
    }
    free(spos);
    free(svel);
    free(svfix);
    free(scell);
    free(cell_start);
    return bad;
}

}  // extern "C"
