// Local density on the GPU: agents are counted into a grid over the world (atomics), the
// counts are blurred (separable 5-tap binomial, wrapping in a periodic world), and each
// agent reads the blurred field at its position (bilinear). The agents pass colours by it.
// 3D recordings use the `*3` entry points: a 3D grid, blurred along x, y and z, read
// trilinearly.

// Keep in sync with `DensityParams` in src/render/density.rs.
struct Params {
    grid: vec2u,     // cells along x and y
    n: u32,          // agents
    wrap: u32,       // 1 in a periodic world
    world: vec2f,    // world size (x, y)
    grid_z: u32,     // cells along z (1 in 2D)
    world_z: f32,    // world size along z (3D)
}

// No `if` or loop here may depend on `p` alone (wrapping is a `select`): see agents.wgsl.
@group(0) @binding(0) var<uniform> p: Params;
// Positions, component-major: x[0..n], y[0..n] (, z[0..n]).
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
    let r = vec2i(x + dx, y + dy);
    let q = select(clamp(r, vec2i(0), g - 1), (r % g + g) % g, p.wrap == 1u);
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

// ---------------------------------------------------------------------------------------------
// 3D: counts → (x) tmp → (y) field → (z) tmp, sampled from tmp.

fn cells3() -> u32 {
    return p.grid.x * p.grid.y * p.grid_z;
}

fn cell_of3(i: u32) -> vec3f {
    let q = vec3f(pos[i], pos[p.n + i], pos[2u * p.n + i]);
    return q / vec3f(p.world, p.world_z) * vec3f(vec3u(p.grid, p.grid_z));
}

fn coords3(c: u32) -> vec3i {
    return vec3i(
        i32(c % p.grid.x),
        i32((c / p.grid.x) % p.grid.y),
        i32(c / (p.grid.x * p.grid.y)),
    );
}

// Cell c + d: wrapped, or clamped to the edge.
fn neighbour3(c: vec3i, d: vec3i) -> u32 {
    let g = vec3i(vec3u(p.grid, p.grid_z));
    let r = c + d;
    let q = select(clamp(r, vec3i(0), g - 1), (r % g + g) % g, p.wrap == 1u);
    return (u32(q.z) * p.grid.y + u32(q.y)) * p.grid.x + u32(q.x);
}

@compute @workgroup_size(WORKGROUP)
fn cs_splat3(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
    let i = flat_id(gid, groups);
    if i >= p.n {
        return;
    }
    let c = floor(cell_of3(i));
    let g = vec3f(vec3u(p.grid, p.grid_z));
    if any(c < vec3f(0.0)) || any(c >= g) {
        return;
    }
    atomicAdd(&counts[neighbour3(vec3i(c), vec3i(0))], 1u);
}

@compute @workgroup_size(WORKGROUP)
fn cs_blur3_x(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
    let c = flat_id(gid, groups);
    if c >= cells3() {
        return;
    }
    let q = coords3(c);
    var s = 0.0;
    for (var k = 0; k < 5; k++) {
        s += W[k] * f32(atomicLoad(&counts[neighbour3(q, vec3i(k - 2, 0, 0))]));
    }
    tmp[c] = s;
}

@compute @workgroup_size(WORKGROUP)
fn cs_blur3_y(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
    let c = flat_id(gid, groups);
    if c >= cells3() {
        return;
    }
    let q = coords3(c);
    var s = 0.0;
    for (var k = 0; k < 5; k++) {
        s += W[k] * tmp[neighbour3(q, vec3i(0, k - 2, 0))];
    }
    field[c] = s;
}

@compute @workgroup_size(WORKGROUP)
fn cs_blur3_z(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
    let c = flat_id(gid, groups);
    if c >= cells3() {
        return;
    }
    let q = coords3(c);
    var s = 0.0;
    for (var k = 0; k < 5; k++) {
        s += W[k] * field[neighbour3(q, vec3i(0, 0, k - 2))];
    }
    tmp[c] = s;
}

@compute @workgroup_size(WORKGROUP)
fn cs_sample3(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
    let i = flat_id(gid, groups);
    if i >= p.n {
        return;
    }
    // Trilinear between cell centres.
    let f = cell_of3(i) - 0.5;
    let b = floor(f);
    let t = f - b;
    let q = vec3i(b);
    let a000 = tmp[neighbour3(q, vec3i(0, 0, 0))];
    let a100 = tmp[neighbour3(q, vec3i(1, 0, 0))];
    let a010 = tmp[neighbour3(q, vec3i(0, 1, 0))];
    let a110 = tmp[neighbour3(q, vec3i(1, 1, 0))];
    let a001 = tmp[neighbour3(q, vec3i(0, 0, 1))];
    let a101 = tmp[neighbour3(q, vec3i(1, 0, 1))];
    let a011 = tmp[neighbour3(q, vec3i(0, 1, 1))];
    let a111 = tmp[neighbour3(q, vec3i(1, 1, 1))];
    let lo = mix(mix(a000, a100, t.x), mix(a010, a110, t.x), t.y);
    let hi = mix(mix(a001, a101, t.x), mix(a011, a111, t.x), t.y);
    density[i] = mix(lo, hi, t.z);
}
