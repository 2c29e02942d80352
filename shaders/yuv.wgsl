// RGB (sRGB-encoded, as written by the tone-map pass) → planar Y'CbCr, BT.709, limited range,
// the layout FFmpeg's rawvideo reads: the Y plane, then U, then V, each row-major with no
// padding. 8-bit (yuv420p): every invocation writes one u32 = four samples of one plane.
// 10-bit (yuv420p10le, yuv422p10le): one u32 = two little-endian u16 samples. Chroma is the
// mean R'G'B' of a 2×2 block (4:2:0) or a 2×1 pair (4:2:2).

// Keep in sync with `YuvParams` in src/render/yuv.rs.
struct Params {
    width: u32,
    height: u32,
    y_words: u32,     // luma samples / samples per word, rounded up
    c_words: u32,     // chroma samples (one plane) / samples per word, rounded up
    frame: u32,       // seeds the dither
    bits: u32,        // 8 or 10
    chroma_rows: u32, // luma rows per chroma row: 2 (4:2:0) or 1 (4:2:2)
    pad0: u32,
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

// One code value at the output's depth, clamped to its range.
fn to_code(v: f32) -> u32 {
    return u32(clamp(round(v), 0.0, f32((1u << p.bits) - 1u)));
}

// The 8-bit levels (16..235 luma, 16..240 chroma) scaled to the output's depth.
fn scale() -> f32 {
    return f32(1u << (p.bits - 8u));
}

fn luma_code(i: u32) -> u32 {
    let n = p.width * p.height;
    if i >= n {
        return 0u;
    }
    let c = textureLoad(rgb, vec2u(i % p.width, i / p.width), 0).rgb;
    return to_code(scale() * (16.0 + 219.0 * luma(c)) + tpdf(i, 0u));
}

// The mean R'G'B' of chroma sample i (a 2×2 block, or 2×1 in 4:2:2).
fn block(i: u32) -> vec3f {
    let cw = p.width / 2u;
    let x = (i % cw) * 2u;
    let y = (i / cw) * p.chroma_rows;
    let a = textureLoad(rgb, vec2u(x, y), 0).rgb;
    let b = textureLoad(rgb, vec2u(x + 1u, y), 0).rgb;
    // The row below (not read for 4:2:2, whose last chroma row is the last row).
    let y1 = min(y + 1u, p.height - 1u);
    let c = textureLoad(rgb, vec2u(x, y1), 0).rgb;
    let d = textureLoad(rgb, vec2u(x + 1u, y1), 0).rgb;
    // `select`, not a branch on the uniform (see tests/long_render.rs).
    return select((a + b + c + d) * 0.25, (a + b) * 0.5, p.chroma_rows == 1u);
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
    // Samples per word and the bits between them.
    let per = select(4u, 2u, p.bits > 8u);
    let shift = 32u / per;
    // Loops run four times whatever the depth (a loop bound on the uniform alone is a branch
    // lavapipe leaks a shader for); samples past `per` are not stored.
    if w < p.y_words {
        var word = 0u;
        for (var k = 0u; k < 4u; k++) {
            word |= select(0u, luma_code(w * per + k) << (shift * k), k < per);
        }
        out[w] = word;
        return;
    }
    // One chroma word: the U samples and the V samples of the same blocks.
    let cw = w - p.y_words;
    let n = (p.width / 2u) * (p.height / p.chroma_rows);
    var u_word = 0u;
    var v_word = 0u;
    for (var k = 0u; k < 4u; k++) {
        let i = cw * per + k;
        if i < n && k < per {
            let c = block(i);
            let yy = luma(c);
            let cb = scale() * (128.0 + 224.0 * (c.b - yy) / 1.8556);
            let cr = scale() * (128.0 + 224.0 * (c.r - yy) / 1.5748);
            u_word |= to_code(cb + tpdf(i, 1u)) << (shift * k);
            v_word |= to_code(cr + tpdf(i, 2u)) << (shift * k);
        }
    }
    out[p.y_words + cw] = u_word;
    out[p.y_words + p.c_words + cw] = v_word;
}
