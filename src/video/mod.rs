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
pub mod exposure;
pub mod ffmpeg;
pub mod interp;
pub mod mp4;
pub mod png;
pub mod ranges;
pub mod sink;
pub mod source;
pub mod watch;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::bfs::{Frame, Reader};
use crate::look::{resolve_look, world_of, LookFlags, Resolved};
use crate::output::{self, OutputFile};
use crate::render::camera::CameraMode;
use crate::render::gpu::Gpu;
use crate::render::{ColorMode, Output, Renderer};
use ffmpeg::FfmpegSink;
use ranges::{density_range_3d, speed_range};
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
    /// One frame as an image (PNG, 16-bit PNG or EXR); with trails, the frames before it are drawn into the trails first
    /// (until earlier light has faded below `chunk::WARM_EPS`), so the still matches the
    /// video's frame.
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
    pub look: LookFlags,
    /// Frames `A..B` of the recording (`--frames`); ignored by a still.
    pub frames: Option<(Option<u64>, Option<u64>)>,
    pub dest: Destination,
    pub force: bool,
    pub quiet: bool,
    pub adapter: Option<String>,
    /// `--interpolate K`: K output frames per recorded interval (1 = the recorded frames only).
    /// `--frames` still counts recorded frames; output frames, chunks and PNG names count
    /// output frames (see `interp.rs`).
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
}

impl Report {
    /// Frames per second once started (the start-up left out).
    pub fn rate(&self) -> f64 {
        self.frames as f64 / (self.secs - self.start_secs).max(1e-9)
    }
}

fn frames_range(
    spec: Option<(Option<u64>, Option<u64>)>,
    count: u64,
    file: &Path,
) -> Result<std::ops::Range<u64>> {
    let (a, b) = spec.unwrap_or((None, None));
    let a = a.unwrap_or(0);
    let b = b.unwrap_or(count);
    if a >= b {
        bail!("--frames: {a}..{b} is empty");
    }
    if a >= count {
        bail!(
            "--frames: starts at frame {a} but {} has {count} frames (0..{count})",
            file.display()
        );
    }
    if b > count {
        bail!(
            "--frames: ends at frame {b} but {} has {count} frames (0..{count})",
            file.display()
        );
    }
    Ok(a..b)
}

fn open_input(path: &Path) -> Result<Reader> {
    let r = Reader::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    for w in r.warnings() {
        eprintln!("warning: {}: {w}", path.display());
    }
    let h = r.header();
    if h.world_inferred {
        eprintln!(
            "note: {} stores no world size; using the inferred {} x {}",
            path.display(),
            h.world_size[0],
            h.world_size[1]
        );
    }
    Ok(r)
}

/// Resolves the look for `r`, filling the colour range from the file where needed (measured
/// over `clip`); an orbit turns once over `clip`.
fn full_look(
    flags: &LookFlags,
    r: &mut Reader,
    clip: std::ops::Range<u64>,
    path: &Path,
) -> Result<Resolved> {
    let mut resolved = resolve_look(flags, r.header())?;
    if resolved.auto_exposure || resolved.auto_point_size {
        let l = &resolved.look;
        let m = exposure::measure(
            r,
            clip.clone(),
            &world_of(r.header()),
            l.width,
            l.height,
            l.fit,
            (!resolved.auto_point_size).then_some(l.point_size),
            l.trails,
            resolved.fps,
        )
        .with_context(|| format!("measuring the look of {}", path.display()))?;
        if resolved.auto_exposure {
            resolved.look.exposure = m.exposure;
        }
        resolved.look.point_size = m.point_size;
    }
    let look = &mut resolved.look;
    if let Some(v) = look.view3.as_mut() {
        v.clip = (clip.start, clip.end - clip.start);
        if v.mode == CameraMode::Top {
            eprintln!(
                "note: {} is 3D: --camera top renders an orthographic projection onto x, y",
                path.display()
            );
        }
    }
    let measuring = || format!("measuring the colour range of {}", path.display());
    if look.color == ColorMode::Speed && look.range.is_none() {
        look.range = Some(speed_range(r, clip).with_context(measuring)?);
    } else if look.color == ColorMode::Density && look.range.is_none() && r.header().dim == 3 {
        look.range = Some(density_range_3d(r, clip).with_context(measuring)?);
    }
    Ok(resolved)
}

/// Renders a recording into the job's destination.
pub fn render(job: &Job) -> Result<Report> {
    if matches!(job.dest, Destination::Mp4 { .. }) {
        // A missing or broken FFmpeg fails here, in milliseconds, before the GPU starts.
        ffmpeg::check()?;
    }
    // The output file: never the input, never another forge's output being written, an
    // existing one only with --force; locked until the end.
    let _claim = match &job.dest {
        Destination::Mp4 { path, .. } | Destination::Still { path, .. } => Some(output::claim(
            &[(path, "output")],
            &[(&job.input, "input")],
            job.force,
        )?),
        _ => None,
    };
    // The codec against this FFmpeg (after the claim: a locked output is named first).
    let encoding = match &job.dest {
        Destination::Mp4 { path, encoding } => {
            let e = codec::resolve(encoding, job.quiet)?;
            codec::check_extension(path, e.container, "-o")?;
            Some(e)
        }
        _ => None,
    };
    let mut reader = open_input(&job.input)?;
    let count = reader.frame_count();
    if count == 0 {
        bail!("{} has no frames to render", job.input.display());
    }
    let k = job.interpolate.max(1);
    if k > 1 && matches!(job.dest, Destination::Still { .. }) {
        bail!("--interpolate: applies to videos and frame folders, not to a still");
    }
    // The frames rendered (output frames), the clip they belong to (output frames), and the
    // recorded frames the look (colour range, exposure) is measured over.
    let (frames, clip, recorded) = match &job.dest {
        Destination::Still { frame, .. } => {
            let frame = *frame;
            if frame >= count {
                bail!(
                    "--frame: {frame} is past the end ({} has frames 0..{count})",
                    job.input.display()
                );
            }
            (frame..frame + 1, 0..count, 0..count)
        }
        _ => {
            let recorded = frames_range(job.frames, count, &job.input)?;
            let clip = interp::Timeline {
                first: recorded.start,
                k,
            }
            .output(&recorded);
            match job.chunk {
                Some(t) => (chunk::chunk_range(clip.clone(), t)?, clip, recorded),
                None => (clip.clone(), clip, recorded),
            }
        }
    };
    let timeline = interp::Timeline {
        first: recorded.start,
        k,
    };
    let recording = match (&job.dest, job.chunk) {
        (Destination::Mp4 { .. }, Some(_)) => Some(chunk::recording(&job.input, count)?),
        _ => None,
    };
    let mut resolved = full_look(&job.look, &mut reader, recorded.clone(), &job.input)?;
    if let Some(v) = resolved.look.view3.as_mut() {
        // An orbit turns once over the output frames.
        v.clip = (clip.start, clip.end - clip.start);
    }
    if !job.quiet && (resolved.auto_exposure || resolved.auto_point_size) {
        eprintln!(
            "look: exposure {:.2}{}, point size {:.2}{}, trails {:.2} (set --exposure, --point-size, --trails to change them)",
            resolved.look.exposure,
            if resolved.auto_exposure { " (measured)" } else { "" },
            resolved.look.point_size,
            if resolved.auto_point_size { " (measured)" } else { "" },
            resolved.look.trails,
        );
    }
    let Resolved { look, fps, .. } = resolved;
    // The encoder's size limit, before the GPU starts (the adapter's are checked as the
    // renderer is built, before any pass).
    if let Some(e) = &encoding {
        e.check_size(look.width, look.height)?;
    }
    // Trails need the frames before the first one shown: a chunk or a still draws them into
    // the trails only (`Renderer::warm`), as a whole render would have, and moves the frame
    // counter and a follow camera over the frames before those (`Renderer::skip`).
    let partial = job.chunk.is_some() || matches!(job.dest, Destination::Still { .. });
    let start = if partial {
        chunk::warm_start(&frames, &clip, look.trails)
    } else {
        frames.start
    };
    if let (Some(t), false) = (job.chunk, job.quiet) {
        eprintln!(
            "chunk {t}: frames {}..{} of {}..{}{}",
            frames.start,
            frames.end,
            clip.start,
            clip.end,
            if start < frames.start {
                format!(" (trails warmed up from frame {start})")
            } else {
                String::new()
            }
        );
    }
    // A chunk's manifest (its settings fingerprint is taken from the resolved look).
    let manifest = match (&job.dest, job.chunk, recording) {
        (Destination::Mp4 { .. }, Some(t), Some(rec)) => Some(chunk::Manifest::new(
            rec,
            &clip,
            &frames,
            t,
            &look,
            fps,
            encoding.as_ref().expect("resolved above"),
            k,
        )),
        _ => None,
    };
    let mut world = world_of(reader.header());
    let space = interp::Space {
        dim: world.dim,
        size: reader.header().world_size,
        wrap: world.wrap,
        frame_dt: world.frame_dt,
    };
    // Motion blur spans a fraction of the output frame's interval.
    world.frame_dt /= k as f32;
    let capacity = reader.header().agents;
    let (w, h) = (look.width, look.height);

    // Outputs are checked before the (slow) GPU start-up.
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
    let t0 = Instant::now();
    let mut start_secs = 0.0;
    let result = (|| -> Result<(u64, String)> {
        let gpu = Gpu::new(job.adapter.as_deref())?;
        let adapter = crate::render::gpu::describe(&gpu.info);
        if !job.quiet {
            eprintln!("adapter: {adapter}");
        }
        let writing = out.as_ref().map(|o| o.writing_path().to_path_buf());
        let mut sink: Box<dyn FrameSink> = match &job.dest {
            Destination::Mp4 { path, .. } => Box::new(
                FfmpegSink::start_tagged(
                    writing.as_deref().expect("an output file"),
                    w,
                    h,
                    fps,
                    encoding.as_ref().expect("resolved above"),
                    &manifest.as_ref().map(|m| m.tags()).unwrap_or_default(),
                    gpu.info.device_type == wgpu::DeviceType::Cpu,
                )?
                .shown_as(path),
            ),
            Destination::Png { dir } => Box::new(PngDir::new(dir, frames.start, w, h, job.force)),
            Destination::Still { format, .. } => {
                Box::new(Still::new(writing.expect("an output file"), w, h, *format))
            }
            Destination::Collect { frames, keep } => Box::new(Collect::new(frames.clone(), *keep)),
        };
        let output = match &job.dest {
            Destination::Mp4 { .. } => {
                Output::Yuv(encoding.as_ref().expect("resolved above").format)
            }
            Destination::Collect { .. } => Output::YUV420P,
            Destination::Png { .. } => Output::Rgba8,
            Destination::Still { format, .. } => format.output(),
        };
        let mut renderer = Renderer::new(gpu, look, world, output, capacity)?;
        start_secs = t0.elapsed().as_secs_f64();
        let shown = frames.end - start;
        let quiet_bar = job.quiet || matches!(job.dest, Destination::Still { .. });
        let bar = crate::progress::bar(shown, quiet_bar, "frames");
        if partial {
            let follows = renderer.follows();
            // The recorded frames either side of a skipped output frame, and their blend.
            let (mut a, mut b, mut mix) = (Frame::empty(), Frame::empty(), Frame::empty());
            for o in clip.start..start {
                if !follows {
                    renderer.skip(None);
                    continue;
                }
                let (r, frac) = timeline.at(o);
                let mut read = |r: u64, f: &mut Frame| {
                    reader
                        .read_frame_into(r, f)
                        .with_context(|| format!("{}: frame {r}", job.input.display()))
                };
                read(r, &mut a)?;
                if frac == 0 {
                    renderer.skip(Some(&a));
                } else {
                    read(r + 1, &mut b)?;
                    interp::blend(&a, &b, frac as f32 / k as f32, &space, &mut mix);
                    renderer.skip(Some(&mix));
                }
            }
        }
        let mut source = interp::Frames::start(reader, timeline, space, start..frames.end)?;
        let mut done = 0u64;
        let mut deliver = |b: &[u8]| sink.frame(b);
        while let Some(f) = source.next() {
            // SIGINT/SIGTERM: stop here; FFmpeg is stopped and the output removed on the way out.
            crate::signal::check()?;
            let f = f.with_context(|| format!("{}", job.input.display()))?;
            if f.index < frames.start {
                renderer.warm(&f, &mut deliver)?;
            } else {
                renderer.render(&f, &mut deliver)?;
            }
            source.give_back(f);
            done += 1;
            bar.set_position(done);
        }
        renderer.finish(&mut deliver)?;
        sink.finish()?;
        bar.finish_and_clear();
        Ok((frames.end - frames.start, adapter))
    })();
    let (shown, adapter) = match (result, out) {
        (Ok(r), Some(out)) => {
            out.commit()?;
            r
        }
        (Ok(r), None) => r,
        (Err(e), Some(out)) => {
            out.abandon();
            return Err(e);
        }
        (Err(e), None) => return Err(e),
    };
    Ok(Report {
        frames: shown,
        width: w,
        height: h,
        fps,
        secs: t0.elapsed().as_secs_f64(),
        start_secs,
        adapter,
    })
}
