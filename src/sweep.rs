//! `forge sweep`: a scene run over every combination of some parameters' values, several seeds
//! per point, in parallel; the order parameter's statistics per point go to a CSV and a plot.
//!
//! Each run is single-threaded and the runs are spread over the cores, largest first, so a
//! sweep of many small systems keeps the whole machine busy. A run is a pure function of its
//! scene (seed included) and the statistics are combined in seed order, so the CSV is too: the
//! same sweep gives the same bytes, whatever `--jobs` and whatever order the runs finish in.
//!
//! Files: finished points are appended (and flushed) to `OUT.partial` as they complete, so an
//! interrupted sweep keeps them; when every point is done the rows are rewritten in point
//! order under `OUT` and the `.partial` is removed. `--resume` continues from `OUT.partial` (or
//! extends a finished `OUT`), skipping the points already there.

use std::collections::{HashMap, HashSet};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};

use crate::metrics::polarization;
use crate::plot;
use crate::scene::{self, Layout, Model, Scene, Search};
use crate::sim::{cpu::CpuSolver, init, Params};

#[derive(clap::Args, Debug)]
pub struct SweepArgs {
    /// A scene file (JSON) or the name of a built-in scene (see `forge scenes`).
    pub scene: String,
    /// NAME=VALUES: a parameter and its values, as a range `a:b:step` (b included within
    /// rounding) or a list `a,b,c`; `pi` may follow a number (`0:2pi:0.1pi`). Repeat it to vary
    /// several parameters: every combination runs. NAME is one of noise, v0, r (vicsek),
    /// r_sep, r_ali, r_coh, w_sep, w_ali, w_coh, max_force, v_min, v_max (boids), agents,
    /// world (side L of a square/cubic box) and density (N/L^dim: sets L from N, or N from L
    /// when world is varied instead of agents).
    #[arg(long = "vary", value_name = "NAME=VALUES", required = true)]
    pub vary: Vec<String>,
    /// Runs per point, with seeds scene.seed + 0, 1, ..., SEEDS-1.
    #[arg(long, default_value_t = 3)]
    pub seeds: u32,
    /// Steps run before measuring.
    #[arg(long, default_value_t = 2500)]
    pub equilibrate: u64,
    /// Steps measured (the order parameter is sampled after each of them).
    #[arg(long, default_value_t = 1500)]
    pub measure: u64,
    /// The CSV written: one row per point.
    #[arg(short, long, value_name = "OUT.csv")]
    pub output: PathBuf,
    /// Also plot the order parameter against the first varied parameter (PNG).
    #[arg(long, value_name = "OUT.png")]
    pub plot: Option<PathBuf>,
    /// Runs at once [default: all cores]. Each run uses one thread. The CSV does not depend on it.
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Continue an interrupted sweep (OUT.partial) or extend a finished one (OUT): points
    /// already there are not run again.
    #[arg(long, conflicts_with = "force")]
    pub resume: bool,
    /// Overwrite the outputs (and discard an interrupted sweep's OUT.partial).
    #[arg(long)]
    pub force: bool,
    /// No progress bar and no summary line.
    #[arg(short, long)]
    pub quiet: bool,
}

// ---------------------------------------------------------------------------------------------
// Parameters and `--vary` expressions

/// A scene parameter a sweep can vary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param {
    Noise,
    V0,
    R,
    Agents,
    Density,
    World,
    RSep,
    RAli,
    RCoh,
    WSep,
    WAli,
    WCoh,
    MaxForce,
    VMin,
    VMax,
}

const ALL_PARAMS: [Param; 15] = [
    Param::Noise,
    Param::V0,
    Param::R,
    Param::Agents,
    Param::Density,
    Param::World,
    Param::RSep,
    Param::RAli,
    Param::RCoh,
    Param::WSep,
    Param::WAli,
    Param::WCoh,
    Param::MaxForce,
    Param::VMin,
    Param::VMax,
];

/// Most values one `--vary` may give, and most points a sweep may have.
pub const MAX_VALUES: usize = 100_000;

impl Param {
    pub fn name(self) -> &'static str {
        match self {
            Param::Noise => "noise",
            Param::V0 => "v0",
            Param::R => "r",
            Param::Agents => "agents",
            Param::Density => "density",
            Param::World => "world",
            Param::RSep => "r_sep",
            Param::RAli => "r_ali",
            Param::RCoh => "r_coh",
            Param::WSep => "w_sep",
            Param::WAli => "w_ali",
            Param::WCoh => "w_coh",
            Param::MaxForce => "max_force",
            Param::VMin => "v_min",
            Param::VMax => "v_max",
        }
    }

    /// `noise`, also as `vicsek.noise`; `w_ali`, also as `boids.w_ali`.
    pub fn from_name(s: &str) -> Option<Param> {
        let p = ALL_PARAMS.iter().copied().find(|p| p.name() == s);
        p.or_else(|| {
            let (prefix, rest) = s.split_once('.')?;
            let p = ALL_PARAMS.iter().copied().find(|p| p.name() == rest)?;
            (p.model().map(|m| m.name()) == Some(prefix)).then_some(p)
        })
    }

    /// The model the parameter belongs to; None for agents, density and world.
    pub fn model(self) -> Option<Model> {
        match self {
            Param::Noise | Param::V0 | Param::R => Some(Model::Vicsek),
            Param::Agents | Param::Density | Param::World => None,
            _ => Some(Model::Boids),
        }
    }

    /// Symbol in plot legends and titles.
    fn symbol(self) -> &'static str {
        match self {
            Param::Noise => "η",
            Param::Agents => "N",
            Param::Density => "ρ",
            Param::World => "L",
            p => p.name(),
        }
    }

    /// Axis label.
    fn describe(self) -> String {
        match self {
            Param::Noise => "noise η".into(),
            Param::Agents => "agents N".into(),
            Param::Density => "density ρ = N / L^dim".into(),
            Param::World => "box side L".into(),
            p => p.name().into(),
        }
    }

    /// Whether one value is allowed; the error completes "NAME=VALUE: ...".
    fn check(self, v: f64) -> std::result::Result<(), String> {
        let two_pi = 2.0 * std::f64::consts::PI;
        match self {
            Param::Agents => {
                if v.fract() != 0.0 || v < 1.0 || v > scene::MAX_AGENTS as f64 {
                    return Err(format!(
                        "must be a whole number in 1..={}",
                        scene::MAX_AGENTS
                    ));
                }
            }
            Param::Noise => {
                if !(0.0..=two_pi + 1e-6).contains(&v) {
                    return Err("must be in [0, 2π]".into());
                }
            }
            Param::V0 | Param::R | Param::Density | Param::World | Param::VMax => {
                if v <= 0.0 || v > 1e30 {
                    return Err("must be > 0".into());
                }
            }
            Param::RSep | Param::RAli | Param::RCoh | Param::MaxForce | Param::VMin => {
                if v < 0.0 || v > 1e30 {
                    return Err("must be >= 0".into());
                }
            }
            Param::WSep | Param::WAli | Param::WCoh => {
                if v.abs() > 1e30 {
                    return Err("is too large".into());
                }
            }
        }
        Ok(())
    }
}

/// One `--vary NAME=VALUES`, parsed.
#[derive(Clone, Debug)]
pub struct Vary {
    /// As written, for error messages.
    pub expr: String,
    pub param: Param,
    pub values: Vec<f64>,
}

/// A number, optionally followed by `pi` or `π` (`2pi`, `0.5π`, `pi`).
fn number(s: &str) -> Option<f64> {
    let s = s.trim();
    let (body, scale) = match s.strip_suffix("pi").or_else(|| s.strip_suffix('π')) {
        Some(b) => (b.trim(), std::f64::consts::PI),
        None => (s, 1.0),
    };
    let x = if body.is_empty() && scale != 1.0 {
        1.0
    } else {
        body.parse::<f64>().ok()?
    };
    let v = x * scale;
    v.is_finite().then_some(v)
}

/// Rounds away the binary noise of `a + i·step` (0.30000000000000004 → 0.3).
fn clean(v: f64) -> f64 {
    if v.abs() < 1e6 {
        let r = (v * 1e9).round() / 1e9;
        if r == 0.0 {
            0.0
        } else {
            r
        }
    } else {
        v
    }
}

/// The text of a value in the CSV (and the key resumed points are matched by): the shortest
/// text that reads back as the same f64, in scientific notation when tiny.
pub fn fmt_value(v: f64) -> String {
    if v != 0.0 && v.abs() < 1e-5 {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// Parse `NAME=a:b:step` or `NAME=a,b,c`. Errors name the expression.
pub fn parse_vary(expr: &str) -> Result<Vary> {
    let fail = |msg: String| anyhow!("--vary {expr:?}: {msg}");
    let Some((name, spec)) = expr.split_once('=') else {
        return Err(fail(
            "expected NAME=VALUES, such as noise=0:5:0.25 or agents=40,100,400".into(),
        ));
    };
    let name = name.trim();
    if name == "seed" || name == "seeds" {
        return Err(fail(
            "seeds are set by --seeds K (seed values scene.seed + 0..K)".into(),
        ));
    }
    let param = Param::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = ALL_PARAMS.iter().map(|p| p.name()).collect();
        fail(format!(
            "unknown parameter {name:?} (one of: {})",
            names.join(", ")
        ))
    })?;
    let spec = spec.trim();
    if spec.is_empty() {
        return Err(fail("no values after '='".into()));
    }
    let values: Vec<f64> = if spec.contains(':') {
        let parts: Vec<&str> = spec.split(':').collect();
        if parts.len() != 3 {
            return Err(fail(format!(
                "a range is start:end:step, got {} part{}",
                parts.len(),
                if parts.len() == 1 { "" } else { "s" }
            )));
        }
        let mut abc = [0.0; 3];
        for (k, p) in parts.iter().enumerate() {
            abc[k] = number(p).ok_or_else(|| {
                fail(format!(
                    "{} {:?} is not a finite number",
                    ["start", "end", "step"][k],
                    p.trim()
                ))
            })?;
        }
        let [a, b, step] = abc;
        if step <= 0.0 {
            return Err(fail(format!("step must be > 0, got {}", fmt_value(step))));
        }
        if b < a {
            return Err(fail(format!(
                "end {} is below start {}",
                fmt_value(b),
                fmt_value(a)
            )));
        }
        // b is included when it is within a millionth of a step of the grid.
        let count = ((b - a) / step + 1e-6).floor() + 1.0;
        if count > MAX_VALUES as f64 {
            return Err(fail(format!(
                "{count} values, more than the {MAX_VALUES} allowed"
            )));
        }
        (0..count as usize)
            .map(|i| clean(a + i as f64 * step))
            .collect()
    } else {
        let mut out = Vec::new();
        for p in spec.split(',') {
            out.push(
                number(p)
                    .ok_or_else(|| fail(format!("value {:?} is not a finite number", p.trim())))?,
            );
        }
        if out.len() > MAX_VALUES {
            return Err(fail(format!(
                "{} values, more than the {MAX_VALUES} allowed",
                out.len()
            )));
        }
        out
    };
    let mut seen = HashSet::new();
    for &v in &values {
        if let Err(m) = param.check(v) {
            return Err(fail(format!("{}={}: {m}", param.name(), fmt_value(v))));
        }
        if !seen.insert(fmt_value(v)) {
            return Err(fail(format!("value {} appears twice", fmt_value(v))));
        }
    }
    Ok(Vary {
        expr: expr.to_string(),
        param,
        values,
    })
}

// ---------------------------------------------------------------------------------------------
// Points: the scenes of the sweep

/// One combination of the varied values, resolved into a scene.
pub struct Point {
    /// The varied values in `--vary` order, and their CSV text.
    pub values: Vec<f64>,
    pub key: Vec<String>,
    /// Seed 0's scene; run k uses seed `scene.seed + k`.
    pub scene: Scene,
}

fn find(varies: &[Vary], p: Param) -> Option<usize> {
    varies.iter().position(|v| v.param == p)
}

/// Check the `--vary` flags against the scene and each other.
fn check_varies(base: &Scene, varies: &[Vary]) -> Result<()> {
    for (i, v) in varies.iter().enumerate() {
        if let Some(j) = varies[..i].iter().position(|w| w.param == v.param) {
            bail!(
                "--vary {:?}: {} is already varied by --vary {:?}",
                v.expr,
                v.param.name(),
                varies[j].expr
            );
        }
        if let Some(m) = v.param.model() {
            if m != base.model {
                bail!(
                    "--vary {:?}: {} is a {} parameter, but scene {} is {}",
                    v.expr,
                    v.param.name(),
                    m.name(),
                    base.name,
                    base.model.name()
                );
            }
        }
        if matches!(v.param, Param::Agents | Param::Density) && base.init.layout == Layout::File {
            bail!(
                "--vary {:?}: scene {} takes its agents from {}",
                v.expr,
                base.name,
                base.init.path.as_deref().unwrap_or("a file")
            );
        }
    }
    if let (Some(d), Some(a), Some(w)) = (
        find(varies, Param::Density),
        find(varies, Param::Agents),
        find(varies, Param::World),
    ) {
        bail!(
            "--vary {:?}: density is N/L^dim, it cannot be varied together with both --vary {:?} and --vary {:?}",
            varies[d].expr,
            varies[a].expr,
            varies[w].expr
        );
    }
    Ok(())
}

/// The scene of one point.
fn resolve_point(base: &Scene, varies: &[Vary], values: &[f64]) -> Result<Scene, String> {
    let mut s = base.clone();
    let dim = s.dim;
    let mut density = None;
    for (v, &x) in varies.iter().zip(values) {
        let f = x as f32;
        match v.param {
            Param::Noise => s.vicsek.as_mut().unwrap().noise = f,
            Param::V0 => s.vicsek.as_mut().unwrap().v0 = f,
            Param::R => s.vicsek.as_mut().unwrap().r = f,
            Param::Agents => {
                s.agents = x as u32;
                if let Some(c) = s.init.count {
                    s.init.count = Some(c.min(s.agents));
                }
            }
            Param::World => {
                for w in s.world.iter_mut().take(dim) {
                    *w = f;
                }
            }
            Param::Density => density = Some(x),
            p => {
                let b = s.boids.as_mut().unwrap();
                let field = match p {
                    Param::RSep => &mut b.r_sep,
                    Param::RAli => &mut b.r_ali,
                    Param::RCoh => &mut b.r_coh,
                    Param::WSep => &mut b.w_sep,
                    Param::WAli => &mut b.w_ali,
                    Param::WCoh => &mut b.w_coh,
                    Param::MaxForce => &mut b.max_force,
                    Param::VMin => &mut b.v_min,
                    Param::VMax => &mut b.v_max,
                    _ => unreachable!("not a boids parameter"),
                };
                *field = f;
            }
        }
    }
    if let Some(rho) = density {
        let world_varied = find(varies, Param::World).is_some();
        let agents_varied = find(varies, Param::Agents).is_some();
        if world_varied && !agents_varied {
            let vol: f64 = s.world[..dim].iter().map(|&w| w as f64).product();
            let n = (rho * vol).round();
            if n < 1.0 || n > scene::MAX_AGENTS as f64 {
                return Err(format!(
                    "density {} in a box of volume {} gives {n} agents (must be 1..={})",
                    fmt_value(rho),
                    vol,
                    scene::MAX_AGENTS
                ));
            }
            s.agents = n as u32;
            if let Some(c) = s.init.count {
                s.init.count = Some(c.min(s.agents));
            }
        } else {
            let side = (s.agents as f64 / rho).powf(1.0 / dim as f64) as f32;
            for w in s.world.iter_mut().take(dim) {
                *w = side;
            }
        }
    }
    if let Some(b) = &s.boids {
        if b.v_min >= b.v_max {
            return Err(format!(
                "v_min must be < v_max, got v_min {} >= v_max {}",
                b.v_min, b.v_max
            ));
        }
        if b.r_sep.max(b.r_ali).max(b.r_coh) <= 0.0 {
            return Err("at least one of r_sep, r_ali, r_coh must be > 0".into());
        }
    }
    Ok(s)
}

/// Every combination of the varied values (the first `--vary` outermost), as scenes.
fn points(base: &Scene, varies: &[Vary]) -> Result<Vec<Point>> {
    let total = varies
        .iter()
        .try_fold(1usize, |acc, v| acc.checked_mul(v.values.len()))
        .filter(|&t| t <= MAX_VALUES)
        .ok_or_else(|| anyhow!("the --vary flags make more than {MAX_VALUES} points"))?;
    let mut out = Vec::with_capacity(total);
    let mut idx = vec![0usize; varies.len()];
    for _ in 0..total {
        let values: Vec<f64> = varies.iter().zip(&idx).map(|(v, &i)| v.values[i]).collect();
        let key: Vec<String> = values.iter().map(|&x| fmt_value(x)).collect();
        let scene = resolve_point(base, varies, &values).map_err(|m| {
            let at: Vec<String> = varies
                .iter()
                .zip(&key)
                .map(|(v, k)| format!("{}={k}", v.param.name()))
                .collect();
            let exprs: Vec<String> = varies.iter().map(|v| format!("{:?}", v.expr)).collect();
            anyhow!(
                "--vary {}: at {}: {m}",
                exprs.join(" --vary "),
                at.join(", ")
            )
        })?;
        out.push(Point { values, key, scene });
        // Odometer, last --vary fastest.
        for k in (0..idx.len()).rev() {
            idx[k] += 1;
            if idx[k] < varies[k].values.len() {
                break;
            }
            idx[k] = 0;
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Runs

/// One run's samples of the order parameter φ: means of φ, φ², φ⁴ over the measured steps.
#[derive(Clone, Copy, Debug)]
struct Moments {
    m1: f64,
    m2: f64,
    m4: f64,
    /// The agent count actually run (a `layout: file` scene takes it from the file).
    n: usize,
}

/// How often a run reports progress, in steps.
const TICK: u64 = 32;

/// Run one scene: `equilibrate` steps, then `measure` steps sampling φ after each.
fn run_one(scene: &Scene, equilibrate: u64, measure: u64, tick: &dyn Fn(u64)) -> Result<Moments> {
    let state = init::initial_state(scene)?;
    let n = state.n;
    let dim = scene.dim;
    let params = Params::from_scene(scene, n);
    let mut solver = CpuSolver::new(params, state, 1, Search::Auto)?;
    let (mut s1, mut s2, mut s4) = (0.0f64, 0.0f64, 0.0f64);
    let total = equilibrate + measure;
    for k in 1..=total {
        solver.step().map_err(|d| anyhow!("{d}"))?;
        if k > equilibrate {
            let phi = polarization(dim, n, &solver.slots().0.vel);
            let p2 = phi * phi;
            s1 += phi;
            s2 += p2;
            s4 += p2 * p2;
        }
        if k % TICK == 0 {
            tick(TICK * n as u64);
        }
    }
    tick((total % TICK) * n as u64);
    let m = measure as f64;
    Ok(Moments {
        m1: s1 / m,
        m2: s2 / m,
        m4: s4 / m,
        n,
    })
}

/// A point's statistics over its seeds (combined in seed order: deterministic).
struct Stats {
    n: usize,
    order: f64,
    order_se: f64,
    binder: f64,
    susceptibility: f64,
}

fn combine(runs: &[Moments]) -> Stats {
    let k = runs.len() as f64;
    let order = runs.iter().map(|r| r.m1).sum::<f64>() / k;
    let m2 = runs.iter().map(|r| r.m2).sum::<f64>() / k;
    let m4 = runs.iter().map(|r| r.m4).sum::<f64>() / k;
    let order_se = if runs.len() > 1 {
        let var = runs.iter().map(|r| (r.m1 - order).powi(2)).sum::<f64>() / (k - 1.0);
        (var / k).sqrt()
    } else {
        f64::NAN
    };
    let n = runs[0].n;
    Stats {
        n,
        order,
        order_se,
        binder: if m2 > 0.0 {
            1.0 - m4 / (3.0 * m2 * m2)
        } else {
            f64::NAN
        },
        susceptibility: n as f64 * (m2 - order * order).max(0.0),
    }
}

// ---------------------------------------------------------------------------------------------
// The CSV

/// The columns after the varied parameters' (one per `--vary`, named like it): agent count,
/// box side (x), runs, steps, then the order parameter φ's mean over the measured steps and
/// seeds, its standard error over seeds, Binder cumulant 1 − <φ⁴>/(3<φ²>²) and susceptibility
/// N(<φ²> − <φ>²).
pub const STAT_COLUMNS: [&str; 9] = [
    "N",
    "L",
    "seeds",
    "equilibrate",
    "measure",
    "order",
    "order_se",
    "binder",
    "susceptibility",
];

fn header(varies: &[Vary]) -> String {
    let mut cols: Vec<&str> = varies.iter().map(|v| v.param.name()).collect();
    cols.extend(STAT_COLUMNS);
    cols.join(",")
}

fn row_text(p: &Point, s: &Stats, a: &SweepArgs) -> String {
    let mut f: Vec<String> = p.key.clone();
    f.push(s.n.to_string());
    f.push(format!("{}", p.scene.world[0]));
    f.push(a.seeds.to_string());
    f.push(a.equilibrate.to_string());
    f.push(a.measure.to_string());
    for x in [s.order, s.order_se, s.binder, s.susceptibility] {
        f.push(fmt_value(x));
    }
    f.join(",")
}

/// Rows of an earlier (maybe interrupted) run of this sweep, by point key.
struct Earlier {
    from: PathBuf,
    /// (key, line) in file order.
    rows: Vec<(Vec<String>, String)>,
}

fn read_earlier(path: &Path, varies: &[Vary], a: &SweepArgs) -> Result<Earlier> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--resume: cannot read {}", path.display()))?;
    let want = header(varies);
    let mut lines = text.split_inclusive('\n');
    let head = lines.next().unwrap_or("").trim_end_matches(['\n', '\r']);
    if head != want {
        bail!(
            "--resume: {} has the columns\n  {head}\nbut this sweep writes\n  {want}\n(vary the same parameters in the same order, or start over with --force)",
            path.display()
        );
    }
    let cols = want.split(',').count();
    let p = varies.len();
    let mut rows = Vec::new();
    let mut seen = HashSet::new();
    for (i, line) in lines.enumerate() {
        let lineno = i + 2;
        if !line.ends_with('\n') {
            // A row cut by the interruption: that point runs again.
            eprintln!(
                "warning: {}: line {lineno} is incomplete, its point runs again",
                path.display()
            );
            break;
        }
        let line = line.trim_end_matches(['\n', '\r']);
        if line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != cols {
            bail!(
                "--resume: {} line {lineno} has {} fields, the header {cols}",
                path.display(),
                f.len()
            );
        }
        let made = (f[p + 2], f[p + 3], f[p + 4]);
        let now = (
            a.seeds.to_string(),
            a.equilibrate.to_string(),
            a.measure.to_string(),
        );
        if (made.0, made.1, made.2) != (now.0.as_str(), now.1.as_str(), now.2.as_str()) {
            bail!(
                "--resume: {} line {lineno} was made with --seeds {} --equilibrate {} --measure {}, this sweep asks for --seeds {} --equilibrate {} --measure {} (use the same, or start over with --force)",
                path.display(),
                made.0,
                made.1,
                made.2,
                now.0,
                now.1,
                now.2
            );
        }
        let key: Vec<String> = f[..p].iter().map(|s| s.to_string()).collect();
        if seen.insert(key.clone()) {
            rows.push((key, line.to_string()));
        }
    }
    Ok(Earlier {
        from: path.to_path_buf(),
        rows,
    })
}

/// `out.csv` → `out.csv.partial`.
fn partial_path(path: &Path) -> PathBuf {
    let mut name = path
        .file_name()
        .map(|s| s.to_os_string())
        .unwrap_or_default();
    name.push(".partial");
    path.with_file_name(name)
}

/// Write `text` to `path` all at once: `.NAME.tmp` beside it, then renamed over it.
fn write_atomic(path: &Path, text: &str) -> Result<()> {
    let name = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    let w = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_data()
    })();
    if let Err(e) = w {
        let _ = std::fs::remove_file(&tmp);
        return Err(anyhow!("cannot write {}: {e}", tmp.display()));
    }
    std::fs::rename(&tmp, path)
        .with_context(|| format!("cannot move {} to {}", tmp.display(), path.display()))
}

fn check_csv_output(path: &Path, partial: &Path, a: &SweepArgs) -> Result<()> {
    if path.is_dir() {
        bail!("--output: {} is a folder", path.display());
    }
    if a.resume || a.force {
        return Ok(());
    }
    if partial.exists() {
        bail!(
            "--output: {} holds an interrupted sweep (use --resume to continue it, or --force to start over)",
            partial.display()
        );
    }
    if path.exists() {
        bail!(
            "--output: {} already exists (use --resume to extend it, or --force to overwrite it)",
            path.display()
        );
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The command

pub fn run(a: SweepArgs) -> Result<ExitCode> {
    let mut base = Scene::load(&a.scene)?;
    if a.seeds == 0 {
        bail!("--seeds: must be at least 1");
    }
    if a.measure == 0 {
        bail!("--measure: must be at least 1 step");
    }
    if a.equilibrate > scene::MAX_STEPS || a.measure > scene::MAX_STEPS - a.equilibrate {
        bail!(
            "--equilibrate + --measure: must be at most {} steps",
            scene::MAX_STEPS
        );
    }
    if a.jobs == Some(0) {
        bail!("--jobs: must be at least 1");
    }
    let varies = a
        .vary
        .iter()
        .map(|e| parse_vary(e))
        .collect::<Result<Vec<_>>>()?;
    check_varies(&base, &varies)?;
    if base.init.layout == Layout::File {
        // The agent count comes from the file: learn it once (and check the file) up front.
        let st = init::initial_state(&base)?;
        base.agents = st.n as u32;
    }
    let points = points(&base, &varies)?;

    let out = a.output.clone();
    let partial = partial_path(&out);
    check_csv_output(&out, &partial, &a)?;
    if let Some(p) = &a.plot {
        plot::check_output(p, a.force || a.resume, "--plot")?;
    }

    // Earlier rows: an interrupted sweep's .partial first, else a finished CSV.
    let earlier = if a.resume {
        if partial.exists() {
            Some(read_earlier(&partial, &varies, &a)?)
        } else if out.exists() {
            Some(read_earlier(&out, &varies, &a)?)
        } else {
            None
        }
    } else {
        None
    };
    let mut done: HashMap<Vec<String>, String> = HashMap::new();
    let mut extra = Vec::new(); // earlier rows that are not points of this sweep
    let wanted: HashSet<&Vec<String>> = points.iter().map(|p| &p.key).collect();
    if let Some(e) = &earlier {
        for (key, line) in &e.rows {
            if wanted.contains(key) {
                done.insert(key.clone(), line.clone());
            } else {
                extra.push(line.clone());
            }
        }
    }
    let todo: Vec<usize> = (0..points.len())
        .filter(|&i| !done.contains_key(&points[i].key))
        .collect();
    if let Some(e) = &earlier {
        eprintln!(
            "resuming from {}: skipping {} finished point{} of {}, running {}{}",
            e.from.display(),
            done.len(),
            if done.len() == 1 { "" } else { "s" },
            points.len(),
            todo.len(),
            if extra.is_empty() {
                String::new()
            } else {
                format!(
                    " (keeping {} row{} that are not points of this sweep)",
                    extra.len(),
                    if extra.len() == 1 { "" } else { "s" }
                )
            }
        );
    } else if a.resume {
        eprintln!(
            "nothing to resume ({} and {} do not exist): starting the sweep",
            partial.display(),
            out.display()
        );
    }

    // The .partial starts with the header and every row already finished.
    let head = header(&varies);
    let mut text = format!("{head}\n");
    for (_, line) in earlier.iter().flat_map(|e| e.rows.iter()) {
        text.push_str(line);
        text.push('\n');
    }
    write_atomic(&partial, &text)?;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&partial)
        .with_context(|| format!("cannot open {}", partial.display()))?;

    // Runs: (point, seed index), the largest first so the small ones fill in at the end.
    let steps = a.equilibrate + a.measure;
    let mut runs: Vec<(usize, u32)> = todo
        .iter()
        .flat_map(|&p| (0..a.seeds).map(move |k| (p, k)))
        .collect();
    let cost = |p: usize| points[p].scene.agents.max(1) as u64 * steps;
    runs.sort_by_key(|&(p, k)| (std::cmp::Reverse(cost(p)), p, k));
    let total_cost: u64 = runs.iter().map(|&(p, _)| cost(p)).sum();
    let cores = std::thread::available_parallelism()
        .map(|x| x.get())
        .unwrap_or(1);
    let jobs = a.jobs.unwrap_or(cores).min(runs.len()).max(1);

    let bar = if a.quiet || !std::io::stderr().is_terminal() || runs.is_empty() {
        indicatif::ProgressBar::hidden()
    } else {
        let b = indicatif::ProgressBar::new(total_cost);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40.cyan/blue} {msg}  {percent}%  elapsed {elapsed}  ETA {eta}",
            )
            .expect("valid template")
            .progress_chars("█▉▊▋▌▍▎▏ "),
        );
        b
    };
    let points_left = todo.len();
    bar.set_message(format!("0/{points_left} points"));

    let t0 = Instant::now();
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let mut results: Vec<Vec<Option<Moments>>> = vec![Vec::new(); points.len()];
    for &p in &todo {
        results[p] = vec![None; a.seeds as usize];
    }
    let mut finished = 0usize;
    let mut run_secs = 0.0f64;
    let mut failure: Option<anyhow::Error> = None;
    let (tx, rx) = mpsc::channel::<(usize, Result<Moments>, f64)>();
    std::thread::scope(|s| {
        for _ in 0..jobs {
            let tx = tx.clone();
            let (next, stop, runs, points, bar) = (&next, &stop, &runs, &points, &bar);
            let (eq, meas) = (a.equilibrate, a.measure);
            s.spawn(move || loop {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(p, k)) = runs.get(i) else { break };
                let mut scene = points[p].scene.clone();
                scene.seed = scene.seed.wrapping_add(k as u64);
                let t = Instant::now();
                let r = run_one(&scene, eq, meas, &|c| bar.inc(c));
                if tx.send((i, r, t.elapsed().as_secs_f64())).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        for (i, r, secs) in rx {
            run_secs += secs;
            let (p, k) = runs[i];
            let m = match r {
                Ok(m) => m,
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    if failure.is_none() {
                        let at: Vec<String> = varies
                            .iter()
                            .zip(&points[p].key)
                            .map(|(v, x)| format!("{}={x}", v.param.name()))
                            .collect();
                        failure = Some(e.context(format!(
                            "the run at {} with seed {} failed",
                            at.join(", "),
                            points[p].scene.seed.wrapping_add(k as u64)
                        )));
                    }
                    continue;
                }
            };
            results[p][k as usize] = Some(m);
            if results[p].iter().all(|r| r.is_some()) {
                let ms: Vec<Moments> = results[p].iter().map(|r| r.unwrap()).collect();
                let line = row_text(&points[p], &combine(&ms), &a);
                let w = file
                    .write_all(format!("{line}\n").as_bytes())
                    .and_then(|_| file.flush());
                if let Err(e) = w {
                    stop.store(true, Ordering::Relaxed);
                    if failure.is_none() {
                        failure = Some(anyhow!("cannot write {}: {e}", partial.display()));
                    }
                    continue;
                }
                done.insert(points[p].key.clone(), line);
                finished += 1;
                bar.set_message(format!("{finished}/{points_left} points"));
            }
        }
    });
    bar.finish_and_clear();
    let wall = t0.elapsed().as_secs_f64();
    drop(file);
    if let Some(e) = failure {
        return Err(e.context(format!(
            "the {finished} point{} finished are kept in {} (run again with --resume to continue)",
            if finished == 1 { "" } else { "s" },
            partial.display()
        )));
    }

    // Every point done: the rows in point order (then any kept extras) under the final name.
    let mut text = format!("{head}\n");
    for p in &points {
        text.push_str(&done[&p.key]);
        text.push('\n');
    }
    for line in &extra {
        text.push_str(line);
        text.push('\n');
    }
    write_atomic(&out, &text)?;
    std::fs::remove_file(&partial)
        .with_context(|| format!("cannot remove {}", partial.display()))?;

    if let Some(path) = &a.plot {
        plot_sweep(path, &base, &varies, &points, &done, &a)?;
    }
    if !a.quiet {
        eprintln!(
            "sweep {}: {} points x {} seed{} ({} + {} steps): ran {} point{} ({} runs) on {} job{} in {:.2} s wall, {:.2} s of runs ({:.2}x) -> {}{}",
            base.name,
            points.len(),
            a.seeds,
            if a.seeds == 1 { "" } else { "s" },
            a.equilibrate,
            a.measure,
            finished,
            if finished == 1 { "" } else { "s" },
            runs.len(),
            jobs,
            if jobs == 1 { "" } else { "s" },
            wall,
            run_secs,
            run_secs / wall.max(1e-9),
            out.display(),
            a.plot
                .as_ref()
                .map(|p| format!(", {}", p.display()))
                .unwrap_or_default(),
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The plot: order parameter against the first parameter with more than one value, one line per
/// combination of the other multi-valued parameters.
fn plot_sweep(
    path: &Path,
    base: &Scene,
    varies: &[Vary],
    points: &[Point],
    done: &HashMap<Vec<String>, String>,
    a: &SweepArgs,
) -> Result<()> {
    let multi: Vec<usize> = (0..varies.len())
        .filter(|&i| varies[i].values.len() > 1)
        .collect();
    let x = multi.first().copied().unwrap_or(0);
    let p = varies.len();
    let mut series: Vec<plot::Series> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for pt in points {
        let label: Vec<String> = multi
            .iter()
            .filter(|&&i| i != x)
            .map(|&i| format!("{} = {}", varies[i].param.symbol(), pt.key[i]))
            .collect();
        let label = label.join(", ");
        let line = &done[&pt.key];
        let f: Vec<&str> = line.split(',').collect();
        let num = |k: usize| f[k].parse::<f64>().unwrap_or(f64::NAN);
        // Columns after the parameters: N, L, seeds, equilibrate, measure, order, order_se, ...
        let (order, se) = (num(p + 5), num(p + 6));
        let s = *index.entry(label.clone()).or_insert_with(|| {
            series.push(plot::Series {
                label,
                points: Vec::new(),
            });
            series.len() - 1
        });
        series[s].points.push((pt.values[x], order, se));
    }
    for s in &mut series {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let fixed: Vec<String> = (0..varies.len())
        .filter(|i| !multi.contains(i))
        .map(|i| {
            format!(
                "{} = {}",
                varies[i].param.symbol(),
                fmt_value(varies[i].values[0])
            )
        })
        .collect();
    let mut title = format!(
        "{}: {} + {} steps, {} seed{}",
        base.name,
        a.equilibrate,
        a.measure,
        a.seeds,
        if a.seeds == 1 { "" } else { "s" }
    );
    if !fixed.is_empty() {
        title.push_str(&format!(", {}", fixed.join(", ")));
    }
    let y_label = if base.model == Model::Vicsek {
        "order parameter v_a"
    } else {
        "polarization"
    };
    plot::sweep_png(
        path,
        &plot::SweepPlot {
            title: &title,
            x_label: &varies[x].param.describe(),
            y_label,
            series: &series,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_include_the_end_and_round_cleanly() {
        let v = parse_vary("noise=0:1:0.1").unwrap();
        assert_eq!(v.values.len(), 11);
        assert_eq!(fmt_value(v.values[3]), "0.3");
        assert_eq!(fmt_value(v.values[10]), "1");
        let v = parse_vary("noise=0:5:0.25").unwrap();
        assert_eq!(v.values.len(), 21);
        let v = parse_vary("agents=40,100,400").unwrap();
        assert_eq!(v.values, vec![40.0, 100.0, 400.0]);
        let v = parse_vary("vicsek.noise=0:2pi:0.5pi").unwrap();
        assert_eq!(v.values.len(), 5);
        assert_eq!(v.param, Param::Noise);
    }

    #[test]
    fn bad_expressions_name_themselves() {
        for (e, want) in [
            ("noise", "expected NAME=VALUES"),
            ("speed=1,2", "unknown parameter"),
            ("noise=0:1", "start:end:step"),
            ("noise=0:1:0", "step must be > 0"),
            ("noise=1:0:0.1", "below start"),
            ("noise=a,b", "not a finite number"),
            ("agents=1.5", "whole number"),
            ("noise=7", "[0, 2π]"),
            ("noise=1,1", "appears twice"),
            ("seed=1,2", "--seeds"),
            ("boids.noise=1", "unknown parameter"),
        ] {
            let msg = parse_vary(e).unwrap_err().to_string();
            assert!(msg.contains(&format!("{e:?}")), "{msg}");
            assert!(msg.contains(want), "{e}: {msg}");
        }
    }

    #[test]
    fn binder_and_susceptibility_of_a_constant() {
        let m = Moments {
            m1: 0.5,
            m2: 0.25,
            m4: 0.0625,
            n: 100,
        };
        let s = combine(&[m, m]);
        assert!((s.binder - 2.0 / 3.0).abs() < 1e-12);
        assert!(s.susceptibility.abs() < 1e-12);
        assert_eq!(s.order_se, 0.0);
    }
}
