// Overlays (colour bar, time, title, scale bar): an RGBA image drawn on the CPU, premultiplied
// alpha, laid over the display image after tone mapping (blend: one, one minus source alpha).

@group(0) @binding(0) var overlay: texture_2d<f32>;

struct VsOut {
    @builtin(position) clip: vec4f,
}

@vertex
fn vs_fullscreen(@builtin(vertex_index) vi: u32) -> VsOut {
    let uv = vec2f(f32((vi << 1u) & 2u), f32(vi & 2u));
    var out: VsOut;
    out.clip = vec4f(uv * 2.0 - 1.0, 0.0, 1.0);
    return out;
}

@fragment
fn fs_overlay(in: VsOut) -> @location(0) vec4f {
    return textureLoad(overlay, vec2i(in.clip.xy), 0);
}
