//! Recording → video: frames stream from the `.bfs` file (read ahead on a thread), through the
//! GPU renderer, into one [`FrameSink`]: FFmpeg (H.264, yuv420p, BT.709), a folder of PNG
//! files, one still image, or memory (benchmarks). One loop serves them all. Nothing is held
//! whole in memory; an output appears under its final name only when complete.
//!
//! A frame that cannot be read (corrupt in the middle of the file) stops the render with an
//! error naming the frame, and no output is left. A file cut short (crash, kill) is not an
//! error: every complete frame renders, with the reader's warning printed.

pub mod chunk;
pub mod codec;
pub mod concat;
pub mod encoding;
pub mod ffmpeg;
pub mod interp;
pub mod mp4;
pub mod png;
pub mod resolve;
pub mod sink;
pub mod source;
pub mod watch;

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::bfs::{Frame, FrameRange, Reader};
use crate::output::{self, Claim, OutputFile};
use crate::render::gpu::Gpu;
use crate::render::{Output, Renderer};
use codec::Encoding;
use ffmpeg::FfmpegSink;
use interp::{Space, Timeline};
pub use resolve::{Layers, Resolved};
pub use sink::StillFormat;
use sink::{Collect, FrameSink, PngDir, Still};

/// Where frames go.
#[derive(Clone, Debug)]
pub enum Destination {
    /// A video file through FFmpeg, encoded as the flags ask (resolved against this FFmpeg
    /// once the output is claimed).
    Mp4 {
        path: PathBuf,
        encoding: codec::EncodingFlags,
    },
    /// One PNG per frame (`frame_000000.png`, …) in a folder.
    Png { dir: PathBuf },
    /// One frame as an image (PNG, 16-bit PNG or EXR); with trails, the frames before it are
    /// drawn into the trails first (until earlier light has faded below `chunk::WARM_EPS`),
    /// so the still matches the video's frame.
    Still {
        path: PathBuf,
        frame: u64,
        format: StillFormat,
    },
    /// yuv420p frames kept in memory (up to `keep` of them) or dropped: render-only timing
    /// for `forge bench render`.
    Collect {
        frames: std::sync::Arc<std::sync::Mutex<Vec<Vec<u8>>>>,
        keep: usize,
    },
}

/// One render: a recording, how it looks, which frames, where they go.
#[derive(Clone, Debug)]
pub struct Job {
    pub input: PathBuf,
    /// The look's layers above the recording's own (flags, a `--look` file).
    pub look: Layers,
    /// Recorded frames `A..B` (`--frames`); ignored by a still.
    pub frames: FrameRange,
    pub dest: Destination,
    pub force: bool,
    pub quiet: bool,
    pub adapter: Option<String>,
    /// `--interpolate K`: K output frames per recorded interval (1 = the recorded frames only).
    /// `--frames` counts recorded frames; output frames, chunks and PNG names count output
    /// frames (see `interp.rs`).
    pub interpolate: u64,
    /// `--chunk I/N`: only piece I of N of the frames (see `chunk.rs`); a video gets the
    /// chunk's manifest in its metadata. Not for a still.
    pub chunk: Option<crate::engine::Task>,
}

pub struct Report {
    pub frames: u64,
    pub width: u32,
    pub height: u32,
    pub fps: u32,
    /// Wall time of the whole render, start-up included.
    pub secs: f64,
    /// Of which start-up: the GPU opened, every pass built, the encoder started.
    pub start_secs: f64,
    pub adapter: String,
    /// Frames (warm-up ones included) drawn on the CPU rather than through the GPU passes
    /// (`FORGE_RENDERER`), and in all.
    pub on_cpu: u64,
    pub drawn: u64,
    /// Each pass's wall time, when the plan timed them ([`Plan::time_passes`]).
    pub laps: Option<crate::render::laps::Laps>,
}

impl Report {
    /// Frames per second once started (the start-up left out).
    pub fn rate(&self) -> f64 {
        self.frames as f64 / (self.secs - self.start_secs).max(1e-9)
    }
}

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

fn open_input(path: &Path) -> Result<Reader> {
    let r = crate::bfs::open_recording(path)?;
    for w in r.warnings() {
        log::warn!("{}: {w}", path.display());
    }
    let h = r.header();
    if h.world_inferred {
        log::info!(
            "note: {} stores no world size; using the inferred {} x {}",
            path.display(),
            h.world_size[0],
            h.world_size[1]
        );
    }
    Ok(r)
}

/// The look of the job's recording, resolved over the whole recording (what `--print-look`
/// prints). Nothing is written and no GPU is opened.
pub fn look_of(job: &Job) -> Result<Resolved> {
    let mut reader = open_input(&job.input)?;
    resolve::resolve(&job.look, &mut reader, &job.input)
}

/// Renders a recording into the job's destination.
pub fn render(job: &Job) -> Result<Report> {
    Plan::resolve(job)?.run()
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
        // The codec against this FFmpeg (after the claim: a locked output is named first).
        let encoding = match &job.dest {
            Destination::Mp4 { path, encoding } => {
                let e = codec::resolve(encoding, job.quiet)?;
                encoding.check_output(path, e.container)?;
                Some(e)
            }
            _ => None,
        };
        let mut reader = open_input(&job.input)?;
        let count = reader.frame_count();
        if count == 0 {
            bail!("{} has no frames to render", job.input.display());
        }
        let resolved = resolve::resolve(&job.look, &mut reader, &job.input)?;
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
            let (f, c) = (&frames.shown, &frames.clip);
            log::info!(
                "chunk {t}: frames {}..{} of {}..{}{}",
                f.start,
                f.end,
                c.start,
                c.end,
                if frames.start < f.start {
                    format!(" (trails warmed up from frame {})", frames.start)
                } else {
                    String::new()
                }
            );
        }
        // Outputs are created before the (slow) GPU start-up.
        let out = match &job.dest {
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
        };
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

/// What a recording's scene adds to the drawing of its frames, told to every renderer that
/// draws them (`forge render`, `forge still`, `forge view`): each agent's species (what
/// `--color species` colours by), each agent's sprite size (its species' `render.size`) and the
/// obstacles.
pub struct SceneMarks {
    species: Vec<u8>,
    sizes: Vec<f32>,
    obstacles: Vec<crate::render::obstacles::Shape>,
    /// The obstacles at a step, where the scene's timeline moves, adds or removes them.
    moving: Option<crate::render::obstacles::Moving>,
}

impl SceneMarks {
    /// The marks of the recording with `header` (none but the species ids from a recording
    /// without a stored scene: BoidForge's, say).
    pub fn of(header: &crate::bfs::Header) -> SceneMarks {
        let scene = crate::scene::Scene::from_stored_json(&header.scene_json).ok();
        let (sizes, obstacles) = match &scene {
            Some(s) => {
                let by_species = crate::scene::species::sizes(&s.species);
                let sizes = header
                    .species
                    .iter()
                    .map(|&i| by_species.get(i as usize).copied().unwrap_or(1.0))
                    .collect();
                (sizes, shapes_of(&s.obstacles))
            }
            None => (Vec::new(), Vec::new()),
        };
        let keys = scene
            .as_ref()
            .and_then(crate::scene::timeline::ObstacleKeys::of);
        let moving = keys.map(|k| -> crate::render::obstacles::Moving {
            std::sync::Arc::new(move |step| shapes_of(&k.at(step)))
        });
        SceneMarks {
            species: header.species.clone(),
            sizes,
            obstacles,
            moving,
        }
    }

    /// Tells `renderer` these marks (the species ids only where it colours by species).
    pub fn apply(&self, renderer: &mut Renderer) {
        if renderer.settings().color == crate::look::ColorMode::Species {
            renderer.set_species(&self.species);
        }
        renderer.set_sizes(&self.sizes);
        match &self.moving {
            Some(at) => renderer.set_moving_obstacles(&self.obstacles, at.clone()),
            None => renderer.set_obstacles(&self.obstacles),
        }
    }
}

/// The scene's obstacles as the renderer draws them (their x–y plane).
fn shapes_of(obstacles: &[crate::scene::Obstacle]) -> Vec<crate::render::obstacles::Shape> {
    use crate::render::obstacles::Shape;
    use crate::scene::Obstacle;
    let xy = |v: &[f32]| [v[0], v[1]];
    obstacles
        .iter()
        .map(|o| match o {
            Obstacle::Circle { center, radius } => Shape::Circle {
                center: xy(center),
                radius: *radius,
            },
            Obstacle::Box { min, max } => Shape::Box {
                min: xy(min),
                max: xy(max),
            },
            Obstacle::Segment { from, to, radius } => Shape::Segment {
                from: xy(from),
                to: xy(to),
                radius: *radius,
            },
        })
        .collect()
}

/// The frames a follow camera eases over before the first frame drawn.
struct Replay<'a> {
    reader: &'a mut Reader,
    input: &'a Path,
    timeline: Timeline,
    space: &'a Space,
}

impl Replay<'_> {
    /// Eases the renderer's follow camera over output frames `frames` without drawing them,
    /// as a render from the recording's first frame would have.
    fn ease(self, renderer: &mut Renderer, frames: Range<u64>) -> Result<()> {
        let k = self.timeline.k;
        // The recorded frames either side of a skipped output frame, and their blend.
        let (mut a, mut b, mut mix) = (Frame::empty(), Frame::empty(), Frame::empty());
        for o in frames {
            crate::signal::check()?;
            let (r, frac) = self.timeline.at(o);
            let input = self.input;
            let mut read = |r: u64, f: &mut Frame| {
                self.reader
                    .read_frame_into(r, f)
                    .with_context(|| format!("{}: frame {r}", input.display()))
            };
            read(r, &mut a)?;
            if frac == 0 {
                renderer.skip(&a);
            } else {
                read(r + 1, &mut b)?;
                interp::blend(&a, &b, frac as f32 / k as f32, self.space, &mut mix);
                mix.index = o;
                renderer.skip(&mix);
            }
        }
        Ok(())
    }
}
