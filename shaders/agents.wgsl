// Agents as instanced soft point sprites (a bright core and a faint halo, or a dart along the
// velocity), added into the HDR target. One instance per agent; six vertices (two triangles)
// per copy, nine copies in a wrapping world so that a sprite crossing the seam shows on both
// sides (and a tiled frame shows the world's repeats); four where the view cannot show more
// (`copy_shift`).
//
// A crowd shares its light: `vs_count`/`vs_count3` first add one per agent into the crowd
// texture (a pixel per 8×8 of the frame); each sprite then divides its light by how many
// sprites overlap it there, to the power `stacking`, so a dense flock keeps its individuals
// instead of piling into white.
//
// 3D recordings seen through a perspective camera use `vs_main3` (one copy; sprites shrink
// with distance and fade towards the background with fog) and `vs_box`/`fs_box` for the
// optional wireframe of the world box. The colour by mode is colour.wgsl's (appended).

// Keep in sync with `AgentParams` in src/render/agents.rs.
struct Params {
    view_min: vec2f,   // world point at the viewport's lower-left corner
    view_size: vec2f,  // world units the viewport spans
    world: vec2f,      // world size (the wrap period)
    viewport: vec2f,   // pixels
    range: vec2f,      // colour value mapped to the LUT's ends (speed or density)
    radius_px: f32,    // halo radius in pixels
    core: f32,         // core radius as a fraction of the halo radius
    mode: u32,         // 0 speed, 1 heading, 2 density, 3 fixed, 4 relative heading, 5 species
    copies: u32,       // 1; in a wrapping world 9, or 4 (see copy_shift)
    intensity: f32,    // brightness of one sprite's core
    halo: f32,         // brightness of the halo relative to the core
    // 3D only (zero for 2D).
    view_proj: mat4x4f, // world → clip
    eye: vec3f,         // camera position
    fog: f32,           // 0..1: how far the farthest agents fade towards the background
    period: vec3f,      // world size (the wrap period; the box's far corner)
    ref_dist: f32,      // distance at which a sprite has radius_px
    anchor: vec3f,      // with min_image: agents show at their image nearest this point
    min_image: u32,     // 1: wrap positions around `anchor` (follow camera, periodic world)
    fog_near: f32,      // distance where fog starts
    fog_far: f32,       // distance where fog is full
    box_level: f32,     // brightness of the box's lines
    near: f32,          // agents closer to the eye than this are not drawn
    shutter: f32,       // motion blur: seconds the shutter is open (0 = none)
    stacking: f32,      // 0..1: a crowd's sprites share their light (the power of the overlap)
    stack_area: f32,    // one sprite's light footprint over a crowd cell's area
    shape: u32,         // 0 dot, 1 dart
    mean_heading: f32,  // the flock's mean direction this frame, radians (relative heading)
    sized: u32,         // 1: each sprite's size is its species' multiple (location 7), else 1
    pad1: f32,
    pad2: f32,
    fixed: vec4f,       // rgb: the fixed colour (linear); a: 1 if one is given
}

// No `if`, `switch` or loop here may depend on `p` alone: such branches become `select`s.
// Mesa's lavapipe 22.x folds uniform values into a fresh copy of the shader on every draw
// that has one, and never frees it (tests/long_render.rs checks the memory and the rule).
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var lut: texture_2d<f32>;
@group(0) @binding(2) var lut_sampler: sampler;
@group(0) @binding(3) var crowd: texture_2d<f32>;

struct VsOut {
    @builtin(position) clip: vec4f,
    // Sprite coordinates in halo radii: the agent at (0, 0); with motion blur, x runs along
    // the streak, which reaches back to (-streak, 0).
    @location(0) uv: vec2f,
    @location(1) color: vec3f,
    // Streak length in halo radii (0: a round sprite).
    @location(2) streak: f32,
    // A dart's length over its width: DART_LENGTH, or 1 for a round dart (0: not a dart).
    @location(3) dart: f32,
}

// How long a dart is, in halo radii along the velocity (its width is one).
const DART_LENGTH: f32 = 2.2;

// A sprite's quad corner `c` (±1, ±1) around the agent at `head` (NDC) with halo radius
// `radius` px, stretched back to `tail` (NDC: where it was when the shutter opened).
// Without blur (tail == head) this is exactly the round sprite's square.
// A dart (`p.shape` 1, no motion blur) points along `heading` (a screen direction): its quad
// is DART_LENGTH radii long that way.
fn place(out: ptr<function, VsOut>, head: vec2f, tail: vec2f, radius: f32, c: vec2f, heading: vec2f) {
    let seg = (head - tail) * 0.5 * p.viewport;
    let len = length(seg);
    let moving = len > 1e-3 * radius;
    let hl = length(heading);
    // A dart; for an agent standing still (no heading) a round one: the dart's light without
    // its length or taper.
    let dart = (p.shape == 1u) & !moving;
    let pointed = dart & (hl > 0.0);
    let axis = select(select(vec2f(1.0, 0.0), heading / max(hl, 1e-20), pointed), seg / max(len, 1e-20), moving);
    let streak = select(0.0, len / radius, moving);
    let perp = vec2f(-axis.y, axis.x);
    let stretch = select(1.0, DART_LENGTH, pointed);
    let along = select(c.x, select(-1.0 - streak, 1.0, c.x > 0.0), moving);
    let offset = (axis * along * stretch + perp * c.y) * radius;
    (*out).clip = vec4f(head + offset * 2.0 / p.viewport, 0.0, 1.0);
    (*out).uv = vec2f(along, c.y);
    (*out).streak = streak;
    (*out).dart = select(0.0, select(1.0, DART_LENGTH, pointed), dart);
}

// The share of its light a sprite at `ndc` keeps in its crowd (1 alone, less in a crowd).
fn crowd_share(ndc: vec2f) -> f32 {
    let uv = vec2f(ndc.x * 0.5 + 0.5, 0.5 - ndc.y * 0.5);
    let count = textureSampleLevel(crowd, lut_sampler, uv, 0.0).r;
    let overlap = max(count * p.stack_area, 1.0);
    return pow(overlap, -p.stacking);
}

// Where copy `copy` of the agent at `pos` is drawn, relative to it: `p.copies` 9, the 3×3
// tiles around the world; 4, the agent and its images across the nearer vertical edge, the
// nearer horizontal one and both, which are all a view reaching less than half a world past
// the world's edges can show (src/render/draw.rs decides); 1, only the agent. Every shift is
// 0 or exactly ±world, as the nine tiles' are, so a copy drawn lands where the nine put it.
fn copy_shift(copy: u32, pos: vec2f) -> vec2f {
    let tile = vec2f(f32(copy % 3u) - 1.0, f32(copy / 3u) - 1.0) * p.world;
    let toward = select(vec2f(-1.0), vec2f(1.0), pos < p.world * 0.5) * p.world;
    let near = select(vec2f(0.0), toward, vec2<bool>((copy & 1u) != 0u, (copy & 2u) != 0u));
    return select(select(vec2f(0.0), tile, p.copies == 9u), near, p.copies == 4u);
}

const HALF_PI: f32 = 1.5707963267948966;

fn corner(i: u32) -> vec2f {
    // Two triangles: (-1,-1) (1,-1) (1,1) / (-1,-1) (1,1) (-1,1)
    switch i {
        case 0u: { return vec2f(-1.0, -1.0); }
        case 1u: { return vec2f(1.0, -1.0); }
        case 2u: { return vec2f(1.0, 1.0); }
        case 3u: { return vec2f(-1.0, -1.0); }
        case 4u: { return vec2f(1.0, 1.0); }
        default: { return vec2f(-1.0, 1.0); }
    }
}

@vertex
fn vs_main(
    @builtin(vertex_index) vi: u32,
    @location(0) x: f32,
    @location(1) y: f32,
    @location(2) vx: f32,
    @location(3) vy: f32,
    @location(4) density: f32,
    @location(7) size: f32,
) -> VsOut {
    var out: VsOut;
    let radius = p.radius_px * select(1.0, size, p.sized == 1u);
    let copy = vi / 6u;
    let c = corner(vi % 6u);
    let world_pos = vec2f(x, y) + copy_shift(copy, vec2f(x, y));
    let ndc = (world_pos - p.view_min) / p.view_size * 2.0 - 1.0;
    let tail_ndc = (world_pos - vec2f(vx, vy) * p.shutter - p.view_min) / p.view_size * 2.0 - 1.0;
    let r_ndc = vec2f(radius) * 2.0 / p.viewport;
    // A copy (or an agent) entirely outside the view becomes a degenerate triangle.
    let near_edge = min(abs(ndc), abs(tail_ndc));
    let crosses = sign(ndc) != sign(tail_ndc);
    if any(near_edge > vec2f(1.0) + r_ndc & !crosses) || x != x || y != y {
        return hidden();
    }
    // Screen direction of motion (y up in NDC and here alike).
    let heading = vec2f(vx, vy) / p.view_size;
    place(&out, ndc, tail_ndc, radius, c, heading);

    let t = by_mode(length(vec2f(vx, vy)), atan2(vy, vx), density);
    out.color = colour_of(t) * crowd_share(ndc);
    return out;
}

fn hidden() -> VsOut {
    var out: VsOut;
    out.clip = vec4f(2.0, 2.0, 2.0, 1.0);
    out.uv = vec2f(0.0);
    out.color = vec3f(0.0);
    out.streak = 0.0;
    out.dart = 0.0;
    return out;
}

// Remaining brightness after fog at distance `dist` from the eye.
fn fog_factor(dist: f32) -> f32 {
    let f = clamp((dist - p.fog_near) / max(p.fog_far - p.fog_near, 1e-6), 0.0, 1.0);
    return 1.0 - p.fog * f;
}

@vertex
fn vs_main3(
    @builtin(vertex_index) vi: u32,
    @location(0) x: f32,
    @location(1) y: f32,
    @location(2) z: f32,
    @location(3) vx: f32,
    @location(4) vy: f32,
    @location(5) vz: f32,
    @location(6) density: f32,
    @location(7) size: f32,
) -> VsOut {
    var out: VsOut;
    let c = corner(vi % 6u);
    let raw = vec3f(x, y, z);
    let pos = select(raw, raw - round((raw - p.anchor) / p.period) * p.period, p.min_image == 1u);
    let clip = p.view_proj * vec4f(pos, 1.0);
    if clip.w <= p.near || x != x || y != y || z != z {
        return hidden();
    }
    let dist = distance(pos, p.eye);
    let ndc = clip.xy / clip.w;
    // Perspective: a sprite's size falls with distance; a core stays at least ~0.7 px.
    let scale = clamp(p.ref_dist / max(dist, 1e-6), 0.25, 4.0);
    let sized = p.radius_px * select(1.0, size, p.sized == 1u);
    let radius = max(sized * scale, 0.7 / p.core);
    let r_ndc = vec2f(radius) * 2.0 / p.viewport;
    // Motion blur: where the agent was when the shutter opened, seen by the same camera (no
    // streak if that point is behind the eye).
    let before = p.view_proj * vec4f(pos - vec3f(vx, vy, vz) * p.shutter, 1.0);
    let tail_ndc = select(ndc, before.xy / before.w, before.w > p.near);
    let near_edge = min(abs(ndc), abs(tail_ndc));
    let crosses = sign(ndc) != sign(tail_ndc);
    if any(near_edge > vec2f(1.0) + r_ndc & !crosses) {
        return hidden();
    }
    // Screen direction of motion: where the agent will be a moment on, seen by the camera.
    let ahead = p.view_proj * vec4f(pos + vec3f(vx, vy, vz) * 0.05, 1.0);
    let heading = select(vec2f(0.0), ahead.xy / ahead.w - ndc, ahead.w > p.near);
    place(&out, ndc, tail_ndc, radius, c, heading);

    let v = vec3f(vx, vy, vz);
    // Heading: azimuth → the cyclic map; elevation → brightness (×0.5 diving, ×2 climbing).
    let t = by_mode(length(v), atan2(vy, vx), density);
    let elevation = asin(clamp(vz / max(length(v), 1e-20), -1.0, 1.0));
    let brightness = select(1.0, exp2(elevation / HALF_PI), p.mode == 1u);
    out.color = colour_of(t) * brightness * fog_factor(dist) * crowd_share(ndc);
    return out;
}

struct CountOut {
    @builtin(position) clip: vec4f,
}

fn count_hidden() -> CountOut {
    var out: CountOut;
    out.clip = vec4f(2.0, 2.0, 2.0, 1.0);
    return out;
}

// One point per agent (a vertex; a wrapped copy is an instance) into the crowd texture, where
// vs_main places it.
@vertex
fn vs_count(@builtin(instance_index) copy: u32, @location(0) x: f32, @location(1) y: f32) -> CountOut {
    let ndc = (vec2f(x, y) + copy_shift(copy, vec2f(x, y)) - p.view_min) / p.view_size * 2.0 - 1.0;
    if any(abs(ndc) > vec2f(1.0)) || x != x || y != y {
        return count_hidden();
    }
    var out: CountOut;
    out.clip = vec4f(ndc, 0.0, 1.0);
    return out;
}

// The same through the 3D camera.
@vertex
fn vs_count3(@location(0) x: f32, @location(1) y: f32, @location(2) z: f32) -> CountOut {
    let raw = vec3f(x, y, z);
    let pos = select(raw, raw - round((raw - p.anchor) / p.period) * p.period, p.min_image == 1u);
    let clip = p.view_proj * vec4f(pos, 1.0);
    if clip.w <= p.near || x != x || y != y || z != z {
        return count_hidden();
    }
    var out: CountOut;
    out.clip = vec4f(clip.xy / clip.w, 0.0, 1.0);
    return out;
}

@fragment
fn fs_count() -> @location(0) vec4f {
    return vec4f(1.0);
}

// The world box's twelve edges as a line list: corner indices (bit 0 x, bit 1 y, bit 2 z).
const BOX_CORNERS: array<u32, 24> = array<u32, 24>(
    0u, 1u, 2u, 3u, 4u, 5u, 6u, 7u,
    0u, 2u, 1u, 3u, 4u, 6u, 5u, 7u,
    0u, 4u, 1u, 5u, 2u, 6u, 3u, 7u,
);

@vertex
fn vs_box(@builtin(vertex_index) vi: u32) -> VsOut {
    var corners = BOX_CORNERS;
    let k = corners[min(vi, 23u)];
    let unit = vec3f(f32(k & 1u), f32((k >> 1u) & 1u), f32((k >> 2u) & 1u)) * p.period;
    // With min_image agents show at their images nearest the anchor: the box is the cell
    // around it.
    let pos = select(unit, unit + p.anchor - 0.5 * p.period, p.min_image == 1u);
    var out: VsOut;
    out.clip = p.view_proj * vec4f(pos, 1.0);
    out.uv = vec2f(0.0);
    out.color = vec3f(p.box_level * fog_factor(distance(pos, p.eye)));
    out.streak = 0.0;
    out.dart = 0.0;
    return out;
}

@fragment
fn fs_box(in: VsOut) -> @location(0) vec4f {
    return vec4f(in.color, in.color.r);
}

// erf, Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7).
fn erf(x: f32) -> f32 {
    let t = 1.0 / (1.0 + 0.3275911 * abs(x));
    let y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
        + 0.254829592) * t * exp(-x * x);
    return select(-y, y, x >= 0.0);
}

// The Gaussian core, exp(-2 r² / core²), averaged over the pixel around `uv` (`pixel`: its
// size in sprite units): a core smaller than a pixel keeps its light wherever it falls
// between pixel centres, so sub-pixel motion does not twinkle. Separable: one erf pair per
// axis (the mean of exp(-t²/a²) over [t-h, t+h] is a·√π/(4h)·(erf((t+h)/a) − erf((t-h)/a))).
// With every core at least 2 px wide (`WIDE_CORE`) the average is, within 0.2% of the core's
// peak, the Gaussian widened by the pixel's variance (a twelfth of its size squared per axis),
// its light kept: one exp instead of four erfs, 3 ms of CPU less a 720p frame of 2000 agents
// on lavapipe.
fn core_over(uv: vec2f, pixel: vec2f) -> f32 {
    if WIDE_CORE {
        let s2 = p.core * p.core * 0.25;
        let w2 = vec2f(s2) + pixel * pixel * (1.0 / 12.0);
        let q = uv * uv / w2;
        return s2 * inverseSqrt(w2.x * w2.y) * exp(-0.5 * (q.x + q.y));
    }
    let a = p.core * 0.70710678;
    let h = max(pixel * 0.5, vec2f(1e-4));
    let gx = (erf((uv.x + h.x) / a) - erf((uv.x - h.x) / a)) * a * 0.88622693 / (2.0 * h.x);
    let gy = (erf((uv.y + h.y) / a) - erf((uv.y - h.y) / a)) * a * 0.88622693 / (2.0 * h.y);
    return gx * gy;
}

// The round sprite's halo at squared radius r2 (in halo radii): a Gaussian, the one the splat
// path (splat.wgsl, src/render/splat.rs) filters every sprite with, so that both draw the same
// sprite. It holds the light of (1 − r²)² e^(−3r²) and keeps within 2.2% of its peak.
const HALO_PEAK: f32 = 1.02155818;
const HALO_WIDTH: f32 = 5.62850488;

fn halo_at(r2: f32) -> f32 {
    return p.halo * HALO_PEAK * exp(-HALO_WIDTH * r2);
}

// Which sprites a frame can hold: a pipeline constant, set per frame (`AgentParams::shapes` in
// src/render/agents.rs). 0: round dots only (shape dot, shutter 0); 1: darts only (shape dart,
// shutter 0); 2: anything, motion-blurred streaks too. Lavapipe runs both sides of a branch for
// every fragment, taken or not, so the shapes a frame cannot hold are compiled out: at 720p they
// cost a round dot's frame ~9 ms of CPU and a dart's ~20 ms (2000 agents).
override SHAPES: u32 = 2u;
// Every round sprite's core of the frame is at least 2 px wide: `core_over` takes the widened
// Gaussian (src/render/agents.rs: `WIDE_CORE_PX`, chosen per frame by src/render/draw.rs).
override WIDE_CORE: bool = false;

@fragment
fn fs_main(in: VsOut) -> @location(0) vec4f {
    // A pixel's extent in sprite units (derivatives before any branch: they need uniform
    // control flow).
    let pixel = fwidth(in.uv);
    let r2 = dot(in.uv, in.uv);
    let k = 1.0 / (p.core * p.core);
    let s = in.streak;
    // Nearest point of the streak (the segment from (-s, 0) to (0, 0)).
    let x = in.uv.x;
    let y = in.uv.y;
    let dx = x - clamp(x, -s, 0.0);
    if select(dx * dx + y * y, r2, s == 0.0) >= 1.0 {
        discard;
    }
    // A dart: head at +x, its width tapering to a third at the tail; the same core and halo
    // over the tapered distance, its light divided by its length (near a dot's).
    if SHAPES == 1u || (SHAPES == 2u && in.dart > 0.0) {
        let w = select(1.0, mix(0.35, 1.0, clamp((x + 1.0) * 0.5, 0.0, 1.0)), in.dart > 1.0);
        let q2 = x * x + (y * y) / (w * w);
        let edge = max(1.0 - q2, 0.0);
        let body = exp(-q2 * k * 2.0) + p.halo * edge * edge * exp(-q2 * 3.0);
        let e = p.intensity * body * w / in.dart;
        return vec4f(in.color * e, e);
    }
    // The round sprite, exactly as without motion blur. A sprite's fragments share its
    // streak, so this branch is on the vertex's output, not a uniform.
    if SHAPES == 0u || s == 0.0 {
        let round = core_over(in.uv, pixel) + halo_at(r2);
        let e = p.intensity * round;
        return vec4f(in.color * e, e);
    }
    // Blurred: the sprite averaged over its positions along the streak, so its light is
    // kept. The Gaussian core in closed form (erf along the streak); the halo sampled.
    let a = 2.0 * k;
    let ra = sqrt(a);
    let core_b = exp(-a * y * y) * 0.886226925 / (ra * s)
        * (erf(ra * (x + s)) - erf(ra * x));
    let n = u32(clamp(ceil(s * 4.0), 1.0, 16.0));
    var halo_b = 0.0;
    for (var i = 0u; i < n; i++) {
        let u = x + (f32(i) + 0.5) / f32(n) * s;
        halo_b += halo_at(u * u + y * y);
    }
    let e = p.intensity * (core_b + halo_b / f32(n));
    return vec4f(in.color * e, e);
}
