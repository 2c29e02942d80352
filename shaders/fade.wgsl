// Trails: instead of clearing, the previous HDR frame is scaled by the blend constant
// (the fade factor). The fragment colour is zero; the blend state (src·0 + dst·constant)
// does the work, so this pass reads nothing.

@vertex
fn vs_fullscreen(@builtin(vertex_index) vi: u32) -> @builtin(position) vec4f {
    // One triangle covering the screen.
    let uv = vec2f(f32((vi << 1u) & 2u), f32(vi & 2u));
    return vec4f(uv * 2.0 - 1.0, 0.0, 1.0);
}

@fragment
fn fs_fade() -> @location(0) vec4f {
    return vec4f(0.0);
}
