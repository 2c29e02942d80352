// RGB (sRGB-encoded, as written by the tone-map pass) → planar Y'CbCr, BT.709, limited range,
// as FFmpeg's rawvideo reads it (yuv420p, yuv420p10le, yuv422p10le). Two full-screen passes
// draw the planes into integer targets, one code per texel (R8Uint for 8 bits, R16Uint for
// 10): `fs_luma` the Y plane, `fs_chroma` the U and V planes at once. Chroma is the mean
// R'G'B' of a 2×2 block (4:2:0) or a 2×1 pair (4:2:2). Fragment passes, not a compute pass:
// lavapipe runs compute invocations several times slower than fragments (a compute pass that
// only stored its words cost 7 ms a 720p frame).

// Keep in sync with `YuvParams` in src/render/yuv.rs.
struct Params {
    width: u32,
    height: u32,
    frame: u32,       // seeds the dither
    bits: u32,        // 8 or 10
    chroma_rows: u32, // luma rows per chroma row: 2 (4:2:0) or 1 (4:2:2)
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var rgb: texture_2d<f32>;

@vertex
fn vs_fullscreen(@builtin(vertex_index) vi: u32) -> @builtin(position) vec4f {
    let uv = vec2f(f32((vi << 1u) & 2u), f32(vi & 2u));
    return vec4f(uv * 2.0 - 1.0, 0.0, 1.0);
}

fn luma(c: vec3f) -> f32 {
    return dot(c, vec3f(0.2126, 0.7152, 0.0722));
}

// A well-mixed 32-bit hash (PCG's output permutation).
fn pcg(v: u32) -> u32 {
    let state = v * 747796405u + 2891336453u;
    let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
    return (word >> 22u) ^ word;
}

// Triangular-PDF noise in (-1, 1) code values for sample i of `plane` in this frame: the
// store then shows fine grain instead of the steps of smooth gradients, with the same mean.
// One hash gives both uniform halves (16 bits each: ample below one code value).
fn tpdf(i: u32, plane: u32) -> f32 {
    let h = pcg(i ^ pcg(plane ^ pcg(p.frame)));
    return (f32(h & 0xffffu) - f32(h >> 16u)) / 65536.0;
}

// One code value at the output's depth, clamped to its range.
fn to_code(v: f32) -> u32 {
    return u32(clamp(round(v), 0.0, f32((1u << p.bits) - 1u)));
}

// The 8-bit levels (16..235 luma, 16..240 chroma) scaled to the output's depth.
fn scale() -> f32 {
    return f32(1u << (p.bits - 8u));
}

@fragment
fn fs_luma(@builtin(position) pos: vec4f) -> @location(0) vec4u {
    let px = vec2u(pos.xy);
    let c = textureLoad(rgb, px, 0).rgb;
    let i = px.y * p.width + px.x;
    return vec4u(to_code(scale() * (16.0 + 219.0 * luma(c)) + tpdf(i, 0u)), 0u, 0u, 0u);
}

struct Chroma {
    @location(0) u: vec4u,
    @location(1) v: vec4u,
}

@fragment
fn fs_chroma(@builtin(position) pos: vec4f) -> Chroma {
    let at = vec2u(pos.xy);
    let x = at.x * 2u;
    let y = at.y * p.chroma_rows;
    let a = textureLoad(rgb, vec2u(x, y), 0).rgb;
    let b = textureLoad(rgb, vec2u(x + 1u, y), 0).rgb;
    // The row below (not used for 4:2:2, whose last chroma row is the last row).
    let y1 = min(y + 1u, p.height - 1u);
    let c = textureLoad(rgb, vec2u(x, y1), 0).rgb;
    let d = textureLoad(rgb, vec2u(x + 1u, y1), 0).rgb;
    // `select`, not a branch on the uniform (see tests/long_render.rs).
    let m = select((a + b + c + d) * 0.25, (a + b) * 0.5, p.chroma_rows == 1u);
    let yy = luma(m);
    let cb = scale() * (128.0 + 224.0 * (m.b - yy) / 1.8556);
    let cr = scale() * (128.0 + 224.0 * (m.r - yy) / 1.5748);
    let i = at.y * (p.width / 2u) + at.x;
    var out: Chroma;
    out.u = vec4u(to_code(cb + tpdf(i, 1u)), 0u, 0u, 0u);
    out.v = vec4u(to_code(cr + tpdf(i, 2u)), 0u, 0u, 0u);
    return out;
}
