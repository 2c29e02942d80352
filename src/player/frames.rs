//! Recorded frames for the player, streamed from disk: a reader thread keeps the frames just
//! ahead of the playhead (in the direction it moves) in a small cache bounded in bytes, so a
//! recording of any size opens at once and memory stays flat. Frames come out as they do for a
//! render: checked for values that are not finite numbers, and blended between recorded
//! frames when `--interpolate` asks for it.

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use crate::bfs::{Frame, Header, Reader};
use crate::video::interp::{self, Space, Timeline};

/// Bytes of frames the cache may hold.
const CACHE_BYTES: u64 = 96 << 20;
/// Frames read ahead of the playhead, at most.
const AHEAD: u64 = 8;
/// How long a frame may take to arrive before the player gives up on it.
const READ_TIMEOUT: Duration = Duration::from_secs(120);

struct State {
    /// The playhead (a recorded frame) and the direction it moves (+1, −1).
    want: u64,
    dir: i64,
    frames: BTreeMap<u64, Arc<Frame>>,
    /// A frame that could not be read, and why.
    failed: Option<(u64, String)>,
    stop: bool,
}

type Shared = Arc<(Mutex<State>, Condvar)>;

fn lock(s: &Shared) -> MutexGuard<'_, State> {
    s.0.lock().unwrap_or_else(|p| p.into_inner())
}

/// The frames of one recording, read ahead on a thread.
pub struct Frames {
    shared: Shared,
    thread: Option<JoinHandle<()>>,
    /// Recorded frames in the file.
    count: u64,
    timeline: Timeline,
    space: Space,
    header: Header,
}

impl Frames {
    /// Reads `reader`'s frames on a thread; output frames are `timeline`'s.
    pub fn start(reader: Reader, timeline: Timeline, space: Space) -> Result<Frames> {
        let count = reader.frame_count();
        if count == 0 {
            bail!("the recording has no frames to show");
        }
        let h = reader.header().clone();
        // Positions and velocities, f32 each.
        let frame_bytes = 8 * u64::from(h.dim) * u64::from(h.agents);
        let keep = (CACHE_BYTES / frame_bytes.max(1)).clamp(3, 2 * AHEAD + 2) as usize;
        let shared: Shared = Arc::new((
            Mutex::new(State {
                want: 0,
                dir: 1,
                frames: BTreeMap::new(),
                failed: None,
                stop: false,
            }),
            Condvar::new(),
        ));
        let thread = std::thread::Builder::new()
            .name("forge view reader".into())
            .spawn({
                let shared = shared.clone();
                move || read_ahead(reader, shared, keep)
            })
            .context("cannot start the frame reader thread")?;
        Ok(Frames {
            shared,
            thread: Some(thread),
            count,
            timeline,
            space,
            header: h,
        })
    }

    /// The recording's header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Output frames: recorded frames, or (`--interpolate K`) K per recorded interval.
    pub fn len(&self) -> u64 {
        self.timeline.output(&(0..self.count)).end
    }

    /// Output frame `o`, waiting for it to be read; the frames after it (or before it, when
    /// `dir` is negative) are read next.
    pub fn get(&self, o: u64, dir: i64) -> Result<Frame> {
        let (r, frac) = self.timeline.at(o);
        let a = self.recorded(r, dir)?;
        let mut f = if frac == 0 {
            (*a).clone()
        } else {
            let b = self.recorded(r + 1, dir)?;
            let mut f = Frame::empty();
            let t = frac as f32 / self.timeline.k as f32;
            interp::blend(&a, &b, t, &self.space, &mut f);
            f
        };
        f.index = o;
        Ok(f)
    }

    /// Recorded frame `r`, waiting for it.
    fn recorded(&self, r: u64, dir: i64) -> Result<Arc<Frame>> {
        if r >= self.count {
            bail!("frame {r} is past the end (frames 0..{})", self.count);
        }
        let until = Instant::now() + READ_TIMEOUT;
        let mut g = lock(&self.shared);
        if g.want != r || g.dir != dir.signum() {
            g.want = r;
            g.dir = if dir < 0 { -1 } else { 1 };
            self.shared.1.notify_all();
        }
        loop {
            if let Some(f) = g.frames.get(&r) {
                return Ok(f.clone());
            }
            if let Some((k, why)) = &g.failed {
                if *k == r {
                    return Err(anyhow!("frame {k}: {why}"));
                }
            }
            let now = Instant::now();
            if now >= until {
                bail!("frame {r} did not arrive from disk within {READ_TIMEOUT:?}");
            }
            g = self
                .shared
                .1
                .wait_timeout(g, until - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

impl Drop for Frames {
    fn drop(&mut self) {
        lock(&self.shared).stop = true;
        self.shared.1.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The recorded frames wanted around playhead `want` moving in `dir`, most wanted first: the
/// playhead and the frames ahead of it.
fn wanted(want: u64, dir: i64, count: u64, keep: usize) -> Vec<u64> {
    let ahead = AHEAD.min(keep as u64 - 1);
    let mut v = Vec::with_capacity(ahead as usize + 2);
    for i in 0..=ahead {
        let k = want as i64 + dir * i as i64;
        if (0..count as i64).contains(&k) {
            v.push(k as u64);
        }
    }
    v
}

/// The reader thread: reads the first wanted frame not held, drops the least wanted when over
/// `keep`, and sleeps when it holds every wanted frame.
fn read_ahead(mut reader: Reader, shared: Shared, keep: usize) {
    let count = reader.frame_count();
    let dim = usize::from(reader.header().dim);
    let mut g = lock(&shared);
    loop {
        if g.stop {
            return;
        }
        let list = wanted(g.want, g.dir, count, keep);
        let failed = g.failed.as_ref().map(|f| f.0);
        let Some(next) = list
            .iter()
            .copied()
            .find(|k| !g.frames.contains_key(k) && failed != Some(*k))
        else {
            g = shared.1.wait(g).unwrap_or_else(|p| p.into_inner());
            continue;
        };
        drop(g);
        let mut f = Frame::empty();
        let read = match reader.read_frame_into(next, &mut f) {
            Err(e) => Err(e.to_string()),
            Ok(()) => match f.non_finite(dim) {
                Some(bad) => Err(format!(
                    "{bad}: forge's solver never records one, so the recording is damaged or \
                     was written by another program"
                )),
                None => Ok(f),
            },
        };
        g = lock(&shared);
        match read {
            Ok(f) => {
                g.frames.insert(next, Arc::new(f));
            }
            Err(why) => g.failed = Some((next, why)),
        }
        // Over the budget: drop the frames farthest from the playhead that are not wanted.
        let list = wanted(g.want, g.dir, count, keep);
        while g.frames.len() > keep {
            let want = g.want;
            let drop_k = g
                .frames
                .keys()
                .copied()
                .filter(|k| !list.contains(k))
                .max_by_key(|k| k.abs_diff(want));
            match drop_k {
                Some(k) => {
                    g.frames.remove(&k);
                }
                None => break,
            }
        }
        shared.1.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frames_ahead_follow_the_direction_and_stop_at_the_ends() {
        assert_eq!(wanted(5, 1, 100, 20), (5..=13).collect::<Vec<_>>());
        assert_eq!(wanted(5, -1, 100, 20), vec![5, 4, 3, 2, 1, 0]);
        assert_eq!(wanted(98, 1, 100, 20), vec![98, 99]);
        assert_eq!(wanted(10, 1, 100, 3), vec![10, 11, 12]);
    }
}
