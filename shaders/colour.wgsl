// The agents' colour, shared by agents.wgsl (the instanced sprites) and splat.wgsl (the splat
// path), appended to each (src/render/wgsl.rs): the including module declares the parameters
// `p` (with `mode`, `range`, `mean_heading` and `fixed`) and the colour map `lut` with its
// sampler `lut_sampler`.

const TAU: f32 = 6.283185307179586;

// The colour value (0..1 over the map) for `p.mode`: 0 speed, 1 heading (the angle atan2
// gives), 2 density, 4 heading relative to the flock's mean (degrees over the range), 5 species
// (the value then holds species index / 255, the palette's texel), else fixed. Every value is
// computed and one is selected (no branch).
fn by_mode(speed: f32, heading: f32, value: f32) -> f32 {
    let span = max(p.range.y - p.range.x, 1e-20);
    let by_speed = (speed - p.range.x) / span;
    let by_heading = heading / TAU + 0.5;
    let by_value = (value - p.range.x) / span;
    let turn = heading - p.mean_heading;
    let turn_deg = (turn - TAU * round(turn / TAU)) * 57.29577951308232;
    let by_turn = (turn_deg - p.range.x) / span;
    return select(
        select(
            select(
                select(select(0.75, value, p.mode == 5u), by_turn, p.mode == 4u),
                by_value,
                p.mode == 2u,
            ),
            by_heading,
            p.mode == 1u,
        ),
        by_speed,
        p.mode == 0u,
    );
}

// The sprite's colour: the map's at `t`, or the fixed colour when one is given.
fn colour_of(t: f32) -> vec3f {
    // Texel centres: 0.5/256 .. 255.5/256.
    let u = (clamp(t, 0.0, 1.0) * 255.0 + 0.5) / 256.0;
    let mapped = textureSampleLevel(lut, lut_sampler, vec2f(u, 0.5), 0.0).rgb;
    return select(mapped, p.fixed.rgb, (p.mode == 3u) & (p.fixed.a > 0.5));
}
