// Obstacles (circles, boxes, capsules of the scene), drawn over the display image after tone
// mapping: each shape filled, with an outline a fixed number of pixels wide outside its edge.
// The CPU tessellates every shape into triangles in world units (src/render/obstacles.rs); a
// vertex carries its world position, the outward normal of the edge it lies on and how far out
// (in outline widths: 0 on the edge, 1 at the outline's outer rim) it sits.
// No branch here depends on `p` alone (tests/long_render.rs).

// Keep in sync with `ObstacleParams` in src/render/obstacles.rs.
struct Params {
    view_min: vec2f,  // world point at the viewport's lower-left corner
    view_size: vec2f, // world units the viewport spans
    viewport: vec2f,  // pixels
    line_px: f32,     // outline width, pixels
    pad0: f32,
    fill: vec4f,      // rgb (sRGB-encoded, as the display image holds it), a: opacity
    line: vec4f,
}

@group(0) @binding(0) var<uniform> p: Params;

struct VsOut {
    @builtin(position) clip: vec4f,
    @location(0) color: vec4f,
}

@vertex
fn vs_obstacle(
    @location(0) pos: vec2f,
    @location(1) normal: vec2f,
    @location(2) out: f32,
) -> VsOut {
    var o: VsOut;
    let ndc = (pos - p.view_min) / p.view_size * 2.0 - 1.0;
    let shift = normal * out * p.line_px * 2.0 / p.viewport;
    o.clip = vec4f(ndc + shift, 0.0, 1.0);
    // The fill's triangles have out = -1 at every vertex; the outline's 0 or 1.
    o.color = select(p.line, p.fill, out < -0.5);
    return o;
}

@fragment
fn fs_obstacle(i: VsOut) -> @location(0) vec4f {
    return i.color;
}
