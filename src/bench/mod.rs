//! `forge bench`: the solver's speed, printed as Markdown tables (the guide's Performance chapter quotes them).

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Result};

use crate::bfs::Header;
use crate::record::Recorder;
use crate::scene::{self, Scene, Search};
use crate::sim::Rules;
use crate::sim::{cpu::CpuSolver, init, Params};
use crate::units::si;

mod analyze;
mod cuda;
pub mod encoder;
mod obstacles;
pub mod render;
mod timeline;

/// `--seconds` when not given.
pub const DEFAULT_SECONDS: f64 = 0.5;

/// Longest `--seconds` a row may take.
pub const MAX_SECONDS: f64 = 3600.0;

/// The tables `--only` may name.
pub const TABLES: [&str; 11] = [
    "all",
    "analyze",
    "cuda",
    "obstacles",
    "timeline",
    "scaling",
    "crossover",
    "threads",
    "boidforge",
    "record",
    "memory",
];

/// BoidForge's preset at its published density (2000 agents in 1920×1080) scaled to `n`
/// agents by growing the world; 3D keeps the same radii in a cube of matching density.
pub fn bench_scene(n: u64, dim: usize) -> Scene {
    bench_scene_with(n, dim, "")
}

/// [`bench_scene`] with more scene fields (`extra`: `, "key": value…`, JSON).
pub fn bench_scene_with(n: u64, dim: usize, extra: &str) -> Scene {
    let text = format!(
        "{{\"preset\": \"boidforge\", \"dim\": {dim}, \"agents\": {n}, \"seed\": 1{extra}}}"
    );
    let mut s = scene::parse(&scene::Source {
        text: &text,
        dir: std::path::Path::new("."),
        default_name: "bench",
    })
    .expect("bench scene is valid");
    if dim == 2 {
        let f = (n as f64 / 2000.0).sqrt();
        s.world = [(1920.0 * f) as f32, (1080.0 * f) as f32, 0.0];
    } else {
        // 2000 agents in 400³ gives about as many neighbours within r_ali as the 2D density.
        let side = 400.0 * (n as f64 / 2000.0).cbrt();
        s.world = [side as f32; 3];
    }
    s
}

/// Steps timed per run: every size is measured over the same stretch of the same dynamics
/// (steps 2..=STEPS+1 from the scene's uniform start), so costs per agent-step compare. Boids
/// clump as a run goes on, which makes later steps dearer at any N.
const STEPS: usize = 20;

/// Mean milliseconds per step over steps 2..=STEPS+1 of fresh runs from `make`, repeated
/// until `seconds` of stepping have been timed (at least once). Also returns the solver's
/// thread count.
fn time_steps(make: impl Fn() -> Result<CpuSolver>, seconds: f64) -> Result<(f64, usize)> {
    let mut timed = 0.0;
    let mut steps = 0usize;
    let mut threads = 1;
    while steps == 0 || timed < seconds {
        let mut solver = make()?;
        solver.step().expect("bench scenes stay finite");
        let t0 = Instant::now();
        for _ in 0..STEPS {
            solver.step().expect("bench scenes stay finite");
        }
        timed += t0.elapsed().as_secs_f64();
        threads = solver.threads();
        steps += STEPS;
    }
    Ok((timed * 1e3 / steps as f64, threads))
}

/// One table of `rows` (a name and a scene of `n` agents each) on `threads` threads, grid:
/// ms/step, agent-steps/s, ns/agent-step and the ratio to the first row, each the fastest of
/// `rounds` alternated rounds (a machine shared with other work slows some rounds, and every
/// row alike over the rounds). `head` names the first column.
fn alternated_table(
    out: &mut impl Write,
    head: &str,
    rows: &[(&str, &Scene)],
    n: u64,
    threads: usize,
    rounds: usize,
    seconds: f64,
) -> Result<()> {
    writeln!(
        out,
        "| {head} | ms/step | agent-steps/s | ns/agent-step | / {} |",
        rows[0].0
    )?;
    writeln!(out, "|---|---:|---:|---:|---:|")?;
    let mut best = vec![f64::INFINITY; rows.len()];
    for _ in 0..rounds {
        for (b, (_, s)) in best.iter_mut().zip(rows) {
            let (ms, _) = time_steps(
                || solver_for(s, threads, Search::Grid),
                seconds / rounds as f64,
            )?;
            *b = b.min(ms);
        }
    }
    for (b, (name, _)) in best.iter().zip(rows) {
        let rate = n as f64 / (b / 1e3);
        writeln!(
            out,
            "| {name} | {b:.3} | {} | {:.1} | {:.3} |",
            si(rate),
            b * 1e6 / n as f64,
            b / best[0]
        )?;
        out.flush()?;
    }
    writeln!(out)?;
    Ok(())
}

fn solver_for(s: &Scene, threads: usize, search: Search) -> Result<CpuSolver> {
    let st = init::initial_state(s)?;
    let n = st.n;
    let p = Params::from_scene(s, n);
    Ok(CpuSolver::new(p, st, threads, search)?.with_rules(Rules::from_scene(s))?)
}

/// This process's peak resident memory (VmHWM), KiB (Linux).
fn peak_rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let l = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    l.split_whitespace().nth(1)?.parse().ok()
}

/// BoidForge's native C backend at N = 2000 on the development machine (2 cores), ms/step, as
/// measured side by side with forge (a quoted figure: `forge bench` labels the ratio so).
const BOIDFORGE_C_MS: f64 = 3.6;

/// The neighbour pass on one thread vs all cores (the pool forced on), against the candidate
/// pairs per step: where `PARALLEL_MIN_PAIRS` comes from. Early steps (uniform start) and late
/// ones (dense clumps) of the boidforge preset at its density.
fn threads_table(out: &mut impl Write, cores: usize, seconds: f64) -> Result<()> {
    writeln!(
        out,
        "Neighbour pass, 1 thread vs {cores} (split forced; the solver splits from {} pairs):\n",
        crate::sim::cpu::PARALLEL_MIN_PAIRS
    )?;
    writeln!(out, "| agents | after step | pairs/step | 1 thread ms/step | {cores} threads ms/step | speed-up |")?;
    writeln!(out, "|---:|---:|---:|---:|---:|---:|")?;
    for n in [100u64, 250, 500, 1000, 2000, 4000, 8000] {
        for warm in [1u64, 400] {
            let s = bench_scene(n, 2);
            let mut ms = [0.0; 2];
            let mut pairs = 0;
            for (i, t) in [1, cores].into_iter().enumerate() {
                let mut solver = solver_for(&s, t, Search::Grid)?;
                solver.set_parallel_min_pairs(0);
                for _ in 0..warm {
                    solver.step().expect("bench scenes stay finite");
                }
                let (t0, mut steps) = (Instant::now(), 0);
                while steps == 0 || t0.elapsed().as_secs_f64() < seconds.min(0.3) {
                    solver.step().expect("bench scenes stay finite");
                    steps += 1;
                }
                ms[i] = t0.elapsed().as_secs_f64() * 1e3 / steps as f64;
                pairs = solver.pairs();
            }
            writeln!(
                out,
                "| {n} | {warm} | {pairs} | {:.4} | {:.4} | {:.2} |",
                ms[0],
                ms[1],
                ms[0] / ms[1]
            )?;
            out.flush()?;
        }
    }
    writeln!(out)?;
    Ok(())
}

/// What `forge bench` measures, every flag checked (`cli::bench` resolves it).
pub enum Plan {
    /// `--memory-probe N` (internal): the memory table's child.
    MemoryProbe(u64),
    /// `forge bench render`.
    Render(render::Plan),
    /// The solver's tables.
    Solver(Tables),
}

/// The solver tables to print, and how long to measure.
pub struct Tables {
    /// The tables (names in [`TABLES`]; `all`: every one).
    pub only: Vec<String>,
    /// Agent counts of the scaling table.
    pub sizes: Vec<u64>,
    /// Agent counts of the CUDA table.
    pub cuda_sizes: Vec<u64>,
    /// Agent counts of the record table.
    pub record_sizes: Vec<u64>,
    /// Agent counts of the analyze table.
    pub analyze_sizes: Vec<u64>,
    /// Seconds per row.
    pub seconds: f64,
    /// Smaller memory table.
    pub quick: bool,
}

impl Plan {
    /// The tables (or a memory probe's line) to `out`.
    pub fn run(self, out: &mut dyn Write) -> Result<()> {
        match self {
            Plan::MemoryProbe(n) => memory_probe(n, out),
            Plan::Render(p) => p.run(out),
            Plan::Solver(t) => t.run(out),
        }
    }
}

/// The memory table's child: `n` agents simulated and recorded (to /dev/null) for a few
/// steps; writes its peak resident memory in KiB to `out`.
fn memory_probe(n: u64, out: &mut dyn Write) -> Result<()> {
    let s = bench_scene(n, 2);
    let mut solver = solver_for(&s, 0, Search::Auto)?;
    let file = std::fs::OpenOptions::new().write(true).open("/dev/null")?;
    let mut h = Header::for_scene(&s);
    h.agents = n as u32;
    let mut rec = Recorder::start(
        crate::bfs::Writer::new(crate::bfs::DirectFile::new(file), &h)?,
        2,
        n as usize,
    )?;
    for _ in 0..3 {
        solver.step().expect("finite");
        solver.record(&mut rec)?;
    }
    rec.finish()?;
    writeln!(out, "{}", peak_rss_kib().unwrap_or(0))?;
    Ok(())
}

impl Tables {
    fn want(&self, table: &str) -> bool {
        self.only.iter().any(|o| o == "all" || o == table)
    }

    /// The title, then each table asked for, in a fixed order.
    fn run(self, mut out: &mut dyn Write) -> Result<()> {
        let cores = std::thread::available_parallelism()
            .map(|x| x.get())
            .unwrap_or(1);
        writeln!(
            out,
            "forge bench — CPU backend, {cores} cores, {} candidate loop, boidforge preset at constant density\n",
            crate::sim::simd::isa().name()
        )?;
        if self.want("boidforge") {
            boidforge_line(&mut out, self.seconds)?;
        }
        if self.want("threads") && cores > 1 {
            threads_table(&mut out, cores, self.seconds)?;
        }
        if self.want("scaling") {
            scaling_table(&mut out, cores, &self.sizes, self.seconds)?;
        }
        if self.want("crossover") {
            crossover_table(&mut out, self.seconds)?;
        }
        if self.want("record") {
            cuda::record_table(&mut out, &self.record_sizes)?;
        }
        if self.want("memory") {
            memory_line(&mut out, self.quick)?;
        }
        if self.want("obstacles") {
            obstacles::obstacles_line(&mut out, self.seconds)?;
        }
        if self.want("timeline") {
            timeline::timeline_line(&mut out, self.seconds)?;
        }
        if self.want("analyze") {
            analyze::analyze_table(&mut out, &self.analyze_sizes)?;
        }
        if self.want("cuda") {
            cuda::cuda_table(&mut out, &self.cuda_sizes)?;
        }
        Ok(())
    }
}

/// BoidForge's own benchmark (N = 2000), against its native C backend.
fn boidforge_line(out: &mut impl Write, seconds: f64) -> Result<()> {
    let s = bench_scene(2000, 2);
    let (ms, _) = time_steps(|| solver_for(&s, 0, Search::Auto), seconds.max(1.0))?;
    writeln!(out, "BoidForge's benchmark, N = 2000 boidforge preset, steps 2-21: {:.4} ms/step ({:.1}x BoidForge's native C backend at {BOIDFORGE_C_MS} ms/step; full runs: scripts/vs-boidforge.sh)\n", ms, BOIDFORGE_C_MS / ms)?;
    Ok(())
}

/// Cost per step against N, 2D and 3D, on one thread and on all `cores`, grid and (up to 10k
/// agents) brute force.
fn scaling_table(out: &mut impl Write, cores: usize, sizes: &[u64], seconds: f64) -> Result<()> {
    writeln!(
        out,
        "| dim | agents | threads | search | ms/step | agent-steps/s | ns/agent-step |"
    )?;
    writeln!(out, "|---|---:|---:|---|---:|---:|---:|")?;
    for dim in [2usize, 3] {
        for &n in sizes {
            let s = bench_scene(n, dim);
            let mut threads = vec![1usize];
            if cores > 1 {
                threads.push(cores);
            }
            for &t in &threads {
                let mut searches = vec![Search::Grid];
                // Brute force is O(N²): up to 10k agents, on all threads only.
                if n <= 10_000 && (t > 1 || n < crate::sim::cpu::PARALLEL_MIN as u64) {
                    searches.push(Search::Brute);
                }
                for &search in &searches {
                    let (ms, used) = time_steps(|| solver_for(&s, t, search), seconds)?;
                    let rate = n as f64 / (ms / 1e3);
                    writeln!(
                        out,
                        "| {dim}D | {n} | {} | {} | {:.3} | {} | {:.1} |",
                        used,
                        format!("{search:?}").to_lowercase(),
                        ms,
                        si(rate),
                        1e9 / rate
                    )?;
                    out.flush()?;
                }
            }
        }
    }
    writeln!(out)?;
    Ok(())
}

/// Brute force against the grid on one thread, for small N: where `BRUTE_MAX` comes from.
fn crossover_table(out: &mut impl Write, seconds: f64) -> Result<()> {
    writeln!(
        out,
        "Brute force vs grid, 1 thread (auto uses brute force up to N = {}):\n",
        crate::sim::cpu::BRUTE_MAX
    )?;
    writeln!(out, "| agents | brute ms/step | grid ms/step |")?;
    writeln!(out, "|---:|---:|---:|")?;
    for n in [16u64, 32, 48, 64, 96, 128, 256, 512] {
        let s = bench_scene(n, 2);
        let (b, _) = time_steps(|| solver_for(&s, 1, Search::Brute), seconds.min(0.2))?;
        let (g, _) = time_steps(|| solver_for(&s, 1, Search::Grid), seconds.min(0.2))?;
        writeln!(out, "| {n} | {b:.4} | {g:.4} |")?;
    }
    writeln!(out)?;
    Ok(())
}

/// Peak memory of a large run, simulated and recorded, measured in a fresh process
/// (`--memory-probe`).
fn memory_line(out: &mut impl Write, quick: bool) -> Result<()> {
    let n = if quick { 100_000 } else { 1_000_000 };
    let exe = std::env::current_exe()?;
    let o = std::process::Command::new(exe)
        .args(["bench", "--memory-probe", &n.to_string()])
        .output()?;
    let kib: u64 = String::from_utf8_lossy(&o.stdout)
        .trim()
        .parse()
        .unwrap_or(0);
    writeln!(
        out,
        "Peak memory, {n} agents 2D simulated and recorded: {:.0} MB\n",
        kib as f64 * 1024.0 / 1e6
    )?;
    Ok(())
}

/// Whether a `--render-scenes` entry names a recording (a `.bfs` file) rather than a scene.
pub fn is_recording(name: &str) -> bool {
    let p = Path::new(name);
    p.extension().is_some_and(|e| e == "bfs") && p.is_file()
}

/// A recording of `n` agents in `dim` dimensions, `frames` frames (every step), at the
/// benchmark's density.
pub(crate) fn bench_recording(path: &Path, n: u64, dim: usize, frames: u64) -> Result<()> {
    let s = bench_scene(n, dim);
    let mut solver = solver_for(&s, 0, Search::Auto)?;
    let mut h = Header::for_scene(&s);
    h.agents = n as u32;
    let mut rec = Recorder::start(
        crate::bfs::Writer::new(
            crate::bfs::DirectFile::new(std::fs::File::create(path)?),
            &h,
        )?,
        dim,
        n as usize,
    )?;
    solver.record(&mut rec)?;
    for _ in 1..frames {
        solver.step().expect("bench scenes stay finite");
        solver.record(&mut rec)?;
    }
    rec.finish()?;
    Ok(())
}

/// Runs forge (this executable) with `args`, failing with its error; its wall time.
pub(crate) fn run_forge(args: &[&str]) -> Result<f64> {
    let exe = std::env::current_exe()?;
    let t0 = Instant::now();
    let o = std::process::Command::new(&exe).args(args).output()?;
    if !o.status.success() {
        bail!(
            "forge {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        );
    }
    Ok(t0.elapsed().as_secs_f64())
}
