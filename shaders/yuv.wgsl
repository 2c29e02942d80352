// RGB (sRGB-encoded, as written by the tone-map pass) → yuv420p, BT.709, limited range,
// the layout FFmpeg's rawvideo reads: the Y plane, then U, then V, each row-major with no
// padding. Every invocation writes one u32 = four bytes of one plane; chroma is the mean of
// a 2×2 block of R'G'B'.

// Keep in sync with `YuvParams` in src/render/yuv.rs.
struct Params {
    width: u32,
    height: u32,
    y_words: u32,   // ceil(width * height / 4)
    c_words: u32,   // ceil(width/2 * height/2 / 4)
    frame: u32,     // seeds the dither
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var rgb: texture_2d<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

// Keep in sync with `WORKGROUP` in src/render/yuv.rs.
const WORKGROUP: u32 = 64u;

fn luma(c: vec3f) -> f32 {
    return dot(c, vec3f(0.2126, 0.7152, 0.0722));
}

// A well-mixed 32-bit hash (PCG's output permutation).
fn pcg(v: u32) -> u32 {
    let state = v * 747796405u + 2891336453u;
    let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
    return (word >> 22u) ^ word;
}

// Triangular-PDF noise in (-1, 1) code values, fixed per sample, plane and frame: the 8-bit
// store then shows fine grain instead of the steps of smooth gradients, with the same mean.
fn tpdf(i: u32, plane: u32) -> f32 {
    let a = pcg(i ^ pcg(plane ^ pcg(p.frame)));
    let b = pcg(a);
    return (f32(a >> 8u) - f32(b >> 8u)) / 16777216.0;
}

fn to_byte(v: f32) -> u32 {
    return u32(clamp(round(v), 0.0, 255.0));
}

fn y_byte(i: u32) -> u32 {
    let n = p.width * p.height;
    if i >= n {
        return 0u;
    }
    let c = textureLoad(rgb, vec2u(i % p.width, i / p.width), 0).rgb;
    return to_byte(16.0 + 219.0 * luma(c) + tpdf(i, 0u));
}

// The mean R'G'B' of chroma sample i (a 2×2 block).
fn block(i: u32) -> vec3f {
    let cw = p.width / 2u;
    let x = (i % cw) * 2u;
    let y = (i / cw) * 2u;
    let a = textureLoad(rgb, vec2u(x, y), 0).rgb;
    let b = textureLoad(rgb, vec2u(x + 1u, y), 0).rgb;
    let c = textureLoad(rgb, vec2u(x, y + 1u), 0).rgb;
    let d = textureLoad(rgb, vec2u(x + 1u, y + 1u), 0).rgb;
    return (a + b + c + d) * 0.25;
}

@compute @workgroup_size(WORKGROUP)
fn cs_yuv(
    @builtin(global_invocation_id) gid: vec3u,
    @builtin(num_workgroups) groups: vec3u,
) {
    // A 2D dispatch when one row of workgroups would exceed the per-dimension limit.
    let w = gid.x + gid.y * groups.x * WORKGROUP;
    if w >= p.y_words + p.c_words {
        return;
    }
    if w < p.y_words {
        let i = w * 4u;
        out[w] = y_byte(i) | (y_byte(i + 1u) << 8u) | (y_byte(i + 2u) << 16u)
            | (y_byte(i + 3u) << 24u);
        return;
    }
    // One chroma word: four U bytes and the four V bytes of the same samples.
    let cw = w - p.y_words;
    let n = (p.width / 2u) * (p.height / 2u);
    var u_word = 0u;
    var v_word = 0u;
    for (var k = 0u; k < 4u; k++) {
        let i = cw * 4u + k;
        if i < n {
            let c = block(i);
            let yy = luma(c);
            let cb = 128.0 + 224.0 * (c.b - yy) / 1.8556;
            let cr = 128.0 + 224.0 * (c.r - yy) / 1.5748;
            u_word |= to_byte(cb + tpdf(i, 1u)) << (8u * k);
            v_word |= to_byte(cr + tpdf(i, 2u)) << (8u * k);
        }
    }
    out[p.y_words + cw] = u_word;
    out[p.y_words + p.c_words + cw] = v_word;
}
