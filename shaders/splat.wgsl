// The agents of a 2D frame drawn in O(agents + pixels), the way compute rasterizers draw points
// (Schütz, Kerbl & Wimmer, HPG 2022): each agent is splatted once, as a point, into an
// accumulation image, and the sprite's soft shape is given to all of them at once by a
// separable filter over the frame.
//
// 1. `cs_count` (with stacking): one count per agent (and wrapped copy) in the crowd grid (a
//    cell per 8×8 pixels), as the sprites' crowd share reads it.
// 2. `cs_splat`: each agent's light (its colour by mode, times its crowd share) and energy,
//    spread over the 3×3 pixels around it by quadratic B-spline weights of its sub-pixel
//    position, added in 64-bit fixed point (two u32 atomics, the high word taking the low
//    word's carry: the sum does not depend on the order, so a frame is the same image however
//    the GPU schedules it, and a million agents on one pixel neither wrap nor lose a lone
//    agent's light). The image has a guard band of `p.guard` pixels on every side, so sprites
//    just outside the frame still shine into it.
// 3. `cs_blur_x`: each row filtered by the core's and the halo's taps (two outputs).
// 4. `cs_blur_y`: each column of both filtered, summed, limited to the world's window on screen
//    (the letterbox bars stay empty), and added to the trails carried from the last frame
//    (the other HDR target times the fade): the frame's HDR light.
//
// The colour by mode is colour.wgsl's (appended). The taps (src/render/splat.rs, `Kernel`) are
// fitted so that the B-spline splat followed by
// the filter gives, at every sub-pixel position, the sprite the instanced pipeline
// (agents.wgsl, `fs_main`) draws: a Gaussian core averaged over the pixel plus a soft halo.

// Keep in sync with `SplatParams` in src/render/splat.rs.
struct Params {
    view_min: vec2f,   // world point at the frame's lower-left corner
    view_size: vec2f,  // world units the frame spans
    world: vec2f,      // world size (the wrap period)
    viewport: vec2f,   // pixels
    range: vec2f,      // colour value mapped to the LUT's ends
    mode: u32,         // as agents.wgsl's `p.mode`
    copies: u32,       // 1, 4 or 9 (agents.wgsl's `copy_shift`)
    n: u32,            // agents
    guard: u32,        // pixels of guard band on each side of the accumulation image
    padded: vec2u,     // the accumulation image's size: viewport + 2 guard
    crowd: vec2u,      // crowd grid cells
    stacking: f32,
    stack_area: f32,
    mean_heading: f32,
    scale: f32,        // fixed-point units per unit of light
    inv_scale: f32,
    fade: f32,         // the fraction of the last frame's light carried into this one
    carry: u32,        // 1: trails carried from the other HDR target
    intensity: f32,
    dim: u32,          // the recording's dimensions (a 3D one seen from the top): 2 or 3
    pad0: u32,
    scissor: vec4f,    // pixels (x0, y0, x1, y1) light may land in, y down
    fixed: vec4f,      // rgb: the fixed colour (linear); a: 1 if one is given
    // The core's taps (2 CORE_TAPS + 1), then the halo's (2 HALO_TAPS + 1), four to a vec4 (in
    // the uniform: every invocation reads the same tap, which a software driver loads once).
    taps: array<vec4f, 64>,
}

// Keep in sync with `WORKGROUP` in src/render/splat.rs.
const WORKGROUP: u32 = 64u;
// Half-widths of the core's and the halo's taps: pipeline constants, set per point size.
override CORE_TAPS: i32 = 2;
override HALO_TAPS: i32 = 4;

@group(0) @binding(0) var<uniform> p: Params;
// Positions then velocities, component-major: x[0..n], y[0..n] (, z[0..n]), vx[0..n], vy[0..n]…
@group(0) @binding(1) var<storage, read> agents: array<f32>;
// Per agent: the density (density colouring) or species value / 255 (species colouring).
@group(0) @binding(2) var<storage, read> values: array<f32>;
@group(0) @binding(3) var lut: texture_2d<f32>;
@group(0) @binding(4) var lut_sampler: sampler;
// Each entry point reads or writes a buffer through one binding of its own (the pipelines' layouts
// are their own). The accumulation image is a buffer per channel (each pixel's low word, then
// its high word) and the row-filtered images two buffers each (red and green, blue and
// energy), so that each fits a 4K frame within the 128 MiB storage binding every adapter offers.
@group(0) @binding(5) var<storage, read_write> crowd: array<atomic<u32>>;
@group(0) @binding(11) var<storage, read> crowd_in: array<u32>;
@group(0) @binding(6) var<storage, read_write> accum_r: array<atomic<u32>>;
@group(0) @binding(14) var<storage, read_write> accum_g: array<atomic<u32>>;
@group(0) @binding(22) var<storage, read_write> accum_b: array<atomic<u32>>;
@group(0) @binding(23) var<storage, read_write> accum_e: array<atomic<u32>>;
@group(0) @binding(12) var<storage, read> accum_r_in: array<vec2u>;
@group(0) @binding(15) var<storage, read> accum_g_in: array<vec2u>;
@group(0) @binding(24) var<storage, read> accum_b_in: array<vec2u>;
@group(0) @binding(25) var<storage, read> accum_e_in: array<vec2u>;
// The row-filtered images (core, halo), in light: the frame's width × the accumulation image's
// height.
@group(0) @binding(7) var<storage, read_write> core_rg: array<vec2f>;
@group(0) @binding(16) var<storage, read_write> core_ba: array<vec2f>;
@group(0) @binding(18) var<storage, read_write> halo_rg: array<vec2f>;
@group(0) @binding(19) var<storage, read_write> halo_ba: array<vec2f>;
@group(0) @binding(13) var<storage, read> core_rg_in: array<vec2f>;
@group(0) @binding(17) var<storage, read> core_ba_in: array<vec2f>;
@group(0) @binding(20) var<storage, read> halo_rg_in: array<vec2f>;
@group(0) @binding(21) var<storage, read> halo_ba_in: array<vec2f>;
@group(0) @binding(9) var prev: texture_2d<f32>;
@group(0) @binding(10) var hdr: texture_storage_2d<rgba16float, write>;

fn flat_id(gid: vec3u, groups: vec3u) -> u32 {
    return gid.x + gid.y * groups.x * WORKGROUP;
}

// As agents.wgsl's `copy_shift`: where copy `copy` of the agent at `pos` lies, relative to it.
fn copy_shift(copy: u32, pos: vec2f) -> vec2f {
    let tile = vec2f(f32(copy % 3u) - 1.0, f32(copy / 3u) - 1.0) * p.world;
    let toward = select(vec2f(-1.0), vec2f(1.0), pos < p.world * 0.5) * p.world;
    let near = select(vec2f(0.0), toward, vec2<bool>((copy & 1u) != 0u, (copy & 2u) != 0u));
    return select(select(vec2f(0.0), tile, p.copies == 9u), near, p.copies == 4u);
}

// A world point → pixel coordinates (x right, y down; pixel centres at k + 0.5).
fn to_pixels(w: vec2f) -> vec2f {
    let uv = (w - p.view_min) / p.view_size;
    return vec2f(uv.x, 1.0 - uv.y) * p.viewport;
}

@compute @workgroup_size(WORKGROUP)
fn cs_count(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
    let i = flat_id(gid, groups);
    if i >= p.n {
        return;
    }
    let pos = vec2f(agents[i], agents[p.n + i]);
    for (var copy = 0u; copy < 9u; copy++) {
        let px = to_pixels(pos + copy_shift(copy, pos));
        // The crowd texture's cell holding the point, as a point drawn there lands.
        let cell = vec2i(floor(px / 8.0));
        let inside = all(px >= vec2f(0.0)) & all(px <= p.viewport) & all(pos == pos);
        let c = clamp(cell, vec2i(0), vec2i(p.crowd) - 1);
        if (copy < p.copies) & inside {
            atomicAdd(&crowd[u32(c.y) * p.crowd.x + u32(c.x)], 1u);
        }
    }
}

// The crowd count at pixel `px`, bilinear between cell centres (clamped at the edges), as
// agents.wgsl's `crowd_share` samples the crowd texture.
fn crowd_at(px: vec2f) -> f32 {
    let f = px / 8.0 - 0.5;
    let b = floor(f);
    let t = f - b;
    let hi = vec2i(p.crowd) - 1;
    let c0 = clamp(vec2i(b), vec2i(0), hi);
    let c1 = clamp(vec2i(b) + 1, vec2i(0), hi);
    let w = p.crowd.x;
    let a00 = f32(crowd_in[u32(c0.y) * w + u32(c0.x)]);
    let a10 = f32(crowd_in[u32(c0.y) * w + u32(c1.x)]);
    let a01 = f32(crowd_in[u32(c1.y) * w + u32(c0.x)]);
    let a11 = f32(crowd_in[u32(c1.y) * w + u32(c1.x)]);
    return mix(mix(a00, a10, t.x), mix(a01, a11, t.x), t.y);
}

fn share_at(px: vec2f) -> f32 {
    let overlap = max(crowd_at(px) * p.stack_area, 1.0);
    return select(1.0, pow(overlap, -p.stacking), p.stacking > 0.0);
}

// Adds `v` (fixed point) to the accumulation image's pixel `at` (padded coordinates).
fn deposit(at: vec2i, v: vec4f) {
    let k = (u32(at.y) * p.padded.x + u32(at.x)) * 2u;
    let q = vec4u(round(v * p.scale));
    // The low word, and its carry into the high word (the sum wrapped below what was added).
    let r = atomicAdd(&accum_r[k], q.x);
    if r + q.x < r {
        atomicAdd(&accum_r[k + 1u], 1u);
    }
    let g = atomicAdd(&accum_g[k], q.y);
    if g + q.y < g {
        atomicAdd(&accum_g[k + 1u], 1u);
    }
    let b = atomicAdd(&accum_b[k], q.z);
    if b + q.z < b {
        atomicAdd(&accum_b[k + 1u], 1u);
    }
    let e = atomicAdd(&accum_e[k], q.w);
    if e + q.w < e {
        atomicAdd(&accum_e[k + 1u], 1u);
    }
}

// Quadratic B-spline weights of the pixels before, at and after the nearest one, for an offset
// `t` (-0.5..0.5) of the point from the nearest pixel's centre.
fn bspline(t: f32) -> vec3f {
    let a = 0.5 - t;
    let b = 0.5 + t;
    return vec3f(0.5 * a * a, 0.75 - t * t, 0.5 * b * b);
}

@compute @workgroup_size(WORKGROUP)
fn cs_splat(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
    let i = flat_id(gid, groups);
    if i >= p.n {
        return;
    }
    let pos = vec2f(agents[i], agents[p.n + i]);
    let vel = vec2f(agents[p.dim * p.n + i], agents[(p.dim + 1u) * p.n + i]);
    let colour = colour_of(by_mode(length(vel), atan2(vel.y, vel.x), values[i])) * p.intensity;
    let g = f32(p.guard);
    for (var copy = 0u; copy < 9u; copy++) {
        // In the accumulation image's pixels (the guard band first).
        let at = to_pixels(pos + copy_shift(copy, pos)) + g;
        let nearest = floor(at);
        // The 3×3 pixels around the nearest one lie inside the image.
        let inside = all(nearest >= vec2f(1.0)) & all(nearest < vec2f(p.padded) - 1.0)
            & all(pos == pos);
        if (copy < p.copies) & inside {
            // As the instanced sprites have it: the crowd shares the colour's light, not the
            // energy (which ink's opacity reads).
            let light = vec4f(colour * share_at(at - g), p.intensity);
            let t = at - nearest - 0.5;
            let wx = bspline(t.x);
            let wy = bspline(t.y);
            let c = vec2i(nearest);
            for (var y = 0; y < 3; y++) {
                for (var x = 0; x < 3; x++) {
                    deposit(c + vec2i(x - 1, y - 1), light * (wx[x] * wy[y]));
                }
            }
        }
    }
}

fn tap(j: i32) -> f32 {
    return p.taps[j / 4][j % 4];
}

// A 64-bit fixed-point value (low word, high word) as a float.
fn wide(v: vec2u) -> f32 {
    return f32(v.y) * 4294967296.0 + f32(v.x);
}

fn accum_at(x: u32, y: u32) -> vec4f {
    let k = y * p.padded.x + x;
    return vec4f(wide(accum_r_in[k]), wide(accum_g_in[k]), wide(accum_b_in[k]), wide(accum_e_in[k]));
}

fn core_at(k: u32) -> vec4f {
    return vec4f(core_rg_in[k], core_ba_in[k]);
}

fn halo_at(k: u32) -> vec4f {
    return vec4f(halo_rg_in[k], halo_ba_in[k]);
}

// One pixel of each row-filtered image: the frame's columns, the accumulation image's rows.
@compute @workgroup_size(WORKGROUP)
fn cs_blur_x(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
    let i = flat_id(gid, groups);
    let w = u32(p.viewport.x);
    if i >= w * p.padded.y {
        return;
    }
    let x = i % w + p.guard;
    let y = i / w;
    var core = vec4f(0.0);
    for (var k = -CORE_TAPS; k <= CORE_TAPS; k++) {
        core += tap(k + CORE_TAPS) * accum_at(u32(i32(x) + k), y);
    }
    var halo = vec4f(0.0);
    let h0 = 2 * CORE_TAPS + 1 + HALO_TAPS;
    for (var k = -HALO_TAPS; k <= HALO_TAPS; k++) {
        halo += tap(h0 + k) * accum_at(u32(i32(x) + k), y);
    }
    // In light (fixed-point units divided out).
    let c = core * p.inv_scale;
    let h = halo * p.inv_scale;
    core_rg[i] = c.xy;
    core_ba[i] = c.zw;
    halo_rg[i] = h.xy;
    halo_ba[i] = h.zw;
}

// One pixel of the frame: both row-filtered images filtered down the column, plus the trails
// carried.
@compute @workgroup_size(WORKGROUP)
fn cs_blur_y(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
    let i = flat_id(gid, groups);
    let w = u32(p.viewport.x);
    if i >= w * u32(p.viewport.y) {
        return;
    }
    let x = i % w;
    let y = i / w;
    let row = i32(y + p.guard);
    var light = vec4f(0.0);
    for (var k = -CORE_TAPS; k <= CORE_TAPS; k++) {
        light += tap(k + CORE_TAPS) * core_at(u32(row + k) * w + x);
    }
    let h0 = 2 * CORE_TAPS + 1 + HALO_TAPS;
    for (var k = -HALO_TAPS; k <= HALO_TAPS; k++) {
        light += tap(h0 + k) * halo_at(u32(row + k) * w + x);
    }
    let centre = vec2f(f32(x), f32(y)) + 0.5;
    let shown = all(centre >= p.scissor.xy) & all(centre < p.scissor.zw);
    var out = select(vec4f(0.0), light, shown);
    let kept = textureLoad(prev, vec2u(x, y), 0) * p.fade;
    out += select(vec4f(0.0), kept, p.carry == 1u);
    textureStore(hdr, vec2u(x, y), out);
}
