// The player's panel and bar: egui's tessellated meshes (positions in points, texture
// coordinates into egui's font atlas or an image, premultiplied sRGB-encoded vertex colours).
// Two entry points, chosen when the pipeline is built for the window's format: a plain Unorm
// window stores the sRGB-encoded values as they are (`fs_panel`), an sRGB one gets them
// decoded first (`fs_panel_decode`). No branch on a uniform: Mesa's lavapipe runs a shader
// that samples a texture under one per pixel rather than per block, many times slower.

// Keep in sync with `PanelParams` in src/player/panel_paint.rs.
struct Params {
    size: vec2f, // the window's size in points
    _pad: vec2f,
};

@group(0) @binding(0) var<uniform> p: Params;
@group(1) @binding(0) var tex: texture_2d<f32>;
@group(1) @binding(1) var tex_sampler: sampler;

struct Out {
    @builtin(position) pos: vec4f,
    @location(0) uv: vec2f,
    @location(1) color: vec4f,
};

@vertex
fn vs_panel(@location(0) pos: vec2f, @location(1) uv: vec2f, @location(2) color: u32) -> Out {
    var o: Out;
    o.pos = vec4f(2.0 * pos.x / p.size.x - 1.0, 1.0 - 2.0 * pos.y / p.size.y, 0.0, 1.0);
    o.uv = uv;
    o.color = unpack4x8unorm(color);
    return o;
}

fn srgb_to_linear(c: vec3f) -> vec3f {
    let low = c / 12.92;
    let high = pow((c + 0.055) / 1.055, vec3f(2.4));
    return select(high, low, c <= vec3f(0.04045));
}

@fragment
fn fs_panel(o: Out) -> @location(0) vec4f {
    return o.color * textureSample(tex, tex_sampler, o.uv);
}

@fragment
fn fs_panel_decode(o: Out) -> @location(0) vec4f {
    let c = o.color * textureSample(tex, tex_sampler, o.uv);
    return vec4f(srgb_to_linear(c.rgb), c.a);
}
