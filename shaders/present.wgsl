// The player's window: the renderer's display image copied 1:1 into the window's image
// area (one texel per pixel, no filtering). The display image holds sRGB-encoded values in a
// plain Unorm texture; a plain Unorm window stores them as they are, and an sRGB window gets
// them decoded first (its store encodes them again).

struct Params {
    // 1: the window's format is sRGB.
    decode: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var image: texture_2d<f32>;

@vertex
fn vs_fullscreen(@builtin(vertex_index) vi: u32) -> @builtin(position) vec4f {
    // One triangle covering the viewport (the image area).
    let uv = vec2f(f32((vi << 1u) & 2u), f32(vi & 2u));
    return vec4f(uv * 2.0 - 1.0, 0.0, 1.0);
}

fn srgb_to_linear(c: vec3f) -> vec3f {
    let low = c / 12.92;
    let high = pow((c + 0.055) / 1.055, vec3f(2.4));
    return select(high, low, c <= vec3f(0.04045));
}

@fragment
fn fs_present(@builtin(position) pos: vec4f) -> @location(0) vec4f {
    // The viewport starts at the window's corner: pixel (x, y) shows texel (x, y).
    let c = textureLoad(image, vec2i(pos.xy), 0).rgb;
    if params.decode == 1u {
        return vec4f(srgb_to_linear(c), 1.0);
    }
    return vec4f(c, 1.0);
}
