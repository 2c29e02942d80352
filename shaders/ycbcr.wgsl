// R'G'B' → Y'CbCr codes, BT.709, limited range, as FFmpeg's rawvideo reads them (yuv420p,
// yuv420p10le, yuv422p10le): shared by yuv.wgsl (which reads the display image) and
// tonemap.wgsl's `fs_tonemap_planes*` (which tone-maps straight into the planes). A file that
// includes this one declares `ycbcr`, a uniform `YcbcrParams`.

// Keep in sync with `YuvParams` in src/render/yuv.rs.
struct YcbcrParams {
    width: u32,
    height: u32,
    bits: u32,        // 8 or 10
    chroma_rows: u32, // luma rows per chroma row: 2 (4:2:0) or 1 (4:2:2)
    seeds: vec3u,     // the dither's seed of each plane this frame: pcg(plane ^ pcg(frame))
    pad0: u32,
}

// A well-mixed 32-bit hash (PCG's output permutation; `pcg` in src/render/yuv.rs).
fn pcg(v: u32) -> u32 {
    let state = v * 747796405u + 2891336453u;
    let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
    return (word >> 22u) ^ word;
}

fn luma(c: vec3f) -> f32 {
    return dot(c, vec3f(0.2126, 0.7152, 0.0722));
}

// Dither in code values for sample `at` of `plane` in this frame (as tonemap.wgsl's
// `column_dither`): ordered down each column, four levels -0.6, -0.2, 0.2 and 0.6 of a code
// in the cycle 0, 2, 1, 3 from a phase drawn per column, plane and frame, so a smooth gradient
// shows fine grain and never one code for more than four rows, with the same mean.
fn dither(at: vec2u, seed: u32) -> f32 {
    let phase = pcg(at.x ^ seed);
    let k = (at.y + phase) & 3u;
    return (f32((0xd8u >> (k * 2u)) & 3u) - 1.5) * 0.4;
}

// One code value at the output's depth, clamped to its range.
fn to_code(v: f32) -> u32 {
    return u32(clamp(round(v), 0.0, f32((1u << ycbcr.bits) - 1u)));
}

// The 8-bit levels (16..235 luma, 16..240 chroma) scaled to the output's depth.
fn scale() -> f32 {
    return f32(1u << (ycbcr.bits - 8u));
}

// One code of luma for the pixel `px` whose R'G'B' colour is `c`.
fn luma_code(px: vec2u, c: vec3f) -> u32 {
    return to_code(scale() * (16.0 + 219.0 * luma(c)) + dither(px, ycbcr.seeds.x));
}

// The chroma codes (U, V) of chroma sample `at` whose mean R'G'B' is `m`.
fn chroma_codes(at: vec2u, m: vec3f) -> vec2u {
    let yy = luma(m);
    let cb = scale() * (128.0 + 224.0 * (m.b - yy) / 1.8556);
    let cr = scale() * (128.0 + 224.0 * (m.r - yy) / 1.5748);
    return vec2u(to_code(cb + dither(at, ycbcr.seeds.y)), to_code(cr + dither(at, ycbcr.seeds.z)));
}

// Every plane in one pass at the chroma planes' size: each fragment takes its 2×2 block (a, b
// on the top row, c, d below) and writes its four luma codes (two targets of two codes a
// texel: the block's top row and its bottom row, copied into alternate rows of the Y plane)
// and its two chroma codes.
struct Planes420 {
    @location(0) top: vec4u,
    @location(1) bottom: vec4u,
    @location(2) u: vec4u,
    @location(3) v: vec4u,
}

fn planes420(at: vec2u, a: vec3f, b: vec3f, c: vec3f, d: vec3f) -> Planes420 {
    let x = at.x * 2u;
    let y = at.y * 2u;
    let uv = chroma_codes(at, (a + b + c + d) * 0.25);
    var out: Planes420;
    out.top = vec4u(luma_code(vec2u(x, y), a), luma_code(vec2u(x + 1u, y), b), 0u, 0u);
    out.bottom = vec4u(luma_code(vec2u(x, y + 1u), c), luma_code(vec2u(x + 1u, y + 1u), d), 0u, 0u);
    out.u = vec4u(uv.x, 0u, 0u, 0u);
    out.v = vec4u(uv.y, 0u, 0u, 0u);
    return out;
}

// 4:2:2: a fragment per horizontal pair (a, b), its two luma codes and its two chroma codes.
struct Planes422 {
    @location(0) row: vec4u,
    @location(1) u: vec4u,
    @location(2) v: vec4u,
}

fn planes422(at: vec2u, a: vec3f, b: vec3f) -> Planes422 {
    let x = at.x * 2u;
    let uv = chroma_codes(at, (a + b) * 0.5);
    var out: Planes422;
    out.row = vec4u(luma_code(vec2u(x, at.y), a), luma_code(vec2u(x + 1u, at.y), b), 0u, 0u);
    out.u = vec4u(uv.x, 0u, 0u, 0u);
    out.v = vec4u(uv.y, 0u, 0u, 0u);
    return out;
}
