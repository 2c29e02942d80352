//! `forge bench render`: the renderer's speed and a long render's peak memory.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Result};

use super::{bench_recording, is_recording, peak_rss_kib, run_forge};

/// Frames rendered per configuration of `forge bench render`: enough to time, few enough that
/// 1M agents at 4K on a software driver finish.
fn render_frames(agents: u64, pixels: u64) -> u64 {
    match (agents, pixels) {
        (a, _) if a >= 1_000_000 => 6,
        (a, p) if a >= 100_000 || p > 2_100_000 => 20,
        _ => 120,
    }
}

/// Agents in the memory row's long render.
const MEMORY_AGENTS: u64 = 300;

/// The look every `bench render` row uses.
fn bench_look(size: [u32; 2]) -> crate::video::Layers {
    crate::video::Layers::flags(crate::look::Look {
        size: Some(crate::look::Size(size)),
        fps: Some(30),
        trails: Some(0.8),
        ..Default::default()
    })
}

/// A quiet, overwriting render of frames `..end` (all of them: `None`) of `input` with `look`
/// into `dest`, as every `bench render` row runs one.
fn bench_job(
    input: &Path,
    look: crate::video::Layers,
    end: Option<u64>,
    dest: crate::video::Destination,
) -> crate::video::Job {
    crate::video::Job {
        input: input.to_path_buf(),
        look,
        frames: crate::bfs::FrameRange {
            start: end.map(|_| 0),
            end,
        },
        dest,
        force: true,
        quiet: true,
        adapter: None,
        interpolate: 1,
        chunk: None,
    }
}

/// The memory row's child: renders frames 0..`frames` of `path` (render-only) at `size` and
/// writes its peak resident memory in KiB to `out`.
fn render_memory_probe(
    path: &Path,
    size: [u32; 2],
    frames: u64,
    out: &mut dyn Write,
) -> Result<()> {
    use crate::video::{self, Destination};
    let dest = Destination::Collect {
        frames: std::sync::Arc::default(),
        keep: 0,
    };
    video::render(&bench_job(path, bench_look(size), Some(frames), dest))?;
    writeln!(out, "{}", peak_rss_kib().unwrap_or(0))?;
    Ok(())
}

/// The memory row: peak resident memory of a long render (in a fresh process each, render
/// only) after a tenth of the frames and after all of them. Flat memory shows as the same
/// figure twice.
fn memory_row(t: &Tables, dir: &Path, out: &mut impl Write) -> Result<()> {
    let (size, frames) = (t.memory_size, t.memory_frames);
    let path = dir.join("bench-memory.bfs");
    bench_recording(&path, MEMORY_AGENTS, 2, frames)?;
    let exe = std::env::current_exe()?;
    let probe = |n: u64| -> Result<f64> {
        let o = std::process::Command::new(&exe)
            .args(["bench", "render", "--memory-size", &t.memory_size_text])
            .args(["--memory-frames", &n.to_string(), "--render-memory-probe"])
            .arg(&path)
            .output()?;
        if !o.status.success() {
            bail!(
                "the long render for the memory row failed: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            );
        }
        let kib: u64 = String::from_utf8_lossy(&o.stdout)
            .trim()
            .parse()
            .unwrap_or(0);
        Ok(kib as f64 * 1024.0 / 1e6)
    };
    let first = (frames / 10).max(1);
    let early = probe(first)?;
    let all = probe(frames)?;
    writeln!(
        out,
        "Peak memory of a long render, {MEMORY_AGENTS} agents at {}x{} (render-only, trails 0.8): \
         {early:.0} MB after {first} frames, {all:.0} MB after {frames} frames \
         ({:+.1} MB per 1000 frames)\n",
        size[0],
        size[1],
        (all - early) * 1000.0 / (frames - first) as f64
    )?;
    out.flush()?;
    Ok(())
}

/// The passes table's recordings and size.
pub struct Passes {
    /// Built-in scenes simulated, or `.bfs` recordings as they are.
    pub scenes: Vec<String>,
    pub size: [u32; 2],
    /// Steps simulated (a recording has one frame more).
    pub steps: u64,
}

/// `forge bench render`, what to measure.
pub enum Plan {
    /// `--render-memory-probe PATH` (internal): the memory row's child.
    MemoryProbe {
        path: PathBuf,
        size: [u32; 2],
        frames: u64,
    },
    Tables(Box<Tables>),
}

/// The tables of `forge bench render`: every size and agent count checked, against the
/// adapter's limits too ([`Tables::checked`]), before any row runs.
pub struct Tables {
    /// Which tables: the frames/s table, the passes table (of these scenes), the memory row.
    pub fps: bool,
    pub passes: Option<Passes>,
    pub memory: bool,
    /// The encoder table: the whole command against x264 alone.
    pub encoder: Option<super::encoder::Encoder>,
    /// The frames/s table's sizes, dimensions and agent counts.
    pub sizes: Vec<[u32; 2]>,
    pub dims: Vec<usize>,
    pub agents: Vec<u64>,
    /// The memory row's size, and as it was given (for the memory row's child).
    pub memory_size: [u32; 2],
    pub memory_size_text: String,
    pub memory_frames: u64,
    /// The adapter wgpu picked, as the title names it (set by [`Tables::checked`]).
    pub adapter: String,
}

impl Plan {
    /// The tables (or the memory probe's line) to `out`.
    pub fn run(self, out: &mut dyn Write) -> Result<()> {
        match self {
            Plan::MemoryProbe { path, size, frames } => {
                render_memory_probe(&path, size, frames, out)
            }
            Plan::Tables(t) => t.run(out),
        }
    }
}

impl Tables {
    /// The tables with every row's size and agents checked against the adapter's limits, and
    /// the adapter named.
    pub fn checked(self) -> Result<Tables> {
        use crate::render::limits::{self, Needs};
        use crate::render::Output;
        let gpu = crate::render::gpu::Gpu::new(None)?;
        let adapter = crate::render::gpu::describe(&gpu.info);
        let mut rows: Vec<(&str, [u32; 2], u64, usize)> = Vec::new();
        if self.fps {
            for &dim in &self.dims {
                for &n in &self.agents {
                    for &size in &self.sizes {
                        rows.push(("--render-sizes", size, n, dim));
                    }
                }
            }
        }
        if let Some(p) = &self.passes {
            rows.push(("--passes-size", p.size, PASSES_AGENTS, 3));
        }
        if self.memory {
            rows.push(("--memory-size", self.memory_size, MEMORY_AGENTS, 2));
        }
        if let Some(e) = &self.encoder {
            for &n in &e.agents {
                for &size in &e.sizes {
                    rows.push(("--render-sizes", size, n, 2));
                }
            }
        }
        for (flag, [w, h], n, dim) in rows {
            let needs = Needs {
                width: w,
                height: h,
                output: Output::YUV420P,
                agents: n as u32,
                dim,
                density: false,
            };
            limits::check(&gpu.limits, &needs, &gpu.info.name, flag)?;
        }
        Ok(Tables { adapter, ..self })
    }

    /// The frames/s table, then the memory row.
    fn run(self, mut out: &mut dyn Write) -> Result<()> {
        let dir = tempfile::tempdir()?;
        writeln!(out, "forge bench render — {}\n", self.adapter)?;
        if self.fps {
            self.fps_table(dir.path(), &mut out)?;
        }
        if let Some(p) = &self.passes {
            passes_table(p, dir.path(), &mut out)?;
        }
        if let Some(e) = &self.encoder {
            e.run(dir.path(), &mut out)?;
        }
        if self.memory {
            memory_row(&self, dir.path(), &mut out)?;
        }
        Ok(())
    }

    /// Render-only, encode-only and end-to-end frames/s (forge's default encoding: x264
    /// veryfast, crf 18) for each size and agent count, on the adapter wgpu picks (a software
    /// driver where there is no GPU), each once started (the start-up, shown on its own, left
    /// out).
    fn fps_table(&self, dir: &Path, out: &mut impl Write) -> Result<()> {
        writeln!(out, "| dim | size | agents | frames | start-up s | render-only fps | bloom's share | encode-only fps | end-to-end fps | end-to-end / slower stage |")?;
        writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")?;
        for &dim in &self.dims {
            for &n in &self.agents {
                let most = self
                    .sizes
                    .iter()
                    .map(|s| render_frames(n, s[0] as u64 * s[1] as u64))
                    .max()
                    .unwrap_or(1);
                // A recording of `most` frames at the solver benchmark's density.
                let path = dir.join(format!("bench-{dim}d-{n}.bfs"));
                bench_recording(&path, n, dim, most)?;
                for &size in &self.sizes {
                    fps_row(out, dir, &path, dim, n, size)?;
                }
            }
        }
        writeln!(out)?;
        Ok(())
    }
}

/// Agents in the passes table's recordings.
const PASSES_AGENTS: u64 = 2000;

/// Where a frame's time goes, on recordings of built-in scenes (`forge simulate NAME --agents
/// 2000 --steps 300`) rendered (720p) with their own looks: the look measured over the
/// recording, the start-up, each pass waited for on its own (see `render::laps`), and the
/// whole `forge render` command's frames/s at x264 veryfast (forge's default) and medium.
fn passes_table(passes: &Passes, dir: &Path, out: &mut impl Write) -> Result<()> {
    use crate::render::laps::Pass;
    use crate::video::{Destination, Plan};
    let run = run_forge;
    let [w, h] = passes.size;
    writeln!(
        out,
        "Built-in scenes, {PASSES_AGENTS} agents, {} steps (a .bfs: the recording as it is), at \
         {w}x{h} with their own looks; each pass waited for on its own: wall ms / CPU ms (every \
         thread) a frame.\n",
        passes.steps
    )?;
    write!(out, "| scene | frames | look s | start-up s |")?;
    for p in Pass::ALL {
        write!(out, " {} |", p.name())?;
    }
    writeln!(
        out,
        " sum | whole command fps (veryfast) | whole command fps (medium) |"
    )?;
    writeln!(
        out,
        "|---|---:|---:|---:|{}---:|---:|---:|",
        "---:|".repeat(Pass::ALL.len())
    )?;
    let size_text = format!("{w}x{h}");
    for name in &passes.scenes {
        let bfs = if is_recording(name) {
            Path::new(name).to_path_buf()
        } else {
            let bfs = dir.join(format!("{name}.bfs"));
            let (agents, steps) = (PASSES_AGENTS.to_string(), passes.steps.to_string());
            let out = bfs.to_string_lossy();
            run(&[
                "simulate", name, "--agents", &agents, "--steps", &steps, "-o", &out, "-q",
                "--force",
            ])?;
            bfs
        };
        let bfs_s = bfs.to_string_lossy().into_owned();
        let mp4 = dir.join("passes.mp4");
        let look = crate::video::Layers::flags(crate::look::Look {
            size: Some(crate::look::Size(passes.size)),
            ..Default::default()
        });
        let dest = Destination::Mp4 {
            path: mp4.clone(),
            encoding: Default::default(),
        };
        let job = bench_job(&bfs, look, None, dest);
        let t0 = Instant::now();
        let plan = Plan::resolve(&job)?;
        let look_secs = t0.elapsed().as_secs_f64();
        let r = plan.time_passes().run()?;
        let laps = r.laps.expect("timed");
        write!(
            out,
            "| {name} | {} | {look_secs:.2} | {:.2} |",
            r.frames, r.start_secs
        )?;
        for p in Pass::ALL {
            write!(out, " {:.1} / {:.1} |", laps.ms(p), laps.cpu_ms(p))?;
        }
        let mp4_s = mp4.to_string_lossy().into_owned();
        let whole = |preset: &str| -> Result<f64> {
            let secs = run(&[
                "render", &bfs_s, "--size", &size_text, "--preset", preset, "-o", &mp4_s, "-q",
                "--force",
            ])?;
            Ok(r.frames as f64 / secs)
        };
        let (fast, medium) = (whole("veryfast")?, whole("medium")?);
        let (wall, cpu) = laps.total_ms();
        writeln!(out, " {wall:.1} / {cpu:.1} | {fast:.1} | {medium:.1} |")?;
        out.flush()?;
    }
    writeln!(out)?;
    Ok(())
}

/// One row of the frames/s table: the first frames of the recording at `path` (`n` agents in
/// `dim` dimensions) rendered at `size` with and without bloom, encoded alone, and end to end.
fn fps_row(
    out: &mut impl Write,
    dir: &Path,
    path: &Path,
    dim: usize,
    n: u64,
    size: [u32; 2],
) -> Result<()> {
    use crate::video::ffmpeg::{Encoding, FfmpegSink};
    use crate::video::{self, Destination};
    let frames = render_frames(n, size[0] as u64 * size[1] as u64);
    let look = bench_look(size);
    let job = |dest| bench_job(path, look.clone(), Some(frames), dest);
    let kept = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let r = video::render(&job(Destination::Collect {
        frames: kept.clone(),
        keep: frames as usize,
    }))?;
    // The same frames without bloom: its share of the render.
    let mut plain = job(Destination::Collect {
        frames: std::sync::Arc::default(),
        keep: 0,
    });
    plain.look.flags.bloom = Some(0.0);
    let nb = video::render(&plain)?;
    let encoding = Encoding::h264();
    let enc_path = dir.join("encode-only.mp4");
    let mut sink = FfmpegSink::start(&enc_path, size[0], size[1], 30, &encoding)?;
    let t0 = Instant::now();
    for f in kept.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
        sink.push(&f)?;
    }
    sink.finish()?;
    let t_enc = t0.elapsed().as_secs_f64();
    let e = video::render(&job(Destination::Mp4 {
        path: dir.join("e2e.mp4"),
        encoding: Default::default(),
    }))?;
    // Seconds a frame, once started.
    let (render, encode, both) = (1.0 / r.rate(), t_enc / frames as f64, 1.0 / e.rate());
    writeln!(
        out,
        "| {dim}D | {}x{} | {n} | {frames} | {:.2} | {:.1} | {:.0}% | {:.1} | {:.1} | {:.2} |",
        size[0],
        size[1],
        e.start_secs,
        1.0 / render,
        (1.0 - r.rate() / nb.rate()).max(0.0) * 100.0,
        1.0 / encode,
        1.0 / both,
        both / render.max(encode)
    )?;
    out.flush()?;
    Ok(())
}
