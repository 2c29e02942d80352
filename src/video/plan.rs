//! A render planned, then run: [`Plan::resolve`] makes every check a user would want to hear
//! of before any GPU work (FFmpeg, the output claimed, the codec, the recording and its look,
//! sizes, the frames, a chunk's manifest, the output created), and [`Plan::run`] opens the GPU
//! and draws every frame into the destination's sink.

use std::ops::Range;
use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use super::codec::{self, Encoding};
use super::ffmpeg::{self, FfmpegSink};
use super::interp::{self, Space, Timeline};
use super::sink::{self, Collect, FrameSink, PngDir, Still};
use super::{
    chunk, open_input, resolve, Destination, Job, Layers, Replay, Report, Resolved, SceneMarks,
};
use crate::bfs::Reader;
use crate::output::{self, Claim, OutputFile};
use crate::render::gpu::Gpu;
use crate::render::{Output, Renderer};

/// The output file (a video or a still) checked against the recording and the look's files
/// (never written over, not even with --force), against another forge's output being written
/// and, without --force, an existing file; locked until the end.
fn claim_output(job: &Job) -> Result<Option<output::Claim>> {
    let (Destination::Mp4 { path, .. } | Destination::Still { path, .. }) = &job.dest else {
        return Ok(None);
    };
    let look_inputs = job.look.inputs();
    let mut inputs: Vec<(&Path, &str)> = vec![(&job.input, "input")];
    inputs.extend(look_inputs.iter().map(|(p, w)| (p.as_path(), w.as_str())));
    output::claim(&[(path, "output")], &inputs, job.force).map(Some)
}

/// A still's name says what it holds: `.png` or `.exr` (x.jpg, or no extension, would hold
/// PNG bytes under a name that says otherwise). A device or pipe (`/dev/stdout`) takes any.
fn still_name(path: &Path) -> Result<()> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let device = std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir());
    if device || ["png", "exr"].iter().any(|k| ext.eq_ignore_ascii_case(k)) {
        return Ok(());
    }
    bail!(
        "-o {}: a still is written as a PNG (.png) or, with --format exr, an OpenEXR image \
         (.exr); name the output with one of those extensions",
        path.display()
    )
}

/// What asked for alpha, as a message names it: the flag, the `--look` file's `alpha`, else
/// the recording's scene (its `render` section).
fn alpha_asked(layers: &Layers) -> String {
    if layers.flags.alpha == Some(true) {
        return "--alpha".into();
    }
    match &layers.file {
        Some((path, look)) if look.alpha == Some(true) => {
            format!("alpha in --look {}", path.display())
        }
        _ => "render.alpha of the recording's scene".into(),
    }
}

/// The output is not the recording's own background picture (its scene's `render`), which
/// only the resolved look names.
fn not_the_plate(job: &Job, resolved: &resolve::Resolved) -> Result<()> {
    if let (Destination::Mp4 { path, .. } | Destination::Still { path, .. }, Some(plate)) =
        (&job.dest, &resolved.look.background_image)
    {
        if output::same_file(path, plate) {
            bail!(
                "output {} is the same file as the recording's background image \
                 (scene.render.background_image): forge never writes over an input (not even \
                 with --force); choose another output name",
                path.display()
            );
        }
    }
    Ok(())
}

/// Which output frames a render draws. Output frames are numbered over the whole recording
/// (`interp::Timeline`), so frame K is the same image in every render that shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Frames {
    timeline: Timeline,
    /// The clip the chunks of a chunked render split (`--frames`, else the whole recording).
    clip: Range<u64>,
    /// The frames shown.
    shown: Range<u64>,
    /// The first frame drawn: before `shown.start` when trails need warming up.
    start: u64,
}

impl Frames {
    /// What chunk `t` draws, as its note says it: its frames, of the clip's, and where trails
    /// warm up from.
    fn of_chunk(&self, t: crate::engine::Task) -> String {
        let (f, c) = (&self.shown, &self.clip);
        let warm = if self.start < f.start {
            format!(" (trails warmed up from frame {})", self.start)
        } else {
            String::new()
        };
        format!(
            "chunk {t}: frames {}..{} of {}..{}{warm}",
            f.start, f.end, c.start, c.end
        )
    }

    fn of(job: &Job, count: u64, trails: f32) -> Result<Frames> {
        let k = job.interpolate.max(1);
        let timeline = Timeline { k };
        let (clip, shown) = match &job.dest {
            Destination::Still { frame, .. } => {
                let frame = *frame;
                if k > 1 {
                    bail!("--interpolate: applies to videos and frame folders, not to a still");
                }
                if frame >= count {
                    bail!(
                        "--frame: {frame} is past the end ({} has frames 0..{count})",
                        job.input.display()
                    );
                }
                (frame..frame + 1, frame..frame + 1)
            }
            _ => {
                let clip = timeline.output(&job.frames.within(count, &job.input)?);
                let shown = match job.chunk {
                    Some(t) => chunk::chunk_range(clip.clone(), t)?,
                    None => clip.clone(),
                };
                (clip, shown)
            }
        };
        let start = chunk::warm_start(&shown, trails);
        Ok(Frames {
            timeline,
            clip,
            shown,
            start,
        })
    }
}

/// A render with every check made: the output claimed and created, the encoder known, the
/// look resolved, the frames chosen. [`Plan::run`] does the work.
pub struct Plan {
    job: Job,
    /// The output's lock, held until the plan is dropped.
    _claim: Option<Claim>,
    encoding: Option<Encoding>,
    reader: Reader,
    resolved: Resolved,
    frames: Frames,
    manifest: Option<chunk::Manifest>,
    out: Option<OutputFile>,
    /// Time each pass (`forge bench render --only passes`).
    time_passes: bool,
}

/// The job's recording opened and its look resolved over it; a recording with no frames is
/// refused.
fn input_and_look(job: &Job) -> Result<(Reader, Resolved)> {
    let mut reader = open_input(&job.input)?;
    if reader.frame_count() == 0 {
        bail!("{} has no frames to render", job.input.display());
    }
    let resolved = resolve::resolve(&job.look, &mut reader, &job.input)?;
    Ok((reader, resolved))
}

/// The job's output created under its temporary name (a video, a still), or its frame folder
/// prepared.
fn create_output(job: &Job) -> Result<Option<OutputFile>> {
    Ok(match &job.dest {
        Destination::Mp4 { path, .. } | Destination::Still { path, .. } => {
            let (out, file) = OutputFile::create(path, job.force, "output")?;
            drop(file);
            Some(out)
        }
        Destination::Png { dir } => {
            sink::prepare_png_dir(dir, job.force)?;
            None
        }
        Destination::Collect { .. } => None,
    })
}

impl Plan {
    /// Every check, in the order a user would want to hear of them, before any GPU work.
    pub fn resolve(job: &Job) -> Result<Plan> {
        if matches!(job.dest, Destination::Mp4 { .. }) {
            // A missing or broken FFmpeg fails here, in milliseconds, before the GPU starts.
            ffmpeg::check()?;
        }
        // The output file: never the input, never another forge's output being written, an
        // existing one only with --force; locked until the end.
        let claim = claim_output(job)?;
        if let Destination::Still { path, .. } = &job.dest {
            still_name(path)?;
        }
        // The codec against this FFmpeg (after the claim: a locked output is named first),
        // asked while the recording is opened and its look measured; its verdict still comes
        // before theirs.
        let probe = match &job.dest {
            Destination::Mp4 { encoding, .. } => Some(codec::Probe::start(encoding)),
            _ => None,
        };
        let input = input_and_look(job);
        let encoding = match (&job.dest, probe) {
            (Destination::Mp4 { path, encoding }, Some(probe)) => {
                let e = probe.resolve(encoding, job.quiet)?;
                encoding.check_output(path, e.container)?;
                Some(e)
            }
            _ => None,
        };
        let (reader, resolved) = input?;
        let count = reader.frame_count();
        not_the_plate(job, &resolved)?;
        // The encoder's size limit, before the GPU starts (the adapter's are checked as the
        // renderer is built, before any pass).
        let encoding = match encoding {
            Some(e) if resolved.settings.alpha => Some(e.with_alpha(&alpha_asked(&job.look))?),
            e => e,
        };
        let (w, h) = (resolved.settings.width, resolved.settings.height);
        even_for_video(&job.dest, w, h)?;
        if let Some(e) = &encoding {
            e.check_size(w, h)?;
        }
        let frames = Frames::of(job, count, resolved.settings.longest_trails())?;
        let sprites = ["exposure", "point_size"];
        if !job.quiet && resolved.measured.iter().any(|m| sprites.contains(m)) {
            log::info!("{}", resolved.summary());
        }
        let manifest = match (&job.dest, job.chunk, &encoding) {
            (Destination::Mp4 { .. }, Some(t), Some(enc)) => Some(chunk::Manifest::new(
                chunk::recording(&job.input, count)?,
                &frames.clip,
                &frames.shown,
                t,
                &resolved.look,
                enc,
                frames.timeline.k,
            )),
            _ => None,
        };
        if let (Some(t), false) = (job.chunk, job.quiet) {
            log::info!("{}", frames.of_chunk(t));
        }
        // Outputs are created before the (slow) GPU start-up.
        let out = create_output(job)?;
        Ok(Plan {
            job: job.clone(),
            _claim: claim,
            encoding,
            reader,
            resolved,
            frames,
            manifest,
            out,
            time_passes: false,
        })
    }

    /// Times each pass of every frame (each waited for: slower than a normal render); the
    /// report carries the times.
    pub fn time_passes(mut self) -> Plan {
        self.time_passes = true;
        self
    }

    /// The resolved look.
    pub fn look(&self) -> &Resolved {
        &self.resolved
    }

    /// Renders; the output appears under its name only when every frame is in it.
    pub fn run(mut self) -> Result<Report> {
        let t0 = Instant::now();
        let out = self.out.take();
        let writing = out.as_ref().map(|o| o.writing_path().to_path_buf());
        let result = self.draw(t0, writing.as_deref());
        match (result, out) {
            (Ok(r), Some(out)) => {
                out.commit()?;
                Ok(r)
            }
            (Ok(r), None) => Ok(r),
            (Err(e), Some(out)) => {
                out.abandon();
                Err(e)
            }
            (Err(e), None) => Err(e),
        }
    }

    /// The sink frames go to, written at `writing` (the output's temporary name).
    fn sink(&self, writing: Option<&Path>, software: bool) -> Result<Box<dyn FrameSink>> {
        let s = &self.resolved.settings;
        let (w, h) = (s.width, s.height);
        Ok(match &self.job.dest {
            Destination::Mp4 { path, .. } => Box::new(
                FfmpegSink::start_tagged(
                    writing.expect("an output file"),
                    w,
                    h,
                    self.resolved.fps,
                    self.encoding.as_ref().expect("resolved with the plan"),
                    &self.manifest.as_ref().map(|m| m.tags()).unwrap_or_default(),
                    software,
                )?
                .shown_as(path),
            ),
            Destination::Png { dir } => Box::new(PngDir::new(
                dir,
                self.frames.shown.start,
                w,
                h,
                self.job.force,
            )),
            Destination::Still { format, .. } => Box::new(Still::new(
                writing.expect("an output file").to_path_buf(),
                w,
                h,
                *format,
            )),
            Destination::Collect { frames, keep } => Box::new(Collect::new(frames.clone(), *keep)),
        })
    }

    /// What the renderer's last pass writes for this destination.
    fn output_kind(&self) -> Output {
        match &self.job.dest {
            Destination::Mp4 { .. } => {
                let e = self.encoding.as_ref().expect("resolved with the plan");
                if e.alpha {
                    Output::Rgba16
                } else {
                    Output::Yuv(e.format)
                }
            }
            Destination::Collect { .. } => Output::YUV420P,
            Destination::Png { .. } => Output::Rgba8,
            Destination::Still { format, .. } => format.output(),
        }
    }

    /// Opens the GPU and draws every frame into the sink (the output written at `writing`).
    fn draw(self, t0: Instant, writing: Option<&Path>) -> Result<Report> {
        let gpu = Gpu::new(self.job.adapter.as_deref())?;
        let adapter = crate::render::gpu::describe(&gpu.info);
        if !self.job.quiet {
            log::info!("adapter: {adapter}");
        }
        let software = gpu.info.device_type == wgpu::DeviceType::Cpu;
        let mut sink = self.sink(writing, software)?;
        let output = self.output_kind();
        let Plan {
            job,
            mut reader,
            resolved,
            frames: f,
            time_passes,
            ..
        } = self;
        let header = reader.header().clone();
        let mut world = resolve::world_of(&header);
        let space = Space {
            dim: world.dim,
            size: header.world_size,
            wrap: world.wrap,
            frame_dt: world.frame_dt,
        };
        // Output frames are `frame_dt / K` apart (motion blur spans a fraction of that).
        world.frame_dt /= f.timeline.k as f32;
        let (w, h) = (resolved.settings.width, resolved.settings.height);
        let mut renderer = Renderer::new(gpu, resolved.settings, world, output, header.agents)?;
        SceneMarks::of(&header).apply(&mut renderer);
        if time_passes {
            renderer.time_passes();
        }
        let start_secs = t0.elapsed().as_secs_f64();
        let quiet_bar = job.quiet || matches!(job.dest, Destination::Still { .. });
        let bar = crate::progress::bar(f.shown.end - f.start, quiet_bar, "frames");
        if renderer.follows() {
            let from = Replay {
                reader: &mut reader,
                input: &job.input,
                timeline: f.timeline,
                space: &space,
            };
            from.ease(&mut renderer, 0..f.start)?;
        }
        let mut source = interp::Frames::start(reader, f.timeline, space, f.start..f.shown.end)?;
        let mut done = 0u64;
        let mut deliver = |b: &[u8]| sink.frame(b);
        while let Some(frame) = source.next() {
            // SIGINT/SIGTERM: stop here; FFmpeg is stopped and the output removed on the way out.
            crate::signal::check()?;
            let frame = frame.with_context(|| format!("{}", job.input.display()))?;
            if frame.index < f.shown.start {
                renderer.warm(&frame, &mut deliver)?;
            } else {
                renderer.render(&frame, &mut deliver)?;
            }
            source.give_back(frame);
            done += 1;
            bar.set_position(done);
        }
        renderer.finish(&mut deliver)?;
        sink.finish()?;
        bar.finish_and_clear();
        Ok(Report {
            frames: f.shown.end - f.shown.start,
            width: w,
            height: h,
            fps: resolved.fps,
            secs: t0.elapsed().as_secs_f64(),
            start_secs,
            adapter,
            on_cpu: renderer.drawn_on_cpu(),
            drawn: renderer.drawn(),
            laps: renderer.laps().cloned(),
        })
    }
}

/// A video's size is two even numbers (its chroma planes are half the size); an image's and
/// a frame folder's any.
fn even_for_video(dest: &Destination, w: u32, h: u32) -> Result<()> {
    let video = matches!(dest, Destination::Mp4 { .. } | Destination::Collect { .. });
    if video && (w % 2 == 1 || h % 2 == 1) {
        bail!(
            "--size {w}x{h}: a video needs two even numbers (its chroma planes are half the \
             size; images and --png frames take any size)"
        );
    }
    Ok(())
}
