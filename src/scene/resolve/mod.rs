//! From the file as written to the resolved scene: presets fill defaults, every value is
//! checked, and every problem is collected with its JSON path and line.

use std::path::Path;

mod flight;
mod init;
pub(super) mod timeline;

use super::ctx::{within_largest, Ctx};
use super::file::SceneFile;
use super::{
    BoidsParams, Boundary, Init, Layout, Model, Neighbours, NoiseKind, Preset, Scene, Search,
    Source, Velocity, VicsekParams, FOV_ALL_AROUND, MAX_AGENTS, MAX_STEPS,
};
use init::resolve_init;

/// Why `name` cannot be a file name in the current folder, if it cannot: a path separator,
/// `.` or `..`, NUL or another control character. Spaces and any other Unicode are fine.
fn not_a_file_name(name: &str) -> Option<&'static str> {
    if name.contains(['/', '\\']) {
        Some("must not contain a path separator (/ or \\)")
    } else if name == "." || name == ".." {
        Some("must not be . or ..")
    } else if name.chars().any(char::is_control) {
        Some("must not contain control characters (NUL, newline, escape, ...)")
    } else {
        None
    }
}

/// A number as a message shows it: `3`, `0.5`, and `1e38` rather than its 39 digits.
fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else if x.abs() >= 1e15 {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// A number that must be finite and positive (`allow_zero`: or zero); the default on error.
/// Only a value the user wrote is checked (and named): a default, a constant or a field
/// checked where it was given (`w_chase` defaults to `max_force`), is taken as it is.
fn pos_f(cx: &mut Ctx, path: &str, v: Option<f64>, default: f64, allow_zero: bool) -> f32 {
    let Some(x) = v else {
        return default as f32;
    };
    if !x.is_finite() {
        cx.err(path, format!("must be a finite number, got {x}"));
        return default as f32;
    }
    if x < 0.0 || (!allow_zero && x == 0.0) {
        cx.err(
            path,
            format!(
                "must be {}, got {}",
                if allow_zero { ">= 0" } else { "> 0" },
                fmt_num(x)
            ),
        );
        return default as f32;
    }
    if !within_largest(x) {
        cx.err(
            path,
            format!("is too large: at most 1e30, got {}", fmt_num(x)),
        );
        return default as f32;
    }
    // Checked as stored: 1e-50 passes "> 0" as a double but is 0 as a float (and then NaN
    // at the first step); a subnormal float has lost most of its digits.
    let stored = x as f32;
    if x > 0.0 && !stored.is_normal() {
        cx.err(
            path,
            format!(
                "is too small to store: {x} is {} as a 32-bit float (at least {:e}{})",
                if stored == 0.0 { "0" } else { "subnormal" },
                f32::MIN_POSITIVE,
                if allow_zero { ", or 0" } else { "" }
            ),
        );
        return default as f32;
    }
    stored
}

/// A finite number of any sign; the default on error.
fn any_f(cx: &mut Ctx, path: &str, v: Option<f64>, default: f64) -> f32 {
    let Some(x) = v else {
        return default as f32;
    };
    if !x.is_finite() {
        cx.err(path, format!("must be a finite number, got {x}"));
        return default as f32;
    }
    if !within_largest(x) {
        cx.err(
            path,
            format!("is too large: at most 1e30 either way, got {}", fmt_num(x)),
        );
        return default as f32;
    }
    x as f32
}

pub(super) fn resolve(f: SceneFile, src: &Source, cx: &mut Ctx) -> Scene {
    let (preset, model) = preset_and_model(&f, cx);
    let dim = match f.dim {
        None => 2,
        Some(d @ (2 | 3)) => d as usize,
        Some(d) => {
            cx.err("scene.dim", format!("must be 2 or 3, got {d}"));
            2
        }
    };
    if model == Model::Vicsek && dim != 2 {
        cx.err(
            "scene.dim",
            format!("the vicsek model is 2D only, got {dim}"),
        );
    }
    // Preset defaults.
    let (p_agents, p_dt, p_world, p_boundary): (u64, f64, [f64; 3], Boundary) = match preset {
        Preset::Boidforge => (2000, 0.05, [1920.0, 1080.0, 1080.0], Boundary::Wrap),
        Preset::Cuplan => (200, 0.05, [60.0, 60.0, 60.0], Boundary::Wrap),
        Preset::Vicsek1995 => (4000, 1.0, [31.6, 31.6, 31.6], Boundary::Wrap),
    };
    let layout = f
        .init
        .as_ref()
        .and_then(|i| i.layout)
        .unwrap_or(Layout::Uniform);
    let agents = agent_count(f.agents, layout, p_agents, cx);
    let steps = step_count(cx, "scene.steps", f.steps, 1000);
    let warmup = step_count(cx, "scene.warmup", f.warmup, 0);
    let record_every = record_interval(f.record_every, cx);
    let dt = pos_f(cx, "scene.dt", f.dt, p_dt, false);
    let wf = f.world.clone().unwrap_or_default();
    let world = world_size(wf.size.as_deref(), dim, p_world, cx);
    let boundary = wf.boundary.unwrap_or(p_boundary);
    let (mut boids, vicsek) = model_params(&f, model, preset, dt, cx);
    let (species, interactions) = resolve_species(&f, boids.as_ref(), dt, cx);
    let flight_file = f.boids.as_ref().and_then(|b| b.flight.as_ref());
    if let (Some(b), Some(given)) = (boids.as_mut(), flight_file) {
        b.flight = flight::resolve(cx, given, dim, &world, b, !species.is_empty());
    }
    let agents = if species.is_empty() {
        agents
    } else {
        species_agents(&f, layout, &species, agents, cx)
    };
    let init = resolve_init(&f, layout, dim, &world, agents, src, cx);
    let obstacles = super::obstacles::resolve(cx, f.obstacles.as_deref().unwrap_or(&[]), dim);
    if model != Model::Boids && !obstacles.is_empty() {
        cx.err("scene.obstacles", "only with model \"boids\"");
    }
    let render = f.render.clone();
    let problems: Vec<_> = render
        .iter()
        .flat_map(|r| r.problems(Some(dim as u8)))
        .collect();
    for p in &problems {
        cx.err(&format!("scene.render.{}", p.field), p.message.clone());
    }
    // The render keys at steps, as every render will place them (a time is `time / dt`, and
    // dt is the scene's): out of step order or set twice at a step is refused here, not by
    // each render of the recording.
    let keys = render.as_ref().and_then(|r| r.timeline.as_deref());
    if let (Some(keys), true) = (keys, problems.is_empty()) {
        let any = |f: crate::look::keys::LookField| Some(vec![0.0; f.components()]);
        if let Err((field, message)) = crate::look::keys::LookKeys::resolve(keys, dt, any) {
            cx.err(&format!("scene.render.{field}"), message);
        }
    }
    let name = scene_name(f.name.as_deref(), src, cx);
    let mut scene = Scene {
        name,
        description: f.description.unwrap_or_default(),
        preset,
        model,
        dim,
        agents,
        steps,
        warmup,
        dt,
        seed: f.seed.unwrap_or(0),
        record_every,
        search: f.search.unwrap_or(Search::Auto),
        world,
        boundary,
        boids,
        vicsek,
        init,
        obstacles,
        species,
        interactions,
        render,
        timeline: Vec::new(),
    };
    scene.timeline = timeline::resolve(cx, f.timeline.as_deref(), &scene);
    scene
}

/// `scene.species` and `scene.interactions` (src/scene/species.rs), checked with the same
/// number rules as `scene.boids`; species with topological neighbours are refused.
fn resolve_species(
    f: &SceneFile,
    boids: Option<&BoidsParams>,
    dt: f32,
    cx: &mut Ctx,
) -> (Vec<super::Species>, super::Interactions) {
    if f.species.is_some() && boids.is_some_and(|b| !b.neighbours.is_metric()) {
        cx.err(
            "scene.species",
            "not with topological neighbours (scene.boids.neighbours): species use the metric \
             rules",
        );
    }
    let checks = super::species::Checks {
        pos_f: &pos_f,
        any_f: &any_f,
        noise: &|cx: &mut Ctx, path: &str, v: Option<f64>| heading_noise_at(cx, path, v, dt),
        fov: &fov_at,
    };
    super::species::resolve(
        cx,
        f.species.as_deref(),
        f.interactions.as_ref(),
        boids,
        &checks,
    )
}

/// The flock's size with species: the sum of theirs; `scene.agents`, when given, must be it.
fn species_agents(
    f: &SceneFile,
    layout: Layout,
    species: &[super::Species],
    agents: u32,
    cx: &mut Ctx,
) -> u32 {
    let sum: u64 = species.iter().map(|s| s.agents as u64).sum();
    if layout == Layout::File {
        cx.err(
            "scene.species",
            "not with init.layout \"file\": species number agents from 0 in the order listed, \
             which a recording's agents do not carry",
        );
    }
    if sum > MAX_AGENTS {
        cx.err(
            "scene.species",
            format!("the species' agents sum to {sum}, more than {MAX_AGENTS}"),
        );
        return agents;
    }
    if let Some(a) = f.agents {
        if a > 0 && a as u64 != sum {
            cx.err(
                "scene.agents",
                format!(
                    "must equal the sum of scene.species[].agents ({sum}), got {a} (or leave \
                     it out)"
                ),
            );
        }
    }
    sum as u32
}

/// The preset (named, else the model's own) and the model (named, else the preset's).
fn preset_and_model(f: &SceneFile, cx: &mut Ctx) -> (Preset, Model) {
    let preset = match (f.preset, f.model) {
        (Some(p), _) => p,
        (None, Some(Model::Vicsek)) => Preset::Vicsek1995,
        (None, Some(Model::Boids)) => Preset::Boidforge,
        (None, None) => {
            cx.err(
                "scene.model",
                "required: \"boids\" or \"vicsek\" (or give a \"preset\")",
            );
            Preset::Boidforge
        }
    };
    let preset_model = if preset == Preset::Vicsek1995 {
        Model::Vicsek
    } else {
        Model::Boids
    };
    let model = f.model.unwrap_or(preset_model);
    if model != preset_model && f.preset.is_some() {
        cx.err(
            "scene.preset",
            format!(
                "preset \"{}\" is for model \"{}\", but the scene's model is \"{}\"",
                preset.name(),
                preset_model.name(),
                model.name()
            ),
        );
    }

    (preset, model)
}

/// `scene.agents`: in 1..=MAX_AGENTS; with `layout: file`, taken from the file later.
fn agent_count(given: Option<i64>, layout: Layout, preset: u64, cx: &mut Ctx) -> u32 {
    match given {
        Some(a) if a <= 0 => {
            cx.err("scene.agents", format!("must be > 0, got {a}"));
            1
        }
        Some(a) if a as u64 > MAX_AGENTS => {
            cx.err(
                "scene.agents",
                format!("must be at most {MAX_AGENTS}, got {a}"),
            );
            1
        }
        Some(a) => a as u32,
        None if layout == Layout::File => 0,
        None => preset as u32,
    }
}

/// `scene.record_every`: in 1..=u32::MAX (default 1).
fn record_interval(given: Option<i64>, cx: &mut Ctx) -> u32 {
    match given {
        Some(k) if k <= 0 => {
            cx.err("scene.record_every", format!("must be >= 1, got {k}"));
            1
        }
        Some(k) if k > u32::MAX as i64 => {
            cx.err(
                "scene.record_every",
                format!("must be at most {}, got {k}", u32::MAX),
            );
            1
        }
        Some(k) => k as u32,
        None => 1,
    }
}

/// `scene.world.size`: `dim` positive numbers, else the preset's.
fn world_size(given: Option<&[f64]>, dim: usize, preset: [f64; 3], cx: &mut Ctx) -> [f32; 3] {
    let mut world = [0f32; 3];
    match given {
        None => {
            for (k, w) in world.iter_mut().enumerate().take(dim) {
                *w = preset[k] as f32;
            }
        }
        Some(s) if s.len() != dim => {
            cx.err(
                "scene.world.size",
                format!("must have {dim} numbers (dim is {dim}), got {}", s.len()),
            );
        }
        Some(s) => {
            for k in 0..dim {
                let path = format!("scene.world.size[{k}]");
                world[k] = pos_f(cx, &path, Some(s[k]), preset[k], false);
            }
        }
    }
    world
}

/// `scene.name` (else the file's name): it names the default outputs, so it must be a plain
/// file name.
fn scene_name(given: Option<&str>, src: &Source, cx: &mut Ctx) -> String {
    let name = given.unwrap_or(src.default_name).to_string();
    if name.is_empty() || name.len() > 200 {
        cx.err("scene.name", "must be 1 to 200 characters");
    } else if let Some(why) = not_a_file_name(&name) {
        // The name gives the default output (`NAME.bfs`, `NAME.mp4`) in the current folder.
        cx.err(
            "scene.name",
            format!("{why}: the name gives the default output file, in the current folder"),
        );
    }
    name
}

/// The model's parameters (the other model's section is an error); `dt` bounds the boids'
/// heading noise.
fn model_params(
    f: &SceneFile,
    model: Model,
    preset: Preset,
    dt: f32,
    cx: &mut Ctx,
) -> (Option<BoidsParams>, Option<VicsekParams>) {
    if model == Model::Boids {
        let b = f.boids.clone().unwrap_or_default();
        if f.vicsek.is_some() {
            cx.err("scene.vicsek", "only allowed with model \"vicsek\"");
        }
        let d: [f64; 9] = match preset {
            Preset::Cuplan => [1.5, 8.0, 8.0, 6.0, 2.5, 1.2, 4.0, 0.0, 2.5],
            _ => [12.0, 30.0, 30.0, 1.5, 1.0, 1.0, 220.0, 40.0, 180.0],
        };
        let p = BoidsParams {
            r_sep: pos_f(cx, "scene.boids.r_sep", b.r_sep, d[0], true),
            r_ali: pos_f(cx, "scene.boids.r_ali", b.r_ali, d[1], true),
            r_coh: pos_f(cx, "scene.boids.r_coh", b.r_coh, d[2], true),
            w_sep: any_f(cx, "scene.boids.w_sep", b.w_sep, d[3]),
            w_ali: any_f(cx, "scene.boids.w_ali", b.w_ali, d[4]),
            w_coh: any_f(cx, "scene.boids.w_coh", b.w_coh, d[5]),
            max_force: pos_f(cx, "scene.boids.max_force", b.max_force, d[6], true),
            v_min: pos_f(cx, "scene.boids.v_min", b.v_min, d[7], true),
            v_max: pos_f(cx, "scene.boids.v_max", b.v_max, d[8], false),
            neighbours: neighbours(cx, b.neighbours.as_ref()),
            noise: heading_noise(cx, b.noise, dt),
            fov: fov(cx, b.fov),
            w_avoid: None,
            look_ahead: None,
            clearance: None,
            flight: None,
        };
        let mut p = p;
        avoidance(
            cx,
            &b,
            f.obstacles.as_ref().is_some_and(|o| !o.is_empty()),
            &mut p,
        );
        if p.v_min >= p.v_max {
            let path = if b.v_min.is_some() {
                "scene.boids.v_min"
            } else {
                "scene.boids.v_max"
            };
            cx.err(
                path,
                format!(
                    "v_min must be < v_max, got v_min {} >= v_max {}",
                    fmt_num(p.v_min as f64),
                    fmt_num(p.v_max as f64)
                ),
            );
        }
        let r_max = p.r_sep.max(p.r_ali).max(p.r_coh);
        if r_max <= 0.0 {
            cx.err(
                "scene.boids",
                "at least one of r_sep, r_ali, r_coh must be > 0",
            );
        }
        (Some(p), None)
    } else {
        let v = f.vicsek.clone().unwrap_or_default();
        if f.boids.is_some() {
            cx.err("scene.boids", "only allowed with model \"boids\"");
        }
        let p = VicsekParams {
            v0: pos_f(cx, "scene.vicsek.v0", v.v0, 0.03, false),
            r: pos_f(cx, "scene.vicsek.r", v.r, 1.0, false),
            noise: vicsek_noise(cx, "scene.vicsek.noise", v.noise),
            noise_kind: noise_kind(cx, v.noise_kind.as_ref()),
        };
        (None, Some(p))
    }
}

/// `vicsek.noise` at `PATH` (the scene's, a timeline key's): η in [0, 2π] (default 2).
#[allow(non_snake_case)]
fn vicsek_noise(cx: &mut Ctx, PATH: &str, v: Option<f64>) -> f32 {
    let eta = pos_f(cx, PATH, v, 2.0, true);
    if eta as f64 > 2.0 * std::f64::consts::PI + 1e-6 {
        cx.err(PATH, format!("must be in [0, 2π], got {eta}"));
    }
    eta
}

/// `boids.noise`: η ≥ 0, in radians per √(time unit); the angle drawn each step is uniform in
/// `[−η√dt/2, η√dt/2)`, so `η√dt` may be at most 2π (a full turn: the noise's cos/sin is exact
/// to within a turn either way, src/sim/math.rs `cos_sin`).
fn heading_noise(cx: &mut Ctx, v: Option<f64>, dt: f32) -> f32 {
    heading_noise_at(cx, "scene.boids.noise", v, dt)
}

/// [`heading_noise`] at `PATH` (a species' `boids.noise`).
#[allow(non_snake_case)]
fn heading_noise_at(cx: &mut Ctx, PATH: &str, v: Option<f64>, dt: f32) -> f32 {
    let eta = pos_f(cx, PATH, v, 0.0, true);
    let two_pi = 2.0 * std::f64::consts::PI;
    let width = eta as f64 * (dt as f64).sqrt();
    if width > two_pi + 1e-6 {
        cx.err(
            PATH,
            format!(
                "must be at most 2π/√dt = {:.4} with dt {dt} (the angle drawn per step, \
                 η·√dt, is at most 2π), got {}",
                two_pi / (dt as f64).sqrt(),
                fmt_num(v.unwrap_or(0.0))
            ),
        );
        return 0.0;
    }
    eta
}

/// `boids.w_avoid`, `boids.look_ahead`, `boids.clearance`: set (given or defaulted) exactly
/// when the scene has obstacles; given without any, an error (they would do nothing).
fn avoidance(cx: &mut Ctx, b: &super::file::BoidsFile, obstacles: bool, p: &mut BoidsParams) {
    let given = [
        ("w_avoid", b.w_avoid),
        ("look_ahead", b.look_ahead),
        ("clearance", b.clearance),
    ];
    if !obstacles {
        for (name, v) in given {
            if v.is_some() {
                cx.err(
                    &format!("scene.boids.{name}"),
                    "only used with obstacles (scene.obstacles lists none)",
                );
            }
        }
        return;
    }
    p.w_avoid = Some(any_f(
        cx,
        "scene.boids.w_avoid",
        b.w_avoid,
        p.max_force as f64,
    ));
    p.look_ahead = Some(pos_f(cx, "scene.boids.look_ahead", b.look_ahead, 1.0, true));
    let clearance = pos_f(
        cx,
        "scene.boids.clearance",
        b.clearance,
        p.r_sep as f64,
        true,
    );
    if clearance <= 0.0 {
        cx.err(
            "scene.boids.clearance",
            "must be > 0 (it defaults to r_sep, which is 0 here)",
        );
    }
    p.clearance = Some(clearance.max(f32::MIN_POSITIVE));
}

/// `boids.fov`: the field of view in degrees, in (0, 360] (360, the default: all around).
fn fov(cx: &mut Ctx, v: Option<f64>) -> f32 {
    fov_at(cx, "scene.boids.fov", v)
}

/// [`fov`] at `PATH` (a species' `boids.fov`).
#[allow(non_snake_case)]
fn fov_at(cx: &mut Ctx, PATH: &str, v: Option<f64>) -> f32 {
    let all = FOV_ALL_AROUND as f64;
    match v {
        Some(x) if !x.is_finite() => {
            cx.err(PATH, format!("must be a finite number, got {x}"));
            FOV_ALL_AROUND
        }
        Some(x) if x <= 0.0 || x > all => {
            cx.err(
                PATH,
                format!(
                    "must be in (0, 360] (degrees; 360 is all around), got {}",
                    fmt_num(x)
                ),
            );
            FOV_ALL_AROUND
        }
        Some(x) if !(x as f32).is_normal() => {
            cx.err(
                PATH,
                format!("is too small to store: {x} degrees as a 32-bit float"),
            );
            FOV_ALL_AROUND
        }
        Some(x) => x as f32,
        None => FOV_ALL_AROUND,
    }
}

/// `boids.neighbours`: `{"kind": "metric"}` (the default) or `{"kind": "topological", "k": K}`
/// (K ≥ 1, 7 when left out: Ballerini et al. 2008 found 6 to 7 for starlings).
fn neighbours(cx: &mut Ctx, f: Option<&super::file::NeighboursFile>) -> Neighbours {
    let Some(f) = f else {
        return Neighbours::Metric;
    };
    let topological = match &f.kind {
        None => false,
        Some(v) => match v.as_str() {
            Some("metric") => false,
            Some("topological") => true,
            _ => {
                cx.err(
                    "scene.boids.neighbours.kind",
                    format!("expected \"metric\" or \"topological\", got {}", shown(v)),
                );
                return Neighbours::Metric;
            }
        },
    };
    if !topological {
        if f.k.is_some() {
            cx.err(
                "scene.boids.neighbours.k",
                "only allowed with \"kind\": \"topological\"",
            );
        }
        return Neighbours::Metric;
    }
    let k = match f.k {
        None => 7,
        Some(k) if k < 1 => {
            cx.err(
                "scene.boids.neighbours.k",
                format!("must be >= 1 (the number of nearest neighbours), got {k}"),
            );
            7
        }
        Some(k) if k as u64 > MAX_AGENTS => {
            cx.err(
                "scene.boids.neighbours.k",
                format!("must be at most {MAX_AGENTS}, got {k}"),
            );
            7
        }
        Some(k) => k as u32,
    };
    Neighbours::Topological { k }
}

/// A JSON value as a message shows it: whole if short, else its start and its length.
fn shown(v: &serde_json::Value) -> String {
    const WHOLE: usize = 80;
    let text = v.to_string();
    if text.len() <= WHOLE {
        return text;
    }
    let mut end = 60;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &text[..end], text.len())
}

/// `vicsek.noise_kind`: "angular" (the default) or "vectorial".
fn noise_kind(cx: &mut Ctx, v: Option<&serde_json::Value>) -> NoiseKind {
    let Some(v) = v else {
        return NoiseKind::Angular;
    };
    match v.as_str().and_then(NoiseKind::from_name) {
        Some(k) => k,
        None => {
            cx.err(
                "scene.vicsek.noise_kind",
                format!("expected \"angular\" or \"vectorial\", got {}", shown(v)),
            );
            NoiseKind::Angular
        }
    }
}

/// A number of steps (`scene.steps`, `scene.warmup`): 0..=MAX_STEPS, else an error at `field`.
fn step_count(cx: &mut Ctx, field: &str, v: Option<i64>, default: u64) -> u64 {
    match v {
        Some(s) if s < 0 => {
            cx.err(field, format!("must be >= 0, got {s}"));
            0
        }
        Some(s) if s as u64 > MAX_STEPS => {
            cx.err(field, format!("must be at most {MAX_STEPS}, got {s}"));
            0
        }
        Some(s) => s as u64,
        None => default,
    }
}
