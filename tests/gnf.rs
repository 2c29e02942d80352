//! `forge info --gnf`, through the binary: giant number fluctuations of a disordered recording
//! (a gas: α = 1/2) and of an ordered Vicsek flock (α ≈ 0.8 in 2D, Toner & Tu; Chaté et al.
//! 2008), the CSV, the JSON and the plot, and the errors a user can cause.
//!
//! Both recordings are small (≤ 10 000 agents, ≤ 1000 steps): the file runs in seconds.

use std::fs;
use std::path::Path;

use crate::common;

use common::*;

/// Vectorial-noise Vicsek at ρ = 2, v0 = 0.5 far above the transition (η = 2): disordered,
/// every agent a random walker, so box counts are those of uncorrelated points.
const DISORDERED: &str = r#"{"preset": "vicsek1995", "agents": 10000, "steps": 200, "seed": 5,
    "record_every": 20, "world": {"size": [100, 50]},
    "vicsek": {"v0": 0.5, "noise": 2.0, "noise_kind": "vectorial"}}"#;

/// The same far below it (η = 0.3, v_a ≈ 0.94), started aligned (along −x for this seed) in a
/// box elongated along x.
const ORDERED: &str = r#"{"preset": "vicsek1995", "agents": 8192, "steps": 1000, "seed": 2033,
    "record_every": 20, "world": {"size": [128, 32]},
    "vicsek": {"v0": 0.5, "noise": 0.3, "noise_kind": "vectorial"},
    "init": {"velocity": "aligned"}}"#;

fn record(dir: &Path, name: &str, scene: &str) -> String {
    let s = write(dir, &format!("{name}.json"), scene);
    let out = format!("{name}.bfs");
    succeeds(dir, &["simulate", s.to_str().unwrap(), "-o", &out, "-q"]);
    out
}

/// `forge info FILE --json EXTRA...`'s `gnf` object.
fn gnf_json(dir: &Path, file: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["info", file, "--json", "--gnf"];
    args.extend_from_slice(extra);
    let out = succeeds(dir, &args).stdout;
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["gnf"].clone()
}

fn alpha(g: &serde_json::Value) -> f64 {
    g["fit"]["alpha"].as_f64().unwrap()
}

/// Disordered: α = 0.501 ± 0.003 measured (11 frames); the tolerance is 0.03.
#[test]
fn a_disordered_recording_fluctuates_like_a_gas() {
    let d = tmp();
    let f = record(d.path(), "gas", DISORDERED);
    let g = gnf_json(d.path(), &f, &[]);
    assert_eq!(g["frames"], 11);
    let a = alpha(&g);
    assert!((a - 0.5).abs() < 0.03, "α = {a}: {g}");
    // The recording is exact (the determinism contract): the figure is pinned too.
    assert!((a - 0.501_424_976_561_802).abs() < 1e-9, "α = {a}");
    // Every scale: ΔN² ≈ ⟨N⟩, within 10%.
    for s in g["scales"].as_array().unwrap() {
        let (m, dn) = (s["mean"].as_f64().unwrap(), s["delta"].as_f64().unwrap());
        assert!((dn * dn / m - 1.0).abs() < 0.1, "{s}");
    }
}

/// Ordered: α = 0.790 ± 0.006 measured over frames 25..51 (steps 500..1000); known ≈ 0.8.
#[test]
fn an_ordered_flock_has_giant_number_fluctuations() {
    let d = tmp();
    let f = record(d.path(), "flock", ORDERED);
    let g = gnf_json(d.path(), &f, &["--frames", "25.."]);
    assert_eq!(g["frames"], 26);
    let a = alpha(&g);
    assert!(a > 0.7, "α = {a}: {g}");
    assert!(a < 0.9, "α = {a}: {g}");
    assert!(
        (a - 0.790_424_723_688_51).abs() < 1e-9,
        "α = {a} (pinned: the run is exact)"
    );

    // The text, the CSV and the plot of the same measurement.
    let out = succeeds(
        d.path(),
        &[
            "info",
            &f,
            "--frames",
            "25..",
            "--gnf-csv",
            "g.csv",
            "--gnf-plot",
            "g.png",
        ],
    )
    .stdout;
    assert!(out.contains(&format!("alpha {a:.3}")), "{out}");
    let csv = fs::read_to_string(d.path().join("g.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "side_x,side_y,boxes,mean_n,delta_n,fitted"
    );
    let rows: Vec<Vec<f64>> = lines
        .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), g["scales"].as_array().unwrap().len());
    // The largest boxes first: a quarter of the shortest side, 4 x 16 of them.
    assert_eq!(rows[0][..3], [8.0, 8.0, 64.0]);
    assert!(rows.iter().filter(|r| r[5] == 1.0).count() >= 6);
    assert_eq!(decode_png(&d.path().join("g.png")), (800, 640));
}

#[test]
fn gnf_errors_name_the_flag_and_leave_nothing() {
    let d = tmp();
    let f = record(d.path(), "gas", DISORDERED);
    fails_cleanly(
        d.path(),
        &["info", &f, "--gnf-plot", "g.jpg"],
        &["--gnf-plot", ".png"],
        &["g.jpg"],
    );
    fails_cleanly(
        d.path(),
        &["info", &f, "--gnf", "--frames", "11.."],
        &["--frames", "11 frames"],
        &[],
    );
    fails_cleanly(
        d.path(),
        &[
            "info",
            &f,
            "--gnf-csv",
            "same.csv",
            "--gnf-plot",
            "same.csv",
        ],
        &["--gnf-plot", ".png"],
        &["same.csv"],
    );
    fails_cleanly(
        d.path(),
        &["info", &f, "--gnf-csv", &f],
        &["--gnf-csv", "same file"],
        &[],
    );
    fs::write(d.path().join("g.csv"), "keep").unwrap();
    fails_cleanly(
        d.path(),
        &["info", &f, "--gnf-csv", "g.csv"],
        &["--gnf-csv", "g.csv"],
        &[],
    );
    assert_eq!(fs::read_to_string(d.path().join("g.csv")).unwrap(), "keep");
    succeeds(d.path(), &["info", &f, "--gnf-csv", "g.csv", "--force"]);
    assert!(fs::read_to_string(d.path().join("g.csv"))
        .unwrap()
        .starts_with("side_x,"));
}

/// Two box sizes fit a line with no residual: α is printed without an error bar, and says so,
/// instead of "± NaN"; the JSON's `alpha_se` is null.
#[test]
fn two_box_sizes_give_alpha_without_an_error_bar() {
    let d = tmp();
    let f = record(
        d.path(),
        "small",
        r#"{"model": "vicsek", "agents": 40, "steps": 3, "world": {"size": [4, 4]}}"#,
    );
    let out = succeeds(d.path(), &["info", &f, "--gnf"]).stdout;
    has(&out, "over 2 box sizes");
    has(&out, "no error bar: a line through two box sizes");
    assert!(!out.contains("NaN"), "{out}");
    let g = gnf_json(d.path(), &f, &[]);
    assert_eq!(g["fit"]["points"], 2, "{g}");
    assert!(g["fit"]["alpha"].as_f64().is_some(), "{g}");
    assert!(g["fit"]["alpha_se"].is_null(), "{g}");
}
