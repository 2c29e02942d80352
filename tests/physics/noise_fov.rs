//! Boids' heading noise (`boids.noise`) and field of view (`boids.fov`): the float64 model the
//! reference in `physics.rs` uses, what each rule does to one agent, and what both do to the
//! lattices cuplan's parameters freeze into.

use super::*;

/// Whether an agent moving with `v` sees the offset `d` with a field of view of `fov` degrees:
/// the angle between them is at most fov/2 (no heading, or no offset: seen).
pub fn sees(fov: f64, v: &[f64; 3], d: &[f64; 3]) -> bool {
    if fov >= 360.0 {
        return true;
    }
    let dot: f64 = (0..3).map(|k| v[k] * d[k]).sum();
    let (sv, sd) = (norm(v), norm(d));
    sv == 0.0 || sd == 0.0 || dot >= (fov / 2.0).to_radians().cos() * sv * sd
}

fn norm(v: &[f64; 3]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// Heading noise on the steered velocity `v` of `agent` at step `step`: turned by
/// θ = (u − ½)·η·√dt, u from the solver's counter-based stream 1; in 3D towards
/// t = cos φ·e1 + sin φ·e2, φ = (u' − ½)·2π from stream 2, (e1, e2) the basis of the plane
/// normal to v that forge documents (Duff et al. 2017): v ← cos θ·v + sin θ·|v|·t.
pub fn turn(s: &Scene, step: u64, agent: u64, dim: usize, v: &mut [f64; 3]) {
    let eta = s.boids.as_ref().unwrap().noise as f64;
    if eta == 0.0 {
        return;
    }
    let u = rand_uniform(s.seed, step, agent, 1) as f64 - 0.5;
    let th = u * eta * (s.dt as f64).sqrt();
    let (c, sn) = (th.cos(), th.sin());
    if dim == 2 {
        *v = [c * v[0] - sn * v[1], sn * v[0] + c * v[1], 0.0];
        return;
    }
    let speed = norm(v);
    if speed == 0.0 {
        return;
    }
    let n = v.map(|x| x / speed);
    let sign = if n[2] >= 0.0 { 1.0 } else { -1.0 };
    let a = -1.0 / (sign + n[2]);
    let b = n[0] * n[1] * a;
    let e1 = [1.0 + sign * n[0] * n[0] * a, sign * b, -sign * n[0]];
    let e2 = [b, sign + n[1] * n[1] * a, -n[1]];
    let phi = (rand_uniform(s.seed, step, agent, 2) as f64 - 0.5) * std::f64::consts::TAU;
    for k in 0..3 {
        let t = phi.cos() * e1[k] + phi.sin() * e2[k];
        v[k] = c * v[k] + sn * speed * t;
    }
}

#[test]
fn boids_with_noise_and_a_field_of_view_agree_with_float64_reference() {
    // A narrow field (fov < 180°) and a wide one, 2D and 3D, metric and topological; clusters,
    // so that many neighbours sit in the blind angle. The f64 reference decides "seen" by the
    // angle itself (libm's cos, no squares): it agrees with the solver's f32 test unless a
    // neighbour sits within rounding of the edge of the field (none does, in these seeded runs).
    for (text, dim) in [
        (
            r#"{"model": "boids", "agents": 400, "seed": 9, "world": {"size": [300, 200]},
                "boids": {"w_sep": 40, "noise": 1.5, "fov": 120},
                "init": {"layout": "clusters", "count": 4, "radius": 40}}"#,
            2,
        ),
        (
            r#"{"model": "boids", "agents": 400, "seed": 11, "world": {"size": [300, 200]},
                "boids": {"w_sep": 40, "noise": 4, "fov": 270,
                          "neighbours": {"kind": "topological", "k": 7}},
                "init": {"layout": "clusters", "count": 4, "radius": 40}}"#,
            2,
        ),
        (
            r#"{"model": "boids", "dim": 3, "agents": 400, "seed": 10,
                "world": {"size": [120, 120, 120]}, "boids": {"w_sep": 40, "noise": 2, "fov": 200}}"#,
            3,
        ),
        (
            r#"{"model": "boids", "dim": 3, "agents": 400, "seed": 12,
                "world": {"size": [120, 120, 120]},
                "boids": {"w_sep": 40, "noise": 3, "fov": 90,
                          "neighbours": {"kind": "topological", "k": 6}}}"#,
            3,
        ),
    ] {
        let s = scene(text);
        for search in [Search::Brute, Search::Grid] {
            let mut sol = solver(&s, search, 1);
            let mut r = to_f64(&sol.state());
            for t in 0..STEPS {
                sol.step().unwrap();
                boids_reference(&s, &mut r, dim, 400, t);
                let (ep, ev) = max_err(&s, &sol.state(), &r);
                assert!(
                    ep < 2e-3 && ev < 2e-2,
                    "{dim}D {search:?} step {t}: position error {ep}, velocity error {ev}: {text}"
                );
            }
        }
    }
}

/// Alignment and cohesion only, for [`placed`].
const ALI_COH: &str = r#""w_sep": 0, "w_ali": 1, "w_coh": 1"#;

/// A scene of agents placed by hand: agent 0 at (30, 30) heading +x, the others at `others`
/// (offsets from it) with velocity `v_other`; `boids` gives the weights and the rest.
fn placed(boids: &str, others: &[[f32; 2]], v_other: [f32; 2]) -> CpuSolver {
    let n = 1 + others.len();
    let s = scene(&format!(
        r#"{{"model": "boids", "agents": {n}, "world": {{"size": [60, 60]}},
            "boids": {{"r_sep": 1, "r_ali": 8, "r_coh": 8, "max_force": 1000, "v_min": 0,
                       "v_max": 100, {boids}}}}}"#
    ));
    let mut st = State::zeros(2, n).unwrap();
    st.pos[0] = 30.0;
    st.pos[n] = 30.0;
    st.vel[0] = 1.0;
    for (j, o) in others.iter().enumerate() {
        st.pos[1 + j] = 30.0 + o[0];
        st.pos[n + 1 + j] = 30.0 + o[1];
        st.vel[1 + j] = v_other[0];
        st.vel[n + 1 + j] = v_other[1];
    }
    CpuSolver::new(Params::from_scene(&s, n), st, 1, Search::Brute).unwrap()
}

/// Agent 0's velocity after one step.
fn v0_after(mut sol: CpuSolver) -> [f32; 2] {
    sol.step().unwrap();
    let st = sol.state();
    [st.vel[0], st.vel[st.n]]
}

/// The offset of length `r` at `deg` degrees from agent 0's heading (+x).
fn at(deg: f64, r: f64) -> [f32; 2] {
    let a = deg.to_radians();
    [(r * a.cos()) as f32, (r * a.sin()) as f32]
}

#[test]
fn a_field_of_view_hides_the_blind_angle_from_alignment_and_cohesion() {
    let unmoved = [1.0, 0.0];
    let up = [0.0, 2.0];
    // All around (360°), every neighbour pulls; in the blind angle, none does: agent 0 keeps
    // its velocity bit for bit (no steering at all).
    for (fov, deg, seen) in [
        (360.0, 180.0, true),
        (90.0, 180.0, false), // straight behind
        (90.0, 40.0, true),   // within 45° of the heading
        (90.0, -50.0, false), // just outside
        (270.0, 120.0, true), // within 135°
        (270.0, 150.0, false),
        (270.0, -150.0, false),
        (180.0, 80.0, true),
        (180.0, 100.0, false),
    ] {
        let v = v0_after(placed(
            &format!(r#"{ALI_COH}, "fov": {fov}"#),
            &[at(deg, 3.0)],
            up,
        ));
        assert_eq!(
            v != unmoved,
            seen,
            "fov {fov}: a neighbour at {deg}° {} agent 0 (velocity {v:?})",
            if seen { "must steer" } else { "must not steer" }
        );
    }
}

#[test]
fn separation_sees_all_around() {
    // A neighbour straight behind, within r_sep: it pushes agent 0 whatever the field of view,
    // by exactly as much.
    let sep = r#""w_sep": 1, "w_ali": 0, "w_coh": 0"#;
    let behind = [at(180.0, 0.5)];
    let all = v0_after(placed(
        &format!(r#"{sep}, "fov": 360"#),
        &behind,
        [1.0, 0.0],
    ));
    let blind = v0_after(placed(&format!(r#"{sep}, "fov": 60"#), &behind, [1.0, 0.0]));
    assert!(all[0] > 1.0, "pushed forward: {all:?}");
    assert_eq!(all, blind);
}

#[test]
fn topological_neighbours_are_the_nearest_of_those_seen() {
    // k = 1: a neighbour behind at distance 2 and one ahead at distance 5. With a blind angle
    // behind, the one ahead is the nearest seen: the step is the same, bit for bit, as with
    // the one behind not there at all.
    let topo = format!(r#"{ALI_COH}, "neighbours": {{"kind": "topological", "k": 1}}"#);
    let (behind, ahead) = (at(180.0, 2.0), at(10.0, 5.0));
    let v = [0.0, 2.0];
    let blind = v0_after(placed(
        &format!(r#"{topo}, "fov": 120"#),
        &[behind, ahead],
        v,
    ));
    let only_ahead = v0_after(placed(&format!(r#"{topo}, "fov": 360"#), &[ahead], v));
    let all = v0_after(placed(
        &format!(r#"{topo}, "fov": 360"#),
        &[behind, ahead],
        v,
    ));
    assert_eq!(blind, only_ahead);
    assert_ne!(blind, all, "all around, the nearest is the one behind");
}

/// Signed angle from `a` to `b` (2D).
fn angle2(a: [f64; 2], b: [f64; 2]) -> f64 {
    (a[0] * b[1] - a[1] * b[0]).atan2(a[0] * b[0] + a[1] * b[1])
}

/// The steering-free boids of `dim` D (all weights 0) with heading noise `eta` and step `dt`,
/// all starting with the same heading: only the noise turns them. Returns, per agent and
/// step, the velocity before and after.
fn noise_only(dim: usize, eta: f64, dt: f64, steps: u64) -> Vec<([f64; 3], [f64; 3])> {
    let world = if dim == 2 {
        "[500, 500]"
    } else {
        "[500, 500, 500]"
    };
    let s = scene(&format!(
        r#"{{"model": "boids", "dim": {dim}, "agents": 2000, "seed": 77, "dt": {dt},
            "world": {{"size": {world}}},
            "boids": {{"w_sep": 0, "w_ali": 0, "w_coh": 0, "v_min": 1, "v_max": 2,
                       "noise": {eta}}},
            "init": {{"velocity": "aligned"}}}}"#
    ));
    let mut sol = solver(&s, Search::Grid, 1);
    let mut out = Vec::new();
    let vel = |st: &State, i: usize| -> [f64; 3] {
        std::array::from_fn(|k| {
            if k < dim {
                st.vel[k * st.n + i] as f64
            } else {
                0.0
            }
        })
    };
    for _ in 0..steps {
        let before = sol.state();
        sol.step().unwrap();
        let after = sol.state();
        for i in 0..after.n {
            out.push((vel(&before, i), vel(&after, i)));
        }
    }
    out
}

#[test]
fn heading_noise_turns_by_at_most_half_its_width_centred_and_keeps_the_speed() {
    let (eta, dt) = (2.0, 0.05f64);
    let w = eta * dt.sqrt();
    let turns: Vec<f64> = noise_only(2, eta, dt, 20)
        .iter()
        .map(|(a, b)| {
            assert!((norm(a) - norm(b)).abs() < 1e-5 * norm(a), "speed kept");
            angle2([a[0], a[1]], [b[0], b[1]])
        })
        .collect();
    let n = turns.len() as f64;
    let max = turns.iter().fold(0f64, |m, x| m.max(x.abs()));
    let mean = turns.iter().sum::<f64>() / n;
    let var = turns.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    // Uniform in [−w/2, w/2): at most w/2, nearly all of it used, mean 0, variance w²/12.
    assert!(
        max <= w / 2.0 + 1e-5,
        "largest turn {max} > w/2 = {}",
        w / 2.0
    );
    assert!(
        max > 0.999 * w / 2.0,
        "largest turn {max}, w/2 = {}",
        w / 2.0
    );
    let sd_mean = (w * w / 12.0 / n).sqrt();
    assert!(mean.abs() < 4.0 * sd_mean, "mean turn {mean}: not centred");
    assert!((var / (w * w / 12.0) - 1.0).abs() < 0.02, "variance {var}");
}

#[test]
fn heading_noise_diffuses_the_heading_at_a_rate_that_does_not_depend_on_dt() {
    // Over the same time T the angle turned has variance T·η²/12 whatever the step: 40 steps
    // of dt = 0.05 against 160 of dt = 0.0125 (the turns of successive steps add in 2D). With
    // 10 000 agents the sample variance is within 1.4% (one standard deviation) of it.
    let (eta, t, agents) = (1.5, 2.0, 10_000);
    let want = t * eta * eta / 12.0;
    for (dt, steps) in [(0.05, 40), (0.0125, 160)] {
        let s = scene(&format!(
            r#"{{"model": "boids", "agents": {agents}, "seed": 78, "dt": {dt},
                "world": {{"size": [500, 500]}},
                "boids": {{"w_sep": 0, "w_ali": 0, "w_coh": 0, "v_min": 1, "v_max": 2,
                           "noise": {eta}}}}}"#
        ));
        let mut sol = solver(&s, Search::Grid, 2);
        let mut total = vec![0f64; agents];
        let mut before = sol.state();
        for _ in 0..steps {
            sol.step().unwrap();
            let after = sol.state();
            for (i, x) in total.iter_mut().enumerate() {
                let v = |st: &State| [st.vel[i] as f64, st.vel[agents + i] as f64];
                *x += angle2(v(&before), v(&after));
            }
            before = after;
        }
        let var = total.iter().map(|x| x * x).sum::<f64>() / agents as f64;
        println!("dt {dt}: heading variance {var:.4} after T = {t}, T·η²/12 = {want:.4}");
        assert!(
            (var / want - 1.0).abs() < 0.05,
            "dt {dt}: heading variance {var} after T = {t}, want {want}"
        );
    }
}

#[test]
fn heading_noise_in_3d_tilts_by_at_most_half_its_width_towards_any_side() {
    let (eta, dt) = (3.0, 0.05f64);
    let w = eta * dt.sqrt();
    let pairs = noise_only(3, eta, dt, 10);
    let (mut sum_tilt, mut max_tilt) = (0.0, 0f64);
    // Which side each agent tilted to at the first step, when the whole flock has one heading:
    // the part of its new heading across the old one, as a unit vector `a`. Every side as
    // likely: the mean of a is 0 and the mean of a·aᵀ is (I − h·hᵀ)/2 (h the heading), whose
    // square has trace 1/2 (tilts all towards ±one side would give 1).
    let (mut side, mut spread) = ([0f64; 3], [[0f64; 3]; 3]);
    let first = 2000;
    for (i, (a, b)) in pairs.iter().enumerate() {
        let (na, nb) = (norm(a), norm(b));
        assert!((na - nb).abs() < 1e-5 * na, "speed kept");
        let ua = a.map(|x| x / na);
        let ub = b.map(|x| x / nb);
        let cos: f64 = (0..3).map(|k| ua[k] * ub[k]).sum();
        let tilt = cos.clamp(-1.0, 1.0).acos();
        sum_tilt += tilt;
        max_tilt = max_tilt.max(tilt);
        let across: [f64; 3] = std::array::from_fn(|k| ub[k] - cos * ua[k]);
        let m = norm(&across);
        if i < first && m > 1e-9 {
            for k in 0..3 {
                side[k] += across[k] / m;
                for l in 0..3 {
                    spread[k][l] += across[k] * across[l] / (m * m) / first as f64;
                }
            }
        }
    }
    let n = pairs.len() as f64;
    // |θ| uniform in [0, w/2]: its mean is w/4.
    assert!(max_tilt <= w / 2.0 + 1e-5, "tilt {max_tilt} > w/2");
    assert!(
        max_tilt > 0.995 * w / 2.0,
        "largest tilt {max_tilt}, w/2 = {}",
        w / 2.0
    );
    let mean = sum_tilt / n;
    assert!(
        (mean / (w / 4.0) - 1.0).abs() < 0.02,
        "mean tilt {mean}, want {}",
        w / 4.0
    );
    // The mean of n random unit vectors has length ~1/√n.
    let f = first as f64;
    assert!(
        norm(&side) / f < 4.0 / f.sqrt(),
        "tilts favour a side: {side:?}"
    );
    let tr2: f64 = (0..3)
        .flat_map(|k| (0..3).map(move |l| (k, l)))
        .map(|(k, l)| spread[k][l] * spread[l][k])
        .sum();
    assert!(
        (tr2 - 0.5).abs() < 0.03,
        "tilts not spread around: {spread:?}"
    );
}

/// How frozen a 2D flock is between two frames: of each agent's 6 nearest neighbours at the
/// first, the fraction still among its 6 nearest at the second (1: a lattice that moved as one
/// body), and the median change of a neighbour's offset in units of the mean nearest-neighbour
/// distance (a Lindemann ratio: a solid keeps it well below 1). f64 with + − × ÷ √ and a sort
/// only, so the figures are as exact as the run.
fn frozen(world: [f32; 3], a: &State, b: &State) -> (f64, f64) {
    let n = a.n;
    let nearest = |st: &State, i: usize| -> Vec<(f64, usize, [f64; 2])> {
        let mut o: Vec<(f64, usize, [f64; 2])> = (0..n)
            .filter(|&j| j != i)
            .map(|j| {
                let d: [f64; 2] = std::array::from_fn(|k| {
                    let d = st.pos[k * n + j] as f64 - st.pos[k * n + i] as f64;
                    min_image(d, world[k] as f64, true)
                });
                (d[0] * d[0] + d[1] * d[1], j, d)
            })
            .collect();
        o.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
        o.truncate(6);
        o
    };
    let (mut kept, mut spacing, mut moves) = (0, 0.0, Vec::new());
    for i in 0..n {
        let (na, nb) = (nearest(a, i), nearest(b, i));
        spacing += na[0].0.sqrt();
        for &(_, j, d) in &na {
            kept += nb.iter().any(|x| x.1 == j) as usize;
            let e: [f64; 2] = std::array::from_fn(|k| {
                let e = b.pos[k * n + j] as f64 - b.pos[k * n + i] as f64;
                min_image(e, world[k] as f64, true) - d[k]
            });
            moves.push((e[0] * e[0] + e[1] * e[1]).sqrt());
        }
    }
    moves.sort_by(f64::total_cmp);
    let median = moves[moves.len() / 2] / (spacing / n as f64);
    (kept as f64 / (6 * n) as f64, median)
}

#[test]
fn heading_noise_and_a_blind_angle_melt_cuplans_lattice() {
    // cuplan's parameters, 300 agents: the flock condenses into round clusters packed as a
    // lattice that then moves as one body. Measured over steps 1000 → 1500: the fraction of
    // 6-nearest-neighbour bonds kept, and the median change of a neighbour's offset in mean
    // spacings. Either rule alone leaves the clusters frozen; both together melt them.
    // `cargo test --release --test physics melt -- --nocapture` prints the figures.
    let mut figures = Vec::new();
    for (noise, fov) in [(0.0, 360.0), (2.0, 360.0), (0.0, 270.0), (2.0, 270.0)] {
        let s = scene(&format!(
            r#"{{"preset": "cuplan", "agents": 300, "seed": 5, "world": {{"size": [60, 60]}},
                "boids": {{"noise": {noise}, "fov": {fov}}}}}"#
        ));
        let mut sol = solver(&s, Search::Grid, 2);
        for _ in 0..1000 {
            sol.step().unwrap();
        }
        let a = sol.state();
        for _ in 0..500 {
            sol.step().unwrap();
        }
        let (kept, moved) = frozen(s.world, &a, &sol.state());
        println!("noise {noise}, fov {fov}: bonds kept {kept:.4}, median move {moved:.4}");
        figures.push(format!("{kept:.4} {moved:.4}"));
        let melted = noise > 0.0 && fov < 360.0;
        assert_eq!(
            kept < 0.5 && moved > 1.0,
            melted,
            "noise {noise}, fov {fov}: {kept} of the bonds kept, median move {moved}"
        );
    }
    // Exact, since the run is: these change only when the physics does.
    assert_eq!(
        figures,
        [
            "0.8844 0.0730",
            "0.8983 0.0745",
            "0.8828 0.1604",
            "0.1861 3.3085"
        ],
        "the lattice figures changed (update them and the guide's scenes page together)"
    );
}
