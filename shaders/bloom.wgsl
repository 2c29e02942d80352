// Bloom as in Call of Duty: Advanced Warfare (Jimenez, SIGGRAPH 2014), the method bevy uses:
// a bright pass in the first downsample (5 taps to half size, or 16 straight to a quarter
// above 540 rows), a chain of 13-tap downsamples to ever smaller mips, then 3×3 tent upsamples blended back up the chain (src/render/bloom.rs picks
// the blend factors so every level counts equally and the glow keeps the light it was given).
// The result in mip 0 is added to the image by the tone-map pass. No Karis average: its
// weights (1 / (1 + luma)) throw away 16% of a bright spot's light, and forge's sprites are
// smooth and at least 0.7 px wide, not the single-pixel fireflies it guards against.

// Keep in sync with `BloomParams` in src/render/bloom.rs.
struct Params {
    threshold: f32,  // luminance where the bright pass starts
    knee: f32,       // soft width of the threshold
    radius: f32,     // upsample filter radius in source texels
    _pad: f32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var src: texture_2d<f32>;
@group(0) @binding(2) var src_sampler: sampler;

struct VsOut {
    @builtin(position) clip: vec4f,
    @location(0) uv: vec2f,
}

@vertex
fn vs_fullscreen(@builtin(vertex_index) vi: u32) -> VsOut {
    let uv = vec2f(f32((vi << 1u) & 2u), f32(vi & 2u));
    var out: VsOut;
    out.clip = vec4f(uv * 2.0 - 1.0, 0.0, 1.0);
    out.uv = vec2f(uv.x, 1.0 - uv.y);
    return out;
}

fn luminance(c: vec3f) -> f32 {
    return dot(c, vec3f(0.2126, 0.7152, 0.0722));
}

fn s(uv: vec2f) -> vec3f {
    return textureSampleLevel(src, src_sampler, uv, 0.0).rgb;
}

// 13 taps: a centre, four inner and eight outer samples, combined as five 2×2 boxes. The
// four outer corner taps sit on the circle of the outer edge ones (2 texels out, at √2 per
// axis) rather than on the square's corners, so the mip chain blurs alike in every direction.
fn downsample13(uv: vec2f) -> vec3f {
    let t = 1.0 / vec2f(textureDimensions(src));
    let r = 1.41421356;
    let a = s(uv + t * vec2f(-r, -r));
    let b = s(uv + t * vec2f(0.0, -2.0));
    let c = s(uv + t * vec2f(r, -r));
    let d = s(uv + t * vec2f(-2.0, 0.0));
    let e = s(uv);
    let f = s(uv + t * vec2f(2.0, 0.0));
    let g = s(uv + t * vec2f(-r, r));
    let h = s(uv + t * vec2f(0.0, 2.0));
    let i = s(uv + t * vec2f(r, r));
    let j = s(uv + t * vec2f(-1.0, -1.0));
    let k = s(uv + t * vec2f(1.0, -1.0));
    let l = s(uv + t * vec2f(-1.0, 1.0));
    let m = s(uv + t * vec2f(1.0, 1.0));
    var o = e * 0.125;
    o += (a + c + g + i) * 0.03125;
    o += (b + d + f + h) * 0.0625;
    o += (j + k + l + m) * 0.125;
    return o;
}

// 5 taps (the dual-filter downsample): the centre 2×2 block and the four diagonal ones, each a
// single bilinear tap, weights ½ and ⅛. Full size → half (frames of up to 540 rows).
fn downsample5(uv: vec2f) -> vec3f {
    let t = 1.0 / vec2f(textureDimensions(src));
    var o = s(uv) * 0.5;
    o += (s(uv + t * vec2f(-1.0, -1.0)) + s(uv + t * vec2f(1.0, -1.0))
        + s(uv + t * vec2f(-1.0, 1.0)) + s(uv + t * vec2f(1.0, 1.0))) * 0.125;
    return o;
}

// Full size → a quarter: 16 bilinear taps at pixel corners 1 and 3 pixels from the centre,
// each the 2×2 average of the pixels around it, together the 8×8 pixels around the quarter
// texel with weights (1, 3, 3, 1)/8 per axis (every pixel counted once per tap; no gaps, so a
// small sprite glows the same wherever it lies). Each tap goes through the bright pass on its
// own, so a bright sprite is not dimmed below the threshold by the wide average first.
fn downsample_quarter(uv: vec2f) -> vec3f {
    let t = 1.0 / vec2f(textureDimensions(src));
    var o = vec3f(0.0);
    for (var j = 0; j < 4; j++) {
        let y = f32(2 * j - 3);
        let wy = select(1.0, 3.0, j == 1 || j == 2);
        var row = vec3f(0.0);
        for (var i = 0; i < 4; i++) {
            let x = f32(2 * i - 3);
            let wx = select(1.0, 3.0, i == 1 || i == 2);
            row += wx * bright(s(uv + t * vec2f(x, y)));
        }
        o += wy * row;
    }
    return o / 64.0;
}

// Soft-knee bright pass: keeps what is above the threshold, fading in over `knee`.
fn bright(c: vec3f) -> vec3f {
    let l = luminance(c);
    let soft = clamp(l - p.threshold + p.knee, 0.0, 2.0 * p.knee);
    let soft2 = soft * soft / (4.0 * p.knee + 1e-5);
    let w = max(soft2, l - p.threshold) / max(l, 1e-5);
    return c * w;
}

// The HDR image (full size) → the chain's first mip: half the size up to 540 rows, else a
// quarter (src/render/bloom.rs: `first_level`).
@fragment
fn fs_downsample_half(in: VsOut) -> @location(0) vec4f {
    return vec4f(bright(downsample5(in.uv)), 1.0);
}

@fragment
fn fs_downsample_quarter(in: VsOut) -> @location(0) vec4f {
    return vec4f(downsample_quarter(in.uv), 1.0);
}

@fragment
fn fs_downsample(in: VsOut) -> @location(0) vec4f {
    return vec4f(downsample13(in.uv), 1.0);
}

// Upsample, added (by the blend state) into the next larger mip: the centre and eight taps on
// a circle of `radius` texels (the diagonal ones at radius/√2 per axis, not at the square's
// corners as a 3×3 tent has them), so the halo summed over the mips stays round instead of
// growing into a rounded square. Weights sum to 1.
@fragment
fn fs_upsample(in: VsOut) -> @location(0) vec4f {
    let t = p.radius / vec2f(textureDimensions(src));
    let q = t * 0.70710678;
    var o = s(in.uv) * 0.25;
    var ring = s(in.uv + vec2f(-t.x, 0.0)) + s(in.uv + vec2f(t.x, 0.0))
        + s(in.uv + vec2f(0.0, -t.y)) + s(in.uv + vec2f(0.0, t.y));
    ring += s(in.uv + vec2f(-q.x, -q.y)) + s(in.uv + vec2f(q.x, -q.y))
        + s(in.uv + vec2f(-q.x, q.y)) + s(in.uv + vec2f(q.x, q.y));
    o += ring * 0.09375;
    return vec4f(o, 1.0);
}
