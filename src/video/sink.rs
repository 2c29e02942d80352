//! Where rendered frames go: one trait, one loop (`video::render`), several sinks. FFmpeg's
//! sink lives in `ffmpeg.rs`; the PNG folder, the still image and the in-memory collector here.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{bail, Context, Result};

use super::png::{write_png, write_png_atomic};

/// Takes the rendered frames, in order, in the pixel format the renderer was built for.
pub trait FrameSink {
    /// The next frame's bytes (yuv420p or RGBA8).
    fn frame(&mut self, bytes: &[u8]) -> Result<()>;
    /// Every frame delivered: finish writing.
    fn finish(self: Box<Self>) -> Result<()>;
}

/// One PNG per frame, `frame_NNNNNN.png` numbered by the recording's frame, each written
/// atomically.
pub struct PngDir {
    dir: PathBuf,
    next: u64,
    width: u32,
    height: u32,
    force: bool,
}

impl PngDir {
    pub fn new(dir: &Path, first: u64, width: u32, height: u32, force: bool) -> PngDir {
        PngDir {
            dir: dir.to_path_buf(),
            next: first,
            width,
            height,
            force,
        }
    }
}

impl FrameSink for PngDir {
    fn frame(&mut self, bytes: &[u8]) -> Result<()> {
        let p = self.dir.join(format!("frame_{:06}.png", self.next));
        self.next += 1;
        write_png_atomic(&p, self.width, self.height, bytes, self.force)
    }
    fn finish(self: Box<Self>) -> Result<()> {
        Ok(())
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

/// Keeps the last frame and writes it as one PNG at the end (the frames before it are the
/// trails' warm-up).
pub struct Still {
    path: PathBuf,
    width: u32,
    height: u32,
    last: Vec<u8>,
}

impl Still {
    /// `path`: where the image is written (the output's temporary name).
    pub fn new(path: PathBuf, width: u32, height: u32) -> Still {
        Still {
            path,
            width,
            height,
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
        write_png(&self.path, self.width, self.height, &self.last)
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
