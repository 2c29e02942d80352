// Trails for the instanced sprites: this frame's HDR target starts as the last frame's light
// (the other HDR target) times the fade, which the blend state applies (src · constant), so
// this pass reads each texel once and writes it once.

@group(0) @binding(0) var last: texture_2d<f32>;

@vertex
fn vs_fullscreen(@builtin(vertex_index) vi: u32) -> @builtin(position) vec4f {
    // One triangle covering the screen.
    let uv = vec2f(f32((vi << 1u) & 2u), f32(vi & 2u));
    return vec4f(uv * 2.0 - 1.0, 0.0, 1.0);
}

@fragment
fn fs_fade(@builtin(position) pos: vec4f) -> @location(0) vec4f {
    return textureLoad(last, vec2i(pos.xy), 0);
}
