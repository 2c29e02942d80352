// HDR → display. Glow: bloom added, exposure, a hue-keeping filmic curve (ACES on the
// brightest channel, so a bright crowd stays its colour instead of going white), the light
// screened over the background. Ink: the agents' energy sets the opacity of their ink
// (1 − e^(−E)), their mean colour its colour, over the background (a sky). Then grading,
// vignette and sRGB encoding done here (the target is Rgba8Unorm, or Rgba16Float for deep outputs,
// so the values read back are sRGB). Or, for EXR, scene-linear light with no tone curve.
// A video frame with nothing drawn over its display image goes straight into the Y'CbCr
// planes (`fs_tonemap_planes420`/`422`, at the chroma planes' size, with shaders/ycbcr.wgsl
// appended to this file): no display image is written or read back, and the light is dithered
// once, into the codes. The trails are not the tone map's: the next frame's HDR target starts
// from this one's (src/render/fade.rs, src/render/splat.rs).

// Keep in sync with `TonemapParams` in src/render/tonemap.rs.
struct Params {
    background: vec4f, // linear RGB at the bottom of the frame, a unused
    background_top: vec4f, // linear RGB at the top (a vertical gradient), a unused
    exposure: f32,
    bloom: f32,        // strength of the bloom texture added to the HDR image
    vignette: f32,     // 0 = none, 1 = corners fully dark
    aspect: f32,       // width / height
    seed: u32,         // the dither's seed this frame: pcg(frame)
    dither: f32,       // 1: dither for an 8-bit store; 0: none (a half-float target)
    linear: u32,       // 1: scene-linear light out (EXR): no tone curve, no sRGB encoding
    pad0: f32,
    ink: u32,          // 1: dark agents over the background (ink); 0: light added (glow)
    contrast: f32,     // grading, around mid grey (1 = none)
    saturation: f32,   // grading (1 = none)
    lift: f32,         // grading: raises the blacks (0 = none)
    gamma: f32,        // grading: of the mid-tones (1 = none)
    gain: f32,         // grading: scales the whites (1 = none)
    bars: f32,         // the background outside the world's rectangle, relative (1 = same)
    alpha: u32,        // 1: a transparent background (ALPHA)
    plate: u32,        // 1: the plate in place of the background colour (PLATE)
    pad1: u32,
    pad2: u32,
    pad3: u32,
    world_rect: vec4f, // the world's rectangle on screen (uv: x0, y0, x1, y1)
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var hdr: texture_2d<f32>;
@group(0) @binding(2) var bloom_tex: texture_2d<f32>;
@group(0) @binding(3) var linear_sampler: sampler;
// The plate (`--background-image`) at the output's size, sRGB (read as linear light).
@group(0) @binding(5) var plate: texture_2d<f32>;
// The planes' entries only: the conversion's parameters.
@group(0) @binding(4) var<uniform> ycbcr: YcbcrParams;

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

// Krzysztof Narkowicz's fit of the ACES reference rendering transform.
fn aces(x: vec3f) -> vec3f {
    let a = 2.51;
    let b = 0.03;
    let c = 2.43;
    let d = 0.59;
    let e = 0.14;
    return clamp((x * (a * x + b)) / (x * (c * x + d) + e), vec3f(0.0), vec3f(1.0));
}

// The sRGB curve. Above its linear toe, 1.055 c^(1/2.4) - 0.055 is fitted (minimax over
// [0.0031308, 1]) by a sum of c^(1/2), c^(1/4), c^(1/8) and c: within 0.008 of an 8-bit
// step everywhere, and three square roots cost lavapipe ~2 ms of CPU less a 720p frame than
// pow's exp2(log2).
fn srgb_encode(c: vec3f) -> vec3f {
    let lo = c * 12.92;
    let s1 = sqrt(c);
    let s2 = sqrt(s1);
    let s3 = sqrt(s2);
    let hi = 0.653936207 * s1 + 0.688820064 * s2 - 0.318561673 * s3 - 0.020178843 * c
        - 0.004047161;
    return select(hi, lo, c <= vec3f(0.0031308));
}

// Dither in units of one 8-bit step, fixed per pixel and frame: added before the 8-bit store,
// it turns the steps of smooth gradients (a sky, the vignette, bloom, trails) into fine grain
// and keeps the mean. Down each column it is ordered: four levels, -0.6, -0.2, 0.2 and 0.6 of
// a step, in the cycle 0, 2, 1, 3 from a phase drawn per column, channel and frame. However
// steep the gradient, no channel then keeps one value for more than four rows (random noise
// leaves runs of seven or more by chance); across a row the phases are independent, so it
// reads as grain (a spread of 0.45 of a step; triangular noise's is 0.41).
fn column_dither(px: vec2i, seed: u32) -> vec3f {
    let column = pcg(u32(px.x) ^ seed);
    let phase = vec3u(column, pcg(column), pcg(column ^ 0x9e3779b9u));
    let k = (vec3u(u32(px.y)) + phase) & vec3u(3u);
    let level = vec3f((vec3u(0xd8u) >> (k * 2u)) & vec3u(3u));
    return (level - 1.5) * 0.4;
}

// The filmic curve on the brightest channel, the others kept in proportion (a little of the
// per-channel curve mixed in lets the very brightest roll towards white, as film does).
fn tone(x: vec3f) -> vec3f {
    let m = max(max(x.r, x.g), max(x.b, 1e-6));
    let kept = x * (aces(vec3f(m)).r / m);
    return mix(kept, aces(x), 0.15);
}

// Lift, gamma and gain, contrast around mid grey, on display-encoded values.
fn grade(e: vec3f) -> vec3f {
    let lifted = p.gain * (e + p.lift * (vec3f(1.0) - e));
    let curved = pow(max(lifted, vec3f(0.0)), vec3f(1.0 / max(p.gamma, 1e-3)));
    return (curved - 0.5) * p.contrast + 0.5;
}

@fragment
fn fs_tonemap(in: VsOut) -> @location(0) vec4f {
    return shade(in, textureLoad(hdr, vec2i(in.clip.xy), 0));
}

// Which parts of the shading this pipeline runs: pipeline constants, set from the frame's
// parameters (`TonemapVariant` in src/render/tonemap.rs), so that a part a look does not use
// costs nothing. (A branch on the uniforms instead would make lavapipe leak a compiled shader
// per draw; see tests/long_render.rs. Computing every part and choosing with `select()` cost
// ~45 ms of CPU a 720p frame on lavapipe.) With a part off, its uniform holds the value that
// makes it the identity: `bloom` 0, `vignette` 0, `dither` 0, the grade neutral.
override INK: bool = false;    // dark agents over the background (ink); else light added (glow)
override LINEAR: bool = false; // scene-linear light out (EXR): no tone curve, no sRGB encoding
override BLOOM: bool = true;   // the bloom texture added (p.bloom > 0)
override VIGNETTE: bool = true; // p.vignette > 0
override GRADE: bool = true;   // saturation, lift, gamma, gain or contrast not neutral
override DITHER: bool = true;  // p.dither > 0 (an 8-bit store)
override ALPHA: bool = false;  // a transparent background: the light over nothing, its alpha
override PLATE: bool = false;  // the plate in place of the background colour

// The display colour of the pixel at `in` whose HDR light (rgb) and energy (a) are `hdr_in`.
fn shade(in: VsOut, hdr_in: vec4f) -> vec4f {
    let px = vec2i(in.clip.xy);
    var c = hdr_in.rgb;
    if BLOOM {
        c = hdr_in.rgb + p.bloom * textureSampleLevel(bloom_tex, linear_sampler, in.uv, 0.0).rgb;
    }
    let light = c * p.exposure;
    // The background: a vertical gradient (uv.y runs 0 at the top to 1 at the bottom), a
    // shade darker outside the world (a letterboxed world's bars: its edge shows, quietly).
    let inside = all(in.uv >= p.world_rect.xy) && all(in.uv <= p.world_rect.zw);
    var sky = mix(p.background_top.rgb, p.background.rgb, in.uv.y)
        * select(p.bars, 1.0, inside);
    if PLATE {
        sky = textureLoad(plate, px, 0).rgb;
    }
    var rgb: vec3f;
    if INK {
        // Ink: opacity from the energy, colour the agents' mean.
        let energy = max(hdr_in.a, 0.0);
        let opacity = 1.0 - exp(-energy * p.exposure);
        let ink_colour = c / max(energy, 1e-6);
        rgb = mix(sky, ink_colour, opacity);
    } else {
        // Glow: the light screened over the sky.
        rgb = sky + (vec3f(1.0) - sky) * tone(light);
    }
    var v = 1.0;
    if VIGNETTE {
        let d = (in.uv - 0.5) * vec2f(p.aspect, 1.0);
        v = 1.0 - p.vignette * smoothstep(0.35, 1.1, length(d) * 1.2);
    }
    if ALPHA {
        return over_nothing(px, c, light, hdr_in.a, v);
    }
    if LINEAR {
        // Linear light adds to the background (a screen blend needs light bounded by 1); ink
        // is the inked sky.
        var scene = sky + light;
        if INK {
            scene = rgb;
        }
        return vec4f(scene * v, 1.0);
    }
    if GRADE {
        let luma = dot(rgb, vec3f(0.2126, 0.7152, 0.0722));
        rgb = mix(vec3f(luma), rgb, p.saturation);
    }
    rgb *= v;
    return vec4f(display_of(px, rgb), 1.0);
}

// Linear light → the display's code: sRGB-encoded, graded, dithered for an 8-bit store.
fn display_of(px: vec2i, rgb: vec3f) -> vec3f {
    var encoded = srgb_encode(clamp(rgb, vec3f(0.0), vec3f(1.0)));
    if GRADE {
        encoded = grade(encoded);
    }
    var display = clamp(encoded, vec3f(0.0), vec3f(1.0));
    if DITHER {
        display += p.dither * column_dither(px, p.seed) / 255.0;
    }
    return display;
}

// A transparent background (ALPHA): the light's own colour and its coverage, so that "over" a
// plate gives what the opaque render gives over a background of that colour. Ink is exactly
// that: its colour at its opacity. Glow screens its tone-mapped light T over the background,
// 1 - (1 - sky)(1 - T) per channel; one alpha cannot say that, so alpha is T's brightest
// channel and the colour T / alpha: exact over black and for grey light, a little darker than
// the screen where saturated light lies over a bright plate. The vignette fades the alpha.
// Display outputs get the straight colour, sRGB-encoded and graded; linear light (EXR) the
// premultiplied light.
fn over_nothing(px: vec2i, c: vec3f, light: vec3f, energy: f32, v: f32) -> vec4f {
    var colour: vec3f;
    var a: f32;
    if INK {
        let e = max(energy, 0.0);
        a = 1.0 - exp(-e * p.exposure);
        colour = c / max(e, 1e-6);
    } else {
        let t = tone(light);
        a = max(max(t.r, t.g), t.b);
        colour = t / max(a, 1e-6);
    }
    a = clamp(a * v, 0.0, 1.0);
    if LINEAR {
        if INK {
            return vec4f(colour * a, a);
        }
        return vec4f(light * v, a);
    }
    if GRADE {
        let luma = dot(colour, vec3f(0.2126, 0.7152, 0.0722));
        colour = mix(vec3f(luma), colour, p.saturation);
    }
    return vec4f(display_of(px, colour), a);
}

// The display colour of pixel `px` (R'G'B', undithered: DITHER is off for these entries).
fn shade_pixel(px: vec2u) -> vec3f {
    let light = textureLoad(hdr, px, 0);
    var at: VsOut;
    at.clip = vec4f(vec2f(px) + 0.5, 0.0, 1.0);
    at.uv = at.clip.xy / vec2f(textureDimensions(hdr));
    return shade(at, light).rgb;
}

@fragment
fn fs_tonemap_planes420(@builtin(position) pos: vec4f) -> Planes420 {
    let at = vec2u(pos.xy);
    let x = at.x * 2u;
    let y = at.y * 2u;
    let a = shade_pixel(vec2u(x, y));
    let b = shade_pixel(vec2u(x + 1u, y));
    let c = shade_pixel(vec2u(x, y + 1u));
    let d = shade_pixel(vec2u(x + 1u, y + 1u));
    return planes420(at, a, b, c, d);
}

@fragment
fn fs_tonemap_planes422(@builtin(position) pos: vec4f) -> Planes422 {
    let at = vec2u(pos.xy);
    let x = at.x * 2u;
    let a = shade_pixel(vec2u(x, at.y));
    let b = shade_pixel(vec2u(x + 1u, at.y));
    return planes422(at, a, b);
}
