//! Where rendered frames go: one trait, one loop (`video::render`), several sinks. FFmpeg's
//! sink lives in `ffmpeg.rs`; the PNG folder, the still image and the in-memory collector here.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{bail, Context, Result};

use super::png::{write_exr, write_png, write_png16, write_png_atomic};
use crate::render::Output;

/// Takes the rendered frames, in order, in the pixel format the renderer was built for.
pub trait FrameSink {
    /// The next frame's bytes (yuv420p or RGBA8).
    fn frame(&mut self, bytes: &[u8]) -> Result<()>;
    /// Every frame delivered: finish writing.
    fn finish(self: Box<Self>) -> Result<()>;
}

/// One PNG per frame, `frame_NNNNNN.png` numbered by the recording's frame, each written
/// atomically. Frames are compressed and written by a few threads of their own (PNG's deflate
/// is the slow part, and frames are independent), at most [`PNG_QUEUED`] a thread waiting;
/// [`FrameSink::finish`] waits for them all and reports the first frame that failed.
pub struct PngDir {
    dir: PathBuf,
    next: u64,
    jobs: Option<std::sync::mpsc::SyncSender<(u64, Vec<u8>)>>,
    workers: Vec<std::thread::JoinHandle<()>>,
    shared: Arc<PngShared>,
}

/// Frames waiting for a PNG thread, per thread.
const PNG_QUEUED: usize = 2;

/// What the PNG threads share with the render loop.
struct PngShared {
    /// The lowest frame that failed, and why.
    failed: Mutex<Option<(u64, anyhow::Error)>>,
    /// Frame buffers written out, kept for the next frames.
    spare: Mutex<Vec<Vec<u8>>>,
}

impl PngDir {
    pub fn new(dir: &Path, first: u64, width: u32, height: u32, force: bool) -> PngDir {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
        let (tx, rx) = std::sync::mpsc::sync_channel::<(u64, Vec<u8>)>(threads * PNG_QUEUED);
        let rx = Arc::new(Mutex::new(rx));
        let shared = Arc::new(PngShared {
            failed: Mutex::new(None),
            spare: Mutex::new(Vec::new()),
        });
        let workers = (0..threads)
            .map(|_| {
                let (rx, shared, dir) = (rx.clone(), shared.clone(), dir.to_path_buf());
                std::thread::spawn(move || loop {
                    let job = rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
                    let Ok((k, px)) = job else { return };
                    let p = dir.join(format!("frame_{k:06}.png"));
                    if let Err(e) = write_png_atomic(&p, width, height, &px, force) {
                        let mut f = shared.failed.lock().unwrap_or_else(|p| p.into_inner());
                        if f.as_ref().is_none_or(|(at, _)| k < *at) {
                            *f = Some((k, e));
                        }
                    }
                    shared
                        .spare
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(px);
                })
            })
            .collect();
        PngDir {
            dir: dir.to_path_buf(),
            next: first,
            jobs: Some(tx),
            workers,
            shared,
        }
    }

    /// The first failure so far, taken.
    fn failure(&self) -> Option<anyhow::Error> {
        let mut f = self.shared.failed.lock().unwrap_or_else(|p| p.into_inner());
        f.take().map(|(_, e)| e)
    }

    /// Waits for every frame handed over to be written.
    fn join(&mut self) {
        self.jobs = None;
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

impl FrameSink for PngDir {
    fn frame(&mut self, bytes: &[u8]) -> Result<()> {
        if let Some(e) = self.failure() {
            return Err(e);
        }
        let mut px = self
            .shared
            .spare
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop()
            .unwrap_or_default();
        px.clear();
        px.extend_from_slice(bytes);
        let k = self.next;
        self.next += 1;
        let sent = self.jobs.as_ref().map(|tx| tx.send((k, px)));
        if !matches!(sent, Some(Ok(()))) {
            bail!(
                "--png {}: the threads writing frames have stopped",
                self.dir.display()
            );
        }
        Ok(())
    }
    fn finish(mut self: Box<Self>) -> Result<()> {
        self.join();
        match self.failure() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl Drop for PngDir {
    /// A render that stops early still waits for the frames already handed over: each is then
    /// whole under its name, or not there at all.
    fn drop(&mut self) {
        self.join();
    }
}

/// Makes sure `--png DIR` can be written: created if missing, refused if not empty (unless
/// `force`).
pub fn prepare_png_dir(dir: &Path, force: bool) -> Result<()> {
    match std::fs::read_dir(dir) {
        Ok(mut it) => {
            if it.next().is_some() && !force {
                bail!(
                    "--png: folder {} exists and is not empty (use --force to write into it)",
                    dir.display()
                );
            }
        }
        Err(_) => std::fs::create_dir_all(dir)
            .with_context(|| format!("--png: cannot create folder {}", dir.display()))?,
    }
    let probe = dir.join(".forge-write-test");
    std::fs::write(&probe, b"")
        .with_context(|| format!("--png: cannot write in folder {}", dir.display()))?;
    let _ = std::fs::remove_file(probe);
    Ok(())
}

/// What a still is written as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StillFormat {
    /// 8-bit sRGB PNG, as the video's frames look.
    Png,
    /// 16-bit sRGB PNG: the same picture without 8-bit steps (for print and grading).
    Png16,
    /// OpenEXR, 32-bit float linear light (Rec. 709 primaries): exposure and bloom applied, no
    /// tone curve, values above 1 kept (for compositing).
    Exr,
}

impl StillFormat {
    /// The format an output's name implies: `.exr` → EXR, else PNG.
    pub fn from_name(path: &std::path::Path) -> StillFormat {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("exr") => StillFormat::Exr,
            _ => StillFormat::Png,
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            StillFormat::Png | StillFormat::Png16 => "png",
            StillFormat::Exr => "exr",
        }
    }

    /// What the renderer hands over for it.
    pub fn output(self) -> Output {
        match self {
            StillFormat::Png => Output::Rgba8,
            StillFormat::Png16 => Output::Rgba16,
            StillFormat::Exr => Output::Linear,
        }
    }
}

/// Keeps the last frame and writes it as one image at the end (the frames before it are the
/// trails' warm-up).
pub struct Still {
    path: PathBuf,
    width: u32,
    height: u32,
    format: StillFormat,
    last: Vec<u8>,
}

impl Still {
    /// `path`: where the image is written (the output's temporary name).
    pub fn new(path: PathBuf, width: u32, height: u32, format: StillFormat) -> Still {
        Still {
            path,
            width,
            height,
            format,
            last: Vec::new(),
        }
    }
}

impl FrameSink for Still {
    fn frame(&mut self, bytes: &[u8]) -> Result<()> {
        self.last.clear();
        self.last.extend_from_slice(bytes);
        Ok(())
    }
    fn finish(self: Box<Self>) -> Result<()> {
        let (p, w, h, px) = (&self.path, self.width, self.height, &self.last);
        match self.format {
            StillFormat::Png => write_png(p, w, h, px),
            StillFormat::Png16 => write_png16(p, w, h, px),
            StillFormat::Exr => write_exr(p, w, h, px),
        }
    }
}

/// Frames kept in memory (up to `keep`), for `forge bench render`'s render-only timing.
pub struct Collect {
    frames: Arc<Mutex<Vec<Vec<u8>>>>,
    keep: usize,
}

impl Collect {
    pub fn new(frames: Arc<Mutex<Vec<Vec<u8>>>>, keep: usize) -> Collect {
        Collect { frames, keep }
    }
}

impl FrameSink for Collect {
    fn frame(&mut self, bytes: &[u8]) -> Result<()> {
        let mut f = self.frames.lock().unwrap_or_else(|e| e.into_inner());
        if f.len() < self.keep {
            f.push(bytes.to_vec());
        }
        Ok(())
    }
    fn finish(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}
