//! `--interpolate K`: K − 1 frames drawn between each pair of recorded frames, so that a
//! recording taken every few steps plays smoothly (in slow motion at the same frame rate).
//!
//! Output frames are numbered from the recording's first frame: output frame `o` shows
//! recorded frame `o / K`, a fraction `(o mod K) / K` of the way to the next one. At fraction 0 the frame *is* the recorded one (copied, not recomputed).
//! Between, each agent follows the cubic Hermite curve through both positions with both
//! recorded velocities as its tangents (so motion stays smooth across recorded frames), taken
//! across a wrapping world's seam by the minimum image, so an agent crossing the seam never
//! sweeps across the frame. Where the velocities do not fit the step (a bounce off a
//! reflecting wall, a jump), that agent moves in a straight line instead. Velocities are
//! blended linearly.

use std::ops::Range;

use anyhow::{anyhow, Result};

use super::source::FrameSource;
use crate::bfs::{Frame, Reader};

/// What interpolation needs to know about the world.
#[derive(Clone, Copy, Debug)]
pub struct Space {
    pub dim: usize,
    /// World size per axis (the wrap period).
    pub size: [f32; 3],
    pub wrap: bool,
    /// Simulated seconds between recorded frames.
    pub frame_dt: f32,
}

/// The mapping between output frames and recorded ones: output frame `o` shows recorded frame
/// `o / K`, a fraction `(o mod K) / K` of the way to the next one. Output frames are numbered
/// from the recording's first frame, so an output frame is the same whichever clip it is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeline {
    /// K: output frames per recorded interval (1 = none drawn between).
    pub k: u64,
}

impl Timeline {
    /// The output frames for recorded frames `clip`: its first to its last, (len − 1)·K + 1.
    pub fn output(&self, clip: &Range<u64>) -> Range<u64> {
        let last = clip.end.max(clip.start + 1) - 1;
        clip.start * self.k..last * self.k + 1
    }

    /// Recorded frame and fraction (in K-ths) towards the next one, for output frame `o`.
    pub fn at(&self, o: u64) -> (u64, u64) {
        (o / self.k, o % self.k)
    }

    /// The recorded frames output frames `out` need.
    pub fn recorded(&self, out: &Range<u64>) -> Range<u64> {
        let (a, _) = self.at(out.start);
        let (b, frac) = self.at(out.end - 1);
        a..b + 1 + (frac > 0) as u64
    }
}

/// Blends recorded frames `a` and `b` at fraction `t` (0 < t < 1) into `out`.
pub fn blend(a: &Frame, b: &Frame, t: f32, space: &Space, out: &mut Frame) {
    let dim = space.dim;
    let n = a.agents(dim).min(b.agents(dim));
    out.pos.clear();
    out.vel.clear();
    out.pos.resize(dim * n, 0.0);
    out.vel.resize(dim * n, 0.0);
    // Hermite basis (h00 = 1 − h01 is folded into the start position).
    let (t2, t3) = (t * t, t * t * t);
    let h10 = t3 - 2.0 * t2 + t;
    let h01 = -2.0 * t3 + 3.0 * t2;
    let h11 = t3 - t2;
    let dt = space.frame_dt;
    for i in 0..n {
        // The chord (minimum image across a seam) and both tangents, per axis.
        let mut chord = [0f32; 3];
        let mut m0 = [0f32; 3];
        let mut m1 = [0f32; 3];
        for c in 0..dim {
            let (pa, pb) = (a.pos[c * n + i], b.pos[c * n + i]);
            let mut d = pb - pa;
            let l = space.size[c];
            if space.wrap && l > 0.0 {
                d -= l * (d / l).round();
            }
            chord[c] = d;
            m0[c] = a.vel[c * n + i] * dt;
            m1[c] = b.vel[c * n + i] * dt;
        }
        let len = |v: &[f32; 3]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
        let far = |m: &[f32; 3]| {
            let diff = [m[0] - chord[0], m[1] - chord[1], m[2] - chord[2]];
            len(&diff) > len(&chord).max(1e-6)
        };
        // Velocities that do not fit the step: a straight line.
        let hermite = dt > 0.0 && !far(&m0) && !far(&m1);
        for c in 0..dim {
            let pa = a.pos[c * n + i];
            let off = if hermite {
                h10 * m0[c] + h01 * chord[c] + h11 * m1[c]
            } else {
                t * chord[c]
            };
            // h00·pa + h01·(pa + chord) + … with h00 + h01 = 1.
            let mut p = pa + off;
            let l = space.size[c];
            if space.wrap && l > 0.0 {
                p = p.rem_euclid(l);
                if p >= l {
                    p = 0.0;
                }
            }
            out.pos[c * n + i] = p;
            let (va, vb) = (a.vel[c * n + i], b.vel[c * n + i]);
            out.vel[c * n + i] = va + (vb - va) * t;
        }
    }
    // Steps blended (rounded): the time shown is the nearest step's.
    out.step = a.step + ((b.step.saturating_sub(a.step)) as f64 * t as f64).round() as u64;
    // The agents there at the earlier frame (one absent stays where it went).
    out.absent.clone_from(&a.absent);
}

/// Output frames from recorded ones: straight through when K = 1, else blended.
pub struct Frames {
    src: FrameSource,
    timeline: Timeline,
    space: Space,
    out: Range<u64>,
    next: u64,
    /// The recorded frames on either side of the next output frame.
    a: Option<Frame>,
    b: Option<Frame>,
    spare: Vec<Frame>,
}

impl Frames {
    /// Output frames `out` of `reader`'s recording.
    pub fn start(
        reader: Reader,
        timeline: Timeline,
        space: Space,
        out: Range<u64>,
    ) -> Result<Frames> {
        let src = FrameSource::start(reader, timeline.recorded(&out))?;
        Ok(Frames {
            src,
            timeline,
            space,
            next: out.start,
            out,
            a: None,
            b: None,
            spare: Vec::new(),
        })
    }

    fn read(&mut self) -> Result<Frame> {
        match self.src.next() {
            Some(f) => f,
            None => Err(anyhow!("the recording ended early")),
        }
    }

    fn make(&mut self, o: u64) -> Result<Frame> {
        let (r, frac) = self.timeline.at(o);
        // Move the pair (a, b) up to recorded frame r.
        while self.a.as_ref().is_none_or(|a| a.index < r) {
            let next = match self.b.take() {
                Some(b) => b,
                None => self.read()?,
            };
            if let Some(old) = self.a.replace(next) {
                self.src.give_back(old);
            }
        }
        let mut f = self.spare.pop().unwrap_or_default();
        let a = self.a.as_ref().expect("read above");
        if frac == 0 {
            f.clone_from(a);
        } else {
            if self.b.is_none() {
                self.b = Some(self.read()?);
            }
            let a = self.a.as_ref().expect("read above");
            let b = self.b.as_ref().expect("read above");
            let t = frac as f32 / self.timeline.k as f32;
            blend(a, b, t, &self.space, &mut f);
        }
        f.index = o;
        Ok(f)
    }

    pub fn give_back(&mut self, f: Frame) {
        if self.timeline.k == 1 {
            self.src.give_back(f);
        } else if self.spare.len() < 4 {
            self.spare.push(f);
        }
    }
}

impl Iterator for Frames {
    type Item = Result<Frame>;

    /// The next output frame, `None` at the end.
    fn next(&mut self) -> Option<Result<Frame>> {
        if self.next >= self.out.end {
            return None;
        }
        if self.timeline.k == 1 {
            self.next += 1;
            return self.src.next();
        }
        let o = self.next;
        self.next += 1;
        Some(self.make(o))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(index: u64, step: u64, pos: Vec<f32>, vel: Vec<f32>) -> Frame {
        Frame {
            index,
            step,
            pos,
            vel,
            absent: Vec::new(),
        }
    }

    #[test]
    fn the_timeline_maps_output_to_recorded_frames() {
        let t = Timeline { k: 4 };
        assert_eq!(t.output(&(10..13)), 40..49);
        assert_eq!(t.output(&(0..3)), 0..9);
        assert_eq!(t.at(40), (10, 0));
        assert_eq!(t.at(43), (10, 3));
        assert_eq!(t.at(44), (11, 0));
        assert_eq!(t.at(48), (12, 0));
        assert_eq!(t.recorded(&(41..45)), 10..12);
        assert_eq!(t.recorded(&(44..46)), 11..13);
        assert_eq!(t.recorded(&(48..49)), 12..13);
        let one = Timeline { k: 1 };
        assert_eq!(one.output(&(3..9)), 3..9);
        assert_eq!(one.recorded(&(4..7)), 4..7);
    }

    #[test]
    fn across_the_seam_by_the_short_way() {
        let space = Space {
            dim: 2,
            size: [100.0, 50.0, 0.0],
            wrap: true,
            frame_dt: 1.0,
        };
        // One agent moving +x at 4 units/frame from 98 to 2 (across the seam).
        let a = frame(0, 0, vec![98.0, 25.0], vec![4.0, 0.0]);
        let b = frame(1, 10, vec![2.0, 25.0], vec![4.0, 0.0]);
        let mut f = Frame::empty();
        for (t, want) in [(0.25f32, 99.0f32), (0.5, 0.0), (0.75, 1.0)] {
            blend(&a, &b, t, &space, &mut f);
            assert!((f.pos[0] - want).abs() < 1e-4, "t {t}: x {}", f.pos[0]);
            assert!(f.pos[0] >= 0.0 && f.pos[0] < 100.0);
            assert_eq!(f.pos[1], 25.0);
        }
        assert_eq!(f.step, 8);
    }

    #[test]
    fn velocities_that_do_not_fit_give_a_straight_line() {
        let space = Space {
            dim: 2,
            size: [100.0, 100.0, 0.0],
            wrap: false,
            frame_dt: 1.0,
        };
        // A bounce: velocity flips between the frames.
        let a = frame(0, 0, vec![90.0, 50.0], vec![10.0, 0.0]);
        let b = frame(1, 1, vec![94.0, 50.0], vec![-10.0, 0.0]);
        let mut f = Frame::empty();
        blend(&a, &b, 0.5, &space, &mut f);
        assert!((f.pos[0] - 92.0).abs() < 1e-5, "{}", f.pos[0]);
        // A curve: tangents that fit bend the path (a quarter turn).
        let a = frame(0, 0, vec![0.0, 0.0], vec![1.0, 0.0]);
        let b = frame(1, 1, vec![1.0, 1.0], vec![0.0, 1.0]);
        blend(&a, &b, 0.5, &space, &mut f);
        assert!((f.pos[0] - 0.625).abs() < 1e-5 && (f.pos[1] - 0.375).abs() < 1e-5);
    }
}
