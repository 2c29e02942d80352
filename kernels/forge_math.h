// forge's per-agent arithmetic, shared by the CUDA kernels (kernels/step.cu, compiled by NVRTC)
// and by a host build (kernels/host/shim.cpp, compiled by g++ in tests/kernels_host.rs, which
// checks it byte for byte against src/sim/math.rs and src/sim/cpu.rs).
//
// It mirrors src/sim/math.rs, src/sim/grid.rs and src/sim/cpu.rs function by function, with the
// same names. The determinism contract (DESIGN.md): float32 state; only IEEE-exact operations
// (+ - * / sqrt) in the same order as the Rust code; no FMA contraction (NVRTC --fmad=false,
// g++ -ffp-contract=off); no fast math; every float literal is a float (`f` suffix), never a
// double; neighbour sums in 64-bit fixed point; randomness counter-based.
#ifndef FORGE_MATH_H
#define FORGE_MATH_H

#ifdef __CUDACC__
#define FORGE_HD __host__ __device__ __forceinline__
#else
// Host build (the thin shim): no CUDA qualifiers, libm for sqrtf/floorf.
#include <math.h>
#define FORGE_HD static inline
#endif

typedef long long fi64;
typedef unsigned long long fu64;
typedef unsigned int fu32;

// Parameters of one run: identical in layout to `Params` in src/sim/mod.rs (#[repr(C)]).
struct Params {
    fu32 n;
    fu32 dim;
    fu32 model;
    fu32 boundary;
    float world[3];
    float half_world[3];
    float dt;
    float r_sep2;
    float r_ali2;
    float r_coh2;
    float w_sep;
    float w_ali;
    float w_coh;
    float max_force;
    float v_min;
    float v_max;
    float v0;
    float noise;
    fu64 seed;
    fu32 noise_kind;  // Vicsek: 0 angular, 1 vectorial
    fu32 topo_k;      // boids: k nearest (src/sim/topo.rs); 0 = metric. The kernels are metric
                      // only: the CUDA backend refuses topo_k > 0.
    float heading_noise;  // boids: width eta*sqrt(dt) of the heading-noise angle; 0 = none
    float fov_cos;        // boids: cos(fov/2); <= -1 = all around (no blind angle)
};
static_assert(sizeof(struct Params) == 112, "Params must match src/sim/mod.rs");

// The neighbour grid's shape (src/sim/grid.rs `Grid`; computed on the host by Grid::new).
// Identical in layout to `GridShape` in src/sim/cuda.rs.
struct GridShape {
    fu32 dims[3];
    fu32 ncells;
    float inv_cell[3];
    fu32 wrap;
};
static_assert(sizeof(struct GridShape) == 32, "GridShape must match src/sim/cuda.rs");

#define FIX_SCALE 4294967296.0f
#define FIX_INV (1.0f / 4294967296.0f)
#define FIX_CLAMP 1073741824.0f

// f32 -> 64-bit fixed point: clamp to +-2^30 (NaN -> -2^30), scale by 2^32, truncate.
FORGE_HD fi64 to_fix(float x) {
    float c = x >= -FIX_CLAMP ? x : -FIX_CLAMP;
    c = c <= FIX_CLAMP ? c : FIX_CLAMP;
    return (fi64)(c * FIX_SCALE);
}

// 64-bit fixed point -> f32 (round to nearest, then an exact power-of-two scale).
FORGE_HD float from_fix(fi64 s) {
    return (float)s * FIX_INV;
}

// Shortest signed offset b - a along one axis (minimum image when the world wraps).
FORGE_HD float wrap_delta(float d, float size, float half, bool wrap) {
    if (wrap) {
        if (d > half) {
            return d - size;
        }
        if (d < -half) {
            return d + size;
        }
    }
    return d;
}

// SplitMix64's finaliser.
FORGE_HD fu64 mix64(fu64 z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// Counter-based random bits keyed by (seed, step, agent, stream).
FORGE_HD fu32 rand_u32(fu64 seed, fu64 step, fu64 agent, fu64 stream) {
    fu64 k = mix64(seed ^ 0x9e3779b97f4a7c15ULL);
    k = mix64(k ^ (step * 0xd1b54a32d192ed03ULL));
    k = mix64(k ^ (agent * 0xaf251af3b0f025b5ULL) ^ stream);
    return (fu32)(k >> 32);
}

// Uniform in [0, 1) with 24 random bits.
FORGE_HD float rand_uniform(fu64 seed, fu64 step, fu64 agent, fu64 stream) {
    return (float)(rand_u32(seed, step, agent, stream) >> 8) * (1.0f / 16777216.0f);
}

// (cos x, sin x) for x in [-pi, pi]: Taylor series on x/4, then two double-angle steps.
FORGE_HD void cos_sin(float x, float* co, float* si) {
    float h = x * 0.25f;
    float h2 = h * h;
    float s = h * (1.0f - h2 * (1.0f / 6.0f)
                             * (1.0f - h2 * (1.0f / 20.0f)
                                           * (1.0f - h2 * (1.0f / 42.0f) * (1.0f - h2 * (1.0f / 72.0f)))));
    float c = 1.0f - h2 * 0.5f
                         * (1.0f - h2 * (1.0f / 12.0f)
                                       * (1.0f - h2 * (1.0f / 30.0f)
                                                     * (1.0f - h2 * (1.0f / 56.0f) * (1.0f - h2 * (1.0f / 90.0f)))));
    float c1 = c * c - s * s;
    float s1 = 2.0f * s * c;
    *co = c1 * c1 - s1 * s1;
    *si = 2.0f * s1 * c1;
}

// 2pi as a float (TWO_PI in math.rs).
#define TWO_PI 6.2831855f

// Keep a coordinate in the world: wrap into [0, size) (0), reflect (1), or open (2).
FORGE_HD void apply_boundary(float* p, float* v, float size, fu32 boundary) {
    if (boundary == 0) {
        if (*p < 0.0f || *p >= size) {
            float q = *p - size * floorf(*p / size);
            if (q >= size || q < 0.0f) {
                q = 0.0f;
            }
            *p = q;
        }
    } else if (boundary == 1) {
        if (*p < 0.0f) {
            *p = -*p;
            *v = -*v;
        } else if (*p > size) {
            *p = size - (*p - size);
            *v = -*v;
        }
        if (*p < 0.0f) {
            *p = 0.0f;
        } else if (*p > size) {
            *p = size;
        }
    }
}

// Running neighbour sums of one boid, in fixed point (BoidsAcc<D> in math.rs).
template <int D>
struct BoidsAcc {
    fi64 sep[D];
    fi64 ali[D];
    fi64 coh[D];
    fu32 n_ali;
    fu32 n_coh;
};

template <int D>
FORGE_HD void boids_acc_new(BoidsAcc<D>* a) {
    for (int k = 0; k < D; k++) {
        a->sep[k] = 0;
        a->ali[k] = 0;
        a->coh[k] = 0;
    }
    a->n_ali = 0;
    a->n_coh = 0;
}

// One neighbour candidate at offset d = p_j - p_i, squared distance d2, velocity in fixed point;
// seen: whether it is in the field of view (sees; true without one), which alignment and
// cohesion need and separation does not. The agent itself may be among the candidates (d2 = 0,
// always seen): boids_remove_self takes it out.
// Sums wrap on overflow like Rust's wrapping_add (done in unsigned arithmetic: no UB in C++).
template <int D>
FORGE_HD void boids_pair(BoidsAcc<D>* acc, const Params* p, const float* d, float d2,
                         const fi64* vfix_j, bool seen) {
    if ((d2 < p->r_sep2) & (d2 > 0.0f)) {
        for (int k = 0; k < D; k++) {
            acc->sep[k] = (fi64)((fu64)acc->sep[k] + (fu64)to_fix(-d[k] / d2));
        }
    }
    bool m_ali = (d2 < p->r_ali2) & seen;
    bool m_coh = (d2 < p->r_coh2) & seen;
    for (int k = 0; k < D; k++) {
        acc->ali[k] = (fi64)((fu64)acc->ali[k] + (fu64)(vfix_j[k] & -(fi64)m_ali));
        acc->coh[k] = (fi64)((fu64)acc->coh[k] + (fu64)(to_fix(d[k]) & -(fi64)m_coh));
    }
    acc->n_ali += (fu32)m_ali;
    acc->n_coh += (fu32)m_coh;
}

// Undo what the agent itself added as a candidate (d = 0, d2 = 0): exact in fixed point
// (BoidsAcc::remove_self).
template <int D>
FORGE_HD void boids_remove_self(BoidsAcc<D>* acc, const Params* p, const fi64* vfix_self) {
    if (0.0f < p->r_ali2) {
        for (int k = 0; k < D; k++) {
            acc->ali[k] = (fi64)((fu64)acc->ali[k] - (fu64)vfix_self[k]);
        }
        acc->n_ali -= 1;
    }
    if (0.0f < p->r_coh2) {
        acc->n_coh -= 1;
    }
}

// Squared length, summed x, y, z in that order.
template <int D>
FORGE_HD float norm2(const float* v) {
    float s = v[0] * v[0];
    for (int k = 1; k < D; k++) {
        s = s + v[k] * v[k];
    }
    return s;
}

// Random streams of a boid's heading-noise angle and (3D) of the direction it turns towards.
#define STREAM_HEADING 1ULL
#define STREAM_AXIS 2ULL

// 2D heading noise: v rotated by the angle of cosine c and sine s (turn2 in math.rs).
FORGE_HD void turn2(float c, float s, float* v) {
    float x = v[0], y = v[1];
    v[0] = c * x - s * y;
    v[1] = s * x + c * y;
}

// 3D heading noise: v turned by the angle of cosine c and sine s towards t = cos(phi) e1 +
// sin(phi) e2, (e1, e2) an orthonormal basis of the plane normal to v (Duff et al. 2017),
// phi = (u' - 1/2) 2pi from stream STREAM_AXIS: v <- c v + s |v| t. Zero stays zero (turn3).
FORGE_HD void turn3(const Params* p, fu64 step, fu64 agent, float c, float s, float* v) {
    float s2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
    // Zero (or NaN): no heading to turn.
    if (s2 != s2 || s2 <= 0.0f) {
        return;
    }
    float speed = sqrtf(s2);
    float n[3] = {v[0] / speed, v[1] / speed, v[2] / speed};
    float sign = n[2] >= 0.0f ? 1.0f : -1.0f;
    float a = -1.0f / (sign + n[2]);
    float b = n[0] * n[1] * a;
    float e1[3] = {1.0f + sign * n[0] * n[0] * a, sign * b, -sign * n[0]};
    float e2[3] = {b, sign + n[1] * n[1] * a, -n[1]};
    float phi = (rand_uniform(p->seed, step, agent, STREAM_AXIS) - 0.5f) * TWO_PI;
    float cp, sp;
    cos_sin(phi, &cp, &sp);
    float ss = s * speed;
    for (int k = 0; k < 3; k++) {
        float t = cp * e1[k] + sp * e2[k];
        v[k] = c * v[k] + ss * t;
    }
}

// Heading noise: vel turned by theta = (u - 1/2) heading_noise, u from stream STREAM_HEADING of
// (seed, step, agent); 2D a rotation, 3D about an axis perpendicular to vel (heading_noise in
// math.rs).
template <int D>
FORGE_HD void heading_noise(const Params* p, fu64 step, fu64 agent, float* vel) {
    float u = rand_uniform(p->seed, step, agent, STREAM_HEADING) - 0.5f;
    float c, s;
    cos_sin(u * p->heading_noise, &c, &s);
    if constexpr (D == 2) {
        turn2(c, s, vel);
    } else {
        turn3(p, step, agent, c, s, vel);
    }
}

// What one boid sees (Sight<D> in math.rs): its heading u (unit velocity), c2 = cos^2(fov/2),
// and whether the field is wider than 180 degrees.
template <int D>
struct Sight {
    float u[D];
    float c2;
    bool wide;
};

// The sight of a boid moving with vel; false when it sees all around (no blind angle, or no
// heading: a velocity of zero), and *out is not set (Sight::new).
template <int D>
FORGE_HD bool sight_new(const Params* p, const float* vel, Sight<D>* out) {
    if (p->fov_cos <= -1.0f) {
        return false;
    }
    float s2 = norm2<D>(vel);
    if (s2 != s2 || s2 <= 0.0f) {
        return false;
    }
    float s = sqrtf(s2);
    for (int k = 0; k < D; k++) {
        out->u[k] = vel[k] / s;
    }
    out->c2 = p->fov_cos * p->fov_cos;
    out->wide = p->fov_cos < 0.0f;
    return true;
}

// Whether the candidate at offset d (squared length d2) is in the field of view: with
// dot = d.u (x, y, z in that order), dd = dot dot and q = c2 d2, seen when dot >= 0 and dd >= q
// (fov <= 180 degrees), or when dot >= 0 or dd <= q (wider) (Sight::sees).
template <int D>
FORGE_HD bool sees(const Sight<D>* s, const float* d, float d2) {
    float dot = d[0] * s->u[0];
    for (int k = 1; k < D; k++) {
        dot = dot + d[k] * s->u[k];
    }
    float dd = dot * dot;
    float q = s->c2 * d2;
    if (s->wide) {
        return (dot >= 0.0f) | (dd <= q);
    }
    return (dot >= 0.0f) & (dd >= q);
}

// Steering from the sums, clamped to max_force; semi-implicit Euler; heading noise (keyed by step
// and the agent's id); speed band; boundary.
template <int D>
FORGE_HD void boids_integrate(const Params* p, const BoidsAcc<D>* acc, fu64 step, fu64 agent,
                              float* pos, float* vel) {
    float a[D];
    for (int k = 0; k < D; k++) {
        a[k] = p->w_sep * from_fix(acc->sep[k]);
    }
    if (acc->n_ali > 0) {
        float n = (float)acc->n_ali;
        for (int k = 0; k < D; k++) {
            a[k] = a[k] + p->w_ali * (from_fix(acc->ali[k]) / n - vel[k]);
        }
    }
    if (acc->n_coh > 0) {
        float n = (float)acc->n_coh;
        for (int k = 0; k < D; k++) {
            a[k] = a[k] + p->w_coh * (from_fix(acc->coh[k]) / n);
        }
    }
    float a2 = norm2<D>(a);
    if (a2 > p->max_force * p->max_force) {
        float f = p->max_force / sqrtf(a2);
        for (int k = 0; k < D; k++) {
            a[k] = a[k] * f;
        }
    }
    for (int k = 0; k < D; k++) {
        vel[k] = vel[k] + a[k] * p->dt;
    }
    if (p->heading_noise > 0.0f) {
        heading_noise<D>(p, step, agent, vel);
    }
    float s2 = norm2<D>(vel);
    if (s2 > p->v_max * p->v_max) {
        float f = p->v_max / sqrtf(s2);
        for (int k = 0; k < D; k++) {
            vel[k] = vel[k] * f;
        }
    } else if (s2 < p->v_min * p->v_min && s2 > 0.0f) {
        float f = p->v_min / sqrtf(s2);
        for (int k = 0; k < D; k++) {
            vel[k] = vel[k] * f;
        }
    }
    for (int k = 0; k < D; k++) {
        pos[k] = pos[k] + vel[k] * p->dt;
        apply_boundary(&pos[k], &vel[k], p->world[k], p->boundary);
    }
}

// A velocity's direction (zero stays zero).
FORGE_HD void unit2(float vx, float vy, float* out) {
    float s2 = vx * vx + vy * vy;
    if (s2 > 0.0f) {
        float s = sqrtf(s2);
        out[0] = vx / s;
        out[1] = vy / s;
    } else {
        out[0] = 0.0f;
        out[1] = 0.0f;
    }
}

#define NOISE_ANGULAR 0u
#define NOISE_VECTORIAL 1u

// The direction of m; where m is zero, the agent's own heading (or +x if it has none).
FORGE_HD void heading(float m0, float m1, const float* own_unit, float* out) {
    float m2 = m0 * m0 + m1 * m1;
    if (m2 > 0.0f) {
        float s = sqrtf(m2);
        out[0] = m0 / s;
        out[1] = m1 / s;
    } else if (own_unit[0] != 0.0f || own_unit[1] != 0.0f) {
        out[0] = own_unit[0];
        out[1] = own_unit[1];
    } else {
        out[0] = 1.0f;
        out[1] = 0.0f;
    }
}

// Vicsek: the new heading from the summed unit velocities of the `count` neighbours (itself
// included) and the noise (angular: the sum's heading rotated by (u - 1/2) eta; vectorial: the
// heading of sum + eta count (cos xi, sin xi), xi = (u - 1/2) 2pi); constant speed v0.
FORGE_HD void vicsek_integrate(const Params* p, const fi64* sum, fu32 count, const float* own_unit,
                               fu64 step, fu64 agent, float* pos, float* vel) {
    float m0 = from_fix(sum[0]);
    float m1 = from_fix(sum[1]);
    float u = rand_uniform(p->seed, step, agent, 0) - 0.5f;
    float nd[2];
    if (p->noise_kind == NOISE_VECTORIAL) {
        float c, s;
        cos_sin(u * TWO_PI, &c, &s);
        float a = p->noise * (float)count;
        heading(m0 + a * c, m1 + a * s, own_unit, nd);
    } else {
        float dir[2];
        heading(m0, m1, own_unit, dir);
        float c, s;
        cos_sin(u * p->noise, &c, &s);
        nd[0] = c * dir[0] - s * dir[1];
        nd[1] = s * dir[0] + c * dir[1];
    }
    for (int k = 0; k < 2; k++) {
        vel[k] = p->v0 * nd[k];
        pos[k] = pos[k] + vel[k] * p->dt;
        apply_boundary(&pos[k], &vel[k], p->world[k], p->boundary);
    }
}

// ---- Neighbour grid (src/sim/grid.rs) ----

// Cell coordinate along axis k: truncation of x * inv_cell, clamped to the grid (NaN -> 0),
// exactly Rust's `(x * inv) as i64` then `clamp(0, dims - 1)`.
FORGE_HD fu32 cell_coord(const GridShape* g, float x, int k) {
    float v = x * g->inv_cell[k];
    if (!(v >= 1.0f)) {
        return 0;
    }
    if (v >= (float)g->dims[k]) {
        return g->dims[k] - 1;
    }
    return (fu32)v;
}

// Cell of agent i of a component-major array of n agents.
FORGE_HD fu32 cell_index(const GridShape* g, const float* pos, fu32 n, fu32 i, int dim) {
    fu32 c = 0;
    for (int k = dim - 1; k >= 0; k--) {
        c = c * g->dims[k] + cell_coord(g, pos[(fu64)k * n + i], k);
    }
    return c;
}

// Most slot ranges neighbour_ranges gives in dim dimensions: a run of at most 3 cells along x
// for each of the 3 rows in y (and 3 layers in z).
#define MAX_RANGES(dim) ((dim) == 2 ? 9 : 27)

// The distinct cells next to (and including) cell c, as slot ranges [lo, hi); returns how many
// (at most MAX_RANGES(dim)),
// and in *seam whether offsets to them may cross the wrap seam (if not, minimum-image
// correction would change nothing and is skipped).
FORGE_HD int neighbour_ranges(const GridShape* g, const fu32* cell_start, fu32 c, bool wrap,
                              int dim, fu32 (*out)[2], bool* seam) {
    fu32 dx = g->dims[0], dy = g->dims[1];
    if (dim == 2) {
        fu32 x = c % dx, y = c / dx;
        if (x >= 1 && x + 1 < dx && y >= 1 && y + 1 < dy) {
            int len = 0;
            fu32 rows[3] = {c - dx, c, c + dx};
            for (int r = 0; r < 3; r++) {
                fu32 lo = cell_start[rows[r] - 1], hi = cell_start[rows[r] + 2];
                if (lo < hi) {
                    out[len][0] = lo;
                    out[len][1] = hi;
                    len++;
                }
            }
            *seam = wrap && (dx < 5 || dy < 5);
            return len;
        }
    }
    fi64 cc[3];
    {
        fu32 r = c;
        for (int k = 0; k < 3; k++) {
            cc[k] = r % g->dims[k];
            r /= g->dims[k];
        }
    }
    fi64 offs[3][3] = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
    int counts[3] = {1, 1, 1};
    for (int k = 0; k < 3; k++) {
        fi64 d = g->dims[k];
        fi64 x = cc[k];
        int m = 0;
        if (k >= dim || d == 1) {
            offs[k][0] = x;
            m = 1;
        } else if (wrap) {
            fi64 lo = d == 2 ? 0 : -1;
            for (fi64 o = lo; o <= 1; o++) {
                fi64 y = (x + o) % d;
                offs[k][m] = y < 0 ? y + d : y;
                m++;
            }
        } else {
            for (fi64 o = -1; o <= 1; o++) {
                fi64 y = x + o;
                if (y >= 0 && y < d) {
                    offs[k][m] = y;
                    m++;
                }
            }
        }
        counts[k] = m;
    }
    // Sort the x offsets (at most 3) so runs of consecutive cells merge into one range.
    fi64 xs[3] = {offs[0][0], offs[0][1], offs[0][2]};
    for (int a = 1; a < counts[0]; a++) {
        for (int b = a; b > 0 && xs[b - 1] > xs[b]; b--) {
            fi64 t = xs[b];
            xs[b] = xs[b - 1];
            xs[b - 1] = t;
        }
    }
    int len = 0;
    for (int iz = 0; iz < counts[2]; iz++) {
        for (int iy = 0; iy < counts[1]; iy++) {
            fu64 row = ((fu64)offs[2][iz] * g->dims[1] + (fu64)offs[1][iy]) * g->dims[0];
            int a = 0;
            while (a < counts[0]) {
                int b = a;
                while (b + 1 < counts[0] && xs[b + 1] == xs[b] + 1) {
                    b++;
                }
                fu32 lo = cell_start[row + (fu64)xs[a]];
                fu32 hi = cell_start[row + (fu64)xs[b] + 1];
                if (lo < hi) {
                    out[len][0] = lo;
                    out[len][1] = hi;
                    len++;
                }
                a = b + 1;
            }
        }
    }
    *seam = wrap;
    return len;
}

// ---- The per-agent step (src/sim/cpu.rs) ----

// What a step reads of the other agents, component-major with stride m: positions, velocities
// (Vicsek: unit velocities) and those in fixed point.
struct Src {
    const float* pos;
    const float* vel;
    const fi64* vfix;
    fu32 m;
};

// One boid's step (number step); me is its own slot in src, agent its id; wrap: whether to apply
// the minimum image. Alignment and cohesion over the candidates in its field of view. Writes its
// new position and velocity.
template <int D>
FORGE_HD void boids_agent(const Params* p, float rmax2, bool wrap, const Src* src, fu32 me,
                          const fu32 (*ranges)[2], int nr, fu64 step, fu32 agent, float* pi,
                          float* vi) {
    fu64 m = src->m;
    for (int k = 0; k < D; k++) {
        pi[k] = src->pos[k * m + me];
        vi[k] = src->vel[k * m + me];
    }
    Sight<D> sight;
    bool fov = sight_new<D>(p, vi, &sight);
    BoidsAcc<D> acc;
    boids_acc_new<D>(&acc);
    for (int r = 0; r < nr; r++) {
        for (fu32 j = ranges[r][0]; j < ranges[r][1]; j++) {
            float d[D];
            for (int k = 0; k < D; k++) {
                d[k] = wrap_delta(src->pos[k * m + j] - pi[k], p->world[k], p->half_world[k], wrap);
            }
            float d2 = norm2<D>(d);
            if (d2 < rmax2) {
                fi64 vfix[D];
                for (int k = 0; k < D; k++) {
                    vfix[k] = src->vfix[k * m + j];
                }
                bool seen = !fov || sees<D>(&sight, d, d2);
                boids_pair<D>(&acc, p, d, d2, vfix, seen);
            }
        }
    }
    // The agent was its own candidate (every search visits its own slot; d2 = 0 < rmax2).
    fi64 vself[D];
    for (int k = 0; k < D; k++) {
        vself[k] = src->vfix[k * m + me];
    }
    boids_remove_self<D>(&acc, p, vself);
    boids_integrate<D>(p, &acc, step, agent, pi, vi);
}

// One Vicsek particle's step; agent keys the noise.
FORGE_HD void vicsek_agent(const Params* p, fu64 step, fu32 agent, const Src* src, fu32 me,
                           const fu32 (*ranges)[2], int nr, float* pos, float* vel) {
    fu64 m = src->m;
    float pi0 = src->pos[me], pi1 = src->pos[m + me];
    float own[2] = {src->vel[me], src->vel[m + me]};
    bool wrap = p->boundary == 0;
    fi64 sum[2] = {0, 0};
    fu32 count = 0;
    for (int r = 0; r < nr; r++) {
        for (fu32 j = ranges[r][0]; j < ranges[r][1]; j++) {
            float dx = wrap_delta(src->pos[j] - pi0, p->world[0], p->half_world[0], wrap);
            float dy = wrap_delta(src->pos[m + j] - pi1, p->world[1], p->half_world[1], wrap);
            fu32 inside = (fu32)(dx * dx + dy * dy < p->r_ali2);
            fi64 mask = -(fi64)inside;
            sum[0] = (fi64)((fu64)sum[0] + (fu64)(src->vfix[j] & mask));
            sum[1] = (fi64)((fu64)sum[1] + (fu64)(src->vfix[m + j] & mask));
            count += inside;
        }
    }
    pos[0] = pi0;
    pos[1] = pi1;
    vel[0] = 0.0f;
    vel[1] = 0.0f;
    vicsek_integrate(p, sum, count, own, step, agent, pos, vel);
}

// Whether a value is finite (the CPU's `check`), without relying on isfinite's host/device split.
FORGE_HD bool finite_f32(float x) {
    return x - x == 0.0f;
}

// ---- One slot of a kernel ----
//
// The body of each per-slot kernel of kernels/step.cu, which keeps only its index computation,
// bounds guard, this call and (per-agent kernels) the divergence atomic. kernels/host/shim.cpp
// runs the same functions over all slots, so tests/kernels_host.rs checks the code the GPU runs.
// Rust counterparts (src/sim/cpu.rs): frame_slot is one slot of `unpermute` (a recorded frame),
// gather_slot is one slot of CpuSolver::build_grid's gather,
// brute_prep_slot one slot of CpuSolver::build_brute, boids_grid_slot/boids_brute_slot and
// vicsek_grid_slot/vicsek_brute_slot the loop bodies of CpuSolver::step_boids / step_vicsek
// (grid / brute force; they call boids_agent / vicsek_agent, named as in cpu.rs), put_slot
// their `out.put` and `check`.

// The unit velocity of slot s of vel (2 x n) to slot t of u, and in fixed point of ufix.
FORGE_HD void unit_slot(fu32 n, const float* __restrict__ vel, fu32 s, float* __restrict__ u,
                        fi64* __restrict__ ufix, fu32 t) {
    float w[2];
    unit2(vel[s], vel[n + s], w);
    u[t] = w[0];
    u[n + t] = w[1];
    ufix[t] = to_fix(w[0]);
    ufix[n + t] = to_fix(w[1]);
}

// Gather slot s of the current state (component-major, n agents) into its sorted slot
// t = cell_start[cell_of[s]] + rank[s]: id, cell, position, velocity (units, i.e. Vicsek: the
// unit velocity, dim 2) and that velocity in fixed point (build_grid_kernel).
FORGE_HD void gather_slot(fu32 n, fu32 dim, bool units, const fu32* __restrict__ cell_of,
                          const fu32* __restrict__ rank, const fu32* __restrict__ cell_start,
                          const float* __restrict__ pos, const float* __restrict__ vel,
                          const fu32* __restrict__ ids, float* __restrict__ spos,
                          float* __restrict__ svel, fi64* __restrict__ svfix,
                          fu32* __restrict__ next_ids, fu32* __restrict__ scell, fu32 s) {
    fu32 c = cell_of[s];
    fu32 t = cell_start[c] + rank[s];
    next_ids[t] = ids[s];
    scell[t] = c;
    if (units) {
        spos[t] = pos[s];
        spos[n + t] = pos[n + s];
        unit_slot(n, vel, s, svel, svfix, t);
    } else {
        for (fu32 k = 0; k < dim; k++) {
            float v = vel[(fu64)k * n + s];
            spos[(fu64)k * n + t] = pos[(fu64)k * n + s];
            svel[(fu64)k * n + t] = v;
            svfix[(fu64)k * n + t] = to_fix(v);
        }
    }
}

// The recording's frame: slot s of the state (component-major, n agents, ids[s] = the agent in
// slot s) to agent ids[s] of frame = [positions dim x n | velocities dim x n], the layout of a
// .bfs frame's payload (frame_kernel; the CPU's `unpermute`, src/sim/cpu.rs).
FORGE_HD void frame_slot(fu32 n, fu32 dim, const float* __restrict__ pos,
                         const float* __restrict__ vel, const fu32* __restrict__ ids,
                         float* __restrict__ frame, fu32 s) {
    fu64 i = ids[s];
    fu64 len = (fu64)dim * n;
    for (fu32 k = 0; k < dim; k++) {
        frame[(fu64)k * n + i] = pos[(fu64)k * n + s];
        frame[len + (fu64)k * n + i] = vel[(fu64)k * n + s];
    }
}

// Brute force, slot s: its velocity in fixed point (is_units, i.e. Vicsek: its unit velocity,
// kept in `units` too) (build_brute_kernel). Positions and (Boids) velocities are read in place.
FORGE_HD void brute_prep_slot(fu32 n, fu32 dim, bool is_units, const float* __restrict__ vel,
                              float* __restrict__ units, fi64* __restrict__ bvfix, fu32 s) {
    if (is_units) {
        unit_slot(n, vel, s, units, bvfix, s);
    } else {
        for (fu32 k = 0; k < dim; k++) {
            bvfix[(fu64)k * n + s] = to_fix(vel[(fu64)k * n + s]);
        }
    }
}

// Write slot t's new state (component-major, n agents); returns whether it is finite.
template <int D>
FORGE_HD bool put_slot(float* out_pos, float* out_vel, fu32 n, fu32 t, const float* p,
                       const float* v) {
    bool ok = true;
    for (int k = 0; k < D; k++) {
        ok = ok & finite_f32(p[k]) & finite_f32(v[k]);
    }
    for (int k = 0; k < D; k++) {
        out_pos[(fu64)k * n + t] = p[k];
        out_vel[(fu64)k * n + t] = v[k];
    }
    return ok;
}

// Grid search: the boid in sorted slot t (agent ids[t], cell scell[t]) of spos/svel/svfix steps
// into slot t of out_* (boids_grid_kernel2/3). Returns whether its new state is finite.
template <int D>
FORGE_HD bool boids_grid_slot(const Params* p, const GridShape* g, fu64 step,
                              const fu32* cell_start, const fu32* scell, const fu32* ids,
                              const float* spos, const float* svel, const fi64* svfix, fu32 t,
                              float* out_pos, float* out_vel) {
    fu32 n = p->n;
    float rmax2 = fmaxf(fmaxf(p->r_sep2, p->r_ali2), p->r_coh2);
    // Sized for D: the array lives in local memory, which 2D then uses a third of.
    fu32 ranges[MAX_RANGES(D)][2];
    bool seam;
    int nr = neighbour_ranges(g, cell_start, scell[t], g->wrap != 0, D, ranges, &seam);
    Src src = {spos, svel, svfix, n};
    float pi[D], vi[D];
    boids_agent<D>(p, rmax2, seam, &src, t, ranges, nr, step, ids[t], pi, vi);
    return put_slot<D>(out_pos, out_vel, n, t, pi, vi);
}

// Grid search: the Vicsek particle in sorted slot t (agent ids[t], cell scell[t]) of
// spos/svel (unit velocities)/svfix steps into slot t of out_* (vicsek_grid_kernel).
FORGE_HD bool vicsek_grid_slot(const Params* p, const GridShape* g, fu64 step,
                               const fu32* cell_start, const fu32* scell, const fu32* ids,
                               const float* spos, const float* svel, const fi64* svfix, fu32 t,
                               float* out_pos, float* out_vel) {
    fu32 n = p->n;
    fu32 ranges[MAX_RANGES(2)][2];
    bool seam;
    int nr = neighbour_ranges(g, cell_start, scell[t], g->wrap != 0, 2, ranges, &seam);
    Src src = {spos, svel, svfix, n};
    float pi[2], vi[2];
    vicsek_agent(p, step, ids[t], &src, t, ranges, nr, pi, vi);
    return put_slot<2>(out_pos, out_vel, n, t, pi, vi);
}

// Brute force: the boid in slot s = agent s (brute force never reorders) of pos/vel (bvfix from
// brute_prep_slot) steps into slot s of out_* against all n agents (boids_brute_kernel2/3).
template <int D>
FORGE_HD bool boids_brute_slot(const Params* p, fu64 step, const float* pos, const float* vel,
                               const fi64* bvfix, fu32 s, float* out_pos, float* out_vel) {
    fu32 n = p->n;
    float rmax2 = fmaxf(fmaxf(p->r_sep2, p->r_ali2), p->r_coh2);
    fu32 all[1][2] = {{0u, n}};
    Src src = {pos, vel, bvfix, n};
    float pi[D], vi[D];
    boids_agent<D>(p, rmax2, p->boundary == 0, &src, s, all, 1, step, s, pi, vi);
    return put_slot<D>(out_pos, out_vel, n, s, pi, vi);
}

// Brute force: the Vicsek particle in slot s = agent s (brute force never reorders) of
// pos/units (units and bvfix from brute_prep_slot) steps into slot s of out_*
// (vicsek_brute_kernel).
FORGE_HD bool vicsek_brute_slot(const Params* p, fu64 step, const float* pos, const float* units,
                                const fi64* bvfix, fu32 s, float* out_pos, float* out_vel) {
    fu32 n = p->n;
    fu32 all[1][2] = {{0u, n}};
    Src src = {pos, units, bvfix, n};
    float pi[2], vi[2];
    vicsek_agent(p, step, s, &src, s, all, 1, pi, vi);
    return put_slot<2>(out_pos, out_vel, n, s, pi, vi);
}

#endif
