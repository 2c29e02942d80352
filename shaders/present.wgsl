// The player's window: the renderer's display image copied 1:1 into the window's image
// area (one texel per pixel, no filtering). The display image holds sRGB-encoded values in a
// plain Unorm texture: a plain Unorm window stores them as they are (`fs_present`), and an
// sRGB window gets them decoded first (`fs_present_decode`; its store encodes them again).
// Two entry points, chosen when the pipeline is built: no uniform, no branch on one.

@group(0) @binding(0) var image: texture_2d<f32>;

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

// The texel under pixel `pos`: the viewport starts at the window's corner, so pixel (x, y)
// shows texel (x, y).
fn texel(pos: vec4f) -> vec3f {
    return textureLoad(image, vec2i(pos.xy), 0).rgb;
}

@fragment
fn fs_present(@builtin(position) pos: vec4f) -> @location(0) vec4f {
    return vec4f(texel(pos), 1.0);
}

@fragment
fn fs_present_decode(@builtin(position) pos: vec4f) -> @location(0) vec4f {
    return vec4f(srgb_to_linear(texel(pos)), 1.0);
}
