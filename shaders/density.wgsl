// Local density on the GPU: agents are counted into a grid over the world (atomics), the
// counts are blurred (separable 5-tap binomial, wrapping in a periodic world), and each
// agent reads the blurred field at its position (bilinear). The agents pass colours by it.

// Keep in sync with `DensityParams` in src/render/density.rs.
struct Params {
    grid: vec2u,     // cells along x and y
    n: u32,          // agents
    wrap: u32,       // 1 in a periodic world
    world: vec2f,    // world size (x, y)
    _pad: vec2f,
}

@group(0) @binding(0) var<uniform> p: Params;
// Positions, component-major: x[0..n], y[0..n].
@group(0) @binding(1) var<storage, read> pos: array<f32>;
@group(0) @binding(2) var<storage, read_write> counts: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read_write> tmp: array<f32>;
@group(0) @binding(4) var<storage, read_write> field: array<f32>;
@group(0) @binding(5) var<storage, read_write> density: array<f32>;

// Keep in sync with `WORKGROUP` in src/render/density.rs.
const WORKGROUP: u32 = 64u;

fn flat_id(gid: vec3u, groups: vec3u) -> u32 {
    return gid.x + gid.y * groups.x * WORKGROUP;
}

fn cell_of(x: f32, y: f32) -> vec2f {
    return vec2f(x, y) / p.world * vec2f(p.grid);
}

@compute @workgroup_size(WORKGROUP)
fn cs_splat(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
    let i = flat_id(gid, groups);
    if i >= p.n {
        return;
    }
    let c = floor(cell_of(pos[i], pos[p.n + i]));
    if c.x < 0.0 || c.y < 0.0 || c.x >= f32(p.grid.x) || c.y >= f32(p.grid.y) {
        return;
    }
    atomicAdd(&counts[u32(c.y) * p.grid.x + u32(c.x)], 1u);
}

// Cell (x + d, y) or (x, y + d): wrapped, or clamped to the edge.
fn neighbour(x: i32, y: i32, dx: i32, dy: i32) -> u32 {
    let g = vec2i(p.grid);
    var q = vec2i(x + dx, y + dy);
    if p.wrap == 1u {
        q = (q % g + g) % g;
    } else {
        q = clamp(q, vec2i(0), g - 1);
    }
    return u32(q.y) * p.grid.x + u32(q.x);
}

const W: array<f32, 5> = array<f32, 5>(0.0625, 0.25, 0.375, 0.25, 0.0625);

@compute @workgroup_size(WORKGROUP)
fn cs_blur_x(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
    let c = flat_id(gid, groups);
    if c >= p.grid.x * p.grid.y {
        return;
    }
    let x = i32(c % p.grid.x);
    let y = i32(c / p.grid.x);
    var s = 0.0;
    for (var k = 0; k < 5; k++) {
        s += W[k] * f32(atomicLoad(&counts[neighbour(x, y, k - 2, 0)]));
    }
    tmp[c] = s;
}

@compute @workgroup_size(WORKGROUP)
fn cs_blur_y(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
    let c = flat_id(gid, groups);
    if c >= p.grid.x * p.grid.y {
        return;
    }
    let x = i32(c % p.grid.x);
    let y = i32(c / p.grid.x);
    var s = 0.0;
    for (var k = 0; k < 5; k++) {
        s += W[k] * tmp[neighbour(x, y, 0, k - 2)];
    }
    field[c] = s;
}

@compute @workgroup_size(WORKGROUP)
fn cs_sample(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
    let i = flat_id(gid, groups);
    if i >= p.n {
        return;
    }
    // Bilinear between cell centres.
    let f = cell_of(pos[i], pos[p.n + i]) - 0.5;
    let b = floor(f);
    let t = f - b;
    let x = i32(b.x);
    let y = i32(b.y);
    let a00 = field[neighbour(x, y, 0, 0)];
    let a10 = field[neighbour(x, y, 1, 0)];
    let a01 = field[neighbour(x, y, 0, 1)];
    let a11 = field[neighbour(x, y, 1, 1)];
    density[i] = mix(mix(a00, a10, t.x), mix(a01, a11, t.x), t.y);
}
