//! `forge sweep` and `forge info --plot`, driven through the binary: the Vicsek order
//! parameter's known limits, error bars that shrink with seeds, byte-identical reruns, the CSV's
//! columns, PNGs that decode, resuming an interrupted sweep without redoing finished points, and
//! bad `--vary` expressions rejected with a message that names them.
//!
//! Sizes are small (N = 40..100, a few hundred steps) so the whole file runs in seconds.

use std::fs;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use forge::scene::Scene;

use crate::common;

use common::*;

/// The CSV as (header, rows of fields).
fn csv(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let text = fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let head = lines.next().unwrap().split(',').map(String::from).collect();
    let rows = lines
        .map(|l| l.split(',').map(String::from).collect())
        .collect();
    (head, rows)
}

fn col(head: &[String], name: &str) -> usize {
    head.iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column {name} in {head:?}"))
}

fn num(s: &str) -> f64 {
    s.parse()
        .unwrap_or_else(|_| panic!("{s:?} is not a number"))
}

/// A small, quick Vicsek sweep's common flags.
const SMALL: [&str; 6] = [
    "--equilibrate",
    "200",
    "--measure",
    "100",
    "--vary",
    "density=4",
];

#[test]
fn vicsek_order_parameter_has_the_known_limits() {
    let d = tmp();
    let mut args = vec![
        "sweep",
        "vicsek",
        "--vary",
        "noise=0,1,2,3,4,2pi",
        "--vary",
        "agents=100",
        "--seeds",
        "2",
        "-o",
        "s.csv",
    ];
    args.extend(SMALL);
    succeeds(d.path(), &args);
    let (head, rows) = csv(&d.path().join("s.csv"));
    assert_eq!(rows.len(), 6);
    let order: Vec<f64> = rows.iter().map(|r| num(&r[col(&head, "order")])).collect();
    // η → 0: everyone aligns.
    assert!(order[0] > 0.99, "order at η = 0: {}", order[0]);
    // Decreasing with noise.
    for w in order.windows(2) {
        assert!(w[1] < w[0], "order parameter not decreasing: {order:?}");
    }
    // η = 2π: headings are random; |mean of N unit vectors| ≈ sqrt(π/4N) ≈ 0.89/√N.
    // Within a factor 2 of 1/√N.
    let random = 1.0 / 100f64.sqrt();
    let last = order[5];
    assert!(
        last > random / 2.0 && last < random * 2.0,
        "order at η = 2π: {last}, 1/√N = {random}"
    );
    // L = sqrt(N/ρ) = 5.
    assert_eq!(num(&rows[0][col(&head, "L")]), 5.0);
    assert_eq!(rows[0][col(&head, "N")], "100");
}

/// Vectorial noise (Grégoire & Chaté 2004) orders less than angular noise of the same η and
/// loses order abruptly: at ρ = 4, N = 400, v0 = 0.03 (seed 1995, 200 + 100 steps) the order
/// parameter is 0.90 at η = 0.5 and 0.05 at η = 1.5 (angular: 0.99 and 0.88). `--vary
/// noise_kind` takes words, written back as words, and the plot draws one line per kind.
#[test]
fn noise_kind_is_varied_like_any_parameter() {
    let d = tmp();
    let mut args = vec![
        "sweep",
        "vicsek",
        "--vary",
        "noise_kind=angular,vectorial",
        "--vary",
        "noise=0.5,1.5",
        "--vary",
        "agents=400",
        "--seeds",
        "1",
        "-o",
        "k.csv",
        "--plot",
        "k.png",
    ];
    args.extend(SMALL);
    succeeds(d.path(), &args);
    let (head, rows) = csv(&d.path().join("k.csv"));
    assert_eq!(&head[..2], ["noise_kind", "noise"]);
    let kinds: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(kinds, ["angular", "angular", "vectorial", "vectorial"]);
    let order: Vec<f64> = rows.iter().map(|r| num(&r[col(&head, "order")])).collect();
    assert!(order[1] > 0.8, "angular, η = 1.5: {order:?}");
    assert!(order[3] < 0.2, "vectorial, η = 1.5: {order:?}");
    assert!(order[2] > order[3] + 0.5, "vectorial: {order:?}");
    assert_eq!(decode_png(&d.path().join("k.png")), (960, 640));

    // The same vectorial points from a scene that sets the kind, varying only η.
    write(
        d.path(),
        "vec.json",
        r#"{"preset": "vicsek1995", "agents": 400, "seed": 1995,
            "vicsek": {"noise_kind": "vectorial"}}"#,
    );
    let base = Scene::load("vicsek").unwrap();
    assert_eq!(base.seed, 1995, "the scene above copies vicsek's seed");
    let mut args = vec![
        "sweep",
        "vec.json",
        "--vary",
        "noise=0.5,1.5",
        "--seeds",
        "1",
        "-o",
        "v.csv",
    ];
    args.extend(SMALL);
    succeeds(d.path(), &args);
    let (vhead, vrows) = csv(&d.path().join("v.csv"));
    for (k, r) in vrows.iter().enumerate() {
        assert_eq!(
            r[col(&vhead, "order")],
            rows[2 + k][col(&head, "order")],
            "η = {}",
            r[0]
        );
    }

    // A kind it does not know, or one for boids, is an error naming the flag.
    fails_cleanly(
        d.path(),
        &[
            "sweep",
            "vicsek",
            "--vary",
            "noise_kind=vector",
            "-o",
            "x.csv",
        ],
        &["noise_kind=vector", "angular, vectorial"],
        &["x.csv"],
    );
    fails_cleanly(
        d.path(),
        &[
            "sweep",
            "murmuration",
            "--vary",
            "noise_kind=vectorial",
            "-o",
            "x.csv",
        ],
        &["noise_kind", "vicsek parameter"],
        &["x.csv"],
    );
}

#[test]
fn error_bars_shrink_with_more_seeds() {
    let d = tmp();
    let mut se = Vec::new();
    for seeds in ["4", "32"] {
        let out = format!("s{seeds}.csv");
        let mut args = vec![
            "sweep",
            "vicsek",
            "--vary",
            "noise=2,3,4",
            "--vary",
            "agents=40",
            "--seeds",
            seeds,
            "-o",
            &out,
        ];
        args.extend(SMALL);
        succeeds(d.path(), &args);
        let (head, rows) = csv(&d.path().join(&out));
        let total: f64 = rows.iter().map(|r| num(&r[col(&head, "order_se")])).sum();
        se.push(total);
    }
    // 8× the seeds: about √8 ≈ 2.8× smaller; ask for 1.5×.
    assert!(se[1] * 1.5 < se[0], "standard errors {se:?}");
}

#[test]
fn sweeps_are_reproducible_from_their_seeds() {
    let d = tmp();
    let sweep = |out: &str, jobs: &str| {
        let mut args = vec![
            "sweep",
            "vicsek",
            "--vary",
            "noise=1:3:1",
            "--vary",
            "agents=40,90",
            "--seeds",
            "3",
            "--jobs",
            jobs,
            "-o",
            out,
        ];
        args.extend(SMALL);
        succeeds(d.path(), &args);
        fs::read(d.path().join(out)).unwrap()
    };
    let a = sweep("a.csv", "1");
    let b = sweep("b.csv", "1");
    let c = sweep("c.csv", "4");
    assert_eq!(a, b, "the same sweep twice");
    assert_eq!(a, c, "--jobs 1 and --jobs 4");
}

#[test]
fn csv_has_the_documented_columns_and_plots_decode() {
    let d = tmp();
    let mut args = vec![
        "sweep",
        "vicsek",
        "--vary",
        "noise=0:6:2",
        "--vary",
        "agents=40,100",
        "--seeds",
        "2",
        "-o",
        "s.csv",
        "--plot",
        "s.png",
    ];
    args.extend(SMALL);
    let err = succeeds(d.path(), &args).stderr;
    assert!(err.contains("8 points"), "{err}");
    let (head, rows) = csv(&d.path().join("s.csv"));
    assert_eq!(
        head.join(","),
        "noise,agents,density,N,L,seeds,equilibrate,measure,order,order_se,binder,susceptibility"
    );
    assert_eq!(rows.len(), 8);
    // Rows in point order: the first --vary outermost.
    assert_eq!(rows[0][..2], ["0", "40"]);
    assert_eq!(rows[1][..2], ["0", "100"]);
    assert_eq!(rows[7][..2], ["6", "100"]);
    for r in &rows {
        assert_eq!(r.len(), head.len());
        let u = num(&r[col(&head, "binder")]);
        let chi = num(&r[col(&head, "susceptibility")]);
        // A Binder cumulant lies in [−∞, 2/3]; near 2/3 when ordered.
        assert!(u <= 2.0 / 3.0 + 1e-9, "binder {u}");
        assert!(chi >= 0.0, "susceptibility {chi}");
        assert_eq!(r[col(&head, "seeds")], "2");
    }
    assert_eq!(decode_png(&d.path().join("s.png")), (960, 640));
    assert!(!d.path().join("s.csv.partial").exists());

    // --plot-y binder: the Binder cumulant's plot of the same sweep, a different picture;
    // refused without a plot to draw.
    let mut binder = args.clone();
    binder.extend(["--plot-y", "binder", "--force"]);
    *binder.iter_mut().find(|a| **a == "s.png").unwrap() = "b.png";
    succeeds(d.path(), &binder);
    assert_eq!(decode_png(&d.path().join("b.png")), (960, 640));
    let (order_png, binder_png) = (
        fs::read(d.path().join("s.png")).unwrap(),
        fs::read(d.path().join("b.png")).unwrap(),
    );
    assert_ne!(order_png, binder_png);
    has(
        &fails(
            d.path(),
            &[
                "sweep", "vicsek", "--vary", "noise=1", "-o", "x.csv", "--plot-y", "binder",
            ],
        ),
        "--plot",
    );

    // The same outputs again: refused without --force, accepted with it.
    fails_cleanly(d.path(), &args, &["already exists"], &[]);
    args.push("--force");
    succeeds(d.path(), &args);

    // forge info --plot: a recording's metrics over time.
    succeeds(
        d.path(),
        &[
            "simulate", "vicsek", "--agents", "300", "--steps", "60", "-o", "v.bfs", "-q",
        ],
    );
    succeeds(d.path(), &["info", "v.bfs", "--plot", "m.png"]);
    assert_eq!(decode_png(&d.path().join("m.png")), (960, 900));
    fails_cleanly(
        d.path(),
        &["info", "v.bfs", "--plot", "m.png"],
        &["--plot"],
        &[],
    );
    fails_cleanly(
        d.path(),
        &["info", "v.bfs", "--plot", "m.jpg"],
        &[".png"],
        &["m.jpg"],
    );
}

/// The sweep the resume tests cut short.
fn resumable(out: &str, extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = [
        "sweep",
        "vicsek",
        "--vary",
        "noise=0.5,1.5,2.5",
        "--vary",
        "agents=40,60",
        "--seeds",
        "2",
        "-o",
        out,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // SMALL, but a --measure given in `extra` wins.
    let measure = extra.iter().position(|&e| e == "--measure");
    for (k, s) in SMALL.iter().enumerate() {
        let v = match (k, measure) {
            (3, Some(i)) => extra[i + 1],
            _ => s,
        };
        a.push(v.to_string());
    }
    let skip = measure.map(|i| i..i + 2).unwrap_or(0..0);
    a.extend(
        extra
            .iter()
            .enumerate()
            .filter(|(i, _)| !skip.contains(i))
            .map(|(_, s)| s.to_string()),
    );
    a
}

#[test]
fn an_interrupted_sweep_resumes_without_redoing_finished_points() {
    let d = tmp();
    let p = d.path();
    let args = resumable("full.csv", &[]);
    let args: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    succeeds(p, &args);
    let full = fs::read_to_string(p.join("full.csv")).unwrap();
    let lines: Vec<&str> = full.lines().collect();
    assert_eq!(lines.len(), 7);

    // What an interrupted sweep leaves: the header, two finished rows (in completion order,
    // here reversed) and a row cut short. The cheapest finished point (the first: 40 agents) runs
    // again to check that the file is this sweep's; the other finished row is doctored: if
    // resuming ran that point again, the doctored value would be replaced.
    let doctor =
        |line: &str| line.replace(&line.split(',').nth(8).unwrap().to_string(), "0.123456");
    let doctored = doctor(lines[3]);
    let partial = format!("{}\n{}\n{}\n0.5,60,4,60,3.8", lines[0], doctored, lines[1]);
    fs::write(p.join("cut.csv.partial"), &partial).unwrap();
    // A file whose checked row this sweep does not give (another scene's, say) is refused,
    // and kept.
    let other = format!("{}\n{}\n", lines[0], doctor(lines[1]));
    fs::write(p.join("other.csv"), &other).unwrap();
    let args = resumable("other.csv", &["--resume"]);
    let args: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    let err = fails(p, &args);
    has(
        &err,
        "--resume: other.csv was not made by this sweep: its row for noise=0.5, agents=40",
    );
    assert_eq!(fs::read_to_string(p.join("other.csv")).unwrap(), other);

    // Without --resume the interrupted sweep is not thrown away.
    let args = resumable("cut.csv", &[]);
    let args: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    has(&fails(p, &args), "--resume");

    let args = resumable("cut.csv", &["--resume"]);
    let args: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    let err = succeeds(p, &args).stderr;
    assert!(
        err.contains("skipping 2 finished points of 6, running 4"),
        "{err}"
    );
    assert!(err.contains("line 4 is incomplete"), "{err}");
    let resumed = fs::read_to_string(p.join("cut.csv")).unwrap();
    assert!(!p.join("cut.csv.partial").exists());
    // Identical to the uninterrupted sweep, but for the doctored row that was kept.
    let want = full.replace(lines[3], &doctored);
    assert_eq!(resumed, want);

    // Resuming a finished sweep runs nothing.
    let err = succeeds(p, &args).stderr;
    assert!(
        err.contains("skipping 6 finished points of 6, running 0"),
        "{err}"
    );
    assert_eq!(fs::read_to_string(p.join("cut.csv")).unwrap(), want);

    // A resume with other settings is refused, naming them.
    let args = resumable("cut.csv", &["--resume", "--measure", "50"]);
    let args: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    has(&fails(p, &args), "--measure 100");

    // --resume with nothing to resume does not take a --plot of that name for its own.
    fs::write(p.join("precious.png"), "not a plot").unwrap();
    let args = resumable("new.csv", &["--resume", "--plot", "precious.png"]);
    let args: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    has(&fails(p, &args), "precious.png");
    assert_eq!(
        fs::read_to_string(p.join("precious.png")).unwrap(),
        "not a plot"
    );
    assert!(!p.join("new.csv").exists());
}

#[test]
fn a_killed_sweep_keeps_its_finished_rows_and_resumes() {
    let d = tmp();
    let p = d.path();
    // 16 points of N = 400 for 2000 steps, one job: a few seconds, so that after the first
    // two rows appear there is time (well over a second) to kill it before it finishes.
    const POINTS: usize = 16;
    let flags = [
        "--vary",
        "noise=0.25:4:0.25",
        "--vary",
        "agents=400",
        "--vary",
        "density=4",
        "--seeds",
        "1",
        "--equilibrate",
        "1000",
        "--measure",
        "1000",
        "--jobs",
        "1",
        "-q",
    ];
    let mut full = vec!["sweep", "vicsek", "-o", "full.csv"];
    full.extend(flags);
    succeeds(p, &full);
    let want = fs::read(p.join("full.csv")).unwrap();
    assert_eq!(
        want.iter().filter(|&&b| b == b'\n').count(),
        1 + POINTS,
        "the uninterrupted sweep"
    );

    let mut cut = vec!["sweep", "vicsek", "-o", "cut.csv"];
    cut.extend(flags);
    let mut child = std::process::Command::new(forge_bin())
        .args(&cut)
        .current_dir(p)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let partial = p.join("cut.csv.partial");
    // Complete rows (newline-terminated, after the header) in the .partial.
    let rows = || {
        fs::read(&partial)
            .map(|t| t.iter().filter(|&&b| b == b'\n').count().saturating_sub(1))
            .unwrap_or(0)
    };
    let t0 = Instant::now();
    while rows() < 2 {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the sweep ended ({status}) before two rows were seen: make it longer");
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "no two rows after 120 s"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    if let Some(status) = child.try_wait().unwrap() {
        panic!("the sweep ended ({status}) before it could be killed: make it longer");
    }
    child.kill().expect("SIGKILL"); // Child::kill is SIGKILL on Unix
    child.wait().unwrap();

    // What the killed sweep left: no final CSV, a .partial with its finished rows.
    assert!(!p.join("cut.csv").exists(), "a killed sweep left cut.csv");
    let finished = rows();
    assert!(
        (2..POINTS).contains(&finished),
        "{finished} finished rows in the .partial"
    );

    let mut resume = cut.clone();
    resume.push("--resume");
    resume.retain(|a| *a != "-q");
    let err = succeeds(p, &resume).stderr;
    has(
        &err,
        &format!(
            "skipping {finished} finished points of {POINTS}, running {}",
            POINTS - finished
        ),
    );
    assert!(!partial.exists(), "the .partial outlived the resumed sweep");
    assert!(
        fs::read(p.join("cut.csv")).unwrap() == want,
        "the resumed sweep differs from the uninterrupted one:\n{}\nwant:\n{}",
        fs::read_to_string(p.join("cut.csv")).unwrap(),
        String::from_utf8_lossy(&want)
    );
}

#[test]
fn bad_vary_expressions_are_named() {
    let d = tmp();
    for (expr, want) in [
        ("noise=0:1", "start:end:step"),
        ("noise=0:1:-0.1", "step must be > 0"),
        ("noise=x", "not a finite number"),
        ("speed=1,2", "unknown parameter \"speed\""),
        ("agents=0", "whole number"),
        ("noise", "expected NAME=VALUES"),
        ("w_ali=1,2", "a boids parameter, but scene vicsek is vicsek"),
        ("seed=1,2", "--seeds"),
    ] {
        fails_cleanly(
            d.path(),
            &["sweep", "vicsek", "--vary", expr, "-o", "x.csv"],
            &[&format!("--vary {expr:?}"), want],
            &["x.csv"],
        );
    }
    fails_cleanly(
        d.path(),
        &[
            "sweep", "vicsek", "--vary", "noise=1", "--vary", "noise=2", "-o", "x.csv",
        ],
        &["already varied"],
        &["x.csv"],
    );
}

/// `--vary k` makes alignment and cohesion topological over the k nearest (a metric scene
/// becomes topological at each point); `k` is a whole number ≥ 1 of a boids scene.
#[test]
fn topological_k_is_varied_like_any_parameter() {
    let d = tmp();
    write(
        d.path(),
        "b.json",
        r#"{"model": "boids", "agents": 200, "seed": 4, "world": {"size": [300, 300]},
            "boids": {"w_sep": 40}}"#,
    );
    succeeds(
        d.path(),
        &[
            "sweep",
            "b.json",
            "--vary",
            "k=1,7",
            "--seeds",
            "1",
            "--equilibrate",
            "20",
            "--measure",
            "10",
            "-o",
            "k.csv",
        ],
    );
    let (head, rows) = csv(&d.path().join("k.csv"));
    assert_eq!(head[0], "k");
    let ks: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(ks, ["1", "7"]);
    for (args, want) in [
        (&["k=0"][..], &["k=0", "whole number in 1.."][..]),
        (&["k=7"][..], &["k", "boids parameter"][..]),
    ] {
        let scene = if args[0] == "k=7" { "vicsek" } else { "b.json" };
        fails_cleanly(
            d.path(),
            &["sweep", scene, "--vary", args[0], "-o", "bad.csv"],
            want,
            &["bad.csv"],
        );
    }
}

/// A sweep takes every point's agent count as `forge simulate --agents` does, before it
/// starts: a two-species scene with one agent is refused naming the point, not run.
#[test]
fn a_sweep_refuses_an_agent_count_simulate_refuses() {
    let d = tmp();
    let err = fails_cleanly(
        d.path(),
        &[
            "sweep",
            "two-flocks",
            "--vary",
            "agents=1,100",
            "--equilibrate",
            "1",
            "--measure",
            "1",
            "-o",
            "x.csv",
        ],
        &["agents=1", "at least 2 with 2 species"],
        &["x.csv"],
    );
    let sim = fails(
        d.path(),
        &["simulate", "two-flocks", "--agents", "1", "-o", "x.bfs"],
    );
    has(&sim, "at least 2 with 2 species");
    assert!(!err.contains("agents=100"), "{err}");
}
