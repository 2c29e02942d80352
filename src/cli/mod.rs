//! Command line: argument types (`args`), then one thin file per command. Each command
//! resolves its flags into validated settings once and hands them to the library.

mod analyze;
mod args;
mod bench;
mod concat;
mod export;
mod info;
mod log;
mod render;
pub mod simulate;
mod sweep;
mod view;

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

pub use args::*;

use crate::scene::{builtin, Model, Scene};

#[derive(Parser, Debug)]
#[command(
    name = "forge",
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
    Bench(bench::BenchArgs),
    /// Render a recording to an H.264 MP4 (or PNG frames) on the GPU, headless.
    Render(RenderArgs),
    /// Render one frame of a recording to a PNG.
    Still(StillArgs),
    /// List the GPU adapters the renderer can use (software drivers included).
    Gpus,
    /// Simulate a scene and render it to video in one go.
    Run(RunArgs),
    /// Render the built-in demo scene to demo.mp4 (about 20 s on 2 CPU cores with no GPU).
    Demo(DemoArgs),
    /// Run a scene over a grid of parameter values and seeds, in parallel; the order
    /// parameter's mean, error, Binder cumulant and susceptibility per point to CSV (and PNG).
    Sweep(sweep::SweepArgs),
    /// Export a recording to NumPy (.npz: positions, velocities, steps, times, metrics, scene),
    /// CSV, extended XYZ (OVITO, ASE) or USD (Houdini, Blender, usdview).
    Export(ExportArgs),
    /// Measure a recording as collective-motion papers do: the velocity correlation C(r), its
    /// correlation length and susceptibility, g(r), and the k-th neighbour anisotropy.
    Analyze(analyze::AnalyzeArgs),
    /// Join the chunks of `forge render --chunk I/N` into one MP4 by stream copy, after
    /// checking they are every chunk of one recording and settings, once each.
    Concat(ConcatArgs),
    /// Watch a recording (or a scene as it is simulated) in a window: play, scrub, pan, zoom,
    /// tune every setting of the look live, and save it for `forge render --look`.
    View(ViewArgs),
    /// Print a shell completion script for bash, zsh, fish, powershell or elvish.
    #[command(after_help = "Examples:\n  \
        forge completions bash > ~/.local/share/bash-completion/completions/forge\n  \
        forge completions zsh > ~/.zfunc/_forge      # with fpath+=(~/.zfunc) in ~/.zshrc\n  \
        forge completions fish > ~/.config/fish/completions/forge.fish")]
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) of forge, or of one of its commands.
    #[command(after_help = "Examples:\n  \
        forge man | man -l -\n  \
        forge man render > forge-render.1")]
    Man {
        /// A command (`render`, `simulate`, ...) whose own page to print.
        command: Option<String>,
    },
}

/// The version line `forge --version` and the man pages print, set once by [`parse`].
static VERSION: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

/// The command line's definition, with the version [`parse`] was given (the library's own
/// version before that).
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command().version(version())
}

fn version() -> &'static str {
    VERSION.get().copied().unwrap_or(env!("CARGO_PKG_VERSION"))
}

/// The command line, parsed; `--help`, `--version` and usage errors end the process here
/// (clap prints them and exits), before anything is created. `version` is what `--version`
/// prints: the binary's build script stamps it with the commit (the library is built once for
/// every commit, so it cannot).
pub fn parse(version: &'static str) -> Cli {
    let _ = VERSION.set(version);
    let parsed = command()
        .try_get_matches()
        .and_then(|mut m| <Cli as clap::FromArgMatches>::from_arg_matches_mut(&mut m));
    match parsed {
        Ok(cli) => cli,
        Err(e) => {
            // clap's own `exit` would take a failed write of `--help` or `--version` (a full
            // disk, a closed pipe) for success.
            let written = e.print().and_then(|()| {
                if e.use_stderr() {
                    std::io::stderr().flush()
                } else {
                    std::io::stdout().flush()
                }
            });
            if let Err(w) = written {
                let stream = if e.use_stderr() { "error" } else { "output" };
                eprintln!("error: cannot write to standard {stream}: {w}");
                std::process::exit(1);
            }
            std::process::exit(e.exit_code());
        }
    }
}

impl Cli {
    /// Whether the command may open a GPU adapter (wgpu, hence Mesa, which wants an
    /// `XDG_RUNTIME_DIR`).
    pub fn may_open_gpu(&self) -> bool {
        matches!(
            self.command,
            Command::Render(_)
                | Command::Still(_)
                | Command::Gpus
                | Command::Run(_)
                | Command::Demo(_)
                | Command::Bench(_)
                | Command::View(_)
        )
    }
}

/// Runs a parsed command line and prints its errors: the whole cause chain, and the exit code
/// of a signal that stopped it.
pub fn main(cli: Cli) -> ExitCode {
    log::install();
    if matches!(
        cli.command,
        Command::Simulate(_)
            | Command::Info(_)
            | Command::Render(_)
            | Command::Still(_)
            | Command::Run(_)
            | Command::Demo(_)
            | Command::Sweep(_)
            | Command::Export(_)
            | Command::Analyze(_)
            | Command::Concat(_)
            | Command::View(_)
    ) {
        // These commands poll for SIGINT/SIGTERM and stop cleanly; the others just end.
        crate::signal::install();
    }
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            let signal = crate::signal::caught();
            if is_broken_pipe(&e) && signal.is_none() {
                return ExitCode::SUCCESS;
            }
            let said = e.chain().any(|c| c.is::<crate::signal::Interrupted>());
            let shown = match signal {
                // Stopped by a signal through some other error (FFmpeg, say, which a terminal's
                // Ctrl-C reaches too): say so first, then what failed.
                Some(s) if !said => {
                    eprintln!("error: interrupted by {}", crate::signal::name(s));
                    0
                }
                _ => {
                    eprintln!("error: {e}");
                    1
                }
            };
            // A cause whose text the line above already ends with ("i/o error: X" over X) is
            // not said twice.
            let mut above = if shown == 1 {
                e.to_string()
            } else {
                String::new()
            };
            for cause in e.chain().skip(shown) {
                let text = cause.to_string();
                if above.is_empty() || !above.ends_with(&text) {
                    eprintln!("  caused by: {text}");
                }
                above = text;
            }
            match signal {
                Some(s) => ExitCode::from(crate::signal::exit_code(s)),
                None => ExitCode::FAILURE,
            }
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
        Command::Simulate(a) => simulate::simulate(a),
        Command::Info(a) => info::info(a),
        Command::Scenes => {
            let mut out = std::io::stdout().lock();
            for b in builtin::BUILTIN {
                let s = Scene::builtin(b)?;
                let kind = match s.model {
                    Model::Boids => format!("boids {}D", s.dim),
                    Model::Vicsek => "vicsek".to_string(),
                };
                writeln!(
                    out,
                    "{:<14} {:<9} {:>6} agents {:>5} steps  {}",
                    b.name, kind, s.agents, s.steps, s.description
                )?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench(a) => bench::bench_cmd(a),
        Command::Render(a) => render::render_cmd(a),
        Command::Still(a) => render::still_cmd(a),
        Command::Gpus => render::gpus_cmd(),
        Command::Run(a) => render::run_cmd(a),
        Command::Demo(a) => render::demo_cmd(a),
        Command::Sweep(a) => sweep::sweep_cmd(a),
        Command::Export(a) => export::export_cmd(a),
        Command::Analyze(a) => analyze::analyze_cmd(a),
        Command::Concat(a) => concat::concat_cmd(a),
        Command::View(a) => view::view_cmd(a),
        Command::Completions { shell } => {
            let mut cmd = command();
            // Made in memory first: clap_complete panics on a failed write.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cmd, "forge", &mut script);
            let mut out = std::io::stdout().lock();
            out.write_all(&script)
                .and_then(|()| out.flush())
                .context("cannot write the completions to standard output")?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Man { command } => man(command.as_deref()),
    }
}

/// `forge man [COMMAND]`: the man page of forge, or of one command (named `forge-COMMAND`).
fn man(name: Option<&str>) -> Result<ExitCode> {
    let cmd = command();
    let page = match name {
        None => cmd,
        Some(name) => {
            let Some(sub) = cmd.find_subcommand(name) else {
                let names: Vec<&str> = cmd.get_subcommands().map(|c| c.get_name()).collect();
                anyhow::bail!(
                    "forge man: no command {name:?} (commands: {})",
                    names.join(", ")
                );
            };
            // clap names commands with `&'static str` (without its `string` feature); this
            // runs once, just before the process ends.
            let page_name: &'static str = Box::leak(format!("forge-{name}").into_boxed_str());
            sub.clone().name(page_name).version(version())
        }
    };
    let mut out = std::io::stdout().lock();
    clap_mangen::Man::new(page)
        .render(&mut out)
        .and_then(|()| out.flush())
        .context("cannot write the man page to standard output")?;
    Ok(ExitCode::SUCCESS)
}
