//! `forge bench`: its flags, checked and resolved into what the library measures
//! ([`crate::bench::Plan`]), whose tables go to standard output.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{bail, Result};

use crate::bench::{self, render, Plan, DEFAULT_SECONDS, MAX_SECONDS, TABLES};
use crate::scene;

/// `forge bench`: every flag checked before anything is measured, then the tables.
pub fn bench_cmd(a: BenchArgs) -> Result<ExitCode> {
    let plan = resolve(a)?;
    let mut out = std::io::stdout().lock();
    plan.run(&mut out)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `forge bench`'s flags. Those with a default are `None` when not given, so that a flag the
/// measurement asked for would not read is refused ([`check_flags_read`]) instead of ignored.
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// What to measure: the solver (default), or the renderer (`forge bench render`).
    #[arg(value_parser = ["solver", "render"], default_value = "solver")]
    pub what: String,
    /// Renderer, fps and encoder tables: output sizes to measure [default:
    /// 1280x720,1920x1080,3840x2160].
    #[arg(long, value_delimiter = ',')]
    pub render_sizes: Option<Vec<String>>,
    /// Renderer, fps table: dimensions to measure (3D through the default orbit camera)
    /// [default: 2,3].
    #[arg(long, value_delimiter = ',')]
    pub render_dims: Option<Vec<usize>>,
    /// Renderer, fps and encoder tables: agent counts to measure [default: 2000,100000,1000000;
    /// the encoder table's 10000,60000,1000000].
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
    /// Analyze table: agent counts of the one frame `forge analyze` measures [default:
    /// 100000,1000000; with --quick 100000].
    #[arg(long, value_delimiter = ',')]
    pub analyze_sizes: Option<Vec<u64>>,
    /// Smaller and shorter: the scaling and record tables' default sizes shrink, and rows
    /// are measured for at most a quarter of a second.
    #[arg(long)]
    pub quick: bool,
    /// Seconds to spend measuring each row of the boidforge, threads, scaling, crossover and
    /// obstacles tables (at least 3 steps are always timed) [default: 0.5].
    #[arg(long)]
    pub seconds: Option<f64>,
    /// Which tables: all, scaling, crossover, threads, boidforge, record, memory, obstacles,
    /// timeline, analyze, cuda (`bench render`: all, fps, passes, memory, encoder). `FORGE_SIMD=off` measures the scalar
    /// candidate loop. The CUDA table runs where a device is present.
    #[arg(long, value_delimiter = ',', default_value = "all")]
    pub only: Vec<String>,
    /// Renderer, passes table: built-in scenes simulated (2000 agents), or `.bfs` recordings
    /// as they are, rendered with their own looks, each pass timed [default:
    /// murmuration,shoal3d]. Encoder table: those recordings, and those scenes simulated at
    /// their own agent counts, beside its synthetic ones [default: none].
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
const TIMED_TABLES: &[&str] = &[
    "boidforge",
    "threads",
    "scaling",
    "crossover",
    "obstacles",
    "timeline",
];

/// The solver's tables that `--quick` shortens (all but the CUDA table).
const QUICK_TABLES: &[&str] = &[
    "boidforge",
    "threads",
    "scaling",
    "crossover",
    "record",
    "memory",
    "obstacles",
    "timeline",
    "analyze",
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
            r("--render-sizes", true, &["fps", "encoder"]),
        ),
        (a.render_dims.is_some(), r("--render-dims", true, &["fps"])),
        (
            a.render_agents.is_some(),
            r("--render-agents", true, &["fps", "encoder"]),
        ),
        (
            a.render_scenes.is_some(),
            r("--render-scenes", true, &["passes", "encoder"]),
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
        (
            a.analyze_sizes.is_some(),
            r("--analyze-sizes", false, &["analyze"]),
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
                [a, b] => format!("the {a} table and the {b} table"),
                many => format!("the {} tables", many.join(", ")),
            };
            let hint = match r.flag {
                "--sizes" | "--record-sizes" | "--cuda-sizes" | "--analyze-sizes" => {
                    " (the scaling table's agent counts are --sizes, the record table's \
                     --record-sizes, the CUDA table's --cuda-sizes, the analyze table's \
                     --analyze-sizes)"
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

fn resolve(a: BenchArgs) -> Result<Plan> {
    if let Some(s) = a.seconds {
        if !(s.is_finite() && (0.0..=MAX_SECONDS).contains(&s)) {
            bail!("--seconds: must be a number of seconds in 0..={MAX_SECONDS}, got {s}");
        }
    }
    if a.what == "render" {
        return Ok(Plan::Render(resolve_render(a)?));
    }
    if let Some(n) = a.memory_probe {
        return Ok(Plan::MemoryProbe(n));
    }
    if let Some(o) = a.only.iter().find(|o| !TABLES.contains(&o.as_str())) {
        bail!(
            "--only: unknown table {o:?} (all, scaling, crossover, threads, boidforge, record, memory, obstacles, timeline, analyze, cuda)"
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
    let analyze_sizes = a.analyze_sizes.unwrap_or_else(|| match a.quick {
        true => vec![100_000],
        false => vec![100_000, 1_000_000],
    });
    for (flag, list) in [
        ("--sizes", &sizes),
        ("--cuda-sizes", &cuda_sizes),
        ("--record-sizes", &record_sizes),
        ("--analyze-sizes", &analyze_sizes),
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
    Ok(Plan::Solver(bench::Tables {
        only: a.only,
        sizes,
        cuda_sizes,
        record_sizes,
        analyze_sizes,
        seconds,
        quick: a.quick,
    }))
}

/// Checks the flags in the order their errors are reported, then every row against the
/// adapter's limits.
fn resolve_render(a: BenchArgs) -> Result<render::Plan> {
    let memory_size_text = a.memory_size.clone().unwrap_or_else(|| "640x360".into());
    let memory_frames = a.memory_frames.unwrap_or(1500);
    if let Some(path) = a.render_memory_probe {
        let size = parse_size("--memory-size", &memory_size_text)?;
        return Ok(render::Plan::MemoryProbe {
            path,
            size,
            frames: memory_frames,
        });
    }
    for o in &a.only {
        if !["all", "fps", "passes", "memory", "encoder"].contains(&o.as_str()) {
            bail!(
                "--only: unknown table {o:?} for `bench render` (all, fps, passes, memory, \
                 encoder)"
            );
        }
    }
    let all = a.only.iter().any(|o| o == "all");
    let want = |t: &str| all || a.only.iter().any(|o| o == t);
    check_flags_read(&a, true, want)?;
    let render_sizes = a.render_sizes.unwrap_or_else(|| {
        ["1280x720", "1920x1080", "3840x2160"]
            .map(String::from)
            .to_vec()
    });
    let dims = a.render_dims.unwrap_or_else(|| vec![2, 3]);
    let encoder_agents = a
        .render_agents
        .clone()
        .unwrap_or_else(|| vec![10_000, 60_000, 1_000_000]);
    let agents = a
        .render_agents
        .unwrap_or_else(|| vec![2000, 100_000, 1_000_000]);
    // The encoder table renders only the recordings and scenes it is given.
    let encoder_scenes = a.render_scenes.clone().unwrap_or_default();
    let render_scenes = a
        .render_scenes
        .unwrap_or_else(|| vec!["murmuration".into(), "shoal3d".into()]);
    let passes_steps = a.passes_steps.unwrap_or(300);
    let passes_size = a.passes_size.unwrap_or_else(|| "1280x720".into());
    let mut sizes = Vec::new();
    for s in &render_sizes {
        sizes.push(parse_size("--render-sizes", s)?);
    }
    let memory_size = parse_size("--memory-size", &memory_size_text)?;
    if let Some(&d) = dims.iter().find(|&&d| d != 2 && d != 3) {
        bail!("--render-dims: each must be 2 or 3, got {d}");
    }
    if let Some(&n) = agents
        .iter()
        .chain(&encoder_agents)
        .find(|&&n| n == 0 || n > scene::MAX_AGENTS)
    {
        bail!(
            "--render-agents: each count must be in 1..={}, got {n}",
            scene::MAX_AGENTS
        );
    }
    let scenes_read = match (want("passes"), want("encoder")) {
        (true, _) => render_scenes.clone(),
        (false, true) => encoder_scenes.clone(),
        _ => Vec::new(),
    };
    if want("passes") && passes_steps == 0 {
        bail!("--passes-steps: at least 1, got 0");
    }
    {
        for name in &scenes_read {
            if !bench::is_recording(name) && scene::builtin::find(name).is_none() {
                bail!(
                    "--render-scenes: no built-in scene {name:?} (forge scenes lists them), \
                     and no .bfs recording of that name"
                );
            }
        }
    }
    if want("memory") && memory_frames < 10 {
        bail!("--memory-frames: at least 10, got {memory_frames}");
    }
    let t = render::Tables {
        fps: want("fps"),
        passes: want("passes").then_some(render::Passes {
            scenes: render_scenes,
            size: parse_size("--passes-size", &passes_size)?,
            steps: passes_steps,
        }),
        memory: want("memory"),
        encoder: want("encoder").then(|| bench::encoder::Encoder {
            sizes: sizes.clone(),
            agents: encoder_agents,
            scenes: encoder_scenes,
        }),
        sizes,
        dims,
        agents,
        memory_size,
        memory_size_text,
        memory_frames,
        adapter: String::new(),
    };
    Ok(render::Plan::Tables(Box::new(t.checked()?)))
}

/// `WxH`, two even numbers above 0, for `flag`.
fn parse_size(flag: &str, s: &str) -> Result<[u32; 2]> {
    let (w, h) = s
        .split_once('x')
        .and_then(|(w, h)| Some((w.parse::<u32>().ok()?, h.parse::<u32>().ok()?)))
        .ok_or_else(|| anyhow::anyhow!("{flag}: {s:?} is not WxH"))?;
    if w == 0 || h == 0 || w % 2 == 1 || h % 2 == 1 {
        bail!("{flag}: {s:?} must be two even numbers > 0");
    }
    Ok([w, h])
}
