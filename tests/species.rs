//! Species and predators through the real binary: every bad field named by its JSON path; the
//! agent count and the species' counts agree; the CUDA backend runs species; scenes
//! without species store nothing new; the chase and flight rules checked against a float64
//! reference on every agent-step; prey thin out around a predator.

use std::path::{Path, PathBuf};

use crate::common;

use common::*;

fn simulate(dir: &Path, scene: &Path, extra: &[&str]) -> PathBuf {
    let out = dir.join("run.bfs");
    let mut args = vec![
        "simulate",
        scene.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--force",
        "--quiet",
    ];
    args.extend_from_slice(extra);
    succeeds(dir, &args);
    out
}

/// A scene's error message for `body` (which must fail), with no output left.
fn invalid(body: &str) -> String {
    let dir = tmp();
    let s = write(dir.path(), "s.json", body);
    let err = fails(
        dir.path(),
        &["simulate", s.to_str().unwrap(), "-o", "x.bfs"],
    );
    no_output(dir.path(), "x.bfs");
    err
}

const TWO: &str =
    r#"[{"name": "starling", "agents": 30}, {"name": "falcon", "agents": 2, "role": "predator"}]"#;

#[test]
fn bad_species_are_named_by_their_json_path() {
    let cases: &[(&str, &str)] = &[
        (
            r#"{"model": "boids", "species": [{"name": "a", "agents": 3, "boids": {"w_ali": "x"}}]}"#,
            "scene.species[0].boids.w_ali: invalid type: string \"x\", expected a number",
        ),
        (
            r#"{"model": "boids", "species": [{"name": "a", "agents": 3},
                {"name": "b", "agents": 3, "boids": {"w_aly": 1}}]}"#,
            "scene.species[1].boids.w_aly: unknown field `w_aly`",
        ),
        (
            r#"{"model": "boids", "species": [{"name": "a", "agents": 3},
                {"name": "b", "agents": 3, "boids": {"v_max": -2}}]}"#,
            "scene.species[1].boids.v_max: must be > 0, got -2",
        ),
        (
            r#"{"model": "boids", "species": [{"name": "a", "agents": 3},
                {"name": "b", "agents": 3, "boids": {"v_min": 500}}]}"#,
            "scene.species[1].boids.v_min: v_min must be < v_max",
        ),
        (
            r#"{"model": "boids", "species": [{"name": "a", "agents": 3, "boids": {"fov": 400}}]}"#,
            "scene.species[0].boids.fov: must be in (0, 360]",
        ),
        (
            r#"{"model": "boids", "species": [{"name": "a", "agents": 0}]}"#,
            "scene.species[0].agents: must be >= 1, got 0",
        ),
        (
            r#"{"model": "boids", "species": [{"agents": 3}]}"#,
            "scene.species[0].name: required",
        ),
        (
            r#"{"model": "boids", "species": [{"name": "a", "agents": 3}, {"name": "a", "agents": 3}]}"#,
            "scene.species[1].name: \"a\" is already the name of scene.species[0]",
        ),
        (
            r#"{"model": "boids", "species": [{"name": "a", "agents": 3, "role": "prey"}]}"#,
            "scene.species[0].role: expected \"flock\" or \"predator\", got \"prey\"",
        ),
        (
            r#"{"model": "boids", "species": [{"name": "a", "agents": 3, "render": {"colour": "red"}}]}"#,
            "scene.species[0].render.colour: must be a colour as \"#RRGGBB\"",
        ),
        (
            r#"{"model": "boids", "species": [{"name": "a", "agents": 3, "render": {"size": 0}}]}"#,
            "scene.species[0].render.size: must be a multiple of the point size from 0.25 to 8, \
             got 0",
        ),
        (
            r#"{"model": "boids", "species": [{"name": "a", "agents": 3, "boids": {"w_flee": 3}}]}"#,
            "scene.species[0].boids.w_flee: only used when another species has role \"predator\"",
        ),
        (
            r#"{"model": "boids", "species": [{"name": "starling", "agents": 30,
                    "boids": {"chase_radius": 3}}, {"name": "falcon", "agents": 2, "role": "predator"}]}"#,
            "scene.species[0].boids.chase_radius: only for a species with role \"predator\"",
        ),
        (
            r#"{"model": "boids", "species": [{"name": "f", "agents": 3, "role": "predator"}]}"#,
            "scene.species: predators need prey",
        ),
        (
            r#"{"model": "boids", "species": []}"#,
            "scene.species: must list at least one species",
        ),
        (
            &format!(r#"{{"model": "boids", "agents": 40, "species": {TWO}}}"#),
            "scene.agents: must equal the sum of scene.species[].agents (32), got 40",
        ),
        (
            &format!(
                r#"{{"model": "boids", "species": {TWO}, "interactions": {{"hawk": {{"falcon": {{"align": true}}}}}}}}"#
            ),
            "scene.interactions.hawk: no species is named \"hawk\"",
        ),
        (
            &format!(
                r#"{{"model": "boids", "species": {TWO}, "interactions": {{"falcon": {{"owl": {{"align": true}}}}}}}}"#
            ),
            "scene.interactions.falcon.owl: no species is named \"owl\"",
        ),
        (
            &format!(
                r#"{{"model": "boids", "species": {TWO}, "interactions": {{"falcon": {{"starling": {{"aling": true}}}}}}}}"#
            ),
            "scene.interactions.falcon.starling.aling: unknown field `aling`",
        ),
        (
            r#"{"model": "boids", "interactions": {}}"#,
            "scene.interactions: only used with species",
        ),
        (
            &format!(r#"{{"model": "vicsek", "species": {TWO}}}"#),
            "scene.species: only with model \"boids\"",
        ),
        (
            &format!(
                r#"{{"model": "boids", "species": {TWO}, "boids": {{"neighbours": {{"kind": "topological"}}}}}}"#
            ),
            "scene.species: not with topological neighbours",
        ),
    ];
    for (body, want) in cases {
        let err = invalid(body);
        has(&err, want);
    }
}

#[test]
fn the_flock_is_the_sum_of_the_species() {
    let dir = tmp();
    // Left out, `agents` is the sum; given, it must be the sum.
    for agents in ["", r#""agents": 32,"#] {
        let s = write(
            dir.path(),
            "s.json",
            &format!(r#"{{"model": "boids", {agents} "steps": 2, "species": {TWO}}}"#),
        );
        let out = simulate(dir.path(), &s, &[]);
        let h = forge::bfs::Reader::open(&out).unwrap().header().clone();
        assert_eq!(h.agents, 32);
        // Version 2: each agent's species, numbered species by species in the order listed.
        assert_eq!(h.version, 2);
        let want: Vec<u8> = [vec![0u8; 30], vec![1u8; 2]].concat();
        assert_eq!(h.species, want);
        let scene: serde_json::Value = serde_json::from_str(&h.scene_json).unwrap();
        assert_eq!(scene["species"][1]["role"], "predator");
        // The whole matrix is stored, defaults filled.
        assert_eq!(scene["interactions"]["starling"]["starling"]["align"], true);
        assert_eq!(scene["interactions"]["starling"]["falcon"]["align"], false);
        assert_eq!(
            scene["interactions"]["falcon"]["starling"]["separate"],
            true
        );
        // The flight defaults to the prey's max_force, the chase to the predator's.
        assert_eq!(scene["species"][0]["flee"]["weight"], 220.0);
        assert_eq!(scene["species"][1]["chase"]["weight"], 220.0);
    }
}

#[test]
fn agents_on_the_command_line_scale_every_species() {
    let dir = tmp();
    let s = write(
        dir.path(),
        "s.json",
        &format!(r#"{{"model": "boids", "steps": 1, "species": {TWO}}}"#),
    );
    let out = simulate(dir.path(), &s, &["--agents", "320"]);
    let h = forge::bfs::Reader::open(&out).unwrap().header().clone();
    let scene: serde_json::Value = serde_json::from_str(&h.scene_json).unwrap();
    assert_eq!(h.agents, 320);
    assert_eq!(scene["species"][0]["agents"], 300);
    assert_eq!(scene["species"][1]["agents"], 20);
    assert_eq!(h.species.iter().filter(|&&i| i == 1).count(), 20);
    let err = fails(
        dir.path(),
        &[
            "simulate",
            s.to_str().unwrap(),
            "--agents",
            "1",
            "-o",
            "x.bfs",
        ],
    );
    has(&err, "--agents: at least 2 with 2 species");
    no_output(dir.path(), "x.bfs");
}

/// The CUDA backend runs species: with a GPU, the same bytes as the CPU; without one, the error
/// is the missing device, never a refusal of the scene; `auto` runs them either way.
#[test]
fn the_cuda_backend_runs_species() {
    let dir = tmp();
    let s = write(
        dir.path(),
        "s.json",
        &format!(r#"{{"model": "boids", "steps": 20, "species": {TWO}}}"#),
    );
    let s = s.to_str().unwrap();
    cuda_runs_as_the_cpu(dir.path(), &[s], "with species");
    succeeds(
        dir.path(),
        &["simulate", s, "-q", "-o", "a.bfs", "--backend", "auto"],
    );
}

#[test]
fn a_recording_without_species_stores_no_species_fields() {
    let dir = tmp();
    let s = write(
        dir.path(),
        "s.json",
        r#"{"model": "boids", "agents": 20, "steps": 2}"#,
    );
    let out = simulate(dir.path(), &s, &[]);
    let h = forge::bfs::Reader::open(&out).unwrap().header().clone();
    for field in ["species", "interactions", "chase", "flee"] {
        assert!(!h.scene_json.contains(field), "{field} in {}", h.scene_json);
    }
}

/// Agents of frame `f` as float64 `[x, y]` and `[vx, vy]`.
fn agent(f: &forge::bfs::Frame, i: usize) -> ([f64; 2], [f64; 2]) {
    let n = f.agents(2);
    (
        [f.pos[i] as f64, f.pos[n + i] as f64],
        [f.vel[i] as f64, f.vel[n + i] as f64],
    )
}

/// The speed band, max_force clamp and Euler step of a boid in float64 (open world).
fn move64(
    mut a: [f64; 2],
    x: [f64; 2],
    v: [f64; 2],
    fmax: f64,
    band: (f64, f64),
    dt: f64,
) -> ([f64; 2], [f64; 2]) {
    let an = (a[0] * a[0] + a[1] * a[1]).sqrt();
    if an > fmax {
        a = [a[0] * fmax / an, a[1] * fmax / an];
    }
    let mut v = [v[0] + a[0] * dt, v[1] + a[1] * dt];
    let s = (v[0] * v[0] + v[1] * v[1]).sqrt();
    if s > band.1 {
        v = [v[0] * band.1 / s, v[1] * band.1 / s];
    } else if s < band.0 && s > 0.0 {
        v = [v[0] * band.0 / s, v[1] * band.0 / s];
    }
    ([x[0] + v[0] * dt, x[1] + v[1] * dt], v)
}

#[test]
fn chase_and_flight_match_a_float64_reference() {
    // Prey and predators with radii too small to ever meet a neighbour, in an open world: the
    // step is the chase (predators) and the flight (prey) alone. Every agent's step from frame
    // k to k+1 against the float64 rule.
    let dir = tmp();
    let (np, nh) = (2000usize, 6usize);
    let body = format!(
        r#"{{"model": "boids", "steps": 40, "seed": 5, "dt": 0.05,
        "world": {{"size": [800, 500], "boundary": "open"}},
        "boids": {{"r_sep": 0.001, "r_ali": 0.001, "r_coh": 0.001, "max_force": 300,
                  "v_min": 20, "v_max": 150}},
        "species": [
          {{"name": "prey", "agents": {np}, "boids": {{"w_flee": 250, "flee_radius": 90}}}},
          {{"name": "hawk", "agents": {nh}, "role": "predator",
            "boids": {{"v_min": 60, "v_max": 200, "max_force": 500, "chase_radius": 150, "w_chase": 400}}}}]}}"#
    );
    let s = write(dir.path(), "s.json", &body);
    let out = simulate(dir.path(), &s, &[]);
    let mut r = forge::bfs::Reader::open(&out).unwrap();
    let (mut checked, mut fled, mut chased, mut off, mut worst) = (0usize, 0, 0, 0, 0.0f64);
    let mut prev = r.read_frame(0).unwrap();
    for k in 1..r.frame_count() {
        let f = r.read_frame(k).unwrap();
        let n = np + nh;
        assert_eq!(f.agents(2), n);
        for i in 0..n {
            let (x, v) = agent(&prev, i);
            let mut a = [0.0f64; 2];
            let (fmax, band) = if i < np {
                for h in np..n {
                    let (y, _) = agent(&prev, h);
                    let d = [x[0] - y[0], x[1] - y[1]];
                    let dn = (d[0] * d[0] + d[1] * d[1]).sqrt();
                    if dn < 90.0 && dn > 0.0 {
                        a = [a[0] + 250.0 * d[0] / dn, a[1] + 250.0 * d[1] / dn];
                    }
                }
                if a != [0.0, 0.0] {
                    fled += 1;
                }
                (300.0, (20.0, 150.0))
            } else {
                let mut best: Option<(f64, [f64; 2])> = None;
                for j in 0..np {
                    let (y, _) = agent(&prev, j);
                    let d = [y[0] - x[0], y[1] - x[1]];
                    let d2 = d[0] * d[0] + d[1] * d[1];
                    if d2 < 150.0 * 150.0 && best.is_none_or(|b| d2 < b.0) {
                        best = Some((d2, d));
                    }
                }
                if let Some((d2, d)) = best {
                    let dn = d2.sqrt();
                    a = [400.0 * d[0] / dn, 400.0 * d[1] / dn];
                    chased += 1;
                }
                (500.0, (60.0, 200.0))
            };
            let (p64, v64) = move64(a, x, v, fmax, band, 0.05);
            let (p, vv) = agent(&f, i);
            let err = ((p[0] - p64[0]).powi(2) + (p[1] - p64[1]).powi(2)).sqrt()
                + ((vv[0] - v64[0]).powi(2) + (vv[1] - v64[1]).powi(2)).sqrt() * 0.05;
            checked += 1;
            if err > 1e-3 {
                if off < 6 {
                    eprintln!("agent {i} step {k}: x {x:?} v {v:?}\n  got {p:?} {vv:?}\n  f64 {p64:?} {v64:?}");
                }
                off += 1;
            } else {
                worst = worst.max(err);
            }
        }
        prev = f;
    }
    eprintln!(
        "{checked} agent-steps, {fled} prey fleeing, {chased} predator chasing, {off} off by > \
         0.001, worst of the rest {worst:.2e}"
    );
    assert!(fled > 500, "only {fled} agent-steps where prey fled");
    assert!(
        chased > 100,
        "only {chased} agent-steps where a predator chased"
    );
    // A decision on a rounding edge (a radius met in float32 and not in float64, two prey at
    // the same distance) may send an agent another way: at most one step in a thousand.
    assert!(
        off * 1000 <= checked,
        "{off} of {checked} agent-steps differ from float64"
    );
}

/// Mean over frames `from..` and predators of the prey within `radius` of each predator.
fn prey_near_predators(bfs: &Path, prey: usize, radius: f64, from: u64) -> f64 {
    let mut r = forge::bfs::Reader::open(bfs).unwrap();
    let w = r.header().world_size;
    let (mut sum, mut count) = (0usize, 0usize);
    for k in from..r.frame_count() {
        let f = r.read_frame(k).unwrap();
        let n = f.agents(2);
        for h in prey..n {
            for j in 0..prey {
                let mut d2 = 0.0;
                for (c, &size) in w.iter().enumerate().take(2) {
                    let mut d = (f.pos[c * n + j] - f.pos[c * n + h]) as f64;
                    let size = size as f64;
                    // Minimum image: the world wraps.
                    if d > size / 2.0 {
                        d -= size;
                    } else if d < -size / 2.0 {
                        d += size;
                    }
                    d2 += d * d;
                }
                if d2 < radius * radius {
                    sum += 1;
                }
            }
            count += 1;
        }
    }
    sum as f64 / count as f64
}

#[test]
fn prey_thin_out_around_a_predator() {
    // The same flock and predators, with and without the prey's flight (w_flee 0: the
    // predators chase as before, the prey ignore them): fleeing prey leave a hole around each
    // predator. The predators are a little slower than the prey (150 against 180): one faster
    // than its prey catches one and rides in the flock with it.
    let dir = tmp();
    let run = |w_flee: u32| {
        let body = format!(
            r#"{{"model": "boids", "steps": 600, "record_every": 10, "seed": 11,
            "world": {{"size": [800, 500], "boundary": "wrap"}},
            "species": [
              {{"name": "prey", "agents": 1500,
                "boids": {{"max_force": 500, "w_flee": {w_flee}, "flee_radius": 60}}}},
              {{"name": "hawk", "agents": 3, "role": "predator",
                "boids": {{"v_min": 60, "v_max": 150, "chase_radius": 200}}}}]}}"#
        );
        let s = write(dir.path(), &format!("s{w_flee}.json"), &body);
        let out = simulate(dir.path(), &s, &[]);
        let kept = dir.path().join(format!("run{w_flee}.bfs"));
        std::fs::rename(&out, &kept).unwrap();
        // From frame 12 (step 120) on: the flock has formed and the chase begun.
        (
            prey_near_predators(&kept, 1500, 60.0, 12),
            prey_near_predators(&kept, 1500, 40.0, 12),
        )
    };
    let (fleeing, ignoring) = (run(800), run(0));
    eprintln!(
        "prey within 60 (flee_radius) / 40 of a predator: {:.2} / {:.2} fleeing, {:.2} / {:.2} \
         ignoring it",
        fleeing.0, fleeing.1, ignoring.0, ignoring.1
    );
    assert!(
        ignoring.0 > 20.0,
        "the predators found no prey to chase ({:.2})",
        ignoring.0
    );
    assert!(
        fleeing.0 < 0.5 * ignoring.0,
        "fleeing prey are not much thinner within flee_radius of predators: {:.2} against {:.2}",
        fleeing.0,
        ignoring.0
    );
    assert!(
        fleeing.1 < 0.3 * ignoring.1,
        "fleeing prey are not much thinner near predators: {:.2} against {:.2}",
        fleeing.1,
        ignoring.1
    );
}

#[test]
fn the_renderer_colours_agents_by_species() {
    let dir = tmp();
    let body = r##"{"model": "boids", "steps": 1, "seed": 2, "world": {"size": [320, 180]},
        "boids": {"r_sep": 0.001, "r_ali": 0.001, "r_coh": 0.001},
        "species": [
          {"name": "red", "agents": 12, "render": {"colour": "#ff2020"}},
          {"name": "blue", "agents": 12, "role": "predator", "render": {"colour": "#2040ff"}}],
        "render": {"background": "#000000", "bloom": 0, "vignette": 0, "trails": 0}}"##;
    let s = write(dir.path(), "s.json", body);
    let out = simulate(dir.path(), &s, &[]);
    // A recording without species has nothing to colour by: refused, naming the flag.
    let plain = write(
        dir.path(),
        "p.json",
        r#"{"model": "boids", "agents": 5, "steps": 1}"#,
    );
    let plain_out = dir.path().join("plain.bfs");
    succeeds(
        dir.path(),
        &[
            "simulate",
            plain.to_str().unwrap(),
            "-o",
            plain_out.to_str().unwrap(),
            "-q",
        ],
    );
    if !have_gpu("the_renderer_colours_agents_by_species") {
        return;
    }
    let err = fails(
        dir.path(),
        &[
            "still",
            plain_out.to_str().unwrap(),
            "--color",
            "species",
            "-o",
            "p.png",
        ],
    );
    has(&err, "--color species: ");
    has(&err, "has no species");
    no_output(dir.path(), "p.png");
    // Asked for by a look file, the message names the file.
    let look = write(dir.path(), "s.look.json", r#"{"color": "species"}"#);
    let err = fails(
        dir.path(),
        &[
            "still",
            plain_out.to_str().unwrap(),
            "--look",
            look.to_str().unwrap(),
            "-o",
            "p.png",
        ],
    );
    has(&err, &format!("--look {}: color species: ", look.display()));
    has(&err, "has no species");
    no_output(dir.path(), "p.png");
    let png = still_of_frame_0(dir.path(), &out, &["--color", "species"]);
    let (w, h, px) = read_png(&png);
    let c = px.len() / (w as usize * h as usize);
    let f = forge::bfs::Reader::open(&out)
        .unwrap()
        .read_frame(0)
        .unwrap();
    let n = f.agents(2);
    let (mut right, mut wrong) = (0, 0);
    for i in 0..n {
        let (x, y) = (f.pos[i] as usize, f.pos[n + i] as usize);
        let (x, y) = (x.min(w as usize - 1), (h as usize - 1).saturating_sub(y));
        let p = &px[(y * w as usize + x) * c..(y * w as usize + x) * c + 3];
        let red = p[0] as i32 - p[2] as i32;
        if red.abs() < 20 {
            continue; // dark, or two sprites over each other
        }
        if (red > 0) == (i < 12) {
            right += 1;
        } else {
            wrong += 1;
        }
    }
    eprintln!("{right} agents in their species' colour, {wrong} in the other's");
    assert!(right >= 16 && wrong <= 2, "{right} right, {wrong} wrong");
}

/// `forge still` of frame 0 of `bfs` at 320x180 with `extra` flags: dir/still.png.
fn still_of_frame_0(dir: &Path, bfs: &Path, extra: &[&str]) -> PathBuf {
    let png = dir.join("still.png");
    let (bfs, out) = (bfs.to_str().unwrap(), png.to_str().unwrap());
    let mut args = vec!["still", bfs, "--frame", "0", "--size", "320x180", "-o", out];
    args.extend_from_slice(extra);
    succeeds(dir, &args);
    png
}

/// Lit pixels (any channel over 40) within `r` pixels of each agent of frame 0 of `bfs` in
/// the still `png` (the world fills the frame: 1 world unit a pixel).
fn footprints(bfs: &Path, png: &Path, r: i64) -> Vec<usize> {
    let (w, h, px) = read_png(png);
    let c = px.len() / (w as usize * h as usize);
    let f = forge::bfs::Reader::open(bfs)
        .unwrap()
        .read_frame(0)
        .unwrap();
    let n = f.agents(2);
    (0..n)
        .map(|i| {
            let (ax, ay) = (f.pos[i] as i64, h as i64 - 1 - f.pos[n + i] as i64);
            let mut lit = 0;
            for y in (ay - r).max(0)..(ay + r + 1).min(h as i64) {
                for x in (ax - r).max(0)..(ax + r + 1).min(w as i64) {
                    let at = (y as usize * w as usize + x as usize) * c;
                    lit += px[at..at + 3].iter().any(|&v| v > 40) as usize;
                }
            }
            lit
        })
        .collect()
}

#[test]
fn a_species_size_scales_its_sprites() {
    let dir = tmp();
    // Six agents drawn at the point size and six at three times it, far apart on black.
    let body = r##"{"model": "boids", "steps": 1, "seed": 5, "world": {"size": [320, 180]},
        "boids": {"r_sep": 0.001, "r_ali": 0.001, "r_coh": 0.001},
        "species": [
          {"name": "small", "agents": 6},
          {"name": "big", "agents": 6, "render": {"size": 3}}],
        "render": {"background": "#000000", "bloom": 0, "vignette": 0, "trails": 0}}"##;
    let s = write(dir.path(), "s.json", body);
    let out = simulate(dir.path(), &s, &[]);
    if !have_gpu("a_species_size_scales_its_sprites") {
        return;
    }
    let png = still_of_frame_0(dir.path(), &out, &[]);
    let lit = footprints(&out, &png, 14);
    let median = |v: &[usize]| {
        let mut v = v.to_vec();
        v.sort();
        v[v.len() / 2]
    };
    let (small, big) = (median(&lit[..6]), median(&lit[6..]));
    eprintln!("lit pixels around each agent: {lit:?}");
    // Three times the radius: about nine times the area (five at the least, for the faint rim).
    assert!(
        small > 0 && big >= 5 * small,
        "a size-3 species' sprites cover {big} pixels, its size-1 neighbours' {small}"
    );
}

/// The sums of a species that treats every other as its own kind but for a few rare agents
/// (its predators) are taken by the plain candidate loop and then corrected for the rare
/// ones; these hashes are the bytes of the per-pair masked loop, recorded before that fast
/// path existed. Three scenes: prey with a field of view fleeing ten hawks (2D, wrap); an
/// interaction matrix under which the big species ignores a small one but for alignment,
/// and the small one does not align with its own kind, round an obstacle; 3D prey and five
/// sharks in a reflecting box. Each also by brute force on one thread and with the scalar
/// candidate loop.
#[test]
fn the_plain_loop_corrected_for_rare_species_gives_the_masked_loops_bytes() {
    use sha2::{Digest, Sha256};
    let cases = [
        (
            "pinned_sp_hawks",
            r#"{"model": "boids", "agents": 1200, "steps": 30, "seed": 3, "world": {"size": [600, 400], "boundary": "wrap"}, "boids": {"w_sep": 40}, "species": [{"name": "a", "agents": 1190, "boids": {"w_flee": 300, "flee_radius": 60, "fov": 270}}, {"name": "hawk", "agents": 10, "role": "predator", "boids": {"v_min": 100, "v_max": 220, "chase_radius": 150, "w_chase": 300}}], "init": {"layout": "clusters", "count": 4, "radius": 50}}"#,
            "5b97825b38d343ca4ce5013a0bb028c3a6ba4fd4ce8204aef939ebc6287e866e",
        ),
        (
            "pinned_sp_matrix",
            r#"{"model": "boids", "agents": 1200, "steps": 30, "seed": 4, "world": {"size": [600, 400], "boundary": "wrap"}, "boids": {"w_sep": 40, "fov": 300}, "species": [{"name": "a", "agents": 1190}, {"name": "b", "agents": 10, "boids": {"r_coh": 60}}], "interactions": {"a": {"b": {"align": true, "cohere": false, "separate": false}}, "b": {"b": {"align": false, "cohere": true, "separate": true}}}, "obstacles": [{"circle": {"center": [300, 200], "radius": 30}}], "init": {"layout": "clusters", "count": 4, "radius": 50}}"#,
            "281d99d9d056c40cbb475c49c47bf9d00a65a5eda3a47ecc4d21a886ccb91698",
        ),
        (
            "pinned_sp_3d",
            r#"{"model": "boids", "dim": 3, "agents": 1200, "steps": 30, "seed": 5, "world": {"size": [200, 150, 180], "boundary": "reflect"}, "boids": {"w_sep": 40, "noise": 1}, "species": [{"name": "fish", "agents": 1195, "boids": {"w_flee": 300, "flee_radius": 40}}, {"name": "shark", "agents": 5, "role": "predator", "boids": {"chase_radius": 80, "w_chase": 300}}]}"#,
            "7ea6dd2f406f46a4cd6b41af6905485ad79eb1f9bff6765107c1307f1b7ff630",
        ),
    ];
    let dir = tmp();
    for (name, body, pinned) in cases {
        let s = write(dir.path(), &format!("{name}.json"), body);
        for extra in [&[][..], &["--threads", "1", "--search", "brute"][..]] {
            let out = simulate(dir.path(), &s, extra);
            let got = format!("{:x}", Sha256::digest(std::fs::read(&out).unwrap()));
            assert_eq!(got, pinned, "{name} {extra:?}: the bytes changed");
        }
        let out = dir.path().join("scalar.bfs");
        let args = [
            "simulate",
            s.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--force",
            "--quiet",
        ];
        succeeds_env(dir.path(), &args, &[("FORGE_SIMD", "off")]);
        let got = format!("{:x}", Sha256::digest(std::fs::read(&out).unwrap()));
        assert_eq!(got, pinned, "{name} FORGE_SIMD=off: the bytes changed");
    }
}

/// `forge bench --only obstacles` times the plain flock, ten obstacles, one predator and both,
/// each against the plain flock: the four rows in order, the plain row its own unit, every
/// time positive.
#[test]
fn the_bench_times_a_predator_and_obstacles_against_the_plain_flock() {
    let dir = tmp();
    let r = succeeds(
        dir.path(),
        &["bench", "--only", "obstacles", "--seconds", "0.01"],
    );
    let rows: Vec<Vec<&str>> = r
        .stdout
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| rules"))
        .map(|l| l.trim_matches('|').split('|').map(str::trim).collect())
        .collect();
    let names: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    assert_eq!(
        names,
        [
            "none",
            "10 obstacles",
            "1 predator",
            "1 predator + 10 obstacles"
        ],
        "{}",
        r.stdout
    );
    assert_eq!(rows[0][4], "1.000", "{}", r.stdout);
    for row in &rows {
        let ns: f64 = row[3].parse().unwrap();
        let ratio: f64 = row[4].parse().unwrap();
        assert!(ns > 0.0 && ratio > 0.0, "{}", r.stdout);
    }
}
