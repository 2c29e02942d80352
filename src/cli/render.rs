//! `forge render`, `still`, `gpus`, `run` and `demo`: recordings to video and images.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::ValueEnum;

use super::simulate::record;
use super::*;
use crate::bfs::FrameRange;
use crate::look::Size;
use crate::output;
use crate::scene::{builtin, Scene};
use crate::sim::backend::Backend;
use crate::simulate::{scene_inputs, Unfinished};
use crate::units::bytes;
use crate::video::codec::{self, Container, EncodingFlags};
use crate::video::{Destination, Job, Report, StillFormat};

/// The encoding the video flags ask for (resolved against this FFmpeg by the render, once the
/// output is claimed); `None` for `--png` frames.
fn encoding(video: &VideoArgs, look: &LookArgs) -> Result<Option<EncodingFlags>> {
    let flags = EncodingFlags {
        codec: video.codec,
        encoder: video.encoder.clone(),
        crf: video.crf,
        preset: video.preset.clone(),
        for_alpha: false,
    };
    if video.png.is_some() {
        for (given, flag) in [
            (flags.codec.is_some(), "--codec"),
            (flags.encoder.is_some(), "--encoder"),
            (flags.crf.is_some(), "--crf"),
            (flags.preset.is_some(), "--preset"),
        ] {
            if given {
                bail!("{flag}: applies to a video, not to --png frames");
            }
        }
        return Ok(None);
    }
    Ok(Some(flags.for_alpha(look.look.alpha == Some(true))))
}

/// The video's name: as given, else `default` with the container's extension (as far as the
/// flags say: ProRes is .mov).
fn video_name(given: Option<&Path>, enc: Option<&EncodingFlags>, default: PathBuf) -> PathBuf {
    let container = enc.map(|e| e.container()).unwrap_or(Container::Mp4);
    match given {
        Some(p) => p.to_path_buf(),
        None => default.with_extension(container.name()),
    }
}

fn video_job(
    input: PathBuf,
    output: PathBuf,
    frames: Option<FrameRange>,
    video: &VideoArgs,
    encoding: Option<EncodingFlags>,
    look: &LookArgs,
) -> Result<Job> {
    let dest = match (&video.png, encoding) {
        (Some(dir), _) => Destination::Png { dir: dir.clone() },
        (None, Some(encoding)) => Destination::Mp4 {
            path: output,
            encoding,
        },
        (None, None) => bail!("internal: a video without an encoding"),
    };
    Ok(Job {
        input,
        look: look.layers()?,
        frames: frames.unwrap_or(FrameRange::ALL),
        dest,
        force: video.force,
        quiet: video.quiet,
        adapter: look.adapter.clone(),
        interpolate: video.interpolate.unwrap_or(1),
        chunk: None,
    })
}

fn report_render(r: &Report, out: &Path, quiet: bool) {
    if quiet {
        return;
    }
    let size = std::fs::metadata(out).map(|m| m.len()).unwrap_or(0);
    // Which way drew them (FORGE_RENDERER): the CPU, the GPU passes, or some of each.
    let way = match (r.on_cpu, r.drawn) {
        (0, _) => "",
        (c, d) if c == d => ", drawn on the CPU",
        _ => ", partly drawn on the CPU",
    };
    eprintln!(
        "{} frames at {}x{} in {:.2} s ({:.1} frames/s{way}) -> {}{}",
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

/// `--print-look`: the job's resolved look on standard output, nothing rendered.
fn print_look(job: &Job) -> Result<ExitCode> {
    let r = crate::video::look_of(job)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", r.look.to_json())?;
    Ok(ExitCode::SUCCESS)
}

pub fn render_cmd(a: RenderArgs) -> Result<ExitCode> {
    let enc = encoding(&a.video, &a.look)?;
    let output = video_name(a.output.as_deref(), enc.as_ref(), a.file.clone());
    let mut job = video_job(
        a.file.clone(),
        output.clone(),
        a.frames,
        &a.video,
        enc,
        &a.look,
    )?;
    if let Some(spec) = a.chunk {
        let task = spec.resolve("--chunk")?;
        if !a.video.quiet && matches!(spec, crate::engine::TaskSpec::Auto { .. }) {
            eprintln!("--chunk auto: chunk {task} (from the environment)");
        }
        job.chunk = Some(task);
    }
    if a.print_look {
        return print_look(&job);
    }
    let r = crate::video::render(&job)?;
    let shown = a.video.png.clone().unwrap_or(output);
    report_render(&r, &shown, a.video.quiet);
    Ok(ExitCode::SUCCESS)
}

pub fn still_cmd(a: StillArgs) -> Result<ExitCode> {
    let output = a.output.clone().unwrap_or_default();
    let named = StillFormat::from_name(&output);
    let format = a.format.unwrap_or(named);
    if named.extension() != format.extension() && !a.print_look {
        bail!(
            "-o {}: --format {} writes a .{} file; name the output with that extension",
            output.display(),
            format
                .to_possible_value()
                .map(|v| v.get_name().to_string())
                .unwrap_or_default(),
            format.extension()
        );
    }
    let job = Job {
        input: a.file.clone(),
        look: a.look.layers()?,
        frames: FrameRange::ALL,
        dest: Destination::Still {
            path: output.clone(),
            frame: a.frame,
            format,
        },
        force: a.force,
        quiet: a.quiet,
        adapter: a.look.adapter.clone(),
        interpolate: 1,
        chunk: None,
    };
    if a.print_look {
        return print_look(&job);
    }
    let r = crate::video::render(&job)?;
    report_render(&r, &output, a.quiet);
    Ok(ExitCode::SUCCESS)
}

pub fn gpus_cmd() -> Result<ExitCode> {
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

pub fn run_cmd(a: RunArgs) -> Result<ExitCode> {
    let scene = Scene::load(&a.scene)?;
    let enc = encoding(&a.video, &a.look)?;
    let container = enc
        .as_ref()
        .map(|e| e.container())
        .unwrap_or(Container::Mp4);
    let output = match &a.output {
        Some(p) => p.clone(),
        None => output::default_name(None, &scene.name, container.name())?,
    };
    // Every output (the video, the kept recording) against the others, the scene's files and
    // existing files, and locked, before the simulation starts. --force covers them all.
    let mut outputs: Vec<(&Path, &str)> = Vec::new();
    if a.video.png.is_none() {
        outputs.push((&output, "output"));
    }
    if let Some(b) = &a.bfs {
        outputs.push((b, "--bfs"));
    }
    // The look's files too: the --look file and every background picture.
    let mut inputs: Vec<(PathBuf, String)> = scene_inputs(Some(&a.scene), &scene)
        .into_iter()
        .map(|(p, w)| (p, w.to_string()))
        .collect();
    let layers = a.look.layers()?;
    inputs.extend(layers.inputs());
    if let Some(p) = scene
        .render
        .as_ref()
        .and_then(|r| r.background_image.as_ref())
    {
        inputs.push((p.clone(), "scene.render.background_image".into()));
    }
    let inputs: Vec<(&Path, &str)> = inputs
        .iter()
        .map(|(p, w)| (p.as_path(), w.as_str()))
        .collect();
    let _claim = output::claim(&outputs, &inputs, a.video.force)?;
    // The codec against this FFmpeg, and the video's name against its container, before the
    // simulation runs (the render resolves it again).
    if let Some(flags) = &enc {
        let e = codec::resolve(flags, true)?;
        flags.check_output(&output, e.container)?;
        // The size against the encoder too (the flag's, else the look file's, else the
        // scene's; the default fits every encoder).
        let size = layers
            .flags
            .size
            .or(layers.file.as_ref().and_then(|(_, l)| l.size))
            .or(scene.render.as_ref().and_then(|r| r.size));
        if let Some(Size([w, h])) = size {
            e.check_size(w, h)?;
        }
    }
    let tmp;
    let bfs_path = match &a.bfs {
        Some(p) => p.clone(),
        None => {
            tmp = tempfile::Builder::new()
                .prefix("forge-run-")
                .tempdir()
                .context("cannot create a temporary folder for the recording")?;
            output::default_name(Some(tmp.path()), &scene.name, "bfs")?
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
    // A recording the user asked to keep keeps its complete frames if stopped early; the
    // temporary one goes with its folder.
    let unfinished = match a.bfs {
        Some(_) => Unfinished::Keep,
        None => Unfinished::Remove,
    };
    let code = record(scene, &bfs_path, &sim, unfinished)?;
    if code != ExitCode::SUCCESS {
        return Ok(code);
    }
    let job = video_job(bfs_path, output.clone(), None, &a.video, enc, &a.look)?;
    let r = crate::video::render(&job)?;
    let shown = a.video.png.clone().unwrap_or(output);
    report_render(&r, &shown, a.video.quiet);
    Ok(ExitCode::SUCCESS)
}

pub fn demo_cmd(a: DemoArgs) -> Result<ExitCode> {
    let look = LookArgs {
        hd: true,
        ..Default::default()
    };
    run_cmd(RunArgs {
        scene: builtin::DEFAULT.to_string(),
        output: Some(a.output),
        bfs: None,
        overrides: Overrides {
            steps: Some(DEMO_STEPS),
            agents: Some(DEMO_AGENTS),
            seed: None,
            every: None,
        },
        video: VideoArgs {
            codec: None,
            encoder: None,
            crf: None,
            preset: None,
            interpolate: None,
            png: None,
            force: a.force,
            quiet: a.quiet,
        },
        look,
    })
}
