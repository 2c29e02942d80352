//! `forge bench`: the solver's speed, printed as Markdown tables (the guide's Performance chapter quotes them).

use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Result};

use crate::bfs::Header;
use crate::record::Recorder;
use crate::scene::{self, Scene, Search};
use crate::sim::Rules;
use crate::sim::{cpu::CpuSolver, init, Params};
use crate::units::si;

mod cuda;
mod obstacles;
mod render;

/// `forge bench`'s flags. Those with a default are `None` when not given, so that a flag the
/// measurement asked for would not read is refused ([`check_flags_read`]) instead of ignored.
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// What to measure: the solver (default), or the renderer (`forge bench render`).
    #[arg(value_parser = ["solver", "render"], default_value = "solver")]
    pub what: String,
    /// Renderer, fps table: output sizes to measure [default: 1280x720,1920x1080,3840x2160].
    #[arg(long, value_delimiter = ',')]
    pub render_sizes: Option<Vec<String>>,
    /// Renderer, fps table: dimensions to measure (3D through the default orbit camera)
    /// [default: 2,3].
    #[arg(long, value_delimiter = ',')]
    pub render_dims: Option<Vec<usize>>,
    /// Renderer, fps table: agent counts to measure [default: 2000,100000,1000000].
    #[arg(long, value_delimiter = ',')]
    pub render_agents: Option<Vec<u64>>,
    /// Scaling table: agent counts to measure, at constant density [default:
    /// 1000,10000,100000,1000000; with --quick 1000,10000,100000].
    #[arg(long, value_delimiter = ',')]
    pub sizes: Option<Vec<u64>>,
    /// CUDA table: agent counts of each workload (turbulence, flame3d, vicsek) [default:
    /// 1000000].
    #[arg(long, value_delimiter = ',')]
    pub cuda_sizes: Option<Vec<u64>>,
    /// Record table: agent counts (turbulence at its density, CPU backend) [default:
    /// 100000,1000000; with --quick 100000].
    #[arg(long, value_delimiter = ',')]
    pub record_sizes: Option<Vec<u64>>,
    /// Smaller and shorter: the scaling and record tables' default sizes shrink, and rows
    /// are measured for at most a quarter of a second.
    #[arg(long)]
    pub quick: bool,
    /// Seconds to spend measuring each row of the boidforge, threads, scaling, crossover and
    /// obstacles tables (at least 3 steps are always timed) [default: 0.5].
    #[arg(long)]
    pub seconds: Option<f64>,
    /// Which tables: all, scaling, crossover, threads, boidforge, record, memory, obstacles,
    /// cuda (`bench render`: all, fps, passes, memory). `FORGE_SIMD=off` measures the scalar
    /// candidate loop. The CUDA table runs where a device is present.
    #[arg(long, value_delimiter = ',', default_value = "all")]
    pub only: Vec<String>,
    /// Renderer, passes table: built-in scenes simulated (2000 agents), or `.bfs` recordings
    /// as they are, rendered with their own looks, each pass timed [default:
    /// murmuration,shoal3d].
    #[arg(long, value_delimiter = ',')]
    pub render_scenes: Option<Vec<String>>,
    /// Renderer, passes table: the size rendered [default: 1280x720].
    #[arg(long)]
    pub passes_size: Option<String>,
    /// Renderer, passes table: the steps simulated (the recording has one frame more)
    /// [default: 300].
    #[arg(long)]
    pub passes_steps: Option<u64>,
    /// Renderer, memory row: the long render's size [default: 640x360].
    #[arg(long)]
    pub memory_size: Option<String>,
    /// Renderer, memory row: frames of the long render (peak memory is also measured after a
    /// tenth of them) [default: 1500].
    #[arg(long)]
    pub memory_frames: Option<u64>,
    /// Internal: render the memory row's frames of this recording and print peak memory.
    #[arg(long, hide = true)]
    pub render_memory_probe: Option<std::path::PathBuf>,
    /// Internal: run N agents for a few steps and print peak memory (used by the memory table).
    #[arg(long, hide = true)]
    pub memory_probe: Option<u64>,
}

/// A flag that only some tables read: the renderer's (`forge bench render`) or the solver's,
/// and which of them (empty: any).
struct Reader {
    flag: &'static str,
    render: bool,
    tables: &'static [&'static str],
}

/// The solver's tables that `--seconds` times.
const TIMED_TABLES: &[&str] = &["boidforge", "threads", "scaling", "crossover", "obstacles"];

/// The solver's tables that `--quick` shortens (all but the CUDA table).
const QUICK_TABLES: &[&str] = &[
    "boidforge",
    "threads",
    "scaling",
    "crossover",
    "record",
    "memory",
    "obstacles",
];

/// The flags given on the command line that only some tables read.
fn given_flags(a: &BenchArgs) -> Vec<Reader> {
    let r = |flag, render, tables| Reader {
        flag,
        render,
        tables,
    };
    [
        (
            a.render_sizes.is_some(),
            r("--render-sizes", true, &["fps"]),
        ),
        (a.render_dims.is_some(), r("--render-dims", true, &["fps"])),
        (
            a.render_agents.is_some(),
            r("--render-agents", true, &["fps"]),
        ),
        (
            a.render_scenes.is_some(),
            r("--render-scenes", true, &["passes"]),
        ),
        (
            a.passes_size.is_some(),
            r("--passes-size", true, &["passes"]),
        ),
        (
            a.passes_steps.is_some(),
            r("--passes-steps", true, &["passes"]),
        ),
        (
            a.memory_size.is_some(),
            r("--memory-size", true, &["memory"]),
        ),
        (
            a.memory_frames.is_some(),
            r("--memory-frames", true, &["memory"]),
        ),
        (a.sizes.is_some(), r("--sizes", false, &["scaling"])),
        (a.cuda_sizes.is_some(), r("--cuda-sizes", false, &["cuda"])),
        (
            a.record_sizes.is_some(),
            r("--record-sizes", false, &["record"]),
        ),
        (a.quick, r("--quick", false, QUICK_TABLES)),
        (a.seconds.is_some(), r("--seconds", false, TIMED_TABLES)),
    ]
    .into_iter()
    .filter_map(|(given, reader)| given.then_some(reader))
    .collect()
}

/// Refuses a flag that the measurement asked for (`render`: `forge bench render`; `want`:
/// whether `--only` keeps a table) would not read, naming the flag and what reads it.
fn check_flags_read(a: &BenchArgs, render: bool, want: impl Fn(&str) -> bool) -> Result<()> {
    let only = a.only.join(",");
    for r in given_flags(a) {
        if r.render != render {
            let (reads, not) = if r.render {
                (
                    "`forge bench render` only",
                    "the solver's tables (`forge bench`)",
                )
            } else {
                (
                    "the solver's tables (`forge bench`) only",
                    "`forge bench render`",
                )
            };
            bail!("{}: read by {reads}, not by {not}", r.flag);
        }
        if !r.tables.is_empty() && !r.tables.iter().any(|t| want(t)) {
            let which = match r.tables {
                [one] => format!("the {one} table"),
                many => format!("the {} tables", many.join(", ")),
            };
            let hint = match r.flag {
                "--sizes" | "--record-sizes" | "--cuda-sizes" => {
                    " (the scaling table's agent counts are --sizes, the record table's \
                     --record-sizes, the CUDA table's --cuda-sizes)"
                }
                _ => "",
            };
            bail!(
                "{}: sets {which}, which --only {only} leaves out{hint}",
                r.flag
            );
        }
    }
    Ok(())
}

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

/// `--seconds` when not given.
const DEFAULT_SECONDS: f64 = 0.5;

/// Longest `--seconds` a row may take.
const MAX_SECONDS: f64 = 3600.0;

pub fn run(a: BenchArgs) -> Result<ExitCode> {
    let plan = Plan::resolve(a)?;
    plan.run()
}

/// `forge bench`, resolved from its flags: every flag checked before anything is measured.
enum Plan {
    /// `--memory-probe N` (internal): the memory table's child.
    MemoryProbe(u64),
    /// `forge bench render`.
    Render(render::Plan),
    /// The solver's tables.
    Solver(Tables),
}

/// The solver tables to print, and how long to measure.
struct Tables {
    /// `--only`, checked.
    only: Vec<String>,
    /// Agent counts of the scaling table.
    sizes: Vec<u64>,
    /// Agent counts of the CUDA table.
    cuda_sizes: Vec<u64>,
    /// Agent counts of the record table.
    record_sizes: Vec<u64>,
    /// Seconds per row (`--seconds`, shorter with `--quick`).
    seconds: f64,
    quick: bool,
}

/// The tables `--only` may name.
const TABLES: [&str; 9] = [
    "all",
    "cuda",
    "obstacles",
    "scaling",
    "crossover",
    "threads",
    "boidforge",
    "record",
    "memory",
];

impl Plan {
    fn resolve(a: BenchArgs) -> Result<Plan> {
        if let Some(s) = a.seconds {
            if !(s.is_finite() && (0.0..=MAX_SECONDS).contains(&s)) {
                bail!("--seconds: must be a number of seconds in 0..={MAX_SECONDS}, got {s}");
            }
        }
        if a.what == "render" {
            return Ok(Plan::Render(render::Plan::resolve(a)?));
        }
        if let Some(n) = a.memory_probe {
            return Ok(Plan::MemoryProbe(n));
        }
        if let Some(o) = a.only.iter().find(|o| !TABLES.contains(&o.as_str())) {
            bail!(
                "--only: unknown table {o:?} (all, scaling, crossover, threads, boidforge, record, memory, obstacles, cuda)"
            );
        }
        let all = a.only.iter().any(|o| o == "all");
        check_flags_read(&a, false, |t| all || a.only.iter().any(|o| o == t))?;
        // --quick shrinks the defaults; sizes given on the command line are measured as given.
        let sizes = a.sizes.unwrap_or_else(|| match a.quick {
            true => vec![1000, 10_000, 100_000],
            false => vec![1000, 10_000, 100_000, 1_000_000],
        });
        let record_sizes = a.record_sizes.unwrap_or_else(|| match a.quick {
            true => vec![100_000],
            false => vec![100_000, 1_000_000],
        });
        let cuda_sizes = a.cuda_sizes.unwrap_or_else(|| vec![1_000_000]);
        for (flag, list) in [
            ("--sizes", &sizes),
            ("--cuda-sizes", &cuda_sizes),
            ("--record-sizes", &record_sizes),
        ] {
            if let Some(&bad) = list.iter().find(|&&n| n == 0 || n > scene::MAX_AGENTS) {
                bail!(
                    "{flag}: each size must be in 1..={}, got {bad}",
                    scene::MAX_AGENTS
                );
            }
        }
        let seconds = a.seconds.unwrap_or(DEFAULT_SECONDS);
        let seconds = if a.quick { seconds.min(0.25) } else { seconds };
        Ok(Plan::Solver(Tables {
            only: a.only,
            sizes,
            cuda_sizes,
            record_sizes,
            seconds,
            quick: a.quick,
        }))
    }

    fn run(self) -> Result<ExitCode> {
        match self {
            Plan::MemoryProbe(n) => memory_probe(n),
            Plan::Render(p) => p.run(),
            Plan::Solver(t) => t.run(),
        }
    }
}

/// The memory table's child: `n` agents simulated and recorded (to /dev/null) for a few
/// steps; prints its peak resident memory in KiB.
fn memory_probe(n: u64) -> Result<ExitCode> {
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
    println!("{}", peak_rss_kib().unwrap_or(0));
    Ok(ExitCode::SUCCESS)
}

impl Tables {
    fn want(&self, table: &str) -> bool {
        self.only.iter().any(|o| o == "all" || o == table)
    }

    /// The title, then each table asked for, in a fixed order.
    fn run(self) -> Result<ExitCode> {
        let cores = std::thread::available_parallelism()
            .map(|x| x.get())
            .unwrap_or(1);
        let mut out = std::io::stdout().lock();
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
        if self.want("cuda") {
            cuda::cuda_table(&mut out, &self.cuda_sizes)?;
        }
        Ok(ExitCode::SUCCESS)
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
