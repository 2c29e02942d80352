//! Command line: parse flags, resolve them into a validated configuration, run.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use clap::{Parser, Subcommand};

use crate::bfs::{self, Header, SourceFormat};
use crate::metrics::{self, Metrics, Space};
use crate::record::{OutputFile, Recorder};
use crate::scene::{self, Boundary, Scene, Search};
use crate::scenes;
use crate::sim::backend::{self, AnySolver, Backend};
use crate::sim::{init, Params, RecordError};

#[derive(Parser, Debug)]
#[command(
    name = "forge",
    version,
    about = "Flocking simulations (boids 2D/3D, Vicsek) recorded to .bfs, exactly reproducible"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Simulate a scene and record every k-th step to a .bfs file.
    Simulate(SimulateArgs),
    /// Describe a recording: header, counts, world, model, metric summary.
    Info(InfoArgs),
    /// List the built-in scenes.
    Scenes,
    /// Measure the solver: ms/step and agent-steps/s over sizes, dims, threads, searches.
    Bench(crate::bench::BenchArgs),
    /// Render a recording to an H.264 MP4 (or PNG frames) on the GPU, headless.
    Render(RenderArgs),
    /// Render one frame of a recording to a PNG.
    Still(StillArgs),
    /// List the GPU adapters the renderer can use (software drivers included).
    Gpus,
    /// Simulate a scene and render it to video in one go.
    Run(RunArgs),
    /// Render the built-in demo scene to demo.mp4 (about a minute on a CPU-only machine).
    Demo(DemoArgs),
    /// Run a scene over a grid of parameter values and seeds, in parallel; the order
    /// parameter's mean, error, Binder cumulant and susceptibility per point to CSV (and PNG).
    Sweep(crate::sweep::SweepArgs),
}

/// What `simulate` and `run` may change of a scene; stored back into the recording's scene.
#[derive(clap::Args, Debug, Clone, Copy, Default)]
pub struct Overrides {
    /// Override the scene's number of steps.
    #[arg(long)]
    pub steps: Option<u64>,
    /// Override the scene's number of agents (the world keeps its size).
    #[arg(long)]
    pub agents: Option<u64>,
    /// Override the scene's random seed.
    #[arg(long)]
    pub seed: Option<u64>,
}

#[derive(clap::Args, Debug)]
pub struct SimulateArgs {
    /// A scene file (JSON) or the name of a built-in scene (see `forge scenes`).
    pub scene: String,
    /// Output recording [default: SCENE_NAME.bfs in the current folder].
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub overrides: Overrides,
    /// Worker threads [default: all cores]. The output does not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Neighbour search [default: the scene's, else auto]. The output does not depend on it.
    #[arg(long, value_enum)]
    pub search: Option<Search>,
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: Backend,
    /// Overwrite the output if it exists.
    #[arg(long)]
    pub force: bool,
    /// No progress bar and no summary line.
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(clap::Args, Debug)]
pub struct InfoArgs {
    /// A recording (.bfs, ours or BoidForge's BFS1).
    pub file: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Write every frame's metrics to this CSV file.
    #[arg(long, value_name = "OUT.csv")]
    pub metrics: Option<PathBuf>,
    /// Plot every frame's polarization, mean speed and nearest-neighbour distance (PNG).
    #[arg(long, value_name = "OUT.png")]
    pub plot: Option<PathBuf>,
    /// Overwrite the metrics CSV or plot if it exists.
    #[arg(long)]
    pub force: bool,
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            eprintln!("error: {e}");
            for cause in e.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            ExitCode::FAILURE
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

pub fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Simulate(a) => simulate(a),
        Command::Info(a) => info(a),
        Command::Scenes => {
            let mut out = std::io::stdout().lock();
            for b in scenes::BUILTIN {
                let s = load_builtin(b)?;
                let kind = match s.model {
                    scene::Model::Boids => format!("boids {}D", s.dim),
                    scene::Model::Vicsek => "vicsek".to_string(),
                };
                writeln!(
                    out,
                    "{:<14} {:<9} {:>6} agents {:>5} steps  {}",
                    b.name, kind, s.agents, s.steps, s.description
                )?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench(a) => crate::bench::run(a),
        Command::Render(a) => render_cmd(a),
        Command::Still(a) => still_cmd(a),
        Command::Gpus => gpus_cmd(),
        Command::Run(a) => run_cmd(a),
        Command::Demo(a) => demo_cmd(a),
        Command::Sweep(a) => crate::sweep::run(a),
    }
}

fn load_builtin(b: &scenes::Builtin) -> Result<Scene> {
    scene::parse(&scene::Source {
        text: b.text,
        dir: Path::new("."),
        default_name: b.name,
    })
    .map_err(|e| anyhow!("built-in scene {}: {}", b.name, e[0]))
}

/// A scene argument: an existing file, else a built-in scene by name (with or without .json).
pub fn load_scene(arg: &str) -> Result<Scene> {
    let path = Path::new(arg);
    if path.exists() {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read scene file {}", path.display()))?;
        let dir = path
            .parent()
            .map(|p| {
                if p.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    p
                }
            })
            .unwrap_or(Path::new("."));
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("scene");
        return scene::parse(&scene::Source {
            text: &text,
            dir,
            default_name: stem,
        })
        .map_err(|errs| {
            let mut msg = format!("scene file {} is not valid:", path.display());
            for e in &errs {
                msg.push_str(&format!("\n  {e}"));
            }
            anyhow!(msg)
        });
    }
    let name = arg.strip_suffix(".json").unwrap_or(arg);
    match scenes::find(name) {
        Some(b) => load_builtin(b),
        None => bail!(
            "no scene file {arg} and no built-in scene named {name:?} (built-in: {})",
            scenes::names().join(", ")
        ),
    }
}

fn simulate(a: SimulateArgs) -> Result<ExitCode> {
    let mut scene = load_scene(&a.scene)?;
    if let Some(s) = a.overrides.steps {
        if s > scene::MAX_STEPS {
            bail!("--steps: must be at most {}, got {s}", scene::MAX_STEPS);
        }
        scene.steps = s;
    }
    if let Some(n) = a.overrides.agents {
        if n == 0 || n > scene::MAX_AGENTS {
            bail!("--agents: must be in 1..={}, got {n}", scene::MAX_AGENTS);
        }
        if scene.init.layout == scene::Layout::File {
            bail!(
                "--agents: the scene takes its agents from {}",
                scene.init.path.as_deref().unwrap_or("a file")
            );
        }
        scene.agents = n as u32;
        if let Some(c) = scene.init.count {
            scene.init.count = Some(c.min(n as u32));
        }
    }
    if let Some(s) = a.overrides.seed {
        scene.seed = s;
    }
    if let Some(s) = a.search {
        scene.search = s;
    }
    if a.threads == Some(0) {
        bail!("--threads: must be at least 1");
    }
    let backend = backend::choose(a.backend, a.quiet)?;

    let state = init::initial_state(&scene).map_err(|e| {
        // Outside `layout: file` (whose errors name scene.init.*), the only failures are
        // about the agent count (memory): name the field or flag that set it.
        let what = if a.overrides.agents.is_some() {
            "--agents"
        } else {
            "scene.agents"
        };
        let msg = format!("{e:#}");
        if scene.init.layout == scene::Layout::File || msg.starts_with(what) {
            e
        } else {
            anyhow!("{what}: {msg}")
        }
    })?;
    scene.agents = state.n as u32;
    let n = state.n;
    let dim = scene.dim;

    let out_path = a
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.bfs", scene.name)));
    let (out, file) = OutputFile::create(&out_path, a.force, "output")?;
    let header = header_for(&scene);
    let result = (|| -> Result<Outcome> {
        let writer = bfs::Writer::new(file, &header)
            .map_err(|e| anyhow!("writing {}: {e}", out_path.display()))?;
        let mut rec = Recorder::start(writer, dim, n)?;
        let params = Params::from_scene(&scene, n);
        let mut solver = AnySolver::new(
            &backend,
            params,
            state,
            a.threads.unwrap_or(0),
            scene.search,
        )?;
        let wr = |e: bfs::BfsError| anyhow!("writing {}: {e}", out_path.display());
        // The recorder's errors name the file; the solver's (CUDA) are its own.
        let rec_err = |e: RecordError<bfs::BfsError>| match e {
            RecordError::Out(e) => wr(e),
            e => anyhow::Error::new(e),
        };
        solver.record(&mut rec).map_err(rec_err)?;
        let bar = crate::progress::bar(scene.steps, a.quiet, "steps");
        let t0 = Instant::now();
        let every = scene.record_every as u64;
        let mut diverged = None;
        while solver.step < scene.steps {
            if let Err(d) = solver.step() {
                diverged = Some(d);
                break;
            }
            if solver.step % every == 0 {
                solver.record(&mut rec).map_err(rec_err)?;
            }
            if solver.step % 16 == 0 {
                bar.set_position(solver.step);
            }
        }
        let secs = t0.elapsed().as_secs_f64();
        bar.finish_and_clear();
        let late = solver.finish(&mut rec).map_err(rec_err)?;
        diverged = diverged.or(late);
        let frames = rec.finish().map_err(wr)?;
        Ok(Outcome {
            steps: solver.step,
            secs,
            frames,
            threads: solver.threads(),
            search: solver.search,
            polarization: metrics::polarization(dim, n, &solver.slots().0.vel),
            diverged,
        })
    })();
    let o = match result {
        Ok(o) => o,
        Err(e) => {
            out.abandon();
            return Err(e);
        }
    };
    out.commit()?;
    if let Some(d) = o.diverged {
        eprintln!(
            "error: {d}; the recording keeps the {} good frames (up to step {}) in {}",
            o.frames,
            o.steps,
            out_path.display()
        );
        return Ok(ExitCode::FAILURE);
    }
    if !a.quiet {
        let size = std::fs::metadata(&out_path).map(|m| m.len()).unwrap_or(0);
        let rate = o.steps as f64 / o.secs.max(1e-9);
        eprintln!(
            "{}: {} steps of {} {} ({}D, {}, {} thread{}) in {:.2} s: {:.0} steps/s, {} agent-steps/s; final polarization {:.3} -> {} ({} frames, {})",
            scene.name,
            o.steps,
            n,
            if scene.model == scene::Model::Vicsek { "particles" } else { "boids" },
            dim,
            format!("{:?}", o.search).to_lowercase(),
            o.threads,
            if o.threads == 1 { "" } else { "s" },
            o.secs,
            rate,
            si(rate * n as f64),
            o.polarization,
            out_path.display(),
            o.frames,
            bytes(size),
        );
    }
    Ok(ExitCode::SUCCESS)
}

struct Outcome {
    steps: u64,
    secs: f64,
    frames: u64,
    threads: usize,
    search: Search,
    polarization: f64,
    diverged: Option<crate::sim::Diverged>,
}

pub fn header_for(scene: &Scene) -> Header {
    Header {
        version: bfs::VERSION,
        dim: scene.dim as u8,
        model: scene.model,
        boundary: scene.boundary,
        agents: scene.agents,
        dt: scene.dt,
        seed: scene.seed,
        record_every: scene.record_every,
        world_size: scene.world,
        scene_name: scene.name.clone(),
        scene_json: scene.to_json(),
        frame_count: None,
        source: SourceFormat::Forge,
        world_inferred: false,
    }
}

pub fn si(x: f64) -> String {
    if x >= 1e9 {
        format!("{:.2}G", x / 1e9)
    } else if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

fn bytes(b: u64) -> String {
    if b >= 1 << 30 {
        format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64)
    } else if b >= 1 << 20 {
        format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
    } else {
        format!("{:.1} KiB", b as f64 / 1024.0)
    }
}

// ---------------------------------------------------------------------------------------------
// forge info

/// How many frames the summary samples (evenly spaced, first and last included).
const SUMMARY_FRAMES: u64 = 50;

#[derive(serde::Serialize)]
struct Summary {
    frames_sampled: u64,
    first: Metrics,
    last: Metrics,
    mean: Metrics,
}

fn info(a: InfoArgs) -> Result<ExitCode> {
    let mut r =
        bfs::Reader::open(&a.file).with_context(|| format!("cannot open {}", a.file.display()))?;
    let h = r.header().clone();
    let count = r.frame_count();
    let space = Space {
        dim: h.dim as usize,
        world: h.world_size,
        wrap: h.boundary == Boundary::Wrap,
    };
    let mut frame = bfs::Frame::empty();

    if let Some(p) = &a.plot {
        crate::plot::check_output(p, a.force, "--plot")?;
        if count == 0 {
            bail!("--plot: {} holds no complete frame", a.file.display());
        }
    }
    let mut csv_out = None;
    if let Some(p) = &a.metrics {
        let (out, file) = OutputFile::create(p, a.force, "metrics file")?;
        csv_out = Some((out, std::io::BufWriter::new(file)));
    }
    let summary = if count == 0 {
        None
    } else {
        let every_frame = csv_out.is_some() || a.plot.is_some();
        let mut picks: Vec<u64> = if every_frame || count <= SUMMARY_FRAMES {
            (0..count).collect()
        } else {
            (0..SUMMARY_FRAMES)
                .map(|i| i * (count - 1) / (SUMMARY_FRAMES - 1))
                .collect()
        };
        picks.dedup();
        let mut all = Vec::with_capacity(picks.len());
        let mut times = Vec::with_capacity(picks.len());
        if let Some((_, w)) = csv_out.as_mut() {
            writeln!(
                w,
                "frame,step,time,polarization,mean_speed,nn_distance,pairwise_distance"
            )?;
        }
        for &k in &picks {
            r.read_frame_into(k, &mut frame)
                .with_context(|| format!("{}: frame {k}", a.file.display()))?;
            let n = frame.agents(space.dim);
            let m = metrics::frame_metrics(&space, n, &frame.pos, &frame.vel);
            if let Some((_, w)) = csv_out.as_mut() {
                writeln!(
                    w,
                    "{k},{},{},{},{},{},{}",
                    frame.step,
                    frame.step as f64 * h.dt as f64,
                    m.polarization,
                    m.mean_speed,
                    m.nn_distance,
                    m.pairwise_distance
                )?;
            }
            all.push(m);
            times.push(frame.step as f64 * h.dt as f64);
        }
        if let Some(p) = &a.plot {
            let title = format!(
                "{}: {} {}D, {} agents",
                h.scene_name,
                h.model.name(),
                h.dim,
                h.agents
            );
            crate::plot::metrics_png(p, &title, &times, &all)?;
        }
        let mut mean = Metrics::default();
        for m in &all {
            mean.polarization += m.polarization / all.len() as f64;
            mean.mean_speed += m.mean_speed / all.len() as f64;
            mean.nn_distance += m.nn_distance / all.len() as f64;
            mean.pairwise_distance += m.pairwise_distance / all.len() as f64;
        }
        Some(Summary {
            frames_sampled: all.len() as u64,
            first: all[0],
            last: *all.last().unwrap(),
            mean,
        })
    };
    if let Some((out, w)) = csv_out {
        let file = w
            .into_inner()
            .map_err(|e| anyhow!("writing {}: {}", out.path.display(), e.error()))?;
        file.sync_data().ok();
        out.commit()?;
    }
    let last_step = if count > 0 {
        Some(r.read_frame(count - 1).map(|f| f.step).unwrap_or(0))
    } else {
        None
    };

    let mut stdout = std::io::stdout().lock();
    if a.json {
        let scene_json: serde_json::Value =
            serde_json::from_str(&h.scene_json).unwrap_or(serde_json::Value::Null);
        let v = serde_json::json!({
            "file": a.file.display().to_string(),
            "format": match h.source { SourceFormat::Forge => "forge", SourceFormat::Bfs1 => "bfs1" },
            "version": h.version,
            "scene": h.scene_name,
            "model": h.model.name(),
            "dim": h.dim,
            "boundary": h.boundary.name(),
            "agents": h.agents,
            "dt": h.dt,
            "seed": h.seed,
            "record_every": h.record_every,
            "world": &h.world_size[..h.dim as usize],
            "world_inferred": h.world_inferred,
            "frames": count,
            "finalized": h.frame_count.is_some(),
            "last_step": last_step,
            "warnings": r.warnings(),
            "metrics": summary,
            "scene_json": scene_json,
        });
        writeln!(stdout, "{}", serde_json::to_string_pretty(&v)?)?;
    } else {
        for w in r.warnings() {
            eprintln!("warning: {}: {w}", a.file.display());
        }
        let world: Vec<String> = h.world_size[..h.dim as usize]
            .iter()
            .map(|x| format!("{x}"))
            .collect();
        writeln!(stdout, "file       {}", a.file.display())?;
        writeln!(
            stdout,
            "format     {} v{}{}",
            match h.source {
                SourceFormat::Forge => "forge .bfs",
                SourceFormat::Bfs1 => "BoidForge BFS1",
            },
            h.version,
            if h.frame_count.is_some() {
                ""
            } else {
                " (not finalized)"
            }
        )?;
        writeln!(stdout, "scene      {}", h.scene_name)?;
        writeln!(
            stdout,
            "model      {} {}D, {} boundary",
            h.model.name(),
            h.dim,
            h.boundary.name()
        )?;
        writeln!(
            stdout,
            "world      {}{}",
            world.join(" x "),
            if h.world_inferred { " (inferred)" } else { "" }
        )?;
        writeln!(stdout, "agents     {}", h.agents)?;
        writeln!(stdout, "dt         {}   seed {}", h.dt, h.seed)?;
        writeln!(
            stdout,
            "frames     {count} (a frame every {} step{}{})",
            h.record_every,
            if h.record_every == 1 { "" } else { "s" },
            last_step
                .map(|s| format!(", last at step {s}"))
                .unwrap_or_default()
        )?;
        if let Some(s) = &summary {
            writeln!(
                stdout,
                "metrics    {:>12} {:>12} {:>12}   (over {} frames)",
                "first", "last", "mean", s.frames_sampled
            )?;
            let rows: [(&str, fn(&Metrics) -> f64); 4] = [
                ("polarization", |m| m.polarization),
                ("mean speed", |m| m.mean_speed),
                ("nn distance", |m| m.nn_distance),
                ("pairwise", |m| m.pairwise_distance),
            ];
            for (name, f) in rows {
                writeln!(
                    stdout,
                    "  {:<12} {:>10.4} {:>12.4} {:>12.4}",
                    name,
                    f(&s.first),
                    f(&s.last),
                    f(&s.mean)
                )?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

// ---------------------------------------------------------------------------------------------
// forge render / still / gpus / run / demo

/// How a recording looks. Each flag falls back to the recording's scene `render` section,
/// then to the default shown.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct LookArgs {
    /// Output size in pixels, two even numbers [default: scene's, else 1920x1080].
    #[arg(long, value_name = "WxH", value_parser = parse_size, conflicts_with_all = ["uhd", "fhd", "hd"])]
    pub size: Option<[u32; 2]>,
    /// 3840x2160.
    #[arg(long = "4k", conflicts_with_all = ["fhd", "hd"])]
    pub uhd: bool,
    /// 1920x1080.
    #[arg(long = "1080p", conflicts_with = "hd")]
    pub fhd: bool,
    /// 1280x720.
    #[arg(long = "720p")]
    pub hd: bool,
    /// Colour agents by speed, heading, density (computed on the GPU) or one fixed colour
    /// [default: scene's, else speed].
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(scene::RENDER_COLORS))]
    pub color: Option<String>,
    /// Colour map [default: scene's, else inferno; sinebow for heading].
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(scene::RENDER_COLORMAPS))]
    pub colormap: Option<String>,
    /// Values at the colour map's ends [default: scene's, else speed: 5th..95th percentile
    /// over 16 sampled frames; density: 0..4x the mean agents per cell].
    #[arg(long, value_name = "A..B", value_parser = parse_range_f32)]
    pub range: Option<[f32; 2]>,
    /// Trails: fraction of the previous frame kept, in [0, 1) [default: scene's, else 0 = off].
    #[arg(long)]
    pub trails: Option<f32>,
    /// Bloom strength, 0 = off [default: scene's, else 0.5].
    #[arg(long)]
    pub bloom: Option<f32>,
    /// Exposure before tone mapping [default: scene's, else 1.0].
    #[arg(long)]
    pub exposure: Option<f32>,
    /// Background colour, #rrggbb [default: scene's, else #05050a].
    #[arg(long, value_name = "#RRGGBB")]
    pub background: Option<String>,
    /// Sprite core radius in pixels at 1080p, scaled with the output height
    /// [default: scene's, else 1.5].
    #[arg(long)]
    pub point_size: Option<f32>,
    /// Vignette strength, 0 = none [default: 0.25].
    #[arg(long)]
    pub vignette: Option<f32>,
    /// How the world fills the frame when their aspects differ [default: letterbox].
    #[arg(long, value_enum)]
    pub fit: Option<crate::render::Fit>,
    /// Keep the centre of mass in the middle of the frame (eased); for a 3D recording, the
    /// same as --camera follow.
    #[arg(long)]
    pub follow: bool,
    /// 3D recordings: orbit (circle the world once over the clip), fixed (from --eye towards
    /// --target), follow (track the centre of mass) or top (orthographic x-y projection)
    /// [default: orbit; fixed if --eye or --target is given].
    #[arg(long, value_enum)]
    pub camera: Option<crate::render::camera::CameraMode>,
    /// 3D, --camera fixed: where the eye is, world units
    /// [default: where the orbit starts, 25° above the -y side].
    #[arg(long, value_name = "X,Y,Z", value_parser = parse_vec3, allow_hyphen_values = true)]
    pub eye: Option<[f32; 3]>,
    /// 3D, --camera fixed: the point looked at, world units [default: the world's centre].
    #[arg(long, value_name = "X,Y,Z", value_parser = parse_vec3, allow_hyphen_values = true)]
    pub target: Option<[f32; 3]>,
    /// 3D: vertical field of view in degrees [default: 45].
    #[arg(long, value_name = "DEG")]
    pub fov: Option<f32>,
    /// 3D: fog, 0..1: how far the farthest agents fade towards the background [default: 0].
    #[arg(long)]
    pub fog: Option<f32>,
    /// 3D: draw the world box as a faint wireframe.
    #[arg(long = "box")]
    pub world_box: bool,
    /// GPU adapter: an index or part of a name from `forge gpus` [default: the best present].
    #[arg(long)]
    pub adapter: Option<String>,
}

impl LookArgs {
    fn flags(&self) -> crate::video::LookFlags {
        let size = if self.uhd {
            Some([3840, 2160])
        } else if self.fhd {
            Some([1920, 1080])
        } else if self.hd {
            Some([1280, 720])
        } else {
            self.size
        };
        crate::video::LookFlags {
            size,
            color: self.color.clone(),
            colormap: self.colormap.clone(),
            range: self.range,
            trails: self.trails,
            bloom: self.bloom,
            exposure: self.exposure,
            background: self.background.clone(),
            point_size: self.point_size,
            fit: self.fit,
            follow: self.follow,
            vignette: self.vignette,
            camera: self.camera,
            eye: self.eye,
            target: self.target,
            fov: self.fov,
            fog: self.fog,
            world_box: self.world_box,
        }
    }
}

/// Video output flags (shared by render, run and demo).
#[derive(clap::Args, Debug, Clone)]
pub struct VideoArgs {
    /// Frames per second of the video: one recorded frame per video frame
    /// [default: scene's, else 30].
    #[arg(long)]
    pub fps: Option<u32>,
    /// FFmpeg video encoder (e.g. libx264, libx265, h264_nvenc); --crf and --preset apply
    /// to libx264/libx265.
    #[arg(long, default_value = crate::video::defaults::ENCODER)]
    pub encoder: String,
    /// Constant rate factor (quality; lower is better, 0..=51).
    #[arg(long, default_value_t = crate::video::defaults::CRF)]
    pub crf: u32,
    /// Encoder preset (ultrafast .. veryslow).
    #[arg(long, default_value = crate::video::defaults::PRESET)]
    pub preset: String,
    /// Write PNG frames (frame_000000.png, ...) into this folder instead of a video.
    #[arg(long, value_name = "DIR")]
    pub png: Option<PathBuf>,
    /// Overwrite the output if it exists.
    #[arg(long)]
    pub force: bool,
    /// No progress bar and no summary line.
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Needs FFmpeg for video (apt-get install ffmpeg) and a GPU or Mesa's software \
driver (apt-get install mesa-vulkan-drivers libvulkan1 libegl1 libegl-mesa0 libgl1-mesa-dri).\n\
A recording cut short renders every complete frame (with a warning); a frame that cannot be read \
stops the render with an error naming it, and no video is left behind."
)]
pub struct RenderArgs {
    /// A recording (.bfs, ours or BoidForge's BFS1).
    pub file: PathBuf,
    /// Output video [default: FILE with .mp4].
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Frames A..B of the recording (B excluded; either may be left out) [default: all].
    #[arg(long, value_name = "A..B", value_parser = parse_frames)]
    pub frames: Option<(Option<u64>, Option<u64>)>,
    #[command(flatten)]
    pub video: VideoArgs,
    #[command(flatten)]
    pub look: LookArgs,
}

#[derive(clap::Args, Debug)]
pub struct StillArgs {
    /// A recording (.bfs, ours or BoidForge's BFS1).
    pub file: PathBuf,
    /// Frame to render (with trails, the frames before it are rendered too).
    #[arg(long, default_value_t = 0)]
    pub frame: u64,
    /// Output PNG.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Overwrite the output if it exists.
    #[arg(long)]
    pub force: bool,
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub look: LookArgs,
}

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// A scene file (JSON) or the name of a built-in scene (see `forge scenes`).
    pub scene: String,
    /// Output video [default: SCENE_NAME.mp4].
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Keep the recording here [default: a temporary file, deleted afterwards].
    #[arg(long, value_name = "FILE.bfs")]
    pub bfs: Option<PathBuf>,
    #[command(flatten)]
    pub overrides: Overrides,
    #[command(flatten)]
    pub video: VideoArgs,
    #[command(flatten)]
    pub look: LookArgs,
}

/// `forge demo`: the embedded default scene, sized to render in about a minute on a CPU.
#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Output video.
    #[arg(short, long, default_value = "demo.mp4")]
    pub output: PathBuf,
    /// Overwrite the output if it exists.
    #[arg(long)]
    pub force: bool,
    #[arg(short, long)]
    pub quiet: bool,
}

/// Demo settings: the default scene (`murmuration`) with fewer agents and steps, 1280x720.
const DEMO_AGENTS: u64 = 10_000;
const DEMO_STEPS: u64 = 360;

fn parse_size(s: &str) -> std::result::Result<[u32; 2], String> {
    let (w, h) = s
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("expected WxH (like 1920x1080), got {s:?}"))?;
    let w: u32 = w
        .trim()
        .parse()
        .map_err(|_| format!("bad width in {s:?}"))?;
    let h: u32 = h
        .trim()
        .parse()
        .map_err(|_| format!("bad height in {s:?}"))?;
    if w == 0 || h == 0 {
        return Err(format!("width and height must be above zero, got {w}x{h}"));
    }
    if w % 2 == 1 || h % 2 == 1 {
        return Err(format!("H.264 (yuv420p) needs even sizes, got {w}x{h}"));
    }
    Ok([w, h])
}

fn parse_vec3(s: &str) -> std::result::Result<[f32; 3], String> {
    let parts: Vec<&str> = s.split(',').collect();
    if parts.len() != 3 {
        return Err(format!("expected X,Y,Z, got {s:?}"));
    }
    let mut v = [0.0f32; 3];
    for (o, t) in v.iter_mut().zip(&parts) {
        *o = t
            .trim()
            .parse()
            .map_err(|_| format!("bad number {:?} in {s:?}", t.trim()))?;
        if !o.is_finite() {
            return Err(format!("need finite numbers, got {s:?}"));
        }
    }
    Ok(v)
}

fn parse_range_f32(s: &str) -> std::result::Result<[f32; 2], String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("expected A..B, got {s:?}"))?;
    let a: f32 = a.trim().parse().map_err(|_| format!("bad number {a:?}"))?;
    let b: f32 = b.trim().parse().map_err(|_| format!("bad number {b:?}"))?;
    if !(a.is_finite() && b.is_finite() && a < b) {
        return Err(format!("need finite A < B, got {s}"));
    }
    Ok([a, b])
}

fn parse_frames(s: &str) -> std::result::Result<(Option<u64>, Option<u64>), String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("expected A..B (B excluded; A.. or ..B allowed), got {s:?}"))?;
    let num = |t: &str| -> std::result::Result<Option<u64>, String> {
        if t.trim().is_empty() {
            Ok(None)
        } else {
            t.trim()
                .parse()
                .map(Some)
                .map_err(|_| format!("bad frame number {t:?}"))
        }
    };
    let (a, b) = (num(a)?, num(b)?);
    if let (Some(a), Some(b)) = (a, b) {
        if a >= b {
            return Err(format!("{a}..{b} is empty"));
        }
    }
    Ok((a, b))
}

fn video_job(
    input: PathBuf,
    output: PathBuf,
    frames: Option<(Option<u64>, Option<u64>)>,
    video: &VideoArgs,
    look: &LookArgs,
) -> Result<crate::video::Job> {
    if let Some(f) = video.fps {
        if f == 0 || f > 240 {
            bail!("--fps: must be in 1..=240, got {f}");
        }
    }
    if video.crf > 51 {
        bail!("--crf: must be in 0..=51, got {}", video.crf);
    }
    let header = bfs::Reader::open(&input)
        .map(|r| r.header().clone())
        .with_context(|| format!("cannot open {}", input.display()))?;
    let scene_fps = crate::video::scene_render(&header).and_then(|r| r.fps);
    let fps = video
        .fps
        .or(scene_fps)
        .unwrap_or(crate::video::defaults::FPS);
    let dest = match &video.png {
        Some(dir) => crate::video::Destination::Png { dir: dir.clone() },
        None => crate::video::Destination::Mp4 {
            path: output,
            encoding: crate::video::Encoding {
                encoder: video.encoder.clone(),
                crf: video.crf,
                preset: video.preset.clone(),
                fps,
            },
        },
    };
    Ok(crate::video::Job {
        input,
        look: look.flags(),
        frames,
        fps: Some(fps),
        dest,
        force: video.force,
        quiet: video.quiet,
        adapter: look.adapter.clone(),
    })
}

fn report_render(r: &crate::video::Report, out: &Path, quiet: bool) {
    if quiet {
        return;
    }
    let size = std::fs::metadata(out).map(|m| m.len()).unwrap_or(0);
    eprintln!(
        "{} frames at {}x{} in {:.2} s ({:.1} frames/s) -> {}{}",
        r.frames,
        r.width,
        r.height,
        r.secs,
        r.frames as f64 / r.secs.max(1e-9),
        out.display(),
        if out.is_file() {
            format!(" ({})", bytes(size))
        } else {
            String::new()
        }
    );
}

fn render_cmd(a: RenderArgs) -> Result<ExitCode> {
    let output = a
        .output
        .clone()
        .unwrap_or_else(|| a.file.with_extension("mp4"));
    let job = video_job(a.file.clone(), output.clone(), a.frames, &a.video, &a.look)?;
    let r = crate::video::render(&job)?;
    let shown = a.video.png.clone().unwrap_or(output);
    report_render(&r, &shown, a.video.quiet);
    Ok(ExitCode::SUCCESS)
}

fn still_cmd(a: StillArgs) -> Result<ExitCode> {
    let r = crate::video::still(
        &a.file,
        a.frame,
        &a.output,
        &a.look.flags(),
        a.force,
        a.quiet,
        a.look.adapter.as_deref(),
    )?;
    report_render(&r, &a.output, a.quiet);
    Ok(ExitCode::SUCCESS)
}

fn gpus_cmd() -> Result<ExitCode> {
    let all = crate::render::gpu::list();
    if all.is_empty() {
        bail!(crate::render::gpu::no_adapter_message());
    }
    let mut out = std::io::stdout().lock();
    for a in &all {
        writeln!(
            out,
            "{}: {}{}",
            a.index,
            crate::render::gpu::describe(&a.info),
            format_args!(", max texture {}", a.max_texture)
        )?;
    }
    writeln!(out, "(the first is used unless --adapter says otherwise)")?;
    Ok(ExitCode::SUCCESS)
}

fn run_cmd(a: RunArgs) -> Result<ExitCode> {
    let scene = load_scene(&a.scene)?;
    let output = a
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.mp4", scene.name)));
    // Refuse an existing video before spending time on the simulation.
    if a.video.png.is_none() && output.is_file() && !a.video.force {
        bail!(
            "output {} already exists (use --force to overwrite it)",
            output.display()
        );
    }
    let tmp;
    let bfs_path = match &a.bfs {
        Some(p) => p.clone(),
        None => {
            tmp = tempfile::Builder::new()
                .prefix("forge-run-")
                .tempdir()
                .context("cannot create a temporary folder for the recording")?;
            tmp.path().join(format!("{}.bfs", scene.name))
        }
    };
    let sim = SimulateArgs {
        scene: a.scene.clone(),
        output: Some(bfs_path.clone()),
        overrides: a.overrides,
        threads: None,
        search: None,
        backend: Backend::Auto,
        force: a.video.force,
        quiet: a.video.quiet,
    };
    let code = simulate(sim)?;
    if code != ExitCode::SUCCESS {
        return Ok(code);
    }
    let job = video_job(bfs_path, output.clone(), None, &a.video, &a.look)?;
    let r = crate::video::render(&job)?;
    let shown = a.video.png.clone().unwrap_or(output);
    report_render(&r, &shown, a.video.quiet);
    Ok(ExitCode::SUCCESS)
}

fn demo_cmd(a: DemoArgs) -> Result<ExitCode> {
    let look = LookArgs {
        hd: true,
        ..Default::default()
    };
    run_cmd(RunArgs {
        scene: scenes::DEFAULT.to_string(),
        output: Some(a.output),
        bfs: None,
        overrides: Overrides {
            steps: Some(DEMO_STEPS),
            agents: Some(DEMO_AGENTS),
            seed: None,
        },
        video: VideoArgs {
            fps: None,
            encoder: crate::video::defaults::ENCODER.into(),
            crf: crate::video::defaults::CRF,
            preset: crate::video::defaults::PRESET.into(),
            png: None,
            force: a.force,
            quiet: a.quiet,
        },
        look,
    })
}
