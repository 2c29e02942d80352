// The display image (sRGB-encoded, as written by the tone-map pass) → planar Y'CbCr
// (shaders/ycbcr.wgsl, appended to this file: the codes, the dither, the planes' layout). One
// pass at the chroma planes' size draws every plane into integer targets (8 or 16 bits a
// code): each fragment reads its block once and writes its luma codes and its two chroma
// codes. Chroma is the mean R'G'B' of a 2×2 block (4:2:0) or a 2×1 pair (4:2:2). A fragment
// pass, not a compute pass: lavapipe runs compute invocations several times slower than
// fragments (a compute pass that only stored its words cost 7 ms a 720p frame). A video frame
// with nothing drawn over its display image skips this pass: the tone map writes the planes
// itself (tonemap.wgsl's `fs_tonemap_planes*`).

@group(0) @binding(0) var<uniform> ycbcr: YcbcrParams;
@group(0) @binding(1) var rgb: texture_2d<f32>;

@vertex
fn vs_fullscreen(@builtin(vertex_index) vi: u32) -> @builtin(position) vec4f {
    let uv = vec2f(f32((vi << 1u) & 2u), f32(vi & 2u));
    return vec4f(uv * 2.0 - 1.0, 0.0, 1.0);
}

@fragment
fn fs_planes420(@builtin(position) pos: vec4f) -> Planes420 {
    let at = vec2u(pos.xy);
    let x = at.x * 2u;
    let y = at.y * 2u;
    let a = textureLoad(rgb, vec2u(x, y), 0).rgb;
    let b = textureLoad(rgb, vec2u(x + 1u, y), 0).rgb;
    let c = textureLoad(rgb, vec2u(x, y + 1u), 0).rgb;
    let d = textureLoad(rgb, vec2u(x + 1u, y + 1u), 0).rgb;
    return planes420(at, a, b, c, d);
}

@fragment
fn fs_planes422(@builtin(position) pos: vec4f) -> Planes422 {
    let at = vec2u(pos.xy);
    let x = at.x * 2u;
    let a = textureLoad(rgb, vec2u(x, at.y), 0).rgb;
    let b = textureLoad(rgb, vec2u(x + 1u, at.y), 0).rgb;
    return planes422(at, a, b);
}
