//! `forge analyze` against truth: synthetic recordings whose answers are known (a velocity
//! field of known correlation length, an isotropic arrangement, a lined-up one), a direct
//! float64 sum over every pair, and the grid method against the exact one; then bad input.

use std::path::{Path, PathBuf};

use forge::bfs::{Header, SourceFormat, Writer, VERSION};
use forge::scene::{Boundary, Model};
use serde_json::Value;

use crate::common::{fails, has, succeeds, tmp};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn header(dim: u8, agents: u32, boundary: Boundary, side: f32) -> Header {
    Header {
        version: VERSION,
        dim,
        model: Model::Boids,
        boundary,
        agents,
        dt: 0.05,
        seed: 1,
        record_every: 1,
        world_size: [side, side, if dim == 3 { side } else { 0.0 }],
        scene_name: "synthetic".into(),
        scene_json: r#"{"model":"boids","name":"synthetic"}"#.into(),
        frame_count: None,
        source: SourceFormat::Forge,
        world_inferred: false,
        species: Vec::new(),
    }
}

/// Writes frames (component-major positions and velocities) to `dir/name`.
fn record(dir: &Path, name: &str, h: &Header, frames: &[(Vec<f32>, Vec<f32>)]) -> PathBuf {
    let p = dir.join(name);
    let mut w = Writer::new(std::fs::File::create(&p).unwrap(), h).unwrap();
    for (k, (pos, vel)) in frames.iter().enumerate() {
        w.write_frame(k as u64, pos, vel).unwrap();
    }
    w.finalize().unwrap();
    p
}

/// A velocity field whose every component is a sum of plane waves with |k| on a thin shell of
/// radius `shell` (in units of 2π/L) with random phases: its correlation is the shell's
/// average of cos(k·r), J0(k r) in 2D and sin(k r)/(k r) in 3D, whose first zeros are
/// 2.4048/k and π/k.
fn wave_frame(dim: usize, n: usize, side: f64, shell: f64, rng: &mut Rng) -> (Vec<f32>, Vec<f32>) {
    let tau = std::f64::consts::TAU;
    let mut waves: Vec<([f64; 3], [f64; 3])> = Vec::new();
    let m = shell.ceil() as i64 + 1;
    for a in -m..=m {
        for b in -m..=m {
            for c in if dim == 3 { -m..=m } else { 0..=0 } {
                let len = ((a * a + b * b + c * c) as f64).sqrt();
                if (len - shell).abs() <= 0.5 {
                    let k = [a, b, c].map(|x| tau * x as f64 / side);
                    let phases = [0; 3].map(|_| tau * rng.unit());
                    waves.push((k, phases));
                }
            }
        }
    }
    assert!(waves.len() > 20, "{} waves", waves.len());
    let mut pos = vec![0f32; dim * n];
    let mut vel = vec![0f32; dim * n];
    for i in 0..n {
        let x: Vec<f64> = (0..dim).map(|_| rng.unit() * side).collect();
        for d in 0..dim {
            pos[d * n + i] = x[d] as f32;
            let u: f64 = waves
                .iter()
                .map(|(k, ph)| ((0..dim).map(|e| k[e] * x[e]).sum::<f64>() + ph[d]).cos())
                .sum();
            // A flock moving along x, with the field as its fluctuations.
            vel[d * n + i] =
                (u / (waves.len() as f64).sqrt() + if d == 0 { 3.0 } else { 0.0 }) as f32;
        }
    }
    (pos, vel)
}

fn analyze(dir: &Path, file: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["analyze", file.to_str().unwrap(), "--json"];
    args.extend_from_slice(extra);
    let out = succeeds(dir, &args).stdout;
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

fn floats(v: &Value) -> Vec<Option<f64>> {
    v.as_array().unwrap().iter().map(Value::as_f64).collect()
}

#[test]
fn a_field_of_known_correlation_length_gives_it_within_5_percent() {
    let d = tmp();
    let mut rng = Rng(7);
    // 2D, the grid method (20 000 agents): ξ = 2.4048 / k, k = 2π·10/L.
    let (side, shell) = (100.0, 10.0);
    let frames: Vec<_> = (0..3)
        .map(|_| wave_frame(2, 20_000, side, shell, &mut rng))
        .collect();
    let p = record(
        d.path(),
        "waves2.bfs",
        &header(2, 20_000, Boundary::Wrap, side as f32),
        &frames,
    );
    let a = analyze(d.path(), &p, &["--r-max", "10", "--bins", "50"]);
    assert_eq!(a["method"], "grid");
    let want = 2.4048 / (std::f64::consts::TAU * shell / side);
    let xi = a["correlation_length"].as_f64().unwrap();
    assert!((xi / want - 1.0).abs() < 0.05, "2D ξ {xi}, want {want}");
    // 3D, exact (4000 agents): ξ = π / k.
    let (side, shell) = (40.0, 4.0);
    let frames: Vec<_> = (0..3)
        .map(|_| wave_frame(3, 4000, side, shell, &mut rng))
        .collect();
    let p = record(
        d.path(),
        "waves3.bfs",
        &header(3, 4000, Boundary::Wrap, side as f32),
        &frames,
    );
    let a = analyze(d.path(), &p, &["--bins", "40"]);
    assert_eq!(a["method"], "exact");
    let want = std::f64::consts::PI / (std::f64::consts::TAU * shell / side);
    let xi = a["correlation_length"].as_f64().unwrap();
    assert!((xi / want - 1.0).abs() < 0.05, "3D ξ {xi}, want {want}");
    // The error bar is a bootstrap over the three frames: there, and small.
    let err = a["correlation_length_error"].as_f64().unwrap();
    assert!(err > 0.0 && err < 0.1 * want, "ξ error {err}");
}

/// Per bin, over every ordered pair of every frame, in float64: Σ δu_i·δu_j / ⟨|δu|²⟩ and the
/// pair count, and Q(r) averaged over frames; δu = u − `mean`, or each frame's own mean.
fn direct_sums(
    frames: &[(Vec<f32>, Vec<f32>)],
    side: f64,
    r_max: f64,
    bins: usize,
    mean: Option<[f64; 2]>,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let dr = r_max / bins as f64;
    let (mut num, mut cnt, mut q) = (vec![0.0; bins], vec![0.0; bins], vec![0.0; bins]);
    for (pos, vel) in frames {
        let n = pos.len() / 2;
        let own = [0, 1].map(|k| {
            vel[k * n..(k + 1) * n]
                .iter()
                .map(|&v| v as f64)
                .sum::<f64>()
                / n as f64
        });
        let mean = mean.unwrap_or(own);
        let du = |i: usize, k: usize| vel[k * n + i] as f64 - mean[k];
        let c0 = (0..n)
            .map(|i| du(i, 0).powi(2) + du(i, 1).powi(2))
            .sum::<f64>()
            / n as f64;
        let mut frame_num = vec![0.0; bins];
        for i in 0..n {
            for j in (0..n).filter(|&j| j != i) {
                let r = (0..2)
                    .map(|k| {
                        let x = pos[k * n + j] as f64 - pos[k * n + i] as f64;
                        (x - side * (x / side).round()).powi(2)
                    })
                    .sum::<f64>()
                    .sqrt();
                if r < r_max {
                    let b = (r / dr) as usize;
                    let dot = (du(i, 0) * du(j, 0) + du(i, 1) * du(j, 1)) / c0;
                    num[b] += dot;
                    frame_num[b] += dot;
                    cnt[b] += 1.0;
                }
            }
        }
        let mut run = 1.0;
        for b in 0..bins {
            run += frame_num[b] / n as f64;
            q[b] += run / frames.len() as f64;
        }
    }
    (num, cnt, q)
}

/// C(r), g(r) and Q(r) of every bin as a direct float64 sum over every pair would give them.
#[test]
fn exact_sums_agree_with_a_direct_float64_computation() {
    let d = tmp();
    let mut rng = Rng(11);
    let (n, side, bins, r_max) = (2000usize, 50.0f64, 25usize, 20.0f64);
    let frames: Vec<_> = (0..2)
        .map(|_| wave_frame(2, n, side, 4.0, &mut rng))
        .collect();
    let p = record(
        d.path(),
        "pairs.bfs",
        &header(2, n as u32, Boundary::Wrap, side as f32),
        &frames,
    );
    let a = analyze(
        d.path(),
        &p,
        &["--method", "exact", "--bins", "25", "--r-max", "20"],
    );
    let dr = r_max / bins as f64;
    let (num, cnt, q) = direct_sums(&frames, side, r_max, bins, None);
    let (c, g, qs) = (floats(&a["c"]), floats(&a["g"]), floats(&a["q"]));
    for b in 0..bins {
        let want_c = num[b] / cnt[b];
        assert!(
            (c[b].unwrap() - want_c).abs() < 1e-6,
            "C bin {b}: {:?} vs {want_c}",
            c[b]
        );
        let r0 = b as f64 * dr;
        let shell = std::f64::consts::PI * ((r0 + dr).powi(2) - r0 * r0);
        let ideal = frames.len() as f64 * (n * (n - 1)) as f64 / (side * side) * shell;
        let want_g = cnt[b] / ideal;
        assert!(
            (g[b].unwrap() - want_g).abs() < 1e-6,
            "g bin {b}: {:?} vs {want_g}",
            g[b]
        );
        assert!(
            (qs[b].unwrap() - q[b]).abs() < 1e-6 * q[b].abs().max(1.0),
            "Q bin {b}"
        );
    }
    let chi = a["susceptibility"].as_f64().unwrap();
    let want_chi = q.iter().copied().fold(1.0, f64::max);
    assert!(
        (chi - want_chi).abs() < 1e-6 * want_chi,
        "χ {chi} vs {want_chi}"
    );

    // --mean frames: the mean over both frames removed instead of each frame's own.
    let a = analyze(
        d.path(),
        &p,
        &[
            "--method", "exact", "--bins", "25", "--r-max", "20", "--mean", "frames",
        ],
    );
    let total = (2 * n) as f64;
    let mean = [0, 1].map(|k| {
        frames
            .iter()
            .map(|(_, vel)| {
                vel[k * n..(k + 1) * n]
                    .iter()
                    .map(|&v| v as f64)
                    .sum::<f64>()
            })
            .sum::<f64>()
            / total
    });
    let (num, cnt, _) = direct_sums(&frames, side, r_max, bins, Some(mean));
    let c = floats(&a["c"]);
    for b in 0..bins {
        let want = num[b] / cnt[b];
        assert!(
            (c[b].unwrap() - want).abs() < 1e-6,
            "--mean frames, C bin {b}: {:?} vs {want}",
            c[b]
        );
    }
    assert_eq!(a["mean"], "frames");
}

/// The grid method's C(r) follows the exact one's within a few hundredths, ξ within 3%.
#[test]
fn the_grid_method_follows_the_exact_one() {
    let d = tmp();
    let mut rng = Rng(5);
    let frames: Vec<_> = (0..2)
        .map(|_| wave_frame(2, 4000, 60.0, 5.0, &mut rng))
        .collect();
    let p = record(
        d.path(),
        "both.bfs",
        &header(2, 4000, Boundary::Wrap, 60.0),
        &frames,
    );
    let flags = ["--r-max", "15", "--bins", "30"];
    let exact = analyze(d.path(), &p, &[&flags[..], &["--method", "exact"]].concat());
    let grid = analyze(d.path(), &p, &[&flags[..], &["--method", "grid"]].concat());
    let (ce, cg) = (floats(&exact["c"]), floats(&grid["c"]));
    for (b, (e, g)) in ce.iter().zip(&cg).enumerate().skip(1) {
        let (e, g) = (e.unwrap(), g.unwrap());
        assert!((e - g).abs() < 0.04, "bin {b}: exact {e}, grid {g}");
    }
    let (xe, xg) = (
        exact["correlation_length"].as_f64().unwrap(),
        grid["correlation_length"].as_f64().unwrap(),
    );
    assert!((xe / xg - 1.0).abs() < 0.03, "ξ exact {xe}, grid {xg}");
}

#[test]
fn isotropic_points_have_no_anisotropy_and_lined_up_ones_do() {
    let d = tmp();
    let mut rng = Rng(3);
    for dim in [2usize, 3] {
        let n = 3000;
        let side = 30.0;
        let frames: Vec<_> = (0..6)
            .map(|_| {
                let pos: Vec<f32> = (0..dim * n).map(|_| (rng.unit() * side) as f32).collect();
                let vel: Vec<f32> = (0..dim * n)
                    .map(|c| {
                        if c < n {
                            1.0
                        } else {
                            0.1 * (rng.unit() as f32 - 0.5)
                        }
                    })
                    .collect();
                (pos, vel)
            })
            .collect();
        let name = format!("iso{dim}.bfs");
        let p = record(
            d.path(),
            &name,
            &header(dim as u8, n as u32, Boundary::Wrap, side as f32),
            &frames,
        );
        let a = analyze(d.path(), &p, &["--k-max", "10"]);
        let an = &a["anisotropy"];
        let (g, e) = (floats(&an["gamma"]), floats(&an["gamma_error"]));
        for k in 0..10 {
            let (g, e) = (g[k].unwrap(), e[k].unwrap());
            assert!(g.abs() <= 3.0 * e, "{dim}D k={}: γ {g} ± {e}", k + 1);
            assert!(e < 0.02, "{dim}D k={}: error {e}", k + 1);
        }
        assert_eq!(an["isotropic_from_k"], 1, "{dim}D");
        // Spread over the whole periodic box: no flock's shape to speak of, and it says so.
        let caveats = a["caveats"].to_string();
        assert!(
            caveats.contains("spread over the periodic box"),
            "{caveats}"
        );
    }
    // Agents in rows along the flight direction, 1 apart, the rows 3 apart: the two nearest
    // neighbours are straight ahead and behind, (û·V̂)² = 1, γ = 1 − 1/2.
    let (cols, rows) = (60usize, 20usize);
    let n = cols * rows;
    let mut pos = vec![0f32; 2 * n];
    for r in 0..rows {
        for c in 0..cols {
            let i = r * cols + c;
            pos[i] = c as f32 + 0.5;
            pos[n + i] = 3.0 * r as f32 + 1.5;
        }
    }
    let vel: Vec<f32> = (0..2 * n).map(|c| if c < n { 1.0 } else { 0.0 }).collect();
    let p = record(
        d.path(),
        "rows.bfs",
        &header(2, n as u32, Boundary::Wrap, 60.0),
        &[(pos, vel)],
    );
    let a = analyze(d.path(), &p, &["--k-max", "2"]);
    let g = floats(&a["anisotropy"]["gamma"]);
    for (k, g) in g.iter().enumerate() {
        assert!((g.unwrap() - 0.5).abs() < 1e-6, "k={}: {g:?}", k + 1);
    }
    // Ballerini's measure of the same: the neighbours lie along V̂, the direction they lie
    // along least is across it, (W·V̂)² = 0.
    let w = floats(&a["anisotropy"]["projection"]);
    for (k, w) in w.iter().enumerate() {
        assert!(w.unwrap().abs() < 1e-9, "k={}: {w:?}", k + 1);
    }
}

/// `n` points uniform in the ellipsoid of semi-axes `semi` (x, y, z), tilted by `tilt` about
/// x, around (500, 500, 500): the flock flies along x.
fn ellipsoid(n: usize, semi: [f64; 3], tilt: f64, rng: &mut Rng) -> (Vec<f32>, Vec<f32>) {
    let mut pos = vec![0f32; 3 * n];
    let mut i = 0;
    while i < n {
        let u = [0; 3].map(|_| 2.0 * rng.unit() - 1.0);
        if u.iter().map(|x| x * x).sum::<f64>() > 1.0 {
            continue;
        }
        let [x, y, z] = [0, 1, 2].map(|k| u[k] * semi[k]);
        pos[i] = (500.0 + x) as f32;
        pos[n + i] = (500.0 + y * tilt.cos() - z * tilt.sin()) as f32;
        pos[2 * n + i] = (500.0 + y * tilt.sin() + z * tilt.cos()) as f32;
        i += 1;
    }
    let vel = (0..3 * n).map(|c| if c < n { 1.0 } else { 0.0 }).collect();
    (pos, vel)
}

/// The flock's shape against a solid of known shape: the principal axes of a uniform
/// ellipsoid (a / √5 along a semi-axis a), their ratios and the thin axis' tilt; the least
/// nearest-neighbour distance against a direct search; the density at the border against the
/// centre of balls whose density rises to the border, is uniform, or falls from the centre.
#[test]
fn the_flocks_shape_is_that_of_a_known_solid() {
    let d = tmp();
    let mut rng = Rng(11);
    let n = 4000;
    let semi = [50.0, 20.0, 7.0];
    let tilt = 15f64.to_radians();
    let frames: Vec<_> = (0..3).map(|_| ellipsoid(n, semi, tilt, &mut rng)).collect();
    let p = record(
        d.path(),
        "slab.bfs",
        &header(3, n as u32, Boundary::Open, 1000.0),
        &frames,
    );
    let a = analyze(d.path(), &p, &[]);
    let axes = floats(&a["principal_axes"]);
    for (got, s) in axes.iter().zip(semi) {
        let want = s / 5f64.sqrt();
        assert!((got.unwrap() / want - 1.0).abs() < 0.03, "{axes:?}");
    }
    let ratios = floats(&a["aspect_ratios"]);
    for (got, want) in ratios.iter().zip([1.0, 20.0 / 7.0, 50.0 / 7.0]) {
        assert!((got.unwrap() / want - 1.0).abs() < 0.04, "{ratios:?}");
    }
    assert!(
        !a["caveats"].to_string().contains("periodic"),
        "{}",
        a["caveats"]
    );
    let v = a["thinnest_axis_to_vertical"].as_f64().unwrap();
    assert!((v - 15.0).abs() < 1.0, "tilt {v}");
    // The least distance between two agents, per frame, averaged: by brute force.
    let least: f64 = frames
        .iter()
        .map(|(pos, _)| {
            let mut m = f64::INFINITY;
            for i in 0..n {
                for j in i + 1..n {
                    let r2: f64 = (0..3)
                        .map(|k| (pos[k * n + i] as f64 - pos[k * n + j] as f64).powi(2))
                        .sum();
                    m = m.min(r2);
                }
            }
            m.sqrt()
        })
        .sum::<f64>()
        / frames.len() as f64;
    let nn = a["nearest_neighbour"]["min"].as_f64().unwrap();
    assert!(
        (nn - least).abs() < 1e-9 * least.max(1.0),
        "{nn} against {least}"
    );
    assert!(a["nearest_neighbour"]["mean"].as_f64().unwrap() > nn);
    // A ball of radius 30 whose density goes as r^p: uniform (p = 0), rising to the border
    // (p = 6), falling from the centre (p = −1.5).
    let ball = |p: f64, rng: &mut Rng| {
        let mut pos = vec![0f32; 3 * n];
        for i in 0..n {
            let r = 30.0 * rng.unit().powf(1.0 / (3.0 + p));
            let dir = loop {
                let u = [0; 3].map(|_| 2.0 * rng.unit() - 1.0);
                let l = u.iter().map(|x| x * x).sum::<f64>().sqrt();
                if l > 0.1 && l <= 1.0 {
                    break u.map(|x| x / l);
                }
            };
            for k in 0..3 {
                pos[k * n + i] = (500.0 + r * dir[k]) as f32;
            }
        }
        let vel = (0..3 * n).map(|c| if c < n { 1.0 } else { 0.0 }).collect();
        (pos, vel)
    };
    let ratio = |p: f64, name: &str, rng: &mut Rng| {
        let file = record(
            d.path(),
            name,
            &header(3, n as u32, Boundary::Open, 1000.0),
            &[ball(p, rng), ball(p, rng)],
        );
        let a = analyze(d.path(), &file, &[]);
        let b = &a["border_density"];
        let f = b["border_fraction"].as_f64().unwrap();
        assert!(f > 0.05 && f < 0.4, "{name}: border fraction {f}");
        b["ratio"].as_f64().unwrap()
    };
    let uniform = ratio(0.0, "uniform.bfs", &mut rng);
    let border = ratio(6.0, "rising.bfs", &mut rng);
    let centre = ratio(-1.5, "falling.bfs", &mut rng);
    // The guide's band for a uniform flock (0.89 here: a ball's border is curved), and the
    // gradients' sides of it.
    assert!((0.8..1.1).contains(&uniform), "uniform: {uniform}");
    assert!(
        border > 1.15 && border > 1.25 * uniform,
        "denser at the border: {border}"
    );
    assert!(centre < 0.5, "denser at the centre: {centre}");
}

#[test]
fn a_correlation_plot_is_drawn() {
    let d = tmp();
    let mut rng = Rng(9);
    let frames: Vec<_> = (0..2)
        .map(|_| wave_frame(2, 1500, 40.0, 4.0, &mut rng))
        .collect();
    let p = record(
        d.path(),
        "plot.bfs",
        &header(2, 1500, Boundary::Wrap, 40.0),
        &frames,
    );
    let out = d.path().join("c.png");
    let r = succeeds(
        d.path(),
        &["analyze", p.to_str().unwrap(), "--plot", "c.png"],
    );
    has(&r.stdout, "correlation length ξ");
    let img = image::open(&out).unwrap().to_rgb8();
    assert_eq!(img.dimensions(), (960, 1200));
    // The curve's blue and the ξ marker's red are drawn; below, the neighbours' panel: γ_k's
    // orange and Ballerini's projection's purple, in the bottom third.
    let has_colour = |c: [u8; 3]| img.pixels().any(|p| p.0 == c);
    assert!(has_colour([31, 119, 180]), "no C(r) curve");
    assert!(has_colour([214, 39, 40]), "no ξ marker");
    let below = |c: [u8; 3]| img.enumerate_pixels().any(|(_, y, p)| y > 800 && p.0 == c);
    assert!(below([255, 127, 14]), "no γ_k curve");
    assert!(below([148, 103, 189]), "no (W·V̂)² curve");
}

#[test]
fn bad_input_is_refused_naming_the_flag_and_two_agents_still_answer() {
    let d = tmp();
    let h = header(2, 2, Boundary::Wrap, 10.0);
    let two = record(
        d.path(),
        "two.bfs",
        &h,
        &vec![(vec![1.0, 2.0, 1.0, 1.0], vec![1.0, 0.0, 0.0, 1.0]); 3],
    );
    let f = two.to_str().unwrap();
    let r = succeeds(d.path(), &["analyze", f]);
    has(&r.stdout, "note: 2 agents");
    has(
        &fails(d.path(), &["analyze", f, "--frames", "2..7"]),
        "--frames",
    );
    has(
        &fails(d.path(), &["analyze", f, "--r-max", "6"]),
        "--r-max: 6 is beyond half the periodic box (5)",
    );
    // No frame at all: said as such, not blamed on a --frames nobody gave.
    let none = record(d.path(), "none.bfs", &h, &[]);
    let err = fails(d.path(), &["analyze", none.to_str().unwrap()]);
    has(&err, "the recording holds no complete frame to analyse");
    assert!(!err.contains("--frames"), "{err}");
    has(&fails(d.path(), &["analyze", f, "--bins", "0"]), "--bins");
    has(&fails(d.path(), &["analyze", f, "--k-max", "0"]), "--k-max");
    // Each resample holds memory: millions would exhaust it instead of failing cleanly.
    has(
        &fails(d.path(), &["analyze", f, "--bootstrap", "5000000"]),
        "--bootstrap: at most 100000",
    );
    has(
        &fails(d.path(), &["analyze", f, "--plot", "c.jpg"]),
        "--plot",
    );
    let one = record(
        d.path(),
        "one.bfs",
        &header(2, 1, Boundary::Wrap, 10.0),
        &[(vec![1.0, 1.0], vec![1.0, 0.0])],
    );
    has(
        &fails(d.path(), &["analyze", one.to_str().unwrap()]),
        "1 agent",
    );
    let nan = record(
        d.path(),
        "nan.bfs",
        &h,
        &[
            (vec![1.0, 2.0, 1.0, 1.0], vec![1.0, 0.0, 0.0, 1.0]),
            (vec![1.0, f32::NAN, 1.0, 1.0], vec![1.0, 0.0, 0.0, 1.0]),
        ],
    );
    has(
        &fails(d.path(), &["analyze", nan.to_str().unwrap()]),
        "frame 1",
    );
}

/// A flock in perfect order (every agent's velocity the same but for float32 rounding, which a
/// rotation leaves) has no fluctuations to correlate: the analysis says so in its caveats,
/// and a flock with a thousandth of a radian of heading noise gets no such caveat.
#[test]
fn a_flock_in_perfect_order_is_named_as_such() {
    let d = tmp();
    let n = 400;
    let mut rng = Rng(7);
    let frame = |spread: f64, rng: &mut Rng| {
        let mut pos = vec![0f32; 2 * n];
        let mut vel = vec![0f32; 2 * n];
        for i in 0..n {
            pos[i] = (rng.unit() * 20.0) as f32;
            pos[n + i] = (rng.unit() * 20.0) as f32;
            let a = 0.7 + spread * (rng.unit() - 0.5);
            vel[i] = (3.0 * a.cos()) as f32;
            vel[n + i] = (3.0 * a.sin()) as f32;
        }
        (pos, vel)
    };
    let h = header(2, n as u32, Boundary::Wrap, 20.0);
    // Angles within 1e-9 rad: the same f32 velocity up to its last bit.
    let ordered: Vec<_> = (0..4).map(|_| frame(1e-9, &mut rng)).collect();
    let noisy: Vec<_> = (0..4).map(|_| frame(1e-3, &mut rng)).collect();
    let ordered = analyze(d.path(), &record(d.path(), "o.bfs", &h, &ordered), &[]);
    let noisy = analyze(d.path(), &record(d.path(), "n.bfs", &h, &noisy), &[]);
    let said = |v: &Value| v["caveats"].to_string();
    has(
        &said(&ordered),
        "4 of 4 frames with no fluctuations beyond float32 rounding",
    );
    assert!(!said(&noisy).contains("rounding"), "{}", said(&noisy));
}
