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
    fu32 flight;          // boids: 1 where they fly (src/sim/flight.rs), else 0
    float cruise;         // flight: cruise speed v0
    float inv_tau;        // flight: 1/tau, the speed's relaxation rate
    float gravity;        // flight: g
    float lift_k;         // flight: g / v0^2
    float tan_bank;       // flight: tan of the steepest bank
    float roost[3];       // flight: roost centre x, y and preferred height z
    float roost_radius;   // flight: within it the horizontal pull fades to the centre
    float w_roost_h;      // flight: horizontal pull
    float w_roost_v;      // flight: vertical pull per unit of height
};
static_assert(sizeof(struct Params) == 160, "Params must match src/sim/mod.rs");

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

// The bits of a float and back (Rust's to_bits / from_bits).
FORGE_HD fu32 f32_bits(float x) {
    union {
        float f;
        fu32 u;
    } c;
    c.f = x;
    return c.u;
}

FORGE_HD float bits_f32(fu32 u) {
    union {
        float f;
        fu32 u;
    } c;
    c.u = u;
    return c.f;
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

// ---- Obstacles (src/sim/obstacles/mod.rs) ----
//
// Look-ahead avoidance (a steering term added before the max_force clamp) and settling: no boid
// ends a step inside a shape. Every function is its namesake in obstacles/mod.rs, operation for
// operation. The CPU picks which shapes to test through per-cell masks; the kernels test every
// shape, in the scene's order: the masks only skip shapes whose exact test fails (cells.rs), so
// the bytes are the same.

// One shape, prepared on the host (ObsShape in obstacles/mod.rs; 60 bytes). round: a capsule
// from a to a + e of radius r (a circle or sphere when e = 0), else a box from a (min) to
// e (max); e2 = e.e; the bounding sphere's centre and the squared distances within which a boid
// may see it (near2) or be inside it after a move (touch2); cross2: the shortest squared move
// that can pass through its core.
struct ObsShape {
    fu32 round;
    float a[3];
    float e[3];
    float e2;
    float r;
    float centre[3];
    float near2;
    float touch2;
    float cross2;
};
static_assert(sizeof(struct ObsShape) == 60, "ObsShape must match src/sim/obstacles/mod.rs");

// The avoidance settings and the number of shapes (ObsHead in obstacles/mod.rs; 20 bytes).
struct ObsHead {
    fu32 n;
    float w_avoid;
    float look_ahead;
    float clearance;
    float inv_clearance;
};
static_assert(sizeof(struct ObsHead) == 20, "ObsHead must match src/sim/obstacles/mod.rs");

// A run's obstacles as the step reads them.
struct Obs {
    ObsHead head;
    const ObsShape* shapes;
};

// A boid put back on a round surface lands this much further out than the radius (1 + 2^-12).
#define OBS_OUT 1.0002441f

FORGE_HD float clamp01(float x) {
    if (x < 0.0f) {
        return 0.0f;
    }
    if (x > 1.0f) {
        return 1.0f;
    }
    return x;
}

// a.b summed x, y, z in that order (obstacles' `dot`).
template <int D>
FORGE_HD float dotd(const float* a, const float* b) {
    float s = a[0] * b[0];
    for (int k = 1; k < D; k++) {
        s = s + a[k] * b[k];
    }
    return s;
}

template <int D>
FORGE_HD float obs_from_centre2(const ObsShape* sh, const float* x) {
    float d2 = 0.0f;
    for (int k = 0; k < D; k++) {
        float d = x[k] - sh->centre[k];
        d2 = d2 + d * d;
    }
    return d2;
}

// Parameter in [0, 1] of the core segment's point nearest x (0 for a circle).
template <int D>
FORGE_HD float obs_core_t(const ObsShape* sh, const float* x) {
    if (sh->e2 <= 0.0f) {
        return 0.0f;
    }
    float w = 0.0f;
    for (int k = 0; k < D; k++) {
        w = w + (x[k] - sh->a[k]) * sh->e[k];
    }
    return clamp01(w / sh->e2);
}

// The outward normal at the surface point nearest x into n; returns the signed distance of x
// from the surface (negative inside).
template <int D>
FORGE_HD float obs_surface(const ObsShape* sh, const float* x, float* n) {
    for (int k = 0; k < D; k++) {
        n[k] = 0.0f;
    }
    if (sh->round) {
        float t = obs_core_t<D>(sh, x);
        float d[D];
        for (int k = 0; k < D; k++) {
            d[k] = x[k] - (sh->a[k] + sh->e[k] * t);
        }
        float l = sqrtf(dotd<D>(d, d));
        if (l > 0.0f) {
            for (int k = 0; k < D; k++) {
                n[k] = d[k] / l;
            }
        } else {
            n[0] = 1.0f;
        }
        return l - sh->r;
    }
    float d[D];
    for (int k = 0; k < D; k++) {
        float c = x[k] < sh->a[k] ? sh->a[k] : (x[k] > sh->e[k] ? sh->e[k] : x[k]);
        d[k] = x[k] - c;
    }
    float l2 = dotd<D>(d, d);
    if (l2 > 0.0f) {
        float l = sqrtf(l2);
        for (int k = 0; k < D; k++) {
            n[k] = d[k] / l;
        }
        return l;
    }
    // Inside (or on the surface): the nearest face, the lowest axis and the min side first.
    float best = bits_f32(0x7f800000u);
    int axis = 0;
    bool high = false;
    for (int k = 0; k < D; k++) {
        float pl = x[k] - sh->a[k], ph = sh->e[k] - x[k];
        if (pl < best) {
            best = pl;
            axis = k;
            high = false;
        }
        if (ph < best) {
            best = ph;
            axis = k;
            high = true;
        }
    }
    n[axis] = high ? 1.0f : -1.0f;
    return -best;
}

// Round shape: which way a boid at x on the path x + f s steers around it, unit length.
template <int D>
FORGE_HD void obs_sideways(const ObsShape* sh, const float* x, const float* f, float* n) {
    float t = obs_core_t<D>(sh, x);
    float m[D];
    for (int k = 0; k < D; k++) {
        m[k] = x[k] - (sh->a[k] + sh->e[k] * t);
        n[k] = 0.0f;
    }
    float ff = dotd<D>(f, f);
    if (ff > 0.0f) {
        float along = dotd<D>(m, f) / ff;
        for (int k = 0; k < D; k++) {
            m[k] = m[k] - along * f[k];
        }
    }
    float l2 = dotd<D>(m, m);
    if (l2 > 0.0f) {
        float l = sqrtf(l2);
        for (int k = 0; k < D; k++) {
            n[k] = m[k] / l;
        }
        return;
    }
    if (ff <= 0.0f) {
        n[0] = 1.0f;
        return;
    }
    if (D == 2) {
        float l = sqrtf(ff);
        n[0] = -f[1] / l;
        n[1] = f[0] / l;
        return;
    }
    // 3D: f x (the axis of f's smallest component).
    int ax = 0;
    for (int k = 1; k < D; k++) {
        if (fabsf(f[k]) < fabsf(f[ax])) {
            ax = k;
        }
    }
    int i = (ax + 1) % 3, j = (ax + 2) % 3;
    n[i] = f[j];
    n[j] = -f[i];
    float l = sqrtf(n[i] * n[i] + n[j] * n[j]);
    n[i] = n[i] / l;
    n[j] = n[j] / l;
}

// Round shape: the point y of the path x + f s, s in [0, 1], nearest the core segment; returns s.
template <int D>
FORGE_HD float obs_closest_on_path(const ObsShape* sh, const float* x, const float* f, float* y) {
    float rr[D], e[D];
    for (int k = 0; k < D; k++) {
        rr[k] = x[k] - sh->a[k];
        e[k] = sh->e[k];
    }
    float a = dotd<D>(f, f);
    float ee = sh->e2;
    float ff = dotd<D>(e, rr);
    float s;
    if (a <= 0.0f) {
        s = 0.0f;
    } else {
        float c = dotd<D>(f, rr);
        if (ee <= 0.0f) {
            s = clamp01(-c / a);
        } else {
            float b = dotd<D>(f, e);
            float denom = a * ee - b * b;
            s = denom > 0.0f ? clamp01((b * ff - c * ee) / denom) : 0.0f;
            float t = (b * s + ff) / ee;
            if (t < 0.0f) {
                s = clamp01(-c / a);
            } else if (t > 1.0f) {
                s = clamp01((b - c) / a);
            }
        }
    }
    for (int k = 0; k < D; k++) {
        y[k] = x[k] + f[k] * s;
    }
    return s;
}

// Box lo..hi: the middle y of the chord of the path x + f s, s in [0, 1], through the box grown
// by c (slab clipping), and its s; false when the path misses it.
template <int D>
FORGE_HD bool obs_chord_middle(const float* lo0, const float* hi0, const float* x, const float* f,
                               float c, float* s_out, float* y) {
    float t0 = 0.0f, t1 = 1.0f;
    for (int k = 0; k < D; k++) {
        float lo = lo0[k] - c, hi = hi0[k] + c;
        if (f[k] == 0.0f) {
            if (x[k] < lo || x[k] > hi) {
                return false;
            }
            continue;
        }
        float u0 = (lo - x[k]) / f[k], u1 = (hi - x[k]) / f[k];
        if (u0 > u1) {
            float t = u0;
            u0 = u1;
            u1 = t;
        }
        if (u0 > t0) {
            t0 = u0;
        }
        if (u1 < t1) {
            t1 = u1;
        }
        if (t0 > t1) {
            return false;
        }
    }
    float s = (t0 + t1) * 0.5f;
    *s_out = s;
    for (int k = 0; k < D; k++) {
        y[k] = x[k] + f[k] * s;
    }
    return true;
}

// x, inside, moved onto the surface along n (from obs_surface).
template <int D>
FORGE_HD void obs_put_out(const ObsShape* sh, float* x, const float* n) {
    if (sh->round) {
        float t = obs_core_t<D>(sh, x);
        float r = sh->r * OBS_OUT;
        for (int k = 0; k < D; k++) {
            x[k] = (sh->a[k] + sh->e[k] * t) + n[k] * r;
        }
    } else {
        for (int k = 0; k < D; k++) {
            if (n[k] > 0.0f) {
                x[k] = sh->e[k];
            } else if (n[k] < 0.0f) {
                x[k] = sh->a[k];
            }
        }
    }
}

// Whether the straight move from -> to passed through the shape's core.
template <int D>
FORGE_HD bool obs_crossed(const ObsShape* sh, const float* from, const float* to) {
    float f[D], y[D], n[D];
    for (int k = 0; k < D; k++) {
        f[k] = to[k] - from[k];
    }
    if (sh->round) {
        obs_closest_on_path<D>(sh, from, f, y);
        float dist = obs_surface<D>(sh, y, n);
        return dist + sh->r * 0.5f < 0.0f;
    }
    float lo[D], hi[D], s;
    for (int k = 0; k < D; k++) {
        float q = (sh->e[k] - sh->a[k]) * 0.25f;
        lo[k] = sh->a[k] + q;
        hi[k] = sh->e[k] - q;
    }
    return obs_chord_middle<D>(lo, hi, from, f, 0.0f, &s, y);
}

// The avoidance steering of a boid at pos with velocity vel, added to acc (Obstacles::steer).
template <int D>
FORGE_HD void obs_steer(const Obs* o, const float* pos, const float* vel, float* acc) {
    float f[D];
    for (int k = 0; k < D; k++) {
        f[k] = vel[k] * o->head.look_ahead;
    }
    float c = o->head.clearance;
    for (fu32 i = 0; i < o->head.n; i++) {
        const ObsShape* sh = &o->shapes[i];
        if (!(obs_from_centre2<D>(sh, pos) < sh->near2)) {
            continue;
        }
        float s, dist, n[D], y[D];
        if (sh->round) {
            s = obs_closest_on_path<D>(sh, pos, f, y);
            float unused[D];
            dist = obs_surface<D>(sh, y, unused);
            obs_sideways<D>(sh, pos, f, n);
        } else {
            if (!obs_chord_middle<D>(sh->a, sh->e, pos, f, c, &s, y)) {
                continue;
            }
            dist = obs_surface<D>(sh, y, n);
        }
        if (dist < c) {
            float g = (c - dist) * o->head.inv_clearance;
            if (g > 1.0f) {
                g = 1.0f;
            }
            g = o->head.w_avoid * g * (1.0f - s);
            for (int k = 0; k < D; k++) {
                acc[k] = acc[k] + g * n[k];
            }
        }
    }
}

// Whether x is in the world as its boundary keeps it (wrap: [0, size); reflect: [0, size];
// open: anywhere).
template <int D>
FORGE_HD bool in_world(const Params* p, const float* x) {
    for (int k = 0; k < D; k++) {
        bool in = p->boundary == 0   ? x[k] >= 0.0f && x[k] < p->world[k]
                  : p->boundary == 1 ? x[k] >= 0.0f && x[k] <= p->world[k]
                                     : true;
        if (!in) {
            return false;
        }
    }
    return true;
}

// Whether pos is inside a shape (strictly).
template <int D>
FORGE_HD bool obs_inside(const Obs* o, const float* pos) {
    for (fu32 i = 0; i < o->head.n; i++) {
        const ObsShape* sh = &o->shapes[i];
        float n[D];
        if (obs_from_centre2<D>(sh, pos) < sh->touch2 && obs_surface<D>(sh, pos, n) < 0.0f) {
            return true;
        }
    }
    return false;
}

// pos and vel of a boid after its move from old to pos (moved: old + vel dt before the world's
// boundary acted): no boid ends inside a shape (Obstacles::settle).
template <int D>
FORGE_HD void obs_settle(const Params* p, const Obs* o, const float* old, const float* moved,
                         float* pos, float* vel) {
    bool touched = false, projected = false;
    for (fu32 i = 0; i < o->head.n; i++) {
        const ObsShape* sh = &o->shapes[i];
        // Each tested where the shapes before it left the boid.
        if (!(obs_from_centre2<D>(sh, pos) < sh->touch2)) {
            continue;
        }
        touched = true;
        float n[D];
        float dist = obs_surface<D>(sh, pos, n);
        if (dist < 0.0f) {
            obs_put_out<D>(sh, pos, n);
            projected = true;
            float vn = dotd<D>(vel, n);
            if (vn < 0.0f) {
                for (int k = 0; k < D; k++) {
                    vel[k] = vel[k] - vn * n[k];
                }
            }
        }
    }
    if (!touched) {
        return;
    }
    bool bad = false;
    if (projected) {
        bad = !in_world<D>(p, pos) || obs_inside<D>(o, pos);
    } else {
        bool same = true;
        for (int k = 0; k < D; k++) {
            same = same && moved[k] == pos[k];
        }
        if (same) {
            float m2 = 0.0f;
            for (int k = 0; k < D; k++) {
                float d = pos[k] - old[k];
                m2 = m2 + d * d;
            }
            for (fu32 i = 0; i < o->head.n && !bad; i++) {
                const ObsShape* sh = &o->shapes[i];
                bad = m2 >= sh->cross2 && obs_from_centre2<D>(sh, pos) < sh->touch2 &&
                      obs_crossed<D>(sh, old, pos);
            }
        }
    }
    if (bad) {
        for (int k = 0; k < D; k++) {
            pos[k] = old[k];
        }
    }
}

// The steering of the three rules from the neighbour sums, into a (math.rs boids_accel).
template <int D>
FORGE_HD void boids_accel(const Params* p, const BoidsAcc<D>* acc, const float* vel, float* a) {
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
}

// Flight (src/sim/flight.rs): the clamped wish a of a 3D bird made what its lift, bank, thrust
// and gravity do, with the roost's turn and height added to the wish. pos, vel, a hold x, y, z.
FORGE_HD void flight(const Params* p, const float* pos, const float* vel, float* a) {
    float s2 = vel[0] * vel[0] + vel[1] * vel[1] + vel[2] * vel[2];
    if (!(s2 > 0.0f)) {
        return;
    }
    float s = sqrtf(s2);
    float f[3] = {vel[0] / s, vel[1] / s, vel[2] / s};
    float h2 = f[0] * f[0] + f[1] * f[1];
    float ey[3];
    if (h2 > 1e-12f) {
        float h = sqrtf(h2);
        ey[0] = -f[1] / h;
        ey[1] = f[0] / h;
        ey[2] = 0.0f;
    } else {
        ey[0] = 0.0f;
        ey[1] = 1.0f;
        ey[2] = 0.0f;
    }
    float eu[3] = {f[1] * ey[2] - f[2] * ey[1], f[2] * ey[0] - f[0] * ey[2],
                   f[0] * ey[1] - f[1] * ey[0]};
    float dx = p->roost[0] - pos[0];
    float dy = p->roost[1] - pos[1];
    float dh = sqrtf(dx * dx + dy * dy);
    float m = dh > p->roost_radius ? dh : p->roost_radius;
    float nx = dx / m;
    float ny = dy / m;
    float cf = (dh - p->roost_radius) / m;
    float ux = ny + cf * nx;
    float uy = cf * ny - nx;
    float along = ux * f[0] + uy * f[1];
    float side = ux * ey[0] + uy * ey[1];
    float back = along < 0.0f ? -along : 0.0f;
    float turn = p->w_roost_h * (side + back);
    float w[3] = {a[0], a[1], a[2] + p->w_roost_v * (p->roost[2] - pos[2])};
    float wx = w[0] * f[0] + w[1] * f[1] + w[2] * f[2];
    float wy = w[0] * ey[0] + w[1] * ey[1] + w[2] * ey[2] + turn;
    float wu = w[0] * eu[0] + w[1] * eu[1] + w[2] * eu[2];
    float t = wy / p->gravity;
    t = t > p->tan_bank ? p->tan_bank : t;
    t = t < -p->tan_bank ? -p->tan_bank : t;
    float c = 1.0f / sqrtf(1.0f + t * t);
    float sn = t * c;
    float lift = p->lift_k * s2 + wu;
    lift = lift > 0.0f ? lift : 0.0f;
    float thrust = wx + (p->cruise - s) * p->inv_tau;
    for (int k = 0; k < 3; k++) {
        a[k] = lift * (c * eu[k] + sn * ey[k]) + thrust * f[k];
    }
    a[2] = a[2] - p->gravity;
}

// The rest of the step from the steering a (math.rs boids_move): with OBS, the obstacles'
// avoidance; the clamp to max_force; semi-implicit Euler; heading noise (keyed by step and the
// agent's id); speed band; boundary; with OBS, settling out of the obstacles.
template <int D, bool OBS = false>
FORGE_HD void boids_move(const Params* p, float* a, fu64 step, fu64 agent, float* pos, float* vel,
                         const Obs* obs = 0) {
    if constexpr (OBS) {
        obs_steer<D>(obs, pos, vel, a);
    }
    float a2 = norm2<D>(a);
    if (a2 > p->max_force * p->max_force) {
        float f = p->max_force / sqrtf(a2);
        for (int k = 0; k < D; k++) {
            a[k] = a[k] * f;
        }
    }
    if constexpr (D == 3) {
        if (p->flight != 0) {
            flight(p, pos, vel, a);
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
    if constexpr (!OBS) {
        for (int k = 0; k < D; k++) {
            pos[k] = pos[k] + vel[k] * p->dt;
            apply_boundary(&pos[k], &vel[k], p->world[k], p->boundary);
        }
    } else {
        float old[D], moved[D];
        for (int k = 0; k < D; k++) {
            old[k] = pos[k];
            pos[k] = pos[k] + vel[k] * p->dt;
            moved[k] = pos[k];
        }
        for (int k = 0; k < D; k++) {
            apply_boundary(&pos[k], &vel[k], p->world[k], p->boundary);
        }
        obs_settle<D>(p, obs, old, moved, pos, vel);
    }
}

// One boid's whole integration from its sums (math.rs boids_integrate): boids_accel, then
// boids_move.
template <int D, bool OBS = false>
FORGE_HD void boids_integrate(const Params* p, const BoidsAcc<D>* acc, fu64 step, fu64 agent,
                              float* pos, float* vel, const Obs* obs = 0) {
    float a[D];
    boids_accel<D>(p, acc, vel, a);
    boids_move<D, OBS>(p, a, step, agent, pos, vel, obs);
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

// The agent in slot me: its position and velocity.
template <int D>
FORGE_HD void src_load(const Src* src, fu32 me, float* pi, float* vi) {
    fu64 m = src->m;
    for (int k = 0; k < D; k++) {
        pi[k] = src->pos[k * m + me];
        vi[k] = src->vel[k * m + me];
    }
}

// d = p_j - p_i of slot j from the point pi (minimum image where wrap), and its squared
// length: the offset every rule computes, in this order.
template <int D>
FORGE_HD float src_offset(const Params* p, const Src* src, const float* pi, fu32 j, bool wrap,
                          float* d) {
    fu64 m = src->m;
    for (int k = 0; k < D; k++) {
        d[k] = wrap_delta(src->pos[k * m + j] - pi[k], p->world[k], p->half_world[k], wrap);
    }
    return norm2<D>(d);
}

// One boid's step (number step); me is its own slot in src, agent its id; wrap: whether to apply
// the minimum image. Alignment and cohesion over the candidates in its field of view. Writes its
// new position and velocity.
template <int D, bool OBS = false>
FORGE_HD void boids_agent(const Params* p, float rmax2, bool wrap, const Src* src, fu32 me,
                          const fu32 (*ranges)[2], int nr, fu64 step, fu32 agent, float* pi,
                          float* vi, const Obs* obs = 0) {
    fu64 m = src->m;
    src_load<D>(src, me, pi, vi);
    Sight<D> sight;
    bool fov = sight_new<D>(p, vi, &sight);
    BoidsAcc<D> acc;
    boids_acc_new<D>(&acc);
    for (int r = 0; r < nr; r++) {
        for (fu32 j = ranges[r][0]; j < ranges[r][1]; j++) {
            float d[D];
            float d2 = src_offset<D>(p, src, pi, j, wrap, d);
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
    boids_integrate<D, OBS>(p, &acc, step, agent, pi, vi, obs);
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

// ---- Topological neighbours (src/sim/topo.rs) ----
//
// Alignment and cohesion over the k nearest other agents that the boid sees; separation stays
// metric. "The k nearest" is the set of the k smallest keys (d2 bits << 32 | agent id): unique
// keys, so one well-defined set whatever the search or the order agents are found in, summed in
// fixed point. The grid search visits cells ring by ring and stops when the k found and every
// agent within r_sep are certain (topo.rs `rings`, the same stopping rule).

// Largest k the kernels take: each thread keeps its k best in local memory. The CUDA backend
// refuses a larger k (src/sim/backend.rs `cpu_only`).
#define TOPO_K_MAX 64

// One boid's search state: the k best candidates as a max-heap on the key (key[0] the worst
// kept), each with its slot, and the separation and neighbour sums.
template <int D>
struct Topo {
    const Params* p;
    const Src* src;
    const fu32* ids;
    fu32 me;
    bool wrap;
    int k;
    int len;
    fu64 key[TOPO_K_MAX];
    fu32 slot[TOPO_K_MAX];
    float pi[D];
    bool fov;
    Sight<D> sight;
    BoidsAcc<D> acc;
};

// Offer one candidate to the heap of the k best (topo.rs `offer`).
template <int D>
FORGE_HD void topo_offer(Topo<D>* t, fu64 key, fu32 slot) {
    if (t->len < t->k) {
        int i = t->len++;
        t->key[i] = key;
        t->slot[i] = slot;
        while (i > 0) {
            int parent = (i - 1) / 2;
            if (t->key[parent] >= key) {
                break;
            }
            t->key[i] = t->key[parent];
            t->slot[i] = t->slot[parent];
            t->key[parent] = key;
            t->slot[parent] = slot;
            i = parent;
        }
    } else if (t->k > 0 && key < t->key[0]) {
        t->key[0] = key;
        t->slot[0] = slot;
        int i = 0;
        for (;;) {
            int l = 2 * i + 1, r = 2 * i + 2, big = i;
            if (l < t->len && t->key[l] > t->key[big]) {
                big = l;
            }
            if (r < t->len && t->key[r] > t->key[big]) {
                big = r;
            }
            if (big == i) {
                break;
            }
            fu64 tk = t->key[i];
            fu32 ts = t->slot[i];
            t->key[i] = t->key[big];
            t->slot[i] = t->slot[big];
            t->key[big] = tk;
            t->slot[big] = ts;
            i = big;
        }
    }
}

// d = p_j - p_i (minimum image) and its squared length, as the metric rules compute them.
template <int D>
FORGE_HD float topo_offset(const Topo<D>* t, fu32 j, float* d) {
    return src_offset<D>(t->p, t->src, t->pi, j, t->wrap, d);
}

// Slot j as a candidate: separation if within r_sep, the heap if seen (topo.rs `visit`).
template <int D>
FORGE_HD void topo_visit(Topo<D>* t, fu32 j) {
    if (j == t->me) {
        return;
    }
    float d[D];
    float d2 = topo_offset<D>(t, j, d);
    if ((d2 < t->p->r_sep2) & (d2 > 0.0f)) {
        for (int k = 0; k < D; k++) {
            t->acc.sep[k] = (fi64)((fu64)t->acc.sep[k] + (fu64)to_fix(-d[k] / d2));
        }
    }
    if (!t->fov || sees<D>(&t->sight, d, d2)) {
        fu32 id = t->ids ? t->ids[j] : j;
        topo_offer<D>(t, ((fu64)f32_bits(d2) << 32) | (fu64)id, j);
    }
}

// Every slot of the cell at offset (ox, oy, oz) from the cell at coordinates cc (wrapped
// around the world when it wraps) as a candidate.
template <int D>
FORGE_HD void topo_cell(Topo<D>* t, const fu32* cell_start, const fi64* cc, const fi64* dims,
                        fi64 ox, fi64 oy, fi64 oz) {
    fi64 o[3] = {ox, oy, oz};
    fu64 cell = 0;
    for (int a = D - 1; a >= 0; a--) {
        fi64 x = cc[a] + o[a];
        if (t->wrap) {
            x %= dims[a];
            if (x < 0) {
                x += dims[a];
            }
        }
        cell = cell * (fu64)dims[a] + (fu64)x;
    }
    for (fu32 j = cell_start[cell]; j < cell_start[cell + 1]; j++) {
        topo_visit<D>(t, j);
    }
}

// Grid search from the boid's cell c: cells ring by ring (Chebyshev distance in cells), each
// once, until the k best and every agent within r_sep are certain (topo.rs `rings`).
template <int D>
FORGE_HD void topo_rings(Topo<D>* t, const GridShape* g, const fu32* cell_start, fu32 c) {
    const Params* p = t->p;
    bool wrap = t->wrap;
    fi64 cc[3];
    fi64 dims[3];
    {
        fu32 r = c;
        for (int a = 0; a < 3; a++) {
            dims[a] = g->dims[a];
            cc[a] = r % g->dims[a];
            r /= g->dims[a];
        }
    }
    fi64 lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    double h_min = 0.0;
    fi64 d_max = 1;
    for (int a = 0; a < D; a++) {
        if (wrap) {
            lo[a] = -((dims[a] - 1) / 2);
            hi[a] = dims[a] / 2;
        } else {
            lo[a] = -cc[a];
            hi[a] = dims[a] - 1 - cc[a];
        }
        double h = (double)p->world[a] / (double)dims[a];
        h_min = a == 0 || h < h_min ? h : h_min;
        d_max = dims[a] > d_max ? dims[a] : d_max;
    }
    fi64 r_last = 0;
    for (int a = 0; a < D; a++) {
        fi64 e = -lo[a] > hi[a] ? -lo[a] : hi[a];
        r_last = e > r_last ? e : r_last;
    }
    double slack = 0.01 + (double)d_max / (double)(1ULL << 20);
    for (fi64 r = 0; r <= r_last; r++) {
        fi64 zlo = 0, zhi = 0;
        if (D == 3) {
            zlo = -r > lo[2] ? -r : lo[2];
            zhi = r < hi[2] ? r : hi[2];
        }
        fi64 ylo = -r > lo[1] ? -r : lo[1];
        fi64 yhi = r < hi[1] ? r : hi[1];
        fi64 xlo = -r > lo[0] ? -r : lo[0];
        fi64 xhi = r < hi[0] ? r : hi[0];
        for (fi64 oz = zlo; oz <= zhi; oz++) {
            bool z_on = (oz < 0 ? -oz : oz) == r;
            for (fi64 oy = ylo; oy <= yhi; oy++) {
                if (z_on || (oy < 0 ? -oy : oy) == r) {
                    for (fi64 ox = xlo; ox <= xhi; ox++) {
                        topo_cell<D>(t, cell_start, cc, dims, ox, oy, oz);
                    }
                } else {
                    if (-r >= lo[0]) {
                        topo_cell<D>(t, cell_start, cc, dims, -r, oy, oz);
                    }
                    if (r <= hi[0]) {
                        topo_cell<D>(t, cell_start, cc, dims, r, oy, oz);
                    }
                }
            }
        }
        // Every agent not yet visited is more than `reach` away.
        double reach = ((double)r - slack) * h_min;
        if (reach > 0.0) {
            double reach2 = reach * reach * (1.0 - 1e-5);
            if ((double)p->r_sep2 <= reach2 && t->len == t->k &&
                (t->k == 0 || (double)bits_f32((fu32)(t->key[0] >> 32)) <= reach2)) {
                return;
            }
        }
    }
}

// One boid's step with topological alignment and cohesion (topo.rs `boids_agent`): me is its
// slot in src, ids[slot] the agent in each slot (ids = NULL: slot = agent); g and cell_start the grid src is sorted by
// (cell c), or g = NULL for brute force over every slot.
template <int D, bool OBS = false>
FORGE_HD void topo_agent(const Params* p, const Src* src, const fu32* ids, fu32 me,
                         const GridShape* g, const fu32* cell_start, fu32 c, fu64 step, float* pi,
                         float* vi, const Obs* obs = 0) {
    fu64 m = src->m;
    Topo<D> t;
    t.p = p;
    t.src = src;
    t.ids = ids;
    t.me = me;
    t.wrap = p->boundary == 0;
    fu32 k = src->m > 0 ? src->m - 1 : 0;
    k = p->topo_k < k ? p->topo_k : k;
    t.k = k < TOPO_K_MAX ? (int)k : TOPO_K_MAX;
    t.len = 0;
    for (int a = 0; a < D; a++) {
        t.pi[a] = src->pos[a * m + me];
        vi[a] = src->vel[a * m + me];
    }
    t.fov = sight_new<D>(p, vi, &t.sight);
    boids_acc_new<D>(&t.acc);
    if (g == 0) {
        for (fu32 j = 0; j < src->m; j++) {
            topo_visit<D>(&t, j);
        }
    } else {
        topo_rings<D>(&t, g, cell_start, c);
    }
    for (int i = 0; i < t.len; i++) {
        fu32 j = t.slot[i];
        float d[D];
        topo_offset<D>(&t, j, d);
        for (int a = 0; a < D; a++) {
            t.acc.ali[a] = (fi64)((fu64)t.acc.ali[a] + (fu64)src->vfix[a * m + j]);
            t.acc.coh[a] = (fi64)((fu64)t.acc.coh[a] + (fu64)to_fix(d[a]));
        }
    }
    t.acc.n_ali = (fu32)t.len;
    t.acc.n_coh = (fu32)t.len;
    for (int a = 0; a < D; a++) {
        pi[a] = t.pi[a];
    }
    boids_integrate<D, OBS>(p, &t.acc, step, ids ? ids[me] : me, pi, vi, obs);
}

// ---- Species and predators (src/sim/species/mod.rs) ----
//
// Each agent steers by its own species' parameters and counts a neighbour for separation,
// alignment and cohesion as the interaction matrix says for the pair; a predator chases the
// nearest flock agent within its chase radius (smallest squared distance, then smallest id); a
// flock agent flees every predator within its flight radius, summed in id order. The sums are
// the CPU's masked loop (the CPU's faster paths give the same integers); the flight reads the
// predators' positions as hunters_slot gathered them before the step.

// Interaction bits of species_mask (species.rs SEPARATE, ALIGN, COHERE).
#define SP_SEPARATE 1u
#define SP_ALIGN 2u
#define SP_COHERE 4u

// One species as the kernels read it (SpeciesRow in species.rs; 40 bytes): its agent ids
// lo..hi, whether it is a predator, whether it is in the world (an absent species is in no
// one's interaction mask, is neither chased nor fled, and does not move), where its first agent
// goes among the hunters, its largest squared radius, and the squared radius and weight of its
// chase and of its flight.
struct SpeciesRow {
    fu32 lo;
    fu32 hi;
    fu32 predator;
    fu32 present;
    fu32 hunter_base;
    float rmax2;
    float chase_r2;
    float chase_w;
    float flee_r2;
    float flee_w;
};
static_assert(sizeof(struct SpeciesRow) == 40, "SpeciesRow must match src/sim/species/mod.rs");

// A predator as the flight reads it: its agent id and position.
struct Hunter {
    fu32 id;
    float pos[3];
};

// The counts of a run's species (SpeciesHead in species.rs; 12 bytes): species, whether any
// is a predator, and predators (the hunters).
struct SpeciesHead {
    fu32 count;
    fu32 any_predator;
    fu32 n_hunters;
};
static_assert(sizeof(struct SpeciesHead) == 12, "SpeciesHead must match src/sim/species/mod.rs");

// The species of a run: their counts, each one's parameters and row, the interaction matrix
// (mask[a * count + b]: what a does with b), the species of each agent id, and this step's
// hunters (in id order).
struct SpeciesTab {
    fu32 count;
    fu32 any_predator;
    fu32 n_hunters;
    const Params* params;
    const SpeciesRow* rows;
    const unsigned char* mask;
    const unsigned char* of_agent;
    const Hunter* hunters;
};

// Slot s (agent ids[s]; ids = NULL: slot = agent) of pos (component-major, n agents) into the
// hunters, where its agent is a predator (hunters_kernel).
FORGE_HD void hunters_slot(const SpeciesTab* sp, fu32 n, fu32 dim, const float* pos,
                           const fu32* ids, fu32 s, Hunter* hunters) {
    fu32 id = ids ? ids[s] : s;
    const SpeciesRow* row = &sp->rows[sp->of_agent[id]];
    if (!row->predator) {
        return;
    }
    Hunter* h = &hunters[row->hunter_base + (id - row->lo)];
    h->id = id;
    for (fu32 k = 0; k < 3; k++) {
        h->pos[k] = k < dim ? pos[(fu64)k * n + s] : 0.0f;
    }
}

// The best prey so far of a predator at pi (species.rs nearest_prey's `visit`) among slots
// lo..hi.
template <int D>
struct Prey {
    bool found;
    float d2;
    fu32 id;
    float d[D];
};

template <int D>
FORGE_HD void prey_visit(const SpeciesTab* sp, const Params* p, const Src* src, const fu32* ids,
                         const float* pi, float r2, fu32 lo, fu32 hi, Prey<D>* best) {
    bool wrap = p->boundary == 0;
    for (fu32 j = lo; j < hi; j++) {
        fu32 id = ids ? ids[j] : j;
        const SpeciesRow* prey = &sp->rows[sp->of_agent[id]];
        if (prey->predator || !prey->present) {
            continue;
        }
        float d[D];
        float d2 = src_offset<D>(p, src, pi, j, wrap, d);
        if (!(d2 < r2)) {
            continue;
        }
        if (!best->found || d2 < best->d2 || (d2 == best->d2 && id < best->id)) {
            best->found = true;
            best->d2 = d2;
            best->id = id;
            for (int k = 0; k < D; k++) {
                best->d[k] = d[k];
            }
        }
    }
}

// The nearest prey within squared radius r2 of pi: over every cell of the grid g (cell_start)
// within reach (grid.rs each_cell_within), or every slot (g = NULL).
template <int D>
FORGE_HD void nearest_prey(const SpeciesTab* sp, const Params* p, const Src* src,
                           const fu32* ids, const GridShape* g, const fu32* cell_start,
                           const float* pi, float r2, Prey<D>* best) {
    best->found = false;
    if (g == 0) {
        prey_visit<D>(sp, p, src, ids, pi, r2, 0, src->m, best);
        return;
    }
    bool wrap = p->boundary == 0;
    float r = sqrtf(r2);
    fi64 lo[3], hi[3], dims[3];
    for (int k = 0; k < 3; k++) {
        dims[k] = g->dims[k];
        if (k >= D) {
            lo[k] = 0;
            hi[k] = 0;
            continue;
        }
        fi64 c = cell_coord(g, pi[k], k);
        // Rust's `as i64` saturates: so does this, for a radius of many cells.
        float v = r * g->inv_cell[k];
        fi64 reach = (v < 1e15f ? (fi64)v : (fi64)1e15) + 2;
        if (2 * reach + 1 >= dims[k]) {
            lo[k] = 0;
            hi[k] = dims[k] - 1;
        } else if (wrap) {
            lo[k] = c - reach;
            hi[k] = c + reach;
        } else {
            lo[k] = c - reach > 0 ? c - reach : 0;
            hi[k] = c + reach < dims[k] - 1 ? c + reach : dims[k] - 1;
        }
    }
    for (fi64 z = lo[2]; z <= hi[2]; z++) {
        fi64 az = ((z % dims[2]) + dims[2]) % dims[2];
        for (fi64 y = lo[1]; y <= hi[1]; y++) {
            fi64 ay = ((y % dims[1]) + dims[1]) % dims[1];
            fu64 row = ((fu64)az * (fu64)dims[1] + (fu64)ay) * (fu64)dims[0];
            for (fi64 x = lo[0]; x <= hi[0]; x++) {
                fu64 c = row + (fu64)(((x % dims[0]) + dims[0]) % dims[0]);
                prey_visit<D>(sp, p, src, ids, pi, r2, cell_start[c], cell_start[c + 1], best);
            }
        }
    }
}

// One agent's step with species (species.rs sums_of's masked loop, then finish_of): me is its
// slot in src, ids[slot] the agent in each slot (NULL: slot = agent), ranges its candidate
// slots; g and cell_start the grid src is sorted by (NULL: brute force), for the chase.
template <int D, bool OBS = false>
FORGE_HD void species_agent(const SpeciesTab* sp, const Src* src, const fu32* ids, fu32 me,
                            const fu32 (*ranges)[2], int nr, const GridShape* g,
                            const fu32* cell_start, fu64 step, float* pi, float* vi,
                            const Obs* obs = 0) {
    fu64 m = src->m;
    fu32 id = ids ? ids[me] : me;
    fu32 a = sp->of_agent[id];
    const Params* p = &sp->params[a];
    const SpeciesRow* row = &sp->rows[a];
    const unsigned char* mrow = &sp->mask[(fu64)a * sp->count];
    bool wrap = p->boundary == 0;
    src_load<D>(src, me, pi, vi);
    if (!row->present) {
        // Out of the world: it stays where it went.
        return;
    }
    Sight<D> sight;
    bool fov = sight_new<D>(p, vi, &sight);
    BoidsAcc<D> acc;
    boids_acc_new<D>(&acc);
    for (int r = 0; r < nr; r++) {
        for (fu32 j = ranges[r][0]; j < ranges[r][1]; j++) {
            if (j == me) {
                continue;
            }
            float d[D];
            float d2 = src_offset<D>(p, src, pi, j, wrap, d);
            if (!(d2 < row->rmax2)) {
                continue;
            }
            fu32 mask = mrow[sp->of_agent[ids ? ids[j] : j]];
            if ((mask & SP_SEPARATE) != 0 && d2 < p->r_sep2 && d2 > 0.0f) {
                for (int k = 0; k < D; k++) {
                    acc.sep[k] = (fi64)((fu64)acc.sep[k] + (fu64)to_fix(-d[k] / d2));
                }
            }
            if ((mask & (SP_ALIGN | SP_COHERE)) == 0) {
                continue;
            }
            if (fov && !sees<D>(&sight, d, d2)) {
                continue;
            }
            if ((mask & SP_ALIGN) != 0 && d2 < p->r_ali2) {
                for (int k = 0; k < D; k++) {
                    acc.ali[k] = (fi64)((fu64)acc.ali[k] + (fu64)src->vfix[k * m + j]);
                }
                acc.n_ali += 1;
            }
            if ((mask & SP_COHERE) != 0 && d2 < p->r_coh2) {
                for (int k = 0; k < D; k++) {
                    acc.coh[k] = (fi64)((fu64)acc.coh[k] + (fu64)to_fix(d[k]));
                }
                acc.n_coh += 1;
            }
        }
    }
    float av[D];
    boids_accel<D>(p, &acc, vi, av);
    if (row->predator) {
        Prey<D> best;
        nearest_prey<D>(sp, p, src, ids, g, cell_start, pi, row->chase_r2, &best);
        if (best.found) {
            float d2 = norm2<D>(best.d);
            if (d2 > 0.0f) {
                float s = sqrtf(d2);
                for (int k = 0; k < D; k++) {
                    av[k] = av[k] + row->chase_w * (best.d[k] / s);
                }
            }
        }
    } else if (sp->any_predator) {
        for (fu32 h = 0; h < sp->n_hunters; h++) {
            const Hunter* hu = &sp->hunters[h];
            if (hu->id == id || !sp->rows[sp->of_agent[hu->id]].present) {
                continue;
            }
            float d[D];
            for (int k = 0; k < D; k++) {
                d[k] = wrap_delta(pi[k] - hu->pos[k], p->world[k], p->half_world[k], wrap);
            }
            float d2 = norm2<D>(d);
            if (d2 < row->flee_r2 && d2 > 0.0f) {
                float s = sqrtf(d2);
                for (int k = 0; k < D; k++) {
                    av[k] = av[k] + row->flee_w * (d[k] / s);
                }
            }
        }
    }
    boids_move<D, OBS>(p, av, step, id, pi, vi, obs);
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
template <int D, bool OBS = false>
FORGE_HD bool boids_grid_slot(const Params* p, const GridShape* g, fu64 step,
                              const fu32* cell_start, const fu32* scell, const fu32* ids,
                              const float* spos, const float* svel, const fi64* svfix, fu32 t,
                              float* out_pos, float* out_vel, const Obs* obs = 0) {
    fu32 n = p->n;
    float rmax2 = fmaxf(fmaxf(p->r_sep2, p->r_ali2), p->r_coh2);
    // Sized for D: the array lives in local memory, which 2D then uses a third of.
    fu32 ranges[MAX_RANGES(D)][2];
    bool seam;
    int nr = neighbour_ranges(g, cell_start, scell[t], g->wrap != 0, D, ranges, &seam);
    Src src = {spos, svel, svfix, n};
    float pi[D], vi[D];
    boids_agent<D, OBS>(p, rmax2, seam, &src, t, ranges, nr, step, ids[t], pi, vi, obs);
    return put_slot<D>(out_pos, out_vel, n, t, pi, vi);
}

// Grid search, topological neighbours: the boid in sorted slot t steps into slot t of out_*
// (topo_grid_kernel2/3). Returns whether its new state is finite.
template <int D, bool OBS = false>
FORGE_HD bool topo_grid_slot(const Params* p, const GridShape* g, fu64 step,
                             const fu32* cell_start, const fu32* scell, const fu32* ids,
                             const float* spos, const float* svel, const fi64* svfix, fu32 t,
                             float* out_pos, float* out_vel, const Obs* obs = 0) {
    Src src = {spos, svel, svfix, p->n};
    float pi[D], vi[D];
    topo_agent<D, OBS>(p, &src, ids, t, g, cell_start, scell[t], step, pi, vi, obs);
    return put_slot<D>(out_pos, out_vel, p->n, t, pi, vi);
}

// Brute force, topological neighbours: the boid in slot s = agent s against all n agents
// (topo_brute_kernel2/3; brute force never reorders).
template <int D, bool OBS = false>
FORGE_HD bool topo_brute_slot(const Params* p, fu64 step, const float* pos, const float* vel,
                              const fi64* bvfix, fu32 s, float* out_pos, float* out_vel,
                              const Obs* obs = 0) {
    Src src = {pos, vel, bvfix, p->n};
    float pi[D], vi[D];
    topo_agent<D, OBS>(p, &src, 0, s, 0, 0, 0, step, pi, vi, obs);
    return put_slot<D>(out_pos, out_vel, p->n, s, pi, vi);
}

// Grid search, species: the agent in sorted slot t steps into slot t of out_*
// (species_grid_kernel2/3). Returns whether its new state is finite.
template <int D, bool OBS = false>
FORGE_HD bool species_grid_slot(const Params* p, const SpeciesTab* sp, const GridShape* g,
                                fu64 step, const fu32* cell_start, const fu32* scell,
                                const fu32* ids, const float* spos, const float* svel,
                                const fi64* svfix, fu32 t, float* out_pos, float* out_vel,
                                const Obs* obs = 0) {
    fu32 ranges[MAX_RANGES(D)][2];
    bool seam;
    int nr = neighbour_ranges(g, cell_start, scell[t], g->wrap != 0, D, ranges, &seam);
    Src src = {spos, svel, svfix, p->n};
    float pi[D], vi[D];
    species_agent<D, OBS>(sp, &src, ids, t, ranges, nr, g, cell_start, step, pi, vi, obs);
    return put_slot<D>(out_pos, out_vel, p->n, t, pi, vi);
}

// Brute force, species: the agent in slot s = agent s against all n agents
// (species_brute_kernel2/3).
template <int D, bool OBS = false>
FORGE_HD bool species_brute_slot(const Params* p, const SpeciesTab* sp, fu64 step,
                                 const float* pos, const float* vel, const fi64* bvfix, fu32 s,
                                 float* out_pos, float* out_vel, const Obs* obs = 0) {
    fu32 all[1][2] = {{0u, p->n}};
    Src src = {pos, vel, bvfix, p->n};
    float pi[D], vi[D];
    species_agent<D, OBS>(sp, &src, 0, s, all, 1, 0, 0, step, pi, vi, obs);
    return put_slot<D>(out_pos, out_vel, p->n, s, pi, vi);
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
template <int D, bool OBS = false>
FORGE_HD bool boids_brute_slot(const Params* p, fu64 step, const float* pos, const float* vel,
                               const fi64* bvfix, fu32 s, float* out_pos, float* out_vel,
                               const Obs* obs = 0) {
    fu32 n = p->n;
    float rmax2 = fmaxf(fmaxf(p->r_sep2, p->r_ali2), p->r_coh2);
    fu32 all[1][2] = {{0u, n}};
    Src src = {pos, vel, bvfix, n};
    float pi[D], vi[D];
    boids_agent<D, OBS>(p, rmax2, p->boundary == 0, &src, s, all, 1, step, s, pi, vi, obs);
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
