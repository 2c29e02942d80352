// Agents as instanced soft point sprites (a bright core and a faint halo), added into the
// HDR target. One instance per agent; six vertices (two triangles) per copy, nine copies in a
// wrapping world so that a sprite crossing the seam shows on both sides.

// Keep in sync with `AgentParams` in src/render/agents.rs.
struct Params {
    view_min: vec2f,   // world point at the viewport's lower-left corner
    view_size: vec2f,  // world units the viewport spans
    world: vec2f,      // world size (the wrap period)
    viewport: vec2f,   // pixels
    range: vec2f,      // colour value mapped to the LUT's ends (speed or density)
    radius_px: f32,    // halo radius in pixels
    core: f32,         // core radius as a fraction of the halo radius
    mode: u32,         // 0 speed, 1 heading, 2 density, 3 fixed
    copies: u32,       // 1, or 9 in a wrapping world
    intensity: f32,    // brightness of one sprite's core
    halo: f32,         // brightness of the halo relative to the core
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var lut: texture_2d<f32>;
@group(0) @binding(2) var lut_sampler: sampler;

struct VsOut {
    @builtin(position) clip: vec4f,
    @location(0) uv: vec2f,
    @location(1) color: vec3f,
}

const TAU: f32 = 6.283185307179586;

fn corner(i: u32) -> vec2f {
    // Two triangles: (-1,-1) (1,-1) (1,1) / (-1,-1) (1,1) (-1,1)
    switch i {
        case 0u: { return vec2f(-1.0, -1.0); }
        case 1u: { return vec2f(1.0, -1.0); }
        case 2u: { return vec2f(1.0, 1.0); }
        case 3u: { return vec2f(-1.0, -1.0); }
        case 4u: { return vec2f(1.0, 1.0); }
        default: { return vec2f(-1.0, 1.0); }
    }
}

@vertex
fn vs_main(
    @builtin(vertex_index) vi: u32,
    @location(0) x: f32,
    @location(1) y: f32,
    @location(2) vx: f32,
    @location(3) vy: f32,
    @location(4) density: f32,
) -> VsOut {
    var out: VsOut;
    let copy = vi / 6u;
    let c = corner(vi % 6u);
    var shift = vec2f(0.0);
    if p.copies > 1u {
        shift = vec2f(f32(copy % 3u) - 1.0, f32(copy / 3u) - 1.0) * p.world;
    }
    let world_pos = vec2f(x, y) + shift;
    let ndc = (world_pos - p.view_min) / p.view_size * 2.0 - 1.0;
    let r_ndc = vec2f(p.radius_px) * 2.0 / p.viewport;
    // A copy (or an agent) entirely outside the view becomes a degenerate triangle.
    if any(abs(ndc) > vec2f(1.0) + r_ndc) || x != x || y != y {
        out.clip = vec4f(2.0, 2.0, 2.0, 1.0);
        out.uv = vec2f(0.0);
        out.color = vec3f(0.0);
        return out;
    }
    out.clip = vec4f(ndc + c * r_ndc, 0.0, 1.0);
    out.uv = c;

    var t = 0.5;
    switch p.mode {
        case 0u: {
            let s = length(vec2f(vx, vy));
            t = (s - p.range.x) / max(p.range.y - p.range.x, 1e-20);
        }
        case 1u: {
            t = atan2(vy, vx) / TAU + 0.5;
        }
        case 2u: {
            t = (density - p.range.x) / max(p.range.y - p.range.x, 1e-20);
        }
        default: {
            t = 0.75;
        }
    }
    // Texel centres: 0.5/256 .. 255.5/256.
    let u = (clamp(t, 0.0, 1.0) * 255.0 + 0.5) / 256.0;
    out.color = textureSampleLevel(lut, lut_sampler, vec2f(u, 0.5), 0.0).rgb;
    return out;
}

@fragment
fn fs_main(in: VsOut) -> @location(0) vec4f {
    let r2 = dot(in.uv, in.uv);
    if r2 >= 1.0 {
        discard;
    }
    let k = 1.0 / (p.core * p.core);
    let core = exp(-r2 * k * 2.0);
    // Halo: a soft falloff reaching zero at the sprite's edge.
    let edge = 1.0 - r2;
    let halo = p.halo * edge * edge * exp(-r2 * 3.0);
    let e = p.intensity * (core + halo);
    return vec4f(in.color * e, e);
}
