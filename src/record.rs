//! Recording: frames go to a background writer thread while the next steps run, and reach the
//! file within milliseconds of being written ([`FLUSH_IDLE`], [`FLUSH_EVERY`]: a run killed
//! outright keeps all but its last moments); the output appears under its final name only
//! when the recording is complete.

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::bfs::{self, DirectFile, Writer};
use crate::sim::{filled, FrameOut, PendingFrame};

/// A frame for the writer thread, in agent order.
enum Job {
    /// Filled by the solver into the recorder's own buffers (the CPU backend).
    Filled { step: u64, buf: Buffers },
    /// On its way from the device in the solver's buffers (the CUDA backend): the writer
    /// waits for it, writes it, and drops it, which gives the buffers back.
    Pending(Box<dyn PendingFrame>),
}

struct Buffers {
    pos: Vec<f32>,
    vel: Vec<f32>,
}

/// A blocking queue of at most `DEPTH` items with room reserved up front: unlike std's
/// channels it never allocates after creation (they allocate on first blocking waits).
struct Queue<T> {
    items: Mutex<(VecDeque<T>, bool)>,
    ready: Condvar,
}

impl<T> Queue<T> {
    fn new() -> Arc<Queue<T>> {
        Arc::new(Queue {
            items: Mutex::new((VecDeque::with_capacity(DEPTH + 1), false)),
            ready: Condvar::new(),
        })
    }
    fn push(&self, x: T) {
        let mut g = self.items.lock().unwrap_or_else(|e| e.into_inner());
        g.0.push_back(x);
        self.ready.notify_one();
    }
    /// Push unless closed; false (and `x` dropped) once closed.
    fn push_open(&self, x: T) -> bool {
        let mut g = self.items.lock().unwrap_or_else(|e| e.into_inner());
        if g.1 {
            drop(g);
            drop(x);
            return false;
        }
        g.0.push_back(x);
        self.ready.notify_one();
        true
    }
    /// The next item, or None once closed and empty.
    fn pop(&self) -> Option<T> {
        let mut g = self.items.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(x) = g.0.pop_front() {
                return Some(x);
            }
            if g.1 {
                return None;
            }
            g = self.ready.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }
    /// The next item if one comes within `wait`: `Err(true)` once closed and empty,
    /// `Err(false)` if none came.
    fn pop_within(&self, wait: Duration) -> Result<T, bool> {
        let until = Instant::now() + wait;
        let mut g = self.items.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(x) = g.0.pop_front() {
                return Ok(x);
            }
            if g.1 {
                return Err(true);
            }
            let now = Instant::now();
            if now >= until {
                return Err(false);
            }
            g = self
                .ready
                .wait_timeout(g, until - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
    fn close(&self) {
        self.items.lock().unwrap_or_else(|e| e.into_inner()).1 = true;
        self.ready.notify_all();
    }
}

/// A written frame goes to the file once no other follows within this time...
const FLUSH_IDLE: Duration = Duration::from_millis(5);
/// ...and at the latest this long after the previous flush, however fast frames come. A flush
/// per frame costs a quarter on tiny frames recorded every step (vicsek, 50 agents, 100k
/// frames, one thread: 1.40 s instead of 1.12 s, best of 10 on two shared cores); these two
/// rules cost nothing measurable (1.14 s), and a run killed outright loses at most the frames
/// of its last 50 ms (of slow frames, none older than 5 ms).
const FLUSH_EVERY: Duration = Duration::from_millis(50);

/// Closes a queue when dropped (the writer thread's way of saying it stopped).
struct CloseOnDrop<T>(Arc<Queue<T>>);
impl<T> Drop for CloseOnDrop<T> {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// Closes a queue and drops what it still holds when dropped: a writer that stops (an error)
/// gives back every pending frame's buffers, so a solver waiting for them never hangs.
struct DrainOnDrop<T>(Arc<Queue<T>>);
impl<T> Drop for DrainOnDrop<T> {
    fn drop(&mut self) {
        let left = {
            let mut g = self.0.items.lock().unwrap_or_else(|e| e.into_inner());
            g.1 = true;
            std::mem::take(&mut g.0)
        };
        self.0.ready.notify_all();
        drop(left);
    }
}

/// A writer thread fed through a bounded queue; buffers come back for reuse, so recording
/// allocates nothing after start-up. The thread checksums each frame and writes it while the
/// solver runs the next steps; a frame of 8 MB or more (half a million agents in 2D) is
/// checksummed in pieces on threads started for it (`bfs::frame_crc`), whose start allocates
/// and whose end frees.
pub struct Recorder {
    jobs: Arc<Queue<Job>>,
    free: Arc<Queue<Buffers>>,
    handle: Option<JoinHandle<Result<Writer<DirectFile>, bfs::BfsError>>>,
    frames: u64,
}

/// Frames in flight between the step loop and the disk.
pub const DEPTH: usize = 3;
// The solver's memory check (`sim::init::check_memory`) budgets for this many.
const _: () = assert!(DEPTH <= crate::sim::init::SINK_FRAMES);

impl Recorder {
    /// `writer`: the recording's file ([`DirectFile`]: direct I/O where the file system takes
    /// it, so that writing costs the solver's cores next to nothing).
    pub fn start(mut writer: Writer<DirectFile>, dim: usize, n: usize) -> Result<Recorder> {
        let jobs = Queue::<Job>::new();
        let free = Queue::<Buffers>::new();
        let what = || format!("frame buffers for {n} agents");
        let falloc = |len: usize| filled(len, 0f32, what).map_err(anyhow::Error::from);
        for _ in 0..DEPTH {
            let b = Buffers {
                pos: falloc(dim * n)?,
                vel: falloc(dim * n)?,
            };
            free.push(b);
        }
        let handle = std::thread::Builder::new()
            .name("forge-writer".into())
            .spawn({
                let (jobs, free) = (jobs.clone(), free.clone());
                move || {
                    // Stopped (finished or failed): no more jobs are taken, and every frame
                    // still queued is dropped, which gives a solver's buffers back.
                    let _closer = CloseOnDrop(free.clone());
                    let _drain = DrainOnDrop(jobs.clone());
                    // Frames written since the last flush, and when that was.
                    let (mut unflushed, mut flushed) = (false, Instant::now());
                    loop {
                        let job = if unflushed {
                            match jobs.pop_within(FLUSH_IDLE) {
                                Ok(job) => job,
                                Err(true) => break,
                                Err(false) => {
                                    writer.flush()?;
                                    (unflushed, flushed) = (false, Instant::now());
                                    continue;
                                }
                            }
                        } else {
                            match jobs.pop() {
                                Some(job) => job,
                                None => break,
                            }
                        };
                        match job {
                            Job::Filled { step, buf } => {
                                writer.write_frame(step, &buf.pos, &buf.vel)?;
                                free.push(buf);
                            }
                            Job::Pending(mut f) => {
                                let step = f.step();
                                match f.wait() {
                                    Some((pos, vel)) => writer.write_frame(step, pos, vel)?,
                                    // Past a divergence (or a failed copy): not recorded.
                                    None => continue,
                                }
                            }
                        }
                        unflushed = true;
                        if flushed.elapsed() >= FLUSH_EVERY {
                            writer.flush()?;
                            (unflushed, flushed) = (false, Instant::now());
                        }
                    }
                    Ok(writer)
                }
            })
            .context("cannot start the writer thread")?;
        Ok(Recorder {
            jobs,
            free,
            handle: Some(handle),
            frames: 0,
        })
    }

    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Queue the frame of `step`, written by `fill` straight into the recorder's buffers in
    /// agent order (positions, velocities): the CPU solver un-permutes with all its threads
    /// instead of a copy here and a serial un-permute on the writer thread.
    pub fn record_with(
        &mut self,
        step: u64,
        fill: impl FnOnce(&mut [f32], &mut [f32]),
    ) -> Result<(), bfs::BfsError> {
        // Free buffers, waiting for the writer if it is behind.
        let Some(mut buf) = self.free.pop() else {
            return Err(self.writer_error());
        };
        fill(&mut buf.pos, &mut buf.vel);
        self.jobs.push(Job::Filled { step, buf });
        self.frames += 1;
        Ok(())
    }

    /// Queue a frame still on its way from the device: the writer thread waits for it.
    pub fn record_pending(&mut self, frame: Box<dyn PendingFrame>) -> Result<(), bfs::BfsError> {
        if !self.jobs.push_open(Job::Pending(frame)) {
            return Err(self.writer_error());
        }
        self.frames += 1;
        Ok(())
    }

    fn writer_error(&mut self) -> bfs::BfsError {
        self.jobs.close();
        match self.handle.take().map(|h| h.join()) {
            Some(Ok(Err(e))) => e,
            _ => bfs::BfsError::Io(io::Error::other("the writer thread stopped")),
        }
    }

    /// Wait for every queued frame, patch the header's counts; returns frames written.
    pub fn finish(mut self) -> Result<u64, bfs::BfsError> {
        self.jobs.close();
        let writer = match self.handle.take().map(|h| h.join()) {
            Some(Ok(r)) => r?,
            _ => {
                return Err(bfs::BfsError::Io(io::Error::other(
                    "the writer thread panicked",
                )))
            }
        };
        let (frames, mut file) = writer.finalize()?;
        // Best effort: a device like /dev/null cannot sync.
        let _ = file.sync_data();
        Ok(frames)
    }
}

/// The solver's frames go to the writer thread.
impl FrameOut for Recorder {
    type Error = bfs::BfsError;

    fn frame_with<F>(&mut self, step: u64, fill: F) -> Result<(), bfs::BfsError>
    where
        F: FnOnce(&mut [f32], &mut [f32]),
    {
        self.record_with(step, fill)
    }

    fn frame_pending(&mut self, frame: Box<dyn PendingFrame>) -> Result<(), bfs::BfsError> {
        self.record_pending(frame)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bfs::{Header, Reader};
    use std::fs::File;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A frame "from a device": ready at once, or past a divergence (`None`); counts drops.
    struct Fake {
        step: u64,
        pos: Vec<f32>,
        vel: Vec<f32>,
        diverged: bool,
        dropped: Arc<AtomicUsize>,
    }

    impl PendingFrame for Fake {
        fn step(&self) -> u64 {
            self.step
        }
        fn wait(&mut self) -> Option<(&[f32], &[f32])> {
            (!self.diverged).then_some((&self.pos, &self.vel))
        }
    }

    impl Drop for Fake {
        fn drop(&mut self) {
            self.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn header(n: u32) -> Header {
        let mut h = Header::for_scene(&crate::scene::Scene::load("cuplan").unwrap());
        h.agents = n;
        h
    }

    fn fake(step: u64, n: usize, diverged: bool, dropped: &Arc<AtomicUsize>) -> Box<Fake> {
        Box::new(Fake {
            step,
            pos: vec![step as f32; 2 * n],
            vel: vec![-(step as f32); 2 * n],
            diverged,
            dropped: dropped.clone(),
        })
    }

    #[test]
    fn pending_frames_are_written_in_order_and_given_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.bfs");
        let n = 5;
        let w = Writer::new(
            DirectFile::new(File::create(&path).unwrap()),
            &header(n as u32),
        )
        .unwrap();
        let mut rec = Recorder::start(w, 2, n).unwrap();
        let dropped = Arc::new(AtomicUsize::new(0));
        // Frames from the CPU path and the device path interleave; one past a divergence is
        // not written.
        rec.record_with(0, |p, v| {
            p.fill(0.5);
            v.fill(1.5);
        })
        .unwrap();
        for step in 1..=4 {
            rec.record_pending(fake(step, n, step == 4, &dropped))
                .unwrap();
        }
        assert_eq!(rec.finish().unwrap(), 4);
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            4,
            "every pending frame given back"
        );
        let mut r = Reader::open(&path).unwrap();
        assert_eq!(r.frame_count(), 4);
        let f = r.read_frame(0).unwrap();
        assert_eq!((f.step, f.pos[0], f.vel[0]), (0, 0.5, 1.5));
        for k in 1..4u64 {
            let f = r.read_frame(k).unwrap();
            assert_eq!(f.step, k);
            assert!(f.pos.iter().all(|&x| x == k as f32));
            assert!(f.vel.iter().all(|&x| x == -(k as f32)));
        }
    }

    #[test]
    fn a_failed_writer_gives_every_pending_frame_back() {
        // A pipe whose reader is gone once the header is through: every frame's write fails
        // (EPIPE), so the writer thread stops at its first frame.
        use std::os::fd::FromRawFd;
        let mut fds = [0i32; 2];
        // SAFETY: pipe fills the two descriptors it is given.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: both descriptors were just created and are owned here alone.
        let (read, write) = unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) };
        let n = 100_000;
        let w = Writer::new(DirectFile::new(write), &header(n as u32)).unwrap();
        drop(read);
        let mut rec = Recorder::start(w, 2, n).unwrap();
        let dropped = Arc::new(AtomicUsize::new(0));
        let mut sent = 0;
        let mut refused = false;
        // Until the writer thread has met the error (within seconds at most).
        for step in 0..5000 {
            sent += 1;
            if rec.record_pending(fake(step, n, false, &dropped)).is_err() {
                refused = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(refused, "a writer that failed refuses further frames");
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            sent,
            "no frame kept by a dead writer"
        );
    }
}
