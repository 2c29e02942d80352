//! Recording: frames go to a background writer thread while the next steps run, and the
//! output appears under its final name only when the recording is complete.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use anyhow::{bail, Context, Result};

use crate::bfs::{self, Writer};
use crate::sim::State;

/// Where a recording goes: written to `NAME.partial` beside the final name and renamed on
/// success, so a failed run never leaves a half-written file under the final name. (A run
/// killed outright leaves `NAME.partial`, which opens with every complete frame.) Device
/// files and pipes (`/dev/null`, `/dev/full`) are written in place.
pub struct OutputFile {
    pub path: PathBuf,
    temp: Option<PathBuf>,
}

impl OutputFile {
    /// Opens the output. An existing regular file is an error unless `force`.
    pub fn create(path: &Path, force: bool, what: &str) -> Result<(OutputFile, File)> {
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => bail!("{what} {} is a folder", path.display()),
            Ok(m) if !m.is_file() => {
                // A device or pipe: write in place, nothing to rename.
                let f = OpenOptions::new().write(true).open(path).with_context(|| format!("cannot open {what} {}", path.display()))?;
                return Ok((OutputFile { path: path.to_path_buf(), temp: None }, f));
            }
            Ok(_) if !force => bail!("{what} {} already exists (use --force to overwrite it)", path.display()),
            _ => {}
        }
        let mut name = path.file_name().map(|s| s.to_os_string()).unwrap_or_default();
        name.push(".partial");
        let temp = path.with_file_name(name);
        let f = OpenOptions::new()
            .write(true)
            .read(true)
            .create(true)
            .truncate(true)
            .open(&temp)
            .with_context(|| format!("cannot create {what} {}", temp.display()))?;
        Ok((OutputFile { path: path.to_path_buf(), temp: Some(temp) }, f))
    }

    /// The name being written now.
    pub fn writing_path(&self) -> &Path {
        self.temp.as_deref().unwrap_or(&self.path)
    }

    /// Move the finished file to its final name.
    pub fn commit(mut self) -> Result<()> {
        if let Some(t) = self.temp.take() {
            std::fs::rename(&t, &self.path).with_context(|| format!("cannot rename {} to {}", t.display(), self.path.display()))?;
        }
        Ok(())
    }

    /// Remove what was written (failed run).
    pub fn abandon(mut self) {
        if let Some(t) = self.temp.take() {
            let _ = std::fs::remove_file(t);
        }
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        // Neither committed nor abandoned (an early return or a panic): never leave junk.
        if let Some(t) = self.temp.take() {
            let _ = std::fs::remove_file(t);
        }
    }
}

struct Job {
    step: u64,
    pos: Vec<f32>,
    vel: Vec<f32>,
}

/// A writer thread fed through a bounded channel; buffers come back for reuse, so recording
/// allocates nothing after start-up.
pub struct Recorder {
    tx: Option<SyncSender<Job>>,
    free: Receiver<(Vec<f32>, Vec<f32>)>,
    handle: Option<JoinHandle<Result<Writer<File>, bfs::BfsError>>>,
    frames: u64,
}

/// Frames in flight between the step loop and the disk.
pub const DEPTH: usize = 3;

impl Recorder {
    pub fn start(mut writer: Writer<File>, dim: usize, n: usize) -> Result<Recorder> {
        let (tx, rx) = sync_channel::<Job>(DEPTH);
        let (free_tx, free) = sync_channel(DEPTH + 1);
        for _ in 0..DEPTH {
            let mut p = Vec::new();
            let mut v = Vec::new();
            p.try_reserve_exact(dim * n).map_err(|_| anyhow::anyhow!("cannot allocate frame buffers"))?;
            v.try_reserve_exact(dim * n).map_err(|_| anyhow::anyhow!("cannot allocate frame buffers"))?;
            p.resize(dim * n, 0.0);
            v.resize(dim * n, 0.0);
            free_tx.send((p, v)).expect("receiver alive");
        }
        let handle = std::thread::Builder::new()
            .name("forge-writer".into())
            .spawn(move || {
                for job in rx {
                    writer.write_frame(job.step, &job.pos, &job.vel)?;
                    // The step loop may have finished; then nobody wants the buffers back.
                    let _ = free_tx.send((job.pos, job.vel));
                }
                Ok(writer)
            })
            .context("cannot start the writer thread")?;
        Ok(Recorder { tx: Some(tx), free, handle: Some(handle), frames: 0 })
    }

    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Queue a copy of `state` as the frame of `step`. Blocks only when the disk is behind.
    pub fn record(&mut self, step: u64, state: &State) -> Result<(), bfs::BfsError> {
        let (mut pos, mut vel) = match self.free.recv() {
            Ok(b) => b,
            Err(_) => return Err(self.writer_error()),
        };
        pos.copy_from_slice(&state.pos);
        vel.copy_from_slice(&state.vel);
        if self.tx.as_ref().expect("recording").send(Job { step, pos, vel }).is_err() {
            return Err(self.writer_error());
        }
        self.frames += 1;
        Ok(())
    }

    fn writer_error(&mut self) -> bfs::BfsError {
        self.tx = None;
        match self.handle.take().map(|h| h.join()) {
            Some(Ok(Err(e))) => e,
            _ => bfs::BfsError::Io(io::Error::other("the writer thread stopped")),
        }
    }

    /// Wait for every queued frame, patch the header's counts; returns frames written.
    pub fn finish(mut self) -> Result<u64, bfs::BfsError> {
        self.tx = None;
        let writer = match self.handle.take().map(|h| h.join()) {
            Some(Ok(r)) => r?,
            _ => return Err(bfs::BfsError::Io(io::Error::other("the writer thread panicked"))),
        };
        let (frames, file) = writer.finalize()?;
        // Best effort: a device like /dev/null cannot sync.
        let _ = file.sync_data();
        Ok(frames)
    }
}
